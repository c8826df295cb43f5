"""The Dask backend: a real scheduler and two workers on 127.0.0.1, one killed mid-run; a local
cluster. Results must equal the embedded run bit for bit."""

import json
import os
import signal
from pathlib import Path

import pytest

pytest.importorskip(
    "distributed", reason="the Dask tests need dask[distributed] (pip install 'metastab[dask]')"
)

from dask_processes import start_cluster, stop  # noqa: E402

from metastab import first_passage  # noqa: E402
from metastab.sweep import Sweep, main, read_sweep, run_sweep  # noqa: E402


def config() -> dict:
    """Two points, eight chunks each, every chunk long enough (~0.1 s) to be caught mid-run."""
    return {
        "model": {"kind": "softmax-chain", "gamma": 0.1},
        "grid": {"beta": [12.0, 14.0]},
        "polytope": {"kind": "regular", "k": 5},
        "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
        "event": {"kind": "leave-ball", "radius": 0.3},
        "run": {"chains": 320, "chunk": 40, "max_steps": 3000, "seed": 11},
    }


def files(out) -> dict:
    return {p.name: p.read_bytes() for p in sorted(Path(out, "results").iterdir())}


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    out = tmp_path_factory.mktemp("embedded") / "sweep"
    run_sweep(Sweep.from_dict(config()), out)
    return out


@pytest.mark.slow
def test_killed_worker_mid_run_gives_the_embedded_result(embedded, tmp_path):
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1; worker B is killed with
    SIGKILL once it has finished a chunk; the sweep completes on A, bit-identical."""
    procs = []
    try:
        address = start_cluster(tmp_path, ["A", "B"], procs)
        assert address.startswith("tcp://127.0.0.1:")
        worker_a, worker_b = procs[1], procs[2]
        out = tmp_path / "sweep"
        killed_after = []

        def kill_b_once_it_has_worked(progress):
            if killed_after:
                return
            journal = (out / "journal.jsonl").read_text().splitlines()
            pids = [json.loads(line)["pid"] for line in journal]
            if worker_b.pid in pids:
                worker_b.send_signal(signal.SIGKILL)
                worker_b.wait(timeout=10)
                killed_after.append(progress.chunks_done)

        summary = run_sweep(
            Sweep.from_dict(config()), out, scheduler=address, progress=kill_b_once_it_has_worked
        )
        assert worker_b.returncode == -signal.SIGKILL
        assert killed_after and killed_after[0] < 12  # B died with at least 4 chunks to go
        assert summary.chunks == 16 and summary.backend == f"dask {address}"
        assert files(out) == files(embedded)
        records = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
        assert {r["pid"] for r in records[killed_after[0] :]} == {worker_a.pid}
        assert {r["threads"] for r in records} == {1}  # numba threads = the worker's nthreads
        frame, meta = read_sweep(out)
        assert len(frame) == 640 and meta["provenance"]["backend"].startswith("dask tcp://")
    finally:
        stop(procs)


@pytest.mark.slow
def test_local_cluster_from_the_command(embedded, tmp_path, capsys):
    out = tmp_path / "sweep"
    config_file = tmp_path / "sweep.toml"
    config_file.write_text(
        "".join(
            f"[{table}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
            for table, values in config().items()
        )
    )
    assert main([str(config_file), "--out", str(out), "--cluster", "local:2"]) == 0
    assert "on dask local:2" in capsys.readouterr().out
    assert files(out) == files(embedded)
    pids = {json.loads(line)["pid"] for line in (out / "journal.jsonl").read_text().splitlines()}
    assert os.getpid() not in pids and len(pids) <= 2


def test_an_unreachable_scheduler_is_reported(tmp_path, monkeypatch):
    from metastab.sweep import executors

    monkeypatch.setattr(executors, "_CONNECT_TIMEOUT", "1s")
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'"):
        run_sweep(Sweep.from_dict(config()), tmp_path / "sweep", scheduler="tcp://127.0.0.1:9")
    assert not (tmp_path / "sweep").exists()  # nothing left behind


@pytest.mark.slow
def test_an_accelerated_sweep_on_a_local_cluster_is_the_embedded_one(tmp_path):
    data = config()
    data["run"].update(chains=80, mode="accelerated", merge_tol=0.0)
    run_sweep(Sweep.from_dict(data), tmp_path / "embedded")
    summary = run_sweep(Sweep.from_dict(data), tmp_path / "dask", cluster="local:1")
    assert summary.backend == "dask local:1"
    assert files(tmp_path / "dask") == files(tmp_path / "embedded")
    frame = read_sweep(tmp_path / "dask")[0]
    assert (frame["mode"] == "accelerated").all() and (frame["merge_tol"] == 0.0).all()
    point = Sweep.from_dict(data).points[0]  # the control: the exact chains differ
    exact = first_passage(
        point.model, point.x0, point.event, max_steps=3000, chains=40, rng=point.seed
    )
    assert list(frame["steps"][:40]) != list(exact.times)
