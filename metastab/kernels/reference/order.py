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
    """m_1 = ‖(1/n) Σ_i x_i‖: the coordinates' means c_k (tokens ascending), then √(Σ_k c_k²)."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    total = 0.0
    for k in range(d):
        acc = 0.0
        for i in range(n):
            acc += xs[i][k]
        c = acc / n
        total += c * c
    return math.sqrt(total)


def quadrupole(x) -> float:
    """m_2 = ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F / √((d − 1)/d): the entries Q_kl for l >= k (the
    off-diagonal ones counted twice), row by row, then the normalisation."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    total = 0.0
    for k in range(d):
        row = 0.0
        for m in range(k, d):
            s = 0.0
            for i in range(n):
                s += xs[i][k] * xs[i][m]
            q = s / n
            if m == k:
                q -= 1.0 / d
            sq = q * q
            row += sq if m == k else sq + sq
        total += row
    return math.sqrt(total / ((d - 1.0) / d))


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
