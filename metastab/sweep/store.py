"""A sweep's output directory: manifest, journal, results dataset, lock, and what is done.

::

    DIR/manifest.json   the plan: canonical config, its hash, points and their seeds
    DIR/journal.jsonl   append-only, one JSON record per chunk event (done, failed, discarded,
                        damaged); the last record of a chunk wins
    DIR/results/        parquet dataset, one file per finished chunk (temporary file + rename)
    DIR/results.json    provenance sidecar, written when the sweep is complete
    DIR/.lock           held (flock) by the process running the sweep; holds its pid

Resume trusts a chunk only when its journal record says done and the file's size and SHA-256
match the record; anything else in ``results/`` is removed and recomputed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from pathlib import Path

from ..results import sidecar
from .chunks import TEMP_PREFIX, chunk_name, file_digest, final_chunks
from .config import Sweep

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None

__all__ = ["SweepError", "SweepWarning", "prepare", "locked", "Journal", "recover", "status"]

MANIFEST, JOURNAL, RESULTS, LOCK = "manifest.json", "journal.jsonl", "results", ".lock"
MANIFEST_FORMAT = "metastab-sweep/1"
_LOCK_WAIT = 2.0  # seconds to wait for a lock held by a --status probe


class SweepError(RuntimeError):
    """A sweep could not finish (failed chunks, another process on the directory)."""

    def __init__(self, message: str, summary=None):
        super().__init__(message)
        self.summary = summary


class SweepWarning(RuntimeWarning):
    """Resume found a damaged or missing chunk file and will recompute it."""


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{path.name}")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    os.replace(tmp, path)


def read_manifest(out: Path) -> dict:
    path = Path(out) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no sweep in {str(out)!r} (no {MANIFEST})")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"{path}: unknown manifest format {manifest.get('format')!r}")
    return manifest


def _next_free(out: Path) -> Path:
    i = 1
    while out.with_name(f"{out.name}-{i}").exists():
        i += 1
    return out.with_name(f"{out.name}-{i}")


def prepare(out, sweep: Sweep, new: bool = False) -> Path:
    """The directory to run ``sweep`` in, with its manifest written.

    An existing directory is resumed when its manifest holds the same config hash; another
    config, or a non-empty directory that is not a sweep, is refused unless ``new``, which
    starts the sweep in the first free ``DIR-1``, ``DIR-2``, ...
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file, not a directory")
    if out.exists() and any(out.iterdir()):
        if (out / MANIFEST).is_file():
            held = read_manifest(out)["config_hash"]
            if held == sweep.hash and not new:
                return out
            if not new:
                raise ValueError(f"{out} holds a sweep of another config (hash {held[:12]}, this "
                                 f"config {sweep.hash[:12]}): use another --out, or --new to "
                                 f"start a new directory beside it")
        elif not new:
            raise ValueError(f"{out} exists and is not a sweep directory (no {MANIFEST}): use "
                             f"another --out, or --new to start a new directory beside it")
        out = _next_free(out)
    (out / RESULTS).mkdir(parents=True, exist_ok=True)
    from ..results import provenance

    write_json(out / MANIFEST, {
        "format": MANIFEST_FORMAT, "config_hash": sweep.hash, "config": sweep.config,
        "source": sweep.source, "created": time.time(), "provenance": provenance(),
        "points": [p.to_dict() for p in sweep.points],
    })
    return out


