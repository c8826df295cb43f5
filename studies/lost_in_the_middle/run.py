"""The causal ALiBi particle system and the lost-in-the-middle profile of Duerinckx, Geshkovski,
Rossi (*Kinetic theory for Transformers and the lost-in-the-middle phenomenon*, arXiv 2605.09213;
their code github.com/borjanG/2026-lost-in-the-middle; docs: models#sphere-positional).

- (a) ``generate_alibi_particle_circle_dynamics.py``'s run, transcribed (its weights, force, RK4
  in the angle and "clusters" initial angles), against :class:`metastab.SphereFlow` with
  ``scheme="rk4", causal=True, strict_causal=True, attention="unnormalized",
  positional_norm=True, alibi=λ`` from the same angles: the package's RK4 on the circle in R²,
  renormalised after each step, not the script's RK4 in the angle (the same ODE; agreement to a
  stated tolerance). The script's force carries a factor β that the package's field does not: the
  package runs at dt·β (a time change), the same at β = 1. Beside it the package at dt/2 and, as
  the wrong prediction, plain causal (USA) (Z = n, j <= i).
- (d) S_t(s) estimated from the package's particle system at several N
  (:mod:`studies.lost_in_the_middle.simulation`: what correlation S_t is and the estimator).
- (b), (c) ``generate_u_shape_numerology_data.py``'s closed form: the truncated profile
  S_t(s) = Σ_{n <= n_max} ω_n λ e^{λs}/(e^λ − 1) ψ_{a_n t}(Y_λ(s)), a_n = n² I_n(β),
  ω_n = e^{−π²n²/(2M²)}, Y_λ(s) = log((e^λ − 1)/(e^{λs} − 1)), ψ_c(y) = Σ_k c^{k+1} y^k/(k!(k+1)!),
  and its threshold t_crit(β) = 2(1 − e^{−λ}) Σ ω_n a_n / Σ ω_n a_n², where the slope of S_t at
  s = 1 changes sign, computed here by scipy (I_n) and the series of ψ.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

from metastab.engine import simulate
from metastab.models.sphere import SphereFlow
from metastab.results import write_table
from metastab.studies.runner import study_meta

from . import simulation as _simulation
from .config import Config, Particles, Profile

# --- the authors' script, transcribed (generate_alibi_particle_circle_dynamics.py) -------------


def build_causal_weights(n_tokens: int, lam: float) -> np.ndarray:
    """a_jk = e^{−(λ/n)(j − k)} / Σ_{k' < j} e^{−(λ/n)(j − k')} over k < j (row 0 empty)."""
    weights = np.zeros((n_tokens, n_tokens), dtype=float)
    for j in range(1, n_tokens):
        k = np.arange(j)
        coeffs = np.exp(-(lam / n_tokens) * (j - k))
        weights[j, :j] = coeffs / coeffs.sum()
    return weights


def force(theta: np.ndarray, beta: float, weights: np.ndarray) -> np.ndarray:
    """θ̇_j = Σ_{k<j} a_jk (−β sin(θ_j − θ_k) e^{β cos(θ_j − θ_k)}); θ̇_0 = 0."""
    out = np.zeros_like(theta)
    for j in range(1, theta.size):
        diff = theta[j] - theta[:j]
        out[j] = np.dot(weights[j, :j], -beta * np.sin(diff) * np.exp(beta * np.cos(diff)))
    return out


def rk4_step(theta: np.ndarray, dt: float, beta: float, weights: np.ndarray) -> np.ndarray:
    k1 = force(theta, beta, weights)
    k2 = force(theta + 0.5 * dt * k1, beta, weights)
    k3 = force(theta + 0.5 * dt * k2, beta, weights)
    k4 = force(theta + dt * k3, beta, weights)
    return theta + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def initial_angles(n_tokens: int, seed: int) -> np.ndarray:
    """The script's "clusters" start: 4 groups of ⌈n/4⌉ tokens, centres π·linspace(0.1, 1.9, 4),
    N(0, 0.075²) offsets, wrapped to [0, 2π)."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(4), math.ceil(n_tokens / 4))[:n_tokens]
    centers = np.linspace(0.1, 1.9, 4, endpoint=True) * math.pi
    theta = centers[labels] + rng.normal(0.0, 0.075, size=n_tokens)
    return np.mod(theta, 2.0 * math.pi)


# --- the measurements ----------------------------------------------------------------------------


def _snapshots(cfg: Particles) -> tuple[int, int, np.ndarray]:
    steps = int(round(cfg.horizon / cfg.dt))
    every = int(round(cfg.every / cfg.dt))
    return steps, every, np.arange(0, steps + 1, every)


