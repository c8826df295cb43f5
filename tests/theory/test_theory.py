"""Tests for metastab.theory: hand-computed values and exact arithmetic
(docs: models#statements-fw)."""

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from metastab.setups.polytopes import regular_polygon, simplex
from metastab.theory import (
    clustering_phase,
    collapse_rate,
    exit_time_bound,
    frozen_law,
    metastability_bound,
    metastability_exponent,
)

TRIANGLE = regular_polygon(3).vertices  # c0 = 3/2, all |v_a − v_b| = √3


# --------------------------------------------------------------------------- Thm 5.2


def test_clustering_phase_hand_values_tau_from_m():
    x0 = np.vstack([TRIANGLE, [[0.8, 0.0], [-0.5 * 0.7, 0.7 * math.sqrt(3) / 2]]])
    ph = clustering_phase(TRIANGLE, x0, 0.25)
    assert ph.c0 == pytest.approx(1.5)
    assert ph.m == pytest.approx(0.2)  # token 3 is 0.2 from v_0, token 4 is 0.3 from v_1
    assert ph.tau == pytest.approx(0.75 * 0.2)  # (1 − γ) m beats c0/(2√3) = 0.433 and √3/2
    assert ph.T1 == 1  # ⌊log(1 − γ)/log(1 − γ)⌋, despite roundoff
    assert ph.hypotheses == {
        "equinorm": True,
        "acute_cones": True,
        "separated": True,
        "vertex_tokens": True,
    }


def test_clustering_phase_hand_values_tau_from_separation():
    x0 = np.vstack([TRIANGLE, [[0.1, 0.0]]])  # m = 0.9, (1 − γ) m = 0.81
    ph = clustering_phase(TRIANGLE, x0, 0.1)
    tau = 1.5 / (2 * math.sqrt(3))  # min_{a≠b} c0 / (2|v_a − v_b|) = 0.4330
    assert ph.m == pytest.approx(0.9) and ph.tau == pytest.approx(tau)
    assert ph.T1 == math.floor(math.log(tau / 0.9) / math.log(0.9)) == 6  # 6.94


def test_clustering_phase_square_sqrt_term_and_hypotheses():
    # square of radius 1/4: c0 = 1/16, |v_a − v_b| >= √2/4, so c0/(2|v_a−v_b|) <= 0.0884 and
    # √(2c0)/2 = 0.1768; with m large the c0 term wins, and the square is not acute
    V = regular_polygon(4, radius=0.25).vertices
    x0 = np.vstack([V, [[0.05, 0.0]]])
    ph = clustering_phase(V, x0, 0.5)
    assert ph.tau == pytest.approx((1 / 16) / (2 * 0.5))  # the diagonal |v_0 − v_2| = 1/2
    assert not ph.hypotheses["acute_cones"]
    P = simplex(2)
    x1 = np.vstack(
        [P.vertices, P.vertices[:1] * 0.9 + P.vertices[1:2] * 0.05 + P.vertices[2:3] * 0.05]
    )
    assert clustering_phase(P, x1, 0.5, beta=1e8).hypotheses["eroded_cones"]
    assert not clustering_phase(P, x1, 0.5, beta=1.5).hypotheses["eroded_cones"]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((TRIANGLE, TRIANGLE, 0.5), "n > κ"),
        ((TRIANGLE, np.vstack([TRIANGLE, TRIANGLE[:1]]), 0.5), "m = 0"),
        ((TRIANGLE, np.vstack([TRIANGLE, [[0.5, 0.0]]]), 1.0), "gamma"),
        ((TRIANGLE, np.vstack([TRIANGLE, [[0.5, 0.0]]]), 0.0), "gamma"),
    ],
)
def test_clustering_phase_validation(args, match):
    with pytest.raises(ValueError, match=match):
        clustering_phase(*args)


# --------------------------------------------------------------------------- Thm 5.4


