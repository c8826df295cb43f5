"""numba's on-disk cache must not serve code compiled from older versions of other kernel files.

numba keys a cached function on its own file only; the machine code it stores includes the jitted
functions it calls from other files. Kernel files that call into others are therefore cached with
``_kernel_cache.njit_keyed``, keyed on the sources of those files.
"""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import metastab
from metastab import _accelerated, _kernel_cache, _kernels, _splitting

PACKAGE = Path(metastab.__file__).parent
KERNEL_FILES = ("_kernels.py", "_accelerated.py", "_splitting.py")


def _kernel_imports(name: str) -> list[str]:
    """The kernel files that the kernel file ``name`` imports from, in import order."""
    tree = ast.parse((PACKAGE / name).read_text())
    found = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            file = node.module + ".py"
            if file in KERNEL_FILES:
                found.append(file)
    return found


def _kernel_closure(name: str) -> set[str]:
    """The kernel files whose code the functions of ``name`` may hold (imports, transitively)."""
    seen: set[str] = set()
    todo = _kernel_imports(name)
    while todo:
        file = todo.pop()
        if file not in seen:
            seen.add(file)
            todo.extend(_kernel_imports(file))
    return seen


def _cached_dispatchers(module):
    return [
        f
        for f in vars(module).values()
        if hasattr(f, "py_func")
        and f.py_func.__module__ == module.__name__
        and type(f._cache).__name__ != "NullCache"
    ]


def test_base_kernels_call_no_other_kernel_file():
    """_kernels.py may use plain njit(cache=True): its code comes from its own file only."""
    assert _kernel_imports("_kernels.py") == []
    assert _cached_dispatchers(_kernels)
    assert all(type(f._cache).__name__ == "FunctionCache" for f in _cached_dispatchers(_kernels))


@pytest.mark.parametrize("module", [_accelerated, _splitting], ids=lambda m: m.__name__)
def test_dependent_kernels_are_keyed_on_what_they_import(module):
    """Every cached function of a kernel file that imports from other kernel files carries the
    hash of exactly those files (and of what they import) in its cache index key."""
    name = Path(module.__file__).name
    deps = _kernel_closure(name)
    assert deps, name
    functions = _cached_dispatchers(module)
    assert functions
    for f in functions:
        assert isinstance(f._cache, _kernel_cache._KeyedCache), f.__name__
        assert f._cache.key == _kernel_cache.source_key(*deps), f.__name__


_INNER = """
from numba import njit

@njit(inline="always")
def value():
    return {value}
"""
_PLAIN = """
from numba import njit
from inner import value

@njit(cache=True)
def outer():
    return value()
"""
_KEYED = """
from pathlib import Path
from metastab._kernel_cache import njit_keyed
from inner import value

@njit_keyed("inner.py", root=Path(__file__).parent)(cache=True)
def outer():
    return value()
"""


def _outer(folder: Path, module: str) -> str:
    code = f"import {module}; print({module}.outer())"
    env = {"PYTHONPATH": f"{folder}:{PACKAGE.parent}", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_edit_of_an_inlined_file_recompiles(tmp_path):
    """Edit the file a cached function inlines from: the keyed cache compiles afresh, while
    numba's plain cache (the negative control) serves the stale value."""
    (tmp_path / "plain.py").write_text(_PLAIN)
    (tmp_path / "keyed.py").write_text(_KEYED)
    (tmp_path / "inner.py").write_text(textwrap.dedent(_INNER.format(value=1)))
    assert _outer(tmp_path, "plain") == "1" and _outer(tmp_path, "keyed") == "1"
    (tmp_path / "inner.py").write_text(textwrap.dedent(_INNER.format(value=2)))
    assert _outer(tmp_path, "keyed") == "2"
    assert _outer(tmp_path, "plain") == "1"  # stale: what the guard is for
