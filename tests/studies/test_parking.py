"""The Rényi centres of the causal-parking study (metastab.studies.parking) against brute force
and their exact law, and SphereFlow(causal=True) against the causal post-LN update of the first
author's simulator (simuformer: scores β x_i·x_j masked above the diagonal, softmax, residual,
LayerNorm)."""

import math

import numpy as np
import pandas as pd
import pytest

from metastab.engine import simulate
from metastab.models.sphere import SphereFlow
from metastab.studies import circle, parking, study_module


def _brute(x, delta, strong):
    """The centres by the definition, with distances computed pair by pair."""
    centres = []
    for k in range(len(x)):
        earlier = range(k) if strong else centres
        if all(np.linalg.norm(x[k] - x[j]) >= delta for j in earlier):
            centres.append(k)
    return centres


@pytest.mark.parametrize("seed", range(20))
def test_centres_are_those_of_the_definition(seed):
    gen = np.random.default_rng(seed)
    n, d = int(gen.integers(1, 60)), int(gen.integers(2, 5))
    x = gen.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    delta = float(gen.uniform(0.1, 1.5))
    strong = parking.renyi_centres(x, delta, strong=True).tolist()
    renyi = parking.renyi_centres(x, delta).tolist()
    assert strong == _brute(x, delta, True)
    assert renyi == _brute(x, delta, False)
    assert strong[0] == renyi[0] == 0
    assert set(strong) <= set(renyi)


def test_strong_centres_and_renyi_centres_differ_where_a_chain_of_tokens_links_them():
    # 0 at angle 0, 1 at 0.6 (near 0), 2 at 1.2 (near 1 only): 2 is a Rényi centre, not strong
    x = circle.on_circle(np.array([0.0, 0.6, 1.2]))
    assert parking.renyi_centres(x, 0.8).tolist() == [0, 2]
    assert parking.renyi_centres(x, 0.8, strong=True).tolist() == [0]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="delta"):
        parking.renyi_centres(np.eye(2), 0.0)
    with pytest.raises(ValueError, match="n×d"):
        parking.renyi_centres(np.zeros(3), 0.5)
    with pytest.raises(ValueError, match="delta"):
        parking.expected_strong_centres(10, -1.0)


def test_strong_count_has_its_exact_mean_and_a_wrong_separation_is_told_apart():
    # 4000 uniform starts of n = 200 at δ = 0.5: the mean within 4 standard errors of the exact
    # (1 − (1 − q)^n)/q; the same test rejects the mean at δ 20 % larger (negative control)
    gen = np.random.default_rng(20261202)
    n, delta, starts = 200, 0.5, 4000
    counts = np.array(
        [
            parking.renyi_centres(
                circle.on_circle(gen.uniform(0, 2 * math.pi, n)), delta, strong=True
            ).size
            for _ in range(starts)
        ]
    )
    se = counts.std(ddof=1) / math.sqrt(starts)
    assert abs(counts.mean() - parking.expected_strong_centres(n, delta)) < 4 * se
    assert abs(counts.mean() - parking.expected_strong_centres(n, 1.2 * delta)) > 4 * se


def test_expected_strong_count_grows_like_the_inverse_separation():
    # (1 − (1 − q)^n)/q → 1/q = π / (2 arcsin(δ/2)) ≈ π/δ for n → ∞
    for delta in (0.1, 0.5, 1.0):
        limit = math.pi / (2 * math.asin(delta / 2))
        assert parking.expected_strong_centres(10**6, delta) == pytest.approx(limit, rel=1e-9)
    assert parking.expected_strong_centres(1, 0.3) == 1.0


def _simuformer_step(m, beta, eta):
    """One causal post-LN step as simuformer writes it (sequential mask, norm 'postln'):
    scores M Mᵀ with −inf above the diagonal, times β, softmax over the keys, M + η SM M,
    then every row normalised."""
    scores = m @ m.T + np.triu(np.full((len(m), len(m)), -np.inf), k=1)
    scores = beta * scores
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    y = m + eta * (w @ m)
    return y / np.linalg.norm(y, axis=1, keepdims=True)


