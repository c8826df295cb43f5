"""Sweep configurations: a TOML file (or a dict of the same shape) expanded into grid points.

A sweep has six tables: ``[model]``, ``[polytope]``, ``[initial]`` and ``[event]`` (each with a
``kind`` and that kind's parameters), ``[grid]`` (every list is an axis) and ``[run]``; the
models on the unit sphere (``sphere-flow``, ``sphere-chain``) take no ``[polytope]``::

    [model]
    kind = "softmax-chain"     # also "softmax-flow", "hardmax", "localmax"
    gamma = 0.1
    [grid]                     # every list is an axis of the grid
    beta = [4.0, 6.0, 8.0]     # a bare name is the model's, or that of the one table taking it;
                               # else write the table: event.radius = [0.2, 0.3]
    [polytope]
    kind = "regular"           # also "simplex", "cross-polytope", "random-polygon", "gaussian",
    k = 5                      #      "vertices"
    [initial]
    kind = "near-vertices"     # also "in-cells", "uniform", "repeated-points", "shrunk", "file"
    n = 10
    [event]
    kind = "leave-ball"        # also "leave-hull", "reach-vertices", "collapse"
    radius = 0.3
    [run]
    chains = 2000              # per point; with `escapes`, the cap
    chunk = 250                # chains per task (and per parquet file)
    max_steps = 100000
    seed = 1                   # root seed, required (or an axis: [grid] seed = [1, 2, 3])
    escapes = 200              # optional: stop adding chunks once 200 chains escaped
    device = "cpu"             # optional: "cuda" runs the chunks on a GPU (same chains)
    mode = "exact"             # optional: "accelerated" (first_passage's mode; merge_tol too)

The points are the Cartesian product of the axes in the order written (the last axis varies
fastest). Point p's chains use the streams of ``Seed(seed, spawn_key=(p,))``; its initial
configuration is drawn from ``SeedSequence(seed, spawn_key=(p, 0))``, or from
``SeedSequence(initial.seed)`` when ``[initial]`` sets ``seed`` (then points that share the
initial parameters share x0). The sphere configurations (``sphere-uniform``, ``orthogonal``,
``caps``) draw one start per chain instead, chain c's from that seed and c. A ``seed`` axis
(``[grid] seed = [1, 2]``: replicates) gives each point its seed, and p is then the point's index
among the other axes, so that the rows of seed s are those of the same sweep with
``[run] seed = s``. Every row has a ``seed`` column. Unknown keys are refused, so a typo never
passes silently.

The kinds, their parameters and defaults are those of :mod:`metastab.registry` (the defaults of
the dataclasses and constructors): ``[polytope] kind = "regular"`` takes ``k``, ``radius`` and
``phase`` because :func:`metastab.regular_polygon` does.

A file a config names (``[initial] kind = "file"``: its ``path``) is part of the sweep: the
hash covers the SHA-256 of its contents, so a directory resumed after the file changed is
refused instead of mixing rows of two inputs.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validate import integer, real
from ..engine.resolution import _GEOMETRIC, MODES, constant_chain, merge_tolerance
from ..registry import EVENTS, INITIALS, MODELS, POLYTOPES, REQUIRED, Param, Registry, on_sphere
from ..results.io import scalar_params
from ..rng import Seed
from ..setups.polytopes import Polytope

if TYPE_CHECKING:  # the registry builds them; imported for the annotations only
    import os

    from ..events import (
        Clusters,
        Collapse,
        LeaveBall,
        LeaveHull,
        LeaveUniform,
        ReachUniform,
        ReachVertices,
    )
    from ..models import Hardmax, Localmax, SoftmaxChain, SoftmaxFlow

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Sweep", "Point", "FORMAT"]

FORMAT = 1  # version of the normalised config (part of the hash)
SECTIONS = ("model", "polytope", "initial", "event")
# Each table's kinds and their parameters come from the registry; so do the defaults (those of
# the dataclasses and constructors), which normalise() writes into the canonical config.
KINDS: dict[str, Registry] = {
    "model": MODELS,
    "polytope": POLYTOPES,
    "initial": INITIALS,
    "event": EVENTS,
}


def sections(model_kind: str) -> tuple[str, ...]:
    """The kind tables of a sweep of this model: no ``[polytope]`` for the sphere models."""
    return tuple(s for s in SECTIONS if s != "polytope" or not on_sphere(model_kind))


def params(section: str, kind: str) -> dict[str, Param]:
    """The parameters of ``kind`` in table ``[section]``, by name, with their defaults."""
    return {p.name: p for p in KINDS[section][kind].parameters}


# Stated limits, checked on the normalised config before any point is built or file written.
LIMITS = {
    "max_steps": 2**62,  # step counters are int64
    "points": 10_000,  # grid points (each is built and validated up front)
    "chunks": 1_000_000,  # chunks (= files) in the whole sweep
    "k": 100_000,  # vertices of a polytope
    "n": 100_000,  # tokens
    "d": 10_000,  # dimension
    "chunk_bytes": 2**30,  # a chunk's state, chunk x n x d float64: lower [run] chunk
}
RUN = {
    "chains": Param("chains", "int", default=REQUIRED),
    "chunk": Param("chunk", "int", default=250),
    "max_steps": Param("max_steps", "int", default=REQUIRED),
    "seed": Param("seed", "int", default=REQUIRED),
    "escapes": Param("escapes", "int", default=None),
    "device": Param("device", "str", default="cpu"),
    "mode": Param("mode", "str", default="exact"),
    "merge_tol": Param("merge_tol", "float", default=None),
}
DEVICES = ("cpu", "cuda")
# [run] keys added since FORMAT 1, left out of the hash at these values (those of every earlier
# sweep), so that the directories of earlier sweeps keep their hash
_LATER = {"mode": "exact", "merge_tol": None}


# --------------------------------------------------------------------------- value checks


def _floats(where: str, value):
    """A number, or a (nested) list of numbers, with every number as a float."""
    if isinstance(value, list):
        if not value:
            raise ValueError(f"{where} must not be an empty list")
        return [_floats(where, v) for v in value]
    return real(where, value)


def _check(where: str, param: Param, value):
    """``value`` normalised to ``param.type`` (ints stay ints, numbers become floats)."""
    if param.type == "float":
        return real(where, value)
    if param.type == "floats":
        return _floats(where, value)
    if param.type == "int":
        return integer(where, value)
    if param.type == "ints" or (param.type == "groups" and value != "cells"):
        if not isinstance(value, list) or not value:
            raise ValueError(f"{where} must be a non-empty list of integers, got {value!r}")
        return [integer(where, v) for v in value]
    if param.type == "groups":
        return value
    expected = {"bool": bool, "str": str, "path": str}[param.type]
    if not isinstance(value, expected):
        raise ValueError(f"{where} must be a {param.type}, got {value!r}")
    return value


def _table(data: dict, name: str) -> dict:
    table = data.get(name)
    if not isinstance(table, dict):
        raise ValueError(f"the config needs a [{name}] table")
    return table


def _kind(section: str, table: dict) -> str:
    kinds = KINDS[section]
    kind = table.get("kind")
    # canonical names, and the former names of renamed kinds kept as written (so that a sweep's
    # normalised config, its hash and its output directory stay what they were); not the
    # command line's other spellings
    if not isinstance(kind, str) or kind not in (*kinds, *kinds.renamed):
        raise ValueError(f"[{section}] kind must be one of {sorted(kinds)}, got {kind!r}")
    return kind


def _axis_params(section: str, kinds: dict) -> dict[str, Param]:
    """The parameters a grid axis of table ``[section]`` may set (of ``[run]``: the seed)."""
    return {"seed": RUN["seed"]} if section == "run" else params(section, kinds[section])


def _either(words: list[str], conjunction: str) -> str:
    """``a, b or c``."""
    return f" {conjunction} ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def _grid_axes(grid: dict, kinds: dict) -> list[tuple[str, str, list]]:
    """(section, key, values) per axis, in the order written. A bare key names the model's
    parameter if the model takes it, else that of the one table whose kind takes it (``seed``:
    also ``[run]``'s, the replicates); ``section.key`` (a TOML dotted key) names the table."""
    tables = (*kinds, "run")
    axes = []
    for name, value in grid.items():
        if isinstance(value, dict):
            if name not in tables:
                raise ValueError(f"[grid] {name}.* must name a table among {tables}")
            axes += [(name, key, values) for key, values in value.items()]
            continue
        owners = [s for s in tables if name in _axis_params(s, kinds)]
        if "model" in owners:  # beta is the model's (near-vertices follows it by default)
            owners = ["model"]
        if not owners:
            raise ValueError(
                f"[grid] axis {name!r} is not a parameter of "
                + ", ".join(f"{s} {kinds[s]!r}" for s in kinds)
                + " (nor the [run] seed)"
            )
        if len(owners) > 1:
            raise ValueError(
                f"[grid] axis {name!r} is ambiguous ({_either(owners, 'and')} take it): "
                f"write {_either([f'{o}.{name}' for o in owners], 'or')}"
            )
        axes.append((owners[0], name, value))
    out, seen = [], set()
    for section, key, values in axes:
        where = f"[grid] {section}.{key}"
        if key == "kind":
            raise ValueError(f"{where}: the kind cannot be a grid axis (write one sweep per kind)")
        taken = _axis_params(section, kinds)
        if key not in taken:
            what = (
                "[run] takes the axis seed"
                if section == "run"
                else (f"{section} {kinds[section]!r} takes {sorted(taken)}")
            )
            raise ValueError(f"{where}: {what}, not {key!r}")
        if (section, key) in seen:
            raise ValueError(f"{where} is given twice")
        seen.add((section, key))
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where} must be a non-empty list of values, got {values!r}")
        values = [_check(f"{where}[{i}]", taken[key], v) for i, v in enumerate(values)]
        if section == "run" and min(values) < 0:
            raise ValueError(f"{where} must hold integers >= 0, got {values!r}")
        dumped = [json.dumps(v) for v in values]
        if len(set(dumped)) != len(dumped):
            raise ValueError(f"{where} repeats a value: {values!r}")
        out.append((section, key, values))
    return out


