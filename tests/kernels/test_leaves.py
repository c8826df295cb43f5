"""The leaves written once (:mod:`metastab.kernels.leaves`) give the CPU's bits on the device.

Each leaf is compiled by ``numba.njit`` over the CPU's arithmetic and by ``cuda.jit(device=True)``
over the device's; here both run on fixed inputs at their edges (carries in every word of the
streams, the exp's flush to 0 and its subnormal scale, Bernoulli trials that need the stream's
extra draws, rare picks that fall in their own rare part, corrals of the hull's algorithm that
lose points, hull distances of inner, outer and thin hulls), the device under numba's CUDA
simulator, which must be enabled before numba.cuda is first imported: a process of its own. The
slow tier (tests/test_cuda.py) runs the whole steps and drivers there.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import metastab
from metastab.kernels import arith, leaves, streams
from metastab.kernels.cpu import euclidean_steps as steps
from metastab.kernels.cpu import events

# the exp's edges: signed zeros, the flush to 0 at -708.74, 2^k p subnormal for k = -1022
EXP_Z = np.concatenate(
    [[-0.0, 0.0, -1e-300, -708.39, -708.74, -708.8, -745.2, -1e4], -np.geomspace(1e-6, 700, 24),
     np.linspace(-708.7, -708.0, 24)]
)  # fmt: skip
# xoshiro states with carries in every word of the products by 5 and 9
STATES = np.array(
    [[2**64 - 1, 2**64 - 1, 2**63 + 5, 1], [1, 2, 3, 4], [2**63, 2**62 + 1, 7, 2**64 - 9]],
    dtype=np.uint64,
)
# Bernoulli trials: u = floor(p 2^53) 2^-53 leaves the trial to the stream's next draws
BERN_P = np.array([0.3, 2.0**-60, 1.0 / 3.0, 0.0, 1.0, 0.75, 0.3, 2.0**-30])
BERN_U = np.floor(BERN_P * 2.0**53) * 2.0**-53
BERN_U[-2:] = [0.75 - 2.0**-53, 0.9]
# rows of weights below RARE_CUT (the rare part of a pick), some with a rare part of their own
RARE_W = np.array(
    [
        [2.0**-21, 2.0**-22, 2.0**-45, 2.0**-60, 3.0 * 2.0**-23],
        [2.0**-25, 0.0, 2.0**-25, 2.0**-70, 2.0**-46],
        [2.0**-21, 2.0**-41, 2.0**-42, 2.0**-80, 2.0**-90],
    ]
)
# corrals of Wolfe's algorithm: weights w, affine weights a; the first two move to the
# simplex's face (points leave), the last is interior
CORRAL_W = np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
CORRAL_A = np.array([[0.7, -0.1, 0.35, 0.05], [-0.2, 0.1, -0.6, 1.7], [0.1, 0.2, 0.3, 0.4]])
# Wolfe's algorithm whole: 7 points in R^3 (the last two 1e-9 off the segment of the first two)
# and query points inside, outside, and just outside a vertex
_g = np.random.default_rng(7)
HULL_PTS = np.concatenate([_g.normal(size=(5, 3)), [[0.3, 0.2, 0.1], [-0.4, 0.1, 0.2]]])
HULL_PTS[5:] = HULL_PTS[0] + np.array([[0.25], [0.75]]) * (HULL_PTS[1] - HULL_PTS[0]) + 1e-9
_c = HULL_PTS.mean(0)
_far = HULL_PTS[np.argmax(np.linalg.norm(HULL_PTS - _c, axis=1))]  # a vertex: the hull lies in
HULL_Q = np.concatenate([[_c], 3 * _g.normal(size=(6, 3)),  # its ball about _c, so 1e-4 beyond
                         [_far + 1e-4 * (_far - _c)]])  # fmt: skip
HULL_MEMBERS = np.array([0, 1, 2, 3, 4, 5, 6], np.int64)

_ON_THE_SIMULATOR = """
import json, sys
import numpy as np
from numba import cuda
from metastab.kernels import leaves
from metastab.kernels.cuda import events
from metastab.kernels.cuda import euclidean_steps as steps

