"""
The phase diagram of GLPR Fig. 3, in small
==========================================

The probability that tokens 1 and 2 are clustered, ``<x_1(t), x_2(t)> ≥ 1 − δ``, over random
starts on the sphere, on the (t, β) plane, beside the curve Γ on which the pairwise cosine of
*orthogonal* starts reaches 1 − δ (GLPR (6.9); *Model definitions*, "Published statements on the
sphere"). The ``phase-diagram`` study does this with 1024 starts per point and d up to 1024;
here 128 starts in d = 2 and d = 32.
"""

import matplotlib.pyplot as plt
import numpy as np

import metastab as ms
from metastab import theory

n, delta, dt, steps = 32, 1e-3, 0.1, 300
betas = np.arange(0.0, 9.5, 1.0)

# %%
# For each d and β: 128 independent uniform starts, the post-LN layer to t = 30, and the
# statistic ``pair12`` (tokens 1 and 2 clustered) recorded every 10 layers.
diagram = {}
for d in (2, 32):
    starts = ms.sphere_uniform(n, d, chains=128, rng=d)
    rows = []
    for beta in betas:
        tr = ms.track(
            ms.SphereFlow(beta, dt=dt),
            starts,
            steps=steps,
            rng=1,
            record_every=10,
            delta=delta,
            merges=False,
        )
        obs = tr.observables_frame()
        rows.append(obs.groupby("step")["pair12"].mean().to_numpy())
    diagram[d] = np.array(rows)  # β × recording time
times = np.arange(0, steps + 1, 10) * dt

# %%
# The diagram and Γ. How closely the transition follows the curve of (6.9): per β, the first
# recorded time at which at least half of the starts have tokens 1 and 2 clustered, against Γ.
gamma_curve = theory.phase_boundary(betas, n, delta=delta)
for d, grid in diagram.items():
    crossed = grid >= 0.5
    half = np.where(crossed.any(axis=1), times[crossed.argmax(axis=1)], np.nan)
    distance = np.nanmean(np.abs(half - gamma_curve))
    print(
        f"d = {d}: the time at which half the starts are clustered is {distance:.2f} from Γ on "
        f"average, over the {int(np.isfinite(half).sum())} of {betas.size} β where half are "
        f"clustered by t = {times[-1]:g}"
    )
fig, axes = plt.subplots(1, 2, figsize=(8, 3.5), sharey=True)
for ax, (d, grid) in zip(axes, diagram.items()):
    mesh = ax.pcolormesh(times, betas, grid, vmin=0, vmax=1, cmap="magma", shading="nearest")
    ax.plot(gamma_curve, betas, "w-", lw=2, label="Γ of (6.9)")
    ax.set(xlim=(0, times[-1]), xlabel="t", title=f"d = {d}")
axes[0].set_ylabel("β")
axes[0].legend(loc="lower right", fontsize="small")
colorbar = fig.colorbar(mesh, ax=axes, label="P(<x1, x2> ≥ 1 − δ)")
