"""The sphere models' order parameters m_1 and m_2 of a configuration (the leaves of
:mod:`..order`, compiled for the CPU): the events LEAVE_UNIFORM_* and REACH_UNIFORM_* and the
observables of :func:`metastab.track` and :func:`metastab.order_parameters` read these."""

from numba import njit, prange

from .. import order
from ..arith import mul
from ..cache import njit_keyed
from ..params import JIT, JIT_NO_NRT

# cached only while the kernel files it uses are unchanged (see cache)
_jit = njit_keyed()

# the two order parameters, in the columns of order_parameters' rows
ORDER_PARAMETERS = ("m1", "m2")


@njit(inline="always")
def _coord(x, i, k, n):
    """Coordinate k of token i: the rows of x."""
    return x[i, k]


_sum = njit(_nrt=False)(order.coordinate_sum(_coord))
_row = njit(_nrt=False)(order.moment_row(mul, _coord))
_m1 = njit(_nrt=False)(order.magnetisation)
_m2 = njit(_nrt=False)(order.quadrupole(mul))


@_jit(**JIT_NO_NRT)
def order_parameter(x, degree):
    """m_degree (1 or 2) of the configuration x (n×d, unit rows), the sums in the order of
    :mod:`..order`."""
    n, d = x.shape
    total = 0.0
    if degree == 1:
        for k in range(d):
            s = _sum(x, k, n)
            total += mul(s, s)
        return _m1(total, n)
    shift = n / d
    for k in range(d):
        total += _row(x, k, n, d, shift)
    return _m2(total, n, d)


@_jit(parallel=True, **JIT)
def order_parameters(X, out):
    """out[c] = (m_1, m_2) of configuration X[c], for every chain c in parallel."""
    for c in prange(X.shape[0]):
        out[c, 0] = order_parameter(X[c], 1)
        out[c, 1] = order_parameter(X[c], 2)
