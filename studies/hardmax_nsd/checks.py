"""Checks of the hardmax-nsd study ([FW] §3, the Frank-Wolfe rate theorem), from the tables only.

The claim is the printed O(1/t) bound on J(x_i^t) − min_{K^0} J with γ^t = 2/(t+2), tested on the
counterexample with the classical Frank-Wolfe constant 2 L D_0² (no constant can hold there: the
gap stays 1/18). The bound with the current hull's minimum, the collapse, the limits away from
the origin and the symmetric law are context: the first bounds another quantity and does not
give the conclusion (convergence to the minimiser over K^0), so it is not a correction.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import Bound, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "[FW] §3, the Frank-Wolfe rate theorem"
FW = "γ^t = 2/(t+2)"


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    cx, cmeta = read_table(out / "counterexample.csv")
    draws = read_table(out / "random_draws.csv")[0]
    tol = float(config.random.limit_tolerance)
    last = cx.iloc[-1]
    C = 2 * cmeta["L"] * cmeta["D0"] ** 2
    gap = float(last["J2"] - last["J_min_K0"])
    pw = config.power

    def printed(factor: float) -> Bound:
        return Bound(
            "counterexample d = 1, B_* = 1, x^0 = (3, −1): token 2's gap at t = "
            f"{int(last['step'])}",
            gap,
            "≤",
            factor * C / (float(last["step"]) + 2),
            than=f"{f'{factor:g} × ' if factor != 1 else ''}2LD_0²/(t + 2)",
            tail=f" (the classical Frank-Wolfe constant, 2LD_0² = {C:g}); a gap that stays at "
            "1/18 exceeds C/(t + 2) for every C once t > 18C − 2",
        )

    rows = declare(
        printed,
        1.0,
        pw.bound_factor,
        f"the bound with {pw.bound_factor:g} times the classical constant",
        criterion="printed_bound",
        role="claim",
        statement="J(x_i^t) − min_{K^0} J = O(1/t) for γ^t = 2/(t+2) "
        "(the Frank-Wolfe rate theorem)",
        source=SOURCE,
    )
    h = cx[cx["step"] >= 1]
    ratio = float(((h["J1"] - h["J_min_Kt"]) / h["fw_constant_bound"]).max())
    fw = draws[draws["schedule"] == FW]
    worst = max(ratio, float(fw["corrected_ratio"].max()))
    rows.append(
        check(
            "current_hull_bound",
            "context",
            "h_t = J(x_i^t) − min_{K^t} J ≤ 2LD_0²/(t + 2), the minimum over the current hull",
            measured=worst,
            threshold=1.0,
            rule=f"largest h_t (t + 2)/(2LD_0²) over the counterexample and {len(fw)} random draws "
            f"({'≤' if worst <= 1 else '>'} 1); another quantity than the claim's, so it does "
            "not count as a correction",
            source="this study",
        )
    )
    away = draws.groupby(["case", "schedule"], sort=False)["centroid_norm"].agg(
        lambda v: float((v > tol).mean())
    )
    rows.append(
        check(
            "limit_at_origin",
            "context",
            "the tokens converge to the minimiser of J over K^0 (the origin here)",
            measured=float(away.min()),
            low=float(away.min()),
            high=float(away.max()),
            rule=f"fraction of random draws whose limit lies farther than {tol:g} from the origin, "
            "smallest and largest over (case, schedule)",
            source=SOURCE,
        )
    )

    def collapse(fraction: float) -> Bound:
        return Bound(
            f"largest final diameter{f' − {fraction:g} D_0 (absolute)' if fraction else ''} "
            f"over {len(draws)} random draws",
            float((draws["diameter"] - fraction * draws["D0"]).abs().max()),
            "≤",
            tol,
            than="threshold",
        )

    rows += declare(
        collapse,
        0.0,
        pw.collapse_fraction,
        f"no clustering: the diameter stays at {pw.collapse_fraction:g} × the initial one D_0",
        criterion="collapse",
        role="claim",
        statement="the tokens cluster: the diameter of the configuration tends to 0",
        source=SOURCE,
    )
    return checks_frame(rows)
