"""Drivers: many independent chains in parallel (slices of chains on threads), each with its own
xoshiro256** stream (:mod:`.streams`) whose state lives in a caller-owned array, so a chain's path
depends only on its seed: not on the thread count, the chunking of chains or of steps. The
parameters arrive as the NamedTuples of :mod:`.params`; the model kind and the event code choose
the kernel (:func:`kernel_for`), compiled with both as constants, so that a run compiles only its
own model's and event's paths.
"""

import functools

import numpy as np
from numba import njit, prange

from ..arith import fma
from ..cache import njit_keyed
from ..params import CHAIN, CLUSTERS, FLOW, JIT, JIT_NO_NRT, LOCALMAX, NO_EVENT
from ..streams import next_uniform
from .clustering import cluster_count, record_levels
from .events import hull_work, test_event
from .steps import (
    _ROWS,
    _chain_blocks,
    _gram,
    _paths,
    _resolve_pending,
    _row_scores,
    chain_step,
    chain_work,
    copy_rows,
    exp_nonpositive,
    flow_step,
    flow_work,
    hardmax_step,
    hardmax_work,
    has_gram,
    localmax_step,
    localmax_work,
    neighbour_cut,
    thread_work,
    thread_works,
)
from .threads import over_chains

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()


@_jit(parallel=True, **JIT)
def step_tokens(x, B, beta, gamma, P, use_P, u, s, out, pw, G, tw, T):
    """:func:`chain_step` with its blocks of tokens (and of the Gram) split over T threads, then
    the pending picks in token order; ``pw`` and ``G`` are the last two buffers of
    :func:`chain_work`, ``tw`` the threads' buffers (:func:`thread_works`). Same bits as
    chain_step at any T. The only parallel code of the kernels of :func:`_tokens_for`: compiled
    once for all their events (a parallel compilation of each whole kernel cost about twice the
    time)."""
    n, d = x.shape
    nb = (n + _ROWS - 1) // _ROWS
    plain, gram = _paths(x, B, G)
    if G is not None and gram:  # G None: a constant of the compiled code, no Gram code
        ng = G.shape[0]
        for q in prange(T):
            for b in range(q, ng, T):  # dealt round: block b computes n - 32 b columns
                _gram(x, G, tw[0][q], b, b + 1)
    for q in prange(T):
        _chain_blocks(
            x,
            B,
            beta,
            gamma,
            P,
            use_P,
            u,
            out,
            thread_work(tw, q),
            G,
            gram,
            plain,
            q * nb // T,
            (q + 1) * nb // T,
            pw[0],
        )
    _resolve_pending(x, B, beta, gamma, P, use_P, u, s, out, pw)


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
def stopped(ev, c, x, work, t, steps, done, code):
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
        steps[c] = t + 1
        done[c] = True
        return True
    return False


@functools.cache
def _tokens_for(code: int, gram: bool):
    """The kernel of SA_P with fewer chains than threads for the event ``code``: chains one after
    the other, each step's blocks of tokens (and of the Gram, where ``gram``: see
    :func:`.steps.has_gram`) split over the threads. A token's arithmetic does not depend on
    which thread runs its block, so the bits are those of the chain-parallel path."""

    @_jit(**JIT)
    def advance_tokens(X, state, dyn, sched, t0, nsteps, ev, steps, done, T):
        C, n, d = X.shape
        B = dyn.B
        P = dyn.P
        beta = dyn.beta
        use_P = dyn.use_P
        gammas = sched.gammas
        cw = chain_work(n, d)
        pw = cw[-2]
        G = cw[-1] if gram else None  # no Gram: its code is not compiled
        tw = thread_works(T, n, d)
        out = np.empty((n, d))
        u = np.empty(n)
        work = hull_work(n, d)
        for c in range(C):
            if done[c]:
                continue
            x = X[c]
            if nsteps == 0:  # the call before a run: the event at time t0 (see advance)
                stopped(ev, c, x, work, t0 - 1, steps, done, code)
                continue
            st = state[c]
            for t in range(t0, t0 + nsteps):
                gamma = gammas[t - t0 if gammas.shape[0] > 1 else 0]
                for i in range(n):
                    u[i] = next_uniform(st)
                step_tokens(x, B, beta, gamma, P, use_P, u, st, out, pw, G, tw, T)
                copy_rows(out, x)
                if stopped(ev, c, x, work, t, steps, done, code):
                    break

    return advance_tokens


