"""The kernels' scalar leaves, each written once over its arithmetic and compiled per target.

A factory here takes the primitives in which the targets differ and returns a plain Python
function: :mod:`.arith`, :mod:`.streams` and :mod:`.cpu.steps` compile it with ``numba.njit``
over ``arith.fma`` and ``arith.mul``, :mod:`.cuda.steps` with ``cuda.jit(device=True)`` over
``cuda.arith``'s ``fma`` and ``mul`` (there explicit: NVVM and ptxas would fuse a product into a
later sum). The operations and their order are the leaf's own, so both targets round alike and
give the same bits. Layout stays with each target: a leaf that reads an array row takes its
offset and stride. The plain-Python oracle (:mod:`.reference`) is written apart, by hand.

Every product is ``mul`` and every fused multiply-add ``fma``; a leaf writes no other floating
product (tests/test_cuda_compile.py counts the fusions a device would add).
"""

import math

import numpy as np

# the FMA exp's constants (arith's module notes)
LOG2E = 1.4426950408889634
SHIFT = 6755399441055744.0  # 1.5 * 2**52: adding it rounds z * log2(e) to an integer k
SHIFT_BITS = 4843621399236968448  # the bit pattern of SHIFT
LN2_HI = 0.6931471803691238
LN2_LO = 1.9082149292705877e-10
Z_MIN = -745.0  # below the smallest subnormal's log; keeps k small
INV_FACT = tuple(1.0 / math.factorial(q) for q in range(14))

_U = np.uint64
TWO_53 = 9007199254740992.0
TWO_M53 = 1.0 / TWO_53

# A pick j among candidates of largest weight w_max is *rare* when w_j < RARE_CUT w_max. Rare
# picks are decided by an exact Bernoulli and drawn apart (cpu.euclidean_steps.chain_step); the
# others weigh at least 2^-20 w_max >= 2^-20 / n of their total, so inverting a 53-bit uniform over
# them realises each with a relative error below ~n 2^-33.
RARE_CUT = 2.0**-20


def xoshiro_next(add64):
    """xoshiro256** (Blackman & Vigna 2018): ``next_u64(s)``, one output, advancing the state
    ``s`` (uint64[4]) in place. The products by 5 and 9 are shifts and ``add64`` (a + b mod
    2^64), which the CUDA simulator must sum from halves (numpy warns when uint64 wraps)."""

    def next_u64(s):
        """One xoshiro256** output; advances the state ``s`` (uint64[4]) in place."""
        s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
        f = add64(s1 << _U(2), s1)  # s1 * 5
        f = (f << _U(7)) | (f >> _U(57))
        result = add64(f << _U(3), f)  # * 9
        t = s1 << _U(17)
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = (s3 << _U(45)) | (s3 >> _U(19))
        s[0] = s0
        s[1] = s1
        s[2] = s2
        s[3] = s3
        return result

    return next_u64


def uniform_next(next_u64, mul):
    """``next_uniform(s)``: a uniform on [0, 1) with 53 random bits of the stream ``s``."""

    def next_uniform(s):
        """A uniform on [0, 1) with 53 random bits: (x >> 11) 2^-53."""
        return mul(float(next_u64(s) >> _U(11)), TWO_M53)

    return next_uniform


def exp_nonpositive(fma, mul, as_bits, from_bits):
    """The kernels' exp(z) for z <= 0 (arith's module notes: Cody-Waite reduction z = k ln2 + r,
    the degree-13 Taylor polynomial of e^r by fmas, times 2^k made from its exponent bits;
    within 1 ulp of exp, results below 2^-1022 flushed to 0). ``as_bits`` and ``from_bits``
    reinterpret a double as int64 and back."""

    def exp(z):
        """exp(z) for z <= 0; NaN for NaN."""
        if z < Z_MIN:  # (NaN stays NaN)
            z = Z_MIN
        shifted = fma(z, LOG2E, SHIFT)
        k = shifted - SHIFT
        r = fma(-k, LN2_LO, fma(-k, LN2_HI, z))
        p = fma(INV_FACT[13], r, INV_FACT[12])
        p = fma(p, r, INV_FACT[11])
        p = fma(p, r, INV_FACT[10])
        p = fma(p, r, INV_FACT[9])
        p = fma(p, r, INV_FACT[8])
        p = fma(p, r, INV_FACT[7])
        p = fma(p, r, INV_FACT[6])
        p = fma(p, r, INV_FACT[5])
        p = fma(p, r, INV_FACT[4])
        p = fma(p, r, INV_FACT[3])
        p = fma(p, r, INV_FACT[2])
        p = fma(p, r, INV_FACT[1])
        p = fma(p, r, INV_FACT[0])
        e = as_bits(shifted) - np.int64(SHIFT_BITS)
        return mul(p, from_bits((e + 1023) << 52) if e >= -1022 else 0.0)

    return exp


