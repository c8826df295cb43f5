"""The plateau part of the normalisation study: each scheme's speed factor s_i ([KGPR] Table 2)
from a state, the intrinsic time σ = ∫ (1/n) Σ_i dt/s_i as the time change that maps a scheme's
run onto Post-LN's, the horizon that reaches σ_max whatever the trajectory, and the plateau
checks on tables built with known answers (each with a negative control)."""

import math

import numpy as np
import pandas as pd
import pytest

from metastab.engine import simulate
from metastab.models.sphere import SphereFlow
from metastab.studies.runner import load_config
from studies.normalisation import checks as nc
from studies.normalisation import plateaus as npl
from studies.staircase.run import caps

BETA, DT = 8.0, 0.005


def _caps(seed=0):
    return caps([0.0, 0.5, 1.27], 2, 1e-3, 1, np.random.SeedSequence(seed))[0]


def test_speed_factors_are_those_of_table_2():
    beta = 1.0  # the weights spread over the tokens: ‖A_i‖ well below 1
    gen = np.random.default_rng(1)
    theta = gen.normal(size=(2, 5, 3))
    theta /= np.linalg.norm(theta, axis=-1, keepdims=True)
    r = gen.uniform(1, 4, size=(2, 5))
    x, steps = theta * r[..., None], np.array([3, 40])
    # A_i by the definition, token by token
    norm_a = np.empty((2, 5))
    for s in range(2):
        for i in range(5):
            w = np.exp(beta * theta[s] @ theta[s, i])
            norm_a[s, i] = np.linalg.norm((w / w.sum()) @ theta[s])
    expected = {
        "post-ln": np.ones((2, 5)),
        "pre-ln": r,
        "peri-ln": r * norm_a,
        "ngpt": norm_a / 0.5,
        "ln-scaling": np.sqrt(1 + steps * DT)[:, None] * np.ones((2, 5)),
        "mix-ln": np.where(steps[:, None] < 10, 1.0, r),  # τ = 10 dt: steps 0..9 post-LN
    }
    extra = {"ngpt": {"alpha": 0.5}, "mix-ln": {"tau": 10 * DT}}
    for scheme, want in expected.items():
        model = SphereFlow(beta, DT, scheme=scheme, **extra.get(scheme, {}))
        got = npl.speed_factors(model, x, steps)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=scheme)
    # negative control: peri-LN is not pre-LN (‖A_i‖ < 1 off a cluster)
    peri = npl.speed_factors(SphereFlow(beta, DT, scheme="peri-ln"), x, steps)
    assert np.abs(peri / r - 1).min() > 0.05


@pytest.mark.parametrize("scheme", ["pre-ln", "peri-ln", "ngpt", "ln-scaling"])
def test_sigma_maps_a_scheme_onto_post_ln(scheme):
    # (NA) is (SA) in the time σ: the scheme's directions at step k are Post-LN's at σ(k)/dt,
    # up to the O(dt) of the layers and the spread of the s_i (tolerance 0.01 rad); at the same
    # layer they are not (the negative control, > 0.05 rad apart)
    extra = {"ngpt": {"alpha": 0.5}}
    model = SphereFlow(BETA, DT, scheme=scheme, **extra.get(scheme, {}))
    x0 = _caps()
    steps = round(npl.time_at_floor(model, 2.5) / DT)
    at = np.unique(np.round(np.geomspace(1, steps, 400)).astype(np.int64))
    at = np.union1d([0], at)
    run = simulate(model, x0, steps=steps, record_at=at.tolist())
    s = npl.speed_factors(model, run.trajectory[0], at)
    speed = (1 / s).mean(axis=1)
    t = at * DT
    sigma = np.concatenate([[0.0], np.cumsum(np.diff(t) * (speed[1:] + speed[:-1]) / 2)])
    post_at = np.round(sigma / DT).astype(np.int64)
    keep = np.union1d(post_at, at[at <= post_at.max()])
    post = simulate(SphereFlow(BETA, DT), x0, steps=int(post_at.max()) + 1, record_at=keep.tolist())
    states = dict(zip(post.times.tolist(), post.trajectory[0]))

    def angles(x):
        return np.arctan2(x[..., 1], x[..., 0])

    def apart(a, b):
        return float(np.abs(np.angle(np.exp(1j * (angles(a) - angles(b))))).max())

    k = len(at) - 1
    mapped = apart(run.trajectory[0][k], states[int(post_at[k])])
    assert mapped < 0.01, mapped
    same_layer = max(apart(run.trajectory[0][j], states[int(at[j])]) for j in range(len(at))
                     if int(at[j]) in states)  # fmt: skip
    assert same_layer > 0.05, same_layer


