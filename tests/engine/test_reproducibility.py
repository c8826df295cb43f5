"""Seeds reproduce runs: whatever the thread count, the number of chains, the chunking of chains
or of steps, and however the seed was given."""

import numba
import numpy as np
import pytest

import metastab as ms
from metastab.engine import exact as sim
from metastab.kernels.cpu import drivers as _drivers

X0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0], [0.2, 0.1], [-0.3, 0.4]])
CHAIN = ms.SoftmaxChain(beta=4.0, gamma=0.3, B=[[1.0, 0.3], [-0.2, 0.9]])
EVENT = ms.LeaveBall(0.3)


def _run(chains=8, first_chain=0, rng=5, steps=60, model=CHAIN):
    return ms.simulate(model, X0, steps=steps, chains=chains, rng=rng, first_chain=first_chain)


def _fp(chains=8, first_chain=0, rng=5, max_steps=200):
    return ms.first_passage(
        CHAIN, X0, EVENT, max_steps=max_steps, chains=chains, rng=rng, first_chain=first_chain
    )


def test_same_seed_same_result():
    a, b = _run(), _run()
    assert np.array_equal(a.final, b.final)
    fa, fb = _fp(), _fp()
    assert np.array_equal(fa.times, fb.times)
    assert np.array_equal(fa.censored, fb.censored)
    assert np.array_equal(fa.final, fb.final)
    # and the chains are not all the same (the streams are distinct)
    assert len({c.tobytes() for c in a.final}) == a.chains
    assert not np.array_equal(_run(rng=6).final, a.final)


def test_thread_count_does_not_matter():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread here")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one, fp_one = _run(), _fp()
        numba.set_num_threads(2)
        two, fp_two = _run(), _fp()
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one.final, two.final)
    assert np.array_equal(fp_one.times, fp_two.times)
    assert np.array_equal(fp_one.final, fp_two.final)
    assert one.provenance["threads"] == 1 and two.provenance["threads"] == 2


def test_prefix_property():
    small, big = _run(chains=3), _run(chains=9)
    assert np.array_equal(small.final, big.final[:3])
    fs, fb = _fp(chains=3), _fp(chains=9)
    assert np.array_equal(fs.times, fb.times[:3])
    assert np.array_equal(fs.censored, fb.censored[:3])
    for k in (0, 4, 8):
        one = _run(chains=1, first_chain=k)
        assert np.array_equal(one.final[0], big.final[k])
        assert one.first_chain == k
        fone = _fp(chains=1, first_chain=k)
        assert fone.times[0] == fb.times[k]
    # a sweep split in two chunks of chains is the sweep
    tail = _run(chains=5, first_chain=4)
    assert np.array_equal(np.concatenate([big.final[:4], tail.final]), big.final)


@pytest.mark.parametrize(
    "model",
    [
        CHAIN,
        ms.Hardmax(gamma=np.linspace(0.5, 0.05, 60)),
        ms.SoftmaxFlow(beta=2.0, gamma=lambda t: 1 / (t + 2)),
    ],
    ids=["chain", "hardmax-schedule", "flow-callable"],
)
def test_splitting_steps_into_calls_does_not_matter(monkeypatch, model):
    one_call = _run(model=model)
    fp_one = _fp()
    monkeypatch.setattr(sim, "_FIRST_CALL_STEPS", 1)
    monkeypatch.setattr(sim, "_CALL_SECONDS", 0.0)  # never grow: 60 calls of one step
    calls = []
    orig = _drivers.advance

    def counting(*args):
        if args[5]:  # (the compile before the run advances no step)
            calls.append(args[5])
        return orig(*args)

    monkeypatch.setattr(_drivers, "advance", counting)
    many = _run(model=model)
    assert len(calls) == 60 and set(calls) == {1}
    assert np.array_equal(one_call.final, many.final)
    fp_many = _fp()
    assert np.array_equal(fp_one.times, fp_many.times)
    assert np.array_equal(fp_one.final, fp_many.final)
    # uneven chunks: 3, 6, 12, ... (growing) against 1-step calls
    monkeypatch.setattr(sim, "_FIRST_CALL_STEPS", 3)
    monkeypatch.setattr(sim, "_CALL_SECONDS", 1e9)
    assert np.array_equal(_run(model=model).final, one_call.final)


def test_one_large_call(monkeypatch):
    default = _run(steps=200)
    monkeypatch.setattr(sim, "_FIRST_CALL_STEPS", 10**6)
    assert np.array_equal(_run(steps=200).final, default.final)


def test_record_every_does_not_change_the_path():
    plain = _run(steps=50)
    rec = ms.simulate(CHAIN, X0, steps=50, chains=8, rng=5, record_every=7)
    assert np.array_equal(rec.final, plain.final)
    assert list(rec.times) == [0, 7, 14, 21, 28, 35, 42, 49, 50]
    assert np.array_equal(rec.trajectory[:, -1], plain.final)
    assert np.array_equal(rec.trajectory[:, 0], np.broadcast_to(X0, (8,) + X0.shape))
    # the state at step 14 is the final state of a 14-step run
    assert np.array_equal(rec.trajectory[:, 2], _run(steps=14).final)


