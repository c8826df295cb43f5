"""Censored first-passage statistics: survival, escape rates, memorylessness, scaling laws.

Input is one first-passage time per chain, right-censored at the step budget (a censored chain
carries ``steps == max_steps`` and is never an event), as :class:`metastab.FirstPassage` or its
:meth:`~metastab.FirstPassage.to_frame`. Two laws for the escape time T (science.md §3,
"Metastability"; the exact frozen law is geometric):

- ``"geometric"``: T in {1, 2, ...}, P[T = t] = p (1 − p)^(t−1), the per-step escape
  probability p is the *rate*. A chain observed for min(T, c) steps contributes
  p^[event] (1 − p)^(min(T, c) − [event]), so with d events and exposure E = Σ min(T_i, c_i)
  the log-likelihood is d log p + (E − d) log(1 − p) and p̂ = d / E exactly.
- ``"exponential"``: T > 0 continuous with rate λ; log-likelihood d log λ − λ E, λ̂ = d / E.

In both E[T] = 1 / rate. An event at time 0 (the event already held when the clock started) is
not an escape from the metastable state and has probability 0 under both laws: such chains are
excluded, with a :class:`DiagnosticWarning` giving their number, everywhere in this module.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ._validate import real

__all__ = ["DiagnosticWarning", "EscapeRate", "ExponentialityTest", "ScalingFit", "Survival",
           "escape_rate", "exponentiality_test", "fit_report", "fit_scaling", "survival"]

LAWS = ("geometric", "exponential")


class DiagnosticWarning(RuntimeWarning):
    """A statistic is reported but says less than it seems: no events, most chains censored,
    chains excluded, a model that does not fit. The message carries the numbers."""


# --------------------------------------------------------------------------- input


@dataclass(frozen=True)
class _Sample:
    time: np.ndarray          # time on test, steps − start (float64, >= 0)
    event: np.ndarray         # True where the chain escaped (not censored)
    budget: np.ndarray | None  # each chain's censoring time on the same clock, when known
    kept: np.ndarray          # mask over the input rows (events at time 0 are dropped)

    @property
    def events(self) -> int:
        return int(self.event.sum())

    @property
    def exposure(self) -> float:
        return float(self.time.sum())


def _check_law(law) -> str:
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    return law


def _check_level(confidence_level) -> float:
    return real("confidence_level", confidence_level, low=0, high=1, low_open=True, high_open=True)


def _sample(steps, censored, *, law, start=None, max_steps=None) -> _Sample:
    """Validate (steps, censored[, start, max_steps]) or a FirstPassage / frame into a _Sample."""
    if isinstance(steps, pd.DataFrame) or hasattr(steps, "censored"):
        if censored is not None:
            raise ValueError("pass censored only with an array of steps, not with "
                             f"{type(steps).__name__}")
        src = steps
        get = src.__getitem__ if isinstance(src, pd.DataFrame) else lambda k: getattr(src, k)
        steps, censored = get("steps"), get("censored")
        if max_steps is None and (not isinstance(src, pd.DataFrame) or "max_steps" in src):
            max_steps = np.asarray(get("max_steps"))
    if censored is None:
        raise ValueError("censored is required with an array of steps "
                         "(np.zeros(len(steps), bool) if no chain was censored)")
    t = np.asarray(steps)
    c = np.asarray(censored)
    if t.ndim != 1 or t.size == 0 or not np.issubdtype(t.dtype, np.number):
        raise ValueError(f"steps must be a non-empty 1-d array of numbers, got shape {t.shape}")
    if c.shape != t.shape:
        raise ValueError(f"censored must have the shape of steps {t.shape}, got {c.shape}")
    if c.dtype != bool:
        if not np.issubdtype(c.dtype, np.number) or not np.isin(c, (0, 1)).all():
            raise ValueError(f"censored must be boolean, got dtype {c.dtype}")
        c = c.astype(bool)
    t = t.astype(np.float64)
    if not np.isfinite(t).all() or (t < 0).any():
        bad = t[~np.isfinite(t) | (t < 0)][0]
        raise ValueError(f"steps must be finite and >= 0, got {bad!r}")
    raw = t
    if start is not None:
        s = np.broadcast_to(np.asarray(start, dtype=np.float64), t.shape)
        if not np.isfinite(s).all() or (s < 0).any() or (s > t).any():
            i = int(np.flatnonzero(~np.isfinite(s) | (s < 0) | (s > t))[0])
            raise ValueError(f"start must be finite with 0 <= start <= steps, got start={s[i]!r} "
                             f"for steps={t[i]!r} (chain {i})")
        t = t - s
    else:
        s = np.zeros_like(t)
    if law == "geometric" and (t != np.floor(t)).any():
        raise ValueError("law='geometric' needs integer steps (and start); use "
                         "law='exponential' for continuous times")
    budget = None
    if max_steps is not None:
        budget = np.broadcast_to(np.asarray(max_steps, dtype=np.float64), t.shape) - s
        bad = (budget < t) | (c & (budget != t))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"max_steps must be >= steps, and == steps for a censored chain; got "
                             f"max_steps={budget[i] + s[i]!r}, steps={raw[i]!r}, "
                             f"censored={bool(c[i])} (chain {i})")
    elif c.any() and np.unique(raw[c]).size == 1:
        budget = raw[c][0] - s      # one common budget: every chain had it
    elif not c.any():
        budget = np.full(t.shape, np.inf)     # nothing censored, no budget given: none assumed
    zero = ~c & (t == 0)
    keep = ~zero
    if zero.any():
        warnings.warn(f"{int(zero.sum())} of {t.size} chains met the event at time 0 (it held "
                      "when the clock started): they are not escapes and are excluded",
                      DiagnosticWarning, stacklevel=3)
        t, c = t[keep], c[keep]
        budget = None if budget is None else budget[keep]
        if t.size == 0:
            raise ValueError("no chain is left once the events at time 0 are excluded")
    return _Sample(time=t, event=~c, budget=budget, kept=keep)


# --------------------------------------------------------------------------- Kaplan–Meier


def _kaplan_meier(time, event):
    """Distinct event times u_j, S(u_j) = Π_{i<=j} (1 − d_i / n_i), at-risk n_j, events d_j.

    Censored at t counts as at risk at t (events come first). Plain NumPy: used by the
    bootstrap, and checked against ``scipy.stats.ecdf`` in the tests.
    """
    u, d = np.unique(time[event], return_counts=True)
    at_risk = time.size - np.searchsorted(np.sort(time), u, side="left")
    return u, np.cumprod(1.0 - d / at_risk), at_risk, d


@dataclass(frozen=True, eq=False)
class Survival:
    """Kaplan–Meier estimate of S(t) = P[T > t] under right censoring.

    ``time`` holds the distinct observed times (events and censorings), ``probability`` the
    estimate just after each, ``at_risk`` and ``events`` the counts there. Computed with
    ``scipy.stats.ecdf`` on ``scipy.stats.CensoredData``.
    """

    time: np.ndarray = field(repr=False)
    probability: np.ndarray = field(repr=False)
    at_risk: np.ndarray = field(repr=False)
    events: np.ndarray = field(repr=False)
    chains: int
    n_events: int
    _ecdf: object = field(repr=False)

    def evaluate(self, t) -> np.ndarray:
        """S(t) at the times ``t`` (1 before the first event)."""
        return self._ecdf.sf.evaluate(np.asarray(t, dtype=np.float64))

    def confidence_interval(self, confidence_level=0.95, method="log-log"):
        """Pointwise band (low, high) at :attr:`time`: ``"linear"`` is Greenwood's
        S ± z·S·sqrt(Σ d/(n(n−d))), ``"log-log"`` the same on log(−log S) (stays in [0, 1]).

        NaN where the formula is undefined (S = 0 for log-log; no event yet gives [1, 1]).
        """
        level = _check_level(confidence_level)
        if method not in ("linear", "log-log"):
            raise ValueError(f"method must be 'linear' or 'log-log', got {method!r}")
        if self.n_events == 0:
            return np.ones_like(self.probability), np.ones_like(self.probability)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The confidence interval is undefined",
                                    RuntimeWarning)
            ci = self._ecdf.sf.confidence_interval(level, method=method)
        return ci.low.probabilities, ci.high.probabilities

    def median(self) -> float:
        """First time with S(t) <= 1/2; ``inf`` when the curve stays above 1/2."""
        below = np.flatnonzero(self.probability <= 0.5)
        return float(self.time[below[0]]) if below.size else math.inf

    def to_frame(self, confidence_level=0.95, method="log-log") -> pd.DataFrame:
        """Columns time, survival, low, high, at_risk, events (one row per observed time)."""
        low, high = self.confidence_interval(confidence_level, method)
        return pd.DataFrame({"time": self.time, "survival": self.probability, "low": low,
                             "high": high, "at_risk": self.at_risk, "events": self.events})


def survival(steps, censored=None, *, start=None) -> Survival:
    """Kaplan–Meier survival curve of censored first-passage times, with Greenwood bands.

    Parameters
    ----------
    steps : array_like of int or float, or FirstPassage, or DataFrame
        First-passage times; a FirstPassage (or a frame with columns steps, censored) brings
        its own ``censored``.
    censored : array_like of bool
        True where the chain reached the budget without the event (right-censored).
    start : array_like, optional
        Per-chain clock start (e.g. the hitting time of the near-vertex set), subtracted from
        ``steps``.

    Returns
    -------
    Survival
        Ŝ(t) = Π_{u_j <= t} (1 − d_j / n_j) with ``confidence_interval()`` and ``to_frame()``.

    Examples
    --------
    >>> km = survival([1, 2, 2, 5, 9], [False, False, True, False, True])
    >>> km.probability.round(3).tolist()
    [0.8, 0.6, 0.3, 0.3]
    >>> km.time.tolist()          # observed times (a censoring time with no event included)
    [1.0, 2.0, 5.0, 9.0]
    """
    s = _sample(steps, censored, law="exponential", start=start)
    if s.events == 0:
        warnings.warn(f"no events among {s.time.size} chains: S(t) = 1 up to "
                      f"{s.time.max():g}, with no band", DiagnosticWarning, stacklevel=2)
    res = stats.ecdf(stats.CensoredData(uncensored=s.time[s.event], right=s.time[~s.event]))
    t = res.sf.quantiles
    u, _, _, d = _kaplan_meier(s.time, s.event)
    events = np.zeros(t.size, dtype=np.int64)
    events[np.searchsorted(t, u)] = d
    at_risk = s.time.size - np.searchsorted(np.sort(s.time), t, side="left")
    return Survival(time=t, probability=res.sf.probabilities, at_risk=at_risk, events=events,
                    chains=int(s.time.size), n_events=s.events, _ecdf=res)


# --------------------------------------------------------------------------- escape rate


def _loglik(rate, d, E, law):
    """Censored log-likelihood of the rate (constant terms dropped)."""
    if law == "exponential":
        return special.xlogy(d, rate) - rate * E
    return special.xlogy(d, rate) + special.xlog1py(E - d, -rate)


_POISSON_TRIALS = 1e12


def _rate_interval(d, E, law, level, method):
    """(low, high) for the rate from d events in exposure E; one-sided (0, U) when d = 0."""
    alpha = 1.0 - level
    if d == 0:
        return 0.0, (-math.log(alpha) / E if law == "exponential"
                     else -math.expm1(math.log(alpha) / E))
    if method == "exact":
        # Garwood (Poisson count d in exposure E) for the exponential law, and for the geometric
        # law beyond _POISSON_TRIALS trials, where Clopper–Pearson equals it to ~10/E relative
        # and scipy's beta quantiles with a second parameter near 1e18 are unreliable.
        if law == "exponential" or E > _POISSON_TRIALS:
            return (stats.chi2.ppf(alpha / 2, 2 * d) / (2 * E),
                    stats.chi2.ppf(1 - alpha / 2, 2 * d + 2) / (2 * E))
        return (stats.beta.ppf(alpha / 2, d, E - d + 1),     # Clopper–Pearson: d of E trials
                stats.beta.ppf(1 - alpha / 2, d + 1, E - d) if d < E else 1.0)
    rate = d / E
    drop = _loglik(rate, d, E, law) - stats.chi2.ppf(level, 1) / 2

    def gap(r):
        return _loglik(r, d, E, law) - drop

    low = math.exp(optimize.brentq(lambda y: gap(math.exp(y)), math.log(rate) - 60,
                                   math.log(rate)))
    if law == "exponential":
        hi = math.log(rate) + 60
        return low, math.exp(optimize.brentq(lambda y: gap(math.exp(y)), math.log(rate), hi))
    top = np.nextafter(1.0, 0.0)
    if rate >= top or gap(top) >= 0:
        return low, 1.0
    # in log space: brentq's absolute tolerance (2e-12) would swallow rates below ~1e-10
    return low, math.exp(optimize.brentq(lambda y: gap(math.exp(y)), math.log(rate),
                                         math.log(top)))


@dataclass(frozen=True, eq=False)
class EscapeRate:
    """Maximum-likelihood escape rate of a censored sample (see the module notes for the laws).

    ``rate`` = events / exposure (per step for the geometric law), ``mean`` = shift + 1/rate.
    ``one_sided`` is True when there were no events: the rate is then only bounded above.
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

    @property
    def one_sided(self) -> bool:
        return self.events == 0

    @property
    def mean(self) -> float:
        """E[T] = shift + 1/rate (``inf`` with no events)."""
        return self.shift + (1.0 / self.rate if self.rate > 0 else math.inf)

    def _median_of(self, rate):
        if rate <= 0:
            return math.inf
        if self.law == "exponential":
            return self.shift + math.log(2) / rate
        # smallest integer t >= 1 with (1 − p)^t <= 1/2
        return self.shift + (1.0 if rate >= 1 else max(1.0, math.ceil(-math.log(2)
                                                                      / math.log1p(-rate))))

    @property
    def median(self) -> float:
        """Median of the fitted law: shift + log 2/λ, or shift + ⌈log 2 / −log(1 − p)⌉."""
        return self._median_of(self.rate)

    def confidence_interval(self, confidence_level=None, method=None):
        """(low, high) for the rate.

        ``method="exact"``: Garwood's chi-square interval [χ²_{α/2}(2d), χ²_{1−α/2}(2d+2)]/(2E)
        (exponential) or Clopper–Pearson for d successes in E Bernoulli trials (geometric), both
        conditional on the exposure. ``method="profile"``: {r : 2(ℓ(r̂) − ℓ(r)) <= χ²_1(level)}.
        With no events both give the exact one-sided bound (0, U): U = −log(α)/E or
        1 − α^(1/E).
        """
        level = _check_level(self.confidence_level if confidence_level is None
                             else confidence_level)
        method = self.method if method is None else method
        if method not in ("exact", "profile"):
            raise ValueError(f"method must be 'exact' or 'profile', got {method!r}")
        low, high = _rate_interval(self.events, self.exposure, self.law, level, method)
        return float(low), float(high)

    def mean_interval(self, confidence_level=None, method=None):
        """(low, high) for E[T], from the rate interval (mean = shift + 1/rate is monotone)."""
        low, high = self.confidence_interval(confidence_level, method)
        return self.shift + 1.0 / high, (self.shift + 1.0 / low if low > 0 else math.inf)

    def median_interval(self, confidence_level=None, method=None):
        """(low, high) for the median of the fitted law, from the rate interval."""
        low, high = self.confidence_interval(confidence_level, method)
        return self._median_of(high), self._median_of(low)

    def shift_interval(self, confidence_level=None):
        """One-sided interval (low, shift) for a fitted shift s (``shift=True``).

        The earliest escape exceeds s by the minimum of n escape times (n chains at risk at s):
        Exp(n λ) or Geometric(1 − (1 − p)^n) on {1, 2, ...}, evaluated at the fitted rate.
        """
        level = _check_level(self.confidence_level if confidence_level is None
                             else confidence_level)
        if not self.at_risk_at_shift:
            raise ValueError("shift_interval needs a fitted shift (escape_rate(..., shift=True))")
        n, log_alpha = self.at_risk_at_shift, math.log(1 - level)
        if self.law == "exponential":
            return self.shift + log_alpha / (n * self.rate), self.shift
        k = math.ceil(log_alpha / (n * math.log1p(-self.rate))) if self.rate < 1 else 1
        return self.shift + 1 - k, self.shift

    def survival_function(self, t) -> np.ndarray:
        """Fitted S(t) = exp(−λ (t − s)_+) or (1 − p)^((t − s)_+)."""
        x = np.maximum(np.asarray(t, dtype=np.float64) - self.shift, 0.0)
        if self.law == "exponential":
            return np.exp(-self.rate * x)
        return np.exp(x * math.log1p(-self.rate)) if self.rate < 1 else (x == 0).astype(float)

    def to_frame(self) -> pd.DataFrame:
        """One row: law, chains, events, censored, exposure, rate, mean, median and intervals."""
        rl, rh = self.confidence_interval()
        ml, mh = self.mean_interval()
        dl, dh = self.median_interval()
        return pd.DataFrame([{
            "law": self.law, "chains": self.chains, "events": self.events,
            "censored": self.censored, "exposure": self.exposure, "shift": self.shift,
            "rate": self.rate, "rate_low": rl, "rate_high": rh, "mean": self.mean,
            "mean_low": ml, "mean_high": mh, "median": self.median, "median_low": dl,
            "median_high": dh, "one_sided": self.one_sided,
            "confidence_level": self.confidence_level, "method": self.method}])


