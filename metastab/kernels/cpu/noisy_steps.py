"""The noisy attention model on the sphere (docs: models#noisy-sphere): its Gaussian noise from
the chains' streams and its step, for :mod:`.sphere_family`.

The noise: the log, sine-cosine and Box–Muller leaves of :mod:`..leaves` compiled over the
CPU's arithmetic, and :func:`standard_normals`, a step's standard normals in the fixed order of
their index q = k n + i (coordinate k of token i, the layout of the transposed state). Pair p of
Box–Muller gives normals 2p and 2p + 1 from the stream's uniforms 2p and 2p + 1 (its second
normal dropped where n d is odd and p is the last pair): no rejection, so the uniforms are drawn
first and the transform is one loop that vectorises. The uniforms are drawn from a copy of the
stream's state on the stack (:func:`_on_stack`), which the compiler keeps in registers: the
state in the caller's array would be stored and loaded again around every store of a uniform,
which might alias it (at n d = 1024: about 2.0 against 1.1 µs, one thread).

The step (:func:`noisy_step`), projected Euler–Maruyama with renormalisation of
dX_i = 2K P⊥_{X_i}(Attn(X)_i) dt + √2 dB_i (Mun & Rosenzweig, arXiv 2606.05140, in this
package's normalisation: :mod:`metastab.theory.noisy`):

    y_i = x_i + (h D_i + σ P⊥_{x_i} ξ_i),   x_i ← y_i / ‖y_i‖,

h = 2K dt, σ = √(2 dt), ξ_i the step's standard normals, D_i = P⊥_{x_i} Attn(x)_i the
projected velocity of the sphere flow (:mod:`.sphere_steps`: its (USA) or softmax weights, its
tiles and sums), P⊥_x ξ = ξ − <x, ξ> x with <x, ξ> summed as ``sphere_steps._dot8`` sums it, and
the LayerNorm of the flow (``tiles.normalise`` with h = 1 on the increment). Where K = 0 the
drift is not computed (the increment is σ P⊥ ξ). Every operation is in the fused arithmetic of
:mod:`..arith` and in a fixed order, so :func:`metastab.kernels.reference.sphere.noisy_step`
repeats it bit for bit.
"""

import math

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .. import leaves
from ..arith import as_bits, fma, from_bits, mul
from ..cache import njit_keyed
from ..params import JIT_NO_NRT, SOFTMAX, UNNORMALIZED
from ..streams import next_uniform
from .sphere_steps import _dot8, _gram_blocks, _normalise_fused, _transpose, _velocity

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()

# written once for both targets (leaves), compiled into the kernels that call them
# (numpy's error model: the log's division cannot divide by 0, and Python's would check it)
_leaf = njit(_nrt=False, error_model="numpy")
log_fma = _leaf(leaves.log_positive(fma, mul, as_bits, from_bits))
sincos_turn = _leaf(leaves.sincos_turn(fma, mul))
box_muller = _leaf(leaves.box_muller(log_fma, sincos_turn, mul))


@intrinsic
def _on_stack(typingctx, s):
    """A copy of the stream state ``s`` (uint64[4]) in an array on the caller's stack: memory
    that no other array can alias, so the compiler holds it in registers across a loop that
    stores elsewhere. Valid while the calling function runs (copy it back before returning)."""
    if not (isinstance(s, types.Array) and s.ndim == 1 and s.dtype == types.uint64):
        return None
    copy = types.Array(types.uint64, 1, "C")

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        stride = cgutils.unpack_tuple(builder, src.strides, 1)[0]
        data = builder.bitcast(src.data, ir.IntType(8).as_pointer())
        word = ir.IntType(64)
        dst = cgutils.alloca_once(builder, word, size=4)
        for k in range(4):
            at = builder.gep(data, [builder.mul(stride, ir.Constant(stride.type, k))])
            v = builder.load(builder.bitcast(at, word.as_pointer()))
            builder.store(v, builder.gep(dst, [ir.Constant(ir.IntType(32), k)]))
        out = context.make_array(copy)(context, builder)
        intp = context.get_value_type(types.intp)
        context.populate_array(
            out,
            data=dst,
            shape=[ir.Constant(intp, 4)],
            strides=[ir.Constant(intp, 8)],
            itemsize=ir.Constant(intp, 8),
            meminfo=None,
        )
        return out._getvalue()

    return copy(s), codegen


@_jit(**JIT_NO_NRT)
def standard_normals(s, m, z, a, b):
    """z[q] = the q-th standard normal of the stream ``s``, q < m (module notes): pair p of
    ``box_muller`` from the stream's uniforms 2p and 2p + 1 (u = 1 − U in (0, 1], v = V), drawn
    first into the scratch ``a``, ``b`` ((m + 1) // 2 doubles each), then transformed in a loop
    that vectorises. Leaves the stream advanced by 2 ((m + 1) // 2) uniforms."""
    pairs = (m + 1) // 2
    state = _on_stack(s)
    for p in range(pairs):
        a[p] = 1.0 - next_uniform(state)
        b[p] = next_uniform(state)
    for k in range(4):
        s[k] = state[k]
    half = m // 2
    for p in range(half):
        z[2 * p], z[2 * p + 1] = box_muller(a[p], b[p])
    if pairs > half:
        z[m - 1] = box_muller(a[half], b[half])[0]


@_jit(inline="always", **JIT_NO_NRT)
def _noisy(x, Bs, Vs, beta, dt, coupling, attention, plain_B, plain_V, s, out, work, G, T):
    """The noisy step (module notes) on the flow's scratch (``sphere_steps.sphere_flow_work``):
    x and out as for the flow's ``_post_ln`` (None: the state stays transposed in work[0], its
    squared norms in work[5]); the drift in work[2][0], the normals in work[2][3] (d×n: normal
    q = k n + i is ξ_ik), then the increment there too; the uniforms in work[2][1], work[2][2]."""
    xt, K = work[0], work[2]
    d, n = xt.shape
    h = mul(coupling + coupling, dt)
    sigma = math.sqrt(dt + dt)
    if x is not None:
        _transpose(x, xt)
    drift = h != 0.0
    if drift:
        _velocity(xt, Bs, Vs, beta, attention, False, False, 0.0, False, 0.0, plain_B, plain_V,
                  True, K[0], work, G, T, x is None)  # fmt: skip
    m = n * d
    inc = K[3]  # the normals q = k n + i are ξ_ik, in place: inc is d×n
    standard_normals(s, m, inc.reshape(m), K[1].reshape(m), K[2].reshape(m))
    dots = work[5]
    _dot8(xt, inc, 0, n, work[6], dots)
    for k in range(d):
        for i in range(n):
            g = mul(sigma, fma(-dots[i], xt[k, i], inc[k, i]))
            inc[k, i] = fma(h, K[0, k, i], g) if drift else g
    _normalise_fused(1.0, inc, xt, out, work)


def noisy_step(x, Bs, Vs, beta, dt, coupling, unnormalized, plain_B, plain_V, s, out, work):
    """One step of the noisy model (module notes) for n tokens x (n×d) into ``out`` (which may
    be x), the normals from the stream ``s`` (uint64[4], advanced), on one thread: the code
    that the drivers run (``work``: ``sphere_steps.sphere_flow_work(n, d)``, whose Gram the
    step uses where n has one). Called from Python."""
    G = work[1] if _gram_blocks(x.shape[0]) > 0 else None
    attention = UNNORMALIZED if unnormalized else SOFTMAX
    _noisy(x, Bs, Vs, beta, dt, coupling, attention, plain_B, plain_V, s, out, work, G, None)
