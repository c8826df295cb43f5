"""Localmax dynamics (docs: models#models-rd): kernel == reference bit for bit, r = 0 is hardmax bit
for bit, invariants (a step stays in the current hull; r large is uniform averaging), validation of
r and its schedules, and the neighbour bookkeeping of ``simulate(..., record_neighbours=True)``."""

import importlib
import math

import numba
import numpy as np
import pytest
from kernel_calls import k_hardmax, k_localmax

import metastab as ms
from metastab.engine import chains
from metastab.engine import exact as sim
from metastab.kernels import params as _params
from metastab.kernels.reference import euclidean as ref
from metastab.models import NEIGHBOUR_RULES
from metastab.registry import model_from_dict

RULES = tuple(NEIGHBOUR_RULES)
STEP_MATRIX = ms.step_matrix(np.array([[0.5, 0.2, 0.0], [0.1, 1.5, 0.3], [0.0, -0.2, 0.7]]))


def configurations():
    """(name, x, B): non-symmetric B, exact ties, coincident tokens, very different magnitudes,
    scores of both signs (so that the relative rule sees negative maxima)."""
    rng = np.random.default_rng(20251126)
    out = []
    for d in (1, 2, 3):
        out.append((f"gauss-d{d}", rng.normal(size=(7, d)), rng.normal(size=(d, d))))
    sq = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [0.0, 0.0], [0.5, 0.1]])
    out.append(("square-ties", sq, np.eye(2)))
    x = rng.normal(size=(7, 2))
    x[3] = x[1]
    x[5] = x[1]
    x[6] = x[0]
    out.append(("coincident", x, np.array([[1.0, 0.7], [-0.4, 2.0]])))
    x = rng.normal(size=(6, 3)) * np.array([1e-8, 1.0, 1e6])[None]
    out.append(("magnitudes", x, rng.normal(size=(3, 3))))
    out.append(("negdef", rng.normal(size=(6, 2)), -np.array([[2.0, 0.5], [-0.3, 1.0]])))
    return out


CONFIGS = configurations()
IDS = [c[0] for c in CONFIGS]


def gammas_for(d):
    return [1 / 3, 1.0, STEP_MATRIX[:d, :d].copy()]


# --------------------------------------------------------------------------------------------
# one step: kernel == reference, r = 0 == hardmax
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("r", [0.0, 1e-9, 0.05, 0.5, 3.0, 1e8])
@pytest.mark.parametrize("name,x,B", CONFIGS, ids=IDS)
def test_localmax_step_matches_reference(name, x, B, r, rule):
    for gamma in gammas_for(x.shape[1]):
        got = k_localmax(x, B, gamma, r, rule)
        want = ref.localmax_step(x, B, gamma, r, rule)
        assert np.isfinite(got).all()
        assert np.array_equal(got, want), (name, r, rule, np.ndim(gamma))


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("name,x,B", CONFIGS, ids=IDS)
def test_r_zero_step_is_hardmax_bit_for_bit(name, x, B, rule):
    for gamma in gammas_for(x.shape[1]):
        got = k_localmax(x, B, gamma, 0.0, rule)
        assert np.array_equal(got, k_hardmax(x, B, gamma, tol=0.0))
        assert np.array_equal(got, ref.hardmax_step(x, B, gamma, "index", 0.0))


