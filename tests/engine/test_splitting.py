"""Adaptive multilevel splitting: unbiasedness and interval coverage on a chain with a known escape
probability and ties in the reaction coordinate, agreement with direct simulation on SA_P, and
negative controls that must fail (the naive tie rule, a wrong β).

Every statistical test uses fixed seeds (so it is deterministic) and states its tolerance. The
figures quoted beside the tests were measured with these seeds in the kernels' unfused arithmetic
of version 0.1.0; the fused arithmetic draws other samples of the same laws, so they show the
scale of each margin, not the current digits.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from numba import njit
from scipy import stats

import metastab as ms
from metastab.engine.splitting import (
    _ams,
    escape_probability,
    mean_escape_time,
    reaction_coordinate,
)
from metastab.kernels import streams as _streams
from metastab.kernels.cpu import splitting as _splitting
from metastab.kernels.reference import euclidean as _reference
from metastab.results.splitting import _p_interval, _renewal
from metastab.stats import DiagnosticWarning

# the functions tested here are deprecated (they warn once per call)
pytestmark = pytest.mark.filterwarnings("ignore:metastab.engine.* is deprecated:DeprecationWarning")

SEED = 20_251_127

# ------------------------------------------------------------------ a chain with a known answer
# Gambler's ruin: a walk on {0, ..., M} that steps up with probability Q, started at 1; A = {0},
# B = {M}. ξ is the position, so levels tie all the time (the case the unbiased variant is for).
# P[B before A] = (1 − r) / (1 − r^M), r = (1 − Q) / Q.
Q, M = 0.35, 8
P_RUIN = (1 - (1 - Q) / Q) / (1 - ((1 - Q) / Q) ** M)


@njit
def _walk(X, clock, level, state, rec_level, rec_time, rec_state, n_rec, status):
    """The excursions of the walk with the contract of ``_splitting.excursions`` (no FULL)."""
    for c in range(X.shape[0]):
        pos = X[c, 0, 0]
        n_rec[c] = 0
        while True:
            pos += 1.0 if _streams.next_uniform(state[c]) < Q else -1.0
            clock[c] += 1.0
            top = np.inf if pos >= M else pos
            if top > level[c]:
                level[c] = top
                rec_level[c, n_rec[c]] = top
                rec_time[c, n_rec[c]] = clock[c]
                rec_state[c, n_rec[c], 0, 0] = pos
                n_rec[c] += 1
            if pos >= M:
                status[c] = _splitting.IN_B
                break
            if pos <= 0:
                status[c] = _splitting.IN_A
                break
        X[c, 0, 0] = pos


def _walk_advance(X, clock, level, streams):
    C = X.shape[0]
    X, clock, level = X.copy(), clock.copy(), level.copy()
    rl, rt, rs = np.empty((C, M + 1)), np.empty((C, M + 1)), np.empty((C, M + 1, 1, 1))
    nr, st = np.zeros(C, np.int64), np.zeros(C, np.int64)
    _walk(X, clock, level, streams, rl, rt, rs, nr, st)
    return st, clock, level, [(rl[c, : nr[c]], rt[c, : nr[c]], rs[c, : nr[c]]) for c in range(C)]


def _ruin(runs, replicas, seed, kill_ties=True):
    """p̂ of ``runs`` independent AMS runs on the walk."""
    root = np.random.SeedSequence(seed)
    keys, choosers = [], []
    for r in range(runs):
        keys.append(
            tuple(
                np.uint64(w)
                for w in np.random.SeedSequence(root.entropy, spawn_key=(r, 0)).generate_state(
                    2, np.uint64
                )
            )
        )
        choosers.append(
            np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(r, 1)))
        )
    first = np.empty((runs * replicas, 4), np.uint64)
    for r in range(runs):
        _streams.seed_streams(
            keys[r][0], keys[r][1], np.uint64(0), first[r * replicas : (r + 1) * replicas]
        )
    start = np.ones((runs, replicas, 1, 1))
    p, *_ = _ams(
        _walk_advance,
        start,
        np.ones((runs, replicas)),
        np.zeros((runs, replicas), bool),
        first.reshape(runs, replicas, 4),
        keys,
        choosers,
        kill_ties=kill_ties,
    )
    return p


RUNS_BIAS, REPLICAS_TOY = 4000, 20


def test_ruin_unbiased():
    """E[p̂] = p with ties in ξ: the mean of 4000 runs of 20 replicas is within 3.5 standard
    errors of the exact p (measured: see the assertion message)."""
    p = _ruin(RUNS_BIAS, REPLICAS_TOY, SEED)
    se = p.std(ddof=1) / math.sqrt(p.size)
    z = (p.mean() - P_RUIN) / se
    print(f"generalized AMS: mean p̂ {p.mean():.4g} vs exact {P_RUIN:.5g}, z = {z:.2f}")
    assert abs(z) < 3.5, f"mean p̂ {p.mean():.5g} vs exact {P_RUIN:.5g}: z = {z:.2f}"


def test_ruin_naive_tie_rule_is_biased():
    """Negative control: killing one replica per iteration (the continuous-ξ rule) with ties is
    biased; the same test as above must fail, by more than 10 standard errors (400 runs;
    measured with 4000: mean 5.9e-4 against 6.1e-3, z = −584)."""
    p = _ruin(RUNS_BIAS // 10, REPLICAS_TOY, SEED, kill_ties=False)
    se = p.std(ddof=1) / math.sqrt(p.size)
    z = (p.mean() - P_RUIN) / se
    print(f"one kill at ties: mean p̂ {p.mean():.4g} vs exact {P_RUIN:.5g}, z = {z:.2f}")
    assert abs(z) > 10, f"mean p̂ {p.mean():.5g} vs exact {P_RUIN:.5g}: z = {z:.2f}"


COVERAGE_REPS, COVERAGE_RUNS = 400, 10


@pytest.fixture(scope="module")
def coverage_sample():
    return _ruin(COVERAGE_REPS * COVERAGE_RUNS, REPLICAS_TOY, SEED + 1).reshape(
        COVERAGE_REPS, COVERAGE_RUNS
    )


@pytest.mark.parametrize("method", ["t", "log"])
def test_ruin_interval_coverage(coverage_sample, method):
    """The 95% interval from 10 runs covers the exact p in 400 independent replications at a rate
    compatible with 95% (two-sided binomial test, p-value > 1e-3)."""
    p = coverage_sample
    ci = np.array([_p_interval(row, 0.95, method) for row in p])
    low, high = ci[:, 0], ci[:, 1]
    covered = int(((low <= P_RUIN) & (P_RUIN <= high)).sum())
    pv = stats.binomtest(covered, COVERAGE_REPS, 0.95).pvalue
    print(f"coverage of the 95% interval ({method}): {covered / COVERAGE_REPS:.3f}")
    assert pv > 1e-3, f"{method}: coverage {covered / COVERAGE_REPS:.3f}, binomial p = {pv:.2g}"


# ------------------------------------------------------------------ SA_P

TRIANGLE = ms.regular_polygon(3).vertices
X_REF = np.repeat(TRIANGLE, 3, axis=0)  # frozen: three tokens on every vertex
GROUPS = np.repeat(np.arange(3), 3)
# One cross pick moves a token by γ√3 = 0.78 < 1: leaving the hulls + B(0, 1) takes a second
# unlikely pick (towards another vertex) before the token relaxes home; at β = 40 an excursion
# succeeds with probability ~5e-3, and the frozen waits are ~1e24 steps (accelerated mode).
HULL = ms.LeaveHull(groups=GROUPS, radius=1.0)
GAMMA, BETA = 0.45, 40.0
# Merging at 0.2 (relative) snaps a returning token onto its vertex before its group mates are
# pulled towards it, so that the chain re-enters A at X_REF exactly and cycles are i.i.d. (the
# renewal assumption of metastab.engine.splitting). Direct and splitting simulate this same chain.
MERGE = 0.2
# A second geometry: three tokens on every vertex of the regular pentagon (side 1.18), γ = 0.4,
# β = 30: an excursion succeeds with probability ~0.03 at z_A = 0.05, E[T] ~ 1e9 (merged at 0.2)
# or 1.7e8 (SA_P).
PENTAGON = np.repeat(ms.regular_polygon(5).vertices, 3, axis=0)
PENTAGON_HULL = ms.LeaveHull(groups=np.repeat(np.arange(5), 3), radius=1.0)
GEOMETRIES = {
    "triangle": (X_REF, HULL, ms.SoftmaxChain(BETA, GAMMA)),
    "pentagon": (PENTAGON, PENTAGON_HULL, ms.SoftmaxChain(30.0, 0.4)),
}
LEVELS = (0.01, 0.02, 0.05)


def _exact_mean(geometry, chains, merge_tol=None):
    """(mean, standard error) of the escape time of first_passage in accelerated mode."""
    x, event, model = GEOMETRIES[geometry]
    fp = ms.first_passage(
        model,
        x,
        event,
        max_steps=1e100,
        chains=chains,
        rng=SEED + 5,
        mode="accelerated",
        merge_tol=merge_tol,
    )
    assert not fp.censored.any()
    return fp.times.mean(), fp.times.std(ddof=1) / math.sqrt(chains)


def _covers(et, mean, se):
    """Whether the splitting estimate et agrees with an exact mean ± se: the mean lies in the 95%
    interval of et, and their difference is below 3 combined standard errors."""
    low, high = et.confidence_interval()
    runs = et.splitting.runs.size
    se_split = math.log(high / et.mean) / stats.t.ppf(0.975, runs - 1) * et.mean
    z = (et.mean - mean) / math.hypot(se, se_split)
    return low <= mean <= high and abs(z) < 3


def _merged(geometry, reference_level, seed, model=None):
    """E[T] by splitting of the chain merged at MERGE (which must say it is not SA_P); ``model``
    replaces the geometry's."""
    x, event, default = GEOMETRIES[geometry]
    model = default if model is None else model
    with pytest.warns(DiagnosticWarning, match="not SA_P"):
        return mean_escape_time(
            model,
            x,
            event,
            replicas=100,
            runs=20,
            rng=seed,
            reference_level=reference_level,
            merge_tol=MERGE,
        )


