"""One step of each model, driven by supplied uniforms: pure functions over arrays (no objects, no
globals but constants, no printing), compared bit for bit with
:mod:`metastab.kernels.reference.euclidean`.

Each step has a ``*_work(n, d)`` factory of its scratch buffers. Arithmetic is written as explicit
loops in a fixed order and ``fastmath`` stays off: the reference repeats the same operations in the
same order, which is what makes bit-for-bit tests possible. Equations: docs: models#models-rd.
"""

import numpy as np
from numba import njit

from .. import leaves
from ..arith import exp_fma, fma, mul
from ..cache import njit_keyed
from ..leaves import RARE_CUT
from ..leaves import TWO_53 as _TWO_53
from ..params import JIT, JIT_NO_NRT, RELATIVE
from ..streams import next_u64, next_uniform
from .scores import ROWS as _ROWS
from .scores import score_loops
from .tiles import gram, lane_scores, lane_sums

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()

# the score loops of every step here, one fma per term (see scores)
_, _bx_loop = score_loops(fma)


@_jit(**JIT_NO_NRT)
def _row_scores(x, B, i, bx, s):
    """s[j] = <B x_i, x_j> for all j; returns max_j s[j]."""
    n, d = x.shape
    for k in range(d):
        acc = 0.0
        for m in range(d):
            acc = fma(B[k, m], x[i, m], acc)
        bx[k] = acc
    best = -np.inf
    for j in range(n):
        acc = 0.0
        for k in range(d):
            acc = fma(bx[k], x[j, k], acc)
        s[j] = acc
        if acc > best:
            best = acc
    return best


@_jit(**JIT_NO_NRT)
def copy_rows(src, dst):
    """dst[i, k] = src[i, k] (an explicit loop: a slice assignment would compile numba's shape
    check and its error path into every kernel)."""
    n, d = src.shape
    for i in range(n):
        for k in range(d):
            dst[i, k] = src[i, k]


@njit(inline="always")
def _move_from(x, i, src, j, gamma, P, use_P, out):
    """out_i = x_i + gamma (y - x_i), one fma per coordinate, or x_i + P (y - x_i) for a step
    matrix (its sum one fma per term, m ascending from +0.0), y the row j of ``src``.

    Written as an increment so that y == x_i is an exact no-op (a self-pick moves nothing).
    Inlined: a call per token, with its arrays passed field by field, cost W1 a fifth of its
    step.
    """
    d = x.shape[1]
    if use_P:
        for k in range(d):
            acc = 0.0
            for m in range(d):
                acc = fma(P[k, m], src[j, m] - x[i, m], acc)
            out[i, k] = x[i, k] + acc
    else:
        for k in range(d):
            out[i, k] = fma(gamma, src[j, k] - x[i, k], x[i, k])


@_jit(**JIT_NO_NRT)
def _move(x, i, target, gamma, P, use_P, out):
    """:func:`_move_from` towards the point ``target``."""
    _move_from(x, i, target.reshape((1, target.shape[0])), 0, gamma, P, use_P, out)


# Every weight is exp_fma(beta (s_ij - max_j s_ij)) (arith.exp_fma: Cody-Waite reduction, a
# degree-13 polynomial by fmas, within 1 ulp of exp; no call, so LLVM vectorises its loops).
# Results below 2^-1022 (exponents below -708.74) are flushed to 0: such a pick is never drawn
# (engine.check_resolution warns where that matters).


@_jit(**JIT_NO_NRT)
def exp_nonpositive(z, out):
    """out[j] = exp(z[j]) for z[j] <= 0 with the kernels' exp (``arith.exp_fma``)."""
    for j in range(z.shape[0]):
        out[j] = exp_fma(z[j])


@_jit(**JIT_NO_NRT)
def _softmax_weights(s, best, beta, w):
    """w[j] = exp(beta (s[j] - max s)) (max-shifted: no overflow at any beta); returns sum."""
    n = s.shape[0]
    for j in range(n):
        w[j] = exp_fma(beta * (s[j] - best))
    total = 0.0
    for j in range(n):
        total += w[j]
    return total


