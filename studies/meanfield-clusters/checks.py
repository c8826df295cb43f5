"""Checks of the meanfield-clusters study (Bruno, Pasqualotto, Agazzi), from its table only.

Claim: (USA) on the circle from uniform starts forms k* = argmax_k k² I_k(β) clusters; read at
the largest N and t = claim_multiple × t_form, the median count over starts must be within
``count_tolerance`` of k* at every β. Controls: the same test must reject k* + ``wrong_shift``;
the circle's decomposition must agree with the kernel's count. Context: the count at each β,
and the deviation from k* at each N.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from metastab.results import read_table
from metastab.studies.verdict import check, checks_frame, powered

from .config import Config

SOURCE = "Bruno, Pasqualotto, Agazzi arXiv 2410.23228 (docs: models#sphere-statements (6))"


def medians(out: Path, fraction: float, multiple: float) -> pd.DataFrame:
    """Per (β, N): k*, the median count (clusters with >= fraction·N tokens) at the multiple of
    t_form, and its range over starts."""
    frame = read_table(Path(out) / "counts.csv")[0]
    col = f"count_{fraction:g}"
    at = frame[frame["multiple"] == multiple]
    g = at.groupby(["beta", "tokens"])
    return pd.DataFrame(
        {
            "k_star": g["k_star"].first(),
            "median": g[col].median(),
            "low": g[col].min(),
            "high": g[col].max(),
            "starts": g[col].size(),
        }
    ).reset_index()


def deviation(table: pd.DataFrame, shift: int = 0) -> float:
    """max over β of |median − (k* + shift)| at the largest N."""
    top = table[table["tokens"] == table["tokens"].max()]
    return float((top["median"] - top["k_star"] - shift).abs().max())


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    fraction, multiple = float(config["min_fraction"]), float(config["claim_multiple"])
    tol, shift = int(config["count_tolerance"]), int(config["wrong_shift"])
    table = medians(out, fraction, multiple)
    n_max = int(table["tokens"].max())

    def k_star(shifts: list[int]) -> dict:
        # the prediction k* + s, for the closest of ``shifts``
        dev = min(deviation(table, s) for s in shifts)
        what = " or ".join(f"k* {'+−'[s < 0]} {abs(s)}" if s else "k*" for s in shifts)
        return check(
            "k_star",
            "claim",
            "(USA) on the circle from uniform starts forms k* = argmax_k k² I_k(β) clusters",
            measured=dev,
            threshold=tol,
            rule=f"max over β of |median count − {what}| at N = {n_max}, t = {multiple:g} "
            f"t_form (clusters: δ-components with ≥ {fraction:g} N tokens)"
            + (", the closer of the two" if len(shifts) > 1 else "")
            + "; pass if ≤ threshold (`count_tolerance`)",
            passed=dev <= tol,
            source=SOURCE,
        )

    wrong = config.power.k_shifts
    rows = powered(
        k_star,
        [0],
        wrong,
        " and ".join(f"k* {'+−'[s < 0]} {abs(s)}" for s in wrong)
        + " (a neighbouring Fourier mode; the check must reject each)",
    )
    rows += [
        check(
            "wrong_prediction_rejected",
            "control",
            f"the same test rejects the prediction k* + {shift}",
            measured=deviation(table, shift),
            threshold=tol,
            rule=f"max over β of |median count − (k* + {shift})| at N = {n_max}; pass if > "
            "threshold",
            passed=deviation(table, shift) > tol,
            source="this study",
        ),
    ]
    frame = read_table(out / "counts.csv")[0]
    mismatch = int((frame["count_0"] != frame["kernel_count"]).sum())
    rows.append(
        check(
            "decomposition_matches_kernel",
            "control",
            "the circle's cluster decomposition counts the kernel's δ-components",
            measured=float(mismatch),
            threshold=0.0,
            rule=f"configurations (of {len(frame)}) where the two counts differ; pass if 0",
            passed=mismatch == 0,
            source="this study",
        )
    )
    top = table[table["tokens"] == n_max]
    for _, r in top.iterrows():
        rows.append(
            check(
                f"count_beta_{r['beta']:g}",
                "context",
                f"cluster count at β = {r['beta']:g}, N = {n_max}",
                measured=r["median"],
                low=r["low"],
                high=r["high"],
                threshold=r["k_star"],
                rule=f"median (range) over {int(r['starts'])} starts; threshold column: k*",
                source=SOURCE,
            )
        )
    for n, g in table.groupby("tokens"):
        rows.append(
            check(
                f"deviation_N_{n}",
                "context",
                f"how far the counts are from k* at N = {n}",
                measured=float((g["median"] - g["k_star"]).abs().mean()),
                low=float((g["median"] - g["k_star"]).min()),
                high=float((g["median"] - g["k_star"]).max()),
                rule="mean over β of |median − k*|; interval: min and max of median − k*",
                source="this study",
            )
        )
    return checks_frame(rows)
