"""Generalised AMS (:mod:`metastab.engine.ams`) for SA_P: :func:`ams_probability` (the mean
escape time by the Hill relation, from it and direct simulation: :mod:`metastab.engine.ams_hill`).

The replicas are SA_P chains started at x0 (the real start), stepped by the backend's
``excursions`` driver (:mod:`metastab.engine.backends`): exactly (``mode="exact"``, every step)
or event-driven (``mode="accelerated"``: exact at any β for a constant step, up to the merge
distance, as :func:`metastab.first_passage` in that mode). The score is the event's own distance,
ξ(X) = max_i dist(x_i, K_i) / r_i (K_i the token's group hull or ball centre, r_i its radius:
the event is ξ > 1; :func:`reaction_coordinate`), so B = the event.

Two questions, one algorithm:

- ``horizon=t``: P[T <= t], T the first step at which the event holds (A empty: a path ends at
  the event or at step t).
- ``reference_level=z_A``: P[the event before the first return to A = {ξ <= z_A / r}], the
  return tested after each step (the start, typically in A, counts as left).

Both together: the event before A and by step t. The noisy sphere
(:class:`~metastab.NoisySphere` with a :class:`~metastab.LeaveUniform` event) takes the same
two questions with its own stepper (:class:`NoisyStepper`; the score is the order parameter,
:mod:`metastab.engine.ams_noisy`).

Replica q of run r draws from the xoshiro256** stream ``seed_streams(key_r, slot)`` (the ids of
:mod:`metastab.engine.ams`), so a run is the same whatever the thread count or the number of
runs.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .._validate import real
from ..events import LeaveBall, LeaveHull, LeaveUniform
from ..exceptions import DiagnosticWarning
from ..kernels import streams as _streams
from ..models import NoisySphere, SoftmaxChain
from ..results import provenance
from ..results.ams import AMSResult
from ..results.protocol import plain
from .accelerated import budget
from .ams import BUDGET as _BUDGET_END
from .ams import FAILED, REACHED, AMSRuns, Segment, entrance_array, run_ams
from .ams_noisy import SCORE, NoisySetup, entrance_shape, exit_summary, noisy_setup
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
from .resolution import check_mode, check_resolution, constant_chain, merge_tolerance

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from numpy.typing import ArrayLike

    from ..rng import Seed, SeedLike

__all__ = ["ams_probability", "reaction_coordinate"]

_RECORDS = 32  # record buffer per replica and kernel call (grown by further calls)
_EXACT_BUDGET = 10**7  # default safety budget of a path with a reference set, exact mode


class ChainStepper:
    """A :class:`~metastab.engine.ams.ReplicaStepper` of SA_P through the backend's
    ``excursions`` driver: paths end at the event, at ξ <= ``low`` (A), or at ``limit`` steps
    (``horizon``: a failure; otherwise a safety budget, reported as BUDGET)."""

    def __init__(
        self,
        backend: Backend,
        dyn: Any,
        gamma: float,
        tol: float,
        accelerated: bool,
        ev: Any,
        low: float,
        limit: float,
        horizon: bool,
    ) -> None:
        self.backend, self.dyn, self.gamma, self.tol = backend, dyn, gamma, tol
        self.accelerated, self.ev = accelerated, ev
        self.bounds = Bounds(low, math.inf, limit)
        self.horizon = horizon

    def drive(
        self, X: np.ndarray, state: np.ndarray, bounds: Bounds, walk: Walk, records: Records
    ) -> None:
        """One call of the backend's driver on the replicas X (in place, with their streams
        ``state``) until they stop at ``bounds``, ``walk`` and ``records`` as it takes them."""
        self.backend.excursions(
            X, state, self.dyn, self.gamma, self.tol, self.accelerated, self.ev, bounds, walk,
            records,
        )  # fmt: skip

    def score(self, states: np.ndarray) -> np.ndarray:
        out = np.empty(states.shape[0])
        coordinates(np.ascontiguousarray(states), self.ev, out)
        hit = np.zeros(states.shape[0], bool)
        self.backend.events_at(np.ascontiguousarray(states), self.ev, hit)
        out[hit] = math.inf
        return out

    def advance(
        self, states: np.ndarray, clocks: np.ndarray, levels: np.ndarray, streams: np.ndarray
    ) -> list[Segment]:
        K, n, d = states.shape
        X = np.ascontiguousarray(states, dtype=float).copy()
        state = _stream_states(streams)
        walk = Walk(
            np.asarray(clocks, dtype=float).copy(),
            np.asarray(levels, dtype=float).copy(),
            np.full(K, FULL, np.int64),
        )
        recs: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in range(K)]
        todo = np.arange(K)
        while todo.size:
            part = Walk(walk.clock[todo], walk.level[todo], np.empty(todo.size, np.int64))
            Xs, ss = X[todo], state[todo]
            records = Records(
                np.empty((todo.size, _RECORDS)),
                np.empty((todo.size, _RECORDS)),
                np.empty((todo.size, _RECORDS, n, d)),
                np.zeros(todo.size, np.int64),
            )
            self.drive(Xs, ss, self.bounds, part, records)
            X[todo], state[todo] = Xs, ss
            walk.clock[todo], walk.level[todo], walk.status[todo] = part
            for q, c in enumerate(todo.tolist()):
                m = records.written[q]
                recs[c].append((records.level[q, :m], records.time[q, :m], records.state[q, :m]))
            todo = todo[part.status == FULL]
        out = []
        for c in range(K):
            lv, tm, st = (np.concatenate(parts) for parts in zip(*recs[c]))
            s = int(walk.status[c])
            if s == IN_B:
                end = REACHED
            elif s == BUDGET and not self.horizon:
                end = _BUDGET_END
            else:
                end = FAILED
            out.append(Segment(lv, tm, st, end, float(walk.clock[c])))
        return out


def _stream_states(streams: np.ndarray) -> np.ndarray:
    """The xoshiro256** states of the stream ids (K, 3) of :mod:`metastab.engine.ams`."""
    state = np.empty((streams.shape[0], 4), np.uint64)
    for q in range(streams.shape[0]):
        _streams.seed_streams(streams[q, 0], streams[q, 1], streams[q, 2], state[q : q + 1])
    return state


class ScoredChainStepper(ChainStepper):
    """:class:`ChainStepper` with a score of the user's, ``score(X)`` on the configurations
    X (K, n, d) -> (K,) finite floats, evaluated on the host after every step (the driver
    stops each replica after one step: ξ > ``high`` = −1 always holds). The path, A and the
    event are the same as with the default score; only the levels differ."""

    def __init__(self, *args: Any, score: Callable[[np.ndarray], Any]) -> None:
        super().__init__(*args)
        self.user = score
        self.bounds = Bounds(self.bounds.low, -1.0, self.bounds.max_steps)

    def _user(self, X: np.ndarray) -> np.ndarray:
        v = np.asarray(self.user(X.copy()), dtype=float)
        if v.shape != (X.shape[0],) or not np.isfinite(v).all():
            raise ValueError(
                f"score must return one finite float per configuration, shape "
                f"({X.shape[0]},), got shape {v.shape}"
                + ("" if v.shape != (X.shape[0],) else " with non-finite values")
            )
        return v

    def score(self, states: np.ndarray) -> np.ndarray:
        base = super().score(states)
        return np.where(np.isinf(base), math.inf, self._user(states))

    def advance(
        self, states: np.ndarray, clocks: np.ndarray, levels: np.ndarray, streams: np.ndarray
    ) -> list[Segment]:
        K, n, d = states.shape
        X = np.ascontiguousarray(states, dtype=float).copy()
        state = _stream_states(streams)
        clock = np.asarray(clocks, dtype=float).copy()
        level = np.asarray(levels, dtype=float).copy()
        end = np.full(K, FAILED)
        recs: list[list[tuple[float, float, np.ndarray]]] = [[] for _ in range(K)]
        todo = np.arange(K)
        while todo.size:
            part = Walk(clock[todo], np.full(todo.size, math.inf), np.empty(todo.size, np.int64))
            Xs, ss = X[todo], state[todo]
            records = Records(
                np.empty((todo.size, 1)),
                np.empty((todo.size, 1)),
                np.empty((todo.size, 1, n, d)),
                np.zeros(todo.size, np.int64),
            )
            self.drive(Xs, ss, self.bounds, part, records)
            X[todo], state[todo], clock[todo] = Xs, ss, part.clock
            status = part.status
            hit = status == IN_B
            rest = todo[~hit]
            values = self._user(X[rest]) if rest.size else np.empty(0)
            for c in todo[hit].tolist():
                recs[c].append((math.inf, clock[c], X[c].copy()))
                end[c] = REACHED
            for c, v in zip(rest.tolist(), values.tolist()):
                if v > level[c]:
                    level[c] = v
                    recs[c].append((v, clock[c], X[c].copy()))
            budget_hit = status == BUDGET
            end[todo[budget_hit]] = FAILED if self.horizon else _BUDGET_END
            # the rest stopped above high = -1 after their step (ABOVE): step again
            todo = todo[(status != IN_A) & ~hit & ~budget_hit]
        out = []
        for c in range(K):
            if recs[c]:
                lv, tm, st = zip(*recs[c])
                seg = Segment(np.array(lv), np.array(tm), np.stack(st), int(end[c]), clock[c])
            else:
                seg = Segment(np.empty(0), np.empty(0), np.empty((0, n, d)), int(end[c]), clock[c])
            out.append(seg)
        return out


class NoisyStepper(ChainStepper):
    """A :class:`~metastab.engine.ams.ReplicaStepper` of the noisy sphere through the backend's
    ``noisy_excursions`` driver (:mod:`metastab.engine.ams_noisy`): the score is the event's
    order parameter m_degree (+inf in B), A = {m_degree <= ``setup.low``}, and the paths end
    as a :class:`ChainStepper`'s do."""

    def __init__(self, backend: Backend, setup: NoisySetup, horizon: bool) -> None:
        self.backend, self.setup, self.ev = backend, setup, setup.ev
        self.bounds = Bounds(setup.low, math.inf, setup.limit)
        self.horizon = horizon

    def drive(
        self, X: np.ndarray, state: np.ndarray, bounds: Bounds, walk: Walk, records: Records
    ) -> None:
        self.backend.noisy_excursions(
            X, state, self.setup.dyn, self.setup.dt, self.ev, bounds, walk, records
        )

    def score(self, states: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(states)
        out = exit_summary(X)[:, self.setup.degree - 1].copy()
        hit = np.zeros(X.shape[0], bool)
        self.backend.events_at(X, self.ev, hit)
        out[hit] = math.inf
        return out


def _start(x0: ArrayLike) -> np.ndarray:
    try:
        x = np.array(x0, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"x0 must be a numeric n×d array, got {x0!r}") from None
    if x.ndim != 2 or 0 in x.shape or not np.isfinite(x).all():
        raise ValueError(f"x0 must be a finite n×d array, got shape {x.shape}")
    return np.ascontiguousarray(x)


def reaction_coordinate(
    x: ArrayLike,
    event: LeaveBall | LeaveHull,
    *,
    x_ref: ArrayLike | None = None,
    B: ArrayLike | None = None,
) -> float | np.ndarray:
    """ξ(X) = max_i dist(x_i, K_i) / r_i of the configurations ``x`` for ``event``.

    The default score of AMS (module notes), the quantity the event thresholds (the event is
    ξ > 1).

    Parameters
    ----------
    x : array_like, shape (n, d) or (C, n, d)
        One configuration, or C of them.
    event : LeaveBall or LeaveHull
        The event whose distance is ξ: K_i is token i's group hull or ball, r_i its radius.
    x_ref : array_like (n, d), optional
        The configuration the event is compiled for (default: ``x`` itself, or ``x[0]``): the
        group hulls of a LeaveHull, the default ball centres of a LeaveBall.
    B : array_like (d, d), optional
        Key-query matrix (events do not use it; default identity).

    Returns
    -------
    xi : float or ndarray, shape (C,)
        ξ of the configuration, or of each of the C configurations.

    Examples
    --------
    >>> import metastab as ms
    >>> from metastab.engine import reaction_coordinate
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
    ref = X[0] if x_ref is None else np.array(x_ref, dtype=float)
    if ref.shape != X.shape[1:] or not np.isfinite(ref).all():
        raise ValueError(f"x_ref must be a finite array of shape {X.shape[1:]}, got {ref.shape}")
    if not isinstance(event, (LeaveBall, LeaveHull)):
        raise ValueError(f"event must be a LeaveBall or a LeaveHull, got {event!r}")
    Bm = np.eye(ref.shape[1]) if B is None else np.asarray(B, dtype=float)
    out = np.empty(X.shape[0])
    coordinates(np.ascontiguousarray(X), event.compile(np.ascontiguousarray(ref[None]), Bm), out)
    return float(out[0]) if one else out


def ams_probability(
    model: SoftmaxChain | NoisySphere,
    x0: ArrayLike,
    event: LeaveBall | LeaveHull | LeaveUniform,
    *,
    horizon: int | float | None = None,
    reference_level: float | None = None,
    replicas: int = 100,
    runs: int = 20,
    rng: SeedLike = None,
    mode: str | None = None,
    max_steps: int | float | None = None,
    merge_tol: float | None = None,
    device: str = "cpu",
    entrance: ArrayLike | None = None,
    score: Callable[[np.ndarray], Any] | None = None,
) -> AMSResult:
    """P[T <= horizon] or P[the event before returning to the reference set], by generalised AMS.

    The algorithm and estimator: :mod:`metastab.engine.ams` (Bréhier et al. 2016, with the tie
    rule); the chain, the score and the two questions: :mod:`metastab.engine.ams_chains`.

    Parameters
    ----------
    model : SoftmaxChain or NoisySphere
        SA_P with a constant step, or the noisy sphere (:mod:`metastab.engine.ams_noisy`).
    x0 : array_like (n, d)
        The start of every replica; the event is compiled for it (group hulls, ball centres).
    event : LeaveHull, LeaveBall or LeaveUniform
        B; the score is its distance ξ in units of its radius (SA_P), or its order parameter
        m_degree (LeaveUniform, the noisy sphere's event).
    horizon : int or float >= 1, optional
        t of P[T <= t]. At least one of ``horizon`` and ``reference_level``.
    reference_level : float, optional
        z_A in the event's distance units, 0 <= z_A < radius: a path that comes back to
        ξ <= z_A / radius after a step fails. With LeaveUniform, a in 0 <= a < level: a path
        that comes back to m_degree <= a fails.
    replicas : int >= 2
        N per run.
    runs : int >= 2
        M independent runs (their spread gives the interval).
    rng : None, int, SeedSequence or Generator
        Root seed of the runs (recorded in the result); run r is a pure function of the seed
        and r.
    mode : {"accelerated", "exact"}, optional
        As :func:`metastab.first_passage` (default "accelerated" for SA_P; the noisy sphere
        steps exactly: "exact" or None).
    max_steps : int or float, optional
        Without a horizon, the safety budget of a path (default 10^7 in exact mode and for
        the noisy sphere, none in accelerated mode); a path stopped by it counts as a failure,
        with a DiagnosticWarning.
    merge_tol : float, optional
        SA_P's accelerated mode only (default :data:`metastab.engine.MERGE_TOL`).
    device : str
        Where the replicas run (a name of :data:`metastab.engine.backends.BACKENDS`; "cpu").
    entrance : array_like (runs, replicas, n, d), optional
        A sample of an entrance law: replica k of run r starts at ``entrance[r, k]`` instead of
        x0 (which still defines the event: its group hulls or ball centres), for
        P_ν[the event ...] with ν the law sampled, such as the entrances into {ξ > z_A}
        gathered by direct simulation.
    score : callable, optional
        The importance function: ``score(X)`` of configurations X (K, n, d) -> K finite
        floats, larger nearer the event (default: the event's distance ξ, computed in the
        kernel). Evaluated on the host after every step (one kernel call per step: slower);
        AMS is unbiased for any score, and its error depends on how well the score orders the
        paths. A and the event stay defined by ξ. SA_P only (the noisy sphere's score is its
        order parameter).

    Returns
    -------
    result : AMSResult
        The estimate ``p`` and its per-run estimates ``runs`` (their spread gives
        :meth:`~metastab.results.ams.AMSResult.confidence_interval`), with the iteration and
        kill counts of every run, the seed and the provenance.

    Examples
    --------
    >>> import numpy as np, metastab as ms
    >>> from metastab.engine import ams_probability
    >>> x = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)   # frozen
    >>> ev = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)
    >>> res = ams_probability(ms.SoftmaxChain(beta=20.0, gamma=0.45), x, ev, horizon=1e11,
    ...                       replicas=20, runs=4, rng=1)
    >>> bool(0 < res.p < 0.1), res.runs.shape
    (True, (4,))

    The noisy circle leaving the uniform state (m_1 >= 0.8) before coming back to m_1 <= 0.3:

    >>> noisy = ms.NoisySphere(beta=5.0, K=0.095, dt=0.02)
    >>> res = ams_probability(noisy, ms.regular_polygon(8).vertices, ms.LeaveUniform(0.8),
    ...                       reference_level=0.3, replicas=20, runs=4, rng=1)
    >>> bool(0 < res.p < 1), res.score
    (True, 'order parameter')
    """
    from .._validate import integer

    N = integer("replicas", replicas, 2)
    M = integer("runs", runs, 2)
    if horizon is None and reference_level is None:
        raise ValueError(
            "give horizon (for P[T <= horizon]) or reference_level (for P[event before "
            "returning to the reference set]), or both: with neither, p is 1"
        )
    if isinstance(model, NoisySphere):
        setup = noisy_setup(
            model, x0, event, reference_level=reference_level, horizon=horizon,
            max_steps=max_steps, mode=mode, merge_tol=merge_tol, score=score,
        )  # fmt: skip
        n, d = setup.x.shape
        starts = setup.x if entrance is None else entrance_shape(entrance, M, N, n, d)
        stepper: ChainStepper = NoisyStepper(resolve(device), setup, horizon is not None)
        given = entrance is not None
        out, seed = run_ams(stepper, starts, replicas=N, runs=M, rng=rng, entrance=given)
        return _result(
            out, seed, setup.limit, model, event, setup.x, starts, SCORE, "exact",
            horizon=horizon, reference_level=reference_level, max_steps=max_steps,
            merge_tol=None, device=device, entrance=entrance is not None,
        )  # fmt: skip
    x = _start(x0)
    n, d = x.shape
    mode = "accelerated" if mode is None else mode
    check_mode(mode, merge_tol)
    if not isinstance(model, SoftmaxChain):
        raise ValueError(f"model must be a SoftmaxChain (SA_P) or a NoisySphere, got {model!r}")
    if not isinstance(event, (LeaveBall, LeaveHull)):
        raise ValueError(
            f"event must be a LeaveBall or a LeaveHull with SA_P (the events whose distance is "
            f"the score), got {event!r}"
        )
    dyn, gamma = constant_chain(
        model, d, why="AMS needs a time-homogeneous chain", what="model must have"
    )
    accelerated = mode == "accelerated"
    scale = float(np.abs(x).max()) or 1.0
    tol = merge_tolerance(merge_tol) * scale if accelerated else 0.0
    ev = event.compile(np.ascontiguousarray(x[None]), dyn.B)
    radius = float(event.radius)
    if reference_level is None:
        low = -1.0
    else:
        low = real("reference_level", reference_level, low=0, high=radius, high_open=True) / radius
    if horizon is not None:
        limit = float(budget(horizon))
        if max_steps is not None:
            raise ValueError(
                f"max_steps is the safety budget of a run without a horizon; with "
                f"horizon={horizon!r} the horizon ends every path, got max_steps={max_steps!r}"
            )
    elif max_steps is not None:
        limit = float(budget(max_steps))
    else:
        limit = math.inf if accelerated else float(_EXACT_BUDGET)
    starts = x if entrance is None else entrance_array(entrance, M, N, n, d)
    if not accelerated:
        check_resolution(model, starts.reshape(-1, n, d), what="starts", stacklevel=2)
    args = (resolve(device), dyn, gamma, tol, accelerated, ev, low, limit, horizon is not None)
    if score is None:
        stepper = ChainStepper(*args)
    elif callable(score):
        stepper = ScoredChainStepper(*args, score=score)
    else:
        raise ValueError(f"score must be a callable of the configurations or None, got {score!r}")
    out, seed = run_ams(stepper, starts, replicas=N, runs=M, rng=rng, entrance=entrance is not None)
    name = "event distance" if score is None else getattr(score, "__name__", repr(score))
    return _result(
        out, seed, limit, model, event, x, starts, name, mode, horizon=horizon,
        reference_level=reference_level, max_steps=max_steps, merge_tol=merge_tol,
        device=device, entrance=entrance is not None,
    )  # fmt: skip


def _result(
    out: AMSRuns,
    seed: Seed,
    limit: float,
    model: Any,
    event: Any,
    x: np.ndarray,
    starts: np.ndarray,
    score: str,
    mode: str,
    *,
    entrance: bool,
    **arguments: Any,
) -> AMSResult:
    """The AMSResult of :func:`ams_probability`'s runs ``out`` (and the warning of the paths a
    budget stopped), with the call's ``arguments`` for its replay."""
    if out.budget_hits:
        warnings.warn(
            f"{out.budget_hits} paths reached max_steps={limit:g} before the event or the "
            f"reference set; they count as failures, which biases p downwards: raise max_steps",
            DiagnosticWarning,
            stacklevel=3,
        )
    n, d = x.shape
    return AMSResult.from_runs(
        out,
        out.replicas,
        budget_hits=out.budget_hits,
        paths=out.paths,
        score=score,
        model=model.to_dict(),
        event=event.to_dict(),
        seed=seed.to_dict(),
        provenance=provenance(wall_seconds=out.seconds, n=n, d=d, mode=mode),
        x0=x.copy(),
        arguments={
            **{k: plain(v) for k, v in arguments.items()},
            "replicas": out.replicas,
            "runs": int(out.estimates.size),
            "mode": mode,
            **({"entrance": starts.tolist()} if entrance else {}),
        },
    )
