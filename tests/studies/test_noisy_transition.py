"""The measuring helpers of the noisy-transition study on cases with known answers (the study itself
runs in tests/studies/test_studies.py): the jump and loop estimators on planted sweeps, the
bracket of β_*, the stable mean-field order parameter, the sweeps' streams, and the ratio
U = E[m_1^4]/E[m_1^2]^2 (its estimator on planted laws, its mean-field prediction, the power
analysis of its crossing)."""

import math

import numpy as np
import pandas as pd
import pytest

from metastab.studies import load_config, study_module
from metastab.theory.noisy import critical_coupling, critical_coupling_linear, stationary_branch

RUN = study_module("noisy-transition", "run")
CHECKS = study_module("noisy-transition", "checks")
FACTORS = np.round(np.arange(0.8, 1.161, 0.02), 2)


def _planted(up: float, down: float, chains: int = 6, spread: float = 0.0, seed: int = 3):
    """Sweeps whose m_1 is a step: 0.1 below the chain's jump and 0.8 above it (up at ``up``,
    down at ``down``, each chain's jumps moved by a uniform offset of ±``spread``)."""
    rng = np.random.default_rng(seed)
    stages = RUN.schedule(list(FACTORS))
    rows = []
    for c in range(chains):
        u, v = up + spread * rng.uniform(-1, 1), down + spread * rng.uniform(-1, 1)
        clustered = False
        for s, (direction, f) in enumerate(stages):
            clustered = f >= u if direction == "up" else f > v
            rows.append(dict(set="main", beta=5.0, n=256, stage_time=12.0, dt=0.005, chain=c,
                             stage=s, direction=direction, factor=f, m1=0.8 if clustered else 0.1,
                             m2=0.0, clustered=float(clustered)))  # fmt: skip
    return pd.DataFrame(rows)


def test_crossings_of_a_planted_loop_are_found_between_the_grid_points_around_them():
    # m_1 steps between 0.1 and 0.8 between grid points: the level 0.5 is crossed 4/7 of the
    # way up, 3/7 of the way down
    j = CHECKS.jumps(_planted(up=0.95, down=0.89), 0.5)
    assert np.allclose(j["up"], 0.94 + 0.02 * 4 / 7) and np.allclose(j["down"], 0.9 - 0.02 * 3 / 7)
    assert not j["censored"].any()
    # a loop never closed inside the grid is censored at its bottom
    low = CHECKS.jumps(_planted(up=0.95, down=0.7), 0.5)
    assert low["censored"].all() and np.allclose(low["down"], 0.8)


def test_the_open_and_closed_rules_tell_a_planted_loop_from_none():
    # fixed seed; per-chain jitter ±0.01 of the jumps; negative control: no loop
    cfg = load_config("noisy-transition")
    tol = float(cfg.checks.width_tolerance)
    wide = CHECKS.loops(_planted(up=0.95, down=0.89, spread=0.01), cfg)
    none = CHECKS.loops(_planted(up=0.95, down=0.95 - 1e-9, spread=0.01), cfg)
    assert wide["width"].iloc[0] == pytest.approx(0.06, abs=0.015)
    assert CHECKS._open(wide, tol).all() and not CHECKS._closed(wide, tol).any()
    assert CHECKS._closed(none, tol).all() and not CHECKS._open(none, tol).any()


def test_bracket_is_the_grid_interval_where_the_loop_opens_for_good():
    lp = pd.DataFrame(
        {
            "beta": [1.5, 2.0, 4.0, 5.0, 6.0],
            "width": [0.0, 0.0, 0.005, 0.04, 0.06],
            "width_half": [0.005, 0.005, 0.01, 0.01, 0.01],
        }
    )
    assert CHECKS.bracket(lp, 0.01) == (4.0, 5.0)
    # negative control: no loop open anywhere, no bracket
    assert all(math.isnan(x) for x in CHECKS.bracket(lp.assign(width=0.0), 0.01))
    # a loop open at a smaller β but closed again above does not count as the opening
    again = lp.assign(width=[0.0, 0.05, 0.0, 0.04, 0.06])
    assert CHECKS.bracket(again, 0.01) == (4.0, 5.0)


