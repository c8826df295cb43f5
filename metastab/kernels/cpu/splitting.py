"""Numba kernels of adaptive multilevel splitting (:mod:`metastab.engine.ams_chains`).

Pure functions over arrays, like the other kernels, whose xoshiro256** streams, SA_P step
(:func:`~metastab.kernels.cpu.euclidean_steps.chain_step`), event test and hull distance they reuse;
the accelerated mode takes the exact event-driven step :func:`metastab.kernels.accelerated.jump`.

**Reaction coordinate.** For a LeaveBall or LeaveHull event with radii r_i,
ξ(X) = max_i dist(x_i, K_i) / r_i, K_i the ball centre c_i or the group hull
conv{x_j^0 : groups_j = groups_i}: the quantity the event thresholds, in units of the radius
(the event holds when ξ > 1, up to rounding; the kernels decide the event with
:func:`~metastab.kernels.events.event_hit` itself, so it is exactly that of ``first_passage``).

**One call** advances replicas until they meet the event, fall to ξ <= ``low`` (the reference
set), rise above ``high``, exhaust their step budget, or fill their record buffer, and records
(ξ, step, configuration) whenever ξ exceeds the replica's running maximum: these records are the
states at which a replica's path first exceeds each level, which is what splitting branches from.
"""

import functools
import math
from typing import NamedTuple

import numpy as np

from ..cache import njit_keyed
from ..params import JIT, JIT_NO_NRT, LEAVE_BALL
from ..streams import next_uniform
from .accelerated import jump, jump_work, merge_groups
from .euclidean_steps import chain_step, chain_work
from .events import _dist2, _row, event_hit, hull_dist2, hull_work
from .threads import over_chains

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()

# Why a replica stopped.
IN_A, IN_B, ABOVE, BUDGET, FULL = 0, 1, 2, 3, 4


class Bounds(NamedTuple):
    """Where a replica stops: at xi <= low (back in A), xi > high, or clock >= max_steps."""

    low: float
    high: float
    max_steps: float


class Walk(NamedTuple):
    """Per-replica state of :func:`excursions` (arrays of length C, updated in place)."""

    clock: np.ndarray  # float64 steps taken
    level: np.ndarray  # float64 running maximum of xi
    status: np.ndarray  # int64 why the replica stopped (IN_A, IN_B, ABOVE, BUDGET, FULL)


class Records(NamedTuple):
    """Record buffers of one call of :func:`excursions` (capacity R per replica)."""

    level: np.ndarray  # (C, R) xi at each record (inf: the event)
    time: np.ndarray  # (C, R) clock at each record
    state: np.ndarray  # (C, R, n, d) configuration at each record
    written: np.ndarray  # (C,) int64 records written by this call (not "count": tuple.count)


@_jit(**JIT_NO_NRT)
def coordinate(ev, c, x, work):
    """ξ(x) = max_i dist(x_i, K_i) / radii[i] (module notes) of chain c's configuration x for a
    LEAVE_BALL or LEAVE_HULL event ``ev``.

    The hull distance is :func:`~metastab.kernels.events.hull_dist2` (Wolfe's min-norm point) asked
    with a negative threshold, so that it never stops early.
    """
    n = x.shape[0]
    centers = _row(ev.centers, c)
    radii = _row(ev.radii, c)
    top = 0.0
    for i in range(n):
        if ev.code == LEAVE_BALL:
            d2 = _dist2(x[i], centers[i])
        else:
            g = ev.groups[i]
            own = ev.members[ev.starts[g] : ev.starts[g + 1]]
            d2 = hull_dist2(x[i], centers, own, -1.0, work)
        xi = math.sqrt(d2) / radii[i]
        if xi > top:
            top = xi
    return top


@_jit(**JIT_NO_NRT)
def out_of_room(c, bounds, walk, records):
    """Before a step: replica c has used its step budget (BUDGET) or its record buffer (FULL);
    sets its status and returns True if so."""
    if walk.clock[c] >= bounds.max_steps:
        walk.status[c] = BUDGET
        return True
    if records.written[c] == records.level.shape[1]:
        walk.status[c] = FULL
        return True
    return False


@_jit(**JIT)
def record(c, xi, x, walk, records):
    """A record of replica c: its new running maximum ``xi``, the clock and the configuration."""
    r = records.written[c]
    walk.level[c] = xi
    records.level[c, r] = xi
    records.time[c, r] = walk.clock[c]
    records.state[c, r] = x
    records.written[c] = r + 1


@_jit(**JIT)
def scored(c, xi, x, bounds, walk, records):
    """After a step that did not meet the event, with score ``xi``: a record if xi exceeds the
    running maximum; True (status IN_A or ABOVE) if replica c stops there."""
    if xi > walk.level[c]:
        record(c, xi, x, walk, records)
    if xi <= bounds.low:
        walk.status[c] = IN_A
        return True
    if xi > bounds.high:
        walk.status[c] = ABOVE
        return True
    return False


