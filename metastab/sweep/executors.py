"""Where chunks run: in this process (embedded, the default) or on a dask.distributed cluster.

Both expose the same small interface to the driver: ``window`` (how many chunks may be in
flight), ``submit(task)``, ``cancel(task)``, ``next_done() -> (task, result, error)``,
``retry_note`` and ``close()``. A chunk that raises is retried ``retries`` times; the last error
is returned, never swallowed. A chunk lost with its scheduler is returned as an error too, and a
Dask cluster left without workers raises :class:`Stalled` instead of waiting forever.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

from ..engine.backends import DeviceUnavailable
from .chunks import ChunkResult, ChunkTask, run_chunk

__all__ = ["Embedded", "DaskExecutor", "Stalled", "ChunkLost", "parse_cluster", "transient"]

_CONNECT_TIMEOUT = "30s"
_WINDOW_REFRESH = 5.0  # seconds between looks at the number of Dask worker threads
_POLL = 0.05  # seconds between looks for a finished chunk
_WATCH = 1.0  # seconds between looks at the workers while waiting


class Stalled(Exception):
    """No worker (or no scheduler) for longer than the executor's ``worker_timeout``."""


class ChunkLost(RuntimeError):
    """A chunk's future vanished without a result (its scheduler went away)."""


def transient(error: BaseException) -> bool:
    """Whether a chunk's error may pass on a retry. A chunk is a pure function of its task, so
    a bad value (ValueError, TypeError, ArithmeticError) or a missing device recurs every time;
    the machine's errors (memory, files, a lost worker) may not."""
    return not isinstance(error, (ValueError, TypeError, ArithmeticError, DeviceUnavailable))


class Embedded:
    """Chunks run one after another in this process; each uses the kernels' own thread
    parallelism (``threads`` numba threads, default numba's setting). No scheduler to start."""

    name = "embedded"
    window = 1
    local = True  # chunks run on this machine, with its numba cache

    def __init__(self, threads: int | None = None, retries: int = 2):
        self.threads, self.retries = threads, retries
        self.pending: deque[ChunkTask] = deque()
        self.retry_note = f"each tried {retries + 1} times"

    def submit(self, task: ChunkTask) -> None:
        self.pending.append(dataclasses.replace(task, threads=self.threads))

    def cancel(self, task: ChunkTask) -> None:
        self.pending = deque(t for t in self.pending if t.name != task.name)

    def next_done(self) -> tuple[ChunkTask, ChunkResult | None, BaseException | None]:
        task = self.pending.popleft()
        for _ in range(self.retries + 1):
            try:
                return task, run_chunk(task), None
            except Exception as exc:  # reported by the driver with the chunk's name
                error = exc
        return task, None, error

    def close(self) -> None:
        self.pending.clear()


def _run_on_worker(task: ChunkTask) -> ChunkResult:
    """Run a chunk on a Dask worker with as many numba threads as the worker has Dask threads
    (unless the task says otherwise): chunks in one worker process run one at a time."""
    if task.threads is None:
        from distributed import get_worker

        task = dataclasses.replace(task, threads=get_worker().state.nthreads)
    return run_chunk(task)


def parse_cluster(spec: str) -> int:
    """``local:N`` -> N (the number of local worker processes)."""
    kind, _, count = str(spec).partition(":")
    if kind != "local" or not count.isdigit() or int(count) < 1:
        raise ValueError(f"--cluster must be local:N with N >= 1 workers, got {spec!r}")
    return int(count)


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise ModuleNotFoundError(
            "the Dask backend needs dask.distributed: pip install 'metastab[dask]'"
        ) from None
    return distributed


