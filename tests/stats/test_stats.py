"""Tests for metastab.stats: censored survival, escape rates, memorylessness, scaling laws.

Statistical tests use fixed seeds and state their tolerances; each has a negative control.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special
from scipy import stats as sps

import metastab as ms
from metastab import stats
from metastab.results import FirstPassage
from metastab.stats import (
    ConfidenceInterval,
    DiagnosticWarning,
    escape_rate,
    exponentiality_test,
    fit_report,
    fit_scaling,
    garwood_interval,
    survival,
)
from metastab.stats.memorylessness import sup_distance
from metastab.stats.rates import rate_interval
from metastab.theory import frozen_law

REPS = 400  # replications of every coverage study
LOW, HIGH = 0.92, 0.98  # accepted coverage of a 95% interval over REPS replications (±3 s.e.)


def geometric(rng, p, n, budget):
    """n geometric escape steps on {1, 2, ...}, right-censored at ``budget``."""
    T = rng.geometric(p, n)
    return np.minimum(T, budget), T > budget


def exponential(rng, lam, n, budget):
    T = rng.exponential(1 / lam, n)
    return np.minimum(T, budget), T > budget


def law_rate(*args, **kwargs):
    """escape_rate without the memorylessness switch: the law's own interval, under that law."""
    return escape_rate(*args, memoryless=False, **kwargs)


def covered(truth, intervals):
    lo, hi = np.asarray(intervals).T
    return float(np.mean((lo <= truth) & (truth <= hi)))


def chain_frame(rng, betas, a, b, chains, budget, law="geometric"):
    beta = np.repeat(np.asarray(betas, float), chains)
    rate = np.exp(-a - b * beta)
    T = rng.geometric(rate) if law == "geometric" else rng.exponential(1 / rate)
    return pd.DataFrame(
        {"beta": beta, "steps": np.minimum(T, budget), "censored": T > budget, "max_steps": budget}
    )


def naive_km(time, event):
    """Kaplan–Meier written out the textbook way, one distinct event time at a time."""
    out = {}
    S = 1.0
    for u in sorted(set(time[event])):
        at_risk = np.sum(time >= u)
        d = np.sum((time == u) & event)
        S *= 1 - d / at_risk
        out[u] = S
    return out


# --------------------------------------------------------------------------- survival


def test_survival_matches_textbook_kaplan_meier_and_greenwood():
    rng = np.random.default_rng(0)
    t, c = geometric(rng, 0.05, 300, 40)
    km = survival(t, c)
    ref = naive_km(t.astype(float), ~c)
    at_events = {u: s for u, s in zip(km.time, km.probability) if u in ref}
    assert at_events.keys() == ref.keys()
    np.testing.assert_allclose(list(at_events.values()), list(ref.values()), rtol=1e-12)
    # Greenwood: S ± z S sqrt(Σ d/(n(n−d))), clipped to [0, 1] by scipy
    var = np.cumsum(
        np.where(km.events > 0, km.events / (km.at_risk * (km.at_risk - km.events)), 0.0)
    )
    z = sps.norm.ppf(0.975)
    low, high = km.confidence_interval(0.95, method="linear")
    np.testing.assert_allclose(
        low, np.clip(km.probability * (1 - z * np.sqrt(var)), 0, 1), atol=1e-12
    )
    np.testing.assert_allclose(
        high, np.clip(km.probability * (1 + z * np.sqrt(var)), 0, 1), atol=1e-12
    )
    lo2, hi2 = km.confidence_interval(0.95)  # log-log: inside [0, 1], around S
    assert np.all((0 <= lo2) & (lo2 <= km.probability) & (km.probability <= hi2) & (hi2 <= 1))
    assert km.evaluate(0.5) == 1.0
    assert km.median == km.time[np.argmax(km.probability <= 0.5)]


def test_survival_frame_and_firstpassage_input():
    rng = np.random.default_rng(1)
    t, c = geometric(rng, 0.1, 50, 20)
    fp = FirstPassage(
        times=t,
        censored=c,
        final=np.zeros((50, 2, 1)),
        max_steps=20,
        model={"kind": "softmax-chain", "beta": 1.0},
        event={"kind": "x"},
        seed={},
    )
    a, b, f = survival(t, c), survival(fp), survival(fp.to_frame())
    np.testing.assert_array_equal(a.probability, b.probability)
    np.testing.assert_array_equal(a.probability, f.probability)
    frame = a.to_frame()
    assert list(frame.columns) == ["time", "survival", "low", "high", "at_risk", "events"]
    assert frame["events"].sum() == (~c).sum() and frame["at_risk"].iloc[0] == 50


def test_survival_keeps_censored_chains_at_risk():
    # one escape at 5, nine chains censored at 100: Ŝ(5) = 9/10. Dropping the censored chains
    # would give 0, counting them as events would give 0.9 then 0 at 100.
    km = survival([5] + [100] * 9, [False] + [True] * 9)
    assert km.probability.tolist() == [0.9, 0.9]
    assert km.n_events == 1 and km.chains == 10


def test_survival_without_events_warns():
    with pytest.warns(DiagnosticWarning, match="no events among 3"):
        km = survival([10, 10, 10], [True, True, True])
    assert km.probability.tolist() == [1.0]
    assert km.median == math.inf


# --------------------------------------------------------------------------- escape rate


