"""The retrieval profile S_t(s) estimated from the particle system (Duerinckx, Geshkovski, Rossi,
arXiv 2605.09213; the closed form is :func:`studies.lost_in_the_middle.run.profile`).

What S_t is. For iid uniform tokens on the circle the one-token laws stay uniform, and the
correlation of the last token (σ = 1) at time t with the token at s at time 0 is O(1/N): for
the Fourier mode n,

    g_n(t, 1; s) = lim_N N E[e^{i n (θ_last(t) − θ_m(0))}],   s = (m + 1)/N,

solves the causal (Volterra) equation ∂_t g_n(t, σ; s) = a_n [K(σ, s) + ∫_s^σ K(σ, ρ) g_n(t, ρ; s)
dρ], K(σ, ρ) = λ e^{−λ(σ−ρ)} / (1 − e^{−λσ}) the limit of N a_jk, a_n = n² I_n(β); only the
chains s < ρ < σ enter because θ_ρ(t) for ρ < s does not depend on θ_s(0). Its solution at σ = 1
is the script's g_{a_n}(t, 1; s) = λ e^{λs}/(e^λ − 1) ψ_{a_n t}(Y_λ(s)) (at first order in t,
a_n t N a_{last, m}), and S_t(s) = Σ_n ω_n g_n(t, 1; s). So the particle estimate of S_t(s) is

    N Σ_n ω_n E[cos(n (θ_last(t) − θ_m(0)))]

(real: the dynamics commute with θ → −θ), whose naive Monte Carlo has variance ~ N²/2 per run.

The estimator (exact at every N). Given the other tokens' initial angles (one *base*), let
h(x) = e^{i n θ_last(t)} when θ_m(0) = x; then N E[e^{−i n θ_m(0)} h(θ_m(0))] is N times the n-th
Fourier coefficient of h, averaged over the bases. It is computed from Q runs with θ_m(0) = x_a
= x_0 + 2π a / Q, x_0 uniform (a randomly rotated Q-point rule: unbiased for every n, and exact
for the modes n not divisible by Q when h is band-limited), minus the same sum with the base run
(θ_m(0) drawn independently of x_0, so that its term has mean zero exactly; it removes the
aliased modes' noise, the Glauber difference of the base and the source runs):

    Ŝ = Σ_n ω_n (1/Q) Σ_a N [cos(n (θ^a_last(t) − x_a)) − cos(n (θ^base_last(t) − x_a))].

One base costs 1 + Q·(number of sources) runs of the package's SphereFlow; the bases are
independent, each drawn from its own seed (the study's seed, N and the base's index), so the
result does not depend on how the bases are batched.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from metastab.engine import simulate
from metastab.models.sphere import SphereFlow

from .config import Profile, Simulation


def source_tokens(n_tokens: int, cfg: Simulation) -> np.ndarray:
    """The source tokens m with s = (m + 1)/N = k / grid for k in ``cfg.sources``."""
    k = np.asarray(cfg.sources, dtype=int)
    if ((k * n_tokens) % cfg.grid).any() or k.min() < 1 or k.max() >= cfg.grid:
        raise ValueError(
            f"simulation.sources: s = k/{cfg.grid} must fall on a token of N = {n_tokens} "
            f"and lie in (0, 1), got k = {list(cfg.sources)}"
        )
    return (k * n_tokens) // cfg.grid - 1


def _base(seed: int, n_tokens: int, base: int, sources: int) -> tuple[np.ndarray, np.ndarray]:
    """The base's initial angles (iid uniform) and its rotations x_0 per source."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, n_tokens, base]))
    return rng.uniform(0.0, 2.0 * math.pi, n_tokens), rng.uniform(0.0, 2.0 * math.pi, sources)


def initial_angles(
    seed: int, n_tokens: int, bases: range, cfg: Simulation
) -> tuple[np.ndarray, np.ndarray]:
    """The initial angles of the runs of ``bases``, shape (bases, 1 + sources·Q, N): run 0 the
    base, run 1 + i Q + a the base with θ_{m_i}(0) = x_a; and the x_a, shape (bases, sources, Q)."""
    m, q = source_tokens(n_tokens, cfg), int(cfg.points)
    theta = np.empty((len(bases), 1 + m.size * q, n_tokens))
    xs = np.empty((len(bases), m.size, q))
    for b, base in enumerate(bases):
        theta0, x0 = _base(seed, n_tokens, base, m.size)
        xs[b] = x0[:, None] + 2.0 * math.pi * np.arange(q) / q
        theta[b] = theta0
        for i, token in enumerate(m):
            theta[b, 1 + i * q : 1 + (i + 1) * q, token] = xs[b, i]
    return theta, xs


