"""The "stream" engine of the row-level and population models: record batches read one at
a time (``fastpriv.stream_counts``) give the answer of the whole table in memory.

* r-robustness and the foreground attack read the distinct (QI, group, sensitive) rows
  with their count: ``stream_counts.row_counts`` of the batches, audited with
  ``weight="count"``, must equal the audit of the table (``to_dict()``, row numbers mapped,
  for every null policy) — the comparison of ``tests/test_engines_rowlevel.py``
  (:func:`assert_rowlevel_same`), and the count table must equal DuckDB's, types included.
* k-map and δ-presence (and re-identification risk) read the QI classes of the sample and
  of the population: ``stream_counts.class_counts`` of the batches must give the classes
  and every answer of the tables in memory — the comparison of
  ``tests/test_engines_classes.py`` (:func:`assert_classes_same`); and ``population.k_map``
  / ``delta_presence`` given the streams themselves (``population=`` a reader or an
  iterator) must answer as with the tables.

The batches are cut at random places (empty batches among them, a group or a class spanning
several), come as a generator of ``RecordBatch``, a ``RecordBatchReader``, a list of tables
or a Parquet file of small row groups read in small batches, and the partial counts are
merged at random points (``_MERGE_FLOOR`` lowered).
"""

from __future__ import annotations

import itertools
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, population, pushdown, read_csv, risk, stream_counts
from tests.engines import CLASS_REFUSAL_TABLE, CLASS_REFUSALS, ROW_REFUSAL_TABLE, ROW_REFUSALS
from tests.test_engines_classes import NAN_EXAMPLE as CLASS_NAN_EXAMPLE
from tests.test_engines_classes import (
    NULL_PEOPLE,
    POLICIES,
    _assert_same_classes,
    _dicts,
    _outcome,
    _same_error,
    _with_people,
    assert_classes_same,
    class_tables,
)
from tests.test_engines_rowlevel import NAN_EXAMPLE as ROW_NAN_EXAMPLE
from tests.test_engines_rowlevel import SETTINGS, assert_rowlevel_same, row_tables

FORMS = ("generator", "reader", "tables", "parquet")
#: merge the partial counts after every batch, every other distinct row, or at the end
FLOORS = (1, 2, stream_counts._MERGE_FLOOR)


# ------------------------------------------------------------------ the streams
def _batch(t: pa.Table) -> pa.RecordBatch:
    """``t`` as one record batch (0 rows too: an empty batch, with its schema)."""
    return pa.RecordBatch.from_arrays([t.column(i).combine_chunks()
                                       for i in range(t.num_columns)], schema=t.schema)


def _pieces(table: pa.Table, cuts: list[int]) -> list[pa.Table]:
    """The rows cut at ``cuts`` (sorted, repeats give empty pieces)."""
    bounds = [0, *sorted(min(c, table.num_rows) for c in cuts), table.num_rows]
    return [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]


class Pulled:
    """A one-shot generator of the pieces as record batches, counting the batches pulled."""

    def __init__(self, pieces: list[pa.Table]) -> None:
        self.pieces, self.pulled = pieces, 0

    def __call__(self):
        for p in self.pieces:
            self.pulled += 1
            yield _batch(p)


def _source(form: str, table: pa.Table, cuts: list[int], tmp: str | None = None):
    """A fresh stream of ``table`` in ``form``; ``(source, keywords of the count)``."""
    pieces = _pieces(table, cuts)
    if form == "generator":
        return Pulled(pieces)(), {}
    if form == "reader":
        return pa.RecordBatchReader.from_batches(table.schema, [_batch(p) for p in pieces]), {}
    if form == "tables":
        return pieces, {}
    path = f"{tmp}/data.parquet"
    pq.write_table(table, path, row_group_size=max(1, len(cuts)))
    return path, {"batch_size": max(1, min(cuts, default=1))}


def _cuts(n: int):
    return st.lists(st.integers(0, n), max_size=6)


# ------------------------------------------------------------------ row-level models
@settings(max_examples=60, **SETTINGS)
@given(data=row_tables(), st_data=st.data(), form=st.sampled_from(FORMS),
       floor=st.sampled_from(FLOORS))
