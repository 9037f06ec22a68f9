"""Dask's class folds split the classes by a hash of their QI (``split_out`` buckets): every
class is complete in one bucket, no task holds every class, and the answer — values,
witnesses and the words of a refusal — is the in-memory one.

The random-table equalities (any ``split_out``) are in ``tests/test_engine_folds.py`` and
``tests/test_population_folds.py``; here: keys that fastpriv holds equal but Arrow keeps
apart (NaN and null, ``-0.0`` and ``0.0``) in different files, the size of each bucket, and
refusals with memory's words.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastpriv import InputError, distributed, population, risk

dask = pytest.importorskip("dask")


def _files(folder, *tables) -> str:
    folder.mkdir()
    for i, t in enumerate(tables):
        pq.write_table(t, folder / f"part-{i}.parquet")
    return str(folder)


def _message(fn) -> str:
    with pytest.raises(InputError) as info:
        fn()
    return str(info.value)


def test_keys_held_equal_meet_in_one_bucket(tmp_path):
    """NaN in one file, null in another (one class under nulls="value"); -0.0 and 0.0 in
    two files (one class): each is counted once, whatever the number of buckets."""
    a = pa.table({"x": [float("nan"), -0.0, 1.5, 2.5], "s": ["a", "b", "a", "c"]})
    b = pa.table({"x": [None, 0.0, 1.5, 3.5], "s": ["a", "b", "a", "d"]}).cast(a.schema)
    folder = _files(tmp_path / "d", a, b)
    table = pa.concat_tables([a, b])
    want = risk.audit(table, qi=["x", "s"], nulls="value", population=100).to_dict()
    with dask.config.set(scheduler="synchronous"):
        for split_out in (1, 2, 3, 7, 16):
            got = distributed.class_histogram(folder, qi=["x", "s"], nulls="value",
                                              split_out=split_out)
            assert risk.audit(got, population=100).to_dict() == want, split_out
            assert got.n_classes == risk.class_counts(table, qi=["x", "s"],
                                                      nulls="value").n_classes


def test_no_task_holds_every_class(tmp_path, monkeypatch):
    """20,000 classes in 8 files, 4 buckets: each bucket's summary reads about a quarter of
    the classes, and they add up to all of them once."""
    rng = np.random.default_rng(2)
    n = 40_000
    table = pa.table({"a": rng.integers(0, 200, n), "b": rng.integers(0, 100, n)})
    folder = _files(tmp_path / "d", *(table.slice(i * n // 8, n // 8) for i in range(8)))
    seen = []
    real = distributed._bucket_histogram

    def spy(t, **kw):
        seen.append(t.num_rows)
        return real(t, **kw)

    monkeypatch.setattr(distributed, "_bucket_histogram", spy)
    with dask.config.set(scheduler="synchronous"):
        got = distributed.class_histogram(folder, qi=["a", "b"], split_every=2, split_out=4)
    classes = risk.class_counts(table, qi=["a", "b"])
    assert sum(seen) == classes.n_classes and len(seen) == 4
    assert max(seen) < 0.3 * classes.n_classes
    assert risk.audit(got).to_dict() == risk.audit(table, qi=["a", "b"]).to_dict()


def test_refusals_have_the_words_of_memory(tmp_path):
    """Nulls under nulls="error" spread over buckets (the count is the whole table's), a
    class the population lacks (the first in key order of the whole table), no record
    left: the in-memory messages, with any split_out."""
    sample = pa.table({"a": [1, None, 3, None, 5, 6], "b": ["x", "y", None, "z", "x", "y"]})
    people = pa.table({"a": [1, 3, 5, 6, 6], "b": ["x", None, "x", "y", "y"]})
    s_dir = _files(tmp_path / "s", sample.slice(0, 3), sample.slice(3))
    p_dir = _files(tmp_path / "p", people)
    empty = _files(tmp_path / "e", pa.table({"a": pa.array([None, None], pa.int64())}))
    with dask.config.set(scheduler="synchronous"):
        for split_out in (1, 3, 5):
            assert _message(lambda: distributed.class_histogram(
                s_dir, qi=["a", "b"], split_out=split_out)) == _message(
                lambda: risk.audit(sample, qi=["a", "b"]))
            assert _message(lambda: population.k_map(distributed.population_histogram(
                s_dir, qi=["a", "b"], population=p_dir, nulls="value",
                split_out=split_out))) == _message(
                lambda: population.k_map(sample, qi=["a", "b"], population=people,
                                         nulls="value"))
            assert _message(lambda: distributed.class_histogram(
                empty, qi=["a"], nulls="drop", split_out=split_out)) == _message(
                lambda: risk.audit(pq.read_table(empty), qi=["a"], nulls="drop"))


def test_split_out_is_checked(tmp_path):
    folder = _files(tmp_path / "d", pa.table({"a": [1, 2]}))
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(InputError, match="split_out"):
            distributed.class_histogram(folder, qi=["a"], split_out=bad)
