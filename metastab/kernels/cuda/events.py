"""Stopping events on the device: the CPU's :func:`metastab.kernels.events.event_hit`.

LEAVE_BALL, REACH and COLLAPSE are evaluated by the block of a chain inside its step kernel
(:func:`event_hit_for`): the tokens (pairs) split over the threads and meet in a shared flag.
LEAVE_HULL runs Wolfe's min-norm-point algorithm (:func:`hull_dist2`, the CPU's leaf
``leaves.hull_distance`` on flat scratch arrays) in a kernel of its own, :func:`leave_hull`, one
thread per chain, launched after each step: inlined in the step kernels, its serial loops took
their registers from 74-108 to 145-168 per thread. The answer is the CPU's on the same
configuration (under the simulator; on a device the hull's roundings may differ).
The order-parameter events (LEAVE_UNIFORM_*, REACH_UNIFORM_*) split the coordinates (m_1) or the
rows of the second moment (m_2) over the team's threads and sum their terms in order
(:mod:`metastab.kernels.order`): the CPU's bits.
"""

import functools

from numba import cuda

from .. import leaves, order
from ..params import (
    COLLAPSE,
    LEAVE_BALL,
    LEAVE_UNIFORM_1,
    LEAVE_UNIFORM_2,
    REACH,
    REACH_UNIFORM_1,
    REACH_UNIFORM_2,
)
from .arith import mul

# Wolfe's min-norm-point algorithm: the CPU's leaves (leaves.hull_distance), on flat arrays
_shrink = cuda.jit(device=True)(leaves.corral_step(mul))
_affine_min = cuda.jit(device=True)(leaves.affine_minimiser(mul))
hull_scratch = leaves.hull_scratch


@cuda.jit(device=True)
def _coord(pts, co, j, k, d):
    """Coordinate k of point j of the flat, token-major ``pts`` from offset ``co``."""
    return pts[co + j * d + k]


hull_dist2 = cuda.jit(device=True)(leaves.hull_distance(mul, _coord, _affine_min, _shrink))


@cuda.jit(device=True)
def _token_minor(x, i, k, n):
    """Coordinate k of token i of the team's token-minor buffer."""
    return x[k * n + i]


# the order parameters: the CPU's leaves (kernels.order) on the token-minor buffer
_coordinate_sum = cuda.jit(device=True)(order.coordinate_sum(_token_minor))
_moment_row = cuda.jit(device=True)(order.moment_row(mul, _token_minor))
_magnetisation = cuda.jit(device=True)(order.magnetisation)
_quadrupole = cuda.jit(device=True)(order.quadrupole(mul))


@cuda.jit(device=True)
def _dist2(x, i, n, d, cen):
    """|x_i - c_i|^2 summed in k ascending: x token-minor (x[k n + i], the block's buffer), the
    centres token-major (cen[i d + k], as the host gives them)."""
    acc = 0.0
    for k in range(d):
        diff = x[k * n + i] - cen[i * d + k]
        acc += mul(diff, diff)
    return acc


@cuda.jit
def leave_hull(X, centers, radii, groups, starts, members, d, t, steps, done, HQ, HS):
    """The LEAVE_HULL test after step t, thread c for chain c (C = X.shape[0] chains, X (C, n d)):
    if some token i of X[c] is farther than radii[c, i] from the hull of its group's centres
    (groups, starts, members: events.event_hit's), then steps[c] = t + 1 and done[c]; chains
    already done are left alone. ``centers`` (1 or C, n d) and ``radii`` (1 or C, n) are per
    chain or shared; HQ[c], HS[c]: chain c's scratch (:func:`hull_scratch`)."""
    c = cuda.grid(1)
    if c >= X.shape[0] or done[c]:
        return
    n = X.shape[1] // d
    x = X[c]
    cen = centers[c if centers.shape[0] > 1 else 0]
    rad = radii[c if radii.shape[0] > 1 else 0]
    hq = HQ[c]
    for i in range(n):
        g = groups[i]
        r2 = mul(rad[i], rad[i])
        m0 = starts[g]
        m1 = starts[g + 1]
        if hull_dist2(x, i * d, cen, 0, members, m0, m1, r2, d, hq, HS[c], hq[n * d :]) > r2:
            steps[c] = t + 1
            done[c] = True
            return


@functools.cache
def event_hit_for(code: int):
    """The device function ``event_hit(c, x, n, d, centers, radii, scalar, flag, tid, T)`` of the
    event ``code`` (LEAVE_BALL, REACH, COLLAPSE or an order-parameter event), a constant of the
    compiled code (the other events' paths are not in it): whether chain c's configuration x
    (flat, n d) meets the event (events.event_hit), by the T threads of its team (``tid``: this
    thread's; every thread of the block calls it, for its barriers, and its team's threads get
    the answer); x is the team's buffer, token-minor (x[k n + i], see :mod:`.euclidean_steps`).
    ``centers`` (1 or C, n d) and ``radii`` (1 or C, n) are per chain or shared; ``flag``: the
    team's shared int32. The order-parameter events keep their d terms in x[n d : n d + d], the
    update slot of the buffer, which every step writes before it reads it."""
    uniform = code in (LEAVE_UNIFORM_1, LEAVE_UNIFORM_2, REACH_UNIFORM_1, REACH_UNIFORM_2)
    degree = 1 if code in (LEAVE_UNIFORM_1, REACH_UNIFORM_1) else 2
    away = code in (LEAVE_UNIFORM_1, LEAVE_UNIFORM_2)

    @cuda.jit(device=True)
    def event_hit(c, x, n, d, centers, radii, scalar, flag, tid, T):
        cen = centers[c if centers.shape[0] > 1 else 0]
        rad = radii[c if radii.shape[0] > 1 else 0]
        if tid == 0:
            flag[0] = 0
        cuda.syncthreads()
        # flag: LEAVE_BALL: some token out; REACH / COLLAPSE: a token (pair) not in
        if code == LEAVE_BALL or code == REACH:
            for i in range(tid, n, T):
                dist = _dist2(x, i, n, d, cen)
                r2 = mul(rad[i], rad[i])
                if (code == LEAVE_BALL and dist > r2) or (code == REACH and not dist <= r2):
                    flag[0] = 1
        elif code == COLLAPSE:
            lim = mul(scalar, scalar)
            for i in range(tid, n, T):
                for j in range(i + 1, n):
                    acc = 0.0
                    for k in range(d):
                        diff = x[k * n + i] - x[k * n + j]
                        acc += mul(diff, diff)
                    if not acc <= lim:
                        flag[0] = 1
        elif uniform:  # m_1: the coordinates' s_k^2; m_2: the rows' r_k; summed by thread 0
            nd = n * d
            shift = n / d
            for k in range(tid, d, T):
                if degree == 1:
                    s = _coordinate_sum(x, k, n)
                    x[nd + k] = mul(s, s)
                else:
                    x[nd + k] = _moment_row(x, k, n, d, shift)
            cuda.syncthreads()
            if tid == 0:
                total = 0.0
                for k in range(d):
                    total += x[nd + k]
                m = _magnetisation(total, n) if degree == 1 else _quadrupole(total, n, d)
                if (away and m >= scalar) or (not away and m <= scalar):
                    flag[0] = 1
        cuda.syncthreads()
        out = flag[0] != 0
        cuda.syncthreads()  # nobody clears the flag before everyone has read it
        if code == REACH or code == COLLAPSE:
            return not out
        return out

    return event_hit
