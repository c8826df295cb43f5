"""The noisy sphere model's kernels: the log and normal leaves (accuracy, law) and the step
against the pure-Python reference, bit for bit (np.array_equal on float64 arrays)."""

import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

import metastab as ms
from metastab.kernels import leaves
from metastab.kernels.arith import mul
from metastab.kernels.cpu import noisy_steps as NK
from metastab.kernels.cpu import sphere_steps as SK
from metastab.kernels.reference import euclidean as ref
from metastab.kernels.reference import sphere as sref
from metastab.models.sphere import NoisySphere

STATE = ms.Seed(20260522).streams(1)[0]


@njit
def _logs(a, out):
    for i in range(a.shape[0]):
        out[i] = NK.log_fma(a[i])


def _ulps(got, s):
    want = np.array([math.log(v) for v in s])
    return np.abs(got - want) / np.array([math.ulp(v) for v in want])


# the Box–Muller u (in [2^-53, 1]), and every binade of the normal doubles
_G = np.random.default_rng(3)
LOG_S = np.concatenate(
    [_G.uniform(0.0, 1.0, 400_000), 2.0 ** _G.uniform(-53, 0, 100_000),
     2.0 ** _G.uniform(-1022, 1024, 100_000), [2.0**-53, 2.0**-1022, 1.0 - 2.0**-53, 0.5, 2.0,
     leaves.SQRT_HALF, np.nextafter(leaves.SQRT_HALF, 0), leaves.SQRT_TWO, 1.7976931348623157e308]]
)  # fmt: skip
LOG_S = LOG_S[LOG_S >= 2.0**-1022]


def test_log_leaf_is_within_2_ulp_of_libm():
    """Measured: at most 2 ulp from libm's log (itself within 1 ulp of exact) over (0, 1) and
    over every binade of the normal doubles; exactly 0 at 1."""
    got = np.empty_like(LOG_S)
    _logs(LOG_S, got)
    assert _ulps(got, LOG_S).max() <= 2.0
    assert NK.log_fma(1.0) == 0.0


def test_log_leaf_special_values():
    assert NK.log_fma(0.0) == -math.inf and NK.log_fma(math.inf) == math.inf
    assert math.isnan(NK.log_fma(-1.0)) and math.isnan(NK.log_fma(math.nan))
    assert math.isnan(sref.log(-1.0)) and sref.log(0.0) == -math.inf


def test_log_check_rejects_a_shorter_series(monkeypatch):
    """Negative control: the same leaf with the atanh series cut after f^10 (the terms from
    1/13 on set to 0; compiled afresh, so the patched coefficients are read) is off by far more
    than 2 ulp."""
    from metastab.kernels.arith import as_bits, fma, from_bits

    monkeypatch.setattr(leaves, "_A", leaves.ATANH_COEF[:5] + (0.0,) * 5)
    short = njit(leaves.log_positive(fma, mul, as_bits, from_bits))
    s = LOG_S[:3000]
    assert _ulps(np.array([short(v) for v in s]), s).max() > 100


def test_log_reference_is_the_leaf_bit_for_bit():
    s = LOG_S[::50]
    got = np.empty_like(s)
    _logs(s, got)
    assert np.array_equal(got, [sref.log(float(v)) for v in s])


@njit
def _sincos(u, s, c):
    for i in range(u.shape[0]):
        s[i], c[i] = NK.sincos_turn(u[i])


# the uniforms of the streams: multiples of 2^-53 in [0, 1), and the quarter turns' edges
TURNS = np.concatenate(
    [np.floor(_G.uniform(0.0, 1.0, 200_000) * 2.0**53) * 2.0**-53,
     np.arange(9) / 8.0, np.arange(1, 9) / 8.0 - 2.0**-53]
)  # fmt: skip
TURNS = TURNS[TURNS < 1.0]


def test_sincos_leaf_is_within_2_to_the_minus_52_of_the_exact_values():
    """Measured: sine and cosine of 2πu within 2^-52 (absolute; both are at most 1; 1.4e-16
    measured) of their values in long double, where numpy's long double has a 64-bit mantissa
    (elsewhere within 1e-15, the accuracy of a double angle)."""
    s, c = np.empty_like(TURNS), np.empty_like(TURNS)
    _sincos(TURNS, s, c)
    two_pi = np.longdouble("6.283185307179586476925286766559005768")
    angle = two_pi * TURNS.astype(np.longdouble)
    tol = 2.0**-52 if np.finfo(np.longdouble).eps < 1e-18 else 1e-15
    assert np.abs(s - np.sin(angle)).max() <= tol and np.abs(c - np.cos(angle)).max() <= tol


def test_sincos_reference_is_the_leaf_bit_for_bit():
    u = TURNS[::40]
    s, c = np.empty_like(u), np.empty_like(u)
    _sincos(u, s, c)
    want = np.array([sref.sincos(float(v)) for v in u])
    assert np.array_equal(s, want[:, 0]) and np.array_equal(c, want[:, 1])


