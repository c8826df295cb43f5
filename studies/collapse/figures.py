"""Figures of the collapse study ([FW] §5, the collapse proposition), reading only its outputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_grid, legend_below
from metastab.studies.verdict import checks_config

from .config import Config

MODELS = {
    "SA_beta": ("SA_β (softmax layer)", "C3", "^"),
    "SA_P": ("SA_P (Markov chain)", "C0", "o"),
}


def load(out: Path):
    summary, meta = read_table(out / "summary.csv")
    fits, _ = read_table(out / "fits.csv")
    curves, _ = read_table(out / "diameters.parquet")
    return summary, fits, curves, meta


def collapse_time_figure(summary, fits, cfg: Config, path):
    """Median collapse time against β (log y) with the bound's steps dashed; right: the ratio."""
    fig, axes = axes_grid(1, 2, height=5.2)
    ax = axes[0, 0]
    for kind, (label, color, marker) in MODELS.items():
        g = summary[summary["model"] == kind]
        seen = g[np.isfinite(g["median"])]
        ax.errorbar(
            seen["beta"],
            seen["median"],
            yerr=[
                seen["median"] - seen["q10"],
                np.where(np.isfinite(seen["q90"]), seen["q90"], seen["median"]) - seen["median"],
            ],
            fmt=marker,
            color=color,
            capsize=3,
            label=f"{label}, median (10–90%)",
        )
        cens = g[~np.isfinite(g["median"])]
        if len(cens):
            ax.plot(
                cens["beta"],
                cens["max_steps"],
                marker,
                mfc="none",
                color=color,
                ls="none",
                label=f"{label}: > budget (censored)",
            )
        f = fits[fits["model"] == kind]
        if len(f):
            f = f.iloc[0]
            b = np.linspace(f["beta_min"], f["beta_max"], 20)
            ax.plot(
                b,
                np.exp(f["intercept"] + f["slope"] * b),
                ":",
                color=color,
                label=f"{label} fit, slope {f['slope']:.2f}",
            )
    b = summary[summary["model"] == "SA_beta"].sort_values("beta")
    ax.plot(
        b["beta"],
        10 ** b["log10_bound_steps"],
        "k--",
        label="bound log(ratio)/log(1 − γc), slope 2R²",
    )
    ax.set_yscale("log")
    ax.set_ylim(10, None)
    ax.set_xlabel("β (β < 0: |β| with B = −I)")
    ax.set_ylabel(f"collapse time (steps to diam ≤ {cfg.ratio:g}·diam₀)")
    fig.legend(
        *ax.get_legend_handles_labels(),
        loc="outside lower center",
        ncols=3,
        fontsize="small",
        frameon=False,
    )
    ax = axes[0, 1]
    for kind, (label, color, marker) in MODELS.items():
        g = summary[summary["model"] == kind]
        ax.plot(g["beta"], g["log10_bound_over_median"], marker + "-", color=color, label=label)
    ax.axhline(0, color="k", ls="--", lw=1, label="bound = measured")
    ax.set_xlabel("β (β < 0: |β| with B = −I)")
    ax.set_ylabel("log10(bound steps / median collapse time)")
    ax.set_title("how loose the guaranteed rate is", fontsize="medium")
    ax.legend(fontsize="small", frameon=False)
    fig.savefig(path, dpi=110)


def diameter_figure(curves, summary, meta, cfg: Config, path):
    """diam(X^t)/diam₀ against t per β (log–log), with the guaranteed (1 − γc)^t dashed."""
    betas = sorted(curves["beta"].unique())
    cols = min(2, len(betas))
    fig, axes = axes_grid((len(betas) + cols - 1) // cols, cols)
    d0 = float(meta["diameter0"])
    for ax, beta in zip(axes.ravel(), betas):
        for kind, (label, color, _) in MODELS.items():
            g = curves[(curves["model"] == kind) & (curves["beta"] == beta) & (curves["step"] > 0)]
            if kind == "SA_P":
                ax.fill_between(
                    g["step"],
                    g["q10"] / d0,
                    g["q90"] / d0,
                    color=color,
                    alpha=0.2,
                    label=f"{label}, 10–90% of {int(g['chains'].iloc[0])} chains",
                )
            ax.plot(
                g["step"],
                g["median"] / d0,
                color=color,
                label=label + (", median" if kind == "SA_P" else ""),
            )
        row = summary[(summary["model"] == "SA_beta") & np.isclose(summary["beta"], beta)]
        t = np.geomspace(1, curves["step"].max(), 200)
        if len(row):
            log_factor = math.log1p(-cfg.gamma * 10 ** row["log10_c"].iloc[0])
            ax.plot(t, np.exp(t * log_factor), "k--", label="guaranteed (1 − γc)^t")
        ax.axhline(cfg.ratio, color="k", ls=":", lw=1, label="collapse threshold")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(cfg.ratio / 10, 2)
        ax.set_xlabel("step t")
        ax.set_ylabel("diam(X^t) / diam(X^0)")
        ax.set_title(f"β = {beta:g}", fontsize="medium")
    legend_below(fig, axes, len(betas))
    fig.savefig(path, dpi=110)


def figures(out: Path) -> None:
    """Draw every figure of the collapse study into ``out``."""
    out = Path(out)
    summary, fits, curves, meta = load(out)
    cfg = Config.from_dict(checks_config(out))
    collapse_time_figure(summary, fits, cfg, out / "collapse_time.png")
    diameter_figure(curves, summary, meta, cfg, out / "diameter.png")
