"""The kinds of the package, each under one name: models, events, polytopes, initial configurations.

The Python API (:func:`model_from_dict`, :func:`event_from_dict`), the command line
(``--model``, ``--event``, ``--polytope KIND:A:B``, ``--init KIND:A``), the sweep's TOML tables
(``[model] kind = ...``) and the studies' configs all read this one table. A kind names its
dataclass or constructor (``"module:attr"``, imported on first use, so that ``metastab --help``
loads neither numpy nor numba) and the parameters it exposes; their defaults are read from the
dataclass fields or the constructor's signature, never stated here. Adding a model is a frozen
spec in :mod:`metastab.models`, its kernel step, and one :class:`Kind` in :data:`MODELS`.

Command-line spelling: ``KIND:V1:V2`` gives the kind's positional ``fields`` in order, and any
other parameter as ``name=value`` (``regular:5:phase=0.3``); a list is comma-separated
(``repeated-points:4,4,4``); a path is the whole rest (``file:C:/x0.npy``). The older spellings
``cross:D`` and ``random:K[:equinorm]`` are accepted as aliases of ``cross-polytope:D`` and
``random-polygon:K[:equal_norm]``, and the initial kind ``clusters`` (deprecated: the name of an
event) as an alias of ``repeated-points``.

Examples
--------
>>> POLYTOPES.parse("random:6:equinorm", "polytope")
{'kind': 'random-polygon', 'k': 6, 'equal_norm': True}
>>> INITIALS.parse("shrunk:0.5", "init"), MODELS["hardmax"].defaults()["ties"]
({'kind': 'shrunk', 'factor': 0.5}, 'index')
>>> MODELS.from_dict({"kind": "softmax-chain", "beta": 2.0}).gamma
0.1
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

__all__ = [
    "Param",
    "Kind",
    "Registry",
    "MODELS",
    "EVENTS",
    "POLYTOPES",
    "INITIALS",
    "REQUIRED",
    "default_event_radius",
    "on_sphere",
    "model_from_dict",
    "event_from_dict",
    "polytope_from_dict",
]

REQUIRED = inspect.Parameter.empty  # a parameter without a default
_SIGNATURE = object()  # "read the default from the dataclass field or the signature"
TYPES = ("float", "int", "bool", "str", "path", "floats", "ints", "groups")


@dataclass(frozen=True)
class Param:
    """A parameter a kind exposes, with its TOML/command-line type (one of :data:`TYPES`).

    ``arg`` is the constructor's name for it when that differs (``seed`` is passed as ``rng``);
    ``default`` is given only where the recipe's default is not the constructor's (the sweep's
    ``groups = "cells"``: the initial cells, which the constructor cannot know; an event's
    ``radius = None``: :func:`default_event_radius`).

    Parameters
    ----------
    name : str
        The parameter's name in specs, TOML tables and ``name=value`` on the command line.
    type : str
        Its type, one of :data:`TYPES` (how TOML and command-line values are read).
    arg : str
        The constructor's name for it, when that differs (default: ``name``).
    default : object
        The recipe's default, when not the constructor's (default: read from the dataclass
        field or the signature by :attr:`Kind.parameters`).

    Examples
    --------
    >>> from metastab.registry import POLYTOPES, Param
    >>> seed = POLYTOPES["random-polygon"].parameter("seed")
    >>> seed.type, seed.target_arg, seed.default
    ('int', 'rng', None)
    >>> Param("k", "int").target_arg
    'k'
    """

    name: str
    type: str
    arg: str = ""
    default: Any = _SIGNATURE

    @property
    def target_arg(self) -> str:
        """The constructor's name for the parameter: ``arg``, else ``name``."""
        return self.arg or self.name


def _type_of(annotation: str) -> str:
    """The TOML type of a dataclass field from its annotation (a string: postponed evaluation)."""
    if "ndarray" in annotation or "Callable" in annotation:
        return "floats"  # a number, a schedule or a matrix: nested lists of floats in TOML
    base = annotation.replace(" | None", "").strip()
    if base in ("float", "int", "bool", "str"):
        return base
    raise TypeError(
        f"registry: cannot read a parameter type from the annotation {annotation!r}; "
        f"list the kind's params explicitly"
    )