def test_reaction_coordinate_matches_reference():
    """ξ = max_i dist(x_i, group hull)/r equals the exact reference distance (to 1e-12), and
    the ball version max_i |x_i − c_i|/r."""
    gen = np.random.default_rng(SEED)
    ref = TRIANGLE[GROUPS] + 0.1 * gen.normal(size=(9, 2))
    ev = ms.LeaveHull(groups=GROUPS, radius=0.7)
    X = ref + 0.3 * gen.normal(size=(20, 9, 2))
    xi = reaction_coordinate(X, ev, x_ref=ref)
    want = [
        max(_reference.hull_distance(x[i], ref[GROUPS == GROUPS[i]]) for i in range(9)) / 0.7
        for x in X
    ]
    np.testing.assert_allclose(xi, want, rtol=1e-12, atol=1e-12)
    ball = reaction_coordinate(X, ms.LeaveBall(0.5), x_ref=ref)
    np.testing.assert_allclose(ball, np.linalg.norm(X - ref, axis=2).max(axis=1) / 0.5)


@pytest.fixture(scope="module")
def direct():
    fp = ms.first_passage(
        ms.SoftmaxChain(BETA, GAMMA),
        X_REF,
        HULL,
        max_steps=1e100,
        chains=1000,
        rng=SEED,
        mode="accelerated",
        merge_tol=MERGE,
    )
    assert not fp.censored.any()
    return fp.times


