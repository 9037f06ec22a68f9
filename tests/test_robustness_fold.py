"""r-robustness as a fold over groups (:mod:`fastpriv.robustness_fold`).

The knowledge is derived from the distinct (QI, sensitive) cells; each set of complete
groups is audited with it; the summaries merge. On random tables (nulls, NaN, ties,
weights, every null policy) any split of the groups, merged in any order, gives
``RobustnessSummary.from_audit`` of the in-memory audit of the same rows — and so do
:func:`fastpriv.pushdown.robustness_audit` (DuckDB's rows streamed by group),
:func:`fastpriv.distributed.robustness_audit` (Dask partitions of complete groups),
:func:`fastpriv.stream_counts.robustness_audit` (batches sorted by group) and
:func:`fastpriv.spark.robustness_audit` (on Spark's executors).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import InputError, pushdown, robustness, spark
from fastpriv.robustness_fold import RobustnessSummary, audit_part, prepare
from tests.engines import tables
from tests.spark_session import local_session
from tests.test_engine_folds import pd_types

R = 2.5
AUDIT = {"min_support": 2, "max_set_size": 2}


@pytest.fixture(scope="module")
def spark_session():
    return local_session("fastpriv-robustness-fold", threads=1)


def _case(data, **kinds) -> tuple[pa.Table, list[str], dict]:
    table, qi, _ = data.draw(tables(max_rows=30, **kinds), label="table")
    n = table.num_rows
    # float group ids: NaN is a null, one group with the null rows (split across batches)
    floats = data.draw(st.booleans(), label="float groups")
    ids = st.sampled_from([0.0, 1.5, float("nan")]) if floats else st.integers(0, 5)
    groups = data.draw(st.lists(st.one_of(ids, st.none()) if data.draw(
        st.booleans(), label="null groups") else ids, min_size=n, max_size=n),
        label="groups")
    weights = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n), label="w")
    table = table.append_column("g", pa.array(groups, pa.float64() if floats else pa.int64())
                                ).append_column("w", pa.array(weights, pa.int64()))
    present = sorted({v for v in table.column("s").to_pylist() if v is not None}, key=str)
    kw = {"weight": data.draw(st.sampled_from([None, "w"]), label="weight"),
          "nulls": data.draw(st.sampled_from(["value", "drop", "error"]), label="nulls"),
          # one value tested (absent from some groups, or from every row left), or all
          "sensitive_values": data.draw(st.sampled_from([None] + [[v] for v in present]),
                                        label="sensitive_values")}
    return table, qi, kw


def _counted(table: pa.Table, cols: list[str], weight: str | None) -> pa.Table:
    agg = [([], "count_all")] if weight is None else [(weight, "sum")]
    return table.group_by(cols).aggregate(agg).rename_columns(cols + ["n"])


def _rows(table, qi, weight) -> pa.Table:
    return pushdown.finish_row_counts(_counted(table, qi + ["g", "s"], weight), qi=qi,
                                      group="g", sensitive="s", count="n")


def _in_memory(table, qi, kw, max_items: int = 100) -> tuple:
    try:
        rows = _rows(table, qi, kw["weight"])
        res = robustness.audit(rows, qi=qi, group="g", sensitive="s", r=R, weight="n",
                               nulls=kw["nulls"], sensitive_values=kw["sensitive_values"],
                               **AUDIT)
        return ("ok", RobustnessSummary.from_audit(res, rows, group=["g"],
                                                   max_items=max_items).to_dict())
    except InputError:
        return ("refused",)


def _pass_one(table, qi, kw, max_items: int) -> dict:
    """The knowledge from the cells and the parts' arguments (robustness_fold.prepare)."""
    source = table
    if kw["nulls"] == "drop":                   # the rows the audit keeps (NaN a null)
        source = table.filter(pa.compute.invert(pa.compute.is_null(table.column("g"),
                                                                    nan_is_null=True)))
    cells = pushdown.finish_row_counts(_counted(source, qi + ["s"], kw["weight"]), qi=qi,
                                       group=[], sensitive="s", count="n")
    return prepare(lambda: cells, qi=qi, sensitive="s", count="n", r=R, nulls=kw["nulls"],
                   sensitive_values=kw["sensitive_values"], max_items=max_items, **AUDIT)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(data=st.data())
