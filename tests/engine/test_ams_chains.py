"""metastab.engine.ams_probability: generalised AMS for SA_P through the backend.

Against direct simulation by accelerated first_passage (event-driven, exact for SA_P with a
constant step); bits independent of the thread count and of the number of runs; the refusals.
"""

import math

import numba
import numpy as np
import pytest

import metastab as ms
from metastab.engine import ams_probability, first_passage
from metastab.exceptions import DiagnosticWarning
from metastab.results.ams import AMSResult

X = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)  # the frozen triangle, 3 per vertex
EV = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)
MODEL = ms.SoftmaxChain(beta=20.0, gamma=0.45)


def test_time_limited_escape_against_accelerated_first_passage():
    # P[T <= 1e11] from the frozen triangle at β = 20 (E[T] ≈ 1.9e12): direct, 20000 chains
    # of the accelerated mode, against AMS with 50 replicas and 10 runs
    C, h = 20_000, 1e11
    fp = first_passage(MODEL, X, EV, chains=C, max_steps=h, mode="accelerated", rng=3)
    hits = int((fp.times[~fp.censored] <= h).sum())
    direct, sd = hits / C, math.sqrt(hits) / C
    res = ams_probability(MODEL, X, EV, horizon=h, replicas=50, runs=10, rng=1)
    low, high = res.confidence_interval()
    se = math.hypot(res.standard_error, sd)
    assert abs(res.p - direct) < 4 * se, (res.p, direct, se)
    assert low < direct < high
    assert not (low < 2 * direct < high)  # tight enough to fail
    assert res.extinct.sum() == 0


def test_bits_do_not_depend_on_threads_or_runs():
    kw = dict(horizon=1e11, replicas=10, rng=5)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ams_probability(MODEL, X, EV, runs=3, **kw)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = ams_probability(MODEL, X, EV, runs=4, **kw)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one.runs, two.runs[:3])
    np.testing.assert_array_equal(one.reached_clock, two.reached_clock[:3])
    again = one.replay()
    np.testing.assert_array_equal(again.runs, one.runs)


def test_save_load(tmp_path):
    res = ams_probability(MODEL, X, EV, horizon=1e11, replicas=10, runs=3, rng=5)
    path = res.save(tmp_path / "ams.csv")
    back = AMSResult.load(path)
    np.testing.assert_array_equal(back.runs, res.runs)
    assert back.p == res.p and back.arguments == res.arguments
    assert list(back.to_frame().columns)[:2] == ["run", "p"]


def test_reference_set_escape_against_direct_excursions():
    # P[the event before the return to A = {ξ <= 0.05}] from the frozen start at β = 10:
    # direct, 20000 paths of the same stepper (the AMS's first generation, unsplit), against
    # AMS with 30 replicas and 10 runs
    from metastab.engine.ams import REACHED

    model = ms.SoftmaxChain(beta=10.0, gamma=0.45)
    res = ams_probability(model, X, EV, reference_level=0.05, replicas=30, runs=10, rng=2)
    stepper = _stepper(model, 0.05)
    C = 20_000
    ids = np.zeros((C, 3), np.uint64)
    ids[:, 0], ids[:, 2] = 99, np.arange(C)
    segs = stepper.advance(np.repeat(X[None], C, axis=0), np.zeros(C), np.zeros(C), ids)
    hits = sum(sg.status == REACHED for sg in segs)
    direct, sd = hits / C, math.sqrt(hits) / C
    assert hits > 50
    se = math.hypot(res.standard_error, sd)
    assert abs(res.p - direct) < 4 * se, (res.p, direct, se)
    assert abs(res.p - 2 * direct) > 4 * se  # tight enough to fail
    assert res.budget_hits == 0


def _stepper(model, level):
    from metastab.engine.ams_chains import ChainStepper
    from metastab.engine.backends import resolve
    from metastab.engine.resolution import MERGE_TOL

    dyn = model.kernel_params(2)
    ev = EV.compile(np.ascontiguousarray(X[None]), dyn.B)
    scale = float(np.abs(X).max())
    return ChainStepper(
        resolve("cpu"), dyn, 0.45, MERGE_TOL * scale, True, ev, level, math.inf, False
    )


def test_extinction_is_refused():
    # at β = 30 a horizon of 1000 steps is far below the first move (mean wait ~1e18): every
    # replica stays at the start's level, every run goes extinct, and the interval refuses
    model = ms.SoftmaxChain(beta=30.0, gamma=0.45)
    res = ams_probability(model, X, EV, horizon=1000, replicas=10, runs=3, rng=1)
    assert res.extinct.all() and res.p == 0
    with pytest.raises(ValueError, match="all 3 AMS runs ended with p̂ = 0"):
        res.confidence_interval()


