"""The register tiles (kernels.cpu.tiles) == the plain score loops (kernels.cpu.scores), bit for
bit."""

import numpy as np
import pytest
from numba import njit

from metastab.kernels.arith import exp_fma, fma
from metastab.kernels.cpu import tiles
from metastab.kernels.cpu.scores import ROWS, score_loops
from metastab.kernels.cpu.tiles import block_sums, gram, gram_block, lane_scores

_scores_block = score_loops(fma)[0]


@njit
def _tiled(A, X, j0, S):
    block_sums(A, X, j0, S)


@njit
def _plain(A, X, j0, S):
    _scores_block(A, X, j0, S)


@njit
def _lanes(A, X, S, M):
    lane_scores(A, X, S, M)


@njit
def _plain_lanes(A, X, S):
    """S[j L + r] = sum_k A[k, r] X[j, k], k ascending from +0.0, one fma per term."""
    n, k = X.shape
    L = A.shape[1]
    for j in range(n):
        for r in range(L):
            acc = 0.0
            for m in range(k):
                acc = fma(A[m, r], X[j, m], acc)
            S[j * L + r] = acc


@njit
def _gram(xt, S, beta=0.0, shift=np.nan):
    gram_block(xt, S, beta, shift)


@njit
def _gram_all(x, G, bxt, beta=0.0, shift=np.nan):
    gram(x, G, bxt, 0, G.shape[0], beta, shift)


@njit
def _weights(S, beta, shift):
    """exp(β (s − c)) of every score, one at a time (``arith.exp_fma``)."""
    W = np.empty_like(S)
    for q in range(S.size):
        W[q] = exp_fma(beta * (S[q] - shift))
    return W


def _bits(a):
    return np.asarray(a).view(np.int64)


def _spread(rng, *shape):
    """Entries over twelve binades and both signs, zeros included: sums that round."""
    x = rng.normal(size=shape) * 10.0 ** rng.integers(-6, 6, size=shape)
    x[rng.random(shape) < 0.05] = 0.0
    return x


@pytest.mark.parametrize("n, k", [(32, 2), (32, 128), (33, 7), (5, 1), (64, 3), (3, 40)])
def test_block_sums_match_the_plain_loops(n, k):
    """Scores (A = (B x_i)_k transposed, X = x) and weighted sums (A = weights, X = x transposed,
    contiguous or a transposed view) with row counts that leave every tail of the 4-row tiles,
    and a start row j0 > 0: the same bits as scores_block."""
    rng = np.random.default_rng(n * 1000 + k)
    A = _spread(rng, k, ROWS)
    X = _spread(rng, n, k)
    for j0 in (0, 1):
        got = np.full(n * ROWS, np.nan)
        want = np.full(n * ROWS, np.nan)
        _tiled(A, X, j0, got)
        _plain(A, X, j0, want)
        assert np.array_equal(_bits(got), _bits(want))
    Xt = np.ascontiguousarray(X.T)
    W = _spread(rng, n, ROWS)
    want = np.full(k * ROWS, np.nan)
    _plain(W, Xt, 0, want)
    for X2 in (Xt, X.T):
        got = np.full(k * ROWS, np.nan)
        _tiled(W, X2, 0, got)
        assert np.array_equal(_bits(got), _bits(want))


@njit
def _scaled(A, X, S, M):
    tiles.scaled_sums(A, X, S, M)


@pytest.mark.parametrize("n, k", [(32, 2), (32, 33), (5, 1)])
def test_scaled_sums_are_the_sums_then_their_products(n, k):
    """The tile's stored sums times M[r]: each sum rounded, then multiplied, as block_sums
    followed by a pass of products. Negative control: the scales folded into the weights
    (the sums of (w M[r]) x) give other bits."""
    rng = np.random.default_rng(n * 100 + k)
    W = _spread(rng, n, ROWS)
    Xt = _spread(rng, k, n)
    M = rng.uniform(0.1, 3.0, size=ROWS)
    sums = np.full(k * ROWS, np.nan)
    _tiled(W, Xt, 0, sums)
    want = sums * np.tile(M, k)
    got = np.full(k * ROWS, np.nan)
    _scaled(W, Xt, got, M)
    assert np.array_equal(_bits(got), _bits(want))
    folded = np.full(k * ROWS, np.nan)
    _tiled(W * M, Xt, 0, folded)
    assert not np.array_equal(_bits(got), _bits(folded))


def test_block_sums_start_each_sum_from_plus_zero():
    """Products of -0.0 sum to +0.0 from +0.0 (as in the plain loops), not to -0.0."""
    A = np.full((3, ROWS), -0.0)
    X = np.ones((4, 3))
    S = np.full(4 * ROWS, np.nan)
    _tiled(A, X, 0, S)
    assert np.all(_bits(S) == 0)


