"""The report of the lost-in-the-middle study: the parts of ``report.md`` filled from its tables
and ``checks.csv`` only."""

from __future__ import annotations

from pathlib import Path

from metastab.results import read_table
from metastab.studies.render import fmt, md_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from . import checks as _checks
from .config import Config


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: every number from the tables and checks.csv."""
    out = Path(out)
    cfg = Config.from_dict(checks_config(out))
    checks = read_checks(out / "checks.csv").set_index("criterion")
    p, prof = cfg.particles, cfg.profile
    table = read_table(out / "thresholds.csv")[0]
    shapes = _checks.shape(out)
    frame = read_table(out / "trajectories.csv")[0]
    tc = float(table.loc[table["beta"] == prof.beta_profile, "t_crit"].iloc[0])
    return template(
        "report",
        tokens=p.tokens,
        beta=f"{p.beta:g}",
        lam=f"{p.alibi:g}",
        dt=f"{p.dt:g}",
        horizon=f"{p.horizon:g}",
        seed=cfg.seed,
        snapshots=frame["time"].nunique(),
        particles=fmt(checks.loc["particles", "measured"], 3),
        tolerance=f"{p.tolerance:g}",
        particles_pass=checks.loc["particles", "pass"],
        agreement=template("agree" if checks.loc["particles", "pass"] == "true" else "disagree"),
        half=fmt(checks.loc["package_converged", "measured"], 3),
        half_pass=checks.loc["package_converged", "pass"],
        zero=fmt(checks.loc["token_zero_fixed", "measured"], 3),
        usa=fmt(checks.loc["particles/power", "measured"], 3),
        usa_rejected="rejected"
        if checks.loc["particles/power", "pass"] == "true"
        else "not rejected",
        width=f"{prof.width:g}",
        modes=prof.modes,
        plam=f"{prof.alibi:g}",
        root_error=fmt(checks.loc["t_crit", "measured"], 3),
        beta_range=f"{table['beta'].min():g}–{table['beta'].max():g}",
        t_crit_pass=checks.loc["t_crit", "pass"],
        limit_error=fmt(checks.loc["t_crit/power", "measured"], 3),
        limit_rejected="rejected"
        if checks.loc["t_crit/power", "pass"] == "true"
        else "not rejected",
        beta_profile=f"{prof.beta_profile:g}",
        tc=fmt(tc, 6),
        u_wording=template("u_holds" if checks.loc["u_shape", "pass"] == "true" else "u_fails"),
        u_wrong=int(checks.loc["u_shape", "measured"]),
        late_wrong=int(checks.loc["u_shape/power", "measured"]),
        simulation=template("simulation"),
        table=md_table(
            shapes.assign(
                shape=[
                    "U" if u else "no interior minimum"
                    for u in (shapes["local_minima"] == 1) & shapes["interior"]
                ]
            ),
            {
                "time": "t",
                "label": "as",
                "argmin": "argmin s",
                "depth": "end above minimum",
                "local_minima": "local minima",
                "shape": "shape",
            },
        ),  # fmt: skip
    )
