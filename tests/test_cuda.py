"""The CUDA backend: the same chains, the same streams, the CPU's bits under numba's simulator.

numba.cuda reads NUMBA_ENABLE_CUDASIM when it is first imported, so the device tests run in a
process of their own: :func:`test_cuda_backend_under_simulator` starts pytest on this file with
the simulator on and METASTAB_CUDA_TESTS=1, which enables the tests marked ``device``. On a
machine with a GPU, ``metastab bench --device cuda --check`` runs them on the device (without the
simulator). The device kernels round every product as written and fuse only where the CPU does
(metastab.kernels.cuda.arith; tests/test_cuda_compile.py), so the tests that demand the CPU's bits
hold there too, except where a libdevice function stands for the CPU's libm (the exp of the
unnormalised attention's scale). Cases are tiny: the simulator runs every thread in Python.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import metastab as ms
from metastab.kernels import params as K
from metastab.kernels.cpu import euclidean_steps as steps
from metastab.kernels.reference import euclidean as ref

# on a device, small test grids and host arrays draw performance warnings (not errors)
pytestmark = [
    pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning"),
    pytest.mark.filterwarnings("ignore::numba.cuda.core.errors.NumbaPerformanceWarning"),
]
INNER = os.environ.get("METASTAB_CUDA_TESTS") == "1"
SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
device = pytest.mark.skipif(
    not INNER,
    reason="runs in its own process (test_cuda_backend_under_simulator): numba.cuda must see "
    "NUMBA_ENABLE_CUDASIM before its first import",
)
libm = pytest.mark.skipif(
    INNER and not SIMULATOR,
    reason="libdevice's exp is not the CPU's libm exp: bit identity holds under the simulator",
)


outer = pytest.mark.outer


@pytest.mark.slow
@outer
def test_cuda_backend_under_simulator():
    """All the device tests below, under numba's CUDA simulator, in a fresh process."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", METASTAB_CUDA_TESTS="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--dist",
            "load",  # one file: test by test across the workers
            "-m",
            "not outer",
            __file__,
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent.parent,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]


@outer
def test_numpy_without_array_support_is_refused_before_any_work(monkeypatch):
    """numba-cuda 0.30 cannot compile kernels under numpy 2.5 (np.row_stack is gone): the
    backend says so, naming numpy, before any work; other import failures are not mistaken
    for it (numba's own CUDA target has no such module)."""
    import importlib

    from numba import cuda

    from metastab.engine import backends

    real = importlib.import_module

    def missing(name, *args):
        if name == "numba.cuda.np.arrayobj":
            raise AttributeError("module 'numpy' has no attribute 'row_stack'")
        return real(name, *args)

    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(backends.DeviceUnavailable, match=r"numpy .*row_stack.*numpy < 2\.5"):
        backends.Cuda()
    monkeypatch.setattr(importlib, "import_module", real)
    backends._check_array_support()  # the installed numba-cuda and numpy: nothing to refuse


