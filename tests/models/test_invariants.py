"""Invariants layer (property-based, derandomized): what holds for every configuration.

- A step of SA_P, SA_β or SA_∞ with a scalar γ never leaves the current hull conv{x_j}
  (docs: models#models-rd, #statements-fw, "A step never leaves conv{x_j}"), for any B (any sign,
  non-symmetric), β in [0, 1e6], coincident tokens, d = 1..3, and degenerate (flat) configurations.
- States stay finite at β = 1e6 and at huge or tiny coordinate scales.

The hull test is checked by a linear program (max-norm distance to the hull, in coordinates
centred and scaled by the configuration's size), which needs no full-dimensional hull; it has its
own negative controls: a point off the hull, and the step matrix of docs: models#models-rd, which
does leave the hull.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import metastab as ms

SETTINGS = settings(derandomize=True, max_examples=50, deadline=None)
HULL_TOL = 1e-9  # max-norm distance to the hull, relative to max(spread, max|x_j|) (see below)


def hull_excess(points: np.ndarray, queries: np.ndarray) -> float:
    """Largest max-norm distance from the queries to conv(points), relative to the points' size
    max(spread, max|x_j|) (rounding in a step is relative to the coordinates, not the spread).

    The LP runs in coordinates centred at the points' mean and divided by their spread (largest
    deviation), so any scale, 1e-200 or 1e150, gives an O(1) LP. Per query:
    min t s.t. |Σ λ_j x_j − q|_∞ <= t, Σ λ_j = 1, λ >= 0. No full-dimensional hull is needed.
    """
    center = points.mean(axis=0)
    spread = np.abs(points - center).max()
    size = max(spread, np.abs(points).max())
    if spread == 0.0:  # all tokens coincide: the hull is one point
        far = float(np.abs(queries - center).max())
        return far / size if size > 0 else far
    X = (points - center) / spread
    Q = (queries - center) / spread
    n, d = X.shape
    A_ub = np.vstack([np.hstack([X.T, -np.ones((d, 1))]), np.hstack([-X.T, -np.ones((d, 1))])])
    A_eq = np.r_[np.ones(n), 0.0][None]
    worst = 0.0
    for q in Q:
        res = linprog(
            np.r_[np.zeros(n), 1.0],
            A_ub=A_ub,
            b_ub=np.r_[q, -q],
            A_eq=A_eq,
            b_eq=[1.0],
            bounds=[(0, None)] * (n + 1),
            method="highs",
        )
        assert res.status == 0, res.message
        worst = max(worst, float(res.x[-1]))
    return worst * spread / size


# ------------------------------------------------------------------ strategies


@st.composite
def configurations(draw, max_exp: int = 3, min_exp: int = -3):
    """(x, B): n in 2..8 tokens in R^d (d = 1..3) at scale 10^e, some tokens coincident or the
    whole configuration flat (in a line), and B a random d×d matrix of any sign."""
    n = draw(st.integers(2, 8))
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    gen = np.random.default_rng(seed)
    x = gen.uniform(-1, 1, size=(n, d))
    shape = draw(
        st.sampled_from(
            ["generic", "coincident", "generic", "flat", "coincident", "generic", "one point"]
        )
    )
    if shape == "coincident":  # some tokens share a position
        k = draw(st.integers(1, n - 1))
        x[:k] = x[gen.integers(k, n, size=k)]
    elif shape == "flat":  # all on a line through a random point
        x = gen.uniform(-1, 1, size=(1, d)) + gen.uniform(-1, 1, size=(n, 1)) * gen.normal(
            size=(1, d)
        )
    elif shape == "one point":
        x = np.repeat(x[:1], n, axis=0)
    x *= 10.0 ** draw(st.integers(min_exp, max_exp))
    x += draw(st.sampled_from([0.0, 1.0])) * gen.normal(size=(1, d)) * np.abs(x).max()  # offset
    B = gen.normal(size=(d, d)) * 10.0 ** draw(st.integers(-2, 1))
    return x, B


betas = st.one_of(st.sampled_from([0.0, 1.0, 1e6]), st.floats(0.0, 1e6, allow_nan=False))
gammas = st.one_of(st.just(1.0), st.floats(1e-3, 1.0, allow_nan=False))
MODELS = ["chain", "flow", "hardmax-index", "hardmax-point"]


def make(kind: str, beta: float, gamma: float, B: np.ndarray):
    if kind == "chain":
        return ms.SoftmaxChain(beta, gamma, B=B)
    if kind == "flow":
        return ms.SoftmaxFlow(beta, gamma, B=B)
    return ms.Hardmax(gamma, B=B, ties=kind.split("-")[1])


# ------------------------------------------------------------------ one step stays in the hull


@pytest.mark.parametrize("kind", MODELS)
@SETTINGS
@given(config=configurations(), beta=betas, gamma=gammas, seed=st.integers(0, 2**31))
def test_one_step_never_leaves_the_hull(kind, config, beta, gamma, seed):
    x, B = config
    run = ms.simulate(make(kind, beta, gamma, B), x, steps=1, chains=2, rng=seed)
    y = run.final
    assert np.isfinite(y).all()
    # One point (all tokens coincide) included: the flow and the index-mean hardmax average
    # n copies of x, which rounds by ~1 ulp; hence a relative tolerance there too.
    assert hull_excess(x, y.reshape(-1, x.shape[1])) <= HULL_TOL


@SETTINGS
@given(config=configurations(), beta=betas, gamma=gammas, seed=st.integers(0, 2**31))
def test_many_steps_stay_in_the_initial_hull(config, beta, gamma, seed):
    """Composition: ten steps of each model stay in conv{x_j^0} (the hulls are nested)."""
    x, B = config
    finals = [
        ms.simulate(make(kind, beta, gamma, B), x, steps=10, rng=seed).final[0] for kind in MODELS
    ]
    assert hull_excess(x, np.vstack(finals)) <= HULL_TOL


def test_hull_check_negative_controls():
    """The checker sees a point 1e-6 off a triangle, and the documented step matrix example
    (docs: models#models-rd: V = diag(3/2, 7/3), triangle (0, e1, e2)) leaving the hull by 0.1."""
    tri = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert hull_excess(tri, np.array([[0.5, 0.5]])) <= HULL_TOL
    assert hull_excess(tri, np.array([[0.5, 0.5 + 1e-6]])) > 1e-7
    flat = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])  # degenerate: a segment in R^2
    assert hull_excess(flat, np.array([[1.5, 1.5]])) <= HULL_TOL
    assert hull_excess(flat, np.array([[1.5, 1.5 + 1e-6]])) > 1e-7
    P = ms.step_matrix(np.diag([1.5, 7 / 3]))
    swap = np.array([[0.0, 1.0], [1.0, 0.0]])
    y = ms.simulate(ms.Hardmax(P, B=swap), tri, steps=1).final[0]
    assert hull_excess(tri, y) > 0.04  # (0.4, 0.7): max-norm distance 0.05 to x + y = 1


