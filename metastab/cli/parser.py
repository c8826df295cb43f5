"""The flags and value types that the commands of ``metastab`` share, and the parser class that
reports their errors in one line. The top-level parser, which gathers the commands' sub-parsers,
is :func:`metastab.cli.command.build_parser`."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from .exits import UsageError

if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = [
    "Parser",
    "examples",
    "whole",
    "max_steps",
    "add_common",
    "add_device",
    "add_out",
]


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (no usage block) and examples kept as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def examples(*lines: str) -> str:
    """An ``examples:`` epilog, one command a line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def _number(text: str, what: str) -> int | float:
    """``text`` as an int when it is written as one, else as a float."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def _integral(value: float) -> bool:
    return math.isfinite(value) and value == math.floor(value)


def whole(text: str) -> int:
    """An integer flag: digits, or an integral number such as 1e6."""
    value = _number(text, "an integer")
    if not _integral(value):
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    return int(value)


def max_steps(text: str) -> int | float:
    """``--max-steps``: an integer, or an integral float such as 1e30 (``--mode accelerated``
    counts steps in float64; the exact mode refuses a float)."""
    value = _number(text, "a number")
    return int(value) if _integral(value) and value < 2**63 else value


def add_common(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--threads`` and ``--progress``, shared by the commands that run kernels."""
    p.add_argument(
        "--threads",
        type=int,
        metavar="T",
        help="numba threads (default: all cores; results do not depend on it)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: on when stderr is a terminal)",
    )


def add_device(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--device``: where the chains run (metastab.engine.backends)."""
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cpu (default) or cuda: an NVIDIA GPU through numba-cuda (pip install "
        "'metastab[cuda]'); the same chains, the same streams",
    )


def add_out(
    p: argparse.ArgumentParser | argparse._ArgumentGroup,
    what: str = "a tidy .csv or .parquet table and a FILE.json provenance sidecar",
) -> None:
    """``--out FILE``, ``--overwrite`` and ``--mkdir``."""
    p.add_argument("--out", metavar="FILE", help=f"write {what}; checked before the run starts")
    p.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out FILE (default: refuse)"
    )
    p.add_argument(
        "--mkdir",
        action="store_true",
        help="create the missing folders of --out FILE (default: refuse, so that a mistyped "
        "path creates nothing)",
    )
