"""
A hysteresis loop of the noisy transformer
==========================================

The noisy (USA) transformer on the circle (:class:`metastab.NoisySphere`) has a first-order
phase transition in its coupling K when β exceeds the tricritical β_* = 2.4469 (Mun–Rosenzweig):
between the fold K_fold and the linear threshold K_# the uniform and the clustered states are
both stable, and a slow sweep of K up and down draws a loop in the order parameter m_1. Here we
sweep K quasi-statically (each K starts from the end state of the previous one) at β = 6 with
N = 128 tokens, and draw the loop with intervals over independent sweeps beside the mean-field
branches of :func:`metastab.theory.stationary_branch`. The full measurement, with β below and
above β_* and computed verdicts, is the study ``metastab study noisy-transition``.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import t

import metastab as ms
from metastab import theory

beta, d, n, dt, chains = 6.0, 2, 128, 0.005, 8
k_sharp = theory.critical_coupling_linear(beta, d)
k_c, k_fold = theory.critical_coupling(beta, d), theory.fold_coupling(beta, d)
print(f"K_# = {k_sharp:.4f}, K_c = {k_c / k_sharp:.4f} K_#, K_fold = {k_fold / k_sharp:.4f} K_#")

# %%
# The sweep: 3 time units at each K to equilibrate, then m_1 averaged over 3 more (recorded
# every 0.1). The chains are independent sweeps, each with its own stream; every stage of the
# sweep draws from its own child of one seed.
factors = np.round(np.arange(0.80, 1.101, 0.03), 2)
stages = [("up", f) for f in factors] + [("down", f) for f in factors[-2::-1]]
seeds = np.random.SeedSequence(7).spawn(len(stages) + 1)
x = ms.sphere_uniform(n, d, chains=chains, rng=seeds[0])
skip, every, steps = 600, 20, 1200
means = []
for (_, f), seed in zip(stages, seeds[1:]):
    run = ms.simulate(
        ms.NoisySphere(beta, f * k_sharp, dt),
        x,
        steps=steps,
        rng=seed,
        record_at=range(skip + every, steps + 1, every),
        progress=False,
    )
    x = run.final
    m = ms.order_parameters(run.trajectory.reshape(-1, n, d))[:, 0].reshape(chains, -1)
    means.append(m.mean(axis=1))  # one time average per chain
means = np.array(means)

# %%
# The loop: the mean over the sweeps with a 95 % Student t interval, up and down, beside the
# mean-field stationary states (stable: solid; the saddle between them: dashed). The scheme's
# noise is (1 − (d + 2) dt) of Brownian motion's, a coupling 2 % higher than K; and at finite N
# each jump comes before the mean-field end of its branch, where the barrier N ΔF is small;
# the wide intervals at the jumps are the sweeps jumping at different K.
half = t.ppf(0.975, chains - 1) * means.std(axis=1, ddof=1) / np.sqrt(chains)
branch = theory.stationary_branch(beta, d)
stable = branch.index == 0
fig, ax = plt.subplots(figsize=(6.4, 4.4))
ax.plot(branch.coupling[stable] / k_sharp, branch.order[stable], "k", lw=1.2, label="stable")
ax.plot(branch.coupling[~stable] / k_sharp, branch.order[~stable], "k--", lw=1, label="saddle")
ax.plot([factors[0], 1], [0, 0], "k", lw=1.2)
ax.plot([1, factors[-1]], [0, 0], "k--", lw=1)
for direction, mark in (("up", "^-"), ("down", "v-")):
    rows = [i for i, (s, _) in enumerate(stages) if s == direction]
    f = [stages[i][1] for i in rows]
    ax.errorbar(f, means[rows].mean(axis=1), yerr=half[rows], fmt=mark, ms=4, capsize=2,
                label=f"sweep {direction}")  # fmt: skip
ax.axvline(k_c / k_sharp, color="C3", lw=0.8, label="K_c")
ax.axvline(k_fold / k_sharp, color="C2", lw=0.8, ls=":", label="K_fold")
ax.set(
    xlim=(factors[0] - 0.01, factors[-1] + 0.01),
    ylim=(-0.02, 1.02),
    xlabel="K / K_#",
    ylabel="m_1",
    title=f"β = {beta:g}, N = {n}, {chains} sweeps",
)
ax.legend(fontsize=8)
plt.show()
