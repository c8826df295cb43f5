"""The accelerated (event-driven) SA_P chain: exact laws, agreement with direct stepping,
reproducibility, time beyond int64, and the resolution warning of direct stepping.

Every statistical test uses a fixed seed (deterministic), states its tolerance and carries a
negative control that must fail. The p-values measured with the seeds below are quoted.
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np
import pytest
from goodness_of_fit import geometric_p
from numba import njit
from scipy import stats

import metastab as ms
from metastab import engine, theory
from metastab.engine import accelerated as accelerate
from metastab.kernels.cpu import accelerated as _accelerated
from metastab.stats import escape_rate, exponentiality_test

SEED = 20_251_126
ALPHA = 1e-3  # level of every agreement test; each negative control states its own threshold

# ------------------------------------------------------------------ problems

# (1) Duplicated tokens on three points, multiplicities (2, 3, 1), a non-symmetric B: frozen from
# time 0. A cross pick moves a token by >= γ dmin; the ball of radius γ dmin / 2 is left at the
# first cross pick, so T is exactly Geometric(p) with p from theory.frozen_law.
POINTS = np.array([[1.0, 0.0], [-0.5, 0.8], [-0.3, -0.9]])
MULT = np.array([2, 3, 1])
B_NS = np.array([[1.0, 0.4], [-0.3, 0.8]])
X_FROZEN = np.repeat(POINTS, MULT, axis=0)
DMIN = min(np.linalg.norm(a - b) for i, a in enumerate(POINTS) for b in POINTS[i + 1 :])
GAMMA_FROZEN = 0.5
BALL_FROZEN = ms.LeaveBall(0.5 * GAMMA_FROZEN * DMIN)

# (2) The regular triangle, nine tokens: three on the vertices, six spread at distances 0.15 and
# 0.2 (not frozen at time 0: they relax first). One cross pick moves a vertex token by
# γ √3 = 0.52 < ε = 0.6, so leaving the group hulls + B(0, ε) takes more than one rare move
# (the relaxation in between matters).
TRI = ms.regular_polygon(3).vertices
X_TRI = np.vstack([TRI, 0.8 * TRI, TRI + 0.15 * np.array([[0.0, -1.0], [0.8, 0.6], [-0.8, 0.5]])])
HULL_TRI = ms.LeaveHull(np.tile(np.arange(3), 3), 0.6)

# (3) The regular simplex in R^3 with a non-symmetric B, ten tokens: every vertex twice
# (duplicates) and two tokens at 0.9 v_0, 0.9 v_1 (spread).
SIMPLEX = ms.simplex(3).vertices
B_3D = np.eye(3) + 0.3 * np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
X_3D = np.vstack([SIMPLEX, SIMPLEX, 0.9 * SIMPLEX[:2]])
D_3D = min(np.linalg.norm(a - b) for i, a in enumerate(SIMPLEX) for b in SIMPLEX[i + 1 :])
BALL_3D = ms.LeaveBall(0.35 * D_3D)

PROBLEMS = {
    # name: (model at beta, x0, event, chains)
    "frozen-duplicates-nonsymmetric": (
        lambda b: ms.SoftmaxChain(b, GAMMA_FROZEN, B=B_NS),
        5.0,
        X_FROZEN,
        BALL_FROZEN,
        2000,
    ),
    "triangle-spread-hull": (lambda b: ms.SoftmaxChain(b, 0.3), 6.0, X_TRI, HULL_TRI, 600),
    "simplex3d-nonsymmetric": (lambda b: ms.SoftmaxChain(b, 0.25, B=B_3D), 6.0, X_3D, BALL_3D, 800),
}
MAX_STEPS = 10**7  # P(censored) < e^-1000 for all three: no chain is censored


def _passage(name, mode, beta_factor=1.0, seed=SEED):
    make, beta, x0, event, chains = PROBLEMS[name]
    return ms.first_passage(
        make(beta * beta_factor), x0, event, max_steps=MAX_STEPS, chains=chains, rng=seed, mode=mode
    )


@pytest.fixture(scope="module", params=list(PROBLEMS))
def both_modes(request):
    name = request.param
    exact = _passage(name, "exact", seed=SEED)
    fast = _passage(name, "accelerated", seed=SEED + 1)
    wrong = _passage(name, "accelerated", beta_factor=1.1, seed=SEED + 2)
    for fp in (exact, fast, wrong):
        assert not fp.censored.any()
    return name, exact, fast, wrong


def _anderson_p(a, b) -> float:
    """k-sample Anderson–Darling p-value (scipy caps it to [0.001, 0.25] and warns when capped)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "p-value (capped|floored)", UserWarning)
        return float(stats.anderson_ksamp([a, b], variant="midrank").pvalue)


