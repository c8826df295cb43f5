"""The report of the hardmax-psd study: the parts of ``report.md`` filled from the tables in
``out`` only."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from metastab.results import read_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config

from .checks import _line_summary
from .config import Config
from .figures import halving_limit


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: measured straight-line law, ODE and Gaussian claim beside the theorem."""
    t = template
    out = Path(out)
    lines, _ = read_table(out / "lines.csv")
    rules = Config.from_dict(checks_config(out))  # the run and the thresholds of the checks
    floor = float(rules.lines.floor)
    summary = _line_summary(lines, floor)
    ode = read_table(out / "ode.csv")[0]
    gauss = read_table(out / "gaussian.csv")[0]
    line_rows = [
        t(
            "line_row",
            polytope=r["polytope"],
            d=r["d"],
            schedule=r["schedule"],
            t=r["t"],
            measured=f"{r['measured']:.4e}",
            predicted=f"{r['predicted']:.4e}",
            rate_error=f"{r['rate_error']:.1e}",
            vector_error=f"{r['vector_error']:.1e}",
            vertex_moved=f"{r['vertex_moved']:.1e}",
        )
        for _, r in summary.iterrows()
    ]
    halving = summary[summary["schedule"].str.startswith("γ^τ = 2")]
    resolved = summary["vector_error_resolved"].max()
    slope, _, _, _, _ = stats.linregress(np.log(ode["dt"]), np.log(ode["max_error"]))
    ode_rows = [
        t(
            "ode_row",
            dt=f"{r['dt']:g}",
            steps=int(r["steps"]),
            every=int(r["record_every"]),
            error=f"{r['max_error']:.3e}",
            constant=f"{r['first_order_constant']:.4f}",
        )
        for _, r in ode.iterrows()
    ]
    worst = 0.0
    gaussian_rows = []
    for _, r in gauss.iterrows():
        p_hat = r["vertices_not_owning"] / r["vertices"]
        p = 1 - r["theory_vertex_owning"]
        se = np.sqrt(max(p * (1 - p), 1e-300) / r["vertices"])
        worst = max(worst, abs(p_hat - p) / se if se > 0 else 0.0)
        gaussian_rows.append(
            t(
                "gaussian_row",
                k=int(r["k"]),
                d=int(r["d"]),
                measured=f"{p_hat:.2e}",
                exact=f"{p:.2e}",
                all_owning=f"{1 - r['polytopes_not_all_owning'] / r['draws']:.4f}",
            )
        )
    miss = float(rules.gaussian_miss)
    within = gauss["polytopes_not_all_owning"] / gauss["draws"] <= miss
    reach = gauss[within].groupby("k")["d"].min()
    tail = gauss[gauss["k"] == gauss["k"].min()].tail(2)
    decay = (
        -np.diff(np.log(1 - tail["theory_vertex_owning"].to_numpy()))[0]
        / np.diff(tail["d"].to_numpy())[0]
    )
    return (
        t(
            "report",
            floor=f"{floor:g}",
            line_rows="\n".join(line_rows),
            stop=f"{halving['measured'].mean():.6f}",
            limit=f"{halving_limit():.6f}",
            reach=t("never_reach" if halving["measured"].min() > 0 else "some_reach"),
            straight=f"{summary['vector_error'].max():.0e}",
            roundoff=t("roundoff" if resolved <= rules.roundoff else "above_roundoff"),
            resolved=f"{resolved:.0e}",
            ode_rows="\n".join(ode_rows),
            order=f"{slope:.3f}",
            constant=f"{ode['first_order_constant'].iloc[-1]:.4f}",
            limit_constant=f"{1 / (2 * math.e):.4f}",
            gaussian_rows="\n".join(gaussian_rows),
            worst=f"{worst:.1f}",
            percent=f"{100 * (1 - miss):g}",
            reach_d=", ".join(f"{int(d)} (k = {int(k)})" for k, d in reach.items()),
            decay=f"{decay:.3f}",
            k_min=int(gauss["k"].min()),
            rate_limit=f"{np.log(2) / 2:.3f}",
        )
        + "\n"
    )
