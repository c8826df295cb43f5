"""Numba kernels of the attention dynamics on the unit sphere S^{d-1} (docs: models#models-sphere).

Pure functions over arrays, like the other kernels files, whose picks (:mod:`.euclidean_steps`) and
score loops (:mod:`.scores`) they reuse; :mod:`.sphere_family` gives their steps to the drivers.
Tokens are rows of an n×d array of unit vectors; scores are s_ij = <B x_i, x_j> (B = KᵀQ in the
<Q x_i, K x_j> of [GLPR]); N(y) = y / |y|. Kind codes and :class:`~.params.SphereDynamics` are
in :mod:`.params`.

- :func:`sphere_flow_step`: one step of the deterministic flow. The attention output of token i is
  Attn(x)_i = Σ_h V_h Σ_j w^h_ij x_j with w^h_ij = e^{β s^h_ij} / Z^h_i (softmax, (SA):
  Z^h_i = Σ_k e^{β s^h_ik}) or / n (unnormalised, (USA)), j ≤ i only when causal (j < i when
  strict); positional options (docs: models#sphere-positional): each weight times the ALiBi
  weight a_ij = e^{−(λ/n)|i−j|}, (USA)'s Z_i = Σ_j a_ij over the attended j, and (USA)'s scale
  e^{β (c_i − offset)} (offset 1: the e^{−β}-scaled field). Post-LN:
  x_i ← N(x_i + dt Attn(x)_i). RK4: the classical Runge-Kutta step of ẋ_i = P⊥_{x_i} Attn(x)_i,
  P⊥_x y = y − <x, y> x, then N. Pre-LN: x_i ← x_i + dt Attn(N(x))_i, the tokens normalised
  before attention and the residual stream left as it is. Peri-LN: x_i ← x_i + dt N(Attn(N(x))_i)
  (normalised before and after attention). nGPT: x_i ← N(x_i + h N(Attn(x)_i)), h = dt α.
  Mix-LN's steps are post-LN's or pre-LN's, LN-scaling's post-LN's with a step that decays; the
  equations and their sources: docs: models#models-sphere, :class:`metastab.SphereFlow`.
- :func:`chain_step`: the finite-temperature chain with LayerNorm: token i picks j with
  probability softmax_j(β s_ij) (the pick of ``steps.chain_step``, exact to full relative
  precision) and moves to N(x_i + γ (V x_j − x_i)); when that increment leaves x_i unchanged
  bit for bit (a self-pick or a pick of a coincident token with V = I) the token stays exactly
  where it is, unnormalised, so such picks are exact no-ops.

The flow computes in the fused arithmetic of :mod:`.arith` (each multiply-add one fma, the exp
``arith.exp_fma``); so does the chain's pick, that of ``steps.chain_step``, while its V x_j and
move are products and sums rounded as written. Every sum runs in a fixed order (scores and
B x_i: k ascending; weighted sums: j ascending; the flow's norms and projections: eight partial
sums over k, see :func:`_dot8`; the chain's norm: k ascending), so
:mod:`metastab.kernels.reference.sphere` repeats them bit for
bit; loops run across tokens or across k, never reduce in a vector register, and ``fastmath`` is
off. The flow's scores and weighted sums run in the register tiles of :mod:`.tiles`, and the
flow computes on transposed states (d×n), so that its loops over tokens run along rows.
"""

import math

import numpy as np
from numba import njit, prange

from ..arith import exp_fma, fma
from ..cache import njit_keyed
from ..params import JIT as _JIT
from ..params import JIT_NO_NRT as _JIT_NO_NRT
from ..params import MIX_LN, NGPT, PERI_LN, POST_LN, PRE_LN, RK4, SHIFT_SPREAD, UNNORMALIZED
from .euclidean_steps import chain_step as _steps_chain_step
from .euclidean_steps import chain_work as _steps_chain_work
from .scores import ROWS as _ROWS
from .scores import score_loops
from .tiles import block_sums, gram, gram_block, inverse_norms, normalise, scaled_sums

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()

# the flow's score loops, in fused arithmetic (see arith)
_, _bx_loop = score_loops(fma)


@_jit(**_JIT)
def _gram(x, G, bxt, b0, b1, beta, shift):
    """The symmetric Gram of blocks b0 <= b < b1, or its weights (``tiles.gram``)."""
    gram(x, G, bxt, b0, b1, beta, shift)


