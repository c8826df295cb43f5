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
"""

from numba import config, cuda

from .. import arith

__all__ = ["fma", "mul"]

if config.ENABLE_CUDASIM:
    fma = arith.fma_exact

    def mul(a, b):
        """a b, rounded once (Python's float product)."""
        return a * b

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