def test_metastability_bound_hand_value():
    # k = 1 + ε/γ = 3; X = 3 log(γ t/ε) + 3 log n − β c0 ε/(2γ) = 3 log 5 + 3 log 4 − 15
    got = metastability_bound(10.0, 15.0, c0=1.0, eps=0.2, gamma=0.1, n=4)
    assert got == pytest.approx(1 - 20.0**3 * math.exp(-15), rel=1e-14)
    # vacuous (negative) values are returned as computed, not clipped
    assert metastability_bound(10.0, 1.0, c0=1.0, eps=0.2, gamma=0.1, n=4) < 0
    # the bound tends to 1 with β (a probability bound, never above 1)
    assert metastability_bound(10.0, 1e4, c0=1.0, eps=0.2, gamma=0.1, n=4) == 1.0


def test_metastability_exponent_and_mean_bound():
    A = metastability_exponent(0.5, 0.3, 0.1)
    assert A == pytest.approx(0.5 * 0.3 / (2 * 0.1 * 4))
    kw = dict(c0=0.5, eps=0.3, gamma=0.1, n=7)
    beta = np.array([100.0, 150.0])
    lo = exit_time_bound(beta, **kw)
    assert (lo[1] - lo[0]) / 50 == pytest.approx(A, rel=1e-12)
    # the mean bound is max_t t · P-bound(t): check against a brute-force maximum over t
    t = np.geomspace(1.0001, 1e30, 400001)
    brute = np.max(np.log(t) + np.log(np.maximum(metastability_bound(t, 100.0, **kw), 1e-300)))
    assert lo[0] == pytest.approx(brute, abs=1e-6)
    # and the time with guaranteed survival probability 1/2 solves bound(t) = 1/2
    t_half = math.exp(exit_time_bound(100.0, prob=0.5, **kw))
    assert metastability_bound(t_half, 100.0, **kw) == pytest.approx(0.5, rel=1e-12)


def test_bound_checks_its_hypothesis_and_arguments():
    with pytest.raises(ValueError, match="eps/gamma >= 2 d"):
        metastability_bound(10.0, 5.0, c0=1.0, eps=0.1, gamma=0.1, n=3, diameter=1.0)
    assert metastability_bound(10.0, 5.0, c0=1.0, eps=0.3, gamma=0.1, n=3, diameter=1.0) < 1
    with pytest.raises(ValueError, match="t must be > 1"):
        metastability_bound(1.0, 5.0, c0=1.0, eps=0.2, gamma=0.1, n=3)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        exit_time_bound(5.0, c0=1.0, eps=0.2, gamma=0.1, n=0)
    with pytest.raises(ValueError, match="c0 must be > 0, got -1.0"):
        metastability_exponent(-1.0, 0.2, 0.1)


# --------------------------------------------------------------------------- frozen law


def exact_p(points, mult, beta, B=None, digits=400):
    """p = 1 − Π q_a^{m_a} in Decimal arithmetic with ``digits`` significant digits.

    The float inputs are converted exactly; only exp, the divisions and the final 1 − Π round,
    at ``digits`` digits: 400 digits resolve p down to 1e-390.
    """
    getcontext().prec = digits
    U = np.asarray(points, float)
    B = np.eye(U.shape[1]) if B is None else np.asarray(B, float)
    S = (U @ B.T) @ U.T
    stay = Decimal(1)
    for a in range(len(mult)):
        w = [
            Decimal(int(m)) * (Decimal(float(beta)) * Decimal(float(S[a, b]))).exp()
            for b, m in enumerate(mult)
        ]
        stay *= (w[a] / sum(w)) ** int(mult[a])
    return Decimal(1) - stay, stay


def test_frozen_law_hand_value():
    # two points ±e1, one token each, β = 1: q = e/(e + e^{-1}), p = 1 − q²
    law = frozen_law([[1.0, 0.0], [-1.0, 0.0]], [1, 1], 1.0)
    q = math.e / (math.e + 1 / math.e)
    assert law.p == pytest.approx(1 - q * q, rel=1e-14)
    assert law.log_p == pytest.approx(math.log(1 - q * q), rel=1e-14)
    np.testing.assert_allclose(law.log_q, math.log(q), rtol=1e-14)
    assert law.survival(3) == pytest.approx(q**6, rel=1e-14)
    # β = 0: q_a = m_a / n
    flat = frozen_law(TRIANGLE, [1, 2, 3], 0.0)
    np.testing.assert_allclose(np.exp(flat.log_q), [1 / 6, 2 / 6, 3 / 6], rtol=1e-14)
    assert flat.p == pytest.approx(1 - Fraction(1, 6) * Fraction(2, 6) ** 2 * Fraction(1, 2) ** 3)


