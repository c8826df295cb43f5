"""The measuring helpers of the noisy-transition study on cases with known answers (the study itself
runs in tests/studies/test_studies.py): the jump and loop estimators on planted sweeps, the
bracket of β_*, the stable mean-field order parameter, and the sweeps' streams."""

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
