"""numba's on-disk cache, keyed also on the kernel files that a kernel file calls into.

numba keys a cached function on its own source file only (modification time and size), but the
machine code it stores also holds every jitted function it calls from other files, inlined or
linked, and the constants it reads from them. A kernel file that imports from other kernel files
therefore decorates its functions with :func:`njit_keyed`, naming those files (by their paths
under ``kernels/``, such as ``"cpu/steps.py"``) and, transitively, what they import: their
source hash joins the cache's index key, so any edit to them makes numba compile afresh instead
of loading stale code (``tests/kernels/test_kernel_cache.py`` checks the names).

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

import contextlib
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

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["njit_keyed", "source_key"]

_HERE = Path(__file__).parent


def source_key(*files: str, root: Path = _HERE) -> str:
    """SHA-256 of the named source files, paths relative to the folder ``root`` (default: the
    kernels folder), in any order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + (Path(root) / name).read_bytes() + b"\0")
    return h.hexdigest()


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
        return super()._index_key(sig, codegen) + (self.key,)


def njit_keyed(*files: str, root: Path = _HERE) -> Callable:
    """A decorator factory like ``njit`` (same options, ``cache`` implied) whose cache entries
    are valid only for the current sources of ``files`` in ``root`` (the kernel files the
    decorated functions call into)."""
    key = source_key(*files, root=root)

    def jit(**options: Any) -> Callable:
        options.pop("cache", None)

        def decorate(f: Callable):
            dispatcher = njit(**options)(f)
            dispatcher._cache = _KeyedCache(dispatcher.py_func, key)  # as enable_caching() does
            return dispatcher

        return decorate

    return jit
