"""Figures of the normalisation study, reading only its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, legend_below, palette


def initial_figure(out: Path) -> None:
    """γ̇(0) against β per scheme (dots measured, lines the paper's), one panel per n."""
    initial = read_table(out / "initial.csv")[0]
    ns = sorted(initial["n"].unique())
    schemes = list(dict.fromkeys(initial["scheme"]))
    fig, axes = axes_grid(1, len(ns), width=5.2 * len(ns), height=4.6)
    for ax, n in zip(axes[0], ns):
        for color, scheme in zip(palette(len(schemes)), schemes):
            g = initial[(initial["scheme"] == scheme) & (initial["n"] == n)]
            ax.plot(g["beta"], g["predicted"], "-", color=color, lw=1)
            ax.plot(g["beta"], g["slope"], "o", color=color, label=scheme, ms=5)
        ax.set(xlabel="β", ylabel="γ̇(0)", title=f"orthogonal start, n = {n}", yscale="log")
    legend_below(fig, axes)
    fig.savefig(out / "initial.png", dpi=120, bbox_inches="tight")


def collapse_figure(out: Path) -> None:
    """Var(t) of one cluster per scheme (log-log), and the mean radius."""
    collapse = read_table(out / "collapse.csv")[0]
    schemes = list(dict.fromkeys(collapse["scheme"]))
    fig, axes = axes_grid(1, 2, width=11, height=4.6)
    for color, scheme in zip(palette(len(schemes)), schemes):
        g = collapse[(collapse["scheme"] == scheme) & (collapse["t"] > 0)]
        axes[0, 0].plot(g["t"], np.maximum(g["var"], 1e-40), color=color, label=scheme)
        axes[0, 1].plot(g["t"], g["radius"], color=color, label=scheme)
    axes[0, 0].set(xlabel="t", ylabel="Var(t)", xscale="log", yscale="log",
                   title="variance of the directions in a cluster")  # fmt: skip
    axes[0, 1].set(xlabel="t", ylabel="mean radius", title="radius (pre-LN, Mix-LN, peri-LN)")
    legend_below(fig, axes)
    fig.savefig(out / "collapse.png", dpi=120, bbox_inches="tight")


def plateau_figure(out: Path) -> None:
    """Plateau lengths per scheme in layers and in σ (one dot per start; circles the plateau at
    3 clusters, squares at 2), and the energy of the first start against layers and σ."""
    plateaus = read_table(out / "plateaus.csv")[0]
    path = read_table(out / "path.csv")[0]
    done = plateaus[~plateaus["censored"]]
    schemes = list(dict.fromkeys(plateaus["scheme"]))
    colors = palette(len(schemes))
    fig, axes = axes_grid(2, 2, width=11, height=8.6)
    for i, (color, scheme) in enumerate(zip(colors, schemes)):
        for k, marker, shift in ((3, "o", -0.12), (2, "s", 0.12)):
            g = done[(done["scheme"] == scheme) & (done["k"] == k)]
            x = np.full(len(g), i + shift)
            axes[0, 0].plot(x, g["end"] - g["start"], marker, color=color, ms=5, alpha=0.8)
            axes[0, 1].plot(x, g["sigma_end"] - g["sigma_start"], marker, color=color, ms=5,
                            alpha=0.8)  # fmt: skip
        p = path[(path["scheme"] == scheme) & (path["chain"] == 0) & (path["step"] > 0)]
        axes[1, 0].plot(p["step"], p["energy"], color=color, label=scheme)
        axes[1, 1].plot(p["sigma"], p["energy"], color=color, label=scheme)
    for ax, unit in ((axes[0, 0], "layers"), (axes[0, 1], "σ")):
        ax.set_xticks(range(len(schemes)), schemes, rotation=30)
        ax.set(ylabel=f"plateau length ({unit})", title=f"plateaus at 3 (○) and 2 (□) clusters, "
               f"in {unit}")  # fmt: skip
    axes[0, 0].set_yscale("log")
    axes[1, 0].set(xlabel="layer", ylabel="E_β", xscale="log", title="energy, first start")
    axes[1, 1].set(xlabel="σ = ∫ dt/s", ylabel="E_β", title="the same against σ")
    legend_below(fig, axes[1:])
    fig.savefig(out / "plateaus.png", dpi=120, bbox_inches="tight")


def figures(out: Path) -> None:
    draw(out, initial_figure, collapse_figure, plateau_figure)
