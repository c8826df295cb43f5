"""Escape times at any β: the event-driven SA_P chain, and the resolution check of direct stepping.

``first_passage(model, x0, event, ..., mode="accelerated")`` runs :func:`first_passage_accelerated`:
the same chain SA_P (science.md §1), the same events and the same :class:`~metastab.FirstPassage`,
but instead of stepping through the steps in which every token picks a token of its own group
(exact no-ops) it draws the number of such steps from their geometric law (science.md §3,
"Exact laws usable as tests", last paragraph) and then the step with a cross-group pick from its
conditional law. The equations are in :mod:`metastab._accelerated`.

What is exact and what is not
-----------------------------
- The decomposition "geometric wait, then a step conditioned on a cross pick" is the exact law of
  SA_P for ANY configuration (frozen or not); it needs no frozen detection. While a group is spread
  (tokens relaxing back after a move) its tokens are separate points and the chain takes one event
  per step or so: it steps exactly.
- Relaxation x_i + γ(u − x_i) approaches u geometrically and may never reach it in floating point
  (it can stall one ulp away), which would keep the chain stepping forever. So before each draw,
  tokens within max-norm distance δ = ``merge_tol × scale`` of a group's point (``scale`` = the
  largest |coordinate| of the chain's x0, 1 if that is 0) are moved onto it. This is the only
  approximation. A merge moves a token by at most √d δ (Euclidean), which changes every score
  <B x_i, x_j> by at most about 2 |B| R √d δ and every log-probability of a pick by at most
  4 β |B| R √d δ (R = max |x|): ~1e-7 at β = 200, |B| = R = 1, d = 2 and the default
  ``merge_tol`` 1e-10, far below the statistical error of any escape-rate estimate. It also ends
  each relaxation after about log(δ / distance)/log(1 − γ) steps instead of never; the steps it
  saves are those of a token already within δ of its group. ``merge_tol=0`` merges only exact
  coincidences: the chain is then SA_P exactly, with no 2^-53 floor, but relaxations run to the
  last ulp, and a token stalled one ulp from its group keeps the chain at one step per event.
- Random numbers: waiting times use an exponential variate of full relative precision and
  decisions with tiny probabilities a uniform of full relative precision, so probabilities below
  the 2^-53 resolution of ``next_uniform`` (βΔ >~ 37) are sampled as they are.
- Time: step counts are float64 (compensated summation, 2^-53 relative); they never overflow, the
  budget ``max_steps`` may be a float such as 1e100, and :mod:`metastab.stats` reads them as they
  are (the geometric law needs integer values, which every float64 above 2^53 is).

The default ``mode="exact"`` steps through every step with the kernels of :mod:`metastab._kernels`,
which draw every pick with its probability to full relative precision (rare picks are decided by
an exact Bernoulli trial, see ``_kernels.chain_step``), except picks whose weight
e^{β(s_ij − max_k s_ik)} the kernels' exp flushes to 0, those with an exponent below
:func:`underflow_exponent` (≈ −708.7): :func:`check_resolution` warns, with
:class:`ResolutionWarning`, when a configuration can only leave its groups through such picks.
"""

from __future__ import annotations

import functools
import math
import time
import warnings

import numpy as np

from . import _accelerated, _kernels
from ._validate import check_memory, real
from .exceptions import ResolutionWarning
from .models import SoftmaxChain
from .results import FirstPassage, provenance

__all__ = ["MODES", "MERGE_TOL", "ResolutionWarning", "check_resolution", "cross_probabilities",
           "first_passage_accelerated", "underflow_exponent"]

MODES = ("exact", "accelerated")
MERGE_TOL = 1e-10
# Events per kernel call: starts small and doubles while a call takes under _CALL_SECONDS.
_FIRST_CALL_JUMPS = 64
_CALL_SECONDS = 0.5




