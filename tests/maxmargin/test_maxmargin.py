"""Max-margin token selection: SVM solvers against the published values, certificates,
infeasibility, gradients against finite differences and exact arithmetic, and the implicit bias
of gradient descent on small random instances (fixed seeds, stated tolerances)."""

from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy.optimize import linprog

from metastab import maxmargin as mm

W3 = np.diag([1.0, 1.0, 0.0])  # [MM] key-query matrix: attention sees the first two coordinates
V3 = np.array([0.0, 0.0, 1.0])  # the third coordinate is the token score


def single_input(c):
    """docs: models#mm-experiments (E1): one input, c = 0.9 (no local direction) or c = 0 (one)."""
    return np.array([[[-0.1, 1.0, 1.0], [1.0, 0.0, 0.9], [0.0, 0.0, c]]])


def joint_data(tight):
    """docs: models#mm-experiments (E3): joint (p, v) training data, labels (1, -1, 1)."""
    third = (0.5, 1.0) if tight else (0.5, 1.5)
    X = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], third]], dtype=float)
    return X, np.array([1.0, -1.0, 1.0])


def unit(a):
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


# ------------------------------------------------------------------------------------------
# published solver values (cvxopt pcost = ½||p||², printed in the official notebooks)


@pytest.mark.parametrize("c", [0.9, 0.0])
def test_single_input_svm_values_match_cvxopt(c):
    glob = mm.att_svm(single_input(c), 0, W3)
    loc = mm.att_svm(single_input(c), 1, W3)
    assert abs(glob.objective - 0.49505) < 1e-5 and abs(glob.objective - 1 / 2.02) < 1e-12
    assert abs(loc.objective - 0.5) < 1e-6
    np.testing.assert_allclose(glob.p, [-0.1 / 1.01, 1 / 1.01, 0.0], atol=1e-12)
    np.testing.assert_allclose(loc.p, [1.0, 0.0, 0.0], atol=1e-12)
    for res in (glob, loc):
        assert res.feasible and res.certificate.ok
        assert res.support[0].tolist() == [2]  # token (0, 0, c) is the only active constraint


def test_joint_svm_values_match_cvxopt():
    tight = mm.joint_svm(*joint_data(True), 1)
    assert abs(tight.p.objective - 0.94444) < 1e-5 and abs(tight.p.objective - 17 / 18) < 1e-12
    np.testing.assert_allclose(tight.p.p, [4 / 3, 1 / 3], atol=1e-12)
    assert not tight.relaxed.any()  # every sample is a support vector of v^mm
    loose = mm.joint_svm(*joint_data(False), 1)
    assert abs(loose.p.objective - 0.5) < 1e-6
    np.testing.assert_allclose(loose.p.p, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(loose.full.p, [1.25, 0.25], atol=1e-12)  # negative control
    assert loose.relaxed.tolist() == [False, False, True]
    for js in (tight, loose):
        np.testing.assert_allclose(js.v.p, [0.0, 1.0], atol=1e-12)
        assert js.v.certificate.ok and js.p.certificate.ok and js.full.certificate.ok


# ------------------------------------------------------------------------------------------
# certificates and infeasibility


def random_instance(rng, n, T, d):
    return unit(rng.standard_normal((n, T, d)))


def test_certificates_hold_and_feasibility_agrees_with_linprog():
    rng = np.random.default_rng(7)
    seen = {True: 0, False: 0}
    for k in range(60):
        X = random_instance(rng, 3, 4, 2 + k % 2)  # small d: feasible and infeasible problems
        alpha = rng.integers(0, 4, size=3)
        res = mm.att_svm(X, alpha)
        G, index = mm.constraint_rows(X, alpha)
        lp = linprog(
            np.zeros(X.shape[2]),
            A_ub=-G,
            b_ub=-np.ones(len(G)),
            bounds=(None, None),
            method="highs",
        )
        assert res.feasible == (lp.status == 0)
        assert res.certificate.ok, res.certificate
        seen[res.feasible] += 1
        if res.feasible:
            assert np.min(G @ res.p) >= 1 - 1e-9
            assert np.all(res.multipliers >= 0)
            lam = res.multipliers[index[:, 0], index[:, 1]]
            np.testing.assert_allclose(res.p, G.T @ lam, atol=1e-9 * max(1.0, res.norm))
        else:
            assert res.p is None and res.objective is None and res.multipliers is None
            assert all(len(s) == 0 for s in res.support)
    assert seen[True] >= 5 and seen[False] >= 5, seen


def test_solution_is_optimal_against_a_generic_solver():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    X = random_instance(rng, 3, 4, 6)
    res = mm.att_svm(X, [0, 1, 2])
    G, _ = mm.constraint_rows(X, [0, 1, 2])
    ref = minimize(
        lambda p: 0.5 * p @ p,
        np.ones(6) * 5,
        jac=lambda p: p,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda p: G @ p - 1, "jac": lambda p: G}],
        options={"ftol": 1e-14},
    )
    assert ref.success
    np.testing.assert_allclose(res.p, ref.x, atol=1e-6)
    assert res.certificate.ok and res.certificate.duality_gap < 1e-10