# Measured with the seeds above (exact vs accelerated | exact vs accelerated at 1.1 β; scipy
# caps the Anderson–Darling p-value to [0.001, 0.25]):
#   frozen-duplicates-nonsymmetric  KS p = 0.999, AD p >= 0.25 | KS p = 2e-27, AD p <= 0.001
#   triangle-spread-hull            KS p = 0.77,  AD p >= 0.25 | KS p = 2e-77, AD p <= 0.001
#   simplex3d-nonsymmetric          KS p = 0.79,  AD p >= 0.25 | KS p = 2e-38, AD p <= 0.001
def test_accelerated_agrees_with_exact_in_distribution(both_modes):
    name, exact, fast, wrong = both_modes
    ks = stats.ks_2samp(exact.times, fast.times).pvalue
    ad = _anderson_p(exact.times, fast.times)
    assert ks > ALPHA and ad > ALPHA, (name, ks, ad)
    # negative control: the accelerated chain at 1.1 β is told apart from the exact one
    ks_bad = stats.ks_2samp(exact.times, wrong.times).pvalue
    assert ks_bad < 1e-6, (name, ks_bad)
    assert _anderson_p(exact.times, wrong.times) <= 1e-3


def test_accelerated_and_exact_rates_agree(both_modes):
    """Escape rates (geometric MLE, Clopper–Pearson 99.9% intervals) overlap; at 1.1 β they do
    not (negative control). Measured rates per step, exact | accelerated | accelerated at 1.1 β:
    frozen 0.0565 [0.0525, 0.0606] | 0.0556 [0.0517, 0.0597] | 0.0353 [0.0328, 0.0380];
    triangle 1.59e-3 [1.38, 1.81] | 1.54e-3 [1.34, 1.75] | 6.4e-4 [5.5, 7.2];
    simplex 0.0136 [0.0121, 0.0152] | 0.0139 [0.0123, 0.0155] | 0.0072 [0.0064, 0.0080]."""
    name, exact, fast, wrong = both_modes
    fits = [escape_rate(fp, confidence_level=0.999) for fp in (exact, fast, wrong)]
    (lo_e, hi_e), (lo_a, hi_a), (lo_w, hi_w) = (f.confidence_interval() for f in fits)
    assert lo_e < hi_a and lo_a < hi_e, (name, fits[0].rate, fits[1].rate)
    assert hi_w < lo_e, (name, fits[0].rate, fits[2].rate)


