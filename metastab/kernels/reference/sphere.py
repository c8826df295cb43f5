"""Slow, obviously correct versions of the sphere kernels
(:mod:`metastab.kernels.cpu.sphere_steps`), for tests only: plain Python floats, one scalar
operation at a time, every sum a left-to-right loop in the kernels' order, so that the kernels can
be compared with this module BIT FOR BIT.

Equations: docs: models#models-sphere. Scores s_ij = <B x_i, x_j>; N(y) = y / |y|. The picks of the
chain and the kernels' exp are those of :mod:`metastab.kernels.reference.euclidean`.
"""

from __future__ import annotations

import math

import numpy as np

from ..arith import exp_fma_exact, fma_exact
from ..params import SHIFT_SPREAD
from .euclidean import Xoshiro256, _rows, exp_nonpositive, pick, scores, softmax_weights


def _matvec(M: list[list[float]], v: list[float], madd=None) -> list[float]:
    """M v, each entry summed in q ascending from +0.0 (each term one ``madd``, a fused
    multiply-add, where given)."""
    d = len(v)
    out = []
    for k in range(d):
        acc = 0.0
        for q in range(d):
            acc = acc + M[k][q] * v[q] if madd is None else madd(M[k][q], v[q], acc)
        out.append(acc)
    return out


def normalise(y: list[float]) -> list[float]:
    """N(y) = y / |y| (the chain's LayerNorm), the squared norm summed in k ascending."""
    acc = 0.0
    for v in y:
        acc += v * v
    r = math.sqrt(acc)
    return [v / r for v in y]


def dot8(a: list[float], b: list[float]) -> float:
    """<a, b> as the fused kernels sum it: p_m = Σ_{k ≡ m (mod 8)} a_k b_k (k ascending, one
    fma each), then ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))."""
    p = [0.0] * 8
    for k in range(len(a)):
        p[k % 8] = fma_exact(a[k], b[k], p[k % 8])
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))


def normalise_fused(y: list[float]) -> list[float]:
    """N(y) = y (1 / |y|) (the flow's LayerNorm), |y|^2 by :func:`dot8`."""
    c = 1.0 / math.sqrt(dot8(y, y))
    return [v * c for v in y]


def _exp(z: float) -> float:
    """math.exp, with inf where it overflows (as in the kernels)."""
    try:
        return math.exp(z)
    except OverflowError:
        return math.inf


def squared_norm(x: list[float]) -> float:
    """<x, x> as the Gram's diagonal sums it: k ascending from +0.0, one fma each."""
    a = 0.0
    for v in x:
        a = fma_exact(v, v, a)
    return a


def common_shift(xs: list[list[float]], beta: float) -> float | None:
    """The one shift of every score for B = I (sphere._common_shift): c = max_j s_jj with
    s_jj = :func:`squared_norm` of x_j, if β ≥ 0 and β (c − min_j s_jj) <= 64; else None (each
    row is shifted by its maximum)."""
    norms = [squared_norm(xj) for xj in xs]
    if any(v != v for v in norms):
        return None
    hi, lo = max(norms), min(norms)
    return hi if beta >= 0.0 and beta * (hi - lo) <= SHIFT_SPREAD else None


def positional_weight(alibi: float, n: int, m: int) -> float:
    """The ALiBi weight a_m = e^{-(λ/n) m} of two tokens m positions apart (λ = ``alibi``), as
    ``exp_fma`` of −((λ/n) m); 1.0 where λ = 0."""
    return exp_fma_exact(-((alibi / n) * m)) if alibi != 0.0 else 1.0


