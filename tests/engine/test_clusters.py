"""Clusters, merge times, plateau durations and the cluster observables: kernels against the
reference twin bit for bit, the on-line levels against recorded paths, the Clusters event against
the levels, reproducibility, and plateau durations through the censored scaling fit."""

import math

import numba
import numpy as np
import pandas as pd
import pytest
from cli_calls import run as _cli

import metastab as ms
from metastab.kernels.cpu import clustering as K
from metastab.kernels.reference import clustering as ref
from metastab.results.track import Track, plateau_durations


def _configs(seed=0):
    """Configurations that probe the threshold: on the sphere, in R^d, tight groups with noise
    at the scale of δ, coincident tokens, a token at the origin."""
    rng = np.random.default_rng(seed)
    out = []
    for d in (1, 2, 3, 8):
        for n in (2, 3, 7, 12):
            x = rng.normal(size=(n, d))
            out.append(x)
            out.append(x / np.linalg.norm(x, axis=1, keepdims=True))
            centres = rng.normal(size=(3, d))
            g = centres[rng.integers(0, 3, size=n)]
            out.append(g + rng.normal(size=(n, d)) * rng.choice([1e-1, 3e-2, 1e-2, 1e-3]))
    x = rng.normal(size=(6, 3))
    x[2] = 0.0
    x[4] = x[1]
    out.append(x)
    return out


@pytest.mark.parametrize("delta", [1e-3, 1e-2, 0.3, 2.0])
def test_observables_equal_the_reference_bit_for_bit(delta):
    threshold = 1.0 - delta
    for x in _configs():
        for beta in (0.0, 1.0, 9.0, 1e6, math.inf):
            row = np.empty(len(K.OBSERVABLES))
            K.observe_one(np.ascontiguousarray(x), threshold, beta, row)
            np.testing.assert_array_equal(row, ref.observe(x, delta, beta))
        assert K.cluster_count(np.ascontiguousarray(x), threshold) == ref.cluster_count(x, delta)


def test_cluster_count_separates_directions_not_lengths():
    x = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    # the two tokens on the first axis are one cluster; the origin is in no pair
    assert K.cluster_count(x, 1.0 - 1e-3) == 3
    # negative control: a threshold that no pair reaches
    assert K.cluster_count(x, 1.5) == 4


def test_energy_at_huge_beta_is_finite_in_log():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    row = np.empty(len(K.OBSERVABLES))
    K.observe_one(x, 1.0 - 1e-3, 1e6, row)
    # E = (2 e^β + 2) / (8 β): log E = β − log(4β) up to e^{-β}
    assert row[4] == pytest.approx(1e6 - math.log(4e6), rel=1e-15)
    assert row[5] == math.inf


MODELS = [
    ms.SoftmaxChain(beta=4.0, gamma=0.3),
    ms.SoftmaxFlow(beta=2.0, gamma=0.2),
    ms.Hardmax(gamma=0.25),
    ms.SphereFlow(beta=4.0, dt=0.5),
    ms.SphereFlow(beta=4.0, dt=0.05, scheme="rk4", attention="unnormalized"),
    ms.SphereChain(beta=4.0, gamma=0.3),
]


def _circle(n, seed):
    theta = np.random.default_rng(seed).uniform(0, 2 * np.pi, size=n)
    return np.stack([np.cos(theta), np.sin(theta)], axis=1)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.kind}-{getattr(m, 'scheme', '')}")
def test_levels_and_observables_follow_the_recorded_path(model):
    """The on-line levels are the first passages of the count path of the simulated states,
    and the recorded observables are those of the states at the recording times."""
    x0 = _circle(6, 1)
    steps, delta = 60, 1e-2
    run = ms.simulate(model, x0, steps=steps, chains=3, rng=5, record_every=1)
    tr = ms.track(model, x0, steps=steps, chains=3, rng=5, delta=delta, record_every=10)
    beta = getattr(model, "beta", math.nan)
    for c in range(3):
        counts = [ref.cluster_count(run.trajectory[c, t], delta) for t in range(steps + 1)]
        np.testing.assert_array_equal(tr.levels[c], ref.levels(counts, 6))
        for r, t in enumerate(tr.times):
            np.testing.assert_array_equal(
                tr.observables[c, r], ref.observe(run.trajectory[c, t], delta, beta)
            )
    assert (np.nan_to_num(tr.levels, nan=1.0) > 0).any()  # the path has merges to compare


