"""Where the chains run: the backends behind :mod:`metastab.engine`, resolved in one place.

A backend moves chains forward in place on host arrays: ``advance`` (exact steps, any model),
``events_at`` (the event at time 0, for the event-driven mode and the device),
``neighbour_sets``, ``advance_accelerated`` (the event-driven SA_P chain), ``excursions`` /
``coordinates`` (splitting) and ``noisy_excursions`` (splitting for the noisy sphere), each
with the arguments of the :mod:`metastab.kernels` driver of that name (parameters as the
NamedTuples that the models and events build), and ``kernels(name)``: the compiled functions a
first call of that driver may have to compile (for the compile announcement);
``start_advance`` (which also marks the chains that meet the event at time 0) and
``compile_accelerated`` compile (or load) the kernel of a run before its progress bar starts. The
engine's functions take the name as ``device``.

"cuda" runs the exact loop on an NVIDIA GPU through numba-cuda (the optional extra
``metastab[cuda]``; under numba's simulator, ``NUMBA_ENABLE_CUDASIM=1``, without one): the kernels
of :mod:`metastab.kernels.cuda.drivers`, the same streams and, under the simulator, the CPU's bits.
The time-0 event check and the neighbour sets of a recording run on the host (once per run or
per recorded step); the event-driven and splitting drivers exist on the CPU only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import numba
import numpy as np

from ..kernels import streams as _streams
from ..kernels.cpu import accelerated as _accelerated
from ..kernels.cpu import drivers as _drivers
from ..kernels.cpu import memory as _memory
from ..kernels.cpu import noisy_splitting as _noisy_splitting
from ..kernels.cpu import reach as _reach
from ..kernels.cpu import splitting as _splitting
from ..kernels.cpu.accelerated import Tally, cross_logs, merge_groups
from ..kernels.cpu.clustering import OBSERVABLES, observe
from ..kernels.cpu.drivers import cross_weights
from ..kernels.cpu.euclidean_steps import exp_nonpositive
from ..kernels.cpu.order import order_parameters
from ..kernels.cpu.splitting import BUDGET, FULL, IN_A, IN_B, Bounds, Records, Walk, coordinates
from ..kernels.params import CLUSTERS, NO_EVENT

__all__ = [
    "BACKENDS",
    "BUDGET",
    "FULL",
    "IN_A",
    "IN_B",
    "OBSERVABLES",
    "Backend",
    "Bounds",
    "DeviceUnavailable",
    "Records",
    "Tally",
    "Walk",
    "accelerated_bytes",
    "coordinates",
    "cross_logs",
    "cross_weights",
    "exp_nonpositive",
    "merge_groups",
    "observe",
    "order_parameters",
    "out_of_reach",
    "reach_kernels",
    "resolve",
]


def out_of_reach(X: np.ndarray, ev: Any, done: np.ndarray, out: np.ndarray) -> None:
    """out[c] = whether chain c (not ``done``) can no longer meet ``ev``: a host kernel for every
    backend, whose states are on the host between calls (:mod:`metastab.kernels.cpu.reach`)."""
    _reach.out_of_reach(X, ev, done, out)


def reach_kernels(code: int) -> tuple:
    """The kernel that :func:`out_of_reach` compiles for an event of kernel ``code`` (if any)."""
    return (_reach.DRIVERS[code],) if code in _reach.DRIVERS else ()


def accelerated_bytes(C: int, n: int, d: int) -> int:
    """Memory of the event-driven kernels (the accelerated mode, the cross-group
    probabilities) on C configurations of n tokens in R^d."""
    return int(_memory.accelerated_bytes(C, n, d, numba.get_num_threads()))


class DeviceUnavailable(OSError):
    """The device asked for cannot run here (no numba-cuda, no GPU): an OSError, so the command
    line reports it in one line."""


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
        times: np.ndarray,
        done: np.ndarray,
    ) -> None: ...

    def start_advance(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        sched: Any,
        ev: Any,
        times: np.ndarray,
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

    def compile_accelerated(self, *args: Any) -> None: ...

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

    def noisy_excursions(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        dt: float,
        ev: Any,
        bounds: Any,
        walk: Any,
        records: Any,
    ) -> None: ...

    def kernels(self, name: str, launch: tuple | None = None) -> tuple: ...

    def run_bytes(self, C: int, n: int, d: int, flow: bool) -> int: ...


class Cpu:
    """The numba kernels on the host's cores (chains in parallel over numba's threads); each
    method passes its arguments, in the order of :class:`Backend`, to the driver of that name."""

    name = "cpu"

    def advance(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        sched: Any,
        t0: int,
        nsteps: int,
        ev: Any,
        times: np.ndarray,
        done: np.ndarray,
    ) -> None:
        # the driver picks the model's family
        threads = numba.get_num_threads()
        _drivers.advance(X, state, dyn, sched, t0, nsteps, ev, times, done, threads)

    def start_advance(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        sched: Any,
        ev: Any,
        times: np.ndarray,
        done: np.ndarray,
    ) -> None:
        # compile, or load from the cache, the kernel that advance will run on these arguments:
        # advance with no steps, which only marks the chains that meet the event at time 0
        # (steps 0, done), in place of a kernel of its own (events_at)
        self.advance(X, state, dyn, sched, 0, 0, ev, times, done)

    def events_at(self, *args: Any) -> None:
        _drivers.events_at(*args)

    def neighbour_sets(self, *args: Any) -> None:
        _drivers.neighbour_sets(*args)

    def advance_accelerated(self, *args: Any) -> None:
        _accelerated.advance_accelerated(*args, threads=numba.get_num_threads())

    def compile_accelerated(self, *args: Any) -> None:
        # args as advance_accelerated's: compile, or load from the cache, without running it
        sig = (*(numba.typeof(a) for a in args), numba.int64, numba.int64)  # and lo, hi
        _accelerated.advance_slice.compile(sig)

    def excursions(self, *args: Any) -> None:
        _splitting.excursions(*args, threads=numba.get_num_threads())

    def coordinates(self, *args: Any) -> None:
        _splitting.coordinates(*args, threads=numba.get_num_threads())

    def noisy_excursions(self, *args: Any) -> None:
        _noisy_splitting.noisy_excursions(*args, threads=numba.get_num_threads())

    def kernels(self, name: str, launch: tuple | None = None) -> tuple:
        # launch: (chains, n, d, dyn, code) of the run, whose kernel is one of many (kernel_for)
        run: tuple = ()
        if launch is not None:
            chains, n, d, dyn, code = launch
            run = (_drivers.kernel_for(chains, n, d, dyn, code, numba.get_num_threads()),)
        return {
            "exact": (_streams.seed_streams, *run),
            # the resolution check's kernels, where it needs them: resolution.check_kernels
            "passage": (_streams.seed_streams, *run),
            "accelerated": (_accelerated.advance_slice,),
        }[name]

    def run_bytes(self, C: int, n: int, d: int, flow: bool) -> int:
        # flow: the sphere flow's scratch (the other models run SA_P's blocks)
        return int(_memory.run_bytes(C, n, d, flow, numba.get_num_threads()))


class Cuda:
    """The CUDA kernels: a thread block per chain (several at small n), several steps per launch,
    chains in batches whose device buffers fit half the free device memory. Buffers are kept
    between the calls of one run (one backend per run)."""

    name = "cuda"

    def __init__(self) -> None:
        from numba import cuda

        if not cuda.is_available():
            raise DeviceUnavailable(
                "device='cuda': no CUDA GPU is available to numba "
                "(numba.cuda.is_available() is False; NUMBA_ENABLE_CUDASIM=1 runs the simulator)"
            )
        _check_array_support()
        from ..kernels.cuda import drivers as cuda_drivers

        self._cuda, self._drivers = cuda, cuda_drivers
        self._scratch: Any = None

    def _batch(self, n: int, d: int, model_code: int) -> int:
        """Chains per launch: their state and scratch within half the free device memory."""
        free = float(self._cuda.current_context().get_memory_info()[0])
        if not 0 < free < math.inf:  # the simulator reports inf
            free = 2.0**31
        per_chain = 8 * n * d + 41 + self._drivers.scratch_bytes(n, d, model_code)
        return max(1, int(free // 2 // per_chain))

    def advance(
        self,
        X: np.ndarray,
        state: np.ndarray,
        dyn: Any,
        sched: Any,
        t0: int,
        nsteps: int,
        ev: Any,
        times: np.ndarray,
        done: np.ndarray,
    ) -> None:
        if ev.code == CLUSTERS:  # the device kernels have no cluster count (yet)
            raise ValueError(_CPU_ONLY.format("the Clusters event (and track's merge times)"))
        if dyn.model_code not in self._drivers.MODEL_NAMES:  # a model with no device kernel
            name = _NO_DEVICE_KERNEL.get(dyn.model_code, f"the model of code {dyn.model_code}")
            raise ValueError(_CPU_ONLY.format(name))
        cuda = self._cuda
        C, n, d = X.shape
        if self._scratch is None or self._scratch.shape[1:] != (n, d, dyn.model_code):
            # sized once per run (its own allocation would shrink a later estimate)
            batch = min(C, self._batch(n, d, dyn.model_code))
            self._scratch = self._drivers.Scratch(batch, n, d, dyn.model_code)
        batch = self._scratch.shape[0]
        flat = X.reshape(C, n * d)
        for b0 in range(0, C, batch):
            b1 = min(C, b0 + batch)
            if done[b0:b1].all():
                continue
            part = ev._replace(centers=_rows(ev.centers, b0, b1), radii=_rows(ev.radii, b0, b1))
            xs = cuda.to_device(flat[b0:b1])
            ss = cuda.to_device(state[b0:b1])
            ks = cuda.to_device(times[b0:b1])
            ds = cuda.to_device(done[b0:b1])
            self._drivers.advance(xs, ss, dyn, sched, t0, nsteps, part, ks, ds, self._scratch)
            xs.copy_to_host(flat[b0:b1])
            ss.copy_to_host(state[b0:b1])
            ks.copy_to_host(times[b0:b1])
            ds.copy_to_host(done[b0:b1])

    def start_advance(self, X: np.ndarray, *args: Any) -> None:
        # the device kernels compile at their first launch; the event at time 0 on the host
        ev, times, done = args[-3:]  # args: state, dyn, sched, ev, times, done
        if ev.code != NO_EVENT:
            _drivers.events_at(X, ev, done)
            times[done] = 0

    # events on the host: they run once per recorded configuration, not per step
    events_at = Cpu.events_at
    neighbour_sets = Cpu.neighbour_sets
    # the host's share of a run, as on the CPU (the device's buffers are sized by _batch)
    run_bytes = Cpu.run_bytes

    def advance_accelerated(self, *args: Any) -> None:
        raise ValueError(_CPU_ONLY.format("mode='accelerated'"))

    compile_accelerated = advance_accelerated

    def excursions(self, *args: Any) -> None:
        raise ValueError(_CPU_ONLY.format("splitting"))

    def coordinates(self, *args: Any) -> None:
        raise ValueError(_CPU_ONLY.format("splitting"))

    noisy_excursions = coordinates

    def kernels(self, name: str, launch: tuple | None = None) -> tuple:
        if name == "accelerated":
            raise ValueError(_CPU_ONLY.format("mode='accelerated'"))
        return (_drivers.events_at,)


_CPU_ONLY = "{} runs on device='cpu' only"
# the models whose device kernels are still to be written, by code and name (the device drivers
# list the codes they run in MODEL_NAMES): none at present
_NO_DEVICE_KERNEL: dict[int, str] = {}


def _rows(a: np.ndarray, b0: int, b1: int) -> np.ndarray:
    """Chains b0..b1-1 of a per-chain event array, or the shared row (leading size 1)."""
    return a[b0:b1] if a.shape[0] > 1 else a


# device name -> a factory of its backend
BACKENDS: dict[str, Callable[[], Backend]] = {"cpu": Cpu, "cuda": Cuda}


def resolve(device: str = "cpu") -> Backend:
    """The backend named ``device`` (a name of :data:`BACKENDS`).

    Parameters
    ----------
    device : {"cpu", "cuda"}
        The backend's name (default "cpu").

    Returns
    -------
    backend : Backend
        A fresh backend object: its kernels and how the engine launches them.

    Raises
    ------
    ValueError
        When ``device`` is not a name of :data:`BACKENDS`.
    DeviceUnavailable
        For "cuda" without numba-cuda installed.

    Examples
    --------
    >>> from metastab.engine import resolve
    >>> resolve("cpu").name
    'cpu'
    """
    if not isinstance(device, str) or device not in BACKENDS:
        raise ValueError(f"device must be one of {tuple(BACKENDS)}, got {device!r}")
    if device == "cuda" and not cuda_installed():
        raise DeviceUnavailable(
            "device='cuda' needs numba-cuda: pip install 'metastab[cuda]' (and an NVIDIA GPU)"
        )
    return BACKENDS[device]()


def _check_array_support() -> None:
    """Refuse, before any work, a numba-cuda that cannot compile kernels with this numpy: every
    kernel's compile imports numba-cuda's array support, which in numba-cuda 0.30 registers
    ``np.row_stack``, removed in numpy 2.5 (the first launch would fail with an AttributeError)."""
    import importlib

    try:
        importlib.import_module("numba.cuda.np.arrayobj")
    except ImportError:  # numba's own CUDA target: no such module, nothing to check
        return
    except AttributeError as exc:
        raise DeviceUnavailable(
            f"device='cuda': this numba-cuda cannot compile kernels with numpy {np.__version__} "
            f"({exc}); install numpy < 2.5 (pip install 'metastab[cuda]' pins it)"
        ) from exc


def cuda_installed() -> bool:
    """Whether numba's CUDA target can be imported (numba-cuda, or numba's own numba.cuda)."""
    from .._optional import installed

    return installed("numba.cuda")
