"""The report of the collapse study: the parts of ``report.md`` filled from the tables in ``out``
only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config

from .config import Config
from .figures import load


def _row(t: ReportTemplate, r: pd.Series) -> str:
    med = "> " + f"{r['max_steps']:.3g}" if not np.isfinite(r["median"]) else f"{r['median']:.4g}"
    ratio = (
        "–"
        if not np.isfinite(r["log10_bound_over_median"])
        else f"10^{r['log10_bound_over_median']:.1f}"
    )
    worst = (
        "–"
        if not np.isfinite(r.get("worst_factor", np.nan))
        else f"{r['worst_factor']:.6f} (1 − γc = 1 − {10 ** (r['log10_c']) * r['gamma']:.3g})"
    )
    return t(
        "row",
        model=r["model"],
        beta=f"{r['beta']:g}",
        censored=r["censored"],
        chains=r["chains"],
        median=med,
        bound=f"{r['log10_bound_steps']:.2f}",
        ratio=ratio,
        worst=worst,
    )


def _slower(t: ReportTemplate, summary: pd.DataFrame) -> str:
    """SA_P against SA_β at the largest β both observed."""
    both = summary.pivot_table(index="beta", columns="model", values="median").dropna()
    both = both[np.isfinite(both).all(axis=1)] if len(both) else both
    if both.empty or "SA_P" not in both or "SA_beta" not in both:
        return ""
    b = both.index.max()
    return t(
        "slower",
        beta=f"{b:g}",
        chain=f"{both.loc[b, 'SA_P']:.3g}",
        flow=f"{both.loc[b, 'SA_beta']:.3g}",
    )


def _loose(rows: pd.DataFrame) -> str:
    """The range of bound / measured median collapse time over ``rows`` (where observed)."""
    x = rows["log10_bound_over_median"]
    x = x[np.isfinite(x)]
    return f"10^{x.min():.1f}–10^{x.max():.1f}" if len(x) else "not observed"


def _at_zero(t: ReportTemplate, seen: pd.DataFrame, n: int) -> str:
    """At β = 0 SA_β is plain averaging (factor 1 − γ) while the bound's c is 1/n."""
    z = seen[(seen["beta"] == 0) & (seen["model"] == "SA_beta")]
    if z.empty:
        return ""
    return t(
        "at_zero",
        ratio=f"{10 ** z['log10_bound_over_median'].iloc[0]:.3g}",
        n=n,
        worst=f"{float(z['worst_factor'].iloc[0]):.4g}",
        one_minus_gamma=f"{1 - float(z['gamma'].iloc[0]):.4g}",
    )


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: measured collapse times beside the guaranteed rate."""
    t = template
    out = Path(out)
    summary, fits, _, meta = load(out)
    cfg = Config.from_dict(checks_config(out))
    summary = summary.assign(gamma=float(cfg.gamma))
    R, n = float(meta["R"]), int(meta["n"])
    flow = summary[summary["model"] == "SA_beta"]
    tol = float(cfg.contraction_roundoff)
    violations = flow[flow["worst_factor"] > flow["guaranteed_factor"] * (1 + tol)]
    growing = flow["worst_factor"] > 1 + tol
    seen = summary[np.isfinite(summary["log10_bound_over_median"])]
    bullets = [
        t(
            "contraction",
            record_cap=f"{int(cfg.flow.record_cap):,}",
            exceeds="never exceeds" if violations.empty else "EXCEEDS",
            violations=len(violations),
            betas=len(flow),
            increases="never increases" if not growing.any() else "INCREASES at some step",
        )
    ]
    if len(seen):
        bullets.append(
            t(
                "loose",
                low=f"{seen['log10_bound_over_median'].min():.1f}",
                high=f"{seen['log10_bound_over_median'].max():.1f}",
                at_zero=_at_zero(t, seen, n),
            )
        )
    for _, f in fits.iterrows():
        bullets.append(
            t(
                "exponent",
                model=f["model"],
                slope=f"{f['slope']:.3f}",
                beta_min=f"{f['beta_min']:g}",
                beta_max=f"{f['beta_max']:g}",
                bound_exponent=f"{2 * R * R:.3f}",
                ratio=f"{2 * R * R / f['slope']:.2f}",
            )
        )
    cens = summary[~np.isfinite(summary["median"])]
    if len(cens):
        where = ", ".join(
            f"{r['model']} at β = {r['beta']:g} (> {r['max_steps']:,} steps)"
            for _, r in cens.iterrows()
        )
        bullets.append(t("censored", where=where))
    chain = summary[summary["model"] == "SA_P"]
    if len(chain):
        bullets.append(
            t(
                "chain",
                median_min=f"{chain['median'].min():.3g}",
                median_max=f"{chain['median'].max():.3g}",
                beta_min=f"{chain['beta'].min():g}",
                beta_max=f"{chain['beta'].max():g}",
                censored=int(chain["censored"].sum()),
                chains=int(chain["chains"].sum()),
                slower=_slower(t, summary),
            )
        )
    neg = summary[summary["beta"] < 0]
    if len(neg):
        bullets.append(
            t(
                "negative",
                median_min=f"{neg['median'].min():.3g}",
                median_max=f"{neg['median'].max():.3g}",
                median_zero=f"{summary.loc[summary['beta'] == 0, 'median'].min():.3g}",
                loose_negative=_loose(neg),
                loose_positive=_loose(summary[summary["beta"] > 0]),
            )
        )
    return t(
        "report",
        polytope=meta["polytope"]["name"],
        n=n,
        R=f"{R:.4f}",
        gamma=f"{cfg.gamma:g}",
        ratio=f"{cfg.ratio:g}",
        chains=int(cfg.chain.chains),
        max_steps=f"{int(cfg.chain.max_steps):,}",
        bullets="\n".join(bullets),
        rows="\n".join(_row(t, r) for _, r in summary.iterrows()),
    )
