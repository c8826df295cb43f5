"""Escape times at any β: the event-driven SA_P chain (``mode="accelerated"``).

``first_passage(model, x0, event, ..., mode="accelerated")`` runs :func:`first_passage_accelerated`:
the same chain SA_P (docs: models#models-rd), the same events and the same
:class:`~metastab.FirstPassage`, but instead of stepping through the steps in which every token
picks a token of its own group (exact no-ops) it draws the number of such steps from their geometric
law (docs: models#frozen-law) and then the step with a cross-group pick from its
conditional law. The equations are in :mod:`metastab.kernels.cpu.accelerated`.

What is exact and what is not
-----------------------------
- The decomposition "geometric wait, then a step conditioned on a cross pick" is the exact law of
  SA_P for ANY configuration (frozen or not); it needs no frozen detection. While a group is spread
  (tokens relaxing back after a move) its tokens are separate points and the chain takes one event
  per step or so: it steps exactly.
- Relaxation x_i + γ(u − x_i) approaches u geometrically and may never reach it in floating point
  (it can stall one ulp away), which would keep the chain stepping forever. So before each draw,
  tokens within max-norm distance δ = ``merge_tol × scale`` of a group's point (``scale`` = the
  largest absolute coordinate of the chain's x0, 1 if that is 0) are moved onto it. This is the only
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

The default ``mode="exact"`` steps through every step (:mod:`metastab.engine.exact`); what it
cannot resolve is the subject of :mod:`metastab.engine.resolution`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .._validate import real
from ..kernels import params as _params
from .absorption import applies
from .backends import Tally, out_of_reach, reach_kernels
from .chains import check_finite
from .progress import Progress, announce_compile
from .resolution import merge_tolerance, scale, work_bytes
from .run_setup import prepare_run

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..results import FirstPassage
    from ..rng import SeedLike
    from .backends import Backend
    from .chains import EventSpec, Model

__all__ = ["budget", "first_passage_accelerated"]

# Events per kernel call: starts small and doubles while a call takes under _CALL_SECONDS.
_FIRST_CALL_JUMPS = 64
_CALL_SECONDS = 0.5


def budget(max_steps: int | float) -> int | float:
    """The step budget ``max_steps`` of the accelerated mode, checked.

    An integer >= 1 or an integral float >= 1 (as 1e30). Integers from 2^63 on are returned as
    float64 (step counts are float64 in this mode).

    Parameters
    ----------
    max_steps : int or float
        The budget asked for.

    Returns
    -------
    max_steps : int or float
        The budget: the int itself below 2^63, else a float64.

    Raises
    ------
    ValueError
        For a bool, a value below 1, or a float that is not integral.

    Examples
    --------
    >>> from metastab.engine import budget
    >>> budget(10**30), budget(1e30), budget(500)
    (1e+30, 1e+30, 500)
    """
    if isinstance(max_steps, (bool, np.bool_)):
        raise ValueError(
            f"max_steps must be an integer or an integral float >= 1, got {max_steps!r}"
        )
    if isinstance(max_steps, (int, np.integer)):
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
        # beyond int64 the budget is kept as the float64 the step counts are compared with
        return int(max_steps) if max_steps < 2**63 else float(max_steps)
    value = real("max_steps", max_steps, low=1)
    if value != math.floor(value):
        raise ValueError(
            f"max_steps must be an integer or an integral float >= 1, got {max_steps!r}"
        )
    return value


def first_passage_accelerated(
    model: Model,
    x0: ArrayLike,
    event: EventSpec,
    *,
    max_steps: int | float,
    chains: int | None = None,
    rng: SeedLike = None,
    progress: bool | Callable | None = None,
    first_chain: int = 0,
    merge_tol: float | None = None,
    device: str = "cpu",
) -> FirstPassage:
    """First-passage times of SA_P, skipping the steps in which nothing moves (event-driven).

    Same parameters and result as :func:`metastab.first_passage`, which calls this with
    ``mode="accelerated"``.

    Parameters
    ----------
    model : SoftmaxChain or SphereChain
        SoftmaxChain with a constant step (scalar γ or step matrix; schedules are refused), or
        SphereChain with V = I (a crossing token's move is followed by LayerNorm; in-group picks
        are exact no-ops, so the law above carries over unchanged); other models are refused.
    x0 : array_like, shape (n, d) or (chains, n, d)
        The initial configuration, shared by all chains or one per chain.
    event : LeaveBall, LeaveHull, ReachVertices or Collapse
        The stopping event (:mod:`metastab.events`).
    max_steps : int or float
        Step budget, any integral value >= 1 (e.g. 1e100): step counts are float64.
    chains : int, optional
        The number of independent chains (default 1, or ``x0.shape[0]`` for a 3-D x0).
    rng : None, int, SeedSequence or Generator
        Root of the per-chain streams (recorded in the result).
    first_chain : int
        Index of the first chain (chain k's stream depends only on the seed and k).
    merge_tol : float in [0, 1], optional
        Tokens within max-norm distance ``merge_tol × scale`` (scale = the largest
        absolute coordinate of the chain's x0) of a group's point are merged onto it (module
        notes: what it changes).
        Default 1e-10.
    progress : bool or callable(steps_done, total, chains_done)
        ``steps_done`` is the smallest step count among the running chains.
    device : str
        The backend (:mod:`metastab.engine.backends`).

    Returns
    -------
    passage : FirstPassage
        ``times`` is float64 (the step of the event, or ``max_steps`` when censored);
        ``provenance`` records ``mode``, ``merge_tol`` and ``jumps`` (events drawn in all).

    Examples
    --------
    >>> import numpy as np, metastab as ms
    >>> x0 = np.repeat([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]], 2, axis=0)
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=100.0, gamma=0.5), x0, ms.LeaveBall(0.1),
    ...                       max_steps=1e100, chains=4, rng=1, mode="accelerated")
    >>> fp.times.dtype, bool(fp.censored.any()), bool((fp.times > 2.0**63).all())
    (dtype('float64'), False, True)
    """
    total = budget(max_steps)
    tol_rel = merge_tolerance(merge_tol)

    def event_driven(x: np.ndarray, C: int) -> tuple[str | None, int]:
        n, d = x.shape[1:]
        what = f"an accelerated run of {C} chains of {n} tokens in R^{d}"
        return what, x.nbytes + 8 * 4 * C + work_bytes(C, n, d)

    run = prepare_run(
        model, x0, chains=chains, first_chain=first_chain, rng=rng, device=device, event=event,
        extra=event_driven, accelerated=True,
    )  # fmt: skip
    backend, X, C, ev, dyn, gamma = run.backend, run.X, run.chains, run.ev, run.dyn, run.gamma
    assert ev is not None and gamma is not None
    absorbing = applies(model, ev.code)
    announce_compile(
        progress,
        *backend.kernels("accelerated"),
        *(reach_kernels(ev.code) if absorbing else ()),
    )
    tols = tol_rel * scale(run.x)
    tally = Tally(
        np.zeros(C),
        np.zeros(C),
        np.zeros(C, dtype=bool),
        np.zeros(C, dtype=bool),
        np.zeros(C, dtype=np.int64),
        np.zeros(C, dtype=bool),
    )
    if ev.code != _params.NO_EVENT:
        backend.events_at(X, ev, tally.done)
    if absorbing:  # out of reach at time 0 (the kernel tests after each event)
        out_of_reach(X, ev, tally.done, tally.absorbed)
        tally.done[tally.absorbed] = True
    tic = time.perf_counter()
    # the kernel before the bar, whose clock then measures the run (as exact.drive)
    backend.compile_accelerated(X, run.state, dyn, gamma, tols, float(total), _FIRST_CALL_JUMPS,
                                ev, tally)  # fmt: skip
    report = Progress(progress, total, C)
    _run(backend, model, X, run.state, dyn, gamma, tols, float(total), ev, tally, report)
    times = tally.time + tally.comp
    times[tally.censored] = float(total)
    arguments = {
        "max_steps": total,
        "chains": C,
        "first_chain": run.first_chain,
        "mode": "accelerated",
        "merge_tol": merge_tol,
        "device": device,
    }
    jumps = int(tally.jumps.sum())
    return run.passage(
        tic, times, tally.censored, tally.absorbed, total, arguments,
        mode="accelerated", merge_tol=tol_rel, jumps=jumps,
    )  # fmt: skip


def _run(
    backend: Backend,
    model: Model,
    X: np.ndarray,
    state: np.ndarray,
    dyn: _params.Dynamics,
    gamma: float,
    tols: np.ndarray,
    total: float,
    ev: _params.EventArrays,
    tally: Tally,
    report: Progress,
) -> None:
    """Call the event-driven driver in growing chunks of events until every chain is done."""
    done, chunk = tally.done, _FIRST_CALL_JUMPS
    try:
        while not done.all():
            t0 = time.perf_counter()
            backend.advance_accelerated(X, state, dyn, gamma, tols, total, chunk, ev, tally)
            if time.perf_counter() - t0 < _CALL_SECONDS:
                chunk *= 2
            check_finite(X, "", model)
            running = ~done
            now = float((tally.time + tally.comp)[running].min()) if running.any() else total
            report(now, int(done.sum()))
    finally:
        report.close()