def _fit(time, event, law, shift):
    """(rate, shift, at_risk) by maximum likelihood; the shift s = first escape (− 1)."""
    s, at_risk = 0.0, 0
    if shift:
        if not event.any():
            raise ValueError("shift=True needs at least one event, got 0")
        s = float(time[event].min()) - (1.0 if law == "geometric" else 0.0)
        at_risk = int((time > s).sum())
    d = int(event.sum())
    E = float(np.maximum(time - s, 0.0).sum())
    return (d / E if E > 0 else math.nan), s, at_risk, d, E


def escape_rate(steps, censored=None, *, law="geometric", confidence_level=0.95,
                method="exact", start=None, shift=False) -> EscapeRate:
    """Escape rate of censored first-passage times by maximum likelihood.

    Parameters
    ----------
    steps, censored : see :func:`survival`.
    law : {"geometric", "exponential"}
        Geometric on {1, 2, ...}: p̂ = d / Σ min(T_i, c_i), the exact discrete MLE (module notes).
        Exponential: λ̂ = d / Σ min(T_i, c_i).
    confidence_level : float
    method : {"exact", "profile"}
        Interval for the rate, see :meth:`EscapeRate.confidence_interval`.
    start : array_like, optional
        Per-chain clock start subtracted from ``steps`` (an initial transient).
    shift : bool
        Fit T = s + T' instead, with T' of the law: ŝ = first escape time (− 1 for the
        geometric law), which maximises the likelihood; see :meth:`EscapeRate.shift_interval`.

    Returns
    -------
    EscapeRate

    Warns
    -----
    DiagnosticWarning
        With no events (the interval is the one-sided bound (0, U)), when more than half of the
        chains are censored, and when events at time 0 are excluded.

    Examples
    --------
    >>> fit = escape_rate([3, 1, 7, 10, 10], [False, False, False, True, True])
    >>> fit.rate, fit.events, fit.exposure           # 3 escapes in 31 steps
    (0.0967741935483871, 3, 31.0)
    >>> [round(x, 4) for x in fit.confidence_interval()]
    [0.0204, 0.2575]
    """
    law = _check_law(law)
    level = _check_level(confidence_level)
    if method not in ("exact", "profile"):
        raise ValueError(f"method must be 'exact' or 'profile', got {method!r}")
    if start is not None and shift:
        raise ValueError("pass either start or shift=True, not both")
    s = _sample(steps, censored, law=law, start=start)
    rate, sh, at_risk, d, E = _fit(s.time, s.event, law, shift)
    n, cens = int(s.time.size), int((~s.event).sum())
    if E <= 0:
        raise ValueError(f"no exposure: all {n} chains were observed for 0 steps")
    if d == 0:
        _, upper = _rate_interval(0, E, law, level, method)
        warnings.warn(f"no escapes among {n} chains (exposure {E:g}): the rate is only bounded, "
                      f"rate <= {upper:.4g} ({level:.0%} one-sided), mean > {1 / upper:.4g}",
                      DiagnosticWarning, stacklevel=2)
    elif cens > n / 2:
        warnings.warn(f"{cens} of {n} chains are censored: the rate rests on {d} escapes and on "
                      "the exponential/geometric law beyond the budget", DiagnosticWarning,
                      stacklevel=2)
    return EscapeRate(law=law, rate=rate, events=d, exposure=E, chains=n, censored=cens,
                      confidence_level=level, method=method, shift=sh, at_risk_at_shift=at_risk)


