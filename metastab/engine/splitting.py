"""Adaptive multilevel splitting (AMS) for the escape probability and mean escape time of SA_P.

Deprecated: :func:`escape_probability` and :func:`mean_escape_time` warn (DeprecationWarning)
and will be removed. Rare-event probabilities: :func:`metastab.engine.ams_probability`
(generalised AMS from the real start, :mod:`metastab.engine.ams`); SA_P's mean escape time:
:func:`metastab.first_passage` with ``mode="accelerated"``. The notes below say why.

The problem
-----------
Start SA_P (docs: models#models-rd) at a reference configuration ``x_ref`` (typically frozen: tokens
on κ points, docs: models#statements-fw) and let the stopping event be a LeaveHull (the exit T2 of
[FW] Thm 5.4) or a LeaveBall. With the reaction coordinate ξ(X) = max_i dist(x_i, K_i) / r_i (K_i
the token's group hull or ball centre, r_i the event radius: the quantity the event thresholds, so
the event is ξ > 1) the path alternates between

- a *sojourn* in the reference set A = {ξ <= z_A} (``reference_level`` z_A, in the event's
  distance units), σ steps, ending at the first step with ξ > z_A: the *entrance* Y;
- an *excursion* from Y, ρ steps, that either meets the event (success) or returns to A.

When the escape needs several unlikely moves in a row (Thm 5.4 with ε/γ >= 2 d(K)), direct
simulation sees almost only failed excursions. Splitting estimates p = P[an excursion meets the
event before it returns to A], from the entrance law, along ξ.

The algorithm (one run, N = ``replicas``)
-----------------------------------------
The generalized AMS of Bréhier, Gazeau, Goudenège, Lelièvre & Rousset (2016), *Unbiasedness of
some generalized adaptive multilevel splitting algorithms*, Ann. Appl. Probab. 26(6), 3559-3601,
with k = 1, which is unbiased for discrete-time chains whose ξ has ties:

1. Draw N independent entrances Y_k (each from its own sojourn started at ``x_ref``) and run each
   excursion until it meets the event or returns to A. The level L_k of a replica is the maximum
   of ξ along its excursion (+inf if it met the event).
2. Iteration j: Z_j = min_k L_k. If Z_j = +inf, stop. Kill ALL replicas with L_k <= Z_j (K_j of
   them); if K_j = N, stop with p̂ = 0. Otherwise each killed replica copies the path of a
   survivor chosen uniformly (independently) among the N − K_j, up to that path's first step with
   ξ > Z_j, and continues from there with fresh randomness until the event or A.
3. p̂ = Π_j (1 − K_j / N) × (fraction of replicas that met the event), and the last factor is 1
   when the algorithm stops at step 2. E[p̂] = p exactly (op. cit., main theorem), whatever N.

``runs`` independent runs give p̄ (the mean of the p̂_r) and an interval from their spread. A path
is stored as its records (the states at which ξ first exceeds its running maximum): the first
step above any level is one of them, so branching needs nothing else.

The mean escape time
--------------------
If the chain restarts afresh (in law) at each return to A, the cycles (σ_k, ρ_k, success_k) are
i.i.d., T = Σ_{k <= M} (σ_k + ρ_k) with M ~ Geometric(p) the index of the first success, a
stopping time of the cycles, and Wald's identity gives (renewal-reward; the loop decomposition of
Cérou, Guyader, Lelièvre & Pommier (2011), J. Chem. Phys. 134, 054108, and
Lopes & Lelièvre (2019), J. Comput. Chem. 40, 1198):

    E[T] = E[M] E[σ + ρ] = (E[σ] + E[ρ 1_fail] + E[ρ 1_success]) / p
         = E[σ]/p + (1/p − 1) E[ρ | fail] + E[ρ | success].

No independence between σ and the outcome is needed. Each run estimates the numerator without
bias: E[σ] by its N sojourns, E[ρ 1_fail] by its N first excursions (i.i.d. before any
splitting), and E[ρ 1_success] by p̂ × (mean length of the final replicas), AMS being unbiased
for path functionals E[φ(path) 1_success] as well (op. cit.). E[T] is the ratio of the run means;
its interval is the delta method on log E[T] over the runs (Student t, runs − 1 degrees of
freedom).

What is assumed: the restart at A, and it is checked. The cycles are i.i.d. only if the chain
re-enters A at ``x_ref`` itself (in law). The result records how far from ``x_ref`` every
return lands, and :meth:`SplittingResult.mean_escape_time` refuses (ValueError) when any return
lands farther than the merge distance from it (exact mode: the default merge distance); p itself
stays valid, as the probability of an excursion from the entrances drawn at ``x_ref``. When no
excursion returns (p̂ = 1 in every run), each replica is a direct sample of T and the estimate
is direct simulation, with no splitting.

Why the refusal. After a displaced token relaxes to within ~1/β of its group, its group mates
pick it with probability of order one and move towards it, so the group collapses at a point
O(1/β) away from where it was: returns to A land displaced, the offsets accumulate over the
cycles (the slow collapse of [FW] prop. origin) and the escape probability grows with them. The
cycles are then not i.i.d., and the renewal formula, which gives every cycle the first cycle's
escape probability, overestimates E[T]. ``tests/engine/test_splitting.py`` shows it on a triangle
(three tokens per vertex, γ = 0.45, LeaveHull radius 1, β = 40) and on a pentagon: every return
lands displaced, and the formula applied anyway fails the agreement check against accelerated
:func:`metastab.first_passage` (slow tier). No other single entrance law rescues it: the one for
which E[T] = E_ν[σ + ρ] / P_ν[success] holds (the Hill relation) is the entrance law averaged over
the cycles of the whole path to the escape, which only direct simulation samples; and direct
simulation of that path is what the accelerated mode does exactly, at any β
(:func:`metastab.first_passage` with ``mode="accelerated"``).

Where the restart holds. With a merge distance above that ~1/β scale (``merge_tol=0.2`` in the
tests) a returning token is snapped onto its vertex before its mates move, the chain re-enters A
at ``x_ref`` exactly, and splitting agrees with :func:`metastab.first_passage` run at the same
merge distance (tests). That chain is not SA_P: tokens jump by up to the merge distance, and its
mean escape time is not SA_P's (the same tests: the merged chain's estimate fails the check
against SA_P's exact mean). :func:`escape_probability` warns when ``merge_tol`` exceeds the
default, and the result records the chain it estimated (``chain``). A group that settles
elsewhere leaves A for good: such an excursion goes on until the event (correctly, it is part of
the escape) or the step budget, which is reported.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._validate import integer, real
from ..events import LeaveBall, LeaveHull
from ..exceptions import DiagnosticWarning
from ..kernels import params as _params
from ..kernels import streams as _streams
from ..models import SoftmaxChain
from ..results import provenance
from ..results.protocol import plain
from ..results.splitting import EscapeTime, SplittingResult
from ..rng import Seed, as_seed
from .accelerated import budget
from .backends import (
    BUDGET,
    FULL,
    IN_A,
    IN_B,
    Backend,
    Bounds,
    Records,
    Walk,
    coordinates,
    resolve,
)
from .resolution import MERGE_TOL, check_mode, check_resolution, constant_chain, merge_tolerance

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import ArrayLike

    from ..rng import SeedLike

# The results live in metastab.results.splitting; their names here stay importable.
__all__ = [
    "SplittingResult",
    "EscapeTime",
    "escape_probability",
    "mean_escape_time",
    "reaction_coordinate",
]

_RECORDS = 32  # record buffer per replica and kernel call (grown by further calls)
# Default step budget of an exact-mode excursion or sojourn (accelerated mode: none).
_EXACT_BUDGET = 10**7


# --------------------------------------------------------------------------- the AMS core


class _Record:
    """One record of a replica's path, its level ξ, clock and state, with the record before it
    (None for the path's entrance). A path is its last record; a branch shares its parent's
    records up to the branching one, so killing a replica copies nothing, and the records that
    no path reaches any more are freed."""

    __slots__ = ("level", "time", "state", "before")

    def __init__(self, level: float, time: float, state: np.ndarray, before: _Record | None):
        self.level, self.time, self.state, self.before = level, time, state, before


def _branch_point(tip: _Record, Z: float, naive: bool) -> _Record:
    """The first record above Z (at or above it: ``naive``) of the path that ends at ``tip``, a
    record above Z (at or above). A path's levels increase strictly (a record is a new maximum
    of ξ, module notes), so the walk back from the tip visits only the records above Z."""
    r = tip
    while r.before is not None and (r.before.level >= Z if naive else r.before.level > Z):
        r = r.before
    return r


def _ams(
    advance: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray, list]],
    start: np.ndarray,
    start_level: np.ndarray,
    start_in_b: np.ndarray,
    first_streams: np.ndarray,
    run_keys: list,
    choosers: list[np.random.Generator],
    *,
    kill_ties: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Run the AMS iterations (module notes) of all runs in lockstep.

    ``advance(X, clock, level, streams)`` runs excursions from the configurations X (K, ...) with
    the streams (K, 4), in place on the streams, and returns (status, clock, level, records) with
    records a list of (levels, times, states) per replica. ``start`` (R, N, ...) holds the
    entrances, ``start_level`` their ξ, ``start_in_b`` whether an entrance already meets the
    event, ``first_streams`` (R, N, 4) the streams of the first excursions (those that drew the
    entrances, continued). Resampled replicas of run r take streams N, N+1, ... (in order of
    killing) of the key ``run_keys[r]``; ``choosers[r]`` is the Generator choosing survivors.

    ``kill_ties=False`` is the naive variant (kill one replica per iteration, branch at the first
    step with ξ >= Z, factor 1 − 1/N), biased when ξ has ties; it exists as a negative control.

    Returns (p̂ (R,), iterations (R,), killed (R,), first status (R, N), first lengths (R, N),
    mean length of the final replicas that met the event (R,), excursions stopped by the budget).
    """
    R, N = start.shape[:2]
    levels = np.where(start_in_b, np.inf, start_level).astype(float)
    tips = [[_Record(levels[r, k], 0.0, start[r, k], None) for k in range(N)] for r in range(R)]
    lengths = np.zeros((R, N))
    first_status = np.full((R, N), IN_B)
    budget_hits = 0

    def run(jobs: list[tuple[int, int]], streams: np.ndarray) -> np.ndarray:
        nonlocal budget_hits
        X = np.stack([tips[r][k].state for r, k in jobs])
        clock0 = np.array([tips[r][k].time for r, k in jobs])
        lev0 = np.array([levels[r, k] for r, k in jobs])
        status, clock, lev, recs = advance(X, clock0, lev0, streams)
        budget_hits += int((status == BUDGET).sum())
        for q, (r, k) in enumerate(jobs):
            lv, tm, st = recs[q]
            tip = tips[r][k]
            for level, t, state in zip(lv.tolist(), tm.tolist(), st):
                tip = _Record(level, t, state, tip)
            tips[r][k] = tip
            levels[r, k] = lev[q]
            lengths[r, k] = clock[q]
        return status

    todo = [(r, k) for r in range(R) for k in range(N) if not start_in_b[r, k]]
    if todo:
        status = run(todo, np.stack([first_streams[r, k] for r, k in todo]))
        for q, (r, k) in enumerate(todo):
            first_status[r, k] = status[q]
    first_lengths = lengths.copy()
    p = np.ones(R)
    iterations = np.zeros(R, np.int64)
    killed = np.zeros(R, np.int64)
    next_stream = np.full(R, N, np.int64)
    active = np.ones(R, bool)
    while active.any():
        again = []
        for r in np.flatnonzero(active).tolist():
            lv = levels[r]
            Z = lv.min()
            if Z == np.inf:
                active[r] = False
                continue
            if kill_ties:
                dead, alive = np.flatnonzero(lv <= Z), np.flatnonzero(lv > Z)
            else:
                dead = np.array([int(np.argmin(lv))])
                alive = np.delete(np.arange(N), dead)
            K = dead.size
            if K == N:
                p[r] = 0.0
                active[r] = False
                continue
            iterations[r] += 1
            killed[r] += K
            p[r] *= 1.0 - K / N
            parents = alive[choosers[r].integers(0, alive.size, size=K)]
            # branch: the killed replica takes its parent's path up to the branching record
            # (the parents survive this iteration, so none of them is overwritten here)
            for k, j in zip(dead.tolist(), parents.tolist()):
                b = _branch_point(tips[r][j], Z, not kill_ties)
                tips[r][k] = b
                levels[r, k] = b.level
                lengths[r, k] = b.time
                if b.level != np.inf:  # else: branched at the step that met the event
                    again.append((r, k))
        if again:
            streams = np.empty((len(again), 4), np.uint64)
            for q, (r, _k) in enumerate(again):
                _streams.seed_streams(
                    run_keys[r][0], run_keys[r][1], np.uint64(next_stream[r]), streams[q : q + 1]
                )
                next_stream[r] += 1
            run(again, streams)
    done = np.isinf(levels)
    p *= done.mean(axis=1)
    with np.errstate(invalid="ignore"):
        reactive = np.where(
            done.any(axis=1),
            np.where(done, lengths, 0.0).sum(axis=1) / np.maximum(done.sum(axis=1), 1),
            np.nan,
        )
    return p, iterations, killed, first_status, first_lengths, reactive, budget_hits