@dataclass(frozen=True)
class Kind:
    """One kind: its canonical name, its dataclass or constructor and its exposed parameters.

    Parameters
    ----------
    name : str
        The one spelling used by the API's ``to_dict``, the command line and the sweep.
    target : str
        ``"module:attr"`` of the dataclass or constructor; imported on first use.
    params : tuple of Param, optional
        Default: every field of the dataclass ``target``, typed from its annotation.
    fields : tuple of str
        The positional values of the command-line spelling ``NAME:A:B``.
    aliases : tuple of str
        Other command-line spellings of ``name``.
    renamed : tuple of str
        Former names, still accepted with a DeprecationWarning.
    words : tuple of (word, param, value)
        Bare words of the command-line spelling that set a parameter (``equinorm``).
    context : tuple of str
        Constructor arguments filled from the context of a run (the polytope, the model, x0).
    random : bool
        Whether the kind draws from a random stream (``seed`` / ``rng``).
    summary : str
        One line for the command's help.
    command_line : bool
        Whether the command line offers it (a list of vertices does not fit in a flag).

    Examples
    --------
    >>> from metastab.registry import MODELS
    >>> kind = MODELS["softmax-chain"]
    >>> kind.target, kind.spelling
    ('metastab.models:SoftmaxChain', 'softmax-chain')
    >>> [(p.name, p.type) for p in kind.parameters]   # read from the dataclass fields
    [('beta', 'float'), ('gamma', 'floats'), ('B', 'floats')]
    >>> kind.defaults()["gamma"]
    0.1
    """

    name: str
    target: str
    params: tuple[Param, ...] | None = None
    fields: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    renamed: tuple[str, ...] = ()
    words: tuple[tuple[str, str, Any], ...] = ()
    context: tuple[str, ...] = ()
    random: bool = False
    summary: str = ""
    command_line: bool = True

    @property
    def spelling(self) -> str:
        """The command-line spelling, such as ``gaussian:K:D``."""
        return ":".join([self.name, *(f.upper() for f in self.fields)])

    @cached_property
    def make(self) -> Callable:
        """The dataclass or constructor (imported now)."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    @cached_property
    def parameters(self) -> tuple[Param, ...]:
        """The exposed parameters, each with its default filled in (:data:`REQUIRED` if none)."""
        if self.params is None:
            params = [Param(f.name, _type_of(str(f.type))) for f in self.dataclass_fields]
        else:
            params = list(self.params)
        signature = inspect.signature(self.make)
        out = []
        for p in params:
            if p.default is _SIGNATURE:
                arg = signature.parameters.get(p.target_arg)
                if arg is None:
                    raise TypeError(f"registry: {self.target} has no parameter {p.target_arg!r}")
                p = dataclasses.replace(p, default=arg.default)
            out.append(p)
        return tuple(out)

    def param(self, name: str) -> Param | None:
        """The exposed parameter called ``name``, or None."""
        return next((p for p in self.parameters if p.name == name), None)

    def parameter(self, name: str) -> Param:
        """The exposed parameter called ``name``, which the registry guarantees (a field, or a
        name :meth:`takes` accepted)."""
        p = self.param(name)
        if p is None:
            raise TypeError(f"registry: {self.target} exposes no parameter {name!r}")
        return p

    @property
    def dataclass_fields(self) -> tuple[dataclasses.Field, ...]:
        """The fields of the target, which must be a dataclass."""
        make = self.make
        if not dataclasses.is_dataclass(make):
            raise TypeError(f"registry: {self.target} is not a dataclass")
        return dataclasses.fields(make)

    def takes(self, name: str) -> bool:
        """Whether the kind exposes a parameter ``name`` (no import needed for listed params)."""
        if self.params is not None:
            return any(p.name == name for p in self.params)
        return self.param(name) is not None

    def defaults(self) -> dict[str, Any]:
        """Parameter name -> default (:data:`REQUIRED` where there is none)."""
        return {p.name: p.default for p in self.parameters}

    def arguments(self, spec: Mapping[str, Any], context: Mapping[str, Any] = {}) -> dict:
        """Constructor arguments of a spec: its values (defaults where missing), renamed to the
        constructor's names, with the context filling ``context`` arguments and unset seeds."""
        unknown = set(spec) - {p.name for p in self.parameters} - {"kind"}
        if unknown:
            raise ValueError(
                f"{self.name!r} takes {[p.name for p in self.parameters]}; unknown "
                f"parameter(s) {sorted(unknown)}"
            )
        args = {}
        for p in self.parameters:
            value = spec.get(p.name, p.default)
            if value is REQUIRED:
                raise ValueError(f"{self.name!r} needs {p.name!r}")
            args[p.target_arg] = value
        if self.random and args.get("rng") is None:
            args["rng"] = context.get("rng")
        for name in self.context:
            args[name] = context[name]
        return args


