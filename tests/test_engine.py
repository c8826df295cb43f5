"""The engine's layout: one place resolves the device, module names never shadow public names."""

import importlib
import pkgutil

import numpy as np
import pytest

import metastab as ms
from metastab import engine

X0 = ms.regular_polygon(3).vertices


@pytest.mark.parametrize(
    "call",
    [
        lambda dev: ms.simulate(ms.SoftmaxChain(2.0), X0, steps=2, device=dev),
        lambda dev: ms.first_passage(
            ms.SoftmaxChain(2.0), X0, ms.LeaveBall(0.1), max_steps=2, device=dev
        ),
        lambda dev: ms.first_passage(
            ms.SoftmaxChain(2.0), X0, ms.LeaveBall(0.1), max_steps=2, mode="accelerated", device=dev
        ),
        lambda dev: ms.splitting.escape_probability(
            ms.SoftmaxChain(2.0),
            np.repeat(X0, 2, axis=0),
            ms.LeaveHull(groups=np.repeat(np.arange(3), 2), radius=1.0),
            device=dev,
        ),
    ],
    ids=["simulate", "first_passage", "accelerated", "splitting"],
)
def test_unknown_device_is_named(call):
    with pytest.raises(ValueError, match=r"device must be one of \('cpu', 'cuda'\), got 'gpu7'"):
        call("gpu7")


def test_cpu_is_the_default_device():
    a = ms.simulate(ms.SoftmaxChain(2.0), X0, steps=5, chains=3, rng=1)
    b = ms.simulate(ms.SoftmaxChain(2.0), X0, steps=5, chains=3, rng=1, device="cpu")
    assert np.array_equal(a.final, b.final)
    assert engine.resolve().name == "cpu"


def _modules(package):
    for info in pkgutil.iter_modules(package.__path__):
        yield info.name
        if info.ispkg:
            yield from _modules(importlib.import_module(f"{package.__name__}.{info.name}"))


def test_no_module_is_named_like_a_public_function():
    """``metastab.simulate`` is the function; no submodule of the package takes a public name of
    the package or of the engine."""
    public = set(ms.__all__) | set(engine.__all__)
    assert not public & set(_modules(ms))
    assert callable(ms.simulate) and callable(ms.first_passage)
    assert ms.splitting.escape_probability is engine.escape_probability
