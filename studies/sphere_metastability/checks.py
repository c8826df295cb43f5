"""Checks of the sphere-metastability study (docs: models#sphere-statements (7)), from the tables
only.

No paper states these laws: the claims are the package's own exact results for the chain on the
sphere, as docs: models#statements-fw gives them for the R^d chain. T_jump, the first moving pick
from the frozen clusters, is geometric with p = 1 − Π_a q_a^{m_a} (KS of the randomised PIT,
Bonferroni over β, by direct stepping and by the accelerated engine below and beyond E[T] = 1e40),
and its scaling line is log E[T] = βΔ − log N (the declared fit's wider 95 % intervals contain Δ and
−log N). Controls: the no-self-pick law is rejected wherever the law is tested, the engines
agree, every β has enough escapes, and the grid reaches E[T] >= ``target_mean``. The true escape
from the cap (T_cap), the R^d chain beside it, and the sensitivity to the fitted range are
context: no statement to test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import AllOf, Bound, Contains, declare
from metastab.studies.render import fmt, position, wider
from metastab.studies.runner import read_tables
from metastab.studies.verdict import check, checks_frame, power, with_samples
from studies.metastability.checks import SAMPLES, engines_agree

from .config import Config

LAW = (
    "T_jump (first moving pick from frozen clusters) is geometric with "
    "p = 1 − Π_a q_a^{m_a}, q_a the probability of a no-op pick"
)
SOURCE = "docs: models#frozen-law, models#sphere-statements (7)"


# The sample each check rests on (see studies.metastability.checks.SAMPLES): the
# accelerated engine draws T_jump from the same geometric law the claims compare with, so only
# checks on direct samples test the step-by-step chain.
SAMPLE_OF = {
    "law_direct": "direct",
    "law_accelerated": "accelerated",
    "law_beyond_target": "accelerated",
    "law_negative_control": "both",
    "exponent": "accelerated",
    "prefactor": "accelerated",
    "exponent_by_start": "accelerated",
    "cap_exponent": "accelerated",
    "cap_exponent_with_prefactor": "accelerated",
    "cap_range_sensitivity": "accelerated",
    "reach": "accelerated",
    "engines_agree": "both",
    "merge_tol": "accelerated",
    "escapes_per_beta": "both",
    "path_order": "both",
    "cap_memoryless": "both",
    "cap_over_jump": "accelerated",
    "rd_exponent": "accelerated",
    "rd_exponent_with_prefactor": "accelerated",
}


def declared(fits: pd.DataFrame, event: str, config: Config):
    """The fit of ``event`` from the declared start ``fit_from_beta``, or None."""
    at = fits[(fits["event"] == event) & np.isclose(fits["beta_start"], config.fit_from_beta)]
    return None if at.empty else at.iloc[0]


def law_rows(law: pd.DataFrame, config: Config) -> list[dict]:
    """The law's KS claims (direct; accelerated below and beyond the target) and the control."""
    level, target = float(config.ks_level), float(config.target_mean)
    rows = []
    parts = [
        ("law_direct", law["engine"] == "direct", "by direct stepping"),
        (
            "law_accelerated",
            (law["engine"] == "accelerated") & (law["exact_mean"] < target),
            f"by the accelerated engine, E[T] < {fmt(target, 2)}",
        ),
        (
            "law_beyond_target",
            (law["engine"] == "accelerated") & (law["exact_mean"] >= target),
            f"by the accelerated engine, E[T] ≥ {fmt(target, 2)}",
        ),
    ]
    for name, mask, where in parts:
        part = law[mask]

        wrong = "tokens never pick themselves (every r_a × m_a/(m_a − 1), the control's law)"
        if part.empty:
            row = check(name, "claim", f"{LAW}, {where}", rule="no β here", source=SOURCE)
            rows += [row, power(row, wrong, rejected=None)]
            continue

        def ks(column: str, part: pd.DataFrame = part) -> AllOf:
            # column: the KS p against the law (ks_p) or against the no-self-pick law
            censored = int(part["censored"].sum())
            return AllOf(
                (
                    Bound(
                        "smallest KS p of the randomised PIT"
                        + ("" if column == "ks_p" else " against the no-self-pick law")
                        + f" × {len(part)} β "
                        f"(β = {part['beta'].min():g}…{part['beta'].max():g}, Bonferroni; "
                        f"{int(part['chains'].min())}–{int(part['chains'].max())} chains, "
                        f"{censored} censored)",
                        min(float(part[column].min()) * len(part), 1.0),  # Bonferroni, capped
                        "≥",
                        level,
                        than="threshold",
                    ),
                    Bound("censored", censored, "=", 0, template=""),  # named above: "0 censored"
                ),
                sep="",
            )

        rows += declare(
            ks,
            "ks_p",
            "control_p",
            wrong,
            criterion=name,
            role="claim",
            statement=f"{LAW}, {where}",
            source=SOURCE,
        )
    bad = float(law["control_p"].max())
    rows.append(
        Bound(
            f"largest KS p of the control over all {len(law)} (engine, β)",
            bad,
            "<",
            float(config.control_level),
            than="threshold",
        ).row(
            "law_negative_control",
            "control",
            "the same samples against the law of tokens that never pick themselves "
            "(every r_a × m_a/(m_a − 1)) are rejected",
            source="this study",
        )
    )
    return rows