@example(data=ROW_NAN_EXAMPLE, st_data=None, form="generator", floor=1)
def test_random_tables_stream_row_counts_equal_in_memory(tmp_path_factory, data, st_data,
                                                         form, floor):
    """r-robustness and the foreground attack on the streamed row counts equal the audits
    of the table in memory, under each null policy; the table equals DuckDB's."""
    import duckdb

    table, qi, group, sens, weight = data
    n = table.num_rows
    # the NaN example: a group in three batches, an empty batch, a batch of weight 0 only
    cuts = [2, 2, 5] if st_data is None else st_data.draw(_cuts(n), label="cuts")
    kw = dict(qi=qi, group=group, sensitive=sens, weight=weight)
    src, more = _source(form, table, cuts, str(tmp_path_factory.mktemp("rows")))
    with mock.patch.object(stream_counts, "_MERGE_FLOOR", floor):
        got = stream_counts.row_counts(src, **kw, **more)
    assert_rowlevel_same(got, table, qi, group, sens, weight,
                         nulls_policies=("error", "value", "drop"))
    assert got.equals(pushdown.row_counts(duckdb.from_arrow(table), **kw))


def test_row_counts_read_every_batch_once_and_merge_as_they_come():
    """A generator is read once, batch by batch, and the partial counts are merged as
    they come: with the merge floor at 1, a merge waits for no more batches than the
    distinct rows merged so far (memory ∝ the distinct rows, not the batches)."""
    rng = np.random.default_rng(2)
    n = 3000
    table = pa.table({"age": pa.array(rng.integers(20, 23, n), pa.int32()),
                      "g": pa.array(rng.integers(0, 4, n), pa.int64()),
                      "s": rng.choice(["flu", "hiv"], n)})
    stream = Pulled(_pieces(table, list(range(10, n, 10))))
    sizes = []
    merge = risk.ClassCounts.merge

    def spy(self, *others):
        sizes.append(1 + len(others))
        return merge(self, *others)

    with mock.patch.object(stream_counts, "_MERGE_FLOOR", 1), \
            mock.patch.object(risk.ClassCounts, "merge", spy):
        got = stream_counts.row_counts(stream(), qi="age", group="g", sensitive="s")
    assert stream.pulled == 300
    assert got.num_rows == 24
    assert max(sizes) <= 1 + got.num_rows and len(sizes) >= 300 // got.num_rows
    assert got.equals(stream_counts.row_counts(table, qi="age", group="g", sensitive="s"))
    assert_rowlevel_same(got, table, ["age"], "g", "s", None)


def test_parquet_and_csv_paths_and_datasets_are_read_in_batches(tmp_path):
    """A Parquet file of many row groups, a folder, a dataset, a CSV file: the table of the
    rows as read in memory."""
    import pyarrow.dataset as ds

    rng = np.random.default_rng(4)
    n = 2000
    table = pa.table({"age": pa.array(rng.integers(20, 26, n), pa.int64()),
                      "zip": pa.array(rng.choice(["100", "101", None], n, p=[.5, .49, .01])),
                      "gid": pa.array(rng.integers(0, 60, n), pa.int64()),
                      "disease": rng.choice(["flu", "hiv", "cold"], n, p=[.6, .1, .3]),
                      "n": pa.array(rng.integers(0, 3, n), pa.int64())})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=128)
    (tmp_path / "folder").mkdir()
    for i, piece in enumerate(_pieces(table, [700, 1400])):
        pq.write_table(piece, tmp_path / "folder" / f"part-{i}.parquet")
    pacsv.write_csv(table, tmp_path / "t.csv")
    kw = dict(qi=["age", "zip"], group="gid", sensitive="disease")
    for weight in (None, "n"):
        want = stream_counts.row_counts(table, weight=weight, **kw)
        assert_rowlevel_same(want, table, kw["qi"], "gid", "disease", weight)
        for src in (str(tmp_path / "t.parquet"), str(tmp_path / "folder"),
                    ds.dataset(str(tmp_path / "folder"))):
            got = stream_counts.row_counts(src, weight=weight, batch_size=100, **kw)
            assert got.equals(want), src
        # the CSV file: its rows as fastpriv reads the file in memory (zip typed int64)
        csv = str(tmp_path / "t.csv")
        got = stream_counts.row_counts(csv, weight=weight, **kw)
        assert got.schema.field("zip").type == pa.int64()
        assert got.equals(stream_counts.row_counts(read_csv(csv), weight=weight, **kw))
        assert_rowlevel_same(got, read_csv(csv), kw["qi"], "gid", "disease", weight)
        assert want.equals(pushdown.row_counts(str(tmp_path / "folder"), weight=weight, **kw))


def test_row_counts_bad_input_names_the_parameter():
    """The refusals of the engines' row_counts (tests/test_engines_rowlevel.py), and those
    of a stream."""
    t = pa.table(ROW_REFUSAL_TABLE)
    cases = ROW_REFUSALS + [
        (dict(qi="q", group="g", sensitive="s", batch_size=0), InputError, "batch_size"),
        (dict(qi="q", group="g", sensitive="s", batch_size=1.5), InputTypeError,
         "batch_size"),
    ]
    for kw, exc, match in cases:
        with pytest.raises(exc, match=match):
            stream_counts.row_counts(iter(t.to_batches()), **kw)
            pytest.fail(f"{kw} accepted")
    kw = dict(qi="q", group="g", sensitive="s")
    with pytest.raises(InputError, match="no record batch"):
        stream_counts.row_counts(iter([]), **kw)
    with pytest.raises(InputTypeError, match="RecordBatch or Table"):
        stream_counts.row_counts(iter([{"q": 1}]), **kw)
    with pytest.raises(InputError, match="no such file"):
        stream_counts.row_counts("/no/such/file.parquet", **kw)
    # weights that fit in int64 batch by batch but not in all: refused as in memory
    big = pa.table({"q": [1, 1], "g": [1, 1], "s": ["a", "a"],
                    "w": pa.array([2**62, 2**62], pa.int64())})
    with pytest.raises(InputError, match="past 2"):
        stream_counts.row_counts(big.to_batches(max_chunksize=1), weight="w", **kw)
    # every row of weight 0: the empty count table, typed (as DuckDB's)
    zero = big.set_column(3, "w", pa.array([0, 0], pa.int64()))
    out = stream_counts.row_counts(zero.to_batches(max_chunksize=1), weight="w", **kw)
    assert out.num_rows == 0 and out.schema == pa.schema(
        [("q", pa.int64()), ("g", pa.int64()), ("s", pa.string()), ("count", pa.int64())])


def test_ungrouped_histogram_as_the_anonymizers_read_it():
    """``group=[]`` with another count name: the distinct (QI, sensitive) rows, as every
    engine gives them to ``release_from_engine``."""
    import duckdb

    t = pa.table({"a": [1, 1, 2, None], "s": ["x", "x", "y", "x"], "n": [1, 2, 0, 4]})
    kw = dict(qi=["a"], group=[], sensitive="s", weight="n", count="people")
    got = stream_counts.row_counts(t.to_batches(max_chunksize=1), **kw)
    assert got.to_pylist() == [{"a": 1, "s": "x", "people": 3},
                               {"a": None, "s": "x", "people": 4}]
    assert got.equals(pushdown.row_counts(duckdb.from_arrow(t), **kw))


# ------------------------------------------------------------------ k-map and δ-presence
def _factory(form: str, cuts: list[int], tmp: str):
    """``count(src, **kw)``: stream_counts.class_counts of a fresh stream of the table
    ``src`` in ``form`` (assert_classes_same counts each source once per policy)."""
    def count(table, **kw):
        src, more = _source(form, table, cuts, tmp)
        return stream_counts.class_counts(src, **kw, **more)
    return count


@settings(max_examples=60, **SETTINGS)
@given(data=class_tables(), st_data=st.data(), form=st.sampled_from(FORMS),
       floor=st.sampled_from(FLOORS))
@example(data=CLASS_NAN_EXAMPLE, st_data=None, form="generator", floor=1)
@example(data=NULL_PEOPLE, st_data=None, form="reader", floor=2)
def test_random_tables_stream_class_counts_equal_in_memory(tmp_path_factory, data, st_data,
                                                           form, floor):
    """The classes of a streamed sample and population, and risk, k-map and δ-presence on
    them, equal the tables' in memory under each null policy; k-map and δ-presence given the
    streams as ``data`` and ``population=`` answer as given the tables."""
    sample, people, qi, weight = _with_people(data)
    if st_data is None:       # a class in three batches, an empty batch, weights 0 only
        s_cuts, p_cuts = [1, 1, 4], [3, 3, 7]
    else:
        s_cuts = st_data.draw(_cuts(sample.num_rows), label="sample cuts")
        p_cuts = st_data.draw(_cuts(people.num_rows), label="population cuts")
    tmp = str(tmp_path_factory.mktemp("classes"))
    with mock.patch.object(stream_counts, "_MERGE_FLOOR", floor):
        s_count, p_count = _factory(form, s_cuts, tmp), _factory(form, p_cuts, tmp)

        def count(src, **kw):
            return (s_count if src is sample else p_count)(src, **kw)

        assert_classes_same(count, sample, people, sample, people, qi, weight, POLICIES)
        # the streams given to k_map / delta_presence themselves
        for nulls in POLICIES:
            kw = dict(qi=qi, nulls=nulls)
            for model in (population.k_map, population.delta_presence):
                want = _outcome(model, sample, population=people, weight=weight, **kw)
                for s_src in (sample, _source(form, sample, s_cuts, tmp)[0]):
                    got = _outcome(model, s_src, population=_source(
                        "generator" if form == "parquet" else form, people, p_cuts)[0],
                        weight=weight, **kw)
                    assert got[0] == want[0], (model.__name__, nulls, got, want)
                    if want[0] == "ok":
                        assert _dicts(got[1]) == _dicts(want[1]), (model.__name__, nulls)
                        assert got[1].params == want[1].params
                    else:       # a streamed weighted sample: nulls counted in records
                        _same_error(got, want, weight is not None and s_src is not sample)


