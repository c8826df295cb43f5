"""Generalised adaptive multilevel splitting (AMS) over an abstract replica stepper.

The problem
-----------
A Markov chain (X_t) starts at x0 (or from an entrance law), A and B are disjoint sets, τ_A and
τ_B their hitting times, and p = P[τ_B < τ_A] is small (also P[τ_B <= t]: stop at t as well, a
stopping time of the chain (t, X_t)). A score ξ (the importance function: any real function of
the state, with B = {ξ = +inf} in the convention below) orders the paths by how far they got.

The algorithm
-------------
Bréhier, Gazeau, Goudenège, Lelièvre & Rousset, *Unbiasedness of some generalized adaptive
multilevel splitting algorithms*, Ann. Appl. Probab. 26(6) (2016) 3559-3601, arXiv:1505.02674:
the generalised AMS of their section 3 with k = 1, in the discrete-time (path) setting.

1. N replicas, each a whole path from the start, run until τ_A ∧ τ_B (or the horizon). The level
   of a replica is the maximum of ξ along its path, +inf if it met B.
2. Iteration q: Z_q = min_k level_k. If Z_q = +inf, stop. Kill **every** replica with
   level <= Z_q (K_q of them: the tie rule, which is what keeps the estimator unbiased when ξ has
   atoms, as on a lattice or at the frozen states of SA_P). If K_q = N, the run is *extinct*:
   p̂ = 0. Else each killed replica takes the path of a survivor drawn uniformly (independently,
   with replacement) among the N − K_q, up to that path's **first time with ξ > Z_q**, and
   continues from there with fresh randomness until A, B or the horizon.
3. p̂ = Π_q (1 − K_q / N) × (1/N) #{replicas that met B}, the estimator of their section 3,
   unbiased for p whatever N and ξ (their main theorem, section 4).

The unbiasedness holds for one run; the error bar comes from M independent runs (their mean and
spread: :meth:`~metastab.results.ams.AMSResult.confidence_interval`). Walter (2015,
arXiv:1507.00919) shows that the naive variant (kill one replica per iteration with factor
1 − 1/N and branch at the first time with ξ >= Z) is inconsistent when ξ has atoms;
``kill_ties=False`` runs it, as a negative control only.

A path is stored as its *records*: the states at which ξ first exceeds its running maximum. The
first time above any level Z is one of them, so branching needs nothing else, and a branch shares
its parent's records (a linked list), so killing copies nothing.

The stepper
-----------
The core is pure Python and NumPy: the dynamics, the score and the sets come from a *replica
stepper* (:class:`ReplicaStepper`), which advances a batch of replicas, each to the end of its
path, and reports its records. The replicas of all runs that an iteration resamples go to the
stepper in one batch (so that a vectorised or compiled stepper does the work), but what a replica
draws depends only on its stream id: the words (key0, key1, slot) with (key0, key1) the key of
its run (the root seed's spawn key + (run,)) and ``slot`` its index in the run (0..N−1 for the
first replicas, then N, N+1, ... in the order in which the run resamples). A run's result is then
a pure function of (seed, run), whatever the batching, the number of runs or the thread count.
The survivors are drawn by a Generator of its own per run (spawn key + (run, 1)).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from .._validate import integer

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..rng import Seed, SeedLike

__all__ = [
    "BUDGET",
    "FAILED",
    "REACHED",
    "AMSRuns",
    "ReplicaStepper",
    "Segment",
    "run_ams",
    "stream_ids",
]

# How a replica's path ended.
FAILED, REACHED, BUDGET = 0, 1, 2  # in A or at the horizon; in B; stopped by a safety budget

_CHOOSE = 1  # spawn-key word of the Generator that draws the survivors of a run


class Segment(NamedTuple):
    """The continuation of one replica's path, as a stepper returns it.

    ``levels`` (m,) are the new running maxima of ξ after the start of the segment, strictly
    increasing and above the level the segment started with (+inf for the step that met B),
    ``times`` (m,) the clock at each and ``states`` (m, ...) the state there; ``status`` is how
    the path ended (FAILED, REACHED or BUDGET) and ``clock`` the time it ended at.
    """

    levels: np.ndarray
    times: np.ndarray
    states: np.ndarray
    status: int
    clock: float


class ReplicaStepper(Protocol):
    """What the AMS core asks of the dynamics (module notes)."""

    def score(self, states: np.ndarray) -> np.ndarray:
        """ξ of the states (K, ...) as floats, +inf for a state in B."""
        ...

    def advance(
        self, states: np.ndarray, clocks: np.ndarray, levels: np.ndarray, streams: np.ndarray
    ) -> list[Segment]:
        """Run replica q from ``states[q]`` at time ``clocks[q]`` with running maximum
        ``levels[q]`` until A, B, the horizon or a budget, drawing from the stream whose id is
        ``streams[q]`` (uint64 words key0, key1, slot), and return its :class:`Segment`.
        The stepper takes at least one step (the start itself is never tested for A)."""
        ...


class _Record:
    """A record of a path (level, clock, state) and the record before it (None at the start)."""

    __slots__ = ("level", "time", "state", "before")

    def __init__(self, level: float, time: float, state: np.ndarray, before: _Record | None):
        self.level, self.time, self.state, self.before = level, time, state, before


def _first_above(tip: _Record, Z: float, naive: bool) -> _Record:
    """The first record of the path ending at ``tip`` with level > Z (>= Z: ``naive``). A path's
    record levels increase strictly, so the walk back from the tip meets only records above Z."""
    r = tip
    while r.before is not None and (r.before.level >= Z if naive else r.before.level > Z):
        r = r.before
    return r


@dataclass(frozen=True)
class AMSRuns:
    """What :func:`run_ams` measured, per run (arrays of length R).

    ``estimates`` the p̂_r; ``iterations`` and ``killed`` the iterations and killed replicas;
    ``extinct`` whether every replica fell at one level (p̂_r = 0 by extinction, not by the
    last factor); ``reached`` the replicas in B at the end; ``reached_clock`` their mean clock
    (nan where none); ``budget_hits`` the paths a safety budget stopped (counted as failures,
    which biases p̂ downwards); ``paths`` the paths (or continuations) the stepper ran, of
    all runs, first and resampled (a cost measure); ``seconds`` the wall time.
    """

    estimates: np.ndarray
    iterations: np.ndarray
    killed: np.ndarray
    extinct: np.ndarray
    reached: np.ndarray
    reached_clock: np.ndarray
    budget_hits: int
    paths: int
    replicas: int
    seconds: float


def entrance_array(entrance: ArrayLike, runs: int, replicas: int, n: int, d: int) -> np.ndarray:
    """A given entrance sample (the replicas' starts, one per run and replica) as a contiguous
    (runs, replicas, n, d) float array, or a ValueError that names the shape wanted."""
    try:
        e = np.array(entrance, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"entrance must be a numeric array, got {entrance!r}") from None
    if e.shape != (runs, replicas, n, d) or not np.isfinite(e).all():
        raise ValueError(
            f"entrance must be a finite (runs, replicas, n, d) = ({runs}, {replicas}, {n}, {d}) "
            f"array, got shape {e.shape}"
        )
    return np.ascontiguousarray(e)


def stream_ids(seed: Seed, runs: int) -> np.ndarray:
    """(runs, 2) uint64: the key of each run's replica streams (module notes)."""
    out = np.empty((runs, 2), np.uint64)
    for r in range(runs):
        seq = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (r,))
        out[r] = seq.generate_state(2, np.uint64)
    return out


