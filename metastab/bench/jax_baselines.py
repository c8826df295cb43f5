"""The JAX baselines of the benchmarks: what a researcher writes today, in a few lines of JAX.

Both are jit-compiled (``jax.jit`` of a ``lax.scan`` over the steps), batched over chains with
``einsum``, in float64 (``jax_enable_x64`` is switched on for the process when a baseline is first
built). They need the optional ``bench`` extra (``pip install 'metastab[bench]'``);
:func:`available` says whether JAX is installed, and the benchmarks leave the JAX columns empty
where it is not.

- :func:`jax_chain`: SA_P for B = I (workload W1): scores by einsum, max-shifted weights, their
  cumulative sums, one uniform per token and the inverse-CDF pick, then the synchronous move.
- :func:`jax_post_ln`: the post-LN sphere flow with B = V = I (the phase-diagram workload): scores,
  ``jax.nn.softmax``, the weighted sum, the residual and LayerNorm.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from .._optional import installed

__all__ = ["available", "jax_chain", "jax_post_ln", "wanted"]


def available() -> bool:
    """Whether JAX is installed (the ``bench`` extra)."""
    return installed("jax")


def wanted(jax: bool | None) -> bool:
    """Whether a benchmark runs its JAX baseline: ``jax`` None runs it where JAX is installed,
    False never (JAX then never loads: its threads would make later forks of the process
    unsafe), True always (ModuleNotFoundError, with the remedy, where JAX is missing)."""
    if jax and not available():
        raise ModuleNotFoundError("jax: not installed; pip install 'metastab[bench]' adds it")
    return available() if jax is None else bool(jax)


def _jax() -> Any:
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


@cache
def _post_ln_runner() -> Any:
    jax = _jax()
    jnp = jax.numpy

    def run(X, beta, dt, steps):
        def layer(X, _):
            S = jnp.einsum("cik,cjk->cij", X, X)
            W = jax.nn.softmax(beta * S, axis=-1)
            Y = X + dt * jnp.einsum("cij,cjk->cik", W, X)
            return Y / jnp.linalg.norm(Y, axis=-1, keepdims=True), None

        return jax.lax.scan(layer, X, None, length=steps)[0]

    return jax.jit(run, static_argnums=(3,))


@cache
def _chain_runner() -> Any:
    jax = _jax()
    jnp = jax.numpy

    def run(X, beta, gamma, key, steps):
        n = X.shape[1]

        def step(carry, _):
            X, key = carry
            key, sub = jax.random.split(key)
            S = jnp.einsum("cik,cjk->cij", X, X)
            cum = jnp.cumsum(jnp.exp(beta * (S - S.max(axis=-1, keepdims=True))), axis=-1)
            u = jax.random.uniform(sub, X.shape[:2], dtype=X.dtype) * cum[..., -1]
            pick = jnp.minimum((cum < u[..., None]).sum(axis=-1), n - 1)
            target = jnp.take_along_axis(X, pick[..., None], axis=1)
            return (X + gamma * (target - X), key), None

        return jax.lax.scan(step, (X, key), None, length=steps)[0][0]

    return jax.jit(run, static_argnums=(4,))


def jax_post_ln(X: np.ndarray, beta: float, dt: float, *, steps: int) -> np.ndarray:
    """``steps`` post-LN layers of (SA) with B = V = I on a batch X (C, n, d), in JAX; returns
    the final (C, n, d) batch as a NumPy array (the first call for a shape compiles)."""
    out = _post_ln_runner()(_jax().numpy.asarray(X, dtype=float), beta, dt, steps)
    return np.asarray(out.block_until_ready())


def jax_chain(
    x0: np.ndarray, beta: float, gamma: float, *, steps: int, chains: int, seed: int = 0
) -> np.ndarray:
    """SA_P for B = I on ``chains`` copies of x0 (n, d), in JAX; returns the (chains, n, d) final
    states (the same law as metastab's chain, not the same random numbers)."""
    jax = _jax()
    X = jax.numpy.broadcast_to(jax.numpy.asarray(x0, dtype=float), (chains,) + np.shape(x0))
    out = _chain_runner()(X, beta, gamma, jax.random.PRNGKey(seed), steps)
    return np.asarray(out.block_until_ready())