def excursions(X, state, dyn, gamma, tol, accelerated, ev, bounds, walk, records, *, threads=1):
    """Advance every replica c from ``X[c]`` (in place) until it stops; ``walk.status[c]`` says
    why.

    A step is one step of SA_P (``dyn``, a :class:`~metastab.kernels.params.Dynamics`, with the
    constant scalar step ``gamma``): :func:`~metastab.kernels.cpu.euclidean_steps.chain_step` on
    ``n`` uniforms of the replica's stream ``state[c]``, and that stream for its rare extra draws,
    exactly as ``drivers.advance``; ``clock[c]`` += 1), or with ``accelerated`` one event of
    :func:`~metastab.kernels.cpu.accelerated.jump` (merge at ``tol``, geometric wait, the step
    with a cross pick; ``clock[c]`` += the wait). After each step, in this order:
    the event holds -> IN_B (recorded with level inf), tested before any merge as
    ``advance_accelerated`` tests it; with ``accelerated``, the merge at ``tol`` that the next
    jump would start with, so that ξ sees states merged; ξ > ``level[c]`` -> ``level[c]`` = ξ and
    a record (ξ, clock, configuration) at ``records.*[c, written[c]]``; ξ <= ``bounds.low`` -> IN_A;
    ξ > ``bounds.high`` -> ABOVE. Before each step: ``clock[c] >= bounds.max_steps`` -> BUDGET
    (also when the accelerated wait would pass it; the clock is then set to ``max_steps``); a
    full record buffer -> FULL (call again with a fresh buffer to continue: the stream resumes
    where it stopped). ``records.written[c]`` counts this call's records.

    The replicas run in slices on ``threads`` threads (:func:`.threads.over_chains`); each draws
    from its own stream, so its path does not depend on the slices.
    """
    kernel = _excursions_for(bool(accelerated))
    args = (X, state, dyn, gamma, tol, ev, bounds, walk, records)
    over_chains(kernel, args, X.shape[0], threads)


@functools.cache
def _excursions_for(accelerated: bool):
    """The kernel of :func:`excursions` for the replicas lo <= c < hi, with the accelerated
    step or SA_P's (a constant of the compiled code: it holds one of the two only)."""

    @_jit(**JIT)
    def excursions_slice(X, state, dyn, gamma, tol, ev, bounds, walk, records, lo, hi):
        n, d = X.shape[1:]
        B, P, beta, use_P = dyn.B, dyn.P, dyn.beta, dyn.use_P
        max_steps = bounds.max_steps
        clock = walk.clock
        status = walk.status
        out = np.empty((n, d))
        u = np.empty(n)
        hw = hull_work(n, d)
        if accelerated:
            jw = jump_work(n, d)
        else:
            cw = chain_work(n, d)
        for c in range(lo, hi):
            x = X[c]
            st = state[c]
            records.written[c] = 0
            while True:
                if out_of_room(c, bounds, walk, records):
                    break
                if accelerated:
                    wait = jump(
                        x, B, beta, gamma, P, use_P, False, tol, st, max_steps - clock[c], jw
                    )
                    if wait == np.inf:
                        clock[c] = max_steps
                        status[c] = BUDGET
                        break
                    clock[c] += wait
                else:
                    for i in range(n):
                        u[i] = next_uniform(st)
                    chain_step(x, B, beta, gamma, P, use_P, u, st, out, cw, cw[-1])
                    for i in range(n):
                        for k in range(d):
                            x[i, k] = out[i, k]
                    clock[c] += 1.0
                if event_hit(ev, c, x, hw):
                    record(c, np.inf, x, walk, records)
                    status[c] = IN_B
                    break
                if accelerated:
                    # after the event test, as advance_accelerated tests it (so that both engines
                    # step the same chain, also when a merge itself would meet the event): merge now
                    # what the next jump would merge first, so that a token back within the merge
                    # distance of its group point is seen there (else the next jump's wait would be
                    # drawn from the frozen configuration before ξ could see the return)
                    merge_groups(x, tol, jw[0], jw[1], jw[2], jw[3], jw[4])
                xi = coordinate(ev, c, x, hw)
                if scored(c, xi, x, bounds, walk, records):
                    break

    return excursions_slice


def coordinates(X, ev, out, *, threads=1):
    """out[c] = ξ(X[c]) (see :func:`coordinate`), in slices of c on ``threads`` threads."""
    over_chains(_coordinates, (X, ev, out), X.shape[0], threads)


@_jit(**JIT)
def _coordinates(X, ev, out, lo, hi):
    work = hull_work(X.shape[1], X.shape[2])
    for c in range(lo, hi):
        out[c] = coordinate(ev, c, X[c], work)