def attention(
    x,
    heads,
    beta: float,
    unnormalized: bool = False,
    causal: bool = False,
    strict: bool = False,
    alibi: float = 0.0,
    positional: bool = False,
    offset: float = 0.0,
):
    """Attn(x)_i = Σ_h V_h Σ_j w^h_ij x_j, w_ij = a_ij e^{β s_ij} / Z_i with
    Z_i = Σ_k a_ik e^{β s_ik} (softmax, (SA)), or for (USA) Z_i = n, or Σ_k a_ik with
    ``positional`` (the attended k in increasing order), the exp then e^{β (s_ij − offset)};
    a_ij = :func:`positional_weight` of |i − j| (the ALiBi slope ``alibi``); j ≤ i only when
    causal, j < i with ``strict`` (token 0 then attends to none: Attn(x)_0 = 0). ``heads`` is a
    list of (B, V) pairs. Fused arithmetic (``arith``): B x_i, s_ij = <B x_i, x_j> (k ascending) and
    Σ_j w_j x_j (j ascending) one fma per term; w_j = exp_fma(β(s_j − c)), Σ_j w_j in
    increasing j, with c the :func:`common_shift` where every B is the identity and it is
    defined, else c = max_j s_j (over the attended j); each w_j times a_ij where λ is not 0; the
    sums times 1 / Σ_j w_j (softmax) or e^{β (c − offset)} / Z_i (USA), or 0 where no j is
    attended; V by fmas; heads added in order."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    plain = all(np.array_equal(np.asarray(B, dtype=float), np.eye(d)) for B, _ in heads)
    shift = common_shift(xs, beta) if plain else None
    out = []
    for i in range(n):
        m = (i if strict else i + 1) if causal else n
        a = [0.0] * d
        pos = [positional_weight(alibi, n, abs(i - j)) for j in range(m)]
        for h, (B, V) in enumerate(heads):
            bx = _matvec(_rows(B), xs[i], fma_exact)
            s = []
            for j in range(m):
                sj = 0.0
                for k in range(d):
                    sj = fma_exact(bx[k], xs[j][k], sj)
                s.append(sj)
            best = (max(s) if s else -math.inf) if shift is None else shift
            w = [exp_fma_exact(beta * (v - best)) for v in s]
            if alibi != 0.0:
                w = [wj * pj for wj, pj in zip(w, pos)]
            total = 0.0
            for v in w:
                total += v
            acc = [0.0] * d
            for j in range(m):
                for k in range(d):
                    acc[k] = fma_exact(w[j], xs[j][k], acc[k])
            if m == 0:  # token 0 under a strict mask
                scale = 0.0
            elif unnormalized:
                z = 0.0
                for pj in pos:
                    z += pj
                scale = _exp(beta * (best - offset)) / (z if positional else n)
            else:
                scale = 1.0 / total
            g = [v * scale for v in acc]
            vg = _matvec(_rows(V), g, fma_exact)
            a = vg if h == 0 else [a[k] + vg[k] for k in range(d)]
        out.append(a)
    return out


def velocity(
    x,
    heads,
    beta: float,
    unnormalized: bool,
    causal: bool,
    project: bool,
    position=(False, 0.0, False, 0.0),
):
    """Attn(x)_i, or P⊥_{x_i} Attn(x)_i = A_i − <x_i, A_i> x_i with ``project`` (fused);
    ``position``: (strict, alibi, positional, offset) of :func:`attention`."""
    xs = _rows(x)
    A = attention(xs, heads, beta, unnormalized, causal, *position)
    if not project:
        return A
    out = []
    for xi, ai in zip(xs, A):
        dot = dot8(xi, ai)
        out.append([fma_exact(-dot, xi[k], ai[k]) for k in range(len(xi))])
    return out


def sphere_flow_step(
    x,
    heads,
    beta: float,
    dt: float,
    *,
    attention: str = "softmax",
    scheme: str = "post-ln",
    causal: bool = False,
    strict: bool = False,
    alibi: float = 0.0,
    positional: bool = False,
    offset: float = 0.0,
    alpha: float = 0.2,
    tau: float | None = None,
    step: int = 0,
) -> np.ndarray:
    """One step (layer ``step``, from t = step·dt) of the sphere flow (positional options:
    :func:`attention`): post-LN x_i ← N(x_i + dt Attn(x)_i), or RK4 on ẋ = P⊥ Attn(x) (k1..k4
    at x, x + dt/2 k1, x + dt/2 k2, x + dt k3; increment dt/6 · (((k1 + 2 k2) + 2 k3) + k4))
    followed by N, or pre-LN x_i ← x_i + dt Attn(N(x))_i (no N after the step); the schemes of
    Karagodin et al.: peri-LN x_i ← x_i + dt N(Attn(N(x))_i), nGPT
    x_i ← N(x_i + (dt α) N(Attn(x)_i)), LN-scaling post-LN's step of size dt / √(1 + step·dt),
    Mix-LN post-LN's step for step < ⌈τ (1 − 1e-9) / dt⌉, else pre-LN's. Each x + h k is one
    fma; N by :func:`normalise_fused`."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    un = attention == "unnormalized"
    pos = (strict, alibi, positional, offset)

    def ahead(h, K):
        return [[fma_exact(h, K[i][k], xs[i][k]) for k in range(d)] for i in range(n)]

    if scheme == "mix-ln":
        if tau is None:
            raise ValueError("mix-ln needs tau")
        post = step < max(0, math.ceil(tau * (1.0 - 1e-9) / dt))
        scheme = "post-ln" if post else "pre-ln"
    if scheme == "ln-scaling":
        dt = dt / math.sqrt(1.0 + float(step) * dt)
        scheme = "post-ln"
    if scheme in ("pre-ln", "peri-ln"):
        A = velocity([normalise_fused(xi) for xi in xs], heads, beta, un, causal, False, pos)
        if scheme == "peri-ln":
            A = [normalise_fused(a) for a in A]
        return np.array(ahead(dt, A))
    if scheme == "ngpt":
        A = velocity(xs, heads, beta, un, causal, False, pos)
        y = ahead(dt * alpha, [normalise_fused(a) for a in A])
    elif scheme == "post-ln":
        y = ahead(dt, velocity(xs, heads, beta, un, causal, False, pos))
    elif scheme == "rk4":
        K = [velocity(xs, heads, beta, un, causal, True, pos)]
        for h in (0.5 * dt, 0.5 * dt, dt):
            K.append(velocity(ahead(h, K[-1]), heads, beta, un, causal, True, pos))
        inc = [
            [((K[0][i][k] + 2.0 * K[1][i][k]) + 2.0 * K[2][i][k]) + K[3][i][k] for k in range(d)]
            for i in range(n)
        ]
        y = ahead(dt / 6.0, inc)
    else:
        raise ValueError(f"unknown scheme {scheme!r}")
    return np.array([normalise_fused(yi) for yi in y])


