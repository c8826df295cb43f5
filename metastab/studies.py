"""Run a reproduction study of the repository's ``studies/`` folder by name.

A study is a folder ``studies/NAME/`` holding

- ``config.toml``: its parameters; an optional ``[quick]`` table overrides top-level keys (and
  merges into tables) for the reduced run that the test suite exercises;
- ``run.py`` with ``run(config: dict, out: Path) -> None``: computes, writing tables with
  provenance sidecars (:func:`metastab.results.write_table`) into ``out``;
- ``figures.py`` with ``figures(out: Path) -> None`` (PNG figures, reading ``out`` only) and
  ``report(out: Path) -> str`` (markdown, reading ``out`` only, with a line ``Verdict: ...``).

:func:`run_study` runs the three in order and writes ``out/report.md`` and ``out/run.json`` (the
configuration used, the wall time of each stage and the provenance). Studies live in the
repository, not in the installed package: run them from a clone.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
import time
from pathlib import Path

from .results import provenance

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["study_root", "list_studies", "load_config", "run_study"]

_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


def study_root() -> Path:
    """The ``studies/`` folder: beside the package in a clone, else in the working directory."""
    for root in (Path(__file__).resolve().parents[1] / "studies", Path.cwd() / "studies"):
        if root.is_dir():
            return root
    raise FileNotFoundError("no studies/ folder beside the metastab package or in the working "
                            "directory: studies live in the metastab repository; run from a clone")


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


def load_config(name: str, *, quick: bool = False, path=None) -> dict:
    """The configuration of study ``name`` (or of the TOML file ``path``), with its ``[quick]``
    overrides applied when ``quick``; the ``quick`` table itself is removed."""
    file = Path(path) if path is not None else _folder(name) / "config.toml"
    try:
        config = tomllib.loads(file.read_text()) if file.exists() else {}
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{file}: {exc}") from None
    over = config.pop("quick", {})
    return _merge(config, over) if quick else config


def _module(folder: Path, stem: str):
    file = folder / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"metastab_study_{folder.name}_{stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_study(name: str, *, quick: bool = False, out=None, config=None, log=print) -> Path:
    """Run study ``name`` into ``out`` (default ``data/NAME`` beside ``studies/``; a quick run
    defaults to ``data/NAME/quick``); returns the path of ``report.md``.

    ``config`` replaces the study's ``config.toml`` by another TOML file (same keys).
    """
    folder = _folder(name)
    cfg = load_config(name, quick=quick, path=config)
    if out is None:
        out = study_root().parent / "data" / name / ("quick" if quick else "")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seconds = {}
    tic = time.perf_counter()
    log(f"study {name}: computing into {out}")
    _module(folder, "run").run(cfg, out)
    seconds["run"] = time.perf_counter() - tic
    draw = _module(folder, "figures")
    tic = time.perf_counter()
    log(f"study {name}: figures")
    draw.figures(out)
    seconds["figures"] = time.perf_counter() - tic
    meta = {"study": name, "quick": quick, "config": cfg, "seconds": seconds,
            "provenance": provenance()}
    (out / "run.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    text = draw.report(out)
    if not re.search(r"^Verdict: \S", text, re.MULTILINE):
        raise RuntimeError(f"study {name}: its report has no 'Verdict: ...' line")
    command = f"metastab study {name}" + (" --quick" if quick else "")
    text = text.rstrip() + (f"\n\nComputed by `{command}` in {seconds['run']:.0f} s "
                            f"(figures {seconds['figures']:.0f} s) on "
                            f"{meta['provenance'].get('threads', '?')} numba threads.\n")
    report = out / "report.md"
    report.write_text(text)
    log(f"study {name}: wrote {report}")
    return report
