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
# Both modes where direct stepping is affordable (β = 6, 8), from independent seeds: the mean
# exit time of each with its 95% interval, and whether the two intervals overlap.
for beta in (6.0, 8.0):
    model = ms.SoftmaxChain(beta=beta, gamma=gamma)
    exact = ms.first_passage(model, x0, event, max_steps=10**6, chains=100, rng=1)
    fast = ms.first_passage(model, x0, event, max_steps=1e30, chains=100, rng=2, mode="accelerated")
    (e, (e_lo, e_hi)), (a, (a_lo, a_hi)) = (
        (fit.mean, fit.mean_interval()) for fit in map(stats.escape_rate, (exact, fast))
    )
    overlap = "overlap" if max(e_lo, a_lo) <= min(e_hi, a_hi) else "do not overlap"
    print(
        f"β = {beta:g}: exact {e:.4g} [{e_lo:.4g}, {e_hi:.4g}], accelerated {a:.4g} "
        f"[{a_lo:.4g}, {a_hi:.4g}] steps: the intervals {overlap}"
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
print(table[["beta", "chains", "events", "mean", "mean_low", "mean_high", "interval"]].to_string())
low, high = fit.confidence_interval("slope")
bound = theory.metastability_exponent(P.c0, eps, gamma)
print(
    f"b = {fit.slope:.4f} [{low:.4f}, {high:.4f}] on β ≥ 20; c0 = {P.c0:.4f} (the cost of a "
    f"token's jump to another vertex) is {'inside' if low <= P.c0 <= high else 'outside'} "
    f"that interval; Thm 5.4's lower bound on the exponent is {bound:.3f}"
)

# %%
# The mean exit time against β, each with its 95% interval, and the law fitted on β ≥ 20 with
# its 95% band (below β = 20 the line is extrapolated).
rates = [stats.escape_rate(r) for r in runs]
means = np.array([rate.mean for rate in rates])
lows, highs = np.array([rate.mean_interval() for rate in rates]).T
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.errorbar(
    betas, means, yerr=[means - lows, highs - means], fmt="o", capsize=3,
    label="accelerated, 100 chains per β (95% CI)",
)  # fmt: skip
grid = np.linspace(betas[0], betas[-1], 100)
ax.plot(grid, np.exp(fit.log_mean(grid)), "k-", label=f"fit on β ≥ 20, b = {fit.slope:.3f}")
band = fit.band(grid)
ax.fill_between(grid, np.exp(band.low), np.exp(band.high), color="k", alpha=0.15, linewidth=0)
ax.set(yscale="log", xlabel="β", ylabel="mean exit time T2 (steps)")
ax.legend()
plt.tight_layout()
