"""Checks tables and the verdict rule of the studies.

A study states what it tests as a **checks table** (``checks.csv``), one row per criterion, with
the columns :data:`COLUMNS`:

- ``criterion``: a short unique name;
- ``role``: ``claim`` (the source's statement as printed), ``correction`` (the statement with one
  stated change: a hypothesis added, a constant or a compared quantity replaced; its criterion is
  ``CLAIM/NAME``, naming the claim it corrects), ``power`` (the companion of one claim or
  correction, criterion ``CRITERION/power``: the same check applied to a deliberately wrong
  prediction that the study's config declares before the data are seen; it passes when the check
  rejects that prediction, see :func:`power`), ``control`` (a
  check of the instrument, e.g. a negative control that must be detected) or ``context`` (reported
  beside the claims and never counted: a check that cannot fail in practice, agreement with a
  re-implementation of the same rule, a measured fact the source does not state);
- ``statement``: what the source claims, with its equation or figure;
- ``measured``, ``low``, ``high``: the measured number and its interval (where there is one);
- ``threshold``, ``rule``: what the number is compared with and how (in words);
- ``pass``: ``true``, ``false`` or ``NA`` (not testable here, or ``context``);
- ``source``: the reference and where in it;
- ``sample``: the sample the check rests on (which runs, which engine), where the study declares
  one; empty otherwise. A power row rests on its claim's sample.

A check's rule and pass value are best written once, from a comparator
(:mod:`metastab.studies.compare`), which also builds the power row.

Every claim and correction row has exactly one ``power`` row (:func:`checks_frame` refuses a
table without). A claim or correction is **tested** if it fails, or if it passes and its power
row passes too: a check that also passes the wrong prediction could not have told the claim from
it, so its pass is not counted (``not tested: no power``; a power row without a pass value leaves
a passing claim untested as well: ``power not measured``). A failing claim is tested whatever its
power row says: the check rejected it.

**The verdict** (:func:`verdict`) is a pure function of that table, the same for every study:

1. ``not tested`` if no ``claim`` row is tested, or if any ``control`` row fails (then the
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
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from typing import IO

__all__ = [
    "COLUMNS",
    "ROLES",
    "VERDICTS",
    "check",
    "power",
    "powered",
    "with_samples",
    "checks_frame",
    "read_checks",
    "write_checks",
    "checks_config",
    "unpowered",
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
    "sample",
)
ROLES = ("claim", "correction", "power", "control", "context")
POWER = "/power"  # the suffix of a power row's criterion: CRITERION/power
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
    sample: str = "",
) -> dict:
    """One row of a checks table (see the module docstring for the columns).

    Parameters
    ----------
    criterion : str
        A short unique name: ``CLAIM/NAME`` for a correction, ``CRITERION/power`` for a power
        row (:func:`power` names it).
    role : {"claim", "correction", "power", "control", "context"}
        What the row is (:data:`ROLES`).
    statement : str
        What the source claims, with its equation or figure.
    measured, low, high : float
        The measured number and its interval (nan where there is none).
    threshold : float
        What the number is compared with (nan where it is not a number).
    rule : str
        How it is compared, in words.
    passed : bool or None
        True, False or None (not testable: written ``NA``); a ``context`` row is never
        counted, so its pass value must be None.
    source : str
        The reference and where in it.
    sample : str
        The sample the check rests on (empty where not declared).

    Returns
    -------
    row : dict
        The row, keyed by :data:`COLUMNS` (``pass`` as "true", "false" or "NA").

    Raises
    ------
    ValueError
        If ``role`` is not one of :data:`ROLES`, a ``context`` row carries a pass value, or the
        criterion's form does not match the role.

    Examples
    --------
    >>> from metastab.studies.verdict import check
    >>> row = check("rate", "claim", "b = 1.5 ([FW] Thm 5.4)", measured=1.49, threshold=0.05,
    ...             rule="abs(b - 1.5) <= 0.05", passed=True, source="[FW] Thm 5.4")
    >>> row["criterion"], row["pass"], row["measured"]
    ('rate', 'true', 1.49)
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if (role == "power") != criterion.endswith(POWER):
        raise ValueError(
            f"check {criterion!r}: a power row, and only a power row, is named "
            f"CRITERION{POWER} after the claim or correction it belongs to"
        )
    if role != "power" and (role == "correction") != ("/" in criterion):
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
        "sample": sample,
    }


