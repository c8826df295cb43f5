"""
Escape times against β, with the scaling fit
============================================

The metastability theorem of [FW] (Thm 5.4) bounds from below the time ``T2`` at which some token
of a clustered configuration leaves the ε-neighbourhood of its cluster's hull: ``T2`` grows at
least like ``e^{bβ}``. Here we measure ``T2`` for the softmax chain SA_P on the clustered
pentagon at a few β, fit ``log E[T] = a + bβ`` by one censored likelihood, and draw the
theorem's exponent beside it.
"""

import numpy as np
import pandas as pd

import metastab as ms
from metastab import plotting, stats, theory
from metastab.stats.rates import MEMORYLESS_LEVEL

# %%
# 20 tokens: the 5 vertices of the pentagon and 15 tokens at half the vertices, 4 per cell.
# The event is ``LeaveHull`` with ε = 2γ d(K), the hypothesis of Thm 5.4.
P = ms.regular_polygon(5)
x0 = ms.shrunk(P, 20, 0.5)
gamma = 0.1
event = ms.LeaveHull(groups=P.assign(x0), radius=2 * gamma * P.diameter)

runs = [
    ms.first_passage(
        ms.SoftmaxChain(beta=b, gamma=gamma), x0, event, max_steps=20_000, chains=300, rng=1
    )
    for b in (7.0, 10.0, 13.0)
]
for r in runs:
    print(r)

# %%
# The survival curves (Kaplan–Meier, censoring-aware) of the three runs, with the fitted
# geometric law dashed. Whether that law describes a curve is a test, not a look: the
# memorylessness test compares the curve with the fit (the statistic D is their largest
# distance) against the same distance for samples of the fitted law.
fig = plotting.survival_figure(runs)
for r in runs:
    beta = r.model["beta"]
    test = stats.exponentiality_test(r, n_resamples=499, rng=0)
    km = stats.survival(r)
    gap = np.abs(km.probability - stats.escape_rate(r, memoryless=False).survival_function(km.time))
    where = km.time[np.argmax(gap)]
    if test.pvalue <= MEMORYLESS_LEVEL:
        print(
            f"β = {beta:g}: the geometric fit does not describe the Kaplan–Meier curve "
            f"(memorylessness test p = {test.pvalue:.3f} <= {MEMORYLESS_LEVEL}); the curve and "
            f"the fit are farthest apart, by {gap.max():.3f}, at t = {where:g} steps"
        )
    else:
        print(
            f"β = {beta:g}: the geometric fit describes the Kaplan–Meier curve (memorylessness "
            f"test p = {test.pvalue:.3f} > {MEMORYLESS_LEVEL})"
        )

# %%
# The joint censored fit: every chain of every β in one likelihood; censored chains count as
# exposure. ``fit_report`` returns the per-β table (its ``interval`` column says which
# intervals: exact under the law, or the bootstrap's where the test rejects it) and the fit.
frame = pd.concat([r.to_frame() for r in runs])
table, fit = stats.fit_report(frame)
columns = ["beta", "chains", "events", "censored", "mean", "mean_low", "mean_high", "interval"]
print(table[columns + ["memoryless_p"]].to_string())
low, high = fit.confidence_interval("slope")
bound = theory.metastability_exponent(c0=P.c0, eps=2 * gamma * P.diameter, gamma=gamma)
print(
    f"fitted exponent b = {fit.slope:.3f} [{low:.3f}, {high:.3f}]; Thm 5.4 bound {bound:.3f}, "
    + ("below the interval" if bound < low else "not below the interval")
)

# %%
# The Arrhenius plot: the mean escape time against β with its interval, the fitted line with
# its band, and the theorem's lower bound (dashed).
fig = plotting.arrhenius_figure(
    frame, bound=dict(c0=P.c0, eps=2 * gamma * P.diameter, gamma=gamma, n=20)
)
