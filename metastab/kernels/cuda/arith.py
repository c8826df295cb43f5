"""The device's explicit arithmetic: every product of the CUDA kernels is rounded as written.

NVVM contracts ``a * b + c`` into one fma by default, and ptxas fuses the plain ``mul.f64`` /
``add.f64`` pairs NVVM leaves, so device bits would differ from the CPU's wherever a product
meets a sum. Here a product that must stay unfused is :func:`mul` (libdevice ``dmul_rn``, PTX
``mul.rn.f64``, which neither compiler fuses) and a multiply-add that should fuse is :func:`fma`
(``fma.rn.f64``, rounded once, the CPU's ``llvm.fma.f64``). The kernels write no other floating
product, so a device computes the CPU's operations, each rounded once, as the CPU does.

Under numba's CUDA simulator libdevice functions are stubs and ``cuda.fma`` rounds twice: there
``mul`` is Python's product (IEEE, rounded once) and ``fma`` the exactly rounded
:func:`metastab.kernels.arith.fma_exact`.

:func:`add64` is a + b mod 2^64 on uint64: one native add on a device; under the simulator,
where numpy warns when uint64 arithmetic wraps, it is summed from 32-bit halves.
:func:`as_bits` and :func:`from_bits` reinterpret a double as int64 and back (the exp builds
2^k so). :func:`ix` is an array index as the kernels' hot loops pass it.
"""

import struct

import numpy as np
from numba import config, cuda, uint32

from .. import arith

__all__ = ["add64", "as_bits", "fma", "from_bits", "ix", "mul"]

_U = np.uint64
_LOW32 = _U(0xFFFFFFFF)

if config.ENABLE_CUDASIM:
    fma = arith.fma_exact

    def mul(a, b):
        """a b, rounded once (Python's float product)."""
        return a * b

    def add64(a, b):
        """a + b mod 2^64 from 32-bit halves (no intermediate wraps around)."""
        lo = (a & _LOW32) + (b & _LOW32)
        hi = (a >> _U(32)) + (b >> _U(32)) + (lo >> _U(32))
        return ((hi & _LOW32) << _U(32)) | (lo & _LOW32)

    def as_bits(x):
        """The IEEE 754 bits of the double x as an int64."""
        return np.int64(struct.unpack("<q", struct.pack("<d", x))[0])

    def from_bits(i):
        """The double whose IEEE 754 bits are the int64 i."""
        return struct.unpack("<d", struct.pack("<q", int(i)))[0]

    def ix(q):
        """The index q as it is."""
        return q

else:
    from numba.cuda import libdevice

    @cuda.jit(device=True, inline=True)
    def fma(a, b, c):
        """a b + c rounded once: fma.rn.f64 (cuda.fma is a typing stub that device code must call
        by its own name, not through a global alias)."""
        return cuda.fma(a, b, c)

    @cuda.jit(device=True, inline=True)
    def mul(a, b):
        """a b rounded to nearest, never fused with a later sum: mul.rn.f64."""
        return libdevice.dmul_rn(a, b)

    @cuda.jit(device=True, inline=True)
    def add64(a, b):
        """a + b mod 2^64: the device's uint64 add wraps."""
        return a + b

    @cuda.jit(device=True, inline=True)
    def as_bits(x):
        """The IEEE 754 bits of the double x as an int64 (a move, no arithmetic)."""
        return libdevice.double_as_longlong(x)

    @cuda.jit(device=True, inline=True)
    def from_bits(i):
        """The double whose IEEE 754 bits are the int64 i (a move, no arithmetic)."""
        return libdevice.longlong_as_double(i)

    @cuda.jit(device=True, inline=True)
    def ix(q):
        """The index q (0 <= q < 2^32, see drivers.MAX_INDEX) as uint32: numba wraps a signed
        index around (q + size where q < 0: two shifts, two masks and a 64-bit add per
        access) and uses an unsigned one as it is. uint32 rather than uint64: ptxas kept
        fewer registers for the loops' addresses."""
        return uint32(q)
