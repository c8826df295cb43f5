"""Rényi centres of a sequence of tokens (Karagodin, Polyanskiy, Rigollet, *Clustering in causal
attention masking*, arXiv 2411.04990, §5 and Fig. 2), shared by the studies of causal attention.

Under causal masking token k attends to the tokens j ≤ k only, so a token that starts far from
every earlier token feels almost no pull: it is a candidate centre of a metastable cluster. With
a separation δ, and tokens taken in their order:

- token k is a **strong Rényi centre** if |x_k − x_j| ≥ δ for every j < k (token 1 always is);
- token k is a **Rényi centre** if |x_k − x_c| ≥ δ for every earlier Rényi centre c: the greedy
  (random sequential) parking of caps of radius δ, so every strong centre is a Rényi centre.

This package's reading of the paper's definitions: the separation is the Euclidean distance
between the unit vectors (on the circle the chord, 2 sin(φ/2) for an angle φ), and "≥" keeps a
tie as separated.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["renyi_centres", "expected_strong_centres"]


def renyi_centres(x: np.ndarray, delta: float, *, strong: bool = False) -> np.ndarray:
    """The indices (in token order) of the Rényi centres of the tokens ``x`` (n×d, unit rows)
    at separation ``delta``; with ``strong``, of the strong Rényi centres.

    >>> x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]])
    >>> renyi_centres(x, 1.0).tolist(), renyi_centres(x, 1.0, strong=True).tolist()
    ([0, 1, 3], [0, 1, 3])
    >>> y = np.array([[1.0, 0.0], [0.8, 0.6], [0.28, 0.96]])  # 1 ~ 0 and 2 ~ 1, 2 far from 0
    >>> renyi_centres(y, 0.8).tolist(), renyi_centres(y, 0.8, strong=True).tolist()
    ([0, 2], [0])
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"x must be a non-empty n×d array, got shape {x.shape}")
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta!r}")
    # |x_k − x_j| ≥ δ  ⇔  <x_k, x_j> ≤ 1 − δ²/2 for unit vectors (the Gram matrix avoids n² norms)
    far = x @ x.T <= 1.0 - delta * delta / 2.0
    if strong:
        below = np.tril(np.ones(far.shape, dtype=bool), k=-1)
        return np.flatnonzero((far | ~below).all(axis=1))
    centres: list[int] = []
    for k in range(x.shape[0]):
        if all(far[k, c] for c in centres):
            centres.append(k)
    return np.array(centres, dtype=np.int64)


def expected_strong_centres(n: int, delta: float) -> float:
    """The expected number of strong Rényi centres of n i.i.d. uniform tokens on the circle.

    Token k is a strong centre iff none of the k − 1 earlier tokens falls in the arc of
    half-angle φ = 2 arcsin(δ/2) around it, an event of probability (1 − q)^{k−1} with
    q = φ/π, so the mean is Σ_{k=1}^n (1 − q)^{k−1} = (1 − (1 − q)^n)/q (→ π/φ ≈ π/δ as n → ∞:
    the count grows like β^{1/2} at δ ∝ β^{−1/2}).

    >>> round(expected_strong_centres(200, 0.5), 4)
    6.2165
    >>> expected_strong_centres(5, 3.0)  # no token lies farther than the chord 2 from another
    1.0
    """
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta!r}")
    if delta >= 2.0:
        return 1.0
    q = 2.0 * math.asin(delta / 2.0) / math.pi
    return float((1.0 - (1.0 - q) ** n) / q)