def exact_bernoulli(next_u64, mul):
    """``bernoulli(p, u, s)``: the exact Bernoulli(p) trial that decides whether an SA_P pick is
    rare ([FW] §5, eq. (SA_ℙ), by the rule of cpu.euclidean_steps.chain_step), driven by the
    uniform ``u`` and the stream ``s``."""

    def bernoulli(p, u, s):
        """An exact Bernoulli(p) trial for any double p in [0, 1], driven by the uniform ``u``.

        ``u`` = m 2^-53 (m an integer) stands for U = (m + V) 2^-53 with V uniform on [0, 1);
        the trial is U < p. With q = p 2^53 (exact): m + 1 <= q gives True, m >= q gives
        False, and otherwise (m = floor q) the answer is V < q - m, decided in the same way by
        the next 53-bit uniform of the stream ``s`` (q - m is exact). Extra draws happen with
        probability < 2^-53 per trial and end after at most ~21 (the bits of q run out).
        """
        q = mul(p, TWO_53)
        m = mul(u, TWO_53)
        while True:
            if m + 1.0 <= q:
                return True
            if not m < q:
                return False
            q = mul(q - m, TWO_53)
            m = float(next_u64(s) >> _U(11))

    return bernoulli


def rare_pick(fma, mul, next_uniform, bernoulli):
    """``pick_rare(w, o, stride, n, hi, s)``: an SA_P pick among the rare weights of a row ([FW]
    [FW] §5, eq. (SA_ℙ), by the rule of cpu.euclidean_steps.chain_step), weight j at ``w[o + j
    stride]``, j < n."""

    def pick_rare(w, o, stride, n, hi, s):
        """The pick among {j : w_j < hi}: the rule of chain_step applied to that set (its
        own total and cut, a fresh uniform from the stream ``s``), again and again while the
        pick falls in the set's own rare part."""
        while True:
            top = 0.0
            for j in range(n):
                v = w[o + j * stride]
                if v < hi:
                    top = max(top, v)
            cut = mul(RARE_CUT, top)
            rare = 0.0
            keep = 0.0
            for j in range(n):
                v = w[o + j * stride]
                if v < cut:
                    rare += v
                elif v < hi:
                    keep += v
            tot = rare + keep
            u = next_uniform(s)
            if rare > 0.0 and bernoulli(rare / tot, u, s):
                hi = cut
                continue
            thr = max(fma(u, tot, -rare), 0.0)
            cum = 0.0
            last = -1
            for j in range(n):
                v = w[o + j * stride]
                if cut <= v < hi:
                    cum += v
                    if cum > thr:
                        return j
                    last = j
            return last

    return pick_rare


# Wolfe's min-norm-point algorithm (hull_distance): the relative optimality tolerance, also the
# weight below which a point leaves the corral
HULL_EPS = 1e-12
# and a cap on its major cycles that is never reached in exact arithmetic (the method is finite)
HULL_MAX_ITER = 1000


def hull_scratch(n, d):
    """(float64, int64) scratch sizes of :func:`hull_distance`'s ``hull_dist2`` for groups of up
    to n points in R^d: q (n d) and w, which holds the corral's weights (d + 2), the affine
    minimiser's a (d + 2), the elimination's M ((d + 3)^2) and rhs (d + 3) and the min-norm point
    x (d); the corral S."""
    return n * d + 2 * (d + 2) + (d + 3) * (d + 3) + (d + 3) + d, d + 2