@pytest.mark.slow
def test_accelerated_agrees_with_exact_on_the_theorem_workload():
    """[FW] Thm 5.4 exit T2 from the clustered triangle (vertices + two tokens at 0.8 v_a per
    vertex, γ = 0.1, ε = 2γ d(K), the workload of metastab.bench.escape_bench) at β = 10, where
    E[T2] ≈ 5e4 steps: long frozen stretches and relaxations of ~200 steps between escape
    attempts. Exact stepping takes ~17 s here (2 cores), the accelerated mode ~1 s.

    Measured: KS p = 0.12, AD p = 0.22; rates 1.81e-5 [1.49, 2.18] (exact) and 1.90e-5
    [1.56, 2.28] (accelerated), 99.9% Clopper–Pearson. Negative control at 1.05 β: KS p = 5e-33,
    rate 1.00e-5 [0.82, 1.21], AD p <= 0.001.
    """
    from metastab.setups.initial import shrunk

    K = ms.regular_polygon(3)
    x0 = shrunk(K, 9, 0.8)
    event = ms.LeaveHull(groups=np.tile(np.arange(3), 3), radius=0.2 * K.diameter)
    runs = [
        ms.first_passage(
            ms.SoftmaxChain(beta, 0.1),
            x0,
            event,
            max_steps=10**7,
            chains=300,
            rng=SEED + k,
            mode=mode,
        )
        for k, (beta, mode) in enumerate(
            [(10.0, "exact"), (10.0, "accelerated"), (10.5, "accelerated")]
        )
    ]
    exact, fast, wrong = runs
    assert not any(fp.censored.any() for fp in runs)
    assert stats.ks_2samp(exact.times, fast.times).pvalue > ALPHA
    assert _anderson_p(exact.times, fast.times) > ALPHA
    assert stats.ks_2samp(exact.times, wrong.times).pvalue < 1e-6
    fits = [escape_rate(fp, confidence_level=0.999).confidence_interval() for fp in runs]
    assert fits[0][0] < fits[1][1] and fits[1][0] < fits[0][1]
    assert fits[2][1] < fits[0][0]


# ------------------------------------------------------------------ the frozen law, exactly


def _groups_of(x, B, beta, tol=0.0):
    """The kernel's (κ, label, log q, log c, log(−L)) for one configuration, groups numbered
    as the rows of POINTS where they sit there."""
    x = np.array(x, dtype=float)
    n, d = x.shape
    label, points, mult, count, order, bu, logw, log_q, log_c, ell, _ = _accelerated.jump_work(n, d)
    kappa = _accelerated.merge_groups(x, tol, label, points, mult, count, order)
    _accelerated.group_logs(
        points, mult, kappa, np.array(B, dtype=float), beta, bu, logw, log_q, log_c, ell
    )
    lm = -np.inf
    for i in range(n):
        lm = np.logaddexp(lm, ell[label[i]])
    rows = [np.flatnonzero((POINTS == points[a]).all(axis=1)) for a in range(kappa)]
    if all(r.size == 1 for r in rows):
        where = np.array([r[0] for r in rows])
        order = np.argsort(where)
        return kappa, where[label], log_q[order].copy(), log_c[order].copy(), lm
    return kappa, label.copy(), log_q[:kappa].copy(), log_c[:kappa].copy(), lm


@pytest.mark.parametrize("beta", [0.0, 5.0, 46.0, 200.0, 1e6])
def test_kernel_stay_probability_is_the_frozen_law(beta):
    """P_stay and 1 − P_stay from the kernel's log-space formulas equal theory.frozen_law to 1e-12
    relative, also where 1 − P_stay is 5.5e-40 (β = 46) or underflows (β = 200, 1e6)."""
    kappa, label, log_q, _, lm = _groups_of(X_FROZEN, B_NS, beta)
    law = theory.frozen_law(POINTS, MULT, beta, B_NS)
    assert kappa == 3 and np.array_equal(np.bincount(label), [2, 3, 1])
    np.testing.assert_allclose(log_q, law.log_q, rtol=1e-12, atol=1e-300)
    if beta == 0.0:  # q_a = m_a / n, nothing is rare
        np.testing.assert_allclose(np.exp(log_q), MULT / MULT.sum(), rtol=1e-14)
    log_p = _accelerated.log1mexp_neg(lm)
    assert math.isclose(log_p, law.log_p, rel_tol=1e-12), (log_p, law.log_p)
    assert math.isclose(-math.exp(lm), law.log_stay, rel_tol=1e-12) or law.log_stay == 0.0
    # negative control: a different β gives a different law
    assert not math.isclose(
        log_p, theory.frozen_law(POINTS, MULT, beta * 1.01 + 0.1, B_NS).log_p, rel_tol=1e-6
    )


