"""Figures of first-passage statistics: survival curves and the Arrhenius plot.

matplotlib and seaborn are imported here and inside the functions (never by the core); figures are
drawn on the Agg canvas without pyplot, so no global backend state is touched and no figure stays
open. Every function returns the figure (a :class:`matplotlib.figure.Figure` with a PNG
representation, so that a notebook shows it inline as a cell's value, with no ``%matplotlib``
line) and, given ``path``, writes it (format by suffix).
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from . import stats, theory

if TYPE_CHECKING:
    import os
    from typing import Any

__all__ = ["InlineFigure", "arrhenius_figure", "canvas", "save", "survival_figure"]


def canvas(
    rows: int = 1,
    cols: int = 1,
    *,
    width: float = 6.0,
    height: float = 4.2,
    squeeze: bool = True,
    **subplots: Any,
) -> tuple[Figure, Any]:
    """A constrained-layout figure on the Agg canvas and its rows×cols axes.

    No pyplot state, nothing to close: the canvas of every figure of the package and of the
    studies.

    Parameters
    ----------
    rows, cols : int, optional
        The grid of axes (default one).
    width, height : float, optional
        The figure's size in inches (default 6 × 4.2).
    squeeze : bool, optional
        As for ``Figure.subplots`` (default True: a single Axes, or a 1-d array of them).
    **subplots
        Further arguments of ``Figure.subplots`` (``sharex``, ``sharey``, ...).

    Returns
    -------
    fig : InlineFigure
        The figure.
    axes : matplotlib.axes.Axes or ndarray of Axes
        Its axes, as ``Figure.subplots`` returns them.

    Examples
    --------
    >>> from metastab.plotting import canvas
    >>> fig, axes = canvas(1, 2, sharey=True)
    >>> axes.shape, fig.get_size_inches().tolist()
    ((2,), [6.0, 4.2])
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = InlineFigure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, cols, squeeze=squeeze, **subplots)


class InlineFigure(Figure):
    """A Figure that a notebook shows inline as a cell's value.

    Without pyplot nothing registers a display formatter for figures, and IPython would print
    ``<Figure size ...>``; this one has a PNG representation (``_repr_png_``).

    Parameters
    ----------
    *args, **kwargs
        The arguments of :class:`matplotlib.figure.Figure` (``figsize``, ``dpi``, ``layout``,
        ...).

    Examples
    --------
    >>> from metastab.plotting import canvas
    >>> fig, ax = canvas()
    >>> type(fig).__name__, fig._repr_png_()[:4]
    ('InlineFigure', b'\\x89PNG')
    """

    # Figure's own arguments, passed on: the signature the docs list is Figure's
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def save(fig: Figure, path: str | os.PathLike[str] | None, *, dpi: int = 150) -> Figure:
    """Write a figure to ``path`` (format by suffix, parent folders created) unless it is None.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str, os.PathLike or None
        Where to write it; None writes nothing.
    dpi : int, optional
        The resolution of raster formats (default 150).

    Returns
    -------
    fig : matplotlib.figure.Figure
        ``fig`` itself, so that a function can end with ``return save(fig, path)``.

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.plotting import canvas, save
    >>> fig, ax = canvas()
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = save(fig, os.path.join(tmp, "figs", "empty.png"))
    ...     os.listdir(os.path.join(tmp, "figs"))
    ['empty.png']
    """
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi)
    return fig


def _groups(data, by):
    """[(label, sample)] from a FirstPassage, a chain frame (grouped by ``by``), a dict, or a
    list of FirstPassage results / frames (one curve each, labelled by ``by``)."""
    if isinstance(data, dict):
        return list(data.items())
    if isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("data is an empty list")
        return [group for item in data for group in _groups(item, by)]
    if isinstance(data, pd.DataFrame):
        if by in data:
            return [(f"{by} = {v:g}", g) for v, g in data.groupby(by, sort=True)]
        return [("", data)]
    if hasattr(data, "times") and hasattr(data, "censored"):
        beta = getattr(data, "model", {}).get(by)
        return [(f"{by} = {beta:g}" if beta is not None else "", data)]
    raise ValueError(
        f"data must be a FirstPassage, a DataFrame, a dict or a list of them, got "
        f"{type(data).__name__}"
    )


