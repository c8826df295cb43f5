"""One token's step of each model as CUDA device functions (numba.cuda), with the CPU's bits.

The arithmetic of every function here repeats, operation for operation, that of the CPU kernels
(:mod:`metastab.kernels.cpu.euclidean_steps`): the same xoshiro256** streams, the same FMA exp, the
same scores summed in increasing k from +0.0 (one fma per term), the same pick rule (rare picks
decided by an exact Bernoulli trial, the others by inversion of the cumulative weights). Every
product is :func:`~metastab.kernels.cuda.arith.mul`, rounded as written, and every fused
multiply-add an explicit :func:`~metastab.kernels.cuda.arith.fma`, as on the CPU: a device and
numba's CUDA simulator (this code run as Python with IEEE doubles) compute the CPU's operations
with the CPU's roundings, hence its bits.

Arrays are flat and token-minor: coordinate k of token i is x[xo + k n + i], and a chain's score
row of token i is W[j n + i]. The threads of a block, one token each, read and write their own
tokens side by side (coalesced in global memory, in distinct banks of shared memory: a row per
token, d doubles apart, put a warp's 32 reads in as few as one bank or 32 cache lines), while
all of them read the same x_j together (one broadcast). The loops walk such a row or column by
an index that advances by n (no product k n per access), passed as uint32
(:func:`~metastab.kernels.cuda.arith.ix`: no wraparound of negative indices; docs: gpu).
The streams, the exp, the Bernoulli trial and the rare pick are the CPU's own leaves
(:mod:`metastab.kernels.leaves`), compiled here over the device's arithmetic.
"""

import math

from numba import cuda

from .. import leaves
from ..leaves import RARE_CUT
from ..leaves import TWO_53 as _TWO_53
from ..params import RELATIVE
from .arith import add64, as_bits, fma, from_bits, ix, mul

# pick codes of chain_pick besides a token index
PENDING, NAN_PICK = -1, -2


# --------------------------------------------------------------------------------------------
# The leaves written once for both targets (leaves): streams, the exp, the exact pick
# --------------------------------------------------------------------------------------------

next_u64 = cuda.jit(device=True)(leaves.xoshiro_next(add64))
next_uniform = cuda.jit(device=True)(leaves.uniform_next(next_u64, mul))
exp_fused = cuda.jit(device=True)(leaves.exp_nonpositive(fma, mul, as_bits, from_bits))
bernoulli = cuda.jit(device=True)(leaves.exact_bernoulli(next_u64, mul))
_pick_rare = cuda.jit(device=True)(leaves.rare_pick(fma, mul, next_uniform, bernoulli))


@cuda.jit(device=True)
def _invert(W, i, n, thr):
    """The first j whose cumulative weight over the kept (not rare) weights of row i exceeds
    ``thr``, or, if rounding leaves none, the last j at which it grew (steps._pick_slow)."""
    cum = 0.0
    last = 0
    j = 0
    p = i
    while j < n:
        v = W[ix(p)]
        v = 0.0 if v < RARE_CUT else v
        if cum + v != cum or j == 0:
            last = j
        cum += v
        if cum > thr:
            return j
        j += 1
        p += n
    return last


@cuda.jit(device=True)
def _sums(W, i, n):
    """(S_rare, S_keep) of row i, each summed in increasing j."""
    rare = 0.0
    keep = 0.0
    end = i + n * n
    p = i
    while p < end:
        v = W[ix(p)]
        if v < RARE_CUT:
            rare += v
        else:
            keep += v
        p += n
    return rare, keep


