"""The system of ``simulate`` and ``passage`` from its flags: polytope, initial configuration,
model(s) and event, each built through :mod:`metastab.registry`.

The kinds, their command-line spellings (``--polytope gaussian:K:D``,
``--init repeated-points:M,M,...``) and the parameters each takes are the registry's; the flags'
own defaults (``--gamma 0.1`` for every model, ``--beta 10``, ``--n 20``) are the command's,
stated here once.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..registry import EVENTS, INITIALS, MODELS, POLYTOPES, RADIUS_DEFAULTED, REQUIRED, Registry
from ..registry import on_sphere as registry_on_sphere
from .exits import UsageError, one_line
from .parser import whole

__all__ = [
    "add_arguments",
    "add_event_arguments",
    "complete",
    "on_sphere",
    "polytope",
    "models",
    "initial",
    "event",
]

DEFAULT_POLYTOPE = "regular:5"
DEFAULT_INIT = "shrunk:0.5"
DEFAULT_MODEL = "softmax-chain"
DEFAULT_BETA = 10.0
DEFAULT_GAMMA = 0.1
DEFAULT_DT = 0.1
DEFAULT_N = 20
DEFAULT_EVENT = "leave-hull"
# the models on the unit sphere: no polytope; these defaults instead
DEFAULT_SPHERE_INIT = "sphere-uniform:2"
DEFAULT_SPHERE_EVENT = "leave-ball"
# model flags taking several values: one run per value
SEVERAL = ("beta", "r")
# flags of one model kind's own parameters (no default here: the dataclass's)
MODEL_FLAGS = (
    "ties", "r", "neighbours", "dt", "attention", "scheme", "alpha", "tau", "causal",
    "strict_causal", "alibi", "positional_norm", "rescale", "K",
)  # fmt: skip
# SphereFlow's schemes (metastab.models.sphere.SCHEMES: not imported, so that parsing the command
# line loads no model; a test checks that the two agree)
SPHERE_SCHEMES = ("post-ln", "rk4", "pre-ln", "mix-ln", "peri-ln", "ngpt", "ln-scaling")
# event parameter -> flag (--radius is the polytope's scale)
EVENT_FLAGS = {
    "radius": "event-radius",
    "vertex_radius": "vertex-radius",
    "diameter": "diameter",
    "at_most": "at-most",
    "delta": "delta",
    "level": "level",
    "degree": "degree",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``system`` and ``dynamics`` flags of ``simulate`` and ``passage``."""
    g = p.add_argument_group("system")
    g.add_argument(
        "--polytope",
        metavar="SPEC",
        help=f"{POLYTOPES.spellings}; other parameters as name=value, e.g. "
        f"regular:5:phase=0.3 (aliases: cross:D, random:K[:equinorm]; default "
        f"{DEFAULT_POLYTOPE}; none for the sphere models)",
    )
    g.add_argument(
        "--radius",
        type=float,
        default=1.0,
        help="scale of the vertices: the circumradius of regular:K (default 1)",
    )
    g.add_argument(
        "--n",
        type=whole,
        default=None,
        help=f"number of tokens (default {DEFAULT_N}; "
        f"with --init file:PATH or repeated-points, theirs)",
    )
    g.add_argument(
        "--init",
        metavar="SPEC",
        help="initial tokens: "
        + "; ".join(
            f"{INITIALS[k].spelling} = {INITIALS[k].summary}"
            for k in INITIALS
            if INITIALS[k].command_line
        )
        + f" (default {DEFAULT_INIT}; {DEFAULT_SPHERE_INIT} for the sphere models)",
    )
    g = p.add_argument_group("dynamics")
    g.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        choices=list(MODELS),
        help="; ".join(f"{k}: {MODELS[k].summary}" for k in MODELS) + f" (default {DEFAULT_MODEL})",
    )
    g.add_argument(
        "--beta",
        type=float,
        nargs="+",
        metavar="BETA",
        help=f"inverse temperature(s); several values run one after another "
        f"(default {DEFAULT_BETA:g})",
    )
    g.add_argument(
        "--gamma",
        type=float,
        default=DEFAULT_GAMMA,
        help=f"step size in (0, 1] (default {DEFAULT_GAMMA:g})",
    )
    g.add_argument(
        "--ties", choices=("index", "point"), help="hardmax tie mode (default: metastab.Hardmax's)"
    )
    g.add_argument(
        "--r",
        type=float,
        nargs="+",
        metavar="R",
        help="localmax neighbour margin(s) r >= 0; several values run one after "
        "another (no default: --model localmax needs it)",
    )
    g.add_argument(
        "--neighbours",
        choices=("additive", "relative"),
        help="localmax neighbour rule (default: metastab.Localmax's)",
    )
    g.add_argument(
        "--dt",
        type=float,
        help=f"sphere-flow: the step of a post-LN layer or of RK4; noisy-sphere: the time step "
        f"(default {DEFAULT_DT:g})",
    )
    g.add_argument(
        "--attention",
        choices=("softmax", "unnormalized"),
        help="sphere-flow, noisy-sphere: softmax weights (SA) or e^(beta s)/n (USA) (default "
        "softmax; noisy-sphere: unnormalized)",
    )
    g.add_argument(
        "--K",
        type=float,
        help="noisy-sphere: the coupling K >= 0, the inverse noise level (no default: "
        "--model noisy-sphere needs it)",
    )
    g.add_argument(
        "--scheme",
        choices=SPHERE_SCHEMES,
        help="sphere-flow: post-LN layers x <- N(x + dt Attn(x)), RK4, pre-LN "
        "x <- x + dt Attn(N(x)), or the normalisation schemes peri-LN, nGPT (--alpha), Mix-LN "
        "(--tau), LN-scaling (the model definitions of the documentation) (default post-ln)",
    )
    g.add_argument("--alpha", type=float, help="sphere-flow, --scheme ngpt: nGPT's alpha")
    g.add_argument(
        "--tau", type=float, help="sphere-flow, --scheme mix-ln: the time of the switch to pre-LN"
    )
    g.add_argument(
        "--causal",
        action="store_const",
        const=True,
        help="sphere-flow: token i attends to tokens j <= i only",
    )
    g.add_argument(
        "--strict-causal",
        action="store_const",
        const=True,
        help="sphere-flow, with --causal: token i attends to tokens j < i only",
    )
    g.add_argument(
        "--alibi",
        type=float,
        metavar="LAMBDA",
        help="sphere-flow: ALiBi weights e^(-(LAMBDA/n)|i - j|) on the attention",
    )
    g.add_argument(
        "--positional-norm",
        action="store_const",
        const=True,
        help="sphere-flow, --attention unnormalized: Z_i = the sum of the positional weights "
        "attended to, not n",
    )
    g.add_argument(
        "--rescale",
        action="store_const",
        const=True,
        help="sphere-flow, --attention unnormalized: the field times e^(-beta) (any beta runs)",
    )


