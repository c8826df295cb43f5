"""The fused arithmetic of the kernels (metastab.kernels.arith): the numba fma and exp against their
plain-Python twins, bit for bit, with a control that the unfused operations differ."""

import math

import numpy as np
import pytest
from numba import njit

from metastab.kernels import arith


@njit
def _fmas(a, b, c):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = arith.fma(a[i], b[i], c[i])
    return out


@njit
def _exps(z):
    out = np.empty(z.shape[0])
    for i in range(z.shape[0]):
        out[i] = arith.exp_fma(z[i])
    return out


def _cancelling(size, seed=0):
    """Triples whose product and addend nearly cancel: there rounding the product first loses
    the low bits that a fused multiply-add keeps."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=size)
    b = rng.normal(size=size)
    c = -(a * b) * (1.0 + rng.normal(size=size) * 1e-12)
    return a, b, c


def test_fma_is_rounded_once():
    a, b, c = _cancelling(4000)
    got = _fmas(a, b, c)
    want = np.array([arith.fma_exact(*t) for t in zip(a, b, c)])
    assert np.array_equal(got, want)
    # control: rounding the product first changes most of these results
    assert np.mean(got != a * b + c) > 0.5


def test_fma_exact_equals_the_fused_instruction_across_exponents():
    """The plain-Python fma against llvm.fma (the hardware's, correctly rounded) on triples of
    every scale: results from subnormal to overflowing, products that cancel c, exact zeros."""
    rng = np.random.default_rng(3)
    size = 20000
    a = rng.normal(size=size) * 2.0 ** rng.integers(-560, 580, size)
    b = rng.normal(size=size) * 2.0 ** rng.integers(-560, 580, size)
    c = rng.normal(size=size) * 2.0 ** rng.integers(-1074, 1000, size)
    near = rng.random(size) < 0.3  # c near -a b: cancellation; some exactly -a b
    with np.errstate(over="ignore", invalid="ignore"):
        c[near] = -(a[near] * b[near]) * np.where(rng.random(near.sum()) < 0.5, 1.0, 1.0 + 1e-15)
        got = _fmas(a, b, c)
    want = np.array([arith.fma_exact(*t) for t in zip(a, b, c)])
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (a[~same][:3], b[~same][:3], c[~same][:3])
    assert np.array_equal(np.signbit(got), np.signbit(want))
    tiny = np.abs(got) < 2.0**-1022
    assert (tiny & (got != 0)).sum() > 20 and np.isinf(got).sum() > 50 and (got == 0).sum() > 10


def test_fma_exact_special_values():
    assert arith.fma_exact(2.0, 3.0, 1.0) == 7.0
    assert math.isnan(arith.fma_exact(math.inf, 0.0, 1.0))
    assert arith.fma_exact(1e308, 10.0, -math.inf) == -math.inf
    assert arith.fma_exact(1e308, 10.0, 0.0) == math.inf
    assert math.copysign(1.0, arith.fma_exact(-0.0, 1.0, -0.0)) == -1.0
    assert math.copysign(1.0, arith.fma_exact(1.0, 1.0, -1.0)) == 1.0
    # an exact result below the smallest normal is rounded once, not flushed
    assert arith.fma_exact(2.0**-1060, 2.0**-10, 0.0) == 2.0**-1070


def test_exp_fma_against_twin_and_libm():
    rng = np.random.default_rng(1)
    z = np.concatenate(
        [-745.0 * rng.random(5000), -rng.random(2000), [0.0, -0.0, -708.39, -708.4, -745.0]]
    )
    got = _exps(z)
    assert np.array_equal(got, [arith.exp_fma_exact(float(v)) for v in z])
    exact = np.exp(z)
    normal = z >= -708.3  # exp(z) well inside the normal range
    ulps = np.abs(got[normal] - exact[normal]) / np.spacing(exact[normal])
    assert ulps.max() <= 1.0
    assert np.all(got[z < -709.0] == 0.0)  # 2^k below the normal range: flushed, as documented


@pytest.mark.parametrize("z", [-746.0, -np.inf])
def test_exp_fma_flushes_below_range(z):
    assert _exps(np.array([z]))[0] == 0.0 == arith.exp_fma_exact(z)


def test_exp_fma_nan():
    assert np.isnan(_exps(np.array([np.nan]))[0]) and math.isnan(arith.exp_fma_exact(math.nan))
