"""The ``metastab`` command, run in-process: outputs, sidecars, reproducibility, user errors."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from cli_calls import run

import metastab
from metastab.bench import jax_baselines, numpy_chain, workload_w1
from metastab.results import read_table

PASSAGE = ("passage", "--chains", "16", "--max-steps", "400", "--seed", "5")
# three β with escapes enough for a fit
FIT_DATA = (
    "passage",
    "--chains",
    "60",
    "--max-steps",
    "5000",
    "--seed",
    "3",
    "--beta",
    "5",
    "7",
    "9",
)


# --------------------------------------------------------------------------- outputs


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_passage_writes_a_tidy_table_and_sidecar(capsys, tmp_path, suffix):
    path = tmp_path / f"sub/fp{suffix}"  # a folder to create: --mkdir
    code, out, err = run(capsys, *PASSAGE, "--beta", "4", "8", "--out", str(path), "--mkdir")
    assert code == 0 and err == ""
    frame, meta = read_table(path)
    assert len(frame) == 2 * 16
    assert sorted(frame["beta"].unique()) == [4.0, 8.0]
    assert frame.groupby("beta")["chain"].apply(list).map(lambda c: c == list(range(16))).all()
    assert {"steps", "censored", "event_radius", "max_steps"} <= set(frame.columns)
    assert meta["kind"] == "first-passage" and len(meta["runs"]) == 2
    assert meta["command"].startswith("metastab passage")
    assert meta["runs"][0]["seed"]["entropy"] == "5"
    assert meta["polytope"]["name"] == "regular-5"
    assert np.array(meta["x0"]).shape == (2, 20, 2)  # one initial configuration per beta
    assert json.loads((tmp_path / f"sub/fp{suffix}.json").read_text()) == meta
    assert "beta" in out and "mean_T" in out and f"wrote {path}" in out


def test_simulate_records_every_k_steps(capsys, tmp_path):
    path = tmp_path / "run.csv"
    code, out, _ = run(
        capsys,
        "simulate",
        "--chains",
        "3",
        "--steps",
        "25",
        "--record-every",
        "10",
        "--seed",
        "1",
        "--out",
        str(path),
    )
    assert code == 0
    frame, meta = read_table(path)
    assert sorted(frame["step"].unique()) == [0, 10, 20, 25]
    assert len(frame) == 3 * 4 * 20
    assert meta["kind"] == "run" and meta["runs"][0]["steps"] == 25
    start = frame[(frame.step == 0) & (frame.chain == 0)][["coord0", "coord1"]].to_numpy()
    vertices = metastab.regular_polygon(5).vertices
    np.testing.assert_allclose(start[:5], vertices)
    np.testing.assert_allclose(start[5:], 0.5 * vertices[np.arange(15) % 5])
    assert "states_kept" in out


def test_same_seed_same_table_on_any_thread_count(capsys, tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert run(capsys, *PASSAGE, "--out", str(a))[0] == 0
    assert run(capsys, *PASSAGE, "--threads", "1", "--out", str(b))[0] == 0
    pd.testing.assert_frame_equal(pd.read_csv(a), pd.read_csv(b))


def test_missing_seed_prints_the_entropy_that_repeats_the_run(capsys, tmp_path):
    code, out, _ = run(
        capsys, "passage", "--chains", "8", "--max-steps", "300", "--out", str(tmp_path / "a.csv")
    )
    assert code == 0
    entropy = re.search(r"--seed (\d+) repeats it", out).group(1)
    assert re.search(rf"^seed {entropy}\b", out, re.M)
    code, _, _ = run(
        capsys,
        "passage",
        "--chains",
        "8",
        "--max-steps",
        "300",
        "--seed",
        entropy,
        "--out",
        str(tmp_path / "b.csv"),
    )
    assert code == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv"))


@pytest.mark.parametrize(
    "argv",
    [
        (
            "--model",
            "hardmax",
            "--ties",
            "point",
            "--event",
            "reach-vertices",
            "--event-radius",
            "0.05",
        ),
        ("--model", "softmax-flow", "--beta", "2", "--event", "collapse", "--diameter", "0.5"),
        ("--event", "leave-ball", "--polytope", "simplex:3", "--init", "in-cells", "--n", "9"),
        (
            "--init",
            "near-vertices",
            "--beta",
            "1e6",
            "--event",
            "reach-vertices",
            "--event-radius",
            "0.2",
            "--vertex-radius",
            "0.01",
        ),
        ("--polytope", "random:6:equinorm", "--radius", "2", "--first-chain", "7"),
        ("--polytope", "gaussian:4:3", "--init-seed", "3"),
        ("--polytope", "cross:2", "--init", "shrunk:0.3"),
    ],
)
def test_passage_combinations_run(capsys, argv):
    code, out, err = run(capsys, *PASSAGE, *argv)
    assert (code, err) == (0, ""), err
    assert "censored" in out


TRIANGLE = (
    "passage",
    "--polytope",
    "regular:3",
    "--n",
    "9",
    "--init",
    "shrunk:0.8",
    "--beta",
    "40",
    "--chains",
    "6",
    "--seed",
    "2",
)


def test_accelerated_passage_escapes_where_exact_stepping_is_censored(capsys, tmp_path):
    """At beta = 40 a cross-group pick from the merged triangle clusters has probability
    ~1e-24: exact stepping sees no escape in 3000 steps (it could draw one: no resolution
    warning); the accelerated mode sees them all."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", metastab.ResolutionWarning)
        code, out, err = run(capsys, *TRIANGLE, "--max-steps", "3000")
    assert code == 0
    # chains, events, absorbed, censored
    assert re.search(r"^\s*40\s+6\s+0\s+0\s+6\s", out, re.M), out
    assert "warning" not in err
    path = tmp_path / "fast.parquet"
    code, out, err = run(
        capsys,
        *TRIANGLE,
        "--max-steps",
        "1e30",
        "--mode",
        "accelerated",
        "--merge-tol",
        "1e-9",
        "--out",
        str(path),
    )
    assert (code, err) == (0, ""), err
    assert re.search(r"^\s*40\s+6\s+6\s+0\s+0\s", out, re.M), out
    assert "mode accelerated (merge tol 1e-09)" in out
    frame, meta = read_table(path)
    assert not frame["censored"].any() and (frame["steps"] > 1e12).all()
    assert meta["mode"] == "accelerated" and meta["merge_tol"] == 1e-9
    assert meta["runs"][0]["provenance"]["mode"] == "accelerated"
    assert meta["runs"][0]["provenance"]["jumps"] > 0


