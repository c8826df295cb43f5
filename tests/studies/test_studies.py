"""The studies of studies/: each runs in its quick form end to end, and every committed verdict,
checks table, report and README headline number is recomputed from the committed tables."""

import io
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metastab.cli import main
from metastab.studies import ConfigError, package_name, study_module
from metastab.studies import verdict as rp
from metastab.studies.runner import Study, list_studies, load_config, run_study, study_about
from metastab.studies.study import ReportTemplate

STUDIES = list_studies()
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
# a number: not inside a word, an exponent (^) or a longer number; a sentence's full stop may end it
NUMBER = re.compile(r"(?<![\w.^−-])[−-]?\d+(?:\.\d+)?(?:e[+−-]?\d+)?(?!\w|\.\d)")


def _verdict_line(text: str) -> str:
    found = re.findall(r"^Verdict: .*$", text, re.MULTILINE)
    assert len(found) == 1, f"a report has exactly one Verdict line, found {len(found)}"
    return found[0]


def verdict_problems(folder: Path) -> list[str]:
    """What disagrees between a study folder's checks.csv, its verdict and its report."""
    checks = rp.read_checks(folder / "checks.csv")
    line = _verdict_line((folder / "report.md").read_text())
    expected = rp.verdict_line(checks)
    return (
        []
        if line == expected
        else [f"{folder.name}: report says {line!r}, the checks give {expected!r}"]
    )


def checks_problems(name: str, folder: Path, fresh: pd.DataFrame | None = None) -> list[str]:
    """Differences between the committed checks.csv and ``fresh`` (default: the one recomputed
    from the tables)."""
    committed = rp.read_checks(folder / "checks.csv")
    if fresh is None:
        fresh = Study(name).checks(folder, load_config(name))
        fresh = rp.read_checks(io.StringIO(fresh.to_csv(index=False)))
    problems = []
    if list(fresh["criterion"]) != list(committed["criterion"]):
        return [f"{name}: criteria {list(committed['criterion'])} != {list(fresh['criterion'])}"]
    for col in ("role", "statement", "rule", "pass", "source", "sample"):
        bad = fresh[col].astype(str) != committed[col].astype(str)
        problems += [f"{name}: {c} {col}" for c in fresh.loc[bad, "criterion"]]
    for col in ("measured", "low", "high", "threshold"):
        a, b = fresh[col].to_numpy(float), committed[col].to_numpy(float)
        ok = np.isclose(a, b, rtol=1e-9, atol=0, equal_nan=True)
        problems += [f"{name}: {c} {col}" for c in fresh.loc[~ok, "criterion"]]
    return problems


def _readme_rows(text: str) -> dict:
    rows = {}
    for line in text.splitlines():
        m = re.match(
            r"^\| `([a-z-]+)` \| (.*) \| (holds with a correction|holds|fails|"
            r"not tested) \| (.*) \| ([^|]*) \|$",
            line,
        )
        if m:
            rows[m.group(1)] = {"verdict": m.group(3), "headline": m.group(4)}
    return rows


def _numbers(text: str) -> set:
    return {n.replace("−", "-") for n in NUMBER.findall(text)}


def readme_problems(readme: str, data: Path) -> list[str]:
    """Studies whose README row has another verdict than their checks, or quotes a headline
    number that their committed report does not contain."""
    rows = _readme_rows(readme)
    problems = [f"{n}: no README row" for n in STUDIES if n not in rows]
    for name, row in rows.items():
        verdict = rp.verdict(rp.read_checks(data / name / "checks.csv"))
        if row["verdict"] != verdict:
            problems.append(f"{name}: README says {row['verdict']!r}, the checks give {verdict!r}")
        quoted = _numbers((data / name / "report.md").read_text())
        missing = sorted(_numbers(row["headline"]) - quoted)
        if missing:
            problems.append(f"{name}: README headline numbers not in the report: {missing}")
    return problems


@pytest.mark.study
@pytest.mark.parametrize("name", STUDIES)
def test_quick_study_writes_data_checks_figures_and_a_computed_verdict(name, tmp_path):
    report = run_study(name, quick=True, out=tmp_path, log=lambda *a: None)
    text = report.read_text()
    checks = rp.read_checks(tmp_path / "checks.csv")
    assert _verdict_line(text) == rp.verdict_line(checks)
    assert set(checks["role"]) <= set(rp.ROLES) and (checks["role"] == "claim").any()
    assert list(tmp_path.glob("*.png")), "a study draws at least one figure"
    tables = [p for p in tmp_path.iterdir() if p.suffix in (".csv", ".parquet")]
    for table in tables:
        assert table.with_name(table.name + ".json").exists(), f"{table.name} has no sidecar"
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["quick"] is True and meta["study"] == name


