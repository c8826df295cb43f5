"""Tests for metastab.setups.initial: initial configurations."""

import time

import numpy as np
import pytest

from metastab.setups.initial import in_cells, near_vertices, repeated_points, uniform_in
from metastab.setups.polytopes import Polytope, cross_polytope, regular_polygon, simplex

PENTAGON = regular_polygon(5)


def _area_centroid(V):
    """Centroid of the polygon with vertices V in counter-clockwise order (shoelace formula)."""
    x, y = V[:, 0], V[:, 1]
    xn, yn = np.roll(x, -1), np.roll(y, -1)
    cross = x * yn - xn * y
    area = cross.sum() / 2
    return np.array([((x + xn) * cross).sum(), ((y + yn) * cross).sum()]) / (6 * area)


# --------------------------------------------------------------------------- uniform_in


def test_uniform_in_quadrilateral_has_the_area_centroid():
    P = Polytope([[0.0, 0.0], [3.0, 0.0], [2.0, 1.0], [0.0, 2.0]])
    X = uniform_in(P, 200_000, rng=0)
    assert X.shape == (200_000, 2) and P.contains(X).all()
    target = _area_centroid(P.vertices)
    assert np.abs(X.mean(axis=0) - target).max() < 0.01
    # Negative control: the vertex mean is a different point, farther than the tolerance.
    assert np.abs(P.vertices.mean(axis=0) - target).max() > 0.05


def test_uniform_in_cross_polytope_radial_law():
    X = uniform_in(cross_polytope(3), 100_000, rng=1)
    r = np.abs(X).sum(axis=1)
    assert r.max() <= 1 + 1e-12
    # Uniform on the octahedron: P(|x|_1 <= s) = s^3.
    for s in (0.5, 0.8):
        assert np.mean(r <= s) == pytest.approx(s**3, abs=0.006)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=0.01)


