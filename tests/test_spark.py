"""fastpriv.spark on a real local Spark session (local[2], one session for the module):
the release counted on the cluster — Spark's GROUP BY, or fastpriv's CountAccumulator per
partition inside mapInArrow — equals the in-memory release, audits included.

Needs PySpark (the 'spark' extra, part of '.[all]') and a Java runtime; without them these
tests FAIL with the install command (.ci/run installs both)."""

import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, Release
from fastpriv.datasets import load_adult
from tests.engines import assert_same, audits, tables
from tests.spark_session import local_session

pytestmark = pytest.mark.slow   # every test starts or uses a local Spark session (a JVM)

METHODS = [("groupby", "driver"), ("partitions", "driver"), ("partitions", "cluster")]


@pytest.fixture(scope="module")
def spark():
    """One local[2] session for every test of this module. It is not stopped: the smoke run
    of benchmarks/bench_engines.py later in the same pytest process reuses it (a second JVM
    start costs ~10-20 s); the JVM exits with the interpreter."""
    _warm_kernels()
    return local_session("fastpriv-tests", threads=2)


def _warm_kernels():
    """Compile the executor-side kernels here first: the Python workers then load them from
    the on-disk cache instead of compiling concurrently (the race `fastpriv warmup` avoids)."""
    from fastpriv.spark import _count_partition

    t = pa.table({"g": [1, 2, 1], "q": ["a", "b", "a"], "s": ["x", None, "y"]})
    for keys in (["g"], ["g", "q"], ["q"]):
        out = pa.Table.from_batches(list(_count_partition(
            iter(t.to_batches()), keys=keys, sensitive="s", count="n")))
        Release.from_counts(out, group=keys, sensitive="s", count="n", nulls="value")