@cuda.jit(device=True)
def scores(v, vo, x, xo, i, n, d, W):
    """W[j n + i] = <v, x_j> for every j (v_k = v[vo + k n], x_jk = x[xo + k n + j]), each
    summed in k ascending from +0.0, one fma per term. Four tokens j at a time: the four sums
    are independent and share each load of v."""
    end = vo + d * n
    j = 0
    while j + 4 <= n:
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        p = vo
        q = xo + j
        while p < end:  # k = 0 .. d - 1
            b = v[ix(p)]
            a0 = fma(b, x[ix(q)], a0)
            a1 = fma(b, x[ix(q + 1)], a1)
            a2 = fma(b, x[ix(q + 2)], a2)
            a3 = fma(b, x[ix(q + 3)], a3)
            p += n
            q += n
        W[ix(j * n + i)] = a0
        W[ix((j + 1) * n + i)] = a1
        W[ix((j + 2) * n + i)] = a2
        W[ix((j + 3) * n + i)] = a3
        j += 4
    while j < n:
        a = 0.0
        p = vo
        q = xo + j
        while p < end:
            a = fma(v[ix(p)], x[ix(q)], a)
            p += n
            q += n
        W[ix(j * n + i)] = a
        j += 1


@cuda.jit(device=True)
def weighted_sums(W, i, n, x, xo, d, out, oo):
    """out[oo + k n] = sum_j W[j n + i] x_jk for every k (x_jk = x[xo + k n + j]), each summed
    in j ascending from +0.0, one fma per term; four k at a time, sharing each load of the
    weight."""
    end = i + n * n
    k = 0
    while k + 4 <= d:
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        p = i
        q = xo + k * n
        while p < end:  # j = 0 .. n - 1
            w = W[ix(p)]
            a0 = fma(w, x[ix(q)], a0)
            a1 = fma(w, x[ix(q + n)], a1)
            a2 = fma(w, x[ix(q + 2 * n)], a2)
            a3 = fma(w, x[ix(q + 3 * n)], a3)
            p += n
            q += 1
        out[ix(oo + k * n)] = a0
        out[ix(oo + (k + 1) * n)] = a1
        out[ix(oo + (k + 2) * n)] = a2
        out[ix(oo + (k + 3) * n)] = a3
        k += 4
    while k < d:
        a = 0.0
        p = i
        q = xo + k * n
        while p < end:
            a = fma(W[ix(p)], x[ix(q)], a)
            p += n
            q += 1
        out[ix(oo + k * n)] = a
        k += 1


@cuda.jit(device=True)
def row_scores(x, xo, B, bx, i, n, d, W):
    """W[j n + i] = s_ij = <B x_i, x_j> (:func:`scores`), B x_i kept in bx[k n + i]; returns
    max_j s_ij."""
    for k in range(d):
        acc = 0.0
        for m in range(d):
            acc = fma(B[k, m], x[xo + m * n + i], acc)
        bx[k * n + i] = acc
    scores(bx, i, x, xo, i, n, d, W)
    best = -math.inf
    end = i + n * n
    p = i
    while p < end:
        acc = W[ix(p)]
        if acc > best:
            best = acc
        p += n
    return best


@cuda.jit(device=True)
def _weights(W, i, n, beta, best):
    """W[j n + i] = exp(beta (W[j n + i] - best)) for every j."""
    end = i + n * n
    p = i
    while p < end:
        W[ix(p)] = exp_fused(mul(beta, W[ix(p)] - best))
        p += n


@cuda.jit(device=True)
def chain_pick(x, xo, B, bx, beta, i, n, d, W, u):
    """Token i's SA_P pick ([FW] §5, eq. (SA_ℙ)) by the rule of steps.chain_step, from the
    uniform ``u``: a token index, PENDING when the exact Bernoulli trial needs the stream (then
    :func:`resolve_pick`, in token order), or NAN_PICK for non-finite weights. Leaves the
    weights exp(beta (s_ij - max_k s_ik)) in W."""
    best = row_scores(x, xo, B, bx, i, n, d, W)
    _weights(W, i, n, beta, best)
    rare, keep = _sums(W, i, n)
    tot = rare + keep
    if not keep >= 1.0:  # finite weights sum to >= 1 (the largest is 1)
        return NAN_PICK
    if (
        not mul(u, tot) >= mul(2.0, rare)
        and rare > 0.0
        and mul(u, _TWO_53) < mul(rare / tot, _TWO_53)
    ):
        return PENDING
    e = fma(u, tot, -rare)
    return _invert(W, i, n, e if e > 0.0 else 0.0)


