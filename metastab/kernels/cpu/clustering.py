"""Cluster observables of one configuration, as numba kernels: clustered pairs, the number of
clusters, the energy E_β (docs: models#observables).

Tokens i and j form a *clustered pair* when their cosine <x_i, x_j> / (|x_i| |x_j|) is at least
1 − δ; on the unit sphere that is <x_i, x_j> >= 1 − δ (GLPR Fig. 3), and for tokens in R^d it
compares directions only. A token at the origin has no direction: it is in no clustered pair.
The *clusters* are the connected components of the graph of clustered pairs.

Arithmetic is explicit loops in a fixed order (no fastmath), so that
:mod:`metastab.kernels.reference.clustering` repeats it bit for bit.
"""

import math

import numpy as np
from numba import prange

from ..cache import njit_keyed
from ..params import JIT, JIT_NO_NRT

# cached only while the kernel files it uses are unchanged (see cache)
_jit = njit_keyed()

# Columns of the rows that :func:`observe` writes.
OBSERVABLES = ("clusters", "pair_fraction", "cos12", "mean_cos", "log_energy", "energy")


@_jit(**JIT_NO_NRT)
def _norms(x, norms):
    """norms[i] = |x_i| (sum of squares left to right, then sqrt)."""
    n, d = x.shape
    for i in range(n):
        acc = 0.0
        for k in range(d):
            acc += x[i, k] * x[i, k]
        norms[i] = math.sqrt(acc)


@_jit(**JIT_NO_NRT)
def _dot(x, i, j):
    """<x_i, x_j>, summed left to right."""
    acc = 0.0
    for k in range(x.shape[1]):
        acc += x[i, k] * x[j, k]
    return acc


@_jit(**JIT_NO_NRT)
def _cosine(x, i, j, norms):
    """<x_i, x_j> / (|x_i| |x_j|); NaN when either token is at the origin (never clustered)."""
    den = norms[i] * norms[j]
    if den == 0.0:
        return np.nan
    return _dot(x, i, j) / den


@_jit(**JIT_NO_NRT)
def _root(parent, i):
    """The root of i in the union-find forest ``parent`` (path halving)."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@_jit(**JIT)
def cluster_count(x, threshold):
    """Number of connected components of the graph {(i, j) : cos(x_i, x_j) >= threshold}
    (threshold = 1 − δ), by union-find; a pair already in one component is not compared."""
    n = x.shape[0]
    norms = np.empty(n)
    _norms(x, norms)
    parent = np.arange(n)
    count = n
    for i in range(n):
        for j in range(i + 1, n):
            ri = _root(parent, i)
            rj = _root(parent, j)
            if ri != rj and _cosine(x, i, j, norms) >= threshold:
                parent[max(ri, rj)] = min(ri, rj)
                count -= 1
    return count


@_jit(**JIT_NO_NRT)
def record_levels(levels, m, t):
    """The count is m at time t: levels[k - 1] (the first time the count was at most k) is set to
    t for every k >= m not set yet (NaN). Levels are set from the top down, so the first one
    found set ends the loop."""
    for k in range(m - 1, levels.shape[0]):
        if not np.isnan(levels[k]):
            return
        levels[k] = t


@_jit(**JIT)
def observe_one(x, threshold, beta, out):
    """The row of :data:`OBSERVABLES` of one configuration x (n >= 2 tokens) into ``out``.

    clusters: :func:`cluster_count`; pair_fraction: the fraction of the n(n−1)/2 pairs i < j that
    are clustered; cos12: the cosine of tokens 1 and 2 (indices 0 and 1: the phase-diagram pair of
    GLPR Fig. 3); mean_cos: the mean cosine over pairs i < j; log_energy and energy: E_β =
    (1 / (2β n²)) Σ_{i,j} e^{β <x_i, x_j>} (docs: models#models-sphere; raw inner products, all
    ordered pairs), max-shifted so that log E_β is finite at any β > 0 (energy may overflow to inf;
    both are NaN for β = 0 or β = inf).
    """
    n = x.shape[0]
    norms = np.empty(n)
    _norms(x, norms)
    clustered = 0
    total_cos = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            c = _cosine(x, i, j, norms)
            total_cos += c
            if c >= threshold:
                clustered += 1
    pairs = n * (n - 1) // 2
    out[0] = cluster_count(x, threshold)
    out[1] = clustered / pairs
    out[2] = _cosine(x, 0, 1, norms)
    out[3] = total_cos / pairs
    if beta > 0.0 and beta < np.inf:
        top = -np.inf
        for i in range(n):
            for j in range(n):
                top = max(top, beta * _dot(x, i, j))
        acc = 0.0
        for i in range(n):
            for j in range(n):
                acc += math.exp(beta * _dot(x, i, j) - top)
        out[4] = top + math.log(acc) - math.log(2.0 * beta * n * n)
        out[5] = math.exp(out[4])
    else:
        out[4] = np.nan
        out[5] = np.nan


@_jit(parallel=True, **JIT)
def observe(X, threshold, beta, out):
    """out[c] = the :data:`OBSERVABLES` row of configuration X[c] (:func:`observe_one`), for
    every chain c in parallel."""
    for c in prange(X.shape[0]):
        observe_one(X[c], threshold, beta, out[c])
