"""Goodness-of-fit p-values shared by the statistical tests of several layers."""

import numpy as np
from scipy import stats


def geometric_p(steps: np.ndarray, p: float) -> float:
    """Chi-square p-value of a sample on {1, 2, ...} against Geometric(p) (bins expect >= 5)."""
    N = steps.size
    kmax = 1
    while N * p * (1 - p) ** kmax >= 5 and N * (1 - p) ** (kmax + 1) >= 5:
        kmax += 1
    probs = np.append(p * (1 - p) ** np.arange(kmax), (1 - p) ** kmax)
    counts = np.bincount(np.minimum(steps.astype(np.int64), kmax + 1), minlength=kmax + 2)[1:]
    return float(stats.chisquare(counts, f_exp=N * probs).pvalue)
