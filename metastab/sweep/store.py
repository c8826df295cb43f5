"""A sweep's output directory: manifest, journal, results dataset, lock, and what is done.

::

    DIR/.lock           held (flock) by the process running the sweep; holds its pid. Taken
                        before anything else is read or written in DIR
    DIR/manifest.json   the plan: canonical config, the SHA-256 of the files it names, their
                        hash, points and their seeds; written
                        (temporary file + rename) before anything else, so a directory either
                        holds a whole manifest or only leftovers of its creation
    DIR/journal.jsonl   append-only, one JSON record per chunk event (done, failed, discarded,
                        damaged), each stamped with the config hash; the last record of a chunk
                        wins
    DIR/results/        parquet dataset, one file per finished chunk (temporary file + rename),
                        each stamped with the config hash in its schema metadata
    DIR/results.json    provenance sidecar, written when the sweep is complete

Resume trusts a chunk only when its journal record says done for this config and the file's size
and SHA-256 match the record; a chunk file not trusted is removed and recomputed. Only files the
package writes are ever removed: anything else in ``results/`` is refused with a message.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..results import sidecar
from .chunks import TEMP_PREFIX, _fsync_dir, chunk_name, file_digest, final_chunks
from .config import Sweep
from .faults import checkpoint

if TYPE_CHECKING:
    from collections.abc import Iterator

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None

__all__ = [
    "SweepError",
    "SweepWarning",
    "open_sweep",
    "locked",
    "Journal",
    "recover",
    "status",
    "failures",
    "read_manifest",
    "verify",
]

MANIFEST, JOURNAL, RESULTS, LOCK = "manifest.json", "journal.jsonl", "results", ".lock"
MANIFEST_FORMAT = "metastab-sweep/1"
_LOCK_WAIT = 2.0  # seconds to wait for a lock held by a --status probe or a starting runner
CHUNK_FILE = re.compile(r"p\d{6}-c\d{10}\.parquet")  # the names of the files chunks are saved as


class SweepError(RuntimeError):
    """A sweep could not finish: failed chunks, another process on the directory, a damaged one.

    Also for a directory that holds something else than a sweep.

    Parameters
    ----------
    message : str
        What went wrong, and what to do.
    summary : SweepSummary, optional
        What the run did before it stopped (the chunks finished are kept); None when it did
        not start.

    Examples
    --------
    >>> from metastab.sweep import SweepError
    >>> try:
    ...     raise SweepError("2 chunks failed")
    ... except SweepError as exc:
    ...     print(exc, exc.summary)
    2 chunks failed None
    """

    def __init__(self, message: str, summary=None):
        super().__init__(message)
        self.summary = summary


class SweepWarning(RuntimeWarning):
    """Resume found a damaged or missing chunk file and will recompute it.

    Examples
    --------
    >>> import warnings
    >>> from metastab.sweep import SweepWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("p000000-c0000000000.parquet is damaged: recomputed", SweepWarning)
    >>> caught[0].category.__name__, issubclass(SweepWarning, RuntimeWarning)
    ('SweepWarning', True)
    """


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` through a temporary file, fsync and a rename (the file is whole or old)."""
    tmp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{path.name}")
    try:
        with open(tmp, "w") as fh:
            fh.write(json.dumps(data, indent=1, allow_nan=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        checkpoint(f"json:{path.name}")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def read_manifest(out: str | os.PathLike[str]) -> dict:
    """The manifest of the sweep in ``out``; a damaged one is reported with how to recover."""
    path = Path(out) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no sweep in {str(out)!r} (no {MANIFEST})")
    try:
        manifest = json.loads(path.read_text())
        if (
            not isinstance(manifest, dict)
            or not isinstance(manifest.get("config"), dict)
            or not isinstance(manifest.get("config_hash"), str)
        ):
            raise ValueError("not a sweep manifest")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{path} is damaged ({' '.join(str(exc).split())}): run the sweep again "
            f"with its config and --out {out} to rewrite it (the journal says "
            f"which config it is; finished chunks are kept)"
        ) from None
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"{path}: unknown manifest format {manifest.get('format')!r}")
    return manifest


def _next_free(out: Path) -> Path:
    i = 1
    while out.with_name(f"{out.name}-{i}").exists():
        i += 1
    return out.with_name(f"{out.name}-{i}")


