"""The report of the causal-parking study: the parts of ``report.md`` filled from its tables and
``checks.csv`` only."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.render import fmt, md_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from . import checks as _checks
from . import lifetime
from .config import Config


def _sensitivity(out: Path, cfg: Config) -> pd.DataFrame:
    """Per minimum cluster fraction and reading time: the three claims' numbers and verdicts."""
    n, level = int(cfg.n), float(cfg.confidence_level)
    res, need, tol = (
        float(cfg.resolution),
        float(cfg.capture_required),
        float(cfg.exponent_tolerance),
    )
    b0 = float(cfg.lifetime_exponent)
    rows = []
    for f in map(float, cfg.min_fractions):
        for t in map(float, cfg.reading_times):
            base = _checks.count_summary(out, n, f, t, level)
            row: dict[str, object] = {
                "fraction": f,
                "t": t,
                "count: distance": float(base["miss"].max()),
                "count": "yes" if (base["miss"] < res).all() else "no",
            }
            br = _checks.bracket_summary(out, n, f, t, level)
            row["bracketed"] = (
                f"{fmt(float(br['high'].min()), 3)} "
                f"{'yes' if (br['high'] >= float(cfg.bracket_required)).all() else 'no'}"
            )
            for c in map(float, cfg.capture_factors):
                cap = _checks.capture_summary(out, n, f, t, c, level)
                row[f"location {c:g} δ"] = (
                    f"{fmt(float(cap['high'].min()), 3)} "
                    f"{'yes' if (cap['high'] >= need).all() else 'no'}"
                )
            if t < float(cfg.horizon):
                fit = lifetime.lifetime_fit(out, f, t, level)
                miss = lifetime.exponent_miss(fit, b0)
                row["lifetime b"] = (
                    f"{fmt(fit['b'], 3)} [{fmt(fit['low'], 3)}, {fmt(fit['high'], 3)}] "
                    + ("–" if math.isnan(miss) else "yes" if miss < tol else "no")
                )
            rows.append(row)
    return pd.DataFrame(rows)


def _lifetime_sensitivity(out: Path, cfg: Config) -> pd.DataFrame:
    """The lifetime exponent at the claim's setting and at each setting of its context rows
    (one of minimum fraction, reading time, horizon changed), with its verdict."""
    level, tol = float(cfg.confidence_level), float(cfg.exponent_tolerance)
    b0 = float(cfg.lifetime_exponent)
    claim = ("lifetime", float(cfg.min_fraction), float(cfg.reading_time), float(cfg.horizon))
    rows = []
    for name, f, t, h in [claim, *lifetime.sensitivity(cfg)]:
        fit = lifetime.lifetime_fit(out, f, t, level, h)
        miss = lifetime.exponent_miss(fit, b0)
        w = fit["weibull"]
        rows.append(
            {
                "row": f"`{name}`",
                "fraction": f"{f:g}",
                "t": f"{t:g}",
                "horizon": f"{h:g}",
                "censored": f"{100 * float(1 - w.events / w.chains):.0f} %" if w else "–",
                "b": fmt(fit["b"], 3),
                "interval": f"[{fmt(fit['low'], 3)}, {fmt(fit['high'], 3)}]",
                "distance from 0": fmt(miss, 3),
                "passes": "–" if math.isnan(miss) else "yes" if miss < tol else "no",
            }
        )
    return pd.DataFrame(rows).rename(columns={"distance from 0": f"distance from {b0:g}"})


def _count_wording(checks: pd.DataFrame, base: pd.DataFrame) -> str:
    if checks.loc["count", "pass"] == "true":
        return (
            "at every β the number of clusters is that of the strong Rényi centres (told from ±1)"
        )
    above = int((base["low"] > 0).sum())
    below = int((base["high"] < 0).sum())
    side = (
        "more clusters than strong centres"
        if above and not below
        else "fewer clusters than strong centres"
        if below and not above
        else "off on both sides"
        if above and below
        else "not significantly off, but not settled to ±½ either"
    )
    return (
        f"the number of clusters is not that of the strong centres at every β ({side}: above "
        f"at {above} of {len(base)} β, below at {below})"
    )


