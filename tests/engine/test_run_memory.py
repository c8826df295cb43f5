"""The memory estimate of a run (refused above a share of the available memory before anything
is allocated) counts what the kernels allocate per thread, the sphere flow's Gram matrix too."""

import numpy as np
import pytest
from cli_calls import run

import metastab as ms
from metastab import _validate as validate
from metastab.engine.chains import run_bytes
from metastab.kernels.cpu import euclidean_steps as steps
from metastab.kernels.cpu import events
from metastab.kernels.cpu import sphere_steps as sphere

FLOW = ms.SphereFlow(beta=1.0, dt=0.1)


def buffer_bytes(*buffers) -> int:
    """Bytes of the distinct arrays in (nested tuples of) scratch buffers: a view of another
    buffer, same address and size, counts once."""
    seen = {}
    stack = list(buffers)
    while stack:
        b = stack.pop()
        if isinstance(b, tuple):
            stack.extend(b)
        else:
            seen[(b.ctypes.data, b.nbytes)] = b.nbytes
    return sum(seen.values())


def kernel_scratch(model, n: int, d: int) -> int:
    """What one thread that runs chains allocates (kernels.cpu.drivers.advance and
    kernels.cpu.drivers.advance): the step's output, its uniforms and the work factories."""
    own = (np.empty((n, d)), np.empty(n), events.hull_work(n, d))
    if isinstance(model, ms.SphereFlow):
        return buffer_bytes(*own, sphere.sphere_flow_work(n, d))
    if isinstance(model, ms.SphereChain):
        return buffer_bytes(*own, sphere.chain_work(n, d))
    factories = (steps.chain_work, steps.softmax_flow_work, steps.hardmax_work, steps.localmax_work)
    return buffer_bytes(*own, *(f(n, d) for f in factories))


@pytest.mark.parametrize(
    "model", [ms.SoftmaxChain(2.0), FLOW, ms.SphereChain(1.0)], ids=lambda m: m.kind
)
@pytest.mark.parametrize("n, d", [(5, 3), (64, 3), (512, 16), (2048, 3)])
def test_estimate_covers_the_kernels_scratch(model, n, d):
    """Beyond the state (8nd), its finiteness mask (nd) and the per-chain counters (48), the
    estimate of one chain holds every buffer of the thread that runs it, the n×n Gram included
    (n = 512, 2048: 2 MiB, 32 MiB), and not more than twice that plus one block per thread."""
    import numba

    scratch = run_bytes(1, n, d, model) - (8 * n * d + n * d + 48)
    need = kernel_scratch(model, n, d)
    block = 8 * 32 * (2 * n + 2 * d + 3)
    assert need <= scratch <= 2 * need + numba.get_num_threads() * block


def test_sphere_flow_estimate_grows_as_n_squared():
    """The flow's Gram matrix holds n^2 scores (8 bytes each) per thread, the rest grows
    linearly in n: over n = m, 2m, 4m the second difference (f(4m) − f(2m)) − 2 (f(2m) − f(m))
    is 6·8·m^2 for one chain; 0 for a Euclidean flow in R^3, which keeps no Gram (control)."""

    def curvature(model):
        a, b, c = (run_bytes(1, n, 3, model) for n in (512, 1024, 2048))
        return (c - b) - 2 * (b - a)

    assert curvature(FLOW) == 6 * 8 * 512**2
    assert curvature(ms.SoftmaxFlow(2.0)) == 0


def test_too_large_sphere_run_is_refused_in_one_line(monkeypatch, capsys):
    """With memory for the tokens but not for the Gram matrix, a flow of 2048 tokens is refused
    from Python and from the command line (one line, exit status 2), before it allocates."""
    need = run_bytes(1, 2048, 3, FLOW)
    without_gram = need - 8 * 2048**2
    avail = (need + without_gram) / 2 / validate.MEMORY_SHARE  # between the two
    monkeypatch.setattr(validate, "available_memory", lambda: avail)
    x0 = np.tile([1.0, 0.0, 0.0], (2048, 1))
    with pytest.raises(MemoryError, match=r"a run of 1 chains of 2048 tokens in R\^3 needs"):
        ms.simulate(FLOW, x0, steps=1)
    argv = (
        "simulate",
        "--model",
        "sphere-flow",
        "--beta",
        "1",
        "--dt",
        "0.1",
        "--n",
        "2048",
        "--chains",
        "1",
    )
    code, out, err = run(capsys, *argv, "--init", "sphere-uniform:3", "--steps", "1")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("metastab: error: a run of 1 chains of 2048 tokens in R^3 needs")