@_jit(**_JIT)
def _block_bx(x, B, i0, r1, plain, bxt):
    """bxt[k, r] = (B x_{i0 + r})_k (``scores.score_loops``' block_bx, fused)."""
    _bx_loop(x, B, i0, r1, plain, bxt)


# The Gram of B = I holds each pair once (see steps._gram) for n a multiple of _ROWS up to
# this many tokens (n^2 scores per chain); from 2 blocks on it saves work.
_GRAM_MAX_N = 2048


@_jit(**_JIT_NO_NRT)
def _gram_blocks(n):
    """The number of blocks of the flow's Gram (B = I) for n tokens, 0 where it has none."""
    return n // _ROWS if n % _ROWS == 0 and _ROWS < n <= _GRAM_MAX_N else 0


@_jit(**_JIT)
def thread_works(T, n, d):
    """Scratch buffers of :func:`_velocity_blocks` for T threads: each array with a leading axis
    of T, allocated once per run."""
    return (
        np.empty((T, d, _ROWS)),  # bxt: (B x_i)_k of a block of tokens, then its sums Σ_j w_ij x_j
        np.empty((T, n * _ROWS)),  # W: scores, then weights, of a block: W[j _ROWS + r]
        np.empty((T, 4, _ROWS)),  # the row maxima, the weight totals, the scales, a row of V g
    )


@_jit(**_JIT)
def sphere_flow_work(n, d, T=1):
    """Scratch buffers of :func:`sphere_flow_step` for n tokens in R^d, with those of T threads that
    share a step's blocks. The flow computes on states transposed, d×n: every loop over tokens
    then runs along a row and vectorises."""
    g = _gram_blocks(n)
    return (
        np.empty((d, n)),  # xt: the state transposed
        np.empty((g, n * _ROWS)),  # the blocked Gram (B = I), where it pays
        np.empty((4, d, n)),  # the four velocities of RK4, transposed (the first: post-LN's)
        np.empty((d, n)),  # a stage of RK4, transposed
        thread_works(T, n, d),
        np.empty(n),  # the squared norms s_jj = <x_j, x_j> (see _common_shift), then <a_i, b_i>
        np.empty((8, n)),  # the partial sums of _dot8
        np.ones((1, n)),  # the weights' totals are their sums against ones (tiles.block_sums)
        np.empty(n + _ROWS),  # the positional weights a_m = e^{-(λ/n) m} (_positional_weights)
    )


@_jit(**_JIT_NO_NRT)
def _squared_norms(xt, norms):
    """norms[j] = s_jj = <x_j, x_j> (k ascending from +0.0, one fma each: the Gram's diagonal
    bit for bit) for the columns x_j of xt."""
    d, n = xt.shape
    for j in range(n):
        norms[j] = 0.0
    for k in range(d):
        for j in range(n):
            norms[j] = fma(xt[k, j], xt[k, j], norms[j])


@_jit(**_JIT_NO_NRT)
def _common_shift(xt, beta, norms, normed=False):
    """The shift c of every score for B = I, or NaN where the flow takes the row maxima:
    c = max_j s_jj, the squared norms s_jj of :func:`_squared_norms` (in ``norms`` already with
    ``normed``, else written there), if β ≥ 0 and
    β (c − min_j s_jj) <= SHIFT_SPREAD. By Cauchy–Schwarz s_ij <= |x_i| |x_j| <= c, so no weight
    e^{β (s_ij − c)} exceeds 1 (up to rounding), while the diagonal's keep every total >= e^{-64};
    one shift for all rows spares the pass over the scores for their row maxima. Softmax weights
    do not depend on the shift; unit vectors (post-LN and pre-LN attention) have c − min s_jj of
    a few ulp. NaN where a norm is NaN."""
    n = xt.shape[1]
    if not normed:
        _squared_norms(xt, norms)
    hi = norms[0]
    lo = norms[0]
    for j in range(1, n):
        hi = max(hi, norms[j])
        lo = min(lo, norms[j])
    if beta >= 0.0 and beta * (hi - lo) <= SHIFT_SPREAD:
        return hi
    return np.nan


