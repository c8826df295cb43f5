"""Figures of the phase-diagram study (GLPR Fig. 3 and 4), reading only its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config

from . import checks as checks_module
from .config import Config


def load(out: Path):
    diagram, _ = read_table(out / "diagram.parquet")
    boundary = read_table(out / "boundary.csv")[0]
    circle = read_table(out / "circle.csv")[0]
    return diagram, boundary, circle, Config.from_dict(checks_config(out))


def diagram_figure(out: Path) -> None:
    """The probability that pair (1, 2) is clustered over (t, β), one panel per d, with Γ of
    (6.9) (white) and the post-LN layer's curve (dashed)."""
    diagram, boundary, _, cfg = load(out)
    ds = sorted(diagram["d"].unique())
    cols = min(3, len(ds))
    rows = (len(ds) + cols - 1) // cols
    fig, axes = axes_grid(rows, cols, width=4.6 * cols, height=3.8 * rows)
    betas = np.array(sorted(diagram["beta"].unique()))
    mid = (betas[1:] + betas[:-1]) / 2 if len(betas) > 1 else np.array([])
    first = betas[0] - (mid[0] - betas[0] if len(mid) else 0.5)
    last = betas[-1] + (betas[-1] - mid[-1] if len(mid) else 0.5)
    edges = np.concatenate([[first], mid, [last]])  # cells centred between grid β
    mesh = None
    for ax, d in zip(axes.ravel(), ds):
        grid = diagram[diagram["d"] == d].pivot(index="beta", columns="t", values="pair_fraction")
        t = grid.columns.to_numpy(float)
        t_edges = np.concatenate([t - (t[1] - t[0]) / 2, [t[-1] + (t[1] - t[0]) / 2]])
        mesh = ax.pcolormesh(t_edges, edges, grid.to_numpy(), vmin=0, vmax=1, cmap="viridis")
        inside = boundary[boundary["t_star"] <= t[-1]]
        ax.plot(inside["t_star"], inside["beta"], color="w", lw=2, label="Γ of (6.9)")
        ax.plot(
            boundary["t_star_layer"],
            boundary["beta"],
            "--",
            color="C1",
            lw=1.5,
            label="post-LN t*_dt",
        )
        ax.set_xlim(t_edges[0], t_edges[-1])
        ax.set_ylim(edges[0], edges[-1])
        ax.set_title(f"d = {d}", fontsize="medium")
        ax.set_xlabel("t")
        ax.set_ylabel("β")
    for ax in axes.ravel()[len(ds) :]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize="small", loc="lower right")
    if mesh is not None:
        fig.colorbar(
            mesh,
            ax=axes.ravel().tolist(),
            label=f"P(<x_1, x_2> ≥ 1 − {cfg.delta:g}) (mean pair fraction)",
        )
    fig.savefig(out / "diagram.png", dpi=110)


def mismatch_figure(out: Path) -> None:
    """(a) The fraction of (t, β) cells on the wrong side of Γ (and of the layer's curve) against
    d, at the level and the moved levels; (b) at the largest d, the transition time over t*(β)
    with its interval, and the tolerance."""
    diagram, boundary, _, cfg = load(out)
    levels = [float(cfg.level), *map(float, cfg.levels_moved)]
    fig, axes = axes_grid(1, 2, width=12, height=4.6)
    ax = axes[0, 0]
    for colour, level in zip(palette(len(levels)), levels):
        for column, style, name in (
            ("t_star", "o-", "Γ of (6.9)"),
            ("t_star_layer", "s--", "post-LN t*_dt"),
        ):
            m = checks_module.mismatch(diagram, boundary, level, column)
            ax.plot(m.index, m.to_numpy(), style, color=colour, label=f"level {level:g}, {name}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel("fraction of (t, β) cells on the wrong side")
    ax.legend(fontsize="x-small", frameon=False, ncols=2)
    ax = axes[0, 1]
    d_max = int(diagram["d"].max())
    times = checks_module.transitions(
        diagram[diagram["d"] == d_max], float(cfg.level), float(cfg.checks.transition_z)
    )
    curve = boundary.set_index("beta")
    for colour, (column, name) in zip(
        palette(2), (("t_star", "Γ of (6.9)"), ("t_star_layer", "post-LN t*_dt"))
    ):
        m = checks_module.time_misses(times, curve[column].where(curve[column] <= cfg.t_max))
        ax.errorbar(
            m["beta"],
            m["ratio"],
            yerr=[m["ratio"] - m["ratio_low"], m["ratio_high"] - m["ratio"]],
            fmt="o",
            color=colour,
            capsize=3,
            label=f"against {name}",
        )
    tol = float(cfg.checks.time_tolerance)
    ax.axhspan(1 - tol, 1 + tol, color="0.9", label="tolerance")
    ax.axhline(1, color="k", lw=0.8)
    ax.set_xlabel("β")
    ax.set_ylabel(f"transition time / curve, d = {d_max}")
    ax.legend(fontsize="x-small", frameon=False)
    fig.savefig(out / "mismatch.png", dpi=110)


def circle_figure(out: Path) -> None:
    """d = 2: the distribution of the cluster count at the published times, per β."""
    _, _, circle, cfg = load(out)
    delta = float(cfg.delta)
    main = circle[np.isclose(circle["delta"], delta)]
    betas = sorted(main["beta"].unique())
    fig, axes = axes_grid(1, len(betas), width=5 * len(betas), height=4.2)
    times = sorted(main["t"].unique())
    width = 0.8 / len(times)
    for ax, beta in zip(axes[0], betas):
        g = main[main["beta"] == beta]
        for i, (colour, t) in enumerate(zip(palette(len(times)), times)):
            h = g[g["t"] == t]
            ax.bar(
                h["clusters"] + (i - (len(times) - 1) / 2) * width,
                h["starts"] / h["total"],
                width,
                color=colour,
                label=f"t = {t:g}",
            )
        ax.axvline(int(g["published"].iloc[0]), color="k", ls=":", label="published")
        ax.set_xticks(sorted(g["clusters"].unique()))
        ax.set_title(f"β = {beta:g}, n = {cfg.n}, d = 2", fontsize="medium")
        ax.set_xlabel(f"number of clusters (δ = {delta:g})")
        ax.set_ylabel(f"fraction of {int(g['total'].iloc[0])} starts")
        ax.legend(fontsize="small", frameon=False)
    fig.savefig(out / "circle.png", dpi=110)


def figures(out: Path) -> None:
    """Draw every figure of the study into ``out``."""
    draw(out, diagram_figure, mismatch_figure, circle_figure)
