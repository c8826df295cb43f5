"""What the commands print and write: tables on stdout, the ``--out`` table and its checks."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .exits import UsageError

if TYPE_CHECKING:
    from ..rng import Seed

__all__ = ["out_path", "seed", "progress", "table", "Rows", "steps_format"]


def out_path(out: str | None, overwrite: bool = False, mkdir: bool = False) -> Path | None:
    """The ``--out`` path, checked before anything is computed: a .csv or .parquet name in a
    folder that exists (or, with ``--mkdir``, can be created: it is, at the end), which can be
    written, and not an existing file unless ``--overwrite``."""
    from ..results import check_writable, sidecar

    if out is None:
        return None
    path = Path(out)
    if path.suffix not in (".csv", ".parquet"):
        raise UsageError(f"out must end in .csv or .parquet, got {out!r}")
    if path.is_dir():
        raise UsageError(f"out: {out!r} is a folder")
    if not mkdir and not path.parent.exists():  # a typo in the path creates no folders
        raise UsageError(
            f"out: cannot write {out!r}: no folder {str(path.parent)!r} (create it, or pass "
            f"--mkdir)"
        )
    for existing in (path, sidecar(path)):
        if existing.exists() and not overwrite:
            raise UsageError(f"out: {str(existing)!r} exists; pass --overwrite to replace it")
    check_writable(path)
    return path


def seed(value: int | None, name: str) -> Seed:
    """The root seed of ``--seed`` (fresh entropy when None); a negative value is refused."""
    from ..rng import as_seed

    if value is not None and value < 0:
        raise UsageError(f"{name} must be an integer >= 0, got {value}")
    return as_seed(value)


def progress(args: argparse.Namespace) -> bool:
    """Whether to draw progress bars: ``--progress``, else when stderr is a terminal."""
    return sys.stderr.isatty() if args.progress is None else args.progress


def table(rows: list[dict]) -> str:
    """Rows as a fixed-width text table (step counts, betas and seconds formatted for reading)."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    formats: dict[str, Callable[[float], str]] = {"wall_s": "{:.2f}".format, "beta": "{:g}".format}
    for col in frame.columns:
        if col.startswith(("median_", "mean_", "sample_median_")) and col != "median_diameter":
            formats[col] = steps_format
        elif col not in formats and frame[col].dtype.kind == "f":
            formats[col] = "{:.6g}".format
    return frame.to_string(index=False, formatters=formats, na_rep="nan")


class Rows:
    """A table printed one row at a time, each as soon as it is known (columns fixed ahead)."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.widths = [max(len(c), 8) for c in columns]
        print("  ".join(c.rjust(w) for c, w in zip(columns, self.widths)), flush=True)

    def __call__(self, row: dict) -> None:
        print(
            "  ".join(_cell(c, row[c]).rjust(w) for c, w in zip(self.columns, self.widths)),
            flush=True,
        )


def _cell(column: str, value: object) -> str:
    if column == "wall_s":
        return f"{value:.2f}"
    if isinstance(value, float):
        if (
            column.startswith(("median_", "mean_", "sample_median_"))
            and column != "median_diameter"
        ):
            return "nan" if math.isnan(value) else steps_format(value)
        return f"{value:.6g}"
    return str(value)


def steps_format(value: float) -> str:
    """A step count: one decimal up to 1e7, four significant digits beyond (accelerated runs
    reach 1e40 steps)."""
    return f"{value:.1f}" if not abs(value) >= 1e7 else f"{value:.4g}"
