"""Checks of the hardmax-psd study ([FW] §4, the theorem on positive definite B and the hardmax
ODE), from the tables only.

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
from metastab.studies.compare import AllOf, Bound, declare
from metastab.studies.verdict import checks_frame

from .config import Config

SOURCE = "[FW] §4, the theorem on positive definite B"


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

    def law(shift: int) -> Bound:
        return Bound(
            "largest |x^t − v − Π(x^0 − v)|/|x^0 − v| over every polytope, schedule, token "
            "and step",
            _law_error(summary, lines, shift, None),
            "≤",
            roundoff,
            than="threshold (`roundoff`)",
            tail=_LOWER * bool(shift),
        )

    rows = declare(
        law,
        0,
        pw.law_shift,
        late,
        criterion="straight_line_law",
        role="claim",
        statement="x_i^t − v_σ(i) = Π_{τ<t}(1 − γ^τ)(x_i^0 − v_σ(i)); the vertices never move",
        source=SOURCE,
    )
    halving = summary["schedule"].str.startswith("γ^τ = 2")
    stuck = float(summary.loc[halving, "measured"].max()) if halving.any() else np.nan

    def converges(limit: float) -> Bound:
        return Bound(
            "distance ratio |x^t − v|/|x^0 − v| at the last step with γ^τ = 2^(−τ−1)"
            + (f", minus the predicted limit {limit:.6g}," if limit else ""),
            abs(stuck - limit),
            "≤",
            floor,
            than="the comparison floor",
            testable=bool(halving.any()),
        )

    rows += declare(
        converges,
        0.0,
        float(np.exp(-1.0)),
        "the tokens stop at e^(−Σγ) = e^(−1) of the distance (Π(1 − γ) read as e^(−Σγ))",
        criterion="converges_every_schedule",
        role="claim",
        statement="the tokens converge into their vertex at least exponentially "
        "(as printed: any schedule)",
        source=SOURCE,
    )

    def fixed(shift: int) -> Bound:
        return Bound(
            "largest |x^t − v − Π(x^0 − v)|/|x^0 − v| over the schedules with inf γ^τ > 0, "
            "while Π ≥ the comparison floor,",
            _law_error(summary[~halving], lines, shift, floor),
            "≤",
            roundoff,
            than="threshold (`roundoff`)",
            tail=_LOWER * bool(shift),
        )

    rows += declare(
        fixed,
        0,
        pw.law_shift,
        late,
        criterion="converges_every_schedule/inf_gamma_positive",
        role="correction",
        statement="with inf_τ γ^τ > 0 the distance follows Π_{τ<t}(1 − γ^τ) ≤ (1 − inf γ)^t → 0: "
        "convergence at least exponential",
        source="this study",
    )
    last = ode.sort_values("dt").iloc[0]
    order = stats.linregress(np.log(ode["dt"]), np.log(ode["max_error"])).slope

    def euler(constant: float) -> Bound:
        written = "1/(2e)" if constant == 1 / (2 * math.e) else f"{constant:.6g}"
        return Bound(
            f"|max error/Δt − {written}| at the smallest Δt = {last['dt']:g}",
            abs(float(last["first_order_constant"]) - constant),
            "≤",
            float(last["dt"]),
            than="Δt",
            tail=f" (Euler: error/Δt = 1/(2e) + O(Δt)); fitted order {order:.3f}",
        )

    rows += declare(
        euler,
        1 / (2 * math.e),
        (1 + pw.euler_constant_error) / (2 * math.e),
        f"the Euler error constant 1/(2e) off by {pw.euler_constant_error:.0%}",
        criterion="ode_euler_error",
        role="claim",
        statement="x_i(t) = e^{−t} x_i^0 + (1 − e^{−t}) v_σ(i); hardmax with γ = Δt is its Euler "
        "scheme",
        source="[FW] §4, the hardmax ODE's well-posedness theorem",
    )
    limit = float(config.gaussian_miss)
    rising = sum(  # the k at which the exact P[v_a owns] decreases somewhere in d
        not (g.sort_values("d")["theory_vertex_owning"].diff().dropna() >= 0).all()
        for _, g in gauss.groupby("k")
    )

    def gaussian(d: float) -> AllOf:
        at = gauss[gauss["d"] <= d]
        top = at.loc[at.groupby("k")["d"].idxmax()]
        miss = top["polytopes_not_all_owning"] / top["draws"]
        return AllOf(
            (
                Bound(
                    "largest fraction of polytopes with a vertex not owning its cell at the "
                    "largest d " + (f"≤ {d:g} " if np.isfinite(d) else "") + "of each k",
                    float(miss.max()),
                    "≤",
                    limit,
                    than="threshold (config `gaussian_miss`)",
                ),
                Bound(
                    "the exact P[v_a owns]", rising, "=", 0, template="{what} non-decreasing in d"
                ),
            ),
            sep=", and ",
        )

    rows += declare(
        gaussian,
        np.inf,
        pw.gaussian_d,
        f"the vertices own their cells already at d = {pw.gaussian_d:g}",
        criterion="gaussian_own_cells",
        role="claim",
        statement="k i.i.d. Gaussian vertices all own their cells with probability → 1 as d → ∞",
        source=SOURCE,
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
