"""Throughput of SA_P: metastab's numba kernels beside a plain vectorised NumPy chain.

Workload W1: the regular pentagon on the unit circle plus 15 interior tokens at 0.5·v_a
(round robin, :func:`metastab.setups.initial.shrunk`), n = 20, d = 2, β = 20, γ = 0.1, B = I, by
default 2048 chains × 500 steps. The figure of merit is token-steps per second,
chains × steps × n / wall seconds, best of ``repeat`` timed runs, each after an untimed warm-up
(which compiles or loads the numba cache).

The NumPy baseline (:func:`numpy_chain`) is a reference for this benchmark only: the same law,
not the same random numbers, so its paths are not bit-identical to metastab's.
"""

from __future__ import annotations

import math
import sys
import time
from functools import partial
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from ..engine import announce_compile_for, first_passage, simulate
from ..engine.progress import tqdm_class
from ..kernels.cache import njit_keyed
from ..kernels.cpu import euclidean_steps as _steps
from ..models import SoftmaxChain
from ..setups.initial import shrunk
from ..setups.polytopes import regular_polygon
from . import jax_baselines as bench_jax

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import ArrayLike

    from ..rng import RNGLike

__all__ = [
    "numpy_chain",
    "workload_w1",
    "run_bench",
    "escape_bench",
    "sizes_bench",
    "fma_peak",
    "exp_seconds",
    "host_cpu",
    "TARGET_RATIO",
    "ESCAPE_BETAS",
    "ESCAPE_CHAINS",
    "SIZES",
    "SIZE_TARGETS",
    "PEAK_TARGET",
]

TARGET_RATIO = 12.0  # W1: metastab at least 12x the NumPy chain, same run
JAX_TARGET = 5.0  # W1: metastab at least 5x the JAX chain (inverse-CDF pick), same run
ESCAPE_BETAS = (8.0, 10.0, 12.0)
ESCAPE_CHAINS = 60
W1_BETA = 20.0
W1_GAMMA = 0.1


def workload_w1() -> np.ndarray:
    """The 20×2 initial configuration of W1 (pentagon vertices, then 15 tokens at 0.5·v_a).

    Returns
    -------
    x0 : ndarray, shape (20, 2)
        The five vertices of the regular pentagon, then 15 tokens at half of them (round
        robin).

    Examples
    --------
    >>> from metastab.bench.chains import workload_w1
    >>> x0 = workload_w1()
    >>> x0.shape, x0[5].tolist()
    ((20, 2), [0.5, 0.0])
    """
    return shrunk(regular_polygon(5), 20, 0.5)


def numpy_chain(
    x0: ArrayLike, beta: float, gamma: float, *, steps: int, chains: int, rng: RNGLike = None
) -> np.ndarray:
    """SA_P for B = I in plain vectorised NumPy; returns the (chains, n, d) final states.

    Per step, for all chains at once: scores s_ij = <x_i, x_j> by einsum, weights
    exp(β (s_ij − max_k s_ik)), their cumulative sums, one uniform u per token and the inverse-CDF
    draw j = #{k : cumsum_k < u · total}; then the synchronous move x_i ← x_i + γ (x_j − x_i).

    Parameters
    ----------
    x0 : array_like, shape (n, d)
        The initial configuration, shared by all chains.
    beta : float
        The inverse temperature.
    gamma : float
        The step.
    steps : int
        The number of steps.
    chains : int
        The number of chains, all advanced at once.
    rng : None, int or Generator
        The seed of NumPy's generator (one stream for all chains: not metastab's streams).

    Returns
    -------
    X : ndarray, shape (chains, n, d)
        The final states.

    Examples
    --------
    >>> from metastab.bench.chains import numpy_chain, workload_w1
    >>> numpy_chain(workload_w1(), 20.0, 0.1, steps=3, chains=2, rng=0).shape
    (2, 20, 2)
    """
    gen = np.random.default_rng(rng)
    X = np.array(np.broadcast_to(np.asarray(x0, dtype=float), (chains,) + np.shape(x0)))
    n = X.shape[1]
    S = np.empty((chains, n, n))  # C-contiguous (einsum alone returns a strided array)
    for _ in range(steps):
        np.einsum("cik,cjk->cij", X, X, out=S, optimize=True)
        S -= S.max(axis=2, keepdims=True)
        S *= beta
        np.exp(S, out=S)
        np.cumsum(S, axis=2, out=S)
        u = gen.random((chains, n))
        u *= S[:, :, -1]
        pick = np.minimum(np.count_nonzero(S < u[:, :, None], axis=2), n - 1)
        target = np.take_along_axis(X, pick[:, :, None], axis=1)
        X += gamma * (target - X)
    return X