def test_one_dimensional_tokens_are_infeasible_with_a_farkas_certificate():
    # tokens ±1 in d = 1: token 0 = +1 must beat token 1 = -1 (needs p > 0) and in the second
    # input token 0 = -1 must beat token 1 = +1 (needs p < 0)
    X = np.array([[[1.0], [-1.0]], [[-1.0], [1.0]]])
    res = mm.att_svm(X, 0)
    assert not res.feasible and res.p is None
    assert res.certificate.ok and res.certificate.farkas < 1e-12
    assert not mm.local_optimality(X, [1, 1], [1.0], 0).locally_optimal
    # negative control: drop the contradicting input and the problem is feasible, p = 1/2
    one = mm.att_svm(X[:1], 0)
    assert one.feasible and one.p[0] == pytest.approx(0.5, abs=1e-12)


def test_relaxed_rows_and_nearly_infeasible_flag():
    X = np.array([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1e-5]]])
    res = mm.att_svm(X, 0)  # second input needs p_2 <= -1e5: feasible, huge norm
    assert res.feasible and res.certificate.ok and res.certificate.ill_conditioned
    relaxed = mm.att_svm(X, 0, relaxed=[1])
    assert relaxed.certificate.ok and not relaxed.certificate.ill_conditioned
    np.testing.assert_allclose(relaxed.p, [1.0, 0.0], atol=1e-12)
    assert mm.att_svm(X, 0, relaxed=[False, True]).p == pytest.approx(relaxed.p)


def test_frobenius_svm_with_a_common_query_is_the_p_svm_times_the_query():
    # docs: models#mm-svm: for z_i = q for all i, W^mm = u qᵀ / ||q||² with u the p-SVM for W = I
    rng = np.random.default_rng(11)
    X = random_instance(rng, 3, 4, 5)
    q = rng.standard_normal(5)
    alpha = [1, 0, 3]
    wres = mm.att_svm_w(X, alpha, np.tile(q, (3, 1)))
    u = mm.att_svm(X, alpha).p
    np.testing.assert_allclose(wres.W, np.outer(u, q) / (q @ q), atol=1e-10)
    assert wres.certificate.ok and np.linalg.matrix_rank(wres.W, 1e-7) == 1


def test_frobenius_rank_is_min_n_d_and_nuclear_has_a_certified_gap():
    rng = np.random.default_rng(5)
    n, T, d = 3, 4, 5
    X = random_instance(rng, n, T, d)
    Z = unit(rng.standard_normal((n, d)))
    fro = mm.att_svm_w(X, 0, Z)
    nuc = mm.att_svm_w(X, 0, Z, norm="nuclear")
    assert fro.certificate.ok and np.linalg.matrix_rank(fro.W, 1e-7) == min(n, d)
    assert nuc.method == "burer-monteiro-slsqp"
    c = nuc.certificate
    assert c.primal < 1e-9 and 0 <= c.duality_gap < 1e-6 and c.stationarity < 1e-6, c
    assert nuc.nuclear_norm <= fro.nuclear_norm + 1e-9
    # the Frobenius solution does not minimise the nuclear norm: its norm is above the
    # certified lower bound (1 - gap) ||W_nuc||_*
    assert fro.nuclear_norm > nuc.nuclear_norm * (1 + 1e-3)