def power(
    of: dict,
    wrong: str,
    *,
    rejected: bool | None,
    measured: float = math.nan,
    low: float = math.nan,
    high: float = math.nan,
    threshold: float = math.nan,
    rule: str = "",
) -> dict:
    """The power row of the claim or correction row ``of``: its check applied to the wrong
    prediction ``wrong`` (a deliberately mistaken theory of a stated size, declared in the
    study's config before the data are seen).

    Parameters
    ----------
    of : dict
        The claim or correction row (from :func:`check`).
    wrong : str
        The wrong prediction, in words.
    rejected : bool or None
        Whether the check rejects the wrong prediction (the row's pass value; None if it
        cannot be evaluated here).
    measured, low, high, threshold : float
        The check's numbers under the wrong prediction (nan where there is none).
    rule : str
        How they are compared (default: the claim's rule).

    Returns
    -------
    row : dict
        The power row, criterion ``CRITERION/power``, with the claim's source and sample.

    Raises
    ------
    ValueError
        If ``of`` is not a claim or a correction.

    Examples
    --------
    >>> from metastab.studies.verdict import check, power
    >>> claim = check("rate", "claim", "b = 1.5", measured=1.49, threshold=0.05,
    ...               rule="|b − 1.5| ≤ 0.05", passed=True)
    >>> row = power(claim, "b = 1.35 (10 % low)", rejected=abs(1.49 - 1.35) > 0.05,
    ...             measured=1.49, threshold=0.05, rule="|b − 1.35| ≤ 0.05")
    >>> row["criterion"], row["role"], row["pass"]
    ('rate/power', 'power', 'true')
    """
    if of["role"] not in ("claim", "correction"):
        raise ValueError(
            f"check {of['criterion']!r}: only a claim or a correction has a power row, "
            f"not a {of['role']}"
        )
    return check(
        of["criterion"] + POWER,
        "power",
        f"wrong prediction: {wrong}",
        measured=measured,
        low=low,
        high=high,
        threshold=threshold,
        rule=rule or of["rule"],
        passed=rejected,
        source=of["source"],
        sample=of.get("sample", ""),
    )


def powered(make: Callable[[Any], dict], prediction: Any, wrong: Any, what: str) -> list[dict]:
    """A claim or correction row and its power row, from one check: ``make(prediction)`` is the
    row (from :func:`check`) of the check of ``prediction``; the power row is the same check of
    the wrong prediction ``wrong``, described by ``what``, and passes when that row fails.

    Parameters
    ----------
    make : callable
        ``make(prediction) -> row``: the check of a prediction, as a row of :func:`check`.
    prediction : object
        The claim's (or correction's) prediction.
    wrong : object
        The wrong prediction of the power row, declared in the config before the data.
    what : str
        The wrong prediction, in words (the power row's statement).

    Returns
    -------
    rows : list of dict
        The row of ``prediction`` and its power row.

    Examples
    --------
    >>> from metastab.studies.verdict import check, powered
    >>> def law(b):
    ...     return check("rate", "claim", f"b = {b}", measured=1.49, threshold=0.05,
    ...                  rule=f"|b − {b}| ≤ 0.05", passed=abs(1.49 - b) <= 0.05)
    >>> [(r["criterion"], r["pass"]) for r in powered(law, 1.5, 1.35, "b 10 % low")]
    [('rate', 'true'), ('rate/power', 'true')]
    """
    row, alt = make(prediction), make(wrong)
    rejected = {"true": False, "false": True, "NA": None}[alt["pass"]]
    return [
        row,
        power(
            row,
            what,
            rejected=rejected,
            **{k: alt[k] for k in ("measured", "low", "high", "threshold", "rule")},
        ),
    ]


