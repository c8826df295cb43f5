"""Slow, obviously correct versions of every kernel in :mod:`metastab.kernels`, for tests only.

Everything here is plain Python: integers mod 2**64 for the random numbers, Python floats for the
arithmetic, one scalar operation at a time. Every multiply-add that the kernels fuse is
``arith.fma_exact`` (a b + c rounded once, exactly as the kernels' fma), the exp is the kernels'
FMA exp (:func:`exp_nonpositive`), and sums are explicit left-to-right loops
``acc = fma_exact(a, b, acc)`` from +0.0 in the same order as the kernels, never ``np.dot`` / BLAS
/ vectorised ``np.exp`` (whose summation order, contraction and SIMD exp differ in the last
bits), so that the kernels can be compared with this module BIT FOR BIT.

Equations are those of docs: models#models-rd (cited per function). Notation: a configuration is a
list of n tokens x_i in R^d, the key-query matrix B is d×d and not assumed symmetric, the score
of token j for token i is s_ij = <B x_i, x_j>, and a step moves token i to
x_i + γ (target_i − x_i) (scalar step γ in (0, 1]) or x_i + P (target_i − x_i) (step matrix
P = (I + V)^{-1} V for a general value matrix V).

The point-to-hull distance used by :func:`leave_hull` is computed independently of the kernel's
Frank-Wolfe certificate: exactly, by projecting onto the affine hull of every affinely independent
subset of the points (Carathéodory) and keeping the projections that fall inside their simplex.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..arith import exp_fma_exact, fma_exact
from ..params import CHAIN, FLOW, HARDMAX, LOCALMAX

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
TWO_M53 = 2.0**-53


# --------------------------------------------------------------------------------------------
# Random numbers: splitmix64 seeding and xoshiro256** (Blackman & Vigna 2018), Python ints.
# --------------------------------------------------------------------------------------------


def rotl(x: int, k: int) -> int:
    """Rotate the 64-bit word x left by k bits."""
    return ((x << k) | (x >> (64 - k))) & MASK64


def mix64(z: int) -> int:
    """The splitmix64 output function on a 64-bit word."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def seed_stream(key0: int, key1: int, chain: int) -> list[int]:
    """The xoshiro256** state [s0, s1, s2, s3] of chain ``chain``.

    splitmix64 started at key0 XOR mix64(key1 + chain), four outputs: each output adds the golden
    gamma 0x9E3779B97F4A7C15 to the splitmix state and returns mix64 of it.
    """
    z = (int(key0) ^ mix64((int(key1) + int(chain)) & MASK64)) & MASK64
    state = []
    for _ in range(4):
        z = (z + GOLDEN) & MASK64
        state.append(mix64(z))
    return state


def seed_streams(key0: int, key1: int, first: int, chains: int) -> np.ndarray:
    """(chains, 4) uint64 states of chains first .. first + chains - 1 (see :func:`seed_stream`)."""
    rows = [seed_stream(key0, key1, first + k) for k in range(chains)]
    return np.array(rows, dtype=np.uint64).reshape(chains, 4)


def seed_keys(entropy: int, spawn_key: tuple = ()) -> tuple[int, int]:
    """The 128-bit key of a root seed: two uint64 words of its SeedSequence state."""
    key = np.random.SeedSequence(entropy, spawn_key=spawn_key).generate_state(2, np.uint64)
    return int(key[0]), int(key[1])


class Xoshiro256:
    """xoshiro256** with its state in four Python ints (a copy; the caller's array is untouched).

    >>> rng = Xoshiro256([1, 2, 3, 4])
    >>> rng.next_u64()
    11520
    """

    def __init__(self, state):
        self.s = [int(w) & MASK64 for w in state]
        if len(self.s) != 4:
            raise ValueError(f"state must have 4 words, got {len(self.s)}")

    def next_u64(self) -> int:
        s0, s1, s2, s3 = self.s
        result = (rotl((s1 * 5) & MASK64, 7) * 9) & MASK64
        t = (s1 << 17) & MASK64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        self.s = [s0, s1, s2, s3]
        return result

    def next_uniform(self) -> float:
        """A uniform on [0, 1) with 53 random bits: (x >> 11) * 2**-53."""
        return float(self.next_u64() >> 11) * TWO_M53

    def state(self) -> np.ndarray:
        return np.array(self.s, dtype=np.uint64)


