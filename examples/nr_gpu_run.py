"""
Running on a GPU
================

``device="cuda"`` runs the same chains on an NVIDIA GPU: the same per-chain streams, the same exp
and the same pick rule, so under numba's CUDA simulator the GPU code gives the CPU's bits, and on
a device the laws agree (see the user guide, *The GPU*). This example needs a GPU and the
``cuda`` extra (``pip install -e '.[cuda]'``), so the documentation shows it without running it.
"""

import numpy as np

import metastab as ms

# %%
# The pentagon example of *Getting started* with 65 536 chains on the device.
P = ms.regular_polygon(5)
x0 = np.vstack([P.vertices, 0.5 * P.vertices[np.arange(15) % 5]])
event = ms.LeaveHull(groups=P.assign(x0), radius=2 * 0.1 * P.diameter)
model = ms.SoftmaxChain(beta=13.0, gamma=0.1)
fp_gpu = ms.first_passage(model, x0, event, max_steps=20_000, chains=65_536, rng=1, device="cuda")

# %%
# Chain k draws from the same stream on either device, so the first 256 chains can be set
# beside the CPU's (``metastab bench --device cuda --check`` compares devices this way, and
# compares the escape-time laws by two-sample tests).
fp_cpu = ms.first_passage(model, x0, event, max_steps=20_000, chains=256, rng=1)
print("same escape times:", np.mean(fp_gpu.times[:256] == fp_cpu.times))
print("mean escape time, GPU:", fp_gpu.times.sum() / fp_gpu.events)

# %%
# The sphere flow of the phase diagram, 2048 starts in d = 128, on the device.
starts = ms.sphere_uniform(32, 128, chains=2048, rng=1)
run = ms.simulate(ms.SphereFlow(4.0, dt=0.1), starts, steps=300, device="cuda")
cos12 = np.einsum("ck,ck->c", run.final[:, 0], run.final[:, 1])
print((cos12 >= 1 - 1e-3).mean())

# %%
# The device check, and the compilation for sm_80 / sm_90 that needs no GPU::
#
#     metastab bench --device cuda --check --out gpu-check
#     metastab bench --device cuda --compile-only --out gpu-kernels
