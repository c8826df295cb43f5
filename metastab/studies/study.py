"""A study of the repository's ``studies/`` folder: its modules, its typed configuration and its
report template.

**Modules.** The repository's ``studies/`` folder is the package ``studies``, one subpackage per
study, named as the study with ``-`` written ``_`` (:func:`package_name`): study
``hardmax-nsd`` is ``studies/hardmax_nsd/``, its ``run.py`` the module
``studies.hardmax_nsd.run``, while its command (``metastab study hardmax-nsd``) and its outputs
(``data/hardmax-nsd/``) keep the hyphen. A study's files import each other relatively
(``from .checks import orders``) and another study's by its package
(``from studies.staircase import run``).

**Configuration.** A study declares its parameters as a frozen dataclass ``Config``
(:func:`config_table`), subclass of :class:`StudyConfig`, in its ``config.py``; tables of
``config.toml`` are nested dataclasses.
:meth:`StudyConfig.from_dict` refuses unknown and missing keys, values of another type and values
outside a field's :func:`bounded` range, naming the key and the value. A config is read by its
typed attributes only (``config.seed``, ``config.power.exponent_over_c0``), so that a type checker
sees every key a study reads; :meth:`StudyConfig.to_dict` gives back the TOML table it was read
from (what the tables' provenance records).

**Report.** A study's ``report.md`` holds all the text of its report, as named parts (a line
``<!-- part: NAME -->`` opens each): :class:`string.Template` texts whose ``$placeholders`` the
study's ``report.py`` fills with values computed from the tables in ``out``; where the report's
wording depends on a result, the code chooses between parts (:class:`ReportTemplate`).
:func:`fill` refuses a placeholder without a value and a value without a placeholder.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import importlib
import importlib.util
import math
import re
import string
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

__all__ = [
    "PACKAGE",
    "ConfigError",
    "StudyConfig",
    "bounded",
    "config_table",
    "study_root",
    "study_folder",
    "list_studies",
    "package_name",
    "study_module",
    "fill",
    "ReportTemplate",
]

PACKAGE = "studies"
_C = TypeVar("_C", bound="StudyConfig")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


class ConfigError(ValueError):
    """A study's configuration has an unknown or missing key, or a value of another type or
    outside its range.

    A :class:`ValueError`; the message names the key and the value.

    Examples
    --------
    >>> from metastab.studies import ConfigError, load_config
    >>> try:
    ...     load_config("hardmax-nsd") | {"seeed": 1}
    ... except ConfigError as err:
    ...     print(err)
    unknown key 'seeed' (= 1); did you mean 'seed'?
    """


# --------------------------------------------------------------------------- folders and modules


def study_root() -> Path:
    """The ``studies/`` folder: beside the package in a clone, else in the working directory.

    Returns
    -------
    root : Path
        The folder.

    Raises
    ------
    FileNotFoundError
        Outside a clone of the repository (the studies are not in the installed package).

    Examples
    --------
    >>> from metastab.studies import study_root
    >>> root = study_root()
    >>> root.name, (root / "README.md").is_file()
    ('studies', True)
    """
    # this file is metastab/studies/study.py: the clone's root is three folders up
    for root in (Path(__file__).resolve().parents[2] / "studies", Path.cwd() / "studies"):
        if root.is_dir():
            return root
    raise FileNotFoundError(
        "no studies/ folder beside the metastab package or in the working "
        "directory: studies live in the metastab repository; run from a clone"
    )


def list_studies() -> list[str]:
    """Names of the studies (packages of ``studies/`` with a ``run.py``, ``_`` written ``-``),
    sorted.

    Returns
    -------
    names : list of str
        The names, as ``metastab study NAME`` takes them.

    Examples
    --------
    >>> from metastab.studies import list_studies
    >>> names = list_studies()
    >>> "hardmax-nsd" in names, names == sorted(names)
    (True, True)
    """
    return sorted(p.parent.name.replace("_", "-") for p in study_root().glob("*/run.py"))


def study_folder(name: str) -> Path:
    """The folder of study ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not a study's name.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"study name must be lower-case letters, digits and '-', got {name!r}")
    folder = study_root() / package_name(name)
    if not (folder / "run.py").is_file():
        raise ValueError(f"unknown study {name!r}; the studies are: {', '.join(list_studies())}")
    return folder


def package_name(name: str) -> str:
    """The Python package of study ``name`` in ``studies``: its name with ``-`` written ``_``
    (the command, ``data/NAME/`` and the docs keep the hyphens).

    Parameters
    ----------
    name : str
        The study's name.

    Returns
    -------
    package : str
        The name of its package in ``studies``.

    Examples
    --------
    >>> from metastab.studies import package_name
    >>> package_name("hardmax-nsd")
    'hardmax_nsd'
    """
    return name.replace("-", "_")


