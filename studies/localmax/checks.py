"""Checks of the localmax study ([LM]'s statements, read from its abstract; the neighbour rule is
this package's reading, not a verified transcription), from the tables only.

The rules (a)–(d) are those of :func:`verdicts`, stated in the report. Claims: (a) the hull
converges, (b) no finite-time convergence for r > 0, token by token, (c) r_t → 0 recovers the
hardmax limit, (d) quiescent tokens. Corrections: (b) for the configuration as a whole, and (c)
while r_t stays below the hardmax score gaps (with r large giving uniform averaging).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import AllOf, Bound, declare
from metastab.studies.verdict import checks_frame

from .config import Config

SOURCE = "[LM] abstract (this package's reading)"
LOCALMAX = ["localmax", "localmax-relative", "localmax-large", "vanishing"]
TITLES = {
    "emerging": "emerging leader",
    "triangle": "triangle",
    "square": "square",
    "non-leader": "non-leader clusters",
}


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    summary, _ = read_table(Path(out) / "summary.csv")
    v = verdicts(summary, config)
    tol = f"{config.roundoff:g}"
    a, b, c, d = v["a"], v["b"], v["c"], v["d"]
    pw = config.power
    lm = summary[summary["family"].isin(LOCALMAX)]
    scale = summary["area0"].clip(lower=1.0)

    def hull(change: str) -> Bound:
        # runs whose hull area moves the way the prediction excludes, beyond rounding
        moved = (
            summary["max_area_increase"]
            if change == "grows"
            else summary["area0"] - summary["area_end"]
        )
        return Bound(
            f"runs of {a['runs']} whose hull area {change} by more than {tol} (relative) at "
            "some step",
            int((moved > config.roundoff * scale)[lm.index].sum()),
            "=",
            0.0,
        )

    def arrive(at_limit: bool) -> Bound:
        # tokens at (or, for the wrong prediction, not at) their limit before the end
        runs = summary[summary["family"].isin(["localmax", "localmax-relative", "vanishing"])]
        runs = runs[runs["converged"]]
        return Bound(
            f"tokens {'' if at_limit else 'not '}exactly at their limit before the end, over "
            f"{b['const_runs']} settled constant-r runs and {b['vanishing_runs']} vanishing-r "
            "runs,",
            int(
                (runs["tokens_at_limit"] if at_limit else runs["n"] - runs["tokens_at_limit"]).sum()
            ),
            "=",
            0.0,
        )

    def whole(at_limit: bool) -> AllOf:
        settled = lm[lm["converged"] & (lm["family"] != "localmax-large")]
        arrived = settled["config_at_limit"].astype(bool)
        return AllOf(
            (
                Bound(
                    f"settled runs of {b['runs']} whose whole configuration is "
                    f"{'' if at_limit else 'not '}at its limit",
                    int(arrived.sum() if at_limit else (~arrived).sum()),
                    "=",
                    0.0,
                    high=b["rate_max"],
                ),
                Bound(
                    "every fitted geometric decay rate",
                    b["rate_max"],
                    "<",
                    1,
                    tail=" (interval: largest rate)",
                ),
            ),
            sep=" and ",
        )

    def recovers(limit: str) -> Bound:
        vv = summary[summary["family"] == "vanishing"]
        smallest = vv[vv["r"] == vv["r"].min()]
        return Bound(  # a fraction: at least 1 is 1
            f"fraction of the runs with the smallest r0 that end on the {limit} limit "
            f"(to {tol}, `roundoff`)",
            float((smallest[f"dist_to_{limit}"] <= config.roundoff).mean()),
            "=",
            1.0,
        )

    def below(limit: str) -> AllOf:
        # the runs below the gaps end on ``limit``; the other parts of the rule as they are
        vv = summary[summary["family"] == "vanishing"]
        off = ~(vv[vv["below_gaps"].astype(bool)][f"dist_to_{limit}"] <= config.roundoff)
        return AllOf(
            (
                Bound(
                    f"all {c['below']} runs below the gaps end on the {limit} limit (to {tol})",
                    int(off.sum()),
                    "=",
                    0,
                    template="{what}",
                ),
                Bound(
                    "the median distance at the smallest r0 (measured)",
                    c["median_smallest"],
                    "≤",
                    c["median_largest"],
                    than="that at the largest (threshold)",
                ),
                Bound(
                    f"and r ≥ the score spread gives uniform averaging (to {tol})",
                    max(c["uniform"], c["wide_max"]),
                    "≤",
                    config.roundoff,
                    template="{what}",
                ),
            ),
            sep=", ",
            of=1,
        )

    def quiescent(step: float) -> Bound:
        q = lm[lm["converged"]]
        return Bound(
            "settled runs whose tokens are all quiescent before the resolution step"
            + (f" and before step {step:g}" if np.isfinite(step) else ""),
            int((q["quiescent_from"] < np.minimum(q["resolution_step"], step)).sum()),
            "=",
            float(d["runs"]),
            than="all settled runs",
        )

    return checks_frame(
        declare(
            hull,
            "grows",
            "shrinks",
            "the hull is invariant: it never shrinks either",
            criterion="a_hull_converges",
            role="claim",
            statement="(a) the convex hull converges to a polytope",
            source=SOURCE,
        )
        + declare(
            arrive,
            True,
            False,
            "every token reaches its limit in finite time, as in hardmax",
            criterion="b_no_token_stops",
            role="claim",
            statement="(b) for r > 0 no token reaches its limit in finite time",
            source=SOURCE,
        )
        + declare(
            whole,
            True,
            False,
            "the configuration reaches its limit in finite time, as in hardmax",
            criterion="b_no_token_stops/configuration",
            role="correction",
            statement="(b) for r > 0 the configuration does not reach its limit in finite time",
            source="this study",
        )
        + declare(
            recovers,
            "hardmax",
            "uniform",
            "r_t → 0 recovers uniform averaging",
            criterion="c_recovers_hardmax",
            role="claim",
            statement="(c) r_t → 0 recovers the hardmax limit",
            source=SOURCE,
        )
        + declare(
            below,
            "hardmax",
            "uniform",
            "below the gaps r_t ends on uniform averaging",
            criterion="c_recovers_hardmax/below_gaps",
            role="correction",
            statement="(c) r_t → 0 recovers hardmax exactly while r_t stays below the hardmax "
            "score gaps; the distance shrinks with r0; r large is uniform averaging",
            source="this study",
        )
        + declare(
            quiescent,
            np.inf,
            pw.quiescent_step,
            f"the tokens are quiescent from step {pw.quiescent_step:g} (the neighbour sets "
            "settled after the first step)",
            criterion="d_quiescent",
            role="claim",
            statement="(d) tokens become quiescent",
            source=SOURCE,
        )
    )


def _example(frame: pd.DataFrame) -> str:
    """'configuration, dynamics' of the first row of ``frame`` (empty string if none)."""
    if frame.empty:
        return ""
    r = frame.iloc[0]
    return f"{TITLES.get(r['config'], r['config'])}, {r['label']}"


def verdicts(summary: pd.DataFrame, cfg: Config) -> dict:
    """The pass/fail of (a)–(d) by the rules stated in the report (no tuning to the data)."""
    lm = summary[summary["family"].isin(LOCALMAX)]
    tol = float(cfg.roundoff)
    return {
        "a": _nested_hulls(summary, lm, tol),
        "b": _no_arrival(summary, lm),
        "c": _hardmax_to_uniform(summary, tol),
        "d": _quiescent(lm),
    }


def _nested_hulls(summary: pd.DataFrame, lm: pd.DataFrame, tol: float) -> dict:
    """(a) nested hulls over the localmax runs ``lm``: the area never grows beyond rounding;
    settled runs have a limit hull."""
    scale = summary["area0"].clip(lower=1.0)
    grow = (summary["max_area_increase"] > tol * scale)[lm.index]
    return dict(
        holds=not grow.any(),
        runs=len(lm),
        grew=int(grow.sum()),
        unsettled=int((~lm["converged"]).sum()),
    )


def _no_arrival(summary: pd.DataFrame, lm: pd.DataFrame) -> dict:
    """(b) r > 0, over the localmax runs ``lm``: the configuration never reaches its limit in
    finite time and the largest distance decays geometrically; single tokens are counted apart."""
    settled = lm[lm["converged"] & (lm["family"] != "localmax-large")]
    const = summary[summary["family"].isin(["localmax", "localmax-relative"])]
    const = const[const["converged"]]
    arrivals_const = int(const["tokens_at_limit"].sum())
    van = summary[(summary["family"] == "vanishing") & summary["converged"]]
    config_arrivals = int(settled["config_at_limit"].astype(bool).sum())
    rates = settled["decay_rate"].dropna()
    return dict(
        holds=config_arrivals == 0 and bool((rates < 1).all()),
        fitted=len(rates),
        runs=len(settled),
        const_runs=len(const),
        arrivals=arrivals_const,
        const_runs_with_arrivals=int((const["tokens_at_limit"] > 0).sum()),
        rate_min=float(rates.min()),
        rate_max=float(rates.max()),
        rate_median=float(rates.median()),
        vanishing_arrivals=int(van["tokens_at_limit"].sum()),
        vanishing_runs_with_arrivals=int((van["tokens_at_limit"] > 0).sum()),
        vanishing_runs=len(van),
        config_arrivals=config_arrivals,
        slowest=_example(
            settled.dropna(subset=["decay_rate"]).sort_values("decay_rate", ascending=False)
        ),
        example=_example(const[const["tokens_at_limit"] > 0]),
    )


def _hardmax_to_uniform(summary: pd.DataFrame, tol: float) -> dict:
    """(c) r_t below the hardmax score gaps gives the hardmax limit exactly; the distance to it
    shrinks with r0; r large is uniform averaging to rounding."""
    vv = summary[summary["family"] == "vanishing"]
    below = vv[vv["below_gaps"].astype(bool)]
    exact = bool((below["dist_to_hardmax"] <= tol).all())
    smallest = vv[vv["r"] == vv["r"].min()]
    largest = vv[vv["r"] == vv["r"].max()]
    large = summary[summary["family"] == "localmax-large"]
    uniform = float(large["dist_to_uniform"].max())
    # r at least the initial score spread: every token is everyone's neighbour from the start
    # (the hull only shrinks, so the spread too): exactly uniform averaging
    wide = summary[
        summary["family"].isin(["localmax", "localmax-large"])
        & (summary["r"] >= summary["score_spread"])
    ]
    narrow = summary[(summary["family"] == "localmax") & (summary["r"] < summary["score_spread"])]
    wide_max = float(wide["dist_to_uniform"].max())
    shrink = float(smallest["dist_to_hardmax"].median()) <= float(
        largest["dist_to_hardmax"].median()
    )
    return dict(
        holds=exact and shrink and uniform <= tol and wide_max <= tol,
        shrink=shrink,
        below=len(below),
        wide=len(wide),
        wide_max=wide_max,
        narrow=len(narrow),
        narrow_min=float(narrow["dist_to_uniform"].min()),
        exact=exact,
        uniform=uniform,
        runs=len(vv),
        median_smallest=float(smallest["dist_to_hardmax"].median()),
        median_largest=float(largest["dist_to_hardmax"].median()),
        exact_fraction_smallest=float((smallest["dist_to_hardmax"] <= tol).mean()),
    )


def _quiescent(lm: pd.DataFrame) -> dict:
    """(d) every settled localmax run of ``lm`` has all tokens quiescent before its
    resolution step."""
    q = lm[lm["converged"]]
    quiet = q["quiescent_from"] < q["resolution_step"]
    return dict(
        holds=bool(quiet.all()),
        runs=len(q),
        quiet=int(quiet.sum()),
        median=float(q["quiescent_from"].median()),
        maximum=float(q["quiescent_from"].max()),
    )
