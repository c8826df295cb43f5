"""numba's on-disk cache, keyed also on the kernel files that a kernel file calls into.

numba keys a cached function on its own source file only (modification time and size), but the
machine code it stores also holds every jitted function it calls from other files, inlined or
linked, and the constants it reads from them. A kernel file therefore decorates its functions
with :func:`njit_keyed`, which derives those files from the imports (:func:`kernel_files`): the
kernel files that the function's file imports from, what they import, and so on, and the same
for the jitted functions that a closure holds (a driver generic over a family's step holds that
step: its file counts too). Their source hash joins the cache's index key, so any edit to them
makes numba compile afresh instead of loading stale code; a new import is keyed as soon as it is
written (``tests/kernels/test_kernel_cache.py`` checks the files).

numba hashes a closure's variables into its index key by pickling them, and a pickled jitted
function carries its dispatcher's random identifier: a different key in every process, so that
a closure over a step would never load from the cache. The keyed cache hashes instead the name,
bytecode and closure of each jitted function it holds (their sources are in the source key).

numba's cache is not safe for processes that share it: two that save new entries of one
function at once may both take the same data file, so that its index maps one signature to the
other's machine code. Every save and load of a keyed cache therefore holds an exclusive lock on
a file of the cache's directory (POSIX ``flock``; where there is none, as on Windows, numba's own
behaviour).

numba also names a compiled function's symbol after its qualified name, its argument types and
a counter of the compiling process. Two processes that compile different functions of one name
and types (the closures of a kernel factory, such as each event's driver) in the same order
give them the same symbol, and a process that loads one from the cache after compiling the
other may call the other's code (numba issue 10486). Importing this module therefore starts
numba's counter at a random 64-bit value, drawn again in every forked child.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import itertools
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from numba import njit
from numba.core.bytecode import FunctionIdentity
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.serialize import dumps

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["kernel_files", "njit_keyed", "source_key"]

_HERE = Path(__file__).resolve().parent
_SELF = Path(__file__).resolve()  # holds no kernel: never part of a key


def source_key(*files: str, root: Path = _HERE) -> str:
    """SHA-256 of the named source files, paths relative to the folder ``root`` (default: the
    kernels folder), in any order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + (Path(root) / name).read_bytes() + b"\0")
    return h.hexdigest()


@functools.cache
def _imported_files(path: Path) -> frozenset[Path]:
    """The files that the relative imports of the source file ``path`` name, wherever in the
    file they stand: ``from .steps import x`` names steps.py, ``from .. import arith`` and
    ``from ..cpu import steps`` the modules of a package."""
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = path.parents[node.level - 1].joinpath(*node.module.split(".") if node.module else [])
        module = base.with_suffix(".py")
        if node.module and module.is_file():
            found.add(module)
        else:
            found.update(m for a in node.names if (m := base / f"{a.name}.py").is_file())
    return frozenset(found)


@functools.cache
def _import_closure(path: Path, root: Path) -> frozenset[Path]:
    """The files under ``root`` that the file ``path`` imports, transitively through files under
    ``root`` (this module, which holds no kernel, left out)."""
    seen: set[Path] = set()
    todo = [path]
    while todo:
        for dep in _imported_files(todo.pop()):
            if dep not in seen and dep != _SELF and root in dep.parents:
                seen.add(dep)
                todo.append(dep)
    return frozenset(seen)


def _jitted(value: Any) -> Iterator[Any]:
    """The jitted functions in ``value`` (one, or a tuple of them, nested)."""
    if hasattr(value, "py_func"):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _jitted(v)


def _closure(f: Callable) -> tuple:
    return tuple(c.cell_contents for c in f.__closure__ or ())


def kernel_files(f: Callable, root: Path = _HERE) -> list[str]:
    """The files under ``root`` whose code the jitted function of ``f`` may hold, by their
    paths under it (``"cpu/euclidean_steps.py"``): those that ``f``'s file imports, transitively,
    and for each jitted function of ``f``'s closure its own file and its kernel files."""
    root = Path(root).resolve()
    files = set(_import_closure(Path(f.__code__.co_filename).resolve(), root))
    for g in _jitted(_closure(f)):
        own = Path(g.py_func.__code__.co_filename).resolve()
        if root in own.parents:
            files.add(own)
        files.update(root / name for name in kernel_files(g.py_func, root))
    return sorted(p.relative_to(root).as_posix() for p in files)


def _stable(value: Any) -> Any:
    """``value`` with each jitted function replaced by its name, bytecode and (likewise) its
    closure: the same in every process, unlike its pickle (module notes)."""
    if hasattr(value, "py_func"):
        f = value.py_func
        return (f.__module__, f.__qualname__, f.__code__.co_code, _stable(_closure(f)))
    if isinstance(value, tuple):
        return tuple(_stable(v) for v in value)
    return value


def _random_symbols() -> None:
    """numba's symbol counter from a random start (module notes): distinct in every process."""
    FunctionIdentity._unique_ids = itertools.count(secrets.randbits(64))


_random_symbols()
os.register_at_fork(after_in_child=_random_symbols)

# the lock file of a cache directory (one for all its functions: a save or load takes
# milliseconds, the machine code is emitted before the lock is taken)
LOCK_NAME = "metastab-cache.lock"


@contextlib.contextmanager
def _locked(directory: str) -> Iterator[None]:
    """An exclusive lock on ``directory``'s :data:`LOCK_NAME` (created), for as long as the
    block runs; no lock where the platform has no ``flock``."""
    if fcntl is None:
        yield
        return
    os.makedirs(directory, exist_ok=True)
    fd = os.open(os.path.join(directory, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class _LockedCacheFile(IndexDataCacheFile):
    """numba's index and data files of one function, read and written under :func:`_locked`:
    an entry's index line and data file change together, as one step."""

    def save(self, key, data):
        with _locked(self._cache_path):
            super().save(key, data)

    def load(self, key):
        with _locked(self._cache_path):
            return super().load(key)


class _KeyedCache(FunctionCache):
    """numba's per-function cache with ``key`` appended to every index key, its files read and
    written under a lock (module notes)."""

    def __init__(self, py_func: Callable, key: str):
        super().__init__(py_func)
        self.key = key
        self._cache_file = _LockedCacheFile(  # as numba's Cache.__init__ builds its own
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
        )

    def _index_key(self, sig, codegen):
        # numba's key (signature, target, hashes of the bytecode and of the closure), with the
        # closure's jitted functions hashed by _stable
        f = self._py_func
        code = hashlib.sha256(f.__code__.co_code).hexdigest()
        cells = hashlib.sha256(dumps(_stable(_closure(f)))).hexdigest()
        return (sig, codegen.magic_tuple(), (code, cells), self.key)


def njit_keyed(root: Path = _HERE) -> Callable:
    """A decorator factory like ``njit`` (same options, ``cache`` implied) whose cache entries
    are valid only for the current sources of the files in ``root`` that the decorated function
    may hold (:func:`kernel_files`)."""

    def jit(**options: Any) -> Callable:
        options.pop("cache", None)

        def decorate(f: Callable):
            dispatcher = njit(**options)(f)
            key = _source_key(tuple(kernel_files(f, root)), Path(root))
            dispatcher._cache = _KeyedCache(dispatcher.py_func, key)  # as enable_caching() does
            return dispatcher

        return decorate

    return jit


@functools.cache
def _source_key(files: tuple[str, ...], root: Path) -> str:
    # the files once per process for all the functions keyed on them
    return source_key(*files, root=root)
