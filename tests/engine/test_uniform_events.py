"""The sphere order parameters m_1, m_2 and their events LeaveUniform / ReachUniform: exact
values on constructed configurations, the kernel against the reference bit for bit, the law
at the uniform state, first passages against the reference, track's columns and bad inputs."""

import math

import numpy as np
import pytest

import metastab as ms
from metastab.kernels import params as K
from metastab.kernels.cpu import events as _events
from metastab.kernels.cpu import order as korder
from metastab.kernels.reference import euclidean as ref
from metastab.kernels.reference import order as rorder
from metastab.kernels.reference import sphere as sref
from metastab.registry import event_from_dict

EVENTS = [
    ms.LeaveUniform(0.6),
    ms.LeaveUniform(0.7, 2),
    ms.ReachUniform(0.3),
    ms.ReachUniform(0.4, 2),
]


def _m(x, degree):
    return korder.order_parameter(np.ascontiguousarray(x, dtype=float), degree)


def _numpy_order(x):
    """m_1, m_2 by NumPy's reductions (another order of summation)."""
    n, d = x.shape
    q = x.T @ x / n - np.eye(d) / d
    return np.linalg.norm(x.mean(axis=0)), np.linalg.norm(q) / math.sqrt((d - 1) / d)


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 3, 5, 8])
def test_constructed_configurations_have_their_exact_values(d):
    """One cluster: m_1 = m_2 = 1; an antipodal pair: m_1 = 0, m_2 = 1; an orthonormal frame
    ±e_k: both 0 (m_1 = 0 and the frame's m_2 exactly; the clusters' m_2 within 4 ulp of 1:
    1 − 1/d and (d − 1)/d are rounded)."""
    u = np.arange(1.0, d + 1.0) / np.linalg.norm(np.arange(1.0, d + 1.0))
    cluster = np.tile(u, (6, 1))
    pair = np.array([u, -u, u, -u])
    frame = np.concatenate([np.eye(d), -np.eye(d)])
    tol = 4 * np.finfo(float).eps
    for m_of in (_m, rorder.order_parameter):
        assert m_of(cluster, 1) == pytest.approx(1.0, abs=tol)
        assert m_of(cluster, 2) == pytest.approx(1.0, abs=tol)
        assert m_of(pair, 1) == 0.0
        assert m_of(pair, 2) == pytest.approx(1.0, abs=tol)
        assert m_of(frame, 1) == 0.0 and m_of(frame, 2) == 0.0
    # e_1 repeated: every sum exact, so m_1 = 1 exactly; negative control: the frame without
    # e_1 is not uniform (its mean is -e_1 / (2d - 1))
    assert _m(np.tile(np.eye(d)[0], (5, 1)), 1) == 1.0
    assert _m(frame[1:], 1) == pytest.approx(1 / (2 * d - 1), rel=1e-15)
    assert _m(frame[1:], 2) > 0.1 / d
    public = ms.order_parameters(np.stack([cluster[:4], pair, frame[:4]]))
    assert public.shape == (3, 2) and public[1, 0] == 0.0


@pytest.mark.parametrize("n, d", [(1, 2), (5, 3), (17, 4), (40, 9)])
def test_kernel_is_the_reference_bit_for_bit_and_numpy_to_rounding(n, d):
    x = ms.sphere_uniform(n, d, chains=4, rng=n + d)
    out = np.empty((4, 2))
    korder.order_parameters(x, out)
    for c in range(4):
        assert out[c, 0] == rorder.magnetisation(x[c]) == _m(x[c], 1)
        assert out[c, 1] == rorder.quadrupole(x[c]) == _m(x[c], 2)
        assert np.allclose(out[c], _numpy_order(x[c]), rtol=1e-12, atol=1e-14)
    assert np.array_equal(ms.order_parameters(x), out)
    assert np.array_equal(ms.order_parameter(x, 2), out[:, 1])
    assert ms.order_parameter(x[0]) == out[0, 0]


def test_uniform_tokens_have_mean_square_order_one_over_n():
    """For n i.i.d. uniform tokens E[m_1²] = E[m_2²] = 1/n exactly (E‖Σ_i x_i‖² = n and
    E‖x xᵀ − I/d‖_F² = (d − 1)/d): n·mean(m²) over 3000 configurations (seed 11, n = 50, d = 3)
    within 0.1 of 1 (more than 4 standard errors: n m_1² is about χ²_3 / 3, of variance 2/3).
    Negative control: caps around one pole (not uniform) fail the same check."""
    n, d, runs = 50, 3, 3000
    x = ms.sphere_uniform(n, d, chains=runs, rng=11)
    m = ms.order_parameters(x)
    assert np.all(np.abs(n * np.mean(m**2, axis=0) - 1.0) < 0.1), n * np.mean(m**2, axis=0)
    capped = ms.caps(np.eye(d)[:1], [n], 1.0, rng=11)
    mc = ms.order_parameters(capped)
    assert not np.all(np.abs(n * mc**2 - 1.0) < 0.1)


# --------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------


