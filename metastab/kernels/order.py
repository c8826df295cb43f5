"""The sphere models' order parameters as leaves, each written once over its arithmetic and
compiled per target (as :mod:`.leaves`): :mod:`.cpu.order` with ``numba.njit`` over
``arith.mul``, :mod:`.cuda.events` with ``cuda.jit(device=True)`` over ``cuda.arith.mul``.

The order parameters are the amplitudes of the first spherical harmonics of the empirical measure
μ_n = (1/n) Σ_i δ_{x_i} of n tokens on S^{d−1} (docs: models#order-parameters):

- degree 1, the magnetisation m_1 = ‖(1/n) Σ_i x_i‖;
- degree 2, m_2 = ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F / √((d − 1)/d), normalised so that a single cluster
  (all x_i equal) gives 1.

Both are 0 at the uniform measure and O(n^{−1/2}) for n i.i.d. uniform tokens; m_1 = 1 exactly
at one cluster, m_2 = 1 at one cluster and at an antipodal pair of clusters.

The sums have one fixed order, whatever the target and the threads: m_1² = Σ_k c_k², c_k the
mean of coordinate k (tokens ascending); ‖Q‖_F² = Σ_k r_k with the row sums
r_k = Σ_{l >= k} w_kl Q_kl² (l ascending; w 1 on the diagonal, 2 off it: Q is symmetric) of
Q_kl = (1/n) Σ_i x_ik x_il − δ_kl/d (tokens ascending), rows k ascending. A device splits the
rows over its threads and sums their r_k in order, so it rounds as the CPU does. O(n d) for m_1,
O(n d²/2) for m_2, no scratch beyond the d row sums.

``coord(x, i, k, n)`` reads coordinate k of token i (rows of a 2-D array on the CPU, the device's
token-minor buffer x[k n + i]). Every product is ``mul``.
"""

import math


def coordinate_mean(coord):
    """``mean(x, k, n)``: c_k = (1/n) Σ_i x_ik, the tokens ascending."""

    def mean(x, k, n):
        acc = 0.0
        for i in range(n):
            acc += coord(x, i, k, n)
        return acc / n

    return mean


def moment_row(mul, coord):
    """``row(x, k, n, d)``: r_k = Σ_{l >= k} w_kl Q_kl² (module notes), l ascending."""

    def row(x, k, n, d):
        acc = 0.0
        for l in range(k, d):  # noqa: E741 (the l of the notes)
            s = 0.0
            for i in range(n):
                s += mul(coord(x, i, k, n), coord(x, i, l, n))
            q = s / n
            if l == k:
                q -= 1.0 / d
            sq = mul(q, q)
            acc += sq if l == k else sq + sq  # 2 Q_kl², exactly
        return acc

    return row


def magnetisation(total):
    """m_1 from m_1² = Σ_k c_k²."""
    return math.sqrt(total)


def quadrupole(total, d):
    """m_2 from ‖Q‖_F² = Σ_k r_k: √(‖Q‖_F² / ((d − 1)/d)), (d − 1)/d being ‖Q‖_F² at one
    cluster."""
    return math.sqrt(total / ((d - 1.0) / d))
