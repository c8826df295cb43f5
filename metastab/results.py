"""Frozen result objects: bulk arrays, tidy frames, and the provenance that travels with them."""

from __future__ import annotations

import json
import os
import platform
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from typing import Any

__all__ = ["FirstPassage", "Run", "provenance", "write_table", "read_table", "check_writable"]


def provenance(**extra: Any) -> dict:
    """Versions, thread count and host facts to store beside the data."""
    import numba
    import scipy

    from . import __version__

    return {
        "metastab": __version__,
        "numpy": np.__version__,
        "numba": numba.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "threads": numba.get_num_threads(),
        "machine": platform.machine(),
        **extra,
    }


def _scalar_params(model: dict, event: dict) -> dict:
    """Model and event parameters that fit in one column each (scalars only)."""
    out = {}
    for prefix, spec in (("", model), ("event_", event)):
        for key, value in spec.items():
            if isinstance(value, (bool, int, float, str)):
                out[("model" if key == "kind" and not prefix else prefix + key)] = value
    return out


def _describe(spec: dict) -> str:
    """'softmax-chain(beta=10, gamma=0.1)': a spec's kind and its scalar parameters."""
    args = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in spec.items()
        if k != "kind" and isinstance(v, (bool, int, float, str))
    )
    return f"{spec.get('kind', '?')}({args})"


def _entropy(seed: dict) -> str:
    entropy = seed.get("entropy")
    return "/".join(entropy) if isinstance(entropy, list) else str(entropy)


