"""Finite β follows hardmax for exponentially long: SA_P and SA_β against SA_∞ ([FW]).

From one start X^0 (vertex tokens on the vertices of K, the other tokens uniform in K away from
the cell boundaries (:func:`start`), so every token lies in one cell and the hardmax path h^t
runs straight into the vertices, [FW] §4, the theorem on positive
definite B), the finite-β paths x^t of SA_P (Markov chain) and SA_β (deterministic
softmax layer) are compared with h^t through the distance max_i |x_i^t − h_i^t|:

- over time, recorded every ``record_every`` steps for a few β;
- against β, through the tracking time T_ε = first t with max_i |x_i^t − h_i^t| > ε.

T_ε is measured exactly in two stages. Stage 1 records every step until t0, when the hardmax
path is within ``settle``·ε of its limit (the vertices): t0 = ⌈log(settle·ε/r)/log(1 − γ)⌉ with
r = max_i |x_i^0 − v_σ(i)|. Stage 2 continues each chain that still tracks with
:func:`metastab.first_passage` and the event LeaveBall(ε, centers = v_σ(i)); there the distance
to h^t differs from the distance to the vertices by at most settle·ε.

Theory for SA_P: once the tokens sit at the vertices with multiplicities m_a the chain is frozen
until the first cross-vertex pick, a geometric time of mean 1/p
(:func:`metastab.theory.frozen_law`),
and one such pick moves a token by γ|v_a − v_b| > ε when ε < γ min_{a≠b} |v_a − v_b|. So
T_ε − t0 ≈ Geometric(p), with log(1/p) ≈ β c0 + const: exponentially long in β.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import stats, theory
from metastab.engine import first_passage, simulate
from metastab.events import LeaveBall
from metastab.models import Hardmax, SoftmaxChain, SoftmaxFlow
from metastab.registry import polytope_from_dict
from metastab.results import provenance, read_table, write_table
from metastab.setups.initial import in_cells
from metastab.setups.polytopes import Polytope
from metastab.studies.measurement import beta_scan, quantile_band, recorded

from .config import AgainstBeta, Config, OverTime


def start(P: Polytope, n: int, margin: float, rng) -> np.ndarray:
    """Vertex tokens on the vertices, the other n − κ tokens uniform on K conditioned on
    lying in the dominance cone I_σ(x)(margin) of their cell (score gap >= margin to every
    other vertex), drawn by rejection from :func:`metastab.in_cells`.

    The margin keeps tokens off the cell boundaries, where any finite β splits a token between
    two vertices at once and the comparison with hardmax says nothing about metastability.
    """
    k = P.n_vertices
    gen = np.random.default_rng(rng)
    picked: list[np.ndarray] = []
    while len(picked) < n - k:
        pool = in_cells(P, k + 64 * (n - k), rng=gen)[k:]
        cell = P.assign(pool)
        keep = np.zeros(len(pool), dtype=bool)
        for a in range(k):
            keep[cell == a] = P.in_dominance_cone(pool[cell == a], a, margin)
        picked.extend(pool[keep][: n - k - len(picked)])
    return np.vstack([P.vertices, np.array(picked).reshape(-1, P.dim)])


def sup_distance(paths: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """max_i |x_i − h_i| for paths (chains × records × n × d) against one path (records × n × d)."""
    return np.linalg.norm(paths - reference[None], axis=-1).max(axis=-1)


def settle_steps(P, x0, gamma, eps, settle) -> int:
    """t0: steps after which the hardmax path (1 − γ)^t r is within settle·ε of the vertices."""
    r = float(np.linalg.norm(x0 - P.vertices[P.assign(x0)], axis=1).max())
    if r == 0:
        return 0
    return max(0, math.ceil(math.log(settle * eps / r) / math.log1p(-gamma)))


def models(beta: float, gamma: float) -> dict:
    return {
        "SA_P": SoftmaxChain(beta=beta, gamma=gamma),
        "SA_beta": SoftmaxFlow(beta=beta, gamma=gamma),
    }


def over_time(P, x0, gamma, cfg: OverTime, seed) -> pd.DataFrame:
    """Distance to the hardmax path, per β and model, at every step up to ``fine`` and every
    ``record_every`` steps after."""
    steps, every, fine = int(cfg.steps), int(cfg.record_every), int(cfg.fine)
    _, hard = recorded(Hardmax(gamma=gamma), x0, steps, every, fine, 1, 0)

    def at(beta: float, ib: int) -> Iterator[pd.DataFrame]:
        for name, model in models(beta, gamma).items():
            chains = int(cfg.chains) if name == "SA_P" else 1
            seq = np.random.SeedSequence(seed, spawn_key=(0, ib))
            times, paths = recorded(model, x0, steps, every, fine, chains, seq)
            yield quantile_band(sup_distance(paths, hard[0]), name, beta, times, chains)

    return beta_scan(cfg.betas, at)


def tracking_times(P, x0, model, chains, max_steps, eps, t0, seed_key, seed) -> pd.DataFrame:
    """T_ε per chain in two stages (see the module docstring); columns steps, censored, stage."""
    sigma = P.assign(x0)
    hard = simulate(Hardmax(gamma=model.gamma), x0, steps=max(t0, 1), record_every=1)
    first = simulate(
        model,
        x0,
        steps=max(t0, 1),
        chains=chains,
        record_every=1,
        rng=np.random.SeedSequence(seed, spawn_key=seed_key + (1,)),
    )
    assert first.trajectory is not None and hard.trajectory is not None  # recorded runs
    dist = sup_distance(first.trajectory, hard.trajectory[0])[:, : t0 + 1]
    left = (dist > eps).any(axis=1)
    steps = np.where(left, (dist > eps).argmax(axis=1), 0).astype(np.int64)
    censored = np.zeros(chains, dtype=bool)
    alive = np.flatnonzero(~left)
    if alive.size:
        event = LeaveBall(eps, centers=P.vertices[sigma])
        fp = first_passage(
            model,
            first.final[alive],
            event,
            max_steps=max_steps,
            rng=np.random.SeedSequence(seed, spawn_key=seed_key + (2,)),
        )
        steps[alive] = t0 + fp.times
        censored[alive] = fp.censored
    return pd.DataFrame(
        {
            "chain": np.arange(chains),
            "steps": steps,
            "censored": censored,
            "stage": np.where(left, 1, 2),
            "t0": t0,
            "max_steps": t0 + max_steps,
            "dist_t0": dist[:, t0],
        }
    )


def against_beta(P, x0, gamma, cfg: AgainstBeta, eps, t0, seed) -> pd.DataFrame:
    """Tracking times of SA_P (many chains) and SA_β (one path) on their β grids."""

    def scan(name: str, betas: list[float], chains: int, max_steps: int) -> pd.DataFrame:
        def at(beta: float, ib: int) -> pd.DataFrame:
            key = (1, int(name == "SA_P"), ib)
            f = tracking_times(
                P, x0, models(beta, gamma)[name], chains, max_steps, eps, t0, key, seed
            )
            f.insert(0, "beta", beta)
            f.insert(0, "model", name)
            return f

        return beta_scan(betas, at)

    return pd.concat(
        [
            scan("SA_P", cfg.chain_betas, int(cfg.chains), int(cfg.chain_max_steps)),
            scan("SA_beta", cfg.flow_betas, 1, int(cfg.flow_max_steps)),
        ],
        ignore_index=True,
    )


def summarise(times: pd.DataFrame, P, x0, jump: float, eps: float):
    """Per model and β: the plateau distance at t0, tracking-time statistics beside the
    frozen-law prediction; and the exponent fits (SA_P: censored joint fit of stage-2 times;
    SA_β: least squares on log T), over the metastable regime.

    The regime: β where the median plateau distance plus ε is below the smallest jump
    γ min_{a≠b} |v_a − v_b| of a cross-vertex pick, so the first such pick ends the tracking
    and the frozen law predicts T_ε − t0 exactly.
    """
    mult = np.bincount(P.assign(x0), minlength=P.n_vertices)
    rows = []
    for (name, beta), g in times.groupby(["model", "beta"], sort=True):
        law = theory.frozen_law(P.vertices, mult, beta)
        t0 = int(g["t0"].iloc[0])
        row = {
            "model": name,
            "beta": beta,
            "chains": len(g),
            "t0": t0,
            "stage1": int((g["stage"] == 1).sum()),
            "censored": int(g["censored"].sum()),
            "plateau": float(g["dist_t0"].median()),
            "regime": bool(g["dist_t0"].median() + eps < jump),
            "frozen_mean": t0 + law.mean,
            "log_frozen_mean": math.log(t0 + law.mean),
        }
        if name == "SA_P":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", stats.DiagnosticWarning)
                km = stats.survival(g["steps"], g["censored"])
                stage2 = g[g["stage"] == 2]
                rate = (
                    stats.escape_rate(stage2["steps"] - t0, stage2["censored"])
                    if (~stage2["censored"]).any()
                    else None
                )
            row["median"] = km.median
            if rate is not None:
                lo, hi = rate.mean_interval()
                row.update(mean=t0 + rate.mean, mean_low=t0 + lo, mean_high=t0 + hi)
        else:
            row["median"] = np.nan if g["censored"].iloc[0] else float(g["steps"].iloc[0])
        rows.append(row)
    summary = pd.DataFrame(rows)
    regime = summary.loc[summary["regime"], ["model", "beta"]]
    inside = times.merge(regime, on=["model", "beta"])
    fits = [
        _chain_fit(inside[(inside["model"] == "SA_P") & (inside["stage"] == 2)]),
        _flow_fit(summary[(summary["model"] == "SA_beta") & summary["regime"]]),
        _frozen_fit(summary[(summary["model"] == "SA_P") & summary["regime"]]),
        _plateau_fit(summary[summary["model"] == "SA_beta"]),
    ]
    return summary, pd.DataFrame([f for f in fits if f is not None])


def _chain_fit(stage2: pd.DataFrame) -> dict | None:
    """Arrhenius fit log E[T_ε − t0] = a + b β over the SA_P chains that reached stage 2."""
    frame = stage2.assign(steps=stage2["steps"] - stage2["t0"])
    frame = frame[["beta", "steps", "censored"]]
    if frame["beta"].nunique() < 2 or (~frame["censored"]).sum() == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DiagnosticWarning)
        fit = stats.fit_scaling(frame)
        lo, hi = fit.confidence_interval("slope")
    return _fit_row("SA_P, censored joint fit", fit.slope, fit.intercept, frame["beta"], lo, hi)


def _fit_row(
    what: str,
    slope: float,
    intercept: float,
    beta: pd.Series,
    low: float = np.nan,
    high: float = np.nan,
) -> dict:
    """One row of the fits table: the fitted line, its interval for the slope (NaN for least
    squares) and the β range it rests on."""
    return {
        "what": what,
        "slope": slope,
        "low": low,
        "high": high,
        "intercept": intercept,
        "beta_min": beta.min(),
        "beta_max": beta.max(),
    }


def _flow_fit(flow: pd.DataFrame) -> dict | None:
    """Least-squares slope of log T_ε against β for SA_β over the metastable regime."""
    ok = flow.dropna(subset=["median"])
    if len(ok) < 2:
        return None
    slope, intercept = np.polyfit(ok["beta"], np.log(ok["median"]), 1)
    return _fit_row("SA_beta, least squares on log T", slope, intercept, ok["beta"])


def _plateau_fit(flow: pd.DataFrame) -> dict | None:
    """Power law of the SA_β plateau distance at t0: log D = a + b log β (b ≈ −1 means O(1/β))."""
    ok = flow[(flow["plateau"] > 0) & (flow["beta"] > 0)]
    if len(ok) < 2:
        return None
    ok = ok[ok["regime"]] if ok["regime"].sum() >= 2 else ok
    slope, intercept = np.polyfit(np.log(ok["beta"]), np.log(ok["plateau"]), 1)
    return _fit_row("SA_beta plateau distance, log-log slope", slope, intercept, ok["beta"])


def _frozen_fit(chain: pd.DataFrame) -> dict | None:
    """Slope of log(1/p) of the frozen law over the same β: the exponent the theory predicts."""
    if len(chain) < 2:
        return None
    slope, intercept = np.polyfit(chain["beta"], np.log(chain["frozen_mean"] - chain["t0"]), 1)
    return _fit_row("frozen law log(1/p)", slope, intercept, chain["beta"])


def run(config: Config, out: Path) -> None:
    """Simulate: the distance-over-time table and the tracking times (their summaries:
    :func:`analyse`)."""
    out = Path(out)
    seed, gamma, eps = int(config.seed), float(config.gamma), float(config.eps)
    P = polytope_from_dict(config.polytope)
    x0 = start(
        P,
        int(config.tokens),
        float(config.cone_margin),
        np.random.SeedSequence(seed, spawn_key=(9,)),
    )
    t0 = settle_steps(P, x0, gamma, eps, float(config.settle))
    edge = float(
        np.min(
            [
                np.linalg.norm(P.vertices[a] - P.vertices[b])
                for a in range(P.n_vertices)
                for b in range(a)
            ]
        )
    )
    meta = {
        "study": "hardmax-tracking",
        "config": config.to_dict(),
        "provenance": provenance(),
        "polytope": P.to_dict(),
        "x0": x0.tolist(),
        "c0": P.c0,
        "t0": t0,
        "one_pick_exceeds_eps": gamma * edge > eps,
        "gamma_min_edge": gamma * edge,
        "seeds": "SeedSequence(seed, spawn_key=...) per part, model and beta",
        "statement": "[FW]: finite beta follows hardmax (SA_inf) for exponentially long",
    }
    write_table(
        over_time(P, x0, gamma, config.over_time, seed),
        out / "distance.parquet",
        dict(
            meta,
            table="quantiles over chains of max_i |x_i^t - h_i^t| (SA_P; one "
            "path for SA_beta), h = hardmax path from the same start",
        ),
    )
    times = against_beta(P, x0, gamma, config.against_beta, eps, t0, seed)
    write_table(
        times,
        out / "tracking_times.csv",
        dict(
            meta,
            table="tracking time T_eps per chain (stage 1: left during the "
            "recorded transient; stage 2: first_passage LeaveBall(eps) at the vertices)",
        ),
    )


def analyse(out: Path, config: Config) -> None:
    """The summaries of the simulated tracking times: ``summary.csv`` and ``fits.csv``
    (:func:`summarise`) from ``tracking_times.csv``, with the run's provenance."""
    out = Path(out)
    times, meta = read_table(out / "tracking_times.csv")
    P = polytope_from_dict(config.polytope)
    x0 = np.asarray(meta["x0"], dtype=float)
    summary, fits = summarise(times, P, x0, float(meta["gamma_min_edge"]), float(config.eps))
    write_table(
        summary,
        out / "summary.csv",
        dict(
            meta,
            table="per model and beta: tracking-time median (Kaplan-Meier), mean "
            "with 95% interval (SA_P stage 2, geometric law), frozen-law prediction",
        ),
    )
    write_table(
        fits,
        out / "fits.csv",
        dict(meta, table="exponent of T_eps in beta: measured and frozen-law"),
    )
