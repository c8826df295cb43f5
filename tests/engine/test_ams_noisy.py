"""AMS on the noisy sphere leaving the uniform state: the replicas are first_passage's chains,
and the AMS estimates agree with direct simulation where both reach.

The case: the noisy circle (d = 2) at β = 16 > β_* = 2.4469, K = K_c + 0.05 (K_# − K_c) between
the critical coupling and the linear threshold (metastab.theory.noisy), dt = 0.005, n = 16
tokens from the regular polygon (m_1 = 0), the event LeaveUniform(0.8) (the clustered state
is at m_1 ≈ 0.93, the saddle at 0.49), the reference set A = {m_1 <= 0.3}. The negative
control is a wrong coupling, K = K_c + 0.5 (K_# − K_c), whose AMS estimate the same test must
reject.

Statistical checks have fixed seeds and state their tolerance: the log-ratio of the AMS
estimate to the direct one over its combined standard error, |z| <= Z = 2.58 (a two-sided 1 %
test); the figures quoted were measured with these seeds (print them with ``-s``).
"""

import math

import numba
import numpy as np
import pytest

import metastab as ms
from metastab.engine import ams_mean_escape_time, ams_probability, first_passage
from metastab.engine.ams_chains import NoisyStepper
from metastab.engine.ams_hill import cycles_of
from metastab.engine.ams_noisy import noisy_setup
from metastab.engine.backends import resolve
from metastab.theory import critical_coupling, critical_coupling_linear

SEED = 20_251_203
BETA, D, N_TOKENS, DT = 16.0, 2, 16, 0.005
K_C, K_SHARP = critical_coupling(BETA, D), critical_coupling_linear(BETA, D)
MODEL = ms.NoisySphere(BETA, K_C + 0.05 * (K_SHARP - K_C), DT)
WRONG = ms.NoisySphere(BETA, K_C + 0.5 * (K_SHARP - K_C), DT)
X0 = ms.regular_polygon(N_TOKENS).vertices
EVENT = ms.LeaveUniform(0.8)
A = 0.3
Z = 2.58


def _direct_mean(model, chains, rng):
    """(mean, standard error) of T by first_passage, every chain to the event."""
    fp = first_passage(model, X0, EVENT, max_steps=10**7, chains=chains, rng=rng, progress=False)
    assert not fp.censored.any()
    return float(fp.times.mean()), float(fp.times.std(ddof=1) / math.sqrt(chains))


def _z(estimate, log_se, mean, se):
    """The log-ratio of two estimates over its combined standard error (delta method)."""
    return math.log(estimate / mean) / math.hypot(log_se, se / mean)


def test_cycles_add_up_to_first_passage_bit_for_bit():
    """The direct chains of the Hill estimator, stepped by noisy_excursions, are first_passage's
    chains: their sojourns and excursions add up to its times, stream for stream."""
    setup = noisy_setup(
        MODEL, X0, EVENT, reference_level=A, horizon=None, max_steps=None, mode=None,
        merge_tol=None, score=None,
    )  # fmt: skip
    stepper = NoisyStepper(resolve("cpu"), setup, False)
    seed = ms.as_seed(11)
    cyc = cycles_of(stepper.drive, setup.x, A, seed.streams(30), cycles=None, limit=1e7)
    fp = first_passage(MODEL, X0, EVENT, max_steps=10**7, chains=30, rng=seed, progress=False)
    assert cyc.complete.all() and not fp.censored.any()
    total = np.bincount(cyc.chain, weights=cyc.sojourn + cyc.excursion, minlength=30)
    np.testing.assert_array_equal(total, fp.times)
    assert (ms.order_parameters(cyc.entrance)[:, 0] > A).all()  # every exit is outside A
    assert cyc.rank.max() > 0


def test_mean_escape_time_against_direct_simulation_and_a_wrong_coupling():
    """Hill-relation AMS (every direct chain to the event) against 400 direct chains:
    measured 2730 steps (95 % interval [2324, 3207]) against 2609 ± 110, z = 0.50; the wrong
    K gives 1230 [948, 1596], z = −5.4, rejected."""
    direct, se = _direct_mean(MODEL, 400, SEED)
    kw = dict(reference_level=A, chains=10, replicas=50, runs=10, rng=SEED + 1)
    res = ams_mean_escape_time(MODEL, X0, EVENT, **kw)
    low, high = res.confidence_interval()
    log_se = math.log(high / low) / (2 * 1.96)  # the interval is symmetric in log
    z = _z(res.mean, log_se, direct, se)
    print(f"\nAMS {res.mean:.4g} [{low:.4g}, {high:.4g}], direct {direct:.4g} ± {se:.2g}", z)
    assert abs(z) <= Z
    assert res.complete == 100 and res.probability.score == "order parameter"
    wrong = ams_mean_escape_time(WRONG, X0, EVENT, **{**kw, "replicas": 20})
    w_low, w_high = wrong.confidence_interval()
    z_wrong = _z(wrong.mean, math.log(w_high / w_low) / (2 * 1.96), direct, se)
    print(f"wrong K: AMS {wrong.mean:.4g} [{w_low:.4g}, {w_high:.4g}], z {z_wrong:.2f}")
    assert abs(z_wrong) > Z