class Registry(Mapping):
    """The kinds of one section (``model``, ``event``, ``polytope``, ``initial``) by name.

    A read-only mapping from each kind's name (or an alias; a former name warns) to its
    :class:`Kind`, which parses command-line spellings and builds objects from spec dicts. The
    package's four are :data:`MODELS`, :data:`EVENTS`, :data:`POLYTOPES` and :data:`INITIALS`.

    Parameters
    ----------
    section : {"model", "event", "polytope", "initial"}
        The section: names the kinds in errors, and chooses how :meth:`build` builds them.
    kinds : tuple of Kind
        Its kinds.

    Examples
    --------
    >>> from metastab.registry import EVENTS, Kind, Param, Registry
    >>> sorted(EVENTS)  # doctest: +NORMALIZE_WHITESPACE
    ['clusters', 'collapse', 'leave-ball', 'leave-hull', 'leave-uniform', 'reach-uniform',
     'reach-vertices']
    >>> shapes = Registry("polytope", (Kind("square", "metastab:regular_polygon",
    ...                                     (Param("k", "int"),), fields=("k",)),))
    >>> shapes.spellings
    'square:K'
    >>> spec = shapes.parse("square:4", "polytope")
    >>> spec, shapes.build(spec).name
    ({'kind': 'square', 'k': 4}, 'regular-4')
    """

    def __init__(self, section: str, kinds: tuple[Kind, ...]):
        self.section = section
        self._kinds = {k.name: k for k in kinds}
        self._aliases = {a: k.name for k in kinds for a in (*k.aliases, *k.renamed)}
        self.renamed = frozenset(a for k in kinds for a in k.renamed)  # former names

    def __getitem__(self, name: object) -> Kind:
        kind = self._kinds.get(self._aliases.get(name, name)) if isinstance(name, str) else None
        if kind is not None and name in self.renamed:
            warnings.warn(
                f"{self.section} kind {name!r} is deprecated: use {kind.name!r}",
                DeprecationWarning,
                stacklevel=2,
            )
        if kind is None:
            raise ValueError(
                f"{self.section} kind must be one of {list(self._kinds)}, got {name!r}"
            )
        return kind

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def __contains__(self, name: object) -> bool:
        return name in self._kinds or name in self._aliases

    @property
    def spellings(self) -> str:
        """The command-line spellings, comma-separated (for help texts and errors)."""
        return ", ".join(k.spelling for k in self._kinds.values() if k.command_line)

    def parse(self, text: str, label: str) -> dict[str, Any]:
        """The spec dict of a command-line spelling ``KIND:A:B`` (see the module docstring);
        errors name ``label`` (the flag) and the text."""
        name, _, rest = text.partition(":")
        if name not in self or not self[name].command_line:
            raise ValueError(f"{label} must be one of {self.spellings}, got {text!r}")
        kind = self[name]
        named: dict[str, Any] = {}
        path = bool(kind.fields) and kind.parameter(kind.fields[-1]).type == "path"
        pieces = [rest] if path and rest else rest.split(":") if rest else []
        words = {w: (p, v) for w, p, v in kind.words}
        positional = []
        for piece in pieces:
            if piece in words:
                named[words[piece][0]] = words[piece][1]
            elif "=" in piece and not path:
                key, _, value = piece.partition("=")
                param = kind.param(key)
                if param is None:
                    raise ValueError(
                        f"{label}: {kind.name} takes "
                        f"{[p.name for p in kind.parameters]}, got {key!r} in "
                        f"{text!r}"
                    )
                named[key] = _from_text(label, param, value, text)
            else:
                positional.append(piece)
        if len(positional) != len(kind.fields):
            raise ValueError(f"{label} must be one of {self.spellings}, got {text!r}")
        spec: dict[str, Any] = {"kind": kind.name}
        for field_name, value in zip(kind.fields, positional):
            spec[field_name] = _from_text(label, kind.parameter(field_name), value, text)
        return {**spec, **named}

    def from_dict(self, data: Mapping[str, Any]) -> Any:
        """Rebuild an object from its ``to_dict`` output (callable schedules cannot be rebuilt)."""
        data = dict(data)
        kind = self[data.pop("kind", None)]
        for name, value in data.items():
            if isinstance(value, str) and value.startswith("callable:"):
                raise ValueError(f"{name} {value!r} was a callable and cannot be rebuilt")
        names = [f.name for f in kind.dataclass_fields]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(
                f"kind {kind.name!r} takes the parameters {names}, got unknown {unknown}"
            )
        try:
            return kind.make(**data)
        except TypeError as exc:  # a required parameter is missing
            raise ValueError(f"kind {kind.name!r} takes the parameters {names}: {exc}") from None

    def build(self, spec: Mapping[str, Any], **context: Any) -> Any:
        """The object of a spec dict (``kind`` and parameters), with the run's context: ``rng``
        for an unset seed, ``polytope``, ``model`` and ``x0`` where the kind needs them."""
        return _BUILDERS[self.section](self[spec.get("kind")], spec, context)