@_jit(**_JIT_NO_NRT)
def _positional_weights(alibi, n, apos):
    """apos[m] = a_m = e^{-(λ/n) m} (``arith.exp_fma`` of −((λ/n) m)) for 0 <= m < len(apos):
    the ALiBi weight a_ij = a_{|i − j|} of a pair of tokens, λ = ``alibi`` (the padding of a
    short last block reads m up to n + _ROWS − 2)."""
    rate = alibi / n
    for m in range(apos.shape[0]):
        apos[m] = exp_fma(-(rate * m))


@njit(inline="always")
def _first_attended(j, i0, causal, strict):
    """The first lane r of the block at i0 whose token i0 + r attends to token j: j <= i0 + r
    (causal) or j < i0 + r (strict), clipped to [0, _ROWS]; 0 without a mask."""
    if not causal:
        return 0
    return min(max(j - i0 + 1 if strict else j - i0, 0), _ROWS)


@njit(inline="always")
def _block_weights(S, W, p, lo, best, beta):
    """W[p + r] = exp(β (S[p + r] − best[r])) for lo <= r < _ROWS (``arith.exp_fma``). S is W
    itself or another array, never a different part of W: LLVM then vectorises the loop (with S
    a view that might overlap W it would not)."""
    if lo == 0:  # a constant trip count: LLVM vectorises the loop in full, while one of a
        for r in range(_ROWS):  # variable count below 32 runs scalar (as does one of 16, unrolled)
            W[p + r] = exp_fma(beta * (S[p + r] - best[r]))
    else:
        for r in range(lo, _ROWS):
            W[p + r] = exp_fma(beta * (S[p + r] - best[r]))


