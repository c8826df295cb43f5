"""The normalisation schemes of Karagodin et al. (SphereFlow(scheme="peri-ln" | "ngpt" | "mix-ln" |
"ln-scaling")): the CPU kernels == the pure-Python reference bit for bit, and the device == the CPU
under numba's CUDA simulator (in a process of its own, as tests/test_cuda.py does)."""

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import metastab as ms
from metastab.kernels.cpu import sphere_steps as SK
from metastab.kernels.params import MIX_LN
from metastab.kernels.reference import sphere as sref
from metastab.models.sphere import SphereFlow

INNER = os.environ.get("METASTAB_CUDA_TESTS") == "1"
device = pytest.mark.skipif(
    not INNER, reason="runs in its own process (test_schemes_under_cuda_simulator)"
)
host = pytest.mark.skipif(INNER, reason="the CPU tests run in the outer process")

RNG = np.random.default_rng(20251024)
D = 3
MATRICES = {
    "identity": {},
    "BV": {"B": RNG.normal(size=(D, D)), "V": RNG.normal(size=(D, D))},
    "heads": {"heads": [(RNG.normal(size=(D, D)), RNG.normal(size=(D, D))) for _ in range(2)]},
}
SCHEMES = {
    "peri-ln": {},
    "ngpt": {"alpha": 0.7},
    "ln-scaling": {},
    "mix-ln": {"tau": 0.5},  # 5 post-LN layers of dt = 0.1, then pre-LN
}