@cuda.jit
def streams(states, u64, uni):
    for c in range(states.shape[0]):
        for k in range(u64.shape[1]):
            u64[c, k] = steps.next_u64(states[c])
        for k in range(uni.shape[1]):
            uni[c, k] = steps.next_uniform(states[c])

@cuda.jit
def exp(z, out):
    for i in range(z.shape[0]):
        out[i] = steps.exp_fused(z[i])

@cuda.jit
def bernoulli(p, u, states, out):
    for i in range(p.shape[0]):
        out[i] = steps.bernoulli(p[i], u[i], states[i])

@cuda.jit
def pick_rare(w, states, out):
    n = w.shape[1]
    flat = w.ravel()
    for c in range(w.shape[0]):
        out[c] = steps._pick_rare(flat, c * n, 1, n, leaves.RARE_CUT, states[c])

@cuda.jit
def shrink(S, wa, size, last):
    for c in range(S.shape[0]):
        # as the device holds them: the affine weights after the weights, in one array
        size[c], last[c] = events._shrink(S[c], wa[c], wa[c], S.shape[1], S.shape[1])

@cuda.jit
def hull(p, pts, members, stop, out, q, S, w):
    d = 3
    for i in range(out.shape[0]):
        out[i] = events.hull_dist2(p, i * d, pts, 0, members, 0, members.shape[0], stop, d,
                                   q, S, w)

arrays = np.load(sys.argv[1])
states = arrays["states"]
u64 = np.zeros((states.shape[0], 9), np.uint64)
uni = np.zeros((states.shape[0], 4))
st = states.copy()
streams[1, 1](st, u64, uni)
z = arrays["z"]
e = np.zeros_like(z)
exp[1, 1](z, e)
p, u = arrays["p"], arrays["u"]
bstates = np.repeat(states[:1], p.size, axis=0)
b = np.zeros(p.size, np.bool_)
bernoulli[1, 1](p, u, bstates, b)
w = arrays["w"]
pstates = states[: w.shape[0]].copy()
picks = np.zeros(w.shape[0], np.int64)
pick_rare[1, 1](w, pstates, picks)
S = np.tile(np.arange(4), (3, 1))
wa = np.concatenate([arrays["cw"], arrays["ca"]], axis=1)
size = np.zeros(3, np.int64)
last = np.zeros(3, np.bool_)
shrink[1, 1](S, wa, size, last)
hq, hs = events.hull_scratch(len(arrays["members"]), 3)
dist = np.zeros(len(arrays["hq"]))
hull[1, 1](arrays["hq"].ravel(), arrays["hp"].ravel(), arrays["members"], -1.0, dist,
           np.zeros(hq), np.zeros(hs, np.int64), np.zeros(hq))
np.savez(sys.argv[2], u64=u64, uni=uni, exp=e, bern=b, bstates=bstates, picks=picks,
         pstates=pstates, S=S, cw=wa[:, :4], size=size, last=last, hull=dist)