def test_escape_rate_hand_values_and_independent_exact_intervals():
    fit = escape_rate([3, 1, 7, 10, 10], [False, False, False, True, True])
    assert (fit.events, fit.exposure, fit.chains, fit.censored) == (3, 31.0, 5, 2)
    assert fit.rate == 3 / 31 and fit.mean == 31 / 3
    # geometric "exact" = Clopper–Pearson for 3 successes in 31 trials (scipy's binomtest)
    ref = sps.binomtest(3, 31).proportion_ci(0.95, method="exact")
    np.testing.assert_allclose(fit.confidence_interval(), (ref.low, ref.high), rtol=1e-10)
    # exponential Garwood: Poisson tail equations P[N <= d | λE] = α/2, P[N >= d | λE] = α/2
    efit = escape_rate(
        [3.0, 1.0, 7.0, 10.0, 10.0], [False, False, False, True, True], law="exponential"
    )
    lo, hi = efit.confidence_interval()
    assert sps.poisson.sf(2, lo * 31) == pytest.approx(0.025, rel=1e-9)
    assert sps.poisson.cdf(3, hi * 31) == pytest.approx(0.025, rel=1e-9)


@pytest.mark.parametrize("law", ["geometric", "exponential"])
def test_profile_interval_is_the_likelihood_ratio_set(law):
    d, E = 7, 370.0  # 7 escapes at step 10, 5 chains censored at 60
    steps, cens = np.r_[np.full(d, 10), np.full(5, 60)], np.r_[np.zeros(d, bool), np.ones(5, bool)]
    fit = law_rate(steps, cens, law=law, method="profile")
    assert (fit.events, fit.exposure) == (d, E)

    def loglik(r):
        return d * math.log(r) + ((E - d) * math.log1p(-r) if law == "geometric" else -r * E)

    lo, hi = fit.confidence_interval()
    drop = sps.chi2.ppf(0.95, 1) / 2
    assert loglik(fit.rate) - loglik(lo) == pytest.approx(drop, rel=1e-8)
    assert loglik(fit.rate) - loglik(hi) == pytest.approx(drop, rel=1e-8)
    if law == "exponential":  # closed form through Lambert W: x e^{−x} = e^{−1−drop/d}
        arg = -math.exp(-1 - drop / d)
        ref = [-special.lambertw(arg, k).real * fit.rate for k in (0, -1)]
        np.testing.assert_allclose((lo, hi), ref, rtol=1e-8)


def test_censored_chains_are_neither_dropped_nor_events():
    steps, cens = np.r_[5, np.full(9, 100)], np.r_[False, np.ones(9, bool)]
    with pytest.warns(DiagnosticWarning, match="9 of 10 chains are censored"):
        fit = escape_rate(steps, cens)
    # dropping the censored chains would give 1/5, counting them as escapes 10/905
    assert (fit.rate, fit.events, fit.exposure, fit.censored) == (1 / 905, 1, 905.0, 9)
    frame = pd.DataFrame(
        {
            "beta": np.repeat([1.0, 2.0], 10),
            "steps": np.tile(steps, 2),
            "censored": np.tile(cens, 2),
        }
    )
    frame.loc[10, ["steps", "censored"]] = [3, False]
    frame.loc[11, ["steps", "censored"]] = [8, False]
    per = fit_scaling(frame).per_beta
    assert per["events"].tolist() == [1, 2] and per["censored"].tolist() == [9, 8]
    assert per["exposure"].tolist() == [905.0, 811.0]


@pytest.mark.parametrize("law", ["geometric", "exponential"])
def test_rate_is_unbiased(law):
    rng = np.random.default_rng(2)
    rate, n, budget = 0.01, 400, 150
    sample = geometric if law == "geometric" else exponential
    est = [law_rate(*sample(rng, rate, n, budget), law=law).rate for _ in range(200)]
    # relative s.e. of one estimate ≈ 1/sqrt(d) with d ≈ 310 escapes: of the mean, ≈ 0.004
    assert np.mean(est) == pytest.approx(rate, rel=0.015)


@pytest.mark.parametrize("law", ["geometric", "exponential"])
@pytest.mark.parametrize("method", ["exact", "profile"])
def test_rate_interval_coverage(law, method):
    rng = np.random.default_rng(3)
    rate, n, budget = 0.02, 50, 100  # ≈ 13% censored, ≈ 43 escapes
    sample = geometric if law == "geometric" else exponential
    fits = [law_rate(*sample(rng, rate, n, budget), law=law, method=method) for _ in range(REPS)]
    cov = covered(rate, [f.confidence_interval() for f in fits])
    print(f"coverage {law} {method}: {cov:.4f}")
    assert LOW <= cov <= HIGH
    assert covered(1 / rate, [f.mean_interval() for f in fits]) == cov


def test_rate_interval_coverage_under_heavy_censoring_warns():
    rng = np.random.default_rng(4)
    rate, n, budget = 0.004, 200, 100  # ≈ 67% censored, ≈ 66 escapes
    with pytest.warns(DiagnosticWarning, match="censored"):
        cis = [
            law_rate(*geometric(rng, rate, n, budget)).confidence_interval() for _ in range(REPS)
        ]
    cov = covered(rate, cis)
    print(f"coverage geometric exact, 67% censored: {cov:.4f}")
    assert LOW <= cov <= HIGH


def test_coverage_check_rejects_a_too_narrow_interval():
    # negative control: an 80% interval passed off as a 95% one must fail the same check
    rng = np.random.default_rng(3)
    cis = [law_rate(*geometric(rng, 0.02, 50, 100)).confidence_interval(0.80) for _ in range(REPS)]
    cov = covered(0.02, cis)
    assert not LOW <= cov <= HIGH and cov < LOW


def test_zero_events_report_the_one_sided_bound():
    with pytest.warns(DiagnosticWarning, match="no escapes among 20 chains"):
        fit = escape_rate(np.full(20, 50), np.ones(20, bool))
    assert fit.one_sided and fit.rate == 0.0 and fit.mean == math.inf
    lo, hi = fit.confidence_interval()
    assert lo == 0.0 and (1 - hi) ** 1000 == pytest.approx(0.05, rel=1e-9)  # 1 − α^(1/E)
    assert fit.mean_interval() == (pytest.approx(1 / hi), math.inf)
    with pytest.warns(DiagnosticWarning, match="no escapes"):
        efit = escape_rate(np.full(20, 50.0), np.ones(20, bool), law="exponential")
    assert efit.confidence_interval()[1] == pytest.approx(-math.log(0.05) / 1000)


