"""Stopping events on the device: the CPU's :func:`metastab.kernels.events.event_hit`.

LEAVE_BALL, REACH and COLLAPSE are evaluated by the block of a chain inside its step kernel
(:func:`event_hit_for`): the tokens (pairs) split over the threads and meet in a shared flag.
LEAVE_HULL runs Wolfe's min-norm-point algorithm (:func:`hull_dist2`, the CPU's operations on flat
scratch arrays) in a kernel of its own, :func:`leave_hull`, one thread per chain, launched after
each step: inlined in the step kernels, its serial loops took their registers from 74-108 to
145-168 per thread. The answer is the CPU's on the same configuration (under the simulator; on a
device the hull's roundings may differ).
"""

import functools
import math

from numba import cuda

from .. import leaves
from ..cpu.events import _HULL_MAX_ITER
from ..leaves import HULL_EPS
from ..params import COLLAPSE, LEAVE_BALL, REACH
from .arith import mul

# a minor cycle's move, the CPU's (leaves)
_shrink = cuda.jit(device=True)(leaves.corral_step(mul))


@cuda.jit(device=True)
def _dist2(x, i, n, d, cen):
    """|x_i - c_i|^2 summed in k ascending: x token-minor (x[k n + i], the block's buffer), the
    centres token-major (cen[i d + k], as the host gives them)."""
    acc = 0.0
    for k in range(d):
        diff = x[k * n + i] - cen[i * d + k]
        acc += mul(diff, diff)
    return acc


@cuda.jit(device=True)
def _affine_min(q, d, S, k, w):
    """w[a + i] (i < k) = the affine weights of the min-norm point of aff{q_S0, ..., q_Sk-1}
    (events._affine_min: the same elimination); w holds [.., a (d + 2), M (d + 3)^2, rhs]."""
    a = d + 2
    M = 2 * (d + 2)
    rhs = M + (d + 3) * (d + 3)
    L = d + 3  # row stride of M
    K = k + 1
    for i in range(k):
        for j in range(k):
            acc = 0.0
            for m in range(d):
                acc += mul(q[S[i] * d + m], q[S[j] * d + m])
            w[M + i * L + j] = acc
        w[M + i * L + k] = 1.0
        w[M + k * L + i] = 1.0
        w[rhs + i] = 0.0
    w[M + k * L + k] = 0.0
    w[rhs + k] = 1.0
    for c in range(K):
        piv = c
        for r in range(c + 1, K):
            if abs(w[M + r * L + c]) > abs(w[M + piv * L + c]):
                piv = r
        if piv != c:
            for j in range(K):
                tmp = w[M + c * L + j]
                w[M + c * L + j] = w[M + piv * L + j]
                w[M + piv * L + j] = tmp
            tmp = w[rhs + c]
            w[rhs + c] = w[rhs + piv]
            w[rhs + piv] = tmp
        for r in range(c + 1, K):
            f = w[M + r * L + c] / w[M + c * L + c]
            for j in range(c, K):
                w[M + r * L + j] -= mul(f, w[M + c * L + j])
            w[rhs + r] -= mul(f, w[rhs + c])
    for c in range(K - 1, -1, -1):
        acc = w[rhs + c]
        for j in range(c + 1, K):
            acc -= mul(w[M + c * L + j], w[rhs + j])
        w[rhs + c] = acc / w[M + c * L + c]
    for i in range(k):
        w[a + i] = w[rhs + i]


def hull_scratch(n: int, d: int) -> tuple[int, int]:
    """(float64, int64) scratch sizes of :func:`hull_dist2` for groups of up to n points in R^d:
    q (n d), then w (d + 2), a (d + 2), M ((d + 3)^2), rhs (d + 3) and x (d); the corral S."""
    return n * d + 2 * (d + 2) + (d + 3) ** 2 + (d + 3) + d, d + 2


@cuda.jit(device=True)
def hull_dist2(p, po, pts, co, members, m0, m1, stop, d, q, S, w):
    """dist(p, conv{pts[j] : j in members[m0:m1]})^2, or some value <= ``stop`` as soon as that is
    known: events.hull_dist2 (Wolfe 1976) with the same operations. ``q`` holds the shifted
    points, ``w`` the weights and the elimination's work, ``S`` the corral."""
    m = m1 - m0
    xo = 2 * (d + 2) + (d + 3) * (d + 3) + (d + 3)  # the min-norm point x in w
    a = d + 2
    scale = 0.0
    best = math.inf
    jbest = 0
    for r in range(m):
        acc = 0.0
        j = members[m0 + r]
        for k in range(d):
            v = pts[co + j * d + k] - p[po + k]
            q[r * d + k] = v
            acc += mul(v, v)
        scale = max(scale, acc)
        if acc < best:
            best = acc
            jbest = r
    if best <= stop:
        return best
    S[0] = jbest
    w[0] = 1.0
    size = 1
    for k in range(d):
        w[xo + k] = q[jbest * d + k]
    xx = best
    for _ in range(_HULL_MAX_ITER):
        j = -1
        lo = math.inf
        for r in range(m):
            acc = 0.0
            for k in range(d):
                acc += mul(w[xo + k], q[r * d + k])
            if acc < lo:
                lo = acc
                j = r
        if xx - lo <= mul(HULL_EPS, scale) or size == d + 1:
            break
        fresh = True
        for i in range(size):
            if S[i] == j:
                fresh = False
        if not fresh:
            break
        S[size] = j
        w[size] = 0.0
        size += 1
        while True:
            _affine_min(q, d, S, size, w)
            size, last = _shrink(S, w, w, a, size)
            if last:
                break
        xx = 0.0
        for k in range(d):
            acc = 0.0
            for i in range(size):
                acc += mul(w[i], q[S[i] * d + k])
            w[xo + k] = acc
            xx += mul(acc, acc)
        if xx <= stop:
            return xx
    if size == d + 1:
        return 0.0
    return xx


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
    event ``code`` (LEAVE_BALL, REACH or COLLAPSE), a constant of the compiled code (the other
    events' paths are not in it): whether chain c's configuration x (flat, n d) meets the event
    (events.event_hit), by the T threads of its team (``tid``: this thread's; every thread of the
    block calls it, for its barriers, and its team's threads get the answer); x is the team's
    buffer, token-minor (x[k n + i], see :mod:`.euclidean_steps`). ``centers`` (1 or C, n d) and
    ``radii`` (1 or C, n) are per chain or shared; ``flag``: the team's shared int32."""

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
        cuda.syncthreads()
        out = flag[0] != 0
        cuda.syncthreads()  # nobody clears the flag before everyone has read it
        if code == REACH or code == COLLAPSE:
            return not out
        return out

    return event_hit
