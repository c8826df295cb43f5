"""Validated inputs and the chains' state: initial configurations, the model, memory, streams."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import numpy as np

from .._validate import integer
from ..models.euclidean import EUCLIDEAN_MODELS
from ..models.sphere import (
    SPHERE_MODELS,
    SPHERE_TOL,
    NoisySphere,
    SphereFlow,
    _SphereModel,
    check_on_sphere,
    check_step,
)
from ..rng import Seed, as_seed
from .backends import resolve

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..models.euclidean import _Model
    from ..rng import SeedLike
    from .backends import Backend

__all__ = ["EventSpec", "Model", "check_event", "check_model", "prepare", "run_bytes", "start"]

# The dynamics the engine runs (:data:`MODEL_TYPES`): those of metastab.models (euclidean and
# sphere).
Model: TypeAlias = "_Model | _SphereModel"

# The spec classes the engine runs, each family's as its models module lists them (the
# registry's MODELS is the table of model kinds by name).
MODEL_TYPES = (*EUCLIDEAN_MODELS, *SPHERE_MODELS)
# Largest |score| bound accepted at time 0 (beta * score differences must stay finite).
_SCORE_LIMIT = 1e307


def _initial(x0: ArrayLike, chains: int | None) -> tuple[np.ndarray, int]:
    """x0 as a (1 or C, n, d) float64 array (the caller's own array when it is one: the chains
    run on a copy), and the number of chains."""
    try:
        x = np.asarray(x0, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("x0 must be a numeric n×d or chains×n×d array") from None
    if x.ndim not in (2, 3) or 0 in x.shape:
        raise ValueError(f"x0 must be an n×d or chains×n×d array, got shape {x.shape}")
    if not _all_finite(x):
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
        raise ValueError(f"x0 must be finite, got x0{list(where)} = {x[where]!r}")
    if x.ndim == 2:
        return x[None], 1 if chains is None else integer("chains", chains, 1)
    if chains is not None and integer("chains", chains, 1) != x.shape[0]:
        raise ValueError(f"chains={chains} but x0 holds {x.shape[0]} configurations")
    return x, x.shape[0]


def _all_finite(x: np.ndarray) -> bool:
    """Whether every entry of x is finite: a finite sum says so in one pass without a mask (a
    NaN or an infinity makes the sum NaN or infinite); only a sum that is not finite, which
    finite entries may also give by overflowing, takes the entries one by one."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.sum(x)) or np.isfinite(x).all())


def check_model(model: object) -> None:
    """TypeError unless ``model`` is one of the dynamics of :mod:`metastab.models`."""
    if not isinstance(model, MODEL_TYPES):
        raise TypeError(f"model must be one of {[m.__name__ for m in MODEL_TYPES]}, got {model!r}")


class EventSpec(Protocol):
    """What the engine needs of a stopping event (:mod:`metastab.events`): its kernel arrays for
    a start and a score matrix, and its description."""

    def compile(self, x0: np.ndarray, B: np.ndarray) -> Any: ...

    def to_dict(self) -> dict: ...


def check_event(event: object, model: object = None) -> None:
    """TypeError unless ``event`` is a stopping event of :mod:`metastab.events`; ValueError if
    it does not apply to ``model`` (the sphere order parameters to an R^d model)."""
    if not hasattr(event, "compile"):
        raise TypeError(
            f"event must be a LeaveBall, LeaveHull, ReachVertices, Collapse, Clusters, "
            f"LeaveUniform or ReachUniform, got {event!r}"
        )
    if model is not None and hasattr(event, "check_model"):
        check_model(model)  # a model first, then one the event applies to
        event.check_model(model)


def _score_bound(x: np.ndarray, B: np.ndarray) -> float:
    """A bound on the scores |<B x_i, x_j>| of the configurations x (chains×n×d). Every later
    state stays in the hull of x0 (scalar steps), so the bound at time 0 holds throughout."""
    size = max(float(x.max()), -float(x.min()))  # max |x| without a temporary of x's size
    with np.errstate(over="ignore"):
        return float(size * size * np.abs(B).sum(axis=1).max() * x.shape[2])


