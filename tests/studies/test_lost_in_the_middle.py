"""The lost-in-the-middle study's estimate of S_t(s) from the particle system
(studies/lost_in_the_middle/simulation.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from metastab.studies.runner import load_config
from studies.lost_in_the_middle import simulation as sim
from studies.lost_in_the_middle.run import build_causal_weights, coefficients

CFG = load_config("lost-in-the-middle", quick=True)


def _small(**change) -> sim.Simulation:
    return dataclasses.replace(CFG.simulation, **change)


def _first_order(n_tokens: int, sources: np.ndarray, lam: float) -> np.ndarray:
    """d/dt Ŝ at t = 0, exactly at every N: Σ_n ω_n a_n N a_{last, m} (the initial angles are
    independent, so only the direct term of θ̇_last survives)."""
    prof = CFG.profile
    a, w = coefficients(prof.beta_profile, prof.width, prof.modes)
    weights = build_causal_weights(n_tokens, lam)
    return float((w * a).sum()) * n_tokens * weights[-1, sources]


def test_the_estimate_starts_with_the_first_order_slope_of_the_alibi_weights():
    # N = 16, t = 0.02 (one RK4 step of 0.02), 300 starts, seed fixed: Ŝ/t is the exact slope at
    # t = 0 up to O(t) (a_n t (1 + Y/2) < 3 % here) and Monte Carlo; tolerance 4 standard errors
    # plus 5 %. The negative control, the slope of uniform causal weights (λ = 0), must fail.
    n, t = 16, 0.02
    cfg = _small(sources=[1, 8, 15], dt=t, times=[t], bases=[300, 300], batch=100)
    values = sim.correlation_runs(3, n, cfg, CFG.profile)[:, :, 0] / t
    mean, se = values.mean(0), values.std(0, ddof=1) / math.sqrt(len(values))
    tokens = sim.source_tokens(n, cfg)
    slope = _first_order(n, tokens, float(CFG.profile.alibi))
    assert np.all(np.abs(mean - slope) <= 4 * se + 0.05 * slope), (mean, se, slope)
    uniform = _first_order(n, tokens, 0.0)
    assert np.any(np.abs(mean - uniform) > 4 * se + 0.05 * uniform), (mean, se, uniform)


def test_the_estimate_does_not_depend_on_the_batching_of_the_starts():
    cfg = _small(sources=[4, 12], times=[0.5, 1.0], bases=[7, 7])
    whole = sim.correlation_runs(5, 16, dataclasses.replace(cfg, batch=7), CFG.profile)
    split = sim.correlation_runs(5, 16, dataclasses.replace(cfg, batch=3), CFG.profile)
    assert np.array_equal(whole, split)
    more = sim.correlation_runs(5, 16, cfg, CFG.profile, bases=9)
    assert np.array_equal(more[:7], whole), "a start's values do not depend on how many follow"


def test_the_base_run_differs_from_the_source_runs_only_at_the_source():
    cfg = _small(sources=[4, 12], points=8)
    theta, xs = sim.initial_angles(5, 16, range(2), cfg)
    tokens = sim.source_tokens(16, cfg)
    for i, m in enumerate(tokens):
        runs = theta[:, 1 + 8 * i : 1 + 8 * (i + 1)]
        others = np.delete(runs, m, axis=2)
        assert np.array_equal(others, np.repeat(np.delete(theta[:, :1], m, axis=2), 8, axis=1))
        assert np.allclose(runs[..., m], xs[:, i])
        steps = np.diff(np.unwrap(xs[:, i], axis=1), axis=1)
        assert np.allclose(steps, 2 * math.pi / 8)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(sources=[3]), "simulation.sources"),  # s = 3/16 falls on no token of N = 8
        (dict(times=[0.25]), "simulation.times"),
    ],
)
def test_a_source_off_the_token_grid_or_a_time_off_the_step_is_refused(change, message):
    cfg = _small(**change)
    with pytest.raises(ValueError, match=message):
        sim.correlation_runs(1, 8, cfg, CFG.profile, bases=1)
