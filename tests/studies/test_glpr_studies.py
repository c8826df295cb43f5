"""The measuring helpers of the sphere-orthogonal and phase-diagram studies, on cases with known
answers (the studies themselves run in tests/test_studies.py)."""

import math

import numpy as np
import pandas as pd
import pytest

import metastab as ms
from metastab.studies import load_config, study_module

ORTH = study_module("sphere-orthogonal", "run")
ORTH_CHECKS = study_module("sphere-orthogonal", "checks")
DIAGRAM = study_module("phase-diagram", "checks")


@pytest.mark.parametrize("dt", [0.1, 0.05])
def test_crossing_time_is_fourth_order_on_a_known_curve(dt):
    # γ = 1 − e^{−2t}·(1 + sin t / 10): smooth, monotone; the crossing of 1 − δ solved exactly
    def gap(t):
        return np.exp(-2 * t) * (1 + np.sin(t) / 10)

    delta = 1e-3
    from scipy.optimize import brentq

    exact = brentq(lambda t: gap(t) - delta, 0, 10, xtol=1e-14)
    t = np.arange(0, 10, dt)
    got = ORTH.crossing_time(t, 1 - gap(t), delta)
    assert abs(got - exact) < 5 * dt**4  # linear interpolation in γ errs by 2.5e-3 at dt = 0.1
    assert math.isnan(ORTH.crossing_time(t[:5], 1 - gap(t[:5]), delta))  # not reached


def former_uniform_starts(n, d, count, seed, key, reduce):
    """The studies' former helper (with its spawn key as an argument), kept to check that the
    shared sphere_uniform(span=...) draws the same bits."""
    root = np.random.SeedSequence(seed, spawn_key=key)
    out = np.empty((count, n, min(n, d) if reduce else d))
    for c in range(count):
        x = ms.sphere_uniform(n, d, chains=1, rng=root, first_chain=c)[0]
        out[c] = np.linalg.qr(x.T)[1].T if reduce and d > n else x
    return out


def study_starts(quick):
    """(n, d, count, seed, spawn key, span) of every draw of starts the two studies make."""
    calls = []
    c = load_config("phase-diagram", quick=quick)
    n, seed, count = int(c.n), int(c.seed), int(c.realisations)
    calls += [(n, int(d), count, seed, (int(d),), True) for d in c.ds]
    calls.append((n, 2, count, seed, (2,), False))
    d, count = int(c.reduction.d), int(c.reduction.realisations)
    calls += [(n, d, count, seed, (d,), span) for span in (False, True)]
    o = load_config("sphere-orthogonal", quick=quick)
    r, seed = o.random, int(o.seed)
    n, count = int(r.n), int(r.realisations)
    calls += [(n, int(d), count, seed, (1, int(d)), True) for d in r.ds]
    d, count = int(r.check_d), int(r.check_realisations)
    calls += [(n, d, count, seed, (1, d), span) for span in (False, True)]
    return calls


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_study_starts_are_those_of_the_former_helper(quick):
    """Bit for bit, at the seeds and sizes of both configs (full: the first 4 starts of each
    draw; start c does not depend on the count)."""
    for n, d, count, seed, key, span in study_starts(quick):
        count = count if quick else min(count, 4)
        root = np.random.SeedSequence(seed, spawn_key=key)
        new = ms.sphere_uniform(n, d, span=span, chains=count, rng=root)
        old = former_uniform_starts(n, d, count, seed, key, span)
        assert new.shape == old.shape and new.tobytes() == old.tobytes(), (n, d, key, span)