def _frame(spark, table: pa.Table):
    """A Spark DataFrame of ``table``: from Arrow on PySpark 4; on 3.5 (whose
    ``createDataFrame`` does not take an Arrow table) from its rows with the Arrow schema,
    which keeps nulls apart from NaN (a pandas round trip would not)."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:
        return spark.createDataFrame(table)
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.createDataFrame(table.to_pylist(), schema=from_arrow_schema(table.schema))


@pytest.fixture(scope="module")
def adult_df(spark):
    adult = load_adult(["age", "sex", "race", "education", "occupation", "income"])
    return adult, _frame(spark, adult).repartition(3)


# ------------------------------------------------------------------ errors
def test_missing_pyspark_names_the_extra(monkeypatch):
    import fastpriv.spark as fs

    monkeypatch.setitem(sys.modules, "pyspark.sql", None)   # import pyspark.sql fails
    with pytest.raises(ImportError, match=r"pip install 'fastpriv\[spark\]'.*openjdk"):
        fs.release(None, group="g", sensitive="s")


def test_bad_input(spark):
    import fastpriv.spark as fs

    df = _frame(spark, pa.table({"g": [1], "s": ["a"]}))
    cases = [
        (dict(df=pa.table({"g": [1], "s": ["a"]}), group="g"), InputTypeError,
         "df must be a pyspark.sql.DataFrame"),
        (dict(df=df), InputError, "exactly one of group="),
        (dict(df=df, group="g", qi=["g"]), InputError, "exactly one of group="),
        (dict(df=df, qi=[]), InputError, "qi: at least one column"),
        (dict(df=df, group="nope"), InputError, "nope"),
        (dict(df=df, group="s"), InputError, "also a group column"),
        (dict(df=df, group="g", method="collect"), InputError, "method must be one of"),
        (dict(df=df, group="g", merge="nowhere"), InputError, "merge must be one of"),
        (dict(df=df, group="g", nulls="skip"), InputError, "nulls must be one of"),
    ]
    for kw, exc, match in cases:
        data = kw.pop("df")
        with pytest.raises(exc, match=match):
            fs.release(data, sensitive="s", **kw)
    with pytest.raises(InputError, match="data is empty"):
        fs.release(df.limit(0), group="g", sensitive="s")
    with pytest.raises(InputError, match="null"):
        fs.release(_frame(spark, pa.table({"g": [1, None], "s": ["a", "b"]})),
                   group="g", sensitive="s")


# ------------------------------------------------------------------ same answers
@pytest.mark.parametrize("method, merge", METHODS)
@pytest.mark.parametrize("kw", [
    {"qi": ["age", "sex", "race"], "sensitive": "occupation"},
    {"group": "education", "sensitive": "income"},
])
def test_adult_on_spark_equals_in_memory(spark, adult_df, method, merge, kw):
    import fastpriv.spark as fs

    adult, df = adult_df
    ref = Release.from_table(adult, **kw)
    ref_audits = audits(ref)
    assert all(v[0] == "ok" for v in ref_audits.values())
    rel = fs.release(df, method=method, merge=merge, **kw)
    assert_same(rel, ref, ref_audits)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(max_rows=20), kind=st.sampled_from(["qi", "group"]),
       nulls=st.sampled_from(["error", "drop", "value"]), way=st.sampled_from(METHODS),
       n_parts=st.integers(1, 3))
@example(data=(pa.table({"k0 float": [float("nan"), 1.5, float("nan")],
                         "s": pa.array([None, 2, 2], pa.int64()), "unused": [0, 1, 2]}),
               ["k0 float"], "s"), kind="group", nulls="value", way=METHODS[1], n_parts=2)
def test_random_tables_on_spark_equal_in_memory(spark, data, kind, nulls, way, n_parts):
    import fastpriv.spark as fs

    table, keys, sens = data
    df = _frame(spark, table).repartition(n_parts)
    method, merge = way
    try:
        ref = Release.from_table(table, sensitive=sens, nulls=nulls, **{kind: keys})
    except InputError:   # nulls="error" with nulls, or nothing left after dropping
        with pytest.raises(InputError):
            fs.release(df, sensitive=sens, nulls=nulls, method=method, merge=merge,
                       **{kind: keys})
        return
    event("compared")
    rel = fs.release(df, sensitive=sens, nulls=nulls, method=method, merge=merge,
                     **{kind: keys})
    assert_same(rel, ref)


def test_partition_states_are_merged_on_the_driver(spark, adult_df):
    """merge="driver": one block of triples per partition (no shuffle), summed by
    Release.from_counts; merge="cluster" and groupby: each (group, value) pair once."""
    import fastpriv.spark as fs

    adult, df = adult_df
    kw = {"qi": ["age", "sex"], "sensitive": "occupation"}
    pairs = Release.from_table(adult, **kw).codes.size
    parts = fs.counts(df, method="partitions", merge="driver", **kw)
    assert pairs < parts.num_rows <= 3 * pairs                      # 3 partitions
    assert parts.column("count").to_numpy().sum() == adult.num_rows
    assert fs.counts(df, method="partitions", merge="cluster", **kw).num_rows == pairs
    assert fs.counts(df, **kw).num_rows == pairs


def test_parquet_read_by_spark_equals_local_file(spark, tmp_path):
    import fastpriv.spark as fs

    path = str(tmp_path / "adult.parquet")
    pq.write_table(load_adult(["age", "sex", "occupation"]), path, row_group_size=10_000)
    ref = Release.from_table(path, qi=["age", "sex"], sensitive="occupation")
    for method, merge in METHODS[:2]:
        rel = fs.release(spark.read.parquet(path), qi=["age", "sex"], sensitive="occupation",
                         method=method, merge=merge)
        assert_same(rel, ref)


def test_awkward_column_names(spark):
    """Dots, spaces, backquotes and a column named 'count' are plain names."""
    import fastpriv.spark as fs

    t = pa.table({"a.b c": [1, 1, 2, 2], "x`y": ["p", "p", "q", "p"],
                  "count": ["u", "v", "u", "u"]})
    df = _frame(spark, t)
    ref = Release.from_table(t, qi=["a.b c", "x`y"], sensitive="count")
    for method, merge in METHODS:
        out = fs.counts(df, qi=["a.b c", "x`y"], sensitive="count", method=method,
                        merge=merge)
        assert out.column_names == ["a.b c", "x`y", "count", "_count"]
        assert_same(fs.release(df, qi=["a.b c", "x`y"], sensitive="count", method=method,
                               merge=merge), ref)


def test_spark_merges_negative_zero(spark):
    """-0.0 and 0.0 are one key on Spark and in memory alike."""
    import fastpriv.spark as fs

    t = pa.table({"g": [0.0, -0.0, 1.0], "s": ["a", "b", "a"]})
    rel = fs.release(_frame(spark, t), group="g", sensitive="s")
    assert rel.n_groups == 2 and rel.sizes.tolist() == [2, 1]
    local = Release.from_table(t, group="g", sensitive="s")
    assert local.n_groups == 2 and local.sizes.tolist() == [2, 1]
