"""The result protocol: every result saves, loads back as its class (``metastab.load``) and
replays from its provenance to the same bits; a changed seed replays to other bits (negative
control); files without arrays or fields give errors that name what is missing; a damaged or
missing file gives its own error, naming it."""

import hashlib
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import metastab as ms
from metastab.engine import ams_mean_escape_time
from metastab.results import SCHEMA_VERSION, read_table, write_table

X0 = ms.regular_polygon(5).vertices
FROZEN = np.repeat(ms.regular_polygon(3).vertices, 3, axis=0)
HULL = ms.LeaveHull(groups=np.repeat(np.arange(3), 3), radius=1.0)


def _first_passage(rng=3):
    return ms.first_passage(
        ms.SoftmaxChain(beta=2.0, gamma=0.5),
        X0,
        ms.LeaveBall(0.1),
        max_steps=200,
        chains=6,
        rng=rng,
    )


def _accelerated(rng=1):
    x0 = np.repeat([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]], 2, axis=0)
    return ms.first_passage(
        ms.SoftmaxChain(beta=30.0, gamma=0.5),
        x0,
        ms.LeaveBall(0.1),
        max_steps=1e40,
        chains=4,
        rng=rng,
        mode="accelerated",
        merge_tol=1e-8,
    )


def _run(rng=4):
    return ms.simulate(
        ms.SoftmaxChain(beta=3.0, gamma=0.3), X0, steps=12, chains=3, rng=rng, record_at=[0, 5, 12]
    )


def _neighbours(rng=4):
    """A deterministic model (the seed changes nothing) with the neighbour sets recorded."""
    return ms.simulate(
        ms.Localmax(gamma=1 / 3, r=0.1),
        X0 + 0.01 * np.arange(10).reshape(5, 2),
        steps=12,
        chains=3,
        rng=rng,
        record_every=5,
        record_neighbours=True,
    )


def _track(rng=0):
    x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    return ms.track(
        ms.SoftmaxChain(beta=1.0, gamma=0.5), x0, steps=40, chains=3, rng=rng, record_every=10
    )


def _ams_mean_time(rng=2):
    return ams_mean_escape_time(
        ms.SoftmaxChain(beta=30.0, gamma=0.45),
        FROZEN,
        HULL,
        reference_level=0.05,
        chains=3,
        replicas=10,
        runs=2,
        rng=rng,
    )


MAKERS = {
    "first-passage": _first_passage,
    "accelerated": _accelerated,
    "run": _run,
    "plateaus": _track,
    "ams-mean-time": _ams_mean_time,
}
RANDOM = sorted(MAKERS)
MAKERS["neighbours"] = _neighbours


def _arrays(result):
    """Every array of a result, nested ones included, by name."""
    return result._parts()[1]


def _same(a, b):
    left, right = _arrays(a), _arrays(b)
    return left.keys() == right.keys() and all(
        left[k].dtype == right[k].dtype and np.array_equal(left[k], right[k], equal_nan=True)
        for k in left
    )


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_save_load_replay_gives_the_same_bits(tmp_path, name, suffix):
    result = MAKERS[name]()
    path = result.save(tmp_path / f"r{suffix}")
    back = ms.load(path)
    assert type(back) is type(result) and _same(back, result)
    assert back.metadata() == json.loads(json.dumps(result.metadata()))
    assert type(result).load(path).to_frame().equals(result.to_frame())
    again = back.replay()
    assert type(again) is type(result) and _same(again, result)


@pytest.mark.parametrize("name", RANDOM)
def test_replay_with_another_seed_differs(tmp_path, name):
    """Negative control: the stored seed changed, the replay gives other bits."""
    path = MAKERS[name]().save(tmp_path / "r.csv")
    side = tmp_path / "r.csv.json"
    meta = json.loads(side.read_text())
    seed = meta["seed"]
    seed["entropy"] = str(int(seed["entropy"]) + 1)
    side.write_text(json.dumps(meta))
    loaded = ms.load(path)
    assert not _same(loaded.replay(), MAKERS[name]())


