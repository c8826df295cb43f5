"""Comparators: a check's rule text and its pass test from one object.

A check of a study compares a measured number with what a statement predicts. Written by hand,
the comparison appears twice: once in words (the checks table's ``rule``) and once in code (its
``pass``), and nothing keeps the two together. A comparator holds the numbers and the comparison
once; its :attr:`~Comparator.rule` writes the operator it tests with, and its
:attr:`~Comparator.passed` applies that operator:

- :class:`Bound`: ``value OP threshold`` for OP in ≤ < ≥ > = (also ``<=``, ``>=``, ``==``), the
  form of most checks (a largest deviation at most a tolerance, a lower interval end above a
  prediction, a p-value at least a level, a count equal to 0);
- :class:`Within`: ``abs(value − target) ≤ tol``;
- :class:`Inside`: ``low ≤ value ≤ high`` (a number in a range);
- :class:`Contains`: ``low ≤ target ≤ high`` (an interval containing a prediction);
- :class:`AllOf`: every one of several comparators (their rules joined).

:meth:`Comparator.row` is the checks-table row (:func:`metastab.studies.verdict.check`) and
:func:`declare` a claim or correction row with its power row, the same comparator built for the
declared wrong prediction (:func:`metastab.studies.verdict.powered`), in one call. The sample a
check rests on (which runs or which engine) is the row's ``sample`` column, not words of its rule.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .verdict import check, powered

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "Comparator",
    "Bound",
    "Within",
    "Inside",
    "Contains",
    "AllOf",
    "declare",
    "OPS",
    "PASS_IF",
    "PASS_IF_EQUAL",
]

# the spellings of a comparison in a rule and the test each one applies
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "≤": operator.le,
    "<=": operator.le,
    "<": operator.lt,
    "≥": operator.ge,
    ">=": operator.ge,
    ">": operator.gt,
    "=": operator.eq,
    "==": operator.eq,
}

# the rule's form "QUANTITY; pass if OP THRESHOLD" (the default form is "QUANTITY OP THRESHOLD")
PASS_IF = "{what}; pass if {op} {than}{tail}"
# "QUANTITY; pass if THRESHOLD", for op "=" (a count that must be 0)
PASS_IF_EQUAL = "{what}; pass if {than}{tail}"


def _number(x: float | None) -> float:
    return math.nan if x is None else float(x)


class Comparator:
    """A comparison of measured numbers: its rule in words (:attr:`rule`), its test
    (:attr:`passed`) and the numbers of its checks-table row (:meth:`numbers`).

    Subclasses set ``what`` (the compared quantity in words), ``tail`` (words after the
    comparison) and ``template``, whose ``{what}``, ``{op}``, ``{than}`` and ``{tail}`` the rule
    fills in.

    Examples
    --------
    >>> from metastab.studies.compare import Bound, Comparator
    >>> fewest = Bound("fewest exits at one β", 12, "≥", 10, than="threshold (`min_escapes`)")
    >>> isinstance(fewest, Comparator), fewest.rule, fewest.passed
    (True, 'fewest exits at one β ≥ threshold (`min_escapes`)', True)
    """

    what: str
    tail: str
    template: str
    testable: bool = True  # False: the row's pass is NA (nothing here to compare)

    @property
    def passed(self) -> bool:
        """Whether the comparison holds (a nan compares false, as in Python)."""
        raise NotImplementedError

    def _words(self) -> dict[str, str]:
        raise NotImplementedError

    @property
    def rule(self) -> str:
        """The comparison in words."""
        return self.template.format(what=self.what, tail=self.tail, **self._words())

    def numbers(self) -> dict[str, float]:
        """The row's ``measured``, ``low``, ``high`` and ``threshold``."""
        raise NotImplementedError

    def row(
        self, criterion: str, role: str, statement: str, *, source: str = "", sample: str = ""
    ) -> dict:
        """The checks-table row of this comparison (:func:`metastab.studies.verdict.check`);
        a ``context`` row carries its rule and numbers but no pass value.

        Parameters
        ----------
        criterion, role, statement, source : str
            As for :func:`metastab.studies.verdict.check`.
        sample : str
            The sample the check rests on (empty where not declared).

        Returns
        -------
        row : dict
            The row, keyed by :data:`metastab.studies.verdict.COLUMNS`.

        Examples
        --------
        >>> from metastab.studies.compare import Bound
        >>> row = Bound("largest error", 0.02, "≤", 0.05).row("error", "control", "exact")
        >>> row["rule"], row["pass"], row["threshold"]
        ('largest error ≤ 0.05', 'true', 0.05)
        """
        return check(
            criterion,
            role,
            statement,
            rule=self.rule,
            passed=None if role == "context" or not self.testable else self.passed,
            source=source,
            sample=sample,
            **self.numbers(),
        )


