"""numba's on-disk cache must not serve code compiled from older versions of other kernel files.

numba keys a cached function on its own file only; the machine code it stores includes the jitted
functions it calls from other files (and the constants it reads from them). The files of
``metastab.kernels`` that import from other kernel files are therefore cached with
``cache.njit_keyed``, keyed on the sources of those files and, transitively, of what they import
(derived from the imports; the tests here read them independently, with ``ast``).
"""

import ast
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import metastab
import metastab as ms
from metastab.kernels import cache

PACKAGE = Path(metastab.__file__).parent
KERNELS = PACKAGE / "kernels"
# every file of the kernels folder and its subfolders but the cache itself, which holds no
# kernel, by its path under kernels/ ("cpu/euclidean_steps.py"): the names njit_keyed takes
FILES = sorted(p.relative_to(KERNELS).as_posix() for p in KERNELS.rglob("*.py"))
KERNEL_FILES = [f for f in FILES if f != "cache.py"]


def _resolve(name: str, node: ast.ImportFrom) -> list[str] | None:
    """The kernel files (paths under kernels/) that the relative import ``node`` of the file
    ``name`` reads, or None if it reaches above the kernels folder."""
    folder = Path(name).parent.parts
    up = node.level - 1
    if up > len(folder):
        return None
    base = [*folder[: len(folder) - up], *(node.module.split(".") if node.module else [])]
    module = "/".join(base) + ".py"
    if module in FILES:
        return [module]
    # ``from .cpu import steps``: the names are files of a folder
    return [f for a in node.names if (f := "/".join([*base, a.name]) + ".py") in FILES]


def _kernel_imports(name: str) -> list[str]:
    """The kernel files that the kernels file ``name`` imports from, in import order (the cache
    module holds no kernel)."""
    tree = ast.parse((KERNELS / name).read_text())
    found = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            found += [f for f in _resolve(name, node) or [] if f != "cache.py"]
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


def _module(name: str):
    parts = Path(name).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return importlib.import_module(".".join(["metastab.kernels", *parts]))


def _cached_dispatchers(module):
    return [
        f
        for f in vars(module).values()
        if hasattr(f, "py_func")
        and f.py_func.__module__ == module.__name__
        and type(f._cache).__name__ != "NullCache"
    ]


def _misskeyed(module, deps: set[str]) -> list[str]:
    """The cached functions of ``module`` whose cache is not keyed on exactly the files ``deps``
    (numba's plain cache counts as keyed on nothing)."""
    want = cache.source_key(*deps) if deps else None
    return [
        f.__name__ for f in _cached_dispatchers(module) if getattr(f._cache, "key", None) != want
    ]


