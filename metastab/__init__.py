"""metastab: self-attention dynamics as an interacting particle system, and its metastability.

Simulates many independent chains of the finite-β self-attention Markov chain (SA_P), the
deterministic softmax layer (SA_β), the hardmax / Frank-Wolfe limit (SA_∞), localmax dynamics and
the attention dynamics on the unit sphere (SphereFlow, SphereChain, NoisySphere) with
JIT-compiled kernels, and measures first-passage times with censoring.

Names are imported on first use (PEP 562), so ``import metastab`` and the ``metastab`` command's
``--help`` do not load numba, scipy, pandas or matplotlib: ``metastab.SoftmaxChain`` imports
:mod:`metastab.models`, ``metastab.stats`` the statistics module, and so on.
``metastab.polytopes`` and ``metastab.initial`` are the polytopes and the initial configurations
(:mod:`metastab.setups.polytopes`, :mod:`metastab.setups.initial`).
"""

import importlib as _importlib
import warnings as _warnings

__version__ = "0.1.0"

# public name -> the submodule that defines it
_NAMES = {
    "AbsorptionWarning": "exceptions",
    "DamagedFileError": "exceptions",
    "DiagnosticWarning": "exceptions",
    "Interrupted": "exceptions",
    "ResolutionWarning": "exceptions",
    "StepSizeWarning": "exceptions",
    "in_cells": "setups.initial",
    "near_vertices": "setups.initial",
    "repeated_points": "setups.initial",
    "shrunk": "setups.initial",
    "uniform_in": "setups.initial",
    "Clusters": "events",
    "Collapse": "events",
    "LeaveBall": "events",
    "LeaveHull": "events",
    "ReachVertices": "events",
    "LeaveUniform": "events",
    "ReachUniform": "events",
    "order_parameter": "order",
    "order_parameters": "order",
    "Hardmax": "models",
    "Localmax": "models",
    "SoftmaxChain": "models",
    "SoftmaxFlow": "models",
    "step_matrix": "models",
    "Polytope": "setups.polytopes",
    "cross_polytope": "setups.polytopes",
    "gaussian": "setups.polytopes",
    "random_polygon": "setups.polytopes",
    "regular_polygon": "setups.polytopes",
    "simplex": "setups.polytopes",
    "FirstPassage": "results.passage",
    "Run": "results.passage",
    "load": "results.protocol",
    "Seed": "rng",
    "as_seed": "rng",
    "first_passage": "engine",
    "NoisySphere": "models.sphere",
    "SphereChain": "models.sphere",
    "SphereFlow": "models.sphere",
    "caps": "setups.sphere",
    "orthogonal": "setups.sphere",
    "sphere_uniform": "setups.sphere",
    "to_sphere": "setups.sphere",
    "simulate": "engine",
    "track": "engine",
    "Track": "results.track",
}
# submodules reachable as attributes (metastab.stats, metastab.plotting, ...)
_SUBMODULES = (
    "bench",
    "cli",
    "engine",
    "events",
    "exceptions",
    "maxmargin",
    "models",
    "plotting",
    "registry",
    "results",
    "rng",
    "setups",
    "stats",
    "studies",
    "sweep",
    "theory",
)
# public namespaces that are modules of a subpackage: attribute -> module
_NAMESPACES = {
    "initial": "setups.initial",
    "polytopes": "setups.polytopes",
}
# Aliases for one release: the attribute names of the modules that moved in the layout by role
# (old attribute -> its module now), and renamed names ("module:name"). They are not listed by
# dir(metastab) and each use warns (DeprecationWarning); use the new names. metastab.bench,
# models, results, studies and theory kept their names: those packages name the public contents
# of the former modules.
_ALIASES = {
    # the initial configuration, renamed apart from the event metastab.Clusters
    "clusters": "setups.initial:repeated_points",
    "bench_sphere": "bench.phase_diagram",
    "configs": "setups.initial",
    "demo": "bench.demo",
    "observables": "results.track",
    "polytope": "setups.polytopes",
    # the checks tables and the verdict rule; report's markdown helpers are in studies.render,
    # sibling and the study helpers in studies.runner, polytope_from_spec is
    # registry.polytope_from_dict
    "report": "studies.verdict",
    "sphere": "models.sphere",
    "sphere_configs": "setups.sphere",
}

__all__ = sorted(_NAMES, key=str.lower) + ["__version__"]


def __getattr__(name: str) -> object:
    if name in _NAMES:
        value = getattr(_importlib.import_module(f".{_NAMES[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f".{name}", __name__)
    elif name in _NAMESPACES or name in _ALIASES:
        module, _, attribute = (_NAMESPACES.get(name) or _ALIASES[name]).partition(":")
        value = _importlib.import_module(f".{module}", __name__)
        if attribute:
            value = getattr(value, attribute)
        if name in _ALIASES:  # not cached, so that every use warns
            _warnings.warn(
                f"metastab.{name} is deprecated: use metastab.{module}"
                + (f".{attribute}" if attribute else ""),
                DeprecationWarning,
                stacklevel=2,
            )
            return value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    # the public names only: not the helpers of this module, nor the private submodules and
    # aliases that imports leave in its namespace
    return sorted(set(__all__) | set(_SUBMODULES) | set(_NAMESPACES))
