"""Kernels == the pure-Python reference, bit for bit (np.array_equal on float64 arrays)."""

import math

import numpy as np
import pytest
from kernel_calls import k_chain, k_flow, k_hardmax

import metastab as ms
from metastab.kernels import streams as _streams
from metastab.kernels.cpu import euclidean_steps as _steps
from metastab.kernels.reference import euclidean as ref

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def uniforms(rng, n):
    u = rng.random(n)
    u[0] = 0.0  # the edge of [0, 1)
    u[-1] = 1.0 - 2.0**-53
    return u


def configurations():
    """(name, x, B) cases: non-symmetric B, coincident tokens, very different score magnitudes."""
    rng = np.random.default_rng(20240901)
    out = []
    for d in (1, 2, 3):
        x = rng.normal(size=(6, d))
        B = rng.normal(size=(d, d))  # not symmetric
        out.append((f"gauss-d{d}", x, B))
    x = rng.normal(size=(7, 2))
    x[3] = x[1]
    x[5] = x[1]
    x[6] = x[0]
    out.append(("coincident", x, np.array([[1.0, 0.7], [-0.4, 2.0]])))
    x = rng.normal(size=(6, 3)) * np.array([1e-8, 1.0, 1e6])[None]
    x[2] *= 1e5
    out.append(("magnitudes", x, rng.normal(size=(3, 3))))
    out.append(("identity", rng.normal(size=(5, 2)), np.eye(2)))
    return out


CONFIGS = configurations()
STEP_MATRIX = ms.step_matrix(np.array([[0.5, 0.2, 0.0], [0.1, 1.5, 0.3], [0.0, -0.2, 0.7]]))


def gammas_for(d):
    return [0.3, 1.0, STEP_MATRIX[:d, :d].copy()]


def _gid(g):
    return "P" if np.ndim(g) == 2 else f"g{g}"


# --------------------------------------------------------------------------------------------
# steps
# --------------------------------------------------------------------------------------------


def _both_chain_steps(x, B, beta, gamma, u, seed):
    """(kernel step, reference step, whether the stream states agree afterwards)."""
    state = ms.Seed(seed).streams(1)[0]
    gen = ref.Xoshiro256(state)
    got = k_chain(x, B, beta, gamma, u, state)
    want = ref.chain_step(x, B, beta, gamma, u, gen)
    return got, want, np.array_equal(state, gen.state())


def _rare_boundary(x, B, beta):
    """Per token, (p_rare, u on the grid point m = floor(p_rare 2^53)): the uniform at which the
    exact Bernoulli trial needs further draws from the stream."""
    out = []
    for i in range(x.shape[0]):
        w, total = ref.softmax_weights(ref.scores(ref._rows(x), B, i), beta)
        rare, keep = 0.0, 0.0
        for wj in w:
            if wj < ref.RARE_CUT:
                rare += wj
            else:
                keep += wj
        p = rare / (rare + keep)
        out.append((p, math.floor(p * 2.0**53) * 2.0**-53))
    return out