# The exact Bernoulli trial and the rare pick (RARE_CUT: leaves' notes), written once for both
# targets (leaves). The rare pick, scalar code of one call site that rarely runs, is inlined
# (numba IR), as is _pick_slow: as functions of their own each was one more module that numba
# optimises and emits with the tree below it (a cold demo: _resolve_pending's compilation
# 2.1-2.6 -> 1.9-2.0 s).
bernoulli = njit(_nrt=False)(leaves.exact_bernoulli(next_u64, mul))
_pick_rare = njit(inline="always", _nrt=False)(leaves.rare_pick(fma, mul, next_uniform, bernoulli))


@_jit(inline="always", **JIT_NO_NRT)
def _pick_slow(x, B, beta, i, ui, s, bx, sc, w):
    """Token i's pick by the rule of chain_step, scalar, with the stream ``s`` at hand: the
    Bernoulli trial with its extra draws, then :func:`_pick_rare` or the inversion over the
    other picks. The row's weights and sums are recomputed with the operations of
    _chain_blocks (same bits). Runs only for the tokens that _chain_blocks leaves pending."""
    best = _row_scores(x, B, i, bx, sc)
    _softmax_weights(sc, best, beta, w)
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
        return _pick_rare(w, 0, 1, n, RARE_CUT, s)
    thr = max(fma(ui, tot, -rare), 0.0)
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


@_jit(**JIT_NO_NRT)
def has_gram(n, d):
    """Whether :func:`chain_work` allocates a blocked Gram for n tokens in R^d: else the
    drivers pass chain_step no Gram and compile none of its code."""
    return n % _ROWS == 0 and d >= _GRAM_MIN_D and n <= _GRAM_MAX_N


# Blocks hold a multiple of this many lanes (one AVX-512 vector of doubles): fewer than _ROWS
# tokens in one block padded to it, more in blocks of _ROWS, the last one padded.
_LANES = 8


@_jit(**JIT)
def chain_work(n, d):
    """Scratch buffers of :func:`chain_step` for n tokens in R^d: those of one block of tokens
    (:func:`block_work`), those of the pending picks (a flag per token and one scalar row for
    :func:`_pick_slow`) and the blocked Gram matrix of :func:`_gram` (empty where
    :func:`chain_step` never uses it)."""
    g = n // _ROWS if has_gram(n, d) else 0
    pending = (np.zeros(n, np.bool_), np.empty(d), np.empty(n), np.empty(n))
    return block_work(n, d) + (pending, np.empty((g, n * _ROWS)))


@_jit(**JIT)
def block_work(n, d):
    """Scratch buffers of :func:`_chain_blocks` (one set per thread that runs blocks)."""
    return thread_work(thread_works(1, n, d), 0)


@_jit(**JIT)
def thread_works(T, n, d):
    """T sets of :func:`block_work` buffers in one tuple of arrays with a leading axis of T, so
    that a run that splits its steps over T threads allocates them once (see thread_work)."""
    rows = _ROWS if n >= _ROWS else (n + _LANES - 1) // _LANES * _LANES
    return (
        np.empty((T, d, rows)),
        np.empty((T, rows * n)),
        np.empty((T, rows)),
        np.empty((T, rows)),
        np.empty((T, rows), np.int64),
        np.empty((T, rows)),
        np.empty((T, rows)),
    )


@_jit(**JIT)  # returns views: they must carry their references
def thread_work(tw, q):
    """The q-th set of :func:`thread_works`: the buffers of one :func:`block_work`."""
    return (
        tw[0][q],
        tw[1][q],
        tw[2][q],
        tw[3][q],
        tw[4][q],
        tw[5][q],
        tw[6][q],
    )


@_jit(**JIT)
def _plain(x, B):
    """Whether B is the identity and x finite. Then (B x_i)_k == x_ik up to the sign of zero,
    which no score can see (a sum that starts at +0.0 never becomes -0.0): chain_step may use
    x_i for B x_i, and s_ij = s_ji bit for bit."""
    d = B.shape[0]
    for k in range(d):
        for m in range(d):
            if B[k, m] != (1.0 if k == m else 0.0):
                return False
    bad = False
    for v in x.ravel():
        bad |= not v - v == 0.0  # NaN iff v is not finite; an OR needs no order: it vectorises
    return not bad


