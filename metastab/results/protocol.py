"""One protocol for every result: ``to_frame()``, ``metadata()``, ``save(path)``, ``load(path)``
and ``replay()``.

A saved result is three files: its tidy table (``to_frame()``, CSV or parquet, what other tools
read), the table's JSON sidecar (``metadata()``: the result's ``kind`` and class, the
:data:`SCHEMA_VERSION`, its scalar and dict fields, provenance included) and ``<table>.npz``
with its arrays, bit for bit; the sidecar, written last, records the SHA-256 of the other two.
:func:`load` reads the sidecar, checks the table and the arrays against it, picks the class by
its ``kind`` (:data:`KINDS`) and rebuilds the object from the sidecar's fields and the arrays.

A result keeps what its computation needs to run again: the model and event as their
``to_dict``, the seed, the initial configuration ``x0`` and the other arguments of the call
(``arguments``). :meth:`Result.replay` rebuilds the model and event (:mod:`metastab.registry`)
and calls the function again; chains are pure functions of the seed and their index, so the
replay gives the same bits, on any thread count. When the versions of metastab, NumPy, Numba,
SciPy or Python differ from those recorded, a :class:`~metastab.DiagnosticWarning` says which
(the bits may then differ), and the replay runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from ..exceptions import DamagedFileError, DiagnosticWarning
from .io import (
    LOST,
    REMEDY,
    arrays_file,
    provenance,
    read_arrays,
    read_sidecar,
    sidecar,
    verify,
    write_table,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SCHEMA_VERSION", "KINDS", "VERSIONS", "Result", "load"]

# Version of the saved form: 1 added the arrays file, the class, x0 and the call's arguments;
# 2 the SHA-256 of the table and the arrays (version 1 still loads, unchecked).
SCHEMA_VERSION = 2
# A sidecar's kind -> the class that loads it ("module:class", imported on first use).
KINDS = {
    "first-passage": "metastab.results.passage:FirstPassage",
    "run": "metastab.results.passage:Run",
    "plateaus": "metastab.results.track:Track",
    "observables": "metastab.results.track:Track",
    "ams": "metastab.results.ams:AMSResult",
    "ams-mean-time": "metastab.results.ams:AMSMeanTime",
}
# The provenance entries that a replay compares with the running ones.
VERSIONS = ("metastab", "numpy", "numba", "scipy", "python")

R = TypeVar("R", bound="Result")


def _target(spec: str) -> Any:
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


class Result:
    """The shared half of the result dataclasses: saving, loading and replaying.

    A subclass sets :attr:`KIND` (its sidecar ``kind``), :attr:`REPLAY` (``"module:function"``
    that computed it) and defines ``to_frame()``; its fields ``model``, ``seed``, ``x0`` (or
    the field :attr:`START` names), ``arguments`` (and ``event`` if it has one) are what
    :meth:`replay` passes back.

    Attributes
    ----------
    model : dict
        The model's ``to_dict``.
    seed : dict
        The root seed's ``to_dict`` (:class:`~metastab.Seed`).
    arguments : dict
        The other keyword arguments of the call that made the result.

    See Also
    --------
    load : a saved result, as its class.

    Examples
    --------
    >>> import os, tempfile
    >>> import metastab as ms
    >>> x0 = ms.regular_polygon(5).vertices
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=2.0, gamma=0.5), x0, ms.LeaveBall(0.1),
    ...                       chains=4, max_steps=50, rng=1)
    >>> isinstance(fp, ms.results.Result), fp.metadata()["kind"]
    (True, 'first-passage')
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     back = ms.FirstPassage.load(fp.save(os.path.join(tmp, "fp.csv")))
    >>> bool((back.times == fp.times).all()), bool((fp.replay().times == fp.times).all())
    (True, True)
    """

    KIND: ClassVar[str]
    REPLAY: ClassVar[str]
    START: ClassVar[str] = "x0"  # the field holding the initial configuration
    # fields of the subclasses that replay reads
    model: dict
    seed: dict
    arguments: dict

    def to_frame(self) -> pd.DataFrame:
        raise NotImplementedError

    def _extras(self) -> dict:
        """Derived entries of the sidecar, for its readers (not read back by :func:`load`)."""
        return {}

    def metadata(self, kind: str | None = None) -> dict:
        """The sidecar: kind, class, schema version, the fields that are not arrays, and
        the derived entries of ``_extras()`` (such as ``chains``)."""
        fields, _ = self._parts()
        return {
            "kind": kind or self.KIND,
            "class": type(self).__name__,
            "schema_version": SCHEMA_VERSION,
            **fields,
            **self._extras(),
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_frame` to ``.csv`` or ``.parquet`` with its ``.json`` sidecar and the
        arrays (``.npz``): what :meth:`load` reads back."""
        return self._write(self.to_frame(), path, self.KIND)

    def _write(self, frame: pd.DataFrame, path: str | os.PathLike[str], kind: str) -> Path:
        return write_table(frame, path, self.metadata(kind), self._parts()[1])

    @classmethod
    def load(cls: type[R], path: str | os.PathLike[str]) -> R:
        """The result saved at ``path`` by :meth:`save`; ValueError if it is not a ``cls``."""
        result = load(path)
        if not isinstance(result, cls):
            raise ValueError(f"{str(path)!r} holds a {type(result).__name__}, not a {cls.__name__}")
        return result

    def replay(self: R) -> R:
        """Run the computation again from the recorded model, event, x0, seed and arguments:
        the same bits (a :class:`~metastab.DiagnosticWarning` first if versions differ)."""
        check_versions(getattr(self, "provenance", {}))
        return self._rerun()

    def _rerun(self: R) -> R:
        from ..registry import event_from_dict, model_from_dict
        from ..rng import Seed

        x0 = getattr(self, self.START, None)
        if x0 is None:
            raise ValueError(
                f"this {type(self).__name__} holds no {self.START} (it was not made by "
                f"{self.REPLAY.split(':')[1]}), so it cannot be replayed"
            )
        inputs = [model_from_dict(self.model), x0]
        if hasattr(self, "event"):
            inputs.append(event_from_dict(self.event))
        return _target(self.REPLAY)(*inputs, rng=Seed.from_dict(self.seed), **self.arguments)

    def _parts(self, prefix: str = "") -> tuple[dict, dict[str, np.ndarray]]:
        """(the fields that go into the sidecar, the arrays keyed by ``prefix`` + name); a
        nested result goes into the sidecar as a dict of its kind, class and fields."""
        fields: dict[str, Any] = {}
        arrays: dict[str, np.ndarray] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                arrays[prefix + f.name] = value
            elif isinstance(value, Result):
                sub, sub_arrays = value._parts(f"{prefix}{f.name}/")
                fields[f.name] = {"kind": value.KIND, "class": type(value).__name__, **sub}
                arrays.update(sub_arrays)
            else:
                fields[f.name] = value
        return fields, arrays

    @classmethod
    def _rebuild(cls: type[R], meta: dict, arrays: Any, where: str, prefix: str = "") -> R:
        values = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            key = prefix + f.name
            if key in arrays:
                values[f.name] = arrays[key]
            elif f.name in meta:
                value = meta[f.name]
                if isinstance(value, dict) and value.get("kind") in KINDS and "class" in value:
                    value = _target(KINDS[value["kind"]])._rebuild(value, arrays, where, key + "/")
                values[f.name] = value
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where}: the saved {cls.__name__} has no field {f.name!r}")
        return cls(**values)


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (for the JSON sidecar); else ``value``."""
    return value.item() if isinstance(value, np.generic) else value


def check_versions(recorded: dict) -> None:
    """Warn (DiagnosticWarning) when :data:`VERSIONS` of ``recorded`` differ from the running
    ones."""
    now = provenance()
    changed = [
        f"{k} {recorded[k]} -> {now[k]}"
        for k in VERSIONS
        if k in recorded and recorded[k] != now[k]
    ]
    if changed:
        warnings.warn(
            f"replaying under other versions than the result's ({', '.join(changed)}): "
            f"the bits may differ",
            DiagnosticWarning,
            stacklevel=3,
        )


def load(path: str | os.PathLike[str]) -> Result:
    """The result saved at ``path`` by a result's ``save``, as an object of its class.

    The class is the one the sidecar names: a :class:`~metastab.FirstPassage`,
    :class:`~metastab.Run`, :class:`~metastab.Track`, :class:`~metastab.results.ams.AMSResult`
    or :class:`~metastab.results.ams.AMSMeanTime`. The table
    and the arrays are checked against the SHA-256 the sidecar records (files of schema
    version 1 record none, and load unchecked).

    Parameters
    ----------
    path : str or os.PathLike
        The saved table (``.csv`` or ``.parquet``); its sidecar (``.json``) and arrays
        (``.npz``) lie beside it.

    Returns
    -------
    result : Result
        The result, with the arrays bit for bit as they were saved.

    Raises
    ------
    FileNotFoundError
        If ``path``, its sidecar or its arrays do not exist (each named).
    DamagedFileError
        If the table or the arrays differ from what was saved, or the sidecar or the arrays
        cannot be parsed (the file named).
    ValueError
        If the sidecar names no known kind, or the result was saved without its arrays (before
        schema version 1: read its table with :func:`metastab.results.read_table`), or a field
        is missing (named).

    Examples
    --------
    >>> import os, tempfile
    >>> import metastab as ms
    >>> x0 = ms.regular_polygon(5).vertices
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=2.0, gamma=0.5), x0, ms.LeaveBall(0.1),
    ...                       chains=4, max_steps=50, rng=1)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = fp.save(os.path.join(tmp, "fp.csv"))
    ...     sorted(os.listdir(tmp))
    ...     back = ms.load(path)
    ['fp.csv', 'fp.csv.json', 'fp.csv.npz']
    >>> back  # doctest: +NORMALIZE_WHITESPACE
    FirstPassage(model=softmax-chain(beta=2, gamma=0.5), event=leave-ball(radius=0.1), chains=4,
                 events=4, absorbed=0, censored=0, max_steps=50, seed=1)
    >>> back.times.tolist() == fp.times.tolist()
    True
    """
    path = Path(path)
    where, side, npz = str(path), sidecar(path), arrays_file(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {where!r}")
    if not side.exists():
        if npz.exists():  # a saved result that lost its metadata
            raise FileNotFoundError(
                f"{where!r} has lost its sidecar {str(side)!r}, without which it cannot be "
                f"loaded: {LOST}"
            )
        raise FileNotFoundError(f"{where!r} has no sidecar {str(side)!r}: not a saved result")
    meta = read_sidecar(path)
    kind = meta.get("kind")
    if kind not in KINDS:
        raise ValueError(
            f"{where!r}: the sidecar's kind is {kind!r}, not a result kind ({sorted(KINDS)})"
        )
    version = meta.get("schema_version")
    if version is None:
        raise ValueError(
            f"{where!r} was saved without schema_version and arrays ({npz.name}): "
            f"only its table can be read (metastab.results.read_table)"
        )
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DamagedFileError(
            f"{str(side)!r}: schema_version must be an integer >= 1, got {version!r}"
        )
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"{where!r} has schema_version {version}, newer than this metastab reads "
            f"({SCHEMA_VERSION})"
        )
    if not npz.exists():
        raise FileNotFoundError(f"{where!r} has lost its arrays {str(npz)!r}: {REMEDY}")
    for role in ("table", "arrays"):
        verify(path, meta, role, required=version >= 2)
    return _target(KINDS[kind])._rebuild(meta, read_arrays(npz), where)