# --------------------------------------------------------------------------- SA_P front end


def _event_arrays(
    model: SoftmaxChain, x_ref: np.ndarray, event: LeaveBall | LeaveHull
) -> _params.EventArrays:
    if not isinstance(event, (LeaveBall, LeaveHull)):
        raise ValueError(
            f"event must be a LeaveBall or a LeaveHull (the events a distance "
            f"thresholds), got {event!r}"
        )
    return event.compile(np.ascontiguousarray(x_ref[None]), model.key_query(x_ref.shape[1]))


def _chain(model: SoftmaxChain, d: int) -> tuple[_params.Dynamics, float]:
    """The kernel parameters and constant scalar step of a SoftmaxChain with a constant step
    (the splitting kernel runs SA_P alone)."""
    if not isinstance(model, SoftmaxChain):
        raise ValueError(f"model must be a SoftmaxChain (SA_P), got {model!r}")
    why = "cycles repeat only for a time-homogeneous chain"
    return constant_chain(model, d, why=why, what="model must have")


def _reference(x_ref: ArrayLike) -> np.ndarray:
    try:
        x = np.array(x_ref, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"x_ref must be a numeric n×d array, got {x_ref!r}") from None
    if x.ndim != 2 or 0 in x.shape or not np.isfinite(x).all():
        raise ValueError(f"x_ref must be a finite n×d array, got shape {x.shape}")
    return np.ascontiguousarray(x)