@pytest.mark.parametrize(
    "make",
    [
        lambda: 123,
        lambda: np.int64(123),
        lambda: np.random.SeedSequence(123),
        lambda: ms.Seed(123),
    ],
    ids=["int", "np-int", "SeedSequence", "Seed"],
)
def test_seed_forms_that_mean_the_same(make):
    a = _run(rng=make())
    assert np.array_equal(a.final, _run(rng=123).final)
    assert a.seed == {"entropy": "123", "spawn_key": []}


def test_seed_sequence_spawn_key_is_recorded_and_used():
    child = np.random.SeedSequence(123).spawn(2)[1]
    a = _run(rng=child)
    assert a.seed == {"entropy": "123", "spawn_key": [1]}
    assert not np.array_equal(a.final, _run(rng=123).final)
    again = _run(rng=ms.Seed.from_dict(a.seed))
    assert np.array_equal(again.final, a.final)


def test_generator_is_reproducible_and_recorded():
    a = _run(rng=np.random.default_rng(8))
    b = _run(rng=np.random.default_rng(8))
    assert np.array_equal(a.final, b.final)
    again = _run(rng=ms.Seed.from_dict(a.seed))
    assert np.array_equal(again.final, a.final)
    assert np.array_equal(_run(rng=int(a.seed["entropy"])).final, a.final)


def test_none_records_fresh_entropy_that_reproduces():
    a, b = _run(rng=None), _run(rng=None)
    assert a.seed["entropy"] != b.seed["entropy"]
    assert not np.array_equal(a.final, b.final)
    for res in (a, b):
        again = _run(rng=int(res.seed["entropy"]))
        assert np.array_equal(again.final, res.final)
        assert np.array_equal(_run(rng=ms.Seed.from_dict(res.seed)).final, res.final)
    fp = _fp(rng=None)
    assert np.array_equal(_fp(rng=int(fp.seed["entropy"])).times, fp.times)


def test_results_record_seed_and_provenance(tmp_path):
    fp = _fp(rng=2**100 + 3)
    assert fp.seed["entropy"] == str(2**100 + 3)
    meta = fp.metadata()
    assert meta["seed"] == fp.seed and meta["first_chain"] == 0
    assert {"numba", "numpy", "threads", "metastab"} <= set(meta["provenance"])
    path = fp.save(tmp_path / "fp.csv")
    frame, side = ms.results.read_table(path)
    assert ms.Seed.from_dict(side["seed"]) == ms.Seed(2**100 + 3)
    assert np.array_equal(frame["steps"].to_numpy(), fp.times)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "seed", [1, 2]])
def test_bad_rng(bad):
    with pytest.raises((TypeError, ValueError), match="rng"):
        _run(rng=bad)


def test_seed_sequence_with_a_list_of_entropy_words():
    seq = np.random.SeedSequence([1, 2])
    a = _run(rng=seq)
    assert a.seed == {"entropy": ["1", "2"], "spawn_key": []}
    assert np.array_equal(_run(rng=ms.Seed.from_dict(a.seed)).final, a.final)
    assert not np.array_equal(_run(rng=np.random.SeedSequence([1, 3])).final, a.final)


def test_record_at_keeps_exactly_those_steps_on_the_same_path():
    at = [0, 1, 3, 10, 31, 100]
    a = ms.simulate(
        ms.SoftmaxChain(beta=3.0, gamma=0.3), X0, steps=100, chains=3, rng=4, record_at=at
    )
    b = ms.simulate(
        ms.SoftmaxChain(beta=3.0, gamma=0.3), X0, steps=100, chains=3, rng=4, record_every=1
    )
    assert a.times.tolist() == at
    assert np.array_equal(a.trajectory, b.trajectory[:, at])
    assert np.array_equal(a.final, b.final)
    late = ms.simulate(
        ms.SoftmaxChain(beta=3.0, gamma=0.3), X0, steps=100, chains=3, rng=4, record_at=[50]
    )
    assert late.times.tolist() == [50]
    assert np.array_equal(late.trajectory[:, 0], b.trajectory[:, 50])


@pytest.mark.parametrize(
    "bad, message",
    [
        ([], "non-empty"),
        ([0.5], "integers"),
        ([3, 2], "strictly increasing"),
        ([0, 101], r"\[0, steps=100\], got 101"),
        ([-1], "got -1"),
    ],
)
def test_record_at_is_validated(bad, message):
    with pytest.raises(ValueError, match=message):
        ms.simulate(ms.Hardmax(gamma=0.5), X0, steps=100, record_at=bad)
    with pytest.raises(ValueError, match="not both"):
        ms.simulate(ms.Hardmax(gamma=0.5), X0, steps=100, record_at=[1], record_every=2)
