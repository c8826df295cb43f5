"""The (t, β) phase diagram of GLPR Fig. 3 and the cluster counts on the circle of GLPR Fig. 4.

Model: (SA) with Q = K = V = I in the authors' discretisation, the post-LN layer
x_i ← N(x_i + dt Σ_j softmax_j(β<x_i, x_j>) x_j) (:class:`metastab.SphereFlow`), from n i.i.d.
uniform points on S^{d−1}. :func:`metastab.track` reduces every layer of every start on-line to
the fraction of clustered pairs (cosine ≥ 1 − δ), the cosine of tokens 1 and 2 and the number of
clusters, without keeping trajectories. Written:

- ``diagram.parquet``: per (d, β, t) the mean over starts of the clustered-pair fraction (an
  estimate of P(<x_1(t), x_2(t)> ≥ 1 − δ) by exchangeability, with its standard error) and the
  fraction of starts whose pair (1, 2) is clustered (the literal estimate);
- ``boundary.csv``: the curve Γ of (6.9), t*(β) (:func:`metastab.theory.phase_boundary`), and
  t*_dt(β), the first layer at which the orthogonal start clusters under the same post-LN
  layer (the curve the simulated dynamics has in place of Γ);
- ``circle.csv``: on the circle (d = 2), the distribution over starts of the cluster count at the
  published times, for the published β and for δ moved both ways;
- ``reduction.csv``: the span reduction against the full-d run.

For d > n a start is simulated in the n-dimensional span of x(0) (coordinates from a QR
factorisation, the same Gram matrix): the layer commutes with rotations and keeps that span, so
this is the same dynamics at the cost of d = n.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import theory
from metastab.engine import first_passage, track
from metastab.events import Clusters
from metastab.models.sphere import SphereFlow
from metastab.results import write_table
from metastab.setups.sphere import orthogonal, sphere_uniform
from metastab.studies.runner import study_meta

from .config import Config


def layer(beta: float, dt: float):
    """The post-LN layer of (SA), Q = K = V = I."""
    return SphereFlow(beta, dt, scheme="post-ln")


def observed(beta, x0, steps, dt, delta, **record):
    """times, and the observables of :func:`metastab.track` (starts × kept layers × columns)
    at the layers of ``record`` (``record_every`` or ``record_at``), with each column's index."""
    tr = track(layer(beta, dt), x0, steps=steps, delta=delta, **record)
    return tr.times * dt, tr.observables, {c: i for i, c in enumerate(tr.COLUMNS)}


