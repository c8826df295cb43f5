"""A plain summary of one first-passage run: counts, median escape, exposure mean."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["escape_summary"]


def escape_summary(fp: Any) -> dict[str, Any]:
    """Chains, escapes, absorbed, censored, median escape step among escapes, exposure mean.

    ``mean_escape`` = Σ_c steps_c / #escapes over the chains not absorbed (censored MLE of a
    geometric mean, as :func:`~metastab.stats.escape_rate`'s ``mean``, which also leaves the
    absorbed chains out); NaN, never a guess, when no chain escaped.

    Parameters
    ----------
    fp : FirstPassage
        Anything with ``chains``, ``times``, ``censored`` and ``absorbed``.

    Returns
    -------
    summary : dict
        Keys chains, escapes, absorbed, censored, median_escape, mean_escape.

    Examples
    --------
    >>> import metastab as ms
    >>> from metastab.stats import escape_summary
    >>> fp = ms.first_passage(ms.SoftmaxChain(2.0, 0.5), ms.regular_polygon(5).vertices,
    ...                       ms.LeaveBall(0.1), max_steps=100, chains=8, rng=0)
    >>> sorted(escape_summary(fp))
    ['absorbed', 'censored', 'chains', 'escapes', 'mean_escape', 'median_escape']
    """
    live = ~fp.absorbed
    escaped = fp.times[live & ~fp.censored]
    escapes = int(escaped.size)
    return {
        "chains": fp.chains,
        "escapes": escapes,
        "absorbed": int(fp.absorbed.sum()),
        "censored": int(fp.censored.sum()),
        "median_escape": float(np.median(escaped)) if escapes else math.nan,
        "mean_escape": float(fp.times[live].sum()) / escapes if escapes else math.nan,
    }
