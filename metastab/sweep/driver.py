"""Run a sweep: plan chunks, hand them to an executor, stream results to disk, resume.

The driver is the only writer of the output directory. For each finished chunk it writes the
parquet file (temporary file + rename) and then appends a journal record; a resume trusts only
chunks with both (see :mod:`.store`), so an interruption at any instant loses at most the chunks
in flight and never duplicates one.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numba
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..engine.backends import resolve
from ..results import provenance, sidecar
from .chunks import (
    ChunkTask,
    chunk_name,
    chunk_table,
    compile_chunk,
    final_chunks,
    write_atomic,
)
from .config import Sweep
from .executors import DaskExecutor, Embedded, Stalled, parse_cluster, transient
from .faults import checkpoint
from .store import (
    RESULTS,
    Journal,
    SweepError,
    SweepWarning,
    failures,
    latest,
    open_sweep,
    read_manifest,
    recover,
    verify,
    write_json,
)

if TYPE_CHECKING:
    import os

__all__ = ["run_sweep", "read_sweep", "SweepSummary", "SweepProgress"]

_SHOW_EVERY = 0.25  # seconds between updates of the progress line


@dataclass(frozen=True)
class SweepProgress:
    """Where a running sweep stands; passed to a ``progress`` callback after every chunk.

    Parameters
    ----------
    points : int
        The number of points of the sweep.
    points_done : int
        The points whose chunks are all done (or, with an escape target, decided).
    chunks_done : int
        The chunks done, in this call and before it.
    chunks_planned : int
        The chunks the sweep will have run; with an escape target, an estimate for the
        undecided points.
    chains_done, escapes : int
        The chains of the chunks done, and their escapes.
    elapsed : float
        Seconds since the call began.
    remaining : float
        Seconds left, estimated from this call's pace (NaN before the first chunk).

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.sweep import Sweep, run_sweep
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> seen = []
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = run_sweep(Sweep.from_dict(config), os.path.join(tmp, "sweep"),
    ...                   progress=seen.append)
    >>> [(p.chunks_done, p.points_done, p.chains_done) for p in seen]
    [(1, 0, 2), (2, 1, 4), (3, 1, 6), (4, 2, 8)]
    """

    points: int
    points_done: int
    chunks_done: int
    chunks_planned: int  # with an escape target: an estimate for the undecided points
    chains_done: int
    escapes: int
    elapsed: float
    remaining: float  # seconds, estimated from this run's pace (nan before the first chunk)


@dataclass(frozen=True)
class SweepSummary:
    """What a call to :func:`run_sweep` did.

    Parameters
    ----------
    out : Path
        The sweep's directory.
    points, chunks, chains, escapes : int
        The sweep's points, and the chunks, chains and escapes it keeps.
    chunks_run : int
        The chunks run in this call.
    chunks_reused : int
        The chunks found done and intact.
    chunks_discarded : int
        The chunks run ahead past an escape target, not kept.
    damaged : tuple of str
        The chunk files found damaged on resume, and recomputed.
    failed : dict of str to str
        The chunks that still failed after the retries, with their errors (default none).
    wall_seconds : float
        The call's duration.
    backend : str
        Where the chunks ran: ``"embedded"`` (this process) or a Dask cluster.
    absorbed : int
        The chains whose event went out of reach (:mod:`metastab.engine.absorption`).

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.sweep import Sweep, run_sweep
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     summary = run_sweep(Sweep.from_dict(config), os.path.join(tmp, "sweep"))
    >>> summary.complete, summary.points, summary.chunks, summary.chains, summary.escapes
    (True, 2, 4, 8, 4)
    >>> summary.chunks_run, summary.chunks_reused, summary.backend
    (4, 0, 'embedded')
    """

    out: Path
    points: int
    chunks: int
    chains: int
    escapes: int
    chunks_run: int  # in this call
    chunks_reused: int  # found done and intact
    chunks_discarded: int  # run ahead past an escape target, not kept
    damaged: tuple[str, ...]  # found damaged on resume, recomputed
    failed: dict = field(default_factory=dict)  # chunk -> error, after retries
    wall_seconds: float = 0.0
    backend: str = "embedded"
    absorbed: int = 0  # chains whose event went out of reach (metastab.engine.absorption)

    @property
    def complete(self) -> bool:
        return not self.failed


class _Plan:
    """Which chunks each point keeps and needs, given those done, in flight and failed.

    Chunks of a point are submitted in increasing order and at most once per run (a failed
    chunk waits for the next run), so a pointer per point and a cursor over the points make
    ``next`` cheap.
    """

    def __init__(self, sweep: Sweep, done: dict):
        self.points = sweep.points
        # point -> {j: escapes} of kept chunks
        self.escapes: dict[int, dict[int, Any]] = {p.index: {} for p in self.points}
        self.chains = dict.fromkeys(range(len(self.points)), 0)  # chains in kept chunks
        # point -> {j: absorbed chains} of kept chunks (0 in records written before)
        self.absorbed: dict[int, dict[int, int]] = {p.index: {} for p in self.points}
        # point -> chunks in flight
        self.flying: dict[int, set[int]] = {p.index: set() for p in self.points}
        self.in_flight = 0
        self.failed: dict[tuple[int, int], Any] = {}  # (point, j) -> (chunk name, error text)
        self.transient = False  # whether a failure might pass on a retry
        # point -> chunks kept, once known (it never changes afterwards)
        self.decided: dict[int, Any] = {}
        self.pointer = dict.fromkeys(range(len(self.points)), 0)  # lowest chunk not yet submitted
        self.cursor = 0  # every point before it has all its chunks submitted or is decided
        for (p, j), record in sorted(done.items()):
            self.add(p, j, record["escapes"], record["chains"], record.get("absorbed", 0))

    def add(self, p: int, j: int, escapes: int, chains: int, absorbed: int = 0) -> None:
        self.escapes[p][j] = escapes
        self.absorbed[p][j] = absorbed
        self.chains[p] += chains
        if p not in self.decided:
            point = self.points[p]
            final = final_chunks(self.escapes[p], point.n_chunks, point.escapes)
            if final is not None:
                self.decided[p] = final

    def drop(self, p: int, j: int, chains: int) -> None:
        del self.escapes[p][j]
        del self.absorbed[p][j]
        self.chains[p] -= chains

    def final(self, p: int) -> int | None:
        return self.decided.get(p)

    def wanted(self, p: int, window: int) -> int:
        """Chunks of point p worth having in flight: all that remain without a target; with one,
        enough to reach it at the escape rate seen so far (one before any data), at most
        ``window``. Chunks run ahead this way are discarded if the target is met before them."""
        point = self.points[p]
        if point.escapes is None:
            return point.n_chunks
        seen = sum(self.escapes[p].values())
        if seen >= point.escapes:
            return 0  # only gaps below the target remain, and they are already in flight
        if self.chains[p] == 0:
            return 1
        rate = max(seen, 1) / self.chains[p]
        return min(window, math.ceil((point.escapes - seen) / (rate * point.chunk)))

    def _unsubmitted(self, p: int) -> int:
        j, done = self.pointer[p], self.escapes[p]
        while j in done:
            j += 1
        self.pointer[p] = j
        return j

    def next(self, window: int) -> tuple[int, int] | None:
        """The next chunk to submit, lowest point first and lowest chunk first; it is then
        counted as in flight."""
        for p in range(self.cursor, len(self.points)):
            j = self._unsubmitted(p)
            if p in self.decided or j >= self.points[p].n_chunks:
                if p == self.cursor:
                    self.cursor += 1
                continue
            if len(self.flying[p]) < self.wanted(p, window):
                self.flying[p].add(j)
                self.in_flight += 1
                self.pointer[p] = j + 1
                return p, j
        return None

    def landed(self, p: int, j: int) -> None:
        """Chunk j of point p is no longer in flight (finished, failed or cancelled)."""
        self.flying[p].remove(j)
        self.in_flight -= 1

    def planned(self) -> int:
        """Chunks the sweep will keep: exact for decided and fixed-size points, estimated for
        points with an escape target."""
        total = 0
        for point in self.points:
            p = point.index
            if p in self.decided:
                total += self.decided[p]
            elif point.escapes is None:
                total += point.n_chunks
            else:
                total += min(
                    point.n_chunks, len(self.escapes[p]) + max(1, self.wanted(p, point.n_chunks))
                )
        return total


class _Reporter:
    """Progress after every finished chunk: a callback, or a line on stderr (throttled)."""

    def __init__(self, progress, plan: _Plan):
        self.callback = progress if callable(progress) else None
        self.show = progress is True
        self.plan = plan
        self.start = time.perf_counter()
        self.ran = 0
        self.shown = -_SHOW_EVERY

    def chunk_done(self) -> None:
        self.ran += 1
        self.report()

    def report(self, last: bool = False) -> None:
        elapsed = time.perf_counter() - self.start
        if self.callback is None and not (
            self.show and (last or elapsed - self.shown >= _SHOW_EVERY)
        ):
            return
        self.shown = elapsed
        plan = self.plan
        done = sum(len(e) for e in plan.escapes.values())
        planned = plan.planned()
        state = SweepProgress(
            points=len(plan.points),
            points_done=len(plan.decided),
            chunks_done=done,
            chunks_planned=planned,
            chains_done=sum(plan.chains.values()),
            escapes=sum(sum(e.values()) for e in plan.escapes.values()),
            elapsed=elapsed,
            remaining=elapsed / self.ran * (planned - done) if self.ran else math.nan,
        )
        if self.callback is not None:
            self.callback(state)
            return
        sys.stderr.write(
            f"\rpoints {state.points_done}/{state.points}  chunks {done}/{planned}  "
            f"chains {state.chains_done}  escapes {state.escapes}  "
            f"{elapsed:7.1f}s elapsed, ~{state.remaining:7.1f}s left " + ("\n" if last else "")
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.show:
            self.report(last=True)


def _check_backend(scheduler, cluster, threads, retries, worker_timeout) -> int | None:
    """Validate the backend options before any file is touched; the local cluster size."""

    def positive(value, minimum=1):
        return not isinstance(value, bool) and isinstance(value, int) and value >= minimum

    if scheduler is not None and cluster is not None:
        raise ValueError("give --scheduler or --cluster, not both")
    if threads is not None and not positive(threads):
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    if not positive(retries, 0):
        raise ValueError(f"retries must be an integer >= 0, got {retries!r}")
    if (
        isinstance(worker_timeout, bool)
        or not isinstance(worker_timeout, (int, float))
        or not 0 < worker_timeout < math.inf
    ):
        raise ValueError(f"worker_timeout must be a number of seconds > 0, got {worker_timeout!r}")
    if (
        scheduler is None
        and cluster is None
        and threads is not None
        and threads > numba.config.NUMBA_NUM_THREADS
    ):
        raise ValueError(
            f"threads={threads} is more than the {numba.config.NUMBA_NUM_THREADS} "
            f"numba threads of this machine (NUMBA_NUM_THREADS)"
        )
    if cluster is None or positive(cluster):
        return cluster
    return parse_cluster(cluster)


def _executor(scheduler, cluster, threads, retries, key_prefix, worker_timeout):
    if scheduler is None and cluster is None:
        return Embedded(threads=threads, retries=retries)
    return DaskExecutor(
        scheduler=scheduler,
        cluster=cluster,
        threads=threads,
        retries=retries,
        key_prefix=key_prefix,
        worker_timeout=worker_timeout,
    )


def run_sweep(
    sweep: Sweep | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    scheduler: str | None = None,
    cluster: str | None = None,
    threads: int | None = None,
    retries: int = 2,
    new: bool = False,
    progress: bool | Callable[[SweepProgress], None] = False,
    worker_timeout: float = 120.0,
) -> SweepSummary:
    """Run (or resume) ``sweep`` into the directory ``out``.

    Parameters
    ----------
    sweep : Sweep, or the path of a TOML config
        The sweep: its grid of points, model, event, initial configuration and run settings.
    out : str or os.PathLike
        Output directory: ``out/results/`` becomes a parquet dataset with one row per chain
        (``pandas.read_parquet(out / "results")``), ``out/results.json`` its provenance. A
        directory holding this sweep is resumed (finished chunks are verified and kept); one
        holding another config is refused unless ``new`` (see :func:`.store.prepare`).
    scheduler : str, optional
        A dask.distributed scheduler address or scheduler file: run the chunks there.
    cluster : "local:N" or int, optional
        Start a local Dask cluster of N worker processes on 127.0.0.1 for this run (from a
        script, call this under ``if __name__ == "__main__":``: the workers are spawned).
    threads : int, optional
        numba threads per chunk (embedded: default numba's setting; Dask: see
        :class:`.executors.DaskExecutor`).
    retries : int, optional
        How often a chunk that raises is retried before it is reported (on Dask, a chunk whose
        workers die is retried as often as ``distributed.scheduler.allowed-failures`` allows;
        default 2).
    new : bool, optional
        Start afresh in a directory that holds another config or a damaged one (default
        False: refused with a message).
    progress : bool or callable(SweepProgress), optional
        A progress line on stderr, or a callback after every chunk (default False: neither).
    worker_timeout : float, optional
        Dask only: give up when the cluster has had no worker (or the scheduler has been
        unreachable) for this many seconds; the unfinished chunks are reported and the
        directory is left resumable (default 120).

    Returns
    -------
    summary : SweepSummary
        What the call did: the chunks run, reused, discarded and failed.

    Raises
    ------
    SweepError
        If chunks still fail after ``retries`` or are lost with their workers (the others are
        finished and kept; the error carries the summary), if no Dask worker was left for
        ``worker_timeout`` seconds, or if another process runs the sweep in ``out``.
    ValueError
        For a bad config or option, or an ``out`` holding another config or other files.
    OSError
        If the directory cannot be written (disk full, permissions): what was written is
        consistent, and the same call resumes once the cause is fixed.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from metastab.sweep import Sweep, run_sweep
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     summary = run_sweep(Sweep.from_dict(config), os.path.join(tmp, "sweep"))
    ...     rows = pd.read_parquet(summary.out / "results")
    >>> summary.complete, len(rows), int(rows["censored"].sum())
    (True, 8, 4)
    """
    workers = _check_backend(scheduler, cluster, threads, retries, worker_timeout)
    if not isinstance(sweep, Sweep):
        sweep = Sweep.from_toml(sweep)
    if scheduler is None:  # the chunks run on this machine: its device must be there
        resolve(sweep.config["run"]["device"])
    tic = time.perf_counter()
    # The backend first: an unreachable scheduler or a missing Dask leaves no directory behind.
    executor = _executor(
        scheduler, workers, threads, retries, f"metastab-{sweep.hash[:16]}", worker_timeout
    )
    try:
        with open_sweep(out, sweep, new) as out:
            return _run(sweep, out, executor, progress, tic)
    finally:
        executor.close()


def _run(sweep: Sweep, out: Path, executor, progress, tic: float) -> SweepSummary:
    """The body of :func:`run_sweep`, with the directory locked and prepared."""
    done, damaged = recover(out, sweep)
    journal = Journal(out, sweep.hash)
    plan = _Plan(sweep, done)
    discarded = _discard_excess(plan, out, journal, executor)
    reused = sum(len(e) for e in plan.escapes.values())
    if progress is not False and executor.local:
        _compile_first(plan, executor.threads, say=progress is True)
    reporter = _Reporter(progress, plan)  # its clock starts now
    stalled = None
    try:
        discarded += _drive(plan, executor, out, journal, reporter, sweep.hash)
    except Stalled as exc:
        stalled = exc
    finally:
        reporter.close()
    summary = _summary(
        plan, out, reused, discarded, damaged, time.perf_counter() - tic, executor.name
    )
    if stalled is not None:
        flying = sorted(
            chunk_name(p, plan.points[p].chunk_range(j)[0])
            for p, js in plan.flying.items()
            for j in js
        )
        shown = ", ".join(flying[:4]) + (", ..." if len(flying) > 4 else "")
        raise SweepError(
            f"{stalled}; gave up with {len(flying)} chunk(s) unfinished ({shown}) "
            f"and {summary.chunks} saved: start workers (or leave out --scheduler) "
            f"and run the same command again to resume",
            summary,
        )
    if plan.failed:
        raise SweepError(_failures(plan, executor.retry_note), summary)
    write_json(sidecar(out / RESULTS), _sidecar(sweep, plan, summary))
    return summary


def _compile_first(plan: _Plan, threads: int | None, say: bool) -> None:
    """Compile the kernels of the first point still to run, before the progress clock starts (and
    say so first), so that the elapsed time and the estimate of the time left measure chunks, not
    the compiler: embedded chunks reuse the kernels, worker processes load them from numba's
    cache."""
    for point in plan.points:
        if point.index not in plan.decided:
            with contextlib.suppress(Exception):  # the chunks fail the same way, reported
                compile_chunk(ChunkTask.of(point, 0, threads), say)
            return


def _failures(plan: _Plan, retry_note: str) -> str:
    """The failed chunks in one line: each distinct error once, with its count."""
    shown = "; ".join(failures(dict(plan.failed.values())))
    fix = (
        "run again to retry"
        if plan.transient
        else "a retry cannot fix it: fix the config or the machine, then run the same command"
    )
    return f"{len(plan.failed)} chunk(s) failed ({retry_note}); the rest is saved, {fix}: {shown}"


def _drive(
    plan: _Plan, executor, out: Path, journal: Journal, reporter: _Reporter, config_hash: str
) -> int:
    """Keep the executor fed until every point is decided (or blocked by failures)."""
    discarded = 0
    while True:
        while plan.in_flight < executor.window and (nxt := plan.next(executor.window)):
            executor.submit(ChunkTask.of(plan.points[nxt[0]], nxt[1]))
        if plan.in_flight == 0:
            return discarded
        task, result, error = executor.next_done()
        p, j = task.point, task.index
        plan.landed(p, j)
        point = plan.points[p]
        if error is not None:
            text = "".join(traceback.format_exception_only(type(error), error)).strip()
            plan.failed[(p, j)] = (task.name, text)
            plan.transient |= transient(error)
            journal.append(_record(task, "failed", error=text))
            continue
        final = plan.final(p)
        if final is not None and j >= final:
            discarded += 1  # ran ahead of an escape target that is now met
            continue
        digest, size = write_atomic(
            chunk_table(point, task, result, config_hash), out / RESULTS / task.name
        )
        checkpoint("chunk:renamed")
        journal.append(_record(task, "done", result=result, sha256=digest, size=size))
        checkpoint("chunk:journaled")
        plan.add(p, j, result.escapes, task.chains, result.absorptions)
        if plan.final(p) is not None:
            discarded += _discard_excess(plan, out, journal, executor, p)
        reporter.chunk_done()


def _discard_excess(
    plan: _Plan, out: Path, journal: Journal, executor, only: int | None = None
) -> int:
    """Drop chunks past a met escape target: cancel those in flight, delete those written."""
    count = 0
    for point in plan.points if only is None else [plan.points[only]]:
        p = point.index
        final = plan.final(p)
        if final is None:
            continue
        for j in [j for j in plan.flying[p] if j >= final]:
            executor.cancel(ChunkTask.of(point, j))
            plan.landed(p, j)
        for j in [j for j in plan.escapes[p] if j >= final]:
            task = ChunkTask.of(point, j)
            journal.append(_record(task, "discarded"))
            checkpoint("discard:journaled")
            (out / RESULTS / task.name).unlink(missing_ok=True)
            plan.drop(p, j, task.chains)
            count += 1
    return count


def _record(task: ChunkTask, status: str, *, result=None, sha256=None, size=None, error=None):
    record = {
        "chunk": task.name,
        "status": status,
        "point": task.point,
        "index": task.index,
        "first_chain": task.first_chain,
        "chains": task.chains,
        "time": time.time(),
    }
    if result is not None:
        record.update(
            escapes=result.escapes,
            absorbed=result.absorptions,
            sha256=sha256,
            bytes=size,
            wall_seconds=round(result.wall_seconds, 6),
            threads=result.threads,
            host=result.host,
            pid=result.pid,
        )
    if error is not None:
        record["error"] = error
    return record


def _summary(plan: _Plan, out, reused, discarded, damaged, wall, backend) -> SweepSummary:
    return SweepSummary(
        out=out,
        points=len(plan.points),
        chunks=sum(len(e) for e in plan.escapes.values()),
        chains=sum(plan.chains.values()),
        escapes=sum(sum(e.values()) for e in plan.escapes.values()),
        absorbed=sum(sum(a.values()) for a in plan.absorbed.values()),
        chunks_run=sum(len(e) for e in plan.escapes.values()) - reused,
        chunks_reused=reused,
        chunks_discarded=discarded,
        damaged=tuple(damaged),
        failed=dict(plan.failed.values()),
        wall_seconds=wall,
        backend=backend,
    )


def _sidecar(sweep: Sweep, plan: _Plan, summary: SweepSummary) -> dict:
    points = []
    for point in sweep.points:
        p = point.index
        points.append(
            {
                **point.to_dict(),
                "chunks": len(plan.escapes[p]),
                "chains_run": plan.chains[p],
                "escapes_observed": sum(plan.escapes[p].values()),
                "absorbed_observed": sum(plan.absorbed[p].values()),
            }
        )
    return {
        "kind": "sweep",
        "config_hash": sweep.hash,
        "config": sweep.config,
        "files": sweep.files,
        "source": sweep.source,
        "rows": summary.chains,
        "escapes": summary.escapes,
        "absorbed": summary.absorbed,
        "points": points,
        "provenance": provenance(
            backend=summary.backend,
            wall_seconds=round(summary.wall_seconds, 3),
            chunks_run=summary.chunks_run,
            chunks_reused=summary.chunks_reused,
        ),
    }


def read_sweep(
    out: str | os.PathLike[str], *, partial: bool = False, digests: bool = True
) -> tuple[pd.DataFrame, dict]:
    """The rows of a sweep (one per chain, sorted by point and chain) and its provenance.

    Every chunk is checked against the journal before it is read: present, of the recorded
    size, with the recorded SHA-256 (unless ``digests=False``, for speed) and row count, and
    stamped with the sweep's config hash; a complete sweep must hold exactly the chunks its
    sidecar counts. A problem is an error naming the chunk. A sweep that has not finished is
    refused unless ``partial``: then every chunk done so far is read, the metadata is the
    manifest's, points may have fewer chains than planned, and a damaged chunk is left out
    with a :class:`SweepWarning`.

    Parameters
    ----------
    out : str or os.PathLike
        The sweep's directory.
    partial : bool, optional
        Read a sweep that has not finished (default False: refused).
    digests : bool, optional
        Check every chunk's SHA-256 (default True; False is faster).

    Returns
    -------
    rows : pandas.DataFrame
        One row per chain: point, chain, steps, censored, absorbed and the point's parameters.
    meta : dict
        The provenance sidecar of a complete sweep (the manifest with ``partial``).

    Raises
    ------
    ValueError
        Naming the chunk or file, when the sweep is not finished (without ``partial``) or a
        chunk is missing, damaged or of another config.

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.sweep import Sweep, read_sweep, run_sweep
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     summary = run_sweep(Sweep.from_dict(config), os.path.join(tmp, "sweep"))
    ...     rows, meta = read_sweep(summary.out)
    >>> rows[["point", "chain", "beta", "steps", "censored"]]
       point  chain  beta  steps  censored
    0      0      0   4.0     12     False
    1      0      1   4.0      7     False
    2      0      2   4.0      6     False
    3      0      3   4.0      5     False
    4      1      0  10.0     50      True
    5      1      1  10.0     50      True
    6      1      2  10.0     50      True
    7      1      3  10.0     50      True
    >>> meta["kind"], meta["rows"]
    ('sweep', 8)
    """
    out = Path(out)
    manifest = read_manifest(out)
    config_hash = manifest["config_hash"]
    records = {
        name: r
        for name, r in latest(Journal(out).read(), config_hash).items()
        if r.get("status") == "done"
    }
    side = sidecar(out / RESULTS)
    fix = f"run the sweep again with its config and --out {out} to recompute it"
    if side.is_file() and not partial:
        try:
            meta = json.loads(side.read_text())
        except ValueError:
            raise ValueError(f"{side} is damaged (not valid JSON): delete it and {fix}") from None
        if meta.get("config_hash") != config_hash:
            raise ValueError(
                f"{side} belongs to another config than {out / 'manifest.json'}: "
                f"delete it and {fix}"
            )
        run = manifest["config"]["run"]
        chunk = min(run["chunk"], run["chains"])
        names = sorted(
            chunk_name(p["point"], j * chunk) for p in meta["points"] for j in range(p["chunks"])
        )
        problems = [f"chunk {n} has no journal record" for n in names if n not in records]
        problems += verify(out, {n: records[n] for n in names if n in records}, digests)
        if problems:
            raise ValueError(
                f"{out}: {problems[0]}"
                + (f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else "")
                + f": {fix}"
            )
    elif partial:
        meta = manifest
        problems = verify(out, records, digests)
        for problem in problems:
            warnings.warn(f"sweep {out}: {problem}; left out", SweepWarning, stacklevel=2)
        bad = {problem.split()[1] for problem in problems}
        names = sorted(n for n in records if n not in bad)
    else:
        raise ValueError(
            f"the sweep in {out} is not complete: resume it, or read it with partial=True"
        )
    if not names:
        return pd.DataFrame(), meta
    tables = []
    for name in names:
        table = pq.read_table(out / RESULTS / name)
        stamp = table.schema.metadata or {}
        if (stamp.get(b"metastab.sweep.config"), stamp.get(b"metastab.sweep.chunk")) != (
            config_hash.encode(),
            name.encode(),
        ) or table.num_rows != records[name]["chains"]:
            raise ValueError(
                f"{out}: chunk {name} is not this sweep's chunk (stamp or row count "
                f"differs from the journal): {fix}"
            )
        if "absorbed" not in table.column_names:  # written before absorption was detected
            at = table.column_names.index("censored") + 1
            table = table.add_column(at, "absorbed", pa.array([False] * table.num_rows))
        if "seed" not in table.column_names:  # written before rows had the seed column
            seed = manifest["config"]["run"]["seed"]
            table = table.append_column("seed", pa.array([seed] * table.num_rows, pa.int64()))
        if "mode" not in table.column_names:  # written before rows had the mode column
            table = table.append_column("mode", pa.array(["exact"] * table.num_rows, pa.string()))
        tables.append(table.replace_schema_metadata(None))
    frame = pa.concat_tables(tables).to_pandas()
    return frame.sort_values(["point", "chain"], ignore_index=True), meta