def on_sphere(rng, *shape):
    x = rng.normal(size=shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def run_reference(model, x, steps, first=0):
    """The reference's steps first .. first + steps − 1 of ``model`` from x."""
    d = x.shape[1]
    heads = list(zip(*model.head_matrices(d)))
    for k in range(first, first + steps):
        x = sref.sphere_flow_step(
            x, heads, model.beta, model.dt, attention=model.attention, scheme=model.scheme,
            causal=model.causal, alpha=model.alpha, tau=model.tau, step=k,
        )  # fmt: skip
    return x


CASES = list(itertools.product(SCHEMES, ("softmax", "unnormalized"), (False, True), MATRICES))


@host
@pytest.mark.parametrize("scheme, attention, causal, mats", CASES)
@pytest.mark.filterwarnings("ignore::metastab.exceptions.StepSizeWarning")  # bits, not accuracy
def test_simulate_matches_reference(scheme, attention, causal, mats):
    """12 steps of 3 chains (the state held in the kernels' scratch from step to step; Mix-LN
    switches at step 5): the reference's bits. Negative control: the reference of another
    scheme gives other bits."""
    m = SphereFlow(
        1.5, 0.1, attention=attention, scheme=scheme, causal=causal, **SCHEMES[scheme],
        **MATRICES[mats],
    )  # fmt: skip
    x0 = on_sphere(np.random.default_rng(5), 3, 6, D)
    run = ms.simulate(m, x0, steps=12, rng=1)
    for c in range(3):
        assert np.array_equal(run.final[c], run_reference(m, x0[c], 12))
    wrong = SphereFlow(1.5, 0.1, attention=attention, scheme="pre-ln", causal=causal,
                       **MATRICES[mats])  # fmt: skip
    assert not np.array_equal(run.final[0], run_reference(wrong, x0[0], 12))


@host
@pytest.mark.parametrize("scheme", ["peri-ln", "ngpt"])
@pytest.mark.parametrize("mats", ["identity", "BV"])
def test_single_step_matches_reference(scheme, mats):
    """The step called from Python (the drivers' path with an event: the state read from x and
    written to out), with the schedule's size (nGPT: dt α)."""
    m = SphereFlow(2.0, 0.3, scheme=scheme, **SCHEMES[scheme], **MATRICES[mats])
    x = on_sphere(np.random.default_rng(11), 7, D) * 1.3  # peri-LN: off the sphere, as it runs
    if scheme == "ngpt":
        x = on_sphere(np.random.default_rng(11), 7, D)
    dyn = m.kernel_params(D)
    out = np.full_like(x, np.nan)
    h = float(m.schedule(0, 1).sizes[0])
    SK.sphere_flow_step(x, dyn.Bs, dyn.Vs, dyn.beta, h, dyn.attention, dyn.scheme, dyn.causal,
                        dyn.strict, dyn.alibi, dyn.positional, dyn.offset, dyn.plain_B,
                        dyn.plain_V, out, SK.sphere_flow_work(7, D))  # fmt: skip
    assert np.array_equal(out, run_reference(m, x, 1))


@host
def test_mix_ln_has_no_step_of_its_own():
    with pytest.raises(ValueError, match="Mix-LN steps by POST_LN or PRE_LN"):
        SK.scheme_step(MIX_LN)


@host
def test_mix_ln_switches_across_calls():
    """Steps run in calls of several sizes (the engine doubles them): a call that straddles the
    switch, and calls after it, give the reference's bits; the time-dependent schemes read the
    global step, not the call's."""
    m = SphereFlow(3.0, 0.05, scheme="mix-ln", tau=0.37)  # post-LN for steps 0 .. 7
    assert m.post_layers == 8
    x0 = on_sphere(np.random.default_rng(3), 2, 5, D)
    run = ms.simulate(m, x0, steps=40, rng=2, record_at=[3, 9, 40])
    for c in range(2):
        assert np.array_equal(run.final[c], run_reference(m, x0[c], 40))
    s = SphereFlow(3.0, 0.05, scheme="ln-scaling")
    run = ms.simulate(s, x0, steps=40, rng=2, record_at=[3, 9, 40])
    assert np.array_equal(run.final[1], run_reference(s, x0[1], 40))


@host
@pytest.mark.slow
@pytest.mark.parametrize("n", [40, 64])
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_threads_and_gram_paths_match_reference(scheme, n):
    """One chain of 40 tokens (each step's blocks split over the threads) and two of 64 (the
    blocked Gram of B = I): the reference's bits."""
    m = SphereFlow(3.0, 0.1, scheme=scheme, **SCHEMES[scheme])
    chains = 1 if n == 40 else 2
    x0 = on_sphere(np.random.default_rng(n), chains, n, 4)
    run = ms.simulate(m, x0, steps=8, rng=1)
    for c in range(chains):
        assert np.array_equal(run.final[c], run_reference(m, x0[c], 8))


# --- the device, under the simulator -------------------------------------------------------


@pytest.mark.slow
@host
def test_schemes_under_cuda_simulator():
    """The device tests of this file under numba's CUDA simulator, in a fresh process (numba.cuda
    reads NUMBA_ENABLE_CUDASIM when first imported)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", METASTAB_CUDA_TESTS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-m",
         "slow or not slow", __file__],
        env=env, capture_output=True, text=True, cwd=Path(__file__).parent.parent.parent,
        timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout, proc.stdout[-2000:]


DEVICE_MODELS = {
    "peri-ln-causal": lambda: SphereFlow(3.0, 0.2, scheme="peri-ln", causal=True),
    "peri-ln-heads": lambda: SphereFlow(2.0, 0.2, scheme="peri-ln", **MATRICES["heads"]),
    "ngpt-BV": lambda: SphereFlow(3.0, 0.2, scheme="ngpt", alpha=0.5, **MATRICES["BV"]),
    "ln-scaling": lambda: SphereFlow(4.0, 0.2, scheme="ln-scaling"),
    "mix-ln": lambda: SphereFlow(3.0, 0.2, scheme="mix-ln", tau=0.5),
}


@device
@pytest.mark.parametrize("name", list(DEVICE_MODELS))
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")
def test_device_same_bits_as_cpu(name):
    """Each scheme on the device: the CPU's bits, recorded states included (Mix-LN switches at
    step 3, between two recorded states)."""
    x0 = ms.sphere_uniform(7, D, chains=2, rng=4)
    model = DEVICE_MODELS[name]()
    kw = dict(steps=6, rng=2, record_every=2)
    cpu = ms.simulate(model, x0, **kw)
    gpu = ms.simulate(model, x0, device="cuda", **kw)
    assert np.array_equal(gpu.trajectory, cpu.trajectory)
    assert not np.array_equal(cpu.final[:, :, :], x0)
