"""The sphere models: convergence to (SA)/(USA), the RK4 order, reproducibility, initial
configurations and bad input."""

import numba
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import metastab as ms
from metastab.models.sphere import SPHERE_TOL

N, BETA, T = 4, 1.0, 4.0


def gamma_beta(t: float, n: int, beta: float, unnormalized: bool) -> float:
    """γ_β(t) of [GLPR] Thm 6.8: eq. (6.9) for (SA), (6.10) for (USA), γ(0) = 0."""

    def rhs(_, y):
        c = y[0]
        e = np.exp(beta * c)
        if unnormalized:
            return [2.0 / n * e * (1 - c) * ((n - 1) * c + 1)]
        return [2 * e * (1 - c) * ((n - 1) * c + 1) / (np.exp(beta) + (n - 1) * e)]

    return float(solve_ivp(rhs, (0, t), [0.0], rtol=1e-13, atol=1e-15).y[0, -1])


def cosines(model, n=N, t=T):
    """The pairwise cosines at time t from the orthogonal start e_1..e_n."""
    run = ms.simulate(model, ms.orthogonal(n, n), steps=int(round(t / model.dt)))
    x = run.final[0]
    return (x @ x.T)[~np.eye(n, dtype=bool)]


@pytest.mark.parametrize("attention", ["softmax", "unnormalized"])
def test_orthogonal_start_keeps_all_cosines_equal(attention):
    """Thm 6.8: from pairwise orthogonal tokens every pairwise cosine is the same function."""
    for scheme in ("post-ln", "rk4"):
        c = cosines(ms.SphereFlow(2.0, 0.1, attention=attention, scheme=scheme), n=6)
        assert np.ptp(c) < 1e-14


def errors(scheme, attention, dts):
    exact = gamma_beta(T, N, BETA, attention == "unnormalized")
    return np.array(
        [
            abs(cosines(ms.SphereFlow(BETA, dt, scheme=scheme, attention=attention))[0] - exact)
            for dt in dts
        ]
    )


def test_rk4_is_fourth_order_and_post_ln_first_order():
    """Error of the cosine at t = 4 against (6.9) solved at rtol 1e-13: halving dt divides the
    RK4 error by 2^4 = 16 (accepted: 14 to 19, measured 17.5, 16.7, 16.3) and the post-LN
    error by about 2 (first order; the negative control: far from 16)."""
    dts = [0.4, 0.2, 0.1, 0.05]
    rk4 = errors("rk4", "softmax", dts)
    assert np.all((rk4[:-1] / rk4[1:] > 14) & (rk4[:-1] / rk4[1:] < 19)), rk4
    post = errors("post-ln", "softmax", dts)
    assert np.all((post[:-1] / post[1:] > 1.8) & (post[:-1] / post[1:] < 3)), post


def test_post_ln_converges_to_sa_and_usa():
    """Post-LN layers of size dt converge to (SA) and (USA) as dt -> 0 (first order)."""
    for attention in ("softmax", "unnormalized"):
        err = errors("post-ln", attention, [0.2, 0.02, 0.002])
        assert err[-1] < 1e-3 * max(err[0], 1e-3) * 20 and err[-1] < err[1] < err[0], err


def test_rk4_usa_matches_6_10():
    err = errors("rk4", "unnormalized", [0.05])
    assert err[0] < 1e-11


@pytest.mark.parametrize("n", [64, 80])
@pytest.mark.parametrize("scheme", [pytest.param("rk4", marks=pytest.mark.slow), "post-ln-causal"])
def test_one_chain_split_over_threads_has_the_same_bits(n, scheme):
    """Fewer chains than threads: the blocks of tokens of each step run on the threads (n = 64:
    with the symmetric Gram of weights; n = 80: a padded last block), with the bits of one
    thread. RK4 runs the same split four times a step, in the slow tier: its token-parallel
    kernel compiles for about 30 s of the fast tier's 5 minutes."""
    x0 = ms.sphere_uniform(n, 3, rng=1)
    if scheme == "rk4":
        model = ms.SphereFlow(5.0, 0.1, scheme="rk4")
    else:
        model = ms.SphereFlow(5.0, 0.1, causal=True)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        split = ms.simulate(model, x0, steps=5).final
        numba.set_num_threads(1)
        one = ms.simulate(model, x0, steps=5).final
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(split, one)


