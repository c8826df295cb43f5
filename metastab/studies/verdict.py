"""Checks tables and the verdict rule of the studies.

A study states what it tests as a **checks table** (``checks.csv``), one row per criterion, with
the columns :data:`COLUMNS`:

- ``criterion``: a short unique name;
- ``role``: ``claim`` (the source's statement as printed), ``correction`` (the statement with one
  stated change: a hypothesis added, a constant or a compared quantity replaced; its criterion is
  ``CLAIM/NAME``, naming the claim it corrects), ``control`` (a
  check of the instrument, e.g. a negative control that must be detected) or ``context`` (reported
  beside the claims and never counted: a check that cannot fail in practice, agreement with a
  re-implementation of the same rule, a measured fact the source does not state);
- ``statement``: what the source claims, with its equation or figure;
- ``measured``, ``low``, ``high``: the measured number and its interval (where there is one);
- ``threshold``, ``rule``: what the number is compared with and how (in words);
- ``pass``: ``true``, ``false`` or ``NA`` (not testable here, or ``context``);
- ``source``: the reference and where in it.

**The verdict** (:func:`verdict`) is a pure function of that table, the same for every study:

1. ``not tested`` if no ``claim`` row has a pass value, or if any ``control`` row fails (then the
   checks could not have told a true claim from a false one);
2. ``holds`` if every tested ``claim`` row passes;
3. ``holds with a correction`` if every failing ``claim`` row has at least one tested
   correction (``CLAIM/...``) and every tested correction of a failing claim passes;
4. ``fails`` otherwise.

Reports are rendered from the tables only (:mod:`metastab.studies.render`); :func:`verdict_line`
writes the report's ``Verdict:`` line from the checks table, so that no study writes a verdict by
hand.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    import os
    from typing import IO

__all__ = [
    "COLUMNS",
    "ROLES",
    "VERDICTS",
    "check",
    "checks_frame",
    "read_checks",
    "write_checks",
    "checks_config",
    "verdict",
    "verdict_line",
]

COLUMNS = (
    "criterion",
    "role",
    "statement",
    "measured",
    "low",
    "high",
    "threshold",
    "rule",
    "pass",
    "source",
)
ROLES = ("claim", "correction", "control", "context")
VERDICTS = ("holds", "holds with a correction", "fails", "not tested")
_PASS = {True: "true", False: "false", None: "NA"}


def check(
    criterion: str,
    role: str,
    statement: str,
    *,
    measured: float = math.nan,
    low: float = math.nan,
    high: float = math.nan,
    threshold: float = math.nan,
    rule: str = "",
    passed: bool | None = None,
    source: str = "",
) -> dict:
    """One row of a checks table (see the module docstring for the columns).

    ``passed`` is True, False or None (not testable: written ``NA``); a ``context`` row is never
    counted, so its pass value must be None.

    Raises
    ------
    ValueError
        If ``role`` is not one of :data:`ROLES`, or a ``context`` row carries a pass value.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if (role == "correction") != ("/" in criterion):
        raise ValueError(
            f"check {criterion!r}: a correction, and only a correction, is named "
            "CLAIM/NAME after the claim it corrects"
        )
    if passed is not None:
        passed = bool(passed)
        if role == "context":
            raise ValueError(
                f"check {criterion!r}: a context row is not counted, passed must be "
                f"None, got {passed}"
            )
    return {
        "criterion": criterion,
        "role": role,
        "statement": statement,
        "measured": float(measured),
        "low": float(low),
        "high": float(high),
        "threshold": float(threshold),
        "rule": rule,
        "pass": _PASS[passed],
        "source": source,
    }


def checks_frame(rows: list[dict]) -> pd.DataFrame:
    """The checks table of ``rows`` (from :func:`check`), columns :data:`COLUMNS`.

    Raises
    ------
    ValueError
        If two rows share a criterion.
    """
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    dup = frame["criterion"][frame["criterion"].duplicated()]
    if not dup.empty:
        raise ValueError(f"criterion names must be unique, repeated: {sorted(set(dup))}")
    return frame