@functools.cache
def underflow_exponent() -> float:
    """The smallest z with a positive kernel weight exp(z): weights e^{β(s_ij − max_k s_ik)} with
    an exponent below it are flushed to 0 and never drawn by direct stepping.

    >>> round(underflow_exponent(), 3)
    -708.743
    """
    lo, hi = -745.0, -700.0                   # exp(lo) == 0 < exp(hi); bisect to adjacent floats
    z, w = np.empty(1), np.empty(1)
    while True:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            return hi
        z[0] = mid
        _kernels.exp_nonpositive(z, w, np.empty(1))
        lo, hi = (lo, mid) if w[0] > 0.0 else (mid, hi)


def merge_tolerance(merge_tol) -> float:
    """Validate ``merge_tol`` (None: the default :data:`MERGE_TOL`)."""
    if merge_tol is None:
        return MERGE_TOL
    return real("merge_tol", merge_tol, low=0.0, high=1.0)


def _scale(x: np.ndarray) -> np.ndarray:
    """Per configuration of x (C, n, d): the largest |coordinate|, 1 where that is 0."""
    size = np.abs(x).max(axis=(1, 2))
    return np.where(size > 0, size, 1.0)


def budget(max_steps) -> int | float:
    """``max_steps`` of the accelerated mode: an integer >= 1 or an integral float >= 1 (as 1e30).

    Integers from 2^63 on are returned as float64 (step counts are float64 in this mode).

    >>> budget(10**30), budget(1e30), budget(500)
    (1e+30, 1e+30, 500)
    """
    if isinstance(max_steps, (bool, np.bool_)):
        raise ValueError(f"max_steps must be an integer or an integral float >= 1, "
                         f"got {max_steps!r}")
    if isinstance(max_steps, (int, np.integer)):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
        # beyond int64 the budget is kept as the float64 the step counts are compared with
        return int(max_steps) if max_steps < 2**63 else float(max_steps)
    value = real("max_steps", max_steps, low=1)
    if value != math.floor(value):
        raise ValueError(f"max_steps must be an integer or an integral float >= 1, "
                         f"got {max_steps!r}")
    return value


def _chain_arrays(model, d: int):
    """(B, beta, gamma, P, use_P) of a SoftmaxChain with a constant step (scalar or matrix)."""
    if not isinstance(model, SoftmaxChain):
        raise ValueError(f"mode='accelerated' needs a SoftmaxChain (SA_P), got "
                         f"{type(model).__name__}")
    if model.has_schedule:
        raise ValueError(f"mode='accelerated' needs a constant step (the waiting time is geometric "
                         f"only for a time-homogeneous chain), got gamma={model.gamma!r}")
    gammas, P, use_P = model.step_arrays(d, 0, 1)
    return model.key_query(d), float(model.beta), float(gammas[0]), P, bool(use_P)


def cross_probabilities(model, x, *, merge_tol=None) -> np.ndarray:
    """Log-probability that each token picks a token outside its group in one step of SA_P.

    Groups are the points of ``x`` after merging at ``merge_tol`` (as the accelerated mode does);
    a token at u_a crosses with probability c_a = r_a / (1 + r_a),
    r_a = Σ_{b≠a} (m_b/m_a) e^{β(<B u_a, u_b> − <B u_a, u_a>)} (science.md §3), computed in log
    space (no underflow at any β).

    Parameters
    ----------
    model : SoftmaxChain
    x : array_like, (n, d) or (C, n, d)
    merge_tol : float, optional
        Relative merge distance (default :data:`MERGE_TOL`; 0: exact coincidences only).

    Returns
    -------
    ndarray, (n,) or (C, n): log c_i (``-inf`` where a token's group is the only point).

    Examples
    --------
    >>> import metastab as ms
    >>> x = [[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]
    >>> lc = cross_probabilities(ms.SoftmaxChain(beta=20.0, gamma=0.5), x)
    >>> lc.round(3).tolist()                    # log(e^-40 / 2) and log(2 e^-40), to e^-40
    [-40.693, -40.693, -39.307]
    """
    X = np.asarray(x, dtype=np.float64)  # cross_logs works on copies of single configurations
    one = X.ndim == 2
    if one:
        X = X[None]
    if X.ndim != 3 or 0 in X.shape or not np.isfinite(X).all():
        raise ValueError(f"x must be a finite n×d or C×n×d array, got shape {np.shape(x)}")
    tols = merge_tolerance(merge_tol) * _scale(X)
    B, beta, _, _, _ = _chain_arrays(model, X.shape[2])
    check_memory(f"the cross-group probabilities of {X.shape[0]} configuration(s) of "
                 f"{X.shape[1]} tokens (an n×n table per thread; exact mode checks them first)",
                 _work_bytes(*X.shape))
    out = np.empty(X.shape[:2])
    _accelerated.cross_logs(np.ascontiguousarray(X), B, beta, tols, out)
    return out[0] if one else out


