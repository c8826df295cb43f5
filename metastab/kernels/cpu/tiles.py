"""Register-tiled sums over blocks of tokens: the micro-kernel of the sphere flow's scores and
weighted sums.

:func:`block_sums` computes S[j ROWS + r] = Σ_k A[k, r] X[j, k] for ROWS = 32 lanes r side by
side (the block layout of :mod:`.scores`), each sum in k ascending from +0.0 with one fused
multiply-add per term, the order of ``scores.score_loops``' scores_block. Its tiles hold the
partial sums of 4 rows j × 32 lanes (AVX-512) or × 8 lanes (AVX2, a pass per 8 lanes) in
vector registers for the whole pass over k and store them once: LLVM vectorises only the
innermost loop of plain loops and keeps their partial sums in memory, which halves their
speed. The tiles are written in LLVM IR (``llvm.fma`` on
vectors of 8 doubles, one rounding per lane, as the scalar ``arith.fma``), so every sum's bits
are those of the scalar loops. :func:`scaled_sums` multiplies each stored sum by its lane's
scale, which spares the flow's single-block step a pass over its weighted sums; the tiles of
:func:`gram_block`'s triangle and of :func:`gram`'s other blocks store the exps of their sums
(``arith.exp_fma``'s operations on vectors, the same bits).

:func:`normalise` is the flow's LayerNorm across tokens in the same way: 8 lanes of tokens side
by side, the eight partial sums of each squared norm (``sphere._dot8``'s order) in vector
registers over the pass along k, where plain loops across tokens load and store them at every k
and bound the step by the cache's bandwidth.
"""

import math

from llvmlite import ir
from llvmlite.binding import get_host_cpu_features
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from .. import arith
from ..arith import fma
from ..cache import njit_keyed
from ..params import JIT_NO_NRT
from .scores import ROWS

__all__ = [
    "block_sums",
    "scaled_sums",
    "gram",
    "gram_block",
    "lane_scores",
    "lane_sums",
    "normalise",
]

_WIDTH = 8  # doubles per vector (AVX-512; narrower targets split each vector)
_VECS = ROWS // _WIDTH
# A tile is _TILE rows × _PASS vectors of 8 lanes per pass over k, its partial sums in registers.
# AVX-512 (32 registers of 8 doubles): 4 rows × 32 lanes, 16 accumulators. AVX2 (16 registers
# of 4 doubles): 4 rows × 8 lanes, 8 accumulators beside A's lanes and X's broadcast, a pass per
# 8 lanes: 2 rows × 32 lanes took all 16 registers and spilled at every k (block_sums at n = 32,
# d = 32, one thread: 4.2 µs, now 1.4 µs).
_TILE = 4
_PASS = 4 if get_host_cpu_features().get("avx512f", False) else 1


def _vfma(builder):
    """``llvm.fma`` on vectors of 8 doubles: one rounding per lane."""
    vec = ir.VectorType(ir.DoubleType(), _WIDTH)
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vec, [vec] * 3), f"llvm.fma.v{_WIDTH}f64"
    )


