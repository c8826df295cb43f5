"""Fixtures shared by every layer of the suite.

The tests live in one folder per layer of the package (``kernels/``, ``models/``, ``setups/``,
``engine/``, ``results/``, ``stats/``, ``theory/``, ``maxmargin/``, ``sweep/``, ``cli/``,
``plotting/``, ``studies/``) and ``package/`` for checks of the whole package (import layers,
annotations, the README, the registry). The folders are not packages: test files keep unique
basenames, and pytest puts this folder on ``sys.path`` (it holds this rootless conftest), so the
helper modules beside it (``cli_calls``, ``goodness_of_fit``) import by name from any layer; a
helper of one layer lives in that layer's folder (``kernels/kernel_calls.py``,
``sweep/dask_processes.py``).

:func:`model_case` is the model matrix: a test that takes it runs once per model family, on a
cheap instance with a start of its own. ``package/test_model_twins.py`` checks that the matrix lists
every model the engine runs.
"""

from typing import NamedTuple

import numpy as np
import pytest

import metastab as ms


class ModelCase(NamedTuple):
    """A cheap instance of a model family and the starts of 6 chains (8 tokens, d = 2 or 3)."""

    model: object
    x0: np.ndarray  # (6, n, d)


# a non-symmetric B (not the fast path of B = I); each chain its own start
_PLANE = np.array(
    [
        [1.0, 0.0],
        [0.0, 1.0],
        [-1.0, 0.0],
        [0.0, -1.0],
        [0.2, 0.1],
        [-0.3, 0.4],
        [0.5, 0.5],
        [0.1, -0.6],
    ]
)
_B = [[1.0, 0.3], [-0.2, 0.9]]
_PLANE = _PLANE + 0.05 * np.random.default_rng(5).standard_normal((6, *_PLANE.shape))
_SPHERE = ms.sphere_uniform(8, 3, chains=6, rng=5)

# one entry per model kind of the registry (metastab.registry.MODELS), under its name
MODEL_CASES = {
    "softmax-chain": ModelCase(ms.SoftmaxChain(beta=4.0, gamma=0.3, B=_B), _PLANE),
    "softmax-flow": ModelCase(ms.SoftmaxFlow(beta=2.0, gamma=0.3, B=_B), _PLANE),
    "hardmax": ModelCase(ms.Hardmax(gamma=0.3, B=_B), _PLANE),
    "localmax": ModelCase(ms.Localmax(gamma=0.3, r=0.2, B=_B), _PLANE),
    "sphere-flow": ModelCase(ms.SphereFlow(3.0, 0.1, scheme="rk4"), _SPHERE),
    "sphere-chain": ModelCase(ms.SphereChain(4.0, 0.3), _SPHERE),
    "noisy-sphere": ModelCase(ms.NoisySphere(2.0, 1.5, 0.05), _SPHERE),
}


@pytest.fixture(params=list(MODEL_CASES))
def model_case(request) -> ModelCase:
    """Each model family in turn (the test id is the registry's name of the kind)."""
    return MODEL_CASES[request.param]


@pytest.fixture
def model_cases() -> dict[str, ModelCase]:
    """The whole model matrix, by registry name."""
    return MODEL_CASES
