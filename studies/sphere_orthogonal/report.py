"""The report of the sphere-orthogonal study: the parts of ``report.md`` filled from the tables in
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


def _crossing_table(crossing: pd.DataFrame) -> str:
    sa = crossing[crossing["attention"] == "softmax"]
    rk4 = checks_module.finest(sa, "softmax")
    post = sa[
        (sa["scheme"] == "post-ln") & (sa["dt"] == sa.loc[sa["scheme"] == "post-ln", "dt"].max())
    ]
    table = rk4[["n", "beta", "t_star", "t_star_sim", "max_error"]].merge(
        post[["n", "beta", "t_star_sim"]].rename(columns={"t_star_sim": "t_post"}), on=["n", "beta"]
    )
    table["rel"] = table["t_star_sim"] / table["t_star"] - 1
    table["rel_post"] = table["t_post"] / table["t_star"] - 1
    return md_table(
        table,
        {
            "n": "n",
            "beta": "β",
            "t_star": "t* of (6.9)",
            "t_star_sim": f"t*, rk4 dt = {rk4['dt'].min():g}",
            "rel": "relative error",
            "t_post": f"t*, post-LN dt = {post['dt'].max():g}",
            "rel_post": "relative shift",
            "max_error": "largest cosine error (rk4)",
        },
        digits=6,
    )


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: the measured numbers beside the theorems'; findings from checks.csv."""
    t = template
    out = Path(out)
    curves, crossing, random, meta = load(out)
    cfg = Config.from_dict(checks_config(out))
    checks = read_checks(out / "checks.csv").set_index("criterion")
    row = checks.loc
    ocfg, rcfg = cfg.orthogonal, cfg.random
    orders = ""
    if "rk4_order" in checks.index:
        orders = (
            t(
                "orders",
                rk4=fmt(row["rk4_order", "measured"]),
                rk4_low=fmt(row["rk4_order", "low"]),
                rk4_high=fmt(row["rk4_order", "high"]),
                post=fmt(row["post_ln_order", "measured"]),
                post_low=fmt(row["post_ln_order", "low"]),
                post_high=fmt(row["post_ln_order", "high"]),
                t_star_order=fmt(row["post_ln_t_star_order", "measured"]),
                t_star_low=fmt(row["post_ln_t_star_order", "low"]),
                t_star_high=fmt(row["post_ln_t_star_order", "high"]),
                shift_low=fmt(row["post_ln_layer_shift", "low"]),
                shift_high=fmt(row["post_ln_layer_shift", "high"]),
            )
            + "\n"
        )
    return t(
        "report",
        delta=f"{cfg.delta:g}",
        ns=ocfg.ns,
        betas=ocfg.betas,
        rk4_dts=ocfg.rk4_dts,
        post_ln_dts=ocfg.post_ln_dts,
        usa_dts=ocfg.usa_dts,
        usa_betas=ocfg.usa_betas,
        random_n=rcfg.n,
        random_ds=rcfg.ds,
        realisations=rcfg.realisations,
        random_betas=rcfg.betas,
        random_dt=f"{rcfg.dt:g}",
        spread=fmt(row["thm68_equal_cosines", "measured"]),
        equal_pass=row["thm68_equal_cosines", "pass"],
        cosine_sa=fmt(row["thm68_cosine_sa", "measured"]),
        cosine_usa=fmt(row["thm68_cosine_usa", "measured"]),
        tolerance=fmt(row["thm68_cosine_sa", "threshold"]),
        moved_rule=row["thm68_cosine_sa_moved", "rule"],
        other=fmt(row["other_equation", "measured"]),
        t_star=fmt(row["thm68_t_star", "measured"]),
        orders=orders,
        bound=fmt(row["thm69_bound", "measured"]),
        bound_finding=_bound_finding(row, random),
        bound_role=row["thm69_bound", "role"],
        loose_low=f"{row['thm69_looseness', 'low']:.1f}",
        loose_high=f"{row['thm69_looseness', 'high']:.1f}",
        probability=fmt(row["thm69_probability", "measured"]),
        probability_rule=checks_module.VACUOUS,
        slopes="log median D on log d: "
        + checks_module.slopes(checks_module.d_rates(random, float(rcfg.t_ref))),
        d_rate=fmt(row["thm69_d_rate", "measured"]),
        crossing=_crossing_table(crossing),
        random=_random_table(random, float(rcfg.t_ref)),
    )


def _bound_finding(row, random: pd.DataFrame) -> str:
    """Thm 6.9's bound in words, from its checks row: cannot fail (context), holds or fails."""
    if row["thm69_bound", "role"] == "context":
        smallest = float(random.loc[random["t"] > 0, "bound"].min())
        return (
            f"the bound cannot fail on this grid: its smallest value is {fmt(smallest)}, above 2, "
            "the largest possible |cosine − γ|"
        )
    return f"the bound {'holds everywhere' if row['thm69_bound', 'pass'] == 'true' else 'fails'}"


def _random_table(random: pd.DataFrame, t_ref: float) -> str:
    at = random[np.isclose(random["t"], t_ref)]
    g = (
        at.groupby(["beta", "d"])
        .agg(
            median=("max_deviation", "median"),
            bound=("bound", "first"),
            probability=("probability", "first"),
        )
        .reset_index()
    )
    g["looseness"] = g["bound"] / g["median"]
    return md_table(
        g,
        {
            "beta": "β",
            "d": "d",
            "median": f"median D(t = {t_ref:g})",
            "bound": "bound 2c(β)nt√(log d/d)",
            "looseness": "bound / median",
            "probability": "1 − 2n²d^(−1/64)",
        },
    )