@pytest.mark.parametrize("d", [1, 2, 9, 128])
def test_gram_block_mirrors_the_same_bits(d):
    """The triangle computed and the rest mirrored equal the full block of scores bit for bit
    (which is symmetric bit for bit: what makes the mirror exact)."""
    rng = np.random.default_rng(d)
    xt = _spread(rng, d, ROWS)
    want = np.full(ROWS * ROWS, np.nan)
    _plain(xt, np.ascontiguousarray(xt.T), 0, want)
    got = np.full(ROWS * ROWS, np.nan)
    _gram(xt, got)
    assert np.array_equal(_bits(got), _bits(want))
    assert np.array_equal(want.reshape(ROWS, ROWS), want.reshape(ROWS, ROWS).T)


@pytest.mark.parametrize("lanes", [8, 16, 24, 32])
@pytest.mark.parametrize("n, k", [(1, 2), (5, 1), (20, 2), (23, 7)])
def test_lane_scores_match_the_plain_loops(lanes, n, k):
    """Blocks of 8 to ROWS lanes, with every tail of the 4-row tiles: the sums of the scalar
    loops bit for bit, and each lane's maximum over the rows and the maximum it started from."""
    rng = np.random.default_rng(lanes * 100 + n * 10 + k)
    A = _spread(rng, k, lanes)
    X = _spread(rng, n, k)
    want = np.full(n * lanes, np.nan)
    _plain_lanes(A, X, want)
    got = np.full(n * lanes, np.nan)
    M0 = np.where(rng.random(lanes) < 0.5, -np.inf, 10.0 ** rng.integers(-6, 6, size=lanes))
    M = M0.copy()
    _lanes(A, X, got, M)
    assert np.array_equal(_bits(got), _bits(want))
    assert np.array_equal(M, np.maximum(M0, want.reshape(n, lanes).max(axis=0)))


# Both forms of the tiles, whichever this machine runs: unrolled passes (of 4 vectors where
# AVX-512 has the registers, else of 1) and one pass per vector in a loop (AVX2's lane tiles)
_BY_ARGS = tiles._row_sums(None, 0, True)
_UNROLLED = {v: tiles._row_sums(v, v * 8, True) for v in (1, 2, 3, 4)}


@njit
def _run_rows(f, A, X, S, M):
    f(A, X, 0, S, M)


@pytest.mark.parametrize("vecs", [1, 2, 3, 4])
def test_tiles_unrolled_and_by_arguments_agree_on_any_machine(vecs):
    """The tile that takes its width as arguments and the unrolled one: the plain loops' sums bit
    for bit and the same maxima, so the form this machine does not run is checked too."""
    rng = np.random.default_rng(vecs)
    lanes = 8 * vecs
    A = _spread(rng, 7, lanes)
    X = _spread(rng, 6, 7)
    want = np.full(6 * lanes, np.nan)
    _plain_lanes(A, X, want)
    for f in (_BY_ARGS, _UNROLLED[vecs]):
        got = np.full(6 * lanes, np.nan)
        M = np.full(lanes, -np.inf)
        _run_rows(f, A, X, got, M)
        assert np.array_equal(_bits(got), _bits(want))
        assert np.array_equal(M, want.reshape(6, lanes).max(axis=0))


_EXPS_BY_ARGS = tiles._tile(4, None, exps=True)
_E1, _E2, _E3, _E4 = (tiles._tile(4, v, ROWS, exps=True) for v in (1, 2, 3, 4))


@njit
def _exps_by_args(A, X, S, nv, beta, shift):
    _EXPS_BY_ARGS(A, X, S, 0, 0, S, nv, ROWS, beta, shift)


@njit
def _exps_unrolled(A, X, S, nv, beta, shift):
    if nv == 1:
        _E1(A, X, S, 0, 0, S, beta, shift)
    elif nv == 2:
        _E2(A, X, S, 0, 0, S, beta, shift)
    elif nv == 3:
        _E3(A, X, S, 0, 0, S, beta, shift)
    else:
        _E4(A, X, S, 0, 0, S, beta, shift)