def _normals(m, state=STATE):
    z, a, b = np.empty(m), np.empty((m + 1) // 2), np.empty((m + 1) // 2)
    s = state.copy()
    NK.standard_normals(s, m, z, a, b)
    return z, s


@pytest.mark.parametrize("m", [1, 2, 9, 64])
def test_standard_normals_match_reference_and_leave_the_same_stream(m):
    z, s = _normals(m)
    stream = ref.Xoshiro256(STATE.copy())
    assert np.array_equal(z, sref.standard_normals(stream, m))
    assert np.array_equal(s, stream.state())


# the law: 2^18 normals of one stream, KS at level 1e-3, moments at 5 standard errors
M = 1 << 18


def _law_ok(z):
    se = 1.0 / math.sqrt(len(z))
    pairs = z[: len(z) // 2 * 2].reshape(-1, 2)
    return (
        stats.kstest(z, "norm").pvalue > 1e-3
        and abs(z.mean()) < 5 * se
        and abs(z.var() - 1.0) < 5 * math.sqrt(2.0) * se
        and abs(stats.kurtosis(z)) < 5 * math.sqrt(24.0) * se
        and abs(np.corrcoef(pairs.T)[0, 1]) < 5 * math.sqrt(2.0) * se
    )


def test_normals_follow_the_standard_normal_law():
    """Fixed seed: KS p-value above 1e-3, mean, variance, excess kurtosis and the correlation of
    the two normals of a pair within 5 standard errors of 0, 1, 0, 0."""
    assert _law_ok(_normals(M)[0])


def test_normal_law_check_rejects_a_wrong_radius():
    """Negative control: Box–Muller's radius √(−log u) (the 2 left out: variance 1/2)."""
    wrong = njit(lambda u: 0.5 * NK.log_fma(u))
    pair = njit(leaves.box_muller(wrong, NK.sincos_turn, mul))
    u = np.array([1.0 - v for v in np.random.default_rng(5).random(M // 2)])
    v = np.random.default_rng(6).random(M // 2)
    w = np.array([pair(a, b) for a, b in zip(u, v)]).reshape(M)
    assert not _law_ok(w)


def on_sphere(rng, *shape):
    x = rng.normal(size=shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def k_noisy(x, model, state):
    n, d = x.shape
    dyn = model.kernel_params(d)
    out = np.full((n, d), np.nan)
    s = state.copy()
    NK.noisy_step(np.ascontiguousarray(x), dyn.Bs, dyn.Vs, dyn.beta, model.dt, dyn.coupling,
                  model.attention == "unnormalized", dyn.plain_B, dyn.plain_V, s, out,
                  SK.sphere_flow_work(n, d))  # fmt: skip
    return out, s


def r_noisy(x, model, stream):
    d = x.shape[1]
    B, V = model.key_query(d), model.head_matrices(d)[1][0]
    return sref.noisy_step(x, [(B, V)], model.beta, model.dt, model.K, stream, model.attention)


_R = np.random.default_rng(11)
_BV = {"B": _R.normal(size=(3, 3)), "V": _R.normal(size=(3, 3))}
STEP_CASES = [
    (8, 3, NoisySphere(2.0, 1.5, 0.05)),
    (5, 2, NoisySphere(1.0, 0.0, 0.01)),  # K = 0: no drift
    (7, 3, NoisySphere(1.0, 1.0, 0.02, attention="softmax", **_BV)),
    (9, 3, NoisySphere(0.5, 2.0, 0.02, **_BV)),
    (33, 3, NoisySphere(3.0, 0.5, 0.01)),  # n d odd: the last pair's second normal dropped
    (64, 4, NoisySphere(2.0, 2.0, 0.01)),  # the flow's blocked Gram
    (40, 17, NoisySphere(1.0, 1.0, 0.01, attention="softmax")),
]


@pytest.mark.parametrize("n, d, model", STEP_CASES)
def test_noisy_step_matches_reference(n, d, model):
    x = on_sphere(np.random.default_rng(n * d), n, d)
    got, s = k_noisy(x, model, STATE)
    stream = ref.Xoshiro256(STATE.copy())
    assert np.array_equal(got, r_noisy(x, model, stream))
    assert np.array_equal(s, stream.state())
    assert not np.array_equal(got, x)


def test_reference_step_tells_the_drift_apart():
    """Negative control: the reference without the drift (K = 0) gives other bits than the
    kernel's step with K > 0, from the same stream."""
    n, d, model = STEP_CASES[0]
    x = on_sphere(np.random.default_rng(n * d), n, d)
    got, _ = k_noisy(x, model, STATE)
    off = NoisySphere(model.beta, 0.0, model.dt)
    assert not np.array_equal(got, r_noisy(x, off, ref.Xoshiro256(STATE.copy())))


@pytest.mark.parametrize(
    "model, n",
    [(NoisySphere(3.0, 1.0, 0.02), 6), (NoisySphere(1.0, 0.7, 0.02, **_BV), 40)],
    ids=["small", "two-blocks-BV"],
)
def test_simulate_matches_reference_per_chain(model, n):
    """Whole runs (the state held transposed from step to step) and first passages (an event:
    the state read after every step) give the reference's bits per chain."""
    x0 = on_sphere(np.random.default_rng(5), 3, n, 3)
    run = ms.simulate(model, x0, steps=6, rng=99, first_chain=4)
    passage = ms.first_passage(model, x0, ms.LeaveBall(10.0), max_steps=6, rng=99, first_chain=4)
    streams = ms.as_seed(99).streams(3, 4)
    for c in range(3):
        x, stream = x0[c], ref.Xoshiro256(streams[c])
        for _ in range(6):
            x = r_noisy(x, model, stream)
        assert np.array_equal(run.final[c], x)
        assert np.array_equal(passage.final[c], x)
