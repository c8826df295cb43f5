"""Mean-field clustering of (USA) on the circle (Bruno, Pasqualotto, Agazzi, arXiv 2410.23228;
docs: models#sphere-statements (6)).

θ̇_i = (1/N) Σ_j e^{β cos(θ_i − θ_j)} sin(θ_j − θ_i) from N i.i.d. uniform angles: the uniform
state is unstable, mode k grows at λ_k = k² I_k(β)/β (:func:`metastab.theory.
meanfield_growth_rates`), and the number of clusters formed is predicted to be
k* = argmax_k k² I_k(β) (:func:`metastab.theory.meanfield_clusters`).

Measured with :class:`metastab.SphereFlow` (``attention="unnormalized"``, post-LN at a step
dt = dt_growth / λ*) on d = 2: the configuration at t = multiple × t_form, t_form = log N / (2λ*),
decomposed into its clusters (components of the δ-graph, with their sizes); the kernel's own count
(:func:`metastab.track`) of the same configurations is kept beside it as a check of the
decomposition.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import theory
from metastab.engine import simulate, track
from metastab.models.sphere import SphereFlow
from metastab.results import write_table
from metastab.studies.circle import circle_clusters, on_circle
from metastab.studies.measurement import beta_scan
from metastab.studies.runner import study_meta

from .config import Config


def schedule(beta: float, n: int, dt_growth: float, multiples) -> tuple[float, float, list]:
    """dt, t_form and the recording steps of the multiples of t_form (rounded up)."""
    rate = float(theory.meanfield_growth_rates(beta, theory.meanfield_clusters(beta) + 1).max())
    dt = dt_growth / rate
    t_form = math.log(n) / (2 * rate)
    return dt, t_form, [int(math.ceil(m * t_form / dt)) for m in multiples]


def counts(config: Config) -> pd.DataFrame:
    """One row per (β, N, chain, multiple): cluster sizes at that time, as counts."""
    seed, delta = int(config.seed), float(config.delta)
    fractions = [float(f) for f in config.min_fractions]

    def at(beta: float, ib: int) -> pd.DataFrame:
        k_star = theory.meanfield_clusters(beta)
        rows = []
        for iN, n in enumerate(config.tokens):
            n, chains = int(n), int(config.chains)
            dt, t_form, at = schedule(beta, n, float(config.dt_growth), config.multiples)
            gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(ib, iN)))
            x0 = on_circle(gen.uniform(0, 2 * math.pi, size=(chains, n)))
            model = SphereFlow(beta, dt, attention="unnormalized")
            run = simulate(model, x0, steps=max(at), record_at=at)
            assert run.trajectory is not None  # a recorded run
            for c in range(chains):
                for r, (multiple, step) in enumerate(zip(config.multiples, at)):
                    x = run.trajectory[c, r]
                    sizes = circle_clusters(x, delta)[1]
                    kernel = track(model, x, steps=1, delta=delta).observables_frame()
                    row = {
                        "beta": beta,
                        "tokens": n,
                        "chain": c,
                        "multiple": float(multiple),
                        "step": step,
                        "time": step * dt,
                        "t_form": t_form,
                        "dt": dt,
                        "k_star": k_star,
                        "kernel_count": int(kernel["clusters"].iloc[0]),
                        "largest": int(sizes.max()),
                    }
                    for f in fractions:
                        row[f"count_{f:g}"] = int((sizes >= f * n).sum())
                    rows.append(row)
        return pd.DataFrame(rows)

    return beta_scan(config.betas, at)


def run(config: Config, out: Path) -> None:
    """The cluster counts against β, N and time, with provenance."""
    write_table(
        counts(config),
        Path(out) / "counts.csv",
        dict(
            study_meta("meanfield-clusters", config),
            table="clusters of (USA) on the circle from uniform starts at t = multiple × t_form: "
            "count_F = components of the δ-graph holding >= F N tokens; kernel_count = the "
            "kernel's count of the same configuration (all components)",
        ),
    )