# --------------------------------------------------------------------------------------------
# One step
# --------------------------------------------------------------------------------------------


def _rows(x) -> list[list[float]]:
    return [[float(v) for v in row] for row in np.asarray(x, dtype=float)]


def scores(x, B, i: int) -> list[float]:
    """s_ij = <B x_i, x_j> for all j (docs: models#models-rd), as bx = B x_i then <bx, x_j>, each
    sum one fma per term from +0.0."""
    x, B = _rows(x), _rows(B)
    d = len(x[0])
    bx = []
    for k in range(d):
        acc = 0.0
        for m in range(d):
            acc = fma_exact(B[k][m], x[i][m], acc)
        bx.append(acc)
    s = []
    for xj in x:
        acc = 0.0
        for k in range(d):
            acc = fma_exact(bx[k], xj[k], acc)
        s.append(acc)
    return s


def exp_nonpositive(z: float) -> float:
    """The kernels' exp(z) for z <= 0, ``arith.exp_fma`` operation for operation: z = k ln2 + r
    with k = round(z log2 e) (by adding 1.5·2^52, one fma), r by two fmas, e^r by the degree-13
    Taylor polynomial in Horner form (one fma per degree), times 2^k; 0 when k < −1022 (results
    below the normal range are flushed). Within ~1 ulp of ``math.exp``."""
    return exp_fma_exact(z)


def softmax_weights(s: list[float], beta: float) -> tuple[list[float], float]:
    """Unnormalised softmax_j(β s_j): w_j = exp(β (s_j − max s)) (max-shifted), and Σ_j w_j."""
    best = -math.inf
    for v in s:
        if v > best:
            best = v
    w = [exp_nonpositive(beta * (v - best)) for v in s]
    total = 0.0
    for v in w:
        total += v
    return w, total


def move(xi: list[float], target: list[float], gamma: float | None, P=None) -> list[float]:
    """x_i + γ (target − x_i) (one fma per coordinate), or x_i + P (target − x_i) with a step
    matrix P (docs: models#models-rd)."""
    d = len(xi)
    if P is None:
        if gamma is None:
            raise ValueError("move: gamma must be given when there is no step matrix P")
        return [fma_exact(gamma, target[k] - xi[k], xi[k]) for k in range(d)]
    P = _rows(P)
    out = []
    for k in range(d):
        acc = 0.0
        for m in range(d):
            acc = fma_exact(P[k][m], target[m] - xi[m], acc)
        out.append(xi[k] + acc)
    return out


RARE_CUT = 2.0**-20


def bernoulli(p: float, u: float, rng) -> bool:
    """An exact Bernoulli(p) trial: U < p for U = (m + V) 2^-53, where u = m 2^-53 and V is
    uniform. With q = p 2^53: True if m + 1 <= q, False if m >= q, else (m = floor q) the trial
    V < q − m, decided in the same way by the next uniform of ``rng``."""
    q = p * 2.0**53
    m = u * 2.0**53
    while True:
        if m + 1.0 <= q:
            return True
        if not m < q:
            return False
        q = (q - m) * 2.0**53
        m = float(rng.next_u64() >> 11)