def test_r_zero_is_hardmax_bit_for_bit_through_simulate():
    """Whole runs, schedules included: Localmax(r=0) == Hardmax(ties="index", tol=0), and so are
    the recorded neighbour (leader) sets."""
    P = ms.random_polygon(6, all_vertices=True, rng=3)
    rng = np.random.default_rng(4)
    x0 = np.vstack([P.vertices, rng.dirichlet(np.ones(6), size=10) @ P.vertices])
    x0[-1] = x0[0]  # a token on a vertex: exact ties from the start
    B = np.array([[1.0, 0.3], [-0.2, 0.9]])
    for gamma in (1 / 3, np.linspace(0.9, 0.1, 40), lambda t: 1.0 / (t + 2)):
        for rule in RULES:
            lm = ms.simulate(
                ms.Localmax(gamma, 0.0, B=B, neighbours=rule),
                x0,
                steps=40,
                record_every=3,
                record_neighbours=True,
            )
            hm = ms.simulate(
                ms.Hardmax(gamma, B=B, ties="index", tol=0.0),
                x0,
                steps=40,
                record_every=3,
                record_neighbours=True,
            )
            assert np.array_equal(lm.trajectory, hm.trajectory)
            assert np.array_equal(lm.final, hm.final)
            assert np.array_equal(lm.neighbours, hm.neighbours)
    # and r = 0 given as a schedule of zeros
    lm = ms.simulate(ms.Localmax(1 / 3, np.zeros(40)), x0, steps=40)
    assert np.array_equal(lm.final, ms.simulate(ms.Hardmax(1 / 3, tol=0.0), x0, steps=40).final)


def test_positive_r_differs_from_hardmax():
    """Negative control: the equality above is not vacuous."""
    x0 = ms.regular_polygon(5).vertices * np.array([1.0, 0.8])
    x0 = np.vstack([x0, [[0.1, 0.05], [-0.2, 0.1]]])
    hm = ms.simulate(ms.Hardmax(1 / 3, tol=0.0), x0, steps=10).final
    assert not np.array_equal(ms.simulate(ms.Localmax(1 / 3, 0.2), x0, steps=10).final, hm)


# --------------------------------------------------------------------------------------------
# whole runs: simulate / first_passage == reference run_chain
# --------------------------------------------------------------------------------------------

X0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.2], [0.3, -0.8], [0.1, 0.1], [0.6, 0.55]])
RUNS = [
    ("additive", ms.Localmax(0.3, 0.1, B=[[1.0, 0.4], [-0.1, 0.7]])),
    ("relative", ms.Localmax(0.3, 0.25, neighbours="relative")),
    ("r-array", ms.Localmax(np.linspace(0.9, 0.1, 37), np.linspace(0.5, 0.0, 37))),
    (
        "r-callable",
        ms.Localmax(lambda t: 1.0 / (t + 2), lambda t: 0.4 * 0.8**t, neighbours="relative"),
    ),
    ("step-matrix", ms.Localmax(ms.step_matrix([[0.4, 0.1], [0.0, 0.8]]), 0.05)),
]


@pytest.mark.parametrize("name,model", RUNS, ids=[m[0] for m in RUNS])
def test_simulate_matches_reference_run_chain(name, model):
    run = ms.simulate(model, X0, steps=37, chains=2, rng=7)
    want, t, hit = ref.run_chain(
        ref.LOCALMAX,
        X0,
        model.key_query(2),
        gamma=model.gamma,
        r=model.r,
        neighbours=model.neighbours,
        steps=37,
    )
    assert t == 37 and not hit
    for c in range(2):
        assert np.array_equal(run.final[c], want), name


def test_first_passage_matches_reference():
    model = ms.Localmax(0.3, 1.0)  # r of the order of the scores: the tokens merge
    event = ms.Collapse(0.2)
    fp = ms.first_passage(model, X0, event, max_steps=300, chains=2, rng=1)
    pred = ref.event_predicate(event, X0, np.eye(2))
    want, t, hit = ref.run_chain(
        ref.LOCALMAX, X0, np.eye(2), gamma=0.3, r=1.0, steps=300, event=pred
    )
    assert hit and not fp.censored.any()
    assert (fp.times == t).all()
    assert np.array_equal(fp.final[0], want)


def test_chunking_and_threads_do_not_matter(monkeypatch):
    """The margin schedule is indexed by global step: splitting the steps into calls of one
    step, or running on one or two threads, gives the same path."""
    model = ms.Localmax(lambda t: 0.5 / (1 + 0.1 * t), np.linspace(0.6, 0.0, 60))
    one_call = ms.simulate(model, X0, steps=60, chains=3)
    monkeypatch.setattr(sim, "_FIRST_CALL_STEPS", 1)
    monkeypatch.setattr(sim, "_CALL_SECONDS", 0.0)
    assert np.array_equal(ms.simulate(model, X0, steps=60, chains=3).final, one_call.final)
    if numba.config.NUMBA_NUM_THREADS >= 2:
        before = numba.get_num_threads()
        try:
            numba.set_num_threads(1)
            single = ms.simulate(model, X0, steps=60, chains=3)
        finally:
            numba.set_num_threads(before)
        assert np.array_equal(single.final, one_call.final)


