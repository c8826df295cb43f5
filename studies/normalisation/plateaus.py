"""GKPR plateaus per normalisation scheme: lengths in layers and in the intrinsic time σ.

[KGPR] (Karagodin, Ge, Polyanskiy, Rigollet, arXiv 2510.22026; docs: models#sphere-schemes)
write every scheme as (NA), θ̇_i = (1/s_i) P⊥_{θ_i} A_i(θ). Where s_i is the same for every
token, (NA) is (SA) run in the time σ with dσ = dt / s: the scheme's directions at layer time t
are (SA)'s at σ(t), so every metastable plateau of the cluster count (Geshkovski, Koubbi,
Polyanskiy, Rigollet, arXiv 2410.06833; the staircase study) lasts as long in σ as under Post-LN
(s = 1, σ = t), and its length in layers is Post-LN's mapped through the run's σ(t). Here σ is
measured along each run, σ(t) = ∫_0^t (1/n) Σ_i 1/s_i(u) du, with s_i computed from the
recorded state by the formulas of [KGPR] Table 2 (docs: models#sphere-schemes):

- post-LN 1; pre-LN r_i; Mix-LN 1 on the post-LN layers (k dt < τ), r_i after; peri-LN
  r_i ‖A_i‖; nGPT ‖A_i‖/α; LN-scaling √(1 + k dt);

r_i = ‖x_i‖, θ_i = x_i / r_i, A_i = Σ_j softmax_j(β<θ_i, θ_j>) θ_j (Q = K = V = I). The mean
over tokens of 1/s_i is an exact time change only where the s_i agree; their spread along the
run is recorded beside σ.

``plateaus.csv``: one row per (scheme, start, plateau at k ≥ 2 clusters): its first and last
step (:func:`metastab.track`, right-censored at the horizon) and σ there. ``path.csv``: per
(scheme, start) at the kept steps, σ, dσ/dt, the spread max_i s_i / min_i s_i and the energy
E_β = (1/(2βn²)) Σ_ij e^{β<θ_i, θ_j>}.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from metastab.engine import simulate, track
from metastab.models.sphere import SphereFlow
from studies.staircase.run import caps

from .config import Config, Plateaus

# schemes whose radius grows (s_i ≈ r_i ≈ t late): σ ≈ log t
LOG_TIME = ("pre-ln", "peri-ln")


def starts(cfg: Plateaus, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, 3·per_cap, 2) configurations: caps at angles 0, g1, g1 + g2 on the circle (the
    staircase study's :func:`~studies.staircase.run.caps`), and the (starts, 2) gaps g1, g2,
    uniform on ``gap_first`` and ``gap_second``, each start from its own stream."""
    ranges = {"gap_first": cfg.gap_first, "gap_second": cfg.gap_second}
    for key, pair in ranges.items():
        if len(pair) != 2 or pair[0] > pair[1]:
            raise ValueError(f"plateaus.{key} must be [low, high] with low <= high, got {pair!r}")
    (a, b), (c2, d2) = (tuple(map(float, pair)) for pair in ranges.values())
    x0, gaps = [], []
    for c in range(int(cfg.starts)):
        root = np.random.SeedSequence(seed, spawn_key=(2, c))
        gen = np.random.default_rng(root.spawn(1)[0])
        g1, g2 = float(gen.uniform(a, b)), float(gen.uniform(c2, d2))
        x0.append(caps([0.0, g1, g1 + g2], int(cfg.per_cap), float(cfg.cap_radius), 1, root)[0])
        gaps.append((g1, g2))
    return np.stack(x0), np.array(gaps)


def time_at_floor(model: SphereFlow, sigma: float) -> float:
    """The layer time t at which the lower bound of σ(t) reaches ``sigma``: s_i ≤ 1 + t for
    pre-LN and peri-LN (ṙ_i = <θ_i, A_i> ≤ 1 and <θ_i, A_i>/‖A_i‖ ≤ 1, ‖A_i‖ ≤ 1, r_i(0) = 1;
    also per layer, r_i ≤ r_i + dt), 1 + t − τ after Mix-LN's switch, s_i ≤ 1/α for nGPT; so
    σ(t) >= this bound and a run to that t reaches ``sigma`` whatever its trajectory."""
    scheme = model.scheme
    if scheme in LOG_TIME:
        return math.expm1(sigma)
    if scheme == "mix-ln":
        tau = float(model.tau or 0.0)
        return sigma if sigma <= tau else tau + math.expm1(sigma - tau)
    if scheme == "ngpt":
        return sigma / model.alpha
    if scheme == "ln-scaling":  # σ = 2(√(1 + t) − 1) exactly
        return (1 + sigma / 2) ** 2 - 1
    return sigma


