"""Checks of the noisy-metastability study, from ``theory.parquet``, ``chains.parquet`` and
``fits.parquet`` only.

The statement (the large-deviation reading of [MR-d]'s free energy; :mod:`metastab.theory.noisy`):
the N-token Gibbs measure is ∝ exp(N K ∫∫ W_β dμ_N dμ_N), so the empirical measure has the
large-deviation rate N (F_K(μ) − min F_K) and the mean time to leave a local minimiser grows
like e^{N ΔF}, ΔF the free energy per token of the saddle above the minimiser's: from the
uniform state (K_c < K < K_#) ΔF(K, β) of :func:`~metastab.theory.free_energy_barrier`, from
the cluster (K_fold < K < K_c) ΔF(K, β) − (F_K(cluster) − F_K(uniform)).

Claims: the fitted b of log E[T] = a + bN has an interval that contains the barrier, forward
and reverse (power: a barrier ``barrier_factor`` times as large). Correction (forward): the
same with the stated prefactor N^{−(d−1)/2} (:func:`run.orbit_exponent`). Controls: the second
event level does not move b beyond the first level's interval; every N has ``min_exits``
uncensored exits. Context: b with a fitted power of N, b from larger N only, the barrier at the
scheme's shifted K, the coefficient of variation of the exit times.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import stats
from metastab.results import read_table
from metastab.studies.compare import Bound, Contains, Inside, declare
from metastab.studies.measurement import quiet
from metastab.studies.verdict import check, checks_frame

from .config import Config, Direction
from .run import DIRECTIONS, orbit_exponent

SOURCE = (
    "the free energy F_K of Mun, Rosenzweig (arXiv 2606.05140), read through the N-token "
    "large deviations (metastab.theory.noisy; no paper states or measures the time)"
)
WHAT = {"forward": "the uniform state", "reverse": "the cluster"}


def load(out: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(theory, chains, fits) of ``out``."""
    out = Path(out)
    return tuple(read_table(out / f"{t}.parquet")[0] for t in ("theory", "chains", "fits"))


def select(fits: pd.DataFrame, direction: str, level: float, form: str, start: int) -> pd.Series:
    """The one fit row of (direction, level, form, first N)."""
    g = fits[
        (fits["direction"] == direction)
        & np.isclose(fits["level"], level)
        & (fits["form"] == form)
        & (fits["n_start"] == start)
    ]
    if len(g) != 1:
        raise ValueError(f"no single fit for {direction}, {level}, {form}, N >= {start}")
    return g.iloc[0]


def interval(row: pd.Series) -> tuple[float, float]:
    """The wider of the profile-likelihood and the bootstrap interval of b (the profile alone
    where there is no bootstrap)."""
    lo, hi = float(row["b_low"]), float(row["b_high"])
    if row["n_bootstrap"] > 0:
        lo, hi = min(lo, float(row["b_boot_low"])), max(hi, float(row["b_boot_high"]))
    return lo, hi


def miss(value: float, low: float, high: float) -> float:
    """How far ``value`` lies outside [low, high], relative to ``value`` (0 inside)."""
    return max(low - value, value - high, 0.0) / abs(value)


def exits(chains: pd.DataFrame) -> pd.DataFrame:
    """Per (direction, level, N): chains, uncensored exits, the mean and the coefficient of
    variation of the exit times (in steps; the uncensored ones)."""
    g = chains.groupby(["direction", "level", "n"], sort=False)
    table = g.agg(chains=("chain", "size"), censored=("censored", "sum")).reset_index()
    table["exits"] = table["chains"] - table["censored"]
    done = chains[~chains["censored"]].groupby(["direction", "level", "n"], sort=False)["steps"]
    cv = (done.std(ddof=1) / done.mean()).rename("cv").reset_index()
    return table.merge(cv, on=["direction", "level", "n"], how="left")


