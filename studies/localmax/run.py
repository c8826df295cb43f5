"""Localmax dynamics: hull, limits, quiescence, and the path from hardmax to uniform averaging.

Model (docs: models#models-rd; this package's reading of [LM]'s abstract, not a transcription): with
s_ij = <x_i, x_j> (B = I), the neighbour set N_i^t = {j : s_ij ≥ max_k s_ik − r_t} and the step
x_i ← x_i + γ (mean_{j in N_i^t} x_j − x_i), γ = 1/3 ([AFZ]'s α = 0.5, γ = α/(1+α)). r = 0 is
[AFZ]'s hardmax (index-averaged ties), r → ∞ uniform averaging.

Checked on the four hardmax configurations of [AFZ] Figure 2 (constructed here: emerging leader,
triangle, square, non-leader clusters; the exact published coordinates are not available) and
on random polygons with inner tokens:

(a) the convex hull converges to a polytope: hull area and number of hull vertices per step;
(b) no finite-time convergence for r > 0: distance of every token to its limit (the state at step
    ``horizon``) per step, whether any token that moves reaches its limit exactly, decay rate;
(c) r_t → 0 recovers the hardmax limit (vanishing schedules r0 q^t and r0/(1+t)), r large is
    uniform averaging (x̄ + (1 − γ)^t (x^0 − x̄));
(d) quiescent tokens, whose neighbour set no longer changes (up to ``horizon``), per step;
(e) softmax SA_β at several β, localmax at several r and hardmax from the same start, for the
    panels at steps 0, 1, 2, 5, 30.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial import ConvexHull, QhullError

from metastab.engine import simulate
from metastab.models import Hardmax, Localmax, SoftmaxFlow
from metastab.results import provenance, write_table
from metastab.setups.polytopes import random_polygon

from .config import Config

# --------------------------------------------------------------------------- inputs


def figure2(cfg: Config) -> dict[str, np.ndarray]:
    """The four [AFZ]-style configurations: listed points, then ``inner`` followers drawn
    uniformly (Dirichlet(1) weights) in the hull of the listed points, seeded."""
    out = {}
    for index, (name, spec) in enumerate(cfg.figure2.items()):
        pts = np.array(spec["points"], dtype=float)
        if spec.get("inner", 0):
            rng = np.random.default_rng([cfg.seed, 1, index])
            lam = rng.dirichlet(np.ones(len(pts)), size=int(spec["inner"]))
            pts = np.vstack([pts, lam @ pts])
        out[name] = pts
    return out


def polygons(cfg: Config) -> dict[str, np.ndarray]:
    """Random polygons (every vertex owns its cell) completed by uniform inner tokens (Dirichlet(1)
    weights of the vertices) to n tokens in all, so that they can run as chains of one call."""
    spec = cfg.polygons
    out = {}
    for k in spec.vertices:
        for j in range(int(spec.per_size)):
            seq = np.random.SeedSequence([cfg.seed, 2, int(k), j])
            poly_seed, inner_seed = seq.spawn(2)
            V = random_polygon(int(k), rng=poly_seed).vertices
            lam = np.random.default_rng(inner_seed).dirichlet(
                np.ones(len(V)), size=int(spec.n) - len(V)
            )
            out[f"polygon-k{k}-{j}"] = np.vstack([V, lam @ V])
    return out


def models(cfg: Config, *, schedules: bool = True) -> list[dict]:
    """Every dynamics of the study: label, family, parameters and the model."""
    g = float(cfg.gamma)
    out = [dict(label="hardmax", family="hardmax", model=Hardmax(g, tol=0.0))]
    for r in [*cfg.r_values, *cfg.r_wide]:
        out.append(
            dict(
                label=f"localmax r={r:g}",
                family="localmax",
                r=float(r),
                model=Localmax(g, float(r)),
            )
        )
    for r in cfg.r_relative:
        out.append(
            dict(
                label=f"localmax relative r={r:g}",
                family="localmax-relative",
                r=float(r),
                model=Localmax(g, float(r), neighbours="relative"),
            )
        )
    out.append(
        dict(
            label="localmax r large",
            family="localmax-large",
            r=float(cfg.r_large),
            model=Localmax(g, float(cfg.r_large)),
        )
    )
    for beta in cfg.betas:
        out.append(
            dict(
                label=f"softmax β={beta:g}",
                family="softmax",
                beta=float(beta),
                model=SoftmaxFlow(beta=float(beta), gamma=g),
            )
        )
    if schedules:
        for r0 in cfg.r0_values:
            for q in cfg.decays:
                out.append(
                    dict(
                        label=f"r_t={r0:g}·{q:g}^t",
                        family="vanishing",
                        schedule=f"geometric q={q:g}",
                        r=float(r0),
                        model=Localmax(g, _geometric(float(r0), float(q))),
                    )
                )
            out.append(
                dict(
                    label=f"r_t={r0:g}/(1+t)",
                    family="vanishing",
                    schedule="harmonic",
                    r=float(r0),
                    model=Localmax(g, _harmonic(float(r0))),
                )
            )
    return out


def _geometric(r0: float, q: float):
    def r_geometric(t):
        return r0 * q**t

    return r_geometric


def _harmonic(r0: float):
    def r_harmonic(t):
        return r0 / (1.0 + t)

    return r_harmonic


# --------------------------------------------------------------------------- measurements


def hull(points: np.ndarray, tol: float) -> tuple[float, int]:
    """(area, number of hull vertices) of a planar point set. The area is that of all the
    points; the vertices are counted among points more than ``tol`` apart (a cluster counts
    once). Degenerate sets have area 0 and 1 (one point) or 2 (a segment) vertices."""
    try:
        area = float(ConvexHull(points).volume)
    except QhullError:
        area = 0.0
    pts = distinct(points, tol)
    if len(pts) == 1:
        return 0.0, 1
    try:
        return area, int(len(ConvexHull(pts).vertices))
    except QhullError:
        return area, 2


def distinct(points: np.ndarray, tol: float) -> np.ndarray:
    """One representative per group of points within ``tol`` (max-norm) of a representative."""
    reps: list[np.ndarray] = []
    for p in points:
        if not any(np.abs(p - q).max() <= tol for q in reps):
            reps.append(p)
    return np.array(reps)


def last_changes(neigh: np.ndarray) -> np.ndarray:
    """Per token, the last step t at which N_i^t differs from N_i^{t−1} (0 if never)."""
    changed = (neigh[1:] != neigh[:-1]).any(axis=2)  # (T, n): change between t−1 and t
    last = np.zeros(neigh.shape[1], dtype=np.int64)
    for i in range(neigh.shape[1]):
        idx = np.flatnonzero(changed[:, i])
        if idx.size:
            last[i] = idx[-1] + 1
    return last


def arrivals(dist: np.ndarray, floor: float) -> int:
    """Tokens that reach their limit exactly in finite time: distance 0 at some step right after
    a step where it exceeded ``floor`` (a jump to 0 that rounding cannot explain)."""
    hit = (dist[1:] == 0.0) & (dist[:-1] > floor)
    return int(hit.any(axis=0).sum())


def score_gaps(path: np.ndarray) -> np.ndarray:
    """g_t = min_i (max_j s_ij − max{s_ij : s_ij < max_j s_ij}) along a path (B = I): the
    localmax sets equal the hardmax leader sets at step t iff r_t < g_t (inf: all scores tie)."""
    out = np.empty(len(path))
    for t, x in enumerate(path):
        s = x @ x.T
        best = s.max(axis=1, keepdims=True)
        below = np.where(s < best, s, -np.inf).max(axis=1)
        out[t] = float(np.min(best[:, 0] - below))
    return out


def uniform_path(x0: np.ndarray, gamma: float, steps: int) -> np.ndarray:
    """Uniform averaging, the r → ∞ limit: x^t = x̄ + (1 − γ)^t (x^0 − x̄)."""
    mean = x0.mean(axis=0)
    t = np.arange(steps + 1)[:, None, None]
    return mean[None, None] + (1.0 - gamma) ** t * (x0 - mean)[None]


def measure(
    names: list[str], X0: np.ndarray, spec: dict, cfg: Config, hardmax_limits, *, keep_series: bool
) -> tuple[list[dict], list[pd.DataFrame], tuple]:
    """Run one dynamics from each configuration X0[c] (chains of one call) for ``horizon`` steps.

    Returns one summary row per configuration, their time series (when ``keep_series``) and
    (paths (C, horizon + 1, n, 2), leaders (C, horizon + 1, n) or None for softmax). The limit
    is the state at ``horizon``; the neighbour sets are
    read up to the *resolution step*, the first step at which every token is within
    ``cfg.resolution`` (relative) of its limit: beyond it, a token and the point it converges to
    tie in floating point and their neighbour sets flicker with rounding, not with the dynamics.
    """
    horizon, series, gamma = int(cfg.horizon), int(cfg.series), float(cfg.gamma)
    steps = int(cfg.steps)
    model = spec["model"]
    bookkeeping = isinstance(model, (Hardmax, Localmax))
    run = simulate(model, X0, steps=horizon, record_every=1, record_neighbours=bookkeeping)
    rows, frames = [], []
    for c, name in enumerate(names):
        assert run.trajectory is not None  # a recorded run
        x0, path = X0[c], run.trajectory[c]
        limit = path[-1]
        scale = float(np.abs(x0).max())
        tol = cfg.cluster_tol * scale
        dist = np.sqrt(((path - limit[None]) ** 2).sum(axis=2))  # (horizon + 1, n)
        moving = dist[0] > tol
        full = dist[:, moving].max(axis=1) if moving.any() else np.zeros(horizon + 1)
        small = np.flatnonzero(full <= cfg.resolution * scale)
        t_res = int(small[0]) if small.size else horizon
        areas = np.empty(series + 1)
        nverts = np.empty(series + 1, dtype=np.int64)
        for t in range(series + 1):
            areas[t], nverts[t] = hull(path[t], tol)
        area_end, verts_end = hull(limit, tol)
        maxd = full[: series + 1]
        mind = (
            dist[: series + 1, moving].min(axis=1) if moving.any() else np.full(series + 1, np.nan)
        )
        # asymptotic decay rate: fitted where the largest distance is between 1e-3 and the
        # resolution (relative), past the transient and above the rounding floor
        fit = np.flatnonzero((full < 1e-3 * scale) & (full > cfg.resolution * scale))
        rate = float(np.exp(np.polyfit(fit, np.log(full[fit]), 1)[0])) if fit.size >= 3 else np.nan
        step_change = float(np.abs(path[-1] - path[-2]).max())
        settled = step_change <= cfg.roundoff * scale
        row = dict(
            config=name,
            label=spec["label"],
            family=spec["family"],
            r=spec.get("r", np.nan),
            beta=spec.get("beta", np.nan),
            schedule=spec.get("schedule", ""),
            n=len(x0),
            score_spread=float(np.ptp(x0 @ x0.T)),
            converged=settled,
            resolution_step=t_res,
            area0=areas[0],
            area_steps=float(hull(path[steps], tol)[0]),
            area_end=area_end,
            area_gap_series=float(abs(areas[-1] - area_end)),
            max_area_increase=float(np.max(np.diff(areas))),
            hull_vertices0=int(nverts[0]),
            hull_vertices_steps=int(nverts[steps]),
            hull_vertices_end=int(verts_end),
            clusters_end=len(distinct(limit, tol)),
            moving=int(moving.sum()),
            # the limit is the state at the horizon: arrivals are looked for before it,
            # and only where the run has settled (else "the limit" is not one)
            tokens_at_limit=(
                arrivals(dist[:-1, moving], cfg.resolution * scale) if settled else np.nan
            ),
            config_at_limit=(
                bool(arrivals(full[:-1, None], cfg.resolution * scale)) if settled else np.nan
            ),
            min_dist_series=float(np.nanmin(mind[1:])) if moving.any() else np.nan,
            max_dist_series=float(maxd[-1]),
            decay_rate=rate,
        )
        if hardmax_limits is not None:
            row["dist_to_hardmax"] = float(
                np.sqrt(((limit - hardmax_limits[c]) ** 2).sum(axis=1)).max()
            )
        row["dist_to_uniform"] = float(
            np.abs(path[: steps + 1] - uniform_path(x0, gamma, steps)).max()
        )
        leaders = changed = quiescent = None
        if bookkeeping:
            assert run.neighbours is not None  # kept by bookkeeping
            neigh = run.neighbours[c, : t_res + 1]
            last = last_changes(neigh)
            diag = np.diagonal(neigh, axis1=1, axis2=2)
            row["quiescent_from"] = int(last.max())
            row["leaders0"] = int(diag[0].sum())
            row["leaders_steps"] = int(diag[min(steps, t_res)].sum())
            row["emerged_leaders"] = int((diag[min(steps, t_res)] & ~diag[0]).sum())
            pad = max(0, series + 1 - len(diag))
            leaders = np.r_[diag.sum(axis=1), np.full(pad, np.nan)][: series + 1]
            changed = np.r_[
                0, (neigh[1:] != neigh[:-1]).any(axis=2).sum(axis=1), np.full(pad, np.nan)
            ][: series + 1]
            quiescent = np.array([(last <= t).sum() for t in range(series + 1)], dtype=float)
        rows.append(row)
        if keep_series:
            nan = np.full(series + 1, np.nan)
            frames.append(
                pd.DataFrame(
                    dict(
                        config=name,
                        label=spec["label"],
                        family=spec["family"],
                        step=np.arange(series + 1),
                        area=areas,
                        hull_vertices=nverts,
                        max_dist_limit=maxd,
                        min_dist_limit=mind,
                        leaders=nan if leaders is None else leaders,
                        changed=nan if changed is None else changed,
                        quiescent=nan if quiescent is None else quiescent,
                    )
                )
            )
    leaders_kept = None
    if bookkeeping:
        assert run.neighbours is not None  # kept by bookkeeping
        leaders_kept = np.diagonal(run.neighbours, axis1=2, axis2=3)
    return rows, frames, (run.trajectory, leaders_kept)


def tidy_paths(name: str, label: str, path: np.ndarray, leaders, steps: int) -> pd.DataFrame:
    """Long table of the first ``steps`` states: config, label, step, token, x, y (float32:
    for the panels only), leader (i ∈ N_i at that step; False for softmax)."""
    T, n, _ = path[: steps + 1].shape
    step, token = np.meshgrid(np.arange(T), np.arange(n), indexing="ij")
    lead = np.zeros((T, n), bool) if leaders is None else leaders[: steps + 1]
    return pd.DataFrame(
        dict(
            config=name,
            label=label,
            step=step.ravel(),
            token=token.ravel(),
            x=path[: steps + 1, :, 0].ravel().astype(np.float32),
            y=path[: steps + 1, :, 1].ravel().astype(np.float32),
            leader=lead.ravel(),
        )
    )


# --------------------------------------------------------------------------- driver


def run(config: Config, out: Path) -> None:
    """Compute every table of the study into ``out`` (see the module docstring).

    The runs are many and tiny (n ≤ 16 tokens, one kernel call per recorded step), so numba runs
    on one thread here: a parallel region per step costs more than the step. The results do not
    depend on the thread count (the kernels are reproducible bit for bit across thread counts).
    """
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        _run(config, Path(out))
    finally:
        numba.set_num_threads(threads)


def _run(cfg: Config, out: Path) -> None:
    steps = int(cfg.steps)
    summary, series, paths = [], [], []
    figure = figure2(cfg)
    poly = polygons(cfg)
    shown = f"polygon-k{max(cfg.polygons.vertices)}-0"  # the polygon drawn in panels
    # one call per dynamics: each figure-2 configuration alone, all polygons as chains (same n)
    batches = [([name], x[None], True) for name, x in figure.items()]
    batches.append((list(poly), np.stack(list(poly.values())), False))
    for names, X0, is_figure in batches:
        specs = models(cfg)
        rows, frames, (hm_paths, hm_lead) = measure(
            names, X0, specs[0], cfg, None, keep_series=is_figure
        )
        limits = hm_paths[:, -1]
        gaps = {}
        for c, row in enumerate(rows):
            row["dist_to_hardmax"] = 0.0
            gaps[c] = score_gaps(hm_paths[c, : row["resolution_step"] + 1])
        results = [(rows, frames, (hm_paths, hm_lead), specs[0])]
        for spec in specs[1:]:
            keep = is_figure and spec["family"] != "vanishing"
            results.append((*measure(names, X0, spec, cfg, limits, keep_series=keep), spec))
            if spec["family"] == "vanishing":  # does r_t stay below the hardmax score gaps?
                r_t = spec["model"].margin_arrays(
                    0, len(gaps[0]) if len(names) == 1 else max(len(g) for g in gaps.values())
                )
                for c, row in enumerate(results[-1][0]):
                    row["below_gaps"] = bool((r_t[: len(gaps[c])] < gaps[c]).all())
        for rows, frames, (path, lead), spec in results:
            summary += rows
            series += frames
            if spec["family"] == "vanishing":
                continue
            for c, name in enumerate(names):
                if is_figure or name == shown:
                    paths.append(
                        tidy_paths(
                            name, spec["label"], path[c], None if lead is None else lead[c], steps
                        )
                    )
    meta = dict(
        config=cfg.to_dict(),
        provenance=provenance(),
        model="see run.py: models()",
        note="B = I; configurations of [AFZ] Figure 2 constructed, not transcribed",
    )
    write_table(
        pd.DataFrame(summary),
        out / "summary.csv",
        dict(
            meta,
            description="one row per configuration and dynamics: hull, limit, "
            "finite-time check, decay rate, quiescence, distances "
            "to the hardmax limit and to uniform averaging",
        ),
    )
    write_table(
        pd.concat(series, ignore_index=True),
        out / "series.parquet",
        dict(
            meta,
            description="per step: hull area and vertices, distances to the "
            "limit, leaders, neighbour-set changes, quiescent count",
        ),
    )
    write_table(
        pd.concat(paths, ignore_index=True),
        out / "paths.parquet",
        dict(
            meta,
            description="token positions (float32, for drawing) for steps "
            "0..steps (panels), and whether each leads itself",
        ),
    )
    initial = []
    for name, x0 in {**figure, **poly}.items():
        initial.append(
            pd.DataFrame(dict(config=name, token=np.arange(len(x0)), x=x0[:, 0], y=x0[:, 1]))
        )
    write_table(
        pd.concat(initial, ignore_index=True),
        out / "initial.csv",
        dict(
            meta,
            description="initial configurations (the figure-2 ones and the "
            "random polygons with their inner tokens)",
        ),
    )
