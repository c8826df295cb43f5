"""Probes for the optional extras (``cuda``, ``dask``, ``bench``): whether a module is installed,
answered without raising.

``importlib.util.find_spec("a.b")`` imports ``a`` first and raises ``ModuleNotFoundError`` where
``a`` is missing (``nvidia.cuda_nvcc`` on a machine without any NVIDIA wheel), and ``ValueError``
where ``a`` was put in ``sys.modules`` without a spec. A probe is a question, not an import: both
mean "absent" here.
"""

from __future__ import annotations

import importlib.util
from importlib.machinery import ModuleSpec

__all__ = ["installed", "module_spec"]


def module_spec(name: str) -> ModuleSpec | None:
    """The spec of module ``name`` (a dotted name imports its parents, as any import would), or
    None where it or a parent package is not installed."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def installed(name: str) -> bool:
    """Whether module ``name`` can be found (see :func:`module_spec`); never raises."""
    return module_spec(name) is not None