def _from_text(label: str, param: Param, text: str, whole: str) -> Any:
    """A command-line value of ``param``'s type."""
    try:
        if param.type == "int":
            return int(text)
        if param.type == "float":
            return float(text)
        if param.type == "ints":
            return [int(v) for v in text.split(",")]
        if param.type == "floats":
            return [float(v) for v in text.split(",")]
    except ValueError:
        what = {
            "int": "an integer",
            "float": "a number",
            "ints": "comma-separated integers",
            "floats": "comma-separated numbers",
        }[param.type]
        raise ValueError(
            f"{label}: {param.name} must be {what}, got {text!r} in {whole!r}"
        ) from None
    if param.type == "bool":
        if text.lower() not in ("true", "false"):
            raise ValueError(
                f"{label}: {param.name} must be true or false, got {text!r} in {whole!r}"
            )
        return text.lower() == "true"
    return text


# --------------------------------------------------------------------------- builders


def _build_model(kind: Kind, spec: Mapping, context: Mapping) -> Any:
    return MODELS.from_dict(spec)


def _build_polytope(kind: Kind, spec: Mapping, context: Mapping) -> Any:
    try:
        return kind.make(**kind.arguments(spec, {**context, "name": kind.name}))
    except RuntimeError as exc:  # a rejection sampler gave up: a bad parameter, not a bug
        raise ValueError(str(exc)) from None


def _build_initial(kind: Kind, spec: Mapping, context: Mapping) -> Any:
    polytope, model = context.get("polytope"), context.get("model")
    if polytope is None and {"polytope", "points"} & set(kind.context):
        raise ValueError(f"initial kind {kind.name!r} needs a polytope")
    shape = (None, None) if polytope is None else (polytope.vertices, polytope.dim)
    args = kind.arguments(spec, {**context, "points": shape[0], "dim": shape[1]})
    # a per-chain kind (sphere configurations) draws one start per chain of the run
    for name in ("chains", "first_chain"):
        if name in inspect.signature(kind.make).parameters and context.get(name) is not None:
            args[name] = context[name]
    if "beta" in args and args["beta"] is None:  # near-vertices follows the model's beta
        beta = getattr(model, "beta", math.inf)
        if not math.isfinite(beta):
            raise ValueError("near-vertices needs a finite beta: set [initial] beta for this model")
        args["beta"] = beta
    if "gamma" in inspect.signature(kind.make).parameters and model is not None:
        args["gamma"] = model.gamma if isinstance(model.gamma, float) else None
    return kind.make(**args)


def _build_event(kind: Kind, spec: Mapping, context: Mapping) -> Any:
    polytope = context["polytope"]
    vertices = None if polytope is None else polytope.vertices
    args = kind.arguments(spec, {**context, "vertices": vertices})
    if kind.name in RADIUS_DEFAULTED and args["radius"] is None:
        args["radius"] = default_event_radius(kind.name, context["model"], polytope)
    if isinstance(args.get("groups"), str):
        if args["groups"] != "cells":
            raise ValueError(f"groups must be 'cells' or a list of labels, got {args['groups']!r}")
        args["groups"] = _cells(polytope, context["model"], context["x0"])
    return kind.make(**args)


# the events whose radius defaults to default_event_radius
RADIUS_DEFAULTED = ("leave-ball", "leave-hull")


