"""The sphere flow's positional options on the CUDA backend: the CPU's bits under numba's
simulator (ALiBi, strict causal masks, (USA) normalised over the positional weights, the
e^{−β}-scaled field), every scheme.

As in tests/test_cuda.py, numba.cuda reads NUMBA_ENABLE_CUDASIM at its first import, so the device
tests run in a process of their own (:func:`test_positional_cuda_under_simulator`)."""

import numpy as np
import pytest
from cuda_simulator import MARKS, libm, under_simulator
from cuda_simulator import device as _device

import metastab as ms

pytestmark = MARKS
device = _device("test_positional_cuda_under_simulator")


@pytest.mark.slow
@pytest.mark.outer
def test_positional_cuda_under_simulator():
    """The device tests below, under numba's CUDA simulator, in a fresh process."""
    under_simulator(__file__)


PAPER = dict(
    attention="unnormalized", causal=True, strict_causal=True, positional_norm=True, alibi=1.0
)
OPTIONS = {
    "paper": PAPER,
    "strict-softmax": dict(causal=True, strict_causal=True),
    "alibi-softmax": dict(alibi=2.5),
    "alibi-causal-softmax-BV": dict(causal=True, alibi=0.7, B=0.5 * np.eye(4) + 0.1, V=np.eye(4)),
    "positional-usa": dict(attention="unnormalized", positional_norm=True, alibi=0.5),
    "rescale-usa": dict(attention="unnormalized", rescale=True, causal=True),
}


@device
@pytest.mark.parametrize("scheme", ["post-ln", "rk4", "pre-ln"])
@pytest.mark.parametrize(
    "option", [pytest.param(o, marks=libm) if "usa" in o or o == "paper" else o for o in OPTIONS]
)
@pytest.mark.filterwarnings("ignore::metastab.exceptions.StepSizeWarning")  # bits, not accuracy
def test_positional_flow_same_bits_as_cpu(option, scheme):
    """Every scheme with each positional option on the device: the CPU's bits, recorded states
    included (n = 7, d = 4); the negative control: the option changes the bits."""
    x0 = ms.sphere_uniform(7, 4, chains=2, rng=4)
    model = ms.SphereFlow(beta=2.0, dt=0.2, scheme=scheme, **OPTIONS[option])
    kw = dict(steps=4, rng=2, record_every=2)
    cpu = ms.simulate(model, x0, **kw)
    gpu = ms.simulate(model, x0, device="cuda", **kw)
    assert np.array_equal(gpu.trajectory, cpu.trajectory)
    assert not np.array_equal(cpu.final, x0)
    plain = {k: v for k, v in OPTIONS[option].items() if k in ("attention", "B", "V")}
    base = ms.simulate(ms.SphereFlow(beta=2.0, dt=0.2, scheme=scheme, **plain), x0, **kw)
    assert not np.array_equal(base.final, cpu.final)


@device
@libm
def test_rescaled_large_beta_same_bits_as_cpu():
    """β = 1e6 with the e^{−β}-scaled field, tokens in caps (so that weights do not all vanish):
    finite, the CPU's bits."""
    x0 = ms.caps(np.eye(3)[:2], [3, 3], 1e-3, rng=1)
    model = ms.SphereFlow(beta=1e6, dt=0.1, attention="unnormalized", rescale=True)
    cpu = ms.simulate(model, x0, steps=3, rng=1)
    gpu = ms.simulate(model, x0, steps=3, rng=1, device="cuda")
    assert np.isfinite(cpu.final).all() and np.array_equal(gpu.final, cpu.final)