@pytest.mark.parametrize("beta", [46.0, 230.0])
def test_frozen_law_in_log_space_matches_exact_decimal(beta):
    # p ≈ 5.5e-40 at β = 46 and ≈ 1e-199 at β = 230: 1 − Π q in float64 would give 0
    pts, mult = [[1.0, 0.0], [-1.0, 0.0]], [2, 3]
    law = frozen_law(pts, mult, beta)
    ref, _ = exact_p(pts, mult, beta)
    assert float(ref) < 1e-39
    assert law.p == pytest.approx(float(ref), rel=1e-12)
    assert law.log_p == pytest.approx(float(ref.ln()), rel=1e-14)
    assert law.mean == pytest.approx(float(1 / ref), rel=1e-12)


def test_frozen_law_nonsymmetric_B_and_many_points():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(4, 3))
    B = rng.normal(size=(3, 3))
    mult = [1, 3, 2, 5]
    for beta in (0.01, 0.3, 2.0, 25.0):  # p from ~1 down to tiny
        law = frozen_law(pts, mult, beta, B)
        ref, stay = exact_p(pts, mult, beta, B)
        assert law.log_p == pytest.approx(float(ref.ln()), rel=1e-12, abs=1e-15)
        assert law.log_stay == pytest.approx(float(stay.ln()), rel=1e-12)
    # B matters when not symmetric: the transpose gives another law
    assert frozen_law(pts, mult, 0.3, B).log_stay != pytest.approx(
        frozen_law(pts, mult, 0.3, B.T).log_stay
    )


@pytest.mark.parametrize("beta", [1e3, 1e6])
def test_frozen_law_log_p_survives_underflow(beta):
    # p = 1 − (1 + e^{−2β})^{−2}: log p = log 2 − 2β + O(e^{−2β}), far below the float range
    law = frozen_law([[1.0, 0.0], [-1.0, 0.0]], [1, 1], beta)
    assert law.p == 0.0 and law.log_p == pytest.approx(math.log(2) - 2 * beta, rel=1e-15)


def test_frozen_law_edge_cases_and_validation():
    single = frozen_law([[1.0, 2.0]], [5], 3.0)
    assert single.p == 0.0 and single.log_p == -math.inf
    assert np.isfinite(frozen_law(TRIANGLE, [1, 1, 1], 1e6).log_p)  # β = 1e6: no overflow
    with pytest.raises(ValueError, match="multiplicities"):
        frozen_law(TRIANGLE, [1, 0, 1], 1.0)
    with pytest.raises(ValueError, match="beta"):
        frozen_law(TRIANGLE, [1, 1, 1], -1.0)
    with pytest.raises(ValueError, match="B must be"):
        frozen_law(TRIANGLE, [1, 1, 1], 1.0, np.eye(3))


# --------------------------------------------------------------------------- collapse


def test_collapse_rate_hand_values_and_log_space():
    r = collapse_rate(-1.5, radius=2.0, n=5, gamma=0.2)  # |β| R² = 6
    c = math.exp(-6) / (5 * math.exp(6))
    assert r.c == pytest.approx(c, rel=1e-14) and r.factor == pytest.approx(1 - 0.2 * c)
    assert r.steps(0.5) == pytest.approx(math.log(2) / -math.log1p(-0.2 * c), rel=1e-12)
    huge = collapse_rate(1e6, radius=1.0, n=10, gamma=0.5)
    assert huge.c == 0.0 and huge.log_c == pytest.approx(-2e6 - math.log(10))
    assert huge.factor == 1.0 and huge.steps(0.5) == math.inf
    mid = collapse_rate(400.0, radius=1.0, n=10, gamma=0.5)  # c ≈ 1e-349 underflows too
    assert mid.c == 0.0 and mid.steps(0.5) == math.inf
    assert mid.log_steps(0.5) == pytest.approx(
        math.log(math.log(2)) - math.log(0.5) + 800 + math.log(10), rel=1e-14
    )
    assert r.log_steps(0.5) == pytest.approx(math.log(r.steps(0.5)), rel=1e-14)
    with pytest.raises(ValueError, match="gamma"):
        collapse_rate(1.0, radius=1.0, n=2, gamma=1.5)
