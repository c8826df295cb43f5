"""The documentation's own tools, without building the site: the study pages
(``docs/_ext/study_pages.py``: verdict first, figures embedded, checks folded, each study's
statement with its numbered equations) and the site check (``docs/_ext/check_site.py``, run by
CI on the built HTML), each with a negative control;
and the landing page's example prints what its output block says."""

import doctest
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import check_site  # noqa: E402
import study_pages  # noqa: E402


@pytest.mark.parametrize("module", [study_pages, check_site], ids=lambda m: m.__name__)
def test_doctests(module):
    failed, tried = doctest.testmod(module)
    assert tried > 0 and failed == 0


@pytest.mark.parametrize(
    "report", sorted((ROOT / "data").glob("*/report.md")), ids=lambda p: p.parent.name
)
def test_every_committed_report_makes_a_page_with_its_verdict_first_and_every_figure(report):
    pngs = sorted(p.name for p in report.parent.glob("*.png"))
    page = study_pages.study_page(report.read_text(encoding="utf-8"), pngs)
    verdict = re.search(r"^Verdict: (.*?)(?: \(|$)", report.read_text(encoding="utf-8"), re.M)
    lines = page.splitlines()
    assert (
        lines[0].startswith("# ") and lines[2] == f"```{{admonition}} Verdict: {verdict.group(1)}"
    )
    for png in pngs:
        assert f"```{{figure}} {png}\n" in page
    assert "docs: models" not in page


REPORTS = sorted((ROOT / "data").glob("*/report.md"))
STATEMENTS = study_pages.statements((ROOT / "docs" / "user" / "models.md").read_text("utf-8"))


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.parent.name)
def test_every_study_page_shows_its_statement_with_a_numbered_equation(report):
    name = report.parent.name
    assert STATEMENTS.get(name), f"no statement with a labelled equation names study {name}"
    pngs = sorted(p.name for p in report.parent.glob("*.png"))
    page = study_pages.study_page(
        report.read_text(encoding="utf-8"), pngs, statement=STATEMENTS[name]
    )
    box = page.split(":::{admonition} Statement: ", 1)
    assert len(box) == 2 and all(f"{{eq}}`{label}`" in box[1] for _, _, label in STATEMENTS[name])


def test_a_statement_without_a_labelled_equation_gives_no_box():
    # negative control: an unlabelled display equation is not shown, so no study gets a box
    page = "(s)=\n**Law** ([FW] §5).\n\n$$\nx = 1\n$$\n\n(study {ref}`s <study-s>`)\n"
    assert study_pages.statements(page) == {}
    assert study_pages.statements(page.replace("$$\n\n(", "$$ (eq-x)\n\n(")) == {
        "s": [("Law ([FW] §5)", "x = 1", "eq-x")]
    }


def test_a_report_without_its_verdict_line_is_refused():
    with pytest.raises(ValueError, match="Verdict"):
        study_pages.study_page("# A study\n\nno verdict here\n", [])


def test_the_site_check_finds_a_study_page_without_its_figure(tmp_path):
    data, build = tmp_path / "data", tmp_path / "site"
    (data / "s").mkdir(parents=True)
    (data / "s" / "report.md").write_text("# s\n")
    (data / "s" / "a.png").write_bytes(b"")
    page = build / "studies" / "generated" / "s"
    page.mkdir(parents=True)
    (page / "report.html").write_text('<img src="../../_images/a.png">')
    assert check_site.study_problems(build, data) == []
    (page / "report.html").write_text("<p>no figure</p>")  # negative control
    assert check_site.study_problems(build, data) == ["studies/s: figure a.png not shown"]


@pytest.mark.slow
def test_the_landing_page_example_prints_its_output_block(capsys):
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    expected = re.search(r"```text\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "docs/index.md", "exec"), {})
    assert capsys.readouterr().out == expected
