"""
Clusters on the circle and their merge times
============================================

Tokens started uniformly on the circle gather into a few clusters quickly and then stay there
for a long time before the clusters merge (GLPR Fig. 4; the theory is in the user guide's
*Model definitions*, "Models on the sphere"). ``metastab.track`` runs the post-LN layer of
``SphereFlow`` on many independent starts and records, for every chain, the first step with at
most k clusters, so merge times come out as censored first-passage times.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import metastab as ms
from metastab.results.track import plateau_durations

# %%
# 64 independent starts of 32 tokens on the circle, the post-LN layer with dt = 0.1 at
# β = 4 up to t = 30 (300 layers). The cluster count is recorded at a few steps.
xs = ms.sphere_uniform(32, 2, chains=64, rng=0)
tr = ms.track(ms.SphereFlow(beta=4.0, dt=0.1), xs, steps=300, rng=1, record_every=10)
obs = tr.observables_frame()
print(obs[obs.step == 180]["clusters"].value_counts().sort_index().to_dict())

# %%
# The distribution of the number of clusters over time: after a fast phase, two clusters
# dominate at β = 4.
few = obs.assign(clusters=obs["clusters"].clip(upper=6))  # 6 stands for "6 or more"
counts = few.pivot_table(index="time", columns="clusters", values="chain", aggfunc="count")
counts = counts.rename(columns={6: "6+"})
ax = (counts.fillna(0) / 64).plot.area(figsize=(6, 3.5), cmap="viridis", linewidth=0)
ax.set(xlabel="time t", ylabel="share of starts", title="clusters of (SA) on the circle, β = 4")
ax.legend(title="clusters", fontsize="small", loc="center right")
plt.tight_layout()

# %%
# The plateaus: one row per chain and cluster count k, with the step at which the chain
# reached k clusters (``start``) and the step that ended the plateau (``end``; censored at
# the horizon when no merge ended it).
plateaus = tr.to_frame()
print(plateaus[["chain", "k", "start", "end", "censored"]].head(8).to_string())

# %%
# The last merge, from two clusters to one, takes exponentially long in β. Its durations,
# censored where the horizon cut them, are a first-passage table for the scaling fit: a
# censored plateau lasted at least its duration to the horizon, and the fit counts it so (as
# exposure without an event); a fit of the merged plateaus alone is printed beside it.
tracks = [ms.track(ms.SphereFlow(beta=b, dt=0.1), xs, steps=3000, rng=1) for b in (2.0, 3.0, 4.0)]
table = pd.concat([t.to_frame() for t in tracks])
durations = plateau_durations(table, 2)
law = ms.stats.fit_scaling(durations)
low, high = law.confidence_interval("slope")
print(f"b = {law.slope:.3f}, 95% interval [{low:.3f}, {high:.3f}]")
merged = ms.stats.fit_scaling(durations[~durations.censored])
at4 = [float(np.exp(fit.log_mean([4.0]))[0]) for fit in (merged, law)]
print(
    f"the merged plateaus alone: b = {merged.slope:.3f}, mean at β = 4 {at4[0]:.3g} layers "
    f"against {at4[1]:.3g} with the censored ones"
)
counts = durations.groupby("beta")["censored"].agg(plateaus="size", censored="sum")
print(counts.to_string())

# %%
# Each 2-cluster plateau: a dot where a merge ended it, a triangle at the horizon where it was
# still open (its duration is at least that); the line is the fitted mean of the durations,
# the censored ones included, with its 95% band.
fig, ax = plt.subplots(figsize=(5, 3.5))
jitter = np.random.default_rng(0)
for censored, marker, label in ((False, "o", "merged"), (True, "^", "censored at the horizon")):
    rows = durations[durations.censored == censored]
    x = rows.beta + jitter.uniform(-0.08, 0.08, len(rows))
    color = "C1" if censored else "C0"
    ax.scatter(x, rows.steps, s=10, marker=marker, alpha=0.5, color=color, label=label)
betas = np.linspace(2, 4, 50)
band = law.band(betas)
ax.plot(betas, np.exp(law.log_mean(betas)), "k-", label="fitted mean (censored included)")
ax.fill_between(betas, np.exp(band.low), np.exp(band.high), color="k", alpha=0.15, linewidth=0)
ax.set(yscale="log", xlabel="β", ylabel="duration of the 2-cluster plateau (layers)")
ax.legend(fontsize="small")
plt.tight_layout()