@pytest.mark.parametrize("beta", [2.0, 5.0])
def test_stable_order_is_zero_up_to_k_c_then_the_clustered_branch(beta):
    ks, kc = critical_coupling_linear(beta, 2), critical_coupling(beta, 2)
    assert CHECKS.stable_order(beta, 2, 0.99 * kc / ks) == 0.0
    br = stationary_branch(beta, 2)
    stable = br.index == 0
    k = br.coupling[stable][-5]
    assert CHECKS.stable_order(beta, 2, k / ks) == pytest.approx(br.order[stable][-5], abs=1e-12)
    # above β_* the order parameter jumps at K_c: not small just above it; below, it is small
    just = CHECKS.stable_order(beta, 2, 1.001 * kc / ks)
    assert (just > 0.3) if beta > 2.4469 else (0 < just < 0.1)


def test_a_sweeps_chains_do_not_depend_on_how_many_run_beside_them():
    kw = dict(beta=5.0, d=2, factors=[0.9, 1.0], n=8, dt=0.01, equilibrate=0.1, average=0.1,
              spacing=0.05, level=0.5)  # fmt: skip
    two = pd.DataFrame(RUN.sweep(np.random.SeedSequence(1, spawn_key=(0,)), chains=2, **kw))
    three = pd.DataFrame(RUN.sweep(np.random.SeedSequence(1, spawn_key=(0,)), chains=3, **kw))
    assert two.equals(three[three["chain"] < 2].reset_index(drop=True))
    # another root gives other numbers (negative control)
    other = pd.DataFrame(RUN.sweep(np.random.SeedSequence(2, spawn_key=(0,)), chains=2, **kw))
    assert not np.allclose(two["m1"], other["m1"])


BINDER = study_module("noisy-transition", "binder")


def _power_law(power: int, chains: int = 60, samples: int = 400, seed: int = 5) -> np.ndarray:
    """Samples of m with density ∝ m exp(−m^power): m^power is Gamma(2/power)-distributed."""
    s = np.random.default_rng(seed).gamma(2 / power, size=(chains, samples))
    return s ** (1 / power)


def test_binder_ratio_of_planted_quartic_and_sextic_laws_is_their_closed_form():
    # fixed seed, 24 000 samples each; 95 % bootstrap intervals over 60 chains
    rng = np.random.default_rng(7)
    quartic = BINDER.binder_interval(_power_law(4), 0.95, 400, rng)
    sextic = BINDER.binder_interval(_power_law(6), 0.95, 400, rng)
    assert quartic[1] <= BINDER.QUARTIC <= quartic[2]
    assert sextic[1] <= BINDER.SEXTIC <= sextic[2]
    # negative control: the sextic law's interval excludes the quartic value, and back
    assert not sextic[1] <= BINDER.QUARTIC <= sextic[2]
    assert not quartic[1] <= BINDER.SEXTIC <= quartic[2]
    # a bimodal law far from 0 (m = 0.8 ± 0.01) gives U near 1; a Gaussian 2-vector, 2
    m = 0.8 + 0.01 * np.random.default_rng(8).standard_normal(5000)
    assert BINDER.binder_ratio(m) == pytest.approx(1.0, abs=1e-3)
    g = np.hypot(*np.random.default_rng(9).standard_normal((2, 40000)))
    assert BINDER.binder_ratio(g) == pytest.approx(2.0, abs=0.05)
    with pytest.raises(ValueError, match="m must hold"):
        BINDER.binder_ratio(np.array([-0.1, 0.2]))


def test_constrained_free_energy_is_landau_near_zero_and_stationary_on_the_branch():
    # near m = 0: F_K(m) ≈ (1 − K/K_#) m² (d = 2; the entropy of 1 + 2m cos θ is m²)
    ks = critical_coupling_linear(2.0, 2)
    m, F = BINDER.constrained_free_energy(2.0, 0.5 * ks)
    assert F[1] / m[1] ** 2 == pytest.approx(0.5, abs=2e-3)
    # at a stationary state of stationary_branch (β = 4, the saddle at m = 0.5) dF/dm = 0;
    # negative control: not at m = 0.3 or 0.7
    from scipy.interpolate import CubicSpline

    br = stationary_branch(4.0, 2)
    i = int(np.argmin(np.abs(br.order - 0.5)))
    m, F = BINDER.constrained_free_energy(4.0, float(br.coupling[i]))
    slope = CubicSpline(m, F).derivative()
    assert abs(slope(br.order[i])) < 1e-4
    assert min(abs(slope(0.3)), abs(slope(0.7))) > 1e-2
    with pytest.raises(ValueError, match="d must be 2"):
        BINDER.constrained_free_energy(2.0, 1.0, 3)