def _sphere_score_bound(Bs: np.ndarray) -> float:
    """A bound on the scores of the sphere models, which score unit vectors (x0 passed
    :func:`check_on_sphere`): |<B x_i, x_j>| <= |B|_F, the largest over the heads Bs (H×d×d),
    with no pass over the configurations."""
    frobenius = np.hypot.reduce(Bs.reshape(Bs.shape[0], -1), axis=1)  # no overflow
    return float(frobenius.max()) * (1.0 + SPHERE_TOL) ** 2


def _check_scores(bound: float) -> None:
    """Refuse configurations whose scores could overflow (``bound``: a bound on them): softmax
    would then see inf - inf and the step would be silently wrong."""
    if not bound < _SCORE_LIMIT:
        raise ValueError(
            f"x0 and B give scores up to ~{bound:.3g}, beyond the {_SCORE_LIMIT:.0e} "
            f"that float64 softmax handles; rescale x0 or B"
        )


def prepare(
    model: Model, x0: ArrayLike, chains: int | None, first_chain: int, stacklevel: int = 3
) -> tuple[np.ndarray, int, int]:
    """Validated (x, C, first_chain): nothing of the size of the run is allocated yet. A warning
    of the model's step points ``stacklevel`` frames up from here (3: the caller's caller)."""
    check_model(model)
    x, C = _initial(x0, chains)
    first_chain = integer("first_chain", first_chain, 0)
    if isinstance(model, SPHERE_MODELS):
        check_on_sphere(x)
        check_step(model, x.shape[2], stacklevel=stacklevel)
        _check_scores(_sphere_score_bound(model.head_matrices(x.shape[2])[0]))
    else:
        _check_scores(_score_bound(x, model.key_query(x.shape[2])))
    return x, C, first_chain


def initial(x: np.ndarray) -> np.ndarray:
    """A copy of the validated x of :func:`prepare` as the caller gave it for a result to
    keep: n×d when one configuration is shared by all chains, else chains×n×d."""
    return np.array(x[0] if x.shape[0] == 1 else x)


def run_bytes(
    C: int, n: int, d: int, model: Model | None = None, backend: Backend | None = None
) -> int:
    """Memory of a run of C chains of n tokens in R^d of ``model`` (None: a Euclidean model) on
    ``backend`` (None: the CPU), as the backend estimates it (:meth:`Backend.run_bytes`: the
    state, the streams, the kernels' scratch)."""
    return (backend or resolve("cpu")).run_bytes(
        C, n, d, isinstance(model, (SphereFlow, NoisySphere))
    )


def start(
    x: np.ndarray, C: int, rng: SeedLike, first_chain: int
) -> tuple[np.ndarray, Seed, np.ndarray]:
    """The chains' state (a fresh (C, n, d) copy of x), the seed and the per-chain streams.
    Call after the memory check."""
    seed = as_seed(rng)
    X = np.empty((C,) + x.shape[1:])
    X[...] = x
    return X, seed, seed.streams(C, first_chain)


def check_finite(X: np.ndarray, when: str, model: Model) -> None:
    """FloatingPointError naming the first chain with a non-finite state and the likely cause:
    the step (with scalar steps the scores keep the bound that :func:`_score_bound` takes at
    time 0, so they do not overflow)."""
    if not _all_finite(X):
        c = int(np.flatnonzero(~np.isfinite(X).all(axis=(1, 2)))[0])
        raise FloatingPointError(f"chain {c} has a non-finite state{when}: {_unstable(model)}")


def _unstable(model: Model) -> str:
    """What makes the steps of ``model`` diverge, with the value to change."""
    value: Any  # a constant step of either kind of model
    if isinstance(model, _SphereModel):
        name, value = (
            ("dt" if isinstance(model, (SphereFlow, NoisySphere)) else "gamma"),
            model.step,
        )
    elif model.has_step_matrix:
        return "the step matrix gamma grew the hull without bound; use a smaller step matrix"
    elif model.has_schedule:
        return "a step of the gamma schedule is too large to be stable; use smaller steps"
    else:
        name, value = "gamma", model.gamma
    return f"the step size {name} = {value:g} is too large to be stable; use a smaller {name}"