@pytest.mark.parametrize("beta", [0.0, 0.7, 5.0, 40.0, 1e6])
@pytest.mark.parametrize("name,x,B", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_chain_step_matches_reference(name, x, B, beta):
    """Random uniforms, u = 0 (a rare pick wherever the row has rare weights) and, per token, the
    grid point where the rare/common decision draws from the stream; same picks, same stream."""
    rng = np.random.default_rng(7)
    boundary = [u for _, u in _rare_boundary(x, B, beta)]
    for gamma in gammas_for(x.shape[1]):
        for k in range(6):
            u = uniforms(rng, x.shape[0]) if k < 5 else np.array(boundary)
            got, want, same_stream = _both_chain_steps(x, B, beta, gamma, u, seed=k)
            assert np.isfinite(got).all()
            assert np.array_equal(got, want), (name, beta, _gid(gamma), k)
            assert same_stream, (name, beta, _gid(gamma), k)


def test_chain_step_cases_reach_every_branch():
    """The cases above take the rare branch, and the boundary draws from the stream."""
    x, B = CONFIGS[2][1], CONFIGS[2][2]
    p = [pr for pr, _ in _rare_boundary(x, B, 5.0)]
    assert sum(pr > 0.0 for pr in p) >= 4 and max(p) < 1e-5
    state = ms.Seed(0).streams(1)[0]
    before = state.copy()
    k_chain(x, B, 5.0, 0.3, np.full(x.shape[0], 0.5), state)
    assert np.array_equal(state, before)  # common picks: no draw
    k_chain(x, B, 5.0, 0.3, np.zeros(x.shape[0]), state)
    assert not np.array_equal(state, before)  # rare picks: fresh uniforms


def stream_starting_with(first: int, seed: int = 0) -> np.ndarray:
    """A xoshiro256** state whose first 64-bit output is ``first`` (the output depends on s1
    only: s1 = 5^-1 rotr(first 9^-1, 7) mod 2^64); the other words from a seeded stream."""
    mask = (1 << 64) - 1
    y = (first * pow(9, -1, 1 << 64)) & mask
    y = ((y >> 7) | (y << 57)) & mask
    state = ms.Seed(seed).streams(1)[0]
    state[1] = np.uint64((y * pow(5, -1, 1 << 64)) & mask)
    assert ref.Xoshiro256(state).next_u64() == first
    return state


@pytest.mark.parametrize("beta", [40.0, 200.0])
@pytest.mark.parametrize("name,x,B", CONFIGS[:4], ids=[c[0] for c in CONFIGS[:4]])
def test_chain_step_nested_rare_picks_match_reference(name, x, B, beta):
    """Token 0 takes the rare branch (u = 0) and its first fresh uniform is 0 too, so the pick
    descends into the rare part of the rare set wherever there is one; kernel == reference."""
    n = x.shape[0]
    u = np.full(n, 0.5)
    u[0] = 0.0
    for seed in range(3):
        state = stream_starting_with(seed, seed)  # uniforms 0, then from the stream
        gen = ref.Xoshiro256(state)
        got = k_chain(x, B, beta, 0.3, u, state)
        want = ref.chain_step(x, B, beta, 0.3, u, gen)
        assert np.array_equal(got, want) and np.array_equal(state, gen.state()), (name, seed)


@pytest.mark.parametrize("beta", [0.0, 0.7, 5.0, 1e6])
@pytest.mark.parametrize("name,x,B", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_flow_step_matches_reference(name, x, B, beta):
    for gamma in gammas_for(x.shape[1]):
        got = k_flow(x, B, beta, gamma)
        want = ref.softmax_flow_step(x, B, beta, gamma)
        assert np.isfinite(got).all()
        assert np.array_equal(got, want), (name, beta, _gid(gamma))


@pytest.mark.parametrize("n, d", [(12, 3), (20, 2), (40, 5), (64, 9)])
def test_flow_step_blocks_match_reference(n, d):
    """Blocks of 16, 24 and 32 lanes, a padded last block and several blocks, B = I (the scores
    from x itself) and a general B, a step matrix: the reference's bits."""
    rng = np.random.default_rng(n * 10 + d)
    x = rng.normal(size=(n, d))
    P = ms.step_matrix(np.eye(d) * 0.4 + 0.05 * rng.normal(size=(d, d)))
    for B in (np.eye(d), rng.normal(size=(d, d))):
        for gamma in (0.3, P):
            got = k_flow(x, B, 2.0, gamma)
            assert np.array_equal(got, ref.softmax_flow_step(x, B, 2.0, gamma)), _gid(gamma)


def tie_configurations():
    """Configurations with exact ties, near-ties within tol, and coincident leaders."""
    out = []
    # square: with B = I, every vertex scores itself highest; the centre token ties all four
    sq = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [0.0, 0.0]])
    out.append(("square", sq, np.eye(2)))
    # the origin ties everybody (all scores 0); duplicated leader points
    dup = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [-1.0, 2.0], [0.0, 0.0], [0.5, 0.5]])
    out.append(("duplicates", dup, np.eye(2)))
    # near ties: leaders within 1e-10 relative of each other, and near-coincident points
    near = np.array(
        [[1.0, 0.0], [1.0 + 1e-11, 1e-11], [0.0, 1.0 - 1e-11], [0.3, 0.2], [1.0, 1e-13]]
    )
    out.append(("near", near, np.eye(2)))
    # negative definite B (Frank-Wolfe), non-symmetric
    rng = np.random.default_rng(3)
    out.append(("negdef", rng.normal(size=(6, 2)), -np.array([[2.0, 0.5], [-0.3, 1.0]])))
    out.append(("nonsym3", rng.normal(size=(7, 3)), rng.normal(size=(3, 3))))
    return out


