"""The fast paths of chain_step give the bits of the plain ones: the symmetric Gram (B = I), the
register-blocked scores (blocks of 32 tokens), and token-parallel stepping (fewer chains than
threads) against chain-parallel stepping, at every thread count."""

import numba
import numpy as np
import pytest
from kernel_calls import k_chain

import metastab as ms
from metastab.kernels.cpu import euclidean_family as _family
from metastab.kernels.cpu import euclidean_steps as _steps
from metastab.kernels.reference import euclidean as ref


def sphere(n, d, seed):
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize(
    "n,d", [(32, 8), (64, 9), (40, 3), (33, 16), (96, 8), (20, 1), (20, 2), (40, 1)]
)
def test_blocked_and_gram_scores_match_reference(n, d):
    """Full blocks (the register-blocked kernel), short blocks (at d = 1, 2 too: the first two
    terms of their scores in one pass), and for B = I with n a multiple of 32 and d >= 8 the Gram
    path: all equal the reference bit for bit."""
    rng = np.random.default_rng(n * 100 + d)
    x = sphere(n, d, n)
    x[3] = x[1]  # coincident tokens
    x[5, 0] = -0.0
    u = rng.random(n)
    for B in (np.eye(d), rng.normal(size=(d, d))):
        got = k_chain(x, B, 5.0, 0.3, u)
        assert np.array_equal(got, ref.chain_step(x, B, 5.0, 0.3, u))


def test_gram_path_is_taken_and_refused_where_it_must_be():
    x = sphere(64, 8, 0)
    G = _steps.chain_work(64, 8)[-1]
    assert _steps._paths(x, np.eye(8), G) == (True, True)
    assert _steps._paths(x, 2.0 * np.eye(8), G) == (False, False)  # not the identity
    assert _steps._paths(x, np.eye(8), _steps.chain_work(64, 2)[-1]) == (True, False)
    bad = x.copy()
    bad[2, 1] = np.inf
    assert _steps._paths(bad, np.eye(8), G) == (False, False)
    assert _steps.chain_work(20, 8)[-1].size == 0  # no Gram below one block of tokens
    assert _steps.chain_work(64, 2)[-1].size == 0  # nor in low dimension


