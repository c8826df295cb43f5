"""Figures of the staircase study (GKPR dynamic metastability), reading its outputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config

from . import checks as _checks
from .config import Config


def level(out: Path) -> float:
    return float(Config.from_dict(checks_config(out)).checks.confidence_level)


def merge_figure(out: Path) -> None:
    """Prepared starts: merge time against β per angle beside the quadrature; the fitted rate."""
    prep = read_table(out / "prepared.csv")[0]
    fits = _checks.prepared_fits(out, level(out))
    tol = float(Config.from_dict(checks_config(out)).checks.rate_tolerance)
    fig, axes = axes_grid(1, 2, width=11, height=4.8)
    ax = axes[0, 0]
    colors = palette(len(fits))
    for color, (_, f) in zip(colors, fits.iterrows()):
        g = prep[(prep["part"] == "post-ln") & (prep["angle"] == f["angle"])]
        t = (g["steps"] - g["start"]) * g["dt"]
        deg = math.degrees(f["angle"])
        ax.semilogy(g["beta"], t, "o", color=color, mfc="none", label=f"Δθ = {deg:.0f}°, post-LN")
        quad = g.groupby("beta")["log_time_quadrature"].mean()
        ax.semilogy(quad.index, np.exp(quad), "-", color=color, lw=1)
        r = prep[(prep["part"] == "rk4") & (prep["angle"] == f["angle"])]
        ax.semilogy(r["beta"], (r["steps"] - r["start"]) * r["dt"], "x", color=color)
    ax.set(
        xlabel="β",
        ylabel="merge time t",
        title="two caps: time to merge (lines: quadrature, ×: RK4)",
    )
    ax.legend(fontsize="small")
    ax = axes[0, 1]
    x = np.arange(len(fits))
    for column, style, colour, name in (
        ("ratio", "o", "C0", "prefactor 1/(β sin² Δθ), exact angle (claim)"),
        ("ratio_nominal", "^", "C2", "the same, nominal angle"),
        ("ratio_free", "D", "C3", "free c log β"),
        ("ratio_without_prefactor", "s", "C1", "no prefactor"),
    ):
        ax.plot(
            x,
            fits[column],
            style,
            mfc="none" if column != "ratio" else colour,
            color=colour,
            label=name,
        )
    ax.plot(
        x,
        fits["ratio_quadrature"],
        "_",
        ms=16,
        color="k",
        label="quadrature, claim's fit",
    )
    ax.axhspan(1 - tol, 1 + tol, color="0.9", label=f"1 ± {tol:g} (claim)")
    ax.axhline(1, color="0.5", lw=0.8)
    ax.set_xticks(x, [f"{math.degrees(a):.0f}°" for a in fits["angle"]])
    ax.set(xlabel="Δθ", ylabel="b / (1 − cos Δθ)", title="fitted exponent over the predicted rate")
    ax.legend(fontsize="small")
    fig.savefig(out / "merge_times.png", dpi=120)


def random_figure(out: Path) -> None:
    """Random starts: each plateau's duration against the two-cluster prediction for its closest
    pair, and the rescaled duration against s = β(1 − cos Δθ)."""
    sample = _checks.random_sample(out)
    fig, axes = axes_grid(1, 2, width=11, height=4.8)
    colors = dict(zip(sorted(sample["beta"].unique()), palette(sample["beta"].nunique())))
    for beta, g in sample.groupby("beta"):
        dur = np.log10(g["steps"] / np.exp(g["s"] - g["log_time_quadrature"]) * g["dt"])
        for cens, mfc in ((False, None), (True, "none")):
            h = g["censored"] == cens
            axes[0, 0].plot(
                g["log_time_quadrature"][h] / math.log(10),
                dur[h],
                "o",
                color=colors[beta],
                mfc=mfc,
                ms=4,
                label=f"β = {beta:g}" if not cens else None,
            )
            axes[0, 1].plot(
                g["s"][h],
                np.log10(g["steps"][h] * g["dt"][h]),
                "o",
                color=colors[beta],
                mfc=mfc,
                ms=4,
            )
    lim = np.array(axes[0, 0].get_xlim())
    axes[0, 0].plot(lim, lim, color="0.5", lw=0.8)
    axes[0, 0].set(
        xlabel="log10 predicted time (quadrature, closest pair)",
        ylabel="log10 measured duration",
        title="plateaus from uniform starts (open: censored)",
    )
    axes[0, 0].legend(fontsize="small")
    s = np.linspace(0, sample["s"].max(), 50)
    fit = _checks.random_fit(sample, level(out)) if (~sample["censored"]).any() else None
    if fit is not None:
        axes[0, 1].plot(
            s,
            (fit.intercept + fit.slope * s) / math.log(10) + np.log10(sample["dt"].iloc[0]),
            "k-",
            lw=1,
            label=f"fit: slope {fit.slope:.3f}",
        )
        axes[0, 1].legend(fontsize="small")
    axes[0, 1].set(
        xlabel="s = β(1 − cos Δθ)",
        ylabel="log10 duration / prefactor",
        title="rescaled by the two-cluster prefactor",
    )
    fig.savefig(out / "random_plateaus.png", dpi=120)


def energy_figure(out: Path) -> None:
    """The energy staircase: E_β / E_β(one cluster) and the cluster count against log(t)/β."""
    en = read_table(out / "energy.csv")[0]
    en = en[en["step"] > 0]
    fig, axes = axes_grid(2, 1, width=7, height=6.5)
    for color, (beta, g) in zip(palette(en["beta"].nunique()), en.groupby("beta")):
        x = np.log(g["step"] * g["dt"]) / beta
        norm = np.exp(g["log_energy"] + math.log(2 * beta) - beta)  # (1/n²) Σ e^{β(cos − 1)}
        axes[0, 0].step(x, norm, where="post", color=color, label=f"β = {beta:g}")
        axes[1, 0].step(x, g["clusters"], where="post", color=color)
    axes[0, 0].set(
        ylabel="E_β · 2β e^(−β)", title="energy staircase (one uniform start of n tokens)"
    )
    axes[0, 0].legend(fontsize="small")
    axes[1, 0].set(xlabel="rescaled time log(t)/β", ylabel="clusters")
    fig.savefig(out / "energy_staircase.png", dpi=120)


def containment_figure(out: Path) -> None:
    """Time in the 2ε-caps against β beside the transcribed bound."""
    cont = read_table(out / "containment.csv")[0]
    fig, axes = axes_grid(1, 1, width=6, height=4.5)
    ax = axes[0, 0]
    for cens, mfc, label in ((False, None, "measured"), (True, "none", "censored (lower bound)")):
        g = cont[cont["censored"] == cens]
        if len(g):
            ax.semilogy(g["beta"], g["steps"] * g["dt"], "o", mfc=mfc, color="C0", label=label)
    bound = cont.groupby("beta")["log_transcribed_bound"].mean()
    ax.semilogy(bound.index, np.exp(bound), "k--", label="(ε/n) e^((1−α)β), transcription")
    ax.set(xlabel="β", ylabel="time in the 2ε-caps", title="cap containment")
    ax.legend(fontsize="small")
    fig.savefig(out / "containment.png", dpi=120)


def figures(out: Path) -> None:
    draw(out, merge_figure, random_figure, energy_figure, containment_figure)