TIES = tie_configurations()


@pytest.mark.parametrize("tol", [0.0, 1e-12, 1e-9, 1e-6])
@pytest.mark.parametrize("ties", ["index", "point"])
@pytest.mark.parametrize("name,x,B", TIES, ids=[c[0] for c in TIES])
def test_hardmax_step_matches_reference(name, x, B, ties, tol):
    for gamma in gammas_for(x.shape[1]):
        got = k_hardmax(x, B, gamma, ties, tol)
        want = ref.hardmax_step(x, B, gamma, ties, tol)
        assert np.isfinite(got).all()
        assert np.array_equal(got, want), (name, ties, tol, _gid(gamma))


def test_hardmax_tie_modes_differ_where_they_should():
    """Sanity of the test cases: duplicated leaders are averaged with weight 3 by index and 1 by
    point, and a near-tie counts only when it is within tol."""
    x = TIES[1][1]  # duplicates: the origin token (4) ties all, three copies of (1, 1)
    by_index = ref.hardmax_step(x, np.eye(2), 1.0, "index", 0.0)
    by_point = ref.hardmax_step(x, np.eye(2), 1.0, "point", 0.0)
    assert np.allclose(by_index[4], x.mean(axis=0))
    pts = np.unique(x, axis=0)
    assert np.allclose(by_point[4], pts.mean(axis=0))
    near = TIES[2][1]
    # token 3 = (0.3, 0.2): scores 0.3, 0.3+5e-12, 0.2, ...; tol 1e-9 makes 0 and 1 and 4 tie
    assert ref.leaders(ref.scores(near, np.eye(2), 3), 0.0) == [1]
    assert ref.leaders(ref.scores(near, np.eye(2), 3), 1e-9) == [0, 1, 4]
    assert np.allclose(
        k_hardmax(near, np.eye(2), 1.0, "index", 1e-9)[3],
        (near[0] + near[1] + near[4]) / 3,
        rtol=0,
        atol=1e-15,
    )