def test_k_map_and_delta_presence_read_a_streamed_population_in_batches():
    """A population read once, batch by batch (a generator; a ``RecordBatchReader``),
    gives the answer of the population table; every batch is pulled."""
    rng = np.random.default_rng(8)
    people = pa.table({"age": pa.array(rng.integers(20, 40, 5000), pa.int32()),
                       "zip": rng.choice(["100", "101", "102"], 5000)})
    sample = people.take(pa.array(rng.choice(5000, 300, replace=False)))
    kw = dict(qi=["age", "zip"])
    for model in (population.k_map, population.delta_presence):
        want = model(sample, population=people, **kw).to_dict()
        stream = Pulled(_pieces(people, list(range(100, 5000, 100))))
        assert model(sample, population=stream(), **kw).to_dict() == want
        assert stream.pulled == 50
        reader = pa.RecordBatchReader.from_batches(people.schema,
                                                   people.to_batches(max_chunksize=64))
        assert model(sample, population=reader, **kw).to_dict() == want
        counted = stream_counts.class_counts(people.to_batches(max_chunksize=64), **kw)
        assert model(sample, population=counted, **kw).to_dict() == want
    assert not stream_counts.is_stream(people)
    assert not stream_counts.is_stream("people.parquet")
    assert stream_counts.is_stream(people.to_batches())


def test_class_counts_bad_input_names_the_parameter():
    """The refusals of the engines' class_counts (tests/test_engines_classes.py)."""
    t = pa.table(CLASS_REFUSAL_TABLE)
    cases = CLASS_REFUSALS + [
        (dict(qi="q", batch_size=-1), InputError, "batch_size"),
    ]
    for kw, exc, match in cases:
        with pytest.raises(exc, match=match):
            stream_counts.class_counts(t.to_batches(max_chunksize=1), **kw)
            pytest.fail(f"{kw} accepted")
    with pytest.raises(InputError, match="no rows"):
        stream_counts.class_counts(iter([]), qi="q")
    big = pa.table({"q": [1, 1], "w": pa.array([2**62, 2**62], pa.int64())})
    with pytest.raises(InputError, match="past 2"):
        stream_counts.class_counts(big.to_batches(max_chunksize=1), qi="q", weight="w")
    # a streamed population with a null under nulls="error": the in-memory words
    sample, people = pa.table({"q": [1, 2]}), pa.table({"q": [1, None, 2, None]})
    want = _outcome(population.k_map, sample, qi=["q"], population=people)
    got = _outcome(population.k_map, sample, qi=["q"],
                   population=people.to_batches(max_chunksize=1))
    assert want[0] == "error" and got == want
    # the counts of a population counted under another policy than the sample's: refused
    counted = stream_counts.class_counts(people.to_batches(), qi="q", nulls="drop")
    with pytest.raises(InputError, match="nulls"):
        population.k_map(sample, qi=["q"], population=counted)
    _assert_same_classes(counted, risk.class_counts(people, qi=["q"], nulls="drop"))


def test_complete_groups_never_splits_a_null_group():
    """NaN is a null: NaN and null rows of one key are one group, whichever batch each is
    in (they were two runs, and a batch boundary between two NaN rows read as disorder)."""
    from fastpriv.streaming import complete_groups

    nan = float("nan")
    keys = pa.array([1.0, 2.0, 2.0, nan, None, nan, None], pa.float64())
    other = pa.array(["a", "a", "a", "x", "x", "x", "x"])
    table = pa.table({"k": keys, "o": other})
    for size in (1, 2, 3, 7):
        runs = list(complete_groups(_tables(table, size), keys=["k"]))
        seen = []
        for run in runs:
            seen.append({None if v != v else v for v in run.column("k").to_pylist()
                         if v is not None} | ({None} if run.column("k").null_count else set()))
        flat = [k for s in seen for k in s]
        assert sorted(flat, key=str) == sorted({1.0, 2.0, None}, key=str), (size, seen)
        assert sum(r.num_rows for r in runs) == table.num_rows
    two = pa.table({"k": keys, "o": other})              # a second key after the null one
    runs = list(complete_groups(_tables(two, 2), keys=["k", "o"]))
    assert sum(r.num_rows for r in runs) == two.num_rows


def _tables(table: pa.Table, size: int) -> list:
    return [pa.Table.from_batches([b]) for b in table.to_batches(max_chunksize=size)]
