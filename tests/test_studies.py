"""Every study of studies/ runs in its quick form, end to end, so that none of them rots."""

import json
import re
from pathlib import Path

import pytest

from metastab.cli import main
from metastab.studies import list_studies, load_config, run_study

STUDIES = list_studies()
DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("name", STUDIES)
def test_quick_study_writes_data_figures_and_a_verdict(name, tmp_path):
    report = run_study(name, quick=True, out=tmp_path, log=lambda *a: None)
    text = report.read_text()
    assert re.search(r"^Verdict: (holds|fails|holds with a correction)", text, re.MULTILINE), text
    assert list(tmp_path.glob("*.png")), "a study draws at least one figure"
    tables = [p for p in tmp_path.iterdir() if p.suffix in (".csv", ".parquet")]
    assert tables, "a study writes at least one table"
    for table in tables:
        assert table.with_name(table.name + ".json").exists(), f"{table.name} has no sidecar"
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["quick"] is True and meta["study"] == name


@pytest.mark.parametrize("name", STUDIES)
def test_every_study_has_a_quick_config_and_committed_results(name):
    assert load_config(name, quick=True) != load_config(name), "--quick must reduce the run"
    report = DATA / name / "report.md"
    assert report.exists(), f"the full run's results are committed: {report} is missing"
    assert re.search(r"^Verdict: ", report.read_text(), re.MULTILINE)


def test_unknown_study_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["study", "no-such-study"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown study 'no-such-study'" in err
