"""Figures of the hardmax-tracking study, reading only the study's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.plotting import survival_figure
from metastab.results import read_table
from metastab.studies.figures import axes_grid, legend_below
from metastab.studies.verdict import checks_config

from .config import Config

MODELS = {"SA_P": ("SA_P (Markov chain)", "C0"), "SA_beta": ("SA_β (softmax layer)", "C3")}


def load(out: Path):
    distance, _ = read_table(out / "distance.parquet")
    times, _ = read_table(out / "tracking_times.csv")
    summary, _ = read_table(out / "summary.csv")
    fits, _ = read_table(out / "fits.csv")
    return distance, times, summary, fits, Config.from_dict(checks_config(out))


def distance_figure(distance, summary, cfg: Config, path):
    """max_i |x_i^t − h_i^t| against t (log–log), one panel per β, ε and 1/p dashed."""
    betas = sorted(distance["beta"].unique())
    cols = min(2, len(betas))
    fig, axes = axes_grid((len(betas) + cols - 1) // cols, cols)
    eps = float(cfg.eps)
    for ax, beta in zip(axes.ravel(), betas):
        for name, (label, color) in MODELS.items():
            g = distance[
                (distance["model"] == name) & (distance["beta"] == beta) & (distance["step"] > 0)
            ]
            if name == "SA_P":
                ax.fill_between(
                    g["step"],
                    g["q10"].clip(lower=1e-12),
                    g["q90"].clip(lower=1e-12),
                    color=color,
                    alpha=0.2,
                    label=f"{label}, 10–90% of {int(g['chains'].iloc[0])} chains",
                )
            ax.plot(
                g["step"],
                g["median"].clip(lower=1e-12),
                color=color,
                label=f"{label}" + (", median" if name == "SA_P" else ""),
            )
        ax.axhline(eps, color="k", ls=":", lw=1, label=f"ε = {eps:g}")
        row = summary[(summary["model"] == "SA_P") & np.isclose(summary["beta"], beta)]
        if len(row):
            ax.axvline(
                row["frozen_mean"].iloc[0], color="k", ls="--", lw=1, label="t0 + 1/p (frozen law)"
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(1e-4, 3)
        ax.set_xlabel("step t")
        ax.set_ylabel("max_i |x_i^t − h_i^t|")
        ax.set_title(f"β = {beta:g}", fontsize="medium")
    legend_below(fig, axes, len(betas))
    fig.suptitle("Distance to the hardmax path from the same start")
    fig.savefig(path, dpi=110)


def tracking_figure(summary, fits, cfg: Config, path):
    """Arrhenius plot: tracking time T_ε against β, log y; frozen law and fits dashed."""
    fig, axes = axes_grid(1, 2, height=4.6)
    ax = axes[0, 0]
    chain = summary[summary["model"] == "SA_P"]
    flow = summary[summary["model"] == "SA_beta"]
    ax.plot(chain["beta"], chain["median"], "o", color="C0", label="SA_P, median T_ε")
    if "mean" in chain:
        ok = chain.dropna(subset=["mean"])
        ax.errorbar(
            ok["beta"],
            ok["mean"],
            yerr=[ok["mean"] - ok["mean_low"], ok["mean_high"] - ok["mean"]],
            fmt="s",
            mfc="none",
            color="C0",
            capsize=3,
            label="SA_P, mean T_ε (95% CI)",
        )
    ax.plot(flow["beta"], flow["median"], "^", color="C3", label="SA_β, T_ε")
    grid = np.linspace(summary["beta"].min(), summary["beta"].max(), 100)
    ax.plot(chain["beta"], chain["frozen_mean"], "k--", label="t0 + 1/p, frozen law (theory)")
    for _, f in fits.iterrows():
        if f["what"].startswith("SA_P"):
            ax.plot(
                grid,
                chain["t0"].iloc[0] + np.exp(f["intercept"] + f["slope"] * grid),
                ":",
                color="C0",
                label=f"SA_P fit, slope {f['slope']:.3f}",
            )
        elif f["what"].startswith("SA_beta, least"):
            ax.plot(
                grid,
                np.exp(f["intercept"] + f["slope"] * grid),
                ":",
                color="C3",
                label=f"SA_β fit, slope {f['slope']:.3f}",
            )
    regime = summary.loc[summary["regime"], "beta"]
    if len(regime):
        ax.axvspan(
            summary["beta"].min() - 1,
            regime.min(),
            color="0.9",
            zorder=0,
            label="plateau + ε ≥ jump (transient regime)",
        )
    ax.set_yscale("log")
    ax.set_xlim(summary["beta"].min() - 1, summary["beta"].max() + 1)
    ax.set_xlabel("β")
    ax.set_ylabel("tracking time T_ε (steps)")
    ax.set_title(f"T_ε, ε = {cfg.eps:g}", fontsize="medium")
    ax.legend(fontsize="x-small", frameon=False, loc="upper left")
    ax = axes[0, 1]
    for name, (label, color) in MODELS.items():
        g = summary[summary["model"] == name]
        ax.plot(
            g["beta"],
            g["plateau"],
            "o-" if name == "SA_P" else "^-",
            color=color,
            label=f"{label}" + (", median" if name == "SA_P" else ""),
        )
    f = fits[fits["what"].str.startswith("SA_beta plateau")]
    if len(f):
        f = f.iloc[0]
        b = np.geomspace(f["beta_min"], f["beta_max"], 50)
        ax.plot(
            b, np.exp(f["intercept"]) * b ** f["slope"], "k--", label=f"fit ∝ β^{f['slope']:.2f}"
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("β")
    ax.set_ylabel("max_i |x_i − h_i| at t0 (plateau)")
    ax.set_title("offset of the finite-β clusters from the vertices", fontsize="medium")
    ax.legend(fontsize="x-small", frameon=False)
    fig.savefig(path, dpi=110)


def figures(out: Path) -> None:
    """Draw every figure of the hardmax-tracking study into ``out``."""
    out = Path(out)
    distance, times, summary, fits, cfg = load(out)
    distance_figure(distance, summary, cfg, out / "distance_over_time.png")
    tracking_figure(summary, fits, cfg, out / "tracking_time.png")
    chain = times[(times["model"] == "SA_P") & (times["stage"] == 2)]
    chain = chain.merge(summary.loc[summary["regime"] & (summary["model"] == "SA_P"), ["beta"]])
    if len(chain):
        frame = chain.assign(steps=chain["steps"] - chain["t0"])[["beta", "steps", "censored"]]
        fig = survival_figure(frame, out / "survival.png")
        fig.axes[0].set_xlabel("steps after t0 (T_ε − t0)")
        fig.savefig(out / "survival.png", dpi=110)
