"""Figures of the causal-parking study, reading only its outputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.ticker import NullLocator

from metastab import stats
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.measurement import quiet
from metastab.studies.parking import expected_strong_centres
from metastab.studies.verdict import checks_config

from . import checks as _checks
from . import lifetime
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
    mean of the strong count), and the Kaplan–Meier median plateau length against β with the
    fitted Weibull regression's median and the predicted and wrong exponents."""
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
    fit = lifetime.lifetime_fit(out, f, t, level)
    per, w = fit["per_beta"], fit["weibull"]
    finite = np.isfinite(per["median"])
    span = fit["span"]
    low = per["median_low"].to_numpy(float)
    high = np.minimum(per["median_high"].to_numpy(float), span)  # inf: the band stays above ½
    med = per["median"].to_numpy(float)
    ax.errorbar(
        per["beta"][finite],
        med[finite],
        yerr=[(med - low)[finite], (high - med)[finite]],
        fmt="o",
        capsize=3,
        color=c[0],
        label="Kaplan–Meier median (Brookmeyer–Crowley)",
    )
    if (~finite).any():  # Ŝ stays above ½: the median exceeds horizon − t
        ax.plot(
            per["beta"][~finite],
            [span] * int((~finite).sum()),
            "^",
            mfc="none",
            color=c[0],
            label="median > horizon − t",
        )
    if w is not None:
        ax.plot(grid, w.median(grid), color=c[1], label=f"Weibull regression: ∝ β^{w.b:.2f}")
        mid = float(np.exp(np.mean(np.log(per["beta"].to_numpy(float)))))
        ref = float(w.median(mid))
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
    ax.legend(fontsize="small", loc="lower left")
    fig.savefig(out / "counts.png", dpi=120)


def lifetimes_figure(out: Path) -> None:
    """The Kaplan–Meier curves of the plateau lengths per β (steps, censoring marks +, the
    pointwise log-log band shaded) beside the survival of the fitted Weibull regression
    (dashed), on log time."""
    cfg = Config.from_dict(checks_config(out))
    level = float(cfg.confidence_level)
    f, t = float(cfg.min_fraction), float(cfg.reading_time)
    fit = lifetime.lifetime_fit(out, f, t, level)
    life = lifetime.censor_at(
        _checks.table(out, "lifetimes").query("fraction == @f and t0 == @t"), fit["span"]
    )
    w = fit["weibull"]
    fig, axes = axes_grid(1, 1, width=7.5, height=4.8)
    ax = axes[0, 0]
    betas = sorted(life["beta"].unique())
    start = float(life["length"].min()) / 2  # the curves start at 1 before the first drop
    colours = palette(len(betas))
    for beta, colour in zip(betas, colours):
        g = life[life["beta"] == beta]
        cens = g["censored"].to_numpy(bool)
        km, _ = quiet(stats.survival, g["length"].to_numpy(float), cens, confidence_level=level)
        frame = km.to_frame()
        x = np.concatenate([[start], frame["time"]])
        y = np.concatenate([[1.0], frame["survival"]])
        ax.step(x, y, where="post", color=colour, label=f"β = {beta:g}")
        ax.fill_between(
            frame["time"],
            frame["low"].fillna(0.0),
            frame["high"].fillna(1.0),
            step="post",
            color=colour,
            alpha=0.12,
            lw=0,
        )
        marks = g["length"].to_numpy(float)[cens]
        ax.plot(marks, km.evaluate(marks), "+", color=colour, ms=8)
        if w is not None:
            ts = np.geomspace(start, fit["span"], 200)
            ax.plot(ts, w.survival(ts, beta), "--", color=colour, lw=1)
    ax.set(
        xscale="log",
        ylim=(0, 1.02),
        xlabel=f"plateau length from t = {t:g} (censored at horizon − t = {fit['span']:g}: +)",
        ylabel="fraction of starts still at their count",
        title=f"Kaplan–Meier per β (band {100 * level:g} %); dashed: Weibull regression"
        + ("" if w is None else f" (∝ β^{w.b:.2f}, shape {w.shape:.2f})"),
    )
    ax.title.set_fontsize("small")
    ax.legend(fontsize="small")
    fig.savefig(out / "lifetimes.png", dpi=120)


def _beta_ticks(ax, betas: np.ndarray) -> None:
    """The grid's β as plain tick labels on a log axis."""
    ax.set_xticks(betas, [f"{b:g}" for b in betas])
    ax.xaxis.set_minor_locator(NullLocator())


def figures(out: Path) -> None:
    draw(out, start_figure, counts_figure, lifetimes_figure)
