"""Checks of the hardmax-psd study ([FW] thm. exp.fast.polytope and the hardmax ODE), from the
tables only.

Claims: the straight-line law x_i^t − v_σ(i) = Π_{τ<t}(1 − γ^τ)(x_i^0 − v_σ(i)) to roundoff,
convergence into the own vertex for every schedule (the printed "at least exponential"), the
ODE's first-order Euler error, and Gaussian vertices owning their cells as d grows. Correction:
with inf_τ γ^τ > 0 (every schedule but 2^(−τ−1)) the tokens do reach their vertex.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from metastab.results import read_table
from metastab.studies.verdict import check, checks_frame, powered

from .config import Config

SOURCE = "[FW] thm. exp.fast.polytope"


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    lines, meta = read_table(out / "lines.csv")
    floor = float(config.lines.floor)
    roundoff = float(config.roundoff)
    summary = _line_summary(lines, floor)
    ode = read_table(out / "ode.csv")[0]
    gauss = read_table(out / "gaussian.csv")[0]
    pw = config.power
    late = "the product one step late, Π_{τ≤t} (1 − γ^τ) (an indexing slip)"

    def law(shift: int) -> dict:
        worst = _law_error(summary, lines, shift, None)
        return check(
            "straight_line_law",
            "claim",
            "x_i^t − v_σ(i) = Π_{τ<t}(1 − γ^τ)(x_i^0 − v_σ(i)); the vertices never move",
            measured=worst,
            threshold=roundoff,
            rule="largest |x^t − v − Π(x^0 − v)|/|x^0 − v| over every polytope, schedule, token "
            "and step ≤ threshold (`roundoff`)" + _LOWER * bool(shift),
            passed=worst <= roundoff,
            source=SOURCE,
        )

    rows = powered(law, 0, pw.law_shift, late)
    halving = summary["schedule"].str.startswith("γ^τ = 2")
    stuck = float(summary.loc[halving, "measured"].max()) if halving.any() else np.nan

    def converges(limit: float) -> dict:
        gap = abs(stuck - limit)
        return check(
            "converges_every_schedule",
            "claim",
            "the tokens converge into their vertex at least exponentially "
            "(as printed: any schedule)",
            measured=gap,
            threshold=floor,
            rule="distance ratio |x^t − v|/|x^0 − v| at the last step with γ^τ = 2^(−τ−1)"
            + (f", minus the predicted limit {limit:.6g}," if limit else "")
            + " ≤ the comparison floor",
            passed=None if not halving.any() else gap <= floor,
            source=SOURCE,
        )

    rows += powered(
        converges,
        0.0,
        float(np.exp(-1.0)),
        "the tokens stop at e^(−Σγ) = e^(−1) of the distance (Π(1 − γ) read as e^(−Σγ))",
    )

    def fixed(shift: int) -> dict:
        rest = _law_error(summary[~halving], lines, shift, floor)
        return check(
            "converges_every_schedule/inf_gamma_positive",
            "correction",
            "with inf_τ γ^τ > 0 the distance follows Π_{τ<t}(1 − γ^τ) ≤ (1 − inf γ)^t → 0: "
            "convergence at least exponential",
            measured=rest,
            threshold=roundoff,
            rule="largest |x^t − v − Π(x^0 − v)|/|x^0 − v| over the schedules with inf γ^τ > 0, "
            "while Π ≥ the comparison floor, ≤ threshold (`roundoff`)" + _LOWER * bool(shift),
            passed=rest <= roundoff,
            source="this study",
        )

    rows += powered(fixed, 0, pw.law_shift, late)
    last = ode.sort_values("dt").iloc[0]
    order = stats.linregress(np.log(ode["dt"]), np.log(ode["max_error"])).slope

    def euler(constant: float) -> dict:
        gap = abs(float(last["first_order_constant"]) - constant)
        written = "1/(2e)" if constant == 1 / (2 * math.e) else f"{constant:.6g}"
        return check(
            "ode_euler_error",
            "claim",
            "x_i(t) = e^{−t} x_i^0 + (1 − e^{−t}) v_σ(i); hardmax with γ = Δt is its Euler scheme",
            measured=gap,
            threshold=float(last["dt"]),
            rule=f"|max error/Δt − {written}| at the smallest Δt = {last['dt']:g} ≤ Δt "
            f"(Euler: error/Δt = 1/(2e) + O(Δt)); fitted order {order:.3f}",
            passed=gap <= float(last["dt"]),
            source="[FW] thm. ode",
        )

    rows += powered(
        euler,
        1 / (2 * math.e),
        (1 + pw.euler_constant_error) / (2 * math.e),
        f"the Euler error constant 1/(2e) off by {pw.euler_constant_error:.0%}",
    )
    limit = float(config.gaussian_miss)
    falls = all(
        (g.sort_values("d")["theory_vertex_owning"].diff().dropna() >= 0).all()
        for _, g in gauss.groupby("k")
    )

    def gaussian(d: float) -> dict:
        at = gauss[gauss["d"] <= d]
        top = at.loc[at.groupby("k")["d"].idxmax()]
        miss = top["polytopes_not_all_owning"] / top["draws"]
        return check(
            "gaussian_own_cells",
            "claim",
            "k i.i.d. Gaussian vertices all own their cells with probability → 1 as d → ∞",
            measured=float(miss.max()),
            threshold=limit,
            rule="largest fraction of polytopes with a vertex not owning its cell at the largest d "
            + (f"≤ {d:g} " if np.isfinite(d) else "")
            + "of each k ≤ threshold (config `gaussian_miss`), and the exact P[v_a owns] "
            "non-decreasing in d",
            passed=bool(miss.max() <= limit and falls),
            source=SOURCE,
        )

    rows += powered(
        gaussian,
        np.inf,
        pw.gaussian_d,
        f"the vertices own their cells already at d = {pw.gaussian_d:g}",
    )
    return checks_frame(rows)


_LOWER = " (the wrong product's error bounded below by ||x^t − v|/|x^0 − v| − Π'|)"


def _law_error(
    summary: pd.DataFrame, lines: pd.DataFrame, shift: int, floor: float | None
) -> float:
    """Largest error of the straight-line law over the schedules of ``summary``, with the
    product ``shift`` steps late: the stored vector error for ``shift = 0``; else
    ``||x^t − v|/|x^0 − v| − Π'|``, a lower bound of the vector error of Π' (the triangle
    inequality). ``floor``: only while Π ≥ floor (None: every step)."""
    if shift == 0:
        return float(summary["vector_error" if floor is None else "vector_error_resolved"].max())
    worst = 0.0
    for _, r in summary.iterrows():
        g = lines[(lines["polytope"] == r["polytope"]) & (lines["schedule"] == r["schedule"])]
        g = g.sort_values("step")
        late = g["product"].to_numpy()[shift:]
        g = g.iloc[:-shift]
        ok = np.ones(len(g), bool) if floor is None else g["product"].to_numpy() >= floor
        err = np.maximum(
            np.abs(g["ratio_max"].to_numpy() - late), np.abs(g["ratio_min"].to_numpy() - late)
        )[ok]
        worst = max(worst, float(err.max()))
    return worst


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
