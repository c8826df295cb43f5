"""The pieces of ``metastab bench --workload ams-ou``: the OU replica stepper, the finite-horizon
truth, the bench without pyTAMS, and the command's refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cli_calls import run

from metastab.bench.ams import OUChain, ams_ou_bench, horizon_probability
from metastab.engine.ams import run_ams

RHO = math.exp(-0.1)
S = math.sqrt(1 - RHO**2)


def test_horizon_probability_against_direct_simulation():
    # 200000 direct paths of 10 steps: the binomial standard error of p ≈ 0.07 is 6e-4
    b, T, C = 2.0, 10, 200_000
    truth = horizon_probability(RHO, S, b, 0.5, T)
    rng = np.random.default_rng(3)
    x = np.full(C, 0.5)
    hit = np.zeros(C, bool)
    for _ in range(T):
        x = RHO * x + S * rng.standard_normal(C)
        hit |= x >= b
    se = math.sqrt(truth * (1 - truth) / C)
    assert abs(hit.mean() - truth) < 4 * se
    assert not abs(hit.mean() - 1.1 * truth) < 4 * se  # 10 % off is seen
    assert horizon_probability(RHO, S, b, 0.5, T, panels=300) == pytest.approx(truth, rel=1e-12)


def test_ou_chain_with_a_horizon_is_unbiased():
    b, T = 3.0, 30
    truth = horizon_probability(RHO, S, b, 0.0, T)
    out, _ = run_ams(OUChain(RHO, S, b=b, horizon=T), np.array([0.0]), replicas=10, runs=300, rng=4)
    e = out.estimates
    z = (e.mean() - truth) / (e.std(ddof=1) / math.sqrt(e.size))
    assert abs(z) < 4
    assert not abs((e.mean() - 1.5 * truth) / (e.std(ddof=1) / math.sqrt(e.size))) < 4


def test_ou_chain_runs_are_the_same_bits_whatever_the_batch():
    chain = OUChain(0.9, math.sqrt(0.19), a=0.0, b=2.5, block=4)
    few, _ = run_ams(chain, np.array([0.5]), replicas=8, runs=3, rng=9)
    many, _ = run_ams(chain, np.array([0.5]), replicas=8, runs=7, rng=9)
    assert np.array_equal(few.estimates, many.estimates[:3])
    again, _ = run_ams(OUChain(0.9, math.sqrt(0.19), a=0.0, b=2.5, block=64), np.array([0.5]),
                       replicas=8, runs=3, rng=9)  # fmt: skip
    # the block length changes how many normals a path draws at once, not which ones
    assert np.array_equal(few.estimates, again.estimates)


def test_ou_chain_steps_stop_at_the_end_of_each_path():
    from metastab.engine.ams import FAILED, REACHED

    # B out of reach: every path runs to the horizon, 17 steps, across blocks of 4, 8
    chain = OUChain(RHO, S, b=50.0, horizon=17, block=4)
    ids = np.array([[1, 2, q] for q in range(3)], np.uint64)
    segs = chain.advance(np.zeros((3, 1)), np.zeros(3), np.zeros(3), ids)
    assert [s.clock for s in segs] == [17.0] * 3 and {s.status for s in segs} == {FAILED}
    assert chain.steps == 3 * 17
    # B at reach: a path ends at its first step in B, with that step's level +inf
    chain = OUChain(RHO, S, b=0.5, block=4)
    (seg,) = chain.advance(np.zeros((1, 1)), np.zeros(1), np.zeros(1), ids[:1])
    assert seg.status == REACHED and seg.levels[-1] == np.inf and seg.clock == chain.steps
    assert np.all(np.diff(seg.levels) > 0) and seg.states[-1, 0] >= 0.5


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"rho": 1.0}, "rho"), ({"s": 0.0}, "s"), ({"b": -1.0, "a": 0.0}, "b"), ({"dim": 0}, "dim")],
)
def test_ou_chain_names_a_bad_parameter(kwargs, name):
    args = {"rho": 0.9, "s": 0.4, "b": 1.0} | kwargs
    with pytest.raises(ValueError, match=rf"^{name} must"):
        OUChain(args.pop("rho"), args.pop("s"), **args)


def test_bench_without_pytams_reports_metastab_alone():
    r = ams_ou_bench(metastab_runs=40, pytams=False)
    (row,) = r["rows"]
    assert row["package"] == "metastab" and row["runs"] == 40
    assert r["ratio"] is None and "not run" in r["pytams"]
    # the CPU at ε is the CPU per run times the runs that ε needs
    need = (row["relative_error_run"] / r["epsilon"]) ** 2
    assert row["cpu_s_at_epsilon"] == pytest.approx(row["cpu_s_per_run"] * need)
    with pytest.raises(ValueError, match="pytams_runs must"):
        ams_ou_bench(pytams_runs=1, pytams=False)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--steps", "3"), "steps: --workload ams-ou takes only --chains"),
        (("--chains", "1"), "chains must be an integer >= 2"),
        (("--repeat", "2"), "repeat: --workload ams-ou"),
    ],
)
def test_bench_ams_ou_refuses_other_options(capsys, argv, message):
    code, _, err = run(capsys, "bench", "--workload", "ams-ou", *argv)
    assert code == 2 and message in err
