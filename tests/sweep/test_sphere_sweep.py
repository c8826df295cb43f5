"""Sweeps of the sphere models: no [polytope], one start per chain, rows as first_passage's."""

import numpy as np
import pandas as pd
import pytest

import metastab as ms
from metastab.sweep import run_sweep
from metastab.sweep.chunks import ChunkTask
from metastab.sweep.config import Sweep

CONFIG = {
    "model": {"kind": "sphere-chain", "gamma": 0.5},
    "grid": {"beta": [2.0, 4.0]},
    "initial": {"kind": "sphere-uniform", "n": 4, "d": 3},
    "event": {"kind": "leave-ball", "radius": 0.1},
    "run": {"chains": 10, "chunk": 4, "max_steps": 1000, "seed": 1},
}


def test_starts_are_drawn_per_chain_and_chunks_take_theirs():
    point = Sweep.from_dict(CONFIG).points[1]
    assert point.polytope is None
    whole = point.starts(chains=10, first_chain=0)
    assert np.array_equal(whole[0], point.x0)
    task = ChunkTask.of(point, 1)
    assert task.first_chain == 4 and np.array_equal(task.x0, whole[4:8])


def test_sweep_rows_equal_first_passage(tmp_path):
    sweep = Sweep.from_dict(CONFIG)
    run_sweep(sweep, tmp_path / "out")
    rows = pd.read_parquet(tmp_path / "out" / "results").sort_values(["point", "chain"])
    for point in sweep.points:
        fp = ms.first_passage(
            point.model,
            point.starts(chains=10, first_chain=0),
            point.event,
            max_steps=1000,
            rng=point.seed,
        )
        got = rows[rows["point"] == point.index]
        assert np.array_equal(got["steps"].to_numpy(), fp.times)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"polytope": {"kind": "regular", "k": 3}}, "takes no polytope"),
        ({"initial": {"kind": "orthogonal", "n": 4, "d": 3}}, "orthogonal needs d >= n"),
        ({"initial": {"kind": "shrunk", "n": 4, "factor": 0.5}}, "needs a polytope"),
    ],
)
def test_bad_sphere_sweeps_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        Sweep.from_dict({**CONFIG, **change})
