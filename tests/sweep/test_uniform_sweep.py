"""Sweeps with the order-parameter events: rows as first_passage's, the level and degree as
columns, and the models of R^d refused when the sweep is read."""

import numpy as np
import pandas as pd
import pytest

import metastab as ms
from metastab.sweep import run_sweep
from metastab.sweep.config import Sweep

CONFIG = {
    "model": {"kind": "sphere-flow", "dt": 0.1},
    "grid": {"beta": [2.0, 6.0]},
    "initial": {"kind": "sphere-uniform", "n": 6, "d": 3},
    "event": {"kind": "leave-uniform", "level": 0.5, "degree": 2},
    "run": {"chains": 6, "chunk": 4, "max_steps": 300, "seed": 3},
}


def test_sweep_rows_equal_first_passage(tmp_path):
    sweep = Sweep.from_dict(CONFIG)
    assert isinstance(sweep.points[0].event, ms.LeaveUniform)
    run_sweep(sweep, tmp_path / "out")
    rows = pd.read_parquet(tmp_path / "out" / "results").sort_values(["point", "chain"])
    assert (rows["event_level"] == 0.5).all() and (rows["event_degree"] == 2).all()
    for point in sweep.points:
        fp = ms.first_passage(
            point.model, point.starts(chains=6, first_chain=0), point.event, max_steps=300,
            rng=point.seed,
        )  # fmt: skip
        got = rows[rows["point"] == point.index]
        assert np.array_equal(got["steps"].to_numpy(), fp.times)
        assert fp.events > 0


def test_models_in_r_d_are_refused_when_the_sweep_is_read():
    config = {
        **CONFIG,
        "model": {"kind": "softmax-chain", "gamma": 0.1},
        "polytope": {"kind": "regular", "k": 3},
        "initial": {"kind": "uniform", "n": 6},
    }
    with pytest.raises(ValueError, match="LeaveUniform: m_2 is an order parameter"):
        Sweep.from_dict(config)
    Sweep.from_dict({**config, "event": {"kind": "leave-ball", "radius": 0.3}})  # the control
