"""The resolution of direct stepping, and the group arithmetic shared by the SA_P engines.

Direct (exact-mode) stepping draws every pick with its probability to full relative precision
(rare picks are decided by an exact Bernoulli trial, see
``kernels.cpu.euclidean_steps.chain_step``), except picks whose weight e^{β(s_ij − max_k s_ik)} the
kernels' exp flushes to 0, those with an exponent below :func:`underflow_exponent` (≈ −708.7):
:func:`check_resolution` warns, with :class:`~metastab.ResolutionWarning`, when a configuration can
only leave its groups through such picks; :func:`cross_probabilities` gives the log-probabilities of
leaving a group in one step, at any β. Groups are the points of a configuration after merging at
``merge_tol``, as the accelerated mode (:mod:`metastab.engine.accelerated`) does.
"""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .._validate import check_memory, real
from ..exceptions import ResolutionWarning
from ..kernels import params as _params
from ..models import SoftmaxChain
from ..models.sphere import SphereChain
from .backends import accelerated_bytes, cross_logs, cross_weights, exp_nonpositive, merge_groups

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .chains import Model

__all__ = [
    "MODES",
    "MERGE_TOL",
    "check_mode",
    "check_resolution",
    "constant_chain",
    "cross_probabilities",
    "merge_tolerance",
    "underflow_exponent",
]

MODES = ("exact", "accelerated")
MERGE_TOL = 1e-10


@functools.cache
def underflow_exponent() -> float:
    """The smallest z with a positive kernel weight exp(z), bisected on the kernels' exp.

    Weights e^{β(s_ij − max_k s_ik)} with an exponent below it are flushed to 0 and never drawn
    by direct stepping.

    Returns
    -------
    z : float
        The exponent (≈ −708.74, the threshold of float64's subnormals as the kernels' exp
        treats them); computed once per process.

    Examples
    --------
    >>> from metastab.engine import underflow_exponent
    >>> round(underflow_exponent(), 3)
    -708.743
    """
    lo, hi = -745.0, -700.0  # exp(lo) == 0 < exp(hi); bisect to adjacent floats
    z, w = np.empty(1), np.empty(1)
    while True:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            return hi
        z[0] = mid
        exp_nonpositive(z, w)
        lo, hi = (lo, mid) if w[0] > 0.0 else (mid, hi)


def merge_tolerance(merge_tol: float | None) -> float:
    """The relative merge tolerance of the accelerated mode, checked.

    Parameters
    ----------
    merge_tol : float in [0, 1] or None
        The tolerance asked for; None for the default :data:`MERGE_TOL`.

    Returns
    -------
    merge_tol : float
        The tolerance: ``merge_tol`` itself, or :data:`MERGE_TOL` (1e-10).

    Raises
    ------
    ValueError
        When ``merge_tol`` is not a number in [0, 1].

    Examples
    --------
    >>> from metastab.engine import merge_tolerance
    >>> merge_tolerance(None), merge_tolerance(0.0)
    (1e-10, 0.0)
    """
    if merge_tol is None:
        return MERGE_TOL
    return real("merge_tol", merge_tol, low=0.0, high=1.0)


