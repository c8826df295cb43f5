"""The noisy attention model on the sphere (docs: models#noisy-sphere): its Gaussian noise from
the chains' streams and its step, for :mod:`.sphere_family`.

The noise: the log and normal leaves of :mod:`..leaves` compiled over the CPU's arithmetic, and
:func:`standard_normals`, a step's standard normals in the fixed order of their index
q = i d + k (token i, coordinate k). They come in pairs from Marsaglia's polar method, both
kept: pair p gives normals 2p and 2p + 1, and where n d is odd the last pair's second normal is
dropped. The draws read the stream one after the other; the factors √(−2 log q / q) are taken
after them (the operations of ``leaves.normal_pair``, so its bits).

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

from numba import njit

from .. import leaves
from ..arith import fma, mul
from ..cache import njit_keyed
from ..params import JIT_NO_NRT, SOFTMAX, UNNORMALIZED
from ..streams import next_uniform
from .sphere_steps import _dot8, _gram_blocks, _normalise_fused, _transpose, _velocity

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()

# written once for both targets (leaves), compiled into the kernels that call them
log_fma = njit(_nrt=False)(leaves.log_positive(fma, mul))
polar_draw = njit(_nrt=False)(leaves.polar_draw(next_uniform, fma, mul))
polar_scale = njit(_nrt=False)(leaves.polar_scale(log_fma, mul))
normal_pair = njit(_nrt=False)(leaves.normal_pair(polar_draw, polar_scale, mul))


@_jit(**JIT_NO_NRT)
def standard_normals(s, m, z, c):
    """z[q] = the q-th standard normal of the stream ``s``, q < m (module notes: pairs of the
    polar method in order, both kept); ``c`` holds (m + 1) // 2 doubles of scratch (the pairs'
    q, then their factors). Leaves the stream as (m + 1) // 2 calls of ``normal_pair``."""
    pairs = (m + 1) // 2
    for p in range(pairs):
        u, v, q = polar_draw(s)
        z[2 * p] = u
        if 2 * p + 1 < m:
            z[2 * p + 1] = v
        c[p] = q
    for p in range(pairs):
        c[p] = polar_scale(c[p])
    for q in range(m):
        z[q] = mul(z[q], c[q >> 1])


@_jit(inline="always", **JIT_NO_NRT)
def _noisy(x, Bs, Vs, beta, dt, coupling, attention, plain_B, plain_V, s, out, work, G, T):
    """The noisy step (module notes) on the flow's scratch (``sphere_steps.sphere_flow_work``):
    x and out as for the flow's ``_post_ln`` (None: the state stays transposed in work[0], its
    squared norms in work[5]); the drift in work[2][0], the normals in work[2][1] (in the order
    q = i d + k) and work[2][2] (the polar factors), the increment in work[2][3]."""
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
    z = K[1].reshape(m)
    standard_normals(s, m, z, K[2].reshape(m))
    inc = K[3]
    for i in range(n):
        for k in range(d):
            inc[k, i] = z[i * d + k]
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