def _splat(builder, value):
    """The double ``value`` in every lane of a vector of 8."""
    vec = ir.VectorType(ir.DoubleType(), _WIDTH)
    b = builder.insert_element(cgutils.get_null_value(vec), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(
        b,
        ir.Constant(vec, ir.Undefined),
        ir.Constant(ir.VectorType(ir.IntType(32), _WIDTH), [0] * _WIDTH),
    )


def _vexp(builder, z):
    """``arith.exp_fma`` of each lane of the vector of 8 doubles z, operation for operation (the
    same IEEE operations in the same order: the same bits)."""
    f64, i64 = ir.DoubleType(), ir.IntType(64)
    vec, ivec = ir.VectorType(f64, _WIDTH), ir.VectorType(i64, _WIDTH)
    fma = _vfma(builder)

    def c(value):
        return ir.Constant(vec, [value] * _WIDTH)

    def ic(value):
        return ir.Constant(ivec, [value] * _WIDTH)

    z = builder.select(builder.fcmp_ordered("<", z, c(arith.Z_MIN)), c(arith.Z_MIN), z)
    shifted = builder.call(fma, [z, c(arith.LOG2E), c(arith.SHIFT)])
    k = builder.fsub(shifted, c(arith.SHIFT))
    nk = builder.fneg(k)
    r = builder.call(fma, [nk, c(arith.LN2_LO), builder.call(fma, [nk, c(arith.LN2_HI), z])])
    p = builder.call(fma, [c(arith.INV_FACT[13]), r, c(arith.INV_FACT[12])])
    for q in range(11, -1, -1):
        p = builder.call(fma, [p, r, c(arith.INV_FACT[q])])
    e = builder.sub(builder.bitcast(shifted, ivec), ic(arith.SHIFT_BITS))
    scale = builder.bitcast(builder.shl(builder.add(e, ic(1023)), ic(52)), vec)
    scale = builder.select(builder.icmp_signed(">=", e, ic(-1022)), scale, c(0.0))
    return builder.fmul(p, scale)


def _tile(rows, vecs=_VECS, stride=ROWS, top=False, scaled=False, exps=False):
    """The intrinsic tile(A, X, S, j, p, M) of ``rows`` rows: S[p + q stride + r] =
    Σ_k A[k, r] X[j + q, k] for q < rows, r < 8 ``vecs``, k < X.shape[1] ascending; with ``top``
    also M[r] = max(M[r], S[p + q stride + r]) over the rows; with ``scaled`` the sums times
    M[r] instead (each sum rounded, then its product: the bits of a scaling after the tile; M
    unused otherwise); with ``exps`` the weights exp(β (s − c)) of the sums s instead
    (``arith.exp_fma``'s bits), β and c two more arguments, last. ``vecs`` None:
    tile(A, X, S, j, p, M, nv, stride) takes nv and stride as arguments and makes one pass per
    vector in a loop of the IR (AVX2: one code for every width, which compiles in a fraction of
    the time of a code per width)."""

    def typed(A, X, S, M, extra):
        """The signature for these argument types (``extra``: nv and stride; then β and c with
        ``exps``), or None."""
        for arr in (A, X, S, M):
            if not (isinstance(arr, types.Array) and arr.dtype == types.float64):
                return None
        if A.layout != "C" or S.layout != "C" or A.ndim != 2 or X.ndim != 2 or S.ndim != 1:
            return None
        if M.layout != "C" or M.ndim != 1:
            return None
        floats = (types.float64,) * 2 if exps else ()
        return types.void(A, X, S, types.intp, types.intp, M, *(types.intp,) * extra, *floats)

    def codegen(context, builder, signature, args):
        a_ty, x_ty, s_ty = signature.args[:3]
        a = context.make_array(a_ty)(context, builder, args[0])
        x = context.make_array(x_ty)(context, builder, args[1])
        s = context.make_array(s_ty)(context, builder, args[2])
        j = context.cast(builder, args[3], signature.args[3], types.intp)
        p = context.cast(builder, args[4], signature.args[4], types.intp)
        m = context.make_array(signature.args[5])(context, builder, args[5])
        f64 = ir.DoubleType()
        vec = ir.VectorType(f64, _WIDTH)
        vptr = vec.as_pointer()
        fma = _vfma(builder)
        intp = context.get_value_type(types.intp)
        zero = ir.Constant(vec, [0.0] * _WIDTH)
        xs = cgutils.unpack_tuple(builder, x.strides, 2)
        xrow = [
            builder.gep(
                builder.bitcast(x.data, ir.IntType(8).as_pointer()),
                [builder.mul(builder.add(j, ir.Constant(intp, q)), xs[0])],
            )
            for q in range(rows)
        ]
        astride = cgutils.unpack_tuple(builder, a.strides, 2)[0]
        abase = builder.bitcast(a.data, ir.IntType(8).as_pointer())
        K = cgutils.unpack_tuple(builder, x.shape, 2)[1]
        sp = builder.gep(s.data, [p])
        if exps:
            beta, shift = (_splat(builder, v) for v in args[-2:])

        def one_pass(v0, width, row_stride):
            """The sums of vectors v0 .. v0 + width - 1 (v0, row_stride: IR values)."""
            vs = [builder.add(v0, ir.Constant(intp, v)) for v in range(width)]
            # the partial sums: allocas at the function's entry, promoted to registers
            accs = [cgutils.alloca_once_value(builder, zero) for _ in range(rows * width)]
            for acc in accs:  # from +0.0 at every pass
                builder.store(zero, acc)
            with cgutils.for_range(builder, K) as loop:
                k = loop.index
                arow = builder.bitcast(builder.gep(abase, [builder.mul(k, astride)]), vptr)
                av = [builder.load(builder.gep(arow, [v]), align=8) for v in vs]
                for q in range(rows):
                    xp = builder.bitcast(
                        builder.gep(xrow[q], [builder.mul(k, xs[1])]), f64.as_pointer()
                    )
                    b = _splat(builder, builder.load(xp, align=8))  # X[j + q, k], every lane
                    for v in range(width):
                        acc = accs[q * width + v]
                        builder.store(builder.call(fma, [av[v], b, builder.load(acc)]), acc)
            lanes = [builder.mul(v, ir.Constant(intp, _WIDTH)) for v in vs]
            if scaled:
                ms = [builder.load(builder.bitcast(builder.gep(m.data, [c]), vptr), align=8)
                      for c in lanes]  # fmt: skip
            for q in range(rows):
                row = builder.gep(sp, [builder.mul(row_stride, ir.Constant(intp, q))])
                for v in range(width):
                    dst = builder.bitcast(builder.gep(row, [lanes[v]]), vptr)
                    total = builder.load(accs[q * width + v])
                    if scaled:
                        total = builder.fmul(total, ms[v])
                    elif exps:
                        total = _vexp(builder, builder.fmul(beta, builder.fsub(total, shift)))
                    builder.store(total, dst, align=8)
            if top:  # the running maxima: any order, as a maximum of scores is exact
                vmax = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(vec, [vec] * 2), f"llvm.maxnum.v{_WIDTH}f64"
                )
                for v in range(width):
                    dst = builder.bitcast(builder.gep(m.data, [lanes[v]]), vptr)
                    best = builder.load(dst, align=8)
                    for q in range(rows):
                        best = builder.call(vmax, [best, builder.load(accs[q * width + v])])
                    builder.store(best, dst, align=8)

        if vecs is None:  # one vector a pass, in a loop of the IR
            nv, rs = (context.cast(builder, v, ty, types.intp)
                      for v, ty in zip(args[6:8], signature.args[6:8]))  # fmt: skip
            with cgutils.for_range(builder, nv) as c:
                one_pass(c.index, 1, rs)
        else:  # _PASS vectors a pass, unrolled
            for c0 in range(0, vecs, _PASS):
                width = min(_PASS, vecs - c0)
                one_pass(ir.Constant(intp, c0), width, ir.Constant(intp, stride))
        return context.get_dummy_value()

    if vecs is None:
        if exps:

            @intrinsic
            def tile_nv_exps(typingctx, A, X, S, j, p, M, nv, stride, beta, shift):
                sig = typed(A, X, S, M, 2)
                return None if sig is None else (sig, codegen)

            return tile_nv_exps

        @intrinsic
        def tile_nv(typingctx, A, X, S, j, p, M, nv, stride):
            sig = typed(A, X, S, M, 2)
            return None if sig is None else (sig, codegen)

        return tile_nv

    if exps:

        @intrinsic
        def tile_exps(typingctx, A, X, S, j, p, M, beta, shift):
            sig = typed(A, X, S, M, 0)
            return None if sig is None else (sig, codegen)

        return tile_exps

    @intrinsic
    def tile(typingctx, A, X, S, j, p, M):
        sig = typed(A, X, S, M, 0)
        return None if sig is None else (sig, codegen)

    return tile


# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()


def _row_sums(vecs, stride, top, scaled=False, exps=False):
    """sums(A, X, j0, S, M, *bc): the tiles of 8 ``vecs`` lanes, rows ``stride`` apart in S
    (and the row maxima in M with ``top``, the sums times M with ``scaled``, or with ``exps``
    their weights, bc = (β, c)), over rows j0 <= j < X.shape[0], 4 at a time, then one at a
    time; ``vecs`` None: every lane of A, rows A.shape[1] apart (see :func:`_tile`). Compiled
    into its callers (the tiles are constants of the code)."""
    many, one = (_tile(rows, vecs, stride, top, scaled, exps) for rows in (_TILE, 1))
    if vecs is not None:

        @njit(**dict(JIT_NO_NRT, cache=False))  # a closure: cached with its callers
        def sums(A, X, j0, S, M, *bc):
            n = X.shape[0]
            j = max(j0, 0)  # non-negative: no wraparound of negative indices
            while j + _TILE <= n:
                many(A, X, S, j, j * stride, M, *bc)
                j += _TILE
            while j < n:
                one(A, X, S, j, j * stride, M, *bc)
                j += 1

        return sums

    @njit(**dict(JIT_NO_NRT, cache=False))  # a closure: cached with its callers
    def sums_of_A(A, X, j0, S, M):
        n = X.shape[0]
        L = A.shape[1]
        nv = L // _WIDTH
        j = max(j0, 0)
        while j + _TILE <= n:
            many(A, X, S, j, j * L, M, nv, L)
            j += _TILE
        while j < n:
            one(A, X, S, j, j * L, M, nv, L)
            j += 1

    return sums_of_A