@pytest.mark.parametrize(
    "argv, words",
    [
        (("--merge-tol", "1e-8"), ["merge-tol", "accelerated"]),
        (("--max-steps", "1e30"), ["max-steps", "integer"]),
        (("--mode", "accelerated", "--model", "softmax-flow"), ["SoftmaxChain"]),
        (("--mode", "accelerated", "--merge-tol", "2"), ["merge_tol", "2"]),
    ],
)
def test_mode_flag_errors_are_one_line(capsys, argv, words):
    code, _, err = run(capsys, *PASSAGE, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in words), err


def test_initial_configuration_from_a_file(capsys, tmp_path):
    x0 = 0.3 * metastab.regular_polygon(4).vertices
    np.save(tmp_path / "x0.npy", x0)
    path = tmp_path / "run.parquet"
    code, _, err = run(
        capsys,
        "simulate",
        "--polytope",
        "regular:4",
        "--init",
        f"file:{tmp_path / 'x0.npy'}",
        "--steps",
        "1",
        "--record-every",
        "1",
        "--chains",
        "2",
        "--seed",
        "0",
        "--out",
        str(path),
    )
    assert code == 0, err
    frame, _ = read_table(path)
    first = frame[(frame.step == 0) & (frame.chain == 1)][["coord0", "coord1"]].to_numpy()
    np.testing.assert_array_equal(first, x0)


# --------------------------------------------------------------------------- user errors


