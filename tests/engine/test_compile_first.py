"""A run compiles (or loads) its kernel before its progress bar starts, so that the bar's clock and
its estimate of the time left measure the run, not the compiler."""

import importlib

import numba
import numpy as np
import pytest

import metastab as ms
from metastab.engine import backends, exact, progress
from metastab.kernels.cpu import drivers


def _spy(monkeypatch, events, kernel, loop=exact, method="start_advance"):
    """Record ("compile", None) when the backend's ``method`` compiles ahead and ("bar", the
    kernel's compiled signatures) when ``loop``'s progress bar starts."""

    class Bar(loop.Progress):
        def __init__(self, *args, **kwargs):
            events.append(("bar", len(kernel.signatures)))
            super().__init__(*args, **kwargs)

    compile_ahead = getattr(backends.Cpu, method)

    def compiling(self, *args):
        events.append(("compile", None))
        compile_ahead(self, *args)

    monkeypatch.setattr(loop, "Progress", Bar)
    monkeypatch.setattr(backends.Cpu, method, compiling)


def test_the_kernel_is_ready_before_the_progress_bar(monkeypatch):
    x0 = ms.regular_polygon(4).vertices
    model = ms.Localmax(gamma=0.2, r=0.05)
    kernel = drivers.kernel_for(3, 4, 2, model.kernel_params(2), 0, numba.get_num_threads())
    events: list = []
    _spy(monkeypatch, events, kernel)
    run = ms.simulate(model, x0, steps=4, chains=3, rng=1)
    assert [e[0] for e in events] == ["compile", "bar"]
    assert events[1][1] >= 1  # compiled (or loaded) when the bar starts
    # the run used that compiled kernel, and the bits are those of a run without the spy
    monkeypatch.undo()
    assert np.array_equal(run.final, ms.simulate(model, x0, steps=4, chains=3, rng=1).final)


@pytest.mark.parametrize(
    "model", [ms.SoftmaxChain(beta=3.0, gamma=0.1), ms.SphereChain(3.0, 0.1)], ids=["R^d", "sphere"]
)
def test_starting_ahead_runs_nothing_and_marks_the_event_at_time_0(model):
    """start_advance leaves the chains and their streams as they were, and marks exactly the
    chains that meet the event at time 0 (steps 0, done), as the host's events_at does, for 4
    chains and for 1. The control: the chains that start inside are left unmarked. (The
    token-parallel kernels' time-0 test is the same code; test_clusters checks their levels at
    time 0 against the chain-parallel path's.)"""
    x0 = ms.sphere_uniform(40, 2, rng=3)
    for chains in (4, 1):
        X = np.repeat(x0[None], chains, axis=0)
        ev = ms.LeaveBall(radius=0.5).compile(X.copy(), np.eye(2))
        X[chains - 1, 7] *= -1.0  # the last chain starts outside its ball
        state = np.arange(4 * chains, dtype=np.uint64).reshape(chains, 4)
        steps, done = np.full(chains, 9, np.int64), np.zeros(chains, bool)
        before = (X.copy(), state.copy())
        want = np.zeros(chains, bool)
        backends.Cpu().events_at(X, ev, want)
        assert want.tolist() == [False] * (chains - 1) + [True]
        backends.Cpu().start_advance(
            X, state, model.kernel_params(2), model.schedule(0, 1), ev, steps, done
        )
        assert np.array_equal(X, before[0]) and np.array_equal(state, before[1])
        assert np.array_equal(done, want)
        assert np.array_equal(steps, np.where(want, 0, 9))


def test_a_compile_notice_speaks_once_for_runs_without_a_bar(monkeypatch, capsys):
    """Within compile_notice, the first run that compiles says so even with progress=False
    (a study's runs); later ones do not, and outside it nothing is said without a bar."""
    monkeypatch.setattr(progress, "kernels_cold", lambda *dispatchers: True)
    progress.announce_compile(False)
    assert capsys.readouterr().err == ""
    with progress.compile_notice():
        progress.announce_compile(False)
        progress.announce_compile(False)
    assert capsys.readouterr().err.count("compiling kernels") == 1
    progress.announce_compile(False)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "kernels_cold", lambda *dispatchers: False)
    with progress.compile_notice():
        progress.announce_compile(False)
    assert capsys.readouterr().err == ""  # nothing to compile, nothing said


def test_a_run_with_the_default_progress_announces_the_first_compile_of_the_process(
    monkeypatch, capsys
):
    """progress=None (the API's default): one line before the process's first compile, none
    after it, none within compile_notice(False) (a command run with --no-progress); False: none
    ever (negative control)."""
    monkeypatch.setattr(progress, "kernels_cold", lambda *dispatchers: True)
    monkeypatch.setattr(progress, "_announced", [False])
    progress.announce_compile(False)
    with progress.compile_notice(False):
        progress.announce_compile(None)
    assert capsys.readouterr().err == ""
    progress.announce_compile(None)
    progress.announce_compile(None)
    assert capsys.readouterr().err.count("compiling kernels") == 1


@pytest.mark.parametrize(
    "command, module, runner",
    [
        ("study hardmax-psd --quick", "metastab.studies", "run_study"),
        ("bench --workload phase-diagram", "metastab.cli.bench", "_phase_diagram_bench"),
    ],
)
def test_commands_whose_runs_draw_no_bar_say_they_compile(monkeypatch, capsys, command, module,
                                                          runner):  # fmt: skip
    """metastab study / bench --workload phase-diagram with --progress: their runs draw no bars,
    yet the first that compiles says so (two runs, a cold cache forced: one line); without
    --progress, nothing."""
    from metastab.cli import main

    monkeypatch.setattr(progress, "kernels_cold", lambda *dispatchers: True)

    def runs(*args, **kwargs):
        for _ in range(2):
            ms.simulate(ms.Hardmax(gamma=0.1), ms.regular_polygon(4).vertices, steps=2, chains=1)
        return 0

    monkeypatch.setattr(importlib.import_module(module), runner, runs)
    assert main([*command.split(), "--progress"]) == 0
    assert capsys.readouterr().err.count("compiling kernels") == 1
    assert main([*command.split(), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_the_accelerated_kernel_is_ready_before_the_progress_bar(monkeypatch):
    """mode='accelerated' compiles (or loads) its kernel before the bar starts, for the argument
    types of the run: the run itself compiles nothing more."""
    from metastab.engine import accelerated
    from metastab.kernels.cpu import accelerated as kernels

    events: list = []
    _spy(monkeypatch, events, kernels.advance_slice, accelerated, "compile_accelerated")
    x0, model = ms.regular_polygon(3).vertices, ms.SoftmaxChain(beta=2.0, gamma=0.2)
    args = (model, x0, ms.LeaveBall(0.1))
    fp = ms.first_passage(*args, max_steps=1000, chains=3, rng=1, mode="accelerated")
    assert [e[0] for e in events] == ["compile", "bar"]
    assert events[1][1] >= 1 and len(kernels.advance_slice.signatures) == events[1][1]
    monkeypatch.undo()
    again = ms.first_passage(*args, max_steps=1000, chains=3, rng=1, mode="accelerated")
    assert np.array_equal(fp.times, again.times)
