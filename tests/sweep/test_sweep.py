"""Sweeps: config parsing, chunk purity, resume after SIGKILL, integrity checks, adaptive budgets.

The Dask backend is tested in test_sweep_dask.py.
"""

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metastab as ms
from metastab.sweep import (
    ChunkTask,
    Sweep,
    SweepError,
    SweepWarning,
    driver,
    executors,
    final_chunks,
    main,
    read_sweep,
    run_chunk,
    run_sweep,
    status,
    store,
)
from metastab.sweep.config import normalise

ROOT = Path(__file__).resolve().parents[2]

DOC_TOML = """
[model]
kind = "softmax-chain"     # also "softmax-flow", "hardmax"
gamma = 0.1
[grid]                     # every list is an axis of the grid
beta = [4.0, 6.0, 8.0]
[polytope]
kind = "regular"           # regular polygon with k vertices on the unit circle
k = 5
[initial]
kind = "near-vertices"     # the Thm 5.2 initial condition
n = 10
[event]
kind = "leave-ball"        # also "leave-hull", "reach-vertices", "collapse"
radius = 0.3
[run]
chains = 2000
chunk = 250
max_steps = 100000
seed = 1
"""


def tiny(**run) -> dict:
    """Two points, three chunks each: metastable clusters at the vertices of a pentagon."""
    return {
        "model": {"kind": "softmax-chain", "gamma": 0.1},
        "grid": {"beta": [4.0, 10.0]},
        "polytope": {"kind": "regular", "k": 5},
        "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
        "event": {"kind": "leave-ball", "radius": 0.3},
        "run": {"chains": 60, "chunk": 20, "max_steps": 200, "seed": 7, **run},
    }


