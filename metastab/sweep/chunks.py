"""Chunks: a range of chains of one grid point, run as a pure function, stored as one parquet file.

A chunk is (point, first_chain, chains); thanks to the per-chain streams its rows depend only on
the point's model, x0, event, max_steps, mode and seed, and on the chain indices, so a chunk can
run on any machine, in any order, any number of times, and always gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..engine import first_passage
from ..engine.progress import compile_notice
from ..registry import event_from_dict, model_from_dict
from ..rng import Seed
from .config import Point
from .faults import checkpoint

__all__ = [
    "ChunkTask",
    "ChunkResult",
    "run_chunk",
    "compile_chunk",
    "chunk_name",
    "final_chunks",
    "schema",
    "chunk_table",
    "write_atomic",
    "file_digest",
]

# One chunk at a time per process: each chunk already uses the process's numba threads, and
# numba's workqueue threading layer must not be entered by two Python threads at once.
_KERNEL_LOCK = threading.Lock()
_ARROW_TYPES = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}
_CHAIN_COLUMNS = [
    ("chain", pa.int64()),
    ("steps", pa.int64()),
    ("censored", pa.bool_()),
    ("absorbed", pa.bool_()),
]
TEMP_PREFIX = ".tmp-"  # pyarrow's dataset reader skips names starting with "." or "_"


def chunk_name(point: int, first_chain: int) -> str:
    """The parquet file of a chunk; zero padding keeps (point, chain) order in a listing."""
    return f"p{point:06d}-c{first_chain:010d}.parquet"


def final_chunks(escapes: dict[int, int], n_chunks: int, target: int | None) -> int | None:
    """How many chunks a point keeps, or None while undecided.

    Without a target, all ``n_chunks``. With a target of K escapes, the shortest prefix of
    chunks 0..m whose escapes add up to K (all of 0..m done), else all ``n_chunks``: a pure
    function of the chunks' (deterministic) escape counts, so the kept chunks do not depend on
    the order in which chunks finished, on how many ran ahead, or on interruptions.

    Parameters
    ----------
    escapes : dict of int to int
        The escapes of each chunk done, by chunk index.
    n_chunks : int
        The point's number of chunks.
    target : int or None
        The point's escape target; None for all chains.

    Returns
    -------
    kept : int or None
        The number of chunks kept, 0..m; None while chunks it depends on are not done.

    Examples
    --------
    >>> from metastab.sweep import final_chunks
    >>> final_chunks({0: 3, 1: 4}, 10, 5), final_chunks({0: 3, 2: 4}, 10, 5)
    (2, None)
    """
    if target is None:
        return n_chunks if len(escapes) == n_chunks else None
    total = 0
    for j in range(n_chunks):
        if j not in escapes:
            return None
        total += escapes[j]
        if total >= target:
            return j + 1
    return n_chunks


@dataclass(frozen=True, eq=False)
class ChunkTask:
    """Everything a worker needs to run one chunk, as plain data (dicts, ints, one array).

    Parameters
    ----------
    point : int
        The point's index in the sweep.
    index : int
        The chunk's index in the point.
    first_chain, chains : int
        The first chain of the chunk and the number of its chains.
    model, event : dict
        The model's and the event's ``to_dict``.
    x0 : ndarray, shape (n, d) or (chains, n, d)
        The initial configuration.
    max_steps : int
        The step budget of every chain.
    seed : dict
        The point's seed, as its ``to_dict``.
    threads : int, optional
        numba threads for the chunk (default None: numba's setting).
    device : str, optional
        The backend, ``"cpu"`` (default) or ``"cuda"``.
    mode : str, optional
        The first-passage mode, ``"exact"`` (default) or ``"accelerated"``.
    merge_tol : float, optional
        The merge tolerance of the accelerated mode (default None: its default).

    Examples
    --------
    >>> from metastab.sweep import ChunkTask, Sweep, run_chunk
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> task = ChunkTask.of(Sweep.from_dict(config).points[0], 1)
    >>> task.name, task.first_chain, task.chains, task.model["beta"]
    ('p000000-c0000000002.parquet', 2, 2, 4.0)
    """

    point: int
    index: int
    first_chain: int
    chains: int
    model: dict
    event: dict
    x0: np.ndarray = field(repr=False)
    max_steps: int
    seed: dict
    threads: int | None = None
    device: str = "cpu"
    mode: str = "exact"
    merge_tol: float | None = None

    @classmethod
    def of(cls, point: Point, j: int, threads: int | None = None) -> ChunkTask:
        first, chains = point.chunk_range(j)
        if point.starts is None:
            x0 = point.x0
        else:  # one start per chain, chain c's from the point's initial seed and c
            x0 = point.starts(chains=chains, first_chain=first)
        return cls(
            point.index,
            j,
            first,
            chains,
            point.model.to_dict(),
            point.event.to_dict(),
            x0,
            point.max_steps,
            point.seed.to_dict(),
            threads,
            point.device,
            point.mode,
            point.merge_tol,
        )

    @property
    def name(self) -> str:
        return chunk_name(self.point, self.first_chain)


@dataclass(frozen=True, eq=False)
class ChunkResult:
    """A chunk's per-chain outcome, and where and how fast it ran (provenance).

    Parameters
    ----------
    steps : ndarray of int, shape (chains,)
        Each chain's first-passage time, or the budget where censored.
    censored, absorbed : ndarray of bool, shape (chains,)
        Where the chain was censored, and where absorbed.
    wall_seconds : float
        The time the chunk took.
    threads : int
        The numba threads it ran on.
    host : str
        The machine's name.
    pid : int
        The process that ran it.

    Examples
    --------
    >>> from metastab.sweep import ChunkTask, Sweep, run_chunk
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> result = run_chunk(ChunkTask.of(Sweep.from_dict(config).points[0], 1))
    >>> result.steps.tolist(), result.escapes, result.absorptions
    ([6, 5], 2, 0)
    """

    steps: np.ndarray = field(repr=False)
    censored: np.ndarray = field(repr=False)
    absorbed: np.ndarray = field(repr=False)
    wall_seconds: float
    threads: int
    host: str
    pid: int

    @property
    def escapes(self) -> int:
        return int((~self.censored & ~self.absorbed).sum())

    @property
    def absorptions(self) -> int:
        return int(self.absorbed.sum())


def run_chunk(task: ChunkTask) -> ChunkResult:
    """Run the chains ``first_chain`` to ``first_chain + chains - 1`` of one point.

    Uses ``task.threads`` numba threads when given (restored afterwards), else the current
    setting; chunks in one process run one at a time.

    Parameters
    ----------
    task : ChunkTask
        The chunk.

    Returns
    -------
    result : ChunkResult
        Its chains' outcomes and provenance.

    Examples
    --------
    >>> from metastab.sweep import ChunkTask, Sweep, run_chunk
    >>> config = {"model": {"kind": "softmax-chain", "gamma": 0.1},
    ...           "grid": {"beta": [4.0, 10.0]}, "polytope": {"kind": "regular", "k": 5},
    ...           "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2, 2, 2]},
    ...           "event": {"kind": "leave-ball", "radius": 0.3},
    ...           "run": {"chains": 4, "chunk": 2, "max_steps": 50, "seed": 7}}
    >>> point = Sweep.from_dict(config).points[0]
    >>> [run_chunk(ChunkTask.of(point, j)).steps.tolist() for j in (0, 1)]
    [[12, 7], [6, 5]]
    """
    model = model_from_dict(task.model)
    event = event_from_dict(task.event)
    with _KERNEL_LOCK:
        before = numba.get_num_threads()
        if task.threads is not None:
            numba.set_num_threads(min(task.threads, numba.config.NUMBA_NUM_THREADS))
        try:
            tic = time.perf_counter()
            fp = first_passage(
                model,
                task.x0,
                event,
                max_steps=task.max_steps,
                chains=task.chains,
                rng=Seed.from_dict(task.seed),
                first_chain=task.first_chain,
                mode=task.mode,
                merge_tol=task.merge_tol,
                device=task.device,
            )
            wall = time.perf_counter() - tic
            threads = numba.get_num_threads()
        finally:
            numba.set_num_threads(before)
    host, pid = socket.gethostname(), os.getpid()
    return ChunkResult(fp.times, fp.censored, fp.absorbed, wall, threads, host, pid)


def compile_chunk(task: ChunkTask, say: bool) -> None:
    """Compile (or load from numba's cache) the kernels that :func:`run_chunk` runs for
    ``task``, by running one step of its chains and keeping nothing; with ``say``, a line on
    stderr first if they compile (:func:`~metastab.engine.progress.compile_notice`)."""
    with warnings.catch_warnings(), compile_notice(say):
        warnings.simplefilter("ignore")  # the chunk itself warns, if need be
        run_chunk(dataclasses.replace(task, max_steps=1))


def schema(point: Point) -> pa.Schema:
    """Arrow schema of a point's rows: point, chain, steps, censored, absorbed, then its
    constants."""
    fields = [pa.field("point", pa.int64()), *(pa.field(n, t) for n, t in _CHAIN_COLUMNS)]
    fields += [
        pa.field(name, _ARROW_TYPES[type(value)])
        for name, value in point.columns.items()
        if name != "point"
    ]
    return pa.schema(fields)


def chunk_table(point: Point, task: ChunkTask, result: ChunkResult, config_hash: str) -> pa.Table:
    """The rows of a chunk: one per chain, with the point's constant columns; the schema's
    metadata names the sweep's config hash and the chunk."""
    n = task.chains
    if result.steps.shape != (n,) or result.censored.shape != (n,):
        raise ValueError(f"chunk {task.name}: expected {n} chains, got {result.steps.shape}")
    steps = result.steps.astype(np.int64)
    if not np.array_equal(steps, result.steps):  # float64 step counts (accelerated mode)
        raise ValueError(f"chunk {task.name}: step counts that are not int64 integers")
    columns = {
        "point": np.full(n, point.index, np.int64),
        "chain": np.arange(task.first_chain, task.first_chain + n, dtype=np.int64),
        "steps": steps,
        "censored": result.censored.astype(bool),
        "absorbed": result.absorbed.astype(bool),
    }
    columns.update({k: [v] * n for k, v in point.columns.items() if k != "point"})
    stamp = {
        b"metastab.sweep.config": config_hash.encode(),
        b"metastab.sweep.chunk": task.name.encode(),
    }
    return pa.table(columns, schema=schema(point).with_metadata(stamp))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(table: pa.Table, path: Path) -> tuple[str, int]:
    """Write ``table`` to ``path`` through a temporary file and a rename; (sha256, bytes).

    A reader (or a resume after kill -9) sees either no file or the whole file.
    """
    tmp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{path.name}")
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb+") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
            size = fh.tell()
            os.fsync(fh.fileno())
        checkpoint("chunk:written")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # e.g. a full disk: no partial file is left
        raise
    _fsync_dir(path.parent)
    return digest, size


def file_digest(path: Path) -> tuple[str, int]:
    """(sha256, bytes) of a file."""
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), len(data)
