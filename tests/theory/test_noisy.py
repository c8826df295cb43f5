"""metastab.theory.noisy (docs: models#noisy-meanfield): the closed forms against the published
numbers and independent quadratures; the zonal free energy against a direct three-dimensional
quadrature, the circle against a Fourier-mode solution of the stationary equation; the
discretisation's convergence; negative controls that a wrong normalisation would fail."""

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq, fsolve
from scipy.special import eval_legendre, iv

from metastab.theory import (
    critical_coupling,
    critical_coupling_linear,
    fold_coupling,
    free_energy_barrier,
    funk_hecke_coefficients,
    noisy_growth_rates,
    stationary_branch,
    tricritical_beta,
    zonal_free_energy,
)

# the published values ([MR-d]'s formulas evaluated), 4 decimals
PUBLISHED_BETA_STAR = {2: 2.4469, 3: 1.8162, 4: 1.5753}
PUBLISHED_K_SHARP_AT_1 = {2: 0.8847, 3: 1.3591}


def _funk_hecke_quad(beta, d, ell):
    """Ŵ_ℓ = c_d ∫ W_β(t) P_ℓ(t)/P_ℓ(1) (1 − t²)^{(d−3)/2} dt by quadrature (Funk–Hecke), for
    ℓ = 1, 2 (P_1/P_1(1) = t, P_2/P_2(1) = (d t² − 1)/(d − 1)): no Bessel function."""
    poly = {1: lambda t: t, 2: lambda t: (d * t * t - 1) / (d - 1)}[ell]
    a = (d - 3) / 2
    c_d = math.gamma(d / 2) / (math.sqrt(math.pi) * math.gamma((d - 1) / 2))
    val = quad(
        lambda t: math.expm1(beta * t) / beta * poly(t),
        -1,
        1,
        weight="alg",
        wvar=(a, a),
        epsabs=0,
        epsrel=1e-12,
        limit=200,
    )[0]
    return c_d * val


# --------------------------------------------------------------------------- K_#, β_*


@pytest.mark.parametrize("d", [2, 3])
def test_k_sharp_reproduces_the_published_numbers(d):
    assert critical_coupling_linear(1.0, d) == pytest.approx(PUBLISHED_K_SHARP_AT_1[d], abs=5e-5)


@pytest.mark.parametrize("d", [2, 3, 4, 5])
@pytest.mark.parametrize("beta", [0.3, 1.0, 4.0, 9.0])
def test_k_sharp_is_half_the_inverse_funk_hecke_coefficient_by_quadrature(d, beta):
    # 2 K_# Ŵ_1 = 1, with Ŵ_1 from the Funk–Hecke integral, not the Bessel closed form
    assert critical_coupling_linear(beta, d) == pytest.approx(
        1 / (2 * _funk_hecke_quad(beta, d, 1)), rel=1e-11
    )
    assert funk_hecke_coefficients(beta, d, [1, 2]) == pytest.approx(
        [_funk_hecke_quad(beta, d, 1), _funk_hecke_quad(beta, d, 2)], rel=1e-11
    )


def test_a_wrong_noise_normalisation_moves_k_sharp_by_its_factor_and_is_rejected():
    # F with (K/2) ∫∫ W ρρ (equivalently noise variance 2/K) gives 1/Ŵ_1: twice K_#, which the
    # pinned number refuses; the unnormalised surface measure moves it by |S^1| = 2π
    w1 = float(funk_hecke_coefficients(1.0, 2, [1])[0])
    assert (1 / w1) / critical_coupling_linear(1.0, 2) == pytest.approx(2.0, rel=1e-14)
    assert abs(1 / w1 - PUBLISHED_K_SHARP_AT_1[2]) > 0.8
    assert abs(1 / (2 * w1 * 2 * math.pi) - PUBLISHED_K_SHARP_AT_1[2]) > 0.7


def test_the_normalisation_gives_the_doi_onsager_threshold_of_the_circle_paper():
    # The same reading, K_# = 1/(2 max_k Ŵ_k), applied to [MR-2]'s Doi–Onsager kernel
    # W(θ) = −|sin 2πθ| on [0, 1) gives its K_# = 3π/4 (the (K/2) reading gives 3π/2).
    coef = [
        quad(
            lambda t, k=k: -abs(math.sin(2 * math.pi * t)) * math.cos(2 * math.pi * k * t),
            0,
            1,
            limit=200,
            points=[0.5],
        )[0]
        for k in range(1, 9)
    ]
    assert 1 / (2 * max(coef)) == pytest.approx(3 * math.pi / 4, rel=1e-10)
    assert abs(1 / max(coef) - 3 * math.pi / 4) > 1.0