def _importable() -> None:
    """Make ``studies`` import as the package of :func:`study_root`: its parent (the clone's root)
    goes on ``sys.path`` unless ``studies`` is found there already (a folder ``studies`` without
    ``__init__.py`` elsewhere on the path is a namespace package, which the regular one wins
    over once the root is on the path).

    Raises
    ------
    ImportError
        If ``studies`` imports from elsewhere all the same.
    """
    root = study_root()

    def where() -> list[str]:
        found = importlib.util.find_spec(PACKAGE)
        return list(found.submodule_search_locations or []) if found is not None else []

    if [Path(p).resolve() for p in where()] != [root] and str(root.parent) not in sys.path:
        sys.path.append(str(root.parent))
        importlib.invalidate_caches()
    if [Path(p).resolve() for p in where()] != [root]:
        raise ImportError(
            f"the package {PACKAGE!r} is not the studies folder {root} (found {where()})"
        )


def study_module(name: str, stem: str) -> types.ModuleType:
    """The module ``STEM`` of study ``name``: ``studies.PACKAGE.STEM`` (:func:`package_name`),
    imported once like any other module.

    Parameters
    ----------
    name : str
        The study's name.
    stem : str
        The module's file name without ``.py`` (``run``, ``config``, ``checks``, ...).

    Returns
    -------
    module : module
        The imported module.

    Raises
    ------
    ValueError
        If ``name`` is not a study's name.

    Examples
    --------
    >>> from metastab.studies import study_module
    >>> study_module("hardmax-nsd", "run").__name__
    'studies.hardmax_nsd.run'
    """
    study_folder(name)
    _importable()
    return importlib.import_module(f"{PACKAGE}.{package_name(name)}.{stem}")


# --------------------------------------------------------------------------- configuration


def bounded(
    low: float | None = None, high: float | None = None, *, default: Any = dataclasses.MISSING
) -> Any:
    """A config field whose value must lie in [low, high] (either side open if None); for a
    list, every element."""
    return dataclasses.field(default=default, metadata={"low": low, "high": high})


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _refuse(key: str, value: Any, wanted: str) -> ConfigError:
    return ConfigError(f"key {key!r} must be {wanted}, got {value!r} ({type(value).__name__})")