_block_rows = _row_sums(_VECS, ROWS, False)
_scaled_rows = _row_sums(_VECS, ROWS, False, True)
_weight_rows = _row_sums(_VECS, ROWS, False, exps=True)


def _by_vecs(exps):
    """tile(nv, A, X, S, j, p, M, beta, shift): the tile of 4 rows and nv = 1 .. 4 vectors of 8
    lanes, its rows ROWS apart in S; with ``exps`` the weights of its sums (see :func:`_tile`),
    else its sums (beta and shift unused). Inlined into its callers: a call per tile would keep
    the exps of one tile from overlapping the sums of the next."""
    if _PASS == 1:  # one vector a pass: one code for every nv (see _tile)
        t = _tile(4, None, exps=exps)
        if exps:

            @njit(inline="always")
            def tile_nv_exps(nv, A, X, S, j, p, M, beta, shift):
                t(A, X, S, j, p, M, nv, ROWS, beta, shift)

            return tile_nv_exps

        @njit(inline="always")
        def tile_nv(nv, A, X, S, j, p, M, beta, shift):
            t(A, X, S, j, p, M, nv, ROWS)

        return tile_nv

    t1, t2, t3, t4 = (_tile(4, v, ROWS, exps=exps) for v in (1, 2, 3, 4))
    if exps:

        @njit(inline="always")
        def tile_exps(nv, A, X, S, j, p, M, beta, shift):
            if nv == 1:
                t1(A, X, S, j, p, M, beta, shift)
            elif nv == 2:
                t2(A, X, S, j, p, M, beta, shift)
            elif nv == 3:
                t3(A, X, S, j, p, M, beta, shift)
            else:
                t4(A, X, S, j, p, M, beta, shift)

        return tile_exps

    @njit(inline="always")
    def tile(nv, A, X, S, j, p, M, beta, shift):
        if nv == 1:
            t1(A, X, S, j, p, M)
        elif nv == 2:
            t2(A, X, S, j, p, M)
        elif nv == 3:
            t3(A, X, S, j, p, M)
        else:
            t4(A, X, S, j, p, M)

    return tile


