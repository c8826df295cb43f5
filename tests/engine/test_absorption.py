"""Absorbed chains: a chain whose event is out of reach stops at once and is recorded apart from
the events and the censored chains, at its first step out of reach, in exact and accelerated mode;
the statistics leave it out by name. The tests of the kernel's decisions hold each one against
the geometry it claims (a run continued from an absorbed state never meets its event)."""

import numpy as np
import pytest

import metastab as ms
from metastab.engine import absorption
from metastab.engine.backends import out_of_reach
from metastab.kernels import params as K
from metastab.kernels.cpu import events as _events

# The clustered square of the report: 2 tokens per vertex and 1 half way, SA_P at beta = 5,
# gamma = 0.2, T2 with radius 2 gamma d(K) = 0.8 (the centre is within 0.8 of every hull)
SQUARE = ms.regular_polygon(4)
X0 = np.vstack([SQUARE.vertices, SQUARE.vertices, 0.5 * SQUARE.vertices])
MODEL = ms.SoftmaxChain(beta=5.0, gamma=0.2)
EVENT = ms.LeaveHull(groups=SQUARE.assign(X0), radius=0.8)


def _reach(X, event, x0=None):
    """out_of_reach of event compiled at x0 (default X) for the configurations X (C, n, d)."""
    X = np.ascontiguousarray(X, dtype=float)
    start = X if x0 is None else np.broadcast_to(x0, X.shape).copy()
    ev = event.compile(start, np.eye(X.shape[2]))
    out = np.zeros(X.shape[0], dtype=bool)
    out_of_reach(X, ev, np.zeros(X.shape[0], dtype=bool), out)
    return out


def test_the_square_chain_that_collapses_is_absorbed_not_censored():
    fp = ms.first_passage(MODEL, X0, EVENT, max_steps=10**6, chains=2, rng=1)
    assert fp.times.tolist() == [34, 72]
    assert fp.censored.tolist() == [False, False] and fp.absorbed.tolist() == [False, True]
    assert fp.events == 1 and fp.absorptions == 1
    assert "events=1, absorbed=1, censored=0" in repr(fp)
    # step 72 is the first out of reach: the same chain simulated to 71 and 72 steps
    before, at = (ms.simulate(MODEL, X0, steps=s, chains=2, rng=1).final[1:] for s in (71, 72))
    assert _reach(before, EVENT, X0).tolist() == [False]
    assert _reach(at, EVENT, X0).tolist() == [True]
    # the chain alone (another chunking of the chains) is absorbed at the same step
    alone = ms.first_passage(MODEL, X0, EVENT, max_steps=10**6, chains=1, rng=1, first_chain=1)
    assert alone.times.tolist() == [72] and alone.absorbed.tolist() == [True]


def test_without_the_test_the_absorbed_chain_runs_to_the_budget_as_censored(monkeypatch):
    """The negative control: the chain the test stops is one that never meets its event."""
    monkeypatch.setattr(ms.engine.api, "applies", lambda model, code: False)
    fp = ms.first_passage(MODEL, X0, EVENT, max_steps=20_000, chains=2, rng=1)
    assert fp.censored.tolist() == [False, True] and not fp.absorbed.any()
    assert np.ptp(fp.final[1], axis=0).max() < 1e-12  # collapsed to one point


def test_exact_and_accelerated_modes_agree_on_the_absorption_probability():
    """Both modes draw the same chain SA_P (other streams): their absorbed fractions agree
    within 4 standard errors of the difference; absorbed chains are never censored."""
    runs = [
        ms.first_passage(MODEL, X0, EVENT, max_steps=10**6, chains=600, rng=2, mode=mode)
        for mode in ("exact", "accelerated")
    ]
    p = [r.absorptions / r.chains for r in runs]
    assert all(0.01 < q < 0.2 for q in p), p
    pooled = sum(p) / 2
    assert abs(p[0] - p[1]) < 4 * np.sqrt(2 * pooled * (1 - pooled) / 600), p
    for r in runs:
        assert not (r.absorbed & r.censored).any() and r.events + r.absorptions == r.chains


@pytest.mark.parametrize(
    "event",
    [ms.LeaveBall(radius=0.8), ms.LeaveHull(groups=[0, 0, 1, 1], radius=0.6)],
    ids=["leave-ball", "leave-hull"],
)
def test_an_absorbed_state_never_meets_its_event(event):
    """Soundness: from the unit square's corners some chains meet the event and others are
    absorbed after contracting near the centre; the absorbed ones, continued for 2000 steps from
    their final states (an SA_P step, a flow step and a hardmax step), never meet the event,
    which the same test finds in the final states of the chains that met it (the control)."""
    x0 = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    for model in (
        ms.SoftmaxChain(beta=1.0, gamma=0.5),
        ms.SoftmaxFlow(beta=1.0, gamma=0.3),
        ms.Hardmax(gamma=0.5),
    ):
        fp = ms.first_passage(model, x0, event, max_steps=5000, chains=50, rng=3)
        assert not fp.censored.any() and (fp.times[fp.absorbed] > 0).all(), model
        if isinstance(model, ms.SoftmaxChain):
            assert 0 < fp.absorptions < 50, fp
        assert _hits(event, fp.final[~fp.absorbed], x0).all(), model
        if not fp.absorptions:
            continue
        later = ms.simulate(model, fp.final[fp.absorbed], steps=2000, rng=4, record_every=1)
        assert not _hits(event, later.trajectory.reshape(-1, 4, 2), x0).any(), model


