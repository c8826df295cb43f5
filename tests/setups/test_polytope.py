"""Tests for metastab.setups.polytopes: the geometry of docs: models#polytopes."""

import dataclasses
import json
import math

import numpy as np
import pytest

from metastab.setups.polytopes import (
    Polytope,
    cross_polytope,
    gaussian,
    random_polygon,
    regular_polygon,
    simplex,
)

PENTAGON = regular_polygon(5)
SQUARE = regular_polygon(4)


# --------------------------------------------------------------------------- scalar quantities


def test_pentagon_hand_values():
    assert PENTAGON.name == "regular-5"
    assert (PENTAGON.n_vertices, PENTAGON.dim) == (5, 2)
    assert PENTAGON.c0 == pytest.approx(1 - math.cos(2 * math.pi / 5), abs=1e-14)
    assert PENTAGON.diameter == pytest.approx(2 * math.sin(2 * math.pi / 5), abs=1e-14)
    assert PENTAGON.is_equinorm()
    # Interior angle of a regular pentagon is 108° > 90°: not acute.
    np.testing.assert_allclose(PENTAGON.cone_angles(), 3 * math.pi / 5, atol=1e-12)
    assert not PENTAGON.has_acute_cones()
    assert PENTAGON.all_own_cells()


def test_square_right_angles_are_not_acute():
    assert SQUARE.c0 == pytest.approx(1.0, abs=1e-14)
    assert SQUARE.diameter == pytest.approx(2.0, abs=1e-14)
    np.testing.assert_allclose(SQUARE.cone_angles(), math.pi / 2, atol=1e-12)
    assert not SQUARE.has_acute_cones()
    assert SQUARE.all_own_cells()


def test_triangle_is_acute():
    T = regular_polygon(3, radius=2.0, phase=0.3)
    np.testing.assert_allclose(T.cone_angles(), math.pi / 3, atol=1e-12)
    assert T.has_acute_cones()
    np.testing.assert_allclose(np.linalg.norm(T.vertices, axis=1), 2.0)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
def test_regular_simplex(d):
    S = simplex(d)
    assert S.vertices.shape == (d + 1, d)
    np.testing.assert_allclose(np.linalg.norm(S.vertices, axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(S.vertices.sum(axis=0), 0.0, atol=1e-14)
    G = S.vertices @ S.vertices.T
    np.testing.assert_allclose(G[~np.eye(d + 1, dtype=bool)], -1.0 / d, atol=1e-14)
    assert S.c0 == pytest.approx(1 + 1 / d, abs=1e-13)
    assert S.diameter == pytest.approx(math.sqrt(2 + 2 / d), abs=1e-13)
    assert S.is_equinorm() and S.has_acute_cones() and S.all_own_cells()
    expected = 0.0 if d == 1 else math.pi / 3
    np.testing.assert_allclose(S.cone_angles(), expected, atol=1e-7)
    assert S.affine_dim == d


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_cross_polytope(d):
    X = cross_polytope(d)
    assert X.vertices.shape == (2 * d, d)
    assert X.c0 == pytest.approx(2.0 if d == 1 else 1.0) and X.diameter == pytest.approx(2.0)
    assert X.is_equinorm() and X.all_own_cells()
    assert X.has_acute_cones() == (d == 1)
    assert X.name == f"cross-{d}"


def test_gaussian_reproducible_and_scaled():
    P, Q = gaussian(4, 400, rng=3), gaussian(4, 400, rng=np.random.SeedSequence(3))
    np.testing.assert_array_equal(P.vertices, Q.vertices)
    np.testing.assert_allclose(np.linalg.norm(P.vertices, axis=1), 1.0, atol=0.2)
    assert P.all_own_cells()
    assert P.name == "gaussian-4x400"


def test_single_vertex_quantities():
    P = Polytope([[1.0, 2.0]])
    assert P.diameter == 0.0 and P.has_acute_cones() and P.all_own_cells()
    with pytest.raises(ValueError, match="c0"):
        _ = P.c0


def test_equinorm_detects_unequal_norms():
    assert not Polytope([[1.0, 0.0], [0.0, 1.1]]).is_equinorm()
    assert Polytope([[1.0, 0.0], [0.0, 1.0 + 1e-12]]).is_equinorm()


# --------------------------------------------------------------------------- cells


def test_assign_on_vertices_and_batch_shapes():
    for P in (PENTAGON, simplex(4), cross_polytope(3)):
        np.testing.assert_array_equal(P.assign(P.vertices), np.arange(P.n_vertices))
    x = np.random.default_rng(0).normal(size=(4, 3, 2))
    assert PENTAGON.scores(x).shape == (4, 3, 5)
    assert PENTAGON.assign(x).shape == (4, 3)
    assert PENTAGON.assign(x[0, 0]).shape == ()


def test_assign_with_non_symmetric_B():
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])  # B x rotates x by +90°
    x = np.array([1.0, 0.0])
    assert SQUARE.assign(x, B=rot) == 1  # B x = (0, 1) = v_1
    assert SQUARE.assign(x, B=rot.T) == 3  # B^T x = (0, -1) = v_3
    # Scores against the definition <B x, v_a>, entry by entry.
    rng = np.random.default_rng(1)
    B = rng.normal(size=(2, 2))
    pts = rng.normal(size=(7, 2))
    expected = np.array([[(B @ p) @ v for v in PENTAGON.vertices] for p in pts])
    np.testing.assert_allclose(PENTAGON.scores(pts, B), expected, atol=1e-14)
    np.testing.assert_array_equal(PENTAGON.assign(pts, B), expected.argmax(axis=1))


