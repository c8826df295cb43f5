"""Sweeps as a new user meets them: preconditions checked before the first chunk, failures
reported once per distinct error, replicates as a seed axis, the command line's defaults."""

from __future__ import annotations

import pytest

from metastab.cli import main
from metastab.engine import backends
from metastab.registry import default_event_radius
from metastab.sweep import SweepError, executors, read_sweep, run_sweep
from metastab.sweep import config as sweep_config
from metastab.sweep.chunks import run_chunk
from metastab.sweep.config import Sweep


def tiny(grid: dict | None = None, **run) -> dict:
    """Two points of three 20-chain chunks: clusters at the vertices of a pentagon."""
    return {
        "model": {"kind": "softmax-chain", "gamma": 0.1},
        "grid": {"beta": [4.0, 10.0], **(grid or {})},
        "polytope": {"kind": "regular", "k": 5},
        "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
        "event": {"kind": "leave-ball", "radius": 0.3},
        "run": {"chains": 60, "chunk": 20, "max_steps": 200, "seed": 7, **run},
    }


TOML = """
[model]
kind = "softmax-chain"
gamma = 0.1
[grid]
beta = [4.0, 10.0]
[polytope]
kind = "regular"
k = 5
[initial]
kind = "repeated-points"
multiplicities = [2, 2, 2, 2, 2]
[event]
kind = "leave-ball"
radius = 0.3
[run]
chains = 60
chunk = 20
max_steps = 200
seed = 7
device = "cuda"
"""


def test_a_missing_device_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(backends, "cuda_installed", lambda: False)
    ran = []
    monkeypatch.setattr(executors, "run_chunk", lambda task: ran.append(task))
    path = tmp_path / "gpu.toml"
    path.write_text(TOML)
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", str(path), "--out", str(tmp_path / "sweep")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and not ran
    assert err.count("\n") == 1 and "device='cuda'" in err and "DeviceUnavailable" not in err
    assert not (tmp_path / "sweep").exists()
    # the control: on the cpu the same config runs its chunks
    path.write_text(TOML.replace('"cuda"', '"cpu"'))
    monkeypatch.setattr(executors, "run_chunk", lambda task: run_chunk(task))
    assert main(["sweep", str(path), "--out", str(tmp_path / "cpu")]) == 0


@pytest.mark.parametrize(
    ("error", "advice"),
    [
        (ValueError("the event cannot be built"), "a retry cannot fix it"),
        (OSError("No space left on device"), "run again to retry"),
    ],
)
def test_identical_failures_are_reported_once_with_their_count(
    tmp_path, monkeypatch, error, advice
):
    def fail(task):
        raise error

    monkeypatch.setattr(executors, "run_chunk", fail)
    with pytest.raises(SweepError) as err:
        run_sweep(Sweep.from_dict(tiny()), tmp_path / "sweep", retries=0)
    text = str(err.value)
    assert text.count(str(error)) == 1
    assert "6 chunk(s) failed" in text and "p000000-c0000000000.parquet and 5 more" in text
    assert advice in text
    assert ("run again" in text) == (advice == "run again to retry")


def test_distinct_failures_are_each_named(tmp_path, monkeypatch):
    def fail(task):
        raise ValueError(f"point {task.point} is bad")

    monkeypatch.setattr(executors, "run_chunk", fail)
    with pytest.raises(SweepError) as err:
        run_sweep(Sweep.from_dict(tiny()), tmp_path / "sweep", retries=0)
    assert "point 0 is bad" in str(err.value) and "point 1 is bad" in str(err.value)
    from metastab.sweep import status
    from metastab.sweep.store import format_status

    shown = format_status(status(tmp_path / "sweep"))
    assert shown.count("FAILED") == 2 and "and 2 more: ValueError: point 1 is bad" in shown


def replicates_config() -> dict:
    config = tiny({"seed": [7, 8]})
    del config["run"]["seed"]
    return config


@pytest.fixture(scope="module")
def replicates_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("replicates") / "sweep"
    run_sweep(Sweep.from_dict(replicates_config()), out)
    return out


@pytest.fixture(scope="module")
def replicates(replicates_dir):
    return read_sweep(replicates_dir)[0]


def test_a_seed_axis_sweep_resumes(replicates_dir):
    summary = run_sweep(Sweep.from_dict(replicates_config()), replicates_dir)
    assert summary.chunks_run == 0 and summary.chunks_reused == 12


def test_seed_is_a_grid_axis_with_a_seed_column(replicates):
    assert sorted(replicates.groupby(["beta", "seed"]).size().items()) == [
        ((4.0, 7), 60),
        ((4.0, 8), 60),
        ((10.0, 7), 60),
        ((10.0, 8), 60),
    ]


def test_a_replicate_is_the_sweep_with_that_seed(replicates, tmp_path):
    """The rows of seed s are those of the same sweep with [run] seed = s."""
    out = tmp_path / "seed8"
    run_sweep(Sweep.from_dict(tiny(seed=8)), out)
    alone = read_sweep(out)[0]
    both = replicates[replicates["seed"] == 8].reset_index(drop=True)
    cols = ["chain", "steps", "censored", "beta", "seed"]
    assert (alone["seed"] == 8).all()
    assert both[cols].equals(alone[cols])
    other = replicates[replicates["seed"] == 7].reset_index(drop=True)
    assert not other["steps"].equals(alone["steps"])  # the control: another seed differs