# ------------------------------------------------------------------ finiteness


@pytest.mark.parametrize("kind", MODELS)
@SETTINGS
@given(config=configurations(max_exp=150, min_exp=-200), gamma=gammas, seed=st.integers(0, 2**31))
def test_states_stay_finite_at_huge_beta_and_extreme_scales(kind, config, gamma, seed):
    """β = 1e6 and coordinates from 1e-200 to 1e150 (scores up to ~1e301, still finite): the
    max-shifted softmax never overflows, and the step stays in the hull."""
    x, B = config
    run = ms.simulate(make(kind, 1e6, gamma, B), x, steps=5, chains=2, rng=seed)
    assert np.isfinite(run.final).all()
    assert hull_excess(x, run.final.reshape(-1, x.shape[1])) <= HULL_TOL


@pytest.mark.parametrize("kind", MODELS)
def test_finite_at_beta_1e6_with_exact_ties(kind):
    """Exact score ties at β = 1e6 (regular polygon, tokens at the vertices and the centre)."""
    x = np.vstack([ms.regular_polygon(4).vertices, [[0.0, 0.0]]])
    run = ms.simulate(make(kind, 1e6, 0.5, np.eye(2)), x, steps=20, chains=8, rng=1)
    assert np.isfinite(run.final).all()
    assert hull_excess(x, run.final.reshape(-1, 2)) <= HULL_TOL


@pytest.mark.parametrize("kind", MODELS)
def test_overflowing_scores_are_refused_not_guessed(kind):
    """|x|^2 beyond the float range would make s_ij = ±inf and β (s_ij − max s) = inf − inf = NaN,
    after which no step is right: the configuration is refused up front, naming x0 and B."""
    x = np.array([[1e160, 0.0], [0.0, 1e160], [-1e160, -1e160]])
    with pytest.raises(ValueError, match=r"x0 and B give scores up to"):
        ms.simulate(make(kind, 1.0, 0.5, np.eye(2)), x, steps=1, chains=2, rng=0)
