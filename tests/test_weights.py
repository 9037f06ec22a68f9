"""Weighted rows (Release.from_table(..., weight=)): an aggregate of distinct rows with
their multiplicity gives the release — and every count-based audit — of its expansion."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, Release
from fastpriv.datasets import load_adult
from tests.engines import assert_same, tables


def _expand(table: pa.Table, weight: str) -> pa.Table:
    """Oracle: repeat every row ``weight`` times (plain NumPy take)."""
    w = np.asarray(table.column(weight).to_pylist(), dtype=np.int64)
    return table.take(pa.array(np.repeat(np.arange(table.num_rows), w)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(max_rows=15), kind=st.sampled_from(["qi", "group"]),
       nulls=st.sampled_from(["error", "drop", "value"]), seed=st.integers(0, 2**32 - 1))
@example(data=(pa.table({"k": [1, 2], "s": ["a", "b"], "unused": [0, 1]}), ["k"], "s"),
         kind="group", nulls="error", seed=0)
def test_weighted_rows_equal_their_expansion(data, kind, nulls, seed):
    table, keys, sens = data
    w = np.random.default_rng(seed).integers(0, 4, table.num_rows)
    table = table.append_column("w", pa.array(w))
    expanded = _expand(table, "w")
    kw = {kind: keys, "sensitive": sens, "nulls": nulls}
    try:
        ref = Release.from_table(expanded, **kw)
    except InputError:   # empty expansion, nulls="error" with nulls, nothing left
        with pytest.raises(InputError):
            Release.from_table(table, weight="w", **kw)
        return
    event("compared")
    rel = Release.from_table(table, weight="w", **kw)
    assert rel.row_group is None
    assert_same(rel, ref)
    if (w > 0).all():    # the same numbers read as (group, value, count) rows
        assert Release.from_counts(table, group=keys, sensitive=sens, count="w",
                                   nulls=nulls).equals(rel)


def test_adult_distinct_rows_with_multiplicity():
    """The aggregate of distinct (QI tuple, value) rows — the form a warehouse or Spark
    returns for the row-level view — gives the release of all 45,222 rows."""
    adult = load_adult(["age", "sex", "race", "occupation"])
    qi = ["age", "sex", "race"]
    agg = adult.group_by(qi + ["occupation"]).aggregate([([], "count_all")])
    assert agg.num_rows < adult.num_rows / 10
    rel = Release.from_table(agg, qi=qi, sensitive="occupation", weight="count_all")
    assert_same(rel, Release.from_table(adult, qi=qi, sensitive="occupation"))


@pytest.mark.parametrize("table, kw, exc, match", [
    ({"w": [1.5]}, {}, InputTypeError, "must hold integers"),
    ({"w": [-1]}, {}, InputError, "negative"),
    ({"w": pa.array([2**63], pa.uint64())}, {}, InputError, "over 2\\*\\*63"),
    ({"w": pa.array([None], pa.int64())}, {}, InputError, "1 nulls"),
    ({"w": [0]}, {}, InputError, "empty"),
    ({"w": [1]}, {"weight": "nope"}, InputError, "nope"),
    ({"w": [1]}, {"weight": 3}, InputTypeError, "weight must be a column name"),
    ({"w": [1]}, {"weight": "g"}, InputError, "also a key"),
    ({"w": [1], "i": [7]}, {"individual": "i"}, InputError, "cannot be combined"),
    ({"w": [1], "s": pa.array([["a"]])}, {}, InputError, "list column"),
])
def test_weight_bad_input(table, kw, exc, match):
    cols = {"g": [1], "s": ["a"], **table}
    kw = {"weight": "w", **kw}
    with pytest.raises(exc, match=match):
        Release.from_table(pa.table(cols), group="g", sensitive="s", **kw)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(max_rows=15), nulls=st.sampled_from(["drop", "value"]),
       seed=st.integers(0, 2**32 - 1), n_batches=st.integers(1, 4),
       dense_cells=st.sampled_from([0, 1 << 25]))
def test_weighted_stream_equals_weighted_table(data, nulls, seed, n_batches, dense_cells):
    """CountAccumulator(weight=) over any batching (dense or sparse state) and
    Release.from_batches(weight=) equal Release.from_table(weight=)."""
    from fastpriv import CountAccumulator
    from fastpriv.counts import merge

    table, keys, sens = data
    rng = np.random.default_rng(seed)
    table = table.append_column("w", pa.array(rng.integers(0, 5, table.num_rows)))
    try:
        ref = Release.from_table(table, qi=keys, sensitive=sens, nulls=nulls, weight="w")
    except InputError:
        return
    event("compared")
    cuts = sorted(rng.integers(0, table.num_rows + 1, n_batches - 1).tolist())
    bounds = [0, *cuts, table.num_rows]
    parts = [table.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    accs = []
    for part in parts:   # one accumulator per part, merged: as workers would
        acc = CountAccumulator(keys, sens, nulls=nulls, weight="w", dense_cells=dense_cells)
        accs.append(acc.add(part))
    assert merge(accs).to_release().equals(ref)
    one = CountAccumulator(keys, sens, nulls=nulls, weight="w", dense_cells=dense_cells)
    for part in parts:
        one.add(part)
    assert one.to_release().equals(ref)
    assert one.rows_counted == ref.n_rows
    assert Release.from_batches(iter(parts), qi=keys, sensitive=sens, nulls=nulls,
                                weight="w").equals(ref)


def test_weighted_stream_from_parquet(tmp_path):
    """Exported (QI, value, count) rows on disk, streamed: the release of the raw rows."""
    import pyarrow.parquet as pq

    adult = load_adult(["education", "sex", "income"])
    agg = adult.group_by(["education", "sex", "income"]).aggregate([([], "count_all")])
    path = str(tmp_path / "agg.parquet")
    pq.write_table(agg, path, row_group_size=7)
    rel = Release.from_batches(path, qi=["education", "sex"], sensitive="income",
                               weight="count_all", batch_size=5)
    assert rel.equals(Release.from_table(adult, qi=["education", "sex"], sensitive="income"))


def test_accumulator_weight_bad_input():
    from fastpriv import CountAccumulator

    with pytest.raises(InputTypeError, match="weight must be a column name"):
        CountAccumulator(["g"], "s", weight=1)
    with pytest.raises(InputError, match="also a key or sensitive"):
        CountAccumulator(["g"], "s", weight="s")
    acc = CountAccumulator(["g"], "s", weight="w")
    with pytest.raises(InputError, match="negative"):
        acc.add(pa.table({"g": [1], "s": ["a"], "w": [-2]}))
    with pytest.raises(InputError, match="w"):
        acc.add(pa.table({"g": [1], "s": ["a"]}))