def test_rows_written_without_a_seed_column_still_read(tmp_path, monkeypatch):
    build = sweep_config._build_point

    def old(*args):
        point = build(*args)
        del point.columns["seed"]
        return point

    monkeypatch.setattr(sweep_config, "_build_point", old)
    run_sweep(Sweep.from_dict(tiny()), tmp_path / "old")
    monkeypatch.undo()
    frame, _ = read_sweep(tmp_path / "old")
    assert len(frame) == 120 and (frame["seed"] == 7).all()


def test_seed_axis_errors():
    with pytest.raises(ValueError, match=r"run.seed is set both in \[run\] and as a \[grid\]"):
        Sweep.from_dict(tiny({"seed": [7, 8]}))
    config = tiny({"seed": [7, -1]})
    del config["run"]["seed"]
    with pytest.raises(ValueError, match=r"\[grid\] run.seed must hold integers >= 0"):
        Sweep.from_dict(config)


def test_seed_axis_is_ambiguous_where_a_table_takes_a_seed():
    config = tiny({"seed": [1, 2]})
    config["polytope"] = {"kind": "random-polygon", "k": 5, "seed": 3}
    config["initial"] = {"kind": "in-cells", "n": 10}
    with pytest.raises(ValueError, match=r"write polytope.seed, initial.seed or run.seed"):
        Sweep.from_dict(config)


def test_leave_hull_radius_defaults_as_on_the_command_line():
    config = tiny()
    config["event"] = {"kind": "leave-hull"}
    sweep = Sweep.from_dict(config)
    point = sweep.points[0]
    expected = 2 * 0.1 * point.polytope.diameter
    assert point.event.radius == pytest.approx(expected, rel=1e-15)
    assert default_event_radius("leave-hull", point.model, point.polytope) == expected
    config["event"] = {"kind": "leave-hull", "radius": 0.5}
    assert Sweep.from_dict(config).points[0].event.radius == 0.5  # the control: a given radius


def test_a_defaulted_radius_needs_a_polytope():
    config = {
        "model": {"kind": "sphere-chain", "beta": 1.0},
        "initial": {"kind": "sphere-uniform", "n": 4, "d": 3},
        "event": {"kind": "leave-ball"},
        "run": {"chains": 4, "max_steps": 10, "seed": 1},
    }
    with pytest.raises(ValueError, match="radius: leave-ball needs a radius here"):
        Sweep.from_dict(config)


def test_a_seed_axis_survives_normalising_twice():
    """A manifest holds the normalised config (run.seed None beside the axis): it normalises to
    itself, so a resume recognises the sweep."""
    from metastab.sweep.config import normalise

    config = tiny({"seed": [7, 8]})
    del config["run"]["seed"]
    once = normalise(config)
    assert once["run"]["seed"] is None and normalise(once) == once


COMPILING = "compiling kernels"


def test_a_sweep_says_it_compiles_before_its_first_progress_line(tmp_path, monkeypatch, capsys):
    """With a cold cache (kernels_cold forced), the compile line is the first thing on stderr and
    comes once, before the progress line; the progress clock starts after the compilation."""
    from metastab.engine import progress as engine_progress
    from metastab.sweep import driver

    monkeypatch.setattr(engine_progress, "kernels_cold", lambda *dispatchers: True)
    events: list[str] = []
    compile_chunk, reporter = driver.compile_chunk, driver._Reporter

    def compiling(task, say):
        events.append("compile")
        compile_chunk(task, say)

    class Clock(reporter):
        def __init__(self, *args):
            events.append("clock")
            super().__init__(*args)

    monkeypatch.setattr(driver, "compile_chunk", compiling)
    monkeypatch.setattr(driver, "_Reporter", Clock)
    summary = run_sweep(Sweep.from_dict(tiny()), tmp_path / "s", progress=True)
    err = capsys.readouterr().err
    assert err.startswith(COMPILING) and err.count(COMPILING) == 1
    assert "points 2/2" in err
    assert events == ["compile", "clock"]
    # compiling ahead ran no chunk of its own: the same rows as a sweep without progress
    plain = run_sweep(Sweep.from_dict(tiny()), tmp_path / "plain")
    assert capsys.readouterr().err == ""
    assert summary.chunks_run == plain.chunks_run
    a, b = read_sweep(tmp_path / "s")[0], read_sweep(tmp_path / "plain")[0]
    assert a.equals(b)


def test_a_sweep_without_progress_compiles_nothing_ahead(tmp_path, monkeypatch):
    from metastab.sweep import driver

    monkeypatch.setattr(driver, "compile_chunk", lambda *a: pytest.fail("compiled ahead"))
    run_sweep(Sweep.from_dict(tiny()), tmp_path / "s")


def test_a_chunk_that_fails_in_the_compile_ahead_is_reported_as_a_chunk(tmp_path, monkeypatch):
    """An error in compiling ahead (progress on) does not stop the sweep: its chunks fail the
    same way and are reported as failed chunks."""
    from metastab.sweep import chunks

    def fail(*args, **kwargs):
        raise ValueError("bad point")

    monkeypatch.setattr(chunks, "first_passage", fail)
    with pytest.raises(SweepError, match=r"6 chunk\(s\) failed.*bad point"):
        run_sweep(Sweep.from_dict(tiny()), tmp_path / "s", retries=0, progress=lambda s: None)
