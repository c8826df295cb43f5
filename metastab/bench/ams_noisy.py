"""The noisy sphere's escape from the uniform state by AMS beside direct simulation:
``metastab bench --workload ams-noisy``.

The case (:data:`AMS_NOISY`): the noisy circle (d = 2, :class:`~metastab.NoisySphere`) at
β = 16 > β_* = 2.4469 and K = K_c + 0.05 (K_# − K_c), between the critical coupling and the
linear threshold (:mod:`metastab.theory.noisy`), where the uniform state is metastable; dt =
0.005; the event LeaveUniform(0.8) (the clustered state is at m_1 ≈ 0.93, the saddle at 0.49).
Both estimators start from the same configuration x0 of n tokens, in A = {m_1 <= 0.3}: the
regular polygon run for :data:`BURN_IN` steps of the model (its first chain that ends in A),
so that the start is a typical uniform configuration, not the polygon's exceptional one.

- Direct: :func:`metastab.first_passage` of ``direct_chains`` chains, every chain to the event;
  E[T] their mean, its relative error the standard error over the mean.
- AMS: :func:`metastab.engine.ams_mean_escape_time` (the Hill relation; direct chains cut
  after :data:`HILL` ``cycles`` cycles give the entrance law on ∂A, generalised AMS the
  probability of the event before A from there); its relative error from its interval.

The figure of merit is the CPU time at a common relative error ε = :data:`EPSILON` of E[T]:
c (r / ε)², c the CPU seconds (user + system, all threads) of the estimate and r its relative
error (c r² is invariant: a quarter of the error costs sixteen times the work). The ratio is
direct over AMS; the target is :data:`TARGET` at the largest n that the direct chains run.
Beyond it, at an n where direct simulation is out of reach, AMS alone, with the steps that
direct simulation would need for ε: E[T] / ε² (the escape time is close to exponential, whose
standard deviation is its mean: measured at the smaller n).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numba
import numpy as np

from ..engine import ams_mean_escape_time, first_passage, simulate
from ..events import LeaveUniform
from ..exceptions import DiagnosticWarning
from ..models.sphere import NoisySphere
from ..order import order_parameters
from ..setups.polytopes import regular_polygon
from ..theory import critical_coupling, critical_coupling_linear

__all__ = [
    "AMS_NOISY",
    "BEYOND",
    "BURN_IN",
    "EPSILON",
    "HILL",
    "SIZES",
    "TARGET",
    "ams_noisy_bench",
    "noisy_case",
    "reference_level",
]

AMS_NOISY = {"beta": 16.0, "between": 0.05, "dt": 0.005, "level": 0.8}
# A = {m_1 <= a / sqrt(n)}: the typical m_1 of n uniform tokens is sqrt(pi / (4 n))
REFERENCE = 0.6
SIZES = (16, 32, 64)  # token counts of the side-by-side runs
BEYOND = (128,)  # token counts for AMS alone
DIRECT_CHAINS = 100
HILL = {"chains": 10, "cycles": 10, "replicas": 50, "runs": 10}
BURN_IN = 2000
EPSILON = 0.1
TARGET = 100.0


def noisy_case(n: int, *, seed: int = 0) -> tuple[NoisySphere, np.ndarray, LeaveUniform]:
    """The model, the start x0 (n, 2) and the event of :data:`AMS_NOISY` for n tokens.

    Parameters
    ----------
    n : int
        The tokens.
    seed : int
        The seed of the burn-in from the regular polygon (module notes).

    Returns
    -------
    (NoisySphere, ndarray, LeaveUniform)
        The model at K = K_c + 0.05 (K_# − K_c), the start (in A) and the event.

    Raises
    ------
    RuntimeError
        When no chain of the burn-in ends in A (n too small for the case: it escaped).

    Examples
    --------
    >>> from metastab.bench.ams_noisy import noisy_case
    >>> model, x0, event = noisy_case(16)
    >>> x0.shape, event
    ((16, 2), LeaveUniform(level=0.8, degree=1))
    """
    c = AMS_NOISY
    k_c, k_sharp = critical_coupling(c["beta"], 2), critical_coupling_linear(c["beta"], 2)
    model = NoisySphere(c["beta"], k_c + c["between"] * (k_sharp - k_c), c["dt"])
    polygon = regular_polygon(n).vertices
    run = simulate(model, polygon, steps=BURN_IN, chains=64, rng=seed, progress=False)
    m1 = order_parameters(run.final)[:, 0]
    inside = np.flatnonzero(m1 <= reference_level(n))
    if inside.size == 0:
        raise RuntimeError(f"no chain of the burn-in ended in A at n={n}")
    x0 = run.final[inside[0]]
    return model, x0 / np.linalg.norm(x0, axis=1, keepdims=True), LeaveUniform(c["level"])


def reference_level(n: int) -> float:
    """a = :data:`REFERENCE` / √n, the reference set A = {m_1 <= a} of n tokens.

    Parameters
    ----------
    n : int
        The tokens.

    Returns
    -------
    float
        The reference level a.

    Examples
    --------
    >>> from metastab.bench.ams_noisy import reference_level
    >>> reference_level(16)
    0.15
    """
    return REFERENCE / math.sqrt(n)


def _cpu(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """fn(*args, **kwargs) and the CPU seconds (user + system, all threads) it took."""
    tic = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - tic


def ams_noisy_bench(
    sizes: Sequence[int] = SIZES,
    beyond: Sequence[int] = BEYOND,
    *,
    direct_chains: int = DIRECT_CHAINS,
    seed: int = 0,
    on_row: Callable[[dict], None] | None = None,
) -> dict:
    """Direct simulation and AMS side by side at each n of ``sizes``, AMS alone at each n of
    ``beyond`` (module notes); each kernel compiled before the clock starts.

    Parameters
    ----------
    sizes : sequence of int
        The token counts of the side-by-side runs (the ratio is that of the largest).
    beyond : sequence of int
        The token counts for AMS alone.
    direct_chains : int
        The chains of the direct simulation, each run to the event.
    seed : int
        The burn-in's seed; the direct chains take seed + 1, the AMS runs seed + 2.
    on_row : callable, optional
        Called with each row as it is measured.

    Returns
    -------
    dict
        ``rows`` (one per method and n: method, n, mean, low, high, rel_err, cpu_s,
        cpu_s_at_eps, steps; AMS: p, drift_pvalue, warnings (the DiagnosticWarnings of the
        estimate, recorded: the drift test's among them), and beside direct ratio and z, the
        log-ratio of the estimates over its standard error; beyond: direct_steps_at_eps),
        ``ratios`` (n -> direct / AMS CPU at equal relative error),
        ``ratio`` (at the largest n of ``sizes``), ``epsilon``, ``target``, ``threads``.

    Examples
    --------
    >>> from metastab.bench.ams_noisy import ams_noisy_bench
    >>> r = ams_noisy_bench((16,), (), direct_chains=4)
    >>> [row["method"] for row in r["rows"]], sorted(r["ratios"])
    (['direct', 'ams'], [16])
    """
    rows: list[dict[str, Any]] = []
    ratios: dict[int, float] = {}
    cvs: list[float] = []

    def emit(row: dict) -> None:
        rows.append(row)
        if on_row is not None:
            on_row(row)

    for n in (*sizes, *beyond):
        model, x0, event = noisy_case(n, seed=seed)
        a = reference_level(n)
        # compile (or load) both paths' kernels first (a run too small to be checked)
        first_passage(model, x0, event, max_steps=10, chains=2, rng=seed, progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DiagnosticWarning)
            ams_mean_escape_time(
                model, x0, event, reference_level=a, chains=1, cycles=1, replicas=2, runs=2,
                rng=seed,
            )  # fmt: skip
        if n in sizes:
            fp, cpu = _cpu(
                first_passage, model, x0, event, max_steps=10**12, chains=direct_chains,
                rng=seed + 1, progress=False,
            )  # fmt: skip
            t = fp.times.astype(float)
            mean, sd = float(t.mean()), float(t.std(ddof=1))
            cvs.append(sd / mean)
            rel = direct_rel = sd / mean / math.sqrt(t.size)
            direct = {
                "method": "direct", "n": n, "mean": mean, "low": mean - 1.96 * rel * mean,
                "high": mean + 1.96 * rel * mean, "rel_err": rel, "cpu_s": cpu,
                "cpu_s_at_eps": cpu * (rel / EPSILON) ** 2, "steps": float(t.sum()),
            }  # fmt: skip
            emit(direct)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DiagnosticWarning)
            res, cpu = _cpu(
                ams_mean_escape_time, model, x0, event, reference_level=a, rng=seed + 2, **HILL
            )
        low, high = res.confidence_interval()
        rel = math.log(high / low) / (2 * 1.96)  # the interval is symmetric in log
        ams = {
            "method": "ams", "n": n, "mean": res.mean, "low": low, "high": high,
            "rel_err": rel, "cpu_s": cpu, "cpu_s_at_eps": cpu * (rel / EPSILON) ** 2,
            "steps": math.nan, "p": res.p, "drift_pvalue": res.drift_pvalue,
            "warnings": [str(w.message) for w in caught],
        }  # fmt: skip
        if n in sizes:
            ratios[n] = direct["cpu_s_at_eps"] / ams["cpu_s_at_eps"]
            ams["ratio"] = ratios[n]
            # the log-ratio of the two estimates over its combined standard error
            ams["z"] = math.log(res.mean / mean) / math.hypot(rel, direct_rel)
        else:
            cv = float(np.mean(cvs)) if cvs else 1.0
            ams["direct_steps_at_eps"] = res.mean * (cv / EPSILON) ** 2
        emit(ams)
    largest = max(sizes) if sizes else None
    return {
        "rows": rows,
        "ratios": ratios,
        "ratio": ratios.get(largest) if largest is not None else None,
        "epsilon": EPSILON,
        "target": TARGET,
        "threads": numba.get_num_threads(),
    }