@pytest.mark.parametrize("p, level", [(1e-3, 0.95), (3e-4, 0.95), (1e-3, 0.80)])
def test_rate_interval_covers_at_least_at_nominal_level(p, level):
    # geometric escapes of 20 chains with budget 50 (exposure about 1000 steps, 0 to ~3
    # events): the exact interval of escape_rate, zero-event bound included, covers the true
    # rate in at least `level` of 4000 seeded replicates (3 standard errors of slack)
    rng = np.random.default_rng(20260511)
    reps, covered = 4000, 0
    for _ in range(reps):
        T = rng.geometric(p, 20)
        steps, censored = np.minimum(T, 50), T > 50
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DiagnosticWarning)
            lo, hi = law_rate(steps, censored).confidence_interval(level)
        covered += lo <= p <= hi
    assert covered / reps >= level - 3 * math.sqrt(level * (1 - level) / reps)


def test_rate_interval_coverage_control_detects_a_too_narrow_interval():
    # negative control of the test above: an interval shrunk to half its width around the
    # estimate must fall short of the nominal coverage
    rng = np.random.default_rng(20260511)
    reps, covered, p = 4000, 0, 1e-2
    for _ in range(reps):
        T = rng.geometric(p, 20)
        steps, censored = np.minimum(T, 50), T > 50
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DiagnosticWarning)
            fit = law_rate(steps, censored)
        lo, hi = fit.confidence_interval(0.95)
        mid = fit.rate
        covered += mid - (mid - lo) / 2 <= p <= mid + (hi - mid) / 2
    assert covered / reps < 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)


def test_events_at_time_zero_are_excluded_with_a_warning():
    with pytest.warns(DiagnosticWarning, match="2 of 6 chains met the event at time 0"):
        fit = escape_rate([0, 0, 4, 6, 10, 10], [False, False, False, False, True, True])
    assert (fit.chains, fit.events, fit.exposure) == (4, 2, 30.0)
    censored_at_zero = law_rate([0, 4, 6], [True, False, False])  # no warning: no event
    assert censored_at_zero.chains == 3


def test_start_is_subtracted():
    steps, cens = np.array([12, 30, 50, 50]), np.array([False, False, True, True])
    start = np.array([10, 5, 20, 0])
    fit = law_rate(steps, cens, start=start)  # the budgets on the new clock are not given
    ref = law_rate(steps - start, cens)
    assert (fit.rate, fit.exposure) == (ref.rate, 107.0)


def test_fitted_shift_recovers_a_transient():
    rng = np.random.default_rng(5)
    t, c = geometric(rng, 0.02, 500, 400)
    fit = escape_rate(t + 60, c, shift=True)
    lo, hi = fit.shift_interval()
    assert lo <= 60 <= hi == fit.shift
    assert fit.confidence_interval()[0] <= 0.02 <= fit.confidence_interval()[1]
    assert fit.mean == pytest.approx(60 + 50, rel=0.1)


def test_medians_follow_their_definitions():
    fit = escape_rate([3, 1, 7, 10, 10], [False, False, False, True, True])
    t = np.arange(1, 200)
    assert fit.median == t[np.argmax((1 - fit.rate) ** t <= 0.5)]
    lo, hi = fit.median_interval()
    assert lo <= fit.median <= hi
    efit = escape_rate([3.0, 1.0], [False, False], law="exponential")
    assert efit.median == pytest.approx(math.log(2) * 2)


def test_escape_rate_frame_is_one_row():
    row = escape_rate([3, 1, 7, 10, 10], [False, False, False, True, True]).to_frame()
    assert len(row) == 1 and {
        "rate",
        "rate_low",
        "rate_high",
        "mean",
        "median",
        "one_sided",
    } <= set(row.columns)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(steps=[1, 2], censored=None), "censored is required"),
        (dict(steps=[1, 2], censored=[False]), "censored must have the shape"),
        (dict(steps=[1, -2], censored=[False, False]), "steps must be finite and >= 0"),
        (dict(steps=[1.5, 2], censored=[False, False]), "integer steps"),
        (dict(steps=[1, 2], censored=[False, False], law="weibull"), "law must be one of"),
        (dict(steps=[1, 2], censored=[False, False], confidence_level=95), "confidence_level"),
        (dict(steps=[1, 2], censored=[False, False], start=[3, 0]), "start must be finite"),
        (dict(steps=[1, 2], censored=[False, False], method="wald"), "method must be"),
        (dict(steps=[1, 2], censored=[2, 0]), "censored must be boolean"),
    ],
)
def test_escape_rate_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        escape_rate(kwargs.pop("steps"), kwargs.pop("censored"), **kwargs)


# --------------------------------------------------------------------------- memorylessness


@pytest.mark.parametrize("law", ["geometric", "exponential"])
def test_sup_distance_is_the_exact_supremum(law):
    rng = np.random.default_rng(6)
    sample = geometric if law == "geometric" else exponential
    t, c = sample(rng, 0.05, 60, 40)
    t, e = t.astype(float), ~c
    rate = e.sum() / t.sum()
    D = sup_distance(t, e, rate, 0.0, law)
    grid = np.arange(0, t.max() + 1) if law == "geometric" else np.linspace(0, t.max(), 200001)
    km = survival(t, c).evaluate(grid)
    fitted = (1 - rate) ** grid if law == "geometric" else np.exp(-rate * grid)
    brute = np.abs(km - fitted).max()
    tol = 1e-12 if law == "geometric" else 2e-4  # the continuous grid misses the corners
    assert brute <= D + 1e-12 and D == pytest.approx(brute, abs=tol)


