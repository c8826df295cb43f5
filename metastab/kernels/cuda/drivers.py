"""The CUDA driver: many chains, one thread block each or several per block, several steps per
launch.

:func:`advance` is the device twin of the CPU's ``drivers.advance`` (same arguments, same
results): a team of threads runs chain c for up to ``nsteps`` steps with its configuration, the
updated configuration, the vectors B x_i and the step's uniforms in shared memory (in a global
scratch row when they do not fit), one thread per token (strided when n exceeds the block). A
team is the whole block, or, where several chains fit in a block's shared memory, n threads of
it (:func:`block_shape`): the teams of a block meet at the same barriers, and a team whose
chain has stopped idles through them (its lane :data:`IDLE`). The buffer
holds the tokens token-minor (coordinate k of token i at k n + i; the chain's row of X, token i
at i d + k, is transposed on the way in and out), so that the threads, one token each, touch
neighbouring addresses. Per step:
the team's thread 0 draws the n uniforms from the chain's xoshiro256** stream (its state in
shared memory: a local array was promoted to 8 registers that every thread held through every
step), so the teams of a block draw side by side; every
thread computes its tokens' scores (into the chain's n×n weight scratch, token-minor so the
accesses coalesce), their weights and picks (:mod:`metastab.kernels.cuda.euclidean_steps`) and their
moves; the team's thread 0 then resolves the picks that need the stream, in token order (the
CPU's order: same draws); the new configuration replaces the old, and the event is evaluated on
the device (:mod:`metastab.kernels.cuda.events`; LEAVE_HULL by a kernel of its own, launched
after each one-step launch, see :func:`launch`). No host round trip per step. The sphere models
(:mod:`metastab.kernels.cuda.sphere_steps`) and the noisy model
(:mod:`metastab.kernels.cuda.noisy_steps`, whose step draws its own normals, thread 0 in stream
order) run in the same driver.

Each model kind and event has its own kernel (:func:`kernel_for`): the two are constants of the
compiled code, so a run compiles only its own paths and a kernel holds the registers of its own
paths only (``metastab bench --device cuda --compile-only`` lists them).

The model's scalars travel in two small arrays (:func:`model_arrays`), its matrices as stacks:
Bs (H, d, d) and Vs (H, d, d), the key-query and value matrices of the sphere models' heads, or
B and the step matrix P of the R^d models as stacks of one.
"""

import contextlib
import functools
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from numba import cuda, float64, int32, uint64

try:  # numba-cuda's own warning classes, else those of numba's built-in CUDA target
    from numba.cuda.core.errors import NumbaPerformanceWarning
except ImportError:  # pragma: no cover
    from numba.core.errors import NumbaPerformanceWarning

from ..params import (
    CHAIN,
    COLLAPSE,
    FLOW,
    HARDMAX,
    LEAVE_BALL,
    LEAVE_HULL,
    LEAVE_UNIFORM_1,
    LEAVE_UNIFORM_2,
    LOCALMAX,
    MIX_LN,
    NO_EVENT,
    NOISY_SPHERE,
    POST_LN,
    PRE_LN,
    REACH,
    REACH_UNIFORM_1,
    REACH_UNIFORM_2,
    SPHERE_CHAIN,
    SPHERE_FLOW,
)
from .euclidean_steps import (
    NAN_PICK,
    PENDING,
    chain_pick,
    flow_target,
    hardmax_target,
    localmax_target,
    move,
    next_uniform,
    resolve_pick,
)
from .events import event_hit_for, hull_scratch, leave_hull
from .noisy_steps import noisy_layout, noisy_step
from .sphere_steps import chain_move, sphere_flow_step

__all__ = [
    "Scratch",
    "advance",
    "block_shape",
    "kernel_for",
    "kernel_name",
    "launch",
    "layout",
    "model_arrays",
    "one_chain_per_block",
    "scratch_bytes",
    "scratch_shapes",
    "step_for",
]

