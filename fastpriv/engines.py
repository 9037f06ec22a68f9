"""One interface to every engine: the operations the models need, run where the data lives.

DuckDB (:mod:`fastpriv.pushdown`), Spark (:mod:`fastpriv.spark`), Dask
(:mod:`fastpriv.distributed`) and record batches (:mod:`fastpriv.stream_counts`,
:mod:`fastpriv.streaming`) implement the same operations under the same keywords
(:data:`OPERATIONS`; ``tests/test_engine_protocol.py`` holds them to it):

=======================  ====================================================================
``row_counts``           the distinct (QI, group, sensitive) rows and their count
``class_counts``         the QI equivalence classes (:class:`~fastpriv.risk.ClassCounts`)
``class_histogram``      the risk's fold: class sizes (with sampling weights: their measures)
``population_histogram`` k-map, δ-presence and the risk against a population: (f, F) pairs
``robustness_audit``     r-robustness as a fold over groups
``foreground_audit``     the foreground-knowledge attack as a fold over groups
``audit``                the group-level models (classical, (c,k)-safety, skyline) folded
``anonymize``            a generalized release written where the data lives
=======================  ====================================================================

Each function here runs the operation on the engine of ``data`` (:func:`engine_of`: a
Spark DataFrame on Spark, a Dask DataFrame on Dask, a DuckDB relation in DuckDB, record
batches or a reader as a stream, a Parquet path in DuckDB when it is installed, else as a
stream), or on ``engine=``, with the keywords given — so code written once runs on any
of them::

    classes = fastpriv.engines.class_counts(df, qi=["zip", "age"])        # df: Spark
    fastpriv.risk.audit(fastpriv.engines.class_histogram("survey/", qi=["zip", "age"]))
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .errors import InputError

ENGINES = ("duckdb", "spark", "dask", "stream")

#: operation -> {engine: "module:function"} (modules of the ``fastpriv`` package)
OPERATIONS: dict[str, dict[str, str]] = {
    "row_counts": {"duckdb": "pushdown:row_counts", "spark": "spark:row_counts",
                   "dask": "distributed:row_counts", "stream": "stream_counts:row_counts"},
    "class_counts": {"duckdb": "pushdown:class_counts", "spark": "spark:class_counts",
                     "dask": "distributed:class_counts",
                     "stream": "stream_counts:class_counts"},
    "class_histogram": {"duckdb": "pushdown:class_histogram",
                        "spark": "spark:class_histogram",
                        "dask": "distributed:class_histogram",
                        "stream": "stream_counts:class_histogram"},
    "population_histogram": {"duckdb": "pushdown:population_histogram",
                             "spark": "spark:population_histogram",
                             "dask": "distributed:population_histogram",
                             "stream": "stream_counts:population_histogram"},
    "robustness_audit": {"duckdb": "pushdown:robustness_audit",
                         "spark": "spark:robustness_audit",
                         "dask": "distributed:robustness_audit",
                         "stream": "stream_counts:robustness_audit"},
    "foreground_audit": {"duckdb": "pushdown:foreground_audit",
                         "spark": "spark:foreground_audit",
                         "dask": "distributed:foreground_audit",
                         "stream": "stream_counts:foreground_audit"},
    "audit": {"duckdb": "pushdown:audit", "spark": "spark:audit",
              "dask": "distributed:groupwise_audit", "stream": "streaming:clustered_audit"},
    "anonymize": {"duckdb": "pushdown:anonymize", "spark": "spark:anonymize",
                  "dask": "distributed:anonymize", "stream": "anonymize:release_out_of_core"},
}


def engine_of(data: Any) -> str:
    """Return the engine that runs where ``data`` lives.

    A Spark DataFrame: ``"spark"``; a Dask DataFrame: ``"dask"``; a DuckDB relation:
    ``"duckdb"``; record batches, a reader, a table or an iterator of batches
    (:func:`fastpriv.stream_counts.is_stream`), a pandas or polars DataFrame: ``"stream"``
    (read in batches); a path: ``"duckdb"`` when DuckDB is installed (it reads unsorted
    Parquet fastest), else ``"stream"``. Anything else is refused naming ``data``.
    """
    import os

    import pyarrow as pa

    package = (type(data).__module__ or "").split(".")[0]   # pandas 3 says "pandas"
    if package == "pyspark":
        return "spark"
    if package in ("dask", "dask_expr"):
        return "dask"
    if package in ("duckdb", "_duckdb"):
        return "duckdb"
    if package in ("pandas", "polars") and hasattr(data, "columns"):
        return "stream"
    if isinstance(data, (str, os.PathLike)):
        try:
            importlib.import_module("duckdb")
        except ImportError:
            return "stream"
        return "duckdb"
    from .stream_counts import is_stream

    if is_stream(data) or isinstance(data, (pa.Table, pa.RecordBatch)):
        return "stream"
    raise InputError(f"data: no engine reads a {type(data).__name__}; give a Spark or Dask "
                     "DataFrame, a DuckDB relation, record batches (a reader, an iterator, a "
                     "pyarrow Table), a pandas or polars DataFrame or a Parquet path")


def implementation(operation: str, engine: str) -> Callable[..., Any]:
    """Return the function of ``engine`` for ``operation`` (:data:`OPERATIONS`)."""
    from ._validation import check_choice

    check_choice(operation, "operation", tuple(OPERATIONS))
    check_choice(engine, "engine", ENGINES)
    module, name = OPERATIONS[operation][engine].split(":")
    return getattr(importlib.import_module(f"fastpriv.{module}"), name)


def _run(operation: str, data: Any, engine: str | None, options: dict) -> Any:
    return implementation(operation, engine_of(data) if engine is None else engine)(
        data, **options)


def row_counts(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Count the distinct (QI, group, sensitive) rows where ``data`` lives.

    ``row_counts`` of the engine (:func:`engine_of`, or ``engine``), e.g.
    :func:`fastpriv.pushdown.row_counts`; ``options`` are its keywords.
    """
    return _run("row_counts", data, engine, options)


def class_counts(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Count the QI equivalence classes where ``data`` lives (the engine's ``class_counts``)."""
    return _run("class_counts", data, engine, options)


def class_histogram(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Fold the QI classes into their size histogram (the engine's ``class_histogram``)."""
    return _run("class_histogram", data, engine, options)


def population_histogram(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Match the classes with a population's (the engine's ``population_histogram``)."""
    return _run("population_histogram", data, engine, options)


def robustness_audit(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Fold r-robustness over the groups (the engine's ``robustness_audit``)."""
    return _run("robustness_audit", data, engine, options)


def foreground_audit(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Fold the foreground-knowledge attack over the groups (the engine's own)."""
    return _run("foreground_audit", data, engine, options)


def audit(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Fold the group-level models over the groups (the engine's group fold).

    :func:`fastpriv.pushdown.audit`, :func:`fastpriv.spark.audit`,
    :func:`fastpriv.distributed.groupwise_audit` or :func:`fastpriv.streaming.clustered_audit`
    (a stream sorted by group).
    """
    return _run("audit", data, engine, options)


def anonymize(data: Any, *, engine: str | None = None, **options: Any) -> Any:
    """Write a generalized release where ``data`` lives (the engine's ``anonymize``).

    :func:`fastpriv.pushdown.anonymize`, :func:`fastpriv.spark.anonymize`,
    :func:`fastpriv.distributed.anonymize` or
    :func:`fastpriv.anonymize.release_out_of_core` (a stream).
    """
    return _run("anonymize", data, engine, options)
