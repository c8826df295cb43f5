"""Chains whose event is out of reach: configurations from which the stopping event can never
hold, whatever the picks, for the models in R^d whose step moves every token to a convex
combination of the tokens (SA_P, SA_β, SA_∞, localmax with a scalar γ_t in (0, 1]).

Under such a step conv{x_j^{t+1}} ⊆ conv{x_j^t} =: H_t, so every later position of every token
lies in H_t. A convex function of a position is largest on H_t at a token, which gives exact tests
on the tokens alone (docs: simulating#absorbed-chains):

- LEAVE_BALL (some |x_i − c_i| > r_i): out of reach when every token is within r_i of every c_i;
- LEAVE_HULL (some dist(x_i, K_g(i)) > r_i): out of reach when, for every group g, every token
  is within min{r_i : g(i) = g} of K_g;
- REACH (every |x_i − c_i| <= r_i): out of reach when some c_i is farther than r_i from H_t.

The other events (COLLAPSE, CLUSTERS) are never declared out of reach. Every test keeps a margin
of ``_MARGIN`` times the configuration's scale, so that rounding, which may move a token out of
H_t by a few ulps, never turns a reachable event into an unreachable one.
"""

import numpy as np

from ..cache import njit_keyed
from ..params import JIT, LEAVE_BALL, LEAVE_HULL, REACH
from .events import _dist2, _row, hull_dist2, hull_work

_jit = njit_keyed()

# relative margin of every test (rounding of the steps and of the distances stays far below it)
_MARGIN = 1e-9


@_jit(**JIT)
def _scale(x, centers):
    s = 1.0
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            s = max(s, abs(x[i, k]), abs(centers[i, k]))
    return s


@_jit(**JIT)
def _leave_ball(x, centers, radii, ev, tol, work):
    n = x.shape[0]
    for i in range(n):
        lim = radii[i] - tol
        if lim <= 0.0:
            return False
        for j in range(n):
            if _dist2(x[j], centers[i]) > lim * lim:
                return False
    return True


@_jit(**JIT)
def _leave_hull(x, centers, radii, ev, tol, work):
    n = x.shape[0]
    for g in range(ev.starts.shape[0] - 1):
        own = ev.members[ev.starts[g] : ev.starts[g + 1]]
        if own.shape[0] == 0:
            continue
        lim = np.inf
        for r in range(own.shape[0]):
            lim = min(lim, radii[own[r]])
        lim -= tol
        if lim <= 0.0:
            return False
        for j in range(n):
            if hull_dist2(x[j], centers, own, lim * lim, work) > lim * lim:
                return False
    return True


@_jit(**JIT)
def _reach(x, centers, radii, ev, tol, work):
    everyone = np.arange(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        lim = radii[i] + tol
        if hull_dist2(centers[i], x, everyone, lim * lim, work) > lim * lim:
            return True
    return False


@_jit(**JIT)
def chain_out_of_reach(ev, c, x, work):
    """Whether the event ``ev`` (an EventArrays) is out of reach from chain c's configuration x
    (False for the events without a test); ``work`` from ``hull_work(n, d)``."""
    if ev.code not in (LEAVE_BALL, LEAVE_HULL, REACH):
        return False
    centers = _row(ev.centers, c)
    radii = _row(ev.radii, c)
    tol = _MARGIN * _scale(x, centers)
    if ev.code == LEAVE_BALL:
        return _leave_ball(x, centers, radii, ev, tol, work)
    if ev.code == LEAVE_HULL:
        return _leave_hull(x, centers, radii, ev, tol, work)
    return _reach(x, centers, radii, ev, tol, work)


def _over_chains(test):
    """A host driver: out[c] = test(x, centres, radii, ev, tol, work) for the chains not done (a
    driver per event, so that a run compiles its own test only; the tests share that signature,
    each using what it needs)."""

    @_jit(**JIT)
    def driver(X, ev, done, out):
        work = hull_work(X.shape[1], X.shape[2])
        for c in range(X.shape[0]):
            out[c] = False
            if not done[c]:
                x = X[c]
                centers = _row(ev.centers, c)
                tol = _MARGIN * _scale(x, centers)
                out[c] = test(x, centers, _row(ev.radii, c), ev, tol, work)

    return driver


DRIVERS = {
    LEAVE_BALL: _over_chains(_leave_ball),
    LEAVE_HULL: _over_chains(_leave_hull),
    REACH: _over_chains(_reach),
}


def out_of_reach(X, ev, done, out):
    """out[c] = :func:`chain_out_of_reach` for every chain c not ``done`` (False for the others,
    and for every chain of an event without a test)."""
    driver = DRIVERS.get(ev.code)
    if driver is None:
        out[:] = False
    else:
        driver(X, ev, done, out)