@_jit(**JIT_NO_NRT)
def _paths(x, B, G):
    """(plain, gram): whether chain_step may use x_i for B x_i (:func:`_plain`), and whether it
    takes the scores from the symmetric Gram as well (G allocated: n a multiple of _ROWS; never
    with G None)."""
    plain = _plain(x, B)
    if G is None:
        return plain, False
    return plain, plain and G.shape[0] * _ROWS == x.shape[0]


@_jit(**JIT_NO_NRT)
def _gram(x, G, bxt, b0, b1):
    """The symmetric Gram of blocks b0 <= b < b1 (``tiles.gram``)."""
    gram(x, G, bxt, b0, b1, 0.0, np.nan)  # scores: no weights


# The passes of _chain_blocks over one block of tokens i0 + r (r < r1), W[j * r1 + r] holding
# token i0 + r's j-th entry. Each is compiled on its own: LLVM vectorises these small loops across
# r better than one large inlined body.


@_jit(**JIT_NO_NRT)
def _block_bx(x, B, i0, r1, plain, bxt):
    """bxt[k, r] = (B x_{i0 + r})_k (``scores.score_loops``' block_bx, unfused)."""
    _bx_loop(x, B, i0, r1, plain, bxt)


@_jit(**JIT_NO_NRT)
def _lane_scores(x, bxt, lanes, W, best):
    """W[j lanes + r] = s_{i0 + r, j} = sum_k bxt[k, r] x_jk (k ascending, from +0.0, one fma per
    term) and best[r] its maximum over j, for a block of 8, 16, 24 or _ROWS lanes, in the
    register tiles of :mod:`.tiles`: the plain loops kept their partial sums in memory and ran
    blocks narrower than 32 lanes in LLVM's narrower remainder loops (one thread: W1's step
    took a quarter less time, SA_P at n = 256, d = 16 with B != I half)."""
    for r in range(lanes):
        best[r] = -np.inf
    lane_scores(bxt, x, W, best)  # bxt: d × lanes


@_jit(**JIT_NO_NRT)
def _row_max(W, n, lanes, best):
    """best[r] = max_j W[j lanes + r], taken in any order: a maximum of scores is exact (no score
    is -0.0, and a row with a NaN score has NaN weights whatever its maximum)."""
    for r in range(lanes):
        best[r] = -np.inf
    j4 = 0
    while j4 + 4 <= n:  # four j per pass: one load and store of best[r] per four entries
        b0 = j4 * lanes
        b1 = b0 + lanes
        b2 = b1 + lanes
        b3 = b2 + lanes
        for r in range(lanes):
            best[r] = max(best[r], max(max(W[b0 + r], W[b1 + r]), max(W[b2 + r], W[b3 + r])))
        j4 += 4
    for j in range(j4, n):
        base = j * lanes
        for r in range(lanes):
            best[r] = max(best[r], W[base + r])


@njit(inline="always")
def _exps(W, n, lanes, best, beta):
    """W[j lanes + r] <- exp(beta (W[j lanes + r] - best[r])) (the kernels' exp): the exponents,
    then the exps in one flat loop (see _block_weights)."""
    for j in range(n):
        base = j * lanes
        for r in range(lanes):
            W[base + r] = beta * (W[base + r] - best[r])
    for q in range(n * lanes):  # in place: through two views LLVM would fear an overlap
        W[q] = exp_fma(W[q])


@_jit(**JIT_NO_NRT)
def _block_weights(W, n, r1, best, beta, rare, keep):
    """W[j r1 + r] <- the cumulative sum over j' <= j of the weights exp(beta (s_{i j'} - best[r]))
    (the kernels' exp) that are not rare (>= RARE_CUT); rare[r] and keep[r] the totals of the rare
    and of the other weights, each summed in increasing j from +0.0. (Adding 0.0 for a rare weight
    leaves a sum as it is: without rare weights this is the plain cumulative sum.)

    Three passes: the exponents, the exps in one flat loop, the sums. With the exps in the loop of
    the sums (four j a pass) W1's step took 96 ns a token-step on an AVX2 core against 76-80 ns
    in passes (same bits; minima of alternating runs): four exps in flight with their sums and
    the exp's constants overflowed AVX2's 16 vector registers (70 vector spills and reloads in
    the compiled function, 28 now), while a flat loop of exps runs at the exp's throughput
    (docs: performance)."""
    _exps(W, n, r1, best, beta)
    for r in range(r1):
        rare[r] = 0.0
        keep[r] = 0.0
    for j in range(n):
        base = j * r1
        for r in range(r1):
            v = W[base + r]
            small = v < RARE_CUT
            a = keep[r] + (0.0 if small else v)
            W[base + r] = a
            keep[r] = a
            rare[r] += v if small else 0.0