def test_merge_moves_tokens_by_at_most_tol():
    gen = np.random.default_rng(SEED)
    x = np.repeat(POINTS, [3, 2, 4], axis=0) + gen.uniform(-1, 1, (9, 2)) * 1e-9
    x[0] = POINTS[0]  # one exact duplicate pair: the crowded point founds the group
    x[1] = POINTS[0]
    before = x.copy()
    kappa, label, *_ = _groups_of(x, B_NS, 1.0, tol=2e-9)  # _groups_of works on a copy
    y = x.copy()
    n, d = y.shape
    work = _accelerated.jump_work(n, d)
    assert _accelerated.merge_groups(y, 2e-9, *work[:5]) == 3
    assert np.abs(y - before).max() <= 2e-9
    assert np.array_equal(y[0], POINTS[0]) and np.array_equal(y[2], POINTS[0])
    assert len(np.unique(y, axis=0)) == 3 and kappa == 3
    z = before.copy()  # tol = 0: nothing moves, exact coincidences only
    assert _accelerated.merge_groups(z, 0.0, *work[:5]) == 8
    assert np.array_equal(z, before)


@njit
def _draw(kind, state, out):
    for k in range(out.size):
        if kind == 0:
            out[k] = _accelerated.next_exponential(state)
        else:
            out[k] = _accelerated.next_log_uniform(state)


def _draws(kind, size, seed=SEED):
    state = ms.Seed(seed).streams(1)[0]
    out = np.empty(size)
    _draw(kind, state, out)
    return out


def test_full_precision_variates():
    """next_exponential ~ Exp(1) and next_log_uniform ~ log U(0, 1), including far below 2^-53."""
    E = _draws(0, 200_000)
    # Measured: KS p = 0.077 (Exp(1)); the control Exp(mean 1.01) gives p = 9e-8.
    assert stats.kstest(E, "expon").pvalue > ALPHA
    assert stats.kstest(E, "expon", args=(0, 1.01)).pvalue < 1e-5
    assert E.min() > 0 and E.min() < 1e-4
    L = _draws(1, 200_000)
    assert (L < 0).all()
    assert stats.kstest(np.exp(L), "uniform").pvalue > ALPHA  # measured p = 0.17
    # The binades are drawn exactly: P[log U < −k log 2] = 2^-k (within 5 sd), the mechanism that
    # reaches 2^-1024 (probabilities far below 2^-53 cannot be observed in a test).
    for k in (1, 5, 10, 15):
        hits = int((L < -k * math.log(2)).sum())
        expected = L.size * 2.0**-k
        assert abs(hits - expected) < 5 * math.sqrt(expected) + 1, (k, hits, expected)
    # small exponentials have full relative precision: E < 1e-4 holds with probability ~1e-4
    # (measured: 22 of 200 000)
    assert abs(int((E < 1e-4).sum()) - 20) < 5 * math.sqrt(20)


# ------------------------------------------------------------------ frozen law, end to end


@pytest.fixture(scope="module")
def frozen_fast():
    make, beta, x0, event, _ = PROBLEMS["frozen-duplicates-nonsymmetric"]
    return ms.first_passage(
        make(beta), x0, event, max_steps=10**6, chains=20_000, rng=SEED, mode="accelerated"
    )


def test_frozen_geometric_law(frozen_fast):
    law = theory.frozen_law(POINTS, MULT, 5.0, B_NS)
    T = frozen_fast.times
    assert not frozen_fast.censored.any() and T.min() >= 1 and (T == np.floor(T)).all()
    # Measured: chi-square p = 0.19 (mean 17.776 against 1/p = 17.797); the law at 1.1 β gives
    # p = 0 (underflow).
    assert geometric_p(T, law.p) > ALPHA
    assert geometric_p(T, theory.frozen_law(POINTS, MULT, 5.5, B_NS).p) < 1e-6


