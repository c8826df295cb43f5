"""The GPU check: ``metastab bench --device cuda [--check]``.

:func:`cuda_bench` times SA_P and the phase-diagram sphere flow on the device
(``simulate(..., device="cuda")``) beside a torch implementation of the same dynamics
(:func:`torch_chain`: batched matmul, softmax, cumulative sum, searchsorted, gather;
:func:`torch_post_ln`: batched matmul, softmax, batched matmul, norm; float64: the field's usual
way) on the same GPU in the same run, and beside metastab's CPU figure, in token-steps per second
(chains × n × steps / s). It reports the fraction of the float64 flop bound reached: a token-step
costs 2 n d flops of scores (4 n d with the flow's weighted sums) and about :data:`EXP_FLOPS` n
of exponentials, so a card of ``peak`` flop/s bounds the rate near peak / (2 n d + EXP_FLOPS n).

:func:`same_bits` runs every model on the device and on the CPU from the same seed and compares
the results bit for bit: the device kernels round every product as written and fuse only where
the CPU does (:mod:`metastab.kernels.cuda.arith`; ``metastab bench --device cuda --compile-only``
counts the fusions the compilers add: none), so the bits should be the CPU's. :func:`agreement`
checks the escape-time law as well: first-passage times of the [FW] Thm 5.4 exit on both, from
independent seeds, compared by two-sample Kolmogorov–Smirnov and Anderson–Darling tests; a
negative control (the device at a slightly larger β) must be rejected.

:func:`check` runs the device tests (``tests/test_cuda.py`` without the simulator), the bits, the
agreement and the bench, each under a time limit, and writes everything to a folder (see its
docstring).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import integer, real

__all__ = [
    "WORKLOADS",
    "EXP_FLOPS",
    "PEAK_FLOPS",
    "torch_chain",
    "cuda_bench",
    "agreement",
    "LIMITS",
    "check",
    "same_bits",
]

# name, n, d, betas, chains, steps (device), CPU chains, CPU steps: the workloads. SA_P
# (W1; unit-sphere tokens), and "phase-diagram": the post-LN sphere flow of [GLPR] Fig. 3's script
# (n = 32, d = 128, 2048 realisations, dt = 0.1 to t = 30, a grid of beta)
Workload = tuple[str, int, int, tuple[float, ...], int, int, int, int]
WORKLOADS: tuple[Workload, ...] = (
    ("W1", 20, 2, (20.0,), 65536, 200, 4096, 100),
    ("sphere-256", 256, 16, (5.0,), 4096, 20, 64, 10),
    ("sphere-1024", 1024, 64, (5.0,), 512, 5, 4, 4),
    ("phase-diagram", 32, 128, (1.0, 4.0, 9.0), 2048, 300, 64, 30),
)
_DT = 0.1
# flops of one exponential in the kernels' exp (a degree-13 polynomial and its reduction), as
# counted in the bound; the float64 vector peak of an H100 / H200 (flop/s)
EXP_FLOPS = 20
PEAK_FLOPS = 34e12
_GAMMA = 0.1
# agreement: escape-time samples per device, the significance level, and the control's beta
_AGREE_CHAINS = 2000
_ALPHA = 0.01
_CONTROL_SHIFT = 0.5


def _x0(name: str, n: int, d: int, seed: int = 0) -> np.ndarray:
    """W1's configuration, or n unit-sphere tokens in R^d."""
    from .chains import workload_w1

    if name == "W1":
        return workload_w1()
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def torch_chain(
    x0: np.ndarray, beta: float, gamma: float, *, steps: int, chains: int, seed: int = 0
) -> Any:
    """SA_P for B = I in torch on the GPU, float64; returns the final states (a torch tensor).

    Per step: scores by batched matmul, softmax, cumulative sum, one uniform per token,
    searchsorted (the inverse-CDF pick), gather, and the synchronous move. The same law as
    metastab's chain up to the resolution of the picks (a single uniform: picks of probability
    below ~2^-53 relative are never drawn), not the same random numbers.

    Parameters
    ----------
    x0 : ndarray, shape (n, d)
        The initial configuration, shared by all chains.
    beta : float
        The inverse temperature.
    gamma : float
        The step.
    steps : int
        The number of steps.
    chains : int
        The number of chains, all advanced at once.
    seed : int
        The seed of torch's CUDA generator (not metastab's streams).

    Returns
    -------
    X : torch.Tensor, shape (chains, n, d)
        The final states, float64, on the GPU.

    Examples
    --------
    The arguments are checked first, anywhere; the run itself needs torch and a GPU, so it is
    shown, not run:

    >>> import metastab as ms
    >>> from metastab.bench.cuda_check import torch_chain
    >>> x0 = ms.regular_polygon(5).vertices
    >>> torch_chain(x0, 2.0, 0.5, steps=10, chains=0)
    Traceback (most recent call last):
    ...
    ValueError: chains must be >= 1, got 0
    >>> X = torch_chain(x0, 2.0, 0.5, steps=10, chains=4)  # doctest: +SKIP
    >>> tuple(X.shape)  # doctest: +SKIP
    (4, 5, 2)
    """
    beta, gamma = real("beta", beta, low=0), real("gamma", gamma, low=0, high=1, low_open=True)
    steps, chains = integer("steps", steps, 0), integer("chains", chains, 1)
    import torch

    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(seed)
    x = torch.as_tensor(np.asarray(x0, dtype=float), device=dev)
    n, d = x.shape
    X = x.expand(chains, n, d).clone()
    for _ in range(steps):
        S = torch.bmm(X, X.transpose(1, 2))
        cdf = torch.cumsum(torch.softmax(beta * S, dim=2), dim=2)
        u = torch.rand(chains, n, 1, generator=gen, dtype=torch.float64, device=dev)
        j = torch.searchsorted(cdf, u * cdf[:, :, -1:]).clamp_(max=n - 1)
        X += gamma * (torch.gather(X, 1, j.expand(chains, n, d)) - X)
    torch.cuda.synchronize()
    return X


