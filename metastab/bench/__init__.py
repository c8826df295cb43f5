"""Benchmarks, the GPU check and the demo: what measures the package rather than a model.

- :mod:`.chains`: the throughput of SA_P on workload W1 beside a NumPy chain (``metastab
  bench``), seconds per escape in exact and accelerated mode, the sizes bench; its public names
  are also this package's (``metastab.bench.run_bench``, as before the layout by role).
- :mod:`.sphere`: the phase-diagram workload, the sphere flow beside batched NumPy.
- :mod:`.cuda_check`: the GPU bench beside torch and the CPU, and the laws against the CPU.
- :mod:`.demo`: the demo experiment (``metastab demo``).
"""

from .chains import (
    ESCAPE_BETAS,
    ESCAPE_CHAINS,
    PEAK_TARGET,
    SIZE_TARGETS,
    SIZES,
    TARGET_RATIO,
    escape_bench,
    exp_seconds,
    fma_peak,
    numpy_chain,
    run_bench,
    sizes_bench,
    workload_w1,
)

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