@njit(inline="always")
def _group_vecs(j):
    """The 8-lane vectors of a symmetric block's triangle in rows j .. j + 3 (j a multiple of
    4): lanes up to j + 3, each pair below computed, the rest mirrored."""
    return (j + 11) // 8


# the triangle of a symmetric block, 4 rows at a time: its scores, or their weights
_triangle, _triangle_exps = _by_vecs(False), _by_vecs(True)


@_jit(**JIT_NO_NRT)
def block_sums(A, X, j0, S):
    """S[j ROWS + r] = Σ_k A[k, r] X[j, k] for j0 <= j < X.shape[0], r < ROWS (k ascending from
    +0.0, one fused multiply-add per term): the scores of a block (A = (B x_i)_k transposed,
    X = x) or its weighted sums (A = the weights, X = x transposed). A: C-contiguous, ROWS
    columns; X.shape[1] rows of A are read."""
    _block_rows(A, X, j0, S, S)


@_jit(**JIT_NO_NRT)
def scaled_sums(A, X, S, M):
    """S[j ROWS + r] = (Σ_k A[k, r] X[j, k]) M[r]: :func:`block_sums` from j = 0, each sum
    rounded and then scaled by its lane's M[r] (M: ROWS doubles), as the tile stores it: the
    bits of block_sums followed by a pass of products, without that pass."""
    _scaled_rows(A, X, 0, S, M)


