"""Metastable clusters of causal attention around strong Rényi centres (Karagodin, Polyanskiy,
Rigollet, arXiv 2411.04990, §5, Lemma 5.1, Fig. 2; docs: studies/causal-parking).

(CSA) with Q = K = V = I on the circle, ẋ_k = P⊥_{x_k}(Σ_{j≤k} e^{β<x_k, x_j>} x_j / Z_k), from
n i.i.d. uniform tokens, measured with :class:`metastab.SphereFlow` (``causal=True``, softmax,
post-LN at step dt as in the authors' scripts). Per start: its strong Rényi centres and Rényi
centres at δ = delta_factor · β^{−1/2} (:func:`metastab.studies.parking.renyi_centres`); the
clusters (δ_c-components of :func:`metastab.studies.circle.circle_clusters`) at the reading
times; the centres' positions at those times; and, every ``frame_every``, the cluster count, from
which the plateau lengths (time until the count first falls below its value at a reading time,
censored at the horizon) are read. The kernel's own count (:func:`metastab.track`) of the
configurations at the reading times is kept as a check of the decomposition.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.engine import simulate, track
from metastab.models.sphere import SphereFlow
from metastab.results import write_table
from metastab.studies.circle import circle_clusters, on_circle
from metastab.studies.parking import expected_strong_centres, renyi_centres
from metastab.studies.runner import study_meta

from .config import Config

STUDY = "causal-parking"


def separation(config: Config, beta: float) -> float:
    """δ = delta_factor · β^{−1/2} (their Fig. 2: 4 β^{−1/2})."""
    return float(config.delta_factor) / math.sqrt(beta)


def frame_steps(config: Config) -> tuple[int, np.ndarray]:
    """(steps per frame, the recorded steps 0, every, 2·every, ... up to the horizon)."""
    every = int(round(float(config.frame_every) / float(config.dt)))
    frames = int(math.floor(float(config.horizon) / float(config.dt) / every + 1e-9))
    return every, every * np.arange(frames + 1, dtype=np.int64)


def plateau(times: np.ndarray, counts: np.ndarray, t0: float) -> tuple[float, int, bool]:
    """(length, count at t0, censored): the time from t0 to the first frame after it whose count
    is below the count at t0; censored at the last frame if there is none.

    >>> plateau(np.array([0.0, 1, 2, 3]), np.array([5, 4, 4, 3]), 1.0)
    (2.0, 4, False)
    >>> plateau(np.array([0.0, 1, 2, 3]), np.array([5, 4, 4, 4]), 1.0)
    (2.0, 4, True)
    """
    at = int(np.flatnonzero(np.isclose(times, t0))[0])
    level = int(counts[at])
    below = np.flatnonzero(counts[at + 1 :] < level)
    if below.size:
        return float(times[at + 1 + below[0]] - t0), level, False
    return float(times[-1] - t0), level, True


def measure(config: Config) -> dict[str, pd.DataFrame]:
    """The study's tables: starts, centres, clusters, lifetimes."""
    n, chains, dt = int(config.n), int(config.chains), float(config.dt)
    fractions = [float(f) for f in config.min_fractions]
    readings = [float(t) for t in config.reading_times]
    cdelta = float(config.cluster_delta)
    every, steps = frame_steps(config)
    times = steps * dt
    for h in map(float, config.horizons):  # the lifetime's shorter horizons (checks)
        if not max(readings) < h <= float(config.horizon):
            raise ValueError(
                f"horizons: each must lie in (max(reading_times) = {max(readings):g}, "
                f"horizon = {float(config.horizon):g}], got {h!r}"
            )

    def at(beta: float, ib: int) -> dict[str, pd.DataFrame]:
        delta = separation(config, beta)
        gen = np.random.default_rng(np.random.SeedSequence(int(config.seed), spawn_key=(ib,)))
        theta0 = gen.uniform(0.0, 2.0 * math.pi, size=(chains, n))
        x0 = on_circle(theta0)
        model = SphereFlow(beta, dt, causal=True)
        run = simulate(model, x0, steps=int(steps[-1]), record_at=steps.tolist())
        assert run.trajectory is not None  # a recorded run
        rows: dict[str, list[dict]] = {"starts": [], "centres": [], "clusters": [], "lifetimes": []}
        read_at = [int(np.flatnonzero(np.isclose(times, t))[0]) for t in readings]
        for c in range(chains):
            strong = set(renyi_centres(x0[c], delta, strong=True).tolist())
            renyi = renyi_centres(x0[c], delta)
            series = np.zeros((len(fractions), times.size), dtype=np.int64)
            for f_, frame in enumerate(run.trajectory[c]):
                sizes = circle_clusters(frame, cdelta)[1]
                for i, f in enumerate(fractions):
                    series[i, f_] = int((sizes >= f * n).sum())
            kernel = []
            for t, r in zip(readings, read_at):
                frame = run.trajectory[c, r]
                means, sizes = circle_clusters(frame, cdelta)
                for angle, size in zip(means, sizes):
                    if size >= 2:  # singletons are never clusters at min_fraction · n >= 2
                        rows["clusters"].append(
                            {
                                "beta": beta,
                                "chain": c,
                                "time": t,
                                "angle": float(np.mod(angle, 2 * math.pi)),
                                "size": int(size),
                            }
                        )
                tracked = track(model, frame, steps=1, delta=cdelta).observables_frame()
                kernel.append(int(tracked["clusters"].iloc[0]) == sizes.size)
            rows["starts"].append(
                {
                    "beta": beta,
                    "chain": c,
                    "delta": delta,
                    "strong": len(strong),
                    "renyi": int(renyi.size),
                    "expected_strong": expected_strong_centres(n, delta),
                    "kernel_agrees": int(sum(kernel)),
                    "readings": len(kernel),
                }
            )
            for k in renyi.tolist():
                row = {
                    "beta": beta,
                    "chain": c,
                    "token": int(k),
                    "strong": int(k in strong),
                    "theta0": float(theta0[c, k] % (2 * math.pi)),
                }
                for t, r in zip(readings, read_at):
                    x = run.trajectory[c, r, k]
                    row[f"theta_{t:g}"] = float(math.atan2(x[1], x[0]) % (2 * math.pi))
                rows["centres"].append(row)
            for i, f in enumerate(fractions):
                for t in readings:
                    length, level, censored = plateau(times, series[i], t)
                    rows["lifetimes"].append(
                        {
                            "beta": beta,
                            "chain": c,
                            "fraction": f,
                            "t0": t,
                            "count": level,
                            "length": length,
                            "censored": int(censored),
                            "horizon": float(times[-1]),
                        }
                    )
        return {k: pd.DataFrame(v) for k, v in rows.items()}

    tables: dict[str, list[pd.DataFrame]] = {}
    for ib, beta in enumerate(config.betas):  # β's place in the scan is its spawn key
        for name, table in at(float(beta), ib).items():
            tables.setdefault(name, []).append(table)
    return {name: pd.concat(parts, ignore_index=True) for name, parts in tables.items()}


DESCRIPTIONS = {
    "starts": "one row per (β, start): δ = delta_factor β^{−1/2}, the numbers of strong Rényi "
    "centres and of Rényi centres of the start, the exact expectation of the strong count for "
    "uniform tokens, and at how many reading times the circle's decomposition and the kernel's "
    "δ_c-component count agree",
    "centres": "one row per Rényi centre of every start: its token index, whether it is strong, "
    "its starting angle and its angle at each reading time (theta_T)",
    "clusters": "the δ_c-components of >= 2 tokens at each reading time: circular-mean angle and "
    "size",
    "lifetimes": "per (β, start, minimum cluster fraction, reading time t0): the cluster count "
    "at t0 and the plateau length (time from t0 to the first frame with fewer clusters, "
    "censored at the horizon)",
}


def run(config: Config, out: Path) -> None:
    """The study's four tables, with provenance."""
    for name, table in measure(config).items():
        write_table(
            table,
            Path(out) / f"{name}.csv",
            dict(study_meta(STUDY, config), table=DESCRIPTIONS[name]),
        )
