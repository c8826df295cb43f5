"""numba's on-disk cache, keyed also on the kernel files that a kernel file calls into.

numba keys a cached function on its own source file only (modification time and size), but the
machine code it stores also holds every jitted function it calls from other files, inlined or
linked, and the constants it reads from them. A kernel file that imports from other kernel files
therefore decorates its functions with :func:`njit_keyed`, naming those files (by their paths
under ``kernels/``, such as ``"cpu/steps.py"``) and, transitively, what they import: their
source hash joins the cache's index key, so any edit to them makes numba compile afresh instead
of loading stale code (``tests/kernels/test_kernel_cache.py`` checks the names).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from numba import njit
from numba.core.caching import FunctionCache

__all__ = ["njit_keyed", "source_key"]

_HERE = Path(__file__).parent


def source_key(*files: str, root: Path = _HERE) -> str:
    """SHA-256 of the named source files, paths relative to the folder ``root`` (default: the
    kernels folder), in any order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + (Path(root) / name).read_bytes() + b"\0")
    return h.hexdigest()


class _KeyedCache(FunctionCache):
    """numba's per-function cache with ``key`` appended to every index key."""

    def __init__(self, py_func: Callable, key: str):
        super().__init__(py_func)
        self.key = key

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
