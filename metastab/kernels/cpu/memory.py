"""Memory of the CPU kernels' runs, in bytes: what the engine checks before it allocates (the
sizes of the scratch factories of euclidean_steps.py, sphere_steps.py and accelerated.py)."""

from .euclidean_steps import _GRAM_MAX_N, _GRAM_MIN_D
from .scores import ROWS
from .sphere_steps import _GRAM_MAX_N as _SPHERE_GRAM_MAX_N

__all__ = ["accelerated_bytes", "run_bytes"]


def run_bytes(C, n, d, flow, threads):
    """Memory of a run of C chains of n tokens in R^d on ``threads`` threads (``flow``: the
    sphere flow; else SA_P's blocks, which the other models and the sphere chain run too).

    The state, the per-chain streams and counters, the finiteness check's mask, and the
    kernels' scratch buffers: one set per thread that runs chains, with the blocked Gram matrix
    of n^2 scores where the kernels keep one (``steps.chain_work``, also the sphere chain's, and
    ``sphere.sphere_flow_work`` with the flow's four Runge–Kutta stages), and one block of tokens'
    buffers per thread (with fewer chains than threads, the threads share each chain's blocks)."""
    if flow:
        gram = n % ROWS == 0 and ROWS < n <= _SPHERE_GRAM_MAX_N
    else:
        gram = n % ROWS == 0 and d >= _GRAM_MIN_D and n <= _GRAM_MAX_N
    per_token = 2 * min(n, ROWS) + (8 if flow else 4) * d + 8 + (n if gram else 0)
    scratch = 8 * n * per_token + 8 * (d + 3) ** 2
    block = 8 * ROWS * (2 * n + 2 * d + 3)
    state = 8 * C * n * d
    return state + 48 * C + C * n * d + min(C, threads) * scratch + threads * block


def accelerated_bytes(C, n, d, threads):
    """Memory of the event-driven kernels on C configurations: the scratch buffers of
    ``accelerated.jump_work`` (an n×n table among them) and a copy of a configuration, per
    thread."""
    return min(C, threads) * 8 * (n * n + 3 * n * d + 8 * n + d)
