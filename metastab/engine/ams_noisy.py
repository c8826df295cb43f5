"""Generalised AMS for the noisy sphere (:class:`~metastab.NoisySphere`) leaving the uniform
state (:class:`~metastab.LeaveUniform`): what :func:`metastab.engine.ams_probability` and
:func:`metastab.engine.ams_mean_escape_time` check and compile for that model.

The replicas are the model's chains, stepped exactly (projected Euler–Maruyama, one normal per
coordinate and step from the replica's stream) by the backend's ``noisy_excursions`` driver,
the chain of :func:`metastab.first_passage` bit for bit. The score is the event's own
coordinate, the order parameter ξ = m_degree of the tokens (:func:`metastab.order_parameters`),
so B = {m_degree >= level}; the reference set is A = {m_degree <= a}, a the reference level
(0 <= a < level), tested after each step. m_degree is continuous along the paths (no atoms),
and the tie rule of :mod:`metastab.engine.ams` keeps the estimator unbiased whatever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._validate import real
from ..events import LeaveUniform
from ..models import NoisySphere
from ..models.sphere import SPHERE_TOL, check_on_sphere, first_off_sphere
from .accelerated import budget
from .ams import entrance_array
from .backends import order_parameters

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import ArrayLike

__all__ = ["SCORE", "NoisySetup", "entrance_shape", "exit_summary", "noisy_setup"]

_BUDGET = 10**7  # default safety budget of a path with a reference set (steps)
SCORE = "order parameter"  # the name of the default score in the results


class NoisySetup(NamedTuple):
    """A checked noisy-sphere AMS problem: the start x (n, d), the kernel parameters ``dyn``
    and step ``dt``, the compiled event ``ev``, its degree, A = {m_degree <= low} (low = −1:
    A empty) and the step budget ``limit`` of a path."""

    x: np.ndarray
    dyn: Any
    dt: float
    ev: Any
    degree: int
    low: float
    limit: float


def noisy_setup(
    model: NoisySphere,
    x0: ArrayLike,
    event: Any,
    *,
    reference_level: float | None,
    horizon: int | float | None,
    max_steps: int | float | None,
    mode: str | None,
    merge_tol: float | None,
    score: Any,
    need_start_in_a: bool = False,
) -> NoisySetup:
    """Check the arguments of an AMS call on the noisy sphere (module notes) and compile them;
    each refusal names the parameter and its value."""
    if not isinstance(event, LeaveUniform):
        raise ValueError(
            f"event must be a LeaveUniform with a NoisySphere (AMS scores the paths by the "
            f"event's order parameter), got {event!r}"
        )
    if mode not in (None, "exact"):
        raise ValueError(
            f"mode must be 'exact' (or None) with a NoisySphere: the noisy model has no "
            f"event-driven law, got mode={mode!r}"
        )
    if merge_tol is not None:
        raise ValueError(
            f"merge_tol is for SA_P's accelerated mode; a NoisySphere takes none, got "
            f"merge_tol={merge_tol!r}"
        )
    if score is not None:
        raise ValueError(
            f"score must be None with a NoisySphere (the score is the event's order parameter "
            f"m_{event.degree}), got {score!r}"
        )
    try:
        x = np.array(x0, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"x0 must be a numeric n×d array, got {x0!r}") from None
    if x.ndim != 2 or 0 in x.shape or not np.isfinite(x).all():
        raise ValueError(f"x0 must be a finite n×d array, got shape {x.shape}")
    check_on_sphere(x)
    x = np.ascontiguousarray(x)
    n, d = x.shape
    level = float(event.level)
    if reference_level is None:
        low = -1.0
    else:
        low = real("reference_level", reference_level, low=0, high=level, high_open=True)
    if horizon is not None:
        if max_steps is not None:
            raise ValueError(
                f"max_steps is the safety budget of a run without a horizon; with "
                f"horizon={horizon!r} the horizon ends every path, got max_steps={max_steps!r}"
            )
        limit = float(budget(horizon))
    else:
        limit = float(budget(_BUDGET if max_steps is None else max_steps))
    dyn = model.kernel_params(d)
    ev = event.compile(x[None], np.eye(d))
    if need_start_in_a:
        m0 = float(exit_summary(x[None])[0, event.degree - 1])
        if m0 > low:
            raise ValueError(
                f"x0 must lie in the reference set: its m_{event.degree} is {m0:.3g} > "
                f"reference_level={low:.3g}"
            )
    return NoisySetup(x, dyn, float(model.dt), ev, int(event.degree), low, limit)


def exit_summary(X: np.ndarray) -> np.ndarray:
    """(m_1, m_2) of the configurations X (C, n, d), (C, 2): the score's kernel, and the summary
    of the exits that the drift test of :func:`metastab.engine.ams_hill.drift_test` compares
    for the noisy sphere (its tokens diffuse, so their distances from x0 say nothing)."""
    out = np.empty((X.shape[0], 2))
    order_parameters(np.ascontiguousarray(X, dtype=float), out)
    return out


def entrance_shape(entrance: ArrayLike, runs: int, replicas: int, n: int, d: int) -> np.ndarray:
    """The entrance sample as a (runs, replicas, n, d) array on the sphere, or a clear error."""
    e = entrance_array(entrance, runs, replicas, n, d)
    off = first_off_sphere(e, SPHERE_TOL)
    if off is not None:
        raise ValueError(
            f"entrance must lie on the unit sphere, got |entrance{list(off[0])}| = {off[1]:.12g}"
        )
    return np.ascontiguousarray(e)
