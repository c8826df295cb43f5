"""
Large β: escape times of 10^20 steps in accelerated mode
========================================================

Direct stepping needs about ``E[T]`` steps per escape, which stops being possible near
``E[T] ≈ 10^6``. While every cluster of SA_P sits on one point, the chain is frozen: in-group
picks change nothing, and the number of steps to the first cross-group pick is geometric with a
known parameter (the exact frozen law, *Model definitions*). ``mode="accelerated"`` draws those
waits from their exact law instead of stepping through them, and steps exactly whenever a cluster
is spread out, so it samples the same chain at any β.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import metastab as ms
from metastab import stats, theory

# %%
# The equilateral triangle on the unit circle, 9 tokens: the vertices and two more tokens per
# vertex at 0.8 of it. The exit time T2 of Thm 5.4 (ε = 2γ d(K)).
P = ms.regular_polygon(3)
x0 = ms.shrunk(P, 9, 0.8)
gamma = 0.1
eps = 2 * gamma * P.diameter
event = ms.LeaveHull(groups=P.assign(x0), radius=eps)

# %%
# Both modes where direct stepping is affordable (β = 6, 8): their mean exit times agree.
for beta in (6.0, 8.0):
    model = ms.SoftmaxChain(beta=beta, gamma=gamma)
    exact = ms.first_passage(model, x0, event, max_steps=10**6, chains=100, rng=1)
    fast = ms.first_passage(model, x0, event, max_steps=1e30, chains=100, rng=2, mode="accelerated")
    print(
        f"β = {beta:g}: exact {stats.escape_rate(exact).mean:.4g}, "
        f"accelerated {stats.escape_rate(fast).mean:.4g} steps"
    )

# %%
# Only the accelerated mode goes further: β up to 40, where an escape takes about 10^23 steps.
# ``max_steps`` is a float; step counts are float64.
betas = np.arange(10.0, 41.0, 5.0)
runs = [
    ms.first_passage(
        ms.SoftmaxChain(beta=b, gamma=gamma),
        x0,
        event,
        max_steps=1e300,
        chains=100,
        rng=int(b),
        mode="accelerated",
    )
    for b in betas
]
frame = pd.concat([r.to_frame() for r in runs])
table, fit = stats.fit_report(frame[frame.beta >= 20])
print(table[["beta", "chains", "events", "mean", "mean_low", "mean_high"]])
low, high = fit.confidence_interval("slope")
print(
    f"b = {fit.slope:.4f} [{low:.4f}, {high:.4f}] on β ≥ 20; c0 = {P.c0:.4f}; "
    f"Thm 5.4 bound {theory.metastability_exponent(P.c0, eps, gamma):.3f}"
)

# %%
# The mean exit time against β: the slope approaches c0 = 1.5 (the cost of a token's jump
# to another vertex), far above the theorem's lower bound.
means = np.array([stats.escape_rate(r).mean for r in runs])
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.semilogy(betas, means, "o", label="accelerated, 100 chains per β")
ax.semilogy(betas, np.exp(fit.log_mean(betas)), "k-", label=f"fit, b = {fit.slope:.3f}")
ax.set(xlabel="β", ylabel="mean exit time T2 (steps)")
ax.legend()
plt.tight_layout()
