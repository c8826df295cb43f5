"""E[T_B] by the Hill relation: :func:`ams_mean_escape_time`, with AMS for the probability
(:func:`metastab.engine.ams_probability`) and direct simulation for the cycles, for SA_P and
for the noisy sphere leaving the uniform state (:mod:`metastab.engine.ams_noisy`: ξ = m_degree,
A = {m_degree <= a}; the direct chains and the replicas are stepped by the backend's
``noisy_excursions``, the drift test compares the exits' order parameters).

The cycles
----------
A chain started at x0 in A = {ξ <= z_A} (ξ the event's distance in units of its radius, as the
AMS score) alternates a *sojourn* σ_k (from the start or the last return into A, until the first
step with ξ > z_A: the *exit* Y_k, a state on the surface Σ = ∂A) and an *excursion* ρ_k (from
Y_k, until the return into A or the event B). Cycle k is (σ_k, Y_k, ρ_k); T_B = Σ_{k<=K}
(σ_k + ρ_k), K the index of the first excursion that meets B.

The relation
------------
Write ⟨f⟩ = E[Σ_{k<=K} f_k] / E[K] for the average of a cycle quantity f_k over the cycles of
the whole path to B, ν for the law of the exits so averaged (ν(g) = ⟨g(Y)⟩), and
p = P_ν[τ_B < τ_A] (an excursion from ν meets B before A). By the strong Markov property at each
exit, E[Σ_{k<=K} h(Y_k)] = P[one success] = 1 with h(y) = P_y[τ_B < τ_A] (the event {k <= K} is
known at the k-th exit), so E[K] = 1/p and

    E[T_B] = ⟨σ + ρ⟩ / p = ⟨σ + ρ; fail⟩ / p + ⟨σ + ρ; success⟩ / p
           = E[τ_cycle | fail] (1 − p)/p + E[τ_cycle | success],

the cycle decomposition of Cérou, Guyader, Lelièvre & Pommier (*A multiple replica approach to
simulate reactive trajectories*, J. Chem. Phys. 134, 054108, 2011) and, as the mean cycle length
over the per-cycle probability, the Hill relation (Lestang, Ragone, Bréhier, Herbert & Bouchet,
*Computing return times or return periods with rare event algorithms*, J. Stat. Mech. 2018,
043213, arXiv:1711.08428; Baudel, Guyader & Lelièvre, *On the Hill relation and the mean
reaction time for metastable processes*, arXiv:2008.09790). The derivation above is this
module's, for the discrete-time chain; the papers' equations are not transcribed. No
independence between the cycles is assumed: the relation is exact with the *cycle-averaged*
entrance law ν. With the law of the first exit from
x0 alone in its place (the renewal formula: every return restarts at x0) it is wrong when the
cycles change along the path, as SA_P's do from a frozen configuration (its groups settle
O(1/β) off their points after each excursion, and the next exit is easier).

The estimator
-------------
ν is sampled by direct simulation: the exits of direct chains run from x0
(:func:`record_cycles`), each followed until it meets B (``cycles=None``: then the recorded
exits are exactly the cycle average of whole paths) or cut after ``cycles`` cycles (then the
recorded exits stand for ν only if the cycle law does not drift along the chain, which
:func:`drift_test` checks). Run r of M is a block of ``chains`` direct chains, with L_r cycles
and D_r steps of sojourns and of the excursions that returned to A, and one generalised AMS run
(:func:`metastab.engine.ams_probability` with ``entrance=``) of N replicas started at exits
drawn uniformly, with replacement, from its block's: given the block, p̂_r is unbiased for
the mean of h over the block's L_r exits, and s_r = p̂_r × (the mean clock of its replicas that
met B) for the mean of u(y) = E_y[ρ; success] (AMS is unbiased for path functionals as well,
Bréhier et al. 2016). So Y_r = D_r + L_r s_r estimates the block's total time and
H_r = L_r p̂_r its Σ h(Y_k), whose mean is its number of escapes, and

    Ê[T_B] = Σ_r Y_r / Σ_r H_r = ⟨σ + ρ⟩^ / p̂,   ⟨σ + ρ⟩^ = Σ_r Y_r / Σ_r L_r,
                                                 p̂ = Σ_r L_r p̂_r / Σ_r L_r:

the cycle-weighted mean cycle duration over the cycle-weighted probability. (The plain mean of
the p̂_r would weigh a block with many cycles as one with few, a bias of order 1/chains: the
plain mean of the blocks' direct success fractions chains / L_r was 8 % above the pooled one
for blocks of 5 chains, 1.6 % for blocks of 25, on the pentagon at z_A = 0.02.) The runs are
independent replicates of the whole procedure, so that the interval
(:meth:`metastab.results.ams.AMSMeanTime.confidence_interval`, the delta method on log Ê over
the runs) carries the error of the direct part, of the entrance sample and of AMS together.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._validate import integer, real
from ..events import LeaveBall, LeaveHull, LeaveUniform
from ..exceptions import DiagnosticWarning
from ..models import NoisySphere, SoftmaxChain
from ..results import provenance
from ..results.ams import AMSMeanTime, AMSResult
from ..results.protocol import plain
from ..rng import Seed, as_seed
from .accelerated import budget
from .ams_chains import NoisyStepper, ams_probability, reaction_coordinate
from .ams_noisy import exit_summary, noisy_setup
from .backends import BUDGET, IN_B, Backend, Bounds, Records, Walk, resolve
from .resolution import check_mode, check_resolution, constant_chain, merge_tolerance

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import ArrayLike

    from ..rng import SeedLike

    # drive(X, state, bounds, walk, records): one call of a splitting driver of the backend
    Drive = Callable[[np.ndarray, np.ndarray, Bounds, Walk, Records], None]

__all__ = [
    "DRIFT_LEVEL",
    "Cycles",
    "HillParts",
    "ams_mean_escape_time",
    "cycles_of",
    "drift_test",
    "hill_parts",
    "record_cycles",
]

# Below this p-value of drift_test the entrance law is taken to drift along the cycles.
DRIFT_LEVEL = 0.01
_EXACT_BUDGET = 10**7  # default step budget of a sojourn or an excursion, exact mode
# spawn-key words of the parts of one call: direct chains, AMS runs, entrance draws, drift test
_DIRECT, _AMS, _DRAW, _DRIFT = 0, 1, 2, 3


class Cycles(NamedTuple):
    """What the direct chains recorded, one entry per cycle (L in all), in the order of the
    chains and, within a chain, of its cycles.

    ``chain`` (L,) the chain's index, ``rank`` (L,) the cycle's rank in its chain (0 for the
    first, from x0), ``sojourn`` (L,) and ``excursion`` (L,) their lengths in steps (0 for an
    exit that meets the event itself), ``success`` (L,) whether the excursion met the event,
    ``entrance`` (L, n, d) the exits Y; per chain, ``complete`` (C,) whether it met the event;
    ``budget_hits`` the pieces stopped by ``limit`` (their cycle is dropped and the chain cut).
    """

    chain: np.ndarray
    rank: np.ndarray
    sojourn: np.ndarray
    excursion: np.ndarray
    success: np.ndarray
    entrance: np.ndarray
    complete: np.ndarray
    budget_hits: int


def _piece(drive: Drive, X: np.ndarray, state: np.ndarray, bounds: Bounds) -> Walk:
    """Advance the chains X (in place, with their streams ``state``) from clock 0 until they
    stop at ``bounds``; no records (the running maximum starts at +inf)."""
    C, n, d = X.shape
    walk = Walk(np.zeros(C), np.full(C, math.inf), np.empty(C, np.int64))
    records = Records(
        np.empty((C, 1)), np.empty((C, 1)), np.empty((C, 1, n, d)), np.zeros(C, np.int64)
    )
    drive(X, state, bounds, walk, records)
    return walk


def record_cycles(
    backend: Backend,
    chain: tuple[Any, float, float, bool, Any],
    x0: np.ndarray,
    low: float,
    streams: np.ndarray,
    *,
    cycles: int | None,
    limit: float,
) -> Cycles:
    """Run one direct chain of SA_P per stream of ``streams`` (C, 4), from ``x0``, cycle by cycle
    (module notes) until it meets the event or has run ``cycles`` cycles (None: until the event).

    Both pieces of a cycle are stepped by the backend's ``excursions`` driver, as the AMS
    replicas are (:mod:`.ams_chains`), so that the direct chains and the replicas are the same
    chain; each piece's clock starts at 0, so that a short excursion is not lost in the
    rounding of a clock at 1e24 steps.

    ``chain`` is (dynamics, γ, merge distance, accelerated, compiled event) as the driver takes
    them, ``low`` the reference level in units of the radius (A = {ξ <= low}), ``limit`` the
    step budget of each sojourn and excursion.
    """
    return cycles_of(_chain_drive(backend, chain), x0, low, streams, cycles=cycles, limit=limit)


def _chain_drive(backend: Backend, chain: tuple[Any, float, float, bool, Any]) -> Drive:
    """The backend's ``excursions`` driver of SA_P with the arguments ``chain``."""
    dyn, gamma, tol, accelerated, ev = chain

    def drive(
        X: np.ndarray, state: np.ndarray, bounds: Bounds, walk: Walk, records: Records
    ) -> None:
        backend.excursions(X, state, dyn, gamma, tol, accelerated, ev, bounds, walk, records)

    return drive


