"""Chains in parallel on Python threads: a kernel compiled without numba's parallel lowering
(``nogil``) runs on slices of the chains, one slice per task of a thread pool.

numba's ``prange`` would compile every chain kernel twice (the loop body as a gufunc, then the
kernel around it): about a quarter of SA_P's cold compile. Chains never interact and each draws
from its own stream, so a chain's path does not depend on the slices or the threads that run it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

__all__ = ["over_chains", "SLICES_PER_THREAD"]

# slices per thread: chains that stop early (an event) leave a thread idle at most one slice
SLICES_PER_THREAD = 4

_pools: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    with _lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="metastab")
        return _pools[threads]


def over_chains(kernel: Callable, args: tuple, chains: int, threads: int) -> None:
    """``kernel(*args, lo, hi)`` for slices lo <= c < hi that cover the ``chains`` chains, run on
    ``threads`` threads (in the calling thread when one suffices); returns when all are done and
    raises the first error of a slice."""
    slices = min(chains, threads * SLICES_PER_THREAD) if threads > 1 else 1
    if slices <= 1:
        kernel(*args, 0, chains)
        return
    bounds = [chains * q // slices for q in range(slices + 1)]
    pool = _pool(threads)
    tasks = [pool.submit(kernel, *args, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
    try:
        for task in tasks:
            task.result()
    except BaseException:  # Ctrl-C: every slice ends first, so no chain moves after we return
        wait(tasks)
        raise
