"""Direct stepping draws every pick with its probability to full relative precision.

The kernels' pick (``kernels.cpu.euclidean_steps.chain_step``, bit for bit
``reference.euclidean.pick``, see tests/kernels/test_reference.py) is a deterministic function of
the token's uniform u = m 2^-53 and, rarely, of further uniforms of the chain's stream. Its law is
computed here EXACTLY, as a rational number, by enumerating the integers m level by level (bisection
over m: the outcome is "needs another uniform" on a prefix of [0, 2^53) and a non-decreasing index
after it), and compared with the true softmax law. The old single-uniform inversion is the negative
control.
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from kernel_calls import k_chain
from scipy import stats

import metastab as ms
from metastab import engine
from metastab.kernels.reference import euclidean as ref
from metastab.setups.initial import shrunk

GRID = 2**53
ULP = Fraction(1, GRID)

# The [FW] Thm 5.4 clustered triangle (3 tokens per vertex, token i at vertex i % 3, B = I): its
# initial configuration (vertices, then two tokens at 0.8 v_a per vertex) and the metastable one
# the chains relax to (all three on the vertex), where escapes start.
TRIANGLE = shrunk(ms.regular_polygon(3), 9, 0.8)
FROZEN = np.tile(ms.regular_polygon(3).vertices, (3, 1))
CONFIGS = {"frozen": FROZEN, "initial": TRIANGLE}
VERTEX = np.arange(9) % 3
BETAS = [22.0, 23.0, 23.5, 24.0, 24.5, 25.0, 26.0, 28.0, 30.0]


class _Exhausted(Exception):
    pass


class Script:
    """A stand-in for the stream: the 53-bit integers m of the uniforms m 2^-53, in order."""

    def __init__(self, ms_):
        self.ms = list(ms_)

    def next_u64(self) -> int:
        if not self.ms:
            raise _Exhausted
        return self.ms.pop(0) << 11

    def next_uniform(self) -> float:
        return float(self.next_u64() >> 11) * 2.0**-53


def _outcome(pick, w, seq):
    """The pick for the uniforms seq (seq[0] is u[i]), or None if it needs more of them."""
    try:
        return pick(w, seq[0] * 2.0**-53, Script(seq[1:]))
    except _Exhausted:
        return None


def _last_with(f, lo, value):
    """The largest m >= lo with f(m) == value, f non-decreasing from lo (bisection)."""
    hi = GRID - 1
    if f(hi) == value:
        return hi
    while hi - lo > 1:  # f(lo) == value != f(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if f(mid) == value else (lo, mid)
    return lo


def exact_law(pick, w, prefix=()) -> dict[int, Fraction]:
    """The exact law of ``pick(w, u, stream)`` over the uniforms after ``prefix``.

    At each level the outcome is None (another uniform is needed) for m < b, and a
    non-decreasing index for m >= b. The m < b are the rare decisions (all alike: the rare pick
    draws a fresh uniform, so only m = 0 is followed) and at most one boundary m = b - 1 (an
    unfinished Bernoulli trial, followed apart).
    """
    f = lambda m: _outcome(pick, w, list(prefix) + [m])  # noqa: E731
    b = 0
    if f(0) is None:
        b = _last_with(lambda m: f(m) is None, 0, True) + 1
    law: dict[int, Fraction] = {}

    def add(sub, count):
        for j, pr in sub.items():
            law[j] = law.get(j, Fraction(0)) + pr * count * ULP

    if b >= 2:
        rare = exact_law(pick, w, tuple(prefix) + (0,))
        assert exact_law(pick, w, tuple(prefix) + (b - 2,)) == rare  # all alike, as claimed
        add(rare, b - 1)
    if b >= 1:
        add(exact_law(pick, w, tuple(prefix) + (b - 1,)), 1)
    m = b
    while m < GRID:
        j = f(m)
        last = _last_with(f, m, j)
        law[j] = law.get(j, Fraction(0)) + (last - m + 1) * ULP
        m = last + 1
    return law


def old_pick(w, u, _stream=None):
    """The former draw (negative control): inversion of all cumulative weights with the single
    uniform u -- the first j whose cumulative weight exceeds u * total, else the last that grew."""
    total = 0.0
    for v in w:
        total += v
    threshold = u * total
    cum, last = 0.0, -1
    for j, v in enumerate(w):
        before = cum
        cum += v
        if cum > threshold:
            return j
        if cum > before:
            last = j
    return last


def true_cross(x, i, beta) -> float:
    """The probability that token i picks a token at another vertex: libm exp of the float
    scores (relative error ~1e-15), sums by math.fsum."""
    s = np.asarray(ref.scores(x, np.eye(2), i))
    w = [math.exp(beta * (v - s.max())) for v in s]
    return math.fsum(wj for j, wj in enumerate(w) if VERTEX[j] != VERTEX[i]) / math.fsum(w)


def cross_law(pick, x, i, beta) -> Fraction:
    w, _ = ref.softmax_weights(ref.scores(x, np.eye(2), i), beta)
    law = exact_law(pick, w)
    assert sum(law.values()) == 1
    return sum((pr for j, pr in law.items() if VERTEX[j] != VERTEX[i]), Fraction(0))


def triangle_laws() -> dict:
    """Per (configuration, β, token): (true, new, old) probability of a cross pick (a token at
    another vertex), with the exact laws of the current pick and of the former one."""
    return {
        (name, beta, i): (
            true_cross(x, i, beta),
            cross_law(ref.pick, x, i, beta),
            cross_law(old_pick, x, i, beta),
        )
        for name, x in CONFIGS.items()
        for beta in BETAS
        for i in range(9)
    }


@pytest.fixture(scope="module", name="laws")
def laws_fixture():
    return triangle_laws()


def test_cross_pick_probability_is_exact_on_the_triangle(laws):
    """The exact law of the pick gives every token its true cross probability to 1e-12 relative
    at β = 22 … 30 (true values 1e-20 … 1e-10). Measured
    (``python tests/kernels/test_exact_pick.py``): worst relative error 4.4e-16."""
    worst = 0.0
    for key, (truth, new, _) in laws.items():
        assert 1e-21 < truth < 1e-9, (key, truth)
        worst = max(worst, abs(float(new) / truth - 1.0))
    assert worst < 1e-12, worst


def test_single_uniform_draw_is_biased_on_the_triangle(laws):
    """Negative control: the former single-uniform draw misses the true cross probabilities by
    far more than 1e-12 (``python tests/kernels/test_exact_pick.py`` prints them; on the frozen
    triangle −1.1 % at β = 22, +6.8 % at 23, −21 % at 23.5, +68 % at 24, −49 % at 24.5 for some
    tokens, and from 24.5 on some never cross (−100 %) while others keep the 2^-53 floor of u = 0,
    96.5 times their value at β = 28)."""
    rel = [float(old) / truth - 1.0 for truth, _, old in laws.values()]
    assert min(rel) == -1.0 and max(rel) > 1.0
    assert sum(abs(r) > 1e-3 for r in rel) >= len(rel) // 3


def test_kernel_takes_the_reference_decision_on_the_triangle():
    """chain_step on the triangle at β = 28 with u at the Bernoulli boundary and its neighbours
    equals the reference (stream draws included), so the exact law above is the kernel's."""
    for beta in (22.0, 28.0):
        for m in (0, 1, 2, 2**40, GRID - 1):
            u = np.full(9, m * 2.0**-53)
            for seed in range(3):
                state = ms.Seed(seed).streams(1)[0]
                gen = ref.Xoshiro256(state)
                got = k_chain(TRIANGLE, np.eye(2), beta, 0.1, u, state)
                want = ref.chain_step(TRIANGLE, np.eye(2), beta, 0.1, u, gen)
                assert np.array_equal(got, want) and np.array_equal(state, gen.state())