@pytest.mark.parametrize("name", STUDIES)
def test_every_study_has_a_quick_config_description_and_committed_results(name):
    assert load_config(name, quick=True) != load_config(name), "--quick must reduce the run"
    about = study_about(name)
    assert about.get("description") and about.get("seconds_full") and about.get("seconds_quick")
    assert "about" not in load_config(name).to_dict()
    assert (DATA / name / "report.md").exists() and (DATA / name / "checks.csv").exists()


@pytest.mark.parametrize("name", STUDIES)
def test_committed_checks_are_recomputed_from_the_committed_tables(name):
    assert checks_problems(name, DATA / name) == []


@pytest.mark.parametrize("name", STUDIES)
def test_committed_verdict_is_the_verdict_of_the_committed_checks(name):
    assert verdict_problems(DATA / name) == []


def test_readme_verdicts_and_headline_numbers_follow_the_committed_data():
    assert readme_problems((ROOT / "README.md").read_text(), DATA) == []


def test_a_hand_edited_verdict_or_a_stale_readme_number_fails(tmp_path):
    # negative controls of the three tests above, on edited copies
    copy = tmp_path / "hardmax-nsd"
    shutil.copytree(DATA / "hardmax-nsd", copy)
    report = copy / "report.md"
    report.write_text(
        re.sub(r"^Verdict: \w+", "Verdict: holds", report.read_text(), flags=re.MULTILINE)
    )
    assert verdict_problems(copy)
    checks = rp.read_checks(copy / "checks.csv")
    checks.loc[0, "measured"] *= 1.001
    checks.to_csv(copy / "checks.csv", index=False)
    assert checks_problems("hardmax-nsd", copy)
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `metastability` |"))
    assert "1.4987" in row
    stale = row.replace("1.4987", "1.4989", 1)  # a number the data do not give
    assert readme_problems(readme.replace(row, stale), DATA)
    assert readme_problems(readme.replace("| fails |", "| holds |"), DATA)


@pytest.mark.study
@pytest.mark.parametrize("name", STUDIES)
def test_committed_report_is_rendered_from_the_committed_tables(name, tmp_path):
    # every number and sentence of the report, re-rendered from a copy of the tables (figures
    # too): the same bytes but for the line of wall times; the re-rendered checks.csv the
    # committed one, sample column included (its numbers to 1e-9: a last digit may differ with
    # the machine's BLAS), and so its verdict
    copy = tmp_path / name
    shutil.copytree(DATA / name, copy, ignore=shutil.ignore_patterns("quick", "*.png"))
    run_study(name, out=copy, render=True, log=lambda *a: None)

    def body(path):
        return re.sub(r"^Computed by .*$", "", path.read_text(), flags=re.MULTILINE)

    assert body(copy / "report.md") == body(DATA / name / "report.md")
    # the tables the render recomputed (run.py's analyse) are the committed bytes, sidecars too
    for table in sorted(copy.iterdir()):
        if table.suffix in (".csv", ".parquet", ".json") and not table.name.startswith(
            ("checks.csv", "run.json")
        ):
            assert table.read_bytes() == (DATA / name / table.name).read_bytes(), table.name
    rendered = rp.read_checks(copy / "checks.csv")
    assert checks_problems(name, DATA / name, rendered) == []
    assert rp.verdict_line(rendered) == _verdict_line((DATA / name / "report.md").read_text())


