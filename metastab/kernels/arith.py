"""The arithmetic of the fused kernels: explicit fused multiply-adds and the FMA exp.

LLVM contracts nothing on its own (numba sets no fast-math flags), so a kernel's multiply-adds
fuse exactly where it calls :func:`fma`: each is rounded once, as IEEE 754 fusedMultiplyAdd, on
every target (``llvm.fma.f64`` here, the CUDA ``fma.rn.f64`` on a device), and the plain-Python
twins repeat it with :func:`fma_exact`. :func:`mul` is the plain product, by name: the leaves
written once for the CPU and the device (:mod:`.leaves`) name every product, since the device
must write its own unfused (``cuda.arith.mul``). :func:`exp_fma` is the kernels' exp of the fused
kernels, one of those leaves.

The sphere flow (:mod:`.cpu.sphere`, :mod:`.cuda.sphere`) and the R^d steps (:mod:`.cpu.steps`,
:mod:`.cuda.steps`: scores, the exp, the moves, the pick's threshold) compute with this
arithmetic; the stopping events' distance sums and the sphere chain's V x_j and move are products
and sums rounded as written, on every target.
"""

import math

from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from . import leaves
from .leaves import INV_FACT, LN2_HI, LN2_LO, LOG2E, SHIFT, Z_MIN
from .leaves import SHIFT_BITS as SHIFT_BITS  # the vector exp of cpu.tiles reads it here

__all__ = ["as_bits", "exp_fma", "exp_fma_exact", "fma", "fma_exact", "from_bits", "mul"]


@intrinsic
def fma(typingctx, a, b, c):
    """a b + c rounded once (``llvm.fma.f64``: the hardware instruction where the CPU has one)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()] * 3)
        f = cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma.f64")
        return builder.call(f, args)

    return sig, codegen


@intrinsic
def mul(typingctx, a, b):
    """a b rounded once (``fmul``: LLVM fuses it with nothing, see the module notes); the
    product of the leaves written for both targets (:mod:`.leaves`)."""
    sig = types.float64(types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fmul(*args)

    return sig, codegen


@intrinsic
def from_bits(typingctx, i):
    """The double whose IEEE 754 bits are the int64 ``i``."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@intrinsic
def as_bits(typingctx, x):
    """The IEEE 754 bits of the double ``x`` as an int64."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


# exp(z) for z <= 0: Cody-Waite reduction z = k ln2 + r, |r| <= ln2 / 2 (k by adding 1.5 2^52,
# r with two fused steps), the degree-13 Taylor polynomial of e^r in Horner form, one fma per
# degree (truncation < 2^-57), times 2^k built from the exponent bits; within 1 ulp of a correctly
# rounded exp. Results with k < -1022 (z < -708.4) are flushed to 0. One pass, no table, no call:
# LLVM vectorises a loop of it. Written once for both targets (leaves.exp_nonpositive).
_C = INV_FACT

exp_fma = njit(_nrt=False)(leaves.exp_nonpositive(fma, mul, as_bits, from_bits))


# --------------------------------------------------------------------------------------------
# Plain-Python twins (the reference kernels and numba's CUDA simulator)
# --------------------------------------------------------------------------------------------


def fma_exact(a: float, b: float, c: float) -> float:
    """a b + c rounded once to the nearest double (ties to even), in plain Python: the exact
    rational result rounded by CPython's correctly rounded integer division. Each double is
    n / 2^k (``as_integer_ratio``), so one power-of-two denominator holds the sum exactly (about
    five times faster than ``fractions.Fraction``, which reduces by gcds at every step)."""
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a * b + c  # an infinite or NaN product: as in IEEE fma
    if not math.isfinite(c):
        return c  # a finite exact product (even one beyond the float range) leaves c as it is
    na, da = a.as_integer_ratio()
    nb, db = b.as_integer_ratio()
    nc, dc = c.as_integer_ratio()
    num, den = na * nb, da * db
    if den >= dc:
        num += nc * (den // dc)
    else:
        num, den = num * (dc // den) + nc, dc
    if num == 0:
        return a * b + c  # then a b is exact, and the float sum has IEEE's sign of zero
    try:
        return num / den
    except OverflowError:
        return math.inf if num > 0 else -math.inf


def exp_fma_exact(z: float) -> float:
    """:func:`exp_fma` in plain Python, operation for operation."""
    z = max(z, Z_MIN) if z == z else z
    shifted = fma_exact(z, LOG2E, SHIFT)
    k = shifted - SHIFT
    r = fma_exact(-k, LN2_LO, fma_exact(-k, LN2_HI, z))
    p = fma_exact(_C[13], r, _C[12])
    for c in reversed(_C[:12]):
        p = fma_exact(p, r, c)
    if k != k:
        return math.nan
    return p * (2.0 ** int(k) if k >= -1022 else 0.0)
