"""Checks of the metastability study ([FW] Thm 5.4), from the tables only.

The claims are the bound on P[T2 >= t] and the exponent it implies, b_thm = c0 ε/(2γ(1 + ε/γ)).
The exponent is compared on the declared range β >= ``tail_from_beta`` with the wider of its
profile-likelihood and bootstrap intervals (the geometric likelihood is misspecified where the
memorylessness test rejects). Controls: the two engines agree, every β has enough exits, and
``merge_tol`` does not move T2. The rest is context: the exponent against c0 under both models
(pure exponential and with a β^k prefactor), its sensitivity to the start of the range, the exit
from the balls, memorylessness, and how informative the bound is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import AllOf, Bound, declare
from metastab.studies.render import fmt, position, wider
from metastab.studies.runner import read_tables
from metastab.studies.verdict import check, checks_frame

from .config import Config
from .run import bound_check

SOURCE = "[FW] Thm 5.4"

# The sample each check rests on, the checks table's ``sample`` column, so that the report can
# say from the checks table which checks test the chain's stepping: the accelerated
# engine draws every frozen stretch from the geometric law of its exit probability p, so a check
# on its samples alone tests p and the jumps, not the step-by-step chain.
SAMPLES = {
    "direct": "direct stepping",
    "accelerated": "accelerated mode",
    "both": "both engines",
}
SAMPLE_OF = {
    "bound": "both",
    "bound_informative": "both",
    "exponent": "accelerated",
    "exponent_direct": "direct",
    "exponent_vs_c0": "accelerated",
    "exponent_with_prefactor_vs_c0": "accelerated",
    "prefactor_k": "accelerated",
    "exponent_range_sensitivity": "accelerated",
    "ball_exponent": "accelerated",
    "engines_agree": "both",
    "exits_per_beta": "both",
    "merge_tol": "accelerated",
    "memoryless": "both",
}


def sample_of(criterion: str, declared: dict | None = None) -> str:
    """The words of the sample (:data:`SAMPLES`) that check ``criterion`` rests on, from
    ``declared`` (criterion → key; default :data:`SAMPLE_OF`).

    Raises
    ------
    KeyError
        If the criterion has no declared sample.
    """
    declared = SAMPLE_OF if declared is None else declared
    if criterion not in declared:
        raise KeyError(f"check {criterion!r}: no sample declared")
    return SAMPLES[declared[criterion]]


def samples(checks: pd.DataFrame) -> pd.Series:
    """The sample of every row of a checks table (criterion → :data:`SAMPLES` key), read from
    its ``sample`` column."""
    words = {v: k for k, v in SAMPLES.items()}
    return pd.Series([words[str(v)] for v in checks["sample"]], index=checks["criterion"])


def ball_and_hull(fits: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """The fits of the ball exit and of T2 on one range (the accelerated tail where fitted,
    else the last), or None without a ball fit."""
    ball, hull = fits[fits["event"] == "ball"], fits[fits["event"] == "hull"]
    if ball.empty:
        return None
    tail = "accelerated, tail"
    label = tail if (ball["range"] == tail).any() else ball["range"].iloc[-1]
    return ball[ball["range"] == label].iloc[0], hull[hull["range"] == label].iloc[0]


def overlap_words(a: pd.Series, b: pd.Series) -> str:
    """Whether the intervals ``[b_low, b_high]`` of fits ``a`` and ``b`` overlap, in words."""
    overlap = a["b_low"] <= b["b_high"] and b["b_low"] <= a["b_high"]
    return "overlap" if overlap else "do not overlap"


def engines_agree(cross: pd.DataFrame, p_min: float, what: str) -> AllOf:
    """The two engines agree at every (``what``, β) of ``cross``: their 95 % intervals of the
    mean overlap and the log-rank p of their samples is at least ``p_min``."""
    apart = int((~cross["overlap"].astype(bool)).sum())
    return AllOf(
        (
            Bound(
                f"at all {len(cross)} ({what}, β): the 95 % intervals of the means overlap",
                apart,
                "=",
                0,
                template="{what}",  # overlapping at all of them: none apart
            ),
            Bound("the log-rank p", float(cross["logrank_p"].min()), "≥", p_min, than="threshold"),
        ),
        sep=" and ",
        of=1,
    )


BOUND = "P[T2 ≥ t] ≥ 1 − exp((1 + ε/γ) log(γt/ε) + (1 + ε/γ) log n − β c0 ε/(2γ)) for t > 1"


def declared(starts: pd.DataFrame, config: Config):
    """The row of ``exponent_start.csv`` at the declared start ``tail_from_beta`` (else the
    latest start that was fitted), or None."""
    if starts.empty:
        return None
    at = starts[np.isclose(starts["beta_start"], float(config.tail_from_beta))]
    return (at if not at.empty else starts.sort_values("beta_start")).iloc[-1]


def _exponent_claim(
    name: str, where: str, b: float, interval, span: str, b_thm: float, wrong: float, what: str
) -> list[dict]:
    """The check of "T2 is at least of order e^{b β}" for the fitted exponent ``b`` with its
    wider interval ``(low, high, which)`` on ``span``, and its power row (the wrong exponent
    ``wrong``, in words ``what``)."""
    low, high, which = interval

    def compare(predicted: float) -> Bound:
        return Bound(
            f"b of log E[T2] = a + bβ on {span}, lower end of the wider 95 % interval ({which})",
            low,
            ">",
            predicted,
            than="b_thm" if predicted == b_thm else f"{predicted:.4g}",
            measured=b,
            low=low,
            high=high,
        )

    return declare(
        compare,
        b_thm,
        wrong,
        what,
        criterion=name,
        role="claim",
        statement=f"T2 is at least of order e^{{b_thm β}}, b_thm = c0 ε/(2γ(1 + ε/γ)){where}",
        source=SOURCE,
        sample=sample_of(name),
    )


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    per, meta = read_table(out / "per_beta.csv")
    fits, starts, bound, cross, tol = read_tables(
        out, "exponent.csv", "exponent_start.csv", "bound.csv", "crosscheck.csv", "merge_tol.csv"
    )
    s = meta["setup"]
    b_thm, c0 = float(s["theorem_exponent"]), float(s["c0"])
    p_min = float(config.agreement_p)
    rows = []

    over = config.power.exponent_over_c0
    # the theorem's exponent b_thm = c0 ε/(2γ(1 + ε/γ)) raised to over · c0: c0 scaled so
    wrong_c0 = c0 * over * c0 / b_thm
    wrong = f"an exponent {over:g} c0 = {over * c0:.4g} in place of b_thm = {b_thm:.4g}"

    def bound_excess(c: float) -> Bound:
        table = (
            bound
            if c == c0
            else bound_check(read_tables(out, "chains.parquet")[0], per, {**s, "c0": c})
        )
        return Bound(
            "largest excess of the bound"
            + ("" if c == c0 else f" (with c0 → {c:.4g})")
            + " over the upper 95 % Kaplan–Meier band, over every "
            f"t ≥ 2 and β = {table['beta'].min():g}…{table['beta'].max():g} of both engines, is",
            float(table["violation"].max()),
            "≤",
            0.0,
        )

    rows += declare(
        bound_excess,
        c0,
        wrong_c0,
        f"the bound with {wrong}",
        criterion="bound",
        role="claim",
        statement=BOUND,
        source=SOURCE,
        sample=sample_of("bound"),
    )
    informative = bound["t_star"] >= bound["first_escape"]
    rows.append(
        check(
            "bound_informative",
            "context",
            "the bound is positive (says something) after the first observed exit",
            measured=float(informative.sum()),
            threshold=float(len(bound)),
            rule=f"number of (engine, β) of {len(bound)} at which t* ≥ the first exit; where it is "
            "0 the bound is positive only while every chain is still inside, so `bound` "
            "could fail only through an exit before t*",
            source=SOURCE,
            sample=sample_of("bound_informative"),
        )
    )

    row = declared(starts, config)
    if row is not None:
        low, high, which = wider(row, "b", "b_boot")
        rows += _exponent_claim(
            "exponent",
            "",
            row["b"],
            (low, high, f"{which}; {int(row['n_bootstrap'])} bootstrap resamples"),
            f"β = {row['beta_start']:g}…{row['beta_max']:g} (declared start)",
            b_thm,
            over * c0,
            wrong,
        )
        direct = fits[(fits["range"] == "direct") & (fits["event"] == "hull")]
        if not direct.empty:
            d = direct.iloc[0]
            rows += _exponent_claim(
                "exponent_direct",
                ", on chains stepped one step at a time",
                d["b"],
                wider(d, "b", "b_boot"),
                f"β = {d['beta_min']:g}…{d['beta_max']:g} (every β direct stepping reached from "
                "`fit_from_beta`)",
                b_thm,
                over * c0,
                wrong,
            )
        rows.append(
            check(
                "exponent_vs_c0",
                "context",
                "the exponent against c0, the score gap of one cross-group pick from the vertices",
                measured=row["b"],
                low=low,
                high=high,
                threshold=c0,
                rule=f"pure exponential on β ≥ {row['beta_start']:g}: c0 lies "
                f"{position(c0, low, high)}",
                source="this study",
                sample=sample_of("exponent_vs_c0"),
            )
        )
        k_low, k_high, k_which = wider(row, "bk", "bk_boot")
        rows.append(
            check(
                "exponent_with_prefactor_vs_c0",
                "context",
                "the exponent b of E[T2] ≈ A β^k e^{bβ} against c0",
                measured=row["bk"],
                low=k_low,
                high=k_high,
                threshold=c0,
                rule=f"with the β^k prefactor on β ≥ {row['beta_start']:g} ({k_which} interval, "
                f"the wider): c0 lies {position(c0, k_low, k_high)}",
                source="this study",
                sample=sample_of("exponent_with_prefactor_vs_c0"),
            )
        )
        kk_low, kk_high, kk_which = wider(row, "k", "k_boot")
        rows.append(
            check(
                "prefactor_k",
                "context",
                "the power k of the prefactor β^k",
                measured=row["k"],
                low=kk_low,
                high=kk_high,
                threshold=0.0,
                rule=f"{kk_which} interval (the wider); "
                f"k = 0 lies {position(0.0, kk_low, kk_high)}; "
                f"likelihood-ratio p of k = 0: {fmt(float(row['k_lrt_p']), 2)}",
                source="this study",
                sample=sample_of("prefactor_k"),
            )
        )
        spread = float(starts["b"].max() - starts["b"].min())
        rows.append(
            check(
                "exponent_range_sensitivity",
                "context",
                "b of the pure exponential depends on the start of the fitted range",
                measured=spread,
                threshold=high - low,
                rule=f"range of b over the starts β_0 = "
                f"{', '.join(f'{v:g}' for v in starts['beta_start'])} (measured) against the "
                "width of the declared interval (threshold): "
                + (
                    "larger: the exponential law does not describe the whole range"
                    if spread > high - low
                    else "smaller"
                ),
                source="this study",
                sample=sample_of("exponent_range_sensitivity"),
            )
        )

    pair = ball_and_hull(fits)
    if pair is not None and row is not None:
        fb, fh = pair
        rows.append(
            check(
                "ball_exponent",
                "context",
                "the exit from the balls B(v_σ(i), ε) against T2",
                measured=fb["b"],
                low=fb["b_low"],
                high=fb["b_high"],
                threshold=fh["b"],
                rule=f"b of the ball exit on β = {fb['beta_min']:g}…{fb['beta_max']:g} (profile "
                f"interval) against that of T2 ({fh['b']:.4f} [{fh['b_low']:.4f}, "
                f"{fh['b_high']:.4f}]): the intervals " + overlap_words(fb, fh),
                source="this study",
                sample=sample_of("ball_exponent"),
            )
        )

    if not cross.empty:
        rows.append(
            engines_agree(cross, p_min, "exit").row(
                "engines_agree",
                "control",
                "direct and accelerated stepping sample the same exit times where both run",
                source="this study",
                sample=sample_of("engines_agree"),
            )
        )
    hull_all = per[per["event"] == "hull"]
    fewest = int(hull_all["events"].min())
    rows.append(
        Bound(
            "fewest T2 exits at one (engine, β)",
            fewest,
            "≥",
            float(config.min_escapes),
            than="threshold (`min_escapes`)",
        ).row(
            "exits_per_beta",
            "control",
            "every β has enough exits to estimate E[T2]",
            source="this study",
            sample=sample_of("exits_per_beta"),
        )
    )
    if not tol.empty:
        p = float(tol["logrank_p"].min())
        rows.append(
            Bound(
                f"smallest log-rank p of T2 at β = {tol['beta'].iloc[0]:g} between the study's "
                f"merge_tol and {len(tol) - 1} others",
                p,
                "≥",
                p_min,
                than="threshold",
            ).row(
                "merge_tol",
                "control",
                "the accelerated engine's merge tolerance does not move T2",
                source="this study",
                sample=sample_of("merge_tol"),
            )
        )

    level = float(config.memoryless_level)
    rejected = int((hull_all["memoryless_p"] <= level).sum())
    rows.append(
        check(
            "memoryless",
            "context",
            "T2 is geometric (memoryless); the theorem does not claim it",
            measured=rejected,
            threshold=float(len(hull_all)),
            rule=f"(engine, β) samples of {len(hull_all)} at which the parametric-bootstrap test "
            f"({int(meta['config']['n_resamples'])} resamples) rejects at p ≤ {level:g} "
            f"(`memoryless_level`); CV of T2 "
            f"{fmt(float(hull_all['cv'].min()), 3)}–{fmt(float(hull_all['cv'].max()), 3)}",
            source="this study",
            sample=sample_of("memoryless"),
        )
    )
    return checks_frame(rows)
