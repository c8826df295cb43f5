"""The first spherical-harmonic modes of the noisy (USA) transformer at the uniform state
(docs: models#noisy-meanfield), simulated with :class:`metastab.NoisySphere`.

N i.i.d. uniform tokens on S^{d−1}; the degree-ℓ amplitudes of their empirical measure,

    a_1 = N^{−1/2} Σ_i x_i,   A_2 = N^{−1/2} Σ_i (x_i x_iᵀ − I/d)

(the coordinates of the degree-1 and degree-2 harmonics: by Schur's lemma the Euclidean and
Frobenius inner products are those of L²(σ) up to a constant, which cancels in every ratio used),
are recorded every ``spacing`` up to ``t_max``. Per batch of chains and recorded time t_r the
tables keep the sums over chains of |a(t_r)|², <a(t_{r+1}), a(t_r)> (the lag pair of the rate
fit) and <a(t_r), a(0)> (the autocorrelation from the start), from which ``checks.py`` fits the
rates (``modes.parquet``). Three sets of runs: the grid K = factor · K_# for every d, a dt scan
at one K and an N scan at another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metastab.engine import simulate
from metastab.models.sphere import NoisySphere
from metastab.results import write_table
from metastab.setups.sphere import sphere_uniform
from metastab.studies.runner import study_meta
from metastab.theory.noisy import critical_coupling_linear

from .config import Config

SETS = ("grid", "dt", "n")


def amplitudes(paths: np.ndarray, degree: int) -> np.ndarray:
    """a_ℓ of every configuration in ``paths`` (chains × times × n × d), flattened to
    chains × times × components."""
    n, d = paths.shape[-2:]
    if degree == 1:
        a = paths.sum(axis=-2)
    else:
        a = np.einsum("...ik,...il->...kl", paths, paths) - (n / d) * np.eye(d)
    return a.reshape(*paths.shape[:2], -1) / np.sqrt(n)


def sums(paths: np.ndarray, degree: int) -> dict[str, np.ndarray]:
    """Per recorded time: the sums over chains of |a(t_r)|², <a(t_{r+1}), a(t_r)> (NaN at the
    last time) and <a(t_r), a(0)>."""
    a = amplitudes(paths, degree)
    lag = np.full(a.shape[1], np.nan)
    lag[:-1] = np.einsum("crk,crk->r", a[:, 1:], a[:, :-1])
    return {
        "s0": np.einsum("crk,crk->r", a, a),
        "lag": lag,
        "auto": np.einsum("crk,ck->r", a, a[:, 0]),
    }


def point(
    seed: int,
    key: tuple[int, ...],
    *,
    beta: float,
    d: int,
    factor: float,
    n: int,
    dt: float,
    t_max: float,
    spacing: float,
    chains: int,
    batch: int,
    degrees: list[int],
) -> list[dict]:
    """The rows of one (d, K, N, dt): chains in batches of ``batch``, batch b from its own
    seed (SeedSequence(seed, spawn_key=key + (b,)): starts and noise), so that a batch's numbers
    do not depend on how many others run."""
    k_sharp = critical_coupling_linear(beta, d)
    K = factor * k_sharp
    every = int(round(spacing / dt))
    steps = every * int(round(t_max / spacing))
    if not np.isclose(every * dt, spacing) or steps < 2 * every:
        raise ValueError(f"spacing = {spacing!r} must be a multiple of dt = {dt!r} below t_max")
    model = NoisySphere(beta, K, dt)
    rows = []
    for b in range(-(-chains // batch)):
        size = min(batch, chains - b * batch)
        root = np.random.SeedSequence(seed, spawn_key=(*key, b))
        start, noise = root.spawn(2)
        x0 = sphere_uniform(n, d, chains=size, rng=start)
        run = simulate(model, x0, steps=steps, rng=noise, record_every=every, progress=False)
        assert run.trajectory is not None and run.times is not None
        times = run.times * dt
        for degree in degrees:
            s = sums(run.trajectory, degree)
            for r, t in enumerate(times):
                rows.append(
                    {
                        "d": d,
                        "factor": factor,
                        "K": K,
                        "k_sharp": k_sharp,
                        "n": n,
                        "dt": dt,
                        "degree": degree,
                        "batch": b,
                        "chains": size,
                        "t": float(t),
                        **{name: float(v[r]) for name, v in s.items()},
                    }
                )
    return rows


def run(config: Config, out: Path) -> None:
    """The grid over (d, K), the dt scan and the N scan; one table."""
    out = Path(out)
    cfg, seed = config, int(config.seed)
    g, ds, ns = cfg.grid, cfg.dt_scan, cfg.n_scan
    common: dict[str, Any] = dict(
        beta=float(cfg.beta), t_max=float(g.t_max), spacing=float(g.spacing)
    )
    common |= dict(batch=int(g.batch), degrees=[int(x) for x in cfg.degrees])
    frames = []
    for i, d in enumerate(cfg.ds):
        for j, f in enumerate(g.factors):
            rows = point(
                seed, (0, i, j), d=int(d), factor=float(f), n=int(g.n), dt=float(g.dt),
                chains=int(g.chains), **common,
            )  # fmt: skip
            frames.append(pd.DataFrame(rows).assign(set="grid"))
    for j, dt in enumerate(ds.dts):
        rows = point(
            seed, (1, j), d=int(ds.d), factor=float(ds.factor), n=int(ds.n), dt=float(dt),
            chains=int(ds.chains), **common,
        )  # fmt: skip
        frames.append(pd.DataFrame(rows).assign(set="dt"))
    for j, n in enumerate(ns.ns):
        rows = point(
            seed, (2, j), d=int(ns.d), factor=float(ns.factor), n=int(n), dt=float(ns.dt),
            chains=int(ns.chains), **common,
        )  # fmt: skip
        frames.append(pd.DataFrame(rows).assign(set="n"))
    meta = dict(
        study_meta("noisy-linear", config),
        statement="[MR-d] linear rates λ_ℓ = ℓ(ℓ + d − 2)(2K Ŵ_ℓ − 1) at the uniform state",
        seeds="batch b of a point: SeedSequence(seed, spawn_key=(set, index..., b)) spawned "
        "into the starts' and the noise's seeds",
    )
    write_table(
        pd.concat(frames, ignore_index=True),
        out / "modes.parquet",
        dict(
            meta,
            table="per (set, d, K, N, dt, degree, batch, t): sums over the batch's chains of "
            "|a(t)|² (s0), <a(t + spacing), a(t)> (lag) and <a(t), a(0)> (auto), a the "
            "degree-ℓ amplitude N^(−1/2) Σ_i Y_ℓ(x_i)",
        ),
    )
