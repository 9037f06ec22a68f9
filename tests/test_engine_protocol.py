"""Every engine offers the same operations under the same keywords.

Where the data lives — DuckDB (:mod:`fastpriv.pushdown`), Spark (:mod:`fastpriv.spark`), Dask
(:mod:`fastpriv.distributed`), record batches (:mod:`fastpriv.stream_counts`,
:mod:`fastpriv.streaming`) — the operations the models need are the same: count the
distinct rows, count the QI classes, fold the classes into their size histogram (and,
matched with a population table, their (records, people) pairs), fold the
groups into the audit's summaries, and write a release. Each engine's function for an
operation takes the data first and the same keyword-only names for the same ideas (its own
tuning knobs — ``split_every``, ``split_out``, ``batch_size``, ``clustered``,
``partitions`` — besides); this keeps them
one interface.
"""

from __future__ import annotations

import inspect

import pytest

from fastpriv import anonymize, distributed, pushdown, spark, stream_counts, streaming

#: operation -> (the keywords every engine's function takes, {engine: function})
PROTOCOL = {
    "row counts": ({"qi", "group", "sensitive", "weight", "count"}, {
        "duckdb": pushdown.row_counts, "spark": spark.row_counts,
        "dask": distributed.row_counts, "stream": stream_counts.row_counts}),
    "class counts": ({"qi", "weight", "nulls", "sampling_weight"}, {
        "duckdb": pushdown.class_counts, "spark": spark.class_counts,
        "dask": distributed.class_counts, "stream": stream_counts.class_counts}),
    "class histogram": ({"qi", "weight", "nulls"}, {
        "duckdb": pushdown.class_histogram, "spark": spark.class_histogram,
        "dask": distributed.class_histogram, "stream": stream_counts.class_histogram}),
    "population histogram": ({"qi", "population", "weight", "nulls"}, {
        "duckdb": pushdown.population_histogram, "spark": spark.population_histogram,
        "dask": distributed.population_histogram,
        "stream": stream_counts.population_histogram}),
    "row-level fold": ({"qi", "group", "sensitive", "r", "weight", "knowledge",
                        "sensitive_values", "max_set_size", "epsilon", "confidence",
                        "min_support", "nulls", "max_items"}, {
        "duckdb": pushdown.robustness_audit, "spark": spark.robustness_audit,
        "dask": distributed.robustness_audit, "stream": stream_counts.robustness_audit}),
    "group fold": ({"sensitive", "group", "qi", "skylines", "classic", "l", "q", "order",
                    "nulls", "weight", "k", "options"}, {
        "duckdb": pushdown.audit, "spark": spark.audit,
        "dask": distributed.groupwise_audit, "stream": streaming.clustered_audit}),
    "release": ({"output", "qi", "sensitive", "weight"}, {
        "duckdb": pushdown.anonymize, "spark": spark.anonymize,
        "dask": distributed.anonymize, "stream": anonymize.release_out_of_core}),
}


@pytest.mark.parametrize("operation", list(PROTOCOL))
def test_every_engine_takes_the_operation_s_keywords(operation):
    common, engines = PROTOCOL[operation]
    for engine, fn in engines.items():
        params = inspect.signature(fn).parameters
        first = next(iter(params.values()))
        assert first.name == "data" and first.kind is first.POSITIONAL_OR_KEYWORD, \
            f"{operation} on {engine}: the data comes first"
        keyword_only = {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
        missing = common - keyword_only
        assert not missing, f"{operation} on {engine} ({fn.__qualname__}) lacks {missing}"


def test_the_folds_finish_into_one_result_with_one_answer(tmp_path):
    """DuckDB, Dask and a sorted stream fold the same table into equal StreamAudits
    (Spark's: ``tests/test_engine_folds.py``, which starts a session)."""
    import dask
    import duckdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastpriv.folds import StreamAudit

    rng = np.random.default_rng(7)
    t = pa.table({"g": np.sort(rng.integers(0, 50, 600)), "s": rng.integers(0, 4, 600)})
    pq.write_table(t, tmp_path / "t.parquet")
    kw = {"sensitive": "s", "group": "g", "k": 2, "skylines": {"*": [(1, 1, 1, 0.8)]}}
    with dask.config.set(scheduler="synchronous"):
        got = [pushdown.audit(duckdb.from_arrow(t), **kw),
               distributed.groupwise_audit(str(tmp_path / "t.parquet"), **kw),
               streaming.clustered_audit(t, batch_size=64, **kw)]
    assert all(isinstance(r, StreamAudit) for r in got)
    models = [{k: (m["value"], m["worst_label"]) for k, m in r.classic.models.items()}
              for r in got]
    assert models[0] == models[1] == models[2]
    assert got[0].skyline.to_dict() == got[1].skyline.to_dict() == got[2].skyline.to_dict()
    assert got[0].ck_safety.value == got[1].ck_safety.value == got[2].ck_safety.value
