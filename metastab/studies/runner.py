"""Run a reproduction study of the repository's ``studies/`` folder by name.

A study is a folder ``studies/NAME/`` holding

- ``config.toml``: its parameters; an optional ``[quick]`` table overrides top-level keys (and
  merges into tables) for the reduced run that the test suite exercises; an ``[about]`` table
  (``description``, and ``seconds_full`` / ``seconds_quick``, the measured wall times) describes
  the study for ``metastab study --list`` and is not passed to the study;
- ``run.py`` with ``run(config: dict, out: Path) -> None``: computes, writing tables with
  provenance sidecars (:func:`metastab.results.write_table`) into ``out``;
- ``checks.py`` with ``checks(out: Path, config: dict) -> pandas.DataFrame``: the checks table
  (:mod:`metastab.studies.verdict`), computed from the tables in ``out`` and the thresholds of
  ``config`` only;
- ``figures.py`` with ``figures(out: Path) -> None`` (PNG figures, reading ``out`` only) and
  ``report(out: Path) -> str`` (markdown, reading ``out`` only, ``checks.csv`` included; no
  ``Verdict:`` line of its own).

:func:`run_study` runs them in order: run, checks (``out/checks.csv``), figures, report; it ends
the report with the checks table and the ``Verdict:`` line of
:func:`metastab.studies.verdict.verdict_line` and writes ``out/report.md`` and ``out/run.json``
(the configuration used, the wall time of each stage and the provenance). ``render=True`` skips
the run and recomputes checks, figures and report from the tables already in ``out``. Studies
live in the repository, not in the installed package: run them from a clone.

The helpers the studies' own files share are here too: :func:`sibling` (load a study's module),
:func:`study_meta` and :func:`read_tables` (their tables' provenance), :func:`recorded` and
:func:`quantile_band` (recorded runs and their quantiles).
"""

from __future__ import annotations

import copy
import json
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..results import provenance, read_table
from .render import checks_markdown
from .verdict import verdict_line, write_checks

if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from types import ModuleType

    from ..engine.chains import Model
    from ..rng import SeedLike

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "study_root",
    "list_studies",
    "load_config",
    "study_about",
    "run_study",
    "sibling",
    "study_meta",
    "read_tables",
    "recorded",
    "quantile_band",
]

_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


def study_root() -> Path:
    """The ``studies/`` folder: beside the package in a clone, else in the working directory."""
    # this file is metastab/studies/runner.py: the clone's root is three folders up
    for root in (Path(__file__).resolve().parents[2] / "studies", Path.cwd() / "studies"):
        if root.is_dir():
            return root
    raise FileNotFoundError(
        "no studies/ folder beside the metastab package or in the working "
        "directory: studies live in the metastab repository; run from a clone"
    )


def list_studies() -> list[str]:
    """Names of the studies (folders of ``studies/`` with a ``run.py``), sorted."""
    return sorted(p.parent.name for p in study_root().glob("*/run.py"))


def _folder(name: str) -> Path:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"study name must be lower-case letters, digits and '-', got {name!r}")
    folder = study_root() / name
    if not (folder / "run.py").is_file():
        raise ValueError(f"unknown study {name!r}; the studies are: {', '.join(list_studies())}")
    return folder


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(
    name: str, *, quick: bool = False, path: str | os.PathLike[str] | None = None
) -> dict:
    """The configuration of study ``name`` (or of the TOML file ``path``), with its ``[quick]``
    overrides applied when ``quick``; the ``quick`` table itself is removed."""
    file = Path(path) if path is not None else _folder(name) / "config.toml"
    try:
        config = tomllib.loads(file.read_text()) if file.exists() else {}
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{file}: {exc}") from None
    over = config.pop("quick", {})
    config.pop("about", None)
    return _merge(config, over) if quick else config


def study_about(name: str) -> dict:
    """The ``[about]`` table of study ``name``'s config: ``description`` (what it reproduces),
    ``seconds_full`` and ``seconds_quick`` (measured wall times), each absent if not given."""
    file = _folder(name) / "config.toml"
    return tomllib.loads(file.read_text()).get("about", {}) if file.exists() else {}