def normalise(data: dict) -> dict:
    """The canonical form of a config: every table checked, defaults filled in, numbers typed.

    Two configs with equal canonical forms describe the same sweep (same points, seeds and
    chunks); the hash of this form is what an output directory is bound to.
    """
    if not isinstance(data, dict):
        raise ValueError(f"a sweep config must be a table, got {type(data).__name__}")
    if "format" in data:  # an already normalised config (a manifest's), grid as [name, values]
        if data["format"] != FORMAT:
            raise ValueError(f"config format {data['format']!r} is not {FORMAT}")
        data = {k: v for k, v in data.items() if k != "format"}
        grid: dict[str, dict[str, Any]] = {}
        for name, values in data.get("grid", []):
            section, key = name.split(".", 1)
            grid.setdefault(section, {})[key] = values
        data["grid"] = grid
    unknown = set(data) - {*SECTIONS, "grid", "run"}
    if unknown:
        raise ValueError(
            f"unknown table(s) {sorted(unknown)}; a sweep has {[*SECTIONS, 'grid', 'run']}"
        )
    kept = sections(_kind("model", _table(data, "model")))
    if "polytope" not in kept and "polytope" in data:
        raise ValueError(
            f"[polytope]: model {data['model']['kind']!r} moves tokens on the unit sphere and "
            f"takes no polytope"
        )
    tables = {s: _table(data, s) for s in kept}
    kinds = {s: _kind(s, tables[s]) for s in kept}
    grid = data.get("grid", {})
    if not isinstance(grid, dict):
        raise ValueError("[grid] must be a table of axes")
    axes = _grid_axes(grid, kinds)
    on_grid = {(s, k) for s, k, _ in axes}
    out: dict[str, Any] = {"format": FORMAT}
    for s in kept:
        taken = params(s, kinds[s])
        unknown = set(tables[s]) - set(taken) - {"kind"}
        if unknown:
            raise ValueError(
                f"[{s}] {kinds[s]!r} takes {sorted(taken)}; unknown key(s) {sorted(unknown)}"
            )
        section = {"kind": kinds[s]}
        for key, param in taken.items():
            if (s, key) in on_grid:
                if key in tables[s]:
                    raise ValueError(f"{s}.{key} is set both in [{s}] and as a [grid] axis")
                continue
            if key in tables[s] and not (tables[s][key] is None and param.default is None):
                section[key] = _check(f"[{s}] {key}", param, tables[s][key])
            elif param.default is REQUIRED:
                raise ValueError(f"[{s}] {kinds[s]!r} needs {key!r} (in [{s}] or as a [grid] axis)")
            else:
                section[key] = param.default
        out[s] = section
    out["grid"] = [[f"{s}.{k}", values] for s, k, values in axes]
    run = _table(data, "run")
    unknown = set(run) - set(RUN)
    if unknown:
        raise ValueError(f"[run] takes {sorted(RUN)}; unknown key(s) {sorted(unknown)}")
    out["run"] = {}
    for key, param in RUN.items():
        if ("run", key) in on_grid:  # the seed: one value per point
            if run.get(key) is not None:
                raise ValueError(f"run.{key} is set both in [run] and as a [grid] axis")
            out["run"][key] = None
        elif key == "device":
            value = run.get(key, param.default)
            if value not in DEVICES:
                raise ValueError(f"[run] device must be one of {DEVICES}, got {value!r}")
            out["run"][key] = value
        elif key == "mode":
            value = run.get(key, param.default)
            if value not in MODES:
                raise ValueError(f"[run] mode must be one of {MODES}, got {value!r}")
            out["run"][key] = value
        elif key == "merge_tol":  # first_passage's default written out, in accelerated mode only
            value = run.get(key)
            if out["run"]["mode"] == "accelerated":
                try:
                    value = merge_tolerance(value)
                except ValueError as exc:
                    raise ValueError(f"[run] {exc}") from None
            elif value is not None:
                raise ValueError(
                    f'[run] merge_tol applies to mode = "accelerated" only, '
                    f"got merge_tol = {value!r}"
                )
            out["run"][key] = value
        elif key in run and not (run[key] is None and param.default is None):
            value = _check(f"[run] {key}", param, run[key])
            if value < (0 if key == "seed" else 1):
                raise ValueError(f"[run] {key} must be >= {0 if key == 'seed' else 1}, got {value}")
            out["run"][key] = value
        elif param.default is REQUIRED:
            raise ValueError(
                f"[run] needs {key!r}"
                + (" (a sweep must be reproducible)" if key == "seed" else "")
            )
        else:
            out["run"][key] = param.default
    check_sizes(out)
    return out


