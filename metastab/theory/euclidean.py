"""The published bounds of [FW] in R^d (docs: models#statements-fw), as functions.

- :func:`clustering_phase`: m, τ and T1 of the clustering phase ([FW] Thm 5.2).
- :func:`metastability_bound`, :func:`metastability_exponent`, :func:`exit_time_bound`: the
  lower bound on P[T2 >= t] of [FW] Thm 5.4 and what it implies for E[T2].
- :func:`collapse_rate`: the contraction constant of [FW] §5.

Everything is float64 NumPy; nothing here simulates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .._validate import integer, real
from ..setups.polytopes import Polytope

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "ClusteringPhase",
    "CollapseRate",
    "clustering_phase",
    "collapse_rate",
    "exit_time_bound",
    "metastability_bound",
    "metastability_exponent",
]


# --------------------------------------------------------------------------- Thm 5.2


@dataclass(frozen=True)
class ClusteringPhase:
    """m, τ, T1 of [FW] Thm 5.2 and the hypotheses checked on the configuration.

    ``hypotheses`` maps each hypothesis (equinorm, acute_cones, separated, vertex_tokens and,
    when β was given, eroded_cones) to whether it holds: the quantities are computed either
    way, the theorem speaks only when all hold. Made by :func:`clustering_phase`.

    Attributes
    ----------
    m : float
        The smallest distance of a non-vertex token to the vertex of its cell.
    tau : float
        The radius τ the tokens reach in the clustering phase.
    T1 : int
        The number of steps of the phase.
    c0 : float
        The separation of the polytope.
    hypotheses : dict of str to bool
        Whether each hypothesis of the theorem holds.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.theory import clustering_phase
    >>> V = [[1.0, 0.0], [-0.5, 3 ** 0.5 / 2], [-0.5, -(3 ** 0.5) / 2]]
    >>> ph = clustering_phase(V, np.vstack([V, [[0.8, 0.0]]]), 0.5)
    >>> round(ph.c0, 12), all(ph.hypotheses.values())
    (1.5, True)
    >>> sorted(ph.hypotheses)
    ['acute_cones', 'equinorm', 'separated', 'vertex_tokens']
    """

    m: float
    tau: float
    T1: int
    c0: float
    hypotheses: dict = field(default_factory=dict)


def clustering_phase(
    vertices: Polytope | ArrayLike, x0: ArrayLike, gamma: float, *, beta: float | None = None
) -> ClusteringPhase:
    """Quantities of the clustering phase of Thm 5.2: its length T1 and the radius τ it reaches.

    [FW] Thm 5.2 (docs: models#eq-clustering). With
    σ(i) = argmax_a <x_i^0, v_a> (B = I) and c0 = min_{a≠b} (<v_a, v_a> − <v_a, v_b>):

        m  = min_{i > κ} ‖x_i^0 − v_σ(i)‖,
        τ  = min{ min_{a≠b} c0 / (2 ‖v_a − v_b‖),  √(2 c0) / 2,  (1 − γ) m },
        T1 = ⌊ log(τ/m) / log(1 − γ) ⌋   (floored with a relative slack of 1e-12).

    Parameters
    ----------
    vertices : array_like (κ, d) or Polytope
        The polytope's points v_a.
    x0 : array_like (n, d)
        The configuration; tokens 0..κ−1 are the vertex tokens, n > κ.
    gamma : float in (0, 1)
        The step size γ.
    beta : float, optional
        When given, also check that every other token lies in the eroded dominance cone
        I_σ(i)(β^{−1/8}) ⊖ β^{−1/4}.

    Returns
    -------
    phase : ClusteringPhase
        m, τ, T1, c0 and the hypotheses checked.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.theory import clustering_phase
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
    """The exponent A/k = c0 ε / (2γ (1 + ε/γ)) of the Thm 5.4 bound (docs: models#statements-fw).

    T2 is at least of order e^{β c0 ε / (2γ(1 + ε/γ))}: the slope of log E[T2] against β is at
    least this.

    Parameters
    ----------
    c0 : float
        The separation of the polytope, > 0.
    eps : float
        The exit margin ε, > 0.
    gamma : float
        The step size γ, in (0, 1].

    Returns
    -------
    exponent : float
        c0 ε / (2γ (1 + ε/γ)).

    Examples
    --------
    >>> from metastab.theory import metastability_exponent
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
    """Lower bound on P[T2 >= t], the probability that the metastable phase lasts t steps.

    [FW] Thm 5.4 (docs: models#eq-metastability-bound), for t > 1:

        P[T2 >= t] >= 1 − exp((1 + ε/γ) log(γt/ε) + (1 + ε/γ) log n − β c0 ε / (2γ)).

    Values <= 0 are vacuous (returned as computed, not clipped). Broadcasts over t and β.

    Parameters
    ----------
    t : array_like
        The steps, > 1.
    beta : array_like
        The inverse temperatures β.
    c0, eps, gamma, n : float
        The separation, the exit margin ε, the step size γ and the token count.
    diameter : float, optional
        d(K); when given, the hypothesis ε/γ >= 2 d(K) is checked (ValueError if it fails).

    Returns
    -------
    bound : ndarray
        The bound, broadcast over ``t`` and ``beta``.

    Examples
    --------
    >>> from metastab.theory import metastability_bound
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

    Parameters
    ----------
    beta : array_like
        The inverse temperatures β.
    c0, eps, gamma, n : float
        The separation, the exit margin ε, the step size γ and the token count.
    diameter : float, optional
        d(K); when given, the hypothesis ε/γ >= 2 d(K) is checked (ValueError if it fails).
    prob : float, optional
        When given, in (0, 1): the bound on the time T2 exceeds with this probability instead
        of on E[T2].

    Returns
    -------
    log_bound : ndarray
        The log of the bound, one per β.

    Examples
    --------
    >>> from metastab.theory import exit_time_bound
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


# --------------------------------------------------------------------------- collapse


@dataclass(frozen=True)
class CollapseRate:
    """Contraction of [FW] §5 (collapse): diam(X^{t+1}) <= (1 − γc) diam(X^t).

    ``c`` may underflow at large abs(β) R²; ``log_c`` and ``log_factor`` = log(1 − γc) stay
    exact. Made by :func:`collapse_rate`.

    Attributes
    ----------
    c : float
        The collapse constant (0 where it underflows).
    log_c : float
        Its logarithm, exact.
    gamma : float
        The step size γ.

    Examples
    --------
    >>> from metastab.theory import collapse_rate
    >>> rate = collapse_rate(1.0, radius=1.0, n=2, gamma=0.5)
    >>> round(rate.steps(0.5), 3), round(rate.log_steps(0.5), 6)
    (20.138, 3.002621)
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
    """The collapse constant c = e^{−abs(β) R²} / (n e^{abs(β) R²}) of [FW] §5.

    For SA_β with all ‖x_j‖ <= R, every step shrinks the diameter at least by 1 − γc
    (docs: models#eq-collapse).

    Parameters
    ----------
    beta : float
        The inverse temperature β (any sign).
    radius : float
        R, a bound on every token's norm, >= 0.
    n : int
        The number of tokens, >= 1.
    gamma : float
        The step size γ, in (0, 1].

    Returns
    -------
    rate : CollapseRate
        c, log c and the per-step factor.

    Examples
    --------
    >>> from metastab.theory import collapse_rate
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