def reaction_coordinate(
    x: ArrayLike,
    event: LeaveBall | LeaveHull,
    *,
    x_ref: ArrayLike | None = None,
    B: ArrayLike | None = None,
) -> float | np.ndarray:
    """ξ(X) = max_i dist(x_i, K_i) / r_i of the configurations ``x`` for ``event`` (module notes).

    Parameters
    ----------
    x : array_like, (n, d) or (C, n, d)
    event : LeaveBall or LeaveHull
    x_ref : array_like (n, d), optional
        The configuration the event is compiled for (default: ``x`` itself, or ``x[0]``): the
        group hulls of a LeaveHull, the default ball centres of a LeaveBall.
    B : array_like (d, d), optional
        Key-query matrix (events do not use it; default identity).

    Returns
    -------
    float or ndarray (C,)

    Examples
    --------
    >>> import metastab as ms
    >>> ev = ms.LeaveHull(groups=[0, 0, 1], radius=0.5)
    >>> ref = [[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]
    >>> float(reaction_coordinate([[0.5, 0.2], [1.0, 0.0], [5.0, 5.0]], ev, x_ref=ref))
    0.4
    """
    X = np.array(x, dtype=float)
    one = X.ndim == 2
    if one:
        X = X[None]
    if X.ndim != 3 or 0 in X.shape or not np.isfinite(X).all():
        raise ValueError(f"x must be a finite n×d or C×n×d array, got shape {np.shape(x)}")
    ref = _reference(X[0] if x_ref is None else x_ref)
    if ref.shape != X.shape[1:]:
        raise ValueError(f"x_ref must have shape {X.shape[1:]}, got {ref.shape}")
    if not isinstance(event, (LeaveBall, LeaveHull)):
        raise ValueError(f"event must be a LeaveBall or a LeaveHull, got {event!r}")
    Bm = np.eye(ref.shape[1]) if B is None else np.asarray(B, dtype=float)
    out = np.empty(X.shape[0])
    coordinates(np.ascontiguousarray(X), event.compile(ref[None], Bm), out)
    return float(out[0]) if one else out


