"""What the CUDA test files share: numba.cuda reads NUMBA_ENABLE_CUDASIM at its first import,
so each file's device tests run in a process of their own, started by its one ``outer`` test
(:func:`under_simulator`); inside it (METASTAB_CUDA_TESTS=1) the ``device`` tests run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

MARKS = [
    pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning"),
    pytest.mark.filterwarnings("ignore::numba.cuda.core.errors.NumbaPerformanceWarning"),
]
INNER = os.environ.get("METASTAB_CUDA_TESTS") == "1"
SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
libm = pytest.mark.skipif(
    INNER and not SIMULATOR,
    reason="libdevice's exp is not the CPU's libm exp: bit identity holds under the simulator",
)


def device(outer: str):
    """The mark of a device test, run by the ``outer`` test of its file."""
    return pytest.mark.skipif(
        not INNER,
        reason=f"runs in its own process ({outer}): numba.cuda must see NUMBA_ENABLE_CUDASIM "
        "before its first import",
    )


def under_simulator(path: str) -> None:
    """Run the device tests of the test file ``path`` under numba's CUDA simulator in a fresh
    process, and assert that they all passed (none skipped)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", METASTAB_CUDA_TESTS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--dist", "load",
         "-m", "not outer", path],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent.parent,
        timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]