def barrier_interval(row: pd.Series, barrier: float) -> Contains:
    """The check that the 95 % interval of the fitted exponent b of ``row`` contains
    ``barrier``."""
    lo, hi = interval(row)
    off = miss(barrier, lo, hi)
    return Contains(
        f"the 95 % interval of b (the wider of profile likelihood and bootstrap, N = "
        f"{int(row['n_start'])} on, {int(row['ns'])} N)",
        float(row["b"]),
        lo,
        hi,
        barrier,
        than=f"{barrier:.5g}",
        tail=f"; b / that = {row['b'] / barrier:.3f}"
        + ("" if off == 0 else f"; it lies {off:.1%} of itself outside the interval")
        + f"; deviance {row['deviance']:.3g} on {int(row['df'])} df",
    )


def _barrier_statement(row: pd.Series, label: str, form: str) -> str:
    return (
        f"E[T] from {label} grows like {form}e^(N ΔF): the exponent b of log E[T] = a + bN"
        + (f" + c log N (c = {row['c']:g})" if form else "")
        + " is the barrier ΔF"
    )


def direction_rows(name: str, th: pd.Series, chains, fits, config: Config) -> list[dict]:
    """The rows of one direction."""
    spec: Direction = getattr(config, name)
    tol, d = config.checks, int(config.d)
    first, other = float(spec.levels[0]), float(spec.levels[-1])
    start = int(spec.ns[0])
    barrier = float(th["barrier"])
    factor = float(config.power.barrier_factor)
    tag = "" if name == "forward" else "reverse_"
    label = WHAT[name]
    main = select(fits, name, first, "plain", start)
    out: list[dict] = []

    wrong = f"a barrier {factor:g} times as large"
    source = f"{SOURCE}; metastab.theory.noisy.free_energy_barrier"
    out += declare(
        lambda b: barrier_interval(main, b),
        barrier,
        factor * barrier,
        wrong,
        criterion=f"{tag}barrier",
        role="claim",
        statement=_barrier_statement(main, label, ""),
        source=source,
    )
    if name == "forward":
        orbit = select(fits, name, first, "orbit", start)
        power_c = f"N^{orbit_exponent(name, d):g} "
        out += declare(
            lambda b: barrier_interval(orbit, b),
            barrier,
            factor * barrier,
            wrong,
            criterion="barrier/orbit",
            role="correction",
            statement=_barrier_statement(orbit, label, power_c),
            source=source,
        )
    lo, hi = interval(main)
    second = select(fits, name, other, "plain", start)
    moved = float(second["b"])
    level = Inside(
        f"b at level {other:g}",
        moved,
        lo,
        hi,
        threshold=float(main["b"]),
        spec=".5g",
        template="{what} must lie inside b's interval at level "
        + f"{first:g}, "
        + "{open}{low}, {high}{close}{tail}",
    )
    level = replace(
        level, tail=f": it is {moved:.5g}, " + ("inside" if level.passed else "outside")
    )
    out.append(
        level.row(
            f"{tag}level",
            "control",
            f"the event level does not move the fitted b beyond its interval ({label}: level "
            f"{first:g} against {other:g})",
            source="this study",
        )
    )
    ex = exits(chains)
    ex = ex[ex["direction"] == name]
    fewest = ex.loc[ex["exits"].idxmin()]
    enough = Bound(
        "fewest uncensored exits over N and levels",
        float(fewest["exits"]),
        "≥",
        float(tol.min_exits),
        than=f"{int(tol.min_exits)}",
        tail=f" (N = {int(fewest['n'])}, level {fewest['level']:g}); censored in all: "
        f"{int(ex['censored'].sum())} of {int(ex['chains'].sum())}",
    )
    out.append(
        enough.row(
            f"{tag}exits",
            "control",
            f"every N has enough uncensored exits from {label} (each level)",
            source="this study",
        )
    )
    wide = fits[(fits["direction"] == name) & (fits["form"] == "power")]
    wide = wide[np.isclose(wide["level"], first)]
    if len(wide):
        w = wide.iloc[0]
        out.append(
            check(
                f"{tag}free_prefactor",
                "context",
                f"b with a fitted prefactor N^c ({label})",
                measured=float(w["b"]),
                low=float(w["b_low"]),
                high=float(w["b_high"]),
                rule=f"b (profile interval); c = {w['c']:.3g} [{w['c_low']:.3g}, "
                f"{w['c_high']:.3g}]; the barrier {barrier:.5g} is "
                + ("inside" if w["b_low"] <= barrier <= w["b_high"] else "outside"),
                source="this study",
            )
        )
    later = fits[
        (fits["direction"] == name) & (fits["form"] == "plain") & (fits["n_start"] > start)
    ]
    for r in later[np.isclose(later["level"], first)].itertuples():
        out.append(
            check(
                f"{tag}from_n{r.n_start}",
                "context",
                f"b from N ≥ {r.n_start} only ({label})",
                measured=float(r.b),
                low=float(r.b_low),
                high=float(r.b_high),
                rule=f"b / ΔF = {r.b / barrier:.3f} (profile interval, {r.ns} N); the barrier "
                + ("inside" if r.b_low <= barrier <= r.b_high else "outside"),
                source="this study",
            )
        )
    shifted = float(th["barrier_dt"])
    out.append(
        check(
            f"{tag}scheme_shift",
            "context",
            f"the barrier at the scheme's first-order coupling K (1 − (d − 1) dt)/(1 − (d + 2) dt) "
            f"= {th['k_dt'] / th['K']:.5f} K ({label})",
            measured=shifted,
            low=lo,
            high=hi,
            rule=f"ΔF there / ΔF at K = {shifted / barrier:.3f}; "
            + ("inside" if lo <= shifted <= hi else "outside")
            + " b's interval",
            source="this study (the scheme's one-step law)",
        )
    )
    main_ex = ex[np.isclose(ex["level"], first)]
    out.append(
        check(
            f"{tag}memoryless",
            "context",
            f"the coefficient of variation of the exit times from {label} per N (1 for an "
            "exponential law, which the geometric likelihood assumes)",
            measured=float(main_ex["cv"].iloc[-1]),
            low=float(main_ex["cv"].min()),
            high=float(main_ex["cv"].max()),
            rule="; ".join(f"N = {r.n}: {r.cv:.3f}" for r in main_ex.itertuples()),
            source="this study",
        )
    )
    return out


