"""Figures of the causal-parking study, reading only its outputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.ticker import NullLocator

from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.parking import expected_strong_centres
from metastab.studies.verdict import checks_config

from . import checks as _checks
from .config import Config


def start_figure(out: Path) -> None:
    """One start at the β nearest their Fig. 2's 64: the clusters at each reading time (angle
    against time, area ∝ size) beside the starting angles of the strong (red) and other Rényi
    centres (black)."""
    cfg = Config.from_dict(checks_config(out))
    clusters = _checks.table(out, "clusters")
    centres = _checks.table(out, "centres")
    betas = np.array(sorted(clusters["beta"].unique()))
    beta = float(betas[np.argmin(np.abs(np.log(betas / 64.0)))])
    cl = clusters[(clusters["beta"] == beta) & (clusters["chain"] == 0)]
    ce = centres[(centres["beta"] == beta) & (centres["chain"] == 0)]
    fig, axes = axes_grid(1, 1, width=7.5, height=4.8)
    ax = axes[0, 0]
    big = cl["size"] >= float(cfg.min_fraction) * int(cfg.n)
    ax.scatter(cl["time"][big], cl["angle"][big], s=4 * cl["size"][big], c="C0", alpha=0.6)
    ax.scatter(cl["time"][~big], cl["angle"][~big], s=8, c="0.6", marker="x")
    for r in ce.itertuples():
        color = "red" if r.strong else "k"
        ax.axhline(r.theta0, color=color, lw=0.8, ls="-" if r.strong else ":")
    ax.set(
        xscale="log",
        ylim=(0, 2 * math.pi),
        xlabel="t (reading times)",
        ylabel="angle",
        title=f"β = {beta:g}, start 0: clusters (blue, area ∝ size; grey: below "
        f"{float(cfg.min_fraction):g} n); strong centres red, other Rényi centres dotted",
    )
    ax.title.set_fontsize("small")
    fig.savefig(out / "start.png", dpi=120)


def counts_figure(out: Path) -> None:
    """Mean numbers of clusters, strong centres and Rényi centres against β (with the exact
    mean of the strong count), and the median plateau length against β."""
    cfg = Config.from_dict(checks_config(out))
    n, level = int(cfg.n), float(cfg.confidence_level)
    f, t = float(cfg.min_fraction), float(cfg.reading_time)
    base = _checks.count_summary(out, n, f, t, level)
    fig, axes = axes_grid(1, 2, width=11, height=4.6)
    ax = axes[0, 0]
    c = palette(3)
    ax.errorbar(
        base["beta"],
        base["clusters"],
        yerr=[base["mean"] - base["low"], base["high"] - base["mean"]],
        fmt="o",
        capsize=3,
        color=c[0],
        label="clusters (interval of clusters − strong)",
    )
    ax.plot(base["beta"], base["strong"], "s", color="red", label="strong Rényi centres")
    ax.plot(base["beta"], base["renyi"], "^", color="k", label="Rényi centres")
    grid = np.geomspace(base["beta"].min() * 0.8, base["beta"].max() * 1.25, 200)
    ax.plot(
        grid,
        [expected_strong_centres(n, float(cfg.delta_factor) / math.sqrt(b)) for b in grid],
        color="red",
        lw=0.8,
        label="exact mean of the strong count",
    )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="β (δ = 4 β^(−1/2))",
        ylabel="mean over starts",
        title=f"t = {t:g}, clusters ≥ {f:g} n tokens",
    )
    _beta_ticks(ax, base["beta"].to_numpy(float))
    ax.legend(fontsize="small")
    ax = axes[0, 1]
    fit = _checks.lifetime_fit(
        out, f, t, level, 1, int(cfg.bootstrap_seed)
    )  # the medians; the interval is the checks table's
    med = fit["medians"]
    ax.plot(med.index, med.to_numpy(), "o", color=c[0], label="median plateau length")
    lost = med.index[med.isna()]
    if lost.size:  # half the starts or more censored: the median exceeds horizon − t
        span = float(cfg.horizon) - t
        ax.plot(lost, [span] * lost.size, "^", mfc="none", color=c[0], label="median > horizon − t")
    if med.notna().sum() >= 1:
        ref = float(np.exp(np.nanmean(np.log(med.to_numpy(float)))))
        mid = float(np.exp(np.mean(np.log(med.index.to_numpy(float)))))
        exps = [float(cfg.lifetime_exponent), *map(float, cfg.power.lifetime_exponents)]
        for b, style in zip(exps, ["-", ":", "--"]):
            ax.plot(grid, ref * (grid / mid) ** b, style, color="0.3", lw=0.8, label=f"∝ β^{b:g}")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="β",
        ylabel="time",
        title=f"plateau from t = {t:g} (first drop of the count)",
    )
    _beta_ticks(ax, base["beta"].to_numpy(float))
    ax.legend(fontsize="small")
    fig.savefig(out / "counts.png", dpi=120)


def _beta_ticks(ax, betas: np.ndarray) -> None:
    """The grid's β as plain tick labels on a log axis."""
    ax.set_xticks(betas, [f"{b:g}" for b in betas])
    ax.xaxis.set_minor_locator(NullLocator())


def figures(out: Path) -> None:
    draw(out, start_figure, counts_figure)
