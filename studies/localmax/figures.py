"""Figures and report of the localmax study (reads only the tables written by run.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from metastab.plotting import canvas
from metastab.results import read_table
from metastab.studies.verdict import checks_config

FIGURE2 = ["emerging", "triangle", "square", "non-leader"]
TITLES = {
    "emerging": "emerging leader",
    "triangle": "triangle",
    "square": "square",
    "non-leader": "non-leader clusters",
}
DPI = 72
PANEL_DPI = 56


def _load(out: Path):
    summary, meta = read_table(out / "summary.csv")
    series = read_table(out / "series.parquet")[0]
    paths = read_table(out / "paths.parquet")[0]
    # the configuration recorded with checks.csv: the run's, with the floors declared since
    return summary, series, paths, meta["config"] | checks_config(out)


def _side_by_side_labels(cfg: dict) -> list[str]:
    """Rows of the side-by-side panels: softmax (increasing β), hardmax, localmax (increasing r),
    uniform averaging."""
    return (
        [f"softmax β={b:g}" for b in cfg["betas"]]
        + ["hardmax"]
        + [f"localmax r={r:g}" for r in cfg["r_values"]]
        + ["localmax r large"]
    )


def _draw(ax, frame: pd.DataFrame, step: int, color: str):
    """Tokens at ``step`` (dots; leaders, i ∈ N_i, ringed), their paths so far (lines) and the
    hull of the step."""
    from scipy.spatial import ConvexHull, QhullError

    for _, tok in frame[frame["step"] <= step].groupby("token"):
        ax.plot(tok["x"], tok["y"], color=color, lw=0.5, alpha=0.35)
    now = frame[frame["step"] == step]
    pts = now[["x", "y"]].to_numpy()
    try:
        h = ConvexHull(pts)
        ring = np.r_[h.vertices, h.vertices[:1]]
        ax.plot(pts[ring, 0], pts[ring, 1], color="0.6", lw=0.6)
    except QhullError:
        pass
    ax.scatter(pts[:, 0], pts[:, 1], s=9, color=color, zorder=3)
    lead = now["leader"].to_numpy(bool)
    ax.scatter(
        pts[lead, 0], pts[lead, 1], s=40, facecolors="none", edgecolors="k", lw=0.6, zorder=4
    )


def _panel_grid(paths, rows, configs, steps, name, out, row_titles, colors, dpi=PANEL_DPI):

    fig, axes = canvas(
        len(rows), len(steps), width=1.9 * len(steps), height=1.9 * len(rows), squeeze=False
    )
    for a, ((config, label), title) in enumerate(zip(zip(configs, rows), row_titles)):
        frame = paths[(paths["config"] == config) & (paths["label"] == label)]
        lo = frame[["x", "y"]].min().to_numpy()
        hi = frame[["x", "y"]].max().to_numpy()
        pad = 0.08 * (hi - lo).max()
        for b, step in enumerate(steps):
            ax = axes[a, b]
            _draw(ax, frame, step, colors[a % len(colors)])
            ax.set_xlim(lo[0] - pad, hi[0] + pad)
            ax.set_ylim(lo[1] - pad, hi[1] + pad)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            if a == 0:
                ax.set_title(f"step {step}", fontsize=9)
            if b == 0:
                ax.set_ylabel(title, fontsize=8)
    fig.savefig(out / name, dpi=dpi)


def figures(out: Path) -> None:
    """Draw the panels and time series of the localmax study from the tables in ``out``."""
    out = Path(out)
    summary, series, paths, cfg = _load(out)
    _panels(out, paths, cfg)
    styles = _styles(cfg)
    _hull_figure(out, summary, series, styles)
    _limit_figure(out, series, styles, float(cfg["gamma"]), int(cfg["series"]))
    _recovery_figure(out, summary)
    _quiescent_figure(out, summary, series, styles)


def _panels(out: Path, paths: pd.DataFrame, cfg: dict) -> None:
    """[AFZ] Figure 2 (the four configurations under hardmax, then under localmax) and (e), the
    dynamics side by side from one start: softmax (several β), hardmax, localmax (several r)."""
    steps = [int(s) for s in cfg["panel_steps"]]
    for label, name in (
        ("hardmax", "figure2_hardmax.png"),
        (f"localmax r={min(cfg['r_values']):g}", "figure2_localmax.png"),
    ):
        _panel_grid(
            paths,
            [label] * 4,
            FIGURE2,
            steps,
            name,
            out,
            [f"{TITLES[c]}\n{label}" for c in FIGURE2],
            ["C0", "C3", "C2", "C4"],
            dpi=90,
        )
    labels = _side_by_side_labels(cfg)
    colors = ["C1"] * len(cfg["betas"]) + ["k"] + ["C0"] * len(cfg["r_values"]) + ["C2"]
    for config in FIGURE2 + sorted(set(paths["config"]) - set(FIGURE2)):
        _panel_grid(
            paths,
            labels,
            [config] * len(labels),
            steps,
            f"panels_{config}.png",
            out,
            labels,
            colors,
        )


def _styles(cfg: dict) -> dict:
    """Line style of each dynamics in the time-series figures."""
    from matplotlib import colormaps

    styles = {"hardmax": dict(color="k", lw=1.6)}
    shades = colormaps["viridis"](np.linspace(0.0, 0.85, len(cfg["r_values"])))
    for r, c in zip(cfg["r_values"], shades):
        styles[f"localmax r={r:g}"] = dict(color=c, lw=1.1)
    for r in cfg["r_relative"]:
        styles[f"localmax relative r={r:g}"] = dict(color="C3", lw=1.0, ls="--")
    styles["localmax r large"] = dict(color="C2", lw=1.0, ls=":")
    betas = colormaps["autumn"](np.linspace(0.0, 0.7, len(cfg["betas"])))
    for b, c in zip(cfg["betas"], betas):
        styles[f"softmax β={b:g}"] = dict(color=c, lw=0.9, ls="-.")
    return styles


def _series_grid(out, series, styles, skip, draw, ylabels, title, name) -> None:
    """Two rows of panels, one column per Figure-2 configuration: ``draw(top, bottom, config,
    label, style, rows)`` for each dynamics of ``styles`` not ``skip(label)`` that has a series."""
    fig, axes = canvas(2, 4, width=15, height=6.5, sharex=True)
    for j, config in enumerate(FIGURE2):
        for label, style in styles.items():
            if skip(label):
                continue
            s = series[(series["config"] == config) & (series["label"] == label)]
            if s.empty:
                continue
            draw(axes[0, j], axes[1, j], config, label, style, s)
        axes[0, j].set_title(TITLES[config])
        axes[1, j].set_xlabel("step t")
    axes[0, 0].set_ylabel(ylabels[0])
    axes[1, 0].set_ylabel(ylabels[1])
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title)
    fig.savefig(out / name, dpi=DPI)


def _hull_figure(out: Path, summary: pd.DataFrame, series: pd.DataFrame, styles: dict) -> None:
    """(a) hull area and its distance to the limit area."""

    def draw(top, bottom, config, label, style, s):
        top.plot(s["step"], s["area"], label=label, **style)
        end = summary[(summary["config"] == config) & (summary["label"] == label)]
        gap = (s["area"] - float(end["area_end"].iloc[0])).clip(lower=1e-16)
        bottom.semilogy(s["step"], gap, **style)

    ylabels = ("area of conv{x_i^t}", "area(t) − area(∞)  (floored at 1e-16)")
    title = "(a) the hull shrinks monotonically and converges to a polytope"
    _series_grid(out, series, styles, lambda label: False, draw, ylabels, title, "hull.png")


def _limit_figure(
    out: Path, series: pd.DataFrame, styles: dict, gamma: float, horizon: int
) -> None:
    """(b) distance of the tokens to their limits, beside (1 − γ)^t."""
    fig, axes = canvas(1, 4, width=15, height=4, sharey=True)
    for j, config in enumerate(FIGURE2):
        ax = axes[j]
        for label, style in styles.items():
            if label.startswith("softmax"):
                continue
            s = series[(series["config"] == config) & (series["label"] == label)]
            if s.empty:
                continue
            ax.semilogy(s["step"], s["max_dist_limit"], label=label, **style)
            ax.semilogy(s["step"], s["min_dist_limit"], alpha=0.5, **{**style, "lw": 0.6})
        t = np.arange(horizon + 1)
        ax.semilogy(t, (1 - gamma) ** t, color="0.5", ls="--", lw=0.8, label="(1 − γ)^t")
        ax.set_title(TITLES[config])
        ax.set_xlabel("step t")
    axes[0].set_ylabel("|x_i^t − x_i^∞|: max (thick), min (thin)")
    axes[0].legend(fontsize=7)
    fig.suptitle("(b) distances to the limit (over the tokens that move) stay positive and decay")
    fig.savefig(out / "limit_distance.png", dpi=DPI)


def _recovery_figure(out: Path, summary: pd.DataFrame) -> None:
    """(c) recovery of hardmax as r_t → 0, and uniform averaging for r large."""
    fig, axes = canvas(1, 2, width=13, height=4.8)
    van = summary[summary["family"] == "vanishing"].copy()
    van["kind"] = van["label"].str.replace(r"r_t=[0-9.e-]+", "r_t=r0", regex=True)
    floor = 1e-17
    markers = {}
    for k, (kind, grp) in enumerate(van.groupby("kind")):
        markers[kind] = "osD^v"[k % 5]
        fig2 = grp["config"].isin(FIGURE2)
        med = grp.groupby("r")["dist_to_hardmax"].median()
        axes[0].plot(
            med.index,
            np.maximum(med.to_numpy(), floor),
            marker=markers[kind],
            ms=4,
            label=f"{kind} (median)",
        )
        axes[0].scatter(
            grp.loc[~fig2, "r"] * (1 + 0.04 * k),
            np.maximum(grp.loc[~fig2, "dist_to_hardmax"], floor),
            s=6,
            alpha=0.35,
        )
    const = summary[summary["family"] == "localmax"]
    med = const.groupby("r")["dist_to_hardmax"].median()
    axes[0].plot(med.index, med.to_numpy(), "k-", marker="x", label="constant r (median)")
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("r0 (schedules) or r (constant)")
    axes[0].set_ylabel(f"max_i |x_i^∞ − hardmax limit_i|  (0 drawn at {floor:g})")
    axes[0].set_title("r_t → 0 recovers the hardmax limit")
    axes[0].legend(fontsize=7)
    loc = summary[summary["family"].isin(["localmax", "localmax-large", "hardmax"])].copy()
    loc["r"] = loc["r"].fillna(0.0)
    for config, grp in loc.groupby("config"):
        grp = grp.sort_values("r")
        kw = (
            dict(lw=1.4, label=TITLES[config])
            if config in FIGURE2
            else dict(lw=0.5, alpha=0.3, color="0.4")
        )
        axes[1].plot(
            np.maximum(grp["r"], 1e-3), np.maximum(grp["dist_to_uniform"], 1e-17), marker=".", **kw
        )
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("r (hardmax drawn at 1e-3)")
    axes[1].set_ylabel("max over t ≤ 30 of |x^t − (x̄ + (1 − γ)^t (x^0 − x̄))|")
    axes[1].set_title("r large is uniform averaging (grey: random polygons)")
    axes[1].legend(fontsize=7)
    fig.suptitle("(c) from hardmax (r = 0) to uniform averaging (r → ∞)")
    fig.savefig(out / "recovery.png", dpi=DPI)


def _quiescent_figure(out: Path, summary: pd.DataFrame, series: pd.DataFrame, styles: dict) -> None:
    """(d) quiescent tokens: fraction quiescent and tokens whose neighbour set changed."""

    def draw(top, bottom, config, label, style, s):
        n = int(summary[(summary["config"] == config)]["n"].iloc[0])
        top.step(s["step"], s["quiescent"] / n, where="post", label=label, **style)
        bottom.step(s["step"], s["changed"], where="post", **style)

    def skip(label):
        return label.startswith("softmax") or label == "localmax r large"

    ylabels = ("fraction quiescent (N_i fixed from t on)", "tokens whose N_i changed at t")
    title = "(d) quiescent tokens: neighbour sets stop changing after finitely many steps"
    _series_grid(out, series, styles, skip, draw, ylabels, title, "quiescent.png")


# --------------------------------------------------------------------------- report


def _fmt(v, spec=".3g"):
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def _example(frame: pd.DataFrame) -> str:
    """'configuration, dynamics' of the first row of ``frame`` (empty string if none)."""
    if frame.empty:
        return ""
    r = frame.iloc[0]
    return f"{TITLES.get(r['config'], r['config'])}, {r['label']}"


def verdicts(summary: pd.DataFrame, cfg: dict) -> dict:
    """The pass/fail of (a)–(d) by the rules stated in the report (no tuning to the data)."""
    lm = summary[
        summary["family"].isin(["localmax", "localmax-relative", "localmax-large", "vanishing"])
    ]
    tol = float(cfg["roundoff"])
    return {
        "a": _nested_hulls(summary, lm, tol),
        "b": _no_arrival(summary, lm),
        "c": _hardmax_to_uniform(summary, tol),
        "d": _quiescent(lm),
    }


def _nested_hulls(summary: pd.DataFrame, lm: pd.DataFrame, tol: float) -> dict:
    """(a) nested hulls over the localmax runs ``lm``: the area never grows beyond rounding;
    settled runs have a limit hull."""
    scale = summary["area0"].clip(lower=1.0)
    grow = (summary["max_area_increase"] > tol * scale)[lm.index]
    return dict(
        holds=not grow.any(),
        runs=len(lm),
        grew=int(grow.sum()),
        unsettled=int((~lm["converged"]).sum()),
    )


def _no_arrival(summary: pd.DataFrame, lm: pd.DataFrame) -> dict:
    """(b) r > 0, over the localmax runs ``lm``: the configuration never reaches its limit in
    finite time and the largest distance decays geometrically; single tokens are counted apart."""
    settled = lm[lm["converged"] & (lm["family"] != "localmax-large")]
    const = summary[summary["family"].isin(["localmax", "localmax-relative"])]
    const = const[const["converged"]]
    arrivals_const = int(const["tokens_at_limit"].sum())
    van = summary[(summary["family"] == "vanishing") & summary["converged"]]
    config_arrivals = int(settled["config_at_limit"].astype(bool).sum())
    rates = settled["decay_rate"].dropna()
    return dict(
        holds=config_arrivals == 0 and bool((rates < 1).all()),
        fitted=len(rates),
        runs=len(settled),
        const_runs=len(const),
        arrivals=arrivals_const,
        const_runs_with_arrivals=int((const["tokens_at_limit"] > 0).sum()),
        rate_min=float(rates.min()),
        rate_max=float(rates.max()),
        rate_median=float(rates.median()),
        vanishing_arrivals=int(van["tokens_at_limit"].sum()),
        vanishing_runs_with_arrivals=int((van["tokens_at_limit"] > 0).sum()),
        vanishing_runs=len(van),
        config_arrivals=config_arrivals,
        slowest=_example(
            settled.dropna(subset=["decay_rate"]).sort_values("decay_rate", ascending=False)
        ),
        example=_example(const[const["tokens_at_limit"] > 0]),
    )


def _hardmax_to_uniform(summary: pd.DataFrame, tol: float) -> dict:
    """(c) r_t below the hardmax score gaps gives the hardmax limit exactly; the distance to it
    shrinks with r0; r large is uniform averaging to rounding."""
    vv = summary[summary["family"] == "vanishing"]
    below = vv[vv["below_gaps"].astype(bool)]
    exact = bool((below["dist_to_hardmax"] <= tol).all())
    smallest = vv[vv["r"] == vv["r"].min()]
    largest = vv[vv["r"] == vv["r"].max()]
    large = summary[summary["family"] == "localmax-large"]
    uniform = float(large["dist_to_uniform"].max())
    # r at least the initial score spread: every token is everyone's neighbour from the start
    # (the hull only shrinks, so the spread too): exactly uniform averaging
    wide = summary[
        summary["family"].isin(["localmax", "localmax-large"])
        & (summary["r"] >= summary["score_spread"])
    ]
    narrow = summary[(summary["family"] == "localmax") & (summary["r"] < summary["score_spread"])]
    wide_max = float(wide["dist_to_uniform"].max())
    shrink = float(smallest["dist_to_hardmax"].median()) <= float(
        largest["dist_to_hardmax"].median()
    )
    return dict(
        holds=exact and shrink and uniform <= tol and wide_max <= tol,
        shrink=shrink,
        below=len(below),
        wide=len(wide),
        wide_max=wide_max,
        narrow=len(narrow),
        narrow_min=float(narrow["dist_to_uniform"].min()),
        exact=exact,
        uniform=uniform,
        runs=len(vv),
        median_smallest=float(smallest["dist_to_hardmax"].median()),
        median_largest=float(largest["dist_to_hardmax"].median()),
        exact_fraction_smallest=float((smallest["dist_to_hardmax"] <= tol).mean()),
    )


def _quiescent(lm: pd.DataFrame) -> dict:
    """(d) every settled localmax run of ``lm`` has all tokens quiescent before its
    resolution step."""
    q = lm[lm["converged"]]
    quiet = q["quiescent_from"] < q["resolution_step"]
    return dict(
        holds=bool(quiet.all()),
        runs=len(q),
        quiet=int(quiet.sum()),
        median=float(q["quiescent_from"].median()),
        maximum=float(q["quiescent_from"].max()),
    )


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
    for label in _side_by_side_labels(cfg):
        sel = fig2[fig2["label"] == label].set_index("config")["area_steps"]
        parts.append(f"{label} {float((sel / hm.loc[sel.index]).median()):.2f}")
    return ", ".join(parts)


def _inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    summary, _, _, cfg = _load(out)
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