def sidecar(path: Path) -> Path:
    """The JSON metadata file stored next to a table: ``run.csv`` -> ``run.csv.json``."""
    return path.with_name(path.name + ".json")


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Check, before a long computation, that :func:`write_table` can write ``path``: its
    nearest existing ancestor is a folder in which a file can be created (a probe file, removed
    at once; missing folders below it are created only when the table is written). Raises
    OSError naming ``path``."""
    path = Path(path)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise OSError(f"out: cannot write {str(path)!r}: {str(folder)!r} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise OSError(f"out: cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return path


def write_table(frame: pd.DataFrame, path: str | os.PathLike[str], meta: dict) -> Path:
    """Write ``frame`` as CSV or parquet (by suffix) with a JSON provenance sidecar, atomically
    (through temporary files and renames). Errors name ``path``."""
    path = Path(path)
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"out must end in .csv or .parquet, got {str(path)!r}")
    tmp = path.with_name(path.name + ".tmp")
    side_tmp = sidecar(tmp)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
        side_tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
        os.replace(side_tmp, sidecar(path))
        os.replace(tmp, path)
    except OSError as exc:
        for leftover in (tmp, side_tmp):
            leftover.unlink(missing_ok=True)
        raise OSError(f"out: cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return path


def read_table(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, dict]:
    """Read a table written by :func:`write_table` and its sidecar (empty dict if absent)."""
    path = Path(path)
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"a table must end in .csv or .parquet, got {str(path)!r}")
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    side = sidecar(path)
    meta = json.loads(side.read_text()) if side.exists() else {}
    return frame, meta


@dataclass(frozen=True, eq=False)
class FirstPassage:
    """First-passage times of many independent chains.

    ``steps[c]`` is the first step t >= 0 at which chain c met the event, or ``max_steps`` with
    ``censored[c]`` True when it had not by then (right-censored: never an event time).
    ``final[c]`` is chain c's configuration when it stopped. Chains are numbered from
    ``first_chain``; chain k's path depends only on the seed and k. ``steps`` is int64, or
    float64 from ``first_passage(..., mode="accelerated")`` (``max_steps`` may then be a float;
    ``provenance["mode"]`` says which).
    """

    steps: np.ndarray = field(repr=False)
    censored: np.ndarray = field(repr=False)
    final: np.ndarray = field(repr=False)
    max_steps: int | float
    model: dict
    event: dict
    seed: dict
    first_chain: int = 0
    provenance: dict = field(default_factory=dict, repr=False)

    @property
    def chains(self) -> int:
        return self.steps.size

    def __repr__(self) -> str:
        return (
            f"FirstPassage(model={_describe(self.model)}, event={_describe(self.event)}, "
            f"chains={self.chains}, events={self.events}, "
            f"censored={self.chains - self.events}, max_steps={self.max_steps:g}, "
            f"seed={_entropy(self.seed)})"
        )

    @property
    def events(self) -> int:
        """Number of chains that met the event (not censored)."""
        return int((~self.censored).sum())

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per chain (chain, steps, censored) plus the scalar parameters."""
        frame = pd.DataFrame(
            {
                "chain": np.arange(
                    self.first_chain, self.first_chain + self.chains, dtype=np.int64
                ),
                "steps": self.steps,
                "censored": self.censored,
            }
        )
        for key, value in _scalar_params(self.model, self.event).items():
            frame[key] = value
        frame["max_steps"] = self.max_steps
        return frame

    def metadata(self) -> dict:
        return {
            "kind": "first-passage",
            "model": self.model,
            "event": self.event,
            "seed": self.seed,
            "first_chain": self.first_chain,
            "max_steps": self.max_steps,
            "chains": self.chains,
            "provenance": self.provenance,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_frame` to ``.csv`` or ``.parquet`` with a ``.json`` sidecar."""
        return write_table(self.to_frame(), path, self.metadata())


@dataclass(frozen=True, eq=False)
class Run:
    """States of many chains after ``steps`` steps, and, when recorded, a thinned trajectory.

    ``trajectory[c, r]`` is chain c's configuration at step ``times[r]`` (times 0, k, 2k, ... for
    ``record_every=k``, the last step always included). With ``record_neighbours=True`` (Hardmax,
    Localmax), ``neighbours[c, r, i, j]`` says whether j is in token i's neighbour set N_i (the
    leader set L_i for Hardmax) used by the step from ``times[r]``.
    """

    final: np.ndarray = field(repr=False)
    steps: int
    model: dict
    seed: dict
    trajectory: np.ndarray | None = field(default=None, repr=False)
    times: np.ndarray | None = field(default=None, repr=False)
    first_chain: int = 0
    provenance: dict = field(default_factory=dict, repr=False)
    neighbours: np.ndarray | None = field(default=None, repr=False)

    @property
    def chains(self) -> int:
        return self.final.shape[0]

    def __repr__(self) -> str:
        kept = "" if self.times is None else f", states_kept={len(self.times)}"
        return (
            f"Run(model={_describe(self.model)}, chains={self.chains}, "
            f"n={self.final.shape[1]}, d={self.final.shape[2]}, steps={self.steps}{kept}, "
            f"seed={_entropy(self.seed)})"
        )

    @property
    def leaders(self) -> np.ndarray | None:
        """(chains, snapshots, n) bool: token i attends to itself (i in N_i) at ``times[r]``;
        None unless the neighbour sets were recorded."""
        if self.neighbours is None:
            return None
        return np.diagonal(self.neighbours, axis1=2, axis2=3)

    def to_frame(self) -> pd.DataFrame:
        """Tidy long table: chain, step, token and one column per coordinate (coord0, coord1, ...;
        not x0, the name of the initial configuration).

        Uses the trajectory when recorded, else the final states only.
        """
        if self.trajectory is None:
            states, times = self.final[:, None], np.array([self.steps])
        else:
            if self.times is None:
                raise ValueError("Run: a trajectory was recorded without its times")
            states, times = self.trajectory, self.times
        C, R, n, d = states.shape
        chain, step, token = np.meshgrid(
            np.arange(self.first_chain, self.first_chain + C), times, np.arange(n), indexing="ij"
        )
        frame = pd.DataFrame({"chain": chain.ravel(), "step": step.ravel(), "token": token.ravel()})
        for k in range(d):
            frame[f"coord{k}"] = states[..., k].ravel()
        for key, value in _scalar_params(self.model, {}).items():
            frame[key] = value
        return frame

    def metadata(self) -> dict:
        return {
            "kind": "run",
            "model": self.model,
            "seed": self.seed,
            "steps": self.steps,
            "first_chain": self.first_chain,
            "chains": self.chains,
            "provenance": self.provenance,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_frame` to ``.csv`` or ``.parquet`` with a ``.json`` sidecar."""
        return write_table(self.to_frame(), path, self.metadata())