def _lifetime_wording(
    template: ReportTemplate, fit: dict, cfg: Config, checks: pd.DataFrame, values: dict
) -> str:
    """The lifetime's headline: the fitted exponent, whether and by how much the plateau
    length depends on β, the power rows' wrong predictions, the Kaplan–Meier medians."""
    w, per = fit["weibull"], fit["per_beta"]
    censored = lifetime.censored_text(fit)
    if w is None:
        return template("lifetime_unmeasured", censored=censored, span=fmt(fit["span"], 4)).strip()
    b0, tol = float(cfg.lifetime_exponent), float(cfg.exponent_tolerance)
    miss = lifetime.exponent_miss(fit, b0)
    lo_beta, hi_beta = float(per["beta"].min()), float(per["beta"].max())
    ratio = hi_beta / lo_beta
    if miss < tol:
        how = template("lifetime_flat", tolerance=values["tolerance"]).strip()
    else:
        how = template(
            "lifetime_depends",
            direction="falls" if fit["high"] < b0 else "grows",
            beta_low=f"{lo_beta:g}",
            beta_high=f"{hi_beta:g}",
            factor=fmt(ratio**w.b, 3),
            factor_low=fmt(ratio ** fit["low"], 3),
            factor_high=fmt(ratio ** fit["high"], 3),
            median_low=fmt(float(w.median(lo_beta)), 3),
            median_high=fmt(float(w.median(hi_beta)), 3),
        ).strip()
    wrong = [float(b) for b in cfg.power.lifetime_exponents]
    kept = [(b, lifetime.exponent_miss(fit, b)) for b in wrong]
    kept = [(b, m) for b, m in kept if m < tol]
    power = (
        template(
            "lifetime_power_kept",
            kept=", ".join(f"b = {b:g} (distance {fmt(m, 3)})" for b, m in kept),
        ).strip()
        if kept
        else template(
            "lifetime_power_rejected", wrong=" and ".join(f"{b:g}" for b in wrong)
        ).strip()
    )
    ex = fit["exponential"]
    return template(
        "lifetime_measured",
        how=how,
        power=power,
        b=fmt(w.b, 3),
        b_low=fmt(fit["low"], 3),
        b_high=fmt(fit["high"], 3),
        b_distance=fmt(miss, 3),
        shape=fmt(w.shape, 3),
        shape_p=fmt(w.shape_p, 2),
        common_p=fmt(w.common_p, 2),
        events=w.events,
        chains=w.chains,
        censored=censored,
        span=fmt(fit["span"], 4),
        medians=", ".join(
            f"{fmt(r.median, 3)} [{fmt(r.median_low, 3)}, {fmt(r.median_high, 3)}] (β = {r.beta:g})"
            for r in per.itertuples()
        ),
        rmst=", ".join(
            f"{fmt(r.rmst, 3)} [{fmt(r.rmst_low, 3)}, {fmt(r.rmst_high, 3)}] (β = {r.beta:g})"
            for r in per.itertuples()
        ),
        exp_b=fmt(ex["b"], 3),
        exp_low=fmt(ex["low"], 3),
        exp_high=fmt(ex["high"], 3),
        median_slope=fmt(float(checks.loc["lifetime_where_measured", "measured"]), 3),
        level=f"{100 * float(cfg.confidence_level):g} %",
        **values,
    ).strip()


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: every number from the tables and checks.csv."""
    out = Path(out)
    cfg = Config.from_dict(checks_config(out))
    checks = read_checks(out / "checks.csv").set_index("criterion")
    n, level = int(cfg.n), float(cfg.confidence_level)
    f, t = float(cfg.min_fraction), float(cfg.reading_time)
    base = _checks.count_summary(out, n, f, t, level)
    cap = _checks.capture_summary(out, n, f, t, float(cfg.capture_factor), level)
    fit = lifetime.lifetime_fit(out, f, t, level)
    renyi_diff = float(checks.loc["renyi_centres", "measured"])
    location_ok = checks.loc["location", "pass"] == "true"
    values = {
        "tolerance": f"{float(cfg.exponent_tolerance):g}",
        "lifetime_exponent": f"{float(cfg.lifetime_exponent):g}",
    }
    lifetime_text = _lifetime_wording(template, fit, cfg, checks, values)
    accepted = [
        (s, float(tb["miss"].max()))
        for s in map(int, cfg.power.count_shifts)
        for tb in [_checks.count_summary(out, n, f, t, level, s)]
        if (tb["miss"] < float(cfg.resolution)).all()
    ]
    shifted = (
        template(
            "shift_accepted",
            shift=" or ".join(f"{'+' if s > 0 else '−'} {abs(s)}" for s, _ in accepted),
            shift_distance=fmt(max(d for _, d in accepted), 3),
            shift_words=" or ".join(
                f"{abs(s)} {'cluster' if abs(s) == 1 else 'clusters'} "
                f"{'more' if s > 0 else 'fewer'} than"
                for s, _ in accepted
            ),
        ).strip()
        if accepted
        else template("shift_rejected").strip()
    )
    br = _checks.bracket_summary(out, n, f, t, level)
    moved = _checks.displacement(out, t)
    shown = base.merge(cap[["beta", "captured", "centres"]], on="beta").assign(
        medians=fit["per_beta"].set_index("beta")["median"].reindex(base["beta"]).to_numpy(),
        rmst=fit["per_beta"].set_index("beta")["rmst"].reindex(base["beta"]).to_numpy(),
        captured=lambda d: [f"{a}/{c}" for a, c in zip(d["captured"], d["centres"])],
    )
    sens = _sensitivity(out, cfg)
    lts = _lifetime_sensitivity(out, cfg)
    betas = np.array(sorted(base["beta"]))
    return template(
        "report",
        dt=f"{float(cfg.dt):g}",
        n=n,
        chains=int(cfg.chains),
        horizon=f"{float(cfg.horizon):g}",
        delta_factor=f"{float(cfg.delta_factor):g}",
        cluster_delta=f"{float(cfg.cluster_delta):g}",
        fraction=f"{f:g}",
        reading_time=f"{t:g}",
        count_pass=checks.loc["count", "pass"],
        count_wording=_count_wording(checks, base),
        shifted=shifted,
        diff_low=fmt(float(base["mean"].min()), 3),
        diff_high=fmt(float(base["mean"].max()), 3),
        level=f"{100 * level:g} %",
        count_distance=fmt(checks.loc["count", "measured"], 3),
        resolution=f"{float(cfg.resolution):g}",
        exact=int(base["exact"].sum()),
        starts=int(base["starts"].sum()),
        renyi_diff=fmt(renyi_diff, 3),
        renyi_wording="the Rényi centres outnumber the clusters"
        if renyi_diff < 0
        else "the clusters outnumber even the Rényi centres"
        if renyi_diff > 0
        else "as many clusters as Rényi centres on average",
        bracket_pass=checks.loc["count/bracketed", "pass"],
        bracket_text=", ".join(f"{r.inside}/{r.starts} (β = {r.beta:g})" for r in br.itertuples()),
        bracket_high=fmt(checks.loc["count/bracketed", "measured"], 3),
        bracket_required=f"{float(cfg.bracket_required):g}",
        location_pass=checks.loc["location", "pass"],
        location_wording="at every β the clusters sit at the strong centres' starting points"
        if location_ok
        else "the clusters do not sit at the strong centres' starting points at every β",
        capture_high=fmt(checks.loc["location", "measured"], 3),
        capture_required=f"{float(cfg.capture_required):g}",
        capture_factor=f"{float(cfg.capture_factor):g}",
        moved_strong=fmt(float(moved[moved["strong"] == 1]["median"].max()), 3),
        moved_renyi=fmt(float(moved[moved["strong"] == 0]["median"].max()), 3),
        lifetime_pass=checks.loc["lifetime", "pass"],
        lifetime_wording=lifetime_text,
        half_width=fmt(checks.loc["neighbours_resolved", "measured"], 3),
        resolved=checks.loc["neighbours_resolved", "pass"],
        strong_gap=fmt(checks.loc["strong_centres_expected", "measured"], 3),
        strong_ok=checks.loc["strong_centres_expected", "pass"],
        disagree=int(checks.loc["decomposition_matches_kernel", "measured"]),
        exp_clusters=fmt(checks.loc["exponent_clusters", "measured"], 3),
        exp_strong=fmt(checks.loc["exponent_strong", "measured"], 3),
        table=md_table(
            shown,
            {
                "beta": "β",
                "delta": "δ",
                "clusters": "clusters",
                "strong": "strong centres",
                "expected_strong": "exact mean",
                "renyi": "Rényi centres",
                "mean": "clusters − strong",
                "low": f"{100 * level:g} % low",
                "high": f"{100 * level:g} % high",
                "captured": "strong centres captured",
                "medians": "median plateau (KM)",
                "rmst": f"restricted mean (≤ {fmt(fit['span'], 4)})",
            },
        ),
        lifetime_table=md_table(lts, {c: c for c in lts.columns}),
        sensitivity=md_table(sens, {c: c for c in sens.columns}),
        fig_beta=f"{float(betas[np.argmin(np.abs(np.log(betas / 64.0)))]):g}",
        **values,
    )
