"""The results of generalised adaptive multilevel splitting: :class:`AMSResult` (a probability)
and :class:`AMSMeanTime` (a mean escape time by the Hill relation).

The algorithm and its estimator are in the notes of :mod:`metastab.engine.ams`; the chains'
front ends are :func:`metastab.engine.ams_probability` and
:func:`metastab.engine.ams_mean_escape_time`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DiagnosticWarning
from ..stats.intervals import ConfidenceInterval, check_level
from .protocol import Result

__all__ = ["AMSMeanTime", "AMSResult"]

_METHODS = ("lognormal", "log", "t")


def _t_quantile(level: float, runs: int) -> float:
    from scipy import stats  # imported here: about a second, which every command would pay

    return float(stats.t.ppf(0.5 + level / 2, runs - 1))


@dataclass(frozen=True, eq=False)
class AMSResult(Result):
    """P[τ_B < τ_A] (or P[τ_B <= t]) by generalised AMS: M independent runs of N replicas.

    ``p`` is the mean of the per-run estimates ``runs`` (each unbiased, so ``p`` is too).
    Per run: ``iterations``, ``killed`` (replicas killed, ties included), ``extinct`` (every
    replica fell at one level: p̂_r = 0), ``reached`` (replicas in B at the end) and
    ``reached_clock`` (their mean clock; nan where none). ``budget_hits`` counts the paths that
    a safety budget stopped (counted as failures), ``paths`` the paths simulated (first and
    resampled: the cost). ``kill_ties`` is False only for the naive, biased variant.
    ``score`` names the score function. ``model``, ``event``, ``x0``, ``seed`` and
    ``arguments`` are what :meth:`replay` reruns (of :func:`metastab.engine.ams_probability`).

    Attributes
    ----------
    p : float
        The estimate: the mean of the per-run estimates.
    runs : ndarray, shape (M,)
        The per-run estimates p̂_r.
    replicas : int
        N, the replicas of each run.
    iterations, killed : ndarray of int, shape (M,)
        Per run: the AMS iterations, and the replicas killed (ties included).
    extinct : ndarray of bool, shape (M,)
        Per run: every replica fell at one level (p̂_r = 0).
    reached : ndarray of int, shape (M,)
        Per run: the replicas in B at the end.
    reached_clock : ndarray, shape (M,)
        Per run: the mean clock (steps) of the replicas in B; nan where none.
    budget_hits : int
        The paths a safety budget stopped (counted as failures).
    paths : int
        The paths simulated, first and resampled: the cost.
    kill_ties : bool
        True for the unbiased tie rule; False only for the naive, biased variant.
    score : str
        The name of the score function ("event distance" by default).
    model, event : dict
        The model's and the event's ``to_dict``.
    seed : dict
        The root seed's ``to_dict`` (:class:`~metastab.Seed`).
    provenance : dict
        Versions, thread count, backend and mode (:func:`metastab.results.provenance`).
    x0 : ndarray or None
        The start of the replicas; None when not recorded.
    arguments : dict
        The other keyword arguments of the call, for :meth:`replay`.

    See Also
    --------
    metastab.engine.ams_probability : the function that returns it.

    Examples
    --------
    >>> import numpy as np
    >>> import metastab as ms
    >>> from metastab.engine import ams_probability
    >>> x = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)   # three frozen groups
    >>> ev = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)
    >>> res = ams_probability(ms.SoftmaxChain(beta=20.0, gamma=0.45), x, ev, horizon=1e11,
    ...                       replicas=20, runs=4, rng=1)
    >>> round(res.p, 4), res.replicas, res.paths
    (0.0124, 20, 204)
    >>> res.to_frame()[["run", "iterations", "killed", "extinct", "reached"]]
       run  iterations  killed  extinct  reached
    0    0           4      42    False       20
    1    1           3      54    False       20
    2    2           5      42    False       20
    3    3           6      46    False       20
    """

    KIND = "ams"
    REPLAY = "metastab.engine:ams_probability"

    p: float
    runs: np.ndarray = field(repr=False)
    replicas: int
    iterations: np.ndarray = field(repr=False)
    killed: np.ndarray = field(repr=False)
    extinct: np.ndarray = field(repr=False)
    reached: np.ndarray = field(repr=False)
    reached_clock: np.ndarray = field(repr=False)
    budget_hits: int = 0
    paths: int = 0
    kill_ties: bool = True
    score: str = ""
    model: dict = field(default_factory=dict, repr=False)
    event: dict = field(default_factory=dict, repr=False)
    seed: dict = field(default_factory=dict, repr=False)
    provenance: dict = field(default_factory=dict, repr=False)
    x0: np.ndarray | None = field(default=None, repr=False)
    arguments: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_runs(cls, runs: Any, replicas: int, **fields: Any) -> AMSResult:
        """The result of the independent runs ``runs`` (the first value of
        :func:`metastab.engine.ams.run_ams`) of ``replicas`` replicas each: p is the mean of their
        estimates; ``fields`` are the other fields (score, provenance, ...)."""
        return cls(
            p=float(runs.estimates.mean()),
            runs=runs.estimates,
            replicas=replicas,
            iterations=runs.iterations,
            killed=runs.killed,
            extinct=runs.extinct,
            reached=runs.reached,
            reached_clock=runs.reached_clock,
            **fields,
        )

    @property
    def standard_error(self) -> float:
        """sd(p̂_r) / √M (nan for one run)."""
        if self.runs.size < 2:
            return math.nan
        return float(np.std(self.runs, ddof=1) / math.sqrt(self.runs.size))

    @property
    def relative_error(self) -> float:
        """sd(p̂_r) / p̄: the relative error of one run (about √(−log p / N) with a good score,
        Bréhier et al. 2016; larger with a poor one)."""
        if self.runs.size < 2 or self.p == 0:
            return math.nan
        return float(np.std(self.runs, ddof=1) / self.p)

    def confidence_interval(
        self, confidence_level: float = 0.95, *, method: str | None = None
    ) -> ConfidenceInterval:
        """(low, high) for p from the M independent runs.

        ``method="lognormal"`` (the default when every p̂_r > 0): Cox's interval for the mean
        of a log-normal law, exp(ȳ + s²/2 ± t_{M−1} √(s²/M + s⁴/(2(M−1)))) with ȳ, s² the mean
        and variance of log p̂_r. Why: p̂_r is a product of many factors (1 − K_q/N), so
        log p̂_r is nearly normal (a sum), and the p̂_r are skewed to the right; the intervals
        on p̄ itself miss above. Measured on the AR(1) Ornstein-Uhlenbeck chain (p = 0.0109,
        N = 20, 4000 runs; tests/engine/test_ams_validation.py): coverage of the nominal 95%
        0.943 / 0.955 / 0.95 with M = 10 / 20 / 40 runs, against 0.915 / 0.94 / 0.90 for
        ``"log"`` and 0.91 for ``"t"``. ``method="log"`` (the default when some run is 0):
        the delta method on log p̄, p̄ exp(± t_{M−1} s / (p̄ √M)). ``method="t"``:
        p̄ ± t_{M−1} s/√M, clipped at 0. The estimate stays p̄ (unbiased) in every case.

        Raises ValueError with fewer than 2 runs, when every run ended with p̂_r = 0 (p is
        below what N replicas resolve with this score: raise N or improve the score), or for
        ``"lognormal"`` with a run at 0. Warns (DiagnosticWarning) when some runs went extinct:
        p̂ keeps its mean, but the spread of the other runs understates the error.
        """
        level = check_level(confidence_level)
        if method is not None and method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
        M = self.runs.size
        if M < 2:
            raise ValueError(
                "one AMS run gives no interval: its spread is unknown; run runs >= 2 "
                "independent runs (10 or more for a 95% interval that holds its level)"
            )
        if self.p == 0:
            raise ValueError(
                f"all {M} AMS runs ended with p̂ = 0 ({int(self.extinct.sum())} extinct): p is "
                f"below what {self.replicas} replicas resolve with this score; raise replicas "
                f"or give a score that increases along the paths to the event"
            )
        if self.extinct.any():
            warnings.warn(
                f"{int(self.extinct.sum())} of {M} AMS runs went extinct (every replica at "
                f"one level): the interval from the other runs' spread understates the "
                f"error; raise replicas or refine the score",
                DiagnosticWarning,
                stacklevel=2,
            )
        zeros = int((self.runs == 0).sum())
        if method is None:
            method = "log" if zeros else "lognormal"
        q = _t_quantile(level, M)
        if method == "lognormal":
            if zeros:
                raise ValueError(
                    f"method='lognormal' needs every p̂_r > 0, and {zeros} of {M} runs are 0; "
                    f"use method='log'"
                )
            y = np.log(self.runs)
            centre, v = float(y.mean()), float(y.var(ddof=1))
            half = q * math.sqrt(v / M + v * v / (2 * (M - 1)))
            return ConfidenceInterval(
                math.exp(centre + v / 2 - half), math.exp(centre + v / 2 + half)
            )
        se = self.standard_error
        if method == "t":
            return ConfidenceInterval(max(0.0, self.p - q * se), self.p + q * se)
        f = math.exp(q * se / self.p)
        return ConfidenceInterval(self.p / f, self.p * f)

    def _rerun(self) -> AMSResult:
        if self.score not in ("event distance", "order parameter", ""):
            raise ValueError(
                f"this AMSResult used the score {self.score!r}, a function that is not saved "
                f"with it: call metastab.engine.ams_probability again with that score"
            )
        return super()._rerun()

    def to_frame(self) -> pd.DataFrame:
        """One row per run: p̂_r, iterations, killed, extinct, reached, reached_clock."""
        return pd.DataFrame(
            {
                "run": np.arange(self.runs.size),
                "p": self.runs,
                "iterations": self.iterations,
                "killed": self.killed,
                "extinct": self.extinct,
                "reached": self.reached,
                "reached_clock": self.reached_clock,
            }
        )


@dataclass(frozen=True, eq=False)
class AMSMeanTime(Result):
    """E[T_B] by the Hill relation: the mean cycle duration over p, the probability that an
    excursion from the entrance law meets the event before it returns to A (the formula and
    its reference: :mod:`metastab.engine.ams_hill`).

    M independent runs; run r is a block of ``chains`` direct chains (their cycles: the
    entrance states, the sojourns and the excursions) and one AMS run of N replicas started
    at entrance states drawn from that block's. Per run: ``entrances`` L_r (the cycles
    recorded, one entrance state each), ``direct_time`` D_r (the steps of those cycles,
    sojourns and the excursions that returned to A; not the excursions that met the event),
    ``success_time`` s_r = p̂_r × (the mean clock of the replicas that met the event: AMS's
    unbiased estimate of E[ρ; success] from the block's entrances); ``probability`` holds the
    AMS runs (p̂_r).

    ``mean`` = Σ_r (D_r + L_r s_r) / Σ_r L_r p̂_r: the cycle-weighted mean cycle duration
    :attr:`cycle_time` over the cycle-weighted probability :attr:`p`. Diagnostics:
    ``complete`` (direct chains followed to the event, of ``runs × chains``),
    ``drift_pvalue`` and ``drift_pairs`` (the two-sample test of the first half of each
    chain's entrance states against its second half,
    :func:`metastab.engine.ams_hill.drift_test`; nan when no chain has two cycles),
    ``direct_budget_hits`` (cycles a step budget cut). ``model``, ``event``, ``x0``, ``seed``
    and ``arguments`` are what :meth:`replay` reruns.

    Attributes
    ----------
    mean : float
        The estimate of E[T_B] in steps (inf when no AMS run met the event).
    probability : AMSResult
        The M AMS runs (p̂_r), started at entrance states of their blocks.
    entrances : ndarray of int, shape (M,)
        L_r, the cycles each block recorded.
    direct_time : ndarray, shape (M,)
        D_r, the steps of each block's cycles (sojourns and the excursions that returned).
    success_time : ndarray, shape (M,)
        s_r, AMS's estimate of E[ρ; success] from each block's entrances.
    chains : int
        The direct chains of each block.
    complete : int
        The direct chains followed to the event, of ``runs × chains``.
    drift_pvalue : float
        The p-value of the test that the entrance law does not drift along a chain; nan when
        no chain has two cycles.
    drift_pairs : int
        The pairs of entrance states that test compared.
    direct_budget_hits : int
        The cycles a step budget cut.
    reference_level : float
        z_A, in the event's distance units: A = {ξ <= z_A / radius}.
    model, event : dict
        The model's and the event's ``to_dict``.
    seed : dict
        The root seed's ``to_dict`` (:class:`~metastab.Seed`).
    provenance : dict
        Versions, thread count, backend and mode (:func:`metastab.results.provenance`).
    x0 : ndarray or None
        The start of the direct chains; None when not recorded.
    arguments : dict
        The other keyword arguments of the call, for :meth:`replay`.

    See Also
    --------
    metastab.engine.ams_mean_escape_time : the function that returns it.

    Examples
    --------
    >>> import numpy as np
    >>> import metastab as ms
    >>> from metastab.engine import ams_mean_escape_time
    >>> x = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)   # three frozen groups
    >>> ev = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)
    >>> res = ams_mean_escape_time(ms.SoftmaxChain(beta=20.0, gamma=0.45), x, ev,
    ...                            reference_level=0.05, chains=5, replicas=20, runs=4, rng=1)
    >>> f"{res.mean:.3g}", f"{res.cycle_time:.3g}", round(res.p, 3)
    ('1.9e+12', '3.53e+11', 0.185)
    >>> res.to_frame()[["run", "entrances", "iterations", "extinct"]]
       run  entrances  iterations  extinct
    0    0         27          11    False
    1    1         20          10    False
    2    2         27          11    False
    3    3         21          11    False
    """

    KIND = "ams-mean-time"
    REPLAY = "metastab.engine:ams_mean_escape_time"

    mean: float
    probability: AMSResult = field(repr=False)
    entrances: np.ndarray = field(repr=False)
    direct_time: np.ndarray = field(repr=False)
    success_time: np.ndarray = field(repr=False)
    chains: int = 0
    complete: int = 0
    drift_pvalue: float = math.nan
    drift_pairs: int = 0
    direct_budget_hits: int = 0
    reference_level: float = 0.0
    model: dict = field(default_factory=dict, repr=False)
    event: dict = field(default_factory=dict, repr=False)
    seed: dict = field(default_factory=dict, repr=False)
    provenance: dict = field(default_factory=dict, repr=False)
    x0: np.ndarray | None = field(default=None, repr=False)
    arguments: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_parts(
        cls,
        probability: AMSResult,
        entrances: np.ndarray,
        direct_time: np.ndarray,
        **fields: Any,
    ) -> AMSMeanTime:
        """The result of the AMS runs ``probability`` and the direct blocks (L_r, D_r): s_r and
        the mean computed here, in one place."""
        reached = np.nan_to_num(probability.reached_clock, nan=0.0)
        success = probability.runs * reached
        time, hits = _totals(probability.runs, entrances, direct_time, success)
        return cls(
            mean=float(time.sum() / hits.sum()) if hits.sum() > 0 else math.inf,
            probability=probability,
            entrances=entrances,
            direct_time=direct_time,
            success_time=success,
            **fields,
        )

    @property
    def p(self) -> float:
        """Σ L_r p̂_r / Σ L_r: the probability that an excursion from the entrance law meets
        the event before A (each run's estimate weighted by its cycles)."""
        return float((self.entrances * self.probability.runs).sum() / self.entrances.sum())

    @property
    def cycle_time(self) -> float:
        """Σ (D_r + L_r s_r) / Σ L_r: the mean cycle duration (steps)."""
        time, _ = self._totals()
        return float(time.sum() / self.entrances.sum())

    def _totals(self) -> tuple[np.ndarray, np.ndarray]:
        return _totals(self.probability.runs, self.entrances, self.direct_time, self.success_time)

    def confidence_interval(
        self, confidence_level: float = 0.95, *, method: str | None = None
    ) -> ConfidenceInterval:
        """(low, high) for E[T_B] from the M independent runs: the delta method on log E[T].

        Ê = Ȳ / H̄, the ratio of the run means of Y_r = D_r + L_r s_r (a run's time) and
        H_r = L_r p̂_r (its expected number of escapes); each run is an independent replicate of
        the whole procedure (its direct chains, its entrance states and its AMS run), so
        Var(log Ê) ≈ (s_Y²/Ȳ² + s_H²/H̄² − 2 s_YH/(Ȳ H̄)) / M with the sample (co)variances
        over the runs, and the interval is Ê exp(± t_{M−1} √Var). ``method`` is ``"delta"``
        (the only one, the default).

        Raises ValueError with fewer than 2 runs or when every AMS run ended with p̂_r = 0;
        warns (DiagnosticWarning) when some runs went extinct, as
        :meth:`AMSResult.confidence_interval`.
        """
        level = check_level(confidence_level)
        if method not in (None, "delta"):
            raise ValueError(f"method must be one of ('delta',), got {method!r}")
        prob = self.probability
        M = prob.runs.size
        if M < 2:
            raise ValueError("one run gives no interval: its spread is unknown; run runs >= 2")
        if prob.p == 0:
            raise ValueError(
                f"all {M} AMS runs ended with p̂ = 0: p is below what {prob.replicas} replicas "
                f"resolve with this score; raise replicas or give a better score"
            )
        if prob.extinct.any():
            warnings.warn(
                f"{int(prob.extinct.sum())} of {M} AMS runs went extinct (every replica at "
                f"one level): the interval from the other runs' spread understates the "
                f"error; raise replicas or refine the score",
                DiagnosticWarning,
                stacklevel=2,
            )
        time, hits = self._totals()
        grad = np.array([1 / time.mean(), -1 / hits.mean()])
        var = float(grad @ np.cov(np.stack([time, hits]), ddof=1) @ grad) / M
        half = _t_quantile(level, M) * math.sqrt(max(var, 0.0))
        return ConfidenceInterval(self.mean * math.exp(-half), self.mean * math.exp(half))

    def _rerun(self) -> AMSMeanTime:
        if self.probability.score not in ("event distance", "order parameter", ""):
            raise ValueError(
                f"this AMSMeanTime used the score {self.probability.score!r}, a function that "
                f"is not saved with it: call metastab.engine.ams_mean_escape_time again with it"
            )
        return super()._rerun()

    def to_frame(self) -> pd.DataFrame:
        """One row per run: p̂_r, entrances L_r, direct_time D_r, success_time s_r, and the
        AMS run's iterations and extinction."""
        prob = self.probability
        return pd.DataFrame(
            {
                "run": np.arange(prob.runs.size),
                "p": prob.runs,
                "entrances": self.entrances,
                "direct_time": self.direct_time,
                "success_time": self.success_time,
                "iterations": prob.iterations,
                "extinct": prob.extinct,
            }
        )


def _totals(
    p: np.ndarray, entrances: np.ndarray, direct_time: np.ndarray, success: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per run: Y_r = D_r + L_r s_r, its time (the direct cycles' steps and the estimated steps
    of their excursions that met the event), and H_r = L_r p̂_r, its expected escapes."""
    L = entrances.astype(float)
    return direct_time + L * success, L * p
