"""Call one kernel step with freshly allocated buffers (shared by the bit-for-bit tests)."""

import numpy as np

from metastab.kernels.cpu import euclidean_steps as _steps
from metastab.models import NEIGHBOUR_RULES


def split_gamma(gamma, d):
    g = np.asarray(gamma, dtype=float)
    if g.ndim == 2:
        return 1.0, np.ascontiguousarray(g), True
    return float(g), np.eye(d), False


def k_chain(x, B, beta, gamma, u, state=None):
    """One kernel step; ``state`` (uint64[4], advanced in place) feeds the rare extra draws."""
    x = np.ascontiguousarray(x, dtype=float)
    n, d = x.shape
    g, P, use_P = split_gamma(gamma, d)
    out = np.full((n, d), np.nan)
    if state is None:
        state = np.array([1, 2, 3, 4], dtype=np.uint64)
    work = _steps.chain_work(n, d)
    _steps.chain_step(
        x,
        np.ascontiguousarray(B, dtype=float),
        float(beta),
        g,
        P,
        use_P,
        np.asarray(u, dtype=float),
        state,
        out,
        work,
        work[-1],
    )
    return out


def k_flow(x, B, beta, gamma):
    x = np.ascontiguousarray(x, dtype=float)
    n, d = x.shape
    g, P, use_P = split_gamma(gamma, d)
    out = np.full((n, d), np.nan)
    _steps.softmax_flow_step(
        x,
        np.ascontiguousarray(B, dtype=float),
        float(beta),
        g,
        P,
        use_P,
        out,
        _steps.softmax_flow_work(n, d),
    )
    return out


def k_hardmax(x, B, gamma, ties="index", tol=0.0):
    x = np.ascontiguousarray(x, dtype=float)
    n, d = x.shape
    g, P, use_P = split_gamma(gamma, d)
    out = np.full((n, d), np.nan)
    _steps.hardmax_step(
        x,
        np.ascontiguousarray(B, dtype=float),
        g,
        P,
        use_P,
        ties == "point",
        float(tol),
        out,
        _steps.hardmax_work(n, d),
    )
    return out


def k_localmax(x, B, gamma, r, rule):
    x = np.ascontiguousarray(x, dtype=float)
    n, d = x.shape
    g, P, use_P = split_gamma(gamma, d)
    out = np.full((n, d), np.nan)
    _steps.localmax_step(
        x,
        np.ascontiguousarray(B, dtype=float),
        g,
        P,
        use_P,
        float(r),
        NEIGHBOUR_RULES[rule],
        out,
        _steps.localmax_work(n, d),
    )
    return out
