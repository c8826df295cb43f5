"""Figures of the clustering study ([FW] Thm 5.2), reading only the study's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.figures import axes_grid, legend_below
from metastab.studies.verdict import checks_config

from .config import Config


def load(out: Path):
    summary, _ = read_table(out / "summary.csv")
    chains, _ = read_table(out / "chains.parquet")
    profiles, _ = read_table(out / "profiles.csv")
    polys, _ = read_table(out / "polytopes.csv")
    return summary, chains, profiles, polys.set_index("polytope")


def _panels(summary: pd.DataFrame):
    """(polytope, gamma) pairs in a fixed order, one panel each."""
    return list(summary.groupby(["polytope", "gamma"], sort=True).groups)


def _shade_empty(ax, threshold: float, lo: float):
    """Grey band over the betas where the theorem's initial condition does not exist."""
    ax.axvspan(lo / 1.5, threshold, color="0.9", zorder=0, label="eroded cones empty")


def _pair_panels(summary, path, title, draw, legend_first=False):
    """One panel per (polytope, γ), drawn by ``draw(ax, name, gamma)``; the legend on the first
    panel only with ``legend_first``."""
    pairs = _panels(summary)
    fig, axes = axes_grid(2, (len(pairs) + 1) // 2)
    for ax, (name, gamma) in zip(axes.T.ravel(), pairs):
        draw(ax, name, gamma)
        ax.set_title(f"{name}, γ = {gamma:g}", fontsize="medium")
    if legend_first:
        axes.ravel()[0].legend(fontsize="small", frameon=False)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)


def _polytope_panels(summary, polys, path, curves, ylabel, finish, per_gamma=None):
    """One panel per polytope against β (log): per γ (the j-th), one line per ``curves`` entry
    (column, format, label template with {gamma}, keyword arguments) and
    ``per_gamma(ax, j, gamma)``; then ``finish(ax, rows of the polytope)``."""
    names = sorted(summary["polytope"].unique())
    fig, axes = axes_grid(1, len(names), height=5.4)
    for ax, name in zip(axes.ravel(), names):
        s = summary[summary["polytope"] == name]
        _shade_empty(ax, polys.loc[name, "beta_threshold"], s["beta"].min())
        for j, (gamma, g) in enumerate(s.groupby("gamma")):
            for column, fmt, label, kwargs in curves:
                ax.plot(
                    g["beta"],
                    g[column],
                    fmt,
                    color=f"C{j}",
                    label=label.format(gamma=f"{gamma:g}"),
                    **kwargs,
                )
            if per_gamma is not None:
                per_gamma(ax, j, gamma)
        ax.set_xscale("log")
        ax.set_xlabel("β")
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize="medium")
        finish(ax, s)
    legend_below(fig, axes)
    fig.savefig(path, dpi=110)


def hitting_time_figure(summary, polys, path):
    """Median hitting time of the near-vertex event against β, with T1 dashed."""

    def draw(ax, name, gamma):
        s = summary[(summary["polytope"] == name) & (summary["gamma"] == gamma)]
        _shade_empty(ax, polys.loc[name, "beta_threshold"], s["beta"].min())
        ax.fill_between(
            s["beta"],
            s["hit_q10"],
            s["hit_q90"],
            color="C0",
            alpha=0.25,
            label="random starts, 10–90%",
        )
        ax.plot(s["beta"], s["hit_median"], "o-", color="C0", label="random starts, median")
        ax.plot(s["beta"], s["hit_extreme_median"], "s-", color="C3", label="extreme start")
        ax.plot(s["beta"], s["T1_median"], "k--", label="predicted T1 (median)")
        ax.set_xscale("log")
        ax.set_xlim(s["beta"].min() / 1.5, s["beta"].max() * 1.5)
        ax.set_xlabel("β")
        ax.set_ylabel("hitting time (steps)")

    title = "Thm 5.2: first step with vertex tokens within β^(-1/4), others within C_event·τ"
    _pair_panels(summary, path, title, draw, legend_first=True)


