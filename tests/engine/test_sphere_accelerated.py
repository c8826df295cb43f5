"""SphereChain in mode="accelerated": the exact frozen law at any beta, and agreement with exact
stepping."""

import warnings

import numpy as np
import pytest
import scipy.stats as st

import metastab as ms

# two clusters of two tokens at orthogonal points of the circle: a token stays in its group with
# probability q = 1 / (1 + r), r = e^{beta (<u_a, u_b> - 1)} = e^{-beta} (equal multiplicities)
X0 = np.repeat([[1.0, 0.0], [0.0, 1.0]], 2, axis=0)
EVENT = ms.LeaveBall(0.1)  # a crossing token moves by ~0.77: the first cross pick is the escape


def log_escape_probability(beta: float, per_token: bool = True) -> float:
    """log p, p = 1 - prod_a q_a^{m_a} (docs: models#statements-fw); per_token=False forgets the
    multiplicities (prod_a q_a: a plausible bug, the negative control)."""
    tokens = 4 if per_token else 2
    return float(np.log(-np.expm1(-tokens * np.log1p(np.exp(-beta)))))


def test_frozen_law_at_mean_escape_time_1e40():
    """beta = 93.5: E[T] = 1/p ~ 1.01e40 steps. T p is Exp(1) up to O(p): KS test on 3000
    chains at level 0.01; the law without multiplicities (rate halved) must be rejected
    (p-value < 1e-6)."""
    beta = 93.5
    logp = log_escape_probability(beta)
    assert 39.9 < -logp / np.log(10) < 40.1
    fp = ms.first_passage(
        ms.SphereChain(beta, 0.5),
        X0,
        EVENT,
        max_steps=1e100,
        chains=3000,
        rng=20261126,
        mode="accelerated",
    )
    assert not fp.censored.any()
    assert st.kstest(fp.times * np.exp(logp), "expon").pvalue > 0.01
    wrong = np.exp(log_escape_probability(beta, per_token=False))
    assert st.kstest(fp.times * wrong, "expon").pvalue < 1e-6
    # the moved token is back on the sphere, the others exactly where they were
    norms = np.linalg.norm(fp.final, axis=-1)
    assert np.abs(norms - 1).max() < 1e-15
    moved = (fp.final != X0).any(axis=-1)
    assert (moved.sum(axis=1) >= 1).all()


def test_accelerated_agrees_with_exact_stepping():
    """beta = 3: the escape times of both modes have one law (two-sample KS, 3000 chains each,
    level 0.01) with mean 1/p = 5.66."""
    m = ms.SphereChain(3.0, 0.5)
    kw = dict(max_steps=10**6, chains=3000)
    a = ms.first_passage(m, X0, EVENT, rng=2, mode="accelerated", **kw)
    e = ms.first_passage(m, X0, EVENT, rng=3, **kw)
    assert st.ks_2samp(a.times, e.times).pvalue > 0.01
    mean = np.exp(-log_escape_probability(3.0))
    for steps in (a.times, e.times):
        assert abs(steps.mean() - mean) < 4 * mean / np.sqrt(3000)


def test_accelerated_needs_v_identity():
    with pytest.raises(ValueError, match="V = I for a SphereChain"):
        ms.first_passage(
            ms.SphereChain(3.0, 0.5, V=2 * np.eye(2)),
            X0,
            EVENT,
            max_steps=10,
            mode="accelerated",
        )
    with pytest.raises(ValueError, match="SoftmaxChain .* or a SphereChain"):
        ms.first_passage(ms.SphereFlow(3.0, 0.1), X0, EVENT, max_steps=10, mode="accelerated")


def test_exact_mode_warns_where_cross_picks_underflow():
    """beta = 1000: every cross pick has weight e^-1000, flushed to 0 by the kernels' exp, so
    exact stepping can never leave the clusters and says so; with V != I the frozen law does
    not hold and nothing is claimed (negative control)."""
    with pytest.warns(ms.ResolutionWarning, match="underflows to 0"):
        fp = ms.first_passage(ms.SphereChain(1000.0, 0.5), X0, EVENT, max_steps=20, chains=2)
    assert fp.censored.all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ms.first_passage(
            ms.SphereChain(1000.0, 0.5, V=0.5 * np.eye(2)), X0, EVENT, max_steps=2, chains=2
        )
