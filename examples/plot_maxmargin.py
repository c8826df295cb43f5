"""
Max-margin token selection
==========================

Training the prompt ``p`` of the attention model ``f(X) = <X v, softmax(X W p)>`` by normalised
gradient descent sends ``p`` to infinity in the direction of the solution of ATT-SVM, the
max-margin separator of the selected token from the others ([MM]; *Model definitions*,
"Max-margin token selection"). Along that direction softmax becomes hardmax: the norm of ``p``
plays the role of β. This is experiment E1 of the ``maxmargin`` study.
"""

import matplotlib.pyplot as plt
import numpy as np

from metastab import maxmargin as mm

# %%
# One input of three tokens, ``W = diag(1, 1, 0)``, ``v = (0, 0, 1)``: the token scores are the
# third coordinates, so token 0 (score 1) is the globally optimal one.
W = np.diag([1.0, 1.0, 0.0])
v = np.array([0.0, 0.0, 1.0])
X = np.array([[[-0.1, 1, 1], [1, 0, 0.9], [0, 0, 0.0]]])
Y = np.array([1.0])
print("optimal tokens:", mm.optimal_tokens(X, Y, v))

# %%
# ATT-SVM for selecting token 0 and token 1, solved exactly with a certificate of optimality.
for alpha in (0, 1):
    res = mm.att_svm(X[0], alpha, W)
    local = mm.local_optimality(X, Y, v, [alpha], W)
    print(
        f"α = {alpha}: ½|p_mm|² = {res.objective:.5f}, certificate {res.certificate.ok}, "
        f"locally optimal: {local.locally_optimal}"
    )

# %%
# Normalised gradient descent from six starts: depending on the start, p converges in direction
# to the global or to the local max-margin direction.
p_global = mm.att_svm(X[0], 0, W).p
p_local = mm.att_svm(X[0], 1, W).p
fig, ax = plt.subplots(figsize=(5, 3.5))
for s in (1, 0.5, 0, -0.5, -1, -1.5):
    path = mm.train_p(X, Y, v, W, [0, s, 0], steps=1000)
    corr_g = [mm.correlation(p, p_global) for p in path[1:]]
    corr_l = [mm.correlation(p, p_local) for p in path[1:]]
    best = corr_g if corr_g[-1] > corr_l[-1] else corr_l
    label = "global" if best is corr_g else "local"
    ax.plot(1 - np.array(best), label=f"p0 = (0, {s}, 0): {label}")
ax.set(xscale="log", yscale="log", xlabel="iteration", ylabel="1 − corr(p, p_mm)")
ax.legend(fontsize="small")
plt.tight_layout()
