"""The models of R^d (SA_P, SA_β, SA_∞, Localmax; docs: models#models-rd) as the chain loop
takes them (:mod:`.chain_loop`): each kind's scratch and step over the steps of
:mod:`.euclidean_steps`, and SA_P's step with its blocks of tokens split over threads
(:func:`step_tokens`).
"""

import functools

import numpy as np
from numba import njit, prange

from ..cache import njit_keyed
from ..params import CHAIN, FLOW, HARDMAX, JIT, LOCALMAX
from ..streams import next_uniform
from .chain_loop import Stepper
from .euclidean_steps import (
    _ROWS,
    _chain_blocks,
    _gram,
    _paths,
    _resolve_pending,
    chain_step,
    chain_work,
    copy_rows,
    hardmax_step,
    hardmax_work,
    has_gram,
    localmax_step,
    localmax_work,
    softmax_flow_step,
    softmax_flow_work,
    thread_work,
    thread_works,
)

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()


@_jit(parallel=True, **JIT)
def step_tokens(x, B, beta, gamma, P, use_P, u, s, out, pw, G, tw, T):
    """:func:`chain_step` with its blocks of tokens (and of the Gram) split over T threads, then
    the pending picks in token order; ``pw`` and ``G`` are the last two buffers of
    :func:`chain_work`, ``tw`` the threads' buffers (:func:`thread_works`). Same bits as
    chain_step at any T. The only parallel code of the token-split loops: compiled once for all
    their events (a parallel compilation of each whole loop cost about twice the time)."""
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


@njit(inline="always")
def _chain_work(n, d, T):
    return np.empty((n, d)), np.empty(n), chain_work(n, d)


@njit(inline="always")
def _split_chain_work(n, d, T):
    return np.empty((n, d)), np.empty(n), chain_work(n, d), thread_works(T, n, d)


@functools.cache
def _chain(gram: bool, split: bool) -> Stepper:
    """SA_P's stepper, with the Gram code where ``gram`` (:func:`.euclidean_steps.has_gram`), its
    tokens split over the T threads where ``split`` (both constants of the compiled code)."""

    @njit(inline="always")
    def step(x, st, dyn, sched, gamma, s, w, T):
        out, u, cw = w[0], w[1], w[2]
        G = cw[-1] if gram else None  # no Gram: its code is not compiled
        for i in range(x.shape[0]):
            u[i] = next_uniform(st)
        if split:
            tw = w[3]
            step_tokens(x, dyn.B, dyn.beta, gamma, dyn.P, dyn.use_P, u, st, out, cw[-2], G, tw, T)
        else:
            chain_step(x, dyn.B, dyn.beta, gamma, dyn.P, dyn.use_P, u, st, out, cw, G)
        copy_rows(out, x)

    return Stepper(_split_chain_work if split else _chain_work, step)


@njit(inline="always")
def _flow_work(n, d, T):
    return np.empty((n, d)), softmax_flow_work(n, d)


# a plain call compiled without reference counting: inlined, the step counted references to the
# model's arrays and the 10 of its scratch at every step (SA_beta 7 % slower on one thread)
@njit(_nrt=False)
def _flow(x, st, dyn, sched, gamma, s, w, T):
    out, fw = w
    softmax_flow_step(x, dyn.B, dyn.beta, gamma, dyn.P, dyn.use_P, out, fw)
    copy_rows(out, x)


@njit(inline="always")
def _localmax_work(n, d, T):
    return np.empty((n, d)), localmax_work(n, d)


@njit(inline="always")
def _localmax(x, st, dyn, sched, gamma, s, w, T):
    out, lw = w
    margins = sched.margins  # the margin r_t, shared by all chains as the step size
    r = margins[s if margins.shape[0] > 1 else 0]
    localmax_step(x, dyn.B, gamma, dyn.P, dyn.use_P, r, dyn.rule, out, lw)
    copy_rows(out, x)


@njit(inline="always")
def _hardmax_work(n, d, T):
    return np.empty((n, d)), hardmax_work(n, d)


@njit(inline="always")
def _hardmax(x, st, dyn, sched, gamma, s, w, T):
    out, hw = w
    hardmax_step(x, dyn.B, gamma, dyn.P, dyn.use_P, dyn.by_point, dyn.tol, out, hw)
    copy_rows(out, x)


_STEPPERS = {
    FLOW: Stepper(_flow_work, _flow),
    HARDMAX: Stepper(_hardmax_work, _hardmax),
    LOCALMAX: Stepper(_localmax_work, _localmax),
}


def splits_tokens(model_code: int) -> bool:
    """Whether the model kind ``kind`` can share each step's blocks of tokens over threads."""
    return model_code == CHAIN


def stepper(model_code: int, code: int, n: int, d: int, dyn, split: bool) -> Stepper:
    """The stepper of the model kind ``kind`` for n tokens in R^d (``code``: the event's,
    ``dyn``: the model's :class:`~.params.Dynamics`, which only the sphere's flow reads), with
    its tokens split over threads where ``split``."""
    if model_code == CHAIN:
        return _chain(has_gram(n, d), split)
    return _STEPPERS[model_code]
