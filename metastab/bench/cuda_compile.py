"""The GPU code compiled for real GPUs without one: ``metastab bench --device cuda --compile-only``.

:func:`compile_kernels` compiles every kernel that the CUDA backend can launch (one per model
kind and event, with one chain per block or several:
:func:`metastab.kernels.cuda.drivers.kernel_for`), with the argument types of its real launches,
for each architecture of :data:`ARCHS` (sm_80 A100, sm_90 H100 / H200): numba-cuda and libNVVM
to PTX, then ``ptxas -v`` for what the device will run. Per kernel and architecture it reports
the registers per thread, spilled bytes, static shared memory and the fused multiply-adds that
the source did not ask for:

- ``nvvm_fma``: NVVM contracts ``a * b + c`` by default; the ``fma.rn.f64`` count of the PTX built
  with contraction allowed minus that of the PTX built with it forbidden (the source's own
  :func:`metastab.kernels.cuda.arith.fma` count in both).
- ``ptxas_fusable``: ptxas fuses a plain ``mul.f64`` into the plain ``add.f64`` / ``sub.f64``
  that consumes it; the products of the PTX that could be so fused (``mul.rn.f64``, the source's
  :func:`metastab.kernels.cuda.arith.mul`, never is).

``implicit_fma`` is their sum: 0 means that a device computes the operations of the CPU kernels,
each rounded once as there, so the same seed gives the same bits.

No GPU is involved: device functions ask the current device for its compute capability, which is
answered with the target's (a private detail of numba-cuda 0.30, pinned by the tests), and the
contraction switch is an option of numba-cuda's private ``nvvm.compile_ir``; a probe kernel checks
both before any count is trusted.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import multiprocessing
import os
import re
import shutil
import subprocess
import tempfile
import time
import types as pytypes
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import installed, module_spec
from .._validate import integer

__all__ = [
    "ARCHS",
    "COLUMNS",
    "REGISTER_TARGET",
    "SAP_KERNEL",
    "SAP_TARGET",
    "ToolchainMissing",
    "compile_kernels",
    "launches",
    "ptxas_path",
    "write_csv",
]

ARCHS: tuple[tuple[int, int], ...] = ((8, 0), (9, 0))
COLUMNS = (
    "kernel",
    "arch",
    "compiled",
    "registers",
    "spill_bytes",
    "shared_bytes",
    "implicit_fma",
    "nvvm_fma",
    "ptxas_fusable",
    "seconds",
    "error",
)
# registers per thread above which a one-warp block's occupancy on an H100 falls below 50 %
REGISTER_TARGET = 128
# the small-n SA_P kernel's (W1: several chains per block) target: 96 registers or fewer
SAP_KERNEL, SAP_TARGET = "advance[chain,no-event,teams]", 96
_PTXAS_SECONDS = 300
_FMA = re.compile(r"\bfma\.rn\.f64\b")
_PLAIN_MUL = re.compile(r"\bmul\.f64\s+(%fd\d+),")
_PLAIN_ADD = re.compile(r"\b(?:add|sub)\.f64\s+%fd\d+,\s*([^;]*);")


class ToolchainMissing(RuntimeError):
    """numba-cuda, libNVVM or ptxas is not installed (``pip install 'metastab[cuda]'``).

    A :class:`RuntimeError`, raised before any kernel is compiled.

    Examples
    --------
    >>> from metastab.bench.cuda_compile import ToolchainMissing
    >>> try:
    ...     raise ToolchainMissing("ptxas not found")
    ... except RuntimeError as err:
    ...     print(type(err).__name__, err)
    ToolchainMissing ptxas not found
    """


def ptxas_path() -> Path:
    """ptxas of the ``nvidia-cuda-nvcc-cu12`` wheel, else the one on PATH.

    Returns
    -------
    path : Path
        The ptxas executable.

    Raises
    ------
    ToolchainMissing
        When neither is found.

    Examples
    --------
    >>> from metastab.bench.cuda_compile import ToolchainMissing, ptxas_path
    >>> try:
    ...     found = ptxas_path().name
    ... except ToolchainMissing:   # no CUDA toolkit here
    ...     found = "ptxas"
    >>> found
    'ptxas'
    """
    spec = module_spec("nvidia.cuda_nvcc")
    for root in (spec.submodule_search_locations or []) if spec else []:
        exe = Path(root) / "bin" / "ptxas"
        if exe.is_file():
            return exe
    found = shutil.which("ptxas")
    if found is None:
        raise ToolchainMissing(
            "ptxas not found: pip install 'metastab[cuda]' installs the CUDA 12 toolkit wheels"
        )
    return Path(found)


def _representatives() -> list[tuple[Any, Any]]:
    """(model, event or None): every model the backend runs, with every event it evaluates on
    the device (Clusters runs on the CPU only; the order parameters' events apply to the sphere
    models only)."""
    from ..events import Collapse, LeaveBall, LeaveHull, LeaveUniform, ReachUniform, ReachVertices
    from ..models import Hardmax, Localmax, SoftmaxChain, SoftmaxFlow
    from ..models.sphere import NoisySphere, SphereChain, SphereFlow

    models = [
        SoftmaxChain(beta=2.0, gamma=0.1),
        SoftmaxFlow(beta=2.0, gamma=0.1),
        Hardmax(gamma=0.1),
        Localmax(gamma=0.1, r=0.1),
        SphereChain(beta=2.0, gamma=0.1),
        SphereFlow(beta=2.0, dt=0.1),
        SphereFlow(beta=2.0, dt=0.1, scheme="rk4"),
        NoisySphere(beta=2.0, K=1.0, dt=0.1),
    ]
    events = [
        None,
        LeaveBall(radius=0.5),
        LeaveHull(groups=np.array([0, 0, 1]), radius=0.5),
        ReachVertices(vertices=np.eye(2), radius=0.1),
        Collapse(diameter=0.1),
    ]
    sphere = [LeaveUniform(0.5, d) for d in (1, 2)] + [ReachUniform(0.1, d) for d in (1, 2)]
    return [(m, e) for m in models for e in events] + [
        (m, e) for m in models if isinstance(m, (SphereChain, SphereFlow)) for e in sphere
    ]


@functools.cache
def launches() -> dict[str, tuple[Any, tuple]]:
    """kernel name -> (kernel, argument types) for every kernel that the backend launches: one
    per model kind and device event, the types from
    :func:`~metastab.kernels.cuda.drivers.launch` on host arrays of the launch's dtypes and
    layouts (device arrays of the same have the same numba types). Computed once per process.

    Returns
    -------
    kernels : dict of str to (kernel, tuple)
        Each kernel by name (``advance[MODEL,EVENT]``, ``[...,teams]`` with several chains per
        block), with the numba types of its arguments.

    Raises
    ------
    RuntimeError
        If a kernel would be launched with two signatures (compiled twice in a run).

    Examples
    --------
    >>> from metastab.bench.cuda_compile import SAP_KERNEL, launches
    >>> kernels = launches()
    >>> SAP_KERNEL in kernels, "advance[chain,leave-ball]" in kernels
    (True, True)
    """
    import numba

    from ..kernels.cuda import drivers
    from ..kernels.params import no_event

    n, d, C = 3, 2, 2
    x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8]])
    found: dict[str, tuple[Any, tuple]] = {}
    for model, event in _representatives():
        dyn = model.kernel_params(d)
        ev = no_event(n, d) if event is None else event.compile(x0[None], model.key_query(d))
        shapes = drivers.scratch_shapes(C, n, d, dyn.model_code)
        scratch = pytypes.SimpleNamespace(**{k: np.zeros(s, t) for k, (s, t) in shapes.items()})
        X = np.zeros((C, n * d))
        state = np.zeros((C, 4), np.uint64)
        steps = np.zeros(C, np.int64)
        done = np.zeros(C, bool)
        for packing in (contextlib.nullcontext(), drivers.one_chain_per_block()):
            with packing:  # n = 3: several chains per block, then one
                runs = drivers.launch(
                    X, state, dyn, model.schedule(0, 1), 0, 1, ev, steps, done, scratch, _same
                )
            for name, kernel, _, args in runs:
                sig = tuple(numba.typeof(a) for a in args)
                if found.setdefault(name, (kernel, sig))[1] != sig:
                    raise RuntimeError(
                        f"{name} is launched with two signatures: {sig}, {found[name][1]}"
                    )
    return found


def _same(a: np.ndarray) -> np.ndarray:
    return a


@contextlib.contextmanager
def _targeting(cc: tuple[int, int]) -> Iterator[None]:
    """Device functions see a device of compute capability ``cc`` (there is none)."""
    import numba.cuda.dispatcher as dispatcher

    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


@contextlib.contextmanager
def _contraction(allowed: bool) -> Iterator[None]:
    """NVVM's ``fma`` option: contraction allowed (numba-cuda's build) or forbidden."""
    import numba.cuda.cudadrv.nvvm as nvvm

    saved = nvvm.compile_ir

    def compile_ir(llvmir: Any, **options: Any) -> Any:
        if not allowed:
            options["fma"] = False
        return saved(llvmir, **options)

    nvvm.compile_ir = compile_ir
    try:
        yield
    finally:
        nvvm.compile_ir = saved


def _ptx(func: Any, sig: tuple, cc: tuple[int, int], contract: bool) -> str:
    from numba import cuda

    with _targeting(cc), _contraction(contract):
        ptx, _ = cuda.compile_ptx(func, sig, cc=cc)
    return ptx


def ptxas_fusable(ptx: str) -> int:
    """Plain ``mul.f64`` results that a plain ``add.f64`` / ``sub.f64`` consumes.

    >>> ptxas_fusable("mul.f64 %fd3, %fd1, %fd2;\\nadd.f64 %fd4, %fd3, %fd0;")
    1
    >>> ptxas_fusable("mul.rn.f64 %fd3, %fd1, %fd2;\\nadd.f64 %fd4, %fd3, %fd0;")
    0
    """
    products = set(_PLAIN_MUL.findall(ptx))
    used = {r.strip() for ops in _PLAIN_ADD.findall(ptx) for r in ops.split(",")}
    return len(products & used)


def _probe(cc: tuple[int, int]) -> None:
    """A device function compiles for ``cc`` (else :class:`ToolchainMissing`), and the switches
    work: ``a b + c`` contracts when allowed and not when forbidden (else RuntimeError)."""
    from numba import cuda, types

    @cuda.jit(device=True)
    def madd(a, b, c):
        return a * b + c

    def kernel(x):
        x[0] = madd(x[1], x[2], x[3])

    sig = (types.Array(types.float64, 1, "C"),)
    try:
        ptx = [_ptx(kernel, sig, cc, allowed) for allowed in (True, False)]
    except Exception as exc:  # libNVVM or NVRTC absent or unusable: numba-cuda's own errors
        raise ToolchainMissing(
            f"the CUDA toolkit cannot compile a probe kernel ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}): pip install 'metastab[cuda]' "
            "installs the CUDA 12 toolkit wheels"
        ) from exc
    fused = [len(_FMA.findall(text)) for text in ptx]
    if fused != [1, 0]:
        raise RuntimeError(
            f"cannot count implicit fma with this numba-cuda: a b + c gave {fused[0]} fma with "
            f"contraction allowed and {fused[1]} with it forbidden (expected 1 and 0)"
        )


def _ptxas(ptx: str, cc: tuple[int, int], max_registers: int | None = None) -> dict[str, int]:
    """registers, spill_bytes (stores + loads), shared_bytes of ``ptxas -v``, with the kernel's
    register cap (the one numba-cuda's linker passes when it loads the kernel)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        command = [str(ptxas_path()), f"-arch=sm_{cc[0]}{cc[1]}", "-v"]
        if max_registers:
            command.append(f"--maxrregcount={max_registers}")
        out = subprocess.run(
            command + [str(src), "-o", str(src) + ".o"],
            capture_output=True,
            text=True,
            timeout=_PTXAS_SECONDS,
        )
    if out.returncode != 0:
        raise RuntimeError(f"ptxas failed: {out.stderr.strip().splitlines()[-1:]}")
    regs = re.search(r"Used (\d+) registers", out.stderr)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out.stderr)
    smem = re.search(r"(\d+) bytes smem", out.stderr)
    if regs is None or spill is None:
        raise RuntimeError(f"unexpected ptxas -v output: {out.stderr.strip()!r}")
    return {
        "registers": int(regs.group(1)),
        "spill_bytes": int(spill.group(1)) + int(spill.group(2)),
        "shared_bytes": int(smem.group(1)) if smem else 0,
    }


