"""The report of the phase-diagram study: its text, from the tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.render import fmt, md_table
from metastab.studies.verdict import checks_config, read_checks

from . import checks as checks_module
from .figures import load


def _offsets(diagram: pd.DataFrame, boundary: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per (d, β) with t* in the window: the first t with probability ≥ level, minus t*."""
    rows = []
    for (d, beta), g in diagram.groupby(["d", "beta"]):
        b = boundary[np.isclose(boundary["beta"], beta)].iloc[0]
        hit = g.loc[g["pair_fraction"] >= level, "t"]
        rows.append(
            {
                "d": d,
                "beta": beta,
                "t_level": hit.min() if len(hit) else np.nan,
                "t_star": b["t_star"],
                "t_star_layer": b["t_star_layer"],
            }
        )
    return pd.DataFrame(rows)


def _by_d(values: pd.Series) -> str:
    return ", ".join(f"{fmt(v, 3)} (d = {d})" for d, v in values.items())


def report(out: Path) -> str:
    """Markdown report: the diagram against Γ and the circle counts; findings from checks.csv."""
    out = Path(out)
    diagram, boundary, circle, meta = load(out)
    cfg = checks_config(out)
    checks = read_checks(out / "checks.csv").set_index("criterion")
    row = checks.loc
    level = float(cfg["level"])
    offsets = _offsets(diagram, boundary, level)
    wide = offsets.pivot(index="beta", columns="d", values="t_level")
    wide.columns = [f"d = {d}" for d in wide.columns]
    wide = wide.reset_index().merge(boundary[["beta", "t_star", "t_star_layer"]], on="beta")
    m = checks_module.modes(circle)
    gamma = checks_module.mismatch(diagram, boundary, level, "t_star")
    layer = checks_module.mismatch(diagram, boundary, level, "t_star_layer")
    lines = [
        "# The phase diagram and clusters on the circle (GLPR Fig. 3 and 4)",
        "",
        f"(SA) with Q = K = V = I in the authors' post-LN layer x_i ← N(x_i + dt Attn(x)_i), dt = "
        f"{cfg['dt']:g}, up to t = {cfg['t_max']:g}; n = {cfg['n']} i.i.d. uniform tokens on "
        f"S^(d−1), {cfg['realisations']} starts per (d, β), d ∈ {cfg['ds']}, β ∈ {cfg['betas']} "
        f"(the same starts for every β). The statistic is P(<x_1(t), x_2(t)> ≥ 1 − δ), δ = "
        f"{cfg['delta']:g}, estimated by the mean over starts of the fraction of clustered pairs "
        "(checked against the literal pair (1, 2): `pair_estimator`), reduced on-line by "
        "`metastab.track`. Γ = {(t, β): γ_β(t) = 1 − δ} is t*(β) of (6.9) "
        "(`metastab.theory.phase_boundary`); t*_dt(β) is the first layer at which the "
        "orthogonal start clusters under the same post-LN layer. A (t, β) cell is clustered when "
        f"the probability is ≥ {level:g}; the findings with that level at "
        f"{cfg['levels_moved']} are listed as context. For d > n a start runs in the "
        "n-dimensional span of x(0) (exact; `span_reduction`).",
        "",
        "## Findings (each from the checks table)",
        "",
        f"- **Γ and the transition** (Fig. 3): the fraction of (t, β) cells on the wrong side "
        f"of Γ is {_by_d(gamma)}: it falls to {fmt(gamma.min(), 3)} at d = {gamma.idxmin()}"
        + (
            f" and rises by at most {fmt(gamma.diff().max(), 3)} from one larger d to the next"
            if gamma.idxmin() != gamma.index[-1]
            else ""
        )
        + f" (`gamma_improves_with_d`: {row['gamma_improves_with_d', 'pass']};"
        f" `gamma_at_largest_d`, tolerance {fmt(row['gamma_at_largest_d', 'threshold'])}: "
        f"{row['gamma_at_largest_d', 'pass']}). Against the layer's own curve t*_dt it is "
        f"{_by_d(layer)}"
        + (
            ": at the largest d what remains against Γ is mostly the post-LN step "
            f"(dt = {cfg['dt']:g}), not the dimension."
            if layer.iloc[-1] < gamma.iloc[-1] / 2
            else "."
        ),
    ]
    for moved in cfg["levels_moved"]:
        lines.append(f"- Level {moved:g}: {row[f'level_{moved:g}', 'rule']}.")
    for beta, g in m[np.isclose(m["delta"], float(cfg["delta"]))].groupby("beta"):
        key = f"circle_beta_{beta:g}"
        lines.append(
            f"- **Circle, β = {beta:g}** (Fig. 4): the most frequent count is "
            + ", ".join(f"{r.mode} at t = {r.t:g}" for r in g.itertuples())
            + f"; the published {int(row[key, 'threshold'])} clusters in a share "
            f"{fmt(row[key, 'measured'])} [{fmt(row[key, 'low'])}, {fmt(row[key, 'high'])}] of "
            f"the starts at the worse time (`{key}`: {row[key, 'pass']})."
        )
    if "circle_delta_moved" in checks.index:
        lines.append(f"- δ moved: {row['circle_delta_moved', 'rule']}.")
    lines += [
        "",
        f"## Transition time: first t with probability ≥ {level:g}, against Γ",
        "",
        md_table(
            wide,
            {
                "beta": "β",
                **{c: c for c in wide.columns if c.startswith("d = ")},
                "t_star": "t* (Γ, (6.9))",
                "t_star_layer": "t*_dt (post-LN)",
            },
        ),
        "",
        "## Cluster count on the circle",
        "",
        md_table(
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
        "",
        "Figures: `diagram.png` (the probability over (t, β) per d with Γ and t*_dt), "
        "`mismatch.png` (cells on the wrong side of Γ and of t*_dt against d, three levels), "
        "`circle.png` (the cluster count on the circle at the published times).",
        "",
    ]
    return "\n".join(lines)
