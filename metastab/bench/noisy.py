"""The noisy sphere model's step beside the sphere flow's post-LN step (``metastab bench
--workload noisy``): the cost of its Brownian noise (n d normals per step, Box–Muller on the
chain's stream) and of its projected drift, at the same n, d, β and attention
((USA), the papers' model), in the same run.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numba
import numpy as np

from ..engine import simulate
from ..models.sphere import NoisySphere, SphereFlow
from ..setups.sphere import sphere_uniform
from .chains import _best

__all__ = ["NOISY_SIZES", "NOISY_TARGET", "noisy_bench"]

# (n, d) of the comparison, and the largest ratio of the noisy step's time to post-LN's aimed at
NOISY_SIZES = ((32, 2), (32, 16), (32, 32), (128, 32))
NOISY_TARGET = 1.5


def noisy_bench(
    sizes: Sequence[tuple[int, int]] = NOISY_SIZES,
    *,
    chains: int = 256,
    steps: int = 200,
    beta: float = 1.0,
    K: float = 1.0,
    dt: float = 0.01,
    repeat: int = 3,
    seed: int = 0,
) -> dict:
    """Seconds per chain-step of ``simulate(NoisySphere(β, K, dt), ...)`` and of
    ``simulate(SphereFlow(β, dt, attention="unnormalized"), ...)`` (post-LN) on the same
    i.i.d. uniform start, alternating in the same process: the median over ``repeat`` turns of
    the better of two back-to-back runs, and their ratio (noisy / post-LN; the target
    :data:`NOISY_TARGET`).

    Returns
    -------
    dict: rows (n, d, chains, steps, noisy_seconds, flow_seconds, ratio, target), threads,
    repeat.
    """
    rows: list[dict[str, Any]] = []
    for n, d in sizes:
        x0 = sphere_uniform(n, d, chains=chains, rng=seed)
        noisy = NoisySphere(beta, K, dt)
        flow = SphereFlow(beta, dt, attention="unnormalized")
        for model in (noisy, flow):  # compiled before the clock starts
            simulate(model, x0[:2], steps=2, rng=seed)
        t_noisy, t_flow = [], []
        for _ in range(repeat):  # interleaved: both see the same machine load
            t_noisy.append(_best(partial(simulate, noisy, x0, steps=steps, rng=seed), 2))
            t_flow.append(_best(partial(simulate, flow, x0, steps=steps, rng=seed), 2))
        a, b = float(np.median(t_noisy)), float(np.median(t_flow))
        rows.append(
            {
                "n": n,
                "d": d,
                "chains": chains,
                "steps": steps,
                "noisy_seconds": a / (chains * steps),
                "flow_seconds": b / (chains * steps),
                "ratio": a / b,
                "target": NOISY_TARGET,
            }
        )
    return {"rows": rows, "threads": numba.get_num_threads(), "repeat": repeat}
