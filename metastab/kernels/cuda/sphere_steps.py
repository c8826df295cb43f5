"""The sphere models on the device: the CUDA twins of :mod:`metastab.kernels.cpu.sphere_steps`.

Same equations (docs: models#models-sphere), same operations in the same order as the CPU kernels,
so the simulator gives their bits: the flow's fused arithmetic (``arith``: each multiply-add one
fma, the exp ``cuda.euclidean_steps.exp_fused``) in scores s_ij = <B x_i, x_j> (k ascending from
+0.0), weights shifted by the common shift of B = I or else the row maximum (a causal mask gives
weight exactly 0; the positional options as there), totals and weighted sums Σ_j w_ij x_jk
in increasing j, the value matrix, heads summed in order, the norm in increasing k.
Per token (one thread each, see :mod:`.drivers`): :func:`velocity` is Attn(x)_i (projected
onto the tangent space for RK4), its common shift read from the n norms that the chain's team of
threads sums first (:func:`norms`, one token each); :func:`sphere_flow_step` is the whole post-LN or
RK4 step, by every thread of the team; :func:`chain_move` is the chain's LayerNormed move after its
pick. Arrays are token-minor, as in :mod:`.euclidean_steps`: coordinate k of token i at [o + k n +
i].
"""

import math

from numba import cuda

from ..params import NGPT, PERI_LN, POST_LN, PRE_LN, RK4, SHIFT_SPREAD, UNNORMALIZED
from .arith import fma, ix, mul
from .euclidean_steps import exp_fused, scores, weighted_sums


@cuda.jit(device=True)
def velocity(src, so, i, n, d, Bs, Vs, beta, attention, causal, strict, alibi, positional,
             offset, plain_B, plain_V, project, W, bx, K, ko, NO):  # fmt: skip
    """K[ko + k n + i] = Attn(src)_i (sphere.flow's _velocity), or its projection P⊥ onto the
    tangent space at src_i with ``project``; bx[k n + i] and W's column i are scratch; for
    B = I, K[NO ...] holds the n norms of src (:func:`norms`). Positional options as on the CPU:
    ``strict`` masks j >= i, ``alibi`` (λ, 0: none) multiplies each weight by
    a_ij = exp_fused(−((λ/n) |i − j|)), ``positional`` divides (USA) by Z_i = Σ_j a_ij (j
    ascending) instead of n, and (USA)'s scale is e^{β (c_i − offset)}."""
    for k in range(d):
        K[ix(ko + k * n + i)] = 0.0
    shift = common_shift(K, NO, n, beta) if plain_B else math.nan
    for h in range(Bs.shape[0]):
        for k in range(d):
            if plain_B:
                bx[ix(k * n + i)] = src[ix(so + k * n + i)]
            else:
                a = 0.0
                for q in range(d):
                    a = fma(Bs[h, k, q], src[ix(so + q * n + i)], a)
                bx[ix(k * n + i)] = a
        best = shift if shift == shift else -math.inf
        scores(bx, i, src, so, i, n, d, W)
        end = i + n * n  # W[j n + i], j = 0 .. n - 1
        stop = ((i if strict else i + 1) * n + i) if causal else end  # j <= i (strict: j < i)
        if shift != shift:
            p = i
            while p < stop:
                best = max(best, W[ix(p)])
                p += n
        total = 0.0
        z = 0.0  # Z_i of positional (USA): Σ_j a_ij, j ascending
        p = i
        if alibi != 0.0 or positional:  # the positional weights: a loop apart from the plain one
            rate = alibi / n
            j = 0
            while p < stop:
                v = exp_fused(mul(beta, W[ix(p)] - best))
                a = exp_fused(-mul(rate, float(abs(i - j)))) if alibi != 0.0 else 1.0
                if alibi != 0.0:
                    v = mul(v, a)
                z += a
                W[ix(p)] = v
                total += v
                p += n
                j += 1
        else:
            while p < stop:
                v = exp_fused(mul(beta, W[ix(p)] - best))
                W[ix(p)] = v
                total += v
                p += n
        while p < end:  # causal: the tokens after i weigh exactly 0
            W[ix(p)] = 0.0
            p += n
        weighted_sums(W, i, n, src, so, d, bx, i)
        if strict and i == 0:  # token 0 attends to none: Attn(x)_0 = 0
            scale = 0.0
        elif attention == UNNORMALIZED:
            scale = math.exp(mul(beta, best - offset)) / (z if positional else n)
        else:
            scale = 1.0 / total
        for k in range(d):
            bx[ix(k * n + i)] = mul(bx[ix(k * n + i)], scale)
        for k in range(d):
            if plain_V:
                a = bx[ix(k * n + i)]
            else:
                a = 0.0
                for q in range(d):
                    a = fma(Vs[h, k, q], bx[ix(q * n + i)], a)
            K[ix(ko + k * n + i)] = a if h == 0 else K[ix(ko + k * n + i)] + a
    if project:
        a = dot8(src, so, K, ko, i, n, d)
        for k in range(d):
            K[ix(ko + k * n + i)] = fma(-a, src[ix(so + k * n + i)], K[ix(ko + k * n + i)])


