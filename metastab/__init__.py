"""metastab: self-attention dynamics as an interacting particle system, and its metastability.

Simulates many independent chains of the finite-β self-attention Markov chain (SA_P), the
deterministic softmax layer (SA_β), the hardmax / Frank-Wolfe limit (SA_∞), localmax dynamics and
the attention dynamics on the unit sphere (SphereFlow, SphereChain) with JIT-compiled kernels,
and measures first-passage times with censoring.

Names are imported on first use (PEP 562), so ``import metastab`` and the ``metastab`` command's
``--help`` do not load numba, scipy, pandas or matplotlib: ``metastab.SoftmaxChain`` imports
:mod:`metastab.models`, ``metastab.stats`` the statistics module, and so on.
"""

import importlib

__version__ = "0.1.0"

# public name -> the submodule that defines it
_NAMES = {
    "DiagnosticWarning": "exceptions",
    "ResolutionWarning": "exceptions",
    "clusters": "configs",
    "in_cells": "configs",
    "near_vertices": "configs",
    "shrunk": "configs",
    "uniform_in": "configs",
    "Clusters": "events",
    "Collapse": "events",
    "LeaveBall": "events",
    "LeaveHull": "events",
    "ReachVertices": "events",
    "Hardmax": "models",
    "Localmax": "models",
    "SoftmaxChain": "models",
    "SoftmaxFlow": "models",
    "step_matrix": "models",
    "Polytope": "polytope",
    "cross_polytope": "polytope",
    "gaussian": "polytope",
    "random_polygon": "polytope",
    "regular_polygon": "polytope",
    "simplex": "polytope",
    "FirstPassage": "results",
    "Run": "results",
    "Seed": "rng",
    "as_seed": "rng",
    "first_passage": "engine",
    "SphereChain": "sphere",
    "SphereFlow": "sphere",
    "caps": "sphere_configs",
    "orthogonal": "sphere_configs",
    "sphere_uniform": "sphere_configs",
    "simulate": "engine",
    "track": "engine",
    "Track": "observables",
}
# submodules reachable as attributes (metastab.stats, metastab.plotting, ...)
_SUBMODULES = (
    "bench",
    "bench_sphere",
    "cli",
    "configs",
    "demo",
    "engine",
    "events",
    "exceptions",
    "maxmargin",
    "models",
    "observables",
    "plotting",
    "polytope",
    "registry",
    "results",
    "rng",
    "sphere",
    "sphere_configs",
    "splitting",
    "stats",
    "studies",
    "sweep",
    "theory",
)

__all__ = sorted(_NAMES, key=str.lower) + ["__version__"]


def __getattr__(name: str) -> object:
    if name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES) | set(_SUBMODULES))
