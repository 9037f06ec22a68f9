"""k-map, δ-presence and the risk against a population table as folds on every engine.

The three read the data's classes only through the (records f_j, people F_j) pairs, the
population's totals and three witness classes: the
:class:`~fastpriv.class_histogram.PopulationHistogram`. In memory they are computed from
it too, so a summary merged from any split of the classes, and each engine's
``population_histogram`` (DuckDB: the join streamed back in batches; Spark: one summary
per partition of the join; Dask: the last task), give the in-memory answer exactly —
values, witnesses, refusals — on random tables with nulls, NaN, ties and weights.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import InputError, population, pushdown, risk, spark
from fastpriv.class_histogram import PopulationHistogram
from tests.engines import tables
from tests.spark_session import local_session
from tests.test_engine_folds import pd_types


@pytest.fixture(scope="module")
def spark_session():
    return local_session("fastpriv-population-folds", threads=1)


def _case(data, **kinds) -> tuple[pa.Table, pa.Table, list[str], dict]:
    """A population (each drawn row 1–3 times) and a sample of it with weights.

    The sample takes a prefix of the rows (the rest are population-only classes), each
    with a weight usually at most its people (sometimes more: refused, as in memory).
    """
    table, keys, _ = data.draw(tables(max_rows=25, **kinds), label="table")
    n = table.num_rows
    people = data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n), label="people")
    loose = data.draw(st.integers(0, 9), label="loose") == 0
    weights = [data.draw(st.integers(0, p + 1 if loose else p), label="w") for p in people]
    m = data.draw(st.integers(1, n), label="sample rows")
    base = table.select(keys)
    pop = base.take(pa.array(np.repeat(np.arange(n), people)))
    sample = base.slice(0, m).append_column("w", pa.array(weights[:m], pa.int64()))
    kw = {"weight": data.draw(st.sampled_from([None, "w"]), label="weight"),
          "nulls": data.draw(st.sampled_from(["value", "drop", "error"]), label="nulls")}
    return sample, pop, keys, kw


def _answers(fn) -> tuple:
    """k-map, δ-presence and risk of ``fn(model)``, or "refused" (bad input)."""
    try:
        out = []
        for model in (population.k_map, population.delta_presence, risk.audit):
            d = fn(model).to_dict()
            if "params" in d and "weight" in d["params"]:
                d["params"] = {k: v for k, v in d["params"].items() if k != "weight"}
            out.append(d)
        return ("ok", out)
    except InputError:
        return ("refused",)


def _in_memory(sample, pop, keys, kw) -> tuple:
    return _answers(lambda model: model(sample, qi=keys, population=pop, **kw))


def _of(summary_fn) -> tuple:
    try:
        summary = summary_fn()
    except InputError:
        return ("refused",)
    return _answers(lambda model: model(summary))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(data=st.data())
def test_summary_merged_from_any_split_equals_in_memory(data):
    sample, pop, keys, kw = _case(data)
    want = _in_memory(sample, pop, keys, kw)
    try:
        match = risk.match_population(risk.class_counts(sample, qi=keys, **kw), pop)
    except InputError:
        assert want == ("refused",)
        return
    classes = match.sample
    cut = data.draw(st.integers(0, classes.n_classes), label="cut")
    pop_cut = data.draw(st.integers(0, match.n_population), label="population cut")
    parts = []
    for i, (a, b, people) in enumerate(((0, cut, pop_cut), (cut, classes.n_classes,
                                                            match.n_population - pop_cut))):
        # the population's totals may fall anywhere: they add
        n_cls = match.n_population_classes if i == 0 else 0
        if b > a:
            part = risk.ClassCounts(classes.qi, classes.keys.slice(a, b - a),
                                    classes.sizes[a:b], nulls=classes.nulls)
            parts.append(PopulationHistogram.from_matched(
                part, match.big_f[a:b], n_population=people, n_population_classes=n_cls))
        else:
            parts.append(PopulationHistogram.population_only(
                classes.qi, classes.nulls, n_population=people, n_population_classes=n_cls))
    order = data.draw(st.permutations(parts), label="order")
    assert _of(lambda: order[0].merge(*order[1:])) == want


@settings(max_examples=80, deadline=None, derandomize=True)
@given(data=st.data())
def test_duckdb_and_dask_population_folds_equal_in_memory(data, tmp_path_factory):
    import os
    import tempfile

    import dask
    import duckdb
    import pyarrow.parquet as pq

    from fastpriv import distributed

    sample, pop, keys, kw = _case(data)
    want = _in_memory(sample, pop, keys, kw)
    batch = data.draw(st.integers(1, 4), label="batch_size")
    split_out = data.draw(st.integers(1, 4), label="split_out")   # classes split by hash
    assert _of(lambda: pushdown.population_histogram(
        duckdb.from_arrow(sample), qi=keys, population=duckdb.from_arrow(pop),
        batch_size=batch, split_out=split_out, **kw)) == want
    folder = tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())
    cut = data.draw(st.integers(0, sample.num_rows), label="cut")
    for name, t in (("s/a", sample.slice(0, cut)), ("s/b", sample.slice(cut)), ("p/a", pop)):
        os.makedirs(os.path.dirname(f"{folder}/{name}"), exist_ok=True)
        pq.write_table(t, f"{folder}/{name}.parquet")
    assert _of(lambda: pushdown.population_histogram(
        f"{folder}/s", qi=keys, population=f"{folder}/p", split_out=split_out, **kw)) == want
    with dask.config.set(scheduler="synchronous"):
        got = _of(lambda: distributed.population_histogram(
            f"{folder}/s", qi=keys, population=f"{folder}/p", split_every=2,
            split_out=split_out, **kw))
    assert got == want


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_stream_population_fold_equals_in_memory(data):
    from fastpriv import stream_counts

    sample, pop, keys, kw = _case(data)
    want = _in_memory(sample, pop, keys, kw)
    batch = data.draw(st.integers(1, 4), label="batch_size")
    split_out = data.draw(st.sampled_from([None, 1, 2, 3, 5]), label="split_out")
    assert _of(lambda: stream_counts.population_histogram(
        sample.to_batches(max_chunksize=batch), qi=keys,
        population=iter(pop.to_batches(max_chunksize=batch)), batch_size=batch,
        split_out=split_out, **kw)) == want


@settings(max_examples=10, deadline=None, derandomize=True)
@given(data=st.data())
def test_spark_population_fold_equals_in_memory(spark_session, data):
    # the kinds a pandas round trip keeps (dates and int32: tests/test_engines_classes.py)
    sample, pop, keys, kw = _case(data, key_kinds=("int64", "string", "float", "bool"))
    want = _in_memory(sample, pop, keys, kw)

    def frame(t):
        return spark_session.createDataFrame(t.to_pandas(types_mapper=pd_types))

    assert _of(lambda: spark.population_histogram(frame(sample), qi=keys,
                                                  population=frame(pop), **kw)) == want


def test_spark_population_fold_sends_summaries_not_classes(spark_session, monkeypatch):
    """20,000 classes: the driver receives one summary per partition of the join."""
    rng = np.random.default_rng(7)
    pop = pa.table({"a": rng.integers(0, 200, 60_000), "b": rng.integers(0, 100, 60_000)})
    sample = pop.slice(0, 30_000)
    collected = []
    real = spark._collect
    monkeypatch.setattr(spark, "_collect",
                        lambda frame: collected.append(real(frame)) or collected[-1])
    summary = spark.population_histogram(spark_session.createDataFrame(sample.to_pandas()),
                                         qi=["a", "b"],
                                         population=spark_session.createDataFrame(
                                             pop.to_pandas()))
    monkeypatch.undo()
    assert summary.n_classes > 15_000
    assert sum(c.num_rows for c in collected) <= 2     # spark.sql.shuffle.partitions
    for model in (population.k_map, population.delta_presence, risk.audit):
        assert model(summary).to_dict() == model(sample, qi=["a", "b"],
                                                 population=pop).to_dict()


def test_spark_population_fold_refuses_qi_of_another_kind(spark_session):
    sample = spark_session.createDataFrame(pa.table({"a": [1, 2]}).to_pandas())
    pop = spark_session.createDataFrame(pa.table({"a": ["1", "2"]}).to_pandas())
    with pytest.raises(InputError, match="types differ"):
        spark.population_histogram(sample, qi="a", population=pop)


def test_population_folds_refuse_clearly(tmp_path):
    import duckdb

    sample = pa.table({"a": [1, 1, 2]})
    pop = pa.table({"a": [1, 2, 2, 3]})
    with pytest.raises(InputError, match="population must contain the data"):
        pushdown.population_histogram(duckdb.from_arrow(sample), qi="a",
                                      population=duckdb.from_arrow(pop))
    other = duckdb.connect()
    with pytest.raises(InputError, match="another connection"):
        pushdown.population_histogram(duckdb.from_arrow(sample), qi="a",
                                      population=other.from_arrow(pa.table({"a": [1]})))
    with pytest.raises(InputError, match="types differ"):
        pushdown.population_histogram(duckdb.from_arrow(sample), qi="a",
                                      population=duckdb.from_arrow(pa.table({"a": ["x"]})))
    with pytest.raises(InputError, match="no such file"):
        pushdown.population_histogram(duckdb.from_arrow(sample), qi="a",
                                      population=str(tmp_path / "missing"))
    summary = risk.match_population(risk.class_counts(sample, qi=["a"]),
                                    pa.table({"a": [1, 1, 2, 3]})).histogram()
    with pytest.raises(InputError, match="leave population= out"):
        risk.audit(summary, population=pop)
    with pytest.raises(InputError, match="leave population="):
        population.k_map(summary, population=pop)
    with pytest.raises(InputError, match="different QI"):
        summary.merge(PopulationHistogram.population_only(["b"], "error", n_population=1,
                                                          n_population_classes=1))



@pytest.mark.parametrize("kinds", [("int32", "double"), ("int64", "int16"),
                                   ("decimal", "int64"), ("double", "float")])
def test_duckdb_population_buckets_meet_across_column_types(kinds):
    """The data and the population hash their QI in the type the join compares them in:
    in buckets, a class of one type still meets its class of the other."""
    import duckdb

    def column(kind: str, values: list) -> pa.Array:
        return (pa.array([None if v is None else __import__("decimal").Decimal(v)
                          for v in values], pa.decimal128(6, 0)) if kind == "decimal"
                else pa.array(values, kind))

    values = list(range(200)) + [None]
    sample = pa.table({"a": column(kinds[0], values), "b": column(kinds[0], values[::-1])})
    pop = pa.table({"a": column(kinds[1], values * 2), "b": column(kinds[1], values[::-1] * 2)})
    one, many = (pushdown.population_histogram(
        duckdb.from_arrow(sample), qi=["a", "b"], population=duckdb.from_arrow(pop),
        nulls="value", split_out=b) for b in (1, 5))
    for model in (population.k_map, population.delta_presence):
        assert model(many).to_dict() == model(one).to_dict()
    assert population.k_map(many).value == 2


def test_duckdb_population_fold_reads_nan_keys_of_parquet_files_as_nulls(tmp_path):
    """The population read as ``read_parquet`` in the join sees NaN as in memory."""
    import pyarrow.parquet as pq

    t = pa.table({"k": pa.array([1.5, float("nan"), float("nan"), -2.25])})
    pq.write_table(t, tmp_path / "a.parquet")
    summary = pushdown.population_histogram(str(tmp_path), qi="k", population=str(tmp_path),
                                            nulls="value")
    assert population.k_map(summary).to_dict() == population.k_map(
        t, qi="k", population=t, nulls="value").to_dict() | {
            "params": {**population.k_map(t, qi="k", population=t,
                                          nulls="value").params, "weight": None}}
