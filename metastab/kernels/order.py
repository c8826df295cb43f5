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

The sums have one fixed order, whatever the target and the threads, and no division inside a
loop: m_1 = √(Σ_k s_k²) / n with the coordinate sums s_k = Σ_i x_ik (tokens ascending);
‖Q‖_F² = (1/n²) Σ_k r_k with the row sums r_k = Σ_{l >= k} w_kl (S_kl − δ_kl n/d)² (l ascending;
w 1 on the diagonal, 2 off it: Q is symmetric) of S_kl = Σ_i x_ik x_il (tokens ascending), rows
k ascending. A device splits the coordinates or rows over its threads and sums their terms in
order, so it rounds as the CPU does. O(n d) for m_1, O(n d²/2) for m_2, no scratch beyond the d
terms.

``coord(x, i, k, n)`` reads coordinate k of token i (rows of a 2-D array on the CPU, the device's
token-minor buffer x[k n + i]). Every product is ``mul``.
"""

import math


def coordinate_sum(coord):
    """``total(x, k, n)``: s_k = Σ_i x_ik, the tokens ascending."""

    def total(x, k, n):
        acc = 0.0
        for i in range(n):
            acc += coord(x, i, k, n)
        return acc

    return total


def moment_row(mul, coord):
    """``row(x, k, n, d, shift)``: r_k = Σ_{l >= k} w_kl (S_kl − δ_kl shift)² (module notes;
    ``shift`` = n/d), l ascending."""

    def row(x, k, n, d, shift):
        acc = 0.0
        for l in range(k, d):  # noqa: E741 (the l of the notes)
            s = 0.0
            for i in range(n):
                s += mul(coord(x, i, k, n), coord(x, i, l, n))
            if l == k:
                s -= shift
            sq = mul(s, s)
            acc += sq if l == k else sq + sq  # 2 (S_kl)², exactly
        return acc

    return row


def magnetisation(total, n):
    """m_1 = √(Σ_k s_k²) / n."""
    return math.sqrt(total) / n


def quadrupole(mul):
    """``m2(total, n, d)``: m_2 = √(Σ_k r_k / (n² (d − 1)/d)) (‖Q‖_F² = Σ_k r_k / n², and
    (d − 1)/d is ‖Q‖_F² at one cluster)."""

    def m2(total, n, d):
        return math.sqrt(total / mul(mul(float(n), float(n)), (d - 1.0) / d))

    return m2