def corral_step(mul):
    """``shrink(S, w, a, ao, size)``: a minor cycle's move of Wolfe's (1976) min-norm-point
    algorithm (:func:`hull_distance`), the corral's weights in w[:size], the affine minimiser's
    in a[ao:ao + size] (apart from w[:size])."""

    def shrink(S, w, a, ao, size):
        """If every affine weight exceeds HULL_EPS, w takes them and the minor cycles end;
        otherwise w moves towards them as far as the simplex allows (theta), the points whose
        weight falls to HULL_EPS leave the corral S, and w is renormalised. Returns (size, whether
        the minor cycles end)."""
        interior = True
        for i in range(size):
            if a[ao + i] <= HULL_EPS:
                interior = False
        if interior:
            for i in range(size):
                w[i] = a[ao + i]
            return size, True
        theta = 1.0
        for i in range(size):
            if a[ao + i] <= HULL_EPS and w[i] - a[ao + i] > 0.0:
                theta = min(theta, w[i] / (w[i] - a[ao + i]))
        kept = 0
        for i in range(size):
            wi = mul(theta, a[ao + i]) + mul(1.0 - theta, w[i])
            if wi > HULL_EPS:
                S[kept] = S[i]
                w[kept] = wi
                kept += 1
        if kept == 0:  # only through rounding
            kept = 1
            w[0] = 1.0
        tot = 0.0
        for i in range(kept):
            tot += w[i]
        for i in range(kept):
            w[i] /= tot
        return kept, kept == 1

    return shrink


def affine_minimiser(mul):
    """``affine_min(q, d, S, k, w)``: the affine weights of the min-norm point of
    aff{q_S0, ..., q_Sk-1} (points q_j = q[j d : (j + 1) d]) into w[a + i], i < k, with w laid
    out as :func:`hull_scratch` says (a = d + 2).

    Solves [G 1; 1' 0] [a; mu] = [0; 1], G_ij = <q_Si, q_Sj>, by Gaussian elimination with
    partial pivoting (k <= d + 1: the system is tiny)."""

    def affine_min(q, d, S, k, w):
        a = d + 2
        M = 2 * (d + 2)
        rhs = M + (d + 3) * (d + 3)
        L = d + 3  # row stride of M
        K = k + 1
        for i in range(k):
            for j in range(k):
                acc = 0.0
                for m in range(d):
                    acc += mul(q[S[i] * d + m], q[S[j] * d + m])
                w[M + i * L + j] = acc
            w[M + i * L + k] = 1.0
            w[M + k * L + i] = 1.0
            w[rhs + i] = 0.0
        w[M + k * L + k] = 0.0
        w[rhs + k] = 1.0
        for c in range(K):
            piv = c
            for r in range(c + 1, K):
                if abs(w[M + r * L + c]) > abs(w[M + piv * L + c]):
                    piv = r
            if piv != c:
                for j in range(K):
                    tmp = w[M + c * L + j]
                    w[M + c * L + j] = w[M + piv * L + j]
                    w[M + piv * L + j] = tmp
                tmp = w[rhs + c]
                w[rhs + c] = w[rhs + piv]
                w[rhs + piv] = tmp
            for r in range(c + 1, K):
                f = w[M + r * L + c] / w[M + c * L + c]
                for j in range(c, K):
                    w[M + r * L + j] -= mul(f, w[M + c * L + j])
                w[rhs + r] -= mul(f, w[rhs + c])
        for c in range(K - 1, -1, -1):
            acc = w[rhs + c]
            for j in range(c + 1, K):
                acc -= mul(w[M + c * L + j], w[rhs + j])
            w[rhs + c] = acc / w[M + c * L + c]
        for i in range(k):
            w[a + i] = w[rhs + i]

    return affine_min