@pytest.mark.parametrize("scheme", ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "ln-scaling"])
def test_the_horizon_reaches_sigma_max_and_the_naive_one_does_not(scheme):
    cfg = load_config("normalisation", quick=True)
    p = cfg.plateaus.__class__.from_dict(cfg.plateaus.to_dict() | {"sigma_max": 2.5, "starts": 1})
    extra = {"ngpt": {"alpha": cfg.alpha}, "mix-ln": {"tau": cfg.tau}}
    model = SphereFlow(p.beta, p.dt, scheme=scheme, **extra.get(scheme, {}))
    x0, _ = npl.starts(p, cfg.seed)
    frame, path = npl.scheme_run(model, p, x0)
    assert path["sigma"].iloc[-1] >= 2.5
    assert (np.diff(path["sigma"]) > 0).all()
    if scheme != "post-ln":
        # negative control: Post-LN's horizon (σ = t) falls short for every other scheme
        naive = path.loc[path["step"] <= round(2.5 / p.dt), "sigma"].iloc[-1]
        assert naive < 2.45, naive
    assert frame["k"].iloc[0] == 3 and frame["start"].iloc[0] == 0


def _tables(factor: float, sigma_scale: float = 1.0, starts: int = 6):
    """Post-LN plateaus (k = 3, 2) and a scheme with s = factor: the same plateaus in σ times
    ``sigma_scale``, factor × the layers."""
    gen = np.random.default_rng(3)
    rows, paths = [], []
    for c in range(starts):
        ends = np.cumsum(gen.uniform(300, 400, size=2)).round()
        for scheme, f, scale in (("post-ln", 1.0, 1.0), ("other", factor, sigma_scale)):
            step = np.arange(0, int(f * 1000 * scale) + 1)
            sigma = step * DT / f
            paths.append(pd.DataFrame({"scheme": scheme, "chain": c, "step": step,
                                       "sigma": sigma}))  # fmt: skip
            bounds = [0.0, *(ends * f * scale)]
            for k, (a, b) in zip((3, 2), zip(bounds[:-1], bounds[1:])):
                rows.append({"scheme": scheme, "chain": c, "k": k, "start": a, "end": b,
                             "censored": False, "sigma_start": a * DT / f,
                             "sigma_end": b * DT / f})  # fmt: skip
    return pd.DataFrame(rows), pd.concat(paths, ignore_index=True)


def test_plateau_checks_pass_a_time_change_reject_s_1_and_fail_a_wrong_length():
    cfg = load_config("normalisation")
    cfg = cfg.__class__.from_dict(cfg.to_dict() | {"schemes": ["post-ln", "other"]})
    plateaus, path = _tables(2.0)
    ratios = nc.plateau_ratios(plateaus, path)
    np.testing.assert_allclose(ratios["ratio_sigma"], 1.0)
    np.testing.assert_allclose(ratios["ratio_layers"], 1.0, rtol=1e-9)
    np.testing.assert_allclose(ratios["ratio_equal"], 2.0)
    rows = {r["criterion"]: r for r in nc.plateau_rows(ratios, cfg)}
    assert rows["plateau_sigma_other"]["pass"] == "true"
    assert rows["plateau_sigma_other/power"]["pass"] == "true"  # s = 1 rejected
    assert rows["plateau_layers_other"]["pass"] == "true"
    # negative control: every plateau 8 % longer in σ than Post-LN's (tolerance 5 %)
    ratios = nc.plateau_ratios(*_tables(2.0, sigma_scale=1.08))
    rows = {r["criterion"]: r for r in nc.plateau_rows(ratios, cfg)}
    assert rows["plateau_sigma_other"]["pass"] == "false"
    assert math.isclose(rows["plateau_sigma_other"]["measured"], 1.08, rel_tol=1e-9)


def test_a_censored_plateau_is_left_out_and_one_start_is_not_testable():
    cfg = load_config("normalisation")
    cfg = cfg.__class__.from_dict(cfg.to_dict() | {"schemes": ["post-ln", "other"]})
    plateaus, path = _tables(2.0, starts=2)
    plateaus.loc[(plateaus["chain"] == 1) & (plateaus["k"] == 2), "censored"] = True
    ratios = nc.plateau_ratios(plateaus, path)
    assert len(ratios) == 2 * 2 - 1
    rows = {r["criterion"]: r for r in nc.plateau_rows(ratios, cfg)}
    assert rows["plateau_sigma_other"]["pass"] == "NA"  # one start left at k = 2: no interval


@pytest.mark.parametrize("gap", [[0.5], [0.6, 0.5], [0.4, 0.5, 0.6]])
def test_a_gap_range_that_is_not_low_high_is_refused_naming_it(gap):
    cfg = load_config("normalisation", quick=True)
    p = cfg.plateaus.__class__.from_dict(cfg.plateaus.to_dict() | {"gap_second": gap})
    with pytest.raises(ValueError, match=r"plateaus\.gap_second must be \[low, high\]"):
        npl.starts(p, cfg.seed)