def check_mode(mode: str, merge_tol: float | None) -> None:
    """ValueError unless ``mode`` is one of :data:`MODES`, and ``merge_tol`` is None outside
    ``mode="accelerated"`` (the only mode that merges)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "exact" and merge_tol is not None:
        raise ValueError(
            f"merge_tol applies to mode='accelerated' only, got merge_tol={merge_tol!r}"
        )


def scale(x: np.ndarray) -> np.ndarray:
    """Per configuration of x (C, n, d): the largest |coordinate|, 1 where that is 0."""
    size = np.abs(x).max(axis=(1, 2))
    return np.where(size > 0, size, 1.0)


def has_frozen_law(model: Model) -> bool:
    """Whether picks of one's own group are exact no-ops, so that the frozen law holds: SA_P
    (SoftmaxChain) with a constant step, or the chain on the sphere with V = I."""
    if isinstance(model, SphereChain):
        return model.V is None or bool((model.V == np.eye(len(model.V))).all())
    return isinstance(model, SoftmaxChain) and not model.has_schedule


def constant_chain(
    model: Model, d: int, *, why: str, what: str = "mode='accelerated' needs"
) -> tuple[_params.Dynamics, float]:
    """The kernel parameters and the constant scalar step of a SoftmaxChain with a constant step
    (scalar or matrix), or of a SphereChain with V = I (kind SPHERE_CHAIN: LayerNorm after each
    move); ValueError otherwise, saying ``what`` and ``why``."""
    if isinstance(model, SphereChain):
        if model.V is not None and not has_frozen_law(model):
            raise ValueError(
                f"{what} V = I for a SphereChain (picks of one's own group are no-ops only "
                f"then), got V={model.V.tolist()!r}"
            )
        B = model.key_query(d)
        dyn = _params.Dynamics(_params.SPHERE_CHAIN, B, model.beta, np.eye(d), False, False, 0.0, 0)
        return dyn, model.gamma
    if not isinstance(model, SoftmaxChain):
        raise ValueError(
            f"{what} a SoftmaxChain (SA_P) or a SphereChain, got {type(model).__name__}"
        )
    if model.has_schedule:
        raise ValueError(f"{what} a constant step ({why}), got gamma={model.gamma!r}")
    return model.kernel_params(d), float(model.schedule(0, 1).sizes[0])


# below the kernels' underflow exponent (≈ 708.74 in magnitude) by more than any rounding of
# beta (s_ij - max_k s_ik); tests/engine check the order
_SAFE_EXPONENT = 700.0


def _no_weight_underflows(X: np.ndarray, B: np.ndarray, beta: float) -> bool:
    """Whether no weight of any configuration of X (C, n, d; finite) can underflow, by a bound
    that needs no kernel: |s_ij| = |<x_i, B x_j>| ≤ ‖B‖_F ‖x_i‖ ‖x_j‖, so every exponent
    β (s_ij − max_k s_ik) is at least −2β ‖B‖_F max_i ‖x_i‖², here above
    -:data:`_SAFE_EXPONENT`. Most runs at moderate beta pass it and compile no check."""
    radius2 = float(np.einsum("cnd,cnd->cn", X, X).max())
    with np.errstate(over="ignore", invalid="ignore"):
        low = 2.0 * beta * float(np.hypot.reduce(np.ravel(B))) * radius2
    return bool(low < _SAFE_EXPONENT)  # False for inf and nan: the full check decides


def _to_check(model: Model, X: np.ndarray) -> np.ndarray:
    """The configurations of X (C, n, d) that :func:`check_resolution` checks with the kernels:
    the finite ones of a chain with the frozen law, none where :func:`_no_weight_underflows`."""
    if not has_frozen_law(model) or len(X) == 0:
        return np.empty((0, 0, 0))
    X = np.asarray(X, dtype=np.float64)
    X = np.ascontiguousarray(X[np.isfinite(X).all(axis=(1, 2))])  # a copy: the mask indexes
    if len(X) == 0:
        return X
    dyn, _ = constant_chain(model, X.shape[2], why=_GEOMETRIC)
    return X[:0] if _no_weight_underflows(X, dyn.B, dyn.beta) else X


def check_kernels(model: Model, X: np.ndarray) -> tuple:
    """The kernels that :func:`check_resolution` calls on X: none where the bound of
    :func:`_no_weight_underflows` holds, as in most runs; for the compile announcement of a run
    that checks X."""
    return (merge_groups, cross_weights) if len(_to_check(model, X)) else ()


_GEOMETRIC = "the waiting time is geometric only for a time-homogeneous chain"


def cross_probabilities(
    model: SoftmaxChain, x: ArrayLike, *, merge_tol: float | None = None
) -> np.ndarray:
    """Log-probability that each token picks a token outside its group in one step of SA_P.

    Groups are the points of ``x`` after merging at ``merge_tol`` (as the accelerated mode does);
    a token at u_a crosses with probability c_a = r_a / (1 + r_a),
    r_a = Σ_{b≠a} (m_b/m_a) e^{β(<B u_a, u_b> − <B u_a, u_a>)} (docs: models#statements-fw),
    computed in log space (no underflow at any β).

    Parameters
    ----------
    model : SoftmaxChain or SphereChain
        SA_P with a constant step (or the chain on the sphere with V = I): β and B.
    x : array_like, shape (n, d) or (C, n, d)
        One configuration, or C of them.
    merge_tol : float, optional
        Relative merge distance (default :data:`MERGE_TOL`; 0: exact coincidences only).

    Returns
    -------
    log_c : ndarray, shape (n,) or (C, n)
        log c_i for every token (``-inf`` where a token's group is the only point).

    Examples
    --------
    >>> import metastab as ms
    >>> from metastab.engine import cross_probabilities
    >>> x = [[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]
    >>> lc = cross_probabilities(ms.SoftmaxChain(beta=20.0, gamma=0.5), x)
    >>> lc.round(3).tolist()                    # log(e^-40 / 2) and log(2 e^-40), to e^-40
    [-40.693, -40.693, -39.307]
    """
    X = np.asarray(x, dtype=np.float64)  # cross_logs works on copies of single configurations
    one = X.ndim == 2
    if one:
        X = X[None]
    if X.ndim != 3 or 0 in X.shape or not np.isfinite(X).all():
        raise ValueError(f"x must be a finite n×d or C×n×d array, got shape {np.shape(x)}")
    tols = merge_tolerance(merge_tol) * scale(X)
    dyn, _ = constant_chain(model, X.shape[2], why=_GEOMETRIC)
    check_memory(
        f"the cross-group probabilities of {X.shape[0]} configuration(s) of "
        f"{X.shape[1]} tokens (an n×n table per thread; exact mode checks them first)",
        work_bytes(*X.shape),
    )
    out = np.empty(X.shape[:2])
    cross_logs(np.ascontiguousarray(X), dyn.B, dyn.beta, tols, out)
    return out[0] if one else out


def work_bytes(C: int, n: int, d: int) -> int:
    """Memory of the event-driven kernels on C configurations (an n×n table per thread among
    their scratch buffers): :func:`~metastab.engine.backends.accelerated_bytes`."""
    return accelerated_bytes(C, n, d)


def check_resolution(
    model: Model,
    X: np.ndarray,
    *,
    what: str = "configurations",
    merge_tol: float | None = None,
    stacklevel: int = 2,
) -> bool:
    """Warn (:class:`ResolutionWarning`) when direct stepping cannot leave some of ``X``.

    Groups are the points of a configuration after merging at ``merge_tol`` (as in
    :func:`cross_probabilities`). A configuration with two groups or more is stuck for direct
    stepping when, for every token, every pick outside its group has a weight
    e^{β(s_ij − max_k s_ik)} that the kernels flush to 0 (exponent below
    :func:`underflow_exponent`): ``kernels.cpu.euclidean_steps.chain_step`` never draws such a pick,
    while every pick of positive weight is drawn with its probability. The test uses the kernels'
    own arithmetic (``kernels.cpu.drivers.cross_weights``), with O(n) memory per configuration,
    after a bound that needs no kernel: no exponent can reach the underflow when
    2β ‖B‖_F max_i ‖x_i‖² < 700, as in most runs. Only the chains with the frozen law
    (:func:`has_frozen_law`) are checked; configurations with non-finite coordinates are skipped.

    Parameters
    ----------
    model : SoftmaxChain, SphereChain or another model
        The chain; models without the frozen law pass unchecked.
    X : ndarray, shape (C, n, d)
        The configurations to check.
    what : str
        What X is, for the message (e.g. "initial configurations").
    merge_tol : float, optional
        Relative merge distance of the groups (default :data:`MERGE_TOL`).
    stacklevel : int
        The warning's stack level, counted from the caller of ``check_resolution`` (default 2).

    Returns
    -------
    warned : bool
        True when some configuration was stuck and the warning was given.

    Warns
    -----
    ResolutionWarning
        With the number of stuck configurations and the likeliest exponent of their picks.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import metastab as ms
    >>> from metastab.engine import check_resolution
    >>> X = np.array([[[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]])   # two groups, 2 apart
    >>> check_resolution(ms.SoftmaxChain(beta=20.0, gamma=0.5), X)   # e^-40: drawn
    False
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_resolution(ms.SoftmaxChain(beta=1000.0, gamma=0.5), X)   # e^-2000: never
    True
    >>> caught[0].category.__name__
    'ResolutionWarning'
    """
    X = _to_check(model, X)
    if len(X) == 0:
        return False
    C, n, d = X.shape
    dyn, _ = constant_chain(model, d, why=_GEOMETRIC)
    tols = merge_tolerance(merge_tol) * scale(X)
    labels = np.empty((C, n), dtype=np.int64)
    points = np.empty((n, d))
    mult, count, order = (np.empty(n, np.int64) for _ in range(3))
    for c in range(C):
        merge_groups(X[c].copy(), tols[c], labels[c], points, mult, count, order)
    weight, z = np.empty(C), np.empty(C)
    cross_weights(X, dyn.B, dyn.beta, labels, weight, z)
    stuck = np.isfinite(z) & (weight == 0.0)
    if not stuck.any():
        return False
    worst = float(z[stuck].max())
    warnings.warn(
        f"{int(stuck.sum())} of {C} {what} can only leave their groups (tokens on one "
        f"point) through picks whose weight e^(beta*(s_ij - max_k s_ik)) underflows to 0 "
        f"(exponent below {underflow_exponent():.1f}; the likeliest such pick has "
        f"exponent {worst:.1f} at beta={model.beta:g}): direct stepping never draws "
        f"them, such chains stay frozen and are censored. Use {ResolutionWarning.REMEDY}",
        ResolutionWarning,
        stacklevel=stacklevel + 1,
    )
    return True