@pytest.mark.parametrize("vecs", [1, 2, 3, 4])
def test_tiles_store_the_exps_of_their_sums_in_both_forms(vecs):
    """Tiles with ``exps`` store exp(β (s − c)) of their sums s: arith.exp_fma's bits, one at a
    time, for scores from 0 down to below the flush to zero (z < −708.4) and NaN, in both forms
    of the tiles (the form this machine does not run is checked too). Negative control: another
    shift gives other bits."""
    rng = np.random.default_rng(vecs)
    lanes = 8 * vecs
    A = rng.uniform(-1.0, 1.0, size=(3, ROWS))
    X = rng.uniform(-1.0, 1.0, size=(4, 3))
    A[:, 0] = [300.0, 1.0, 0.0]
    X[0] = [-1.0, 0.0, 0.0]  # the score of lane 0 in row 0: −300, β (s − c) below −708
    A[0, 1] = np.nan
    scores = np.full(4 * ROWS, np.nan)
    _tiled(A, X, 0, scores)
    for f in (_exps_by_args, _exps_unrolled):
        got = np.full(4 * ROWS, -1.0)
        f(A, X, got, vecs, 3.0, 1.5)
        for j in range(4):
            row = slice(j * ROWS, j * ROWS + lanes)
            want = _weights(scores[row], 3.0, 1.5)
            assert np.array_equal(_bits(got[row]), _bits(want))
            assert np.all(got[j * ROWS + lanes : (j + 1) * ROWS] == -1.0)  # other lanes untouched
        assert got[0] == 0.0 and np.isnan(got[1])
        other = np.full(4 * ROWS, -1.0)
        f(A, X, other, vecs, 3.0, 1.5 + 1e-9)
        assert not np.array_equal(_bits(other), _bits(got))


@pytest.mark.parametrize("blocks, d", [(1, 3), (2, 1), (3, 17)])
def test_gram_is_every_block_of_scores(blocks, d):
    """The blocked Gram (each pair computed once, mirrored across blocks) equals each block's full
    scores by the plain loops, bit for bit."""
    rng = np.random.default_rng(blocks * 100 + d)
    x = _spread(rng, blocks * ROWS, d)
    G = np.full((blocks, blocks * ROWS * ROWS), np.nan)
    _gram_all(x, G, np.empty((d, ROWS)))
    for b in range(blocks):
        want = np.full(blocks * ROWS * ROWS, np.nan)
        _plain(np.ascontiguousarray(x[b * ROWS : (b + 1) * ROWS].T), x, 0, want)
        assert np.array_equal(_bits(G[b]), _bits(want))


@pytest.mark.parametrize("blocks, d", [(1, 2), (1, 9), (2, 3), (3, 17)])
def test_gram_weights_are_each_score_s_exp(blocks, d):
    """With a common shift the Gram holds the weights exp(β (s_ij − c)): each pair's exp taken
    once and mirrored, the exps of the full scores one by one, bit for bit. Negative control:
    another shift gives other bits."""
    rng = np.random.default_rng(blocks * 10 + d)
    x = rng.normal(size=(blocks * ROWS, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    shift = float(np.max(np.einsum("ij,ij->i", x, x)))
    scores = np.full((blocks, blocks * ROWS * ROWS), np.nan)
    _gram_all(x, scores, np.empty((d, ROWS)))
    got = np.full_like(scores, np.nan)
    if blocks == 1:
        _gram(np.ascontiguousarray(x.T), got[0], 3.0, shift)
    else:
        _gram_all(x, got, np.empty((d, ROWS)), 3.0, shift)
    for b in range(blocks):
        assert np.array_equal(_bits(got[b]), _bits(_weights(scores[b], 3.0, shift)))
        assert not np.array_equal(got[b], _weights(scores[b], 3.0, shift + 1e-3))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 21, 24, 32, 40])
@pytest.mark.parametrize("d", [1, 3, 8, 9, 20])
def test_normalise_is_the_flows_layernorm(n, d):
    """The LayerNorm's tiles (lanes of 8, then one) give each token the reference's
    N(x_i + h k_i) (|y|^2 as the eight partial sums of dot8) and the new squared norms
    <x_i, x_i> (k ascending from +0.0, one fma each), bit for bit; a perturbed step does not
    (on S^0 every token normalises to ±1 whatever the step)."""
    from metastab.kernels.arith import fma_exact
    from metastab.kernels.cpu.tiles import normalise
    from metastab.kernels.reference import sphere as sref

    rng = np.random.default_rng(100 * n + d)
    X = rng.normal(size=(d, n))
    K = rng.normal(size=(d, n))
    h = 0.1
    want = np.array(
        [sref.normalise_fused([fma_exact(h, K[k, i], X[k, i]) for k in range(d)]) for i in range(n)]
    )
    norms = [sref.squared_norm(y) for y in want]
    C, N = np.empty(n), np.empty(n)
    got = X.copy()
    normalise(h, K, got, C, N)
    assert np.array_equal(got, want.T)
    assert np.array_equal(N, norms)
    other = X.copy()
    normalise(h * (1 + 2**-40), K, other, C, N)
    assert d == 1 or not np.array_equal(other, want.T)