@_jit(**JIT_NO_NRT)
def _count_below(W, n, r1, thr, cnt):
    """cnt[r] = #{j : W[j r1 + r] <= thr[r]}."""
    for r in range(r1):
        cnt[r] = 0
    j4 = 0
    while j4 + 4 <= n:  # four j per pass: integer counts, in any order
        b0 = j4 * r1
        b1 = b0 + r1
        b2 = b1 + r1
        b3 = b2 + r1
        for r in range(r1):
            c = thr[r]
            cnt[r] += (W[b0 + r] <= c) + (W[b1 + r] <= c) + (W[b2 + r] <= c) + (W[b3 + r] <= c)
        j4 += 4
    for j in range(j4, n):
        base = j * r1
        for r in range(r1):
            cnt[r] += W[base + r] <= thr[r]


@_jit(**JIT_NO_NRT)
def _pick_block(
    x, B, beta, gamma, P, use_P, u, out, work, W, gram, plain, b, lanes, pend, picks=None
):
    """The picks and moves of the tokens i0 <= i < i0 + r1 (i0 = b lanes, r1 = min(lanes, n - i0))
    held in the ``lanes`` lanes of block b (W[j lanes + r] for token i0 + r); lanes past r1 hold
    score-0 padding (bxt = 0) that no pick reads. ``lanes`` is a multiple of _LANES, so that the
    vectorised loops across lanes never fall to their scalar remainder. With ``gram`` W holds the
    block's scores (from the Gram), else they are computed here. With ``picks`` (an int array)
    the picks are written there instead of moving the tokens (NaN weights: flagged pending, for
    the scalar rule). Returns the number of tokens flagged pending."""
    n, d = x.shape
    bxt, _, best, thr, cnt, rare, keep = work
    i0 = b * lanes
    r1 = min(lanes, n - i0)
    if gram:
        _row_max(W, n, lanes, best)
    else:
        _block_bx(x, B, i0, r1, plain, bxt)
        for k in range(d):
            for r in range(r1, lanes):
                bxt[k, r] = 0.0
        _lane_scores(x, bxt, lanes, W, best)
    _block_weights(W, n, lanes, best, beta, rare, keep)
    maybe = 0
    for r in range(r1):
        # the rare picks fill [0, rare) of the scale [0, rare + keep); u (rare + keep) >=
        # 2 rare implies U >= p (not rare), decided without computing p
        ra = rare[r]
        tot = ra + keep[r]
        e = fma(u[i0 + r], tot, -ra)
        thr[r] = e if e > 0.0 else 0.0
        maybe += u[i0 + r] * tot < 2.0 * ra
    held = 0
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
                held += 1
    _count_below(W, n, lanes, thr, cnt)
    for r in range(r1):
        i = i0 + r
        pick = cnt[r]
        if pick == n:  # rounding: the threshold reached the total
            pick = n - 1
            while pick > 0 and W[pick * lanes + r] == W[(pick - 1) * lanes + r]:
                pick -= 1
        if not keep[r] >= 1.0:  # NaN weights (finite ones sum to >= 1: the largest is 1)
            if picks is None:
                for k in range(d):
                    out[i, k] = np.nan
            else:
                pend[i] = True
                held += 1
            continue
        if picks is not None:
            picks[i] = pick  # a pending token's is replaced in _resolve_pending
        elif not (held and pend[i]):
            _move_from(x, i, x, pick, gamma, P, use_P, out)
    return held


