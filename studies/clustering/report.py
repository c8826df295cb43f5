"""The report of the clustering study: its text, from the tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.verdict import checks_config, read_checks

from . import checks as _checks
from .figures import load


def _fmt(x, digits=3) -> str:
    return "∞" if np.isinf(x) else f"{x:.{digits}g}"


def _table(s: pd.DataFrame) -> str:
    head = (
        "| β | theorem's start exists | T1 (min–max) | median hit (10–90%) | extreme hit | "
        "P̂[event at T1], C = C_event | 1 − β^(-1/8) | smallest C: random / extreme | "
        "smallest C with M = max |\n|" + "---|" * 9
    )
    lines = [head]
    for _, r in s.iterrows():
        lines.append(
            f"| {r['beta']:g} | {'yes' if r['cones_ok'] else 'no'} | "
            f"{r['T1_min']:g}–{r['T1_max']:g} | {_fmt(r['hit_median'])} "
            f"({_fmt(r['hit_q10'])}–{_fmt(r['hit_q90'])}) | {_fmt(r['hit_extreme_median'])} | "
            f"{r['P_event_T1']:.2f} | {r['bound']:.2f} | {_fmt(r['C_hat_random'])} / "
            f"{_fmt(r['C_hat_extreme'])} | {_fmt(r['C_max_hat'])} |"
        )
    return "\n".join(lines)


def inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    summary, chains, _, polys = load(out)
    _, meta = read_table(out / "summary.csv")
    cfg = meta["config"]
    C_event = float(cfg["C_event"])
    good = _checks.hypotheses(read_table(out / "polytopes.csv")[0])
    admissible = summary[summary["cones_ok"]]
    ok = admissible[admissible["polytope"].isin(good)]
    apart = admissible[~admissible["polytope"].isin(good)]
    chains = chains[chains["polytope"].isin(good)]
    checks = read_checks(out / "checks.csv").set_index("criterion")
    ratio = ok["C_hat_extreme"] / ok["M_over_m_extreme"]
    ok_chains = chains[chains["cones_ok"]]
    ends = ok.sort_values("beta").groupby(["polytope", "gamma"])
    first, last = ends.first(), ends.last()
    hit_grows = bool((last["hit_median"] > first["hit_median"]).all())
    T1_grows = bool((last["T1_max"] > first["T1_max"]).any())
    ratio_tol = float(checks_config(out)["ratio_tol"])  # a wording rule of config.toml
    tracks = bool((ratio - 1).abs().max() <= ratio_tol)
    return SimpleNamespace(**{k: v for k, v in locals().items() if k not in ("out", "ends")})


def _header(c: SimpleNamespace) -> list[str]:
    """Title, setup, the polytopes and where the theorem's initial condition exists."""
    cfg, polys = c.cfg, c.polys
    lines = [
        "# Clustering phase ([FW] Thm 5.2, lem. first.phase)",
        "",
        "SA_P from the theorem's initial condition (vertex tokens on the vertices, the others "
        "in the eroded dominance cones I_σ(β^(-1/8)) ⊖ β^(-1/4)); "
        f"{cfg['draws']} random starts and one extreme start per β, {cfg['chains']} chains "
        f"each, n = κ(1 + {cfg['tokens_per_vertex']}), every step recorded. The event: "
        "vertex tokens within β^(-1/4) of their vertex, the others within Cτ of v_σ(i).",
        "",
        "## Polytopes and where the theorem's initial condition exists",
        "",
        "| polytope | c0 | equinorm | acute cones (largest angle) | eroded cones non-empty for |",
        "|---|---|---|---|---|",
    ]
    for name, p in polys.iterrows():
        lines.append(
            f"| {name} | {p['c0']:.4f} | {p['equinorm']} | {p['acute_cones']} "
            f"({p['max_cone_angle_deg']:.1f}°) | β ≥ {p['beta_threshold']:.0f} |"
        )
    lines += [
        "",
        "A mathematical remark: an equinorm polygon with k ≥ 4 vertices always has an angle "
        "≥ 90° (the angles sum to (k − 2)·180°), so an acute equinorm polygon is a "
        "triangle. Polytopes whose cones are not acute ("
        + ", ".join(
            f"{n}: {p['max_cone_angle_deg']:.0f}° cones"
            for n, p in polys.iterrows()
            if not bool(p["acute_cones"])
        )
        + ") are outside the theorem's hypotheses: the headline "
        "numbers and the checks use only the polytopes within them ("
        + ", ".join(sorted(c.good))
        + "); the others are shown apart, below. Below the "
        "thresholds the grid's β are run from starts drawn at "
        f"{cfg['margin']:g}× the threshold (rows marked 'no'): no claim of the theorem "
        "applies there.",
        "",
    ]
    return lines