@pytest.mark.parametrize(
    "argv, words",
    [
        (("--beta", "-1"), ["beta", "-1.0"]),
        (("--gamma", "2"), ["gamma", "2.0"]),
        (("--chains", "0"), ["chains", "0"]),
        (("--polytope", "dodecahedron:3"), ["polytope", "'dodecahedron:3'"]),
        (("--polytope", "regular:x"), ["polytope", "'x'"]),
        (("--event", "teleport"), ["event", "'teleport'"]),
        (("--out", "table.txt"), ["out", "'table.txt'"]),
        (("--init", "file:no/such/file.npy"), ["init", "no/such/file.npy"]),
        (("--init", "shrunk:3"), ["shrink factor", "3.0"]),
        (("--init", "sideways"), ["init", "'sideways'"]),
        (("--event-radius", "-0.5"), ["event-radius", "-0.5"]),
        (("--event", "collapse"), ["diameter"]),
        (("--seed", "-4"), ["seed", "-4"]),
        (("--threads", "0"), ["threads", "0"]),
        (("--max-steps", "0"), ["max_steps", "0"]),
        (("--n", "3"), ["n must", "3"]),
        (("--ties", "point"), ["ties"]),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, words):
    code, out, err = run(capsys, *PASSAGE, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("metastab: error: "), err
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in err


def test_library_memory_error_is_one_line(capsys):
    code, _, err = run(capsys, "simulate", "--chains", str(10**12), "--steps", "1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "GiB" in err


@pytest.mark.parametrize(
    "argv", [("passage", "--beta", "abc"), ("simulate", "--steps", "1.5"), ("fly",), ()]
)
def test_argparse_errors_exit_2(capsys, argv):
    assert run(capsys, *argv)[0] == 2


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"metastab {metastab.__version__}"


def test_thread_count_is_restored(capsys):
    import numba

    before = numba.get_num_threads()
    assert run(capsys, *PASSAGE, "--threads", "1")[0] == 0
    assert numba.get_num_threads() == before


# --------------------------------------------------------------------------- demo and bench


def test_demo_escapes_at_every_beta_and_the_mean_grows(capsys, tmp_path):
    path = tmp_path / "demo.csv"
    code, out, err = run(capsys, "demo", "--out", str(path))
    assert code == 0 and err == ""
    table, meta = read_table(path)
    assert table["beta"].tolist() == [7.0, 10.0, 13.0, 16.0]
    assert (table["escapes"] > 0).all() and (table["chains"] == 300).all()
    assert np.all(np.diff(table["mean_escape"]) > 0)
    assert table["mean_escape"].iloc[-1] > 30 * table["mean_escape"].iloc[0]
    assert meta["seed"]["entropy"] == "20250601"
    assert "seed 20250601" in out and "mean_escape" in out


def test_demo_is_reproducible(capsys):
    argv = ("demo", "--chains", "20", "--beta", "6", "9", "--max-steps", "500")
    first = run(capsys, *argv)[1]
    second = run(capsys, *argv, "--threads", "1")[1]
    strip = lambda text: [line.rsplit(maxsplit=1)[0] for line in text.splitlines()]  # noqa: E731
    assert strip(first) == strip(second)  # all but the wall-time column


def test_bench_runs_and_prints_a_ratio(capsys):
    argv = ("bench", "--chains", "8", "--steps", "3", "--repeat", "1", "--threads", "1")
    code, out, _ = run(capsys, *argv, "--no-jax")  # JAX's threads make later forks unsafe
    assert code == 0
    assert "ratio" in out and "token-steps/s" in out and "threads 1" in out
    assert "jax: not run (--no-jax)" in out
    assert run(capsys, *argv, "--no-jax", "--sizes")[0] == 2


def test_sizes_bench_reports_each_target_and_the_peak_fraction():
    from metastab.bench import PEAK_TARGET, SIZE_TARGETS, sizes_bench
    from metastab.cli.bench import _verdict

    r = sizes_bench(((32, 8, 4, 2), (256, 16, 64, 1)), repeat=1)
    assert [w["target"] for w in r["rows"]] == [None, SIZE_TARGETS[(256, 16, 64)]]
    assert r["peak_target"] == PEAK_TARGET and 0 < r["peak_fraction"] < 1
    last = r["rows"][-1]
    assert r["peak_fraction"] == pytest.approx(last["gflops"] * 1e9 / r["peak_flops"])
    assert 1e-11 < r["exp_seconds"] < 1e-6
    assert _verdict(10.0, 10.0, "x") == ">= 10x met"
    assert _verdict(9.99, 10.0, "x") == ">= 10x NOT met"
    assert _verdict(3.0, None, "x") == "-"


def test_bench_rejects_bad_sizes(capsys):
    code, _, err = run(capsys, "bench", "--repeat", "0")
    assert code == 2 and "repeat" in err and len(err.strip().splitlines()) == 1


def test_bench_escape_prints_seconds_per_escape_in_both_modes(capsys):
    code, out, err = run(
        capsys, "bench", "--escape", "--beta", "5", "7", "--chains", "3", "--threads", "1"
    )
    assert (code, err) == (0, ""), err
    lines = out.splitlines()
    header = next(k for k, line in enumerate(lines) if line.split()[:1] == ["beta"])
    assert {"exact_s_per_escape", "accelerated_s_per_escape", "ratio"} <= set(lines[header].split())
    rows = [line.split() for line in lines[header + 1 : header + 3]]
    assert [r[0] for r in rows] == ["5", "7"] and all(r[-1].endswith("x") for r in rows)
    assert "threads 1" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--escape", "--chains", "0"), "chains"),
        (("--escape", "--exact-factor", "0"), "exact-factor"),
        (("--beta", "8"), "--escape"),
    ],
)
def test_bench_escape_flag_errors(capsys, argv, message):
    code, _, err = run(capsys, "bench", *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_numpy_baseline_is_a_convex_step():
    """The benchmark's NumPy chain moves tokens to convex combinations: they stay in the hull."""
    X = numpy_chain(workload_w1(), 20.0, 0.1, steps=50, chains=32, rng=0)
    assert X.shape == (32, 20, 2) and np.isfinite(X).all()
    assert metastab.regular_polygon(5).contains(X.reshape(-1, 2), tol=1e-9).all()
    assert not np.allclose(X[0], workload_w1())  # negative control: it did move


# --------------------------------------------------------------------------- fit, sweep, study


def test_fit_reads_passage_output_and_draws_the_bound(capsys, tmp_path):
    data = tmp_path / "fp.parquet"  # the triangle: Thm 5.4's hypotheses hold
    code, _, _ = run(capsys, *FIT_DATA, "--polytope", "regular:3", "--out", str(data))
    assert code == 0
    code, out, err = run(
        capsys, "fit", str(data), "--resamples", "49", "--out", str(tmp_path / "per_beta.csv")
    )
    assert code == 0 and err == ""
    assert re.search(r"b = [0-9.]+ \[[0-9.]+, [0-9.]+\]", out)
    assert "Thm 5.4 bound: exponent" in out
    assert (tmp_path / "fp.arrhenius.png").stat().st_size > 10_000
    table, meta = read_table(tmp_path / "per_beta.csv")
    assert table["beta"].tolist() == [5.0, 7.0, 9.0] and (table["chains"] == 60).all()
    assert meta["kind"] == "fit" and meta["fit"][1]["parameter"] == "slope"


def test_fit_without_leave_hull_says_why_there_is_no_bound(capsys, tmp_path):
    data = tmp_path / "fp.csv"
    run(
        capsys,
        "passage",
        "--chains",
        "30",
        "--max-steps",
        "3000",
        "--seed",
        "3",
        "--beta",
        "4",
        "6",
        "--event",
        "leave-ball",
        "--out",
        str(data),
    )
    code, out, _ = run(capsys, "fit", str(data), "--resamples", "19", "--figure", "none")
    assert code == 0
    assert "no theorem bound drawn: the event is 'leave-ball'" in out
    assert not list(tmp_path.glob("*.png"))


def test_fit_draws_no_bound_outside_the_theorems_hypotheses(capsys, tmp_path):
    # the square and the default pentagon have obtuse (square: right) cones: no Thm 5.4
    data = tmp_path / "fp.csv"
    run(capsys, *FIT_DATA, "--polytope", "regular:4", "--out", str(data))
    code, out, _ = run(capsys, "fit", str(data), "--resamples", "19")
    assert code == 0
    assert "no theorem bound drawn: the polytope lacks acute cones" in out
    assert "Thm 5.4 bound" not in out
    assert (tmp_path / "fp.arrhenius.png").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (("fit", "missing.csv"), "DATA: no such file"),
        (("fit", "{tmp}/bad.txt"), "must end in .csv or .parquet"),
        (("fit", "{tmp}/cut.parquet"), "cut.parquet' is damaged ("),
        (("fit", "{tmp}/t.csv"), "t.csv.json' is damaged ("),
        (("sweep", "--status", "{tmp}/nothing"), "nothing"),
    ],
)
def test_fit_and_sweep_errors_are_one_line(capsys, tmp_path, argv, message):
    (tmp_path / "bad.txt").write_text("x")
    (tmp_path / "cut.parquet").write_bytes(b"PAR1 cut short")
    (tmp_path / "t.csv").write_text("chain,steps\n0,1\n")
    (tmp_path / "t.csv.json").write_text('{"kind": "first-pass')
    code, out, err = run(capsys, *(a.format(tmp=tmp_path) for a in argv))
    assert code == 2 and err.count("\n") == 1 and message in err, err