def escape_probability(
    model: SoftmaxChain,
    x_ref: ArrayLike,
    event: LeaveBall | LeaveHull,
    *,
    replicas: int = 100,
    runs: int = 20,
    rng: SeedLike = None,
    reference_level: float | None = None,
    mode: str = "accelerated",
    max_steps: int | float | None = None,
    merge_tol: float | None = None,
    device: str = "cpu",
) -> SplittingResult:
    """P[an excursion from the reference set meets ``event`` before returning], by AMS.

    .. deprecated::
        Use :func:`metastab.engine.ams_probability` (generalised AMS from the real start, no
        entrance drawn at ``x_ref``); this function warns (DeprecationWarning) and will be
        removed.

    Parameters
    ----------
    model : SoftmaxChain
        SA_P with a constant step (scalar γ or step matrix).
    x_ref : array_like (n, d)
        The reference configuration (typically frozen); the event is compiled for it (group hulls,
        ball centres), and every sojourn starts from it.
    event : LeaveHull or LeaveBall
        The escape; ξ is its distance in units of its radius (module notes).
    replicas : int >= 2
        N, replicas per run.
    runs : int >= 2
        Independent runs (their spread gives the interval).
    rng : None, int, SeedSequence or Generator
        Root seed; run r draws from its own streams (spawn key (r, ·)), so a run's result does
        not depend on the number of runs or threads.
    reference_level : float >= 0, optional
        z_A, in the event's distance units, below the radius; A = {ξ <= z_A / radius}.
        Default: 0 in accelerated mode (a token is back when it is merged onto its group point
        or lies in its group hull), ``MERGE_TOL`` × (largest absolute coordinate of x_ref, 1 if
        0) in exact mode, where relaxation is geometric and never ends exactly.
    mode : {"accelerated", "exact"}
        Step as :func:`metastab.first_passage` does in that mode (accelerated: event-driven,
        exact at any β up to the merge; exact: every step, 53-bit uniforms).
    max_steps : int or float, optional
        Step budget of every excursion, and in exact mode of every sojourn. Default: 10^7 in
        exact mode; none in accelerated mode, which draws a frozen stretch in one go at any β
        (an excursion that settles elsewhere than A then runs to the event, as it should: it is
        part of the escape). Sojourns of the accelerated mode have no budget. An excursion
        stopped by it counts as a return (DiagnosticWarning with the count), a sojourn stopped
        by it is an error.
    merge_tol : float, optional
        Accelerated mode only (default :data:`metastab.engine.MERGE_TOL`).
    device : str
        Where the replicas run (:mod:`metastab.engine.backends`).

    Returns
    -------
    SplittingResult

    Examples
    --------
    >>> import numpy as np, metastab as ms, warnings
    >>> from metastab.engine import escape_probability
    >>> warnings.simplefilter("ignore", DeprecationWarning)
    >>> x = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)   # frozen
    >>> ev = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)
    >>> res = escape_probability(ms.SoftmaxChain(beta=30.0, gamma=0.45), x, ev, replicas=50,
    ...                          runs=4, rng=1, reference_level=0.05)
    >>> bool(0 < res.p < 0.1), res.runs.shape, res.chain
    (True, (4,), 'SA_P')
    """
    return _escape_probability(
        model,
        x_ref,
        event,
        replicas=replicas,
        runs=runs,
        rng=rng,
        reference_level=reference_level,
        mode=mode,
        max_steps=max_steps,
        merge_tol=merge_tol,
        device=device,
        deprecated="escape_probability",
    )


