"""The registry of kinds: one name per kind, defaults read from the dataclasses and constructors,
and the command line, the sweep and the studies built from it."""

import contextlib
import copy
import inspect

import numpy as np
import pytest

import metastab as ms
from metastab.registry import (
    EVENTS,
    INITIALS,
    MODELS,
    POLYTOPES,
    RADIUS_DEFAULTED,
    REQUIRED,
    polytope_from_dict,
)
from metastab.sweep import Sweep
from metastab.sweep.config import config_hash, normalise

# Canonical hashes of sweep configs of every kind, from the schema before it was read off the
# registry: a drifted default or a renamed parameter changes them (and orphans sweep outputs).
HASHES = {
    "tiny": "74ca59b9b038754d8c3ec0f774185db756fa915e0839807d728bf28e26766174",
    "hardmax": "5d6bc16c22b974530cadc25d9ce56bc6222e914f712c1c61bd1a11409a091dcb",
    "localmax": "8d37dbddb2f4bc6e68b9304e8afa21fe9e9b312a014abe745e54a9c1d90a48d8",
    "random": "ebaa99d9a055b606d0e9ef1b39ca4c384a32d196cdc7f58de9bb869a777da674",
    "gaussian": "86b009878d473e12dd173c1ddb8b220c556367300341cc9cc5de0a944300fab3",
    "cross": "1496c7300300fbf90e3417c23ae1937e0a75cfdbd01dae025ebde4161d5b7c8c",
    "in-cells": "4c9b06166efd177e9a4d2a21f6d9baa094e7e0aac5dfa1aed0d15c40adeae144",
    "uniform": "78d96ca96fe32b2e38429cded9fbc403881673c82fa1172a1dd52864e4652a90",
    "collapse": "1bce4ff03e5df808fac50b95dc606ed618dbac135144545b8202162ff0c7bac7",
}

VARIANTS = {
    "tiny": {},
    "hardmax": {"model": {"kind": "hardmax"}, "grid": {}},
    "localmax": {"model": {"kind": "localmax", "gamma": 0.1, "r": 0.1}, "grid": {}},
    "random": {"polytope": {"kind": "random-polygon", "k": 5}},
    "gaussian": {"polytope": {"kind": "gaussian", "k": 5, "d": 3}},
    "cross": {
        "polytope": {"kind": "cross-polytope", "d": 2},
        "initial": {"kind": "near-vertices", "n": 8},
    },
    "in-cells": {
        "initial": {"kind": "in-cells", "n": 8},
        "event": {"kind": "leave-hull", "radius": 0.3},
    },
    "uniform": {
        "initial": {"kind": "uniform", "n": 8},
        "event": {"kind": "reach-vertices", "radius": 0.3},
    },
    "collapse": {"event": {"kind": "collapse", "diameter": 0.1}},
}


def tiny(**tables) -> dict:
    return {
        "model": {"kind": "softmax-chain", "gamma": 0.1},
        "grid": {"beta": [4.0, 10.0]},
        "polytope": {"kind": "regular", "k": 5},
        # the former name of repeated-points: a sweep written with it keeps its config hash
        "initial": {"kind": "clusters", "multiplicities": [2, 2, 2, 2, 2]},
        "event": {"kind": "leave-ball", "radius": 0.3},
        "run": {"chains": 60, "chunk": 20, "max_steps": 200, "seed": 7},
        **tables,
    }


@pytest.mark.parametrize("name", list(VARIANTS))
def test_sweep_schema_from_the_registry_keeps_the_canonical_configs(name):
    config = tiny(**copy.deepcopy(VARIANTS[name]))
    renamed = config["initial"]["kind"] == "clusters"
    with pytest.warns(DeprecationWarning) if renamed else contextlib.nullcontext():
        assert config_hash(normalise(config)) == HASHES[name]


def test_names_are_the_objects_kinds():
    for registry in (MODELS, EVENTS):
        for name in registry:
            assert registry[name].make.kind == name


