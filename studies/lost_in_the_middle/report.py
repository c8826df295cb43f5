"""The report of the lost-in-the-middle study: the parts of ``report.md`` filled from its tables
and ``checks.csv`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.render import ci, fmt, md_table
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
        simulation=simulation_part(out, cfg, checks, template, tc),
        simulated_table=simulated_table(out, cfg),
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


def _pm(mean: float, se: float) -> str:
    return f"{fmt(mean, 3)} ± {fmt(se, 2)}"


def simulated_table(out: Path, cfg: Config) -> str:
    """The simulated profile at each N and its 1/N extrapolation beside S_t, at the times of the
    profile claims."""
    sim = cfg.simulation
    table = read_table(out / "simulation.csv")[0]
    ext = _checks.extrapolation(out, cfg)
    times = sorted(set(map(float, sim.below)) | set(map(float, sim.above)))
    ext = ext[ext["time"].isin(times)].reset_index(drop=True)
    ext["closed"] = _checks.closed(ext, cfg.profile, float(cfg.profile.alibi))
    columns = {"time": "t", "s": "s", "closed": "S_t(s)"}
    for n in sim.tokens:
        g = table[table["tokens"] == n].set_index(["time", "s"])
        ext[f"N{n}"] = [
            _pm(g.loc[(t, x), "mean"], g.loc[(t, x), "se"]) for t, x in zip(ext["time"], ext["s"])
        ]
        columns[f"N{n}"] = f"N = {n}"
    ext["fit"] = [_pm(a, e) for a, e in zip(ext["A"], ext["se_A"])]
    columns["fit"] = "A (1/N fit)"
    return (
        "### The simulated profile: N·(correlation) ± standard error over the starts\n\n"
        + md_table(ext, columns)
    )


def simulation_part(
    out: Path, cfg: Config, checks: pd.DataFrame, template: ReportTemplate, tc: float
) -> str:
    """The paragraph of (d), every number from the tables and checks.csv."""
    sim, prof = cfg.simulation, cfg.profile
    ext = _checks.extrapolation(out, cfg)
    ext["closed"] = _checks.closed(ext, prof, float(prof.alibi))
    big = max(sim.tokens)
    tokens = ", ".join(str(n) for n in sim.tokens)

    def wording(name: str, times: list[float]) -> str:
        row, power = checks.loc[name], checks.loc[name + "/power"]
        g = ext[ext["time"].isin(times)]
        r = g["A"] / g["closed"]
        ratios = [
            fmt(float(checks.loc[[f"ratio_N{n}_t{t:g}" for t in times], "measured"].mean()), 2)
            for n in sim.tokens
        ]
        tops = checks.loc[[f"ratio_N{big}_t{t:g}" for t in times]]
        return template(
            "profile_agrees" if row["pass"] == "true" else "profile_disagrees",
            extrap=", ".join(str(n) for n in sim.extrapolate),
            z_worst=fmt(row["measured"], 3),
            z=f"{sim.z:g}",
            ratio_range=ci(float(r.min()), float(r.max()), 2),
            big=big,
            big_ratio=fmt(float(tops["measured"].mean()), 2),
            big_low=fmt(float(tops["low"].min()), 2),
            big_high=fmt(float(tops["high"].max()), 2),
            tokens_list=tokens,
            ratios=", ".join(ratios),
            chi2=fmt(float(g["chi2"].sum()), 3),
            dof=len(g) * (len(sim.extrapolate) - 2),
            wrong_z=fmt(power["measured"], 3),
            wrong_rejected="rejected" if power["pass"] == "true" else "not rejected",
        )

    shapes = _checks.shapes_simulated(out, cfg)
    early = shapes[shapes["time"].isin(sim.shape_times) & (shapes["time"] < tc)]
    lost = [f"{fmt(checks.loc[f'recency_lost_N{n}', 'measured'], 3)} (N = {n})" for n in sim.tokens]
    step = checks.loc["step_control"]
    runs = sum(
        int(b) * (1 + sim.points * len(sim.sources)) for b in sim.bases
    ) + 2 * sim.half_bases * (1 + sim.points * len(sim.sources))
    return template(
        "simulation",
        sbeta=f"{prof.beta_profile:g}",
        slam=f"{prof.alibi:g}",
        sdt=f"{sim.dt:g}",
        tokens_list=tokens,
        bases_list=", ".join(str(b) for b in sim.bases),
        grid=sim.grid,
        points=sim.points,
        runs=runs,
        below=", ".join(f"{t:g}" for t in sim.below),
        above=", ".join(f"{t:g}" for t in sim.above),
        below_wording=wording("simulated_profile", list(sim.below)),
        above_wording=wording("simulated_profile_above", list(sim.above)),
        big=big,
        big_bases=int(shapes["bases"].iloc[0]),
        shape_wording=template(
            "shape_holds" if checks.loc["simulated_u_shape", "pass"] == "true" else "shape_fails"
        ),
        shape_wrong=int(checks.loc["simulated_u_shape", "measured"]),
        shape_power_wrong=int(checks.loc["simulated_u_shape/power", "measured"]),
        place_times=len(early),
        place_held=len(early) - int(checks.loc["minimum_place", "measured"]),
        place_power_held=len(early) - int(checks.loc["minimum_place/power", "measured"]),
        lost=", ".join(lost),
        tc=fmt(tc, 4),
        step=fmt(step["measured"], 2),
        step_pass=step["pass"],
        shape_table=shape_table(out, cfg, tc),
    )


def shape_table(out: Path, cfg: Config, tc: float) -> str:
    """Per shape time at the largest N: the ends' heights above the interior minimum in standard
    errors and the argmin's interval, beside the closed form's argmin."""
    shapes = _checks.shapes_simulated(out, cfg)
    shapes = shapes[shapes["time"].isin(cfg.simulation.shape_times)].reset_index(drop=True)
    grid = np.asarray(cfg.simulation.sources, dtype=float) / cfg.simulation.grid
    shapes["closed_argmin"] = [
        _checks.closed_shape(grid, t, cfg.profile, float(cfg.profile.alibi))[1]
        for t in shapes["time"]
    ]
    shapes["interval"] = [ci(lo, hi, 3) for lo, hi in zip(shapes["low"], shapes["high"])]
    shapes["side"] = ["below t_crit" if t < tc else "above t_crit" for t in shapes["time"]]
    return md_table(
        shapes,
        {"time": "t", "side": "", "z_first": "first end above min (SE)",
         "z_last": "last end above min (SE)", "argmin": "simulated argmin",
         "interval": "95 % interval", "closed_argmin": "S_t's argmin"},
    )  # fmt: skip