def _deprecation(name: str) -> None:
    warnings.warn(
        f"metastab.engine.{name} is deprecated and will be removed: its renewal formula "
        f"assumed that every return lands at x_ref; use metastab.engine.ams_probability "
        f"(generalised AMS from the real start) for rare-event probabilities, and "
        f"metastab.first_passage(..., mode='accelerated') for SA_P's mean escape time",
        DeprecationWarning,
        stacklevel=4,
    )


def _escape_probability(
    model: SoftmaxChain,
    x_ref: ArrayLike,
    event: LeaveBall | LeaveHull,
    *,
    replicas: int,
    runs: int,
    rng: SeedLike,
    reference_level: float | None,
    mode: str,
    max_steps: int | float | None,
    merge_tol: float | None,
    device: str,
    deprecated: str,
) -> SplittingResult:
    """:func:`escape_probability`, warning that ``deprecated`` (its public caller's name) is
    deprecated once the arguments and the device are checked (so that bad input still raises
    its own error first). The warnings point at the user's call (stacklevel 4)."""
    setup = _setup(model, x_ref, event, replicas, runs, reference_level, mode, max_steps, merge_tol)
    backend = resolve(device)
    _deprecation(deprecated)
    chain = _chain_name(setup)
    if chain != "SA_P":
        warnings.warn(
            f"merge_tol={merge_tol!r} is above the default merge distance {MERGE_TOL:g}: "
            f"tokens within it of a group point are moved onto it, so the chain estimated "
            f"is not SA_P but {chain} (recorded as the result's chain; on the frozen "
            f"triangle of the module notes its mean escape time is ~70 times SA_P's); "
            f"leave merge_tol at its default to estimate SA_P",
            DiagnosticWarning,
            stacklevel=3,
        )
    seed = as_seed(rng)
    tic = time.perf_counter()
    excursions = _Excursions(setup, backend)
    keys, choosers = _run_streams(seed, setup.runs)
    streams, sojourn, Y, in_b, level0 = _sojourns(excursions, setup, keys, max_steps)
    returns = _Returns(excursions, setup.x)
    R, N, n, d = setup.runs, setup.replicas, setup.n, setup.d
    p, iters, killed, fst, fcl, reactive, hits = _ams(
        returns,
        Y.reshape(R, N, n, d),
        level0.reshape(R, N),
        in_b,
        streams.reshape(R, N, 4),
        keys,
        choosers,
    )
    if hits:
        warnings.warn(
            f"{hits} excursions reached max_steps={max_steps!r} without meeting the "
            f"event or returning to the reference set; they count as returns, which "
            f"biases p downwards: raise max_steps",
            DiagnosticWarning,
            stacklevel=3,
        )
    offsets = np.concatenate(returns.offsets) if returns.offsets else np.empty(0)
    # "back at x_ref": within the merge distance (exact mode: the default merge distance)
    accelerated = setup.mode == "accelerated"
    near = setup.tol if accelerated else MERGE_TOL * setup.scale
    meta = provenance(
        wall_seconds=time.perf_counter() - tic,
        n=n,
        d=d,
        mode=setup.mode,
        merge_tol=setup.tol / setup.scale if accelerated else None,
    )
    return SplittingResult(
        p=float(p.mean()),
        runs=p,
        replicas=N,
        reference_level=setup.z_A,
        mode=setup.mode,
        iterations=iters,
        killed=killed,
        sojourns=sojourn.reshape(R, N),
        first_lengths=fcl,
        first_escaped=(fst == IN_B),
        reactive_lengths=reactive,
        budget_hits=hits,
        returns=int(offsets.size),
        displaced_returns=int((offsets > near).sum()),
        largest_return_offset=float(offsets.max()) if offsets.size else 0.0,
        chain=chain,
        model=model.to_dict(),
        event=event.to_dict(),
        seed=seed.to_dict(),
        provenance=meta,
        x_ref=setup.x.copy(),
        arguments={
            "replicas": N,
            "runs": R,
            "reference_level": plain(reference_level),
            "mode": setup.mode,
            "max_steps": plain(max_steps),
            "merge_tol": plain(merge_tol),
            "device": device,
        },
    )