def _values(config: dict, section: str, key: str) -> list[tuple[str, Any]]:
    """(where, value) of a parameter: its fixed value, or every value of its grid axis."""
    for name, values in config["grid"]:
        if name == f"{section}.{key}":
            return [(f"[grid] {name}", v) for v in values]
    if key in config[section]:
        return [(f"[{section}] {key}", config[section][key])]
    return []


def _sizes(config: dict) -> dict[str, list[tuple[str, int]]]:
    """Upper bounds of k (vertices), d (dimension) and n (tokens) as (where, value) pairs."""
    kind = config.get("polytope", {}).get("kind")
    ks, ds = [], []
    if kind in ("regular", "random-polygon", "gaussian"):
        ks = _values(config, "polytope", "k")
    if kind in ("simplex", "cross-polytope", "gaussian"):
        ds = _values(config, "polytope", "d")
    if kind == "simplex":
        ks = [(w, v + 1) for w, v in ds]
    elif kind == "cross-polytope":
        ks = [(w, 2 * v) for w, v in ds]
    elif kind == "vertices":
        ks = [
            (w, len(v) if isinstance(v, list) else 1)
            for w, v in _values(config, "polytope", "vertices")
        ]
        ds = [
            (w, len(v[0]) if isinstance(v, list) and v and isinstance(v[0], list) else 1)
            for w, v in _values(config, "polytope", "vertices")
        ]
    if kind in ("regular", "random-polygon"):
        ds = [("the polygon", 2)]
    initial = config["initial"]["kind"]
    if INITIALS[initial].name == "repeated-points":
        ns = [(f"{w} (sum)", sum(v)) for w, v in _values(config, "initial", "multiplicities")]
    elif initial == "caps":
        ns = [(f"{w} (sum)", sum(v)) for w, v in _values(config, "initial", "sizes")]
        ds = [
            (w, len(v[0]) if isinstance(v[0], list) else len(v))
            for w, v in _values(config, "initial", "centres")
        ]
    else:
        ns = _values(config, "initial", "n")
    if "d" in params("initial", initial):
        ds = _values(config, "initial", "d")
    return {"k": ks, "d": ds, "n": ns}


