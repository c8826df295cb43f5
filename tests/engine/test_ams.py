"""The AMS core (metastab.engine.ams, metastab.results.ams) on chains with known answers.

Fast tier: unbiasedness on the lattice Ornstein-Uhlenbeck (Ehrenfest) chain, whose score has
atoms, against the gambler's-ruin sum, with the naive estimator (no tie rule) as the negative
control that must fail (Walter 2015); the AR(1) Ornstein-Uhlenbeck chain against quadrature;
reproducibility (a run's bits do not depend on the other runs); the refusals.
The statistical checks at P ~ 1e-12 and the coverage over hundreds of runs are in
test_ams_validation.py (slow tier).
"""

import math

import numpy as np
import pytest
from ams_cases import BirthDeath, GaussianChain, ehrenfest_committor, gaussian_committor

from metastab.engine.ams import run_ams
from metastab.exceptions import DiagnosticWarning
from metastab.results.ams import AMSResult

RHO = 0.9
S = math.sqrt(1 - RHO**2)  # stationary variance 1


def _result(out, kill_ties=True):
    return AMSResult.from_runs(
        out, out.replicas, budget_hits=out.budget_hits, paths=out.paths, kill_ties=kill_ties
    )


def _z(out, truth):
    """(mean − truth) / standard error of the mean over the runs."""
    e = out.estimates
    return (e.mean() - truth) / (e.std(ddof=1) / math.sqrt(e.size))


def test_quadrature_truth_agrees_with_direct_simulation():
    # the truth of the OU cases, checked where direct simulation resolves it (p ~ 0.1)
    truth = gaussian_committor(lambda x: RHO * x, S, 0.0, 2.0, 0.5)
    assert truth == pytest.approx(
        gaussian_committor(lambda x: RHO * x, S, 0.0, 2.0, 0.5, panels=400), rel=1e-12
    )
    ch = GaussianChain(lambda X: RHO * X, S, 0.0, 2.0)
    C = 4_000
    ids = np.zeros((C, 3), np.uint64)
    ids[:, 0], ids[:, 2] = 7, np.arange(C)
    segs = ch.advance(np.full((C, 1), 0.5), np.zeros(C), ch.score(np.full((C, 1), 0.5)), ids)
    p = np.mean([sg.status == 1 for sg in segs])
    assert abs(p - truth) < 4 * math.sqrt(truth * (1 - truth) / C)  # 4 sigma
    assert abs(p - 1.5 * truth) > 4 * math.sqrt(truth * (1 - truth) / C)  # it could fail


def test_ties_unbiased_on_a_lattice_and_the_naive_estimator_is_not():
    # Ehrenfest chain on {0..40} from 21, B = {36}, A = {<= 20}: p = 1.0e-6; the score has an
    # atom at every integer. Generalised AMS with the tie rule: unbiased (|z| < 4); the naive
    # variant (kill one, branch at >= Z): off by orders of magnitude (Walter 2015).
    M, a, b, x = 40, 20, 36, 21
    truth = ehrenfest_committor(M, a, b, x)
    assert truth == pytest.approx(1.0153196287e-06, rel=1e-9)
    chain = BirthDeath(M, a, b)
    good, _ = run_ams(chain, np.array([float(x)]), replicas=50, runs=100, rng=2)
    assert abs(_z(good, truth)) < 4
    # the naive variant, on a smaller lattice (it needs many more iterations): p = 1.5e-3
    M, a, b, x = 20, 10, 18, 11
    truth = ehrenfest_committor(M, a, b, x)
    chain = BirthDeath(M, a, b)
    good, _ = run_ams(chain, np.array([float(x)]), replicas=10, runs=100, rng=3)
    assert abs(_z(good, truth)) < 4
    naive, _ = run_ams(chain, np.array([float(x)]), replicas=10, runs=40, rng=3, kill_ties=False)
    assert naive.estimates.mean() < 0.1 * truth  # the negative control fails by far
    assert abs(_z(naive, truth)) > 4


def test_ou_unbiased_against_quadrature():
    # AR(1) OU, A = {x <= 0}, B = {x >= 3.5}, from 0.5: p = 2.3e-3 (quadrature)
    truth = gaussian_committor(lambda x: RHO * x, S, 0.0, 3.5, 0.5)
    chain = GaussianChain(lambda X: RHO * X, S, 0.0, 3.5)
    out, _ = run_ams(chain, np.array([0.5]), replicas=20, runs=60, rng=5)
    assert abs(_z(out, truth)) < 4
    low, high = _result(out).confidence_interval()
    assert low < truth < high
    assert not (low < 2 * truth < high)  # the interval is tight enough to fail


DT = 0.05


def _double_well(x):
    """Euler step of dx = −V'(x) dt, V(x) = x⁴/4 − x²/2 (wells at ±1, barrier 1/4 at 0)."""
    return x - DT * (x**3 - x)


