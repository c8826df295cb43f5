"""The dynamics, as frozen validated descriptions that hold no behaviour (docs: models#models-rd).

Scores are s_ij = <B x_i, x_j> for any d×d key-query matrix B (default identity, never assumed
symmetric). A step moves token i towards its target by x_i + γ (target_i − x_i), where γ is

- a scalar in (0, 1],
- a d×d step matrix P = (I + V)^{-1} V for a general value matrix V (see :func:`step_matrix`), or
- a schedule γ_t: a 1-D array indexed by the step (t = 0, 1, ...) or a callable t -> γ_t.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .._validate import matrix, real
from ..kernels import params as _params

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["SoftmaxChain", "SoftmaxFlow", "Hardmax", "Localmax", "NEIGHBOUR_RULES", "step_matrix"]

TIE_MODES = ("index", "point")
# Localmax neighbour rules: name -> kernel code (see kernels.cpu.euclidean_steps.neighbour_cut).
NEIGHBOUR_RULES = {"additive": _params.ADDITIVE, "relative": _params.RELATIVE}


def _frozen_matrix(value, name: str) -> np.ndarray | None:
    if value is None:
        return None
    a = matrix(name, value)
    a.setflags(write=False)
    return a


def _step(value, name: str = "gamma") -> float:
    return real(name, value, low=0, high=1, low_open=True)


def _gamma(value):
    """Validate gamma: scalar in (0, 1], d×d step matrix, 1-D schedule or callable."""
    if callable(value):
        return value
    if isinstance(value, str) or np.ndim(value) == 0:
        return _step(value)
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"gamma must be a number, schedule, step matrix or callable, got {value!r}"
        ) from None
    if a.ndim == 1:
        if a.size == 0:
            raise ValueError("gamma schedule must not be empty")
        bad = ~((a > 0) & (a <= 1))
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            raise ValueError(f"gamma schedule must lie in (0, 1], got gamma[{t}] = {a[t]!r}")
        a.setflags(write=False)
        return a
    return _frozen_matrix(a, "gamma (step matrix)")


def step_matrix(V: ArrayLike) -> np.ndarray:
    """The step matrix P = (I + V)^{-1} V of a general value matrix V.

    The implicit step x_i ← x_i + V (target_i − x_i') solved for x_i' gives
    x_i' = x_i + P (target_i − x_i): pass P as a model's
    ``gamma`` (docs: models#model-value-matrix).

    Parameters
    ----------
    V : array_like, shape (d, d)
        The value matrix; I + V must be invertible.

    Returns
    -------
    P : ndarray, shape (d, d)
        The step matrix (I + V)^{-1} V.

    Raises
    ------
    ValueError
        When V is not a finite square matrix, or I + V is singular.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import step_matrix
    >>> step_matrix(np.eye(2) * 0.5)   # V = I/2 gives the scalar step 1/3
    array([[0.33333333, 0.        ],
           [0.        , 0.33333333]])
    """
    V = matrix("V", V)
    eye = np.eye(V.shape[0])
    try:
        return np.linalg.solve(eye + V, V)
    except np.linalg.LinAlgError:
        raise ValueError("V: I + V is singular, so P = (I + V)^{-1} V does not exist") from None


class _Declared:
    """What every model declares, as dataclass fields or (beta of the argmax models) class
    attributes; annotated on this plain class so that they are not fields of _Model."""

    gamma: float | np.ndarray | Callable
    B: np.ndarray | None
    beta: float
    kind: ClassVar[str]
    code: ClassVar[int]


@dataclass(frozen=True, eq=False)
class _Model(_Declared):
    """Shared step-size and key-query handling of every dynamics."""

    def _validate(self):
        object.__setattr__(self, "gamma", _gamma(self.gamma))
        object.__setattr__(self, "B", _frozen_matrix(self.B, "B"))

    @property
    def has_step_matrix(self) -> bool:
        """Whether gamma is a d×d step matrix."""
        return isinstance(self.gamma, np.ndarray) and self.gamma.ndim == 2

    @property
    def has_schedule(self) -> bool:
        """Whether gamma varies with the step (a 1-D schedule or a callable)."""
        return callable(self.gamma) or (isinstance(self.gamma, np.ndarray) and self.gamma.ndim == 1)

    def key_query(self, d: int) -> np.ndarray:
        """B as a fresh d×d float64 array (identity when B is None)."""
        return np.eye(d) if self.B is None else matrix("B", self.B, d)

    def kernel_params(self, d: int) -> _params.Dynamics:
        """The model's time-independent parameters in R^d as the kernels take them (fresh
        writeable arrays: read-only ones would make numba compile a second version)."""
        if self.has_step_matrix:
            P, use_P = matrix("gamma (step matrix)", self.gamma, d), True
        else:
            P, use_P = np.eye(d), False
        return _params.Dynamics(
            self.code,
            self.key_query(d),
            float(self.beta),
            P,
            use_P,
            self._by_point,
            float(self._tol),
            self._rule,
        )

    # what kernel_params sends for a parameter the model does not have (the argmax models set
    # beta = inf as a class attribute)
    @property
    def _by_point(self) -> bool:
        return False

    @property
    def _tol(self) -> float:
        return 0.0

    @property
    def _rule(self) -> int:
        return 0

    def schedule(self, t0: int, nsteps: int) -> _params.Schedule:
        """Step sizes and margins of steps t0 .. t0 + nsteps - 1 in the kernels' convention."""
        return _params.Schedule(self._gammas(t0, nsteps), self.margin_arrays(t0, nsteps))

    def _gammas(self, t0: int, nsteps: int) -> np.ndarray:
        """γ_t for steps t0 .. t0 + nsteps - 1 (one entry for a constant; one unused 1.0 with a
        step matrix), a fresh array."""
        if self.has_step_matrix:
            return np.ones(1)
        if callable(self.gamma):
            return np.array([_step(self.gamma(t), f"gamma({t})") for t in range(t0, t0 + nsteps)])
        if isinstance(self.gamma, np.ndarray):
            if t0 + nsteps > self.gamma.size:
                raise ValueError(
                    f"gamma schedule has {self.gamma.size} entries, but "
                    f"{t0 + nsteps} steps were asked for"
                )
            return np.array(self.gamma[t0 : t0 + nsteps])
        return np.array([self.gamma])

    def margin_arrays(self, t0: int, nsteps: int) -> np.ndarray:
        """Localmax margins r_t for steps t0 .. t0 + nsteps - 1 in the kernels' convention (one
        entry for a constant); models without a margin return one unused zero."""
        return np.zeros(1)

    def to_dict(self) -> dict:
        out = {"kind": self.kind}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if callable(value):
                value = f"callable:{getattr(value, '__name__', repr(value))}"
            elif isinstance(value, np.ndarray):
                value = value.tolist()
            out[name] = value
        return out


@dataclass(frozen=True, eq=False)
class SoftmaxChain(_Model):
    """SA_P, the finite-β self-attention Markov chain of [FW] §5, eq. (SA_ℙ).

    Each token i draws j with probability softmax_j(β s_ij) (itself included) and moves to
    x_i + γ (x_j − x_i) (docs: models#eq-sa-p). Joint law: tokens draw independently within a
    step, and the update is synchronous. Coincident tokens add their probabilities; a self-pick
    is an exact no-op.

    Parameters
    ----------
    beta : float >= 0
        The inverse temperature of the pick probabilities softmax_j(β s_ij).
    gamma : float in (0, 1], d×d step matrix, 1-D schedule or callable t -> γ_t
        The step (default 0.1; see the module docstring and :func:`step_matrix`).
    B : d×d array, optional
        Key-query matrix of the scores s_ij = <B x_i, x_j> (identity by default; never assumed
        symmetric).

    See Also
    --------
    SoftmaxFlow : the deterministic layer, the chain's mean step.
    Hardmax : the β → ∞ limit.

    Examples
    --------
    >>> import metastab as ms
    >>> m = ms.SoftmaxChain(beta=20.0, gamma=0.1)
    >>> m.kind
    'softmax-chain'
    >>> x0 = ms.regular_polygon(4).vertices
    >>> ms.simulate(m, x0, steps=5, chains=3, rng=0).final.shape
    (3, 4, 2)
    """

    beta: float
    gamma: float | np.ndarray | Callable = 0.1
    B: np.ndarray | None = field(default=None, repr=False)
    kind = "softmax-chain"
    code = _params.CHAIN

    def __post_init__(self):
        object.__setattr__(self, "beta", real("beta", self.beta, low=0))
        self._validate()


@dataclass(frozen=True, eq=False)
class SoftmaxFlow(_Model):
    """SA_β, the deterministic softmax layer of [FW] §5, eq. (SA_β).

    x_i ← x_i + γ (Σ_j softmax_j(β s_ij) x_j − x_i) (docs: models#eq-sa-beta): the mean step of
    :class:`SoftmaxChain`.

    Parameters
    ----------
    beta : float >= 0
        The inverse temperature of the attention weights softmax_j(β s_ij).
    gamma : float in (0, 1], d×d step matrix, 1-D schedule or callable t -> γ_t
        The step (default 0.1; see the module docstring and :func:`step_matrix`).
    B : d×d array, optional
        Key-query matrix of the scores s_ij = <B x_i, x_j> (identity by default; never assumed
        symmetric).

    Examples
    --------
    >>> import metastab as ms
    >>> m = ms.SoftmaxFlow(beta=5.0, gamma=0.5)
    >>> m.kind
    'softmax-flow'
    >>> x0 = ms.regular_polygon(4).vertices
    >>> ms.simulate(m, x0, steps=5).final.shape
    (1, 4, 2)
    """

    beta: float
    gamma: float | np.ndarray | Callable = 0.1
    B: np.ndarray | None = field(default=None, repr=False)
    kind = "softmax-flow"
    code = _params.FLOW

    def __post_init__(self):
        object.__setattr__(self, "beta", real("beta", self.beta, low=0))
        self._validate()


@dataclass(frozen=True, eq=False)
class Hardmax(_Model):
    """SA_∞, the hardmax / Frank-Wolfe step of [FW] §1, eq. (SA_∞).

    Leaders ``L_i = {j : s_ij ≥ max_k s_ik − tol · max_k |s_ik|}`` (relative tie tolerance;
    exact float equality is fragile); x_i ← x_i + γ (mean_{j in L_i} x_j − x_i)
    (docs: models#eq-hardmax).
    ``ties="index"`` averages over leader indices ([AFZ]'s code), ``ties="point"`` over the
    distinct leader points ([FW]'s set reading; two leaders are one point when their max-norm
    distance is ≤ tol times their size).
    With B = −B_* this is a Frank-Wolfe step for J(x) = ½<B_* x, x> over the current hull; [AFZ]'s
    hardmax is B = A ≻ 0, γ = α/(1+α); explicit Euler for the hardmax ODE is γ = Δt.

    Parameters
    ----------
    gamma : float in (0, 1], d×d step matrix, 1-D schedule or callable t -> γ_t
        The step (default 0.1; see the module docstring and :func:`step_matrix`).
    B : d×d array, optional
        Key-query matrix of the scores s_ij = <B x_i, x_j> (identity by default; never assumed
        symmetric).
    ties : {"index", "point"}
        Average over the leader indices (default) or over the distinct leader points.
    tol : float in [0, 1)
        The relative tie tolerance (default 1e-12).

    See Also
    --------
    Localmax : the relaxed argmax, equal bit for bit to ``ties="index", tol=0`` at r = 0.

    Examples
    --------
    >>> import metastab as ms
    >>> m = ms.Hardmax(gamma=1/3, ties="point")
    >>> m.ties
    'point'
    >>> x0 = ms.regular_polygon(5).vertices
    >>> run = ms.simulate(m, x0, steps=3)
    >>> bool(abs(run.final - x0).max() < 1e-12)   # every vertex leads itself: a fixed point
    True
    """

    gamma: float | np.ndarray | Callable = 0.1
    B: np.ndarray | None = field(default=None, repr=False)
    ties: str = "index"
    tol: float = 1e-12
    kind = "hardmax"
    code = _params.HARDMAX
    beta = math.inf

    @property
    def _by_point(self) -> bool:
        return self.ties == "point"

    @property
    def _tol(self) -> float:
        return self.tol

    def __post_init__(self):
        if self.ties not in TIE_MODES:
            raise ValueError(f"ties must be one of {TIE_MODES}, got {self.ties!r}")
        object.__setattr__(self, "tol", real("tol", self.tol, low=0, high=1, high_open=True))
        self._validate()


def _margin(value):
    """Validate the localmax margin r: a number >= 0, a 1-D schedule of them, or a callable."""
    if callable(value):
        return value
    if isinstance(value, str) or np.ndim(value) == 0:
        return real("r", value, low=0)
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"r must be a number >= 0, a 1-D schedule or a callable, got {value!r}"
        ) from None
    if a.ndim != 1:
        raise ValueError(
            f"r must be a number >= 0, a 1-D schedule or a callable, "
            f"got an array of shape {a.shape}"
        )
    if a.size == 0:
        raise ValueError("r schedule must not be empty")
    bad = ~(np.isfinite(a) & (a >= 0))
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        raise ValueError(f"r schedule must be finite and >= 0, got r[{t}] = {float(a[t])!r}")
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Localmax(_Model):
    """Localmax dynamics: uniform attention over a relaxed argmax (docs: models#eq-localmax, [LM]).

    This is this package's reading of the published abstract of [LM] (Cimetière, Chiri,
    Gharesifard, arXiv:2509.15958: uniform weights over a neighbour set, a step parameter, and an
    alignment-sensitivity parameter r ≥ 0 that relaxes the argmax, r → 0 giving hardmax, r possibly
    varying in time), not a verified transcription of the paper's equations. Neighbour sets, with
    s_ij = <B x_i, x_j>:

    - ``neighbours="additive"``: N_i^t = {j : s_ij ≥ max_k s_ik − r_t};
    - ``neighbours="relative"``: ``N_i^t = {j : s_ij ≥ max_k s_ik − r_t |max_k s_ik|}``;

    and the step x_i ← x_i + γ (mean_{j in N_i^t} x_j − x_i), the mean over indices (uniform
    weights; coincident tokens count once each). Token i is a *leader* at step t when i ∈ N_i^t.
    With r = 0 both rules are hardmax with index-averaged ties and no tolerance: the same
    arithmetic as ``Hardmax(gamma, B, ties="index", tol=0)``, equal bit for bit. As r → ∞ every
    token is everyone's neighbour and the step is uniform averaging, x_i ← x_i + γ (x̄ − x_i).

    Parameters
    ----------
    gamma : float in (0, 1], d×d step matrix, 1-D schedule or callable t -> γ_t
        The step, as for every model (see the module docstring).
    r : float >= 0, 1-D array or callable t -> r_t
        The margin: a constant, r_t = r[t] for t = 0, 1, ... (at least as many entries as steps),
        or r_t = r(t), checked (finite, >= 0) when the step is taken.
    B : d×d array, optional
        Key-query matrix (identity by default; never assumed symmetric).
    neighbours : {"additive", "relative"}
        The neighbour rule (a name of ``NEIGHBOUR_RULES``; default "additive").

    Examples
    --------
    >>> import metastab as ms
    >>> m = ms.Localmax(gamma=1/3, r=0.1)
    >>> m.kind, m.neighbours
    ('localmax', 'additive')
    >>> ms.Localmax(gamma=1/3, r=lambda t: 0.5 ** t).margin_arrays(0, 3)
    array([1.  , 0.5 , 0.25])
    """

    gamma: float | np.ndarray | Callable
    r: float | np.ndarray | Callable
    B: np.ndarray | None = field(default=None, repr=False)
    neighbours: str = "additive"
    kind = "localmax"
    code = _params.LOCALMAX
    beta = math.inf

    def __post_init__(self):
        if self.neighbours not in NEIGHBOUR_RULES:
            raise ValueError(
                f"neighbours must be one of {tuple(NEIGHBOUR_RULES)}, got {self.neighbours!r}"
            )
        object.__setattr__(self, "r", _margin(self.r))
        self._validate()

    @property
    def rule(self) -> int:
        """The kernel code of the neighbour rule."""
        return NEIGHBOUR_RULES[self.neighbours]

    _rule = rule

    @property
    def has_margin_schedule(self) -> bool:
        """Whether r varies with the step (a 1-D schedule or a callable)."""
        return callable(self.r) or isinstance(self.r, np.ndarray)

    def margin_arrays(self, t0: int, nsteps: int) -> np.ndarray:
        """r_t for steps t0 .. t0 + nsteps - 1 (one entry for a constant r), a fresh array."""
        if callable(self.r):
            return np.array([real(f"r({t})", self.r(t), low=0) for t in range(t0, t0 + nsteps)])
        if isinstance(self.r, np.ndarray):
            if t0 + nsteps > self.r.size:
                raise ValueError(
                    f"r schedule has {self.r.size} entries, but {t0 + nsteps} steps were asked for"
                )
            return np.array(self.r[t0 : t0 + nsteps])
        return np.array([self.r])


# the R^d family, as the engine runs it (the sphere family is models.sphere.SPHERE_MODELS)
EUCLIDEAN_MODELS = (SoftmaxChain, SoftmaxFlow, Hardmax, Localmax)
