"""Where the chains run: the backends behind :mod:`metastab.engine`, resolved in one place.

A backend moves chains forward in place on host arrays: ``advance`` (exact steps, any model),
``events_at`` (the event at time 0), ``neighbour_sets``, ``advance_accelerated`` (the event-driven
SA_P chain) and ``excursions`` / ``coordinates`` (splitting), each with the arguments of the
:mod:`metastab.kernels` driver of that name (parameters as the NamedTuples that the models and
events build), and ``kernels(name)``: the compiled functions a first call of that driver may have
to compile (for the compile announcement). A second backend (a GPU) is one more class with these
methods and one more entry of :data:`BACKENDS`; the engine's functions take it as ``device``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numba
import numpy as np

from ..kernels import (
    accelerated as _accelerated,
)
from ..kernels import (
    drivers as _drivers,
)
from ..kernels import (
    sphere as _sphere,
)
from ..kernels import (
    splitting as _splitting,
)
from ..kernels import (
    streams as _streams,
)
from ..kernels.params import SPHERE_CHAIN, SPHERE_FLOW

__all__ = ["BACKENDS", "Backend", "resolve"]


class Backend(Protocol):
    """What the engine asks of a backend (see the module notes)."""

    name: str

    def advance(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        sched: Any,
        t0: int,
        nsteps: int,
        ev: Any,
        steps: np.ndarray,
        done: np.ndarray,
    ) -> None: ...

    def events_at(self, X: np.ndarray, ev: Any, out: np.ndarray) -> None: ...

    def neighbour_sets(self, X: np.ndarray, dyn: Any, margin: float, out: np.ndarray) -> None: ...

    def advance_accelerated(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        gamma: float,
        tols: np.ndarray,
        max_steps: float,
        max_jumps: int,
        ev: Any,
        tally: Any,
    ) -> None: ...

    def excursions(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        gamma: float,
        tol: float,
        accelerated: bool,
        ev: Any,
        bounds: Any,
        walk: Any,
        records: Any,
    ) -> None: ...

    def coordinates(self, X: np.ndarray, ev: Any, out: np.ndarray) -> None: ...

    def kernels(self, name: str) -> tuple: ...


class Cpu:
    """The numba kernels on the host's cores (chains in parallel over numba's threads)."""

    name = "cpu"

    def advance(self, X, state, dyn, sched, t0, nsteps, ev, steps, done) -> None:
        if dyn.kind in (SPHERE_FLOW, SPHERE_CHAIN):
            _sphere.advance(
                X, state, dyn, sched, t0, nsteps, ev, steps, done, numba.get_num_threads()
            )
            return
        _drivers.advance(X, state, dyn, sched, t0, nsteps, ev, steps, done, numba.get_num_threads())

    def events_at(self, X, ev, out) -> None:
        _drivers.events_at(X, ev, out)

    def neighbour_sets(self, X, dyn, margin, out) -> None:
        _drivers.neighbour_sets(X, dyn, margin, out)

    def advance_accelerated(
        self, X, state, dyn, gamma, tols, max_steps, max_jumps, ev, tally
    ) -> None:
        _accelerated.advance_accelerated(
            X, state, dyn, gamma, tols, max_steps, max_jumps, ev, tally
        )

    def excursions(self, X, state, dyn, gamma, tol, accelerated, ev, bounds, walk, records) -> None:
        _splitting.excursions(X, state, dyn, gamma, tol, accelerated, ev, bounds, walk, records)

    def coordinates(self, X, ev, out) -> None:
        _splitting.coordinates(X, ev, out)

    def kernels(self, name: str) -> tuple:
        return {
            "exact": (_streams.seed_streams, _drivers.advance),
            "passage": (_streams.seed_streams, _drivers.advance, _drivers.cross_weights),
            "accelerated": (_accelerated.advance_accelerated,),
        }[name]


# device name -> a factory of its backend
BACKENDS: dict[str, Callable[[], Backend]] = {"cpu": Cpu}


def resolve(device: str = "cpu") -> Backend:
    """The backend named ``device`` (a name of :data:`BACKENDS`).

    >>> resolve("cpu").name
    'cpu'
    """
    if not isinstance(device, str) or device not in BACKENDS:
        raise ValueError(f"device must be one of {tuple(BACKENDS)}, got {device!r}")
    return BACKENDS[device]()