def add_event_arguments(p: argparse.ArgumentParser) -> None:
    """The event flags of ``passage``."""
    p.add_argument(
        "--event",
        metavar="EVENT",
        help=f"{', '.join(EVENTS)} (default {DEFAULT_EVENT}: groups = initial cells; "
        f"{DEFAULT_SPHERE_EVENT} for the sphere models)",
    )
    p.add_argument(
        "--event-radius",
        type=float,
        metavar="EPS",
        help="radius of leave-hull / leave-ball / reach-vertices (default for "
        "leave-hull and leave-ball: 2·gamma·diam(K), the smallest of Thm 5.4)",
    )
    p.add_argument(
        "--vertex-radius",
        type=float,
        help="reach-vertices radius for the vertex tokens (default --event-radius)",
    )
    p.add_argument("--diameter", type=float, help="collapse: target diameter")
    p.add_argument("--at-most", type=int, metavar="K", help="clusters: stop at K clusters or fewer")
    p.add_argument(
        "--delta",
        type=float,
        help="clusters: a pair is clustered when its cosine is >= 1 - DELTA (default 1e-3)",
    )
    p.add_argument(
        "--level",
        type=float,
        help="leave-uniform / reach-uniform: the level in (0, 1] of the order parameter",
    )
    p.add_argument(
        "--degree",
        type=int,
        help="leave-uniform / reach-uniform: 1 (the magnetisation m_1, default) or 2 (m_2)",
    )


def _build(label: str, registry: Registry, spec: dict, **context: Any) -> Any:
    """``registry.build``, its errors prefixed with the flag they come from."""
    try:
        return registry.build(spec, **context)
    except (ValueError, OSError) as exc:
        raise UsageError(f"{label}: {one_line(exc)}") from None


def _parse(label: str, registry: Registry, text: str) -> dict:
    try:
        return registry.parse(text, label)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def on_sphere(args: argparse.Namespace) -> bool:
    """Whether ``--model`` is one of the models on the unit sphere (no polytope)."""
    return registry_on_sphere(args.model)


def complete(args: argparse.Namespace) -> None:
    """Fill the defaults of ``--polytope``, ``--init`` and ``--event`` that depend on the model."""
    sphere = on_sphere(args)
    if sphere and args.polytope is not None:
        raise UsageError(
            f"polytope: --model {args.model} moves tokens on the unit sphere and takes no "
            f"polytope, got --polytope {args.polytope}"
        )
    if not sphere and args.polytope is None:
        args.polytope = DEFAULT_POLYTOPE
    if args.init is None:
        args.init = DEFAULT_SPHERE_INIT if sphere else DEFAULT_INIT
    if getattr(args, "event", "") is None:
        args.event = DEFAULT_SPHERE_EVENT if sphere else DEFAULT_EVENT


def polytope(args: argparse.Namespace, rng: Any) -> Any:
    """The polytope of ``--polytope``, its vertices scaled by ``--radius`` (None for the sphere
    models; call :func:`complete` first)."""
    from ..setups.polytopes import Polytope

    if args.polytope is None:
        return None
    radius = args.radius
    if not (math.isfinite(radius) and radius > 0):
        raise UsageError(f"radius must be finite and > 0, got {radius!r}")
    P = _build("polytope", POLYTOPES, _parse("polytope", POLYTOPES, args.polytope), rng=rng)
    return P if radius == 1.0 else Polytope(radius * P.vertices, name=P.name)