def chain_step(x, B, V, beta: float, gamma: float, u, rng=None) -> np.ndarray:
    """One step of the sphere chain: token i picks j by ``_reference.pick`` (uniform u[i], rarely
    further uniforms of ``rng``, tokens in order) and moves to y = x_i + γ (V x_j − x_i), then to
    N(y), unless y equals x_i exactly (then it stays)."""
    xs = _rows(x)
    Vr = _rows(V)
    new = []
    for i in range(len(xs)):
        w, _ = softmax_weights(scores(xs, B, i), beta)
        j = pick(w, float(u[i]), rng)
        target = _matvec(Vr, xs[j])
        y = [xs[i][k] + gamma * (target[k] - xs[i][k]) for k in range(len(target))]
        new.append(y if y == xs[i] else normalise(y))
    return np.array(new, dtype=float)


# --------------------------------------------------------------------------------------------
# The noisy model: its log, its normals and its step
# --------------------------------------------------------------------------------------------

# ln 2 in two parts (ln2_hi has 32 trailing zero bits: k ln2_hi is exact), 1/√2 rounded, the
# Taylor coefficients 1 / (2j + 1) of atanh(f)/f, j = 1..10, and those of sin(πr/2) / r and
# cos(πr/2) in r², (−1)^j (π/2)^k / k!, k = 2j + 1 and 2j, j = 0..9
_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
_SQRT_HALF = 0.7071067811865476
_ATANH = [1.0 / (2 * j + 1) for j in range(1, 11)]
_SIN = [(-1) ** j * (math.pi / 2) ** (2 * j + 1) / math.factorial(2 * j + 1) for j in range(10)]
_COS = [(-1) ** j * (math.pi / 2) ** (2 * j) / math.factorial(2 * j) for j in range(10)]


def _horner(coef: list[float], r: float) -> float:
    p = coef[-1]
    for c in reversed(coef[:-1]):
        p = fma_exact(p, r, c)
    return p


