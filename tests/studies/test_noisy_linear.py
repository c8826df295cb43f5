"""The measuring helpers of the noisy-linear study on cases with known answers (the study itself
runs in tests/studies/test_studies.py): the lag regression on an exact Ornstein–Uhlenbeck
process, the harmonic amplitudes' second moments at the uniform law, the zero of the line."""

import math

import numpy as np
import pandas as pd
import pytest

import metastab as ms
from metastab.studies import load_config, study_module
from metastab.theory.noisy import critical_coupling_linear, noisy_growth_rates

RUN = study_module("noisy-linear", "run")
CHECKS = study_module("noisy-linear", "checks")


def _ou_table(lam, *, chains=2000, batches=20, h=0.05, steps=20, comps=3, seed=4):
    """The modes table of an exact OU process da = λ a dt + √2 dW per component (a(0) ~ N(0, 1)),
    sampled every h: the rows ``estimates`` reads, for d = 2, degree 1, K = 0."""
    rng = np.random.default_rng(seed)
    a = np.empty((chains, steps + 1, comps))
    a[:, 0] = rng.standard_normal((chains, comps))
    decay = math.exp(lam * h)
    sd = math.sqrt((decay**2 - 1) / lam) if lam != 0 else math.sqrt(2 * h)  # ∫ 2 e^{2λs} ds
    for r in range(steps):
        a[:, r + 1] = decay * a[:, r] + sd * rng.standard_normal((chains, comps))
    rows = []
    for b, part in enumerate(np.array_split(a, batches)):
        s0 = np.einsum("crk,crk->r", part, part)
        lag = np.append(np.einsum("crk,crk->r", part[:, 1:], part[:, :-1]), np.nan)
        auto = np.einsum("crk,ck->r", part, part[:, 0])
        for r in range(steps + 1):
            rows.append(dict(set="grid", d=2, factor=0.0, K=0.0, k_sharp=1.0, n=100, dt=h,
                             degree=1, batch=b, chains=len(part), t=r * h, s0=s0[r],
                             lag=lag[r], auto=auto[r]))  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("lam", [-1.0, 0.5])
def test_lag_regression_recovers_an_exact_ou_rate(lam):
    # fixed seed; tolerance 4 jackknife SE; negative control: a rate 30 % off is rejected
    cfg = load_config("noisy-linear", quick=True)
    est = CHECKS.estimates(_ou_table(lam), cfg).iloc[0]
    assert abs(est["rate"] - lam) <= 4 * est["rate_se"], (est["rate"], est["rate_se"])
    assert abs(est["rate"] - 1.3 * lam) > 4 * est["rate_se"]
    # the autocorrelation at 0.25 is e^{0.25 λ} (within 4 SE), not e^{0.25 · 1.3 λ}
    assert abs(est["correlation"] - math.exp(0.25 * lam)) <= 4 * est["correlation_se"]
    assert abs(est["correlation"] - math.exp(0.325 * lam)) > 4 * est["correlation_se"]


@pytest.mark.parametrize("d", [2, 3])
def test_harmonic_amplitudes_of_uniform_tokens_have_their_dimension_as_second_moment(d):
    # E|a_1|² = E|x|² = 1 and E|A_2|²_F = E|xxᵀ − I/d|² = 1 − 1/d for i.i.d. uniform tokens
    # (8000 chains of 16 tokens, 4 SE); negative control: another d's value is rejected
    x = ms.sphere_uniform(16, d, chains=8000, rng=d)[:, None]
    for degree, want, wrong in ((1, 1.0, None), (2, 1 - 1 / d, 1 - 1 / (d + 1))):
        a = RUN.amplitudes(x, degree)[:, 0]
        sq = np.einsum("ck,ck->c", a, a)
        se = sq.std(ddof=1) / math.sqrt(sq.size)
        assert abs(sq.mean() - want) <= 4 * se, (degree, sq.mean(), want)
        if wrong is not None:
            assert abs(sq.mean() - wrong) > 4 * se
    sums = RUN.sums(np.repeat(x, 3, axis=1), 1)
    assert np.allclose(sums["lag"][:-1], sums["s0"][0]) and np.isnan(sums["lag"][-1])


def test_the_rate_and_the_zero_of_the_line_are_the_closed_forms():
    beta, d = 1.0, 3
    k_sharp = critical_coupling_linear(beta, d)
    factors = np.array([0.5, 0.9, 1.1, 1.5])
    lam = np.array([CHECKS.rate(f * k_sharp, beta, d, 1) for f in factors])
    want = [float(noisy_growth_rates(f * k_sharp, beta, d, [1])[0]) for f in factors]
    assert np.allclose(lam, want, rtol=1e-14)
    est = pd.DataFrame({"factor": factors, "rate": lam, "rate_se": np.full(4, 0.1)})
    root, se = CHECKS.zero(est)
    assert abs(root - 1) < 1e-12 and se > 0
    assert abs(CHECKS.bracket(est) - 1) < 1e-12
    assert math.isnan(CHECKS.bracket(est.assign(rate=lam - 10)))  # no sign change
    # the second moment: 1 at t = 0; 1 for every t at K = 0; the level 1/(1 − 2KŴ) below K_#
    assert CHECKS.moment(0.0, 0.7 * k_sharp, beta, d, 1) == pytest.approx(1.0)
    assert CHECKS.moment(3.0, 0.0, beta, d, 2) == pytest.approx(1.0)
    assert CHECKS.moment(50.0, 0.5 * k_sharp, beta, d, 1) == pytest.approx(2.0)


def test_jackknife_over_the_studys_batches_is_calibrated_on_an_exact_ou_process():
    # 24 independent exact OU runs (λ = −0.5) with the study's 32 batches: the z-scores
    # (λ̂ − λ)/SE have a standard deviation in [0.7, 1.4] (the SE is the rate's spread);
    # negative control: an SE a third of the jackknife's (what 8 batches gave at worst) fails
    cfg = load_config("noisy-linear")
    lam, z = -0.5, []
    for seed in range(24):
        e = CHECKS.estimates(_ou_table(lam, chains=1600, batches=32, seed=100 + seed), cfg)
        z.append((e["rate"].iloc[0] - lam) / e["rate_se"].iloc[0])
    spread = float(np.std(z, ddof=1))
    assert 0.7 <= spread <= 1.4, spread
    assert not 0.7 <= 3 * spread <= 1.4