def models(args: argparse.Namespace) -> list:
    """One model per value of ``--beta`` (or of ``--r``, for a model taking r); hardmax, which
    takes neither, is one model."""
    kind = MODELS[args.model]
    if not kind.takes("gamma") and args.gamma != DEFAULT_GAMMA:
        raise UsageError(
            f"gamma: --model {kind.name} has no gamma (its step is --dt), "
            f"got --gamma {args.gamma:g}"
        )
    for flag in MODEL_FLAGS:
        value = getattr(args, flag)
        if value is not None and not kind.takes(flag):
            owners = " or ".join(k for k in MODELS if MODELS[k].takes(flag))
            shown = " ".join(map(str, value)) if isinstance(value, list) else value
            raise UsageError(
                f"{flag}: --{flag} applies to --model {owners} only, got --{flag} {shown}"
            )
    if (
        not kind.takes("beta")
        and args.beta is not None
        and (len(args.beta) > 1 or args.init != "near-vertices")
    ):
        raise UsageError(
            f"beta: --model {args.model} has no temperature; --beta is only the "
            f"cone size of --init near-vertices (one value), got {args.beta}"
        )
    spec: dict[str, Any] = {"kind": kind.name}
    if kind.takes("gamma"):
        spec["gamma"] = args.gamma
    if kind.takes("dt"):
        spec["dt"] = DEFAULT_DT if args.dt is None else args.dt
    spec.update(
        {
            k: getattr(args, k)
            for k in MODEL_FLAGS
            if k not in SEVERAL and k != "dt" and getattr(args, k) is not None
        }
    )
    several = [k for k in SEVERAL if kind.takes(k)]
    if not several:
        return [MODELS.build(spec)]
    name = several[0]
    values = getattr(args, name)
    if values is None:
        if kind.parameter(name).default is REQUIRED and name != "beta":
            raise UsageError(
                f"{name}: --model {kind.name} needs --{name} {name.upper()} [{name.upper()} ...]"
            )
        values = [DEFAULT_BETA]
    return [MODELS.build({**spec, name: v}) for v in values]


def initial(args: argparse.Namespace, polytope: Any, model: Any, rng: Any) -> Any:
    """The initial configuration of ``--init`` for ``model`` (near-vertices: at its beta, or
    at ``--beta`` for a model without one)."""
    spec = _parse("init", INITIALS, args.init)
    kind = INITIALS[spec["kind"]]
    if kind.takes("n"):
        spec.setdefault("n", DEFAULT_N if args.n is None else args.n)
    elif args.n is not None:
        raise UsageError(f"n: --n cannot be combined with --init {args.init} (it fixes n)")
    if (
        kind.takes("beta")
        and "beta" not in spec
        and not math.isfinite(getattr(model, "beta", math.inf))
    ):
        if not args.beta:
            raise UsageError(f"beta: --init {kind.name} needs a --beta (it sets the cone size)")
        spec["beta"] = args.beta[0]
    try:
        return _build(
            "init",
            INITIALS,
            spec,
            polytope=polytope,
            model=model,
            rng=rng,
            chains=args.chains,
            first_chain=args.first_chain,
        )
    except UsageError as exc:
        if "the polytope is in R^" not in str(exc):
            raise
        sets_d = ", ".join(POLYTOPES[k].spelling for k in POLYTOPES if "d" in POLYTOPES[k].fields)
        raise UsageError(f"{exc}: --polytope sets d ({sets_d})") from None


def event(args: argparse.Namespace, polytope: Any, model: Any, x0: Any) -> Any:
    """The stopping event of ``passage``: ``--event`` with its flags; the radius of leave-hull
    and leave-ball defaults to 2·gamma·diam(K), the smallest of [FW] Thm 5.4 (ε/γ >= 2 d(K)):
    :func:`metastab.registry.default_event_radius`, as in a sweep."""
    try:
        kind = EVENTS[args.event]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    spec = {"kind": kind.name}
    for param, flag in EVENT_FLAGS.items():
        value = getattr(args, param if param != "radius" else "event_radius")
        if value is None:
            continue
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"{flag} must be finite and > 0, got {value!r}")
        if not kind.takes(param):
            raise UsageError(f"{flag}: --{flag} does not apply to --event {kind.name}")
        spec[param] = value
    if polytope is None and kind.name in ("reach-vertices", "leave-hull"):
        raise UsageError(
            f"event: --event {kind.name} needs the cells of a polytope; --model "
            f"{args.model} has none (tokens on the unit sphere)"
        )
    if kind.name in RADIUS_DEFAULTED and "radius" not in spec and polytope is None:
        raise UsageError(f"event-radius: --event {kind.name} needs --event-radius here")

    for p in kind.parameters:
        if p.default is REQUIRED and p.name not in spec:
            flag = EVENT_FLAGS[p.name]
            raise UsageError(f"{flag}: --event {kind.name} needs --{flag}")
    return _build("event", EVENTS, spec, polytope=polytope, model=model, x0=x0)
