"""The report of the staircase study: the parts of ``report.md`` filled from the tables in ``out``
only."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.render import fmt, md_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from . import checks as _checks
from .config import Config
from .figures import level


def _row(checks: pd.DataFrame, name: str) -> pd.Series:
    return checks.set_index("criterion").loc[name]


def _tolerances(cfg: Config, fits: pd.DataFrame, ratio: pd.Series, b_random: float) -> pd.DataFrame:
    """The prepared-start claim, the random-start claim and the control at each tolerance."""
    tols = [float(t) for t in cfg.checks.rate_tolerances]
    wrong = fits["ratio"] / cfg.checks.wrong_rate_factor - 1
    return pd.DataFrame(
        {
            "tolerance": tols,
            "angles passing": [int(((ratio - 1).abs() <= t).sum()) for t in tols],
            "of": len(ratio),
            "random starts pass": ["yes" if abs(b_random - 1) <= t else "no" for t in tols],
            "wrong rate rejected": ["yes" if (wrong.abs() > t).all() else "no" for t in tols],
        }
    )


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: every number from the tables and checks.csv."""
    t = template
    out = Path(out)
    checks = read_checks(out / "checks.csv")
    cfg = Config.from_dict(checks_config(out))
    tol = float(cfg.checks.rate_tolerance)
    fits = _checks.prepared_fits(out, level(out))
    prep = read_table(out / "prepared.csv")[0]
    post_ln = prep[prep["part"] == "post-ln"]
    ratio = fits["ratio"]
    plain = fits["ratio_without_prefactor"]
    rk = _row(checks, "rk4_matches_quadrature")
    post = _row(checks, "post_ln_time_factor")
    rnd = _row(checks, "rate_random_starts")
    sample = _checks.random_sample(out)
    per_k = checks[checks["criterion"].str.match(r"random_k\d+_against_beta")]
    missed = (per_k["threshold"] < per_k["low"]) | (per_k["threshold"] > per_k["high"])
    against_beta = ""
    if len(per_k):
        against_beta = (
            t(
                "against_beta",
                fits=", ".join(
                    f"{r['measured']:.3f} (mean 1 − cos Δθ {r['threshold']:.3f}) at k = "
                    f"{r['criterion'].split('_')[1][1:]}"
                    for _, r in per_k.iterrows()
                ),
                outcome=(
                    t("missed", missed=int(missed.sum()), counts=len(per_k))
                    if missed.any()
                    else t("contained")
                ),
            )
            + "\n"
        )
    cont = _row(checks, "cap_containment_transcribed")
    table = _tolerances(cfg, fits, ratio, float(rnd["measured"]))
    return t(
        "report",
        dt=f"{cfg.dt:g}",
        delta=f"{cfg.delta:g}",
        per_cap=cfg.prepared.per_cap,
        censored=int(post_ln["censored"].sum()),
        runs=len(post_ln),
        exponents=", ".join(
            f"{r:.3f} at Δθ = {math.degrees(a):.0f}°" for r, a in zip(ratio, fits["angle"])
        ),
        tolerance=f"{tol:g}",
        cap_radius=f"{cfg.prepared.cap_radius:g}",
        without=", ".join(f"{v:.3f}" for v in plain),
        quadrature=", ".join(f"{v:.3f}" for v in fits["ratio_quadrature"]),
        nominal=", ".join(f"{v:.3f}" for v in fits["ratio_nominal"]),
        free=", ".join(f"{v:.3f}" for v in fits["ratio_free"]),
        correlation=f"{fits['correlation'].min():.4f}",
        arrhenius=(
            t("arrhenius")
            if ((plain - 1).abs() > tol).all() and ((ratio - 1).abs() <= tol).all()
            else ""
        ),
        prefactors=", ".join(
            f"{c:.3f} ({q:.3f}) at {math.degrees(a):.0f}°"
            for c, q, a in zip(fits["prefactor"], fits["prefactor_quadrature"], fits["angle"])
        ),
        rk4=fmt(rk["measured"]),
        rk4_tolerance=fmt(rk["threshold"]),
        post_factor=fmt(math.exp(post["measured"])),
        one_plus_dt=fmt(math.exp(post["threshold"])),
        random_n=cfg.random.n,
        random_chains=cfg.random.chains,
        random_betas=", ".join(f"{b:g}" for b in cfg.random.betas),
        merges=int((~sample["censored"]).sum()),
        plateaus_censored=int(sample["censored"].sum()),
        random_exponent=(
            t(
                "measured",
                b=fmt(rnd["measured"]),
                low=fmt(rnd["low"]),
                high=fmt(rnd["high"]),
                tolerance=fmt(rnd["threshold"]),
            )
            if np.isfinite(rnd["measured"])
            else t("not_measured")
        ),
        against_beta=against_beta,
        containment_low=fmt(cont["low"]),
        containment_high=fmt(cont["high"]),
        random_tolerance=fmt(rnd["threshold"]),
        wrong_factor=f"{cfg.checks.wrong_rate_factor:g}",
        table=md_table(table, {c: c for c in table.columns}),
    )
