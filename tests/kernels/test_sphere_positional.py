"""Positional biases (ALiBi, strict causal masks, (USA) normalised over the positional weights)
and the e^{−β}-scaled (USA) field of the sphere flow: the CPU kernels == the pure-Python reference
bit for bit, the authors' formula of the causal ALiBi particle system (Duerinckx, Geshkovski,
Rossi, arXiv 2605.09213, ``generate_alibi_particle_circle_dynamics.py``), and large β."""

import itertools
import math
import warnings

import numpy as np
import pytest

import metastab as ms
from metastab.exceptions import StepSizeWarning
from metastab.kernels.cpu import sphere_steps as SK
from metastab.kernels.reference import sphere as sref
from metastab.models.sphere import SphereFlow, check_step


def on_sphere(rng, *shape):
    x = rng.normal(size=shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def k_flow(x, model):
    x = np.ascontiguousarray(x)
    n, d = x.shape
    dyn = model.kernel_params(d)
    out = np.full((n, d), np.nan)
    SK.sphere_flow_step(
        x, dyn.Bs, dyn.Vs, dyn.beta, float(model.schedule(0, 1).sizes[0]), dyn.attention,
        dyn.scheme, dyn.causal,
        dyn.strict, dyn.alibi, dyn.positional, dyn.offset, dyn.plain_B, dyn.plain_V, out,
        SK.sphere_flow_work(n, d),
    )  # fmt: skip
    return out


def r_flow(x, model):
    d = x.shape[1]
    Bs, Vs = model.head_matrices(d)
    dyn = model.kernel_params(d)
    return sref.sphere_flow_step(
        x,
        list(zip(Bs, Vs)),
        model.beta,
        model.dt,
        attention=model.attention,
        scheme=model.scheme,
        causal=model.causal,
        strict=dyn.strict,
        alibi=dyn.alibi,
        positional=dyn.positional,
        offset=dyn.offset,
        alpha=model.alpha,
    )


RNG = np.random.default_rng(20261202)
D = 3
MATRICES = {
    "identity": {},
    "BV": {"B": 0.6 * RNG.normal(size=(D, D)), "V": RNG.normal(size=(D, D))},
    "heads": {"heads": [(0.6 * RNG.normal(size=(D, D)), RNG.normal(size=(D, D))) for _ in "ab"]},
}
PAPER = dict(
    attention="unnormalized", causal=True, strict_causal=True, positional_norm=True, alibi=1.0
)
OPTIONS = {
    "strict-softmax": dict(causal=True, strict_causal=True),
    "alibi-causal-softmax": dict(causal=True, alibi=0.7),
    "alibi-softmax": dict(alibi=2.5),
    "strict-usa": dict(attention="unnormalized", causal=True, strict_causal=True),
    "alibi-usa": dict(attention="unnormalized", alibi=1.3),
    "paper": PAPER,
    "positional-usa": dict(attention="unnormalized", positional_norm=True),
    "positional-causal-usa": dict(attention="unnormalized", causal=True, positional_norm=True),
    "rescale-usa": dict(attention="unnormalized", rescale=True, causal=True),
}
# Mix-LN and LN-scaling step by post-LN's and pre-LN's functions (their schedules: tested in
# test_sphere_schemes)
CASES = list(itertools.product(("post-ln", "rk4", "pre-ln", "peri-ln", "ngpt"), OPTIONS, MATRICES))


@pytest.mark.parametrize("scheme, option, mats", CASES)
@pytest.mark.filterwarnings("ignore::metastab.exceptions.StepSizeWarning")  # bits, not accuracy
def test_positional_step_matches_reference(scheme, option, mats):
    """Every scheme with every positional option, on B = I (common shift), B and V, and two
    heads: the reference's bits (n = 7, one short block, coincident tokens)."""
    rng = np.random.default_rng(11)
    x = on_sphere(rng, 7, D)
    x[4] = x[1]
    if scheme in ("pre-ln", "peri-ln"):
        x *= rng.uniform(0.5, 2.0, size=(7, 1))
    if scheme in ("peri-ln", "ngpt") and OPTIONS[option].get("strict_causal"):
        with pytest.raises(ValueError, match="token 0 attends to no token"):
            SphereFlow(1.0, 0.3, scheme=scheme, **OPTIONS[option], **MATRICES[mats])
        return
    for beta in (0.0, 1.5, 40.0):
        m = SphereFlow(beta, 0.3, scheme=scheme, **OPTIONS[option], **MATRICES[mats])
        want, got = r_flow(x, m), k_flow(x, m)
        if np.isfinite(want).all():
            assert np.array_equal(got, want)
        else:  # (USA) at beta = 40 with B, V by RK4 diverges: both say so
            assert not np.isfinite(got).all()


@pytest.mark.parametrize("n", [32, 33, 64])
@pytest.mark.parametrize("option", ["paper", "alibi-causal-softmax", "strict-softmax"])
def test_positional_tiles_match_reference(n, option):
    """The kernel's tiled paths: one full block (its Gram of weights), a padded second block,
    and the blocked Gram of two blocks (weights shared by the pair, the ALiBi weights applied
    apart): the reference's bits."""
    x = on_sphere(np.random.default_rng(n), n, 4)
    m = SphereFlow(3.0, 0.1, **OPTIONS[option])
    assert np.array_equal(k_flow(x, m), r_flow(x, m))


def test_options_change_the_bits_and_zero_slope_does_not():
    """Negative controls: each option changes the step; λ = 0 gives the bits of no ALiBi."""
    x = on_sphere(np.random.default_rng(3), 7, D)
    base = dict(attention="unnormalized", causal=True)
    plain = k_flow(x, SphereFlow(2.0, 0.1, **base))
    assert np.array_equal(k_flow(x, SphereFlow(2.0, 0.1, alibi=0.0, **base)), plain)
    for extra in (
        dict(alibi=0.5),
        dict(strict_causal=True),
        dict(positional_norm=True),
        dict(rescale=True),
    ):
        assert not np.array_equal(k_flow(x, SphereFlow(2.0, 0.1, **base, **extra)), plain)


def _angles(x):
    return np.arctan2(x[:, 1], x[:, 0])


def repository_force(theta, beta, lam):
    """The authors' ``force`` with ``build_causal_weights`` (copied from
    generate_alibi_particle_circle_dynamics.py): θ̇_j = Σ_{k<j} a_jk (−β sin(θ_j − θ_k)
    e^{β cos(θ_j − θ_k)}), a_jk = e^{−(λ/n)(j−k)} / Σ_{k'<j} e^{−(λ/n)(j−k')}; θ̇_0 = 0."""
    n = theta.size
    out = np.zeros(n)
    for j in range(1, n):
        k = np.arange(j)
        coeffs = np.exp(-(lam / n) * (j - k))
        w = coeffs / coeffs.sum()
        diff = theta[j] - theta[:j]
        out[j] = np.dot(w, -beta * np.sin(diff) * np.exp(beta * np.cos(diff)))
    return out


def package_angular_velocity(theta, beta, **kw):
    """θ̇_j of the package's ẋ_j = P⊥_{x_j} Attn(x)_j on the circle (the reference)."""
    x = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    v = np.array(
        sref.velocity(x, [(np.eye(2), np.eye(2))], beta, True, True, True, kw.get("position"))
    )
    return -np.sin(theta) * v[:, 0] + np.cos(theta) * v[:, 1]


@pytest.mark.parametrize("lam", [0.0, 1.0, 4.0])
def test_paper_weights_are_the_repositorys(lam):
    """The paper's system (strict mask, ALiBi λ, Z_j = Σ_{k<j} a_jk) has the authors' force up to
    their factor β (a time change; β = 2 here), to 1e-13 relative. Negative control: today's
    (USA) normalisation (Z = n, k <= j) is off by βn/j per token (the ratio checked), which is
    refused at the same tolerance."""
    n, beta = 12, 2.0
    theta = np.random.default_rng(17).uniform(0, 2 * math.pi, n)
    want = repository_force(theta, beta, lam)
    got = beta * package_angular_velocity(theta, beta, position=(True, lam, True, 0.0))
    assert got[0] == 0.0 and want[0] == 0.0
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    if lam == 0.0:
        usa = package_angular_velocity(theta, beta, position=(False, 0.0, False, 0.0))
        j = np.arange(1, n)
        np.testing.assert_allclose(want[1:] / usa[1:], beta * n / j, rtol=1e-12)
        assert not np.allclose(beta * usa, want, rtol=1e-13, atol=1e-15)


def test_token_zero_attends_to_none_under_a_strict_mask():
    """Token 0 has no k < 0: Attn(x)_0 = 0 exactly (softmax and (USA), no NaN from the empty
    sum), and RK4 leaves it where it is up to the LayerNorm's rounding."""
    x = on_sphere(np.random.default_rng(5), 6, D)
    for attention in ("softmax", "unnormalized"):
        a = sref.attention(x, [(np.eye(D), np.eye(D))], 2.0, attention == "unnormalized", True,
                           True)  # fmt: skip
        assert a[0] == [0.0] * D and all(any(v != 0.0 for v in ai) for ai in a[1:])
        m = SphereFlow(2.0, 0.1, scheme="rk4", attention=attention, causal=True,
                       strict_causal=True)  # fmt: skip
        y = k_flow(x, m)
        np.testing.assert_allclose(y[0], x[0], rtol=0, atol=4e-16)
        assert np.abs(y[1:] - x[1:]).max() > 1e-3


def test_rescale_is_the_usa_field_times_exp_minus_beta():
    """rescale: the (USA) field times e^{−β} (the staircase's field), to rounding (before the
    projection, whose cancellation would hide it)."""
    x = on_sphere(np.random.default_rng(8), 9, D)
    heads = [(np.eye(D), np.eye(D))]
    for beta in (0.5, 5.0, 30.0):
        v = np.array(sref.velocity(x, heads, beta, True, False, False))
        w = np.array(sref.velocity(x, heads, beta, True, False, False, (False, 0.0, False, 1.0)))
        np.testing.assert_allclose(w, math.exp(-beta) * v, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("scheme", ["post-ln", "rk4", "pre-ln"])
def test_large_beta_runs_finite_with_rescale(scheme):
    """β = 500–4000 and 1e6: the e^{−β}-scaled (USA) field runs, finite; stable_dt is computed
    in log space (no OverflowError; 0 for the unscaled field at β = 1e6 where its bound is
    e^{β‖B‖}). Without rescale, β beyond 709.78 is refused with the option named; β = 709 still
    runs by post-LN as before (RK4 and pre-LN take a state of norm ~e^709 there: it leaves the
    range of float64 whatever dt)."""
    x0 = ms.sphere_uniform(6, 2, chains=1, rng=1)[0]
    for beta in (500.0, 4000.0, 1e6):
        m = SphereFlow(beta, 0.1, attention="unnormalized", rescale=True, scheme=scheme)
        assert m.stable_dt(2) > 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StepSizeWarning)
            run = ms.simulate(m, x0, steps=3)
        assert np.isfinite(run.final).all()
    bare = SphereFlow(1e6, 0.1, attention="unnormalized", scheme=scheme)
    assert bare.stable_dt(2) == (2.0 * math.e * 1e6 / 2.0 if scheme == "post-ln" else 0.0)
    with pytest.raises(ValueError, match="rescale=True"):
        check_step(bare, 2)
    with pytest.raises(ValueError, match="rescale=True"):
        ms.simulate(SphereFlow(710.0, 0.1, attention="unnormalized", scheme=scheme), x0, steps=1)
    big = SphereFlow(1e6, 0.1, attention="unnormalized", rescale=True, B=2 * np.eye(2))
    with pytest.raises(ValueError, match="spectral norm at most 1"):
        check_step(big, 2)
    ok = SphereFlow(709.0, 1e-9, attention="unnormalized", scheme=scheme)
    assert math.isfinite(ok.stable_dt(2))
    if scheme == "post-ln":
        assert np.isfinite(ms.simulate(ok, x0, steps=1).final).all()


def test_stable_dt_keeps_its_values_below_overflow():
    """The log-space bound leaves today's values unchanged (docstring values) and agrees with the
    linear formula near the threshold; rescale multiplies the bound by e^{−β}."""
    assert round(SphereFlow(2.0, 0.1, scheme="rk4", attention="unnormalized").stable_dt(3), 4) == (
        0.3769
    )
    m = SphereFlow(700.0, 0.1, scheme="rk4", attention="unnormalized")
    r = SphereFlow(700.0, 0.1, scheme="rk4", attention="unnormalized", rescale=True)
    np.testing.assert_allclose(m.stable_dt(3) * math.exp(700.0), r.stable_dt(3), rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(alibi=-1.0), "alibi must be >= 0"),
        (dict(alibi=math.nan), "alibi must be finite"),
        (dict(alibi="1"), "alibi must be a real number"),
        (dict(strict_causal=True), "strict_causal=True needs causal=True"),
        (dict(causal=True, strict_causal=1), "strict_causal must be True or False"),
        (dict(positional_norm=True), "positional_norm=True needs attention='unnormalized'"),
        (dict(rescale=True), "rescale=True needs attention='unnormalized'"),
        (dict(attention="unnormalized", rescale="yes"), "rescale must be True or False"),
    ],
)
def test_bad_values_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SphereFlow(1.0, 0.1, **kwargs)


