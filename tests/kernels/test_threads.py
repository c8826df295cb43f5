"""The drivers' pool of threads: slices that cover the chains once, errors after every slice."""

import threading
import time

import pytest

from metastab.kernels.cpu.threads import SLICES_PER_THREAD, over_chains


@pytest.mark.parametrize("chains, threads", [(1, 2), (7, 1), (7, 2), (100, 3)])
def test_slices_cover_every_chain_once(chains, threads):
    seen = []
    lock = threading.Lock()

    def kernel(tag, lo, hi):
        with lock:
            seen.append((tag, lo, hi))

    over_chains(kernel, ("run",), chains, threads)
    covered = sorted(c for _, lo, hi in seen for c in range(lo, hi))
    assert covered == list(range(chains))
    assert all(tag == "run" and lo < hi for tag, lo, hi in seen)
    assert len(seen) == (1 if threads == 1 else min(chains, threads * SLICES_PER_THREAD))


def test_an_error_is_raised_after_every_slice_has_ended():
    """Once over_chains returns or raises, no slice moves a chain any more (as Ctrl-C, which
    arrives in the waiting thread: the others end their slices first)."""
    ended = []

    def kernel(lo, hi):
        if lo == 0:
            raise RuntimeError("slice 0")
        time.sleep(0.05)
        ended.append(lo)

    with pytest.raises(RuntimeError, match="slice 0"):
        over_chains(kernel, (), 8, 2)
    assert len(ended) == 7  # every other slice had ended when the error was raised