def test_random_initial_configurations_are_per_chain():
    for draw in (
        lambda **kw: ms.sphere_uniform(5, 4, rng=9, **kw),
        lambda **kw: ms.orthogonal(3, 5, rotate=True, rng=9, **kw),
        lambda **kw: ms.caps([[1.0, 0, 0, 0], [0, 1.0, 0, 0]], [2, 3], 0.2, rng=9, **kw),
    ):
        all_ = draw(chains=5)
        assert np.array_equal(all_[3:], draw(chains=2, first_chain=3))
        assert not np.array_equal(all_[0], all_[1])
        assert np.allclose(np.linalg.norm(all_, axis=-1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("d", [2, 3, 50, 1024])
@pytest.mark.parametrize("angle", [0.3, 2.0])
def test_caps_are_uniform_in_the_cap(d, angle):
    """Every point lies in its cap, and the angle θ to the centre has the cap's law (density
    ∝ sin^{d-2} θ): the fraction with θ <= angle/2 against its integral (4 sigma); the
    negative control, the uniform angle of the circle, is rejected at d >= 50."""
    from scipy.integrate import quad

    m = 4000
    centre = np.zeros(d)
    centre[0] = 1.0
    x = ms.caps([centre], [m], angle, rng=1)
    theta = np.arccos(np.clip(x[:, 0], -1, 1))
    assert (theta <= angle + 1e-7).all()

    def mass(a):
        peak = np.log(np.sin(min(angle, np.pi / 2)))
        return quad(lambda t: np.exp((d - 2) * (np.log(np.sin(t)) - peak)), 0, a, points=[a])[0]

    half = mass(angle / 2) / mass(angle)
    frac = (theta <= angle / 2).mean()
    sigma = np.sqrt(max(half * (1 - half), 1e-4) / m)
    assert abs(frac - half) < 4 * sigma
    if d >= 50:
        assert abs(frac - 0.5) > 4 * np.sqrt(0.25 / m)  # the circle's law would be 1/2


def test_span_coordinates_keep_the_gram_matrix_and_the_flow():
    """span=True: each start as its n × min(n, d) coordinates in its span, unit rows with the
    same Gram matrix (to roundoff) as the n × d draw, chain c the same whatever the count; for
    d <= n the draw itself. A sphere flow with B = V = I never leaves the span, so the run on
    the coordinates has the cosines of the full run."""
    full = ms.sphere_uniform(5, 40, chains=3, rng=7)
    span = ms.sphere_uniform(5, 40, span=True, chains=3, rng=7)
    assert span.shape == (3, 5, 5) and span.flags.c_contiguous
    gram = full @ full.transpose(0, 2, 1)
    assert np.allclose(span @ span.transpose(0, 2, 1), gram, rtol=0, atol=1e-14)
    assert np.array_equal(
        ms.sphere_uniform(5, 40, span=True, chains=1, rng=7, first_chain=2)[0], span[2]
    )
    assert np.array_equal(
        ms.sphere_uniform(5, 4, span=True, chains=2, rng=7),
        ms.sphere_uniform(5, 4, chains=2, rng=7),
    )
    flow = ms.SphereFlow(beta=2.0, dt=0.1, scheme="rk4")
    a, b = (ms.simulate(flow, x, steps=30).final for x in (full, span))
    assert np.allclose(a @ a.transpose(0, 2, 1), b @ b.transpose(0, 2, 1), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="span must be True or False, got 'yes'"):
        ms.sphere_uniform(5, 40, span="yes")


def test_uniform_on_the_sphere_has_isotropic_moments():
    x = ms.sphere_uniform(20000, 3, rng=0)
    assert np.abs(x.mean(axis=0)).max() < 4 / np.sqrt(3 * 20000)
    assert np.abs(x.T @ x / 20000 - np.eye(3) / 3).max() < 0.02


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


def test_x0_off_the_sphere_is_refused_with_the_token():
    x0 = ms.sphere_uniform(4, 3, rng=1)
    x0[2] *= 1 + 10 * SPHERE_TOL
    with pytest.raises(ValueError, match=r"unit sphere .*x0\[0, 2\]"):
        ms.simulate(ms.SphereFlow(1.0, 0.1), x0, steps=1)
    x0[2] /= 1 + 10 * SPHERE_TOL
    x0[2] *= 1 + 0.5 * SPHERE_TOL  # within the stated tolerance: accepted as it is
    run = ms.simulate(ms.SphereChain(1.0, 0.1), x0, steps=1, rng=0)
    assert run.final.shape == (1, 4, 3)


@pytest.mark.parametrize(
    "make",
    [
        lambda B: ms.SphereFlow(1.0, 0.1, B=B),
        lambda B: ms.SphereFlow(1.0, 0.1, heads=[(np.eye(2), np.eye(2)), (B, np.eye(2))]),
        lambda B: ms.SphereChain(1.0, 0.1, B=B),
    ],
    ids=["flow", "second-head", "chain"],
)
def test_overflowing_scores_are_refused_in_any_head(make):
    """Scores of unit vectors are bounded by |B_h|_F: a head whose B could overflow them is
    refused up front with that bound, the second head as the first; the same B scaled to a safe
    size passes that check (control: the run then stops at the memory check that follows)."""
    x0 = ms.sphere_uniform(4, 2, rng=1)
    with pytest.raises(ValueError, match=r"scores up to ~1\.41e\+307, beyond the 1e\+307"):
        ms.simulate(make(1e307 * np.eye(2)), x0, steps=1)
    with pytest.raises(MemoryError, match="chains of 4 tokens"):
        ms.simulate(make(1e300 * np.eye(2)), x0, steps=1, chains=10**12)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: ms.SphereFlow(1.0, 0.0), "dt must be > 0"),
        (lambda: ms.SphereFlow(-1.0, 0.1), "beta must be >= 0"),
        (lambda: ms.SphereFlow(1.0, 0.1, scheme="euler"), "scheme must be one of"),
        (lambda: ms.SphereFlow(1.0, 0.1, attention="hard"), "attention must be one of"),
        (lambda: ms.SphereFlow(1.0, 0.1, causal=1), "causal must be True or False"),
        (lambda: ms.SphereFlow(1.0, 0.1, heads=[np.eye(2)]), "heads must be"),
        (lambda: ms.SphereFlow(1.0, 0.1, B=np.eye(2), heads=[(np.eye(2), np.eye(2))]), "not both"),
        (lambda: ms.SphereChain(1.0, 1.5), "gamma must be in"),
        (lambda: ms.SphereChain(1.0, 0.5, V=np.ones((2, 3))), "V must be a square"),
        (lambda: ms.orthogonal(4, 3), "d >= n"),
        (lambda: ms.caps([[0.0, 0.0]], [2], 0.1), "centres must be nonzero"),
        (lambda: ms.caps([[1.0, 0.0]], [2, 3], 0.1), "sizes must be 1 integers"),
        (lambda: ms.caps([[1.0, 0.0]], [2], 4.0), "angle must be in"),
    ],
)
def test_bad_model_and_configuration_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_matrices_of_the_wrong_dimension_are_refused_at_the_run():
    with pytest.raises(ValueError, match="B must be 3×3"):
        ms.simulate(ms.SphereFlow(1.0, 0.1, B=np.eye(2)), ms.orthogonal(3, 3), steps=1)
