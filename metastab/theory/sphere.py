"""The published laws of the attention dynamics on the sphere (docs: models#models-sphere), as
functions.

- :func:`meanfield_growth_rates`, :func:`meanfield_clusters`: the unstable modes of the uniform
  state of (USA) on the circle and k* = argmax_k k² I_k(β) (Bruno, Pasqualotto, Agazzi).
- :func:`merge_time`: the time two point clusters on the sphere take to merge under (SA) or
  (USA), the rate e^{β(1 − cos Δθ)} of GKPR's staircase, by quadrature.
- :func:`orthogonal_cosine`, :func:`orthogonal_time`, :func:`phase_boundary`: the common cosine
  γ_β(t) of tokens started orthogonal on the sphere (GLPR Thm 6.8, eqs. (6.9)/(6.10)), the time
  it reaches 1 − δ and the curve Γ of GLPR Fig. 3; :func:`random_start_bound`,
  :func:`random_start_probability`: GLPR Thm 6.9 for random starts (docs: models#sphere-statements
  (1–3)).

Everything is float64 NumPy; nothing here simulates.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .._validate import integer, real

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "meanfield_clusters",
    "meanfield_growth_rates",
    "merge_time",
    "orthogonal_cosine",
    "orthogonal_rate",
    "orthogonal_time",
    "phase_boundary",
    "random_start_bound",
    "random_start_probability",
]


# --------------------------------------------------------------------------- sphere: mean field


def meanfield_growth_rates(beta: float, k_max: int) -> np.ndarray:
    """Linear growth rates λ_1..λ_{k_max} of the Fourier modes of the uniform state of (USA).

    On the circle (docs: models#sphere-statements (6); Bruno, Pasqualotto, Agazzi, arXiv
    2410.23228).

    The mean-field (USA) velocity on the circle is v(θ) = ∫ e^{β cos(θ − φ)} sin(φ − θ) ρ(φ) dφ,
    whose kernel is (1/β) d/du e^{β cos u}; with e^{β cos u} = Σ_k I_k(β) e^{iku}, a perturbation
    ε e^{ikθ} of ρ = 1/(2π) grows at the rate

        λ_k = k² I_k(β) / β   (I_k the modified Bessel function of the first kind).

    Computed with the exponentially scaled Bessel function: the returned rates are exact and do
    not overflow for β up to ~700 (λ_k ~ e^β).

    Parameters
    ----------
    beta : float
        The inverse temperature β, > 0.
    k_max : int
        The number of modes, >= 1.

    Returns
    -------
    rates : ndarray (k_max,)
        λ_k for k = 1..k_max.

    Examples
    --------
    >>> from metastab.theory import meanfield_growth_rates
    >>> meanfield_growth_rates(4.0, 4).round(3)          # k² I_k(4) / 4
    array([2.44 , 6.422, 7.509, 5.665])
    """
    from scipy.special import ive

    beta = real("beta", beta, low=0, low_open=True)
    k = np.arange(1, integer("k_max", k_max, 1) + 1, dtype=np.float64)
    return k * k * ive(k, beta) * math.exp(beta) / beta


def meanfield_clusters(beta: float) -> int:
    """The number of clusters k* = argmax_{k >= 1} k² I_k(β) that (USA) forms on the circle.

    From a nearly uniform start: the fastest-growing mode of :func:`meanfield_growth_rates`
    (Bruno, Pasqualotto, Agazzi, arXiv 2410.23228; docs: models#eq-meanfield-circle).

    k² I_k(β) is compared with the exponentially scaled I_k (no overflow at any β); the search
    runs over k <= 2√(2β) + 10 (the maximiser is near √(2β) for large β) and refuses a maximum on
    that boundary. A tie (a β on the boundary between two modes) returns the smaller k.

    Parameters
    ----------
    beta : float
        The inverse temperature β, > 0.

    Returns
    -------
    k : int
        The fastest-growing mode, >= 1.

    Examples
    --------
    >>> from metastab.theory import meanfield_clusters
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
    """log of the time two point clusters on S^{d-1} take to merge under (SA) or (USA).

    From the angle ``angle`` until their cosine reaches 1 − δ (docs: models#sphere-statements
    (5): GKPR's rate).

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
    beta : float
        The inverse temperature β, >= 0.
    angle : float in (Δ_δ, π)
        The initial angle between the clusters, radians.
    masses : (int, int), optional
        Tokens in each cluster (default one each).
    delta : float in (0, 1), optional
        Clustered when the cosine is >= 1 − δ (default 1e-3).
    attention : {"softmax", "unnormalized"}, optional
        (SA) (default) or (USA).
    n : int, optional
        (USA) only: the normalisation Z = n (default m_a + m_b).

    Returns
    -------
    log_time : float
        log T.

    Examples
    --------
    >>> import math
    >>> from metastab.theory import merge_time
    >>> T = math.exp(merge_time(0.0, math.pi / 2))  # β = 0: Δ' = −sin Δ, T = −log tan(Δ_δ/2)
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

    Parameters
    ----------
    gamma : array_like
        The common cosine γ, in [−1/(n − 1), 1].
    beta : float
        The inverse temperature β.
    n : int
        The number of tokens.
    attention : {"softmax", "unnormalized"}, optional
        (SA), eq. (6.9) (default), or (USA), eq. (6.10).

    Returns
    -------
    rate : ndarray
        γ̇, of the shape of ``gamma``.

    Examples
    --------
    >>> from metastab.theory import orthogonal_rate
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

    Solves GLPR (6.9) (``attention="softmax"``, the flow (SA); docs: models#eq-orthogonal-sa) or
    (6.10) (``"unnormalized"``, (USA); docs: models#eq-orthogonal-usa) from γ_β(0) = 0 with
    :func:`scipy.integrate.solve_ivp` (DOP853, rtol 1e-12, atol 1e-14), written for
    log(1 − γ) so that 1 − γ keeps its relative accuracy as γ → 1.

    Parameters
    ----------
    t : array_like of float >= 0
        Times (any order, any shape).
    beta : float >= 0
        The inverse temperature β.
    n : int >= 2
        The number of tokens (the theorem needs d >= n for the start to exist).
    attention : {"softmax", "unnormalized"}, optional
        (SA) (default) or (USA).

    Returns
    -------
    cosine : ndarray
        γ_β at each time, of the shape of ``t``.

    Examples
    --------
    At β = 0, (6.9) is γ̇ = 2(1 − γ)((n − 1)γ + 1)/n, solved by
    γ = (1 − e^{−2t}) / (1 + (n − 1) e^{−2t}):

    >>> import numpy as np
    >>> from metastab.theory import orthogonal_cosine
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

    Parameters
    ----------
    beta : float
        The inverse temperature β, >= 0.
    n : int
        The number of tokens, >= 2.
    delta : float in (0, 1), optional
        Clustered when the cosine is >= 1 − δ (default 1e-3).
    attention : {"softmax", "unnormalized"}, optional
        (SA) (default) or (USA).

    Returns
    -------
    time : float
        t*(β).

    Examples
    --------
    At β = 0 the closed form of :func:`orthogonal_cosine` gives
    t* = log((1 + (n − 1)(1 − δ)) / δ) / 2:

    >>> import math
    >>> from metastab.theory import orthogonal_time
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
    """The curve Γ = {(t, β): γ_β(t) = 1 − δ} of GLPR Fig. 3, the times t*(β) of clustering.

    t*(β) of :func:`orthogonal_time` at each β of ``betas``.

    Parameters
    ----------
    betas : array_like
        The inverse temperatures, each >= 0.
    n : int
        The number of tokens, >= 2.
    delta : float in (0, 1), optional
        Clustered when the cosine is >= 1 − δ (default 1e-3).
    attention : {"softmax", "unnormalized"}, optional
        (SA) (default) or (USA).

    Returns
    -------
    times : ndarray
        t*(β), of the shape of ``betas``.

    Examples
    --------
    >>> from metastab.theory import phase_boundary
    >>> phase_boundary([0.0], 4).round(9).tolist()
    [4.146649679]
    """
    b = np.asarray(betas, dtype=np.float64)
    return np.array(
        [orthogonal_time(x, n, delta=delta, attention=attention) for x in b.ravel()]
    ).reshape(b.shape)


def random_start_bound(t: ArrayLike, beta: float, n: int, d: ArrayLike) -> np.ndarray:
    """The short-time term of GLPR Thm 6.9's deviation bound for n i.i.d. uniform starts.

    For starts on S^{d−1}: abs(<x_i(t), x_j(t)> − γ_β(t)) <= 2 c(β) n t √(log d / d), with
    c(β) = e^{10 max(1, β)}.

    The theorem bounds the deviation by the minimum of this and C e^{−λt}, whose constants
    C, λ are not explicit (so not computed here); it holds with probability at least
    :func:`random_start_probability`.

    Parameters
    ----------
    t : array_like
        The times.
    beta : float
        The inverse temperature β, >= 0.
    n : int
        The number of tokens, >= 2.
    d : float
        The dimension, > 1.

    Returns
    -------
    bound : ndarray
        The bound, of the shape of ``t``.

    Examples
    --------
    >>> import math
    >>> from metastab.theory import random_start_bound
    >>> round(float(random_start_bound(1.0, 0.5, 2, math.e**2)) / math.exp(10), 6)  # 4√2/e
    2.08104
    """
    beta = real("beta", beta, low=0)
    n = integer("n", n, 2)
    d = real("d", d, low=1, low_open=True)
    t = np.asarray(t, dtype=np.float64)
    return 2.0 * math.exp(10.0 * max(1.0, beta)) * n * t * math.sqrt(math.log(d) / d)


def random_start_probability(n: int, d: float) -> float:
    """The probability 1 − 2n² d^{−1/64} with which GLPR Thm 6.9's bound holds.

    Negative, that is vacuous, unless d > (2n²)^64.

    Parameters
    ----------
    n : int
        The number of tokens, >= 2.
    d : float
        The dimension, >= 1.

    Returns
    -------
    probability : float
        1 − 2n² d^{−1/64}.

    Examples
    --------
    >>> from metastab.theory import random_start_probability
    >>> random_start_probability(2, 2.0 ** 192) # 1 − 8 · 2^{−3}
    0.0
    """
    n = integer("n", n, 2)
    d = real("d", d, low=1)
    return 1.0 - 2.0 * n * n * d ** (-1.0 / 64.0)
