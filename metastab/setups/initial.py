"""Initial configurations: pure functions of (polytope, n, ..., rng) returning an n×d array.

Every function returns a fresh, writable float64 array of shape (n, d); tokens are rows. The
starts on the unit sphere (:mod:`metastab.setups.sphere`: ``sphere_uniform``, ``orthogonal``,
``caps``) are named here too, so that ``metastab.initial`` holds every initial configuration.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from .._validate import integer, real
from .polytopes import Polytope
from .sphere import caps, orthogonal, sphere_uniform

# what numpy.random.default_rng accepts
RandomState = int | np.random.SeedSequence | np.random.Generator | None

__all__ = [
    "near_vertices",
    "in_cells",
    "uniform_in",
    "repeated_points",
    "shrunk",
    "from_file",
    # on the sphere (setups/sphere.py)
    "sphere_uniform",
    "orthogonal",
    "caps",
]


def _check_polytope(polytope) -> Polytope:
    if not isinstance(polytope, Polytope):
        raise ValueError(f"polytope must be a Polytope, got {type(polytope).__name__}")
    return polytope


def _check_n(n, polytope: Polytope) -> int:
    n = integer("n", n, 1)
    if n < polytope.n_vertices:
        raise ValueError(f"n must be >= the number of vertices {polytope.n_vertices}, got {n!r}")
    return n


def uniform_in(polytope: Polytope, n: int, *, rng: RandomState = None) -> np.ndarray:
    """n points i.i.d. uniform on K = conv{v_a}.

    Uniform for the Lebesgue measure of the affine hull of K, so a lower-dimensional K (a segment
    in R², a triangle in R³) gets its own-dimensional uniform law and a single point is repeated.
    Exact, without rejection: K is triangulated as a fan from the vertex centroid over its
    triangulated boundary facets, a simplex is drawn with probability proportional to its
    volume and a point in it with Dirichlet(1, ..., 1) barycentric weights.

    Parameters
    ----------
    polytope : Polytope
        The polytope K.
    n : int
        Number of points, >= 0.
    rng : None, int, SeedSequence or Generator, optional
        Seeds the draw (default None: fresh entropy).

    Returns
    -------
    X : ndarray, shape (n, d)
        The points, one a row.

    Examples
    --------
    >>> import metastab as ms
    >>> P = ms.regular_polygon(5)
    >>> X = ms.uniform_in(P, 100, rng=0)
    >>> X.shape, bool(P.contains(X).all())
    ((100, 2), True)
    """
    polytope = _check_polytope(polytope)
    n = integer("n", n, 0)
    return polytope._sample_uniform(n, np.random.default_rng(rng))


def in_cells(polytope: Polytope, n: int, *, rng: RandomState = None) -> np.ndarray:
    """Tokens 0..κ−1 at the vertices v_0..v_{κ−1}; tokens κ..n−1 i.i.d. uniform on K.

    The other tokens are drawn by :func:`uniform_in` (uniform for the Lebesgue measure of the
    affine hull of K, which also covers lower-dimensional K). Each lies in the cell C_σ(x) of
    docs: models#polytopes; ties between cells have probability zero.

    Parameters
    ----------
    polytope : Polytope
        The polytope K, with κ points v_a.
    n : int
        Number of tokens, n >= κ.
    rng : None, int, SeedSequence or Generator, optional
        Seeds the draw of tokens κ..n−1 (default None: fresh entropy).

    Returns
    -------
    X : ndarray, shape (n, d)
        The tokens, one a row.

    Examples
    --------
    >>> import numpy as np
    >>> import metastab as ms
    >>> X = ms.in_cells(ms.simplex(2), 10, rng=1)
    >>> X.shape, bool(np.array_equal(X[:3], ms.simplex(2).vertices))
    ((10, 2), True)
    """
    polytope = _check_polytope(polytope)
    n = _check_n(n, polytope)
    k = polytope.n_vertices
    X = np.empty((n, polytope.dim))
    X[:k] = polytope.vertices
    X[k:] = uniform_in(polytope, n - k, rng=rng)
    return X


def _eroded_cone(polytope: Polytope, a: int, eta: float, delta: float) -> Polytope:
    """I_a(η) ⊖ δ as the convex hull of its corners (docs: models#polytopes).

    A closed ball B(x, δ) lies in {z : <g, z> <= c} iff <g, x> + δ|g| <= c, so the erosion is the
    polyhedron cut out by the facets of K moved inwards by δ (unit normals) and the cone
    half-spaces <v_a − v_b, x> >= η + δ|v_a − v_b|; its corners are the intersections of those
    half-spaces, found from an interior point (the centre of its largest inscribed ball).
    Raises ValueError when it has no interior.
    """
    from scipy.optimize import linprog
    from scipy.spatial import HalfspaceIntersection, QhullError

    h = polytope._hull
    G, r = polytope._dominance(a, eta, delta)
    # scipy's form: rows [A, b] meaning A x + b <= 0
    spaces = np.vstack([np.column_stack([h.A, h.b + delta]), np.column_stack([-G.T, r])])
    norms = np.linalg.norm(spaces[:, :-1], axis=1)
    cheb = linprog(
        np.r_[np.zeros(polytope.dim), -1.0],
        A_ub=np.column_stack([spaces[:, :-1], norms]),
        b_ub=-spaces[:, -1],
        bounds=[(None, None)] * polytope.dim + [(0, None)],
        method="highs",
    )
    scale = max(1.0, float(np.abs(polytope.vertices).max()))
    if cheb.status != 0 or cheb.x[-1] <= 1e-9 * scale:
        raise ValueError(
            f"the eroded dominance cone of vertex a={a} has no interior at "
            f"eta={eta:.4g}, delta={delta:.4g}; increase beta"
        )
    try:
        corners = HalfspaceIntersection(spaces, cheb.x[:-1]).intersections
    except QhullError as exc:  # pragma: no cover - a centre strictly inside always works
        raise ValueError(f"the eroded dominance cone of vertex a={a}: {exc}") from None
    # several facets through one corner give copies of it up to roundoff
    _, keep = np.unique(np.round(corners / scale, 9), axis=0, return_index=True)
    return Polytope(corners[np.sort(keep)])


def near_vertices(
    polytope: Polytope,
    n: int,
    beta: float,
    gamma: float | None = None,
    *,
    max_tries: int = 100_000,
    rng: RandomState = None,
) -> np.ndarray:
    """The initial condition of Thm 5.2: tokens at the vertices and deep in their cells' cones.

    The condition of [FW] Thm 5.2 (docs: models#statements-fw). Tokens 0..κ−1 sit exactly
    at v_0..v_{κ−1}. Token i >= κ is given the vertex a = (i − κ) mod κ (round robin, so every group
    is populated as soon as n >= 2κ) and is drawn uniformly in the eroded dominance cone
    I_a(β^{−1/8}) ⊖ β^{−1/4}, exactly: the eroded cone is a polytope (the half-spaces of K moved
    inwards by δ and the cone half-spaces <v_a − v_b, x> >= η + δ|v_a − v_b|), whose corners are
    computed once and which is then sampled like K (:func:`uniform_in`: a fan of simplices,
    Dirichlet weights). The cost does not depend on how small the cone is. Then
    ``polytope.assign(x) == a``.

    The theorem's other hypotheses (B = I, equinorm, acute cones, c0 > 0) are not checked
    here; see :meth:`Polytope.is_equinorm`, :meth:`Polytope.has_acute_cones`.

    Parameters
    ----------
    polytope : Polytope
        Full-dimensional (a lower-dimensional K has empty erosions).
    n : int
        Number of tokens, n >= κ.
    beta : float
        Inverse temperature β > 0; sets η = β^{−1/8} and δ = β^{−1/4}.
    gamma : float, optional
        Step size, accepted for symmetry with the theorem and validated in (0, 1]; it does not
        change the sampling.
    max_tries : int, optional
        Maximal number of draws per vertex group. A draw is redrawn only when roundoff puts it
        a hair outside the cone (a point on a face of the corners' hull), so the default
        (100 000) is never reached in practice.
    rng : None, int, SeedSequence or Generator, optional
        Seeds the draws (default None: fresh entropy).

    Returns
    -------
    X : ndarray, shape (n, d)
        The tokens, one a row; token i >= κ in the eroded cone of vertex (i − κ) mod κ.

    Raises
    ------
    ValueError
        If an eroded cone is empty or has no interior at this β (then β must be larger).

    Examples
    --------
    >>> import metastab as ms
    >>> S = ms.simplex(2)
    >>> X = ms.near_vertices(S, 9, beta=1e4, rng=0)
    >>> S.assign(X).tolist()
    [0, 1, 2, 0, 1, 2, 0, 1, 2]
    """
    polytope = _check_polytope(polytope)
    n = _check_n(n, polytope)
    beta = real("beta", beta, low=0, low_open=True)
    if gamma is not None:
        gamma = real("gamma", gamma, low=0, high=1, low_open=True)
    max_tries = integer("max_tries", max_tries, 1)
    gen = np.random.default_rng(rng)
    k = polytope.n_vertices
    eta, delta = beta ** (-1 / 8), beta ** (-1 / 4)

    X = np.empty((n, polytope.dim))
    X[:k] = polytope.vertices
    for a in range(k):
        rows = np.arange(k + a, n, k)
        if len(rows) == 0:
            continue
        radius = polytope.dominance_inradius(a, eta)
        if radius < delta:
            raise ValueError(
                f"the eroded dominance cone I_a(beta^(-1/8)) ⊖ beta^(-1/4) is empty for vertex "
                f"a={a} at beta={beta!r}: the largest ball in I_a(eta={eta:.4g}) has radius "
                f"{radius:.4g} < delta={delta:.4g}; increase beta"
            )
        cone = _eroded_cone(polytope, a, eta, delta)
        todo, tries = rows, 0
        while todo.size:
            if tries + todo.size > max_tries:
                raise ValueError(
                    f"near_vertices: max_tries={max_tries} draws for vertex a={a} "
                    f"at beta={beta!r} did not give {len(rows)} points in the cone"
                )
            tries += todo.size
            X[todo] = cone._sample_uniform(todo.size, gen)
            todo = todo[~polytope.in_eroded_cone(X[todo], a, eta, delta)]
    return X


def repeated_points(points: ArrayLike, multiplicities: ArrayLike) -> np.ndarray:
    """Points repeated with multiplicities, in order: row a appears m_a times.

    The frozen configurations of the exact laws in docs: models#frozen-law (κ distinct points
    with multiplicities m_a). ``clusters``, its former name, is a deprecated alias (the name is
    the event's, :class:`metastab.Clusters`).

    Parameters
    ----------
    points : array_like, shape (κ, d)
        The distinct points, finite.
    multiplicities : array_like of int, shape (κ,)
        How many times each point appears, each >= 1.

    Returns
    -------
    X : ndarray, shape (Σ m_a, d)
        The tokens: m_0 copies of row 0, then m_1 copies of row 1, and so on.

    Examples
    --------
    >>> import metastab as ms
    >>> ms.repeated_points([[0.0, 1.0], [2.0, 3.0]], [2, 1]).tolist()
    [[0.0, 1.0], [0.0, 1.0], [2.0, 3.0]]
    """
    P = np.asarray(points, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] < 1 or P.shape[1] < 1:
        raise ValueError(f"points must have shape (κ, d) with κ, d >= 1, got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError("points must be finite, got non-finite entries")
    m = np.asarray(multiplicities)
    if m.shape != (P.shape[0],):
        raise ValueError(f"multiplicities must have shape ({P.shape[0]},), got shape {m.shape}")
    if m.dtype == bool or not np.issubdtype(m.dtype, np.integer):
        raise ValueError(f"multiplicities must be integers, got {multiplicities!r}")
    if np.any(m < 1):
        raise ValueError(f"multiplicities must all be >= 1, got {multiplicities!r}")
    return np.repeat(P, m, axis=0)


def clusters(points: ArrayLike, multiplicities: ArrayLike) -> np.ndarray:
    """Deprecated alias of :func:`repeated_points` (``clusters`` names the event
    :class:`metastab.Clusters`); warns and calls it."""
    warnings.warn(
        "metastab.setups.initial.clusters is deprecated: use repeated_points",
        DeprecationWarning,
        stacklevel=2,
    )
    return repeated_points(points, multiplicities)


def shrunk(polytope: Polytope, n: int, factor: float) -> np.ndarray:
    """Tokens 0..κ−1 at the vertices v_a, token i >= κ at factor·v_a with a = (i − κ) mod κ.

    The default initial configuration of the command line (``--init shrunk:F``) and of
    ``metastab demo``: every group {a, κ + a, 2κ + a, ...} lies on the segment from factor·v_a
    to v_a, in the cell of v_a when 0 < factor <= 1 and v_a owns its cell.

    Parameters
    ----------
    polytope : Polytope
        The polytope K, with κ points v_a.
    n : int
        Number of tokens, n >= κ.
    factor : float
        The shrink factor, in [0, 1].

    Returns
    -------
    X : ndarray, shape (n, d)
        The tokens, one a row.

    Examples
    --------
    >>> import metastab as ms
    >>> ms.shrunk(ms.regular_polygon(4), 6, 0.5)[4:].round(12).tolist()
    [[0.5, 0.0], [0.0, 0.5]]
    """
    polytope = _check_polytope(polytope)
    n = _check_n(n, polytope)
    factor = real("shrink factor", factor, low=0, high=1)
    k = polytope.n_vertices
    X = np.empty((n, polytope.dim))
    X[:k] = polytope.vertices
    X[k:] = factor * polytope.vertices[np.arange(n - k) % k]
    return X


def from_file(path: str | Path, dim: int | None = None) -> np.ndarray:
    """The n×d (or chains×n×d) array of initial tokens stored in a file.

    The file is a ``.npy`` file, or a table of numbers without a header (``.csv``
    comma-separated, anything else whitespace-separated). Every error names the file.

    Parameters
    ----------
    path : str or Path
        The file.
    dim : int, optional
        The dimension the points must have (default None: any).

    Returns
    -------
    X : ndarray, shape (n, d) or (chains, n, d)
        The array, as float64.

    Raises
    ------
    FileNotFoundError
        When there is no such file.
    ValueError
        When the file cannot be read as an array of real numbers of 2 or 3 dimensions, or its
        points are not in R^dim.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from metastab.setups.initial import from_file
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     np.save(os.path.join(tmp, "x0.npy"), np.eye(2))
    ...     from_file(os.path.join(tmp, "x0.npy"), dim=2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    path_text = str(path)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path_text!r}")
    if path.suffix == ".npy":
        with open(path, "rb") as fh:
            if fh.read(6) != b"\x93NUMPY":
                raise ValueError(
                    f"{path_text!r} is not a .npy file (no NumPy header): write it "
                    f"with numpy.save, or name a text table .csv or .txt"
                )
    try:
        if path.suffix == ".npy":
            x = np.load(path, allow_pickle=False)
        else:
            with warnings.catch_warnings():  # an empty file: said below, in one line
                warnings.simplefilter("ignore", UserWarning)
                x = np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=2)
    except (ValueError, OSError, EOFError) as exc:
        kind = "a .npy array" if path.suffix == ".npy" else "a table of numbers (no header)"
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(f"cannot read {path_text!r} as {kind}: {why}") from None
    if x.size == 0:
        raise ValueError(f"{path_text!r} holds no numbers")
    if x.ndim not in (2, 3):
        raise ValueError(f"{path_text!r} must hold an n×d or chains×n×d array, got shape {x.shape}")
    if x.dtype.kind not in "biuf":
        raise ValueError(f"{path_text!r} must hold real numbers, got dtype {x.dtype}")
    if dim is not None and x.shape[-1] != dim:
        raise ValueError(
            f"{path_text!r} holds points in R^{x.shape[-1]} (shape {x.shape}) but "
            f"the polytope is in R^{dim}"
        )
    return np.asarray(x, dtype=float)
