"""The report of the meanfield-clusters study: its text, from the tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from metastab.results import read_table
from metastab.studies.render import fmt, md_table
from metastab.studies.verdict import checks_config, read_checks

from . import checks as _checks


def report(out: Path) -> str:
    """Markdown report: every number from counts.csv and checks.csv."""
    out = Path(out)
    cfg = checks_config(out)
    checks = read_checks(out / "checks.csv").set_index("criterion")
    fraction, multiple = float(cfg["min_fraction"]), float(cfg["claim_multiple"])
    table = _checks.medians(out, fraction, multiple)
    n_max = int(table["tokens"].max())
    top = table[table["tokens"] == n_max]
    exact = int((top["median"] == top["k_star"]).sum())
    lines = [
        "# Mean-field clustering of (USA) on the circle (Bruno, Pasqualotto, Agazzi)",
        "",
        "θ̇_i = (1/N) Σ_j e^(β cos(θ_i − θ_j)) sin(θ_j − θ_i) from N i.i.d. uniform angles: mode "
        "k of the uniform state grows at λ_k = k² I_k(β)/β (`metastab.theory."
        "meanfield_growth_rates`), and the number of clusters is predicted to be k* = "
        "argmax_k k² I_k(β) (`meanfield_clusters`). Model: `SphereFlow(attention="
        f'"unnormalized")`, post-LN at dt = {cfg["dt_growth"]:g}/λ*, {cfg["chains"]} starts '
        f"per (β, N); counts read at t = multiple × t_form, t_form = log N / (2λ*); a cluster is "
        f"a component of the graph cos ≥ 1 − {cfg['delta']:g} holding ≥ {fraction:g} N tokens.",
        "",
        "## Headline numbers",
        "",
        f"- At N = {n_max} and t = {multiple:g} t_form the median count equals k* at {exact} of "
        f"{len(top)} β and is at most {fmt(checks.loc['k_star', 'measured'])} away from it "
        f"(claim: ≤ {int(cfg['count_tolerance'])}); it is below k* at "
        f"{int((top['median'] < top['k_star']).sum())} β and above at "
        f"{int((top['median'] > top['k_star']).sum())}"
        + (
            ": when the count misses k*, it is below it."
            if (top["median"] <= top["k_star"]).all() and (top["median"] < top["k_star"]).any()
            else "."
        ),
        "- Mean |median − k*| over β by N: "
        + ", ".join(
            f"{fmt(checks.loc[f'deviation_N_{n}', 'measured'])} (N = {n})"
            for n in sorted(table["tokens"].unique())
        )
        + ".",
        f"- The circle's decomposition and the kernel's count disagree on "
        f"{int(checks.loc['decomposition_matches_kernel', 'measured'])} configurations.",
        "",
        f"## Counts at N = {n_max}",
        "",
        md_table(
            top.assign(range=[f"{int(a)}–{int(b)}" for a, b in zip(top["low"], top["high"])]),
            {"beta": "β", "k_star": "k*", "median": "median count", "range": "range"},
        ),
        "",
        "## How the conclusion moves with the thresholds",
        "",
    ]
    frame = read_table(out / "counts.csv")[0]
    rows = []
    for f in cfg["min_fractions"]:
        for m in sorted(frame["multiple"].unique()):
            t = _checks.medians(out, float(f), float(m))
            dev = _checks.deviation(t)
            rows.append(
                {
                    "fraction": float(f),
                    "multiple": float(m),
                    "max deviation from k*": dev,
                    **{
                        f"holds at tolerance {tol}": "yes" if dev <= tol else "no"
                        for tol in cfg["count_tolerances"]
                    },
                }
            )
    sens = pd.DataFrame(rows)
    lines += [
        "Max over β of |median count − k*| at N = "
        f"{n_max}, for each minimum cluster size (fraction of N) and reading time (× t_form):",
        "",
        md_table(sens, {c: c for c in sens.columns}),
        "",
        "Figure: `cluster_counts.png`.",
    ]
    return "\n".join(lines)