# the same code objects as the CPU's leaves: written once
names = ("next_u64", "next_uniform", "exp_fused", "bernoulli", "_pick_rare")
files = {name: getattr(steps, name).fn.__code__.co_filename for name in names}
files["_shrink"] = events._shrink.fn.__code__.co_filename
files["_affine_min"] = events._affine_min.fn.__code__.co_filename
files["hull_dist2"] = events.hull_dist2.fn.__code__.co_filename
print(json.dumps(files))
"""


def _cpu():
    """The CPU's outputs on the fixed inputs (the kernels' njit leaves)."""
    st = STATES.copy()
    u64 = np.array([[streams.next_u64(s) for _ in range(9)] for s in st], np.uint64)
    uni = np.array([[streams.next_uniform(s) for _ in range(4)] for s in st])
    e = np.empty_like(EXP_Z)
    steps.exp_nonpositive(EXP_Z, e)
    bstates = np.repeat(STATES[:1], BERN_P.size, axis=0)
    b = np.array([steps.bernoulli(p, u, s) for p, u, s in zip(BERN_P, BERN_U, bstates)])
    pstates = STATES[: RARE_W.shape[0]].copy()
    n = RARE_W.shape[1]
    picks = np.array(
        [steps._pick_rare(w, 0, 1, n, leaves.RARE_CUT, s) for w, s in zip(RARE_W, pstates)]
    )
    S = np.tile(np.arange(4), (3, 1))
    cw = CORRAL_W.copy()
    moved = [events._shrink(S[c], cw[c], CORRAL_A[c], 0, 4) for c in range(3)]
    size = np.array([m[0] for m in moved])
    last = np.array([m[1] for m in moved])
    work = events.hull_work(len(HULL_MEMBERS), 3)
    dist = np.array([events.hull_dist2(q, HULL_PTS, HULL_MEMBERS, -1.0, work) for q in HULL_Q])
    return dict(
        u64=u64, uni=uni, exp=e, bern=b, bstates=bstates, picks=picks, pstates=pstates,
        S=S, cw=cw, size=size, last=last, hull=dist,
    )  # fmt: skip


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The device leaves' outputs on the same inputs, under numba's CUDA simulator, and the
    files their code comes from."""
    folder = tmp_path_factory.mktemp("leaves")
    inputs, outputs = folder / "in.npz", folder / "out.npz"
    np.savez(
        inputs, states=STATES, z=EXP_Z, p=BERN_P, u=BERN_U, w=RARE_W, cw=CORRAL_W, ca=CORRAL_A,
        hp=HULL_PTS, hq=HULL_Q, members=HULL_MEMBERS,
    )  # fmt: skip
    root = Path(metastab.__file__).parent.parent
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(root))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_ON_THE_SIMULATOR), str(inputs), str(outputs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(np.load(outputs)), json.loads(proc.stdout.splitlines()[-1])


def test_the_device_leaves_are_the_cpus_code(simulated):
    _, files = simulated
    assert set(files.values()) == {leaves.__file__}
    for name in ("next_u64", "next_uniform", "bernoulli"):
        assert getattr(steps, name).py_func.__code__.co_filename == leaves.__file__
    assert steps._pick_rare.py_func.__code__.co_filename == leaves.__file__
    assert events._shrink.py_func.__code__.co_filename == leaves.__file__
    assert events._hull.py_func.__code__.co_filename == leaves.__file__
    assert arith.exp_fma.py_func.__code__.co_filename == leaves.__file__


def test_leaves_give_the_cpus_bits_under_the_simulator(simulated):
    got, _ = simulated
    want = _cpu()
    for name, value in want.items():
        a, b = np.asarray(got[name]), np.asarray(value)
        assert a.dtype.itemsize == b.dtype.itemsize and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name
    # the inputs reach the edges they are there for
    assert want["exp"][7] == 0.0 and 0.0 < want["exp"][4] < 2.0**-1022  # flushed, subnormal
    assert not np.array_equal(want["bstates"][0], STATES[0])  # a trial drew from its stream
    assert set(want["bern"].tolist()) == {True, False}
    assert not np.array_equal(want["pstates"], STATES[:3])  # the rare picks drew
    assert want["size"].tolist() == [3, 2, 4] and want["last"].tolist() == [False, False, True]
    inside, outside = want["hull"][0], want["hull"][1:7]
    assert inside == 0.0 and (outside > 0).sum() >= 3 and 0 < want["hull"][7] < 1e-7


def test_naive_arithmetic_would_change_the_bits():
    """Negative control: the exp built with a multiply-add rounded twice (the simulator's
    ``cuda.fma``, or an implicit contraction undone) differs from the CPU's on these inputs,
    so the comparison above sees a target whose arithmetic drifts."""
    naive = leaves.exp_nonpositive(
        lambda a, b, c: a * b + c, lambda a, b: a * b, arith_bits, float_of_bits
    )
    want = np.empty_like(EXP_Z)
    steps.exp_nonpositive(EXP_Z, want)
    got = np.array([naive(z) for z in EXP_Z])
    assert got.tobytes() != want.tobytes()
    exact = leaves.exp_nonpositive(arith.fma_exact, lambda a, b: a * b, arith_bits, float_of_bits)
    assert np.array([exact(z) for z in EXP_Z]).tobytes() == want.tobytes()


def arith_bits(x: float) -> np.int64:
    return np.array(x, np.float64).view(np.int64)[()]


def float_of_bits(i) -> float:
    return float(np.array(i, np.int64).view(np.float64))