def kept_steps(model: SphereFlow, cfg: Plateaus) -> tuple[int, np.ndarray]:
    """(horizon, steps at which the state is kept): every ``grid`` of σ's lower bound up to
    ``sigma_max``, with Mix-LN's first pre-LN layer and the horizon."""
    dt = float(cfg.dt)
    horizon = math.ceil(time_at_floor(model, float(cfg.sigma_max)) / dt)
    levels = np.arange(0.0, float(cfg.sigma_max), float(cfg.grid))
    at = np.round([time_at_floor(model, s) / dt for s in levels]).astype(np.int64)
    at = np.union1d(at, [model.post_layers, horizon])
    return horizon, at[(at >= 0) & (at <= horizon)]


def attention(theta: np.ndarray, beta: float) -> np.ndarray:
    """A_i = Σ_j softmax_j(β<θ_i, θ_j>) θ_j for states (..., n, d) (max-shifted)."""
    logits = beta * np.einsum("...id,...jd->...ij", theta, theta)
    w = np.exp(logits - logits.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("...ij,...jd->...id", w, theta)


def speed_factors(model: SphereFlow, x: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """s_i of (NA) ([KGPR] Table 2) for states x (R, n, d) kept at ``steps`` (R,): (R, n)."""
    r = np.linalg.norm(x, axis=-1)
    theta = x / r[..., None]
    norm_a = np.linalg.norm(attention(theta, model.beta), axis=-1)
    t = steps.astype(np.float64)[:, None] * model.dt
    s = {
        "post-ln": np.ones_like(r),
        "pre-ln": r,
        "mix-ln": np.where(steps[:, None] < model.post_layers, 1.0, r),
        "peri-ln": r * norm_a,
        "ngpt": norm_a / model.alpha,
        "ln-scaling": np.broadcast_to(np.sqrt(1.0 + t), r.shape),
    }[model.scheme]
    return np.asarray(s, dtype=np.float64)


def energy(x: np.ndarray, beta: float) -> np.ndarray:
    """E_β = (1/(2βn²)) Σ_ij e^{β<θ_i, θ_j>} of states (R, n, d) (docs: models#observables)."""
    theta = x / np.linalg.norm(x, axis=-1, keepdims=True)
    n = x.shape[-2]
    gram = np.einsum("...id,...jd->...ij", theta, theta)
    return np.exp(beta * gram).sum(axis=(-2, -1)) / (2 * beta * n * n)


def scheme_run(model: SphereFlow, cfg: Plateaus, x0: np.ndarray):
    """(plateaus, path) frames of one scheme from the starts ``x0``: the plateaus of
    :func:`metastab.track` with σ at their ends, σ(t) by the trapezoidal rule over the kept
    states of :func:`metastab.simulate` (the same deterministic trajectory)."""
    horizon, at = kept_steps(model, cfg)
    tr = track(model, x0, steps=horizon, delta=float(cfg.delta))
    run = simulate(model, x0, steps=horizon, record_at=at.tolist())
    assert run.trajectory is not None  # a recorded run
    t = at * float(cfg.dt)
    paths, sigmas = [], []
    for c in range(x0.shape[0]):
        s = speed_factors(model, run.trajectory[c], at)
        speed = (1.0 / s).mean(axis=1)
        sigma = np.concatenate([[0.0], np.cumsum(np.diff(t) * (speed[1:] + speed[:-1]) / 2)])
        sigmas.append(sigma)
        paths.append(
            pd.DataFrame(
                {
                    "chain": c,
                    "step": at,
                    "sigma": sigma,
                    "speed": speed,
                    "spread": s.max(axis=1) / s.min(axis=1),
                    "energy": energy(run.trajectory[c], model.beta),
                }
            )
        )
    path = pd.concat(paths, ignore_index=True)
    for col in ("sigma", "speed", "spread", "energy"):  # 10 digits: a smaller committed table
        path[col] = [float(f"{v:.10g}") for v in path[col]]
    frame = tr.to_frame()[["chain", "k", "start", "end", "censored"]]
    frame = frame[frame["k"] >= 2].reset_index(drop=True)
    for end in ("start", "end"):
        frame[f"sigma_{end}"] = [
            float(np.interp(step, at, sigmas[c])) for c, step in zip(frame["chain"], frame[end])
        ]
    frame["horizon"] = horizon
    return frame, path


def plateaus(config: Config, model_of) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``plateaus.csv`` and ``path.csv`` for every scheme of ``config`` (``model_of(scheme,
    beta, dt)``: the scheme's SphereFlow), from the same starts."""
    cfg = config.plateaus
    x0, gaps = starts(cfg, int(config.seed))
    tables: tuple[list, list] = ([], [])
    for scheme in config.schemes:
        model = model_of(scheme, float(cfg.beta), float(cfg.dt))
        frame, path = scheme_run(model, cfg, x0)
        frame["gap_first"], frame["gap_second"] = gaps[frame["chain"], 0], gaps[frame["chain"], 1]
        for table, f in zip(tables, (frame, path)):
            f.insert(0, "scheme", scheme)
            table.append(f)
    return pd.concat(tables[0], ignore_index=True), pd.concat(tables[1], ignore_index=True)
