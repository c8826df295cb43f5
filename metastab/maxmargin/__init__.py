"""Max-margin token selection: one attention layer trained by gradient descent, and its SVMs.

Models (docs: models#mm-models; [MM] = Tarzanagh, Li, Zhang, Oymak, arXiv 2306.13596; [SVM] =
Tarzanagh, Li, Thrampoulidis, Oymak, arXiv 2308.16898):

- prompt attention ([MM]):  f(X) = <X v, softmax(X W p)>, trainable p (and optionally v);
- self/cross attention ([SVM]): f(X_i) = vᵀ X_iᵀ softmax(X_i W z_i), trainable W, or W = K Qᵀ
  with trainable (K, Q); self-attention takes z_i = a token of X_i, cross-attention any z_i.

Empirical risk L = (1/n) Σ_i l(Y_i f(X_i)) with the logistic loss l(u) = log(1 + e^{−u}) or
the linear loss l(u) = −u. Gradient descent is plain (x ← x − η ∇L) or normalised
(x ← x − η ∇L / ||∇L||, per factor for (K, Q)), in float64, with the cancellation-free form of
the softmax derivative (docs: models#mm-training): with r = argmax_t a_t and Δ_t = g_t − g_r,
f = g_r + Σ_t s_t Δ_t and ∂f/∂a_t = s_t (Δ_t − Σ_τ s_τ Δ_τ), which keeps the selected token's
contribution when 1 − s_r is below machine precision. Normalised GD stops (the iterate stays
put) once the gradient is exactly zero, i.e. has underflowed (§7.2).

Token scores γ_it = Y_i vᵀ x_it, globally optimal tokens argmax_t γ_it, and locally optimal
selections (§1.2: every support token of ATT-SVM(α) scores strictly less than α_i) complete the
picture. As ||p|| grows along the max-margin direction the softmax becomes the hardmax on the
selected tokens: ||p|| plays the inverse temperature β (§6, :func:`hardmax_gap_bound`).

Submodules: :mod:`~metastab.maxmargin.models` (attention models, gradients, trainers),
:mod:`~metastab.maxmargin.svm` (the ATT-SVM solvers with certificates, scipy only) and
:mod:`~metastab.maxmargin.checks` (the argument checks both use); every public name is exported
here.
"""

from .models import (
    LOSSES,
    LocalOptimality,
    attention,
    correlation,
    grad_p,
    grad_w,
    hardmax_gap_bound,
    local_optimality,
    optimal_tokens,
    predict,
    risk,
    self_attention,
    token_scores,
    train_joint,
    train_kq,
    train_p,
    train_w,
)
from .svm import (
    NEARLY_INFEASIBLE,
    Certificate,
    JointSVM,
    SVMResult,
    att_svm,
    att_svm_w,
    constraint_rows,
    joint_svm,
    solve_ldp,
)

__all__ = [
    "LOSSES",
    "NEARLY_INFEASIBLE",
    "Certificate",
    "JointSVM",
    "LocalOptimality",
    "SVMResult",
    "att_svm",
    "att_svm_w",
    "attention",
    "constraint_rows",
    "correlation",
    "grad_p",
    "grad_w",
    "hardmax_gap_bound",
    "joint_svm",
    "local_optimality",
    "optimal_tokens",
    "predict",
    "risk",
    "self_attention",
    "solve_ldp",
    "token_scores",
    "train_joint",
    "train_kq",
    "train_p",
    "train_w",
]
