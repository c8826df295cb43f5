"""A sphere model's step beside the sphere flow's post-LN step, timed in the same run: the
noisy model (``metastab bench --workload noisy``) and the normalisation schemes
(``--workload schemes``) against the layer they extend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numba
import numpy as np

from ..engine import simulate
from ..setups.sphere import sphere_uniform
from .chains import _best

__all__ = ["beside_post_ln"]


def beside_post_ln(
    models: dict[str, Callable[[], Any]],
    flow: Callable[[], Any],
    sizes: Sequence[tuple[int, int]],
    *,
    chains: int,
    steps: int,
    repeat: int = 3,
    seed: int = 0,
    target: float,
) -> dict:
    """Seconds per chain-step of ``simulate(model, ...)`` for each of ``models`` (name → a
    function that builds it) and of ``flow()`` (the post-LN reference), on the same i.i.d.
    uniform start per (n, d) of ``sizes``, interleaved in the same process so that both see the
    same machine load: per model the median over ``repeat`` turns of the better of two
    back-to-back runs, and the ratio to post-LN's (the ``target`` is the largest ratio aimed
    at).

    Returns
    -------
    dict
        ``rows`` (one per model and size: name, n, d, chains, steps, seconds, flow_seconds,
        ratio, target), ``threads`` and ``repeat``.
    """
    rows: list[dict[str, Any]] = []
    for n, d in sizes:
        x0 = sphere_uniform(n, d, chains=chains, rng=seed)
        reference = flow()
        built = {name: make() for name, make in models.items()}
        for model in (reference, *built.values()):  # compiled before the clock starts
            simulate(model, x0[:2], steps=2, rng=seed, progress=False)
        times: dict[str, list[float]] = {name: [] for name in (*built, "post-ln")}
        for _ in range(repeat):
            for name, model in (*built.items(), ("post-ln", reference)):
                run = partial(simulate, model, x0, steps=steps, rng=seed, progress=False)
                times[name].append(_best(run, 2))
        base = float(np.median(times["post-ln"]))
        for name in built:
            t = float(np.median(times[name]))
            rows.append(
                {
                    "name": name,
                    "n": n,
                    "d": d,
                    "chains": chains,
                    "steps": steps,
                    "seconds": t / (chains * steps),
                    "flow_seconds": base / (chains * steps),
                    "ratio": t / base,
                    "target": target,
                }
            )
    return {"rows": rows, "threads": numba.get_num_threads(), "repeat": repeat}
