"""Figures of the hardmax-nsd study; reads only the tables that run.py wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_row, draw, palette
from metastab.studies.verdict import checks_config

from .config import Config

# --------------------------------------------------------------------------- figures


def counterexample_figure(out: Path):
    data, meta = read_table(out / "counterexample.csv")
    fig, (left, right) = axes_row(2, 12.0, 4.6)
    t = data["step"].clip(lower=0.5)
    left.plot(t, data["x1"], "o-", ms=3, lw=1, label="token 1, $x^0 = 3$")
    left.plot(t, data["x2"], "s-", ms=3, lw=1, label="token 2, $x^0 = -1$")
    left.axhline(1 / 3, color="k", ls="--", lw=1, label="1/3")
    left.axhline(0, color="0.5", ls=":", lw=1, label="minimiser of J over $K^0$ (origin)")
    left.set_xscale("log")
    left.set_xlabel("step t (t = 0 drawn at 0.5)")
    left.set_ylabel("position $x_i^t$")
    left.set_title(r"$d = 1$, $B = -1$, $\gamma^t = 2/(t+2)$: both tokens end at 1/3")
    left.legend()
    s = data[data["step"] >= 1]
    for col, marker, name in (("J1", "o", "token 1"), ("J2", "s", "token 2")):
        right.plot(
            s["step"],
            s[col] - s["J_min_K0"],
            marker,
            ms=3,
            label=rf"{name}: $J(x_i^t) - \min_{{K^0}} J$",
        )
    right.plot(
        s["step"],
        s["fw_constant_bound"],
        "k--",
        lw=1.5,
        label=rf"$2LD_0^2/(t+2)$, L = 1, $D_0$ = {meta['D0']:g}",
    )
    right.axhline(1 / 18, color="0.4", ls=":", lw=1, label="1/18")
    gap1 = s["J1"] - s["J_min_Kt"]
    right.plot(
        s["step"][gap1 > 0],
        gap1[gap1 > 0],
        "^",
        ms=3,
        color="tab:green",
        label=r"token 1: $J(x_1^t) - \min_{K^t} J$ (corrected)",
    )
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("step t")
    right.set_ylabel("gap in J")
    right.set_title("the gap to the initial-hull minimum stays 1/18")
    right.legend(fontsize=8)
    fig.savefig(out / "counterexample.png", dpi=110)


def symmetric_figure(out: Path):
    data, _ = read_table(out / "symmetric.csv")
    ks = sorted(data["k"].unique())
    fig, axes = axes_row(len(ks), 6.0 * len(ks), 4.6)
    names = list(dict.fromkeys(data["schedule"]))
    for ax, k in zip(axes, ks):
        for colour, name in zip(palette(len(names)), names):
            g = data[(data["k"] == k) & (data["schedule"] == name)]
            ax.plot(g["step"], g["predicted"].clip(lower=1e-18), "--", color=colour, lw=1.5)
            ax.plot(
                g["step"], g["radius_max"].clip(lower=1e-18), "o", color=colour, ms=3, label=name
            )
        ax.plot([], [], "k--", label=r"exact $\prod_\tau |1 - c_k\gamma^\tau|$")
        ax.set_yscale("log")
        ax.set_ylim(1e-18, 3)
        ax.set_xlabel("step t")
        ax.set_ylabel(r"$\max_a |x_a^t|$ (distance to the origin)")
        ax.set_title(
            f"regular {k}-gon, B = −I (c_k = {2.0 if k % 2 == 0 else 1 + np.cos(np.pi / k):.3f})"
        )
        ax.legend(fontsize=8)
    fig.savefig(out / "symmetric.png", dpi=110)


def random_figure(out: Path):
    data, _ = read_table(out / "random_steps.csv")
    floor = float(Config.from_dict(checks_config(out)).diameter_floor)
    fig, (left, right) = axes_row(2, 12.5, 5.0)
    cases = list(dict.fromkeys(data["case"]))
    names = list(dict.fromkeys(data["schedule"]))
    colours = palette(len(cases))
    styles = dict(zip(names, ["-", "--", ":"]))
    for (case, name), g in data.groupby(["case", "schedule"], sort=False):
        g = g[(g["step"] >= 1) & (g["diameter_median"] > floor)]
        left.plot(
            g["step"], g["diameter_median"], styles[name], color=colours[cases.index(case)], lw=1.5
        )
    for case, colour in zip(cases, colours):
        left.plot([], [], "-", color=colour, label=case)
    for name in names:
        left.plot([], [], styles[name], color="k", label=name)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("step t")
    left.set_ylabel("diameter of the tokens (median over draws)")
    left.set_title(f"collapse to one point (curves end at {floor:g})")
    left.legend(fontsize=8)
    fw = data[(data["schedule"] == names[0]) & (data["step"] >= 1)]
    for case, colour in zip(cases, colours):
        g = fw[fw["case"] == case]
        right.plot(g["step"], g["initial_gap_median"], "-", color=colour, lw=1.5)
        cur = g[g["current_gap_max"] > 0]
        right.plot(cur["step"], cur["current_gap_max"], ":", color=colour, lw=1.8)
    steps = np.geomspace(1, fw["step"].max(), 100)
    right.plot(steps, 1 / (steps + 2), "k--", lw=1.5, label="bound $1/(t+2)$")
    right.plot(
        [], [], "-", color="0.3", label=r"$\max_i J(x_i^t) - \min_{K^0} J$ (median): printed"
    )
    right.plot([], [], ":", color="0.3", label=r"$\max_i J(x_i^t) - \min_{K^t} J$ (max): corrected")
    for case, colour in zip(cases, colours):
        right.plot([], [], "-", color=colour, label=case)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("step t")
    right.set_ylabel(r"gap in J $/\, (2 L D_0^2)$")
    right.set_title(f"{names[0]}: gap to the initial vs the current hull minimum")
    right.legend(fontsize=8, loc="lower left")
    fig.savefig(out / "random.png", dpi=110)


def figures(out: Path) -> None:
    """Draw counterexample.png, symmetric.png and random.png from the tables in ``out``."""
    draw(out, counterexample_figure, symmetric_figure, random_figure)
