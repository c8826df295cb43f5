"""The results of metastab.stats show their estimates, intervals and counts in a short repr and
an HTML table; figures and progress bars behave in a notebook."""

from __future__ import annotations

import re
import sys
import types
import warnings

import numpy as np
import pandas as pd
import pytest

from metastab import stats
from metastab.exceptions import DiagnosticWarning


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    beta = np.repeat([1.0, 2.0, 3.0], 100)
    T = np.random.default_rng(0).geometric(np.exp(-1.0 - 1.5 * beta))
    return pd.DataFrame(
        {"beta": beta, "steps": np.minimum(T, 100), "censored": T > 100, "max_steps": 100}
    )


def _no_long_numbers(text: str) -> None:
    """At most four significant digits in any number of a repr."""
    for digits in re.findall(r"\d+\.\d+", text):
        assert len(digits.replace(".", "").lstrip("0")) <= 4, (digits, text)


def test_scaling_fit_repr_has_estimate_interval_and_counts(frame):
    fit = stats.fit_scaling(frame)
    text = repr(fit)
    low, high = fit.confidence_interval("slope")
    assert f"slope={fit.slope:.4g} [{low:.4g}, {high:.4g}]" in text
    assert "95% profile CI" in text
    assert f"{int((~frame['censored']).sum())} events of 300 chains" in text
    assert "3 beta values" in text
    _no_long_numbers(text)
    html = fit._repr_html_()
    assert "<table>" in html and f"{fit.slope:.4g}" in html


def test_escape_rate_repr(frame):
    rate = stats.escape_rate(frame[frame["beta"] == 1.0])
    text = repr(rate)
    lo, hi = rate.mean_interval()
    assert f"mean={rate.mean:.4g} [{lo:.4g}, {hi:.4g}]" in text
    assert f"median={rate.median:.4g}" in text
    assert f"{rate.events} events, {rate.censored} censored of 100 chains" in text
    _no_long_numbers(text)
    assert "<table>" in rate._repr_html_()


def test_survival_repr_and_median_interval(frame):
    km = stats.survival(frame[frame["beta"] == 2.0])
    low, high = km.median_interval()
    assert low <= km.median <= high and low < high
    assert f"median={km.median:.4g} [{low:.4g}, {high:.4g}]" in repr(km)
    assert "<table>" in km._repr_html_()


def test_survival_median_interval_brackets_the_true_median():
    """Planted: geometric(p) times, true median ceil(log 2 / -log(1 - p)) = 69 for p = 0.01;
    the 95% interval from 400 chains holds it (fixed seed)."""
    T = np.random.default_rng(3).geometric(0.01, 400)
    low, high = stats.survival(T, np.zeros(400, bool)).median_interval()
    assert low <= 69 <= high
    assert high - low < 30  # and is not trivially wide


def test_no_event_reprs_say_inf():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiagnosticWarning)
        km = stats.survival([5, 5], [True, True])
        rate = stats.escape_rate([5, 5], [True, True])
    assert "median=inf [inf, inf]" in repr(km)
    assert "rate=0 [0, " in repr(rate) and "0 events, 2 censored of 2 chains" in repr(rate)


def test_exponentiality_test_repr(frame):
    test = stats.exponentiality_test(frame[frame["beta"] == 1.0], n_resamples=49, rng=0)
    assert f"p={test.pvalue:.4g} (49 resamples)" in repr(test)


def test_figures_display_inline_without_pyplot(frame):
    from metastab.plotting import arrhenius_figure, survival_figure

    for fig in (arrhenius_figure(frame), survival_figure(frame)):
        assert fig._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")
    assert (
        "matplotlib.pyplot" not in sys.modules or not sys.modules["matplotlib.pyplot"].get_fignums()
    )


def test_progress_in_a_kernel_without_ipywidgets(monkeypatch):
    """In a Jupyter kernel without ipywidgets, the text bar, and no "IProgress" warning."""
    from tqdm.std import tqdm

    from metastab.engine import progress

    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setattr(progress.importlib.util, "find_spec", lambda name: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bar = progress.Progress(True, 10, 4)
        bar(5, 2)
        bar.close()
    assert type(bar.bar) is tqdm


def test_progress_in_a_kernel_with_ipywidgets_asks_for_the_widget(monkeypatch):
    from metastab.engine import progress

    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setattr(progress.importlib.util, "find_spec", lambda name: object())
    notebook = types.ModuleType("tqdm.notebook")
    notebook.tqdm = "widget"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm.notebook", notebook)
    assert progress.tqdm_class() == "widget"


def test_dir_lists_public_names_only():
    import metastab

    metastab.stats  # noqa: B018 - imports leave submodules in the namespace
    names = dir(metastab)
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    assert "importlib" not in names and "kernels" not in names
    assert set(metastab.__all__) <= set(names)
