"""All numba code: pure functions over arrays (no objects, no globals but constants, no printing).

Two tiers. The *step* functions advance one configuration by one step and are driven by supplied
uniforms, so that ``tests`` can compare them bit for bit with :mod:`metastab._reference`. The
*driver* :func:`advance` runs many independent chains in parallel (``prange`` over chains), each
with its own xoshiro256** stream whose state lives in a caller-owned array, so a chain's path
depends only on its seed: not on the thread count, the chunking of chains or of steps.

Arithmetic is written as explicit loops in a fixed order and ``fastmath`` stays off: the reference
repeats the same operations in the same order, which is what makes bit-for-bit tests possible.
"""

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._clusters import cluster_count, record_levels

_JIT = dict(cache=True, nogil=True, error_model="numpy")

# Model kinds (metastab.models maps its classes onto these).
CHAIN, FLOW, HARDMAX, LOCALMAX = 0, 1, 2, 3
# Localmax neighbour rules (metastab.models.NEIGHBOUR_RULES maps names onto these).
ADDITIVE, RELATIVE = 0, 1
# Stopping events (metastab.events maps its specs onto these).
NO_EVENT, LEAVE_BALL, LEAVE_HULL, REACH, COLLAPSE, CLUSTERS = 0, 1, 2, 3, 4, 5

_U = np.uint64
_GOLDEN = _U(0x9E3779B97F4A7C15)
_TWO_M53 = 1.0 / 9007199254740992.0
# Wolfe's min-norm-point algorithm (see _outside_hull): relative optimality tolerance, and a cap on
# major cycles that is never reached in exact arithmetic (the method is finite).
_HULL_EPS = 1e-12
_HULL_MAX_ITER = 1000


# Parameters travel to the drivers as NamedTuples (numba types them as heterogeneous tuples and
# compiles one driver for all models and events); the spec objects of metastab.models and
# metastab.events build them.
class Dynamics(NamedTuple):
    """The time-independent parameters of a model (``model.kernel_params(d)``)."""

    kind: int  # CHAIN, FLOW, HARDMAX or LOCALMAX
    B: np.ndarray  # (d, d) key-query matrix
    beta: float  # inverse temperature (inf for HARDMAX and LOCALMAX)
    P: np.ndarray  # (d, d) step matrix, used when use_P
    use_P: bool
    by_point: bool  # HARDMAX: average over distinct leader points
    tol: float  # HARDMAX: relative tie tolerance
    rule: int  # LOCALMAX: ADDITIVE or RELATIVE


class Schedule(NamedTuple):
    """Per-step parameters of steps t0 .. t0 + k - 1 (``model.schedule(t0, k)``): one entry
    for a constant."""

    gammas: np.ndarray  # scalar steps (one unused 1.0 with a step matrix)
    margins: np.ndarray  # LOCALMAX margins r_t (one unused 0.0 for the other models)


class EventArrays(NamedTuple):
    """The kernel form of a stopping event (``event.compile(x0, B)``; see :func:`event_hit`)."""

    code: int
    centers: np.ndarray  # (1 or C, n, d)
    radii: np.ndarray  # (1 or C, n)
    groups: np.ndarray  # (n,) int64, group labels 0..G-1
    starts: np.ndarray  # (G + 1,) int64
    members: np.ndarray  # (n,) int64, token indices sorted by group
    scalar: float
    # CLUSTERS: stop when the number of clusters is at most ``at_most`` (0: never), and record in
    # levels[c, k - 1] the first time chain c's count was at most k (NaN until then; chains
    # beyond levels.shape[0] record nothing); see metastab.events.Clusters and metastab.track
    at_most: int = 0
    levels: np.ndarray = np.full((0, 1), np.nan)


def no_event(n: int, d: int) -> EventArrays:
    """The event that never holds, for runs of n tokens in R^d."""
    return EventArrays(
        NO_EVENT,
        np.zeros((1, n, d)),
        np.zeros((1, n)),
        np.zeros(n, np.int64),
        np.array([0, n], np.int64),
        np.arange(n, dtype=np.int64),
        0.0,
    )


# --------------------------------------------------------------------------------------------
# Random numbers: splitmix64 (seeding) and xoshiro256** (streams), Blackman & Vigna (2018).
# --------------------------------------------------------------------------------------------


@njit(inline="always")
def _rotl(x, k):
    return (x << _U(k)) | (x >> _U(64 - k))


@njit(inline="always")
def _mix64(z):
    """The splitmix64 output function (a bijection of uint64)."""
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


@njit(**_JIT)
def seed_streams(key0, key1, first, out):
    """Fill ``out[k]`` with the xoshiro256** state of chain ``first + k``.

    Chain c starts a splitmix64 sequence at ``key0 ^ mix64(key1 + c)`` and takes four outputs,
    the seeding recommended for xoshiro; the state depends on (key, c) only (prefix property).
    """
    for k in range(out.shape[0]):
        z = _U(key0) ^ _mix64(_U(key1) + _U(first + k))
        for w in range(4):
            z = z + _GOLDEN
            out[k, w] = _mix64(z)


