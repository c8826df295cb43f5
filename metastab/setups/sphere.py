"""Initial configurations on the unit sphere S^{d-1}, for :mod:`metastab.models.sphere`'s models.

Every function returns a fresh float64 array of unit rows: one n×d configuration, or, with
``chains=C``, a C×n×d stack in which chain c (``first_chain <= c < first_chain + C``) is drawn
from its own stream, a pure function of (``rng``, c): the same chain gets the same start whatever
the number of chains or how a run is split (the streams of :mod:`metastab.rng` do the same for
the dynamics). Without ``chains`` the one configuration is drawn from
``numpy.random.default_rng(rng)``, like :mod:`metastab.setups.initial`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .._validate import integer, real
from ..models.sphere import first_off_sphere
from ..rng import RNGLike, as_seed

__all__ = ["sphere_uniform", "orthogonal", "caps", "to_sphere"]


def _draw(
    draw: Callable[[np.random.Generator], np.ndarray], chains, rng, first_chain
) -> np.ndarray:
    """One configuration from default_rng(rng), or chains of them, chain c from the child
    SeedSequence(entropy, spawn_key + (c,)) of the seed ``rng``."""
    if chains is None:
        if first_chain != 0:
            raise ValueError(f"first_chain needs chains, got first_chain={first_chain!r}")
        return draw(np.random.default_rng(rng))
    chains = integer("chains", chains, 1)
    first_chain = integer("first_chain", first_chain, 0)
    seed = as_seed(rng)
    out = []
    for c in range(first_chain, first_chain + chains):
        child = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (c,))
        out.append(draw(np.random.default_rng(child)))
    return np.stack(out)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def to_sphere(x: ArrayLike, tol: float = 1e-6) -> np.ndarray:
    """x with every row (token) divided by its norm, for a start written with too few digits.

    For a configuration that lies on the sphere up to the digits it was written with (a start
    printed to 8 digits is ~1e-9 off, beyond the runs' tolerance
    ``metastab.models.sphere.SPHERE_TOL``). The rows of an n×d or C×n×d ``x`` must have norms
    within ``tol`` of 1: a farther one is an error, not a start to project.

    Parameters
    ----------
    x : array_like, shape (n, d) or (C, n, d)
        The configuration(s), rows of norm within ``tol`` of 1.
    tol : float >= 0
        The largest distance of a row's norm from 1 accepted (default 1e-6).

    Returns
    -------
    on_sphere : ndarray of float64, the shape of ``x``
        ``x`` with each row divided by its norm.

    Raises
    ------
    ValueError
        When a row's norm is farther than ``tol`` from 1 (the message names the row).

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import to_sphere
    >>> y = to_sphere([[0.6, 0.80000001], [1.0, 0.0]])
    >>> bool(abs(np.linalg.norm(y, axis=1) - 1.0).max() <= 1e-15), y[1].tolist()
    (True, [1.0, 0.0])
    >>> to_sphere([[0.6, 0.9]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: x must have rows of norm within tol = 1e-06 of 1, got |x[0]| = 1.08166538264 ...
    """
    tol = real("tol", tol, low=0)
    x = np.array(x, dtype=float)
    if x.ndim not in (2, 3) or x.shape[-1] == 0:
        raise ValueError(f"x must be an n×d or C×n×d array, got shape {x.shape}")
    off = first_off_sphere(x, tol)
    if off is not None:
        raise ValueError(
            f"x must have rows of norm within tol = {tol:g} of 1, got |x{list(off[0])}| = "
            f"{off[1]:.12g} (draw a start with sphere_uniform, orthogonal or caps, or "
            f"normalise it yourself if that is what you mean)"
        )
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def sphere_uniform(
    n: int,
    d: int,
    *,
    span: bool = False,
    chains: int | None = None,
    rng: RNGLike = None,
    first_chain: int = 0,
) -> np.ndarray:
    """n points i.i.d. uniform on S^{d-1} (normalised standard Gaussians), any d >= 1.

    ``span=True`` gives each configuration as its coordinates in an orthonormal basis of the
    span of its points: n × min(n, d) instead of n × d, the same Gram matrix <x_i, x_j> (so,
    with B = V = I, the same cosines all along a sphere flow, which never leaves that span);
    for d > n the rows of Rᵀ from the QR factorisation xᵀ = QR of the n × d draw, for d <= n
    the draw itself. Only one n × d draw is held at a time.

    Parameters
    ----------
    n : int >= 1
        The number of points (tokens).
    d : int >= 1
        The dimension of the ambient space R^d.
    span : bool
        True: each configuration in coordinates of the span of its points (default False).
    chains : int >= 1, optional
        The number of configurations (default None: one n×d configuration).
    rng : None, int, SeedSequence or Generator
        The seed (default None: fresh entropy). With ``chains``, chain c is drawn from its own
        child stream of the seed; without, the configuration from ``numpy.random.default_rng(rng)``.
    first_chain : int >= 0
        The index of the first chain (default 0; with ``chains`` only): chain c is the same
        configuration in every call with the seed.

    Returns
    -------
    x : ndarray of float64, shape (n, d) or (chains, n, d)
        Unit rows; d is min(n, d) with ``span=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import sphere_uniform
    >>> x = sphere_uniform(32, 1024, chains=3, rng=1)
    >>> x.shape, bool(np.allclose(np.linalg.norm(x, axis=-1), 1.0))
    ((3, 32, 1024), True)
    >>> bool((sphere_uniform(32, 8, chains=2, rng=1, first_chain=1)[0]
    ...       == sphere_uniform(32, 8, chains=3, rng=1)[1]).all())   # chain 1 is chain 1
    True
    >>> y = sphere_uniform(32, 1024, span=True, chains=3, rng=1)
    >>> y.shape, bool(np.allclose(y @ y.transpose(0, 2, 1), x @ x.transpose(0, 2, 1)))
    ((3, 32, 32), True)
    """
    n, d = integer("n", n, 1), integer("d", d, 1)
    if span is not True and span is not False:
        raise ValueError(f"span must be True or False, got {span!r}")
    reduce = span and d > n

    def draw(g: np.random.Generator) -> np.ndarray:
        x = _unit(g.standard_normal((n, d)))
        return np.ascontiguousarray(np.linalg.qr(x.T)[1].T) if reduce else x

    return _draw(draw, chains, rng, first_chain)


def orthogonal(
    n: int,
    d: int,
    *,
    rotate: bool = False,
    chains: int | None = None,
    rng: RNGLike = None,
    first_chain: int = 0,
) -> np.ndarray:
    """n pairwise orthogonal unit vectors in R^d (d >= n), the start of [GLPR] Thm 6.8.

    ``rotate=False``: the basis vectors e_1, ..., e_n (no randomness); ``rotate=True``: a uniformly
    random orthonormal n-frame (QR of a Gaussian d×n matrix with the signs of R's diagonal fixed,
    which makes it Haar), per chain with ``chains``.

    Parameters
    ----------
    n : int >= 1
        The number of vectors (tokens).
    d : int >= n
        The dimension of the ambient space R^d.
    rotate : bool
        True: a random orthonormal frame; False (default): the first n basis vectors.
    chains : int >= 1, optional
        The number of configurations (default None: one n×d configuration).
    rng : None, int, SeedSequence or Generator
        The seed (default None: fresh entropy). With ``chains``, chain c is drawn from its own
        child stream of the seed; without, the configuration from ``numpy.random.default_rng(rng)``.
    first_chain : int >= 0
        The index of the first chain (default 0; with ``chains`` only): chain c is the same
        configuration in every call with the seed.

    Returns
    -------
    x : ndarray of float64, shape (n, d) or (chains, n, d)
        Pairwise orthogonal unit rows.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import orthogonal
    >>> orthogonal(2, 3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    >>> x = orthogonal(4, 6, rotate=True, rng=2)
    >>> bool(np.allclose(x @ x.T, np.eye(4)))
    True
    """
    n, d = integer("n", n, 1), integer("d", d, 1)
    if d < n:
        raise ValueError(f"orthogonal needs d >= n, got n={n}, d={d}")
    if rotate is not True and rotate is not False:
        raise ValueError(f"rotate must be True or False, got {rotate!r}")
    if not rotate:
        x = np.eye(n, d)
        return x if chains is None else np.repeat(x[None], integer("chains", chains, 1), axis=0)

    def draw(g: np.random.Generator) -> np.ndarray:
        q, r = np.linalg.qr(g.standard_normal((d, n)))
        return np.ascontiguousarray((q * np.sign(np.diag(r))).T)

    return _draw(draw, chains, rng, first_chain)


def _cap_angles(g: np.random.Generator, size: int, d: int, angle: float) -> np.ndarray:
    """Angles θ = arccos <x, c> of ``size`` points uniform in the cap {θ <= angle} of S^{d-1}.

    θ has density ∝ sin^{d-2} θ on [0, angle], drawn exactly by rejection. log sin is concave, so
    for angle < π/2 the density lies below its tangent exponential at θ = angle,
    ∝ e^{λ(θ - angle)} with λ = (d - 2) cot(angle), which is proposed (tight where the law
    crowds against the rim: high d, small caps); otherwise (and on the circle) the proposal is
    uniform under the bound sin^{d-2} θ <= 1. Acceptance tests in log space: no underflow at
    any d."""
    out = np.empty(size)
    filled = 0
    while filled < size:
        m = max(2 * (size - filled), 64)
        if d > 2 and angle < 0.5 * np.pi:
            lam = (d - 2) / np.tan(angle)
            theta = angle + np.log1p(g.random(m) * np.expm1(-lam * angle)) / lam
            log_ratio = (d - 2) * (np.log(np.sin(theta)) - np.log(np.sin(angle)))
            log_accept = log_ratio - lam * (theta - angle)
        else:
            theta = g.uniform(0.0, angle, m)
            log_accept = (d - 2) * np.log(np.sin(theta)) if d > 2 else np.zeros(m)
        keep = theta[np.log(g.random(m)) < log_accept][: size - filled]
        out[filled : filled + keep.size] = keep
        filled += keep.size
    return out


def caps(
    centres: ArrayLike,
    sizes: ArrayLike,
    angle: float,
    *,
    chains: int | None = None,
    rng: RNGLike = None,
    first_chain: int = 0,
) -> np.ndarray:
    """``sizes[a]`` points i.i.d. uniform in the spherical cap of angular radius ``angle`` around
    the direction ``centres[a]`` (normalised here: any nonzero vector), in the order of the caps.

    Parameters
    ----------
    centres : (k, d) array, d >= 2
        The caps' centre directions (any nonzero vectors: each is normalised).
    sizes : k integers >= 1
        The number of points in each cap.
    angle : float in (0, pi]
        The cap {x : <x, c> >= cos(angle)}.
    chains : int >= 1, optional
        The number of configurations (default None: one n×d configuration).
    rng : None, int, SeedSequence or Generator
        The seed (default None: fresh entropy). With ``chains``, chain c is drawn from its own
        child stream of the seed; without, the configuration from ``numpy.random.default_rng(rng)``.
    first_chain : int >= 0
        The index of the first chain (default 0; with ``chains`` only): chain c is the same
        configuration in every call with the seed.

    Returns
    -------
    x : ndarray of float64, shape (sum(sizes), d) or (chains, sum(sizes), d)
        Unit rows: the points of cap 0, then those of cap 1, and so on.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import caps
    >>> x = caps([[1.0, 0.0, 0.0], [0.0, 0.0, -2.0]], [3, 2], 0.1, rng=0)
    >>> x.shape, bool((x[:3, 0] >= np.cos(0.1)).all()), bool((x[3:, 2] <= -np.cos(0.1)).all())
    ((5, 3), True, True)
    """
    c = np.array(centres, dtype=float, ndmin=2)
    if c.ndim != 2 or c.shape[1] < 2 or not np.isfinite(c).all():
        raise ValueError(f"centres must be a finite k×d array with d >= 2, got shape {c.shape}")
    norms = np.linalg.norm(c, axis=1)
    if (norms == 0).any():
        raise ValueError(f"centres must be nonzero, got centres[{int(np.argmin(norms))}] = 0")
    c = c / norms[:, None]
    m = np.array(sizes, ndmin=1)
    if m.ndim != 1 or m.size != len(c) or not np.issubdtype(m.dtype, np.integer) or (m < 1).any():
        raise ValueError(
            f"sizes must be {len(c)} integers >= 1 (one per centre), got {np.asarray(sizes)!r}"
        )
    angle = real("angle", angle, low=0, high=np.pi, low_open=True)
    d = c.shape[1]

    def draw(g: np.random.Generator) -> np.ndarray:
        out = []
        for centre, size in zip(c, m.tolist()):
            theta = _cap_angles(g, size, d, angle)
            # a uniform direction orthogonal to the centre
            w = g.standard_normal((size, d))
            w -= np.outer(w @ centre, centre)
            w = _unit(w)
            out.append(np.cos(theta)[:, None] * centre + np.sin(theta)[:, None] * w)
        return _unit(np.concatenate(out))

    return _draw(draw, chains, rng, first_chain)