@cuda.jit(device=True)
def norms(src, so, n, d, plain_B, out, oo, tid, T):
    """out[oo + j] = <x_j, x_j> (k ascending from +0.0, one fma each) for B = I, by the T threads
    of the team (each its own tokens), then a barrier: :func:`common_shift` reads them all. Each
    thread summing all n norms itself took O(n d) per token, as much as its scores."""
    if plain_B:
        for j in range(tid, n, T):
            a = 0.0
            for k in range(d):
                a = fma(src[ix(so + k * n + j)], src[ix(so + k * n + j)], a)
            out[ix(oo + j)] = a
        cuda.syncthreads()


@cuda.jit(device=True)
def common_shift(s2, so, n, beta):
    """The one shift of every score for B = I (sphere._common_shift): c = max_j <x_j, x_j> if
    beta >= 0 and beta (c - min_j <x_j, x_j>) <= 64, else NaN (each row is shifted by its
    maximum); s2[so + j] = <x_j, x_j> (:func:`norms`)."""
    hi = -math.inf
    lo = math.inf
    for j in range(n):
        a = s2[ix(so + j)]
        hi = max(hi, a)
        lo = min(lo, a)
    if beta >= 0.0 and mul(beta, hi - lo) <= SHIFT_SPREAD:
        return hi
    return math.nan


@cuda.jit(device=True)
def dot8(a, ao, b, bo, i, n, d):
    """<a_i, b_i> as the fused CPU kernels sum it (sphere._dot8): eight partial sums over
    k ≡ m (mod 8), k ascending, one fma each, then ((p0 + p1) + (p2 + p3)) + ((p4 + p5) +
    (p6 + p7))."""
    p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = 0.0
    for k in range(d):
        m = k % 8
        u = a[ix(ao + k * n + i)]
        w = b[ix(bo + k * n + i)]
        if m == 0:
            p0 = fma(u, w, p0)
        elif m == 1:
            p1 = fma(u, w, p1)
        elif m == 2:
            p2 = fma(u, w, p2)
        elif m == 3:
            p3 = fma(u, w, p3)
        elif m == 4:
            p4 = fma(u, w, p4)
        elif m == 5:
            p5 = fma(u, w, p5)
        elif m == 6:
            p6 = fma(u, w, p6)
        else:
            p7 = fma(u, w, p7)
    return ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))


@cuda.jit(device=True)
def normalise(y, yo, i, n, d, out, oo):
    """The chain's LayerNorm out_i = y_i / |y_i|, the norm summed in k ascending
    (sphere._normalise_row)."""
    a = 0.0
    for k in range(d):
        a += mul(y[ix(yo + k * n + i)], y[ix(yo + k * n + i)])
    r = math.sqrt(a)
    for k in range(d):
        out[ix(oo + k * n + i)] = y[ix(yo + k * n + i)] / r


@cuda.jit(device=True)
def normalise_fused(y, yo, i, n, d, out, oo):
    """The flow's LayerNorm out_i = y_i (1 / |y_i|), |y_i|^2 by :func:`dot8`
    (sphere._normalise_fused)."""
    c = 1.0 / math.sqrt(dot8(y, yo, y, yo, i, n, d))
    for k in range(d):
        out[ix(oo + k * n + i)] = mul(y[ix(yo + k * n + i)], c)


