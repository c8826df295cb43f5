"""Argument checks shared by the public API: each names the parameter and the value it refuses.

Nothing is coerced silently: booleans are not numbers, strings are not numbers, and a matrix is
returned as a fresh, writeable, C-contiguous float64 copy (what the kernels take without a
recompile, and what no caller can mutate behind a frozen model's back).
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def _is_real(value) -> bool:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def real(name: str, value, *, low=None, high=None, low_open=False, high_open=False) -> float:
    """``value`` as a finite float in the interval given by ``low`` / ``high`` (closed by
    default)."""
    if not _is_real(value):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    below = low is not None and (v <= low if low_open else v < low)
    above = high is not None and (v >= high if high_open else v > high)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if below or above:
        if high is None:
            raise ValueError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {value!r}")
        if low is None:
            raise ValueError(f"{name} must be {'<' if high_open else '<='} {high:g}, got {value!r}")
        raise ValueError(
            f"{name} must be in {'(' if low_open else '['}{low:g}, {high:g}"
            f"{')' if high_open else ']'}, got {value!r}"
        )
    return v


def integer(name: str, value, minimum: int | None = None) -> int:
    """``value`` as an int (Python or NumPy integer, not bool), at least ``minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def matrix(name: str, value, d: int | None = None) -> np.ndarray:
    """A finite square matrix (d×d when ``d`` is given) as a writeable contiguous float64 copy."""
    try:
        a = np.array(value, dtype=np.float64, order="C")
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric square matrix, got {value!r}") from None
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"{name} must be a square d×d matrix, got shape {a.shape}")
    if d is not None and a.shape != (d, d):
        raise ValueError(f"{name} must be {d}×{d} for tokens in R^{d}, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return a


# Largest share of the available memory that one request may claim: the rest is left to the
# interpreter, the libraries and whatever else runs on the machine.
MEMORY_SHARE = 0.5


def available_memory() -> int:
    """Bytes the system can hand out without swapping: ``MemAvailable`` of /proc/meminfo (free
    pages plus the page cache and reclaimable slabs), or the free pages where that is missing."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import os

    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(what: str, need: int | float) -> None:
    """Refuse (MemoryError naming ``what`` and both sizes) a request of ``need`` bytes larger than
    :data:`MEMORY_SHARE` of :func:`available_memory`, before anything is allocated."""
    avail = available_memory()
    if need > MEMORY_SHARE * avail:
        raise MemoryError(
            f"{what} needs {need / 2**30:.2f} GiB, more than "
            f"{MEMORY_SHARE:.0%} of the {avail / 2**30:.2f} GiB available"
        )