def check_sizes(config: dict) -> None:
    """Refuse a normalised config beyond :data:`LIMITS`, naming the key, before any work."""
    run = config["run"]
    if run["max_steps"] > LIMITS["max_steps"]:
        raise ValueError(
            f"[run] max_steps = {run['max_steps']} is above the limit {LIMITS['max_steps']} (2**62)"
        )
    sizes = _sizes(config)
    for name, what in (("k", "vertices"), ("n", "tokens"), ("d", "dimensions")):
        for where, value in sizes[name]:
            if value > LIMITS[name]:
                raise ValueError(f"{where} = {value} is above the limit of {LIMITS[name]} {what}")
    points = math.prod(len(values) for _, values in config["grid"])
    if points > LIMITS["points"]:
        raise ValueError(
            f"[grid] has {points} points, above the limit of {LIMITS['points']}: split the sweep"
        )
    chunk = min(run["chunk"], run["chains"])
    chunks = points * -(-run["chains"] // chunk)
    if chunks > LIMITS["chunks"]:
        raise ValueError(
            f"[run] chains = {run['chains']} in chunks of {chunk} at {points} points "
            f"makes {chunks} chunks, above the limit of {LIMITS['chunks']}: raise "
            f"[run] chunk or lower [run] chains"
        )
    n = max((v for _, v in sizes["n"]), default=1)
    d = max((v for _, v in sizes["d"]), default=1)
    state = chunk * n * d * 8
    if state > LIMITS["chunk_bytes"]:
        raise ValueError(
            f"[run] chunk = {chunk} chains of {n} tokens in dimension {d} need "
            f"{state / 2**30:.1f} GiB of state per chunk, above the limit of "
            f"{LIMITS['chunk_bytes'] / 2**30:.0f} GiB: lower [run] chunk"
        )


def config_hash(config: dict, files: list[dict] | tuple = ()) -> str:
    """SHA-256 of the canonical JSON of a normalised config and of the digests of the ``files``
    it names (:func:`input_files`), less ``[run] device``: where the chains run does not change
    them, so a sweep may be resumed on another device. Keys of :data:`_LATER` at their value and
    an empty ``files`` are left out (the hash of a sweep that had neither stays what it was)."""
    run = {
        k: v
        for k, v in config["run"].items()
        if k != "device" and not (k in _LATER and v == _LATER[k])
    }
    data = {**config, "run": run}
    if files:
        data["files"] = {f["path"]: f["sha256"] for f in files}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def input_files(config: dict) -> list[dict]:
    """The files a normalised config names, each once: ``key`` (where it is named), ``path``,
    ``sha256`` and ``bytes`` of its contents now."""
    files: dict[str, dict] = {}
    for section in sections(config["model"]["kind"]):
        for key, param in params(section, config[section]["kind"]).items():
            if param.type != "path":
                continue
            for where, path in _values(config, section, key):
                if path not in files:
                    data = Path(path).read_bytes()
                    digest = hashlib.sha256(data).hexdigest()
                    files[path] = {"key": where, "path": path, "sha256": digest, "bytes": len(data)}
    return list(files.values())


# --------------------------------------------------------------------------- points


@dataclass(frozen=True, eq=False)
class Point:
    """One grid point: everything a chunk of its chains needs, built and validated.

    ``seed`` roots the chains' streams (chain k depends only on it and k); ``x0`` is shared by
    every chain of the point, or, for a kind drawn per chain, is chain 0's start, and
    ``starts(chains=, first_chain=)`` draws those of a chunk; ``columns`` are the constant
    columns of its rows. Points are built by :class:`Sweep` (its ``points``), not by hand.

    Attributes
    ----------
    index : int
        The point's place in the grid (0, 1, ...; the last axis varies fastest).
    params : dict
        The grid's values at this point, by axis name (``"model.beta"``, ``"run.seed"``, ...).
    model : model
        The model of the point's chains (:class:`~metastab.SoftmaxChain` and the others).
    polytope : Polytope or None
        The point's polytope (None for the sphere models, which take none).
    x0 : ndarray, shape (n, d)
        The initial configuration (read-only): every chain's, or chain 0's for a kind drawn per
        chain.
    event : event
        The stopping event (:class:`~metastab.LeaveBall` and the others).
    seed : Seed
        The root of the chains' streams, ``Seed(seed, (p,))``.
    initial_seed : dict or None
        The entropy and spawn key that x0 was drawn from (None for a start without randomness).
    chains : int
        The number of chains (with ``escapes``, the most that may be run).
    chunk : int
        The number of chains per chunk.
    max_steps : int
        The step budget of every chain.
    escapes : int or None
        The number of escapes after which no more chunks are added (None: run every chain).
    columns : dict
        The constant columns of the point's rows: point, the model's and the event's scalar
        parameters, max_steps, the polytope's and the initial kind's, seed and mode.
    device : str
        ``"cpu"`` (default) or ``"cuda"``.
    starts : callable or None
        ``starts(chains=, first_chain=)``: a chunk's starts, for a kind drawn per chain (default
        None: every chain starts at ``x0``).
    mode : str
        ``"exact"`` (default) or ``"accelerated"``, as in :func:`metastab.first_passage`.
    merge_tol : float or None
        The accelerated mode's merge tolerance (default None).

    Examples
    --------
    >>> from metastab.sweep import Sweep
    >>> sweep = Sweep.from_dict({
    ...     "model": {"kind": "softmax-chain", "gamma": 0.1}, "grid": {"beta": [2.0, 3.0]},
    ...     "polytope": {"kind": "regular", "k": 3}, "initial": {"kind": "in-cells", "n": 6},
    ...     "event": {"kind": "leave-ball", "radius": 0.3},
    ...     "run": {"chains": 100, "chunk": 40, "max_steps": 1000, "seed": 1}})
    >>> point = sweep.points[1]
    >>> point.params, point.x0.shape, point.n_chunks, point.chunk_range(2)
    ({'model.beta': 3.0}, (6, 2), 3, (80, 20))
    """

    index: int
    params: dict
    model: SoftmaxChain | SoftmaxFlow | Hardmax | Localmax
    polytope: Polytope | None = field(repr=False)
    x0: np.ndarray = field(repr=False)
    event: (
        LeaveBall | LeaveHull | ReachVertices | Collapse | Clusters | LeaveUniform | ReachUniform
    ) = field(repr=False)
    seed: Seed
    initial_seed: dict | None
    chains: int
    chunk: int
    max_steps: int
    escapes: int | None
    columns: dict = field(repr=False)
    device: str = "cpu"
    starts: Callable[..., np.ndarray] | None = field(default=None, repr=False)
    mode: str = "exact"
    merge_tol: float | None = None

    @property
    def n_chunks(self) -> int:
        """Chunks that cover ``chains`` (with ``escapes``, the most that may be run)."""
        return -(-self.chains // self.chunk)

    def chunk_range(self, j: int) -> tuple[int, int]:
        """(first_chain, chains) of chunk j."""
        first = j * self.chunk
        return first, min(self.chunk, self.chains - first)

    def to_dict(self) -> dict:
        """Plain-JSON description (for the manifest and the provenance sidecar)."""
        return {
            "point": self.index,
            "params": self.params,
            "seed": self.seed.to_dict(),
            "initial_seed": self.initial_seed,
            "chains": self.chains,
            "escapes": self.escapes,
            "n": int(self.x0.shape[0]),
            "d": int(self.x0.shape[1]),
        }


def _prefixed(prefix: str, spec: dict) -> dict:
    return {f"{prefix}_{k}": v for k, v in spec.items() if isinstance(v, (bool, int, float, str))}


def _build_point(config: dict, index: int, values: tuple, stream: int) -> Point:
    """Point ``index`` of the grid; its streams are those of point ``stream`` of the sweep
    with its seed in ``[run]`` (the index over the axes other than the seed)."""
    run = config["run"]
    params = {name: value for (name, _), value in zip(config["grid"], values)}
    seed = params.get("run.seed", run["seed"])
    specs = {s: dict(config[s]) for s in SECTIONS if s in config}
    for name, value in params.items():
        section, key = name.split(".", 1)
        if section != "run":
            specs[section][key] = value
    model = MODELS.build(specs["model"])
    polytope = POLYTOPES.build(specs["polytope"], rng=seed) if "polytope" in specs else None
    if specs["initial"].get("seed") is not None:
        seq = np.random.SeedSequence(specs["initial"]["seed"])
    else:
        seq = np.random.SeedSequence(seed, spawn_key=(stream, 0))
    build = functools.partial(
        INITIALS.build, specs["initial"], polytope=polytope, model=model, rng=seq
    )
    per_chain = "chains" in inspect.signature(INITIALS[specs["initial"]["kind"]].make).parameters
    x0 = build(chains=1)[0] if per_chain else build()
    x0.setflags(write=False)
    if run["mode"] == "accelerated":  # refused now, not by every chunk
        constant_chain(model, x0.shape[-1], why=_GEOMETRIC, what='[run] mode = "accelerated" needs')
    event = EVENTS.build(specs["event"], polytope=polytope, model=model, x0=x0)
    event.check_model(model)  # now, not on a worker: a sphere order parameter of an R^d model
    event.compile(x0[None], model.key_query(x0.shape[1]))  # shape checks now, not on a worker
    columns = {
        "point": index,
        **scalar_params(model.to_dict(), event.to_dict()),
        "max_steps": run["max_steps"],
        **_prefixed("polytope", specs.get("polytope", {})),
        **_prefixed("initial", specs["initial"]),
    }
    columns["initial_n"] = int(x0.shape[0])
    columns["seed"] = seed
    columns["mode"] = run["mode"]  # last: read_sweep appends it to rows written before it
    if run["mode"] == "accelerated":
        columns["merge_tol"] = run["merge_tol"]
    uses_seq = INITIALS[specs["initial"]["kind"]].random
    initial_seed = (
        {"entropy": str(seq.entropy), "spawn_key": list(seq.spawn_key)} if uses_seq else None
    )
    return Point(
        index=index,
        params=params,
        model=model,
        polytope=polytope,
        x0=x0,
        event=event,
        seed=Seed(seed, (stream,)),
        initial_seed=initial_seed,
        chains=run["chains"],
        chunk=min(run["chunk"], run["chains"]),
        max_steps=run["max_steps"],
        escapes=run["escapes"],
        columns=columns,
        device=run["device"],
        starts=build if per_chain else None,
        mode=run["mode"],
        merge_tol=run["merge_tol"],
    )


@dataclass(frozen=True, eq=False)
class Sweep:
    """A parameter grid with a number of chains (or a target number of escapes) per point.

    Build it with :meth:`from_toml` or :meth:`from_dict` (same shape as the TOML file; see the
    module docstring). Construction validates every point (models, polytopes, initial
    configurations, events), so a bad value is reported before any work starts.

    Parameters
    ----------
    config : dict
        The sweep's tables, in the shape of the TOML file (normalised and validated here).
    source : str
        Where the config was read from (default ``""``; :meth:`from_toml` gives the path).

    Examples
    --------
    >>> from metastab.sweep import Sweep
    >>> sweep = Sweep.from_dict({
    ...     "model": {"kind": "softmax-chain", "gamma": 0.1}, "grid": {"beta": [2.0, 3.0]},
    ...     "polytope": {"kind": "regular", "k": 3}, "initial": {"kind": "in-cells", "n": 6},
    ...     "event": {"kind": "leave-ball", "radius": 0.3},
    ...     "run": {"chains": 100, "chunk": 40, "max_steps": 1000, "seed": 1}})
    >>> len(sweep.points), sweep.points[1].params, sweep.points[1].n_chunks
    (2, {'model.beta': 3.0}, 3)
    """

    config: dict
    source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "config", normalise(self.config))
        self.points  # noqa: B018 - build and validate every point now
        self.files  # noqa: B018 - the digests of the files the points have just read

    @classmethod
    def from_dict(cls, data: dict, source: str = "") -> Sweep:
        return cls(data, source)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Sweep:
        """Read a sweep from a TOML file (errors name the file)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no such sweep config: {str(path)!r}")
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: not valid TOML: {exc}") from None
        try:
            return cls(data, str(path))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    @cached_property
    def files(self) -> list[dict]:
        """The files the config names, with their SHA-256 (:func:`input_files`)."""
        return input_files(self.config)

    @cached_property
    def hash(self) -> str:
        """SHA-256 of the canonical config and of the files it names: an output directory is
        bound to it."""
        return config_hash(self.config, self.files)

    @cached_property
    def points(self) -> tuple[Point, ...]:
        grid = self.config["grid"]
        points = []
        for index, picks in enumerate(itertools.product(*(range(len(v)) for _, v in grid))):
            values = tuple(axis[k] for (_, axis), k in zip(grid, picks))
            stream = 0  # the index of the point among the axes other than the seed
            for (name, axis), k in zip(grid, picks):
                if name != "run.seed":
                    stream = stream * len(axis) + k
            try:
                points.append(_build_point(self.config, index, values, stream))
            except (ValueError, TypeError) as exc:
                where = ", ".join(f"{n}={v!r}" for (n, _), v in zip(self.config["grid"], values))
                raise ValueError(f"point {index} ({where or 'no grid'}): {exc}") from None
        first = list(points[0].columns)
        for p in points[1:]:
            if list(p.columns) != first:
                raise ValueError(
                    f"point {p.index} has columns {list(p.columns)}, point 0 has "
                    f"{first}: every point of a sweep must have the same columns"
                )
        return tuple(points)
