"""The report of the phase-diagram study: the parts of ``report.md`` filled from the tables in
``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.render import fmt, md_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from . import checks as checks_module
from .config import Config
from .figures import load


def _by_d(values: pd.Series) -> str:
    return ", ".join(f"{fmt(v, 3)} (d = {d})" for d, v in values.items())


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: the diagram against Γ and the circle counts; findings from checks.csv."""
    t = template
    out = Path(out)
    diagram, boundary, circle, meta = load(out)
    cfg = Config.from_dict(checks_config(out))
    checks = read_checks(out / "checks.csv").set_index("criterion")
    row = checks.loc
    level = float(cfg.level)
    times = checks_module.transitions(diagram, level, float(cfg.checks.transition_z))
    wide = times.pivot(index="beta", columns="d", values="time")
    wide.columns = [f"d = {d}" for d in wide.columns]
    wide = wide.reset_index().merge(boundary[["beta", "t_star", "t_star_layer"]], on="beta")
    m = checks_module.modes(circle)
    gamma = checks_module.mismatch(diagram, boundary, level, "t_star")
    layer = checks_module.mismatch(diagram, boundary, level, "t_star_layer")
    findings = [
        t("level_moved", level=f"{moved:g}", rule=row[f"level_{moved:g}", "rule"])
        for moved in cfg.levels_moved
    ]
    for beta, g in m[np.isclose(m["delta"], float(cfg.delta))].groupby("beta"):
        key = f"circle_beta_{beta:g}"
        findings.append(
            t(
                "circle",
                beta=f"{beta:g}",
                modes=", ".join(f"{r.mode} at t = {r.t:g}" for r in g.itertuples()),
                published=int(row[key, "threshold"]),
                share=fmt(row[key, "measured"]),
                low=fmt(row[key, "low"]),
                high=fmt(row[key, "high"]),
                key=key,
                passed=row[key, "pass"],
            )
        )
    if "circle_delta_moved" in checks.index:
        findings.append(t("delta_moved", rule=row["circle_delta_moved", "rule"]))
    return t(
        "report",
        dt=f"{cfg.dt:g}",
        t_max=f"{cfg.t_max:g}",
        n=cfg.n,
        realisations=cfg.realisations,
        ds=cfg.ds,
        betas=cfg.betas,
        delta=f"{cfg.delta:g}",
        level=f"{level:g}",
        levels_moved=cfg.levels_moved,
        gamma_by_d=_by_d(gamma),
        gamma_min=fmt(gamma.min(), 3),
        gamma_argmin=gamma.idxmin(),
        rises=(
            t("rises", rise=fmt(gamma.diff().max(), 3)) if gamma.idxmin() != gamma.index[-1] else ""
        ),
        improves=row["gamma_improves_with_d", "pass"],
        d_max=int(diagram["d"].max()),
        z=f"{cfg.checks.transition_z:g}",
        ratios=checks_module.ratios(checks_module.curve_misses(diagram, boundary, cfg, "t_star")),
        miss=fmt(row["gamma_transition_times", "measured"], 3),
        tolerance=fmt(row["gamma_transition_times", "threshold"]),
        at_largest=row["gamma_transition_times", "pass"],
        layer_ratios=checks_module.ratios(
            checks_module.curve_misses(diagram, boundary, cfg, "t_star_layer")
        ),
        layer_pass=row["gamma_transition_times/post_ln_layer", "pass"],
        beyond=(
            t("beyond", rule=checks_module.beyond_window(diagram, boundary, cfg)).rstrip("\n")
            if "beyond_window" in checks.index
            else ""
        ),
        late=row["gamma_transition_times_late", "rule"],
        moved=row["gamma_transition_times_moved", "rule"],
        layer_by_d=_by_d(layer),
        layer_note=(
            t("post_ln", dt=f"{cfg.dt:g}") if layer.iloc[-1] < gamma.iloc[-1] / 2 else t("plain")
        ),
        findings="\n".join(findings),
        transitions=md_table(
            wide,
            {
                "beta": "β",
                **{c: c for c in wide.columns if c.startswith("d = ")},
                "t_star": "t* (Γ, (6.9))",
                "t_star_layer": "t*_dt (post-LN)",
            },
        ),
        circle=md_table(
            m,
            {
                "beta": "β",
                "delta": "δ",
                "t": "t",
                "published": "published",
                "mode": "most frequent",
                "share": "share of the published count",
                "low": "95% low",
                "high": "95% high",
            },
        ),
    )
