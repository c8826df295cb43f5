"""The report of the localmax study: its text, from the tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from .checks import TITLES, verdicts
from .figures import FIGURE2, load, side_by_side_labels

# --------------------------------------------------------------------------- report


def _fmt(v, spec=".3g"):
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def _recovery_table(summary: pd.DataFrame, tol: float) -> str:
    """Markdown table: schedule kind × r0 -> median distance to the hardmax limit (exact %)."""
    van = summary[summary["family"] == "vanishing"].copy()
    van["kind"] = van["label"].str.replace(r"r_t=[0-9.e-]+", "r_t=r0", regex=True)
    r0s = sorted(van["r"].unique(), reverse=True)
    lines = [
        "| schedule | " + " | ".join(f"r0 = {r:g}" for r in r0s) + " |",
        "|---|" + "---|" * len(r0s),
    ]
    for kind, grp in van.groupby("kind"):
        cells = []
        for r in r0s:
            d = grp.loc[grp["r"] == r, "dist_to_hardmax"]
            cells.append(f"{d.median():.1e} ({100 * (d <= tol).mean():.0f}%)")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _area_ratios(fig2: pd.DataFrame, cfg: dict) -> str:
    """'label x.xx, ...': median over configurations of area(t=30) / hardmax's area(t=30)."""
    hm = fig2[fig2["label"] == "hardmax"].set_index("config")["area_steps"]
    parts = []
    for label in side_by_side_labels(cfg):
        sel = fig2[fig2["label"] == label].set_index("config")["area_steps"]
        parts.append(f"{label} {float((sel / hm.loc[sel.index]).median()):.2f}")
    return ", ".join(parts)


def _inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    summary, _, _, cfg = load(out)
    v = verdicts(summary, cfg)
    tol, res = float(cfg["roundoff"]), float(cfg["resolution"])
    gamma = float(cfg["gamma"])
    n_poly = summary.loc[~summary["config"].isin(FIGURE2), "config"].nunique()
    fig2 = summary[summary["config"].isin(FIGURE2)]
    return SimpleNamespace(**{k: v for k, v in locals().items() if k != "out"})


def _header(c: SimpleNamespace) -> list[str]:
    """Title, the model, the runs and the figures."""
    cfg, tol, res, gamma, n_poly = c.cfg, c.tol, c.res, c.gamma, c.n_poly
    return [
        "# Localmax dynamics: hull, limits, quiescence, from hardmax to uniform averaging",
        "",
        "Model (science.md §1; this package's reading of the abstract of [LM], not a verified "
        "transcription): N_i^t = {j : <x_i, x_j> ≥ max_k <x_i, x_k> − r_t}, "
        "x_i ← x_i + γ (mean_{j ∈ N_i^t} x_j − x_i), B = I, "
        f"γ = {gamma:.4f} ([AFZ]'s α = 0.5). r = 0 is [AFZ]'s hardmax (bit for bit, tested), "
        "r → ∞ uniform averaging. The four configurations of [AFZ] Figure 2 were constructed "
        "to show the four behaviours (their exact coordinates are not available here), plus "
        f"{n_poly} random polygons (`random_polygon`, every vertex owns its cell) completed by "
        f"uniform inner tokens. Each run takes {cfg['horizon']} steps; the state at step "
        f"{cfg['horizon']} is the limit x^∞ (a run is *settled* when its last step moved no "
        f"token by more than {tol:g} relative); neighbour sets are read up to the *resolution "
        f"step*, where every token is within {res:g} (relative) of its limit (beyond it a token "
        "and the point it converges to tie in floating point). The simulations run on one "
        "numba thread (many tiny runs; results do not depend on the thread count).",
        "",
        "Figures: `figure2_hardmax.png` and `figure2_localmax.png` (the [AFZ] layout, steps "
        f"{', '.join(str(s) for s in cfg['panel_steps'])}), `panels_<config>.png` (e), "
        "`hull.png` (a), `limit_distance.png` (b), `recovery.png` (c), `quiescent.png` (d).",
        "",
    ]