def test_any_split_of_the_groups_merges_into_the_in_memory_summary(data):
    table, qi, kw = _case(data)
    top = data.draw(st.sampled_from([1, 3, 100]), label="max_items")   # ties at the cut
    want = _in_memory(table, qi, kw, top)
    try:
        rows = _rows(table, qi, kw["weight"])
        audit = _pass_one(table, qi, kw, top)
        g = [None if v != v else v for v in rows.column("g").to_pylist()]   # NaN: null
        labels = sorted(set(g), key=lambda v: (v is None, v or 0))
        cut = data.draw(st.integers(0, len(labels)), label="cut")
        parts = [audit_part(rows.filter(pa.array([x in side for x in g])), qi=qi,
                            group=["g"], sensitive="s", count="n", **audit)
                 for side in (set(labels[:cut]), set(labels[cut:]))]
        parts = data.draw(st.permutations([p for p in parts if p is not None]), label="order")
        if not parts:
            raise InputError("no row")
        got = ("ok", parts[0].merge(*parts[1:]).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_duckdb_robustness_fold_equals_in_memory(data):
    import duckdb

    table, qi, kw = _case(data)
    want = _in_memory(table, qi, kw)
    batch = data.draw(st.integers(1, 8), label="batch_size")
    try:
        given = {}
        if data.draw(st.booleans(), label="knowledge given"):     # pass 1 skipped
            given["knowledge"] = _pass_one(table, qi, kw, 100)["knowledge"]
        split_out = data.draw(st.sampled_from(["auto", 1, 2, 3]), label="split_out")
        got = ("ok", pushdown.robustness_audit(duckdb.from_arrow(table), qi=qi, group="g",
                                               sensitive="s", r=R, batch_size=batch, **kw,
                                               split_out=split_out, **given,
                                               **AUDIT).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_stream_robustness_fold_equals_in_memory(data):
    from fastpriv import stream_counts

    table, qi, kw = _case(data)
    want = _in_memory(table, qi, kw)
    table = table.sort_by([("g", "ascending")], null_placement="at_end")
    batch = data.draw(st.integers(1, 8), label="batch_size")
    try:
        got = ("ok", stream_counts.robustness_audit(table, qi=qi, group="g", sensitive="s",
                                                    r=R, batch_size=batch, **kw,
                                                    **AUDIT).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


def test_stream_robustness_fold_needs_sorted_groups_and_two_readings():
    from fastpriv import stream_counts

    t = pa.table({"a": [1, 2, 1, 2], "g": [0, 1, 0, 1], "s": ["x", "y", "x", "y"]})
    with pytest.raises(InputError, match="not sorted by"):
        stream_counts.robustness_audit(t, qi="a", group="g", sensitive="s", r=2,
                                       min_support=1, batch_size=1)
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
    with pytest.raises(InputError, match="read once"):
        stream_counts.robustness_audit(reader, qi="a", group="g", sensitive="s", r=2,
                                       min_support=1)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_dask_robustness_fold_equals_in_memory(data, tmp_path_factory):
    import tempfile

    import dask
    import pyarrow.parquet as pq

    from fastpriv import distributed

    table, qi, kw = _case(data)
    want = _in_memory(table, qi, kw)
    folder = tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())
    g = [None if x != x else x for x in table.column("g").to_pylist()]   # NaN: null
    cut = data.draw(st.integers(0, 5), label="cut")
    for i, side in enumerate(([x is not None and x < cut for x in g],
                              [x is None or x >= cut for x in g])):
        pq.write_table(table.filter(pa.array(side)), f"{folder}/part-{i}.parquet")
    try:
        with dask.config.set(scheduler="synchronous"):
            got = ("ok", distributed.robustness_audit(folder, qi=qi, group="g", sensitive="s",
                                                      r=R, split_every=2, **kw,
                                                      **AUDIT).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


def test_dask_robustness_fold_refuses_a_group_split_over_partitions(tmp_path):
    import dask
    import pyarrow.parquet as pq

    from fastpriv import distributed

    t = pa.table({"a": [1, 2, 1, 2], "g": [0, 1, 1, 2], "s": ["x", "y", "x", "y"]})
    pq.write_table(t.slice(0, 2), tmp_path / "a.parquet")
    pq.write_table(t.slice(2), tmp_path / "b.parquet")
    with dask.config.set(scheduler="synchronous"), \
            pytest.raises(InputError, match="group 1 is split over 2 partitions"):
        distributed.robustness_audit(str(tmp_path), qi="a", group="g", sensitive="s", r=2,
                                     min_support=1)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(data=st.data())
def test_spark_robustness_fold_equals_in_memory(spark_session, data):
    table, qi, kw = _case(data, key_kinds=("int64", "string", "float", "bool"))
    want = _in_memory(table, qi, kw)
    df = spark_session.createDataFrame(table.to_pandas(types_mapper=pd_types))
    try:
        got = ("ok", spark.robustness_audit(df, qi=qi, group="g", sensitive="s", r=R,
                                            partitions=2, **kw, **AUDIT).to_dict())
    except InputError:
        got = ("refused",)
    assert got == want


def test_spark_robustness_fold_sends_one_summary_per_partition(spark_session, monkeypatch):
    """3,000 groups: the driver receives the cells of pass 1 and one state per partition."""
    rng = np.random.default_rng(3)
    n = 12_000
    t = pa.table({"a": rng.integers(0, 5, n), "b": rng.integers(0, 3, n),
                  "g": rng.integers(0, 3_000, n), "s": rng.choice(["x", "y", "z"], n)})
    collected = []
    real = spark._collect
    monkeypatch.setattr(spark, "_collect",
                        lambda frame: collected.append(real(frame)) or collected[-1])
    got = spark.robustness_audit(spark_session.createDataFrame(t.to_pandas()), qi=["a", "b"],
                                 group="g", sensitive="s", r=R, partitions=3, **AUDIT)
    monkeypatch.undo()
    assert sum(c.num_rows for c in collected) <= 5 * 3 * 3 + 3     # cells + states
    rows = _rows(t, ["a", "b"], None)
    res = robustness.audit(rows, qi=["a", "b"], group="g", sensitive="s", r=R, weight="n",
                           **AUDIT)
    assert got.to_dict() == RobustnessSummary.from_audit(res, rows, group=["g"]).to_dict()
    assert got.n_groups == len(set(t.column("g").to_pylist())) > 2_900
    assert got.summary().startswith(("PASS", "FAIL"))


def test_bad_arguments_are_refused_before_any_pass():
    import duckdb

    t = duckdb.from_arrow(pa.table({"a": [1], "g": [0], "s": ["x"]}))
    with pytest.raises(InputError, match="r"):
        pushdown.robustness_audit(t, qi="a", group="g", sensitive="s", r=0.5)
    with pytest.raises(TypeError, match="mdoel"):
        pushdown.robustness_audit(t, qi="a", group="g", sensitive="s", r=2, mdoel="binary")
    with pytest.raises(InputError, match="sensitive_values"):
        pushdown.robustness_audit(t, qi="a", group="g", sensitive="s", r=2, min_support=1,
                                  sensitive_values=["nope"])
