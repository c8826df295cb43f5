"""The cost of compiling: the first use of each model, and the demo, with an empty numba cache.

Each case runs twice in a fresh Python process that shares one new, empty numba cache folder:
cold (every kernel it calls is compiled, then written to the cache) and warm (loaded from it).
The figures are CPU seconds of the child process (user + system, ``RUSAGE_CHILDREN``), import
included, so that they do not depend on the load of the machine as much as wall time does.
Targets: a cold first use of any model under 30 s, and a cold ``metastab demo`` at most 4× a
warm one (``metastab bench --cold``).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence

__all__ = ["CASES", "COLD_TARGET_S", "DEMO_RATIO_TARGET", "cold_bench"]

COLD_TARGET_S = 30.0
DEMO_RATIO_TARGET = 4.0

_SETUP = """
import numpy as np, metastab as ms
plane = np.repeat(ms.regular_polygon(5).vertices, 4, axis=0) * 0.9
sphere = ms.sphere_uniform(32, 3, rng=1)
"""

_SIM = "ms.simulate({}, {}, steps=5, chains=4, rng=1)"
_CHAIN = "ms.SoftmaxChain(beta=4.0, gamma=0.1)"

# name -> the first use, in Python (after _SETUP), or None for the command `metastab demo`
CASES: dict[str, str | None] = {
    "softmax-chain": _SIM.format(_CHAIN, "plane"),
    "softmax-flow": _SIM.format("ms.SoftmaxFlow(beta=4.0, gamma=0.1)", "plane"),
    "hardmax": _SIM.format("ms.Hardmax(gamma=0.1)", "plane"),
    "localmax": _SIM.format("ms.Localmax(gamma=0.1, r=0.1)", "plane"),
    "sphere-flow": _SIM.format("ms.SphereFlow(4.0, 0.1)", "sphere"),
    "sphere-chain": _SIM.format("ms.SphereChain(4.0, 0.1)", "sphere"),
    "softmax-chain passage (LeaveHull)": (
        f"ms.first_passage({_CHAIN}, plane, ms.LeaveHull(np.repeat(np.arange(5), 4), "
        "radius=0.2), max_steps=5, chains=4, rng=1)"
    ),
    "softmax-chain track (one chain, n = 64)": (
        f"ms.track({_CHAIN}, np.random.default_rng(1).normal(size=(64, 2)), steps=5, rng=1)"
    ),
    "sphere-flow track": "ms.track(ms.SphereFlow(4.0, 0.1), sphere, steps=5, rng=1)",
    "demo": None,
}


def _child_cpu(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of the child process ``argv``; raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{' '.join(argv[:3])}... exited {done.returncode}: {tail[0]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cold_bench(
    cases: Sequence[str] | None = None, on_row: Callable[[dict], None] | None = None
) -> list[dict]:
    """Cold and warm CPU seconds of each case of :data:`CASES` (default: all), one dict per case
    with keys case, cold_s, warm_s, ratio (cold / warm), passed to ``on_row`` as it is measured.

    Examples
    --------
    >>> sorted(CASES)[:2]
    ['demo', 'hardmax']
    """
    names = list(CASES) if cases is None else list(cases)
    unknown = [c for c in names if c not in CASES]
    if unknown:
        raise ValueError(f"cases: unknown case {unknown[0]!r}; known: {', '.join(CASES)}")
    rows = []
    for name in names:
        code = CASES[name]
        if code is None:
            argv = [sys.executable, "-m", "metastab", "demo", "--no-progress"]
        else:
            argv = [sys.executable, "-c", _SETUP + code]
        with tempfile.TemporaryDirectory(prefix="metastab-cold-") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            cold = _child_cpu(argv, env)
            warm = _child_cpu(argv, env)
        row = {"case": name, "cold_s": cold, "warm_s": warm, "ratio": cold / warm}
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows
