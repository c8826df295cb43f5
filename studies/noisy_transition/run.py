"""Quasi-static sweeps of the noisy (USA) transformer (:class:`metastab.NoisySphere`) in the
coupling K, up and down (docs: models#noisy-sphere).

Each sweep starts from N i.i.d. uniform tokens at the grid's lowest K = f_0 K_#(β); at every
grid K (up the grid, then down from its top, the top once) it runs ``equilibrate`` from the end
state of the previous K, then ``average`` more, recording the order parameters m_1, m_2
(:func:`metastab.order_parameters`) every ``spacing``; the table keeps, per sweep and K, their
means over the averaging time and the fraction of those records with m_1 >= ``level``
(``sweeps.parquet``). Three sets: the main sweeps (every β), the same twice as slow (some β)
and the same with fewer tokens (some β).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metastab.engine import simulate
from metastab.models.sphere import NoisySphere
from metastab.order import order_parameters
from metastab.results import write_table
from metastab.setups.sphere import sphere_uniform
from metastab.studies.runner import study_meta
from metastab.theory.noisy import critical_coupling_linear

from .config import Config

SETS = ("main", "slow", "size")


def schedule(factors: list[float]) -> list[tuple[str, float]]:
    """The sweep's (direction, K/K_#) stages: up the grid, then down from the one below its top.

    >>> schedule([0.9, 1.0, 1.1])
    [('up', 0.9), ('up', 1.0), ('up', 1.1), ('down', 1.0), ('down', 0.9)]
    """
    f = [float(x) for x in factors]
    if len(f) < 2 or any(b <= a for a, b in zip(f, f[1:])):
        raise ValueError(f"factors must increase strictly, at least two, got {factors!r}")
    return [("up", x) for x in f] + [("down", x) for x in reversed(f[:-1])]


def sweep(
    root: np.random.SeedSequence,
    *,
    beta: float,
    d: int,
    factors: list[float],
    n: int,
    dt: float,
    equilibrate: float,
    average: float,
    spacing: float,
    chains: int,
    level: float,
) -> list[dict]:
    """The rows of ``chains`` independent sweeps at one β: stage s runs all chains in one call,
    from the stream root ``root.spawn``'s s-th child (chain k's stream depends on it and k
    only), so the bits do not depend on the thread count."""
    every = int(round(spacing / dt))
    skip = int(round(equilibrate / dt))
    steps = skip + every * int(round(average / spacing))
    if not np.isclose(every * dt, spacing) or not np.isclose(skip * dt, equilibrate):
        raise ValueError(
            f"spacing = {spacing!r} and equilibrate = {equilibrate!r} must be multiples of "
            f"dt = {dt!r}"
        )
    k_sharp = critical_coupling_linear(beta, d)
    stages = schedule(factors)
    start, *noise = root.spawn(1 + len(stages))
    x = sphere_uniform(n, d, chains=chains, rng=start)
    record = list(range(skip + every, steps + 1, every))
    rows = []
    for s, ((direction, f), rng) in enumerate(zip(stages, noise)):
        model = NoisySphere(beta, f * k_sharp, dt)
        run = simulate(model, x, steps=steps, rng=rng, record_at=record, progress=False)
        assert run.trajectory is not None
        x = run.final
        m = order_parameters(run.trajectory.reshape(-1, n, d)).reshape(chains, len(record), 2)
        for c in range(chains):
            rows.append(
                {
                    "beta": beta,
                    "d": d,
                    "n": n,
                    "dt": dt,
                    "stage_time": equilibrate + average,
                    "chain": c,
                    "stage": s,
                    "direction": direction,
                    "factor": f,
                    "K": f * k_sharp,
                    "k_sharp": k_sharp,
                    "m1": float(m[c, :, 0].mean()),
                    "m2": float(m[c, :, 1].mean()),
                    "clustered": float((m[c, :, 0] >= level).mean()),
                }
            )
    return rows


def run(config: Config, out: Path) -> None:
    """The main sweeps at every β, the slow ones and the smaller-N ones; one table."""
    out = Path(out)
    cfg, seed = config, int(config.seed)
    sw = cfg.sweep
    base: dict[str, Any] = dict(
        d=int(cfg.d),
        factors=[float(f) for f in cfg.factors],
        n=int(sw.n),
        dt=float(sw.dt),
        equilibrate=float(sw.equilibrate),
        average=float(sw.average),
        spacing=float(sw.spacing),
        chains=int(sw.chains),
        level=float(cfg.level),
    )
    plans: list[tuple[str, float, dict[str, Any]]] = [("main", b, {}) for b in cfg.betas]
    slow = dict(
        equilibrate=float(cfg.slow.equilibrate),
        average=float(cfg.slow.average),
        chains=int(cfg.slow.chains),
    )
    plans += [("slow", b, slow) for b in cfg.slow.betas]
    size = dict(n=int(cfg.size.n), chains=int(cfg.size.chains))
    plans += [("size", b, size) for b in cfg.size.betas]
    frames = []
    for i, (name, beta, change) in enumerate(plans):
        root = np.random.SeedSequence(seed, spawn_key=(SETS.index(name), i))
        rows = sweep(root, beta=float(beta), **(base | change))
        frames.append(pd.DataFrame(rows).assign(set=name))
    meta = dict(
        study_meta("noisy-transition", config),
        statement="[MR-d] continuous transition at K_# for β ≤ β_*, first order (K_c < K_#, "
        "bistable on [K_fold, K_#]) above",
        seeds="sweep i: SeedSequence(seed, spawn_key=(set, i)) spawned into the starts' seed "
        "and one noise root per stage",
    )
    write_table(
        pd.concat(frames, ignore_index=True),
        out / "sweeps.parquet",
        dict(
            meta,
            table="per (set, β, chain, stage): the stage's direction and K, and the means over "
            "its averaging time of m_1, m_2 and of [m_1 >= level] (clustered)",
        ),
    )
