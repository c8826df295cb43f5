"""Figures of the lost-in-the-middle study, reading only its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.verdict import checks_config

from . import checks as _checks
from .config import Config


def particles_figure(out: Path) -> None:
    """The largest angle difference from the script's run against time: the package at dt and
    dt/2, and plain causal (USA)."""
    frame = read_table(out / "trajectories.csv")[0]
    script = frame[frame["source"] == "script"]
    fig, axes = axes_grid(1, 2, width=11, height=4.5)
    ax = axes[0, 0]
    for color, source in zip(palette(3), ("package", "package_half", "usa")):
        g = frame[frame["source"] == source]
        d = np.abs(np.angle(np.exp(1j * (g["theta"].to_numpy() - script["theta"].to_numpy()))))
        per = g.assign(d=np.maximum(d, 1e-17)).groupby("time")["d"].max()
        ax.semilogy(per.index, per.values, "o-", ms=3, color=color, label=source)
    ax.set(xlabel="t", ylabel="max_j |θ_j − θ_j(script)|", title="against the authors' run")
    ax.legend(fontsize="small")
    ax = axes[0, 1]
    last = script[script["time"] == script["time"].max()]
    first = script[script["time"] == 0]
    ax.plot(np.cos(first["theta"]), np.sin(first["theta"]), "x", color="0.6", label="t = 0")
    ax.plot(np.cos(last["theta"]), np.sin(last["theta"]), "o", mfc="none", label="script, end")
    pkg = frame[(frame["source"] == "package") & (frame["time"] == frame["time"].max())]
    ax.plot(np.cos(pkg["theta"]), np.sin(pkg["theta"]), ".", ms=3, label="package, end")
    ax.set_aspect("equal")
    ax.set(title="tokens on the circle")
    ax.legend(fontsize="small")
    fig.savefig(out / "particles.png", dpi=120)


def profile_figure(out: Path) -> None:
    """t_crit(β) with the slope's roots; the profiles S_t(s), their minima marked."""
    table = read_table(out / "thresholds.csv")[0]
    prof = read_table(out / "profiles.csv")[0]
    fig, axes = axes_grid(1, 2, width=11, height=4.5)
    ax = axes[0, 0]
    ax.semilogy(table["beta"], table["t_crit"], "-", color="k", label="t_crit(β), formula")
    ax.semilogy(table["beta"], table["t_root"], "o", mfc="none", label="root of the slope at s = 1")
    ax.set(xlabel="β", ylabel="t", title="the threshold")
    ax.legend(fontsize="small")
    ax = axes[0, 1]
    groups = list(prof.groupby(["time", "label"], sort=True))
    for color, ((t, label), g) in zip(palette(len(groups)), groups):
        v = g["value"].to_numpy()
        span = v.max() - v.min() or 1.0
        y = (v - v.min()) / span
        ax.plot(
            g["s"],
            y,
            color=color,
            lw=1,
            label=f"t = {t:.3g}" + ("" if label == "time" else f" ({label})"),
        )
        i = int(np.argmin(v))
        ax.plot(g["s"].iloc[i], 0.0, "o", mfc="none", color=color)
    ax.set(xlabel="source position s", ylabel="(S_t − min) / range", title="retrieval profiles")
    ax.legend(fontsize="x-small", ncols=2)
    fig.savefig(out / "profiles.png", dpi=120)


def simulation_figure(out: Path) -> None:
    """The closed form S_t(s) against the simulated profile at each N (error bars: one standard
    error over the starts) and its 1/N extrapolation, at the times of the shape check."""
    cfg = Config.from_dict(checks_config(out))
    table = read_table(out / "simulation.csv")[0]
    closed = read_table(out / "profiles.csv")[0]
    ext = _checks.extrapolation(out, cfg)
    times = [float(t) for t in cfg.simulation.shape_times]
    fig, axes = axes_grid(1, len(times), width=4.2 * len(times), height=4.2)
    colors = palette(len(cfg.simulation.tokens))
    for ax, t in zip(axes[0], times):
        g = closed[np.isclose(closed["time"], t) & (closed["label"] == "time")]
        ax.plot(g["s"], g["value"], "-", color="k", lw=1.2, label="S_t(s), closed form")
        for j, (color, n) in enumerate(zip(colors, cfg.simulation.tokens)):
            h = table[(table["tokens"] == n) & np.isclose(table["time"], t)]
            shift = (j - 1.5) * 0.006  # side by side
            ax.errorbar(h["s"] + shift, h["mean"], yerr=h["se"], fmt="o", ms=3, color=color,
                        capsize=2, label=f"N = {n}")  # fmt: skip
        e = ext[np.isclose(ext["time"], t)]
        ax.errorbar(e["s"], e["A"], yerr=e["se_A"], fmt="s", mfc="none", color="k", ms=5,
                    capsize=2, label="1/N extrapolation")  # fmt: skip
        ax.set(xlabel="source position s", title=f"t = {t:g}")
    axes[0, 0].set_ylabel("N · correlation")
    axes[0, 0].legend(fontsize="x-small")
    fig.savefig(out / "simulation.png", dpi=120)


def figures(out: Path) -> None:
    draw(out, particles_figure, profile_figure, simulation_figure)