def test_clusters_event_stops_at_the_recorded_level():
    x0 = _circle(8, 2)
    model = ms.SoftmaxChain(beta=3.0, gamma=0.2)
    tr = ms.track(model, x0, steps=45, chains=40, rng=7)
    for k in (1, 2, 4):
        fp = ms.first_passage(model, x0, ms.Clusters(at_most=k), max_steps=45, chains=40, rng=7)
        level = tr.levels[:, k - 1]
        np.testing.assert_array_equal(fp.censored, np.isnan(level))
        np.testing.assert_array_equal(fp.times[~fp.censored], level[~fp.censored])
    assert 0 < np.isnan(tr.levels[:, 0]).sum() < 40  # some chains merge, some do not


def _same_on_one_and_two_threads(model, x0, **kwargs):
    """``ms.track(model, x0, **kwargs)`` on one thread, after asserting that two threads record
    the same levels and observables."""
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ms.track(model, x0, **kwargs)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = ms.track(model, x0, **kwargs)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one.levels, two.levels)
    np.testing.assert_array_equal(one.observables, two.observables)
    return one


def test_thread_count_does_not_matter():
    x0 = _circle(40, 3)
    model = ms.SoftmaxChain(beta=5.0, gamma=0.2)
    one = _same_on_one_and_two_threads(model, x0, steps=80, chains=5, rng=11, record_every=20)
    other = ms.track(model, x0, steps=80, chains=5, rng=12, record_every=20)
    assert not np.array_equal(one.observables, other.observables)  # the seed does matter


def _track(levels, steps):
    levels = np.asarray(levels, dtype=float)
    return Track(
        levels=levels,
        times=np.array([0, steps]),
        observables=np.zeros((levels.shape[0], 2, len(K.OBSERVABLES))),
        steps=steps,
        delta=1e-3,
        energy_beta=1.0,
        model={"kind": "softmax-flow", "beta": 1.0, "gamma": 0.5},
        seed={"entropy": 0},
        first_chain=10,
    )


def test_plateau_table_from_levels():
    nan = np.nan
    tr = _track(
        [
            [9, 9, 4, 4, 0],  # 5 -> 3 at step 4 (level 4 skipped), 3 -> 1 at 9 (2 skipped)
            [nan, 30, 30, 0, 0],  # starts at 4, drops to 2 at 30, open at the horizon
            [nan, nan, nan, nan, 0],  # never merges
        ],
        steps=50,
    )
    got = tr.to_frame()[["chain", "k", "start", "end", "censored"]]
    expected = pd.DataFrame(
        [
            (10, 5, 0, 4, False),
            (10, 3, 4, 9, False),
            (10, 1, 9, 50, True),
            (11, 4, 0, 30, False),
            (11, 2, 30, 50, True),
            (12, 5, 0, 50, True),
        ],
        columns=["chain", "k", "start", "end", "censored"],
    )
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    frame = tr.to_frame()
    assert (frame["max_steps"] == 50).all() and (frame["beta"] == 1.0).all()


def test_observables_frame_is_tidy(tmp_path):
    x0 = _circle(5, 4)
    tr = ms.track(
        ms.SoftmaxFlow(beta=4.0, gamma=0.5), x0, steps=30, chains=2, rng=0, record_at=[0, 5, 30]
    )
    frame = tr.observables_frame()
    assert len(frame) == 6 and list(frame["step"][:3]) == [0, 5, 30]
    np.testing.assert_array_equal(frame["pair12"], frame["cos12"] >= 1 - 1e-3)
    assert frame["clusters"].dtype == np.int64
    tr.save(tmp_path / "p.csv")
    tr.save_observables(tmp_path / "o.parquet")
    back, meta = ms.results.read_table(tmp_path / "p.csv")
    assert meta["kind"] == "plateaus" and len(back) == len(tr.to_frame())


