"""The normalisation schemes of :class:`~metastab.SphereFlow` beside post-LN on the
phase-diagram workload (``metastab bench --workload schemes``): each scheme's step costs what
post-LN's does, up to its speed factor's few operations per token (:data:`SCHEMES_TARGET`).

Measured by ``metastab bench --workload schemes --threads 1`` (docs: performance, five runs on
a quiet 2-core AVX-512 machine): within 1.1x at d = 2 and 32 for every scheme (peri-LN at 1.11x
in one run); at d = 128 peri-LN at 1.13x to 1.18x, nGPT at 1.10x to 1.14x, pre-LN at 1.07x to
1.13x: the target missed there."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from ..models.sphere import SphereFlow
from .beside import beside_post_ln
from .phase_diagram import PHASE_BETA, PHASE_DT, PHASE_N

__all__ = ["SCHEMES_SIZES", "SCHEMES_TARGET", "schemes_bench"]

# the schemes that share post-LN's one attention evaluation per step (RK4 takes four), the
# sizes (n, d) and the largest ratio of a scheme's time to post-LN's aimed at
SCHEMES = ("pre-ln", "mix-ln", "peri-ln", "ngpt", "ln-scaling")
SCHEMES_SIZES = ((PHASE_N, 2), (PHASE_N, 32), (PHASE_N, 128))
SCHEMES_TARGET = 1.1
# Mix-LN switches from post-LN to pre-LN at t = tau: mid-run, so that both parts are timed
MIX_TAU = 1.0


def _scheme(name: str) -> SphereFlow:
    tau = MIX_TAU if name == "mix-ln" else None
    return SphereFlow(PHASE_BETA, PHASE_DT, scheme=name, tau=tau)


def schemes_bench(
    sizes: Sequence[tuple[int, int]] = SCHEMES_SIZES,
    *,
    chains: int = 512,
    steps: int = 30,
    repeat: int = 3,
    seed: int = 0,
) -> dict:
    """Seconds per chain-step of ``simulate(SphereFlow(4, 0.1, scheme=s), ...)`` for each
    scheme s of :data:`SCHEMES` beside post-LN's, on the phase-diagram workload (n = 32 i.i.d.
    uniform tokens, β = 4, dt = 0.1, B = V = I; Mix-LN with τ = 1), alternating in the same process
    (:func:`.beside.beside_post_ln`).

    Returns
    -------
    dict
        rows (name, n, d, chains, steps, seconds, flow_seconds, ratio, target), threads,
        repeat.
    """
    return beside_post_ln(
        {s: partial(_scheme, s) for s in SCHEMES},
        lambda: SphereFlow(PHASE_BETA, PHASE_DT),
        sizes,
        chains=chains,
        steps=steps,
        repeat=repeat,
        seed=seed,
        target=SCHEMES_TARGET,
    )