def test_verdict_rule():
    def frame(*rows):
        # each claim and correction with a power row that rejects its wrong prediction
        out = []
        for r in rows:
            out.append(rp.check(*r[:3], passed=r[3]))
            if r[1] in ("claim", "correction"):
                out.append(rp.power(out[-1], "wrong", rejected=True))
        return rp.checks_frame(out)

    assert rp.verdict(frame(("a", "claim", "x", True), ("b", "context", "y", None))) == "holds"
    assert (
        rp.verdict(frame(("a", "claim", "x", False), ("a/f", "correction", "x'", True)))
        == "holds with a correction"
    )
    # a correction of another claim does not rescue a failing one
    assert (
        rp.verdict(
            frame(
                ("a", "claim", "x", False),
                ("b", "claim", "y", True),
                ("b/f", "correction", "y'", True),
            )
        )
        == "fails"
    )
    assert (
        rp.verdict(frame(("a", "claim", "x", False), ("a/f", "correction", "x'", False))) == "fails"
    )
    assert rp.verdict(frame(("a", "claim", "x", None))) == "not tested"
    assert (
        rp.verdict(frame(("a", "claim", "x", True), ("c", "control", "z", False))) == "not tested"
    )
    with pytest.raises(ValueError, match="context row"):
        rp.check("c", "context", "z", passed=True)
    with pytest.raises(ValueError, match="CLAIM/NAME"):
        rp.check("fix", "correction", "z", passed=True)
    with pytest.raises(ValueError, match="CRITERION/power"):
        rp.check("a/power", "claim", "z", passed=True)


def _claim(name, passed, rejected, role="claim"):
    row = rp.check(name, role, "x", passed=passed)
    return [row, rp.power(row, "a wrong prediction", rejected=rejected)]


def test_a_powerless_check_is_not_counted_and_the_verdict_says_so():
    # negative control: a check that passes its wrong prediction too (a planted powerless check)
    powered, powerless = _claim("law", True, True), _claim("rate", True, False)
    assert rp.verdict(rp.checks_frame(powered + powerless)) == "holds"
    line = rp.verdict_line(rp.checks_frame(powered + powerless))
    assert "1 of 1 tested claims pass" in line and "not tested: no power: `rate`" in line
    assert rp.verdict(rp.checks_frame(powerless)) == "not tested"
    assert "not tested: no power: `rate`" in rp.verdict_line(rp.checks_frame(powerless))
    # a power row without a pass value does not count either
    unknown = _claim("law", True, None)
    assert rp.verdict(rp.checks_frame(unknown)) == "not tested"
    assert "power not measured: `law`" in rp.verdict_line(rp.checks_frame(unknown))
    # a failing claim was rejected by its check: it counts whatever its power row says
    assert rp.verdict(rp.checks_frame(_claim("law", False, False))) == "fails"
    # a powerless correction does not carry a failing claim
    fix = _claim("law/fixed", True, False, role="correction")
    assert rp.verdict(rp.checks_frame(_claim("law", False, True) + fix)) == "fails"
    fix = _claim("law/fixed", True, True, role="correction")
    assert rp.verdict(rp.checks_frame(_claim("law", False, True) + fix)) == (
        "holds with a correction"
    )


def test_a_committed_claim_without_power_is_named_and_the_old_verdict_line_is_stale(tmp_path):
    # negative control on committed data: plant a powerless check in a copy of geometry
    copy = tmp_path / "geometry"
    shutil.copytree(DATA / "geometry", copy, ignore=shutil.ignore_patterns("quick", "*.png"))
    checks = rp.read_checks(copy / "checks.csv")
    assert rp.unpowered(checks) == {"no power": [], "power not measured": []}
    checks.loc[checks["criterion"] == "voronoi_equinorm/power", "pass"] = "false"
    checks.to_csv(copy / "checks.csv", index=False)
    line = rp.verdict_line(rp.read_checks(copy / "checks.csv"))
    assert "2 of 2 tested claims pass" in line
    assert "not tested: no power: `voronoi_equinorm`" in line
    assert verdict_problems(copy)


def test_every_claim_and_correction_needs_one_power_row():
    claim = rp.check("law", "claim", "x", passed=True)
    with pytest.raises(ValueError, match=r"needs a power row.*\['law'\]"):
        rp.checks_frame([claim])
    stray = rp.power(rp.check("rate", "claim", "y"), "wrong", rejected=True)
    with pytest.raises(ValueError, match=r"power rows of no claim.*\['rate'\]"):
        rp.checks_frame([claim, rp.power(claim, "wrong", rejected=True), stray])
    with pytest.raises(ValueError, match="only a claim or a correction"):
        rp.power(rp.check("c", "control", "z", passed=True), "wrong", rejected=True)


@pytest.mark.parametrize("name", STUDIES)
def test_every_committed_claim_has_a_power_row(name):
    # checks_frame refuses a table without; this reads the committed file
    checks = rp.read_checks(DATA / name / "checks.csv")
    rp.checks_frame(checks.to_dict("records"))


