"""The README's Python examples run, and every number in the comment of a ``print`` line is what
that line prints (a number ending in ``...`` is a prefix of the printed one), so a stale README
number fails here."""

import re
import sys
from pathlib import Path

import matplotlib
import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?:\.\.\.)?")


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def numbers(text):
    return NUMBER.findall(text)


def matches(expected, printed):
    if len(expected) != len(printed):
        return False
    return all(
        p.startswith(e[:-3]) if e.endswith("...") else p == e for e, p in zip(expected, printed)
    )


def test_matches_reads_prefixes_and_rejects_stale_numbers():
    """Negative control of the comparison itself."""
    assert matches(numbers("396.72..."), numbers("mean escape time 396.7233"))
    assert not matches(numbers("396.72..."), numbers("mean escape time 401.5"))
    assert not matches(numbers("300 escapes, 0 censored"), numbers("300 escapes, 1 censored"))


@pytest.mark.slow
def test_readme_python_examples_print_what_their_comments_say(tmp_path, monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    printed = {}

    def record(*args, **kwargs):
        printed[(sys._getframe(1).f_code.co_filename, sys._getframe(1).f_lineno)] = " ".join(
            map(str, args)
        )

    namespace = {"print": record}
    checked = 0
    for b, block in enumerate(python_blocks(README.read_text())):
        name = f"README block {b}"
        exec(compile(block, name, "exec"), namespace)
        for k, line in enumerate(block.splitlines(), start=1):
            code, _, comment = line.partition("#")
            if not code.lstrip().startswith("print(") or not numbers(comment):
                continue
            out = printed[(name, k)]
            assert matches(numbers(comment), numbers(out)), (line, out)
            checked += 1
    assert checked >= 4
