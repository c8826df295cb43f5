"""SphereFlow's normalisation schemes against the equations of Karagodin, Ge, Polyanskiy, Rigollet,
*Normalization in attention dynamics* (arXiv 2510.22026; [KGPR]): each scheme's layers converge
to its normalised attention dynamics (NA), θ̇_i = (1 / s_i) P⊥_{θ_i} A_i(θ) with the radius r_i
where the scheme has one, integrated here independently in those polar coordinates; the paper's
initial-speed statement; pre-LN against the radial law of the authors' simulator simuformer; the
parameters' validation."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import metastab as ms
from metastab.models.sphere import NGPT_ALPHA, SphereFlow


def attention(theta, beta, B=None, V=None):
    """A_i = V Σ_j softmax_j(β <B θ_i, θ_j>) θ_j, in numpy (independent of the kernels)."""
    s = beta * (theta @ (np.eye(theta.shape[1]) if B is None else B).T) @ theta.T
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    g = w @ theta
    return g if V is None else g @ V.T


def speed_and_growth(scheme, t, r, A, theta, alpha=NGPT_ALPHA, tau=None):
    """[KGPR] Table 2: the speed factor s_i and ṙ_i of each scheme, with ρ_i = <θ_i, A_i>."""
    norm = np.linalg.norm(A, axis=1)
    rho = np.einsum("ik,ik->i", theta, A)
    one, zero = np.ones_like(r), np.zeros_like(r)
    if scheme == "post-ln":
        return one, zero
    if scheme == "pre-ln":
        return r, rho
    if scheme == "mix-ln":
        return (one, zero) if t < tau else (r, rho)
    if scheme == "peri-ln":
        return r * norm, rho / norm
    if scheme == "ngpt":
        return norm / alpha, zero
    if scheme == "ln-scaling":
        return math.sqrt(1.0 + t) * one, zero
    raise ValueError(scheme)


def solve_na(scheme, theta0, beta, T, B=None, V=None, **kw):
    """(r(T), θ(T)) of (NA) from r = 1, θ0 (DOP853 at rtol 1e-12; Mix-LN in two pieces)."""
    n, d = theta0.shape

    def f(t, y):
        r, th = y[:n], y[n:].reshape(n, d)
        A = attention(th, beta, B, V)
        s, dr = speed_and_growth(scheme, t, r, A, th, **kw)
        tangent = A - np.einsum("ik,ik->i", th, A)[:, None] * th
        return np.concatenate([dr, (tangent / s[:, None]).ravel()])

    y = np.concatenate([np.ones(n), theta0.ravel()])
    cuts = [0.0, kw["tau"], T] if scheme == "mix-ln" else [0.0, T]
    for a, b in zip(cuts[:-1], cuts[1:]):
        y = solve_ivp(f, (a, b), y, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    return y[:n], y[n:].reshape(n, d)


def start(n=8, d=3, seed=2510):
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def polar(x):
    r = np.linalg.norm(x, axis=1)
    return r, x / r[:, None]


def error(model, x0, T, want):
    """max |θ − θ_NA| + max |r − r_NA| of the run at time T."""
    run = ms.simulate(model, x0, steps=round(T / model.dt))
    r, th = polar(run.final[0])
    return np.abs(th - want[1]).max() + np.abs(r - want[0]).max()


KW = {"ngpt": {"alpha": 0.5}, "mix-ln": {"tau": 0.5}}
SCHEMES = ["post-ln", "pre-ln", "mix-ln", "peri-ln", "ngpt", "ln-scaling"]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_layers_converge_to_the_papers_dynamics_at_first_order(scheme):
    """Each scheme's layers are a first-order scheme for its (NA): halving dt halves the error at
    T = 1 (ratio in [1.8, 2.2]), and at dt = 0.01 the error is below 0.01. Negative control:
    post-LN's (NA) (s = 1, no radius), or pre-LN's for post-LN and nGPT, is farther than ten
    times the error from the scheme's run."""
    x0, beta, T = start(), 2.0, 1.0
    kw = KW.get(scheme, {})
    want = solve_na(scheme, x0, beta, T, **kw)
    errors = [error(SphereFlow(beta, dt, scheme=scheme, **kw), x0, T, want) for dt in (0.02, 0.01)]
    assert 1.8 <= errors[0] / errors[1] <= 2.2, errors
    assert errors[1] < 1e-2, errors
    other = "pre-ln" if scheme in ("post-ln", "ngpt", "ln-scaling") else "post-ln"
    wrong = solve_na(other, x0, beta, T)
    model = SphereFlow(beta, 0.01, scheme=scheme, **kw)
    assert error(model, x0, T, wrong) > 10 * errors[1]


