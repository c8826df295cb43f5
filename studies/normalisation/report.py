"""The report of the normalisation study: the parts of ``report.md`` filled from the tables in
``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from .checks import (
    ON_SPHERE_AT_START,
    PLATEAU_CLAIMS,
    SCALES,
    WRONG_SCALES,
    farthest,
    per_plateau,
    peri_over_post,
    plateau_ratios,
    spread,
)
from .config import Config

# what each plateau claim says, in the findings' words
PLATEAU_WORDS = {
    "sigma": "as long in σ as post-LN's",
    "layers": "as many layers as post-LN's plateau mapped through the run's σ(t)",
}


def _reach(row: pd.Series) -> float:
    return max(abs(row["low"] - 1), abs(row["high"] - 1))


def _interval(row: pd.Series) -> str:
    return f"{row['measured']:.4g} [{row['low']:.4g}, {row['high']:.4g}]"


def plateau_finding(
    t: ReportTemplate, checks: pd.DataFrame, cfg: Config, name: str, lengths: pd.DataFrame
) -> str:
    """The finding of the plateau claim ``name`` (sigma, layers) over the schemes, from the
    checks table: the wording chosen by whether every scheme passes (``lengths``: the plateau
    ratios the checks read, which name the plateau a failing scheme shows)."""
    rows = checks[checks["criterion"].str.fullmatch(f"plateau_{name}_[a-z-]+")]
    tol = float(getattr(cfg.checks, PLATEAU_CLAIMS[name][2]))
    level = f"{cfg.checks.confidence_level:.0%}"
    passed = rows["pass"].astype(str).str.lower() == "true"
    scheme = rows["criterion"].str.removeprefix(f"plateau_{name}_")
    reach = rows.apply(_reach, axis=1)
    if passed.all():
        return t("plateau_agree", what=PLATEAU_WORDS[name], level=level,
                 reach=f"{reach.max():.3g}", tolerance=f"{tol:g}")  # fmt: skip
    column, confidence = PLATEAU_CLAIMS[name][0], float(cfg.checks.confidence_level)

    def shown(s: str) -> int:
        # the plateau the check shows: the farthest from 1 (none measured: k = 0)
        per = per_plateau(lengths, s, column, confidence)
        return 0 if per.empty else int(farthest(per)["k"])

    failing = ", ".join(
        f"{s} (k = {shown(s)}: {_interval(r)})"
        for s, (_, r) in zip(scheme[~passed], rows[~passed].iterrows())
    )
    return t(
        "plateau_miss",
        what=PLATEAU_WORDS[name],
        passing=", ".join(scheme[passed]) or "no scheme",
        failing=failing,
        reach=f"{reach[~passed].min():.3g}–{reach[~passed].max():.3g}"
        if (~passed).sum() > 1
        else f"{reach[~passed].max():.3g}",
        level=level,
        tolerance=f"{tol:g}",
    )


def plateau_table(t: ReportTemplate, ratios: pd.DataFrame, level: float) -> str:
    """One row per scheme and plateau: means over the starts (intervals: Student t)."""
    rows = []
    for scheme in dict.fromkeys(ratios["scheme"]):
        sigma = per_plateau(ratios, scheme, "ratio_sigma", level).set_index("k")
        mapped = per_plateau(ratios, scheme, "ratio_layers", level).set_index("k")
        for k in sigma.index:
            g = ratios[(ratios["scheme"] == scheme) & (ratios["k"] == k)]
            a, b = sigma.loc[k], mapped.loc[k]
            rows.append(
                t(
                    "plateau_row",
                    scheme=scheme,
                    k=k,
                    layers=f"{g['layers'].mean():.0f}",
                    predicted=f"{g['predicted'].mean():.0f}",
                    equal=f"{g['ratio_equal'].mean():.3g}",
                    sigma=f"{a['mean']:.4g}",
                    sigma_low=f"{a['low']:.4g}",
                    sigma_high=f"{a['high']:.4g}",
                    mapped=f"{b['mean']:.4g}",
                    mapped_low=f"{b['low']:.4g}",
                    mapped_high=f"{b['high']:.4g}",
                )
            )
    return "\n".join(rows)


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: each scheme's initial speed and collapse rate beside the paper's."""
    t = template
    out = Path(out)
    initial, _ = read_table(out / "initial.csv")
    collapse = read_table(out / "collapse.csv")[0]
    cfg = Config.from_dict(checks_config(out))
    c = cfg.collapse
    schemes = list(cfg.schemes)
    rel = (initial["slope"] / initial["predicted"] - 1).abs()
    ratios = peri_over_post(initial)
    spreads = {s: spread(collapse, s, SCALES[s], c.t_min, c.var_floor) for s in schemes}
    wrongs = {s: spread(collapse, s, WRONG_SCALES[s], c.t_min, c.var_floor) for s in schemes}
    end = collapse[collapse["t"] == collapse["t"].max()].set_index("scheme")
    post = collapse[(collapse["scheme"] == "post-ln") & (collapse["t"] >= c.t_min)]
    post = post[post["var"] >= c.var_floor]
    limit = float(cfg.checks.spread_limit)
    finding = t(
        "collapse",
        post=f"{spreads['post-ln']:.3g}",
        post_window=f"{post['t'].min():g}…{post['t'].max():g}",
        largest=f"{max(spreads.values()):.3g}",
        limit=f"{limit:g}",
        wrong_low=f"{min(wrongs.values()):.3g}",
        wrong_high=f"{max(wrongs.values()):.3g}",
        t_end=f"{collapse['t'].max():g}",
        post_var=f"{end.loc['post-ln', 'var']:.3g}",
        pre_var=f"{end.loc['pre-ln', 'var']:.3g}",
        peri_var=f"{end.loc['peri-ln', 'var']:.3g}",
    )
    # the other family's speed factor (checks.py's power rows): |A| for the schemes with s = 1
    # at the start, 1 for peri-LN and nGPT
    beta, n = initial["beta"], initial["n"]
    Z = np.exp(beta) + n - 1
    norm = np.sqrt(np.exp(2 * beta) + n - 1) / Z
    s_wrong = np.where(initial["scheme"].isin(ON_SPHERE_AT_START), norm, 1.0)
    miss = float((initial["slope"] / ((2 / s_wrong) / Z) - 1).abs().min())
    pre = end.loc["pre-ln"]
    checks = read_checks(out / "checks.csv")
    plateaus = read_table(out / "plateaus.csv")[0]
    lengths = plateau_ratios(plateaus, read_table(out / "path.csv")[0])
    p = cfg.plateaus
    by_name = checks.set_index("criterion")
    second = lengths[lengths["k"] == 2].groupby("scheme", sort=False)["ratio_equal"].mean()
    equal = lengths.groupby(["scheme", "k"])["ratio_equal"].mean()
    token_spreads = by_name.loc[by_name.index.str.startswith("speed_spread_"), "measured"]

    def post_length(k: int) -> str:
        r = by_name.loc[f"plateau_post_ln_k{k}"]
        return f"{r['measured']:.3g} ({r['low']:.3g}–{r['high']:.3g})"

    rows = "\n".join(
        t(
            "row",
            scheme=s,
            scale=SCALES[s],
            spread=f"{spreads[s]:.3g}",
            wrong=f"{wrongs[s]:.3g}",
            wrong_scale=WRONG_SCALES[s],
        )
        for s in schemes
    )
    return t(
        "report",
        schemes=", ".join(schemes),
        alpha=f"{cfg.alpha:g}",
        tau=f"{cfg.tau:g}",
        dt=f"{cfg.initial.dt:g}",
        ns=cfg.initial.ns,
        betas=cfg.initial.betas,
        n=c.n,
        spread=f"{c.spread:g}",
        d_minus=c.d - 1,
        t_min=f"{c.t_min:g}",
        collapse_dt=f"{c.dt:g}",
        beta=f"{c.beta:g}",
        initial_worst=f"{rel.max():.2g}",
        tolerance=f"{cfg.checks.slope_tolerance:g}",
        initial_wrong=f"{miss:.3g}",
        peri_low=f"{ratios['ratio'].min():.3g}",
        peri_high=f"{ratios['ratio'].max():.3g}",
        peri_worst=f"{(ratios['ratio'] / ratios['predicted'] - 1).abs().max():.2g}",
        collapse_finding=finding,
        radius=f"{pre['radius'] / collapse['t'].max():.3f}",
        t_end=f"{collapse['t'].max():g}",
        rows=rows,
        delta=f"{p.delta:g}",
        starts=p.starts,
        per_cap=p.per_cap,
        cap_radius=f"{p.cap_radius:g}",
        gap_first=f"[{p.gap_first[0]:g}, {p.gap_first[1]:g}]",
        gap_second=f"[{p.gap_second[0]:g}, {p.gap_second[1]:g}]",
        plateau_beta=f"{p.beta:g}",
        plateau_dt=f"{p.dt:g}",
        sigma_max=f"{p.sigma_max:g}",
        grid=f"{p.grid:g}",
        sigma_finding=plateau_finding(t, checks, cfg, "sigma", lengths),
        layers_finding=plateau_finding(t, checks, cfg, "layers", lengths),
        speed_spread=f"{token_spreads.max():.3g}",
        post_k3=post_length(3),
        post_k2=post_length(2),
        ratio_low=f"{second.min():.3g} ({second.idxmin()})",
        ratio_high=f"{second.max():.3g}",
        slowest=second.idxmax(),
        wrong_low=f"{equal.min():.3g}",
        plateau_rows=plateau_table(t, lengths, float(cfg.checks.confidence_level)),
    )
