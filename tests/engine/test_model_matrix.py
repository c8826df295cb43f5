"""What every model family must do, run on each (the ``model_case`` fixture of tests/conftest.py):
the same bits whatever the thread count, the chunking of chains or the recording, and a dict
round trip that runs the same."""

import json

import numba
import numpy as np

import metastab as ms
from metastab.registry import model_from_dict


def _final(model, x0, **kw):
    return ms.simulate(model, x0, steps=30, rng=2024, **kw).final


def test_same_bits_for_any_thread_count_and_chunking(model_case):
    model, x0 = model_case
    whole = _final(model, x0)
    split = np.concatenate([_final(model, x0[:2]), _final(model, x0[2:], first_chain=2)])
    assert np.array_equal(whole, split)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _final(model, x0)
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(whole, one)
    assert np.array_equal(whole, _final(model, x0, record_every=7))
    assert not np.array_equal(whole, x0)  # the chains moved


def test_dict_round_trip_runs_the_same(model_case):
    model, x0 = model_case
    data = json.loads(json.dumps(model.to_dict()))  # plain data
    back = model_from_dict(data)
    assert type(back) is type(model) and data["kind"] == model.kind
    assert back.to_dict() == model.to_dict()
    assert np.array_equal(_final(back, x0), _final(model, x0))
