"""Figures of the localmax study (reads only the tables written by run.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.plotting import canvas
from metastab.results import read_table
from metastab.studies.verdict import checks_config

from .checks import TITLES
from .config import Config

FIGURE2 = ["emerging", "triangle", "square", "non-leader"]
DPI = 72
PANEL_DPI = 56


def load(out: Path):
    summary, _ = read_table(out / "summary.csv")
    series = read_table(out / "series.parquet")[0]
    paths = read_table(out / "paths.parquet")[0]
    # the configuration recorded with checks.csv: the run's, with the floors declared since
    return summary, series, paths, Config.from_dict(checks_config(out))


def side_by_side_labels(cfg: Config) -> list[str]:
    """Rows of the side-by-side panels: softmax (increasing β), hardmax, localmax (increasing r),
    uniform averaging."""
    return (
        [f"softmax β={b:g}" for b in cfg.betas]
        + ["hardmax"]
        + [f"localmax r={r:g}" for r in cfg.r_values]
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
    summary, series, paths, cfg = load(out)
    _panels(out, paths, cfg)
    styles = _styles(cfg)
    _hull_figure(out, summary, series, styles)
    _limit_figure(out, series, styles, float(cfg.gamma), int(cfg.series))
    _recovery_figure(out, summary)
    _quiescent_figure(out, summary, series, styles)


def _panels(out: Path, paths: pd.DataFrame, cfg: Config) -> None:
    """[AFZ] Figure 2 (the four configurations under hardmax, then under localmax) and (e), the
    dynamics side by side from one start: softmax (several β), hardmax, localmax (several r)."""
    steps = [int(s) for s in cfg.panel_steps]
    for label, name in (
        ("hardmax", "figure2_hardmax.png"),
        (f"localmax r={min(cfg.r_values):g}", "figure2_localmax.png"),
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
    labels = side_by_side_labels(cfg)
    colors = ["C1"] * len(cfg.betas) + ["k"] + ["C0"] * len(cfg.r_values) + ["C2"]
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


def _styles(cfg: Config) -> dict:
    """Line style of each dynamics in the time-series figures."""
    from matplotlib import colormaps

    styles = {"hardmax": dict(color="k", lw=1.6)}
    shades = colormaps["viridis"](np.linspace(0.0, 0.85, len(cfg.r_values)))
    for r, c in zip(cfg.r_values, shades):
        styles[f"localmax r={r:g}"] = dict(color=c, lw=1.1)
    for r in cfg.r_relative:
        styles[f"localmax relative r={r:g}"] = dict(color="C3", lw=1.0, ls="--")
    styles["localmax r large"] = dict(color="C2", lw=1.0, ls=":")
    betas = colormaps["autumn"](np.linspace(0.0, 0.7, len(cfg.betas)))
    for b, c in zip(cfg.betas, betas):
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
