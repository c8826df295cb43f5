"""Stopping events: exact decisions against independent computations, and censoring."""

import math

import numpy as np
import pytest

import metastab as ms
from metastab.kernels.cpu import events as _events
from metastab.kernels.reference import euclidean as ref

# --------------------------------------------------------------------------------------------
# LeaveHull: the kernel's point-to-hull decision against the exact distance
# --------------------------------------------------------------------------------------------


def _kernel_outside(p, pts, r):
    pts = np.ascontiguousarray(pts, dtype=float)
    m, d = pts.shape
    dist2 = _events.hull_dist2(
        np.ascontiguousarray(p, dtype=float),
        pts,
        np.arange(m, dtype=np.int64),
        r * r,
        _events.hull_work(m, d),
    )
    return bool(dist2 > r * r)  # leave_hull's test


def _random_hull(rng, d):
    """Small hulls, full-dimensional or degenerate (one point, repeated, collinear, coplanar)."""
    shape = rng.choice(["generic", "single", "repeated", "collinear", "flat"])
    m = int(rng.integers(2, 7))
    if shape == "single":
        return shape, rng.normal(size=(1, d))
    if shape == "repeated":
        base = rng.normal(size=(int(rng.integers(1, 4)), d))
        return shape, base[rng.integers(0, base.shape[0], size=m)]
    if shape == "collinear":
        a, b = rng.normal(size=(2, d))
        return shape, a + rng.uniform(-1, 1.5, size=(m, 1)) * b
    if shape == "flat" and d == 3:
        a, b, c = rng.normal(size=(3, d))
        return shape, a + rng.normal(size=(m, 1)) * b + rng.normal(size=(m, 1)) * c
    return "generic", rng.normal(size=(m, d))


def _query_points(rng, pts):
    """Points inside (convex combinations, vertices), on or near the boundary, and outside."""
    m, d = pts.shape
    lam = rng.dirichlet(np.ones(m), size=3)
    inside = lam @ pts
    vertex = pts[rng.integers(m)][None]
    edge = (0.3 * pts[0] + 0.7 * pts[-1])[None]
    near = edge + 1e-6 * rng.normal(size=(2, d))
    outside = pts.mean(axis=0) + rng.normal(size=(4, d)) * rng.choice([0.1, 1.0, 3.0, 10.0])
    return np.concatenate([inside, vertex, edge, near, outside])


def test_reference_hull_distance_agrees_with_scipy_qp():
    """The reference's exact (Carathéodory) distance agrees with SLSQP on the simplex."""
    rng = np.random.default_rng(0)
    for _ in range(40):
        d = int(rng.integers(2, 4))
        _, pts = _random_hull(rng, d)
        for p in _query_points(rng, pts)[::2]:
            exact = ref.hull_distance(p, pts)
            qp = ref.hull_distance_qp(p, pts)
            assert exact <= qp + 1e-9  # the exact one is a true minimum
            assert abs(exact - qp) < 1e-6 * max(1.0, qp), (pts, p, exact, qp)


def test_reference_hull_distance_known_values():
    tri = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert ref.hull_distance([0.2, 0.2], tri) == 0.0
    assert math.isclose(ref.hull_distance([1.0, 1.0], tri), math.sqrt(0.5))
    assert math.isclose(ref.hull_distance([-3.0, -4.0], tri), 5.0)
    assert math.isclose(ref.hull_distance([2.0, -1.0], tri), math.sqrt(2.0))
    seg = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    assert math.isclose(ref.hull_distance([1.0, 3.0, 4.0], seg), 5.0)
    assert math.isclose(ref.hull_distance([3.0, 0.0, 0.0], seg), 1.0)


