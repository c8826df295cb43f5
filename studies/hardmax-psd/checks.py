"""Checks of the hardmax-psd study ([FW] thm. exp.fast.polytope and the hardmax ODE), from the
tables only.

Claims: the straight-line law x_i^t − v_σ(i) = Π_{τ<t}(1 − γ^τ)(x_i^0 − v_σ(i)) to roundoff,
convergence into the own vertex for every schedule (the printed "at least exponential"), the
ODE's first-order Euler error, and Gaussian vertices owning their cells as d grows. Correction:
with inf_τ γ^τ > 0 (every schedule but 2^(−τ−1)) the tokens do reach their vertex.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from metastab.results import read_table
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "[FW] thm. exp.fast.polytope"


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    lines, meta = read_table(out / "lines.csv")
    floor = float(config["lines"]["floor"])
    roundoff = float(config["roundoff"])
    summary = _line_summary(lines, floor)
    ode = read_table(out / "ode.csv")[0]
    gauss = read_table(out / "gaussian.csv")[0]
    worst = float(summary["vector_error"].max())
    rows = [
        check(
            "straight_line_law",
            "claim",
            "x_i^t − v_σ(i) = Π_{τ<t}(1 − γ^τ)(x_i^0 − v_σ(i)); the vertices never move",
            measured=worst,
            threshold=roundoff,
            rule="largest |x^t − v − Π(x^0 − v)|/|x^0 − v| over every polytope, schedule, token "
            "and step ≤ threshold (`roundoff`)",
            passed=worst <= roundoff,
            source=SOURCE,
        )
    ]
    halving = summary["schedule"].str.startswith("γ^τ = 2")
    stuck = float(summary.loc[halving, "measured"].max()) if halving.any() else np.nan
    rows.append(
        check(
            "converges_every_schedule",
            "claim",
            "the tokens converge into their vertex at least exponentially "
            "(as printed: any schedule)",
            measured=stuck,
            threshold=floor,
            rule="distance ratio |x^t − v|/|x^0 − v| at the last step with γ^τ = 2^(−τ−1) ≤ the "
            "comparison floor",
            passed=None if not halving.any() else stuck <= floor,
            source=SOURCE,
        )
    )
    rest = float(summary.loc[~halving, "vector_error_resolved"].max())
    rows.append(
        check(
            "converges_every_schedule/inf_gamma_positive",
            "correction",
            "with inf_τ γ^τ > 0 the distance follows Π_{τ<t}(1 − γ^τ) ≤ (1 − inf γ)^t → 0: "
            "convergence at least exponential",
            measured=rest,
            threshold=roundoff,
            rule="largest |x^t − v − Π(x^0 − v)|/|x^0 − v| over the schedules with inf γ^τ > 0, "
            "while Π ≥ the comparison floor, ≤ threshold (`roundoff`)",
            passed=rest <= roundoff,
            source="this study",
        )
    )
    last = ode.sort_values("dt").iloc[0]
    gap = abs(float(last["first_order_constant"]) - 1 / (2 * np.e))
    order = stats.linregress(np.log(ode["dt"]), np.log(ode["max_error"])).slope
    rows.append(
        check(
            "ode_euler_error",
            "claim",
            "x_i(t) = e^{−t} x_i^0 + (1 − e^{−t}) v_σ(i); hardmax with γ = Δt is its Euler scheme",
            measured=gap,
            threshold=float(last["dt"]),
            rule=f"|max error/Δt − 1/(2e)| at the smallest Δt = {last['dt']:g} ≤ Δt (Euler: "
            f"error/Δt = 1/(2e) + O(Δt)); fitted order {order:.3f}",
            passed=gap <= float(last["dt"]),
            source="[FW] thm. ode",
        )
    )
    limit = float(config["gaussian_miss"])
    top = gauss.loc[gauss.groupby("k")["d"].idxmax()]
    miss = top["polytopes_not_all_owning"] / top["draws"]
    falls = all(
        (g.sort_values("d")["theory_vertex_owning"].diff().dropna() >= 0).all()
        for _, g in gauss.groupby("k")
    )
    rows.append(
        check(
            "gaussian_own_cells",
            "claim",
            "k i.i.d. Gaussian vertices all own their cells with probability → 1 as d → ∞",
            measured=float(miss.max()),
            threshold=limit,
            rule="largest fraction of polytopes with a vertex not owning its cell at the largest d "
            "of each k ≤ threshold (config `gaussian_miss`), and the exact P[v_a owns] "
            "non-decreasing in d",
            passed=bool(miss.max() <= limit and falls),
            source=SOURCE,
        )
    )
    return checks_frame(rows)


def _line_summary(lines: pd.DataFrame, floor: float) -> pd.DataFrame:
    """Per polytope and schedule: worst deviations and the final measured vs predicted ratio."""
    rows = []
    for (poly, name), g in lines.groupby(["polytope", "schedule"], sort=False):
        ok = g["product"] >= floor
        rel = np.maximum(
            np.abs(g["ratio_max"][ok] / g["product"][ok] - 1),
            np.abs(g["ratio_min"][ok] / g["product"][ok] - 1),
        )
        last = g.iloc[-1]
        rows.append(
            {
                "polytope": poly,
                "d": int(last["d"]),
                "schedule": name,
                "t": int(last["step"]),
                "measured": last["ratio_max"],
                "predicted": last["product"],
                "rate_error": rel.max(),
                "vector_error": g["vector_error"].max(),
                "vector_error_resolved": g["vector_error"][ok].max(),
                "vertex_moved": g["vertex_displacement"].max(),
            }
        )
    return pd.DataFrame(rows)
