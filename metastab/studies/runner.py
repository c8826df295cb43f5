"""Run a reproduction study of the repository's ``studies/`` folder by name.

A study is a package ``studies/PACKAGE/`` (``NAME`` with ``-`` written ``_``:
:func:`~.study.package_name`) holding

- ``config.toml``: its parameters; an optional ``[quick]`` table overrides top-level keys (and
  merges into tables) for the reduced run that the test suite exercises; an ``[about]`` table
  (``description``, and ``seconds_full`` / ``seconds_quick``, the measured wall times) describes
  the study for ``metastab study --list`` and is not passed to the study;
- ``config.py``: ``Config``, the typed parameters (a :class:`~.study.StudyConfig`) that
  ``config.toml`` is checked against;
- ``run.py`` with ``run(config: Config, out: Path) -> None``: simulates, writing tables with
  provenance sidecars (:func:`metastab.results.write_table`) into ``out``; and, where the study
  derives tables from them (fits, estimates), ``analyse(out: Path, config: Config) -> None``,
  which reads the simulated tables in ``out`` and writes the derived ones, so that a render
  recomputes everything but the simulation;
- ``checks.py`` with ``checks(out: Path, config: Config) -> pandas.DataFrame``: the checks table
  (:mod:`metastab.studies.verdict`), computed from the tables in ``out`` and the thresholds of
  ``config`` only, each check a comparator of :mod:`metastab.studies.compare` (its rule and its
  pass test from one object, its power row by :func:`~metastab.studies.compare.declare`);
- ``figures.py`` with ``figures(out: Path) -> None``: the PNG figures, reading ``out`` only;
- ``report.md``, all the text of the report as named parts with ``$placeholders``
  (:class:`~.study.ReportTemplate`), and ``report.py`` with
  ``report(out: Path, template: ReportTemplate) -> str``: the parts filled with values computed
  from ``out`` only (``checks.csv`` included), the parts of every finding chosen there by
  computed conditions; no ``Verdict:`` line of its own.

:func:`run_study` runs them in order: run, analyse, checks (``out/checks.csv``), figures, report;
it ends
the report with the checks table and the ``Verdict:`` line of
:func:`metastab.studies.verdict.verdict_line` and writes ``out/report.md`` and ``out/run.json``
(the configuration used, the wall time of each stage and the provenance). ``render=True`` skips
the run and recomputes the analysis, checks, figures and report from the tables already in
``out``. Studies
live in the repository, not in the installed package: run them from a clone.

The helpers of the studies' tables are here too: :func:`study_meta` and :func:`read_tables`
(their provenance); what the studies measure with is :mod:`.measurement`.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..results import provenance, read_table
from .render import checks_markdown
from .study import (
    ConfigError,
    ReportTemplate,
    StudyConfig,
    list_studies,
    study_folder,
    study_module,
    study_root,
)
from .verdict import verdict_line, write_checks

if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from types import ModuleType


if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "CHECKS_ONLY",
    "Study",
    "study_root",
    "list_studies",
    "load_config",
    "study_about",
    "run_study",
    "study_meta",
    "read_tables",
]

# config tables read by checks.py alone (the wrong predictions of the power rows): changing them
# needs a render, not a run
CHECKS_ONLY = ("power",)


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _toml(file: Path) -> dict:
    try:
        return tomllib.loads(file.read_text()) if file.exists() else {}
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{file}: {exc}") from None


class Study:
    """Study ``name`` of the ``studies/`` folder: its modules (imported once, as
    ``studies.PACKAGE.STEM``, :func:`~.study.study_module`), its typed configuration and its four
    stages.

    Parameters
    ----------
    name : str
        The study's name (:func:`list_studies`).

    Attributes
    ----------
    name : str
        The study's name.
    folder : Path
        Its folder in ``studies/``.

    Raises
    ------
    ValueError
        If ``name`` is not a study's name.

    See Also
    --------
    run_study : all four stages, with the report's checks table and verdict.

    Examples
    --------
    >>> from metastab.studies import Study
    >>> study = Study("hardmax-nsd")
    >>> study.folder.name, study.module("run").__name__
    ('hardmax_nsd', 'studies.hardmax_nsd.run')
    >>> study.config(quick=True).seed == study.config().seed
    True
    """

    def __init__(self, name: str) -> None:
        self.folder = study_folder(name)
        self.name = name

    def module(self, stem: str) -> ModuleType:
        """The study's module ``STEM.py``."""
        return study_module(self.name, stem)

    def config(
        self, *, quick: bool = False, path: str | os.PathLike[str] | None = None
    ) -> StudyConfig:
        """The study's ``Config`` from its ``config.toml`` (or the TOML file ``path``), with its
        ``[quick]`` overrides applied when ``quick``.

        Raises
        ------
        ConfigError
            If a key is unknown or missing or a value is refused; the message names the file.
        """
        file = Path(path) if path is not None else self.folder / "config.toml"
        table = _toml(file)
        over = table.pop("quick", {})
        table.pop("about", None)
        try:
            return self.module("config").Config.from_dict(_merge(table, over) if quick else table)
        except ConfigError as exc:
            raise ConfigError(f"{file}{' [quick]' if quick else ''}: {exc}") from None

    def about(self) -> dict:
        """The ``[about]`` table of the study's config: ``description`` (what it reproduces),
        ``seconds_full`` and ``seconds_quick`` (measured wall times), each absent if not given."""
        return _toml(self.folder / "config.toml").get("about", {})

    def run(self, config: StudyConfig, out: Path) -> None:
        """Simulate: compute the study's tables into ``out``."""
        self.module("run").run(config, out)

    def analyse(self, out: Path, config: StudyConfig) -> None:
        """Derive the study's analysed tables (fits, estimates) from the simulated ones in
        ``out``: ``run.py``'s ``analyse``, where it has one."""
        analyse = getattr(self.module("run"), "analyse", None)
        if analyse is not None:
            analyse(out, config)

    def checks(self, out: Path, config: StudyConfig) -> pd.DataFrame:
        """The checks table, from the tables in ``out`` and the thresholds of ``config``."""
        return self.module("checks").checks(out, config)

    def figures(self, out: Path) -> None:
        """Draw the figures from the tables in ``out``."""
        self.module("figures").figures(out)

    def report(self, out: Path) -> str:
        """The report: ``report.py``'s ``report(out, template)`` from the tables in ``out`` and
        the parts of the study's template ``report.md``."""
        template = ReportTemplate.read(self.folder / "report.md")
        return self.module("report").report(out, template)


