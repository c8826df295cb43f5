"""Tables on disk with their provenance, and the helpers that the result objects share.

:func:`write_table` writes a tidy frame as CSV or parquet with a JSON sidecar
(:func:`sidecar`) holding :func:`provenance` and the run's parameters, and a saved result's
arrays as ``.npz`` (:func:`arrays_file`); :func:`read_table` reads the table and sidecar back;
:func:`check_writable` checks an output path before a long run. :func:`describe`,
:func:`seed_entropy` and :func:`scalar_params` put a result's specs and seed into its repr and
its frame (:mod:`.passage`, :mod:`.track`).
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "provenance",
    "sidecar",
    "check_writable",
    "arrays_file",
    "write_table",
    "read_table",
    "describe",
    "seed_entropy",
    "scalar_params",
]


def provenance(**extra: Any) -> dict:
    """Versions, thread count and host facts to store beside the data."""
    import numba
    import scipy

    from .. import __version__

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


def scalar_params(model: dict, event: dict) -> dict:
    """Model and event parameters that fit in one column each (scalars only)."""
    out = {}
    for prefix, spec in (("", model), ("event_", event)):
        for key, value in spec.items():
            if isinstance(value, (bool, int, float, str)):
                out[("model" if key == "kind" and not prefix else prefix + key)] = value
    return out


def describe(spec: dict) -> str:
    """'softmax-chain(beta=10, gamma=0.1)': a spec's kind and its scalar parameters."""
    args = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in spec.items()
        if k != "kind" and isinstance(v, (bool, int, float, str))
    )
    return f"{spec.get('kind', '?')}({args})"


def seed_entropy(seed: dict) -> str:
    """The root entropy of a seed's ``to_dict`` (several words joined by '/')."""
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


def arrays_file(path: Path) -> Path:
    """The arrays stored next to a saved result's table: ``run.csv`` -> ``run.csv.npz``."""
    return path.with_name(path.name + ".npz")


def write_table(
    frame: pd.DataFrame,
    path: str | os.PathLike[str],
    meta: dict,
    arrays: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write ``frame`` as CSV or parquet (by suffix) with a JSON provenance sidecar, and
    ``arrays`` (if given) bit for bit as ``.npz`` beside them (:func:`arrays_file`), atomically
    (through temporary files and renames). Errors name ``path``."""
    path = Path(path)
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"out must end in .csv or .parquet, got {str(path)!r}")
    tmp = path.with_name(path.name + ".tmp")
    side_tmp, arrays_tmp = sidecar(tmp), arrays_file(tmp)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
        side_tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
        if arrays is not None:
            with open(arrays_tmp, "wb") as fh:  # a file object: savez adds no suffix
                np.savez(fh, **cast("dict[str, Any]", arrays))
            os.replace(arrays_tmp, arrays_file(path))
        os.replace(side_tmp, sidecar(path))
        os.replace(tmp, path)
    except OSError as exc:
        for leftover in (tmp, side_tmp, arrays_tmp):
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