def _work_bytes(C: int, n: int, d: int) -> int:
    """Memory of the event-driven kernels on C configurations: the scratch buffers of
    ``_accelerated.jump_work`` (an n×n table among them) and a copy of a configuration, per
    thread."""
    import numba

    return min(C, numba.get_num_threads()) * 8 * (n * n + 3 * n * d + 8 * n + d)


def check_resolution(model, X, *, what="configurations", merge_tol=None, stacklevel=2) -> bool:
    """Warn (:class:`ResolutionWarning`) when direct stepping cannot leave some of ``X``.

    Groups are the points of a configuration after merging at ``merge_tol`` (as in
    :func:`cross_probabilities`). A configuration with two groups or more is stuck for direct
    stepping when, for every token, every pick outside its group has a weight
    e^{β(s_ij − max_k s_ik)} that the kernels flush to 0 (exponent below
    :func:`underflow_exponent`): ``_kernels.chain_step`` never draws such a pick, while every pick
    of positive weight is drawn with its probability. The test uses the kernels' own arithmetic
    (``_kernels.cross_weights``), with O(n) memory per configuration. Only SoftmaxChain models
    with a constant step are checked; configurations with non-finite coordinates are skipped.

    Returns True when it warned.
    """
    if not isinstance(model, SoftmaxChain) or model.has_schedule or len(X) == 0:
        return False
    X = np.array(X, dtype=np.float64)
    X = np.ascontiguousarray(X[np.isfinite(X).all(axis=(1, 2))])
    if len(X) == 0:
        return False
    C, n, d = X.shape
    tols = merge_tolerance(merge_tol) * _scale(X)
    labels = np.empty((C, n), dtype=np.int64)
    points = np.empty((n, d))
    mult, count, order = (np.empty(n, np.int64) for _ in range(3))
    for c in range(C):
        _accelerated.merge_groups(X[c].copy(), tols[c], labels[c], points, mult, count, order)
    B, beta, _, _, _ = _chain_arrays(model, d)
    weight, z = np.empty(C), np.empty(C)
    _kernels.cross_weights(X, B, beta, labels, weight, z)
    stuck = np.isfinite(z) & (weight == 0.0)
    if not stuck.any():
        return False
    worst = float(z[stuck].max())
    warnings.warn(f"{int(stuck.sum())} of {C} {what} can only leave their groups (tokens on one "
                  f"point) through picks whose weight e^(beta*(s_ij - max_k s_ik)) underflows to 0 "
                  f"(exponent below {underflow_exponent():.1f}; the likeliest such pick has "
                  f"exponent {worst:.1f} at beta={model.beta:g}): direct stepping never draws "
                  f"them, such chains stay frozen and are censored. Use "
                  f"first_passage(..., mode='accelerated')",
                  ResolutionWarning, stacklevel=stacklevel + 1)
    return True


