"""The frozen law of the chain on the sphere (metastab.theory): hand values, the antipodal no-op
picks, the large-β asymptote against the exact law, and bad input."""

import math

import numpy as np
import pytest
from goodness_of_fit import geometric_p
from scipy import stats

import metastab as ms
from metastab.setups.polytopes import cross_polytope, simplex
from metastab.theory import frozen_asymptote, frozen_law, sphere_frozen_law, sphere_jumps

TRIANGLE = simplex(2).vertices  # 1 − cos 120° = 3/2


def test_jumps_hand_values():
    g = 0.1
    J = sphere_jumps(TRIANGLE, g)
    # N(0.9 u_a + 0.1 u_b): tan φ = γ sin θ / (1 − γ + γ cos θ), θ = 120°
    phi = math.atan2(g * math.sin(2 * math.pi / 3), 1 - g + g * math.cos(2 * math.pi / 3))
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(J[off], 2 * math.sin(phi / 2), rtol=1e-14)
    assert (np.diag(J) == 0).all()
    # the move itself, computed by normalising
    y = (1 - g) * TRIANGLE[0] + g * TRIANGLE[1]
    assert J[0, 1] == pytest.approx(np.linalg.norm(y / np.linalg.norm(y) - TRIANGLE[0]), rel=1e-14)


def test_antipodal_pick_is_a_no_op_below_half_and_a_flip_above():
    P = cross_polytope(3).vertices  # e_i and −e_i
    J = sphere_jumps(P, 0.3)
    anti = np.abs(P @ P.T + 1) < 1e-12
    assert (J[anti] == 0).all() and (J[~anti & ~np.eye(6, dtype=bool)] > 0.3).all()
    assert sphere_jumps(P, 0.7)[anti] == pytest.approx(2.0)  # N((1 − 2γ) u) = −u
    with pytest.raises(ValueError, match="gamma=0.5 with antipodal"):
        sphere_jumps(P, 0.5)
    sphere_jumps(TRIANGLE, 0.5)  # no antipodes: γ = 1/2 is fine


def test_sphere_law_equals_the_plain_law_without_antipodes():
    m = [3, 1, 2]
    for beta in (0.0, 2.0, 40.0, 1e6):
        a = sphere_frozen_law(TRIANGLE, m, beta, 0.1)
        b = frozen_law(TRIANGLE, m, beta)
        assert a.log_p == pytest.approx(b.log_p, rel=1e-12)
        assert a.log_stay == pytest.approx(b.log_stay, rel=1e-12)


def test_sphere_law_counts_antipodal_picks_as_stays():
    # two tokens at e1, one at −e1, one at e2; β = 1, γ = 0.2
    U = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    m = np.array([2, 1, 1])
    beta = 1.0
    e = math.e
    # token at e1: stays on e1 (2e) or −e1 (e^{-1}), moves to e2 (1)
    q0 = (2 * e + 1 / e) / (2 * e + 1 / e + 1)
    q1 = (e + 2 / e) / (e + 2 / e + 1)  # at −e1: itself and the two at e1 (antipodes)
    q2 = e / (e + 3)  # at e2: only itself
    p = 1 - q0**2 * q1 * q2
    law = sphere_frozen_law(U, m, beta, 0.2)
    assert law.p == pytest.approx(p, rel=1e-13)
    assert frozen_law(U, m, beta).p > p  # the plain law counts the antipodal picks as moves
    # only antipodes: frozen for ever when γ < 1/2, not when γ > 1/2
    assert sphere_frozen_law(U[:2], [3, 2], 5.0, 0.2).p == 0.0
    assert sphere_frozen_law(U[:2], [3, 2], 5.0, 0.8).p > 0.0


@pytest.mark.parametrize(
    ("points", "m", "gamma", "delta", "N"),
    [
        (TRIANGLE, [3, 3, 3], 0.1, 1.5, 18.0),  # 6 ordered pairs × 3 tokens
        (TRIANGLE, [1, 2, 4], 0.1, 1.5, 2 * (1 + 2 + 4)),  # Σ_a Σ_{b≠a} m_b
        (cross_polytope(3).vertices, [2] * 6, 0.1, 1.0, 48.0),  # 6 points × 4 neighbours × 2
    ],
)
def test_asymptote_hand_values_and_exact_law_at_large_beta(points, m, gamma, delta, N):
    a = frozen_asymptote(points, m, gamma=gamma)
    assert a.exponent == pytest.approx(delta, rel=1e-12)
    assert math.exp(a.log_prefactor) == pytest.approx(N, rel=1e-12)
    # the exact log E[T] = −log p approaches the line: error O(e^{−βΔ}) (and O(e^{−β}) from
    # the antipodes' e^{−2β} in the cross-polytope's denominators)
    for beta, tol in ((20.0, 1e-6), (60.0, 1e-12)):
        law = sphere_frozen_law(points, m, beta, gamma)
        assert -law.log_p == pytest.approx(float(a.log_mean(beta)), abs=tol)
    # negative control: ignoring the prefactor misses by log N
    law = sphere_frozen_law(points, m, 60.0, gamma)
    assert abs(-law.log_p - 60.0 * delta) > 0.5 * math.log(N)


