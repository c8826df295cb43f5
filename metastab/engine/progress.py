"""Progress of a run: a tqdm bar on stderr or a user callback, and the compile announcement."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "Progress",
    "announce_compile",
    "announce_compile_for",
    "compile_notice",
    "kernels_cold",
    "tqdm_class",
]

# inside compile_notice(): None until the announcement is made, then True; False: quiet
_notice: list[bool | None] = []
# whether this process has announced a compile (a run without a bar announces its first only)
_announced: list[bool] = [False]


def kernels_cold(*dispatchers: Any) -> bool:
    """Whether calling any of these numba dispatchers will compile (nothing compiled in this
    process and no fresh entry in numba's on-disk cache). False when numba cannot tell."""
    for f in dispatchers:
        try:
            if not f.signatures and not f._cache._cache_file._load_index():
                return True
        except (AttributeError, OSError, ValueError):  # numba internals changed: stay quiet
            continue
    return False


def announce_compile(progress: bool | Callable | None, *dispatchers: Any) -> None:
    """One line on stderr before a call that compiles: every one when a progress bar is shown
    (``progress=True``), the first of the process for a run with the default ``progress=None``
    (a first run compiles for seconds: said once, the wait is not taken for a hang), and the
    first within :func:`compile_notice`; nothing within ``compile_notice(False)`` without a
    bar."""
    top = _notice[-1] if _notice else ""
    first = progress is None and not _announced[0] and top is not False
    if (progress is True or top is None or first) and kernels_cold(*dispatchers):
        sys.stderr.write("compiling kernels (once; later runs load them from the cache)...\n")
        sys.stderr.flush()
        _announced[0] = True
        if top is None:
            _notice[-1] = True


@contextlib.contextmanager
def compile_notice(on: bool = True) -> Iterator[None]:
    """Within (if ``on``): the first run that compiles announces it (:func:`announce_compile`),
    whatever its ``progress``; for commands whose runs draw no bar of their own (a study, a
    sweep's chunks). Within ``compile_notice(False)``: only runs with a bar announce."""
    _notice.append(None if on else False)
    try:
        yield
    finally:
        _notice.pop()


def announce_compile_for(progress: bool | Callable, *runs: str, device: str = "cpu") -> None:
    """Say on stderr that kernels are about to compile, for the runs a caller is about to make.

    :func:`announce_compile` for the kernels that a first run of each of ``runs`` calls on
    ``device``. For callers outside the engine (the demo, the benchmarks), which need not know
    the kernels.

    Parameters
    ----------
    progress : bool or callable
        As the ``progress`` of :func:`~metastab.engine.simulate`: only True announces (a
        callable or False says nothing).
    *runs : {"exact", "passage", "accelerated"}
        The runs to come: :func:`~metastab.engine.simulate`,
        :func:`~metastab.engine.first_passage`, or its accelerated mode.
    device : str
        The backend they run on (a name of :data:`metastab.engine.backends.BACKENDS`).

    Examples
    --------
    >>> from metastab.engine import announce_compile_for
    >>> announce_compile_for(False, "exact", "passage")   # quiet: nothing on stderr
    """
    if progress is not True:
        return
    from .backends import resolve

    backend = resolve(device)
    announce_compile(progress, *(f for run in runs for f in backend.kernels(run)))


class Progress:
    """A tqdm bar on stderr, or a user callback(steps_done, total, chains_done).

    With ``by="steps"`` (every chain runs all ``total`` steps) the bar counts steps, whose cost is
    even, and tqdm's estimate of the time left holds. With ``by="chains"`` (first passage) it
    counts chains that stopped, with the current step and the elapsed time only: escape times
    are random, so no honest estimate of the time left exists.
    """

    def __init__(
        self,
        progress: bool | Callable | None,
        total: int | float,
        chains: int,
        *,
        by: str = "chains",
    ):
        self.callback = progress if callable(progress) else None
        self.total, self.by, self.bar = total, by, None
        if progress is True:
            tqdm = tqdm_class()
            if by == "steps":
                self.bar = tqdm(
                    total=int(total),
                    unit="step",
                    desc="steps",
                    leave=True,
                    file=sys.stderr,
                    dynamic_ncols=True,
                )
            else:
                self.bar = tqdm(
                    total=chains,
                    unit="chain",
                    desc="chains stopped",
                    leave=True,
                    file=sys.stderr,
                    dynamic_ncols=True,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}"
                    " [{elapsed} elapsed{postfix}]",
                )

    def __call__(self, done_steps: int | float, done_chains: int) -> None:
        if self.callback is not None:
            self.callback(done_steps, self.total, done_chains)
        elif self.bar is not None:
            if self.by == "steps":
                self.bar.update(int(done_steps) - self.bar.n)
            else:
                self.bar.set_postfix_str(f"step {_count(done_steps)}", refresh=False)
                self.bar.update(done_chains - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def tqdm_class() -> Any:
    """tqdm's widget in a Jupyter kernel that has ipywidgets, else its text bar. (``tqdm.auto``
    warns "IProgress not found" in a kernel without ipywidgets before it falls back.)"""
    if "ipykernel" in sys.modules and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


def _count(steps: float) -> str:
    return f"{steps:.4g}" if isinstance(steps, float) and steps >= 1e7 else f"{int(steps)}"
