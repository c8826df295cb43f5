"""The mean-field theory of the noisy (USA) transformer on the sphere S^{d−1}, as functions
(docs: models#noisy-meanfield).

[MR-d] Mun, Rosenzweig, *Phase transitions for the noisy transformer model in arbitrary
dimension* (arXiv 2606.05140); [MR-2] the same authors for d = 2 (arXiv 2604.16288);
[BBR] Balasubramanian, Banerjee, Rigollet (arXiv 2510.20094); [SS] Shalova, Schlichting
(arXiv 2412.14813).

The free energy, on probability densities ρ with respect to the *normalised* surface measure σ
of S^{d−1} (this package's reading of [MR-d], fixed by the K_# of its abstract and by
[MR-2]'s K_# = 3π/4 of the Doi–Onsager model under the same reading; β_* does not depend on
it):

    F_K(ρ) = ∫ ρ log ρ dσ − K ∫∫ W_β(⟨x, y⟩) ρ(x) ρ(y) dσ(x) dσ(y),   W_β(t) = (e^{βt} − 1)/β.

Its Wasserstein gradient flow, the McKean–Vlasov equation used here for time, is
∂_t ρ = Δρ − 2K ∇·(ρ ∇(W_β ∗ ρ)), where ∇(W_β ∗ ρ)(x) = P⊥_x ∫ e^{β⟨x, y⟩} y ρ(y) dσ(y) is the
(USA) mean-field velocity; its N-particle system is
dX_i = 2K P⊥_{X_i}((1/N) Σ_j e^{β⟨X_i, X_j⟩} X_j) dt + √2 dB_i (dB_i Brownian motion on the
sphere, generator Δ/2). In the time of (USA) with unit drift, s = 2K t, this is the drift plus
Brownian noise of variance σ² = 1/K per unit time: K is the inverse noise level.

Stationary states are the fixed points ρ = e^{2K W_β∗ρ}/Z. The N-particle Gibbs measure is
∝ exp(N K ∫∫ W_β dμ_N dμ_N), whose empirical measure satisfies a large-deviation principle with
rate N (F_K(μ) − min F_K): the escape time from a local minimiser grows like e^{N ΔF}, ΔF the
free energy of the saddle minus that of the minimiser, *per particle, in these units*.

- :func:`critical_coupling_linear` (K_#), :func:`tricritical_beta` (β_*),
  :func:`funk_hecke_coefficients`, :func:`noisy_growth_rates`: closed forms.
- :func:`zonal_free_energy`, :func:`stationary_branch`, :func:`critical_coupling` (K_c),
  :func:`fold_coupling` (K_fold), :func:`free_energy_barrier` (ΔF): the free energy on zonal
  densities ρ(⟨x, e⟩), computed.

Everything is float64 NumPy/SciPy; nothing here simulates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from .._validate import integer, real

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "NoisyBranch",
    "critical_coupling",
    "critical_coupling_linear",
    "fold_coupling",
    "free_energy_barrier",
    "funk_hecke_coefficients",
    "noisy_growth_rates",
    "stationary_branch",
    "tricritical_beta",
    "zonal_free_energy",
]

# Spectral truncation: degrees ℓ <= L with Ŵ_ℓ √dim_ℓ >= TAIL · Ŵ_1 (the potential 2K W∗ρ is
# then exact to ~1e-16 relative); quadrature: NODES Gauss–Jacobi nodes in u = cos θ.
TAIL = 1e-17
NODES = 256
# Newton on the self-consistency equations: stop at this max-norm residual.
_NEWTON_TOL = 1e-13


def _args(beta, d):
    return real("beta", beta, low=0, low_open=True), integer("d", d, 2)


def _log_kernel_eigenvalues(beta: float, d: int, degrees: np.ndarray) -> np.ndarray:
    """log of the Funk–Hecke eigenvalues of e^{βt} on S^{d−1} with the normalised measure:
    Γ(d/2) (2/β)^{d/2−1} I_{ℓ+d/2−1}(β), with the exponentially scaled Bessel function."""
    from scipy.special import ive

    nu = degrees + d / 2 - 1
    with np.errstate(divide="ignore"):  # I_ν(β) underflowing to 0: log −inf, eigenvalue 0
        log_i = np.log(ive(nu, beta)) + beta
    return math.lgamma(d / 2) + (d / 2 - 1) * math.log(2 / beta) + log_i


def funk_hecke_coefficients(beta: float, d: int, degrees: ArrayLike) -> np.ndarray:
    """Ŵ_ℓ: the eigenvalue of the convolution ρ ↦ ∫ W_β(⟨·, y⟩) ρ(y) dσ(y) on spherical
    harmonics of degree ℓ, W_β(t) = (e^{βt} − 1)/β and σ the normalised measure of S^{d−1}
    (Funk–Hecke; the Bessel coefficient computation of [MR-d]):

        Ŵ_ℓ = Γ(d/2) (2/β)^{d/2−1} I_{ℓ+d/2−1}(β) / β   (ℓ >= 1),

    and Ŵ_0 = (E_σ e^{β⟨x, e⟩} − 1)/β = Σ_{k>=1} (β²/4)^k / (k! (d/2)_k) / β (the series,
    free of the cancellation of the −1 at small β). Ŵ_ℓ decreases in ℓ, so degree 1 is the
    first to turn unstable.

    Parameters
    ----------
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.
    degrees : array_like of int >= 0
        The degrees ℓ.

    Returns
    -------
    coefficients : ndarray of float
        Ŵ_ℓ for each of ``degrees``, in their shape.

    Examples
    --------
    >>> from metastab.theory import funk_hecke_coefficients
    >>> funk_hecke_coefficients(1.0, 2, [1, 2]).round(6)   # I_1(1), I_2(1) on the circle
    array([0.565159, 0.135748])
    >>> float(funk_hecke_coefficients(1e-3, 3, [0])[0])    # β/(2d) + β³/120 for small β
    0.00016666667500000017
    """
    beta, d = _args(beta, d)
    ell = np.asarray(degrees)
    if ell.size and (ell.dtype.kind not in "iu" or ell.min() < 0):
        raise ValueError(f"degrees must be integers >= 0, got {degrees!r}")
    ell = ell.astype(np.float64)
    out = np.exp(_log_kernel_eigenvalues(beta, d, ell)) / beta
    if (ell == 0).any():
        out[ell == 0] = _mean_minus_one(beta, d) / beta
    return out


def _mean_minus_one(beta: float, d: int) -> float:
    """E_σ e^{β⟨x, e⟩} − 1 = 0F1(; d/2; β²/4) − 1, summed as its series for β < 8."""
    if beta >= 8:
        return float(np.exp(_log_kernel_eigenvalues(beta, d, np.zeros(1)))[0]) - 1.0
    q, term, total, k = beta * beta / 4, 1.0, 0.0, 0
    while True:
        k += 1
        term *= q / (k * (d / 2 + k - 1))
        total += term
        if term < 1e-17 * total:
            return total


def critical_coupling_linear(beta: float, d: int) -> float:
    """K_#^{(d)}(β) = β^{d/2} / (2^{d/2} Γ(d/2) I_{d/2}(β)): the coupling up to which the uniform
    density is linearly stable ([MR-d], abstract; [MR-2] for d = 2), i.e.
    2 K_# Ŵ_1 = 1 with Ŵ_1 of :func:`funk_hecke_coefficients`.

    Computed in log space (exponentially scaled I): finite for β up to ~1e300, where it
    underflows to 0 like e^{−β}. As β → 0 it tends to d/2.

    Parameters
    ----------
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.

    Returns
    -------
    K_sharp : float
        K_#, in the package's normalisation (module docstring).

    See Also
    --------
    critical_coupling : K_c, where the uniform density stops being the global minimiser.

    Examples
    --------
    >>> from metastab.theory import critical_coupling_linear
    >>> round(critical_coupling_linear(1.0, 2), 4), round(critical_coupling_linear(1.0, 3), 4)
    (0.8847, 1.3591)
    """
    beta, d = _args(beta, d)
    log_k = (d / 2) * (math.log(beta) - math.log(2)) - math.lgamma(d / 2)
    return math.exp(log_k - _log_bessel(d / 2, beta))


def _log_bessel(nu: float, beta: float) -> float:
    from scipy.special import ive

    return math.log(float(ive(nu, beta))) + beta


def tricritical_beta(d: int) -> float:
    """β_*^{(d)}: the unique root of I_{d/2+1}(β) / I_{d/2}(β) = 1/d ([MR-d], abstract).
    For β <= β_* the transition at K_# is continuous (K_c = K_#), above it
    discontinuous (K_c < K_#). The ratio increases from 0 to 1 in β, so the root is unique;
    found by Brent's method to 1e-14.

    In the zonal free energy, 1/d is the ratio Ŵ_2/Ŵ_1 at which the quartic coefficient of
    F along degree 1, with degree 2 slaved to it, changes sign (the "degree-two quartic
    obstruction" of [MR-d]): continuous iff Ŵ_2/Ŵ_1 < 1/d.

    Parameters
    ----------
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.

    Returns
    -------
    beta_star : float
        β_*, to 1e-14.

    Examples
    --------
    >>> from metastab.theory import tricritical_beta
    >>> [round(tricritical_beta(d), 4) for d in (2, 3, 4)]
    [2.4469, 1.8162, 1.5753]
    """
    from scipy.optimize import brentq

    d = integer("d", d, 2)

    def gap(b):
        return _log_bessel(d / 2 + 1, b) - _log_bessel(d / 2, b) + math.log(d)

    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
    return float(brentq(gap, 1e-8, hi, xtol=1e-14, rtol=1e-15))


TIMES = ("gradient-flow", "unit-drift")


def noisy_growth_rates(
    K: float, beta: float, d: int, degrees: ArrayLike, *, time: str = "gradient-flow"
) -> np.ndarray:
    """The linear growth rates at the uniform density of perturbations by spherical harmonics of
    degree ℓ: linearising ∂_t ρ = Δρ − 2K ∇·(ρ ∇(W_β ∗ ρ)) at ρ = 1 and using Funk–Hecke
    (W_β ∗ Y_ℓ = Ŵ_ℓ Y_ℓ, ΔY_ℓ = −ℓ(ℓ + d − 2) Y_ℓ),

        λ_ℓ = ℓ(ℓ + d − 2) (2K Ŵ_ℓ − 1).

    λ_1 = 0 exactly at K = K_#. ``time="unit-drift"`` gives them in the time s = 2K t of
    (USA) with unit drift and Brownian noise of variance σ² = 1/K (the module docstring):
    ∂_s ρ = (1/(2K)) Δρ − ∇·(ρ ∇(W_β ∗ ρ)), rates λ_ℓ / (2K) = ℓ(ℓ + d − 2)(Ŵ_ℓ − 1/(2K)).

    Parameters
    ----------
    K : float > 0
        The coupling (the inverse noise level).
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.
    degrees : array_like of int >= 0
        The degrees ℓ.
    time : {"gradient-flow", "unit-drift"}
        The time of the rates: t of the McKean–Vlasov equation (default) or s = 2K t.

    Returns
    -------
    rates : ndarray of float
        λ_ℓ (or λ_ℓ / (2K)) for each of ``degrees``: positive where the uniform density is
        linearly unstable.

    Examples
    --------
    >>> from metastab.theory import critical_coupling_linear, noisy_growth_rates
    >>> k = critical_coupling_linear(1.0, 3)
    >>> abs(float(noisy_growth_rates(k, 1.0, 3, [1])[0])) < 1e-14
    True
    >>> noisy_growth_rates(2.0, 1.0, 2, [0, 1, 2]).round(4)   # 2 · 2 · I_1(1) − 1 > 0
    array([ 0.    ,  1.2606, -1.828 ])
    >>> noisy_growth_rates(2.0, 1.0, 2, [1], time="unit-drift").round(4)   # the same / (2K)
    array([0.3152])
    """
    K = real("K", K, low=0, low_open=True)
    if time not in TIMES:
        raise ValueError(f"time must be one of {TIMES}, got {time!r}")
    w = funk_hecke_coefficients(beta, d, degrees)
    ell = np.asarray(degrees, dtype=np.float64)
    rates = ell * (ell + d - 2) * (2 * K * w - 1)
    return rates / (2 * K) if time == "unit-drift" else rates


# --------------------------------------------------------------------------- zonal problem


@dataclass(frozen=True)
class _Zonal:
    """The discretised zonal problem: Gauss–Jacobi nodes u_i and probability weights w_i of the
    law of u = ⟨x, e⟩ under σ (density ∝ (1 − u²)^{(d−3)/2}), the orthonormal zonal basis
    P_ℓ(u_i) (ℓ = 0..L: Gegenbauer C_ℓ^{(d−2)/2}, normalised in L²(σ)), its values P_ℓ(1) and
    the Funk–Hecke coefficients Ŵ_ℓ."""

    u: np.ndarray
    w: np.ndarray
    basis: np.ndarray
    peak: np.ndarray
    fh: np.ndarray


@lru_cache(maxsize=32)
def _zonal(beta: float, d: int, degree: int, nodes: int) -> _Zonal:
    from scipy.special import eval_jacobi, roots_jacobi

    a = (d - 3) / 2
    u, w = roots_jacobi(nodes, a, a)
    w = w / w.sum()
    ell = range(degree + 1)
    basis = np.array([eval_jacobi(k, a, a, u) for k in ell])
    norm = np.sqrt((basis * basis * w).sum(axis=1))
    peak = np.array([eval_jacobi(k, a, a, 1.0) for k in ell]) / norm
    fh = funk_hecke_coefficients(beta, d, np.arange(degree + 1))
    return _Zonal(u, w, basis / norm[:, None], peak, fh)


def _degree(beta: float, d: int) -> int:
    """The smallest L >= 8 with Ŵ_L √dim_L < TAIL · Ŵ_1 (dim_L the dimension of the degree-L
    harmonics, √dim_L the sup norm of the normalised zonal one)."""
    from scipy.special import comb

    ell = np.arange(1, 400)
    fh = funk_hecke_coefficients(beta, d, ell)
    dim = comb(ell + d - 1, d - 1) - comb(ell + d - 3, d - 1)
    small = np.nonzero(fh * np.sqrt(dim) < TAIL * fh[0])[0]
    if small.size == 0:  # pragma: no cover - β in the thousands
        raise ValueError(f"beta = {beta!r} needs more than 400 degrees")
    return max(8, int(ell[small[0]]))


def _grid_args(beta, d, degree, nodes):
    beta, d = _args(beta, d)
    degree = _degree(beta, d) if degree is None else integer("degree", degree, 2)
    nodes = NODES if nodes is None else integer("nodes", nodes, degree + 1)
    return beta, d, degree, nodes


def _moments(z: _Zonal, rows: np.ndarray, c: np.ndarray, cov_rows: np.ndarray | None = None):
    """log Z and, under ρ ∝ exp(Σ_{ℓ ∈ rows} c_ℓ P_ℓ), the means ⟨P_ℓ⟩ (ℓ ∈ rows) and the
    covariance of P_ℓ, ℓ ∈ cov_rows (default rows); max-shifted, no overflow. Near the uniform
    state log Z is O(b²) while the free energy K Σ Ŵ b² − log Z is O(b⁴): the log1p form keeps
    its absolute error at ~1e-16 b² instead of 1e-16."""
    v = c @ z.basis[rows]
    if np.abs(v).max() < 0.5:  # near uniform: log Z = log1p(Σ w (e^v − 1)), no cancellation
        dp = z.w * np.expm1(v)
        excess = float(dp.sum())
        log_z = math.log1p(excess)
        p = z.w * np.exp(v) / (1 + excess)
        # ⟨P_ℓ⟩_σ = 0 for ℓ >= 1: the means from the excess weights alone, to full relative
        # precision however small they are
        mean = z.basis[rows] @ dp / (1 + excess)
    else:
        top = v.max()
        p = z.w * np.exp(v - top)
        total = p.sum()
        p /= total
        log_z = math.log(total) + top
        mean = z.basis[rows] @ p
    b = z.basis[rows if cov_rows is None else cov_rows]
    mb = b @ p
    # einsum, not @: a threaded BLAS spends more on these small products than it saves
    cov = np.einsum("in,jn->ij", b * p, b) - np.outer(mb, mb)
    return log_z, mean, cov


def _rows(z: _Zonal, mode: int) -> np.ndarray:
    return np.arange(mode, z.fh.size, mode)


def _solve(z: _Zonal, rows: np.ndarray, s: float, guess: np.ndarray) -> np.ndarray:
    """Newton for the self-consistency b_ℓ = ⟨P_ℓ⟩ under ρ ∝ exp(2K Σ Ŵ_ℓ b_ℓ P_ℓ), ℓ ∈ rows,
    with the first b fixed to s; unknowns x = (K, the other b). The first equation is divided
    by s, so K is determined to full relative precision however small s is."""
    fh = z.fh[rows]
    n = rows.size
    x = guess.copy()
    r = np.full(n, np.inf)
    for _ in range(60):
        b = np.concatenate([[s], x[1:]])
        _, mean, cov = _moments(z, rows, 2 * x[0] * fh * b)
        r = b - mean
        r[0] /= s
        if np.abs(r).max() < _NEWTON_TOL:
            return x
        jac = np.empty((n, n))
        jac[:, 0] = -cov @ (2 * fh * b)  # ∂r/∂K
        jac[:, 1:] = -cov[:, 1:] * (2 * x[0] * fh[1:])
        jac[np.arange(1, n), np.arange(1, n)] += 1.0
        jac[0] /= s
        step = np.linalg.solve(jac, r)
        x = _damped(z, rows, s, x, step, np.abs(r).max())
    if np.abs(r).max() < 100 * _NEWTON_TOL:  # converged to its rounding error
        return x
    raise RuntimeError(f"Newton did not converge at b = {s:g} (residual {np.abs(r).max():.2e})")


def _residual(z: _Zonal, rows: np.ndarray, s: float, x: np.ndarray) -> float:
    b = np.concatenate([[s], x[1:]])
    r = b - _moments(z, rows, 2 * x[0] * z.fh[rows] * b)[1]
    r[0] /= s
    return float(np.abs(r).max())


def _damped(z, rows, s, x, step, norm):
    """x − t·step for the largest t in 1, 1/2, 1/4, ... that keeps K > 0 and does not increase
    the residual's max norm (backtracking; the full step wherever Newton converges)."""
    t = 1.0
    for _ in range(30):
        trial = x - t * step
        if trial[0] > 0 and _residual(z, rows, s, trial) <= max(norm, 100 * _NEWTON_TOL):
            return trial
        t /= 2
    raise RuntimeError(f"Newton found no descent step at b = {s:g} (residual {norm:.2e})")


def _point(z: _Zonal, rows: np.ndarray, x: np.ndarray, s: float) -> tuple[float, int]:
    """(ΔF, zonal Morse index) of the stationary state K = x_0, b = (s, x_1, ...) on rows:
    ΔF = F_K(ρ) − F_K(1) = K Σ_ℓ Ŵ_ℓ b_ℓ² − log Z at a fixed point; the index is that of
    the Hessian I − D Cov D over all degrees 1..L, D = diag √(2K Ŵ_ℓ) (F restricted to zonal
    densities, by Sylvester's law the index of its Hessian in the b_ℓ)."""
    K, fh = x[0], z.fh[rows]
    b = np.concatenate([[s], x[1:]])
    every = np.arange(1, z.fh.size)
    log_z, _, cov = _moments(z, rows, 2 * K * fh * b, every)
    root = np.sqrt(2 * K * z.fh[1:])
    hess = np.eye(every.size) - root[:, None] * cov * root[None, :]
    index = int((np.linalg.eigvalsh(hess) < -1e-9).sum())
    return float(K * (fh * b * b).sum() - log_z), index


def zonal_free_energy(
    density: Callable[[np.ndarray], ArrayLike],
    K: float,
    beta: float,
    d: int,
    *,
    degree: int | None = None,
    nodes: int | None = None,
) -> float:
    """F_K(ρ) = ∫ ρ log ρ dσ − K ∫∫ W_β(⟨x, y⟩) ρ(x) ρ(y) dσ dσ (module docstring) of a zonal
    density ρ(x) = f(⟨x, e⟩) on S^{d−1}.

    The entropy is a Gauss–Jacobi quadrature in u = cos θ with weight (1 − u²)^{(d−3)/2}
    (``nodes`` nodes, exact for polynomials of degree < 2·nodes); the interaction is
    Σ_ℓ Ŵ_ℓ a_ℓ² (Funk–Hecke) over the zonal coefficients a_ℓ = ∫ f P_ℓ dσ, ℓ <= ``degree``
    (default: where Ŵ_ℓ falls below 1e-17 Ŵ_1). F_K(1) = −K Ŵ_0.

    Parameters
    ----------
    density : callable
        f(u) for an array of u in (−1, 1), returning positive values; normalised here (f/∫f).
    K : float >= 0
        The coupling (the inverse noise level).
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.
    degree : int >= 2, optional
        The spectral truncation L (default: where Ŵ_L √dim_L falls below 1e-17 Ŵ_1).
    nodes : int > degree, optional
        The Gauss–Jacobi nodes in u = cos θ (default :data:`NODES` = 256).

    Returns
    -------
    F : float
        F_K(ρ), per particle, in the units of the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.theory import funk_hecke_coefficients, zonal_free_energy
    >>> F = zonal_free_energy(lambda u: np.ones_like(u), 1.0, 2.0, 3)
    >>> bool(np.isclose(F, -float(funk_hecke_coefficients(2.0, 3, [0])[0]), rtol=1e-13))
    True
    """
    K = real("K", K, low=0)
    beta, d, degree, nodes = _grid_args(beta, d, degree, nodes)
    z = _zonal(beta, d, degree, nodes)
    f = np.asarray(density(z.u), dtype=np.float64)
    if f.shape != z.u.shape or not np.isfinite(f).all() or f.min() <= 0:
        raise ValueError("density must return finite values > 0 of the shape of its argument")
    f = f / (z.w * f).sum()
    coef = z.basis @ (z.w * f)
    return float((z.w * f * np.log(f)).sum() - K * (z.fh * coef * coef).sum())


@dataclass(frozen=True)
class NoisyBranch:
    """A branch of zonal stationary states (densities f(⟨x, e⟩)) bifurcating from the uniform
    density in the degree ``mode``, parametrised by its order parameter
    ``order`` = ∫ P_mode ρ dσ / P_mode(1) (for mode 1, m = ∫ ⟨x, e⟩ ρ dσ; on the circle,
    ⟨cos(mode·θ)⟩).

    ``coupling[i]`` is K at ``order[i]``, ``free_energy[i]`` the free energy per particle
    relative to the uniform density at that K, F_K(ρ) − F_K(1), ``index[i]`` the number of
    unstable directions of F among zonal densities (for mode 1: 1 on the subcritical part, the
    saddle; 0 on the clustered part).

    Attributes
    ----------
    beta : float
        The inverse temperature of the interaction.
    d : int
        The dimension of the ambient space (the sphere S^{d−1}).
    mode : int
        The degree the branch bifurcates in (1: one cluster; 2: antipodal).
    degree, nodes : int
        The spectral truncation and the quadrature nodes it was computed with.
    order : ndarray, shape (m,)
        The order parameter at each tabulated state, increasing in (0, 1).
    coupling : ndarray, shape (m,)
        K at each state.
    free_energy : ndarray, shape (m,)
        F_K(ρ) − F_K(1) at each state, per particle.
    index : ndarray of int, shape (m,)
        The number of unstable directions of F among zonal densities at each state.
    solutions : ndarray, shape (m, k)
        The Newton unknowns at each state: K and the zonal coefficients b_2mode, b_3mode, ...

    See Also
    --------
    stationary_branch : the function that computes it.

    Examples
    --------
    >>> from metastab.theory import stationary_branch
    >>> br = stationary_branch(4.0, 2, orders=[0.1, 0.5, 0.9])
    >>> br.order.tolist(), br.index.tolist()   # the saddle, then the clustered state
    ([0.1, 0.5, 0.9], [1, 1, 0])
    >>> K, dF, index = br.point(0.9)
    >>> bool(abs(K - br.coupling[2]) < 1e-12), index
    (True, 0)
    """

    beta: float
    d: int
    mode: int
    degree: int
    nodes: int
    order: np.ndarray = field(repr=False)
    coupling: np.ndarray = field(repr=False)
    free_energy: np.ndarray = field(repr=False)
    index: np.ndarray = field(repr=False)
    solutions: np.ndarray = field(repr=False)

    @property
    def fold(self) -> int:
        """The position of the smallest K on the branch (0 when it emerges supercritically)."""
        return int(np.argmin(self.coupling))

    def _problem(self):
        z = _zonal(self.beta, self.d, self.degree, self.nodes)
        return z, _rows(z, self.mode), z.peak[self.mode]

    def solve(self, order: float) -> np.ndarray:
        """(K, b_2mode, b_3mode, ...) of the stationary state at ``order``, Newton started from
        the nearest tabulated state."""
        z, rows, peak = self._problem()
        near = int(np.argmin(np.abs(self.order - order)))
        return _solve(z, rows, peak * order, self.solutions[near])

    def point(self, order: float) -> tuple[float, float, int]:
        """(K, ΔF, zonal index) at ``order``."""
        z, rows, peak = self._problem()
        x = self.solve(order)
        df, idx = _point(z, rows, x, peak * order)
        return float(x[0]), df, idx


_ORDERS = np.concatenate(
    [
        np.geomspace(1e-4, 0.05, 30, endpoint=False),
        np.linspace(0.05, 0.95, 90, endpoint=False),
        1 - np.geomspace(0.05, 1e-3, 24),
    ]
)


def stationary_branch(
    beta: float,
    d: int,
    *,
    mode: int = 1,
    orders: ArrayLike | None = None,
    degree: int | None = None,
    nodes: int | None = None,
) -> NoisyBranch:
    """The branch of zonal stationary states ρ = e^{2K W_β∗ρ}/Z (the Kirkwood–Monroe
    self-consistency, studied on the sphere by [SS] and in Fourier modes for d = 2 by [BBR])
    emerging from the uniform density at K = 1/(2 Ŵ_mode), continued in its order parameter
    (``orders``, increasing in (0, 1); default 144 values in [1e-4, 0.999]; the continuation
    starts at the bifurcation whatever the first requested order).

    ``mode=1``: one cluster (all degrees; bifurcation at K_#). ``mode=2``: the antipodal
    branch (even densities). On the circle (d = 2) any ``mode`` = k: k equally spaced clusters
    ([BBR]'s multi-mode states); for d >= 3 only 1 and 2 give closed zonal subspaces.

    At each order the coefficients b_ℓ = ∫ P_ℓ ρ dσ (ℓ multiples of ``mode`` up to L) and K
    solve b_ℓ = ⟨P_ℓ⟩_ρ, ρ ∝ exp(2K Σ_ℓ Ŵ_ℓ b_ℓ P_ℓ), b_mode = P_mode(1) · order, by Newton's
    method, each started from the previous solution (secant predictor). Discretisation:
    spectral truncation at degree L and Gauss–Jacobi quadrature in u = cos θ with weight
    (1 − u²)^{(d−3)/2}; both converge exponentially (the potential is entire and Ŵ_ℓ decays
    like (β/2)^ℓ/ℓ!). At the defaults (L where Ŵ_L √dim_L < 1e-17 Ŵ_1, 256 nodes) K_c and ΔF
    agree with twice the degree and 4× the nodes to ~1e-12 for β <= 10, d <= 4, m <= 0.98
    (the clustered states near m = 0.999: ~1e-10 relative, limited by the nodes).

    The order parameter must increase along the branch (a graph over m). It does wherever
    tested for d <= 4, β <= 30; for large d and β (d = 5, β = 30; d = 8, β >= 12) the saddle
    turns in m and the continuation raises a RuntimeError rather than return a wrong state.

    For β > β_* the mode-1 branch leaves K_# towards smaller K (index 1: the saddle between
    the uniform and the clustered state), turns at a fold K_fold and comes back (index 0).

    Parameters
    ----------
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.
    mode : int >= 1
        The degree the branch bifurcates in (default 1; 1 or 2 for d >= 3).
    orders : array_like, optional
        The order parameters of the states, increasing strictly within (0, 1).
    degree : int >= 2, optional
        The spectral truncation L (default: where Ŵ_L √dim_L falls below 1e-17 Ŵ_1).
    nodes : int > degree, optional
        The Gauss–Jacobi nodes in u = cos θ (default :data:`NODES` = 256).

    Returns
    -------
    branch : NoisyBranch
        K, ΔF and the zonal index at every order.

    Raises
    ------
    RuntimeError
        Where the order parameter does not increase along the branch, so that Newton's
        continuation fails.

    Examples
    --------
    >>> from metastab.theory import critical_coupling_linear, stationary_branch
    >>> br = stationary_branch(4.0, 2)
    >>> bool(br.coupling[br.fold] < critical_coupling_linear(4.0, 2))   # β > β_*: subcritical
    True
    >>> int(br.index[0]), int(br.index[-1])
    (1, 0)
    """
    beta, d, degree, nodes = _grid_args(beta, d, degree, nodes)
    mode = integer("mode", mode, 1)
    if d > 2 and mode > 2:
        raise ValueError(f"mode must be 1 or 2 for d = {d} (zonal subspaces), got {mode!r}")
    if mode > degree:
        raise ValueError(f"mode must be <= degree = {degree}, got {mode!r}")
    m = _ORDERS if orders is None else np.asarray(orders, dtype=np.float64)
    if m.ndim != 1 or m.size == 0 or not (np.diff(m) > 0).all() or m[0] <= 0 or m[-1] >= 1:
        raise ValueError(f"orders must increase strictly within (0, 1), got {orders!r}")
    z = _zonal(beta, d, degree, nodes)
    rows = _rows(z, mode)
    x = np.zeros(rows.size)
    x[0] = 1 / (2 * z.fh[mode])
    peak = z.peak[mode]
    last = 0.0
    if m[0] > _ORDERS[0]:  # continue from the bifurcation to the first requested order
        for mi in _ORDERS[_ORDERS < m[0]]:
            x, last = _continue(z, rows, peak, last, x, mi, x), mi
    sols: list[np.ndarray] = []
    energy, index = [], []
    for i, mi in enumerate(m):
        s = peak * mi
        guess = x
        if i >= 2:  # secant predictor in the order parameter
            guess = sols[-1] + (sols[-1] - sols[-2]) * (mi - m[i - 1]) / (m[i - 1] - m[i - 2])
        x, last = _continue(z, rows, peak, last, x, mi, guess), mi
        df, idx = _point(z, rows, x, s)
        sols.append(x)
        energy.append(df)
        index.append(idx)
    sol = np.array(sols)
    return NoisyBranch(
        beta, d, mode, degree, nodes, m, sol[:, 0].copy(), np.array(energy), np.array(index), sol
    )


def _continue(z, rows, peak, m_from, x_from, m_to, guess, depth=0):
    """The solution at order m_to from the one at m_from: Newton from ``guess``, and where it
    fails, through the midpoint (halving the step up to 10 times)."""
    try:
        return _solve(z, rows, peak * m_to, guess)
    except RuntimeError:
        if depth == 10:
            raise
    mid = 0.5 * (m_from + m_to)
    x_mid = _continue(z, rows, peak, m_from, x_from, mid, x_from, depth + 1)
    return _continue(z, rows, peak, mid, x_mid, m_to, x_mid, depth + 1)


def _fold(br: NoisyBranch) -> float:
    """The order parameter of the fold of a subcritical branch, where dK/dm = 0: bounded
    minimisation of K(m) around the smallest tabulated K."""
    from scipy.optimize import minimize_scalar

    i = br.fold
    if i == 0 or i == br.order.size - 1:
        raise ValueError(
            f"the branch at beta = {br.beta!r}, d = {br.d} has no fold within the tabulated "
            f"orders (smallest K at order {br.order[i]:g})"
        )
    res = minimize_scalar(
        lambda t: br.solve(t)[0],
        bounds=(br.order[i - 1], br.order[i + 1]),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(res.x)


@lru_cache(maxsize=16)
def _subcritical(beta: float, d: int, degree: int, nodes: int) -> tuple[NoisyBranch, float]:
    """The default single-cluster branch and its fold (m_fold), kept for the functions below
    (a sweep over K reuses one branch); never handed out, so nothing can mutate it."""
    br = stationary_branch(beta, d, degree=degree, nodes=nodes)
    return br, _fold(br)


def fold_coupling(
    beta: float, d: int, *, degree: int | None = None, nodes: int | None = None
) -> float:
    """K_fold(β): for β > β_*, the smallest coupling at which the clustered state exists (the
    fold of the single-cluster branch, where its saddle and its minimum meet): the lower end of
    the bistable range [K_fold, K_#] and of :func:`free_energy_barrier`'s domain. For β <= β_*
    there is no fold and this is K_#.

    Parameters
    ----------
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.
    degree : int >= 2, optional
        The spectral truncation L (default: where Ŵ_L √dim_L falls below 1e-17 Ŵ_1).
    nodes : int > degree, optional
        The Gauss–Jacobi nodes in u = cos θ (default :data:`NODES` = 256).

    Returns
    -------
    K_fold : float
        The coupling at the fold (K_# for β <= β_*).

    Examples
    --------
    >>> from metastab.theory import critical_coupling, critical_coupling_linear, fold_coupling
    >>> kf, kc = fold_coupling(4.0, 2), critical_coupling(4.0, 2)
    >>> bool(kf < kc < critical_coupling_linear(4.0, 2)), round(kf, 6)
    (True, 0.193534)
    """
    beta, d, degree, nodes = _grid_args(beta, d, degree, nodes)
    if beta <= tricritical_beta(d):
        return critical_coupling_linear(beta, d)
    br, m_fold = _subcritical(beta, d, degree, nodes)
    return float(br.solve(m_fold)[0])


def critical_coupling(
    beta: float, d: int, *, degree: int | None = None, nodes: int | None = None
) -> float:
    """K_c(β): the coupling above which the uniform density is no longer the global minimiser of
    F_K ([MR-d], abstract). For β <= β_* it is K_# (the theorem; the branch is supercritical);
    for β > β_* it is the K at which the clustered (index-0) part of :func:`stationary_branch`
    has the free energy of the uniform density, found by Brent's method in m (to 1e-15).

    This is the first-order point of the single-cluster branch. W_β increases in ⟨x, y⟩, so by
    the rearrangement inequality on the sphere (Baernstein–Taylor) a global minimiser can be
    taken zonal and decreasing in the angle: the single-cluster branch is the candidate. That
    the antipodal branch is not lower is checked in the tests, not here.

    Parameters
    ----------
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.
    degree : int >= 2, optional
        The spectral truncation L (default: where Ŵ_L √dim_L falls below 1e-17 Ŵ_1).
    nodes : int > degree, optional
        The Gauss–Jacobi nodes in u = cos θ (default :data:`NODES` = 256).

    Returns
    -------
    K_c : float
        The critical coupling (K_# for β <= β_*).

    Examples
    --------
    >>> from metastab.theory import critical_coupling, critical_coupling_linear
    >>> kc, ks = critical_coupling(4.0, 2), critical_coupling_linear(4.0, 2)
    >>> bool(kc < ks), round(kc / ks, 4)
    (True, 0.9551)
    """
    from scipy.optimize import brentq

    beta, d, degree, nodes = _grid_args(beta, d, degree, nodes)
    if beta <= tricritical_beta(d):
        return critical_coupling_linear(beta, d)
    br, m_fold = _subcritical(beta, d, degree, nodes)
    below = np.nonzero((br.order > m_fold) & (br.free_energy < 0))[0]
    if below.size == 0:
        raise RuntimeError(
            f"the clustered branch at beta = {beta!r} stays above the uniform free energy up "
            f"to m = {br.order[-1]:g}"
        )
    m_c = brentq(lambda t: br.point(t)[1], m_fold, br.order[below[0]], xtol=1e-15)
    return br.point(m_c)[0]


def free_energy_barrier(
    K: float, beta: float, d: int, *, degree: int | None = None, nodes: int | None = None
) -> float:
    """ΔF(K, β): the free energy per particle of the saddle between the uniform density and the
    clustered state, minus the uniform one's, for β > β_* and K_fold <= K <= K_#: the
    subcritical (index-1) stationary state of :func:`stationary_branch` at coupling K.

    The escape time of N particles from the uniform state grows like e^{N ΔF} (the module's
    large-deviation convention; the prefactor is not computed). On (K_c, K_#) the uniform
    state is metastable and this is its barrier; it vanishes at K_# (like (K_# − K)² near it)
    and is largest at the fold. The saddle is sought among zonal densities (the single-cluster
    branch; by symmetry the natural mountain pass, not proved here).

    Parameters
    ----------
    K : float in [K_fold, K_#]
        The coupling.
    beta : float > 0
        The inverse temperature of the interaction W_β(t) = (e^{βt} − 1)/β.
    d : int >= 2
        The dimension of the ambient space: the sphere is S^{d−1}.
    degree : int >= 2, optional
        The spectral truncation L (default: where Ŵ_L √dim_L falls below 1e-17 Ŵ_1).
    nodes : int > degree, optional
        The Gauss–Jacobi nodes in u = cos θ (default :data:`NODES` = 256).

    Returns
    -------
    barrier : float
        ΔF >= 0, per particle (0 at K_#).

    Raises
    ------
    ValueError
        For β <= β_* (no barrier), or K outside [K_fold, K_#] (the message gives the range).

    Examples
    --------
    >>> from metastab.theory import critical_coupling_linear, free_energy_barrier
    >>> ks = critical_coupling_linear(4.0, 2)
    >>> free_energy_barrier(ks, 4.0, 2)
    0.0
    >>> round(free_energy_barrier(0.99 * ks, 4.0, 2), 6)
    0.000116
    """
    from scipy.optimize import brentq

    K = real("K", K, low=0, low_open=True)
    beta, d, degree, nodes = _grid_args(beta, d, degree, nodes)
    b_star = tricritical_beta(d)
    if beta <= b_star:
        raise ValueError(
            f"beta = {beta!r} <= beta_* = {b_star:.6f} (d = {d}): the transition is continuous "
            "and the uniform density has no barrier"
        )
    k_lin = critical_coupling_linear(beta, d)
    if K == k_lin:
        return 0.0
    br, m_fold = _subcritical(beta, d, degree, nodes)
    k_fold = br.solve(m_fold)[0]
    if not k_fold <= K < k_lin:
        raise ValueError(
            f"K must be in [K_fold, K_#] = [{k_fold:.10g}, {k_lin:.10g}] for beta = {beta!r}, "
            f"d = {d} (outside it the uniform state is unstable or the only zonal minimiser), "
            f"got {K!r}"
        )
    if K == k_fold:
        return br.point(m_fold)[1]
    if K > br.coupling[0]:  # closer to K_# than the first tabulated state
        lo, hi = 1e-9, float(br.order[0])
    else:
        lo = float(br.order[np.nonzero((br.order < m_fold) & (br.coupling >= K))[0][-1]])
        hi = m_fold
    m_k = brentq(lambda t: br.solve(t)[0] - K, lo, hi, xtol=1e-16)
    return br.point(m_k)[1]
