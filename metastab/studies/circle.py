"""Clusters of tokens on the circle (d = 2), shared by the studies of the circle (staircase,
meanfield-clusters): angles to points, the clusters of a configuration and the closest pair of
clusters (docs: models#sphere-statements).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["on_circle", "circle_clusters", "closest_pair"]


def on_circle(theta: np.ndarray) -> np.ndarray:
    """Unit vectors (cos θ, sin θ), shape theta.shape + (2,).

    >>> on_circle(np.array([0.0, math.pi / 2])).round(12).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def circle_clusters(x: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The clusters of a configuration on the circle (n×2): their circular-mean angles and
    sizes, in angular order.

    On the circle the components of the graph cos(θ_i − θ_j) >= 1 − δ are the arcs between the
    gaps wider than arccos(1 − δ) of the sorted angles (none or one such gap: one cluster).
    """
    theta = np.sort(np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * math.pi))
    gaps = np.diff(np.append(theta, theta[0] + 2 * math.pi))
    wide = np.flatnonzero(gaps > math.acos(1.0 - delta))
    if wide.size <= 1:
        groups = [np.roll(theta, -(wide[0] + 1) if wide.size else 0)]
    else:
        cut = np.roll(theta, -(wide[-1] + 1))  # start right after the last wide gap
        bounds = np.sort((wide - wide[-1] - 1) % theta.size)[:-1] + 1
        groups = np.split(cut, bounds)
    centres = np.array([math.atan2(np.sin(g).sum(), np.cos(g).sum()) for g in groups])
    return centres, np.array([g.size for g in groups])


def closest_pair(centres: np.ndarray, sizes: np.ndarray) -> tuple[float, int, int]:
    """The smallest angle between two clusters adjacent on the circle and their sizes."""
    k = centres.size
    if k < 2:
        return math.nan, 0, 0
    diff = np.abs(np.angle(np.exp(1j * (np.roll(centres, -1) - centres))))
    if k == 2:
        diff = diff[:1]
    a = int(np.argmin(diff))
    return float(diff[a]), int(sizes[a]), int(sizes[(a + 1) % k])
