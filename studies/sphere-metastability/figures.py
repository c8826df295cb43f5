"""Figures and report of the sphere-metastability study (docs: models#sphere-statements (7)).

Reads only the files that ``run.py`` wrote into ``out``: chains.parquet, per_beta.csv, law.csv,
exponent.csv, crosscheck.csv, rd.csv, checks.csv and their sidecars.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.figures import axes_row, draw, palette
from metastab.studies.render import ci as _ci
from metastab.studies.render import fmt as _fmt
from metastab.studies.render import fmt_p
from metastab.studies.render import md_table as _table
from metastab.studies.runner import read_tables
from metastab.studies.verdict import checks_config, read_checks

LOG10 = math.log(10)
MIN_MEAN = 20.0  # law.png (a) shows the β with E[T_jump] >= this, where T/E[T] is near Exp(1)
LABELS = {"jump": "T_jump (first moving pick)", "cap": "T_cap (leave the ε-cap)"}


def _inputs(out: Path) -> SimpleNamespace:
    per, meta = read_table(out / "per_beta.csv")
    law, fits, cross, rd, tol = read_tables(
        out, "law.csv", "exponent.csv", "crosscheck.csv", "rd.csv", "merge_tol.csv"
    )
    checks = read_checks(out / "checks.csv") if (out / "checks.csv").exists() else None
    config = checks_config(out) if checks is not None else meta["config"]
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


def _row(c, criterion: str):
    if c.checks is None:
        return None
    hit = c.checks[c.checks["criterion"] == criterion]
    return None if hit.empty else hit.iloc[0]


def _declared(c, event: str):
    f = c.fits
    at = f[(f["event"] == event) & np.isclose(f["beta_start"], c.config["fit_from_beta"])]
    return None if at.empty else at.iloc[0]


# --------------------------------------------------------------------------- figures


def _arrhenius(out: Path) -> None:
    c = _inputs(out)
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
    ax.axhline(math.log10(float(c.config["target_mean"])), ls=":", color="grey", lw=1)
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
    c = _inputs(out)
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
    pv.axhline(float(c.config["ks_level"]), ls=":", color="grey")
    pv.axhline(float(c.config["control_level"]), ls="--", color="grey")
    pv.set_xlabel("β")
    pv.set_ylabel("KS p of the randomised PIT")
    pv.set_title("(b) the exact law and the negative control")
    pv.legend(fontsize="x-small")
    fig.savefig(out / "law.png", dpi=150)


def figures(out: Path) -> None:
    """arrhenius.png and law.png, from the tables in ``out``."""
    draw(out, _arrhenius, _law)


# --------------------------------------------------------------------------- report


def _header(c) -> list[str]:
    s, cfg = c.s, c.meta["config"]
    return [
        "# Metastability of the chain on the sphere: escape times from clusters against β",
        "",
        "**Question.** How long do tokens of `SphereChain` (V = I: each token picks j with "
        "probability softmax_j(β<x_i, x_j>) and moves to N(x_i + γ(x_j − x_i))) stay in "
        "clusters, against β? No paper states it (sphere.md, statement 7); science.md §3 gives "
        "the exact law of the first cross pick for the R^d chain, and it carries over.",
        "",
        f"**Setup.** κ = {s['kappa']} clusters at the points of the regular simplex on "
        f"S^{s['d'] - 1} (cos θ = {_fmt(s['cos_min'], 4)} between any two), {s['per_point']} "
        f"tokens on every point (n = {s['n']}), γ = {s['gamma']:g}. Self-picks and picks of "
        "tokens on the own point are exact no-ops, so the chain is frozen until the first step "
        "with a moving pick: T_jump is geometric with p = 1 − Π_a q_a^{m_a} "
        "(`theory.sphere_frozen_law`) and log E[T_jump] = βΔ − log N + o(1) with "
        f"Δ = 1 − cos θ = {_fmt(s['delta'], 5)} and N = {_fmt(math.exp(s['log_prefactor']), 4)} "
        "(`theory.frozen_asymptote`). Escape events, both `LeaveBall` around each token's start "
        f"with common random numbers: **T_jump** with radius {_fmt(s['eps_jump'], 4)} (half "
        f"the chord {_fmt(s['jump_chord_min'], 4)} that one pick moves a token: exactly the "
        f"first moving pick) and **T_cap** with radius ε = {_fmt(s['eps_cap'], 4)} = 2γ d(K), "
        "the R^d study's margin: one pick does not leave it. On the sphere a moved token is a "
        "cluster of its own (its self-score 1 is the largest), so leaving the cap takes more.",
        "",
        f'Direct stepping (`mode="exact"`, seed {cfg["seed"]}) runs β = '
        f"{', '.join(f'{b:g}' for b in cfg['direct_jump_betas'])} (T_jump, "
        f"{cfg['direct_jump_chains']} chains) and β = "
        f"{', '.join(f'{b:g}' for b in cfg['direct_cap_betas'])} (T_cap, "
        f"{cfg['direct_cap_chains']} chains); the accelerated engine "
        f'(`mode="accelerated"`, seed {cfg["accelerated_seed"]}, merge_tol '
        f"{cfg['merge_tol']:g}) the grid β = {cfg['accelerated_beta_start']:g}, "
        f"{cfg['accelerated_beta_start'] + cfg['accelerated_beta_step']:g}, …, "
        f"{cfg['accelerated_beta_stop']:g} with {cfg['accelerated_jump_chains']} chains "
        f"(T_jump) and {cfg['accelerated_cap_chains']} (T_cap) per β.",
        "",
    ]


def _reach(c) -> list[str]:
    fast = c.per[c.per["engine"] == "accelerated"]
    jump = fast[fast["event"] == "jump"].set_index("beta")
    cap = fast[fast["event"] == "cap"].set_index("beta")
    law = c.law[c.law["engine"] == "accelerated"].set_index("beta")
    top = float(jump.index.max())
    r = jump.loc[top]
    wall = fast.groupby("beta")["wall_s"].sum()
    lines = [
        "## Reach",
        "",
        f"The accelerated engine reached **β = {top:g}, where E[T_jump] = "
        f"{_fmt(r['mean'], 3)} steps** (exact {_fmt(law.loc[top, 'exact_mean'], 3)}; "
        f"{int(r['events'])} escapes of {int(r['chains'])} chains, 95 % CI "
        f"{_ci(r['mean_low'], r['mean_high'])}), and E[T_cap] = "
        f"{_fmt(cap.loc[top, 'mean'], 3) if top in cap.index else '–'}. A β took "
        f"{_fmt(float(wall.median()), 3)} s for both events (median; at most "
        f"{_fmt(float(wall.max()), 3)} s, at β = {wall.idxmax():g}, the first call of a "
        "run includes compiling the kernels unless cached); "
        + "the grid runs every β of the config (never cut by the wall clock).",
        "",
    ]
    frame = pd.DataFrame(
        {
            "beta": jump.index,
            "exact": law["exact_mean"].reindex(jump.index).to_numpy(),
            "jump": jump["mean"].to_numpy(),
            "jump_ci": [_ci(a, b) for a, b in zip(jump["mean_low"], jump["mean_high"])],
            "cap": cap["mean"].reindex(jump.index).to_numpy(),
            "cap_ci": [
                _ci(a, b)
                for a, b in zip(
                    cap["mean_low"].reindex(jump.index), cap["mean_high"].reindex(jump.index)
                )
            ],
            "ratio": (cap["mean"].reindex(jump.index) / jump["mean"]).to_numpy(),
            "events": (
                cap["jumps"].reindex(jump.index) / cap["events"].reindex(jump.index)
            ).to_numpy(),
            "wall": (jump["wall_s"] + cap["wall_s"].reindex(jump.index)).to_numpy(),
        }
    )
    ratio = frame.dropna(subset=["ratio"])
    if len(ratio) >= 2:
        first, last = ratio.iloc[0], ratio.iloc[-1]
        lines += [
            f"E[T_cap]/E[T_jump] is {_fmt(first['ratio'], 3)} at β = {first['beta']:g} and "
            f"{_fmt(last['ratio'], 3)} at β = {last['beta']:g} (largest "
            f"{_fmt(float(ratio['ratio'].max()), 3)}, smallest "
            f"{_fmt(float(ratio['ratio'].min()), 3)}): how many times longer the escape from "
            "the cap takes than the first moving pick.",
            "",
        ]
    lines += [
        "Per β, accelerated engine:",
        "",
        _table(
            frame,
            {
                "beta": "β",
                "exact": "exact E[T_jump]",
                "jump": "E[T_jump]",
                "jump_ci": "95 % CI",
                "cap": "E[T_cap]",
                "cap_ci": "95 % CI",
                "ratio": "E[T_cap]/E[T_jump]",
                "events": "events drawn per cap escape",
                "wall": "wall s (β)",
            },
        ),
        "",
    ]
    return lines


def _law_text(c) -> list[str]:
    law = c.law
    # the R^d token moved from u_a towards u_b: x = (1 − γ) u_a + γ u_b
    g, cos = c.s["gamma"], c.s["cos_min"]
    old, own = 1 - g + g * cos, (1 - g) ** 2 + g**2 + 2 * g * (1 - g) * cos
    lines = ["## The exact law of T_jump", ""]
    for engine in ("direct", "accelerated"):
        g = law[law["engine"] == engine]
        if g.empty:
            continue
        lines.append(
            f"- {engine}: at {len(g)} β ({g['beta'].min():g}…{g['beta'].max():g}, "
            f"{int(g['chains'].min())} chains each) the KS p of the randomised PIT against the "
            f"exact law runs from {fmt_p(float(g['ks_p'].min()))} to "
            f"{fmt_p(float(g['ks_p'].max()))}; against the no-self-pick law (the negative "
            f"control) the largest is {fmt_p(float(g['control_p'].max()))}."
        )
    beyond = law[(law["engine"] == "accelerated") & (law["exact_mean"] >= c.config["target_mean"])]
    if not beyond.empty:
        lines.append(
            f"- Beyond E[T] = {_fmt(float(c.config['target_mean']), 2)} (β ≥ "
            f"{beyond['beta'].min():g}, {len(beyond)} β): smallest KS p "
            f"{fmt_p(float(beyond['ks_p'].min()))}, sample means within "
            f"{_fmt(float((beyond['sample_mean'] / beyond['exact_mean'] - 1).abs().max()), 2)} "
            "of the exact 1/p (relative)."
        )
    lines += [
        "",
        "The R^d chain from the same clustered start has the same first-pick law: the scores "
        "at the points are the same and its self- and in-group picks are no-ops too; the two "
        "chains differ only after the first moving pick: a moved R^d token scores its old point "
        f"above itself ({_fmt(old, 3)} against |x|² = {_fmt(own, 3)}) and is pulled back by its "
        "next pick, while a moved token on the sphere scores itself highest (1) and stays put "
        "until a rarer pick.",
        "",
        "![law](law.png)",
        "",
    ]
    return lines


def _exponents(c) -> list[str]:
    lines = ["## Scaling fits", ""]
    fits = c.fits
    frame = fits.assign(
        b_ci=[_ci(a, b, 4) for a, b in zip(fits["b_low"], fits["b_high"])],
        b_boot=[_ci(a, b, 4) for a, b in zip(fits["b_boot_low"], fits["b_boot_high"])],
        a_ci=[_ci(a, b, 4) for a, b in zip(fits["a_low"], fits["a_high"])],
        bk_ci=[_ci(a, b, 4) for a, b in zip(fits["bk_low"], fits["bk_high"])],
    )
    lines += [
        f"Censored fits of log E[T] = a + bβ to the accelerated engine's chains on β ≥ β_0 "
        f"(declared: β_0 = {c.config['fit_from_beta']:g}), profile 95 % intervals, and "
        f"from the declared start also bootstrap ones "
        f"({int(fits['n_bootstrap'].max()) if not fits.empty else 0} resamples);"
        f" the exact law says b = Δ = {_fmt(c.s['delta'], 5)} and a = −log N = "
        f"{_fmt(-c.s['log_prefactor'], 5)} for T_jump. Columns bk, k: the fit with a β^k "
        "prefactor.",
        "",
        _table(
            frame,
            {
                "event": "event",
                "beta_start": "β_0",
                "beta_max": "β_max",
                "b": "b",
                "b_ci": "profile",
                "b_boot": "bootstrap",
                "a": "a",
                "a_ci": "a profile",
                "bk": "bk",
                "bk_ci": "bk profile",
                "k": "k",
            },
            digits=5,
        ),
        "",
    ]
    jump, cap = _declared(c, "jump"), _declared(c, "cap")
    if jump is not None:
        ok = _row(c, "exponent")
        lines.append(
            f"On the declared range the exponent of T_jump is b = {_fmt(jump['b'], 5)} "
            f"{_ci(ok['low'], ok['high'], 5) if ok is not None else ''}, and Δ = "
            f"{_fmt(c.s['delta'], 5)} lies "
            + (
                "inside"
                if ok is not None and ok["pass"] == "true"
                else "outside"
                if ok is not None
                else "–"
            )
            + " the interval."
        )
    if cap is not None:
        row = _row(c, "cap_exponent")
        sens = _row(c, "cap_range_sensitivity")
        lines.append(
            f"The escape from the cap has b = {_fmt(cap['b'], 5)} "
            + (
                f"{_ci(row['low'], row['high'], 5)} ({row['rule'].split(': ')[-1]})"
                if row is not None
                else ""
            )
            + (
                f"; over the starts β_0 its b moves by {_fmt(sens['measured'], 3)}, "
                + ("more" if sens["measured"] > sens["threshold"] else "less")
                + " than the width of the declared interval."
                if sens is not None
                else "."
            )
        )
        pre, ratio = _row(c, "cap_exponent_with_prefactor"), _row(c, "cap_over_jump")
        if pre is not None:
            lines.append(
                f"With a β^k prefactor, b = {_fmt(pre['measured'], 5)} "
                f"{_ci(pre['low'], pre['high'], 5)} and k = {_fmt(float(cap['k']), 3)}: Δ lies "
                f"{pre['rule'].split('Δ lies ')[-1]}."
            )
        if ratio is not None:
            falls = ratio["measured"] < ratio["threshold"]
            b = c.fits[c.fits["event"] == "cap"].sort_values("beta_start")["b"].to_numpy()
            rises = bool((np.diff(b) > 0).all())
            lines.append(
                f"E[T_cap]/E[T_jump] {'falls' if falls else 'goes'} from "
                f"{_fmt(ratio['threshold'], 3)} at β = {c.config['fit_from_beta']:g} to "
                f"{_fmt(ratio['measured'], 3)} at the last β"
                + (
                    ": past the first moving pick the cap is left ever sooner, so the pure "
                    "exponential fit of T_cap sits below Δ"
                    if falls
                    else ""
                )
                + (
                    ", and its b rises with the start of the fitted range."
                    if rises
                    else "; its b does not rise steadily with the start of the fitted range."
                )
            )
    lines += ["", "![arrhenius](arrhenius.png)", ""]
    return lines


def _rd(c) -> list[str]:
    ex = c.rd[c.rd["kind"] == "exponent"]
    lines = ["## The R^d chain beside it", ""]
    if ex.empty:
        return lines + ["No committed R^d fits were found.", ""]
    lines.append(
        "The R^d study ([FW] Thm 5.4, `data/metastability`) runs SA_P on the same triangle with "
        "the same γ, n and ε, but from tokens spread 0.2 around the vertices and with the exit "
        "from the group hulls (T2). Its exponents per start β_0 (bk: with a β^k prefactor), beside "
        "the sphere's T_cap:"
    )
    lines.append("")
    cap = c.fits[c.fits["event"] == "cap"].set_index("beta_start")
    frame = ex.assign(
        rd_ci=[_ci(a, b, 4) for a, b in zip(ex["b_low"], ex["b_high"])],
        rd_k=[_ci(a, b, 4) for a, b in zip(ex["bk_low"], ex["bk_high"])],
        sphere=ex["beta_start"].map(cap["b"]) if not cap.empty else np.nan,
        sphere_k=ex["beta_start"].map(cap["bk"]) if not cap.empty else np.nan,
    )
    lines += [
        _table(
            frame,
            {
                "beta_start": "β_0",
                "beta_max": "R^d β_max",
                "b": "R^d b",
                "rd_ci": "profile",
                "sphere": "sphere T_cap b",
                "bk": "R^d bk",
                "rd_k": "profile",
                "sphere_k": "sphere T_cap bk",
            },
            digits=5,
        ),
        "",
    ]
    for name, model in (
        ("rd_exponent", "pure exponential"),
        ("rd_exponent_with_prefactor", "with the β^k prefactor"),
    ):
        row = _row(c, name)
        if row is not None:
            lines.append(f"- {model}: {row['rule']}.")
    lines.append("")
    return lines


def _merge_tol(c) -> list[str]:
    t = c.tol.assign(ci=[_ci(a, b) for a, b in zip(c.tol["mean_low"], c.tol["mean_high"])])
    row = _row(c, "merge_tol")
    return [
        "## The merge tolerance",
        "",
        f"The accelerated engine merges tokens within `merge_tol` of a point onto it. T_cap at "
        f"β = {t['beta'].iloc[0]:g} with the same streams at every tolerance"
        + (
            f" ({row['rule']}: {'passes' if row['pass'] == 'true' else 'fails'})"
            if row is not None
            else ""
        )
        + ":",
        "",
        _table(
            t,
            {
                "merge_tol": "merge_tol",
                "escapes": "escapes",
                "mean": "E[T_cap]",
                "ci": "95 % CI",
                "jumps_per_escape": "events drawn per escape",
                "logrank_p": "log-rank p",
            },
        ),
        "",
    ]


def _files(c) -> list[str]:
    return [
        "## Files",
        "",
        "chains.parquet (one row per chain, engine, event and β), per_beta.csv, law.csv, "
        "exponent.csv, crosscheck.csv, rd.csv (the R^d study's committed exponents and means), "
        "merge_tol.csv, each with a JSON sidecar; arrhenius.png, law.png.",
        "",
    ]


def report(out: Path) -> str:
    """The study's markdown report, from the tables in ``out`` only (the runner adds the checks
    table and the verdict)."""
    c = _inputs(Path(out))
    sections = (_header, _reach, _law_text, _exponents, _rd, _merge_tol, _files)
    return "\n".join(line for section in sections for line in section(c)) + "\n"
