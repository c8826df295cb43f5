"""The exact exit laws of frozen configurations (docs: models#statements-fw, "Exact laws"), in R^d
and on the sphere, as functions.

- :func:`frozen_law`: the exact geometric exit law of a frozen configuration, in log space;
  :func:`sphere_frozen_law` the same for the chain on the sphere (its no-op picks from
  :func:`sphere_jumps`), and :func:`frozen_asymptote` the large-β line of log E[T] of either.

Everything is float64 NumPy; nothing here simulates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import logsumexp

from .._validate import real
from ..models.sphere import SPHERE_TOL

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "FrozenAsymptote",
    "FrozenLaw",
    "frozen_asymptote",
    "frozen_law",
    "sphere_frozen_law",
    "sphere_jumps",
]


# --------------------------------------------------------------------------- frozen law


@dataclass(frozen=True)
class FrozenLaw:
    """The exact exit law of a frozen configuration: T ~ Geometric(p) on {1, 2, ...}.

    ``log_q[a]`` is log q_a, ``log_stay`` = Σ_a m_a log q_a = log(1 − p). ``p`` may underflow
    to 0 while ``log_p`` stays exact. Made by :func:`frozen_law` and :func:`sphere_frozen_law`.

    Attributes
    ----------
    p : float
        The per-step exit probability.
    log_p : float
        log p, exact where p underflows.
    log_stay : float
        log(1 − p).
    log_q : ndarray, shape (κ,)
        log q_a: the log-probability that a token at u_a stays in its group.

    Examples
    --------
    >>> from metastab.theory import frozen_law
    >>> law = frozen_law([[1.0, 0.0], [-1.0, 0.0]], [1, 1], beta=1.0)
    >>> round(law.p, 6), round(law.mean, 6), law.survival([0, 2]).round(6).tolist()
    (0.224197, 4.460373, [1.0, 0.601871])
    """

    p: float
    log_p: float
    log_stay: float
    log_q: np.ndarray = field(repr=False)

    @property
    def mean(self) -> float:
        """E[T] = 1/p."""
        return math.exp(-self.log_p)

    def survival(self, t: ArrayLike) -> np.ndarray:
        """P[T > t] = (1 − p)^t."""
        return np.exp(np.asarray(t, dtype=np.float64) * self.log_stay)


def frozen_law(
    points: ArrayLike, multiplicities: ArrayLike, beta: float, B: ArrayLike | None = None
) -> FrozenLaw:
    """Exit law of tokens frozen at κ distinct points (docs: models#eq-frozen-law).

    Tokens sit at u_a with multiplicities m_a; in-group picks are no-ops, so the chain waits for
    the first cross-group pick. A token at u_a stays in its group with probability

        q_a = m_a e^{β<B u_a, u_a>} / Σ_b m_b e^{β<B u_a, u_b>},

    tokens draw independently, and the exit step is geometric with p = 1 − Π_a q_a^{m_a}.
    Computed in log space: log q_a = −log1p(r_a) with
    log r_a = logsumexp_{b≠a}(log(m_b/m_a) + β(<B u_a, u_b> − <B u_a, u_a>)), then
    log(1 − p) = Σ m_a log q_a and log p = log(−expm1(log(1 − p))); when p is tiny log p comes
    from logsumexp_a(log m_a + log log1p(r_a)) instead, so it stays exact even where p
    underflows (β = 1e6).

    Parameters
    ----------
    points : array_like (κ, d)
        The distinct points u_a.
    multiplicities : array_like of int (κ,)
        The number m_a of tokens at each point, >= 1.
    beta : float
        The inverse temperature β, >= 0.
    B : array_like (d, d), optional
        Key-query matrix (default identity); not assumed symmetric.

    Returns
    -------
    law : FrozenLaw
        The geometric law of the exit step.

    Examples
    --------
    >>> from metastab.theory import frozen_law
    >>> law = frozen_law([[1.0, 0.0], [-1.0, 0.0]], [2, 3], beta=46.0)
    >>> f"{law.p:.6e}", round(law.log_p, 6)
    ('5.544695e-40', -90.390562)
    """
    S, log_m = _scores(points, multiplicities, B)
    beta = real("beta", beta, low=0)
    return _law(S, log_m, beta, np.eye(len(log_m), dtype=bool))


def _scores(points, multiplicities, B):
    """S[a, b] = <B u_a, u_b> and log m_a, validated."""
    U = np.asarray(points, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] < 1 or not np.isfinite(U).all():
        raise ValueError(f"points must be a finite (κ, d) array, got shape {U.shape}")
    m = np.asarray(multiplicities)
    if (
        m.shape != (U.shape[0],)
        or not np.issubdtype(m.dtype, np.number)
        or (m != np.round(m)).any()
        or (m < 1).any()
    ):
        raise ValueError(f"multiplicities must be {U.shape[0]} integers >= 1, got {m!r}")
    Bm = np.eye(U.shape[1]) if B is None else np.asarray(B, dtype=np.float64)
    if Bm.shape != (U.shape[1],) * 2 or not np.isfinite(Bm).all():
        raise ValueError(f"B must be a finite {U.shape[1]}x{U.shape[1]} matrix, got {Bm.shape}")
    return (U @ Bm.T) @ U.T, np.log(m.astype(np.float64))


def _law(S, log_m, beta, stays) -> FrozenLaw:
    """The geometric law when a token at u_a stays put iff it picks a point b with
    ``stays[a, b]`` (the diagonal at least): log r_a = log(Σ_moves m_b e^{βS_ab}) −
    log(Σ_stays m_b e^{βS_ab}), q_a = 1/(1 + r_a)."""
    W = log_m[None, :] + beta * (S - np.diag(S)[:, None])
    moves = ~stays
    if not moves.any():
        return FrozenLaw(p=0.0, log_p=-math.inf, log_stay=0.0, log_q=np.zeros(len(log_m)))
    log_r = np.full(len(log_m), -math.inf)
    some = moves.any(axis=1)
    log_r[some] = logsumexp(np.where(moves, W, -np.inf)[some], axis=1) - logsumexp(
        np.where(stays, W, -np.inf)[some], axis=1
    )
    m = np.exp(log_m)
    log_q = -np.logaddexp(0.0, log_r)  # −log(1 + r_a), accurate for tiny r_a
    log_stay = float((m * log_q).sum())
    # log p with p = −expm1(L), L = log_stay = −Σ m_a log1p(r_a). When every r_a is tiny (even
    # below the float range, β = 1e6) use log(−L) = logsumexp(log m_a + log log1p(r_a)) and
    # log p = log(−L) + L/2 + O(L²).
    small = log_r[some] < -30
    lr = log_r[some]
    log_log1p_r = np.where(small, lr, np.log(np.logaddexp(0.0, np.where(small, 0.0, lr))))
    log_minus_L = float(logsumexp(log_m[some] + log_log1p_r))
    if log_minus_L < -18:
        log_p = log_minus_L + log_stay / 2
    elif log_stay > -math.log(2):
        log_p = math.log(-math.expm1(log_stay))
    else:
        log_p = math.log1p(-math.exp(log_stay))
    return FrozenLaw(p=-math.expm1(log_stay), log_p=log_p, log_stay=log_stay, log_q=log_q)


# --------------------------------------------------------------------------- on the sphere


def _unit_points(points) -> np.ndarray:
    U = np.asarray(points, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] < 1 or not np.isfinite(U).all():
        raise ValueError(f"points must be a finite (κ, d) array, got shape {U.shape}")
    off = float(np.abs(np.linalg.norm(U, axis=1) - 1.0).max())
    if off > SPHERE_TOL:
        raise ValueError(
            f"points must lie on the unit sphere (| |u| − 1 | <= {SPHERE_TOL:g}), got {off:.3g}"
        )
    return U


def sphere_jumps(points: ArrayLike, gamma: float) -> np.ndarray:
    """How far one pick moves a token of the sphere chain with V = I (docs: models#models-sphere).

    A token at u_a that picks a token at u_b moves to N((1 − γ) u_a + γ u_b), at the angle
    φ_ab = atan2(γ sin θ_ab, 1 − γ + γ cos θ_ab) from u_a (θ_ab the angle between u_a and u_b),
    a chord 2 sin(φ_ab / 2) away. The pick is a no-op for b = a and, when γ < 1/2, for the
    antipode u_b = −u_a (N((1 − 2γ) u_a) = u_a); with γ > 1/2 the antipodal pick sends the token
    to −u_a, and with γ = 1/2 it is undefined (N(0)).

    Parameters
    ----------
    points : array_like (κ, d)
        Distinct points of S^{d−1} (norms within ``metastab.models.sphere.SPHERE_TOL`` of 1, the
        tolerance of the sphere models' initial configurations).
    gamma : float in (0, 1]
        The step size γ.

    Returns
    -------
    jumps : ndarray (κ, κ)
        The chords; entry [a, b] is the move of a token at u_a picking u_b.

    Raises
    ------
    ValueError
        If a point is off the sphere, γ is outside (0, 1], or γ = 1/2 with an antipodal pair.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.theory import sphere_jumps
    >>> J = sphere_jumps([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], 0.25)
    >>> np.round(J, 6)                  # quarter circle: φ = atan(1/3); antipode: no move
    array([[0.      , 0.320364, 0.      ],
           [0.320364, 0.      , 0.320364],
           [0.      , 0.320364, 0.      ]])
    """
    U = _unit_points(points)
    gamma = real("gamma", gamma, low=0, low_open=True, high=1)
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    C = np.clip(U @ U.T, -1.0, 1.0)
    # sin θ from the component of u_b orthogonal to u_a (accurate near θ = 0 and π)
    ortho = U[None, :, :] - C[:, :, None] * U[:, None, :]
    sin = np.linalg.norm(ortho, axis=-1)
    along = 1 - gamma + gamma * C
    antipodal = sin <= 1e-12
    if gamma == 0.5 and (antipodal & (C < 0)).any():
        raise ValueError("gamma=0.5 with antipodal points: the pick of an antipode lands on N(0)")
    phi = np.arctan2(gamma * np.where(antipodal, 0.0, sin), along)
    return 2 * np.sin(phi / 2)


def sphere_frozen_law(
    points: ArrayLike,
    multiplicities: ArrayLike,
    beta: ArrayLike,
    gamma: float,
    B: ArrayLike | None = None,
) -> FrozenLaw:
    """Exit law of the sphere chain (V = I) frozen at κ distinct points of S^{d−1}.

    As :func:`frozen_law` (docs: models#statements-fw, "Exact laws"), with the no-op picks of the
    sphere (:func:`sphere_jumps`): a token at u_a stays put iff it picks a token at u_a or, when
    γ < 1/2, at −u_a. So q_a = Σ_{b: no-op} m_b e^{β<B u_a, u_b>} / Σ_b m_b e^{β<B u_a, u_b>}
    and the first step in which some token moves is geometric with p = 1 − Π_a q_a^{m_a}.
    Without antipodal points this is :func:`frozen_law` of the same points.

    Parameters
    ----------
    points : array_like (κ, d)
        Distinct points of S^{d−1}.
    multiplicities : array_like of int (κ,)
        The number m_a of tokens at each point, >= 1.
    beta : float
        The inverse temperature β, >= 0.
    gamma : float in (0, 1]
        The step size γ.
    B : array_like (d, d), optional
        Key-query matrix (default identity).

    Returns
    -------
    law : FrozenLaw
        The geometric law of the first step in which a token moves.

    Examples
    --------
    >>> from metastab.theory import frozen_law, sphere_frozen_law
    >>> pts = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]
    >>> law = sphere_frozen_law(pts, [2, 1, 2], beta=1.0, gamma=0.1)
    >>> round(law.p, 6), round(frozen_law(pts, [2, 1, 2], beta=1.0).p, 6)   # antipodes stay
    (0.778083, 0.866434)
    >>> sphere_frozen_law([[1.0, 0.0], [-1.0, 0.0]], [3, 3], beta=1.0, gamma=0.1).p
    0.0
    """
    S, log_m = _scores(points, multiplicities, B)
    beta = real("beta", beta, low=0)
    return _law(S, log_m, beta, sphere_jumps(points, gamma) == 0)


@dataclass(frozen=True)
class FrozenAsymptote:
    """log E[T] = β Δ − log N + o(1) as β → ∞, for the frozen law of a configuration.

    ``exponent`` is Δ, ``log_prefactor`` is log N (docs: models#statements-fw: E[T] = 1/p and
    p ≈ Σ_a m_a r_a as the r_a vanish). Made by :func:`frozen_asymptote`.

    Attributes
    ----------
    exponent : float
        Δ, the slope of log E[T] against β.
    log_prefactor : float
        log N.

    Examples
    --------
    >>> from metastab.theory import frozen_asymptote
    >>> a = frozen_asymptote([[1.0, 0.0], [-1.0, 0.0]], [1, 1])
    >>> a.exponent, round(a.log_prefactor, 6), a.log_mean([10.0, 20.0]).round(6).tolist()
    (2.0, 0.693147, [19.306853, 39.306853])
    """

    exponent: float
    log_prefactor: float

    def log_mean(self, beta: ArrayLike) -> np.ndarray:
        """The asymptote β Δ − log N of log E[T]."""
        return np.asarray(beta, dtype=np.float64) * self.exponent - self.log_prefactor


def frozen_asymptote(
    points: ArrayLike,
    multiplicities: ArrayLike,
    B: ArrayLike | None = None,
    *,
    gamma: float | None = None,
) -> FrozenAsymptote:
    """The large-β line of log E[T] for :func:`frozen_law` or :func:`sphere_frozen_law`.

    With S_ab = <B u_a, u_b>, a token at u_a moves with probability r_a/(1 + r_a),
    r_a = Σ_{moves} m_b e^{βS_ab} / Σ_{no-ops} m_b e^{βS_ab}, and
    −log(1 − p) = Σ_a m_a log(1 + r_a).
    As β → ∞, r_a ≈ (M_a / Z_a) e^{−β g_a}, where g_a = max_{no-op} S_ab − max_{move} S_ab and
    M_a, Z_a add the m_b attaining each maximum (within a relative 1e-12). So

        Δ = min_a g_a,   N = Σ_{a: g_a = Δ} m_a M_a / Z_a,   log E[T] = βΔ − log N + o(1).

    On the sphere with B = I, g_a = 1 − max_b <u_a, u_b> over the points a token can reach:
    Δ = 1 − cos θ_min of the closest (non-antipodal) pair.

    Parameters
    ----------
    points : array_like (κ, d)
        The distinct points u_a (on S^{d−1} when ``gamma`` is given).
    multiplicities : array_like of int (κ,)
        The number m_a of tokens at each point, >= 1.
    B : array_like (d, d), optional
        Key-query matrix (default identity).
    gamma : float in (0, 1], optional
        The sphere chain's step size: given, the no-op picks are the sphere's
        (:func:`sphere_frozen_law`); None (default), those of :func:`frozen_law`.

    Returns
    -------
    asymptote : FrozenAsymptote
        Δ and log N.

    Raises
    ------
    ValueError
        If no pick moves a token (p = 0 at every β), or Δ <= 0 (the configuration is not
        metastable: some token prefers another point).

    Examples
    --------
    >>> import math
    >>> import metastab as ms
    >>> from metastab.theory import frozen_asymptote
    >>> a = frozen_asymptote(ms.simplex(2).vertices, [3, 3, 3], gamma=0.1)
    >>> round(a.exponent, 12), round(math.exp(a.log_prefactor), 9)   # 1 − cos 120°; 6 pairs × 3
    (1.5, 18.0)
    """
    S, log_m = _scores(points, multiplicities, B)
    stays = np.eye(len(log_m), dtype=bool) if gamma is None else sphere_jumps(points, gamma) == 0
    moves = ~stays
    rows = np.flatnonzero(moves.any(axis=1))
    if rows.size == 0:
        raise ValueError("no pick moves a token: the configuration never leaves (p = 0)")
    m = np.exp(log_m)
    gaps, weights = np.empty(rows.size), np.empty(rows.size)
    for k, a in enumerate(rows):
        best = []
        for mask in (stays[a], moves[a]):
            top = S[a, mask].max()
            tie = mask & (S[a] >= top - 1e-12 * max(1.0, abs(top)))
            best.append((top, m[tie].sum()))
        (s_stay, z), (s_move, w) = best
        gaps[k] = s_stay - s_move
        weights[k] = m[a] * w / z
    delta = float(gaps.min())
    if delta <= 0:
        raise ValueError(
            f"the smallest score gap is {delta:.6g} <= 0: a token prefers another point, the "
            "configuration is not metastable"
        )
    at = gaps <= delta + 1e-12 * max(1.0, delta)
    return FrozenAsymptote(exponent=delta, log_prefactor=float(math.log(weights[at].sum())))
