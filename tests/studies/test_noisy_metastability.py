"""The measuring helpers of the noisy-metastability study on cases with known answers (the
study itself runs in tests/studies/test_studies.py): the fits of log E[T] = a + bN on exact
geometric and exponential samples, the continued levels, the theory it compares with."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from metastab.studies import load_config, study_module
from metastab.theory.noisy import (
    critical_coupling,
    critical_coupling_linear,
    fold_coupling,
    free_energy_barrier,
    stationary_branch,
)

RUN = study_module("noisy-metastability", "run")
CHECKS = study_module("noisy-metastability", "checks")


def _sample(a, b, c=0.0, *, ns=(40, 80, 120, 160), chains=300, budget=10**7, seed=3):
    """Chains with T ~ Geometric(1 / E[T]), E[T] = N^c e^(a + bN) steps, censored at budget."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in ns:
        t = rng.geometric(1 / (n**c * math.exp(a + b * n)), chains)
        rows.append(pd.DataFrame({"direction": "forward", "n": n, "level": 0.6,
                                  "chain": np.arange(chains), "steps": np.minimum(t, budget),
                                  "censored": t > budget, "max_steps": budget}))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def test_plain_fit_recovers_the_exponent_and_rejects_half_of_it():
    # fixed seed; the 95 % profile interval contains b = 0.03 and excludes 0.015 (negative
    # control: the study's power prediction, a barrier half as large)
    fit, _ = RUN.fit(_sample(5.0, 0.03), "plain", "forward", 2)
    lo, hi = fit.confidence_interval("slope")
    assert lo <= 0.03 <= hi, (lo, hi)
    assert not lo <= 0.015 <= hi


def test_orbit_fit_recovers_the_exponent_under_its_stated_prefactor():
    # E[T] = N^(−1/2) e^(5 + 0.03 N): the orbit form (c = −1/2 fixed, the exponential law on
    # T / N^c) contains 0.03; the plain form, which lacks the prefactor, is biased low by
    # (1/2) d log N / dN ≈ 0.005 here, and its interval excludes 0.03 (negative control)
    frame = _sample(5.0, 0.03, -0.5, chains=3000, seed=4)
    assert RUN.orbit_exponent("forward", 2) == -0.5 and RUN.orbit_exponent("reverse", 2) == 0.0
    orbit, _ = RUN.fit(frame, "orbit", "forward", 2)
    lo, hi = orbit.confidence_interval("slope")
    assert lo <= 0.03 <= hi, (lo, hi)
    plain, _ = RUN.fit(frame, "plain", "forward", 2)
    lo, hi = plain.confidence_interval("slope")
    assert hi < 0.03, (lo, hi)


def test_fits_table_intervals_and_the_miss():
    cfg = load_config("noisy-metastability", quick=True)
    chains = _sample(4.0, 0.03, ns=(16, 24, 32), chains=200)
    chains = pd.concat([chains, chains.assign(level=0.75)], ignore_index=True)
    table = RUN.fits(chains, cfg)
    main = CHECKS.select(table, "forward", 0.6, "plain", 16)
    lo, hi = CHECKS.interval(main)
    # the wider of profile and bootstrap intervals
    assert lo <= min(main["b_low"], main["b_boot_low"])
    assert hi >= max(main["b_high"], main["b_boot_high"])
    assert CHECKS.miss(0.5, 0.0, 1.0) == 0.0
    assert CHECKS.miss(2.0, 0.0, 1.0) == pytest.approx(0.5)
    assert CHECKS.miss(-1.0, 0.0, 1.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no single fit"):
        CHECKS.select(table, "forward", 0.6, "plain", 99)


def test_continued_levels_add_up_and_censor_at_the_budget():
    # a tiny run: the time to the second level is at least the time to the first, chain by
    # chain, and every time is at most the budget (censored there)
    cfg = load_config("noisy-metastability", quick=True)
    cfg = replace(cfg, max_steps=400, forward=replace(cfg.forward, ns=[8], chains=[12]))
    th = RUN.theory(cfg)
    chains, costs = RUN.escapes(cfg, "forward", float(th.loc[0, "K"]))
    first, second = (chains[np.isclose(chains["level"], lv)] for lv in cfg.forward.levels)
    assert (second["steps"].to_numpy() >= first["steps"].to_numpy()).all()
    assert (chains["steps"] <= 400).all()
    assert (chains.loc[chains["censored"], "steps"] == 400).all()
    assert (first["censored"].to_numpy() <= second["censored"].to_numpy()).all()
    assert list(costs["level"]) == list(cfg.forward.levels)


def test_theory_of_both_directions():
    # forward: the barrier is free_energy_barrier at K; reverse: the cluster's free energy is 0
    # at K_c (its definition), positive below, so the reverse barrier is below the saddle's
    cfg = load_config("noisy-metastability")
    th = RUN.theory(cfg).set_index("direction")
    beta, d = float(cfg.beta), int(cfg.d)
    assert th.loc["forward", "barrier"] == pytest.approx(
        free_energy_barrier(th.loc["forward", "K"], beta, d), rel=1e-12
    )
    k_c, k_sharp, k_fold = (
        critical_coupling(beta, d),
        critical_coupling_linear(beta, d),
        fold_coupling(beta, d),
    )
    assert k_c < th.loc["forward", "K"] < k_sharp and k_fold < th.loc["reverse", "K"] < k_c
    branch = stationary_branch(beta, d)
    assert abs(RUN._cluster(branch, k_c)[1]) < 1e-10
    f_cluster = th.loc["reverse", "cluster_free_energy"]
    assert 0 < f_cluster < th.loc["reverse", "saddle_free_energy"]
    # the orders: saddle below the cluster, both stationary states at K
    m_s, m_c = th.loc["forward", "saddle_order"], th.loc["forward", "cluster_order"]
    assert 0 < m_s < m_c < 1
    assert branch.solve(m_s)[0] == pytest.approx(th.loc["forward", "K"], rel=1e-10)
    assert branch.solve(m_c)[0] == pytest.approx(th.loc["forward", "K"], rel=1e-10)