def default_event_radius(event: str, model: Any, polytope: Any) -> float:
    """The default radius ε of a leave-hull or leave-ball event: 2·gamma·diam(K).

    The smallest radius for which [FW] Thm 5.4 bounds the exit time (it asks ε/γ >= 2 d(K)).
    The one definition of the command line and the sweep.

    Parameters
    ----------
    event : str
        The event's kind ("leave-hull" or "leave-ball"), for the message.
    model : model
        The run's model: its ``gamma`` must be a scalar.
    polytope : Polytope or None
        The run's polytope K (its ``diameter``).

    Returns
    -------
    radius : float
        2 γ diam(K).

    Raises
    ------
    ValueError
        Without a polytope, or when the model has no scalar gamma.

    Examples
    --------
    >>> from metastab import SoftmaxChain, regular_polygon
    >>> from metastab.registry import default_event_radius
    >>> round(default_event_radius("leave-hull", SoftmaxChain(2.0, 0.1), regular_polygon(4)), 6)
    0.4
    """
    gamma = getattr(model, "gamma", None)
    if polytope is None:
        raise ValueError(
            f"radius: {event} needs a radius here (its default, 2·gamma·diam(K), needs a polytope)"
        )
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)):
        raise ValueError(
            f"radius: {event} needs a radius here (its default, 2·gamma·diam(K), needs a scalar "
            f"gamma, got {gamma!r})"
        )
    return 2 * float(gamma) * polytope.diameter


def _cells(polytope: Any, model: Any, x0: Any) -> Any:
    """The initial cell of every token (one labelling shared by every chain of a chains×n×d x0)."""
    import numpy as np

    cells = polytope.assign(x0, model.key_query(x0.shape[-1]))
    if cells.ndim == 2:
        if not (cells == cells[0]).all():
            raise ValueError("leave-hull needs the same initial cells in every chain of x0")
        cells = cells[0]
    return np.asarray(cells, dtype=np.int64)


_BUILDERS = {
    "model": _build_model,
    "polytope": _build_polytope,
    "initial": _build_initial,
    "event": _build_event,
}

# --------------------------------------------------------------------------- the kinds

MODELS = Registry(
    "model",
    (
        Kind(
            "softmax-chain",
            "metastab.models:SoftmaxChain",
            summary="SA_P, the finite-beta Markov chain",
        ),
        Kind(
            "softmax-flow",
            "metastab.models:SoftmaxFlow",
            summary="SA_beta, the deterministic softmax layer",
        ),
        Kind("hardmax", "metastab.models:Hardmax", summary="SA_inf, the hardmax step"),
        Kind(
            "localmax",
            "metastab.models:Localmax",
            summary="uniform attention over a relaxed argmax",
        ),
        Kind(
            "sphere-flow",
            "metastab.models.sphere:SphereFlow",
            summary="attention dynamics on the unit sphere, (SA)/(USA) by post-LN layers, RK4 or "
            "the other normalisation schemes",
        ),
        Kind(
            "sphere-chain",
            "metastab.models.sphere:SphereChain",
            summary="the finite-beta chain on the unit sphere (LayerNorm after each move)",
        ),
        Kind(
            "noisy-sphere",
            "metastab.models.sphere:NoisySphere",
            summary="the noisy (USA) transformer on the unit sphere: drift 2K P(Attn) plus "
            "Brownian motion (projected Euler-Maruyama)",
        ),
    ),
)

EVENTS = Registry(
    "event",
    (
        Kind(
            "leave-ball",
            "metastab.events:LeaveBall",
            (Param("radius", "float", default=None),),
            summary="some token leaves the ball of radius EPS around its start",
        ),
        Kind(
            "leave-hull",
            "metastab.events:LeaveHull",
            (Param("radius", "float", default=None), Param("groups", "groups", default="cells")),
            summary="some token leaves the hull of its initial cell's tokens + B(0, EPS): T2 of "
            "Thm 5.4",
        ),
        Kind(
            "reach-vertices",
            "metastab.events:ReachVertices",
            (Param("radius", "float"), Param("vertex_radius", "float")),
            context=("vertices",),
            summary="every token within EPS of its cell's vertex: Thm 5.2",
        ),
        Kind(
            "collapse",
            "metastab.events:Collapse",
            (Param("diameter", "float"),),
            summary="the diameter of the configuration is at most --diameter",
        ),
        Kind(
            "clusters",
            "metastab.events:Clusters",
            (Param("at_most", "int"), Param("delta", "float")),
            summary="at most --at-most clusters (components of cos(x_i, x_j) >= 1 - --delta)",
        ),
        Kind(
            "leave-uniform",
            "metastab.events:LeaveUniform",
            (Param("level", "float"), Param("degree", "int")),
            summary="sphere models: the order parameter m_--degree (1 or 2) is at least --level",
        ),
        Kind(
            "reach-uniform",
            "metastab.events:ReachUniform",
            (Param("level", "float"), Param("degree", "int")),
            summary="sphere models: the order parameter m_--degree (1 or 2) is at most --level",
        ),
    ),
)

