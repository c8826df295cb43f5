"""The exit policy of the ``metastab`` command, in one place.

A user's error (a flag, a file, a size) is one line ``metastab: error: ...`` on stderr and exit
status 2, never a traceback; warnings are one line ``metastab: warning: ...``; Ctrl-C is status
130; ``--help`` and ``--version`` exit 0.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["PROG", "UsageError", "USER_ERRORS", "one_line", "main"]

PROG = "metastab"
# Errors a user can cause through flags, files or sizes: reported in one line, exit status 2.
USER_ERRORS = (ValueError, TypeError, MemoryError, OSError, ArithmeticError)


class UsageError(ValueError):
    """A flag value that the command line itself rejects."""


def one_line(exc: BaseException | Warning | str) -> str:
    """The text of an error or warning on one line (its type's name when it has no text)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``metastab`` console script; returns the exit status.

    User errors raise SystemExit(2) after one line on stderr; ``--help``/``--version`` exit 0.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _warn
        return _run(argv)


def _warn(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings as one line on stderr, like errors (no source line)."""
    sys.stderr.write(f"{PROG}: warning: {one_line(message)}\n")


def _run(argv: list[str]) -> int:
    from .parser import build_parser

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
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{PROG}: interrupted\n")
        raise SystemExit(130) from None
    except USER_ERRORS as exc:
        sys.stderr.write(f"{PROG}: error: {one_line(exc)}\n")
        raise SystemExit(2) from None
    finally:
        if "numba" in sys.modules:
            numba = sys.modules["numba"]
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS if saved is None else saved)
