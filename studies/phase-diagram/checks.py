"""Checks of the phase-diagram study (GLPR Fig. 3 and 4), from the tables only.

Claims: the curve Γ of (6.9) approximates the transition of P(<x_1(t), x_2(t)> ≥ 1 − δ) better as
d grows, and closely at the largest d (measured as the fraction of (t, β) cells on the wrong side
of Γ at the configured level); on the circle the published cluster counts (2 at β = 4, 3 at
β = 9) are the most frequent ones at t = 18 and 30. Correction: the same comparison against the
curve of the post-LN layer that is simulated (t*_dt from the orthogonal start) in place of the
flow's Γ. Controls: the all-pairs fraction estimates the pair-(1, 2) probability; the span
reduction is the full-d run. Context: the findings with the level and δ moved.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from metastab.results import read_table
from metastab.studies.verdict import check, checks_frame, powered

from .config import Config

SOURCE = "GLPR (arXiv 2312.10794)"


def mismatch(
    diagram: pd.DataFrame, boundary: pd.DataFrame, level: float, column: str, scale: float = 1.0
):
    """Per d: the fraction of (t, β) cells where [probability ≥ level] differs from
    [t ≥ scale · t*(β)] (``column`` of ``boundary``: ``t_star`` for Γ, ``t_star_layer`` for the
    layer's curve; NaN means beyond the window, never clustered)."""
    t_star = scale * boundary.set_index("beta")[column]
    cells = diagram.assign(t_star=diagram["beta"].map(t_star))
    clustered = cells["pair_fraction"] >= level
    predicted = cells["t"] >= cells["t_star"].fillna(np.inf) - 1e-9
    return (clustered != predicted).groupby(cells["d"]).mean()


def modes(circle: pd.DataFrame) -> pd.DataFrame:
    """Per (β, δ, t): the most frequent count, the share of the published count and its
    Clopper–Pearson 95% interval."""
    rows = []
    for (beta, delta, t), g in circle.groupby(["beta", "delta", "t"]):
        total = int(g["total"].iloc[0])
        published = int(g["published"].iloc[0])
        hit = int(g.loc[g["clusters"] == published, "starts"].sum())
        ci = binomtest(hit, total).proportion_ci(0.95)
        rows.append(
            {
                "beta": beta,
                "delta": delta,
                "t": t,
                "published": published,
                "mode": int(g.loc[g["starts"].idxmax(), "clusters"]),
                "share": hit / total,
                "low": ci.low,
                "high": ci.high,
            }
        )
    return pd.DataFrame(rows)


def _series(values: pd.Series) -> str:
    return ", ".join(f"d = {d}: {v:.4f}" for d, v in values.items())


def _diagram_rows(diagram, boundary, config) -> list[dict]:
    tol = config["checks"]
    level = float(config["level"])
    gamma = mismatch(diagram, boundary, level, "t_star")
    d_max = int(gamma.index.max())
    slack, limit = float(tol["monotone_slack"]), float(tol["mismatch_tolerance"])
    late = config.power.curve_scale
    wrong = f"the curve {late:g} t*(β) ({late - 1:+.0%} in time)"

    def improves(scale: float) -> dict:
        g = mismatch(diagram, boundary, level, "t_star", scale)
        rise = float(g.diff().max()) if len(g) > 1 else np.nan
        curve = "Γ" if scale == 1 else f"{scale:g} Γ (in time)"
        return check(
            "gamma_improves_with_d",
            "claim",
            "Fig. 3: the curve Γ = {γ_β(t) = 1 − δ} of (6.9) approximates the transition better "
            "as d grows",
            measured=rise,
            threshold=slack,
            rule=f"largest rise, from one d to the next, of the fraction of (t, β) cells on the "
            f"wrong side of {curve} (probability ≥ {level:g} against t ≥ "
            f"{'' if scale == 1 else f'{scale:g} '}t*(β)) ≤ threshold "
            f"(`monotone_slack`); fractions: {_series(g)}",
            passed=rise <= slack,
            source=f"{SOURCE}, Fig. 3 and §6",
        )

    def largest(scale: float) -> dict:
        g = mismatch(diagram, boundary, level, "t_star", scale)
        return check(
            "gamma_at_largest_d",
            "claim",
            "Fig. 3: at the largest d the transition follows Γ of (6.9)",
            measured=float(g[d_max]),
            threshold=limit,
            rule=f"fraction of (t, β) cells on the wrong side of "
            f"{'Γ' if scale == 1 else f'{scale:g} Γ (in time)'} at d = {d_max} ≤ threshold "
            "(`mismatch_tolerance`)",
            passed=float(g[d_max]) <= limit,
            source=f"{SOURCE}, Fig. 3",
        )

    def layer_curve(scale: float) -> dict:
        layer = mismatch(diagram, boundary, level, "t_star_layer", scale)
        return check(
            "gamma_at_largest_d/post_ln_layer",
            "correction",
            "the same with Γ replaced by the curve of the simulated post-LN layer: t*_dt(β), "
            "the first layer at which the orthogonal start clusters",
            measured=float(layer[d_max]),
            threshold=limit,
            rule=f"fraction of (t, β) cells on the wrong side of "
            f"{'' if scale == 1 else f'{scale:g} '}t*_dt at d = {d_max} ≤ "
            f"threshold; all d: {_series(layer)}",
            passed=float(layer[d_max]) <= limit,
            source="this study",
        )

    rows = (
        powered(improves, 1.0, late, wrong)
        + powered(largest, 1.0, late, wrong)
        + powered(layer_curve, 1.0, late, wrong.replace("t*(β)", "t*_dt(β)"))
    )
    for moved in config["levels_moved"]:
        g = mismatch(diagram, boundary, float(moved), "t_star")
        r = float(g.diff().max()) if len(g) > 1 else np.nan
        rows.append(
            check(
                f"level_{moved:g}",
                "context",
                f"the two Γ claims with the level moved from {level:g} to {moved:g}",
                measured=float(g[d_max]),
                rule=f"fractions on the wrong side of Γ: {_series(g)}; `gamma_improves_with_d` "
                f"would {'pass' if r <= slack else 'fail'} (largest rise {r:.4f}), "
                f"`gamma_at_largest_d` would {'pass' if g[d_max] <= limit else 'fail'}",
                source="this study",
            )
        )
    return rows


def _circle_claim(g: pd.DataFrame, delta: float, shifts: list[int]) -> dict:
    """The circle claim at one β (``g``: its rows of :func:`modes`): the published count + s is
    the most frequent count at every t, for some s of ``shifts`` ([0]: the published count)."""
    beta = float(g["beta"].iloc[0])
    worst = g.loc[g["share"].idxmin()]
    published = int(g["published"].iloc[0])
    ok = any(bool((g["mode"] == published + s).all()) for s in shifts)
    counts = " or ".join(str(published + s) for s in shifts)
    return check(
        f"circle_beta_{beta:g}",
        "claim",
        f"Fig. 4: on the circle at β = {beta:g} the tokens sit in {published} clusters at "
        f"t = {', '.join(f'{t:g}' for t in g['t'])}",
        measured=float(worst["share"]),
        low=float(worst["low"]),
        high=float(worst["high"]),
        threshold=published,
        rule=f"{counts} is the most frequent cluster count (δ = {delta:g}) at every "
        f"listed t; measured: {'its' if shifts == [0] else f'the count {published}’s'} share "
        "at the worse t (95% Clopper–Pearson); modes: "
        + ", ".join(f"t = {r.t:g}: {r.mode}" for r in g.itertuples()),
        passed=ok,
        source=f"{SOURCE}, Fig. 4",
    )


def _circle_rows(circle, config) -> list[dict]:
    delta = float(config["delta"])
    m = modes(circle)
    main = m[np.isclose(m["delta"], delta)]
    rows = []
    shifts = config.power.count_shifts
    for _, g in main.groupby("beta"):
        published = int(g["published"].iloc[0])
        rows += powered(
            lambda shift, g=g: _circle_claim(g, delta, shift),
            [0],
            shifts,
            " and ".join(f"{published + s} clusters" for s in shifts) + " (a neighbouring count)",
        )
    moved = m[~np.isclose(m["delta"], delta)]
    if len(moved):
        same = bool((moved["mode"] == moved["published"]).all())
        rows.append(
            check(
                "circle_delta_moved",
                "context",
                "the circle claims with δ moved",
                measured=float(moved["share"].min()),
                rule="modes: "
                + "; ".join(
                    f"β = {r.beta:g}, δ = {r.delta:g}, t = {r.t:g}: {r.mode}"
                    for r in moved.itertuples()
                )
                + f" (the published count {'is' if same else 'is NOT'} the mode at every δ); "
                "measured: smallest share of the published count",
                source="this study",
            )
        )
    return rows


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    diagram = read_table(out / "diagram.parquet")[0]
    boundary = read_table(out / "boundary.csv")[0]
    circle = read_table(out / "circle.csv")[0]
    reduction = read_table(out / "reduction.csv")[0]
    tol = config["checks"]
    p = diagram["pair_fraction"].to_numpy()
    se = np.sqrt(p * (1 - p) / diagram["starts"].to_numpy())
    diff = np.abs(diagram["pair12"].to_numpy() - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(diff == 0, 0.0, diff / se)
    zmax = float(z.max())
    gap = float(reduction["max_gap"].max())
    controls = [
        check(
            "pair_estimator",
            "control",
            "the all-pairs clustered fraction estimates P(<x_1, x_2> ≥ 1 − δ) (exchangeability)",
            measured=zmax,
            threshold=float(tol["estimator_z"]),
            rule=f"largest |fraction of starts with pair (1, 2) clustered − mean pair fraction| / "
            f"√(p(1 − p)/starts) over all {len(diagram)} (d, β, t) cells ≤ threshold",
            passed=zmax <= float(tol["estimator_z"]),
            source="this study",
        ),
        check(
            "span_reduction",
            "control",
            "d > n simulated in the n-dimensional span of x(0) is the full-d layer",
            measured=gap,
            threshold=float(tol["reduction_tolerance"]),
            rule=f"largest |cos12 (full d = {int(reduction['d'].iloc[0])}) − cos12 (span)| over "
            f"{int(reduction['starts'].iloc[0])} starts at β = {reduction['beta'].iloc[0]:g} and "
            "every layer ≤ threshold",
            passed=gap <= float(tol["reduction_tolerance"]),
            source="this study",
        ),
    ]
    return checks_frame(
        _diagram_rows(diagram, boundary, config) + _circle_rows(circle, config) + controls
    )
