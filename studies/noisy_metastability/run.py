"""Escape times of the noisy (USA) transformer on S^{d−1} from its metastable states against N
(docs: models#noisy-sphere), simulated with :class:`metastab.NoisySphere` and
:func:`metastab.first_passage`, fitted as log E[T] = a + bN (:func:`metastab.stats.fit_scaling`).

Two directions, each at one coupling fixed from the theory (:mod:`metastab.theory.noisy`):

- ``forward``: K = K_c + position (K_# − K_c), N i.i.d. uniform tokens, the event
  LeaveUniform(level); the barrier is ΔF(K, β) (:func:`~metastab.theory.free_energy_barrier`);
- ``reverse``: K = K_c − position (K_c − K_fold), all tokens at one point, the event
  ReachUniform(level); the barrier is ΔF(K, β) − (F_K(cluster) − F_K(uniform)).

Per (direction, N) the chains run to the first of ``levels``; each chain that met it is then
continued from its state at that moment to the next level with a stream of its own (the
process is Markov, so the sum is a sample of the time to the next level), and its total is
censored at ``max_steps`` like the first. Tables: ``chains.parquet`` (one row per chain and
level), ``theory.parquet`` (the couplings and barriers), ``fits.parquet`` (the fits, with
profile-likelihood and bootstrap intervals), ``costs.parquet`` (steps and seconds).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import stats
from metastab.engine import first_passage
from metastab.events import LeaveUniform, ReachUniform
from metastab.models.sphere import NoisySphere
from metastab.results import read_table, write_table
from metastab.setups.sphere import sphere_uniform
from metastab.studies.measurement import quiet
from metastab.studies.runner import study_meta
from metastab.theory.noisy import (
    critical_coupling,
    critical_coupling_linear,
    fold_coupling,
    free_energy_barrier,
    stationary_branch,
)

from .config import Config, Direction

DIRECTIONS = ("forward", "reverse")
FORMS = ("plain", "orbit", "power")


def orbit_exponent(direction: str, d: int) -> float:
    """The stated prefactor E[T] ∝ N^c e^{N ΔF}: the saddles form an O(d)-orbit of dimension
    d − 1 (a cluster's direction is free), and in the Eyring–Kramers formula each orbit
    direction replaces a Gaussian integral of width N^{−1/2} by the orbit's length, so the rate
    gains N^{(d−1)/2}: c = −(d − 1)/2 from the uniform state (a point), 0 from a cluster (an
    orbit of the same dimension as the saddles')."""
    return -(d - 1) / 2 if direction == "forward" else 0.0


def theory(config: Config) -> pd.DataFrame:
    """Per direction: K, K_#, K_c, K_fold, the barrier, and what the scheme's and the finite N's
    shifts of K make of it."""
    beta, d, dt = float(config.beta), int(config.d), float(config.dt)
    k_sharp, k_c = critical_coupling_linear(beta, d), critical_coupling(beta, d)
    k_fold = fold_coupling(beta, d)
    branch = stationary_branch(beta, d)
    rows = []
    for name in DIRECTIONS:
        spec: Direction = getattr(config, name)
        pos = float(spec.position)
        K = k_c + pos * (k_sharp - k_c) if name == "forward" else k_c - pos * (k_c - k_fold)
        saddle = free_energy_barrier(K, beta, d)
        cluster = _cluster(branch, K)
        # first order in dt: the noise is weaker by 1 − (d + 2) dt (the scheme's one-step law),
        # the drift by 1 − (d − 1) dt (the renormalisation divides by ‖y‖ ≈ 1 + (d − 1) dt):
        # the free energy of the scheme's invariant law is F at K times their ratio
        k_dt = K * (1 - (d - 1) * dt) / (1 - (d + 2) * dt)
        shifted = free_energy_barrier(min(k_dt, k_sharp), beta, d) - (
            0.0 if name == "forward" else _cluster(branch, k_dt)[1]
        )
        rows.append(
            {
                "direction": name,
                "K": K,
                "k_sharp": k_sharp,
                "k_c": k_c,
                "k_fold": k_fold,
                "saddle_free_energy": saddle,
                "cluster_free_energy": cluster[1],
                "cluster_order": cluster[0],
                "saddle_order": _saddle_order(branch, K),
                "barrier": saddle - (0.0 if name == "forward" else cluster[1]),
                "barrier_dt": shifted,
                "k_dt": k_dt,
            }
        )
    return pd.DataFrame(rows)


def _cluster(branch, K: float) -> tuple[float, float]:
    """(m, F_K(ρ) − F_K(1)) of the clustered (index-0) stationary state at coupling K."""
    from scipy.optimize import brentq

    m_fold = float(branch.order[branch.fold])
    top = float(branch.order[-1])
    m = brentq(lambda t: branch.solve(t)[0] - K, m_fold, top, xtol=1e-14)
    return m, branch.point(m)[1]


def _saddle_order(branch, K: float) -> float:
    """m of the saddle (index-1) stationary state at coupling K."""
    from scipy.optimize import brentq

    m_fold = float(branch.order[branch.fold])
    return brentq(lambda t: branch.solve(t)[0] - K, 1e-6, m_fold, xtol=1e-14)


def escapes(config: Config, name: str, K: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per chain, N and level of one direction: steps to the level (the sum over the
    continued legs), censored at ``max_steps``; and per (N, level) the leg's cost (process
    seconds on this machine, steps taken by all chains)."""
    spec: Direction = getattr(config, name)
    d, budget = int(config.d), int(config.max_steps)
    model = NoisySphere(float(config.beta), K, float(config.dt))
    event = LeaveUniform if name == "forward" else ReachUniform
    rows, costs = [], []
    for j, (n, chains) in enumerate(zip(spec.ns, spec.chains)):
        n, chains = int(n), int(chains)
        root = np.random.SeedSequence(int(config.seed), spawn_key=(DIRECTIONS.index(name), j))
        start, *legs = root.spawn(1 + len(spec.levels))
        if name == "forward":
            x = sphere_uniform(n, d, chains=chains, rng=start)
        else:
            x = np.zeros((chains, n, d))
            x[..., 0] = 1.0
        total = np.zeros(chains, dtype=np.int64)
        alive = np.ones(chains, dtype=bool)
        for k, level in enumerate(spec.levels):
            idx = np.flatnonzero(alive)
            tic, steps = time.process_time(), 0
            if idx.size:
                fp = first_passage(model, x[idx], event(float(level)), max_steps=budget,
                                   rng=legs[k], progress=False)  # fmt: skip
                steps = int(fp.times.sum())
                total[idx] += fp.times
                x[idx] = fp.final
                alive[idx] = ~fp.censored & (total[idx] <= budget)
            costs.append(
                {"direction": name, "n": n, "level": float(level), "chains": int(idx.size),
                 "steps": steps, "seconds": time.process_time() - tic}
            )  # fmt: skip
            rows.append(
                pd.DataFrame(
                    {
                        "direction": name,
                        "n": n,
                        "level": float(level),
                        "chain": np.arange(chains),
                        "steps": np.where(alive, total, budget),
                        "censored": ~alive,
                        "max_steps": budget,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True), pd.DataFrame(costs)


def fit(frame: pd.DataFrame, form: str, direction: str, d: int):
    """The fit of one form: ``plain`` log E[T] = a + bN (geometric law); ``orbit`` with the
    stated prefactor N^c, c = :func:`orbit_exponent` (T/N^c is exponential with mean e^{a + bN}:
    the exponential law on the scaled times); ``power`` with c fitted."""
    used = frame[["n", "steps", "censored", "max_steps"]]
    if form == "orbit":
        c = orbit_exponent(direction, d)
        used = pd.DataFrame(
            {"n": used["n"], "steps": used["steps"] / used["n"] ** c, "censored": used["censored"]}
        )
        return quiet(stats.fit_scaling, used, x="n", law="exponential")
    return quiet(stats.fit_scaling, used, x="n", prefactor=form == "power")


def fits(chains: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Per (direction, level, form, first N): b, a (and c) with their profile intervals; for
    the main level's plain and orbit fits over every N also the bootstrap interval of b."""
    d, tol = int(config.d), config.checks
    rows = []
    for i, name in enumerate(DIRECTIONS):
        spec: Direction = getattr(config, name)
        starts = [int(spec.ns[0])] + ([int(s) for s in tol.fit_starts] if i == 0 else [])
        for k, level in enumerate(spec.levels):
            frame = chains[(chains["direction"] == name) & np.isclose(chains["level"], level)]
            for start in starts:
                used = frame[frame["n"] >= start]
                if used["n"].nunique() < 3:
                    continue
                for f, form in enumerate(FORMS):
                    if form != "plain" and start != starts[0]:
                        continue
                    if form == "orbit" and orbit_exponent(name, d) == 0:
                        continue  # the plain form
                    if form == "power" and used["n"].nunique() < 4:
                        continue
                    result, notes = fit(used, form, name, d)
                    low, high = result.confidence_interval("slope", float(tol.confidence))
                    boot = (np.nan, np.nan)
                    resamples = 0
                    if k == 0 and start == starts[0] and form != "power":
                        resamples = int(tol.n_bootstrap)
                        gen = np.random.default_rng([int(tol.stats_seed), i, f])
                        groups = [g for _, g in used.groupby("n")]
                        slopes = np.empty(resamples)
                        for r in range(resamples):
                            sample = pd.concat(
                                [g.iloc[gen.integers(0, len(g), len(g))] for g in groups]
                            )
                            slopes[r] = fit(sample, form, name, d)[0].slope
                        q = (1 - float(tol.confidence)) / 2
                        boot = tuple(np.quantile(slopes, [q, 1 - q]))
                    rows.append(
                        {
                            "direction": name,
                            "level": float(level),
                            "form": form,
                            "n_start": start,
                            "ns": int(used["n"].nunique()),
                            "chains": len(used),
                            "b": result.slope,
                            "b_low": low,
                            "b_high": high,
                            "b_boot_low": boot[0],
                            "b_boot_high": boot[1],
                            "n_bootstrap": resamples,
                            "a": result.intercept,
                            "c": result.prefactor if form == "power" else (
                                orbit_exponent(name, d) if form == "orbit" else 0.0
                            ),
                            "c_low": result.confidence_interval("prefactor")[0]
                            if form == "power" else np.nan,
                            "c_high": result.confidence_interval("prefactor")[1]
                            if form == "power" else np.nan,
                            "deviance": result.deviance,
                            "df": result.df,
                            "notes": "; ".join(notes),
                        }
                    )  # fmt: skip
    return pd.DataFrame(rows)


def analyse(out: Path, config: Config) -> None:
    """The fits of the simulated escapes: ``fits.parquet`` (:func:`fits`) from
    ``chains.parquet``, with the run's provenance."""
    chains, meta = read_table(Path(out) / "chains.parquet")
    write_table(
        fits(chains, config),
        Path(out) / "fits.parquet",
        dict(meta, table="per (direction, level, form, first N): log E[T] = a + bN (+ c log N) "
             "with 95 % profile-likelihood intervals, and bootstrap intervals of b"),
    )  # fmt: skip


def run(config: Config, out: Path) -> None:
    """Simulate: both directions' escapes, the theory and the costs; three tables (the fits:
    :func:`analyse`)."""
    out = Path(out)
    th = theory(config)
    runs = [escapes(config, name, float(th.loc[i, "K"])) for i, name in enumerate(DIRECTIONS)]
    chains = pd.concat([r[0] for r in runs], ignore_index=True)
    costs = pd.concat([r[1] for r in runs], ignore_index=True)
    meta = dict(
        study_meta("noisy-metastability", config),
        statement="E[T] ≈ C(N) e^(N ΔF) for the escape from a metastable state of the noisy "
        "(USA) transformer, ΔF the mean-field free-energy barrier per token",
        seeds="(direction, N index j): SeedSequence(seed, spawn_key=(direction, j)) spawned "
        "into the starts' seed and one noise seed per level (leg)",
    )
    write_table(
        th,
        out / "theory.parquet",
        dict(meta, table="per direction: K, K_#, K_c, K_fold, free energies (per token, "
             "relative to the uniform state) of the saddle and the cluster, the barrier, and "
             "the barrier at K (1 − (d − 1) dt)/(1 − (d + 2) dt) (the scheme's first-order shift)"),
    )  # fmt: skip
    write_table(
        chains,
        out / "chains.parquet",
        dict(meta, table="per (direction, N, level, chain): steps to the level (censored at "
             "max_steps)"),
    )  # fmt: skip
    write_table(
        costs,
        out / "costs.parquet",
        dict(meta, table="per (direction, N, level): the chains continued to the level, the "
             "steps they took and the process seconds (1 numba thread unless stated in the "
             "provenance; the machine shared)"),
    )  # fmt: skip
