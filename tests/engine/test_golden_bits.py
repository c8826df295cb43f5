"""A fixed set of runs, one or more per model family, entry point and kernel path, hashed bit for
bit against ``golden_bits.json``: a refactoring that claims "same bits" must leave every hash as
it is. A deliberate change of bits regenerates the file (``python tests/engine/test_golden_bits.py
--write``) in the same commit and names the results whose bits moved in the CHANGELOG.

Each case hashes every array its result carries (dtype, shape and bytes), so a change of any
output (times, censoring, finals, trajectories, absorption flags, observables) changes the hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import metastab as ms

GOLDEN = Path(__file__).with_name("golden_bits.json")

_B2 = [[1.0, 0.3], [-0.2, 0.9]]
_PLANE = np.array(
    [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [0.2, 0.1], [-0.3, 0.4], [0.5, 0.5]]
)
_PLANE = _PLANE + 0.05 * np.random.default_rng(5).standard_normal((4, *_PLANE.shape))
_SPHERE = ms.sphere_uniform(7, 3, chains=4, rng=5)
_WIDE = ms.sphere_uniform(70, 3, chains=2, rng=6)  # n large enough for the tiled kernels
_B3 = np.eye(3) + 0.3 * np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
_V3 = np.eye(3) - 0.2 * np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
_TRI = ms.regular_polygon(3).vertices
_X_TRI = np.vstack(
    [_TRI, 0.8 * _TRI, _TRI + 0.15 * np.array([[0.0, -1.0], [0.8, 0.6], [-0.8, 0.5]])]
)
_FROZEN = np.repeat(np.array([[1.0, 0.0], [-0.5, 0.8], [-0.3, -0.9]]), [2, 3, 1], axis=0)
_ORTHO = np.repeat([[1.0, 0.0], [0.0, 1.0]], 2, axis=0)


def _simulate(model, x0, **kw):
    return ms.simulate(model, x0, steps=30, rng=2024, record_every=7, **kw)


CASES = {
    # simulate: every model family, recorded
    "simulate/softmax-chain": lambda: _simulate(ms.SoftmaxChain(4.0, 0.3, B=_B2), _PLANE),
    "simulate/hardmax-neighbours": lambda: _simulate(
        ms.Hardmax(0.3), _PLANE, record_neighbours=True
    ),
    "simulate/softmax-flow": lambda: _simulate(ms.SoftmaxFlow(2.0, 0.3, B=_B2), _PLANE),
    "simulate/hardmax": lambda: _simulate(ms.Hardmax(0.3, B=_B2), _PLANE),
    "simulate/localmax": lambda: _simulate(ms.Localmax(0.3, r=0.2, B=_B2), _PLANE),
    "simulate/sphere-chain": lambda: _simulate(ms.SphereChain(4.0, 0.3), _SPHERE),
    "simulate/sphere-flow-post-ln": lambda: _simulate(ms.SphereFlow(3.0, 0.1), _SPHERE),
    "simulate/sphere-flow-rk4-BV": lambda: _simulate(
        ms.SphereFlow(3.0, 0.1, B=_B3, V=_V3, scheme="rk4"), _SPHERE
    ),
    "simulate/sphere-flow-pre-ln": lambda: _simulate(
        ms.SphereFlow(2.0, 0.1, scheme="pre-ln"), _SPHERE
    ),
    "simulate/sphere-flow-usa-causal": lambda: _simulate(
        ms.SphereFlow(2.0, 0.1, attention="unnormalized", causal=True), _SPHERE
    ),
    "simulate/sphere-flow-heads": lambda: _simulate(
        ms.SphereFlow(2.0, 0.1, heads=[(_B3, _V3), (np.eye(3), 0.5 * np.eye(3))]), _SPHERE
    ),
    "simulate/sphere-flow-wide": lambda: _simulate(ms.SphereFlow(4.0, 0.1), _WIDE),
    "simulate/noisy-sphere": lambda: _simulate(ms.NoisySphere(2.0, 1.5, 0.05), _SPHERE),
    "simulate/noisy-sphere-wide-softmax-BV": lambda: _simulate(
        ms.NoisySphere(1.0, 0.8, 0.02, B=_B3, V=_V3, attention="softmax"), _WIDE
    ),
    "simulate/softmax-chain-wide": lambda: _simulate(
        ms.SoftmaxChain(6.0, 0.2), _WIDE[:, :, :2] * 2
    ),
    "simulate/softmax-flow-wide": lambda: _simulate(ms.SoftmaxFlow(3.0, 0.2), _WIDE[:, :, :2] * 2),
    # first passage: each event and mode
    "passage/exact-hull": lambda: ms.first_passage(
        ms.SoftmaxChain(6.0, 0.3),
        _X_TRI,
        ms.LeaveHull(np.tile(np.arange(3), 3), 0.6),
        max_steps=3000,
        chains=6,
        rng=11,
    ),
    "passage/exact-ball-hardmax": lambda: ms.first_passage(
        ms.Hardmax(0.1), _PLANE, ms.LeaveBall(0.5), max_steps=200, rng=12
    ),
    "passage/exact-reach-vertices": lambda: ms.first_passage(
        ms.SoftmaxChain(4.0, 0.3),
        _X_TRI,
        ms.ReachVertices(_TRI, 0.1),
        max_steps=400,
        chains=5,
        rng=13,
    ),
    "passage/exact-collapse-flow": lambda: ms.first_passage(
        ms.SoftmaxFlow(2.0, 0.3), _PLANE, ms.Collapse(0.1), max_steps=500, rng=14
    ),
    "passage/exact-clusters-sphere": lambda: ms.first_passage(
        ms.SphereFlow(4.0, 0.1), _SPHERE, ms.Clusters(2, delta=1e-2), max_steps=2000, rng=15
    ),
    "passage/exact-ball-noisy-sphere": lambda: ms.first_passage(
        ms.NoisySphere(3.0, 0.5, 0.02), _SPHERE, ms.LeaveBall(0.5), max_steps=400, rng=21
    ),
    "passage/accelerated-frozen": lambda: ms.first_passage(
        ms.SoftmaxChain(5.0, 0.5, B=[[1.0, 0.4], [-0.3, 0.8]]),
        _FROZEN,
        ms.LeaveBall(0.3),
        max_steps=10**7,
        chains=40,
        rng=16,
        mode="accelerated",
    ),
    "passage/accelerated-hull": lambda: ms.first_passage(
        ms.SoftmaxChain(6.0, 0.3),
        _X_TRI,
        ms.LeaveHull(np.tile(np.arange(3), 3), 0.6),
        max_steps=10**7,
        chains=20,
        rng=17,
        mode="accelerated",
    ),
    "passage/accelerated-sphere": lambda: ms.first_passage(
        ms.SphereChain(12.0, 0.5),
        _ORTHO,
        ms.LeaveBall(0.1),
        max_steps=1e30,
        chains=30,
        rng=18,
        mode="accelerated",
    ),
    # tracking (observables, merges)
    "track/softmax-chain": lambda: ms.track(
        ms.SoftmaxChain(4.0, 0.3), _PLANE, steps=60, rng=19, record_every=10
    ),
    "track/sphere-flow": lambda: ms.track(ms.SphereFlow(3.0, 0.1), _SPHERE, steps=60, rng=20),
}


def digest(result) -> str:
    """SHA-256 over every array field of a result (name, dtype, shape, bytes), in field order."""
    h = hashlib.sha256()
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, np.ndarray):
            value = np.ascontiguousarray(value)
            h.update(f"{f.name}|{value.dtype.str}|{value.shape}|".encode())
            h.update(value.tobytes())
    return h.hexdigest()


def _golden() -> dict[str, str]:
    return json.loads(GOLDEN.read_text())


def test_every_case_has_a_golden_hash():
    assert sorted(_golden()) == sorted(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_same_bits_as_recorded(name):
    assert digest(CASES[name]()) == _golden()[name], f"{name}: bits moved"


def test_the_hash_sees_one_changed_bit():
    """Negative control: another seed, and one flipped bit of a final, change the hash."""
    run = CASES["simulate/softmax-chain"]()
    assert digest(run) == _golden()["simulate/softmax-chain"]
    other = ms.simulate(
        ms.SoftmaxChain(4.0, 0.3, B=_B2), _PLANE, steps=30, rng=2025, record_every=7
    )
    assert digest(other) != digest(run)
    final = run.final.copy()
    final.view(np.uint64).flat[0] ^= 1
    assert digest(dataclasses.replace(run, final=final)) != digest(run)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    GOLDEN.write_text(
        json.dumps({name: digest(case()) for name, case in CASES.items()}, indent=1) + "\n"
    )
    print(f"wrote {len(CASES)} hashes to {GOLDEN}")
