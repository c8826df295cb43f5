"""Checks of the collapse study ([FW] §5, the collapse proposition), from the tables only.

Claim: every SA_β step shrinks the diameter at least by the factor 1 − γc, c = e^(−2|β|R²)/n
(informative where c is not negligible, i.e. at small |β|; elsewhere 1 − γc rounds towards 1
and the check reduces to "the diameter does not grow"). Context: the looseness of the guaranteed
time and exponent, runs censored by the budget, and SA_P, which the proposition does not cover.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import Bound, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "[FW] §5, the collapse proposition"


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    summary, meta = read_table(out / "summary.csv")
    fits = read_table(out / "fits.csv")[0]
    R = float(meta["R"])
    flow = summary[summary["model"] == "SA_beta"].dropna(subset=["worst_factor"])
    tol, margin = float(config.contraction_roundoff), float(config.informative_margin)
    informative = int((1 - flow["guaranteed_factor"] > margin).sum())

    def contraction(speed: float) -> Bound:
        # the factor 1 − γc with c multiplied by ``speed``
        excess = float((flow["worst_factor"] / (1 - speed * (1 - flow["guaranteed_factor"]))).max())
        return Bound(
            f"largest (worst per-step factor)/(1 − {f'{speed:g} ' if speed != 1 else ''}γc) "
            f"over every step of {len(flow)} SA_β paths",
            excess,
            "≤",
            1 + tol,
            than="threshold (1 + `contraction_roundoff`)",
            tail=f"; 1 − γc < 1 − {margin:g} (`informative_margin`: informative) at "
            f"{informative} of them",
        )

    speed = config.power.contraction_speed
    rows = declare(
        contraction,
        1.0,
        speed,
        f"a contraction {speed:g} times as fast: c = {speed:g} e^(−2|β|R²)/n",
        criterion="per_step_contraction",
        role="claim",
        statement="diam(X^(t+1)) ≤ (1 − γc) diam(X^t) for SA_β, c = e^(−2|β|R²)/n",
        source=SOURCE,
    )
    seen = summary[np.isfinite(summary["log10_bound_over_median"])]
    if len(seen):
        rows.append(
            check(
                "time_looseness",
                "context",
                "the guaranteed collapse time log(ratio)/log(1 − γc) against the measured median",
                measured=float(seen["log10_bound_over_median"].min()),
                low=float(seen["log10_bound_over_median"].min()),
                high=float(seen["log10_bound_over_median"].max()),
                rule="log10(bound / measured median), range over the β where collapse was observed",
                source=SOURCE,
            )
        )
    for _, f in fits.iterrows():
        rows.append(
            check(
                f"exponent_{f['model']}",
                "context",
                "the exponent of β in the guaranteed collapse time, 2R², against the measured one",
                measured=float(f["slope"]),
                threshold=2 * R * R,
                rule=f"slope of log(median T) on β = {f['beta_min']:g}…{f['beta_max']:g} "
                "(measured) "
                "against 2R²",
                source=SOURCE if f["model"] == "SA_beta" else "this study",
            )
        )
    censored = summary[~np.isfinite(summary["median"])]
    rows.append(
        check(
            "censored",
            "context",
            "collapse observed within the step budget",
            measured=float(len(censored)),
            threshold=float(len(summary)),
            rule="(model, β) whose median collapse time exceeds the budget (not tested there)",
            source="this study",
        )
    )
    return checks_frame(rows)
