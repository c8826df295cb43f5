"""Escape rates of censored first-passage times by maximum likelihood, with exact intervals.

Two laws for the escape time T (docs: models#statements-fw, "Metastability"; the exact frozen law is
geometric):

- ``"geometric"``: T in {1, 2, ...}, P[T = t] = p (1 − p)^(t−1), the per-step escape
  probability p is the *rate*. A chain observed for min(T, c) steps contributes
  p^[event] (1 − p)^(min(T, c) − [event]), so with d events and exposure E = Σ min(T_i, c_i)
  the log-likelihood is d log p + (E − d) log(1 − p) and p̂ = d / E exactly.
- ``"exponential"``: T > 0 continuous with rate λ; log-likelihood d log λ − λ E, λ̂ = d / E.

In both E[T] = 1 / rate.

Both intervals of a law hold only under that law. :func:`escape_rate` therefore tests it first
(:func:`~metastab.stats.exponentiality_test`, rejecting at :data:`MEMORYLESS_LEVEL`) and, where
it is rejected, takes the interval from the law-free bootstrap of :func:`bootstrap_rates`
instead; the result's ``method`` names the method that made its interval
(docs: statistics#escape-rate-intervals).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DiagnosticWarning
from .censoring import censored_sample, check_law, fit_rate
from .display import html_table, interval, number
from .intervals import ConfidenceInterval, check_level, garwood_interval
from .memorylessness import memoryless_test

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "EscapeRate",
    "MEMORYLESS_LEVEL",
    "RATE_METHODS",
    "bootstrap_rates",
    "escape_rate",
    "rate_interval",
]

RATE_METHODS = ("exact", "profile", "bootstrap")
# The memorylessness test rejects at p <= this. A false rejection only trades the exact interval
# for the bootstrap's, which holds under the geometric law too; a missed one keeps an interval
# whose law is wrong, so the level leans to power (the usual 5 %, not 1 %).
MEMORYLESS_LEVEL = 0.05
BOOTSTRAP_RESAMPLES = 1999
# chains × resamples drawn at once by the bootstrap (memory: 8 bytes each, several arrays)
_BOOTSTRAP_BLOCK = 2_000_000


def _loglik(rate: float, d: int, E: float, law: str) -> float:
    """Censored log-likelihood of the rate (constant terms dropped)."""
    from scipy import special  # scipy is imported where used: see the package notes

    if law == "exponential":
        return special.xlogy(d, rate) - rate * E
    return special.xlogy(d, rate) + special.xlog1py(E - d, -rate)


_POISSON_TRIALS = 1e12


def _beta_quantile(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b), solved on the regularized incomplete beta in log space.

    scipy's ``beta.ppf`` (``betaincinv``) is wrong for large b: with a = 1000 it returns 1.6× the
    quantile at b = 2e8 and 16× at b = 1e12, while ``betainc`` stays accurate there.
    """
    from scipy import optimize, special

    mean = a / (a + b)

    def gap(y: float) -> float:
        return float(special.betainc(a, b, math.exp(y))) - q

    lo, hi = math.log(mean) - 1.0, min(math.log(mean) + 1.0, 0.0)
    while gap(lo) > 0:
        lo -= 1.0
    while hi < 0.0 and gap(hi) < 0:
        hi = min(hi + 1.0, 0.0)
    return math.exp(optimize.brentq(gap, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))


def rate_interval(d: int, E: float, law: str, level: float, method: str) -> tuple[float, float]:
    """(low, high) for the rate from d events in exposure E; one-sided (0, U) when d = 0."""
    from scipy import optimize, stats

    alpha = 1.0 - level
    if d == 0:
        return 0.0, (
            -math.log(alpha) / E if law == "exponential" else -math.expm1(math.log(alpha) / E)
        )
    if method == "exact":
        # Garwood (Poisson count d in exposure E) for the exponential law, and for the geometric
        # law beyond _POISSON_TRIALS trials, where Clopper–Pearson equals it to ~10/E relative
        # and scipy's beta quantiles with a second parameter near 1e18 are unreliable.
        if law == "exponential" or E > _POISSON_TRIALS:
            return garwood_interval(d, E, level)
        return (
            _beta_quantile(alpha / 2, d, E - d + 1),  # Clopper–Pearson: d of E trials
            _beta_quantile(1 - alpha / 2, d + 1, E - d) if d < E else 1.0,
        )
    rate = d / E
    drop = _loglik(rate, d, E, law) - stats.chi2.ppf(level, 1) / 2

    def gap(r: float) -> float:
        return _loglik(r, d, E, law) - drop

    low = math.exp(optimize.brentq(lambda y: gap(math.exp(y)), math.log(rate) - 60, math.log(rate)))
    if law == "exponential":
        hi = math.log(rate) + 60
        return low, math.exp(optimize.brentq(lambda y: gap(math.exp(y)), math.log(rate), hi))
    top = np.nextafter(1.0, 0.0)
    if rate >= top or gap(top) >= 0:
        return low, 1.0
    # in log space: brentq's absolute tolerance (2e-12) would swallow rates below ~1e-10
    return low, math.exp(optimize.brentq(lambda y: gap(math.exp(y)), math.log(rate), math.log(top)))


