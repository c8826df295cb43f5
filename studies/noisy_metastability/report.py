"""The report of the noisy-metastability study: the parts of ``report.md`` filled from the
tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.render import fmt, md_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import read_checks

from . import checks as checks_module
from .figures import load
from .run import DIRECTIONS, orbit_exponent


def _barrier(t: ReportTemplate, row, name: str, what: str, factor: float) -> str:
    """The finding of one barrier check (claim or correction) and its power row."""
    lo, hi, b, barrier = (row[name, c] for c in ("low", "high", "measured", "threshold"))
    off = checks_module.miss(barrier, lo, hi)
    verdict = (
        "the interval contains it"
        if row[name, "pass"] == "true"
        else f"the interval misses it by {off:.1%} of the barrier"
        + (" (b is above)" if b > barrier else " (b is below)")
    )
    power = "rejected" if row[f"{name}/power", "pass"] == "true" else "not rejected (no power)"
    return t(
        "barrier",
        b=fmt(b, 4),
        low=fmt(lo, 4),
        high=fmt(hi, 4),
        what=what,
        barrier=fmt(barrier, 4),
        ratio=fmt(b / barrier, 3),
        verdict=verdict,
        factor=f"{factor:g}",
        power=power + f" (`{name}`, `{name}/power`)",
    )


def _legs(out: Path, name: str, cfg) -> str:
    """The continued leg's steps over the first leg's, at the smallest and the largest N."""
    from metastab.results import read_table

    costs = read_table(out / "costs.parquet")[0]
    spec = getattr(cfg, name)
    c = costs[costs["direction"] == name]
    share = []
    for n in (int(spec.ns[0]), int(spec.ns[-1])):
        g = c[c["n"] == n].set_index("level")["steps"]
        share.append(f"{g[float(spec.levels[-1])] / g[float(spec.levels[0])]:.3g} at N = {n}")
    return (
        f"the continued leg ({float(spec.levels[0]):g} → {float(spec.levels[-1]):g}) takes "
        + " and ".join(share)
        + " of the steps of the first"
    )


def _level(row, cfg, out: Path, fits: pd.DataFrame) -> str:
    parts = []
    for name, tag in (("forward", ""), ("reverse", "reverse_")):
        key = f"{tag}level"
        spec = getattr(cfg, name)
        inside = row[key, "pass"] == "true"
        parts.append(
            f"{name}, b at level {float(spec.levels[-1]):g} = {fmt(row[key, 'measured'], 4)} "
            + ("inside" if inside else "outside")
            + f" b's interval at level {float(spec.levels[0]):g} (`{key}`)"
        )
        if not inside:
            parts[-1] += "; " + _legs(out, name, cfg)
            later = fits[
                (fits["direction"] == name) & (fits["form"] == "plain")
                & (fits["n_start"] > int(spec.ns[0]))
            ]  # fmt: skip
            for start, g in later.groupby("n_start"):
                parts[-1] += f"; from N ≥ {start} the levels give " + ", ".join(
                    f"b = {fmt(r.b, 4)} [{fmt(r.b_low, 4)}, {fmt(r.b_high, 4)}] ({r.level:g})"
                    for r in g.itertuples()
                )
    return "; ".join(parts) + "."


def _exits(row) -> str:
    parts = []
    for name, tag in (("forward", ""), ("reverse", "reverse_")):
        key = f"{tag}exits"
        parts.append(
            f"{name}: at least {fmt(row[key, 'measured'])} uncensored exits per N and level "
            + ("(enough" if row[key, "pass"] == "true" else "(too few")
            + f", threshold {fmt(row[key, 'threshold'])})"
        )
    return "; ".join(parts) + "."


def _approach(checks: pd.DataFrame, row) -> str:
    later = checks[checks["criterion"].str.startswith("from_n")]
    parts = [
        f"from N ≥ {c.criterion.removeprefix('from_n')}: b = {fmt(c.measured, 4)} "
        f"[{fmt(c.low, 4)}, {fmt(c.high, 4)}]"
        for c in later.itertuples()
    ]
    text = "forward, " + ("; ".join(parts) if parts else "no fit from larger N")
    if "free_prefactor" in set(checks["criterion"]):
        rule = str(row["free_prefactor", "rule"]).removeprefix("b (profile interval); ")
        text += (
            f"; with a fitted N^c: b = {fmt(row['free_prefactor', 'measured'], 4)} "
            f"[{fmt(row['free_prefactor', 'low'], 4)}, {fmt(row['free_prefactor', 'high'], 4)}]"
            f", {rule} (the stated orbit prefactor has c = −(d − 1)/2)"
        )
    return text + "."


def _scheme(row) -> str:
    parts = []
    for name, tag in (("forward", ""), ("reverse", "reverse_")):
        key = f"{tag}scheme_shift"
        parts.append(f"{name}: {fmt(row[key, 'measured'], 4)} ({row[key, 'rule']})")
    return (
        "the scheme's invariant law is, to first order in dt, the Gibbs measure at a K shifted "
        "by the factor in `scheme_shift`; the barrier there is " + "; ".join(parts) + "."
    )


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: the mean escape times and the fitted exponents beside the barriers;
    findings from checks.csv."""
    t = template
    out = Path(out)
    theory, chains, fits, cfg = load(out)
    checks = read_checks(out / "checks.csv")
    row = checks.set_index("criterion").loc
    th = theory.set_index("direction")
    ks = float(th["k_sharp"].iloc[0])
    dt = float(cfg.dt)
    factor = float(cfg.power.barrier_factor)
    ex = checks_module.exits(chains)
    tables, fit_rows = [], []
    for name in DIRECTIONS:
        spec = getattr(cfg, name)
        level = float(spec.levels[0])
        main = checks_module.select(fits, name, level, "plain", int(spec.ns[0]))
        per = checks_module.mean_times(chains, main, dt)
        cv = ex[(ex["direction"] == name) & np.isclose(ex["level"], level)].set_index("n")["cv"]
        tables.append(per.assign(direction=name, level=level, cv=per["n"].map(cv)))
        fit_rows.append(fits[fits["direction"] == name])
    table = pd.concat(tables, ignore_index=True)
    fit_table = pd.concat(fit_rows, ignore_index=True)
    values: dict[str, object] = {}
    for name in DIRECTIONS:
        spec = getattr(cfg, name)
        values |= {
            f"{name}_k": fmt(th.loc[name, "K"] / ks, 4),
            f"{name}_saddle": fmt(th.loc[name, "saddle_order"], 3),
            f"{name}_cluster": fmt(th.loc[name, "cluster_order"], 3),
            f"{name}_level": f"{float(spec.levels[0]):g}",
            f"{name}_other": f"{float(spec.levels[-1]):g}",
            f"{name}_ns": [int(n) for n in spec.ns],
            f"{name}_chains": [int(c) for c in spec.chains],
        }
    return t(
        "report",
        d=int(cfg.d),
        dt=f"{dt:g}",
        beta=f"{float(cfg.beta):g}",
        k_sharp=fmt(ks, 4),
        k_c=fmt(th["k_c"].iloc[0], 4),
        k_c_rel=fmt(th["k_c"].iloc[0] / ks, 4),
        k_fold=fmt(th["k_fold"].iloc[0], 4),
        k_fold_rel=fmt(th["k_fold"].iloc[0] / ks, 4),
        forward_barrier=fmt(th.loc["forward", "barrier"], 4),
        reverse_cluster_f=fmt(th.loc["reverse", "cluster_free_energy"], 4),
        reverse_saddle_f=fmt(th.loc["reverse", "saddle_free_energy"], 4),
        reverse_barrier=fmt(th.loc["reverse", "barrier"], 4),
        max_steps=int(cfg.max_steps),
        horizon=fmt(int(cfg.max_steps) * dt),
        n_bootstrap=int(cfg.checks.n_bootstrap),
        orbit_c=f"{orbit_exponent('forward', int(cfg.d)):g}",
        forward_finding=_barrier(t, row, "barrier", "ΔF =", factor),
        orbit_finding=_barrier(t, row, "barrier/orbit", "ΔF =", factor),
        reverse_finding=_barrier(t, row, "reverse_barrier", "ΔF − F_cluster =", factor),
        level_finding=_level(row, cfg, out, fits),
        exits_finding=_exits(row),
        approach=_approach(checks, row),
        scheme=_scheme(row),
        table=md_table(
            table,
            {
                "direction": "direction",
                "level": "level",
                "n": "N",
                "chains": "chains",
                "exits": "exits",
                "mean": "E[T]",
                "mean_low": "95 % low",
                "mean_high": "95 % high",
                "cv": "CV",
            },
            digits=4,
        ),
        fits=md_table(
            fit_table,
            {
                "direction": "direction",
                "level": "level",
                "form": "form",
                "n_start": "N from",
                "b": "b",
                "b_low": "profile low",
                "b_high": "profile high",
                "b_boot_low": "bootstrap low",
                "b_boot_high": "bootstrap high",
                "c": "c",
                "deviance": "deviance",
                "df": "df",
            },
            digits=4,
        ),
        **values,
    )