@pytest.mark.parametrize("beta", [1.0, 64.0])
def test_causal_post_ln_step_is_the_update_of_the_authors_simulator(beta):
    gen = np.random.default_rng(5)
    x = gen.normal(size=(12, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ours = simulate(SphereFlow(beta, 0.1, causal=True), x, steps=1).final[0]
    np.testing.assert_allclose(ours, _simuformer_step(x, beta, 0.1), rtol=0, atol=1e-12)
    # negative control: the full (unmasked) attention is another update
    full = simulate(SphereFlow(beta, 0.1), x, steps=1).final[0]
    assert np.abs(full - _simuformer_step(x, beta, 0.1)).max() > 1e-6
    # the first token attends to itself only: it never moves
    np.testing.assert_allclose(ours[0], x[0], rtol=0, atol=1e-15)


CHECKS = study_module("causal-parking", "checks")
RUN = study_module("causal-parking", "run")


def test_plateau_is_the_time_to_the_first_drop_below_the_count_at_t0():
    times = np.arange(6.0)
    assert RUN.plateau(times, np.array([6, 5, 6, 5, 4, 4]), 1.0) == (3.0, 5, False)
    assert RUN.plateau(times, np.array([6, 5, 5, 5, 5, 5]), 1.0) == (4.0, 5, True)


LIFETIME = study_module("causal-parking", "lifetime")


def _lifetimes(tmp_path, exponent, starts=40, seed=0, censor_at=None, shape=1.0):
    """Plateau lengths Weibull with the given shape and median ∝ β^exponent (median 100 at
    β = 16), censored at ``censor_at`` (and at the horizon − t0 = 900)."""
    from metastab.results import write_table

    gen = np.random.default_rng(seed)
    rows = []
    for beta in (16.0, 32.0, 64.0, 128.0):
        scale = 100.0 * (beta / 16.0) ** exponent / math.log(2) ** (1 / shape)
        for c, length in enumerate(scale * gen.weibull(shape, starts)):
            cut = censor_at is not None and length > censor_at
            rows.append(
                {
                    "beta": beta,
                    "chain": c,
                    "fraction": 0.02,
                    "t0": 100.0,
                    "count": 5,
                    "length": censor_at if cut else length,
                    "censored": int(cut),
                    "horizon": 1000.0,
                }
            )
    write_table(pd.DataFrame(rows), tmp_path / "lifetimes.csv", {"test": True})


@pytest.mark.parametrize("exponent", [0.0, 0.5])
def test_lifetime_fit_recovers_the_exponent_and_rejects_one_a_half_off(tmp_path, exponent):
    # 400 starts per β, Weibull shape 0.7: the interval is narrow enough to tell b from b ± 0.5
    # (negative control)
    _lifetimes(tmp_path, exponent, starts=400, shape=0.7)
    fit = LIFETIME.lifetime_fit(tmp_path, 0.02, 100.0, 0.95)
    assert fit["low"] <= exponent <= fit["high"]
    assert fit["weibull"].shape == pytest.approx(0.7, abs=0.05)
    assert LIFETIME.exponent_miss(fit, exponent) == 0.0
    assert LIFETIME.exponent_miss(fit, exponent + 0.5) > 0.25
    assert LIFETIME.exponent_miss(fit, exponent - 0.5) > 0.25


def test_lifetime_is_measured_where_the_medians_are_censored(tmp_path):
    # median 800 at β = 128 censored at 300: the Kaplan–Meier median is unbounded there, the
    # censored regression still recovers b = 1 (and rejects 0, the negative control)
    _lifetimes(tmp_path, 1.0, starts=200, censor_at=300.0)
    fit = LIFETIME.lifetime_fit(tmp_path, 0.02, 100.0, 0.95)
    per = fit["per_beta"].set_index("beta")
    assert math.isinf(per.loc[128.0, "median"]) and per.loc[128.0, "censored"] > 0.5
    assert fit["low"] <= 1.0 <= fit["high"]
    assert LIFETIME.exponent_miss(fit, 0.0) > 0.25
    # the same lengths read with an earlier horizon: censored at 400 − 100
    short = LIFETIME.lifetime_fit(tmp_path, 0.02, 100.0, 0.95, 400.0)
    assert short["span"] == 300.0 and short["per_beta"]["events"].equals(fit["per_beta"]["events"])
    with pytest.raises(ValueError, match="horizons"):
        LIFETIME.lifetime_fit(tmp_path, 0.02, 100.0, 0.95, 2000.0)


def test_weibull_regression_is_the_maximum_of_its_likelihood():
    # against a direct Nelder–Mead maximisation over (a, b, log k) and, per β, scipy's censored
    # Weibull fit; a shape or an exponent moved by 5 % has a lower likelihood
    from scipy import optimize
    from scipy import stats as sps

    gen = np.random.default_rng(3)
    beta = np.repeat([16.0, 32.0, 64.0, 128.0], 60)
    t = 50.0 * beta**-0.4 * gen.weibull(0.8, beta.size)
    cens = t > 30.0
    t = np.minimum(t, 30.0)
    fit = LIFETIME.weibull_fit(t, cens, beta, 0.95)
    e, lb = ~cens, np.log(beta)

    def nll(p):
        a, b, lk = p
        k, loglam = math.exp(lk), a + b * lb
        z = np.exp(k * (np.log(t) - loglam))
        return -(np.sum(lk - np.log(t[e]) + k * (np.log(t[e]) - loglam[e])) - z.sum())

    best = optimize.minimize(
        nll, [3.0, 0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12}
    )
    np.testing.assert_allclose([fit.a, fit.b, math.log(fit.shape)], best.x, atol=1e-5)
    assert -nll([fit.a, fit.b, math.log(fit.shape)]) == pytest.approx(-best.fun, abs=1e-8)
    assert nll([fit.a, 1.05 * fit.b, math.log(fit.shape)]) > best.fun
    assert nll([fit.a, fit.b, math.log(1.05 * fit.shape)]) > best.fun
    g = beta == 32.0
    data = sps.CensoredData(uncensored=t[g & e], right=t[g & cens])
    k, _, lam = sps.weibull_min.fit(data, floc=0)
    one = LIFETIME.weibull_fit(
        np.r_[t[g], t[g]], np.r_[cens[g], cens[g]], np.r_[beta[g], 2 * beta[g]], 0.95
    )
    # the same sample at two β with b = 0 has the shape of one sample
    assert one.b == pytest.approx(0.0, abs=1e-6) and one.shape == pytest.approx(k, rel=1e-4)
    assert math.exp(one.a) * 32.0**one.b == pytest.approx(lam, rel=1e-4)


@pytest.mark.slow
def test_profile_interval_covers_the_exponent_at_its_level():
    # 200 censored samples (4 β × 25 starts, shape 0.7, about 16 % censored): the 95 % profile
    # interval covers b in 0.90 to 0.99 of them (binomial sd 0.015; measured 0.915, the profile
    # interval's small-sample shortfall); at level 0.5 the same test fails (negative control:
    # measured 0.48)
    gen = np.random.default_rng(11)
    beta = np.repeat([16.0, 32.0, 64.0, 128.0], 25)
    cover = {0.95: 0, 0.5: 0}
    for _ in range(200):
        t = 100.0 * (beta / 16.0) ** -0.5 * gen.weibull(0.7, beta.size)
        cens = t > 150.0
        t = np.minimum(t, 150.0)
        for level in cover:
            fit = LIFETIME.weibull_fit(t, cens, beta, level)
            cover[level] += fit.low <= -0.5 <= fit.high
    assert 0.90 <= cover[0.95] / 200 <= 0.99
    assert not 0.90 <= cover[0.5] / 200 <= 0.99


def test_no_finite_exponent_without_events_at_two_beta():
    beta = np.repeat([16.0, 32.0], 5)
    t = np.r_[np.arange(1.0, 6.0), np.full(5, 10.0)]
    cens = np.r_[np.zeros(5, bool), np.ones(5, bool)]  # β = 32: all censored
    assert LIFETIME.weibull_fit(t, cens, beta, 0.95) is None
    assert LIFETIME.weibull_fit(np.ones(3), np.ones(3, bool), np.ones(3), 0.95) is None
    with pytest.raises(ValueError, match="> 0"):
        LIFETIME.weibull_fit(np.zeros(3), np.zeros(3, bool), np.ones(3), 0.95)


def test_restricted_mean_is_the_mean_without_censoring_and_its_variance_greenwoods():
    from metastab import stats

    x = np.random.default_rng(1).exponential(10.0, 50)
    km = stats.survival(x, np.zeros(50, bool))
    mean, low, high = LIFETIME.restricted_mean(km, x.max() + 1, 0.95)
    assert mean == pytest.approx(x.mean(), rel=1e-12)
    # without censoring the Greenwood-type variance is the plug-in variance of the mean
    assert (high - mean) / 1.959964 == pytest.approx(math.sqrt(x.var() / 50), rel=1e-3)
    # restricted below the largest time: ∫_0^τ Ŝ < the mean (negative control of the limit)
    assert LIFETIME.restricted_mean(km, np.median(x), 0.95)[0] < x.mean() - 1.0


def test_censoring_at_an_earlier_horizon_keeps_a_drop_at_it():
    frame = pd.DataFrame({"beta": [16.0] * 3, "length": [5.0, 10.0, 20.0], "censored": [0, 0, 1]})
    cut = LIFETIME.censor_at(frame, 10.0)
    assert cut["length"].tolist() == [5.0, 10.0, 10.0]
    assert cut["censored"].tolist() == [0, 0, 1]


def _tables(tmp_path, extra_cluster: bool):
    """Two starts at β = 64 (δ = 0.5): strong centres at angles 0 and π, one more Rényi centre
    at π/2; clusters of 10 tokens at the strong centres (and, with ``extra_cluster``, at π/2)."""
    from metastab.results import write_table

    starts, centres, clusters = [], [], []
    for c in range(2):
        starts.append(
            {
                "beta": 64.0,
                "chain": c,
                "delta": 0.5,
                "strong": 2,
                "renyi": 3,
                "expected_strong": 6.2,
                "kernel_agrees": 1,
                "readings": 1,
            }
        )
        for token, (angle, strong) in enumerate([(0.0, 1), (math.pi, 1), (math.pi / 2, 0)]):
            centres.append(
                {
                    "beta": 64.0,
                    "chain": c,
                    "token": token,
                    "strong": strong,
                    "theta0": angle,
                    "theta_100": angle,
                }
            )
        for angle in [0.01, math.pi - 0.01] + ([math.pi / 2] if extra_cluster else []):
            clusters.append({"beta": 64.0, "chain": c, "time": 100.0, "angle": angle, "size": 10})
        clusters.append({"beta": 64.0, "chain": c, "time": 100.0, "angle": 4.0, "size": 2})
    for name, rows in (("starts", starts), ("centres", centres), ("clusters", clusters)):
        write_table(pd.DataFrame(rows), tmp_path / f"{name}.csv", {"test": True})


def test_count_and_bracket_read_the_clusters_of_each_start(tmp_path):
    _tables(tmp_path, extra_cluster=False)
    count = CHECKS.count_summary(tmp_path, 200, 0.02, 100.0, 0.95).iloc[0]
    assert count["clusters"] == 2 and count["mean"] == 0 and count["exact"] == 2
    assert CHECKS.bracket_summary(tmp_path, 200, 0.02, 100.0, 0.95).iloc[0]["inside"] == 2
    # the 2-token cluster counts only when the minimum size allows it (0.01 · 200 = 2 tokens)
    assert CHECKS.count_summary(tmp_path, 200, 0.01, 100.0, 0.95).iloc[0]["clusters"] == 3
    # negative control: one extra cluster per start, told apart from the strong count
    _tables(tmp_path, extra_cluster=True)
    count = CHECKS.count_summary(tmp_path, 200, 0.02, 100.0, 0.95).iloc[0]
    assert count["mean"] == 1 and count["miss"] == 1 and count["exact"] == 0
    assert CHECKS.bracket_summary(tmp_path, 200, 0.02, 100.0, 0.95, 2).iloc[0]["inside"] == 0


def test_capture_finds_the_cluster_at_each_strong_centre_and_misses_a_shifted_one(tmp_path):
    _tables(tmp_path, extra_cluster=False)
    cap = CHECKS.capture_summary(tmp_path, 200, 0.02, 100.0, 0.25, 0.95).iloc[0]
    assert cap["captured"] == cap["centres"] == 4
    shifted = CHECKS.capture_summary(tmp_path, 200, 0.02, 100.0, 0.25, 0.95, 1.0).iloc[0]
    assert shifted["captured"] == 0 and shifted["high"] < 0.9
    moved = CHECKS.displacement(tmp_path, 100.0)
    assert (moved["median"] == 0).all()