def test_assign_is_voronoi_for_equinorm():
    P = regular_polygon(7, phase=0.1)
    g = np.linspace(-1, 1, 81)
    pts = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    pts = pts[P.contains(pts)]
    s = np.sort(P.scores(pts), axis=1)
    pts = pts[s[:, -1] - s[:, -2] > 1e-9]  # drop cell boundaries
    nearest = np.argmin(np.linalg.norm(pts[:, None, :] - P.vertices[None], axis=-1), axis=1)
    assert len(pts) > 1000
    np.testing.assert_array_equal(P.assign(pts), nearest)


def test_interior_point_does_not_own_its_cell():
    T = Polytope([[2.0, 0.0], [-1.0, 1.5], [-1.0, -1.5], [0.0, 0.0]])  # centroid last
    np.testing.assert_array_equal(T.owns_cells(), [True, True, True, False])
    assert not T.all_own_cells()
    np.testing.assert_array_equal(T.hull_vertices(), [0, 1, 2])


def test_owns_cells_depends_on_B():
    P = regular_polygon(6)
    assert P.all_own_cells()
    assert not P.owns_cells(B=-np.eye(2)).any()


# --------------------------------------------------------------------------- hull and membership


def test_contains_full_dimensional_polygon():
    pts = np.random.default_rng(2).uniform(-1.2, 1.2, size=(5000, 2))
    expected = np.abs(pts).sum(axis=1) <= 1  # the square conv{±e_i}
    np.testing.assert_array_equal(SQUARE.contains(pts), expected)
    assert SQUARE.contains(SQUARE.vertices).all()
    assert SQUARE.contains([0.5, 0.5]) and not SQUARE.contains([0.5, 0.5 + 1e-9])


def test_contains_interval_d1():
    P = Polytope([[2.0], [-1.0], [0.5]])
    assert P.affine_dim == 1
    np.testing.assert_array_equal(P.hull_vertices(), [0, 1])
    np.testing.assert_array_equal(
        P.contains([[-1.0], [0.0], [2.0], [2.1], [-1.5]]), [True, True, True, False, False]
    )


def test_contains_segment_in_plane():
    P = Polytope([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    assert P.affine_dim == 1
    np.testing.assert_array_equal(P.hull_vertices(), [0, 2])
    x = [[0.5, 0.5], [2.0, 2.0], [2.1, 2.1], [1.0, 1.1], [-0.1, -0.1]]
    np.testing.assert_array_equal(P.contains(x), [True, True, False, False, False])


def test_contains_single_point():
    P = Polytope([[3.0, 4.0, 5.0]])
    assert P.affine_dim == 0
    np.testing.assert_array_equal(P.hull_vertices(), [0])
    np.testing.assert_array_equal(P.contains([[3.0, 4.0, 5.0], [3.0, 4.0, 5.1]]), [True, False])


def test_contains_triangle_in_space():
    P = Polytope([[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.2, 0.2, 1.0]])
    assert P.affine_dim == 2
    np.testing.assert_array_equal(P.hull_vertices(), [0, 1, 2])
    x = [[0.3, 0.3, 1.0], [0.3, 0.3, 1.01], [0.6, 0.6, 1.0]]
    np.testing.assert_array_equal(P.contains(x), [True, False, False])


@pytest.mark.parametrize(
    "vertices, extreme",
    [
        ([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]], [0, 3]),  # collinear in R²
        ([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], [0, 1]),  # segment in R³
        ([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0.5, 0.5, 0]], [0, 1, 2, 3]),  # planar
        ([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 1e-14]], [0, 1, 2, 3]),  # flat to roundoff
        ([[0.0, 0.0], [1.0, 0.0], [0.5, 1e-9]], [0, 1, 2]),  # very thin but full-dimensional
    ],
)
def test_degenerate_hulls_do_not_raise(vertices, extreme):
    P = Polytope(vertices)
    assert P.contains(P.vertices, tol=1e-9).all()
    # the extreme points exactly: interior and mid-edge points dropped, corners kept
    np.testing.assert_array_equal(P.hull_vertices(), extreme)
    assert not P.contains(P.vertices.mean(axis=0) + 10.0).any()


