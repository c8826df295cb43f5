"""Benchmarks, the GPU check and the demo: what measures the package rather than a model.

- :mod:`.chains`: the throughput of SA_P on workload W1 beside a NumPy chain (``metastab
  bench``), seconds per escape in exact and accelerated mode, the sizes bench; its public names
  are also this package's (``metastab.bench.run_bench``, as before the layout by role), loaded
  on first use (PEP 562) so that importing :mod:`.demo` for its constants loads no numba.
- :mod:`.sphere`: the phase-diagram workload, the sphere flow beside batched NumPy.
- :mod:`.cuda_check`: the GPU bench beside torch and the CPU, and the laws against the CPU.
- :mod:`.demo`: the demo experiment (``metastab demo``).
"""

import importlib as _importlib

__all__ = [
    "numpy_chain",
    "workload_w1",
    "run_bench",
    "escape_bench",
    "sizes_bench",
    "fma_peak",
    "exp_seconds",
    "TARGET_RATIO",
    "ESCAPE_BETAS",
    "ESCAPE_CHAINS",
    "SIZES",
    "SIZE_TARGETS",
    "PEAK_TARGET",
]


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(".chains", __name__), name)
    globals()[name] = value
    return value
