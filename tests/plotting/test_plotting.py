"""Tests for metastab.plotting: figures are written and carry what they claim."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from metastab import stats
from metastab.plotting import arrhenius_figure, survival_figure
from metastab.results import FirstPassage
from metastab.theory import exit_time_bound


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    beta = np.repeat([1.0, 2.0, 3.0, 13.0], 80)
    T = rng.geometric(np.exp(-0.5 - 1.0 * beta))
    return pd.DataFrame(
        {"beta": beta, "steps": np.minimum(T, 200), "censored": T > 200, "max_steps": 200}
    )


def test_core_modules_do_not_import_matplotlib():
    code = (
        "import sys, metastab, metastab.stats, metastab.theory; "
        "sys.exit('matplotlib' in sys.modules or 'seaborn' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_survival_figure_per_beta(frame, tmp_path):
    path = tmp_path / "sub" / "survival.png"
    fig = survival_figure(frame, path)
    assert path.stat().st_size > 10_000 and path.read_bytes()[:4] == b"\x89PNG"
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 4 and labels[-1].endswith("(0/80 escaped)")  # β = 13: no events
    # a KM step curve per β, and a fitted curve for the three β values with events
    assert len(ax.get_lines()) == 4 + 3


def test_survival_figure_accepts_firstpassage_and_dicts(frame, tmp_path):
    sub = frame[frame["beta"] == 2.0]
    fp = FirstPassage(
        times=sub["steps"].to_numpy(),
        censored=sub["censored"].to_numpy(),
        final=np.zeros((len(sub), 1, 1)),
        max_steps=200,
        model={"kind": "softmax-chain", "beta": 2.0},
        event={},
        seed={},
    )
    fig = survival_figure(fp, law="exponential", method="linear")
    assert fig.axes[0].get_legend().get_texts()[0].get_text().startswith("beta = 2")
    fig = survival_figure({"a": fp, "b": sub}, tmp_path / "s.svg", fitted=False)
    assert len(fig.axes[0].get_lines()) == 2 and (tmp_path / "s.svg").exists()
    with pytest.raises(ValueError, match="data must be"):
        survival_figure([1, 2, 3])
    with pytest.warns(stats.DiagnosticWarning, match="met the event at time 0"):  # not hidden
        survival_figure(
            sub.assign(
                steps=np.r_[0, sub["steps"].to_numpy()[1:]],
                censored=np.r_[False, sub["censored"].to_numpy()[1:]],
            )
        )


def test_arrhenius_figure_from_frame_with_bound(frame, tmp_path):
    path = tmp_path / "arrhenius.pdf"
    bound = dict(c0=1.0, eps=0.2, gamma=0.1, n=4)
    fig = arrhenius_figure(frame, path, bound=bound)
    assert path.read_bytes()[:4] == b"%PDF"
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    lines = {line.get_label(): line for line in ax.get_lines()}
    fit_line = next(v for k, v in lines.items() if k.startswith("fit: b ="))
    bound_line = next(v for k, v in lines.items() if k.startswith("Thm 5.4 bound"))
    x, y = fit_line.get_data()
    fit = stats.fit_scaling(frame)
    np.testing.assert_allclose(np.log(y), fit.intercept + fit.slope * x, rtol=1e-12)
    bx, by = bound_line.get_data()
    np.testing.assert_allclose(np.log(by), exit_time_bound(bx, **bound), rtol=1e-12)
    assert "no escapes: lower bound" in lines  # β = 13 drawn as a one-sided marker


def test_arrhenius_figure_from_fits_and_callable_bound(frame):
    per, fit = stats.fit_report(frame, memoryless=False)
    a = arrhenius_figure((per, fit), bound=lambda b: 0.3 * b)
    b = arrhenius_figure(fit)
    assert any(line.get_label() == "theory bound" for line in a.axes[0].get_lines())
    assert len(b.axes[0].get_lines()) == len(a.axes[0].get_lines()) - 1
    with pytest.raises(ValueError, match="bound must be"):
        arrhenius_figure(fit, bound=0.3)
    with pytest.raises(ValueError, match="frame_or_fits"):
        arrhenius_figure([1, 2])


def test_survival_figure_takes_a_list_of_results(tmp_path):
    import metastab as ms

    x0 = ms.regular_polygon(5).vertices
    runs = [
        ms.first_passage(
            ms.SoftmaxChain(beta=b, gamma=0.5),
            x0,
            ms.LeaveBall(0.1),
            max_steps=200,
            chains=20,
            rng=1,
        )
        for b in (1.0, 2.0)
    ]
    fig = survival_figure(runs, tmp_path / "s.png")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert [label.split("  ")[0] for label in labels] == ["beta = 1", "beta = 2"]
    with pytest.raises(ValueError, match="empty list"):
        survival_figure([])
