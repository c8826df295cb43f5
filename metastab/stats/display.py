"""How the results of :mod:`metastab.stats` show themselves: a one-line ``repr`` with the
estimates, their intervals and the counts behind them (four significant digits), and an HTML table
for notebooks."""

from __future__ import annotations

import html
from collections.abc import Sequence

__all__ = ["number", "interval", "html_table"]


def number(value: float) -> str:
    """A value to four significant digits (``inf`` and ``nan`` as such).

    >>> number(0.5475559491160559), number(float("inf")), number(12345678.0)
    ('0.5476', 'inf', '1.235e+07')
    """
    return f"{value:.4g}"


def interval(low: float, high: float) -> str:
    """``[low, high]`` to four significant digits.

    >>> interval(0.51, 0.5912345)
    '[0.51, 0.5912]'
    """
    return f"[{number(low)}, {number(high)}]"


def html_table(
    title: str, header: Sequence[str], rows: Sequence[Sequence[object]], note: str = ""
) -> str:
    """A small HTML table: ``title`` above, one row per entry of ``rows``, ``note`` below."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>"
        for row in rows
    )
    foot = f"<p>{html.escape(note)}</p>" if note else ""
    return (
        f"<div><strong>{html.escape(title)}</strong><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>{foot}</div>"
    )
