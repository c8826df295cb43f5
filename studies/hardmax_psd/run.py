"""Hardmax with a positive definite key-query matrix: straight lines into the own vertex.

Reproduces [FW] §4, the theorem on positive definite B (docs: models#statements-fw): if every
vertex owns its cell and every other token lies in exactly one cell, the vertices never move and

    x_i^t − v_σ(i) = Π_{τ<t} (1 − γ^τ) (x_i^0 − v_σ(i)),

for constant γ (rate (1 − γ)^t), for γ^τ = 1 − e^{−a(τ+1)} (super-exponential: the product is
e^{−a t(t+1)/2}) and for γ^τ = 2^{−τ−1} (the product tends to Π_τ (1 − 2^{−τ−1}) ≈ 0.2888 > 0:
the tokens stop short, so "at least exponential" needs inf γ^τ > 0). The hardmax ODE
dx_i/dt = v_σ(i) − x_i has the solution e^{−t} x_i^0 + (1 − e^{−t}) v_σ(i); explicit Euler with
Δt = γ is the hardmax step. Finally [FW]'s d → ∞ remark: k i.i.d. Gaussian vertices all own
their cells with probability → 1; here P[v_a owns its cell] = E[Φ(√Q)^{k−1}], Q ~ χ²_d, exactly
(given v_a, the scores <v_a, v_b> ~ N(0, |v_a|²/d) are independent).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import integrate, stats

from metastab.engine import simulate
from metastab.models import Hardmax
from metastab.registry import polytope_from_dict
from metastab.results import write_table
from metastab.setups.initial import in_cells
from metastab.setups.polytopes import Polytope, gaussian, regular_polygon
from metastab.studies.runner import study_meta

from .config import Config, Gaussian, Lines, Ode

# --------------------------------------------------------------------------- inputs


def schedule(spec: dict, steps: int) -> tuple[str, np.ndarray]:
    """(label, γ^0..γ^{steps−1}) for a schedule spec of config.toml."""
    tau = np.arange(steps)
    if spec["kind"] == "constant":
        return f"constant γ = {spec['gamma']:g}", np.full(steps, float(spec["gamma"]))
    if spec["kind"] == "super":
        return (f"γ^τ = 1 − exp(−{spec['a']:g}(τ+1))", -np.expm1(-float(spec["a"]) * (tau + 1)))
    if spec["kind"] == "halving":
        return "γ^τ = 2^(−τ−1)", 0.5 ** (tau + 1.0)
    raise ValueError(f"unknown schedule kind {spec['kind']!r}")


def polytope(spec: dict, seed: int) -> tuple[Polytope, int]:
    """The polytope of a spec and the number of draws needed for every vertex to own its cell
    (the theorem's genericity hypothesis; regular polygons always satisfy it)."""
    if spec["kind"] != "gaussian":
        return polytope_from_dict(spec, rng=seed), 1
    for draw, ss in enumerate(np.random.SeedSequence(seed).spawn(100), start=1):
        P = polytope_from_dict(spec, rng=ss)
        if P.all_own_cells():
            return P, draw
    raise RuntimeError("no Gaussian polytope with every vertex owning its cell in 100 draws")


# --------------------------------------------------------------------------- straight lines


def line_errors(traj, x0, target, product):
    """Per step: the largest |x_i^t − v − Π(x_i^0 − v)| / |x_i^0 − v| over non-vertex tokens,
    the largest distance of x_i^t from the line through x_i^0 and v (same scale), and the
    range of the measured ratio |x_i^t − v| / |x_i^0 − v|."""
    start = x0 - target
    d0 = np.linalg.norm(start, axis=1)
    dev = traj - target[None]
    vec_err = np.linalg.norm(dev - product[:, None, None] * start[None], axis=2) / d0
    unit = start / d0[:, None]
    along = np.einsum("tij,ij->ti", dev, unit)
    perp = np.linalg.norm(dev - along[..., None] * unit[None], axis=2) / d0
    ratio = np.linalg.norm(dev, axis=2) / d0
    return vec_err.max(axis=1), perp.max(axis=1), ratio.min(axis=1), ratio.max(axis=1)


def run_lines(cfg: Lines, seed, out, meta):
    rows, paths = [], []
    for p_index, pspec in enumerate(cfg.polytopes):
        P, draws = polytope(pspec, seed + p_index)
        x0 = in_cells(P, cfg.n, rng=seed + p_index)
        k = P.n_vertices
        sigma = P.assign(x0[k:])
        for sspec in cfg.schedules:
            label, gammas = schedule(sspec, cfg.steps)
            run = simulate(Hardmax(gamma=gammas), x0, steps=cfg.steps, record_every=1)
            assert run.trajectory is not None  # a recorded run
            traj = run.trajectory[0]
            product = np.r_[1.0, np.cumprod(1.0 - gammas)]
            err, perp, lo, hi = line_errors(traj[:, k:], x0[k:], P.vertices[sigma], product)
            vertex_move = np.abs(traj[:, :k] - x0[None, :k]).max(axis=(1, 2))
            rows.append(
                pd.DataFrame(
                    {
                        "polytope": P.name,
                        "d": P.dim,
                        "owning_draws": draws,
                        "schedule": label,
                        "step": run.times,
                        "gamma": np.r_[gammas, np.nan],
                        "product": product,
                        "ratio_min": lo,
                        "ratio_max": hi,
                        "vector_error": err,
                        "line_error": perp,
                        "vertex_displacement": vertex_move,
                    }
                )
            )
            if P.dim == 2 and pspec["kind"] == "regular":
                for i in range(cfg.n):
                    paths.append(
                        pd.DataFrame(
                            {
                                "schedule": label,
                                "token": i,
                                "step": run.times,
                                "x": traj[:, i, 0],
                                "y": traj[:, i, 1],
                            }
                        )
                    )
    write_table(pd.concat(rows, ignore_index=True), out / "lines.csv", meta)
    write_table(pd.concat(paths, ignore_index=True), out / "paths.csv", meta)


# --------------------------------------------------------------------------- hardmax ODE


def run_ode(cfg: Ode, seed, out, meta):
    """Euler (Δt = γ) against the exact ODE solution; the error at step m is
    |(1 − Δt)^m − e^{−mΔt}| |x^0 − v|, at most about Δt/(2e) |x^0 − v| (first order), reached
    near t = 1."""
    P = regular_polygon(cfg.k)
    x0 = in_cells(P, cfg.n, rng=seed)
    k = P.n_vertices
    v = P.vertices[P.assign(x0)]
    rows, curves = [], []
    for dt in cfg.dts:
        steps = int(round(cfg.horizon / dt))
        # Record on a time grid of spacing ~record_dt (t = 1, where the Euler error peaks, is
        # on it): one kernel call per recorded state instead of one per step.
        every = max(1, int(round(cfg.record_dt / dt)))
        run = simulate(Hardmax(gamma=dt), x0, steps=steps, record_every=every)
        assert run.times is not None and run.trajectory is not None  # a recorded run
        t = run.times * dt
        w = np.exp(-t)[:, None, None]
        exact = w * x0[None] + (1 - w) * v[None]
        d0 = np.linalg.norm(x0[k:] - v[k:], axis=1)
        err = (np.linalg.norm(run.trajectory[0][:, k:] - exact[:, k:], axis=2) / d0).max(axis=1)
        euler = np.abs((1 - dt) ** run.times - np.exp(-t))
        rows.append(
            {
                "dt": dt,
                "steps": steps,
                "record_every": every,
                "max_error": float(err.max()),
                "t_of_max": float(t[np.argmax(err)]),
                "euler_factor_error": float(euler.max()),
                "first_order_constant": float(err.max() / dt),
            }
        )
        curves.append(
            pd.DataFrame(
                {
                    "dt": dt,
                    "t": t,
                    "x_euler": run.trajectory[0][:, k, 0],
                    "x_exact": exact[:, k, 0],
                    "error": err,
                }
            )
        )
    write_table(pd.DataFrame(rows), out / "ode.csv", meta)
    write_table(pd.concat(curves, ignore_index=True), out / "ode_curves.csv", meta)


# --------------------------------------------------------------------------- Gaussian vertices


def owning_probability(k: int, d: int) -> float:
    """P[a given vertex owns its cell] for k i.i.d. N(0, I/d) points: E[Φ(√Q)^{k−1}], Q ~ χ²_d."""
    f = lambda q: stats.norm.cdf(np.sqrt(q)) ** (k - 1) * stats.chi2.pdf(q, d)  # noqa: E731
    value, _ = integrate.quad(f, 0, np.inf, limit=200)
    return float(value)


def run_gaussian(cfg: Gaussian, seed, out, meta):
    rows = []
    for k in cfg.ks:
        for d in cfg.ds:
            seeds = np.random.SeedSequence([seed, k, d]).spawn(cfg.draws)
            own = np.array([gaussian(k, d, rng=s).owns_cells() for s in seeds])
            p = owning_probability(k, d)
            rows.append(
                {
                    "k": k,
                    "d": d,
                    "draws": cfg.draws,
                    "vertices_not_owning": int((~own).sum()),
                    "vertices": own.size,
                    "polytopes_not_all_owning": int((~own.all(axis=1)).sum()),
                    "theory_vertex_owning": p,
                    "union_bound_all_owning": max(0.0, 1 - k * (1 - p)),
                }
            )
    write_table(pd.DataFrame(rows), out / "gaussian.csv", meta)


# --------------------------------------------------------------------------- entry point


def run(config: Config, out: Path) -> None:
    """Compute the straight-line, ODE and Gaussian-vertices tables into ``out``."""
    seed = int(config.seed)
    meta = study_meta("hardmax-psd", config)
    run_lines(config.lines, seed, out, meta)
    run_ode(config.ode, seed, out, meta)
    run_gaussian(config.gaussian, seed, out, meta)