def test_qhull_failure_falls_back_to_joggle(monkeypatch):
    import metastab.setups.polytopes as mod

    real = mod.ConvexHull

    def flaky(points, qhull_options=None):
        if qhull_options is None:
            raise mod.QhullError("QH6154 initial simplex is flat")
        return real(points, qhull_options=qhull_options)

    monkeypatch.setattr(mod, "ConvexHull", flaky)
    P = regular_polygon(6)
    np.testing.assert_array_equal(P.hull_vertices(), np.arange(6))
    assert P.contains(0.9 * P.vertices).all() and not P.contains(1.01 * P.vertices).any()


def test_hull_vertices_drops_edge_points():
    P = Polytope([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [0.5, 0.5]])
    np.testing.assert_array_equal(P.hull_vertices(), [0, 1, 2, 3])


# --------------------------------------------------------------------------- cones and erosion


def test_dominance_cone_and_erosion_near_boundaries():
    P, eta, delta = PENTAGON, 0.3, 0.1
    v0, g = P.vertices[0], P.vertices[0] - P.vertices[1]
    c0 = P.c0
    # On the ray s·v_0 the binding cone inequality is <v_0 − v_1, x> = s c0 >= η (+ δ|v_0 − v_1|).
    inside_cone = ((eta + 0.02) / c0) * v0  # slack 0.02 < δ|g|
    deep = ((eta + delta * np.linalg.norm(g) + 0.01) / c0) * v0
    near_k_boundary = 0.97 * v0  # within δ of the edges through v_0
    x = np.array([inside_cone, deep, near_k_boundary])
    np.testing.assert_array_equal(P.in_dominance_cone(x, 0, eta), [True, True, True])
    np.testing.assert_array_equal(P.in_eroded_cone(x, 0, eta, delta), [False, True, False])
    np.testing.assert_array_equal(P.in_eroded_cone(x, 0, eta, 0.0), P.in_dominance_cone(x, 0, eta))
    assert not P.in_dominance_cone(x, 1, eta).any()
    assert not P.in_dominance_cone(1.01 * v0, 0, eta)  # outside K


