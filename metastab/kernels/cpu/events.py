"""Stopping events evaluated on one configuration: one test per event code (``leave_ball``,
``reach``, ``leave_hull``, ``collapse``, ``clusters``), :func:`event_hit` over all of them, and
the point-to-hull distance :func:`hull_dist2` (Wolfe's min-norm-point algorithm) that
``leave_hull`` uses."""

import numpy as np
from numba import njit

from .. import leaves
from ..arith import mul
from ..cache import njit_keyed
from ..leaves import HULL_EPS
from ..params import CLUSTERS, COLLAPSE, JIT, JIT_NO_NRT, LEAVE_BALL, LEAVE_HULL, REACH
from .clustering import cluster_count

# cached only while the kernel files it uses are unchanged (see cache)
_jit = njit_keyed()

# Wolfe's min-norm-point algorithm (see hull_dist2): a cap on major cycles that is never reached
# in exact arithmetic (the method is finite); its tolerance is leaves.HULL_EPS.
_HULL_MAX_ITER = 1000
# a minor cycle's move, written once for both targets
_shrink = njit(_nrt=False)(leaves.corral_step(mul))


@_jit(**JIT_NO_NRT)
def _dist2(a, b):
    acc = 0.0
    for k in range(a.shape[0]):
        diff = a[k] - b[k]
        acc += diff * diff
    return acc


@_jit(**JIT)
def hull_work(n, d):
    """Scratch buffers of :func:`hull_dist2` for up to n points in R^d (one set per chain)."""
    return (
        np.empty((n, d)),
        np.empty(d + 2, np.int64),
        np.empty(d + 2),
        np.empty(d + 2),
        np.empty((d + 3, d + 3)),
        np.empty(d + 3),
        np.empty(d),
    )


@_jit(**JIT_NO_NRT)
def _affine_min(q, S, k, a, M, rhs):
    """a[:k] = the affine weights of the min-norm point of aff{q[S[0]], ..., q[S[k-1]]}.

    Solves [G 1; 1' 0] [a; mu] = [0; 1] with G_ij = <q_Si, q_Sj> by Gaussian elimination with
    partial pivoting (k <= d + 1, so the system is tiny).
    """
    d = q.shape[1]
    K = k + 1
    for i in range(k):
        for j in range(k):
            acc = 0.0
            for m in range(d):
                acc += q[S[i], m] * q[S[j], m]
            M[i, j] = acc
        M[i, k] = 1.0
        M[k, i] = 1.0
        rhs[i] = 0.0
    M[k, k] = 0.0
    rhs[k] = 1.0
    for c in range(K):
        piv = c
        for r in range(c + 1, K):
            if abs(M[r, c]) > abs(M[piv, c]):
                piv = r
        if piv != c:
            for j in range(K):
                M[c, j], M[piv, j] = M[piv, j], M[c, j]
            rhs[c], rhs[piv] = rhs[piv], rhs[c]
        for r in range(c + 1, K):
            f = M[r, c] / M[c, c]
            for j in range(c, K):
                M[r, j] -= f * M[c, j]
            rhs[r] -= f * rhs[c]
    for c in range(K - 1, -1, -1):
        acc = rhs[c]
        for j in range(c + 1, K):
            acc -= M[c, j] * rhs[j]
        rhs[c] = acc / M[c, c]
    for i in range(k):
        a[i] = rhs[i]


@_jit(**JIT_NO_NRT)
def hull_dist2(p, pts, members, stop, work):
    """dist(p, conv{pts[j] : j in members})^2, or, as soon as it is known to be <= ``stop``, some
    value <= ``stop`` (pass stop < 0 for the distance itself).

    Wolfe's (1976) min-norm-point algorithm on q_j = pts[j] - p: a finite active-set method that
    keeps a corral S of at most d + 1 affinely independent points and the min-norm point x of
    conv(q_S); it stops when the Wolfe gap |x|^2 - min_j <x, q_j> is below HULL_EPS * max |q_j|^2
    (x is then the projection up to rounding) or when S spans R^d (then p is inside). Exact where
    Frank-Wolfe-type certificates stall on thin hulls. Since |x|^2 >= dist^2, it answers "inside"
    as soon as |x|^2 <= stop. The min-norm point x (the projection minus p) is left in work[6].
    """
    q, S, w, a, M, rhs, x = work
    m = members.shape[0]
    d = p.shape[0]
    scale = 0.0
    best, jbest = np.inf, 0
    for r in range(m):
        acc = 0.0
        for k in range(d):
            q[r, k] = pts[members[r], k] - p[k]
            acc += q[r, k] * q[r, k]
        scale = max(scale, acc)
        if acc < best:
            best, jbest = acc, r
    if best <= stop:
        return best
    S[0] = jbest
    w[0] = 1.0
    size = 1
    for k in range(d):
        x[k] = q[jbest, k]
    xx = best
    for _ in range(_HULL_MAX_ITER):
        j, lo = -1, np.inf
        for r in range(m):
            acc = 0.0
            for k in range(d):
                acc += x[k] * q[r, k]
            if acc < lo:
                lo, j = acc, r
        if xx - lo <= HULL_EPS * scale or size == d + 1:
            break
        fresh = True
        for i in range(size):
            if S[i] == j:
                fresh = False
        if not fresh:  # rounding: the best vertex is already in the corral
            break
        S[size] = j
        w[size] = 0.0
        size += 1
        while True:  # minor cycles: move towards the affine minimiser, drop points that hit zero
            _affine_min(q, S, size, a, M, rhs)
            size, last = _shrink(S, w, a, 0, size)
            if last:
                break
        xx = 0.0
        for k in range(d):
            acc = 0.0
            for i in range(size):
                acc += w[i] * q[S[i], k]
            x[k] = acc
            xx += acc * acc
        if xx <= stop:
            return xx
    if size == d + 1:
        return 0.0
    return xx


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