def test_k_sharp_limits_and_no_overflow():
    assert critical_coupling_linear(1e-6, 3) == pytest.approx(1.5, rel=1e-9)  # d/2 as β → 0
    big = critical_coupling_linear(700.0, 3)
    assert 0 < big < 1e-250 and math.isfinite(critical_coupling_linear(1e6, 4))


@pytest.mark.parametrize("d", [2, 3, 4])
def test_beta_star_reproduces_the_published_numbers(d):
    assert tricritical_beta(d) == pytest.approx(PUBLISHED_BETA_STAR[d], abs=5e-5)


@pytest.mark.parametrize("d", [2, 3, 4, 6])
def test_beta_star_is_where_the_funk_hecke_ratio_is_one_over_d_by_quadrature(d):
    root = brentq(
        lambda b: _funk_hecke_quad(b, d, 2) / _funk_hecke_quad(b, d, 1) - 1 / d, 0.5, 6, xtol=1e-13
    )
    assert tricritical_beta(d) == pytest.approx(root, abs=1e-9)
    # negative control: the circle's ratio 1/2 in d = 3 misses [MR-d]'s β_* by far more than 0.1
    if d == 3:
        wrong = brentq(lambda b: iv(2.5, b) / iv(1.5, b) - 0.5, 0.5, 20)
        assert abs(wrong - PUBLISHED_BETA_STAR[3]) > 0.1


# --------------------------------------------------------------------------- growth rates


@pytest.mark.parametrize("d", [2, 3, 5])
def test_degree_one_rate_changes_sign_exactly_at_k_sharp(d):
    beta = 2.0
    ks = critical_coupling_linear(beta, d)
    rates = [float(noisy_growth_rates(k, beta, d, [1])[0]) for k in (0.999 * ks, ks, 1.001 * ks)]
    assert rates[0] < 0 < rates[2] and abs(rates[1]) < 1e-13
    # higher degrees are still stable there (Ŵ_ℓ decreases in ℓ)
    assert (noisy_growth_rates(1.001 * ks, beta, d, np.arange(2, 12)) < 0).all()


@pytest.mark.parametrize("time", ["gradient-flow", "unit-drift"])
@pytest.mark.parametrize("beta, k, K", [(1.0, 1, 0.5), (4.0, 2, 0.3), (9.0, 3, 0.01)])
def test_growth_rate_is_the_linearised_noisy_usa_equation_on_the_circle(beta, k, K, time):
    # ∂_t ρ = ρ'' − 2K (ρ v[ρ])' with the (USA) velocity v[ρ](θ) = ∫ e^{β cos(θ−φ)} sin(φ−θ)
    # ρ(φ) dφ/2π: for η = cos kθ, v[η] = A sin kθ (A by quadrature) and v[1] = 0, so the rate
    # is −k² − 2K k A. This checks the factor 2K and that ∇(W_β∗ρ) is the (USA) velocity.
    theta = math.pi / (2 * k)
    a = quad(
        lambda p: math.exp(beta * math.cos(theta - p)) * math.sin(p - theta) * math.cos(k * p),
        0,
        2 * math.pi,
        epsabs=0,
        epsrel=1e-13,
        limit=200,
    )[0] / (2 * math.pi)
    # In unit-drift time, ∂_s ρ = ρ''/(2K) − (ρ v[ρ])': the rate −k²/(2K) − k A.
    expected = -k * k - 2 * K * k * a if time == "gradient-flow" else -k * k / (2 * K) - k * a
    assert float(noisy_growth_rates(K, beta, 2, [k], time=time)[0]) == pytest.approx(
        expected, rel=1e-10
    )


# --------------------------------------------------------------------------- zonal free energy


def _direct_free_energy_d3(f, K, beta, n=48, nphi=64):
    """F_K of a zonal density f(u) on S² computed without Funk–Hecke: u ~ U[−1, 1] under σ,
    ⟨x, y⟩ = uv + √(1−u²)√(1−v²) cos φ, Gauss–Legendre in u, v and the trapezoid in φ."""
    u, w = np.polynomial.legendre.leggauss(n)
    w = w / 2
    fu = f(u)
    fu = fu / (w * fu).sum()
    phi = 2 * np.pi * np.arange(nphi) / nphi
    s = np.sqrt(1 - u * u)
    cos_xy = u[:, None, None] * u[None, :, None] + (s[:, None] * s[None, :])[:, :, None] * np.cos(
        phi
    )
    kernel = (np.expm1(beta * cos_xy) / beta).mean(axis=2)
    interaction = (w * fu) @ kernel @ (w * fu)
    return float((w * fu * np.log(fu)).sum() - K * interaction)