def test_probability_by_a_horizon_against_direct_simulation():
    """P[T <= 300 steps] by AMS (A empty) against the fraction of 10^4 direct chains: measured
    0.00528 ± 0.00041 against 0.0061 ± 0.0008, z = −0.94; the wrong K gives 0.0110 ± 0.0009,
    z = 4.1, rejected."""
    t, chains = 300, 10_000
    fp = first_passage(MODEL, X0, EVENT, max_steps=t, chains=chains, rng=SEED + 2, progress=False)
    q = float((~fp.censored).mean())
    se = math.sqrt(q * (1 - q) / chains)
    res = ams_probability(MODEL, X0, EVENT, horizon=t, replicas=50, runs=40, rng=SEED + 3)
    z = (res.p - q) / math.hypot(res.standard_error, se)
    print(f"\nAMS {res.p:.4g} ± {res.standard_error:.2g}, direct {q:.4g} ± {se:.2g}, z {z:.2f}")
    assert 0 < q < 0.2 and abs(z) <= Z
    wrong = ams_probability(WRONG, X0, EVENT, horizon=t, replicas=50, runs=40, rng=SEED + 3)
    z_wrong = (wrong.p - q) / math.hypot(wrong.standard_error, se)
    print(f"wrong K: AMS {wrong.p:.4g} ± {wrong.standard_error:.2g}, z {z_wrong:.2f}")
    assert abs(z_wrong) > Z


def test_bits_do_not_depend_on_threads_or_runs_and_replay():
    kw = dict(reference_level=A, replicas=10, rng=5)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ams_probability(MODEL, X0, EVENT, runs=2, **kw)
        hill = ams_mean_escape_time(MODEL, X0, EVENT, chains=3, runs=2, **kw)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = ams_probability(MODEL, X0, EVENT, runs=3, **kw)
        hill_two = ams_mean_escape_time(MODEL, X0, EVENT, chains=3, runs=3, **kw)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one.runs, two.runs[:2])
    np.testing.assert_array_equal(one.reached_clock, two.reached_clock[:2])
    for name in ("entrances", "direct_time", "success_time"):
        np.testing.assert_array_equal(getattr(hill, name), getattr(hill_two, name)[:2])
    np.testing.assert_array_equal(one.replay().runs, one.runs)
    assert hill.replay().mean == hill.mean
    other = ams_probability(MODEL, X0, EVENT, runs=2, **{**kw, "rng": 6})
    assert not np.array_equal(other.runs, one.runs)  # the control


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(event=ms.ReachUniform(0.1)), "event must be a LeaveUniform with a NoisySphere"),
        (dict(mode="accelerated"), "mode must be 'exact'"),
        (dict(merge_tol=1e-9), "merge_tol is for SA_P"),
        (dict(score=lambda X: X[:, 0, 0]), "score must be None with a NoisySphere"),
        (dict(reference_level=0.8), "reference_level"),
        (dict(x0=2 * X0), "x0 must lie on the unit sphere"),
        (dict(entrance=np.zeros((2, 3, N_TOKENS, D))), r"entrance must be a finite \(runs"),
    ],
)
def test_bad_inputs_are_refused(kwargs, match):
    args = {**dict(x0=X0, event=EVENT, reference_level=A, replicas=4, runs=2, rng=1), **kwargs}
    with pytest.raises(ValueError, match=match):
        ams_probability(MODEL, **args)


def test_refusals_of_the_mean_time_and_of_other_models():
    with pytest.raises(ValueError, match="x0 must lie in the reference set: its m_1"):
        one_cluster = np.tile([1.0, 0.0], (N_TOKENS, 1))
        ams_mean_escape_time(MODEL, one_cluster, EVENT, reference_level=A, rng=1)
    with pytest.raises(ValueError, match="SoftmaxChain \\(SA_P\\) or a NoisySphere"):
        ams_probability(ms.SphereFlow(1.0, 0.1), X0, EVENT, reference_level=A)
    with pytest.raises(ValueError, match="LeaveBall or a LeaveHull with SA_P"):
        ams_probability(ms.SoftmaxChain(1.0, 0.1), X0, EVENT, reference_level=A)
    with pytest.raises(ValueError, match="splitting runs on device='cpu' only"):
        from metastab.engine.backends import Cuda

        Cuda.noisy_excursions(None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--steps", "3"), "steps: --workload ams-noisy takes only --chains"),
        (("--chains", "1"), "chains must be an integer >= 2 for ams-noisy"),
        (("--repeat", "2"), "repeat: --workload ams-noisy"),
    ],
)
def test_bench_ams_noisy_refuses_other_options(capsys, argv, message):
    from cli_calls import run

    code, _, err = run(capsys, "bench", "--workload", "ams-noisy", *argv)
    assert code == 2 and message in err