def cycles_of(
    drive: Drive,
    x0: np.ndarray,
    low: float,
    streams: np.ndarray,
    *,
    cycles: int | None,
    limit: float,
) -> Cycles:
    """:func:`record_cycles` for any chain: ``drive(X, state, bounds, walk, records)`` advances
    the chains X (in place, with their streams ``state``) until they stop at ``bounds``, as the
    splitting drivers of the backend do (``excursions``, ``noisy_excursions``); ``low`` is the
    reference level in the units of the score (A = {ξ <= low})."""
    C = streams.shape[0]
    n, d = x0.shape
    X = np.repeat(x0[None], C, axis=0)
    state = streams.copy()
    alive = np.ones(C, bool)
    complete = np.zeros(C, bool)
    parts: list[tuple[np.ndarray, ...]] = []
    hits = 0
    k = 0
    while alive.any() and (cycles is None or k < cycles):
        idx = np.flatnonzero(alive)
        Xs, ss = X[idx], state[idx]
        out = _piece(drive, Xs, ss, Bounds(-1.0, low, limit))  # the sojourn
        sojourn, ended = out.clock.copy(), out.status.copy()
        Y = Xs.copy()
        go = ended != IN_B  # else the exit itself meets the event
        go &= ended != BUDGET
        excursion = np.zeros(idx.size)
        met = ended == IN_B
        if go.any():
            Xe, se = Xs[go], ss[go]
            back = _piece(drive, Xe, se, Bounds(low, math.inf, limit))
            Xs[go], ss[go] = Xe, se
            excursion[go] = back.clock
            met[go] = back.status == IN_B
            ended[go] = back.status
        X[idx], state[idx] = Xs, ss
        cut = ended == BUDGET
        hits += int(cut.sum())
        keep = ~cut
        parts.append(
            (
                idx[keep],
                np.full(int(keep.sum()), k),
                sojourn[keep],
                excursion[keep],
                met[keep],
                Y[keep],
            )
        )
        complete[idx[met]] = True
        alive[idx[met | cut]] = False
        k += 1
    if parts:
        chain_, rank, soj, exc, succ, ent = (np.concatenate(p) for p in zip(*parts))
    else:
        chain_ = rank = np.empty(0, np.int64)
        soj = exc = np.empty(0)
        succ = np.empty(0, bool)
        ent = np.empty((0, n, d))
    order = np.lexsort((rank, chain_))  # by chain, then by cycle
    return Cycles(
        chain_[order],
        rank[order],
        soj[order],
        exc[order],
        succ[order],
        ent[order],
        complete,
        hits,
    )


def drift_test(
    entrance: np.ndarray,
    chain: np.ndarray,
    x0: np.ndarray,
    rng: np.random.Generator,
    *,
    permutations: int = 499,
    most: int = 1000,
    summary: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[float, int]:
    """(p-value, pairs) of the test that the exits of the first half of each chain's cycles and
    those of its second half have the same law (the entrance law does not drift).

    Each chain with m >= 2 cycles gives ⌊m/2⌋ pairs (its first ⌊m/2⌋ exits against its last
    ⌊m/2⌋); at most ``most`` pairs are used (chosen at random). The statistic is the energy
    distance of Székely & Rizzo (2004, *Testing for equal distributions in high dimension*,
    InterStat 5): 2 E‖U − V‖ − E‖U − U'‖ − E‖V − V'‖ between the two halves, U and V the exits
    summarised as their tokens' distances from x0 sorted in decreasing order (in R^n): blind to
    which token has just left A and in which direction, which would swamp the offsets at which
    the other tokens settled (on SA_P's triangle at z_A = 0.05, 100 chains cut at 6 cycles:
    p = 0.002 with this summary, 0.54 with the raw configurations). A drift that leaves this
    summary's law unchanged is not seen. The p-value is by permutation that respects the
    dependence within a chain: each chain's halves are swapped as a whole with probability 1/2
    (exchangeable when the cycle law does not change along the chain), (1 + #{≥}) /
    (1 + permutations). nan when there are fewer than 2 pairs. ``summary``, if given, replaces
    that summary: exits (m, n, d) -> features (m, k), such as the order parameters of the noisy
    sphere's exits (whose tokens diffuse away from x0).
    """
    from scipy.spatial.distance import cdist

    first: list[int] = []
    second: list[int] = []
    owner: list[int] = []
    starts = np.flatnonzero(np.r_[True, chain[1:] != chain[:-1]])
    ends = np.r_[starts[1:], chain.size]
    for c, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
        m = (b - a) // 2
        first += range(a, a + m)
        second += range(b - m, b)
        owner += [c] * m
    pairs = len(first)
    if pairs < 2:
        return math.nan, pairs
    f, s, o = np.array(first), np.array(second), np.array(owner)
    if pairs > most:
        pick = np.sort(rng.choice(pairs, most, replace=False))
        f, s, o = f[pick], s[pick], o[pick]
    m = f.size
    # each exit as its tokens' distances from x0, largest first: blind to which token moved
    # and where, so that the one token that has just left A does not swamp the others' offsets
    exits = entrance[np.r_[f, s]]
    if summary is None:
        Z = -np.sort(-np.linalg.norm(exits - x0, axis=2), axis=1)
    else:
        Z = np.asarray(summary(exits), dtype=float).reshape(exits.shape[0], -1)
    D = cdist(Z, Z)

    def energy(is_first: np.ndarray) -> float:
        a = is_first.astype(float) / m
        b = (1.0 - is_first) / m
        return float(2 * a @ D @ b - a @ D @ a - b @ D @ b)

    label = np.r_[np.ones(m, bool), np.zeros(m, bool)]
    observed = energy(label)
    _, group = np.unique(o, return_inverse=True)
    above = 0
    for _ in range(permutations):
        swap = (rng.random(group.max() + 1) < 0.5)[group]
        trial = label.copy()
        trial[:m] ^= swap
        trial[m:] ^= swap
        above += energy(trial) >= observed
    return (1 + above) / (1 + permutations), m


def _blocks(cyc: Cycles, runs: int, chains: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Per run (block of ``chains`` direct chains): L_r, D_r and the indices of its cycles."""
    block = cyc.chain // chains
    steps = cyc.sojourn + np.where(cyc.success, 0.0, cyc.excursion)
    L = np.bincount(block, minlength=runs)
    D = np.bincount(block, weights=steps, minlength=runs)
    return L, D, [np.flatnonzero(block == r) for r in range(runs)]


class HillParts(NamedTuple):
    """What :func:`hill_parts` measured: the AMS result from the recorded entrances, per run the
    entrances L_r and the direct steps D_r, the direct chains that met the event, the drift
    test's p-value and pairs, and the direct pieces a budget stopped."""

    probability: AMSResult
    entrances: np.ndarray
    direct_time: np.ndarray
    complete: int
    drift_pvalue: float
    drift_pairs: int
    direct_budget_hits: int

    def probability_and_blocks(self) -> tuple[AMSResult, np.ndarray, np.ndarray]:
        """The first arguments of :meth:`AMSMeanTime.from_parts`."""
        return self.probability, self.entrances, self.direct_time

    def diagnostics(self) -> dict[str, Any]:
        """Its keyword arguments of the direct part."""
        return {
            "complete": self.complete,
            "drift_pvalue": self.drift_pvalue,
            "drift_pairs": self.drift_pairs,
            "direct_budget_hits": self.direct_budget_hits,
        }


def hill_parts(
    drive: Drive,
    x: np.ndarray,
    low: float,
    seed: Seed,
    *,
    runs: int,
    chains: int,
    replicas: int,
    cycles: int | None,
    limit: float,
    probability: Callable[[np.ndarray, Seed], AMSResult],
    summary: Callable[[np.ndarray], np.ndarray] | None = None,
    stacklevel: int = 2,
) -> HillParts:
    """The estimator of the module notes for any chain: ``runs × chains`` direct chains from x
    cycle by cycle (:func:`cycles_of` with ``drive``; A = {ξ <= low}), the exits drawn per run
    as the entrances of an AMS run, ``probability(starts, seed)`` (starts (runs, replicas, n,
    d)), the drift test (``summary`` as in :func:`drift_test`), and the warnings of the direct
    part (``stacklevel``: the user's call). The parts of the seed are those that
    :func:`ams_mean_escape_time` documents."""
    M, C, N = runs, chains, replicas
    n, d = x.shape
    direct = Seed(seed.entropy, seed.spawn_key + (_DIRECT,))
    cyc = cycles_of(drive, x, low, direct.streams(M * C), cycles=cycles, limit=limit)
    if cyc.budget_hits:
        warnings.warn(
            f"{cyc.budget_hits} sojourns or excursions of the direct chains reached "
            f"max_steps={limit:g}: their cycles are dropped and their chains cut, which "
            f"biases the cycle law towards short cycles; raise max_steps",
            DiagnosticWarning,
            stacklevel=stacklevel,
        )
    L, D, members = _blocks(cyc, M, C)
    if not L.all():
        raise ValueError(
            f"run {int(np.argmin(L))} has no recorded exit from A: max_steps={limit:g} cut "
            f"every cycle of its direct chains; raise max_steps"
        )
    starts = np.empty((M, N, n, d))
    for r in range(M):
        draw = np.random.default_rng(
            np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (_DRAW, r))
        )
        starts[r] = cyc.entrance[members[r][draw.integers(0, members[r].size, size=N)]]
    drift_rng = np.random.default_rng(
        np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (_DRIFT,))
    )
    drift, pairs = drift_test(cyc.entrance, cyc.chain, x, drift_rng, summary=summary)
    complete = int(cyc.complete.sum())
    if complete < M * C and not drift >= DRIFT_LEVEL:
        why = (
            "no chain has two cycles to compare"
            if math.isnan(drift)
            else f"the entrance law drifts along the cycles (the first half of each chain's "
            f"exits against its second half: energy test p = {drift:.2g} < {DRIFT_LEVEL})"
        )
        warnings.warn(
            f"{M * C - complete} of {M * C} direct chains were cut at cycles={cycles} before "
            f"the event, and {why}: the recorded exits may not be the cycle average of whole "
            f"paths, which the Hill relation needs, and E[T] may be biased; raise cycles "
            f"(cycles=None follows every direct chain to the event)",
            DiagnosticWarning,
            stacklevel=stacklevel,
        )
    prob = probability(starts, Seed(seed.entropy, seed.spawn_key + (_AMS,)))
    return HillParts(prob, L, D, complete, float(drift), int(pairs), int(cyc.budget_hits))