@pytest.mark.parametrize("kappa", [0.0, 1.5, 6.0])
def test_zonal_free_energy_against_a_direct_quadrature_on_the_two_sphere(kappa):
    def f(u):
        return np.exp(kappa * u + 0.3 * kappa * u * u)

    got = zonal_free_energy(f, 0.7, 2.5, 3)
    assert got == pytest.approx(_direct_free_energy_d3(f, 0.7, 2.5), abs=1e-11)


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("factor", [0.5, 1.0, 2.0])
def test_uniform_is_stationary_at_every_coupling_and_turns_unstable_at_k_sharp(d, factor):
    beta = 3.0
    K = factor * critical_coupling_linear(beta, d)
    eps = 1e-4

    def energy(e):
        return zonal_free_energy(lambda u: 1 + e * math.sqrt(d) * u, K, beta, d)

    first = (energy(eps) - energy(-eps)) / (2 * eps)
    second = (energy(eps) + energy(-eps) - 2 * energy(0.0)) / eps**2
    w1 = float(funk_hecke_coefficients(beta, d, [1])[0])
    assert abs(first) < 1e-10
    assert second == pytest.approx(1 - 2 * K * w1, abs=1e-6)  # ≷ 0 as K ≶ K_#


@pytest.mark.parametrize("d", [2, 3, 4])
def test_branch_bifurcates_at_k_sharp(d):
    for beta in (1.0, 4.0):
        br = stationary_branch(beta, d, orders=[1e-4, 2e-4])
        assert br.coupling[0] == pytest.approx(critical_coupling_linear(beta, d), rel=1e-7)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_below_beta_star_the_branch_is_supercritical_and_kc_is_k_sharp(d):
    beta = 0.9 * tricritical_beta(d)
    br = stationary_branch(beta, d)
    assert (np.diff(br.coupling) > 0).all()  # K grows along the branch from K_#
    assert (br.index == 0).all() and (br.free_energy < 0).all()
    assert critical_coupling(beta, d) == critical_coupling_linear(beta, d)
    assert fold_coupling(beta, d) == critical_coupling_linear(beta, d)
    with pytest.raises(ValueError, match="beta_"):
        free_energy_barrier(0.99 * critical_coupling_linear(beta, d), beta, d)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_above_beta_star_the_branch_is_subcritical_with_a_saddle(d):
    beta = 1.5 * tricritical_beta(d)
    ks = critical_coupling_linear(beta, d)
    br = stationary_branch(beta, d)
    fold = br.fold
    assert 0 < fold < br.order.size - 1 and br.coupling[fold] < ks
    assert (br.index[:fold] == 1).all() and (br.index[fold + 1 :] == 0).all()
    assert (br.free_energy[:fold] > 0).all()  # the saddle lies above the uniform state
    kc, kf = critical_coupling(beta, d), fold_coupling(beta, d)
    assert br.coupling[fold] < kc < ks
    # the refined fold: below every tabulated K, within the grid's resolution of the smallest
    assert kf <= br.coupling.min() and kf == pytest.approx(br.coupling.min(), rel=1e-3)
    assert free_energy_barrier(kf, beta, d) == pytest.approx(br.free_energy[fold], rel=1e-2)
    with pytest.raises(ValueError, match="K must be in"):
        free_energy_barrier(0.999 * kf, beta, d)


@pytest.mark.parametrize("d", [2, 3])
def test_beta_star_located_from_the_free_energy_alone(d):
    # Independent of the Bessel ratio: the sign of K(m) − K_# at small m (supercritical > 0,
    # subcritical < 0) changes at β_*; bisection on β over the branch alone.
    def bend(beta):
        br = stationary_branch(beta, d, orders=[1e-3])
        return br.coupling[0] / critical_coupling_linear(beta, d) - 1

    b_star = tricritical_beta(d)
    assert bend(b_star - 0.1) > 0 > bend(b_star + 0.1)
    assert brentq(bend, b_star - 0.1, b_star + 0.1, xtol=1e-8) == pytest.approx(b_star, abs=1e-4)


@pytest.mark.parametrize("d, beta", [(2, 4.0), (3, 3.0)])
def test_barrier_positive_vanishing_quadratically_at_k_sharp(d, beta):
    ks, kc = critical_coupling_linear(beta, d), critical_coupling(beta, d)
    ks_grid = np.linspace(kc, ks, 7)[1:-1]
    barrier = np.array([free_energy_barrier(k, beta, d) for k in ks_grid])
    assert (barrier > 0).all() and (np.diff(barrier) < 0).all()
    assert free_energy_barrier(ks, beta, d) == 0.0
    # ΔF ~ c (K_# − K)²: halving the distance quarters it (to 3 %)
    near = [free_energy_barrier(ks * (1 - e), beta, d) for e in (2e-4, 1e-4)]
    assert near[0] / near[1] == pytest.approx(4.0, rel=0.03)
    with pytest.raises(ValueError, match="K must be in"):
        free_energy_barrier(1.01 * ks, beta, d)