def _leftovers_only(out: Path) -> bool:
    """Whether ``out`` holds nothing but what an interrupted start leaves: the lock, temporary
    files, an empty ``results/`` (with temporary files at most)."""
    for path in out.iterdir():
        if path.name == LOCK or (path.name.startswith(TEMP_PREFIX) and path.is_file()):
            continue
        if (
            path.name == RESULTS
            and path.is_dir()
            and all(q.name.startswith(TEMP_PREFIX) and q.is_file() for q in path.iterdir())
        ):
            continue
        return False
    return True


def config_diff(old: dict, new: dict, prefix: str = "") -> list[str]:
    """The keys in which two normalised configs differ, as ``key: old -> new``.

    >>> config_diff({"run": {"seed": 1, "chains": 5}}, {"run": {"seed": 2, "chains": 5}})
    ['run.seed: 1 -> 2']
    """
    if isinstance(old, dict) and isinstance(new, dict):
        if prefix == "" and "grid" in old and "grid" in new:  # [name, values] pairs
            old = {**old, "grid": dict(map(tuple, old["grid"]))}
            new = {**new, "grid": dict(map(tuple, new["grid"]))}
        out = []
        for key in sorted(set(old) | set(new), key=str):
            where = f"{prefix}{key}"
            if key not in old:
                out.append(f"{where}: (none) -> {json.dumps(new[key])}")
            elif key not in new:
                out.append(f"{where}: {json.dumps(old[key])} -> (none)")
            else:
                out += config_diff(old[key], new[key], where + ".")
        return out
    if old == new:
        return []
    return [f"{prefix.removesuffix('.')}: {json.dumps(old)} -> {json.dumps(new)}"]


def files_diff(old: list[dict] | None, new: list[dict]) -> list[str]:
    """The files a sweep names whose contents are not those recorded in ``old`` (a manifest's
    ``files``; None: a manifest written before files were recorded).

    >>> old = [{"key": "[initial] path", "path": "x0.npy", "sha256": "ab" * 32}]
    >>> [line[:62] for line in files_diff(old, [{**old[0], "sha256": "cd" * 32}])]
    ["file 'x0.npy' ([initial] path) changed since the sweep read it"]
    """
    if old is None:
        return [
            f"file {f['path']!r} ({f['key']}): the directory does not record the contents it read"
            for f in new
        ]
    before = {f["path"]: f["sha256"] for f in old}
    return [
        f"file {f['path']!r} ({f['key']}) changed since the sweep read it (sha256 "
        f"{before[f['path']][:12]} -> {f['sha256'][:12]}): restore it to resume"
        for f in new
        if f["path"] in before and before[f["path"]] != f["sha256"]
    ]


def _describe_other(out: Path, sweep: Sweep) -> str | None:
    """Why ``out`` cannot hold ``sweep`` (None when it can): another config, or not a sweep."""
    if (out / MANIFEST).is_file():
        try:
            manifest = read_manifest(out)
        except ValueError:
            return _damaged_manifest(out, sweep)
        if manifest["config_hash"] == sweep.hash:
            return None
        diff = files_diff(manifest.get("files"), sweep.files)
        diff += config_diff(manifest["config"], sweep.config)
        return (
            f"{out} holds a sweep of another config ({'; '.join(diff[:5]) or 'hash differs'}"
            f"{'; ...' if len(diff) > 5 else ''})"
        )
    if _leftovers_only(out):
        return None
    return f"{out} exists and is not a sweep directory (no {MANIFEST})"


def _damaged_manifest(out: Path, sweep: Sweep) -> str | None:
    """A damaged manifest may be rewritten when every journal record is this config's."""
    stamps = {r.get("config") for r in Journal(out).read() if isinstance(r, dict)}
    if stamps <= {sweep.hash}:
        warnings.warn(
            f"sweep {out}: {MANIFEST} was damaged; rewritten from the config (the "
            f"journal's records are this config's)",
            SweepWarning,
            stacklevel=4,
        )
        return None
    other = ", ".join(sorted(str(s)[:12] for s in stamps - {sweep.hash}))
    return (
        f"{out / MANIFEST} is damaged and its journal belongs to another config (hash "
        f"{other}): run that config with --out {out} to rewrite it"
    )