def test_frozen_who_moves_and_where(frozen_fast):
    """At the first step with a cross pick, token i (at u_a) is at u_a + γ(u_b − u_a) with
    probability R[a, b] / p (b ≠ a), and stays with probability q_a (1 − Π_{others} q) / p:
    the one-step law conditioned on at least one cross pick (tokens independent)."""
    beta = 5.0
    S = (POINTS @ B_NS.T) @ POINTS.T
    W = MULT[None, :] * np.exp(beta * (S - S.max(axis=1, keepdims=True)))
    R = W / W.sum(axis=1, keepdims=True)
    q = np.diag(R).copy()
    group = np.repeat(np.arange(3), MULT)
    stay_all = float(np.prod(q**MULT))
    p = 1 - stay_all
    law = np.empty((len(group), 3))
    for i, a in enumerate(group):
        law[i] = R[a] / p
        law[i, a] = q[a] * (1 - stay_all / q[a]) / p
    source = X_FROZEN[None] + (frozen_fast.final - X_FROZEN[None]) / GAMMA_FROZEN
    dist = np.linalg.norm(source[:, :, None] - POINTS[None, None], axis=-1)
    pick = dist.argmin(axis=-1)
    assert np.take_along_axis(dist, pick[..., None], -1).max() < 1e-9
    counts = np.stack([np.bincount(pick[:, i], minlength=3) for i in range(len(group))])
    pvals = [stats.chisquare(counts[i], law[i] * counts[i].sum()).pvalue for i in range(6)]
    # Bonferroni over 6 tokens. Measured: p = 0.66, 0.90, 0.41, 0.74, 0.11, 0.48; the
    # unconditioned law R gives p = 0 (underflow) for every token.
    assert min(pvals) > ALPHA / 6, pvals
    bad = [stats.chisquare(counts[i], R[group[i]] * counts[i].sum()).pvalue for i in range(6)]
    assert min(bad) < 1e-6


BETA_HUGE = 200.0


@pytest.fixture(scope="module")
def frozen_huge():
    make, _, x0, event, _ = PROBLEMS["frozen-duplicates-nonsymmetric"]
    return ms.first_passage(
        make(BETA_HUGE), x0, event, max_steps=1e300, chains=3000, rng=SEED, mode="accelerated"
    )


def test_beta_200_escapes_match_theory(frozen_huge):
    """β = 200: E[T] = 1/p ≈ 1.1e78 steps (far beyond int64), exact stepping could never draw a
    cross pick (p ≈ 9e-79 < 2^-53), the accelerated chain escapes with the frozen law: p T is
    Exp(1) up to O(p)."""
    law = theory.frozen_law(POINTS, MULT, BETA_HUGE, B_NS)
    T = frozen_huge.times
    assert law.p < 1e-70 and not frozen_huge.censored.any()
    assert T.dtype == np.float64 and T.min() > 2.0**63
    # Measured: KS p = 0.97; at 1.01 β (p smaller by e^-1.8) p underflows to 0.
    # Rate 8.83e-79, 99.9% interval [8.31e-79, 9.37e-79] (exact and profile), p = 9.01e-79.
    assert stats.kstest(T * law.p, "expon").pvalue > ALPHA
    bad = theory.frozen_law(POINTS, MULT, 1.01 * BETA_HUGE, B_NS)
    assert stats.kstest(T * bad.p, "expon").pvalue < 1e-6
    # the escape-rate statistics take float step counts: the 99.9% interval holds p
    fit = escape_rate(frozen_huge, confidence_level=0.999)
    low, high = fit.confidence_interval()
    assert low < law.p < high and not low < bad.p < high
    lp, hp = fit.confidence_interval(method="profile")
    assert lp < law.p < hp and hp > fit.rate * 1.05
    # memorylessness at rates ~1e-78 (the null is drawn without numpy's int64 ceiling).
    # Measured: p = 0.705 (D = 0.011); the control, T shifted by 1/(2p) (not memoryless from 0),
    # gives D = 0.28 beyond all 199 resamples: p = 1/200.
    test = exponentiality_test(frozen_huge, n_resamples=199, rng=SEED)
    assert test.pvalue > ALPHA and np.isfinite(test.null_distribution).all()
    assert 0 < test.null_distribution.max() < 0.1
    shifted = exponentiality_test(
        T + 0.5 / law.p, np.zeros(T.size, bool), n_resamples=199, rng=SEED
    )
    assert shifted.pvalue <= 0.005


