"""Models and events: validation, dict round trips, step matrices and step-size schedules."""

import math

import numpy as np
import pytest

import metastab as ms
from metastab.registry import event_from_dict, model_from_dict

# --------------------------------------------------------------------------------------------
# validation (the error messages are checked in test_bad_inputs.py)
# --------------------------------------------------------------------------------------------


def test_defaults_and_coercion():
    m = ms.SoftmaxChain(beta=2)
    assert m.beta == 2.0 and isinstance(m.beta, float) and m.gamma == 0.1 and m.B is None
    assert np.array_equal(m.key_query(3), np.eye(3))
    h = ms.Hardmax()
    assert h.ties == "index" and h.tol == 1e-12 and h.beta == math.inf
    f = ms.SoftmaxFlow(beta=0.0, gamma=1)  # β = 0 and γ = 1 are allowed
    assert f.beta == 0.0 and f.gamma == 1.0


def test_arrays_are_frozen_copies():
    B = np.array([[1.0, 2.0], [3.0, 4.0]])
    m = ms.SoftmaxChain(beta=1.0, B=B)
    B[0, 0] = 99.0
    assert m.B[0, 0] == 1.0
    with pytest.raises(ValueError):
        m.B[0, 0] = 5.0
    sched = ms.Hardmax(gamma=[0.5, 0.25])
    with pytest.raises(ValueError):
        sched.gamma[0] = 0.1
    with pytest.raises(AttributeError):
        m.beta = 3.0  # frozen dataclass


def test_model_kinds_and_codes():
    from metastab.kernels import params as _params

    assert ms.SoftmaxChain(beta=1).code == _params.CHAIN
    assert ms.SoftmaxFlow(beta=1).code == _params.FLOW
    assert ms.Hardmax().code == _params.HARDMAX
    assert ms.SoftmaxChain(beta=1).has_step_matrix is False
    assert ms.SoftmaxChain(beta=1, gamma=np.eye(2) / 2).has_step_matrix is True
    assert ms.SoftmaxChain(beta=1, gamma=[0.5]).has_schedule is True
    assert ms.SoftmaxChain(beta=1, gamma=lambda t: 0.5).has_schedule is True


# --------------------------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------------------------

MODELS = [
    ms.SoftmaxChain(beta=3.5, gamma=0.25),
    ms.SoftmaxChain(
        beta=1.0, gamma=ms.step_matrix([[0.5, 0.1], [0.0, 2.0]]), B=[[1.0, -2.0], [0.5, 0.3]]
    ),
    ms.SoftmaxFlow(beta=0.0, gamma=[0.9, 0.5, 0.1]),
    ms.Hardmax(gamma=1 / 3, B=-np.eye(3), ties="point", tol=1e-9),
    ms.Hardmax(),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.kind)
def test_model_dict_round_trip(model):
    data = model.to_dict()
    assert data["kind"] == model.kind
    back = model_from_dict(data)
    assert type(back) is type(model)
    assert back.to_dict() == data
    # the dict is plain data (JSON-able)
    import json

    assert model_from_dict(json.loads(json.dumps(data))).to_dict() == data


def test_model_dict_round_trip_runs_the_same():
    model = MODELS[1]
    x0 = np.array([[1.0, 0.0], [0.0, 1.0], [0.4, 0.4]])
    a = ms.simulate(model, x0, steps=20, chains=2, rng=3)
    b = ms.simulate(model_from_dict(model.to_dict()), x0, steps=20, chains=2, rng=3)
    assert np.array_equal(a.final, b.final)
    assert a.model == model.to_dict()


def test_callable_schedule_cannot_be_rebuilt():
    def halving(t):
        return 0.5 ** (t + 1)

    data = ms.Hardmax(gamma=halving).to_dict()
    assert data["gamma"] == "callable:halving"
    with pytest.raises(ValueError, match="gamma"):
        model_from_dict(data)


def test_model_from_dict_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        model_from_dict({"kind": "nonlocalmax", "gamma": 0.1})
    with pytest.raises(ValueError, match="kind"):
        model_from_dict({"gamma": 0.1})


EVENTS = [
    ms.LeaveBall(0.2),
    ms.LeaveBall(0.5, centers=[[0.0, 1.0], [2.0, 3.0]]),
    ms.LeaveHull(groups=[0, 1, 0, 1, 2], radius=0.3),
    ms.ReachVertices([[1.0, 0.0], [-1.0, 0.0]], radius=0.1),
    ms.ReachVertices(
        [[1.0, 0.0], [-1.0, 0.0]], radius=0.1, vertex_radius=1e-3, assignment=[0, 1, 1]
    ),
    ms.Collapse(1e-3),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.kind)
def test_event_dict_round_trip(event):
    import json

    data = event.to_dict()
    back = event_from_dict(json.loads(json.dumps(data)))
    assert type(back) is type(event)
    assert back.to_dict() == data


def test_event_from_dict_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        event_from_dict({"kind": "nope"})


def test_reach_vertices_accepts_a_polytope():
    poly = ms.regular_polygon(4)
    ev = ms.ReachVertices(poly, radius=0.2)
    assert np.array_equal(ev.vertices, poly.vertices)


# --------------------------------------------------------------------------------------------
# step matrix
# --------------------------------------------------------------------------------------------


