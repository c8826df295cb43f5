"""Figures of the sphere-metastability study (docs: models#sphere-statements (7)).

Reads only the files that ``run.py`` wrote into ``out``: chains.parquet, per_beta.csv, law.csv,
exponent.csv, crosscheck.csv, rd.csv, checks.csv and their sidecars.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_row, draw, palette
from metastab.studies.runner import read_tables
from metastab.studies.verdict import checks_config, read_checks

from .config import Config

LOG10 = math.log(10)
MIN_MEAN = 20.0  # law.png (a) shows the β with E[T_jump] >= this, where T/E[T] is near Exp(1)
LABELS = {"jump": "T_jump (first moving pick)", "cap": "T_cap (leave the ε-cap)"}


def inputs(out: Path) -> SimpleNamespace:
    per, meta = read_table(out / "per_beta.csv")
    law, fits, cross, rd, tol = read_tables(
        out, "law.csv", "exponent.csv", "crosscheck.csv", "rd.csv", "merge_tol.csv"
    )
    checks = read_checks(out / "checks.csv") if (out / "checks.csv").exists() else None
    config = Config.from_dict(checks_config(out) if checks is not None else meta["config"])
    return SimpleNamespace(
        out=out,
        per=per,
        meta=meta,
        s=meta["setup"],
        config=config,
        law=law,
        fits=fits,
        cross=cross,
        rd=rd,
        tol=tol,
        checks=checks,
    )


# --------------------------------------------------------------------------- figures


def _arrhenius(out: Path) -> None:
    c = inputs(out)
    fig, (ax, dev) = axes_row(2, width=12.0, height=4.6)
    colors = palette(4)
    for k, name in enumerate(("jump", "cap")):
        for engine, marker in (("accelerated", "o"), ("direct", "x")):
            g = c.per[(c.per["engine"] == engine) & (c.per["event"] == name)].sort_values("beta")
            if g.empty:
                continue
            ax.errorbar(
                g["beta"],
                np.log10(g["mean"]),
                yerr=[
                    np.log10(g["mean"]) - np.log10(g["mean_low"]),
                    np.log10(g["mean_high"]) - np.log10(g["mean"]),
                ],
                fmt=marker,
                ms=4,
                color=colors[k],
                label=f"sphere {LABELS[name]}, {engine}",
            )
    exact = c.law[c.law["engine"] == "accelerated"].sort_values("beta")
    ax.plot(exact["beta"], exact["exact_log_mean"] / LOG10, "-", color="k", lw=1, label="exact law")
    rd = c.rd[(c.rd["kind"] == "mean") & (c.rd["event"] == "hull")].sort_values("beta")
    if not rd.empty:
        ax.plot(rd["beta"], np.log10(rd["mean"]), "s", ms=3, color=colors[2], label="R^d T2")
    ax.axhline(math.log10(float(c.config.target_mean)), ls=":", color="grey", lw=1)
    ax.set_xlabel("β")
    ax.set_ylabel("log10 E[T] (steps)")
    ax.set_title("(a) mean escape time")
    ax.legend(fontsize="x-small")
    # (b) log E[T] − the asymptote βΔ − log N
    line = lambda b: b * c.s["delta"] - c.s["log_prefactor"]  # noqa: E731
    for k, name in enumerate(("jump", "cap")):
        g = c.per[(c.per["engine"] == "accelerated") & (c.per["event"] == name)]
        g = g.sort_values("beta")
        dev.errorbar(
            g["beta"],
            (np.log(g["mean"]) - line(g["beta"])) / LOG10,
            yerr=[
                np.log10(g["mean"]) - np.log10(g["mean_low"]),
                np.log10(g["mean_high"]) - np.log10(g["mean"]),
            ],
            fmt="o",
            ms=4,
            color=colors[k],
            label=LABELS[name],
        )
    if not rd.empty:
        dev.plot(
            rd["beta"],
            (np.log(rd["mean"]) - line(rd["beta"])) / LOG10,
            "s",
            ms=3,
            color=colors[2],
            label="R^d T2 (spread start, same line)",
        )
    dev.plot(exact["beta"], (exact["exact_log_mean"] - line(exact["beta"])) / LOG10, "k-", lw=1)
    dev.axhline(0.0, color="grey", lw=0.8)
    dev.set_xlabel("β")
    dev.set_ylabel("log10 E[T] − log10(e^{βΔ}/N)")
    dev.set_title(f"(b) against the asymptote, Δ = {c.s['delta']:.4g}")
    dev.legend(fontsize="x-small")
    fig.savefig(out / "arrhenius.png", dpi=150)


def _law(out: Path) -> None:
    c = inputs(out)
    fig, (ax, pv) = axes_row(2, width=12.0, height=4.4)
    chains, _ = read_table(out / "chains.parquet")
    jump = chains[(chains["event"] == "jump") & ~chains["censored"]]
    colors = palette(2)
    for k, engine in enumerate(("direct", "accelerated")):
        rows = c.law[c.law["engine"] == engine]
        for _, r in rows[rows["exact_mean"] >= MIN_MEAN].iterrows():
            t = jump[(jump["engine"] == engine) & np.isclose(jump["beta"], r["beta"])]["steps"]
            x = np.sort(t.to_numpy() / r["exact_mean"])
            ax.step(x, 1 - np.arange(1, x.size + 1) / x.size, where="post", color=colors[k], lw=0.5)
    grid = np.linspace(0, 8, 200)
    ax.plot(grid, np.exp(-grid), "k--", lw=1.5, label="e^{−x} (exact law, large E[T])")
    ax.plot(grid, np.exp(-1.5 * grid), "r:", lw=1.5, label="control (no self-picks): rate × 3/2")
    for k, engine in enumerate(("direct", "accelerated")):
        ax.plot([], [], color=colors[k], label=f"{engine}, one line per β")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1)
    ax.set_xlabel("T_jump / E_exact[T]")
    ax.set_ylabel("P[T > t]")
    ax.set_title(f"(a) T_jump / its exact mean, every β with E[T] ≥ {MIN_MEAN:g}")
    ax.legend(fontsize="x-small")
    for k, engine in enumerate(("direct", "accelerated")):
        rows = c.law[c.law["engine"] == engine]
        pv.plot(rows["beta"], rows["ks_p"], "o", color=colors[k], label=f"law, {engine}")
        pv.plot(rows["beta"], rows["control_p"], "x", color=colors[k], label=f"control, {engine}")
    pv.set_yscale("log")
    pv.axhline(float(c.config.ks_level), ls=":", color="grey")
    pv.axhline(float(c.config.control_level), ls="--", color="grey")
    pv.set_xlabel("β")
    pv.set_ylabel("KS p of the randomised PIT")
    pv.set_title("(b) the exact law and the negative control")
    pv.legend(fontsize="x-small")
    fig.savefig(out / "law.png", dpi=150)


def figures(out: Path) -> None:
    """arrhenius.png and law.png, from the tables in ``out``."""
    draw(out, _arrhenius, _law)
