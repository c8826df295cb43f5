"""``metastab sweep``: run, resume or inspect a sweep from the command line."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ..engine.backends import DeviceUnavailable
from .driver import run_sweep
from .store import SweepError, format_status, status

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]

USAGE = (
    "metastab sweep CONFIG --out DIR [--new] [--cluster local:N | --scheduler ADDR] "
    "[--threads N] [--retries N] [--worker-timeout S] [--progress | --no-progress]\n"
    "       metastab sweep --status DIR"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="metastab sweep",
        usage=USAGE,
        description="Run a parameter sweep declared in a TOML file, in resumable chunks: the same "
        "command resumes an interrupted sweep (finished chunks are verified and kept).",
    )
    parser.add_argument("config", nargs="?", metavar="CONFIG", help="the sweep's TOML file")
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="output directory, required with CONFIG (resumed if it holds this sweep)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="run the chunks on this "
        "dask.distributed scheduler (tcp://HOST:PORT or a scheduler file)",
    )
    where.add_argument(
        "--cluster",
        metavar="local:N",
        help="start a local Dask cluster of N worker processes on 127.0.0.1 for this run",
    )
    parser.add_argument(
        "--status",
        metavar="DIR",
        help="report the progress of the sweep in DIR (running or interrupted) and exit",
    )
    parser.add_argument(
        "--new",
        action="store_true",
        help="if DIR holds a sweep (or other "
        "files), start a new directory DIR-1, DIR-2, ... beside it",
    )
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="numba threads per chunk "
        "(default: all cores embedded; the cores divided among the workers with "
        "--cluster; the worker's --nthreads with --scheduler)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        metavar="N",
        help="retries of a failing chunk before it is reported (default 2)",
    )
    parser.add_argument(
        "--worker-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="Dask only: give up, leaving the sweep resumable, after S seconds "
        "without any worker or scheduler (default 120)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress line on stderr (default: on when stderr is a terminal)",
    )
    return parser


def _print_status(out: str) -> int:
    try:
        print(format_status(status(out)), flush=True)
    except BrokenPipeError:  # e.g. `| head -1`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``metastab sweep``; returns the exit status.

    Bad input raises ValueError or FileNotFoundError with a one-line message; chunks that still
    fail after their retries, a stalled cluster, a sweep already running in DIR, or a directory
    that cannot be written print the reason and what to do, and return 1.

    Parameters
    ----------
    argv : sequence of str, optional
        The command line after ``metastab sweep`` (default None: ``sys.argv[1:]``), as
        ``CONFIG --out DIR [options]`` or ``--status DIR``.

    Returns
    -------
    status : int
        0 when the sweep finished (its summary printed), 1 when it could not (the reason on
        stderr), 130 when interrupted (the finished chunks kept).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from metastab.sweep import main
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "sweep.toml").write_text('''
    ... [model]
    ... kind = "softmax-chain"
    ... gamma = 0.1
    ... [grid]
    ... beta = [2.0, 3.0]
    ... [polytope]
    ... kind = "regular"
    ... k = 3
    ... [initial]
    ... kind = "in-cells"
    ... n = 6
    ... [event]
    ... kind = "leave-ball"
    ... radius = 0.3
    ... [run]
    ... chains = 8
    ... chunk = 4
    ... max_steps = 1000
    ... seed = 1
    ... ''')
    >>> main([str(folder / "sweep.toml"), "--out", str(folder / "out"), "--threads", "1"])
    /.../out: 2 points, 16 chains, 16 escapes, 0 absorbed in 4 chunks (4 run, 0 reused) in ...
    0
    >>> import shutil
    >>> shutil.rmtree(folder)
    """
    args = _parser().parse_args(argv)
    if args.status is not None:
        if args.config is not None or args.out is not None:
            raise ValueError("--status DIR takes no CONFIG and no --out")
        return _print_status(args.status)
    if args.config is None or args.out is None:
        raise ValueError("give a CONFIG and --out DIR (or --status DIR)")
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        summary = run_sweep(
            args.config,
            args.out,
            scheduler=args.scheduler,
            cluster=args.cluster,
            threads=args.threads,
            retries=args.retries,
            new=args.new,
            progress=progress,
            worker_timeout=args.worker_timeout,
        )
    except ModuleNotFoundError as exc:
        raise ValueError(str(exc)) from None
    except SweepError as exc:
        print(f"metastab sweep: {exc}", file=sys.stderr)
        return 1
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, DeviceUnavailable):
        raise  # a user's error: one line from the command
    except OSError as exc:  # disk full, read-only, permissions: what is written is consistent
        text = " ".join(str(exc).split())
        hint = (
            ""
            if "run the same command" in text
            else (": free space (or fix permissions) and run the same command again to resume")
        )
        print(
            f"metastab sweep: cannot write the sweep in {args.out}: {text}{hint}", file=sys.stderr
        )
        return 1
    except KeyboardInterrupt:
        print(
            "\nmetastab sweep: interrupted; the finished chunks are saved: run the same "
            "command to resume",
            file=sys.stderr,
        )
        return 130
    print(
        f"{summary.out}: {summary.points} points, {summary.chains} chains, {summary.escapes} "
        f"escapes, {summary.absorbed} absorbed in {summary.chunks} chunks "
        f"({summary.chunks_run} run, {summary.chunks_reused} reused) in "
        f"{summary.wall_seconds:.1f} s on {summary.backend}; rows in {summary.out / 'results'}"
    )
    return 0
