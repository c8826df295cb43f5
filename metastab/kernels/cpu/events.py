"""Stopping events evaluated on one configuration: one test per event code (``leave_ball``,
``reach``, ``leave_hull``, ``collapse``, ``clusters``, ``uniform_order``), :func:`event_hit` over
all of them, and the point-to-hull distance :func:`hull_dist2` (Wolfe's min-norm-point
algorithm) that ``leave_hull`` uses."""

import numpy as np
from numba import njit

from .. import leaves
from ..arith import mul
from ..cache import njit_keyed
from ..params import (
    CLUSTERS,
    COLLAPSE,
    JIT,
    JIT_NO_NRT,
    LEAVE_BALL,
    LEAVE_HULL,
    LEAVE_UNIFORM_1,
    LEAVE_UNIFORM_2,
    REACH,
    REACH_UNIFORM_1,
    REACH_UNIFORM_2,
)
from .clustering import cluster_count
from .order import order_parameter

# cached only while the kernel files it uses are unchanged (see cache)
_jit = njit_keyed()

# Wolfe's min-norm-point algorithm, written once for both targets (leaves.hull_distance)
_shrink = njit(_nrt=False)(leaves.corral_step(mul))
_affine_min = njit(_nrt=False)(leaves.affine_minimiser(mul))


@njit(inline="always")
def _coord(pts, co, j, k, d):
    """Coordinate k of point j: rows of a 2-D array here (the device's are flat)."""
    return pts[j, k]


_hull = njit(_nrt=False)(leaves.hull_distance(mul, _coord, _affine_min, _shrink))


@_jit(**JIT_NO_NRT)
def _dist2(a, b):
    acc = 0.0
    for k in range(a.shape[0]):
        diff = a[k] - b[k]
        acc += diff * diff
    return acc


@_jit(**JIT)
def hull_work(n, d):
    """Scratch buffers of :func:`hull_dist2` for up to n points in R^d (one set per chain): q, S
    and w of ``leaves.hull_scratch``."""
    return (
        np.empty(n * d),
        np.empty(d + 2, np.int64),
        np.empty(2 * (d + 2) + (d + 3) * (d + 3) + (d + 3) + d),
    )


@_jit(**JIT_NO_NRT)
def hull_dist2(p, pts, members, stop, work):
    """dist(p, conv{pts[j] : j in members})^2, or, as soon as it is known to be <= ``stop``, some
    value <= ``stop`` (pass stop < 0 for the distance itself): Wolfe's (1976) min-norm-point
    algorithm (``leaves.hull_distance``) on the rows of ``pts``, in the scratch of
    :func:`hull_work`."""
    q, S, w = work
    return _hull(p, 0, pts, 0, members, 0, members.shape[0], stop, p.shape[0], q, S, w)


@_jit(**JIT_NO_NRT)
def leave_ball(ev, c, x, work):
    """LEAVE_BALL: some |x_i - centers_i| > radii_i."""
    centers = _row(ev.centers, c)
    radii = _row(ev.radii, c)
    for i in range(x.shape[0]):
        if _dist2(x[i], centers[i]) > radii[i] * radii[i]:
            return True
    return False


@_jit(**JIT_NO_NRT)
def reach(ev, c, x, work):
    """REACH: every |x_i - centers_i| <= radii_i."""
    centers = _row(ev.centers, c)
    radii = _row(ev.radii, c)
    for i in range(x.shape[0]):
        if not _dist2(x[i], centers[i]) <= radii[i] * radii[i]:
            return False
    return True


@_jit(**JIT_NO_NRT)
def leave_hull(ev, c, x, work):
    """LEAVE_HULL: some dist(x_i, conv{centers_j : groups_j == groups_i}) > radii_i, with the
    members of group g in members[starts[g]:starts[g + 1]]."""
    centers = _row(ev.centers, c)
    radii = _row(ev.radii, c)
    for i in range(x.shape[0]):
        g = ev.groups[i]
        own = ev.members[ev.starts[g] : ev.starts[g + 1]]
        r2 = radii[i] * radii[i]
        # no function of its own for this test: numba would optimise and emit hull_dist2 once
        # more in its module (a call level costs about 0.7 s of a cold LeaveHull run)
        if hull_dist2(x[i], centers, own, r2, work) > r2:
            return True
    return False


@_jit(**JIT_NO_NRT)
def collapse(ev, c, x, work):
    """COLLAPSE: the diameter of x is at most ev.scalar."""
    n = x.shape[0]
    lim = ev.scalar * ev.scalar
    for i in range(n):
        for j in range(i + 1, n):
            if not _dist2(x[i], x[j]) <= lim:
                return False
    return True


@_jit(**JIT_NO_NRT)
def clusters(ev, c, x, work):
    """CLUSTERS: at most ``at_most`` connected components of {cos(x_i, x_j) >= scalar}."""
    return cluster_count(x, ev.scalar) <= ev.at_most


@_jit(**JIT_NO_NRT)
def uniform_order(ev, x, degree, away):
    """LEAVE_UNIFORM_* (``away``): m_degree(x) >= ev.scalar; REACH_UNIFORM_*: m_degree(x) <=
    ev.scalar (:func:`.order.order_parameter`)."""
    m = order_parameter(x, degree)
    if away:
        return m >= ev.scalar
    return m <= ev.scalar


@njit(inline="always")
def test_event(ev, c, x, work, code):
    """The test of the event ``code`` on the configuration x of chain c (centers and radii are
    chain c's rows, or the shared row 0). Inlined: where ``code`` is a constant of the kernel,
    only that event's test is compiled into it."""
    if code == LEAVE_BALL:
        return leave_ball(ev, c, x, work)
    if code == REACH:
        return reach(ev, c, x, work)
    if code == LEAVE_HULL:
        return leave_hull(ev, c, x, work)
    if code == COLLAPSE:
        return collapse(ev, c, x, work)
    if code == CLUSTERS:
        return clusters(ev, c, x, work)
    if code == LEAVE_UNIFORM_1 or code == LEAVE_UNIFORM_2:
        return uniform_order(ev, x, 1 if code == LEAVE_UNIFORM_1 else 2, True)
    if code == REACH_UNIFORM_1 or code == REACH_UNIFORM_2:
        return uniform_order(ev, x, 1 if code == REACH_UNIFORM_1 else 2, False)
    return False


@_jit(**JIT_NO_NRT)
def event_hit(ev, c, x, work):
    """Does the configuration x of chain c satisfy the stopping event ``ev`` (an EventArrays)?
    :func:`test_event` of its code, for the kernels that serve every event."""
    return test_event(ev, c, x, work, ev.code)


@_jit(**JIT)  # returns a view: it must carry its reference
def _row(a, c):
    """a[c] for per-chain arrays, a[0] for shared ones (leading size 1)."""
    if a.shape[0] > 1:
        return a[c]
    return a[0]
