"""The cost of compiling: the first use of each model, and the demo, with an empty numba cache.

Each case runs twice in a fresh Python process that shares one new, empty numba cache folder:
cold (every kernel it calls is compiled, then written to the cache) and warm (loaded from it).
The figures are CPU seconds of the child process (user + system, ``RUSAGE_CHILDREN``), import
included, so that they do not depend on the load of the machine as much as wall time does.
Targets: a cold first use of any model under 30 s, and a cold ``metastab demo`` at most 4× a
warm one (``metastab bench --cold``).

:func:`compile_times` says where a cold case's compiling goes (``metastab bench --compile-times
CASE``): the CPU seconds of each function's own compilation, from numba's compile events
(:class:`CompileTimes`), in a fresh process with an empty cache.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

from numba.core import event

__all__ = [
    "CASES",
    "COLD_TARGET_S",
    "DEMO_RATIO_TARGET",
    "CompileTimes",
    "cold_bench",
    "compile_times",
]

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


def _check(cases: Sequence[str]) -> None:
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise ValueError(f"cases: unknown case {unknown[0]!r}; known: {', '.join(CASES)}")


def _code(name: str) -> str:
    """The Python code of the case ``name`` (the demo: the command's own entry point)."""
    code = CASES[name]
    if code is None:
        return "from metastab.cli.command import main\nmain(['demo', '--no-progress'])"
    return _SETUP + code


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
    _check(names)
    rows = []
    for name in names:
        if CASES[name] is None:
            argv = [sys.executable, "-m", "metastab", "demo", "--no-progress"]
        else:
            argv = [sys.executable, "-c", _code(name)]
        with tempfile.TemporaryDirectory(prefix="metastab-cold-") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            cold = _child_cpu(argv, env)
            warm = _child_cpu(argv, env)
        row = {"case": name, "cold_s": cold, "warm_s": warm, "ratio": cold / warm}
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


class CompileTimes(event.Listener):
    """Records numba's compile events ("numba:compile"): for each compilation, the function
    (module and qualified name), the process CPU seconds it took, and its own share, without the
    compilations nested in it (a kernel compiles its callees first, inside its own event).
    :meth:`install` registers it for every compilation that follows."""

    def __init__(self) -> None:
        self._open: list[list[float]] = []  # [start, seconds of the nested compilations]
        self.records: list[dict] = []

    def install(self) -> CompileTimes:
        event.register("numba:compile", self)
        return self

    def on_start(self, ev: event.Event) -> None:
        self._open.append([time.process_time(), 0.0])

    def on_end(self, ev: event.Event) -> None:
        start, nested = self._open.pop()
        seconds = time.process_time() - start
        if self._open:
            self._open[-1][1] += seconds
        func = ev.data["dispatcher"].py_func
        self.records.append(
            {
                "function": f"{func.__module__}.{func.__qualname__}",
                "own_s": seconds - nested,
                "total_s": seconds,
            }
        )

    def by_function(self) -> list[dict]:
        """One row per function: function, compiles (how many signatures), own_s (summed), in
        decreasing own_s."""
        rows: dict[str, dict] = {}
        for rec in self.records:
            empty = {"function": rec["function"], "compiles": 0, "own_s": 0.0}
            row = rows.setdefault(rec["function"], empty)
            row["compiles"] += 1
            row["own_s"] += rec["own_s"]
        return sorted(rows.values(), key=lambda r: -r["own_s"])


_PROFILE = """
import json
from metastab.bench.cold import CompileTimes
_times = CompileTimes().install()
try:
    exec(compile({code!r}, "<case>", "exec"))
except SystemExit as stop:
    if stop.code not in (None, 0):
        raise
with open({out!r}, "w") as f:
    json.dump(_times.by_function(), f)
"""


def compile_times(case: str = "demo") -> list[dict]:
    """Where the compiling of the case ``case`` of :data:`CASES` goes: the case runs in a fresh
    Python process with an empty numba cache, and :class:`CompileTimes` records each
    compilation there. Returns :meth:`CompileTimes.by_function`'s rows (function, compiles,
    own_s: CPU seconds of its own compilations, those of its callees apart), so that the own_s
    add up to the whole time spent compiling."""
    _check([case])
    with tempfile.TemporaryDirectory(prefix="metastab-cold-") as tmp:
        out = os.path.join(tmp, "compiles.json")
        code = _PROFILE.format(code=_code(case), out=out)
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "cache"))
        _child_cpu([sys.executable, "-c", code], env)
        with open(out) as f:
            return json.load(f)