@dataclass(frozen=True)
class _Setup:
    """The validated parameters of one :func:`escape_probability` call."""

    x: np.ndarray  # x_ref (n, d)
    scale: float  # largest |coordinate| of x_ref, 1 if 0
    replicas: int
    runs: int
    mode: str
    total: float  # step budget of an excursion
    tol: float  # absolute merge distance (exact mode: 0)
    z_A: float  # reference level, distance units
    low: float  # reference level, units of the radius
    dyn: _params.Dynamics
    gamma: float
    ev: _params.EventArrays

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def d(self) -> int:
        return self.x.shape[1]


def _setup(
    model: SoftmaxChain,
    x_ref: ArrayLike,
    event: LeaveBall | LeaveHull,
    replicas: int,
    runs: int,
    reference_level: float | None,
    mode: str,
    max_steps: int | float | None,
    merge_tol: float | None,
) -> _Setup:
    """Validate the arguments of :func:`escape_probability`."""
    x = _reference(x_ref)
    d = x.shape[1]
    scale = float(np.abs(x).max()) or 1.0
    N = integer("replicas", replicas, 2)
    R = integer("runs", runs, 2)
    check_mode(mode, merge_tol)
    if mode == "exact":
        total = float(integer("max_steps", _EXACT_BUDGET if max_steps is None else max_steps, 1))
        tol = 0.0
    else:
        total = math.inf if max_steps is None else float(budget(max_steps))
        tol = merge_tolerance(merge_tol) * scale
    dyn, gamma = _chain(model, d)
    ev = _event_arrays(model, x, event)
    radius = float(event.radius)
    if reference_level is None:
        z_A = 0.0 if mode == "accelerated" else MERGE_TOL * scale
    else:
        z_A = real("reference_level", reference_level, low=0, high=radius, high_open=True)
    low = z_A / radius
    xi_ref = reaction_coordinate(x, event, x_ref=x, B=dyn.B)
    if xi_ref > low:
        raise ValueError(
            f"x_ref must lie in the reference set: its ξ is {xi_ref * radius:.3g} "
            f"(distance units) > reference_level={z_A:.3g}"
        )
    if mode == "exact":
        check_resolution(model, x[None], what="reference configurations (x_ref)", stacklevel=4)
    return _Setup(x, scale, N, R, mode, total, tol, z_A, low, dyn, gamma, ev)