# --------------------------------------------------------------------------- memorylessness


def _sup_distance(time, event, rate, shift, law):
    """sup_{0 <= t <= max time} |Ŝ_KM(t) − S_fit(t)| (exact: both are monotone step/curves)."""
    u, km, _, _ = _kaplan_meier(time, event)
    tau = time.max()
    left = np.concatenate(([0.0], u))
    right = np.concatenate((u, [tau]))
    if law == "geometric":        # integer clock: the last integer before the next jump
        right[:-1] -= 1.0
        log_q = math.log1p(-rate) if rate < 1 else -math.inf
    else:
        log_q = -rate

    def fitted(t):
        x = np.maximum(t - shift, 0.0)
        with np.errstate(invalid="ignore"):
            return np.where(x > 0, np.exp(x * log_q), 1.0)

    K = np.concatenate(([1.0], km))
    return float(max(np.abs(K - fitted(left)).max(), np.abs(K - fitted(right)).max()))


@dataclass(frozen=True, eq=False)
class ExponentialityTest:
    """Parametric-bootstrap test that the escape time has the fitted memoryless law.

    ``statistic`` is D = sup_t |Ŝ_KM(t) − S_fit(t)|; ``pvalue`` = (1 + #{D* >= D}) / (B + 1) over
    B samples drawn from the fitted law with the same censoring budgets and refitted.
    """

    statistic: float
    pvalue: float
    law: str
    rate: float
    shift: float
    n_resamples: int
    null_distribution: np.ndarray = field(repr=False)


