"""Figures of the hardmax-psd study; reads only the tables that run.py wrote."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats

from metastab.results import read_table
from metastab.studies.figures import axes_row, draw, palette

# Smallest normalised distance drawn on log axes: float64 roundoff of |x − v| / |x^0 − v|.
EPS_FLOOR = 1e-17


def halving_limit() -> float:
    """Π_{τ>=0} (1 − 2^{−τ−1}) ≈ 0.288788: where the 2^{−τ−1} schedule stops."""
    return float(np.prod(1 - 0.5 ** np.arange(1, 80)))


def rates_figure(out: Path):
    lines, _ = read_table(out / "lines.csv")
    fig, (left, right) = axes_row(2, 12.0, 6.0)
    first = lines["polytope"].iloc[0]
    schedules = list(dict.fromkeys(lines["schedule"]))
    for colour, name in zip(palette(len(schedules)), schedules):
        g = lines[(lines["polytope"] == first) & (lines["schedule"] == name)]
        left.plot(g["step"], g["product"].clip(lower=EPS_FLOOR), "--", color=colour, lw=1.5)
        left.plot(
            g["step"], g["ratio_max"].clip(lower=EPS_FLOOR), "o", color=colour, ms=3.5, label=name
        )
    left.axhline(halving_limit(), color="0.4", ls=":", lw=1)
    left.text(
        lines["step"].max(),
        halving_limit() * 1.6,
        "Π(1 − 2^(−τ−1)) ≈ 0.289: stops short",
        ha="right",
        va="bottom",
        fontsize=9,
        color="0.3",
    )
    left.text(
        lines["step"].max(),
        3e-12,
        "tie-tolerance floor (~1e-12)",
        ha="right",
        va="bottom",
        fontsize=9,
        color="0.3",
    )
    left.set_yscale("log")
    left.set_ylim(1e-17, 3)
    left.set_xlabel("step t")
    left.set_ylabel(r"$|x_i^t - v_{\sigma(i)}| \,/\, |x_i^0 - v_{\sigma(i)}|$")
    left.set_title(
        f"{first}: measured (dots, all tokens) vs "
        r"$\prod_{\tau<t}(1-\gamma^\tau)$ (dashed)"
    )
    left.legend(loc="lower left")
    for (poly, name), g in lines.groupby(["polytope", "schedule"], sort=False):
        colour = palette(len(schedules))[schedules.index(name)]
        marker = {p: m for p, m in zip(dict.fromkeys(lines["polytope"]), "o^s")}[poly]
        right.plot(
            g["step"],
            g["vector_error"].clip(lower=EPS_FLOOR),
            marker=marker,
            ms=3,
            lw=0.8,
            color=colour,
            label=f"{poly}, {name}",
        )
    right.set_yscale("log")
    right.set_ylim(1e-17, 1e-10)
    right.set_xlabel("step t")
    right.set_ylabel(r"$\max_i |x_i^t - v - \Pi_t (x_i^0 - v)| \,/\, |x_i^0 - v|$")
    right.set_title("deviation from the straight-line law (all polytopes)")
    right.legend(fontsize=7, ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    fig.savefig(out / "rates.png", dpi=110)


def paths_figure(out: Path):
    paths, _ = read_table(out / "paths.csv")
    name = next(s for s in dict.fromkeys(paths["schedule"]) if s.startswith("constant"))
    g = paths[paths["schedule"] == name]
    fig, (ax,) = axes_row(1, 6.0, 6.0)
    start = g[g["step"] == 0].sort_values("token")
    end = g[g["step"] == g["step"].max()].sort_values("token")
    fixed = np.isclose(start["x"].to_numpy(), end["x"].to_numpy(), atol=0) & np.isclose(
        start["y"].to_numpy(), end["y"].to_numpy(), atol=0
    )
    V = start[fixed][["x", "y"]].to_numpy()
    order = np.argsort(np.arctan2(V[:, 1], V[:, 0]))
    closed = np.vstack([V[order], V[order][:1]])
    ax.plot(closed[:, 0], closed[:, 1], "k-", lw=1)
    colours = palette(len(V))
    for _, path in g.groupby("token"):
        xy = path.sort_values("step")[["x", "y"]].to_numpy()
        colour = colours[int(np.argmin(np.linalg.norm(V - xy[-1], axis=1)))]
        ax.plot(xy[:, 0], xy[:, 1], "-", color=colour, lw=0.8)
        ax.plot(xy[:, 0], xy[:, 1], ".", color=colour, ms=3)
        ax.plot(*xy[0], "o", mfc="white", mec=colour, ms=5)
    ax.scatter(V[:, 0], V[:, 1], s=50, c="k", zorder=3, label="vertex tokens (never move)")
    ax.plot([], [], "o", mfc="white", mec="0.3", label="$x_i^0$")
    ax.plot([], [], ".-", color="0.3", label="$x_i^t$, one dot per step")
    ax.set_aspect("equal")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title(f"hardmax, B = I, {name}: straight lines into the own vertex")
    ax.legend(loc="lower left", fontsize=8)
    fig.savefig(out / "paths.png", dpi=120)


def ode_figure(out: Path):
    table, _ = read_table(out / "ode.csv")
    curves, _ = read_table(out / "ode_curves.csv")
    fig, (left, right) = axes_row(2, 12.0, 4.6)
    coarse = sorted(curves["dt"].unique())[::-1][:3]
    exact = curves[curves["dt"] == curves["dt"].min()]
    left.plot(exact["t"], exact["x_exact"], "k--", lw=1.5, label=r"exact $e^{-t}x^0 + (1-e^{-t})v$")
    for colour, dt in zip(palette(len(coarse)), coarse):
        g = curves[curves["dt"] == dt]
        left.plot(
            g["t"], g["x_euler"], "o", color=colour, ms=3.5, label=f"hardmax steps, γ = Δt = {dt:g}"
        )
    left.set_xlabel("time t = step × Δt")
    left.set_ylabel("first coordinate of one token")
    left.set_title("hardmax ODE: explicit Euler = hardmax step")
    left.legend()
    right.loglog(table["dt"], table["max_error"], "o-", label="measured max error")
    dts = np.geomspace(table["dt"].min(), table["dt"].max(), 50)
    right.loglog(dts, dts / (2 * math.e), "k--", label=r"$\Delta t/(2e)$ (first order)")
    right.set_xlabel("Δt = γ")
    right.set_ylabel(r"$\max_{i,t} |x_i - x_i^{ODE}(t)| / |x_i^0 - v|$")
    right.set_title("Euler error against the closed-form solution")
    right.legend()
    fig.savefig(out / "ode.png", dpi=110)


def _wilson(count, total):
    """95 % Wilson interval of a binomial proportion (works at count 0)."""
    ci = stats.binomtest(int(count), int(total)).proportion_ci(0.95, method="wilson")
    return ci.low, ci.high


def gaussian_figure(out: Path):
    table, _ = read_table(out / "gaussian.csv")
    fig, (left, right) = axes_row(2, 12.0, 4.6)
    for colour, (k, g) in zip(palette(table["k"].nunique()), table.groupby("k")):
        frac = g["vertices_not_owning"] / g["vertices"]
        ci = np.array([_wilson(c, t) for c, t in zip(g["vertices_not_owning"], g["vertices"])])
        seen = frac > 0
        left.errorbar(
            g["d"][seen],
            frac[seen],
            yerr=[frac[seen] - ci[seen, 0], ci[seen, 1] - frac[seen]],
            fmt="o",
            color=colour,
            ms=4,
            capsize=2,
            label=f"k = {k}",
        )
        left.plot(g["d"][~seen], ci[~seen, 1], "v", color=colour, mfc="none", ms=6)
        left.plot(g["d"], 1 - g["theory_vertex_owning"], "--", color=colour, lw=1.2)
        allown = 1 - g["polytopes_not_all_owning"] / g["draws"]
        right.plot(g["d"], allown, "o-", color=colour, ms=4, lw=1, label=f"k = {k}")
        right.plot(g["d"], g["union_bound_all_owning"], "--", color=colour, lw=1)
    left.plot([], [], "k--", label=r"exact $1 - E[\Phi(\sqrt{\chi^2_d})^{k-1}]$")
    left.plot([], [], "kv", mfc="none", label="none seen: 95 % upper bound")
    left.set_yscale("log")
    left.set_ylim(1e-6, 1.5)
    left.set_xlabel("dimension d")
    left.set_ylabel("fraction of vertices NOT owning their cell")
    left.set_title("k i.i.d. Gaussian vertices in $R^d$")
    left.legend(fontsize=8, ncols=2)
    right.plot([], [], "k--", label=r"union bound $1 - k(1-p_{own})$")
    right.set_xlabel("dimension d")
    right.set_ylabel("fraction of polytopes where\nevery vertex owns its cell")
    right.set_ylim(-0.02, 1.02)
    right.set_title(f"{int(table['draws'].iloc[0])} draws per point")
    right.legend(fontsize=8)
    fig.savefig(out / "gaussian.png", dpi=110)


def figures(out: Path) -> None:
    """Draw rates.png, paths.png, ode.png and gaussian.png from the tables in ``out``."""
    draw(out, rates_figure, paths_figure, ode_figure, gaussian_figure)