SMALL_SWEEP = """
[model]
kind = "softmax-chain"
gamma = 0.2
[grid]
beta = [2.0, 3.0, 4.0]
[polytope]
kind = "regular"
k = 3
[initial]
kind = "repeated-points"
multiplicities = [2, 2, 2]
[event]
kind = "leave-ball"
radius = 0.3
[run]
chains = 40
chunk = 20
max_steps = 10000
seed = 4
"""


def test_sweep_then_fit_on_the_directory(capsys, tmp_path):
    config = tmp_path / "small.toml"
    config.write_text(SMALL_SWEEP)
    code, out, err = run(capsys, "sweep", str(config), "--out", str(tmp_path / "sw"))
    assert code == 0, err
    assert "3 points, 120 chains" in out
    code, out, err = run(capsys, "fit", str(tmp_path / "sw"), "--resamples", "19")
    assert code == 0, err
    assert re.search(r"b = [0-9.]+ \[", out) and (tmp_path / "sw" / "arrhenius.png").exists()
    code, out, _ = run(capsys, "sweep", "--status", str(tmp_path / "sw"))
    assert code == 0 and "complete" in out


@pytest.fixture(scope="module")
def seed_sweep(tmp_path_factory):
    """A sweep with a seed axis: 3 betas × 2 seeds, 20 chains a point."""
    root = tmp_path_factory.mktemp("seeds")
    config = root / "seeds.toml"
    config.write_text(
        SMALL_SWEEP.replace("beta = [2.0, 3.0, 4.0]", "beta = [2.0, 3.0, 4.0]\nseed = [1, 2]")
        .replace("chains = 40", "chains = 20")
        .replace("seed = 4\n", "")
    )
    code, _, err = cli_main_quiet(["sweep", str(config), "--out", str(root / "sw")])
    assert code == 0, err
    return root / "sw"


