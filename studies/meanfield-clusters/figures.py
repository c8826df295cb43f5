"""Figures of the meanfield-clusters study, reading only its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab import theory
from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config

from . import checks as _checks


def counts_figure(out: Path) -> None:
    """Median cluster count against β per N, beside k*; and against time at the largest N."""
    cfg = checks_config(out)
    fraction, multiple = float(cfg["min_fraction"]), float(cfg["claim_multiple"])
    table = _checks.medians(out, fraction, multiple)
    fig, axes = axes_grid(1, 2, width=11, height=4.8)
    ax = axes[0, 0]
    ns = sorted(table["tokens"].unique())
    for i, (color, n) in enumerate(zip(palette(len(ns)), ns)):
        g = table[table["tokens"] == n]
        x = g["beta"] * (1 + 0.03 * (i - len(ns) / 2))  # side by side on the log axis
        ax.errorbar(
            x,
            g["median"],
            yerr=[g["median"] - g["low"], g["high"] - g["median"]],
            fmt="o",
            capsize=3,
            color=color,
            label=f"N = {n}",
        )
    grid = np.geomspace(table["beta"].min() * 0.8, table["beta"].max() * 1.25, 400)
    ax.step(
        grid,
        [theory.meanfield_clusters(b) for b in grid],
        where="post",
        color="k",
        lw=1,
        label="k* = argmax k² I_k(β)",
    )
    ax.set_xscale("log")
    ax.set(
        xlabel="β",
        ylabel="clusters (median, range)",
        title=f"t = {multiple:g} t_form, clusters ≥ {fraction:g} N tokens",
    )
    ax.legend(fontsize="small")
    ax = axes[0, 1]
    frame = read_table(out / "counts.csv")[0]
    top = frame[frame["tokens"] == frame["tokens"].max()]
    col = f"count_{fraction:g}"
    betas = sorted(top["beta"].unique())
    for color, beta in zip(palette(len(betas)), betas):
        g = top[top["beta"] == beta].groupby("multiple")[col].median()
        ax.plot(g.index, g, "o-", color=color, label=f"β = {beta:g}")
        ax.axhline(top.loc[top["beta"] == beta, "k_star"].iloc[0], color=color, ls=":", lw=0.8)
    ax.set(
        xlabel="t / t_form",
        ylabel="clusters (median)",
        title=f"N = {int(top['tokens'].max())} (dotted: k*)",
    )
    ax.legend(fontsize="small", ncols=2)
    fig.savefig(out / "cluster_counts.png", dpi=120)


def figures(out: Path) -> None:
    draw(out, counts_figure)