def test_asymptote_of_the_plain_law_with_key_query_matrix():
    # R^d with B: gaps S_aa − S_ab need not be equal; the smallest wins
    U = np.array([[1.0, 0.0], [0.0, 1.0]])
    B = np.array([[2.0, 0.5], [0.0, 1.0]])
    a = frozen_asymptote(U, [1, 1], B)
    # S[a, b] = <B u_a, u_b>: row 0 (2, 0), gap 2; row 1 (0.5, 1), gap 1/2
    assert a.exponent == pytest.approx(0.5) and a.log_prefactor == pytest.approx(0.0)
    assert -frozen_law(U, [1, 1], 80.0, B).log_p == pytest.approx(40.0, abs=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sphere_jumps([[1.0, 0.0], [0.0, 1.1]], 0.1), "unit sphere"),
        (lambda: sphere_jumps(TRIANGLE, 0.0), "gamma"),
        (lambda: sphere_frozen_law(TRIANGLE, [1, 1], 1.0, 0.1), "multiplicities"),
        (lambda: sphere_frozen_law(TRIANGLE, [1, 1, 1], -1.0, 0.1), "beta"),
        (lambda: frozen_asymptote([[1.0, 0.0], [-1.0, 0.0]], [1, 1], gamma=0.1), "no pick moves"),
        (lambda: frozen_asymptote([[1.0, 0.0], [2.0, 0.0]], [1, 1]), "not metastable"),
    ],
)
def test_bad_input_is_refused_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ the law on SphereChain


def test_sphere_chain_first_moving_pick_follows_the_sphere_law():
    """Direct stepping of SphereChain from clusters at e1 (2 tokens), −e1 (2) and e2 (1): the
    first step that moves a token is geometric with the sphere law, where picks of the antipode
    are no-ops (γ < 1/2); the plain law, which counts them as moves, is rejected (negative
    control). Measured with seed 5: chi-square p = 0.55 (sphere law), 6e-46 (plain law)."""
    U = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    m, beta, gamma = [2, 2, 1], 2.0, 0.2
    x0 = np.repeat(U, m, axis=0)
    eps = 0.5 * sphere_jumps(U, gamma)[sphere_jumps(U, gamma) > 0].min()
    fp = ms.first_passage(
        ms.SphereChain(beta, gamma),
        x0,
        ms.LeaveBall(eps, centers=x0),
        max_steps=10**4,
        chains=20_000,
        rng=5,
    )
    assert not fp.censored.any()
    law, plain = sphere_frozen_law(U, m, beta, gamma), frozen_law(U, m, beta)
    assert law.mean == pytest.approx(2.0063, abs=1e-4) and plain.mean < 0.95 * law.mean
    assert geometric_p(fp.times, law.p) > 1e-3
    assert geometric_p(fp.times, plain.p) < 1e-6


def test_randomised_pit_of_the_study_is_uniform_for_the_geometric_law():
    """The KS test of the sphere-metastability study: U = F(T − 1) + V (F(T) − F(T − 1)) is
    uniform for T ~ Geometric(p) even where p is large (T = 1 in most draws) and where it is tiny;
    the same samples against p × 1.5 are rejected. Measured with seed 3: KS p = 0.43 and 0.48,
    control 5e-165 and 1e-40."""
    from metastab.studies.measurement import pit

    gen = np.random.default_rng(3)
    for p in (0.6, 1e-30):
        # Geometric(p) = ⌈Exp(1) / −log(1 − p)⌉, exact also where p is below NumPy's sampler's
        T = np.ceil(gen.exponential(1.0, 2000) / -math.log1p(-p))
        v = gen.random(T.size)
        good = stats.kstest(pit(T, math.log1p(-p), v), "uniform").pvalue
        bad = stats.kstest(pit(T, math.log1p(-1.5 * p), v), "uniform").pvalue
        assert good > 1e-3 and bad < 1e-6, (p, good, bad)