# Shared memory a block may take without opting in, static and dynamic together (bytes), and
# the part kept for the kernels' static shared arrays (the teams' event flags and streams;
# ptxas's figure is checked against it by metastab.bench.cuda_compile): dynamic shared memory
# gets the rest.
SHARED_LIMIT = 48 * 1024
STATIC_SHARED = 1024
_SHARED_BYTES = SHARED_LIMIT - STATIC_SHARED
_MAX_THREADS = 256
# several chains per block (teams of n threads, one per token) where a chain's buffer and weights
# fit in shared memory: at most MAX_TEAMS of them (the rows of the static shared arrays), in
# blocks of about _PACK_THREADS threads
MAX_TEAMS = 16
_TEAM_ROWS = MAX_TEAMS + 1  # a row per team, and one for the threads left over
_PACK_THREADS = 128
# the lane of a thread with no chain to run: every token loop starting there is empty
IDLE = 1 << 30
# the largest index into a chain's buffer or weights: the kernels pass them as uint32
# (arith.ix)
MAX_INDEX = 2**32 - 1
# the LEAVE_HULL test's kernel: its name (in kernels.csv), threads per block (one per chain)
HULL_NAME = "leave_hull"
_HULL_THREADS = 64
# names of the kinds and events (the kernels' names)
MODEL_NAMES = {CHAIN: "chain", FLOW: "flow", HARDMAX: "hardmax", LOCALMAX: "localmax",
              SPHERE_FLOW: "sphere-flow", SPHERE_CHAIN: "sphere-chain",
              NOISY_SPHERE: "noisy-sphere"}  # fmt: skip
EVENT_NAMES = {NO_EVENT: "no-event", LEAVE_BALL: "leave-ball", LEAVE_HULL: "leave-hull",
               REACH: "reach", COLLAPSE: "collapse", LEAVE_UNIFORM_1: "leave-uniform-1",
               LEAVE_UNIFORM_2: "leave-uniform-2", REACH_UNIFORM_1: "reach-uniform-1",
               REACH_UNIFORM_2: "reach-uniform-2"}  # fmt: skip
# the slots of model_arrays' integer and float arrays
KIND, USE_P, BY_POINT, RULE, ATTENTION, SCHEME, CAUSAL, PLAIN_B, PLAIN_V, STRICT, POSITIONAL = (
    range(11)
)
BETA, TOL, ALIBI, OFFSET, COUPLING = range(5)


def model_arrays(dyn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ints, floats, Bs, Vs) of a Dynamics (R^d models) or SphereDynamics."""
    if hasattr(dyn, "Bs"):
        ints = [
            dyn.model_code,
            0,
            0,
            0,
            dyn.attention,
            dyn.scheme,
            dyn.causal,
            dyn.plain_B,
            dyn.plain_V,
            dyn.strict,
            dyn.positional,
        ]
        return (
            np.array(ints, np.int64),
            np.array([dyn.beta, 0.0, dyn.alibi, dyn.offset, dyn.coupling]),
            np.ascontiguousarray(dyn.Bs, dtype=float),
            np.ascontiguousarray(dyn.Vs, dtype=float),
        )
    ints = [dyn.model_code, dyn.use_P, dyn.by_point, dyn.rule, 0, 0, 0, 0, 0, 0, 0]
    return (
        np.array(ints, np.int64),
        np.array([dyn.beta, dyn.tol, 0.0, 0.0, 0.0]),
        np.ascontiguousarray(dyn.B[None], dtype=float),
        np.ascontiguousarray(dyn.P[None], dtype=float),
    )


def layout(n: int, d: int, model_code: int = CHAIN) -> int:
    """Doubles of a chain's buffer: x, its update and B x_i (n d each), uniforms and pending
    flags (n each); for the sphere flow also the four RK4 velocities and a stage (5 n d); the
    noisy model's: :func:`~metastab.kernels.cuda.noisy_steps.noisy_layout`."""
    if model_code == NOISY_SPHERE:
        return noisy_layout(n, d)
    return 3 * n * d + 2 * n + (5 * n * d if model_code == SPHERE_FLOW else 0)


