"""Every bad input is refused with ValueError/TypeError naming the parameter and the value."""

import importlib
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import metastab as ms
from metastab.engine import chains as sim
from metastab.exceptions import StepSizeWarning

validate = importlib.import_module("metastab._validate")

X0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5]])
CHAIN = ms.SoftmaxChain(beta=1.0, gamma=0.5)


def _nan_at(i, j, value):
    x = X0.copy()
    x[i, j] = value
    return x


# (id, call, exception, regex that must name the parameter and the value)
CASES = [
    # initial configuration
    (
        "x0-nan",
        lambda: ms.simulate(CHAIN, _nan_at(1, 0, np.nan), steps=1),
        ValueError,
        r"x0.*\[1, 0\].*nan",
    ),
    (
        "x0-inf",
        lambda: ms.simulate(CHAIN, _nan_at(2, 1, np.inf), steps=1),
        ValueError,
        r"x0.*\[2, 1\].*inf",
    ),
    (
        "x0-neg-inf",
        lambda: ms.first_passage(CHAIN, _nan_at(0, 0, -np.inf), ms.Collapse(1.0), max_steps=1),
        ValueError,
        r"x0.*-inf",
    ),
    (
        "x0-nan-per-chain",
        lambda: ms.simulate(CHAIN, np.stack([X0, _nan_at(0, 1, np.nan)]), steps=1),
        ValueError,
        r"x0.*\[1, 0, 1\].*nan",
    ),
    ("x0-1d", lambda: ms.simulate(CHAIN, np.zeros(3), steps=1), ValueError, r"x0.*\(3,\)"),
    (
        "x0-4d",
        lambda: ms.simulate(CHAIN, np.zeros((2, 3, 2, 1)), steps=1),
        ValueError,
        r"x0.*\(2, 3, 2, 1\)",
    ),
    (
        "x0-empty",
        lambda: ms.simulate(CHAIN, np.zeros((0, 2)), steps=1),
        ValueError,
        r"x0.*\(0, 2\)",
    ),
    (
        "x0-no-dims",
        lambda: ms.simulate(CHAIN, np.zeros((3, 0)), steps=1),
        ValueError,
        r"x0.*\(3, 0\)",
    ),
    ("x0-ragged", lambda: ms.simulate(CHAIN, [[1.0, 2.0], [3.0]], steps=1), ValueError, r"x0"),
    (
        "x0-chains-mismatch",
        lambda: ms.simulate(CHAIN, np.stack([X0] * 3), chains=2, steps=1),
        ValueError,
        r"chains=2.*3",
    ),
    # key-query matrix
    (
        "B-wrong-d",
        lambda: ms.simulate(ms.SoftmaxChain(beta=1.0, B=np.eye(3)), X0, steps=1),
        ValueError,
        r"B.*2×2.*\(3, 3\)",
    ),
    (
        "B-not-square",
        lambda: ms.SoftmaxChain(beta=1.0, B=[[1.0, 2.0, 3.0]]),
        ValueError,
        r"B.*\(1, 3\)",
    ),
    ("B-vector", lambda: ms.Hardmax(B=[1.0, 2.0]), ValueError, r"B.*\(2,\)"),
    (
        "B-nan",
        lambda: ms.SoftmaxFlow(beta=1.0, B=[[1.0, np.nan], [0.0, 1.0]]),
        ValueError,
        r"B.*nan",
    ),
    (
        "B-wrong-d-first-passage",
        lambda: ms.first_passage(ms.Hardmax(B=np.eye(1)), X0, ms.Collapse(1.0), max_steps=1),
        ValueError,
        r"B.*\(1, 1\)",
    ),
    # beta
    ("beta-negative", lambda: ms.SoftmaxChain(beta=-0.5), ValueError, r"beta.*-0\.5"),
    ("beta-nan", lambda: ms.SoftmaxFlow(beta=np.nan), ValueError, r"beta.*nan"),
    ("beta-inf", lambda: ms.SoftmaxChain(beta=np.inf), ValueError, r"beta.*inf"),
    ("beta-string", lambda: ms.SoftmaxChain(beta="hot"), ValueError, r"beta.*hot"),
    ("beta-none", lambda: ms.SoftmaxChain(beta=None), ValueError, r"beta.*None"),
    # gamma
    ("gamma-zero", lambda: ms.SoftmaxChain(beta=1.0, gamma=0.0), ValueError, r"gamma.*0\.0"),
    ("gamma-above-one", lambda: ms.Hardmax(gamma=1.5), ValueError, r"gamma.*1\.5"),
    ("gamma-negative", lambda: ms.SoftmaxFlow(beta=1.0, gamma=-0.1), ValueError, r"gamma.*-0\.1"),
    ("gamma-nan", lambda: ms.Hardmax(gamma=np.nan), ValueError, r"gamma.*nan"),
    (
        "gamma-schedule-zero",
        lambda: ms.Hardmax(gamma=[0.5, 0.0, 0.2]),
        ValueError,
        r"gamma\[1\].*0\.0",
    ),
    (
        "gamma-schedule-nan",
        lambda: ms.Hardmax(gamma=[0.5, 0.2, np.nan]),
        ValueError,
        r"gamma\[2\].*nan",
    ),
    ("gamma-schedule-empty", lambda: ms.Hardmax(gamma=[]), ValueError, r"gamma.*empty"),
    (
        "gamma-matrix-shape",
        lambda: ms.Hardmax(gamma=np.full((2, 3), 0.1)),
        ValueError,
        r"gamma.*\(2, 3\)",
    ),
    (
        "gamma-matrix-wrong-d",
        lambda: ms.simulate(ms.Hardmax(gamma=np.eye(3) / 2), X0, steps=1),
        ValueError,
        r"gamma.*2×2.*\(3, 3\)",
    ),
    (
        "gamma-callable-bad",
        lambda: ms.simulate(ms.Hardmax(gamma=lambda t: 0.0), X0, steps=2),
        ValueError,
        r"gamma\(0\).*0\.0",
    ),
    ("gamma-string", lambda: ms.SoftmaxChain(beta=1.0, gamma="fast"), ValueError, r"gamma.*fast"),
    # counts
    ("chains-zero", lambda: ms.simulate(CHAIN, X0, steps=1, chains=0), ValueError, r"chains.*0"),
    (
        "chains-negative",
        lambda: ms.first_passage(CHAIN, X0, ms.Collapse(1.0), max_steps=1, chains=-3),
        ValueError,
        r"chains.*-3",
    ),
    (
        "chains-float",
        lambda: ms.simulate(CHAIN, X0, steps=1, chains=2.5),
        ValueError,
        r"chains.*2\.5",
    ),
    ("steps-zero", lambda: ms.simulate(CHAIN, X0, steps=0), ValueError, r"steps.*0"),
    ("steps-float", lambda: ms.simulate(CHAIN, X0, steps=10.0), ValueError, r"steps.*10\.0"),
    (
        "max-steps-zero",
        lambda: ms.first_passage(CHAIN, X0, ms.Collapse(1.0), max_steps=0),
        ValueError,
        r"max_steps.*0",
    ),
    (
        "max-steps-negative",
        lambda: ms.first_passage(CHAIN, X0, ms.Collapse(1.0), max_steps=-5),
        ValueError,
        r"max_steps.*-5",
    ),
    (
        "record-every-zero",
        lambda: ms.simulate(CHAIN, X0, steps=5, record_every=0),
        ValueError,
        r"record_every.*0",
    ),
    (
        "first-chain-negative",
        lambda: ms.simulate(CHAIN, X0, steps=1, first_chain=-1),
        ValueError,
        r"first_chain.*-1",
    ),
    # events
    ("ball-radius-zero", lambda: ms.LeaveBall(0.0), ValueError, r"radius.*0\.0"),
    ("ball-radius-negative", lambda: ms.LeaveBall(-2.0), ValueError, r"radius.*-2\.0"),
    ("ball-radius-nan", lambda: ms.LeaveBall(np.nan), ValueError, r"radius.*nan"),
    (
        "ball-centers-shape",
        lambda: ms.first_passage(
            CHAIN, X0, ms.LeaveBall(1.0, centers=np.zeros((2, 2))), max_steps=1
        ),
        ValueError,
        r"centers.*\(2, 2\)",
    ),
    (
        "hull-radius-zero",
        lambda: ms.LeaveHull(groups=[0, 0, 1], radius=0),
        ValueError,
        r"radius.*0",
    ),
    (
        "hull-groups-length",
        lambda: ms.first_passage(CHAIN, X0, ms.LeaveHull(groups=[0, 1], radius=0.5), max_steps=1),
        ValueError,
        r"groups.*n=3.*2",
    ),
    (
        "hull-groups-float",
        lambda: ms.LeaveHull(groups=[0.5, 1.0, 0.0], radius=0.5),
        ValueError,
        r"groups.*0\.5",
    ),
    ("hull-groups-2d", lambda: ms.LeaveHull(groups=[[0, 1, 0]], radius=0.5), ValueError, r"groups"),
    (
        "reach-radius-negative",
        lambda: ms.ReachVertices([[0.0, 1.0]], radius=-1.0),
        ValueError,
        r"radius.*-1\.0",
    ),
    (
        "reach-vertex-radius-zero",
        lambda: ms.ReachVertices([[0.0, 1.0]], radius=1.0, vertex_radius=0.0),
        ValueError,
        r"vertex_radius.*0\.0",
    ),
    (
        "reach-vertices-dim",
        lambda: ms.first_passage(CHAIN, X0, ms.ReachVertices(np.zeros((2, 3)), 1.0), max_steps=1),
        ValueError,
        r"vertices.*\(2, 3\)",
    ),
    (
        "reach-assignment-range",
        lambda: ms.ReachVertices([[0.0, 1.0], [1.0, 0.0]], radius=1.0, assignment=[0, 2, 1]),
        ValueError,
        r"assignment.*\[0, 2, 1\]",
    ),
    (
        "reach-assignment-length",
        lambda: ms.first_passage(
            CHAIN, X0, ms.ReachVertices(np.eye(2), 1.0, assignment=[0, 1]), max_steps=1
        ),
        ValueError,
        r"assignment.*n=3.*2",
    ),
    ("collapse-diameter-zero", lambda: ms.Collapse(0.0), ValueError, r"diameter.*0\.0"),
    ("collapse-diameter-inf", lambda: ms.Collapse(np.inf), ValueError, r"diameter.*inf"),
    # hardmax ties
    ("ties-unknown", lambda: ms.Hardmax(ties="random"), ValueError, r"ties.*random"),
    ("tol-negative", lambda: ms.Hardmax(tol=-1e-3), ValueError, r"tol.*-0\.001"),
    ("tol-one", lambda: ms.Hardmax(tol=1.0), ValueError, r"tol.*1\.0"),
    ("tol-nan", lambda: ms.Hardmax(tol=np.nan), ValueError, r"tol.*nan"),
    # wrong types
    ("model-type", lambda: ms.simulate("softmax", X0, steps=1), TypeError, r"model.*softmax"),
    (
        "event-type",
        lambda: ms.first_passage(CHAIN, X0, "leave", max_steps=1),
        TypeError,
        r"event.*leave",
    ),
    ("rng-type", lambda: ms.simulate(CHAIN, X0, steps=1, rng="seed"), TypeError, r"rng.*seed"),
    ("rng-negative", lambda: ms.simulate(CHAIN, X0, steps=1, rng=-4), ValueError, r"rng.*-4"),
    ("step-matrix-singular", lambda: ms.step_matrix(-np.eye(2)), ValueError, r"V.*singular"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused_with_name_and_value(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_trajectory_larger_than_memory_is_refused_before_allocating():
    tracemalloc.start()
    try:
        with pytest.raises(MemoryError, match=r"record_every=1.*needs [0-9.]+ GiB.*[0-9.]+ GiB"):
            ms.simulate(CHAIN, X0, steps=10**15, chains=4, record_every=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # nothing near the requested size was allocated


def test_trajectory_limit_is_a_share_of_available_memory(monkeypatch):
    """A small request is refused when the allowed share is tiny: the check runs on every
    recorded run, not only on absurd ones."""
    ms.simulate(CHAIN, X0, steps=100, record_every=1)
    need = sim.run_bytes(1, 3, 2)
    monkeypatch.setattr(validate, "available_memory", lambda: 2 * need + 100)
    ms.simulate(CHAIN, X0, steps=100)  # the state alone fits
    with pytest.raises(MemoryError, match="record_every=1"):
        ms.simulate(CHAIN, X0, steps=100, record_every=1)


def test_step_matrix_that_blows_up_is_reported():
    """A step matrix can make the hull grow without bound: a non-finite state raises with the
    chain and step instead of returning NaN."""
    P = np.array([[1e150, 0.0], [0.0, 1e150]])  # not a valid (I+V)^{-1}V but allowed as P
    model = ms.Hardmax(gamma=P, B=-np.eye(2))
    with pytest.raises(FloatingPointError, match=r"chain 0.*step"):
        ms.simulate(model, X0, steps=50)


def test_finite_entries_whose_sum_overflows_are_finite():
    """The finiteness checks sum first (one pass, no mask): a sum that overflows from finite
    entries falls back to the entries one by one, so such a state passes, while one infinite
    or NaN entry among them is caught (controls)."""
    from metastab.engine.chains import _all_finite

    big = np.full((3, 4, 2), 1e308)
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.sum(big))  # the fast path alone would call it non-finite
    assert _all_finite(big) and _all_finite(-big)
    for bad in (np.inf, -np.inf, np.nan):
        x = big.copy()
        x[2, 3, 1] = bad
        assert not _all_finite(x)
    mixed = np.zeros((2, 2))
    mixed[0, 0], mixed[1, 1] = np.inf, -np.inf  # the sum is NaN
    assert not _all_finite(mixed)


def test_unstable_step_size_is_named_with_its_value():
    """RK4 with a step far beyond its stability region ((USA): weights up to e^β): the error
    names dt with its value and the remedy, not overflowing scores (x0 is on the sphere, the
    scores are bounded); the same start with a ten times smaller dt stays finite (control)."""
    x0 = ms.sphere_uniform(8, 3, rng=1)
    flow = ms.SphereFlow(beta=4.0, dt=0.5, scheme="rk4", attention="unnormalized")
    with pytest.raises(FloatingPointError) as err, pytest.warns(StepSizeWarning, match="dt = 0.5"):
        ms.simulate(flow, x0, steps=50)
    assert str(err.value) == (
        "chain 0 has a non-finite state by step 16: the step size dt = 0.5 is too large to be "
        "stable; use a smaller dt"
    )
    small = ms.SphereFlow(beta=4.0, dt=0.05, scheme="rk4", attention="unnormalized")
    assert np.isfinite(ms.simulate(small, x0, steps=50).final).all()
    P = np.array([[1e150, 0.0], [0.0, 1e150]])
    with pytest.raises(FloatingPointError, match="step matrix gamma grew the hull without bound"):
        ms.simulate(ms.Hardmax(gamma=P, B=-np.eye(2)), X0, steps=50)


# --------------------------------------------------------------------------- memory


@pytest.mark.parametrize(
    "call",
    [
        lambda: ms.simulate(CHAIN, X0, steps=1, chains=10**12),
        lambda: ms.first_passage(CHAIN, X0, ms.LeaveBall(0.1), max_steps=1, chains=10**12),
        lambda: ms.first_passage(
            CHAIN, X0, ms.LeaveBall(0.1), max_steps=1, chains=10**12, mode="accelerated"
        ),
    ],
    ids=["simulate", "first_passage", "accelerated"],
)
def test_state_larger_than_memory_is_refused_before_allocating(call):
    tracemalloc.start()
    try:
        with pytest.raises(MemoryError, match=r"10+ chains of 3 tokens in R\^2 needs [0-9.]+ GiB"):
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20


def test_exact_mode_too_large_is_refused_before_allocating():
    """Exact mode's resolution check is linear in memory per configuration; what cannot fit is
    the state itself, refused with the numbers before anything is allocated (not a SystemError
    from a kernel)."""
    x0 = np.random.default_rng(0).normal(size=(100_000, 2))
    with pytest.raises(MemoryError, match=r"100000 chains of 100000 tokens.*needs [0-9.]+ GiB"):
        ms.first_passage(CHAIN, x0, ms.LeaveBall(0.1), max_steps=1, chains=100_000)


def test_the_state_is_copied_once():
    """Peak memory of a run is one copy of the state (and the kernels' small buffers), not
    three: measured with tracemalloc, which sees NumPy's allocations."""
    chains = 20_000
    x0 = np.random.default_rng(1).normal(size=(20, 2))
    state = chains * x0.nbytes
    ms.simulate(CHAIN, x0, steps=1, chains=2)  # compiled before measuring
    tracemalloc.start()
    try:
        run = ms.simulate(CHAIN, x0, steps=1, chains=chains)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert run.final.nbytes == state
    assert peak < 1.4 * state, peak / state


def test_available_memory_is_memavailable():
    """Free pages leave out the page cache that the kernel hands back on demand: the limit is
    MemAvailable where /proc/meminfo has it."""
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        pytest.skip("no /proc/meminfo")
    line = next(x for x in meminfo.read_text().splitlines() if x.startswith("MemAvailable:"))
    expected = int(line.split()[1]) * 1024
    assert abs(validate.available_memory() - expected) < 0.05 * expected
