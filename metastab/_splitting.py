"""Numba kernels of adaptive multilevel splitting (:mod:`metastab.splitting`).

Pure functions over arrays, like :mod:`metastab._kernels`, whose xoshiro256** streams, SA_P step
(:func:`~metastab._kernels.chain_step`), event test and hull distance they reuse; the accelerated
mode takes the exact event-driven step :func:`metastab._accelerated.jump`.

**Reaction coordinate.** For a LeaveBall or LeaveHull event with radii r_i,
ξ(X) = max_i dist(x_i, K_i) / r_i, K_i the ball centre c_i or the group hull
conv{x_j^0 : groups_j = groups_i}: the quantity the event thresholds, in units of the radius
(the event holds when ξ > 1, up to rounding; the kernels decide the event with
:func:`~metastab._kernels.event_hit` itself, so it is exactly that of ``first_passage``).

**One call** advances replicas until they meet the event, fall to ξ <= ``low`` (the reference
set), rise above ``high``, exhaust their step budget, or fill their record buffer, and records
(ξ, step, configuration) whenever ξ exceeds the replica's running maximum: these records are the
states at which a replica's path first exceeds each level, which is what splitting branches from.
"""

import math

import numpy as np
from numba import njit, prange

from ._accelerated import jump, jump_work, merge_groups
from ._kernels import (_JIT, LEAVE_BALL, _dist2, _row, chain_step, chain_work, event_hit,
                       hull_dist2, hull_work, next_uniform)

# Why a replica stopped.
IN_A, IN_B, ABOVE, BUDGET, FULL = 0, 1, 2, 3, 4


@njit(**_JIT)
def coordinate(code, x, centers, radii, groups, starts, members, work):
    """ξ(x) = max_i dist(x_i, K_i) / radii[i] (module notes) for LEAVE_BALL or LEAVE_HULL.

    The hull distance is :func:`~metastab._kernels.hull_dist2` (Wolfe's min-norm point) asked
    with a negative threshold, so that it never stops early.
    """
    n = x.shape[0]
    top = 0.0
    for i in range(n):
        if code == LEAVE_BALL:
            d2 = _dist2(x[i], centers[i])
        else:
            g = groups[i]
            own = members[starts[g]:starts[g + 1]]
            d2 = hull_dist2(x[i], centers, own, -1.0, work)
        xi = math.sqrt(d2) / radii[i]
        if xi > top:
            top = xi
    return top


@njit(parallel=True, **_JIT)
def excursions(X, clock, level, state, accelerated, B, beta, gamma, P, use_P, tol,
               ev_code, centers, radii, groups, starts, members, ev_scalar, low, high,
               max_steps, rec_level, rec_time, rec_state, n_rec, status):
    """Advance every replica c from ``X[c]`` (in place) until it stops; ``status[c]`` says why.

    A step is one step of SA_P (:func:`~metastab._kernels.chain_step` on ``n`` uniforms of the
    replica's stream ``state[c]``, and that stream for its rare extra draws, exactly as
    ``_kernels.advance``; ``clock[c]`` += 1), or with
    ``accelerated`` one event of :func:`~metastab._accelerated.jump` (merge at ``tol``, geometric
    wait, the step with a cross pick; ``clock[c]`` += the wait; then the merge at ``tol`` that the
    next jump would start with, so that states are seen merged). After each step, in this order:
    the event holds -> IN_B (recorded with level inf); ξ > ``level[c]`` -> ``level[c]`` = ξ and
    a record (ξ, clock, configuration) at ``rec_*[c, n_rec[c]]``; ξ <= ``low`` -> IN_A;
    ξ > ``high`` -> ABOVE. Before each step: ``clock[c] >= max_steps`` -> BUDGET (also when the
    accelerated wait would pass it; the clock is then set to ``max_steps``); a full record buffer
    -> FULL (call again with a fresh buffer to continue: the stream resumes where it stopped).
    ``n_rec[c]`` counts this call's records.
    """
    C, n, d = X.shape
    cap = rec_level.shape[1]
    for c in prange(C):
        x = X[c]
        st = state[c]
        out = np.empty((n, d))
        u = np.empty(n)
        cw = chain_work(n, d)
        jw = jump_work(n, d)
        hw = hull_work(n, d)
        cen = _row(centers, c)
        rad = _row(radii, c)
        n_rec[c] = 0
        while True:
            if clock[c] >= max_steps:
                status[c] = BUDGET
                break
            if n_rec[c] == cap:
                status[c] = FULL
                break
            if accelerated:
                wait = jump(x, B, beta, gamma, P, use_P, tol, st, max_steps - clock[c], jw)
                if wait == np.inf:
                    clock[c] = max_steps
                    status[c] = BUDGET
                    break
                clock[c] += wait
                # merge now what the next jump would merge first, so that a token back within
                # the merge distance of its group point is seen there (else the next jump's wait
                # would be drawn from the frozen configuration before ξ could see the return)
                merge_groups(x, tol, jw[0], jw[1], jw[2], jw[3], jw[4])
            else:
                for i in range(n):
                    u[i] = next_uniform(st)
                chain_step(x, B, beta, gamma, P, use_P, u, st, out, cw)
                for i in range(n):
                    for k in range(d):
                        x[i, k] = out[i, k]
                clock[c] += 1.0
            if event_hit(ev_code, x, cen, rad, groups, starts, members, ev_scalar, hw):
                r = n_rec[c]
                level[c] = np.inf
                rec_level[c, r] = np.inf
                rec_time[c, r] = clock[c]
                rec_state[c, r] = x
                n_rec[c] = r + 1
                status[c] = IN_B
                break
            xi = coordinate(ev_code, x, cen, rad, groups, starts, members, hw)
            if xi > level[c]:
                r = n_rec[c]
                level[c] = xi
                rec_level[c, r] = xi
                rec_time[c, r] = clock[c]
                rec_state[c, r] = x
                n_rec[c] = r + 1
            if xi <= low:
                status[c] = IN_A
                break
            if xi > high:
                status[c] = ABOVE
                break


@njit(parallel=True, **_JIT)
def coordinates(X, ev_code, centers, radii, groups, starts, members, out):
    """out[c] = ξ(X[c]) (see :func:`coordinate`)."""
    C, n, d = X.shape
    for c in prange(C):
        out[c] = coordinate(ev_code, X[c], _row(centers, c), _row(radii, c), groups, starts,
                            members, hull_work(n, d))