def _chain_name(setup: _Setup) -> str:
    """``"SA_P"``, or the merged chain that accelerated mode steps at a merge distance above
    the default (relative to the scale of x_ref, as ``merge_tol``)."""
    relative = setup.tol / setup.scale
    if setup.mode == "exact" or relative <= MERGE_TOL:
        return "SA_P"
    return f"SA_P merged at merge_tol={relative:g}"


class _Excursions:
    """Runs replicas with the backend's ``excursions`` kernel, in calls with record buffers of
    ``_RECORDS`` entries, until none stops for a full buffer."""

    def __init__(self, setup: _Setup, backend: Backend):
        self.setup, self.backend = setup, backend

    def __call__(
        self,
        X: np.ndarray,
        clock: np.ndarray,
        level: np.ndarray,
        streams: np.ndarray,
        *,
        low: float | None = None,
        high: float = np.inf,
        limit: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list, np.ndarray]:
        """(status, clock, level, records, X) of the replicas started from the configurations X
        (K, n, d) with the streams (K, 4) (advanced in place); ``records`` holds per replica its
        (levels, times, states). Bounds default to the reference set, no upper level and the
        excursion budget."""
        s = self.setup
        bounds = Bounds(s.low if low is None else low, high, s.total if limit is None else limit)
        X = np.ascontiguousarray(X, dtype=float).copy()
        walk = Walk(
            np.asarray(clock, dtype=float).copy(),
            np.asarray(level, dtype=float).copy(),
            np.full(X.shape[0], FULL, np.int64),
        )
        recs: list[tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]] = [
            ([], [], []) for _ in range(X.shape[0])
        ]
        todo = np.arange(X.shape[0])
        while todo.size:
            part = Walk(walk.clock[todo], walk.level[todo], np.empty(todo.size, np.int64))
            Xs, ss = X[todo], streams[todo]
            records = self._call(Xs, ss, bounds, part)
            X[todo], streams[todo] = Xs, ss
            walk.clock[todo], walk.level[todo], walk.status[todo] = part
            for q, c in enumerate(todo):
                m = records.written[q]
                for seq, got in zip(recs[c], records[:3]):
                    seq.append(got[q, :m])
            todo = todo[part.status == FULL]
        per_replica = [tuple(np.concatenate(seq) for seq in rec) for rec in recs]
        return walk.status, walk.clock, walk.level, per_replica, X

    def _call(
        self,
        X: np.ndarray,
        streams: np.ndarray,
        bounds: Bounds,
        walk: Walk,
    ) -> Records:
        s, K = self.setup, X.shape[0]
        records = Records(
            np.empty((K, _RECORDS)),
            np.empty((K, _RECORDS)),
            np.empty((K, _RECORDS, s.n, s.d)),
            np.zeros(K, np.int64),
        )
        self.backend.excursions(
            X, streams, s.dyn, s.gamma, s.tol, s.mode == "accelerated", s.ev, bounds, walk, records
        )
        return records


def _run_streams(seed: Seed, runs: int) -> tuple[list, list]:
    """Per run r: the key of its replicas' streams (spawn key (r, 0)) and the Generator choosing
    survivors (spawn key (r, 1))."""
    keys, choosers = [], []
    for r in range(runs):
        seq = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (r, 0))
        keys.append(tuple(np.uint64(w) for w in seq.generate_state(2, np.uint64)))
        choosers.append(
            np.random.default_rng(
                np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (r, 1))
            )
        )
    return keys, choosers


