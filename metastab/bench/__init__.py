"""Benchmarks, the GPU check and the demo: what measures the package rather than a model.

- :mod:`.chains`: the throughput of SA_P on workload W1 beside a NumPy chain (``metastab
  bench``), seconds per escape in exact and accelerated mode, the sizes bench; its public names
  are also this package's (``metastab.bench.run_bench``, as before the layout by role), loaded
  on first use (PEP 562) so that importing :mod:`.demo` for its constants loads no numba.
- :mod:`.phase_diagram`: the phase-diagram workload, the sphere flow beside batched NumPy.
- :mod:`.noisy`: the noisy sphere model's step beside the sphere flow's post-LN step.
- :mod:`.jax_baselines`: the JAX baselines of both workloads (the optional ``bench`` extra).
- :mod:`.cuda_check`: the GPU bench beside torch and the CPU, and the laws against the CPU.
- :mod:`.demo`: the demo experiment (``metastab demo``).
"""

import importlib as _importlib


def __getattr__(name: str) -> object:
    chains = _importlib.import_module(".chains", __name__)
    if name not in chains.__all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(chains, name)
    globals()[name] = value
    return value