def _checked(tp: Any, value: Any, key: str) -> Any:
    """``value`` if it has type ``tp`` (an int is a float; TOML tables become nested configs),
    else :class:`ConfigError`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if isinstance(tp, type) and issubclass(tp, StudyConfig):
        if not isinstance(value, dict):
            raise _refuse(key, value, "a table")
        return tp.from_dict(value, where=f"{key}.")
    if origin is list:
        if not isinstance(value, list):
            raise _refuse(key, value, f"a list of {_type_name(args[0]) if args else 'values'}")
        return [_checked(args[0], v, f"{key}[{i}]") for i, v in enumerate(value)] if args else value
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise _refuse(key, value, "a table")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _refuse(key, value, "true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _refuse(key, value, "an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise _refuse(key, value, "a number")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _refuse(key, value, "a string")
        return value
    raise TypeError(f"config field {key!r}: unsupported type {tp!r}")  # a study's own mistake


def _in_range(field: dataclasses.Field, value: Any, key: str) -> None:
    low, high = field.metadata.get("low"), field.metadata.get("high")
    if low is None and high is None:
        return
    for v in value if isinstance(value, list) else [value]:
        if (low is not None and v < low) or (high is not None and v > high):
            span = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
            raise ConfigError(f"key {key!r} must lie in {span}, got {v!r}")


@dataclasses.dataclass(frozen=True)
class StudyConfig:
    """The base of a study's ``Config``: a frozen dataclass read from a TOML table.

    A study subclasses it with :func:`config_table` and its fields (:func:`bounded` for a
    range); :meth:`from_dict` reads and checks a table, :meth:`to_dict` gives it back, and
    ``config | {key: value}`` replaces top-level keys.

    Examples
    --------
    >>> from metastab.studies import StudyConfig
    >>> from metastab.studies.study import bounded, config_table
    >>> @config_table
    ... class Config(StudyConfig):
    ...     seed: int
    ...     betas: list[float] = bounded(0.0)
    >>> c = Config.from_dict({"seed": 1, "betas": [1, 2.5]})
    >>> c.betas, c.seed, c.to_dict()
    ([1, 2.5], 1, {'seed': 1, 'betas': [1, 2.5]})
    >>> (c | {"seed": 2}).seed
    2
    >>> Config.from_dict({"seed": 1, "betas": [-1.0]})
    Traceback (most recent call last):
    ...
    metastab.studies.study.ConfigError: key 'betas' must lie in [0.0, inf], got -1.0
    """

    @classmethod
    def from_dict(cls: type[_C], table: Mapping[str, Any], *, where: str = "") -> _C:
        """The config of ``table``; ``where`` prefixes the keys in errors (a nested table's).

        Raises
        ------
        ConfigError
            If a key is unknown or missing, or a value has another type or lies outside its
            field's range.
        """
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = [k for k in table if k not in fields]
        if unknown:
            k = unknown[0]
            near = difflib.get_close_matches(k, fields, n=1)
            hint = (
                f"did you mean {where + near[0]!r}?" if near else f"the keys: {', '.join(fields)}"
            )
            raise ConfigError(f"unknown key {where + k!r} (= {table[k]!r}); {hint}")
        hints = typing.get_type_hints(cls)
        values = {}
        for name, field in fields.items():
            key = where + name
            if name not in table:
                if field.default is dataclasses.MISSING:
                    raise ConfigError(f"missing key {key!r}")
                continue
            values[name] = _checked(hints[name], table[name], key)
            _in_range(field, table[name], key)
        config = cls(**values)
        object.__setattr__(config, "_table", copy.deepcopy(dict(table)))
        config.check()
        return config

    def check(self) -> None:
        """Checks across keys, for a study to override; raises :class:`ConfigError`."""

    def to_dict(self) -> dict[str, Any]:
        """The TOML table this config was read from (a copy)."""
        table = getattr(self, "_table", None)
        if table is None:  # built directly, not read
            table = {
                f.name: (v.to_dict() if isinstance(v, StudyConfig) else v)
                for f in dataclasses.fields(self)
                for v in [getattr(self, f.name)]
            }
        return copy.deepcopy(table)

    def __or__(self: _C, changes: Mapping[str, Any]) -> _C:
        """This config with the top-level keys of ``changes`` replaced, checked again."""
        return type(self).from_dict({**self.to_dict(), **changes})


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # the type checker's alone (typing has it from Python 3.11)

    def dataclass_transform(**kwargs: Any) -> Callable[[type], type]:
        return lambda f: f


# bounded() declared a field specifier: a bounded field without a default may follow one with a
# default, as at run time (the stdlib decorator's type check knows dataclasses.field alone)
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, bounded))
def config_table(cls: type[_C]) -> type[_C]:
    """``cls`` (a :class:`StudyConfig`) as a frozen dataclass: the decorator of a study's
    ``Config`` and of its tables."""
    return dataclasses.dataclass(frozen=True)(cls)


# --------------------------------------------------------------------------- report templates


def fill(template: str, values: Mapping[str, str], *, name: str = "report.md") -> str:
    """``template`` (a :class:`string.Template`) with ``values`` substituted.

    >>> fill("b = $b, c0 ${where}.", {"b": "0.52", "where": "inside"})
    'b = 0.52, c0 inside.'

    Raises
    ------
    ValueError
        If a placeholder has no value, or a value no placeholder.
    """
    tpl = string.Template(template)
    wanted = {
        m.group("named") or m.group("braced")
        for m in tpl.pattern.finditer(template)
        if m.group("named") or m.group("braced")
    }
    missing, unused = sorted(wanted - set(values)), sorted(set(values) - wanted)
    if missing or unused:
        raise ValueError(
            f"{name}: placeholders without a value {missing}, values without a placeholder {unused}"
        )
    return tpl.substitute(values)


_PART = re.compile(r"^<!-- part: ([A-Za-z_][A-Za-z0-9_]*) -->\n", re.MULTILINE)


class ReportTemplate:
    """The named parts of a report template: the text after each line ``<!-- part: NAME -->``
    up to the next such line, without its final newline (text before the first part is a
    preamble for the template's reader).

    >>> t = ReportTemplate("<!-- part: fit -->\\nb = $b, $where.\\n<!-- part: inside -->\\n"
    ...                    "c0 inside the interval\\n")
    >>> t("fit", b="0.52", where=t("inside"))
    'b = 0.52, c0 inside the interval.'

    Raises
    ------
    ValueError
        If two parts share a name, or (on use) a part is unknown or its values do not match
        its placeholders.
    """

    def __init__(self, text: str, name: str = "report.md") -> None:
        pieces = _PART.split(text)
        self.name = name
        self.parts: dict[str, str] = {}
        for part, body in zip(pieces[1::2], pieces[2::2]):
            if part in self.parts:
                raise ValueError(f"{name}: two parts named {part!r}")
            if "\n<!-- part:" in "\n" + body:
                raise ValueError(f"{name}: a malformed part line after part {part!r}")
            self.parts[part] = body[:-1] if body.endswith("\n") else body

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ReportTemplate:
        """The template of the file ``path``."""
        return cls(Path(path).read_text(), str(path))

    def __call__(self, part: str, **values: object) -> str:
        """Part ``part`` filled with ``values`` (each written with ``str``)."""
        if part not in self.parts:
            raise ValueError(f"{self.name}: no part {part!r}; the parts are {sorted(self.parts)}")
        return fill(
            self.parts[part], {k: str(v) for k, v in values.items()}, name=f"{self.name}:{part}"
        )
