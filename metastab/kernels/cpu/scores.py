"""The score loops over blocks of tokens.

:func:`score_loops` builds them around a multiply-add ``madd``: ``arith.fma`` (rounded once) in
the kernels of :mod:`.euclidean_steps` and of :mod:`.sphere_steps`. A block holds ROWS tokens side
by side, token i0 + r's entry j at W[j ROWS + r], so that every loop runs across r and vectorises
while each token's sums keep the reference's order (k ascending from +0.0).
"""

from numba import njit

ROWS = 32  # tokens held side by side in a block


def score_loops(madd):
    """The loops (scores_block, block_bx) with ``madd`` as their multiply-add, each compiled on
    its own without reference counting. The kernels compute their scores in the register tiles
    of :mod:`.tiles`, whose sums are those of scores_block bit for bit (the tests compare
    them)."""

    @njit(_nrt=False)
    def scores4(bxt, x, j, S, p):
        """S[p + q ROWS + r] = sum_k bxt[k, r] x[j + q, k] for q < 4, r < ROWS, k ascending.

        Four rows of scores per pass over k, four (then two, then one) k per step: each load and
        store of a partial sum serves several multiply-adds (the sums stay in memory: LLVM cannot
        prove the arrays distinct), and the constant row offsets let LLVM vectorise across r."""
        d = x.shape[1]
        p1 = p + ROWS
        p2 = p + 2 * ROWS
        p3 = p + 3 * ROWS
        for r in range(ROWS):
            S[p + r] = 0.0
            S[p1 + r] = 0.0
            S[p2 + r] = 0.0
            S[p3 + r] = 0.0
        k = 0
        while k + 4 <= d:  # four k per step: one load and store of a partial sum per four terms
            a0, b0, c0, e0 = x[j, k], x[j, k + 1], x[j, k + 2], x[j, k + 3]
            a1, b1, c1, e1 = x[j + 1, k], x[j + 1, k + 1], x[j + 1, k + 2], x[j + 1, k + 3]
            a2, b2, c2, e2 = x[j + 2, k], x[j + 2, k + 1], x[j + 2, k + 2], x[j + 2, k + 3]
            a3, b3, c3, e3 = x[j + 3, k], x[j + 3, k + 1], x[j + 3, k + 2], x[j + 3, k + 3]
            for r in range(ROWS):
                y, z, v, w = bxt[k, r], bxt[k + 1, r], bxt[k + 2, r], bxt[k + 3, r]
                S[p + r] = madd(w, e0, madd(v, c0, madd(z, b0, madd(y, a0, S[p + r]))))
                S[p1 + r] = madd(w, e1, madd(v, c1, madd(z, b1, madd(y, a1, S[p1 + r]))))
                S[p2 + r] = madd(w, e2, madd(v, c2, madd(z, b2, madd(y, a2, S[p2 + r]))))
                S[p3 + r] = madd(w, e3, madd(v, c3, madd(z, b3, madd(y, a3, S[p3 + r]))))
            k += 4
        while k + 2 <= d:
            a0, b0 = x[j, k], x[j, k + 1]
            a1, b1 = x[j + 1, k], x[j + 1, k + 1]
            a2, b2 = x[j + 2, k], x[j + 2, k + 1]
            a3, b3 = x[j + 3, k], x[j + 3, k + 1]
            for r in range(ROWS):
                y = bxt[k, r]
                z = bxt[k + 1, r]
                S[p + r] = madd(z, b0, madd(y, a0, S[p + r]))
                S[p1 + r] = madd(z, b1, madd(y, a1, S[p1 + r]))
                S[p2 + r] = madd(z, b2, madd(y, a2, S[p2 + r]))
                S[p3 + r] = madd(z, b3, madd(y, a3, S[p3 + r]))
            k += 2
        if k < d:
            a0, a1, a2, a3 = x[j, k], x[j + 1, k], x[j + 2, k], x[j + 3, k]
            for r in range(ROWS):
                y = bxt[k, r]
                S[p + r] = madd(y, a0, S[p + r])
                S[p1 + r] = madd(y, a1, S[p1 + r])
                S[p2 + r] = madd(y, a2, S[p2 + r])
                S[p3 + r] = madd(y, a3, S[p3 + r])

    @njit(_nrt=False)
    def scores_block(bxt, x, j0, S):
        """S[j ROWS + r] = sum_k bxt[k, r] x[j, k] for j0 <= j < n (a full block of ROWS tokens)."""
        n, d = x.shape
        # max: a provably non-negative index spares numba's wraparound of negative indices,
        # which would stop LLVM from vectorising (a 5x slower kernel)
        j4 = max(j0, 0)
        while j4 + 4 <= n:
            scores4(bxt, x, j4, S, j4 * ROWS)
            j4 += 4
        for j in range(j4, n):  # the last n - j4 < 4 rows one at a time
            p = j * ROWS
            for r in range(ROWS):
                S[p + r] = 0.0
            for k in range(d):
                xjk = x[j, k]
                for r in range(ROWS):
                    S[p + r] = madd(bxt[k, r], xjk, S[p + r])

    @njit(_nrt=False)
    def block_bx(x, B, i0, r1, plain, bxt):
        """bxt[k, r] = (B x_{i0 + r})_k, m ascending; x_{i0 + r} itself when ``plain``."""
        d = x.shape[1]
        for r in range(r1):
            for k in range(d):
                if plain:
                    bxt[k, r] = x[i0 + r, k]
                else:
                    acc = 0.0
                    for m in range(d):
                        acc = madd(B[k, m], x[i0 + r, m], acc)
                    bxt[k, r] = acc

    return scores_block, block_bx