@pytest.mark.parametrize("d", [2, 3])
def test_outside_hull_matches_exact_distance(d):
    rng = np.random.default_rng(100 + d)
    checked = 0
    shapes = set()
    for _ in range(80):
        shape, pts = _random_hull(rng, d)
        shapes.add(shape)
        for p in _query_points(rng, pts):
            dist = ref.hull_distance(p, pts)
            radii = [
                rng.uniform(1e-3, 2.0),
                1e-3,
                dist * (1 + 1e-6),
                dist * (1 - 1e-6),
                dist + 1e-7,
                max(dist - 1e-7, 1e-12),
            ]
            for r in radii:
                if r <= 0 or abs(dist - r) < 1e-9:
                    continue
                assert _kernel_outside(p, pts, r) == (dist > r), (shape, pts, p, r, dist)
                checked += 1
    assert checked > 2000
    assert {"generic", "single", "repeated", "collinear"} <= shapes


def test_outside_hull_ill_conditioned_tetrahedron():
    """A point 0.01567 from a face of a thin tetrahedron, where Frank-Wolfe-type methods zigzag
    (still ~40% off after 1000 iterations): a radius 4% below the distance must say 'outside'.
    (Exact distance confirmed by SLSQP and by the Carathéodory enumeration.)"""
    pts = np.array(
        [
            [-0.48755062, -1.53550953, -1.0066131],
            [-0.47305593, 0.11529708, 0.82129383],
            [-0.06937177, 0.81730205, 1.38482262],
            [1.09191053, -0.14030251, -0.43166465],
        ]
    )
    p = np.array([0.02038011, -0.24412193, 0.15529909])
    dist = ref.hull_distance(p, pts)
    assert abs(dist - ref.hull_distance_qp(p, pts)) < 1e-8
    assert 0.0156 < dist < 0.0157
    for r in (0.012, 0.015, 0.0156):
        assert _kernel_outside(p, pts, r), r
    for r in (0.0157, 0.02):
        assert not _kernel_outside(p, pts, r), r