def files(out) -> dict:
    """Every file of a sweep's dataset: name -> bytes."""
    return {p.name: p.read_bytes() for p in sorted(Path(out, "results").iterdir())}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted embedded run of tiny()."""
    out = tmp_path_factory.mktemp("reference") / "sweep"
    run_sweep(Sweep.from_dict(tiny()), out)
    return out


# --------------------------------------------------------------------------- config


def test_issue_config_parses_as_written(tmp_path):
    path = tmp_path / "doc.toml"
    path.write_text(DOC_TOML)
    # The format works as written; the Thm 5.2 initial condition itself needs a larger beta on
    # a pentagon (empty eroded cones), which is reported with the point it concerns.
    with pytest.raises(ValueError, match=r"doc.toml: point 0 \(model.beta=4.0\).*increase beta"):
        Sweep.from_toml(path)
    path.write_text(DOC_TOML.replace("[4.0, 6.0, 8.0]", "[1e4, 2e4]"))
    sweep = Sweep.from_toml(path)
    assert sweep.config["grid"] == [["model.beta", [1e4, 2e4]]]
    assert [p.n_chunks for p in sweep.points] == [8, 8]
    assert sweep.points[1].chunk_range(7) == (1750, 250)
    assert sweep.points[1].seed == ms.Seed(1, (1,))
    assert ms.regular_polygon(5).assign(sweep.points[0].x0).tolist() == [0, 1, 2, 3, 4] * 2


def test_grid_order_dotted_keys_and_columns():
    data = tiny()
    data["grid"] = {"beta": [4.0, 10.0], "event": {"radius": [0.2, 0.3, 0.4]}}
    del data["event"]["radius"]
    sweep = Sweep.from_dict(data)
    assert len(sweep.points) == 6
    assert sweep.points[1].params == {"model.beta": 4.0, "event.radius": 0.3}  # last axis fastest
    assert sweep.points[3].event.radius == 0.2 and sweep.points[3].model.beta == 10.0
    cols = sweep.points[0].columns
    assert {"point", "beta", "gamma", "event_radius", "polytope_k", "initial_n"} <= set(cols)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["event"].update(radus=0.3), r"unknown key\(s\) \['radus'\]"),
        (lambda d: d["run"].pop("seed"), "needs 'seed'"),
        (lambda d: d["grid"].update(radius=[0.1]), "ambiguous .*event.radius"),
        (lambda d: d["grid"].update(event={"radius": [0.1]}), "both in \\[event\\] and as a"),
        (lambda d: d["grid"].update(bta=[1.0]), "'bta' is not a parameter"),
        (lambda d: d["model"].update(beta=2.0), "both in \\[model\\] and as a \\[grid\\] axis"),
        (lambda d: d["grid"].update(beta=[4.0, 4]), "repeats a value"),
        (lambda d: d["grid"].update(event={"kind": ["collapse"]}), "kind cannot be a grid axis"),
        (lambda d: d["model"].update(kind="softmax"), "kind must be one of"),
        (lambda d: d["run"].update(chains=0), "chains must be >= 1"),
        (lambda d: d["initial"].update(multiplicities=[2, 2.5]), "must be an integer"),
        (lambda d: d.pop("event"), r"needs a \[event\] table"),
        (lambda d: d["model"].update(gamma=1.5), r"point 0 .*gamma must be in \(0, 1\]"),
    ],
)
def test_bad_configs_are_refused_with_a_reason(edit, match):
    data = tiny()
    edit(data)
    with pytest.raises(ValueError, match=match):
        Sweep.from_dict(data)


def test_hash_follows_meaning_not_spelling():
    base = Sweep.from_dict(tiny()).hash
    spelled = tiny()
    spelled["grid"]["beta"] = [4, 10]  # ints for floats
    spelled["polytope"]["radius"] = 1.0  # a default, written out
    assert Sweep.from_dict(spelled).hash == base
    other = tiny()
    other["grid"]["beta"] = [4.0, 10.5]
    assert Sweep.from_dict(other).hash != base
    assert normalise(tiny())["run"]["escapes"] is None


def test_toml_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such sweep config"):
        Sweep.from_toml(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[model\n")
    with pytest.raises(ValueError, match="bad.toml: not valid TOML"):
        Sweep.from_toml(bad)


def test_example_config_is_valid():
    sweep = Sweep.from_toml(ROOT / "studies" / "sweeps" / "example.toml")
    assert len(sweep.points) >= 3


# --------------------------------------------------------------------------- chunks


def test_a_chunk_is_a_slice_of_the_whole_point():
    point = Sweep.from_dict(tiny()).points[1]
    whole = ms.first_passage(
        point.model,
        point.x0,
        point.event,
        max_steps=point.max_steps,
        chains=point.chains,
        rng=point.seed,
    )
    for j in (2, 1):
        task = ChunkTask.of(point, j, threads=1)
        result = run_chunk(task)
        part = slice(task.first_chain, task.first_chain + task.chains)
        np.testing.assert_array_equal(result.steps, whole.times[part])
        np.testing.assert_array_equal(result.censored, whole.censored[part])
    assert whole.events > 0 and whole.censored.any()  # the tiny sweep has both outcomes


def test_final_chunks_is_the_shortest_prefix_reaching_the_target():
    assert final_chunks({0: 1, 1: 1}, 2, None) == 2
    assert final_chunks({1: 1}, 2, None) is None
    assert final_chunks({0: 2, 1: 0, 2: 5, 3: 9}, 5, 7) == 3
    assert final_chunks({0: 2, 1: 0, 3: 9}, 5, 7) is None  # chunk 2 missing: undecided
    assert final_chunks({0: 0, 1: 1}, 2, 7) == 2  # the cap


# --------------------------------------------------------------------------- runs


def test_run_writes_a_dataset_that_matches_first_passage(reference):
    frame, meta = read_sweep(reference)
    assert len(frame) == 120 and not frame.duplicated(["point", "chain"]).any()
    whole = pd.read_parquet(reference / "results")  # what a user reads
    assert len(whole) == 120
    for point in Sweep.from_dict(tiny()).points:
        fp = ms.first_passage(
            point.model,
            point.x0,
            point.event,
            max_steps=point.max_steps,
            chains=point.chains,
            rng=point.seed,
        )
        rows = frame[frame.point == point.index]
        np.testing.assert_array_equal(rows.chain, np.arange(60))
        np.testing.assert_array_equal(rows.steps, fp.times)
        np.testing.assert_array_equal(rows.censored, fp.censored)
        assert (rows.beta == point.model.beta).all() and (rows.max_steps == 200).all()
    assert meta["kind"] == "sweep" and meta["rows"] == 120
    assert meta["points"][1]["seed"] == {"entropy": "7", "spawn_key": [1]}
    assert "numba" in meta["provenance"] and meta["provenance"]["backend"] == "embedded"
    info = status(reference)
    assert info["state"] == "complete" and info["points_done"] == 2 and info["chains_done"] == 120


def test_rerun_of_a_complete_sweep_does_nothing(reference, tmp_path):
    out = tmp_path / "again"
    run_sweep(Sweep.from_dict(tiny()), out)
    summary = run_sweep(Sweep.from_dict(tiny()), out)
    assert summary.chunks_run == 0 and summary.chunks_reused == 6
    assert files(out) == files(reference)


def test_sigkill_mid_run_then_resume_is_bit_identical(tmp_path):
    """A real subprocess is killed with SIGKILL mid-sweep and resumed with the same command."""
    data = tiny(chains=320, chunk=40, max_steps=3000)
    data["grid"]["beta"] = [12.0, 14.0]
    config = tmp_path / "kill.toml"
    config.write_text(_toml(data))
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "metastab.sweep", str(config), "--out", str(out), "--threads", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        journal = out / "journal.jsonl"
        deadline = time.monotonic() + 60
        while not (journal.exists() and journal.read_text().count("\n") >= 3):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    info = status(out)
    assert info["state"] == "interrupted" and 3 <= info["chunks_done"] < 16
    summary = run_sweep(config, out)  # the same command, resumed
    assert summary.chunks_reused >= 3 and summary.chunks_run + summary.chunks_reused == 16
    reference = tmp_path / "uninterrupted"
    run_sweep(config, reference)
    assert files(out) == files(reference)
    frame, _ = read_sweep(out)
    assert len(frame) == 640 and not frame.duplicated(["point", "chain"]).any()


def _toml(data: dict) -> str:
    """A minimal TOML writer for the flat tables of a sweep config (tests only)."""
    lines = []
    for table, values in data.items():
        lines.append(f"[{table}]")
        for key, value in values.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def test_damaged_and_missing_chunks_are_detected_and_recomputed(reference, tmp_path):
    out = tmp_path / "sweep"
    run_sweep(Sweep.from_dict(tiny()), out)
    damaged = out / "results" / "p000000-c0000000020.parquet"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    (out / "results" / "p000001-c0000000040.parquet").unlink()
    with pytest.warns(SweepWarning) as caught:
        store.recover(out, Sweep.from_dict(tiny()))  # what a resume does first
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "p000000-c0000000020.parquet is damaged" in messages[0]
    assert "p000001-c0000000040.parquet is missing" in messages[1]
    assert status(out)["state"] == "interrupted"
    with pytest.raises(ValueError, match="not complete"):
        read_sweep(out)
    summary = run_sweep(Sweep.from_dict(tiny()), out)  # recorded as damaged: no second warning
    assert summary.chunks_run == 2 and summary.chunks_reused == 4
    assert files(out) == files(reference)


def test_leftovers_of_a_crash_are_cleaned(reference, tmp_path):
    """The states kill -9 can leave: a temporary file, a chunk renamed but not journaled, a torn
    journal line. None is trusted; the resumed sweep is identical to the reference."""
    out = tmp_path / "sweep"
    run_sweep(Sweep.from_dict(tiny()), out)
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:-2]) + lines[-2][:30])  # last record lost, one torn
    (out / "results" / ".tmp-123-p000001-c0000000000.parquet").write_bytes(b"partial")
    (out / "results.json").unlink()
    summary = run_sweep(Sweep.from_dict(tiny()), out)
    assert summary.chunks_run == 2 and summary.chunks_reused == 4
    assert files(out) == files(reference)
    assert all(json.loads(line) for line in journal.read_text().splitlines())


def test_a_changed_config_is_refused_unless_new(reference, tmp_path):
    out = tmp_path / "sweep"
    run_sweep(Sweep.from_dict(tiny()), out)
    changed = tiny()
    changed["grid"]["beta"] = [4.0, 6.0]
    with pytest.raises(ValueError, match="holds a sweep of another config .* --new"):
        run_sweep(Sweep.from_dict(changed), out)
    summary = run_sweep(Sweep.from_dict(changed), out, new=True)
    assert summary.out == tmp_path / "sweep-1"
    assert files(out) == files(reference)  # untouched
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a sweep directory"):
        run_sweep(Sweep.from_dict(tiny()), tmp_path / "other")


def test_a_second_runner_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "_LOCK_WAIT", 0.0)
    sweep = Sweep.from_dict(tiny())
    with store.open_sweep(tmp_path / "sweep", sweep) as out:
        with pytest.raises(SweepError, match=f"pid {os.getpid()}.* is running the sweep"):
            run_sweep(sweep, out)
        assert status(out)["state"] == "running"


def test_a_failing_chunk_is_retried_reported_and_resumed(reference, tmp_path, monkeypatch):
    calls = []

    def flaky(task):
        calls.append(task.name)
        if task.name == "p000001-c0000000020.parquet":
            raise FloatingPointError("chain 3 has a non-finite state")
        return run_chunk(task)

    monkeypatch.setattr(executors, "run_chunk", flaky)
    out = tmp_path / "sweep"
    with pytest.raises(SweepError, match="1 chunk.*p000001-c0000000020.*non-finite") as err:
        run_sweep(Sweep.from_dict(tiny()), out, retries=2)
    assert calls.count("p000001-c0000000020.parquet") == 3
    assert err.value.summary.chunks == 5 and not (out / "results.json").exists()
    info = status(out)
    assert (
        info["state"] == "interrupted"
        and "non-finite" in info["failed"]["p000001-c0000000020.parquet"]
    )
    monkeypatch.setattr(executors, "run_chunk", run_chunk)
    assert run_sweep(Sweep.from_dict(tiny()), out).chunks_run == 1
    assert files(out) == files(reference) and status(out)["failed"] == {}


class _OutOfOrder(executors.Embedded):
    """Several chunks in flight, finished last-submitted first (as on a busy cluster)."""

    name = "out-of-order"
    window = 4

    def next_done(self):
        self.pending.rotate(1)
        return super().next_done()


@pytest.mark.parametrize("ahead", [False, True])
def test_escape_target_keeps_the_shortest_prefix(reference, tmp_path, monkeypatch, ahead):
    fixed, _ = read_sweep(reference)
    escapes = (~fixed.censored).groupby([fixed.point, fixed.chain // 20]).sum()  # (point, chunk)
    target = int(escapes[(0, 0)]) + 1  # point 0 needs two chunks, point 1 as many as it takes
    if ahead:  # run ahead of the target and finish out of order: the excess must be dropped
        monkeypatch.setattr(driver, "_executor", lambda *a: _OutOfOrder())
        monkeypatch.setattr(driver._Plan, "wanted", lambda self, p, window: window)
    summary = run_sweep(Sweep.from_dict(tiny(escapes=target)), tmp_path / "adaptive")
    frame, meta = read_sweep(tmp_path / "adaptive")
    for p in (0, 1):
        counts = {j: int(escapes[(p, j)]) for j in range(3)}
        keep = final_chunks(counts, 3, target)
        expected = fixed[(fixed.point == p) & (fixed.chain < 20 * keep)]
        pd.testing.assert_frame_equal(
            frame[frame.point == p].reset_index(drop=True), expected.reset_index(drop=True)
        )
        assert meta["points"][p]["chunks"] == keep
    assert keep == 3 or (~frame[frame.point == 1].censored).sum() >= target
    assert (summary.chunks_discarded > 0) == ahead
    assert status(tmp_path / "adaptive")["points_done"] == 2


# --------------------------------------------------------------------------- command


def test_main_runs_reports_status_and_refuses_bad_input(reference, tmp_path, capsys):
    config = tmp_path / "tiny.toml"
    config.write_text(_toml(tiny()))
    out = tmp_path / "sweep"
    assert main([str(config), "--out", str(out), "--threads", "1"]) == 0
    assert "2 points, 120 chains" in capsys.readouterr().out
    assert files(out) == files(reference)
    assert main(["--status", str(out)]) == 0
    report = capsys.readouterr().out
    assert "complete" in report and "points 2/2" in report
    with pytest.raises(FileNotFoundError, match="no sweep in"):
        main(["--status", str(tmp_path)])
    with pytest.raises(FileNotFoundError, match="no such sweep config"):
        main([str(tmp_path / "nope.toml"), "--out", str(out)])
    with pytest.raises(ValueError, match="--out DIR"):
        main([str(config)])
    with pytest.raises(ValueError, match="local:N"):
        main([str(config), "--out", str(out), "--cluster", "remote:2"])
    with pytest.raises(SystemExit):
        main([str(config), "--out", str(out), "--cluster", "local:2", "--scheduler", "x"])
    capsys.readouterr()


def test_python_sweep_equals_toml_sweep(tmp_path):
    config = tmp_path / "tiny.toml"
    config.write_text(_toml(tiny()))
    assert Sweep.from_toml(config).hash == Sweep.from_dict(copy.deepcopy(tiny())).hash


def test_a_normalised_config_is_its_own_normal_form():
    sweep = Sweep.from_dict(tiny(escapes=5))
    again = Sweep.from_dict(json.loads(json.dumps(sweep.config)))  # as read from a manifest
    assert again.config == sweep.config and again.hash == sweep.hash