def exponent_rows(fits: pd.DataFrame, s: dict, config: Config) -> list[dict]:
    """The scaling line of T_jump (claims) and the exponent of T_cap (context)."""
    rows = []
    jump = declared(fits, "jump", config)
    if jump is not None:
        span = f"β = {jump['beta_start']:g}…{jump['beta_max']:g}"
        low, high, which = wider(jump, "b", "b_boot")
        pw = config.power

        def exponent(delta: float) -> Contains:
            return Contains(
                f"b of log E[T] = a + bβ on {span} (declared), the wider 95 % interval "
                f"({which}; {int(jump['n_bootstrap'])} bootstrap resamples)",
                jump["b"],
                low,
                high,
                delta,
                than="Δ" if delta == s["delta"] else f"{delta:.6g}",
            )

        rows += declare(
            exponent,
            s["delta"],
            (1 + pw.exponent_error) * s["delta"],
            f"the exponent {1 + pw.exponent_error:g} Δ ({pw.exponent_error:.0%} off)",
            criterion="exponent",
            role="claim",
            statement="log E[T_jump] = βΔ − log N + o(1), Δ = 1 − cos θ_min (slope)",
            source=SOURCE,
        )
        a_low, a_high, a_which = wider(jump, "a", "a_boot")

        def prefactor(log_n: float) -> Contains:
            return Contains(
                f"a of the same fit, the wider 95 % interval ({a_which})",
                jump["a"],
                a_low,
                a_high,
                -log_n,
                than="−log N" if log_n == s["log_prefactor"] else f"{-log_n:.6g}",
            )

        rows += declare(
            prefactor,
            s["log_prefactor"],
            s["log_prefactor"] + np.log(pw.prefactor_factor),
            f"N {pw.prefactor_factor:g} times larger (E[T] {pw.prefactor_factor:g} times smaller)",
            criterion="prefactor",
            role="claim",
            statement="log E[T_jump] = βΔ − log N + o(1), N = Σ_a m_a M_a / Z_a (intercept)",
            source=SOURCE,
        )
    starts = fits[fits["event"] == "jump"]
    if not starts.empty:
        inside = [
            bool(lo <= s["delta"] <= hi)
            for lo, hi, _ in (wider(r, "b", "b_boot") for _, r in starts.iterrows())
        ]
        rows.append(
            check(
                "exponent_by_start",
                "context",
                "the slope of T_jump against Δ, on every fitted range",
                measured=float(sum(inside)),
                threshold=float(len(inside)),
                rule="starts β_0 of "
                + ", ".join(f"{v:g}" for v in starts["beta_start"])
                + " at which Δ lies inside the wider 95 % interval of b; outside at "
                + (
                    ", ".join(f"{v:g}" for v, i in zip(starts["beta_start"], inside) if not i)
                    or "none"
                )
                + " (the exact law is curved where e^{−βΔ} is not negligible)",
                source="this study",
            )
        )
    cap = declared(fits, "cap", config)
    if cap is not None:
        span = f"β = {cap['beta_start']:g}…{cap['beta_max']:g}"
        low, high, which = wider(cap, "b", "b_boot")
        rows.append(
            check(
                "cap_exponent",
                "context",
                "the exponent of the escape from the cap, against Δ",
                measured=cap["b"],
                low=low,
                high=high,
                threshold=s["delta"],
                rule=f"b of log E[T_cap] = a + bβ on {span} ({which} interval, the wider): "
                f"Δ lies {position(s['delta'], low, high)}",
                source="this study",
            )
        )
        k_low, k_high, k_which = wider(cap, "bk", "bk_boot")
        rows.append(
            check(
                "cap_exponent_with_prefactor",
                "context",
                "the exponent b of E[T_cap] ≈ A β^k e^{bβ}, against Δ",
                measured=cap["bk"],
                low=k_low,
                high=k_high,
                threshold=s["delta"],
                rule=f"on {span} ({k_which} interval; k = {fmt(float(cap['k']), 3)}, "
                f"likelihood-ratio p of k = 0: {fmt(float(cap['k_lrt_p']), 2)}): "
                f"Δ lies {position(s['delta'], k_low, k_high)}",
                source="this study",
            )
        )
        both = fits[fits["event"] == "cap"]
        spread = float(both["b"].max() - both["b"].min())
        rows.append(
            check(
                "cap_range_sensitivity",
                "context",
                "b of T_cap depends on the start of the fitted range",
                measured=spread,
                threshold=high - low,
                rule="range of b over the starts β_0 = "
                + ", ".join(f"{v:g}" for v in both["beta_start"])
                + " (measured) against the width of the declared interval (threshold): "
                + ("larger" if spread > high - low else "smaller"),
                source="this study",
            )
        )
    return rows


