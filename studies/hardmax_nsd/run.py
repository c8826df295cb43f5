"""Hardmax with a negative semidefinite key-query matrix: Frank-Wolfe over a shrinking hull.

With B = −B_* (B_* ⪰ 0) the hardmax step x_i ← (1 − γ) x_i + γ argmin_j <B_* x_i, x_j> is one
Frank-Wolfe step for J(x) = ½<B_* x, x> over K^t = conv{x_j^t} (docs: models#models-rd, [FW] §3, the
Frank-Wolfe rate theorem with γ^t = 2/(t + 2)). Measured here:

- the counterexample to the printed O(1/t) bound: d = 1, B_* = 1, x^0 = (3, −1). Token 2 sits at
  1/3 from t = 1 on and token 1 converges to it, so J(x^t) − min_{K^0} J → 1/18, not 0;
- regular k-gons stay scaled copies of themselves: x_a^{t+1} = (1 − c_k γ^t) x_a^t with
  c_k = 1 + cos(π/k) for odd k (two tied opposite leaders) and 2 for even k, so |x^t| =
  Π_τ |1 − c_k γ^τ| |x^0|: contraction to the origin at an exactly known rate;
- random configurations: the diameter of K^t (collapse to one point), the distance of that point
  from the origin, and h_t = J(x_i^t) − min_{K^t} J, the gap to the minimum over the CURRENT hull.
  Since K^{t+1} ⊂ K^t the classical Frank-Wolfe recursion h_{t+1} <= (1 − γ^t) h_t +
  (γ^t)² L D_0²/2 holds for it (L = λ_max(B_*), D_0 = diam K^0), so h_t <= 2 L D_0²/(t + 2)
  for t >= 1: the corrected form of the bound, tested here as a law.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import nnls
from scipy.spatial.distance import pdist

from metastab.engine import simulate
from metastab.models import Hardmax
from metastab.results import read_table, write_table
from metastab.setups.polytopes import regular_polygon
from metastab.studies.runner import study_meta

from .config import Config, Counterexample, Random, Symmetric

# Weight of the row Σλ = 1 in the non-negative least squares for the hull minimum, relative to
# the scale of the points: the constraint is then met to ~1e-12 relative, and λ is renormalised
# so that the returned point lies in the hull exactly.
_SIMPLEX_WEIGHT = 1e6


# --------------------------------------------------------------------------- inputs


def schedule(spec: dict, steps: int) -> tuple[str, np.ndarray]:
    """(label, γ^0..γ^{steps−1}) for a schedule spec of config.toml."""
    if spec["kind"] == "constant":
        return f"constant γ = {spec['gamma']:g}", np.full(steps, float(spec["gamma"]))
    if spec["kind"] == "frank-wolfe":
        return "γ^t = 2/(t+2)", 2.0 / (np.arange(steps) + 2.0)
    raise ValueError(f"unknown schedule kind {spec['kind']!r}")


def key_matrix(case: dict, seed: int) -> np.ndarray:
    """B_* ⪰ 0 of a case: the identity, a diagonal, or W Wᵀ/d with W a d×d Gaussian matrix."""
    d = case["d"]
    if case["kind"] == "identity":
        return np.eye(d)
    if case["kind"] == "diagonal":
        return np.diag(np.asarray(case["diag"], float))
    if case["kind"] == "wishart":
        W = np.random.default_rng([seed, d]).standard_normal((d, d))
        return W @ W.T / d
    raise ValueError(f"unknown case kind {case['kind']!r}")


# --------------------------------------------------------------------------- measurements


def energy(X, Bs) -> np.ndarray:
    """J(x_i) = ½<B_* x_i, x_i> for every row of X (..., n, d)."""
    return 0.5 * np.einsum("...i,ij,...j->...", X, Bs, X)


def hull_minimum(X, Bs) -> float:
    """min_{y in conv{x_j}} ½<B_* y, y>, a least-distance problem: with B_* = RᵀR, minimise
    |R Xᵀλ|² over the simplex (non-negative least squares with a heavily weighted row Σλ = 1)."""
    w, U = np.linalg.eigh(Bs)
    R = np.sqrt(np.clip(w, 0, None))[:, None] * U.T
    P = X @ R.T
    scale = _SIMPLEX_WEIGHT * max(1.0, np.abs(P).max())
    A = np.vstack([P.T, np.full(len(X), scale)])
    b = np.r_[np.zeros(P.shape[1]), scale]
    lam = nnls(A, b, maxiter=50 * len(X))[0]
    y = X.T @ (lam / lam.sum())
    return float(energy(y, Bs))


def frank_wolfe_gap(X, Bs) -> np.ndarray:
    """Per token, max_{y in K} <∇J(x_i), x_i − y> = <B_* x_i, x_i> − min_j <B_* x_i, x_j>."""
    S = X @ Bs.T @ X.T
    return np.diag(S) - S.min(axis=1)


def log_times(steps: int, count: int) -> np.ndarray:
    """About ``count`` distinct steps, log-spaced from 1 to ``steps``, with 0 prepended."""
    return np.unique(np.r_[0, np.geomspace(1, steps, count).round().astype(int)])


def states_at(x0, gammas, times, B) -> np.ndarray:
    """Hardmax states at the given steps (times[0] = 0), shape (chains, len(times), n, d).

    Hardmax draws no randomness, so running it from the state at step s with the schedule
    slice γ^s, γ^{s+1}, ... continues the same path exactly; recording only at ``times`` then
    costs one call per recorded state instead of one kernel call per step.
    """
    X = np.asarray(x0, float)
    X = X[None] if X.ndim == 2 else X
    states = [X]
    for start, stop in zip(times[:-1], times[1:]):
        model = Hardmax(gamma=gammas[start:stop], B=B)
        X = simulate(model, X, steps=int(stop - start)).final
        states.append(X)
    return np.stack(states, axis=1)


# --------------------------------------------------------------------------- counterexample


def run_counterexample(cfg: Counterexample, out, meta):
    x0 = np.asarray(cfg.x0, float)[:, None]
    steps = cfg.steps
    label, gammas = schedule({"kind": "frank-wolfe"}, steps)
    Bs = np.eye(1)
    D0 = float(pdist(x0).max())
    times = np.unique(np.r_[np.arange(12), log_times(steps, 150)])
    states = states_at(x0, gammas, times, -Bs)[0]
    rows = []
    for t, X in zip(times, states):
        J = energy(X, Bs)
        rows.append(
            {
                "step": int(t),
                "x1": X[0, 0],
                "x2": X[1, 0],
                "J1": J[0],
                "J2": J[1],
                "J_min_K0": hull_minimum(x0, Bs),
                "J_min_Kt": hull_minimum(X, Bs),
                "fw_constant_bound": 2 * D0**2 / (t + 2),
            }
        )
    write_table(
        pd.DataFrame(rows),
        out / "counterexample.csv",
        {**meta, "schedule": label, "L": 1.0, "D0": D0},
    )


# --------------------------------------------------------------------------- symmetric polygons


def polygon_factor(k: int) -> float:
    """c_k: the hardmax step maps each vertex of a regular k-gon (B = −I) to (1 − c_k γ) v_a."""
    return 2.0 if k % 2 == 0 else 1.0 + np.cos(np.pi / k)


def run_symmetric(cfg: Symmetric, out, meta):
    rows = []
    for k in cfg.ks:
        P = regular_polygon(k)
        for spec in cfg.schedules:
            label, gammas = schedule(spec, cfg.steps)
            run = simulate(
                Hardmax(gamma=gammas, B=-np.eye(2)),
                P.vertices,
                steps=cfg.steps,
                record_every=1,
            )
            assert run.trajectory is not None  # a recorded run
            X = run.trajectory[0]
            radius = np.linalg.norm(X, axis=2)
            predicted = np.r_[1.0, np.cumprod(np.abs(1 - polygon_factor(k) * gammas))]
            rows.append(
                pd.DataFrame(
                    {
                        "k": k,
                        "schedule": label,
                        "step": run.times,
                        "radius_min": radius.min(axis=1),
                        "radius_max": radius.max(axis=1),
                        "predicted": predicted,
                    }
                )
            )
    write_table(pd.concat(rows, ignore_index=True), out / "symmetric.csv", meta)


# --------------------------------------------------------------------------- random configurations


def chain_rows(states, Bs, times):
    """Per recorded step of one chain (``states[r]`` at step ``times[r]``): diameter, distance of
    the centroid from the origin, the largest J, the gaps to the initial- and current-hull
    minima, the largest Frank-Wolfe gap."""
    L = float(np.linalg.eigvalsh(Bs).max())
    D0 = float(pdist(states[0]).max())
    J0 = hull_minimum(states[0], Bs)
    rows = []
    for t, X in zip(times, states):
        J = energy(X, Bs)
        Jt = hull_minimum(X, Bs)
        rows.append(
            {
                "step": int(t),
                "diameter": float(pdist(X).max()),
                "centroid_norm": float(np.linalg.norm(X.mean(axis=0))),
                "J_max": float(J.max()),
                "gap_initial_hull": float(J.max() - J0),
                "gap_current_hull": float(J.max() - Jt),
                "fw_gap": float(frank_wolfe_gap(X, Bs).max()),
                "corrected_bound": 2 * L * D0**2 / (t + 2),
                "D0": D0,
                "L": L,
            }
        )
    return rows


def summarise(chains: pd.DataFrame):
    """Per step: medians and maxima over the draws (gaps normalised per draw by 2 L D_0², the
    scale of the Frank-Wolfe bound); per draw: the final state and the worst corrected ratio."""
    chains = chains.assign(
        initial_norm=chains["gap_initial_hull"] / (2 * chains["L"] * chains["D0"] ** 2),
        current_norm=chains["gap_current_hull"] / (2 * chains["L"] * chains["D0"] ** 2),
    )
    keys = ["case", "schedule", "step"]
    per_step = (
        chains.groupby(keys, sort=False)
        .agg(
            diameter_median=("diameter", "median"),
            diameter_max=("diameter", "max"),
            centroid_norm_median=("centroid_norm", "median"),
            initial_gap_median=("initial_norm", "median"),
            initial_gap_min=("initial_norm", "min"),
            current_gap_median=("current_norm", "median"),
            current_gap_max=("current_norm", "max"),
            fw_gap_median=("fw_gap", "median"),
        )
        .reset_index()
    )
    later = chains[chains["step"] >= 1]
    worst = (
        (later["current_norm"] * (later["step"] + 2))
        .groupby([later["case"], later["schedule"], later["chain"]], sort=False)
        .max()
    )
    final = chains[chains["step"] == chains["step"].max()].set_index(["case", "schedule", "chain"])
    per_chain = (
        final[["diameter", "centroid_norm", "gap_initial_hull", "D0", "L"]]
        .assign(corrected_ratio=worst)
        .reset_index()
    )
    return per_step, per_chain


def run_random(cfg: Random, seed, out, meta):
    times = log_times(cfg.steps, cfg.times)
    series = []
    for c_index, case in enumerate(cfg.cases):
        Bs = key_matrix(case, seed)
        gen = np.random.default_rng([seed, c_index])
        x0 = gen.standard_normal((cfg.draws, cfg.n, case["d"]))
        for spec in cfg.schedules:
            label, gammas = schedule(spec, cfg.steps)
            states = states_at(x0, gammas, times, -Bs)
            for chain in range(cfg.draws):
                for row in chain_rows(states[chain], Bs, times):
                    series.append({"case": case["name"], "schedule": label, "chain": chain, **row})
    meta = {**meta, "B_star": {c["name"]: key_matrix(c, seed).tolist() for c in cfg.cases}}
    write_table(pd.DataFrame(series), out / "random_series.parquet", meta)


# --------------------------------------------------------------------------- entry point


def analyse(out: Path, config: Config) -> None:
    """The random configurations' summaries (:func:`summarise`): ``random_steps.csv`` and
    ``random_draws.csv`` from ``random_series.parquet``, with the run's provenance."""
    series, meta = read_table(Path(out) / "random_series.parquet")
    per_step, per_chain = summarise(series)
    write_table(per_step, Path(out) / "random_steps.csv", meta)
    write_table(per_chain, Path(out) / "random_draws.csv", meta)


def run(config: Config, out: Path) -> None:
    """Simulate: the counterexample, symmetric-polygon and random-configuration tables (the
    random draws' summaries: :func:`analyse`)."""
    seed = int(config.seed)
    meta = study_meta("hardmax-nsd", config)
    run_counterexample(config.counterexample, out, meta)
    run_symmetric(config.symmetric, out, meta)
    run_random(config.random, seed, out, meta)