def test_predicted_binder_has_its_limits_and_the_ou_variance():
    # large N at K_#: π/2 below β_*, the sextic value at β_*, 1 above (1 % tolerance)
    star = 2.446918311289047
    assert BINDER.predicted_binder(1.0, 100000)[0] == pytest.approx(BINDER.QUARTIC, abs=0.015)
    assert BINDER.predicted_binder(star, 100000)[0] == pytest.approx(BINDER.SEXTIC, abs=0.015)
    assert BINDER.predicted_binder(3.0, 100000)[0] == pytest.approx(1.0, abs=0.015)
    # negative control: the β below β_* is not at the sextic value
    assert abs(BINDER.predicted_binder(1.0, 100000)[0] - BINDER.SEXTIC) > 0.05
    # far below K_# the order parameter is an Ornstein–Uhlenbeck 2-vector at rate 1 − K/K_#:
    # the influence function of U is 2 L_2(m² / E[m²]) (a Laguerre polynomial), which decays
    # at rate 4 (1 − K/K_#) with variance 4, so v = 2 / (1 − K/K_#)
    for f in (0.01, 0.5):
        u, v = BINDER.predicted_binder(2.0, 4096, f)
        assert u == pytest.approx(2.0, abs=0.01)
        assert v == pytest.approx(2 / (1 - f), rel=0.02)


def test_the_quick_config_path_of_the_power_analysis():
    cfg = load_config("noisy-transition", quick=True)
    assert CHECKS.binder_pairs(cfg) == [(64, 128)]
    # the cost: points / 2 × (T / dt) × (N_1² + N_2²) pair-steps at the given speed
    assert CHECKS.stage_seconds(10.0, (64, 128), cfg, 1e6) == pytest.approx(
        4 / 2 * 10.0 / 0.005 * (64**2 + 128**2) / 1e6
    )
    rows = {r["criterion"]: r for r in CHECKS._binder(cfg, 3e8)}
    cross = rows["binder_crossing_n64_128"]["measured"]
    # the mean-field crossing of N = 64, 128 lies beyond β_* + 0.1: no run length meets the
    # target, so the fewest seconds is infinite; without a run time it is unknown
    assert cross > 2.4469 + 0.1
    assert math.isinf(rows["binder_power"]["measured"])
    unknown = {r["criterion"]: r for r in CHECKS._binder(cfg, math.nan)}
    assert math.isnan(unknown["binder_power"]["measured"])
    bad = cfg.from_dict(cfg.to_dict() | {"binder": cfg.binder.to_dict() | {"pairs": [[128, 64]]}})
    with pytest.raises(ValueError, match="binder.pairs"):
        CHECKS.binder_pairs(bad)


@pytest.mark.slow
def test_the_power_analysis_variance_matches_simulated_chains_at_k_sharp():
    # NoisySphere at N = 64, β = 2.45 ≈ β_*, effective coupling K_# (nominal (1 − 4 dt) K_#),
    # 32 chains of T = 100 after 20 of burn-in, fixed seed: the spread of the chains' U against
    # v / T of the Landau dynamics (99 % χ² bounds of a variance over 32 chains), and the pooled
    # U against the mean-field one (3 standard errors); ~10 s on one thread
    from scipy.stats import chi2

    from metastab.engine import simulate
    from metastab.models.sphere import NoisySphere
    from metastab.order import order_parameters
    from metastab.setups.sphere import sphere_uniform

    n, beta, dt, chains, T = 64, 2.45, 0.005, 32, 100.0
    model = NoisySphere(beta, (1 - 4 * dt) * critical_coupling_linear(beta, 2), dt)
    start, burn, noise = np.random.SeedSequence(11).spawn(3)
    x = simulate(model, sphere_uniform(n, 2, chains=chains, rng=start), steps=4000, rng=burn,
                 progress=False).final  # fmt: skip
    steps, every = int(T / dt), 20
    run = simulate(model, x, steps=steps, rng=noise, record_at=list(range(every, steps + 1, every)),
                   progress=False)  # fmt: skip
    m = order_parameters(run.trajectory.reshape(-1, n, 2))[:, 0].reshape(chains, -1)
    u_pred, v = BINDER.predicted_binder(beta, n)
    spread = ((m**4).mean(1) / (m**2).mean(1) ** 2).var(ddof=1)
    lo, hi = chi2.ppf([0.005, 0.995], chains - 1) / (chains - 1)
    assert lo <= spread / (v / T) <= hi
    # power: a correlation time 3 times shorter or longer is rejected
    assert not lo <= spread / (v / 3 / T) <= hi and not lo <= spread / (3 * v / T) <= hi
    assert abs(BINDER.binder_ratio(m) - u_pred) <= 3 * math.sqrt(v / (chains * T))
