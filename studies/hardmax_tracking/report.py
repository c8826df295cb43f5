"""The report of the hardmax-tracking study: the parts of ``report.md`` filled from the tables in
``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import read_checks

from .figures import load


def _fit(fits: pd.DataFrame, prefix: str):
    f = fits[fits["what"].str.startswith(prefix)]
    return None if f.empty else f.iloc[0]


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: measured exponents beside c0 and the frozen law (checks: checks.csv)."""
    t = template
    out = Path(out)
    distance, times, summary, fits, cfg = load(out)
    meta = read_table(out / "distance.parquet")[1]
    c0, t0 = float(meta["c0"]), int(meta["t0"])
    chain, flow = _fit(fits, "SA_P"), _fit(fits, "SA_beta, least")
    frozen, plateau = _fit(fits, "frozen"), _fit(fits, "SA_beta plateau")
    checks = read_checks(out / "checks.csv").set_index("criterion")
    bullets = []
    if plateau is not None and "pathwise/offset_vanishes" in checks.index:
        off = checks.loc["pathwise/offset_vanishes"]
        exact = checks.loc["pathwise", "pass"] == "true"
        bullets.append(
            t(
                "plateau",
                how=t("exactly" if exact else "up_to_offset"),
                exponent=f"{off['measured']:.2f}",
                low=f"{off['low']:.2f}",
                high=f"{off['high']:.2f}",
                beta_min=f"{plateau['beta_min']:g}",
                beta_max=f"{plateau['beta_max']:g}",
                examples=_plateau_at(summary, "SA_beta"),
                vanishes=t("vanishes" if off["pass"] == "true" else "not_shown"),
            )
        )
    if chain is not None:
        bullets.append(
            t(
                "chain",
                b=f"{chain['slope']:.3f}",
                low=f"{chain['low']:.3f}",
                high=f"{chain['high']:.3f}",
                beta_min=f"{chain['beta_min']:g}",
                beta_max=f"{chain['beta_max']:g}",
                frozen=f"{frozen['slope']:.3f}",
                c0=f"{c0:.4f}",
                ratio=f"{chain['slope'] / c0:.3f}",
                range=_ratio_range(summary),
            )
        )
    if flow is not None and "exponential_SA_beta" in checks.index:
        fl = checks.loc["exponential_SA_beta"]
        bullets.append(
            t(
                "flow",
                b=f"{flow['slope']:.3f}",
                low=f"{fl['low']:.3f}",
                high=f"{fl['high']:.3f}",
                beta_min=f"{flow['beta_min']:g}",
                beta_max=f"{flow['beta_max']:g}",
                ratio=f"{flow['slope'] / c0:.3f}",
            )
        )
    rows = []
    for _, r in summary.iterrows():
        mean = r.get("mean", np.nan)
        rows.append(
            t(
                "row",
                model=r["model"],
                beta=f"{r['beta']:g}",
                plateau=f"{r['plateau']:.3g}",
                stage1=r["stage1"],
                chains=r["chains"],
                censored=r["censored"],
                median=f"{r['median']:.4g}",
                ci=(
                    f"{mean:.4g} ({r['mean_low']:.4g}–{r['mean_high']:.4g})"
                    if np.isfinite(mean)
                    else "–"
                ),
                frozen=f"{r['frozen_mean']:.4g}",
                ratio=f"{mean / r['frozen_mean']:.3f}" if np.isfinite(mean) else "–",
            )
        )
    return t(
        "report",
        polytope=meta["polytope"]["name"],
        tokens=cfg.tokens,
        cone_margin=f"{cfg.cone_margin:g}",
        gamma=f"{cfg.gamma:g}",
        eps=f"{cfg.eps:g}",
        t0=t0,
        settle=f"{cfg.settle:g}",
        c0=f"{c0:.4f}",
        gamma_min_edge=f"{meta['gamma_min_edge']:.4f}",
        bullets="".join(b + "\n" for b in bullets),
        rows="\n".join(rows),
    )


def _ratio_range(summary) -> str:
    g = summary[(summary["model"] == "SA_P") & summary["regime"]].dropna(subset=["mean"])
    r = (g["mean"] / g["frozen_mean"]).to_numpy()
    return f"{r.min():.2f}–{r.max():.2f}×" if r.size else "–"


def _plateau_at(summary, model) -> str:
    g = summary[summary["model"] == model]
    pick = g.iloc[[0, len(g) // 2, len(g) - 1]]
    return ", ".join(f"{r['plateau']:.3g} at β = {r['beta']:g}" for _, r in pick.iterrows())
