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