def test_the_kernels_import_nothing_else_from_metastab():
    for name in FILES:
        for node in ast.walk(ast.parse((KERNELS / name).read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level >= 1 or not (node.module or "").startswith("metastab"), name
                if node.level >= 1:
                    assert _resolve(name, node), (name, node.module)  # a kernel file
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("metastab") for a in node.names), name


def test_the_import_reader_sees_subfolders_and_what_leaves_the_kernels():
    """Negative control of :func:`_resolve`: a relative import resolves to the kernel file it
    names across folders, and one that climbs out of the kernels folder is caught."""

    def node(code: str) -> ast.ImportFrom:
        first = ast.parse(code).body[0]
        assert isinstance(first, ast.ImportFrom)
        return first

    assert _resolve(
        "cuda/euclidean_steps.py", node("from ..cpu.euclidean_steps import RARE_CUT")
    ) == ["cpu/euclidean_steps.py"]
    assert _resolve("cpu/drivers.py", node("from ..streams import next_uniform")) == ["streams.py"]
    assert _resolve("cpu/drivers.py", node("from .euclidean_steps import chain_step")) == [
        "cpu/euclidean_steps.py"
    ]
    assert _resolve("cuda/drivers.py", node("from ..cpu import events")) == ["cpu/events.py"]
    assert _resolve("cpu/euclidean_steps.py", node("from ...models import SoftmaxChain")) is None
    assert _resolve("cpu/euclidean_steps.py", node("from ..models import SoftmaxChain")) == []
    assert "cpu/euclidean_steps.py" in _kernel_closure("cpu/drivers.py")
    assert "params.py" in _kernel_closure("cuda/sphere_steps.py")


@pytest.mark.parametrize("name", KERNEL_FILES)
def test_kernels_are_keyed_on_the_files_they_import(name):
    """Every cached function of a kernels file carries the hash of exactly the kernel files it
    imports from (and of what they import) in its cache index key; a file that imports no
    other kernel file may use numba's plain cache."""
    assert not _misskeyed(_module(name), _kernel_closure(name)), name


def test_the_key_check_fails_for_a_stale_key():
    """Negative control: a key that leaves out a file the kernels import, or names one more,
    is caught for every cached function."""
    name = "cpu/splitting.py"
    module, deps = _module(name), _kernel_closure(name)
    functions = [f.__name__ for f in _cached_dispatchers(module)]
    assert len(functions) == 5 and "cpu/accelerated.py" in deps
    for dropped in deps:
        assert _misskeyed(module, deps - {dropped}) == functions, dropped
    assert _misskeyed(module, deps | {"reference/euclidean.py"}) == functions
    assert _misskeyed(_module("streams.py"), set()) == ["_mix64", "seed_streams", "_add64"]


# A package of kernel files: outer.py imports middle.py, which imports leaf.py (never named by
# outer.py); loop.py's factory closes over family.py's step, which reads leaf.py, without
# importing either; other.py is imported by none of them.
_PACKAGE = {
    "__init__.py": "",
    "leaf.py": """
from numba import njit

@njit(inline="always")
def value():
    return {value}
""",
    "middle.py": """
from numba import njit
from .leaf import value

@njit(inline="always")
def twice():
    return 2 * value()
""",
    "outer.py": """
from pathlib import Path
from numba import njit
from metastab.kernels.cache import njit_keyed
from .middle import twice

def outer():
    return twice()

keyed = njit_keyed(root=Path(__file__).parent)(cache=True)(outer)
plain = njit(cache=True)(outer)
""",
    "family.py": """
from numba import njit
from .leaf import value

@njit(inline="always")
def step(x):
    return x + value()
""",
    "loop.py": """
def loop_for(step, jit):
    def loop(x):
        for _ in range(3):
            x = step(x)
        return x
    return jit(loop)
""",
    "other.py": "VALUE = {value}\n",
}
# prints, per function, its value and whether it was loaded from the cache
_CALLS = """
from pathlib import Path
from numba import njit
from metastab.kernels.cache import njit_keyed
from pkg import family, loop, outer
keyed = njit_keyed(root=Path(loop.__file__).parent)(cache=True)
plain = njit(cache=True)
for name, f in [("outer", outer.keyed), ("outer-plain", outer.plain),
                ("loop", loop.loop_for(family.step, keyed)),
                ("loop-plain", loop.loop_for(family.step, plain))]:
    args = () if name.startswith("outer") else (0,)
    print(name, f(*args), len(f.stats.cache_hits) > 0)
"""


def _write(folder: Path, value: int, other: int = 0) -> None:
    """The package with leaf.py's ``value`` and other.py's ``other``: only the files that
    change are written (numba keys a function on its own file's time stamp)."""
    (folder / "pkg").mkdir(exist_ok=True)
    for name, text in _PACKAGE.items():
        text = textwrap.dedent(text.format(value=other if name == "other.py" else value))
        file = folder / "pkg" / name
        if not file.exists() or file.read_text() != text:
            file.write_text(text)


def _calls(folder: Path) -> dict[str, tuple[str, bool]]:
    """What a new process computes, and whether it loads each function from the cache."""
    env = {"PYTHONPATH": f"{folder}:{PACKAGE.parent}", "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, "-c", _CALLS], cwd=folder, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return {n: (v, hit == "True") for n, v, hit in map(str.split, run.stdout.splitlines())}


def test_the_keys_name_what_a_function_imports_and_what_its_closure_holds(tmp_path):
    """Derived from the imports: outer.py's key holds middle.py and, through it, leaf.py; the
    loop's key (a closure over family.py's step) holds family.py and leaf.py, which loop.py
    never imports. Nothing names other.py, nor the cache module."""
    _write(tmp_path, 1)
    sys.path.insert(0, str(tmp_path))
    try:
        outer = importlib.import_module("pkg.outer")
        family = importlib.import_module("pkg.family")
        loop = importlib.import_module("pkg.loop")
        root = tmp_path / "pkg"
        assert cache.kernel_files(outer.outer, root) == ["leaf.py", "middle.py"]
        closure = loop.loop_for(family.step, lambda f: f)
        assert cache.kernel_files(closure, root) == ["family.py", "leaf.py"]
        assert cache.kernel_files(loop.loop_for, root) == []  # the control: no closure
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]


def test_an_edit_of_a_file_a_kernel_holds_recompiles_it(tmp_path):
    """A second process loads every keyed function from the cache; an edit of other.py, which
    none holds, keeps them; an edit of leaf.py, which none names (imported by what they import,
    or held by the loop's closure), compiles them afresh with the new value. The negative
    controls: numba's plain cache serves outer's stale value, and never loads the closure over
    a step (its key pickles the step's dispatcher, whose identifier is new in every process)."""
    _write(tmp_path, 1)
    first = _calls(tmp_path)
    assert first == {n: ("2" if n.startswith("outer") else "3", False) for n in first}
    again = _calls(tmp_path)
    assert again == {"outer": ("2", True), "outer-plain": ("2", True), "loop": ("3", True),
                     "loop-plain": ("3", False)}  # fmt: skip
    _write(tmp_path, 1, other=1)
    assert _calls(tmp_path)["outer"] == ("2", True) and _calls(tmp_path)["loop"] == ("3", True)
    _write(tmp_path, 2, other=1)
    edited = _calls(tmp_path)
    assert edited["outer"] == ("4", False) and edited["loop"] == ("6", False)
    assert edited["outer-plain"] == ("2", True)  # stale: what the keys are for


def _racing_saves(base: type, folder: Path) -> tuple[object, object]:
    """Two processes' views of one function's cache files (``base``: their class), saving new
    entries A and B at once in the order that breaks numba's unlocked files: both read the empty
    index and take the first data file; A's index, then B's index and data, then A's data. Each
    step waits for the other's (0.5 s at most: under a lock the other never comes). Returns what
    a later process loads for A and for B."""
    import threading

    from numba.core.caching import IndexDataCacheFile

    assert issubclass(base, IndexDataCacheFile)
    b_loaded, a_index, b_data = threading.Event(), threading.Event(), threading.Event()

    class A(base):
        def _save_index(self, overloads):
            b_loaded.wait(0.5)
            super()._save_index(overloads)
            a_index.set()

        def _save_data(self, name, data):
            b_data.wait(0.5)
            super()._save_data(name, data)

    class B(base):
        def _load_index(self):
            index = super()._load_index()
            b_loaded.set()
            return index

        def _save_index(self, overloads):
            a_index.wait(0.5)
            super()._save_index(overloads)

        def _save_data(self, name, data):
            super()._save_data(name, data)
            b_data.set()

    folder.mkdir()
    files = dict(cache_path=str(folder), filename_base="f-1.py311", source_stamp=(1.0, 2))
    a, b = A(**files), B(**files)
    first = threading.Thread(target=a.save, args=("key A", "code of A"))
    first.start()
    b.save("key B", "code of B")
    first.join()
    later = base(**files)
    return later.load("key A"), later.load("key B")


def test_processes_sharing_the_cache_keep_each_entry_with_its_code(tmp_path):
    """Saves under the cache's lock never pair a signature with another's machine code; the
    negative control, numba's unlocked files in the same interleaving, does."""
    from numba.core.caching import IndexDataCacheFile

    assert _racing_saves(cache._LockedCacheFile, tmp_path / "locked") == ("code of A", "code of B")
    # unlocked: A's entry is lost, and B's loads A's code
    assert _racing_saves(IndexDataCacheFile, tmp_path / "numba") == (None, "code of A")


_FIRST_SYMBOL = """
import os, sys
import metastab.kernels.cache  # noqa: F401  (its import draws the counter)
if sys.argv[1] == "numba":  # the negative control: numba's counter from 1
    import itertools
    from numba.core.bytecode import FunctionIdentity
    FunctionIdentity._unique_ids = itertools.count(1)
from numba import njit

@njit
def f(x):
    return x + 1.0

def name():
    f(1.0)
    return f.overloads[f.signatures[0]].fndesc.mangled_name

if os.fork() == 0:  # a forked child compiles its own first function
    print("child", name(), flush=True)
    os._exit(0)
os.wait()
print("parent", name())
"""


@pytest.mark.parametrize("counter", ["metastab", "numba"])
def test_processes_name_their_first_compiled_function_apart(counter):
    """Two processes with the same history, and a forked child, give the same function
    different symbols (else a cached closure could resolve to another's code); with numba's
    counter from 1, the negative control, the two processes' coincide."""
    runs = []
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", _FIRST_SYMBOL, counter], capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        runs.append(dict(line.split() for line in run.stdout.splitlines()))
    parents = {r["parent"] for r in runs}
    if counter == "numba":
        assert len(parents) == 1
    else:
        assert len(parents) == 2 and all(r["child"] != r["parent"] for r in runs)


@pytest.mark.parametrize(
    "model, family",
    [
        (ms.SoftmaxChain(2.0), "cpu/euclidean_family.py"),
        (ms.SphereFlow(beta=1.0, dt=0.1), "cpu/sphere_family.py"),
    ],
    ids=["R^d", "sphere"],
)
def test_the_driver_loop_is_keyed_on_its_family(model, family):
    """The driver's kernels, made by one loop for every family (a closure over the family's
    step), are keyed on the files the loop imports and on the family's file and its imports,
    which the loop's file never imports (the control: its own imports alone miss them)."""
    from metastab.kernels.cpu import drivers

    kernel = drivers.kernel_for(4, 8, 3, model.kernel_params(3), 0, 1)
    loop = _kernel_closure("cpu/chain_loop.py")
    want = loop | {family} | _kernel_closure(family)
    assert kernel._cache.key == cache.source_key(*want)
    assert family not in loop and "cpu/euclidean_steps.py" not in loop
