"""Figures of the noisy-metastability study, reading its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab import stats
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.measurement import quiet
from metastab.studies.verdict import checks_config

from . import checks as checks_module
from .config import Config
from .run import DIRECTIONS


def load(out: Path):
    """(theory, chains, fits, config) of ``out``."""
    return (*checks_module.load(out), Config.from_dict(checks_config(out)))


def times_figure(out: Path) -> None:
    """E[T] (time units) against N with exact 95 % intervals, the fitted e^(a + bN) with its
    band, and a line of slope ΔF through the fit's value at the mean N; one panel a direction."""
    theory, chains, fits, cfg = load(out)
    dt = float(cfg.dt)
    names = [n for n in DIRECTIONS if (fits["direction"] == n).any()]
    fig, axes = axes_grid(1, len(names), width=5.4 * len(names), height=4.2)
    for ax, name in zip(axes[0], names):
        spec = getattr(cfg, name)
        row = checks_module.select(fits, name, float(spec.levels[0]), "plain", int(spec.ns[0]))
        per = checks_module.mean_times(chains, row, dt)
        fit = checks_module.level_fit(chains, row)
        ns = np.linspace(per["n"].min(), per["n"].max(), 100)
        band = fit.band(ns)
        colour = palette(1)[0]
        ax.fill_between(ns, np.exp(band[0]) * dt, np.exp(band[1]) * dt, color=colour, alpha=0.2)
        ax.plot(ns, np.exp(fit.log_mean(ns)) * dt, color=colour,
                label=f"fit e^(a + bN), b = {fit.slope:.4f}")  # fmt: skip
        barrier = float(theory.loc[theory["direction"] == name, "barrier"].iloc[0])
        mid = float(per["n"].mean())
        anchor = float(fit.log_mean(np.array([mid]))[0])
        ax.plot(ns, np.exp(anchor + barrier * (ns - mid)) * dt, color="k", ls="--", lw=1,
                label=f"slope ΔF = {barrier:.4f}")  # fmt: skip
        yerr = [per["mean"] - per["mean_low"], per["mean_high"] - per["mean"]]
        ax.errorbar(per["n"], per["mean"], yerr=yerr, fmt="o", ms=4, color=colour,
                    label="E[T] (exact 95 %)")  # fmt: skip
        ax.set_yscale("log")
        k_rel = float(theory.loc[theory["direction"] == name, "K"].iloc[0])
        k_rel /= float(theory["k_sharp"].iloc[0])
        title = f"{checks_module.WHAT[name]}, level {row['level']:g}, K = {k_rel:.4f} K_#"
        ax.set(xlabel="N", ylabel="mean escape time (time units)", title=title)
        ax.legend(fontsize=8)
    fig.savefig(out / "escape_times.png", dpi=120, bbox_inches="tight")


def survival_figure(out: Path) -> None:
    """The Kaplan–Meier survival P[T > t] per N (first level) against t / E[T], E[T] the
    censored mean per N, beside e^(−t/E[T]) (the exponential law: a metastable exit); one
    panel a direction."""
    theory, chains, fits, cfg = load(out)
    names = [n for n in DIRECTIONS if (fits["direction"] == n).any()]
    fig, axes = axes_grid(1, len(names), width=5.4 * len(names), height=4.2)
    for ax, name in zip(axes[0], names):
        spec = getattr(cfg, name)
        level = float(spec.levels[0])
        row = checks_module.select(fits, name, level, "plain", int(spec.ns[0]))
        means = checks_module.mean_times(chains, row, 1.0).set_index("n")["mean"]
        g = chains[(chains["direction"] == name) & np.isclose(chains["level"], level)]
        ns = sorted(g["n"].unique())
        top = 0.0
        for colour, n in zip(palette(len(ns)), ns):
            one = g[g["n"] == n]
            km = quiet(stats.survival, one["steps"].to_numpy(), one["censored"].to_numpy())[0]
            scaled = km.time / means[n]
            top = max(top, float(scaled.max()))
            ax.step(scaled, km.probability, where="post", color=colour, label=f"N = {n}")
        s = np.linspace(0, top, 100)
        ax.plot(s, np.exp(-s), color="k", ls="--", lw=1, label="e^(−t/E[T])")
        ax.set_yscale("log")
        ax.set(xlabel="t / E[T]", ylabel="P[T > t]",
               title=f"survival in {checks_module.WHAT[name]} (level {level:g})")  # fmt: skip
        ax.legend(fontsize=8)
    fig.savefig(out / "survival.png", dpi=120, bbox_inches="tight")


def figures(out: Path) -> None:
    draw(out, times_figure, survival_figure)
