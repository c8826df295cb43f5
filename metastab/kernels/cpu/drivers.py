"""Drivers: many independent chains in parallel (slices of chains on threads), each with its own
xoshiro256** stream (:mod:`.streams`) whose state lives in a caller-owned array, so a chain's path
depends only on its seed: not on the thread count, the chunking of chains or of steps. The
parameters arrive as the NamedTuples of :mod:`.params`. Every model runs the one loop of
:mod:`.chain_loop` with its family's step (:mod:`.euclidean_family`, :mod:`.sphere_family`): the
model code picks the family, and the model code, the event code and the path choose the kernel
(:func:`kernel_for`), compiled with them as constants, so that a run compiles only its own
model's and event's paths.
"""

import functools

import numba
import numpy as np
from numba import prange

from ..arith import fma
from ..cache import njit_keyed
from ..params import (
    CHAIN,
    CLUSTERS,
    FLOW,
    HARDMAX,
    JIT,
    LOCALMAX,
    NOISY_SPHERE,
    SPHERE_CHAIN,
    SPHERE_FLOW,
)
from . import euclidean_family, sphere_family
from .chain_loop import clusters_reached, loop_for
from .euclidean_steps import _row_scores, exp_nonpositive, neighbour_cut
from .events import hull_work, test_event
from .scores import ROWS as _ROWS
from .threads import over_chains

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()

# the model family of each model code, the one place that tells them apart: a module with
# splits_tokens(model_code) and stepper(model_code, code, n, d, dyn, split), its chain_loop.Stepper
_FAMILIES = {
    CHAIN: euclidean_family,
    FLOW: euclidean_family,
    HARDMAX: euclidean_family,
    LOCALMAX: euclidean_family,
    SPHERE_FLOW: sphere_family,
    SPHERE_CHAIN: sphere_family,
    NOISY_SPHERE: sphere_family,
}


def kernel_for(chains: int, n: int, d: int, dyn, code: int, threads: int):
    """The kernel that :func:`advance` runs for ``chains`` chains of n tokens in R^d of the model
    ``dyn`` (its :class:`~.params.Dynamics` or :class:`~.params.SphereDynamics`) with the event
    ``code`` on ``threads`` threads (a numba dispatcher, compiled on first call; one per model code,
    event and path, so that a run compiles only what it uses)."""
    return _plan(chains, n, d, dyn, code, threads)[0]


def _plan(chains: int, n: int, d: int, dyn, code: int, threads: int):
    """:func:`kernel_for`'s kernel and whether the run shares each step's blocks of tokens over
    the threads: fewer chains than threads of a kind that can (SA_P, the sphere flow), and more
    than one block."""
    family = _FAMILIES[dyn.model_code]
    split = family.splits_tokens(dyn.model_code) and chains < threads and n > _ROWS
    return loop_for(family.stepper(dyn.model_code, code, n, d, dyn, split), code), split


def advance(X, state, dyn, sched, t0, nsteps, ev, times, done, threads=1):
    """Advance every chain c with ``done[c]`` False by up to ``nsteps`` steps, in place.

    ``X`` (C, n, d) holds the current configurations and ``state`` (C, 4) the chains' streams;
    ``dyn`` (a :class:`Dynamics` or :class:`SphereDynamics`) is the model, and the step taken
    from global time t (t0 <= t < t0 + nsteps) uses ``sched.sizes[t - t0]``, or
    ``sched.sizes[0]`` if it has one entry (constant step: γ, or the sphere flow's dt); the
    localmax margin r_t is taken from ``sched.margins`` in the same way (shared by all chains).
    After each step the event ``ev`` (an :class:`EventArrays`) is checked; a chain that meets it
    records ``times[c]`` (the number of steps taken since time 0) and stops. Chains never
    interact: the result of chain c does not depend on the thread count or on how the steps are
    split into calls. The chains run in slices on ``threads`` threads (pass numba's thread
    count; :func:`.threads.over_chains`); with fewer chains of SA_P or of the sphere flow than
    threads, the threads share each step's tokens instead. Runs :func:`kernel_for`'s kernel.

    ``nsteps`` 0, the call before a run, compiles the kernel (or loads it from the cache) and
    checks the event at time t0 instead of stepping: a chain that meets it records
    ``times[c] = t0`` and stops. (This is :func:`events_at` in the run's own kernel, which
    spares the run the compilation of one more: about 1 s of CPU.) Nothing else changes.
    """
    C, n, d = X.shape
    kernel, split = _plan(C, n, d, dyn, ev.code, threads)
    args = (X, state, dyn, sched, t0, nsteps, ev, times, done)
    if split:  # one chain after another, each step's tokens on the threads
        # numba starts its threads where it loads a parallel function, not where it loads a
        # kernel that links one (step_tokens, the flow's _velocity_split) from the cache:
        # started here, or their parallel loops crash
        numba.get_num_threads()
        kernel(*args, threads, 0, C)
    else:
        over_chains(kernel, (*args, None), C, threads)  # T None: no parallel code


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
    model_code = dyn.model_code
    rule = dyn.rule
    tol = dyn.tol
    for c in prange(C):
        x = X[c]
        bx = np.empty(d)
        s = np.empty(n)
        for i in range(n):
            best = _row_scores(x, B, i, bx, s)
            if model_code == LOCALMAX:
                cut = neighbour_cut(rule, best, margin)
            else:
                scale = 0.0
                for j in range(n):
                    scale = max(scale, abs(s[j]))
                cut = fma(-tol, scale, best)
            for j in range(n):
                out[c, i, j] = not s[j] < cut
