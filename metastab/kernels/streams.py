"""Random numbers: splitmix64 (seeding) and xoshiro256** (streams), Blackman & Vigna (2018).

Each chain owns a stream whose state (uint64[4]) lives in a caller-owned array and depends only on
(key, chain index) (:func:`seed_streams`), so a chain's path does not depend on the thread count or
on the chunking of chains. :mod:`metastab.kernels.reference.euclidean` repeats these with Python
integers.
"""

import numpy as np

from .cache import njit_keyed
from .params import JIT_NO_NRT

# cached only while the kernel files it uses are unchanged (see cache)
_jit = njit_keyed()

_U = np.uint64
_GOLDEN = _U(0x9E3779B97F4A7C15)
_TWO_M53 = 1.0 / 9007199254740992.0


@_jit(**JIT_NO_NRT)
def _rotl(x, k):
    return (x << _U(k)) | (x >> _U(64 - k))


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
def next_u64(s):
    """One xoshiro256** output; advances the state ``s`` (uint64[4]) in place."""
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    result = _rotl(s1 * _U(5), 7) * _U(9)
    t = s1 << _U(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3
    return result


@_jit(**JIT_NO_NRT)
def next_uniform(s):
    """A uniform on [0, 1) with 53 random bits: (x >> 11) * 2**-53."""
    return float(next_u64(s) >> _U(11)) * _TWO_M53
