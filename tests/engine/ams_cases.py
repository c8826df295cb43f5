"""Validation cases for the AMS core: small chains with known answers and fast NumPy steppers.

- :class:`GaussianChain`: X' = m(X) + s ξ in R^dim (the exactly sampled Ornstein-Uhlenbeck
  process is the AR(1) chain m(x) = ρ x), A = {x_0 <= a}, B = {x_0 >= b}; the truth by
  :func:`gaussian_committor` (Nyström quadrature of the committor's integral equation).
- :class:`BirthDeath`: a lazy Ehrenfest chain on {0..M} (the lattice Ornstein-Uhlenbeck), whose
  score, the position, has atoms; the truth by the gambler's-ruin sum :func:`ehrenfest_committor`.

The steppers draw from counter-based streams: the noise of step t of the replica with stream id
(key0, key1, slot) is a hash of (key0, key1, slot, t), so a replica's path depends on its id only,
whatever the batch it runs in.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from metastab.engine.ams import BUDGET, FAILED, REACHED, Segment

_U = np.uint64
_GOLDEN = _U(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's output function on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


def stream_base(ids: np.ndarray) -> np.ndarray:
    """One uint64 per stream id (K, 3)."""
    with np.errstate(over="ignore"):
        return _mix(ids[:, 0] ^ _mix(ids[:, 1] + _mix(ids[:, 2] + _GOLDEN)))


def uniforms(base: np.ndarray, counter: np.ndarray) -> np.ndarray:
    """U(0, 1) (open) of the streams ``base`` at ``counter`` (uint64 arrays)."""
    with np.errstate(over="ignore"):
        z = _mix(base + (counter + _U(1)) * _GOLDEN)
    return ((z >> _U(11)).astype(float) + 0.5) * 2.0**-53


class GaussianChain:
    """X' = drift(X) + s ξ, ξ standard normal in R^dim; A = {x_0 <= a}, B = {x_0 >= b}.

    ``score(X)`` (default x_0) is the importance function, +inf in B. ``horizon``: paths that
    reach it without meeting B fail (P[τ_B <= horizon, τ_B < τ_A]); ``budget``: a safety stop
    reported as BUDGET.
    """

    def __init__(self, drift, s, a, b, *, dim=1, score=None, horizon=math.inf, budget=10**6):
        self.drift, self.s, self.a, self.b, self.dim = drift, s, a, b, dim
        self.xi = score if score is not None else (lambda X: X[:, 0].copy())
        self.horizon, self.budget = horizon, budget
        self.steps = 0  # steps taken by all replicas (a cost measure)

    def score(self, states: np.ndarray) -> np.ndarray:
        X = states.reshape(-1, self.dim)
        xi = np.asarray(self.xi(X), dtype=float)
        return np.where(X[:, 0] >= self.b, np.inf, xi)

    def _noise(self, base, t):
        c = (t.astype(np.uint64) * _U(self.dim))[:, None] + np.arange(self.dim, dtype=np.uint64)
        return special.ndtri(uniforms(base[:, None], c))

    def advance(self, states, clocks, levels, streams):
        K = states.shape[0]
        X = states.reshape(K, self.dim).astype(float).copy()
        t = clocks.astype(np.int64).copy()
        lev = levels.astype(float).copy()
        base = stream_base(streams)
        status = np.full(K, FAILED)
        recs: list[list] = [[] for _ in range(K)]
        idx = np.flatnonzero(t < self.horizon)  # a path at the horizon takes no step
        while idx.size:
            Xi = self.drift(X[idx]) + self.s * self._noise(base[idx], t[idx])
            X[idx] = Xi
            t[idx] += 1
            self.steps += idx.size
            xi = self.score(Xi)
            new = np.flatnonzero(xi > lev[idx])
            for q in new.tolist():
                c = idx[q]
                recs[c].append((xi[q], t[c], Xi[q].copy()))
            lev[idx[new]] = xi[new]
            hit = np.isinf(xi)
            status[idx[hit]] = REACHED
            over = ~hit & (t[idx] >= self.budget)
            status[idx[over]] = BUDGET
            stop = hit | over | (Xi[:, 0] <= self.a) | (t[idx] >= self.horizon)
            idx = idx[~stop]
        return [_segment(recs[c], status[c], t[c], (self.dim,)) for c in range(K)]


class BirthDeath:
    """The lazy Ehrenfest chain on {0..M}: up with probability (M − k)/(2M), down with k/(2M);
    A = {k <= a}, B = {k >= b}, score k (atoms at every integer)."""

    def __init__(self, M: int, a: int, b: int):
        self.M, self.a, self.b = M, a, b

    def score(self, states: np.ndarray) -> np.ndarray:
        k = states.reshape(-1).astype(float)
        return np.where(k >= self.b, np.inf, k)

    def advance(self, states, clocks, levels, streams):
        K = states.shape[0]
        k = states.reshape(K).astype(float).copy()
        t = clocks.astype(np.int64).copy()
        lev = levels.astype(float).copy()
        base = stream_base(streams)
        status = np.full(K, FAILED)
        recs: list[list] = [[] for _ in range(K)]
        idx = np.arange(K)
        while idx.size:
            u = uniforms(base[idx], t[idx].astype(np.uint64))
            ki = k[idx]
            p_up = (self.M - ki) / (2 * self.M)
            up = u < p_up
            down = (u >= p_up) & (u < p_up + ki / (2 * self.M))  # p_up + p_down = 1/2
            ki = ki + up - down
            k[idx] = ki
            t[idx] += 1
            xi = self.score(ki)
            new = np.flatnonzero(xi > lev[idx])
            for q in new.tolist():
                c = idx[q]
                recs[c].append((xi[q], t[c], np.array([ki[q]])))
            lev[idx[new]] = xi[new]
            hit = np.isinf(xi)
            status[idx[hit]] = REACHED
            stop = hit | (ki <= self.a)
            idx = idx[~stop]
        return [_segment(recs[c], status[c], t[c], (1,)) for c in range(K)]


def _segment(recs, status, clock, shape) -> Segment:
    if recs:
        lv, tm, st = zip(*recs)
        return Segment(np.array(lv), np.array(tm, float), np.stack(st), int(status), float(clock))
    return Segment(np.empty(0), np.empty(0), np.empty((0,) + shape), int(status), float(clock))


def ehrenfest_committor(M: int, a: int, b: int, x: int) -> float:
    """P_x[τ_b < τ_a] for the chain of :class:`BirthDeath` (a < x < b): the gambler's-ruin sum
    Σ_{j=a}^{x−1} π_j / Σ_{j=a}^{b−1} π_j, π_j = Π_{i=a+1}^{j} (down_i / up_i), in log space."""
    logs = [0.0]
    for i in range(a + 1, b):
        logs.append(logs[-1] + math.log(i / (M - i)))
    top = special.logsumexp(logs[: x - a])
    return float(math.exp(top - special.logsumexp(logs)))


def gaussian_committor(mean, s: float, a: float, b: float, x0: float, *, panels: int = 200):
    """P_x0[τ_B < τ_A] for the 1-D chain X' = mean(X) + s ξ, A = (−inf, a], B = [b, inf).

    The committor solves h(x) = Φ̄((b − m(x))/s) + ∫_a^b φ_s(y − m(x)) h(y) dy on (a, b). Nyström
    on ``panels`` Gauss-Legendre panels of 8 nodes, solved by the fixed-point iteration from 0:
    every term is positive, so there is no cancellation and the tiny values keep their relative
    accuracy (a linear solve would give them only an absolute one).
    """
    g8, w8 = np.polynomial.legendre.leggauss(8)
    edges = np.linspace(a, b, panels + 1)
    half = np.diff(edges)[:, None] / 2
    y = ((edges[:-1, None] + edges[1:, None]) / 2 + half * g8).ravel()
    w = (half * w8).ravel()

    def kernel(x):
        m = mean(np.atleast_1d(x))[:, None]
        return w * np.exp(-0.5 * ((y - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))

    def jump(x):
        return special.ndtr((mean(np.atleast_1d(x)) - b) / s)

    W = kernel(y)
    g = jump(y)
    h = g.copy()
    for _ in range(100_000):
        new = g + W @ h
        if np.all(np.abs(new - h) <= 1e-15 * new):
            h = new
            break
        h = new
    else:
        raise RuntimeError("the committor iteration did not converge")
    return float((jump(x0) + kernel(x0) @ h)[0])
