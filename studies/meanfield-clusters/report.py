"""The report of the meanfield-clusters study: the parts of ``report.md`` filled from
``counts.csv`` and ``checks.csv`` only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from metastab.results import read_table
from metastab.studies.render import fmt, md_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from . import checks as _checks


def _sensitivity(out: Path, cfg: dict) -> pd.DataFrame:
    """Max over β of |median count − k*| per minimum cluster size and reading time, and
    whether the claim holds at each tolerance."""
    frame = read_table(out / "counts.csv")[0]
    rows = []
    for f in cfg["min_fractions"]:
        for m in sorted(frame["multiple"].unique()):
            dev = _checks.deviation(_checks.medians(out, float(f), float(m)))
            rows.append(
                {
                    "fraction": float(f),
                    "multiple": float(m),
                    "max deviation from k*": dev,
                    **{
                        f"holds at tolerance {tol}": "yes" if dev <= tol else "no"
                        for tol in cfg["count_tolerances"]
                    },
                }
            )
    return pd.DataFrame(rows)


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: every number from counts.csv and checks.csv."""
    out = Path(out)
    cfg = checks_config(out)
    checks = read_checks(out / "checks.csv").set_index("criterion")
    fraction, multiple = float(cfg["min_fraction"]), float(cfg["claim_multiple"])
    table = _checks.medians(out, fraction, multiple)
    n_max = int(table["tokens"].max())
    top = table[table["tokens"] == n_max]
    below_only = (top["median"] <= top["k_star"]).all() and (top["median"] < top["k_star"]).any()
    sens = _sensitivity(out, cfg)
    return template(
        "report",
        dt_growth=f"{cfg['dt_growth']:g}",
        chains=cfg["chains"],
        delta=f"{cfg['delta']:g}",
        fraction=f"{fraction:g}",
        n_max=n_max,
        multiple=f"{multiple:g}",
        exact=int((top["median"] == top["k_star"]).sum()),
        betas=len(top),
        deviation=fmt(checks.loc["k_star", "measured"]),
        tolerance=int(cfg["count_tolerance"]),
        below=int((top["median"] < top["k_star"]).sum()),
        above=int((top["median"] > top["k_star"]).sum()),
        misses=template("misses_below" if below_only else "plain"),
        by_n=", ".join(
            f"{fmt(checks.loc[f'deviation_N_{n}', 'measured'])} (N = {n})"
            for n in sorted(table["tokens"].unique())
        ),
        disagree=int(checks.loc["decomposition_matches_kernel", "measured"]),
        table=md_table(
            top.assign(range=[f"{int(a)}–{int(b)}" for a, b in zip(top["low"], top["high"])]),
            {"beta": "β", "k_star": "k*", "median": "median count", "range": "range"},
        ),
        sensitivity=md_table(sens, {c: c for c in sens.columns}),
    )