def script_run(cfg: Particles, seed: int) -> pd.DataFrame:
    """The script's trajectory at its snapshot times (long form: time, token, theta)."""
    steps, every, at = _snapshots(cfg)
    theta = initial_angles(int(cfg.tokens), seed)
    weights = build_causal_weights(int(cfg.tokens), float(cfg.alibi))
    rows = [theta.copy()]
    for step in range(1, steps + 1):
        theta = rk4_step(theta, float(cfg.dt), float(cfg.beta), weights)
        if step % every == 0:
            rows.append(theta.copy())
    return _long(np.array(rows), at * float(cfg.dt), "script")


def package_run(cfg: Particles, seed: int, source: str) -> pd.DataFrame:
    """The package's run from the script's initial angles: ``"package"`` (the paper's options at
    the script's dt), ``"package_half"`` (dt/2) or ``"usa"`` (plain causal (USA): Z = n, j <= i)."""
    steps, every, at = _snapshots(cfg)
    refine = 2 if source == "package_half" else 1
    theta0 = initial_angles(int(cfg.tokens), seed)
    x0 = np.stack([np.cos(theta0), np.sin(theta0)], axis=1)
    beta = float(cfg.beta)
    options = dict(attention="unnormalized", causal=True)
    if source != "usa":
        options |= dict(strict_causal=True, positional_norm=True, alibi=float(cfg.alibi))
    # the script's force carries a factor β: its time t is the package's β t
    model = SphereFlow(beta, beta * float(cfg.dt) / refine, scheme="rk4", **options)  # type: ignore[arg-type]
    run = simulate(model, x0, steps=steps * refine, record_at=(at * refine).tolist())
    assert run.trajectory is not None  # a recorded run
    x = run.trajectory[0]
    theta = np.arctan2(x[..., 1], x[..., 0])
    return _long(theta, at * float(cfg.dt), source)


def _long(theta: np.ndarray, times: np.ndarray, source: str) -> pd.DataFrame:
    snaps, n = theta.shape
    return pd.DataFrame(
        {
            "source": source,
            "time": np.repeat(times, n),
            "token": np.tile(np.arange(n), snaps),
            "theta": theta.reshape(-1),
        }
    )


def coefficients(beta: float, width: float, modes: int) -> tuple[np.ndarray, np.ndarray]:
    """(a_n, ω_n) for n = 1..modes: a_n = n² I_n(β), ω_n = e^{−π² n² / (2 M²)}."""
    n = np.arange(1, modes + 1, dtype=float)
    return n**2 * special.iv(n, beta), np.exp(-0.5 * (math.pi * n / width) ** 2)


def t_crit(beta: float, lam: float, width: float, modes: int) -> float:
    """t_crit(β) = 2 (1 − e^{−λ}) Σ ω_n a_n / Σ ω_n a_n² (the script's ``t_crit``)."""
    a, w = coefficients(beta, width, modes)
    return 2.0 * -math.expm1(-lam) * float((w * a).sum() / (w * a * a).sum())


def psi(c: float, y: float) -> float:
    """ψ_c(y) = Σ_{k>=0} c^{k+1} y^k / (k! (k+1)!), summed until a term is below 1e-17 of the
    total."""
    term = total = c
    k = 0
    while abs(term) > 1e-17 * max(1.0, abs(total)) and k < 10000:
        term *= c * y / ((k + 1) * (k + 2))
        total += term
        k += 1
    return total


def profile(s: float, beta: float, t: float, lam: float, width: float, modes: int) -> float:
    """S_t(s) = Σ_n ω_n λ e^{λ s} / (e^λ − 1) ψ_{a_n t}(Y_λ(s)); at λ = 0 (no ALiBi: uniform
    causal weights) the script's limit, coefficient 1 and Y_0(s) = log(1/s)."""
    a, w = coefficients(beta, width, modes)
    if lam == 0.0:
        y, coeff = math.log(1.0 / s), 1.0
    else:
        y = math.log(math.expm1(lam) / math.expm1(lam * s))
        coeff = lam * math.exp(lam * s) / math.expm1(lam)
    return float(sum(wn * coeff * psi(an * t, y) for an, wn in zip(a, w)))


def right_slope(beta: float, t: float, cfg: Profile) -> float:
    """(S_t(1) − S_t(1 − h)) / h, S_t(1) = Σ ω_n λ e^λ/(e^λ − 1) a_n t (Y_λ(1) = 0)."""
    lam, h = float(cfg.alibi), float(cfg.slope_step)
    return (
        profile(1.0, beta, t, lam, cfg.width, cfg.modes)
        - profile(1.0 - h, beta, t, lam, cfg.width, cfg.modes)
    ) / h