def test_leave_hull_event_hit_matches_reference():
    """The full event (groups, per-token radii) on moved configurations, via event_hit."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        n, d = 7, int(rng.integers(2, 4))
        x0 = rng.normal(size=(n, d))
        groups = rng.integers(0, 3, size=n)
        ev = ms.LeaveHull(groups=groups, radius=float(rng.uniform(0.05, 0.8)))
        comp = ev.compile(x0[None], np.eye(d))
        x = x0 + rng.normal(size=(n, d)) * 0.4
        dists = [ref.hull_distance(x[i], x0[groups == groups[i]]) for i in range(n)]
        if min(abs(di - ev.radius) for di in dists) < 1e-9:
            continue
        got = _events.event_hit(comp, 0, x, _events.hull_work(n, d))
        assert got == ref.leave_hull(x, x0, groups, [ev.radius] * n)
        assert got == (max(dists) > ev.radius)


def test_leave_hull_groups_with_arbitrary_labels():
    """Labels need not be 0..G-1: -5 and 7 are two groups."""
    x0 = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [6.0, 5.0]])
    ev = ms.LeaveHull(groups=[7, 7, -5, -5], radius=0.1)
    comp = ev.compile(x0[None], np.eye(2))
    x = x0.copy()
    x[0] = [0.5, 0.05]  # still within 0.1 of its segment
    hit = _events.event_hit(comp, 0, x, _events.hull_work(4, 2))
    assert not hit
    x[0] = [3.0, 3.0]  # inside the hull of everybody, far from its own group's segment
    hit = _events.event_hit(comp, 0, x, _events.hull_work(4, 2))
    assert hit


# --------------------------------------------------------------------------------------------
# ReachVertices
# --------------------------------------------------------------------------------------------

TRIANGLE = np.array([[math.cos(a), math.sin(a)] for a in (0.0, 2 * math.pi / 3, 4 * math.pi / 3)])


def test_reach_vertices_compile_radii_and_default_assignment():
    B = np.array([[1.0, 0.8], [-0.6, 1.2]])  # not symmetric
    rng = np.random.default_rng(2)
    x0 = np.concatenate([TRIANGLE, rng.normal(size=(6, 2)) * 0.5])
    ev = ms.ReachVertices(TRIANGLE, radius=0.2, vertex_radius=0.01)
    comp = ev.compile(x0[None], B)
    want = ref.vertex_assignment(x0, B, TRIANGLE)
    # argmax <B x_i, v_a>, with B applied to the token (not B^T)
    alt = np.argmax((x0 @ B.T) @ TRIANGLE.T, axis=1)
    assert list(alt) == want
    assert np.array_equal(comp.centers[0], TRIANGLE[want])
    on_vertex = [want[i] == i for i in range(3)] + [False] * 6
    assert all(on_vertex[:3])  # vertex tokens are assigned their own vertex here
    assert np.array_equal(comp.radii[0], np.where(on_vertex, 0.01, 0.2))
    # an explicit assignment is used as given
    assign = np.arange(9) % 3
    comp = ms.ReachVertices(TRIANGLE, radius=0.2, assignment=assign).compile(x0[None], B)
    assert np.array_equal(comp.centers[0], TRIANGLE[assign])
    assert np.array_equal(comp.radii[0], np.full(9, 0.2))  # vertex_radius defaults to radius


def test_reach_vertices_hardmax_straight_lines():
    """[FW] thm. exp.fast.polytope: vertices fixed, x^t − v = (1 − γ)^t (x^0 − v). From distance
    0.5 with γ = 1/4, the first t with 0.5 · 0.75^t <= 0.1 is t = 6."""
    x0 = np.concatenate([TRIANGLE, 0.5 * TRIANGLE])
    ev = ms.ReachVertices(TRIANGLE, radius=0.1, vertex_radius=1e-12)
    fp = ms.first_passage(ms.Hardmax(gamma=0.25), x0, ev, max_steps=50, chains=2, rng=0)
    assert list(fp.times) == [6, 6] and not fp.censored.any()
    assert np.array_equal(fp.final[0, :3], TRIANGLE)
    np.testing.assert_allclose(fp.final[0, 3:], TRIANGLE - 0.5 * 0.75**6 * TRIANGLE, atol=1e-14)
    pred = ref.event_predicate(ev, x0, np.eye(2))
    assert ref.run_chain(ref.HARDMAX, x0, np.eye(2), gamma=0.25, steps=50, event=pred)[1] == 6


def test_reach_vertices_vertex_radius_is_applied():
    """Under the softmax flow the vertex tokens drift off their vertices by ~e^{-β/2}: with a
    vertex radius of 1e-12 the event never happens (the chain is absorbed once the tokens' hull
    no longer reaches a vertex), with the default (= radius) it does."""
    x0 = np.concatenate([TRIANGLE, 0.5 * TRIANGLE])
    model = ms.SoftmaxFlow(beta=20.0, gamma=0.5)
    tight = ms.first_passage(
        model, x0, ms.ReachVertices(TRIANGLE, 0.3, vertex_radius=1e-12), max_steps=40, rng=0
    )
    loose = ms.first_passage(model, x0, ms.ReachVertices(TRIANGLE, 0.3), max_steps=40, rng=0)
    assert tight.absorbed.all() and not tight.censored.any() and tight.times[0] < 40
    assert not loose.censored.any() and 1 <= loose.times[0] < 40
    pred = ref.event_predicate(ms.ReachVertices(TRIANGLE, 0.3), x0, np.eye(2))
    _, t, hit = ref.run_chain(ref.FLOW, x0, np.eye(2), beta=20.0, gamma=0.5, steps=40, event=pred)
    assert hit and t == loose.times[0]


# --------------------------------------------------------------------------------------------
# Collapse, time 0, censoring
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [ms.SoftmaxFlow(beta=0.0, gamma=0.5), ms.Hardmax(gamma=0.5, B=np.zeros((2, 2)))],
    ids=["flow-beta0", "hardmax-B0"],
)
def test_collapse_known_configuration(model):
    """β = 0 (or B = 0: all tied): every token moves halfway to the mean, so the diameter halves
    each step. From diameter 2, the first t with 2 · 0.5^t <= 0.1 is t = 5."""
    x0 = np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, 0.5], [0.2, -0.3]])
    fp = ms.first_passage(model, x0, ms.Collapse(0.1), max_steps=100, rng=0)
    assert fp.times[0] == 5 and not fp.censored[0]
    diam = max(np.linalg.norm(a - b) for a in fp.final[0] for b in fp.final[0])
    assert math.isclose(diam, 2 * 0.5**5, rel_tol=1e-12)
    np.testing.assert_allclose(fp.final[0].mean(axis=0), x0.mean(axis=0), atol=1e-15)


@pytest.mark.parametrize(
    "event",
    [
        ms.LeaveBall(0.1, centers=np.full((4, 2), 9.0)),
        ms.ReachVertices(np.array([[0.0, 0.0]]), radius=5.0),
        ms.Collapse(10.0),
    ],
    ids=["leave-ball", "reach", "collapse"],
)
def test_event_at_time_zero(event):
    x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    fp = ms.first_passage(
        ms.SoftmaxChain(beta=1.0, gamma=0.5), x0, event, max_steps=10, chains=3, rng=1
    )
    assert list(fp.times) == [0, 0, 0]
    assert not fp.censored.any() and fp.events == 3
    assert np.array_equal(fp.final, np.broadcast_to(x0, (3, 4, 2)))


def test_censored_chain_is_not_an_event():
    x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    # a step matrix (here γ I): no absorption test, so the chains run to the budget
    model = ms.SoftmaxChain(beta=1.0, gamma=0.5 * np.eye(2))
    fp = ms.first_passage(model, x0, ms.LeaveBall(100.0), max_steps=25, chains=4, rng=1)
    assert list(fp.times) == [25] * 4 and not fp.absorbed.any()
    assert fp.censored.all() and fp.events == 0
    frame = fp.to_frame()
    assert frame["censored"].all() and (frame["steps"] == 25).all()


def test_mixed_events_and_censoring_per_chain():
    """Per-chain initial states: chain 0 starts collapsed (event at 0), chain 1 collapses under the
    β = 0 flow, chain 2 cannot collapse within its budget."""
    x0 = np.array(
        [
            [[0.0, 0.0], [0.0, 0.0], [1e-3, 0.0]],
            [[-1.0, 0.0], [1.0, 0.0], [0.0, 0.0]],
            [[-1e6, 0.0], [1e6, 0.0], [0.0, 0.0]],
        ]
    )
    fp = ms.first_passage(
        ms.SoftmaxFlow(beta=0.0, gamma=0.5), x0, ms.Collapse(0.01), max_steps=20, rng=0
    )
    assert list(fp.times) == [0, 8, 20]  # 2 · 0.5^t <= 0.01 first at t = 8
    assert list(fp.censored) == [False, False, True]
    assert fp.events == 2


def test_leave_ball_per_chain_centers():
    """Default centers are each chain's own initial state."""
    x0 = np.array([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [3.0, 0.0]]])
    fp = ms.first_passage(
        ms.SoftmaxFlow(beta=0.0, gamma=0.5), x0, ms.LeaveBall(0.6), max_steps=5, rng=0
    )
    # each token moves γ/2 · separation per step: 0.25 and 0.75 (exits at step 1); chain 0's
    # tokens are within 0.6 of both of its centres from step 3 on (0.4375, 0.5625): absorbed
    assert list(fp.times) == [3, 1]
    assert list(fp.censored) == [False, False] and list(fp.absorbed) == [True, False]


def test_hull_distance_kernel_matches_exact_distance():
    """hull_dist2 with a negative stop is the squared distance itself (0 inside the hull)."""
    rng = np.random.default_rng(11)
    worst = 0.0
    for d in (2, 3):
        for _ in range(200):
            _, pts = _random_hull(rng, d)
            pts = np.ascontiguousarray(pts, dtype=float)
            m = pts.shape[0]
            for p in _query_points(rng, pts):
                got = _events.hull_dist2(
                    np.ascontiguousarray(p, dtype=float),
                    pts,
                    np.arange(m, dtype=np.int64),
                    -1.0,
                    _events.hull_work(m, d),
                )
                worst = max(worst, abs(math.sqrt(got) - ref.hull_distance(p, pts)))
    assert worst < 1e-12, worst
