"""Censored samples of first-passage times: validation, the laws, the product-limit estimate.

Input is one first-passage time per chain, right-censored at the step budget (a censored chain
carries ``steps == max_steps`` and is never an event), as :class:`metastab.FirstPassage`, its
:meth:`~metastab.FirstPassage.to_frame`, or arrays. An event at time 0 (the event already held
when the clock started) is not an escape from the metastable state and has probability 0 under
both laws of :data:`LAWS`: such chains are excluded, with a :class:`DiagnosticWarning` giving
their number. So are absorbed chains (``absorbed``: the event out of reach, a competing risk,
:mod:`metastab.engine.absorption`), with an :class:`~metastab.exceptions.AbsorptionWarning`: the
statistics then describe the escape law conditional on not being absorbed, and
:func:`absorption` estimates the probability of absorption.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import AbsorptionWarning, DiagnosticWarning

__all__ = [
    "LAWS",
    "Absorption",
    "CensoredSample",
    "absorption",
    "censored_sample",
    "check_law",
    "fit_rate",
    "product_limit",
]

LAWS = ("geometric", "exponential")


@dataclass(frozen=True)
class CensoredSample:
    """A validated censored sample on its own clock (events at time 0 dropped)."""

    time: np.ndarray  # time on test, steps − start (float64, >= 0)
    event: np.ndarray  # True where the chain escaped (not censored)
    budget: np.ndarray | None  # each chain's censoring time on the same clock, when known
    kept: np.ndarray  # mask over the input rows (events at time 0 and absorbed chains dropped)

    @property
    def events(self) -> int:
        """Number of escapes d."""
        return int(self.event.sum())

    @property
    def exposure(self) -> float:
        """Total time on test E = Σ min(T_i, c_i)."""
        return float(self.time.sum())

    def subset(self, mask: np.ndarray) -> CensoredSample:
        """The chains where ``mask`` (over the kept chains) is True."""
        return CensoredSample(
            self.time[mask],
            self.event[mask],
            None if self.budget is None else self.budget[mask],
            mask[mask],
        )


def check_law(law: str) -> str:
    """Validate an escape law name (one of :data:`LAWS`)."""
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    return law


def _absorbed_of(src: Any) -> np.ndarray | None:
    """The ``absorbed`` flags of a FirstPassage or frame (None where it has none)."""
    if isinstance(src, pd.DataFrame):
        return src["absorbed"].to_numpy(dtype=bool) if "absorbed" in src else None
    value = getattr(src, "absorbed", None)
    return None if value is None else np.asarray(value, dtype=bool)


def censored_sample(
    steps: Any,
    censored: Any,
    *,
    law: str,
    start: Any = None,
    max_steps: Any = None,
    absorbed: Any = None,
) -> CensoredSample:
    """Validate (steps, censored[, start, max_steps, absorbed]) or a FirstPassage / frame (its
    ``absorbed`` flags too) into a sample."""
    if isinstance(steps, pd.DataFrame) or hasattr(steps, "censored"):
        if censored is not None:
            raise ValueError(
                f"pass censored only with an array of steps, not with {type(steps).__name__}"
            )
        src = steps
        frame = isinstance(src, pd.DataFrame)
        get = src.__getitem__ if frame else lambda k: getattr(src, k)
        steps, censored = get("steps" if frame else "times"), get("censored")
        if max_steps is None and (not frame or "max_steps" in src):
            max_steps = np.asarray(get("max_steps"))
        if absorbed is None:
            absorbed = _absorbed_of(src)
    if censored is None:
        raise ValueError(
            "censored is required with an array of steps "
            "(np.zeros(len(steps), bool) if no chain was censored)"
        )
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
            raise ValueError(
                f"start must be finite with 0 <= start <= steps, got start={s[i]!r} "
                f"for steps={t[i]!r} (chain {i})"
            )
        t = t - s
    else:
        s = np.zeros_like(t)
    if law == "geometric" and (t != np.floor(t)).any():
        raise ValueError(
            "law='geometric' needs integer steps (and start); use "
            "law='exponential' for continuous times"
        )
    budget = None
    if max_steps is not None:
        budget = np.broadcast_to(np.asarray(max_steps, dtype=np.float64), t.shape) - s
        bad = (budget < t) | (c & (budget != t))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"max_steps must be >= steps, and == steps for a censored chain; got "
                f"max_steps={budget[i] + s[i]!r}, steps={raw[i]!r}, "
                f"censored={bool(c[i])} (chain {i})"
            )
    elif c.any() and np.unique(raw[c]).size == 1 and (raw[~c] <= raw[c][0]).all():
        budget = raw[c][0] - s  # one common budget: every chain had it (no escape after it)
    elif not c.any():
        budget = np.full(t.shape, np.inf)  # nothing censored, no budget given: none assumed
    gone = np.zeros(t.shape, dtype=bool)
    if absorbed is not None:
        gone = np.asarray(absorbed)
        if gone.shape != t.shape or gone.dtype != bool:
            raise ValueError(
                f"absorbed must be a boolean array of the shape of steps {t.shape}, got "
                f"{gone.dtype} of shape {gone.shape}"
            )
        if (gone & c).any():
            raise ValueError(f"chain {int(np.flatnonzero(gone & c)[0])} is censored and absorbed")
        if gone.any():
            warnings.warn(
                f"{int(gone.sum())} of {t.size} chains were absorbed (their event out of "
                "reach): they are excluded, so this is the escape law conditional on not "
                "being absorbed; metastab.stats.absorption gives the absorption probability",
                AbsorptionWarning,
                stacklevel=3,
            )
    zero = ~c & ~gone & (t == 0)
    keep = ~zero & ~gone
    if zero.any():
        warnings.warn(
            f"{int(zero.sum())} of {t.size} chains met the event at time 0 (it held "
            "when the clock started): they are not escapes and are excluded",
            DiagnosticWarning,
            stacklevel=3,
        )
    if not keep.all():
        t, c = t[keep], c[keep]
        budget = None if budget is None else budget[keep]
        if t.size == 0:
            raise ValueError(
                "no chain is left once the events at time 0 and the absorbed chains are excluded"
            )
    return CensoredSample(time=t, event=~c, budget=budget, kept=keep)


def fit_rate(
    time: np.ndarray, event: np.ndarray, law: str, shift: bool
) -> tuple[float, float, int, int, float]:
    """(rate, shift, at_risk at the shift, events d, exposure E) by maximum likelihood; the
    shift s = first escape (− 1 for the geometric law) when ``shift``, else 0."""
    s, at_risk = 0.0, 0
    if shift:
        if not event.any():
            raise ValueError("shift=True needs at least one event, got 0")
        s = float(time[event].min()) - (1.0 if law == "geometric" else 0.0)
        at_risk = int((time > s).sum())
    d = int(event.sum())
    E = float(np.maximum(time - s, 0.0).sum())
    return (d / E if E > 0 else math.nan), s, at_risk, d, E


def product_limit(
    time: np.ndarray, event: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Kaplan–Meier at the distinct event times u_j: (u_j, S(u_j) = Π_{i<=j} (1 − d_i / n_i),
    at-risk n_j, events d_j).

    Censored at t counts as at risk at t (events come first). Plain NumPy: used by the
    bootstrap, and checked against ``scipy.stats.ecdf`` in the tests.
    """
    u, d = np.unique(time[event], return_counts=True)
    at_risk = time.size - np.searchsorted(np.sort(time), u, side="left")
    return u, np.cumprod(1.0 - d / at_risk), at_risk, d


