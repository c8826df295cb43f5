"""Tables on disk with their provenance, and the helpers that the result objects share.

:func:`write_table` writes a tidy frame as CSV or parquet with a JSON sidecar
(:func:`sidecar`) holding :func:`provenance` and the run's parameters, and a saved result's
arrays as ``.npz`` (:func:`arrays_file`), whose sidecar then records the SHA-256 of both
(:func:`verify` checks one); :func:`read_table` reads the table and sidecar back, and
:func:`read_arrays` the arrays; :func:`check_writable` checks an output path before a long run.
:func:`describe`, :func:`seed_entropy` and :func:`scalar_params` put a result's specs and seed
into its repr and its frame (:mod:`.passage`, :mod:`.track`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from ..exceptions import DamagedFileError

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "provenance",
    "sidecar",
    "check_writable",
    "arrays_file",
    "DIGESTS",
    "write_table",
    "read_table",
    "read_sidecar",
    "read_arrays",
    "verify",
    "describe",
    "seed_entropy",
    "scalar_params",
]


def provenance(**extra: Any) -> dict:
    """Versions, thread count and host facts to store beside the data.

    Parameters
    ----------
    **extra
        Further entries (a run's parameters, its command), added after the facts and winning
        over them.

    Returns
    -------
    facts : dict
        The versions of metastab, numpy, numba, scipy and Python, numba's thread count and the
        machine's architecture, then ``extra``.

    Examples
    --------
    >>> import metastab as ms
    >>> from metastab.results import provenance
    >>> facts = provenance(command="metastab fit")
    >>> sorted(facts)
    ['command', 'machine', 'metastab', 'numba', 'numpy', 'python', 'scipy', 'threads']
    >>> facts["metastab"] == ms.__version__
    True
    """
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
    """The JSON metadata file stored next to a table: ``run.csv`` -> ``run.csv.json``.

    Parameters
    ----------
    path : Path
        The table.

    Returns
    -------
    sidecar : Path
        The sidecar's path, in the table's folder.

    Examples
    --------
    >>> from pathlib import Path
    >>> from metastab.results import sidecar
    >>> sidecar(Path("out") / "run.csv").as_posix()
    'out/run.csv.json'
    """
    return path.with_name(path.name + ".json")


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Check, before a long computation, that :func:`write_table` can write ``path``.

    Its nearest existing ancestor must be a folder in which a file can be created (a probe
    file, removed at once; missing folders below it are created only when the table is
    written).

    Parameters
    ----------
    path : str or os.PathLike
        The table to be written.

    Returns
    -------
    path : Path
        ``path``, as a Path.

    Raises
    ------
    OSError
        Naming ``path``, when it cannot be written.

    Examples
    --------
    >>> import os, tempfile
    >>> from metastab.results import check_writable
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     check_writable(os.path.join(tmp, "new", "run.csv")).name
    'run.csv'
    """
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


# The sidecar entry holding the SHA-256 of the files it describes: {"table": hex, "arrays": hex}.
DIGESTS = "sha256"
# What to do about a damaged or missing file, in every such error.
REMEDY = (
    "restore it from a copy, or compute it again (its sidecar records how: the command, or the "
    "call's model, event, seed and arguments)"
)
# The same, when the sidecar itself is what is lost.
LOST = "restore it from a copy, or compute it again"


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex (read in blocks: the arrays may be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_table(
    frame: pd.DataFrame,
    path: str | os.PathLike[str],
    meta: dict,
    arrays: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write a frame as CSV or parquet with a JSON provenance sidecar, atomically.

    ``arrays`` (if given: a saved result) are written bit for bit as ``.npz`` beside them
    (:func:`arrays_file`), with the SHA-256 of the table and of the arrays in the sidecar
    (:data:`DIGESTS`). Every file is written through a temporary file and a rename, the table
    last.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    path : str or os.PathLike
        Where to write it; the suffix, ``.csv`` or ``.parquet``, chooses the format. Missing
        folders are created.
    meta : dict
        The sidecar's content (JSON; values it cannot encode are written as strings).
    arrays : dict of str to ndarray, optional
        Arrays saved beside the table as ``.npz`` (default None: none).

    Returns
    -------
    path : Path
        ``path``, as a Path.

    Raises
    ------
    ValueError
        For a suffix other than ``.csv`` or ``.parquet``.
    OSError
        Naming ``path``, when a file cannot be written (no file is left half written).

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from metastab.results import read_table, write_table
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = write_table(pd.DataFrame({"beta": [1.0, 2.0]}), os.path.join(tmp, "t.csv"),
    ...                        {"seed": 7})
    ...     sorted(os.listdir(tmp)), read_table(path)[1]
    (['t.csv', 't.csv.json'], {'seed': 7})
    """
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
        if arrays is not None:
            with open(arrays_tmp, "wb") as fh:  # a file object: savez adds no suffix
                np.savez(fh, **cast("dict[str, Any]", arrays))
            # the sidecar is written after the files it vouches for, from their final bytes
            meta = {**meta, DIGESTS: {"table": sha256(tmp), "arrays": sha256(arrays_tmp)}}
        side_tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n")
        # the table appears last, when its sidecar and arrays are in place; an overwrite cut
        # short leaves old and new files side by side, whose digests then disagree
        if arrays is not None:
            os.replace(arrays_tmp, arrays_file(path))
        os.replace(side_tmp, sidecar(path))
        os.replace(tmp, path)
    except OSError as exc:
        for leftover in (tmp, side_tmp, arrays_tmp):
            leftover.unlink(missing_ok=True)
        raise OSError(f"out: cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return path


def _damaged(file: Path, exc: BaseException, remedy: str = REMEDY) -> DamagedFileError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return DamagedFileError(f"{str(file)!r} is damaged ({reason}): {remedy}")


def read_sidecar(path: Path) -> dict:
    """The sidecar of the table ``path``, parsed (which must exist); DamagedFileError naming it
    when it is not a JSON object."""
    side = sidecar(path)
    try:
        meta = json.loads(side.read_bytes())
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise _damaged(side, exc, LOST) from None
    if not isinstance(meta, dict):
        raise _damaged(side, ValueError(f"a JSON {type(meta).__name__}, not an object"), LOST)
    return meta


def verify(path: Path, meta: dict, role: str, required: bool = False) -> None:
    """Check that the table ``path`` (``role`` ``"table"``) or its arrays (``"arrays"``) has the
    SHA-256 that its sidecar ``meta`` records; a sidecar without :data:`DIGESTS` passes unless
    ``required``. Raises DamagedFileError naming the file, or the sidecar when its record is
    missing or malformed."""
    if DIGESTS not in meta and not required:
        return
    file = path if role == "table" else arrays_file(path)
    records = meta.get(DIGESTS)
    recorded = records.get(role) if isinstance(records, dict) else None
    if not isinstance(recorded, str):
        raise DamagedFileError(
            f"{str(sidecar(path))!r} records no SHA-256 of the {role} ({DIGESTS}.{role}): the "
            f"sidecar was edited; {REMEDY}"
        )
    if sha256(file) != recorded:
        raise DamagedFileError(
            f"{str(file)!r} was changed or truncated after it was saved (its SHA-256 is not the "
            f"one {str(sidecar(path))!r} records): {REMEDY}"
        )


def read_table(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, dict]:
    """Read a table written by :func:`write_table` and its sidecar.

    The table is checked against the SHA-256 the sidecar records, if any (:func:`verify`).

    Parameters
    ----------
    path : str or os.PathLike
        The table, ``.csv`` or ``.parquet``.

    Returns
    -------
    frame : pandas.DataFrame
        The table.
    meta : dict
        Its sidecar, parsed; empty when there is none.

    Raises
    ------
    ValueError
        For a suffix other than ``.csv`` or ``.parquet``.
    FileNotFoundError
        When there is no such file.
    DamagedFileError
        Naming the file, when the table or its sidecar cannot be read or the table's SHA-256 is
        not the one recorded.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from metastab.results import read_table, write_table
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = write_table(pd.DataFrame({"beta": [1.0, 2.0]}), os.path.join(tmp, "t.csv"),
    ...                        {"seed": 7})
    ...     frame, meta = read_table(path)
    >>> frame["beta"].tolist(), meta
    ([1.0, 2.0], {'seed': 7})
    """
    path = Path(path)
    if path.suffix not in (".csv", ".parquet"):
        raise ValueError(f"a table must end in .csv or .parquet, got {str(path)!r}")
    if not path.exists():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    meta = read_sidecar(path) if sidecar(path).exists() else {}
    verify(path, meta, "table")
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (ValueError, OSError) as exc:  # pyarrow's corrupt data is an OSError without errno
        if isinstance(exc, OSError) and exc.errno is not None:
            raise
        raise _damaged(path, exc) from None
    return frame, meta


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path``, read into memory; DamagedFileError naming it when
    it is not a readable ``.npz``."""
    try:
        # our own file object: np.load leaves its own open when the zip is unreadable
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as arrays:
            return dict(arrays)
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:  # bad CRC, truncated, not a zip
        raise _damaged(path, exc) from None