def _manifest(sweep: Sweep) -> dict:
    from ..results import provenance

    return {
        "format": MANIFEST_FORMAT,
        "config_hash": sweep.hash,
        "config": sweep.config,
        "files": sweep.files,
        "source": sweep.source,
        "created": time.time(),
        "provenance": provenance(),
        "points": [p.to_dict() for p in sweep.points],
    }


def _remove_start(out: Path) -> None:
    """Undo an interrupted start in a directory this process created: only what it wrote."""
    for path in [out / RESULTS, out]:
        if path.is_dir():
            for q in path.iterdir():
                if q.name == LOCK or (q.name.startswith(TEMP_PREFIX) and q.is_file()):
                    q.unlink(missing_ok=True)
    for path in [out / RESULTS, out]:
        with contextlib.suppress(OSError):  # absent, or not empty: then it stays
            path.rmdir()


@contextlib.contextmanager
def open_sweep(out: str | os.PathLike[str], sweep: Sweep, new: bool = False) -> Iterator[Path]:
    """Lock the directory for ``sweep`` and yield it, prepared; released on exit.

    The lock is taken before anything in the directory is read or written, so two runs (of the
    same or different configs) never interleave. An existing directory is resumed when its
    manifest holds the same config hash; another config, or a non-empty directory that is not a
    sweep, is refused (naming the keys that differ) unless ``new``, which starts the sweep in
    the first free ``DIR-1``, ``DIR-2``, ... Leftovers of an interrupted start (a lock, a
    temporary manifest, an empty ``results/``) count as empty. If the start itself fails (disk
    full), a directory this call created is removed again.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file, not a directory")
    while True:
        created = not out.exists()
        out.mkdir(parents=True, exist_ok=True)
        checkpoint("start:mkdir")
        ready = False
        try:
            with locked(out):
                problem = _describe_other(out, sweep)
                if problem is None:
                    checkpoint("start:locked")
                    if not (out / MANIFEST).is_file() or read_manifest_ok(out) is False:
                        write_json(out / MANIFEST, _manifest(sweep))
                    checkpoint("start:manifest")
                    (out / RESULTS).mkdir(exist_ok=True)
                    ready = True
                    yield out
                    return
        except OSError as exc:
            if ready:
                raise
            if created:
                _remove_start(out)
            raise OSError(
                exc.errno,
                f"cannot start the sweep in {out}: {exc.strerror or exc}; "
                f"free space (or fix permissions) and run the same command "
                f"again",
            ) from None
        except BaseException:
            if created and not ready:
                _remove_start(out)
            raise
        if not new:
            raise ValueError(
                f"{problem}: use another --out, or --new to start a new directory beside it"
            )
        out = _next_free(out)


def read_manifest_ok(out: Path) -> bool:
    """Whether ``out``'s manifest reads (False: damaged, to be rewritten)."""
    try:
        read_manifest(out)
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold DIR/.lock for the duration (one running sweep per directory)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    while True:
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
                        raise SweepError(
                            f"another process (pid {pid}) is running the sweep in {out}"
                        ) from None
                    time.sleep(0.05)
            with contextlib.suppress(FileNotFoundError):
                if os.stat(out / LOCK).st_ino == os.fstat(fh.fileno()).st_ino:
                    break  # the lock file is still the directory's (not removed meanwhile)
        except BaseException:
            fh.close()
            raise
        fh.close()
        if not out.is_dir():
            raise SweepError(f"{out} was removed while waiting for its lock")
    try:
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
    """The append-only record of chunk events; one JSON object per line, fsync'ed, each stamped
    with the config hash (``config``) when one is given."""

    def __init__(self, out: Path, config_hash: str | None = None):
        self.path = Path(out) / JOURNAL
        self.config_hash = config_hash

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
                record = json.loads(line)
            except ValueError:
                continue  # a damaged line: the chunk is simply not trusted as done
            if isinstance(record, dict):
                records.append(record)
        return records

    def append(self, record: dict) -> None:
        if self.config_hash is not None:
            record = {**record, "config": self.config_hash}
        line = (json.dumps(record, allow_nan=False) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, line)
            if written != len(line):  # a full disk: the torn line is cut off on resume
                raise OSError(errno.ENOSPC, f"short write to {self.path}")
            os.fsync(fd)
        finally:
            os.close(fd)