def test_defaults_are_read_from_the_signatures():
    for registry in (MODELS, EVENTS, POLYTOPES, INITIALS):
        for name in registry:
            kind = registry[name]
            signature = inspect.signature(kind.make).parameters
            for p in kind.parameters:
                if p.name in ("groups", "beta") and registry in (EVENTS, INITIALS):
                    continue  # the recipe's own: the initial cells; the model's beta
                if p.name == "radius" and registry is EVENTS and name in RADIUS_DEFAULTED:
                    continue  # 2·gamma·diam(K), from the polytope and the model
                assert p.default is signature[p.target_arg].default, (name, p.name)
    assert POLYTOPES["regular"].defaults() == {"k": REQUIRED, "radius": 1.0, "phase": 0.0}
    # negative control: a required dataclass field has no default
    assert MODELS["localmax"].defaults()["r"] is REQUIRED


@pytest.mark.parametrize(
    "text, spec",
    [
        ("regular:5", {"kind": "regular", "k": 5}),
        ("regular:5:phase=0.25", {"kind": "regular", "k": 5, "phase": 0.25}),
        ("cross:3", {"kind": "cross-polytope", "d": 3}),
        ("random:6:equinorm", {"kind": "random-polygon", "k": 6, "equal_norm": True}),
        (
            "random-polygon:6:equal_norm=false",
            {"kind": "random-polygon", "k": 6, "equal_norm": False},
        ),
        ("gaussian:4:3", {"kind": "gaussian", "k": 4, "d": 3}),
    ],
)
def test_polytope_spellings(text, spec):
    assert POLYTOPES.parse(text, "polytope") == spec


@pytest.mark.parametrize(
    "text, spec",
    [
        ("repeated-points:2,3", {"kind": "repeated-points", "multiplicities": [2, 3]}),
        ("clusters:2,3", {"kind": "repeated-points", "multiplicities": [2, 3]}),  # old alias
        ("file:C:/x:y.npy", {"kind": "file", "path": "C:/x:y.npy"}),
        ("near-vertices:max_tries=5", {"kind": "near-vertices", "max_tries": 5}),
    ],
)
def test_initial_spellings(text, spec):
    renamed = text.startswith("clusters")
    with pytest.warns(DeprecationWarning) if renamed else contextlib.nullcontext():
        assert INITIALS.parse(text, "init") == spec


@pytest.mark.parametrize(
    "text, words",
    [
        ("regular", ["polytope must be one of", "'regular'"]),
        ("regular:5:6", ["polytope must be one of"]),
        ("regular:5:size=2", ["takes", "'size'"]),
        ("regular:x", ["k must be an integer", "'x'"]),
        ("vertices", ["polytope must be one of"]),  # not offered on the command line
    ],
)
def test_bad_spellings_name_the_flag_and_the_text(text, words):
    with pytest.raises(ValueError) as err:
        POLYTOPES.parse(text, "polytope")
    assert all(w in str(err.value) for w in words), err.value


def test_studies_build_their_polytopes_from_the_registry():
    assert polytope_from_dict({"kind": "random", "k": 6, "seed": 3}) == ms.random_polygon(6, rng=3)
    spec = {"kind": "gaussian", "k": 4, "d": 3}
    assert polytope_from_dict(spec, rng=1) == ms.gaussian(4, 3, rng=1)
    with pytest.raises(ValueError, match="polytope kind must be one of"):
        polytope_from_dict({"kind": "dodecahedron"})


def test_sweep_takes_shrunk_and_file_initial_configurations(tmp_path):
    shrunk = Sweep.from_dict(tiny(initial={"kind": "shrunk", "n": 10, "factor": 0.5}))
    x0 = shrunk.points[0].x0
    np.testing.assert_array_equal(x0, ms.shrunk(ms.regular_polygon(5), 10, 0.5))
    assert shrunk.points[0].initial_seed is None  # no stream drawn from
    np.save(tmp_path / "x0.npy", x0)
    loaded = Sweep.from_dict(tiny(initial={"kind": "file", "path": str(tmp_path / "x0.npy")}))
    np.testing.assert_array_equal(loaded.points[1].x0, x0)
    with pytest.raises(ValueError, match="needs 'factor'"):
        Sweep.from_dict(tiny(initial={"kind": "shrunk", "n": 10}))