class DaskExecutor:
    """Chunks as futures on a dask.distributed cluster, gathered with ``as_completed``.

    ``scheduler`` is an address (``tcp://HOST:PORT``) or a scheduler file; ``cluster=N`` starts a
    local cluster of N single-threaded worker processes bound to 127.0.0.1 with no dashboard,
    each chunk using ``threads`` numba threads (default: the cores divided among the workers).
    On an external cluster a chunk uses ``threads`` numba threads, default the worker's number
    of Dask threads; chunks in one worker process run one at a time, so start workers with
    ``--nthreads`` = the cores each may use. Every task carries its point's seed and a key
    naming the sweep and the chunk, and is retried ``retries`` times (a killed worker's tasks
    are rescheduled by Dask, up to ``distributed.scheduler.allowed-failures`` times). When the
    cluster has no worker, or the scheduler cannot be reached, for ``worker_timeout`` seconds,
    :meth:`next_done` raises :class:`Stalled`; a future lost with its scheduler is returned as
    a :class:`ChunkLost` error.

    The local cluster opens no fixed port: the scheduler's address and its HTTP endpoint
    (which Dask always starts; there is no dashboard) take free ports of 127.0.0.1.
    """

    RETRY_NOTE = (
        "a chunk that raises is tried {tries} times, one whose workers die as often "
        "as Dask's distributed.scheduler.allowed-failures allows"
    )

    def __init__(
        self,
        *,
        scheduler: str | None = None,
        cluster: int | None = None,
        threads: int | None = None,
        retries: int = 2,
        key_prefix: str = "metastab",
        worker_timeout: float = 120.0,
    ):
        distributed = _import_distributed()
        self.cluster = None
        self.local = cluster is not None  # a scheduler's workers may be on other machines
        self.worker_timeout = worker_timeout
        self.retry_note = self.RETRY_NOTE.format(tries=retries + 1)
        if cluster is not None:
            self.name = f"dask local:{cluster}"
            if threads is None:
                threads = max(1, (os.cpu_count() or 1) // cluster)
            self.cluster = distributed.LocalCluster(
                n_workers=cluster,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                scheduler_port=0,
                dashboard_address=None,
                # no dashboard; the HTTP server Dask starts anyway takes a free port, not 8787
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            )
            self.client = distributed.Client(self.cluster)
        else:
            if scheduler is None:
                raise ValueError("DaskExecutor needs scheduler or cluster, got neither")
            self.name = f"dask {scheduler}"
            try:
                if Path(scheduler).is_file():
                    self.client = distributed.Client(
                        scheduler_file=scheduler, timeout=_CONNECT_TIMEOUT
                    )
                else:
                    self.client = distributed.Client(scheduler, timeout=_CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as exc:
                raise ValueError(
                    f"cannot reach the Dask scheduler at {scheduler!r}: {exc}"
                ) from None
        self.threads, self.retries, self.prefix = threads, retries, key_prefix
        self.futures: dict[str, Any] = {}
        self.cancelled: set[str] = set()  # keys the driver cancelled
        self.done = distributed.as_completed()
        self._window, self._window_at = 1, -_WINDOW_REFRESH

    @property
    def window(self) -> int:
        """Twice the cluster's worker threads (at least 2), so that no worker waits for work."""
        now = time.monotonic()
        if now - self._window_at > _WINDOW_REFRESH:
            self._window = max(2, 2 * self._threads())
            self._window_at = now
        return self._window

    def key(self, task: ChunkTask) -> str:
        return f"{self.prefix}-{task.name.removesuffix('.parquet')}"

    def submit(self, task: ChunkTask) -> None:
        task = dataclasses.replace(task, threads=self.threads)
        try:
            future = self.client.submit(
                _run_on_worker, task, key=self.key(task), retries=self.retries
            )
        except Exception as exc:  # a client closed after losing its scheduler
            raise Stalled(f"the Dask scheduler is gone ({type(exc).__name__}: {exc})") from None
        self.futures[future.key] = (task, future)
        self.done.add(future)

    def cancel(self, task: ChunkTask) -> None:
        entry = self.futures.pop(self.key(task), None)
        if entry is not None:
            self.cancelled.add(entry[1].key)
            entry[1].cancel()

    def _threads(self) -> int:
        """Worker threads of the cluster now; 0 when the scheduler cannot be asked."""
        if self.client.status != "running":  # reconnecting: asking would block
            return 0
        try:
            return sum(self.client.nthreads().values())
        except Exception:  # disconnected, closing, timed out: as good as no worker
            return 0

    def next_done(self) -> tuple[ChunkTask, ChunkResult | None, BaseException | None]:
        """The next finished chunk: its result or its error. A future that comes back
        cancelled without the driver having cancelled it was lost (scheduler gone)."""
        seen = time.monotonic()  # when a worker was last seen
        looked = seen
        while True:
            if self.done.has_ready():
                future = next(self.done)
                entry = self.futures.pop(future.key, None)
                if entry is None or future.key in self.cancelled:
                    self.cancelled.discard(future.key)
                    continue
                if not future.done():  # finished, then its result was lost with its worker
                    self.futures[future.key] = entry
                    self.done.add(future)  # Dask recomputes it when a worker is there
                elif future.cancelled():
                    return (
                        entry[0],
                        None,
                        ChunkLost(
                            "lost: its future was cancelled without a result (the Dask scheduler "
                            "or the client's connection to it went away)"
                        ),
                    )
                else:
                    try:
                        return entry[0], future.result(timeout=_WATCH), None
                    except Exception as exc:  # the task's own error, or KilledWorker
                        if future.status == "error" or not isinstance(exc, TimeoutError):
                            return entry[0], None, exc
                        self.futures[future.key] = entry  # lost since: as above
                        self.done.add(future)
            now = time.monotonic()
            if now - looked >= _WATCH:
                looked = now
                if self._threads() > 0:
                    seen = now
                elif now - seen > self.worker_timeout:
                    raise Stalled(f"no Dask worker for {self.worker_timeout:g} s")
            time.sleep(_POLL)

    def close(self) -> None:
        try:
            self.client.close(timeout=10)
        except Exception:  # a scheduler already gone: nothing left to close
            pass
        if self.cluster is not None:
            self.cluster.close(timeout=10)
