"""Throughput of the sphere flow on the phase-diagram workload: metastab beside batched NumPy.

Workload ``phase-diagram`` (the setting of [GLPR] Fig. 3 and of its authors' script): n = 32 tokens
i.i.d. uniform on S^{d-1} per realisation, d in {2, 32, 128}, 2048 realisations, post-LN layers
x_i ← N(x_i + dt Σ_j softmax_j(β<x_i, x_j>) x_j) with dt = 0.1, B = V = I, float64. The figure of
merit is realisation-steps per second, realisations × steps / wall seconds, best of ``repeat``
timed runs of each implementation, taken alternately after an untimed warm-up.

The NumPy baseline (:func:`numpy_post_ln`) is the field's vectorised form (batched matmul, as the
authors' torch script does on the GPU); it computes the same map, so both final states agree to
rounding (the difference is reported).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numba
import numpy as np

from ..engine import simulate
from ..models.sphere import SphereFlow
from ..setups.sphere import sphere_uniform
from . import jax_baselines as bench_jax

__all__ = ["numpy_post_ln", "phase_diagram_bench", "PHASE_DIMS", "TARGETS"]

PHASE_N = 32
PHASE_DIMS = (2, 32, 128)
PHASE_CHAINS = 2048
PHASE_BETA = 4.0
PHASE_DT = 0.1
PHASE_STEPS = 30
# targets: metastab / NumPy and metastab / JAX realisation-steps per second
TARGETS = {2: 3.0, 128: 1.5}
JAX_TARGET = 2.0


def numpy_post_ln(X: np.ndarray, beta: float, dt: float, *, steps: int) -> np.ndarray:
    """``steps`` post-LN layers of (SA) with B = V = I on a batch X (C, n, d), in vectorised NumPy:
    scores by batched matmul, max-shifted softmax, the weighted sum by batched matmul, the
    residual and LayerNorm.

    Parameters
    ----------
    X : ndarray, shape (C, n, d)
        The batch: C configurations of unit tokens.
    beta : float
        The inverse temperature of the attention.
    dt : float
        The layer's step.
    steps : int
        The layers.

    Returns
    -------
    X : ndarray, shape (C, n, d)
        The final batch (a new array).

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import sphere_uniform
    >>> from metastab.bench.phase_diagram import numpy_post_ln
    >>> X = sphere_uniform(4, 3, chains=2, rng=0)
    >>> Y = numpy_post_ln(X, 1.0, 0.1, steps=3)
    >>> Y.shape, bool(np.allclose(np.linalg.norm(Y, axis=-1), 1.0))
    ((2, 4, 3), True)
    """
    X = np.array(X, dtype=float)
    for _ in range(steps):
        S = X @ X.transpose(0, 2, 1)
        S -= S.max(axis=2, keepdims=True)
        S *= beta
        np.exp(S, out=S)
        S /= S.sum(axis=2, keepdims=True)
        Y = S @ X
        Y *= dt
        Y += X
        Y /= np.linalg.norm(Y, axis=2, keepdims=True)
        X = Y
    return X


def phase_diagram_bench(
    *,
    dims: Sequence[int] = PHASE_DIMS,
    chains: int = PHASE_CHAINS,
    steps: int = PHASE_STEPS,
    repeat: int = 3,
    seed: int = 0,
    on_row: Callable[[dict], None] | None = None,
    jax: bool | None = None,
) -> list[dict]:
    """Realisation-steps per second of ``metastab.simulate(SphereFlow(4, 0.1), ...)`` and of
    :func:`numpy_post_ln` on the phase-diagram workload, one row per d (``on_row(row)`` is called
    as soon as each is measured).

    Parameters
    ----------
    dims : sequence of int
        The dimensions d (default :data:`PHASE_DIMS`).
    chains : int >= 1
        The realisations (default 2048).
    steps : int >= 1
        The layers (default 30).
    repeat : int >= 1
        The timed runs of each implementation, alternating; the best counts.
    seed : int
        The seed of the tokens.
    on_row : callable, optional
        Called with each row as soon as it is measured.
    jax : bool or None
        Time the JAX version too: True, False, or None for whenever JAX is installed (the
        ``bench`` extra, :func:`metastab.bench.jax_baselines.jax_post_ln`;
        :func:`.jax_baselines.wanted`).

    Returns
    -------
    rows : list of dict
        One per d: d, n, chains, steps, repeat, threads, metastab_seconds, numpy_seconds,
        metastab_rate, numpy_rate, ratio (NumPy seconds / metastab seconds), target (or None)
        and max_difference (largest absolute coordinate difference of the final states); with
        JAX also jax_seconds, jax_rate, jax_ratio (JAX seconds / metastab seconds), jax_target
        and jax_difference, timed in the same alternation (else None).

    Examples
    --------
    >>> from metastab.bench.phase_diagram import phase_diagram_bench
    >>> [row] = phase_diagram_bench(dims=(2,), chains=4, steps=3, repeat=1, jax=False)
    >>> row["d"], row["n"], row["max_difference"] < 1e-12, row["jax_rate"]
    (2, 32, True, None)
    """
    for name, value in (("chains", chains), ("steps", steps), ("repeat", repeat)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    model = SphereFlow(PHASE_BETA, PHASE_DT)
    rows = []
    for d in dims:
        X = sphere_uniform(PHASE_N, d, chains=chains, rng=seed)
        simulate(model, X[:2], steps=2)  # warm-up: compile or load the cache
        numpy_post_ln(X[:2], PHASE_BETA, PHASE_DT, steps=2)
        use_jax = bench_jax.wanted(jax)
        if use_jax:  # compile for the timed shape
            bench_jax.jax_post_ln(X, PHASE_BETA, PHASE_DT, steps=steps)
        best = {"metastab": np.inf, "numpy": np.inf, "jax": np.inf}
        for _ in range(repeat):  # alternately, so that a busy spell hits both alike
            tic = time.perf_counter()
            ours = simulate(model, X, steps=steps).final
            best["metastab"] = min(best["metastab"], time.perf_counter() - tic)
            tic = time.perf_counter()
            theirs = numpy_post_ln(X, PHASE_BETA, PHASE_DT, steps=steps)
            best["numpy"] = min(best["numpy"], time.perf_counter() - tic)
            if use_jax:
                tic = time.perf_counter()
                jaxs = bench_jax.jax_post_ln(X, PHASE_BETA, PHASE_DT, steps=steps)
                best["jax"] = min(best["jax"], time.perf_counter() - tic)
        work = chains * steps
        row = {
            "d": d,
            "n": PHASE_N,
            "chains": chains,
            "steps": steps,
            "repeat": repeat,
            "threads": numba.get_num_threads(),
            "metastab_seconds": best["metastab"],
            "numpy_seconds": best["numpy"],
            "metastab_rate": work / best["metastab"],
            "numpy_rate": work / best["numpy"],
            "ratio": best["numpy"] / best["metastab"],
            "target": TARGETS.get(d),
            "max_difference": float(np.abs(ours - theirs).max()),
            "jax_seconds": best["jax"] if use_jax else None,
            "jax_rate": work / best["jax"] if use_jax else None,
            "jax_ratio": best["jax"] / best["metastab"] if use_jax else None,
            "jax_target": JAX_TARGET,
            "jax_difference": float(np.abs(ours - jaxs).max()) if use_jax else None,
        }
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows
