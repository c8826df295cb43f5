"""Every name kept for one release after a rename warns with a DeprecationWarning that names its
replacement, and resolves to the same object; the current names do not warn (the control)."""

import importlib
import warnings

import pytest

import metastab as ms
from metastab.registry import INITIALS, POLYTOPES


@pytest.mark.parametrize("name", sorted(ms._ALIASES))
def test_each_alias_of_the_package_warns_and_names_its_replacement(name):
    module, _, attribute = ms._ALIASES[name].partition(":")
    new = importlib.import_module(f"metastab.{module}")
    if attribute:
        new = getattr(new, attribute)
    with pytest.warns(DeprecationWarning, match=f"use metastab.{module}") as caught:
        assert getattr(ms, name) is new
    assert caught[0].filename == __file__  # the warning points at the caller
    with pytest.warns(DeprecationWarning):  # every use, not only the first
        getattr(ms, name)


@pytest.mark.parametrize("name", [*sorted(ms._NAMES)[:8], *ms._SUBMODULES[:4], *ms._NAMESPACES])
def test_current_names_do_not_warn(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(ms, name)


def test_former_kind_names_warn_and_other_spellings_do_not():
    with pytest.warns(DeprecationWarning, match="'clusters' is deprecated: use 'repeated-points'"):
        assert INITIALS["clusters"] is INITIALS["repeated-points"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert POLYTOPES["cross"] is POLYTOPES["cross-polytope"]  # a short spelling, not a rename
        assert INITIALS["repeated-points"].name == "repeated-points"


def test_first_passage_steps_warns_and_is_times():
    fp = ms.first_passage(
        ms.SoftmaxChain(4.0, 0.3), [[1.0, 0.0], [0.0, 1.0]], ms.LeaveBall(0.2), max_steps=50, rng=1
    )
    with pytest.warns(DeprecationWarning, match="use FirstPassage.times"):
        assert fp.steps is fp.times
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fp.times  # noqa: B018 (the control: the current name does not warn)


@pytest.mark.parametrize(
    "module, name",
    [
        ("metastab", "splitting"),
        ("metastab.engine", "escape_probability"),
        ("metastab.engine", "mean_escape_time"),
        ("metastab.engine", "SplittingResult"),
        ("metastab.engine", "EscapeTime"),
    ],
)
def test_the_removed_renewal_estimators_are_gone(module, name):
    """The renewal estimators (and the alias of their module) were removed after their release
    of warnings: a use fails at once; their replacements are there (the control)."""
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError, match=name):
        getattr(mod, name)
    with pytest.raises(ImportError):
        importlib.import_module("metastab.engine.splitting")
    engine = importlib.import_module("metastab.engine")
    assert callable(engine.ams_mean_escape_time) and callable(engine.ams_probability)