def with_samples(rows: list[dict], sample_of: dict[str, str]) -> list[dict]:
    """``rows`` with their ``sample`` column set from one declaration, ``sample_of`` (criterion
    → the sample in words); a power row rests on the sample of its claim or correction.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`check` (changed in place).
    sample_of : dict
        The sample of every criterion of ``rows`` (power rows aside).

    Returns
    -------
    rows : list of dict
        The same rows.

    Raises
    ------
    KeyError
        If a row's criterion has no declared sample.

    Examples
    --------
    >>> from metastab.studies.verdict import check, power, with_samples
    >>> claim = check("law", "claim", "T is geometric", passed=True)
    >>> rows = with_samples([claim, power(claim, "T is constant", rejected=True)],
    ...                     {"law": "direct stepping"})
    >>> [r["sample"] for r in rows]
    ['direct stepping', 'direct stepping']
    """
    for row in rows:
        name = row["criterion"].removesuffix(POWER)
        if name not in sample_of:
            raise KeyError(f"check {row['criterion']!r}: no sample declared")
        row["sample"] = sample_of[name]
    return rows


def checks_frame(rows: list[dict]) -> pd.DataFrame:
    """The checks table of ``rows`` (from :func:`check` and :func:`power`), columns
    :data:`COLUMNS`.

    Parameters
    ----------
    rows : list of dict
        The rows, from :func:`check`, :func:`power` and :func:`powered`.

    Returns
    -------
    checks : pandas.DataFrame
        One row per criterion, in the order given.

    Raises
    ------
    ValueError
        If two rows share a criterion, a claim or correction has no power row, or a power row
        belongs to no claim or correction.

    Examples
    --------
    >>> from metastab.studies.verdict import check, checks_frame, power
    >>> claim = check("law", "claim", "T is geometric", passed=True)
    >>> checks_frame([claim, power(claim, "T is constant", rejected=True)])[
    ...     ["criterion", "role", "pass"]]
       criterion   role  pass
    0        law  claim  true
    1  law/power  power  true
    >>> checks_frame([claim])
    Traceback (most recent call last):
    ...
    ValueError: every claim and correction needs a power row ... missing for ['law']
    """
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    dup = frame["criterion"][frame["criterion"].duplicated()]
    if not dup.empty:
        raise ValueError(f"criterion names must be unique, repeated: {sorted(set(dup))}")
    _check_power(frame)
    return frame


def _check_power(frame: pd.DataFrame) -> None:
    names = frame["criterion"].astype(str)
    tested = set(names[frame["role"].isin(("claim", "correction"))])
    powered = {n.removesuffix(POWER) for n in names[frame["role"] == "power"]}
    if tested - powered:
        raise ValueError(
            "every claim and correction needs a power row (CRITERION/power, the check applied "
            f"to a declared wrong prediction), missing for {sorted(tested - powered)}"
        )
    if powered - tested:
        raise ValueError(f"power rows of no claim or correction: {sorted(powered - tested)}")