def test_options_travel_in_to_dict():
    """The options on are in the record; those off are left out, so that a model without them
    keeps the record (and sweep hash) it had before they existed."""
    m = SphereFlow(1.0, 0.1, **PAPER)
    d = m.to_dict()
    assert d["alibi"] == 1.0 and d["strict_causal"] and d["positional_norm"]
    assert "rescale" not in d
    assert SphereFlow(1.0, 0.1, attention="unnormalized", rescale=True).to_dict()["rescale"]
    plain = SphereFlow(1.0, 0.1, causal=True).to_dict()
    assert not {"strict_causal", "alibi", "positional_norm", "rescale"} & set(plain)
    assert type(m).__name__ == "SphereFlow" and SphereFlow(**{
        k: v for k, v in d.items() if k != "kind"}).alibi == 1.0  # fmt: skip


@pytest.mark.parametrize("option", ["paper", "alibi-causal-softmax"])
# RK4's split kernel compiles for tens of seconds: its case runs with the slow tier
@pytest.mark.parametrize("scheme", ["post-ln", pytest.param("rk4", marks=pytest.mark.slow)])
def test_positional_tokens_split_over_threads_same_bits(option, scheme):
    """One chain of 64 tokens (two blocks) split over 2 threads (``_velocity_split``) and on one
    thread (the held state of ``_velocity``): the same bits, the reference's for post-LN."""
    from metastab.kernels.cpu import drivers
    from metastab.kernels.params import NO_EVENT, no_event

    n, d, steps = 64, 3, 3
    model = SphereFlow(3.0, 0.1, scheme=scheme, **OPTIONS[option])
    x0 = on_sphere(np.random.default_rng(21), 1, n, d)
    dyn, ev = model.kernel_params(d), no_event(n, d)
    assert drivers._plan(1, n, d, dyn, NO_EVENT, 2)[1]  # split

    def run(threads):
        X, state = x0.copy(), ms.Seed(1).streams(1)
        stopped, done = np.zeros(1, np.int64), np.zeros(1, bool)
        drivers.advance(X, state, dyn, model.schedule(0, steps), 0, steps, ev, stopped, done,
                        threads)  # fmt: skip
        return X[0]

    one, two = run(1), run(2)
    assert np.array_equal(one, two) and not np.array_equal(one, x0[0])
    if scheme == "post-ln":
        x = x0[0]
        for _ in range(steps):
            x = r_flow(x, model)
        assert np.array_equal(one, x)