@functools.cache
def _chains_for(kind: int, code: int, gram: bool):
    """The kernel of the model kind ``kind`` and the event ``code`` for the chains
    lo <= c < hi, one after the other (:func:`advance` runs slices of chains on threads), with
    SA_P's Gram code where ``gram`` (:func:`.steps.has_gram`). All three are constants of the
    compiled code: it holds its own paths only."""

    @_jit(**JIT)
    def advance_chains(X, state, dyn, sched, t0, nsteps, ev, steps, done, lo, hi):
        C, n, d = X.shape
        B = dyn.B
        P = dyn.P
        beta = dyn.beta
        use_P = dyn.use_P
        by_point = dyn.by_point
        tol = dyn.tol
        rule = dyn.rule
        gammas = sched.gammas
        margins = sched.margins
        out = np.empty((n, d))
        u = np.empty(n)
        work = hull_work(n, d)
        if kind == CHAIN:
            w = chain_work(n, d)
            G = w[-1] if gram else None  # no Gram: its code is not compiled
        elif kind == FLOW:
            w = flow_work(n, d)
        elif kind == LOCALMAX:
            w = localmax_work(n, d)
        else:
            w = hardmax_work(n, d)
        for c in range(lo, hi):
            if done[c]:
                continue
            x = X[c]
            if nsteps == 0:  # the call before a run: the event at time t0 (see advance)
                stopped(ev, c, x, work, t0 - 1, steps, done, code)
                continue
            st = state[c]
            for t in range(t0, t0 + nsteps):
                gamma = gammas[t - t0 if gammas.shape[0] > 1 else 0]
                if kind == CHAIN:
                    for i in range(n):
                        u[i] = next_uniform(st)
                    chain_step(x, B, beta, gamma, P, use_P, u, st, out, w, G)
                elif kind == FLOW:
                    flow_step(x, B, beta, gamma, P, use_P, out, w)
                elif kind == LOCALMAX:
                    r = margins[t - t0 if margins.shape[0] > 1 else 0]
                    localmax_step(x, B, gamma, P, use_P, r, rule, out, w)
                else:
                    hardmax_step(x, B, gamma, P, use_P, by_point, tol, out, w)
                copy_rows(out, x)
                if stopped(ev, c, x, work, t, steps, done, code):
                    break

    return advance_chains


def _splits_tokens(chains: int, n: int, kind: int, threads: int) -> bool:
    """Whether the run shares each step's blocks of tokens over the threads: fewer SA_P chains
    than threads, and more than one block."""
    return kind == CHAIN and chains < threads and n > _ROWS


def kernel_for(chains: int, n: int, d: int, kind: int, code: int, threads: int):
    """The kernel that :func:`advance` runs for ``chains`` chains of n tokens in R^d of the model
    kind ``kind`` with the event ``code`` on ``threads`` threads (a numba dispatcher, compiled on
    first call; one per kind, event and path, so that a run compiles only what it uses)."""
    gram = kind == CHAIN and has_gram(n, d)
    if _splits_tokens(chains, n, kind, threads):
        return _tokens_for(code, gram)
    return _chains_for(kind, code, gram)