def exponentiality_test(steps, censored=None, *, law="geometric", start=None, shift=False,
                        max_steps=None, n_resamples=999, rng=None) -> ExponentialityTest:
    """Check that escape is memoryless: Kaplan–Meier against the fitted geometric/exponential law.

    The statistic D = sup_t |Ŝ_KM(t) − exp(−λ̂ t)| (or (1 − p̂)^t) is a censoring-aware
    Kolmogorov distance; its null law is simulated: draw every chain from the fitted law,
    censor it at its own budget, refit (estimating λ, and s when ``shift``), recompute D.

    Parameters
    ----------
    steps, censored, start : see :func:`survival`.
    law : {"geometric", "exponential"}
    shift : bool
        Test the shifted law s + T' (s fitted as in :func:`escape_rate`).
    max_steps : int or array_like, optional
        Each chain's budget (a censored chain must have steps == max_steps); taken from a
        FirstPassage / frame, or from the censored chains when they share one value, or none
        when no chain is censored. Needed when censoring times vary and are not given.
    n_resamples : int
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    ExponentialityTest

    Examples
    --------
    >>> t = np.random.default_rng(0).geometric(0.01, 300)
    >>> res = exponentiality_test(np.minimum(t, 200), t > 200, n_resamples=199, rng=1)
    >>> res.pvalue > 0.05
    True
    """
    law = _check_law(law)
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if start is not None and shift:
        raise ValueError("pass either start or shift=True, not both")
    s = _sample(steps, censored, law=law, start=start, max_steps=max_steps)
    return _memoryless(s, law, shift, int(n_resamples), np.random.default_rng(rng))


