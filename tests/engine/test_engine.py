"""The engine's layout: one place resolves the device, module names never shadow public names."""

import importlib
import os
import pkgutil
import subprocess
import sys

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
        lambda dev: engine.ams_mean_escape_time(
            ms.SoftmaxChain(2.0),
            np.repeat(X0, 2, axis=0),
            ms.LeaveHull(groups=np.repeat(np.arange(3), 2), radius=1.0),
            reference_level=0.05,
            device=dev,
        ),
    ],
    ids=["simulate", "first_passage", "accelerated", "ams_mean_escape_time"],
)
def test_unknown_device_is_named(call):
    with pytest.raises(ValueError, match=r"device must be one of \('cpu', 'cuda'\), got 'gpu7'"):
        call("gpu7")


def test_cpu_is_the_default_device():
    a = ms.simulate(ms.SoftmaxChain(2.0), X0, steps=5, chains=3, rng=1)
    b = ms.simulate(ms.SoftmaxChain(2.0), X0, steps=5, chains=3, rng=1, device="cpu")
    assert np.array_equal(a.final, b.final)
    assert engine.resolve().name == "cpu"


def _packages(package):
    yield package
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            yield from _packages(importlib.import_module(f"{package.__name__}.{info.name}"))


def _children(package):
    return {info.name for info in pkgutil.iter_modules(package.__path__)}


def test_no_module_is_named_like_a_public_function():
    """``metastab.simulate`` is the function; no submodule of a package takes a public name of
    that package (importing it would rebind the name to the module), and no module of the top
    level takes a name of the engine, whose functions the package names. A module may share a
    name with a function of another package (``metastab.results.track`` beside ``metastab.track``):
    it shadows nothing."""
    for package in _packages(ms):
        public = set(getattr(package, "__all__", ()))
        if package is ms:
            public |= set(engine.__all__)
        assert not public & _children(package), package.__name__
    assert "track" in _children(ms.results) and callable(ms.track)
    assert callable(ms.simulate) and callable(ms.first_passage)


def test_compile_announcement_by_the_name_of_a_run(tmp_path):
    """``engine.announce_compile_for`` (what the demo and the benchmarks call, by the name of a
    run) says it once before cold kernels compile, and nothing without a progress bar."""
    code = (
        "from metastab.engine import announce_compile_for\n"
        "announce_compile_for(False, 'passage')\n"
        "announce_compile_for(True, 'passage', 'accelerated')\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}  # nothing cached
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("compiling kernels (once") == 1
    with pytest.raises(KeyError):
        engine.announce_compile_for(True, "no-such-run")