def hull_distance(mul, coord, affine_min, shrink):
    """``hull_dist2(p, po, pts, co, members, m0, m1, stop, d, q, S, w)``: dist(p, conv{pts_j :
    j in members[m0:m1]})^2 for the point p[po : po + d], or, as soon as it is known to be
    <= ``stop``, some value <= ``stop`` (pass stop < 0 for the distance itself). Point j's
    coordinate k is ``coord(pts, co, j, k, d)`` (the target's layout); q, S and w are the scratch
    of :func:`hull_scratch` (the min-norm point is left in w's x).

    Wolfe's (1976) min-norm-point algorithm on q_j = pts_j - p: a finite active-set method that
    keeps a corral S of at most d + 1 affinely independent points and the min-norm point x of
    conv(q_S); it stops when the Wolfe gap |x|^2 - min_j <x, q_j> is below HULL_EPS max |q_j|^2
    (x is then the projection up to rounding) or when S spans R^d (then p is inside). Exact where
    Frank-Wolfe-type certificates stall on thin hulls. Since |x|^2 >= dist^2, it answers
    "inside" as soon as |x|^2 <= stop. ``affine_min`` and ``shrink`` are the minor cycle's
    leaves (:func:`affine_minimiser`, :func:`corral_step`)."""

    def hull_dist2(p, po, pts, co, members, m0, m1, stop, d, q, S, w):
        m = m1 - m0
        xo = 2 * (d + 2) + (d + 3) * (d + 3) + (d + 3)  # the min-norm point x in w
        a = d + 2
        scale = 0.0
        best = math.inf
        jbest = 0
        for r in range(m):
            acc = 0.0
            j = members[m0 + r]
            for k in range(d):
                v = coord(pts, co, j, k, d) - p[po + k]
                q[r * d + k] = v
                acc += mul(v, v)
            scale = max(scale, acc)
            if acc < best:
                best = acc
                jbest = r
        if best <= stop:
            return best
        S[0] = jbest
        w[0] = 1.0
        size = 1
        for k in range(d):
            w[xo + k] = q[jbest * d + k]
        xx = best
        for _ in range(HULL_MAX_ITER):
            j = -1
            lo = math.inf
            for r in range(m):
                acc = 0.0
                for k in range(d):
                    acc += mul(w[xo + k], q[r * d + k])
                if acc < lo:
                    lo = acc
                    j = r
            if xx - lo <= mul(HULL_EPS, scale) or size == d + 1:
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
            while True:  # minor cycles: towards the affine minimiser, drop points that hit zero
                affine_min(q, d, S, size, w)
                size, last = shrink(S, w, w, a, size)
                if last:
                    break
            xx = 0.0
            for k in range(d):
                acc = 0.0
                for i in range(size):
                    acc += mul(w[i], q[S[i] * d + k])
                w[xo + k] = acc
                xx += mul(acc, acc)
            if xx <= stop:
                return xx
        if size == d + 1:
            return 0.0
        return xx

    return hull_dist2


# The log leaf: s = m 2^k with m in [SQRT_HALF, 2 SQRT_HALF), read from the bits of s (exact,
# the same on every target), and log m = 2 atanh f = 2f (1 + f^2/3 + f^4/5 + ...),
# f = (m - 1)/(m + 1), f^2 <= (3 - 2 sqrt 2)^2 = 0.0294 on the reduced range, so the first term
# left out, f^22 / 23 relative to 1, is below 2^-60
SQRT_HALF = 0.7071067811865476
SQRT_TWO = 2.0 * SQRT_HALF
ATANH_COEF = tuple(1.0 / (2 * j + 1) for j in range(1, 11))
_A = ATANH_COEF
_MANTISSA = 0x000FFFFFFFFFFFFF
_HALF_EXPONENT = 0x3FE0000000000000  # the exponent bits of [1/2, 1)
# sin(π r / 2) = r Σ_j S_j r^(2j) and cos(π r / 2) = Σ_j C_j r^(2j) for |r| <= 1/2 (angles
# within π/4): Taylor coefficients (−1)^j (π/2)^k / k!, k = 2j + 1 and 2j, to degree 19 and 18;
# the first left out is below 2^-62 relative
SIN_COEF = tuple((-1) ** j * (math.pi / 2) ** (2 * j + 1) / math.factorial(2 * j + 1) for j in range(10))  # fmt: skip  # noqa: E501
COS_COEF = tuple((-1) ** j * (math.pi / 2) ** (2 * j) / math.factorial(2 * j) for j in range(10))
_S, _CO = SIN_COEF, COS_COEF


