"""Faults injected into sweeps: every case ends in a resumed dataset bit-identical to an
uninterrupted run, or in one line that says what to do; nothing lost, no silent wrong rows.

kill -9 at named points (the ``METASTAB_SWEEP_KILL_AT`` hook of :mod:`metastab.sweep.faults`),
a full disk (a patched write, and RLIMIT_FSIZE on a real process), concurrent runs of different
configs, damaged and foreign files, absurd sizes, and Dask workers or schedulers that die.
"""

import errno
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from dask_processes import start_cluster, stop
from test_sweep import _toml, files, tiny

from metastab import cli
from metastab.sweep import (
    Sweep,
    SweepError,
    SweepWarning,
    chunks,
    driver,
    executors,
    main,
    read_sweep,
    run_sweep,
    status,
    store,
)
from metastab.sweep.faults import KILL_AT, PAUSE_AT

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "sweep"
    run_sweep(Sweep.from_dict(tiny()), out)
    return out


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(_toml(tiny()))
    return path


def _command(config, out, env=None, preexec_fn=None, *extra):
    """``python -m metastab.sweep CONFIG --out OUT`` as a real process: (returncode, stderr)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "metastab.sweep",
            str(config),
            "--out",
            str(out),
            "--threads",
            "1",
            *extra,
        ],
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=preexec_fn,
    )
    return proc.returncode, proc.stderr


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def _intact(out, reference) -> None:
    """The dataset equals the reference file for file, and reads back verified."""
    assert files(out) == files(reference)
    frame, meta = read_sweep(out)
    assert len(frame) == 120 and meta["rows"] == 120


# --------------------------------------------------------------------------- kill -9


@pytest.mark.parametrize(
    "point",
    [  # a point of each phase in the fast tier, the others in the slow tier
        pytest.param("start:mkdir", marks=pytest.mark.slow),
        "start:locked",
        "json:manifest.json",
        pytest.param("start:manifest", marks=pytest.mark.slow),
        pytest.param("chunk:written", marks=pytest.mark.slow),
        pytest.param("chunk:renamed", marks=pytest.mark.slow),
        "chunk:journaled#2",
        "json:results.json",
    ],
)
def test_kill_9_at_a_named_point_then_the_same_command_resumes(point, config, reference, tmp_path):
    out = tmp_path / "sweep"
    rc, err = _command(config, out, {KILL_AT: point})
    assert rc == -signal.SIGKILL, err
    rc, err = _command(config, out)  # the same command, resumed
    assert rc == 0, err
    _intact(out, reference)
    assert not [
        p for p in [*out.iterdir(), *(out / "results").iterdir()] if p.name.startswith(".tmp-")
    ]


def test_leftovers_of_an_interrupted_start_count_as_empty(reference, tmp_path):
    """What an interrupted start of older versions left: results/ and a temporary manifest."""
    out = tmp_path / "sweep"
    (out / "results").mkdir(parents=True)
    (out / ".tmp-999-manifest.json").write_text('{"format": "metast')
    run_sweep(Sweep.from_dict(tiny()), out)
    _intact(out, reference)


# --------------------------------------------------------------------------- concurrent configs


def test_two_configs_racing_on_one_empty_directory(config, reference, tmp_path):
    """A holds the lock (paused just after it); B, another config, must wait and be refused
    with the key that differs, never run in A's directory."""
    other = tmp_path / "other.toml"
    other.write_text(_toml(tiny(seed=8)))
    out = tmp_path / "sweep"
    go = tmp_path / "go"  # A stays just after taking the lock until B has been refused
    first = subprocess.Popen(
        [sys.executable, "-m", "metastab.sweep", str(config), "--out", str(out), "--threads", "1"],
        env={**ENV, PAUSE_AT: f"start:locked={go}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / ".lock").exists() or not (out / ".lock").read_text():
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        rc, err = _command(other, out)
        go.touch()
        assert rc == 1 and "is running the sweep in" in _one_line(err)
        assert first.wait(timeout=600) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        first.stderr.close()
    rc, err = _command(other, out)
    assert rc == 2 and "run.seed: 7 -> 8" in _one_line(err) and "--new" in err
    _intact(out, reference)


def test_journal_records_of_another_config_are_never_trusted(reference, tmp_path):
    """The outcome of the old race: B's manifest over A's journal and chunks. B must recompute
    every chunk (the records carry A's hash), and end with B's rows, not A's."""
    a, b = tmp_path / "a", tmp_path / "b"
    run_sweep(Sweep.from_dict(tiny()), a)
    run_sweep(Sweep.from_dict(tiny(seed=8)), b)
    mixed = tmp_path / "mixed"
    shutil.copytree(a, mixed)
    shutil.copy(b / "manifest.json", mixed / "manifest.json")
    (mixed / "results.json").unlink()
    summary = run_sweep(Sweep.from_dict(tiny(seed=8)), mixed)
    assert summary.chunks_reused == 0 and summary.chunks_run == 6
    assert files(mixed) == files(b)


# --------------------------------------------------------------------------- damaged files


def test_a_truncated_manifest_is_named_and_recovered(config, reference, tmp_path, capsys):
    out = tmp_path / "sweep"
    run_sweep(Sweep.from_dict(tiny()), out)
    manifest = out / "manifest.json"
    manifest.write_text(manifest.read_text()[:40])
    with pytest.raises(ValueError, match=r"manifest.json is damaged .*run the sweep again"):
        read_sweep(out)
    with pytest.raises(ValueError, match=r"manifest.json is damaged"):
        status(out)
    with pytest.raises(
        ValueError,
        match=r"manifest.json is damaged and its journal belongs to "
        r"another config",
    ):
        run_sweep(Sweep.from_dict(tiny(seed=8)), out)
    with pytest.warns(SweepWarning, match="manifest.json was damaged; rewritten"):
        summary = run_sweep(Sweep.from_dict(tiny()), out)
    assert summary.chunks_reused == 6
    _intact(out, reference)


@pytest.mark.parametrize("stray", ["NOTES.txt", "sub/"])
def test_a_stray_entry_in_results_is_refused_not_deleted(stray, config, reference, tmp_path):
    out = tmp_path / "sweep"
    rc, _ = _command(config, out, {KILL_AT: "chunk:journaled#3"})
    path = out / "results" / stray.rstrip("/")
    if stray.endswith("/"):
        path.mkdir()
        (path / "mine.txt").write_text("keep me")
    else:
        path.write_text("keep me")
    rc, err = _command(config, out)
    assert rc == 1 and f"holds {stray}, not written by metastab: move it out" in _one_line(err)
    assert path.exists()
    shutil.move(path, tmp_path / "moved")
    assert _command(config, out)[0] == 0
    _intact(out, reference)


def test_reading_checks_the_chunks_against_the_journal(config, reference, tmp_path, capsys):
    out = tmp_path / "sweep"
    shutil.copytree(reference, out)
    results = out / "results"
    gone = results / "p000001-c0000000040.parquet"
    gone.unlink()
    info = status(out)
    assert (
        info["state"] == "damaged"
        and "p000001-c0000000040.parquet is missing" in info["problems"][0]
    )
    with pytest.raises(
        ValueError, match="chunk p000001-c0000000040.parquet is missing: run the sweep again"
    ):
        read_sweep(out)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["fit", str(out), "--figure", "none"])
    assert exit_.value.code == 2
    assert "p000001-c0000000040.parquet is missing" in _one_line(capsys.readouterr().err)
    with pytest.warns(SweepWarning, match="p000001-c0000000040.parquet is missing; left out"):
        frame, _ = read_sweep(out, partial=True)
    assert len(frame) == 100
    # Two chunks swapped: digests catch it; without digests, the stamp does.
    shutil.copy(reference / "results" / gone.name, gone)
    a, b = results / "p000000-c0000000000.parquet", results / "p000000-c0000000020.parquet"
    a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
    a.write_bytes(b_bytes)
    b.write_bytes(a_bytes)
    with pytest.raises(
        ValueError, match="chunk p000000-c0000000000.parquet (has .* bytes|is damaged)"
    ):
        read_sweep(out)
    # A foreign chunk of the same name and size (another seed) is not this sweep's.
    a.write_bytes(a_bytes)
    b.write_bytes(b_bytes)
    foreign = tmp_path / "foreign"
    run_sweep(Sweep.from_dict(tiny(seed=8)), foreign)
    record = [
        json.loads(line)
        for line in (out / "journal.jsonl").read_text().splitlines()
        if '"p000000-c0000000000.parquet"' in line
    ][-1]
    shutil.copy(foreign / "results" / a.name, a)
    if a.stat().st_size == record["bytes"]:
        with pytest.raises(ValueError, match="not this sweep's chunk"):
            read_sweep(out, digests=False)
    with pytest.raises(ValueError, match="p000000-c0000000000.parquet"):
        read_sweep(out)
    with pytest.warns(SweepWarning, match="p000000-c0000000000.parquet is damaged"):
        assert run_sweep(Sweep.from_dict(tiny()), out).chunks_run == 1  # recomputed on resume
    _intact(out, reference)


# --------------------------------------------------------------------------- disk full


@pytest.mark.parametrize("where", ["manifest", "chunk", "journal"])
def test_a_full_disk_gives_one_line_and_a_resumable_directory(
    where, reference, tmp_path, monkeypatch
):
    out = tmp_path / "sweep"
    full = OSError(errno.ENOSPC, "No space left on device")
    calls = []

    def failing(real, when):
        def wrapper(*args, **kwargs):
            calls.append(1)
            if when(len(calls)):
                raise full
            return real(*args, **kwargs)

        return wrapper

    if where == "manifest":
        monkeypatch.setattr(store, "write_json", failing(store.write_json, lambda k: True))
    elif where == "chunk":
        monkeypatch.setattr(
            chunks.pq, "write_table", failing(chunks.pq.write_table, lambda k: k == 3)
        )
    else:
        monkeypatch.setattr(
            store.Journal, "append", failing(store.Journal.append, lambda k: k == 4)
        )
    with pytest.raises(OSError, match="No space left") as err:
        run_sweep(Sweep.from_dict(tiny()), out)
    monkeypatch.undo()
    if where == "manifest":  # a start that failed leaves nothing behind
        assert "run the same command again" in str(err.value) and not out.exists()
    else:
        assert not [p for p in (out / "results").iterdir() if p.name.startswith(".tmp-")]
    run_sweep(Sweep.from_dict(tiny()), out)
    _intact(out, reference)


@pytest.mark.parametrize("limit", [1000, 2000])
def test_a_file_size_limit_on_a_real_process(limit, config, reference, tmp_path):
    """RLIMIT_FSIZE: writes beyond the limit fail (EFBIG) in the manifest (1000 bytes) or in
    the journal (2000 bytes); one line, and the same command resumes without the limit."""
    out = tmp_path / "sweep"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    rc, err = _command(config, out, None, small_files)
    line = _one_line(err)
    assert rc == 1 and "File too large" in line and "run the same command again" in line
    if limit == 1000:
        assert not out.exists()
    assert _command(config, out)[0] == 0
    _intact(out, reference)


# --------------------------------------------------------------------------- bad sizes


@pytest.mark.parametrize(
    "edit, match",
    [
        (
            lambda d: d["run"].update(max_steps=2**63),
            r"\[run\] max_steps = 9223372036854775808 is "
            r"above the limit",
        ),
        (
            lambda d: d["run"].update(chains=10**12),
            r"\[run\] chains = 1000000000000 .* chunks, "
            r"above the limit",
        ),
        (lambda d: d["polytope"].update(k=10**8), r"\[polytope\] k = 100000000 is above the limit"),
        (
            lambda d: d["grid"].update(phase=[i / 1e5 for i in range(10**5)]),
            r"\[grid\] has 200000 points, above the limit",
        ),
        (
            lambda d: d["run"].update(chains=10**8, chunk=10**8),
            r"\[run\] chunk = 100000000 .* GiB "
            r"of state per chunk",
        ),
        (
            lambda d: d.update(initial={"kind": "uniform", "n": 10**9}),
            r"\[initial\] n = 1000000000",
        ),
    ],
)
def test_absurd_sizes_are_refused_up_front(edit, match, tmp_path):
    data = tiny()
    edit(data)
    tic = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        run_sweep(Sweep.from_dict(data), tmp_path / "sweep")
    assert time.perf_counter() - tic < 5 and not (tmp_path / "sweep").exists()


# --------------------------------------------------------------------------- the command


def test_status_into_a_closed_pipe_is_quiet(reference):
    proc = subprocess.run(
        f"{sys.executable} -m metastab.sweep --status {reference} | head -1",
        shell=True,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.stdout.startswith("sweep ") and proc.stderr == ""


def test_command_progress_and_usage(config, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main([str(config), "--out", str(out), "--threads", "1", "--progress"]) == 0
    assert "points 2/2" in capsys.readouterr().err
    assert main([str(config), "--out", str(out), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""  # and off by default when stderr is not a terminal
    assert main([str(config), "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "CONFIG --out DIR" in text and "default: all cores embedded" in text


def test_a_missing_dask_leaves_nothing_behind(config, tmp_path, monkeypatch):
    def missing():
        raise ModuleNotFoundError(
            "the Dask backend needs dask.distributed: pip install 'metastab[dask]'"
        )

    monkeypatch.setattr(executors, "_import_distributed", missing)
    with pytest.raises(ValueError, match="pip install"):
        main([str(config), "--out", str(tmp_path / "sweep"), "--cluster", "local:2"])
    assert not (tmp_path / "sweep").exists()


# --------------------------------------------------------------------------- Dask


class _Dying(executors.Embedded):
    """An executor whose chunks die as on a cluster whose workers keep crashing."""

    name = "dying"
    retry_note = executors.DaskExecutor.RETRY_NOTE.format(tries=3)

    def next_done(self):
        from types import SimpleNamespace

        from distributed.scheduler import KilledWorker

        task = self.pending.popleft()
        worker = SimpleNamespace(address="tcp://127.0.0.1:1")
        return task, None, KilledWorker(task.name, worker, allowed_failures=3)


def test_a_killed_worker_is_not_reported_as_retries(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(driver, "_executor", lambda *a: _Dying())
    with pytest.raises(SweepError) as err:
        run_sweep(Sweep.from_dict(tiny()), tmp_path / "sweep")
    assert "after 2 retries" not in str(err.value) and "4 different workers" in str(err.value)


def _kill_after_first_chunk(proc):
    killed = []

    def progress(state):
        if not killed:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            killed.append(state.chunks_done)

    return progress, killed


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["worker", "scheduler"])
def test_dask_losing_its_only_worker_or_its_scheduler_ends_and_resumes(victim, reference, tmp_path):
    """The last worker (or the scheduler) is killed after the first chunk: the run ends within
    the watchdog's time with the unfinished chunks named, and resumes bit-identical."""
    pytest.importorskip("distributed")
    out, procs = tmp_path / "sweep", []
    try:
        address = start_cluster(tmp_path, ["w0"], procs)
        progress, killed = _kill_after_first_chunk(procs[1 if victim == "worker" else 0])
        tic = time.perf_counter()
        with pytest.raises(SweepError) as err:
            run_sweep(
                Sweep.from_dict(tiny()), out, scheduler=address, progress=progress, worker_timeout=3
            )
        assert time.perf_counter() - tic < 60
    finally:
        stop(procs)
    text = str(err.value)
    assert "\n" not in text and ("run the same command again" in text or "run again" in text)
    if victim == "worker":
        assert "no Dask worker for 3 s" in text and "unfinished" in text
    assert status(out)["state"] == "interrupted"
    summary = run_sweep(Sweep.from_dict(tiny()), out)
    assert summary.chunks_reused >= 1
    _intact(out, reference)


def test_a_local_cluster_does_not_need_port_8787(config, reference, tmp_path, capsys):
    """With 127.0.0.1:8787 held by another process, a local cluster starts without a warning
    (warnings are errors here) and gives the embedded result."""
    pytest.importorskip("distributed")
    holder = socket.socket()
    try:
        try:
            holder.bind(("127.0.0.1", 8787))
            holder.listen()
        except OSError:
            pass  # already held by someone else: the same situation
        out = tmp_path / "sweep"
        assert main([str(config), "--out", str(out), "--cluster", "local:1"]) == 0
    finally:
        holder.close()
    assert "on dask local:1" in capsys.readouterr().out
    assert files(out) == files(reference)
    frame = pd.read_parquet(out / "results")
    assert len(frame) == 120
