"""The circle statements of metastab.theory (docs: models#sphere-statements (5 and 6)): the
mean-field growth rates and k* against independent quadratures, merge times against an ODE
solver."""

import math

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp
from scipy.special import iv

from metastab.theory import meanfield_clusters, meanfield_growth_rates, merge_time


def _linearised_growth(beta, k):
    """The growth rate of mode k derived from scratch: for ρ = (1 + ε cos kθ)/(2π) the velocity
    v(θ) = ∫ e^{β cos(θ−φ)} sin(φ−θ) ρ(φ) dφ is (ε/2π) J(θ), J(θ) = ∫ e^{β cos(θ−φ)} sin(φ−θ)
    cos(kφ) dφ = A sin(kθ), so ∂_t ρ = −∂_θ(ρ v) = −(ε/2π) (A k / 2π) cos kθ + O(ε²): λ = −A k/2π,
    with A = J(π/2k) by quadrature."""
    theta = math.pi / (2 * k)
    a = quad(
        lambda p: math.exp(beta * math.cos(theta - p)) * math.sin(p - theta) * math.cos(k * p),
        0,
        2 * math.pi,
        epsabs=0,
        epsrel=1e-12,
        limit=200,
    )[0]
    return -a * k / (2 * math.pi)


@pytest.mark.parametrize("beta, k", [(0.5, 1), (4.0, 2), (4.0, 3), (9.0, 5)])
def test_growth_rate_is_the_linearised_mean_field_flux(beta, k):
    assert meanfield_growth_rates(beta, k)[-1] == pytest.approx(_linearised_growth(beta, k), 1e-9)


def test_growth_rates_no_overflow_and_k_star_against_brute_force():
    assert np.isfinite(meanfield_growth_rates(600.0, 50)).all()
    for beta in (0.1, 0.9, 1.0, 1.5, 3.0, 4.0, 7.5, 9.0, 20.0, 50.0, 120.0):
        k = np.arange(1, 200)
        assert meanfield_clusters(beta) == int(np.argmax(k * k * iv(k, beta))) + 1, beta
    # k* grows like √(2β) for large β
    assert abs(meanfield_clusters(500.0) - math.sqrt(1000)) <= 1.5


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, "4"])
def test_meanfield_refuses_bad_beta(bad):
    with pytest.raises(ValueError, match="beta"):
        meanfield_clusters(bad)


def _ode_merge_time(beta, angle, ma, mb, delta, attention):
    """The two-cluster reduced ODE integrated by solve_ivp until cos Δ = 1 − δ."""
    n = ma + mb

    def rhs(t, y):
        c = math.cos(y[0])
        if attention == "softmax":
            wb = mb * math.exp(beta * c) / (ma * math.exp(beta) + mb * math.exp(beta * c))
            wa = ma * math.exp(beta * c) / (mb * math.exp(beta) + ma * math.exp(beta * c))
        else:
            wb, wa = mb * math.exp(beta * c) / n, ma * math.exp(beta * c) / n
        return [-(wa + wb) * math.sin(y[0])]

    def hit(t, y):
        return math.cos(y[0]) - (1 - delta)

    hit.terminal = True
    sol = solve_ivp(rhs, (0, 1e9), [angle], events=hit, rtol=1e-11, atol=1e-13, method="LSODA")
    return sol.t_events[0][0]


@pytest.mark.parametrize("attention", ["softmax", "unnormalized"])
@pytest.mark.parametrize("beta, angle", [(0.0, 1.0), (3.0, 1.2), (8.0, 0.7)])
def test_merge_time_against_the_ode(attention, beta, angle):
    t = _ode_merge_time(beta, angle, 2, 3, 1e-3, attention)
    got = merge_time(beta, angle, masses=(2, 3), attention=attention)
    assert got == pytest.approx(math.log(t), abs=1e-7)


def test_merge_time_rate_is_one_minus_cos_and_a_wrong_rate_is_detected():
    # log T = β(1 − cos Δ) − log(c β sin² Δ) + o(1), c = m_b/m_a + m_a/m_b: the exponent of
    # GKPR's staircase. A wrong exponent (the angle off by 5 %) misses by far more than o(1).
    angle, beta = 1.1, 400.0
    c = 2 / 3 + 3 / 2
    log_t = merge_time(beta, angle, masses=(2, 3))
    prefactor = math.log(c * beta * math.sin(angle) ** 2)
    assert log_t - (beta * (1 - math.cos(angle)) - prefactor) == pytest.approx(0, abs=0.02)
    wrong = beta * (1 - math.cos(1.05 * angle)) - prefactor
    assert abs(log_t - wrong) > 1.0
    assert math.isfinite(merge_time(5000.0, 2.0))  # e^{5000 · 1.4}: only its log is finite


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"angle": 0.01}, "angle"),
        ({"angle": math.pi}, "angle"),
        ({"delta": 0.0}, "delta"),
        ({"beta": -1.0}, "beta"),
        ({"attention": "hard"}, "attention"),
        ({"masses": (1, 0)}, "masses"),
        ({"attention": "unnormalized", "n": 1}, "n"),
    ],
)
def test_merge_time_refuses_bad_input(kwargs, name):
    args = {"beta": 2.0, "angle": 1.0} | kwargs
    with pytest.raises(ValueError, match=name):
        merge_time(args.pop("beta"), args.pop("angle"), **args)