def _splitting_time(beta, seed=SEED + 2):
    return _merged("triangle", None, seed, model=ms.SoftmaxChain(beta, GAMMA))


@pytest.mark.slow
def test_mean_escape_time_agrees_with_direct(direct):
    """The splitting E[T] and the direct mean of 1000 escapes agree: the direct mean lies in the
    splitting 95% interval, and the difference is below 3 combined standard errors (measured:
    splitting 2.05e27 [0.94e27, 4.45e27], p = 3.2e-3 [1.5e-3, 6.8e-3]; direct
    1.62e27 ± 0.05e27)."""
    et = _splitting_time(BETA)
    low, high = et.confidence_interval()
    mean, se = direct.mean(), direct.std(ddof=1) / math.sqrt(direct.size)
    assert low <= mean <= high, f"direct {mean:.4g} outside splitting [{low:.4g}, {high:.4g}]"
    se_split = math.log(high / et.mean) / stats.t.ppf(0.975, 19) * et.mean
    z = (et.mean - mean) / math.hypot(se, se_split)
    assert abs(z) < 3, f"splitting {et.mean:.4g} vs direct {mean:.4g}: z = {z:.2f}"
    # p itself against the 2000 direct (unsplit) first excursions of the same runs
    res = et.splitting
    hits = int(res.first_escaped.sum())
    direct_p = stats.binomtest(hits, res.first_escaped.size).proportion_ci(0.999)
    assert direct_p.low <= res.p <= direct_p.high, (res.p, hits, direct_p)


