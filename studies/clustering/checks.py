"""Checks of the clustering study ([FW] Thm 5.2, its first phase), from the tables only.

Only polytopes that meet the theorem's hypotheses (equinorm, acute cones, c0 > 0) count, and
only at β where its initial condition exists; the others (the regular pentagon, whose 108°
cones are not acute) are context, shown apart. The claim: one C serves every β. It fails when
the smallest supported C (extreme start) grows across the admissible β by more than the spread
of the corrected constant over the same runs, the resolution of the estimate where the constant
is known to be fixed. The correction: with M = max_i |x_i^0 − v_σ(i)| in place of m, the event
holds with C = 1/(1 − γ) and at least the probability 1 − β^(-1/8).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import AllOf, Bound, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "[FW] Thm 5.2, its first phase"


def hypotheses(polys: pd.DataFrame) -> set:
    """Names of the polytopes that meet Thm 5.2's hypotheses."""
    ok = polys["equinorm"].astype(bool) & polys["acute_cones"].astype(bool) & (polys["c0"] > 0)
    return set(polys.loc[ok, "polytope"])


def paths_agree(chains: pd.DataFrame) -> np.ndarray:
    """Per chain: whether the hitting time read from the recorded path equals first_passage's
    with ReachVertices (both censored, or the same step)."""
    return np.where(
        chains["censored"],
        chains["hit_step_event"] == -1,
        chains["hit_step_event"] == chains["hit_step"],
    )


def growth_rows(ok: pd.DataFrame, exponent: float = 0.0) -> pd.DataFrame:
    """Per (polytope, γ): growth of the smallest supported C (extreme start) from the first to
    the last admissible β (divided by the growth of β^exponent), and the spread max/min of the
    corrected constant (its resolution)."""
    rows = []
    for (name, gamma), g in ok.sort_values("beta").groupby(["polytope", "gamma"]):
        rows.append(
            {
                "polytope": name,
                "gamma": gamma,
                "growth": float(g["C_hat_extreme"].iloc[-1] / g["C_hat_extreme"].iloc[0])
                / float(g["beta"].iloc[-1] / g["beta"].iloc[0]) ** exponent,
                "spread": float(g["C_max_hat"].max() / g["C_max_hat"].min()),
                "worst": float(g["C_hat_extreme"].max()),
            }
        )
    return pd.DataFrame(rows)


def _constant_rows(label: str, part: pd.DataFrame, role: str | None, config: Config) -> list[dict]:
    """The rows of the universal constant and its M variant over the runs ``part``: claim and
    correction with their power rows (``role`` None), or context rows (``role`` "context")."""
    names = ", ".join(sorted(part["polytope"].unique()))
    gr = growth_rows(part)
    spread = float(gr["spread"].max())

    def universal(exponent: float) -> Bound:
        return Bound(
            f"{names}: smallest growth over γ of the smallest supported C (extreme start)"
            + (f" / β^{exponent:g}" if exponent else "")
            + " from the first to the last admissible β",
            float(growth_rows(part, exponent)["growth"].min()),
            "≤",
            spread,
            than="threshold",
            tail=", the largest spread max/min of the corrected constant over the same runs "
            f"(largest C needed: {gr['worst'].max():.3g})",
        )

    below = int((part["P_event_T1_max"] < part["bound"]).sum())
    tol = float(config.c_roundoff)

    def variant(factor: float) -> AllOf:
        written = "1/(1 − γ)" if factor == 1 else f"{factor:g}/(1 − γ)"
        return AllOf(
            (
                Bound(
                    f"{names}: largest (smallest supported C − {written})",
                    float((part["C_max_hat"] - factor / (1 - part["gamma"])).max()),
                    "≤",
                    tol,
                    than=f"{tol:g} (`c_roundoff`)",
                ),
                Bound(
                    "runs below the bound",
                    below,
                    "=",
                    0,
                    template="P̂[event at T1] ≥ 1 − β^(-1/8) at every admissible run"
                    + ("" if not below else " (the probability bound is NOT met)"),
                ),
            ),
            sep=" and ",
        )

    claim = (
        "P[every token near its vertex at T1] ≥ 1 − β^(-1/8) with τ = min{…, (1 − γ)m} "
        "and one C > 1 for all β ≥ β_*"
    )
    fix = (
        "the same event with M = max_i |x_i^0 − v_σ(i)| in place of m in τ and T1 and C = 1/(1 − γ)"
    )
    if role:
        return [
            universal(0.0).row("universal_C" + label, role, claim, source=SOURCE),
            variant(1.0).row("M_variant" + label, role, fix, source="this study"),
        ]
    pw = config.power
    return declare(
        universal,
        0.0,
        pw.C_exponent,
        f"C grows like β^{pw.C_exponent:g} (a constant of the β^(-1/8) scale)",
        criterion="universal_C" + label,
        role="claim",
        statement=claim,
        source=SOURCE,
    ) + declare(
        variant,
        1.0,
        pw.M_variant_C_factor,
        f"C = {pw.M_variant_C_factor:g}/(1 − γ) suffices with M "
        f"({1 - pw.M_variant_C_factor:.0%} below the corrected constant)",
        criterion="universal_C/M_variant",
        role="correction",
        statement=fix,
        source="this study",
    )


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    summary = read_table(out / "summary.csv")[0]
    polys = read_table(out / "polytopes.csv")[0]
    chains = read_table(out / "chains.parquet")[0]
    good = hypotheses(polys)
    admissible = summary[summary["cones_ok"].astype(bool)]
    rows: list[dict] = []
    for label, part, role in (
        ("", admissible[admissible["polytope"].isin(good)], None),
        ("_outside_hypotheses", admissible[~admissible["polytope"].isin(good)], "context"),
    ):
        if not part.empty:
            rows += _constant_rows(label, part, role, config)
    rows.append(
        check(
            "initial_condition_exists",
            "context",
            "the eroded dominance cones I_σ(β^(-1/8)) ⊖ β^(-1/4) are non-empty",
            measured=float(polys.loc[polys["polytope"].isin(good), "beta_threshold"].min())
            if good
            else np.nan,
            rule="smallest β at which the theorem's initial condition exists (polytopes within "
            "the hypotheses); smaller β of the grid are not tested",
            source=SOURCE,
        )
    )
    same = paths_agree(chains)
    rows.append(
        Bound(f"fraction of {same.size} chains that agree", float(same.mean()), "=", 1.0).row(
            "hitting_times_agree",
            "control",
            "hitting times from the recorded paths equal `first_passage` with `ReachVertices`",
            source="this study",
        )
    )
    return checks_frame(rows)
