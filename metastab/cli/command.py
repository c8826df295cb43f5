"""The ``metastab`` command itself: the top-level parser, which gathers one sub-parser per command
(each built by its module's ``add_parser``), and :func:`main`, the console script, which
dispatches and applies the exit policy of :mod:`~metastab.cli.exits`.

The command modules import the shared flags of :mod:`~metastab.cli.parser` and the policy of
:mod:`~metastab.cli.exits`; only this module imports the command modules (on first use, so that
``--help`` and ``--version`` answer at once), so no module of the command imports one that
imports it.
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from typing import TYPE_CHECKING

from .. import __version__
from ..exceptions import ResolutionWarning
from .exits import PROG, USER_ERRORS, UsageError, one_line
from .parser import Parser, examples

if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["build_parser", "main"]

# the remedies that warnings name in the library's terms -> in the command's
_IN_CLI_TERMS = {ResolutionWarning.REMEDY: "--mode accelerated"}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command but ``sweep``, which has its own (:func:`metastab.sweep.main`).

    Returns
    -------
    parser : argparse.ArgumentParser
        One sub-parser per command; each sets ``handler``, the function that runs it.

    Examples
    --------
    >>> from metastab.cli import build_parser
    >>> args = build_parser().parse_args(["passage", "--beta", "8", "12", "--seed", "1"])
    >>> args.command, args.beta, args.seed
    ('passage', [8.0, 12.0], 1)
    """
    from . import bench, demo, dynamics, fit, study

    parser = Parser(
        prog=PROG,
        epilog=examples(
            "metastab demo",
            "metastab passage --beta 8 12 16 --seed 1 --out escape.csv",
            "metastab fit escape.csv",
            "metastab COMMAND --help",
        ),
        description="Self-attention dynamics as an interacting particle system: "
        "simulate the finite-beta chain SA_P, the softmax flow and hardmax, and measure "
        "first-passage (escape) times.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    dynamics.add_parsers(sub)
    demo.add_parser(sub)
    bench.add_parser(sub)
    fit.add_parser(sub)
    sub.add_parser(
        "sweep",
        add_help=False,
        help="run or resume a parameter sweep (embedded or on Dask); see metastab sweep --help",
    )
    study.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``metastab`` console script; returns the exit status.

    User errors raise SystemExit(2) after one line on stderr; ``--help``/``--version`` exit 0.
    Warnings are printed as one line on stderr, each once.

    Parameters
    ----------
    argv : list of str, optional
        The command line after ``metastab`` (default None: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        The exit status: 0 on success (1 where ``metastab sweep`` reports chunks that failed).

    Raises
    ------
    SystemExit
        With status 2 after a user error, 130 when interrupted, 0 after ``--help`` or
        ``--version``.

    Examples
    --------
    >>> from metastab.cli import main
    >>> main(["passage", "--beta", "2", "--chains", "4", "--max-steps", "100", "--seed", "1"])
    metastab passage: softmax-chain, gamma 0.1, regular-5, n 20, init shrunk:0.5, event ...
    seed 1
        beta    chains    events  absorbed  censored  sample_median_T    mean_T    wall_s
           2         4         4         0         0              7.5       8.2      ...
    T = first step at which the event holds; ...
    0
    >>> main(["passage", "--beta", "-1"])  # the error's line goes to stderr
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings():
        warnings.showwarning = functools.partial(_warn, shown=set())
        return _run(argv)


def _warn(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
    *,
    shown: set[str],
) -> None:
    """Warnings as one line on stderr, like errors (no source line), with the library's
    remedies in the command's terms; a line already in ``shown`` (this command's) is not
    repeated."""
    text = one_line(message)
    for api, flag in _IN_CLI_TERMS.items():
        text = text.replace(api, flag)
    if text not in shown:
        shown.add(text)
        sys.stderr.write(f"{PROG}: warning: {text}\n")


def _run(argv: list[str]) -> int:
    # the numba thread count is restored afterwards (numba is imported only by commands that run)
    saved = sys.modules["numba"].get_num_threads() if "numba" in sys.modules else None
    try:
        if argv[:1] == ["sweep"]:  # its own parser: metastab.sweep.command
            from ..sweep import main as sweep_main

            return sweep_main(argv[1:])
        args = build_parser().parse_args(argv)
        if args.threads is not None:
            import numba

            limit = numba.config.NUMBA_NUM_THREADS
            if not 1 <= args.threads <= limit:
                raise UsageError(f"threads must be an integer in [1, {limit}], got {args.threads}")
            numba.set_num_threads(args.threads)
        return args.handler(args, argv)
    except KeyboardInterrupt as exc:  # its text, if any, says what was saved
        sys.stderr.write(f"\n{PROG}: interrupted{f': {exc}' if str(exc) else ''}\n")
        raise SystemExit(130) from None
    except USER_ERRORS as exc:
        sys.stderr.write(f"{PROG}: error: {one_line(exc)}\n")
        raise SystemExit(2) from None
    finally:
        if "numba" in sys.modules:
            numba = sys.modules["numba"]
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS if saved is None else saved)