def test_render_refuses_tables_of_another_configuration(tmp_path):
    copy = tmp_path / "geometry"
    shutil.copytree(DATA / "geometry", copy, ignore=shutil.ignore_patterns("quick", "*.png"))
    meta = json.loads((copy / "run.json").read_text())
    meta["config"]["seed"] = 1
    (copy / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="another configuration .*seed"):
        run_study("geometry", out=copy, render=True, log=lambda *a: None)


def test_render_accepts_other_wrong_predictions(tmp_path):
    # the [power] table is read by the checks alone: changing it needs a render, not a run
    copy = tmp_path / "geometry"
    shutil.copytree(DATA / "geometry", copy, ignore=shutil.ignore_patterns("quick", "*.png"))
    meta = json.loads((copy / "run.json").read_text())
    meta["config"]["power"]["area_error"] = 0.5
    (copy / "run.json").write_text(json.dumps(meta))
    run_study("geometry", out=copy, render=True, log=lambda *a: None)
    assert verdict_problems(copy) == []


def test_study_list_prints_what_each_study_reproduces_and_its_time(capsys):
    assert main(["study", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(STUDIES)
    for name, line in zip(STUDIES, out):
        assert line.startswith(name) and study_about(name)["description"] in line
        assert re.search(r"\[quick/full: \d+ s/\d+ s\]$", line), line


def test_unknown_study_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["study", "no-such-study"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown study 'no-such-study'" in err


def test_checks_table_round_trips(tmp_path):
    claim = rp.check(
        "a",
        "claim",
        "x",
        measured=1.5,
        low=1.0,
        high=2.0,
        threshold=0.5,
        rule="low > threshold",
        passed=True,
    )
    frame = rp.checks_frame(
        [claim, rp.check("b", "context", "y"), rp.power(claim, "wrong", rejected=False)]
    )
    rp.write_checks(frame, tmp_path, {})
    back = rp.read_checks(tmp_path / "checks.csv")
    assert list(back["pass"]) == ["true", "NA", "false"] and back.loc[0, "low"] == 1.0
    assert pd.isna(back.loc[1, "measured"])
    assert list(back["role"]) == ["claim", "context", "power"]


def test_metastability_draws_every_beta_from_its_own_root(monkeypatch):
    # The joint scaling fit across β assumes independent samples: every (engine, β) has its own
    # root of streams, derived from the configured seed and β alone and shared by the events at
    # that β (one path per chain). With one root for all β (the old seeding) this fails.
    import metastab as ms

    run = Study("metastability").module("run")
    cfg = load_config("metastability", quick=True) | {
        "beta_stop": 6.0,
        "min_chains": 4,
        "max_chains": 4,
        "min_escapes": 1,
        "accelerated_beta_stop": 9.0,
        "accelerated_chains": 4,
        "merge_tols": [1.0e-8],
        "merge_tol_chains": 4,
    }
    seen, real_fp, real_sim = [], ms.first_passage, ms.simulate

    def first_passage(model, x0, event, *, rng, **kw):
        seen.append((kw.get("mode", "exact"), model.beta, repr(ms.as_seed(rng))))
        return real_fp(model, x0, event, rng=rng, **kw)

    def simulate(model, x0, *, rng, **kw):
        seen.append(("simulate", model.beta, repr(ms.as_seed(rng))))
        return real_sim(model, x0, rng=rng, **kw)

    # first passages go through metastab.studies.measurement.run_point, which calls the engine's
    monkeypatch.setattr(ms.engine, "first_passage", first_passage)
    monkeypatch.setattr(run, "simulate", simulate)
    state, log = run.setup(cfg), (lambda *a: None)
    run.climb(cfg, state, log)
    fast = run.climb_accelerated(cfg, state, log)[0]
    run.merge_tol_effect(cfg, state, log)
    run.merge_points(state, {5.0: 3, 6.0: 3}, chains=4, seed=int(cfg.seed))
    roots = {}
    for mode, g in pd.DataFrame(seen, columns=["mode", "beta", "root"]).groupby("mode"):
        per_beta = g.groupby("beta")["root"]
        assert (per_beta.nunique() == 1).all(), f"{mode}: two roots at one β"
        roots[mode] = per_beta.first()
        assert roots[mode].nunique() == len(roots[mode]) >= 2, f"{mode}: a root shared across β"
    assert set(roots) == {"exact", "accelerated", "simulate"} and len(roots["accelerated"]) == 4
    assert not set(roots["exact"]) & set(roots["accelerated"])  # the engines are independent
    assert roots["simulate"].equals(roots["exact"])  # merge points: the direct chains' paths
    # the same config gives the same bits; another seed other streams
    assert run.climb_accelerated(cfg, state, log)[0].equals(fast)
    other = run.climb_accelerated(cfg | {"accelerated_seed": 1}, state, log)[0]
    assert not other["steps"].equals(fast["steps"])


def _edited_config(tmp_path, name, old, new):
    """A copy of study ``name``'s config.toml with the line ``old`` replaced by ``new``."""
    text = (ROOT / "studies" / package_name(name) / "config.toml").read_text()
    assert old in text
    path = tmp_path / "config.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "min_chains = 35",
            "min_chain = 35",
            "unknown key 'min_chain' (= 35); did you mean 'min_chains'?",
        ),
        ("min_chains = 35", "", "missing key 'min_chains'"),
        ("min_chains = 35", 'min_chains = "35"', "key 'min_chains' must be an integer, got '35'"),
        ("min_chains = 35", "min_chains = 35.0", "key 'min_chains' must be an integer, got 35.0"),
        ("min_chains = 35", "min_chains = 0", "key 'min_chains' must lie in [1, inf], got 0"),
        ("gamma = 0.1", "gamma = true", "key 'gamma' must be a number, got True"),
        ("gamma = 0.1", "gamma = 1.5", "key 'gamma' must lie in [0.0, 1.0], got 1.5"),
        ("max_chains = 100", "max_chains = 20", "key 'min_chains' (35) must not exceed"),
        ("gamma = 0.1", "gamma = nan", "key 'gamma' must be a number, got nan"),
        ("merge_tols = [", "merge_tols = ['x', ", "key 'merge_tols[0]' must be a number, got 'x'"),
    ],
)
def test_a_config_with_a_wrong_key_or_value_is_refused_naming_both(tmp_path, old, new, message):
    path = _edited_config(tmp_path, "metastability", old, new)
    with pytest.raises(ConfigError) as info:
        load_config("metastability", path=path)
    assert str(info.value).startswith(f"{path}: {message}"), str(info.value)