@_jit(**JIT_NO_NRT)
def _chain_blocks(x, B, beta, gamma, P, use_P, u, out, work, G, gram, plain, b0, b1, pend):
    """:func:`chain_step`'s picks for the tokens of blocks b0 <= b < b1, as the token-parallel
    step runs them on each thread (:func:`_pick_block`; blocks of _ROWS tokens, or of _LANES
    where n < _ROWS, the last block padded); with ``gram`` the scores are read from G, else
    computed from x (from x_i itself where ``plain``, see _plain). A token
    whose pick may be rare, i.e. needs the stream, is only flagged in ``pend`` (for
    :func:`_resolve_pending`); returns the number flagged. Tokens only read x and draw nothing,
    so blocks may run on different threads.
    """
    rows = work[2].shape[0]
    held = 0
    for b in range(b0, b1):
        if G is None:  # (a constant of the compiled code: no Gram code)
            W = work[1]
        else:
            W = G[b] if gram else work[1]
        held += _pick_block(
            x, B, beta, gamma, P, use_P, u, out, work, W, gram, plain, b, rows, pend
        )
    return held


@_jit(**JIT_NO_NRT)
def _resolve_pending(x, B, beta, gamma, P, use_P, u, s, out, pw, picks=None):
    """The picks and moves (or, with ``picks``, the picks) of the tokens flagged by
    _chain_blocks, one after the other in increasing token order: the only place where a step
    draws from the stream ``s``, so the draws, and the bits, do not depend on how the blocks were
    run. Clears the flags."""
    pend, bx, sc, w = pw
    for i in range(x.shape[0]):
        if pend[i]:
            pend[i] = False
            pick = _pick_slow(x, B, beta, i, u[i], s, bx, sc, w)
            if picks is None:
                _move_from(x, i, x, pick, gamma, P, use_P, out)
            else:
                picks[i] = pick


