"""The report of the collapse study: its text, from the tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.verdict import checks_config

from .figures import load


def _row(r) -> str:
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
    return (
        f"| {r['model']} | {r['beta']:g} | {r['censored']}/{r['chains']} | {med} | "
        f"10^{r['log10_bound_steps']:.2f} | {ratio} | {worst} |"
    )


def _slower(summary: pd.DataFrame) -> str:
    """SA_P against SA_β at the largest β both observed."""
    both = summary.pivot_table(index="beta", columns="model", values="median").dropna()
    both = both[np.isfinite(both).all(axis=1)] if len(both) else both
    if both.empty or "SA_P" not in both or "SA_beta" not in both:
        return ""
    b = both.index.max()
    return (
        f"at β = {b:g} SA_P takes {both.loc[b, 'SA_P']:.3g} steps against "
        f"{both.loc[b, 'SA_beta']:.3g} for SA_β."
    )


def _loose(rows: pd.DataFrame) -> str:
    """The range of bound / measured median collapse time over ``rows`` (where observed)."""
    x = rows["log10_bound_over_median"]
    x = x[np.isfinite(x)]
    return f"10^{x.min():.1f}–10^{x.max():.1f}" if len(x) else "not observed"


def _at_zero(seen: pd.DataFrame, n: int) -> str:
    """At β = 0 SA_β is plain averaging (factor 1 − γ) while the bound's c is 1/n."""
    z = seen[(seen["beta"] == 0) & (seen["model"] == "SA_beta")]
    if z.empty:
        return ""
    ratio = 10 ** z["log10_bound_over_median"].iloc[0]
    worst = float(z["worst_factor"].iloc[0])
    return (
        f" At β = 0 (plain averaging) the ratio is {ratio:.3g} (n = {n}); there the bound's "
        f"c is 1/n while the largest measured per-step factor is {worst:.4g} (1 − γ = "
        f"{1 - float(z['gamma'].iloc[0]):.4g})."
    )


def report(out: Path) -> str:
    """Markdown report: measured collapse times beside the guaranteed rate."""
    out = Path(out)
    summary, fits, _, meta = load(out)
    cfg = meta["config"]
    summary = summary.assign(gamma=float(cfg["gamma"]))
    R, n = float(meta["R"]), int(meta["n"])
    flow = summary[summary["model"] == "SA_beta"]
    tol = float(checks_config(out)["contraction_roundoff"])
    violations = flow[flow["worst_factor"] > flow["guaranteed_factor"] * (1 + tol)]
    growing = flow["worst_factor"] > 1 + tol
    seen = summary[np.isfinite(summary["log10_bound_over_median"])]
    lines = [
        "# Collapse to one point ([FW] prop. origin)",
        "",
        f"One start on the {meta['polytope']['name']} polygon: n = {n} tokens (vertex tokens "
        f"on the vertices, the others uniform in K), R = max|x_j| = {R:.4f}, γ = "
        f"{cfg['gamma']:g}. Collapse time: first step with diam ≤ {cfg['ratio']:g}·diam₀. "
        "Guaranteed by the proposition: diam shrinks by at least 1 − γc per step, c = "
        "e^(−2|β|R²)/n, so the collapse takes at most log(ratio)/log(1 − γc) steps. "
        "SA_β: one path per β; SA_P: "
        f"{int(cfg['chain']['chains'])} chains per β (censored at "
        f"{int(cfg['chain']['max_steps']):,} steps).",
        "",
        "## Headline numbers",
        "",
    ]
    lines.append(
        f"- **Per-step contraction (SA_β)**: checked at every step of every SA_β path (up to "
        f"{int(cfg['flow']['record_cap']):,} steps): the largest factor diam(X^(t+1))/diam(X^t) "
        + ("never exceeds" if violations.empty else "EXCEEDS")
        + f" 1 − γc ({len(violations)} violations in {len(flow)} β); the diameter "
        f"{'never increases' if not growing.any() else 'INCREASES at some step'}."
    )
    if len(seen):
        lines.append(
            f"- **How loose the guaranteed rate is**: bound / measured median collapse time = "
            f"10^{seen['log10_bound_over_median'].min():.1f} to "
            f"10^{seen['log10_bound_over_median'].max():.1f} over the β where collapse was "
            "observed." + _at_zero(seen, n)
        )
    for _, f in fits.iterrows():
        lines.append(
            f"- **Exponent ({f['model']})**: log(median T) grows like {f['slope']:.3f}·β over "
            f"β = {f['beta_min']:g}–{f['beta_max']:g}; the bound's exponent is 2R² = "
            f"{2 * R * R:.3f} (ratio {2 * R * R / f['slope']:.2f})."
        )
    cens = summary[~np.isfinite(summary["median"])]
    if len(cens):
        lines.append(
            "- **Not observed within the budget**: "
            + ", ".join(
                f"{r['model']} at β = {r['beta']:g} (> {r['max_steps']:,} steps)"
                for _, r in cens.iterrows()
            )
            + " (not tested there)."
        )
    chain = summary[summary["model"] == "SA_P"]
    if len(chain):
        lines.append(
            f"- **SA_P** (not covered by the proposition, which is about SA_β): median "
            f"collapse time {chain['median'].min():.3g}–{chain['median'].max():.3g} steps over "
            f"β = {chain['beta'].min():g}–{chain['beta'].max():g}, "
            f"{int(chain['censored'].sum())} of {int(chain['chains'].sum())} chains censored; "
            f"{_slower(summary)}"
        )
    neg = summary[summary["beta"] < 0]
    if len(neg):
        lines.append(
            f"- **Negative β** (B = −I): collapse in {neg['median'].min():.3g}–"
            f"{neg['median'].max():.3g} steps (β = 0: "
            f"{summary.loc[summary['beta'] == 0, 'median'].min():.3g}); the bound depends on "
            "|β| only (a mathematical remark), and bound / measured there is "
            + _loose(neg)
            + " against "
            + _loose(summary[summary["beta"] > 0])
            + " for β > 0."
        )
    lines += [
        "",
        "| model | β | censored | median collapse time | bound (steps) | bound / "
        "measured | worst per-step factor (SA_β) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [_row(r) for _, r in summary.iterrows()]
    lines += [
        "",
        "Figures: `collapse_time.png` (median collapse time against β with the bound "
        "dashed; bound/measured), `diameter.png` (diameter against time per β with the "
        "guaranteed (1 − γc)^t dashed).",
        "",
    ]
    return "\n".join(lines)
