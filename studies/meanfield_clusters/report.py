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
from .config import Config


def _sensitivity(out: Path, cfg: Config) -> pd.DataFrame:
    """Per minimum cluster size and reading time: the largest distance of a β's interval from
    k*, and whether the claim's rule passes at each tolerance."""
    frame = read_table(out / "counts.csv")[0]
    level = float(cfg.confidence_level)
    rows = []
    for f in cfg.min_fractions:
        for m in sorted(frame["multiple"].unique()):
            table = _checks.summary(out, float(f), float(m), level)
            rows.append(
                {
                    "fraction": float(f),
                    "multiple": float(m),
                    "largest distance from k*": float(_checks.misses(table).max()),
                    **{
                        f"passes at {tol:g}": "yes" if _checks.passes(table, tol) else "no"
                        for tol in map(float, cfg.tolerances)
                    },
                }
            )
    return pd.DataFrame(rows)


def _wording(checks: pd.DataFrame, below: int, above: int) -> str:
    """The finding in words, from the claim, its correction and the β whose interval lies below
    or above k*."""
    claim, within = checks.loc["k_star", "pass"], checks.loc["k_star/within_one", "pass"]
    if claim == "true":
        return "the count is k* at every β (told from k* ± 1)"
    side = (
        "systematically low"
        if below and not above
        else "systematically high"
        if above and not below
        else "off on both sides"
        if above and below
        else "not significantly off k*, but not settled either"
    )
    if within == "true":
        return f"consistent within ±1, {side}: the count is not k* at every β"
    return f"not within ±1 of k* at every β ({side})"


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: every number from counts.csv and checks.csv."""
    out = Path(out)
    cfg = Config.from_dict(checks_config(out))
    checks = read_checks(out / "checks.csv").set_index("criterion")
    fraction, multiple = float(cfg.min_fraction), float(cfg.claim_multiple)
    table = _checks.summary(out, fraction, multiple, float(cfg.confidence_level))
    n_max = int(table["tokens"].max())
    top = table[table["tokens"] == n_max]
    below = int((top["high"] < top["k_star"]).sum())
    above = int((top["low"] > top["k_star"]).sum())
    sens = _sensitivity(out, cfg)
    return template(
        "report",
        dt_growth=f"{cfg.dt_growth:g}",
        chains=cfg.chains,
        delta=f"{cfg.delta:g}",
        fraction=f"{fraction:g}",
        n_max=n_max,
        multiple=f"{multiple:g}",
        level=f"{100 * cfg.confidence_level:g} %",
        wording=_wording(checks, below, above),
        below=below,
        above=above,
        betas=len(top),
        distance=fmt(checks.loc["k_star", "measured"], 3),
        resolution=f"{cfg.resolution:g}",
        within_one=f"{cfg.within_one:g}",
        claim=checks.loc["k_star", "pass"],
        corrected=checks.loc["k_star/within_one", "pass"],
        half_width=fmt(checks.loc["neighbours_resolved", "measured"], 3),
        resolved=checks.loc["neighbours_resolved", "pass"],
        by_n=", ".join(
            f"{fmt(checks.loc[f'deviation_N_{n}', 'measured'], 3)} (N = {n})"
            for n in sorted(table["tokens"].unique())
        ),
        disagree=int(checks.loc["decomposition_matches_kernel", "measured"]),
        table=md_table(
            top.assign(range=[f"{a}–{b}" for a, b in zip(top["least"], top["most"])]),
            {
                "beta": "β",
                "k_star": "k*",
                "mean": "mean count",
                "low": f"{100 * cfg.confidence_level:g} % low",
                "high": f"{100 * cfg.confidence_level:g} % high",
                "median": "median",
                "range": "range",
            },
        ),
        sensitivity=md_table(sens, {c: c for c in sens.columns}),
    )