def test_frozen_forever_is_censored_not_looping():
    """One group (all tokens on one point): nothing ever moves, every chain is censored at the
    budget, also a float budget beyond int64 (with a step matrix, which has no absorption test;
    with a scalar step the chains are absorbed at 0)."""
    x0 = np.repeat([[0.3, -0.2]], 4, axis=0)
    scalar = ms.first_passage(
        ms.SoftmaxChain(3.0, 0.5), x0, ms.LeaveBall(0.1), max_steps=1e30, chains=5, rng=1,
        mode="accelerated",
    )  # fmt: skip
    assert scalar.absorbed.all() and (scalar.times == 0).all()
    fp = ms.first_passage(
        ms.SoftmaxChain(3.0, 0.5 * np.eye(2)),
        x0,
        ms.LeaveBall(0.1),
        max_steps=1e30,
        chains=5,
        rng=1,
        mode="accelerated",
    )
    assert fp.censored.all() and (fp.times == 1e30).all() and np.array_equal(fp.final[0], x0)


# ------------------------------------------------------------------ resolution of exact stepping


def test_exact_mode_warns_where_cross_weights_underflow():
    """At β = 1000 every cross pick of X_FROZEN has exponent below −786 · 0.902 < −708.74: its
    weight underflows to 0 and direct stepping can never draw it."""
    model = ms.SoftmaxChain(1000.0, GAMMA_FROZEN, B=B_NS)
    with pytest.warns(ms.ResolutionWarning, match="underflows to 0") as rec:
        fp = ms.first_passage(model, X_FROZEN, BALL_FROZEN, max_steps=2000, chains=4, rng=1)
    assert fp.censored.all()  # the silent failure the warning is about
    text = " ".join(str(w.message) for w in rec)
    assert "beta=1000" in text and "mode='accelerated'" in text and "-902.0" in text
    # negative control: at β = 200 the cross picks (~1e-78, far below 2^-53) have positive
    # weights, which direct stepping draws with their probabilities: no warning (warnings are
    # errors here)
    ms.first_passage(
        ms.SoftmaxChain(BETA_HUGE, GAMMA_FROZEN, B=B_NS),
        X_FROZEN,
        BALL_FROZEN,
        max_steps=20,
        chains=4,
        rng=1,
    )


def test_exact_mode_warns_when_censored_chains_ended_frozen():
    """Tokens start spread (a cross pick of weight 1 exists), relax onto the vertices, where
    every cross pick underflows (exponent −1.5 β = −900): the check on the censored chains' final
    states warns."""
    tri = TRI
    x0 = np.vstack([tri, 0.9 * tri])
    model = ms.SoftmaxChain(600.0, 0.5)
    assert not engine.check_resolution(model, x0[None])
    with pytest.warns(ms.ResolutionWarning, match="censored chains"):
        fp = ms.first_passage(model, x0, ms.LeaveBall(0.5), max_steps=400, chains=3, rng=2)
    assert fp.censored.all()