@cuda.jit(device=True)
def resolve_pick(W, i, n, u, s):
    """The pick of a PENDING token from the weights left in W (steps._pick_slow): the Bernoulli
    trial with its extra draws from the stream ``s``, then the rare pick or the inversion."""
    rare, keep = _sums(W, i, n)
    tot = rare + keep
    if rare > 0.0 and bernoulli(rare / tot, u, s):
        return _pick_rare(W, i, n, n, RARE_CUT, s)
    return _invert(W, i, n, max(fma(u, tot, -rare), 0.0))


@cuda.jit(device=True)
def move(x, xo, i, tx, to, gamma, P, use_P, out, oo, n, d):
    """out_i = x_i + gamma (target - x_i), or x_i + P (target - x_i), the target's coordinate k
    being tx[to + k n]; an exact no-op when the target is x_i."""
    for k in range(d):
        if use_P:
            acc = 0.0
            for m in range(d):
                acc = fma(P[k, m], tx[to + m * n] - x[xo + m * n + i], acc)
            out[oo + k * n + i] = x[xo + k * n + i] + acc
        else:
            xk = x[xo + k * n + i]
            out[oo + k * n + i] = fma(gamma, tx[to + k * n] - xk, xk)


@cuda.jit(device=True)
def flow_target(x, xo, B, bx, beta, i, n, d, W):
    """SA_beta's target of token i ([FW] §5, eq. (SA_β)): sum_j softmax_j(beta s_ij) x_j, left
    in bx[k n + i] (cpu.euclidean_steps.softmax_flow_step)."""
    best = row_scores(x, xo, B, bx, i, n, d, W)
    _weights(W, i, n, beta, best)
    total = 0.0
    end = i + n * n
    p = i
    while p < end:
        total += W[ix(p)]
        p += n
    weighted_sums(W, i, n, x, xo, d, bx, i)
    for k in range(d):
        bx[k * n + i] = bx[k * n + i] / total


@cuda.jit(device=True)
def _same_point(x, xo, j, q, n, d, tol):
    """steps._same_point: max-norm distance <= tol max(|x_j|_inf, |x_q|_inf)."""
    diff = 0.0
    size = 0.0
    for m in range(d):
        a = x[xo + m * n + j]
        b = x[xo + m * n + q]
        diff = max(diff, abs(a - b))
        size = max(size, abs(a), abs(b))
    return diff <= mul(tol, size)


@cuda.jit(device=True)
def _mean_above(x, xo, W, i, n, d, cut, by_point, tol, bx):
    """bx[k n + i] = the mean of x_j over {j : s_ij >= cut} (steps._mean_above)."""
    for k in range(d):
        bx[k * n + i] = 0.0
    count = 0
    for j in range(n):
        if W[j * n + i] < cut:
            continue
        if by_point:
            seen = False
            for q in range(j):
                if W[q * n + i] >= cut and _same_point(x, xo, j, q, n, d, tol):
                    seen = True
                    break
            if seen:
                continue
        for k in range(d):
            bx[k * n + i] += x[xo + k * n + j]
        count += 1
    for k in range(d):
        bx[k * n + i] /= count


@cuda.jit(device=True)
def hardmax_target(x, xo, B, bx, i, n, d, W, by_point, tol):
    """SA_inf's target of token i ([FW] §1, eq. (SA_∞); steps.hardmax_step): the mean of
    the leaders within the relative tie tolerance, left in bx[k n + i]."""
    best = row_scores(x, xo, B, bx, i, n, d, W)
    scale = 0.0
    for j in range(n):
        scale = max(scale, abs(W[j * n + i]))
    _mean_above(x, xo, W, i, n, d, fma(-tol, scale, best), by_point, tol, bx)


@cuda.jit(device=True)
def localmax_target(x, xo, B, bx, i, n, d, W, r, rule):
    """Localmax's target of token i (steps.localmax_step, cut of steps.neighbour_cut), in bx."""
    best = row_scores(x, xo, B, bx, i, n, d, W)
    cut = fma(-r, abs(best), best) if rule == RELATIVE else best - r
    _mean_above(x, xo, W, i, n, d, cut, False, 0.0, bx)