@dataclass(frozen=True)
class Absorption:
    """The probability that a chain is absorbed within its step budget, with its exact interval.

    The interval is Clopper–Pearson's at ``confidence_level``; made by :func:`absorption`.

    Attributes
    ----------
    absorbed : int
        The number of absorbed chains.
    chains : int
        The number of chains.
    probability : float
        absorbed / chains.
    low, high : float
        The Clopper–Pearson interval for the probability.
    confidence_level : float
        The interval's level.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from metastab.stats import absorption
    >>> absorption(pd.DataFrame({"absorbed": np.arange(100) < 5}))
    Absorption(absorbed=5, chains=100, probability=0.05, 95% [0.01643, 0.1128])
    """

    absorbed: int
    chains: int
    probability: float
    low: float
    high: float
    confidence_level: float

    def __repr__(self) -> str:
        level = f"{100 * self.confidence_level:g}%"
        return (
            f"Absorption(absorbed={self.absorbed}, chains={self.chains}, "
            f"probability={self.probability:.4g}, {level} [{self.low:.4g}, {self.high:.4g}])"
        )


def absorption(result: Any, *, confidence_level: float = 0.95) -> Absorption:
    """The probability that a chain is absorbed within its budget, with its exact interval.

    absorbed / chains is a binomial proportion (the fate of every chain within its budget is
    known: it met the event, was absorbed, or is censored and could still meet it); its
    interval is Clopper–Pearson's.

    Parameters
    ----------
    result : FirstPassage or pandas.DataFrame
        The chains: a FirstPassage, or a frame with an ``absorbed`` column of bools.
    confidence_level : float, optional
        The interval's level, in (0, 1) (default 0.95).

    Returns
    -------
    absorption : Absorption
        The counts, the probability and its interval.

    Raises
    ------
    ValueError
        When ``result`` holds no absorbed flags or no chain.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from metastab.stats import absorption
    >>> a = absorption(pd.DataFrame({"absorbed": np.arange(100) < 5}))
    >>> a.probability, round(a.low, 4), round(a.high, 4)
    (0.05, 0.0164, 0.1128)
    """
    from scipy.stats import binomtest

    from .intervals import check_level

    level = check_level(confidence_level)
    flags = _absorbed_of(result)
    if flags is None:
        raise ValueError(
            f"absorption needs a FirstPassage or a frame with an 'absorbed' column, got "
            f"{type(result).__name__}"
        )
    if flags.size == 0:
        raise ValueError("absorption needs at least one chain")
    k, n = int(flags.sum()), int(flags.size)
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return Absorption(k, n, k / n, float(ci.low), float(ci.high), level)
