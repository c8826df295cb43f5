"""Figures of the noisy-transition study, reading its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config
from metastab.theory.noisy import critical_coupling_linear, fold_coupling, tricritical_beta

from . import checks as checks_module
from .config import Config


def load(out: Path):
    """(sweeps, loops, branches, config) of the run in ``out``."""
    cfg = Config.from_dict(checks_config(out))
    sweeps = checks_module.load(out)
    return (
        sweeps,
        checks_module.loops(sweeps, cfg),
        checks_module.branches(sweeps, cfg),
        cfg,
    )


def loops_figure(out: Path) -> None:
    """m_1 against K/K_# per β of the main sweeps, up and down (means over the sweeps with
    their intervals), beside the mean-field branches of ``stationary_branch`` (stable: solid,
    the saddle: dashed) and K_fold, K_c, K_#."""
    _, lp, br, cfg = load(out)
    main = br[br["set"] == "main"]
    betas = sorted(main["beta"].unique())
    cols = min(3, len(betas))
    rows = -(-len(betas) // cols)
    fig, axes = axes_grid(rows, cols, width=4.6 * cols, height=3.8 * rows)
    up_c, down_c = palette(2)
    d = int(cfg.d)
    for ax, beta in zip(axes.ravel(), betas):
        ks = critical_coupling_linear(beta, d)
        branch = checks_module._branch(beta, d)
        f = branch.coupling / ks
        stable = branch.index == 0
        ax.plot(f[stable], branch.order[stable], color="k", lw=1.2, label="mean field, stable")
        ax.plot(f[~stable], branch.order[~stable], color="k", lw=1, ls="--",
                label="mean field, saddle")  # fmt: skip
        lo, hi = float(main["factor"].min()), float(main["factor"].max())
        ax.plot([lo, 1], [0, 0], color="k", lw=1.2)
        ax.plot([1, hi], [0, 0], color="k", lw=1, ls="--")
        g = main[main["beta"] == beta]
        for direction, colour, mark in (("up", up_c, "^"), ("down", down_c, "v")):
            h = g[g["direction"] == direction].sort_values("factor")
            ax.errorbar(h["factor"], h["m1"], yerr=h["m1_half"], fmt=mark + "-", ms=4, lw=0.8,
                        color=colour, capsize=2, label=f"sweep {direction}")  # fmt: skip
        t = lp[(lp["set"] == "main") & (lp["beta"] == beta)].iloc[0]
        ax.axvline(t["kc"], color="C3", lw=0.8, label="K_c")
        if t["above"]:
            ax.axvline(t["fold"], color="C2", lw=0.8, ls=":", label="K_fold")
        ax.axhline(float(cfg.level), color="0.7", lw=0.6, ls=":")
        ax.set(xlim=(lo - 0.01, hi + 0.01), ylim=(-0.02, 1.0), xlabel="K / K_#", ylabel="m_1",
               title=f"β = {beta:g} ({'above' if t['above'] else 'below'} β_*), "
               f"N = {int(t['n'])}")  # fmt: skip
    for ax in axes.ravel()[len(betas) :]:
        ax.set_visible(False)
    axes.ravel()[0].legend(fontsize=7, loc="upper left")
    fig.savefig(out / "loops.png", dpi=120, bbox_inches="tight")


def widths_figure(out: Path) -> None:
    """The loop width against β (each set, with its interval) beside the mean-field bistable
    width 1 − K_fold/K_#, which the finite-N loop lies inside; β_* marked."""
    _, lp, _, cfg = load(out)
    d = int(cfg.d)
    fig, axes = axes_grid(1, 1, width=6.2, height=4.4)
    ax = axes[0, 0]
    star = tricritical_beta(d)
    grid = np.linspace(star + 0.05, max(float(lp["beta"].max()), star + 1) + 0.5, 10)
    mf = [1 - fold_coupling(b, d) / critical_coupling_linear(b, d) for b in grid]
    ax.plot(np.r_[0.5 * star, star, grid], np.r_[0, 0, mf], color="k", lw=1.2,
            label="mean field: 1 − K_fold / K_#")  # fmt: skip
    ax.axvline(star, color="C3", lw=0.8, ls="--", label=f"β_* = {star:.4f}")
    for (name, g), colour, mark, shift in zip(
        lp.groupby("set", sort=False), palette(3), "osD", (0.0, 0.06, -0.06)
    ):
        label = {"main": "sweeps", "slow": "twice as slow", "size": "fewer tokens"}[str(name)]
        label += f" (N = {int(g['n'].iloc[0])}, stage time {g['stage_time'].iloc[0]:g})"
        ax.errorbar(g["beta"] + shift, g["width"], yerr=g["width_half"], fmt=mark, ms=5,
                    color=colour, capsize=2, label=label)  # fmt: skip
    ax.axhline(0, color="0.8", lw=0.8)
    ax.set(xlabel="β", ylabel="loop width (K / K_#)", title=f"d = {d}: hysteresis loop width")
    ax.legend(fontsize=7, loc="upper left")
    fig.savefig(out / "widths.png", dpi=120, bbox_inches="tight")


def figures(out: Path) -> None:
    draw(out, loops_figure, widths_figure)