def log_positive(fma, mul, as_bits, from_bits):
    """``log(s)``: the natural logarithm of a positive normal double, with no call to a libm
    (the CPU's libm log and CUDA's libdevice log round differently, and libdevice's brings
    fusions of its own).

    Reduction s = m 2^k with m in [1/√2, √2), from the exponent and mantissa bits of s and one
    exact factor 2, then log m = 2 atanh f, f = (m − 1)/(m + 1) (m − 1 exact), as
    2f + 2f f² Q(f²), Q the Taylor series of atanh(f)/f − 1 in f² to degree 9 by fmas
    (:data:`ATANH_COEF`), and log s = (k ln2_hi + 2f) + (k ln2_lo + 2f f² Q) with ln2 in two
    parts (k ln2_hi exact). Within 2 ulp of libm's log (measured in
    tests/kernels/test_noisy_reference.py). −inf at 0, inf at inf, NaN below 0 and for NaN; the
    kernels call it on uniforms in [2^-53, 1] only (subnormals are not reduced). Selects, no
    branch: a loop of it vectorises."""

    def log(s):
        """log s (the notes of :func:`log_positive`)."""
        b = as_bits(s)
        m = from_bits((b & _MANTISSA) | _HALF_EXPONENT)
        k = float((b >> 52) - 1022)
        u = m < SQRT_HALF  # [1/2, 1) -> [1/sqrt 2, 1) or [1, sqrt 2)
        m = mul(m, 2.0) if u else m
        k = k - 1.0 if u else k
        f = (m - 1.0) / (m + 1.0)
        r = mul(f, f)
        t = f + f
        p = fma(_A[9], r, _A[8])
        p = fma(p, r, _A[7])
        p = fma(p, r, _A[6])
        p = fma(p, r, _A[5])
        p = fma(p, r, _A[4])
        p = fma(p, r, _A[3])
        p = fma(p, r, _A[2])
        p = fma(p, r, _A[1])
        p = fma(p, r, _A[0])
        lo = fma(k, LN2_LO, mul(mul(t, r), p))
        out = fma(k, LN2_HI, t) + lo
        out = s if s == math.inf else out
        out = math.nan if not s >= 0.0 else out
        return -math.inf if s == 0.0 else out

    return log


def sincos_turn(fma, mul):
    """``sincos(u)``: (sin 2πu, cos 2πu) for u in [0, 1), with no call to a libm. The
    reduction is exact because the angle is given in turns: t = 4u (exact), q the nearest
    integer, r = t − q in [−1/2, 1/2] (exact), then sin and cos of πr/2 by their Taylor
    polynomials in r² (:data:`SIN_COEF`, :data:`COS_COEF`, one fma per degree) and the
    rotation by q quarter turns. Selects, no branch: a loop of it vectorises."""

    def sincos(u):
        """(sin 2πu, cos 2πu), u in [0, 1)."""
        t = mul(u, 4.0)
        q = math.floor(t + 0.5)
        r = t - q
        r2 = mul(r, r)
        ps = fma(_S[9], r2, _S[8])
        ps = fma(ps, r2, _S[7])
        ps = fma(ps, r2, _S[6])
        ps = fma(ps, r2, _S[5])
        ps = fma(ps, r2, _S[4])
        ps = fma(ps, r2, _S[3])
        ps = fma(ps, r2, _S[2])
        ps = fma(ps, r2, _S[1])
        ps = fma(ps, r2, _S[0])
        pc = fma(_CO[9], r2, _CO[8])
        pc = fma(pc, r2, _CO[7])
        pc = fma(pc, r2, _CO[6])
        pc = fma(pc, r2, _CO[5])
        pc = fma(pc, r2, _CO[4])
        pc = fma(pc, r2, _CO[3])
        pc = fma(pc, r2, _CO[2])
        pc = fma(pc, r2, _CO[1])
        pc = fma(pc, r2, _CO[0])
        sn = mul(r, ps)
        # (sin, cos) of a + q π/2, q mod 4 = 0, 1, 2, 3: (s, c), (c, −s), (−s, −c), (−c, s), as
        # a swap and two signs (no branch)
        quarter = int(q) & 3
        odd = (quarter & 1) == 1
        a = pc if odd else sn
        b = sn if odd else pc
        return mul(a, float(1 - (quarter & 2))), mul(b, float(1 - ((quarter + 1) & 2)))

    return sincos


def box_muller(log, sincos, mul):
    """``normals(u, v)``: two independent standard normals from two uniforms, u in (0, 1] and
    v in [0, 1) (Box & Muller 1958): √(−2 log u) (cos 2πv, sin 2πv), with the log of
    :func:`log_positive` and the sine and cosine of :func:`sincos_turn`. No rejection, so
    each pair costs exactly two uniforms of the stream and a loop of pairs vectorises."""

    def normals(u, v):
        """(√(−2 log u) cos 2πv, √(−2 log u) sin 2πv)."""
        radius = math.sqrt(mul(-2.0, log(u)))
        s, c = sincos(v)
        return mul(radius, c), mul(radius, s)

    return normals
