"""Checks of the hardmax-tracking study, from the tables only.

Claims: finite β follows the hardmax path for a time exponential in β (SA_P: the censored joint
fit of T_ε − t0; SA_β: least squares of log T_ε on β), each judged by its 95 % interval, and
pathwise exactly (the distance at t0 is 0). Correction: the tracking holds up to an offset that
vanishes as β grows, judged by the 95 % interval of the log-log slope of the SA_β plateau
distance (no threshold on the slope itself).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from metastab.results import read_table
from metastab.studies.compare import Bound, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "[FW] §5 (metastability: finite β follows hardmax)"


def ls_fit(x, y, level: float = 0.95) -> tuple[float, float, float]:
    """Least-squares slope of y on x with its t interval: (slope, low, high)."""
    fit = sps.linregress(np.asarray(x, float), np.asarray(y, float))
    half = sps.t.ppf(0.5 + level / 2, len(x) - 2) * fit.stderr if len(x) > 2 else np.inf
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half)


def plateau_points(summary: pd.DataFrame) -> pd.DataFrame:
    """The SA_β plateau distances that the plateau fit uses (as ``run._plateau_fit``)."""
    flow = summary[summary["model"] == "SA_beta"]
    ok = flow[(flow["plateau"] > 0) & (flow["beta"] > 0)]
    return ok[ok["regime"]] if ok["regime"].sum() >= 2 else ok


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    summary, meta = read_table(out / "summary.csv")
    fits = read_table(out / "fits.csv")[0]
    rows: list[dict] = []
    pw = config.power
    c0 = float(meta["c0"])
    rate = (1 + pw.rate_excess) * c0
    fast = f"a time exponential in β at rate ≥ {1 + pw.rate_excess:g} c0 = {rate:.4g}"

    def above(what: str, value: float, bound: float, low: float, high: float) -> Bound:
        # the lower end of the interval of ``value`` above ``bound``
        return Bound(
            f"{what}: lower end",
            low,
            ">",
            bound,
            than=f"{bound:.4g}" if bound else "0",
            measured=value,
            low=low,
            high=high,
        )

    chain = fits[fits["what"].str.startswith("SA_P")]
    if not chain.empty:
        c = chain.iloc[0]

        def sa_p(bound: float) -> Bound:
            return above(
                f"b of log E[T_ε − t0] = a + bβ on β = {c['beta_min']:g}…{c['beta_max']:g} "
                "(censored joint fit, 95 % profile interval)",
                c["slope"],
                bound,
                c["low"],
                c["high"],
            )

        rows += declare(
            sa_p,
            0.0,
            rate,
            fast,
            criterion="exponential_SA_P",
            role="claim",
            statement="SA_P tracks hardmax for a time exponential in β",
            source=SOURCE,
        )
    flow = summary[(summary["model"] == "SA_beta") & summary["regime"]].dropna(subset=["median"])
    if len(flow) >= 3:
        slope, low, high = ls_fit(flow["beta"], np.log(flow["median"]))

        def sa_beta(bound: float) -> Bound:
            return above(
                f"least-squares slope of log T_ε on β = {flow['beta'].min():g}…"
                f"{flow['beta'].max():g} (95 % t interval, {len(flow)} β)",
                slope,
                bound,
                low,
                high,
            )

        rows += declare(
            sa_beta,
            0.0,
            rate,
            fast,
            criterion="exponential_SA_beta",
            role="claim",
            statement="SA_β tracks hardmax for a time exponential in β",
            source=SOURCE,
        )
    pts = plateau_points(summary)
    smallest = float(summary["plateau"].min())

    def pathwise(distance: float) -> Bound:
        # a distance is not negative: at most 0 is 0
        return Bound(
            "smallest median distance to the hardmax path at t0 over every model and β",
            smallest,
            "≤" if distance else "=",
            distance,
        )

    rows += declare(
        pathwise,
        0.0,
        pw.pathwise_distance,
        f"the paths coincide up to a distance {pw.pathwise_distance:g} at t0",
        criterion="pathwise",
        role="claim",
        statement="the finite-β path coincides with the hardmax path up to T_ε",
        source=SOURCE,
    )
    if len(pts) >= 3:
        slope, low, high = ls_fit(np.log(pts["beta"]), np.log(pts["plateau"]))

        def offset(bound: float) -> Bound:
            return Bound(
                f"log-log slope of the SA_β plateau distance on β = {pts['beta'].min():g}…"
                f"{pts['beta'].max():g} (95 % t interval, {len(pts)} β): upper end",
                high,
                "<",
                bound,
                measured=slope,
                low=low,
                high=high,
            )

        rows += declare(
            offset,
            0.0,
            pw.offset_slope,
            f"the offset falls at least like β^({pw.offset_slope:g})",
            criterion="pathwise/offset_vanishes",
            role="correction",
            statement="the tracking holds up to an offset D(β) → 0 "
            "(the clusters form beside the vertices)",
            source="this study",
        )
    frozen = fits[fits["what"].str.startswith("frozen")]
    if not frozen.empty:
        rows.append(
            check(
                "frozen_law_exponent",
                "context",
                "the exponent of the frozen law (clusters exactly on the vertices)",
                measured=float(frozen["slope"].iloc[0]),
                threshold=c0,
                rule="slope of log(1/p) over the SA_P fit's β, against c0",
                source="this study",
            )
        )
    return checks_frame(rows)
