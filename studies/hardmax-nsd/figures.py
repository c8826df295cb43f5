"""Figures and report of the hardmax-nsd study; reads only the tables that run.py wrote."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy import stats

from metastab.results import read_table
from metastab.studies.figures import axes_row, draw, palette
from metastab.studies.render import fmt
from metastab.studies.verdict import checks_config, read_checks

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
    floor = float(checks_config(out)["diameter_floor"])
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


# --------------------------------------------------------------------------- report


def _symmetric_summary(data: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Per k and schedule: worst relative error while the law is resolvable (predicted radius
    ≥ ``symmetry_floor``), and the first step at which the measured radius leaves the exact law
    by more than ``symmetry_break``."""
    rows = []
    for (k, name), g in data.groupby(["k", "schedule"], sort=False):
        rel = np.abs(g["radius_max"] / g["predicted"] - 1)
        resolvable = g["predicted"] >= cfg["symmetry_floor"]
        broken = g[resolvable & (rel > cfg["symmetry_break"])]
        first = int(broken["step"].iloc[0]) if len(broken) else None
        held = resolvable & (g["step"] < (first if first is not None else np.inf))
        rows.append(
            {
                "k": int(k),
                "schedule": name,
                "rel_error": rel[held].max(),
                "break_step": first,
                "radius_at_break": (
                    float(g.loc[g["step"] == first, "predicted"].iloc[0])
                    if first is not None
                    else None
                ),
                "last_step_compared": int(g["step"][held].max()),
            }
        )
    return pd.DataFrame(rows)


def _rate(g: pd.DataFrame, power: bool, floor: float):
    """Slope of log(median diameter) against t (per-step factor e^slope) or against log t (over
    the last half of the log-range); None when fewer than 3 steps are above ``floor``."""
    g = g[(g["step"] >= 1) & (g["diameter_median"] > floor)]
    if power:
        g = g[g["step"] >= g["step"].max() ** 0.5]
    if len(g) < 3:
        return None
    x = np.log(g["step"]) if power else g["step"]
    return float(stats.linregress(x, np.log(g["diameter_median"])).slope)


def _inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    cx, cmeta = read_table(out / "counterexample.csv")
    cfg = checks_config(out)
    sym = _symmetric_summary(read_table(out / "symmetric.csv")[0], cfg)
    steps, rmeta = read_table(out / "random_steps.csv")
    draws = read_table(out / "random_draws.csv")[0]
    checks = read_checks(out / "checks.csv").set_index("criterion")
    return SimpleNamespace(**{k: v for k, v in locals().items() if k != "out"})