def test_nuclear_equals_frobenius_for_one_input():
    rng = np.random.default_rng(2)
    X = random_instance(rng, 1, 4, 4)
    z = unit(rng.standard_normal(4))
    fro = mm.att_svm_w(X, 2, z)
    nuc = mm.att_svm_w(X, 2, z, norm="nuclear")
    assert mm.correlation(fro.W, nuc.W) > 1 - 1e-8
    assert nuc.nuclear_norm == pytest.approx(fro.nuclear_norm, rel=1e-7)


# ------------------------------------------------------------------------------------------
# gradients


def naive_risk_p(X, Y, v, W, p, loss):
    a = X @ (W @ p)
    s = np.exp(a - a.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    u = Y * np.sum(s * (X @ v), axis=1)
    return np.mean(np.log1p(np.exp(-u)) if loss == "logistic" else -u)


def naive_risk_w(X, Y, v, Z, W, loss="logistic"):
    a = np.einsum("itd,de,ie->it", X, W, Z)
    s = np.exp(a - a.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    u = Y * np.sum(s * (X @ v), axis=1)
    return np.mean(np.log1p(np.exp(-u)) if loss == "logistic" else -u)


def central_difference(fun, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        g[idx] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("loss", ["logistic", "linear"])
def test_grad_p_matches_finite_differences(loss):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 5, 3))
    Y = np.array([1.0, -1.0, -1.0, 1.0])
    v, W, p = rng.standard_normal(3), rng.standard_normal((3, 3)), rng.standard_normal(3)
    g = mm.grad_p(X, Y, v, W, p, loss=loss)
    ref = central_difference(lambda q: naive_risk_p(X, Y, v, W, q, loss), p)
    np.testing.assert_allclose(g, ref, atol=1e-8)
    assert mm.risk(X, Y, v, W, p, loss=loss) == pytest.approx(naive_risk_p(X, Y, v, W, p, loss))


def test_grad_w_and_factor_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    n, T, d = 3, 4, 3
    X, Z = rng.standard_normal((n, T, d)), rng.standard_normal((n, d))
    Y, v = np.array([1.0, -1.0, 1.0]), rng.standard_normal(d)
    W = 0.5 * rng.standard_normal((d, d))
    G = mm.grad_w(X, Y, v, Z, W)
    np.testing.assert_allclose(
        G, central_difference(lambda M: naive_risk_w(X, Y, v, Z, M), W), atol=1e-8
    )
    # one plain step of (K, Q) descends along ∇_K = G Q, ∇_Q = Gᵀ K
    K, Q = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    Gk = mm.grad_w(X, Y, v, Z, K @ Q.T)
    gk = central_difference(lambda M: naive_risk_w(X, Y, v, Z, M @ Q.T), K)
    gq = central_difference(lambda M: naive_risk_w(X, Y, v, Z, K @ M.T), Q)
    np.testing.assert_allclose(Gk @ Q, gk, atol=1e-8)
    np.testing.assert_allclose(Gk.T @ K, gq, atol=1e-8)
    path = mm.train_kq(X, Y, v, Z, K, Q, steps=1, lr=1e-3, normalized=False)
    np.testing.assert_allclose(path[1], (K - 1e-3 * gk) @ (Q - 1e-3 * gq).T, atol=1e-9)


def test_joint_step_descends_along_the_gradients_of_p_and_v():
    rng = np.random.default_rng(6)
    X, Y = rng.standard_normal((3, 4, 2)), np.array([1.0, -1.0, 1.0])
    p, v = rng.standard_normal(2), rng.standard_normal(2)
    gp = central_difference(lambda q: naive_risk_p(X, Y, v, np.eye(2), q, "logistic"), p)
    gv = central_difference(lambda u: naive_risk_p(X, Y, u, np.eye(2), p, "logistic"), v)
    ps, vs = mm.train_joint(X, Y, v, np.eye(2), p, steps=1, lr=0.5, normalized=False)
    np.testing.assert_allclose(ps[1], p - 0.5 * gp, atol=1e-9)
    np.testing.assert_allclose(vs[1], v - 0.5 * gv, atol=1e-9)
    ps, vs = mm.train_joint(X, Y, v, np.eye(2), p, steps=1, lr=0.5)  # one step per factor
    assert np.linalg.norm(ps[1] - p) == pytest.approx(0.5) == np.linalg.norm(vs[1] - v)


def exact_grad_p(X, v, W, p):
    """∇_p f for one input in 60-digit decimal arithmetic (Y = 1, linear loss: ∇L = −∇f)."""
    getcontext().prec = 60
    a = [sum(Decimal(float(x)) * Decimal(float(k)) for x, k in zip(row, W @ p)) for row in X]
    top = max(a)
    e = [(ai - top).exp() for ai in a]
    s = [ei / sum(e) for ei in e]
    g = [sum(Decimal(float(x)) * Decimal(float(vv)) for x, vv in zip(row, v)) for row in X]
    f = sum(si * gi for si, gi in zip(s, g))
    keys = X @ W.T  # row t: Wᵀ x_t
    return np.array(
        [
            float(-sum(s[t] * (g[t] - f) * Decimal(float(keys[t, j])) for t in range(len(X))))
            for j in range(len(p))
        ]
    )


@pytest.mark.parametrize("scale", [5.0, 40.0])
def test_gradient_is_cancellation_free_at_large_norm(scale):
    X = single_input(0.9)
    p = scale * np.array([-0.1, 1.0, 0.0]) / np.linalg.norm([-0.1, 1.0])
    g = mm.grad_p(X, [1.0], V3, W3, p, loss="linear")
    ref = exact_grad_p(X[0], V3, W3, p)
    np.testing.assert_allclose(g, ref, rtol=1e-10, atol=0)
    # negative control: the textbook s_t (γ_t − f) loses the selected token's term at scale 40
    a = X[0] @ (W3 @ p)
    s = np.exp(a - a.max())
    s /= s.sum()
    naive = -(s * (X[0] @ V3 - s @ (X[0] @ V3))) @ (X[0] @ W3.T)
    assert (np.abs(naive - ref) <= 1e-10 * np.abs(ref)).all() == (scale == 5.0)


def test_no_overflow_at_huge_scale_and_normalised_gd_stops_at_zero_gradient():
    X = single_input(0.9)
    p = 1e6 * np.array([-0.1, 1.0, 0.0])
    assert np.isfinite(mm.grad_p(X, [1.0], V3, W3, p)).all()
    np.testing.assert_array_equal(mm.attention(X, W3, p)[0], [1.0, 0.0, 0.0])
    path = mm.train_p(X, [1.0], V3, W3, p, steps=5)  # the gradient underflows to exactly 0
    assert np.isfinite(path).all() and (path == p).all()


# ------------------------------------------------------------------------------------------
# implicit bias of gradient descent


@pytest.mark.parametrize("c, s, target", [(0.9, -1.5, 0), (0.0, 0.0, 0), (0.0, -1.5, 1)])
def test_single_input_gd_selects_the_published_direction(c, s, target):
    X = single_input(c)
    path = mm.train_p(X, [1.0], V3, W3, [0.0, s, 0.0], steps=1000)
    svm = mm.att_svm(X, target, W3)
    other = mm.att_svm(X, 1 - target, W3)
    assert mm.correlation(path[-1], svm.p) > 0.999
    assert mm.correlation(path[-1], other.p) < 0.5  # negative control
    assert mm.attention(X, W3, path[-1])[0, target] > 0.9999


def test_local_optimality_of_the_single_input_example():
    assert mm.local_optimality(single_input(0.9), 1, V3, 1, W3).kind == "not locally optimal"
    loc = mm.local_optimality(single_input(0.0), 1, V3, 1, W3)
    assert loc.kind == "local" and loc.violations == ()
    assert mm.local_optimality(single_input(0.9), 1, V3, 0, W3).kind == "global"
    np.testing.assert_array_equal(mm.optimal_tokens(single_input(0.0), 1, V3), [0])


def test_gd_on_random_instances_converges_to_the_svm_of_its_selection():
    rng = np.random.default_rng(2024)
    for _ in range(4):
        n, T, d = 2, 3, 4
        X = random_instance(rng, n, T, d)
        Y = np.array([1.0, -1.0])
        v = unit(rng.standard_normal(d))
        path = mm.train_p(X, Y, v, np.eye(d), np.zeros(d), steps=1500)
        alpha = np.argmax(mm.attention(X, np.eye(d), path[-1]), axis=1)
        verdict = mm.local_optimality(X, Y, v, alpha)
        assert verdict.kind in ("global", "local")
        assert mm.correlation(path[-1], verdict.svm.p) > 0.99
        # negative control: the SVM of another feasible selection is a different direction
        for beta in np.ndindex(T, T):
            other = mm.att_svm(X, beta)
            if other.feasible and tuple(beta) != tuple(alpha):
                assert mm.correlation(path[-1], other.p) < 0.99


def test_w_and_kq_parametrisations_select_frobenius_and_nuclear_svms():
    # [SVM]: W-parametrised GD -> Frobenius SVM, (K, Q) with vanishing ridge -> nuclear SVM
    rng = np.random.default_rng(1)
    n, T, d = 3, 4, 5
    X, Y = unit(rng.standard_normal((n, T, d))), np.array([1.0, -1.0, 1.0])
    v, Z = unit(rng.standard_normal(d)), unit(rng.standard_normal((n, d)))
    b = 1 / np.sqrt(d)
    W0, K0, Q0 = (rng.uniform(-b, b, (d, d)) for _ in range(3))
    w_path = mm.train_w(X, Y, v, Z, W0, steps=2000)
    kq_path = mm.train_kq(X, Y, v, Z, K0, Q0, steps=2000, reg=np.finfo(float).eps)
    alpha = np.argmax(mm.self_attention(X, w_path[-1], Z), axis=1)
    assert (alpha == np.argmax(mm.self_attention(X, kq_path[-1], Z), axis=1)).all()
    fro = mm.att_svm_w(X, alpha, Z)
    nuc = mm.att_svm_w(X, alpha, Z, norm="nuclear")
    assert mm.correlation(w_path[-1], fro.W) > 0.999
    assert mm.correlation(kq_path[-1], nuc.W) > 0.995
    # negative control: the mismatched pairs
    assert mm.correlation(w_path[-1], nuc.W) < 0.9 and mm.correlation(kq_path[-1], fro.W) < 0.9


def test_batched_training_equals_one_problem_at_a_time():
    rng = np.random.default_rng(9)
    R, n, T, d = 3, 2, 3, 3
    X = unit(rng.standard_normal((R, n, T, d)))
    Y = np.where(rng.standard_normal((R, n)) > 0, 1.0, -1.0)
    v, Z = unit(rng.standard_normal((R, d))), unit(rng.standard_normal((R, n, d)))
    W0 = rng.uniform(-0.5, 0.5, (R, d, d))
    batch = mm.train_w(X, Y, v, Z, W0, steps=50)
    for r in range(R):
        np.testing.assert_allclose(
            batch[:, r], mm.train_w(X[r], Y[r], v[r], Z[r], W0[r], steps=50), rtol=0, atol=1e-13
        )
    kq = mm.train_kq(X, Y, v, Z, W0, W0, steps=20, reg=1e-3)
    assert kq.shape == (21, R, d, d) and np.isfinite(kq).all()


def test_hardmax_limit_along_the_svm_direction():
    X = single_input(0.9)
    svm = mm.att_svm(X, 0, W3)
    unit_dir = svm.p / svm.norm
    for R in (1.0, 10.0, 50.0, 1e6):
        gap = 1 - mm.attention(X, W3, R * unit_dir)[0, 0]
        assert gap <= mm.hardmax_gap_bound(3, svm.norm, R) + 1e-15
    assert 1 - mm.attention(X, W3, 50 * unit_dir)[0, 0] < 1e-20


# ------------------------------------------------------------------------------------------
# bad inputs


BAD = [
    (lambda: mm.att_svm(single_input(0.9), 3, W3), r"alpha.*\[0, 2\].*3"),
    (lambda: mm.att_svm(single_input(0.9), 1.0, W3), r"alpha.*1\.0"),
    (lambda: mm.att_svm(single_input(0.9), [0, 1], W3), r"alpha.*n = 1.*\[0, 1\]"),
    (lambda: mm.att_svm(single_input(0.9), 0, np.eye(2)), r"W.*3×3.*\(2, 2\)"),
    (lambda: mm.att_svm([[1.0, np.nan], [0.0, 1.0]], 0), r"X.*nan.*\[0, 1\]"),
    (lambda: mm.att_svm([[1.0, 0.0]], 0), r"X.*T = 2.*\(1, 2\)"),
    (lambda: mm.att_svm(single_input(0.9), 0, W3, relaxed=[4]), r"relaxed.*\[4\]"),
    (lambda: mm.att_svm(single_input(0.9), 0, W3, tol=-1.0), r"tol.*-1\.0"),
    (lambda: mm.att_svm_w(single_input(0.9), 0, [[1.0, 0.0]]), r"Z.*\(1, 3\).*\(1, 2\)"),
    (lambda: mm.att_svm_w(single_input(0.9), 0, [[1.0, 0, 0]], norm="spectral"), r"norm.*spectral"),
    (lambda: mm.train_p(single_input(0.9), [1], V3, W3, [0, 0, 0], steps=-1), r"steps.*-1"),
    (lambda: mm.train_p(single_input(0.9), [1], V3, W3, [0, 0, 0], steps=2, lr=0.0), r"lr.*0\.0"),
    (
        lambda: mm.train_p(single_input(0.9), [1], V3, W3, [0, 0, 0], steps=2, loss="hinge"),
        r"loss.*hinge",
    ),
    (lambda: mm.train_p(single_input(0.9), [0], V3, W3, [0, 0, 0], steps=2), r"Y.*\[0\]"),
    (lambda: mm.train_p(single_input(0.9), [1], V3, W3, [0, 0], steps=2), r"p0.*\(2,\)"),
    (
        lambda: mm.train_p(single_input(0.9), [1], V3, W3, [0, 0, 0], steps=2, normalized=1),
        r"normalized.*1",
    ),
    (
        lambda: mm.train_kq(single_input(0.9), [1], V3, [[1.0, 0, 0]], W3, W3, steps=1, reg=-1),
        r"reg.*-1",
    ),
    (lambda: mm.hardmax_gap_bound(1, 1.0, 1.0), r"T.*1"),
    (lambda: mm.correlation([0.0, 0.0], [1.0, 0.0]), r"zero"),
]


@pytest.mark.parametrize("call, pattern", BAD, ids=range(len(BAD)))
def test_bad_inputs_are_refused_naming_the_parameter_and_value(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_the_subpackage_exports_its_models_and_solvers():
    """One namespace: the attention models and the SVM solvers, every name of __all__ defined."""
    from metastab.maxmargin import models, svm

    assert set(mm.__all__) <= set(dir(mm))
    assert mm.att_svm is svm.att_svm and mm.train_p is models.train_p
    with pytest.raises(ValueError, match="alpha must be token indices in \\[0, 1\\]"):
        mm.att_svm(np.eye(2), 2)  # the shared argument checks name the value