def bootstrap_rates(
    time: np.ndarray, event: np.ndarray, law: str, shift: bool, n: int, gen: np.random.Generator
) -> np.ndarray:
    """``n`` bootstrap replicates of the censored MLE d/E: chains resampled with replacement,
    each with its own (time, event), the shift refitted when ``shift``.

    Why this and not a wider law (a gamma or Weibull fitted by profile likelihood): a rejected
    geometric law says nothing in favour of another family, and with censoring that family's
    mean would be an extrapolation of its own tail. Resampling whole chains keeps each chain's
    censoring as observed and assumes only that chains are independent and alike, so the
    percentile interval holds whatever the law for what d/E estimates: P[T <= c] / E[min(T, c)]
    at budget c, which is 1 / E[T] when no chain is censored (d/E = 1 / mean of T) and under a
    memoryless law, and close to it when few are. With censored chains and a rejected law, the
    mean beyond the budget is unknown to any law-free method; :func:`escape_rate` says so.
    """
    size = time.size
    out = np.empty(n)
    block = max(1, _BOOTSTRAP_BLOCK // size)
    for lo in range(0, n, block):
        idx = gen.integers(0, size, (min(block, n - lo), size))
        t, ev = time[idx], event[idx]
        if shift:
            first = np.where(ev, t, np.inf).min(axis=1, keepdims=True)
            s = np.where(np.isfinite(first), first - (1.0 if law == "geometric" else 0.0), 0.0)
            t = np.maximum(t - s, 0.0)
        E = t.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo : lo + idx.shape[0]] = np.where(E > 0, ev.sum(axis=1) / E, 0.0)
    return np.sort(out)