def _chain_parts(
    model: Any,
    x0: ArrayLike,
    event: Any,
    reference_level: float,
    mode: str | None,
    max_steps: int | float | None,
    merge_tol: float | None,
    device: str,
    score: Any,
    seed: Seed,
    counts: dict[str, Any],
) -> tuple[np.ndarray, float, str, HillParts]:
    """SA_P's part of :func:`ams_mean_escape_time`: the checks, then :func:`hill_parts`;
    (x0, z_A, mode, parts)."""
    try:
        x = np.array(x0, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"x0 must be a numeric n×d array, got {x0!r}") from None
    if x.ndim != 2 or 0 in x.shape or not np.isfinite(x).all():
        raise ValueError(f"x0 must be a finite n×d array, got shape {x.shape}")
    x = np.ascontiguousarray(x)
    n, d = x.shape
    if not isinstance(model, SoftmaxChain):
        raise ValueError(f"model must be a SoftmaxChain (SA_P) or a NoisySphere, got {model!r}")
    if not isinstance(event, (LeaveBall, LeaveHull)):
        raise ValueError(
            f"event must be a LeaveBall or a LeaveHull with SA_P (the events whose distance is "
            f"the score), got {event!r}"
        )
    mode = "accelerated" if mode is None else mode
    check_mode(mode, merge_tol)
    radius = float(event.radius)
    z_A = real("reference_level", reference_level, low=0, high=radius, high_open=True)
    low = z_A / radius
    dyn, gamma = constant_chain(
        model, d, why="the cycles repeat only for a time-homogeneous chain", what="model must have"
    )
    accelerated = mode == "accelerated"
    if max_steps is not None:
        limit = float(budget(max_steps))
    else:
        limit = math.inf if accelerated else float(_EXACT_BUDGET)
    scale = float(np.abs(x).max()) or 1.0
    tol = merge_tolerance(merge_tol) * scale if accelerated else 0.0
    xi0 = float(reaction_coordinate(x, event, x_ref=x, B=dyn.B))
    if xi0 > low:
        raise ValueError(
            f"x0 must lie in the reference set: its ξ is {xi0 * radius:.3g} (distance units) "
            f"> reference_level={z_A:.3g}"
        )
    backend = resolve(device)
    if not accelerated:
        check_resolution(model, x[None], what="x0", stacklevel=3)
    ev = event.compile(np.ascontiguousarray(x[None]), dyn.B)
    parts = hill_parts(
        _chain_drive(backend, (dyn, gamma, tol, accelerated, ev)), x, low, seed,
        **counts, limit=limit, stacklevel=4,
        probability=lambda starts, ams_seed: ams_probability(
            model, x, event, reference_level=z_A, replicas=counts["replicas"], runs=counts["runs"],
            rng=ams_seed, mode=mode,
            max_steps=max_steps, merge_tol=merge_tol, device=device, entrance=starts,
            score=score,
        ),
    )  # fmt: skip
    return x, z_A, mode, parts