def latest(records: list[dict], config_hash: str | None = None) -> dict[str, dict]:
    """The last record of each chunk file (of the config ``config_hash`` only, when given:
    records of another config are never trusted)."""
    last = {}
    for record in records:
        if "chunk" in record and (config_hash is None or record.get("config") == config_hash):
            last[record["chunk"]] = record
    return last


def stray_files(results: Path) -> list[str]:
    """Entries of ``results/`` the package did not write (neither chunk files nor its
    temporary files)."""
    return sorted(
        p.name + ("/" if p.is_dir() else "")
        for p in results.iterdir()
        if not (p.is_file() and (CHUNK_FILE.fullmatch(p.name) or p.name.startswith(TEMP_PREFIX)))
    )


def _refuse_strays(results: Path) -> None:
    stray = stray_files(results)
    if stray:
        shown = ", ".join(stray[:3]) + (f" and {len(stray) - 3} more" if len(stray) > 3 else "")
        raise SweepError(
            f"{results} holds {shown}, not written by metastab: move it out of "
            f"{results} (that folder is the sweep's dataset) and run again"
        )


def recover(out: Path, sweep: Sweep) -> tuple[dict[tuple[int, int], dict], list[str]]:
    """Chunks done and intact, keyed by (point, j); and the names of damaged ones.

    Verifies every done chunk against its record (config hash, size, SHA-256, plan), removes
    leftover temporary files and chunk files not trusted as done, and warns
    (:class:`SweepWarning`) about a damaged chunk, which will be recomputed (and withdraws the
    sidecar of a complete sweep). Files the package did not write are refused, never removed.
    """
    results = out / RESULTS
    results.mkdir(exist_ok=True)
    _refuse_strays(results)
    plan = {}
    for p in sweep.points:
        for j in range(p.n_chunks):
            first, chains = p.chunk_range(j)
            plan[chunk_name(p.index, first)] = (p.index, j, first, chains)
    done, damaged = {}, []
    journal = Journal(out, sweep.hash)
    for name, record in latest(journal.read(repair=True), sweep.hash).items():
        if record.get("status") != "done":
            continue
        expected = plan.get(name)
        path = results / name
        problem = None
        if (
            expected is None
            or (
                record.get("point"),
                record.get("index"),
                record.get("first_chain"),
                record.get("chains"),
            )
            != expected
        ):
            problem = "does not match the plan"
        elif not path.is_file():
            problem = "is missing"
        elif file_digest(path) != (record.get("sha256"), record.get("bytes")):
            problem = "is damaged (SHA-256 or size differs from the journal)"
        if problem or expected is None:  # (a chunk not in the plan always has a problem)
            damaged.append(name)
            journal.append(
                {"chunk": name, "status": "damaged", "problem": problem, "time": time.time()}
            )
            warnings.warn(
                f"sweep {out}: chunk {name} {problem}; it will be recomputed",
                SweepWarning,
                stacklevel=3,
            )
            continue
        done[expected[:2]] = record
    if damaged:  # the sweep is no longer complete
        sidecar(results).unlink(missing_ok=True)
    keep = {plan_name for plan_name, key in plan.items() if key[:2] in done}
    for path in results.iterdir():
        if path.name not in keep:  # a chunk file not trusted, or a temporary file: ours
            path.unlink()
    for path in out.iterdir():
        if path.name.startswith(TEMP_PREFIX) and path.is_file():
            path.unlink()
    return done, damaged


def verify(
    out: str | os.PathLike[str], records: dict[str, dict], digests: bool = True
) -> list[str]:
    """Problems of the chunk files named by ``records`` (name -> done record): missing, size
    or (with ``digests``) SHA-256 differing from the journal. Empty when all are intact."""
    problems = []
    for name, record in records.items():
        path = Path(out) / RESULTS / name
        if not path.is_file():
            problems.append(f"chunk {name} is missing")
        elif path.stat().st_size != record.get("bytes"):
            problems.append(
                f"chunk {name} has {path.stat().st_size} bytes, the journal {record.get('bytes')}"
            )
        elif digests and file_digest(path)[0] != record.get("sha256"):
            problems.append(f"chunk {name} is damaged (SHA-256 differs from the journal)")
    return problems