def read_checks(path: str | os.PathLike[str] | IO[str]) -> pd.DataFrame:
    """A ``checks.csv`` as written by a study (``pass`` kept as the strings true/false/NA).

    Parameters
    ----------
    path : str, os.PathLike or file
        The table (a study's ``out/checks.csv``), or an open text file.

    Returns
    -------
    checks : pandas.DataFrame
        The table, columns :data:`COLUMNS`.

    Raises
    ------
    ValueError
        When a column of :data:`COLUMNS` is missing (but ``sample``, read as empty).

    Examples
    --------
    >>> import io
    >>> from metastab.studies.verdict import check, checks_frame, power, read_checks, verdict
    >>> claim = check("law", "claim", "T is geometric", passed=True)
    >>> text = checks_frame([claim, power(claim, "T is constant", rejected=True)]).to_csv(
    ...     index=False)
    >>> table = read_checks(io.StringIO(text))
    >>> table["pass"].tolist(), verdict(table)
    (['true', 'true'], 'holds')
    """
    frame = pd.read_csv(
        path,
        dtype={"pass": str, "rule": str, "statement": str, "source": str, "sample": str},
        keep_default_na=False,
        na_values={c: [""] for c in ("measured", "low", "high", "threshold")},
    )
    if "sample" not in frame.columns:  # a table written before the column: no sample declared
        frame["sample"] = ""
    missing = set(COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(
            f"{path}: a checks table needs the columns {COLUMNS}, missing {sorted(missing)}"
        )
    return frame[list(COLUMNS)]


def _passes(checks: pd.DataFrame, role: str) -> pd.Series:
    """The pass values of the tested rows of ``role`` (True/False, indexed like ``checks``):
    for claims and corrections, those that fail or pass with power."""
    values = checks.loc[checks["role"] == role, "pass"].astype(str).str.lower()
    bad = set(values) - {"true", "false", "na"}
    if bad:
        raise ValueError(f"pass must be true, false or NA, got {sorted(bad)}")
    values = values[values != "na"]
    if role in ("claim", "correction"):
        values = values[[_power(checks, i) == "true" or v == "false" for i, v in values.items()]]
    return values == "true"


def _power(checks: pd.DataFrame, index: object) -> str:
    """The pass value (true/false/na) of the power row of row ``index``; na if it has none."""
    name = str(checks.loc[index, "criterion"]) + POWER
    found = checks.loc[checks["criterion"].astype(str) == name, "pass"].astype(str).str.lower()
    return found.iloc[0] if not found.empty else "na"


def unpowered(checks: pd.DataFrame) -> dict[str, list[str]]:
    """The claims and corrections that pass but are not counted as tested, by reason:
    ``no power`` (the check passes the wrong prediction too) and ``power not measured`` (the
    power row has no pass value).

    Parameters
    ----------
    checks : pandas.DataFrame
        A checks table (:func:`checks_frame`, :func:`read_checks`).

    Returns
    -------
    untested : dict of str to list of str
        ``{"no power": [...], "power not measured": [...]}``: the criteria of each reason.

    Examples
    --------
    >>> from metastab.studies.verdict import check, checks_frame, power, unpowered
    >>> a, b = check("a", "claim", "x", passed=True), check("b", "claim", "y", passed=True)
    >>> unpowered(checks_frame([a, power(a, "w", rejected=False),
    ...                         b, power(b, "w", rejected=None)]))
    {'no power': ['a'], 'power not measured': ['b']}
    """
    out: dict[str, list[str]] = {"no power": [], "power not measured": []}
    rows = checks[checks["role"].isin(("claim", "correction"))]
    for i, r in rows.iterrows():
        if str(r["pass"]).lower() == "true":
            p = _power(checks, i)
            if p != "true":
                out["no power" if p == "false" else "power not measured"].append(r["criterion"])
    return out


def verdict(checks: pd.DataFrame) -> str:
    """The verdict of a checks table: ``holds``, ``holds with a correction``, ``fails`` or
    ``not tested`` (the rule is in the module docstring).

    Parameters
    ----------
    checks : pandas.DataFrame
        A checks table (:func:`checks_frame`, :func:`read_checks`).

    Returns
    -------
    verdict : str
        One of :data:`VERDICTS`.

    Raises
    ------
    ValueError
        For a role outside :data:`ROLES`, or a pass value other than true, false or NA.

    Examples
    --------
    >>> from metastab.studies.verdict import check, checks_frame, power, verdict
    >>> def claim(name, role, passed, rejected=True):  # a row and its power row
    ...     row = check(name, role, "statement", passed=passed)
    ...     return [row, power(row, "a wrong one", rejected=rejected)]
    >>> law, rate, fixed = claim("law", "claim", True), claim("rate", "claim", False), claim(
    ...     "rate/fixed", "correction", True)
    >>> verdict(checks_frame(law)), verdict(checks_frame(law + rate + fixed))
    ('holds', 'holds with a correction')
    >>> verdict(checks_frame(rate)), verdict(checks_frame([check("c", "context", "z")]))
    ('fails', 'not tested')
    >>> verdict(checks_frame(claim("law", "claim", True, rejected=False)))  # no power
    'not tested'
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
    failing claims and the corrections that carry a ``holds with a correction``.

    Parameters
    ----------
    checks : pandas.DataFrame
        A checks table (:func:`checks_frame`, :func:`read_checks`).

    Returns
    -------
    line : str
        ``Verdict: VERDICT (COUNTS).``

    Examples
    --------
    >>> from metastab.studies.verdict import check, checks_frame, power, verdict_line
    >>> law = check("law", "claim", "T is geometric", passed=False)
    >>> fix = check("law/tail", "correction", "T is geometric after a burn-in", passed=True)
    >>> rows = [law, power(law, "w", rejected=True), fix, power(fix, "w", rejected=True)]
    >>> print(verdict_line(checks_frame(rows)))  # doctest: +NORMALIZE_WHITESPACE
    Verdict: holds with a correction (0 of 1 tested claims pass; failing: `law`;
    1 of 1 corrections pass).
    """
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
    for reason, names in unpowered(checks).items():
        if names:
            parts.append(f"not tested: {reason}: " + ", ".join(f"`{c}`" for c in names))
    return f"Verdict: {v} ({'; '.join(parts)})."


def write_checks(checks: pd.DataFrame, out: Path, meta: dict) -> Path:
    """Write ``out/checks.csv`` with its provenance sidecar.

    Parameters
    ----------
    checks : pandas.DataFrame
        The checks table (:func:`checks_frame`).
    out : Path
        The study's output folder (created if missing).
    meta : dict
        The sidecar: the provenance, and the configuration under ``"config"``
        (:func:`checks_config` reads it back).

    Returns
    -------
    path : Path
        ``out/checks.csv``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from metastab.studies.verdict import (check, checks_config, checks_frame, power,
    ...                                       read_checks, write_checks)
    >>> claim = check("law", "claim", "T is geometric", passed=True)
    >>> table = checks_frame([claim, power(claim, "T is constant", rejected=True)])
    >>> with tempfile.TemporaryDirectory() as out:
    ...     path = write_checks(table, Path(out), {"config": {"level": 0.05}})
    ...     path.name, len(read_checks(path)), checks_config(out)
    ('checks.csv', 2, {'level': 0.05})
    """
    from ..results import write_table

    return write_table(checks[list(COLUMNS)], Path(out) / "checks.csv", meta)


def checks_config(out: str | os.PathLike[str]) -> dict:
    """The configuration recorded with ``out/checks.csv``: the one the checks were computed
    with, thresholds and wording rules included (the tables' own sidecars keep the configuration
    of the run, which may predate a threshold's key).

    Parameters
    ----------
    out : str or os.PathLike
        The study's output folder.

    Returns
    -------
    config : dict
        The ``"config"`` entry of the checks table's sidecar.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from metastab.studies.verdict import check, checks_config, checks_frame, write_checks
    >>> table = checks_frame([check("n", "context", "chains run")])
    >>> with tempfile.TemporaryDirectory() as out:
    ...     _ = write_checks(table, Path(out), {"config": {"chains": 8}})
    ...     checks_config(out)
    {'chains': 8}
    """
    from ..results import read_table

    return read_table(Path(out) / "checks.csv")[1]["config"]