@_jit(**_JIT_NO_NRT)
def _velocity_blocks(
    xt, G, gram, Bs, Vs, beta, shift, attention, causal, strict, alibi, positional, offset,
    plain_B, plain_V, project, outT, bw, P, dots, b0, b1,
):  # fmt: skip
    """outT[:, i] = Attn(x)_i, or P⊥_{x_i} Attn(x)_i with ``project`` (module notes), for the
    tokens of blocks b0 <= b < b1 (token i in block i // _ROWS); ``xt`` is the state x
    transposed (d×n, as outT) and, with ``gram``, G its blocked Gram (of weights where the shift
    is common); P and dots hold :func:`_dot8`'s sums of the blocks' tokens. Blocks only read x,
    so they may run on different threads.

    Tokens go in blocks of _ROWS (the last one padded with zeros) held side by side, so that
    every loop runs across the block and vectorises while each token's sums keep the reference's
    order: scores s_ij (k ascending) and weighted sums Σ_j w_ij x_jk (j ascending, by the same
    loop on the transposed state), each term one fused multiply-add; weights
    w_ij = exp(β (s_ij − c_i)) by ``arith.exp_fma`` (times the ALiBi weight a_{|i−j|} of
    :func:`_positional_weights`, in bw[4], where ``alibi`` is not 0), their totals in increasing
    j, with c_i the
    common ``shift`` of :func:`_common_shift` (B = I; NaN: none) or else max_j s_ij. A common
    shift keeps the weights symmetric bit for bit, so for B = I the Gram (``tiles.gram``, or
    ``tiles.gram_block`` for a single block) holds them, each pair's exp taken once. Where causal
    masking hides j > i (``strict``: j >= i), its weight is exactly 0, which leaves every sum of
    a finite state unchanged bit for bit. The sums are scaled by 1 / total (softmax) or
    e^{β (c_i − offset)} / Z_i (USA: Z_i = n, or with ``positional`` the sum of the attended
    a_ij in increasing j), and by 0 for a token that attends to none (token 0, strict); so
    are the products by V_h (q ascending, one fma each), across the block's tokens too. With one
    block (n = ROWS), one head and V = I the tiles scale the sums as they store them, straight
    into outT (``tiles.scaled_sums``: the same bits, without a pass over them)."""
    d, n = xt.shape
    x = xt.T  # token j's coordinates x[j, k]: the score loops read them one at a time
    bxt, W, rows, ones, apos = bw
    best, total, scale, vg = rows[0], rows[1], rows[2], rows[3]
    weighted = alibi != 0.0  # a_ij = 1 where the slope is 0: no pass over the weights
    H = Bs.shape[0]
    common = shift == shift
    for b in range(max(b0, 0), b1):  # non-negative: no wraparound of negative indices
        i0 = b * _ROWS
        r1 = min(_ROWS, n - i0)
        for h in range(H):
            ready = False  # S holds the weights already (B = I, a common shift)
            if gram:
                S = G[b]
                ready = common
            elif plain_B and n == _ROWS:  # one full block: B x_i = x_i, held in xt already
                gram_block(xt, W, beta, shift)
                S = W
                ready = common
            else:
                _block_bx(x, Bs[h], i0, r1, plain_B, bxt)
                for r in range(r1, _ROWS):  # the padding of a short last block
                    for k in range(d):
                        bxt[k, r] = 0.0
                block_sums(bxt, x, 0, W)
                S = W
            for r in range(_ROWS):
                best[r] = shift
            if not common:
                for r in range(_ROWS):
                    best[r] = -np.inf
                for j in range(n):  # causal: token i0 + r reads j <= i0 + r, i.e. r >= j - i0
                    lo = _first_attended(j, i0, causal, strict)
                    for r in range(lo, _ROWS):
                        best[r] = max(best[r], S[j * _ROWS + r])
            Wb = S if ready else W  # the weights
            for j in range(n):
                lo = _first_attended(j, i0, causal, strict)
                p = j * _ROWS
                if causal:
                    for r in range(lo):
                        Wb[p + r] = 0.0
                if gram and not ready:
                    _block_weights(G[b], W, p, lo, best, beta)
                elif not ready:
                    _block_weights(W, W, p, lo, best, beta)
            if weighted:  # w_ij a_{|i-j|}, into W (the Gram of weights is read by every head)
                for j in range(n):
                    p = j * _ROWS
                    for r in range(_ROWS):
                        W[p + r] = Wb[p + r] * apos[abs(i0 + r - j)]
                Wb = W
            # the totals in increasing j, each term a fused multiply-add by 1: the sum itself
            block_sums(Wb.reshape((n, _ROWS)), ones, 0, total)
            if attention == UNNORMALIZED and positional:  # Z_i = Σ_j a_ij, j ascending (vg)
                for r in range(_ROWS):
                    vg[r] = 0.0
                for j in range(n):
                    for r in range(_first_attended(j, i0, causal, strict), _ROWS):
                        vg[r] += apos[abs(i0 + r - j)] if weighted else 1.0
            for r in range(_ROWS):
                if attention == UNNORMALIZED:
                    if positional:
                        scale[r] = math.exp(beta * (best[r] - offset)) / vg[r]
                    else:
                        scale[r] = math.exp(beta * (best[r] - offset)) / n
                else:
                    scale[r] = 1.0 / total[r]
            if strict and i0 == 0:  # token 0 attends to none: Attn(x)_0 = 0
                scale[0] = 0.0
            if plain_V and H == 1 and n == _ROWS:  # outT is the block: the tiles scale and
                scaled_sums(Wb.reshape((n, _ROWS)), xt, outT.reshape(d * _ROWS), scale)
                continue  # store the weighted sums there
            # the weighted sums across the block's tokens, from the transposed state, scaled
            acc = bxt.reshape(d * _ROWS)  # free once the scores are computed
            block_sums(Wb.reshape((n, _ROWS)), xt, 0, acc)
            # the loops across the block's tokens run on views of rows: an index from 0 spares
            # numba's wraparound of negative indices, which keeps LLVM from vectorising
            for k in range(d):
                p = k * _ROWS
                if plain_V:
                    o = outT[k, i0 : i0 + r1]
                    for r in range(r1):
                        g = acc[p + r] * scale[r]
                        o[r] = g if h == 0 else o[r] + g
                else:
                    for r in range(_ROWS):
                        acc[p + r] *= scale[r]
            if not plain_V:
                for k in range(d):  # (V_h g_i)_k across the block, q ascending
                    for r in range(_ROWS):
                        vg[r] = 0.0
                    for q in range(d):
                        v = Vs[h, k, q]
                        p = q * _ROWS
                        for r in range(_ROWS):
                            vg[r] = fma(v, acc[p + r], vg[r])
                    o = outT[k, i0 : i0 + r1]
                    for r in range(r1):
                        o[r] = vg[r] if h == 0 else o[r] + vg[r]
        if project:
            _dot8(xt, outT, i0, i0 + r1, P, dots)
            db = dots[i0 : i0 + r1]
            for k in range(d):
                o = outT[k, i0 : i0 + r1]
                xk = xt[k, i0 : i0 + r1]
                for r in range(r1):
                    o[r] = fma(-db[r], xk[r], o[r])


