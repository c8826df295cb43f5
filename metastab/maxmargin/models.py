"""Attention models of max-margin token selection: outputs, risks, gradients, trainers.

Prompt attention ([MM]) and self/cross attention ([SVM]) trained by plain or normalised gradient
descent on the logistic or linear loss, in float64 with the cancellation-free softmax derivative
(docs: models#mm-training); token scores, globally optimal tokens and locally optimal selections
(§1.2). The notes of :mod:`metastab.maxmargin` state the models.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from .. import _validate
from .checks import as_labels, as_queries, as_token_indices, as_tokens
from .svm import SVMResult, att_svm, att_svm_w

__all__ = [
    "LOSSES",
    "LocalOptimality",
    "attention",
    "correlation",
    "grad_p",
    "grad_w",
    "hardmax_gap_bound",
    "local_optimality",
    "optimal_tokens",
    "predict",
    "risk",
    "self_attention",
    "token_scores",
    "train_joint",
    "train_kq",
    "train_p",
    "train_w",
]

LOSSES = ("logistic", "linear")


# --------------------------------------------------------------------------------------------
# validation


def _vector(name: str, value, d: int) -> np.ndarray:
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric vector of length {d}, got {value!r}") from None
    if a.shape != (d,):
        raise ValueError(f"{name} must be a vector of length d = {d}, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return a


def _loss(loss) -> str:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    return loss


def _schedule(steps, lr, normalized):
    steps = _validate.integer("steps", steps, 0)
    lr = _validate.real("lr", lr, low=0.0, low_open=True)
    if not isinstance(normalized, (bool, np.bool_)):
        raise ValueError(f"normalized must be True or False, got {normalized!r}")
    return steps, lr, bool(normalized)


def _problem(X, Y, v):
    X3, _ = as_tokens(X)
    n, T, d = X3.shape
    return X3, as_labels(Y, n), _vector("v", v, d)


# --------------------------------------------------------------------------------------------
# forward pass and gradients (arrays with any leading batch axes)


def _softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _head(a, g):
    """Softmax s, output f = Σ s_t g_t and ∂f/∂a_t, cancellation-free (docs: models#mm-training)."""
    s = _softmax(a)
    r = np.argmax(a, axis=-1)[..., None]
    delta = g - np.take_along_axis(g, r, axis=-1)
    excess = np.sum(s * delta, axis=-1, keepdims=True)
    f = np.take_along_axis(g, r, axis=-1)[..., 0] + excess[..., 0]
    return s, f, s * (delta - excess)


def _dloss(u, loss):
    return -expit(-u) if loss == "logistic" else -np.ones_like(u)


def _lossvalue(u, loss):
    return np.logaddexp(0.0, -u) if loss == "logistic" else -u


def _weights(f, Y, loss):
    """(1/n) l'(Y_i f_i) Y_i per sample: the chain-rule weight of ∂f_i."""
    return _dloss(Y * f, loss) * Y / f.shape[-1]


# --------------------------------------------------------------------------------------------
# prompt attention ([MM])


def attention(X: ArrayLike, W: ArrayLike, p: ArrayLike) -> np.ndarray:
    """Softmax attention of the prompt model, s_i = softmax(X_i W p) (docs: models#mm-models).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    W : array_like, shape (d, d)
        The key-query matrix.
    p : array_like, shape (d,)
        The prompt.

    Returns
    -------
    s : ndarray, shape (n, T), or (T,) for one (T, d) input
        The attention weights, each row summing to 1.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import attention
    >>> attention([[1.0, 0.0], [0.0, 0.0]], np.eye(2), [1e6, 0.0]).tolist()
    [1.0, 0.0]
    """
    X3, single = as_tokens(X)
    d = X3.shape[2]
    s = _softmax(X3 @ (_validate.matrix("W", W, d) @ _vector("p", p, d)))
    return s[0] if single else s


def predict(X: ArrayLike, v: ArrayLike, W: ArrayLike, p: ArrayLike) -> np.ndarray:
    """Outputs f(X_i) = <X_i v, softmax(X_i W p)> of the prompt model (docs: models#mm-models).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    v : array_like, shape (d,)
        The value (head) vector.
    W : array_like, shape (d, d)
        The key-query matrix.
    p : array_like, shape (d,)
        The prompt.

    Returns
    -------
    f : ndarray, shape (n,), or a 0-d array for one (T, d) input
        The outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> mm.predict(X, [0, 0, 1], W, [0, 0, 0]).round(6).tolist()    # p = 0: the mean value
    [0.933333]
    """
    X3, single = as_tokens(X)
    d = X3.shape[2]
    a = X3 @ (_validate.matrix("W", W, d) @ _vector("p", p, d))
    f = _head(a, X3 @ _vector("v", v, d))[1]
    return f[0] if single else f


def risk(
    X: ArrayLike, Y: ArrayLike, v: ArrayLike, W: ArrayLike, p: ArrayLike, *, loss: str = "logistic"
) -> float:
    """Empirical risk L(p) = (1/n) Σ_i l(Y_i f(X_i)) of the prompt model.

    The prompt model of docs: models#mm-models.

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    Y : array_like, shape (n,)
        The labels, each ±1.
    v : array_like, shape (d,)
        The value (head) vector.
    W : array_like, shape (d, d)
        The key-query matrix.
    p : array_like, shape (d,)
        The prompt.
    loss : {"logistic", "linear"}, optional
        l(u) = log(1 + e^{−u}) (default) or −u.

    Returns
    -------
    risk : float
        L(p).

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> round(mm.risk(X, [1], [0, 0, 1], W, [0, 0, 0], loss="linear"), 6)     # −f
    -0.933333
    """
    X3, Yv, vv = _problem(X, Y, v)
    d = X3.shape[2]
    a = X3 @ (_validate.matrix("W", W, d) @ _vector("p", p, d))
    return float(np.mean(_lossvalue(Yv * _head(a, X3 @ vv)[1], _loss(loss))))


def _grad_pv(X3, Y, v, W, p, loss):
    a = X3 @ (W @ p)
    s, f, c = _head(a, X3 @ v)
    w = _weights(f, Y, loss)
    gp = W.T @ np.einsum("i,it,itd->d", w, c, X3)
    gv = np.einsum("i,it,itd->d", w, s, X3)
    return gp, gv


def grad_p(
    X: ArrayLike, Y: ArrayLike, v: ArrayLike, W: ArrayLike, p: ArrayLike, *, loss: str = "logistic"
) -> np.ndarray:
    """∇_p L = (1/n) Σ_i l'(Y_i f_i) Y_i Σ_t (∂f_i/∂a_it) Wᵀ x_it (docs: models#mm-training).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    Y : array_like, shape (n,)
        The labels, each ±1.
    v : array_like, shape (d,)
        The value (head) vector.
    W : array_like, shape (d, d)
        The key-query matrix.
    p : array_like, shape (d,)
        The prompt.
    loss : {"logistic", "linear"}, optional
        l(u) = log(1 + e^{−u}) (default) or −u.

    Returns
    -------
    grad : ndarray, shape (d,)
        ∇_p L at ``p``.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> mm.grad_p(X, [1], [0, 0, 1], W, [0, 1, 0]).round(6).tolist()
    [0.004064, -0.006773, 0.0]
    """
    X3, Yv, vv = _problem(X, Y, v)
    d = X3.shape[2]
    return _grad_pv(X3, Yv, vv, _validate.matrix("W", W, d), _vector("p", p, d), _loss(loss))[0]


def _step(x, g, lr, normalized):
    if not normalized:
        return x - lr * g
    norm = float(np.linalg.norm(g))
    return x if norm == 0.0 else x - lr * g / norm


def _prompt_problem(X, Y, v, W, p0, steps, lr, normalized, loss):
    """The validated arguments of prompt-attention training (train_p, train_joint)."""
    X3, Yv, vv = _problem(X, Y, v)
    d = X3.shape[2]
    return (
        X3,
        Yv,
        vv,
        _validate.matrix("W", W, d),
        _vector("p0", p0, d),
        _schedule(steps, lr, normalized),
        _loss(loss),
    )


def train_p(
    X: ArrayLike,
    Y: ArrayLike,
    v: ArrayLike,
    W: ArrayLike,
    p0: ArrayLike,
    *,
    steps: int,
    lr: float = 0.1,
    normalized: bool = True,
    loss: str = "logistic",
) -> np.ndarray:
    """Gradient descent on the prompt p with v and W fixed ([MM]).

    The model and its training: docs: models#mm-models, #mm-training.

    p_{k+1} = p_k − η ∇L(p_k) / ||∇L(p_k)|| (``normalized``) or p_k − η ∇L(p_k), in float64 with
    the cancellation-free gradient; a normalised step with an exactly zero (underflowed) gradient
    leaves p unchanged.

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    Y : array_like, shape (n,)
        The labels, each ±1.
    v : array_like, shape (d,)
        The value (head) vector.
    W : array_like, shape (d, d)
        The key-query matrix.
    p0 : array_like, shape (d,)
        The initial prompt.
    steps : int
        The number of steps.
    lr : float, optional
        Step size η (default 0.1).
    normalized : bool, optional
        Normalised steps (default True) or plain ones.
    loss : {"logistic", "linear"}, optional
        l(u) = log(1 + e^{−u}) (default) or −u.

    Returns
    -------
    path : ndarray, shape (steps + 1, d)
        The iterates p_0, ..., p_steps.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> path = mm.train_p(X, [1], [0, 0, 1], W, [0, 1, 0], steps=1000)
    >>> pmm = mm.att_svm(X, 0, W).p
    >>> bool(mm.correlation(path[-1], pmm) > 0.999)
    True
    """
    X3, Yv, vv, Wm, p, (steps, lr, normalized), loss = _prompt_problem(
        X, Y, v, W, p0, steps, lr, normalized, loss
    )
    path = np.empty((steps + 1, p.size))
    path[0] = p
    for k in range(steps):
        p = _step(p, _grad_pv(X3, Yv, vv, Wm, p, loss)[0], lr, normalized)
        path[k + 1] = p
    return path


def train_joint(
    X: ArrayLike,
    Y: ArrayLike,
    v0: ArrayLike,
    W: ArrayLike,
    p0: ArrayLike,
    *,
    steps: int,
    lr: float = 0.1,
    normalized: bool = True,
    loss: str = "logistic",
) -> tuple[np.ndarray, np.ndarray]:
    """Joint gradient descent on (p, v): [MM]'s joint training.

    Both are updated from the same iterate; with ``normalized`` each of p and v takes a step of
    length η along its own normalised gradient, as in the official code (docs: models#mm-svm,
    #mm-experiments (E3)).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    Y : array_like, shape (n,)
        The labels, each ±1.
    v0 : array_like, shape (d,)
        The initial value vector.
    W : array_like, shape (d, d)
        The key-query matrix.
    p0 : array_like, shape (d,)
        The initial prompt.
    steps : int
        The number of steps.
    lr : float, optional
        Step size η (default 0.1).
    normalized : bool, optional
        Normalised steps (default True) or plain ones.
    loss : {"logistic", "linear"}, optional
        l(u) = log(1 + e^{−u}) (default) or −u.

    Returns
    -------
    p_path, v_path : ndarray, shape (steps + 1, d) each
        The iterates of p and of v.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> ps, vs = mm.train_joint(X, [1], [0, 0, 1], W, [0, 1, 0], steps=100)
    >>> before, after = (mm.risk(X, [1], vs[k], W, ps[k]) for k in (0, -1))
    >>> ps.shape, vs.shape, bool(after < before)
    ((101, 3), (101, 3), True)
    """
    X3, Yv, v, Wm, p, (steps, lr, normalized), loss = _prompt_problem(
        X, Y, v0, W, p0, steps, lr, normalized, loss
    )
    d = p.size
    ps, vs = np.empty((steps + 1, d)), np.empty((steps + 1, d))
    ps[0], vs[0] = p, v
    for k in range(steps):
        gp, gv = _grad_pv(X3, Yv, v, Wm, p, loss)
        p, v = _step(p, gp, lr, normalized), _step(v, gv, lr, normalized)
        ps[k + 1], vs[k + 1] = p, v
    return ps, vs


# --------------------------------------------------------------------------------------------
# self/cross attention ([SVM]); the first axis of X may index independent problems


def self_attention(X: ArrayLike, W: ArrayLike, Z: ArrayLike) -> np.ndarray:
    """Softmax attention s_i = softmax(X_i W z_i) of the W-parametrised layer (§1.3).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    W : array_like, shape (d, d)
        The key-query matrix.
    Z : array_like, shape (n, d)
        The queries z_i.

    Returns
    -------
    s : ndarray, shape (n, T)
        The attention weights, each row summing to 1.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> mm.self_attention(X, np.zeros((3, 3)), [[1.0, 0, 0]]).round(6).tolist()
    [[0.333333, 0.333333, 0.333333]]
    """
    X3, _ = as_tokens(X)
    n, _, d = X3.shape
    return _softmax(
        np.einsum("itd,de,ie->it", X3, _validate.matrix("W", W, d), as_queries(Z, n, d))
    )


def _grad_w_batch(X, g, Y, Z, W, loss):
    """∇_W L for problems stacked on the leading axes: (1/n) Σ_i l' Y_i (X_iᵀ c_i) z_iᵀ.

    ``g`` holds the token values vᵀx_it (shape (..., n, T)); logits a_it = x_itᵀ W z_i.
    """
    q = Z @ np.swapaxes(W, -1, -2)  # rows (W z_i)ᵀ
    a = (X @ q[..., None])[..., 0]
    _, f, c = _head(a, g)
    u = np.swapaxes(X, -1, -2) @ (c * _weights(f, Y, loss)[..., None])[..., None]  # (..., n, d, 1)
    return np.swapaxes(u[..., 0], -1, -2) @ Z


def grad_w(
    X: ArrayLike, Y: ArrayLike, v: ArrayLike, Z: ArrayLike, W: ArrayLike, *, loss: str = "logistic"
) -> np.ndarray:
    """∇_W L of the W-parametrised attention (docs: models#mm-training).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    Y : array_like, shape (n,)
        The labels, each ±1.
    v : array_like, shape (d,)
        The value (head) vector.
    Z : array_like, shape (n, d)
        The queries z_i.
    W : array_like, shape (d, d)
        The key-query matrix.
    loss : {"logistic", "linear"}, optional
        l(u) = log(1 + e^{−u}) (default) or −u.

    Returns
    -------
    grad : ndarray, shape (d, d)
        ∇_W L at ``W``.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> mm.grad_w(X, [1], [0, 0, 1], [[1.0, 0, 0]], W).shape
    (3, 3)
    """
    X3, Yv, vv = _problem(X, Y, v)
    n, _, d = X3.shape
    return _grad_w_batch(
        X3, X3 @ vv, Yv, as_queries(Z, n, d), _validate.matrix("W", W, d), _loss(loss)
    )


def _batch(X, Y, v, Z):
    """Stack of R problems: X (R, n, T, d), Y (R, n), v (R, d), Z (R, n, d)."""
    Xa = np.array(X, dtype=np.float64)
    batched = Xa.ndim == 4
    if Xa.ndim == 3:
        Xa, Ya, va, Za = (
            Xa[None],
            np.asarray(Y, float)[None],
            np.asarray(v, float)[None],
            np.asarray(Z, float)[None],
        )
    elif Xa.ndim == 4:
        Ya, va, Za = (np.asarray(Y, float), np.asarray(v, float), np.asarray(Z, float))
    else:
        raise ValueError(f"X must have shape (n, T, d) or (R, n, T, d), got shape {Xa.shape}")
    R, n, T, d = Xa.shape
    if Ya.shape != (R, n) or va.shape != (R, d) or Za.shape != (R, n, d):
        raise ValueError(
            f"for X of shape {Xa.shape}, Y, v and Z must have shapes {(R, n)}, "
            f"{(R, d)} and {(R, n, d)}, got {Ya.shape}, {va.shape} and {Za.shape}"
        )
    for r in range(R):  # the same checks as for one problem
        _problem(Xa[r], Ya[r], va[r])
        as_queries(Za[r], n, d)
    return Xa, Ya, va, Za, batched


def _nstep(x, g, lr, normalized):
    if not normalized:
        return x - lr * g
    norm = np.linalg.norm(g, axis=(-2, -1), keepdims=True)
    return x - lr * np.divide(g, norm, out=np.zeros_like(g), where=norm > 0)


def _matrices(name, M, R, d):
    a = np.array(M, dtype=np.float64)
    if a.ndim == 2:
        a = np.broadcast_to(a, (R, d, d)).copy()
    if a.shape != (R, d, d) or not np.isfinite(a).all():
        raise ValueError(
            f"{name} must be finite with shape ({d}, {d}) or ({R}, {d}, {d}), "
            f"got shape {np.shape(M)}"
        )
    return a


def train_w(
    X: ArrayLike,
    Y: ArrayLike,
    v: ArrayLike,
    Z: ArrayLike,
    W0: ArrayLike,
    *,
    steps: int,
    lr: float = 0.1,
    normalized: bool = True,
    loss: str = "logistic",
    reg: float = 0.0,
) -> np.ndarray:
    """Gradient descent on W of f(X_i) = vᵀ X_iᵀ softmax(X_i W z_i) ([SVM]; §1.3, §4.5).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (R, n, T, d)
        The inputs; with a leading axis R independent problems trained in lockstep (each
        normalised separately), and Y, v, Z, W0 then carry the same leading axis.
    Y : array_like, shape (n,) or (R, n)
        The labels, each ±1.
    v : array_like, shape (d,) or (R, d)
        The value (head) vector.
    Z : array_like, shape (n, d) or (R, n, d)
        Queries z_i.
    W0 : array_like, shape (d, d) or (R, d, d)
        The initial key-query matrix.
    steps : int
        The number of steps.
    lr : float, optional
        Step size η (default 0.1).
    normalized : bool, optional
        Normalised steps (default True) or plain ones.
    loss : {"logistic", "linear"}, optional
        l(u) = log(1 + e^{−u}) (default) or −u.
    reg : float, optional
        Ridge weight λ ≥ 0: descends L + (λ/2)||W||²_F (the "vanishing regularization" of
        [SVM]; a tiny λ such as machine epsilon keeps the gradient from underflowing to zero;
        default 0).

    Returns
    -------
    path : ndarray, shape (steps + 1, d, d) or (steps + 1, R, d, d)
        The iterates W_0, ..., W_steps.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> path = mm.train_w(X, [1], [0, 0, 1], [[1.0, 0, 0]], np.zeros((3, 3)), steps=50)
    >>> path.shape, bool(mm.self_attention(X, path[-1], [[1.0, 0, 0]])[0, 0] > 0.9)
    ((51, 3, 3), True)
    """
    Xa, Ya, va, Za, batched = _batch(X, Y, v, Z)
    R, _, _, d = Xa.shape
    W = _matrices("W0", W0, R, d)
    steps, lr, normalized = _schedule(steps, lr, normalized)
    loss = _loss(loss)
    reg = _validate.real("reg", reg, low=0.0)
    g = (Xa @ va[:, None, :, None])[..., 0]
    path = np.empty((steps + 1, R, d, d))
    path[0] = W
    for k in range(steps):
        W = _nstep(W, _grad_w_batch(Xa, g, Ya, Za, W, loss) + reg * W, lr, normalized)
        path[k + 1] = W
    return path if batched else path[:, 0]


def train_kq(
    X: ArrayLike,
    Y: ArrayLike,
    v: ArrayLike,
    Z: ArrayLike,
    K0: ArrayLike,
    Q0: ArrayLike,
    *,
    steps: int,
    lr: float = 0.1,
    normalized: bool = True,
    loss: str = "logistic",
    reg: float = 0.0,
) -> np.ndarray:
    """Gradient descent on the factors of W = K Qᵀ ([SVM] (K, Q) parametrisation; §1.3, §7.1).

    ∇_K L = G Q and ∇_Q L = Gᵀ K with G = ∇_W L; with ``normalized`` each factor takes a step of
    length η along its own normalised gradient. Shapes as in :func:`train_w`; ``reg`` = λ adds
    (λ/2)(||K||²_F + ||Q||²_F) to the risk (the vanishing regularisation under which [SVM] states
    the nuclear-norm bias; with λ = 0 the logits grow quadratically and the gradient underflows
    to zero within a few hundred normalised steps, freezing the direction).

    Parameters
    ----------
    X, Y, v, Z, steps, lr, normalized, loss
        As for :func:`train_w`: the inputs, labels, value vector, queries, the number of steps,
        the step size (default 0.1), normalised steps (default True) and the loss (default
        logistic).
    K0, Q0 : array_like, shape (d, d) or (R, d, d)
        The initial factors.
    reg : float, optional
        Ridge weight λ ≥ 0 of (λ/2)(||K||²_F + ||Q||²_F) (default 0).

    Returns
    -------
    path : ndarray, shape (steps + 1, d, d) or (steps + 1, R, d, d)
        The products W_k = K_k Q_kᵀ.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> path = mm.train_kq(X, [1], [0, 0, 1], [[1.0, 0, 0]], np.eye(3), np.eye(3), steps=20)
    >>> path.shape, path[0].tolist() == np.eye(3).tolist()
    ((21, 3, 3), True)
    """
    Xa, Ya, va, Za, batched = _batch(X, Y, v, Z)
    R, _, _, d = Xa.shape
    K, Q = _matrices("K0", K0, R, d), _matrices("Q0", Q0, R, d)
    steps, lr, normalized = _schedule(steps, lr, normalized)
    loss = _loss(loss)
    reg = _validate.real("reg", reg, low=0.0)
    g = (Xa @ va[:, None, :, None])[..., 0]
    path = np.empty((steps + 1, R, d, d))
    path[0] = K @ np.swapaxes(Q, -1, -2)
    for k in range(steps):
        G = _grad_w_batch(Xa, g, Ya, Za, path[k], loss)
        K, Q = (
            _nstep(K, G @ Q + reg * K, lr, normalized),
            _nstep(Q, np.swapaxes(G, -1, -2) @ K + reg * Q, lr, normalized),
        )
        path[k + 1] = K @ np.swapaxes(Q, -1, -2)
    return path if batched else path[:, 0]


# --------------------------------------------------------------------------------------------
# token scores, optimality, directions


def token_scores(X: ArrayLike, Y: ArrayLike, v: ArrayLike) -> np.ndarray:
    """Token scores γ_it = Y_i vᵀ x_it (docs: models#mm-models).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    Y : array_like, shape (n,)
        The labels, each ±1.
    v : array_like, shape (d,)
        The value (head) vector.

    Returns
    -------
    scores : ndarray, shape (n, T)
        γ_it.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> mm.token_scores(X, [1], [0, 0, 1]).tolist()
    [[1.0, 0.9, 0.9]]
    """
    X3, Yv, vv = _problem(X, Y, v)
    return Yv[:, None] * (X3 @ vv)


def optimal_tokens(X: ArrayLike, Y: ArrayLike, v: ArrayLike) -> np.ndarray:
    """Globally optimal tokens opt_i = argmax_t γ_it (first index on ties).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d (one sequence as a (T, d) array).
    Y : array_like, shape (n,)
        The labels, each ±1.
    v : array_like, shape (d,)
        The value (head) vector.

    Returns
    -------
    tokens : ndarray of int, shape (n,)
        opt_i, the index of the best-scoring token of each input.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab import maxmargin as mm
    >>> X = [[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]]    # one input of 3 tokens in R^3
    >>> W = np.diag([1.0, 1, 0])
    >>> mm.optimal_tokens(X, [1], [0, 0, 1]).tolist()
    [0]
    """
    return np.argmax(token_scores(X, Y, v), axis=1)


@dataclass(frozen=True, eq=False)
class LocalOptimality:
    """Verdict of the local-optimality test of a selection α (docs: models#mm-svm).

    ``locally_optimal``: ATT-SVM(α) is feasible and every support token t of every input scores
    strictly less than α_i (γ_it < γ_{i,α_i} − ``tol``). ``globally_optimal``: α_i maximises γ_i
    for every i. ``violations`` lists the (i, t) support tokens that break the strict inequality.
    Made by :func:`local_optimality`.

    Attributes
    ----------
    locally_optimal : bool
        Whether α is locally optimal.
    globally_optimal : bool
        Whether α_i maximises γ_i for every i.
    svm : SVMResult
        The solution of ATT-SVM(α).
    violations : tuple of (int, int)
        The support tokens (i, t) that score at least α_i's.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import local_optimality
    >>> X = [[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]
    >>> res = local_optimality(X, 1, [0, 0, 1], 0, np.diag([1.0, 1, 0]))
    >>> res.kind, res.locally_optimal, res.globally_optimal, res.violations
    ('global', True, True, ())
    """

    locally_optimal: bool
    globally_optimal: bool
    svm: SVMResult
    violations: tuple = field(repr=False)

    @property
    def kind(self) -> str:
        """ "global", "local" (locally but not globally), "not locally optimal" or "infeasible"."""
        if not self.svm.feasible:
            return "infeasible"
        if self.globally_optimal and self.locally_optimal:
            return "global"
        return "local" if self.locally_optimal else "not locally optimal"


def local_optimality(
    X: ArrayLike,
    Y: ArrayLike,
    v: ArrayLike,
    alpha: ArrayLike,
    W: ArrayLike | None = None,
    *,
    Z: ArrayLike | None = None,
    tol: float = 1e-12,
) -> LocalOptimality:
    """Test whether α is a locally optimal selection (docs: models#mm-svm).

    Solves ATT-SVM(α) (the p problem with key-query ``W``, or, given queries ``Z``, the
    Frobenius W problem), reads its support tokens T_i (active constraints) and checks
    γ_{i,α_i} > γ_it + ``tol`` for every t ∈ T_i.

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        The inputs: n sequences of T tokens in R^d.
    Y : array_like, shape (n,), or a scalar for one input
        The labels, each ±1.
    v : array_like, shape (d,)
        The value (head) vector.
    alpha : array_like of int, shape (n,), or an int for one input
        The selection: one token index per input.
    W : array_like, shape (d, d), optional
        The key-query matrix of the p problem (default identity).
    Z : array_like, shape (n, d), optional
        Queries: test the Frobenius W problem instead.
    tol : float, optional
        The margin of the strict inequality, >= 0 (default 1e-12).

    Returns
    -------
    result : LocalOptimality
        The verdict, the SVM solution and the violations.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import local_optimality
    >>> X = [[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]
    >>> local_optimality(X, 1, [0, 0, 1], 1, np.diag([1.0, 1, 0])).kind
    'not locally optimal'
    """
    X3, Yv, vv = _problem(X, Y, v)
    n, T, d = X3.shape
    a = as_token_indices(alpha, n, T)
    tol = _validate.real("tol", tol, low=0.0)
    svm = att_svm(X3, a, W) if Z is None else att_svm_w(X3, a, as_queries(Z, n, d))
    gamma = Yv[:, None] * (X3 @ vv)
    bad = tuple(
        (i, int(t))
        for i in range(n)
        for t in svm.support[i]
        if not gamma[i, a[i]] > gamma[i, t] + tol
    )
    best = gamma.max(axis=1)
    is_global = bool(np.all(gamma[np.arange(n), a] >= best - tol))
    return LocalOptimality(bool(svm.feasible and not bad), is_global, svm, bad)


def correlation(a: ArrayLike, b: ArrayLike) -> float:
    """corr(a, b) = <a, b> / (||a|| ||b||) (Frobenius for matrices; docs: models#mm-models).

    Parameters
    ----------
    a, b : array_like
        Vectors or matrices of the same size, not zero.

    Returns
    -------
    corr : float
        The cosine of their angle, in [−1, 1].

    Examples
    --------
    >>> from metastab.maxmargin import correlation
    >>> round(correlation([1.0, 0.0], [1.0, 1.0]), 6)     # cos 45°
    0.707107
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0.0 or nb == 0.0:
        raise ValueError("correlation of a zero vector is undefined")
    return float(a @ b / (na * nb))


def hardmax_gap_bound(T: int, svm_norm: float, R: ArrayLike) -> np.ndarray:
    """Upper bound on 1 − s_{i,α_i} along the ray p = R p^mm/||p^mm|| (docs: models#mm-training).

    Every margin of the unit direction is at least 1/||p^mm||, hence
    1 − s_{i,α_i} ≤ (T − 1) exp(−R / ||p^mm||): the softmax tends to the hardmax on α as the
    scale R (the inverse temperature β) grows.

    Parameters
    ----------
    T : int
        The number of tokens per input, >= 2.
    svm_norm : float
        ||p^mm||, > 0.
    R : array_like
        The scales of p.

    Returns
    -------
    bound : ndarray
        min(1, (T − 1) exp(−R / ||p^mm||)), of the shape of ``R``.

    Examples
    --------
    >>> from metastab.maxmargin import hardmax_gap_bound
    >>> hardmax_gap_bound(3, 2.0, [0.0, 2.0, 20.0]).round(6).tolist()
    [1.0, 0.735759, 9.1e-05]
    """
    T = _validate.integer("T", T, 2)
    svm_norm = _validate.real("svm_norm", svm_norm, low=0.0, low_open=True)
    return np.minimum(1.0, (T - 1) * np.exp(-np.asarray(R, dtype=np.float64) / svm_norm))