@pytest.mark.slow
def test_wrong_beta_is_detected(direct):
    """Negative control: splitting at β × 1.05 must NOT cover the direct mean at β (measured:
    4.33e28 [1.96e28, 9.57e28] against 1.62e27)."""
    et = _splitting_time(BETA * 1.05)
    low, high = et.confidence_interval()
    assert not low <= direct.mean() <= high, (low, direct.mean(), high)


def test_reproducible_and_runs_independent():
    """A fixed seed gives identical runs; run r does not depend on how many runs there are, nor
    on the thread count."""
    model = ms.SoftmaxChain(BETA, GAMMA)
    kw = dict(replicas=30, rng=7, reference_level=0.05)
    a = escape_probability(model, X_REF, HULL, runs=3, **kw)
    b = escape_probability(model, X_REF, HULL, runs=3, **kw)
    c = escape_probability(model, X_REF, HULL, runs=5, **kw)
    np.testing.assert_array_equal(a.runs, b.runs)
    np.testing.assert_array_equal(a.sojourns, b.sojourns)
    np.testing.assert_array_equal(a.runs, c.runs[:3])
    np.testing.assert_array_equal(a.first_lengths, c.first_lengths[:3])
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = escape_probability(model, X_REF, HULL, runs=3, **kw)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(a.runs, one.runs)
    np.testing.assert_array_equal(a.sojourns, one.sojourns)


def test_exact_mode_steps_like_first_passage():
    """In exact mode the sojourn of replica k of run r is the path of stream k of the run's key:
    with an event that any move meets, its length is the direct first-passage time of that
    stream (first_passage's chain 0 under the same Seed)."""
    model = ms.SoftmaxChain(2.0, 0.5)
    x = np.repeat(TRIANGLE, 2, axis=0)
    ball = ms.LeaveBall(0.5 * 0.5 * math.sqrt(3))
    res = escape_probability(model, x, ball, replicas=2, runs=2, rng=11, mode="exact")
    seed = ms.as_seed(11)
    for r in range(2):
        fp = ms.first_passage(
            model,
            x,
            ball,
            max_steps=10**6,
            chains=2,
            rng=ms.Seed(seed.entropy, seed.spawn_key + (r, 0)),
        )
        # the first step with a move leaves A and meets the event, which ends the sojourn
        np.testing.assert_array_equal(res.sojourns[r], fp.times)
        assert res.first_escaped[r].all() and (res.runs == 1).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(replicas=1), "replicas"),
        (dict(runs=1), "runs"),
        (dict(mode="fast"), "mode"),
        (dict(reference_level=1.0), "reference_level"),
        (dict(reference_level=-0.1), "reference_level"),
        (dict(mode="exact", merge_tol=0.1), "merge_tol"),
        (dict(max_steps=0), "max_steps"),
        (dict(replicas=2.5), "replicas"),
    ],
)
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        escape_probability(ms.SoftmaxChain(BETA, GAMMA), X_REF, HULL, **kwargs)


def test_bad_model_event_and_reference():
    with pytest.raises(ValueError, match="model"):
        escape_probability(ms.Hardmax(0.5), X_REF, HULL)
    with pytest.raises(ValueError, match="event"):
        escape_probability(ms.SoftmaxChain(BETA, GAMMA), X_REF, ms.Collapse(0.1))
    with pytest.raises(ValueError, match="x_ref"):
        escape_probability(ms.SoftmaxChain(BETA, GAMMA), np.zeros(9), HULL)
    with pytest.raises(ValueError, match="x_ref"):
        escape_probability(ms.SoftmaxChain(BETA, GAMMA), np.full((9, 2), np.nan), HULL)
    with pytest.raises(ValueError, match="x_ref must lie in the reference set"):
        ball = ms.LeaveBall(0.5, centers=X_REF)
        escape_probability(ms.SoftmaxChain(BETA, GAMMA), X_REF + 0.1, ball)


def test_budget_warns():
    """An excursion stopped by max_steps is reported, never silently counted."""
    with pytest.warns(DiagnosticWarning, match="max_steps"):
        escape_probability(
            ms.SoftmaxChain(BETA, GAMMA), X_REF, HULL, replicas=10, runs=2, rng=1, max_steps=3
        )