def test_barrier_is_the_free_energy_of_the_saddle_density_computed_directly():
    # the saddle's coefficients from the branch, its density rebuilt with Legendre polynomials
    # and F evaluated by the direct quadrature of the two-sphere (no Funk–Hecke, no log Z)
    d, beta = 3, 3.0
    ks, kc = critical_coupling_linear(beta, d), critical_coupling(beta, d)
    K = 0.5 * (kc + ks)
    br = stationary_branch(beta, d)
    m = brentq(lambda t: br.solve(t)[0] - K, br.order[0], br.order[br.fold], xtol=1e-15)
    x = br.solve(m)
    b = np.concatenate([[math.sqrt(3) * m], x[1:]])  # b_ℓ = ∫ P_ℓ ρ dσ, P_ℓ = √(2ℓ+1) Legendre
    ell = np.arange(1, b.size + 1)
    w = funk_hecke_coefficients(beta, d, ell)

    def f(u):
        return np.exp(
            sum(
                2 * K * w[i] * b[i] * math.sqrt(2 * ell[i] + 1) * eval_legendre(ell[i], u)
                for i in range(b.size)
            )
        )

    direct = _direct_free_energy_d3(f, K, beta) - _direct_free_energy_d3(np.ones_like, K, beta)
    assert free_energy_barrier(K, beta, d) == pytest.approx(direct, abs=1e-11)
    # negative control: the barrier is not the free energy of the clustered minimum
    assert abs(br.point(0.9)[1] - direct) > 1e-3


def test_discretisation_converges_spectrally_in_degree_and_nodes():
    d, beta = 3, 4.0
    ref_kc = critical_coupling(beta, d, degree=48, nodes=512)
    errors = [abs(critical_coupling(beta, d, degree=L) - ref_kc) for L in (4, 6, 8, 10)]
    # faster than geometric: each two degrees gain at least a factor 40
    assert all(b < a / 40 for a, b in zip(errors, errors[1:]))
    assert abs(critical_coupling(beta, d) - ref_kc) < 1e-12
    # nodes: a peaked clustered state (β = 8, m up to 0.98)
    orders = [0.5, 0.9, 0.98]
    ref = stationary_branch(8.0, d, orders=orders, degree=60, nodes=512).free_energy
    coarse = stationary_branch(8.0, d, orders=orders, nodes=32).free_energy
    fine = stationary_branch(8.0, d, orders=orders).free_energy
    assert np.abs(coarse - ref).max() > 1e-9  # 32 nodes do not resolve it ...
    assert np.abs(fine - ref).max() < 1e-10  # ... the default does


def test_antipodal_branch_is_not_lower_at_kc():
    # The even (two-cluster, antipodal) zonal branch bifurcates at 1/(2 Ŵ_2) > K_#
    # (transcritically for d >= 3, K − K_2 linear in the order); wherever its coupling
    # reaches K_c or below, its free energy is above the uniform one's.
    for d, beta in [(2, 4.0), (3, 3.0)]:
        kc = critical_coupling(beta, d)
        even = stationary_branch(beta, d, mode=2)
        start = stationary_branch(beta, d, mode=2, orders=[1e-8]).coupling[0]
        assert start == pytest.approx(1 / (2 * funk_hecke_coefficients(beta, d, [2])[0]), rel=1e-6)
        low = even.coupling <= kc
        assert (even.free_energy[low] > 0).all()
        assert (even.index >= 1).all()  # never a minimiser: the degree-1 mode stays unstable


# --------------------------------------------------------------------------- the circle, by Fourier