@pytest.mark.parametrize("law", ["geometric", "exponential"])
def test_exponentiality_accepts_memoryless_samples(law):
    rng = np.random.default_rng(7)
    sample = geometric if law == "geometric" else exponential
    res = exponentiality_test(*sample(rng, 0.01, 300, 200), law=law, n_resamples=499, rng=1)
    assert res.pvalue > 0.05 and res.null_distribution.shape == (499,)


@pytest.mark.parametrize("law", ["geometric", "exponential"])
def test_exponentiality_rejects_weibull_shape_3(law):
    rng = np.random.default_rng(8)
    T = 100 * rng.weibull(3.0, 300)
    T = np.ceil(T) if law == "geometric" else T
    res = exponentiality_test(np.minimum(T, 150), T > 150, law=law, n_resamples=499, rng=1)
    assert res.pvalue < 0.01


def test_exponentiality_rejects_a_shift_unless_it_is_fitted():
    rng = np.random.default_rng(9)
    t, c = geometric(rng, 0.02, 300, 300)
    res = exponentiality_test(t + 50, c, n_resamples=499, rng=2)
    assert res.pvalue < 0.01
    shifted = exponentiality_test(t + 50, c, shift=True, n_resamples=499, rng=2)
    assert shifted.pvalue > 0.05 and shifted.shift >= 49


def test_exponentiality_test_is_seeded_and_uses_firstpassage_budget():
    rng = np.random.default_rng(10)
    t, c = geometric(rng, 0.02, 100, 50)
    fp = FirstPassage(
        times=t, censored=c, final=np.zeros((100, 1, 1)), max_steps=50, model={}, event={}, seed={}
    )
    a = exponentiality_test(fp, n_resamples=99, rng=3)
    b = exponentiality_test(t, c, n_resamples=99, rng=3)
    assert a.pvalue == b.pvalue and a.statistic == b.statistic


def test_exponentiality_needs_known_budgets_and_events():
    with pytest.raises(ValueError, match="pass max_steps"):
        exponentiality_test([3, 9, 5], [False, True, True])
    with pytest.raises(ValueError, match="at least one event"):
        exponentiality_test([9, 9], [True, True])
    with pytest.raises(ValueError, match="n_resamples"):
        exponentiality_test([3, 9], [False, True], n_resamples=0)
    with pytest.raises(ValueError, match="== steps for a censored chain"):
        exponentiality_test([3, 9], [False, True], max_steps=10)


@pytest.mark.slow
def test_exponentiality_test_has_its_size():
    rng = np.random.default_rng(11)
    pvals = [
        exponentiality_test(*geometric(rng, 0.02, 100, 80), n_resamples=199, rng=k).pvalue
        for k in range(300)
    ]
    size = np.mean(np.array(pvals) <= 0.05)
    print(f"exponentiality test size at 5%: {size:.3f}")
    assert 0.02 <= size <= 0.09


# --------------------------------------------------------------------------- scaling law


@pytest.mark.parametrize("law", ["geometric", "exponential"])
def test_scaling_fit_matches_statsmodels_glm(law):
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(12)
    frame = chain_frame(rng, [1, 2, 3, 4, 6], 1.0, 1.0, 50, 300, law=law)
    fit = fit_scaling(frame, law=law)
    per = fit.per_beta
    X = sm.add_constant(per["beta"].to_numpy())
    d, E = per["events"].to_numpy(), per["exposure"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' own DomainWarning for a log link
        if law == "exponential":  # Poisson regression of counts with offset log E
            ref = sm.GLM(d, X, family=sm.families.Poisson(), offset=np.log(E)).fit(tol=1e-13)
        else:  # binomial, log link: d of E trials, p = 1/E[T]
            ref = sm.GLM(
                d / E, X, family=sm.families.Binomial(sm.families.links.Log()), var_weights=E
            ).fit(method="newton", tol=1e-13)
    np.testing.assert_allclose([fit.intercept, fit.slope], -ref.params, rtol=1e-7)
    np.testing.assert_allclose(fit.stderr("slope"), ref.bse[1], rtol=1e-5)
    assert fit.deviance == pytest.approx(ref.deviance, rel=1e-7)
    assert fit.pearson == pytest.approx(ref.pearson_chi2, rel=1e-7)
    assert fit.df == ref.df_resid == 3


def test_prefactor_fit_matches_statsmodels_and_is_tested():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(13)
    beta = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0], 200)
    rate = np.exp(-0.5 - 1.0 * beta - 2.0 * np.log(beta))
    T = rng.exponential(1 / rate)
    frame = pd.DataFrame({"beta": beta, "steps": np.minimum(T, 5000), "censored": T > 5000})
    fit = fit_scaling(frame, law="exponential", prefactor=True)
    per = fit.per_beta
    X = sm.add_constant(np.column_stack([per["beta"], np.log(per["beta"])]))
    ref = sm.GLM(
        per["events"], X, family=sm.families.Poisson(), offset=np.log(per["exposure"])
    ).fit(tol=1e-13)
    np.testing.assert_allclose(fit.params, -ref.params.to_numpy(), rtol=1e-6)
    lo, hi = fit.confidence_interval("prefactor")
    assert lo <= 2.0 <= hi and fit.lrt_pvalue < 1e-3
    T = rng.exponential(np.exp(0.5 + beta))
    plain = fit_scaling(
        frame.assign(steps=np.minimum(T, 5000), censored=T > 5000),
        law="exponential",
        prefactor=True,
    )
    assert plain.lrt_pvalue > 0.01  # no prefactor in these data