def model(prof: Profile, dt: float) -> SphereFlow:
    """The paper's system at β = ``beta_profile``, λ = ``profile.alibi``; the script's force
    carries a factor β that the package's field does not, so the package runs at β dt (the
    same time change as the particle run of (a))."""
    beta = float(prof.beta_profile)
    return SphereFlow(
        beta, beta * dt, scheme="rk4", causal=True, strict_causal=True,
        attention="unnormalized", positional_norm=True, alibi=float(prof.alibi),
    )  # fmt: skip


def _weights(prof: Profile) -> tuple[np.ndarray, np.ndarray]:
    n = np.arange(1, prof.modes + 1, dtype=float)
    return n, np.exp(-0.5 * (math.pi * n / prof.width) ** 2)


def estimates(last: np.ndarray, xs: np.ndarray, n_tokens: int, prof: Profile) -> np.ndarray:
    """Ŝ per base, source and time from the last token's angles ``last`` (bases, runs, times)
    and the source angles ``xs`` (bases, sources, Q): shape (bases, sources, times)."""
    n, w = _weights(prof)
    b, k, q = xs.shape
    runs = last[:, 1:].reshape(b, k, q, -1)  # (bases, sources, Q, times)
    base = last[:, :1][:, :, None, :]  # (bases, 1, 1, times)
    x = xs[..., None, None]  # (bases, sources, Q, 1, 1)

    def kernel(theta: np.ndarray) -> np.ndarray:
        return (w * np.cos(n * (theta[..., None] - x))).sum(-1)

    return n_tokens * (kernel(runs) - kernel(base)).mean(axis=2)


def correlation_runs(
    seed: int,
    n_tokens: int,
    cfg: Simulation,
    prof: Profile,
    *,
    dt: float | None = None,
    bases: int | None = None,
) -> np.ndarray:
    """Ŝ of every base of ``cfg`` at N = ``n_tokens`` (bases, sources, times), the bases in
    batches of ``cfg.batch`` through :func:`metastab.simulate` (each batch one call, its chains
    in parallel); ``dt`` and ``bases`` override the config's (the step control)."""
    step = float(cfg.dt if dt is None else dt)
    total = int(bases if bases is not None else cfg.bases[list(cfg.tokens).index(n_tokens)])
    at = [int(round(t / step)) for t in cfg.times]
    if any(abs(a * step - t) > 1e-9 * max(1.0, t) for a, t in zip(at, cfg.times)):
        raise ValueError(f"simulation.times must be multiples of dt = {step}, got {cfg.times}")
    flow = model(prof, step)
    out = []
    for start in range(0, total, int(cfg.batch)):
        chunk = range(start, min(total, start + int(cfg.batch)))
        theta, xs = initial_angles(seed, n_tokens, chunk, cfg)
        x0 = np.stack([np.cos(theta), np.sin(theta)], axis=-1).reshape(-1, n_tokens, 2)
        run = simulate(flow, x0, steps=max(at), record_at=at)
        assert run.trajectory is not None  # a recorded run
        tail = run.trajectory[:, :, -1, :]  # the last token: (chains, times, 2)
        last = np.arctan2(tail[..., 1], tail[..., 0]).reshape(len(chunk), theta.shape[1], -1)
        out.append(estimates(last, xs, n_tokens, prof))
    return np.concatenate(out)


def long_table(values: np.ndarray, n_tokens: int, cfg: Simulation) -> pd.DataFrame:
    """Per-base estimates in long form: base, time, s, token, value."""
    b, k, t = values.shape
    s = np.asarray(cfg.sources, dtype=float) / cfg.grid
    return pd.DataFrame(
        {
            "tokens": n_tokens,
            "base": np.repeat(np.arange(b), k * t),
            "time": np.tile(np.asarray(cfg.times, dtype=float), b * k),
            "s": np.tile(np.repeat(s, t), b),
            "token": np.tile(np.repeat(source_tokens(n_tokens, cfg), t), b),
            "value": values.reshape(-1),
        }
    )


def summary(values: np.ndarray, n_tokens: int, cfg: Simulation) -> pd.DataFrame:
    """Mean over the bases, its standard error and the standard deviation, per time and s."""
    frame = long_table(values, n_tokens, cfg)
    g = frame.groupby(["tokens", "time", "s", "token"], sort=True)["value"]
    out = g.agg(bases="count", mean="mean", sd="std").reset_index()
    out["se"] = out["sd"] / np.sqrt(out["bases"])
    return out