@njit(inline="always")
def _velocity(
    xt, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B, plain_V,
    project, outT, work, G, T, normed=False
):  # fmt: skip
    """:func:`_velocity_blocks` for every token of the transposed state ``xt`` (d×n, the result
    in ``outT`` likewise): on this thread with T None, else with the blocks (and those of the
    Gram) split over T threads by :func:`_velocity_split` (the bits do not depend on T). T None
    compiles no parallel code; ``G``: the blocked Gram ``work[1]``, or None where the flow's n
    has none (see :func:`sphere_flow_work`), which compiles no Gram code; ``normed``: work[5] holds
    the squared norms of xt already (:func:`_normalise_fused` leaves them; the split path with T
    takes them afresh).

    Inlined into the schemes' steps (numba IR): a dispatcher this thin would be one more call
    level, whose library numba optimises and emits with the whole tree below it (a cold sphere
    token-split run: about 51 -> 43 s of CPU; the chain path with a Gram and RK4: 44 -> 40 s)."""
    if T is not None:
        _velocity_split(xt, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset,
                        plain_B, plain_V, project, outT, work, T)  # fmt: skip
        return
    n = xt.shape[1]
    gram = False
    shift = _common_shift(xt, beta, work[5], normed) if plain_B else np.nan
    bxt, W, rows = work[4]
    if alibi != 0.0:
        _positional_weights(alibi, n, work[8])
    first = np.int64(0)  # not the literal 0: the split path's types, so both share one compile
    if G is not None:
        gram = plain_B and G.shape[0] > 0
        if gram:
            _gram(xt.T, G, bxt[0], first, G.shape[0], beta, shift)
    _velocity_blocks(
        xt, work[1], gram, Bs, Vs, beta, shift, attention, causal, strict, alibi, positional,
        offset, plain_B, plain_V, project, outT, (bxt[0], W[0], rows[0], work[7], work[8]),
        work[6], work[5], first, (n + _ROWS - 1) // _ROWS,
    )  # fmt: skip


@_jit(parallel=True, **_JIT)
def _velocity_split(
    xt, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B, plain_V,
    project, outT, work, T,
):  # fmt: skip
    """:func:`_velocity` with the blocks of tokens (and of the Gram) split over T threads."""
    n = xt.shape[1]
    G = work[1]
    gram = plain_B and G.shape[0] > 0
    shift = _common_shift(xt, beta, work[5]) if plain_B else np.nan
    nb = (n + _ROWS - 1) // _ROWS
    # arrays, not tuples, enter the parallel loops
    bxt, W, rows = work[4]
    P, dots, ones, apos = work[6], work[5], work[7], work[8]
    if alibi != 0.0:
        _positional_weights(alibi, n, apos)
    if gram:
        ng = G.shape[0]
        for q in prange(T):
            for b in range(q, ng, T):  # dealt round: block b computes n - 32 b columns
                _gram(xt.T, G, bxt[q], b, b + 1, beta, shift)
    for q in prange(T):
        _velocity_blocks(
            xt,
            G,
            gram,
            Bs,
            Vs,
            beta,
            shift,
            attention,
            causal,
            strict,
            alibi,
            positional,
            offset,
            plain_B,
            plain_V,
            project,
            outT,
            (bxt[q], W[q], rows[q], ones, apos),
            P,
            dots,
            q * nb // T,
            (q + 1) * nb // T,
        )


@_jit(**_JIT_NO_NRT)
def _dot8(at, bt, i0, i1, P, out):
    """out[i] = <a_i, b_i> for i0 <= i < i1, tokens the columns of at and bt (d×n), as eight
    partial sums p_m = Σ_{k ≡ m (mod 8)} a_ik b_ik (k ascending, one fma each, in P[m, i]) added
    as ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)): eight independent chains, where one
    chain of d fmas would wait d times on the fma's latency; the loops run across tokens."""
    d = at.shape[0]
    m = i1 - i0
    for q in range(8):
        pq = P[q, i0:i1]
        for i in range(m):
            pq[i] = 0.0
    for k in range(d):
        pq = P[k % 8, i0:i1]
        a = at[k, i0:i1]
        b = bt[k, i0:i1]
        for i in range(m):
            pq[i] = fma(a[i], b[i], pq[i])
    _dot8_sum(P, i0, i1, out)


