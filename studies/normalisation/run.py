"""The speed of each normalisation scheme of Karagodin, Ge, Polyanskiy, Rigollet (*Normalization
in attention dynamics*, arXiv 2510.22026; docs: models#sphere-schemes), measured with
:class:`metastab.SphereFlow` (``scheme=``), Q = K = V = I, softmax.

- ``initial.csv`` (§4.1): from the orthogonal start x_i(0) = e_i in R^n, the cosine of tokens 0
  and 1 after one layer of a small dt, (γ(dt) − γ(0)) / dt, beside the paper's
  γ̇(0) = (1/s_j + 1/s_k) / (e^β + n − 1) with each scheme's speed factor at t = 0 (r = 1,
  |A_i| = √(e^{2β} + n − 1) / (e^β + n − 1)).
- ``collapse.csv`` (§4.3): from one cluster (n tokens near e_1), the variance
  Var(t) = (1/n) Σ_i |θ_i − θ̄|² of the directions θ_i = x_i / |x_i| and the mean radius, on a
  grid of times.
- ``plateaus.csv`` and ``path.csv``: the GKPR plateaus of each scheme from prepared caps, their
  lengths in layers and in the intrinsic time σ = ∫ dt / s measured along the run
  (:mod:`.plateaus`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.engine import simulate
from metastab.models.sphere import SphereFlow
from metastab.results import write_table
from metastab.studies.runner import study_meta

from .config import Config
from .plateaus import plateaus


def model(config: Config, scheme: str, beta: float, dt: float) -> SphereFlow:
    """The scheme's SphereFlow with the study's α (nGPT) and τ (Mix-LN)."""
    extra: dict = {"ngpt": {"alpha": config.alpha}, "mix-ln": {"tau": config.tau}}
    return SphereFlow(beta, dt, scheme=scheme, **extra.get(scheme, {}))


def speed_factor(scheme: str, beta: float, n: int, alpha: float) -> float:
    """s_i at the orthogonal start, t = 0, r_i = 1 ([KGPR] Table 2)."""
    norm = math.sqrt(math.exp(2 * beta) + n - 1) / (math.exp(beta) + n - 1)  # |A_i|
    return {"peri-ln": norm, "ngpt": norm / alpha}.get(scheme, 1.0)


def initial(config: Config) -> pd.DataFrame:
    """One row per (scheme, n, β): the measured and the predicted γ̇(0)."""
    rows = []
    dt = float(config.initial.dt)
    for scheme in config.schemes:
        for n in config.initial.ns:
            for beta in config.initial.betas:
                x = simulate(model(config, scheme, beta, dt), np.eye(n), steps=1).final[0]
                cosine = float(x[0] @ x[1] / (np.linalg.norm(x[0]) * np.linalg.norm(x[1])))
                s = speed_factor(scheme, beta, n, config.alpha)
                rows.append(
                    {
                        "scheme": scheme,
                        "n": n,
                        "beta": beta,
                        "slope": cosine / dt,
                        "speed_factor": s,
                        "predicted": (2 / s) / (math.exp(beta) + n - 1),
                    }
                )
    return pd.DataFrame(rows)


def collapse(config: Config) -> pd.DataFrame:
    """One row per (scheme, t): Var(t) of the directions and the mean radius."""
    c = config.collapse
    gen = np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(1,)))
    x0 = np.eye(c.d)[0] + c.spread * gen.normal(size=(c.n, c.d))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    every = round(c.grid / c.dt)
    steps = every * round(c.t_max / c.grid)
    rows = []
    for scheme in config.schemes:
        run = simulate(model(config, scheme, c.beta, c.dt), x0, steps=steps, record_every=every)
        assert run.trajectory is not None  # a recorded run
        for k, x in enumerate(run.trajectory[0]):
            r = np.linalg.norm(x, axis=1)
            theta = x / r[:, None]
            var = float(np.mean(np.sum((theta - theta.mean(axis=0)) ** 2, axis=1)))
            rows.append({"scheme": scheme, "t": k * every * c.dt, "var": var, "radius": r.mean()})
    return pd.DataFrame(rows)


def run(config: Config, out: Path) -> None:
    """The four tables, with provenance."""
    meta = study_meta("normalisation", config)
    write_table(
        initial(config),
        Path(out) / "initial.csv",
        dict(meta, table="γ̇(0) from the orthogonal start: measured slope after one layer, and "
             "the paper's (2/s)/(e^β + n − 1) with the scheme's speed factor s at t = 0"),
    )  # fmt: skip
    write_table(
        collapse(config),
        Path(out) / "collapse.csv",
        dict(meta, table="variance of the directions and mean radius of one cluster against t"),
    )
    plateau, path = plateaus(config, lambda scheme, beta, dt: model(config, scheme, beta, dt))
    write_table(
        plateau,
        Path(out) / "plateaus.csv",
        dict(meta, table="every plateau (k >= 2 clusters) of each scheme from the same prepared "
             "caps: first and last step (censored at the horizon) and the intrinsic time σ = "
             "∫ (1/n) Σ_i dt / s_i there"),
    )  # fmt: skip
    write_table(
        path,
        Path(out) / "path.csv",
        dict(meta, table="σ, dσ/dt = (1/n) Σ_i 1/s_i, max_i s_i / min_i s_i and E_β at the kept "
             "steps of each scheme and start"),
    )  # fmt: skip
