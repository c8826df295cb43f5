"""The comparators of metastab.studies.compare: a check's rule and its pass value from one
object, the power row from the same comparator, the sample a column of the checks table."""

import io
import math

import pandas as pd
import pytest

from metastab.studies import verdict as rp
from metastab.studies.compare import (
    OPS,
    PASS_IF,
    AllOf,
    Bound,
    Contains,
    Inside,
    Within,
    declare,
)
from metastab.studies.render import checks_markdown


@pytest.mark.parametrize(
    ("op", "below", "equal", "above"),
    [
        ("≤", True, True, False),
        ("<=", True, True, False),
        ("<", True, False, False),
        ("≥", False, True, True),
        (">=", False, True, True),
        (">", False, False, True),
        ("=", False, True, False),
        ("==", False, True, False),
    ],
)
def test_the_operator_written_in_the_rule_is_the_one_tested(op, below, equal, above):
    # the rule names op, and the pass value is op applied to the numbers: 0.5, 1 and 2 against 1
    for value, expected in ((0.5, below), (1.0, equal), (2.0, above)):
        b = Bound("x", value, op, 1.0)
        assert b.rule == f"x {op} 1" and b.passed is expected
    assert set(OPS) == {"≤", "<=", "<", "≥", ">=", ">", "=", "=="}


def test_a_bound_writes_its_words_around_the_operator_and_keeps_the_row_numbers():
    b = Bound(
        "lower end of the interval",
        1.41,
        ">",
        1.5,
        than="b_thm",
        tail=" (declared)",
        measured=1.49,
        low=1.41,
        high=1.58,
    )
    assert b.rule == "lower end of the interval > b_thm (declared)" and b.passed is False
    assert b.numbers() == {"measured": 1.49, "low": 1.41, "high": 1.58, "threshold": 1.5}
    assert Bound("p", 0.3, "≥", 0.01, than="threshold", template=PASS_IF).rule == (
        "p; pass if ≥ threshold"
    )
    # a nan compares false, as the hand-written comparisons did
    assert Bound("x", math.nan, "≤", 1.0).passed is False
    row = Bound("x", 2.0, "≤", 1.0, testable=False).row("law", "claim", "s")
    assert row["pass"] == "NA"


def test_an_unknown_operator_is_refused_with_its_value():
    with pytest.raises(ValueError, match="op must be one of .*got '≈'"):
        Bound("x", 1.0, "≈", 1.0)
    with pytest.raises(ValueError, match="at least one part"):
        AllOf(())


def test_within_inside_and_contains():
    assert Within("b", 1.49, 1.5, 0.05).passed and not Within("b", 1.49, 1.35, 0.05).passed
    assert Within("b", 1.49, 1.5, 0.05).numbers()["threshold"] == 0.05
    inside = Inside("slope", 4.02, 3.5, 4.5, interval=(3.9, 4.1), threshold=4)
    assert inside.rule == "slope in [3.5, 4.5]" and inside.passed
    assert inside.numbers() == {"measured": 4.02, "low": 3.9, "high": 4.1, "threshold": 4.0}
    assert not Inside("slope", 4.6, 3.5, 4.5).passed
    c = Contains("the 95 % interval", 1.49, 1.40, 1.58, 1.5, than="Δ")
    assert c.rule == "the 95 % interval contains Δ" and c.passed
    assert not Contains("the 95 % interval", 1.49, 1.40, 1.58, 1.6).passed
    # a strict tolerance: at the tolerance it fails, and says so
    strict = Within("b", 1.55, 1.5, 0.05, op="<")
    assert strict.rule == "abs(b − 1.5) < 0.05" and strict.passed is (abs(1.55 - 1.5) < 0.05)
    assert Within("b", 1.52, 1.5, 0.05, op="<").passed
    with pytest.raises(ValueError, match="op must be '≤' or '<', got '>'"):
        Within("b", 1.0, 1.0, 0.1, op=">")


def test_all_of_passes_only_if_every_part_does():
    parts = (Bound("runs that grow", 0, "=", 0), Bound("largest rate", 0.4, "<", 1))
    both = AllOf(parts, sep=" and ", of=1)
    assert both.rule == "runs that grow = 0 and largest rate < 1" and both.passed
    assert both.numbers()["measured"] == 0.4  # the numbers of part ``of``
    assert not AllOf((parts[0], Bound("largest rate", 1.2, "<", 1))).passed


def test_declare_builds_the_claim_and_its_power_row_from_one_comparator():
    def rate(b):
        return Within("b", 1.49, b, 0.05)

    claim, wrong = declare(
        rate,
        1.5,
        1.35,
        "b 10 % low",
        criterion="rate",
        role="claim",
        statement="b = 1.5",
        source="[FW]",
        sample="all runs",
    )
    assert (claim["criterion"], claim["pass"], claim["rule"]) == ("rate", "true", rate(1.5).rule)
    assert (wrong["criterion"], wrong["role"], wrong["pass"]) == ("rate/power", "power", "true")
    assert wrong["rule"] == "abs(b − 1.35) ≤ 0.05" and wrong["sample"] == "all runs"
    assert wrong["statement"] == "wrong prediction: b 10 % low" and wrong["source"] == "[FW]"
    # negative control: a wrong prediction the check cannot reject leaves the claim untested
    rows = declare(rate, 1.5, 1.51, "b 1 % high", criterion="rate", role="claim", statement="s")
    assert rows[1]["pass"] == "false"
    assert rp.verdict(rp.checks_frame(rows)) == "not tested"
    # a context row carries the rule and numbers but never a pass value
    assert Bound("x", 0.0, "≤", 1.0).row("seen", "context", "s")["pass"] == "NA"


def test_the_sample_is_a_column_written_at_the_end_of_the_report_s_rule():
    claim = Bound("KS p", 0.3, "≥", 0.01).row("law", "claim", "s", sample="direct stepping")
    frame = rp.checks_frame([claim, rp.power(claim, "w", rejected=True)])
    assert list(frame["sample"]) == ["direct stepping", "direct stepping"]
    table = checks_markdown(frame)
    assert "| KS p ≥ 0.01; sample: direct stepping |" in table
    plain = rp.checks_frame([rp.check("n", "context", "chains", rule="count")])
    assert "| count |" in checks_markdown(plain)
    # a table written before the column reads with no sample declared
    old = frame.drop(columns="sample").to_csv(index=False)
    back = rp.read_checks(io.StringIO(old))
    assert list(back.columns) == list(rp.COLUMNS) and list(back["sample"]) == ["", ""]
    text = frame.to_csv(index=False)
    assert list(rp.read_checks(io.StringIO(text))["sample"]) == list(frame["sample"])
    assert isinstance(back, pd.DataFrame)