def test_observables_file_loads_the_track(tmp_path):
    tr = _track()
    path = tr.save_observables(tmp_path / "o.parquet")
    back = ms.Track.load(path)
    assert _same(back, tr) and back.observables_frame().equals(tr.observables_frame())
    assert json.loads((tmp_path / "o.parquet.json").read_text())["kind"] == "observables"


def test_replay_warns_when_versions_differ(tmp_path):
    path = _first_passage().save(tmp_path / "fp.csv")
    side = tmp_path / "fp.csv.json"
    meta = json.loads(side.read_text())
    meta["provenance"]["numpy"] = "0.0.1"
    side.write_text(json.dumps(meta))
    with pytest.warns(ms.DiagnosticWarning, match=r"numpy 0\.0\.1 -> "):
        again = ms.load(path).replay()
    assert _same(again, _first_passage())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _first_passage().replay()  # same versions: silent


def test_sidecar_records_schema_class_and_arguments(tmp_path):
    meta = _accelerated().metadata()
    assert meta["schema_version"] == SCHEMA_VERSION and meta["class"] == "FirstPassage"
    assert meta["arguments"]["mode"] == "accelerated" and meta["arguments"]["max_steps"] == 1e40
    assert meta["chains"] == 4


def test_a_table_saved_without_arrays_names_what_is_missing(tmp_path):
    fp = _first_passage()
    old = {k: v for k, v in fp.metadata().items() if k not in ("schema_version", "class")}
    write_table(fp.to_frame(), tmp_path / "old.csv", old)
    with pytest.raises(ValueError, match=r"old\.csv.*without schema_version.*read_table"):
        ms.load(tmp_path / "old.csv")
    path = fp.save(tmp_path / "new.csv")
    meta = json.loads((tmp_path / "new.csv.json").read_text())
    del meta["max_steps"]
    (tmp_path / "new.csv.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="FirstPassage has no field 'max_steps'"):
        ms.load(path)


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        ms.load(tmp_path / "none.csv")
    write_table(_first_passage().to_frame(), tmp_path / "t.csv", {"kind": "table"})
    with pytest.raises(ValueError, match="kind is 'table', not a result kind"):
        ms.load(tmp_path / "t.csv")
    path = _run().save(tmp_path / "run.csv")
    with pytest.raises(ValueError, match="holds a Run, not a FirstPassage"):
        ms.FirstPassage.load(path)


def test_a_result_without_x0_cannot_replay():
    fp = _first_passage()
    bare = ms.FirstPassage(
        times=fp.times,
        censored=fp.censored,
        final=fp.final,
        max_steps=fp.max_steps,
        model=fp.model,
        event=fp.event,
        seed=fp.seed,
    )
    with pytest.raises(ValueError, match="holds no x0"):
        bare.replay()


# --------------------------------------------------------------------------- damaged files


def _cut(file):
    """Truncate a file to half its bytes."""
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def _tamper(npz):
    """Rewrite the arrays as a valid .npz with one time changed."""
    with np.load(npz) as arrays:
        changed = dict(arrays)
    changed["times"] = changed["times"] + 1
    with open(npz, "wb") as fh:
        np.savez(fh, **changed)


def _as_version_1(side):
    """The sidecar as the previous version wrote it: schema_version 1, no digests."""
    meta = json.loads(side.read_text())
    del meta["sha256"]
    side.write_text(json.dumps(dict(meta, schema_version=1)))


# damage -> (the file it is done to, what to do, the error and the words that name it)
DAMAGE = {
    "truncated table": ("", _cut, ms.DamagedFileError, "{file} was changed or truncated"),
    "tampered arrays": (".npz", _tamper, ms.DamagedFileError, "{file} was changed or truncated"),
    "truncated arrays": (".npz", _cut, ms.DamagedFileError, "{file} was changed or truncated"),
    "truncated sidecar": (".json", _cut, ms.DamagedFileError, "{file} is damaged ("),
    "missing arrays": (".npz", Path.unlink, FileNotFoundError, "lost its arrays {file}"),
    "missing sidecar": (".json", Path.unlink, FileNotFoundError, "lost its sidecar {file}"),
    "missing table": ("", Path.unlink, FileNotFoundError, "no such file: {file}"),
}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_each_damage_gives_its_own_error_naming_the_file(tmp_path, damage, suffix):
    path = _first_passage().save(tmp_path / f"fp{suffix}")
    ms.load(path)  # intact, it loads
    ending, do, error, words = DAMAGE[damage]
    file = path.with_name(path.name + ending)
    do(file)
    with pytest.raises(error, match=re.escape(words.format(file=repr(str(file))))):
        ms.load(path)


def test_the_sidecar_records_the_digests_of_the_table_and_the_arrays(tmp_path):
    path = _run().save(tmp_path / "run.parquet")
    meta = json.loads((tmp_path / "run.parquet.json").read_text())
    assert SCHEMA_VERSION == 2 and meta["schema_version"] == 2
    assert meta["sha256"] == {
        "table": hashlib.sha256(path.read_bytes()).hexdigest(),
        "arrays": hashlib.sha256((tmp_path / "run.parquet.npz").read_bytes()).hexdigest(),
    }
    assert _same(ms.load(path).replay(), _run())


def test_the_digest_is_what_catches_tampered_arrays(tmp_path):
    """Negative control: without the digests (a version 1 sidecar) the tampered arrays load,
    with the changed times; version 1 files load unchecked and replay."""
    fp = _first_passage()
    path = fp.save(tmp_path / "fp.csv")
    _as_version_1(tmp_path / "fp.csv.json")
    old = ms.load(path)
    assert _same(old, fp) and _same(old.replay(), fp)
    _tamper(tmp_path / "fp.csv.npz")
    assert np.array_equal(ms.load(path).times, fp.times + 1)


def test_unparsable_arrays_of_a_version_1_file_name_it(tmp_path):
    path = _first_passage().save(tmp_path / "fp.csv")
    _as_version_1(tmp_path / "fp.csv.json")
    npz = tmp_path / "fp.csv.npz"
    _cut(npz)
    with pytest.raises(ms.DamagedFileError, match=re.escape(f"{str(npz)!r} is damaged (File")):
        ms.load(path)
    npz.write_bytes(b"")
    with pytest.raises(ms.DamagedFileError, match=re.escape(f"{str(npz)!r} is damaged")):
        ms.load(path)


def test_a_sidecar_stripped_of_its_digests_is_refused(tmp_path):
    path = _first_passage().save(tmp_path / "fp.csv")
    side = tmp_path / "fp.csv.json"
    meta = json.loads(side.read_text())
    del meta["sha256"]["arrays"]
    side.write_text(json.dumps(meta))
    with pytest.raises(ms.DamagedFileError, match=r"fp\.csv\.json' records no SHA-256 of the arr"):
        ms.load(path)
    side.write_text(json.dumps(dict(meta, schema_version="2")))
    with pytest.raises(ms.DamagedFileError, match=r"schema_version must be an integer.*'2'"):
        ms.load(path)


def test_read_table_checks_the_table_and_names_a_damaged_file(tmp_path):
    path = _first_passage().save(tmp_path / "fp.csv")
    assert read_table(path)[0].equals(_first_passage().to_frame())
    _cut(path)
    with pytest.raises(ms.DamagedFileError, match=r"fp\.csv' was changed or truncated"):
        read_table(path)
    plain = write_table(_first_passage().to_frame(), tmp_path / "t.parquet", {"kind": "table"})
    plain.write_bytes(plain.read_bytes()[:-20])
    with pytest.raises(ms.DamagedFileError, match=r"t\.parquet' is damaged \(.*Parquet"):
        read_table(plain)
    (tmp_path / "t.parquet.json").write_text("[1, 2]")
    with pytest.raises(ms.DamagedFileError, match=r"t\.parquet\.json' is damaged \(a JSON list"):
        read_table(plain)


def test_ams_mean_time_loads_as_its_class_with_its_probability(tmp_path):
    """The AMS mean time is a class of metastab.results (which :func:`load` picks by kind), and
    its AMS runs, a nested result, load back as an AMSResult."""
    from metastab.results import ams, protocol

    assert protocol._target(protocol.KINDS["ams-mean-time"]) is ams.AMSMeanTime
    back = ms.load(_ams_mean_time().save(tmp_path / "e.csv"))
    assert type(back) is ams.AMSMeanTime
    assert type(back.probability) is ams.AMSResult
