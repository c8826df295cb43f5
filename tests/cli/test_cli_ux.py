"""The command line's messages: one name per statistic, hints in the command's terms, one line
on Ctrl-C, no folder created for a mistyped --out."""

from __future__ import annotations

import io

import pytest
from cli_calls import run

from metastab.cli import command
from metastab.exceptions import ResolutionWarning

PASSAGE = ("passage", "--beta", "1", "2", "--chains", "20", "--max-steps", "2000", "--seed", "1")


def test_out_in_a_missing_folder_is_refused_unless_asked(capsys, tmp_path):
    path = tmp_path / "no" / "such" / "x.csv"
    code, out, err = run(capsys, *PASSAGE, "--out", str(path))
    assert code == 2 and err.count("\n") == 1
    assert f"cannot write {str(path)!r}: no folder {str(path.parent)!r}" in err
    assert "--mkdir" in err
    assert not (tmp_path / "no").exists() and out == ""
    code, out, err = run(capsys, *PASSAGE, "--out", str(path), "--mkdir")
    assert code == 0 and path.is_file() and path.with_name("x.csv.json").is_file()


def test_mkdir_is_documented(capsys):
    code, out, _ = run(capsys, "passage", "--help")
    assert code == 0 and "--mkdir" in out


def test_passage_and_fit_name_their_medians_apart(capsys, tmp_path):
    path = tmp_path / "p.csv"
    code, out, _ = run(capsys, *PASSAGE, "--out", str(path))
    assert code == 0 and "sample_median_T" in out and " median_T " not in out
    code, out, _ = run(capsys, "fit", str(path), "--figure", "none", "--resamples", "19")
    assert code == 0 and "the median columns of --out are the law's" in out


def test_warnings_name_the_remedy_in_the_command_terms(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(command.sys, "stderr", err)
    message = ResolutionWarning(f"chains stay frozen. Use {ResolutionWarning.REMEDY}")
    command._warn(message, ResolutionWarning, "x.py", 1, shown=set())
    command._warn(UserWarning("first_passage(...) elsewhere"), UserWarning, "x.py", 1, shown=set())
    first, second = err.getvalue().splitlines()
    assert first == "metastab: warning: chains stay frozen. Use --mode accelerated"
    assert second == "metastab: warning: first_passage(...) elsewhere"  # control: other text


def test_ctrl_c_says_interrupted_once(capsys, tmp_path, monkeypatch):
    import metastab.engine

    real, calls = metastab.engine.first_passage, []

    def interrupted_at_the_second_beta(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(metastab.engine, "first_passage", interrupted_at_the_second_beta)
    path = tmp_path / "p.csv"
    code, out, err = run(capsys, *PASSAGE, "--out", str(path))
    assert code == 130 and err.count("metastab: interrupted") == 1
    assert (
        len(err.strip().splitlines()) == 1
        and f"wrote the 1 finished of 2 runs to {path}" in err
        and path.is_file()
    )


def test_ctrl_c_with_nothing_written_is_one_bare_line(capsys, monkeypatch):
    import metastab.engine

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(metastab.engine, "first_passage", interrupted)
    code, _, err = run(capsys, *PASSAGE)
    assert code == 130 and err.strip() == "metastab: interrupted"


@pytest.mark.parametrize("flag", ["--out", "--observables"])
def test_track_outputs_follow_the_same_rule(capsys, tmp_path, flag):
    path = tmp_path / "missing" / "t.csv"
    code, _, err = run(capsys, "track", "--beta", "2", "--steps", "5", flag, str(path))
    assert code == 2 and "no folder" in err and not path.parent.exists()
