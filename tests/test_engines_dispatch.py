"""``fastpriv.engines``: one call per operation, run on the engine of the data.

The engine is read from the data (a DuckDB relation, a Dask DataFrame, record batches, a
Parquet path; Spark in ``tests/test_engine_folds.py``'s session) or given as ``engine=``;
the answer is the engine's own function's, called with the same keywords.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastpriv import InputError, InputTypeError, engines, population, risk

dask = pytest.importorskip("dask")


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(8)
    n = 300
    t = pa.table({"age": rng.integers(20, 26, n), "zip": rng.choice(["a", "b"], n),
                  "g": np.sort(rng.integers(0, 40, n)), "s": rng.choice(["x", "y", "z"], n)})
    path = tmp_path / "t.parquet"
    pq.write_table(t, path)
    return t, str(path)


def test_the_engine_is_read_from_the_data(data):
    import dask.dataframe as dd

    t, path = data
    assert engines.engine_of(duckdb.from_arrow(t)) == "duckdb"
    assert engines.engine_of(dd.read_parquet(path)) == "dask"
    assert engines.engine_of(t) == "stream"
    assert engines.engine_of(iter(t.to_batches())) == "stream"
    assert engines.engine_of(path) == "duckdb"            # DuckDB is installed here
    pandas_frame = t.to_pandas()
    assert engines.engine_of(pandas_frame) == "stream"
    assert engines.class_counts(pandas_frame, qi=["age"]).sizes.tolist() == \
        risk.class_counts(t, qi=["age"]).sizes.tolist()
    with pytest.raises(InputError, match="data: no engine reads a dict"):
        engines.engine_of({"age": [1]})


def _answer(x):
    if hasattr(x, "to_dict"):
        return repr(x.to_dict())
    if isinstance(x, pa.Table):
        return x.to_pylist()
    return repr(x)


def test_each_operation_is_the_engine_s_own(data):
    t, path = data
    qi = ["age", "zip"]
    calls = {
        "row_counts": dict(qi=qi, group="g", sensitive="s"),
        "class_counts": dict(qi=qi, nulls="value"),
        "class_histogram": dict(qi=qi),
        "population_histogram": dict(qi=qi, population=path),
        "robustness_audit": dict(qi=qi, group="g", sensitive="s", r=2.0, min_support=2),
        "foreground_audit": dict(qi=qi, group="g", sensitive="s", r=2.0, min_support=2),
        "audit": dict(sensitive="s", group="g", k=2),
    }
    sources = {"duckdb": lambda: duckdb.from_arrow(t), "dask": lambda: path,
               "stream": lambda: t}
    with dask.config.set(scheduler="synchronous"):
        for op, kw in calls.items():
            for engine, source in sources.items():
                if op == "population_histogram" and engine == "stream":
                    kw = dict(kw, population=t)
                got = getattr(engines, op)(source(), engine=engine, **kw)
                want = engines.implementation(op, engine)(source(), **kw)
                assert _answer(got) == _answer(want), (op, engine)
    # the models read an engine's fold as the table: one check that the route is real
    assert risk.audit(engines.class_histogram(path, qi=qi)).to_dict() == \
        risk.audit(t, qi=qi).to_dict()
    assert population.k_map(engines.population_histogram(
        duckdb.from_arrow(t), qi=qi, population=path)).value == \
        population.k_map(t, qi=qi, population=t).value


def test_a_path_on_every_engine_that_reads_paths(data):
    t, path = data
    with dask.config.set(scheduler="synchronous"):
        got = {e: engines.class_counts(path, qi=["age"], engine=e).sizes.tolist()
               for e in ("duckdb", "dask", "stream")}
    assert got["duckdb"] == got["dask"] == got["stream"] == \
        risk.class_counts(t, qi=["age"]).sizes.tolist()


def test_refusals_name_the_parameter(data):
    t, _ = data
    with pytest.raises(InputError, match="engine"):
        engines.class_counts(t, qi=["age"], engine="postgres")
    with pytest.raises(InputError, match="operation"):
        engines.implementation("join", "duckdb")
    with pytest.raises(InputTypeError, match="pyspark"):      # the engine's own refusal
        engines.class_counts(t, qi=["age"], engine="spark")


def test_a_spark_frame_runs_on_spark(data):
    from fastpriv import spark
    from tests.spark_session import local_session

    t, _ = data
    df = local_session("fastpriv-engines-dispatch").createDataFrame(t.to_pandas())
    assert engines.engine_of(df) == "spark"
    got = engines.class_counts(df, qi=["age", "zip"])
    assert got.keys.equals(spark.class_counts(df, qi=["age", "zip"]).keys)
    assert got.sizes.tolist() == risk.class_counts(t, qi=["age", "zip"]).sizes.tolist()