def test_step_matrix_definition():
    rng = np.random.default_rng(0)
    for d in (1, 2, 4):
        V = rng.normal(size=(d, d))
        P = ms.step_matrix(V)
        np.testing.assert_allclose((np.eye(d) + V) @ P, V, atol=1e-12)
        np.testing.assert_allclose(P, np.linalg.inv(np.eye(d) + V) @ V, atol=1e-12)
    # scalar value v gives the scalar step v / (1 + v); [AFZ]: γ = α / (1 + α)
    np.testing.assert_allclose(ms.step_matrix([[0.5]]), [[1 / 3]])
    np.testing.assert_allclose(ms.step_matrix(2.0 * np.eye(3)), np.eye(3) * 2 / 3)
    # [FW] remark after lem. convHullDecreases: V = diag(3/2, 7/3) gives P = diag(3/5, 7/10)
    np.testing.assert_allclose(ms.step_matrix(np.diag([1.5, 7 / 3])), np.diag([0.6, 0.7]))


def test_step_matrix_scalar_equivalence_in_runs():
    """P = γ I runs exactly like the scalar γ for the deterministic models (same operations up
    to the zero off-diagonal terms, which add exact zeros)."""
    x0 = np.array([[1.0, 0.2], [-0.3, 0.8], [0.1, -0.9], [0.5, 0.5]])
    for model_s, model_p in [
        (ms.SoftmaxFlow(beta=2.0, gamma=0.25), ms.SoftmaxFlow(beta=2.0, gamma=0.25 * np.eye(2))),
        (ms.Hardmax(gamma=0.25), ms.Hardmax(gamma=0.25 * np.eye(2))),
    ]:
        a = ms.simulate(model_s, x0, steps=15).final
        b = ms.simulate(model_p, x0, steps=15).final
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)


def test_step_matrix_rejects_singular_and_bad_shapes():
    with pytest.raises(ValueError, match="I \\+ V"):
        ms.step_matrix(-np.eye(2))
    with pytest.raises(ValueError, match="V"):
        ms.step_matrix([1.0, 2.0])
    with pytest.raises(ValueError, match="V"):
        ms.step_matrix([[1.0, np.nan], [0.0, 1.0]])


# --------------------------------------------------------------------------------------------
# schedules
# --------------------------------------------------------------------------------------------

X0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.1], [0.3, 0.3], [-0.2, -0.6]])


def test_schedule_shorter_than_run_raises_naming_gamma():
    model = ms.Hardmax(gamma=np.full(10, 0.5))
    ms.simulate(model, X0, steps=10)  # exactly long enough
    with pytest.raises(ValueError, match=r"gamma schedule has 10 entries.*11"):
        ms.simulate(model, X0, steps=11)
    with pytest.raises(ValueError, match="gamma"):
        ms.first_passage(model, X0, ms.Collapse(1e-9), max_steps=50)


def test_schedule_longer_than_run_is_fine():
    model = ms.SoftmaxFlow(beta=1.0, gamma=np.linspace(0.9, 0.1, 100))
    assert ms.simulate(model, X0, steps=5).steps == 5


@pytest.mark.parametrize(
    "make",
    [
        lambda g: ms.Hardmax(gamma=g, B=[[1.0, 0.3], [-0.5, 0.8]]),
        lambda g: ms.Hardmax(gamma=g, B=-np.eye(2), ties="point"),
        lambda g: ms.SoftmaxFlow(beta=2.0, gamma=g),
        lambda g: ms.SoftmaxChain(beta=3.0, gamma=g),
    ],
    ids=["hardmax", "hardmax-fw", "flow", "chain"],
)
def test_callable_schedule_equals_array_schedule(make):
    steps = 70

    def schedule(t):
        return 1.0 / (t + 2)  # [FW] thm. fw.cluster uses 2 / (t + 2); γ_0 = 1 would freeze

    calls = []

    def logged(t):
        calls.append(t)
        return schedule(t)

    array = np.array([schedule(t) for t in range(steps)])
    a = ms.simulate(make(logged), X0, steps=steps, chains=2, rng=4)
    b = ms.simulate(make(array), X0, steps=steps, chains=2, rng=4)
    assert np.array_equal(a.final, b.final)
    assert sorted(calls) == list(range(steps))  # evaluated once per step, at t = 0 .. steps-1
    # and a schedule is really used step by step (not its first value throughout)
    c = ms.simulate(make(float(array[0])), X0, steps=steps, chains=2, rng=4)
    assert not np.array_equal(a.final, c.final)


def test_schedule_entry_applies_to_its_step():
    """Hardmax with γ_0 = 1 sends every token to its leader at step 0; γ_1 tiny barely moves."""
    x0 = np.array([[1.0, 0.0], [0.5, 0.0]])  # both tokens' leader is token 0 (B = I)
    run = ms.simulate(ms.Hardmax(gamma=[1.0, 1e-9]), x0, steps=1)
    assert np.array_equal(run.final[0], [[1.0, 0.0], [1.0, 0.0]])
    run = ms.simulate(ms.Hardmax(gamma=[1e-9, 1.0]), x0, steps=1)
    np.testing.assert_allclose(run.final[0], x0, atol=1e-9)


def test_callable_schedule_out_of_range_raises_with_step():
    model = ms.Hardmax(gamma=lambda t: 0.5 if t < 3 else 1.5)
    with pytest.raises(ValueError, match=r"gamma\(3\).*1\.5"):
        ms.simulate(model, X0, steps=10)
