"""The thin typed API: validate, allocate, call the kernels in chunks of steps, wrap the results.

:func:`simulate` runs a fixed number of steps; :func:`first_passage` runs until a stopping event
(or ``max_steps``, which censors the chain). Both accept one initial configuration shared by all
chains (n×d) or one per chain (chains×n×d), and a keyword-only ``rng``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numba
import numpy as np

from . import _kernels
from .events import Compiled
from .models import Hardmax, Localmax, SoftmaxChain, SoftmaxFlow
from .results import FirstPassage, Run, provenance
from ._validate import check_memory, integer
from .rng import as_seed

__all__ = ["simulate", "first_passage"]

_MODELS = (SoftmaxChain, SoftmaxFlow, Hardmax, Localmax)
# A call to the kernel starts this many steps long and doubles while it takes under _CALL_SECONDS,
# so that progress reports come often without per-call overhead dominating short steps.
_FIRST_CALL_STEPS = 16
_CALL_SECONDS = 0.5
# Largest |score| bound accepted at time 0 (beta * score differences must stay finite).
_SCORE_LIMIT = 1e307


def _initial(x0, chains) -> tuple[np.ndarray, int]:
    """x0 as a (1 or C, n, d) float64 array (the caller's own array when it is one: the chains
    run on a copy), and the number of chains."""
    try:
        x = np.asarray(x0, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("x0 must be a numeric n×d or chains×n×d array") from None
    if x.ndim not in (2, 3) or 0 in x.shape:
        raise ValueError(f"x0 must be an n×d or chains×n×d array, got shape {x.shape}")
    bad = ~np.isfinite(x)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"x0 must be finite, got x0{list(where)} = {x[where]!r}")
    if x.ndim == 2:
        return x[None], 1 if chains is None else integer("chains", chains, 1)
    if chains is not None and integer("chains", chains, 1) != x.shape[0]:
        raise ValueError(f"chains={chains} but x0 holds {x.shape[0]} configurations")
    return x, x.shape[0]


def _check_model(model):
    if not isinstance(model, _MODELS):
        raise TypeError(f"model must be one of {[m.__name__ for m in _MODELS]}, got {model!r}")


def kernels_cold(*dispatchers) -> bool:
    """Whether calling any of these numba dispatchers will compile (nothing compiled in this
    process and no fresh entry in numba's on-disk cache). False when numba cannot tell."""
    for f in dispatchers:
        try:
            if not f.signatures and not f._cache._cache_file._load_index():
                return True
        except (AttributeError, OSError, ValueError):  # numba internals changed: stay quiet
            continue
    return False


def announce_compile(progress, *dispatchers) -> None:
    """One line on stderr before a first call that compiles, when a progress bar is shown."""
    if progress is True and kernels_cold(*dispatchers):
        sys.stderr.write("compiling kernels (once; later runs load them from the cache)...\n")
        sys.stderr.flush()


class _Progress:
    """A tqdm bar on stderr, or a user callback(steps_done, total, chains_done).

    With ``by="steps"`` (every chain runs all ``total`` steps) the bar counts steps, whose cost is
    even, and tqdm's estimate of the time left holds. With ``by="chains"`` (first passage) it
    counts chains that stopped, with the current step and the elapsed time only: escape times
    are random, so no honest estimate of the time left exists.
    """

    def __init__(self, progress, total, chains: int, *, by: str = "chains"):
        self.callback = progress if callable(progress) else None
        self.total, self.by, self.bar = total, by, None
        if progress is True:
            from tqdm.auto import tqdm

            if by == "steps":
                self.bar = tqdm(total=int(total), unit="step", desc="steps", leave=True,
                                file=sys.stderr, dynamic_ncols=True)
            else:
                self.bar = tqdm(total=chains, unit="chain", desc="chains stopped", leave=True,
                                file=sys.stderr, dynamic_ncols=True,
                                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}"
                                " [{elapsed} elapsed{postfix}]")

    def __call__(self, done_steps, done_chains: int):
        if self.callback is not None:
            self.callback(done_steps, self.total, done_chains)
        elif self.bar is not None:
            if self.by == "steps":
                self.bar.update(int(done_steps) - self.bar.n)
            else:
                self.bar.set_postfix_str(f"step {_count(done_steps)}", refresh=False)
                self.bar.update(done_chains - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _count(steps) -> str:
    return f"{steps:.4g}" if isinstance(steps, float) and steps >= 1e7 else f"{int(steps)}"


def _drive(model, X, state, total: int, compiled: Compiled | None, progress,
           on_chunk: Callable | None = None, stops: np.ndarray | None = None):
    """Run the kernel over steps 0..total-1 in growing chunks; returns (steps, done).

    Chunks end at every time in ``stops`` (sorted), where ``on_chunk`` can record the state."""
    C, n, d = X.shape
    B = model.key_query(d)
    beta = float(getattr(model, "beta", np.inf))
    by_point = getattr(model, "ties", "index") == "point"
    tol = float(getattr(model, "tol", 0.0))
    rule = int(getattr(model, "rule", 0))
    if compiled is None:
        compiled = Compiled(_kernels.NO_EVENT, np.zeros((1, n, d)), np.zeros((1, n)),
                            np.zeros(n, np.int64), np.array([0, n], np.int64),
                            np.arange(n, dtype=np.int64), 0.0)
    steps = np.full(C, total, dtype=np.int64)
    done = np.zeros(C, dtype=bool)
    if compiled.code != _kernels.NO_EVENT:
        _kernels.events_at(X, compiled.code, *compiled[1:], done)
        steps[done] = 0
    report = _Progress(progress, total, C,
                       by="steps" if compiled.code == _kernels.NO_EVENT else "chains")
    t, chunk = 0, _FIRST_CALL_STEPS
    try:
        while t < total and not done.all():
            k = min(chunk, total - t)
            if stops is not None:
                following = stops[np.searchsorted(stops, t, side="right"):]
                if following.size:
                    k = min(k, int(following[0]) - t)
            gammas, P, use_P = model.step_arrays(d, t, k)
            margins = model.margin_arrays(t, k)
            tic = time.perf_counter()
            _kernels.advance(model.code, X, B, beta, gammas, P, use_P, by_point, tol, state, t,
                             k, compiled.code, *compiled[1:], steps, done, margins, rule,
                             numba.get_num_threads())
            if time.perf_counter() - tic < _CALL_SECONDS:
                chunk *= 2
            t += k
            if not np.isfinite(X).all():
                c = int(np.flatnonzero(~np.isfinite(X).all(axis=(1, 2)))[0])
                raise FloatingPointError(f"chain {c} has a non-finite state by step {t}: scores "
                                         f"overflowed, or a step matrix grew the hull without "
                                         f"bound")
            if on_chunk is not None:
                on_chunk(t)
            report(t, int(done.sum()))
    finally:
        report.close()
    return steps, done


def _check_scores(x, B):
    """Refuse configurations whose scores |<B x_i, x_j>| could overflow: softmax would then see
    inf - inf and the step would be silently wrong. Every later state stays in the hull of x0
    (scalar steps), so the bound at time 0 holds throughout."""
    size = np.abs(x).max()
    with np.errstate(over="ignore"):
        bound = float(size * size * np.abs(B).sum(axis=1).max() * x.shape[2])
    if not bound < _SCORE_LIMIT:
        raise ValueError(f"x0 and B give scores up to ~{bound:.3g}, beyond the {_SCORE_LIMIT:.0e} "
                         f"that float64 softmax handles; rescale x0 or B")


def _prepare(model, x0, chains, first_chain):
    """Validated (x, C, first_chain): nothing of the size of the run is allocated yet."""
    _check_model(model)
    x, C = _initial(x0, chains)
    first_chain = integer("first_chain", first_chain, 0)
    _check_scores(x, model.key_query(x.shape[2]))
    return x, C, first_chain


def run_bytes(C: int, n: int, d: int) -> int:
    """Memory of a run of C chains of n tokens in R^d: the state, the per-chain streams and
    counters, the finiteness check's mask, and the kernels' scratch buffers per thread."""
    import numba

    state = 8 * C * n * d
    scratch = 8 * n * (2 * min(n, _kernels._ROWS) + 4 * d + 8) + 8 * (d + 3) ** 2
    return state + 48 * C + C * n * d + min(C, numba.get_num_threads()) * scratch


def _start(model, x, C, rng, first_chain):
    """The chains' state (a fresh (C, n, d) copy of x), the seed and the per-chain streams.
    Call after the memory check."""
    seed = as_seed(rng)
    X = np.empty((C,) + x.shape[1:])
    X[...] = x
    return X, seed, seed.streams(C, first_chain)


def _neighbour_sets(model, X, t: int, out: np.ndarray) -> None:
    """out[c, i, j] = whether j is in token i's neighbour (leader) set in X[c] at step t: the set
    that the step from t uses (Hardmax: every index within the tie tolerance, whatever ``ties``)."""
    margin = float(model.margin_arrays(t, 1)[0])
    _kernels.neighbour_sets(model.code, X, model.key_query(X.shape[2]), margin,
                            int(getattr(model, "rule", 0)), float(getattr(model, "tol", 0.0)), out)


def _record_plan(record_every, record_at, steps: int):
    """(what, number of snapshots, steps or None) of a recording request, validated; the steps
    of ``record_every`` are built by :func:`_record_times` once their memory is checked."""
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
        raise ValueError(f"record_at must be a non-empty 1-D sequence of integers, "
                         f"got {record_at!r}")
    bad = (at < 0) | (at > steps)
    if bad.any():
        raise ValueError(f"record_at must lie in [0, steps={steps}], got {int(at[bad][0])}")
    if (np.diff(at) <= 0).any():
        raise ValueError("record_at must be strictly increasing")
    return "record_at", at.size, at.astype(np.int64)


def _record_times(plan, steps: int):
    """The steps at which simulate keeps the state (int64, increasing), or None."""
    _, _, spec = plan
    if spec is None or isinstance(spec, np.ndarray):
        return spec
    return np.union1d(np.arange(0, steps + 1, spec, dtype=np.int64), [steps])


def simulate(model, x0, *, steps, chains=None, rng=None, record_every=None, record_at=None,
             progress=False, first_chain=0, record_neighbours=False) -> Run:
    """Run ``chains`` independent chains of ``model`` for ``steps`` steps from ``x0``.

    Parameters
    ----------
    model : SoftmaxChain, SoftmaxFlow, Hardmax or Localmax
    x0 : array, (n, d) shared by all chains or (chains, n, d) one per chain
    steps : int >= 1
    chains : int, optional (default 1, or x0.shape[0] for a 3-D x0)
    rng : None, int, SeedSequence or Generator
        Root of the per-chain streams (recorded in the result).
    record_every : int, optional
        Keep the states at steps 0, k, 2k, ... and the last step. The trajectory takes
        chains × (steps // k + 2) × n × d × 8 bytes; a request larger than half the available
        memory is refused with the number.
    record_at : sequence of int, optional
        Instead of ``record_every``: keep the states at exactly these steps (distinct, in
        [0, steps]; e.g. log-spaced), in increasing order.
    progress : bool or callable(steps_done, total, chains_done)
        True: a tqdm bar on stderr (steps here; chains stopped in :func:`first_passage`), and
        one line first when the kernels are about to be compiled.
    first_chain : int
        Index of the first chain (chain k's stream depends only on the seed and k).
    record_neighbours : bool
        Hardmax and Localmax only, with ``record_every`` or ``record_at``: also keep, at each
        recorded step t, the
        neighbour sets that the step from t uses, as ``Run.neighbours[c, r, i, j]`` (j in N_i at
        step ``times[r]``; Hardmax: the leader set L_i) and ``Run.leaders`` (i in N_i). The
        sets at the last step use r_steps, so an r schedule then needs steps + 1 entries. Adds
        chains × snapshots × n × n bytes to the memory check.

    Raises
    ------
    MemoryError
        Before anything is allocated, when the run (state, trajectory, kernel buffers) would
        take more than half of the available memory (``MemAvailable``); the message gives both.

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
            raise ValueError(f"record_neighbours needs a Hardmax or Localmax model, "
                             f"got {type(model).__name__}")
        if record_every is None and record_at is None:
            raise ValueError("record_neighbours needs record_every or record_at (the steps to "
                             "record at)")
        if isinstance(model, Localmax) and isinstance(model.r, np.ndarray) \
                and model.r.size < steps + 1:
            raise ValueError(f"record_neighbours: the neighbour sets at the last step t = {steps} "
                             f"use r_{steps}, but the r schedule has {model.r.size} entries "
                             f"(give steps + 1)")
    x, C, first_chain = _prepare(model, x0, chains, first_chain)
    n, d = x.shape[1:]
    plan = _record_plan(record_every, record_at, steps)
    what, count, _ = plan
    sets = C * n * n if record_neighbours else 0
    need = run_bytes(C, n, d) + count * (8 * C * n * d + sets) + sets
    check_memory(f"{what}: the trajectory" if what else f"a run of {C} chains of {n} tokens in "
                 f"R^{d}", need)
    announce_compile(progress, _kernels.seed_streams, _kernels.advance)
    X, seed, state = _start(model, x, C, rng, first_chain)
    snapshots, neighbours = None, None
    times = _record_times(plan, steps)
    if times is not None:
        snapshots = np.empty((X.shape[0], count) + X.shape[1:])
        if record_neighbours:
            sets = np.empty((C, n, n), dtype=bool)
            neighbours = np.empty((C, count, n, n), dtype=bool)
        filled = [0]

        def on_chunk(t):
            if filled[0] < count and t == times[filled[0]]:
                snapshots[:, filled[0]] = X
                if neighbours is not None:
                    _neighbour_sets(model, X, t, sets)
                    neighbours[:, filled[0]] = sets
                filled[0] += 1

        on_chunk(0)
    tic = time.perf_counter()
    _drive(model, X, state, steps, None, progress,
           on_chunk if snapshots is not None else None, times)
    meta = provenance(wall_seconds=time.perf_counter() - tic, n=X.shape[1], d=X.shape[2])
    return Run(final=X, steps=steps, model=model.to_dict(), seed=seed.to_dict(),
               trajectory=snapshots, times=times, first_chain=int(first_chain), provenance=meta,
               neighbours=neighbours)


def first_passage(model, x0, event, *, max_steps, chains=None, rng=None, progress=False,
                  first_chain=0, mode="exact", merge_tol=None) -> FirstPassage:
    """First step at which each of ``chains`` independent chains meets ``event``.

    The event is checked at time 0 and after every step; a chain that has not met it after
    ``max_steps`` steps is right-censored (``censored`` True, ``steps`` = max_steps). Trajectories
    are not stored. Parameters as in :func:`simulate`; ``event`` is a LeaveBall, LeaveHull,
    ReachVertices or Collapse.

    ``mode="exact"`` (default) takes every step, drawing every pick with its probability to full
    relative precision. ``mode="accelerated"`` (SoftmaxChain with a constant step only) skips the
    steps in which no token leaves its group, drawing their number from the exact geometric law,
    merges groups closer than ``merge_tol`` (relative, default 1e-10), samples probabilities
    below 2^-53 as they are and counts steps in float64 (``max_steps`` may be a float such as
    1e100): see :mod:`metastab.accelerate`. In exact mode a
    :class:`~metastab.accelerate.ResolutionWarning` says when the initial configurations, or the
    final ones of censored chains, can only leave their groups through picks whose weights
    underflow to 0 (exponent below ``accelerate.underflow_exponent()`` ≈ −708.74).

    Examples
    --------
    >>> import metastab as ms
    >>> x0 = ms.regular_polygon(5).vertices
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=2.0, gamma=0.5), x0, ms.LeaveBall(0.1),
    ...                       max_steps=1000, chains=8, rng=3)
    >>> fp.steps.shape, fp.censored.dtype
    ((8,), dtype('bool'))
    """
    from . import accelerate

    if mode == "accelerated":
        return accelerate.first_passage_accelerated(
            model, x0, event, max_steps=max_steps, chains=chains, rng=rng, progress=progress,
            first_chain=first_chain, merge_tol=merge_tol)
    if mode != "exact":
        raise ValueError(f"mode must be one of {accelerate.MODES}, got {mode!r}")
    if merge_tol is not None:
        raise ValueError(f"merge_tol applies to mode='accelerated' only, "
                         f"got merge_tol={merge_tol!r}")
    max_steps = integer("max_steps", max_steps, 1)
    if not hasattr(event, "compile"):
        raise TypeError(f"event must be a LeaveBall, LeaveHull, ReachVertices or Collapse, "
                        f"got {event!r}")
    x, C, first_chain = _prepare(model, x0, chains, first_chain)
    n, d = x.shape[1:]
    # the event's arrays may hold one copy of x, the last resolution check one of the censored
    # chains' states
    check_memory(f"a run of {C} chains of {n} tokens in R^{d}",
                 run_bytes(C, n, d) + x.nbytes + 8 * C * n * d)
    announce_compile(progress, _kernels.seed_streams, _kernels.advance,
                     _kernels.cross_weights)
    accelerate.check_resolution(model, x, what="initial configurations")
    X, seed, state = _start(model, x, C, rng, first_chain)
    compiled = event.compile(np.ascontiguousarray(x), model.key_query(d))
    tic = time.perf_counter()
    steps, done = _drive(model, X, state, max_steps, compiled, progress)
    accelerate.check_resolution(model, X if not done.any() else X[~done],
                                what="censored chains (final states)")
    meta = provenance(wall_seconds=time.perf_counter() - tic, n=X.shape[1], d=X.shape[2])
    return FirstPassage(steps=steps, censored=~done, final=X, max_steps=max_steps,
                        model=model.to_dict(), event=event.to_dict(), seed=seed.to_dict(),
                        first_chain=int(first_chain), provenance=meta)
