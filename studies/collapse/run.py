"""Collapse to one point ([FW] §5, the collapse proposition), measured for SA_β and SA_P against β.

The proposition: for every β, SA_β contracts all tokens to one point of the initial hull, and
with all |x_j| <= R every step shrinks the diameter at least by the factor 1 − γc,
c = e^{−|β|R²} / (n e^{|β|R²}) (:func:`metastab.theory.collapse_rate`). So the collapse time
T = first t with diam(X^t) <= ratio · diam(X^0) is at most log(ratio) / log(1 − γc).

Measured here, from one start (vertex tokens on the vertices, the others uniform in K):

- T for SA_β (one deterministic path per β) and for SA_P (``chains`` chains per β, censored at
  ``max_steps``), with :func:`metastab.first_passage` and the event Collapse;
- for SA_β, the diameter at every step (up to ``record_cap`` steps): the largest per-step factor
  diam(X^{t+1}) / diam(X^t), against the guaranteed 1 − γc;
- the diameter against time for a few β (curves).

Negative β: the scores β<B x_i, x_j> with β < 0 equal |β|<−B x_i, x_j>, so β < 0 runs as |β| with
B = −I (the models take β >= 0).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial.distance import pdist

from metastab import stats, theory
from metastab.engine import first_passage, simulate
from metastab.events import Collapse
from metastab.models import SoftmaxChain, SoftmaxFlow
from metastab.registry import polytope_from_dict
from metastab.results import provenance, read_table, write_table
from metastab.setups.initial import in_cells
from metastab.studies.measurement import beta_scan, quantile_band, recorded

from .config import Config, Curves


def model(kind: str, beta: float, gamma: float, d: int):
    """SA_β or SA_P at signed β: β < 0 is |β| with B = −I."""
    cls = SoftmaxFlow if kind == "SA_beta" else SoftmaxChain
    return cls(beta=abs(beta), gamma=gamma, B=-np.eye(d) if beta < 0 else None)


def diameters(paths: np.ndarray) -> np.ndarray:
    """diam(X) for every configuration in paths (... × n × d)."""
    flat = paths.reshape(-1, *paths.shape[-2:])
    return np.array([pdist(x).max() for x in flat]).reshape(paths.shape[:-2])


def collapse_times(kind, betas, chains, max_steps, x0, gamma, ratio, seed) -> pd.DataFrame:
    """First step with diam <= ratio · diam(X^0), per β and chain (censored at max_steps)."""
    event = Collapse(ratio * pdist(x0).max())

    def at(beta: float, ib: int) -> pd.DataFrame:
        fp = first_passage(
            model(kind, beta, gamma, x0.shape[1]),
            x0,
            event,
            max_steps=max_steps,
            chains=chains,
            rng=np.random.SeedSequence(seed, spawn_key=(1, ib)),
        )
        return pd.DataFrame(
            {
                "model": kind,
                "beta": beta,
                "chain": np.arange(chains),
                "steps": fp.times,
                "censored": fp.censored,
                "max_steps": max_steps,
            }
        )

    return beta_scan(betas, at)


def per_step_factor(beta, steps, x0, gamma) -> tuple[float, int]:
    """Largest diam(X^{t+1}) / diam(X^t) over the first ``steps`` steps of SA_β, and the step
    where it occurs (the proposition guarantees <= 1 − γc at every step)."""
    run = simulate(model("SA_beta", beta, gamma, x0.shape[1]), x0, steps=steps, record_every=1)
    assert run.trajectory is not None  # a recorded run
    diam = diameters(run.trajectory[0])
    factor = diam[1:] / diam[:-1]
    t = int(np.argmax(factor))
    return float(factor[t]), t


def curves(cfg: Curves, x0, gamma, seed) -> pd.DataFrame:
    """Diameter against time: SA_β path and SA_P median / 10–90% over chains."""
    steps, every, fine = int(cfg.steps), int(cfg.record_every), int(cfg.fine)

    def at(beta: float, ib: int) -> Iterator[pd.DataFrame]:
        for kind, chains in (("SA_beta", 1), ("SA_P", int(cfg.chains))):
            times, paths = recorded(
                model(kind, beta, gamma, x0.shape[1]),
                x0,
                steps,
                every,
                fine,
                chains,
                np.random.SeedSequence(seed, spawn_key=(2, ib)),
            )
            yield quantile_band(diameters(paths), kind, beta, times, chains)

    return beta_scan(cfg.betas, at)


def summarise(times, x0, gamma, ratio, record_cap) -> pd.DataFrame:
    """Per model and β: median collapse time (Kaplan–Meier) and its 10–90% range, the bound's
    steps log(ratio)/log(1 − γc), and for SA_β the worst per-step factor against 1 − γc."""
    n, R = x0.shape[0], float(np.linalg.norm(x0, axis=1).max())
    rows = []
    for (kind, beta), g in times.groupby(["model", "beta"], sort=True):
        rate = theory.collapse_rate(beta, radius=R, n=n, gamma=gamma)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.DiagnosticWarning)
            km = stats.survival(g["steps"], g["censored"])
        q10, q90 = (_km_quantile(km, p) for p in (0.1, 0.9))
        row = {
            "model": kind,
            "beta": beta,
            "chains": len(g),
            "censored": int(g["censored"].sum()),
            "max_steps": int(g["max_steps"].iloc[0]),
            "median": km.median,
            "q10": q10,
            "q90": q90,
            "log10_bound_steps": rate.log_steps(ratio) / math.log(10),
            "log10_c": rate.log_c / math.log(10),
            "guaranteed_factor": rate.factor,
        }
        row["log10_bound_over_median"] = (
            row["log10_bound_steps"] - math.log10(row["median"])
            if np.isfinite(row["median"]) and row["median"] > 0
            else np.nan
        )
        if kind == "SA_beta":
            steps = int(min(g["steps"].iloc[0], record_cap))
            row["worst_factor"], row["worst_step"] = per_step_factor(beta, max(steps, 1), x0, gamma)
            row["checked_steps"] = steps
        rows.append(row)
    return pd.DataFrame(rows)


def _km_quantile(km, p: float) -> float:
    """First time with Ŝ(t) <= 1 − p (inf when the curve stays above)."""
    below = np.flatnonzero(km.probability <= 1 - p)
    return float(km.time[below[0]]) if below.size else math.inf


def fit_exponent(summary: pd.DataFrame) -> pd.DataFrame:
    """Least-squares slope of log(median T) against β over β > 0 with T observed, upper half of
    those β (the exponential regime), per model; beside the bound's slope 2R²."""
    rows = []
    for kind, g in summary.groupby("model"):
        ok = g[(g["beta"] > 0) & np.isfinite(g["median"]) & (g["censored"] < g["chains"] / 2)]
        ok = ok[ok["beta"] >= ok["beta"].median()]
        if len(ok) >= 2:
            slope, intercept = np.polyfit(ok["beta"], np.log(ok["median"]), 1)
            rows.append(
                {
                    "model": kind,
                    "slope": slope,
                    "intercept": intercept,
                    "beta_min": ok["beta"].min(),
                    "beta_max": ok["beta"].max(),
                }
            )
    return pd.DataFrame(rows)


