"""A run compiles (or loads) its kernel before its progress bar starts, so that the bar's clock and
its estimate of the time left measure the run, not the compiler."""

import numba
import numpy as np

import metastab as ms
from metastab.engine import backends, exact
from metastab.kernels.cpu import drivers


def _spy(monkeypatch, events, kernel):
    class Bar(exact.Progress):
        def __init__(self, *args, **kwargs):
            events.append(("bar", len(kernel.signatures)))
            super().__init__(*args, **kwargs)

    compile_advance = backends.Cpu.compile_advance

    def compiling(self, *args):
        events.append(("compile", None))
        compile_advance(self, *args)

    monkeypatch.setattr(exact, "Progress", Bar)
    monkeypatch.setattr(backends.Cpu, "compile_advance", compiling)


def test_the_kernel_is_ready_before_the_progress_bar(monkeypatch):
    x0 = ms.regular_polygon(4).vertices
    model = ms.Localmax(gamma=0.2, r=0.05)
    kernel = drivers.kernel_for(3, 4, model.kernel_params(2).kind, 0, numba.get_num_threads())
    events: list = []
    _spy(monkeypatch, events, kernel)
    run = ms.simulate(model, x0, steps=4, chains=3, rng=1)
    assert [e[0] for e in events] == ["compile", "bar"]
    assert events[1][1] >= 1  # compiled (or loaded) when the bar starts
    # the run used that compiled kernel, and the bits are those of a run without the spy
    monkeypatch.undo()
    assert np.array_equal(run.final, ms.simulate(model, x0, steps=4, chains=3, rng=1).final)


def test_compiling_ahead_runs_nothing():
    """compile_advance leaves the chains, their streams and their records as they were."""
    x0 = ms.regular_polygon(5).vertices
    model = ms.SoftmaxChain(beta=3.0, gamma=0.1)
    X = np.ascontiguousarray(np.broadcast_to(x0, (4, 5, 2)))
    state = np.arange(16, dtype=np.uint64).reshape(4, 4)
    steps, done = np.zeros(4, np.int64), np.zeros(4, bool)
    before = (X.copy(), state.copy(), steps.copy(), done.copy())
    ev = ms.LeaveBall(radius=0.5).compile(X, np.eye(2))
    backends.Cpu().compile_advance(X, state, model.kernel_params(2), model.schedule(0, 1), ev,
                                   steps, done)  # fmt: skip
    after = (X, state, steps, done)
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