def cli_main_quiet(argv):
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = metastab.cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def test_fit_pools_the_seeds_of_a_sweep_point(capsys, seed_sweep, tmp_path):
    code, out, err = run(capsys, "fit", str(seed_sweep), "--resamples", "19", "--figure", "none")
    assert code == 0 and err == "", err
    assert "(120 chains" in out and re.search(r"b = [0-9.]+ \[", out)
    assert re.search(r"^\s+2\s+40\s+", out, re.M)  # both seeds of beta = 2 in one row


def test_fit_by_fits_each_value_apart(capsys, seed_sweep, tmp_path):
    table = tmp_path / "by.csv"
    argv = ("fit", str(seed_sweep), "--resamples", "19", "--figure", "none")
    code, out, _ = run(capsys, *argv, "--by", "seed", "--out", str(table))
    assert code == 0 and out.count("log E[T] = a + b·beta: b =") == 2
    assert "[seed=1]" in out and "[seed=2]" in out
    frame, meta = read_table(table)
    assert sorted(frame["seed"].unique()) == [1, 2] and (frame["chains"] == 20).all()
    assert meta["by"] == ["seed"] and [f["by"] for f in meta["fits"]] == [{"seed": 1}, {"seed": 2}]
    code, out, _ = run(capsys, *argv, "--by", "point")
    assert code == 0 and out.count("no scaling fit: ") == 6  # one beta a point