def test_nested_scales_are_exact():
    """Three scales in one row: the self weight 1, a near cluster at e^-30 and a far one at
    e^-400 (below the 2^-20 cut of the near cluster too): the far cluster's probability is exact
    through two levels of rare decisions. The single uniform gives it 0."""
    w = [1.0, math.exp(-30.0), math.exp(-30.5), math.exp(-400.0), math.exp(-401.0), 0.0]
    law = exact_law(ref.pick, w)
    total = math.fsum(w)
    for j, wj in enumerate(w):
        got = float(law.get(j, Fraction(0)))
        assert (got == 0.0) if wj == 0.0 else abs(got / (wj / total) - 1.0) < 1e-12, (j, got)
    old = exact_law(old_pick, w)
    assert old.get(3, 0) == 0 and old.get(4, 0) == 0


# ------------------------------------------------------------------ the underflow boundary


def _two_points(beta):
    """Two groups of two tokens at ±(1, 0), B = I: every cross pick has exponent −2β."""
    return ms.SoftmaxChain(beta, 0.5), np.repeat([[1.0, 0.0], [-1.0, 0.0]], 2, axis=0)


def test_warning_fires_exactly_where_weights_underflow():
    """ResolutionWarning fires iff the kernels' weight of every cross pick is 0, on both sides of
    the boundary exponent underflow_exponent() ≈ −708.74 (β = −z/2 ± 1e-12 relative)."""
    z = engine.underflow_exponent()
    assert ref.exp_nonpositive(z) > 0.0 and ref.exp_nonpositive(np.nextafter(z, -np.inf)) == 0.0
    below = -z / 2 * (1 - 1e-12)  # cross exponent just above z: drawable
    above = -z / 2 * (1 + 1e-12)  # just below z: flushed
    model, x = _two_points(below)
    assert ref.exp_nonpositive(-2 * below) > 0.0
    assert not engine.check_resolution(model, x[None])  # warnings are errors
    model, x = _two_points(above)
    assert ref.exp_nonpositive(-2 * above) == 0.0
    with pytest.warns(ms.ResolutionWarning, match=r"underflows to 0"):
        assert engine.check_resolution(model, x[None])
    # on the drawable side the pick really has positive probability (the exact law)
    w, _ = ref.softmax_weights(ref.scores(x, np.eye(2), 0), below)
    law = exact_law(ref.pick, w)
    assert float(law[2]) > 0.0 and abs(float(law[2]) / (w[2] / math.fsum(w)) - 1) < 1e-12


