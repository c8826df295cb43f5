"""The loop that every CPU driver runs, generic over a model family's step (as umap passes
``dist=`` into one descent loop): chains one after the other, each taking its steps until the
event; the done flags, the call before a run and the stopping test are written once here.

A family gives the loop a :class:`Stepper` of jitted functions, inlined into it (numba IR), for
one model kind and path: its scratch, its step and, where its state lives elsewhere between
steps, what moves it there and back. :func:`loop_for` compiles the loop with the stepper and the
event code as constants, so that a run compiles only its own model's and event's paths
(:mod:`.drivers` picks the stepper and runs the loop on threads).
"""

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit

from ..cache import njit_keyed
from ..params import CLUSTERS, JIT, JIT_NO_NRT, NO_EVENT
from .clustering import cluster_count, record_levels
from .events import hull_work, test_event

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()


@njit(inline="always")
def keep(x, w):
    """A stepper's ``enter`` and ``leave`` where the state stays in x: nothing."""


class Stepper(NamedTuple):
    """One family's step for one model kind and path, as :func:`loop_for` takes it: jitted
    functions inlined into the loop (``T``: the threads that share a step's tokens, or None on
    the chain-parallel path, which then compiles no parallel code)."""

    work: Callable  # work(n, d, T): the step's scratch, allocated once per call of the loop
    step: Callable  # step(x, st, dyn, sched, gamma, s, w, T): x <- its next state, in place
    enter: Callable = keep  # enter(x, w): before a chain's steps of a call
    leave: Callable = keep  # leave(x, w): after them, so that x holds the state


@_jit(**JIT_NO_NRT)
def clusters_reached(ev, c, x, t):
    """The CLUSTERS event at time t: records the cluster count's levels (ev.levels[c]) and
    says whether it is at most ev.at_most. Once a recording chain has reached one cluster every
    level is set, and a chain that records only (at_most 0) is not counted any more."""
    if ev.at_most == 0 and c < ev.levels.shape[0] and not np.isnan(ev.levels[c, 0]):
        return False
    m = cluster_count(x, ev.scalar)
    if c < ev.levels.shape[0]:
        record_levels(ev.levels[c], m, t)
    return m <= ev.at_most


@njit(inline="always")
def stopped(ev, c, x, work, t, times, done, code):
    """Whether chain c meets the event ``ev`` of code ``code`` after the step from time t (at
    time t + 1); if so, it is recorded as stopped at step t + 1. Inlined where ``code`` is a
    constant of the kernel, so that only that event's test is compiled into it."""
    if code == NO_EVENT:
        return False
    if code == CLUSTERS:
        hit = clusters_reached(ev, c, x, t + 1)
    else:
        hit = test_event(ev, c, x, work, code)
    if hit:
        times[c] = t + 1
        done[c] = True
        return True
    return False


@functools.cache
def loop_for(stepper: Stepper, code: int):
    """The loop of ``stepper`` with the event ``code``:
    ``loop(X, state, dyn, sched, t0, nsteps, ev, times, done, T, lo, hi)`` advances the chains
    lo <= c < hi not ``done`` (``drivers.advance``), the step from global time t with
    ``sched.sizes[t - t0]`` (or its one entry); ``nsteps`` 0 checks the event at time t0
    instead of stepping."""
    work, step, enter, leave = stepper

    @_jit(**JIT)
    def loop(X, state, dyn, sched, t0, nsteps, ev, times, done, T, lo, hi):
        C, n, d = X.shape
        sizes = sched.sizes
        hw = hull_work(n, d)
        w = work(n, d, T)
        for c in range(lo, hi):
            if done[c]:
                continue
            x = X[c]
            if nsteps == 0:  # the call before a run: the event at time t0 (see advance)
                stopped(ev, c, x, hw, t0 - 1, times, done, code)
                continue
            st = state[c]
            enter(x, w)
            for t in range(t0, t0 + nsteps):
                gamma = sizes[t - t0 if sizes.shape[0] > 1 else 0]
                step(x, st, dyn, sched, gamma, t - t0, w, T)
                if stopped(ev, c, x, hw, t, times, done, code):
                    break
            leave(x, w)

    return loop
