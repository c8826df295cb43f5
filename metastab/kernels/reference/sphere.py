"""Slow, obviously correct versions of the sphere kernels (:mod:`metastab.kernels.sphere`), for
tests only: plain Python floats, one scalar operation at a time, every sum a left-to-right loop in
the kernels' order, so that the kernels can be compared with this module BIT FOR BIT.

Equations: sphere.md, "Models". Scores s_ij = <B x_i, x_j>; N(y) = y / |y|. The picks of the chain
and the kernels' exp are those of :mod:`metastab.kernels.reference`.
"""

from __future__ import annotations

import math

import numpy as np

from .euclidean import _rows, exp_nonpositive, pick, scores, softmax_weights


def _matvec(M: list[list[float]], v: list[float]) -> list[float]:
    d = len(v)
    out = []
    for k in range(d):
        acc = 0.0
        for q in range(d):
            acc += M[k][q] * v[q]
        out.append(acc)
    return out


def _exp(z: float) -> float:
    """math.exp, with inf where it overflows (as in the kernels)."""
    try:
        return math.exp(z)
    except OverflowError:
        return math.inf


def normalise(y: list[float]) -> list[float]:
    """N(y) = y / |y|, the squared norm summed in k ascending."""
    acc = 0.0
    for v in y:
        acc += v * v
    r = math.sqrt(acc)
    return [v / r for v in y]


def attention(x, heads, beta: float, unnormalized: bool = False, causal: bool = False):
    """Attn(x)_i = Σ_h V_h Σ_j w^h_ij x_j, w_ij = e^{β s_ij} / Z_i with Z_i = Σ_k e^{β s_ik}
    (softmax, (SA)) or n (unnormalised, (USA)); j ≤ i only when causal. ``heads`` is a list of
    (B, V) pairs. The softmax mean is (Σ_j w_j x_j) / Σ_j w_j with w_j = exp(β(s_j − max s));
    the (USA) sum is (Σ_j w_j x_j) · (e^{β max s} / n)."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    out = []
    for i in range(n):
        m = i + 1 if causal else n
        a = [0.0] * d
        for B, V in heads:
            s = scores(xs, B, i)[:m]
            w, total = softmax_weights(s, beta)
            acc = [0.0] * d
            for j in range(m):
                for k in range(d):
                    acc[k] += w[j] * xs[j][k]
            if unnormalized:
                scale = _exp(beta * max(s)) / n
                g = [v * scale for v in acc]
            else:
                g = [v / total for v in acc]
            vg = _matvec(_rows(V), g)
            a = [a[k] + vg[k] for k in range(d)]
        out.append(a)
    return out


def velocity(x, heads, beta: float, unnormalized: bool, causal: bool, project: bool):
    """Attn(x)_i, or P⊥_{x_i} Attn(x)_i = A_i − <x_i, A_i> x_i with ``project``."""
    xs = _rows(x)
    A = attention(xs, heads, beta, unnormalized, causal)
    if not project:
        return A
    out = []
    for xi, ai in zip(xs, A):
        dot = 0.0
        for k in range(len(xi)):
            dot += xi[k] * ai[k]
        out.append([ai[k] - dot * xi[k] for k in range(len(xi))])
    return out


def flow_step(
    x,
    heads,
    beta: float,
    dt: float,
    *,
    attention: str = "softmax",
    scheme: str = "post-ln",
    causal: bool = False,
) -> np.ndarray:
    """One step of the sphere flow: post-LN x_i ← N(x_i + dt Attn(x)_i), or RK4 on
    ẋ = P⊥ Attn(x) (k1..k4 at x, x + dt/2 k1, x + dt/2 k2, x + dt k3; increment
    dt/6 · (((k1 + 2 k2) + 2 k3) + k4)) followed by N, or pre-LN x_i ← x_i + dt Attn(N(x))_i
    (no N after the step)."""
    xs = _rows(x)
    n, d = len(xs), len(xs[0])
    un = attention == "unnormalized"
    if scheme == "pre-ln":
        A = velocity([normalise(xi) for xi in xs], heads, beta, un, causal, False)
        return np.array([[xs[i][k] + dt * A[i][k] for k in range(d)] for i in range(n)])
    if scheme == "post-ln":
        A = velocity(xs, heads, beta, un, causal, False)
        y = [[xs[i][k] + dt * A[i][k] for k in range(d)] for i in range(n)]
    else:
        K = [velocity(xs, heads, beta, un, causal, True)]
        for h in (0.5 * dt, 0.5 * dt, dt):
            stage = [[xs[i][k] + h * K[-1][i][k] for k in range(d)] for i in range(n)]
            K.append(velocity(stage, heads, beta, un, causal, True))
        sixth = dt / 6.0
        y = [
            [
                xs[i][k]
                + sixth * (((K[0][i][k] + 2.0 * K[1][i][k]) + 2.0 * K[2][i][k]) + K[3][i][k])
                for k in range(d)
            ]
            for i in range(n)
        ]
    return np.array([normalise(yi) for yi in y])


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


__all__ = ["attention", "chain_step", "exp_nonpositive", "flow_step", "normalise", "velocity"]