def test_bad_inputs():
    with pytest.raises(ValueError, match="give horizon"):
        ams_probability(MODEL, X, EV, rng=1)
    with pytest.raises(ValueError, match="replicas must be >= 2, got 1"):
        ams_probability(MODEL, X, EV, horizon=10, replicas=1, rng=1)
    with pytest.raises(ValueError, match="runs must be >= 2, got 1"):
        ams_probability(MODEL, X, EV, horizon=10, runs=1, rng=1)
    with pytest.raises(ValueError, match="reference_level must be"):
        ams_probability(MODEL, X, EV, reference_level=1.0, rng=1)
    with pytest.raises(ValueError, match="model must be a SoftmaxChain"):
        ams_probability(ms.SoftmaxFlow(beta=1.0, gamma=0.5), X, EV, horizon=10, rng=1)
    with pytest.raises(ValueError, match="event must be a LeaveBall or a LeaveHull"):
        ams_probability(MODEL, X, ms.Collapse(0.1), horizon=10, rng=1)
    with pytest.raises(ValueError, match="max_steps is the safety budget"):
        ams_probability(MODEL, X, EV, horizon=10, max_steps=5, rng=1)
    with pytest.raises(ValueError, match="x0 must be a finite"):
        ams_probability(MODEL, X[0], EV, horizon=10, rng=1)


def test_budget_warns():
    with pytest.warns(DiagnosticWarning, match="paths reached max_steps"):
        ams_probability(MODEL, X, EV, reference_level=0.05, max_steps=10, replicas=5, runs=2, rng=1)


def test_entrance_law():
    # every replica at x0 by the entrance argument: the bits of the plain start
    kw = dict(horizon=1e11, replicas=6, runs=2, rng=8)
    plain = ams_probability(MODEL, X, EV, **kw)
    drawn = ams_probability(MODEL, X, EV, entrance=np.broadcast_to(X, (2, 6) + X.shape), **kw)
    np.testing.assert_array_equal(plain.runs, drawn.runs)
    np.testing.assert_array_equal(drawn.replay().runs, drawn.runs)
    with pytest.raises(ValueError, match=r"entrance must be a finite \(runs, replicas, n, d\)"):
        ams_probability(MODEL, X, EV, entrance=np.zeros((1, 6) + X.shape), **kw)


def test_a_time_dependent_step_is_refused():
    # the replicas branch at different times: AMS here needs a time-homogeneous chain
    model = ms.SoftmaxChain(beta=20.0, gamma=np.linspace(0.5, 0.1, 10))
    with pytest.raises(ValueError, match="model must have a constant step"):
        ams_probability(model, X, EV, horizon=10, rng=1)


def _event_distance(X):
    from metastab.engine import reaction_coordinate

    return reaction_coordinate(X, EV, x_ref=XREF)


XREF = X


def test_a_user_score_equal_to_the_default_gives_the_same_bits():
    # the default score computed on the host, after every step: the same paths and levels;
    # an increasing function of it: the same estimates (AMS sees only the order of levels)
    kw = dict(horizon=1e11, replicas=8, runs=3, rng=4)
    default = ams_probability(MODEL, X, EV, **kw)
    host = ams_probability(MODEL, X, EV, score=_event_distance, **kw)
    np.testing.assert_array_equal(default.runs, host.runs)
    np.testing.assert_array_equal(default.iterations, host.iterations)
    squared = ams_probability(MODEL, X, EV, score=lambda X: 3 * _event_distance(X) ** 2, **kw)
    np.testing.assert_array_equal(default.runs, squared.runs)
    assert host.score == "_event_distance"
    with pytest.raises(
        ValueError, match="used the score '_event_distance', a function that is not"
    ):
        host.replay()
    # a score that orders the paths differently: another estimate (the control that fails)
    other = ams_probability(MODEL, X, EV, score=lambda X: X[:, 0, 0], **kw)
    assert not np.array_equal(default.runs, other.runs)


def test_a_bad_score_is_refused():
    kw = dict(horizon=1e11, replicas=4, runs=2, rng=4)
    with pytest.raises(ValueError, match="score must return one finite float per configuration"):
        ams_probability(MODEL, X, EV, score=lambda X: np.zeros(3), **kw)
    with pytest.raises(ValueError, match="non-finite"):
        ams_probability(MODEL, X, EV, score=lambda X: np.full(len(X), np.nan), **kw)
    with pytest.raises(ValueError, match="score must be a callable"):
        ams_probability(MODEL, X, EV, score=3.0, **kw)
