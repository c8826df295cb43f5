"""The ``metastab`` command as a user runs it: a separate process, its exit status, stdout and
stderr; fast start, one-line errors, outputs checked first and kept on Ctrl-C."""

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

EXE = Path(sys.executable).with_name("metastab")
HEAVY = ("numba", "scipy", "pandas", "matplotlib", "seaborn", "numpy")


def metastab(*argv, cwd=None, timeout=300):
    """Run the installed command; (exit status, stdout, stderr)."""
    res = subprocess.run(
        [str(EXE), *map(str, argv)], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )
    return res.returncode, res.stdout, res.stderr


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("metastab: error: "), err
    return lines[0]


# --------------------------------------------------------------------------- fast start


def _imported(code, modules):
    """Which of ``modules`` a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "code",
    [
        "import metastab",
        "import metastab; metastab.__version__; dir(metastab)",
        "from metastab.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
        "from metastab.cli import main\ntry:\n    main(['passage', '--help'])\nexcept SystemExit:\n"
        "    pass",
        "from metastab.cli import main\ntry:\n    main(['--version'])\n"
        "except SystemExit:\n    pass",
    ],
)
def test_start_does_not_import_the_heavy_libraries(code):
    assert _imported(code, HEAVY) == "[]"


@pytest.mark.parametrize(
    ("code", "loaded"),
    [
        (
            "from metastab.cli import main\ntry:\n    main(['passage', '--beta', '4', '--chains',"
            " '2', '--max-steps', '20', '--seed', '1'])\nexcept SystemExit:\n    pass",
            [],
        ),
        # control: an interval that needs scipy.stats loads it (and it scipy.optimize)
        (
            "import metastab as ms\nms.stats.garwood_interval(3, 31.0)",
            ["scipy.optimize", "scipy.stats"],
        ),
    ],
)
def test_a_run_imports_scipy_stats_and_optimize_only_where_used(code, loaded):
    """They take about a second and a half to import, which every command would pay: a passage
    run (simulation, table, summary) needs neither."""
    assert _imported(code, ("scipy.stats", "scipy.optimize")) == repr(loaded)


def test_help_and_version_answer():
    """The installed command answers; that it answers fast is checked above, by what it does not
    import (a timed assertion would test the machine)."""
    for argv in (["--help"], ["--version"]):
        code, out, _ = metastab(*argv)
        assert code == 0 and "metastab" in out


@pytest.mark.parametrize("module", ["metastab", "metastab.cli"])
def test_python_dash_m_runs_the_command(module):
    res = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == metastab("--version")[1]


def test_lazy_names_and_submodules_are_attributes():
    import metastab as ms

    for name in ("stats", "theory", "plotting", "sweep", "maxmargin", "exceptions", "results"):
        assert getattr(ms, name).__name__ == f"metastab.{name}"
    assert ms.polytopes.__name__ == "metastab.setups.polytopes"
    assert ms.initial.__name__ == "metastab.setups.initial"
    assert callable(ms.initial.shrunk) and callable(ms.initial.sphere_uniform)
    assert callable(ms.simulate) and callable(ms.first_passage)
    assert {"SoftmaxChain", "first_passage", "stats", "plotting"} <= set(dir(ms))
    assert {"fit_scaling", "fit_report", "ScalingFit"} <= set(dir(ms.stats))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        ms.nothing  # noqa: B018 (the attribute access is the test)
    assert "importlib" not in dir(ms)


@pytest.mark.parametrize(
    "old, new, name",
    [
        ("polytope", "setups.polytopes", "regular_polygon"),
        ("configs", "setups.initial", "shrunk"),
        ("sphere_configs", "setups.sphere", "sphere_uniform"),
        ("sphere", "models.sphere", "SphereFlow"),
        ("observables", "results.track", "plateau_durations"),
        ("report", "studies.verdict", "verdict"),
        ("bench_sphere", "bench.phase_diagram", "phase_diagram_bench"),
        ("demo", "bench.demo", "escape_demo"),
    ],
)
def test_old_module_names_are_aliases_of_the_moved_modules(old, new, name):
    """The attribute names of the modules that moved to the layout by role still reach them
    (for one release, with a DeprecationWarning), and dir(metastab) lists only the new names."""
    import metastab as ms

    with pytest.warns(DeprecationWarning, match=f"use metastab.{new}"):
        module = getattr(ms, old)
    assert module.__name__ == f"metastab.{new}" and callable(getattr(module, name))
    assert old not in dir(ms)


def test_same_named_packages_name_the_former_modules_contents():
    """metastab.bench, models, results, studies and theory became packages under the same names;
    what the former modules offered is still there."""
    import metastab as ms

    assert callable(ms.bench.run_bench) and callable(ms.bench.escape_bench)
    assert ms.models.SoftmaxChain is ms.SoftmaxChain and ms.models.SphereFlow is ms.SphereFlow
    assert ms.results.FirstPassage is ms.FirstPassage and callable(ms.results.write_table)
    assert callable(ms.studies.run_study) and callable(ms.theory.frozen_law)


# --------------------------------------------------------------------------- one-line errors


@pytest.mark.parametrize(
    "argv, words",
    [
        (["passage", "--beta", "abc"], ["--beta", "abc"]),
        (["passage", "--seed", "abc"], ["--seed", "abc"]),
        (["simulate", "--n", "1e6.5"], ["--n", "1e6.5"]),
        (["simulate", "--chains", "x"], ["--chains"]),
        (["fly"], ["fly"]),
        ([], ["COMMAND"]),
    ],
)
def test_argument_errors_are_one_line(argv, words):
    code, _, err = metastab(*argv)
    line = one_line_error(err)
    assert code == 2 and all(w in line for w in words), line


def test_integral_floats_are_integers():
    code, out, err = metastab(
        "simulate", "--n", "1e1", "--steps", "1e1", "--chains", "2", "--seed", "1"
    )
    assert code == 0, err
    assert "n 10" in out


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("empty.txt", "", ["empty.txt", "no numbers"]),
        ("text.npy", "1 2\n3 4\n", ["text.npy", "not a .npy file"]),
        ("header.csv", "x,y\n1,2\n3,4\n", ["header.csv", "could not convert"]),
    ],
)
def test_init_file_errors_name_the_file(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_text(content)
    code, _, err = metastab("passage", "--init", f"file:{path}", "--chains", "2", "--seed", "1")
    line = one_line_error(err)
    assert code == 2 and all(w in line for w in words), line


def test_init_file_in_another_dimension_says_that_polytope_sets_d(tmp_path):
    path = tmp_path / "x3.npy"
    np.save(path, np.random.default_rng(0).normal(size=(8, 3)))
    code, _, err = metastab("simulate", "--init", f"file:{path}", "--steps", "1")
    line = one_line_error(err)
    assert code == 2 and "x3.npy" in line and "R^3" in line and "--polytope" in line, line
    code, _, err = metastab(
        "simulate",
        "--init",
        f"file:{path}",
        "--steps",
        "1",
        "--polytope",
        "simplex:3",
        "--seed",
        "1",
    )
    assert code == 0, err


# --------------------------------------------------------------------------- sizes


def test_passage_too_large_is_refused_in_one_line():
    code, out, err = metastab(
        "passage", "--n", "100000", "--chains", "1e6", "--max-steps", "1", "--seed", "1"
    )
    line = one_line_error(err)
    assert code == 2 and "GiB" in line and "100000 tokens" in line, line


def test_simulate_too_many_chains_is_refused_before_allocating():
    code, _, err = metastab("simulate", "--chains", "1e12", "--steps", "1", "--seed", "1")
    line = one_line_error(err)
    assert code == 2 and "1000000000000 chains" in line and "GiB" in line, line


# --------------------------------------------------------------------------- outputs


@pytest.mark.parametrize("out", ["/proc/metastab-test.csv", "{tmp}/afile/x.csv"])
def test_unwritable_out_is_refused_before_the_run(tmp_path, out):
    (tmp_path / "afile").write_text("a file, not a folder")
    out = out.format(tmp=tmp_path)
    code, stdout, err = metastab(
        "passage", "--beta", "4", "--chains", "4", "--max-steps", "50", "--seed", "1", "--out", out
    )
    line = one_line_error(err)
    assert code == 2 and repr(out) in line and ".tmp" not in line, line
    assert "chains" not in stdout  # nothing was computed (no table printed)


def test_existing_out_is_not_overwritten(tmp_path):
    out = tmp_path / "a.csv"
    out.write_text("precious\n")
    code, _, err = metastab(
        "passage", "--chains", "4", "--max-steps", "50", "--seed", "1", "--out", out
    )
    line = one_line_error(err)
    assert code == 2 and "--overwrite" in line and out.read_text() == "precious\n"
    code, _, err = metastab(
        "passage", "--chains", "4", "--max-steps", "50", "--seed", "1", "--out", out, "--overwrite"
    )
    assert code == 0, err
    assert len(pd.read_csv(out)) == 4


def test_passage_table_has_the_setting_columns(tmp_path):
    out = tmp_path / "p.csv"
    code, _, err = metastab(
        "passage",
        "--beta",
        "4",
        "--chains",
        "3",
        "--max-steps",
        "50",
        "--seed",
        "7",
        "--init",
        "in-cells",
        "--n",
        "12",
        "--out",
        out,
    )
    assert code == 0, err
    frame = pd.read_csv(out)
    assert frame[["polytope", "init", "n", "seed"]].drop_duplicates().values.tolist() == [
        ["regular-5", "in-cells", 12, 7]
    ]


# runs a command with SIGINT's default action: pytest started as a background job of a
# non-interactive shell ignores SIGINT, and so would the command, which inherits that
_SIGINT_DEFAULT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


def test_seed_is_printed_first_and_rows_as_they_finish_and_ctrl_c_keeps_them(tmp_path):
    """β = 4 finishes in a moment, β = 40 never does (exact stepping, huge budget): the seed and
    the β = 4 row are printed while β = 40 runs, and SIGINT writes the finished rows and those of
    the β = 40 run up to the step it reached."""
    out = tmp_path / "run.csv"
    proc = subprocess.Popen(
        [
            *_SIGINT_DEFAULT,
            str(EXE),
            "passage",
            "--beta",
            "4",
            "40",
            "--chains",
            "8",
            "--max-steps",
            "1000000000000",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )
    text = ""
    try:
        deadline = time.monotonic() + 240
        while not any(line.split()[:1] == ["4"] for line in text.splitlines()):  # the β = 4 row
            assert time.monotonic() < deadline, f"no beta = 4 row within 240 s: {text!r}"
            if select.select([proc.stdout], [], [], 1)[0]:
                text += os.read(proc.stdout.fileno(), 65536).decode()
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        err = err.decode()
    finally:
        proc.kill()
        proc.wait()  # reaped and its pipes closed here: not reported by a later test
        proc.stdout.close()
        proc.stderr.close()
    lines = text.splitlines()
    assert lines[1].startswith("seed ") and "repeats it" in lines[1]  # no --seed: printed
    assert proc.returncode == 130, err
    assert "interrupted" in err and str(out) in err and "Traceback" not in err
    # the finished beta = 4 run, and the beta = 40 run up to the step it reached
    frame = pd.read_csv(out)
    assert frame["beta"].unique().tolist() == [4.0, 40.0] and len(frame) == 16
    meta = json.loads(out.with_name("run.csv.json").read_text())
    assert meta["interrupted"] is True and len(meta["runs"]) == 2
    cut = meta["runs"][1]["max_steps"]
    assert 0 < cut < 10**12 and f"up to step {cut}" in err
    assert (frame.loc[frame["beta"] == 40.0, "max_steps"] == cut).all()
    seed = lines[1].split()[1]
    assert meta["runs"][0]["seed"]["entropy"] == seed


# --------------------------------------------------------------------------- progress


def test_progress_counts_chains_and_states_only_elapsed_time(tmp_path):
    code, _, err = metastab(
        "passage", "--beta", "4", "--chains", "6", "--max-steps", "200", "--seed", "1", "--progress"
    )
    assert code == 0
    assert "6/6" in err and "elapsed" in err
    assert "left" not in err and "<" not in err  # no estimate of the time left
    code, _, err = metastab(
        "passage", "--beta", "4", "--chains", "6", "--max-steps", "200", "--seed", "1"
    )
    assert code == 0 and err == ""  # off when stderr is not a terminal


@pytest.mark.slow
def test_cold_kernel_cache_is_announced_and_not_timed(tmp_path):
    """A fresh numba cache directory: the first run says that it compiles and its wall_s leaves
    the compilation out (it takes tens of seconds); the second run compiles nothing."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    argv = [str(EXE), "demo", "--beta", "4", "--chains", "4", "--max-steps", "100", "--progress"]
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == second.returncode == 0, first.stderr
    assert "compiling kernels (once" in first.stderr
    assert "compiling" not in second.stderr
    row = next(
        line.split() for line in first.stdout.splitlines() if line.split()[:2] == ["4", "4"]
    )  # beta 4, 4 chains
    assert float(row[-1]) < 2.0, row  # wall_s of 4 chains x <= 100 steps