def load_config(
    name: str, *, quick: bool = False, path: str | os.PathLike[str] | None = None
) -> StudyConfig:
    """The typed configuration of study ``name`` (:meth:`Study.config`).

    Parameters
    ----------
    name : str
        The study's name.
    quick : bool
        Apply the ``[quick]`` overrides of its ``config.toml`` (the reduced run).
    path : str or os.PathLike, optional
        Another TOML file with the same keys, read instead of the study's ``config.toml``.

    Returns
    -------
    config : StudyConfig
        The study's ``Config``, read by its typed attributes.

    Raises
    ------
    ConfigError
        If a key is unknown or missing or a value is refused; the message names the file.

    Examples
    --------
    >>> from metastab.studies import load_config
    >>> config = load_config("collapse")
    >>> config.polytope, config.tokens, load_config("collapse", quick=True).tokens
    ({'kind': 'regular', 'k': 5}, 10, 8)
    """
    return Study(name).config(quick=quick, path=path)


def study_about(name: str) -> dict:
    """The ``[about]`` table of study ``name`` (:meth:`Study.about`).

    Parameters
    ----------
    name : str
        The study's name.

    Returns
    -------
    about : dict
        ``description`` (what it reproduces), ``seconds_full`` and ``seconds_quick`` (measured
        wall times), each absent if not given.

    Examples
    --------
    >>> from metastab.studies import study_about
    >>> sorted(study_about("collapse"))
    ['description', 'seconds_full', 'seconds_quick']
    """
    return Study(name).about()


