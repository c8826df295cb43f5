"""The Binder-type ratio U = E[m_1^4] / E[m_1^2]^2 of the order parameter at K = K_#(β): its
estimator, its mean-field prediction at N tokens on the circle (d = 2), and the power analysis
of locating β_* by the crossing of U_N(β) for two N.

Why it changes sign at β_*: the N-token system is a gradient system whose empirical measure has
the large-deviation rate N (F_K − min F_K) (:mod:`metastab.theory.noisy`), so the law of the
2-vector (1/N) Σ_i x_i is ∝ exp(−N F_K(m)), F_K(m) the free energy minimised over the densities
with first moment m (the contraction principle), and the law of m_1 = ‖(1/N) Σ_i x_i‖ is
∝ m exp(−N F_K(m)). At K = K_# the quadratic Landau coefficient vanishes and F_K(m) ≈ a_4 m^4 +
a_6 m^6 with a_4 changing sign at β_* (Mun–Rosenzweig, arXiv 2604.16288): as N → ∞, U → π/2
(pure quartic, β < β_*), Γ(1/3)/Γ(2/3)^2 (pure sextic, β = β_*), 1 (bimodal, β > β_*). In the
pure Landau form U depends on a_4 N^{1/3} a_6^{−2/3} only, so the curves for two N cross at β_*.

The time to sample U: near the uniform state (1/N) Σ_i x_i follows the Langevin dynamics
dm = −(1/2) ∇F_K(m) dt + N^{−1/2} dW (at K = 0 each x_i's cosine decays at rate 1 and
E[m_x^2] = 1/(2N), which fix both constants), whose generator is
(1/(2N)) p^{−1} (p f′)′ on radial f, p(m) = m e^{−N F_K(m)}. A time average of g over a time T
has variance 2 τ_g Var(g) / T with τ_g Var(g) = 2N ∫ G(m)^2 / p(m) dm, G(m) = ∫_0^m p (g − E g)
(p normalised; the inverse of the generator in one dimension). The estimator of U is, to first
order, the mean of its influence function h = m^4 / E_2^2 − 2 E_4 m^2 / E_2^3.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from metastab.theory.noisy import critical_coupling_linear, funk_hecke_coefficients

QUARTIC = math.pi / 2
SEXTIC = math.gamma(1 / 3) / math.gamma(2 / 3) ** 2
ANGLES = 256  # midpoint nodes in θ: exact for trigonometric polynomials of degree < 256
DEGREE = 24  # Fourier modes kept: Ŵ_ℓ ~ (β/2)^ℓ / ℓ! is below 1e-17 Ŵ_1 for β <= 3.5
MULTIPLIERS = np.linspace(0.0, 8.0, 161)  # the ℓ = 1 multiplier λ: m from 0 to 0.93


def binder_ratio(m: np.ndarray) -> float:
    """U = mean(m^4) / mean(m^2)^2 of samples ``m`` of the order parameter m_1.

    Parameters
    ----------
    m : array_like
        Samples of m_1 >= 0, any shape (all are pooled).

    Returns
    -------
    U : float
        The ratio; 1 for a constant m, 2 for the norm of a centred Gaussian 2-vector.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.studies import study_module
    >>> binder = study_module("noisy-transition", "binder")
    >>> binder.binder_ratio(np.array([0.5, 0.5, 0.5]))
    1.0
    """
    m = np.asarray(m, dtype=np.float64).ravel()
    if m.size == 0 or not np.isfinite(m).all() or m.min() < 0:
        raise ValueError("m must hold finite values >= 0, at least one")
    m2 = m * m
    return float(np.mean(m2 * m2) / np.mean(m2) ** 2)


def binder_interval(
    m: np.ndarray, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """U of the samples ``m`` (one row per independent chain) and its percentile bootstrap
    interval over the chains (rows resampled with replacement, ``resamples`` times).

    Parameters
    ----------
    m : ndarray, shape (chains, samples)
        The order parameter of each chain's records.
    confidence : float in (0, 1)
        The interval's level.
    resamples : int >= 100
        The bootstrap resamples.
    rng : numpy.random.Generator
        The resampling stream.

    Returns
    -------
    (U, low, high) : tuple of float

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.studies import study_module
    >>> binder = study_module("noisy-transition", "binder")
    >>> m = np.abs(np.random.default_rng(0).normal(size=(40, 50))) + 1.0
    >>> u, lo, hi = binder.binder_interval(m, 0.95, 200, np.random.default_rng(1))
    >>> bool(lo <= u <= hi)
    True
    """
    m = np.asarray(m, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] < 2:
        raise ValueError(f"m must have shape (chains >= 2, samples), got {m.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if resamples < 100:
        raise ValueError(f"resamples must be >= 100, got {resamples!r}")
    u = binder_ratio(m)
    m2 = m * m
    e2, e4 = m2.mean(axis=1), (m2 * m2).mean(axis=1)
    pick = rng.integers(0, m.shape[0], size=(resamples, m.shape[0]))
    boot = e4[pick].mean(axis=1) / e2[pick].mean(axis=1) ** 2
    lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
    return u, float(lo), float(hi)


@lru_cache(maxsize=64)
def constrained_free_energy(beta: float, coupling: float, d: int = 2) -> tuple[np.ndarray, ...]:
    """F_K(m) − F_K(uniform): the free energy of :mod:`metastab.theory.noisy` minimised over the
    densities on the circle with first moment ∫ cos θ ρ dσ = m (the rate function of the
    order parameter by contraction), on the curve of multipliers λ of :data:`MULTIPLIERS`.

    The minimiser is ρ ∝ exp(λ P_1 + Σ_{ℓ >= 2} 2K Ŵ_ℓ b_ℓ P_ℓ), b_ℓ = ∫ P_ℓ ρ dσ (P_ℓ =
    √2 cos ℓθ): the higher modes are slaved to the constrained one; their self-consistency is
    solved by damped fixed-point iteration, each λ from the previous solution.

    Parameters
    ----------
    beta : float > 0
        The inverse temperature of the interaction.
    coupling : float > 0
        K, below the ℓ = 2 instability 1/(2 Ŵ_2) (where the iteration contracts).
    d : int
        Only 2 (the circle).

    Returns
    -------
    (m, F) : tuple of ndarray
        Increasing m from 0, and F_K(m) − F_K(uniform), per particle.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.studies import study_module
    >>> from metastab.theory import critical_coupling_linear
    >>> binder = study_module("noisy-transition", "binder")
    >>> m, F = binder.constrained_free_energy(2.0, 0.5 * critical_coupling_linear(2.0, 2))
    >>> bool(abs(m[0]) < 1e-12 and abs(F[0]) < 1e-12 and (np.diff(F) > 0).all())
    True
    """
    if d != 2:
        raise ValueError(f"d must be 2 (the circle), got {d!r}")
    if not beta > 0 or not coupling > 0:
        raise ValueError(f"beta and coupling must be > 0, got {beta!r}, {coupling!r}")
    ell = np.arange(DEGREE + 1)
    theta = (np.arange(ANGLES) + 0.5) * 2 * math.pi / ANGLES
    basis = math.sqrt(2) * np.cos(np.outer(ell, theta))
    basis[0] = 1.0
    fh = funk_hecke_coefficients(beta, 2, ell)
    gain = 2 * coupling * fh
    gain[:2] = 0.0  # ℓ = 0 is the normalisation, ℓ = 1 the constraint
    if coupling * 2 * fh[2] >= 1:
        raise ValueError(f"coupling = {coupling!r} is beyond the ℓ = 2 instability")
    c = np.zeros(DEGREE + 1)
    m, F = [], []
    for lam in MULTIPLIERS:
        for _ in range(5000):
            e = lam * basis[1] + c @ basis
            f = np.exp(e - e.max())
            f /= f.mean()
            new = gain * (basis @ f) / ANGLES
            done = np.abs(new - c).max() < 1e-14
            c = 0.5 * (c + new)
            if done:
                break
        else:  # pragma: no cover - contraction guaranteed below the ℓ = 2 instability
            raise RuntimeError(f"no fixed point at λ = {lam!r}")
        e = lam * basis[1] + c @ basis
        f = np.exp(e - e.max())
        f /= f.mean()
        b = basis @ f / ANGLES
        m.append(float(np.mean(f * np.cos(theta))))
        F.append(float(np.mean(f * np.log(f)) - coupling * (fh * b * b).sum() + coupling * fh[0]))
    return np.array(m), np.array(F)


def _law(beta: float, n: int, factor: float, points: int = 4001):
    """The grid in m and the normalised density p(m) ∝ m exp(−N F_K(m)) at K = factor K_#."""
    from scipy.interpolate import CubicSpline

    m, F = constrained_free_energy(beta, factor * critical_coupling_linear(beta, 2))
    grid = np.linspace(0.0, m[-1], points)
    energy = CubicSpline(m, F)(grid)
    p = grid * np.exp(-n * (energy - energy.min()))
    return grid, p / np.trapezoid(p, grid)


