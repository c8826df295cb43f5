"""Checks of the max-margin study ([MM] experiments E1–E6), from the tables only.

Every criterion of ``figures._checks`` (the published values and thresholds of the experiments,
stated in the report) is a claim, but for the E6 rank rule: the stated rule "rank = min(n, d)"
is the claim, and "rank = number of samples with an active constraint" its correction. The bound
(T − 1) exp(−β/‖p^mm‖) on the softmax weight along the SVM ray is a claim too.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from metastab.results import read_table
from metastab.studies.runner import sibling
from metastab.studies.verdict import check, checks_frame

SOURCE = "[MM]"


def checks(out: Path, config: dict) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    rows, stated = [], None
    for k, (exp, what, measured, ref, ok, value, threshold) in enumerate(
        sibling(__file__, "figures")._checks(out, config)
    ):
        name = f"{exp}_{k + 1}"
        if what.endswith("(as stated)"):
            stated = name
        role = "correction" if what.startswith("correction:") else "claim"
        if role == "correction":
            name = f"{stated}/active_constraints" if stated else name
            role = role if stated else "context"
        rule = f"published / threshold: {ref}"
        if not _single_number(measured):
            rule += f"; measured: {measured}"
        rows.append(
            check(
                name,
                role,
                f"{exp}: {what}",
                measured=value,
                threshold=threshold,
                rule=rule,
                passed=ok if role != "context" else None,
                source=f"{SOURCE} {exp}",
            )
        )
    hard = read_table(out / "hardmax.csv")[0]
    ray, bound = hard[hard.kind == "SVM ray"], hard[hard.kind == "bound"]
    excess = float((ray.gap.values - bound.gap.values).max())
    tol = float(config["hardmax_roundoff"])
    rows.append(
        check(
            "hardmax_bound",
            "claim",
            "along p = β p^mm/‖p^mm‖: max_i (1 − s_(i,α_i)) ≤ (T − 1) exp(−β/‖p^mm‖)",
            measured=excess,
            threshold=tol,
            rule="largest (measured − bound) over every tabulated β ≤ threshold "
            "(`hardmax_roundoff`)",
            passed=excess <= tol,
            source=SOURCE + " (β → ∞ limit)",
        )
    )
    return checks_frame(rows)


def _single_number(text: str) -> bool:
    """Whether the report's measured ``text`` is one number (then it is the ``measured`` value,
    and the rule need not repeat it)."""
    try:
        float(text)
    except ValueError:
        return False
    return True