def compile_kernels(
    archs: tuple[tuple[int, int], ...] = ARCHS,
    on_row: Any = None,
    jobs: int | None = None,
    on_start: Any = None,
) -> list[dict[str, Any]]:
    """One row per kernel and architecture (columns :data:`COLUMNS`), in ``jobs`` processes
    (default: the CPU count, at most 4); a kernel that fails to compile gets ``compiled=False``
    and the error. ``on_start()`` is called once the toolchain compiled a probe kernel, and
    ``on_row(row)`` sees each row as it is measured, in order.

    Parameters
    ----------
    archs : tuple of (int, int)
        The compute capabilities to compile for (default :data:`ARCHS`: sm_80, sm_90).
    on_row : callable, optional
        Called with each row as it is measured, in order.
    jobs : int, optional
        The worker processes (default: the CPU count, at most 4).
    on_start : callable, optional
        Called once the toolchain compiled a probe kernel.

    Returns
    -------
    rows : list of dict
        One per kernel and architecture, keyed by :data:`COLUMNS`.

    Raises
    ------
    ToolchainMissing
        Without numba-cuda, libNVVM, NVRTC or ptxas, before any kernel is compiled.

    Examples
    --------
    The arguments are checked first, anywhere; compiling every kernel needs the CUDA toolkit
    (no GPU) and takes minutes, so it is shown, not run:

    >>> from metastab.bench.cuda_compile import compile_kernels, failures
    >>> compile_kernels(archs=[(9, 0), "sm_80"])
    Traceback (most recent call last):
    ...
    ValueError: archs must be (major, minor) compute capabilities such as (9, 0), got 'sm_80'
    >>> failures(compile_kernels(archs=((9, 0),)))  # doctest: +SKIP
    []
    """
    archs = tuple(archs)
    for cc in archs or ((),):
        if not (
            isinstance(cc, tuple)
            and len(cc) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in cc)
        ):
            raise ValueError(
                f"archs must be (major, minor) compute capabilities such as (9, 0), got {cc!r}"
            )
    if jobs is not None:
        jobs = integer("jobs", jobs, 1)
    if not installed("numba.cuda"):
        raise ToolchainMissing("numba-cuda is not installed: pip install 'metastab[cuda]'")
    ptxas_path()
    _probe(archs[0])
    if on_start is not None:
        on_start()
    tasks = [(name, cc) for name in launches() for cc in archs]
    jobs = min(4, os.cpu_count() or 1) if jobs is None else jobs
    rows = []
    # spawned workers: each compiles from a fresh import, never from a forked numba state
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for row in pool.map(_compile_one, tasks):
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def _compile_one(task: tuple[str, tuple[int, int]]) -> dict[str, Any]:
    """The row of one kernel (by name) and architecture."""
    name, cc = task
    row: dict[str, Any] = dict.fromkeys(COLUMNS, "")
    row.update(kernel=name, arch=f"sm_{cc[0]}{cc[1]}", compiled=False)
    tic = time.perf_counter()
    try:
        kernel, sig = launches()[name]
        ptx = _ptx(kernel.py_func, sig, cc, True)
        forbidden = _ptx(kernel.py_func, sig, cc, False)
        nvvm = len(_FMA.findall(ptx)) - len(_FMA.findall(forbidden))
        fusable = ptxas_fusable(ptx)
        row.update(_ptxas(ptx, cc, kernel.targetoptions.get("max_registers")))
        row.update(compiled=True, nvvm_fma=nvvm, ptxas_fusable=fusable, implicit_fma=nvvm + fusable)
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    row["seconds"] = round(time.perf_counter() - tic, 1)
    return row


