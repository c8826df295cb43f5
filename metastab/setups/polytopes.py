"""Polytopes K = conv{v_a}: cells, ownership, separation, cones and erosions
(docs: models#polytopes).

Hulls are computed with ``scipy.spatial.ConvexHull`` inside the affine hull of the vertices, so
d = 1, collinear points, a single point and any lower-dimensional K are handled explicitly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from scipy.spatial import ConvexHull, QhullError
from scipy.spatial.distance import pdist

from .._validate import integer, matrix, real

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..rng import RNGLike

__all__ = ["Polytope", "regular_polygon", "random_polygon", "simplex", "cross_polytope", "gaussian"]

# Singular values below this fraction of the largest are treated as flat directions: SVD roundoff
# on exactly degenerate data is ~1e-16 relative, real thin polytopes are far above 1e-12.
_RANK_RTOL = 1e-12


# --------------------------------------------------------------------------- arguments


def _check_matrix(B, d: int) -> np.ndarray:
    """Key-query matrix B (d×d, any sign, not assumed symmetric); None means the identity."""
    return np.eye(d) if B is None else matrix("B", B, d)


# --------------------------------------------------------------------------- hull geometry


@dataclass(frozen=True)
class _Hull:
    """K described in its affine hull: x in K iff A x + b <= 0 and x lies in mean + span(basis)."""

    rank: int
    mean: np.ndarray  # (d,)
    basis: np.ndarray  # (d, rank), orthonormal columns spanning aff(K) − mean
    normal: np.ndarray  # (d, d − rank), orthonormal complement of basis
    A: np.ndarray  # (m, d) unit outward facet normals (inside aff K)
    b: np.ndarray  # (m,)
    extreme: np.ndarray  # sorted indices of the extreme points
    reduced: np.ndarray  # (κ, rank) vertex coordinates in the basis, centred
    simplices: np.ndarray | None  # triangulated boundary facets (rank >= 2)


def _hull_geometry(V: np.ndarray) -> _Hull:
    k, d = V.shape
    mean = V.mean(axis=0)
    centred = V - mean
    _, s, vt = np.linalg.svd(centred, full_matrices=True)
    rank = int(np.sum(s > _RANK_RTOL * s[0])) if s[0] > 0 else 0
    if rank == d:
        # Keep the original axes: facet equations are then Qhull's own.
        basis, normal = np.eye(d), np.zeros((d, 0))
    else:
        basis, normal = vt[:rank].T.copy(), vt[rank:].T.copy()
    y = centred @ basis
    simplices = None
    if rank == 0:
        A, b, extreme = np.zeros((0, d)), np.zeros(0), np.array([0])
    elif rank == 1:
        t = y[:, 0]
        lo, hi = int(np.argmin(t)), int(np.argmax(t))
        u = basis[:, 0]
        A = np.stack([u, -u])
        b = np.array([-(u @ mean) - t[hi], u @ mean + t[lo]])
        extreme = np.array(sorted({lo, hi}))
    else:
        try:
            hull = ConvexHull(y)
        except QhullError:
            # Nearly flat input that passed the rank test: joggling gives a valid
            # (approximate, to ~1e-11) hull instead of an exception.
            hull = ConvexHull(y, qhull_options="QJ")
        N, off = hull.equations[:, :rank], hull.equations[:, rank]
        A = N @ basis.T
        b = off - A @ mean
        extreme = np.sort(hull.vertices)
        simplices = hull.simplices
    return _Hull(rank, mean, basis, normal, A, b, extreme.astype(np.intp), y, simplices)


# --------------------------------------------------------------------------- Polytope


@dataclass(frozen=True, eq=False)
class Polytope:
    """The polytope K = conv{v_1, ..., v_κ} ⊂ R^d of docs: models#polytopes.

    Parameters
    ----------
    vertices : array_like, shape (κ, d)
        The points v_a; finite, κ >= 1, d >= 1, pairwise distinct. Stored as a read-only float64
        copy. They need not all be extreme points of K (see :meth:`hull_vertices`).
    name : str, optional
        A label carried into results (e.g. ``"regular-5"``).

    Notes
    -----
    Methods taking ``B`` use the key-query matrix in the scores <B x, v_a> (any d×d matrix, not
    assumed symmetric; default the identity). The separation, cones and erosions are defined
    with B = I, as in [FW].

    Examples
    --------
    >>> import metastab as ms
    >>> P = ms.Polytope([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], name="triangle")
    >>> P.n_vertices, P.dim
    (3, 2)
    >>> P.assign([0.9, 0.2]).item()
    0
    """

    vertices: np.ndarray
    name: str = field(default="")

    def __post_init__(self):
        try:
            V = np.array(self.vertices, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            msg = f"vertices must be a (κ, d) array of reals, got {self.vertices!r}"
            raise ValueError(msg) from exc
        if V.ndim != 2 or V.shape[0] < 1 or V.shape[1] < 1:
            raise ValueError(f"vertices must have shape (κ, d), κ, d >= 1, got shape {V.shape}")
        if not np.all(np.isfinite(V)):
            raise ValueError(f"vertices must be finite, got {V.tolist()!r}")
        _, first, counts = np.unique(V, axis=0, return_index=True, return_counts=True)
        if np.any(counts > 1):
            dup = V[first[counts > 1][0]].tolist()
            raise ValueError(f"vertices must be distinct, got the row {dup!r} more than once")
        if not isinstance(self.name, str):
            raise ValueError(f"name must be a str, got {self.name!r}")
        V.setflags(write=False)
        object.__setattr__(self, "vertices", V)

    def __eq__(self, other):
        if not isinstance(other, Polytope):
            return NotImplemented
        return self.name == other.name and np.array_equal(self.vertices, other.vertices)

    def __hash__(self):
        # + 0.0 maps -0.0 to 0.0, which __eq__ (np.array_equal) treats as equal.
        return hash((self.name, self.vertices.shape, (self.vertices + 0.0).tobytes()))

    # ----------------------------------------------------------------- basic quantities

    @property
    def n_vertices(self) -> int:
        """κ, the number of points v_a."""
        return self.vertices.shape[0]

    @property
    def dim(self) -> int:
        """d, the ambient dimension."""
        return self.vertices.shape[1]

    @property
    def c0(self) -> float:
        """Separation c0 = min_{a≠b} (<v_a, v_a> − <v_a, v_b>) (docs: models#polytopes).

        Examples
        --------
        >>> round(regular_polygon(4).c0, 12)  # 1 − cos(π/2)
        1.0
        """
        if self.n_vertices < 2:
            raise ValueError(f"c0 needs at least 2 vertices, got n_vertices={self.n_vertices}")
        G = self.vertices @ self.vertices.T
        gap = np.diag(G)[:, None] - G
        np.fill_diagonal(gap, np.inf)
        return float(gap.min())

    @property
    def diameter(self) -> float:
        """d(K) = max_{a,b} ‖v_a − v_b‖ (docs: models#polytopes); 0 for a single point.

        Examples
        --------
        >>> round(regular_polygon(4).diameter, 12)
        2.0
        """
        return float(pdist(self.vertices).max()) if self.n_vertices > 1 else 0.0

    def is_equinorm(self, rtol: float = 1e-9) -> bool:
        """True if all ‖v_a‖ agree: max ‖v_a‖ − min ‖v_a‖ <= rtol · max ‖v_a‖.

        Examples
        --------
        >>> regular_polygon(6, radius=2.0).is_equinorm()
        True
        """
        rtol = real("rtol", rtol, low=0)
        norms = np.linalg.norm(self.vertices, axis=1)
        return bool(norms.max() - norms.min() <= rtol * norms.max())

    # ----------------------------------------------------------------- cones at the vertices

    def _edge_grams(self):
        """Yield, per vertex a, the Gram matrix of the generators v_b − v_a (b ≠ a)."""
        V = self.vertices
        for a in range(self.n_vertices):
            W = np.delete(V, a, axis=0) - V[a]
            yield W @ W.T

    def has_acute_cones(self) -> bool:
        """The acute-cone hypothesis of Thm 5.2 (docs: models#polytopes).

        For every a there is θ < π/2 with angle(x − v_a, y − v_a) <= θ for all x, y in K∖{v_a}.
        The directions x − v_a are the nonnegative combinations of the generators v_b − v_a
        (b ≠ a), and <Σ λ_b w_b, Σ μ_c w_c> = Σ λ_b μ_c <w_b, w_c>, so the cone is acute iff
        <v_b − v_a, v_c − v_a> > 0 for every pair b ≠ c. That is what is checked, exactly.

        Examples
        --------
        >>> simplex(2).has_acute_cones(), regular_polygon(4).has_acute_cones()
        (True, False)
        """
        for gram in self._edge_grams():
            off = ~np.eye(gram.shape[0], dtype=bool)
            if np.any(gram[off] <= 0):
                return False
        return True

    def cone_angles(self) -> np.ndarray:
        """Per vertex a, the largest angle between two generators v_b − v_a, v_c − v_a (radians).

        When this is <= π/2 it equals the largest angle of the cone they generate (a spherical cap
        of radius <= π/2 is spherically convex, so the angle is maximal at generators); when it
        exceeds π/2 it is a lower bound. 0 when K∖{v_a} spans a single ray or is empty.

        Examples
        --------
        >>> np.round(np.degrees(regular_polygon(5).cone_angles()), 6)
        array([108., 108., 108., 108., 108.])
        """
        out = np.zeros(self.n_vertices)
        for a, gram in enumerate(self._edge_grams()):
            if gram.shape[0] < 2:
                continue
            norms = np.sqrt(np.diag(gram))
            cos = gram / np.outer(norms, norms)
            np.fill_diagonal(cos, np.inf)
            # Roundoff can push a cosine a hair outside [-1, 1]; arccos would return NaN.
            out[a] = np.arccos(np.clip(cos.min(), -1.0, 1.0))
        return out

    # ----------------------------------------------------------------- cells

    def _points(self, x) -> np.ndarray:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim == 0 or arr.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., {self.dim}), got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("x must be finite, got non-finite entries")
        return arr

    def _vertex_index(self, a) -> int:
        a = integer("a", a, 0)
        if a >= self.n_vertices:
            raise ValueError(f"a must be a vertex index in [0, {self.n_vertices}), got {a!r}")
        return a

    def scores(self, x: ArrayLike, B: ArrayLike | None = None) -> np.ndarray:
        """Scores <B x, v_a> for every a, shape (..., κ) for x of shape (..., d).

        Examples
        --------
        >>> regular_polygon(4).scores([2.0, 0.0]).round(12)
        array([ 2.,  0., -2., -0.])
        """
        x = self._points(x)
        B = _check_matrix(B, self.dim)
        return (x @ B.T) @ self.vertices.T

    def assign(self, x: ArrayLike, B: ArrayLike | None = None) -> np.ndarray:
        """Cell index σ(x) = argmax_a <B x, v_a> (cells C_a, docs: models#polytopes), shape
        x.shape[:-1].

        Exact ties go to the smallest index (``np.argmax``). With B = I and equinorm vertices
        this is the nearest vertex (C_a = Vor(v_a) ∩ K).

        Examples
        --------
        >>> P = regular_polygon(4)
        >>> P.assign(P.vertices).tolist()
        [0, 1, 2, 3]
        """
        return np.argmax(self.scores(x, B), axis=-1)

    def owns_cells(self, B: ArrayLike | None = None) -> np.ndarray:
        """Per vertex, whether v_a owns its cell: <B v_a, v_a> > <B v_a, v_b> for all b ≠ a.

        The genericity hypothesis of [FW] §4, the theorem on positive definite B
        (docs: models#polytopes). A point that is not extreme never owns its cell for B = I.

        Examples
        --------
        >>> Polytope([[0, 0], [2, 0], [0, 2], [0.5, 0.5]]).owns_cells().tolist()
        [False, True, True, False]
        """
        S = self.scores(self.vertices, B)  # S[a, b] = <B v_a, v_b>
        own = np.diag(S).copy()
        np.fill_diagonal(S, -np.inf)
        return own > S.max(axis=1)

    def all_own_cells(self, B: ArrayLike | None = None) -> bool:
        """True if every vertex owns its cell (see :meth:`owns_cells`)."""
        return bool(np.all(self.owns_cells(B)))

    # ----------------------------------------------------------------- hull and membership

    @cached_property
    def _hull(self) -> _Hull:
        return _hull_geometry(self.vertices)

    @property
    def affine_dim(self) -> int:
        """Dimension of the affine hull of the vertices (d when K is full-dimensional)."""
        return self._hull.rank

    def hull_vertices(self) -> np.ndarray:
        """Sorted indices of the extreme points of K (points on an edge or inside are dropped).

        Examples
        --------
        >>> Polytope([[0, 0], [3, 0], [0, 3], [1, 1]]).hull_vertices().tolist()
        [0, 1, 2]
        """
        return self._hull.extreme.copy()

    def _facet_slack(self, x: np.ndarray):
        """Signed facet distances A x + b (<= 0 inside) and distance to the affine hull."""
        h = self._hull
        slack = x @ h.A.T + h.b
        off = np.linalg.norm((x - h.mean) @ h.normal, axis=-1)
        return slack, off

    def contains(self, x: ArrayLike, tol: float = 1e-12) -> np.ndarray:
        """Whether x lies in K, shape x.shape[:-1].

        x is accepted when its distance to the affine hull of K is <= tol and its signed
        distance to every facet hyperplane (in that affine hull) is <= tol. Works for d = 1,
        lower-dimensional K (a segment in R², a single point) and full-dimensional K.

        Examples
        --------
        >>> P = Polytope([[0.0, 0.0], [1.0, 1.0]])  # a segment in R²
        >>> P.contains([[0.5, 0.5], [0.5, 0.6], [2.0, 2.0]]).tolist()
        [True, False, False]
        """
        tol = real("tol", tol, low=0)
        slack, off = self._facet_slack(self._points(x))
        return np.all(slack <= tol, axis=-1) & (off <= tol)

    # ----------------------------------------------------------------- dominance cones

    def _dominance(self, a: int, eta: float, delta: float):
        """Cone slack <v_a − v_b, x> − δ|v_a − v_b| − η for b ≠ a, as (G, r): slack = x G − r."""
        diff = self.vertices[a] - np.delete(self.vertices, a, axis=0)  # rows v_a − v_b
        return diff.T, eta + delta * np.linalg.norm(diff, axis=1)

    def in_dominance_cone(
        self, x: ArrayLike, a: int, eta: float, *, tol: float = 1e-12
    ) -> np.ndarray:
        """Whether x is in I_a(η) = {x in K : <v_a − v_b, x> >= η for all b ≠ a}
        (docs: models#polytopes).

        ``tol`` applies to the membership in K only (see :meth:`contains`); the cone inequalities
        are tested as written.

        Examples
        --------
        >>> P = regular_polygon(4)
        >>> P.in_dominance_cone([[0.9, 0.0], [0.1, 0.0]], 0, 0.5).tolist()
        [True, False]
        """
        return self.in_eroded_cone(x, a, eta, 0.0, tol=tol)

    def in_eroded_cone(
        self, x: ArrayLike, a: int, eta: float, delta: float, *, tol: float = 1e-12
    ) -> np.ndarray:
        """Whether the closed ball B(x, δ) lies in I_a(η), i.e. x in I_a(η) ⊖ δ
        (docs: models#polytopes).

        I_a(η) is the polyhedron K ∩ {z : <v_b − v_a, z> <= −η, b ≠ a}, and a closed ball lies in
        {z : <g_k, z> <= h_k for all k} iff <g_k, x> + δ|g_k| <= h_k for every k. The facets of
        K enter with their unit normals. A lower-dimensional K contains no ball of positive
        radius, so for δ > 0 the erosion is empty (all False); δ = 0 is plain membership.
        ``tol`` applies to the facets of K only.

        Examples
        --------
        >>> P = regular_polygon(4)
        >>> P.in_eroded_cone([[0.95, 0.0], [0.6, 0.0]], 0, 0.2, 0.1).tolist()
        [False, True]
        """
        a = self._vertex_index(a)
        eta = real("eta", eta)
        delta = real("delta", delta, low=0)
        tol = real("tol", tol, low=0)
        x = self._points(x)
        if delta > 0 and self._hull.rank < self.dim:
            return np.zeros(x.shape[:-1], dtype=bool)
        slack, off = self._facet_slack(x)
        in_k = np.all(slack + delta <= tol, axis=-1) & (off <= tol)
        G, r = self._dominance(a, eta, delta)
        return in_k & np.all(x @ G >= r, axis=-1)

    def dominance_inradius(self, a: int, eta: float) -> float:
        """Radius r* of the largest closed ball inside I_a(η) (its Chebyshev radius).

        Solves the linear program max r subject to <g_k, z> + r|g_k| <= h_k over the facets of
        K and the cone halfspaces (docs: models#polytopes). The erosion I_a(η) ⊖ δ is non-empty iff
        δ <= r*. A negative r* means I_a(η) itself is empty; for lower-dimensional K, r* <= 0.

        Examples
        --------
        >>> P = regular_polygon(4)
        >>> round(P.dominance_inradius(0, 0.5), 4), P.dominance_inradius(0, 2.0) < 0
        (0.1768, True)
        """
        a = self._vertex_index(a)
        eta = real("eta", eta)
        h, d = self._hull, self.dim
        G, r = self._dominance(a, eta, 0.0)
        # Variables (z, r). K facets: A z + r <= −b; cone: −<v_a − v_b, z> + r|v_a − v_b| <= −η.
        k_rows = np.column_stack([h.A, np.ones(len(h.b))])
        cone_rows = np.column_stack([-G.T, np.linalg.norm(G, axis=0)])
        rows = np.vstack([k_rows, cone_rows])
        rhs = np.concatenate([-h.b, -r])
        flat = h.rank < d  # no ball of positive radius fits: stay in aff K and cap r at 0
        from scipy.optimize import linprog  # here: scipy.optimize takes 0.4 s to import

        res = linprog(
            np.r_[np.zeros(d), -1.0],
            A_ub=rows if len(rhs) else None,
            b_ub=rhs if len(rhs) else None,
            A_eq=np.column_stack([h.normal.T, np.zeros(d - h.rank)]) if flat else None,
            b_eq=h.normal.T @ h.mean if flat else None,
            bounds=[(None, None)] * d + [(None, 0.0 if flat else None)],
            method="highs",
        )
        if res.status != 0:
            raise RuntimeError(f"inradius LP failed for a={a}, eta={eta!r}: {res.message}")
        return float(-res.fun) + 0.0  # + 0.0 turns a -0.0 into 0.0

    # ----------------------------------------------------------------- sampling (used by configs)

    def _sample_uniform(self, n: int, gen: np.random.Generator) -> np.ndarray:
        """n points uniform on K for the Lebesgue measure of its affine hull.

        K is triangulated as the fan of simplices joining the vertex centroid (interior) to the
        triangulated boundary facets; a simplex is drawn with probability proportional to its
        volume, then a point with Dirichlet(1, ..., 1) barycentric weights (uniform in it).
        """
        h = self._hull
        if h.rank == 0:
            return np.repeat(self.vertices[:1], n, axis=0)
        if h.rank == 1:
            t = h.reduced[:, 0]
            y = gen.uniform(t.min(), t.max(), size=(n, 1))
        else:
            facets = h.reduced[h.simplices]  # (s, rank, rank); the apex is the centred origin
            vol = np.abs(np.linalg.det(facets))
            idx = gen.choice(len(vol), size=n, p=vol / vol.sum())
            w = gen.dirichlet(np.ones(h.rank + 1), size=n)
            y = np.einsum("ni,nij->nj", w[:, 1:], facets[idx])
        return h.mean + y @ h.basis.T

    # ----------------------------------------------------------------- serialisation

    def to_dict(self) -> dict:
        """Plain-Python form: ``{"name": str, "vertices": nested lists}``.

        Examples
        --------
        >>> Polytope.from_dict(simplex(2).to_dict()) == simplex(2)
        True
        """
        return {"name": self.name, "vertices": self.vertices.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> Polytope:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or "vertices" not in data:
            raise ValueError(f"data must be a dict with a 'vertices' key, got {data!r}")
        unknown = set(data) - {"vertices", "name"}
        if unknown:
            raise ValueError(f"data has unknown keys {sorted(unknown)!r}")
        return cls(data["vertices"], name=data.get("name", ""))


# --------------------------------------------------------------------------- constructors


def regular_polygon(k: int, radius: float = 1.0, phase: float = 0.0) -> Polytope:
    """Regular k-gon v_a = radius · (cos(2πa/k + phase), sin(2πa/k + phase)), a = 0..k−1.

    Equinorm, every vertex owns its cell, c0 = radius² (1 − cos(2π/k)); the interior angle
    (k − 2)π/k is acute only for k = 3.

    Parameters
    ----------
    k : int
        Number of vertices, >= 3 (two points are a segment: use ``simplex(1)``).
    radius : float, optional
        Norm of every vertex, > 0 (default 1).
    phase : float, optional
        Angle of the vertex a = 0, in radians (default 0).

    Returns
    -------
    polygon : Polytope
        The k-gon in R^2, named ``"regular-k"``.

    Examples
    --------
    >>> import math
    >>> import metastab as ms
    >>> P = ms.regular_polygon(5)
    >>> P.name, round(P.c0, 6), round(1 - math.cos(2 * math.pi / 5), 6)
    ('regular-5', 0.690983, 0.690983)
    """
    k = integer("k", k, 3)
    radius = real("radius", radius, low=0, low_open=True)
    phase = real("phase", phase)
    theta = 2 * np.pi * np.arange(k) / k + phase
    return Polytope(radius * np.column_stack([np.cos(theta), np.sin(theta)]), name=f"regular-{k}")


def random_polygon(
    k: int,
    *,
    equal_norm: bool = False,
    radial_range: tuple[float, float] = (0.4, 1.0),
    all_vertices: bool = True,
    own_cells: bool = True,
    B: ArrayLike | None = None,
    max_tries: int = 10_000,
    rng: RNGLike = None,
) -> Polytope:
    """Random polygon, the sampler of [FW]'s figure scripts, with rejection of unwanted draws.

    Draw k angles uniformly in [0, 2π), then k radii, 1 if ``equal_norm`` else uniform in
    ``radial_range`` (then ignored when ``equal_norm``), and order the points by angle: seed for
    seed the polygons of the scripts. Redraw until every point is an
    extreme point of the hull (``all_vertices``) and every vertex owns its cell for ``B``
    (``own_cells``, docs: models#polytopes).

    Parameters
    ----------
    k : int
        Number of points, >= 3.
    equal_norm : bool, optional
        Put every point on the unit circle (default False: radii uniform in ``radial_range``).
    radial_range : (float, float), optional
        The range (lo, hi) of the radii, 0 < lo <= hi, finite (default (0.4, 1.0)).
    all_vertices : bool, optional
        Redraw until every point is an extreme point of the hull (default True).
    own_cells : bool, optional
        Redraw until every vertex owns its cell for ``B`` (default True).
    B : array_like (2, 2), optional
        Key-query matrix for ``own_cells`` (default identity).
    max_tries : int, optional
        Number of draws before giving up with a RuntimeError (default 10 000).
    rng : None, int, SeedSequence or Generator, optional
        Seeds the draws (default None: fresh entropy).

    Returns
    -------
    polygon : Polytope
        The first accepted draw, its points in the order of their angles, named ``"random-k"``.

    Raises
    ------
    RuntimeError
        When no draw of ``max_tries`` is accepted.

    Examples
    --------
    >>> import metastab as ms
    >>> P = ms.random_polygon(6, rng=0)
    >>> P.n_vertices, len(P.hull_vertices()), P.all_own_cells()
    (6, 6, True)
    """
    k = integer("k", k, 3)
    max_tries = integer("max_tries", max_tries, 1)
    B = _check_matrix(B, 2)
    try:
        lo, hi = (float(v) for v in radial_range)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"radial_range must be a pair (lo, hi), got {radial_range!r}") from exc
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        raise ValueError(f"radial_range must satisfy 0 < lo <= hi (finite), got {radial_range!r}")
    gen = np.random.default_rng(rng)
    for _ in range(max_tries):
        theta = gen.uniform(0.0, 2 * np.pi, size=k)
        r = np.ones(k) if equal_norm else gen.uniform(lo, hi, size=k)
        order = np.argsort(theta)  # sort the (angle, radius) pairs together, as the scripts do
        theta, r = theta[order], r[order]
        V = r[:, None] * np.column_stack([np.cos(theta), np.sin(theta)])
        if len(np.unique(V, axis=0)) < k:  # probability zero, but Polytope would reject it
            continue
        P = Polytope(V, name=f"random-{k}")
        if all_vertices and len(P.hull_vertices()) < k:
            continue
        if own_cells and not P.all_own_cells(B):
            continue
        return P
    raise RuntimeError(
        f"random_polygon: no polygon with k={k} satisfying all_vertices={all_vertices}, "
        f"own_cells={own_cells} in max_tries={max_tries} draws"
    )


def simplex(d: int) -> Polytope:
    """Regular simplex in R^d: d + 1 unit vectors centred at the origin, <v_a, v_b> = −1/d.

    Built from the centred standard basis of R^{d+1} in the orthonormal (Helmert) basis of the
    sum-zero hyperplane, rescaled to unit norm. Equinorm, acute cones (every angle π/3), every
    vertex owns its cell for B = I, c0 = 1 + 1/d. ``simplex(1)`` is the segment [−1, 1].

    Parameters
    ----------
    d : int
        The dimension, >= 1.

    Returns
    -------
    simplex : Polytope
        The d + 1 vertices in R^d, named ``"simplex-d"``.

    Examples
    --------
    >>> import metastab as ms
    >>> S = ms.simplex(3)
    >>> S.vertices.shape, round(S.c0, 12), S.has_acute_cones()
    ((4, 3), 1.333333333333, True)
    """
    d = integer("d", d, 1)
    # Helmert rows: (1, ..., 1, −j, 0, ...)/√(j(j+1)), j = 1..d, orthonormal and ⟂ (1, ..., 1).
    H = np.zeros((d, d + 1))
    for j in range(1, d + 1):
        H[j - 1, :j] = 1.0
        H[j - 1, j] = -float(j)
        H[j - 1] /= math.sqrt(j * (j + 1))
    V = (np.eye(d + 1) - 1.0 / (d + 1)) @ H.T
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    return Polytope(V, name=f"simplex-{d}")


def cross_polytope(d: int) -> Polytope:
    """Cross-polytope conv{±e_i} in R^d, vertices e_1, ..., e_d, −e_1, ..., −e_d.

    Equinorm, every vertex owns its cell, c0 = 1 (2 for d = 1); for d >= 2 the cones have right
    angles (<e_j − e_i, −e_j − e_i> = 0), so the acute-cone hypothesis fails.

    Parameters
    ----------
    d : int
        The dimension, >= 1.

    Returns
    -------
    cross : Polytope
        The 2d vertices in R^d, named ``"cross-d"``.

    Examples
    --------
    >>> import metastab as ms
    >>> P = ms.cross_polytope(3)
    >>> P.vertices.shape, P.c0, P.has_acute_cones()
    ((6, 3), 1.0, False)
    """
    d = integer("d", d, 1)
    return Polytope(np.vstack([np.eye(d), -np.eye(d)]), name=f"cross-{d}")


def gaussian(k: int, d: int, *, rng: RNGLike = None) -> Polytope:
    """k points i.i.d. N(0, I_d / d), so that ‖v_a‖ ≈ 1 for large d.

    For fixed k and d → ∞ the points are nearly orthogonal with norms near 1, so every vertex
    owns its cell with high probability ([FW]'s d → ∞ remark); this is not enforced here, check
    :meth:`Polytope.all_own_cells`.

    Parameters
    ----------
    k : int
        Number of points, >= 1.
    d : int
        The dimension, >= 1.
    rng : None, int, SeedSequence or Generator, optional
        Seeds the draw (default None: fresh entropy).

    Returns
    -------
    points : Polytope
        The k points in R^d, named ``"gaussian-kxd"``.

    Examples
    --------
    >>> import metastab as ms
    >>> P = ms.gaussian(5, 200, rng=1)
    >>> P.vertices.shape, P.all_own_cells()
    ((5, 200), True)
    """
    k = integer("k", k, 1)
    d = integer("d", d, 1)
    gen = np.random.default_rng(rng)
    return Polytope(gen.standard_normal((k, d)) / math.sqrt(d), name=f"gaussian-{k}x{d}")