# Inlined (numba IR) into the kernels that step chains, for the same reason as the loop over
# blocks below: a cold demo compiled 13.9-14.7 s instead of 15.9-16.7 s (compile events, two
# runs each), W1's speed unchanged. Called from Python, it is still a cached kernel.
@_jit(inline="always", **JIT_NO_NRT)
def chain_step(x, B, beta, gamma, P, use_P, u, s, out, work, G, picks=None):
    """SA_P, one synchronous step of the finite-beta chain ([FW] §5, eq. (SA_ℙ)).

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
    (beta (s_ij - max) below -708.74, see exp_nonpositive) are never picked. The tokens that may
    need the stream are flagged by the blocks and resolved afterwards in increasing token order
    (:func:`_resolve_pending`), so a chain's path is a function of its seed only, whatever the
    thread count.

    The work runs over blocks of tokens i held side by side (W[j * rows + r] for token i0 + r), so
    that every loop runs across tokens and vectorises, while each token's sums are accumulated
    in increasing j and k exactly as in the reference. Cumulative weights never decrease, so the
    first j whose cumulative weight exceeds the threshold is the count of those that do not.
    For B = I (and x finite) B x_i is x_i itself, and where n is a multiple of _ROWS the scores
    come from the symmetric Gram, each pair once (see _paths, _gram): ``G`` is ``work[-1]``, or
    None for an n that has no Gram (:func:`has_gram`), which compiles no Gram code. With
    ``picks`` (an int array of n) the step writes each token's pick j there and moves nothing
    (``out`` is not written): the chain on the sphere moves its tokens itself.
    """
    n = x.shape[0]
    work_b, pw = work[:-2], work[-2]
    plain, gram = _paths(x, B, G)
    if G is not None and gram:  # G None: a constant of the compiled code, no Gram code
        _gram(x, G, work_b[0], 0, G.shape[0])
    rows = work_b[2].shape[0]
    # _chain_blocks' loop over every block, written out: numba re-optimises each callee in
    # every caller's module, so a call level less cut the cold demo's compile by about 2 s
    held = 0
    for b in range((n + rows - 1) // rows):
        if G is None:  # (a constant of the compiled code: no Gram code)
            W = work_b[1]
        else:
            W = G[b] if gram else work_b[1]
        held += _pick_block(
            x, B, beta, gamma, P, use_P, u, out, work_b, W, gram, plain, b, rows, pw[0], picks
        )
    if held:
        _resolve_pending(x, B, beta, gamma, P, use_P, u, s, out, pw, picks)


@_jit(**JIT)
def softmax_flow_work(n, d):
    """Scratch buffers of :func:`softmax_flow_step` for n tokens in R^d: those of one block of
    tokens (:func:`block_work`), the state transposed, a block's weighted sums and a target row."""
    rows = _ROWS if n >= _ROWS else (n + _LANES - 1) // _LANES * _LANES
    return block_work(n, d), np.empty((d, n)), np.empty(d * rows), np.empty(d)


@_jit(**JIT_NO_NRT)
def _flow_weights(W, n, lanes, best, beta, total):
    """W[j lanes + r] <- exp(beta (W[j lanes + r] - best[r])) (the kernels' exp) and total[r]
    their sum over j, in increasing j from +0.0."""
    _exps(W, n, lanes, best, beta)
    for r in range(lanes):
        total[r] = 0.0
    for j in range(n):
        base = j * lanes
        for r in range(lanes):
            total[r] += W[base + r]


@_jit(**JIT_NO_NRT)
def softmax_flow_step(x, B, beta, gamma, P, use_P, out, work):
    """SA_beta, one deterministic softmax layer ([FW] §5, eq. (SA_β)):
    x_i <- x_i + gamma (sum_j softmax_j(beta s_ij) x_j - x_i), the mean computed as
    (sum_j w_ij x_j) / sum_j w_ij (one fma per term, j ascending).

    Over blocks of tokens side by side, as :func:`chain_step`: the scores and the weighted sums
    (from x transposed) in the register tiles of :mod:`.tiles`, each token's sums in the order
    of the reference."""
    n, d = x.shape
    bw, xt, acc, target = work
    bxt, W, best, _, _, _, total = bw
    rows = best.shape[0]
    plain = _plain(x, B)
    for k in range(d):
        for j in range(n):
            xt[k, j] = x[j, k]
    for b in range((n + rows - 1) // rows):
        i0 = b * rows
        r1 = min(rows, n - i0)
        _block_bx(x, B, i0, r1, plain, bxt)
        for k in range(d):
            for r in range(r1, rows):
                bxt[k, r] = 0.0
        _lane_scores(x, bxt, rows, W, best)
        _flow_weights(W, n, rows, best, beta, total)
        lane_sums(W.reshape((n, rows)), xt, acc)
        for r in range(r1):
            for k in range(d):
                target[k] = acc[k * rows + r] / total[r]
            _move(x, i0 + r, target, gamma, P, use_P, out)


@_jit(**JIT_NO_NRT)
def _same_point(x, j, k, tol):
    """Leaders j and k are one point: max-norm distance <= tol * max(|x_j|_inf, |x_k|_inf)."""
    diff = 0.0
    size = 0.0
    for m in range(x.shape[1]):
        diff = max(diff, abs(x[j, m] - x[k, m]))
        size = max(size, abs(x[j, m]), abs(x[k, m]))
    return diff <= tol * size


@_jit(**JIT_NO_NRT)
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


@_jit(**JIT)
def hardmax_work(n, d):
    """Scratch buffers of :func:`hardmax_step` for n tokens in R^d."""
    return np.empty(d), np.empty(n), np.empty(d)


@_jit(**JIT_NO_NRT)
def hardmax_step(x, B, gamma, P, use_P, by_point, tol, out, work):
    """SA_inf, one hardmax / Frank-Wolfe step ([FW] §1, eq. (SA_∞)).

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
        _mean_above(x, s, fma(-tol, scale, best), by_point, tol, target)
        _move(x, i, target, gamma, P, use_P, out)


@_jit(**JIT_NO_NRT)
def neighbour_cut(rule, best, r):
    """The localmax score threshold of one token: j is a neighbour of i iff s_ij >= cut.

    ADDITIVE: cut = max_k s_ik - r; RELATIVE: cut = max_k s_ik - r |max_k s_ik|. A new rule is one
    more branch here (and in ``reference.neighbour_cut``) and one more name in
    ``metastab.models.NEIGHBOUR_RULES``.
    """
    if rule == RELATIVE:
        return fma(-r, abs(best), best)
    return best - r


@_jit(**JIT)
def localmax_work(n, d):
    """Scratch buffers of :func:`localmax_step` for n tokens in R^d."""
    return np.empty(d), np.empty(n), np.empty(d)


@_jit(**JIT_NO_NRT)
def localmax_step(x, B, gamma, P, use_P, r, rule, out, work):
    """Localmax, one step (docs: models#models-rd, this package's reading of [LM]).

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
