"""Slow, obviously correct versions of the cluster kernels (:mod:`metastab._clusters`), for tests.

The cosines repeat the kernels' arithmetic one scalar operation at a time, in the same order
(sums left to right, Python floats, libm's sqrt, exp and log), so the numbers agree bit for bit;
the clusters are found independently, as the connected components of the whole clustered-pair
graph (``scipy.sparse.csgraph``), not by union-find.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse.csgraph import connected_components


def _dot(a, b) -> float:
    acc = 0.0
    for p, q in zip(a, b):
        acc += p * q
    return acc


def cosines(x) -> np.ndarray:
    """The n×n matrix of cos(x_i, x_j) = <x_i, x_j> / (|x_i| |x_j|) (NaN for a token at 0)."""
    rows = [[float(v) for v in row] for row in np.asarray(x)]
    norms = [math.sqrt(_dot(r, r)) for r in rows]
    n = len(rows)
    out = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            den = norms[i] * norms[j]
            if den != 0.0:
                out[i, j] = _dot(rows[i], rows[j]) / den
    return out


def clustered(x, delta: float) -> np.ndarray:
    """The adjacency matrix of clustered pairs cos(x_i, x_j) >= 1 − δ, i != j
    (docs: models#models-sphere)."""
    adj = cosines(x) >= 1.0 - delta
    np.fill_diagonal(adj, False)
    return adj


def cluster_count(x, delta: float) -> int:
    """The number of connected components of the clustered-pair graph."""
    return int(connected_components(clustered(x, delta), directed=False)[0])


def energy(x, beta: float) -> tuple[float, float]:
    """(log E_β, E_β) with E_β = (1 / (2β n²)) Σ_{i,j} e^{β <x_i, x_j>}, max-shifted."""
    rows = [[float(v) for v in row] for row in np.asarray(x)]
    n = len(rows)
    if not (beta > 0.0 and beta < math.inf):
        return math.nan, math.nan
    z = [beta * _dot(rows[i], rows[j]) for i in range(n) for j in range(n)]
    top = max(z)
    acc = 0.0
    for v in z:
        acc += math.exp(v - top)
    log_e = top + math.log(acc) - math.log(2.0 * beta * n * n)
    try:
        return log_e, math.exp(log_e)
    except OverflowError:
        return log_e, math.inf


def observe(x, delta: float, beta: float) -> list[float]:
    """The row (clusters, pair_fraction, cos12, mean_cos, log_energy, energy) of x."""
    cos = cosines(x)
    n = cos.shape[0]
    upper = [cos[i, j] for i in range(n) for j in range(i + 1, n)]
    total = 0.0
    for c in upper:
        total += c
    pairs = n * (n - 1) // 2
    hits = sum(1 for c in upper if c >= 1.0 - delta)
    return [
        float(cluster_count(x, delta)),
        hits / pairs,
        cos[0, 1],
        total / pairs,
        *energy(x, beta),
    ]


def levels(counts, n: int) -> np.ndarray:
    """levels[k - 1] = the first index t with counts[t] <= k (NaN if none), k = 1..n, from the
    path of cluster counts of n tokens."""
    counts = np.asarray(counts)
    out = np.full(n, np.nan)
    for k in range(1, n + 1):
        hit = np.flatnonzero(counts <= k)
        if hit.size:
            out[k - 1] = hit[0]
    return out