def pick(w: list[float], u: float, rng=None) -> int:
    """Index j with probability w_j / Σ w, to full relative precision, from the uniform u and,
    when needed, further uniforms of ``rng``.

    The candidates are {j : w_j < hi} (hi = ∞ at first), of largest weight top; those with
    w_j < cut = RARE_CUT · top are rare, of probability p = S_rare / (S_rare + S_keep) (S_keep:
    the sum of the other candidates' weights).
    If p > 0 an exact :func:`bernoulli` trial decides whether the pick is rare; if it is, the
    rule starts again on the rare candidates (hi = cut) with a fresh uniform from ``rng``.
    Otherwise the pick is the first non-rare candidate whose cumulative weight exceeds
    max(u (S_rare + S_keep) − S_rare, 0) (one fma; the rare picks fill the start of the scale), or,
    if rounding leaves none, the last one. Zero weights are never picked.
    """
    hi = math.inf
    while True:
        top = 0.0
        for wj in w:
            if wj < hi:
                top = max(top, wj)
        cut = RARE_CUT * top
        rare = 0.0
        keep = 0.0
        for wj in w:
            if wj < cut:
                rare += wj
            elif wj < hi:
                keep += wj
        tot = rare + keep
        if rare > 0.0 and bernoulli(rare / tot, u, rng):
            hi = cut
            u = rng.next_uniform()
            continue
        threshold = max(fma_exact(u, tot, -rare), 0.0)
        cum = 0.0
        last = -1
        for j, wj in enumerate(w):
            if cut <= wj < hi:
                cum += wj
                if cum > threshold:
                    return j
                last = j
        return last


def chain_step(x, B, beta: float, gamma, u, rng=None) -> np.ndarray:
    """SA_P, one synchronous step of the finite-β chain ([FW] §5, eq. (SA_ℙ)).

    Each token i independently picks j with probability softmax_j(β s_ij) (self included) by
    :func:`pick` with the uniform u[i] (and, rarely, further uniforms of ``rng``, tokens in
    order), and moves to x_i + γ (x_j − x_i). ``gamma`` is a scalar or a d×d step matrix P. All
    tokens use the scores of the old configuration (synchronous update).
    """
    xs = _rows(x)
    P = _step_matrix(gamma)
    new = []
    for i in range(len(xs)):
        w, total = softmax_weights(scores(xs, B, i), beta)
        if not total >= 1.0:  # non-finite scores: the kernel poisons the token, never guesses
            new.append([math.nan] * len(xs[i]))
            continue
        j = pick(w, float(u[i]), rng)
        new.append(move(xs[i], xs[j], None if P is not None else float(gamma), P))
    return np.array(new, dtype=float)


def softmax_flow_step(x, B, beta: float, gamma) -> np.ndarray:
    """SA_β, one deterministic softmax layer ([FW] §5, eq. (SA_β)):
    x_i ← x_i + γ (Σ_j softmax_j(β s_ij) x_j − x_i), the mean computed as (Σ_j w_j x_j) / Σ_j w_j
    (one fma per term).
    """
    xs = _rows(x)
    P = _step_matrix(gamma)
    n, d = len(xs), len(xs[0])
    new = []
    for i in range(n):
        w, total = softmax_weights(scores(xs, B, i), beta)
        target = []
        for k in range(d):
            acc = 0.0
            for j in range(n):
                acc = fma_exact(w[j], xs[j][k], acc)
            target.append(acc / total)
        new.append(move(xs[i], target, None if P is not None else float(gamma), P))
    return np.array(new, dtype=float)


def same_point(a: list[float], b: list[float], tol: float) -> bool:
    """Two leaders are one point: |a − b|_inf <= tol * max(|a|_inf, |b|_inf)."""
    diff = 0.0
    size = 0.0
    for ak, bk in zip(a, b):
        diff = max(diff, abs(ak - bk))
        size = max(size, abs(ak), abs(bk))
    return diff <= tol * size


def leaders(s: list[float], tol: float) -> list[int]:
    """L_i = {j : s_ij >= max_k s_ik − tol · max_k |s_ik|}, the hardmax leader set with a relative
    tie tolerance (written as "not s_j < cut", as the kernel does)."""
    best = -math.inf
    scale = 0.0
    for v in s:
        if v > best:
            best = v
        scale = max(scale, abs(v))
    cut = fma_exact(-tol, scale, best)
    return [j for j, v in enumerate(s) if not v < cut]