POLYTOPES = Registry(
    "polytope",
    (
        Kind(
            "regular",
            "metastab.setups.polytopes:regular_polygon",
            (Param("k", "int"), Param("radius", "float"), Param("phase", "float")),
            fields=("k",),
            summary="regular K-gon on the circle of radius 1",
        ),
        Kind(
            "random-polygon",
            "metastab.setups.polytopes:random_polygon",
            (Param("k", "int"), Param("equal_norm", "bool"), Param("seed", "int", arg="rng")),
            fields=("k",),
            aliases=("random",),
            random=True,
            words=(("equal_norm", "equal_norm", True), ("equinorm", "equal_norm", True)),
            summary="random polygon of [FW]'s scripts (equal_norm: on the unit circle)",
        ),
        Kind(
            "simplex",
            "metastab.setups.polytopes:simplex",
            (Param("d", "int"),),
            fields=("d",),
            summary="regular simplex in R^D",
        ),
        Kind(
            "cross-polytope",
            "metastab.setups.polytopes:cross_polytope",
            (Param("d", "int"),),
            fields=("d",),
            aliases=("cross",),
            summary="cross-polytope ±e_i in R^D",
        ),
        Kind(
            "gaussian",
            "metastab.setups.polytopes:gaussian",
            (Param("k", "int"), Param("d", "int"), Param("seed", "int", arg="rng")),
            fields=("k", "d"),
            random=True,
            summary="K standard Gaussian points in R^D / sqrt(D)",
        ),
        Kind(
            "vertices",
            "metastab.setups.polytopes:Polytope",
            (Param("vertices", "floats"),),
            context=("name",),
            summary="the given vertices",
            command_line=False,
        ),
    ),
)

INITIALS = Registry(
    "initial",
    (
        Kind(
            "shrunk",
            "metastab.setups.initial:shrunk",
            (Param("n", "int"), Param("factor", "float")),
            fields=("factor",),
            context=("polytope",),
            summary="vertex tokens at v_a, token i >= K at FACTOR·v_((i-K) mod K)",
        ),
        Kind(
            "near-vertices",
            "metastab.setups.initial:near_vertices",
            (
                Param("n", "int"),
                Param("beta", "float", default=None),
                Param("max_tries", "int"),
                Param("seed", "int", arg="rng"),
            ),
            context=("polytope",),
            random=True,
            summary="Thm 5.2: eroded dominance cones at beta",
        ),
        Kind(
            "in-cells",
            "metastab.setups.initial:in_cells",
            (Param("n", "int"), Param("seed", "int", arg="rng")),
            context=("polytope",),
            random=True,
            summary="vertices + uniform points of K",
        ),
        Kind(
            "uniform",
            "metastab.setups.initial:uniform_in",
            (Param("n", "int"), Param("seed", "int", arg="rng")),
            context=("polytope",),
            random=True,
            summary="uniform points of K",
        ),
        Kind(
            "repeated-points",
            "metastab.setups.initial:repeated_points",
            (Param("multiplicities", "ints"),),
            fields=("multiplicities",),
            context=("points",),
            renamed=("clusters",),
            summary="vertex a repeated m_a times (comma-separated m_a)",
        ),
        Kind(
            "sphere-uniform",
            "metastab.setups.sphere:sphere_uniform",
            (Param("n", "int"), Param("d", "int"), Param("seed", "int", arg="rng")),
            fields=("d",),
            random=True,
            summary="i.i.d. uniform on the sphere S^(D-1), drawn per chain",
        ),
        Kind(
            "orthogonal",
            "metastab.setups.sphere:orthogonal",
            (
                Param("n", "int"),
                Param("d", "int"),
                Param("rotate", "bool"),
                Param("seed", "int", arg="rng"),
            ),
            fields=("d",),
            random=True,
            words=(("rotate", "rotate", True),),
            summary="e_1..e_n in R^D (rotate: a random orthonormal frame per chain), D >= n",
        ),
        Kind(
            "caps",
            "metastab.setups.sphere:caps",
            (
                Param("centres", "floats"),
                Param("sizes", "ints"),
                Param("angle", "float"),
                Param("seed", "int", arg="rng"),
            ),
            random=True,
            summary="sizes[a] points uniform in the cap of ANGLE around centres[a], per chain",
            command_line=False,
        ),
        Kind(
            "file",
            "metastab.setups.initial:from_file",
            (Param("path", "path"),),
            fields=("path",),
            context=("dim",),
            summary="an n×d .npy/.csv/.txt array, or chains×n×d .npy",
        ),
    ),
)


