"""Checks of the phase-diagram study (GLPR Fig. 3 and 4), from the tables only.

Claims: the curve Γ of (6.9) approximates the transition of P(<x_1(t), x_2(t)> ≥ 1 − δ) better as d
grows (the fraction of (t, β) cells on the wrong side of Γ at the configured level), and at the
largest d the transition time of every β whose t*(β) lies in the window is t*(β) within a stated
relative tolerance (each transition time an interval: the grid times between which the probability
crosses the level, with its Monte Carlo band); on the circle the published cluster counts (2 at β =
4, 3 at β = 9) are the most frequent ones at t = 18 and 30. Correction: the same comparison against
the curve of the post-LN layer that is simulated (t*_dt from the orthogonal start) in place of the
flow's Γ. Controls: the all-pairs fraction estimates the pair-(1, 2) probability; the span
reduction is the full-d run. Context: the β whose t* lies beyond the window; the findings with the
level, the tolerance and δ moved, and Γ delayed by stated factors.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from metastab.results import read_table
from metastab.studies.compare import Bound, declare
from metastab.studies.verdict import check, checks_frame

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


def transitions(diagram: pd.DataFrame, level: float, z: float) -> pd.DataFrame:
    """Per (d, β): the transition time, where the probability first reaches ``level`` (linear
    interpolation between kept times), and its interval [low, high]: the last kept time before
    ``high`` whose upper band p + z·se is below the level, and the first kept time whose lower
    band p − z·se reaches it (0 if no time is below; NaN: not reached by the window's end)."""
    rows = []
    for (d, beta), g in diagram.groupby(["d", "beta"]):
        g = g.sort_values("t")
        t, p, se = (g[c].to_numpy(float) for c in ("t", "pair_fraction", "pair_fraction_se"))
        reached = np.flatnonzero(p >= level)
        if len(reached) == 0:
            time = np.nan
        elif reached[0] == 0:
            time = t[0]
        else:
            i = reached[0]
            time = t[i - 1] + (level - p[i - 1]) / (p[i] - p[i - 1]) * (t[i] - t[i - 1])
        sure = np.flatnonzero(p - z * se >= level)
        high = t[sure[0]] if len(sure) else np.nan
        before = t[(p + z * se < level) & (t < (high if len(sure) else np.inf))]
        rows.append(
            {
                "d": d,
                "beta": beta,
                "time": time,
                "low": before.max() if len(before) else 0.0,
                "high": high,
            }
        )
    return pd.DataFrame(rows)


def time_misses(times: pd.DataFrame, curve: pd.Series) -> pd.DataFrame:
    """Per β of ``times`` (one d) with ``curve`` (t*(β), NaN beyond the window) in the window:
    the interval of transition time / curve and its distance from 1 (0 when it contains 1)."""
    g = times.assign(curve=times["beta"].map(curve)).dropna(subset=["curve"])
    low = g["low"] / g["curve"]
    high = g["high"].fillna(np.inf) / g["curve"]
    return g.assign(
        ratio=g["time"] / g["curve"],
        ratio_low=low,
        ratio_high=high,
        miss=np.maximum(0.0, np.maximum(low - 1, 1 - high)),
    )


def ratios(m: pd.DataFrame) -> str:
    """The ratios of :func:`time_misses` for a rule or the report: β, ratio [interval]."""
    return ", ".join(
        f"β = {r.beta:g}: {r.ratio:.3f} [{r.ratio_low:.3f}, {r.ratio_high:.3f}]"
        for r in m.itertuples()
    )


def _series(values: pd.Series) -> str:
    return ", ".join(f"d = {d}: {v:.4f}" for d, v in values.items())


def largest_d(diagram: pd.DataFrame, config: Config) -> pd.DataFrame:
    """The transition times (:func:`transitions`) at the largest d, where the Γ claims are read."""
    d_max = diagram["d"].max()
    return transitions(
        diagram[diagram["d"] == d_max], float(config.level), float(config.checks.transition_z)
    )


def curve_misses(
    diagram: pd.DataFrame, boundary: pd.DataFrame, config: Config, column: str, scale: float = 1.0
) -> pd.DataFrame:
    """:func:`time_misses` at the largest d against the curve ``column`` × ``scale`` in the
    window (what ``gamma_transition_times`` and its correction compare)."""
    curve = _window(boundary, column, float(config.t_max)) * scale
    return time_misses(largest_d(diagram, config), curve)


def beyond_window(diagram: pd.DataFrame, boundary: pd.DataFrame, config: Config) -> str:
    """The β whose t*(β) lies beyond the window, with their transitions ("at d = ...: β = ...:
    t* = ..., transition at ..."); empty if none was seen."""
    t_max = float(config.t_max)
    largest = largest_d(diagram, config)
    beyond = boundary[boundary["t_star"] > t_max]
    seen = largest[largest["beta"].isin(beyond["beta"])]
    if seen.empty:
        return ""
    return f"at d = {int(diagram['d'].max())}: " + "; ".join(
        f"β = {r.beta:g}: t* = {star_b:.3g}, transition "
        + (f"at {r.time:.3g}" if np.isfinite(r.time) else f"not by t = {t_max:g}")
        for r, star_b in zip(
            seen.itertuples(), seen["beta"].map(boundary.set_index("beta")["t_star"]), strict=True
        )
    )


def _window(boundary: pd.DataFrame, column: str, t_max: float) -> pd.Series:
    """The curve ``column`` per β, NaN where it lies beyond the window t ≤ t_max."""
    curve = boundary.set_index("beta")[column]
    return curve.where(curve <= t_max)


def _diagram_rows(diagram, boundary, config: Config) -> list[dict]:
    tol = config.checks
    level, t_max = float(config.level), float(config.t_max)
    z = float(tol.transition_z)
    gamma = mismatch(diagram, boundary, level, "t_star")
    d_max = int(gamma.index.max())
    slack, limit = float(tol.monotone_slack), float(tol.time_tolerance)
    largest = largest_d(diagram, config)
    star = _window(boundary, "t_star", t_max)
    claim = time_misses(largest, star)
    interval = (
        f"transition time: the probability first ≥ {level:g} (interval: between the kept times "
        f"where its ±{z:g} standard-error band is below and above the level)"
    )
    scale = config.power.curve_scale
    wrong = f"the curve {scale:g} t*(β) ({scale - 1:+.0%} in time)"

    def improves(s: float) -> Bound:
        g = mismatch(diagram, boundary, level, "t_star", s)
        curve = "Γ" if s == 1 else f"{s:g} Γ (in time)"
        return Bound(
            f"largest rise, from one d to the next, of the fraction of (t, β) cells on the "
            f"wrong side of {curve} (probability ≥ {level:g} against t ≥ "
            f"{'' if s == 1 else f'{s:g} '}t*(β))",
            float(g.diff().max()) if len(g) > 1 else np.nan,
            "≤",
            slack,
            than="threshold (`monotone_slack`)",
            tail=f"; fractions: {_series(g)}",
        )

    def times(s: float, column: str = "t_star") -> Bound:
        m = curve_misses(diagram, boundary, config, column, s)
        worst = m.loc[m["miss"].idxmax()]
        curve = ("t*(β)" if column == "t_star" else "t*_dt(β)") + ("" if s == 1 else f" × {s:g}")
        return Bound(
            f"at d = {d_max}, for every β with t*(β) ≤ t_max = {t_max:g}: the interval of "
            f"{interval} / {curve} lies within `time_tolerance` of 1; measured: the largest "
            "distance from 1 (interval: that β's)",
            float(worst["miss"]),
            "≤",
            limit,
            than="threshold",
            tail=f"; ratios: {ratios(m)}",
            low=float(worst["ratio_low"]),
            high=float(worst["ratio_high"]),
        )

    rows = declare(
        improves,
        1.0,
        scale,
        wrong,
        criterion="gamma_improves_with_d",
        role="claim",
        statement="Fig. 3: the curve Γ = {γ_β(t) = 1 − δ} of (6.9) approximates the transition "
        "better as d grows",
        source=f"{SOURCE}, Fig. 3 and §6",
    )
    rows += declare(
        times,
        1.0,
        scale,
        wrong,
        criterion="gamma_transition_times",
        role="claim",
        statement="Fig. 3: at the largest d the transition follows Γ of (6.9): at every β the "
        "transition time is t*(β)",
        source=f"{SOURCE}, Fig. 3",
    )
    rows += declare(
        lambda s: times(s, "t_star_layer"),
        1.0,
        scale,
        f"the layer's curve {scale:g} t*_dt(β) ({scale - 1:+.0%} in time)",
        criterion="gamma_transition_times/post_ln_layer",
        role="correction",
        statement="the same with Γ replaced by the curve of the simulated post-LN layer: "
        "t*_dt(β), the first layer at which the orthogonal start clusters",
        source="this study",
    )
    beyond = beyond_window(diagram, boundary, config)
    if beyond:
        rows.append(
            check(
                "beyond_window",
                "context",
                "the β whose t*(β) lies beyond the window: not compared with Γ",
                measured=float(boundary.loc[boundary["t_star"] > t_max, "t_star"].min()),
                rule=f"{beyond}; measured: the smallest such t*",
                source="this study",
            )
        )
    late = [float(x) for x in tol.late]

    def would(scale: float, tolerance: float) -> str:
        miss = time_misses(largest, star * scale)["miss"].max()
        return "pass" if miss <= tolerance else "fail"

    rows.append(
        check(
            "gamma_transition_times_late",
            "context",
            "how `gamma_transition_times` takes a Γ delayed by a factor s: s·t*(β)",
            measured=float(claim["miss"].max()),
            rule="; ".join(f"s = {s:g}: it would {would(s, limit)}" for s in late),
            source="this study",
        )
    )
    rows.append(
        check(
            "gamma_transition_times_moved",
            "context",
            "how `gamma_transition_times` moves with its tolerance, and what a delayed Γ does",
            measured=float(claim["miss"].max()),
            rule="; ".join(
                f"at tolerance {m:g} it would {would(1.0, m)}, a Γ delayed by "
                + ", ".join(f"{s:g} would {would(s, m)}" for s in late)
                for m in (float(x) for x in tol.tolerances_moved)
            ),
            source="this study",
        )
    )
    for moved in config.levels_moved:
        g = mismatch(diagram, boundary, float(moved), "t_star")
        r = float(g.diff().max()) if len(g) > 1 else np.nan
        miss = float(
            time_misses(transitions(diagram[diagram["d"] == d_max], float(moved), z), star)[
                "miss"
            ].max()
        )
        rows.append(
            check(
                f"level_{moved:g}",
                "context",
                f"the two Γ claims with the level moved from {level:g} to {moved:g}",
                measured=miss,
                rule=f"fractions on the wrong side of Γ: {_series(g)}; `gamma_improves_with_d` "
                f"would {'pass' if r <= slack else 'fail'} (largest rise {r:.4f}), "
                f"`gamma_transition_times` would {'pass' if miss <= limit else 'fail'} (largest "
                f"distance {miss:.4f})",
                source="this study",
            )
        )
    return rows


def _circle_claim(g: pd.DataFrame, delta: float, shifts: list[int]) -> Bound:
    """The circle claim at one β (``g``: its rows of :func:`modes`): the published count + s is
    the most frequent count at every t, for some s of ``shifts`` ([0]: the published count)."""
    worst = g.loc[g["share"].idxmin()]
    published = int(g["published"].iloc[0])
    counts = " or ".join(str(published + s) for s in shifts)
    return Bound(
        f"{counts} is the most frequent cluster count (δ = {delta:g}) at every "
        f"listed t; measured: {'its' if shifts == [0] else f'the count {published}’s'} share "
        "at the worse t (95% Clopper–Pearson); modes: "
        + ", ".join(f"t = {r.t:g}: {r.mode}" for r in g.itertuples()),
        # the listed t at which the mode is not the count, for the closest of the counts
        min(int((g["mode"] != published + s).sum()) for s in shifts),
        "=",
        0,
        measured=float(worst["share"]),
        low=float(worst["low"]),
        high=float(worst["high"]),
        shown_threshold=published,
        template="{what}",
    )


def _circle_rows(circle, config: Config) -> list[dict]:
    delta = float(config.delta)
    m = modes(circle)
    main = m[np.isclose(m["delta"], delta)]
    rows = []
    shifts = config.power.count_shifts
    for _, g in main.groupby("beta"):
        published, beta = int(g["published"].iloc[0]), float(g["beta"].iloc[0])
        rows += declare(
            partial(_circle_claim, g, delta),
            [0],
            shifts,
            " and ".join(f"{published + s} clusters" for s in shifts) + " (a neighbouring count)",
            criterion=f"circle_beta_{beta:g}",
            role="claim",
            statement=f"Fig. 4: on the circle at β = {beta:g} the tokens sit in {published} "
            f"clusters at t = {', '.join(f'{t:g}' for t in g['t'])}",
            source=f"{SOURCE}, Fig. 4",
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
    tol = config.checks
    p = diagram["pair_fraction"].to_numpy()
    se = np.sqrt(p * (1 - p) / diagram["starts"].to_numpy())
    diff = np.abs(diagram["pair12"].to_numpy() - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(diff == 0, 0.0, diff / se)
    zmax = float(z.max())
    gap = float(reduction["max_gap"].max())
    controls = [
        Bound(
            f"largest |fraction of starts with pair (1, 2) clustered − mean pair fraction| / "
            f"√(p(1 − p)/starts) over all {len(diagram)} (d, β, t) cells",
            zmax,
            "≤",
            float(tol.estimator_z),
            than="threshold",
        ).row(
            "pair_estimator",
            "control",
            "the all-pairs clustered fraction estimates P(<x_1, x_2> ≥ 1 − δ) (exchangeability)",
            source="this study",
        ),
        Bound(
            f"largest |cos12 (full d = {int(reduction['d'].iloc[0])}) − cos12 (span)| over "
            f"{int(reduction['starts'].iloc[0])} starts at β = {reduction['beta'].iloc[0]:g} and "
            "every layer",
            gap,
            "≤",
            float(tol.reduction_tolerance),
            than="threshold",
        ).row(
            "span_reduction",
            "control",
            "d > n simulated in the n-dimensional span of x(0) is the full-d layer",
            source="this study",
        ),
    ]
    return checks_frame(
        _diagram_rows(diagram, boundary, config) + _circle_rows(circle, config) + controls
    )