@cuda.jit(device=True)
def sphere_flow_step(buf, n, d, Bs, Vs, beta, dt, attention, scheme, causal, strict, alibi,
                     positional, offset, plain_B, plain_V, W, tid, T):  # fmt: skip
    """One step of the sphere flow by the T threads of the team (sphere.sphere_flow_step): post-LN
    x_i <- N(x_i + dt Attn(x)_i), pre-LN x_i <- x_i + dt Attn(N(x))_i, peri-LN
    x_i <- x_i + dt N(Attn(N(x))_i), nGPT x_i <- N(x_i + dt N(Attn(x)_i)) (dt: the schedule's
    dt α), or RK4 on x' = P⊥ Attn(x) then N (Mix-LN's steps: post-LN's or pre-LN's, chosen by
    the driver); the new state goes to the
    update slot of ``buf`` (x, update, B x_i, uniforms, flags, then K (4 n d) and a stage y;
    the flow draws no uniforms: that slot holds the :func:`norms`)."""
    nd = n * d
    OUT = nd
    bx = buf[2 * nd : 3 * nd]
    KO = 3 * nd + 2 * n
    Y = KO + 4 * nd
    NO = 3 * nd
    if scheme == PRE_LN or scheme == PERI_LN:  # the residual not normalised
        peri = scheme == PERI_LN
        for i in range(tid, n, T):
            normalise_fused(buf, 0, i, n, d, buf, Y)
        cuda.syncthreads()
        norms(buf, Y, n, d, plain_B, buf, NO, tid, T)
        for i in range(tid, n, T):
            velocity(buf, Y, i, n, d, Bs, Vs, beta, attention, causal, strict, alibi, positional,
                     offset, plain_B, plain_V, False, W, bx, buf, KO, NO)  # fmt: skip
            c = 1.0 / math.sqrt(dot8(buf, KO, buf, KO, i, n, d)) if peri else 1.0
            for k in range(d):
                q = k * n + i
                a = mul(buf[ix(KO + q)], c) if peri else buf[ix(KO + q)]
                buf[ix(OUT + q)] = fma(dt, a, buf[ix(q)])
        return
    project = scheme == RK4
    norms(buf, 0, n, d, plain_B, buf, NO, tid, T)
    for i in range(tid, n, T):
        velocity(buf, 0, i, n, d, Bs, Vs, beta, attention, causal, strict, alibi, positional,
                 offset, plain_B, plain_V, project, W, bx, buf, KO, NO)  # fmt: skip
    cuda.syncthreads()
    if scheme == POST_LN or scheme == NGPT:
        unit = scheme == NGPT  # nGPT: the residual branch N(Attn(x)_i)
        for i in range(tid, n, T):
            c = 1.0 / math.sqrt(dot8(buf, KO, buf, KO, i, n, d)) if unit else 1.0
            for k in range(d):
                q = k * n + i
                a = mul(buf[ix(KO + q)], c) if unit else buf[ix(KO + q)]
                buf[ix(Y + q)] = fma(dt, a, buf[ix(q)])
            normalise_fused(buf, Y, i, n, d, buf, OUT)
        return
    half = mul(0.5, dt)
    for s in range(1, 4):
        h = dt if s == 3 else half
        for i in range(tid, n, T):
            for k in range(d):
                q = k * n + i
                buf[ix(Y + q)] = fma(h, buf[ix(KO + (s - 1) * nd + q)], buf[ix(q)])
        cuda.syncthreads()
        norms(buf, Y, n, d, plain_B, buf, NO, tid, T)
        for i in range(tid, n, T):
            velocity(buf, Y, i, n, d, Bs, Vs, beta, attention, causal, strict, alibi, positional,
                     offset, plain_B, plain_V, True, W, bx, buf, KO + s * nd, NO)  # fmt: skip
        cuda.syncthreads()
    sixth = dt / 6.0
    for i in range(tid, n, T):
        for k in range(d):
            q = k * n + i
            K0 = buf[ix(KO + q)]
            K1 = buf[ix(KO + nd + q)]
            K2 = buf[ix(KO + 2 * nd + q)]
            K3 = buf[ix(KO + 3 * nd + q)]
            inc = ((K0 + mul(2.0, K1)) + mul(2.0, K2)) + K3
            buf[ix(Y + q)] = fma(sixth, inc, buf[ix(q)])
        normalise_fused(buf, Y, i, n, d, buf, OUT)


@cuda.jit(device=True)
def chain_move(buf, i, j, n, d, V, plain_V, gamma, OUT, bx):
    """The sphere chain's move of token i after picking j (sphere.chain_step): the update slot
    gets N(x_i + gamma (V x_j - x_i)), or x_i itself when the increment changes nothing bit for
    bit (then the pick is an exact no-op); bx[k n + i] holds the target."""
    for k in range(d):
        if plain_V:
            bx[ix(k * n + i)] = buf[ix(k * n + j)]
        else:
            a = 0.0
            for q in range(d):
                a += mul(V[k, q], buf[ix(q * n + j)])
            bx[ix(k * n + i)] = a
    same = True
    for k in range(d):
        xk = buf[ix(k * n + i)]
        v = xk + mul(gamma, bx[ix(k * n + i)] - xk)
        buf[ix(OUT + k * n + i)] = v
        same = same and v == xk
    if not same:
        normalise(buf, OUT, i, n, d, buf, OUT)
