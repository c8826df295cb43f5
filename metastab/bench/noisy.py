"""The noisy sphere model's step beside the sphere flow's post-LN step (``metastab bench
--workload noisy``): the cost of its Brownian noise (n d normals per step, Box–Muller on the
chain's stream) and of its projected drift, at the same n, d, β and attention
((USA), the papers' model), in the same run.

Measured by ``metastab bench --workload noisy --threads 1`` (docs: performance, three runs on a
quiet 2-core machine): 1.28x to 1.29x at n = 32, d = 2, 1.89x to 2.02x at d = 16, 2.25x to 2.36x
at d = 32 and 1.43x to 1.49x at n = 128, d = 32: the target of 1.5x missed at n = 32 from d = 16
on, where
the step's n d standard normals alone cost about what post-LN's whole step does.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models.sphere import NoisySphere, SphereFlow
from .beside import beside_post_ln

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
    """Seconds per chain-step of ``simulate(NoisySphere(β, K, dt), ...)`` beside
    ``simulate(SphereFlow(β, dt, attention="unnormalized"), ...)`` (post-LN, the layer whose
    drift it takes) on the same i.i.d. uniform start, alternating in the same process
    (:func:`.beside.beside_post_ln`), and their ratio (the target :data:`NOISY_TARGET`).

    Returns
    -------
    dict
        rows (n, d, chains, steps, noisy_seconds, flow_seconds, ratio, target), threads,
        repeat.
    """
    r = beside_post_ln(
        {"noisy": lambda: NoisySphere(beta, K, dt)},
        lambda: SphereFlow(beta, dt, attention="unnormalized"),
        sizes,
        chains=chains,
        steps=steps,
        repeat=repeat,
        seed=seed,
        target=NOISY_TARGET,
    )
    for row in r["rows"]:
        row["noisy_seconds"] = row.pop("seconds")
        del row["name"]
    return r
