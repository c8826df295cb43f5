"""The checks helpers of the meanfield-clusters and metastability studies on cases with known
answers (the studies themselves run in tests/studies/test_studies.py)."""

import pandas as pd
import pytest

from metastab.studies import study_module

MEANFIELD = study_module("meanfield-clusters", "checks")
METASTABILITY = study_module("metastability", "checks")


def _counts(tmp_path, counts: dict) -> None:
    from metastab.results import write_table

    rows = [
        {"beta": beta, "tokens": 1000, "multiple": 3.0, "k_star": k, "count_0.02": c}
        for beta, (k, values) in counts.items()
        for c in values
    ]
    write_table(pd.DataFrame(rows), tmp_path / "counts.csv", {"test": True})


def test_the_count_interval_tells_k_star_from_its_neighbours(tmp_path):
    # β = 1: always k*; β = 2: k* − 1 in 9 of 10 starts
    _counts(tmp_path, {1.0: (1, [1] * 10), 2.0: (3, [2] * 9 + [3])})
    table = MEANFIELD.summary(tmp_path, 0.02, 3.0, 0.95)
    low = table.set_index("beta").loc[2.0]
    assert low["mean"] == pytest.approx(2.1) and low["high"] < 2.5
    assert not MEANFIELD.passes(table, 0.5)  # k* itself: rejected at β = 2
    assert MEANFIELD.passes(table, 1.5)  # within ±1
    assert not MEANFIELD.passes(table, 0.5, -1)  # k* − 1: rejected at β = 1
    assert not MEANFIELD.passes(table, 0.5, 1)  # k* + 1: rejected at both


def test_every_check_declares_its_sample_and_the_report_reads_it_back():
    from metastab.studies.verdict import check, power, with_samples

    claim = check("law", "claim", "T is geometric", rule="KS p ≥ 0.01", passed=True)
    words = {"law": METASTABILITY.sample_of("law", {"law": "direct"})}
    tagged = with_samples([claim, power(claim, "x", rejected=True)], words)
    # the sample is a column; a power row rests on its claim's sample; the rule keeps its words
    assert [r["sample"] for r in tagged] == ["direct stepping", "direct stepping"]
    assert tagged[0]["rule"] == "KS p ≥ 0.01"
    frame = pd.DataFrame(tagged)
    assert list(METASTABILITY.samples(frame)) == ["direct", "direct"]
    with pytest.raises(KeyError, match="'rate': no sample declared"):
        METASTABILITY.sample_of("rate", {})
    with pytest.raises(KeyError, match="'rate': no sample declared"):
        with_samples([check("rate", "context", "y")], words)


STAIRCASE = study_module("staircase", "checks")


def test_the_fixed_prefactor_fit_recovers_the_rate_at_each_start_s_exact_angle(tmp_path):
    # durations of the two-cluster law e^(β(1 − cos Δθ)) / (β sin² Δθ), each start's angle off
    # the nominal 60° by a cap jitter of ±1e-3 rad that grows with β (the worst case for a fit
    # at the nominal angle)
    import math

    import numpy as np

    from metastab.results import write_table

    rows = []
    for i, beta in enumerate([20.0, 24.0, 28.0, 32.0]):
        for chain, sign in enumerate((-1, 1)):
            sep = math.pi / 3 + 1e-3 * (i - 1.5) * sign + 1e-3 * i
            steps = math.exp(beta * (1 - math.cos(sep))) / (beta * math.sin(sep) ** 2)
            rows.append(
                {
                    "part": "post-ln",
                    "angle": math.pi / 3,
                    "beta": beta,
                    "chain": chain,
                    "steps": float(round(steps)),
                    "censored": False,
                    "max_steps": float(round(steps)) * 5,
                    "start": 0,
                    "separation": sep,
                    "log_time_quadrature": math.log(steps),
                }
            )
    write_table(pd.DataFrame(rows), tmp_path / "prepared.csv", {"test": True})
    fit = STAIRCASE.prepared_fits(tmp_path, 0.95).iloc[0]
    assert fit["ratio"] == pytest.approx(1.0, abs=1e-4)
    assert fit["ratio_quadrature"] == pytest.approx(1.0, abs=1e-9)
    assert abs(fit["ratio_nominal"] - 1) > 10 * abs(fit["ratio"] - 1)  # the jitter, ignored
    assert fit["correlation"] > 0.99 and np.isfinite(fit["ratio_free"])