def test_resolution_bound_skips_the_kernels_only_where_no_weight_can_underflow(monkeypatch):
    """Below the bound 2 β |B|_F max|x|^2 < 700 (under −underflow_exponent() ≈ 708.74) the check
    returns False without running a kernel (nor announcing one), and the kernels' check agrees
    there; above it the kernels decide (the control: they are called)."""
    from metastab.engine import resolution

    assert -engine.underflow_exponent() > resolution._SAFE_EXPONENT
    beta = 0.999 * resolution._SAFE_EXPONENT / (2 * math.sqrt(2))  # B = I in R^2, |x| = 1
    model, x = _two_points(beta)
    monkeypatch.setattr(resolution, "_no_weight_underflows", lambda *a: False)
    assert not engine.check_resolution(model, x[None])  # the kernels: every weight positive
    monkeypatch.undo()

    def called(*args):
        raise LookupError("kernel check")

    assert resolution.check_kernels(model, x[None]) == ()  # nothing to announce
    monkeypatch.setattr(resolution, "cross_weights", called)
    assert not engine.check_resolution(model, x[None])
    model, x = _two_points(1.002 * beta)
    assert resolution.check_kernels(model, x[None]) == (
        resolution.merge_groups,
        called,
    )
    with pytest.raises(LookupError, match="kernel check"):
        engine.check_resolution(model, x[None])