def analyse(out: Path, config: Config) -> None:
    """The fits of the simulated tables: ``fits.csv`` (:func:`fit_exponent`) from
    ``summary.csv``, with the run's provenance."""
    summary, meta = read_table(Path(out) / "summary.csv")
    write_table(
        fit_exponent(summary),
        Path(out) / "fits.csv",
        dict(
            meta,
            table="slope of log median collapse time against beta (upper half "
            "of the observed beta > 0); the bound's slope is 2 R^2",
        ),
    )


def run(config: Config, out: Path) -> None:
    """Simulate: collapse times of SA_β and SA_P, the per-step check, curves and summaries
    (the fits: :func:`analyse`)."""
    out = Path(out)
    seed, gamma, ratio = int(config.seed), float(config.gamma), float(config.ratio)
    P = polytope_from_dict(config.polytope)
    x0 = in_cells(P, int(config.tokens), rng=np.random.SeedSequence(seed, spawn_key=(9,)))
    R = float(np.linalg.norm(x0, axis=1).max())
    meta = {
        "study": "collapse",
        "config": config.to_dict(),
        "provenance": provenance(),
        "polytope": P.to_dict(),
        "x0": x0.tolist(),
        "R": R,
        "n": len(x0),
        "diameter0": float(pdist(x0).max()),
        "seeds": "SeedSequence(seed, spawn_key=(part, beta index))",
        "statement": "[FW] §5, the collapse proposition: diam shrinks by >= (1 - gamma c) "
        "per step, c = exp(-2|beta| R^2)/n",
    }
    flow, chain = config.flow, config.chain
    times = pd.concat(
        [
            collapse_times("SA_beta", flow.betas, 1, int(flow.max_steps), x0, gamma, ratio, seed),
            collapse_times(
                "SA_P",
                chain.betas,
                int(chain.chains),
                int(chain.max_steps),
                x0,
                gamma,
                ratio,
                seed,
            ),
        ],
        ignore_index=True,
    )
    write_table(
        times,
        out / "collapse_times.csv",
        dict(meta, table="first step with diam <= ratio * diam(X^0), per chain"),
    )
    summary = summarise(times, x0, gamma, ratio, int(flow.record_cap))
    write_table(
        summary,
        out / "summary.csv",
        dict(
            meta,
            table="per model and beta: median collapse time, the bound's steps, "
            "SA_beta worst per-step diameter factor against 1 - gamma c",
        ),
    )
    write_table(
        curves(config.curves, x0, gamma, seed),
        out / "diameters.parquet",
        dict(meta, table="diameter against time: SA_beta path, SA_P quantiles"),
    )
