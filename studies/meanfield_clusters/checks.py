"""Checks of the meanfield-clusters study (Bruno, Pasqualotto, Agazzi), from its table only.

Claim: (USA) on the circle from uniform starts forms k* = argmax_k k² I_k(β) clusters. Read at the
largest N and the reading time ``claim_multiple`` × t_form fixed in the configuration, the count
of each β is the mean over starts with its Student-t interval; the claim passes when at every β
that interval reaches within ½ of k*, i.e. the data do not put the count significantly nearer
another integer (``resolution`` = ½: k* is told from k* ± 1). Correction: the same with k* ± 1
allowed (``within_one`` = 3/2), the resolution the old median test had. Controls: the intervals
are narrow enough to tell neighbouring counts apart (half-width < ½ at every β), and the circle's
decomposition agrees with the kernel's count. Context: the count at each β, its direction from
k*, the deviation at each N, and the claim at the other reading times and cluster sizes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from metastab.results import read_table
from metastab.studies.compare import PASS_IF, PASS_IF_EQUAL, Bound, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "Bruno, Pasqualotto, Agazzi arXiv 2410.23228 (docs: models#sphere-statements (6))"


def summary(out: Path, fraction: float, multiple: float, level: float) -> pd.DataFrame:
    """Per (β, N): k*, the mean count over starts (clusters with >= fraction·N tokens) at the
    multiple of t_form with its Student-t interval at ``level`` (``low``, ``high``), the median
    and the range (``least``, ``most``)."""
    frame = read_table(Path(out) / "counts.csv")[0]
    col = f"count_{fraction:g}"
    at = frame[frame["multiple"] == multiple]
    rows = []
    for (beta, n), g in at.groupby(["beta", "tokens"]):
        x = g[col].to_numpy(float)
        mean, half = x.mean(), 0.0
        if len(x) > 1:
            half = stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        rows.append(
            {
                "beta": beta,
                "tokens": n,
                "k_star": int(g["k_star"].iloc[0]),
                "mean": mean,
                "low": mean - half,
                "high": mean + half,
                "median": float(np.median(x)),
                "least": int(x.min()),
                "most": int(x.max()),
                "starts": len(x),
            }
        )
    return pd.DataFrame(rows)


def misses(table: pd.DataFrame, shift: int = 0) -> pd.Series:
    """Per β at the largest N: how far the interval of the mean count lies from k* + shift
    (0 when it contains it)."""
    top = table[table["tokens"] == table["tokens"].max()].set_index("beta")
    target = top["k_star"] + shift
    return np.maximum(0.0, np.maximum(top["low"] - target, target - top["high"]))


def passes(table: pd.DataFrame, tolerance: float, shift: int = 0) -> bool:
    """The claim's rule: at every β the interval reaches within ``tolerance`` of k* + shift
    (strictly: an interval ending exactly half-way between two counts settles neither)."""
    return bool((misses(table, shift) < tolerance).all())


def _counts(table: pd.DataFrame) -> str:
    top = table[table["tokens"] == table["tokens"].max()]
    return ", ".join(
        f"β = {r.beta:g}: {r.mean:.2f} [{r.low:.2f}, {r.high:.2f}] (k* = {r.k_star})"
        for r in top.itertuples()
    )


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    fraction, multiple = float(config.min_fraction), float(config.claim_multiple)
    level = float(config.confidence_level)
    res, wide = float(config.resolution), float(config.within_one)
    table = summary(out, fraction, multiple, level)
    n_max = int(table["tokens"].max())
    top = table[table["tokens"] == n_max]
    where = (
        f"at N = {n_max}, t = {multiple:g} t_form (clusters: δ-components with ≥ {fraction:g} N "
        f"tokens), mean count over {int(top['starts'].min())} starts with its {level:g} "
        "Student-t interval"
    )

    def shifted(shifts: list[int]) -> str:
        return " or ".join(f"k* {'+−'[s < 0]} {abs(s)}" if s else "k*" for s in shifts)

    def k_star(shifts: list[int], claim: bool = True) -> Bound:
        # the prediction k* + s for the closest of ``shifts``: passes if any of them does (the
        # rule of ``passes``: every β within the tolerance of one shift)
        return Bound(
            f"{where}; measured: the largest distance over β of the interval from "
            f"{shifted(shifts)}" + (", the closer of them" if len(shifts) > 1 else ""),
            min(float(misses(table, s).max()) for s in shifts),
            "<",
            res if claim else wide,
            than="threshold",
            tail=" (`resolution`: the count is not significantly nearer another integer); "
            f"counts: {_counts(table)}"
            if claim
            else " (`within_one`)",
            template=PASS_IF,
        )

    wrong, far = config.power.k_shifts, config.power.within_one_shifts
    rows = declare(
        k_star,
        [0],
        wrong,
        f"{shifted(wrong)} (a neighbouring Fourier mode; the check must reject each)",
        criterion="k_star",
        role="claim",
        statement="(USA) on the circle from uniform starts forms k* = argmax_k k² I_k(β) clusters",
        source=SOURCE,
    )
    rows += declare(
        lambda shifts: k_star(shifts, claim=False),
        [0],
        far,
        f"{shifted(far)}, within ±1 (the check must reject each)",
        criterion="k_star/within_one",
        role="correction",
        statement="the same with k* ± 1 clusters allowed",
        source="this study",
    )
    half = float(((top["high"] - top["low"]) / 2).max())
    rows.append(
        Bound(
            f"largest half-width over β of the interval of the mean count at N = {n_max}",
            half,
            "<",
            res,
            than="threshold (`resolution`)",
            template=PASS_IF,
        ).row(
            "neighbours_resolved",
            "control",
            "the intervals tell neighbouring counts apart: the claim's test can reject k* ± 1",
            source="this study",
        )
    )
    frame = read_table(out / "counts.csv")[0]
    mismatch = int((frame["count_0"] != frame["kernel_count"]).sum())
    rows.append(
        Bound(
            f"configurations (of {len(frame)}) where the two counts differ",
            float(mismatch),
            "=",
            0.0,
            template=PASS_IF_EQUAL,
        ).row(
            "decomposition_matches_kernel",
            "control",
            "the circle's cluster decomposition counts the kernel's δ-components",
            source="this study",
        )
    )
    below = int((top["high"] < top["k_star"]).sum())
    above = int((top["low"] > top["k_star"]).sum())
    rows.append(
        check(
            "direction",
            "context",
            "where the count misses k*: below or above",
            measured=float((top["mean"] - top["k_star"]).mean()),
            low=float((top["mean"] - top["k_star"]).min()),
            high=float((top["mean"] - top["k_star"]).max()),
            rule=f"mean over β of (mean count − k*) at N = {n_max} (interval: min and max over "
            f"β); the interval lies below k* at {below} of {len(top)} β and above it at {above}",
            source="this study",
        )
    )
    for r in top.itertuples():
        rows.append(
            check(
                f"count_beta_{r.beta:g}",
                "context",
                f"cluster count at β = {r.beta:g}, N = {n_max}",
                measured=r.mean,
                low=r.low,
                high=r.high,
                threshold=r.k_star,
                rule=f"mean ({level:g} interval) over {r.starts} starts; median {r.median:g}, "
                f"range {r.least}–{r.most}; threshold column: k*",
                source=SOURCE,
            )
        )
    for n, g in table.groupby("tokens"):
        rows.append(
            check(
                f"deviation_N_{n}",
                "context",
                f"how far the counts are from k* at N = {n}",
                measured=float((g["mean"] - g["k_star"]).abs().mean()),
                low=float((g["mean"] - g["k_star"]).min()),
                high=float((g["mean"] - g["k_star"]).max()),
                rule="mean over β of |mean count − k*|; interval: min and max of mean − k*",
                source="this study",
            )
        )
    return checks_frame(rows)