def _best(fn, repeat: int, bar=None) -> float:
    best = np.inf
    for _ in range(repeat):
        tic = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - tic)
        if bar is not None:
            bar.update()  # between timings: never inside one
    return best


def run_bench(
    *,
    chains: int = 2048,
    steps: int = 500,
    repeat: int = 3,
    seed: int = 0,
    progress: bool = False,
    jax: bool | None = None,
) -> dict:
    """Token-steps per second of metastab.simulate and of :func:`numpy_chain` on W1.

    Parameters
    ----------
    chains, steps : int >= 1
        The size of each timed run (default 2048 chains × 500 steps).
    repeat : int >= 1
        The timed runs of each side, alternating; the best counts.
    seed : int
        The seed of every run.
    progress : bool
        Count the timed runs on a tqdm bar on stderr (updated between runs, so the timings do
        not include it).
    jax : bool or None
        Time the JAX chain too: True, False, or None for whenever JAX is installed (the
        ``bench`` extra; :func:`.jax_baselines.wanted`).

    Returns
    -------
    figures : dict
        chains, steps, n, repeat, threads, numba_seconds, numpy_seconds, numba_rate,
        numpy_rate (token-steps/s), ratio and target; with JAX also jax_seconds, jax_rate,
        jax_ratio (JAX seconds / metastab seconds) and jax_target, timed in the same
        alternation (else None).

    Examples
    --------
    >>> from metastab.bench.chains import run_bench
    >>> figures = run_bench(chains=4, steps=5, repeat=1, jax=False)   # a tiny run
    >>> figures["n"], figures["jax_rate"], figures["numba_rate"] > 0
    (20, None, True)
    """
    for name, value in (("chains", chains), ("steps", steps), ("repeat", repeat)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    x0 = workload_w1()
    model = SoftmaxChain(beta=W1_BETA, gamma=W1_GAMMA)
    announce_compile_for(progress, "exact")
    simulate(model, x0, steps=2, chains=2, rng=seed)  # warm-up: compile or load the cache
    numpy_chain(x0, W1_BETA, W1_GAMMA, steps=2, chains=2, rng=seed)
    use_jax = bench_jax.wanted(jax)
    if use_jax:  # compile for the timed shape
        bench_jax.jax_chain(x0, W1_BETA, W1_GAMMA, steps=steps, chains=chains, seed=seed)
    bar = None
    if progress:
        bar = tqdm_class()(
            total=(3 if use_jax else 2) * repeat,
            desc="timed runs (numba, numpy, jax)",
            unit="run",
            file=sys.stderr,
        )
    runs = {
        "numba": lambda: simulate(model, x0, steps=steps, chains=chains, rng=seed),
        "numpy": lambda: numpy_chain(x0, W1_BETA, W1_GAMMA, steps=steps, chains=chains, rng=seed),
    }
    if use_jax:
        runs["jax"] = lambda: bench_jax.jax_chain(
            x0, W1_BETA, W1_GAMMA, steps=steps, chains=chains, seed=seed
        )
    best = dict.fromkeys(runs, np.inf)
    try:
        for _ in range(repeat):  # alternately, so that a busy spell hits them alike
            for name, run in runs.items():
                best[name] = min(best[name], _best(run, 1, bar))
    finally:
        if bar is not None:
            bar.close()
    numba_s, numpy_s = best["numba"], best["numpy"]
    jax_s = best["jax"] if use_jax else None
    work = chains * steps * x0.shape[0]
    return {
        "chains": chains,
        "steps": steps,
        "n": x0.shape[0],
        "repeat": repeat,
        "threads": numba.get_num_threads(),
        "numba_seconds": numba_s,
        "numpy_seconds": numpy_s,
        "numba_rate": work / numba_s,
        "numpy_rate": work / numpy_s,
        "ratio": numpy_s / numba_s,
        "target": TARGET_RATIO,
        "jax_seconds": jax_s,
        "jax_rate": None if jax_s is None else work / jax_s,
        "jax_ratio": None if jax_s is None else jax_s / numba_s,
        "jax_target": JAX_TARGET,
    }


def escape_bench(
    betas: Sequence[float] = ESCAPE_BETAS,
    *,
    chains: int = ESCAPE_CHAINS,
    exact_factor: float = 10.0,
    seed: int = 0,
    progress: bool = False,
    on_row: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Seconds per observed escape of ``first_passage`` in exact and in accelerated mode.

    Workload: the [FW] Thm 5.4 exit from the clustered state on the regular triangle (unit
    circle, B = I): the vertices, then six tokens at 0.8·v_a
    (:func:`metastab.setups.initial.shrunk`, two per vertex, coincident), γ = 0.1, event
    :class:`~metastab.LeaveHull` with the groups of the vertices and ε = 2γ d(K). For each β the
    accelerated mode runs ``chains`` chains to their escape; the exact mode runs ``chains``
    chains with the budget ``exact_factor`` times the accelerated mean (a few are censored:
    seconds are divided by the escapes observed). Each mode is warmed up (compiled or loaded from
    the cache) before it is timed. Not a timed test.

    Parameters
    ----------
    betas : sequence of float
        The β values (default :data:`ESCAPE_BETAS`).
    chains : int
        The chains of each mode at each β (default :data:`ESCAPE_CHAINS`).
    exact_factor : float
        The exact mode's budget in units of the accelerated mean escape time.
    seed : int
        The seed of every run.
    progress : bool
        Show the runs' progress bars on stderr.
    on_row : callable, optional
        Called with each β's row as soon as it is measured.

    Returns
    -------
    rows : list of dict
        One per β: beta, mean_steps (accelerated), exact_escapes, exact_s_per_escape,
        accelerated_s_per_escape, ratio (exact / accelerated), threads.

    Examples
    --------
    >>> from metastab.bench.chains import escape_bench
    >>> [row] = escape_bench((8.0,), chains=2, exact_factor=2.0)   # a tiny run
    >>> row["beta"], row["mean_steps"], row["exact_escapes"]
    (8.0, 4235.5, 2)
    """
    from ..events import LeaveHull

    x0 = shrunk(regular_polygon(3), 9, 0.8)
    K = regular_polygon(3)
    gamma = 0.1
    event = LeaveHull(groups=np.tile(np.arange(3), 3), radius=2 * gamma * K.diameter)
    rows = []
    for beta in betas:
        model = SoftmaxChain(beta=float(beta), gamma=gamma)
        announce_compile_for(progress, "passage", "accelerated")
        for mode in ("exact", "accelerated"):  # warm-up
            first_passage(model, x0, event, max_steps=10, chains=2, rng=seed, mode=mode)
        tic = time.perf_counter()
        fast = first_passage(
            model,
            x0,
            event,
            max_steps=1e300,
            chains=chains,
            rng=seed,
            mode="accelerated",
            progress=progress,
        )
        fast_s = time.perf_counter() - tic
        mean = float(fast.times.mean())
        tic = time.perf_counter()
        exact = first_passage(
            model,
            x0,
            event,
            max_steps=max(1, int(exact_factor * mean)),
            chains=chains,
            rng=seed,
            progress=progress,
        )
        exact_s = time.perf_counter() - tic
        per_exact = exact_s / exact.events if exact.events else math.inf
        per_fast = fast_s / fast.events
        rows.append(
            {
                "beta": float(beta),
                "mean_steps": mean,
                "exact_escapes": exact.events,
                "exact_s_per_escape": per_exact,
                "accelerated_s_per_escape": per_fast,
                "ratio": per_exact / per_fast,
                "threads": numba.get_num_threads(),
            }
        )
        if on_row is not None:
            on_row(rows[-1])
    return rows


# (n, d, chains, steps) of :func:`sizes_bench`: from W1's size to transformer-like n and d; one
# chain, fewer than the threads, has each step's tokens split over them
SIZES = (
    (20, 2, 2048, 200),
    (64, 8, 512, 100),
    (256, 16, 64, 50),
    (1024, 64, 1, 20),
    (1024, 64, 8, 20),
)
# ratio targets of bench --sizes, by (n, d, chains); the last size should also reach this
# fraction of the measured FMA peak
SIZE_TARGETS = {(256, 16, 64): 10.0, (1024, 64, 8): 8.0}
PEAK_TARGET = 0.30
_jit = njit_keyed()  # numba's cache, under the lock that processes sharing it need


def host_cpu() -> str:
    """The CPU that numba compiles the kernels for, as LLVM names it, and its widest vectors of
    doubles: e.g. ``"znver3 (AVX2)"``. Benches print it, since their figures depend on it
    (``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES`` override the host's, as in numba).

    Returns
    -------
    cpu : str
        ``"NAME (ISA)"``, the ISA one of AVX-512, AVX2 or "no AVX2".

    Examples
    --------
    >>> from metastab.bench.chains import host_cpu
    >>> host_cpu().endswith(("(AVX-512)", "(AVX2)", "(no AVX2)"))
    True
    """
    from llvmlite.binding import get_host_cpu_features, get_host_cpu_name
    from numba.core import config

    name = config.CPU_NAME or get_host_cpu_name()
    feats = config.CPU_FEATURES
    if feats is None:
        feats = get_host_cpu_features().flatten()
    have = set(feats.split(","))
    isa = "AVX-512" if "+avx512f" in have else "AVX2" if "+avx2" in have else "no AVX2"
    return f"{name} ({isa})"


_PEAK_LANES = 512  # independent FMA chains per thread (a multiple of any SIMD width)


@_jit(fastmath={"contract"})
def _fma_loop(reps, m, c, acc):
    """reps x 16 dependent a <- a m + c per lane; lanes are independent and vectorise."""
    for _ in range(reps):
        for k in range(acc.shape[0]):
            a = acc[k]
            for _ in range(16):
                a = a * m + c
            acc[k] = a


@_jit(parallel=True)
def _fma_threads(reps, m, c, acc):
    for t in numba.prange(acc.shape[0]):
        _fma_loop(reps, m, c, acc[t])


def fma_peak(seconds: float = 0.3, repeat: int = 5) -> float:
    """The measured double-precision FMA rate of the numba threads, in flop/s (2 per FMA).

    A numba loop of independent fused multiply-adds per thread (one FMA chain per lane, LLVM's
    widest vectors), best of ``repeat`` runs of about ``seconds`` each.

    Parameters
    ----------
    seconds : float
        The length of each timed run, about.
    repeat : int
        The timed runs; the best counts.

    Returns
    -------
    flops : float
        Floating-point operations per second, all numba threads together.

    Examples
    --------
    >>> from metastab.bench.chains import fma_peak
    >>> fma_peak(seconds=0.01, repeat=1) > 0
    True
    """
    acc = np.full((numba.get_num_threads(), _PEAK_LANES), 0.5)
    _fma_threads(1, 0.999, 1e-3, acc)
    reps = 16
    while True:
        tic = time.perf_counter()
        _fma_threads(reps, 0.999, 1e-3, acc)
        if time.perf_counter() - tic > seconds / 4:
            break
        reps *= 2
    flops = 2 * 16 * reps * acc.size
    return flops / _best(lambda: _fma_threads(reps, 0.999, 1e-3, acc), repeat)


@numba.njit  # not cached: it calls into a kernel file, whose edits numba's cache would miss
def _exp_loop(reps, z, out):
    for _ in range(reps):
        _steps.exp_nonpositive(z, out)


def exp_seconds(repeat: int = 5, size: int = 1024, reps: int = 2000) -> float:
    """Seconds per exponential of the kernels' own exp on one thread (the bit-exact FMA exp of
    :func:`metastab.kernels.cpu.euclidean_steps.exp_nonpositive`, which every softmax weight goes
    through), best of ``repeat`` runs over ``size`` arguments in [-30, 0], ``reps`` times each.

    Parameters
    ----------
    repeat : int
        The timed runs; the best counts.
    size : int
        The arguments of each pass.
    reps : int
        The passes of each run.

    Returns
    -------
    seconds : float
        Seconds per exponential.

    Examples
    --------
    >>> from metastab.bench.chains import exp_seconds
    >>> 0 < exp_seconds(repeat=1, size=64, reps=10) < 1e-6
    True
    """
    z = -30.0 * np.random.default_rng(0).random(size)
    out = np.empty(size)
    _exp_loop(1, z, out)
    return _best(lambda: _exp_loop(reps, z, out), repeat) / (reps * size)


def _sphere(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def sizes_bench(
    sizes: Sequence[tuple[int, int, int, int]] = SIZES,
    *,
    beta: float = 5.0,
    gamma: float = 0.1,
    repeat: int = 3,
    seed: int = 0,
) -> dict:
    """Token-steps per second of metastab.simulate and of :func:`numpy_chain` from n = 20 to
    transformer-like n and d (unit-sphere tokens, B = I), and the machine's FMA peak.

    Both run in the same process, alternating: the median over ``repeat`` turns of the better of
    two back-to-back runs (the first run after the other side's can be slowed by where the
    operating system left the threads: up to 2x for one chain split over two threads).
    ``gflops`` counts the 2 n d flops of scores per token-step; ``peak_fraction`` is that rate at
    the last size over :func:`fma_peak`, measured in the same run.

    Parameters
    ----------
    sizes : sequence of (n, d, chains, steps)
        The workloads (default :data:`SIZES`).
    beta, gamma : float
        The chain's inverse temperature and step.
    repeat : int
        The turns of each size; the median counts.
    seed : int
        The seed of the tokens and of every run.

    Returns
    -------
    figures : dict
        rows (a list of dicts n, d, chains, steps, numba_rate, numpy_rate, ratio, gflops and
        target, the ratio of :data:`SIZE_TARGETS` or None), peak_flops, peak_fraction (at the
        last size), peak_target, exp_seconds (:func:`exp_seconds`), threads, repeat.

    Examples
    --------
    >>> from metastab.bench.chains import sizes_bench
    >>> figures = sizes_bench([(8, 2, 2, 3)], repeat=1)   # one tiny size
    >>> [(r["n"], r["d"], r["target"]) for r in figures["rows"]], figures["peak_flops"] > 0
    ([(8, 2, None)], True)
    """
    rows: list[dict[str, Any]] = []
    for n, d, chains, steps in sizes:
        x0 = _sphere(n, d, seed)
        model = SoftmaxChain(beta=beta, gamma=gamma)
        simulate(model, x0, steps=2, chains=2, rng=seed)
        numpy_chain(x0, beta, gamma, steps=2, chains=2, rng=seed)
        t_numba, t_numpy = [], []
        for _ in range(repeat):  # interleaved, so that both see the same machine load
            t_numba.append(
                _best(partial(simulate, model, x0, steps=steps, chains=chains, rng=seed), 2)
            )
            t_numpy.append(
                _best(
                    partial(numpy_chain, x0, beta, gamma, steps=steps, chains=chains, rng=seed), 2
                )
            )
        work = chains * steps * n
        a, b = float(np.median(t_numba)), float(np.median(t_numpy))
        rows.append(
            {
                "n": n,
                "d": d,
                "chains": chains,
                "steps": steps,
                "numba_rate": work / a,
                "numpy_rate": work / b,
                "ratio": b / a,
                "gflops": work / a * 2 * n * d / 1e9,
                "target": SIZE_TARGETS.get((n, d, chains)),
            }
        )
    peak = fma_peak()
    return {
        "rows": rows,
        "peak_flops": peak,
        "peak_fraction": rows[-1]["gflops"] * 1e9 / peak,
        "peak_target": PEAK_TARGET,
        "exp_seconds": exp_seconds(),
        "threads": numba.get_num_threads(),
        "repeat": repeat,
    }
