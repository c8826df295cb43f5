"""Orthogonal and random starts on the sphere against GLPR Thm 6.8 / 6.9
(docs: models#sphere-statements (1–2)).

Thm 6.8: tokens started pairwise orthogonal (x_i(0) = e_i, d = n) keep equal pairwise cosines
γ_β(t), the solution of (6.9) for (SA) and of (6.10) for (USA)
(:func:`metastab.theory.orthogonal_cosine`). Measured with :class:`metastab.SphereFlow`:

- for each n, β, scheme (rk4; post-LN, the field's layer) and step dt: the mean, smallest and
  largest pairwise cosine at the common times t = 0, grid, 2·grid, ... up to ``horizon``·t*(β),
  beside γ_β(t) (``cosines.parquet``);
- t*_sim, the time the mean cosine reaches 1 − δ, read from every step kept near t*(β) by
  cubic inverse interpolation of log(1 − cosine) (``crossing.csv``, with the largest error
  against γ_β and the largest spread max − min over pairs).

Thm 6.9: n i.i.d. uniform tokens on S^{d−1}; D(t) = max_{i≠j} |<x_i(t), x_j(t)> − γ_β(t)| per
start, against d and t, beside the bound 2 c(β) n t √(log d / d) (``random.parquet``).
(SA) with Q = K = V = I commutes with rotations and keeps every token in the span of x(0); for
d > n a start is therefore simulated in that n-dimensional span (coordinates from a QR
factorisation, same Gram matrix), which is exact; ``reduction.csv`` compares it with the
full-d run on a few starts.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import theory
from metastab.engine import simulate
from metastab.models.sphere import SphereFlow
from metastab.results import write_table
from metastab.setups.sphere import orthogonal as orthogonal_start
from metastab.setups.sphere import sphere_uniform
from metastab.studies.runner import study_meta

from .config import Config, Orthogonal, Random


def flow(beta: float, dt: float, scheme: str, attention: str = "softmax"):
    """The attention flow on the sphere, Q = K = V = I."""
    return SphereFlow(beta, dt, attention=attention, scheme=scheme)


def off_diagonal(paths: np.ndarray) -> np.ndarray:
    """The pairwise cosines <x_i, x_j>, i < j, of every configuration in paths (... × n × d)."""
    n = paths.shape[-2]
    gram = paths @ np.swapaxes(paths, -1, -2)
    iu = np.triu_indices(n, 1)
    return gram[..., iu[0], iu[1]]


def crossing_time(times: np.ndarray, cosine: np.ndarray, delta: float) -> float:
    """First t with cosine(t) = 1 − δ: cubic inverse interpolation of t against log(1 − cosine)
    through the four kept steps around the crossing (NaN if it is not among them)."""
    u = np.log(np.maximum(1.0 - cosine, 1e-300))
    target = math.log(delta)
    below = np.flatnonzero(u <= target)
    if below.size == 0 or below[0] == 0:
        return math.nan
    k = int(below[0])
    idx = np.arange(max(k - 2, 0), min(k + 2, len(u)))
    if idx.size < 2 or np.any(np.diff(u[idx]) >= 0):
        return math.nan
    coef = np.polyfit(u[idx] - target, times[idx], idx.size - 1)
    return float(coef[-1])


def orthogonal_run(n, beta, dt, scheme, attention, cfg: Orthogonal, delta):
    """One deterministic run from x_i(0) = e_i: cosines on the grid, t*_sim, error, spread."""
    t_star = theory.orthogonal_time(beta, n, delta=delta, attention=attention)
    grid = float(cfg.usa_grid if attention == "unnormalized" else cfg.grid)
    horizon = float(cfg.horizon)
    steps = int(math.ceil(horizon * t_star / grid)) * round(grid / dt)
    every = round(grid / dt)
    half = 0.5 + float(cfg.window) * dt * t_star
    fine = np.arange(
        max(int((t_star - half) / dt), 0), min(int(math.ceil((t_star + half) / dt)), steps) + 1
    )
    record = np.union1d(np.arange(0, steps + 1, every), fine)
    run = simulate(
        flow(beta, dt, scheme, attention),
        orthogonal_start(n, n),
        steps=steps,
        record_at=record.tolist(),
    )
    assert run.trajectory is not None and run.times is not None
    cos = off_diagonal(run.trajectory[0])
    mean, low, high = cos.mean(axis=1), cos.min(axis=1), cos.max(axis=1)
    times = run.times * dt
    on_grid = run.times % every == 0
    exact = theory.orthogonal_cosine(times[on_grid], beta, n, attention=attention)
    curve = pd.DataFrame(
        {
            "attention": attention,
            "scheme": scheme,
            "n": n,
            "beta": beta,
            "dt": dt,
            "t": times[on_grid],
            "mean": mean[on_grid],
            "min": low[on_grid],
            "max": high[on_grid],
            "gamma": exact,
        }
    )
    kept = np.isin(run.times, fine)
    summary = {
        "attention": attention,
        "scheme": scheme,
        "n": n,
        "beta": beta,
        "dt": dt,
        "steps": steps,
        "t_star": t_star,
        "t_star_sim": crossing_time(times[kept], mean[kept], delta),
        "max_error": float(np.abs(mean[on_grid] - exact).max()),
        "max_spread": float((high - low).max()),
        "other_error": float(
            np.abs(
                mean[on_grid]
                - theory.orthogonal_cosine(
                    times[on_grid],
                    beta,
                    n,
                    attention="unnormalized" if attention == "softmax" else "softmax",
                )
            ).max()
        ),
    }
    return curve, summary


def orthogonal(cfg: Orthogonal, delta: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (attention, scheme, n, β, dt) run of Thm 6.8."""
    plan = [("softmax", "rk4", dt, cfg.betas) for dt in cfg.rk4_dts]
    plan += [("softmax", "post-ln", dt, cfg.betas) for dt in cfg.post_ln_dts]
    plan += [("unnormalized", "rk4", dt, cfg.usa_betas) for dt in cfg.usa_dts]
    curves, rows = [], []
    for n in cfg.ns:
        for attention, scheme, dt, betas in plan:
            for beta in betas:
                curve, row = orthogonal_run(
                    int(n), float(beta), float(dt), scheme, attention, cfg, delta
                )
                curves.append(curve)
                rows.append(row)
    return pd.concat(curves, ignore_index=True), pd.DataFrame(rows)