@_jit(**_JIT_NO_NRT)
def _dot8_sum(P, i0, i1, out):
    """out[i] = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)), p_q = P[q, i], i0 <= i < i1."""
    p0, p1, p2, p3 = P[0, i0:i1], P[1, i0:i1], P[2, i0:i1], P[3, i0:i1]
    p4, p5, p6, p7 = P[4, i0:i1], P[5, i0:i1], P[6, i0:i1], P[7, i0:i1]
    o = out[i0:i1]
    for i in range(i1 - i0):
        o[i] = ((p0[i] + p1[i]) + (p2[i] + p3[i])) + ((p4[i] + p5[i]) + (p6[i] + p7[i]))


@_jit(**_JIT_NO_NRT)
def _normalise_fused(h, Kt, xt, out, work):
    """The flow's LayerNorm x_i <- N(y_i) = y_i (1 / |y_i|) of y_i = x_i + h k_i (one fma per
    coordinate), |y_i|^2 summed as :func:`_dot8` sums, for the tokens, the columns of xt and
    Kt (d×n): by the register tiles of ``tiles.normalise``, the result in place of xt and
    copied to ``out`` (n×d; it may be the step's input, read by now) unless out is None. Leaves
    the squared norms of the new state in work[5] (:func:`_common_shift`'s, for the next step)."""
    normalise(h, Kt, xt, work[6][0], work[5])
    if out is not None:
        _transpose(xt, out)


@_jit(**_JIT_NO_NRT)
def _transpose(x, xt):
    """xt = xᵀ."""
    n, d = x.shape
    for k in range(d):
        for j in range(n):
            xt[k, j] = x[j, k]


@njit(inline="always")
def _normalise_row(y, i, out):
    """out_i = y_i / |y_i| (the chain's LayerNorm), the norm summed in k ascending."""
    d = y.shape[1]
    a = 0.0
    for k in range(d):
        a += y[i, k] * y[i, k]
    r = math.sqrt(a)
    for k in range(d):
        out[i, k] = y[i, k] / r


@njit(inline="always")
def renormalise_moved(x, i, out):
    """The LayerNorm of the chain's move: out_i ← N(out_i), unless out_i == x_i bit for bit (the
    move changed nothing: the token stays exactly where it is, so such picks are no-ops)."""
    d = x.shape[1]
    same = True
    for k in range(d):
        same = same and out[i, k] == x[i, k]
    if not same:
        _normalise_row(out, i, out)


# The scheme steps are inlined (numba IR) into the kernels that loop over steps, as _velocity is
# into them, and for the same reason (a cold token-split run: about 45 -> 41 s of CPU); called
# from Python (sphere_flow_step) each is still a cached kernel of its own.
@_jit(inline="always", **_JIT_NO_NRT)
def _pre_ln(
    x, Bs, Vs, beta, dt, attention, causal, strict, alibi, positional, offset, plain_B, plain_V,
    out, work, G, T,
):  # fmt: skip
    """Pre-LN: x_i ← x_i + dt Attn(N(x))_i (not renormalised); ``out`` may be x. With x None the
    step reads the state from work[0], transposed (d×n), and with out None writes it there."""
    xt, K, y = work[0], work[2], work[3]
    d, n = xt.shape
    if x is not None:
        _transpose(x, xt)
    _normalised_copy(xt, y, work)
    _velocity(y, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B,
              plain_V, False, K[0], work, G, T, True)  # fmt: skip
    if out is None:
        for k in range(d):
            for i in range(n):
                xt[k, i] = fma(dt, K[0, k, i], xt[k, i])
    else:
        for i in range(n):
            for k in range(d):
                out[i, k] = fma(dt, K[0, k, i], xt[k, i])