def test_converges_with_key_query_and_value_matrices():
    """Peri-LN with B, V ≠ I (their (NA) with A_i = V Σ_j w_ij θ_j): first order as well."""
    rng = np.random.default_rng(7)
    B, V = np.eye(3) + 0.3 * rng.normal(size=(3, 3)), np.eye(3) + 0.3 * rng.normal(size=(3, 3))
    x0 = start(6)
    want = solve_na("peri-ln", x0, 1.0, 1.0, B=B, V=V)
    errors = [
        error(SphereFlow(1.0, dt, scheme="peri-ln", B=B, V=V), x0, 1.0, want) for dt in (0.02, 0.01)
    ]
    assert 1.8 <= errors[0] / errors[1] <= 2.2, errors


def _initial_slope(model, x0):
    """(γ(dt) − γ(0)) / dt of the cosine of tokens 0 and 1 after one layer."""
    x = ms.simulate(model, x0, steps=1).final[0]
    return (x[0] @ x[1] / (np.linalg.norm(x[0]) * np.linalg.norm(x[1]))) / model.dt


@pytest.mark.parametrize("beta", [1.0, 4.0])
def test_peri_ln_and_ngpt_start_faster_than_post_ln(beta):
    """[KGPR] §4.1 (symmetric start, Q = K = V = I): γ̇(0) = (1/s_j + 1/s_k) / (e^β + n − 1), so
    post-LN and pre-LN (r = 1) start at 2 / (e^β + n − 1), peri-LN at 2 / |A| (e^β + n − 1) =
    2 / √(e^{2β} + n − 1), faster by (e^β + n − 1) / √(e^{2β} + n − 1) > 1, and nGPT at α times
    peri-LN's. The layers' slope over dt = 1e-6 is within 1e-4 (relative) of each; post-LN's
    value is wrong for peri-LN (negative control)."""
    n = 6
    x0 = np.eye(n)
    Z = math.exp(beta) + n - 1
    post = 2 / Z
    peri = 2 / math.sqrt(math.exp(2 * beta) + n - 1)
    expected = {"post-ln": post, "pre-ln": post, "ln-scaling": post, "peri-ln": peri,
                "ngpt": 0.5 * peri}  # fmt: skip
    slopes = {
        s: _initial_slope(SphereFlow(beta, 1e-6, scheme=s, **KW.get(s, {})), x0) for s in expected
    }
    for s, want in expected.items():
        assert slopes[s] == pytest.approx(want, rel=1e-4), s
    assert slopes["peri-ln"] > 1.05 * slopes["post-ln"]  # 1.90 at β = 1, 1.09 at β = 4
    assert slopes["peri-ln"] != pytest.approx(post, rel=1e-2)


def test_post_ln_collapses_a_cluster_faster_than_pre_and_peri_ln():
    """[KGPR] §4.3 (thm. preln-slow): inside a cone, post-LN contracts the cluster at a constant
    rate, the schemes whose radius grows like t (pre-LN, peri-LN, Mix-LN after τ) at a rate that
    decays like 1/t: from a cap of cosine ≥ 0.99, at t = 20 post-LN's spread is below 1e-6 of
    pre-LN's and peri-LN's."""
    rng = np.random.default_rng(4)
    x0 = np.array([1.0, 0.0, 0.0]) + 0.05 * rng.normal(size=(8, 3))
    x0 /= np.linalg.norm(x0, axis=1, keepdims=True)

    def spread(scheme):
        x = ms.simulate(SphereFlow(1.0, 0.1, scheme=scheme), x0, steps=200).final[0]
        th = polar(x)[1]
        return np.linalg.norm(th - th.mean(axis=0), axis=1).max()

    post, pre, peri = spread("post-ln"), spread("pre-ln"), spread("peri-ln")
    assert post < 1e-6 * min(pre, peri), (post, pre, peri)


