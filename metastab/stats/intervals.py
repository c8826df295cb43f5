"""Interval helpers shared by every result of :mod:`metastab.stats`.

Every result object follows one protocol: its point estimates are properties, and
``confidence_interval(confidence_level=None, *, method=...)`` returns a
:class:`ConfidenceInterval` ``(low, high)`` (``None``: the level the result was made with, 0.95
by default; results made without a level, as those of :mod:`metastab.engine.ams_chains`, default
to 0.95); results with several parameters take the parameter's name first. ``to_frame()`` gives
the result as a table.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._validate import real

__all__ = ["ConfidenceInterval", "check_level", "garwood_interval"]


class ConfidenceInterval(NamedTuple):
    """``(low, high)`` of a confidence interval: floats, or arrays for a pointwise band.

    A tuple, so ``low, high = result.confidence_interval()`` works.

    Parameters
    ----------
    low, high : float or ndarray
        The interval's bounds.

    Examples
    --------
    >>> from metastab.stats import ConfidenceInterval
    >>> low, high = ConfidenceInterval(0.1, 0.3)
    >>> ConfidenceInterval(0.1, 0.3).high, low
    (0.3, 0.1)
    """

    low: Any
    high: Any


def check_level(confidence_level: float) -> float:
    """Validate a confidence level in the open interval (0, 1)."""
    return real("confidence_level", confidence_level, low=0, high=1, low_open=True, high_open=True)


def garwood_interval(
    events: int, exposure: float, confidence_level: float = 0.95
) -> ConfidenceInterval:
    """Garwood's exact interval for a Poisson rate: ``events`` in ``exposure``.

    [χ²_{α/2}(2d), χ²_{1−α/2}(2d + 2)] / (2E) with α = 1 − level (docs: models#statements-fw: the
    exponential escape law; also the geometric law's exact interval in the limit of tiny rates).

    Parameters
    ----------
    events : int
        The number of events d, >= 0.
    exposure : float
        The exposure E (the summed observation time), > 0.
    confidence_level : float, optional
        The level, in (0, 1) (default 0.95).

    Returns
    -------
    interval : ConfidenceInterval
        ``(low, high)`` for the rate; low is 0 when there are no events.

    Examples
    --------
    >>> from metastab.stats import garwood_interval
    >>> [round(float(v), 4) for v in garwood_interval(3, 31.0)]
    [0.02, 0.2828]
    """
    from scipy import stats  # scipy is imported where used: see the package notes

    alpha = 1 - check_level(confidence_level)
    return ConfidenceInterval(
        stats.chi2.ppf(alpha / 2, 2 * events) / (2 * exposure),
        stats.chi2.ppf(1 - alpha / 2, 2 * events + 2) / (2 * exposure),
    )