def _counterexample(c: SimpleNamespace) -> list[str]:
    """The published bound, and the counterexample in d = 1 that it fails on."""
    cx, cmeta = c.cx, c.cmeta
    printed = c.checks.loc["printed_bound"]

    # Step 0 uses γ^0 = 1 and swaps the tokens; token 2 reaches 1/3 at step 2 (counting the
    # schedule from t = 1, as γ^1 = 2/3 first, shifts every index below by one).
    late = cx[cx["step"] >= 2]
    j2_err = float(np.abs(late["J2"] - 1 / 18).max())
    h1 = cx[cx["step"] >= 1]
    h1_ratio = float(((h1["J1"] - h1["J_min_Kt"]) / h1["fw_constant_bound"]).max())
    # first step from which token 2's h_t is exactly 0 to the end (None if it never settles)
    h2 = (cx["J2"] - cx["J_min_Kt"]).to_numpy()
    nonzero = np.flatnonzero(h2 != 0)
    settle = nonzero[-1] + 1 if len(nonzero) else 0
    h2_from = int(cx["step"].iloc[settle]) if settle < len(cx) else None
    last = cx.iloc[-1]
    C = 2 * cmeta["L"] * cmeta["D0"] ** 2
    return [
        "# Hardmax, negative semidefinite: Frank-Wolfe over a shrinking hull",
        "",
        "Published ([FW] thm. fw.cluster, γ^t = 2/(t+2)): an O(1/t) bound on J(x_i^t) − "
        "min J, J(x) = ½<B_* x, x>, the minimum taken over the initial hull K^0 (here it is "
        "0, also the global minimum: the origin, or the null space of B_*, meets K^0). The "
        "bound's constant is not tested; the classical Frank-Wolfe constant 2 L D_0² is "
        "drawn for scale.",
        "",
        "## The counterexample (d = 1, B_* = 1, x^0 = (3, −1))",
        "",
        "Step 0 (γ^0 = 1) swaps the tokens; measured: token 2 sits at "
        f"{late['x2'].iloc[-1]:.12f} from t = 2 on (|J(x_2^t) − 1/18| ≤ {j2_err:.1e}; "
        "starting the schedule at γ^1 = 2/3 instead gives t ≥ 1) and token 1 reaches "
        f"{last['x1']:.6f} at t = {int(last['step'])}; min over K^0 of J is 0 (the origin "
        f"lies in [−1, 3]). So J(x_i^t) − min_{{K^0}} J → 1/18 = {1 / 18:.6f}, not 0: no "
        "bound C/t holds, whatever C (it fails for t > 18C − 2). With the classical "
        f"Frank-Wolfe constant C = 2 L D_0² = {C:g} the printed-type bound is crossed at "
        f"t = {int(np.ceil(18 * C - 2))}. Measured at t = {int(last['step'])}: gap "
        f"{printed['measured']:.6f} against C/(t + 2) = {printed['threshold']:.2e}, so the "
        "printed bound "
        + (
            "**fails** (check `printed_bound`)."
            if printed["pass"] == "false"
            else "holds at the last step (check `printed_bound`)."
        ),
        "",
        "A mathematical remark (a derivation, measured below): with the minimum over the "
        "CURRENT hull K^t the bound is provable: since K^{t+1} ⊂ K^t, min_{K^t} J is "
        "non-decreasing and the Frank-Wolfe recursion gives "
        "h_t = J(x_i^t) − min_{K^t} J ≤ 2 L D_0²/(t + 2), t ≥ 1. In the counterexample "
        + (
            f"h_t = 0 for token 2 from t = {h2_from}"
            if h2_from is not None
            else f"h_t for token 2 is still {h2[-1]:.2e} at the last step"
        )
        + f" and h_t ≤ {h1_ratio:.3f} × 2LD_0²/(t + 2) for token 1.",
        "",
    ]