def _sojourns(
    excursions: _Excursions, setup: _Setup, keys: list, max_steps: int | float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The sojourns: stream k of run r from x_ref until ξ > z_A (or the event). Returns the
    streams (which the first excursions continue), the sojourn lengths, the entrances Y, whether
    each already meets the event (R, N) and the entrances' ξ."""
    R, N, n, d = setup.runs, setup.replicas, setup.n, setup.d
    streams = np.empty((R * N, 4), np.uint64)
    for r in range(R):
        _streams.seed_streams(keys[r][0], keys[r][1], np.uint64(0), streams[r * N : (r + 1) * N])
    X0 = np.broadcast_to(setup.x, (R * N, n, d))
    status, sojourn, _, _, Y = excursions(
        X0,
        np.zeros(R * N),
        np.full(R * N, np.inf),
        streams,
        high=setup.low,
        low=-1.0,
        limit=np.inf if setup.mode == "accelerated" else setup.total,
    )
    if (status == BUDGET).any():
        raise ValueError(
            f"{int((status == BUDGET).sum())} of {R * N} sojourns in the "
            f"reference set outlasted max_steps={max_steps!r}: raise it (or use "
            f"mode='accelerated' for frozen configurations)"
        )
    in_b = (status == IN_B).reshape(R, N)
    level0 = np.empty(R * N)
    excursions.backend.coordinates(Y, setup.ev, level0)
    return streams, sojourn, Y, in_b, level0


class _Returns:
    """The excursions of :func:`_ams`, recording max_i |x_i − x_ref,i| at every return to A (the
    restart assumption of the renewal formula)."""

    def __init__(self, excursions: _Excursions, x_ref: np.ndarray):
        self.excursions, self.x_ref = excursions, x_ref
        self.offsets: list[np.ndarray] = []

    def __call__(
        self, X: np.ndarray, clock: np.ndarray, level: np.ndarray, streams: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
        status, clock, level, records, Xe = self.excursions(X, clock, level, streams)
        back = status == IN_A
        self.offsets.append(np.linalg.norm(Xe[back] - self.x_ref, axis=2).max(axis=1))
        return status, clock, level, records


def mean_escape_time(
    model: SoftmaxChain, x_ref: ArrayLike, event: LeaveBall | LeaveHull, **kwargs: Any
) -> EscapeTime:
    """Mean first-passage time of ``event`` from ``x_ref``: :func:`escape_probability` (same
    parameters) combined with the cycle statistics by the renewal formula of the module notes,
    E[T] = E[σ]/p + (1/p − 1) E[ρ | fail] + E[ρ | success].

    .. deprecated::
        For SA_P use :func:`metastab.first_passage` with ``mode="accelerated"`` (exact); rare
        probabilities by :func:`metastab.engine.ams_probability`. Warns (DeprecationWarning)
        and will be removed.

    The formula assumes that the chain restarts at ``x_ref`` after every failed excursion; a
    ValueError refuses the case when a return lands away from it, which SA_P does from a frozen
    configuration at any reference level where excursions return (module notes): its E[T] is for
    :func:`metastab.first_passage` with ``mode="accelerated"``. With no return (as at the
    default reference level of the accelerated mode, below) the estimate is direct simulation.

    Examples
    --------
    >>> import numpy as np, metastab as ms, warnings
    >>> from metastab.engine import mean_escape_time
    >>> warnings.simplefilter("ignore", DeprecationWarning)
    >>> x = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)
    >>> ev = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)
    >>> model = ms.SoftmaxChain(beta=30.0, gamma=0.45)
    >>> et = mean_escape_time(model, x, ev, replicas=50, runs=4, rng=2)
    >>> low, high = et.confidence_interval()
    >>> et.splitting.returns, et.splitting.chain, bool(low < et.mean < high)
    (0, 'SA_P', True)
    >>> mean_escape_time(model, x, ev, replicas=50, runs=4, rng=2,
    ...                  reference_level=0.05)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mean_escape_time refuses this case: ... returns to the reference set ...
    """
    defaults: dict[str, Any] = {
        "replicas": 100,
        "runs": 20,
        "rng": None,
        "reference_level": None,
        "mode": "accelerated",
        "max_steps": None,
        "merge_tol": None,
        "device": "cpu",
    }
    unknown = sorted(set(kwargs) - set(defaults))
    if unknown:
        raise TypeError(f"mean_escape_time() got unexpected keyword arguments {unknown}")
    args = {**defaults, **kwargs}
    return _escape_probability(
        model, x_ref, event, deprecated="mean_escape_time", **args
    ).mean_escape_time()
