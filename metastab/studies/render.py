"""The markdown and number formatting of the studies' reports: tables, numbers, intervals.

Pure functions of frames and numbers (no files, no simulation): :func:`md_table` and
:func:`checks_markdown` write markdown tables, :func:`fmt`, :func:`fmt_p` and :func:`ci` numbers
and intervals for prose.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "checks_markdown",
    "md_table",
    "md_cell",
    "fmt",
    "fmt_p",
    "ci",
    "wider",
    "position",
    "spread",
]


def checks_markdown(checks: pd.DataFrame) -> str:
    """The checks table as markdown, one row per criterion (a declared sample written at the
    end of the rule: "; sample: ...")."""
    head = [
        "| criterion | role | statement | measured | interval | threshold | rule | pass | source |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    body = []
    for _, r in checks.iterrows():
        interval = (
            ci(r["low"], r["high"], 5) if not (pd.isna(r["low"]) and pd.isna(r["high"])) else "–"
        )
        body.append(
            "| "
            + " | ".join(
                md_cell(str(v))
                for v in (
                    f"`{r['criterion']}`",
                    r["role"],
                    r["statement"],
                    fmt(r["measured"], 5),
                    interval,
                    fmt(r["threshold"], 5),
                    _rule(r),
                    str(r["pass"]),
                    r["source"],
                )
            )
            + " |"
        )
    return "\n".join(head + body)


def _rule(row: pd.Series) -> str:
    # the report's table has no sample column: the sample, where declared, ends the rule
    sample = row.get("sample", "")
    return f"{row['rule']}; sample: {sample}" if isinstance(sample, str) and sample else row["rule"]


def md_cell(text: str) -> str:
    """Text for a markdown table cell: a literal '|' would end the cell."""
    return text.replace("|", "\\|")


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for prose: ``digits`` significant digits, scientific notation outside
    [1e-3, 1e5), '–' for a missing value.

    >>> fmt(1.23456), fmt(2.5e-7), fmt(float("nan")), fmt(3)
    ('1.23', '2.50e-07', '–', '3')
    """
    if x is None or (isinstance(x, (float, np.floating)) and math.isnan(x)):
        return "–"
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def fmt_p(p: float, resamples: int | None = None) -> str:
    """A p-value; a resampling p at its floor 1/(resamples + 1) is written '≤ floor'.

    >>> fmt_p(0.002, 499), fmt_p(0.31, 499), fmt_p(0.004)
    ('≤ 0.002', '0.31', '0.004')
    """
    if resamples is not None and p <= 1.0 / (resamples + 1) * (1 + 1e-9):
        return f"≤ {fmt(1.0 / (resamples + 1), 2)}"
    return fmt(p, 2)


def ci(low: float, high: float, digits: int = 3) -> str:
    """An interval ``[low, high]`` for prose."""
    return f"[{fmt(low, digits)}, {fmt(high, digits)}]"


def wider(row: pd.Series | dict, a: str, b: str) -> tuple[float, float, str]:
    """The wider of two intervals ``(row[a_low], row[a_high])`` (a profile-likelihood interval)
    and ``(row[b_low], row[b_high])`` (a bootstrap one, possibly missing), and the name of the
    one chosen.

    >>> wider({"b_low": 1.0, "b_high": 2.0, "c_low": 0.5, "c_high": 3.0}, "b", "c")
    (0.5, 3.0, 'bootstrap')
    """
    wa = row[f"{a}_high"] - row[f"{a}_low"]
    wb = row[f"{b}_high"] - row[f"{b}_low"]
    if not np.isfinite(wb) or wa >= wb:
        return float(row[f"{a}_low"]), float(row[f"{a}_high"]), "profile"
    return float(row[f"{b}_low"]), float(row[f"{b}_high"]), "bootstrap"


def position(value: float, low: float, high: float) -> str:
    """Where ``value`` lies relative to the interval [low, high].

    >>> position(0.5, 1.0, 2.0), position(1.5, 1.0, 2.0)
    ('below the interval', 'inside the interval')
    """
    if value < low:
        return "below the interval"
    return "above the interval" if value > high else "inside the interval"


def md_table(frame: pd.DataFrame, columns: dict, digits: int = 3) -> str:
    """A markdown table of ``frame``'s ``columns`` (name → header); numbers through :func:`fmt`,
    strings as they are."""
    head = "| " + " | ".join(columns.values()) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = [
        "| "
        + " | ".join(
            md_cell(v) if isinstance(v, str) else fmt(v, digits) for v in (row[c] for c in columns)
        )
        + " |"
        for _, row in frame.iterrows()
    ]
    return "\n".join([head, rule, *body])


def spread(values: Iterable[float], count: int = 8) -> list:
    """At most ``count`` values of a sorted sequence, evenly spaced, first and last included.

    >>> spread(range(10), 4)
    [0, 3, 6, 9]
    """
    values = list(values)
    if len(values) <= count:
        return values
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, count)).astype(int))
    return [values[i] for i in idx]
