"""The Python examples of the README and of the documentation's pages run, and every number in the
comment of a ``print`` line is what that line prints (a number ending in ``...`` is a prefix of
the printed one), so a stale number fails here. Each page runs in a namespace of its own."""

import re
import sys
from pathlib import Path

import matplotlib
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?:\.\.\.)?")


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


# the documentation's pages with Python examples, in the order of its table of contents: like
# the README, they run in one namespace (a page uses what an earlier one defined)
DOCS = [
    ROOT / "docs" / f"{entry}.md"
    for entry in re.findall(r"^(user/[\w-]+)$", (ROOT / "docs" / "index.md").read_text(), re.M)
]


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
@pytest.mark.parametrize("pages", [[README], DOCS], ids=["README", "docs"])
def test_python_examples_print_what_their_comments_say(pages, tmp_path, monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    printed = {}

    def record(*args, **kwargs):
        printed[(sys._getframe(1).f_code.co_filename, sys._getframe(1).f_lineno)] = " ".join(
            map(str, args)
        )

    namespace = {"print": record}
    checked = 0
    for page in pages:
        for b, block in enumerate(python_blocks(page.read_text())):
            name = f"{page.name} block {b}"
            exec(compile(block, name, "exec"), namespace)
            for k, line in enumerate(block.splitlines(), start=1):
                code, _, comment = line.partition("#")
                if not code.lstrip().startswith("print(") or not numbers(comment):
                    continue
                out = printed[(name, k)]
                assert matches(numbers(comment), numbers(out)), (page.name, line, out)
                checked += 1
    assert checked >= 3


def _setup_commands():
    """.ci/readme_commands.py, which .ci/run uses to run the README's set-up as written."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "readme_commands", ROOT / ".ci/readme_commands.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.commands


def test_ci_runs_the_readme_set_up_commands_as_written():
    """CI reads the two set-up commands from the README (so the two cannot drift); the guide's
    install command is the README's; a set-up section of another shape is refused, not skipped."""
    commands = _setup_commands()
    found = commands(README.read_text())
    assert found["demo"].endswith("pip install -e . && .venv/bin/metastab demo")
    assert "pip install -e '.[test]'" in found["test"] and found["test"].endswith("pytest")
    guide = (ROOT / "docs" / "user" / "getting-started.md").read_text()
    assert f"```\n{found['demo']}\n```" in guide
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".ci/readme_commands.py" in ci and "\nreadme demo\n" in ci and "\nreadme test " in ci
    section = "## Set-up\n\n```\n{}\n```\n\n```\n{}\n```\n\n## Next\n"
    assert commands(section.format("a && metastab demo", "python -m pytest"))["test"] == (
        "python -m pytest"
    )
    for bad in (
        section.format("a && metastab demo", "b\npython -m pytest"),  # two lines
        section.format("a && metastab demo", "python -m unittest"),  # no pytest
        section.format("pip install -e .", "python -m pytest"),  # no demo
        section.replace("## Set-up", "## Install").format("metastab demo", "pytest"),
        section.replace("\n## Next", "\n```\nmore\n```\n\n## Next").format(
            "metastab demo", "pytest"
        ),
    ):
        with pytest.raises(ValueError):
            commands(bad)