def test_default_merge_degenerates_to_direct_simulation():
    """At the default merge distance a group settles O(1/β) away from its vertex after an
    excursion, so with the default z_A = 0 no excursion returns to A: p̂ = 1 in every run, no
    splitting happens, and E[T] is a direct simulation that agrees with first_passage
    (measured: 2.38e25 [2.30e25, 2.48e25] against 2.32e25 ± 0.04e25)."""
    model = ms.SoftmaxChain(BETA, GAMMA)
    fp = ms.first_passage(
        model, X_REF, HULL, max_steps=1e100, chains=1000, rng=SEED, mode="accelerated"
    )
    et = mean_escape_time(model, X_REF, HULL, replicas=50, runs=10, rng=SEED + 3)
    assert et.splitting.returns == 0 and (et.splitting.runs == 1).all()
    low, high = et.confidence_interval()
    assert low <= fp.times.mean() <= high, (low, fp.times.mean(), high)


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("level", LEVELS)
def test_mean_escape_time_refuses_displaced_returns(geometry, level):
    """SA_P re-enters the reference set away from x_ref (its groups settle O(1/β) off their
    vertices), so the cycles are not i.i.d. and the renewal formula is biased (measured with
    replicas=100, runs=20 against accelerated first_passage: triangle ×1.52, ×6.8, ×82 and
    pentagon ×1.00, ×1.18, ×5.3 at z_A = 0.01, 0.02, 0.05): mean_escape_time refuses, in one
    error that says why and what to use; p itself is still returned."""
    x, event, model = GEOMETRIES[geometry]
    res = escape_probability(model, x, event, replicas=20, runs=2, rng=SEED, reference_level=level)
    assert res.chain == "SA_P" and res.p < 1
    assert res.displaced_returns == res.returns > 0 and res.largest_return_offset <= level
    with pytest.raises(
        ValueError, match=r"refuses this case: .* not i\.i\.d\. .* mode='accelerated'"
    ):
        res.mean_escape_time()
    with pytest.raises(ValueError, match="refuses this case"):
        mean_escape_time(model, x, event, replicas=20, runs=2, rng=SEED, reference_level=level)


def test_exact_mode_refuses_displaced_returns():
    """mode="exact" too: at β = 6 with z_A = 0.05 the groups come back to within z_A of their
    vertices but not to them (measured: 5 of 5 returns displaced, by up to 0.0497)."""
    res = escape_probability(
        ms.SoftmaxChain(6.0, GAMMA),
        X_REF,
        HULL,
        replicas=10,
        runs=2,
        rng=1,
        mode="exact",
        reference_level=0.05,
    )
    assert res.displaced_returns == res.returns > 0
    with pytest.raises(ValueError, match="refuses this case"):
        res.mean_escape_time()


def test_merge_tol_above_default_is_not_silent():
    """A merge distance above the default changes the chain: escape_probability warns that the
    chain is not SA_P, and the result, its sidecar and the E[T] table record the chain; at the
    default merge distance nothing warns and the chain is SA_P."""
    x, event, model = GEOMETRIES["pentagon"]
    with pytest.warns(DiagnosticWarning, match=r"merge_tol=0\.2 .* not SA_P"):
        res = escape_probability(model, x, event, replicas=50, runs=2, rng=1, merge_tol=MERGE)
    assert res.chain == "SA_P merged at merge_tol=0.2"
    assert res.metadata()["chain"] == res.chain
    assert res.mean_escape_time().to_frame().loc[0, "chain"] == res.chain
    sa_p = escape_probability(model, x, event, replicas=10, runs=2, rng=1, merge_tol=1e-12)
    assert sa_p.chain == "SA_P" and sa_p.metadata()["chain"] == "SA_P"


def test_merged_pentagon_agrees_with_accelerated():
    """Where the chain does restart at x_ref (merged at 0.2: a returning token is snapped onto its
    vertex), splitting agrees with accelerated first_passage of the same merged chain on the
    pentagon (agreement: exact mean inside the 95% interval and |z| < 3; measured: 1.24e9
    [0.95e9, 1.63e9] against 1.21e9 ± 0.04e9; with other seeds the 95% interval covered the
    exact mean in 92 of 100 replications)."""
    mean, se = _exact_mean("pentagon", 1000, MERGE)
    et = _merged("pentagon", 0.05, SEED + 6)
    assert et.splitting.returns > 0 and et.splitting.displaced_returns == 0
    assert et.splitting.p < 0.1  # it did split
    assert _covers(et, mean, se), (et.mean, et.confidence_interval(), mean, se)


