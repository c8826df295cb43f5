"""One prepared run: prepare_run validates, sizes and allocates every run of simulate,
first_passage (both modes) and track, and its RunSetup alone builds their results."""

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import metastab as ms
from metastab import _validate as validate
from metastab.engine import chains as chains_module
from metastab.engine.run_setup import RunSetup, prepare_run

ENGINE = Path(ms.engine.__file__).parent
X0 = ms.regular_polygon(5).vertices
CHAIN = ms.SoftmaxChain(beta=2.0, gamma=0.5)


def _setup(**kwargs):
    args = dict(chains=3, first_chain=2, rng=7, device="cpu")
    args.update(kwargs)
    return prepare_run(CHAIN, X0, **args)


def test_the_setup_holds_the_validated_run():
    run = _setup(event=ms.LeaveBall(0.1), extra=lambda x, C: (None, 1000))
    assert isinstance(run, RunSetup)
    assert (run.chains, run.n, run.d, run.first_chain) == (3, 5, 2, 2)
    assert run.X.shape == (3, 5, 2) and np.array_equal(run.X[1], X0)
    assert run.state.shape == (3, 4) and run.state.dtype == np.uint64
    assert run.ev is not None and run.code == run.ev.code and run.launch()[-1] == run.code
    assert run.memory == chains_module.run_bytes(3, 5, 2, CHAIN, run.backend) + 1000
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.chains = 4  # type: ignore[misc]


def test_the_streams_are_those_of_the_seed_and_the_chain_index():
    """Chain k's stream depends on the seed and k only: chains 2..4 of one setup are chains
    0..2 of another that starts at 2; another seed gives other streams (negative control)."""
    wide = _setup(chains=5, first_chain=0)
    assert np.array_equal(_setup().state, wide.state[2:])
    assert not np.array_equal(_setup(rng=8).state, _setup().state)


def test_the_memory_check_names_the_entry_points_request(monkeypatch):
    """The extra bytes an entry point asks count in the check, which names them; the same run
    without them passes (negative control)."""
    need = _setup().memory
    monkeypatch.setattr(validate, "available_memory", lambda: 2 * need + 100)
    _setup()
    with pytest.raises(MemoryError, match="the trajectory needs"):
        _setup(extra=lambda x, C: ("the trajectory", need))


def test_the_accelerated_setup_takes_the_constant_step_and_refuses_schedules():
    run = _setup(event=ms.LeaveBall(0.1), accelerated=True)
    assert run.gamma == 0.5
    assert _setup().gamma is None
    with pytest.raises(ValueError, match="needs a constant step"):
        prepare_run(
            ms.SoftmaxChain(2.0, gamma=np.full(10, 0.5)), X0, chains=1, first_chain=0, rng=0,
            device="cpu", event=ms.LeaveBall(0.1), accelerated=True,
        )  # fmt: skip


def test_every_entry_point_refuses_bad_inputs_with_the_same_words():
    """One validation: the same bad x0 or first_chain, the same message from each."""
    calls = [
        lambda **k: ms.simulate(CHAIN, steps=2, **k),
        lambda **k: ms.first_passage(CHAIN, event=ms.LeaveBall(0.1), max_steps=2, **k),
        lambda **k: ms.first_passage(
            CHAIN, event=ms.LeaveBall(0.1), max_steps=2, mode="accelerated", **k
        ),
        lambda **k: ms.track(CHAIN, steps=2, **k),
    ]
    bad = X0.copy()
    bad[0, 1] = np.nan
    for call in calls:
        with pytest.raises(ValueError, match=r"x0 must be finite, got x0\[0, 1\]"):
            call(x0=bad)
        with pytest.raises(ValueError, match="first_chain must be >= 0, got -1"):
            call(x0=X0, first_chain=-1)


def constructions(source: str, names: set[str]) -> set[str]:
    """The names of ``names`` called (constructed) anywhere in ``source``."""
    return {
        node.func.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    }


RESULTS = {"Run", "FirstPassage", "Track"}


def test_only_the_run_setup_builds_the_runs_results():
    built = {p.name: constructions(p.read_text(), RESULTS) for p in ENGINE.glob("*.py")}
    assert built.pop("run_setup.py") == RESULTS
    assert not any(built.values()), built


def test_a_planted_construction_is_caught():
    """Negative control: a result built by hand in another module is found."""
    source = "from ..results import FirstPassage\n\ndef f():\n    return FirstPassage(times=1)\n"
    assert constructions(source, RESULTS) == {"FirstPassage"}