def ams_mean_escape_time(
    model: SoftmaxChain | NoisySphere,
    x0: ArrayLike,
    event: LeaveBall | LeaveHull | LeaveUniform,
    *,
    reference_level: float,
    chains: int = 25,
    cycles: int | None = None,
    replicas: int = 100,
    runs: int = 20,
    rng: SeedLike = None,
    mode: str | None = None,
    max_steps: int | float | None = None,
    merge_tol: float | None = None,
    device: str = "cpu",
    score: Callable[[np.ndarray], Any] | None = None,
) -> AMSMeanTime:
    """E[T_B], the mean first-passage time of ``event`` from ``x0``, by the Hill relation.

    E[T_B] = ⟨σ + ρ⟩ / p (module notes): the mean cycle duration over p = P_ν[the event before
    A], ν the law of the exits from A averaged over the cycles, which direct chains from x0
    record; p (and the time of the excursions that meet the event) by AMS started there.
    The estimate is Σ_r (D_r + L_r s_r) / Σ_r L_r p̂_r over the runs (module notes).

    Parameters
    ----------
    model : SoftmaxChain or NoisySphere
        SA_P with a constant step, or the noisy sphere (:mod:`metastab.engine.ams_noisy`).
    x0 : array_like (n, d)
        The start, in A; the event is compiled for it (group hulls, ball centres).
    event : LeaveHull, LeaveBall or LeaveUniform
        B; ξ is its distance in units of its radius (SA_P), or its order parameter m_degree
        (LeaveUniform, with the noisy sphere).
    reference_level : float
        z_A in the event's distance units, 0 <= z_A < radius: A = {ξ <= z_A / radius}. With
        LeaveUniform, a in 0 <= a < level: A = {m_degree <= a}.
    chains : int >= 1
        Direct chains per run (``runs × chains`` in all).
    cycles : int >= 1, optional
        The cycles a direct chain runs at most; None (the default) follows every direct chain to
        the event, so that its exits are the cycle average of a whole path whatever the cycles
        do. With a bound, the exits of the cut chains stand for ν only if the cycle law does not
        drift along a chain: a DiagnosticWarning says when the drift test rejects that
        (p < :data:`DRIFT_LEVEL`) or cannot test it.
    replicas : int >= 2
        N per AMS run.
    runs : int >= 2
        M independent runs (their spread gives the interval).
    rng : None, int, SeedSequence or Generator
        Root seed; the direct chains, the AMS runs, the draws of the entrances and the drift
        test take its children (spawn key + (0,), (1,), (2, r), (3,)), and direct chain c and
        run r are pure functions of the seed and their index.
    mode : {"accelerated", "exact"}, optional
        As :func:`metastab.first_passage`, for the direct chains and the replicas alike
        (default "accelerated" for SA_P; the noisy sphere steps exactly: "exact" or None).
    max_steps : int or float, optional
        The step budget of a sojourn, an excursion and an AMS path (default 10^7 in exact mode
        and for the noisy sphere, none in accelerated mode); what it stops is reported
        (DiagnosticWarning).
    merge_tol : float, optional
        SA_P's accelerated mode only (default :data:`metastab.engine.MERGE_TOL`).
    device : str
        Where the chains run (a name of :data:`metastab.engine.backends.BACKENDS`; "cpu").
    score : callable, optional
        The AMS importance function, as in :func:`metastab.engine.ams_probability` (SA_P
        only).

    Returns
    -------
    result : AMSMeanTime
        The estimate ``mean`` of E[T_B] with its parts (the probability p, the cycle times,
        the entrances), the per-run estimates that give
        :meth:`~metastab.results.ams.AMSMeanTime.confidence_interval`, the seed and the
        provenance.

    Examples
    --------
    >>> import numpy as np, metastab as ms
    >>> from metastab.engine import ams_mean_escape_time
    >>> x = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)   # frozen
    >>> ev = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)
    >>> res = ams_mean_escape_time(ms.SoftmaxChain(beta=20.0, gamma=0.45), x, ev,
    ...                            reference_level=0.05, chains=5, replicas=20, runs=4, rng=1)
    >>> low, high = res.confidence_interval()
    >>> bool(low < res.mean < high), res.complete, res.chains
    (True, 20, 5)

    The noisy circle leaving the uniform state (m_1 >= 0.8), A = {m_1 <= 0.3}:

    >>> noisy = ms.NoisySphere(beta=5.0, K=0.095, dt=0.02)
    >>> res = ams_mean_escape_time(noisy, ms.regular_polygon(8).vertices, ms.LeaveUniform(0.8),
    ...                            reference_level=0.3, chains=5, replicas=20, runs=4, rng=1)
    >>> bool(0 < res.mean < float("inf")), res.probability.score
    (True, 'order parameter')
    """
    C = integer("chains", chains, 1)
    K = None if cycles is None else integer("cycles", cycles, 1)
    N = integer("replicas", replicas, 2)
    M = integer("runs", runs, 2)
    seed = as_seed(rng)
    tic = time.perf_counter()
    counts: dict[str, Any] = {"runs": M, "chains": C, "replicas": N, "cycles": K}
    if isinstance(model, NoisySphere):
        setup = noisy_setup(
            model, x0, event, reference_level=reference_level, horizon=None,
            max_steps=max_steps, mode=mode, merge_tol=merge_tol, score=score,
            need_start_in_a=True,
        )  # fmt: skip
        x, z_A, mode = setup.x, setup.low, "exact"
        stepper = NoisyStepper(resolve(device), setup, False)
        parts = hill_parts(
            stepper.drive, x, z_A, seed, **counts, limit=setup.limit, summary=exit_summary,
            stacklevel=3,
            probability=lambda starts, ams_seed: ams_probability(
                model, x, event, reference_level=z_A, replicas=N, runs=M, rng=ams_seed,
                max_steps=max_steps, device=device, entrance=starts,
            ),
        )  # fmt: skip
    else:
        x, z_A, mode, parts = _chain_parts(
            model, x0, event, reference_level, mode, max_steps, merge_tol, device, score, seed,
            counts,
        )  # fmt: skip
    n, d = x.shape
    return AMSMeanTime.from_parts(
        *parts.probability_and_blocks(),
        chains=C,
        **parts.diagnostics(),
        reference_level=z_A,
        model=model.to_dict(),
        event=event.to_dict(),
        seed=seed.to_dict(),
        provenance=provenance(wall_seconds=time.perf_counter() - tic, n=n, d=d, mode=mode),
        x0=x.copy(),
        arguments={
            "reference_level": plain(reference_level),
            "chains": C,
            "cycles": K,
            "replicas": N,
            "runs": M,
            "mode": mode,
            "max_steps": plain(max_steps),
            "merge_tol": plain(merge_tol),
            "device": device,
        },
    )
