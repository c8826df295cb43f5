"""Sphere kernels == the pure-Python reference, bit for bit (np.array_equal on float64 arrays)."""

import itertools

import numpy as np
import pytest

import metastab as ms
from metastab.kernels.cpu import sphere_steps as SK
from metastab.kernels.reference import euclidean as ref
from metastab.kernels.reference import sphere as sref
from metastab.models.sphere import SphereChain, SphereFlow


def on_sphere(rng, *shape):
    x = rng.normal(size=shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def k_flow(x, model):
    x = np.ascontiguousarray(x)
    n, d = x.shape
    dyn = model.kernel_params(d)
    out = np.full((n, d), np.nan)
    SK.sphere_flow_step(
        x,
        dyn.Bs,
        dyn.Vs,
        dyn.beta,
        model.dt,
        dyn.attention,
        dyn.scheme,
        dyn.causal,
        dyn.strict,
        dyn.alibi,
        dyn.positional,
        dyn.offset,
        dyn.plain_B,
        dyn.plain_V,
        out,
        SK.sphere_flow_work(n, d),
    )
    return out


def heads_of(model, d):
    Bs, Vs = model.head_matrices(d)
    return list(zip(Bs, Vs))


RNG = np.random.default_rng(20261126)
D = 3
MATRICES = {
    "identity": {},
    "B": {"B": RNG.normal(size=(D, D))},
    "BV": {"B": RNG.normal(size=(D, D)), "V": RNG.normal(size=(D, D))},
    "heads": {"heads": [(RNG.normal(size=(D, D)), RNG.normal(size=(D, D))) for _ in range(2)]},
    "V": {"V": RNG.normal(size=(D, D))},  # B = I: the common shift with a value matrix
}
FLOW_CASES = list(
    itertools.product(
        ("post-ln", "rk4", "pre-ln"), ("softmax", "unnormalized"), (False, True), MATRICES
    )
)


@pytest.mark.parametrize("scheme, attention, causal, mats", FLOW_CASES)
def test_flow_step_matches_reference(scheme, attention, causal, mats):
    rng = np.random.default_rng(7)
    x = on_sphere(rng, 7, D)
    x[4] = x[1]  # coincident tokens
    if scheme == "pre-ln":  # its residual stream leaves the sphere
        x *= rng.uniform(0.5, 2.0, size=(7, 1))
    for beta in (0.0, 1.5, 40.0):
        m = SphereFlow(
            beta, 0.3, attention=attention, scheme=scheme, causal=causal, **MATRICES[mats]
        )
        want = sref.sphere_flow_step(
            x, heads_of(m, D), beta, 0.3, attention=attention, scheme=scheme, causal=causal
        )
        got = k_flow(x, m)
        if np.isfinite(want).all():
            assert np.array_equal(got, want)
        else:  # (USA) by RK4 at beta = 40, dt = 0.3 diverges: both say so
            assert (scheme, attention, beta) == ("rk4", "unnormalized", 40.0)
            assert not np.isfinite(got).all()


SCHEMES = (("post-ln", False), ("rk4", False), ("post-ln", True), ("pre-ln", False))


def _schemes_id(v):
    return "+".join(s + ("-causal" if c else "") for s, c in v) if isinstance(v, tuple) else None


@pytest.mark.parametrize(
    "n, d, schemes",
    [(9, 1, SCHEMES), (9, 2, SCHEMES), (9, 5, SCHEMES), (9, 33, SCHEMES), (32, 2, SCHEMES)]
    + [(32, 12, SCHEMES), (40, 3, SCHEMES), (40, 9, SCHEMES), (64, 2, SCHEMES[2:3])]
    + [(64, 9, SCHEMES[:1]), pytest.param(64, 9, SCHEMES, marks=pytest.mark.slow)],
    ids=_schemes_id,
)
def test_flow_step_matches_reference_across_sizes(n, d, schemes):
    """A short block of tokens, one full block (n = 32: its Gram tile by halves from d = 8 on),
    a padded last block (n = 40), the symmetric Gram (n = 64: in the fast tier by post-LN
    steps, the schemes' common velocity; every scheme in the slow tier); the mirrored exps of a
    full block's diagonal tile with the common shift (B = I)."""
    rng = np.random.default_rng(d)
    x = on_sphere(rng, n, d)
    for scheme, causal in schemes:
        m = SphereFlow(3.0, 0.1, scheme=scheme, causal=causal)
        want = sref.sphere_flow_step(x, heads_of(m, d), 3.0, 0.1, scheme=scheme, causal=causal)
        assert np.array_equal(k_flow(x, m), want)
    if n == 32:  # one block: the tiles scale the weighted sums (here by e^{β c_i} / n)
        m = SphereFlow(3.0, 0.1, attention="unnormalized", B=rng.normal(size=(d, d)))
        want = sref.sphere_flow_step(x, heads_of(m, d), 3.0, 0.1, attention="unnormalized")
        assert np.array_equal(k_flow(x, m), want)


@pytest.mark.parametrize("n", [32, 64])
def test_flow_heads_of_b_identity_share_the_weights(n):
    """Two heads with B = I (and their own V) read the same weights from the Gram, held once per
    step, causal masking included: the reference's bits. Negative control: one head less gives
    other bits."""
    rng = np.random.default_rng(n)
    d = 4
    x = on_sphere(rng, n, d)
    heads = [(np.eye(d), rng.normal(size=(d, d)) / d) for _ in range(2)]
    for causal in (False, True):
        m = SphereFlow(3.0, 0.1, heads=heads, causal=causal)
        assert m.kernel_params(d).plain_B
        want = sref.sphere_flow_step(x, heads_of(m, d), 3.0, 0.1, causal=causal)
        assert np.array_equal(k_flow(x, m), want)
        one = sref.sphere_flow_step(x, heads_of(m, d)[:1], 3.0, 0.1, causal=causal)
        assert not np.array_equal(k_flow(x, m), one)


def k_chain(x, model, u, state):
    x = np.ascontiguousarray(x)
    n, d = x.shape
    dyn = model.kernel_params(d)
    out = np.full((n, d), np.nan)
    SK.chain_step(
        x,
        dyn.Bs[0],
        dyn.Vs[0],
        dyn.plain_V,
        dyn.beta,
        model.gamma,
        u,
        state,
        out,
        SK.chain_work(n, d),
    )
    return out


@pytest.mark.parametrize("mats", ["identity", "B", "BV"])
@pytest.mark.parametrize("beta", [0.0, 2.0, 60.0])
def test_chain_step_matches_reference(mats, beta):
    rng = np.random.default_rng(11)
    x = on_sphere(rng, 8, D)
    x[5] = x[2]
    x[7] = x[2]
    m = SphereChain(beta, 0.4, **MATRICES[mats])
    for trial in range(20):
        u = rng.random(8)
        state = np.array([trial + 1, 2, 3, 4], dtype=np.uint64)
        want = sref.chain_step(
            x, m.key_query(D), m.head_matrices(D)[1][0], beta, 0.4, u, ref.Xoshiro256(state)
        )
        got = k_chain(x, m, u, state.copy())
        assert np.array_equal(got, want)


def test_chain_self_and_coincident_picks_are_exact_no_ops():
    """With V = I a token that picks itself or a token on its point does not move at all, not
    even by the rounding of a renormalisation (the no-op of the frozen law)."""
    rng = np.random.default_rng(3)
    x = np.repeat(on_sphere(rng, 2, 4), 3, axis=0)
    x[:3] *= 1.0 + 2.0**-52  # a point one ulp off the sphere: N would move it
    m = SphereChain(1e6, 0.5)  # beta huge: every token picks a token on its own point
    got = k_chain(x, m, rng.random(6), np.array([1, 2, 3, 4], dtype=np.uint64))
    assert np.array_equal(got, x)


def run_reference(model, x0, steps, state):
    x = np.array(x0)
    n, d = x.shape
    stream = ref.Xoshiro256(state)
    for _ in range(steps):
        if isinstance(model, SphereChain):
            u = [stream.next_uniform() for _ in range(n)]
            V = model.head_matrices(d)[1][0]
            x = sref.chain_step(x, model.key_query(d), V, model.beta, model.gamma, u, stream)
        else:
            x = sref.sphere_flow_step(
                x,
                heads_of(model, d),
                model.beta,
                model.dt,
                attention=model.attention,
                scheme=model.scheme,
                causal=model.causal,
            )
    return x


@pytest.mark.parametrize(
    "model",
    [
        SphereFlow(4.0, 0.1),
        SphereFlow(1.0, 0.05, scheme="rk4", attention="unnormalized", **MATRICES["BV"]),
        SphereFlow(2.0, 0.1, scheme="pre-ln", causal=True),
        SphereChain(5.0, 0.3),
        SphereChain(5.0, 0.3, **MATRICES["BV"]),
    ],
    ids=["flow", "rk4-usa-BV", "pre-ln-causal", "chain", "chain-BV"],
)
def test_simulate_matches_reference_per_chain(model):
    x0 = on_sphere(np.random.default_rng(5), 3, 6, D)
    run = ms.simulate(model, x0, steps=12, rng=99, first_chain=4)
    streams = ms.as_seed(99).streams(3, 4)
    for c in range(3):
        assert np.array_equal(run.final[c], run_reference(model, x0[c], 12, streams[c]))


@pytest.mark.parametrize("n", [21, 40])
# RK4's kernel compiles for 20 s of the fast tier: its case runs with the slow one
@pytest.mark.parametrize("scheme", ["post-ln", pytest.param("rk4", marks=pytest.mark.slow)])
def test_simulate_carries_the_norms_from_step_to_step(scheme, n, monkeypatch):
    """Without an event the flow keeps its state from step to step, and each step's LayerNorm
    leaves the squared norms that the next step's common shift takes (lanes of 8 in the
    vector tiles, then single lanes): several steps give the reference's bits. Negative control:
    a reference whose shift lags one call behind gives other bits."""
    model = SphereFlow(3.0, 0.1, scheme=scheme)
    x0 = on_sphere(np.random.default_rng(n), 2, n, 4)
    run = ms.simulate(model, x0, steps=5, rng=7)
    streams = ms.as_seed(7).streams(2)
    for c in range(2):
        assert np.array_equal(run.final[c], run_reference(model, x0[c], 5, streams[c]))
    real, seen = sref.common_shift, []

    def lagging(xs, beta):
        seen.append(real(xs, beta))
        return seen[-2] if len(seen) > 1 else seen[-1]

    monkeypatch.setattr(sref, "common_shift", lagging)
    assert not np.array_equal(run.final[0], run_reference(model, x0[0], 5, streams[0]))


@pytest.mark.parametrize("n, d", [(32, 5), (32, 12), (64, 3)])
def test_common_shift_is_taken_and_refused_as_the_reference_does(n, d, monkeypatch):
    """B = I shifts every score by max_j |x_j|^2 (symmetric weights); where β times the spread of
    the squared norms exceeds 64 every row is shifted by its maximum. The kernel agrees with the
    reference either way, and each path's bits differ from the other's (negative controls: a
    kernel that silently took the other shift would fail)."""
    rng = np.random.default_rng(n + d)
    x = on_sphere(rng, n, d)
    spread = x * rng.uniform(0.5, 2.0, size=(n, 1))  # off the sphere, as a raw kernel input
    m = SphereFlow(40.0, 0.1)
    xs = [list(map(float, v)) for v in x]
    assert sref.common_shift(xs, 40.0) is not None
    assert sref.common_shift([list(map(float, v)) for v in spread], 40.0) is None
    for state in (x, spread):
        want = sref.sphere_flow_step(state, heads_of(m, d), 40.0, 0.1)
        assert np.array_equal(k_flow(state, m), want)
    # the other shift gives other bits: on the sphere the row maxima, off it the common one
    real = sref.common_shift
    monkeypatch.setattr(sref, "common_shift", lambda xs, beta: None)
    assert not np.array_equal(k_flow(x, m), sref.sphere_flow_step(x, heads_of(m, d), 40.0, 0.1))
    forced = real([list(map(float, v)) for v in spread], 0.0)  # β = 0: max_j |x_j|^2
    monkeypatch.setattr(sref, "common_shift", lambda xs, beta: forced)
    assert not np.array_equal(
        k_flow(spread, m), sref.sphere_flow_step(spread, heads_of(m, d), 40.0, 0.1)
    )