def test_event_decisions_are_the_reference_predicates_at_and_around_the_level():
    """The kernel's test against the reference predicate, the level at m itself (the closed
    inequalities hold on both sides) and one ulp above and below it."""
    x = ms.sphere_uniform(12, 4, rng=3)
    for degree in (1, 2):
        m = rorder.order_parameter(x, degree)
        for level in (m, np.nextafter(m, 0.0), np.nextafter(m, 1.0), 0.01, 1.0):
            for cls in (ms.LeaveUniform, ms.ReachUniform):
                event = cls(level, degree)
                ev = event.compile(x[None], np.eye(4))
                hit = _events.event_hit(ev, 0, x, _events.hull_work(12, 4))
                assert hit == ref.event_predicate(event, x, np.eye(4))(x)
                assert hit == (m >= level if cls is ms.LeaveUniform else m <= level)
        assert ms.LeaveUniform(m, degree).compile(x[None], np.eye(4)).code == (
            K.LEAVE_UNIFORM_1 if degree == 1 else K.LEAVE_UNIFORM_2
        )


def _reference_passage(model, x0, event, max_steps):
    """The first step at which the reference flow meets the reference predicate (max_steps if
    never: censored), and the state there."""
    hit = ref.event_predicate(event, x0, np.eye(x0.shape[1]))
    heads = list(zip(*model.head_matrices(x0.shape[1])))
    x = np.array(x0)
    for t in range(max_steps + 1):
        if hit(x):
            return t, x
        if t < max_steps:
            x = sref.sphere_flow_step(
                x, heads, model.beta, model.dt, attention=model.attention, scheme=model.scheme
            )
    return max_steps, x


# an attractive flow (it clusters) and a repulsive one (V = -I: it spreads the tokens out)
ATTRACT = ms.SphereFlow(beta=2.0, dt=0.1)
REPEL = ms.SphereFlow(beta=1.0, dt=0.1, V=-np.eye(3))


@pytest.mark.parametrize(
    "model, event",
    [
        (ATTRACT, ms.LeaveUniform(0.8)),
        (ATTRACT, ms.LeaveUniform(0.8, degree=2)),
        (REPEL, ms.ReachUniform(0.3)),
        (REPEL, ms.ReachUniform(0.3, degree=2)),
    ],
    ids=["leave-1", "leave-2", "reach-1", "reach-2"],
)
def test_sphere_flow_first_passage_is_the_references(model, event):
    """SphereFlow from near-uniform starts (LeaveUniform) or from a cap (ReachUniform): the
    kernel's first-passage steps and final states are the reference's, bit for bit, each time
    positive and finite (no chain censored)."""
    if event.kind == "leave-uniform":
        x0 = ms.sphere_uniform(10, 3, chains=3, rng=7)
    else:
        x0 = ms.caps(np.eye(3)[:1], [10], 0.3, rng=7, chains=3)
    fp = ms.first_passage(model, x0, event, max_steps=400, rng=1)
    for c in range(3):
        t, x = _reference_passage(model, x0[c], event, 400)
        assert fp.times[c] == t and np.array_equal(fp.final[c], x)
    assert np.all(fp.times > 0) and np.all(fp.times < 400) and fp.events == 3


def test_sphere_chain_first_passage_is_the_predicate_on_its_trajectory():
    """SphereChain: the first step of a recorded trajectory (same seed, same chains) at which the
    reference predicate holds is the kernel's first-passage step; one chain censored at the
    horizon when the level is out of reach within it."""
    model = ms.SphereChain(beta=3.0, gamma=0.3)
    x0 = ms.sphere_uniform(8, 3, chains=4, rng=2)
    steps = 60
    path = ms.simulate(model, x0, steps=steps, record_every=1, rng=5).trajectory
    for event in (ms.LeaveUniform(0.7), ms.LeaveUniform(0.9, 2), ms.LeaveUniform(1.0)):
        fp = ms.first_passage(model, x0, event, max_steps=steps, rng=5)
        for c in range(4):
            hit = ref.event_predicate(event, x0[c], np.eye(3))
            first = next((t for t in range(steps + 1) if hit(path[c, t])), steps)
            assert fp.times[c] == first, (event, c)
    assert np.any(fp.censored)  # level 1: tokens that have not all coincided


def test_a_start_past_the_level_stops_at_time_zero():
    x0 = ms.sphere_uniform(16, 3, chains=3, rng=4)
    m = ms.order_parameters(x0)
    low = float(m[:, 0].min())
    fp = ms.first_passage(ATTRACT, x0, ms.LeaveUniform(low), max_steps=50, rng=0)
    assert np.all(fp.times == 0) and fp.events == 3
    high = float(m[:, 1].max())
    fp = ms.first_passage(ATTRACT, x0, ms.ReachUniform(high, degree=2), max_steps=50, rng=0)
    assert np.all(fp.times == 0)
    # negative control: a level just above the smallest m_1 is not met by that chain at t = 0
    fp = ms.first_passage(ATTRACT, x0, ms.LeaveUniform(np.nextafter(low, 1.0)), max_steps=1, rng=0)
    assert fp.times[int(np.argmin(m[:, 0]))] > 0