def test_resolution_check_memory_is_linear():
    """n = 20 000 tokens, where an n×n float64 array is 3.2 GB: in a fresh process, after a small
    check has compiled (or loaded) the kernels, the large check raises the peak resident memory
    by less than 1 GB (compiling alone can take about 1 GB, hence the warm-up)."""
    code = (
        "import resource, warnings, numpy as np, metastab as ms\n"
        "from metastab import engine\n"
        "def check(m):\n"
        "    x = np.repeat([[1.0, 0.0], [-1.0, 0.0]], m, axis=0)\n"
        "    with warnings.catch_warnings(record=True):\n"
        "        warnings.simplefilter('always')\n"
        "        return engine.check_resolution(ms.SoftmaxChain(400.0, 0.5), x[None])\n"
        "check(5)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "hit = check(10_000)\n"
        "print(hit, before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "True" and int(out[2]) - int(out[1]) < 1_000_000, out  # ru_maxrss: KiB


# ------------------------------------------------------------------ escape laws, both modes

# The frozen clustered triangle scaled to radius r = sqrt(x / (1.5 β)), B = I: every cross pick
# has exponent −1.5 r² β = −x, x = 14.2 at β = 24 and 14.6 at β = 28 (weights 6.8e-7 and 4.6e-7,
# below the 2^-20 cut), so it is drawn through the exact Bernoulli and the rare branch. A cross
# pick moves a token by γ√3 r, so the ball of half that radius is left at the first one: T is
# geometric (mean 8.2e4 and 1.2e5 steps).
EXPONENTS = {24.0: 14.2, 28.0: 14.6}


def _rare_problem(beta):
    r = math.sqrt(EXPONENTS[beta] / (1.5 * beta))
    vertices = r * ms.regular_polygon(3).vertices
    return vertices, np.tile(vertices, (3, 1)), ms.LeaveBall(0.5 * 0.5 * math.sqrt(3) * r)


def _anderson_p(a, b) -> float:
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "p-value (capped|floored)", UserWarning)
        return float(stats.anderson_ksamp([a, b], variant="midrank").pvalue)


@pytest.mark.slow
@pytest.mark.parametrize("beta", [24.0, 28.0])
def test_exact_and_accelerated_escape_laws_agree_through_rare_picks(beta):
    """Direct stepping (every cross pick drawn by the exact Bernoulli and the rare branch) and
    the accelerated chain give one escape-time law (KS and AD p > 1e-3); the accelerated chain at
    1.1 β is told apart (KS p < 1e-6, AD p <= 1e-3); direct stepping also matches the geometric
    law of theory.frozen_law (chi-square p > 1e-3). ~10 s per β on 2 cores. Measured:
    β = 24: KS p = 0.23, AD p >= 0.25, geometric p = 0.97, 1.1 β: KS p = 7e-28, AD p <= 0.001;
    β = 28: KS p = 0.73, AD p >= 0.25, geometric p = 0.97, 1.1 β: KS p = 3e-24, AD p <= 0.001."""
    from test_accelerate import geometric_p

    from metastab import theory

    vertices, x0, ball = _rare_problem(beta)
    assert 2.0**-22 < math.exp(-EXPONENTS[beta]) < 2.0**-20
    runs = [
        ms.first_passage(
            ms.SoftmaxChain(b, 0.5), x0, ball, max_steps=10**8, chains=150, rng=seed, mode=mode
        )
        for b, mode, seed in [
            (beta, "exact", 1),
            (beta, "accelerated", 2),
            (1.1 * beta, "accelerated", 3),
        ]
    ]
    exact, fast, wrong = runs
    assert not any(fp.censored.any() for fp in runs)
    ks, ad = stats.ks_2samp(exact.times, fast.times).pvalue, _anderson_p(exact.times, fast.times)
    assert ks > 1e-3 and ad > 1e-3, (ks, ad)
    ks_bad = stats.ks_2samp(exact.times, wrong.times).pvalue
    assert ks_bad < 1e-6 and _anderson_p(exact.times, wrong.times) <= 1e-3, ks_bad
    law = theory.frozen_law(vertices, np.full(3, 3), beta, np.eye(2))
    assert geometric_p(exact.times.astype(float), law.p) > 1e-3


if __name__ == "__main__":  # the table quoted in the docstrings above and in the README
    table = triangle_laws()
    print(
        "config   beta   true cross (min-max)   exact pick: worst rel. error   "
        "single uniform: rel. error (min, max)"
    )
    for name in CONFIGS:
        for beta in BETAS:
            rows = [table[(name, beta, i)] for i in range(9)]
            truth = [t for t, _, _ in rows]
            new = max(abs(float(n) / t - 1.0) for t, n, _ in rows)
            old = [float(o) / t - 1.0 for t, _, o in rows]
            print(
                f"{name:8} {beta:5.1f}  {min(truth):9.2e} - {max(truth):8.2e}   {new:27.1e}   "
                f"{100 * min(old):+9.1f} %, {100 * max(old):+9.1f} %"
            )