def test_uniform_in_degenerate_polytopes():
    seg = Polytope([[0.0, 0.0], [1.0, 1.0], [3.0, 3.0]])
    X = uniform_in(seg, 50_000, rng=2)
    np.testing.assert_allclose(X[:, 0], X[:, 1], atol=1e-12)
    assert seg.contains(X).all()
    assert np.mean(X[:, 0] <= 1.0) == pytest.approx(1 / 3, abs=0.01)
    point = Polytope([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(uniform_in(point, 4, rng=0), np.tile([1.0, 2.0, 3.0], (4, 1)))
    tri = Polytope([[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    Y = uniform_in(tri, 10_000, rng=3)
    assert tri.contains(Y).all()
    np.testing.assert_allclose(Y.mean(axis=0), [1 / 3, 1 / 3, 1.0], atol=0.01)
    assert uniform_in(tri, 0, rng=0).shape == (0, 3)


def test_uniform_in_reproducible():
    a = uniform_in(PENTAGON, 10, rng=np.random.SeedSequence(7))
    b = uniform_in(PENTAGON, 10, rng=np.random.default_rng(np.random.SeedSequence(7)))
    np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- in_cells


def test_in_cells():
    X = in_cells(PENTAGON, 40, rng=5)
    assert X.shape == (40, 2) and X.flags.writeable and X.dtype == np.float64
    np.testing.assert_array_equal(X[:5], PENTAGON.vertices)
    assert PENTAGON.contains(X).all()
    np.testing.assert_array_equal(X, in_cells(PENTAGON, 40, rng=5))
    X[0, 0] = 9.0  # a fresh array: the polytope is untouched
    assert PENTAGON.vertices[0, 0] == 1.0
    np.testing.assert_array_equal(in_cells(PENTAGON, 5, rng=0), PENTAGON.vertices)


# --------------------------------------------------------------------------- near_vertices


@pytest.mark.parametrize("P, beta", [(PENTAGON, 1e4), (simplex(3), 1e4), (simplex(2), 1e3)])
def test_near_vertices_satisfies_thm52_initial_condition(P, beta):
    n, k = 53, P.n_vertices
    X = near_vertices(P, n, beta, gamma=0.5, rng=8)
    assert X.shape == (n, P.dim) and X.flags.writeable
    np.testing.assert_array_equal(X[:k], P.vertices)
    groups = (np.arange(k, n) - k) % k
    np.testing.assert_array_equal(P.assign(X[k:]), groups)
    np.testing.assert_array_equal(P.assign(X[:k]), np.arange(k))
    eta, delta = beta ** (-1 / 8), beta ** (-1 / 4)
    for a in range(k):
        assert P.in_eroded_cone(X[k:][groups == a], a, eta, delta).all()
        # Negative control: a much larger erosion radius is not satisfied by the sample.
        assert not P.in_eroded_cone(X[k:][groups == a], a, eta, 3 * delta).all()


def test_near_vertices_reproducible_and_gamma_inert():
    a = near_vertices(PENTAGON, 20, 1e4, rng=3)
    np.testing.assert_array_equal(a, near_vertices(PENTAGON, 20, 1e4, gamma=0.1, rng=3))
    assert not np.array_equal(a, near_vertices(PENTAGON, 20, 1e4, rng=4))
    np.testing.assert_array_equal(near_vertices(PENTAGON, 5, 1e4, rng=0), PENTAGON.vertices)


def test_near_vertices_small_beta_has_empty_erosion():
    # For the unit pentagon the erosion I_a(β^(-1/8)) ⊖ β^(-1/4) is empty below β ≈ 1987.5.
    r = PENTAGON.dominance_inradius(0, 1000.0 ** (-1 / 8))
    assert r < 1000.0 ** (-1 / 4)
    with pytest.raises(ValueError, match=r"empty for vertex a=0 at beta=1000\.0"):
        near_vertices(PENTAGON, 10, 1000.0, rng=0)
    with pytest.raises(ValueError, match="beta=1"):
        near_vertices(PENTAGON, 10, 1, rng=0)
    near_vertices(PENTAGON, 10, 3000.0, rng=0)  # above the threshold it works


def test_near_vertices_is_fast_just_above_the_threshold():
    # The pentagon's eroded cones open at beta ≈ 1987.5; there they are slivers that a rejection
    # sampler from K accepted with probability ~1e-6. The exact sampler does not care.
    tic = time.perf_counter()
    X = near_vertices(PENTAGON, 5 + 5 * 2000, 1988.0, rng=0)
    assert time.perf_counter() - tic < 5.0
    groups = np.arange(X.shape[0] - 5) % 5
    eta, delta = 1988.0 ** (-1 / 8), 1988.0 ** (-1 / 4)
    for a in range(5):
        assert PENTAGON.in_eroded_cone(X[5:][groups == a], a, eta, delta).all()


def test_near_vertices_is_uniform_on_the_eroded_cone():
    """Same law as rejection from the uniform law on K: two-sample KS on both coordinates and on
    the distance to the vertex (fixed seeds, level 1%); the negative control, Dirichlet
    weights on the cone's corners (not uniform), is rejected."""
    from scipy.stats import ks_2samp

    from metastab.setups.initial import _eroded_cone

    beta, m = 1e4, 3000
    eta, delta = beta ** (-1 / 8), beta ** (-1 / 4)
    exact = near_vertices(PENTAGON, 5 + 5 * m, beta, rng=1)[5::5]
    pool = uniform_in(PENTAGON, 4_000_000, rng=2)
    reject = pool[PENTAGON.in_eroded_cone(pool, 0, eta, delta)][:m]
    assert len(reject) == m
    corners = _eroded_cone(PENTAGON, 0, eta, delta).vertices
    wrong = np.random.default_rng(3).dirichlet(np.ones(len(corners)), m) @ corners

    def features(x):
        return x[:, 0], x[:, 1], np.linalg.norm(x - PENTAGON.vertices[0], axis=1)

    p_exact = min(ks_2samp(u, v).pvalue for u, v in zip(features(exact), features(reject)))
    p_wrong = min(ks_2samp(u, v).pvalue for u, v in zip(features(wrong), features(reject)))
    print(f"KS p exact {p_exact:.3g}, control {p_wrong:.3g}")
    assert p_exact > 0.01 / 3, p_exact  # Bonferroni over the three features
    assert p_wrong < 1e-6, p_wrong


def test_near_vertices_degenerate_polytope():
    seg = Polytope([[1.0, 0.0], [-1.0, 0.0]])
    with pytest.raises(ValueError, match="empty"):
        near_vertices(seg, 4, 1e6, rng=0)


def test_near_vertices_bad_arguments():
    with pytest.raises(ValueError, match="n must be >= the number of vertices 5, got 4"):
        near_vertices(PENTAGON, 4, 1e4)
    with pytest.raises(ValueError, match="beta must be > 0, got 0"):
        near_vertices(PENTAGON, 10, 0)
    with pytest.raises(ValueError, match="beta must be finite"):
        near_vertices(PENTAGON, 10, float("inf"))
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\], got 1.5"):
        near_vertices(PENTAGON, 10, 1e4, gamma=1.5)
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\], got 0.0"):
        near_vertices(PENTAGON, 10, 1e4, gamma=0.0)
    with pytest.raises(ValueError, match="polytope must be a Polytope"):
        near_vertices(PENTAGON.vertices, 10, 1e4)
    with pytest.raises(ValueError, match="n must be >= the number of vertices"):
        in_cells(PENTAGON, 2)
    with pytest.raises(ValueError, match="n must be an integer"):
        uniform_in(PENTAGON, 2.0)


# --------------------------------------------------------------------------- repeated points


def test_repeated_points():
    X = repeated_points([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [2, 1, 3])
    np.testing.assert_array_equal(X, [[0, 1], [0, 1], [2, 3], [4, 5], [4, 5], [4, 5]])
    assert X.dtype == np.float64 and X.flags.writeable
    pts = PENTAGON.vertices
    Y = repeated_points(pts, np.array([1, 1, 1, 1, 1], dtype=np.int32))
    np.testing.assert_array_equal(Y, pts)
    Y[0, 0] = 5.0
    assert PENTAGON.vertices[0, 0] == 1.0


@pytest.mark.parametrize(
    "points, mult, match",
    [
        ([[0.0, 1.0]], [0], "multiplicities must all be >= 1"),
        ([[0.0, 1.0]], [1.5], "multiplicities must be integers"),
        ([[0.0, 1.0]], [True], "multiplicities must be integers"),
        ([[0.0, 1.0]], [1, 2], r"multiplicities must have shape \(1,\)"),
        ([[np.nan, 1.0]], [1], "points must be finite"),
        ([0.0, 1.0], [1, 1], "points must have shape"),
    ],
)
def test_repeated_points_bad_inputs(points, mult, match):
    with pytest.raises(ValueError, match=match):
        repeated_points(points, mult)


def test_clusters_is_a_deprecated_alias_of_repeated_points():
    """The old name of the initial configuration (now the event's, metastab.Clusters, alone)."""
    import metastab as ms
    from metastab.setups import initial

    with pytest.warns(DeprecationWarning, match="use metastab.setups.initial.repeated_points"):
        assert ms.clusters is ms.repeated_points
    with pytest.warns(DeprecationWarning, match="use repeated_points"):
        x = initial.clusters([[0.0, 1.0], [1.0, 0.0]], [2, 1])
    assert np.array_equal(x, ms.repeated_points([[0.0, 1.0], [1.0, 0.0]], [2, 1]))
    assert "clusters" not in dir(ms) and "clusters" not in vars(ms)