@_jit(**_JIT_NO_NRT)
def _normalised_copy(xt, y, work):
    """y = N(x) for the columns of xt (d×n): y_i = x_i (1 / |x_i|), |x_i|^2 summed as
    :func:`_dot8` sums; leaves <y_i, y_i> (k ascending from +0.0, one fma each:
    :func:`_squared_norms`'s bits) in work[5], for the common shift of the attention that reads
    y. One pass of ``tiles.normalise``, in registers 8 tokens at a time, on y = −0.0 + 1 x_i
    (exactly x_i, the zeros' signs too), after a pass that only writes y: the norms, then the
    scaled copy with its squared norms, took two passes over x and its partial sums in memory
    (at n = 32: 0.36 against 0.30 µs at d = 32, 1.9 against 1.7 µs at d = 128, one thread)."""
    d, n = xt.shape
    for k in range(d):
        for i in range(n):
            y[k, i] = -0.0
    normalise(1.0, xt, y, work[6][0], work[5])


@_jit(inline="always", **_JIT_NO_NRT)
def _peri_ln(
    x, Bs, Vs, beta, dt, attention, causal, strict, alibi, positional, offset, plain_B, plain_V,
    out, work, G, T,
):  # fmt: skip
    """Peri-LN: x_i ← x_i + dt N(Attn(N(x))_i), LayerNorm before and after attention, the residual
    stream not renormalised (x and out as for :func:`_pre_ln`). N(A_i) = A_i (1 / |A_i|), |A_i|^2
    summed as :func:`_dot8` sums, 1 / |A_i| in registers (``tiles.inverse_norms``) and the
    product taken in the residual's pass; an A_i = 0 gives NaN (the engine refuses a non-finite
    state)."""
    xt, K, y = work[0], work[2], work[3]
    d, n = xt.shape
    if x is not None:
        _transpose(x, xt)
    _normalised_copy(xt, y, work)
    _velocity(y, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B,
              plain_V, False, K[0], work, G, T, True)  # fmt: skip
    c = work[6][0]
    inverse_norms(K[0], c)
    if out is None:
        for k in range(d):
            for i in range(n):
                xt[k, i] = fma(dt, K[0, k, i] * c[i], xt[k, i])
    else:
        for i in range(n):
            for k in range(d):
                out[i, k] = fma(dt, K[0, k, i] * c[i], xt[k, i])


@_jit(inline="always", **_JIT_NO_NRT)
def _ngpt(
    x, Bs, Vs, beta, dt, attention, causal, strict, alibi, positional, offset, plain_B, plain_V,
    out, work, G, T,
):  # fmt: skip
    """nGPT: x_i ← N(x_i + dt N(Attn(x)_i)), ``dt`` the product h = dt α of the flow's step and
    nGPT's α (the schedule's size, see SphereFlow.schedule); x and out as for :func:`_post_ln`."""
    xt, K = work[0], work[2]
    if x is not None:
        _transpose(x, xt)
    _velocity(xt, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B,
              plain_V, False, K[0], work, G, T, x is None)  # fmt: skip
    _unit_columns(K[0], work)
    _normalise_fused(dt, K[0], xt, out, work)


@_jit(**_JIT_NO_NRT)
def _unit_columns(Kt, work):
    """Kt[:, i] ← Kt[:, i] (1 / |Kt[:, i]|) (the LayerNorm of each attention output), |Kt[:, i]|^2
    summed as :func:`_dot8` sums: ``tiles.normalise`` with 0 times Kt added to Kt (Kt itself);
    it overwrites work[5]."""
    normalise(0.0, Kt, Kt, work[6][0], work[5])


@_jit(inline="always", **_JIT_NO_NRT)
def _post_ln(
    x, Bs, Vs, beta, dt, attention, causal, strict, alibi, positional, offset, plain_B, plain_V,
    out, work, G, T,
):  # fmt: skip
    """Post-LN: x_i ← N(x_i + dt Attn(x)_i); ``out`` may be x (x and out None: see
    :func:`_pre_ln`; with x None work[5] holds the state's squared norms, as the step leaves
    them)."""
    xt, K = work[0], work[2]
    if x is not None:
        _transpose(x, xt)
    _velocity(xt, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B,
              plain_V, False, K[0], work, G, T, x is None)  # fmt: skip
    _normalise_fused(dt, K[0], xt, out, work)