def test_fit_by_a_bad_column_is_one_line_naming_the_allowed(capsys, seed_sweep):
    code, _, err = run(capsys, "fit", str(seed_sweep), "--by", "gamma", "--figure", "none")
    assert code == 2 and err.count("\n") == 1
    assert "--by gamma" in err and "['point', 'seed']" in err


def test_localmax_from_the_command_line(capsys, tmp_path):
    path = tmp_path / "lm.csv"
    code, out, err = run(
        capsys,
        "simulate",
        "--model",
        "localmax",
        "--r",
        "0",
        "0.5",
        "--gamma",
        "0.3",
        "--steps",
        "60",
        "--chains",
        "2",
        "--seed",
        "1",
        "--out",
        str(path),
    )
    assert code == 0 and err == ""
    frame, meta = read_table(path)
    assert sorted(frame["r"].unique()) == [0.0, 0.5]
    assert meta["runs"][0]["model"]["kind"] == "localmax"
    # r = 0 is hardmax: the same final states
    code, _, _ = run(
        capsys,
        "simulate",
        "--model",
        "hardmax",
        "--gamma",
        "0.3",
        "--steps",
        "60",
        "--chains",
        "2",
        "--seed",
        "1",
        "--out",
        str(tmp_path / "hm.csv"),
    )
    hm, _ = read_table(tmp_path / "hm.csv")
    lm0 = frame[frame["r"] == 0.0]
    xy = ["coord0", "coord1"]
    assert np.allclose(lm0[xy].to_numpy(), hm[xy].to_numpy(), atol=1e-9)


@pytest.mark.parametrize(
    "argv, message",
    [
        (("simulate", "--model", "localmax"), "needs --r"),
        (("simulate", "--r", "0.1"), "--model localmax only"),
        (("simulate", "--model", "localmax", "--r", "-1"), "r must be >= 0, got -1.0"),
    ],
)
def test_localmax_flag_errors(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err, err


def test_sweep_over_localmax_margins(capsys, tmp_path):
    config = tmp_path / "lm.toml"
    config.write_text(
        SMALL_SWEEP.replace('kind = "softmax-chain"\ngamma = 0.2', 'kind = "localmax"\ngamma = 0.3')
        .replace("beta = [2.0, 3.0, 4.0]", "r = [0.0, 0.05]")
        .replace('kind = "leave-ball"\nradius = 0.3', 'kind = "collapse"\ndiameter = 1e-3')
    )
    code, out, err = run(capsys, "sweep", str(config), "--out", str(tmp_path / "sw"))
    assert code == 0, err
    frame = pd.read_parquet(tmp_path / "sw" / "results")
    assert sorted(frame["r"].unique()) == [0.0, 0.05] and len(frame) == 80


def test_fit_prefactor_reports_c_and_its_test(capsys, tmp_path):
    data = tmp_path / "fp.csv"
    run(capsys, *FIT_DATA, "--out", str(data))
    code, out, _ = run(
        capsys, "fit", str(data), "--prefactor", "--resamples", "19", "--figure", "none"
    )
    assert code == 0
    assert re.search(
        r"c = -?[0-9.]+ \[-?[0-9.]+, -?[0-9.]+\]; likelihood-ratio test of c = 0: "
        r"p = [0-9.e-]+",
        out,
    ), out


# ------------------------------------------------------------------ kinds from the registry

PASSAGE_SHORT = ("passage", "--chains", "4", "--max-steps", "50", "--seed", "1")


def test_command_line_takes_uniform_and_repeated_points(capsys):
    code, out, err = run(
        capsys, *PASSAGE_SHORT, "--init", "uniform", "--n", "9", "--event", "leave-ball"
    )
    assert (code, err) == (0, ""), err
    assert "init uniform" in out and "n 9" in out
    for spelling in ("repeated-points", "clusters"):  # the second: the deprecated alias
        with warnings.catch_warnings():
            warnings.simplefilter("default", DeprecationWarning)
            code, out, err = run(capsys, *PASSAGE_SHORT, "--init", f"{spelling}:2,2,2,2,2")
        renamed = (
            "metastab: warning: initial kind 'clusters' is deprecated: use 'repeated-points'\n"
        )
        assert (code, err) == (0, renamed if spelling == "clusters" else ""), err
        assert "n 10" in out


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ("--init", "repeated-points:2,2,2,2,2", "--n", "12"),
            ["n: --n cannot be combined", "repeated-points"],
        ),
        (("--init", "repeated-points:2,x"), ["init", "multiplicities", "'2,x'"]),
        (("--diameter", "0.5"), ["diameter", "does not apply", "leave-hull"]),
        (("--neighbours", "relative"), ["neighbours", "localmax"]),
        (("--model", "localmax"), ["r: --model localmax needs --r"]),
    ],
)
def test_command_line_refuses_what_a_kind_does_not_take(capsys, argv, words):
    code, _, err = run(capsys, *PASSAGE_SHORT, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in words), err