def survival_figure(
    data: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    by: str = "beta",
    law: str = "geometric",
    confidence_level: float = 0.95,
    method: str = "log-log",
    fitted: bool = True,
) -> Figure:
    """Kaplan–Meier survival curves per β on log–log axes, with bands and the fitted law.

    Each curve is Ŝ(t) of :func:`metastab.stats.survival` with its pointwise Greenwood band
    (``method`` "log-log" or "linear"); dashed, the fitted memoryless law exp(−λ̂t) or
    (1 − p̂)^t of :func:`metastab.stats.escape_rate`. Groups without events stay at 1 and say so.

    Parameters
    ----------
    data : FirstPassage, DataFrame, dict or list
        A chain table (columns ``by``, steps, censored; one curve per ``by`` value), one
        FirstPassage, a list of them (e.g. one FirstPassage per β), or a dict label ->
        FirstPassage / frame.
    path : str or Path, optional
        Where to write the figure (format by suffix; default None: not written).
    by : str, optional
        The column (or model parameter) whose values label the curves (default ``"beta"``).
    law : {"geometric", "exponential"}, optional
        The law of the dashed fit (default geometric).
    confidence_level : float, optional
        The level of the bands (default 0.95).
    method : {"log-log", "linear"}, optional
        The Greenwood band's transform (default log-log).
    fitted : bool, optional
        Draw the fitted law (default True).

    Returns
    -------
    fig : matplotlib.figure.Figure
        The figure, one Axes.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from metastab.plotting import survival_figure
    >>> T = np.random.default_rng(0).geometric(0.01, 200)
    >>> frame = pd.DataFrame({"beta": 1.0, "steps": np.minimum(T, 300), "censored": T > 300})
    >>> fig = survival_figure(frame)
    >>> fig.axes[0].get_yscale()
    'log'
    """
    import seaborn as sns

    groups = _groups(data, by)
    with sns.axes_style("ticks"):
        fig, ax = canvas()
    colors = sns.color_palette("viridis", max(len(groups), 1))
    lowest = 1.0
    for (label, sample), color in zip(groups, colors):
        with warnings.catch_warnings():  # the legend states events / chains instead
            warnings.filterwarnings(
                "ignore", "(no events|no escapes|.* chains are censored)", stats.DiagnosticWarning
            )
            km = stats.survival(sample)
            rate = stats.escape_rate(sample, law=law) if km.n_events else None
        note = f"{km.n_events}/{km.chains} escaped"
        keep = (km.time > 0) & (km.probability > 0)
        t, S = km.time[keep], km.probability[keep]
        low, high = (b[keep] for b in km.confidence_interval(confidence_level, method=method))
        start = min(t[0], 1.0) if t.size else 1.0
        ax.step(
            np.r_[start, t],
            np.r_[1.0, S],
            where="post",
            color=color,
            label=f"{label}  ({note})".strip(),
        )
        ax.fill_between(
            t,
            np.where(np.isnan(low), 0, low),
            np.where(np.isnan(high), 1, high),
            step="post",
            color=color,
            alpha=0.2,
            linewidth=0,
        )
        if S.size:
            lowest = min(lowest, S.min())
        if fitted and rate is not None:
            grid = np.geomspace(max(start, 1.0), max(km.time.max(), 2.0), 200)
            ax.plot(grid, rate.survival_function(grid), "--", color=color, linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(max(lowest / 3, 1e-6), 1.05)
    ax.set_xlabel("steps t")
    ax.set_ylabel("P[T > t]")
    ax.set_title(
        f"Kaplan–Meier, {confidence_level:.0%} {method} bands; dashed: {law} fit", fontsize="medium"
    )
    if any(label for label, _ in groups):
        ax.legend(fontsize="small", frameon=False)
    return save(fig, path)


def _fits(frame_or_fits, x, law, confidence_level):
    if isinstance(frame_or_fits, stats.ScalingFit):
        return frame_or_fits.per_beta, frame_or_fits
    if isinstance(frame_or_fits, tuple) and len(frame_or_fits) == 2:
        return frame_or_fits
    if isinstance(frame_or_fits, pd.DataFrame):
        fit = stats.fit_scaling(frame_or_fits, x=x, law=law, confidence_level=confidence_level)
        return fit.per_beta, fit
    raise ValueError(
        "frame_or_fits must be a chain DataFrame, a ScalingFit or the (per_beta, "
        f"fit) pair of fit_report, got {type(frame_or_fits).__name__}"
    )


def arrhenius_figure(
    frame_or_fits: Any,
    path: str | os.PathLike[str] | None = None,
    bound: dict | None = None,
    *,
    x: str = "beta",
    law: str = "geometric",
    confidence_level: float = 0.95,
    no_bound: str = "",
) -> Figure:
    """Arrhenius plot: mean escape time against β (log axis), the fitted law and the bound.

    Points: E[T] = exposure/events per β with exact intervals, or the law-free bootstrap's where
    the per-β table's ``interval`` column says so (docs: statistics#escape-rate-intervals; a β
    without events is drawn as its one-sided lower bound, ▲). Line and band: the
    maximum-likelihood law log E[T] = a + b·β of :func:`metastab.stats.fit_scaling` with its
    pointwise Wald band.
    Dashed black: the Thm 5.4 lower bound of :func:`metastab.theory.exit_time_bound`.

    Parameters
    ----------
    frame_or_fits : DataFrame, ScalingFit or (per_beta, ScalingFit)
        A chain table (fitted here with ``x``, ``law``, ``confidence_level``), a fit, or the
        pair returned by :func:`metastab.stats.fit_report`.
    path : str or Path, optional
        Where to write the figure (format by suffix; default None: not written).
    bound : dict or callable, optional
        Keyword arguments of :func:`metastab.theory.exit_time_bound` (c0, eps, gamma, n, ...),
        or a function β -> log lower bound on E[T].
    no_bound : str
        Without a bound, why not: one legend line, so that the figure says the theorem does not
        apply rather than leaving the reader to wonder.
    x : str, optional
        The covariate column (default ``"beta"``), when a chain table is fitted here.
    law : {"geometric", "exponential"}, optional
        The law of the fit made here (default geometric).
    confidence_level : float, optional
        The level of the fit made here (default 0.95).

    Returns
    -------
    fig : matplotlib.figure.Figure
        The figure, one Axes.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from metastab.plotting import arrhenius_figure
    >>> beta = np.repeat([1.0, 2.0, 3.0], 100)
    >>> T = np.random.default_rng(0).geometric(np.exp(-1.0 - 1.5 * beta))
    >>> frame = pd.DataFrame({"beta": beta, "steps": np.minimum(T, 100), "censored": T > 100})
    >>> fig = arrhenius_figure(frame, bound=dict(c0=1.0, eps=0.2, gamma=0.1, n=4))
    >>> len(fig.axes[0].get_lines()) >= 2
    True
    """
    import seaborn as sns

    per, fit = _fits(frame_or_fits, x, law, confidence_level)
    with sns.axes_style("ticks"):
        fig, ax = canvas()
    blue, orange = sns.color_palette("colorblind", 2)
    xs = per[fit.x].to_numpy(np.float64)
    one = per["one_sided"].to_numpy(bool)
    mean, lo, hi = (per[c].to_numpy(np.float64) for c in ("mean", "mean_low", "mean_high"))
    law_free = per["interval"].eq("bootstrap") if "interval" in per else pd.Series(False)
    ax.errorbar(
        xs[~one],
        mean[~one],
        yerr=[mean[~one] - lo[~one], hi[~one] - mean[~one]],
        fmt="o",
        color=blue,
        capsize=3,
        label=f"E[T] ({fit.confidence_level:.0%} CI"
        + ("; bootstrap where not memoryless)" if law_free.any() else ")"),
    )
    if one.any():
        ax.plot(xs[one], lo[one], "^", color=blue, label="no escapes: lower bound")
    grid = np.linspace(xs.min(), xs.max(), 200)
    if grid[0] == grid[-1]:
        grid = grid[[0]]
    band_lo, band_hi = fit.band(grid)
    b_lo, b_hi = fit.confidence_interval("slope")
    ax.plot(
        grid,
        np.exp(fit.log_mean(grid)),
        color=orange,
        label=f"fit: b = {fit.slope:.3g} [{b_lo:.3g}, {b_hi:.3g}]",
    )
    ax.fill_between(grid, np.exp(band_lo), np.exp(band_hi), color=orange, alpha=0.25, linewidth=0)
    if bound is not None:
        if callable(bound):
            log_bound, label = np.asarray(bound(grid), dtype=np.float64), "theory bound"
        elif isinstance(bound, dict):
            log_bound = theory.exit_time_bound(grid, **bound)
            slope = theory.metastability_exponent(bound["c0"], bound["eps"], bound["gamma"])
            label = f"Thm 5.4 bound (slope {slope:.3g})"
        else:
            raise ValueError(f"bound must be a dict or a callable, got {type(bound).__name__}")
        ax.plot(grid, np.exp(log_bound), "--", color="black", label=label)
    elif no_bound:
        ax.plot([], [], " ", label=f"no theorem bound: {no_bound}")
    ax.set_yscale("log")
    ax.set_xlabel("β" if fit.x == "beta" else fit.x)
    ax.set_ylabel(f"mean escape time E[T] ({fit.law} law)")
    ax.set_title(
        f"log E[T] = a + b·{'β' if fit.x == 'beta' else fit.x}: deviance "
        f"{fit.deviance:.3g} on {fit.df} df",
        fontsize="medium",
    )
    ax.legend(fontsize="small", frameon=False)
    return save(fig, path)
