"""The order-parameter events (LeaveUniform, ReachUniform, degrees 1 and 2) on the CUDA backend:
the CPU's first-passage steps and states under numba's simulator, with several chains per block,
one chain per block, and fewer threads than coordinates.

As in tests/test_cuda.py, numba.cuda reads NUMBA_ENABLE_CUDASIM at its first import, so the device
tests run in a process of their own (:func:`test_order_events_cuda_under_simulator`)."""

import numpy as np
import pytest
from cuda_simulator import MARKS, under_simulator
from cuda_simulator import device as _device

import metastab as ms

pytestmark = MARKS
device = _device("test_order_events_cuda_under_simulator")


@pytest.mark.slow
@pytest.mark.outer
def test_order_events_cuda_under_simulator():
    """The device tests below, under numba's CUDA simulator, in a fresh process."""
    under_simulator(__file__)


MODELS = {
    "flow": ms.SphereFlow(beta=2.0, dt=0.2),
    "chain": ms.SphereChain(beta=4.0, gamma=0.3),
    "flow-repel": ms.SphereFlow(beta=1.0, dt=0.2, V=-np.eye(6)),
}
STEPS = 6


def _level(model, x0, degree, away):
    """A level that some chains meet within STEPS steps and others not: the median of the
    chains' m_degree at step STEPS of the CPU's run."""
    final = ms.simulate(model, x0, steps=STEPS, rng=3).final
    m = ms.order_parameters(final)[:, degree - 1]
    start = ms.order_parameters(x0)[:, degree - 1]
    level = float(np.median(m))
    assert (start < level).all() if away else (start > level).all()  # not met at t = 0
    return level


@device
@pytest.mark.parametrize("degree", [1, 2])
@pytest.mark.parametrize(
    "name, packing", [("flow", "teams"), ("chain", "teams"), ("flow-repel", "one"),
                      ("chain", "strided")],
)  # fmt: skip
def test_order_events_same_steps_as_cpu(monkeypatch, name, packing, degree):
    """n = 7, d = 6: several chains per block, one per block, or 4 threads (fewer than the 6
    coordinates and rows, so that a thread sums two). Times and final states are the CPU's; a
    level no chain meets leaves every chain censored on both (negative control of a trivial
    pass)."""
    from metastab.kernels.cuda import drivers as cuda_drivers

    if packing == "one":
        monkeypatch.setattr(cuda_drivers, "_PACK_THREADS", 0)
    elif packing == "strided":
        monkeypatch.setattr(cuda_drivers, "_PACK_THREADS", 0)
        monkeypatch.setattr(cuda_drivers, "_MAX_THREADS", 4)
    model = MODELS[name]
    away = name != "flow-repel"
    x0 = (
        ms.sphere_uniform(7, 6, chains=4, rng=8)
        if away
        else ms.caps(np.eye(6)[:1], [7], 0.4, chains=4, rng=8)
    )
    cls = ms.LeaveUniform if away else ms.ReachUniform
    event = cls(_level(model, x0, degree, away), degree)
    kw = dict(max_steps=STEPS, rng=3)
    cpu = ms.first_passage(model, x0, event, **kw)
    gpu = ms.first_passage(model, x0, event, device="cuda", **kw)
    assert np.array_equal(gpu.times, cpu.times) and np.array_equal(gpu.final, cpu.final)
    assert 0 < cpu.events < 4, cpu.times
    never = cls(1.0 if away else 1e-9, degree)
    assert ms.first_passage(model, x0, never, device="cuda", **kw).censored.all()