@dataclass(frozen=True)
class Bound(Comparator):
    """``value OP threshold``: the rule ``{what} {op} {than}{tail}`` (``template`` may place
    them otherwise, e.g. ``"{what}; pass if {op} {than}"``).

    Parameters
    ----------
    what : str
        The compared quantity, in words.
    value : float
        Its measured value (the row's ``measured`` unless ``measured`` is given).
    op : str
        The comparison, a key of :data:`OPS`.
    threshold : float
        What ``value`` is compared with (the row's ``threshold``).
    than : str, optional
        The threshold in words (default: the number, ``:g``).
    tail : str
        Words after the comparison.
    measured, low, high : float, optional
        The row's numbers where they are not ``value`` (e.g. a fit's estimate and its interval,
        when ``value`` is the interval's lower end).
    shown_threshold : float, optional
        The row's ``threshold`` where it is not ``threshold`` (nan: the row shows none, e.g.
        when ``value`` counts the failures of a per-item test and ``measured`` is a size).
    template : str
        The rule's form.
    testable : bool
        False where there is nothing to compare here (the row's pass is then NA).

    Examples
    --------
    >>> from metastab.studies.compare import Bound
    >>> b = Bound("lower end of the interval", 1.41, ">", 1.5, than="b_thm", measured=1.49)
    >>> b.rule, b.passed, b.numbers()["measured"]
    ('lower end of the interval > b_thm', False, 1.49)
    >>> Bound("p", 0.3, "≥", 0.01, template="{what}; pass if {op} {than}").rule
    'p; pass if ≥ 0.01'
    """

    what: str
    value: float
    op: str
    threshold: float
    than: str | None = None
    tail: str = ""
    measured: float | None = None
    low: float | None = None
    high: float | None = None
    shown_threshold: float | None = None
    template: str = "{what} {op} {than}{tail}"
    testable: bool = True

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"op must be one of {sorted(OPS)}, got {self.op!r}")

    @property
    def passed(self) -> bool:
        return bool(OPS[self.op](self.value, self.threshold))

    def _words(self) -> dict[str, str]:
        than = self.than if self.than is not None else f"{self.threshold:g}"
        return {"op": self.op, "than": than}

    def numbers(self) -> dict[str, float]:
        return {
            "measured": float(self.value if self.measured is None else self.measured),
            "low": _number(self.low),
            "high": _number(self.high),
            "threshold": float(
                self.threshold if self.shown_threshold is None else self.shown_threshold
            ),
        }