@contextlib.contextmanager
def locked(out: Path):
    """Hold DIR/.lock for the duration (one running sweep per directory)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fh = open(out / LOCK, "a+")
    try:
        deadline = time.monotonic() + _LOCK_WAIT
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    fh.seek(0)
                    pid = fh.read().strip() or "?"
                    raise SweepError(f"another process (pid {pid}) is running the sweep in {out}")
                time.sleep(0.05)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        yield
    finally:
        fh.close()  # releases the lock


def _runner(out: Path) -> int | None:
    """Pid of the process running the sweep in ``out``, or None."""
    path = out / LOCK
    if fcntl is None or not path.exists():
        return None
    with open(path) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = fh.read().strip()
            return int(text) if text.isdigit() else -1
    return None


class Journal:
    """The append-only record of chunk events; one JSON object per line, fsync'ed."""

    def __init__(self, out: Path):
        self.path = Path(out) / JOURNAL

    def read(self, repair: bool = False) -> list[dict]:
        """Every complete record. A torn last line (kill -9 mid-write) is skipped, and cut off
        when ``repair`` so that the next record starts on a line of its own."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if repair and end < len(data):
            with open(self.path, "rb+") as fh:
                fh.truncate(end)
        records = []
        for line in data[:end].splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue  # a damaged line: the chunk is simply not trusted as done
        return records

    def append(self, record: dict) -> None:
        line = (json.dumps(record, allow_nan=False) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)


def latest(records: list[dict]) -> dict[str, dict]:
    """The last record of each chunk file."""
    last = {}
    for record in records:
        if isinstance(record, dict) and "chunk" in record:
            last[record["chunk"]] = record
    return last


def recover(out: Path, sweep: Sweep) -> tuple[dict[tuple[int, int], dict], list[str]]:
    """Chunks done and intact, keyed by (point, j); and the names of damaged ones.

    Verifies every done chunk against its record (size, SHA-256, plan), removes leftover
    temporary files and files not trusted as done, and warns (:class:`SweepWarning`) about a
    damaged chunk, which will be recomputed (and withdraws the sidecar of a complete sweep).
    """
    results = out / RESULTS
    results.mkdir(exist_ok=True)
    plan = {}
    for p in sweep.points:
        for j in range(p.n_chunks):
            first, chains = p.chunk_range(j)
            plan[chunk_name(p.index, first)] = (p.index, j, first, chains)
    done, damaged = {}, []
    journal = Journal(out)
    for name, record in latest(journal.read(repair=True)).items():
        if record.get("status") != "done":
            continue
        expected = plan.get(name)
        path = results / name
        problem = None
        if expected is None or (record.get("point"), record.get("index"), record.get("first_chain"),
                                record.get("chains")) != expected:
            problem = "does not match the plan"
        elif not path.is_file():
            problem = "is missing"
        elif file_digest(path) != (record.get("sha256"), record.get("bytes")):
            problem = "is damaged (SHA-256 or size differs from the journal)"
        if problem:
            damaged.append(name)
            journal.append({"chunk": name, "status": "damaged", "problem": problem,
                            "time": time.time()})
            warnings.warn(f"sweep {out}: chunk {name} {problem}; it will be recomputed",
                          SweepWarning, stacklevel=3)
            continue
        done[expected[:2]] = record
    if damaged:  # the sweep is no longer complete
        sidecar(results).unlink(missing_ok=True)
    keep = {plan_name for plan_name, key in plan.items() if key[:2] in done}
    for path in results.iterdir():
        if path.name not in keep:
            path.unlink()
    for path in out.iterdir():
        if path.name.startswith(TEMP_PREFIX):
            path.unlink()
    return done, damaged


def status(out) -> dict:
    """Progress of the sweep in ``out``, running or not, from its manifest and journal."""
    out = Path(out)
    manifest = read_manifest(out)
    run = manifest["config"]["run"]
    chunk = min(run["chunk"], run["chains"])
    per_point = -(-run["chains"] // chunk)
    last = latest(Journal(out).read())
    done = [r for r in last.values() if r.get("status") == "done"]
    failed = [r for r in last.values() if r.get("status") == "failed"]
    complete = sidecar(out / RESULTS).is_file()
    by_point = {p: {} for p in range(len(manifest["points"]))}
    for r in done:
        by_point[r["point"]][r["index"]] = r["escapes"]
    points_done = sum(final_chunks(e, per_point, run["escapes"]) is not None
                      for e in by_point.values())
    runner = _runner(out)
    return {
        "out": str(out), "config_hash": manifest["config_hash"],
        "state": "complete" if complete else ("running" if runner else "interrupted"),
        "runner_pid": runner,
        "points": len(manifest["points"]), "points_done": points_done,
        "chunks_done": len(done), "chunks_max": per_point * len(manifest["points"]),
        "adaptive": run["escapes"] is not None, "escapes_target": run["escapes"],
        "chains_done": sum(r["chains"] for r in done),
        "escapes_done": sum(r["escapes"] for r in done),
        "failed": {r["chunk"]: r.get("error", "") for r in failed},
        "last_update": max((r.get("time", 0.0) for r in last.values()), default=None),
    }


def format_status(info: dict) -> str:
    """``status()`` as a few human-readable lines."""
    running = f" (pid {info['runner_pid']})" if info["state"] == "running" else ""
    target = f" (target {info['escapes_target']} escapes each)" if info["adaptive"] else ""
    lines = [f"sweep {info['out']}: {info['state']}{running}",
             f"  config hash {info['config_hash'][:12]}",
             f"  points {info['points_done']}/{info['points']} complete{target}",
             f"  chunks {info['chunks_done']} done of at most {info['chunks_max']}",
             f"  chains {info['chains_done']}, escapes {info['escapes_done']}"]
    if info["last_update"]:
        lines.append(f"  last chunk event {time.time() - info['last_update']:.0f} s ago")
    for name, error in info["failed"].items():
        lines.append(f"  FAILED {name}: {error}")
    return "\n".join(lines)