@pytest.mark.parametrize("n,d", [(96, 8), (70, 3)])
def test_token_parallel_equals_chain_parallel_at_every_thread_count(n, d):
    """One chain (token-parallel with 2 threads) == chain 0 of four (chain-parallel) == one
    chain on one thread, bit for bit, over many steps."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("token-parallel stepping needs two threads")
    x0 = sphere(n, d, 1)
    model = ms.SoftmaxChain(beta=4.0, gamma=0.2)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads, chains in ((1, 1), (2, 1), (2, 4), (1, 4)):
            numba.set_num_threads(threads)
            runs.append(ms.simulate(model, x0, steps=30, chains=chains, rng=5).final[0])
    finally:
        numba.set_num_threads(before)
    for r in runs[1:]:
        assert np.array_equal(r, runs[0])
    assert not np.array_equal(runs[0], x0)  # the chain moved


def _tokens_step(x, beta, gamma, u, state, T):
    """One token-parallel step (the step of ``advance`` with fewer chains than threads)."""
    n, d = x.shape
    out = np.full((n, d), np.nan)
    cw = _steps.chain_work(n, d)
    tw = _steps.thread_works(T, n, d)
    _family.step_tokens(
        x, np.eye(d), beta, gamma, np.eye(d), False, u, state, out, cw[-2], cw[-1], tw, T
    )
    return out


@pytest.mark.parametrize("beta", [22.0, 28.0])
def test_rare_picks_and_bernoulli_boundary_same_bits_on_every_path(beta):
    """The Thm 5.4 triangle repeated to 66 tokens (three blocks), every u at or next to the exact
    Bernoulli boundary of the rare picks (m 2^-53 for small m: some rows need the stream's
    extra draws, some pick rare): the chain-parallel step, the token-parallel step on 1, 2 and 3
    threads and the reference give the same bits and leave the stream in the same state."""
    x = np.tile(ms.regular_polygon(3).vertices, (22, 1)) * 0.8
    n = x.shape[0]
    drew = False
    for m in (0, 1, 2, 3):
        u = np.full(n, m * 2.0**-53)
        u[::5] = 0.5  # common picks between them
        seed_state = ms.Seed(m).streams(1)[0]
        gen = ref.Xoshiro256(seed_state.copy())
        want = ref.chain_step(x, np.eye(2), beta, 0.1, u, gen)
        state = seed_state.copy()
        assert np.array_equal(k_chain(x, np.eye(2), beta, 0.1, u, state), want)
        assert np.array_equal(state, gen.state())
        drew |= not np.array_equal(state, seed_state)
        for T in (1, 2, 3):
            st = seed_state.copy()
            assert np.array_equal(_tokens_step(x, beta, 0.1, u, st, T), want), T
            assert np.array_equal(st, gen.state())
    assert drew  # the stream was used: rare picks or boundary draws happened


def test_token_parallel_equals_chain_parallel_with_rare_picks():
    """An orthonormal frame of 96 tokens at β = 14.5: every pick but the token itself has weight
    e^-14.5 < 2^-20, i.e. is rare, and only rare picks move a token. Over 3000 steps one chain
    on 2 threads (token-parallel) == chain 0 of four (chain-parallel) == one thread."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("token-parallel stepping needs two threads")
    x0 = np.eye(96)
    model = ms.SoftmaxChain(beta=14.5, gamma=0.5)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads, chains in ((1, 1), (2, 1), (2, 4)):
            numba.set_num_threads(threads)
            runs.append(ms.simulate(model, x0, steps=3000, chains=chains, rng=3).final[0])
    finally:
        numba.set_num_threads(before)
    for r in runs[1:]:
        assert np.array_equal(r, runs[0])
    moved = np.any(runs[0] != x0, axis=1).sum()
    assert moved >= 3  # rare picks happened (about 14 expected)


@pytest.mark.parametrize("beta", [3.0, 200.0])
def test_blocks_with_and_without_rare_weights_match_reference(beta):
    """Blocks where no weight is rare (one cumulative sum) and blocks where every row has rare
    weights (summed apart), with tokens whose u falls among the rare picks (resolved with the
    stream): the reference's bits and stream state, over two blocks of tokens."""
    n, d = 40, 3
    x = sphere(n, d, 7)
    s = x @ x.T
    rare = np.exp(beta * (s - s.max(axis=1, keepdims=True))) < _steps.RARE_CUT
    assert rare.any(axis=1).all() if beta > 100 else not rare.any()
    u = np.random.default_rng(2).random(n)
    u[::7] = 0.0  # below the rare probability wherever there are rare picks
    state = ms.Seed(3).streams(1)[0]
    gen = ref.Xoshiro256(state)
    got = k_chain(x, np.eye(d), beta, 0.3, u, state)
    assert np.array_equal(got, ref.chain_step(x, np.eye(d), beta, 0.3, u, gen))
    assert np.array_equal(state, gen.state())
    assert (state != ms.Seed(3).streams(1)[0]).any() == (beta > 100)  # drew only when rare


@pytest.mark.parametrize("n,d", [(64, 8), (20, 2), (70, 3)])
def test_overflowing_scores_give_the_reference_nans(n, d):
    """Coordinates near the float range: some scores are +-inf and some rows' weights NaN. The
    passes that take maxima and counts several rows at a time still give the reference's bits,
    NaN where it has NaN."""
    x = sphere(n, d, 7)
    x[2] *= 1e160  # s_22 = +inf, so is every score of row 2 with a token along x_2
    x[5] = -x[2]  # s_25 = -inf: inf - inf in row 2's weights
    x[9] *= 1e150
    u = np.random.default_rng(3).random(n)
    for B in (np.eye(d), np.random.default_rng(4).normal(size=(d, d))):
        got = k_chain(x, B, 5.0, 0.3, u)
        want = ref.chain_step(x, B, 5.0, 0.3, u)
        assert np.isnan(want).any() and np.isfinite(want).any()
        assert np.array_equal(got, want, equal_nan=True)
