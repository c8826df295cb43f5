"""Stopping events as small specs; the kernels evaluate them after every step (and at time 0).

The first-passage time of an event is T = min{t >= 0 : the configuration X^t satisfies it}.
Each spec compiles, for given initial configurations, into the NamedTuple of flat arrays that
``kernels.cpu.events.event_hit`` takes (:class:`~metastab.kernels.params.EventArrays`).
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field
from typing import Any, ClassVar, cast

import numpy as np

from ._validate import integer, real
from .kernels import params as _params

__all__ = [
    "LeaveBall",
    "LeaveHull",
    "ReachVertices",
    "Collapse",
    "Clusters",
    "LeaveUniform",
    "ReachUniform",
]


def _radius(value, name: str = "radius") -> float:
    return real(name, value, low=0, low_open=True)


def _frozen(a) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


def _one_group(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros(n, np.int64), np.array([0, n], np.int64), np.arange(n, dtype=np.int64)


def _radii(r: float, x0: np.ndarray) -> np.ndarray:
    return np.full((1, x0.shape[1]), r)


class _Event:
    # set on each subclass (kind by hand, the fields by @dataclass)
    kind: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def check_model(self, model: object) -> None:
        """Refuse a model whose runs the event cannot describe (every model here)."""

    def to_dict(self) -> dict:
        out = {"kind": self.kind}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = value.tolist() if isinstance(value, np.ndarray) else value
        return out


@dataclass(frozen=True, eq=False)
class LeaveBall(_Event):
    """Some token i is farther than ``radius`` from ``centers[i]`` (default: its position at t=0).

    Its first-passage time is T = min{t : max_i ‖x_i^t − c_i‖ > radius}, c_i the centres.

    Parameters
    ----------
    radius : float > 0
        The radius of each token's ball.
    centers : (n, d) array, optional
        The balls' centres, one per token (default None: each token's position at t = 0, per
        chain).

    Examples
    --------
    >>> import metastab as ms
    >>> ms.LeaveBall(0.2).radius
    0.2
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=2.0, gamma=0.5), ms.regular_polygon(5).vertices,
    ...                       ms.LeaveBall(0.1), chains=4, max_steps=50, rng=1)
    >>> fp.times.tolist()  # the steps until a token is 0.1 away from where it started
    [1, 1, 1, 2]
    """

    radius: float
    centers: np.ndarray | None = field(default=None, repr=False)
    kind = "leave-ball"

    def __post_init__(self):
        object.__setattr__(self, "radius", _radius(self.radius))
        if self.centers is not None:
            c = np.array(self.centers, dtype=float)
            if c.ndim != 2 or not np.isfinite(c).all():
                raise ValueError(f"centers must be a finite n×d array, got shape {c.shape}")
            object.__setattr__(self, "centers", _frozen(c))

    def compile(self, x0: np.ndarray, B: np.ndarray) -> _params.EventArrays:
        centers = x0 if self.centers is None else self.centers[None]
        if centers.shape[1:] != x0.shape[1:]:
            raise ValueError(
                f"centers must have shape {x0.shape[1:]} (n×d), got {centers.shape[1:]}"
            )
        # a writeable copy: a read-only array would make numba compile another `advance`
        return _params.EventArrays(
            _params.LEAVE_BALL,
            np.array(centers, order="C"),
            _radii(self.radius, x0),
            *_one_group(x0.shape[1]),
            0.0,
        )


@dataclass(frozen=True, eq=False)
class LeaveHull(_Event):
    """Some token i leaves the hull of its group's initial positions, widened by ``radius``.

    The set is conv{x_j^0 : groups[j] == groups[i]} + B(0, radius), and the first time a token
    leaves it is the exit time T2 of [FW] Thm 5.4. The distance to the group
    hull is computed with Wolfe's finite min-norm-point algorithm
    (``kernels.cpu.events.hull_dist2``), exact up to rounding.

    Parameters
    ----------
    groups : sequence of n integers
        The group label of each token (any integers; tokens with equal labels share a hull).
    radius : float > 0
        How far outside its group's hull a token may go before the event holds.

    Examples
    --------
    >>> import metastab as ms
    >>> ms.LeaveHull(groups=[0, 1, 0, 1], radius=0.5).radius
    0.5
    >>> hexagon = ms.regular_polygon(6).vertices  # two groups: tokens 0-2 and 3-5
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=2.0, gamma=0.5), hexagon,
    ...                       ms.LeaveHull(groups=[0, 0, 0, 1, 1, 1], radius=0.1), chains=4,
    ...                       max_steps=50, rng=1)
    >>> fp.times.tolist()
    [1, 1, 1, 1]
    """

    groups: np.ndarray
    radius: float
    kind = "leave-hull"

    def __post_init__(self):
        g = np.asarray(self.groups)
        if g.ndim != 1 or g.size == 0 or not np.issubdtype(g.dtype, np.integer):
            raise ValueError(
                f"groups must be a non-empty 1-D array of integer labels, got {self.groups!r}"
            )
        object.__setattr__(self, "groups", _frozen(g.astype(np.int64)))
        object.__setattr__(self, "radius", _radius(self.radius))

    def compile(self, x0: np.ndarray, B: np.ndarray) -> _params.EventArrays:
        n = x0.shape[1]
        if self.groups.size != n:
            raise ValueError(
                f"groups must have one label per token (n={n}), got {self.groups.size}"
            )
        _, labels = np.unique(self.groups, return_inverse=True)
        members = np.argsort(labels, kind="stable").astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(np.bincount(labels))]).astype(np.int64)
        return _params.EventArrays(
            _params.LEAVE_HULL,
            x0,
            _radii(self.radius, x0),
            labels.astype(np.int64),
            starts,
            members,
            0.0,
        )


@dataclass(frozen=True, eq=False)
class ReachVertices(_Event):
    """Every token is within ``radius`` of its assigned vertex: the event of [FW] Thm 5.2.

    A vertex token (one that starts on its vertex, up to 1e-12 relative) must be within
    ``vertex_radius`` of it instead ([FW] Thm 5.2, its first phase). The default assignment is the
    initial cell σ(x_i^0) = argmax_a <B x_i^0, v_a>, with the model's B.

    Parameters
    ----------
    vertices : (κ, d) array or Polytope
        The vertices v_a (a :class:`~metastab.Polytope` gives its own).
    radius : float > 0
        The distance to its vertex within which every token must be.
    vertex_radius : float > 0, optional
        The distance for the vertex tokens (default None: ``radius``).
    assignment : sequence of n integers in [0, κ), optional
        The vertex of each token (default None: its initial cell, per chain).

    Examples
    --------
    >>> import numpy as np
    >>> import metastab as ms
    >>> ms.ReachVertices([[1.0, 0.0], [-1.0, 0.0]], radius=0.1).vertex_radius
    0.1
    >>> triangle = ms.regular_polygon(3)
    >>> x0 = np.vstack([triangle.vertices, 0.5 * triangle.vertices])  # 3 tokens on the vertices
    >>> fp = ms.first_passage(ms.Hardmax(gamma=0.5), x0, ms.ReachVertices(triangle, radius=0.1),
    ...                       max_steps=100, rng=0)
    >>> fp.times.tolist()  # the steps until every token is within 0.1 of its vertex
    [3]
    """

    vertices: np.ndarray
    radius: float
    vertex_radius: float | None = None
    assignment: np.ndarray | None = None
    kind = "reach-vertices"

    def __post_init__(self):
        v = getattr(self.vertices, "vertices", self.vertices)  # a Polytope or an array
        v = np.array(v, dtype=float)
        if v.ndim != 2 or v.shape[0] == 0 or not np.isfinite(v).all():
            raise ValueError(f"vertices must be a finite non-empty κ×d array, got shape {v.shape}")
        object.__setattr__(self, "vertices", _frozen(v))
        object.__setattr__(self, "radius", _radius(self.radius))
        vr = (
            self.radius
            if self.vertex_radius is None
            else _radius(self.vertex_radius, "vertex_radius")
        )
        object.__setattr__(self, "vertex_radius", vr)
        if self.assignment is not None:
            a = np.asarray(self.assignment)
            if (
                a.ndim != 1
                or not np.issubdtype(a.dtype, np.integer)
                or (a < 0).any()
                or (a >= v.shape[0]).any()
            ):
                raise ValueError(
                    f"assignment must be vertex indices in [0, {v.shape[0]}), got "
                    f"{self.assignment!r}"
                )
            object.__setattr__(self, "assignment", _frozen(a.astype(np.int64)))

    def compile(self, x0: np.ndarray, B: np.ndarray) -> _params.EventArrays:
        n, d = x0.shape[1:]
        if self.vertices.shape[1] != d:
            raise ValueError(
                f"vertices must be in R^{d} like the tokens, got shape {self.vertices.shape}"
            )
        if self.assignment is None:
            assign = np.argmax(np.einsum("cnk,ak->cna", x0 @ B.T, self.vertices), axis=-1)
        else:
            if self.assignment.size != n:
                raise ValueError(
                    f"assignment must have one entry per token (n={n}), got {self.assignment.size}"
                )
            assign = self.assignment[None]
        centers = self.vertices[assign]
        scale = np.maximum(1.0, np.abs(centers).max(axis=-1))
        on_vertex = np.abs(x0 - centers).max(axis=-1) <= 1e-12 * scale
        # __post_init__ replaced a None vertex_radius by radius
        radii = np.where(on_vertex, cast(float, self.vertex_radius), self.radius)
        return _params.EventArrays(
            _params.REACH, np.ascontiguousarray(centers), radii, *_one_group(n), 0.0
        )


@dataclass(frozen=True, eq=False)
class Collapse(_Event):
    """The configuration's diameter max_ij ‖x_i − x_j‖ is at most ``diameter``.

    The collapse of the tokens to one point ([FW] §5, the collapse proposition).

    Parameters
    ----------
    diameter : float > 0
        The diameter at or below which the event holds.

    Examples
    --------
    >>> import metastab as ms
    >>> ms.Collapse(1e-3).diameter
    0.001
    >>> hexagon = ms.regular_polygon(6).vertices
    >>> fp = ms.first_passage(ms.SoftmaxFlow(beta=1.0, gamma=0.5), hexagon, ms.Collapse(0.1),
    ...                       max_steps=1000, rng=0)
    >>> fp.times.tolist()  # the steps until the six tokens are within 0.1 of each other
    [6]
    """

    diameter: float
    kind = "collapse"

    def __post_init__(self):
        object.__setattr__(self, "diameter", _radius(self.diameter, "diameter"))

    def compile(self, x0: np.ndarray, B: np.ndarray) -> _params.EventArrays:
        n, d = x0.shape[1:]
        return _params.EventArrays(
            _params.COLLAPSE, np.zeros((1, n, d)), np.zeros((1, n)), *_one_group(n), self.diameter
        )


def cluster_threshold(delta: float) -> float:
    """The cosine threshold 1 − δ of a clustered pair, δ validated (0 < δ <= 2)."""
    return 1.0 - real("delta", delta, low=0, low_open=True, high=2)


@dataclass(frozen=True, eq=False)
class Clusters(_Event):
    """The number of clusters is at most ``at_most``.

    The clusters are the connected components of the graph of clustered pairs
    cos(x_i, x_j) = <x_i, x_j> / (‖x_i‖ ‖x_j‖) >= 1 − ``delta``
    (docs: models#observables; on the unit sphere the cosine is <x_i, x_j>, for
    tokens in R^d it compares directions, and a token at the origin is in no pair). Evaluated in the
    kernel by union-find, O(n² d) per step (:func:`metastab.kernels.cpu.clustering.cluster_count`).

    Parameters
    ----------
    at_most : int >= 1
        The event holds once there are at most this many clusters.
    delta : float in (0, 2]
        A pair is clustered when its cosine is at least 1 − delta (default 1e-3).

    Examples
    --------
    >>> import metastab as ms
    >>> ms.Clusters(at_most=2)
    Clusters(at_most=2, delta=0.001)
    >>> hexagon = ms.regular_polygon(6).vertices
    >>> fp = ms.first_passage(ms.SoftmaxFlow(beta=1.0, gamma=0.5), hexagon, ms.Clusters(1),
    ...                       max_steps=1000, rng=0)
    >>> fp.times.tolist()  # the steps until all six directions are one cluster
    [60]
    """

    at_most: int
    delta: float = 1e-3
    kind = "clusters"

    def __post_init__(self):
        object.__setattr__(self, "at_most", integer("at_most", self.at_most, 1))
        cluster_threshold(self.delta)
        object.__setattr__(self, "delta", float(self.delta))

    def compile(self, x0: np.ndarray, B: np.ndarray) -> _params.EventArrays:
        return clusters_arrays(x0.shape[1:], self.delta, self.at_most, chains=0)


def clusters_arrays(
    shape: tuple[int, int], delta: float, at_most: int, chains: int
) -> _params.EventArrays:
    """The kernel form of "at most ``at_most`` clusters" (0: never) for n×d configurations
    (``shape``), with a (chains, n) table of levels (NaN) that the kernels fill for chains
    0..chains-1 (see :func:`metastab.track`; ``chains=0``: nothing recorded)."""
    n, d = shape
    return _params.EventArrays(
        _params.CLUSTERS,
        np.zeros((1, n, d)),
        np.zeros((1, n)),
        *_one_group(n),
        cluster_threshold(delta),
        at_most,
        np.full((chains, n), np.nan),
    )


# the kernel codes of the order-parameter events: (away from the uniform state, degree) -> code
_UNIFORM_CODES = {
    (True, 1): _params.LEAVE_UNIFORM_1,
    (True, 2): _params.LEAVE_UNIFORM_2,
    (False, 1): _params.REACH_UNIFORM_1,
    (False, 2): _params.REACH_UNIFORM_2,
}


class _UniformOrder(_Event):
    """The shared half of :class:`LeaveUniform` and :class:`ReachUniform`: an order parameter
    of the tokens on the unit sphere against a level."""

    level: float
    degree: int
    away: ClassVar[bool]  # LeaveUniform: m >= level; ReachUniform: m <= level

    def __post_init__(self):
        level = real("level", self.level, low=0, low_open=True, high=1)
        degree = integer("degree", self.degree)
        if degree not in (1, 2):
            raise ValueError(
                f"degree must be 1 (the magnetisation m_1) or 2 (m_2), got {self.degree!r}"
            )
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "degree", degree)

    def check_model(self, model: object) -> None:
        from .models.sphere import SPHERE_MODELS

        if not isinstance(model, SPHERE_MODELS):
            names = ", ".join(m.__name__ for m in SPHERE_MODELS)
            raise ValueError(
                f"{type(self).__name__}: m_{self.degree} is an order parameter of tokens on the "
                f"unit sphere, for the sphere models ({names}); got the model {model!r}"
            )

    def compile(self, x0: np.ndarray, B: np.ndarray) -> _params.EventArrays:
        n, d = x0.shape[1:]
        if self.degree == 2 and d < 2:
            raise ValueError(f"degree 2: m_2 needs tokens in R^d with d >= 2, got d={d}")
        return _params.EventArrays(
            _UNIFORM_CODES[self.away, self.degree],
            np.zeros((1, n, d)),
            np.zeros((1, n)),
            *_one_group(n),
            self.level,
        )


@dataclass(frozen=True, eq=False)
class LeaveUniform(_UniformOrder):
    """The tokens have left the uniform state: their order parameter m_degree is at least
    ``level`` (0 < level <= 1). m_1 = ‖(1/n) Σ_i x_i‖ (the magnetisation) and
    m_2 = ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F / √((d − 1)/d) are the amplitudes of the degree-1 and
    degree-2 spherical harmonics of the empirical measure, 0 at the uniform measure, O(n^{−1/2})
    for n uniform tokens and 1 at a single cluster (docs: models#order-parameters;
    :func:`metastab.order_parameters`). For the models on the unit sphere only.

    Parameters
    ----------
    level : float in (0, 1]
        The event holds once m_degree >= level.
    degree : {1, 2}
        The harmonic's degree (default 1, the magnetisation; 2 also sees antipodal clusters).

    Examples
    --------
    >>> import metastab as ms
    >>> ms.LeaveUniform(0.5)
    LeaveUniform(level=0.5, degree=1)
    >>> x0 = ms.sphere_uniform(32, 3, chains=4, rng=1)
    >>> fp = ms.first_passage(ms.SphereFlow(4.0, 0.1), x0, ms.LeaveUniform(0.5), max_steps=2000,
    ...                       rng=1, progress=False)
    >>> fp.times  # steps until m_1 >= 0.5; the first chain is censored at the budget
    array([2000,  135,  108, 1666])
    """

    level: float
    degree: int = 1
    kind = "leave-uniform"
    away = True


@dataclass(frozen=True, eq=False)
class ReachUniform(_UniformOrder):
    """The tokens have reached the uniform state: their order parameter m_degree is at most
    ``level`` (0 < level <= 1; m_1 and m_2 as in :class:`LeaveUniform`). For the models on the
    unit sphere only.

    Parameters
    ----------
    level : float in (0, 1]
        The event holds once m_degree <= level.
    degree : {1, 2}
        The harmonic's degree (default 1).

    Examples
    --------
    >>> import metastab as ms
    >>> ms.ReachUniform(0.1, degree=2).degree
    2
    >>> one_cluster = ms.caps([[1.0, 0.0, 0.0]], [8], 0.05, rng=1)
    >>> noisy = ms.NoisySphere(1.0, 0.0, 0.01)  # K = 0: Brownian motion on the sphere
    >>> fp = ms.first_passage(noisy, one_cluster, ms.ReachUniform(0.5), max_steps=5000,
    ...                       chains=4, rng=1, progress=False)
    >>> int(fp.events)
    4
    """

    level: float
    degree: int = 1
    kind = "reach-uniform"
    away = False