def _figure2_table(c: SimpleNamespace) -> list[str]:
    """One row per Figure-2 configuration and dynamics."""
    fig2 = c.fig2
    text = [
        "## Figure-2 configurations",
        "",
        "| configuration | dynamics | area t=0 | area t=30 | area ∞ | hull vertices t=30 / ∞ "
        "| clusters ∞ | leaders t=0 / t=30 | quiescent from | decay rate | "
        "dist. to hardmax limit | settled |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in fig2[fig2["family"] != "vanishing"].iterrows():
        lead = (
            f"{_fmt(r['leaders0'], '.0f')} / {_fmt(r['leaders_steps'], '.0f')}"
            if not np.isnan(r["leaders0"])
            else "—"
        )
        text.append(
            f"| {TITLES[r['config']]} | {r['label']} | {r['area0']:.4f} | "
            f"{r['area_steps']:.4f} | {r['area_end']:.4f} | {r['hull_vertices_steps']} / "
            f"{r['hull_vertices_end']} | {r['clusters_end']} | {lead} | "
            f"{_fmt(r['quiescent_from'], '.0f')} | {_fmt(r['decay_rate'], '.3f')} | "
            f"{r['dist_to_hardmax']:.2e} | {'yes' if r['converged'] else 'no'} |"
        )
    text.append("")
    return text


def _hull(c: SimpleNamespace) -> list[str]:
    """(a) the hull converges to a polytope."""
    a, tol, cfg = c.v["a"], c.tol, c.cfg
    return [
        "## (a) The hull converges to a polytope",
        "",
        "Rule: over every localmax run (constant, relative, large and vanishing r), the hull "
        f"area never increases by more than {tol:g} (relative), i.e. the hulls are nested, "
        "and "
        "every token converges, so the hull converges to the hull of the finitely many "
        "limit points.",
        "",
        f"Measured: {a['runs']} runs, {a['grew']} with a growing area; {a['unsettled']} "
        f"not settled within {cfg['horizon']} steps (slow drifts: see below). "
        f"**(a) {'holds' if a['holds'] else 'fails'}.** *Explanation, not tested:* the hull "
        "vertex count at finite t counts every token of a limit vertex's cluster separately "
        "(clusters never merge "
        "in finite time, see (b)), so it exceeds the limit count until the end.",
        "",
    ]


def _limits(c: SimpleNamespace) -> list[str]:
    """(b) no finite-time convergence for r > 0."""
    b, res, gamma = c.v["b"], c.res, c.gamma
    example = f" (e.g. {b['example']})" if b["example"] else ""
    stopped = b["arrivals"] + b["vanishing_arrivals"] > 0
    return [
        "## (b) No finite-time convergence for r > 0",
        "",
        "Rule: in every settled run with r > 0 (constant additive and relative margins, "
        "and the vanishing schedules, which are > 0 at every step), the configuration never "
        "reaches its limit at a finite step (no jump of the largest distance to 0 from "
        f"above {res:g}), and the largest distance decays geometrically (rate < 1, fitted "
        f"where it lies between 1e-3 and {res:g} relative).",
        "",
        f"Measured over {b['runs']} settled runs: the configuration reaches its limit in "
        f"{b['config_arrivals']}; fitted asymptotic rates {b['rate_min']:.3f}–"
        f"{b['rate_max']:.3f} per step, median {b['rate_median']:.3f} "
        f"({b['fitted']} fits; 1 − γ = {1 - gamma:.3f}; explanation, not tested: slower "
        "where the members of a cluster see only part of it; slowest: "
        f"{b['slowest']}). **(b) {'holds' if b['holds'] else 'fails'} "
        "for the configuration.** Single tokens "
        + (
            "stop exactly at their limit before the end"
            if stopped
            else "never stop exactly at their limit before the end"
        )
        + " (explanation, not tested: a token whose neighbour set becomes {i} alone, an "
        "isolated leader whose score beats every other by more than r_t, never moves "
        "again, as hardmax's emerging leader does at step 1). Constant r: "
        f"{b['arrivals']} such token(s) in "
        f"{b['const_runs_with_arrivals']} "
        f"of {b['const_runs']} settled runs"
        f"{example}; "
        f"vanishing r_t: {b['vanishing_arrivals']} token(s) in "
        f"{b['vanishing_runs_with_arrivals']} of {b['vanishing_runs']} settled runs. So "
        '"no finite-time convergence" '
        + (
            "fails"
            if not b["holds"]
            else "holds for the configuration, not token by token"
            if stopped
            else "holds for the configuration and token by token"
        )
        + ".",
        "",
    ]


def _recovery(c: SimpleNamespace) -> list[str]:
    """(c) r_t → 0 recovers hardmax; r large is uniform averaging."""
    v, tol, cfg = c.v["c"], c.tol, c.cfg
    return [
        "## (c) r_t → 0 recovers hardmax; r large is uniform averaging",
        "",
        "Rule: a vanishing schedule that stays below the hardmax path's score gaps "
        "(r_t < g_t = min_i (max_j s_ij − next lower score) for every t up to the resolution "
        "step) produces exactly the hardmax neighbour sets, hence the hardmax limit (to "
        f"{tol:g}); over all schedules the median distance to the hardmax limit is smaller at "
        "the smallest r0 than at the largest; r = "
        f"{cfg['r_large']:g}, and any r at least the initial score spread, follows "
        f"x̄ + (1 − γ)^t (x^0 − x̄) to {tol:g}.",
        "",
        "Median distance of the limit to the hardmax limit (fraction exactly equal, to "
        f"{tol:g}), over all configurations:",
        "",
        _recovery_table(c.summary, tol),
        "",
        f"Measured: {v['below']} of {v['runs']} schedule runs stay below the gaps, and all "
        f"of them end at the hardmax limit: {'yes' if v['exact'] else 'no'}. Median "
        "distance to the hardmax "
        f"limit {v['median_largest']:.2e} at r0 = {max(cfg['r0_values']):g} and "
        f"{v['median_smallest']:.2e} at r0 = {min(cfg['r0_values']):g} "
        f"({100 * v['exact_fraction_smallest']:.0f}% exact there): the median distance "
        + ("shrinks" if v["shrink"] else "does not shrink")
        + " from the largest r0 to the smallest (the table; `recovery.png`). Explanation, "
        "not tested: schedules decaying more slowly than the tokens converge (q > 1 − γ, or "
        "r0/(1 + t)) eventually exceed the shrinking gap between a leader and its "
        "followers, merge them and move the leader, so their limit differs from "
        "hardmax's. Uniform averaging for r large: largest deviation "
        f"{v['uniform']:.1e}; over the {v['wide']} constant-r runs with r at least the "
        "initial score spread max_ij s_ij − min_ij s_ij (every token is everyone's "
        f"neighbour from the start), {v['wide_max']:.1e}; below the spread, the "
        f"{v['narrow']} runs deviate from uniform averaging by {v['narrow_min']:.2g} at "
        f"least. **(c) {'holds' if v['holds'] else 'fails'}**"
        + (
            " (exactly for the runs below the score gaps; the others approach the hardmax "
            "limit only as r0 decreases)."
            if v["exact"] and v["shrink"] and v["exact_fraction_smallest"] < 1
            else "."
        ),
        "",
    ]


def _quiescence(c: SimpleNamespace) -> list[str]:
    """(d) quiescent tokens."""
    d = c.v["d"]
    return [
        "## (d) Quiescent tokens",
        "",
        "Rule: in every settled localmax run, every token's neighbour set stops changing "
        "(is quiescent) before the resolution step.",
        "",
        f"Measured: {d['quiet']} of {d['runs']} runs; the last change happens at step "
        f"{d['median']:.0f} (median), {d['maximum']:.0f} at most. "
        f"**(d) {'holds' if d['holds'] else 'fails'}.** *Explanation, not tested:* "
        "for r > 0 a follower that comes "
        "within r (in score) of its leader adds itself and its cluster to its neighbour "
        "set, so at finite r nearly every token ends as a leader of itself (leaders at "
        "t = 30 in the table), unlike hardmax.",
        "",
    ]


def _side_by_side(c: SimpleNamespace) -> list[str]:
    """(e) softmax, localmax and hardmax from the same start."""
    cfg = c.cfg
    return [
        "## (e) Softmax, localmax, hardmax side by side",
        "",
        "`panels_<config>.png`: rows are SA_β (deterministic softmax layer) at β = "
        f"{', '.join(f'{b:g}' for b in cfg['betas'])}, hardmax, localmax at r = "
        f"{', '.join(f'{r:g}' for r in cfg['r_values'])} and r large, from the same start. "
        "Area of the hull at t = 30 as a fraction of hardmax's (median over the four "
        "configurations): " + _area_ratios(c.fig2, cfg) + ".",
        "",
    ]


def _random_polygons(c: SimpleNamespace) -> list[str]:
    """Medians over the random polygons."""
    summary, n_poly = c.summary, c.n_poly
    rows = summary[~summary["config"].isin(FIGURE2) & (summary["family"] != "vanishing")]
    agg = rows.groupby("label").agg(
        area=("area_end", "median"),
        area0=("area0", "median"),
        clusters=("clusters_end", "median"),
        dist=("dist_to_hardmax", "median"),
        settled=("converged", "mean"),
        rate=("decay_rate", "median"),
    )
    text = [
        f"Random polygons ({n_poly}), medians:",
        "",
        "| dynamics | area t=0 | area ∞ | clusters ∞ | dist. to hardmax limit | "
        "decay rate | settled |",
        "|---|---|---|---|---|---|---|",
    ]
    order = {label: k for k, label in enumerate(rows["label"].unique())}
    agg = agg.sort_index(key=lambda idx: idx.map(order))
    for label, r in agg.iterrows():
        text.append(
            f"| {label} | {r['area0']:.3f} | {r['area']:.3f} | {r['clusters']:.0f} | "
            f"{r['dist']:.2e} | {r['rate']:.3f} | {100 * r['settled']:.0f}% |"
        )
    return text


def report(out: Path) -> str:
    """Markdown report of the localmax study from the tables in ``out``, one renderer per
    section."""
    c = _inputs(Path(out))
    sections = (
        _header,
        _figure2_table,
        _hull,
        _limits,
        _recovery,
        _quiescence,
        _side_by_side,
        _random_polygons,
    )
    return "\n".join(line for section in sections for line in section(c)) + "\n"