def read_checks(path: str | os.PathLike[str] | IO[str]) -> pd.DataFrame:
    """A ``checks.csv`` as written by a study (``pass`` kept as the strings true/false/NA)."""
    frame = pd.read_csv(
        path,
        dtype={"pass": str, "rule": str, "statement": str, "source": str},
        keep_default_na=False,
        na_values={c: [""] for c in ("measured", "low", "high", "threshold")},
    )
    missing = set(COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(
            f"{path}: a checks table needs the columns {COLUMNS}, missing {sorted(missing)}"
        )
    return frame[list(COLUMNS)]


def _passes(checks: pd.DataFrame, role: str) -> pd.Series:
    values = checks.loc[checks["role"] == role, "pass"].astype(str).str.lower()
    bad = set(values) - {"true", "false", "na"}
    if bad:
        raise ValueError(f"pass must be true, false or NA, got {sorted(bad)}")
    return values[values != "na"] == "true"


def verdict(checks: pd.DataFrame) -> str:
    """The verdict of a checks table: ``holds``, ``holds with a correction``, ``fails`` or
    ``not tested`` (the rule is in the module docstring).

    >>> rows = [check("law", "claim", "x", passed=True), check("rate", "claim", "y", passed=False),
    ...         check("rate/fixed", "correction", "y'", passed=True)]
    >>> verdict(checks_frame(rows[:1])), verdict(checks_frame(rows))
    ('holds', 'holds with a correction')
    >>> verdict(checks_frame(rows[1:2])), verdict(checks_frame([check("c", "context", "z")]))
    ('fails', 'not tested')
    """
    bad = set(checks["role"]) - set(ROLES)
    if bad:
        raise ValueError(f"role must be one of {ROLES}, got {sorted(bad)}")
    claims, fixes, controls = (_passes(checks, r) for r in ("claim", "correction", "control"))
    if claims.empty or not controls.all():
        return "not tested"
    if claims.all():
        return "holds"
    names = checks["criterion"].astype(str)
    for claim in names[claims.index[~claims]]:
        mine = fixes[names[fixes.index].str.startswith(claim + "/")]
        if mine.empty or not mine.all():
            return "fails"
    return "holds with a correction"


def verdict_line(checks: pd.DataFrame) -> str:
    """The report's ``Verdict: ...`` line: :func:`verdict` and the counts behind it, naming the
    failing claims and the corrections that carry a ``holds with a correction``."""
    v = verdict(checks)
    claims = _passes(checks, "claim")
    parts = [f"{int(claims.sum())} of {len(claims)} tested claims pass"]
    names = checks.loc[checks["role"] == "claim", "criterion"]
    failed = names[claims.index[~claims]].tolist() if not claims.empty else []
    if failed:
        parts.append("failing: " + ", ".join(f"`{c}`" for c in failed))
    fixes = _passes(checks, "correction")
    if not fixes.empty:
        parts.append(f"{int(fixes.sum())} of {len(fixes)} corrections pass")
    controls = _passes(checks, "control")
    if not controls.empty:
        parts.append(f"{int(controls.sum())} of {len(controls)} controls pass")
    untested = int(
        ((checks["role"] == "claim") & (checks["pass"].astype(str).str.lower() == "na")).sum()
    )
    if untested:
        parts.append(f"{untested} claims not testable here")
    return f"Verdict: {v} ({'; '.join(parts)})."


def write_checks(checks: pd.DataFrame, out: Path, meta: dict) -> Path:
    """Write ``out/checks.csv`` with its provenance sidecar."""
    from ..results import write_table

    return write_table(checks[list(COLUMNS)], Path(out) / "checks.csv", meta)


def checks_config(out: str | os.PathLike[str]) -> dict:
    """The configuration recorded with ``out/checks.csv``: the one the checks were computed
    with, thresholds and wording rules included (the tables' own sidecars keep the configuration
    of the run, which may predate a threshold's key)."""
    from ..results import read_table

    return read_table(Path(out) / "checks.csv")[1]["config"]