def status(out: str | os.PathLike[str]) -> dict:
    """Progress of the sweep in ``out``, running or not, from its manifest and journal.

    The chunk files' sizes are checked against the journal (state ``damaged`` if one differs).

    Parameters
    ----------
    out : str or os.PathLike
        The sweep's directory.

    Returns
    -------
    info : dict
        ``state`` (running, complete, interrupted or damaged), ``runner_pid``, the counts of
        points, chunks, chains and escapes done, the failed chunks with their errors, the
        damaged files (``problems``) and the time of the last chunk event.

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.sweep import Sweep, run_sweep, status
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     info = status(run_sweep(Sweep.from_dict(config), os.path.join(tmp, "sweep")).out)
    >>> info["state"], info["points_done"], info["chunks_done"], info["escapes_done"]
    ('complete', 2, 4, 4)
    """
    out = Path(out)
    manifest = read_manifest(out)
    run = manifest["config"]["run"]
    chunk = min(run["chunk"], run["chains"])
    per_point = -(-run["chains"] // chunk)
    last = latest(Journal(out).read(), manifest["config_hash"])
    done = [r for r in last.values() if r.get("status") == "done"]
    failed = [r for r in last.values() if r.get("status") == "failed"]
    complete = sidecar(out / RESULTS).is_file()
    by_point: dict[int, dict[int, Any]] = {p: {} for p in range(len(manifest["points"]))}
    for r in done:
        by_point[r["point"]][r["index"]] = r["escapes"]
    points_done = sum(
        final_chunks(e, per_point, run["escapes"]) is not None for e in by_point.values()
    )
    runner = _runner(out)
    problems = [] if runner else verify(out, {r["chunk"]: r for r in done}, digests=False)
    state = (
        "running"
        if runner
        else ("damaged" if problems else "complete" if complete else "interrupted")
    )
    return {
        "out": str(out),
        "config_hash": manifest["config_hash"],
        "state": state,
        "runner_pid": runner,
        "points": len(manifest["points"]),
        "points_done": points_done,
        "chunks_done": len(done),
        "chunks_max": per_point * len(manifest["points"]),
        "adaptive": run["escapes"] is not None,
        "escapes_target": run["escapes"],
        "chains_done": sum(r["chains"] for r in done),
        "escapes_done": sum(r["escapes"] for r in done),
        "failed": {r["chunk"]: r.get("error", "") for r in failed},
        "problems": problems,
        "last_update": max((r.get("time", 0.0) for r in last.values()), default=None),
    }


def failures(failed: dict[str, str]) -> list[str]:
    """Failed chunks (name -> error) with each distinct error once: ``FIRST and K more: ERROR``.

    >>> failures({"p1": "ValueError: x", "p0": "ValueError: x", "p2": "OSError: y"})
    ['p0 and 1 more: ValueError: x', 'p2: OSError: y']
    """
    chunks: dict[str, list[str]] = {}
    for name, error in sorted(failed.items()):
        chunks.setdefault(error, []).append(name)
    return [
        f"{names[0]}{f' and {len(names) - 1} more' if len(names) > 1 else ''}: {error}"
        for error, names in chunks.items()
    ]


def format_status(info: dict) -> str:
    """:func:`status` as a few human-readable lines.

    Parameters
    ----------
    info : dict
        What :func:`status` returns.

    Returns
    -------
    text : str
        The lines, without a final newline.

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.sweep import Sweep, format_status, run_sweep, status
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     info = status(run_sweep(Sweep.from_dict(config), os.path.join(tmp, "sweep")).out)
    >>> print(format_status(info).splitlines()[2:5])
    ['  points 2/2 complete', '  chunks 4 done of at most 4', '  chains 8, escapes 4']
    """
    running = f" (pid {info['runner_pid']})" if info["state"] == "running" else ""
    target = f" (target {info['escapes_target']} escapes each)" if info["adaptive"] else ""
    lines = [
        f"sweep {info['out']}: {info['state']}{running}",
        f"  config hash {info['config_hash'][:12]}",
        f"  points {info['points_done']}/{info['points']} complete{target}",
        f"  chunks {info['chunks_done']} done of at most {info['chunks_max']}",
        f"  chains {info['chains_done']}, escapes {info['escapes_done']}",
    ]
    if info["last_update"]:
        lines.append(f"  last chunk event {time.time() - info['last_update']:.0f} s ago")
    lines += [f"  FAILED {line}" for line in failures(info["failed"])]
    for problem in info.get("problems", []):
        lines.append(f"  DAMAGED {problem}: run the sweep again to recompute it")
    return "\n".join(lines)
