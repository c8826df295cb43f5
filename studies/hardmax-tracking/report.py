"""The report of the hardmax-tracking study: its text, from the tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.verdict import read_checks

from .figures import load


def _fit(fits: pd.DataFrame, prefix: str):
    f = fits[fits["what"].str.startswith(prefix)]
    return None if f.empty else f.iloc[0]


def report(out: Path) -> str:
    """Markdown report: measured exponents beside c0 and the frozen law (checks: checks.csv)."""
    out = Path(out)
    distance, times, summary, fits, meta = load(out)
    cfg = meta["config"]
    c0, t0 = float(meta["c0"]), int(meta["t0"])
    chain, flow = _fit(fits, "SA_P"), _fit(fits, "SA_beta, least")
    frozen, plateau = _fit(fits, "frozen"), _fit(fits, "SA_beta plateau")
    lines = [
        "# Finite β follows hardmax for exponentially long",
        "",
        f"One start on the {meta['polytope']['name']} polygon: {cfg['tokens']} tokens, the "
        f"vertex tokens on the vertices and the others uniform in K with a score gap ≥ "
        f"{cfg['cone_margin']:g} to every other vertex; γ = {cfg['gamma']:g}. The distance "
        "is max_i |x_i^t − h_i^t| to the hardmax path h from the same start. T_ε = first t "
        f"with distance > ε = {cfg['eps']:g}; recorded exactly until t0 = {t0} (hardmax "
        f"within {cfg['settle']:g}·ε of the vertices), then by first passage out of the "
        f"ε-balls at the vertices. c0 = {c0:.4f}; one cross-vertex pick moves a token by "
        f"γ·min|v_a − v_b| = {meta['gamma_min_edge']:.4f}.",
        "",
        "## Headline numbers",
        "",
    ]
    checks = read_checks(out / "checks.csv").set_index("criterion")
    if plateau is not None and "pathwise/offset_vanishes" in checks.index:
        off = checks.loc["pathwise/offset_vanishes"]
        exact = checks.loc["pathwise", "pass"] == "true"
        lines.append(
            "- **Finite β follows hardmax "
            + ("exactly" if exact else "not exactly but up to an offset")
            + "**: after the "
            f"transient the distance sits on a plateau: plateau ∝ β^{off['measured']:.2f} "
            f"(95 % interval [{off['low']:.2f}, {off['high']:.2f}]) for SA_β over β = "
            f"{plateau['beta_min']:g}–{plateau['beta_max']:g} "
            f"(e.g. {_plateau_at(summary, 'SA_beta')}), so the offset "
            + (
                "vanishes as β grows"
                if off["pass"] == "true"
                else "is not shown to vanish as β grows"
            )
            + " (check `pathwise/offset_vanishes`)."
        )
    if chain is not None:
        lines.append(
            f"- **Exponentially long (SA_P)**: log E[T_ε − t0] = a + bβ with b = "
            f"{chain['slope']:.3f} (95% CI {chain['low']:.3f}–{chain['high']:.3f}) over β = "
            f"{chain['beta_min']:g}–{chain['beta_max']:g}; the frozen law gives "
            f"{frozen['slope']:.3f} over the same β and c0 = {c0:.4f}: ratio measured/c0 = "
            f"{chain['slope'] / c0:.3f}. The measured mean is {_ratio_range(summary)} of the "
            "frozen law's t0 + 1/p, which assumes clusters exactly on the vertices (an "
            "explanation of the gap, not tested here: the clusters sit at the plateau offset "
            "instead). Chains that leave during the transient "
            "(t ≤ t0, column 'left in transient') are not part of this fit."
        )
    if flow is not None and "exponential_SA_beta" in checks.index:
        fl = checks.loc["exponential_SA_beta"]
        lines.append(
            f"- **Exponentially long (SA_β)**: slope of log T_ε against β = {flow['slope']:.3f} "
            f"(95 % t interval [{fl['low']:.3f}, {fl['high']:.3f}]) "
            f"over β = {flow['beta_min']:g}–{flow['beta_max']:g} (ratio to c0 "
            f"{flow['slope'] / c0:.3f}). A proposed mechanism, not tested here: the deterministic "
            "layer has no picks, so it leaves through the slow drift of whole clusters."
        )
    lines += [
        "",
        "| model | β | plateau at t0 | left in transient | censored | median T_ε | "
        "mean T_ε (95% CI) | t0 + 1/p (frozen law) | mean / frozen |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        mean = r.get("mean", np.nan)
        ci = f"{mean:.4g} ({r['mean_low']:.4g}–{r['mean_high']:.4g})" if np.isfinite(mean) else "–"
        ratio = f"{mean / r['frozen_mean']:.3f}" if np.isfinite(mean) else "–"
        lines.append(
            f"| {r['model']} | {r['beta']:g} | {r['plateau']:.3g} | "
            f"{r['stage1']}/{r['chains']} | {r['censored']} | {r['median']:.4g} | {ci} | "
            f"{r['frozen_mean']:.4g} | {ratio} |"
        )
    lines += [
        "",
        "Figures: `distance_over_time.png` (distance against t per β, log–log), "
        "`tracking_time.png` (T_ε against β with the frozen law dashed; plateau against "
        "β), `survival.png` (SA_P survival of T_ε − t0 per β, geometric fits dashed).",
    ]
    return "\n".join(lines)


def _ratio_range(summary) -> str:
    g = summary[(summary["model"] == "SA_P") & summary["regime"]].dropna(subset=["mean"])
    r = (g["mean"] / g["frozen_mean"]).to_numpy()
    return f"{r.min():.2f}–{r.max():.2f}×" if r.size else "–"


def _plateau_at(summary, model) -> str:
    g = summary[summary["model"] == model]
    pick = g.iloc[[0, len(g) // 2, len(g) - 1]]
    return ", ".join(f"{r['plateau']:.3g} at β = {r['beta']:g}" for _, r in pick.iterrows())