def predicted_binder(beta: float, n: int, factor: float = 1.0) -> tuple[float, float]:
    """The mean-field U at N = ``n`` tokens and K = factor K_#(β) on the circle, and the
    constant v with Var(Û) = v / T for records averaged over a total time T of chains (module
    docstring).

    Parameters
    ----------
    beta : float > 0
        The inverse temperature.
    n : int >= 2
        The tokens.
    factor : float > 0
        K / K_#.

    Returns
    -------
    (U, v) : tuple of float

    Examples
    --------
    >>> from metastab.studies import study_module
    >>> binder = study_module("noisy-transition", "binder")
    >>> u, v = binder.predicted_binder(1.0, 20000)
    >>> bool(abs(u - binder.QUARTIC) < 0.01 and v > 0)
    True
    """
    from scipy.integrate import cumulative_trapezoid

    grid, p = _law(float(beta), int(n), float(factor))
    e2 = np.trapezoid(p * grid**2, grid)
    e4 = np.trapezoid(p * grid**4, grid)
    h = grid**4 / e2**2 - 2 * e4 * grid**2 / e2**3
    h = h - np.trapezoid(p * h, grid)
    # G from below up to the median and from above past it: each side's rounding stays
    # below p's tail (G → 0 at both ends)
    G = cumulative_trapezoid(p * h, grid, initial=0.0)
    mass = cumulative_trapezoid(p, grid, initial=0.0)
    G = np.where(mass < 0.5, G, G - G[-1])
    keep = p > 1e-300
    v = 4 * n * np.trapezoid(np.where(keep, G * G / np.where(keep, p, 1.0), 0.0), grid)
    return float(e4 / e2**2), float(v)


def predicted_crossing(n: tuple[int, int], low: float, high: float, factor: float = 1.0) -> float:
    """The β in [low, high] where the mean-field U of the two N agree (Brent); NaN if their
    difference does not change sign there."""
    from scipy.optimize import brentq

    def gap(beta: float) -> float:
        return predicted_binder(beta, n[1], factor)[0] - predicted_binder(beta, n[0], factor)[0]

    if gap(low) * gap(high) > 0:
        return math.nan
    return float(brentq(gap, low, high, xtol=1e-3))


def required_time(beta_low: float, beta_high: float, n: tuple[int, int], z: float) -> float:
    """The chain time T per (β, N) point at which the mean-field difference U_{N_2} − U_{N_1}
    at ``beta_low`` and at ``beta_high`` each lies ``z`` standard errors from 0 (the crossing
    then placed between them): the larger of the two."""
    out = []
    for beta in (beta_low, beta_high):
        (u1, v1), (u2, v2) = (predicted_binder(beta, k) for k in n)
        out.append(z * z * (v1 + v2) / (u2 - u1) ** 2)
    return float(max(out))
