"""
The first hour: a run, a fit and a figure
=========================================

Twenty tokens in the cells of a pentagon, moved by the finite-β self-attention chain SA_P; we
measure when they first leave the hulls of their cells (the exit time T2 of [FW] Thm 5.4) and fit
how the mean escape time grows with β. Sizes are small: the example runs in seconds once the
kernels are compiled (the first run compiles them, once). The gallery offers it as a Jupyter
notebook too (the download link at the bottom of the page).
"""

import numpy as np
import pandas as pd

import metastab as ms
from metastab import plotting, stats

# %%
# The pentagon, an initial configuration (a vertex token and three interior tokens per cell) and
# the event: some token leaves the hull of its cell's tokens, widened by the radius 2·γ·diam(K).
P = ms.regular_polygon(5)
x0 = np.vstack([P.vertices, 0.5 * P.vertices[np.arange(15) % 5]])
gamma = 0.1
event = ms.LeaveHull(groups=P.assign(x0), radius=2 * gamma * P.diameter)

# %%
# One run per β: a ``FirstPassage`` per β. Its repr gives the counts.
runs = [
    ms.first_passage(
        ms.SoftmaxChain(beta=beta, gamma=gamma), x0, event, max_steps=5_000, chains=200, rng=1
    )
    for beta in (4.0, 6.0, 8.0)
]
runs[-1]

# %%
# ``stats.escape_rate``: the fitted escape rate with its interval.
stats.escape_rate(runs[-1])

# %%
# The scaling law log E[T] = a + b·β, fitted jointly over the βs (censored chains count).
frame = pd.concat([run.to_frame() for run in runs])
fit = stats.fit_scaling(frame)
fit  # noqa: B018 - the cell's displayed value

# %%
# The Kaplan–Meier curve of one β.
stats.survival(runs[0])

# %%
# The Arrhenius plot: the mean escape time per β with its interval (exact under the geometric
# law; the law-free bootstrap's at a β where the memorylessness test rejects that law, as the
# escape rate above reports its test), and the fitted law with its band.
fig = plotting.arrhenius_figure(stats.fit_report(frame))