def _two_token_mean(beta, c):
    """Exact E[T] of the plateau at 2 clusters of SA_P with γ = 1 from two tokens at cosine
    1 − c: each token picks the other with p = 1/(1 + e^{βc}); the pair merges when exactly one
    does (both swapping keeps two clusters), so T is geometric with success 2p(1 − p)."""
    p = 1.0 / (1.0 + math.exp(beta * c))
    return 1.0 / (2.0 * p * (1.0 - p))


def test_plateau_durations_read_the_former_column_name():
    """Tables written before the plateau's end was called ``end`` hold it in ``steps``."""
    tr = _track([[9, 9, 4, 4, 0], [np.nan, 30, 30, 0, 0]], steps=50)
    new = tr.to_frame()
    old = new.rename(columns={"end": "steps"})
    for k in (2, 3, 4):
        pd.testing.assert_frame_equal(plateau_durations(old, k), plateau_durations(new, k))
    got = plateau_durations(new, 4)
    assert list(got["steps"]) == [30] and list(got["max_steps"]) == [50]
    with pytest.raises(ValueError, match=r"needs the columns \['end'\]"):
        plateau_durations(new.drop(columns="end"), 4)


def test_plateau_durations_go_straight_into_the_scaling_fit():
    theta = 1.2
    c = 1.0 - math.cos(theta)
    x0 = np.array([[1.0, 0.0], [math.cos(theta), math.sin(theta)]])
    betas = (3.0, 5.0, 7.0, 9.0)
    frames = [
        ms.track(ms.SoftmaxChain(beta=b, gamma=1.0), x0, steps=400, chains=400, rng=1).to_frame()
        for b in betas
    ]
    plateaus = pd.concat(frames, ignore_index=True)
    two = plateau_durations(plateaus, 2)
    assert two["censored"].any() and not two["censored"].all()
    table, fit = ms.stats.fit_report(two, confidence_level=0.99, n_resamples=99)
    # every beta's mean plateau length covers the exact law (99%, seeded)
    exact = np.array([_two_token_mean(b, c) for b in betas])
    assert ((table["mean_low"] <= exact) & (exact <= table["mean_high"])).all(), table
    # the slope of log E[T] covers the exact law's least-squares slope over these betas (0.594;
    # 1 − cos θ = 0.638 is its limit as beta grows)
    lo, hi = fit.confidence_interval("slope")
    exact_slope = np.polyfit(betas, np.log(exact), 1)[0]
    assert lo <= exact_slope <= hi
    # negative control: the rate of a pair at a wider angle is excluded
    wrong = 1.0 - math.cos(theta + 0.3)
    assert not lo <= wrong <= hi


# --------------------------------------------------------------------------- command line, sweep


TRACK = ("track", "--polytope", "regular:6", "--init", "uniform", "--n", "8", "--chains", "30")


def test_track_command_writes_plateaus_that_fit_reads(capsys, tmp_path):
    out, obs = tmp_path / "p.csv", tmp_path / "o.parquet"
    code, text, err = _cli(
        capsys, *TRACK, "--beta", "4", "8", "--steps", "300", "--seed", "2",
        "--out", str(out), "--observables", str(obs), "--record-every", "100",
    )  # fmt: skip
    assert code == 0 and err == "", err
    frame, meta = ms.results.read_table(out)
    assert meta["kind"] == "plateaus" and sorted(frame["beta"].unique()) == [4.0, 8.0]
    first = ms.results.read_table(obs)[0]
    assert first["step"].unique().tolist() == [0, 100, 200, 300] and len(first) == 2 * 30 * 4
    k0 = int(frame["k"].max())  # every chain's first plateau
    code, text, err = _cli(capsys, "fit", str(out), "--plateau", str(k0), "--figure", "none")
    assert code == 0 and "log E[T] = a + b·beta" in text, err
    # a plateau table without --plateau, and a missing level: one line each, exit 2
    code, text, err = _cli(capsys, "fit", str(out), "--figure", "none")
    assert code == 2 and "--plateau K" in err and "Traceback" not in err
    code, text, err = _cli(capsys, "fit", str(out), "--plateau", "99", "--figure", "none")
    assert code == 2 and "no plateau at k=99" in err