def thresholds(cfg: Profile) -> pd.DataFrame:
    """Per β: t_crit by the formula and the root in t of the right-end slope (brentq)."""
    from scipy.optimize import brentq

    rows = []
    for beta in map(float, cfg.betas):
        tc = t_crit(beta, cfg.alibi, cfg.width, cfg.modes)
        root = brentq(lambda t, b=beta: right_slope(b, t, cfg), 0.2 * tc, 5.0 * tc, xtol=1e-12)
        rows.append({"beta": beta, "t_crit": tc, "t_root": root})
    return pd.DataFrame(rows)


def profiles(cfg: Profile) -> pd.DataFrame:
    """S_t(s) on the script's grid of s, at the configured times and multiples of t_crit."""
    beta, lam = float(cfg.beta_profile), float(cfg.alibi)
    tc = t_crit(beta, lam, cfg.width, cfg.modes)
    times = [(float(t), "time") for t in cfg.times] + [
        (m * tc, f"{m:g} t_crit") for m in cfg.margins
    ]
    # the script's grid of s, and s = 1 (Y_λ(1) = 0): the end where recency is read
    grid = np.append(0.02 + np.arange(cfg.grid) * (0.96 / (cfg.grid - 1)), 1.0)
    rows = []
    for t, label in times:
        for s in grid:
            rows.append(
                {"time": t, "label": label, "s": float(s),
                 "value": profile(float(s), beta, t, lam, cfg.width, cfg.modes)}
            )  # fmt: skip
    return pd.DataFrame(rows)


def run(config: Config, out: Path) -> None:
    """The trajectories, thresholds and profiles, with provenance."""
    out = Path(out)
    meta = study_meta("lost-in-the-middle", config)
    p, seed = config.particles, int(config.seed)
    traj = pd.concat(
        [script_run(p, seed)]
        + [package_run(p, seed, s) for s in ("package", "package_half", "usa")],
        ignore_index=True,
    )
    write_table(
        traj,
        out / "trajectories.csv",
        dict(
            meta,
            table="angles θ_j(t) at the script's snapshot times: script = the authors' RK4 in "
            "the angle (transcribed); package = SphereFlow rk4 with the paper's options at the "
            "script's dt; package_half = at dt/2; usa = plain causal (USA), the wrong prediction",
        ),
    )
    write_table(
        thresholds(config.profile),
        out / "thresholds.csv",
        dict(meta, table="t_crit(β) by the formula and the root of the right-end slope of S_t"),
    )
    write_table(
        profiles(config.profile),
        out / "profiles.csv",
        dict(meta, table="the truncated retrieval profile S_t(s) (closed form) at each time"),
    )
    simulated(config, out, meta)


def simulated(config: Config, out: Path, meta: dict) -> None:
    """(d): Ŝ per N, time and source (mean, standard error over the bases), the per-base values
    at the largest N (for the shape and the argmin's bootstrap), the step control at dt/2."""
    sim, prof = config.simulation, config.profile
    seed = int(sim.seed)
    frames, largest = [], None
    for n_tokens in map(int, sim.tokens):
        values = _simulation.correlation_runs(seed, n_tokens, sim, prof)
        frames.append(_simulation.summary(values, n_tokens, sim))
        if n_tokens == max(sim.tokens):
            largest = _simulation.long_table(values, n_tokens, sim)
    what = (
        f"Ŝ = N Σ_n ω_n E cos(n(θ_last(t) − θ_m(0))), s = (m+1)/N, the estimate of S_t(s) from "
        f"SphereFlow(rk4, causal, strict_causal, unnormalized, positional_norm, "
        f"alibi={prof.alibi:g}) at β = {prof.beta_profile:g}, dt = {sim.dt:g}, iid uniform "
        f"starts, {sim.points} rotated values of θ_m(0) per source and base"
    )
    write_table(
        pd.concat(frames, ignore_index=True),
        out / "simulation.csv",
        dict(meta, table=f"{what}: mean over the bases, sd, se = sd/√bases"),
    )
    assert largest is not None
    write_table(
        largest,
        out / "simulation_bases.csv",
        dict(meta, table=f"{what}: each base's value at N = {max(sim.tokens)}"),
    )
    n_tokens = int(sim.tokens[min(1, len(sim.tokens) - 1)])
    steps = {}
    for label, dt in (("dt", float(sim.dt)), ("dt/2", float(sim.dt) / 2)):
        steps[label] = _simulation.correlation_runs(
            seed, n_tokens, sim, prof, dt=dt, bases=int(sim.half_bases)
        )
    control = _simulation.long_table(steps["dt"], n_tokens, sim).rename(columns={"value": "dt"})
    control["half"] = steps["dt/2"].reshape(-1)
    write_table(
        control,
        out / "step_control.csv",
        dict(meta, table=f"{what}: the first {sim.half_bases} bases at N = {n_tokens}, at dt "
             "(column dt) and at dt/2 (column half)"),
    )  # fmt: skip
