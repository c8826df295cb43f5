"""The figure helpers the studies share: axes grids on the Agg canvas, the palette, the fonts.

Imported by the studies' ``figures.py`` only (never by the core), like :mod:`metastab.plotting`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..plotting import canvas

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

    import numpy as np
    from matplotlib.figure import Figure

__all__ = ["FONT", "axes_grid", "axes_row", "draw", "legend_below", "palette"]

FONT = {"font.size": 11, "axes.titlesize": 11, "axes.labelsize": 11, "legend.fontsize": 9}


def axes_grid(
    rows: int, cols: int, width: float = 10.0, height: float = 7.0
) -> tuple[Figure, np.ndarray]:
    """A figure and its rows×cols axes, always a 2-d array.

    >>> fig, axes = axes_grid(2, 3)
    >>> axes.shape
    (2, 3)
    """
    return canvas(rows, cols, width=width, height=height, squeeze=False)


def axes_row(ncols: int = 1, width: float = 6.0, height: float = 4.5) -> tuple[Figure, np.ndarray]:
    """A figure and its row of ``ncols`` axes (a 1-d array)."""
    fig, axes = canvas(1, ncols, width=width, height=height, squeeze=False)
    return fig, axes[0]


def palette(n: int) -> list[tuple[float, float, float]]:
    """``n`` colours of seaborn's colour-blind palette."""
    import seaborn as sns

    return sns.color_palette("colorblind", n)


def draw(out: str | os.PathLike[str], *drawers: Callable[[Path], object]) -> None:
    """Call each ``drawer(out)`` with the studies' font sizes (local: rcParams untouched)."""
    import matplotlib

    with matplotlib.rc_context(FONT):  # type: ignore[arg-type]  # rc keys typed as literals
        for drawer in drawers:
            drawer(Path(out))


def legend_below(fig: Figure, axes: np.ndarray, used: int | None = None) -> None:
    """Hide the axes after the first ``used`` (all kept if None) and draw the first axes'
    legend once, below the panels."""
    flat = axes.ravel()
    for ax in flat[len(flat) if used is None else used :]:
        ax.set_visible(False)
    fig.legend(
        *flat[0].get_legend_handles_labels(),
        loc="outside lower center",
        ncols=3,
        fontsize="small",
        frameon=False,
    )
