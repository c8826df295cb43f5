"""The published bounds and exact laws of science.md §3, as functions.

- :func:`clustering_phase`: m, τ and T1 of the clustering phase ([FW] lem. first.phase, Thm 5.2).
- :func:`metastability_bound`, :func:`metastability_exponent`, :func:`exit_time_bound`: the
  lower bound on P[T2 >= t] of [FW] lem. metastab.1 / Thm 5.4 and what it implies for E[T2].
- :func:`frozen_law`: the exact geometric exit law of a frozen configuration, in log space;
  :func:`sphere_frozen_law` the same for the chain on the sphere (its no-op picks from
  :func:`sphere_jumps`), and :func:`frozen_asymptote` the large-β line of log E[T] of either.
- :func:`collapse_rate`: the contraction constant of [FW] prop. origin.
- :func:`meanfield_growth_rates`, :func:`meanfield_clusters`: the unstable modes of the uniform
  state of (USA) on the circle and k* = argmax_k k² I_k(β) (Bruno, Pasqualotto, Agazzi).
- :func:`merge_time`: the time two point clusters on the sphere take to merge under (SA) or
  (USA), the rate e^{β(1 − cos Δθ)} of GKPR's staircase, by quadrature.
- :func:`orthogonal_cosine`, :func:`orthogonal_time`, :func:`phase_boundary`: the common cosine
  γ_β(t) of tokens started orthogonal on the sphere (GLPR Thm 6.8, eqs. (6.9)/(6.10)), the time
  it reaches 1 − δ and the curve Γ of GLPR Fig. 3; :func:`random_start_bound`,
  :func:`random_start_probability`: GLPR Thm 6.9 for random starts (sphere.md, statements 1–3).

Everything is float64 NumPy; nothing here simulates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import logsumexp

from ._validate import integer, real
from .models.sphere import SPHERE_TOL
from .setups.polytopes import Polytope

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "ClusteringPhase",
    "CollapseRate",
    "FrozenAsymptote",
    "FrozenLaw",
    "clustering_phase",
    "collapse_rate",
    "orthogonal_cosine",
    "orthogonal_rate",
    "orthogonal_time",
    "phase_boundary",
    "random_start_bound",
    "random_start_probability",
    "exit_time_bound",
    "frozen_asymptote",
    "frozen_law",
    "meanfield_clusters",
    "meanfield_growth_rates",
    "merge_time",
    "metastability_bound",
    "metastability_exponent",
    "sphere_frozen_law",
    "sphere_jumps",
]


# --------------------------------------------------------------------------- Thm 5.2


@dataclass(frozen=True)
class ClusteringPhase:
    """m, τ, T1 of [FW] Thm 5.2 and the hypotheses checked on the configuration.

    ``hypotheses`` maps each hypothesis (equinorm, acute_cones, separated, vertex_tokens and,
    when β was given, eroded_cones) to whether it holds: the quantities are computed either
    way, the theorem speaks only when all hold.
    """

    m: float
    tau: float
    T1: int
    c0: float
    hypotheses: dict = field(default_factory=dict)


def clustering_phase(
    vertices: Polytope | ArrayLike, x0: ArrayLike, gamma: float, *, beta: float | None = None
) -> ClusteringPhase:
    """Quantities of the clustering phase ([FW] lem. first.phase, Thm 5.2; science.md §3).

    With σ(i) = argmax_a <x_i^0, v_a> (B = I) and c0 = min_{a≠b} (<v_a, v_a> − <v_a, v_b>):

        m  = min_{i > κ} |x_i^0 − v_σ(i)|,
        τ  = min{ min_{a≠b} c0 / (2 |v_a − v_b|),  √(2 c0) / 2,  (1 − γ) m },
        T1 = ⌊ log(τ/m) / log(1 − γ) ⌋   (floored with a relative slack of 1e-12).

    Parameters
    ----------
    vertices : array_like (κ, d) or Polytope
    x0 : array_like (n, d)
        The configuration; tokens 0..κ−1 are the vertex tokens, n > κ.
    gamma : float in (0, 1)
    beta : float, optional
        When given, also check that every other token lies in the eroded dominance cone
        I_σ(i)(β^{−1/8}) ⊖ β^{−1/4}.

    Returns
    -------
    ClusteringPhase

    Examples
    --------
    >>> V = [[1.0, 0.0], [-0.5, 3 ** 0.5 / 2], [-0.5, -(3 ** 0.5) / 2]]
    >>> x0 = np.vstack([V, [[0.8, 0.0]]])
    >>> ph = clustering_phase(V, x0, 0.5)
    >>> round(ph.m, 6), round(ph.tau, 6), ph.T1       # τ = (1 − γ) m, T1 = 1
    (0.2, 0.1, 1)
    """
    # Polytope converts and checks array_like vertices itself
    P = vertices if isinstance(vertices, Polytope) else Polytope(vertices)  # type: ignore[arg-type]
    gamma = real("gamma", gamma, low=0, low_open=True, high=1, high_open=True)
    X = np.asarray(x0, dtype=np.float64)
    k = P.n_vertices
    if X.ndim != 2 or X.shape[1] != P.dim or X.shape[0] <= k:
        raise ValueError(f"x0 must have shape (n, {P.dim}) with n > κ = {k}, got {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("x0 must be finite")
    c0 = P.c0
    if c0 <= 0:
        raise ValueError(f"the separation c0 must be > 0, got c0={c0!r}")
    sigma = P.assign(X[k:])
    m = float(np.linalg.norm(X[k:] - P.vertices[sigma], axis=1).min())
    if m <= 0:
        raise ValueError("m = 0: a non-vertex token starts on its vertex (log(τ/m) undefined)")
    V = P.vertices
    dist = np.linalg.norm(V[:, None] - V[None], axis=-1)[~np.eye(k, dtype=bool)]
    tau = min(float((c0 / (2 * dist)).min()), math.sqrt(2 * c0) / 2, (1 - gamma) * m)
    # relative slack 1e-12: τ = (1 − γ)m must give T1 = 1 despite roundoff
    T1 = math.floor(math.log(tau / m) / math.log1p(-gamma) * (1 + 1e-12))
    hyp = {
        "equinorm": P.is_equinorm(),
        "acute_cones": P.has_acute_cones(),
        "separated": c0 > 0,
        "vertex_tokens": bool(np.allclose(X[:k], V, rtol=0, atol=1e-12)),
    }
    if beta is not None:
        b = real("beta", beta, low=0, low_open=True)
        hyp["eroded_cones"] = all(
            bool(P.in_eroded_cone(X[k + i], int(a), b**-0.125, b**-0.25))
            for i, a in enumerate(sigma)
        )
    return ClusteringPhase(m=m, tau=tau, T1=int(T1), c0=c0, hypotheses=hyp)


# --------------------------------------------------------------------------- Thm 5.4


def _bound_args(c0, eps, gamma, n, diameter):
    c0 = real("c0", c0, low=0, low_open=True)
    eps = real("eps", eps, low=0, low_open=True)
    gamma = real("gamma", gamma, low=0, low_open=True, high=1)
    n = integer("n", n, 1)
    diam = None if diameter is None else real("diameter", diameter, low=0)
    if diam is not None and eps / gamma < 2 * diam:
        raise ValueError(
            f"Thm 5.4 needs eps/gamma >= 2 d(K), got eps/gamma={eps / gamma!r} < "
            f"2 * diameter={2 * diameter!r}"
        )
    return c0, eps, gamma, n


def metastability_exponent(c0: float, eps: float, gamma: float) -> float:
    """The exponent A/k = c0 ε / (2γ (1 + ε/γ)) of the Thm 5.4 bound (science.md §3).

    T2 is at least of order e^{β c0 ε / (2γ(1 + ε/γ))}: the slope of log E[T2] against β is at
    least this.

    Examples
    --------
    >>> metastability_exponent(1.0, 0.2, 0.1)      # 0.2 / (0.2 · 3)
    0.3333333333333333
    """
    c0, eps, gamma, _ = _bound_args(c0, eps, gamma, 1, None)
    return c0 * eps / (2 * gamma * (1 + eps / gamma))


def metastability_bound(
    t: ArrayLike,
    beta: ArrayLike,
    *,
    c0: float,
    eps: float,
    gamma: float,
    n: int,
    diameter: float | None = None,
) -> np.ndarray:
    """Lower bound on P[T2 >= t] of [FW] lem. metastab.1 / Thm 5.4 (science.md §3), t > 1:

        P[T2 >= t] >= 1 − exp((1 + ε/γ) log(γt/ε) + (1 + ε/γ) log n − β c0 ε / (2γ)).

    Values <= 0 are vacuous (returned as computed, not clipped). Broadcasts over t and β.

    Parameters
    ----------
    t : array_like, > 1
    beta : array_like
    c0, eps, gamma, n : the separation, the exit margin ε, the step size γ, the token count.
    diameter : float, optional
        d(K); when given, the hypothesis ε/γ >= 2 d(K) is checked (ValueError if it fails).

    Examples
    --------
    >>> float(metastability_bound(10.0, 15.0, c0=1.0, eps=0.2, gamma=0.1, n=4).round(6))
    0.997553
    """
    c0, eps, gamma, n = _bound_args(c0, eps, gamma, n, diameter)
    t = np.asarray(t, dtype=np.float64)
    if (t <= 1).any():
        raise ValueError(f"t must be > 1, got {t.min()!r}")
    k = 1 + eps / gamma
    X = k * np.log(gamma * t / eps) + k * math.log(n) - np.asarray(beta) * c0 * eps / (2 * gamma)
    return -np.expm1(X)


def exit_time_bound(
    beta: ArrayLike,
    *,
    c0: float,
    eps: float,
    gamma: float,
    n: int,
    diameter: float | None = None,
    prob: float | None = None,
) -> np.ndarray:
    """Log of a lower bound on E[T2] (or on a time T2 exceeds with probability ``prob``).

    From Thm 5.4, with k = 1 + ε/γ and A = c0 ε/(2γ): P[T2 >= t] >= prob for
    log t_prob = log(ε/(γn)) + (βA + log(1 − prob))/k. Markov's inequality
    E[T2] >= t · P[T2 >= t], maximised over t (at prob = k/(k + 1)), gives

        log E[T2] >= log(ε/(γn)) + (βA − log(k + 1))/k + log(k/(k + 1)),

    a line in β of slope A/k = :func:`metastability_exponent`, to draw on an Arrhenius plot.
    A value below 0 says nothing beyond the trivial T2 >= 1.

    Examples
    --------
    >>> lo = exit_time_bound([100.0, 200.0], c0=1.0, eps=0.2, gamma=0.1, n=4)
    >>> round(float(lo[1] - lo[0]) / 100, 6)          # the slope: the exponent
    0.333333
    """
    c0, eps, gamma, n = _bound_args(c0, eps, gamma, n, diameter)
    k = 1 + eps / gamma
    a = np.asarray(beta, dtype=np.float64) * c0 * eps / (2 * gamma)
    base = math.log(eps / (gamma * n))
    if prob is None:
        return base + (a - math.log(k + 1)) / k + math.log(k / (k + 1))
    prob = real("prob", prob, low=0, low_open=True, high=1, high_open=True)
    return base + (a + math.log1p(-prob)) / k


# --------------------------------------------------------------------------- frozen law


@dataclass(frozen=True)
class FrozenLaw:
    """The exact exit law of a frozen configuration: T ~ Geometric(p) on {1, 2, ...}.

    ``log_q[a]`` is log q_a, ``log_stay`` = Σ_a m_a log q_a = log(1 − p). ``p`` may underflow
    to 0 while ``log_p`` stays exact.
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
    """Exit law of tokens frozen at κ distinct points (science.md §3, "Exact laws").

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
    multiplicities : array_like of int (κ,), >= 1
    beta : float, >= 0
    B : array_like (d, d), optional
        Key-query matrix (default identity); not assumed symmetric.

    Examples
    --------
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
    """How far one pick moves a token of the sphere chain with V = I (sphere.md, "Models").

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

    Returns
    -------
    ndarray (κ, κ)
        The chords; entry [a, b] is the move of a token at u_a picking u_b.

    Raises
    ------
    ValueError
        If a point is off the sphere, γ is outside (0, 1], or γ = 1/2 with an antipodal pair.

    Examples
    --------
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

    As :func:`frozen_law` (science.md §3, "Exact laws"), with the no-op picks of the sphere
    (:func:`sphere_jumps`): a token at u_a stays put iff it picks a token at u_a or, when
    γ < 1/2, at −u_a. So q_a = Σ_{b: no-op} m_b e^{β<B u_a, u_b>} / Σ_b m_b e^{β<B u_a, u_b>}
    and the first step in which some token moves is geometric with p = 1 − Π_a q_a^{m_a}.
    Without antipodal points this is :func:`frozen_law` of the same points.

    Parameters
    ----------
    points : array_like (κ, d)
        Distinct points of S^{d−1}.
    multiplicities : array_like of int (κ,), >= 1
    beta : float, >= 0
    gamma : float in (0, 1]
    B : array_like (d, d), optional
        Key-query matrix (default identity).

    Examples
    --------
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

    ``exponent`` is Δ, ``log_prefactor`` is log N (science.md §3: E[T] = 1/p and
    p ≈ Σ_a m_a r_a as the r_a vanish).
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
    """The large-β line of log E[T] for :func:`frozen_law` (``gamma`` None) or
    :func:`sphere_frozen_law` (``gamma`` given: the sphere's no-op picks).

    With S_ab = <B u_a, u_b>, a token at u_a moves with probability r_a/(1 + r_a),
    r_a = Σ_{moves} m_b e^{βS_ab} / Σ_{no-ops} m_b e^{βS_ab}, and
    −log(1 − p) = Σ_a m_a log(1 + r_a).
    As β → ∞, r_a ≈ (M_a / Z_a) e^{−β g_a}, where g_a = max_{no-op} S_ab − max_{move} S_ab and
    M_a, Z_a add the m_b attaining each maximum (within a relative 1e-12). So

        Δ = min_a g_a,   N = Σ_{a: g_a = Δ} m_a M_a / Z_a,   log E[T] = βΔ − log N + o(1).

    On the sphere with B = I, g_a = 1 − max_b <u_a, u_b> over the points a token can reach:
    Δ = 1 − cos θ_min of the closest (non-antipodal) pair.

    Raises
    ------
    ValueError
        If no pick moves a token (p = 0 at every β), or Δ <= 0 (the configuration is not
        metastable: some token prefers another point).

    Examples
    --------
    >>> from metastab.setups.polytopes import simplex
    >>> a = frozen_asymptote(simplex(2).vertices, [3, 3, 3], gamma=0.1)
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


# --------------------------------------------------------------------------- collapse


@dataclass(frozen=True)
class CollapseRate:
    """Contraction of [FW] prop. origin: diam(X^{t+1}) <= (1 − γc) diam(X^t).

    ``c`` may underflow at large |β|R²; ``log_c`` and ``log_factor`` = log(1 − γc) stay exact.
    """

    c: float
    log_c: float
    gamma: float

    @property
    def factor(self) -> float:
        """The per-step factor 1 − γc."""
        return 1.0 - self.gamma * self.c

    @property
    def log_factor(self) -> float:
        return math.log1p(-self.gamma * math.exp(self.log_c))

    def log_steps(self, ratio: float) -> float:
        """log of the steps after which the bound guarantees diam <= ratio · diam(X^0).

        steps = log ratio / log(1 − γc); for tiny c, −log(1 − γc) = γc(1 + γc/2 + ...), so
        log steps = log(−log ratio) − log γ − log c − γc/2, exact where c underflows.
        """
        ratio = real("ratio", ratio, low=0, low_open=True, high=1, high_open=True)
        gc = self.gamma * math.exp(self.log_c)
        if gc > 1e-8:
            return math.log(-math.log(ratio)) - math.log(-math.log1p(-gc))
        return math.log(-math.log(ratio)) - math.log(self.gamma) - self.log_c - gc / 2

    def steps(self, ratio: float) -> float:
        """Steps after which diam <= ratio · diam(X^0): log ratio / log(1 − γc) (may be inf)."""
        log_steps = self.log_steps(ratio)
        return math.exp(log_steps) if log_steps < 709 else math.inf


def collapse_rate(beta: float, *, radius: float, n: int, gamma: float) -> CollapseRate:
    """The collapse constant c = e^{−|β|R²} / (n e^{|β|R²}) of [FW] prop. origin (science.md §3).

    For SA_β with all |x_j| <= R, every step shrinks the diameter at least by 1 − γc.

    Examples
    --------
    >>> r = collapse_rate(1.0, radius=1.0, n=2, gamma=0.5)
    >>> round(r.c, 6), round(r.factor, 6)             # e^{−2}/2, 1 − e^{−2}/4
    (0.067668, 0.966166)
    >>> collapse_rate(1e6, radius=1.0, n=2, gamma=0.5).log_c
    -2000000.6931471806
    """
    beta = real("beta", beta)
    radius = real("radius", radius, low=0)
    gamma = real("gamma", gamma, low=0, low_open=True, high=1)
    n = integer("n", n, 1)
    log_c = -2 * abs(beta) * radius**2 - math.log(n)
    return CollapseRate(c=math.exp(log_c), log_c=log_c, gamma=gamma)


# --------------------------------------------------------------------------- sphere: mean field


def meanfield_growth_rates(beta: float, k_max: int) -> np.ndarray:
    """Linear growth rates λ_1..λ_{k_max} of the Fourier modes of the uniform state of (USA) on
    the circle (sphere.md statement 6; Bruno, Pasqualotto, Agazzi, arXiv 2410.23228).

    The mean-field (USA) velocity on the circle is v(θ) = ∫ e^{β cos(θ − φ)} sin(φ − θ) ρ(φ) dφ,
    whose kernel is (1/β) d/du e^{β cos u}; with e^{β cos u} = Σ_k I_k(β) e^{iku}, a perturbation
    ε e^{ikθ} of ρ = 1/(2π) grows at the rate

        λ_k = k² I_k(β) / β   (I_k the modified Bessel function of the first kind).

    Computed with the exponentially scaled Bessel function: the returned rates are exact and do
    not overflow for β up to ~700 (λ_k ~ e^β).

    Parameters
    ----------
    beta : float, > 0
    k_max : int, >= 1

    Returns
    -------
    ndarray (k_max,)
        λ_k for k = 1..k_max.

    Examples
    --------
    >>> meanfield_growth_rates(4.0, 4).round(3)          # k² I_k(4) / 4
    array([2.44 , 6.422, 7.509, 5.665])
    """
    from scipy.special import ive

    beta = real("beta", beta, low=0, low_open=True)
    k = np.arange(1, integer("k_max", k_max, 1) + 1, dtype=np.float64)
    return k * k * ive(k, beta) * math.exp(beta) / beta


def meanfield_clusters(beta: float) -> int:
    """The number of clusters k* = argmax_{k >= 1} k² I_k(β) that (USA) on the circle forms from
    a nearly uniform start: the fastest-growing mode of :func:`meanfield_growth_rates` (Bruno,
    Pasqualotto, Agazzi, arXiv 2410.23228; sphere.md statement 6).

    k² I_k(β) is compared with the exponentially scaled I_k (no overflow at any β); the search
    runs over k <= 2√(2β) + 10 (the maximiser is near √(2β) for large β) and refuses a maximum on
    that boundary. A tie (a β on the boundary between two modes) returns the smaller k.

    Parameters
    ----------
    beta : float, > 0

    Examples
    --------
    >>> [meanfield_clusters(b) for b in (0.5, 1.0, 4.0, 9.0, 32.0)]
    [1, 1, 3, 4, 8]
    """
    from scipy.special import ive

    beta = real("beta", beta, low=0, low_open=True)
    k = np.arange(1, int(2 * math.sqrt(2 * beta)) + 11, dtype=np.float64)
    score = k * k * ive(k, beta)
    best = int(np.argmax(score))
    if best == k.size - 1:  # pragma: no cover - the bound above holds for every β
        raise RuntimeError(f"k² I_k({beta}) still grows at k = {k.size}")
    return best + 1


# --------------------------------------------------------------------------- sphere: merges


def merge_time(
    beta: float,
    angle: float,
    *,
    masses: tuple[int, int] = (1, 1),
    delta: float = 1e-3,
    attention: str = "softmax",
    n: int | None = None,
) -> float:
    """log of the time two point clusters on S^{d-1} take to merge under (SA) or (USA), from the
    angle ``angle`` until their cosine reaches 1 − δ (sphere.md statement 5: GKPR's rate).

    With Q = K = V = I, tokens at one point stay together, so m_a tokens at x_a and m_b at x_b
    (cos Δ = <x_a, x_b>) form a closed system on the great circle through them. Token a moves
    towards b at the angular speed w_b sin Δ, w_b its attention weight on b:

        (SA)   w_b = 1 / (1 + (m_a/m_b) e^{β(1 − cos Δ)}),     (USA)  w_b = m_b e^{β cos Δ} / n,

    so Δ' = −(w_b + w_a) sin Δ and T = ∫_{Δ_δ}^{Δ} dΔ' / ((w_a + w_b) sin Δ'),
    cos Δ_δ = 1 − δ. For (SA) and large β, T = e^{β(1 − cos Δ)} (1 + o(1)) / (c β sin² Δ) with
    c = m_b/m_a + m_a/m_b: the e^{β(1 − cos Δθ)} law of the time between merges. The integral
    is taken in the variable v = β(cos Δ' − cos Δ), in which its weight e^{−v} is smooth at any
    β, so the log time is exact where the time itself would overflow.

    Parameters
    ----------
    beta : float, >= 0
    angle : float in (Δ_δ, π)
        The initial angle between the clusters, radians.
    masses : (int, int)
        Tokens in each cluster.
    delta : float in (0, 1)
        Clustered when the cosine is >= 1 − δ.
    attention : {"softmax", "unnormalized"}
        (SA) or (USA).
    n : int, optional
        (USA) only: the normalisation Z = n (default m_a + m_b).

    Returns
    -------
    float
        log T.

    Examples
    --------
    >>> import math
    >>> T = math.exp(merge_time(0.0, math.pi / 2))  # β = 0: Δ' = −sin Δ, T = log tan(Δ/2) |
    >>> round(T, 6), round(-math.log(math.tan(math.acos(1 - 1e-3) / 2)), 6)
    (3.800201, 3.800201)
    >>> round(merge_time(40.0, math.pi / 2) - 40.0, 3)   # log T − β(1 − cos Δ) → −log(2β)
    -4.381
    """
    from scipy.integrate import quad

    beta = real("beta", beta, low=0)
    delta = real("delta", delta, low=0, low_open=True, high=1, high_open=True)
    end = math.acos(1 - delta)
    angle = real("angle", angle, low=end, low_open=True, high=math.pi, high_open=True)
    if attention not in ("softmax", "unnormalized"):
        raise ValueError(f"attention must be 'softmax' or 'unnormalized', got {attention!r}")
    if len(masses) != 2:
        raise ValueError(f"masses must be two token counts, got {masses!r}")
    ma, mb = (float(integer("masses", m, 1)) for m in masses)
    z = float(ma + mb) if n is None else float(integer("n", n, int(ma + mb)))
    c0 = math.cos(angle)

    # T = ∫ e^{β(u − u0)} e^{β u0} / (S(u) sin Δ) dΔ with u = 1 − cos Δ; log T = β u0 + log ∫.
    def rate(c):
        """(w_a + w_b) e^{β(1 − c)} for (SA), (w_a + w_b) e^{−β c} for (USA)."""
        if attention == "unnormalized":
            return (ma + mb) / z
        e = math.exp(-beta * (1 - c))
        return 1 / (e + ma / mb) + 1 / (e + mb / ma)

    def integrand(c):  # dΔ = dc / sin Δ: ∫ dc e^{β(c0 − c)} / (rate(c) sin² Δ)
        return math.exp(beta * (c0 - c)) / (rate(c) * (1 - c * c))

    # weight concentrated within ~1/β of c0: split there so that quad resolves it
    split = min(1 - delta, c0 + (1.0 / beta if beta > 0 else 1.0))
    parts = [(c0, split), (split, 1 - delta)] if split < 1 - delta else [(c0, 1 - delta)]
    total = sum(quad(integrand, a, b, limit=200, epsabs=0, epsrel=1e-11)[0] for a, b in parts)
    scale = beta * (1 - c0) if attention == "softmax" else -beta * c0
    return scale + math.log(total)


# --------------------------------------------------------------------------- GLPR Thm 6.8, 6.9

ATTENTIONS = ("softmax", "unnormalized")
# solve_ivp's tolerances for γ_β: the cosine is O(1), so these are ~100 ulps of the answer
_RTOL, _ATOL = 1e-12, 1e-14


def _attention(attention: str) -> str:
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    return attention


def orthogonal_rate(
    gamma: ArrayLike, beta: float, n: int, *, attention: str = "softmax"
) -> np.ndarray:
    """The right-hand side of GLPR Thm 6.8's equation for the common cosine γ_β(t).

    (SA), eq. (6.9):   γ̇ = 2 e^{βγ} (1 − γ)((n − 1)γ + 1) / (e^β + (n − 1) e^{βγ}),
    evaluated as 2 (1 − γ)((n − 1)γ + 1) / (e^{β(1 − γ)} + n − 1) (no overflow at any β);
    (USA), eq. (6.10): γ̇ = (2/n) e^{βγ} (1 − γ)((n − 1)γ + 1).

    Examples
    --------
    >>> float(orthogonal_rate(0.0, 0.0, 4))          # 2 · 1 · 1 / (1 + 3)
    0.5
    >>> float(orthogonal_rate(0.0, 1e6, 4))          # e^{-β} underflows: 0, not NaN
    0.0
    """
    g = np.asarray(gamma, dtype=np.float64)
    return (1.0 - g) * _log_gap_rate(g, beta, n, _attention(attention))


def _log_gap_rate(g, beta, n, attention):
    """−d log(1 − γ)/dt = γ̇ / (1 − γ) of (6.9)/(6.10): bounded and smooth up to γ = 1, so the
    solver keeps the relative accuracy of 1 − γ where γ is within 1e-12 of one."""
    common = 2.0 * ((n - 1) * g + 1.0)
    if attention == "softmax":
        with np.errstate(over="ignore"):  # e^{β(1−γ)} = inf gives the limit 0
            return common / (np.exp(beta * (1.0 - g)) + (n - 1))
    return common * np.exp(beta * g) / n


def _orthogonal_solve(beta, n, attention, horizon, **options):
    """solve_ivp (DOP853, rtol 1e-12, atol 1e-14) for y = log(1 − γ), y(0) = 0:
    ẏ = −γ̇/(1 − γ), the same equation (6.9)/(6.10) divided by 1 − γ > 0."""
    from scipy.integrate import solve_ivp

    sol = solve_ivp(
        lambda _, y: -_log_gap_rate(-np.expm1(y), beta, n, attention),
        (0.0, horizon),
        [0.0],
        method="DOP853",
        rtol=_RTOL,
        atol=_ATOL,
        **options,
    )
    if not sol.success:  # pragma: no cover - a smooth scalar ODE
        raise RuntimeError(f"solve_ivp failed for (6.9)/(6.10): {sol.message}")
    return sol


def _orthogonal_args(beta, n, attention):
    beta = real("beta", beta, low=0)
    n = integer("n", n, 2)
    return beta, n, _attention(attention)


def orthogonal_cosine(
    t: ArrayLike, beta: float, n: int, *, attention: str = "softmax"
) -> np.ndarray:
    """γ_β(t): the common pairwise cosine of n tokens started pairwise orthogonal (GLPR Thm 6.8).

    Solves (6.9) (``attention="softmax"``, the flow (SA)) or (6.10) (``"unnormalized"``, (USA))
    from γ_β(0) = 0 with :func:`scipy.integrate.solve_ivp` (DOP853, rtol 1e-12, atol 1e-14),
    written for log(1 − γ) so that 1 − γ keeps its relative accuracy as γ → 1.

    Parameters
    ----------
    t : array_like of float >= 0
        Times (any order, any shape).
    beta : float >= 0
    n : int >= 2
        The number of tokens (the theorem needs d >= n for the start to exist).
    attention : {"softmax", "unnormalized"}

    Returns
    -------
    ndarray of the shape of ``t``

    Examples
    --------
    At β = 0, (6.9) is γ̇ = 2(1 − γ)((n − 1)γ + 1)/n, solved by
    γ = (1 − e^{−2t}) / (1 + (n − 1) e^{−2t}):

    >>> t = np.array([0.0, 0.5, 2.0])
    >>> exact = (1 - np.exp(-2 * t)) / (1 + 3 * np.exp(-2 * t))
    >>> bool(np.allclose(orthogonal_cosine(t, 0.0, 4), exact, rtol=0, atol=1e-11))
    True
    """
    beta, n, attention = _orthogonal_args(beta, n, attention)
    times = np.asarray(t, dtype=np.float64)
    if times.size and (not np.isfinite(times).all() or times.min() < 0):
        raise ValueError(f"t must be finite and >= 0, got min {times.min()!r}")
    grid = np.unique(times)
    if grid.size == 0 or grid[-1] == 0:
        return np.zeros_like(times)
    sol = _orthogonal_solve(beta, n, attention, float(grid[-1]), t_eval=grid)
    return 0.0 - np.expm1(sol.y[0][np.searchsorted(grid, times)])  # 0 − 0.0: no −0.0


def orthogonal_time(
    beta: float, n: int, *, delta: float = 1e-3, attention: str = "softmax"
) -> float:
    """t*(β): the time at which γ_β(t) of (6.9)/(6.10) reaches 1 − δ (every pair clustered).

    Solved as :func:`orthogonal_cosine` with a terminal event log(1 − γ) = log δ; γ̇ > 0 on
    [0, 1), so the time is finite and unique.

    Examples
    --------
    At β = 0 the closed form of :func:`orthogonal_cosine` gives
    t* = log((1 + (n − 1)(1 − δ)) / δ) / 2:

    >>> round(orthogonal_time(0.0, 4, delta=1e-3), 9), round(math.log(3.997 / 1e-3) / 2, 9)
    (4.146649679, 4.146649679)
    """
    beta, n, attention = _orthogonal_args(beta, n, attention)
    delta = real("delta", delta, low=0, low_open=True, high=1, high_open=True)
    target = math.log(delta)

    def hit(_, y):
        return y[0] - target

    hit.terminal = True  # type: ignore[attr-defined]  # solve_ivp reads the attribute
    horizon = 1.0
    while horizon < 1e300:
        sol = _orthogonal_solve(beta, n, attention, horizon, events=hit)
        if sol.t_events[0].size:
            return float(sol.t_events[0][0])
        horizon *= 16.0
    raise RuntimeError(f"γ_β did not reach 1 − δ = {1 - delta:g} (β = {beta:g}, n = {n})")


def phase_boundary(
    betas: ArrayLike, n: int, *, delta: float = 1e-3, attention: str = "softmax"
) -> np.ndarray:
    """The curve Γ = {(t, β): γ_β(t) = 1 − δ} of GLPR Fig. 3: t*(β) of :func:`orthogonal_time`
    at each β of ``betas`` (an array of their shape).

    >>> phase_boundary([0.0], 4).round(9).tolist()
    [4.146649679]
    """
    b = np.asarray(betas, dtype=np.float64)
    return np.array(
        [orthogonal_time(x, n, delta=delta, attention=attention) for x in b.ravel()]
    ).reshape(b.shape)


def random_start_bound(t: ArrayLike, beta: float, n: int, d: ArrayLike) -> np.ndarray:
    """The short-time term of GLPR Thm 6.9's deviation bound for n i.i.d. uniform starts on
    S^{d−1}: |<x_i(t), x_j(t)> − γ_β(t)| <= 2 c(β) n t √(log d / d), c(β) = e^{10 max(1, β)}.

    The theorem bounds the deviation by the minimum of this and C e^{−λt}, whose constants
    C, λ are not explicit (so not computed here); it holds with probability at least
    :func:`random_start_probability`.

    >>> round(float(random_start_bound(1.0, 0.5, 2, math.e**2)) / math.exp(10), 6)  # 4√2/e
    2.08104
    """
    beta = real("beta", beta, low=0)
    n = integer("n", n, 2)
    d = real("d", d, low=1, low_open=True)
    t = np.asarray(t, dtype=np.float64)
    return 2.0 * math.exp(10.0 * max(1.0, beta)) * n * t * math.sqrt(math.log(d) / d)


def random_start_probability(n: int, d: float) -> float:
    """The probability 1 − 2n² d^{−1/64} with which GLPR Thm 6.9's bound holds (negative, that
    is vacuous, unless d > (2n²)^64).

    >>> random_start_probability(2, 2.0 ** 192) # 1 − 8 · 2^{−3}
    0.0
    """
    n = integer("n", n, 2)
    d = real("d", d, low=1)
    return 1.0 - 2.0 * n * n * d ** (-1.0 / 64.0)