def failures(rows: list[dict[str, Any]]) -> list[str]:
    """Why the kernels are not fit for a device: a failed compile, an implicit fma (device bits
    would differ from the CPU's), static shared memory beyond the drivers' reserve (launches near
    the 48 KiB limit would fail)."""
    from ..kernels.cuda.drivers import STATIC_SHARED

    out = []
    for r in rows:
        where = f"{r['kernel']} {r['arch']}"
        if not r["compiled"]:
            out.append(f"{where}: not compiled ({r['error']})")
            continue
        if r["implicit_fma"]:
            out.append(f"{where}: {r['implicit_fma']} implicit fma")
        if r["shared_bytes"] > STATIC_SHARED:
            out.append(
                f"{where}: {r['shared_bytes']} B of static shared memory, above the "
                f"{STATIC_SHARED} B that block_shape keeps for it"
            )
    return out


def write_csv(rows: list[dict[str, Any]], path: str | Path) -> None:
    """The rows as a CSV file with the header :data:`COLUMNS`.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`compile_kernels`.
    path : str or Path
        The file to write (replaced if it exists).

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.bench.cuda_compile import COLUMNS, write_csv
    >>> row = dict.fromkeys(COLUMNS, "")
    >>> row.update(kernel="advance[chain,no-event]", arch="sm_90", compiled=True, registers=80)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "kernels.csv")
    ...     write_csv([row], path)
    ...     with open(path) as fh:
    ...         print(fh.read().splitlines()[1])   # the kernel's name is quoted: it holds commas
    "advance[chain,no-event]",sm_90,True,80,,,,,,,
    """
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
