"""Dynamic metastability of (SA) on the circle (GKPR, arXiv 2410.06833;
docs: models#sphere-statements (5)).

Clusters on the circle merge one pair at a time, and the time between merges grows like
e^{β(1 − cos Δθ)}, Δθ the angle between the closest pair. For two point clusters the time is
exactly a quadrature (:func:`metastab.theory.merge_time`): log T = β(1 − cos Δθ) − log β + O(1).
Measured here with :class:`metastab.SphereFlow` (post-LN, dt of the authors' scripts) and
:func:`metastab.track` (cluster counts in the kernel, plateaus right-censored at the horizon):

- prepared starts: two caps of tokens at angle Δθ, the plateau at 2 clusters against β (the
  first passage to one cluster, :class:`metastab.Clusters`);
- the same starts with RK4 at small dt against the quadrature (the instrument's control);
- random starts: n uniform tokens, every plateau of the staircase, with the closest pair of
  clusters and their masses at the plateau's start (a second run records the configuration at
  those steps: the flow is deterministic, so it retraces the first);
- cap containment: the first step at which a token leaves the 2ε-cap of its centre
  (:class:`metastab.LeaveBall`), beside a third-party transcription of GKPR's bound;
- the energy E_β and the cluster count along long runs, at log-spaced steps (the staircase).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import theory
from metastab.engine import first_passage, simulate, track
from metastab.events import Clusters, LeaveBall
from metastab.models.sphere import SphereFlow
from metastab.results import write_table
from metastab.studies.circle import circle_clusters, closest_pair, on_circle
from metastab.studies.runner import study_meta

from .config import Config, Containment, Energy, Prepared, Random


def caps(centres, per_cap: int, radius: float, chains: int, seed) -> np.ndarray:
    """(chains, len(centres)·per_cap, 2): tokens at angles centre + U(−radius, radius)."""
    gen = np.random.default_rng(seed)
    offsets = gen.uniform(-radius, radius, size=(chains, len(centres), per_cap))
    theta = np.asarray(centres, dtype=np.float64)[None, :, None] + offsets
    return on_circle(theta.reshape(chains, -1))


def _plateaus(tr, part: str, **columns) -> pd.DataFrame:
    # the study's tables keep "steps" for the plateau's end (a first passage from step 0), as
    # the first-passage frames of prepared() beside them
    frame = tr.to_frame().rename(columns={"end": "steps"})
    frame.insert(0, "part", part)
    for key, value in columns.items():
        frame[key] = value
    return frame


def prepared(cfg: Prepared, model_kwargs: dict, dt: float, delta: float, seed: int, part: str):
    """Plateau at 2 clusters from two caps, per angle and exponent β(1 − cos Δθ): the first
    step with at most one cluster (the caps start as two clusters: checked in ``count``)."""
    frames = []
    for ia, angle in enumerate(cfg.angles):
        u = 1 - math.cos(angle)
        for ie, exponent in enumerate(cfg.exponents):
            beta = float(exponent) / u
            chains = int(cfg.chains)
            x0 = caps(
                [0.0, angle],
                int(cfg.per_cap),
                float(cfg.cap_radius),
                chains,
                np.random.SeedSequence(seed, spawn_key=(1, ia, ie)),
            )
            sep, log_quad, count = np.empty(chains), np.empty(chains), np.empty(chains, np.int64)
            for c in range(chains):
                centres, sizes = circle_clusters(x0[c], delta)
                sep[c], ma, mb = closest_pair(centres, sizes)
                count[c] = sizes.size
                log_quad[c] = theory.merge_time(beta, sep[c], masses=(ma, mb), delta=delta)
            horizon = int(math.ceil(cfg.horizon_factor * math.exp(log_quad.max()) / dt))
            fp = first_passage(
                SphereFlow(beta, dt, **model_kwargs),
                x0,
                Clusters(at_most=1, delta=delta),
                max_steps=horizon,
            )
            frame = fp.to_frame()
            frame.insert(0, "part", part)
            frame["start"] = 0
            frame["angle"], frame["exponent"] = float(angle), float(exponent)
            frame["count"], frame["separation"], frame["log_time_quadrature"] = count, sep, log_quad
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def random_starts(cfg: Random, dt: float, delta: float, seed: int) -> pd.DataFrame:
    """Every plateau of the staircase from uniform starts, with the closest pair at its start."""
    frames = []
    n, chains, horizon = int(cfg.n), int(cfg.chains), int(cfg.horizon)
    for ib, beta in enumerate(cfg.betas):
        gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3, ib)))
        x0 = on_circle(gen.uniform(0, 2 * math.pi, size=(chains, n)))
        model = SphereFlow(float(beta), dt)
        frame = _plateaus(track(model, x0, steps=horizon, delta=delta), "random", dt=dt)
        frame = frame[frame["k"] >= 2].reset_index(drop=True)
        cols = {c: np.full(len(frame), np.nan) for c in ("separation", "log_time_quadrature")}
        cols |= {c: np.zeros(len(frame), np.int64) for c in ("mass_a", "mass_b", "count")}
        for c, rows in frame.groupby("chain").groups.items():
            starts = np.unique(frame.loc[rows, "start"].to_numpy())
            states = {0: x0[c]}
            if starts.max() > 0:
                later = starts[starts > 0]
                run = simulate(model, x0[c], steps=int(later.max()), record_at=later.tolist())
                assert run.times is not None and run.trajectory is not None  # a recorded run
                states |= dict(zip(run.times.tolist(), run.trajectory[0]))
            for r in rows:
                centres, sizes = circle_clusters(states[int(frame.at[r, "start"])], delta)
                sep, ma, mb = closest_pair(centres, sizes)
                cols["count"][r], cols["mass_a"][r], cols["mass_b"][r] = sizes.size, ma, mb
                cols["separation"][r] = sep
                if sizes.size >= 2:
                    cols["log_time_quadrature"][r] = theory.merge_time(
                        float(beta), sep, masses=(ma, mb), delta=delta
                    )
        for key, value in cols.items():
            frame[key] = value
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def containment(cfg: Containment, dt: float, seed: int) -> pd.DataFrame:
    """First step at which a token leaves the 2ε-cap around its cap's centre."""
    eps, angle, per_cap = float(cfg.eps), float(cfg.angle), int(cfg.per_cap)
    chains, max_steps = int(cfg.chains), int(cfg.max_steps)
    centres = on_circle(np.repeat([0.0, angle], per_cap))
    chord = 2 * math.sin(eps)  # the chord of the angle 2ε
    frames = []
    for ib, beta in enumerate(cfg.betas):
        x0 = caps(
            [0.0, angle], per_cap, eps, chains, np.random.SeedSequence(seed, spawn_key=(4, ib))
        )
        cross = np.einsum("cid,cjd->cij", x0[:, :per_cap], x0[:, per_cap:])
        alpha = cross.reshape(chains, -1).max(axis=1)
        fp = first_passage(
            SphereFlow(float(beta), dt),
            x0,
            LeaveBall(chord, centers=centres),
            max_steps=max_steps,
        )
        n = 2 * per_cap
        frames.append(
            pd.DataFrame(
                {
                    "beta": float(beta),
                    "chain": np.arange(chains),
                    "steps": fp.times,
                    "censored": fp.censored,
                    "max_steps": max_steps,
                    "alpha": alpha,
                    "log_transcribed_bound": np.log(eps / n) + (1 - alpha) * float(beta),
                    "eps": eps,
                    "dt": dt,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def energy(cfg: Energy, dt: float, delta: float, seed: int) -> pd.DataFrame:
    """E_β and the cluster count at log-spaced steps of one run per β from a uniform start."""
    steps, n = int(cfg.steps), int(cfg.n)
    at = np.unique(np.geomspace(1, steps, int(cfg.records)).astype(np.int64))
    frames = []
    for ib, beta in enumerate(cfg.betas):
        gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(5, ib)))
        x0 = on_circle(gen.uniform(0, 2 * math.pi, size=n))
        tr = track(
            SphereFlow(float(beta), dt),
            x0,
            steps=steps,
            delta=delta,
            record_at=[0, *at.tolist()],
        )
        frame = tr.observables_frame()
        frame["dt"] = dt
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def run(config: Config, out: Path) -> None:
    """All parts of the study, each into its own table with provenance."""
    out = Path(out)
    seed, dt, delta = int(config.seed), float(config.dt), float(config.delta)
    meta = study_meta("staircase", config)
    # the control: the prepared starts with the control's exponents and chains, RK4 at its dt
    ctl = replace(config.prepared, exponents=config.control.exponents, chains=config.control.chains)
    tables = {
        "prepared.csv": (
            pd.concat(
                [
                    prepared(config.prepared, {}, dt, delta, seed, "post-ln"),
                    prepared(ctl, {"scheme": "rk4"}, float(config.control.dt), delta, seed, "rk4"),
                ],
                ignore_index=True,
            ),
            "plateau at 2 clusters from two caps Δθ apart: post-LN (dt of the authors' scripts) "
            "and RK4 (control), with the two-cluster quadrature log T (time units)",
        ),
        "random.csv": (
            random_starts(config.random, dt, delta, seed),
            "every plateau (k >= 2) from uniform starts, censored at the horizon, with the "
            "closest pair of clusters at its start and the quadrature log T for that pair",
        ),
        "containment.csv": (
            containment(config.containment, dt, seed),
            "first step with a token outside the 2ε-cap of its centre, beside the transcribed "
            "bound (ε/n) e^{(1 − α)β} (time units, log)",
        ),
        "energy.csv": (
            energy(config.energy, dt, delta, seed),
            "E_β and the cluster count at log-spaced steps of one run per β",
        ),
    }
    for name, (frame, what) in tables.items():
        write_table(frame, out / name, dict(meta, table=what))