def diagram(config: Config) -> pd.DataFrame:
    """Per (d, β, t): clustered-pair fraction (mean, standard error) and P(pair (1, 2))."""
    n, dt, delta = int(config.n), float(config.dt), float(config.delta)
    steps, count = round(float(config.t_max) / dt), int(config.realisations)
    every = int(config.record_every)
    frames = []
    for d in config.ds:
        root = np.random.SeedSequence(int(config.seed), spawn_key=(int(d),))
        x0 = sphere_uniform(n, int(d), span=True, chains=count, rng=root)
        for beta in config.betas:
            t, obs, col = observed(float(beta), x0, steps, dt, delta, record_every=every)
            frac = obs[:, :, col["pair_fraction"]]
            pair = obs[:, :, col["cos12"]] >= 1 - delta
            frames.append(
                pd.DataFrame(
                    {
                        "d": int(d),
                        "beta": float(beta),
                        "t": t,
                        "pair_fraction": frac.mean(axis=0),
                        "pair_fraction_se": frac.std(axis=0, ddof=1) / math.sqrt(count),
                        "pair12": pair.mean(axis=0),
                        "starts": count,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def boundary(config: Config, betas) -> pd.DataFrame:
    """Γ of (6.9) and the layer's own t*_dt: the first layer at which the orthogonal start is
    one cluster (:class:`metastab.Clusters`; all its cosines are equal, so every pair clusters
    at that layer), NaN beyond t_max."""
    n, dt, delta = int(config.n), float(config.dt), float(config.delta)
    steps = round(float(config.t_max) / dt)
    rows = []
    for beta in betas:
        fp = first_passage(
            layer(float(beta), dt),
            orthogonal(n, n),
            Clusters(at_most=1, delta=delta),
            max_steps=steps,
        )
        rows.append(
            {
                "beta": float(beta),
                "t_star": theory.orthogonal_time(float(beta), n, delta=delta),
                "t_star_layer": math.nan if fp.censored[0] else float(fp.times[0] * dt),
            }
        )
    return pd.DataFrame(rows)


def circle(config: Config) -> pd.DataFrame:
    """On the circle: how many starts have k clusters at each published time, per β and δ."""
    n, dt, cfg = int(config.n), float(config.dt), config.circle
    count = int(config.realisations)
    times = [float(t) for t in cfg.times]
    layers = sorted({round(t / dt) for t in times})
    steps = layers[-1]
    root = np.random.SeedSequence(int(config.seed), spawn_key=(2,))
    x0 = sphere_uniform(n, 2, chains=count, rng=root)
    rows = []
    for beta, published in zip(cfg.betas, cfg.published):
        for delta in sorted({float(config.delta), *map(float, cfg.deltas)}):
            t, obs, col = observed(float(beta), x0, steps, dt, delta, record_at=layers)
            for when in times:
                r = int(np.argmin(np.abs(t - when)))
                k, freq = np.unique(obs[:, r, col["clusters"]].astype(int), return_counts=True)
                rows += [
                    {
                        "beta": float(beta),
                        "published": int(published),
                        "delta": delta,
                        "t": float(t[r]),
                        "clusters": int(a),
                        "starts": int(b),
                        "total": count,
                    }
                    for a, b in zip(k, freq)
                ]
    return pd.DataFrame(rows)


def reduction(config: Config) -> pd.DataFrame:
    """cos12 of the full-d run against the span run, per layer, on the first starts."""
    n, dt, delta = int(config.n), float(config.dt), float(config.delta)
    cfg = config.reduction
    d, beta, count = int(cfg.d), float(cfg.beta), int(cfg.realisations)
    steps = round(float(config.t_max) / dt)
    root = np.random.SeedSequence(int(config.seed), spawn_key=(d,))
    every = {"record_every": int(config.record_every)}
    x0 = sphere_uniform(n, d, chains=count, rng=root)
    t, full, col = observed(beta, x0, steps, dt, delta, **every)
    x0 = sphere_uniform(n, d, span=True, chains=count, rng=root)
    _, span, _ = observed(beta, x0, steps, dt, delta, **every)
    c = col["cos12"]
    return pd.DataFrame(
        {
            "d": d,
            "beta": beta,
            "starts": count,
            "t": t,
            "max_gap": np.abs(full[:, :, c] - span[:, :, c]).max(axis=0),
            "pair_fraction_gap": np.abs(
                full[:, :, col["pair_fraction"]] - span[:, :, col["pair_fraction"]]
            ).max(axis=0),
        }
    )


def run(config: Config, out: Path) -> None:
    """The diagram, the boundaries, the circle counts and the reduction check."""
    out = Path(out)
    meta = dict(
        study_meta("phase-diagram", config),
        statement="GLPR Fig. 3 (phase diagram, curve Γ of (6.9)) and Fig. 4 (clusters on S^1)",
        seeds="start c in dimension d: chain c of sphere_uniform from "
        "SeedSequence(seed, spawn_key=(d,)), the same for every beta",
    )
    write_table(
        diagram(config),
        out / "diagram.parquet",
        dict(
            meta,
            table="per (d, beta, t): mean clustered-pair fraction over starts (+ standard error), "
            "fraction of starts with pair (1, 2) clustered",
        ),
    )
    fine = np.round(np.arange(0.0, max(config.betas) + 1e-9, 0.25), 2)
    write_table(
        boundary(config, np.union1d(fine, config.betas)),
        out / "boundary.csv",
        dict(
            meta,
            table="t*(beta) of (6.9) (the curve Gamma) and t*_dt of the post-LN layer from the "
            "orthogonal start (NaN: beyond t_max)",
        ),
    )
    write_table(
        circle(config),
        out / "circle.csv",
        dict(meta, table="d = 2: number of starts with k clusters at the published times"),
    )
    write_table(
        reduction(config),
        out / "reduction.csv",
        dict(meta, table="largest |cos12 full d − cos12 span| (and pair-fraction gap) per layer"),
    )