def distribution_figure(chains, summary, path):
    """Empirical CDF of the hitting time per β (random starts, admissible β only)."""
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"]

    def draw(ax, name, gamma):
        ok = summary[
            (summary["polytope"] == name) & (summary["gamma"] == gamma) & summary["cones_ok"]
        ]
        for i, beta in enumerate(ok["beta"]):
            g = chains[
                (chains["polytope"] == name)
                & (chains["gamma"] == gamma)
                & (chains["beta"] == beta)
                & (chains["start"] == "random")
            ]
            t = np.sort(g["hit_step"].where(~g["censored"], np.inf).to_numpy())
            ax.step(
                np.r_[0, t],
                np.r_[0, np.arange(1, t.size + 1) / t.size],
                where="post",
                color=cmap(i / max(len(ok) - 1, 1)),
                label=f"β = {beta:g}",
            )
        T1 = ok["T1_median"].median()
        ax.axvline(T1, color="k", ls="--", label=f"predicted T1, median = {T1:g}")
        ax.set_xlabel("hitting time (steps)")
        ax.set_ylabel("P[hit by t]")
        ax.legend(fontsize="x-small", frameon=False, loc="lower right")

    title = "Distribution of the hitting time where the theorem applies (random starts)"
    _pair_panels(summary, path, title, draw)


def probability_figure(summary, polys, C_event, path):
    """P̂[event at T1] against β, with the bound 1 − β^{−1/8} dashed."""
    curves: tuple[tuple[str, str, str, dict], ...] = (
        ("P_event_T1", "o-", f"γ = {{gamma}}: published τ (m = min), C = {C_event:g}", {}),
        ("P_event_T1_max", "s:", "γ = {gamma}: M = max in τ, T1, C = 1/(1−γ)", {}),
    )

    def bound(ax, s):
        b = np.geomspace(s["beta"].min(), s["beta"].max(), 200)
        ax.plot(b, 1 - b ** (-1 / 8), "k--", label="bound 1 − β^(-1/8)")
        ax.set_ylim(-0.03, 1.03)

    ylabel = "P[event at step T1] (random starts)"
    _polytope_panels(summary, polys, path, curves, ylabel, bound)


def smallest_C_figure(summary, polys, path):
    """Smallest C the data support against β (log-log), with 1/(1−γ) dashed."""
    curves: tuple[tuple[str, str, str, dict], ...] = (
        ("C_hat_extreme", "s-", "γ = {gamma}: published, extreme start", {}),
        ("C_hat_random", "o-", "γ = {gamma}: published, random starts", {"alpha": 0.6}),
        ("C_max_hat", "^:", "γ = {gamma}: with M = max, all starts", {}),
    )

    def limit(ax, j, gamma):
        ax.axhline(
            1 / (1 - gamma), color=f"C{j}", ls="--", lw=1, label=f"1/(1−γ) = {1 / (1 - gamma):.3g}"
        )

    def log_y(ax, s):
        ax.set_yscale("log")

    ylabel = "smallest C with P̂[event at T1] ≥ 1 − β^(-1/8)"
    _polytope_panels(summary, polys, path, curves, ylabel, log_y, limit)


def profile_figure(profiles, summary, path):
    """Median D_t / M against t (log y) for a few β, with the hardmax law (1 − γ)^t dashed."""
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"]

    def draw(ax, name, gamma):
        p = profiles[
            (profiles["polytope"] == name)
            & (profiles["gamma"] == gamma)
            & (profiles["start"] == "random")
        ]
        betas = np.unique(p["beta"])
        show = betas[
            np.unique(np.linspace(0, betas.size - 1, min(5, betas.size)).round().astype(int))
        ]
        for i, beta in enumerate(show):
            g = p[p["beta"] == beta]
            color = cmap(i / max(len(show) - 1, 1))
            ax.fill_between(g["step"], g["q10"], g["q90"], color=color, alpha=0.15)
            ax.plot(g["step"], g["median"], color=color, label=f"β = {beta:g}")
        t = np.arange(p["step"].max() + 1)
        ax.plot(t, (1 - gamma) ** t, "k--", label="hardmax (1 − γ)^t")
        ax.set_yscale("log")
        ax.set_ylim(max(p["q10"].min(), 1e-8) / 2, 2)
        ax.set_xlabel("step t")
        ax.set_ylabel("max_i |x_i − v_σ(i)| / its value at t = 0")
        ax.legend(fontsize="x-small", frameon=False, loc="lower left")

    title = "Contraction into the vertices (random starts, median and 10–90%)"
    _pair_panels(summary, path, title, draw)


def figures(out: Path) -> None:
    """Draw every figure of the clustering study into ``out``."""
    out = Path(out)
    summary, chains, profiles, polys = load(out)
    C_event = float(Config.from_dict(checks_config(out)).C_event)
    hitting_time_figure(summary, polys, out / "hitting_time.png")
    distribution_figure(chains, summary, out / "hitting_distribution.png")
    probability_figure(summary, polys, C_event, out / "probability_at_T1.png")
    smallest_C_figure(summary, polys, out / "smallest_C.png")
    profile_figure(profiles, summary, out / "contraction.png")
