"""Figures of the noisy-linear study, reading its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config

from . import checks as checks_module
from .config import Config


def load(out: Path):
    cfg = Config.from_dict(checks_config(out))
    return checks_module.estimates(checks_module.load(out), cfg), cfg


def rates_figure(out: Path) -> None:
    """λ̂_ℓ against K/K_# (± 2 SE) beside the closed form λ_ℓ(K) and the rate without the noise
    term; K_# and the zero of the fitted line marked. Columns d, rows ℓ."""
    est, cfg = load(out)
    grid = est[est["set"] == "grid"]
    ds, degrees = sorted(grid["d"].unique()), sorted(grid["degree"].unique())
    fig, axes = axes_grid(len(degrees), len(ds), width=5.2 * len(ds), height=4.2 * len(degrees))
    beta = float(cfg.beta)
    for col, d in enumerate(ds):
        k_sharp = float(grid.loc[grid["d"] == d, "k_sharp"].iloc[0])
        f = np.linspace(0.0, 1.1 * grid["factor"].max(), 200)
        for row, degree in enumerate(degrees):
            ax = axes[row, col]
            g = grid[(grid["d"] == d) & (grid["degree"] == degree)]
            line = [checks_module.rate(x * k_sharp, beta, d, degree) for x in f]
            bare = [checks_module.rate(x * k_sharp, beta, d, degree, noise=False) for x in f]
            ax.plot(f, line, color="k", lw=1.2, label="λ_ℓ = ℓ(ℓ+d−2)(2KŴ_ℓ − 1)")
            ax.plot(f, bare, color="0.6", lw=1, ls=":", label="without the noise term")
            ax.errorbar(g["factor"], g["rate"], yerr=2 * g["rate_se"], fmt="o", ms=4,
                        color=palette(1)[0], label="simulated (± 2 SE)")  # fmt: skip
            ax.axhline(0, color="0.8", lw=0.8)
            ax.axvline(1.0, color="C3", lw=0.8, ls="--", label="K_#")
            if degree == 1:
                root, _ = checks_module.zero(g[g["factor"] > 0])
                ax.axvline(root, color="C2", lw=0.8, label="zero of the fitted line")
                ax.set_ylim(-1.3 * (d - 1), 1.0 * (d - 1))
            else:
                ax.set_ylim(-1.3 * degree * (degree + d - 2), 0.5)
            ax.set(xlabel="K / K_#", ylabel=f"rate of degree {degree}",
                   title=f"d = {d}, β = {beta:g}, N = {int(g['n'].iloc[0])}")  # fmt: skip
            ax.legend(fontsize=7, loc="lower right")
    fig.savefig(out / "rates.png", dpi=120, bbox_inches="tight")


def effects_figure(out: Path) -> None:
    """The degree-1 rate against dt (at the dt scan's K) and against 1/N (at the N scan's K),
    with the closed form."""
    est, _ = load(out)
    fig, axes = axes_grid(1, 2, width=11, height=4.2)
    for ax, name, x, label in (
        (axes[0, 0], "dt", "dt", "dt"),
        (axes[0, 1], "n", "inverse", "1 / N"),
    ):
        g = est[(est["set"] == name) & (est["degree"] == 1)].assign(inverse=lambda e: 1 / e["n"])
        if g.empty:
            continue
        ax.errorbar(g[x], g["rate"], yerr=2 * g["rate_se"], fmt="o", ms=4,
                    color=palette(1)[0], label="simulated (± 2 SE)")  # fmt: skip
        ax.axhline(float(g["predicted"].iloc[0]), color="k", lw=1.2, label="λ_1")
        ax.set(xlabel=label, ylabel="rate of degree 1", xlim=(0, 1.1 * g[x].max()),
               title=f"d = {int(g['d'].iloc[0])}, K = {g['factor'].iloc[0]:g} K_#")  # fmt: skip
        ax.legend(fontsize=8)
    fig.savefig(out / "effects.png", dpi=120, bbox_inches="tight")


def figures(out: Path) -> None:
    draw(out, rates_figure, effects_figure)