def rows(theory: pd.DataFrame, chains: pd.DataFrame, fits: pd.DataFrame, config: Config):
    """The checks rows, both directions."""
    out: list[dict] = []
    for name in DIRECTIONS:
        th = theory[theory["direction"] == name]
        if len(th) and (chains["direction"] == name).any():
            if (fits["direction"] == name).any():
                out += direction_rows(name, th.iloc[0], chains, fits, config)
    return out


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    return checks_frame(rows(*load(out), config))


def level_fit(chains: pd.DataFrame, fits_row: pd.Series):
    """The plain fit log E[T] = a + bN of the chains of one fits row (its direction, level and
    first N), as :class:`metastab.stats.ScalingFit`."""
    g = chains[
        (chains["direction"] == fits_row["direction"])
        & np.isclose(chains["level"], fits_row["level"])
        & (chains["n"] >= fits_row["n_start"])
    ]
    return quiet(stats.fit_scaling, g[["n", "steps", "censored", "max_steps"]], x="n")[0]


def mean_times(chains: pd.DataFrame, fits_row: pd.Series, dt: float) -> pd.DataFrame:
    """Per N of one fits row: E[T] in time units with its exact 95 % interval (the censored
    geometric law per N, the per-N table of :func:`metastab.stats.fit_scaling`)."""
    per = level_fit(chains, fits_row).per_beta
    return pd.DataFrame(
        {
            "n": per["n"].astype(int),
            "chains": per["chains"],
            "exits": per["events"],
            "mean": per["mean"] * dt,
            "mean_low": per["mean_low"] * dt,
            "mean_high": per["mean_high"] * dt,
        }
    )