def _T1_bullet(c: SimpleNamespace) -> list[str]:
    """T1: its values, and whether its largest value grows with β."""
    ok, T1_grows = c.ok, c.T1_grows
    T1s = sorted(set(ok["T1_min"]).union(ok["T1_max"]))
    T1_one = (c.ok_chains.groupby(["polytope", "gamma", "beta", "draw"])["T1"].first() == 1).mean()
    return [
        f"## Headline numbers ({', '.join(sorted(c.good))})",
        "",
        "- **T1** (not tested: by construction β is not in its formula, it depends on the "
        f"start only): T1 ∈ {{{', '.join(f'{t:g}' for t in T1s)}}} over the admissible "
        "starts; its largest value "
        + ("grows" if T1_grows else "does not grow")
        + " from the smallest to the largest admissible β"
        + (
            " (an explanation, not tested: larger β admit starts farther from the vertex "
            "relative to m)"
            if T1_grows
            else ""
        )
        + ". A mathematical remark: T1 = 1 whenever (1 − γ)m ≤ "
        "min{c0/(2|v_a − v_b|), √(2c0)/2}; "
        f"{T1_one:.0%} of the admissible starts have T1 = 1.",
    ]


def _hitting_bullet(c: SimpleNamespace) -> list[str]:
    """The hitting time against β, beside T1."""
    ok, first, last, hit_grows = c.ok, c.first, c.last, c.hit_grows
    hit_flat = bool((last["hit_median"] == first["hit_median"]).all())
    return [
        "- **The hitting time "
        + (
            "grows with β"
            if hit_grows
            else "does not change with β"
            if hit_flat
            else "does not grow with β for every (polytope, γ)"
        )
        + "** (median over random starts at the smallest → largest admissible β: "
        + "; ".join(
            f"{n}, γ = {g:g}: {_fmt(first.loc[(n, g), 'hit_median'])} → "
            f"{_fmt(last.loc[(n, g), 'hit_median'])}"
            for n, g in first.index
        )
        + "): "
        f"with C = C_event = {c.C_event:g} its median "
        f"over random starts goes from {_fmt(ok['hit_median'].min())} to "
        f"{_fmt(ok['hit_median'].max())} steps over the admissible β, and from the extreme "
        f"start up to {_fmt(ok['hit_extreme_median'].max())} steps, while the median T1 "
        f"stays within {_fmt(ok['T1_median'].min())}–{_fmt(ok['T1_median'].max())}.",
        *(
            [
                "  The starts, not the dynamics, are the proposed cause (an explanation, not "
                "tested here): the closest admissible distance m to the vertex falls as β "
                "grows (below)."
            ]
            if hit_grows and c.T1_grows
            else []
        ),
    ]


def _C_bullet(c: SimpleNamespace) -> list[str]:
    """Whether the constant C is universal, and how it tracks M/m (check universal_C)."""
    ok, checks, ratio, tracks = c.ok, c.checks, c.ratio, c.tracks
    far = ok["M_over_m_extreme"] * ok["m_extreme"]
    m_slope = (
        float(np.polyfit(np.log(ok["beta"]), np.log(ok["m_extreme"]), 1)[0])
        if ok["beta"].nunique() > 1
        else float("nan")
    )
    worst = ok.loc[ok["C_hat_extreme"].idxmax()]
    worst_rnd = ok.loc[ok["C_hat_random"].idxmax()]
    C_grows = float(checks.loc["universal_C", "measured"]) > 1
    return [
        "- **C is "
        + (
            "not universal"
            if checks.loc["universal_C", "pass"] == "false"
            else "consistent with a universal C"
        )
        + "** (check `universal_C`): the smallest C for which P̂[event at T1] ≥ 1 − β^(-1/8) "
        + ("grows" if C_grows else "does not grow")
        + f" with β (by {float(checks.loc['universal_C', 'measured']):.3g}× at the least), "
        f"up to {_fmt(worst_rnd['C_hat_random'])} over random starts "
        f"({worst_rnd['polytope']}, γ = {worst_rnd['gamma']:g}, β = {worst_rnd['beta']:g}) "
        f"and {_fmt(worst['C_hat_extreme'])} from the extreme start "
        f"({worst['polytope']}, γ = {worst['gamma']:g}, β = {worst['beta']:g}). "
        + ("It equals" if tracks else "It does not equal")
        + f" M/m, the largest over the smallest initial distance to the vertex, within "
        f"{c.ratio_tol:g} (`ratio_tol`; extreme start: C/(M/m) = "
        f"{ratio.min():.3f}–{ratio.max():.3f})"
        + (
            ". Explanation (the hardmax step, not tested here): if each token contracts by "
            "(1 − γ) per step, at T1 = 1 the farthest token is at (1 − γ)M while Cτ = "
            "C(1 − γ)m, so the event needs C ≥ M/m"
            if tracks
            else ""
        )
        + ". The closest admissible distance to the vertex goes "
        f"{_fmt(ok['m_extreme'].max())} → {_fmt(ok['m_extreme'].min())} over the "
        f"admissible β (fitted exponent of β: {m_slope:.3f}; the erosion radius is "
        f"β^(-1/4)) while the farthest stays within {_fmt(far.min())}–{_fmt(far.max())}"
        + (
            ", so M/m grows over the tested β (that it is unbounded as β → ∞ follows "
            "from the erosion radius β^(-1/4) → 0, a mathematical remark)."
            if m_slope < 0
            else "."
        ),
    ]