def _sphere(d, n, rng):
    u = rng.normal(size=(n, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


@pytest.mark.parametrize("P, a, eta, delta", [(PENTAGON, 2, 0.3, 0.1), (simplex(3), 1, 0.2, 0.05)])
def test_erosion_matches_ball_sampling(P, a, eta, delta):
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, size=(20_000, P.dim))
    x = x[P.in_dominance_cone(x, a, eta)]
    if P.dim == 2:
        t = np.linspace(0, 2 * np.pi, 3600, endpoint=False)
        u = np.column_stack([np.cos(t), np.sin(t)])
    else:
        u = _sphere(P.dim, 20_000, rng)

    def ball_inside(points, r):
        return np.array([P.in_dominance_cone(p + r * u, a, eta).all() for p in points])

    strict = P.in_eroded_cone(x, a, eta, 1.01 * delta)
    loose = P.in_eroded_cone(x, a, eta, 0.99 * delta)
    eroded, not_eroded = x[strict][:30], x[~loose][:30]
    assert len(eroded) == len(not_eroded) == 30
    assert ball_inside(eroded, delta).all()
    assert not ball_inside(not_eroded, delta).any()
    # Negative control: a ball of twice the radius does not fit around every eroded point.
    assert not ball_inside(eroded, 2 * delta).all()


def test_erosion_of_degenerate_polytope_is_empty():
    P = Polytope([[1.0, 0.0], [-1.0, 0.0]])
    x = np.array([[0.5, 0.0], [0.9, 0.0]])
    assert not P.in_eroded_cone(x, 0, 0.1, 0.01).any()
    np.testing.assert_array_equal(P.in_eroded_cone(x, 0, 0.1, 0.0), P.in_dominance_cone(x, 0, 0.1))
    assert P.in_dominance_cone(x, 0, 0.1).all()
    assert P.dominance_inradius(0, 0.1) == 0.0


def test_dominance_inradius():
    # I_0(1/2) of the square is the square {x ± y in [1/2, 1]} of side 1/(2√2).
    assert SQUARE.dominance_inradius(0, 0.5) == pytest.approx(1 / (4 * math.sqrt(2)), abs=1e-9)
    assert SQUARE.dominance_inradius(0, 2.0) < 0
    r = PENTAGON.dominance_inradius(0, 0.3)
    assert 0 < r < 1
    # The Chebyshev radius is sharp: the erosion just below r is non-empty, just above empty.
    x = np.random.default_rng(5).uniform(-1, 1, size=(200_000, 2))
    assert PENTAGON.in_eroded_cone(x, 0, 0.3, 0.9 * r).any()
    assert not PENTAGON.in_eroded_cone(x, 0, 0.3, 1.01 * r).any()


# --------------------------------------------------------------------------- random polygons


def test_random_polygon_properties_and_reproducibility():
    P, Q = random_polygon(7, rng=11), random_polygon(7, rng=11)
    assert P == Q and P.name == "random-7"
    assert random_polygon(7, rng=12) != P
    assert len(P.hull_vertices()) == 7 and P.all_own_cells()
    norms = np.linalg.norm(P.vertices, axis=1)
    assert norms.min() >= 0.4 and norms.max() <= 1.0
    angles = np.arctan2(P.vertices[:, 1], P.vertices[:, 0]) % (2 * np.pi)
    assert np.all(np.diff(angles) > 0)  # sorted angles


def test_random_polygon_equal_norm_and_B():
    P = random_polygon(6, equal_norm=True, rng=0)
    assert P.is_equinorm()
    B = np.array([[1.0, 0.4], [-0.2, 0.3]])
    Q = random_polygon(5, B=B, radial_range=(0.2, 1.0), rng=np.random.default_rng(1))
    assert Q.all_own_cells(B)


@pytest.mark.parametrize("bad", [(0.0, 1.0), (1.0, 0.5), (float("nan"), 1.0), (0.2,), "ab"])
def test_random_polygon_bad_radial_range(bad):
    with pytest.raises(ValueError, match="radial_range") as info:
        random_polygon(5, radial_range=bad, rng=0)
    assert repr(bad) in str(info.value)


def test_random_polygon_gives_up_with_max_tries():
    with pytest.raises(RuntimeError, match="max_tries=5"):
        random_polygon(5, equal_norm=True, B=-np.eye(2), max_tries=5, rng=0)


# --------------------------------------------------------------------------- dataclass behaviour


def test_vertices_read_only_copy_and_frozen():
    V = np.array([[0.0, 1.0], [1.0, 0.0]])
    P = Polytope(V)
    V[0, 0] = 5.0
    assert P.vertices[0, 0] == 0.0
    assert P.vertices.dtype == np.float64
    with pytest.raises(ValueError):
        P.vertices[0, 0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        P.name = "x"


def test_dict_round_trip_and_hash():
    P = regular_polygon(5, phase=0.2)
    data = json.loads(json.dumps(P.to_dict()))
    Q = Polytope.from_dict(data)
    assert Q == P and hash(Q) == hash(P) and Q.name == "regular-5"
    assert Polytope.from_dict({"vertices": [[0.0], [1.0]]}).name == ""
    assert hash(Polytope([[-0.0], [1.0]])) == hash(Polytope([[0.0], [1.0]]))
    with pytest.raises(ValueError, match="unknown keys"):
        Polytope.from_dict({"vertices": [[0.0]], "colour": "red"})


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "vertices, match",
    [
        ([[0.0, np.nan], [1.0, 0.0]], "vertices must be finite"),
        ([[0.0, np.inf]], "vertices must be finite"),
        ([1.0, 2.0], "vertices must have shape"),
        (np.zeros((0, 2)), "vertices must have shape"),
        ([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]], "vertices must be distinct"),
        ([["a", "b"]], "vertices must be"),
    ],
)
def test_bad_vertices(vertices, match):
    with pytest.raises(ValueError, match=match):
        Polytope(vertices)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match=r"B must be 2×2 .*got shape \(3, 3\)"):
        PENTAGON.assign([0.0, 0.0], B=np.eye(3))
    with pytest.raises(ValueError, match="B must be finite"):
        PENTAGON.owns_cells(B=[[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 2\)"):
        PENTAGON.contains([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="x must be finite"):
        PENTAGON.assign([np.nan, 0.0])
    with pytest.raises(ValueError, match="a must be a vertex index in \\[0, 5\\), got 5"):
        PENTAGON.in_dominance_cone([0.0, 0.0], 5, 0.1)
    with pytest.raises(ValueError, match="delta must be >= 0, got -0.1"):
        PENTAGON.in_eroded_cone([0.0, 0.0], 0, 0.1, -0.1)
    with pytest.raises(ValueError, match="eta must be finite"):
        PENTAGON.in_eroded_cone([0.0, 0.0], 0, np.nan, 0.1)
    with pytest.raises(ValueError, match="k must be >= 3, got 2"):
        regular_polygon(2)
    with pytest.raises(ValueError, match="radius must be > 0, got 0.0"):
        regular_polygon(5, radius=0.0)
    with pytest.raises(ValueError, match="k must be an integer, got 2.5"):
        random_polygon(2.5)
    with pytest.raises(ValueError, match="d must be >= 1, got 0"):
        simplex(0)
    with pytest.raises(ValueError, match="name must be a str"):
        Polytope([[0.0]], name=3)