def test_merged_chain_meets_the_event_as_first_passage_does():
    """Merged at 0.2, two tokens per vertex of the pentagon (side 1.18) with γ = 0.45: a token up
    to ~0.9 from its vertex can lie within the merge distance of the next one, so the merge itself
    can meet the event. first_passage tests the event before the merge; the splitting kernel must
    too, or it steps another chain (measured: 1.000e8 [0.941e8, 1.062e8] against the direct
    1.011e8 ± 0.020e8; with the event tested after the merge, as before, 0.834e8 [0.778e8,
    0.893e8], which this test rejects)."""
    x = np.repeat(ms.regular_polygon(5).vertices, 2, axis=0)
    event = ms.LeaveHull(groups=np.repeat(np.arange(5), 2), radius=1.0)
    model = ms.SoftmaxChain(30.0, 0.45)
    fp = ms.first_passage(
        model, x, event, max_steps=1e100, chains=2000, rng=SEED, mode="accelerated", merge_tol=MERGE
    )
    mean, se = fp.times.mean(), fp.times.std(ddof=1) / math.sqrt(fp.times.size)
    with pytest.warns(DiagnosticWarning, match="not SA_P"):
        et = mean_escape_time(
            model, x, event, replicas=100, runs=20, rng=SEED, reference_level=0.05, merge_tol=MERGE
        )
    msg = f"splitting {et.mean:.4g} {tuple(et.confidence_interval())}, direct {mean:.4g} ± {se:.2g}"
    assert _covers(et, mean, se), msg


@pytest.mark.slow
@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
def test_merged_chain_agrees_with_accelerated_at_every_level(geometry):
    """The merged chain on both geometries at the three reference levels: splitting agrees with
    accelerated first_passage (4000 escapes). Below the merge distance the levels see the same
    returns (a token is back only once snapped), so the three estimates coincide; they are
    checked all the same (measured: pentagon 1.24e9 [0.96e9, 1.61e9] against 1.20e9 ± 0.02e9,
    triangle 1.40e27 [0.64e27, 3.05e27] against 1.59e27 ± 0.03e27)."""
    mean, se = _exact_mean(geometry, 4000, MERGE)
    for level in LEVELS:
        et = _merged(geometry, level, SEED + 7)
        assert et.splitting.displaced_returns == 0
        assert _covers(et, mean, se), (geometry, level, et.mean, et.confidence_interval(), mean)


@pytest.mark.slow
@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
def test_unchecked_renewal_on_sa_p_is_rejected(geometry):
    """Negative control: the renewal formula applied to SA_P's displaced returns anyway (the
    estimator before the refusal) must fail the same agreement check against accelerated
    first_passage at z_A = 0.05 (measured: triangle 2.13e27 [0.93e27, 4.87e27], pentagon 1.04e9
    [0.80e9, 1.35e9], against SA_P's 2.30e25 and 1.68e8), and so must a reference mean off by the
    bias that the merged chain carries (SA_P's exact mean against the merged chain's splitting:
    1.40e27 and 1.24e9)."""
    x, event, model = GEOMETRIES[geometry]
    mean, se = _exact_mean(geometry, 1000)
    res = escape_probability(model, x, event, replicas=100, runs=20, rng=SEED, reference_level=0.05)
    assert not _covers(_renewal(res), mean, se)
    assert not _covers(_merged(geometry, 0.05, SEED + 7), mean, se)


def test_exact_mode_mean_escape_time_agrees_with_direct():
    """mode="exact" (every step, no merging) at β = 6, where direct stepping is cheap: E[T]
    from the cycles agrees with exact first_passage (direct mean inside the 95% interval;
    measured: 808.5 [769.8, 849.1] against 817.4 ± 22.6). Without merging a settling group
    never comes back to within z_A = 1e-10 of x_ref, so p̂ = 1 here too: this checks the
    exact-mode steps and the time accounting, not the splitting."""
    model = ms.SoftmaxChain(6.0, GAMMA)
    fp = ms.first_passage(model, X_REF, HULL, max_steps=10**7, chains=1000, rng=SEED)
    assert not fp.censored.any()
    et = mean_escape_time(model, X_REF, HULL, replicas=50, runs=10, rng=SEED + 4, mode="exact")
    low, high = et.confidence_interval()
    msg = f"splitting {et.mean:.4g} [{low:.4g}, {high:.4g}], direct {fp.times.mean():.4g}"
    assert low <= fp.times.mean() <= high, msg
    assert et.splitting.returns == 0


