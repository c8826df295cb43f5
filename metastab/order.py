"""The order parameters of tokens on the unit sphere: how far a configuration is from the
uniform state (docs: models#order-parameters).

For n tokens x_1..x_n on S^{d−1}, with empirical measure μ_n = (1/n) Σ_i δ_{x_i}, the amplitudes of
its first spherical harmonics:

- m_1 = ‖(1/n) Σ_i x_i‖, the magnetisation (degree 1);
- m_2 = ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F / √((d − 1)/d) (degree 2), normalised so that one cluster
  gives 1 (there ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F² = (d − 1)/d).

Both lie in [0, 1]: 0 at the uniform measure (and at any configuration whose first moments are
its, such as an orthonormal frame ±e_k), O(n^{−1/2}) for n i.i.d. uniform tokens, m_1 = 1 at one
cluster and m_2 = 1 at one cluster or an antipodal pair. They are the modes whose instability
makes the noisy model leave its uniform state (:mod:`metastab.theory.noisy`).

The numbers are those that the events :class:`~metastab.LeaveUniform` and
:class:`~metastab.ReachUniform` compare with their level and that :func:`metastab.track` records,
bit for bit (one kernel, :mod:`metastab.kernels.cpu.order`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["ORDER_PARAMETERS", "order_parameter", "order_parameters"]

# the columns of order_parameters
ORDER_PARAMETERS = ("m1", "m2")


def _configurations(x: ArrayLike) -> tuple[np.ndarray, bool]:
    """(chains×n×d float64 copy, whether x was one n×d configuration), validated."""
    from .models.sphere import check_on_sphere

    try:
        a = np.array(x, dtype=np.float64, order="C")
    except (TypeError, ValueError):
        raise ValueError(f"x must be a numeric n×d or chains×n×d array, got {x!r}") from None
    if a.ndim not in (2, 3) or 0 in a.shape:
        raise ValueError(f"x must be a non-empty n×d or chains×n×d array, got shape {a.shape}")
    if a.shape[-1] < 2:
        raise ValueError(f"x must hold tokens in R^d with d >= 2, got d={a.shape[-1]}")
    check_on_sphere(a)
    single = a.ndim == 2
    return (a[None] if single else a), single


def order_parameters(x: ArrayLike) -> np.ndarray:
    """(m_1, m_2) of each configuration (module notes): shape (2,) for one n×d configuration,
    (chains, 2) for chains×n×d; the columns are :data:`ORDER_PARAMETERS`.

    Parameters
    ----------
    x : array_like
        Tokens on the unit sphere (each norm within ``SPHERE_TOL`` of 1), n×d or chains×n×d,
        d >= 2.

    Returns
    -------
    m : ndarray
        (m_1, m_2), shape (2,) for one configuration, (chains, 2) for chains.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import order_parameters
    >>> order_parameters(np.array([[1.0, 0.0], [1.0, 0.0]]))  # one cluster
    array([1., 1.])
    >>> order_parameters(np.array([[1.0, 0.0], [-1.0, 0.0]]))  # an antipodal pair
    array([0., 1.])
    >>> order_parameters(np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]))
    array([0., 0.])
    """
    from .kernels.cpu.order import order_parameters as kernel

    X, single = _configurations(x)
    out = np.empty((X.shape[0], 2))
    kernel(X, out)
    return out[0] if single else out


def order_parameter(x: ArrayLike, degree: int = 1) -> float | np.ndarray:
    """m_degree (1: the magnetisation m_1, 2: m_2; module notes) of one n×d configuration (a
    float) or of each of chains×n×d (an array of chains).

    Parameters
    ----------
    x : array_like
        Tokens on the unit sphere, n×d or chains×n×d (as :func:`order_parameters` takes them).
    degree : {1, 2}
        The harmonic's degree (default 1).

    Returns
    -------
    m : float or ndarray
        m_degree of the configuration, or of each chain.

    Examples
    --------
    >>> from metastab import order_parameter
    >>> order_parameter([[0.6, 0.8], [0.6, 0.8], [-0.6, -0.8]])  # doctest: +ELLIPSIS
    0.333...
    """
    from .events import LeaveUniform

    degree = LeaveUniform(1.0, degree).degree  # validated as the events validate it
    m = order_parameters(x)[..., degree - 1]
    return float(m) if m.ndim == 0 else m