@njit(**_JIT)
def next_u64(s):
    """One xoshiro256** output; advances the state ``s`` (uint64[4]) in place."""
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    result = _rotl(s1 * _U(5), 7) * _U(9)
    t = s1 << _U(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3
    return result


@njit(**_JIT)
def next_uniform(s):
    """A uniform on [0, 1) with 53 random bits: (x >> 11) * 2**-53."""
    return float(next_u64(s) >> _U(11)) * _TWO_M53


# --------------------------------------------------------------------------------------------
# One step (uniform-driven tier)
# --------------------------------------------------------------------------------------------


@njit(**_JIT)
def _row_scores(x, B, i, bx, s):
    """s[j] = <B x_i, x_j> for all j; returns max_j s[j]."""
    n, d = x.shape
    for k in range(d):
        acc = 0.0
        for m in range(d):
            acc += B[k, m] * x[i, m]
        bx[k] = acc
    best = -np.inf
    for j in range(n):
        acc = 0.0
        for k in range(d):
            acc += bx[k] * x[j, k]
        s[j] = acc
        if acc > best:
            best = acc
    return best


@njit(inline="always")
def _move(x, i, target, gamma, P, use_P, out):
    """out_i = x_i + gamma (target - x_i), or x_i + P (target - x_i) for a step matrix.

    Written as an increment so that target == x_i is an exact no-op (a self-pick moves nothing).
    """
    d = x.shape[1]
    if use_P:
        for k in range(d):
            acc = 0.0
            for m in range(d):
                acc += P[k, m] * (target[m] - x[i, m])
            out[i, k] = x[i, k] + acc
    else:
        for k in range(d):
            out[i, k] = x[i, k] + gamma * (target[k] - x[i, k])


# exp(z) for z <= 0 as a short, vectorisable polynomial (libm's exp is an opaque call that stops
# LLVM from vectorising the weight loop). Cody-Waite reduction z = k ln2 + r, |r| <= ln2 / 2, the
# degree-13 Taylor polynomial of e^r (truncation < 2^-57), and 2^k built from the exponent bits;
# max error ~1 ulp against a correctly rounded exp. Results with k < -1022 (z < -708.74) are flushed
# to 0: such a pick is never drawn (engine.check_resolution warns where that matters).
_LOG2E = 1.4426950408889634
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: adding it rounds z * log2(e) to an integer k
_SHIFT_BITS = np.int64(4843621399236968448)  # the bit pattern of _SHIFT
_LN2_HI = 0.6931471803691238  # ln 2 split in two: k * _LN2_HI is exact for |k| < 2**20
_LN2_LO = 1.9082149292705877e-10
_Z_MIN = -745.0  # below the smallest subnormal's log; keeps k small
_INV_FACT = (
    1.0,
    1.0,
    0.5,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362880.0,
    1.0 / 3628800.0,
    1.0 / 39916800.0,
    1.0 / 479001600.0,
    1.0 / 6227020800.0,
)


@njit(inline="always")
def _exp_mantissa(z, t, j):
    """e^r of z = k ln2 + r; stores z log2(e) + _SHIFT (which holds k in its low bits) in t[j]."""
    if z < _Z_MIN:
        z = _Z_MIN
    shifted = z * _LOG2E + _SHIFT
    k = shifted - _SHIFT
    r = (z - k * _LN2_HI) - k * _LN2_LO
    p = _INV_FACT[13]
    for q in range(12, -1, -1):  # Horner; LLVM unrolls this fixed-length loop
        p = p * r + _INV_FACT[q]
    t[j] = shifted
    return p


@njit(inline="always")
def _exp_scale(w, t, tb, m):
    """w[j] *= 2^k_j for j < m, k_j read from the bits of t[j] (tb is t viewed as int64)."""
    for j in range(m):
        k = tb[j] - _SHIFT_BITS
        tb[j] = (k + 1023) << 52 if k >= -1022 else 0
    for j in range(m):
        w[j] *= t[j]


@njit(**_JIT)
def exp_nonpositive(z, out, t):
    """out[j] = exp(z[j]) for z[j] <= 0 with the kernels' own exp (see _exp_mantissa)."""
    m = z.shape[0]
    for j in range(m):
        out[j] = _exp_mantissa(z[j], t, j)
    _exp_scale(out, t, t.view(np.int64), m)


@njit(**_JIT)
def _softmax_weights(s, best, beta, w, t, tb):
    """w[j] = exp(beta (s[j] - max s)) (max-shifted: no overflow at any beta); returns sum."""
    n = s.shape[0]
    for j in range(n):
        w[j] = _exp_mantissa(beta * (s[j] - best), t, j)
    _exp_scale(w, t, tb, n)
    total = 0.0
    for j in range(n):
        total += w[j]
    return total


_ROWS = 32  # tokens whose weights chain_step computes together (bounds the work buffers)
# A pick j among candidates of largest weight w_max is *rare* when w_j < RARE_CUT w_max. Rare
# picks are decided by an exact Bernoulli and drawn apart (see chain_step); the others weigh at
# least 2^-20 w_max >= 2^-20 / n of their total, so inverting a 53-bit uniform over them realises
# each with a relative error below ~n 2^-33.
RARE_CUT = 2.0**-20
_TWO_53 = 9007199254740992.0


@njit(**_JIT)
def bernoulli(p, u, s):
    """An exact Bernoulli(p) trial for any double p in [0, 1], driven by the uniform ``u``.

    ``u`` = m 2^-53 (m an integer) stands for U = (m + V) 2^-53 with V uniform on [0, 1); the
    trial is U < p. With q = p 2^53 (exact): m + 1 <= q gives True, m >= q gives False, and
    otherwise (m = floor q) the answer is V < q - m, decided in the same way by the next 53-bit
    uniform of the stream ``s`` (q - m is exact). Extra draws happen with probability < 2^-53 per
    trial and end after at most ~21 (the bits of q run out).
    """
    q = p * _TWO_53
    m = u * _TWO_53
    while True:
        if m + 1.0 <= q:
            return True
        if not m < q:
            return False
        q = (q - m) * _TWO_53
        m = float(next_u64(s) >> _U(11))


@njit(**_JIT)
def _pick_rare(w, hi, s):
    """The pick among {j : w[j] < hi} (the rare picks of the weights ``w``): the rule of
    chain_step applied to that set (its own total and cut, a fresh uniform from the stream
    ``s``), again and again while the pick falls in the set's own rare part."""
    n = w.shape[0]
    while True:
        top = 0.0
        for j in range(n):
            if w[j] < hi:
                top = max(top, w[j])
        cut = RARE_CUT * top
        rare = 0.0
        keep = 0.0
        for j in range(n):
            if w[j] < cut:
                rare += w[j]
            elif w[j] < hi:
                keep += w[j]
        tot = rare + keep
        u = next_uniform(s)
        if rare > 0.0 and bernoulli(rare / tot, u, s):
            hi = cut
            continue
        thr = max(u * tot - rare, 0.0)
        cum = 0.0
        last = -1
        for j in range(n):
            if cut <= w[j] < hi:
                cum += w[j]
                if cum > thr:
                    return j
                last = j
        return last


@njit(**_JIT)
def _pick_slow(x, B, beta, i, ui, s, bx, sc, w, t, tb):
    """Token i's pick by the rule of chain_step, scalar, with the stream ``s`` at hand: the
    Bernoulli trial with its extra draws, then :func:`_pick_rare` or the inversion over the
    other picks. The row's weights and sums are recomputed with the operations of
    _chain_blocks (same bits). Runs only for the tokens that _chain_blocks leaves pending."""
    best = _row_scores(x, B, i, bx, sc)
    _softmax_weights(sc, best, beta, w, t, tb)
    n = w.shape[0]
    rare = 0.0
    keep = 0.0
    for j in range(n):
        v = w[j]
        small = v < RARE_CUT
        rare += v if small else 0.0
        keep += 0.0 if small else v
    tot = rare + keep
    if rare > 0.0 and bernoulli(rare / tot, ui, s):
        return _pick_rare(w, RARE_CUT, s)
    thr = max(ui * tot - rare, 0.0)
    cum = 0.0
    last = 0
    for j in range(n):
        v = 0.0 if w[j] < RARE_CUT else w[j]
        if cum + v != cum or j == 0:
            last = j
        cum += v
        if cum > thr:
            return j
    return last  # rounding: the threshold reached the total


# The symmetric Gram (see _gram) pays from this dimension on (below it the mirroring costs more
# than the halved score work), up to this many tokens (it holds n^2 scores per chain).
_GRAM_MIN_D = 8
_GRAM_MAX_N = 2048


@njit(**_JIT)
def chain_work(n, d):
    """Scratch buffers of :func:`chain_step` for n tokens in R^d: those of one block of tokens
    (:func:`block_work`), those of the pending picks (a flag per token and one scalar row for
    :func:`_pick_slow`) and the blocked Gram matrix of :func:`_gram` (empty where
    :func:`chain_step` never uses it)."""
    gram = n % _ROWS == 0 and d >= _GRAM_MIN_D and n <= _GRAM_MAX_N
    g = n // _ROWS if gram else 0
    t1 = np.empty(n)
    pending = (np.zeros(n, np.bool_), np.empty(d), np.empty(n), np.empty(n), t1, t1.view(np.int64))
    return block_work(n, d) + (pending, np.empty((g, n * _ROWS)))


@njit(**_JIT)
def block_work(n, d):
    """Scratch buffers of :func:`_chain_blocks` (one set per thread that runs blocks)."""
    rows = min(n, _ROWS)
    t = np.empty(rows * n)
    return (
        np.empty((d, rows)),
        np.empty(rows * n),
        t,
        t.view(np.int64),
        np.empty(rows),
        np.empty(rows),
        np.empty(rows, np.int64),
        np.empty(rows),
        np.empty(rows),
    )


@njit(inline="always")
def _scores4(bxt, x, j, S, p):
    """S[p + q _ROWS + r] = sum_k bxt[k, r] x[j + q, k] for q < 4, r < _ROWS, k ascending.

    Four rows of scores per pass over k, two k per step: each load and store of a partial sum
    serves two multiply-adds, and the constant row offsets let LLVM vectorise across r."""
    d = x.shape[1]
    p1 = p + _ROWS
    p2 = p + 2 * _ROWS
    p3 = p + 3 * _ROWS
    for r in range(_ROWS):
        S[p + r] = 0.0
        S[p1 + r] = 0.0
        S[p2 + r] = 0.0
        S[p3 + r] = 0.0
    k = 0
    while k + 2 <= d:
        a0, b0 = x[j, k], x[j, k + 1]
        a1, b1 = x[j + 1, k], x[j + 1, k + 1]
        a2, b2 = x[j + 2, k], x[j + 2, k + 1]
        a3, b3 = x[j + 3, k], x[j + 3, k + 1]
        for r in range(_ROWS):
            y = bxt[k, r]
            z = bxt[k + 1, r]
            S[p + r] = (S[p + r] + y * a0) + z * b0
            S[p1 + r] = (S[p1 + r] + y * a1) + z * b1
            S[p2 + r] = (S[p2 + r] + y * a2) + z * b2
            S[p3 + r] = (S[p3 + r] + y * a3) + z * b3
        k += 2
    if k < d:
        a0, a1, a2, a3 = x[j, k], x[j + 1, k], x[j + 2, k], x[j + 3, k]
        for r in range(_ROWS):
            y = bxt[k, r]
            S[p + r] += y * a0
            S[p1 + r] += y * a1
            S[p2 + r] += y * a2
            S[p3 + r] += y * a3


@njit(inline="always")
def _scores_block(bxt, x, j0, S):
    """S[j _ROWS + r] = sum_k bxt[k, r] x[j, k] for j0 <= j < n (a full block of _ROWS tokens)."""
    n, d = x.shape
    j4 = j0
    while j4 + 4 <= n:
        _scores4(bxt, x, j4, S, j4 * _ROWS)
        j4 += 4
    for j in range(j4, n):  # the last n - j4 < 4 rows one at a time
        p = j * _ROWS
        for r in range(_ROWS):
            S[p + r] = 0.0
        for k in range(d):
            xjk = x[j, k]
            for r in range(_ROWS):
                S[p + r] += bxt[k, r] * xjk


@njit(**_JIT)
def _use_gram(x, B, G):
    """Whether chain_step takes the scores from the symmetric Gram: G allocated (n a multiple of
    _ROWS), B the identity and x finite. Then (B x_i)_k == x_ik up to the sign of zero, which no
    score can see (a sum that starts at +0.0 never becomes -0.0), so s_ij = s_ji bit for bit."""
    if G.shape[0] * _ROWS != x.shape[0]:
        return False
    d = B.shape[0]
    for k in range(d):
        for m in range(d):
            if B[k, m] != (1.0 if k == m else 0.0):
                return False
    acc = 0.0
    for v in x.ravel():
        acc += v * 0.0  # NaN iff some v is not finite
    return acc == 0.0


@njit(**_JIT)
def _gram(x, G, bxt, b0, b1):
    """G[b, j _ROWS + r] = <x_i, x_j> (k ascending) for i = b _ROWS + r, the scores of block b in
    the layout of chain_step's W (for B = I, see _use_gram). Block b computes the pairs with
    j >= i0 = b _ROWS and mirrors those with j >= i0 + _ROWS into block j // _ROWS: each pair
    once. Different blocks write disjoint entries, so blocks may run on different threads."""
    n, d = x.shape
    for b in range(b0, b1):
        i0 = b * _ROWS
        for r in range(_ROWS):
            for k in range(d):
                bxt[k, r] = x[i0 + r, k]
        Gb = G[b]
        _scores_block(bxt, x, i0, Gb)
        for j in range(i0 + _ROWS, n):
            dst = G[j // _ROWS]
            p = i0 * _ROWS + j % _ROWS
            for r in range(_ROWS):
                dst[p + r * _ROWS] = Gb[j * _ROWS + r]


@njit(inline="always")
def _chain_blocks(x, B, beta, gamma, P, use_P, u, out, work, G, gram, b0, b1, pend):
    """:func:`chain_step` for the tokens i0 <= i < i0 + r1 of blocks b0 <= b < b1 (i0 = b rows,
    the last block possibly shorter); with ``gram`` the scores are read from G, else computed
    here. A token whose pick may be rare, i.e. needs the stream, is only flagged in ``pend``
    (for :func:`_resolve_pending`); returns the number flagged. Tokens only read x and draw
    nothing, so blocks may run on different threads. A block without rare weights sums them as
    the reference does with S_rare = 0 (one cumulative sum, threshold u S_keep)."""
    n, d = x.shape
    bxt, W, t, tb, best, thr, cnt, rare, keep = work
    rows = thr.shape[0]
    held = 0
    for b in range(b0, b1):
        i0 = b * rows
        r1 = min(rows, n - i0)
        if gram:
            W = G[b]
        else:
            for r in range(r1):
                for k in range(d):
                    acc = 0.0
                    for m in range(d):
                        acc += B[k, m] * x[i0 + r, m]
                    bxt[k, r] = acc
        for r in range(r1):
            best[r] = -np.inf
        if not gram and r1 < _ROWS:
            for j in range(n):  # scores s_ij = sum_k (B x_i)_k x_jk, k ascending, from +0.0
                base = j * r1
                if d >= 2:  # the first two terms in one pass
                    a0 = x[j, 0]
                    a1 = x[j, 1]
                    for r in range(r1):
                        W[base + r] = (0.0 + bxt[0, r] * a0) + bxt[1, r] * a1
                else:
                    a0 = x[j, 0] if d == 1 else 0.0
                    for r in range(r1):
                        W[base + r] = 0.0 + (bxt[0, r] * a0 if d == 1 else 0.0)
                for k in range(2, d):
                    xjk = x[j, k]
                    for r in range(r1):
                        W[base + r] += bxt[k, r] * xjk
                for r in range(r1):
                    best[r] = max(best[r], W[base + r])
        else:
            if not gram:
                _scores_block(bxt, x, 0, W)
            for j in range(n):
                base = j * r1
                for r in range(r1):
                    best[r] = max(best[r], W[base + r])
        for j in range(n):
            base = j * r1
            for r in range(r1):
                W[base + r] = beta * (W[base + r] - best[r])
        m = r1 * n
        for q in range(m):
            W[q] = _exp_mantissa(W[q], t, q)
        for q in range(m):
            k = tb[q] - _SHIFT_BITS
            tb[q] = (k + 1023) << 52 if k >= -1022 else 0
        few = 0
        for q in range(m):  # the second pass of _exp_scale, counting the rare weights
            v = W[q] * t[q]
            W[q] = v
            few += v < RARE_CUT
        for r in range(r1):
            rare[r] = 0.0
            keep[r] = 0.0
            cnt[r] = 0
        if few == 0:  # no rare pick in the block: S_rare = 0, the sums of the reference as they are
            for j in range(n):
                base = j * r1
                for r in range(r1):
                    keep[r] += W[base + r]
                    W[base + r] = keep[r]
        else:  # rare weights summed apart; cumulative weights of the others, in place
            for j in range(n):
                base = j * r1
                for r in range(r1):
                    v = W[base + r]
                    small = v < RARE_CUT
                    rare[r] += v if small else 0.0
                    keep[r] += 0.0 if small else v
                    W[base + r] = keep[r]
        maybe = 0
        for r in range(r1):
            # the rare picks fill [0, rare) of the scale [0, rare + keep); u (rare + keep) >=
            # 2 rare implies U >= p (not rare) and uu - rare >= 0, decided without computing p
            ra = rare[r]
            uu = u[i0 + r] * (ra + keep[r])
            e = uu - ra
            thr[r] = e if e > 0.0 else 0.0
            maybe += uu < 2.0 * ra
        here = False
        if maybe > 0:
            for r in range(r1):
                # not decided above: so does u 2^53 >= p 2^53 (the first test of bernoulli);
                # otherwise the pick is pending
                tot = rare[r] + keep[r]
                if (
                    not u[i0 + r] * tot >= 2.0 * rare[r]
                    and rare[r] > 0.0
                    and u[i0 + r] * _TWO_53 < (rare[r] / tot) * _TWO_53
                ):
                    pend[i0 + r] = True
                    thr[r] = -np.inf  # the count below adds nothing
                    here = True
                    held += 1
        for j in range(n):
            base = j * r1
            for r in range(r1):
                cnt[r] += W[base + r] <= thr[r]
        for r in range(r1):
            i = i0 + r
            pick = cnt[r]
            if pick == n:  # rounding: the threshold reached the total
                pick = n - 1
                while pick > 0 and W[pick * r1 + r] == W[(pick - 1) * r1 + r]:
                    pick -= 1
            if not keep[r] >= 1.0:  # NaN weights (finite ones sum to >= 1: the largest is 1)
                for k in range(d):
                    out[i, k] = np.nan
                continue
            if not (here and pend[i]):
                _move(x, i, x[pick], gamma, P, use_P, out)
    return held


@njit(**_JIT)
def _resolve_pending(x, B, beta, gamma, P, use_P, u, s, out, pw):
    """The picks and moves of the tokens flagged by _chain_blocks, one after the other in
    increasing token order: the only place where a step draws from the stream ``s``, so the
    draws, and the bits, do not depend on how the blocks were run. Clears the flags."""
    pend, bx, sc, w, t, tb = pw
    for i in range(x.shape[0]):
        if pend[i]:
            pend[i] = False
            pick = _pick_slow(x, B, beta, i, u[i], s, bx, sc, w, t, tb)
            _move(x, i, x[pick], gamma, P, use_P, out)


@njit(**_JIT)
def chain_step(x, B, beta, gamma, P, use_P, u, s, out, work):
    """SA_P, one synchronous step of the finite-beta chain ([FW] eq. softmax.process).

    Token i picks j with probability softmax_j(beta s_ij), tokens independently, and moves to
    x_i + gamma (x_j - x_i). With weights w_j = exp(beta (s_ij - max_k s_ik)) (the largest is 1),
    the picks with w_j < RARE_CUT are *rare*, of total probability p = S_rare / (S_rare + S_keep)
    (sums of positive terms: full relative precision). First an exact Bernoulli(p)
    (:func:`bernoulli`, driven by the uniform ``u[i]`` and, with probability < 2^-53, by further
    uniforms of the stream ``s``) decides whether the pick is rare. If not, j is drawn by
    inversion of the cumulative weights of the other picks, as if the rare ones came first: the
    first j whose cumulative weight exceeds max(u[i] (S_rare + S_keep) - S_rare, 0) (u[i] S_keep
    when there are no rare picks), or, if rounding leaves none, the last j at which the
    cumulative weight grew. If rare, :func:`_pick_rare` draws j among the rare picks by the same
    rule, with uniforms from ``s``. Every pick is thus realised with its probability to a
    relative error of about n 2^-33 or better, however small; only weights that exp flushes to 0
    (beta (s_ij - max) below -708.74, see _exp_mantissa) are never picked. The tokens that may need
    the stream are flagged by the blocks and resolved afterwards in increasing token order
    (:func:`_resolve_pending`), so a chain's path is a function of its seed only, whatever the
    thread count.

    The work runs over blocks of tokens i held side by side (W[j * rows + r] for token i0 + r), so
    that every loop runs across tokens and vectorises, while each token's sums are accumulated
    in increasing j and k exactly as in the reference. Cumulative weights never decrease, so the
    first j whose cumulative weight exceeds the threshold is the count of those that do not.
    For B = I the scores come from the symmetric Gram, each pair once (see _use_gram, _gram).
    """
    n = x.shape[0]
    work_b, pw, G = work[:-2], work[-2], work[-1]
    gram = _use_gram(x, B, G)
    if gram:
        _gram(x, G, work_b[0], 0, G.shape[0])
    rows = work_b[4].shape[0]
    if _chain_blocks(
        x, B, beta, gamma, P, use_P, u, out, work_b, G, gram, 0, (n + rows - 1) // rows, pw[0]
    ):
        _resolve_pending(x, B, beta, gamma, P, use_P, u, s, out, pw)


@njit(**_JIT)
def flow_work(n, d):
    """Scratch buffers of :func:`flow_step` for n tokens in R^d."""
    t = np.empty(n)
    return np.empty(d), np.empty(n), np.empty(n), np.empty(d), t, t.view(np.int64)


@njit(**_JIT)
def flow_step(x, B, beta, gamma, P, use_P, out, work):
    """SA_beta, one deterministic softmax layer ([FW] eq. softmax.ODE):
    x_i <- x_i + gamma (sum_j softmax_j(beta s_ij) x_j - x_i)."""
    n, d = x.shape
    bx, s, w, target, t, tb = work
    for i in range(n):
        best = _row_scores(x, B, i, bx, s)
        total = _softmax_weights(s, best, beta, w, t, tb)
        for k in range(d):
            acc = 0.0
            for j in range(n):
                acc += w[j] * x[j, k]
            target[k] = acc / total
        _move(x, i, target, gamma, P, use_P, out)


@njit(**_JIT)
def _same_point(x, j, k, tol):
    """Leaders j and k are one point: max-norm distance <= tol * max(|x_j|_inf, |x_k|_inf)."""
    diff = 0.0
    size = 0.0
    for m in range(x.shape[1]):
        diff = max(diff, abs(x[j, m] - x[k, m]))
        size = max(size, abs(x[j, m]), abs(x[k, m]))
    return diff <= tol * size


@njit(**_JIT)
def _mean_above(x, s, cut, by_point, tol, target):
    """target = the mean of x_j over {j : s[j] >= cut}: over the indices, or with ``by_point``
    over the distinct points among them (see _same_point); summed in increasing j."""
    n, d = x.shape
    for k in range(d):
        target[k] = 0.0
    count = 0
    for j in range(n):
        if s[j] < cut:
            continue
        if by_point:
            seen = False
            for q in range(j):
                if s[q] >= cut and _same_point(x, j, q, tol):
                    seen = True
                    break
            if seen:
                continue
        for k in range(d):
            target[k] += x[j, k]
        count += 1
    for k in range(d):
        target[k] /= count


@njit(**_JIT)
def hardmax_work(n, d):
    """Scratch buffers of :func:`hardmax_step` for n tokens in R^d."""
    return np.empty(d), np.empty(n), np.empty(d)


@njit(**_JIT)
def hardmax_step(x, B, gamma, P, use_P, by_point, tol, out, work):
    """SA_inf, one hardmax / Frank-Wolfe step ([FW] eq. hardmax.dynamics.V).

    Leaders L_i = {j : s_ij >= max_k s_ik - tol * max_k |s_ik|} (a relative tie tolerance);
    the target is the mean of x_j over the indices in L_i (``by_point`` False, [AFZ]) or over the
    distinct points among them (``by_point`` True, [FW]'s set reading; see _same_point).
    """
    n, d = x.shape
    bx, s, target = work
    for i in range(n):
        best = _row_scores(x, B, i, bx, s)
        scale = 0.0
        for j in range(n):
            scale = max(scale, abs(s[j]))
        _mean_above(x, s, best - tol * scale, by_point, tol, target)
        _move(x, i, target, gamma, P, use_P, out)


@njit(**_JIT)
def neighbour_cut(rule, best, r):
    """The localmax score threshold of one token: j is a neighbour of i iff s_ij >= cut.

    ADDITIVE: cut = max_k s_ik - r; RELATIVE: cut = max_k s_ik - r |max_k s_ik|. A new rule is one
    more branch here (and in ``_reference.neighbour_cut``) and one more name in
    ``metastab.models.NEIGHBOUR_RULES``.
    """
    if rule == RELATIVE:
        return best - r * abs(best)
    return best - r


@njit(**_JIT)
def localmax_work(n, d):
    """Scratch buffers of :func:`localmax_step` for n tokens in R^d."""
    return np.empty(d), np.empty(n), np.empty(d)


@njit(**_JIT)
def localmax_step(x, B, gamma, P, use_P, r, rule, out, work):
    """Localmax, one step (science.md §1, this package's reading of [LM]).

    Neighbour set N_i = {j : s_ij >= cut_i} with cut_i from :func:`neighbour_cut` (additive:
    max_k s_ik - r); x_i <- x_i + gamma (mean_{j in N_i} x_j - x_i), the mean over indices.
    With r = 0 the arithmetic is that of :func:`hardmax_step` with tol = 0 and index ties, so
    the two agree bit for bit.
    """
    n, d = x.shape
    bx, s, target = work
    for i in range(n):
        best = _row_scores(x, B, i, bx, s)
        _mean_above(x, s, neighbour_cut(rule, best, r), False, 0.0, target)
        _move(x, i, target, gamma, P, use_P, out)


# --------------------------------------------------------------------------------------------
# Stopping events, evaluated on a configuration
# --------------------------------------------------------------------------------------------


@njit(**_JIT)
def _dist2(a, b):
    acc = 0.0
    for k in range(a.shape[0]):
        diff = a[k] - b[k]
        acc += diff * diff
    return acc


@njit(**_JIT)
def hull_work(n, d):
    """Scratch buffers of :func:`_outside_hull` for up to n points in R^d (one set per chain)."""
    return (
        np.empty((n, d)),
        np.empty(d + 2, np.int64),
        np.empty(d + 2),
        np.empty(d + 2),
        np.empty((d + 3, d + 3)),
        np.empty(d + 3),
        np.empty(d),
    )


@njit(**_JIT)
def _affine_min(q, S, k, a, M, rhs):
    """a[:k] = the affine weights of the min-norm point of aff{q[S[0]], ..., q[S[k-1]]}.

    Solves [G 1; 1' 0] [a; mu] = [0; 1] with G_ij = <q_Si, q_Sj> by Gaussian elimination with
    partial pivoting (k <= d + 1, so the system is tiny).
    """
    d = q.shape[1]
    K = k + 1
    for i in range(k):
        for j in range(k):
            acc = 0.0
            for m in range(d):
                acc += q[S[i], m] * q[S[j], m]
            M[i, j] = acc
        M[i, k] = 1.0
        M[k, i] = 1.0
        rhs[i] = 0.0
    M[k, k] = 0.0
    rhs[k] = 1.0
    for c in range(K):
        piv = c
        for r in range(c + 1, K):
            if abs(M[r, c]) > abs(M[piv, c]):
                piv = r
        if piv != c:
            for j in range(K):
                M[c, j], M[piv, j] = M[piv, j], M[c, j]
            rhs[c], rhs[piv] = rhs[piv], rhs[c]
        for r in range(c + 1, K):
            f = M[r, c] / M[c, c]
            for j in range(c, K):
                M[r, j] -= f * M[c, j]
            rhs[r] -= f * rhs[c]
    for c in range(K - 1, -1, -1):
        acc = rhs[c]
        for j in range(c + 1, K):
            acc -= M[c, j] * rhs[j]
        rhs[c] = acc / M[c, c]
    for i in range(k):
        a[i] = rhs[i]


@njit(**_JIT)
def hull_dist2(p, pts, members, stop, work):
    """dist(p, conv{pts[j] : j in members})^2, or, as soon as it is known to be <= ``stop``, some
    value <= ``stop`` (pass stop < 0 for the distance itself).

    Wolfe's (1976) min-norm-point algorithm on q_j = pts[j] - p: a finite active-set method that
    keeps a corral S of at most d + 1 affinely independent points and the min-norm point x of
    conv(q_S); it stops when the Wolfe gap |x|^2 - min_j <x, q_j> is below _HULL_EPS * max |q_j|^2
    (x is then the projection up to rounding) or when S spans R^d (then p is inside). Exact where
    Frank-Wolfe-type certificates stall on thin hulls. Since |x|^2 >= dist^2, it answers "inside"
    as soon as |x|^2 <= stop. The min-norm point x (the projection minus p) is left in work[6].
    """
    q, S, w, a, M, rhs, x = work
    m = members.shape[0]
    d = p.shape[0]
    scale = 0.0
    best, jbest = np.inf, 0
    for r in range(m):
        acc = 0.0
        for k in range(d):
            q[r, k] = pts[members[r], k] - p[k]
            acc += q[r, k] * q[r, k]
        scale = max(scale, acc)
        if acc < best:
            best, jbest = acc, r
    if best <= stop:
        return best
    S[0] = jbest
    w[0] = 1.0
    size = 1
    for k in range(d):
        x[k] = q[jbest, k]
    xx = best
    for _ in range(_HULL_MAX_ITER):
        j, lo = -1, np.inf
        for r in range(m):
            acc = 0.0
            for k in range(d):
                acc += x[k] * q[r, k]
            if acc < lo:
                lo, j = acc, r
        if xx - lo <= _HULL_EPS * scale or size == d + 1:
            break
        fresh = True
        for i in range(size):
            if S[i] == j:
                fresh = False
        if not fresh:  # rounding: the best vertex is already in the corral
            break
        S[size] = j
        w[size] = 0.0
        size += 1
        while True:  # minor cycles: move towards the affine minimiser, drop points that hit zero
            _affine_min(q, S, size, a, M, rhs)
            interior = True
            for i in range(size):
                if a[i] <= _HULL_EPS:
                    interior = False
            if interior:
                for i in range(size):
                    w[i] = a[i]
                break
            theta = 1.0
            for i in range(size):
                if a[i] <= _HULL_EPS and w[i] - a[i] > 0.0:
                    theta = min(theta, w[i] / (w[i] - a[i]))
            kept = 0
            for i in range(size):
                wi = theta * a[i] + (1.0 - theta) * w[i]
                if wi > _HULL_EPS:
                    S[kept] = S[i]
                    w[kept] = wi
                    kept += 1
            if kept == 0:  # only through rounding
                kept = 1
                w[0] = 1.0
            size = kept
            tot = 0.0
            for i in range(size):
                tot += w[i]
            for i in range(size):
                w[i] /= tot
            if size == 1:
                break
        xx = 0.0
        for k in range(d):
            acc = 0.0
            for i in range(size):
                acc += w[i] * q[S[i], k]
            x[k] = acc
            xx += acc * acc
        if xx <= stop:
            return xx
    if size == d + 1:
        return 0.0
    return xx


@njit(**_JIT)
def _outside_hull(p, pts, members, r2, work):
    """Is dist(p, conv{pts[j] : j in members})^2 > r2?  (see :func:`hull_dist2`)"""
    return hull_dist2(p, pts, members, r2, work) > r2


@njit(**_JIT)
def event_hit(ev, c, x, work):
    """Does the configuration x of chain c satisfy the stopping event ``ev`` (an EventArrays)?

    LEAVE_BALL: some |x_i - centers_i| > radii_i.  REACH: every |x_i - centers_i| <= radii_i.
    LEAVE_HULL: some dist(x_i, conv{centers_j : groups_j == groups_i}) > radii_i, with the members
    of group g in members[starts[g]:starts[g + 1]].  COLLAPSE: diameter of x <= scalar.
    CLUSTERS: at most ``at_most`` connected components of {cos(x_i, x_j) >= scalar}. Centers
    and radii are chain c's rows (or the shared row 0).
    """
    n = x.shape[0]
    code = ev.code
    centers = _row(ev.centers, c)
    radii = _row(ev.radii, c)
    if code == LEAVE_BALL:
        for i in range(n):
            if _dist2(x[i], centers[i]) > radii[i] * radii[i]:
                return True
        return False
    if code == REACH:
        for i in range(n):
            if not _dist2(x[i], centers[i]) <= radii[i] * radii[i]:
                return False
        return True
    if code == LEAVE_HULL:
        for i in range(n):
            g = ev.groups[i]
            own = ev.members[ev.starts[g] : ev.starts[g + 1]]
            if _outside_hull(x[i], centers, own, radii[i] * radii[i], work):
                return True
        return False
    if code == COLLAPSE:
        lim = ev.scalar * ev.scalar
        for i in range(n):
            for j in range(i + 1, n):
                if not _dist2(x[i], x[j]) <= lim:
                    return False
        return True
    if code == CLUSTERS:
        return cluster_count(x, ev.scalar) <= ev.at_most
    return False


@njit(inline="always")
def clusters_reached(ev, c, x, t):
    """The CLUSTERS event at time t: records the cluster count's levels (ev.levels[c]) and
    says whether it is at most ev.at_most."""
    m = cluster_count(x, ev.scalar)
    if c < ev.levels.shape[0]:
        record_levels(ev.levels[c], m, t)
    return m <= ev.at_most


# --------------------------------------------------------------------------------------------
# Driver: many chains in parallel
# --------------------------------------------------------------------------------------------


@njit(inline="always")
def _row(a, c):
    """a[c] for per-chain arrays, a[0] for shared ones (leading size 1)."""
    if a.shape[0] > 1:
        return a[c]
    return a[0]


@njit(inline="always")
def step_tokens(x, B, beta, gamma, P, use_P, u, s, out, pw, G, T):
    """:func:`chain_step` with its blocks of tokens (and of the Gram) split over T threads, then
    the pending picks in token order; ``pw`` and ``G`` are the last two buffers of
    :func:`chain_work`. Same bits as chain_step at any T. Inlined into :func:`_advance_tokens`,
    whose parallel compilation runs the prange loops on threads."""
    n, d = x.shape
    nb = (n + _ROWS - 1) // _ROWS
    gram = _use_gram(x, B, G)
    if gram:
        ng = G.shape[0]
        for q in prange(T):
            _gram(x, G, np.empty((d, _ROWS)), q * ng // T, (q + 1) * ng // T)
    for q in prange(T):
        _chain_blocks(
            x,
            B,
            beta,
            gamma,
            P,
            use_P,
            u,
            out,
            block_work(n, d),
            G,
            gram,
            q * nb // T,
            (q + 1) * nb // T,
            pw[0],
        )
    _resolve_pending(x, B, beta, gamma, P, use_P, u, s, out, pw)


@njit(inline="always")
def _stopped(ev, c, x, work, t, steps, done):
    """Whether chain c meets the event ``ev`` after the step from time t; if so, it is recorded
    as stopped at step t + 1."""
    if ev.code == NO_EVENT:
        return False
    if ev.code == CLUSTERS:
        hit = clusters_reached(ev, c, x, t + 1)
    else:
        hit = event_hit(ev, c, x, work)
    if hit:
        steps[c] = t + 1
        done[c] = True
        return True
    return False


@njit(parallel=True, **_JIT)
def _advance_tokens(X, state, dyn, sched, t0, nsteps, ev, steps, done, T):
    """:func:`advance` for SA_P with fewer chains than threads: chains one after the other, each
    step's blocks of tokens (and of the Gram) split over the threads. A token's arithmetic does
    not depend on which thread runs its block, so the bits are those of the chain-parallel path."""
    C, n, d = X.shape
    B = dyn.B
    P = dyn.P
    beta = dyn.beta
    use_P = dyn.use_P
    gammas = sched.gammas
    cw = chain_work(n, d)
    pw, G = cw[-2], cw[-1]
    out = np.empty((n, d))
    u = np.empty(n)
    work = hull_work(n, d)
    for c in range(C):
        if done[c]:
            continue
        x = X[c]
        st = state[c]
        for t in range(t0, t0 + nsteps):
            gamma = gammas[t - t0 if gammas.shape[0] > 1 else 0]
            for i in range(n):
                u[i] = next_uniform(st)
            step_tokens(x, B, beta, gamma, P, use_P, u, st, out, pw, G, T)
            x[:, :] = out
            if _stopped(ev, c, x, work, t, steps, done):
                break


@njit(parallel=True, **_JIT)
def advance(X, state, dyn, sched, t0, nsteps, ev, steps, done, threads=1):
    """Advance every chain c with ``done[c]`` False by up to ``nsteps`` steps, in place.

    ``X`` (C, n, d) holds the current configurations and ``state`` (C, 4) the chains' streams;
    ``dyn`` (a :class:`Dynamics`) is the model, and the step taken from global time t
    (t0 <= t < t0 + nsteps) uses ``sched.gammas[t - t0]``, or ``sched.gammas[0]`` if it has one
    entry (constant step); the localmax margin r_t is taken from ``sched.margins`` in the same way
    (shared by all chains). After each step the event ``ev`` (an :class:`EventArrays`) is checked;
    a chain that meets it records ``steps[c]`` (the number of steps taken since time 0) and stops.
    Chains never interact: the result of chain c does not depend on the thread count or on how
    the steps are split into calls. With fewer SA_P chains than ``threads`` (pass numba's thread
    count), the threads share each step's tokens instead (:func:`_advance_tokens`).
    """
    C, n, d = X.shape
    kind = dyn.kind
    if kind == CHAIN and C < threads and n > _ROWS:
        _advance_tokens(X, state, dyn, sched, t0, nsteps, ev, steps, done, threads)
        return
    # one name per field, bound before the parallel loop: numba's parallel lowering does not write
    # back through arrays unpacked from a tuple (``a, b = t``), so drivers never unpack one
    B = dyn.B
    P = dyn.P
    beta = dyn.beta
    use_P = dyn.use_P
    by_point = dyn.by_point
    tol = dyn.tol
    rule = dyn.rule
    gammas = sched.gammas
    margins = sched.margins
    for c in prange(C):
        if done[c]:
            continue
        x = X[c]
        out = np.empty((n, d))
        u = np.empty(n)
        work = hull_work(n, d)
        cw = chain_work(n, d)
        fw = flow_work(n, d)
        hw = hardmax_work(n, d)
        lw = localmax_work(n, d)
        st = state[c]
        for t in range(t0, t0 + nsteps):
            gamma = gammas[t - t0 if gammas.shape[0] > 1 else 0]
            if kind == CHAIN:
                for i in range(n):
                    u[i] = next_uniform(st)
                chain_step(x, B, beta, gamma, P, use_P, u, st, out, cw)
            elif kind == FLOW:
                flow_step(x, B, beta, gamma, P, use_P, out, fw)
            elif kind == LOCALMAX:
                r = margins[t - t0 if margins.shape[0] > 1 else 0]
                localmax_step(x, B, gamma, P, use_P, r, rule, out, lw)
            else:
                hardmax_step(x, B, gamma, P, use_P, by_point, tol, out, hw)
            x[:, :] = out
            if _stopped(ev, c, x, work, t, steps, done):
                break


@njit(parallel=True, **_JIT)
def events_at(X, ev, out):
    """out[c] = whether configuration X[c] already satisfies the event ``ev`` (time 0)."""
    C, n, d = X.shape
    for c in prange(C):
        if ev.code == CLUSTERS:
            out[c] = clusters_reached(ev, c, X[c], 0)
        else:
            out[c] = event_hit(ev, c, X[c], hull_work(n, d))


@njit(parallel=True, **_JIT)
def cross_weights(X, B, beta, labels, weight, z):
    """Per configuration X[c]: over tokens i and picks j with labels[c, j] != labels[c, i], the
    largest exponent beta (s_ij - max_k s_ik) in z[c] (-inf if there is no such pair) and the
    largest weight exp of it in weight[c], computed with the operations of chain_step, so that
    weight[c] == 0 exactly when chain_step can draw no such pick from X[c]. O(n) memory per
    configuration."""
    C, n, d = X.shape
    for c in prange(C):
        x = X[c]
        bx = np.empty(d)
        s = np.empty(n)
        t = np.empty(1)
        w = np.empty(1)
        top = -np.inf
        for i in range(n):
            best = _row_scores(x, B, i, bx, s)
            for j in range(n):
                if labels[c, j] != labels[c, i]:
                    top = max(top, beta * (s[j] - best))
        z[c] = top
        t[0] = top
        exp_nonpositive(t, w, np.empty(1))
        weight[c] = w[0] if top > -np.inf else 0.0


@njit(parallel=True, **_JIT)
def neighbour_sets(X, dyn, margin, out):
    """out[c, i, j] = whether j is in the neighbour (leader) set of token i in configuration X[c].

    ``dyn`` is the model's :class:`Dynamics`. LOCALMAX: N_i = {j : s_ij >= cut} with
    :func:`neighbour_cut` (``dyn.rule``, margin r). HARDMAX:
    L_i = {j : s_ij >= max_k s_ik - tol max_k |s_ik|}, every index within the tolerance (the
    ``ties`` mode only changes how leaders are averaged). The scores and thresholds are computed
    with the same operations as :func:`localmax_step` and :func:`hardmax_step`, so these are
    exactly the sets that a step from X[c] uses.
    """
    C, n, d = X.shape
    B = dyn.B
    kind = dyn.kind
    rule = dyn.rule
    tol = dyn.tol
    for c in prange(C):
        x = X[c]
        bx = np.empty(d)
        s = np.empty(n)
        for i in range(n):
            best = _row_scores(x, B, i, bx, s)
            if kind == LOCALMAX:
                cut = neighbour_cut(rule, best, margin)
            else:
                scale = 0.0
                for j in range(n):
                    scale = max(scale, abs(s[j]))
                cut = best - tol * scale
            for j in range(n):
                out[c, i, j] = not s[j] < cut