def torch_post_ln(X0: np.ndarray, beta: float, dt: float, *, steps: int) -> Any:
    """Post-LN layers x_i <- N(x_i + dt sum_j softmax_j(beta <x_i, x_j>) x_j) of a batch X0
    (C, n, d) in torch on the GPU, float64, as the authors' phase-diagram script computes them
    (batched matmul, softmax, batched matmul, norm); returns the final batch."""
    import torch

    X = torch.as_tensor(np.asarray(X0, dtype=float), device=torch.device("cuda"))
    for _ in range(steps):
        A = torch.softmax(beta * torch.bmm(X, X.transpose(1, 2)), dim=2)
        X = X + dt * torch.bmm(A, X)
        X = X / torch.linalg.vector_norm(X, dim=2, keepdim=True)
    torch.cuda.synchronize()
    return X


def _time(fn, repeat: int) -> float:
    """Best of ``repeat`` timed calls, after one untimed warm-up call."""
    fn()
    best = np.inf
    for _ in range(repeat):
        tic = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - tic)
    return best


def _torch_ready() -> str | None:
    """None when torch can run on the GPU, else why not."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no GPU"
    return None


def cuda_bench(
    workloads: tuple[Workload, ...] = WORKLOADS,
    *,
    repeat: int = 3,
    peak: float = PEAK_FLOPS,
    scale: float = 1.0,
) -> list[dict]:
    """One row per workload: token-steps/s of metastab on the device, of the torch version
    (:func:`torch_chain`, :func:`torch_post_ln`) on the same device, of metastab on the CPU
    (fewer chains and steps, the same per-token work), the ratios, and the fraction of the flop
    bound that metastab's device rate reaches (the flow's weighted sums count 2 n d more). Where
    the backend runs several chains per block, ``cuda_one_chain`` is the device's rate with one
    chain per block. A workload with several betas runs each in turn (rates over the whole
    grid).

    Parameters
    ----------
    workloads : tuple of workloads
        (name, n, d, betas, chains, steps, CPU chains, CPU steps) each (default
        :data:`WORKLOADS`).
    repeat : int
        The timed calls of each side after a warm-up; the best counts.
    peak : float
        The card's float64 flop/s, for the bound (default :data:`PEAK_FLOPS`).
    scale : float
        Multiplies the chains and steps (a quick run: 0.01).

    Returns
    -------
    rows : list of dict
        One per workload: workload, n, d, beta, chains, steps, metastab_cuda, metastab_cpu,
        cuda_one_chain, torch, vs_torch, torch_note (why torch did not run, or None), vs_cpu,
        bound and bound_fraction (rates in token-steps/s).

    Examples
    --------
    The arguments are checked first, anywhere, and the flop bound of a row is plain arithmetic
    (W1's below); the timings need a GPU, so they are shown, not run:

    >>> from metastab.bench.cuda_check import EXP_FLOPS, PEAK_FLOPS, WORKLOADS, cuda_bench, table
    >>> name, n, d = WORKLOADS[0][:3]
    >>> name, f"{PEAK_FLOPS / (2 * n * d + EXP_FLOPS * n):.3g}"  # token-steps/s at the bound
    ('W1', '7.08e+10')
    >>> cuda_bench(scale=0.0)
    Traceback (most recent call last):
    ...
    ValueError: scale must be > 0, got 0.0
    >>> print(table(cuda_bench(scale=0.01, repeat=1)))  # doctest: +SKIP
    """
    repeat = integer("repeat", repeat, 1)
    peak = real("peak", peak, low=0, low_open=True)
    scale = real("scale", scale, low=0, low_open=True)
    from ..engine import simulate
    from ..kernels.cuda.drivers import block_shape, one_chain_per_block
    from ..kernels.params import CHAIN, SPHERE_FLOW
    from ..models import SoftmaxChain
    from ..models.sphere import SphereFlow
    from ..setups.sphere import sphere_uniform

    why_not = _torch_ready()
    rows = []
    for name, n, d, betas, chains, steps, cpu_chains, cpu_steps in workloads:
        chains, steps = max(1, int(chains * scale)), max(1, int(steps * scale))
        cpu_chains, cpu_steps = max(1, int(cpu_chains * scale)), max(1, int(cpu_steps * scale))
        flow = name == "phase-diagram"
        models: list[SphereFlow] | list[SoftmaxChain]
        if flow:
            x0 = sphere_uniform(n, d, chains=chains, rng=0)
            models = [SphereFlow(beta=b, dt=_DT) for b in betas]
        else:
            x0 = _x0(name, n, d)
            models = [SoftmaxChain(beta=b, gamma=_GAMMA) for b in betas]

        def grid(device, C, k, x0=x0, models=models):
            start = x0[:C] if x0.ndim == 3 else x0
            for m in models:
                simulate(m, start, steps=k, chains=C, rng=1, device=device)

        work = len(betas) * chains * n * steps
        gpu_s = _time(partial(grid, "cuda", chains, steps), repeat)
        cpu_s = _time(partial(grid, "cpu", cpu_chains, cpu_steps), repeat)
        row: dict[str, Any] = {
            "workload": name,
            "n": n,
            "d": d,
            "beta": list(betas),
            "chains": chains,
            "steps": steps,
            "metastab_cuda": work / gpu_s,
            "metastab_cpu": cpu_chains * n * cpu_steps / cpu_s,
            "cuda_one_chain": None,
            "torch": None,
            "vs_torch": None,
            "torch_note": why_not,
        }
        if block_shape(n, d, SPHERE_FLOW if flow else CHAIN)[3] > 1:
            with one_chain_per_block():
                row["cuda_one_chain"] = work / _time(partial(grid, "cuda", chains, steps), repeat)
        if why_not is None:

            def torch_grid(x0=x0, betas=betas, flow=flow, chains=chains, steps=steps):
                for b in betas:
                    if flow:
                        torch_post_ln(x0, b, _DT, steps=steps)
                    else:
                        torch_chain(x0, b, _GAMMA, steps=steps, chains=chains, seed=1)

            torch_s = _time(torch_grid, repeat)
            row["torch"] = len(betas) * chains * n * steps / torch_s
            row["vs_torch"] = torch_s / gpu_s
        row["vs_cpu"] = row["metastab_cuda"] / row["metastab_cpu"]
        row["bound"] = peak / ((4 if flow else 2) * n * d + EXP_FLOPS * n)
        row["bound_fraction"] = row["metastab_cuda"] / row["bound"]
        rows.append(row)
    return rows


def _escape_problem():
    """The Thm 5.4 exit of the README's example: pentagon vertices + 15 tokens at 0.5 v_a."""
    from ..events import LeaveHull
    from ..setups.polytopes import regular_polygon
    from .chains import workload_w1

    P = regular_polygon(5)
    x0 = workload_w1()
    return x0, LeaveHull(groups=P.assign(x0), radius=2 * _GAMMA * P.diameter)


def agreement(
    beta: float = 13.0,
    *,
    chains: int = _AGREE_CHAINS,
    control: float | None = None,
    max_steps: int = 200_000,
) -> dict:
    """KS and AD tests of the device's escape-time law against the CPU's (independent seeds),
    and the negative control (the device at beta ``control``, default beta + 0.5, against the
    CPU at beta), which must be rejected.

    Parameters
    ----------
    beta : float
        The β of the [FW] Thm 5.4 exit from W1's clustered pentagon.
    chains : int
        The escape times drawn on each side.
    control : float, optional
        The device's β in the negative control (default beta + 0.5).
    max_steps : int
        The step budget of every chain; a censored chain raises a RuntimeError.

    Returns
    -------
    result : dict
        beta, control_beta, chains, mean_cpu, mean_cuda, mean_control, the p-values ``same``
        and ``control`` (each ``{"ks_p", "ad_p"}``), and ``passed``: the laws agree at level
        0.01 and both tests reject the control at it.

    Examples
    --------
    The arguments are checked first, anywhere; the escape times need a GPU, so the run is
    shown, not run:

    >>> from metastab.bench.cuda_check import agreement
    >>> agreement(13.0, chains=1)
    Traceback (most recent call last):
    ...
    ValueError: chains must be >= 2, got 1
    >>> agreement(13.0)["passed"]  # doctest: +SKIP
    True
    """
    beta = real("beta", beta, low=0, low_open=True)
    chains, max_steps = integer("chains", chains, 2), integer("max_steps", max_steps, 1)
    if control is not None:
        control = real("control", control, low=0, low_open=True)
    from scipy import stats

    from ..engine import first_passage
    from ..models import SoftmaxChain

    x0, event = _escape_problem()

    def times(b, device, seed):
        fp = first_passage(
            SoftmaxChain(beta=b, gamma=_GAMMA),
            x0,
            event,
            max_steps=max_steps,
            chains=chains,
            rng=seed,
            device=device,
        )
        if fp.censored.any():
            raise RuntimeError(f"{int(fp.censored.sum())} chains censored: raise max_steps")
        return fp.times.astype(float)

    control = beta + _CONTROL_SHIFT if control is None else control
    cpu, gpu, other = times(beta, "cpu", 1), times(beta, "cuda", 2), times(control, "cuda", 3)

    def tests(a, b):
        ad = stats.anderson_ksamp(
            [a, b], variant="midrank", method=stats.PermutationMethod(n_resamples=999)
        )
        return {"ks_p": float(stats.ks_2samp(a, b).pvalue), "ad_p": float(ad.pvalue)}

    same, ctrl = tests(gpu, cpu), tests(other, cpu)
    return {
        "beta": beta,
        "control_beta": control,
        "chains": chains,
        "mean_cpu": float(cpu.mean()),
        "mean_cuda": float(gpu.mean()),
        "mean_control": float(other.mean()),
        "same": same,
        "control": ctrl,
        "passed": min(same.values()) >= _ALPHA and max(ctrl.values()) < _ALPHA,
    }


def same_bits(steps: int = 50, chains: int = 64) -> list[dict]:
    """One row per model: the final states of ``simulate`` on the device and on the CPU from
    the same seed, and whether they are equal bit for bit (NaN where the CPU has NaN).

    Parameters
    ----------
    steps : int
        The steps of every run.
    chains : int
        The chains of every run.

    Returns
    -------
    rows : list of dict
        One per model: model, chains, steps, equal, differing_values, max_abs_difference.

    Examples
    --------
    The arguments are checked first, anywhere; the device runs need a GPU, so they are shown,
    not run:

    >>> from metastab.bench.cuda_check import same_bits
    >>> same_bits(steps=0)
    Traceback (most recent call last):
    ...
    ValueError: steps must be >= 1, got 0
    >>> all(row["equal"] for row in same_bits(steps=2, chains=2))  # doctest: +SKIP
    True
    """
    steps, chains = integer("steps", steps, 1), integer("chains", chains, 1)
    from ..engine import simulate
    from ..models import Hardmax, Localmax, SoftmaxChain, SoftmaxFlow
    from ..models.sphere import NoisySphere, SphereChain, SphereFlow
    from ..setups.sphere import sphere_uniform
    from .chains import workload_w1

    w1 = workload_w1()
    ball = sphere_uniform(16, 8, rng=3)
    cases: list[tuple[str, Any, np.ndarray]] = [
        ("SoftmaxChain W1", SoftmaxChain(beta=20.0, gamma=_GAMMA), w1),
        ("SoftmaxFlow W1", SoftmaxFlow(beta=20.0, gamma=_GAMMA), w1),
        ("Hardmax W1", Hardmax(gamma=_GAMMA), w1),
        ("Localmax W1", Localmax(gamma=_GAMMA, r=0.05), w1),
        ("SphereChain n=16 d=8", SphereChain(beta=4.0, gamma=_GAMMA), ball),
        ("SphereFlow post-LN n=16 d=8", SphereFlow(beta=4.0, dt=_DT), ball),
        ("SphereFlow rk4 n=16 d=8", SphereFlow(beta=4.0, dt=_DT, scheme="rk4"), ball),
        # softmax: (USA)'s scale is a libdevice exp, not the CPU's
        ("NoisySphere softmax n=16 d=8", NoisySphere(4.0, 1.0, _DT, attention="softmax"), ball),
    ]
    rows = []
    for name, model, x0 in cases:
        runs = [
            simulate(model, x0, steps=steps, chains=chains, rng=7, device=dev).final
            for dev in ("cuda", "cpu")
        ]
        differ = ~((runs[0] == runs[1]) | (np.isnan(runs[0]) & np.isnan(runs[1])))
        rows.append(
            {
                "model": name,
                "chains": chains,
                "steps": steps,
                "equal": not differ.any(),
                "differing_values": int(differ.sum()),
                "max_abs_difference": float(np.nanmax(np.abs(runs[0] - runs[1]))),
            }
        )
    return rows


def device_name() -> str:
    """The GPU's name as numba reports it (the simulator's under NUMBA_ENABLE_CUDASIM)."""
    from numba import cuda

    name = getattr(cuda.get_current_device(), "name", "numba's CUDA simulator")
    return name.decode() if isinstance(name, bytes) else str(name)


def table(rows: list[dict]) -> str:
    """The bench rows as a Markdown table."""

    def g(v):
        return "–" if v is None else f"{v:.3g}"

    lines = [
        "| workload | n, d, β | chains × steps | metastab cuda | one chain per block | torch f64 | "
        "metastab CPU | vs torch | vs CPU | of flop bound |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['n']}, {r['d']}, {'/'.join(f'{b:g}' for b in r['beta'])} | "
            f"{r['chains']} × "
            f"{r['steps']} | {g(r['metastab_cuda'])} | {g(r['cuda_one_chain'])} | "
            f"{g(r['torch'])} | "
            f"{g(r['metastab_cpu'])} | {g(r['vs_torch'])} | {g(r['vs_cpu'])} | "
            f"{100 * r['bound_fraction']:.2g} % |"
        )
    return "\n".join(lines)


# seconds each step of check() may take on a fresh machine. The limits stop a hang; they are not
# speed targets. The CUDA kernels are compiled in each process that launches them (the CPU
# kernels are loaded from numba's disk cache once the tests' workers have compiled them), so
# every step includes its compiling; summary.md records each step's wall time.
LIMITS = {"tests": 240.0, "bits": 120.0, "agreement": 120.0, "bench": 150.0}


@contextlib.contextmanager
def _time_limit(seconds: float, what: str) -> Iterator[None]:
    """Raise TimeoutError in the block after ``seconds`` (SIGALRM: the main thread, Unix)."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"{what} ran past its {seconds:g} s limit")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check(
    out: str | Path,
    *,
    scale: float = 1.0,
    run_tests: bool = True,
    repeat: int = 3,
    workloads: tuple[Workload, ...] = WORKLOADS,
    agree: dict | None = None,
    bits: dict | None = None,
    limits: dict | None = None,
) -> bool:
    """The whole GPU check, written to the folder ``out``: ``tests.log`` and ``tests.xml`` (the
    device tests, pytest's output and JUnit report), ``bits.json`` (:func:`same_bits`),
    ``agreement.json`` (:func:`agreement`), ``bench.json`` and ``bench.md`` (:func:`cuda_bench`)
    and ``summary.md`` (the date, the device, the tables and the verdicts). Every step runs under
    its limit of :data:`LIMITS` (``limits`` overrides some); one that runs past it or raises is
    reported (the traceback in ``errors.log``) and fails the check, and the next steps still
    run; ``summary.md`` is rewritten after every step, and the bench keeps the workloads done
    before a failure. Returns whether the tests, the bits and the agreement passed. ``scale``
    < 1 shrinks the bench (a quick run); ``agree`` and ``bits``: keywords of :func:`agreement` and
    :func:`same_bits`.

    Parameters
    ----------
    out : str or Path
        The folder of the results (created if missing).
    scale : float
        Multiplies the bench's chains and steps (a quick run: < 1).
    run_tests : bool
        Run the device tests first (from a source checkout).
    repeat : int
        The bench's timed calls of each side.
    workloads : tuple of workloads
        The bench's workloads (default :data:`WORKLOADS`).
    agree, bits : dict, optional
        Keywords of :func:`agreement` and of :func:`same_bits`.
    limits : dict, optional
        Seconds per step, overriding some of :data:`LIMITS`.

    Returns
    -------
    passed : bool
        Whether the tests, the bits and the agreement passed.

    Examples
    --------
    The arguments are checked first, anywhere (before the folder is made); the check needs a
    GPU, so it is shown, not run:

    >>> from metastab.bench.cuda_check import check
    >>> check("gpu-check", limits={"bench": 60.0, "compile": 60.0})
    Traceback (most recent call last):
    ...
    ValueError: limits must name steps of ['tests', 'bits', 'agreement', 'bench'], got 'compile'
    >>> check("gpu-check", scale=0.01, run_tests=False)  # doctest: +SKIP
    True
    """
    scale = real("scale", scale, low=0, low_open=True)
    repeat = integer("repeat", repeat, 1)
    unknown = sorted(set(limits or {}) - set(LIMITS))
    if unknown:
        raise ValueError(
            f"limits must name steps of {list(LIMITS)}, got {', '.join(map(repr, unknown))}"
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    limit = {**LIMITS, **(limits or {})}
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    device = device_name()
    lines = [f"# metastab GPU check, {stamp}", "", f"device: {device}; host: {platform.node()}", ""]
    ok = True

    def save() -> None:  # after every step: a check stopped from outside keeps what it measured
        (out / "summary.md").write_text("\n".join(lines))

    if run_tests:
        tests = Path(__file__).resolve().parents[2] / "tests" / "test_cuda.py"
        if tests.is_file():
            env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m"]
            command += ["not outer", f"--junitxml={out / 'tests.xml'}", str(tests)]
            command += ["--dist", "load"]  # one file: test by test across the workers
            tic = time.perf_counter()
            try:
                proc = subprocess.run(
                    command,
                    env={**env, "METASTAB_CUDA_TESTS": "1"},
                    capture_output=True,
                    text=True,
                    timeout=limit["tests"],
                )
                (out / "tests.log").write_text(proc.stdout + proc.stderr)
                last = (proc.stdout.strip().splitlines() or ["no output"])[-1]
                ok &= proc.returncode == 0
            except subprocess.TimeoutExpired:
                last, ok = f"FAILED: ran past its {limit['tests']:g} s limit", False
            lines += [f"device tests: {last} ({time.perf_counter() - tic:.0f} s)", ""]
        else:
            lines += [f"device tests: not run ({tests} not found: run from a source checkout)", ""]

    save()
    seconds: dict[str, float] = {}

    def step(name: str, fn: Any) -> Any:
        nonlocal ok
        tic = time.perf_counter()
        try:
            with _time_limit(limit[name], name):
                return fn()
        except Exception as exc:  # reported, and the other steps still run
            ok = False
            lines.extend([f"{name}: FAILED: {type(exc).__name__}: {exc}", ""])
            with open(out / "errors.log", "a") as log:
                log.write(f"{name}:\n{traceback.format_exc()}\n")
            return None
        finally:
            seconds[name] = time.perf_counter() - tic

    equal = step("bits", lambda: same_bits(**(bits or {})))
    if equal is not None:
        (out / "bits.json").write_text(json.dumps(equal, indent=2) + "\n")
        ok &= all(r["equal"] for r in equal)
        lines += ["same seed, device against CPU, bit for bit:", ""]
        lines += ["| model | chains × steps | equal | differing values | max abs difference |"]
        lines += ["|---|---|---|---|---|"]
        lines += [
            f"| {r['model']} | {r['chains']} × {r['steps']} | {'yes' if r['equal'] else 'NO'} | "
            f"{r['differing_values']} | {r['max_abs_difference']:.3g} |"
            for r in equal
        ]
        lines += ["", f"({seconds['bits']:.0f} s)", ""]
    save()
    law = step("agreement", lambda: agreement(**(agree or {})))
    if law is not None:
        (out / "agreement.json").write_text(json.dumps(law, indent=2) + "\n")
        ok &= law["passed"]
        lines += [
            f"escape-time law, device against CPU (beta {law['beta']:g}, {law['chains']} chains "
            f"each): KS p = {law['same']['ks_p']:.3g}, AD p = {law['same']['ad_p']:.3g}; "
            f"negative control (device at beta {law['control_beta']:g}): KS p = "
            f"{law['control']['ks_p']:.3g}, AD p = {law['control']['ad_p']:.3g}; "
            f"{'passed' if law['passed'] else 'FAILED'} ({seconds['agreement']:.0f} s)",
            "",
        ]
    save()
    rows: list[dict] = []

    def bench() -> None:
        for w in workloads:
            rows.extend(cuda_bench((w,), scale=scale, repeat=repeat))

    step("bench", bench)
    if rows:
        (out / "bench.json").write_text(json.dumps(rows, indent=2) + "\n")
        (out / "bench.md").write_text(table(rows) + "\n")
        lines += [
            f"token-steps/s, float64, best of {repeat}; flop bound at {PEAK_FLOPS:.3g} flop/s",
            "",
            table(rows),
            "",
            f"({seconds['bench']:.0f} s)",
            "",
        ]
    save()
    return ok