# --------------------------------------------------------------------------------------------
# invariants
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("d", [1, 2, 3])
def test_a_step_never_leaves_the_current_hull(d, rule):
    """Scalar γ: every new token is a convex combination of the current tokens (exact distance
    to the hull, :func:`metastab.kernels.reference.euclidean.hull_distance`)."""
    rng = np.random.default_rng(100 + d)
    for trial in range(6):
        x = rng.normal(size=(6, d)) * rng.uniform(0.1, 10.0)
        B = rng.normal(size=(d, d))
        r = float(rng.choice([0.0, 0.01, 0.3, 2.0, 50.0]))
        gamma = float(rng.choice([1 / 3, 1.0, 0.05]))
        new = k_localmax(x, B, gamma, r, rule)
        scale = np.abs(x).max()
        for p in new:
            assert ref.hull_distance(p, x) <= 1e-12 * scale, (trial, r, gamma)


def test_hull_shrinks_along_a_run():
    """Hull nesting over many steps: the hull at step t+1 lies in the hull at step t (vertices
    of conv X^{t+1} are within rounding of conv X^t), tested on every recorded step."""
    rng = np.random.default_rng(5)
    x0 = rng.normal(size=(9, 2))
    run = ms.simulate(
        ms.Localmax(1 / 3, lambda t: 0.3 * 0.9**t, B=[[1.0, 0.2], [0.1, 0.8]]),
        x0,
        steps=25,
        record_every=1,
    )
    traj = run.trajectory[0]
    for t in range(25):
        for p in traj[t + 1]:
            assert ref.hull_distance(p, traj[t]) <= 1e-12 * np.abs(traj[t]).max()