def _polygons(c: SimpleNamespace) -> list[str]:
    """Regular polygons: the exact contraction law while the configuration stays symmetric."""
    sym, cfg = c.sym, c.cfg
    text = [
        "## Regular polygons: contraction to the origin at an exact rate",
        "",
        "A regular k-gon with B = −I stays a scaled copy of itself: |x^t| = "
        "Π_τ |1 − c_k γ^τ| |x^0|, c_k = 1 + cos(π/k) (k odd: two tied opposite leaders) or 2 "
        "(k even).",
        "",
        "| k | schedule | max relative error (while symmetric) | compared up to step | "
        "symmetry lost at step | radius there |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in sym.iterrows():
        brk = (
            "never"
            if r["break_step"] is None or pd.isna(r["break_step"])
            else f"{int(r['break_step'])}"
        )
        rad = "" if brk == "never" else f"{r['radius_at_break']:.1e}"
        text.append(
            f"| {r['k']} | {r['schedule']} | {r['rel_error']:.1e} | "
            f"{r['last_step_compared']} | {brk} | {rad} |"
        )
    worst_sym = float(sym["rel_error"].max())
    roundoff = float(cfg["symmetry_roundoff"])
    broke = sym[sym["break_step"].notna()]
    n_broke = len(broke)
    text += [
        "",
        f"While the configuration is symmetric the exact law holds to a relative "
        f"error of at most {worst_sym:.1e}"
        + (" (roundoff" if worst_sym < roundoff else " (more than roundoff")
        + f": `symmetry_roundoff` = {roundoff:g})"
        + f". The symmetry broke (relative departure above `symmetry_break` = "
        f"{cfg['symmetry_break']:g}, compared while the predicted radius is ≥ "
        f"`symmetry_floor` = {cfg['symmetry_floor']:g}) in {n_broke} of {len(sym)} "
        "(k, schedule) runs"
        + (
            f" (at radii {fmt(broke['radius_at_break'].min(), 2)}–"
            f"{fmt(broke['radius_at_break'].max(), 2)}): there the tokens stop heading for "
            "the origin, so contraction to the origin did not survive roundoff"
            if n_broke
            else ""
        )
        + ". An explanation, not tested here: the symmetric step conserves the centroid "
        "(Σ_a of the targets is Σ_a x_a), which is the origin only up to roundoff (~1e-17), "
        "while the polygon shrinks; for odd k the leaders are a tie resolved with the "
        "relative tolerance of `Hardmax` (1e-12), so the tie can break once the radius is "
        "~1e-17/1e-12 = 1e-5.",
        "",
    ]
    return text


def _random(c: SimpleNamespace) -> list[str]:
    """Random configurations: the collapse rates, where the limit lies, the corrected bound."""
    steps, draws, rmeta, cfg, checks = c.steps, c.draws, c.rmeta, c.cfg, c.checks
    tol = float(rmeta["config"]["random"]["limit_tolerance"])
    fw_name = "γ^t = 2/(t+2)"
    text = [
        "## Random configurations: collapse to one point, not to the origin",
        "",
        f"{int(draws['chain'].nunique())} draws of {rmeta['config']['random']['n']} Gaussian "
        f"tokens per case, {int(steps['step'].max())} steps.",
        "",
        "| case | schedule | diameter rate | median final diameter | limit ≠ origin "
        f"(> {tol:g}) | median J(limit) − min_K0 J | max h_t (t+2)/(2LD_0²) |",
        "|---|---|---|---|---|---|---|",
    ]
    worst_corrected, away = 0.0, []
    for (case, name), g in draws.groupby(["case", "schedule"], sort=False):
        m = steps[(steps["case"] == case) & (steps["schedule"] == name)]
        power = name == fw_name
        slope = _rate(m, power, cfg["diameter_floor"])
        if slope is None:
            tiny = m[(m["step"] >= 1) & (m["diameter_median"] <= cfg["diameter_floor"])]
            rate = f"exact collapse by step {int(tiny['step'].iloc[0])}"
        else:
            rate = f"∝ t^{slope:.2f}" if power else f"× {np.exp(slope):.3f} per step"
        ratio = float(g["corrected_ratio"].max())
        if power:
            worst_corrected = max(worst_corrected, ratio)
        frac = float((g["centroid_norm"] > tol).mean())
        away.append(frac)
        text.append(
            f"| {case} | {name} | {rate} | {g['diameter'].median():.1e} | "
            f"{frac:.2f} | {g['gap_initial_hull'].median():.2e} | "
            f"{ratio:.3f}{'' if power else ' (not this schedule)'} |"
        )
    text += [
        "",
        "Rates are fits of the median diameter: against t for constant γ (per-step "
        "factor), against log t over the last half of the log-range for 2/(t+2) (an "
        "exact collapse: γ^0 = 1 moves every token onto its leader, and two points that "
        "lead each other meet exactly at the step with γ = 1/2). With "
        "constant γ compare the per-step factor with (1 − γ), and for 2/(t+2) the exponent "
        "with that of Π_τ(1 − γ^τ) ∝ t^−2 (an observation, not a published rate). "
        + (
            "The tokens collapse in every draw (check `collapse`)"
            if checks.loc["collapse", "pass"] == "true"
            else "The tokens do NOT collapse in every draw (check `collapse`)"
        )
        + f"; the limit point lies farther than {tol:g} from the origin in "
        f"{min(away):.0%}–{max(away):.0%} of draws (per case and schedule)"
        + (
            ": the gap to the initial-hull minimum stays positive, as in the "
            "counterexample, so the printed bound fails in a positive fraction of every "
            "case's draws, not only in one example"
            if min(away) > 0
            and (draws.groupby(["case", "schedule"])["gap_initial_hull"].median() > 0).all()
            else ""
        )
        + ". The bound with the current hull's minimum "
        + ("holds in every draw" if worst_corrected <= 1 else "FAILS in some draw")
        + f": max h_t (t+2)/(2 L D_0²) = {worst_corrected:.3f}"
        + (
            f" (loose by a factor {1 / worst_corrected:.1f} at worst)"
            if 0 < worst_corrected <= 1
            else ""
        )
        + ".",
        "",
    ]
    text += ["Figures: `counterexample.png`, `symmetric.png`, `random.png`.", ""]
    return text


def report(out: Path) -> str:
    """Markdown report: the counterexample, the symmetric law, the measured collapse rates."""
    c = _inputs(Path(out))
    sections = (_counterexample, _polygons, _random)
    return "\n".join(line for section in sections for line in section(c)) + "\n"
