"""Sweeps: parameter grids run as reproducible, resumable chunks, in this process or on Dask.

A sweep (:class:`Sweep`, from a TOML file or a dict) is a grid of points, each with a number of
chains or a target number of escapes. :func:`run_sweep` splits each point into chunks of chains;
a chunk is a pure function of (point, seed, chain range), runs anywhere, and is stored as one
parquet file, written atomically and recorded in a journal, so that a sweep interrupted at any
moment resumes without redoing, losing or duplicating work and ends bit-identical to an
uninterrupted run, embedded or on a dask.distributed cluster. :func:`read_sweep` returns the
rows; :func:`status` reports on a running or interrupted sweep; :func:`main` is
``metastab sweep``.

Layout: ``config`` (TOML -> points), ``chunks`` (the pure chunk function and its file),
``store`` (output directory, journal, resume checks), ``executors`` (embedded, Dask),
``driver`` (planning and the run loop), ``command`` (argparse), ``faults`` (the
fault-injection hook of the crash-safety tests).
"""

from .chunks import ChunkResult, ChunkTask, final_chunks, run_chunk
from .command import main
from .config import Point, Sweep
from .driver import SweepProgress, SweepSummary, read_sweep, run_sweep
from .store import SweepError, SweepWarning, format_status, status

__all__ = [
    "ChunkResult",
    "ChunkTask",
    "Point",
    "Sweep",
    "SweepError",
    "SweepProgress",
    "SweepSummary",
    "SweepWarning",
    "final_chunks",
    "format_status",
    "main",
    "read_sweep",
    "run_chunk",
    "run_sweep",
    "status",
]