def test_beta_huge_draws_an_argmax_token():
    """β = 1e6: no NaN, and the pick is the argmax token (or one tied with it)."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(8, 2)) * 10
    x[5] = x[2]  # a tie for every token whose argmax is token 2
    B = np.array([[1.0, 0.3], [-0.2, 0.8]])
    for _ in range(20):
        u = rng.random(8)
        got = k_chain(x, B, 1e6, 0.5, u)
        assert np.isfinite(got).all()
        assert np.array_equal(got, ref.chain_step(x, B, 1e6, 0.5, u, ref.Xoshiro256([1, 2, 3, 4])))
        for i in range(8):
            s = np.array(ref.scores(x, B, i))
            leaders = np.flatnonzero(s == s.max())
            assert any(np.array_equal(got[i], x[i] + 0.5 * (x[j] - x[i])) for j in leaders)


def test_beta_zero_is_uniform_pick():
    x = np.arange(10.0).reshape(5, 2)
    u = (np.arange(5) + 0.5) / 5  # token i picks index i: a self-pick, exact no-op
    assert np.array_equal(k_chain(x, np.eye(2), 0.0, 0.5, u), x)
    u = np.full(5, 0.99)  # everybody picks the last token
    got = k_chain(x, np.eye(2), 0.0, 0.5, u)
    assert np.array_equal(got, x + 0.5 * (x[-1:] - x))


def test_coincident_tokens_add_probabilities():
    """Two copies of a point double its weight: at β s = 0, token 0 moves to (1, 0) for a
    fraction 2/3 of a uniform grid of u, and stays (self-pick) for the rest."""
    x = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    grid = (np.arange(300) + 0.5) / 300
    moved = [
        k_chain(x, np.zeros((2, 2)), 3.0, 1.0, np.array([u, 0.0, 0.0]))[0, 0] == 1.0 for u in grid
    ]
    assert sum(moved) == 200


# --------------------------------------------------------------------------------------------
# random numbers
# --------------------------------------------------------------------------------------------

KEYS = [
    (0, 0),
    (1, 2),
    (2**64 - 1, 2**64 - 1),
    (0x0123456789ABCDEF, 0xFEDCBA9876543210),
    ref.seed_keys(42),
    ref.seed_keys(2**100 + 7, (3, 1)),
]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("first", [0, 1, 17, 2**40 + 3])
def test_seed_streams_match_reference(key, first):
    out = np.empty((5, 4), dtype=np.uint64)
    _streams.seed_streams(np.uint64(key[0]), np.uint64(key[1]), np.uint64(first), out)
    assert np.array_equal(out, ref.seed_streams(key[0], key[1], first, 5))


def test_seed_streams_large_chain_index():
    """Chain indices beyond 2**53 must not collide (uint64 arithmetic throughout)."""
    key = ref.seed_keys(5)
    first = 2**62 + 1
    out = np.empty((2, 4), dtype=np.uint64)
    _streams.seed_streams(np.uint64(key[0]), np.uint64(key[1]), np.uint64(first), out)
    assert np.array_equal(out, ref.seed_streams(key[0], key[1], first, 2))


@pytest.mark.parametrize("key", KEYS[:4])
def test_xoshiro_outputs_match_reference(key):
    for chain in (0, 3, 1000):
        state = np.array(ref.seed_stream(key[0], key[1], chain), dtype=np.uint64)
        gen = ref.Xoshiro256(state)
        for _ in range(200):
            assert int(_streams.next_u64(state)) == gen.next_u64()
        assert np.array_equal(state, gen.state())
        for _ in range(200):
            u = _streams.next_uniform(state)
            assert u == gen.next_uniform()
            assert 0.0 <= u < 1.0


def test_xoshiro_known_vector():
    """Independent check of the reference generator: the first outputs of xoshiro256** from
    state (1, 2, 3, 4) (Blackman & Vigna's C code)."""
    gen = ref.Xoshiro256([1, 2, 3, 4])
    assert [gen.next_u64() for _ in range(4)] == [11520, 0, 1509978240, 1215971899390074240]


def test_seed_matches_rng_seed_streams():
    for entropy, spawn in [(0, ()), (12345, ()), (2**127 + 99, (2, 5))]:
        seed = ms.Seed(entropy, spawn)
        k0, k1 = ref.seed_keys(entropy, spawn)
        assert np.array_equal(seed.streams(4, 6), ref.seed_streams(k0, k1, 6, 4))


# --------------------------------------------------------------------------------------------
# whole runs through the public API
# --------------------------------------------------------------------------------------------


def _reference_states(seed, chains, first):
    k0, k1 = ref.seed_keys(seed.entropy, seed.spawn_key)
    return ref.seed_streams(k0, k1, first, chains)


MODELS = [
    ("chain", ms.SoftmaxChain(beta=3.0, gamma=0.4, B=[[1.0, 0.5], [-0.3, 0.9]]), {}),
    (
        "chain-P",
        ms.SoftmaxChain(
            beta=2.0, gamma=ms.step_matrix([[0.4, 0.1], [0.0, 0.8]]), B=[[0.8, -0.2], [0.4, 1.1]]
        ),
        {},
    ),
    ("chain-schedule", ms.SoftmaxChain(beta=8.0, gamma=np.linspace(0.9, 0.1, 40)), {}),
    ("flow", ms.SoftmaxFlow(beta=1.5, gamma=0.3, B=[[1.0, 0.2], [0.6, -0.5]]), {}),
    ("hardmax-index", ms.Hardmax(gamma=0.3, B=[[1.0, 0.4], [-0.1, 0.7]]), {}),
    ("hardmax-point", ms.Hardmax(gamma=lambda t: 1.0 / (t + 2), ties="point", tol=1e-9), {}),
]


def _ref_run(model, x0, state, steps, event=None):
    kind = model.code
    B = model.key_query(x0.shape[1])
    return ref.run_chain(
        kind,
        x0,
        B,
        beta=getattr(model, "beta", 0.0),
        gamma=model.gamma,
        ties=getattr(model, "ties", "index"),
        tol=getattr(model, "tol", 0.0),
        seed_state=state,
        steps=steps,
        event=event,
    )


@pytest.mark.parametrize("name,model,_", MODELS, ids=[m[0] for m in MODELS])
def test_simulate_matches_reference_run_chain(name, model, _):
    x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.2], [0.3, -0.8], [0.1, 0.1]])
    steps = 37
    for first in (0, 5):
        run = ms.simulate(model, x0, steps=steps, chains=3, rng=2024, first_chain=first)
        states = _reference_states(ms.as_seed(2024), 3, first)
        for c in range(3):
            want, t, hit = _ref_run(model, x0, states[c], steps)
            assert t == steps and not hit
            assert np.array_equal(run.final[c], want), (name, first, c)