def first_passage_accelerated(model, x0, event, *, max_steps, chains=None, rng=None,
                              progress=False, first_chain=0, merge_tol=None) -> FirstPassage:
    """First-passage times of SA_P, skipping the steps in which nothing moves (event-driven).

    Same parameters and result as :func:`metastab.first_passage` (which calls this with
    ``mode="accelerated"``), except:

    Parameters
    ----------
    model : SoftmaxChain
        With a constant step (scalar γ or step matrix); schedules are refused.
    max_steps : int or float
        Step budget, any integral value >= 1 (e.g. 1e100): step counts are float64.
    merge_tol : float in [0, 1], optional
        Tokens within max-norm distance ``merge_tol × scale`` (scale = the largest |coordinate| of
        the chain's x0) of a group's point are merged onto it (module notes: what it changes).
        Default 1e-10.
    progress : bool or callable(steps_done, total, chains_done)
        ``steps_done`` is the smallest step count among the running chains.

    Returns
    -------
    FirstPassage
        ``steps`` is float64 (the step of the event, or ``max_steps`` when censored);
        ``provenance`` records ``mode``, ``merge_tol`` and ``jumps`` (events drawn in all).

    Examples
    --------
    >>> import numpy as np, metastab as ms
    >>> x0 = np.repeat([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]], 2, axis=0)
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=100.0, gamma=0.5), x0, ms.LeaveBall(0.1),
    ...                       max_steps=1e100, chains=4, rng=1, mode="accelerated")
    >>> fp.steps.dtype, bool(fp.censored.any()), bool((fp.steps > 2.0**63).all())
    (dtype('float64'), False, True)
    """
    from .simulate import _Progress, _prepare, _start, announce_compile, run_bytes

    total = budget(max_steps)
    tol_rel = merge_tolerance(merge_tol)
    if not hasattr(event, "compile"):
        raise TypeError(f"event must be a LeaveBall, LeaveHull, ReachVertices or Collapse, "
                        f"got {event!r}")
    x, C, first_chain = _prepare(model, x0, chains, first_chain)
    n, d = x.shape[1:]
    B, beta, gamma, P, use_P = _chain_arrays(model, d)
    check_memory(f"an accelerated run of {C} chains of {n} tokens in R^{d}",
                 run_bytes(C, n, d) + x.nbytes + 8 * 4 * C + _work_bytes(C, n, d))
    announce_compile(progress, _accelerated.advance_accelerated)
    X, seed, state = _start(model, x, C, rng, first_chain)
    tols = tol_rel * _scale(x)
    compiled = event.compile(np.ascontiguousarray(x), B)
    done = np.zeros(C, dtype=bool)
    censored = np.zeros(C, dtype=bool)
    clock = np.zeros(C)
    comp = np.zeros(C)
    jumps = np.zeros(C, dtype=np.int64)
    if compiled.code != _kernels.NO_EVENT:
        _kernels.events_at(X, compiled.code, *compiled[1:], done)
    report = _Progress(progress, total, C)
    tic = time.perf_counter()
    chunk = _FIRST_CALL_JUMPS
    try:
        while not done.all():
            t0 = time.perf_counter()
            _accelerated.advance_accelerated(X, B, beta, gamma, P, use_P, tols, state, clock,
                                             comp, float(total), chunk, compiled.code,
                                             *compiled[1:], done, censored, jumps)
            if time.perf_counter() - t0 < _CALL_SECONDS:
                chunk *= 2
            if not np.isfinite(X).all():
                c = int(np.flatnonzero(~np.isfinite(X).all(axis=(1, 2)))[0])
                raise FloatingPointError(f"chain {c} has a non-finite state: scores overflowed, "
                                         f"or a step matrix grew the hull without bound")
            running = ~done
            now = float((clock + comp)[running].min()) if running.any() else float(total)
            report(now, int(done.sum()))
    finally:
        report.close()
    steps = clock + comp
    steps[censored] = float(total)
    meta = provenance(wall_seconds=time.perf_counter() - tic, n=n, d=d, mode="accelerated",
                      merge_tol=tol_rel, jumps=int(jumps.sum()))
    return FirstPassage(steps=steps, censored=censored, final=X, max_steps=total,
                        model=model.to_dict(), event=event.to_dict(), seed=seed.to_dict(),
                        first_chain=int(first_chain), provenance=meta)