@dataclass(frozen=True)
class Within(Comparator):
    """``abs(value − target) ≤ tol`` (or ``<``): the rule ``abs({what} − {target}) ≤
    {than}{tail}``.

    Parameters
    ----------
    what : str
        The compared quantity, in words.
    value, target, tol : float
        The measured value (the row's ``measured``), the prediction and the tolerance (the
        row's ``threshold``).
    than : str, optional
        The tolerance in words (default: the number, ``:g``).
    tail : str
        Words after the comparison.
    low, high : float, optional
        The row's interval (e.g. that of ``value``; default none).
    template : str
        The rule's form (``{target}`` is the prediction, ``:g``; ``{op}`` the comparison).
    testable : bool
        False where there is nothing to compare here (the row's pass is then NA).
    op : {"≤", "<"}
        The comparison of the distance with the tolerance.

    Examples
    --------
    >>> from metastab.studies.compare import Within
    >>> w = Within("b", 1.49, 1.5, 0.05)
    >>> w.rule, w.passed, Within("b", 1.49, 1.35, 0.05).passed
    ('abs(b − 1.5) ≤ 0.05', True, False)
    >>> Within("b", 1.49, 1.5, 0.05, template="{what}; pass if |b − {target}| ≤ {than}").rule
    'b; pass if |b − 1.5| ≤ 0.05'
    """

    what: str
    value: float
    target: float
    tol: float
    than: str | None = None
    tail: str = ""
    low: float | None = None
    high: float | None = None
    template: str = "abs({what} − {target}) {op} {than}{tail}"
    testable: bool = True
    op: str = "≤"

    def __post_init__(self) -> None:
        if self.op not in ("≤", "<"):
            raise ValueError(f"op must be '≤' or '<', got {self.op!r}")

    @property
    def passed(self) -> bool:
        return bool(OPS[self.op](abs(self.value - self.target), self.tol))

    def _words(self) -> dict[str, str]:
        than = self.than if self.than is not None else f"{self.tol:g}"
        return {"target": f"{self.target:g}", "than": than, "op": self.op}

    def numbers(self) -> dict[str, float]:
        return {
            "measured": float(self.value),
            "low": _number(self.low),
            "high": _number(self.high),
            "threshold": float(self.tol),
        }


@dataclass(frozen=True)
class Inside(Comparator):
    """``low ≤ value ≤ high`` (``low < value < high`` if ``strict``): the rule
    ``{what} in [{low}, {high}]{tail}`` (``({low}, {high})`` if ``strict``).

    Parameters
    ----------
    what : str
        The compared quantity, in words.
    value : float
        Its measured value (the row's ``measured``).
    low, high : float
        The accepted range (the row's ``threshold`` is ``threshold`` if given, else nan).
    tail : str
        Words after the comparison.
    interval : tuple of float, optional
        The row's ``low`` and ``high`` where they are not the range (e.g. the spread of
        ``value``); default: the range.
    threshold : float, optional
        The row's ``threshold``.
    template : str
        The rule's form (``{low}``, ``{high}``: the range, formatted with ``spec``; ``{open}``,
        ``{close}``: its brackets).
    strict : bool
        Whether the range's ends are excluded.
    spec : str
        The format of the range's ends in the rule.

    Examples
    --------
    >>> from metastab.studies.compare import Inside
    >>> i = Inside("slope", 4.02, 3.5, 4.5)
    >>> i.rule, i.passed
    ('slope in [3.5, 4.5]', True)
    >>> j = Inside("share", 0.999, 0.9, 0.999, strict=True)
    >>> j.rule, j.passed
    ('share in (0.9, 0.999)', False)
    """

    what: str
    value: float
    low: float
    high: float
    tail: str = ""
    interval: tuple[float, float] | None = None
    threshold: float | None = None
    template: str = "{what} in {open}{low}, {high}{close}{tail}"
    strict: bool = False
    spec: str = "g"

    @property
    def passed(self) -> bool:
        if self.strict:
            return bool(self.low < self.value < self.high)
        return bool(self.low <= self.value <= self.high)

    def _words(self) -> dict[str, str]:
        return {
            "low": format(self.low, self.spec),
            "high": format(self.high, self.spec),
            "open": "(" if self.strict else "[",
            "close": ")" if self.strict else "]",
        }

    def numbers(self) -> dict[str, float]:
        low, high = self.interval if self.interval is not None else (self.low, self.high)
        return {
            "measured": float(self.value),
            "low": float(low),
            "high": float(high),
            "threshold": _number(self.threshold),
        }


