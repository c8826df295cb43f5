"""Argument checks shared by the attention models and the SVM solvers of max-margin token
selection: each names the parameter and the value it refuses."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate

__all__ = ["as_labels", "as_mask", "as_queries", "as_token_indices", "as_tokens"]


def as_tokens(X: Any) -> tuple[np.ndarray, bool]:
    """X as a float64 (n, T, d) array; the flag says whether one T×d input was given."""
    try:
        a = np.array(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"X must be a numeric array of shape (n, T, d) or (T, d), got {X!r}"
        ) from None
    single = a.ndim == 2
    if single:
        a = a[None]
    if a.ndim != 3 or 0 in a.shape:
        raise ValueError(f"X must have shape (n, T, d) or (T, d), got shape {np.shape(X)}")
    if a.shape[1] < 2:
        raise ValueError(f"X must hold at least T = 2 tokens per input, got shape {np.shape(X)}")
    if not np.isfinite(a).all():
        where = np.argwhere(~np.isfinite(a))[0]
        at = list(where[1:]) if single else list(where)
        raise ValueError(f"X must be finite, got {a[tuple(where)]} at {[int(i) for i in at]}")
    return a, single


def as_token_indices(alpha: Any, n: int, T: int) -> np.ndarray:
    """Selected token per sample as an int array of length n, each in [0, T)."""
    if np.ndim(alpha) == 0:
        values = [alpha] * n
    elif np.ndim(alpha) == 1 and len(alpha) == n:
        values = list(alpha)
    else:
        raise ValueError(f"alpha must hold one token index per input (n = {n}), got {alpha!r}")
    out = np.array([_validate.integer("alpha", v, 0) for v in values], dtype=np.intp)
    if (out >= T).any():
        raise ValueError(f"alpha must be token indices in [0, {T - 1}], got {alpha!r}")
    return out


def as_mask(name: str, value: Any, n: int) -> np.ndarray:
    """A boolean mask over n samples, from None, a boolean sequence or a sequence of indices."""
    if value is None:
        return np.zeros(n, dtype=bool)
    a = np.asarray(value)
    if a.dtype == bool:
        if a.shape != (n,):
            raise ValueError(
                f"{name} must be a boolean mask of length n = {n} or sample indices, got {value!r}"
            )
        return a.copy()
    out = np.zeros(n, dtype=bool)
    for v in np.ravel(a).tolist() if a.ndim else [a.item()]:
        i = _validate.integer(name, v, 0)
        if i >= n:
            raise ValueError(f"{name} must hold sample indices in [0, {n - 1}], got {value!r}")
        out[i] = True
    return out


def as_labels(Y: Any, n: int) -> np.ndarray:
    """Labels Y as a float64 array of n values in {-1, +1}."""
    try:
        y = np.array(Y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"Y must be n labels in {{-1, +1}}, got {Y!r}") from None
    if np.ndim(Y) == 0 and n == 1:
        y = y.reshape(1)
    if y.shape != (n,) or not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(f"Y must be n = {n} labels in {{-1, +1}}, got {Y!r}")
    return y


def as_queries(Z: Any, n: int, d: int) -> np.ndarray:
    """Queries Z as a finite float64 (n, d) array (a vector when n = 1)."""
    try:
        a = np.array(Z, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"Z must be a numeric (n, d) array of queries, got {Z!r}") from None
    if a.ndim == 1 and n == 1:
        a = a[None]
    if a.shape != (n, d) or not np.isfinite(a).all():
        raise ValueError(f"Z must be a finite array of shape ({n}, {d}), got shape {a.shape}")
    return a