# --------------------------------------------------------------------------- fit, help


def test_fit_on_one_beta_prints_the_table_and_why_there_is_no_fit(tmp_path):
    data = tmp_path / "one.csv"
    assert (
        metastab(
            "passage",
            "--beta",
            "4",
            "--chains",
            "16",
            "--max-steps",
            "300",
            "--seed",
            "1",
            "--out",
            data,
        )[0]
        == 0
    )
    code, out, err = metastab("fit", str(data), "--figure", "none")
    assert code == 0, err
    assert "mean_low" in out and any(line.split()[:2] == ["4", "16"] for line in out.splitlines())
    assert "no scaling fit" in out and "2 or more betas" in out


def test_fit_when_every_chain_is_censored(tmp_path):
    data = tmp_path / "cens.csv"
    assert (
        metastab(
            "passage",
            "--beta",
            "30",
            "40",
            "--chains",
            "8",
            "--max-steps",
            "20",
            "--seed",
            "1",
            "--out",
            data,
        )[0]
        == 0
    )
    code, out, err = metastab("fit", str(data), "--figure", "none")
    assert code == 0, err
    assert "no events" in out and "no scaling fit" in out and "no beta" in out


@pytest.mark.parametrize("command", ["simulate", "passage", "demo", "bench", "fit"])
def test_every_help_page_shows_an_example(command):
    code, out, _ = metastab(command, "--help")
    assert code == 0 and "examples:" in out and f"metastab {command}" in out.split("examples:")[1]


def test_defaults_are_stated():
    out = metastab("passage", "--help")[1]
    assert "index of the first chain (default 0" in " ".join(out.split())
    assert "no default: --model localmax needs it" in " ".join(out.split())


def test_bench_escape_prints_rows_as_they_are_measured():
    code, out, err = metastab(
        "bench", "--escape", "--beta", "4", "6", "--chains", "4", "--progress"
    )
    assert code == 0, err
    rows = [line.split()[0] for line in out.splitlines() if line.split()[:1] in (["4"], ["6"])]
    assert rows == ["4", "6"]
    assert "chains stopped" in err


def test_outputs_of_the_readme_commands_are_ignored_by_git():
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    paths = [
        "data/sweeps/example/results/part-0.parquet",
        "data/metastability/quick/x.csv",
        "escape.csv",
        "escape.csv.json",
        "p.arrhenius.png",
        "traj.parquet",
    ]
    res = subprocess.run(["git", "check-ignore", *paths], cwd=root, capture_output=True, text=True)
    assert sorted(res.stdout.split()) == sorted(paths), res.stdout
    kept = subprocess.run(
        ["git", "check-ignore", "-q", "data/metastability/chains.parquet"], cwd=root
    )
    assert kept.returncode == 1  # committed study data stays tracked
