"""Step sizes beyond a scheme's stable range are said (StepSizeWarning), with the range that
SphereFlow.stable_dt derives; the planted runs show what goes wrong beyond it."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import metastab as ms
from metastab.exceptions import StepSizeWarning
from metastab.models.sphere import RK4_INTERVAL

X0 = ms.sphere_uniform(6, 3, rng=1)


@pytest.mark.parametrize(
    ("model", "limit"),
    [
        (ms.SphereFlow(1.0, 10.0), "dt <= 1 "),
        (ms.SphereFlow(1.0, 5.0, scheme="rk4"), "dt <= 2.785"),
        (ms.SphereFlow(1.0, 2.5, scheme="pre-ln"), "dt <= 2 "),
        (ms.SphereFlow(2.0, 6.0, attention="unnormalized"), f"dt <= {2 * math.e:.4g}"),
        (ms.SphereFlow(2.0, 0.5, scheme="rk4", attention="unnormalized"), "dt <= 0.3769"),
        (ms.SphereFlow(1.0, 0.6, V=2 * np.eye(3)), "dt <= 0.5 "),
    ],
)
def test_a_step_beyond_the_stable_range_warns_with_the_range(model, limit):
    with pytest.warns(StepSizeWarning, match=f"dt = {model.dt:g} is beyond") as record:
        ms.simulate(model, X0, steps=1)
    assert limit in str(record[0].message)
    assert record[0].filename == __file__  # at the caller's line


@pytest.mark.parametrize(
    "model",
    [
        ms.SphereFlow(1.0, 0.99),
        ms.SphereFlow(1.0, 2.7, scheme="rk4"),
        ms.SphereFlow(1.0, 2.0, scheme="pre-ln"),
        ms.SphereFlow(2.0, 5.4, attention="unnormalized"),
        ms.SphereFlow(2.0, 0.37, scheme="rk4", attention="unnormalized"),
        ms.SphereChain(1.0, 1.0),
    ],
)
def test_a_step_within_the_range_is_quiet(model):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ms.simulate(model, X0, steps=1)


def test_the_rk4_interval_is_where_its_amplification_reaches_one():
    z = -RK4_INTERVAL
    assert 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24 == pytest.approx(1.0, abs=1e-12)
    assert RK4_INTERVAL == pytest.approx(2.7853, abs=1e-4)


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0, 5.0])
def test_the_post_ln_usa_range_is_the_largest_opposing_weight(beta):
    """1 / stable_dt = max over cosines c in [-1, 0] of -c e^(beta c), found on a grid."""
    c = np.linspace(-1.0, 0.0, 100_001)
    largest = float((-c * np.exp(beta * c)).max())
    model = ms.SphereFlow(beta, 0.1, attention="unnormalized")
    assert 1 / model.stable_dt(3) == pytest.approx(largest, rel=1e-8)


def test_the_range_scales_with_the_value_matrix():
    assert ms.SphereFlow(1.0, 0.1, V=2 * np.eye(3)).stable_dt(3) == pytest.approx(0.5)


def _spread(x: np.ndarray) -> float:
    return float(np.linalg.norm(x - x.mean(axis=0)))


def test_rk4_beyond_the_range_leaves_a_cluster_within_it_contracts():
    """Planted: tokens 1e-4 around one point (V = I, softmax: deviations decay at rate 1).
    RK4 amplifies them at dt = 3 > 2.785 and damps them at dt = 2.5 (fixed start)."""
    rng = np.random.default_rng(0)
    e = np.array([1.0, 0.0, 0.0])
    x0 = e + 1e-4 * rng.normal(size=(5, 3))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)
    spread = {}
    for dt in (2.5, 3.0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StepSizeWarning)
            final = ms.simulate(ms.SphereFlow(1.0, dt, scheme="rk4"), x0, steps=10).final[0]
        spread[dt] = _spread(final) / _spread(x0)
    assert spread[2.5] < 0.1 and spread[3.0] > 10


def test_post_ln_beyond_the_range_turns_a_token_the_flow_keeps():
    """Planted: x_1 = e against two tokens at -e, beta = 0: Attn_1 = -e/3 is normal to the
    sphere, so the flow keeps x_1 at e; a layer with dt = 4 (> 1) turns it to -e."""
    e = np.array([1.0, 0.0])
    x0 = np.array([e, -e, -e])
    for dt, sign in ((0.9, 1.0), (4.0, -1.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StepSizeWarning)
            final = ms.simulate(ms.SphereFlow(0.0, dt), x0, steps=1).final[0]
        assert final[0] @ e == pytest.approx(sign)
