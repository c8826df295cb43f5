"""The models on the sphere (the flow and the chain of :mod:`.sphere_steps`, the noisy model of
:mod:`.noisy_steps`; docs: models#models-sphere) as the chain loop takes them (:mod:`.chain_loop`):
each one's scratch and step, the flow's and the noisy model's also with each step's blocks of
tokens split over threads.
"""

import functools

import numpy as np
from numba import njit

from ..params import MIX_LN, NGPT, NO_EVENT, NOISY_SPHERE, PERI_LN, POST_LN, PRE_LN, SPHERE_CHAIN
from ..streams import next_uniform
from .chain_loop import Stepper
from .euclidean_steps import copy_rows, has_gram
from .noisy_steps import _noisy
from .sphere_steps import (
    _gram_blocks,
    _ngpt,
    _peri_ln,
    _post_ln,
    _pre_ln,
    _rk4,
    _squared_norms,
    _transpose,
    chain_step,
    chain_work,
    sphere_flow_work,
)


@njit(inline="always")
def _chain_work(n, d, T):
    return np.empty((n, d)), np.empty(n), chain_work(n, d)


@functools.cache
def _chain(gram: bool) -> Stepper:
    """The chain's stepper, with the Gram code of ``steps.chain_step`` where ``gram``."""

    @njit(inline="always")
    def step(x, st, dyn, sched, gamma, s, w, T):
        out, u, cw = w
        G = cw[0][-1] if gram else None  # no Gram: its code is not compiled
        for i in range(x.shape[0]):
            u[i] = next_uniform(st)
        chain_step(x, dyn.Bs[0], dyn.Vs[0], dyn.plain_V, dyn.beta, gamma, u, st, out, cw, G)
        copy_rows(out, x)

    return Stepper(_chain_work, step)


@njit(inline="always")
def _flow_work(n, d, T):
    return sphere_flow_work(n, d)


@njit(inline="always")
def _split_flow_work(n, d, T):
    return sphere_flow_work(n, d, T)


@njit(inline="always")
def _hold(x, w):
    """The state transposed into w[0], with its squared norms, which each step leaves for the
    next (see sphere._post_ln)."""
    _transpose(x, w[0])
    _squared_norms(w[0], w[5])


@njit(inline="always")
def _release(x, w):
    _transpose(w[0], x)


@functools.cache
def _flow(scheme: int, gram: bool, held: bool, split: bool) -> Stepper:
    """The flow's stepper for its ``scheme``, with the Gram code where ``gram`` (the flow's
    ``sphere._gram_blocks``); where ``held`` (no event reads the state) the state stays
    transposed in the scratch for a call's steps; with the tokens of each step split over T
    threads where ``split``. All four are constants of the compiled code. Mix-LN (``MIX_LN``)
    takes post-LN's step where the schedule's margin of the step is not 0, else pre-LN's: its
    post-LN steps come first, so a held state's squared norms (which pre-LN's step overwrites)
    are those each post-LN step reads."""
    if scheme == MIX_LN:
        return _mix_flow(gram, held, split)
    steps = {POST_LN: _post_ln, PRE_LN: _pre_ln, PERI_LN: _peri_ln, NGPT: _ngpt}
    scheme_step = steps.get(scheme, _rk4)

    @njit(inline="always")
    def step(x, st, dyn, sched, gamma, s, w, T):
        if split:
            scheme_step(x, dyn.Bs, dyn.Vs, dyn.beta, gamma, dyn.attention, dyn.causal,
                        dyn.strict, dyn.alibi, dyn.positional, dyn.offset, dyn.plain_B,
                        dyn.plain_V, x, w, w[1], T)  # fmt: skip
        else:
            # held: the state stays in w[0] (x and out None); else the flow writes its step into
            # x once it has read x (out = x)
            y = None if held else x
            G = w[1] if gram else None
            scheme_step(y, dyn.Bs, dyn.Vs, dyn.beta, gamma, dyn.attention, dyn.causal,
                        dyn.strict, dyn.alibi, dyn.positional, dyn.offset, dyn.plain_B,
                        dyn.plain_V, y, w, G, None)  # fmt: skip

    if split:
        return Stepper(_split_flow_work, step)
    if held:
        return Stepper(_flow_work, step, _hold, _release)
    return Stepper(_flow_work, step)


@functools.cache
def _mix_flow(gram: bool, held: bool, split: bool) -> Stepper:
    """Mix-LN's stepper (see :func:`_flow`): step s of a call is post-LN's where
    ``sched.margins`` (its entry s, or its one entry) is not 0, else pre-LN's."""
    post_step = _flow(POST_LN, gram, held, split).step
    pre_step = _flow(PRE_LN, gram, held, split).step

    @njit(inline="always")
    def step(x, st, dyn, sched, gamma, s, w, T):
        margins = sched.margins
        if margins[s if margins.shape[0] > 1 else 0] != 0.0:
            post_step(x, st, dyn, sched, gamma, s, w, T)
        else:
            pre_step(x, st, dyn, sched, gamma, s, w, T)

    base = _flow(POST_LN, gram, held, split)
    return Stepper(base.work, step, base.enter, base.leave)


@functools.cache
def _noisy_flow(gram: bool, held: bool, split: bool) -> Stepper:
    """The noisy model's stepper (``noisy_steps._noisy``), on the flow's scratch and with its
    paths (:func:`_flow`: ``gram``, ``held``, ``split``); the normals come from the chain's
    stream ``st``, on the thread that runs the chain."""

    @njit(inline="always")
    def step(x, st, dyn, sched, gamma, s, w, T):
        if split:
            _noisy(x, dyn.Bs, dyn.Vs, dyn.beta, gamma, dyn.coupling, dyn.attention, dyn.plain_B,
                   dyn.plain_V, st, x, w, w[1], T)  # fmt: skip
        else:
            y = None if held else x
            G = w[1] if gram else None
            _noisy(y, dyn.Bs, dyn.Vs, dyn.beta, gamma, dyn.coupling, dyn.attention, dyn.plain_B,
                   dyn.plain_V, st, y, w, G, None)  # fmt: skip

    if split:
        return Stepper(_split_flow_work, step)
    if held:
        return Stepper(_flow_work, step, _hold, _release)
    return Stepper(_flow_work, step)


def splits_tokens(model_code: int) -> bool:
    """Whether the sphere model ``kind`` can share each step's blocks of tokens over threads:
    the flow and the noisy model."""
    return model_code != SPHERE_CHAIN


def stepper(model_code: int, code: int, n: int, d: int, dyn, split: bool) -> Stepper:
    """The stepper of the sphere model ``kind`` for n tokens in R^d with the event ``code``
    (``dyn``: its :class:`~.params.SphereDynamics`, whose scheme chooses the flow's step), with
    its tokens split over threads where ``split``."""
    if model_code == SPHERE_CHAIN:
        return _chain(has_gram(n, d))
    held = code == NO_EVENT and not split
    if model_code == NOISY_SPHERE:
        return _noisy_flow(_gram_blocks(n) > 0 and not split, held, split)
    return _flow(dyn.scheme, _gram_blocks(n) > 0 and not split, held, split)