@pytest.mark.parametrize("rule", RULES)
def test_r_large_is_uniform_averaging(rule):
    """r → ∞: N_i is every token and the step is x_i + γ (x̄ − x_i), x̄ the mean of all tokens."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=(8, 2)) + np.array([3.0, 0.0])  # scores away from 0 for "relative"
    B = np.array([[1.0, 0.3], [-0.2, 0.9]])
    got = k_localmax(x, B, 1 / 3, 1e12, rule)
    mean = x.mean(axis=0)
    np.testing.assert_allclose(got, x + (mean - x) / 3, rtol=0, atol=1e-14)
    run = ms.simulate(
        ms.Localmax(1 / 3, 1e12, B=B, neighbours=rule),
        x,
        steps=20,
        record_every=1,
        record_neighbours=True,
    )
    assert run.neighbours.all()
    # uniform averaging keeps the mean and contracts towards it by (1 − γ) per step
    np.testing.assert_allclose(run.final[0], mean + (2 / 3) ** 20 * (x - mean), rtol=0, atol=1e-13)
    # negative control: a moderate r is not uniform averaging
    assert not np.allclose(k_localmax(x, B, 1 / 3, 0.5, rule), got, rtol=0, atol=1e-6)


@pytest.mark.parametrize("rule", RULES)
def test_neighbour_sets_grow_with_r(rule):
    """N_i(r) ⊂ N_i(r') for r < r', N_i(0) is the argmax set and every N_i holds an argmax."""
    rng = np.random.default_rng(12)
    x = rng.normal(size=(10, 3))
    B = rng.normal(size=(3, 3))
    for i in range(10):
        s = ref.scores(x, B, i)
        prev = set(ref.neighbours(s, 0.0, rule))
        assert prev == set(ref.leaders(s, 0.0))
        for r in (0.01, 0.1, 0.5, 1.0, 5.0):
            cur = set(ref.neighbours(s, r, rule))
            assert prev <= cur and int(np.argmax(s)) in cur
            prev = cur


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad,match",
    [
        (-0.1, r"r must be >= 0, got -0.1"),
        (math.nan, r"r must be finite, got nan"),
        (math.inf, r"r must be finite, got inf"),
        (True, r"r must be a real number, got True"),
        ("0.1", r"r must be a real number, got '0.1'"),
        ([0.1, -0.2, 0.3], r"r schedule must be finite and >= 0, got r\[1\] = -0.2"),
        ([0.1, math.nan], r"r schedule must be finite and >= 0, got r\[1\] = nan"),
        ([], r"r schedule must not be empty"),
        (np.zeros((2, 2)), r"r must be .* got an array of shape \(2, 2\)"),
        (["a", "b"], r"r must be a number >= 0, a 1-D schedule or a callable"),
    ],
)
def test_bad_r_is_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        ms.Localmax(1 / 3, bad)


def test_bad_neighbour_rule_and_gamma_are_rejected():
    with pytest.raises(ValueError, match=r"neighbours must be one of \('additive', 'relative'\)"):
        ms.Localmax(1 / 3, 0.1, neighbours="softmax")
    with pytest.raises(ValueError, match="gamma must be in"):
        ms.Localmax(1.5, 0.1)
    with pytest.raises(ValueError, match=r"gamma schedule .* gamma\[1\]"):
        ms.Localmax([0.5, 0.0], 0.1)


def test_schedules_are_validated_when_used():
    x0 = X0
    with pytest.raises(ValueError, match="r schedule has 10 entries, but"):
        ms.simulate(ms.Localmax(1 / 3, np.full(10, 0.1)), x0, steps=20)
    with pytest.raises(ValueError, match=r"r\(3\) must be >= 0, got -1.0"):
        ms.simulate(ms.Localmax(1 / 3, lambda t: 1.0 if t < 3 else -1.0), x0, steps=20)
    with pytest.raises(ValueError, match=r"r\(0\) must be finite, got nan"):
        ms.simulate(ms.Localmax(1 / 3, lambda t: math.nan), x0, steps=5)
    with pytest.raises(ValueError, match="gamma schedule has 5 entries"):
        ms.simulate(ms.Localmax(np.full(5, 0.3), 0.1), x0, steps=20)
    # schedules that vanish, stay positive or vary are all accepted
    for r in (
        np.r_[np.linspace(0.5, 0.0, 10), np.zeros(10)],
        lambda t: 0.2,
        lambda t: 0.1 * (1 + math.sin(t)),
    ):
        assert np.isfinite(ms.simulate(ms.Localmax(1 / 3, r), x0, steps=20).final).all()


def test_model_is_frozen_and_round_trips():
    m = ms.Localmax(
        np.array([0.5, 0.25]), [0.3, 0.0], B=[[1.0, 2.0], [0.0, 1.0]], neighbours="relative"
    )
    assert m.kind == "localmax" and m.code == _params.LOCALMAX and m.rule == _params.RELATIVE
    assert m.has_schedule and m.has_margin_schedule
    with pytest.raises(ValueError):
        m.r[0] = 1.0
    with pytest.raises(AttributeError):
        m.r = 0.0
    back = model_from_dict(m.to_dict())
    assert isinstance(back, ms.Localmax) and back.neighbours == "relative"
    assert np.array_equal(back.r, m.r) and np.array_equal(back.gamma, m.gamma)
    assert np.array_equal(back.B, m.B)
    const = ms.Localmax(1 / 3, 2)
    assert const.r == 2.0 and isinstance(const.r, float) and not const.has_margin_schedule
    assert model_from_dict(const.to_dict()).r == 2.0
    with pytest.raises(ValueError, match="r 'callable:<lambda>' was a callable"):
        model_from_dict(ms.Localmax(1 / 3, lambda t: 0.1).to_dict())


# --------------------------------------------------------------------------------------------
# neighbour bookkeeping
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        ms.Localmax(1 / 3, lambda t: 0.4 * 0.7**t, B=[[1.0, 0.3], [-0.2, 0.9]]),
        ms.Localmax(1 / 3, np.linspace(0.5, 0.0, 31), neighbours="relative"),
        ms.Hardmax(1 / 3, ties="point", tol=1e-9),
    ],
    ids=["localmax-callable", "localmax-array", "hardmax"],
)
def test_recorded_neighbours_are_the_sets_each_step_uses(model):
    rng = np.random.default_rng(21)
    x0 = rng.normal(size=(3, 7, 2))  # one configuration per chain
    run = ms.simulate(model, x0, steps=30, record_every=4, record_neighbours=True)
    plain = ms.simulate(model, x0, steps=30)
    assert np.array_equal(run.final, plain.final)  # recording does not change the path
    assert list(run.times) == [0, 4, 8, 12, 16, 20, 24, 28, 30]
    assert run.neighbours.shape == (3, 9, 7, 7) and run.neighbours.dtype == bool
    B = model.key_query(2)
    for c in range(3):
        for k, t in enumerate(run.times):
            x = run.trajectory[c, k]
            for i in range(7):
                s = ref.scores(x, B, i)
                if isinstance(model, ms.Localmax):
                    r = float(model.margin_arrays(int(t), 1)[0])
                    want = ref.neighbours(s, r, model.neighbours)
                else:
                    want = ref.leaders(s, model.tol)
                assert list(np.flatnonzero(run.neighbours[c, k, i])) == want
    assert np.array_equal(run.leaders, np.diagonal(run.neighbours, axis1=2, axis2=3))
    assert run.leaders.shape == (3, 9, 7)


def test_leaders_of_a_polygon_with_inner_tokens():
    """Vertices of a regular polygon lead themselves (B = I, equinorm); tokens strictly inside
    do not (their argmax is a vertex)."""
    V = ms.regular_polygon(6).vertices
    x0 = np.vstack([V, 0.3 * V[:3] + np.array([0.05, 0.0])])
    run = ms.simulate(ms.Localmax(1 / 3, 0.0), x0, steps=5, record_every=5, record_neighbours=True)
    assert run.leaders[0, 0, :6].all() and not run.leaders[0, 0, 6:].any()
    assert ms.simulate(ms.Localmax(1 / 3, 0.1), x0, steps=5).neighbours is None


def test_record_neighbours_is_refused_where_it_has_no_meaning():
    with pytest.raises(ValueError, match="record_neighbours needs a Hardmax or Localmax model"):
        ms.simulate(ms.SoftmaxFlow(beta=1.0), X0, steps=3, record_every=1, record_neighbours=True)
    with pytest.raises(ValueError, match="record_neighbours needs record_every"):
        ms.simulate(ms.Localmax(0.3, 0.1), X0, steps=3, record_neighbours=True)
    with pytest.raises(ValueError, match=r"use r_30, but the r schedule has 30 entries"):
        ms.simulate(
            ms.Localmax(0.3, np.full(30, 0.1)), X0, steps=30, record_every=1, record_neighbours=True
        )
    with pytest.raises(ValueError, match="record_neighbours must be True or False"):
        ms.simulate(ms.Localmax(0.3, 0.1), X0, steps=3, record_every=1, record_neighbours=1)


def test_neighbours_count_in_the_memory_check(monkeypatch):
    n = 400
    x0 = np.random.default_rng(0).normal(size=(n, 1))
    states = 2 * x0.nbytes  # steps=1, record_every=1: two snapshots
    sets = 2 * n * n
    avail = (states + sets // 2) * 2  # enough for the states, not for states + sets
    avail += 2 * chains.run_bytes(1, n, 1)  # and the run itself
    monkeypatch.setattr(
        importlib.import_module("metastab._validate"), "available_memory", lambda: avail
    )
    ms.simulate(ms.Localmax(0.3, 0.1), x0, steps=1, record_every=1)
    with pytest.raises(MemoryError, match="record_every=1"):
        ms.simulate(ms.Localmax(0.3, 0.1), x0, steps=1, record_every=1, record_neighbours=True)
