"""Deterministic layer: SA_∞ (hardmax / Frank-Wolfe) reproduces the closed forms of
docs: models#statements-fw.

Hardmax has no randomness, so these are exact checks with stated floating-point tolerances;
each law is paired with a case where it must NOT hold (the caveats in docs: models#errata), so that
the checks can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull

import metastab as ms

SEED = 20_250_813

# --------------------------------------------------------------------- helpers


def polygon_with_cell_tokens(k: int, m: int, seed: int, B=None, margin: float = 0.05):
    """A random generic polygon (every point a vertex that owns its cell, for B) and a
    configuration: tokens 0..k−1 at the vertices, m tokens strictly inside single cells.

    The inner tokens are convex combinations of the vertices (strictly inside K) whose best cell
    score beats the second best by ``margin`` (so they lie in exactly one cell, robustly).
    Returns (polytope, x0, sigma) with sigma[i] = σ(x_i^0).
    """
    P = ms.random_polygon(k, all_vertices=True, own_cells=True, B=B, rng=seed)
    gen = np.random.default_rng(seed)
    V = P.vertices
    Bm = np.eye(2) if B is None else np.asarray(B, dtype=float)
    inner = []
    while len(inner) < m:
        lam = gen.dirichlet(np.full(k, 0.3))
        x = lam @ V
        sc = np.sort(V @ (Bm @ x))
        if sc[-1] - sc[-2] > margin and lam.max() < 0.999:
            inner.append(x)
    x0 = np.vstack([V, np.array(inner)])
    sigma = P.assign(x0, B)
    assert np.array_equal(sigma[:k], np.arange(k))  # each vertex token is in its own cell
    assert P.all_own_cells(B)
    return P, x0, sigma


def run_states(model, x0, steps: int) -> np.ndarray:
    """(steps + 1, n, d) states of one chain, X^0 .. X^steps."""
    run = ms.simulate(model, x0, steps=steps, record_every=1, rng=0)
    np.testing.assert_array_equal(run.times, np.arange(steps + 1))
    return run.trajectory[0]


def check_straight_lines(traj, x0, V, sigma, k, factors, atol=1e-12):
    """Vertex tokens never move; x_i^t − v_σ(i) = factors[t] (x_i^0 − v_σ(i)) for the others,
    to ``atol`` absolute (coordinates are O(1): ~1e-12 relative)."""
    np.testing.assert_array_equal(traj[:, :k], np.broadcast_to(V, traj[:, :k].shape))
    v = V[sigma]
    expected = v[None] + factors[:, None, None] * (x0 - v)[None]
    np.testing.assert_allclose(traj, expected, rtol=0, atol=atol)


# --------------------------------------------------------------------- [FW] thm. exp.fast.polytope

B_NONSYM = np.array([[1.0, 0.3], [-0.2, 0.9]])  # non-symmetric, positive definite symmetric part
# (k, m, seed, B): k vertices, m inner tokens. (random_polygon's rejection of non-owning draws
# gets slow for k >= 7 with B_NONSYM, so the large polygons use B = I.)
POLYGONS = [
    (4, 6, 1, None),
    (5, 8, 2, None),
    (6, 10, 3, None),
    (7, 7, 4, None),
    (8, 12, 5, None),
    (4, 6, 1, B_NONSYM),
    (5, 8, 2, B_NONSYM),
    (6, 10, 3, B_NONSYM),
    (6, 9, 6, B_NONSYM),
]


@pytest.mark.parametrize(
    "k,m,seed,B",
    POLYGONS,
    ids=[f"k{k}-{'I' if B is None else 'nonsym'}-{s}" for k, _, s, B in POLYGONS],
)
def test_constant_step_straight_lines(k, m, seed, B):
    """Constant γ: x_i^t − v_σ(i) = (1 − γ)^t (x_i^0 − v_σ(i)); vertices stay put."""
    P, x0, sigma = polygon_with_cell_tokens(k, m, SEED + seed, B=B)
    gamma, steps = 0.3, 60
    traj = run_states(ms.Hardmax(gamma=gamma, B=B), x0, steps)
    check_straight_lines(traj, x0, P.vertices, sigma, k, (1 - gamma) ** np.arange(steps + 1))
    # The token never changes cell (it moves on the segment into its own vertex).
    assert np.array_equal(P.assign(traj, B), np.broadcast_to(sigma, traj.shape[:2]))


@pytest.mark.parametrize("as_callable", [False, True], ids=["array", "callable"])
def test_super_exponential_schedule_product_formula(as_callable):
    """γ^τ = 1 − e^{−a(τ+1)}: x_i^t − v = Π_{τ<t} (1 − γ^τ) (x_i^0 − v)
    = e^{−a t(t+1)/2} (x_i^0 − v)."""
    k, m, seed = 6, 10, 3
    P, x0, sigma = polygon_with_cell_tokens(k, m, SEED + seed)
    a, steps = 0.3, 12
    gammas = 1 - np.exp(-a * (np.arange(steps) + 1))
    gamma = (lambda t: 1 - math.exp(-a * (t + 1))) if as_callable else gammas
    traj = run_states(ms.Hardmax(gamma=gamma), x0, steps)
    prod = np.r_[1.0, np.cumprod(1 - gammas)]
    t = np.arange(steps + 1)
    np.testing.assert_allclose(prod, np.exp(-a * t * (t + 1) / 2), rtol=1e-12)
    check_straight_lines(traj, x0, P.vertices, sigma, k, prod)
    # Faster than any exponential: the per-step factor e^{−a(t+1)} tends to 0.
    d = np.linalg.norm(traj[:, k:] - P.vertices[sigma[k:]], axis=-1).max(axis=1)
    assert d[-1] < 1e-9 * d[0]


def test_summable_schedule_stops_short():
    """The caveat: γ^τ = 2^{−τ−1} has inf γ^τ = 0 and Π (1 − γ^τ) → (1/2; 1/2)_∞ ≈ 0.2888 > 0:
    tokens move on straight lines but do NOT converge to their vertices."""
    k, m, seed = 5, 8, 2
    P, x0, sigma = polygon_with_cell_tokens(k, m, SEED + seed)
    steps = 80
    gammas = 2.0 ** -(np.arange(steps) + 1.0)
    traj = run_states(ms.Hardmax(gamma=gammas), x0, steps)
    prod = np.r_[1.0, np.cumprod(1 - gammas)]
    check_straight_lines(traj, x0, P.vertices, sigma, k, prod)
    limit = 0.28878809508660242  # Euler's function φ(1/2) = Π_{j>=1} (1 − 2^{−j})
    assert abs(prod[-1] - limit) < 1e-15
    dist0 = np.linalg.norm(x0[k:] - P.vertices[sigma[k:]], axis=-1)
    dist = np.linalg.norm(traj[-1, k:] - P.vertices[sigma[k:]], axis=-1)
    np.testing.assert_allclose(dist / dist0, limit, rtol=1e-10)
    assert (dist > 0.288 * dist0).all()
    # Contrast (negative control of "converges"): the constant step with the same first step
    # γ = 1/2 takes every token to its vertex, down to the tie-tolerance floor: once
    # |x_i − v| ≲ tol |v| (tol = 1e-12) the token ties with its vertex as a leader and the index
    # mean includes itself, so the distance stalls at ≈ 4e-13 here instead of 2^{−80}.
    traj_c = run_states(ms.Hardmax(gamma=0.5), x0, steps)
    assert (np.linalg.norm(traj_c[-1, k:] - P.vertices[sigma[k:]], axis=-1) < 1e-11).all()


# --------------------------------------------------------------------- hardmax ODE ([FW] thm. ode)


def test_euler_approaches_the_hardmax_ode_at_first_order():
    """Explicit Euler with γ = Δt (SA_∞) vs x_i(t) = e^{−t} x_i^0 + (1 − e^{−t}) v_σ(i): the error
    at T = 1 is O(Δt); observed order within [0.95, 1.05] as Δt halves, and error <= Δt."""
    k, m, seed = 5, 8, 2
    P, x0, sigma = polygon_with_cell_tokens(k, m, SEED + seed)
    v = P.vertices[sigma]
    T = 1.0
    exact = math.exp(-T) * x0 + (1 - math.exp(-T)) * v
    errors = []
    dts = [0.1, 0.05, 0.025, 0.0125, 0.00625]
    for dt in dts:
        steps = round(T / dt)
        final = ms.simulate(ms.Hardmax(gamma=dt), x0, steps=steps, rng=0).final[0]
        errors.append(np.abs(final - exact).max())
    errors = np.array(errors)
    scale = np.abs(x0 - v).max()
    assert (errors <= np.array(dts) * scale).all(), errors
    orders = np.log2(errors[:-1] / errors[1:])
    assert ((0.95 < orders) & (orders < 1.05)).all(), orders


# --------------------------------------------------------------------- tie modes

# Token 0 at (0.2, 0.2) scores the three leaders (1, 0), (1, 0), (0, 1) equally (0.2 each):
# the index mean is (2/3, 1/3), the point mean (1/2, 1/2).
X_TIE = np.array([[0.2, 0.2], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("ties,target", [("index", (2 / 3, 1 / 3)), ("point", (0.5, 0.5))])
def test_tie_modes_hand_computed(ties, target):
    gamma = 0.5
    y = ms.simulate(ms.Hardmax(gamma=gamma, ties=ties), X_TIE, steps=1).final[0]
    expected = X_TIE.copy()
    # index: (0.4333, 0.2667), point: (0.35, 0.35)
    expected[0] = X_TIE[0] + gamma * (np.array(target) - X_TIE[0])
    # Tokens 1, 2 lead themselves (score 1 vs 0.2, 0): both modes keep them; so does token 3.
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-15)


def test_tie_modes_differ():
    y = [
        ms.simulate(ms.Hardmax(gamma=0.5, ties=t), X_TIE, steps=1).final[0]
        for t in ("index", "point")
    ]
    assert np.abs(y[0][0] - y[1][0]).max() > 0.05


@pytest.mark.parametrize("tol", [1e-12, 1e-6])
@pytest.mark.parametrize("ties", ["index", "point"])
def test_tie_tolerance(tol, ties):
    """Score gaps within tol (relative to max|s_ij|) are ties, gaps beyond tol are not."""
    gamma = 0.5

    def step(x):
        return ms.simulate(ms.Hardmax(gamma=gamma, ties=ties, tol=tol), x, steps=1).final[0]

    # Move token 3 to (0, 1 + δ): token 0's scores are 0.2, 0.2, 0.2 (1 + δ).
    inside = X_TIE.copy()
    inside[3, 1] += 0.01 * tol  # relative gap δ/(1 + δ) ≈ 0.01 tol: still a tie
    beyond = X_TIE.copy()
    beyond[3, 1] += 100 * tol  # relative gap ≈ 100 tol: token 3 is the only leader
    tied = {"index": (X_TIE[1] + X_TIE[2] + inside[3]) / 3, "point": (X_TIE[1] + inside[3]) / 2}
    np.testing.assert_allclose(
        step(inside)[0], X_TIE[0] + gamma * (tied[ties] - X_TIE[0]), rtol=0, atol=1e-14
    )
    np.testing.assert_allclose(
        step(beyond)[0], X_TIE[0] + gamma * (beyond[3] - X_TIE[0]), rtol=0, atol=1e-14
    )


@pytest.mark.parametrize("tol", [1e-12, 1e-6])
def test_point_mode_merges_points_within_tol(tol):
    """ties="point": two leaders within tol (max-norm, relative) are one point; beyond tol, two.

    Token 2 moves to (1 + s, −s): its score for token 0 stays 0.2 (a tie with tokens 1, 3), and
    its max-norm distance to token 1 is s.
    """
    gamma = 0.5
    for s, merged in [(0.01 * tol, True), (100 * tol, False)]:
        x = X_TIE.copy()
        x[2] = (1 + s, -s)
        y = ms.simulate(ms.Hardmax(gamma=gamma, ties="point", tol=tol), x, steps=1).final[0]
        # merged: the first index stands for the merged point; else three distinct points
        target = (x[1] + x[3]) / 2 if merged else (x[1] + x[2] + x[3]) / 3
        np.testing.assert_allclose(y[0], x[0] + gamma * (target - x[0]), rtol=0, atol=1e-14)
        other = (x[1] + x[2] + x[3]) / 3 if merged else (x[1] + x[3]) / 2
        assert np.abs(y[0] - (x[0] + gamma * (other - x[0]))).max() > 0.01


# --------------------------------------------------------------------- step matrix: hull can grow

P_GROW = ms.step_matrix(np.diag([1.5, 7 / 3]))  # (I + V)^{-1} V = diag(3/5, 7/10)
TRIANGLE = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])


def test_step_matrix_documented_example():
    """docs: models#models-rd ([FW] remark after lem. convHullDecreases): V = diag(3/2, 7/3),
    triangle (0, e1, e2). With B swapping the axes, e1 and e2 lead each other and e1 moves to
    e1 + P(e2 − e1) = (0.4, 0.7), outside the triangle (x + y = 1.1): the new hull is NOT
    contained in the old one. A documented counterexample to monotonicity, not a law."""
    np.testing.assert_allclose(P_GROW, np.diag([0.6, 0.7]), rtol=1e-15)
    B = np.array([[0.0, 1.0], [1.0, 0.0]])
    y = ms.simulate(ms.Hardmax(gamma=P_GROW, B=B), TRIANGLE, steps=1).final[0]
    np.testing.assert_allclose(y, [[0.2, 0.7 / 3], [0.4, 0.7], [0.6, 0.3]], rtol=0, atol=1e-15)
    assert y[1].sum() > 1 + 0.09  # out of conv{0, e1, e2} by 0.1 / sqrt(2)
    # The same step with the scalar γ = 0.6 stays inside (the scalar-γ invariant).
    z = ms.simulate(ms.Hardmax(gamma=0.6, B=B), TRIANGLE, steps=1).final[0]
    assert (z >= -1e-15).all() and (z.sum(axis=1) <= 1 + 1e-15).all()


def test_step_matrix_hull_area_grows():
    """The hull AREA grows after one step with the same P: a thin triangle along the diagonal
    (0, 0), (1, 1), (2, 2 + δ) with B = I. Token (0, 0) ties all scores (0) and moves to
    P (1, 1 + δ/3); (1, 1) is led by (2, 2 + δ) and moves to (1.6, 1.7 + 0.7 δ); the third
    leads itself. The anisotropic P pushes the tokens off the diagonal: area δ/2 → ≈ 0.05.
    (For the triangle (0, e1, e2) itself the area shrinks in every variant tried; what grows
    there is the hull as a set, see above.)"""
    delta = 0.01
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0 + delta]])
    y = ms.simulate(ms.Hardmax(gamma=P_GROW), x, steps=1).final[0]
    expected = np.array([P_GROW @ [1.0, 1 + delta / 3], [1.6, 1.7 + 0.7 * delta], [2.0, 2 + delta]])
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-14)
    a0, a1 = ConvexHull(x).volume, ConvexHull(y).volume
    assert math.isclose(a0, delta / 2, rel_tol=1e-9)
    assert a1 > 5 * a0, (a0, a1)


# --------------------------------------------------------------------- B = −I (negative definite)


def test_negative_definite_contracts_symmetric_polygon_to_origin():
    """B = −I, constant γ, vertices of a regular hexagon: each token's leader is its antipode
    (argmin_j <x_i, x_j>), so x^t = (1 − 2γ)^t x^0 exactly: straight contraction to the origin."""
    x0 = ms.regular_polygon(6).vertices
    gamma, steps = 0.2, 30
    traj = run_states(ms.Hardmax(gamma=gamma, B=-np.eye(2)), x0, steps)
    factors = (1 - 2 * gamma) ** np.arange(steps + 1)
    np.testing.assert_allclose(traj, factors[:, None, None] * x0[None], rtol=0, atol=1e-15)
    norms = np.linalg.norm(traj, axis=-1)
    assert (np.diff(norms, axis=0) < 0).all()


def test_negative_definite_max_norm_never_grows():
    """Random configurations, B = −I, constant γ: max_i |x_i^t| is non-increasing (each new point
    is a convex combination of current tokens), to 1e-15 absolute."""
    gen = np.random.default_rng(SEED)
    x0 = gen.normal(size=(20, 7, 2))
    run = ms.simulate(ms.Hardmax(gamma=0.3, B=-np.eye(2)), x0, steps=40, record_every=1)
    m = np.linalg.norm(run.trajectory, axis=-1).max(axis=-1)  # (C, T)
    assert (np.diff(m, axis=1) <= 1e-15).all()
    assert (m[:, -1] < m[:, 0]).all()


def J(x):
    """J(x) = ½ <B_* x, x> with B_* = 1 (d = 1), per token."""
    return 0.5 * x[..., 0] ** 2


@pytest.mark.parametrize("offset", [1, 0], ids=["gamma_t=2/(t+2), t>=1", "gamma_t=2/(t+2), t>=0"])
def test_frank_wolfe_rate_counterexample(offset):
    """docs: models#statements-fw: d = 1, B = −B_* = −1, x^0 = (3, −1), γ^t = 2/(t+2). The printed
    O(1/t) bound on J(x^t) − min_{K^0} J (= 0: the origin is in the initial hull [−1, 3]) is FALSE.

    Counting the steps from t = 1 (γ = 2/3 first, ``offset=1``): the token at 3 goes to 1/3 and
    stays there, J = 1/18 for every t >= 1, exactly as docs: models#statements-fw says. With the
    schedule indexed from t = 0 (γ = 1 first, ``offset=0``) the first step swaps the two tokens and
    the token from −1 sits at 1/3, J = 1/18, from t = 2 on. Either way J does not tend to 0.
    """
    steps = 200
    t = np.arange(steps) + offset
    traj = run_states(
        ms.Hardmax(gamma=2.0 / (t + 2), B=-np.eye(1)), np.array([[3.0], [-1.0]]), steps
    )
    j = J(traj)  # (steps + 1, 2)
    stuck = 0 if offset == 1 else 1  # the token that reaches 1/3 first
    first = 1 if offset == 1 else 2
    np.testing.assert_allclose(j[first:, stuck], 1 / 18, rtol=1e-14)
    # The other token approaches 1/3 from above: J decreases to 1/18, never below.
    other = j[first:, 1 - stuck]
    assert (other > 1 / 18).all() and abs(other[-1] - 1 / 18) < 1e-3
    # Minimum of J over the initial hull is 0, and the bound C/(t + 2) with any C would force
    # J(x^t) < 1/18 for t > 18 C: instead min_i J(x_i^t) = 1/18 for the whole run.
    np.testing.assert_allclose(j[first:].min(axis=1), 1 / 18, rtol=1e-14)
    assert j[-1].min() * (steps + 2) > 10  # t · J(x^t) grows linearly: not O(1/t)