def cascade_rows(per: pd.DataFrame, config: Config) -> list[dict]:
    """E[T_cap]/E[T_jump] at both ends of the declared range: how much of the escape from the cap
    is the wait for the first moving pick."""
    fast = per[(per["engine"] == "accelerated") & (per["beta"] >= config.fit_from_beta - 1e-9)]
    means = fast.pivot_table(index="beta", columns="event", values="mean")
    if means.empty or not {"jump", "cap"} <= set(means.columns):
        return []
    ratio = (means["cap"] / means["jump"]).dropna()
    lo, hi = ratio.index.min(), ratio.index.max()
    return [
        check(
            "cap_over_jump",
            "context",
            "E[T_cap] / E[T_jump]: the escape from the cap after the first moving pick",
            measured=float(ratio[hi]),
            threshold=float(ratio[lo]),
            rule=f"the ratio at β = {hi:g} (measured) against β = {lo:g} (threshold); "
            f"smallest {fmt(float(ratio.min()), 3)}, largest {fmt(float(ratio.max()), 3)} on "
            "the declared range",
            source="this study",
        )
    ]


def rd_rows(rd: pd.DataFrame, fits: pd.DataFrame, config: Config) -> list[dict]:
    """The sphere's cap exponent beside the R^d chain's T2 exponent on the same range, without
    and with the β^k prefactor."""
    cap = declared(fits, "cap", config)
    ex = rd[(rd["kind"] == "exponent") & np.isclose(rd["beta_start"], config.fit_from_beta)]
    if cap is None or ex.empty:
        return []
    r = ex.iloc[0]
    rows = []
    for name, key, model in (
        ("rd_exponent", "b", "log E[T] = a + bβ"),
        ("rd_exponent_with_prefactor", "bk", "E[T] ≈ A β^k e^{bβ}"),
    ):
        low, high, which = wider(r, key, f"{key}_boot")
        c_low, c_high, c_which = wider(cap, key, f"{key}_boot")
        overlap = c_low <= high and low <= c_high
        rows.append(
            check(
                name,
                "context",
                f"the exponent b of {model}: the R^d chain's T2 (metastability study: same "
                "points, γ, n, ε; tokens spread around the vertices) beside the sphere's T_cap",
                measured=float(cap[key]),
                low=c_low,
                high=c_high,
                threshold=float(r[key]),
                rule=f"sphere b on β = {cap['beta_start']:g}…{cap['beta_max']:g} (measured, "
                f"{c_which} interval) against the R^d b on β = {r['beta_start']:g}…"
                f"{r['beta_max']:g} (threshold, {which} interval [{fmt(low, 5)}, "
                f"{fmt(high, 5)}]): the intervals " + ("overlap" if overlap else "do not overlap"),
                source=f"data/{config.rd_study}",
            )
        )
    return rows


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    per, meta = read_table(out / "per_beta.csv")
    law, fits, cross, rd, tol = read_tables(
        out, "law.csv", "exponent.csv", "crosscheck.csv", "rd.csv", "merge_tol.csv"
    )
    s = meta["setup"]
    rows = law_rows(law, config)
    rows += exponent_rows(fits, s, config)

    fast = law[law["engine"] == "accelerated"]
    top = float(fast["exact_mean"].max()) if not fast.empty else float("nan")
    reach = AllOf(
        (
            Bound(
                f"largest exact E[T_jump] on the grid (β ≤ {fast['beta'].max():g})",
                top,
                "≥",
                float(config.target_mean),
                than="threshold",
            ),
            Bound("censored", int(fast["censored"].sum()), "=", 0, template="no chain {what}"),
        ),
        sep=", ",
        tail=" at any β",
    )
    rows.append(
        reach.row(
            "reach",
            "control",
            "the accelerated engine reaches E[T_jump] ≥ the target with every chain escaped",
            source="this study",
        )
    )
    if not cross.empty:
        rows.append(
            engines_agree(cross, float(config.agreement_p), "event").row(
                "engines_agree",
                "control",
                "direct and accelerated stepping sample the same escape times where both run",
                source="this study",
            )
        )
    rows.append(
        Bound(
            f"smallest log-rank p of T_cap at β = {tol['beta'].iloc[0]:g} between the "
            f"study's merge_tol and {len(tol) - 1} others "
            f"({', '.join(f'{t:g}' for t in tol['merge_tol'])})",
            float(tol["logrank_p"].min()),
            "≥",
            float(config.agreement_p),
            than="threshold",
        ).row(
            "merge_tol",
            "control",
            "the accelerated engine's merge tolerance does not move T_cap",
            source="this study",
        )
    )
    rows.append(
        Bound(
            "fewest escapes at one (engine, event, β)",
            int(per["events"].min()),
            "≥",
            float(config.min_escapes),
            than="threshold (`min_escapes`)",
        ).row(
            "escapes_per_beta",
            "control",
            "every (engine, event, β) has escapes enough to estimate E[T]",
            source="this study",
        )
    )
    rows.append(
        check(
            "path_order",
            "context",
            "T_jump ≤ T_cap on every path (common random numbers)",
            measured=float(meta["cap_before_jump_chains"]),
            threshold=0.0,
            rule="chains with T_cap < T_jump, over both engines and every β",
            source="this study",
        )
    )
    cap = per[(per["event"] == "cap") & per["memoryless_p"].notna()]
    level = float(config.memoryless_level)
    rows.append(
        check(
            "cap_memoryless",
            "context",
            "T_cap is geometric (memoryless)",
            measured=float((cap["memoryless_p"] <= level).sum()),
            threshold=float(len(cap)),
            rule=f"(engine, β) of {len(cap)} at which the exponentiality test "
            f"({int(config.n_resamples)} resamples) rejects at p ≤ {level:g}; CV of T_cap "
            f"{fmt(float(cap['cv'].min()), 3)}–{fmt(float(cap['cv'].max()), 3)}",
            source="this study",
        )
    )
    rows += cascade_rows(per, config)
    rows += rd_rows(rd, fits, config)
    return checks_frame(with_samples(rows, {k: SAMPLES[v] for k, v in SAMPLE_OF.items()}))
