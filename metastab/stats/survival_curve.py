"""The Kaplan–Meier survival curve of censored first-passage times, with Greenwood bands."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DiagnosticWarning
from .censoring import censored_sample, product_limit
from .display import html_table, interval, number
from .intervals import ConfidenceInterval, check_level

__all__ = ["Survival", "survival"]

BAND_METHODS = ("linear", "log-log")


@dataclass(frozen=True, eq=False)
class Survival:
    """Kaplan–Meier estimate of S(t) = P[T > t] under right censoring.

    ``time`` holds the distinct observed times (events and censorings), ``probability`` the
    estimate just after each, ``at_risk`` and ``events`` the counts there. Computed with
    ``scipy.stats.ecdf`` on ``scipy.stats.CensoredData``; made by :func:`survival`.

    Attributes
    ----------
    time : ndarray
        The distinct observed times, increasing.
    probability : ndarray
        The estimate Ŝ just after each time.
    at_risk : ndarray of int
        The number of chains at risk at each time.
    events : ndarray of int
        The number of events at each time.
    chains : int
        The number of chains.
    n_events : int
        The number of events in all.
    confidence_level : float
        The default level of :meth:`confidence_interval` and :meth:`to_frame`.

    Examples
    --------
    >>> from metastab.stats import survival
    >>> km = survival([1, 2, 2, 5, 9], [False, False, True, False, True])
    >>> km.chains, km.n_events, km.at_risk.tolist()
    (5, 3, [5, 4, 2, 1])
    >>> km.evaluate([0, 3]).round(3).tolist()
    [1.0, 0.6]
    """

    time: np.ndarray = field(repr=False)
    probability: np.ndarray = field(repr=False)
    at_risk: np.ndarray = field(repr=False)
    events: np.ndarray = field(repr=False)
    chains: int
    n_events: int
    _ecdf: Any = field(repr=False)
    confidence_level: float = 0.95

    def evaluate(self, t: Any) -> np.ndarray:
        """S(t) at the times ``t`` (1 before the first event)."""
        return self._ecdf.sf.evaluate(np.asarray(t, dtype=np.float64))

    def confidence_interval(
        self, confidence_level: float | None = None, *, method: str = "log-log"
    ) -> ConfidenceInterval:
        """Pointwise band (low, high) at :attr:`time`: ``"linear"`` is Greenwood's
        S ± z·S·sqrt(Σ d/(n(n−d))), ``"log-log"`` the same on log(−log S) (stays in [0, 1]).

        NaN where the formula is undefined (S = 0 for log-log; no event yet gives [1, 1]).
        """
        level = check_level(self.confidence_level if confidence_level is None else confidence_level)
        if method not in BAND_METHODS:
            raise ValueError(f"method must be 'linear' or 'log-log', got {method!r}")
        if self.n_events == 0:
            return ConfidenceInterval(
                np.ones_like(self.probability), np.ones_like(self.probability)
            )
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", "The confidence interval is undefined", RuntimeWarning
            )
            ci = self._ecdf.sf.confidence_interval(level, method=method)
        return ConfidenceInterval(ci.low.probabilities, ci.high.probabilities)

    @property
    def median(self) -> float:
        """First time with S(t) <= 1/2; ``inf`` when the curve stays above 1/2."""
        below = np.flatnonzero(self.probability <= 0.5)
        return float(self.time[below[0]]) if below.size else math.inf

    def median_interval(
        self, confidence_level: float | None = None, *, method: str = "log-log"
    ) -> ConfidenceInterval:
        """(low, high) for the median: the first times at which the band's lower and upper
        ends reach 1/2 (Brookmeyer and Crowley's interval, from the pointwise band);
        ``inf`` where that end stays above 1/2."""
        low, high = self.confidence_interval(confidence_level, method=method)
        ends = []
        for band in (np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)):
            below = np.flatnonzero(band <= 0.5)
            ends.append(float(self.time[below[0]]) if below.size else math.inf)
        return ConfidenceInterval(*ends)

    def _rows(self) -> tuple[str, list[list[str]]]:
        low, high = self.median_interval()
        counts = (
            f"{self.n_events} events, {self.chains - self.n_events} censored of {self.chains} "
            f"chains"
        )
        return counts, [["median", number(self.median), interval(low, high)]]

    def __repr__(self) -> str:
        counts, rows = self._rows()
        return (
            f"Survival(median={rows[0][1]} {rows[0][2]} ({self.confidence_level:.0%} CI); {counts})"
        )

    def _repr_html_(self) -> str:
        counts, rows = self._rows()
        return html_table(
            "Kaplan–Meier survival",
            ["", "estimate", f"{self.confidence_level:.0%} CI"],
            rows,
            counts,
        )

    def to_frame(
        self, confidence_level: float | None = None, *, method: str = "log-log"
    ) -> pd.DataFrame:
        """Columns time, survival, low, high, at_risk, events (one row per observed time)."""
        low, high = self.confidence_interval(confidence_level, method=method)
        return pd.DataFrame(
            {
                "time": self.time,
                "survival": self.probability,
                "low": low,
                "high": high,
                "at_risk": self.at_risk,
                "events": self.events,
            }
        )


def survival(
    steps: Any, censored: Any = None, *, start: Any = None, confidence_level: float = 0.95
) -> Survival:
    """Kaplan–Meier survival curve of censored first-passage times, with Greenwood bands.

    Parameters
    ----------
    steps : array_like of int or float, or FirstPassage, or DataFrame
        First-passage times; a FirstPassage (or a frame with columns steps, censored) brings
        its own ``censored``.
    censored : array_like of bool, optional
        Required with an array of steps: true where the chain reached the budget without the
        event (right-censored).
    start : array_like, optional
        Per-chain clock start (e.g. the hitting time of the near-vertex set), subtracted from
        ``steps``.
    confidence_level : float
        The default level of the bands (default 0.95).

    Returns
    -------
    curve : Survival
        Ŝ(t) = Π_{u_j <= t} (1 − d_j / n_j) with ``confidence_interval()`` and ``to_frame()``.

    Examples
    --------
    >>> from metastab.stats import survival
    >>> km = survival([1, 2, 2, 5, 9], [False, False, True, False, True])
    >>> km.probability.round(3).tolist()
    [0.8, 0.6, 0.3, 0.3]
    >>> km.time.tolist()          # observed times (a censoring time with no event included)
    [1.0, 2.0, 5.0, 9.0]
    >>> km.median
    5.0
    """
    level = check_level(confidence_level)
    s = censored_sample(steps, censored, law="exponential", start=start)
    if s.events == 0:
        warnings.warn(
            f"no events among {s.time.size} chains: S(t) = 1 up to {s.time.max():g}, with no band",
            DiagnosticWarning,
            stacklevel=2,
        )
    from scipy import stats  # scipy is imported where used: see the package notes

    res = stats.ecdf(stats.CensoredData(uncensored=s.time[s.event], right=s.time[~s.event]))
    t = res.sf.quantiles
    u, _, _, d = product_limit(s.time, s.event)
    events = np.zeros(t.size, dtype=np.int64)
    events[np.searchsorted(t, u)] = d
    at_risk = s.time.size - np.searchsorted(np.sort(s.time), t, side="left")
    return Survival(
        time=t,
        probability=res.sf.probabilities,
        at_risk=at_risk,
        events=events,
        chains=int(s.time.size),
        n_events=s.events,
        _ecdf=res,
        confidence_level=level,
    )