def test_zero_event_beta_values_count_in_the_likelihood():
    rng = np.random.default_rng(14)
    frame = chain_frame(rng, [1, 2, 3, 9], 0.5, 1.0, 40, 200, law="exponential")
    fit = fit_scaling(frame, law="exponential")
    per = fit.per_beta
    assert per["events"].iloc[-1] == 0 and bool(per["one_sided"].iloc[-1])
    assert per["mean"].iloc[-1] == math.inf and per["mean_low"].iloc[-1] > 0
    # the Poisson score equations hold with the zero-event row included (and fail without it)
    mu = np.exp(-fit.log_mean(per["beta"]))
    score = np.array([1.0 * np.ones(4), per["beta"]]) @ (per["events"] - per["exposure"] * mu)
    np.testing.assert_allclose(score, 0, atol=1e-6)
    without = fit_scaling(frame[frame["beta"] < 9], law="exponential")
    assert without.slope != pytest.approx(fit.slope, rel=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("law", ["geometric", "exponential"])
def test_scaling_fit_coverage_with_zero_event_betas(law):
    rng = np.random.default_rng(15)
    a, b = 0.5, 1.0
    wald, prof, zero = [], [], 0
    for _ in range(REPS):
        frame = chain_frame(rng, [1, 2, 3, 4, 6, 8, 9], a, b, 40, 200, law=law)
        fit = fit_scaling(frame, law=law)
        zero += bool((fit.per_beta["events"] == 0).any())
        wald.append(fit.confidence_interval("slope", method="wald"))
        prof.append(fit.confidence_interval("slope"))
    cw, cp = covered(b, wald), covered(b, prof)
    print(f"slope coverage {law}: wald {cw:.4f} profile {cp:.4f}; zero-event sets {zero}")
    assert zero > REPS / 4  # the zero-event case is really exercised
    assert LOW <= cw <= HIGH and LOW <= cp <= HIGH


def test_scaling_slope_is_unbiased_and_wls_agrees():
    rng = np.random.default_rng(16)
    fits = [fit_scaling(chain_frame(rng, [1, 2, 3, 4], 1.0, 0.8, 200, 10_000)) for _ in range(50)]
    slopes = np.array([f.slope for f in fits])
    assert slopes.mean() == pytest.approx(0.8, abs=3 * slopes.std() / math.sqrt(50))
    for f in fits[:5]:  # no censoring: WLS on log means is close
        assert f.wls_slope == pytest.approx(f.slope, abs=2 * f.wls_stderr)


def test_profile_ends_are_the_likelihood_ratio_set():
    rng = np.random.default_rng(17)
    fit = fit_scaling(chain_frame(rng, [1, 2, 3, 5], 0.5, 1.0, 30, 100))
    lo, hi = fit.confidence_interval("slope")
    x, d, E = fit._data
    drop = sps.chi2.ppf(0.95, 1) / 2

    def profile(b):
        def neg(a):
            p = np.exp(-a - b * x)
            return -np.sum(d * np.log(p) + (E - d) * np.log1p(-p)) if (p < 1).all() else 1e300

        return -optimize.minimize_scalar(
            neg, bounds=(-20, 20), method="bounded", options={"xatol": 1e-12}
        ).fun

    assert fit.loglik - profile(lo) == pytest.approx(drop, rel=1e-5)
    assert fit.loglik - profile(hi) == pytest.approx(drop, rel=1e-5)
    frame = fit.to_frame()
    assert frame["parameter"].tolist() == ["intercept", "slope"]
    assert frame.loc[1, "profile_low"] == lo


# Deterministic durations, one escape per β: the profile search of every parameter tries points
# where exposure·e^η passes the float range (an overflow warning before they were handled).
STEEP = pd.DataFrame(
    {
        "beta": [6.100654, 14.590225, 26.271053, 29.003552, 35.138641, 48.175831],
        "steps": [10, 48, 533, 949, 3215, 46018],
        "censored": False,
    }
)


def test_profile_search_past_the_float_range_is_silent_and_exact():
    """Far-out trial points have log-likelihood −inf and are rejected without a floating-point
    warning (warnings are errors here); the ends still solve ℓ̂ − ℓ_profile = χ²₁(0.95)/2,
    checked against an independent maximisation over the other two parameters."""
    fit = fit_scaling(STEEP, law="exponential", prefactor=True)
    x, d, E = fit._data
    Z = np.c_[np.ones_like(x), x, np.log(x)]
    drop = sps.chi2.ppf(0.95, 1) / 2
    for j, name in enumerate(("intercept", "slope", "prefactor")):
        lo, hi = fit.confidence_interval(name)
        assert lo < fit.params[j] < hi
        for end in (lo, hi):

            def neg(th, end=end, j=j):
                eta = -Z @ np.insert(th, j, end)  # log rate
                return -np.sum(d * eta - E * np.exp(eta))

            free = np.delete(fit.params, j)
            best = optimize.minimize(neg, free, method="Nelder-Mead", options={"fatol": 1e-12})
            assert fit.loglik + best.fun == pytest.approx(drop, rel=1e-4), (name, end)


def profile_drop(fit, j, v):
    """2 (ℓ̂ − ℓ_profile(v)) for parameter j at v, written out independently of the package:
    the log-likelihood of the law summed over the rows, maximised over the other parameters by
    Nelder–Mead in the coordinates that whiten the Wald ellipse of the fit (started at its
    regression of the others on θ_j; restarted until it stops improving)."""
    x, d, E = fit._data
    Z = np.c_[np.ones_like(x), x] if fit.prefactor is None else np.c_[np.ones_like(x), x, np.log(x)]
    S, free = fit.cov, [k for k in range(fit.params.size) if k != j]
    mid = fit.params[free] + S[free, j] / S[j, j] * (v - fit.params[j])
    L = np.linalg.cholesky(S[np.ix_(free, free)] - np.outer(S[free, j], S[j, free]) / S[j, j])

    def neg(u):
        eta = -Z @ np.insert(mid + L @ u, j, v)  # log rate
        if fit.law == "exponential":
            return -np.sum(d * eta - E * np.exp(eta)) if eta.max() < 700 else 1e300
        if eta.max() >= 0:  # some p >= 1: a penalty that leads back to p < 1
            return 1e10 * (1 + eta.max())
        return -np.sum(d * eta + (E - d) * np.log1p(-np.exp(eta)))

    best = optimize.OptimizeResult(x=np.zeros(len(free)), fun=neg(np.zeros(len(free))))
    while True:
        new = optimize.minimize(
            neg, best.x, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-13}
        )
        if not new.fun < best.fun - 1e-12:
            return 2 * (fit.loglik + best.fun)
        best = new


