"""Figures of the metastability study ([FW] Thm 5.4).

Reads only the files that ``run.py`` wrote into ``out``: chains.parquet (one row per chain,
engine, event and β), per_beta.csv, exponent.csv, crosscheck.csv, local_slopes.csv, bound.csv,
merge.csv, merge_tol.csv and their sidecars.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.plotting import canvas, stats, theory
from metastab.results import read_table
from metastab.studies.render import spread as _spread
from metastab.studies.runner import read_tables
from metastab.studies.verdict import checks_config

from .config import Config

LABELS = {"hull": "T2 (leave group hull + B(0, ε))", "ball": "leave B(v_σ(i), ε)"}


def _figure(ncols=1, width=6.4, height=4.4):
    """A figure and its row of axes."""
    fig, axes = canvas(1, ncols, width=width, height=height, squeeze=False)
    return fig, axes[0]


def _colors(count):
    import seaborn as sns

    return sns.color_palette("viridis", max(count, 1))


def _km(group: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DiagnosticWarning)
        return stats.survival(group["steps"].to_numpy(), group["censored"].to_numpy())


def _bound_kwargs(setup: dict) -> dict:
    return dict(
        c0=setup["c0"],
        eps=setup["eps"],
        gamma=setup["gamma"],
        n=setup["n"],
        diameter=setup["diameter"],
    )


def _engine(chains: pd.DataFrame) -> str:
    """The engine that covers the most β: accelerated when it ran."""
    return "accelerated" if (chains["engine"] == "accelerated").any() else "direct"


def _part(chains, engine, event):
    keep = (chains["engine"] == engine) & (chains["event"] == event)
    return chains[keep].drop(columns=["engine", "event"])


def survival_against_bound(chains, setup, path):
    """P[T2 >= t] per β (Kaplan–Meier, log–log) with the Thm 5.4 lower bound dashed, for up to
    eight β spread over the range of the engine that reached furthest."""
    fig, (ax,) = _figure(width=8.0)
    hull = _part(chains, _engine(chains), "hull")
    betas = _spread(sorted(hull["beta"].unique()))
    for beta, color in zip(betas, _colors(len(betas))):
        km = _km(hull[hull["beta"] == beta])
        # P[T2 >= t] = P[T2 > t - 1]: the Kaplan–Meier step at time u shows from t = u + 1
        t = np.r_[1.0, km.time + 1]
        ax.step(t, np.r_[1.0, km.probability], where="post", color=color, label=f"β = {beta:g}")
        grid = np.geomspace(2.0, max(3.0, float(hull["steps"].max())), 800)
        bound = theory.metastability_bound(grid, beta, **_bound_kwargs(setup))
        keep = bound > 1e-3
        ax.plot(grid[keep], bound[keep], "--", color=color, linewidth=1.2)
    ax.plot([], [], "--", color="grey", label="Thm 5.4 lower bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.3)
    ax.set_xlabel("t (steps)")
    ax.set_ylabel("P[T2 ≥ t]")
    ax.set_title(
        "Exit time T2: Kaplan–Meier (solid) above the Thm 5.4 bound (dashed)", fontsize="medium"
    )
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.savefig(path, dpi=150)


def survival_rescaled(chains, path):
    """P[T > t] against t / E[T] for both events and up to eight β (the engine that reached
    furthest), beside the memoryless law e^{-x}."""
    fig, axes = _figure(ncols=2, width=9.0, height=4.2)
    engine = _engine(chains)
    betas = _spread(sorted(chains.loc[chains["engine"] == engine, "beta"].unique()))
    colors = dict(zip(betas, _colors(len(betas))))
    x = np.linspace(0, 4, 200)
    for ax, name in zip(axes, ("hull", "ball")):
        part = _part(chains, engine, name)
        for beta in betas:
            g = part[part["beta"] == beta]
            km = _km(g)
            mean = g["steps"].sum() / max(int((~g["censored"]).sum()), 1)
            ax.step(
                np.r_[0.0, km.time / mean],
                np.r_[1.0, km.probability],
                where="post",
                color=colors[beta],
                label=f"β = {beta:g}",
            )
        ax.plot(x, np.exp(-x), "--", color="black", label="memoryless: e^(−t/E[T])")
        ax.set_yscale("log")
        ax.set_ylim(1e-3, 1.2)
        ax.set_xlim(0, 4)
        ax.set_xlabel("t / E[T]  (steps / mean steps)")
        ax.set_ylabel("P[T > t]")
        ax.set_title(f"{LABELS[name]} ({engine})", fontsize="medium")
    axes[0].legend(fontsize="x-small", frameon=False, ncols=2, loc="lower left")
    fig.savefig(path, dpi=150)


def arrhenius(chains, per, setup, fit_from, path):
    """Mean exit time against β, in two panels.

    (a) E[T2] per β with its 95 % interval (the engine that reached furthest; crosses: direct
    stepping), the fits on the declared range β >= ``fit_from`` drawn over the points: the pure
    exponential a + bβ and the fit with a β^k prefactor, and the Thm 5.4 lower bound on E[T2].
    (b) What (a) cannot show at this scale: log E[T2] minus the pure exponential fit, per β with
    its interval, and the prefactor fit on the same scale.
    """
    engine = _engine(chains)
    hull = _part(chains, engine, "hull")
    used = hull[hull["beta"] >= fit_from - 1e-9]
    points = per[(per["engine"] == engine) & (per["event"] == "hull")].sort_values("beta")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DiagnosticWarning)
        fit = stats.fit_scaling(used)
        wide = stats.fit_scaling(used, prefactor=True) if used["beta"].nunique() >= 3 else None
    fig, (ax, res) = _figure(ncols=2, width=11.0, height=4.6)
    blue, red, grey = "tab:blue", "tab:red", "0.35"
    ax.errorbar(
        points["beta"],
        points["mean"],
        yerr=[points["mean"] - points["mean_low"], points["mean_high"] - points["mean"]],
        fmt="o",
        color=blue,
        markersize=2.5,
        elinewidth=0.6,
        alpha=0.6,
        zorder=1,
        label=f"E[T2], {engine} (95 % CI)",
    )
    if engine != "direct":
        direct = per[(per["engine"] == "direct") & (per["event"] == "hull")]
        ax.plot(
            direct["beta"],
            direct["mean"],
            "x",
            color="black",
            markersize=4,
            zorder=2,
            label="E[T2], direct stepping",
        )
    grid = np.linspace(float(used["beta"].min()), float(used["beta"].max()), 200)
    b_lo, b_hi = fit.confidence_interval("slope")
    ax.plot(
        grid,
        np.exp(fit.log_mean(grid)),
        "-",
        color="black",
        linewidth=1.6,
        zorder=3,
        label=rf"fit $e^{{a+b\beta}}$, β ≥ {fit_from:g}: b = {fit.slope:.4f}",
    )
    if wide is not None:
        ax.plot(
            grid,
            np.exp(wide.log_mean(grid)),
            "--",
            color=red,
            linewidth=1.6,
            zorder=4,
            label=rf"fit $A\beta^k e^{{b\beta}}$: b = {wide.slope:.4f}, "
            f"k = {wide.prefactor:.2f}",
        )
    all_b = np.linspace(float(points["beta"].min()), float(points["beta"].max()), 200)
    ax.plot(
        all_b,
        np.exp(theory.exit_time_bound(all_b, **_bound_kwargs(setup))),
        ":",
        color=grey,
        linewidth=1.4,
        zorder=3,
        label=f"Thm 5.4 bound on E[T2] (slope {setup['theorem_exponent']:.3f})",
    )
    ax.axhline(1e12, color=grey, linewidth=0.5, zorder=0)
    ax.annotate(
        r"$10^{12}$ steps",
        (float(points["beta"].max()), 1e12),
        ha="right",
        va="bottom",
        fontsize="small",
        color=grey,
    )
    ax.set_yscale("log")
    ax.set_xlabel("β")
    ax.set_ylabel("mean exit time E[T2] (steps)")
    ax.set_title("(a) Mean exit time", fontsize="medium", loc="left")
    ax.legend(fontsize="x-small", frameon=False, loc="upper left")
    pts = points[points["beta"] >= fit_from - 1e-9]
    base = fit.log_mean(pts["beta"].to_numpy())
    res.errorbar(
        pts["beta"],
        np.log(pts["mean"]) - base,
        yerr=[np.log(pts["mean"] / pts["mean_low"]), np.log(pts["mean_high"] / pts["mean"])],
        fmt="o",
        color=blue,
        markersize=2.5,
        elinewidth=0.6,
        alpha=0.6,
        zorder=1,
        label="log E[T2] − fit, 95 % CI",
    )
    res.axhline(0.0, color="black", linewidth=1.6, zorder=3, label="pure exponential")
    if wide is not None:
        res.plot(
            grid,
            wide.log_mean(grid) - fit.log_mean(grid),
            "--",
            color=red,
            linewidth=1.6,
            zorder=4,
            label=r"with the prefactor $\beta^k$",
        )
    res.set_xlabel("β")
    res.set_ylabel("log E[T2] − (a + bβ)")
    res.set_title(
        f"(b) Deviation from the exponential fit (β ≥ {fit_from:g})", fontsize="medium", loc="left"
    )
    res.legend(fontsize="x-small", frameon=False, loc="lower center")
    fig.savefig(path, dpi=150)


def local_slope_figure(slopes, merge, setup, fits, path):
    """Local exponent Δ log E[T] / Δβ against β per engine and event, the Arrhenius fits' b,
    the slope predicted by the merge-point gap, c0 and the theorem's exponent."""
    fig, (ax,) = _figure(width=7.0)
    styles = {
        ("accelerated", "hull"): ("o", "tab:blue"),
        ("accelerated", "ball"): ("s", "tab:green"),
        ("direct", "hull"): ("x", "black"),
        ("direct", "ball"): ("+", "grey"),
    }
    for (engine, event), g in slopes.groupby(["engine", "event"]):
        marker, color = styles[(engine, event)]
        ax.plot(
            g["beta_mid"],
            g["slope"],
            marker,
            color=color,
            mfc="none",
            markersize=4,
            label=f"{'T2' if event == 'hull' else 'ball'}, {engine}",
        )
    m = merge.sort_values("beta")
    predicted = (m["beta"] * m["gap"]).diff() / m["beta"].diff()
    mid = (m["beta"] + m["beta"].shift()) / 2
    ax.plot(
        mid,
        predicted,
        "-",
        color="tab:orange",
        linewidth=1,
        label="Δ(βΔ(β))/Δβ, gap at the merge points",
    )
    ax.axhline(setup["c0"], color="tab:red", linestyle="--", label=f"c0 = {setup['c0']:.3g}")
    ax.axhline(
        setup["theorem_exponent"],
        color="black",
        linestyle="--",
        label=f"Thm 5.4 exponent {setup['theorem_exponent']:.3g}",
    )
    for _, f in fits[fits["event"] == "hull"].iterrows():
        if f["range"].startswith("accelerated, direct"):
            continue
        ax.plot(
            [f["beta_min"], f["beta_max"]],
            [f["b"]] * 2,
            "-",
            linewidth=3,
            alpha=0.4,
            label=f"fit b, {f['range']}: {f['b']:.3f}",
        )
    ax.set_ylim(0, 2.0)
    ax.set_xlabel("β")
    ax.set_ylabel("local exponent Δ log E[T] / Δβ")
    ax.set_title("Local exponent of the exit time against β", fontsize="medium")
    ax.legend(fontsize="x-small", frameon=False, loc="lower right", ncols=2)
    fig.savefig(path, dpi=150)


def figures(out: Path) -> None:
    """Draw the study's figures from the tables in ``out`` ([FW] Thm 5.4).

    Parameters
    ----------
    out : Path
        Holds the tables of ``run.py``; receives survival_T2.png (P[T2 >= t] per β against the
        bound), survival_rescaled.png (memorylessness), arrhenius.png (E[T] against β over the
        whole range) and local_slope.png (the local exponent against β).
    """
    out = Path(out)
    chains, meta = read_table(out / "chains.parquet")
    per, slopes, merge, fits = read_tables(
        out, "per_beta.csv", "local_slopes.csv", "merge.csv", "exponent.csv"
    )
    setup = meta["setup"]
    survival_against_bound(chains, setup, out / "survival_T2.png")
    survival_rescaled(chains, out / "survival_rescaled.png")
    arrhenius(
        chains,
        per,
        setup,
        float(Config.from_dict(checks_config(out)).tail_from_beta),
        out / "arrhenius.png",
    )
    local_slope_figure(slopes, merge, setup, fits, out / "local_slope.png")