def _choosers(seed: Seed, runs: int) -> list[np.random.Generator]:
    return [
        np.random.default_rng(
            np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (r, _CHOOSE))
        )
        for r in range(runs)
    ]


def run_ams(
    stepper: ReplicaStepper,
    start: np.ndarray,
    *,
    replicas: int,
    runs: int,
    rng: SeedLike = None,
    entrance: bool = False,
    kill_ties: bool = True,
    max_iterations: int | None = None,
) -> tuple[AMSRuns, Seed]:
    """Run ``runs`` independent generalised AMS runs of ``replicas`` replicas each (module notes).

    Parameters
    ----------
    stepper : ReplicaStepper
        The dynamics, the score and the sets (module notes).
    start : ndarray
        The start x0 of every replica (one state), or with ``entrance`` a sample of the entrance
        law, (runs, replicas, ...) (each replica its own start).
    replicas : int >= 2
        N.
    runs : int >= 1
        Independent runs.
    rng : None, int, SeedSequence, Generator or Seed
        The root seed (recorded as the returned Seed).
    kill_ties : bool
        True (the algorithm): kill every replica at the minimum level. False: the naive variant
        (kill one, branch at ξ >= Z, factor 1 − 1/N), biased when ξ has atoms (Walter 2015);
        for negative controls only.
    max_iterations : int, optional
        Per run; a run past it is an error (a score that never separates the replicas). Default
        1000 N + 1000.

    Returns
    -------
    (AMSRuns, Seed)
    """
    from ..rng import as_seed

    N = integer("replicas", replicas, 2)
    R = integer("runs", runs, 1)
    limit = integer(
        "max_iterations", 1000 * N + 1000 if max_iterations is None else max_iterations, 1
    )
    seed = as_seed(rng)
    x = np.asarray(start, dtype=float)
    if entrance:
        if x.ndim < 2 or x.shape[:2] != (R, N):
            raise ValueError(
                f"start must have shape (runs, replicas, ...) = ({R}, {N}, ...) with "
                f"entrance=True, got {x.shape}"
            )
        starts = x.reshape((R * N,) + x.shape[2:])
    else:
        starts = np.broadcast_to(x, (R * N,) + x.shape)
    if not np.isfinite(starts).all():
        raise ValueError("start must be finite")
    tic = time.perf_counter()
    keys = stream_ids(seed, R)
    choosers = _choosers(seed, R)
    levels = np.asarray(stepper.score(np.ascontiguousarray(starts)), dtype=float).reshape(R, N)
    if np.isnan(levels).any():
        raise ValueError("the stepper's score of the start is nan")
    tips = [
        [_Record(levels[r, k], 0.0, starts[r * N + k], None) for k in range(N)] for r in range(R)
    ]
    status = np.full((R, N), REACHED)
    clocks = np.zeros((R, N))
    budget_hits = 0
    paths = 0

    def run(jobs: list[tuple[int, int]], slots: list[int]) -> None:
        nonlocal budget_hits, paths
        X = np.stack([tips[r][k].state for r, k in jobs])
        t0 = np.array([tips[r][k].time for r, k in jobs])
        lv0 = np.array([levels[r, k] for r, k in jobs])
        ids = np.empty((len(jobs), 3), np.uint64)
        for q, ((r, _k), s) in enumerate(zip(jobs, slots)):
            ids[q, :2] = keys[r]
            ids[q, 2] = s
        segments = stepper.advance(X, t0, lv0, ids)
        paths += len(jobs)
        for (r, k), seg in zip(jobs, segments):
            tip = tips[r][k]
            for level, t, state in zip(seg.levels.tolist(), seg.times.tolist(), seg.states):
                tip = _Record(level, t, state, tip)
            tips[r][k] = tip
            levels[r, k] = tip.level
            status[r, k] = seg.status
            clocks[r, k] = seg.clock
            budget_hits += seg.status == BUDGET

    first = [(r, k) for r in range(R) for k in range(N) if levels[r, k] != np.inf]
    if first:
        run(first, [k for _r, k in first])
    p = np.ones(R)
    iterations = np.zeros(R, np.int64)
    killed = np.zeros(R, np.int64)
    extinct = np.zeros(R, bool)
    slot = np.full(R, N, np.int64)
    active = np.ones(R, bool)
    while active.any():
        jobs: list[tuple[int, int]] = []
        slots: list[int] = []
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
                p[r], extinct[r], active[r] = 0.0, True, False
                continue
            if iterations[r] == limit:
                raise ValueError(
                    f"AMS run {r} passed max_iterations={limit} (level {Z:.6g}, killing "
                    f"{K} of {N} per iteration): the score barely separates the replicas; "
                    f"give a score that increases along the paths to B, or raise max_iterations"
                )
            iterations[r] += 1
            killed[r] += K
            p[r] *= 1.0 - K / N
            parents = alive[choosers[r].integers(0, alive.size, size=K)]
            # the parents survive this iteration, so none of them is overwritten here
            for k, j in zip(dead.tolist(), parents.tolist()):
                b = _first_above(tips[r][j], Z, not kill_ties)
                tips[r][k] = b
                levels[r, k] = b.level
                clocks[r, k] = b.time
                status[r, k] = REACHED if b.level == np.inf else FAILED
                if b.level != np.inf:  # else: branched at the step that met B
                    jobs.append((r, k))
                    slots.append(int(slot[r]))
                    slot[r] += 1
        if jobs:
            run(jobs, slots)
    done = np.isinf(levels)
    p *= done.mean(axis=1)
    reached = done.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        reached_clock = np.where(done, clocks, 0.0).sum(axis=1) / reached
    reached_clock[reached == 0] = math.nan
    out = AMSRuns(
        estimates=p,
        iterations=iterations,
        killed=killed,
        extinct=extinct,
        reached=reached,
        reached_clock=reached_clock,
        budget_hits=int(budget_hits),
        paths=int(paths),
        replicas=N,
        seconds=time.perf_counter() - tic,
    )
    return out, seed
