"""A Dask scheduler and nanny-less workers on 127.0.0.1, each in a process of its own (shared by
the Dask sweep tests); their output goes to ``dask.log`` in the test's folder."""

import json
import subprocess
import sys
import time

START_TIMEOUT = 60
_DASK = [sys.executable, "-m", "dask"]


def wait_for(condition, what, procs):
    """Poll ``condition`` until it holds; fail if a process exits or START_TIMEOUT passes."""
    deadline = time.monotonic() + START_TIMEOUT
    while not condition():
        for proc in procs:
            assert proc.poll() is None, f"a Dask process exited while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start_cluster(tmp_path, names, procs):
    """Start a scheduler, then one worker per name (``--name``, local directory
    ``tmp_path/name``, one thread), appending each process to ``procs`` so that the caller stops
    them even when the start fails; the scheduler's address once every worker has registered."""
    scheduler_file, log_path = tmp_path / "scheduler.json", tmp_path / "dask.log"
    local = ["--no-dashboard", "--host", "127.0.0.1"]
    with open(log_path, "wb") as log:  # the processes keep their own handles
        procs.append(
            subprocess.Popen(
                [*_DASK, "scheduler", "--port", "0", "--scheduler-file", str(scheduler_file)]
                + local,
                stdout=log,
                stderr=log,
            )
        )
        wait_for(scheduler_file.exists, "the scheduler", procs)
        address = json.loads(scheduler_file.read_text())["address"]
        for name in names:
            procs.append(
                subprocess.Popen(
                    [*_DASK, "worker", address, "--name", name, "--nthreads", "1", "--no-nanny"]
                    + local
                    + ["--local-directory", str(tmp_path / name)],
                    stdout=log,
                    stderr=log,
                )
            )
    wait_for(
        lambda: log_path.read_text().count("Register worker") >= len(names),
        f"{len(names)} workers",
        procs,
    )
    return address


def stop(procs):
    """Terminate the workers, then the scheduler (killed if not gone within 10 s)."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
