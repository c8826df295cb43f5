"""The order-parameter events and observables on the command line: --event leave-uniform /
reach-uniform with --level and --degree, track --order-parameters, and one-line refusals."""

import numpy as np
import pytest
from cli_calls import run

import metastab as ms
from metastab.results import read_table

PASSAGE = ("passage", "--model", "sphere-flow", "--beta", "4", "--dt", "0.1", "--seed", "2")
START = ("--init", "sphere-uniform:3", "--n", "8", "--chains", "3", "--max-steps", "400")


def test_passage_leave_uniform_matches_the_api(capsys, tmp_path):
    path = tmp_path / "fp.parquet"
    flags = ("--event", "leave-uniform", "--level", "0.8", "--degree", "2")
    code, out, err = run(capsys, *PASSAGE, *START, *flags, "--out", str(path))
    assert code == 0 and err == "", err
    assert "event leave-uniform level 0.8 degree 2" in out
    frame, meta = read_table(path)
    x0 = np.array(meta["x0"][0])
    fp = ms.first_passage(
        ms.SphereFlow(4.0, 0.1), x0, ms.LeaveUniform(0.8, 2), max_steps=400, rng=2
    )
    assert np.array_equal(frame.sort_values("chain")["steps"].to_numpy(), fp.times)
    assert fp.events == 3  # every chain left the uniform state: a real passage, not censoring
    assert meta["runs"][0]["event"] == {"kind": "leave-uniform", "level": 0.8, "degree": 2}


@pytest.mark.parametrize(
    "argv, words",
    [
        (("--event", "leave-uniform"), "level: --event leave-uniform needs --level"),
        (("--event", "reach-uniform", "--level", "1.5"), "level must be in (0, 1], got 1.5"),
        (("--event", "leave-uniform", "--level", "0.5", "--degree", "3"), "degree must be 1"),
        (("--event", "leave-ball", "--event-radius", "0.1", "--level", "0.5"), "does not apply"),
    ],
)
def test_bad_uniform_events_are_refused_in_one_line(capsys, argv, words):
    code, _, err = run(capsys, *PASSAGE, *START, *argv)
    assert code == 2 and words in err and err.count("\n") == 1, err


def test_models_in_r_d_are_refused(capsys):
    code, _, err = run(capsys, "passage", "--event", "leave-uniform", "--level", "0.5")
    assert code == 2 and "LeaveUniform: m_1 is an order parameter of tokens on the unit" in err


def test_track_writes_the_order_parameters_on_request(capsys, tmp_path):
    obs = tmp_path / "obs.csv"
    argv = ("track", "--model", "sphere-flow", "--beta", "4", "--init", "sphere-uniform:3",
            "--n", "6", "--chains", "2", "--steps", "30", "--seed", "1")  # fmt: skip
    code, _, err = run(capsys, *argv, "--order-parameters", "--observables", str(obs))
    assert code == 0 and err == "", err
    frame, meta = read_table(obs)
    x0 = np.array(meta["x0"][0])  # the one run's chains×n×d starts
    tr = ms.track(ms.SphereFlow(4.0, 0.1), x0, steps=30, rng=1, order_parameters=True)
    assert np.array_equal(frame[["m1", "m2"]].to_numpy(), tr.observables_frame()[["m1", "m2"]])
    plain = tmp_path / "plain.csv"
    code, _, _ = run(capsys, *argv, "--observables", str(plain))
    assert code == 0 and "m1" not in read_table(plain)[0]  # negative control: not asked for