def hardmax_step(x, B, gamma, ties: str = "index", tol: float = 0.0) -> np.ndarray:
    """SA_∞, one hardmax / Frank-Wolfe step ([FW] §1, eq. (SA_∞)):
    x_i ← x_i + γ (mean_{j in L_i} x_j − x_i).

    ``ties="index"`` averages over the leader indices ([AFZ]); ``ties="point"`` over the distinct
    leader points ([FW]'s set reading): a leader is dropped when it is the same point
    (:func:`same_point`) as an earlier leader.
    """
    if ties not in ("index", "point"):
        raise ValueError(f"ties must be 'index' or 'point', got {ties!r}")
    xs = _rows(x)
    P = _step_matrix(gamma)
    d = len(xs[0])
    new = []
    for i in range(len(xs)):
        lead = leaders(scores(xs, B, i), tol)
        if ties == "point":
            lead = [
                j for j in lead if not any(q < j and same_point(xs[j], xs[q], tol) for q in lead)
            ]
        target = [0.0] * d
        for j in lead:
            for k in range(d):
                target[k] += xs[j][k]
        target = [t / len(lead) for t in target]
        new.append(move(xs[i], target, None if P is not None else float(gamma), P))
    return np.array(new, dtype=float)


def neighbour_cut(best: float, r: float, rule: str) -> float:
    """The localmax threshold: max_k s_ik − r ("additive") or max_k s_ik − r |max_k s_ik|
    ("relative"); j is a neighbour of i iff s_ij >= cut (docs: models#models-rd)."""
    if rule == "additive":
        return best - r
    if rule == "relative":
        return fma_exact(-r, abs(best), best)
    raise ValueError(f"rule must be 'additive' or 'relative', got {rule!r}")


def neighbours(s: list[float], r: float, rule: str = "additive") -> list[int]:
    """N_i = {j : s_ij >= cut} (:func:`neighbour_cut`), written as "not s_j < cut"."""
    best = -math.inf
    for v in s:
        if v > best:
            best = v
    cut = neighbour_cut(best, float(r), rule)
    return [j for j, v in enumerate(s) if not v < cut]


def localmax_step(x, B, gamma, r: float, rule: str = "additive") -> np.ndarray:
    """Localmax, one step (docs: models#models-rd; this package's reading of [LM]'s abstract):
    x_i ← x_i + γ (mean_{j in N_i} x_j − x_i), uniform weights over the neighbour indices."""
    xs = _rows(x)
    P = _step_matrix(gamma)
    d = len(xs[0])
    new = []
    for i in range(len(xs)):
        near = neighbours(scores(xs, B, i), r, rule)
        target = [0.0] * d
        for j in near:
            for k in range(d):
                target[k] += xs[j][k]
        target = [t / len(near) for t in target]
        new.append(move(xs[i], target, None if P is not None else float(gamma), P))
    return np.array(new, dtype=float)


def _step_matrix(gamma):
    """gamma as a d×d step matrix P (list of rows), or None for a scalar step."""
    g = np.asarray(gamma, dtype=float)
    return _rows(g) if g.ndim == 2 else None


# --------------------------------------------------------------------------------------------
# Stopping events
# --------------------------------------------------------------------------------------------


def dist2(a, b) -> float:
    """|a − b|^2 as a left-to-right sum of squared differences."""
    acc = 0.0
    for ak, bk in zip(a, b):
        diff = float(ak) - float(bk)
        acc += diff * diff
    return acc


def leave_ball(x, centers, radii) -> bool:
    """Some token is strictly farther than radii[i] from centers[i]."""
    return any(
        dist2(xi, ci) > float(r) * float(r) for xi, ci, r in zip(_rows(x), _rows(centers), radii)
    )


