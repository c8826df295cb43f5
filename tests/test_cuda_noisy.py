"""NoisySphere on the CUDA backend: the CPU's bits under numba's simulator (its normals, (USA)
and softmax drifts, B and V, K = 0, odd n d, recorded states, events with censoring, several
chains per block, tokens strided over fewer threads, the buffer in global memory).

As in tests/test_cuda.py, numba.cuda reads NUMBA_ENABLE_CUDASIM at its first import, so the
device tests run in a process of their own (:func:`test_noisy_cuda_under_simulator`). On a GPU
(``metastab bench --device cuda --check`` runs tests/test_cuda*.py there) the normals use no libm
and the softmax drift none either, so those bits hold too; (USA)'s scale is a libdevice exp."""

import numpy as np
import pytest
from cuda_simulator import INNER, MARKS, libm, under_simulator
from cuda_simulator import device as _device

import metastab as ms
from metastab.kernels.reference import euclidean as ref_euclidean
from metastab.kernels.reference import sphere as ref_sphere

pytestmark = MARKS
device = _device("test_noisy_cuda_under_simulator")


@pytest.mark.slow
@pytest.mark.outer
def test_noisy_cuda_under_simulator():
    """The device tests below, under numba's CUDA simulator, in a fresh process."""
    under_simulator(__file__)


@pytest.mark.outer
def test_noisy_model_carries_its_coupling_and_layout_to_the_device():
    """Without a device: the kernels' float array carries K in its own slot (the flow's is 0),
    and a chain's buffer holds the drift and the n d + 1 normals (the odd n d's last pair)."""
    pytest.importorskip("numba.cuda", reason="numba-cuda is missing")
    from metastab.kernels import params as K
    from metastab.kernels.cuda import drivers

    noisy = ms.NoisySphere(beta=2.0, K=1.5, dt=0.1)
    ints, floats, Bs, Vs = drivers.model_arrays(noisy.kernel_params(3))
    assert ints[drivers.KIND] == K.NOISY_SPHERE and floats[drivers.COUPLING] == 1.5
    assert floats[drivers.BETA] == 2.0 and Bs.shape == Vs.shape == (1, 3, 3)
    flow = drivers.model_arrays(ms.SphereFlow(beta=2.0, dt=0.1).kernel_params(3))[1]
    assert flow[drivers.COUPLING] == 0.0
    assert drivers.layout(7, 9, K.NOISY_SPHERE) == 5 * 63 + 2 * 7 + 1
    assert drivers.layout(7, 9, K.NOISY_SPHERE) < drivers.layout(7, 9, K.SPHERE_FLOW)
    assert drivers.kernel_name(K.NOISY_SPHERE, K.LEAVE_BALL) == "advance[noisy-sphere,leave-ball]"


# --------------------------------------------------------------------------------------------
# Device tests (METASTAB_CUDA_TESTS=1)
# --------------------------------------------------------------------------------------------


if INNER:  # kernels are module globals: the simulator swaps the ``cuda`` they see
    from numba import cuda, float64, uint64

    from metastab.kernels.cuda.noisy_steps import standard_normals

    @cuda.jit
    def _normals(state, m, out):
        """The step's normals of one stream by the block's threads, into out (m + 1 doubles)."""
        buf = cuda.shared.array(0, float64)
        st = cuda.shared.array(4, uint64)
        tid = cuda.threadIdx.x
        if tid == 0:
            for w in range(4):
                st[w] = state[w]
        cuda.syncthreads()
        standard_normals(buf, 0, m, st, tid, cuda.blockDim.x)
        if tid == 0:
            for q in range(m):
                out[q] = buf[q]
            for w in range(4):
                state[w] = st[w]


@device
@pytest.mark.parametrize("m, threads", [(1, 1), (6, 4), (63, 4), (64, 32)])
def test_normals_are_the_references(m, threads):
    """m standard normals drawn by thread 0 in stream order and transformed by the block's
    threads: the reference's Box–Muller bits, the stream left where the reference leaves it
    (2 ((m + 1) // 2) uniforms on); another stream gives other normals (negative control).
    No libm: these bits hold on a device too."""
    seed = ms.Seed(5).streams(2)
    state = seed[0].copy()
    got = np.zeros(m)
    _normals[1, threads, 0, 8 * (m + 1)](state, m, got)
    gen = ref_euclidean.Xoshiro256(seed[0].copy())
    want = np.array(ref_sphere.standard_normals(gen, m))
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert [int(v) for v in state] == gen.s
    other = np.zeros(m)
    _normals[1, threads, 0, 8 * (m + 1)](seed[1].copy(), m, other)
    assert not np.array_equal(other, got)


def _B_V(d, seed):
    rng = np.random.default_rng(seed)
    return dict(B=np.eye(d) + 0.3 * rng.normal(size=(d, d)), V=0.8 * rng.normal(size=(d, d)))


