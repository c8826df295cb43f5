"""The dynamics, as frozen validated descriptions that hold no behaviour (science.md §1).

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

import numpy as np

from . import _kernels
from ._validate import matrix, real

__all__ = ["SoftmaxChain", "SoftmaxFlow", "Hardmax", "step_matrix", "model_from_dict"]

TIE_MODES = ("index", "point")


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
        raise ValueError(f"gamma must be a number, schedule, step matrix or callable, "
                         f"got {value!r}") from None
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


def step_matrix(V) -> np.ndarray:
    """The step matrix P = (I + V)^{-1} V of a general value matrix V (science.md §1).

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


@dataclass(frozen=True, eq=False)
class _Model:
    """Shared step-size and key-query handling of every dynamics."""

    def _validate(self):
        object.__setattr__(self, "gamma", _gamma(self.gamma))
        object.__setattr__(self, "B", _frozen_matrix(self.B, "B"))

    @property
    def has_step_matrix(self) -> bool:
        return isinstance(self.gamma, np.ndarray) and self.gamma.ndim == 2

    @property
    def has_schedule(self) -> bool:
        return callable(self.gamma) or (isinstance(self.gamma, np.ndarray) and self.gamma.ndim == 1)

    def key_query(self, d: int) -> np.ndarray:
        """B as a fresh d×d float64 array (identity when B is None)."""
        return np.eye(d) if self.B is None else matrix("B", self.B, d)

    def step_arrays(self, d: int, t0: int, nsteps: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """(gammas, P, use_P) for steps t0 .. t0 + nsteps - 1, in the kernels' convention
        (fresh writeable arrays: read-only ones would make numba compile a second version)."""
        if self.has_step_matrix:
            return np.ones(1), matrix("gamma (step matrix)", self.gamma, d), True
        if callable(self.gamma):
            gammas = np.array([_step(self.gamma(t), f"gamma({t})")
                               for t in range(t0, t0 + nsteps)])
        elif isinstance(self.gamma, np.ndarray):
            if t0 + nsteps > self.gamma.size:
                raise ValueError(f"gamma schedule has {self.gamma.size} entries, but "
                                 f"{t0 + nsteps} steps were asked for")
            gammas = np.array(self.gamma[t0:t0 + nsteps])
        else:
            gammas = np.array([self.gamma])
        return gammas, np.eye(d), False

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
    """SA_P, the finite-β self-attention Markov chain ([FW] eq. softmax.process).

    Each token i draws j with probability softmax_j(β s_ij) (itself included) and moves to
    x_i + γ (x_j − x_i). Joint law: tokens draw independently within a step, and the update is
    synchronous. Coincident tokens add their probabilities; a self-pick is an exact no-op.

    >>> SoftmaxChain(beta=20.0, gamma=0.1).kind
    'softmax-chain'
    """

    beta: float
    gamma: float | np.ndarray | Callable = 0.1
    B: np.ndarray | None = field(default=None, repr=False)
    kind = "softmax-chain"
    code = _kernels.CHAIN

    def __post_init__(self):
        object.__setattr__(self, "beta", real("beta", self.beta, low=0))
        self._validate()


@dataclass(frozen=True, eq=False)
class SoftmaxFlow(_Model):
    """SA_β, the deterministic softmax layer ([FW] eq. softmax.ODE):
    x_i ← x_i + γ (Σ_j softmax_j(β s_ij) x_j − x_i).

    >>> SoftmaxFlow(beta=5.0, gamma=0.5).kind
    'softmax-flow'
    """

    beta: float
    gamma: float | np.ndarray | Callable = 0.1
    B: np.ndarray | None = field(default=None, repr=False)
    kind = "softmax-flow"
    code = _kernels.FLOW

    def __post_init__(self):
        object.__setattr__(self, "beta", real("beta", self.beta, low=0))
        self._validate()


@dataclass(frozen=True, eq=False)
class Hardmax(_Model):
    """SA_∞, the hardmax / Frank-Wolfe step ([FW] eq. hardmax.dynamics.V, (SA_∞)).

    Leaders L_i = {j : s_ij ≥ max_k s_ik − tol · max_k |s_ik|} (relative tie tolerance; exact float
    equality is fragile); x_i ← x_i + γ (mean_{j in L_i} x_j − x_i). ``ties="index"`` averages over
    leader indices ([AFZ]'s code), ``ties="point"`` over the distinct leader points ([FW]'s set
    reading; two leaders are one point when their max-norm distance is ≤ tol times their size).
    With B = −B_* this is a Frank-Wolfe step for J(x) = ½<B_* x, x> over the current hull; [AFZ]'s
    hardmax is B = A ≻ 0, γ = α/(1+α); explicit Euler for the hardmax ODE is γ = Δt.

    >>> Hardmax(gamma=1/3, ties="point").ties
    'point'
    """

    gamma: float | np.ndarray | Callable = 0.1
    B: np.ndarray | None = field(default=None, repr=False)
    ties: str = "index"
    tol: float = 1e-12
    kind = "hardmax"
    code = _kernels.HARDMAX
    beta = math.inf

    def __post_init__(self):
        if self.ties not in TIE_MODES:
            raise ValueError(f"ties must be one of {TIE_MODES}, got {self.ties!r}")
        object.__setattr__(self, "tol", real("tol", self.tol, low=0, high=1, high_open=True))
        self._validate()


_KINDS = {cls.kind: cls for cls in (SoftmaxChain, SoftmaxFlow, Hardmax)}


def model_from_dict(data: dict):
    """Rebuild a model from :meth:`to_dict` output (callable schedules cannot be rebuilt)."""
    data = dict(data)
    kind = data.pop("kind", None)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
    if isinstance(data.get("gamma"), str):
        raise ValueError(f"gamma {data['gamma']!r} was a callable and cannot be rebuilt")
    return _KINDS[kind](**data)