def test_cross_probabilities():
    lc = engine.cross_probabilities(ms.SoftmaxChain(200.0, 0.5, B=B_NS), X_FROZEN)
    law = theory.frozen_law(POINTS, MULT, 200.0, B_NS)
    expected = np.repeat(np.log(-np.expm1(law.log_q)), MULT)  # c_a = 1 − q_a
    np.testing.assert_allclose(lc, expected, rtol=1e-12)
    assert lc.shape == (6,) and (lc < -100).all()


# ------------------------------------------------------------------ reproducibility

REPRO = (ms.SoftmaxChain(6.0, 0.3), X_TRI, HULL_TRI)


def _fp(chains=8, first_chain=0, rng=5, **kw):
    model, x0, event = REPRO
    return ms.first_passage(
        model,
        x0,
        event,
        max_steps=10**6,
        chains=chains,
        rng=rng,
        first_chain=first_chain,
        mode="accelerated",
        **kw,
    )


def test_accelerated_same_seed_same_bits():
    a, b = _fp(), _fp()
    assert np.array_equal(a.times, b.times) and np.array_equal(a.final, b.final)
    assert len(set(a.times.tolist())) > 1
    assert not np.array_equal(_fp(rng=6).times, a.times)
    assert a.provenance["mode"] == "accelerated" and a.provenance["merge_tol"] == 1e-10


def test_accelerated_thread_count_does_not_matter():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread here")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _fp()
        numba.set_num_threads(2)
        two = _fp()
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one.times, two.times) and np.array_equal(one.final, two.final)


def test_accelerated_prefix_property():
    small, big = _fp(chains=3), _fp(chains=9)
    assert np.array_equal(small.times, big.times[:3])
    assert np.array_equal(small.final, big.final[:3])
    for k in (0, 4, 8):
        assert _fp(chains=1, first_chain=k).times[0] == big.times[k]


def test_accelerated_per_chain_x0():
    """One initial configuration per chain (events compiled per chain): chain k of a run from
    X[first:...] with first_chain=k is chain k of the whole run."""
    gen = np.random.default_rng(SEED)
    X = X_TRI[None] + 0.02 * gen.normal(size=(5,) + X_TRI.shape)
    model, _, event = REPRO
    whole = ms.first_passage(model, X, event, max_steps=10**6, rng=3, mode="accelerated")
    part = ms.first_passage(
        model, X[2:4], event, max_steps=10**6, rng=3, first_chain=2, mode="accelerated"
    )
    assert np.array_equal(part.times, whole.times[2:4])
    assert np.array_equal(part.final, whole.final[2:4])
    assert whole.events == 5 and len(set(whole.times.tolist())) == 5


def test_accelerated_progress_callback():
    seen = []
    fp = _fp(chains=4, progress=lambda done, total, chains_done: seen.append((done, chains_done)))
    assert seen and seen[-1][1] == 4 and fp.events == 4
    assert all(0 <= d <= 10**6 for d, _ in seen)


def test_budget_beyond_int64():
    x0 = np.repeat([[0.3, -0.2]], 2, axis=0)
    fp = ms.first_passage(
        ms.SoftmaxChain(3.0, 0.5 * np.eye(2)),  # a step matrix: censored, never absorbed
        x0,
        ms.LeaveBall(0.1),
        max_steps=10**30,
        chains=2,
        rng=1,
        mode="accelerated",
    )
    assert fp.max_steps == 1e30 and (fp.times == 1e30).all() and fp.censored.all()
    frame = fp.to_frame()
    assert frame["steps"].dtype == np.float64 and frame["max_steps"].iloc[0] == 1e30


def test_accelerated_calls_do_not_matter(monkeypatch):
    default = _fp()
    monkeypatch.setattr(accelerate, "_FIRST_CALL_JUMPS", 1)
    monkeypatch.setattr(accelerate, "_CALL_SECONDS", 0.0)  # one event per call
    calls = []
    orig = _accelerated.advance_accelerated

    def counting(*args, **kwargs):
        calls.append(args[6])
        return orig(*args, **kwargs)

    monkeypatch.setattr(_accelerated, "advance_accelerated", counting)
    many = _fp()
    assert len(calls) > 100 and set(calls) == {1}
    assert np.array_equal(default.times, many.times) and np.array_equal(default.final, many.final)