def _hits(event, X, x0):
    """The event of x0 on each configuration of X, by the kernel's event test (whose decisions
    tests/engine/test_events.py holds against exact distances)."""
    ev = event.compile(np.ascontiguousarray(x0[None]), np.eye(x0.shape[1]))
    work = _events.hull_work(*x0.shape)
    return np.array([_events.event_hit(ev, 0, np.ascontiguousarray(x), work) for x in X])


def test_the_tests_of_each_event_against_the_geometry():
    x0 = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    tight = x0.mean(axis=0) + 1e-3 * np.array([[1, 0], [0, 1], [-1, 0], [0, -1]])
    # LeaveBall(r) around x0: out of reach once every token is within r of every centre
    assert _reach(tight[None], ms.LeaveBall(0.75), x0).tolist() == [True]
    assert _reach(tight[None], ms.LeaveBall(0.7), x0).tolist() == [False]  # sqrt(.5) > .7
    assert _reach(x0[None], ms.LeaveBall(0.75), x0).tolist() == [False]
    # LeaveHull: groups {0,1} (bottom edge) and {2,3} (top edge), the centre 0.5 from each
    hull = ms.LeaveHull(groups=[0, 0, 1, 1], radius=0.51)
    assert _reach(tight[None], hull, x0).tolist() == [True]
    assert _reach(tight[None], ms.LeaveHull(groups=[0, 0, 1, 1], radius=0.49), x0).tolist() == [
        False
    ]
    # ReachVertices: out of reach once some token's vertex is farther than its radius from the
    # hull of the tokens
    reach = ms.ReachVertices(vertices=x0, radius=0.2, assignment=[0, 1, 2, 3])
    assert _reach(tight[None], reach, x0).tolist() == [True]
    assert _reach(x0[None] * 0.9 + 0.05, reach, x0).tolist() == [False]
    # no test for Collapse, nor for the models whose steps are not convex combinations
    assert not _reach(tight[None], ms.Collapse(0.5)).any()
    assert absorption.applies(MODEL, K.LEAVE_HULL)
    assert not absorption.applies(MODEL, K.COLLAPSE)
    assert not absorption.applies(ms.SoftmaxChain(beta=1.0, gamma=0.5 * np.eye(2)), K.LEAVE_HULL)
    assert not absorption.applies(ms.SphereChain(beta=1.0, gamma=0.1), K.LEAVE_BALL)


def test_statistics_leave_absorbed_chains_out_by_name():
    fp = ms.first_passage(MODEL, X0, EVENT, max_steps=10**6, chains=200, rng=1)
    assert 0 < fp.absorptions < 200
    with pytest.warns(ms.AbsorptionWarning, match=rf"{fp.absorptions} of 200 chains were absorbed"):
        rate = ms.stats.escape_rate(fp, memoryless=False)
    assert rate.chains == 200 - fp.absorptions and rate.events == fp.events
    a = ms.stats.absorption(fp)
    assert a.absorbed == fp.absorptions and a.chains == 200
    assert a.low < a.probability < a.high
    frame = fp.to_frame()
    assert frame["absorbed"].sum() == fp.absorptions
    with pytest.warns(ms.AbsorptionWarning):
        again = ms.stats.escape_rate(frame, memoryless=False)
    assert again.events == rate.events and again.exposure == rate.exposure
    # the frame's flags give the same probability; a frame without them is refused by name
    assert np.array_equal(ms.stats.absorption(frame).probability, a.probability)
    with pytest.raises(ValueError, match="'absorbed' column"):
        ms.stats.absorption(frame.drop(columns="absorbed"))


def test_a_saved_result_keeps_its_absorbed_chains(tmp_path):
    fp = ms.first_passage(MODEL, X0, EVENT, max_steps=10**6, chains=2, rng=1)
    back = ms.load(fp.save(tmp_path / "fp.parquet"))
    assert back.absorbed.tolist() == [False, True] and back.absorptions == 1
    assert np.array_equal(back.replay().absorbed, fp.absorbed)


def test_a_chain_out_of_reach_at_time_0_is_absorbed_at_0():
    """Tokens within 2 of each other can never be 100 from where they started."""
    x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    fp = ms.first_passage(MODEL, x0, ms.LeaveBall(100.0), max_steps=25, chains=4, rng=1)
    assert fp.absorbed.all() and (fp.times == 0).all() and not fp.censored.any()
    assert np.array_equal(fp.final, np.broadcast_to(x0, fp.final.shape))
