"""The noisy model on the sphere on the device: the CUDA twin of
:mod:`metastab.kernels.cpu.noisy_steps` (docs: models#noisy-sphere).

Projected Euler–Maruyama with renormalisation of dX_i = 2K P⊥_{X_i}(Attn(X)_i) dt + √2 dB_i
(Mun & Rosenzweig, arXiv 2606.05140, in this package's normalisation:
:mod:`metastab.theory.noisy`):

    y_i = x_i + (h D_i + σ P⊥_{x_i} ξ_i),   x_i ← y_i / ‖y_i‖,

h = 2K dt, σ = √(2 dt), D_i = P⊥_{x_i} Attn(x)_i the projected velocity of the sphere flow's RK4
(:func:`.sphere_steps.velocity`, not computed where h = 0), ξ_i the step's standard normals and
<x_i, ξ_i> summed by :func:`.sphere_steps.dot8`; then the flow's fused LayerNorm
(:func:`.sphere_steps.normalise_fused`) of y_ik = x_ik + inc_ik (one fma by 1). The same
operations in the same order as the CPU step, so the simulator gives its bits (and a device too,
where the weights are softmax's: (USA)'s scale is a libdevice exp, as in the flow).

The normals: the CPU's log, sine-cosine and Box–Muller leaves (:mod:`..leaves`) compiled over
the device's arithmetic (:mod:`.arith`). The stream is sequential, so the team's thread 0 draws
a step's uniforms in the CPU's order, pair p = 0, 1, … : u = 1 − U, then v = V; the threads of
the team then transform the pairs side by side, each in place (pair p's uniforms sit where its
normals 2p and 2p + 1 go; the second of the last pair is left over where n d is odd), so that
normal q = k n + i, coordinate k of token i, sits at the buffer's token-minor index of x_ik.
"""

import math

from numba import cuda

from .. import leaves
from .arith import as_bits, fma, from_bits, ix, mul
from .euclidean_steps import next_uniform
from .sphere_steps import dot8, normalise_fused, norms, velocity

# written once for both targets (leaves), compiled here over the device's arithmetic
log_fused = cuda.jit(device=True)(leaves.log_positive(fma, mul, as_bits, from_bits))
sincos_turn = cuda.jit(device=True)(leaves.sincos_turn(fma, mul))
box_muller = cuda.jit(device=True)(leaves.box_muller(log_fused, sincos_turn, mul))


def noisy_layout(n: int, d: int) -> int:
    """Doubles of a chain's buffer for the noisy step: x, its update and the velocity's
    scratch B x_i (n d each), the squared norms and a slot left unused (n each), the drift
    (n d) and the normals (n d + 1: the odd n d's last pair writes two)."""
    return 5 * n * d + 2 * n + 1


@cuda.jit(device=True)
def standard_normals(buf, Z, m, st, tid, T):
    """buf[Z + q] = the q-th standard normal of the stream ``st``, q < m (module notes), by the
    T threads of the team: its thread 0 draws the (m + 1) // 2 pairs of uniforms in order
    (stream advanced by 2 ((m + 1) // 2)), then each thread transforms its pairs in place.
    Barriers after both phases."""
    pairs = (m + 1) // 2
    if tid == 0:
        for p in range(pairs):
            buf[ix(Z + 2 * p)] = 1.0 - next_uniform(st)
            buf[ix(Z + 2 * p + 1)] = next_uniform(st)
    cuda.syncthreads()
    for p in range(tid, pairs, T):
        a, b = box_muller(buf[ix(Z + 2 * p)], buf[ix(Z + 2 * p + 1)])
        buf[ix(Z + 2 * p)] = a
        buf[ix(Z + 2 * p + 1)] = b
    cuda.syncthreads()


@cuda.jit(device=True)
def noisy_step(buf, n, d, Bs, Vs, beta, dt, coupling, attention, plain_B, plain_V, W, st,
               tid, T):  # fmt: skip
    """One step of the noisy model (module notes; cpu.noisy_steps._noisy) by the T threads of
    the team, ``tid`` this thread's: the new state to the update slot of ``buf``
    (:func:`noisy_layout`: x, update, B x_i, norms, unused, drift D, normals), the normals from
    the stream ``st`` (the team's thread 0's); W: the chain's n×n weight scratch."""
    nd = n * d
    OUT = nd
    bx = buf[2 * nd : 3 * nd]
    NO = 3 * nd
    KO = 3 * nd + 2 * n
    Z = KO + nd
    h = mul(coupling + coupling, dt)
    sigma = math.sqrt(dt + dt)
    drift = h != 0.0  # the same for every team of a block: the barriers below are shared
    if drift:  # the flow's projected velocity with no positional option and no offset
        norms(buf, 0, n, d, plain_B, buf, NO, tid, T)
        for i in range(tid, n, T):
            velocity(buf, 0, i, n, d, Bs, Vs, beta, attention, False, False, 0.0, False, 0.0,
                     plain_B, plain_V, True, W, bx, buf, KO, NO)  # fmt: skip
    standard_normals(buf, Z, nd, st, tid, T)
    for i in range(tid, n, T):
        a = dot8(buf, 0, buf, Z, i, n, d)  # <x_i, ξ_i>
        for k in range(d):
            q = k * n + i
            xk = buf[ix(q)]
            g = mul(sigma, fma(-a, xk, buf[ix(Z + q)]))
            inc = fma(h, buf[ix(KO + q)], g) if drift else g
            buf[ix(OUT + q)] = fma(1.0, inc, xk)
        normalise_fused(buf, OUT, i, n, d, buf, OUT)