def test_nested_tables_are_checked_with_their_path(tmp_path):
    path = _edited_config(tmp_path, "phase-diagram", "[checks]", "[checks]\nextra = 1\n")
    with pytest.raises(ConfigError, match=r"unknown key 'checks\.extra' \(= 1\)"):
        load_config("phase-diagram", path=path)
    config = load_config("phase-diagram")
    assert config.reduction.d == config.to_dict()["reduction"]["d"]


def test_a_refused_config_is_one_line_and_exit_2_on_the_command_line(tmp_path, capsys):
    path = _edited_config(tmp_path, "metastability", "min_chains = 35", "min_chains = -1")
    with pytest.raises(SystemExit) as info:
        main(["study", "metastability", "--config", str(path), "--out", str(tmp_path)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'min_chains' must lie in [1, inf], got -1" in err
    assert not (tmp_path / "run.json").exists()  # refused before anything ran


def test_a_config_is_typed_and_records_its_toml_table():
    config = load_config("metastability", quick=True)
    table = config.to_dict()
    assert isinstance(config.min_chains, int) and table["min_chains"] == config.min_chains
    with pytest.raises(TypeError, match="not subscriptable"):
        config["min_chains"]  # noqa: B018  (read by typed attributes only)
    assert list(table)[:3] == ["polygon_vertices", "gamma", "eps_over_gamma_diameter"]
    assert (config | {"min_chains": 4}).min_chains == 4 and config.min_chains == 30
    with pytest.raises(ConfigError, match="unknown key 'chains'"):
        config | {"chains": 4}  # noqa: B018


def test_studies_are_a_package_importing_each_other_once_as_modules():
    import studies.staircase.run as staircase
    from metastab.studies import measurement

    assert study_module("staircase", "run") is staircase
    assert study_module("meanfield-clusters", "run").on_circle is staircase.on_circle
    # the helpers several studies measure with are the framework's, not one study's
    for name in ("metastability", "sphere-metastability"):
        assert study_module(name, "run").quiet is measurement.quiet
    assert study_module("hardmax-nsd", "run").__name__ == "studies.hardmax_nsd.run"
    assert not any(type(f).__module__.startswith("metastab") for f in sys.meta_path)
    with pytest.raises(ValueError, match="unknown study 'nope'"):
        study_module("nope", "run")
    with pytest.raises(ValueError, match="lower-case letters, digits and '-'"):
        study_module("hardmax_nsd", "run")  # the package's spelling is not a study's name


def _forget_studies(monkeypatch, path: list[str]) -> None:
    """``sys.path`` replaced by ``path`` and the package ``studies`` unimported (both restored
    after the test)."""
    monkeypatch.setattr(sys, "path", path)
    for name in [m for m in sys.modules if m == "studies" or m.startswith("studies.")]:
        monkeypatch.delitem(sys.modules, name)


def test_studies_import_from_the_clone_without_its_root_on_the_path(monkeypatch, tmp_path):
    away = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    _forget_studies(monkeypatch, list(away))
    module = study_module("hardmax-nsd", "config")
    assert Path(module.__file__).parents[1] == ROOT / "studies" and str(ROOT) in sys.path
    # a package named studies elsewhere is refused, not imported in their place
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "__init__.py").write_text("")
    _forget_studies(monkeypatch, [str(tmp_path), *away])
    with pytest.raises(ImportError, match="is not the studies folder"):
        study_module("hardmax-nsd", "config")


@pytest.mark.parametrize("name", STUDIES)
def test_stages_are_apart_checks_never_import_figures_and_figures_hold_no_report(name):
    import ast

    folder = ROOT / "studies" / package_name(name)
    for stem in ("config", "run", "checks", "figures", "report"):
        assert (folder / f"{stem}.py").is_file(), f"{name} has no {stem}.py"
    assert (folder / "report.md").is_file(), f"{name} has no report template"
    tree = ast.parse((folder / "checks.py").read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not any("figures" in m or "report" in m for m in imported), imported
    figures = {
        n.name for n in ast.parse((folder / "figures.py").read_text()).body if hasattr(n, "name")
    }
    assert "report" not in figures and "report" in dir(study_module(name, "report"))


def test_a_report_template_refuses_a_missing_or_unused_value():
    t = ReportTemplate("<!-- part: a -->\nb = $b.\n<!-- part: c -->\nc\n")
    assert t("a", b=1) == "b = 1." and t("c") == "c"
    with pytest.raises(ValueError, match=r"without a value \['b'\]"):
        t("a")
    with pytest.raises(ValueError, match=r"without a placeholder \['x'\]"):
        t("a", b=1, x=2)
    with pytest.raises(ValueError, match="no part 'd'"):
        t("d")
    with pytest.raises(ValueError, match="a malformed part line after part 'a'"):
        ReportTemplate("<!-- part: a -->\nx\n<!-- part: b-c -->\ny\n")
    with pytest.raises(ValueError, match="two parts named 'a'"):
        ReportTemplate("<!-- part: a -->\nx\n<!-- part: a -->\ny\n")


def test_render_recomputes_the_analysed_tables_byte_for_byte(tmp_path):
    # collapse's fits are derived from its simulated summary by run.py's analyse, which the
    # runner calls on render too: from a copy without fits.csv they come back the same bytes
    copy = tmp_path / "collapse"
    shutil.copytree(DATA / "collapse", copy, ignore=shutil.ignore_patterns("quick", "*.png"))
    for name in ("fits.csv", "fits.csv.json"):
        (copy / name).unlink()
    study = Study("collapse")
    study.analyse(copy, load_config("collapse"))
    for name in ("fits.csv", "fits.csv.json"):
        assert (copy / name).read_bytes() == (DATA / "collapse" / name).read_bytes(), name
    # negative control: another simulated summary gives other fits
    summary = pd.read_csv(copy / "summary.csv")
    summary["median"] *= 2.0 ** summary["beta"].clip(lower=0)
    summary.to_csv(copy / "summary.csv", index=False)
    study.analyse(copy, load_config("collapse"))
    assert (copy / "fits.csv").read_bytes() != (DATA / "collapse" / "fits.csv").read_bytes()
    # a study without an analysis step: nothing to do
    assert not hasattr(study_module("geometry", "run"), "analyse")
    Study("geometry").analyse(copy, load_config("geometry"))


@pytest.mark.parametrize("name", STUDIES)
def test_a_study_s_analysis_step_takes_the_output_folder_and_the_config(name):
    # the runner calls run.py's analyse(out, config) after the run and on render
    import inspect

    analyse = getattr(study_module(name, "run"), "analyse", None)
    if analyse is not None:
        assert list(inspect.signature(analyse).parameters) == ["out", "config"]