# Below this per-step rate numpy's geometric sampler would approach its int64 ceiling
# (it saturates at 2^63 - 1 for p ~ 1e-79, the rates of mode="accelerated" at large β).
_TINY_RATE = 1e-12


def _draw_law(gen, law, rate, size):
    """``size`` draws of the fitted law: Geometric(rate) on {1, 2, ...} or Exp(rate).

    For tiny geometric rates by inversion in float64, T = 1 + ⌊E / −log(1 − p)⌋ with E ~ Exp(1)
    (the same law, P[T > k] = (1 − p)^k, without the int64 ceiling)."""
    if law == "exponential":
        return gen.exponential(1.0 / rate, size)
    if rate > _TINY_RATE:
        return gen.geometric(rate, size)
    return 1.0 + np.floor(gen.exponential(1.0, size) / -math.log1p(-rate))


def _memoryless(s: _Sample, law, shift, n_resamples, gen) -> ExponentialityTest:
    if s.budget is None:
        raise ValueError("censoring times vary and the budgets of the escaped chains are "
                         "unknown: pass max_steps")
    if s.events == 0:
        raise ValueError(f"exponentiality_test needs at least one event, got 0 among "
                         f"{s.time.size} chains")
    rate, sh, _, _, _ = _fit(s.time, s.event, law, shift)
    D = _sup_distance(s.time, s.event, rate, sh, law)
    null = np.zeros(n_resamples)
    for b in range(n_resamples):
        T = _draw_law(gen, law, rate, s.time.size) + sh
        ev = T <= s.budget
        if ev.any():
            t = np.where(ev, T, s.budget)
            r, bs, _, _, _ = _fit(t, ev, law, shift)
            null[b] = _sup_distance(t, ev, r, bs, law)
    # ties within roundoff count as "at least as extreme"
    pvalue = (1 + np.count_nonzero(null >= D * (1 - 1e-12))) / (n_resamples + 1)
    return ExponentialityTest(statistic=D, pvalue=float(pvalue), law=law, rate=rate, shift=sh,
                              n_resamples=n_resamples, null_distribution=null)


def __getattr__(name):
    """The scaling-law fits live in :mod:`metastab.scaling`, which builds on this module; they
    are importable from here too (``from metastab.stats import fit_scaling``)."""
    if name in ("ScalingFit", "fit_scaling", "fit_report"):
        from . import scaling

        return getattr(scaling, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"ScalingFit", "fit_scaling", "fit_report"})