def assert_likelihood_ratio_ends(fit, rel=1e-6):
    """Every finite end of every parameter's 95% profile interval has 2 (ℓ̂ − ℓ_profile) =
    χ²₁(0.95) within ``rel``; an infinite end has the profile above the cut out to 2^30 s.e."""
    cut = sps.chi2.ppf(0.95, 1)
    for j, name in enumerate(("intercept", "slope", "prefactor")[: fit.params.size]):
        ends = fit.confidence_interval(name)
        assert ends.low < fit.params[j] < ends.high, name
        for sign, end in zip((-1, 1), ends):
            if math.isfinite(end):
                assert profile_drop(fit, j, end) == pytest.approx(cut, rel=rel), (name, end)
            else:
                assert end == sign * math.inf
                far = fit.params[j] + sign * fit.stderr(name) * 2.0 ** np.arange(0, 31, 5)
                assert all(profile_drop(fit, j, v) < cut for v in far), name


# Three near-collinear β (1, β and log β nearly dependent over [11.4, 12.5]), one escape each,
# and three parameters: the profile ends lie thousands of units from the estimates.
COLLINEAR = pd.DataFrame(
    {"beta": [11.378407, 12.360903, 12.520838], "steps": [15, 21, 20], "censored": False}
)


def test_profile_ends_on_near_collinear_data_are_the_likelihood_ratio_set():
    """Far along the profile, a start from the estimate has rates that overflow or an
    information that underflows; the ends still solve 2 (ℓ̂ − ℓ_profile) = χ²₁(0.95) (checked
    independently), not where Newton's method first failed. Silent: warnings are errors here."""
    fit = fit_scaling(COLLINEAR, prefactor=True)
    assert_likelihood_ratio_ends(fit)
    # control: the lower end the search used to report, where Newton's method first failed
    assert profile_drop(fit, 0, -247.43668869127697) < 1e-3
    lo, hi = fit.confidence_interval("intercept")
    assert hi - lo > 2 * fit.stderr("intercept")  # Wald: 3.9 s.e.; the flat profile is wider


def test_profile_ends_where_no_escape_probability_below_one_exists():
    """Geometric law with a row at β = 0, p = e^(−a) there: the intercept's profile is −inf
    for a <= 0 (no choice of the slope gives every p < 1), which the search meets at its
    trial points; the lower end is still the likelihood-ratio end just above 0."""
    frame = pd.DataFrame(
        {"beta": [0.0] * 10 + [1, 1, 2, 2], "steps": [1] * 9 + [3, 3, 5, 10, 20], "censored": False}
    )
    fit = fit_scaling(frame)
    assert_likelihood_ratio_ends(fit)
    assert 0 < fit.confidence_interval("intercept").low < fit.intercept - fit.stderr("intercept")


def test_profile_ends_of_random_fits_are_the_likelihood_ratio_set():
    """A dozen random well-posed datasets: both laws, with and without the prefactor, 4 or 5 β
    values, from 3 to 40 chains per β (some β without an escape)."""
    rng = np.random.default_rng(20)
    for law in ("geometric", "exponential"):
        for prefactor in (False, True):
            for chains in (3, 10, 40):
                betas = np.sort(rng.uniform(1, 8, size=rng.integers(4, 6)))
                a, b = rng.uniform(0.05, 1), rng.uniform(0.2, 1.5)
                frame = chain_frame(rng, betas, a, b, chains, 400, law=law)
                assert_likelihood_ratio_ends(fit_scaling(frame, law=law, prefactor=prefactor))


def test_scaling_coverage_check_rejects_a_too_narrow_interval():
    rng = np.random.default_rng(15)
    cis = [
        fit_scaling(chain_frame(rng, [1, 2, 3, 4, 6], 0.5, 1.0, 40, 200)).confidence_interval(
            "slope", method="wald", confidence_level=0.75
        )
        for _ in range(100)
    ]
    assert covered(1.0, cis) < LOW


def test_overdispersion_is_flagged():
    rng = np.random.default_rng(18)
    beta = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0], 200)
    wiggle = 0.7 * (-1.0) ** beta  # log E[T] not linear in β
    T = rng.geometric(np.exp(-0.5 - beta - wiggle))
    frame = pd.DataFrame({"beta": beta, "steps": T, "censored": np.zeros(T.size, bool)})
    with pytest.warns(DiagnosticWarning, match="does not fit"):
        fit = fit_scaling(frame)
    assert fit.deviance / fit.df > 10
    calm = fit_scaling(frame.assign(steps=rng.geometric(np.exp(-0.5 - beta))))  # control
    assert calm.deviance / calm.df < 5