def _circle_state(beta, a1, M=48):
    """[BBR]'s formulation on the circle: ρ(θ) = 1 + 2 Σ_k a_k cos kθ is stationary iff
    ρ' = ρ φ', φ = 2K W_β∗ρ, i.e. k ρ̂_k = 2K Σ_m m Ŵ_m ρ̂_m ρ̂_{k−m} (ρ̂_{±k} = a_k, ρ̂_0 = 1,
    Ŵ_m = I_m(β)/β): a quadratic system in the Fourier coefficients, solved for (K, a_2..a_M)
    at fixed a_1 from a von Mises start."""
    k = np.arange(-M, M + 1)
    w = iv(np.abs(k), beta) / beta

    def full(a):
        return np.concatenate([a[::-1], [1.0], a])

    def residual(x):
        K, a = x[0], np.concatenate([[a1], x[1:]])
        rho = full(a)
        conv = np.convolve(k * w * rho, rho)[M : 3 * M + 1]  # Σ_m m Ŵ_m ρ̂_m ρ̂_{k−m}, k = −M..M
        return (k * rho - 2 * K * conv)[M + 1 :]

    kappa = brentq(lambda c: iv(1, c) / iv(0, c) - a1, 1e-9, 200)
    # the one-mode state ρ ∝ e^{κ cos θ}: κ = 2K · 2 Ŵ_1 a_1
    start = np.concatenate(
        [[kappa / (4 * w[M + 1] * a1)], iv(np.arange(2, M + 1), kappa) / iv(0, kappa)]
    )
    x = fsolve(residual, start, xtol=1e-13)
    assert np.abs(residual(x)).max() < 1e-12
    K, a = x[0], np.concatenate([[a1], x[1:]])
    theta = 2 * np.pi * np.arange(512) / 512
    rho = 1 + 2 * np.cos(np.outer(theta, np.arange(1, M + 1))) @ a
    assert rho.min() > 0
    kernel = np.expm1(beta * np.cos(theta[:, None] - theta[None, :])) / beta
    F = (rho * np.log(rho)).mean() - K * (rho @ kernel @ rho) / 512**2
    F_uniform = -K * kernel.mean()
    return K, F - F_uniform


def test_circle_kc_and_barrier_against_a_fourier_mode_computation():
    beta = 4.0
    br = stationary_branch(beta, 2)
    for m in (0.05, br.order[br.fold], 0.8):
        K, dF = _circle_state(beta, m)
        k_here, df_here, _ = br.point(m)
        assert K == pytest.approx(k_here, rel=1e-11) and dF == pytest.approx(df_here, abs=1e-11)
    # K_c: where the Fourier computation's clustered state has the uniform free energy
    m_fold = br.order[br.fold]
    m_c = brentq(lambda t: _circle_state(beta, t)[1], m_fold, 0.9, xtol=1e-14)
    assert _circle_state(beta, m_c)[0] == pytest.approx(critical_coupling(beta, 2), rel=1e-9)


@pytest.mark.parametrize("mode", [2, 3])
def test_multi_cluster_branches_on_the_circle_bifurcate_at_their_own_threshold(mode):
    beta = 6.0
    br = stationary_branch(beta, 2, mode=mode, orders=[1e-4, 0.3])
    assert br.coupling[0] == pytest.approx(beta / (2 * iv(mode, beta)), rel=1e-7)
    assert (br.index >= mode - 1).all()  # lower modes stay unstable on a k-cluster state


# --------------------------------------------------------------------------- input checks


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: critical_coupling_linear(0.0, 2), "beta"),
        (lambda: critical_coupling_linear(1.0, 1), "d"),
        (lambda: tricritical_beta(2.0), "d"),
        (lambda: noisy_growth_rates(-1.0, 1.0, 2, [1]), "K"),
        (lambda: noisy_growth_rates(1.0, 1.0, 2, [1], time="layer"), "time"),
        (lambda: funk_hecke_coefficients(1.0, 2, [-1]), "degrees"),
        (lambda: funk_hecke_coefficients(1.0, 2, [1.5]), "degrees"),
        (lambda: stationary_branch(4.0, 3, orders=[0.5, 0.2]), "orders"),
        (lambda: stationary_branch(4.0, 3, orders=[0.5, 1.0]), "orders"),
        (lambda: stationary_branch(4.0, 3, mode=3), "mode"),
        (lambda: stationary_branch(4.0, 3, nodes=4), "nodes"),
        (lambda: free_energy_barrier(0.0, 4.0, 2), "K"),
        (lambda: free_energy_barrier(1e-3, 4.0, 2), "K must be in"),
        (lambda: zonal_free_energy(lambda u: u, 1.0, 1.0, 3), "density"),
    ],
)
def test_bad_input_is_refused_with_its_name(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_large_beta_stays_finite_and_first_order():
    # K_# ~ e^{−β}: at β = 20 the potential 2K W_β is still O(1) near the uniform state and the
    # clustered state is sharply peaked; both are resolved, nothing overflows
    beta, d = 20.0, 2
    ks, kc = critical_coupling_linear(beta, d), critical_coupling(beta, d)
    assert 0 < kc < 0.7 * ks and math.isfinite(kc)
    assert free_energy_barrier(0.5 * (kc + ks), beta, d) > 1e-3