def log(s: float) -> float:
    """The kernels' log of a positive double (``leaves.log_positive``), operation for
    operation: s = m 2^k with m in [1/√2, √2) (``math.frexp`` and one factor 2: the same m and k
    as the kernels' reading of the bits), f = (m − 1)/(m + 1), r = f², t = 2f, p = the Horner sum
    of 1/(2j + 1) in r by fmas, and (k ln2_hi + t) + (k ln2_lo + (t r) p), each of the two an
    fma."""
    if s != s or s < 0.0:
        return math.nan
    if s == 0.0:
        return -math.inf
    if s == math.inf:
        return s
    m, e = math.frexp(s)
    k = float(e)
    if m < _SQRT_HALF:
        m, k = m * 2.0, k - 1.0
    f = (m - 1.0) / (m + 1.0)
    r = f * f
    t = f + f
    lo = fma_exact(k, _LN2_LO, (t * r) * _horner(_ATANH, r))
    return fma_exact(k, _LN2_HI, t) + lo


def sincos(u: float) -> tuple[float, float]:
    """(sin 2πu, cos 2πu) for u in [0, 1) as the kernels compute them
    (``leaves.sincos_turn``): t = 4u, q = ⌊t + 1/2⌋, r = t − q, the polynomials of sin(πr/2)/r
    and cos(πr/2) in r² by fmas, and the rotation by q mod 4 quarter turns."""
    t = u * 4.0
    q = math.floor(t + 0.5)
    r = t - q
    r2 = r * r
    sn, cs = r * _horner(_SIN, r2), _horner(_COS, r2)
    return [(sn, cs), (cs, -sn), (-sn, -cs), (-cs, sn)][int(q) & 3]


def normal_pair(rng: Xoshiro256) -> tuple[float, float]:
    """Two standard normals by Box–Muller, as the kernels draw them: u = 1 − U, v = V (the
    stream's next two 53-bit uniforms; u in (0, 1], exact), ρ = √(−2 log u), and
    (ρ cos 2πv, ρ sin 2πv)."""
    u = 1.0 - rng.next_uniform()
    v = rng.next_uniform()
    radius = math.sqrt(-2.0 * log(u))
    s, c = sincos(v)
    return radius * c, radius * s


def standard_normals(rng: Xoshiro256, m: int) -> list[float]:
    """m standard normals in order, pairs of :func:`normal_pair` (the second of the last pair
    dropped where m is odd)."""
    out: list[float] = []
    while len(out) < m:
        out.extend(normal_pair(rng))
    return out[:m]


def noisy_step(
    x, heads, beta: float, dt: float, K: float, rng: Xoshiro256, attention: str = "unnormalized"
) -> np.ndarray:
    """One step of the noisy model on the sphere (``cpu.noisy_steps``): h = (K + K) dt,
    σ = √(dt + dt), ξ_ik the normal q = k n + i of :func:`standard_normals` (the stream ``rng``
    advanced), D_i = P⊥_{x_i} Attn(x)_i (:func:`velocity`, projected; not computed where h = 0),
    and x_i ← N(y_i) (:func:`normalise_fused`) with y_ik = x_ik + inc_ik (one fma by 1),
    inc_ik = fma(h, D_ik, σ fma(−<x_i, ξ_i>, x_ik, ξ_ik)) (just σ(...) where h = 0) and
    <x_i, ξ_i> by :func:`dot8`."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    h = (K + K) * dt
    sigma = math.sqrt(dt + dt)
    D = velocity(xs, heads, beta, attention == "unnormalized", False, True) if h != 0.0 else None
    z = standard_normals(rng, n * d)
    new = []
    for i in range(n):
        xi = z[i::n]  # normal q = k n + i is coordinate k of token i
        dot = dot8(xs[i], xi)
        y = []
        for k in range(d):
            g = sigma * fma_exact(-dot, xs[i][k], xi[k])
            inc = fma_exact(h, D[i][k], g) if D is not None else g
            y.append(fma_exact(1.0, inc, xs[i][k]))
        new.append(normalise_fused(y))
    return np.array(new)


__all__ = [
    "attention",
    "chain_step",
    "exp_nonpositive",
    "log",
    "noisy_step",
    "normal_pair",
    "sphere_flow_step",
    "normalise",
    "normalise_fused",
    "positional_weight",
    "standard_normals",
    "velocity",
]
