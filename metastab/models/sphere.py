"""The attention dynamics on the unit sphere S^{d-1}, as frozen validated descriptions
(docs: models#models-sphere).

Tokens are unit vectors (LayerNorm); scores are s_ij = <B x_i, x_j> as for every model of the
package, so the <Q x_i, K x_j> of [GLPR] (Geshkovski, Letrouit, Polyanskiy, Rigollet, *A
mathematical perspective on Transformers*, arXiv 2312.10794) is B = KᵀQ; V is the value matrix
and N(y) = y / |y|. Initial configurations must lie on the sphere: |x_i| within
:data:`SPHERE_TOL` of 1, or the run is refused (nothing is normalised silently).

- :class:`SphereFlow`: the deterministic dynamics (SA) / (USA): post-LN layers, RK4, and the
  normalisation schemes of [KGPR] (pre-LN, Mix-LN, peri-LN, nGPT, LN-scaling).
- :class:`SphereChain`: the finite-temperature chain with LayerNorm.
- :class:`NoisySphere`: the noisy (USA) transformer, the flow's drift plus Brownian motion on
  the sphere.

Initial configurations on the sphere are in :mod:`metastab.setups.sphere`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .._validate import matrix, real
from ..exceptions import StepSizeWarning
from ..kernels.params import (
    MIX_LN,
    NGPT,
    NOISY_SPHERE,
    PERI_LN,
    POST_LN,
    PRE_LN,
    RK4,
    SOFTMAX,
    SPHERE_CHAIN,
    SPHERE_FLOW,
    UNNORMALIZED,
    Schedule,
    SphereDynamics,
)

__all__ = [
    "SphereFlow",
    "SphereChain",
    "NoisySphere",
    "SPHERE_TOL",
    "ATTENTIONS",
    "SCHEMES",
    "RK4_INTERVAL",
    "NGPT_ALPHA",
    "check_on_sphere",
    "check_step",
]

ATTENTIONS = {"softmax": SOFTMAX, "unnormalized": UNNORMALIZED}
# name -> the kernels' step code (LN-scaling is post-LN's step with decaying sizes: see
# SphereFlow.schedule)
SCHEMES = {
    "post-ln": POST_LN,
    "rk4": RK4,
    "pre-ln": PRE_LN,
    "mix-ln": MIX_LN,
    "peri-ln": PERI_LN,
    "ngpt": NGPT,
    "ln-scaling": POST_LN,
}
# nGPT's α when not given: the value of the authors' simulator simuformer (simuxform.py, the
# "ngpt" branch of SimuXForm.step)
NGPT_ALPHA = 0.2
# the relative slack of Mix-LN's switch: its post-LN layers are those with k dt < τ (1 - 1e-9)
_MIX_SLACK = 1e-9
# Largest | |x_i| - 1 | accepted in an initial configuration: rounding of a float64
# normalisation is ~1e-16, a table written with 10 significant digits ~1e-10.
SPHERE_TOL = 1e-9
# The real stability interval [-c, 0] of classical RK4: its amplification 1 + z + z²/2 + z³/6 +
# z⁴/24 equals 1 at z = -c, the real root of z³ + 4z² + 12z + 24 (c = 2.785...).
RK4_INTERVAL = float(-next(r.real for r in np.roots([1.0, 4.0, 12.0, 24.0]) if abs(r.imag) < 1e-9))
# dt·r below which each scheme is stable (see SphereFlow.stable_dt)
_STABLE = {"post-ln": 1.0, "pre-ln": 2.0, "rk4": RK4_INTERVAL, "peri-ln": 2.0, "ngpt": 1.0}
# log of the largest float64: an (USA) scale e^{β c} beyond it overflows
_LOG_MAX = math.log(np.finfo(np.float64).max)
# SphereFlow's positional options at their defaults (left out of its records: see to_dict)
_POSITIONAL_DEFAULTS = {"strict_causal": False, "alibi": None, "positional_norm": False,
                        "rescale": False}  # fmt: skip


def check_on_sphere(x: np.ndarray) -> None:
    """Refuse a configuration off the unit sphere, naming its first token off it.

    Raises a ValueError naming the first token of ``x`` whose norm is farther than
    :data:`SPHERE_TOL` from 1 (NaN norms included); nothing is normalised silently.

    Parameters
    ----------
    x : ndarray, shape (n, d) or (chains, n, d)
        The configuration(s) to check, as an initial configuration of a sphere model.

    Raises
    ------
    ValueError
        When a token is off the sphere: the message gives its index and norm, and how to fix it.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.models import check_on_sphere
    >>> check_on_sphere(np.array([[1.0, 0.0], [0.6, 0.8]]))
    >>> check_on_sphere(np.array([[1.0, 0.0], [1.0, 1.0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: x0 must lie on the unit sphere (...), got |x0[1]| = 1.41421356237 (normalise ...)
    >>> check_on_sphere(np.array([[1.0, 0.0], [0.6, 0.80000001]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: x0 must lie on ... = 1.000000008 (... x0 = metastab.to_sphere(x0))
    """
    off = first_off_sphere(x, SPHERE_TOL)
    if off is not None:
        where, norm = off
        raise ValueError(
            f"x0 must lie on the unit sphere (| |x_i| - 1 | <= {SPHERE_TOL:g}), got "
            f"|x0{list(where)}| = {norm:.12g} ({_fix(norm)})"
        )


def first_off_sphere(x: np.ndarray, tol: float) -> tuple[tuple[int, ...], float] | None:
    """(index, norm) of the first row of ``x`` whose norm is farther than ``tol`` from 1 (NaN
    norms included), or None."""
    norms = np.sqrt(np.einsum("...k,...k->...", x, x))
    bad = ~(np.abs(norms - 1.0) <= tol)
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return where, float(norms[where])


def _fix(norm: float) -> str:
    """How to get a start onto the sphere: explicitly, by a named call, and only when it is
    there up to the digits it was written with."""
    if abs(norm - 1.0) <= 1e-6:
        return "a start written with fewer digits: x0 = metastab.to_sphere(x0)"
    return "normalise it before the run, or draw it with metastab.setups.sphere"


def _frozen_matrix(value, name: str) -> np.ndarray | None:
    if value is None:
        return None
    a = matrix(name, value)
    a.setflags(write=False)
    return a


def _heads(value) -> np.ndarray | None:
    """Validate ``heads``: a sequence of (B, V) pairs of d×d matrices, as an (H, 2, d, d) array."""
    if value is None:
        return None
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "heads must be a sequence of (B, V) pairs of d×d matrices, got a ragged or "
            "non-numeric value"
        ) from None
    if a.ndim != 4 or a.shape[1] != 2 or a.shape[2] != a.shape[3] or 0 in a.shape:
        raise ValueError(
            f"heads must be a sequence of (B, V) pairs of d×d matrices (shape (H, 2, d, d)), "
            f"got shape {a.shape}"
        )
    if not np.isfinite(a).all():
        raise ValueError("heads must be finite")
    a.setflags(write=False)
    return a


def _choice(name: str, value, options: dict) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r}")
    return value


class _SphereModel:
    """Shared key-query / value handling of the sphere models (a plain class: its annotations
    are declarations, not dataclass fields)."""

    def _validate(self):
        object.__setattr__(self, "beta", real("beta", self.beta, low=0))
        object.__setattr__(self, "B", _frozen_matrix(self.B, "B"))
        object.__setattr__(self, "V", _frozen_matrix(self.V, "V"))

    def head_matrices(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        """(Bs, Vs): the key-query and value matrices of every head as fresh (H, d, d) arrays
        (identity where not given)."""
        heads = getattr(self, "heads", None)
        if heads is not None:
            if heads.shape[2] != d:
                raise ValueError(
                    f"heads must hold {d}×{d} matrices for tokens in R^{d}, got shape {heads.shape}"
                )
            return np.array(heads[:, 0]), np.array(heads[:, 1])
        B = np.eye(d) if self.B is None else matrix("B", self.B, d)
        V = np.eye(d) if self.V is None else matrix("V", self.V, d)
        return B[None], V[None]

    def key_query(self, d: int) -> np.ndarray:
        """B (of the first head) as a fresh d×d array (identity when not given): the matrix that
        events and score checks read."""
        return self.head_matrices(d)[0][0]

    def kernel_params(self, d: int) -> SphereDynamics:
        """The model's parameters as the sphere kernels take them (fresh writeable arrays)."""
        Bs, Vs = self.head_matrices(d)
        eye = np.eye(d)
        return SphereDynamics(
            self.code,
            Bs,
            Vs,
            float(self.beta),
            ATTENTIONS[getattr(self, "attention", "softmax")],
            SCHEMES[getattr(self, "scheme", "post-ln")],
            bool(getattr(self, "causal", False)),
            bool(getattr(self, "strict_causal", False)),
            float(getattr(self, "alibi", None) or 0.0),
            bool(getattr(self, "positional_norm", False)),
            1.0 if getattr(self, "rescale", False) else 0.0,
            bool((Bs == eye).all()),
            bool((Vs == eye).all()),
        )

    def schedule(self, t0: int, nsteps: int) -> Schedule:
        """The constant step (dt of the flow, γ of the chain) in the kernels' convention."""
        return Schedule(np.array([self.step]), np.zeros(1))

    has_schedule = False

    def to_dict(self) -> dict:
        out = {"kind": self.kind}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = value.tolist() if isinstance(value, np.ndarray) else value
        return out

    # declared by each subclass
    kind: ClassVar[str]
    code: ClassVar[int]
    __dataclass_fields__: ClassVar[dict]
    beta: float
    B: np.ndarray | None
    V: np.ndarray | None

    @property
    def step(self) -> float:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class SphereFlow(_SphereModel):
    """Deterministic attention dynamics on S^{d-1} (docs: models#eq-sa: (SA), (USA),
    post-LN, RK4).

    The attention output of token i is Attn(x)_i = Σ_h V_h Σ_j w^h_ij x_j, summed over the heads
    (one head (B, V) unless ``heads`` is given), with w_ij = e^{β<B x_i, x_j>} / Z_i:
    Z_i = Σ_k e^{β<B x_i, x_k>} for ``attention="softmax"`` ([GLPR] eq. (SA)) and Z_i = n for
    ``"unnormalized"`` ([GLPR] eq. (USA)); with ``causal`` token i attends to j ≤ i only (Z_i
    summed over those j; still n for (USA)), with ``strict_causal`` too to j < i only.

    Positional biases (docs: models#sphere-positional), as in the causal ALiBi particle system of
    Duerinckx, Geshkovski, Rossi (*Kinetic theory for Transformers and the lost-in-the-middle
    phenomenon*, arXiv 2605.09213, and their script ``generate_alibi_particle_circle_dynamics.py``):
    ``alibi=λ`` multiplies each weight by a_ij = e^{−(λ/n) abs(i − j)} (the logit bias
    −(λ/n) abs(i − j) of ALiBi, not multiplied by β; over a causal mask abs(i − j) = i − j),
    inside Z_i for softmax;
    ``positional_norm`` sets (USA)'s Z_i = Σ_j a_ij over the attended j (a_ij = 1 without
    ``alibi``: the number of attended tokens) instead of n. Their system is ``causal=True,
    strict_causal=True, attention="unnormalized", positional_norm=True, alibi=λ``. Under a strict
    mask token 0 attends to none: Attn(x)_0 = 0, so it stays where it is (their convention).
    ``rescale`` multiplies the (USA) field by e^{−β} (w_ij = a_ij e^{β(<B x_i, x_j> − 1)} / Z_i,
    the field of the GKPR staircase scripts): the time change t → e^{β} t of (USA), which runs
    at any β, where the unscaled weights e^{β c} overflow float64 beyond β c ≈ 709.78 (such a run
    is refused).

    - ``scheme="post-ln"``: x_i ← N(x_i + dt Attn(x)_i), one transformer layer with the residual
      added before LayerNorm, as in the authors' scripts (dt = 0.1 there); it converges to the ODE
      as dt → 0. The residual adds Attn itself, not its projection.
    - ``scheme="rk4"``: one classical Runge-Kutta step of ẋ_i = P⊥_{x_i} Attn(x)_i
      (P⊥_x y = y − <x, y> x) of size dt, then every token is renormalised: fourth order in dt
      for (SA) / (USA).
    - ``scheme="pre-ln"``: x_i ← x_i + dt Attn(N(x))_i, LayerNorm before attention and the
      residual stream not renormalised, so the tokens leave the sphere (x0 must still lie on
      it): the forward Euler step of [KGPR] Pre-LN, ẋ_i = Attn(N(x))_i, whose polar form
      x_i = r_i θ_i is (NA) below with s_i = r_i, ṙ_i = <θ_i, A_i>.

    The schemes of [KGPR] (Karagodin, Ge, Polyanskiy, Rigollet, *Normalization in attention
    dynamics*, NeurIPS 2025, arXiv 2510.22026) share the normalised attention dynamics (NA),
    θ̇_i = (1 / s_i) P⊥_{θ_i} A_i(θ), A_i = Attn(θ)_i, x_i = r_i θ_i, with each scheme's speed
    factor s_i and radius ([KGPR] Tables 1 and 2); post-LN has s_i = 1, pre-LN s_i = r_i.
    Each step below is one layer of weight dt (this package's reading of the discrete forms):

    - ``"peri-ln"``: x_i ← x_i + dt N(Attn(N(x))_i) (LayerNorm before and after attention):
      ẋ_i = N(A_i), s_i = r_i ‖A_i‖, ṙ_i = <θ_i, A_i> / ‖A_i‖; the radius is in the state.
    - ``"mix-ln"``: post-LN for the layers k with k dt < τ (``tau``; Mix-LN's first layers),
      pre-LN after: s_i = 1 for t < τ, r_i after (r_i = 1 up to τ).
    - ``"ngpt"``: x_i ← N(x_i + dt α N(Attn(x)_i)) (``alpha``, nGPT's step α_t, constant here):
      s_i = ‖A_i‖ / α, on the sphere.
    - ``"ln-scaling"``: x_i ← N(x_i + dt_k Attn(x)_i), dt_k = dt / √(1 + k dt) at layer k (the
      residual scaled by the square root of depth): s_i = √(1 + t), on the sphere.

    Parameters
    ----------
    beta : float >= 0
        The inverse temperature of the attention weights e^{β<B x_i, x_j>}.
    dt : float > 0
        The step (the layer's weight of the residual branch, or the RK4 time step).
    B, V : d×d arrays, optional
        Key-query (scores <B x_i, x_j>, i.e. B = KᵀQ) and value matrices; identity by default.
    attention : {"softmax", "unnormalized"}
        The normaliser Z_i: the softmax sum ((SA), default) or n ((USA)).
    scheme : {"post-ln", "rk4", "pre-ln", "mix-ln", "peri-ln", "ngpt", "ln-scaling"}
        The discretisation (the list above; default "post-ln").
    causal : bool
        Token i attends to j <= i only (default False).
    heads : sequence of (B, V) pairs, optional
        Several heads whose outputs add (then ``B`` and ``V`` must be None).
    strict_causal : bool
        With ``causal``: token i attends to j < i.
    alibi : float >= 0, optional
        The ALiBi slope λ; None: no positional weights (λ = 0 gives the same bits).
    positional_norm : bool
        With ``attention="unnormalized"``: Z_i = Σ_j a_ij over the attended j, not n.
    rescale : bool
        With ``attention="unnormalized"``: the field times e^{−β} (time t → e^{β} t).
    alpha : float > 0
        nGPT's α (``scheme="ngpt"`` only): default :data:`NGPT_ALPHA` = 0.2, the value of the
        authors' simulator.
    tau : float >= 0
        Mix-LN's switch time τ (``scheme="mix-ln"``, which needs it): the layers that start
        before τ are post-LN (k dt < τ up to a relative 1e-9), the rest pre-LN.

    See Also
    --------
    SphereChain : the finite-temperature chain on the sphere.
    NoisySphere : the flow's drift plus Brownian motion.

    Examples
    --------
    >>> import metastab as ms
    >>> m = ms.SphereFlow(beta=1.0, dt=0.1)
    >>> m.kind, m.scheme, m.attention
    ('sphere-flow', 'post-ln', 'softmax')
    >>> x0 = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]
    >>> ms.simulate(m, x0, steps=20).final.shape
    (1, 3, 2)
    """

    beta: float
    dt: float
    B: np.ndarray | None = field(default=None, repr=False)
    V: np.ndarray | None = field(default=None, repr=False)
    attention: str = "softmax"
    scheme: str = "post-ln"
    causal: bool = False
    heads: np.ndarray | None = field(default=None, repr=False)
    strict_causal: bool = False
    alibi: float | None = None
    positional_norm: bool = False
    rescale: bool = False
    alpha: float = NGPT_ALPHA
    tau: float | None = None
    kind = "sphere-flow"
    code = SPHERE_FLOW

    def __post_init__(self):
        self._validate()
        object.__setattr__(self, "dt", real("dt", self.dt, low=0, low_open=True))
        _choice("attention", self.attention, ATTENTIONS)
        _choice("scheme", self.scheme, SCHEMES)
        for name in ("causal", "strict_causal", "positional_norm", "rescale"):
            value = getattr(self, name)
            if value is not True and value is not False:
                raise ValueError(f"{name} must be True or False, got {value!r}")
        if self.strict_causal and not self.causal:
            raise ValueError("strict_causal=True needs causal=True (a strict causal mask)")
        if self.strict_causal and self.scheme in ("peri-ln", "ngpt"):
            raise ValueError(
                f"scheme={self.scheme!r} normalises each token's attention output, and under "
                f"strict_causal=True token 0 attends to no token: its output is 0, whose "
                f"normalisation is undefined"
            )
        if self.alibi is not None:
            object.__setattr__(self, "alibi", real("alibi", self.alibi, low=0))
        for name in ("positional_norm", "rescale"):
            if getattr(self, name) and self.attention != "unnormalized":
                raise ValueError(
                    f"{name}=True needs attention='unnormalized' (softmax weights are "
                    f"normalised by their own sum), got attention={self.attention!r}"
                )
        object.__setattr__(self, "heads", _heads(self.heads))
        if self.heads is not None and (self.B is not None or self.V is not None):
            raise ValueError("give heads or B and V, not both")
        object.__setattr__(self, "alpha", real("alpha", self.alpha, low=0, low_open=True))
        if self.scheme != "ngpt" and self.alpha != NGPT_ALPHA:
            raise ValueError(
                f"alpha is nGPT's step (scheme='ngpt'), got alpha={self.alpha!r} with "
                f"scheme={self.scheme!r}"
            )
        if self.scheme == "mix-ln":
            if self.tau is None:
                raise ValueError("scheme='mix-ln' needs tau, the time of its switch to pre-LN")
            object.__setattr__(self, "tau", real("tau", self.tau, low=0))
        elif self.tau is not None:
            raise ValueError(
                f"tau is Mix-LN's switch time (scheme='mix-ln'), got tau={self.tau!r} with "
                f"scheme={self.scheme!r}"
            )

    @property
    def step(self) -> float:
        """The step size: dt."""
        return self.dt

    def to_dict(self) -> dict:
        """The fields, ``alpha`` and ``tau`` only for the schemes that have them (nGPT, Mix-LN)
        and the positional options only where they are on: the other models' records (and
        sweep hashes) keep the keys they had before these parameters existed.

        >>> sorted(SphereFlow(1.0, 0.1).to_dict()) == sorted(
        ...     ["kind", "beta", "dt", "B", "V", "attention", "scheme", "causal", "heads"])
        True
        >>> SphereFlow(1.0, 0.1, scheme="ngpt").to_dict()["alpha"]
        0.2
        """
        out = super().to_dict()
        if self.scheme != "ngpt":
            del out["alpha"]
        if self.scheme != "mix-ln":
            del out["tau"]
        for name, default in _POSITIONAL_DEFAULTS.items():
            if out[name] == default:
                del out[name]
        return out

    @property
    def post_layers(self) -> int:
        """Mix-LN's number of post-LN layers: those k with k dt < τ (1 − 1e-9), ⌈τ (1 − 1e-9) /
        dt⌉ (0 for the other schemes)."""
        if self.scheme != "mix-ln" or self.tau is None:
            return 0
        return max(0, math.ceil(self.tau * (1.0 - _MIX_SLACK) / self.dt))

    def schedule(self, t0: int, nsteps: int) -> Schedule:
        """The kernels' sizes and margins of steps t0 .. t0 + nsteps − 1: the constant dt, except
        nGPT's h = dt α, LN-scaling's dt / √(1 + t dt) at step t and Mix-LN's margins (1.0 for
        a post-LN step, 0.0 for a pre-LN one; one entry where all the steps agree).

        >>> SphereFlow(1.0, 0.5, scheme="ln-scaling").schedule(0, 3).sizes.round(4).tolist()
        [0.5, 0.4082, 0.3536]
        >>> SphereFlow(1.0, 0.1, scheme="mix-ln", tau=0.3).schedule(1, 4).margins.tolist()
        [1.0, 1.0, 0.0, 0.0]
        """
        if self.scheme == "ngpt":
            return Schedule(np.array([self.dt * self.alpha]), np.zeros(1))
        if self.scheme == "ln-scaling":
            t = np.arange(t0, t0 + nsteps, dtype=np.float64)
            return Schedule(self.dt / np.sqrt(1.0 + t * self.dt), np.zeros(1))
        if self.scheme == "mix-ln":
            L = self.post_layers
            if t0 + nsteps <= L or t0 >= L:
                margins = np.array([1.0 if t0 < L else 0.0])
            else:
                margins = (np.arange(t0, t0 + nsteps) < L).astype(np.float64)
            return Schedule(np.array([self.dt]), margins)
        return Schedule(np.array([self.dt]), np.zeros(1))

    def stable_dt(self, d: int) -> float:
        """The largest step of the scheme's stable range for tokens in R^d.

        With w_h the weights' sum (1 for softmax; at most e^{β‖B_h‖₂} for (USA), n weights of at
        most e^{β‖B_h‖₂}/n), r = Σ_h ‖V_h‖₂ w_h bounds ‖Attn(x)_i‖ on the sphere and the rate at
        which deviations from a cluster decay (V = I: u̇_i = ū − u_i to first order around a
        cluster, rate 1 for softmax and e^β for (USA)). The explicit schemes are stable on that
        mode while dt·r stays in their real stability interval:

        - ``"pre-ln"`` (forward Euler): dt <= 2 / r;
        - ``"rk4"``: dt <= :data:`RK4_INTERVAL` / r (2.785...).

        A post-LN layer contracts a cluster at any dt (u_i ← (u_i + dt·w·ū)/(1 + dt·w)); its
        limit is the residual: <x_i, x_i + dt Attn_i> >= 1 − dt·m > 0 for dt < 1/m, where m bounds
        −<x_i, Attn_i>, so that no layer turns a token by a quarter turn or more (beyond,
        x_i + dt Attn_i can vanish). m = r in general; with B = V = I the tokens opposite x_i
        (cosine c < 0) weigh e^{βc}/n each under (USA), so m = max_{c in [-1, 0]} −c e^{βc}:
        e^{−β} for β <= 1, 1/(eβ) beyond. Positional weights do not raise these bounds (their
        sum over the attended tokens is at most n, and 1 relative to Z_i with
        ``positional_norm``); ``rescale`` multiplies them by e^{−β}. The bound is summed in log
        space, so that no β overflows it (0 where the step would have to be below the smallest
        float, inf where it may be as large as any).

        >>> round(SphereFlow(1.0, 0.1, scheme="rk4").stable_dt(3), 6)
        2.785294
        >>> round(SphereFlow(2.0, 0.1, scheme="rk4", attention="unnormalized").stable_dt(3), 4)
        0.3769
        >>> round(SphereFlow(2.0, 0.1, attention="unnormalized").stable_dt(3), 4)  # e·β
        5.4366

        The schemes of [KGPR] whose increment is a unit vector N(A_i) move each token by dt
        (peri-LN; at least 1 from the origin, as its radius never shrinks near a cluster) or by
        dt α (nGPT) whatever β, B and V: peri-LN is forward Euler on a mode of rate at most 1,
        dt <= 2; nGPT's layer turns no token by a quarter turn for dt α < 1. LN-scaling's
        largest step is its first, post-LN's dt; Mix-LN meets both post-LN's and pre-LN's.

        >>> SphereFlow(1.0, 0.1, scheme="ngpt", alpha=0.5).stable_dt(3)
        2.0
        """
        if self.scheme == "peri-ln":
            return _STABLE["peri-ln"]
        if self.scheme == "ngpt":
            return _STABLE["ngpt"] / self.alpha
        if self.scheme == "ln-scaling":
            return self._stable_dt("post-ln", d)
        if self.scheme == "mix-ln":
            return min(self._stable_dt("post-ln", d), self._stable_dt("pre-ln", d))
        return self._stable_dt(self.scheme, d)

    def _stable_dt(self, scheme: str, d: int) -> float:
        """:meth:`stable_dt` of post-LN, pre-LN or RK4 (``scheme``) with this model's
        attention."""
        Bs, Vs = self.head_matrices(d)
        usa = self.attention == "unnormalized"
        eye = np.eye(d)
        beta = self.beta
        offset = beta if usa and self.rescale else 0.0  # the field times e^{-offset}
        logs = []  # the log of each head's term of r, or of m for post-LN
        for B, V in zip(Bs, Vs):
            if scheme == "post-ln" and usa and (B == eye).all() and (V == eye).all():
                logs.append((-beta if beta <= 1 else -1.0 - math.log(beta)) - offset)
            elif (norm_v := float(np.linalg.norm(V, 2))) > 0:
                weights = beta * float(np.linalg.norm(B, 2)) - offset if usa else 0.0
                logs.append(math.log(norm_v) + weights)
        if not logs:
            return math.inf
        if offset == 0.0 and max(logs) < _LOG_MAX - 1.0:
            # no term overflows: summed as numbers (the bits of the linear formula)
            bound = 0.0
            for B, V in zip(Bs, Vs):
                if scheme == "post-ln" and usa and (B == eye).all() and (V == eye).all():
                    bound += math.exp(-beta) if beta <= 1 else 1 / (math.e * beta)
                else:
                    weights = math.exp(beta * np.linalg.norm(B, 2)) if usa else 1.0
                    bound += float(np.linalg.norm(V, 2)) * weights
            return _STABLE[scheme] / bound if bound > 0 else math.inf
        log_dt = math.log(_STABLE[scheme]) - float(np.logaddexp.reduce(logs))
        return math.exp(log_dt) if log_dt < _LOG_MAX else math.inf


def check_step(model: SphereFlow | SphereChain | NoisySphere, d: int, stacklevel: int = 2) -> None:
    """Warn when a sphere model's step is beyond its stable range; refuse weights that overflow.

    A :class:`~metastab.exceptions.StepSizeWarning` when a SphereFlow's ``dt`` is beyond its
    scheme's stable range (:meth:`SphereFlow.stable_dt`), or a NoisySphere's beyond its drift's
    (:meth:`NoisySphere.stable_dt`); the chain's γ in (0, 1] always is within its own.
    A ValueError where (USA)'s weights can overflow float64: β‖B_h‖₂ (less β with ``rescale``)
    beyond log(max float64) = 709.78 for some head, ‖B_h‖₂ bounding the scores of unit vectors
    (reached with B = I, where the run would end in a non-finite state).

    Parameters
    ----------
    model : SphereFlow, SphereChain or NoisySphere
        The model to check (a SphereChain always passes).
    d : int
        The dimension of the tokens (the matrices B, V are d×d).
    stacklevel : int
        The warning's stack level, counted from the caller of ``check_step`` (default 2: its
        caller's caller).

    Raises
    ------
    ValueError
        When (USA)'s weights e^{β<B x_i, x_j>} can overflow float64.

    Warns
    -----
    StepSizeWarning
        When the step is beyond the stable range.

    Examples
    --------
    >>> import warnings
    >>> import metastab as ms
    >>> from metastab.models import check_step
    >>> check_step(ms.SphereFlow(beta=1.0, dt=0.1), d=2)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_step(ms.SphereFlow(beta=1.0, dt=10.0), d=2)
    >>> [w.category.__name__ for w in caught]
    ['StepSizeWarning']
    """
    if isinstance(model, NoisySphere):
        if model.attention == "unnormalized":
            top = model.beta * float(np.linalg.norm(model.key_query(d), 2))
            if top > _LOG_MAX:
                raise ValueError(
                    f"attention='unnormalized' at beta = {model.beta:g} weighs tokens by up to "
                    f"e^{top:.6g}, beyond float64 (e^{_LOG_MAX:.5g}): use a smaller beta or B "
                    f"of smaller spectral norm"
                )
        limit = model.stable_dt(d)
        if model.dt > limit:
            warnings.warn(
                f"dt = {model.dt:g} is beyond the stable range of the drift (dt <= "
                f"{limit:.4g} for this K, beta, attention and B, V: see "
                f"NoisySphere.stable_dt): the run may not follow the dynamics; use a smaller dt",
                StepSizeWarning,
                stacklevel=stacklevel + 1,
            )
        return
    if not isinstance(model, SphereFlow):
        return
    if model.attention == "unnormalized":
        Bs = model.head_matrices(d)[0]
        top = model.beta * max(float(np.linalg.norm(B, 2)) for B in Bs)
        exponent = top - model.beta if model.rescale else top
        if exponent > _LOG_MAX:
            raise ValueError(
                f"attention='unnormalized' at beta = {model.beta:g} weighs tokens by up to "
                f"e^{exponent:.6g}, beyond float64 (e^{_LOG_MAX:.5g}): "
                + (
                    "use B of spectral norm at most 1 or a smaller beta"
                    if model.rescale
                    else "use rescale=True, the field times e^(-beta) (a time change "
                    "t -> e^beta t), or a smaller beta"
                )
            )
    limit = model.stable_dt(d)
    if model.dt > limit:
        warnings.warn(
            f"dt = {model.dt:g} is beyond the stable range of scheme {model.scheme!r} "
            f"(dt <= {limit:.4g} for this beta, attention and B, V: "
            f"see SphereFlow.stable_dt): the run may diverge or not follow the flow; use a "
            f"smaller dt",
            StepSizeWarning,
            stacklevel=stacklevel + 1,
        )


@dataclass(frozen=True, eq=False)
class SphereChain(_SphereModel):
    """The finite-temperature attention chain on S^{d-1} (docs: models#eq-sphere-chain).

    Each token i independently picks j with probability softmax_j(β<B x_i, x_j>) (itself included;
    coincident tokens add their probabilities) and moves to N(x_i + γ (V x_j − x_i)); all tokens
    move synchronously. A move that leaves x_i unchanged bit for bit (with V = I: a self-pick or
    a pick of a coincident token) is an exact no-op, so with V = I a configuration of κ distinct
    points is frozen until the first cross pick, with the geometric law of
    docs: models#statements-fw.

    Parameters
    ----------
    beta : float >= 0
        The inverse temperature of the pick probabilities softmax_j(β<B x_i, x_j>).
    gamma : float in (0, 1]
        The step towards the picked token's value V x_j (default 0.1).
    B, V : d×d arrays, optional
        Key-query and value matrices; identity by default.

    See Also
    --------
    SoftmaxChain : the same chain in R^d, without LayerNorm.

    Examples
    --------
    >>> import metastab as ms
    >>> m = ms.SphereChain(beta=10.0, gamma=0.5)
    >>> m.kind
    'sphere-chain'
    >>> x0 = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]
    >>> ms.simulate(m, x0, steps=5, chains=2, rng=0).final.shape
    (2, 3, 2)
    """

    beta: float
    gamma: float = 0.1
    B: np.ndarray | None = field(default=None, repr=False)
    V: np.ndarray | None = field(default=None, repr=False)
    kind = "sphere-chain"
    code = SPHERE_CHAIN

    def __post_init__(self):
        self._validate()
        object.__setattr__(self, "gamma", real("gamma", self.gamma, low=0, high=1, low_open=True))

    @property
    def step(self) -> float:
        """The step size: gamma."""
        return self.gamma


NOISE_ATTENTIONS = ("unnormalized", "softmax")


@dataclass(frozen=True, eq=False)
class NoisySphere(_SphereModel):
    """The noisy attention model on S^{d-1} (docs: models#eq-noisy-sde): the N-particle noisy
    (USA) transformer of Mun & Rosenzweig (*Phase transitions for the noisy transformer model in
    arbitrary dimension*, arXiv 2606.05140; d = 2: arXiv 2604.16288), in the package's
    normalisation (:mod:`metastab.theory.noisy`),

        dX_i = 2K P⊥_{X_i}( (1/N) Σ_j e^{β<B X_i, X_j>} V X_j ) dt + √2 dB_i,

    dB_i independent Brownian motions on the sphere (√2 dB has generator the Laplace–Beltrami
    operator Δ: at K = 0, E<X(t), X(0)> = e^{−(d−1) t}), P⊥_x y = y − <x, y> x. K >= 0 is the
    coupling, the inverse noise level: in the time s = 2K t of (USA) with unit drift the noise
    has variance 1/K per unit time. ``attention="softmax"`` divides by Σ_j e^{β<B X_i, X_j>}
    instead of N ((SA)); the mean-field theory of the (USA) model is
    :mod:`metastab.theory.noisy` (docs: models#noisy-meanfield).

    The step of size dt is projected Euler–Maruyama with renormalisation:

        y_i = x_i + 2K dt · P⊥_{x_i} Attn(x)_i + √(2 dt) · P⊥_{x_i} ξ_i,   x_i ← y_i / ‖y_i‖,

    ξ_i ~ N(0, I_d) independent, drawn from the chain's stream coordinate by coordinate (normal
    q = k n + i is coordinate k of token i) by Box–Muller; Attn(x)_i = (1/N) Σ_j e^{β<B x_i,
    x_j>} V x_j ((USA)) or its softmax form, the drift of :class:`SphereFlow`'s RK4 (projected).
    The renormalisation supplies the Itô drift −(d−1) x dt of Brownian motion on the sphere, so
    the scheme has weak order 1 (measured in tests/models/test_noisy_sphere.py: the error of
    E<x(t), x(0)> halves with dt). Heads, causal masks, positional weights and other schemes
    are not part of this model (its fields have none).

    Parameters
    ----------
    beta : float >= 0
        The inverse temperature of the interaction weights e^{β<B X_i, X_j>}.
    K : float >= 0
        The coupling (inverse noise): K = 0 is Brownian motion on the sphere.
    dt : float > 0
        The Euler–Maruyama time step.
    B, V : d×d arrays, optional
        Key-query (scores <B x_i, x_j>) and value matrices; identity by default.
    attention : {"unnormalized", "softmax"}
        (USA), the papers' model (default), or (SA).

    See Also
    --------
    SphereFlow : the deterministic flow (K → ∞ in the time s = 2K t).
    metastab.theory.critical_coupling : the mean-field phase transition in K.

    Examples
    --------
    >>> import metastab as ms
    >>> m = ms.NoisySphere(beta=1.0, K=2.0, dt=0.01)
    >>> m.kind, m.attention
    ('noisy-sphere', 'unnormalized')
    >>> x0 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    >>> ms.simulate(m, x0, steps=10, chains=2, rng=0).final.shape
    (2, 3, 3)
    >>> ms.NoisySphere(1.0, -1.0, 0.01)
    Traceback (most recent call last):
    ...
    ValueError: K must be >= 0, got -1.0
    """

    beta: float
    K: float
    dt: float
    B: np.ndarray | None = field(default=None, repr=False)
    V: np.ndarray | None = field(default=None, repr=False)
    attention: str = "unnormalized"
    kind = "noisy-sphere"
    code = NOISY_SPHERE

    def __post_init__(self):
        self._validate()
        object.__setattr__(self, "K", real("K", self.K, low=0))
        object.__setattr__(self, "dt", real("dt", self.dt, low=0, low_open=True))
        _choice("attention", self.attention, dict.fromkeys(NOISE_ATTENTIONS))

    @property
    def step(self) -> float:
        """The step size: dt."""
        return self.dt

    def kernel_params(self, d: int) -> SphereDynamics:
        """The sphere kernels' parameters, with the coupling K."""
        return super().kernel_params(d)._replace(coupling=float(self.K))

    def stable_dt(self, d: int) -> float:
        """The largest dt of the drift's stable range for tokens in R^d: the drift
        2K P⊥ Attn(x) relaxes deviations from a cluster at rate at most 2K r, with
        r = ‖V‖₂ e^{β‖B‖₂} for (USA) and ‖V‖₂ for softmax (:meth:`SphereFlow.stable_dt`), and
        its projected Euler step is stable for dt·2K r <= 2: dt <= 1 / (K r) (inf at K = 0 or
        V = 0; summed in log space, so no β overflows it).

        >>> round(NoisySphere(1.0, 2.0, 0.01).stable_dt(3), 6)   # 1 / (2 e)
        0.18394
        >>> NoisySphere(1.0, 0.0, 0.01).stable_dt(3)
        inf
        """
        norm_v = float(np.linalg.norm(self.V, 2)) if self.V is not None else 1.0
        if self.K == 0.0 or norm_v == 0.0:
            return math.inf
        weights = 0.0
        if self.attention == "unnormalized":
            norm_b = float(np.linalg.norm(self.B, 2)) if self.B is not None else 1.0
            weights = self.beta * norm_b
        log_dt = -math.log(self.K) - math.log(norm_v) - weights
        return math.exp(log_dt) if log_dt < _LOG_MAX else math.inf


SPHERE_MODELS = (SphereFlow, SphereChain, NoisySphere)