@dataclass(frozen=True)
class Contains(Comparator):
    """``low ≤ target ≤ high``: an interval containing a prediction, the rule
    ``{what} contains {than}{tail}``.

    Parameters
    ----------
    what : str
        The interval, in words.
    measured : float
        The estimate the interval belongs to (the row's ``measured``).
    low, high : float
        The interval (the row's ``low`` and ``high``).
    target : float
        The prediction (the row's ``threshold``).
    than : str, optional
        The prediction in words (default: the number, ``:g``).
    tail : str
        Words after the comparison.
    template : str
        The rule's form.

    Examples
    --------
    >>> from metastab.studies.compare import Contains
    >>> c = Contains("the 95 % interval", 1.49, 1.40, 1.58, 1.5, than="Δ")
    >>> c.rule, c.passed, Contains("the 95 % interval", 1.49, 1.40, 1.58, 1.35).passed
    ('the 95 % interval contains Δ', True, False)
    """

    what: str
    measured: float
    low: float
    high: float
    target: float
    than: str | None = None
    tail: str = ""
    template: str = "{what} contains {than}{tail}"

    @property
    def passed(self) -> bool:
        return bool(self.low <= self.target <= self.high)

    def _words(self) -> dict[str, str]:
        return {"than": self.than if self.than is not None else f"{self.target:g}"}

    def numbers(self) -> dict[str, float]:
        return {
            "measured": float(self.measured),
            "low": float(self.low),
            "high": float(self.high),
            "threshold": float(self.target),
        }


@dataclass(frozen=True)
class AllOf(Comparator):
    """Every one of ``parts``: the rules joined by ``sep`` (then ``tail``), the row's numbers
    those of the part ``of``.

    Parameters
    ----------
    parts : tuple of Comparator
        The comparisons, all of which must hold.
    sep : str
        What joins their rules.
    tail : str
        Words after the last one.
    of : int
        The part whose numbers the row carries.
    testable : bool
        False where there is nothing to compare here (the row's pass is then NA).

    Examples
    --------
    >>> from metastab.studies.compare import AllOf, Bound
    >>> both = AllOf((Bound("runs that grow", 0, "=", 0), Bound("largest rate", 0.4, "<", 1)),
    ...              sep=" and ")
    >>> both.rule, both.passed
    ('runs that grow = 0 and largest rate < 1', True)
    """

    parts: tuple[Comparator, ...]
    sep: str = "; "
    tail: str = ""
    of: int = 0
    testable: bool = True
    what: str = field(default="", init=False)
    template: str = field(default="{joined}{tail}", init=False)

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("AllOf needs at least one part, got none")

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.parts)

    def _words(self) -> dict[str, str]:
        return {"joined": self.sep.join(p.rule for p in self.parts)}

    def numbers(self) -> dict[str, float]:
        return self.parts[self.of].numbers()


def declare(
    compare: Callable[[Any], Comparator],
    prediction: Any,
    wrong: Any,
    what: str,
    *,
    criterion: str,
    role: str,
    statement: str,
    source: str = "",
    sample: str = "",
) -> list[dict]:
    """A claim or correction row and its power row from one comparator: ``compare(prediction)``
    is the check of the statement, ``compare(wrong)`` the same check of the wrong prediction
    declared in the config (described by ``what``), which the power row passes when it fails.

    Parameters
    ----------
    compare : callable
        ``compare(prediction) -> Comparator``.
    prediction, wrong : object
        The statement's prediction and the declared wrong one.
    what : str
        The wrong prediction, in words.
    criterion, role, statement, source : str
        The claim's (or correction's) row, as for :func:`metastab.studies.verdict.check`.
    sample : str
        The sample the check rests on (its power row rests on the same).

    Returns
    -------
    rows : list of dict
        The row of ``prediction`` and its power row.

    Examples
    --------
    >>> from metastab.studies.compare import Within, declare
    >>> rows = declare(lambda b: Within("b", 1.49, b, 0.05), 1.5, 1.35, "b 10 % low",
    ...                criterion="rate", role="claim", statement="b = 1.5", sample="all runs")
    >>> [(r["criterion"], r["pass"], r["rule"], r["sample"]) for r in rows]
    [('rate', 'true', 'abs(b − 1.5) ≤ 0.05', 'all runs'), ('rate/power', 'true', 'abs(b − 1.35) ≤ 0.05', 'all runs')]
    """  # noqa: E501
    return powered(
        lambda p: compare(p).row(criterion, role, statement, source=source, sample=sample),
        prediction,
        wrong,
        what,
    )
