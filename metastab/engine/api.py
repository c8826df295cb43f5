"""The thin typed API: prepare the run (:mod:`metastab.engine.run_setup`), call the kernels in
chunks of steps, return its result.

:func:`simulate` runs a fixed number of steps; :func:`first_passage` runs until a stopping event
(or ``max_steps``, which censors the chain), by the exact loop (:mod:`metastab.engine.exact`) or,
with ``mode="accelerated"``, event by event (:mod:`metastab.engine.accelerated`). Both accept one
initial configuration shared by all chains (n×d) or one per chain (chains×n×d), a keyword-only
``rng``, and a ``device`` naming the backend (:mod:`metastab.engine.backends`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from .._validate import integer
from ..exceptions import Interrupted
from ..models import Hardmax, Localmax
from ..results import FirstPassage, Run
from . import resolution
from .absorption import Absorption, applies
from .accelerated import first_passage_accelerated
from .backends import reach_kernels
from .exact import drive, neighbour_sets, record_plan, record_times
from .interrupt import Halted
from .progress import announce_compile
from .run_setup import prepare_run

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..rng import SeedLike
    from .chains import EventSpec, Model

__all__ = ["simulate", "first_passage"]


def simulate(
    model: Model,
    x0: ArrayLike,
    *,
    steps: int,
    chains: int | None = None,
    rng: SeedLike = None,
    record_every: int | None = None,
    record_at: Sequence[int] | None = None,
    progress: bool | Callable | None = None,
    first_chain: int = 0,
    record_neighbours: bool = False,
    device: str = "cpu",
) -> Run:
    """Run ``chains`` independent chains of ``model`` for ``steps`` steps from ``x0``.

    Parameters
    ----------
    model : SoftmaxChain, SoftmaxFlow, Hardmax, Localmax, SphereFlow, SphereChain or NoisySphere
        The dynamics (:mod:`metastab.models`).
    x0 : array_like, shape (n, d) or (chains, n, d)
        The initial configuration of n tokens in R^d, shared by all chains, or one per chain
        (unit rows for the sphere models, within ``metastab.models.sphere.SPHERE_TOL``).
    steps : int >= 1
        The number of steps every chain takes.
    chains : int, optional
        The number of independent chains (default 1, or ``x0.shape[0]`` for a 3-D x0).
    rng : None, int, SeedSequence or Generator
        Root of the per-chain streams (recorded in the result).
    record_every : int, optional
        Keep the states at steps 0, k, 2k, ... and the last step. The trajectory takes
        chains × (steps // k + 2) × n × d × 8 bytes; a request larger than half the available
        memory is refused with the number.
    record_at : sequence of int, optional
        Instead of ``record_every``: keep the states at exactly these steps (distinct, in
        [0, steps]; e.g. log-spaced), in increasing order.
    progress : bool, callable(steps_done, total, chains_done) or None
        True: a tqdm bar on stderr (steps here; chains stopped in :func:`first_passage`), and
        one line first when the kernels are about to be compiled. None (the default): no bar,
        and that line before the first compile of the process only. False: nothing on stderr.
        A callable is called with the progress instead of a bar.
    first_chain : int
        Index of the first chain (chain k's stream depends only on the seed and k).
    record_neighbours : bool
        Hardmax and Localmax only, with ``record_every`` or ``record_at``: also keep, at each
        recorded step t, the
        neighbour sets that the step from t uses, as ``Run.neighbours[c, r, i, j]`` (j in N_i at
        step ``times[r]``; Hardmax: the leader set L_i) and ``Run.leaders`` (i in N_i). The
        sets at the last step use r_steps, so an r schedule then needs steps + 1 entries. Adds
        chains × snapshots × n × n bytes to the memory check.
    device : str
        Where the chains run (a name of :data:`metastab.engine.backends.BACKENDS`; "cpu").

    Returns
    -------
    run : Run
        The final states (``final``, chains × n × d), the recorded trajectory and its
        ``times`` when asked for, the seed and the provenance (:class:`~metastab.Run`).

    Raises
    ------
    MemoryError
        Before anything is allocated, when the run (state, trajectory, kernel buffers) would
        take more than half of the available memory (``MemAvailable``); the message gives both.

    See Also
    --------
    first_passage : run until a stopping event instead of a fixed number of steps.
    track : follow the cluster count of a run.

    Examples
    --------
    >>> import metastab as ms
    >>> x0 = ms.regular_polygon(5).vertices
    >>> run = ms.simulate(ms.SoftmaxChain(beta=5.0, gamma=0.5), x0, steps=10, chains=4, rng=1)
    >>> run.final.shape
    (4, 5, 2)
    >>> hm = ms.simulate(ms.Localmax(gamma=1/3, r=0.0), x0, steps=4, record_every=2,
    ...                  record_neighbours=True)
    >>> hm.neighbours.shape, bool(hm.leaders.all())   # every vertex leads itself
    ((1, 3, 5, 5), True)
    """
    steps = integer("steps", steps, 1)
    if record_neighbours is not False and record_neighbours is not True:
        raise ValueError(f"record_neighbours must be True or False, got {record_neighbours!r}")
    if record_neighbours:
        if not isinstance(model, (Hardmax, Localmax)):
            raise ValueError(
                f"record_neighbours needs a Hardmax or Localmax model, got {type(model).__name__}"
            )
        if record_every is None and record_at is None:
            raise ValueError(
                "record_neighbours needs record_every or record_at (the steps to record at)"
            )
        if (
            isinstance(model, Localmax)
            and isinstance(model.r, np.ndarray)
            and model.r.size < steps + 1
        ):
            raise ValueError(
                f"record_neighbours: the neighbour sets at the last step t = {steps} "
                f"use r_{steps}, but the r schedule has {model.r.size} entries "
                f"(give steps + 1)"
            )
    plan = record_plan(record_every, record_at, steps)
    what, count, _ = plan

    def trajectory(x: np.ndarray, C: int) -> tuple[str | None, int]:
        n, d = x.shape[1:]
        set_bytes = C * n * n if record_neighbours else 0
        return (
            f"{what}: the trajectory" if what else None,
            count * (8 * C * n * d + set_bytes) + set_bytes,
        )

    run = prepare_run(
        model, x0, chains=chains, first_chain=first_chain, rng=rng, device=device,
        extra=trajectory,
    )  # fmt: skip
    backend, X, C, n = run.backend, run.X, run.chains, run.n
    announce_compile(progress, *backend.kernels("exact", run.launch()))
    snapshots, neighbours = None, None
    times = record_times(plan, steps)
    if times is not None:
        snapshots = np.empty((X.shape[0], count) + X.shape[1:])
        if record_neighbours:
            sets = np.empty((C, n, n), dtype=bool)
            neighbours = np.empty((C, count, n, n), dtype=bool)
        filled = [0]

        def on_chunk(t: int) -> None:
            if filled[0] < count and t == times[filled[0]]:
                snapshots[:, filled[0]] = X
                if neighbours is not None:
                    neighbour_sets(backend, cast("Hardmax | Localmax", model), X, t, sets)
                    neighbours[:, filled[0]] = sets
                filled[0] += 1

        on_chunk(0)
    tic = time.perf_counter()
    drive(
        backend,
        model,
        X,
        run.state,
        steps,
        None,
        progress,
        on_chunk if snapshots is not None else None,
        times,
    )
    return run.run(
        tic,
        steps,
        trajectory=snapshots,
        times=times,
        neighbours=neighbours,
        arguments={
            "steps": steps,
            "chains": C,
            "record_every": None if record_every is None else int(record_every),
            "record_at": None if record_at is None else [int(t) for t in record_at],
            "first_chain": run.first_chain,
            "record_neighbours": record_neighbours,
            "device": device,
        },
    )


def first_passage(
    model: Model,
    x0: ArrayLike,
    event: EventSpec,
    *,
    max_steps: int | float,
    chains: int | None = None,
    rng: SeedLike = None,
    progress: bool | Callable | None = None,
    first_chain: int = 0,
    mode: str = "exact",
    merge_tol: float | None = None,
    device: str = "cpu",
) -> FirstPassage:
    """First step at which each of ``chains`` independent chains meets ``event``.

    The event is checked at time 0 and after every step; a chain that has not met it after
    ``max_steps`` steps is right-censored (``censored`` True, ``times`` = max_steps). Trajectories
    are not stored.

    ``mode="exact"`` (default) takes every step, drawing every pick with its probability to full
    relative precision. ``mode="accelerated"`` (SoftmaxChain with a constant step only) skips the
    steps in which no token leaves its group, drawing their number from the exact geometric law,
    merges groups closer than ``merge_tol`` (relative, default 1e-10), samples probabilities
    below 2^-53 as they are and counts steps in float64 (``max_steps`` may be a float such as
    1e100): see :mod:`metastab.engine.accelerated`. In exact mode a
    :class:`~metastab.ResolutionWarning` says when the initial configurations, or the
    final ones of censored chains, can only leave their groups through picks whose weights
    underflow to 0 (exponent below :func:`~metastab.engine.underflow_exponent` ≈ −708.74).
    ``device`` as in :func:`simulate`.

    A Ctrl-C (SIGINT in the main thread) stops an exact run at the next kernel call and raises
    :class:`~metastab.Interrupted`, a KeyboardInterrupt whose ``result`` is the run up to the
    step it reached: the same chains as with ``max_steps`` set to that step
    (:mod:`metastab.engine.interrupt`).

    Parameters
    ----------
    model : SoftmaxChain, SoftmaxFlow, Hardmax, Localmax, SphereFlow, SphereChain or NoisySphere
        The dynamics (:mod:`metastab.models`).
    x0 : array_like, shape (n, d) or (chains, n, d)
        The initial configuration, shared by all chains or one per chain, as in
        :func:`simulate`.
    event : LeaveBall, LeaveHull, ReachVertices or Collapse
        The stopping event (:mod:`metastab.events`), checked at time 0 and after every step.
    max_steps : int >= 1, or float in accelerated mode
        The step budget: a chain that has not met the event by then is censored there.
    chains : int, optional
        The number of independent chains (default 1, or ``x0.shape[0]`` for a 3-D x0).
    rng : None, int, SeedSequence or Generator
        Root of the per-chain streams (recorded in the result).
    progress : bool, callable(steps_done, total, chains_done) or None
        As in :func:`simulate`; a bar counts the chains stopped.
    first_chain : int
        Index of the first chain (chain k's stream depends only on the seed and k).
    mode : {"exact", "accelerated"}
        Take every step, or skip the steps in which no token leaves its group (above).
    merge_tol : float, optional
        Accelerated mode only: the relative distance below which groups merge (default 1e-10).
    device : str
        Where the chains run (a name of :data:`metastab.engine.backends.BACKENDS`; "cpu").

    Returns
    -------
    passage : FirstPassage
        Each chain's first-passage time in steps (``times``), whether it was censored or
        absorbed, its final configuration, the seed and the provenance
        (:class:`~metastab.FirstPassage`).

    Raises
    ------
    Interrupted
        On Ctrl-C in exact mode, carrying the run up to the step reached.

    See Also
    --------
    simulate : a fixed number of steps, with the trajectory.
    metastab.stats.escape_rate : the escape rate of the times, with an interval.

    Examples
    --------
    >>> import metastab as ms
    >>> x0 = ms.regular_polygon(5).vertices
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=2.0, gamma=0.5), x0, ms.LeaveBall(0.1),
    ...                       max_steps=1000, chains=8, rng=3)
    >>> fp.times.shape, fp.censored.dtype
    ((8,), dtype('bool'))
    """
    resolution.check_mode(mode, merge_tol)
    if mode == "accelerated":
        return first_passage_accelerated(
            model,
            x0,
            event,
            max_steps=max_steps,
            chains=chains,
            rng=rng,
            progress=progress,
            first_chain=first_chain,
            merge_tol=merge_tol,
            device=device,
        )
    max_steps = integer("max_steps", max_steps, 1)
    run = prepare_run(
        model, x0, chains=chains, first_chain=first_chain, rng=rng, device=device, event=event,
        extra=_copies,
    )  # fmt: skip
    backend, X, x, ev = run.backend, run.X, run.x, run.ev
    assert ev is not None
    absorbing = applies(model, ev.code)
    announce_compile(
        progress,
        *backend.kernels("passage", run.launch()),
        *(reach_kernels(ev.code) if absorbing else ()),
        *resolution.check_kernels(model, x),
    )
    resolution.check_resolution(model, x, what="initial configurations")
    absorption = Absorption(backend, model, ev, run.chains) if absorbing else None
    absorbed = np.zeros(run.chains, dtype=bool) if absorption is None else absorption.absorbed
    tic = time.perf_counter()

    def result(times: np.ndarray, done: np.ndarray, budget: int) -> FirstPassage:
        arguments = {
            "max_steps": budget,
            "chains": run.chains,
            "first_chain": run.first_chain,
            "mode": "exact",
            "device": device,
        }
        return run.passage(tic, times, ~done, absorbed, budget, arguments)

    try:
        times, done = drive(
            backend, model, X, run.state, max_steps, ev, progress, absorption=absorption,
            interruptible=True,
        )  # fmt: skip
    except Halted as halt:
        if halt.t == 0:
            raise KeyboardInterrupt from None
        times = np.minimum(halt.times, halt.t)  # the chains still running: censored at t
        raise Interrupted(
            f"interrupted at step {halt.t} of {max_steps}: the exception's result is this run "
            f"with max_steps={halt.t}",
            result(times, halt.done, halt.t),
        ) from None
    final = X if not done.any() else X[~done]
    announce_compile(progress, *resolution.check_kernels(model, final))
    resolution.check_resolution(model, final, what="censored chains (final states)")
    return result(times, done, max_steps)


def _copies(x: np.ndarray, C: int) -> tuple[str | None, int]:
    """Beside an exact first passage: the event's arrays may hold one copy of x, the last
    resolution check one of the censored chains' states."""
    return None, x.nbytes + 8 * C * x.shape[1] * x.shape[2]