def random_run(beta, x0, cfg: Random):
    """Pairwise cosines of the starts x0 at the grid times; (SA), rk4."""
    dt, grid = float(cfg.dt), float(cfg.grid)
    every = round(grid / dt)
    steps = int(round(float(cfg.t_max) / grid)) * every
    run = simulate(flow(beta, dt, "rk4"), x0, steps=steps, record_every=every)
    assert run.trajectory is not None and run.times is not None
    return run.times * dt, off_diagonal(run.trajectory)


def random_starts(cfg: Random, seed: int) -> pd.DataFrame:
    """D(t) = max over pairs of |cosine − γ_β(t)| per start, β, d; with the bound of Thm 6.9."""
    n = int(cfg.n)
    frames = []
    for d in cfg.ds:
        root = np.random.SeedSequence(seed, spawn_key=(1, int(d)))
        x0 = sphere_uniform(n, int(d), span=True, chains=int(cfg.realisations), rng=root)
        for beta in cfg.betas:
            times, cos = random_run(float(beta), x0, cfg)
            gamma = theory.orthogonal_cosine(times, float(beta), n)
            dev = np.abs(cos - gamma[None, :, None])
            R, T = dev.shape[:2]
            frames.append(
                pd.DataFrame(
                    {
                        "beta": float(beta),
                        "d": int(d),
                        "start": np.repeat(np.arange(R), T),
                        "t": np.tile(times, R),
                        "gamma": np.tile(gamma, R),
                        "max_deviation": dev.max(axis=2).ravel(),
                        "mean_deviation": dev.mean(axis=2).ravel(),
                        "bound": np.tile(theory.random_start_bound(times, float(beta), n, d), R),
                        "probability": theory.random_start_probability(n, d),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def reduction(cfg: Random, seed: int) -> pd.DataFrame:
    """The span reduction against the full-d run, on the first starts at ``check_d``."""
    n, d = int(cfg.n), int(cfg.check_d)
    count = int(cfg.check_realisations)
    root = np.random.SeedSequence(seed, spawn_key=(1, d))
    full = sphere_uniform(n, d, chains=count, rng=root)
    reduced = sphere_uniform(n, d, span=True, chains=count, rng=root)
    rows = []
    for beta in cfg.betas:
        times, a = random_run(float(beta), full, cfg)
        _, b = random_run(float(beta), reduced, cfg)
        gap = np.abs(a - b).max(axis=(0, 2))
        rows += [
            {"beta": float(beta), "d": d, "starts": count, "t": t, "max_gap": g}
            for t, g in zip(times, gap)
        ]
    return pd.DataFrame(rows)


def run(config: Config, out: Path) -> None:
    """Thm 6.8 runs, t* and convergence; Thm 6.9 deviations; the span-reduction check."""
    out = Path(out)
    seed, delta = int(config.seed), float(config.delta)
    meta = dict(
        study_meta("sphere-orthogonal", config),
        statement="GLPR Thm 6.8 (6.9)/(6.10) and Thm 6.9",
        seeds="start c of d: chain c of sphere_uniform from SeedSequence(seed, spawn_key=(1, d))",
    )
    curves, crossing = orthogonal(config.orthogonal, delta)
    write_table(
        curves,
        out / "cosines.parquet",
        dict(meta, table="orthogonal starts: mean/min/max pairwise cosine on the grid, γ_β(t)"),
    )
    write_table(
        crossing,
        out / "crossing.csv",
        dict(
            meta,
            table="per run: t* of (6.9)/(6.10), t*_sim, largest |mean cosine − γ_β| on the grid "
            "(other_error: against the other model's equation), largest max − min over pairs",
        ),
    )
    write_table(
        random_starts(config.random, seed),
        out / "random.parquet",
        dict(
            meta,
            table="uniform starts: max/mean over pairs of |cosine − γ_β(t)| per start, the Thm "
            "6.9 bound 2 c(β) n t √(log d/d) and its probability 1 − 2n²d^(−1/64)",
        ),
    )
    write_table(
        reduction(config.random, seed),
        out / "reduction.csv",
        dict(meta, table="largest |cosine full d − cosine in the span of x(0)| over starts"),
    )