def test_simulate_per_chain_x0_matches_reference():
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(3, 4, 2))
    model = ms.SoftmaxChain(beta=4.0, gamma=0.5, B=[[0.2, 1.0], [-1.0, 0.4]])
    run = ms.simulate(model, x0, steps=25, rng=ms.Seed(77, (1,)), first_chain=2)
    states = _reference_states(ms.Seed(77, (1,)), 3, 2)
    for c in range(3):
        want, _, _ = _ref_run(model, x0[c], states[c], 25)
        assert np.array_equal(run.final[c], want)


def _event_cases():
    x0 = np.array([[1.0, 0.0], [0.9, 0.1], [-1.0, 0.0], [-0.8, -0.1], [0.1, 0.05]])
    V = np.array([[1.0, 0.0], [-1.0, 0.0]])
    chain = ms.SoftmaxChain(beta=3.0, gamma=0.3)
    return [
        ("leave-ball", chain, x0, ms.LeaveBall(0.25)),
        ("leave-ball-centers", chain, x0, ms.LeaveBall(0.6, centers=np.zeros((5, 2)) + 0.1)),
        ("leave-hull", chain, x0, ms.LeaveHull(groups=[0, 0, 1, 1, 0], radius=0.05)),
        (
            "reach",
            ms.SoftmaxChain(beta=6.0, gamma=0.3),
            x0,
            ms.ReachVertices(V, radius=0.15, vertex_radius=0.05),
        ),
        ("collapse", ms.SoftmaxChain(beta=0.5, gamma=0.5), x0, ms.Collapse(0.8)),
        ("collapse-flow", ms.SoftmaxFlow(beta=1.0, gamma=0.5), x0, ms.Collapse(0.01)),
        ("reach-hardmax", ms.Hardmax(gamma=0.2), x0, ms.ReachVertices(V, radius=0.01)),
    ]


EVENTS = _event_cases()