def test_phase_diagram_bench_rows_without_jax():
    from metastab.bench.phase_diagram import phase_diagram_bench

    (row,) = phase_diagram_bench(dims=(3,), chains=4, steps=2, repeat=1, jax=False)
    assert row["d"] == 3 and row["chains"] == 4 and row["steps"] == 2
    assert row["max_difference"] < 1e-12  # metastab and NumPy compute the same map
    assert row["jax_rate"] is None and row["jax_ratio"] is None  # left out, never guessed


def test_jax_required_but_missing_is_refused(monkeypatch):
    from metastab.bench import jax_baselines

    monkeypatch.setattr(jax_baselines, "available", lambda: False)
    assert jax_baselines.wanted(None) is False and jax_baselines.wanted(False) is False
    with pytest.raises(ModuleNotFoundError, match=r"metastab\[bench\]"):
        jax_baselines.wanted(True)


@pytest.mark.slow
@pytest.mark.skipif(not jax_baselines.available(), reason="JAX not installed (bench extra)")
def test_jax_baselines_compute_the_models():
    """In a child process, so that JAX's threads never live in the test process (forks)."""
    import subprocess
    import sys

    code = """
import numpy as np, metastab
from metastab.bench import jax_baselines
from metastab.bench.chains import W1_BETA, W1_GAMMA, workload_w1
from metastab.bench.phase_diagram import numpy_post_ln, phase_diagram_bench
X = metastab.sphere_uniform(8, 4, chains=3, rng=0)
got = jax_baselines.jax_post_ln(X, 4.0, 0.1, steps=5)
assert np.allclose(got, numpy_post_ln(X, 4.0, 0.1, steps=5), atol=1e-13)
out = jax_baselines.jax_chain(workload_w1(), W1_BETA, W1_GAMMA, steps=50, chains=16, seed=0)
assert out.shape == (16, 20, 2) and np.isfinite(out).all()
assert np.abs(out).max() <= 1.0 + 1e-12  # tokens move towards tokens: they stay in the disc
(row,) = phase_diagram_bench(dims=(3,), chains=4, steps=2, repeat=1, jax=True)
assert row["jax_difference"] < 1e-12 and row["jax_ratio"] > 0
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_cold_bench_takes_no_other_option_and_names_an_unknown_case(capsys):
    from metastab.bench.cold import cold_bench

    for extra in (["--steps", "3"], ["--workload", "phase-diagram"], ["--sizes"]):
        code, _, err = run(capsys, "bench", "--cold", *extra)
        assert code == 2 and "--cold takes no other bench option" in err, extra
        assert len(err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="unknown case 'sphere'"):
        cold_bench(["sphere"])


def test_host_cpu_names_numbas_target_and_its_widest_vectors(monkeypatch):
    """The CPU and features numba compiles for (its NUMBA_CPU_NAME / NUMBA_CPU_FEATURES when
    set): AVX-512 only where avx512f is enabled (control: a disabled one, -avx512f, is not)."""
    from numba.core import config

    from metastab.bench.chains import host_cpu

    for feats, want in (
        ("+avx2,+avx512f", "AVX-512"),
        ("+avx2,-avx512f", "AVX2"),
        ("-avx2,-avx512f,+sse2", "no AVX2"),
        ("", "no AVX2"),
    ):
        monkeypatch.setattr(config, "CPU_NAME", "some-cpu")
        monkeypatch.setattr(config, "CPU_FEATURES", feats)
        assert host_cpu() == f"some-cpu ({want})", feats
    monkeypatch.setattr(config, "CPU_NAME", None)
    monkeypatch.setattr(config, "CPU_FEATURES", None)
    assert host_cpu().endswith(("(AVX-512)", "(AVX2)", "(no AVX2)"))


def test_compile_times_takes_a_known_case_and_no_other_option(capsys):
    for extra in (["nope"], ["demo", "--cold"], ["demo", "--steps", "3"], ["demo", "--sizes"]):
        code, out, err = run(capsys, "bench", "--compile-times", *extra)
        assert code == 2 and len(err.strip().splitlines()) == 1 and out == "", extra
        assert "compile-times" in err or "cold" in err, extra
    assert "unknown case 'nope'" in run(capsys, "bench", "--compile-times", "nope")[2]


def test_compile_times_record_each_compilation_and_its_own_share():
    """Two fresh functions, the outer calling the inner: numba compiles the inner inside the
    outer's event. Each is recorded once; the outer's own time is its total less the inner's,
    so the own times add up to the outer's total (the time spent compiling in all). Control:
    the outer's total exceeds its own time by the inner's."""
    from numba import njit
    from numba.core import event

    from metastab.bench.cold import CompileTimes

    @njit
    def inner(a):
        return a * 2.0 + 1.0

    @njit
    def outer(a):
        return inner(a) - 3.0

    times = CompileTimes().install()
    try:
        assert outer(1.0) == 0.0
    finally:
        event.unregister("numba:compile", times)
    recs = {r["function"].rsplit(".", 1)[-1]: r for r in times.records}
    assert set(recs) == {"inner", "outer"}
    assert recs["inner"]["own_s"] == recs["inner"]["total_s"] > 0
    assert recs["outer"]["own_s"] == pytest.approx(
        recs["outer"]["total_s"] - recs["inner"]["total_s"]
    )
    assert recs["outer"]["total_s"] > recs["outer"]["own_s"] > 0
    rows = times.by_function()
    assert [r["compiles"] for r in rows] == [1, 1]
    assert sum(r["own_s"] for r in rows) == pytest.approx(recs["outer"]["total_s"])
    assert rows[0]["own_s"] >= rows[1]["own_s"]


@pytest.mark.slow
def test_compile_times_of_a_cold_case_name_its_kernels():
    """A cold first use of SA_beta compiles its driver and its step, in seconds of CPU."""
    from metastab.bench.cold import compile_times

    rows = compile_times("softmax-flow")
    names = [r["function"] for r in rows]
    assert "metastab.kernels.cpu.chain_loop.loop_for.<locals>.loop" in names
    assert "metastab.kernels.cpu.euclidean_steps.softmax_flow_step" in names
    assert sum(r["own_s"] for r in rows) > 1.0
    assert all(r["own_s"] >= 0 and r["compiles"] >= 1 for r in rows)


@pytest.mark.slow
def test_cold_bench_measures_a_compile_that_the_warm_run_loads():
    """The flow's first use in an empty cache compiles (seconds of CPU) and its rerun loads what
    the first wrote: cold well above warm (measured 4.1 s against 1.7 s)."""
    from metastab.bench.cold import cold_bench

    seen = []
    (row,) = cold_bench(["softmax-flow"], on_row=seen.append)
    assert seen == [row] and row["case"] == "softmax-flow"
    assert row["cold_s"] > 1.5 * row["warm_s"] > 0 and row["ratio"] == row["cold_s"] / row["warm_s"]