@pytest.mark.slow
def test_mean_escape_time_interval_coverage():
    """The 95% interval of E[T] (20 runs of 100 replicas, delta method over runs) covers the
    direct mean of 4000 escapes (standard error 1.6%, small beside the interval) in 100
    independent replications at a rate compatible with 95% (binomial p-value > 1e-3; measured:
    93 of 100)."""
    model = ms.SoftmaxChain(BETA, GAMMA)
    fp = ms.first_passage(
        model,
        X_REF,
        HULL,
        max_steps=1e100,
        chains=4000,
        rng=SEED + 9,
        mode="accelerated",
        merge_tol=MERGE,
    )
    truth = fp.times.mean()
    covered = 0
    for rep in range(100):
        et = _merged("triangle", None, 1000 + rep)
        low, high = et.confidence_interval()
        covered += low <= truth <= high
    pv = stats.binomtest(covered, 100, 0.95).pvalue
    assert pv > 1e-3, f"coverage {covered}/100, binomial p = {pv:.2g}"


def test_exact_mode_warns_below_resolution():
    """mode="exact" at β where every cross pick's weight underflows to 0 (β Δ = 1.5 β > 708.7)
    says so (ResolutionWarning)."""
    with pytest.warns(ms.ResolutionWarning):
        with pytest.raises(ValueError, match="sojourns"):
            escape_probability(
                ms.SoftmaxChain(1000.0, GAMMA),
                X_REF,
                HULL,
                replicas=2,
                runs=2,
                rng=1,
                mode="exact",
                max_steps=10,
            )


# ------------------------------------------------------------------ result protocol


def _hand_made_result(runs):
    """A SplittingResult over given per-run p̂_r (3 replicas per run, made-up cycle data)."""
    from metastab.engine.splitting import SplittingResult

    R = runs.size
    return SplittingResult(
        p=float(runs.mean()),
        runs=runs,
        replicas=3,
        reference_level=0.0,
        mode="exact",
        iterations=np.ones(R, np.int64),
        killed=np.ones(R, np.int64),
        sojourns=np.arange(3.0 * R).reshape(R, 3) + 10,
        first_lengths=np.full((R, 3), 4.0),
        first_escaped=np.zeros((R, 3), bool),
        reactive_lengths=np.where(runs > 0, 7.0, np.nan),
    )


def test_results_answer_the_stats_protocol():
    """SplittingResult and EscapeTime: confidence_interval(level, *, method) returns a named
    ConfidenceInterval (tuple-unpacking still works), method is keyword-only and checked, the
    level is checked, and to_frame() gives a table."""
    from metastab.stats import ConfidenceInterval

    res = _hand_made_result(np.array([0.01, 0.02, 0.015, 0.03]))
    et = res.mean_escape_time()
    for obj in (res, et):
        ci = obj.confidence_interval()
        assert isinstance(ci, ConfidenceInterval)
        low, high = ci
        estimate = obj.p if obj is res else obj.mean
        assert 0 < low < estimate < high
        t = obj.confidence_interval(0.95, method="t")
        assert t != ci and t.low < estimate < t.high
        wide = obj.confidence_interval(0.99)
        assert wide.low < low and wide.high > high
        with pytest.raises(TypeError):
            obj.confidence_interval(0.95, "t")
        with pytest.raises(ValueError, match="method must be one of"):
            obj.confidence_interval(method="wald")
        with pytest.raises(ValueError, match="confidence_level must be"):
            obj.confidence_interval(1.5)
    assert res.confidence_interval(method="t") == _p_interval(res.runs, 0.95, "t")
    assert len(res.to_frame()) == 4
    frame = et.to_frame()
    assert frame.loc[0, ["mean", "low", "high"]].tolist() == [et.mean, *et.confidence_interval()]
    with pytest.warns(DiagnosticWarning, match="p̂ = 0"):
        assert tuple(_hand_made_result(np.zeros(4)).confidence_interval())[0] == 0.0