# --------------------------------------------------------------------------------------------
# track, spellings, bad inputs
# --------------------------------------------------------------------------------------------


def test_track_records_the_order_parameters_on_request():
    """order_parameters=True: m_1, m_2 of simulate's states at the recording times (same seed),
    the same bits; without it (the default) nothing is recorded."""
    x0 = ms.sphere_uniform(8, 3, chains=2, rng=1)
    tr = ms.track(ATTRACT, x0, steps=30, record_every=10, rng=3, order_parameters=True)
    run = ms.simulate(ATTRACT, x0, steps=30, record_every=10, rng=3)
    frame = tr.observables_frame()
    for r, t in enumerate(tr.times):
        assert np.array_equal(tr.order[:, r], ms.order_parameters(run.trajectory[:, r]))
        rows = frame[frame["step"] == t]
        assert np.array_equal(rows[["m1", "m2"]].to_numpy(), tr.order[:, r])
    plain = ms.track(ATTRACT, x0, steps=30, record_every=10, rng=3)
    assert plain.order is None and "m1" not in plain.observables_frame()
    assert np.array_equal(plain.observables, tr.observables)


def test_track_refuses_the_order_parameters_of_models_in_r_d():
    model = ms.SoftmaxFlow(beta=1.0, gamma=0.2)
    with pytest.raises(ValueError, match="^order_parameters: m_1 and m_2 are order parameters"):
        ms.track(model, np.eye(3), steps=5, rng=0, order_parameters=True)
    with pytest.raises(ValueError, match="^order_parameters must be True or False, got 1"):
        ms.track(ATTRACT, ms.sphere_uniform(4, 3, rng=0), steps=5, order_parameters=1)
    assert ms.track(model, np.eye(3), steps=5, rng=0).order is None  # negative control


def test_track_saves_loads_and_replays_the_order_parameters(tmp_path):
    tr = ms.track(ATTRACT, ms.sphere_uniform(6, 3, rng=2), steps=10, rng=0, order_parameters=True)
    back = ms.load(tr.save_observables(tmp_path / "obs.csv"))
    assert np.array_equal(back.order, tr.order)
    assert np.array_equal(back.replay().order, tr.order)


def test_spellings_round_trip():
    for event in EVENTS:
        again = event_from_dict(event.to_dict())
        assert type(again) is type(event) and again.to_dict() == event.to_dict()
    assert ms.LeaveUniform(0.5).to_dict() == {"kind": "leave-uniform", "level": 0.5, "degree": 1}


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"level": 0.0}, "level must be in (0, 1], got 0.0"),
        ({"level": -0.2}, "level must be in (0, 1]"),
        ({"level": 1.5}, "level must be in (0, 1], got 1.5"),
        ({"level": math.nan}, "level must be finite"),
        ({"level": "0.5"}, "level must be a real number"),
        ({"level": True}, "level must be a real number"),
        ({"level": 0.5, "degree": 3}, "degree must be 1 (the magnetisation m_1) or 2 (m_2), got 3"),
        ({"level": 0.5, "degree": 0}, "degree must be 1"),
        ({"level": 0.5, "degree": 1.0}, "degree must be an integer, got 1.0"),
        ({"level": 0.5, "degree": True}, "degree must be an integer, got True"),
    ],
)
@pytest.mark.parametrize("cls", [ms.LeaveUniform, ms.ReachUniform])
def test_bad_arguments_are_refused_by_name(cls, kwargs, words):
    with pytest.raises(ValueError, match=f"^{_escaped(words)}"):
        cls(**kwargs)


def _escaped(text):
    import re

    return re.escape(text)


@pytest.mark.parametrize(
    "model",
    [ms.SoftmaxChain(beta=2.0, gamma=0.1), ms.SoftmaxFlow(beta=2.0, gamma=0.1), ms.Hardmax(0.1)],
)
def test_models_in_r_d_are_refused(model):
    x0 = ms.sphere_uniform(5, 2, rng=0)  # unit vectors: refused for the model, not the start
    with pytest.raises(ValueError, match="ReachUniform: m_2 is an order parameter of tokens on"):
        ms.first_passage(model, x0, ms.ReachUniform(0.2, degree=2), max_steps=5)
    # negative control: the same start and event with a sphere model run
    assert ms.first_passage(REPEL, ms.sphere_uniform(5, 3, rng=0), ms.ReachUniform(0.2, 2),
                            max_steps=5).chains == 1  # fmt: skip


def test_bad_configurations_are_refused_by_the_functions():
    with pytest.raises(ValueError, match="x0 must lie on the unit sphere"):
        ms.order_parameters([[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="x must hold tokens in R\\^d with d >= 2, got d=1"):
        ms.order_parameters([[1.0], [-1.0]])
    with pytest.raises(ValueError, match="x must be a non-empty n×d or chains×n×d array"):
        ms.order_parameters(np.ones(3))
    with pytest.raises(ValueError, match="degree must be 1"):
        ms.order_parameter([[1.0, 0.0]], degree=4)