NOISY_MODELS = {
    "usa": lambda d: ms.NoisySphere(2.0, 1.5, 0.05),
    "softmax": lambda d: ms.NoisySphere(3.0, 2.0, 0.05, attention="softmax"),
    "usa-B-V": lambda d: ms.NoisySphere(1.0, 1.0, 0.05, **_B_V(d, 1)),
    "softmax-B-V": lambda d: ms.NoisySphere(2.0, 1.0, 0.05, attention="softmax", **_B_V(d, 2)),
    "brownian": lambda d: ms.NoisySphere(2.0, 0.0, 0.05),  # K = 0: no drift, no exp
}


@device
@pytest.mark.parametrize(
    "name", [pytest.param(m, marks=libm) if "usa" in m else m for m in NOISY_MODELS]
)
@pytest.mark.parametrize("n, d", [(7, 9), (4, 2)])
@pytest.mark.filterwarnings("ignore::metastab.exceptions.StepSizeWarning")  # bits, not accuracy
def test_noisy_same_bits_as_cpu(name, n, d):
    """Each drift (softmax, (USA), with B and V) and pure noise (K = 0) on the device: the
    CPU's bits, recorded states included (two chunks), from chain offset 1; n d odd (7 × 9: the
    last pair's second normal dropped, and d > 8 wraps dot8's partial sums) and even (4 × 2,
    several chains per block). Negative controls: another seed differs, and (K > 0) so does
    K = 0, so the drift is in the bits."""
    x0 = ms.sphere_uniform(n, d, chains=3, rng=4)
    model = NOISY_MODELS[name](d)
    kw = dict(steps=4, rng=2, record_every=2, first_chain=1)
    cpu = ms.simulate(model, x0, **kw)
    gpu = ms.simulate(model, x0, device="cuda", **kw)
    assert np.array_equal(gpu.trajectory, cpu.trajectory)
    assert not np.array_equal(cpu.final, x0)
    other = ms.simulate(model, x0, device="cuda", **{**kw, "rng": 3})
    assert not np.array_equal(other.final, cpu.final)
    if model.K > 0:
        brownian = ms.simulate(ms.NoisySphere(model.beta, 0.0, model.dt), x0, **kw)
        assert not np.array_equal(brownian.final, cpu.final)


@device
def test_noisy_launch_shapes_do_not_change_the_bits(monkeypatch):
    """Several chains per block (the default at n = 5), one chain per block with its tokens
    and its normals' pairs strided over 4 threads, the buffer and weights in shared memory, the
    buffer only, or neither: the CPU's bits each time."""
    from metastab.kernels import params as K
    from metastab.kernels.cuda import drivers

    x0 = ms.sphere_uniform(5, 3, chains=3, rng=6)
    model = ms.NoisySphere(2.0, 1.0, 0.1, attention="softmax")
    kw = dict(steps=3, rng=1)
    want = ms.simulate(model, x0, **kw).final
    assert drivers.block_shape(5, 3, K.NOISY_SPHERE)[3] > 1
    assert np.array_equal(ms.simulate(model, x0, device="cuda", **kw).final, want)
    monkeypatch.setattr(drivers, "_MAX_THREADS", 4)
    buf = 8 * drivers.layout(5, 3, K.NOISY_SPHERE)
    for place, limit in ((2, buf + 8 * 25), (1, buf), (0, 0)):
        monkeypatch.setattr(drivers, "_SHARED_BYTES", limit)
        assert drivers.block_shape(5, 3, K.NOISY_SPHERE) == (4, limit, place, 1)
        assert np.array_equal(ms.simulate(model, x0, device="cuda", **kw).final, want), place


@device
@pytest.mark.parametrize("packed", [True, False])
def test_noisy_first_passage_same_bits_as_cpu(packed):
    """First passage out of caps at small K (the noise wins), censoring included, with several
    chains per block (a team whose chain stopped draws nothing more) and with one: the CPU's
    times, flags and final states."""
    import contextlib

    from metastab.kernels.cuda import drivers

    x0 = ms.caps(np.eye(3)[:2], [3, 3], 0.05, rng=1)
    model = ms.NoisySphere(4.0, 0.5, 0.005, attention="softmax")
    kw = dict(max_steps=6, chains=6, rng=5)
    cpu = ms.first_passage(model, x0, ms.LeaveBall(0.45), **kw)
    with contextlib.nullcontext() if packed else drivers.one_chain_per_block():
        gpu = ms.first_passage(model, x0, ms.LeaveBall(0.45), device="cuda", **kw)
    assert np.array_equal(gpu.times, cpu.times) and np.array_equal(gpu.censored, cpu.censored)
    assert np.array_equal(gpu.final, cpu.final)
    assert 0 < cpu.events < 6 and len(set(cpu.times[~cpu.censored])) > 1
