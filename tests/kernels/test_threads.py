"""The drivers' pool of threads: slices that cover the chains once, errors after every slice; a
chain's bits on every path of the driver."""

import threading
import time

import numpy as np
import pytest

import metastab as ms
from metastab.kernels.cpu import drivers
from metastab.kernels.cpu.threads import SLICES_PER_THREAD, over_chains
from metastab.kernels.params import NO_EVENT, no_event


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


@pytest.mark.parametrize(
    "model",
    [
        ms.SoftmaxChain(beta=4.0, gamma=0.2),
        ms.Hardmax(gamma=0.3),
        ms.SphereFlow(beta=2.0, dt=0.1),
        ms.SphereChain(3.0, 0.2),
        ms.NoisySphere(2.0, 1.0, 0.05),
    ],
    ids=lambda m: type(m).__name__,
)
def test_a_chain_has_the_same_bits_on_every_path_of_the_driver(model):
    """drivers.advance, the one loop of every model family: chain 2 of 5 run on one thread, in
    slices on 3 threads, alone (its tokens split over 2 threads where the kind can: SA_P, the
    sphere flow; 64 tokens, two blocks) and in calls of 3 + 4 steps ends in the same state with
    the same stream (the noisy model's normals drawn on the chain's thread). The control: the
    step moves the chains, and differently."""
    C, n, d, steps = 5, 64, 3, 7
    X0 = np.random.default_rng(8).normal(size=(C, n, d))
    if isinstance(model, (ms.SphereFlow, ms.SphereChain, ms.NoisySphere)):
        X0 /= np.linalg.norm(X0, axis=2, keepdims=True)
    dyn, ev = model.kernel_params(d), no_event(n, d)

    def run(X, state, calls, threads):
        t0 = 0
        stopped, done = np.zeros(len(X), np.int64), np.zeros(len(X), bool)
        for k in calls:
            drivers.advance(X, state, dyn, model.schedule(t0, k), t0, k, ev, stopped, done, threads)
            t0 += k
        return X, state

    seeds = ms.Seed(11).streams(C)
    want = run(X0.copy(), seeds.copy(), [steps], 1)
    assert not np.array_equal(want[0][2], X0[2])
    assert not np.array_equal(want[0][2], want[0][3])
    split = drivers._plan(1, n, d, dyn, NO_EVENT, 2)[1]
    assert split == isinstance(model, (ms.SoftmaxChain, ms.SphereFlow, ms.NoisySphere))
    for got in (
        run(X0.copy(), seeds.copy(), [steps], 3),
        run(X0.copy(), seeds.copy(), [3, 4], 3),
        run(X0[2:3].copy(), seeds[2:3].copy(), [steps], 2),
        run(X0[2:3].copy(), seeds[2:3].copy(), [3, 4], 2),
    ):
        c = 2 if len(got[0]) == C else 0
        assert np.array_equal(got[0][c], want[0][2]) and np.array_equal(got[1][c], want[1][2])
