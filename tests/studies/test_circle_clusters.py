"""The circle's cluster decomposition of the staircase and meanfield-clusters studies
(metastab.studies.circle), against a brute-force union-find of the δ-graph."""

import math

import numpy as np
import pytest

from metastab.studies import circle


def _components(x, delta):
    """Sizes of the connected components of cos(x_i, x_j) >= 1 − δ, by depth-first search."""
    linked = x @ x.T >= 1 - delta
    label = -np.ones(len(x), int)
    sizes = []
    for i in range(len(x)):
        if label[i] < 0:
            stack, label[i], size = [i], len(sizes), 0
            while stack:
                j = stack.pop()
                size += 1
                for m in np.flatnonzero(linked[j] & (label < 0)):
                    label[m] = len(sizes)
                    stack.append(m)
            sizes.append(size)
    return sorted(sizes)


@pytest.mark.parametrize("seed", range(40))
def test_decomposition_is_the_delta_graph(seed):
    gen = np.random.default_rng(seed)
    n = int(gen.integers(2, 40))
    theta = gen.uniform(0, 2 * math.pi, n)
    theta[: n // 2] = gen.uniform(-0.1, 0.1, n // 2)  # a crowded arc across θ = 0
    x = circle.on_circle(theta)
    centres, sizes = circle.circle_clusters(x, 1e-3)
    assert sorted(sizes) == _components(x, 1e-3)
    assert np.all(np.diff(np.mod(centres, 2 * math.pi)) != 0)


def test_centres_and_closest_pair():
    x = circle.on_circle(np.array([0.0, 0.01, 0.02, 1.0, 1.01, 3.0, 6.27]))
    centres, sizes = circle.circle_clusters(x, 1e-3)
    assert list(sizes) == [4, 2, 1]  # 6.27 ≡ −0.013 joins the cluster at 0
    sep, ma, mb = circle.closest_pair(centres, sizes)
    assert (ma, mb) == (4, 2) and sep == pytest.approx(1.005 - centres[0], abs=1e-12)
    two = circle.circle_clusters(circle.on_circle(np.array([0.0, 3.5])), 1e-3)
    assert circle.closest_pair(*two)[0] == pytest.approx(2 * math.pi - 3.5)
    assert math.isnan(circle.closest_pair(np.array([0.0]), np.array([3]))[0])
