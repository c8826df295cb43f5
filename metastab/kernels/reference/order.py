"""Slow, plain-Python twins of the order parameters m_1, m_2 (:mod:`metastab.kernels.order`) and
of the events LEAVE_UNIFORM_* / REACH_UNIFORM_* on them: the same scalar operations in the same
order (Python floats, left-to-right sums, libm's sqrt), so that the kernels agree bit for bit.
"""

from __future__ import annotations

import math

import numpy as np


def _rows(x) -> list[list[float]]:
    return [[float(v) for v in row] for row in np.asarray(x)]


def magnetisation(x) -> float:
    """m_1 = ‖(1/n) Σ_i x_i‖ as √(Σ_k s_k²) / n, s_k = Σ_i x_ik (tokens ascending)."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    total = 0.0
    for k in range(d):
        s = 0.0
        for i in range(n):
            s += xs[i][k]
        total += s * s
    return math.sqrt(total) / n


def quadrupole(x) -> float:
    """m_2 = ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F / √((d − 1)/d) as √(Σ_{k, l} (S_kl − δ_kl n/d)² /
    (n² (d − 1)/d)), S = Σ_i x_i x_iᵀ: the entries l >= k (the off-diagonal ones counted twice),
    row by row."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    shift = n / d
    total = 0.0
    for k in range(d):
        row = 0.0
        for m in range(k, d):
            s = 0.0
            for i in range(n):
                s += xs[i][k] * xs[i][m]
            if m == k:
                s -= shift
            sq = s * s
            row += sq if m == k else sq + sq
        total += row
    return math.sqrt(total / (float(n) * float(n) * ((d - 1.0) / d)))


def order_parameter(x, degree: int) -> float:
    """m_1 or m_2 of the configuration x (n×d)."""
    if degree == 1:
        return magnetisation(x)
    if degree == 2:
        return quadrupole(x)
    raise ValueError(f"degree must be 1 or 2, got {degree!r}")


def uniform_predicate(event):
    """x -> bool for a LeaveUniform (m_degree >= level) or ReachUniform (m_degree <= level),
    from its documented meaning."""
    level, degree = float(event.level), int(event.degree)
    if event.kind == "leave-uniform":
        return lambda x: order_parameter(x, degree) >= level
    if event.kind == "reach-uniform":
        return lambda x: order_parameter(x, degree) <= level
    raise ValueError(f"not an order-parameter event: {event.kind!r}")