def test_scaling_refuses_unidentifiable_and_mixed_data():
    frame = pd.DataFrame(
        {
            "beta": [1.0, 1.0, 2.0, 2.0],
            "steps": [3, 5, 50, 50],
            "censored": [False, False, True, True],
        }
    )
    with pytest.raises(ValueError, match="not identifiable"):
        fit_scaling(frame)
    with pytest.raises(ValueError, match="lacks the columns"):
        fit_scaling(frame.drop(columns="censored"))
    with pytest.raises(ValueError, match=r"\['gamma'\] vary"):
        fit_scaling(frame.assign(gamma=[0.1, 0.1, 0.2, 0.2]))
    boundary = pd.DataFrame(
        {"beta": [0.0, 0.0, 1.0, 1.0, 2.0], "steps": [1, 1, 3, 2, 9], "censored": False}
    )
    with pytest.raises(ValueError, match=r"every chain escaped at its first step at beta=\[0.0\]"):
        fit_scaling(boundary)
    assert fit_scaling(boundary, law="exponential").slope > 0
    with pytest.raises(ValueError, match="prefactor=True needs beta > 0"):
        fit_scaling(frame.assign(beta=[0.0, 0.0, 2.0, 2.0]), prefactor=True)


def test_fit_report_table():
    rng = np.random.default_rng(19)
    frame = chain_frame(rng, [1, 2, 3, 12], 0.5, 1.0, 60, 200)
    per, fit = fit_report(frame, n_resamples=99)
    assert per["beta"].tolist() == [1.0, 2.0, 3.0, 12.0]
    assert {"median", "median_low", "median_high", "memoryless_p", "note"} <= set(per.columns)
    assert np.isfinite(per["memoryless_p"].iloc[:3]).all()
    assert per["note"].iloc[-1].startswith("no events") and np.isnan(per["memoryless_p"].iloc[-1])
    assert isinstance(fit, stats.ScalingFit)
    per2, _ = fit_report(frame, memoryless=False)
    assert per2["memoryless_p"].isna().all()


# --------------------------------------------------------------------------- end to end


def test_simulated_frozen_chain_matches_the_exact_law():
    """SA_P from tokens at the vertices of a triangle: exit at the first cross pick (science §3)."""
    V = ms.regular_polygon(3).vertices
    beta = 3.0
    fp = ms.first_passage(
        ms.SoftmaxChain(beta=beta, gamma=0.5),
        V,
        ms.LeaveBall(0.1),
        max_steps=60,
        chains=4000,
        rng=11,
    )
    exact = frozen_law(V, [1, 1, 1], beta).p
    fit = escape_rate(fp)
    assert abs(fit.rate - exact) < 4 * exact / math.sqrt(fit.events)
    lo, hi = fit.confidence_interval(0.9999)
    assert lo <= exact <= hi
    assert exponentiality_test(fp, n_resamples=199, rng=0).pvalue > 0.01


def test_exact_interval_at_astronomical_exposure():
    """Exposures of 1e18-1e19 steps (accelerated runs): the geometric exact interval contains
    the estimate and matches the Poisson (Garwood) limit; it is not scipy's broken beta quantile
    (which returned a degenerate interval below the estimate at 4.6e18 total steps)."""
    for steps in (4.576867e16, 1e13, 3e10):
        res = law_rate(np.full(100, steps), np.zeros(100, bool))
        low, high = res.confidence_interval()
        assert low < res.rate < high
        E = 100 * steps
        garwood = (sps.chi2.ppf(0.025, 200) / (2 * E), sps.chi2.ppf(0.975, 202) / (2 * E))
        assert np.allclose((low, high), garwood, rtol=1e-6)


# --------------------------------------------------------------------------- result protocol


def test_every_result_answers_the_same_protocol():
    """Point estimates are properties; confidence_interval(level, *, method) returns a named
    (low, high) at the level of the result by default; to_frame() gives a table."""
    rng = np.random.default_rng(12)
    t, c = geometric(rng, 0.05, 200, 40)
    km = survival(t, c, confidence_level=0.9)
    rate = escape_rate(t, c, confidence_level=0.9)
    frame = pd.DataFrame({"beta": np.repeat([1.0, 2.0], 100), "steps": t, "censored": c})
    fit = fit_scaling(frame, confidence_level=0.9)
    for res, args in ((km, ()), (rate, ()), (fit, ("slope",))):
        ci = res.confidence_interval(*args)
        assert isinstance(ci, ConfidenceInterval)
        low, high = ci  # tuple-unpacking keeps working
        assert low is ci.low and high is ci.high
        wider = res.confidence_interval(*args, 0.99)
        assert np.all(np.asarray(wider.low) <= np.asarray(low))
        assert not np.array_equal(wider.high, high)  # None is the result's 0.9, not 0.99
        assert isinstance(res.to_frame(), pd.DataFrame)
    assert isinstance(km.median, float) and isinstance(rate.median, float)
    assert rate.confidence_interval(method="profile") != rate.confidence_interval()
    with pytest.raises(TypeError):  # method is keyword-only
        rate.confidence_interval(0.95, "profile")
    for interval in (rate.mean_interval(), rate.median_interval(), fit.band([1.5])):
        assert isinstance(interval, ConfidenceInterval)


def test_garwood_interval_is_the_one_of_the_exponential_law():
    """Garwood's chi-square interval, once: the exponential law's exact interval uses it."""
    res = escape_rate([3, 1, 7, 10, 10], [False, False, False, True, True], law="exponential")
    assert res.confidence_interval() == garwood_interval(3, 31.0)
    low, high = garwood_interval(100, 1e4, 0.9)
    assert (low, high) == (sps.chi2.ppf(0.05, 200) / 2e4, sps.chi2.ppf(0.95, 202) / 2e4)
    with pytest.raises(ValueError, match="confidence_level must be"):
        garwood_interval(3, 31.0, 1.5)


def test_warnings_live_in_one_module_and_at_top_level():
    from metastab import exceptions

    assert ms.DiagnosticWarning is exceptions.DiagnosticWarning is DiagnosticWarning
    assert issubclass(exceptions.ResolutionWarning, RuntimeWarning)
    assert set(stats.__all__) <= set(dir(stats))
    assert "DiagnosticWarning" in dir(ms)