@_jit(**JIT_NO_NRT)
def gram_block(xt, S, beta, shift):
    """S[j ROWS + r] = <x_r, x_j> for a block of ROWS tokens, the columns of xt (d×ROWS): each
    pair once, the scores of lanes r < 8 ceil((j + 1) / 8) (j rounded up to its group of four)
    computed as :func:`block_sums` computes them, the others mirrored. A score and its mirror
    are the same sum (x_rk x_jk = x_jk x_rk, k ascending), so S equals
    block_sums(xt, xt.T, 0, S) bit for bit. With ``shift`` c not NaN, S gets the weights
    exp(β (<x_r, x_j> − c)) instead (``arith.exp_fma``'s bits), each also computed once and
    mirrored: one shift for all rows keeps them symmetric bit for bit. The tiles take the exps
    of their sums as they store them, so that the exps, bound by the latency of their chain of
    fused multiply-adds, overlap the next tile's sums (docs: performance)."""
    x = xt.T
    if shift == shift:
        for j in range(0, ROWS, 4):
            _triangle_exps(_group_vecs(j), xt, x, S, j, j * ROWS, S, beta, shift)
    else:
        for j in range(0, ROWS, 4):
            _triangle(_group_vecs(j), xt, x, S, j, j * ROWS, S, beta, shift)
    for q in range(ROWS):
        for r in range(_group_vecs(q // 4 * 4) * _WIDTH, ROWS):
            S[q * ROWS + r] = S[r * ROWS + q]


@_jit(**JIT_NO_NRT)
def gram(x, G, bxt, b0, b1, beta, shift):
    """G[b, j ROWS + r] = <x_i, x_j> (k ascending from +0.0, one fused multiply-add per term)
    for i = b ROWS + r, the scores of block b in the block layout (for B = I), for the blocks
    b0 <= b < b1 of x (n×d, n a multiple of ROWS; bxt: d×ROWS scratch). Block b computes the
    pairs with j >= i0 = b ROWS, its diagonal tile by :func:`gram_block` and the rest by
    :func:`block_sums`, and mirrors those with j >= i0 + ROWS into block j // ROWS: each pair
    once. With ``shift`` c not NaN, G gets the weights exp(β (s_ij − c)) instead, each pair's
    once (see :func:`gram_block`). Different blocks write disjoint entries, so
    blocks may run on different threads."""
    n, d = x.shape
    for b in range(max(b0, 0), b1):
        i0 = b * ROWS
        for r in range(ROWS):
            for k in range(d):
                bxt[k, r] = x[i0 + r, k]
        Gb = G[b]
        gram_block(bxt, Gb[i0 * ROWS : (i0 + ROWS) * ROWS], beta, shift)
        if shift == shift:  # the tiles store the weights (see gram_block)
            _weight_rows(bxt, x, i0 + ROWS, Gb, Gb, beta, shift)
        else:
            block_sums(bxt, x, i0 + ROWS, Gb)
        for c in range(b + 1, n // ROWS):  # tile by tile, each row of a mirrored tile at once
            dst = G[c]
            j0 = c * ROWS
            for r in range(ROWS):
                p = (i0 + r) * ROWS
                for q in range(ROWS):
                    dst[p + q] = Gb[(j0 + q) * ROWS + r]


def _by_lanes(f1, f2, f3, f4):
    """run(A, X, S, M): the row sums ``f1`` .. ``f4`` of 8, 16, 24 and 32 lanes (see
    :func:`_row_sums`), chosen by the lanes of A. Compiled into its callers."""

    @njit(**dict(JIT_NO_NRT, cache=False))  # a closure: cached with its callers
    def run(A, X, S, M):
        L = A.shape[1]
        if L == _WIDTH:
            f1(A, X, 0, S, M)
        elif L == 2 * _WIDTH:
            f2(A, X, 0, S, M)
        elif L == 3 * _WIDTH:
            f3(A, X, 0, S, M)
        else:
            f4(A, X, 0, S, M)

    return run


def _any_lanes(f):
    """run(A, X, S, M): the row sums ``f`` of every lane of A (AVX2: one code for 8 to 32)."""

    @njit(**dict(JIT_NO_NRT, cache=False))  # a closure: cached with its callers
    def run(A, X, S, M):
        f(A, X, 0, S, M)

    return run


# blocks of 8, 16, 24 or 32 lanes: their scores with the running row maxima, and their sums
if _PASS == 1:  # one vector a pass: one code whatever the lanes
    _scores_by_lanes = _any_lanes(_row_sums(None, 0, True))
    _sums_by_lanes = _any_lanes(_row_sums(None, 0, False))
else:
    _top1, _top2, _top3, _top4 = (_row_sums(v, v * _WIDTH, True) for v in (1, 2, 3, 4))
    _sum1, _sum2, _sum3 = (_row_sums(v, v * _WIDTH, False) for v in (1, 2, 3))
    _scores_by_lanes = _by_lanes(_top1, _top2, _top3, _top4)
    _sums_by_lanes = _by_lanes(_sum1, _sum2, _sum3, _block_rows)


@_jit(**JIT_NO_NRT)
def lane_sums(A, X, S):
    """S[j L + r] = Σ_k A[k, r] X[j, k] for j < X.shape[0], r < L = A.shape[1] (8, 16, 24 or
    32 lanes; k ascending from +0.0, one fused multiply-add per term): :func:`block_sums` in rows
    of L lanes, such as the weighted sums of a block (A: its weights, X: x transposed)."""
    _sums_by_lanes(A, X, S, S)


@_jit(**JIT_NO_NRT)
def lane_scores(A, X, S, M):
    """S[j L + r] = Σ_k A[k, r] X[j, k] for j < X.shape[0], r < L = A.shape[1] (8, 16, 24 or
    32 = ROWS lanes; k ascending from +0.0, one fused multiply-add per term: the sums of
    :func:`block_sums`, in rows of L lanes) and M[r] = max(M[r], max_j S[j L + r])."""
    _scores_by_lanes(A, X, S, M)


# --------------------------------------------------------------------------------------------
# The flow's LayerNorm y_i = x_i + h k_i, x_i <- y_i (1 / |y_i|), across lanes of tokens
# --------------------------------------------------------------------------------------------


def _lanes(builder, first):
    """The vector of 8 doubles from the double* ``first`` on, as a pointer."""
    return builder.bitcast(first, ir.VectorType(ir.DoubleType(), _WIDTH).as_pointer())


def _row_lanes(builder, arr, k, i):
    """The 8 lanes of row k of the C-contiguous 2-d ``arr`` from column i on."""
    stride = cgutils.unpack_tuple(builder, arr.strides, 2)[0]
    row = builder.gep(
        builder.bitcast(arr.data, ir.IntType(8).as_pointer()), [builder.mul(k, stride)]
    )
    return _lanes(builder, builder.gep(builder.bitcast(row, ir.DoubleType().as_pointer()), [i]))


def _ln_tile(apply):
    """The intrinsic ln(h, K, X, i, C, N) over the 8 lanes i <= l < i + 8 of the C-contiguous
    d×n K and X, each lane a token, rows k ascending, y = fma(h, K[k, l], X[k, l]): without
    ``apply`` C[l] = 1 / sqrt(((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))), the partial
    sums p_m = Σ_{k ≡ m (mod 8)} y^2 one fma each (``sphere._dot8``'s); with ``apply``
    X[k, l] = y C[l] and N[l] = Σ_k X[k, l]^2 of the new X (k ascending from +0.0, one fma
    each). The accumulators stay in vector registers for the whole pass over k. 8 tokens a
    tile: each pass's 8 d values of K and of X stay in the first-level cache for the next (16
    tokens a tile: 1.74 against 1.37 µs at d = 128, n = 32, one thread)."""

    @intrinsic
    def ln(typingctx, h, K, X, i, C, N):
        for a in (K, X):
            if not (isinstance(a, types.Array) and a.dtype == types.float64 and a.ndim == 2):
                return None
            if a.layout != "C":
                return None
        for a in (C, N):
            if not (isinstance(a, types.Array) and a.dtype == types.float64 and a.ndim == 1):
                return None
        sig = types.void(types.float64, K, X, types.intp, C, N)

        def codegen(context, builder, signature, args):
            kk = context.make_array(signature.args[1])(context, builder, args[1])
            xx = context.make_array(signature.args[2])(context, builder, args[2])
            cc = context.make_array(signature.args[4])(context, builder, args[4])
            nn = context.make_array(signature.args[5])(context, builder, args[5])
            i = context.cast(builder, args[3], signature.args[3], types.intp)
            intp = context.get_value_type(types.intp)
            vec = ir.VectorType(ir.DoubleType(), _WIDTH)
            fma = _vfma(builder)
            zero = ir.Constant(vec, [0.0] * _WIDTH)
            hv = _splat(builder, args[0])
            d = cgutils.unpack_tuple(builder, xx.shape, 2)[0]
            cptr = _lanes(builder, builder.gep(cc.data, [i]))

            def y_of(k):
                """y at row k, and the pointer to X's lanes there."""
                kv = builder.load(_row_lanes(builder, kk, k, i), align=8)
                xp = _row_lanes(builder, xx, k, i)
                return builder.call(fma, [hv, kv, builder.load(xp, align=8)]), xp

            if not apply:
                accs = [cgutils.alloca_once_value(builder, zero) for _ in range(8)]
                for acc in accs:
                    builder.store(zero, acc)

                def term(k, m):
                    y = y_of(k)[0]
                    builder.store(builder.call(fma, [y, y, builder.load(accs[m])]), accs[m])

                eight = ir.Constant(intp, 8)
                blocks = builder.sdiv(d, eight)
                with cgutils.for_range(builder, blocks) as loop:
                    for m in range(8):
                        term(builder.add(builder.mul(loop.index, eight), ir.Constant(intp, m)), m)
                base = builder.mul(blocks, eight)
                for m in range(8):
                    k = builder.add(base, ir.Constant(intp, m))
                    with builder.if_then(builder.icmp_signed("<", k, d)):
                        term(k, m)
                sqrt = cgutils.get_or_insert_function(
                    builder.module, ir.FunctionType(vec, [vec]), f"llvm.sqrt.v{_WIDTH}f64"
                )
                p = [builder.load(acc) for acc in accs]
                s = builder.fadd(
                    builder.fadd(builder.fadd(p[0], p[1]), builder.fadd(p[2], p[3])),
                    builder.fadd(builder.fadd(p[4], p[5]), builder.fadd(p[6], p[7])),
                )
                one = ir.Constant(vec, [1.0] * _WIDTH)
                builder.store(builder.fdiv(one, builder.call(sqrt, [s])), cptr, align=8)
                return context.get_dummy_value()

            c = builder.load(cptr, align=8)
            acc = cgutils.alloca_once_value(builder, zero)
            builder.store(zero, acc)
            with cgutils.for_range(builder, d) as loop:
                y, xp = y_of(loop.index)
                u = builder.fmul(y, c)
                builder.store(u, xp, align=8)
                builder.store(builder.call(fma, [u, u, builder.load(acc)]), acc)
            builder.store(builder.load(acc), _lanes(builder, builder.gep(nn.data, [i])), align=8)
            return context.get_dummy_value()

        return sig, codegen

    return ln


_inverse_tile, _apply_tile = _ln_tile(False), _ln_tile(True)


@njit(inline="always")
def _partial(K, X, h, j, m):
    """Σ_{k ≡ m (mod 8)} y_k^2 of lane j, y_k = fma(h, K[k, j], X[k, j]), k ascending from +0.0,
    one fma each: one of the tiles' partial sums."""
    p = 0.0
    for k in range(m, X.shape[0], 8):
        y = fma(h, K[k, j], X[k, j])
        p = fma(y, y, p)
    return p


@njit(inline="always")
def _inverse_norm(K, X, h, j):
    """1 / |y_j| of lane j as the tiles take it, one lane at a time (the last n mod 8 lanes)."""
    a = _partial(K, X, h, j, 0) + _partial(K, X, h, j, 1)
    b = _partial(K, X, h, j, 2) + _partial(K, X, h, j, 3)
    c = _partial(K, X, h, j, 4) + _partial(K, X, h, j, 5)
    e = _partial(K, X, h, j, 6) + _partial(K, X, h, j, 7)
    return 1.0 / math.sqrt((a + b) + (c + e))


@_jit(**JIT_NO_NRT)
def normalise(h, K, X, C, N):
    """The flow's LayerNorm across tokens, the columns of the C-contiguous d×n K and X:
    X[:, l] <- y_l (1 / |y_l|) for y_l = X[:, l] + h K[:, l] (one fma per coordinate), |y_l|^2 as
    eight partial sums over k ≡ m (mod 8), k ascending, one fma each, added as
    ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)); C[l] = 1 / |y_l| and N[l] =
    <x_l, x_l> of the new X (k ascending from +0.0, one fma each: the flow's next common shift).
    8 lanes at a time in vector registers, then one."""
    d, n = X.shape
    i = 0
    while i + 8 <= n:
        _inverse_tile(h, K, X, i, C, N)
        _apply_tile(h, K, X, i, C, N)
        i += 8
    for j in range(i, n):
        c = _inverse_norm(K, X, h, j)
        C[j] = c
        a = 0.0
        for k in range(d):
            v = fma(h, K[k, j], X[k, j]) * c
            X[k, j] = v
            a = fma(v, v, a)
        N[j] = a


@_jit(**JIT_NO_NRT)
def inverse_norms(K, C):
    """C[l] = 1 / |K[:, l]| for the columns of the C-contiguous d×n K, |K[:, l]|^2 summed as
    :func:`normalise` sums |y_l|^2 (its first pass, with y = 0 K + K = K): 8 lanes at a time in
    vector registers, then one. The norms of a pass that does not normalise in place."""
    n = K.shape[1]
    i = 0
    while i + 8 <= n:
        _inverse_tile(0.0, K, K, i, C, C)
        i += 8
    for j in range(i, n):
        C[j] = _inverse_norm(K, K, 0.0, j)