def run_study(
    name: str,
    *,
    quick: bool = False,
    out: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    log: Callable[[str], object] = print,
    render: bool = False,
) -> Path:
    """Run study ``name`` into ``out`` (default ``data/NAME`` beside ``studies/``; a quick run
    defaults to ``data/NAME/quick``); returns the path of ``report.md``.

    ``config`` replaces the study's ``config.toml`` by another TOML file (same keys).
    ``render=True`` does not simulate: it recomputes the analysed tables (:meth:`Study.analyse`),
    ``checks.csv``, the figures and the report from the tables already in ``out``, whose
    recorded configuration must agree with the current one on every key it has (keys added
    since, such as thresholds, are allowed; the keys of :data:`CHECKS_ONLY`, read by the checks
    alone, may change).

    Parameters
    ----------
    name : str
        The study's name.
    quick : bool
        The reduced run of the ``[quick]`` table (what the test suite runs).
    out : str or os.PathLike, optional
        The folder of its tables, figures and report (created if missing).
    config : str or os.PathLike, optional
        A TOML file read instead of the study's ``config.toml``.
    log : callable
        Called with a line at each stage (default ``print``).
    render : bool
        Recompute the analysis, checks, figures and report from the tables in ``out``, without
        the simulation.

    Returns
    -------
    report : Path
        ``out/report.md``.

    Raises
    ------
    ValueError
        If the configuration is refused (:class:`~.study.ConfigError`), or ``render`` and ``out``
        holds no ``run.json``, or its configuration differs.
    RuntimeError
        If the study's report writes a ``Verdict:`` line of its own.

    Examples
    --------
    >>> import tempfile
    >>> from metastab.studies import run_study
    >>> with tempfile.TemporaryDirectory() as out:
    ...     report = run_study("hardmax-nsd", quick=True, out=out, log=lambda line: None)
    ...     lines = report.read_text().splitlines()
    >>> report.name, sum(line.startswith("Verdict: ") for line in lines)
    ('report.md', 1)
    """
    study = Study(name)
    cfg = study.config(quick=quick, path=config)
    table = cfg.to_dict()
    if out is None:
        out = study_root().parent / "data" / name / ("quick" if quick else "")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    if render:
        previous = out / "run.json"
        if not previous.is_file():
            raise ValueError(f"render: {previous} does not exist; run the study first")
        old = json.loads(previous.read_text())
        changed = sorted(
            k
            for k, v in old.get("config", {}).items()
            if k not in CHECKS_ONLY
            and json.dumps(table.get(k), default=str) != json.dumps(v, default=str)
        )
        if changed:
            raise ValueError(
                f"render: the tables in {out} were computed with another "
                f"configuration (keys {', '.join(changed)}); rerun the study"
            )
        seconds["run"] = old["seconds"]["run"]
        quick = bool(old.get("quick", quick))
        run_environment = old.get("provenance", provenance())
    else:
        tic = time.perf_counter()
        log(f"study {name}: computing into {out}")
        study.run(cfg, out)
        seconds["run"] = time.perf_counter() - tic
        run_environment = provenance()
        # the run's record, before the stages that may read it (completed at the end)
        record = {"study": name, "quick": quick, "config": table, "seconds": dict(seconds)}
        (out / "run.json").write_text(
            json.dumps(dict(record, provenance=run_environment), indent=2, default=str) + "\n"
        )
    tic = time.perf_counter()
    log(f"study {name}: analysis")
    study.analyse(out, cfg)
    seconds["analyse"] = time.perf_counter() - tic
    tic = time.perf_counter()
    log(f"study {name}: checks")
    checks = study.checks(out, cfg)
    write_checks(
        checks, out, {"study": name, "quick": quick, "config": table, "provenance": provenance()}
    )
    seconds["checks"] = time.perf_counter() - tic
    tic = time.perf_counter()
    log(f"study {name}: figures")
    study.figures(out)
    seconds["figures"] = time.perf_counter() - tic
    meta: dict[str, Any] = {
        "study": name,
        "quick": quick,
        "config": table,
        "seconds": seconds,
        # the simulation's environment (a render keeps the run's, and records its own beside it)
        "provenance": run_environment,
    }
    if render:
        meta["rendered_with"] = provenance()
    (out / "run.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    text = study.report(out)
    if re.search(r"^Verdict:", text, re.MULTILINE):
        raise RuntimeError(
            f"study {name}: its report writes a 'Verdict:' line; the runner "
            "writes it from checks.csv"
        )
    command = f"metastab study {name}" + (" --quick" if quick else "")
    text = (
        text.rstrip() + "\n\n## Checks\n\nEvery criterion, from `checks.csv` (roles, power rows "
        "and the verdict rule: `metastab.studies.verdict`); a `power` row applies the check of "
        "its claim or correction to a wrong prediction declared in the config, and passes when "
        "the check rejects it:\n\n"
        + checks_markdown(checks)
        + "\n\n"
        + verdict_line(checks)
        + "\n"
        + f"\nComputed by `{command}` in {seconds['run']:.0f} s (checks "
        f"{seconds['checks']:.0f} s, figures {seconds['figures']:.0f} s) on "
        f"{meta['provenance'].get('threads', '?')} numba threads.\n"
    )
    report = out / "report.md"
    report.write_text(text)
    log(f"study {name}: wrote {report}")
    return report


# --------------------------------------------------------------------------- helpers of studies


def read_tables(out: str | os.PathLike[str], *names: str) -> list[pd.DataFrame]:
    """The tables ``out/NAME`` (as :func:`metastab.results.read_table` reads them), in order,
    without their provenance."""
    return [read_table(Path(out) / name)[0] for name in names]


def study_meta(study: str, config: StudyConfig) -> dict:
    """The provenance every table of a study carries: its name, config, seed and environment."""
    return {
        "study": study,
        "config": config.to_dict(),
        "seed": int(config.to_dict()["seed"]),  # every study declares one
        "provenance": provenance(),
    }