def simuformer_pre_ln(theta, beta, eta, steps, radial="coordinates"):
    """simuformer's pre-LN (github.com/nikitus20/simuformer, simuxform.py, SimuXForm.step, the
    "preln" branch, lines 333-349), one head, Q = K = V = I, softmax: r ← r + η r Σ_k A_ik
    (``radial="coordinates"``, the code's torch.sum(r * A, dim=-1)), then
    θ ← N(θ + η P⊥_θ A / (r + 1e-9)) with the updated r. ``radial="direction"`` puts the
    paper's <θ_i, A_i> in place of r Σ_k A_ik."""
    r, th = np.ones(len(theta)), theta.copy()
    for _ in range(steps):
        A = attention(th, beta)
        rho = np.einsum("ik,ik->i", th, A)
        r = r + eta * (r * A.sum(axis=1) if radial == "coordinates" else rho)
        th = th + eta * (A - rho[:, None] * th) / (r[:, None] + 1e-9)
        th /= np.linalg.norm(th, axis=1, keepdims=True)
    return r, th


def test_pre_ln_is_the_papers_and_simuformer_departs_from_it():
    """[KGPR] Pre-LN: ẋ_i = A_i(N(x)), i.e. (NA) with s_i = r_i and ṙ_i = <θ_i, A_i>.
    ``scheme="pre-ln"`` is its forward Euler step: its error at t = 1 halves with dt. simuformer's
    pre-LN grows the radius by r_i Σ_k A_ik instead: its gap to the (NA) solution stays at
    about 0.06 in direction and 0.6 in radius from dt = 0.1 to 0.0125 (n = 8, d = 3, β = 2,
    this start); with the paper's <θ_i, A_i> in its place its gap halves with dt like ours."""
    x0, beta = start(), 2.0
    r_na, th_na = solve_na("pre-ln", x0, beta, 1.0)
    gaps = {}
    for dt in (0.1, 0.05, 0.025, 0.0125):
        k = round(1 / dt)
        r, th = polar(ms.simulate(SphereFlow(beta, dt, scheme="pre-ln"), x0, steps=k).final[0])
        rs, ths = simuformer_pre_ln(x0, beta, dt, k)
        rd, thd = simuformer_pre_ln(x0, beta, dt, k, radial="direction")
        gaps[dt] = [
            np.abs(a - b).max()
            for a, b in [(th, th_na), (r, r_na), (ths, th_na), (rs, r_na), (thd, th_na), (rd, r_na)]
        ]
    first, last = gaps[0.1], gaps[0.0125]
    assert all(7 <= a / b <= 9 for a, b in zip(first[:2], last[:2])), gaps  # ours: O(dt)
    assert all(7 <= a / b <= 9 for a, b in zip(first[4:], last[4:])), gaps  # fixed radial law
    assert last[2] > 0.05 and last[3] > 0.5, gaps  # simuformer's: no convergence
    assert first[2] / last[2] < 1.2 and first[3] / last[3] < 1.2, gaps


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"scheme": "ngpt", "alpha": 0.0}, "alpha"),
        ({"scheme": "ngpt", "alpha": -1.0}, "alpha"),
        ({"scheme": "ngpt", "alpha": "fast"}, "alpha"),
        ({"scheme": "ngpt", "alpha": math.nan}, "alpha"),
        ({"scheme": "post-ln", "alpha": 0.5}, r"alpha is nGPT's step .* scheme='post-ln'"),
        ({"scheme": "mix-ln"}, "needs tau"),
        ({"scheme": "mix-ln", "tau": -0.5}, "tau"),
        ({"scheme": "mix-ln", "tau": math.inf}, "tau"),
        ({"scheme": "peri-ln", "tau": 1.0}, r"tau is Mix-LN's switch time .* scheme='peri-ln'"),
        ({"scheme": "postln"}, r"scheme must be one of .*'ln-scaling'"),
    ],
)
def test_bad_parameters_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        SphereFlow(1.0, 0.1, **kw)


