"""Figures of the sphere-orthogonal study (GLPR Thm 6.8 / 6.9), reading its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import NullFormatter

from metastab import theory
from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config

from . import checks as checks_module
from .config import Config


def load(out: Path):
    curves, _ = read_table(out / "cosines.parquet")
    crossing = read_table(out / "crossing.csv")[0]
    random = read_table(out / "random.parquet")[0]
    return curves, crossing, random, Config.from_dict(checks_config(out))


def cosine_figure(out: Path) -> None:
    """γ against t/t*(β) per n: (6.9) lines, rk4 (finest) and post-LN (dt = 0.1) markers; below,
    |mean cosine − γ_β| of the finest rk4 run."""
    curves, crossing, _, cfg = load(out)
    sa = curves[curves["attention"] == "softmax"]
    ns = sorted(sa["n"].unique())
    fig, axes = axes_grid(2, len(ns), width=5.2 * len(ns), height=7.5)
    betas = sorted(sa["beta"].unique())
    colours = dict(zip(betas, palette(len(betas))))
    delta = float(cfg.delta)
    for col, n in enumerate(ns):
        top, bottom = axes[0, col], axes[1, col]
        for beta in betas:
            t_star = theory.orthogonal_time(beta, n, delta=delta)
            t = np.linspace(0, 1.1 * t_star, 300)
            top.plot(t / t_star, theory.orthogonal_cosine(t, beta, n), color=colours[beta])
            rk4 = sa[(sa["n"] == n) & (sa["beta"] == beta) & (sa["scheme"] == "rk4")]
            rk4 = rk4[rk4["dt"] == rk4["dt"].min()]
            post = sa[(sa["n"] == n) & (sa["beta"] == beta) & (sa["scheme"] == "post-ln")]
            post = post[np.isclose(post["dt"], post["dt"].max())]
            thin = max(len(rk4) // 25, 1)
            top.plot(
                rk4["t"][::thin] / t_star,
                rk4["mean"][::thin],
                "o",
                ms=3,
                color=colours[beta],
                label=f"β = {beta:g} (t* = {t_star:.3g})",
            )
            top.plot(
                post["t"][::thin] / t_star, post["mean"][::thin], "x", ms=4, color=colours[beta]
            )
            bottom.semilogy(
                rk4["t"] / t_star,
                np.maximum((rk4["mean"] - rk4["gamma"]).abs(), 1e-17),
                color=colours[beta],
            )
        top.axhline(1 - delta, color="k", ls=":", lw=1)
        top.set_title(
            f"n = {n}: lines (6.9); o rk4 dt = {rk4['dt'].min():g}; x post-LN dt = "
            f"{post['dt'].max():g}",
            fontsize="medium",
        )
        top.set_xlabel("t / t*(β)")
        top.set_ylabel("pairwise cosine γ")
        top.legend(fontsize="small", frameon=False)
        bottom.set_xlabel("t / t*(β)")
        bottom.set_ylabel("|mean cosine − γ_β(t)|, rk4 finest dt")
    fig.savefig(out / "cosines.png", dpi=110)


def convergence_figure(out: Path) -> None:
    """Largest |mean cosine − γ_β| against dt (log–log) per (n, β), with slopes 4 and 1."""
    _, crossing, _, _ = load(out)
    panels = [("softmax", "rk4", 4), ("softmax", "post-ln", 1), ("unnormalized", "rk4", 4)]
    fig, axes = axes_grid(1, 3, width=15, height=4.8)
    for ax, (attention, scheme, order) in zip(axes[0], panels):
        g = crossing[(crossing["attention"] == attention) & (crossing["scheme"] == scheme)]
        keys = sorted(set(zip(g["n"], g["beta"])))
        colours = palette(len(keys))
        for colour, (n, beta) in zip(colours, keys):
            h = g[(g["n"] == n) & (g["beta"] == beta)].sort_values("dt")
            ax.loglog(h["dt"], h["max_error"], "o-", color=colour, ms=4, label=f"n={n}, β={beta:g}")
        if len(g):
            dt = np.array(sorted(g["dt"].unique()))
            ref = g["max_error"].median() * (dt / dt[len(dt) // 2]) ** order
            ax.loglog(dt, ref, "k--", lw=1, label=f"slope {order}")
        eq = "(6.9)" if attention == "softmax" else "(6.10)"
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(f"{scheme}, against {eq}", fontsize="medium")
        ax.set_xlabel("dt")
        ax.set_ylabel("largest |mean cosine − γ_β|")
        ax.legend(fontsize="x-small", frameon=False, ncols=2)
    fig.savefig(out / "convergence.png", dpi=110)


def t_star_figure(out: Path) -> None:
    """t*(β) of (6.9) (lines, per n) with the simulated crossings (rk4 finest, post-LN 0.1)."""
    _, crossing, _, cfg = load(out)
    delta = float(cfg.delta)
    fig, axes = axes_grid(1, 1, width=6.5, height=4.8)
    ax = axes[0, 0]
    sa = crossing[crossing["attention"] == "softmax"]
    ns = sorted(sa["n"].unique())
    beta = np.linspace(0, max(sa["beta"].max(), 1.0), 60)
    for colour, n in zip(palette(len(ns)), ns):
        ax.semilogy(
            beta, theory.phase_boundary(beta, n, delta=delta), color=colour, label=f"(6.9), n = {n}"
        )
        rk4 = checks_module.finest(sa[sa["n"] == n], "softmax")
        ax.plot(
            rk4["beta"], rk4["t_star_sim"], "o", color=colour, label=f"rk4 dt = {rk4['dt'].min():g}"
        )
        post = sa[(sa["n"] == n) & (sa["scheme"] == "post-ln")]
        post = post[post["dt"] == post["dt"].max()]
        ax.plot(
            post["beta"],
            post["t_star_sim"],
            "x",
            color=colour,
            ms=7,
            label=f"post-LN dt = {post['dt'].max():g}",
        )
    ax.set_xlabel("β")
    ax.set_ylabel(f"t*: first time the cosine reaches 1 − {delta:g}")
    ax.legend(fontsize="small", frameon=False)
    fig.savefig(out / "t_star.png", dpi=110)


def random_figure(out: Path) -> None:
    """Thm 6.9: median D(t) against t per d (one panel per β), the bound dashed; right: median
    D(t_ref) against d with √(log d / d)."""
    _, _, random, cfg = load(out)
    betas = sorted(random["beta"].unique())
    t_ref = float(cfg.random.t_ref)
    fig, axes = axes_grid(1, len(betas) + 1, width=5 * (len(betas) + 1), height=4.8)
    ds = sorted(random["d"].unique())
    colours = dict(zip(ds, palette(len(ds))))
    for ax, beta in zip(axes[0], betas):
        g = random[random["beta"] == beta]
        for d in ds:
            h = g[g["d"] == d].groupby("t")
            med = h["max_deviation"].median()
            ax.semilogy(med.index, med, color=colours[d], label=f"d = {d}")
            bound = h["bound"].first()
            ax.semilogy(bound.index[1:], bound.iloc[1:], "--", color=colours[d], lw=0.8)
        ax.set_title(f"β = {beta:g}: median D(t); dashed: Thm 6.9 bound", fontsize="medium")
        ax.set_xlabel("t")
        ax.set_ylabel("D(t) = max over pairs |cosine − γ_β(t)|")
        ax.legend(fontsize="x-small", frameon=False, ncols=2)
    ax = axes[0, -1]
    at = random[np.isclose(random["t"], t_ref)]
    for colour, beta in zip(palette(len(betas)), betas):
        g = at[at["beta"] == beta].groupby("d")["max_deviation"]
        med, lo, hi = g.median(), g.quantile(0.1), g.quantile(0.9)
        ax.errorbar(
            med.index,
            med,
            yerr=[med - lo, hi - med],
            fmt="o-",
            color=colour,
            capsize=3,
            label=f"β = {beta:g}, median (10–90%)",
        )
    d = np.array(ds, dtype=float)
    ref = np.sqrt(np.log(d) / d)
    first = at.groupby("d")["max_deviation"].median().iloc[0]
    ax.plot(d, ref * first / ref[0], "k--", lw=1, label="∝ √(log d / d)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("d")
    ax.set_ylabel(f"D(t = {t_ref:g})")
    ax.set_title("deviation against d", fontsize="medium")
    ax.legend(fontsize="small", frameon=False)
    fig.savefig(out / "random.png", dpi=110)


def figures(out: Path) -> None:
    """Draw every figure of the study into ``out``."""
    draw(out, cosine_figure, convergence_figure, t_star_figure, random_figure)
