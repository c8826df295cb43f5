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

from pathlib import Path

import numpy as np
import pandas as pd

from metastab import stats
from metastab.results import read_table
from metastab.studies.measurement import quiet
from metastab.studies.verdict import check, checks_frame, powered

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


def _barrier_check(
    criterion: str, role: str, row: pd.Series, barrier: float, label: str, form: str
) -> dict:
    lo, hi = interval(row)
    off = miss(barrier, lo, hi)
    return check(
        criterion,
        role,
        f"E[T] from {label} grows like {form}e^(N ΔF): the exponent b of log E[T] = a + bN"
        + (f" + c log N (c = {row['c']:g})" if form else "")
        + " is the barrier ΔF",
        measured=float(row["b"]),
        low=lo,
        high=hi,
        threshold=barrier,
        rule=f"the 95 % interval of b (the wider of profile likelihood and bootstrap, N = "
        f"{int(row['n_start'])} on, {int(row['ns'])} N) contains {barrier:.5g}; b / that = "
        f"{row['b'] / barrier:.3f}"
        + ("" if off == 0 else f"; it lies {off:.1%} of itself outside the interval")
        + f"; deviance {row['deviance']:.3g} on {int(row['df'])} df",
        passed=off == 0,
        source=f"{SOURCE}; metastab.theory.noisy.free_energy_barrier",
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

    def plain(b: float) -> dict:
        return _barrier_check(f"{tag}barrier", "claim", main, b, label, "")

    out += powered(plain, barrier, factor * barrier, f"a barrier {factor:g} times as large")
    if name == "forward":
        orbit = select(fits, name, first, "orbit", start)
        power_c = f"N^{orbit_exponent(name, d):g} "

        def corrected(b: float) -> dict:
            return _barrier_check("barrier/orbit", "correction", orbit, b, label, power_c)

        out += powered(corrected, barrier, factor * barrier, f"a barrier {factor:g} times as large")
    lo, hi = interval(main)
    second = select(fits, name, other, "plain", start)
    moved = float(second["b"])
    out.append(
        check(
            f"{tag}level",
            "control",
            f"the event level does not move the fitted b beyond its interval ({label}: level "
            f"{first:g} against {other:g})",
            measured=moved,
            low=lo,
            high=hi,
            threshold=float(main["b"]),
            rule=f"b at level {other:g} must lie inside b's interval at level {first:g}, "
            f"[{lo:.5g}, {hi:.5g}]: it is {moved:.5g}, "
            + ("inside" if lo <= moved <= hi else "outside"),
            passed=lo <= moved <= hi,
            source="this study",
        )
    )
    ex = exits(chains)
    ex = ex[ex["direction"] == name]
    fewest = ex.loc[ex["exits"].idxmin()]
    out.append(
        check(
            f"{tag}exits",
            "control",
            f"every N has enough uncensored exits from {label} (each level)",
            measured=float(fewest["exits"]),
            threshold=float(tol.min_exits),
            rule=f"fewest uncensored exits over N and levels ≥ {int(tol.min_exits)} (N = "
            f"{int(fewest['n'])}, level {fewest['level']:g}); censored in all: "
            f"{int(ex['censored'].sum())} of {int(ex['chains'].sum())}",
            passed=bool(ex["exits"].min() >= int(tol.min_exits)),
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
