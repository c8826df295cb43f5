"""The sphere models on the command line: runs, per-chain starts, sidecars and one-line errors."""

import numpy as np
import pytest
from cli_calls import run

import metastab as ms
from metastab.results import read_table

SIM = ("simulate", "--model", "sphere-flow", "--beta", "4", "--steps", "20", "--seed", "3")


def test_simulate_sphere_flow_matches_the_api(capsys, tmp_path):
    """Random starts are drawn per chain: chain c's start and path depend on (seed, c) only, and
    equal those of the API from the recorded x0."""
    args = ("--init", "sphere-uniform:5", "--n", "6", "--scheme", "rk4", "--dt", "0.05")
    path = tmp_path / "run.parquet"
    code, out, err = run(capsys, *SIM, *args, "--chains", "4", "--out", str(path))
    assert code == 0 and err == "", err
    assert "sphere-flow, dt 0.05, unit sphere, n 6" in out
    frame, meta = read_table(path)
    assert meta["polytope"] is None and meta["runs"][0]["model"]["scheme"] == "rk4"
    x0 = np.array(meta["x0"][0])
    assert x0.shape == (4, 6, 5) and not np.array_equal(x0[0], x0[1])
    part = tmp_path / "part.parquet"
    code, _, _ = run(capsys, *SIM, *args, "--chains", "2", "--first-chain", "2", "--out", str(part))
    assert code == 0
    assert np.array_equal(np.array(read_table(part)[1]["x0"][0]), x0[2:])
    api = ms.simulate(ms.SphereFlow(4.0, 0.05, scheme="rk4"), x0, steps=20, rng=3)
    last = frame[frame["step"] == 20].sort_values(["chain", "token"])
    final = last[[f"coord{k}" for k in range(5)]].to_numpy().reshape(4, 6, 5)
    assert np.array_equal(final, api.final)


def test_passage_sphere_chain_accelerated(capsys):
    code, out, err = run(
        capsys,
        "passage",
        "--model",
        "sphere-chain",
        "--beta",
        "40",
        "--gamma",
        "0.5",
        "--init",
        "orthogonal:3",
        "--n",
        "3",
        "--event-radius",
        "0.1",
        "--mode",
        "accelerated",
        "--max-steps",
        "1e30",
        "--chains",
        "8",
        "--seed",
        "1",
    )
    assert code == 0 and err == "", err
    assert "sphere-chain, gamma 0.5, unit sphere, n 3, init orthogonal:3" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--polytope", "simplex:3"), "polytope: --model sphere-flow moves tokens on the unit"),
        (("--gamma", "0.3"), "gamma: --model sphere-flow has no gamma"),
        (("--init", "orthogonal:2", "--n", "3"), "orthogonal needs d >= n"),
        (("--dt", "-1"), "dt must be > 0"),
        (("--scheme", "euler"), "invalid choice"),
        (("--scheme", "mix-ln"), "needs tau"),
        (("--alpha", "0.5"), "alpha is nGPT's step"),
        (("--strict-causal",), "strict_causal=True needs causal=True"),
        (("--rescale",), "rescale=True needs attention='unnormalized'"),
        (("--alibi", "-1"), "alibi must be >= 0"),
    ],
)
def test_sphere_flow_user_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *SIM, *argv)
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.filterwarnings("default::metastab.exceptions.StepSizeWarning")  # as a user sees it
def test_unstable_step_is_one_line_naming_dt(capsys):
    argv = ("--scheme", "rk4", "--attention", "unnormalized", "--dt", "0.5")
    code, out, err = run(capsys, *SIM, *argv, "--init", "sphere-uniform:3", "--n", "8")
    warning, error = err.splitlines()  # the step is beyond RK4's stable range: said first
    assert code == 2 and "Traceback" not in err
    assert warning.startswith("metastab: warning: dt = 0.5 is beyond the stable range")
    assert error.startswith("metastab: error: chain ") and "overflow" not in err
    assert "the step size dt = 0.5 is too large to be stable; use a smaller dt" in err


def test_x0_off_the_sphere_is_one_line(capsys, tmp_path):
    path = tmp_path / "x0.npy"
    np.save(path, np.ones((3, 2)))
    code, out, err = run(capsys, *SIM, "--init", f"file:{path}")
    assert code == 2 and "x0 must lie on the unit sphere" in err and err.count("\n") == 1


def test_passage_event_needing_a_polytope_is_refused(capsys):
    code, out, err = run(
        capsys, "passage", "--model", "sphere-chain", "--beta", "2", "--event", "leave-hull"
    )
    assert code == 2 and "needs the cells of a polytope" in err
    code, out, err = run(capsys, "passage", "--model", "sphere-chain", "--beta", "2")
    assert code == 2 and "--event leave-ball needs --event-radius" in err


def test_the_command_offers_every_scheme_and_option_of_sphere_flow(capsys):
    """--scheme lists SphereFlow's schemes (kept apart so that parsing loads no model), and the
    positional and scheme flags reach the model: the run is the API's."""
    from metastab.cli.system import SPHERE_SCHEMES
    from metastab.models.sphere import SCHEMES

    assert SPHERE_SCHEMES == tuple(SCHEMES)
    flags = ("--scheme", "ngpt", "--alpha", "0.5", "--causal", "--alibi", "1.5", "--n", "5")
    code, out, err = run(capsys, *SIM, *flags, "--init", "sphere-uniform:3", "--chains", "2")
    assert code == 0 and err == "", err
    usa = ("--attention", "unnormalized", "--causal", "--strict-causal", "--positional-norm")
    code, _, err = run(capsys, *SIM, *usa, "--rescale", "--scheme", "mix-ln", "--tau", "0.5")
    assert code == 0 and err == "", err
