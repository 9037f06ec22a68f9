"""Releases from PySpark DataFrames: the count runs on the cluster, only triples come back.

Every count-based model reads only the (group, value, count) triples of a release, so the
heavy part of an audit is one aggregation that Spark already does well. Nothing row-level
is collected to the driver: the cluster computes the triples, they travel to the driver
as Arrow (one row per distinct (group, value) pair), and
:meth:`fastpriv.Release.from_counts` builds the release — equal (``Release.equals``) to
``Release.from_table`` on the same rows, so every audit answers the same, to the bit.

Two ways to count (``method=``):

``"groupby"`` (default)
    ``df.groupBy(*keys, sensitive).agg(count(*))``: Spark's own hash aggregation (partial
    aggregation per partition, shuffle, final aggregation). Best for most data.
``"partitions"``
    ``df.mapInArrow``: every partition is counted by fastpriv's mergeable
    :class:`~fastpriv.counts.CountAccumulator` on the executor (the Numba kernels of the
    local path, one thread per task), which emits its state as Arrow triples. The partial
    triples are merged on the driver by :meth:`Release.from_counts` (``merge="driver"``:
    no shuffle; the driver receives one state per partition) or summed by a ``GROUP BY``
    on the cluster first (``merge="cluster"``: the driver receives each pair once). Needs
    fastpriv importable on the executors (``pip install fastpriv`` on every node; the
    Numba kernels compile on a node's first task, then load from the on-disk cache — run
    ``fastpriv warmup`` on the nodes' image to skip that).

On one machine (``benchmarks/bench_engines.py``, 10M Parquet rows, ``local[2]``; the
README quotes ``benchmarks/results/engines.json``) both are many times slower than the local
path (JVM, Python workers, task scheduling, no extra cores to use), and which of
``"partitions"`` and ``"groupby"`` is faster depends on the number of groups and the row
order. Use Spark where the data already lives, not for speed on one machine.

Example (a local session; any cluster works the same)::

    from pyspark.sql import SparkSession
    import fastpriv.spark

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    df = spark.read.parquet("patients/")
    rel = fastpriv.spark.release(df, qi=["zip", "age"], sensitive="disease")
    fastpriv.ck_safety.audit(rel, k=3)

Labels are read as Spark hands them to Arrow: integer widths and string layouts are
normalized as everywhere in fastpriv; timestamps carry the session time zone. Spark
normalizes ``-0.0`` to ``0.0`` when it groups floating-point keys, where the local path
keeps them as two labels. ``nulls=`` works as in :meth:`Release.from_table` (a NULL key or
value is a group / label of its own in Spark; ``"drop"`` drops those triples, as dropping
the rows would). Needs the ``spark`` extra (``pip install 'fastpriv[spark]'``) and a Java
runtime (``apt-get install openjdk-17-jre-headless``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .errors import InputError, InputTypeError

if TYPE_CHECKING:
    from .release import Release

__all__ = ["release", "counts", "METHODS", "MERGES"]

#: Counting strategies of :func:`counts` / :func:`release`.
METHODS = ("groupby", "partitions")
#: Where the per-partition states of ``method="partitions"`` are merged.
MERGES = ("driver", "cluster")

_INSTALL = ("fastpriv.spark needs PySpark and a Java runtime: pip install 'fastpriv[spark]' "
            "and, on Debian/Ubuntu, apt-get install -y openjdk-17-jre-headless")


def _require_pyspark() -> Any:
    try:
        import pyspark.sql
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return pyspark.sql


def _spark_column(name: str) -> Any:
    """Select a column by its exact name (backquoted: dots and spaces are not parsed)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _check(df: Any, sensitive: Any, group: Any, qi: Any, method: Any, merge: Any
           ) -> list[str]:
    """Validate the arguments; the key columns."""
    from ._validation import check_choice, check_columns, check_keys

    sql = _require_pyspark()
    if not isinstance(df, sql.DataFrame):
        raise InputTypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")
    keys, param = check_keys(group, qi)
    if not isinstance(sensitive, str):
        raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
    if sensitive in keys:
        raise InputError(f"sensitive column {sensitive!r} is also a {param} column")
    if len(set(keys)) != len(keys):
        raise InputError(f"{param}: a column is named twice: {keys}")
    check_choice(method, "method", METHODS)
    check_choice(merge, "merge", MERGES)
    check_columns([sensitive], df.columns, "sensitive")
    check_columns(keys, df.columns, param)
    return keys


def _count_name(columns: Sequence[str]) -> str:
    name = "count"
    while name in columns:
        name = "_" + name
    return name