def _correction_bullet(c: SimpleNamespace) -> list[str]:
    """The corrected statement with M in place of m (check universal_C/M_variant)."""
    ok = c.ok
    return [
        "- **Correction** (check `universal_C/M_variant`: "
        + {"true": "passes", "false": "FAILS"}.get(
            c.checks.loc["universal_C/M_variant", "pass"], "NA"
        )
        + "): with M = max_i |x_i^0 − v_σ(i)| in place of m in τ and T1, "
        "C = 1/(1 − γ) is compared: the smallest supported C over all admissible runs is "
        + "; ".join(
            f"{_fmt(g['C_max_hat'].max())} at γ = {gamma:g} (1/(1 − γ) = {1 / (1 - gamma):.3g})"
            for gamma, g in ok.groupby("gamma")
        )
        + f", and P̂[event at T1] = {ok['P_event_T1_max'].min():.2f}–"
        f"{ok['P_event_T1_max'].max():.2f} against the bound "
        f"{ok['bound'].min():.2f}–{ok['bound'].max():.2f}.",
    ]


def _probability_bullet(c: SimpleNamespace) -> list[str]:
    """The probability bound at T1, and whether the event is deterministic given the start."""
    ok, chains, ok_chains, C_event = c.ok, c.chains, c.ok_chains, c.C_event
    event = ok_chains["vertex_ok_at_T1"] & (ok_chains["C_at_T1"] <= C_event)
    per_start = event.groupby(
        [ok_chains[k] for k in ("polytope", "gamma", "beta", "start", "draw")]
    ).mean()
    per_start_01 = float(((per_start == 0) | (per_start == 1)).mean())
    return [
        f"- **The probability bound**: at admissible β the vertex tokens were within "
        f"β^(-1/4) at T1 in {chains.loc[chains['cones_ok'], 'vertex_ok_at_T1'].mean():.1%} "
        f"of all chains, and P̂[event at T1] with C = {C_event:g} is 0 or 1 for "
        f"{per_start_01:.0%} of the admissible starts"
        + (
            ": given the start, the event was deterministic in these data"
            + (", so the bound held exactly for the starts with C ≥ M/m" if c.tracks else "")
            if per_start_01 == 1
            else ": the event is random given the start"
        )
        + ". With C = "
        f"{C_event:g}, "
        f"P̂[event at T1] over random starts is {ok['P_event_T1'].min():.2f}–"
        f"{ok['P_event_T1'].max():.2f}.",
        "",
    ]


def _event_check(c: SimpleNamespace) -> list[str]:
    """The hitting times of the recorded paths against first_passage's ReachVertices."""
    same = _checks.paths_agree(c.chains)
    return [
        f"Check: the hitting times computed from the recorded paths agree with "
        f"`first_passage` and the package's `ReachVertices` event on {same.sum()} of "
        f"{same.size} chains.",
        "",
    ]


def _outside(c: SimpleNamespace) -> list[str]:
    """The polytopes outside the hypotheses, shown apart."""
    apart = c.apart
    if apart.empty:
        return []
    a_growth = (
        apart.sort_values("beta")
        .groupby(["polytope", "gamma"])["C_hat_extreme"]
        .agg(lambda col: col.iloc[-1] / col.iloc[0])
    )
    return [
        "## Outside the hypotheses (not counted)",
        "",
        f"{', '.join(sorted(apart['polytope'].unique()))}: over the β where the initial "
        f"condition exists the smallest supported C changes by a factor "
        f"{a_growth.min():.2f}–{a_growth.max():.2f}× (extreme start, up to "
        f"{_fmt(apart['C_hat_extreme'].max())}); with M, the smallest C is at most "
        f"{_fmt(apart['C_max_hat'].max())}. Tables below.",
        "",
    ]


def _tables(c: SimpleNamespace) -> list[str]:
    """One table per (polytope, γ), and the list of figures."""
    lines = []
    for (name, gamma), s in c.summary.groupby(["polytope", "gamma"], sort=True):
        tag = "" if name in c.good else " (outside the hypotheses)"
        lines += [f"### {name}, γ = {gamma:g}{tag}", "", _table(s), ""]
    lines += [
        "Figures: `hitting_time.png` (median hitting time against β with T1 dashed), "
        "`hitting_distribution.png` (its distribution per β), `probability_at_T1.png` "
        "(P̂ against 1 − β^(-1/8)), `smallest_C.png` (smallest supported C against β), "
        "`contraction.png` (D_t/M against the hardmax law (1 − γ)^t)."
    ]
    return lines


def report(out: Path) -> str:
    """Markdown report from the tables in ``out``: measured numbers beside Thm 5.2's, one
    renderer per section."""
    c = inputs(Path(out))
    sections = (
        _header,
        _T1_bullet,
        _hitting_bullet,
        _C_bullet,
        _correction_bullet,
        _probability_bullet,
        _event_check,
        _outside,
        _tables,
    )
    return "\n".join(line for section in sections for line in section(c))
