"""The report of the hardmax-nsd study: the parts of ``report.md`` filled from the tables in
``out`` only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy import stats

from metastab.results import read_table
from metastab.studies.render import fmt
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from .config import Config

# --------------------------------------------------------------------------- report


def _symmetric_summary(data: pd.DataFrame, cfg: Config) -> pd.DataFrame:
    """Per k and schedule: worst relative error while the law is resolvable (predicted radius
    ≥ ``symmetry_floor``), and the first step at which the measured radius leaves the exact law
    by more than ``symmetry_break``."""
    rows = []
    for (k, name), g in data.groupby(["k", "schedule"], sort=False):
        rel = np.abs(g["radius_max"] / g["predicted"] - 1)
        resolvable = g["predicted"] >= cfg.symmetry_floor
        broken = g[resolvable & (rel > cfg.symmetry_break)]
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


def inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    cx, cmeta = read_table(out / "counterexample.csv")
    cfg = Config.from_dict(checks_config(out))
    sym = _symmetric_summary(read_table(out / "symmetric.csv")[0], cfg)
    steps, _ = read_table(out / "random_steps.csv")
    draws = read_table(out / "random_draws.csv")[0]
    checks = read_checks(out / "checks.csv").set_index("criterion")
    return SimpleNamespace(**{k: v for k, v in locals().items() if k != "out"})


def _counterexample(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The published bound, and the counterexample in d = 1 that it fails on."""
    cx, cmeta = c.cx, c.cmeta
    printed = c.checks.loc["printed_bound"]

    # Step 0 uses γ^0 = 1 and swaps the tokens; token 2 reaches 1/3 at step 2 (counting the
    # schedule from t = 1, as γ^1 = 2/3 first, shifts every index below by one).
    late = cx[cx["step"] >= 2]
    h1 = cx[cx["step"] >= 1]
    # first step from which token 2's h_t is exactly 0 to the end (None if it never settles)
    h2 = (cx["J2"] - cx["J_min_Kt"]).to_numpy()
    nonzero = np.flatnonzero(h2 != 0)
    settle = nonzero[-1] + 1 if len(nonzero) else 0
    h2_from = int(cx["step"].iloc[settle]) if settle < len(cx) else None
    last = cx.iloc[-1]
    C = 2 * cmeta["L"] * cmeta["D0"] ** 2
    return t(
        "counterexample",
        x2=f"{late['x2'].iloc[-1]:.12f}",
        j2_err=f"{float(np.abs(late['J2'] - 1 / 18).max()):.1e}",
        x1=f"{last['x1']:.6f}",
        last_step=int(last["step"]),
        eighteenth=f"{1 / 18:.6f}",
        C=f"{C:g}",
        crossed=int(np.ceil(18 * C - 2)),
        gap=f"{printed['measured']:.6f}",
        bound=f"{printed['threshold']:.2e}",
        printed=t("printed_fails" if printed["pass"] == "false" else "printed_holds"),
        token2=(
            t("settles", step=h2_from)
            if h2_from is not None
            else t("unsettled", h2=f"{h2[-1]:.2e}")
        ),
        h1_ratio=f"{float(((h1['J1'] - h1['J_min_Kt']) / h1['fw_constant_bound']).max()):.3f}",
    )


def _polygons(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Regular polygons: the exact contraction law while the configuration stays symmetric."""
    sym, cfg = c.sym, c.cfg
    rows = []
    for _, r in sym.iterrows():
        brk = (
            "never"
            if r["break_step"] is None or pd.isna(r["break_step"])
            else f"{int(r['break_step'])}"
        )
        rows.append(
            t(
                "polygon_row",
                k=r["k"],
                schedule=r["schedule"],
                error=f"{r['rel_error']:.1e}",
                last=r["last_step_compared"],
                broke=brk,
                radius="" if brk == "never" else f"{r['radius_at_break']:.1e}",
            )
        )
    worst_sym = float(sym["rel_error"].max())
    roundoff = float(cfg.symmetry_roundoff)
    broke = sym[sym["break_step"].notna()]
    return t(
        "polygons",
        rows="\n".join(rows),
        worst=f"{worst_sym:.1e}",
        roundoff_word=t("roundoff" if worst_sym < roundoff else "above_roundoff"),
        roundoff=f"{roundoff:g}",
        symmetry_break=f"{cfg.symmetry_break:g}",
        symmetry_floor=f"{cfg.symmetry_floor:g}",
        broke=len(broke),
        runs=len(sym),
        radii=(
            t(
                "radii",
                low=fmt(broke["radius_at_break"].min(), 2),
                high=fmt(broke["radius_at_break"].max(), 2),
            )
            if len(broke)
            else ""
        ),
    )


def _random(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Random configurations: the collapse rates, where the limit lies, the corrected bound."""
    steps, draws, cfg, checks = c.steps, c.draws, c.cfg, c.checks
    tol = float(cfg.random.limit_tolerance)
    fw_name = "γ^t = 2/(t+2)"
    rows, worst_corrected, away = [], 0.0, []
    for (case, name), g in draws.groupby(["case", "schedule"], sort=False):
        m = steps[(steps["case"] == case) & (steps["schedule"] == name)]
        power = name == fw_name
        slope = _rate(m, power, cfg.diameter_floor)
        if slope is None:
            tiny = m[(m["step"] >= 1) & (m["diameter_median"] <= cfg.diameter_floor)]
            rate = t("exact_collapse", step=int(tiny["step"].iloc[0]))
        elif power:
            rate = t("power_rate", exponent=f"{slope:.2f}")
        else:
            rate = t("factor_rate", factor=f"{np.exp(slope):.3f}")
        ratio = float(g["corrected_ratio"].max())
        if power:
            worst_corrected = max(worst_corrected, ratio)
        frac = float((g["centroid_norm"] > tol).mean())
        away.append(frac)
        rows.append(
            t(
                "random_row",
                case=case,
                schedule=name,
                rate=rate,
                diameter=f"{g['diameter'].median():.1e}",
                away=f"{frac:.2f}",
                gap=f"{g['gap_initial_hull'].median():.2e}",
                ratio=f"{ratio:.3f}",
                other="" if power else t("not_this_schedule"),
            )
        )
    gaps = draws.groupby(["case", "schedule"])["gap_initial_hull"].median()
    return t(
        "random",
        draws=int(draws["chain"].nunique()),
        n=cfg.random.n,
        steps=int(steps["step"].max()),
        tolerance=f"{tol:g}",
        rows="\n".join(rows),
        collapse=t("collapses" if checks.loc["collapse", "pass"] == "true" else "no_collapse"),
        away_min=f"{min(away):.0%}",
        away_max=f"{max(away):.0%}",
        gap_positive=t("gap_positive") if min(away) > 0 and (gaps > 0).all() else "",
        corrected=t("corrected_holds" if worst_corrected <= 1 else "corrected_fails"),
        worst=f"{worst_corrected:.3f}",
        loose=(t("loose", factor=f"{1 / worst_corrected:.1f}") if 0 < worst_corrected <= 1 else ""),
    )


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: the counterexample, the symmetric law, the measured collapse rates."""
    c = inputs(Path(out))
    sections = (_counterexample, _polygons, _random)
    return "\n".join(section(template, c) for section in sections) + "\n"