def reach(x, centers, radii) -> bool:
    """Every token is within radii[i] (closed ball) of centers[i]."""
    return all(
        dist2(xi, ci) <= float(r) * float(r) for xi, ci, r in zip(_rows(x), _rows(centers), radii)
    )


def collapse(x, diameter: float) -> bool:
    """The diameter max_ij |x_i − x_j| is at most ``diameter``."""
    xs = _rows(x)
    lim = float(diameter) * float(diameter)
    return all(dist2(xs[i], xs[j]) <= lim for i in range(len(xs)) for j in range(i + 1, len(xs)))


def hull_distance(p, pts) -> float:
    """Exact Euclidean distance from p to conv{pts}.

    The closest point z* lies in the relative interior of a face spanned by an affinely
    independent subset S (Carathéodory), where it is the orthogonal projection of p onto aff(S).
    So dist = min over affinely independent S (|S| <= d + 1) whose projection has barycentric
    coordinates >= 0 of |p − proj_S(p)|; every candidate is a point of the hull, so none is too
    small. Works for any degenerate hull (repeated, collinear, coplanar points, one point).
    """
    p = np.asarray(p, dtype=float)
    pts = np.unique(np.asarray(pts, dtype=float), axis=0)
    m, d = pts.shape
    best = math.inf
    for size in range(1, min(m, d + 1) + 1):
        for S in itertools.combinations(range(m), size):
            y0 = pts[S[0]]
            D = (pts[list(S[1:])] - y0).T  # d × (size - 1)
            if size == 1:
                z = y0
            else:
                if np.linalg.matrix_rank(D) < size - 1:
                    continue
                c, *_ = np.linalg.lstsq(D, p - y0, rcond=None)
                if c.min() < -1e-12 or c.sum() > 1 + 1e-12:
                    continue
                z = y0 + D @ c
            best = min(best, float(np.linalg.norm(p - z)))
    return best


