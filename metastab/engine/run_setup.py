"""One prepared run: the inputs of :func:`~metastab.simulate`, :func:`~metastab.first_passage`
(both modes) and :func:`~metastab.track`, validated, sized and allocated in one place, and the
results they return, built in one place.

:func:`prepare_run` resolves the backend, checks the model, x0, chains, first_chain and the event,
takes the kernel parameters, refuses a run larger than the memory it may claim (the backend's
estimate of the run plus what the entry point keeps beside it) before anything of its size is
allocated, then compiles the event and allocates the chains' state and streams. The
:class:`RunSetup` it returns builds the result of its entry point (:meth:`RunSetup.run`,
:meth:`RunSetup.passage`, :meth:`RunSetup.track`), with the provenance and the fields every
result shares (model, seed, first chain, x0).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validate import check_memory
from ..kernels import params as _params
from ..results import FirstPassage, Run, provenance
from ..results.track import Track
from .backends import resolve
from .chains import check_event, initial, prepare, run_bytes, start
from .resolution import _GEOMETRIC, constant_chain

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..rng import Seed, SeedLike
    from .backends import Backend
    from .chains import EventSpec, Model

__all__ = ["RunSetup", "prepare_run"]

# What an entry point adds to a run, given the validated x (1 or C, n, d) run as C chains: its
# own checks of x, then (what the memory check names, or None for "a run of C chains ..."; the
# bytes it keeps beside the run: trajectory, event arrays, observables)
Extra = Callable[[np.ndarray, int], "tuple[str | None, int]"]


def _nothing_extra(x: np.ndarray, C: int) -> tuple[str | None, int]:
    return None, 0


@dataclass(frozen=True, eq=False)
class RunSetup:
    """A validated run: its inputs, kernel parameters, compiled event, state and streams.

    ``x`` is the validated x0 (1 or C, n, d) as the caller gave it; ``X`` (C, n, d) and
    ``state`` (C, 4) are the chains' state and streams, which the run advances in place.
    ``gamma`` is the constant step of the event-driven mode (None elsewhere), ``ev`` the event's
    kernel arrays (None: no event), ``memory`` the bytes the memory check admitted.
    """

    model: Model
    x: np.ndarray = field(repr=False)
    chains: int
    first_chain: int
    device: str
    backend: Backend
    dyn: Any = field(repr=False)
    gamma: float | None
    event: EventSpec | None
    ev: _params.EventArrays | None = field(repr=False)
    memory: int
    seed: Seed
    X: np.ndarray = field(repr=False)
    state: np.ndarray = field(repr=False)

    @property
    def n(self) -> int:
        return int(self.x.shape[1])

    @property
    def d(self) -> int:
        return int(self.x.shape[2])

    @property
    def code(self) -> int:
        """The event's kernel code (NO_EVENT without one)."""
        return _params.NO_EVENT if self.ev is None else int(self.ev.code)

    def launch(self, code: int | None = None) -> tuple:
        """(chains, n, d, dyn, event code): what picks the run's kernel (``code``: an event the
        entry point runs beside its own, as track's cluster count)."""
        return (self.chains, self.n, self.d, self.dyn, self.code if code is None else code)

    def _shared(self, tic: float, **extra: Any) -> dict:
        """The fields every result of this run holds, and its provenance (the wall time since
        ``tic``, a perf_counter reading, and ``extra``)."""
        wall = time.perf_counter() - tic
        return {
            "model": self.model.to_dict(),
            "seed": self.seed.to_dict(),
            "first_chain": self.first_chain,
            "provenance": provenance(wall_seconds=wall, n=self.n, d=self.d, **extra),
            "x0": initial(self.x),
        }

    def run(self, tic: float, steps: int, arguments: dict, **fields: Any) -> Run:
        """The :class:`~metastab.Run` of :func:`~metastab.simulate` (``fields``: trajectory,
        times, neighbours)."""
        shared = self._shared(tic)
        return Run(final=self.X, steps=steps, arguments=arguments, **fields, **shared)

    def passage(
        self,
        tic: float,
        times: np.ndarray,
        censored: np.ndarray,
        absorbed: np.ndarray,
        max_steps: int | float,
        arguments: dict,
        **meta: Any,
    ) -> FirstPassage:
        """The :class:`~metastab.FirstPassage` of :func:`~metastab.first_passage` (``meta``:
        what the mode adds to the provenance)."""
        assert self.event is not None
        return FirstPassage(
            times=times,
            censored=censored,
            final=self.X,
            absorbed=absorbed,
            max_steps=max_steps,
            event=self.event.to_dict(),
            arguments=arguments,
            **self._shared(tic, **meta),
        )

    def track(self, tic: float, arguments: dict, **fields: Any) -> Track:
        """The :class:`~metastab.Track` of :func:`~metastab.track` (``fields``: levels, times,
        observables, steps, delta, energy_beta)."""
        return Track(arguments=arguments, **fields, **self._shared(tic))


def prepare_run(
    model: Model,
    x0: ArrayLike,
    *,
    chains: int | None,
    first_chain: int,
    rng: SeedLike,
    device: str,
    event: EventSpec | None = None,
    extra: Extra = _nothing_extra,
    accelerated: bool = False,
) -> RunSetup:
    """The validated, allocated run of ``model`` from ``x0`` (module notes).

    ``extra(x, C)`` checks what the entry point needs of the validated x0 beyond the common
    checks, and gives what the memory check names (None: "a run of C chains of n tokens in
    R^d") and the bytes kept beside the run's own (:meth:`Backend.run_bytes`), for the validated
    x0 (1 or C, n, d) run as C chains.
    ``accelerated``: the event-driven mode, whose model must have a constant step
    (:func:`~metastab.engine.resolution.constant_chain`). Warnings of the model's step point
    at the caller of the entry point.
    """
    backend = resolve(device)
    if event is not None:
        check_event(event, model)
    x, C, first_chain = prepare(model, x0, chains, first_chain, stacklevel=4)
    n, d = x.shape[1:]
    dyn: Any
    gamma = None
    if accelerated:
        dyn, gamma = constant_chain(model, d, why=_GEOMETRIC)
    else:
        dyn = model.kernel_params(d)
    what, more = extra(x, C)
    need = run_bytes(C, n, d, model, backend) + more
    check_memory(what or f"a run of {C} chains of {n} tokens in R^{d}", need)
    ev = None
    if event is not None:
        B = dyn.B if accelerated else model.key_query(d)
        ev = event.compile(np.ascontiguousarray(x), B)
    X, seed, state = start(x, C, rng, first_chain)
    return RunSetup(
        model=model,
        x=x,
        chains=C,
        first_chain=int(first_chain),
        device=device,
        backend=backend,
        dyn=dyn,
        gamma=gamma,
        event=event,
        ev=ev,
        memory=need,
        seed=seed,
        X=X,
        state=state,
    )