@pytest.mark.parametrize(
    "flags, message",
    [
        (("--delta", "0"), "delta must be in (0, 2]"),
        (("--delta", "3"), "delta must be in (0, 2]"),
        (("--n", "1"), "n >= 2"),
    ],
)
def test_track_command_refuses_bad_input(capsys, flags, message):
    code, text, err = _cli(capsys, *TRACK, "--steps", "5", *flags)
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_passage_with_the_clusters_event(capsys):
    argv = ("passage", "--event", "clusters", "--init", "uniform", "--n", "8", "--chains", "10")
    code, text, err = _cli(capsys, *argv, "--at-most", "2", "--delta", "1e-2", "--seed", "1")
    assert code == 0 and "event clusters" in text, err
    code, text, err = _cli(capsys, *argv, "--seed", "1")
    assert code == 2 and "needs --at-most" in err
    code, text, err = _cli(capsys, *argv, "--at-most", "2", "--event-radius", "0.1")
    assert code == 2 and "does not apply to --event clusters" in err


@pytest.mark.parametrize("bad, message", [({"at_most": 0}, "at_most"), ({"delta": -1}, "delta")])
def test_clusters_event_refuses_bad_parameters(bad, message):
    with pytest.raises(ValueError, match=message):
        ms.Clusters(**{"at_most": 2, **bad})


def test_sweep_with_the_clusters_event(tmp_path):
    from metastab.sweep import Sweep, read_sweep, run_sweep

    config = {
        "model": {"kind": "softmax-chain", "gamma": 0.2},
        "grid": {"beta": [2.0, 6.0]},
        "polytope": {"kind": "regular", "k": 4},
        "initial": {"kind": "uniform", "n": 6, "seed": 3},
        "event": {"kind": "clusters", "at_most": 2, "delta": 1e-2},
        "run": {"chains": 20, "chunk": 10, "max_steps": 500, "seed": 4},
    }
    sweep = Sweep.from_dict(config)
    run_sweep(sweep, tmp_path / "sweep")
    frame, _ = read_sweep(tmp_path / "sweep")
    for point in sweep.points:
        fp = ms.first_passage(
            point.model, point.x0, point.event, max_steps=500, chains=20, rng=point.seed
        )
        rows = frame[frame.point == point.index]
        np.testing.assert_array_equal(rows.steps, fp.times)
        assert (rows.event_at_most == 2).all()


def test_token_parallel_path_records_the_same_levels():
    """One SA_P chain of n > 32 tokens on two threads splits each step's tokens over the
    threads (the token-parallel driver): same levels and observables as on one thread."""
    x0 = _circle(48, 6)
    model = ms.SoftmaxChain(beta=6.0, gamma=0.3)
    one = _same_on_one_and_two_threads(model, x0, steps=60, chains=1, rng=2, record_every=30)
    run = ms.simulate(model, x0, steps=60, chains=1, rng=2, record_every=1)
    counts = [ref.cluster_count(run.trajectory[0, t], 1e-3) for t in range(61)]
    np.testing.assert_array_equal(one.levels[0], ref.levels(counts, 48))


