"""Random numbers: splitmix64 (seeding) and xoshiro256** (streams), Blackman & Vigna (2018).

Each chain owns a stream whose state (uint64[4]) lives in a caller-owned array and depends only on
(key, chain index) (:func:`seed_streams`), so a chain's path does not depend on the thread count or
on the chunking of chains. ``next_u64`` and ``next_uniform`` are written once for the CPU and the
device (:mod:`.leaves`); :mod:`metastab.kernels.reference.euclidean` repeats them with Python
integers.
"""

import numpy as np
from numba import njit

from . import leaves
from .arith import mul
from .cache import njit_keyed
from .params import JIT_NO_NRT

# cached only while the kernel files it uses are unchanged (see cache)
_jit = njit_keyed()

_U = np.uint64
_GOLDEN = _U(0x9E3779B97F4A7C15)


@_jit(**JIT_NO_NRT)
def _mix64(z):
    """The splitmix64 output function (a bijection of uint64)."""
    z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
    return z ^ (z >> _U(31))


@_jit(**JIT_NO_NRT)
def seed_streams(key0, key1, first, out):
    """Fill ``out[k]`` with the xoshiro256** state of chain ``first + k``.

    Chain c starts a splitmix64 sequence at ``key0 ^ mix64(key1 + c)`` and takes four outputs,
    the seeding recommended for xoshiro; the state depends on (key, c) only (prefix property).
    """
    for k in range(out.shape[0]):
        z = _U(key0) ^ _mix64(_U(key1) + _U(first + k))
        for w in range(4):
            z = z + _GOLDEN
            out[k, w] = _mix64(z)


@_jit(**JIT_NO_NRT)
def _add64(a, b):
    """a + b mod 2^64 (numba's uint64 add wraps)."""
    return a + b


# written once for both targets (leaves); compiled into the kernels that call them, whose
# caches are keyed on leaves.py
next_u64 = njit(_nrt=False)(leaves.xoshiro_next(_add64))
next_uniform = njit(_nrt=False)(leaves.uniform_next(next_u64, mul))
