"""The report of the noisy-transition study: the parts of ``report.md`` filled from the tables in
``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.studies.render import fmt, md_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import read_checks
from metastab.theory.noisy import tricritical_beta

from . import checks as checks_module
from .figures import load

PASS = {"true": True, "false": False, "NA": None}


def _widths(g) -> str:
    return ", ".join(
        f"{r.width:.3f} ± {r.width_half:.3f} at β = {r.beta:g}" for r in g.itertuples()
    )


def _continuous(row, lp) -> str:
    below = lp[(lp["set"] == "main") & ~lp["above"]]
    ok, power = PASS[row["continuous_below", "pass"]], PASS[row["continuous_below/power", "pass"]]
    text = (
        "no loop: the up and down sweeps cross the level at the same K within the intervals"
        if ok
        else "the sweeps do not retrace themselves within the intervals"
        if ok is False
        else "not testable"
    )
    text += f" (W = {_widths(below)}; `continuous_below`)"
    if power is True:
        text += "; a loop as wide as the widest measured above β_* is rejected at every β below"
    elif power is False:
        text += "; a loop as wide as the widest measured above β_* is not rejected (no power)"
    return text + "."


def _loop(row, lp) -> str:
    above = lp[(lp["set"] == "main") & lp["above"]]
    ok = PASS[row["loop_above", "pass"]]
    fix = PASS[row["loop_above/finite_n", "pass"]]
    text = (
        "the loop is open at every β above β_*"
        if ok
        else "the loop is not open at every β above β_*"
        if ok is False
        else "not testable"
    )
    text += f" (W = {_widths(above)}; `loop_above`)"
    barrier = ", ".join(f"{r.barrier_n:.3g} at β = {r.beta:g}" for r in above.itertuples())
    text += f". The barrier at the Maxwell point, N ΔF(K_c), is {barrier}"
    if fix is None:
        text += "; no β reaches the finite-N threshold, so `loop_above/finite_n` is not testable"
    else:
        text += "; where it reaches the threshold of `loop_above/finite_n` the loop is " + (
            "open" if fix else "not open at every such β"
        )
    return text + "."


def _jumps(row, lp) -> str:
    ok = PASS[row["jumps", "pass"]]
    power = PASS[row["jumps/power", "pass"]]
    if ok is None:
        return "not testable: no loop is open."
    text = (
        "the up jumps lie in [K_c, K_#] and the down jumps in [K_fold, K_c], within the "
        "allowance, at every β with an open loop"
        if ok
        else "some jump lies outside its mean-field range beyond the allowance"
    )
    text += f" (`jumps`: {row['jumps', 'rule'].split('; ', 1)[1]})"
    text += (
        "; a continuous transition, both jumps at K_#, is rejected"
        if power
        else "; a continuous transition, both jumps at K_#, is not rejected (no power)"
    )
    g = lp[(lp["set"] == "main") & lp["above"]]
    gap = (g["down"] - g["fold"]).to_numpy()
    if len(gap) and (gap < 0).all():
        text += (
            f". Every down jump lies below K_fold, by {-gap.max():.3f} to {-gap.min():.3f} K_#: "
            "the direction of the scheme's weaker noise (a coupling effectively higher, so the "
            "fold is met at a smaller nominal K) and of a sweep lagging its stationary state; the "
            "allowance, not the mean field alone, covers it"
        )
    return text + "."


def _level(row, shift: float) -> str:
    out = []
    for name, what in (
        ("cluster_level", "the mean-field branch at K"),
        ("cluster_level/dt", "the branch at K / (1 − (d + 2) dt)"),
    ):
        ok = PASS[row[name, "pass"]]
        power = PASS[row[f"{name}/power", "pass"]]
        out.append(
            f"against {what} the largest deviation of m̄_1 is {fmt(row[name, 'measured'])}, "
            + ("every point within" if ok else "some point beyond")
            + f" its interval + {fmt(row[name, 'threshold'])} (`{name}`); the branch at "
            f"{shift:g} K " + ("is rejected" if power else "is not rejected")
        )
    return "; ".join(out) + "."


def _beta_star(row) -> str:
    lo, hi = row["beta_star_bracket", "low"], row["beta_star_bracket", "high"]
    if np.isnan(hi):
        return "no loop is open at the largest β: the simulation does not locate β_*."
    star = row["beta_star_bracket", "measured"]
    ok = PASS[row["beta_star_bracket", "pass"]]
    text = (
        f"the loop is closed at β = {fmt(lo)} and open from β = {fmt(hi)} on, so the "
        f"simulation places the opening in ({fmt(lo)}, {fmt(hi)}], which "
    )
    text += (
        f"contains β_* = {star:.4f}" if ok else f"does not contain β_* = {star:.4f}"
    ) + " (`beta_star_bracket`)"
    b_open = row["beta_star_bracket/finite_n", "measured"]
    fix = PASS[row["beta_star_bracket/finite_n", "pass"]]
    if fix is not None:
        text += (
            f"; the finite-N prediction, the β at which N ΔF(K_c) reaches the threshold, "
            f"{b_open:.3f}, is " + ("inside" if fix else "outside") + " that bracket"
        )
    res = PASS[row["beta_star_resolution", "pass"]]
    half = (hi - lo) / 2
    if res is None:
        text += (
            f". The resolution reached is ±{fmt(half)} in β, wider than the target "
            f"±{fmt(row['beta_star_resolution', 'threshold'])}: `beta_star_resolution` is not "
            "testable at this grid and N"
        )
    else:
        text += f". Within ±{fmt(row['beta_star_resolution', 'threshold'])}: " + (
            "yes" if res else "no"
        )
    return text + "."


def _binder(checks) -> str:
    """The power analysis of the crossing of U_N(β) = E[m_1^4]/E[m_1^2]^2 at K_#, from the
    ``binder_*`` rows."""
    if "binder_power" not in checks.index:
        return "not analysed (d ≠ 2)."
    row = checks.loc
    pairs = [c for c in checks.index if c.startswith("binder_crossing_")]
    star = tricritical_beta(2)
    tol = float(row["beta_star_resolution", "threshold"])
    parts = []
    for c in pairs:
        n1, n2 = c.removeprefix("binder_crossing_n").split("_")
        cross, need = float(row[c, "measured"]), float(row[c, "threshold"])
        where = "within" if abs(cross - star) <= tol else "outside"
        parts.append(
            f"N = {n1} and {n2} at β = {cross:.3f} ({where} ±{tol:g} of β_*), resolved at "
            f"β_* ± {tol:g} after a chain time of {need:.2g} per (β, N) point"
        )
    best, budget = float(row["binder_power", "measured"]), float(row["binder_power", "threshold"])
    text = (
        "at K = K_#, where the quadratic Landau coefficient vanishes, the mean-field law "
        "∝ m e^(−N F_K(m)) of the order parameter predicts that the curves U_N(β) cross at "
        + "; ".join(parts)
        + " (`binder_crossing_*`; the time from the Landau dynamics of the order parameter)"
    )
    if np.isnan(best):
        text += ". The speed of the sweeps is unknown (no recorded run time): no cost is computed"
    elif np.isinf(best):
        text += (
            f". No pair's predicted crossing lies within ±{tol:g} of β_*, so no run length meets "
            "the target"
        )
    elif best <= budget:
        text += f". The cheapest pair that meets the target needs {best:.3g} s, within the budget"
    else:
        text += (
            f". The cheapest pair that meets the target needs {best:.3g} s on one thread, "
            f"{best / budget:.0f} times the budget of {budget:g} s (`binder_power`): the "
            "crossing is not simulated, and β_* stays located only by the bracket above"
        )
    return text + "."


def _state(r, tol: float) -> str:
    """The loop of one set by the rules of `loop_above` and `continuous_below`."""
    g = r.to_frame().T.astype({"width": float, "width_half": float})
    if checks_module._open(g, tol)[0]:
        return "open"
    return "closed" if checks_module._closed(g, tol)[0] else "neither"


def _effects(row, lp, tol: float) -> str:
    main = lp[lp["set"] == "main"].set_index("beta")
    parts = []
    for name, what, on in (
        ("slow", "twice as slow", "the sweep rate"),
        ("size", "with fewer tokens", "N"),
    ):
        for _, r in lp[lp["set"] == name].iterrows():
            key = f"{name}_effect_beta{r['beta']:g}"
            lo, hi = row[key, "low"], row[key, "high"]
            moved = "not significantly" if lo <= 0 <= hi else ("wider" if lo > 0 else "narrower")
            here, there = _state(r, tol), _state(main.loc[r["beta"]], tol)
            parts.append(
                f"{what} (N = {int(r['n'])}, stage time {r['stage_time']:g}) at β = "
                f"{r['beta']:g} the loop width is {r['width']:.3f} ± {r['width_half']:.3f}, a "
                f"change of {row[key, 'measured']:+.3f} [{lo:+.3f}, {hi:+.3f}]: {moved}; by the "
                f"rule of the loop checks the loop is {here} there and {there} in the main "
                "sweeps"
                + (f", so that reading depends on {on}" if here != there else ", the same reading")
            )
    return "; ".join(parts) + "." if parts else "no sensitivity runs."


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: the loops beside the mean-field thresholds; findings from checks.csv."""
    t = template
    out = Path(out)
    _, lp, _, cfg = load(out)
    checks = read_checks(out / "checks.csv").set_index("criterion")
    row = checks.loc
    f = [float(x) for x in cfg.factors]
    sw = cfg.sweep
    dt = float(sw.dt)
    table = lp.assign(
        bistable=1 - lp["fold"],
        where=np.where(lp["above"], "above", "below"),
    )
    return t(
        "report",
        d=int(cfg.d),
        n=int(sw.n),
        f_lo=f"{f[0]:g}",
        f_hi=f"{f[-1]:g}",
        f_step=f"{np.diff(f).min():.3g}",
        equilibrate=f"{float(sw.equilibrate):g}",
        average=f"{float(sw.average):g}",
        dt=f"{dt:g}",
        chains=int(sw.chains),
        confidence=f"{float(cfg.checks.confidence):.0%}",
        beta_star=f"{tricritical_beta(int(cfg.d)):.4f}",
        betas=[float(b) for b in cfg.betas],
        dt_shift=f"{100 * (1 / (1 - (int(cfg.d) + 2) * dt) - 1):.2g}",
        continuous=_continuous(row, lp),
        loop=_loop(row, lp),
        jumps=_jumps(row, lp),
        level=f"{float(cfg.level):g}",
        level_text=_level(row, float(cfg.power.coupling_shift)),
        beta_star_text=_beta_star(row),
        binder_text=_binder(checks),
        effects=_effects(row, lp, float(cfg.checks.width_tolerance)),
        table=md_table(
            table,
            {
                "set": "set",
                "beta": "β",
                "where": "β_*",
                "n": "N",
                "stage_time": "stage time",
                "up": "up jump",
                "down": "down jump",
                "width": "W",
                "width_half": "± (interval)",
                "censored": "censored",
                "fold": "K_fold",
                "kc": "K_c",
                "bistable": "1 − K_fold",
                "barrier_n": "N ΔF(K_c)",
            },
            digits=4,
        ),
    )
