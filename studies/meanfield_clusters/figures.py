"""Figures of the meanfield-clusters study, reading only its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab import theory
from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config

from . import checks as _checks
from .config import Config


def counts_figure(out: Path) -> None:
    """Mean cluster count (with its interval) against β per N, beside k*; and against time at
    the largest N."""
    cfg = Config.from_dict(checks_config(out))
    fraction, multiple = float(cfg.min_fraction), float(cfg.claim_multiple)
    level = float(cfg.confidence_level)
    table = _checks.summary(out, fraction, multiple, level)
    fig, axes = axes_grid(1, 2, width=11, height=4.8)
    ax = axes[0, 0]
    ns = sorted(table["tokens"].unique())
    for i, (color, n) in enumerate(zip(palette(len(ns)), ns)):
        g = table[table["tokens"] == n]
        x = g["beta"] * (1 + 0.03 * (i - len(ns) / 2))  # side by side on the log axis
        ax.errorbar(
            x,
            g["mean"],
            yerr=[g["mean"] - g["low"], g["high"] - g["mean"]],
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
        ylabel=f"clusters (mean, {level:g} interval)",
        title=f"t = {multiple:g} t_form, clusters ≥ {fraction:g} N tokens",
    )
    ax.legend(fontsize="small")
    ax = axes[0, 1]
    frame = read_table(out / "counts.csv")[0]
    n_max = int(frame["tokens"].max())
    times = [
        _checks.summary(out, fraction, float(m), level).assign(multiple=float(m))
        for m in sorted(frame["multiple"].unique())
    ]
    over = pd.concat(times)
    over = over[over["tokens"] == n_max]
    for color, (beta, g) in zip(palette(over["beta"].nunique()), over.groupby("beta")):
        ax.errorbar(
            g["multiple"],
            g["mean"],
            yerr=[g["mean"] - g["low"], g["high"] - g["mean"]],
            fmt="o-",
            capsize=2,
            color=color,
            label=f"β = {beta:g}",
        )
        ax.axhline(g["k_star"].iloc[0], color=color, ls=":", lw=0.8)
    ax.axvline(multiple, color="0.5", lw=0.8)
    ax.set(
        xlabel="t / t_form (grey: the claim's reading time)",
        ylabel=f"clusters (mean, {level:g} interval)",
        title=f"N = {n_max} (dotted: k*)",
    )
    ax.legend(fontsize="small", ncols=2)
    fig.savefig(out / "cluster_counts.png", dpi=120)


def figures(out: Path) -> None:
    draw(out, counts_figure)