def on_sphere(model_kind: str) -> bool:
    """Whether the model kind moves tokens on the unit sphere, and so takes no polytope.

    Parameters
    ----------
    model_kind : str
        A name (or alias) of :data:`MODELS`.

    Returns
    -------
    on_sphere : bool
        True for the sphere models (:mod:`metastab.models.sphere`).

    Examples
    --------
    >>> from metastab.registry import on_sphere
    >>> on_sphere("sphere-flow"), on_sphere("softmax-chain")
    (True, False)
    """
    return MODELS[model_kind].target.startswith("metastab.models.sphere:")


def model_from_dict(data: Mapping[str, Any]) -> Any:
    """Rebuild a model from its ``to_dict`` output (callable schedules cannot be rebuilt).

    Parameters
    ----------
    data : mapping
        ``kind`` (a name of :data:`MODELS`) and the model's parameters, as ``to_dict`` writes
        them (a saved result's ``model``).

    Returns
    -------
    model : SoftmaxChain, SoftmaxFlow, Hardmax, Localmax, SphereFlow, SphereChain or NoisySphere
        The model, validated as by its constructor.

    Raises
    ------
    ValueError
        For an unknown kind or parameter, or a callable schedule (saved as its name only).

    Examples
    --------
    >>> import metastab as ms
    >>> from metastab.registry import model_from_dict
    >>> data = ms.SoftmaxChain(beta=2.0, gamma=0.5).to_dict()
    >>> data
    {'kind': 'softmax-chain', 'beta': 2.0, 'gamma': 0.5, 'B': None}
    >>> model_from_dict(data)
    SoftmaxChain(beta=2.0, gamma=0.5)
    """
    return MODELS.from_dict(data)


def event_from_dict(data: Mapping[str, Any]) -> Any:
    """Rebuild an event from its ``to_dict`` output.

    Parameters
    ----------
    data : mapping
        ``kind`` (a name of :data:`EVENTS`) and the event's parameters, as ``to_dict`` writes
        them (a saved result's ``event``).

    Returns
    -------
    event : LeaveBall, LeaveHull, ReachVertices, Collapse or Clusters
        The event, validated as by its constructor.

    Raises
    ------
    ValueError
        For an unknown kind or parameter.

    Examples
    --------
    >>> import metastab as ms
    >>> from metastab.registry import event_from_dict
    >>> event_from_dict(ms.LeaveHull(groups=[0, 0, 1], radius=0.3).to_dict())
    LeaveHull(groups=array([0, 0, 1]), radius=0.3)
    """
    return EVENTS.from_dict(data)


def polytope_from_dict(spec: Mapping[str, Any], rng: Any = None) -> Any:
    """The polytope of a spec dict of :data:`POLYTOPES`, such as a study config's polytope entry
    (``{kind = "regular", k = 5}``, ``{kind = "random-polygon", k = 6, seed = 3}``; the old
    spelling ``"random"`` is an alias).

    Parameters
    ----------
    spec : mapping
        ``kind`` (a name of :data:`POLYTOPES`) and its parameters.
    rng : None, int, SeedSequence or Generator
        The stream of a random kind whose ``seed`` is unset.

    Returns
    -------
    polytope : Polytope
        The polytope (:class:`~metastab.setups.polytopes.Polytope`).

    Raises
    ------
    ValueError
        If the kind is not a polytope kind, or a parameter is missing, unknown or bad.

    Examples
    --------
    >>> from metastab.registry import polytope_from_dict
    >>> polytope_from_dict({"kind": "random", "k": 5, "seed": 2}).name
    'random-5'
    """
    return POLYTOPES.build(spec, rng=rng)