def block_shape(n: int, d: int, model_code: int = CHAIN) -> tuple[int, int, int, int]:
    """(threads per block, dynamic shared bytes, placement, chains per block): the buffer and the
    n^2 weights in shared memory (placement 2), the buffer only (1), or neither (0, all in global
    memory). Where two chains or more fit in shared memory and in a block of _PACK_THREADS
    threads, the block runs several, each by a team of n threads (one token each, the chains
    side by side in shared memory): a chain of 20 tokens alone left 12 of its warp's 32 threads
    idle, and a block of one warp holds half the warps that an SM can run at once."""
    threads = min(_MAX_THREADS, 32 * ((n + 31) // 32))
    buf = 8 * layout(n, d, model_code)
    per = buf + 8 * n * n
    if per <= _SHARED_BYTES:
        teams = min(MAX_TEAMS, min(_PACK_THREADS, _MAX_THREADS) // n, _SHARED_BYTES // per)
        if teams >= 2:
            return 32 * ((teams * n + 31) // 32), teams * per, 2, teams
        return threads, per, 2, 1
    if buf <= _SHARED_BYTES:
        return threads, buf, 1, 1
    return threads, 0, 0, 1


@contextlib.contextmanager
def one_chain_per_block() -> Iterator[None]:
    """Within it, :func:`block_shape` gives one chain per block at every n (the bench compares the
    two; the compile-only check compiles both kernels)."""
    global _PACK_THREADS
    saved = _PACK_THREADS
    _PACK_THREADS = 0
    try:
        yield
    finally:
        _PACK_THREADS = saved


def scratch_bytes(n: int, d: int, model_code: int = CHAIN) -> int:
    """Device bytes per chain beyond its state: the weights and the buffer where shared memory
    is too small for them, the hull scratch."""
    hq, hs = hull_scratch(n, d)
    place = block_shape(n, d, model_code)[2]
    own = (n * n if place < 2 else 0) + (layout(n, d, model_code) if place == 0 else 0)
    return 8 * (own + hq + hs)


@functools.cache
def step_for(model_code: int):
    """The device function ``step(buf, n, d, ip, fp, Bs, Vs, gamma, r, Wc, st, tid, T)`` of the
    model kind ``kind``: one step of the chain in ``buf`` (layout: x, update, B x_i, uniforms,
    pending flags; the uniforms already drawn for the chains; the noisy model's layout and
    normals: :mod:`metastab.kernels.cuda.noisy_steps`), by the T threads of its team,
    ``tid`` this thread's (:data:`IDLE`: none; every thread of the block calls it, for its
    barriers); ``st``: the stream (the team's thread 0's) for the rare picks and the noisy
    model's normals. Ends with the new
    configuration in place of the old. ``kind`` is a constant of the compiled code: the other
    models' paths are not in it."""
    picks = model_code == CHAIN or model_code == SPHERE_CHAIN

    @cuda.jit(device=True)
    def step(buf, n, d, ip, fp, Bs, Vs, gamma, r, Wc, st, tid, T):
        nd = n * d
        OUT = nd
        UNI = 3 * nd
        PEND = 3 * nd + n
        bx = buf[2 * nd : UNI]
        beta = fp[BETA]
        B = Bs[0]
        P = Vs[0]
        use_P = ip[USE_P] != 0
        if model_code == SPHERE_FLOW:
            scheme = ip[SCHEME]
            if scheme == MIX_LN:  # the schedule's margin: 1.0 for a post-LN step
                scheme = POST_LN if r != 0.0 else PRE_LN
            sphere_flow_step(buf, n, d, Bs, Vs, beta, gamma, ip[ATTENTION], scheme,
                             ip[CAUSAL] != 0, ip[STRICT] != 0, fp[ALIBI], ip[POSITIONAL] != 0,
                             fp[OFFSET], ip[PLAIN_B] != 0, ip[PLAIN_V] != 0, Wc, tid,
                             T)  # fmt: skip
        elif model_code == NOISY_SPHERE:  # its normals drawn in the step, from st
            noisy_step(buf, n, d, Bs, Vs, beta, gamma, fp[COUPLING], ip[ATTENTION],
                       ip[PLAIN_B] != 0, ip[PLAIN_V] != 0, Wc, st, tid, T)  # fmt: skip
        else:
            for i in range(tid, n, T):
                if picks:
                    pick = chain_pick(buf, 0, B, bx, beta, i, n, d, Wc, buf[UNI + i])
                    if pick == PENDING:
                        buf[PEND + i] = 1.0
                    elif pick == NAN_PICK:
                        for k in range(d):
                            buf[OUT + k * n + i] = np.nan
                    elif model_code == SPHERE_CHAIN:
                        chain_move(buf, i, pick, n, d, P, ip[PLAIN_V] != 0, gamma, OUT, bx)
                    else:
                        move(buf, 0, i, buf, pick, gamma, P, use_P, buf, OUT, n, d)
                    continue
                if model_code == FLOW:
                    flow_target(buf, 0, B, bx, beta, i, n, d, Wc)
                elif model_code == LOCALMAX:
                    localmax_target(buf, 0, B, bx, i, n, d, Wc, r, ip[RULE])
                else:
                    hardmax_target(buf, 0, B, bx, i, n, d, Wc, ip[BY_POINT] != 0, fp[TOL])
                move(buf, 0, i, bx, i, gamma, P, use_P, buf, OUT, n, d)
        cuda.syncthreads()
        if picks and tid == 0:
            for i in range(n):
                if buf[PEND + i] != 0.0:
                    buf[PEND + i] = 0.0
                    pick = resolve_pick(Wc, i, n, buf[UNI + i], st)
                    if model_code == SPHERE_CHAIN:
                        chain_move(buf, i, pick, n, d, P, ip[PLAIN_V] != 0, gamma, OUT, bx)
                    else:
                        move(buf, 0, i, buf, pick, gamma, P, use_P, buf, OUT, n, d)
        cuda.syncthreads()
        for q in range(tid, nd, T):
            buf[q] = buf[OUT + q]
        cuda.syncthreads()

    return step


@functools.cache
def kernel_for(model_code: int, code: int, packed: bool = False):
    """The launch kernel of the model kind ``kind`` and the event ``code``: block b runs the
    chains b teams .. (b + 1) teams - 1 (``teams`` per block, a team of n threads each, or one
    chain by the whole block) for up to nsteps steps, their buffers and weights in shared memory
    (``place`` 2), the buffer only (1) or neither (0, in global memory; see
    :func:`block_shape`). A block whose chains have all stopped returns; with an event, the
    block leaves its loop when the last of them stops. ``kind``, ``code`` and ``packed`` (teams
    of n threads, else one chain per block) are constants of the compiled code, so a run
    compiles its own paths only. LEAVE_HULL has
    its own kernel (:func:`metastab.kernels.cuda.events.leave_hull`, see :func:`launch`)."""
    if code == LEAVE_HULL:
        raise ValueError("kernel_for: LEAVE_HULL is tested by events.leave_hull, not in a step")
    step = step_for(model_code)
    hit = event_hit_for(code)
    picks = model_code == CHAIN or model_code == SPHERE_CHAIN

    # fmt: off
    # (the kernels' long flat argument lists, kept compact)
    @cuda.jit(device=True)
    def store(c, buf, n, d, X, state, st, tid, T):
        """Chain c's configuration and stream back to global memory, by its team."""
        for q in range(tid, n * d, T):
            X[c, q] = buf[q % d * n + q // d]
        if tid == 0:
            for w in range(4):
                state[c, w] = st[w]

    @cuda.jit(device=True)
    def run(c, buf, Wc, X, state, ip, fp, Bs, Vs, sizes, margins, t0, nsteps, centers, radii,
            scalar, times, done, tid, T, flag, st, live):
        d = Bs.shape[1]
        n = X.shape[1] // d
        nd = n * d
        UNI = 3 * nd
        PEND = 3 * nd + n
        for q in range(tid, nd, T):  # token i = q // d, coordinate k = q % d: token-minor
            buf[q % d * n + q // d] = X[c, q]
        if tid == 0:
            for w in range(4):
                st[w] = state[c, w]
        for i in range(tid, n, T):
            buf[PEND + i] = 0.0
        cuda.syncthreads()
        for t in range(t0, t0 + nsteps):
            gamma = sizes[t - t0 if sizes.shape[0] > 1 else 0]
            r = margins[t - t0 if margins.shape[0] > 1 else 0]
            if picks:
                if tid == 0:
                    for i in range(n):
                        buf[UNI + i] = next_uniform(st)
                cuda.syncthreads()
            step(buf, n, d, ip, fp, Bs, Vs, gamma, r, Wc, st, tid, T)
            if code == NO_EVENT:
                continue
            met = hit(c, buf, n, d, centers, radii, scalar, flag, tid, T)  # every thread
            # (the two cases written apart: one shared branch took the one-chain kernels with an
            # event from 86-136 registers to 104-161)
            if not packed:
                if met:  # the block's chain stops here
                    if tid == 0:
                        times[c] = t + 1
                        done[c] = True
                    break
                continue
            if met and tid != IDLE:  # the team's chain stops here, the others go on
                if tid == 0:
                    times[c] = t + 1
                    done[c] = True
                    cuda.atomic.add(live, 0, -1)
                store(c, buf, n, d, X, state, st, tid, T)
                tid = IDLE
            cuda.syncthreads()
            if live[0] == 0:
                break
        store(c, buf, n, d, X, state, st, tid, T)

    @cuda.jit
    def advance_kernel(X, state, ip, fp, Bs, Vs, sizes, margins, t0, nsteps, centers, radii,
                       scalar, times, done, W, G, place, teams):
        flags = cuda.shared.array(_TEAM_ROWS, int32)
        streams = cuda.shared.array((_TEAM_ROWS, 4), uint64)
        live = cuda.shared.array(1, int32)
        if packed:  # team q of the block, n threads, runs chain c
            T = X.shape[1] // Bs.shape[1]
            q = min(cuda.threadIdx.x // T, teams)  # team `teams`: the threads left over
            c = cuda.blockIdx.x * teams + q
            tid = cuda.threadIdx.x - q * T
            if q == teams or c >= X.shape[0]:
                tid = IDLE
                c = 0  # a valid index for the views below; an idle thread reads nothing
            elif done[c]:
                tid = IDLE
            if cuda.threadIdx.x == 0:
                live[0] = 0
            cuda.syncthreads()
            if tid == 0:
                cuda.atomic.add(live, 0, 1)
            cuda.syncthreads()
            if live[0] == 0:  # every chain of the block has stopped: the same branch for all
                return
        else:  # the whole block runs chain c
            c = cuda.blockIdx.x
            if done[c]:
                return
            q = 0
            tid = cuda.threadIdx.x
            T = cuda.blockDim.x
        if place == 2:  # always when packed; without the other branches ptxas took 121 registers
            per = G.shape[1] + W.shape[1]  # a chain's buffer, then its weights
            buf = cuda.shared.array(0, float64)[q * per : (q + 1) * per]
            Wc = buf[G.shape[1]:]
        elif place == 1:
            buf = cuda.shared.array(0, float64)
            Wc = W[c]
        else:
            buf = G[c]
            Wc = W[c]
        run(c, buf, Wc, X, state, ip, fp, Bs, Vs, sizes, margins, t0, nsteps, centers, radii,
            scalar, times, done, tid, T, flags[q:], streams[q], live)
    # fmt: on

    return advance_kernel


def kernel_name(model_code: int, code: int, packed: bool = False) -> str:
    """The name of :func:`kernel_for`'s kernel, e.g. ``advance[chain,leave-ball]``, or
    ``advance[chain,leave-ball,teams]`` for several chains per block."""
    return f"advance[{MODEL_NAMES[model_code]},{EVENT_NAMES[code]}{',teams' if packed else ''}]"


def scratch_shapes(C: int, n: int, d: int, model_code: int = CHAIN) -> dict:
    """name -> (shape, dtype) of :func:`advance`'s device buffers for up to C chains: the
    weights W and buffers G where shared memory is too small (G's width tells the kernels where
    the weights start in a shared buffer), the hull scratch HQ and HS."""
    hq, hs = hull_scratch(n, d)
    place = block_shape(n, d, model_code)[2]
    return {
        "W": ((C if place < 2 else 1, n * n), np.float64),
        "G": ((C if place == 0 else 1, layout(n, d, model_code)), np.float64),
        "HQ": ((C, hq), np.float64),
        "HS": ((C, hs), np.int64),
    }


class Scratch:
    """Device buffers of :func:`advance` for up to ``C`` chains of n tokens in R^d of the model
    ``model_code`` (:func:`scratch_shapes`), kept between calls (a run calls advance once per
    chunk of steps)."""

    def __init__(self, C: int, n: int, d: int, model_code: int = CHAIN) -> None:
        if max(n * n, layout(n, d, model_code)) > MAX_INDEX:
            raise ValueError(
                f"device='cuda' takes chains whose n^2 weights and buffer of "
                f"{layout(n, d, model_code)} doubles have indices below 2^32; got n = {n}, "
                f"d = {d} (n^2 = {n * n})"
            )
        self.shape = (C, n, d, model_code)
        for name, (shape, dtype) in scratch_shapes(C, n, d, model_code).items():
            setattr(self, name, cuda.device_array(shape, dtype=dtype))


def launch(X, state, dyn, sched, t0, nsteps, ev, times, done, scratch, to_device=cuda.to_device):
    """The launches of one :func:`advance`, in order: a list of (kernel name, kernel, launch shape
    (blocks, threads, stream, shared bytes), arguments). One launch of the model's kernel for the
    nsteps steps; for LEAVE_HULL, per step, the model's kernel without event for that step, then
    the hull test (:func:`~metastab.kernels.cuda.events.leave_hull`, one thread per chain).
    ``to_device`` moves the small host arrays (identity: the host arguments whose types the
    kernels are compiled for, see :mod:`metastab.bench.cuda_compile`)."""
    C = X.shape[0]
    ip, fp, Bs, Vs = model_arrays(dyn)
    d = Bs.shape[1]
    n = X.shape[1] // d
    threads, shared, place, teams = block_shape(n, d, dyn.model_code)
    centers = np.ascontiguousarray(ev.centers.reshape(ev.centers.shape[0], -1))
    small = [ip, fp, Bs, Vs, sched.sizes, sched.margins, centers, np.ascontiguousarray(ev.radii)]
    ip, fp, Bs, Vs, sizes, margins, centers, radii = (
        to_device(np.ascontiguousarray(v)) for v in small
    )
    shape = ((C + teams - 1) // teams, threads, 0, shared)
    head = (X, state, ip, fp, Bs, Vs)
    tail = (centers, radii, float(ev.scalar), times, done, scratch.W, scratch.G, place, teams)
    if ev.code != LEAVE_HULL:
        args = (*head, sizes, margins, int(t0), int(nsteps), *tail)
        key = (dyn.model_code, ev.code, teams > 1)
        return [(kernel_name(*key), kernel_for(*key), shape, args)]
    kernel = kernel_for(dyn.model_code, NO_EVENT, teams > 1)
    name = kernel_name(dyn.model_code, NO_EVENT, teams > 1)
    groups, starts, members = (
        to_device(np.ascontiguousarray(v)) for v in (ev.groups, ev.starts, ev.members)
    )
    hull_shape = ((C + _HULL_THREADS - 1) // _HULL_THREADS, _HULL_THREADS, 0, 0)
    out: list[tuple[str, Any, tuple, tuple]] = []
    for t in range(int(t0), int(t0) + int(nsteps)):
        s = t - int(t0)
        g = sizes[s : s + 1] if sizes.shape[0] > 1 else sizes
        r = margins[s : s + 1] if margins.shape[0] > 1 else margins
        out.append((name, kernel, shape, (*head, g, r, t, 1, *tail)))
        hull = (X, centers, radii, groups, starts, members, d, t, times, done)
        out.append((HULL_NAME, leave_hull, hull_shape, (*hull, scratch.HQ, scratch.HS)))
    return out


def advance(X, state, dyn, sched, t0, nsteps, ev, times, done, scratch):
    """drivers.advance on the device for the chains of one launch: X (C, n d), state (C, 4),
    times (C,) and done (C,) are device arrays, updated in place; the parameters are the host
    NamedTuples (Dynamics or SphereDynamics, Schedule, EventArrays). ``scratch``: a
    :class:`Scratch` of C chains."""
    with warnings.catch_warnings():
        # a block per chain or per few chains: a run of few chains has a small grid by design
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        for _, kernel, shape, args in launch(
            X, state, dyn, sched, t0, nsteps, ev, times, done, scratch
        ):
            kernel[shape](*args)
