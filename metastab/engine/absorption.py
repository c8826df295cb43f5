"""Absorbed chains: chains stopped because their event has become out of reach.

A chain of a model in R^d whose step is a convex combination of the tokens (SA_P, SA_β, SA_∞,
localmax, with a scalar step or a schedule in (0, 1]) never leaves the convex hull of its current
tokens; where the event cannot hold anywhere in that hull (:mod:`metastab.kernels.cpu.reach`),
the chain can never meet it. Such a chain is *absorbed*: stopped at once and recorded apart from
the chains that met the event and from the censored ones, since counting it as censored would
say that it might still escape (a competing risk; docs: statistics#absorbed-statistics).

The exact loop tests the running chains at time 0 and after each kernel call; a chain found out
of reach at the end of a call is replayed from the start of that call, by bisection over its
steps, to the first step at which its event is out of reach (the test is monotone: the hull only
shrinks), and its final state is the one of that step. The replay takes the chain's own stream,
so the absorption time is the same whatever the chunking or the thread count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..kernels import params as _params
from ..models import Hardmax, Localmax, SoftmaxChain, SoftmaxFlow
from .backends import Backend, out_of_reach

if TYPE_CHECKING:
    from .chains import Model

__all__ = ["Absorption", "applies"]

_TESTED = (_params.LEAVE_BALL, _params.LEAVE_HULL, _params.REACH)


def applies(model: Model, code: int) -> bool:
    """Whether chains of ``model`` can be found out of reach of an event of kernel ``code``: the
    convex models of R^d (no step matrix) and the events that have a test."""
    if not isinstance(model, (SoftmaxChain, SoftmaxFlow, Hardmax, Localmax)):
        return False
    return not model.has_step_matrix and code in _TESTED


def _chain_event(ev: _params.EventArrays, c: int) -> _params.EventArrays:
    """The event arrays of chain c alone (per-chain centres and radii sliced, shared kept)."""
    rows = {
        name: getattr(ev, name)[c : c + 1]
        for name in ("centers", "radii")
        if getattr(ev, name).shape[0] > 1
    }
    return ev._replace(**rows)


class Absorption:
    """The absorption test of one exact run: ``start`` at time 0, ``before`` each kernel call
    (a copy of the states it starts from), ``after`` it (new absorptions, their first steps)."""

    def __init__(self, backend: Backend, model: Model, ev: _params.EventArrays, C: int):
        self.backend, self.model, self.ev = backend, model, ev
        self.absorbed = np.zeros(C, dtype=bool)
        self._out = np.zeros(C, dtype=bool)
        self._start: tuple[np.ndarray, np.ndarray] | None = None

    def start(self, X: np.ndarray, times: np.ndarray, done: np.ndarray) -> None:
        out_of_reach(X, self.ev, done, self._out)
        self._stop(self._out, 0, times, done)

    def before(self, X: np.ndarray, state: np.ndarray) -> None:
        self._start = (X.copy(), state.copy())

    def after(self, X: np.ndarray, t0: int, t1: int, times: np.ndarray, done: np.ndarray) -> None:
        out_of_reach(X, self.ev, done, self._out)
        if not self._out.any():
            return
        assert self._start is not None
        X0, S0 = self._start
        for c in np.flatnonzero(self._out):
            times[c], X[c] = self._first(X0[c : c + 1], S0[c : c + 1], int(c), t0, X[c], t1)
        self._stop(self._out, None, times, done)

    def _stop(self, new: np.ndarray, t: int | None, times: np.ndarray, done: np.ndarray) -> None:
        if t is not None:
            times[new] = t
        done[new] = True
        self.absorbed[new] = True

    def _first(
        self, x: np.ndarray, state: np.ndarray, c: int, lo: int, last: np.ndarray, hi: int
    ) -> tuple[int, np.ndarray]:
        """The first step in (lo, hi] at which chain c, in state (x, state) at step lo and out of
        reach in configuration ``last`` at step hi, is out of reach, and its configuration
        then."""
        ev = _chain_event(self.ev, c)
        dyn = self.model.kernel_params(x.shape[2])
        x, state = x.copy(), state.copy()
        out = np.zeros(1, dtype=bool)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            xm, sm = x.copy(), state.copy()
            times, done = np.full(1, mid, dtype=np.int64), np.zeros(1, dtype=bool)
            sched = self.model.schedule(lo, mid - lo)
            self.backend.advance(xm, sm, dyn, sched, lo, mid - lo, ev, times, done)
            out_of_reach(xm, ev, done, out)
            if out[0]:
                hi, last = mid, xm[0]
            else:
                lo, x, state = mid, xm, sm
        return hi, last
