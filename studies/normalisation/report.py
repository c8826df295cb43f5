"""The report of the normalisation study: the parts of ``report.md`` filled from the tables in
``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config

from .checks import ON_SPHERE_AT_START, SCALES, WRONG_SCALES, peri_over_post, spread
from .config import Config


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
    )
