"""Kind codes, event codes and the NamedTuples in which parameters travel to the kernels.

Pure Python (no numba): the spec objects of :mod:`metastab.models` and :mod:`metastab.events` build
these tuples, and :mod:`metastab.kernels.reference` shares the codes.
"""

from typing import NamedTuple

import numpy as np

# numba options of every cached kernel; no_cfunc_wrapper: numba would also compile a C wrapper of
# every function, for passing it as a first-class function value, which no kernel does (a cold
# first SoftmaxChain run: 15.3 -> 13.8 s of CPU, alternating runs)
JIT = dict(cache=True, nogil=True, error_model="numpy", _nrt=True, no_cfunc_wrapper=True)
# The kernels that allocate nothing compile without numba's reference counting: every call
# otherwise increments and decrements each array argument's count (atomic operations), which
# cost SA_P's per-step calls a sixth of its time; compiled on their own rather than inlined into
# their callers (numba's IR inlining copied and retyped them at every call site: the largest part
# of the cold compile).
JIT_NO_NRT = dict(JIT, _nrt=False)

# Model codes (metastab.models maps its classes onto these).
CHAIN, FLOW, HARDMAX, LOCALMAX = 0, 1, 2, 3
# Localmax neighbour rules (metastab.models.NEIGHBOUR_RULES maps names onto these).
ADDITIVE, RELATIVE = 0, 1
# The models on the unit sphere (metastab.models.sphere), their attention weights and flow schemes.
SPHERE_FLOW, SPHERE_CHAIN = 10, 11
# the noisy (USA) transformer on the sphere: the flow's drift plus Brownian motion
# (metastab.models.sphere.NoisySphere)
NOISY_SPHERE = 12
SOFTMAX, UNNORMALIZED = 0, 1
POST_LN, RK4, PRE_LN = 0, 1, 2
# the further schemes of Karagodin et al., Normalization in attention dynamics (arXiv 2510.22026):
# Peri-LN and nGPT have steps of their own; Mix-LN takes post-LN's or pre-LN's step by the
# schedule's margin of each step (1.0: post-LN); LN-scaling is post-LN's step with the schedule's
# sizes dt / sqrt(1 + t dt) (see metastab.models.sphere.SphereFlow.schedule)
PERI_LN, NGPT, MIX_LN = 3, 4, 5
# The largest β (max_j s_jj − min_j s_jj) for which the sphere flow with B = I shifts every score
# by the one constant max_j s_jj (cpu.sphere_steps._common_shift and its twins): each diagonal
# weight e^{β (s_ii − shift)} >= e^{-64} then keeps every total far from 0.
SHIFT_SPREAD = 64.0
# Stopping events (metastab.events maps its specs onto these).
NO_EVENT, LEAVE_BALL, LEAVE_HULL, REACH, COLLAPSE, CLUSTERS = 0, 1, 2, 3, 4, 5
# The sphere models' order-parameter events (metastab.events.LeaveUniform, ReachUniform): m_1 or
# m_2 at least (LEAVE_UNIFORM_*) or at most (REACH_UNIFORM_*) the level ev.scalar
LEAVE_UNIFORM_1, LEAVE_UNIFORM_2, REACH_UNIFORM_1, REACH_UNIFORM_2 = 6, 7, 8, 9


# Parameters travel to the drivers as NamedTuples (numba types them as heterogeneous tuples and
# compiles one driver for all models and events); the spec objects of metastab.models and
# metastab.events build them.
class Dynamics(NamedTuple):
    """The time-independent parameters of a model (``model.kernel_params(d)``)."""

    model_code: int  # CHAIN, FLOW, HARDMAX or LOCALMAX
    B: np.ndarray  # (d, d) key-query matrix
    beta: float  # inverse temperature (inf for HARDMAX and LOCALMAX)
    P: np.ndarray  # (d, d) step matrix, used when use_P
    use_P: bool
    by_point: bool  # HARDMAX: average over distinct leader points
    tol: float  # HARDMAX: relative tie tolerance
    rule: int  # LOCALMAX: ADDITIVE or RELATIVE


class SphereDynamics(NamedTuple):
    """The time-independent parameters of a sphere model (``model.kernel_params(d)``)."""

    model_code: int  # SPHERE_FLOW, SPHERE_CHAIN or NOISY_SPHERE
    Bs: np.ndarray  # (H, d, d) key-query matrices, one per head
    Vs: np.ndarray  # (H, d, d) value matrices
    beta: float
    attention: int  # SOFTMAX or UNNORMALIZED
    scheme: int  # the step: POST_LN, RK4, PRE_LN, PERI_LN, NGPT or MIX_LN
    causal: bool  # token i attends to j <= i only
    strict: bool  # with causal, j < i only (token 0 attends to none: Attn(x)_0 = 0)
    alibi: float  # ALiBi slope λ: weights times a_ij = e^{-(λ/n)|i - j|}; 0.0: none (a = 1)
    positional: bool  # UNNORMALIZED: Z_i = Σ_j a_ij over the attended j, not n
    offset: float  # UNNORMALIZED: the scale e^{β (c_i - offset)} / Z_i (1.0: the e^{-β} field)
    plain_B: bool  # every B is the identity: B x_i is x_i
    plain_V: bool  # every V is the identity: V y is y
    coupling: float = 0.0  # NOISY_SPHERE: K, the drift 2K P⊥(Attn) beside the noise √2 dB


class Schedule(NamedTuple):
    """Per-step parameters of steps t0 .. t0 + k - 1 (``model.schedule(t0, k)``): one entry
    for a constant."""

    sizes: np.ndarray  # step sizes: γ, or the flow's dt (one unused 1.0 with a step matrix)
    margins: np.ndarray  # LOCALMAX margins r_t; the sphere flow's Mix-LN: 1.0 for a post-LN step,
    # 0.0 for a pre-LN one (one unused 0.0 for the other models)


class EventArrays(NamedTuple):
    """The kernel form of a stopping event (``event.compile(x0, B)``; see :func:`event_hit`)."""

    code: int
    centers: np.ndarray  # (1 or C, n, d)
    radii: np.ndarray  # (1 or C, n)
    groups: np.ndarray  # (n,) int64, group labels 0..G-1
    starts: np.ndarray  # (G + 1,) int64
    members: np.ndarray  # (n,) int64, token indices sorted by group
    scalar: float
    # CLUSTERS: stop when the number of clusters is at most ``at_most`` (0: never), and record in
    # levels[c, k - 1] the first time chain c's count was at most k (NaN until then; chains
    # beyond levels.shape[0] record nothing); see metastab.events.Clusters and metastab.track
    at_most: int = 0
    levels: np.ndarray = np.full((0, 1), np.nan)


def no_event(n: int, d: int) -> EventArrays:
    """The event that never holds, for runs of n tokens in R^d."""
    return EventArrays(
        NO_EVENT,
        np.zeros((1, n, d)),
        np.zeros((1, n)),
        np.zeros(n, np.int64),
        np.array([0, n], np.int64),
        np.arange(n, dtype=np.int64),
        0.0,
    )
