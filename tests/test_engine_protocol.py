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

from fastpriv import anonymize, distributed, engines, pushdown, spark, stream_counts, streaming

#: operation -> the keywords every engine's function takes; the functions are those the
#: package declares (``fastpriv.engines.OPERATIONS``), checked against the modules below
KEYWORDS = {
    "row_counts": {"qi", "group", "sensitive", "weight", "count"},
    "class_counts": {"qi", "weight", "nulls", "sampling_weight"},
    "class_histogram": {"qi", "weight", "nulls", "sampling_weight", "threshold"},
    "population_histogram": {"qi", "population", "weight", "nulls"},
    "robustness_audit": {"qi", "group", "sensitive", "r", "weight", "knowledge",
                         "sensitive_values", "max_set_size", "epsilon", "confidence",
                         "min_support", "nulls", "max_items"},
    "foreground_audit": {"qi", "group", "sensitive", "r", "weight", "sensitive_values",
                         "max_set_size", "epsilon", "confidence", "min_support", "nulls",
                         "max_items"},
    "audit": {"sensitive", "group", "qi", "skylines", "classic", "l", "q", "order", "nulls",
              "weight", "k", "options"},
    "anonymize": {"output", "qi", "sensitive", "weight"},
}
PROTOCOL = {op: (KEYWORDS[op], {e: engines.implementation(op, e) for e in engines.ENGINES})
            for op in engines.OPERATIONS}


def test_the_package_declares_each_engine_s_function():
    """``fastpriv.engines`` routes each operation to the module function written for it."""
    assert set(KEYWORDS) == set(engines.OPERATIONS)
    assert PROTOCOL["row_counts"][1] == {
        "duckdb": pushdown.row_counts, "spark": spark.row_counts,
        "dask": distributed.row_counts, "stream": stream_counts.row_counts}
    assert PROTOCOL["audit"][1] == {
        "duckdb": pushdown.audit, "spark": spark.audit,
        "dask": distributed.groupwise_audit, "stream": streaming.clustered_audit}
    assert PROTOCOL["anonymize"][1]["stream"] is anonymize.release_out_of_core
    for op, (_, fns) in PROTOCOL.items():
        for engine, fn in fns.items():
            assert fn.__name__ == engines.OPERATIONS[op][engine].split(":")[1]


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