def test_order_fit_reads_the_slope_and_skips_the_roundoff_floor():
    dt = np.array([0.4, 0.2, 0.1, 0.05])
    crossing = pd.DataFrame(
        {
            "attention": "softmax",
            "scheme": "rk4",
            "n": 32,
            "beta": 1.0,
            "dt": dt,
            "max_error": np.maximum(3 * dt**4, 1e-13),
            "t_star": 5.0,
            "t_star_sim": 5.0 + 0.2 * dt,
        }
    )
    assert ORTH_CHECKS.orders(crossing, "softmax", "rk4", 1e-11)["order"].iloc[0] == (
        pytest.approx(4)
    )
    by_time = ORTH_CHECKS.orders(crossing, "softmax", "rk4", 1e-11, "t_star_error")
    assert by_time["order"].iloc[0] == pytest.approx(1)
    crossing.loc[3, "max_error"] = 1e-13  # at the floor: left out
    assert ORTH_CHECKS.orders(crossing, "softmax", "rk4", 1e-11)["points"].iloc[0] == 3


def test_mismatch_is_zero_on_the_curve_and_counts_a_shifted_transition():
    t = np.arange(0, 30.01, 0.5)
    boundary = pd.DataFrame({"beta": [0.0, 4.0, 9.0], "t_star": [5.2, 7.0, np.nan]})
    rows = []
    for d, shift in ((2, 3.0), (1024, 0.0)):
        for beta, t_star in zip(boundary["beta"], boundary["t_star"]):
            edge = np.inf if np.isnan(t_star) else t_star + shift
            rows.append(
                pd.DataFrame(
                    {"d": d, "beta": beta, "t": t, "pair_fraction": (t >= edge).astype(float)}
                )
            )
    diagram = pd.concat(rows, ignore_index=True)
    m = DIAGRAM.mismatch(diagram, boundary, 0.5, "t_star")
    assert m[1024] == 0
    # a transition 3 time units late: 6 cells of 61 on each of the two β with a finite t*
    assert m[2] == pytest.approx(12 / (3 * len(t)))


def test_transition_time_interval_brackets_a_sharp_transition_and_rejects_a_late_curve():
    # a step from 0 to 1 between the kept times 7.0 and 7.5 (no noise: se = 0), and a β whose
    # transition lies beyond the window
    t = np.arange(0, 30.01, 0.5)
    rows = [
        pd.DataFrame(
            {"d": 1024, "beta": beta, "t": t, "pair_fraction": (t >= edge).astype(float)}
        ).assign(pair_fraction_se=0.0)
        for beta, edge in ((4.0, 7.2), (9.0, np.inf))
    ]
    times = DIAGRAM.transitions(pd.concat(rows, ignore_index=True), 0.5, 3.0)
    sharp = times.set_index("beta").loc[4.0]
    assert (sharp["low"], sharp["high"]) == (7.0, 7.5)
    assert sharp["low"] <= sharp["time"] <= sharp["high"]
    assert math.isnan(times.set_index("beta").loc[9.0, "high"])  # not reached
    curve = pd.Series({4.0: 7.2, 9.0: np.nan})  # t* of the β beyond the window: NaN
    assert DIAGRAM.time_misses(times, curve)["miss"].max() == 0
    late = DIAGRAM.time_misses(times, 1.2 * curve)["miss"].max()  # negative control
    assert late == pytest.approx(1 - 7.5 / (1.2 * 7.2)) and late > 0.1


def test_a_noisy_crossing_widens_the_interval_by_the_band():
    t = np.arange(0, 10.01, 0.5)
    p = np.clip((t - 3.0) / 4.0, 0, 1)  # crosses 0.5 at t = 5 exactly
    diagram = pd.DataFrame(
        {"d": 8, "beta": 0.0, "t": t, "pair_fraction": p, "pair_fraction_se": 0.05}
    )
    row = DIAGRAM.transitions(diagram, 0.5, 2.0).iloc[0]
    assert row["time"] == pytest.approx(5.0)
    # p ± 0.1 leaves the level between t = 4.5 (p + 0.1 = 0.475) and 5.5 (p − 0.1 = 0.525)
    assert (row["low"], row["high"]) == (4.5, 5.5)