@outer
def test_cuda_refused_in_one_line_without_a_gpu():
    """No GPU here (CI): device='cuda' fails with a clear error, the CLI in one line."""
    from numba import cuda

    if cuda.is_available():
        pytest.skip("a GPU is present")
    x0 = ms.regular_polygon(3).vertices
    with pytest.raises(ms.engine.backends.DeviceUnavailable, match="no CUDA GPU"):
        ms.simulate(ms.SoftmaxChain(beta=1.0, gamma=0.1), x0, steps=2, device="cuda")
    with pytest.raises(ValueError, match="device must be one of"):
        ms.simulate(ms.SoftmaxChain(beta=1.0, gamma=0.1), x0, steps=2, device="gpu")
    for args in (["simulate", "--steps", "2"], ["bench"]):
        proc = subprocess.run(
            [sys.executable, "-m", "metastab.cli", *args, "--device", "cuda"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and "no CUDA GPU" in proc.stderr, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "metastab.cli", "bench", "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "--device cuda only" in proc.stderr


# --------------------------------------------------------------------------------------------
# Device tests (METASTAB_CUDA_TESTS=1)
# --------------------------------------------------------------------------------------------


if INNER:  # kernels are module globals: the simulator swaps the ``cuda`` they see
    from numba import cuda, float64, uint64

    from metastab.kernels.cuda.drivers import block_shape, layout, model_arrays, step_for

    step = step_for(K.CHAIN)
    from metastab.kernels.cuda.euclidean_steps import exp_fused, next_u64

    @cuda.jit
    def _one_step(x, u, state, ip, fp, Bs, Vs, gamma, W):
        """The driver's ``step`` once on one chain with supplied uniforms."""
        d = Bs.shape[1]
        n = x.shape[0] // d
        buf = cuda.shared.array(0, float64)
        st = cuda.local.array(4, uint64)
        tid = cuda.threadIdx.x
        if tid == 0:
            for q in range(n * d):  # the buffer is token-minor
                buf[q % d * n + q // d] = x[q]
            for i in range(n):
                buf[3 * n * d + i] = u[i]
                buf[3 * n * d + n + i] = 0.0
            for w in range(4):
                st[w] = state[w]
        cuda.syncthreads()
        step(buf, n, d, ip, fp, Bs, Vs, gamma, 0.0, W[0], st, tid, cuda.blockDim.x)
        if tid == 0:
            for q in range(n * d):
                x[q] = buf[q % d * n + q // d]
            for w in range(4):
                state[w] = st[w]

    @cuda.jit
    def _draw(states, out):
        c = cuda.threadIdx.x
        for k in range(out.shape[1]):
            out[c, k] = next_u64(states[c])

    @cuda.jit
    def _exp(z, out):
        i = cuda.threadIdx.x
        out[i] = exp_fused(z[i])


def device_step(x, B, beta, gamma, u, state):
    """One device SA_P step of the configuration x (n×d) with the uniforms u (the driver's
    ``step``); advances ``state``."""
    n, d = x.shape
    flat = np.ascontiguousarray(x, dtype=float).ravel().copy()
    g = np.asarray(gamma, dtype=float)
    P, use_P = (g, True) if g.ndim == 2 else (np.eye(d), False)
    dyn = K.Dynamics(K.CHAIN, np.asarray(B, float), beta, P, use_P, False, 0.0, 0)
    threads = block_shape(n, d)[0]
    W = cuda.device_array((1, n * n))
    _one_step[1, threads, 0, 8 * layout(n, d)](
        flat,
        np.asarray(u, float),
        state,
        *model_arrays(dyn),
        float(g) if g.ndim == 0 else 1.0,
        W,
    )
    return flat.reshape(n, d)


@device
def test_streams_are_the_cpus():
    """xoshiro256** on the device: the CPU's outputs, with carries in every word."""
    states = np.array(
        [[2**64 - 1, 2**64 - 1, 2**63 + 5, 1], [1, 2, 3, 4], *ms.Seed(7).streams(2)],
        dtype=np.uint64,
    )
    out = np.zeros((4, 9), dtype=np.uint64)
    _draw[1, 4](states.copy(), out)
    for c in range(4):
        gen = ref.Xoshiro256(states[c])
        assert [int(v) for v in out[c]] == [gen.next_u64() for _ in range(9)]
    assert len(set(out.ravel().tolist())) == out.size  # negative control: the draws differ


@device
def test_exp_is_the_cpus():
    """exp_fused == the CPU kernels' exp bit for bit, across the flush to 0 at -708.74 and
    where 2^k p is subnormal (k = -1022, p < 1: rounded once, by the product or by ldexp)."""
    z = np.concatenate(
        [[-0.0, 0.0, -1e-300, -708.39, -708.74, -708.8, -745.2, -1e4], -np.geomspace(1e-6, 700, 24),
         np.linspace(-708.7, -708.0, 24)]
    )  # fmt: skip
    want = np.empty_like(z)
    steps.exp_nonpositive(z, want)
    got = np.zeros_like(z)
    _exp[1, z.size](z, got)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert got[-1] < got[0] and got[7] == 0.0


@device
@pytest.mark.parametrize("beta", [22.0, 28.0])
def test_rare_picks_and_bernoulli_boundary_same_bits(beta):
    """The Thm 5.4 triangle repeated to 33 tokens, every u at or next to the exact Bernoulli
    boundary of the rare picks (some rows need the stream's extra draws, some pick rare): the
    device step gives the reference's bits and leaves the stream in the same state."""
    x = np.tile(ms.regular_polygon(3).vertices, (11, 1)) * 0.8
    n = x.shape[0]
    drew = False
    for m in (0, 1, 3):
        u = np.full(n, m * 2.0**-53)
        u[::5] = 0.5
        seed_state = ms.Seed(m).streams(1)[0]
        gen = ref.Xoshiro256(seed_state.copy())
        want = ref.chain_step(x, np.eye(2), beta, 0.1, u, gen)
        state = seed_state.copy()
        assert np.array_equal(device_step(x, np.eye(2), beta, 0.1, u, state), want)
        assert [int(v) for v in state] == gen.s
        drew |= not np.array_equal(state, seed_state)
    assert drew


@device
def test_step_matrix_and_general_B_same_bits():
    """A non-symmetric B, a step matrix P and coincident tokens: the reference's bits; a
    different u moves the tokens elsewhere (negative control)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(7, 3))
    x[4] = x[1]
    B = rng.normal(size=(3, 3))
    P = 0.2 * np.eye(3) + 0.05 * rng.normal(size=(3, 3))
    u = rng.random(7)
    st = np.array([1, 2, 3, 4], dtype=np.uint64)
    want = ref.chain_step(x, B, 2.0, P, u)
    assert np.array_equal(device_step(x, B, 2.0, P, u, st.copy()), want)
    assert not np.array_equal(device_step(x, B, 2.0, P, 1 - u, st.copy()), want)


PENTAGON = ms.regular_polygon(5)


def _x0(n=7, seed=0):
    """The pentagon's vertices and n - 5 tokens at 0.6 of a random vertex."""
    rng = np.random.default_rng(seed)
    return np.vstack([PENTAGON.vertices, 0.6 * PENTAGON.vertices[rng.integers(0, 5, n - 5)]])


MODELS = {
    "chain": ms.SoftmaxChain(beta=6.0, gamma=0.2),
    "chain-B-schedule": ms.SoftmaxChain(
        beta=3.0, gamma=np.linspace(0.3, 0.1, 9), B=[[1.0, 0.3], [-0.2, 0.8]]
    ),
    "flow": ms.SoftmaxFlow(beta=4.0, gamma=0.3),
    "hardmax-index": ms.Hardmax(gamma=0.25),
    "hardmax-point": ms.Hardmax(gamma=0.25, ties="point"),
    "localmax": ms.Localmax(gamma=0.3, r=0.2),
}


@device
@pytest.mark.parametrize("name", list(MODELS))
def test_simulate_same_bits_as_cpu(name):
    """simulate on the device == on the CPU bit for bit, recorded states included (two chunks:
    record_every splits the run), from a per-chain x0 with chain offsets; another seed differs
    (negative control, where the model is random)."""
    model = MODELS[name]
    x0 = np.stack([_x0(seed=s) for s in range(3)])
    kw = dict(steps=8, rng=11, record_every=5, first_chain=2)
    cpu = ms.simulate(model, x0, **kw)
    gpu = ms.simulate(model, x0, device="cuda", **kw)
    assert np.array_equal(gpu.trajectory, cpu.trajectory)
    assert np.array_equal(gpu.final, cpu.final)
    assert not np.array_equal(cpu.final, x0)
    if isinstance(model, ms.SoftmaxChain):
        other = ms.simulate(model, x0, device="cuda", **{**kw, "rng": 12})
        assert not np.array_equal(other.final, cpu.final)


# event, beta, max_steps: some chains meet the event, some are censored
EVENTS = {
    "leave-ball": (lambda x0: ms.LeaveBall(0.4), 8.0, 10),
    "leave-hull": (lambda x0: ms.LeaveHull(groups=PENTAGON.assign(x0), radius=0.1), 8.0, 10),
    "reach": (lambda x0: ms.ReachVertices(PENTAGON.vertices, radius=0.2), 8.0, 3),
    "collapse": (lambda x0: ms.Collapse(1.0), 2.0, 8),
}


@device
@pytest.mark.parametrize("event", list(EVENTS))
def test_first_passage_same_bits_as_cpu(event):
    """Events on the device, censoring included: the CPU's steps, flags and final states."""
    x0 = _x0()
    make, beta, max_steps = EVENTS[event]
    model = ms.SoftmaxChain(beta=beta, gamma=0.3)
    kw = dict(max_steps=max_steps, chains=6, rng=3)
    cpu = ms.first_passage(model, x0, make(x0), **kw)
    gpu = ms.first_passage(model, x0, make(x0), device="cuda", **kw)
    assert np.array_equal(gpu.times, cpu.times)
    assert np.array_equal(gpu.censored, cpu.censored)
    assert np.array_equal(gpu.final, cpu.final)
    assert 0 < cpu.events < 6  # chains met the event at different steps, others censored


@device
def test_absorbed_chains_same_bits_as_cpu():
    """The clustered square, where some chains collapse out of the event's reach: the device
    finds the same absorbed chains at the same steps, in the same states."""
    P = ms.regular_polygon(4)
    x0 = np.vstack([P.vertices, P.vertices, 0.5 * P.vertices])
    event = ms.LeaveHull(groups=P.assign(x0), radius=0.8)
    model = ms.SoftmaxChain(beta=5.0, gamma=0.2)
    kw = dict(max_steps=2000, chains=6, rng=1)
    cpu = ms.first_passage(model, x0, event, **kw)
    gpu = ms.first_passage(model, x0, event, device="cuda", **kw)
    for name in ("times", "censored", "absorbed", "final"):
        assert np.array_equal(getattr(gpu, name), getattr(cpu, name)), name
    assert cpu.absorptions > 0


@device
def test_launch_shape_placement_and_batches_do_not_change_the_bits(monkeypatch):
    """Several chains per block (the default here), or one with its tokens strided over 4
    threads: the buffer and the weights in shared memory, the buffer
    only, or neither; chains in launches of 2: the bits of the default launch (a chain's path
    depends on its seed only; the same device on both sides, so this holds on a GPU too)."""
    from metastab.engine import backends
    from metastab.kernels.cuda import drivers as cuda_drivers

    x0 = _x0(n=9)
    n, d = x0.shape
    model = ms.SoftmaxChain(beta=5.0, gamma=0.2)
    kw = dict(steps=6, chains=5, rng=8, device="cuda")
    want = ms.simulate(model, x0, **kw).final
    assert cuda_drivers.block_shape(n, d)[2:] == (2, 14)  # the 5 chains in one block
    monkeypatch.setattr(cuda_drivers, "_MAX_THREADS", 4)
    monkeypatch.setattr(backends.Cuda, "_batch", lambda self, n, d, kind: 2)
    buf = 8 * cuda_drivers.layout(n, d)
    for place, limit in ((2, buf + 8 * n * n), (1, buf), (0, 0)):
        monkeypatch.setattr(cuda_drivers, "_SHARED_BYTES", limit)
        assert cuda_drivers.block_shape(n, d) == (4, limit, place, 1)
        assert np.array_equal(ms.simulate(model, x0, **kw).final, want), place
    first = ms.simulate(model, x0, **{**kw, "chains": 2, "first_chain": 3}).final
    assert np.array_equal(first, want[3:])
    assert not np.array_equal(first, want[:2])  # negative control: other chains differ
    # per-chain event centres with shared radii, split over the launches
    starts = np.stack([_x0(n=9, seed=s) for s in range(5)])
    fp = dict(max_steps=3, rng=8, device="cuda")
    batched = ms.first_passage(model, starts, ms.LeaveBall(0.3), **fp)
    monkeypatch.setattr(backends.Cuda, "_batch", lambda self, n, d, kind: 5)
    whole = ms.first_passage(model, starts, ms.LeaveBall(0.3), **fp)
    assert np.array_equal(batched.times, whole.times) and 0 < whole.events < 5


@device
def test_accelerated_mode_refused_on_cuda():
    x0 = ms.regular_polygon(3).vertices
    with pytest.raises(ValueError, match="device='cpu' only"):
        ms.first_passage(
            ms.SoftmaxChain(beta=1.0, gamma=0.1),
            x0,
            ms.LeaveBall(0.1),
            max_steps=10,
            mode="accelerated",
            device="cuda",
        )


@device
def test_chains_beyond_32_bit_indices_refused_before_any_allocation():
    # the kernels index a chain's weights and buffer with uint32: n^2 = 2^32 is one too many
    from metastab.kernels.cuda import drivers

    with pytest.raises(ValueError, match=r"n = 65536, d = 2 \(n\^2 = 4294967296\)"):
        drivers.Scratch(1, 65536, 2)


@device
def test_clusters_event_refused_on_cuda():
    x0 = ms.regular_polygon(3).vertices
    model = ms.SoftmaxFlow(beta=1.0, gamma=0.1)
    with pytest.raises(ValueError, match="Clusters event .*device='cpu' only"):
        ms.first_passage(model, x0, ms.Clusters(at_most=1), max_steps=10, device="cuda")
    with pytest.raises(ValueError, match="device='cpu' only"):
        ms.track(model, x0, steps=10, device="cuda")
    # record-only tracking (no per-step count) runs: the observables are reduced on the host
    tr = ms.track(model, x0, steps=10, merges=False, device="cuda")
    cpu = ms.track(model, x0, steps=10, merges=False)
    assert np.array_equal(tr.observables, cpu.observables)


def _sweep_config(**run):
    return {
        "model": {"kind": "softmax-chain", "gamma": 0.2},
        "grid": {"beta": [4.0]},
        "polytope": {"kind": "regular", "k": 3},
        "initial": {"kind": "repeated-points", "multiplicities": [2, 2, 2]},
        "event": {"kind": "leave-ball", "radius": 0.3},
        "run": {"chains": 4, "chunk": 2, "max_steps": 10, "seed": 7, **run},
    }


@outer
def test_sweep_device_is_checked_and_left_out_of_the_hash():
    """[run] device: "cpu" by default, "cuda" accepted, anything else refused by name; the
    config hash does not depend on it (a sweep may be resumed on another device)."""
    from metastab.sweep import Sweep

    plain, gpu = Sweep.from_dict(_sweep_config()), Sweep.from_dict(_sweep_config(device="cuda"))
    assert plain.config["run"]["device"] == "cpu" and gpu.points[0].device == "cuda"
    assert plain.hash == gpu.hash
    assert plain.hash != Sweep.from_dict(_sweep_config(seed=8)).hash
    with pytest.raises(ValueError, match=r"\[run\] device must be one of .* got 'tpu'"):
        Sweep.from_dict(_sweep_config(device="tpu"))


@device
def test_sweep_chunk_on_the_device_is_the_cpus():
    """A sweep's chunk with [run] device = "cuda": the CPU's chains."""
    from metastab.sweep import Sweep
    from metastab.sweep.chunks import ChunkTask, run_chunk

    point = Sweep.from_dict(_sweep_config(device="cuda")).points[0]
    task = ChunkTask.of(point, 1)
    assert task.device == "cuda"
    gpu = run_chunk(task)
    cpu = run_chunk(ChunkTask(**{**task.__dict__, "device": "cpu"}))
    assert np.array_equal(gpu.steps, cpu.steps) and np.array_equal(gpu.censored, cpu.censored)


@device
def test_check_writes_its_files(tmp_path):
    """The GPU check (without its pytest run, on tiny workloads): the laws agree, the negative
    control is rejected, and every file is written with the table and the device's name."""
    import json

    from metastab.bench import cuda_check

    tiny = (
        ("W1", 20, 2, (20.0,), 3, 2, 3, 2),
        ("sphere-6", 6, 3, (5.0,), 2, 2, 2, 2),
        ("phase-diagram", 4, 3, (1.0, 4.0), 2, 2, 2, 2),
    )
    ok = cuda_check.check(
        tmp_path,
        run_tests=False,
        repeat=1,
        workloads=tiny,
        agree=dict(beta=1.0, control=4.0, chains=24),
        bits=dict(steps=2, chains=2),
        limits=dict(bits=600.0, agreement=600.0, bench=600.0),
    )
    law = json.loads((tmp_path / "agreement.json").read_text())
    assert ok and law["passed"]
    same = json.loads((tmp_path / "bits.json").read_text())
    assert len(same) == 8 and all(r["equal"] and r["differing_values"] == 0 for r in same)
    assert min(law["same"].values()) >= 0.01 and max(law["control"].values()) < 0.01
    rows = json.loads((tmp_path / "bench.json").read_text())
    assert [r["workload"] for r in rows] == ["W1", "sphere-6", "phase-diagram"]
    assert all(r["metastab_cuda"] > 0 and r["metastab_cpu"] > 0 for r in rows)
    assert rows[0]["cuda_one_chain"] > 0  # W1 runs several chains per block: both are timed
    summary = (tmp_path / "summary.md").read_text()
    assert cuda_check.device_name() in summary and "| W1 | 20, 2, 20 |" in summary
    assert "| phase-diagram | 4, 3, 1/4 |" in summary


def _heads(d, seed):
    rng = np.random.default_rng(seed)
    return [(np.eye(d) + 0.3 * rng.normal(size=(d, d)), 0.8 * rng.normal(size=(d, d)))
            for _ in range(2)]  # fmt: skip


SPHERE_MODELS = {
    "flow-post-ln": lambda d: ms.SphereFlow(beta=4.0, dt=0.1),
    "flow-rk4-usa-causal-heads": lambda d: ms.SphereFlow(
        beta=2.0, dt=0.2, attention="unnormalized", scheme="rk4", causal=True, heads=_heads(d, 1)
    ),
    "flow-pre-ln-causal": lambda d: ms.SphereFlow(beta=3.0, dt=0.2, scheme="pre-ln", causal=True),
    "flow-post-ln-B-V": lambda d: ms.SphereFlow(
        beta=3.0, dt=0.3, B=_heads(d, 2)[0][0], V=_heads(d, 2)[0][1]
    ),  # fmt: skip
    "chain": lambda d: ms.SphereChain(beta=6.0, gamma=0.3),
    "chain-B-V": lambda d: ms.SphereChain(
        beta=3.0, gamma=0.4, B=_heads(d, 3)[0][0], V=_heads(d, 3)[0][1]
    ),  # fmt: skip
}


@device
@pytest.mark.parametrize(
    "name", [pytest.param(m, marks=libm) if "usa" in m else m for m in SPHERE_MODELS]
)
@pytest.mark.filterwarnings("ignore::metastab.exceptions.StepSizeWarning")  # bits, not accuracy
def test_sphere_models_same_bits_as_cpu(name):
    """The sphere flow (post-LN, pre-LN, RK4, softmax and unnormalised, causal, heads, B, V) and
    the sphere chain on the device: the CPU's bits, recorded states included; the chain with
    another seed differs (negative control). n = 7 and d = 6: the score and weighted-sum loops'
    blocks of four and their remainders."""
    x0 = ms.sphere_uniform(7, 6, chains=2, rng=4)
    model = SPHERE_MODELS[name](6)
    kw = dict(steps=5, rng=2, record_every=3)
    cpu = ms.simulate(model, x0, **kw)
    gpu = ms.simulate(model, x0, device="cuda", **kw)
    assert np.array_equal(gpu.trajectory, cpu.trajectory)
    assert not np.array_equal(cpu.final, x0)
    if isinstance(model, ms.SphereChain):
        other = ms.simulate(model, x0, device="cuda", **{**kw, "rng": 3})
        assert not np.array_equal(other.final, cpu.final)


@device
@pytest.mark.parametrize("scheme", ["post-ln", "rk4", "pre-ln"])
def test_sphere_flow_tokens_strided_same_bits_as_cpu(monkeypatch, scheme):
    """B = I with tokens strided over 4 threads: the block sums the norms of the common shift
    (each thread its own tokens) before any thread reads them; the CPU's bits."""
    from metastab.kernels.cuda import drivers as cuda_drivers

    monkeypatch.setattr(cuda_drivers, "_MAX_THREADS", 4)
    x0 = ms.sphere_uniform(9, 3, chains=2, rng=6)
    model = ms.SphereFlow(beta=3.0, dt=0.2, scheme=scheme)
    kw = dict(steps=3, rng=1)
    cpu = ms.simulate(model, x0, **kw)
    gpu = ms.simulate(model, x0, device="cuda", **kw)
    assert cuda_drivers.block_shape(9, 3, K.SPHERE_FLOW)[0] == 4
    assert np.array_equal(gpu.final, cpu.final) and not np.array_equal(cpu.final, x0)


@device
def test_sphere_first_passage_same_bits_as_cpu():
    """The sphere chain's first passage out of caps, censoring included: the CPU's steps."""
    x0 = ms.caps(np.eye(3)[:2], [3, 3], 0.2, rng=1)
    model = ms.SphereChain(beta=5.0, gamma=0.3)
    kw = dict(max_steps=8, chains=6, rng=5)
    cpu = ms.first_passage(model, x0, ms.LeaveBall(0.5), **kw)
    gpu = ms.first_passage(model, x0, ms.LeaveBall(0.5), device="cuda", **kw)
    assert np.array_equal(gpu.times, cpu.times) and np.array_equal(gpu.final, cpu.final)
    assert 0 < cpu.events < 6
