"""Attention SVMs (ATT-SVM) solved with scipy only, each solve with a certificate.

The max-margin problems of Tarzanagh, Li, Zhang, Oymak, "Max-Margin Token Selection in Attention
Mechanism" (arXiv 2306.13596, [MM]) and Tarzanagh, Li, Thrampoulidis, Oymak, "Transformers as
Support Vector Machines" (arXiv 2308.16898, [SVM]), as coded in the authors' repository
(``MaxMarginTokenSelection/base.py::p_svm_solver``, ``TFasSVM/base.py::W_svm_solver``):

- p version ([MM] ATT-SVM):  min ||p||_2 s.t. (x_{i,α_i} − x_it)ᵀ W p ≥ 1 for all t ≠ α_i, all i;
- W version, Frobenius ([SVM]): min ||W||_F s.t. (x_{i,α_i} − x_it)ᵀ W z_i ≥ 1;
- W version, nuclear ([SVM]):  min ||W||_* s.t. the same constraints;
- relaxed ([MM] joint (p, v) training): the right-hand side 1 becomes 0 for the samples that are
  not support vectors of the max-margin classifier v^mm of the selected tokens.

The first two are least-distance programs (LDP) min ||x|| s.t. G x ≥ h, solved *exactly* by
Lawson and Hanson's reduction to one non-negative least-squares problem
(:func:`scipy.optimize.nnls`; Lawson & Hanson, *Solving Least Squares Problems*, 1974, ch. 23).
The reduction also yields a Farkas certificate when the constraints admit no solution, so an
infeasible problem is reported as infeasible (``p is None``), never as a number. The nuclear
version is solved only approximately (Burer–Monteiro factorisation W = K Qᵀ with SLSQP), and its
certificate bounds the optimality gap through an explicit dual-feasible point.

This module holds the solvers; :mod:`metastab.maxmargin` exports them beside the models.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize, nnls

from .. import _validate
from .checks import as_labels, as_mask, as_queries, as_token_indices, as_tokens

__all__ = [
    "Certificate",
    "SVMResult",
    "JointSVM",
    "solve_ldp",
    "att_svm",
    "att_svm_w",
    "joint_svm",
    "constraint_rows",
]

#: norm of the scaled solution above which a feasible problem is flagged ill-conditioned (§5.3.6)
NEARLY_INFEASIBLE = 1e3


@dataclass(frozen=True)
class Certificate:
    """Optimality (or infeasibility) certificate of one SVM solve.

    All residuals are *relative* (docs: models#mm-svm): complementary slackness is divided by the
    dual objective hᵀλ, stationarity and duality by ||x|| and ||x||², so the checks stay
    meaningful on nearly infeasible instances where ||x|| is large.

    Attributes
    ----------
    feasible : bool
        Whether the constraints admit a solution.
    primal : float
        Largest constraint violation max_j (h_j − G_j x)⁺, divided by max(1, max_j abs(h_j)).
    dual : float
        Largest negative part of the multipliers, max_j (−λ_j)⁺ (zero for NNLS multipliers).
    stationarity : float
        ||x − Gᵀλ|| / ||x|| (for the nuclear solve: the residual of the factor stationarity
        K = S Q, Q = Sᵀ K, relative to ||(K, Q)||).
    duality_gap : float
        (primal objective − dual objective) / primal objective, with objectives ||x||² and hᵀλ
        for the LDPs, ||W||_* and hᵀλ (λ dual feasible) for the nuclear problem.
    complementarity : float
        max_j λ_j (G_j x − h_j) / (hᵀλ).
    farkas : float
        Infeasible problems only: ||Gᵀy|| / max_j ||G_j|| for the y ≥ 0, hᵀy = 1 found by the
        solver (a Farkas certificate: zero proves that G x ≥ h has no solution). NaN when feasible.
    norm : float
        ||x|| (NaN when infeasible).
    ill_conditioned : bool
        The solution norm in units of the largest row is above ``NEARLY_INFEASIBLE``: the
        problem is nearly infeasible and its direction sensitive to the data.
    tol : float
        Tolerance used for ``ok``.

    Examples
    --------
    >>> from metastab.maxmargin import solve_ldp
    >>> x, lam, cert = solve_ldp([[1.0, 0.0], [0.0, 2.0]], [1.0, 1.0])
    >>> cert.feasible, cert.ok, round(cert.norm, 6), cert.farkas
    (True, True, 1.118034, nan)
    >>> solve_ldp([[1.0], [-1.0]], [1.0, 1.0])[2].feasible      # x ≥ 1 and −x ≥ 1
    False
    """

    feasible: bool
    primal: float
    dual: float
    stationarity: float
    duality_gap: float
    complementarity: float
    farkas: float
    norm: float
    ill_conditioned: bool
    tol: float

    @property
    def ok(self) -> bool:
        """All residuals below ``tol`` (for an infeasible problem: the Farkas residual)."""
        if not self.feasible:
            return bool(self.farkas <= self.tol)
        return bool(
            max(
                self.primal,
                self.dual,
                self.stationarity,
                abs(self.duality_gap),
                self.complementarity,
            )
            <= self.tol
        )


@dataclass(frozen=True, eq=False)
class SVMResult:
    """Solution of an attention SVM.

    Attributes
    ----------
    p : ndarray or None
        The solution: p^mm (shape (d,)) for :func:`att_svm`, W^mm (shape (d, d)) for
        :func:`att_svm_w`, v^mm for the classifier of :func:`joint_svm`; ``None`` when infeasible.
    feasible : bool
        Whether the constraints admit a solution.
    support : tuple of ndarray
        Per sample i, the token indices t ≠ α_i whose constraint is active,
        abs(G_it x − h_it) ≤ ``support_tol``·max(1, abs(h_it)) (docs: models#mm-svm); for the
        classifier of :func:`joint_svm`, one array holding the support samples. Empty arrays
        when infeasible.
    certificate : Certificate
        Primal and dual feasibility, stationarity, duality gap and relative complementary slackness.
    multipliers : ndarray or None
        Dual multipliers λ, shape (n, T) with zeros at the selected tokens (or (n,) for the
        classifier); ``None`` when infeasible.
    alpha : ndarray
        The selected token of each sample.
    method : str
        ``"ldp-nnls"`` (exact) or ``"burer-monteiro-slsqp"`` (approximate).

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import att_svm
    >>> X = [[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]
    >>> res = att_svm(X, 0, W=np.diag([1.0, 1.0, 0.0]))
    >>> res.feasible, res.method, res.alpha.tolist(), round(res.norm, 6)
    (True, 'ldp-nnls', [0], 0.995037)
    """

    p: np.ndarray | None = field(repr=False)
    feasible: bool
    support: tuple = field(repr=False)
    certificate: Certificate
    multipliers: np.ndarray | None = field(repr=False)
    alpha: np.ndarray = field(repr=False)
    method: str = "ldp-nnls"

    @property
    def W(self) -> np.ndarray | None:
        """Alias of ``p`` for the W problems."""
        return self.p

    @property
    def norm(self) -> float | None:
        """||p||_2 (vector) or ||W||_F (matrix); ``None`` when infeasible."""
        return None if self.p is None else float(np.linalg.norm(self.p))

    @property
    def objective(self) -> float | None:
        """½||p||² as printed by cvxopt's ``pcost`` in [MM]; ``None`` when infeasible."""
        return None if self.p is None else 0.5 * float(np.sum(self.p * self.p))

    @property
    def nuclear_norm(self) -> float | None:
        """||W||_* for the matrix solutions; ``None`` when infeasible or a vector."""
        if self.p is None or self.p.ndim != 2:
            return None
        return float(np.linalg.svd(self.p, compute_uv=False).sum())


@dataclass(frozen=True, eq=False)
class JointSVM:
    """Max-margin pair of joint (p, v) training: [MM]'s joint training.

    See docs: models#mm-experiments (E3). ``v`` is the classifier SVM min ||v|| s.t. Y_i vᵀx_{i,α_i}
    ≥ 1 (its ``support`` holds the support samples), ``p`` the ATT-SVM with the samples in
    ``relaxed`` (not support vectors of v) constrained by ≥ 0 instead of ≥ 1, and ``full`` the
    unrelaxed ATT-SVM for comparison. Made by :func:`joint_svm`.

    Attributes
    ----------
    v : SVMResult
        The classifier SVM v^mm.
    p : SVMResult
        The relaxed ATT-SVM.
    full : SVMResult
        The unrelaxed ATT-SVM.
    relaxed : ndarray of bool, shape (n,)
        The samples that are not support vectors of v^mm.

    Examples
    --------
    >>> from metastab.maxmargin import joint_svm
    >>> X = [[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], [0.5, 1.5]]]
    >>> js = joint_svm(X, [1, -1, 1], 1)
    >>> (js.v.p.round(6) + 0.0).tolist(), js.v.support[0].tolist(), round(js.full.objective, 5)
    ([0.0, 1.0], [0, 1], 0.8125)
    """

    v: SVMResult
    p: SVMResult
    full: SVMResult
    relaxed: np.ndarray = field(repr=False)


# --------------------------------------------------------------------------------------------
# least-distance programming


def solve_ldp(
    G: ArrayLike, h: ArrayLike, *, tol: float = 1e-8, infeasible_tol: float = 1e-12
) -> tuple[np.ndarray | None, np.ndarray | None, Certificate]:
    """Solve min ||x||_2 subject to G x ≥ h exactly, by Lawson–Hanson's NNLS reduction.

    With E = [Gᵀ; hᵀ] and f = e_{dim+1}, let u = argmin_{u ≥ 0} ||E u − f|| and r = E u − f.
    The problem is infeasible iff r = 0 (then u/hᵀu is a Farkas certificate); otherwise
    x = −r[:dim]/r[-1] = Gᵀu/(1 − hᵀu) and λ = −u/r[-1] are the primal solution and the dual
    multipliers (x = Gᵀλ). Rows are scaled to unit largest norm before the solve
    (docs: models#mm-svm), and the result is polished on the active set (least-norm solution
    of G_A x = h_A) when that improves the certificate, which restores full precision on nearly
    infeasible problems where 1 − hᵀu cancels.

    Parameters
    ----------
    G : array_like, shape (m, dim)
        The constraint rows, m >= 1.
    h : array_like, shape (m,)
        The right-hand sides.
    tol : float, optional
        Tolerance of the certificate checks (default 1e-8).
    infeasible_tol : float, optional
        The problem is declared infeasible when 1 − hᵀu ≤ ``infeasible_tol``, i.e. when the
        scaled solution would have norm above about infeasible_tol^(-1/2) (default 1e-12).

    Returns
    -------
    x : ndarray, shape (dim,), or None
        The solution; None when infeasible.
    lam : ndarray, shape (m,), or None
        The dual multipliers (x = Gᵀλ); None when infeasible.
    certificate : Certificate
        The residuals of the optimality (or the Farkas) certificate.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import solve_ldp
    >>> x, lam, cert = solve_ldp([[1.0, 0.0], [0.0, 2.0]], [1.0, 1.0])
    >>> np.round(x, 6).tolist(), cert.ok
    ([1.0, 0.5], True)
    """
    G = np.asarray(G, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    if G.ndim != 2 or h.shape != (G.shape[0],) or G.shape[0] == 0:
        raise ValueError(
            f"G must be m×dim with m ≥ 1 and h of length m, got shapes {G.shape} and {h.shape}"
        )
    if not (np.isfinite(G).all() and np.isfinite(h).all()):
        raise ValueError("G and h must be finite")
    m, dim = G.shape
    scale = float(np.max(np.linalg.norm(G, axis=1)))
    if scale == 0.0:
        scale = 1.0
    Gs = G / scale
    E = np.vstack([Gs.T, h[None, :]])
    f = np.zeros(dim + 1)
    f[-1] = 1.0
    u = nnls(E, f, maxiter=50 * (m + dim))[0]
    r = E @ u - f
    denom = -r[-1]  # = 1 − hᵀu = ||r||² at the NNLS optimum
    if denom <= infeasible_tol:
        hu = float(h @ u)
        farkas = float(np.linalg.norm(Gs.T @ u) / hu) if hu > 0 else np.inf
        cert = Certificate(
            False, np.nan, np.nan, np.nan, np.nan, np.nan, farkas, np.nan, False, tol
        )
        return None, None, cert
    xs = r[:dim] / denom
    lam = u / denom / scale**2
    x = xs / scale
    ill = float(np.linalg.norm(xs)) > NEARLY_INFEASIBLE
    cert = _ldp_certificate(G, h, x, lam, tol, ill)
    # active-set polish: 1 − hᵀu cancels when ||x|| is large; the least-norm solution of the
    # active equalities G_A x = h_A, with its multipliers, is the exact KKT point when it stays
    # primal and dual feasible; keep whichever certificate is better
    active = u > 0
    if active.any():
        xa = np.linalg.lstsq(G[active], h[active], rcond=None)[0]
        lam_a = np.zeros(m)
        lam_a[active] = np.linalg.lstsq(G[active].T, xa, rcond=None)[0]
        polished = _ldp_certificate(G, h, xa, lam_a, tol, ill)
        if _worst(polished) < _worst(cert):
            x, lam, cert = xa, lam_a, polished
    return x, lam, cert


def _worst(c: Certificate) -> float:
    return max(c.primal, c.dual, c.stationarity, abs(c.duality_gap), c.complementarity)


def _ldp_certificate(G, h, x, lam, tol, ill):
    Gx = G @ x
    hmax = max(1.0, float(np.max(np.abs(h))))
    nx = float(np.linalg.norm(x))
    dual_obj = float(h @ lam)
    primal = float(max(0.0, np.max(h - Gx))) / hmax
    dual = float(max(0.0, -np.min(lam)))
    if nx == 0.0:
        stat = float(np.linalg.norm(G.T @ lam))
        gap = abs(dual_obj)
        comp = 0.0
    else:
        stat = float(np.linalg.norm(x - G.T @ lam)) / nx
        gap = (nx * nx - dual_obj) / (nx * nx)
        comp = float(np.max(np.abs(lam * (Gx - h)))) / dual_obj if dual_obj > 0 else 0.0
    return Certificate(True, primal, dual, stat, gap, comp, np.nan, nx, bool(ill), tol)


# --------------------------------------------------------------------------------------------
# constraint rows


def _differences(X3, a):
    """x_{i,α_i} − x_it for t ≠ α_i, in order (i, t), with the (i, t) of each row."""
    n, T, _ = X3.shape
    keep = np.ones((n, T), dtype=bool)
    keep[np.arange(n), a] = False
    index = np.argwhere(keep)
    return (X3[np.arange(n), a][:, None, :] - X3)[keep], index


def constraint_rows(
    X: ArrayLike, alpha: ArrayLike, W: ArrayLike | None = None, Z: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the ATT-SVM constraints, in order (i, t) with t ≠ α_i.

    For the p problem (``Z`` is None) row (i, t) is (x_{i,α_i} − x_it)ᵀ W (shape (d,)); for the
    W problem it is vec((x_{i,α_i} − x_it) z_iᵀ) (shape (d·d,), row-major), so that
    <row, vec(W)> = (x_{i,α_i} − x_it)ᵀ W z_i (docs: models#mm-svm).

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        Token sequences.
    alpha : int or sequence of int
        Selected token of each input (one int is used for every input).
    W : array_like, shape (d, d), optional
        Key-query matrix of the p problem (default identity).
    Z : array_like, shape (n, d), optional
        The queries z_i: given, the rows of the W problem.

    Returns
    -------
    G : ndarray, shape (n (T−1), dim)
        The rows: dim = d for the p problem, d·d for the W problem.
    index : ndarray, shape (n (T−1), 2)
        The (i, t) of each row.

    Examples
    --------
    >>> from metastab.maxmargin import constraint_rows
    >>> G, index = constraint_rows([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], 0)
    >>> G.tolist(), index.tolist()
    ([[1.0, -1.0], [0.5, -0.5]], [[0, 1], [0, 2]])
    """
    X3, _ = as_tokens(X)
    n, T, d = X3.shape
    D, index = _differences(X3, as_token_indices(alpha, n, T))
    if Z is None:
        W = np.eye(d) if W is None else _validate.matrix("W", W, d)
        return D @ W, index
    Zs = np.asarray(Z, dtype=np.float64)
    G = np.einsum("ma,mb->mab", D, Zs[index[:, 0]]).reshape(len(D), d * d)
    return G, index


def _support(G, h, x, index, n, T, support_tol):
    active = np.abs(G @ x - h) <= support_tol * np.maximum(1.0, np.abs(h))
    return tuple(index[active & (index[:, 0] == i), 1].copy() for i in range(n))


def _result(x, lam, cert, G, h, index, n, T, a, support_tol, shape, method="ldp-nnls"):
    if x is None:
        return SVMResult(
            None, False, tuple(np.array([], dtype=np.intp) for _ in range(n)), cert, None, a, method
        )
    support = _support(G, h, x.ravel(), index, n, T, support_tol)
    lam_grid = np.zeros((n, T))
    lam_grid[index[:, 0], index[:, 1]] = lam
    return SVMResult(x.reshape(shape), True, support, cert, lam_grid, a, method)


# --------------------------------------------------------------------------------------------
# public solvers


def att_svm(
    X: ArrayLike,
    alpha: ArrayLike,
    W: ArrayLike | None = None,
    relaxed: ArrayLike | None = None,
    *,
    tol: float = 1e-8,
    support_tol: float = 1e-6,
) -> SVMResult:
    """ATT-SVM of [MM] for the prompt p, solved exactly (docs: models#mm-svm).

    p^mm(α) = argmin ||p||_2  s.t.  (x_{i,α_i} − x_it)ᵀ W p ≥ 1  for all t ≠ α_i and i ∈ [n],
    with right-hand side 0 instead of 1 for the samples in ``relaxed``.

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        Token sequences.
    alpha : int or sequence of int
        Selected token of each input (one int is used for every input).
    W : array_like, shape (d, d), optional
        Key-query matrix; the identity by default.
    relaxed : sequence of bool or of int, optional
        Samples whose constraints become ≥ 0 (the relaxed SVM of joint training, §2.3).
    tol : float, optional
        Tolerance of the certificate (default 1e-8).
    support_tol : float, optional
        Activity tolerance defining the support tokens (default 1e-6).

    Returns
    -------
    result : SVMResult
        The solution and its certificate; ``p`` is None and ``feasible`` False when no p satisfies
        the constraints.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import att_svm
    >>> X = [[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.9]]
    >>> res = att_svm(X, 0, W=np.diag([1.0, 1.0, 0.0]))
    >>> round(res.objective, 5), res.support[0].tolist(), res.certificate.ok
    (0.49505, [2], True)
    """
    X3, _ = as_tokens(X)
    n, T, d = X3.shape
    a = as_token_indices(alpha, n, T)
    tol = _validate.real("tol", tol, low=0.0, low_open=True)
    support_tol = _validate.real("support_tol", support_tol, low=0.0, low_open=True)
    mask = as_mask("relaxed", relaxed, n)
    G, index = constraint_rows(X3, a, W)
    h = np.where(mask[index[:, 0]], 0.0, 1.0)
    x, lam, cert = solve_ldp(G, h, tol=tol)
    return _result(x, lam, cert, G, h, index, n, T, a, support_tol, (d,))


def att_svm_w(
    X: ArrayLike,
    alpha: ArrayLike,
    Z: ArrayLike,
    *,
    norm: str = "fro",
    tol: float = 1e-8,
    support_tol: float = 1e-6,
) -> SVMResult:
    """ATT-SVM of [SVM] for the key-query matrix W (docs: models#mm-svm).

    W^mm(α) = argmin ||W||  s.t.  (x_{i,α_i} − x_it)ᵀ W z_i ≥ 1  for all t ≠ α_i and i,

    with ||·|| the Frobenius norm (``norm="fro"``, solved exactly as an LDP in vec(W)) or the
    nuclear norm (``norm="nuclear"``, an **approximation**: the Burer–Monteiro form
    ||W||_* = min_{W = K Qᵀ} ½(||K||²_F + ||Q||²_F) solved with SLSQP from the SVD of the
    Frobenius solution). For the nuclear solve the certificate's ``duality_gap`` is
    (||W||_* − hᵀλ)/||W||_* for an explicitly dual-feasible λ (λ ≥ 0, ||Σ_j λ_j A_j||_op ≤ 1), so
    it bounds the sub-optimality of the returned W; ``stationarity`` is the factor KKT residual.

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        Token sequences.
    alpha : int or sequence of int
        Selected token of each input (one int is used for every input).
    Z : array_like, shape (n, d) or (d,)
        The query z_i of each input (self-attention: a token of X_i; cross-attention: any).
    norm : {"fro", "nuclear"}, optional
        The norm minimised (default Frobenius).
    tol : float, optional
        Tolerance of the certificate (default 1e-8).
    support_tol : float, optional
        Activity tolerance defining the support tokens (default 1e-6).

    Returns
    -------
    result : SVMResult
        ``p`` (alias ``W``) is the d×d solution, or None when infeasible.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import att_svm_w
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> res = att_svm_w(X, 0, [[1.0, 0.0]])
    >>> np.round(res.W, 6).tolist()
    [[0.5, 0.0], [-0.5, 0.0]]
    """
    X3, _ = as_tokens(X)
    n, T, d = X3.shape
    a = as_token_indices(alpha, n, T)
    if norm not in ("fro", "nuclear"):
        raise ValueError(f"norm must be 'fro' or 'nuclear', got {norm!r}")
    tol = _validate.real("tol", tol, low=0.0, low_open=True)
    support_tol = _validate.real("support_tol", support_tol, low=0.0, low_open=True)
    Zs = as_queries(Z, n, d)
    G, index = constraint_rows(X3, a, Z=Zs)
    h = np.ones(len(G))
    x, lam, cert = solve_ldp(G, h, tol=tol)
    fro = _result(x, lam, cert, G, h, index, n, T, a, support_tol, (d, d))
    if norm == "fro" or not fro.feasible:
        return fro
    D, index = _differences(X3, a)
    Wn, lam_n, cert_n = _nuclear(D, Zs[index[:, 0]], h, fro.W, tol)
    return _result(
        Wn, lam_n, cert_n, G, h, index, n, T, a, support_tol, (d, d), method="burer-monteiro-slsqp"
    )


def _nuclear(D, Zrows, h, W0, tol, *, warm_steps: int = 40, shrink: float = 0.7):
    """min ||W||_* s.t. u_jᵀ W z_j ≥ h_j, approximately, with a certified optimality gap.

    1. Warm start: ``warm_steps`` iteratively reweighted least-distance steps
       W ← argmin tr(Wᵀ (W_k W_kᵀ + ε_k I)^{-1/2} W) (each one LDP after the change of variables
       W = P^{-1/2} V; Fornasier, Rauhut & Ward 2011; Mohan & Fazel 2012), ε_k ← ``shrink``·ε_k.
    2. Polish: Burer–Monteiro, min ½(||K||²_F + ||Q||²_F) s.t. u_jᵀ K Qᵀ z_j ≥ h_j with SLSQP and
       analytic Jacobians, K and Q of rank r = (numerical rank of the warm start) + 1, started
       from its SVD (docs: models#mm-svm).
    3. Certificate: multipliers μ ≥ 0 of the factor KKT system K = S(μ) Q, Q = S(μ)ᵀ K with
       S(μ) = Σ_j μ_j u_j z_jᵀ (NNLS), scaled to λ = μ / max(1, ||S(μ)||_op) so that λ is
       feasible for the dual max hᵀλ s.t. ||S(λ)||_op ≤ 1, λ ≥ 0; hence
       hᵀλ ≤ min ||W||_* ≤ ||W||_* and the relative gap bounds the sub-optimality.
    """
    m, d = D.shape
    W = W0
    eps = float(np.linalg.norm(W0, 2)) ** 2
    for _ in range(warm_steps):
        U, S, _ = np.linalg.svd(W)
        root = (U * (S * S + eps) ** 0.25) @ U.T  # P^{-1/2}
        G = np.einsum("ma,mb->mab", D @ root, Zrows).reshape(m, d * d)
        v, _, cert = solve_ldp(G, h)
        if v is None:  # cannot happen for a feasible problem; keep the last iterate
            break
        W = root @ v.reshape(d, d)
        eps *= shrink
    U, S, Vt = np.linalg.svd(W)
    r = min(d, int(np.sum(S > 1e-3 * S[0])) + 1)
    size = d * r

    def unpack(y):
        return y[:size].reshape(d, r), y[size:].reshape(d, r)

    def cons(y):
        K, Q = unpack(y)
        return np.sum((D @ K) * (Zrows @ Q), axis=1) - h

    def cons_jac(y):
        K, Q = unpack(y)
        return np.hstack(
            [
                (D[:, :, None] * (Zrows @ Q)[:, None, :]).reshape(m, size),
                (Zrows[:, :, None] * (D @ K)[:, None, :]).reshape(m, size),
            ]
        )

    y0 = np.concatenate([(U[:, :r] * np.sqrt(S[:r])).ravel(), (Vt[:r].T * np.sqrt(S[:r])).ravel()])
    res = minimize(
        lambda y: 0.5 * float(y @ y),
        y0,
        jac=lambda y: y,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
        options={"maxiter": 1000, "ftol": 1e-14},
    )
    K, Q = unpack(res.x)
    W = K @ Q.T
    M = cons_jac(res.x).T  # columns: gradients of the constraints in (K, Q)
    mu = nnls(M, res.x, maxiter=50 * sum(M.shape))[0]
    stat = float(np.linalg.norm(M @ mu - res.x) / max(np.linalg.norm(res.x), 1e-300))
    op = float(np.linalg.norm((D * mu[:, None]).T @ Zrows, 2))
    lam = mu / max(1.0, op)
    nuc = float(np.linalg.svd(W, compute_uv=False).sum())
    dual_obj = float(h @ lam)
    gx = np.sum((D @ W) * Zrows, axis=1)
    primal = float(max(0.0, np.max(h - gx)))
    gap = (nuc - dual_obj) / nuc
    comp = float(np.max(np.abs(lam * (gx - h)))) / dual_obj if dual_obj > 0 else np.inf
    scale = float(np.max(np.linalg.norm(D, axis=1) * np.linalg.norm(Zrows, axis=1)))
    cert = Certificate(
        True,
        primal,
        0.0,
        stat,
        gap,
        comp,
        np.nan,
        float(np.linalg.norm(W)),
        bool(np.linalg.norm(W) * scale > NEARLY_INFEASIBLE),
        tol,
    )
    return W, lam, cert


def joint_svm(
    X: ArrayLike,
    Y: ArrayLike,
    alpha: ArrayLike,
    W: ArrayLike | None = None,
    *,
    tol: float = 1e-8,
    support_tol: float = 1e-6,
) -> JointSVM:
    """Max-margin directions of joint (p, v) training in [MM].

    See docs: models#mm-svm, #mm-experiments (E3). First the classifier SVM of the selected tokens,
    v^mm = argmin ||v|| s.t. Y_i vᵀ x_{i,α_i} ≥ 1; its active samples are the support vectors. Then
    the relaxed ATT-SVM :func:`att_svm` with ``relaxed`` = the samples that are not support vectors
    of v^mm, and the full ATT-SVM for comparison.

    Parameters
    ----------
    X : array_like, shape (n, T, d) or (T, d)
        Token sequences.
    Y : array_like, shape (n,)
        The labels, each ±1.
    alpha : int or sequence of int
        Selected token of each input (one int is used for every input).
    W : array_like, shape (d, d), optional
        Key-query matrix; the identity by default.
    tol : float, optional
        Tolerance of the certificates (default 1e-8).
    support_tol : float, optional
        Activity tolerance defining the support tokens and vectors (default 1e-6).

    Returns
    -------
    svms : JointSVM
        The classifier SVM, the relaxed and the full ATT-SVM.

    Examples
    --------
    >>> import numpy as np
    >>> from metastab.maxmargin import joint_svm
    >>> X = [[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], [0.5, 1.5]]]
    >>> js = joint_svm(X, [1, -1, 1], 1)
    >>> np.round(js.p.p, 6).tolist(), round(js.p.objective, 5), js.relaxed.tolist()
    ([1.0, 0.0], 0.5, [False, False, True])
    """
    X3, _ = as_tokens(X)
    n, T, d = X3.shape
    a = as_token_indices(alpha, n, T)
    Yv = as_labels(Y, n)
    Gv = Yv[:, None] * X3[np.arange(n), a]
    hv = np.ones(n)
    x, lam, cert = solve_ldp(Gv, hv, tol=tol)
    if x is None:
        vres = SVMResult(None, False, (np.array([], dtype=np.intp),), cert, None, a)
        relaxed = np.zeros(n, dtype=bool)
    else:
        active = np.abs(Gv @ x - hv) <= support_tol
        vres = SVMResult(x, True, (np.flatnonzero(active),), cert, lam, a)
        relaxed = ~active
    pres = att_svm(X3, a, W, relaxed=relaxed, tol=tol, support_tol=support_tol)
    full = att_svm(X3, a, W, tol=tol, support_tol=support_tol)
    return JointSVM(vres, pres, full, relaxed)
