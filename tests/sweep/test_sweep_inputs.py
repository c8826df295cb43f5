"""What a sweep is bound to beyond its keys: the contents of the files it names, and the mode of
its chains (``[run] mode = "accelerated"``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import metastab as ms
from metastab.cli import main
from metastab.sweep import ChunkTask, Sweep, SweepWarning, read_sweep, run_sweep
from metastab.sweep import config as sweep_config
from metastab.sweep.chunks import ChunkResult, chunk_table

# three clusters of two tokens on a triangle: some chains escape within max_steps, some not
X0 = np.repeat([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]], 2, axis=0)


def tiny(run: dict | None = None, **initial) -> dict:
    """One point of four 10-chain chunks."""
    return {
        "model": {"kind": "softmax-chain", "gamma": 0.1, "beta": 6.0},
        "polytope": {"kind": "regular", "k": 3},
        "initial": initial or {"kind": "repeated-points", "multiplicities": [2, 2, 2]},
        "event": {"kind": "leave-ball", "radius": 0.3},
        "run": {"chains": 40, "chunk": 10, "max_steps": 300, "seed": 1, **(run or {})},
    }


def _toml(data: dict) -> str:
    return "".join(
        f"[{table}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
        for table, values in data.items()
    )


# --------------------------------------------------------------------------- input files


@pytest.fixture
def from_file(tmp_path):
    """A sweep whose x0 is read from a .npy file, run to completion."""
    path = tmp_path / "x0.npy"
    np.save(path, X0)
    config = tiny(kind="file", path=str(path))
    out = tmp_path / "sweep"
    run_sweep(Sweep.from_dict(config), out)
    return config, path, out


def test_an_unchanged_input_file_resumes(from_file):
    config, path, out = from_file
    manifest = json.loads((out / "manifest.json").read_text())
    digest = manifest["files"][0]
    assert digest["path"] == str(path) and digest["key"] == "[initial] path"
    assert digest["bytes"] == path.stat().st_size
    (out / "results" / "p000000-c0000000010.parquet").unlink()
    with pytest.warns(SweepWarning, match="is missing; it will be recomputed"):
        summary = run_sweep(Sweep.from_dict(config), out)
    assert (summary.chunks_run, summary.chunks_reused) == (1, 3)
    assert read_sweep(out)[1]["files"] == manifest["files"]


def test_an_edited_input_file_is_refused_on_resume(from_file, capsys):
    """Rows of two initial configurations must never mix in one dataset."""
    config, path, out = from_file
    np.save(path, 0.9 * X0)
    (out / "results" / "p000000-c0000000010.parquet").unlink()
    with pytest.raises(ValueError, match=r"file '.*x0.npy' \(\[initial\] path\) changed") as info:
        run_sweep(Sweep.from_dict(config), out)
    assert "restore it" in str(info.value) and "another --out" in str(info.value)
    with pytest.warns(SweepWarning, match="is missing; left out"):
        assert len(read_sweep(out, partial=True)[0]) == 30  # nothing was run into the directory
    # the command says it in one line, without a traceback
    toml = out.parent / "sweep.toml"
    toml.write_text(_toml(config))
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", str(toml), "--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x0.npy" in err and "Traceback" not in err


def test_a_directory_that_did_not_record_its_files_is_refused(from_file):
    """A directory of a file sweep run before files were hashed cannot say what it read."""
    config, path, out = from_file
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["files"]
    manifest["config_hash"] = sweep_config.config_hash(manifest["config"])  # the hash of then
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"x0.npy' \(\[initial\] path\): the directory does not"):
        run_sweep(Sweep.from_dict(config), out)


def test_a_sweep_without_files_or_a_mode_keeps_its_hash():
    """Directories of sweeps run before files and modes were hashed still resume."""
    config = {
        "model": {"kind": "softmax-chain", "gamma": 0.1},
        "grid": {"beta": [4.0, 10.0]},
        "polytope": {"kind": "regular", "k": 5},
        "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
        "event": {"kind": "leave-ball", "radius": 0.3},
        "run": {"chains": 60, "chunk": 20, "max_steps": 200, "seed": 7},
    }
    before = "1278d69ef83703ee2957fcdb9823bd5e93e34dee6fdf8f2fbb1e9df819404e00"
    assert Sweep.from_dict(config).hash == before and Sweep.from_dict(config).files == []


def test_a_file_of_a_grid_axis_is_hashed(tmp_path):
    for name, scale in (("a.npy", 1.0), ("b.npy", 0.9)):
        np.save(tmp_path / name, scale * X0)
    config = tiny(kind="file")
    config["grid"] = {"initial": {"path": [str(tmp_path / "a.npy"), str(tmp_path / "b.npy")]}}
    sweep = Sweep.from_dict(config)
    assert [f["key"] for f in sweep.files] == ["[grid] initial.path"] * 2
    np.save(tmp_path / "b.npy", 0.8 * X0)
    assert Sweep.from_dict(config).hash != sweep.hash


# --------------------------------------------------------------------------- accelerated mode


def test_an_accelerated_sweep_is_first_passage_in_accelerated_mode(tmp_path):
    sweep = Sweep.from_dict(tiny({"mode": "accelerated"}))
    assert sweep.config["run"]["merge_tol"] == 1e-10  # first_passage's default, written out
    run_sweep(sweep, tmp_path / "sweep")
    frame, meta = read_sweep(tmp_path / "sweep")
    assert meta["config"]["run"]["mode"] == "accelerated"
    assert (frame["mode"] == "accelerated").all() and (frame["merge_tol"] == 1e-10).all()
    point = sweep.points[0]
    exact = ms.first_passage(
        point.model, point.x0, point.event, max_steps=point.max_steps, chains=40, rng=point.seed
    )
    for j in range(point.n_chunks):
        task = ChunkTask.of(point, j)
        fp = ms.first_passage(
            point.model,
            point.x0,
            point.event,
            max_steps=point.max_steps,
            chains=task.chains,
            rng=point.seed,
            first_chain=task.first_chain,
            mode="accelerated",
        )
        rows = frame.iloc[task.first_chain : task.first_chain + task.chains]
        np.testing.assert_array_equal(rows.steps, fp.times)
        np.testing.assert_array_equal(rows.censored, fp.censored)
    assert not np.array_equal(frame.steps, exact.times)  # the control: another chain's draws
    assert 0 < frame.censored.sum() < 40


def test_merge_tol_reaches_the_chunks_and_the_hash():
    sweep = Sweep.from_dict(tiny({"mode": "accelerated", "merge_tol": 0.0}))
    task = ChunkTask.of(sweep.points[0], 0)
    assert (task.mode, task.merge_tol) == ("accelerated", 0.0)
    assert sweep.points[0].columns["merge_tol"] == 0.0
    assert sweep.hash != Sweep.from_dict(tiny({"mode": "accelerated"})).hash
    assert Sweep.from_dict(tiny({"mode": "exact"})).hash == Sweep.from_dict(tiny()).hash


@pytest.mark.parametrize(
    "run, match",
    [
        ({"mode": "fast"}, r"\[run\] mode must be one of \('exact', 'accelerated'\), got 'fast'"),
        ({"mode": 1}, r"\[run\] mode must be one of .* got 1"),
        ({"merge_tol": 1e-8}, r'\[run\] merge_tol applies to mode = "accelerated" only'),
        ({"mode": "accelerated", "merge_tol": 2.0}, r"\[run\] merge_tol must be .*2\.0"),
        ({"mode": "accelerated", "merge_tol": "x"}, r"\[run\] merge_tol must be"),
    ],
)
def test_bad_modes_are_refused_naming_the_key(run, match):
    with pytest.raises(ValueError, match=match):
        Sweep.from_dict(tiny(run))


def test_accelerated_mode_refuses_a_model_it_cannot_run_before_any_chunk():
    config = tiny({"mode": "accelerated"})
    config["model"] = {"kind": "hardmax"}
    with pytest.raises(ValueError, match=r'point 0 .*\[run\] mode = "accelerated" needs a'):
        Sweep.from_dict(config)


def test_rows_are_int64_step_counts_or_refused():
    point = Sweep.from_dict(tiny()).points[0]
    task = ChunkTask.of(point, 0)
    good = ChunkResult(np.arange(10.0), np.zeros(10, bool), np.zeros(10, bool), 0.0, 1, "h", 1)
    assert chunk_table(point, task, good, "hash").column("steps").to_pylist() == list(range(10))
    bad = ChunkResult(np.arange(10.0) + 0.5, np.zeros(10, bool), np.zeros(10, bool), 0.0, 1, "h", 1)
    with pytest.raises(ValueError, match="not int64 integers"):
        chunk_table(point, task, bad, "hash")


def test_rows_written_without_a_mode_column_read_as_exact(tmp_path, monkeypatch):
    build = sweep_config._build_point

    def old(*args):
        point = build(*args)
        del point.columns["mode"]
        return point

    monkeypatch.setattr(sweep_config, "_build_point", old)
    run_sweep(Sweep.from_dict(tiny()), tmp_path / "old")
    monkeypatch.undo()
    frame, _ = read_sweep(tmp_path / "old")
    assert len(frame) == 40 and (frame["mode"] == "exact").all()


# --------------------------------------------------------------------------- absorbed chains


def test_a_sweep_counts_absorbed_chains_in_rows_journal_and_summary(tmp_path, capsys):
    """The clustered square at beta = 5: some chains collapse where LeaveHull's event is out of
    reach. Their rows say absorbed (never censored), and the summary, the sidecar and the
    command's line count them."""
    config = {
        "model": {"kind": "softmax-chain", "gamma": 0.2, "beta": 5.0},
        "polytope": {"kind": "regular", "k": 4},
        "initial": {"kind": "shrunk", "n": 12, "factor": 0.5},
        "event": {"kind": "leave-hull", "radius": 0.8},
        "run": {"chains": 200, "chunk": 50, "max_steps": 100_000, "seed": 1},
    }
    summary = run_sweep(Sweep.from_dict(config), tmp_path / "s")
    rows, meta = read_sweep(tmp_path / "s")
    absorbed = int(rows["absorbed"].sum())
    assert 0 < absorbed < 200 and not (rows["absorbed"] & rows["censored"]).any()
    assert summary.absorbed == absorbed == meta["absorbed"]
    assert summary.escapes == int((~rows["absorbed"] & ~rows["censored"]).sum())
    assert sum(p["absorbed_observed"] for p in meta["points"]) == absorbed
    # the command says it
    (tmp_path / "c.toml").write_text(_toml(config))
    assert main(["sweep", str(tmp_path / "c.toml"), "--out", str(tmp_path / "t")]) == 0
    assert f"{absorbed} absorbed" in capsys.readouterr().out