def test_schedules():
    """The step sizes and Mix-LN's margins the kernels take; the older schemes' are unchanged
    (the constant dt, one unused margin)."""
    for scheme in ("post-ln", "pre-ln", "rk4", "peri-ln"):
        sched = SphereFlow(1.0, 0.1, scheme=scheme).schedule(7, 5)
        assert sched.sizes.tolist() == [0.1] and sched.margins.tolist() == [0.0]
    assert SphereFlow(1.0, 0.1, scheme="ngpt", alpha=0.5).schedule(0, 3).sizes.tolist() == [0.05]
    sizes = SphereFlow(1.0, 0.1, scheme="ln-scaling").schedule(10, 2).sizes
    assert sizes.tolist() == [0.1 / math.sqrt(1.0 + 10 * 0.1), 0.1 / math.sqrt(1.0 + 11 * 0.1)]
    for tau, dt, layers in [(0.3, 0.1, 3), (1.1, 0.1, 11), (0.0, 0.1, 0), (0.31, 0.1, 4)]:
        m = SphereFlow(1.0, dt, scheme="mix-ln", tau=tau)
        assert m.post_layers == layers, (tau, dt)
        margins = np.broadcast_to(m.schedule(0, 20).margins, 20)  # one entry: all steps alike
        assert margins.tolist() == [1.0] * layers + [0.0] * (20 - layers)
    m = SphereFlow(1.0, 0.1, scheme="mix-ln", tau=0.3)
    assert m.schedule(0, 3).margins.tolist() == [1.0]
    assert m.schedule(3, 3).margins.tolist() == [0.0]


def test_stable_steps():
    """Peri-LN's and nGPT's increments are unit vectors: their limits do not depend on β, B, V;
    LN-scaling's is post-LN's, Mix-LN's the smaller of post-LN's and pre-LN's."""
    usa = dict(beta=3.0, attention="unnormalized")
    assert SphereFlow(dt=0.1, scheme="peri-ln", **usa).stable_dt(3) == 2.0
    assert SphereFlow(dt=0.1, scheme="ngpt", alpha=0.25, **usa).stable_dt(3) == 4.0
    post = SphereFlow(dt=0.1, **usa).stable_dt(3)
    pre = SphereFlow(dt=0.1, scheme="pre-ln", **usa).stable_dt(3)
    assert SphereFlow(dt=0.1, scheme="ln-scaling", **usa).stable_dt(3) == post
    assert SphereFlow(dt=0.1, scheme="mix-ln", tau=1.0, **usa).stable_dt(3) == min(post, pre)
    with pytest.warns(ms.StepSizeWarning, match="'peri-ln'"):
        ms.simulate(SphereFlow(1.0, 2.5, scheme="peri-ln"), start(4), steps=1)


@pytest.mark.parametrize("kw", [{"scheme": "ngpt", "alpha": 0.3}, {"scheme": "mix-ln", "tau": 1.5}])
def test_records_round_trip_and_older_schemes_keep_their_keys(kw):
    """to_dict names alpha and tau only where the scheme has them; the record rebuilds the
    model."""
    m = SphereFlow(2.0, 0.1, **kw)
    d = {k: v for k, v in m.to_dict().items() if k != "kind"}
    again = SphereFlow(**d)
    assert (again.scheme, again.alpha, again.tau) == (m.scheme, m.alpha, m.tau)
    plain = SphereFlow(2.0, 0.1, scheme="pre-ln").to_dict()
    assert "alpha" not in plain and "tau" not in plain