def test_accelerated_mode_stops_at_clusters_with_the_exact_law():
    """SA_P with γ = 1 from two groups of coincident tokens: a cross pick moves a token onto the
    other group, so the configuration stays on the two points and the chain merges when one
    group empties. Accelerated and direct stepping draw the same law (KS, seeded), and a
    negative control at another β is told apart."""
    from scipy.stats import ks_2samp

    theta = 1.2
    x0 = np.array([[1.0, 0.0]] * 3 + [[math.cos(theta), math.sin(theta)]] * 3)
    event = ms.Clusters(at_most=1)
    run = {"max_steps": 10**6, "chains": 2000, "rng": 1}
    fast = ms.first_passage(
        ms.SoftmaxChain(beta=6.0, gamma=1.0), x0, event, mode="accelerated", **run
    )
    exact = ms.first_passage(ms.SoftmaxChain(beta=6.0, gamma=1.0), x0, event, **run)
    other = ms.first_passage(ms.SoftmaxChain(beta=6.5, gamma=1.0), x0, event, **run)
    assert not fast.censored.any() and not exact.censored.any()
    assert ks_2samp(fast.times, exact.times).pvalue > 0.01
    assert ks_2samp(fast.times, other.times).pvalue < 1e-3


def test_energy_beta_is_validated():
    x0 = _circle(4, 0)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="energy_beta"):
            ms.track(ms.Hardmax(gamma=0.5), x0, steps=2, energy_beta=bad)
    tr = ms.track(ms.Hardmax(gamma=0.5), x0, steps=2)
    assert np.isnan(tr.observables[..., 4:]).all()  # hardmax has no finite beta
    tr = ms.track(ms.Hardmax(gamma=0.5), x0, steps=2, energy_beta=2.0)
    assert np.isfinite(tr.observables[..., 4:]).all()


def test_without_merges_the_observables_are_the_same():
    x0 = _circle(10, 8)
    model = ms.SoftmaxChain(beta=5.0, gamma=0.2)
    full = ms.track(model, x0, steps=50, chains=4, rng=3, record_every=25)
    light = ms.track(model, x0, steps=50, chains=4, rng=3, record_every=25, merges=False)
    np.testing.assert_array_equal(full.observables, light.observables)
    assert light.levels is None and "merges=False" in repr(light)
    with pytest.raises(ValueError, match="merges=False"):
        light.to_frame()
    with pytest.raises(ValueError, match="merges must be True or False"):
        ms.track(model, x0, steps=5, merges="no")


def test_orthogonal_start_merges_all_at_once_when_the_cosine_of_glpr_reaches_threshold():
    """GLPR Thm 6.8: from pairwise orthogonal tokens every cosine follows one γ_β(t), the
    solution of (6.9), so the count drops from n to 1 in a single step (the levels between are
    skipped), at the first step with γ_β(t) >= 1 − δ."""
    from scipy.integrate import solve_ivp

    n, beta, dt, delta = 8, 1.0, 0.1, 1e-3

    def rhs(t, g):
        e = math.exp(beta * g[0])
        return [2 * e * (1 - g[0]) * ((n - 1) * g[0] + 1) / (math.exp(beta) + (n - 1) * e)]

    def reached(t, g):
        return g[0] - (1 - delta)

    reached.terminal = True
    t_star = solve_ivp(rhs, (0, 50), [0.0], events=reached, rtol=1e-12, atol=1e-14).t_events[0][0]
    model = ms.SphereFlow(beta=beta, dt=dt, scheme="rk4")
    tr = ms.track(model, ms.orthogonal(n, n), steps=100, rng=0, record_every=1)
    frame = tr.to_frame()
    assert frame["k"].tolist() == [n, 1] and frame["censored"].tolist() == [False, True]
    merge = int(frame["end"][0])
    assert (merge - 1) * dt < t_star <= merge * dt  # t* = 4.79
    obs = tr.observables_frame()
    assert obs["pair_fraction"][merge - 1] == 0.0 and obs["pair_fraction"][merge] == 1.0
    # negative control: n = 4 tokens reach the threshold at another step
    other = ms.track(ms.SphereFlow(beta=beta, dt=dt, scheme="rk4"), ms.orthogonal(4, 4), steps=100)
    assert int(other.to_frame()["end"][0]) != merge