def test_exact_mode_is_the_default():
    model, x0, event = REPRO
    a = ms.first_passage(model, x0, event, max_steps=300, chains=6, rng=4)
    b = ms.first_passage(model, x0, event, max_steps=300, chains=6, rng=4, mode="exact")
    assert np.array_equal(a.times, b.times) and np.array_equal(a.final, b.final)
    assert a.times.dtype == np.int64 and "mode" not in a.provenance


def test_merge_tol_zero_is_exact_and_agrees():
    """merge_tol = 0 (no approximation at all) and the default give the same law (KS)."""
    a = _fp(chains=300, rng=11)
    b = _fp(chains=300, rng=12, merge_tol=0.0)
    # Measured: KS p = 0.25 (66 757 events with the default, 193 669 with merge_tol = 0).
    assert stats.ks_2samp(a.times, b.times).pvalue > ALPHA
    assert b.provenance["jumps"] > a.provenance["jumps"]  # relaxation runs to the last ulp


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mode="fast"), r"mode must be one of \('exact', 'accelerated'\), got 'fast'"),
        (dict(mode="exact", merge_tol=1e-9), r"merge_tol applies to mode='accelerated' only"),
        (dict(mode="accelerated", merge_tol=-1.0), r"merge_tol must be in \[0, 1\], got -1.0"),
        (dict(mode="accelerated", merge_tol="x"), r"merge_tol must be a real number, got 'x'"),
        (dict(mode="accelerated", max_steps=1.5), r"max_steps must be an integer .* got 1.5"),
        (dict(mode="accelerated", max_steps=0), r"max_steps must be >= 1, got 0"),
        (dict(mode="accelerated", max_steps=math.inf), r"max_steps must be finite, got inf"),
        (dict(mode="exact", max_steps=1e30), r"max_steps must be an integer, got 1e\+30"),
    ],
)
def test_bad_arguments(kwargs, match):
    kw = dict(max_steps=10, chains=2, rng=0) | kwargs
    with pytest.raises(ValueError, match=match):
        ms.first_passage(ms.SoftmaxChain(2.0, 0.5), X_FROZEN, BALL_FROZEN, **kw)


@pytest.mark.parametrize(
    "model, match",
    [
        (ms.Hardmax(gamma=0.5), "needs a SoftmaxChain"),
        (ms.SoftmaxFlow(2.0, 0.5), "needs a SoftmaxChain"),
        (ms.SoftmaxChain(2.0, gamma=np.full(10, 0.5)), "needs a constant step"),
        (ms.SoftmaxChain(2.0, gamma=lambda t: 0.5), "needs a constant step"),
    ],
)
def test_accelerated_needs_a_homogeneous_chain(model, match):
    with pytest.raises(ValueError, match=match):
        ms.first_passage(
            model, X_FROZEN, BALL_FROZEN, max_steps=10, chains=2, rng=0, mode="accelerated"
        )


def test_step_matrix_is_supported():
    """A constant step matrix P is time-homogeneous: accepted, and on the frozen problem the exit
    law is still geometric with the frozen p (moves are by P (u_b − u_a), all > the ball)."""
    P = ms.step_matrix(np.diag([1.0, 1.5]))
    fp = ms.first_passage(
        ms.SoftmaxChain(5.0, P, B=B_NS),
        X_FROZEN,
        ms.LeaveBall(0.2 * DMIN),
        max_steps=10**6,
        chains=3000,
        rng=SEED,
        mode="accelerated",
    )
    law = theory.frozen_law(POINTS, MULT, 5.0, B_NS)
    assert geometric_p(fp.times, law.p) > ALPHA  # measured p = 0.06
