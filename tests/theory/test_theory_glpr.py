"""Tests for GLPR Thm 6.8 / 6.9 in metastab.theory: eqs. (6.9)/(6.10), t*(β), Γ, the 6.9 bound.

(6.9) is checked three ways: the closed form at β = 0, a quadrature of dt = dγ/γ̇ (another
method than solve_ivp), and a direct RK4 integration of the particle system (SA)/(USA) from an
orthogonal start written out here in NumPy (the equation of the theorem, not of this package),
with the other equation as a negative control.
"""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from metastab.theory import (
    orthogonal_cosine,
    orthogonal_rate,
    orthogonal_time,
    phase_boundary,
    random_start_bound,
    random_start_probability,
)

ATTENTIONS = ("softmax", "unnormalized")


def closed_form_beta0(t, n):
    """γ at β = 0, where (6.9) and (6.10) coincide: γ̇ = 2(1 − γ)((n − 1)γ + 1)/n."""
    e = np.exp(-2 * np.asarray(t))
    return (1 - e) / (1 + (n - 1) * e)


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("n", [2, 32, 128])
def test_beta_zero_matches_the_closed_form(attention, n):
    t = np.linspace(0, 12, 49)
    got = orthogonal_cosine(t, 0.0, n, attention=attention)
    assert np.allclose(got, closed_form_beta0(t, n), rtol=0, atol=1e-11)
    delta = 1e-3
    exact = math.log((1 + (n - 1) * (1 - delta)) / delta) / 2
    assert orthogonal_time(0.0, n, delta=delta, attention=attention) == pytest.approx(
        exact, rel=1e-9
    )


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("n", [32, 128])
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0, 4.0, 6.0, 9.0])
def test_time_to_one_minus_delta_agrees_with_a_quadrature(attention, n, beta):
    # t* = ∫_0^{1−δ} dγ / γ̇(γ): the same number by another method (tolerance 1e-8 relative)
    delta = 1e-3
    exact = quad(
        lambda g: 1 / orthogonal_rate(g, beta, n, attention=attention),
        0,
        1 - delta,
        epsabs=1e-13,
        epsrel=1e-13,
        limit=200,
    )[0]
    got = orthogonal_time(beta, n, delta=delta, attention=attention)
    assert got == pytest.approx(exact, rel=1e-8)
    # and the solution passes through 1 − δ there
    assert orthogonal_cosine([got], beta, n, attention=attention)[0] == pytest.approx(
        1 - delta, abs=1e-9
    )


def particle_cosines(beta, n, t_end, attention, dt=1e-3):
    """RK4 on (SA)/(USA) for n tokens started at the standard basis of R^n (Q = K = V = I):
    ẋ_i = P⊥_{x_i}(Σ_j w_ij x_j), w_ij = e^{β<x_i,x_j>}/Z_i (Z_i = Σ_k e^{β<x_i,x_k>}, or n)."""

    def field(x):
        s = beta * x @ x.T
        w = np.exp(s - s.max(axis=1, keepdims=True))
        if attention == "softmax":
            w /= w.sum(axis=1, keepdims=True)
        else:
            w = np.exp(s) / n
        a = w @ x
        return a - np.sum(a * x, axis=1, keepdims=True) * x

    x = np.eye(n)
    for _ in range(round(t_end / dt)):
        k1 = field(x)
        k2 = field(x + dt / 2 * k1)
        k3 = field(x + dt / 2 * k2)
        k4 = field(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    g = x @ x.T
    return g[~np.eye(n, dtype=bool)]


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_equation_is_the_cosine_of_the_particle_system_and_the_other_is_not(attention):
    beta, n, t = 2.0, 5, 1.5
    cos = particle_cosines(beta, n, t, attention)
    assert np.ptp(cos) < 1e-12  # Thm 6.8: all pairwise cosines stay equal
    mine = orthogonal_cosine([t], beta, n, attention=attention)[0]
    other = "unnormalized" if attention == "softmax" else "softmax"
    assert abs(cos.mean() - mine) < 1e-9
    # negative control: the other model's equation is far off at this β
    assert abs(cos.mean() - orthogonal_cosine([t], beta, n, attention=other)[0]) > 1e-2


def test_cosine_keeps_the_order_and_shape_of_t_and_stays_below_one():
    t = np.array([[3.0, 0.0], [1.0, 3.0]])
    g = orthogonal_cosine(t, 4.0, 32)
    assert g.shape == t.shape and g[0, 1] == 0 and g[0, 0] == g[1, 1] > g[1, 0] > 0
    assert orthogonal_cosine([], 4.0, 32).shape == (0,)
    late = orthogonal_cosine(np.linspace(0, 400, 9), 9.0, 32)  # 1 − γ underflows by t = 400
    assert np.all(np.diff(late) >= 0) and np.all(np.diff(late[:5]) > 0) and late[-1] <= 1
    assert 1 - orthogonal_cosine([150.0], 9.0, 32)[0] > 1 - orthogonal_cosine([200.0], 9.0, 32)[0]


def test_large_beta_is_finite_and_the_boundary_grows_with_beta():
    assert orthogonal_rate(0.0, 1e6, 32) == 0.0  # e^{β} overflows to the limit, not NaN
    assert np.isfinite(orthogonal_rate(np.linspace(0, 1, 5), 1e6, 32)).all()
    times = phase_boundary([0.0, 1.0, 2.0, 4.0, 6.0, 9.0], 32)
    assert np.all(np.diff(times) > 0)
    assert times[-1] == pytest.approx(orthogonal_time(9.0, 32))
    # (USA) clusters faster as β grows (the weights e^{βγ}/n grow), (SA) slower
    usa = phase_boundary([1.0, 4.0, 9.0], 32, attention="unnormalized")
    assert np.all(np.diff(usa) < 0)


def test_random_start_bound_values():
    # 2 e^{10 max(1, β)} n t √(log d / d)
    assert random_start_bound(2.0, 0.5, 3, 100.0) == pytest.approx(
        2 * math.exp(10) * 3 * 2 * math.sqrt(math.log(100) / 100)
    )
    assert random_start_bound(1.0, 4.0, 2, 100.0) == pytest.approx(
        math.exp(30) * random_start_bound(1.0, 0.0, 2, 100.0)  # c(4)/c(0) = e^{40}/e^{10}
    )
    # the probability is vacuous below d = (2n²)^64 and tends to one above
    assert random_start_probability(32, 1024) < 0
    assert random_start_probability(2, 8.0**64) == pytest.approx(0.0, abs=1e-12)
    assert 0 < random_start_probability(2, 8.0**70) < 1


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: orthogonal_cosine([1.0], -1.0, 4), "beta"),
        (lambda: orthogonal_cosine([1.0], 1.0, 1), "n"),
        (lambda: orthogonal_cosine([-1.0], 1.0, 4), "t"),
        (lambda: orthogonal_cosine([1.0], 1.0, 4, attention="hardmax"), "attention"),
        (lambda: orthogonal_time(1.0, 4, delta=0.0), "delta"),
        (lambda: orthogonal_time(1.0, 4, delta=1.0), "delta"),
        (lambda: random_start_bound(1.0, 1.0, 4, 1.0), "d"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        call()