def _to_arrow(df: Any) -> pa.Table:
    """Collect a (small, aggregated) DataFrame as an Arrow table."""
    if hasattr(df, "toArrow"):          # pyspark >= 4.0
        return df.toArrow()
    batches = df._collect_as_arrow()    # pyspark 3.5: the same Arrow collection, unnamed
    from pyspark.sql.pandas.types import to_arrow_schema

    return pa.Table.from_batches(batches, schema=to_arrow_schema(df.schema))


def _count_partition(batches: Iterator[pa.RecordBatch], *, keys: list[str], sensitive: str,
                     count: str) -> Iterator[pa.RecordBatch]:
    """Executor side of ``method="partitions"``: one CountAccumulator per partition.

    Nulls are counted as labels (``nulls="value"``); the driver applies the policy, as it
    does to the ``GROUP BY`` triples. The output keeps the input's Arrow types.
    """
    from .counts import CountAccumulator

    acc = CountAccumulator(keys, sensitive, nulls="value", n_jobs=1)
    schema = None
    for batch in batches:
        if schema is None:
            schema = batch.schema
        if batch.num_rows:
            acc.add(batch)
    if schema is None or acc.n_groups == 0:
        return
    out = acc.to_table().rename_columns(keys + [sensitive, count])
    target = pa.schema([schema.field(c) for c in keys + [sensitive]]
                       + [pa.field(count, pa.int64(), nullable=False)])
    yield from out.cast(target).to_batches()


def counts(df: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
           qi: Sequence[str] | None = None, method: str = "groupby",
           merge: str = "driver") -> pa.Table:
    """Count the (group, value) pairs of a Spark DataFrame on the cluster; Arrow triples.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows (one per individual).
    sensitive, group, qi :
        As for :meth:`fastpriv.Release.from_table`.
    method : {"groupby", "partitions"}
        Spark's aggregation, or fastpriv's CountAccumulator per partition (module notes).
    merge : {"driver", "cluster"}
        For ``method="partitions"``: sum the partial triples with a ``GROUP BY`` on the
        cluster, or return them unsummed (one block per partition; summed on the driver by
        :meth:`Release.from_counts`). Ignored by ``"groupby"``.

    Returns
    -------
    pyarrow.Table
        The key columns, ``sensitive`` and a count column (``"count"``, or with leading
        underscores when a data column already has that name); for
        ``merge="driver"`` the same (group, value) may appear once per partition.

    """
    keys = _check(df, sensitive, group, qi, method, merge)   # imports pyspark or explains
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    cols = keys + [sensitive]
    # positional names on the cluster: column names with dots or spaces trip some Spark
    # paths (mapInArrow resolves names unquoted); the real names come back on the driver
    pos = [f"c{i}" for i in range(len(cols))]
    picked = df.select(*[_spark_column(c).alias(p) for c, p in zip(cols, pos, strict=True)])
    if method == "groupby":
        agg = picked.groupBy(*pos).agg(F.count(F.lit(1)).alias("n"))
    else:
        schema = StructType([picked.schema[p] for p in pos]
                            + [StructField("n", LongType(), False)])
        fn = functools.partial(_count_partition, keys=pos[:-1], sensitive=pos[-1],
                               count="n")
        agg = picked.mapInArrow(fn, schema)
        if merge == "cluster":
            agg = agg.groupBy(*pos).agg(F.sum("n").cast("long").alias("n"))
    return _to_arrow(agg).rename_columns(cols + [_count_name(cols)])


def release(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
            qi: Sequence[str] | None = None, nulls: str = "error", method: str = "groupby",
            merge: str = "driver") -> Release:
    """Build the :class:`~fastpriv.Release` of a Spark DataFrame, counting on the cluster.

    ``Release.from_counts(counts(data, ...))``: equal (``Release.equals``) to
    ``Release.from_table`` on the collected rows, without collecting them — the driver
    receives one row per distinct (group, value) pair (n_g(s) of Chen et al. (2007) §3),
    or one per pair and partition with ``method="partitions", merge="driver"``.

    Parameters
    ----------
    data : pyspark.sql.DataFrame
        The rows (one per individual).
    sensitive, group, qi, nulls :
        As for :meth:`fastpriv.Release.from_table` (SVPI).
    method, merge :
        See :func:`counts`.

    Returns
    -------
    fastpriv.Release
        An SVPI release.

    """
    from ._arrow import NULL_POLICIES
    from ._validation import check_choice
    from .release import Release

    check_choice(nulls, "nulls", NULL_POLICIES)   # before the cluster job, not after
    table = counts(data, sensitive=sensitive, group=group, qi=qi, method=method, merge=merge)
    keys = list(table.column_names[:-2])
    if table.num_rows == 0:
        raise InputError("data is empty: a release needs at least one row")
    return Release.from_counts(table, group=keys, sensitive=sensitive,
                               count=table.column_names[-1], nulls=nulls)