@pytest.mark.parametrize("name,model,x0,event", EVENTS, ids=[e[0] for e in EVENTS])
def test_first_passage_matches_reference(name, model, x0, event):
    chains, max_steps = 6, 300
    fp = ms.first_passage(
        model, x0, event, max_steps=max_steps, chains=chains, rng=99, first_chain=3
    )
    states = _reference_states(ms.as_seed(99), chains, 3)
    pred = ref.event_predicate(event, x0, model.key_query(2))
    for c in range(chains):
        _check_chain(fp, c, model, x0, states[c], max_steps, pred)
    # the cases are meant to exercise events, not censoring only
    assert fp.events > 0


def _check_chain(fp, c, model, x0, state, max_steps, pred):
    """Chain c of fp against the reference chain from x0 and its stream state."""
    want, t, hit = _ref_run(model, x0, state, max_steps, pred)
    if fp.absorbed[c]:
        # out of reach: the reference never meets the event, and it is in the absorbed chain's
        # final state at the absorption step
        assert not hit and fp.times[c] < max_steps, c
        want, t, _ = _ref_run(model, x0, state, int(fp.times[c]), pred)
    assert fp.times[c] == t, c
    assert fp.censored[c] == (not hit and not fp.absorbed[c])
    assert np.array_equal(fp.final[c], want)


@pytest.mark.parametrize(
    "make_event",
    [
        lambda: ms.LeaveHull(groups=[0, 0, 1, 1], radius=0.05),
        lambda: ms.ReachVertices([[1.0, 0.0], [-1.0, 0.0]], radius=0.2),
        lambda: ms.LeaveBall(0.2),
    ],
    ids=["leave-hull", "reach", "leave-ball"],
)
def test_first_passage_per_chain_x0_matches_reference(make_event):
    """One initial configuration per chain: the event is compiled per chain (own hulls, own
    vertex assignment, own ball centres)."""
    rng = np.random.default_rng(8)
    x0 = np.array([[1.0, 0.0], [0.8, 0.1], [-1.0, 0.0], [-0.7, -0.2]])
    x0 = x0[None] + 0.1 * rng.normal(size=(4, 4, 2))
    model = ms.SoftmaxChain(beta=4.0, gamma=0.3, B=[[1.0, 0.2], [-0.1, 0.9]])
    event = make_event()
    fp = ms.first_passage(model, x0, event, max_steps=200, rng=12)
    states = _reference_states(ms.as_seed(12), 4, 0)
    B = model.key_query(2)
    for c in range(4):
        _check_chain(fp, c, model, x0[c], states[c], 200, ref.event_predicate(event, x0[c], B))
    assert fp.events > 0


# --------------------------------------------------------------------------------------------
# The kernels' exp: bit-equal to the reference, within 2 ulp of math.exp, flushed below 2^-1022
# --------------------------------------------------------------------------------------------


def test_kernel_exp_matches_reference_and_libm():
    gen = np.random.default_rng(7)
    z = np.concatenate(
        [
            -gen.random(20_000) * 745.5,
            -gen.random(20_000) * 3.0,
            -np.logspace(-300, 2.87, 2_000),
            [0.0, -0.0, -5e-324, -708.39, -708.4, -744.4, -745.2, -800.0],
        ]
    )
    got = np.empty_like(z)
    _steps.exp_nonpositive(z, got)
    want = np.array([ref.exp_nonpositive(float(v)) for v in z])
    assert np.array_equal(got, want)
    libm = np.array([math.exp(v) for v in z])
    normal = libm >= 2.0**-1022
    ulps = np.abs(got[normal] - libm[normal]) / np.spacing(libm[normal])
    assert ulps.max() <= 2.0, ulps.max()
    # well below the normal range the weight is flushed to zero, and never above it
    assert (got[libm < 2.0**-1023] == 0.0).all() and (got[normal] > 0.0).all()
    # negative control: a 12-term polynomial is visibly worse than 2 ulp somewhere
    r = np.linspace(-0.35, 0.35, 1001)
    short = sum(r**k / math.factorial(k) for k in range(12))
    assert (np.abs(short - np.exp(r)) / np.spacing(np.exp(r))).max() > 2.0