@_jit(inline="always", **_JIT_NO_NRT)
def _rk4(
    x, Bs, Vs, beta, dt, attention, causal, strict, alibi, positional, offset, plain_B, plain_V,
    out, work, G, T,
):  # fmt: skip
    """RK4 on ẋ = P⊥ Attn(x), followed by N; ``out`` may be x (x and out None: see
    :func:`_post_ln`)."""
    xt, K, y = work[0], work[2], work[3]
    d, n = xt.shape
    half = 0.5 * dt
    if x is not None:
        _transpose(x, xt)
    _velocity(xt, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B,
              plain_V, True, K[0], work, G, T, x is None)  # fmt: skip
    for q in range(1, 4):
        h = dt if q == 3 else half
        for k in range(d):
            for i in range(n):
                y[k, i] = fma(h, K[q - 1, k, i], xt[k, i])
        _velocity(y, Bs, Vs, beta, attention, causal, strict, alibi, positional, offset, plain_B,
                  plain_V, True, K[q], work, G, T)  # fmt: skip
    for k in range(d):
        for i in range(n):
            K[3, k, i] = ((K[0, k, i] + 2.0 * K[1, k, i]) + 2.0 * K[2, k, i]) + K[3, k, i]
    _normalise_fused(dt / 6.0, K[3], xt, out, work)


def sphere_flow_step(
    x, Bs, Vs, beta, dt, attention, scheme, causal, strict, alibi, positional, offset, plain_B,
    plain_V, out, work,
):  # fmt: skip
    """One step of the flow on the sphere (module notes) by its scheme (:func:`scheme_step`:
    :func:`_post_ln`, :func:`_rk4`, :func:`_pre_ln`, :func:`_peri_ln` or :func:`_ngpt`; ``dt``
    the step's size as the schedule gives it), on one thread. Synchronous: every token reads the
    old x. Called from Python: it runs the scheme's step with the arguments the drivers pass to
    it with an event (the Gram as in ``sphere_family``), so it compiles only that scheme, and
    the same code as the drivers'."""
    G = work[1] if _gram_blocks(x.shape[0]) > 0 else None
    scheme_step(scheme)(x, Bs, Vs, beta, dt, attention, causal, strict, alibi, positional, offset,
                        plain_B, plain_V, out, work, G, None)  # fmt: skip


def scheme_step(scheme):
    """The step function of the kernels' scheme code (Mix-LN has none of its own: each of its
    steps is post-LN's or pre-LN's, by the schedule; ValueError for it and for unknown codes)."""
    steps = {POST_LN: _post_ln, PRE_LN: _pre_ln, RK4: _rk4, PERI_LN: _peri_ln, NGPT: _ngpt}
    if scheme not in steps:
        why = "Mix-LN steps by POST_LN or PRE_LN" if scheme == MIX_LN else "unknown"
        raise ValueError(f"scheme code {scheme!r} has no step of its own ({why})")
    return steps[scheme]


@_jit(**_JIT)
def chain_work(n, d):
    """Scratch buffers of :func:`chain_step` for n tokens in R^d: those of ``steps.chain_step``
    (its blocked Gram included), the picks and a row."""
    return _steps_chain_work(n, d), np.empty(n, np.int64), np.empty(d)


@_jit(**_JIT_NO_NRT)
def chain_step(x, B, V, plain_V, beta, gamma, u, s, out, work, G=None):
    """One step of the chain on the sphere (module notes): token i picks j by the rule of
    ``steps.chain_step`` (uniform ``u[i]``, rarely further uniforms of the stream ``s``, tokens
    in increasing order), taken by that step's blocks of tokens (``G``: its blocked Gram, or None
    where n has none), and moves to N(x_i + γ (V x_j − x_i)), or stays put when the increment
    changes nothing. Synchronous."""
    n, d = x.shape
    sw, picks, target = work
    _steps_chain_step(x, B, beta, gamma, B, False, u, s, out, sw, G, picks)
    for i in range(n):
        j = picks[i]
        for k in range(d):
            if plain_V:
                target[k] = x[j, k]
            else:
                a = 0.0
                for q in range(d):
                    a += V[k, q] * x[j, q]
                target[k] = a
        for k in range(d):
            out[i, k] = x[i, k] + gamma * (target[k] - x[i, k])
        renormalise_moved(x, i, out)