def hull_distance_qp(p, pts) -> float:
    """The same distance by scipy's SLSQP on the simplex: min |Yᵀλ − p|^2, λ >= 0, Σλ = 1
    (an independent numerical check of :func:`hull_distance`, accurate to ~1e-8)."""
    from scipy.optimize import minimize

    p = np.asarray(p, dtype=float)
    Y = np.asarray(pts, dtype=float)
    m = Y.shape[0]
    res = minimize(
        lambda lam: float(np.sum((Y.T @ lam - p) ** 2)),
        np.full(m, 1.0 / m),
        jac=lambda lam: 2.0 * Y @ (Y.T @ lam - p),
        bounds=[(0.0, 1.0)] * m,
        constraints=[
            {"type": "eq", "fun": lambda lam: lam.sum() - 1.0, "jac": lambda lam: np.ones(m)}
        ],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return float(np.linalg.norm(Y.T @ res.x - p))


def leave_hull(x, centers, groups, radii) -> bool:
    """Some token i is farther than radii[i] from conv{centers_j : groups_j == groups_i}
    ([FW] Thm 5.4, exit time T2), with the exact :func:`hull_distance`."""
    xs, cs = np.asarray(x, dtype=float), np.asarray(centers, dtype=float)
    groups = np.asarray(groups)
    for i in range(xs.shape[0]):
        own = cs[groups == groups[i]]
        if hull_distance(xs[i], own) > float(radii[i]):
            return True
    return False


def vertex_assignment(x0, B, vertices) -> list[int]:
    """σ(x_i) = argmax_a <B x_i, v_a> (first maximiser), scores computed by loops."""
    xs, Bs, vs = _rows(x0), _rows(B), _rows(vertices)
    d = len(xs[0])
    out = []
    for xi in xs:
        bx = [sum(Bs[k][m] * xi[m] for m in range(d)) for k in range(d)]
        sc = [sum(bx[k] * v[k] for k in range(d)) for v in vs]
        out.append(max(range(len(vs)), key=lambda a: (sc[a], -a)))
    return out


def event_predicate(event, x0, B):
    """A callable x -> bool for an event spec of :mod:`metastab.events`, built from its
    documented meaning (not from its ``compile``) for the initial configuration x0 (n×d)."""
    x0 = np.asarray(x0, dtype=float)
    n = x0.shape[0]
    kind = event.kind
    if kind == "leave-ball":
        centers = x0 if event.centers is None else np.asarray(event.centers, dtype=float)
        radii = [event.radius] * n
        return lambda x: leave_ball(x, centers, radii)
    if kind == "leave-hull":
        radii = [event.radius] * n
        return lambda x: leave_hull(x, x0, event.groups, radii)
    if kind == "reach-vertices":
        V = np.asarray(event.vertices, dtype=float)
        assign = (
            vertex_assignment(x0, B, V)
            if event.assignment is None
            else [int(a) for a in event.assignment]
        )
        centers = V[assign]
        radii = []
        for xi, ci in zip(x0, centers):
            scale = max(1.0, float(np.abs(ci).max()))
            on_vertex = float(np.abs(xi - ci).max()) <= 1e-12 * scale
            radii.append(event.vertex_radius if on_vertex else event.radius)
        return lambda x: reach(x, centers, radii)
    if kind == "collapse":
        return lambda x: collapse(x, event.diameter)
    if kind in ("leave-uniform", "reach-uniform"):
        from .order import uniform_predicate

        return uniform_predicate(event)
    raise ValueError(f"unknown event kind {kind!r}")


# --------------------------------------------------------------------------------------------
# One chain, many steps
# --------------------------------------------------------------------------------------------


def gamma_at(gamma, t: int):
    """The step used at time t: a scalar, a d×d matrix, schedule[t] or gamma(t)."""
    if callable(gamma):
        return float(gamma(t))
    g = np.asarray(gamma, dtype=float)
    if g.ndim == 1:
        return float(g[t])
    return g if g.ndim == 2 else float(g)


def run_chain(
    model_code: int,
    x0,
    B,
    *,
    beta: float = 0.0,
    gamma=0.1,
    ties: str = "index",
    tol: float = 0.0,
    seed_state=None,
    steps: int,
    event=None,
    r=0.0,
    neighbours: str = "additive",
):
    """Drive one chain for up to ``steps`` steps with the reference RNG.

    At each step of a CHAIN model n uniforms are drawn in token order from the xoshiro256** stream
    started at ``seed_state``, then the step is taken. ``event`` (x -> bool) is checked at time 0
    and after each step; the chain stops at the first step t where it holds. A LOCALMAX chain uses
    the margin ``r`` (a scalar, a schedule r[t] or a callable r(t)) and the rule ``neighbours``.

    Returns (x, t, hit): the final configuration, the number of steps taken (``steps`` if the
    event never held: censored) and whether the event held.
    """
    x = np.array(x0, dtype=float)
    rng = Xoshiro256(seed_state) if model_code == CHAIN else None
    if event is not None and event(x):
        return x, 0, True
    for t in range(steps):
        g = gamma_at(gamma, t)
        if model_code == CHAIN:
            if rng is None:
                raise RuntimeError("simulate: a CHAIN model must have its uniform stream")
            u = [rng.next_uniform() for _ in range(x.shape[0])]
            x = chain_step(x, B, beta, g, u, rng)
        elif model_code == FLOW:
            x = softmax_flow_step(x, B, beta, g)
        elif model_code == HARDMAX:
            x = hardmax_step(x, B, g, ties, tol)
        elif model_code == LOCALMAX:
            x = localmax_step(x, B, g, gamma_at(r, t), neighbours)
        else:
            raise ValueError(f"unknown model code {model_code!r}")
        if event is not None and event(x):
            return x, t + 1, True
    return x, steps, False
