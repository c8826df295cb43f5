"""Generalised AMS on the Ornstein-Uhlenbeck chain, beside pyTAMS: ``metastab bench --workload
ams-ou``.

The chain is the exactly sampled Ornstein-Uhlenbeck process at step Δt, the AR(1) chain
X_{t+1} = ρ X_t + s ξ_t with ρ = e^{−θΔt}, s = √(1 − ρ²) (stationary law N(0, 1)), ξ_t standard
normal. :class:`OUChain` is its :class:`~metastab.engine.ams.ReplicaStepper` for the package's AMS
(:func:`metastab.engine.ams.run_ams`): A = {x_0 <= a}, B = {x_0 >= b}, an optional horizon,
replicas stepped in blocks of whole path segments (the recursion by ``scipy.signal.lfilter``),
each replica drawing from its own Philox stream keyed by its stream id.

The workload: p = P[max_{1<=t<=T} X_t >= b] from X_0 = x0, with no set A (the question that
pyTAMS's trajectory-adaptive splitting answers: paths of fixed length T that end early only in B),
estimated by ``runs`` independent runs of ``replicas`` replicas with each package, and the truth
by quadrature (:func:`horizon_probability`). Both kill the lowest replica (every replica at the
lowest level) and branch at the first state strictly above it; they differ by their estimator
(the unbiased product of Bréhier et al. 2016 here; pyTAMS's weighted ratio) and by how they run
the model (here the replicas of all runs that an iteration resamples advance together, in NumPy;
pyTAMS advances one trajectory a step at a time through its forward-model API, in a worker
process). The figure of merit is the CPU time at a common relative error ε of the mean
estimate: c ε⁻² r², c the CPU seconds of one run and r the relative standard deviation of one
run's estimate over the runs (the mean of m runs has relative error r/√m).
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import signal, special

from .._validate import integer, real
from ..engine.ams import BUDGET, FAILED, REACHED, Segment, run_ams

__all__ = [
    "AMS_OU",
    "EPSILON",
    "TARGET",
    "OUChain",
    "ams_ou_bench",
    "horizon_probability",
    "pytams_available",
    "run_pytams",
]

# The workload: θΔt = 0.1 (ρ = e^{−0.1}), T = 100 steps (ten relaxation times) from x0 = 0,
# B = {x >= 4} (p = 1.62e-3), 16 replicas per run. pyTAMS spends about 0.17 CPU s per
# trajectory it advances (a process-pool task with its SQLite bookkeeping) whatever the model
# costs, about 27 s a run here, and one of eight runs once spun in its main process for over
# five CPU minutes: 2 runs by default (--chains for more), and 1000 for metastab (seconds).
AMS_OU = {"rho": math.exp(-0.1), "b": 4.0, "x0": 0.0, "steps": 100, "replicas": 16}
PYTAMS_RUNS = 2
METASTAB_RUNS = 1000
EPSILON = 0.1  # the common relative error of the mean at which the costs are compared
TARGET = 1.0  # pyTAMS CPU / metastab CPU at equal error, at least


class OUChain:
    """The AR(1) chain X' = ρ X + s ξ in R^dim (every coordinate, independently), as a replica
    stepper of :func:`metastab.engine.ams.run_ams`: A = {x_0 <= a}, B = {x_0 >= b}.

    ``score`` (default x_0) maps states (K, dim) to K floats; B has score +inf. Paths that reach
    ``horizon`` steps without meeting B fail (P[τ_B <= horizon, τ_B < τ_A]); ``budget`` is a
    safety stop, reported as BUDGET. A replica draws its noise from the Philox generator with
    key (key0, key1) and counter (0, 0, slot, 0) of its stream id (key0, key1, slot), in blocks
    of ``block`` · 2^j steps at its j-th block, so its path depends on its id only, whatever the
    batch it runs in. ``steps`` counts the steps of all paths (to their end, not to the end of
    their last block).

    Parameters
    ----------
    rho : float in (-1, 1)
        The autoregression coefficient ρ (e^{−θΔt} for the Ornstein-Uhlenbeck process).
    s : float > 0
        The noise's scale (√(1 − ρ²) for a stationary law N(0, 1)).
    a : float
        The set A = {x_0 <= a} (default −inf: no set A).
    b : float > a
        The set B = {x_0 >= b}.
    dim : int >= 1
        The dimension of the state (default 1).
    score : callable, optional
        Maps states (K, dim) to K floats (default None: the first coordinate x_0).
    horizon : float >= 1
        The steps after which a path that has not met B fails (default inf: none).
    budget : int
        The safety stop on a path's steps, reported as BUDGET (default 10^8).
    block : int >= 1
        The steps of a replica's first block of noise (default 32; the j-th has block · 2^j).

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> from metastab.bench.ams import OUChain
    >>> from metastab.engine.ams import run_ams
    >>> chain = OUChain(0.9, math.sqrt(1 - 0.81), a=0.0, b=3.0)
    >>> out, _ = run_ams(chain, np.array([0.5]), replicas=20, runs=4, rng=1)
    >>> out.estimates.shape, bool((out.estimates > 0).all())
    ((4,), True)
    """

    def __init__(
        self,
        rho: float,
        s: float,
        *,
        a: float = -math.inf,
        b: float,
        dim: int = 1,
        score: Callable[[np.ndarray], np.ndarray] | None = None,
        horizon: float = math.inf,
        budget: int = 10**8,
        block: int = 32,
    ) -> None:
        if not (math.isfinite(rho) and abs(rho) < 1):
            raise ValueError(f"rho must be in (-1, 1), got {rho!r}")
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"s must be finite and > 0, got {s!r}")
        if not (math.isfinite(b) and a < b):
            raise ValueError(f"b must be finite and above a = {a!r}, got {b!r}")
        if not (isinstance(dim, int) and dim >= 1):
            raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
        if not horizon >= 1:
            raise ValueError(f"horizon must be >= 1, got {horizon!r}")
        if not (isinstance(block, int) and block >= 1):
            raise ValueError(f"block must be an integer >= 1, got {block!r}")
        self.rho, self.s, self.a, self.b, self.dim = float(rho), float(s), float(a), float(b), dim
        self.xi = score if score is not None else (lambda X: X[:, 0])
        self.horizon, self.budget, self.block = horizon, budget, block
        self.steps = 0

    def score(self, states: np.ndarray) -> np.ndarray:
        X = np.asarray(states, dtype=float).reshape(-1, self.dim)
        xi = np.array(self.xi(X), dtype=float)
        xi[X[:, 0] >= self.b] = math.inf
        return xi

    def advance(
        self, states: np.ndarray, clocks: np.ndarray, levels: np.ndarray, streams: np.ndarray
    ) -> list[Segment]:
        K, dim = states.shape[0], self.dim
        X = np.asarray(states, dtype=float).reshape(K, dim).copy()
        t = np.asarray(clocks, dtype=float).copy()
        lev = np.asarray(levels, dtype=float).copy()
        gens = [
            np.random.Generator(
                np.random.Philox(
                    key=streams[q, :2], counter=np.array([0, 0, streams[q, 2], 0], np.uint64)
                )
            )
            for q in range(K)
        ]
        status = np.full(K, FAILED)
        parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in range(K)]
        alive = np.flatnonzero(t < self.horizon)  # a path at the horizon takes no step
        j = 0
        while alive.size:
            n = alive.size
            cap = np.minimum(self.horizon, self.budget) - t[alive]
            m = np.minimum(self.block * 2 ** min(j, 30), cap).astype(np.int64)
            L = int(m.max())
            noise = np.zeros((n, L, dim))
            for i, q in enumerate(alive.tolist()):
                noise[i, : m[i]] = gens[q].standard_normal((int(m[i]), dim))
            path = signal.lfilter(
                [self.s], [1.0, -self.rho], noise, axis=1, zi=(self.rho * X[alive])[:, None, :]
            )[0]
            x0 = path[:, :, 0]
            xi = self.score(path.reshape(-1, dim)).reshape(n, L)
            inside = np.arange(L) < m[:, None]
            stop = ((x0 <= self.a) | (x0 >= self.b)) & inside
            met = stop.any(axis=1)
            end = np.where(met, stop.argmax(axis=1), m - 1)  # the last step of the path
            upto = np.arange(L) <= end[:, None]
            best = np.maximum.accumulate(np.concatenate([lev[alive, None], xi], axis=1), axis=1)
            rows, cols = np.nonzero((xi > best[:, :-1]) & upto)
            cuts = np.searchsorted(rows, np.arange(n + 1))
            for i, q in enumerate(alive.tolist()):
                c = cols[cuts[i] : cuts[i + 1]]
                if c.size:
                    parts[q].append((xi[i, c], t[q] + c + 1.0, path[i, c]))
            rng = np.arange(n)
            lev[alive] = best[rng, end + 1]
            X[alive] = path[rng, end]
            t[alive] += end + 1
            self.steps += int((end + 1).sum())
            reached = met & (x0[rng, end] >= self.b)
            status[alive[reached]] = REACHED
            over = ~met & (t[alive] >= self.budget) & (t[alive] < self.horizon)
            status[alive[over]] = BUDGET
            alive = alive[~met & (t[alive] < min(self.horizon, self.budget))]
            j += 1
        return [_segment(parts[q], int(status[q]), float(t[q]), dim) for q in range(K)]


def _segment(parts: list, status: int, clock: float, dim: int) -> Segment:
    if not parts:
        return Segment(np.empty(0), np.empty(0), np.empty((0, dim)), status, clock)
    lv, tm, st = (np.concatenate(p) for p in zip(*parts))
    return Segment(lv, tm, st, status, clock)


def horizon_probability(
    rho: float, s: float, b: float, x0: float, steps: int, *, panels: int = 150
) -> float:
    """P[max_{1<=t<=steps} X_t >= b] for the AR(1) chain X' = ρ X + s ξ from X_0 = x0.

    h_k(x), the probability from x within k steps, solves h_0 = 0 and
    h_k(x) = Φ̄((b − ρx)/s) + ∫_{−∞}^{b} φ_s(y − ρx) h_{k−1}(y) dy; the integral on
    [min(x0, 0) − 12, b] (the chain's stationary law is N(0, s²/(1 − ρ²)); below it every term
    is under e^{−70}) by Gauss-Legendre quadrature, ``panels`` panels of 8 nodes. Every term is
    positive, so a small p keeps its relative accuracy.

    Parameters
    ----------
    rho : float in (-1, 1)
        The autoregression coefficient ρ.
    s : float > 0
        The noise's scale.
    b : float
        The level to reach.
    x0 : float
        The start X_0.
    steps : int >= 1
        The horizon T.
    panels : int
        The quadrature's panels of 8 Gauss-Legendre nodes (default 150).

    Returns
    -------
    p : float
        The probability that the chain reaches b within ``steps`` steps.

    Examples
    --------
    >>> import math
    >>> from scipy import special
    >>> from metastab.bench.ams import horizon_probability
    >>> rho = 0.5; s = math.sqrt(1 - rho**2)  # one step: P[X_1 >= b] = Φ̄((b − ρ x0)/s)
    >>> p = horizon_probability(rho, s, 2.0, 0.0, 1)
    >>> bool(abs(p - special.ndtr(-2.0 / s)) < 1e-15)
    True
    """
    sd = s / math.sqrt(1 - rho**2)
    g8, w8 = np.polynomial.legendre.leggauss(8)
    edges = np.linspace(min(x0, 0.0) - 12 * sd, b, panels + 1)
    half = np.diff(edges)[:, None] / 2
    y = ((edges[:-1, None] + edges[1:, None]) / 2 + half * g8).ravel()
    w = (half * w8).ravel()

    def kernel(x: np.ndarray) -> np.ndarray:
        return w * np.exp(-0.5 * ((y - rho * x[:, None]) / s) ** 2) / (s * math.sqrt(2 * math.pi))

    def jump(x: np.ndarray) -> np.ndarray:
        return special.ndtr((rho * x - b) / s)

    W, g = kernel(y), jump(y)
    h = np.zeros_like(y)
    for _ in range(steps - 1):
        h = g + W @ h
    x = np.array([float(x0)])
    return float((jump(x) + kernel(x) @ h)[0])


try:  # the optional ``bench`` extra; the class must live at module level for pyTAMS's workers
    from pytams.fmodel import ForwardModelBaseClass as _ForwardModel
except ImportError:  # pragma: no cover - depends on the environment
    _ForwardModel = None


def pytams_available() -> bool:
    """Whether pyTAMS imports here (``pip install 'metastab[bench]'`` adds it).

    Returns
    -------
    available : bool
        True when ``pytams`` imports, so that :func:`run_pytams` and the pyTAMS side of
        :func:`ams_ou_bench` can run.

    Examples
    --------
    >>> import importlib.util
    >>> from metastab.bench.ams import pytams_available
    >>> pytams_available() == (importlib.util.find_spec("pytams") is not None)
    True
    """
    return _ForwardModel is not None


if _ForwardModel is not None:

    class PyTAMSOrnsteinUhlenbeck(_ForwardModel):
        """The AR(1) chain as a pyTAMS forward model (its API: one trajectory, one step).

        State x (a float), x ← ρ x + s ξ with ξ the noise pyTAMS hands to the step (so that a
        branch replays its ancestor's noise); score exp(x − b), which orders paths as x does,
        positive (pyTAMS floors a branched trajectory's maximum score at 0), and 1 exactly at
        B = {x >= b}: the target score. Noise from OS entropy: pyTAMS's deterministic mode
        seeds every model by its trajectory index, the same in every run and after every branch.
        """

        def _init_model(self, m_id: int, params: dict[Any, Any]) -> None:
            model = params["model"]
            self._rho, self._s, self._b = model["rho"], model["s"], model["b"]
            self._state = float(model["x0"])
            self._rng = np.random.default_rng()

        def _advance(
            self, step: int, time: float, dt: float, noise: Any, need_end_state: bool
        ) -> float:
            self._state = self._rho * self._state + self._s * noise
            return dt

        def get_current_state(self) -> float:
            return self._state

        def set_current_state(self, state: float) -> None:
            self._state = state

        def score(self) -> float:
            return math.exp(self._state - self._b)

        def make_noise(self) -> float:
            return float(self._rng.standard_normal())

        @classmethod
        def name(cls) -> str:
            return "OrnsteinUhlenbeckAR1"


def _cpu_seconds() -> float:
    """User + system CPU of this process and of its finished children (pyTAMS's workers)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_pytams(
    *, rho: float, b: float, x0: float, steps: int, replicas: int, runs: int
) -> tuple[np.ndarray, float, float]:
    """``runs`` independent pyTAMS runs of the workload; returns (estimates, CPU s, wall s).

    Each run is ``pytams.tams.TAMS(...).compute_probability()`` from an input file written as
    pyTAMS's own Ornstein-Uhlenbeck example does it (asyncio runner, one worker, in-memory
    database), in a temporary folder (pyTAMS writes its SQLite pool to the working folder).

    Parameters
    ----------
    rho : float in (-1, 1)
        The AR(1) chain's coefficient ρ (its noise scale is √(1 − ρ²)).
    b : float
        The level of the set B = {x >= b}.
    x0 : float
        The start of every trajectory.
    steps : int >= 1
        The trajectories' length T.
    replicas : int >= 2
        The trajectories of each run.
    runs : int >= 1
        The independent runs.

    Returns
    -------
    estimates : ndarray, shape (runs,)
        Each run's estimate of p (0 for a run that went extinct).
    cpu_s : float
        The CPU seconds of the runs, user + system, pyTAMS's worker processes included.
    wall_s : float
        Their wall-clock seconds.

    Raises
    ------
    ImportError
        Without pyTAMS (checked after the arguments).

    Examples
    --------
    The arguments are checked before pyTAMS is needed; a run itself needs pyTAMS and takes
    tens of CPU seconds, so it is shown, not run:

    >>> from metastab.bench.ams import AMS_OU, run_pytams
    >>> run_pytams(rho=0.9, b=4.0, x0=0.0, steps=100, replicas=1, runs=2)
    Traceback (most recent call last):
    ...
    ValueError: replicas must be >= 2, got 1
    >>> estimates, cpu_s, wall_s = run_pytams(**AMS_OU, runs=2)  # doctest: +SKIP
    """
    rho = real("rho", rho, low=-1, high=1, low_open=True, high_open=True)
    b, x0 = real("b", b), real("x0", x0)
    steps = integer("steps", steps, 1)
    replicas, runs = integer("replicas", replicas, 2), integer("runs", runs, 1)
    if _ForwardModel is None:
        raise ImportError("pyTAMS is not installed: pip install 'metastab[bench]' adds it")
    import logging

    from pytams.tams import TAMS

    s = math.sqrt(1 - rho**2)
    toml_text = (
        f"[tams]\nntrajectories = {replicas}\nnsplititer = {1000 * replicas + 1000}\n"
        f'loglevel = "ERROR"\n\n[trajectory]\nend_time = {float(steps)}\nstep_size = 1.0\n'
        f"targetscore = 1.0\n\n[model]\nrho = {rho!r}\ns = {s!r}\nb = {b!r}\nx0 = {x0!r}\n\n"
        '[runner]\ntype = "asyncio"\nnworker_init = 1\nnworker_iter = 1\n'
    )
    here, folder = os.getcwd(), tempfile.mkdtemp(prefix="metastab-pytams-", dir=_scratch())
    level = logging.getLogger().level
    quiet = logging.getLogger("pytams.tams")  # it logs a stalled (extinct) run as an error
    quiet_level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    estimates = np.empty(runs)
    try:
        os.chdir(folder)
        with open("input.toml", "w") as fh:
            fh.write(toml_text)
        cpu, wall = _cpu_seconds(), time.perf_counter()
        for r in range(runs):
            tams = TAMS(fmodel_t=PyTAMSOrnsteinUhlenbeck, a_args=["-i", "input.toml"])
            try:
                estimates[r] = tams.compute_probability()
            except RuntimeError as exc:
                # every trajectory at one score: the run is extinct, an estimate of 0 (as
                # run_ams counts it), which pyTAMS reports as an error
                if "stalling" not in str(exc):
                    raise
                estimates[r] = 0.0
            del tams
        cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    finally:
        os.chdir(here)
        shutil.rmtree(folder, ignore_errors=True)
        logging.getLogger().setLevel(level)
        quiet.setLevel(quiet_level)
    return estimates, cpu, wall


def _scratch() -> str | None:
    """A RAM-backed folder for pyTAMS's SQLite pool where there is one (its commits then cost
    no disk flush), else the default temporary folder."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _row(name: str, estimates: np.ndarray, truth: float, cpu: float, wall: float,
         replicas: int, epsilon: float) -> dict:  # fmt: skip
    R = estimates.size
    mean = float(estimates.mean())
    sd = float(estimates.std(ddof=1)) if R > 1 else math.nan
    r = sd / mean if mean > 0 else math.nan  # one run's relative error
    return {
        "package": name,
        "runs": R,
        "replicas": replicas,
        "mean": mean,
        "mean_over_truth": mean / truth,
        "z": (mean - truth) / (sd / math.sqrt(R)) if sd > 0 else math.nan,
        "extinct": int((estimates == 0).sum()),
        "relative_error_run": r,
        # the standard error of r itself, as for a normal sample: r / √(2(R − 1))
        "relative_error_run_se": r / math.sqrt(2 * (R - 1)) if R > 1 else math.nan,
        "relative_error_mean": r / math.sqrt(R),
        "cpu_s": cpu,
        "wall_s": wall,
        "cpu_s_per_run": cpu / R,
        "cpu_s_at_epsilon": cpu / R * (r / epsilon) ** 2,
    }


def ams_ou_bench(
    *,
    pytams_runs: int = PYTAMS_RUNS,
    metastab_runs: int = METASTAB_RUNS,
    epsilon: float = EPSILON,
    rng: int = 2026,
    pytams: bool | None = None,
    on_row: Callable[[dict], None] | None = None,
) -> dict:
    """The workload :data:`AMS_OU` with metastab's AMS and with pyTAMS (module notes).

    CPU seconds are user + system of this process and of its finished children.

    Parameters
    ----------
    pytams_runs : int >= 2
        pyTAMS's independent runs (default :data:`PYTAMS_RUNS`).
    metastab_runs : int >= 2
        metastab's independent runs (default :data:`METASTAB_RUNS`).
    epsilon : float > 0
        The common relative error ε of the mean at which the costs are compared (default
        :data:`EPSILON`).
    rng : int
        metastab's root seed (default 2026; pyTAMS draws from OS entropy).
    pytams : bool, optional
        None (default): run pyTAMS where it imports; True: required (ImportError without it);
        False: not run.
    on_row : callable, optional
        Called with each package's row as soon as it is measured.

    Returns
    -------
    result : dict
        ``truth`` (:func:`horizon_probability`); ``rows``, one per package: its runs, mean
        estimate over the truth, the z-score of that mean, extinct runs, one run's relative
        error r with its standard error, the mean's relative error r/√runs, CPU and wall
        seconds, and ``cpu_s_at_epsilon`` = CPU s per run × (r/ε)², the CPU that ε needs;
        ``ratio``, pyTAMS's cpu_s_at_epsilon over metastab's (None without pyTAMS); ``pytams``,
        why it did not run (or None); and ``epsilon``.

    Examples
    --------
    >>> from metastab.bench.ams import ams_ou_bench
    >>> r = ams_ou_bench(metastab_runs=20, pytams=False)
    >>> r["rows"][0]["package"], r["ratio"], r["pytams"]
    ('metastab', None, 'not run (pytams=False)')
    """
    for name, value in (("pytams_runs", pytams_runs), ("metastab_runs", metastab_runs)):
        if not (isinstance(value, int) and value >= 2):
            raise ValueError(f"{name} must be an integer >= 2, got {value!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    w = AMS_OU
    rho, b, x0, T, N = w["rho"], w["b"], w["x0"], int(w["steps"]), int(w["replicas"])
    s = math.sqrt(1 - rho**2)
    truth = horizon_probability(rho, s, b, x0, T)
    show = on_row or (lambda row: None)
    chain = OUChain(rho, s, b=b, horizon=T)
    run_ams(chain, np.array([x0]), replicas=N, runs=2, rng=rng + 1)  # warm-up, untimed
    cpu, wall = _cpu_seconds(), time.perf_counter()
    out, _ = run_ams(chain, np.array([x0]), replicas=N, runs=metastab_runs, rng=rng)
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    rows = [_row("metastab", out.estimates, truth, cpu, wall, N, epsilon)]
    show(rows[0])
    why = None
    if pytams is False:
        why = "not run (pytams=False)"
    elif not pytams_available():
        if pytams:
            raise ImportError("pyTAMS is not installed: pip install 'metastab[bench]' adds it")
        why = "not installed; pip install 'metastab[bench]' adds it"
    else:
        est, cpu, wall = run_pytams(rho=rho, b=b, x0=x0, steps=T, replicas=N, runs=pytams_runs)
        rows.append(_row("pytams", est, truth, cpu, wall, N, epsilon))
        show(rows[1])
    ratio = None
    if len(rows) == 2:
        ratio = rows[1]["cpu_s_at_epsilon"] / rows[0]["cpu_s_at_epsilon"]
    return {"truth": truth, "rows": rows, "ratio": ratio, "pytams": why, "epsilon": epsilon}