@pytest.mark.parametrize("trials", [1e6, 2e8, 1e10, 9e11])
def test_clopper_pearson_holds_for_many_trials(trials):
    """1000 events in up to ~1e12 trials: the exact interval is the Beta quantile (betainc at it
    gives the tail probability to 1e-12) and tends to Garwood's Poisson interval as trials grow
    (scipy's beta.ppf returns a lower bound above the upper one from about 2e8 trials on)."""
    from metastab.stats.intervals import garwood_interval
    from metastab.stats.rates import rate_interval

    d = 1000
    low, high = rate_interval(d, trials, "geometric", 0.95, "exact")
    assert 0 < low < d / trials < high
    assert special.betainc(d, trials - d + 1, low) == pytest.approx(0.025, rel=1e-12)
    assert special.betainc(d + 1, trials - d, high) == pytest.approx(0.975, rel=1e-12)
    g_low, g_high = garwood_interval(d, trials, 0.95)
    # binomial and Poisson differ by O(d / trials) relative
    assert low == pytest.approx(g_low, rel=2e3 / trials) and high == pytest.approx(
        g_high, rel=2e3 / trials
    )


# ------------------------------------------------------------ intervals where the law fails


def gamma_steps(rng, n, budget, shape=3.0, mean=100.0):
    """Integer steps ⌈X⌉, X ~ Gamma(shape) with the given mean (CV 1/√3 ≈ 0.58), censored."""
    T = np.ceil(rng.gamma(shape, mean / shape, n))
    return np.minimum(T, budget), T > budget


def test_law_free_interval_covers_a_gamma_law_at_the_nominal_rate_and_is_narrower():
    # Gamma(3) escape steps of mean ≈ 100, 200 chains, ≈ 0.6 % censored at 300 steps. The
    # target of d/E is P[T <= c] / E[min(T, c)] (see bootstrap_rates), within 1 % of 1/E[T] here.
    c, reps = 300, 200
    t = np.arange(c + 1)
    S = sps.gamma.sf(t, 3.0, scale=100.0 / 3)  # P[T > t] = P[X > t] at integer t
    truth = (1 - S[c]) / S[:c].sum()
    assert truth == pytest.approx(
        1 / (1 + sps.gamma.sf(np.arange(1, 5000), 3, scale=100 / 3).sum()), rel=0.01
    )
    rng = np.random.default_rng(8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiagnosticWarning)  # censored chains: said below
        fits = [escape_rate(*gamma_steps(rng, 200, c), max_steps=c, rng=k) for k in range(reps)]
    assert np.mean([f.method == "bootstrap" for f in fits]) >= 0.95  # the test rejects
    law_free = [f.confidence_interval(method="bootstrap") for f in fits if f.method == "bootstrap"]
    exact = [f.confidence_interval(method="exact") for f in fits]
    # 200 replicates: ±3 s.e. of a 95 % coverage is ±0.046
    assert 0.95 - 0.046 <= covered(truth, law_free) <= 0.95 + 0.046
    width = np.median([(h - lo) for lo, h in exact]) / np.median([h - lo for lo, h in law_free])
    assert width > 1.5  # CV ≈ 0.58: the geometric interval is ≈ 1/0.58 too wide
    # negative control: the geometric interval fails the same coverage check (too wide)
    assert not 0.95 - 0.046 <= covered(truth, exact) <= 0.95 + 0.046


def test_memoryless_data_keep_the_exact_interval():
    # negative control: geometric escapes are not rejected and the law's interval stays
    rng = np.random.default_rng(9)
    steps, cens = geometric(rng, 0.01, 200, 300)
    fit = escape_rate(steps, cens, max_steps=300)
    assert fit.memoryless_p > 0.05 and fit.method == "exact" and fit.bootstrap is None
    assert fit.confidence_interval() == law_rate(steps, cens).confidence_interval()
    assert fit.to_frame()["method"].item() == "exact"


def test_rejected_law_says_so_in_its_fields_and_warns_with_censoring():
    rng = np.random.default_rng(10)
    with pytest.warns(DiagnosticWarning, match="geometric law is rejected .* censored"):
        fit = escape_rate(*gamma_steps(rng, 300, 210), max_steps=210)
    row = fit.to_frame().iloc[0]
    assert row["method"] == "bootstrap" and row["memoryless_p"] <= 0.05
    assert math.isnan(row["median"])  # the rejected law's median is not T's
    assert "bootstrap CI" in repr(fit) and "memoryless p" in repr(fit)
    assert escape_rate(*gamma_steps(rng, 300, 10_000), max_steps=10_000).method == "bootstrap"
    with pytest.raises(ValueError, match="needs the bootstrap replicates"):
        law_rate(*gamma_steps(rng, 50, 10_000)).confidence_interval(method="bootstrap")


def test_fit_report_takes_the_law_free_interval_where_the_test_rejects():
    rng = np.random.default_rng(11)
    frames = []
    for beta, mean in ((1.0, 50.0), (2.0, 200.0)):
        T = np.ceil(rng.gamma(3.0, mean / 3, 200))
        frames.append(pd.DataFrame({"beta": beta, "steps": T, "censored": False, "max_steps": 1e6}))
    frames.append(chain_frame(rng, [3.0], math.log(12.5), math.log(4.0), 200, 10**6))
    table, _ = fit_report(pd.concat(frames, ignore_index=True), n_resamples=99)
    assert table["interval"].tolist() == ["bootstrap", "bootstrap", "exact"]
    exact = [
        rate_interval(int(r.events), r.exposure, "geometric", 0.95, "exact")
        for r in table.itertuples()
    ]
    widths = (table["rate_high"] - table["rate_low"]) / [h - lo for lo, h in exact]
    assert (widths[:2] < 0.8).all() and widths[2] == pytest.approx(1.0)