def test_double_well_unbiased_against_quadrature():
    # Euler-Maruyama of the double well at β = 20, A = {x <= −0.9}, B = {x >= 0.9}, from
    # −0.8: p = 2.15e-3 (quadrature, converged to 1e-14 between 200 and 400 panels)
    s = math.sqrt(2 * DT / 20.0)
    truth = gaussian_committor(_double_well, s, -0.9, 0.9, -0.8, panels=400)
    assert truth == pytest.approx(gaussian_committor(_double_well, s, -0.9, 0.9, -0.8), rel=1e-9)
    chain = GaussianChain(_double_well, s, -0.9, 0.9)
    out, _ = run_ams(chain, np.array([-0.8]), replicas=20, runs=60, rng=6)
    assert abs(_z(out, truth)) < 4
    low, high = _result(out).confidence_interval()
    assert low < truth < high
    assert not (low < 2 * truth < high)


def test_a_run_is_a_function_of_the_seed_and_its_index():
    # run r's bits do not depend on how many runs go along (they share the stepper's batches)
    chain = GaussianChain(lambda X: RHO * X, S, 0.0, 3.0)
    few, s1 = run_ams(chain, np.array([0.5]), replicas=10, runs=3, rng=11)
    more, s2 = run_ams(chain, np.array([0.5]), replicas=10, runs=7, rng=11)
    assert s1 == s2
    np.testing.assert_array_equal(few.estimates, more.estimates[:3])
    np.testing.assert_array_equal(few.iterations, more.iterations[:3])
    other, _ = run_ams(chain, np.array([0.5]), replicas=10, runs=3, rng=12)
    assert not np.array_equal(few.estimates, other.estimates)


def test_entrance_law_starts():
    # each replica its own start: starts all at 0.5 give the bits of the fixed start
    chain = GaussianChain(lambda X: RHO * X, S, 0.0, 3.0)
    fixed, _ = run_ams(chain, np.array([0.5]), replicas=10, runs=3, rng=4)
    drawn, _ = run_ams(chain, np.full((3, 10, 1), 0.5), replicas=10, runs=3, rng=4, entrance=True)
    np.testing.assert_array_equal(fixed.estimates, drawn.estimates)
    with pytest.raises(ValueError, match=r"start must have shape \(runs, replicas"):
        run_ams(chain, np.full((2, 10, 1), 0.5), replicas=10, runs=3, rng=4, entrance=True)


def test_horizon_gives_the_time_limited_probability():
    # P[τ_B <= t, τ_B < τ_A] decreases with t's shrinking; at t = 1 it is the one-step jump
    from scipy import special

    chain = GaussianChain(lambda X: RHO * X, S, 0.0, 2.0, horizon=1)
    out, _ = run_ams(chain, np.array([0.5]), replicas=20, runs=200, rng=3)
    truth = float(special.ndtr((RHO * 0.5 - 2.0) / S))
    assert abs(_z(out, truth)) < 4


def test_refusals():
    chain = GaussianChain(lambda X: RHO * X, S, 0.0, 3.0)
    with pytest.raises(ValueError, match="replicas must be >= 2, got 1"):
        run_ams(chain, np.array([0.5]), replicas=1, runs=3, rng=1)
    with pytest.raises(ValueError, match="runs must be >= 1, got 0"):
        run_ams(chain, np.array([0.5]), replicas=5, runs=0, rng=1)
    one, _ = run_ams(chain, np.array([0.5]), replicas=5, runs=1, rng=1)
    with pytest.raises(ValueError, match="one AMS run gives no interval"):
        _result(one).confidence_interval()
    # a score that never moves: every replica at one level, every run extinct
    flat = GaussianChain(lambda X: RHO * X, S, 0.0, 3.0, score=lambda X: np.zeros(len(X)))
    dead, _ = run_ams(flat, np.array([0.5]), replicas=5, runs=4, rng=1)
    assert dead.extinct.all() and (dead.estimates == 0).all()
    with pytest.raises(ValueError, match="all 4 AMS runs ended with p̂ = 0"):
        _result(dead).confidence_interval()
    with pytest.raises(ValueError, match="method must be one of"):
        _result(run_ams(chain, np.array([0.5]), replicas=5, runs=3, rng=1)[0]).confidence_interval(
            method="x"
        )
    with pytest.raises(ValueError, match="max_iterations=2"):
        run_ams(chain, np.array([0.5]), replicas=5, runs=2, rng=1, max_iterations=2)


def test_some_extinct_runs_warn():
    # Ehrenfest with 5 replicas: some runs go extinct (all at one atom); the interval warns
    chain = BirthDeath(20, 10, 18)
    out, _ = run_ams(chain, np.array([11.0]), replicas=5, runs=20, rng=1)
    assert 0 < out.extinct.sum() < 20
    with pytest.warns(DiagnosticWarning, match="AMS runs went extinct"):
        _result(out).confidence_interval()
