"""The exact loop: every chain takes every step, in growing chunks of steps per kernel call.

Used by :func:`metastab.simulate` and by ``first_passage(..., mode="exact")``; the kernels are the
backend's ``advance`` (:mod:`metastab.engine.backends`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING

import numpy as np

from .._validate import integer
from ..kernels import params as _params
from .backends import Backend
from .chains import check_finite
from .interrupt import Halted, Request, deferred
from .progress import Progress

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..models import Hardmax, Localmax
    from .absorption import Absorption
    from .chains import Model

__all__ = ["drive", "neighbour_sets", "record_plan", "record_times"]

# A call to the kernel starts this many steps long and doubles while it takes under _CALL_SECONDS,
# so that progress reports come often without per-call overhead dominating short steps.
_FIRST_CALL_STEPS = 16
_CALL_SECONDS = 0.5


def drive(
    backend: Backend,
    model: Model,
    X: np.ndarray,
    state: np.ndarray,
    total: int,
    ev: _params.EventArrays | None,
    progress: bool | Callable | None,
    on_chunk: Callable[[int], None] | None = None,
    stops: np.ndarray | None = None,
    absorption: Absorption | None = None,
    interruptible: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the kernel over steps 0..total-1 in growing chunks; returns (times, done).

    Chunks end at every time in ``stops`` (sorted), where ``on_chunk`` can record the state.
    With ``absorption``, chains whose event is out of reach stop too (done, ``times`` their first
    step out of reach, marked in ``absorption.absorbed``). With ``interruptible``, a Ctrl-C stops
    the loop between kernel calls with :class:`~.interrupt.Halted` at the step every chain
    reached (``times`` and ``done`` as they stand then)."""
    C, n, d = X.shape
    dyn = model.kernel_params(d)
    if ev is None:
        ev = _params.no_event(n, d)
    times = np.full(C, total, dtype=np.int64)
    done = np.zeros(C, dtype=bool)
    # a clusters event with at_most 0 never stops a chain (it only records the levels)
    never = ev.code == _params.NO_EVENT or (ev.code == _params.CLUSTERS and ev.at_most == 0)
    # compile (or load) the kernel before the bar starts, so that its clock and its estimate of
    # the time left measure the run, not the compiler, and mark the chains that meet the event
    # at time 0; a schedule of the kernel's types, as a callable step or margin must be
    # evaluated once per step, no more
    typed = _params.Schedule(np.ones(1), np.zeros(1))
    backend.start_advance(X, state, dyn, typed, ev, times, done)
    if absorption is not None:
        absorption.start(X, times, done)
    report = Progress(progress, total, C, by="steps" if never else "chains")
    t, chunk = 0, _FIRST_CALL_STEPS
    ctrl_c_deferred = deferred() if interruptible else nullcontext(Request())
    with ctrl_c_deferred as ctrl_c:
        try:
            while t < total and not done.all():
                if ctrl_c.made:
                    raise Halted(t, times, done)
                k = min(chunk, total - t)
                if stops is not None:
                    following = stops[np.searchsorted(stops, t, side="right") :]
                    if following.size:
                        k = min(k, int(following[0]) - t)
                sched = model.schedule(t, k)
                if absorption is not None:
                    absorption.before(X, state)
                tic = time.perf_counter()
                backend.advance(X, state, dyn, sched, t, k, ev, times, done)
                if time.perf_counter() - tic < _CALL_SECONDS:
                    chunk *= 2
                t += k
                check_finite(X, f" by step {t}", model)
                if absorption is not None:
                    absorption.after(X, t - k, t, times, done)
                if on_chunk is not None:
                    on_chunk(t)
                report(t, int(done.sum()))
        finally:
            report.close()
    return times, done


def neighbour_sets(
    backend: Backend, model: Hardmax | Localmax, X: np.ndarray, t: int, out: np.ndarray
) -> None:
    """out[c, i, j] = whether j is in token i's neighbour (leader) set in X[c] at step t: the set
    that the step from t uses (Hardmax: every index within the tie tolerance, whatever ``ties``)."""
    margin = float(model.margin_arrays(t, 1)[0])
    backend.neighbour_sets(X, model.kernel_params(X.shape[2]), margin, out)


def record_plan(
    record_every: int | None, record_at: ArrayLike | None, steps: int
) -> tuple[str | None, int, int | np.ndarray | None]:
    """(what, number of snapshots, steps or None) of a recording request, validated; the steps
    of ``record_every`` are built by :func:`record_times` once their memory is checked."""
    if record_every is not None and record_at is not None:
        raise ValueError("give record_every or record_at, not both")
    if record_every is not None:
        every = integer("record_every", record_every, 1)
        return f"record_every={every}", steps // every + 1 + (steps % every != 0), every
    if record_at is None:
        return None, 0, None
    try:
        at = np.asarray(record_at)
    except ValueError:  # ragged
        at = np.empty(0)
    if at.ndim != 1 or at.size == 0 or not np.issubdtype(at.dtype, np.integer):
        raise ValueError(
            f"record_at must be a non-empty 1-D sequence of integers, got {record_at!r}"
        )
    bad = (at < 0) | (at > steps)
    if bad.any():
        raise ValueError(f"record_at must lie in [0, steps={steps}], got {int(at[bad][0])}")
    if (np.diff(at) <= 0).any():
        raise ValueError("record_at must be strictly increasing")
    return "record_at", at.size, at.astype(np.int64)


def record_times(
    plan: tuple[str | None, int, int | np.ndarray | None], steps: int
) -> np.ndarray | None:
    """The steps at which simulate keeps the state (int64, increasing), or None."""
    _, _, spec = plan
    if spec is None or isinstance(spec, np.ndarray):
        return spec
    return np.union1d(np.arange(0, steps + 1, spec, dtype=np.int64), [steps])