@dataclass(frozen=True, eq=False)
class EscapeRate:
    """Maximum-likelihood escape rate of a censored sample (see the module notes for the laws).

    ``rate`` = events / exposure (per step for the geometric law), ``mean`` = shift + 1/rate.
    ``one_sided`` is True when there were no events: the rate is then only bounded above.
    ``method`` is the method that made the intervals: ``"bootstrap"`` where the memorylessness
    test (p-value ``memoryless_p``, NaN when not run) rejected the law, the law's
    ``"exact"`` / ``"profile"`` interval otherwise (docs: statistics#escape-rate-intervals).
    Made by :func:`escape_rate`.

    Attributes
    ----------
    law : str
        The escape law, ``"geometric"`` or ``"exponential"``.
    rate : float
        The maximum-likelihood rate d / E.
    events : int
        The number d of escapes.
    exposure : float
        The exposure E = Σ min(T_i, c_i) (less the shift, when fitted).
    chains : int
        The number of chains.
    censored : int
        The number of censored chains.
    confidence_level : float
        The default level of the intervals (default 0.95).
    method : str
        The method that made the intervals: ``"exact"``, ``"profile"`` or ``"bootstrap"``.
    shift : float
        The fitted shift s (0 unless ``shift=True``).
    at_risk_at_shift : int
        The number of chains at risk at the shift, for :meth:`shift_interval` (0: no shift).
    memoryless_p : float
        The p-value of the memorylessness test; NaN when not run.
    bootstrap : ndarray or None
        The sorted bootstrap replicates of d/E; None when there was no bootstrap.

    Examples
    --------
    >>> from metastab.stats import escape_rate
    >>> fit = escape_rate([3, 1, 7, 10, 10], [False, False, False, True, True])
    >>> fit.law, fit.events, fit.censored, fit.method
    ('geometric', 3, 2, 'exact')
    >>> round(fit.mean, 4), [round(x, 2) for x in fit.mean_interval()]
    (10.3333, [3.88, 48.97])
    """

    law: str
    rate: float
    events: int
    exposure: float
    chains: int
    censored: int
    confidence_level: float = 0.95
    method: str = "exact"
    shift: float = 0.0
    at_risk_at_shift: int = field(default=0, repr=False)
    memoryless_p: float = math.nan
    bootstrap: np.ndarray | None = field(default=None, repr=False)  # sorted replicates of d/E

    @property
    def one_sided(self) -> bool:
        """True with no events: the rate is then only bounded above."""
        return self.events == 0

    @property
    def mean(self) -> float:
        """E[T] = shift + 1/rate (``inf`` with no events)."""
        return self.shift + (1.0 / self.rate if self.rate > 0 else math.inf)

    def _median_of(self, rate: float) -> float:
        if rate <= 0:
            return math.inf
        if self.law == "exponential":
            return self.shift + math.log(2) / rate
        # smallest integer t >= 1 with (1 − p)^t <= 1/2
        return self.shift + (
            1.0 if rate >= 1 else max(1.0, math.ceil(-math.log(2) / math.log1p(-rate)))
        )

    @property
    def median(self) -> float:
        """Median of the fitted law: shift + log 2/λ, or shift + ⌈log 2 / −log(1 − p)⌉."""
        return self._median_of(self.rate)

    def confidence_interval(
        self, confidence_level: float | None = None, *, method: str | None = None
    ) -> ConfidenceInterval:
        """(low, high) for the rate (``None``: the level and method of the fit).

        ``method="exact"``: Garwood's chi-square interval [χ²_{α/2}(2d), χ²_{1−α/2}(2d+2)]/(2E)
        (exponential) or Clopper–Pearson for d successes in E Bernoulli trials (geometric), both
        conditional on the exposure. ``method="profile"``: {r : 2(ℓ(r̂) − ℓ(r)) <= χ²_1(level)}.
        With no events both give the exact one-sided bound (0, U): U = −log(α)/E or
        1 − α^(1/E). ``method="bootstrap"``: the percentile interval of the law-free replicates
        (:func:`bootstrap_rates`), when the fit has them.
        """
        level = check_level(self.confidence_level if confidence_level is None else confidence_level)
        method = _check_method(self.method if method is None else method)
        if method == "bootstrap":
            if self.bootstrap is None:
                raise ValueError(
                    "method='bootstrap' needs the bootstrap replicates: "
                    "escape_rate(..., method='bootstrap')"
                )
            alpha = 1.0 - level
            low, high = np.quantile(self.bootstrap, [alpha / 2, 1 - alpha / 2])
            return ConfidenceInterval(float(low), float(high))
        low, high = rate_interval(self.events, self.exposure, self.law, level, method)
        return ConfidenceInterval(float(low), float(high))

    def mean_interval(
        self, confidence_level: float | None = None, *, method: str | None = None
    ) -> ConfidenceInterval:
        """(low, high) for E[T], from the rate interval (mean = shift + 1/rate is monotone)."""
        low, high = self.confidence_interval(confidence_level, method=method)
        return ConfidenceInterval(
            self.shift + 1.0 / high, self.shift + 1.0 / low if low > 0 else math.inf
        )

    def median_interval(
        self, confidence_level: float | None = None, *, method: str | None = None
    ) -> ConfidenceInterval:
        """(low, high) for the median of the fitted law, from the rate interval."""
        low, high = self.confidence_interval(confidence_level, method=method)
        return ConfidenceInterval(self._median_of(high), self._median_of(low))

    def shift_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """One-sided interval (low, shift) for a fitted shift s (``shift=True``).

        The earliest escape exceeds s by the minimum of n escape times (n chains at risk at s):
        Exp(n λ) or Geometric(1 − (1 − p)^n) on {1, 2, ...}, evaluated at the fitted rate.
        """
        level = check_level(self.confidence_level if confidence_level is None else confidence_level)
        if not self.at_risk_at_shift:
            raise ValueError("shift_interval needs a fitted shift (escape_rate(..., shift=True))")
        n, log_alpha = self.at_risk_at_shift, math.log(1 - level)
        if self.law == "exponential":
            return ConfidenceInterval(self.shift + log_alpha / (n * self.rate), self.shift)
        k = math.ceil(log_alpha / (n * math.log1p(-self.rate))) if self.rate < 1 else 1
        return ConfidenceInterval(self.shift + 1 - k, self.shift)

    def survival_function(self, t: Any) -> np.ndarray:
        """Fitted S(t) = exp(−λ (t − s)_+) or (1 − p)^((t − s)_+)."""
        x = np.maximum(np.asarray(t, dtype=np.float64) - self.shift, 0.0)
        if self.law == "exponential":
            return np.exp(-self.rate * x)
        return np.exp(x * math.log1p(-self.rate)) if self.rate < 1 else (x == 0).astype(float)

    def _medians(self) -> tuple[float, float, float]:
        """The law's median and interval; NaN where the test rejected the law (the median of a
        rejected law is not the median of T: that is :func:`~metastab.stats.survival`'s)."""
        if self.method == "bootstrap":
            return math.nan, math.nan, math.nan
        return (self.median, *self.median_interval())

    def _rows(self) -> tuple[str, list[list[str]]]:
        med, *med_ci = self._medians()
        rows = [
            [name, number(value), interval(*ci)]
            for name, value, ci in (
                ("rate", self.rate, self.confidence_interval()),
                ("mean", self.mean, self.mean_interval()),
                ("median", med, med_ci),
            )
        ]
        shift = f", shift {number(self.shift)}" if self.shift else ""
        tested = (
            f", memoryless p {number(self.memoryless_p)}"
            if math.isfinite(self.memoryless_p)
            else ""
        )
        counts = (
            f"{self.events} events, {self.censored} censored of {self.chains} chains, exposure "
            f"{number(self.exposure)}{shift}{tested}"
        )
        return counts, rows

    def __repr__(self) -> str:
        counts, rows = self._rows()
        estimates = ", ".join(f"{name}={value} {ci}" for name, value, ci in rows)
        return (
            f"EscapeRate({self.law}: {estimates} ({self.confidence_level:.0%} {self.method} "
            f"CI); {counts})"
        )

    def _repr_html_(self) -> str:
        counts, rows = self._rows()
        return html_table(
            f"Escape rate ({self.law} law)",
            ["", "estimate", f"{self.confidence_level:.0%} CI ({self.method})"],
            rows,
            counts,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row: law, chains, events, censored, exposure, rate, mean, median and intervals,
        the method that made them and the memorylessness p-value."""
        rl, rh = self.confidence_interval()
        ml, mh = self.mean_interval()
        med, dl, dh = self._medians()
        return pd.DataFrame(
            [
                {
                    "law": self.law,
                    "chains": self.chains,
                    "events": self.events,
                    "censored": self.censored,
                    "exposure": self.exposure,
                    "shift": self.shift,
                    "rate": self.rate,
                    "rate_low": rl,
                    "rate_high": rh,
                    "mean": self.mean,
                    "mean_low": ml,
                    "mean_high": mh,
                    "median": med,
                    "median_low": dl,
                    "median_high": dh,
                    "one_sided": self.one_sided,
                    "confidence_level": self.confidence_level,
                    "method": self.method,
                    "memoryless_p": self.memoryless_p,
                }
            ]
        )


def _check_method(method: str) -> str:
    if method not in RATE_METHODS:
        raise ValueError(f"method must be one of {RATE_METHODS}, got {method!r}")
    return method


def escape_rate(
    steps: Any,
    censored: Any = None,
    *,
    law: str = "geometric",
    confidence_level: float = 0.95,
    method: str = "exact",
    start: Any = None,
    shift: bool = False,
    max_steps: Any = None,
    memoryless: bool = True,
    n_resamples: int = 199,
    rng: Any = 0,
) -> EscapeRate:
    """Escape rate of censored first-passage times by maximum likelihood.

    The intervals of the law hold only under it: unless ``memoryless=False`` the law is tested
    first (:func:`~metastab.stats.exponentiality_test`, ``n_resamples``), and where it is
    rejected (p <= :data:`MEMORYLESS_LEVEL`) the intervals are the law-free bootstrap's
    (:func:`bootstrap_rates`, :data:`BOOTSTRAP_RESAMPLES` replicates); ``method`` of the result
    says which (docs: statistics#escape-rate-intervals).

    Parameters
    ----------
    steps : array_like, FirstPassage or DataFrame
        First-passage times, as for :func:`~metastab.stats.survival`.
    censored : array_like of bool, optional
        True where censored; not with a FirstPassage or frame, which bring their own.
    law : {"geometric", "exponential"}, optional
        Geometric on {1, 2, ...} (default): p̂ = d / Σ min(T_i, c_i), the exact discrete MLE
        (module notes). Exponential: λ̂ = d / Σ min(T_i, c_i).
    confidence_level : float, optional
        The default level of the result's intervals, in (0, 1) (default 0.95).
    method : {"exact", "profile", "bootstrap"}, optional
        Interval for the rate where the law holds, see :meth:`EscapeRate.confidence_interval`;
        "bootstrap" takes the law-free interval whatever the test says.
    start : array_like, optional
        Per-chain clock start subtracted from ``steps`` (an initial transient).
    shift : bool
        Fit T = s + T' instead, with T' of the law: ŝ = first escape time (− 1 for the
        geometric law), which maximises the likelihood; see :meth:`EscapeRate.shift_interval`.
    max_steps : int or array_like, optional
        Each chain's budget, for the test (see :func:`~metastab.stats.exponentiality_test`).
    memoryless : bool
        Test the law and switch to the bootstrap where it is rejected (default True).
    n_resamples : int
        Resamples of the memorylessness test.
    rng : None, int, SeedSequence or Generator
        Seeds the test and the bootstrap (default 0: the same result every call).

    Returns
    -------
    fit : EscapeRate
        The rate, its intervals and the counts of the sample.

    Warns
    -----
    DiagnosticWarning
        With no events (the interval is the one-sided bound (0, U)), when more than half of the
        chains are censored, when events at time 0 are excluded, when the law cannot be tested
        (budgets unknown), and when it is rejected with censored chains (the mean beyond the
        budget then rests on no law).

    Examples
    --------
    >>> from metastab.stats import escape_rate
    >>> fit = escape_rate([3, 1, 7, 10, 10], [False, False, False, True, True])
    >>> fit.rate, fit.events, fit.exposure           # 3 escapes in 31 steps
    (0.0967741935483871, 3, 31.0)
    >>> [round(x, 4) for x in fit.confidence_interval()], fit.method
    ([0.0204, 0.2575], 'exact')
    """
    law = check_law(law)
    level = check_level(confidence_level)
    method = _check_method(method)
    if start is not None and shift:
        raise ValueError("pass either start or shift=True, not both")
    s = censored_sample(steps, censored, law=law, start=start, max_steps=max_steps)
    rate, sh, at_risk, d, E = fit_rate(s.time, s.event, law, shift)
    n, cens = int(s.time.size), int((~s.event).sum())
    if E <= 0:
        raise ValueError(f"no exposure: all {n} chains were observed for 0 steps")
    if d == 0:
        method = "exact" if method == "bootstrap" else method  # no escape to resample
        _, upper = rate_interval(0, E, law, level, method)
        warnings.warn(
            f"no escapes among {n} chains (exposure {E:g}): the rate is only bounded, "
            f"rate <= {upper:.4g} ({level:.0%} one-sided), mean > {1 / upper:.4g}",
            DiagnosticWarning,
            stacklevel=2,
        )
    elif cens > n / 2:
        warnings.warn(
            f"{cens} of {n} chains are censored: the rate rests on {d} escapes and on "
            "the exponential/geometric law beyond the budget",
            DiagnosticWarning,
            stacklevel=2,
        )
    gen = np.random.default_rng(rng)
    p = math.nan
    if memoryless and d > 0:
        if s.budget is None:
            warnings.warn(
                "memorylessness not tested: censoring times vary and the budgets of the "
                f"escaped chains are unknown (pass max_steps); the {method} interval assumes "
                f"the {law} law",
                DiagnosticWarning,
                stacklevel=2,
            )
        else:
            p = memoryless_test(s, law, shift, int(n_resamples), gen).pvalue
            if p <= MEMORYLESS_LEVEL:
                method = "bootstrap"
                if cens:
                    warnings.warn(
                        f"the {law} law is rejected (memorylessness p = {p:.2g}) and {cens} of "
                        f"{n} chains are censored: the bootstrap interval is law-free for "
                        "the rate over the budget, the mean beyond it rests on no law",
                        DiagnosticWarning,
                        stacklevel=2,
                    )
    reps = (
        bootstrap_rates(s.time, s.event, law, shift, BOOTSTRAP_RESAMPLES, gen)
        if method == "bootstrap"
        else None
    )
    return EscapeRate(
        law=law,
        rate=rate,
        events=d,
        exposure=E,
        chains=n,
        censored=cens,
        confidence_level=level,
        method=method,
        shift=sh,
        at_risk_at_shift=at_risk,
        memoryless_p=p,
        bootstrap=reps,
    )