def advance(X, state, dyn, sched, t0, nsteps, ev, steps, done, threads=1):
    """Advance every chain c with ``done[c]`` False by up to ``nsteps`` steps, in place.

    ``X`` (C, n, d) holds the current configurations and ``state`` (C, 4) the chains' streams;
    ``dyn`` (a :class:`Dynamics`) is the model, and the step taken from global time t
    (t0 <= t < t0 + nsteps) uses ``sched.gammas[t - t0]``, or ``sched.gammas[0]`` if it has one
    entry (constant step); the localmax margin r_t is taken from ``sched.margins`` in the same way
    (shared by all chains). After each step the event ``ev`` (an :class:`EventArrays`) is checked;
    a chain that meets it records ``steps[c]`` (the number of steps taken since time 0) and stops.
    Chains never interact: the result of chain c does not depend on the thread count or on how
    the steps are split into calls. The chains run in slices on ``threads`` threads (pass
    numba's thread count; :func:`.threads.over_chains`); with fewer SA_P chains than threads, the
    threads share each step's tokens instead. Runs :func:`kernel_for`'s kernel.

    ``nsteps`` 0, the call before a run, compiles the kernel (or loads it from the cache) and
    checks the event at time t0 instead of stepping: a chain that meets it records
    ``steps[c] = t0`` and stops. (This is :func:`events_at` in the run's own kernel, which
    spares the run the compilation of one more: about 1 s of CPU.) Nothing else changes.
    """
    C, n, d = X.shape
    kernel = kernel_for(C, n, d, dyn.kind, ev.code, threads)
    args = (X, state, dyn, sched, t0, nsteps, ev, steps, done)
    if _splits_tokens(C, n, dyn.kind, threads):
        kernel(*args, threads)
    else:
        over_chains(kernel, args, C, threads)


@functools.cache
def events_at_for(code: int):
    """``events_at(X, ev, out)`` of the event ``code``: out[c] = whether configuration X[c]
    already satisfies the event (time 0)."""

    # one pass per run, at time 0: serial, as a parallel loop would cost more to compile than
    # it saves
    @_jit(**JIT)
    def events_at(X, ev, out):
        C, n, d = X.shape
        for c in range(C):
            if code == CLUSTERS:
                out[c] = clusters_reached(ev, c, X[c], 0)
            else:
                out[c] = test_event(ev, c, X[c], hull_work(n, d), code)

    return events_at


def events_at(X, ev, out):
    """out[c] = whether configuration X[c] already satisfies the event ``ev`` (time 0)."""
    events_at_for(ev.code)(X, ev, out)


# a check of the start (or censored) configurations, O(C n^2 d): serial, as a parallel loop
# would cost more to compile than it saves
@_jit(**JIT)
def cross_weights(X, B, beta, labels, weight, z):
    """Per configuration X[c]: over tokens i and picks j with labels[c, j] != labels[c, i], the
    largest exponent beta (s_ij - max_k s_ik) in z[c] (-inf if there is no such pair) and the
    largest weight exp of it in weight[c], computed with the operations of chain_step, so that
    weight[c] == 0 exactly when chain_step can draw no such pick from X[c]. O(n) memory per
    configuration."""
    C, n, d = X.shape
    bx = np.empty(d)
    s = np.empty(n)
    t = np.empty(1)
    w = np.empty(1)
    for c in range(C):
        x = X[c]
        top = -np.inf
        for i in range(n):
            best = _row_scores(x, B, i, bx, s)
            for j in range(n):
                if labels[c, j] != labels[c, i]:
                    top = max(top, beta * (s[j] - best))
        z[c] = top
        t[0] = top
        exp_nonpositive(t, w)
        weight[c] = w[0] if top > -np.inf else 0.0


@_jit(parallel=True, **JIT)
def neighbour_sets(X, dyn, margin, out):
    """out[c, i, j] = whether j is in the neighbour (leader) set of token i in configuration X[c].

    ``dyn`` is the model's :class:`Dynamics`. LOCALMAX: N_i = {j : s_ij >= cut} with
    :func:`neighbour_cut` (``dyn.rule``, margin r). HARDMAX:
    L_i = {j : s_ij >= max_k s_ik - tol max_k |s_ik|}, every index within the tolerance (the
    ``ties`` mode only changes how leaders are averaged). The scores and thresholds are computed
    with the same operations as :func:`localmax_step` and :func:`hardmax_step`, so these are
    exactly the sets that a step from X[c] uses.
    """
    C, n, d = X.shape
    B = dyn.B
    kind = dyn.kind
    rule = dyn.rule
    tol = dyn.tol
    for c in prange(C):
        x = X[c]
        bx = np.empty(d)
        s = np.empty(n)
        for i in range(n):
            best = _row_scores(x, B, i, bx, s)
            if kind == LOCALMAX:
                cut = neighbour_cut(rule, best, margin)
            else:
                scale = 0.0
                for j in range(n):
                    scale = max(scale, abs(s[j]))
                cut = fma(-tol, scale, best)
            for j in range(n):
                out[c, i, j] = not s[j] < cut