def _module(folder: Path, stem: str) -> ModuleType:
    """The module ``stem.py`` of a study folder (loaded from its path: not a package)."""
    return sibling(folder / f"{stem}.py", stem)


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
    ``render=True`` does not compute: it recomputes ``checks.csv``, the figures and the report
    from the tables already in ``out``, whose recorded configuration must agree with the current
    one on every key it has (keys added since, such as thresholds, are allowed).

    Raises
    ------
    ValueError
        If ``render`` and ``out`` holds no ``run.json``, or its configuration differs.
    RuntimeError
        If the study's report writes a ``Verdict:`` line of its own.
    """
    folder = _folder(name)
    cfg = load_config(name, quick=quick, path=config)
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
            if json.dumps(cfg.get(k), default=str) != json.dumps(v, default=str)
        )
        if changed:
            raise ValueError(
                f"render: the tables in {out} were computed with another "
                f"configuration (keys {', '.join(changed)}); rerun the study"
            )
        seconds["run"] = old["seconds"]["run"]
        quick = bool(old.get("quick", quick))
    else:
        tic = time.perf_counter()
        log(f"study {name}: computing into {out}")
        _module(folder, "run").run(cfg, out)
        seconds["run"] = time.perf_counter() - tic
    tic = time.perf_counter()
    log(f"study {name}: checks")
    checks = _module(folder, "checks").checks(out, cfg)
    write_checks(
        checks, out, {"study": name, "quick": quick, "config": cfg, "provenance": provenance()}
    )
    seconds["checks"] = time.perf_counter() - tic
    draw = _module(folder, "figures")
    tic = time.perf_counter()
    log(f"study {name}: figures")
    draw.figures(out)
    seconds["figures"] = time.perf_counter() - tic
    meta: dict[str, Any] = {
        "study": name,
        "quick": quick,
        "config": cfg,
        "seconds": seconds,
        "provenance": provenance(),
    }
    (out / "run.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    text = draw.report(out)
    if re.search(r"^Verdict:", text, re.MULTILINE):
        raise RuntimeError(
            f"study {name}: its report writes a 'Verdict:' line; the runner "
            "writes it from checks.csv"
        )
    command = f"metastab study {name}" + (" --quick" if quick else "")
    # names metastab.report (now an alias of metastab.studies.verdict) so that the committed
    # reports render byte for byte; write metastab.studies.verdict with the studies' next run
    text = (
        text.rstrip() + "\n\n## Checks\n\nEvery criterion, from `checks.csv` (roles and the "
        "verdict rule: `metastab.report`):\n\n"
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


def sibling(file: str | os.PathLike[str], stem: str) -> ModuleType:
    """The module ``stem.py`` beside ``file`` (a study's ``figures.py`` from its ``checks.py``),
    loaded from its path: study folders are not packages."""
    import importlib.util

    path = Path(file).with_name(f"{stem}.py")
    spec = importlib.util.spec_from_file_location(f"metastab_study_{path.parent.name}_{stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def study_meta(study: str, config: dict) -> dict:
    """The provenance every table of a study carries: its name, config, seed and environment."""
    return {
        "study": study,
        "config": config,
        "seed": int(config["seed"]),
        "provenance": provenance(),
    }


def recorded(
    model: Model, x0: np.ndarray, steps: int, every: int, fine: int, chains: int, rng: SeedLike
) -> tuple[np.ndarray, np.ndarray]:
    """(times, trajectories) of ``chains`` chains: every step up to ``fine``, every ``every``
    steps after, up to ``steps``. Two runs from the same seed, whose paths agree step for step
    (chain k's stream depends only on the seed and k), so the start is seen in full without
    recording the whole run."""
    from ..engine import simulate

    head = simulate(model, x0, steps=fine, chains=chains, record_every=1, rng=rng)
    tail = simulate(model, x0, steps=steps, chains=chains, record_every=every, rng=rng)
    assert head.times is not None and tail.times is not None  # recorded runs
    assert head.trajectory is not None and tail.trajectory is not None
    later = tail.times > fine
    return (
        np.concatenate([head.times, tail.times[later]]),
        np.concatenate([head.trajectory, tail.trajectory[:, later]], axis=1),
    )


def quantile_band(
    values: np.ndarray, model: str, beta: float, times: np.ndarray, chains: int
) -> pd.DataFrame:
    """The 10%, 50% and 90% quantiles over the chains (axis 0) of ``values`` at each of
    ``times``: columns model, beta, step, q10, median, q90, chains."""
    q = np.quantile(values, [0.1, 0.5, 0.9], axis=0)
    return pd.DataFrame(
        {
            "model": model,
            "beta": beta,
            "step": times,
            "q10": q[0],
            "median": q[1],
            "q90": q[2],
            "chains": chains,
        }
    )
