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
    triples are merged on the driver (``merge="driver"``: no shuffle; the driver receives
    one state per partition) or summed by a ``GROUP BY`` on the cluster first
    (``merge="cluster"``: the driver receives each pair once). Needs fastpriv importable on
    the executors (``pip install fastpriv`` on every node; the Numba kernels compile on a
    node's first task, then load from the on-disk cache — run ``fastpriv warmup`` on the
    nodes' image to skip that). An executor whose Python cannot import it raises
    :class:`~fastpriv.InputError` saying so (and naming ``spark.pyspark.python`` /
    ``PYSPARK_PYTHON``), not a Java stack trace
    (:func:`worker_error`).

:func:`release` (every method and merge) keeps the triples on the cluster and
brings them to the driver in blocks of :data:`PAIRS_PER_COLLECT` rows split by a hash of the
pair, folding each into one accumulator: the driver's memory is the merged state plus one
block, so Spark's default 1 GiB driver holds 1M and 10M groups (``toArrow`` of the whole
result does not).

``weight=`` is a multiplicity column, as in :meth:`fastpriv.Release.from_table`: each row
stands for ``weight`` identical rows, so the counts are sums of weights (exact: summed as
``decimal(38,0)`` by ``"groupby"``, in int64 by the CountAccumulator); a null or negative
weight raises :class:`~fastpriv.InputError`, as in memory.

A Spark DataFrame given where fastpriv reads a table (``classic.audit(df, ...)``,
``Release.from_table(df, ...)``) is refused: it would be collected to the driver row by
row through the Arrow stream protocol. Build the release here and audit that.

On one machine (``benchmarks/bench_engines.py``: 20M Parquet rows, ``local[2]``, beside the
``spark.sql`` a data engineer writes for the same k and ℓ; the README's table is generated
from ``benchmarks/results/engines.json``) both are many times slower than the local path
(JVM, Python workers, task scheduling, no extra cores to use). Use Spark where the data
already lives, not for speed on one machine.

Example (a local session; any cluster works the same)::

    from pyspark.sql import SparkSession
    import fastpriv.spark

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    df = spark.read.parquet("patients/")
    rel = fastpriv.spark.release(df, qi=["zip", "age"], sensitive="disease")
    fastpriv.ck_safety.audit(rel, k=3)

Labels are read as Spark hands them to Arrow: integer widths and string layouts are
normalized as everywhere in fastpriv; timestamps carry the session time zone. ``-0.0``
and ``0.0`` are one key, as Spark groups them and as the local path reads them.
``nulls=`` works as in :meth:`Release.from_table` (a NULL key or
value is a group / label of its own in Spark; ``"drop"`` drops those triples, as dropping
the rows would). Needs the ``spark`` extra (``pip install 'fastpriv[spark]'``) and a Java
runtime (``apt-get install openjdk-17-jre-headless``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ._validation import unique_name
from .errors import InputError, InputTypeError

if TYPE_CHECKING:
    from .release import Release
    from .risk import ClassCounts

__all__ = ["release", "counts", "row_counts", "worker_error", "METHODS", "MERGES", "audit",
           "class_histogram", "population_histogram", "robustness_audit", "foreground_audit",
           "PAIRS_PER_COLLECT", "anonymize", "class_counts"]

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


def _check(df: Any, sensitive: Any, group: Any, qi: Any, method: Any, merge: Any,
           weight: Any = None) -> list[str]:
    """Validate the arguments; the key columns."""
    from ._validation import check_choice, check_columns, check_keys

    _check_frame(df)
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
    _check_weight(df, weight, keys + [sensitive])
    return keys


def _check_frame(df: Any) -> None:
    """Refuse anything but a Spark DataFrame (imports pyspark)."""
    sql = _require_pyspark()
    if not isinstance(df, sql.DataFrame):
        raise InputTypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")


def _check_weight(df: Any, weight: Any, used: list[str]) -> None:
    """Check ``weight=``: a column of ``df`` holding integers, none of the ``used`` ones."""
    from ._validation import check_columns

    if weight is None:
        return
    if not isinstance(weight, str):
        raise InputTypeError(f"weight must be a column name, got {type(weight).__name__}")
    check_columns([weight], df.columns, "weight")
    if weight in used:
        raise InputError(f"weight column {weight!r} is also a key or sensitive column")
    from pyspark.sql import types as T

    wtype = df.schema[weight].dataType
    if not isinstance(wtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        raise InputTypeError(f"weight column {weight!r} must hold integers, got "
                             f"{wtype.simpleString()}")


#: the Python packages the executors import for ``method="partitions"``
_WORKER_MODULES = ("fastpriv", "numba", "llvmlite", "pyarrow", "numpy")


def worker_error(exc: BaseException) -> InputError | None:
    """Translate an error raised on Spark's executors into an :class:`InputError`, or None.

    Spark reports a Python error of a task inside a Java stack trace. Two are bad input or
    setup, not bugs: an executor whose Python cannot import fastpriv (or a package it
    needs) for ``method="partitions"``, and an :class:`InputError` raised by fastpriv on
    an executor (a null or negative ``weight``); the message of the new error says which,
    and what to do.

    Parameters
    ----------
    exc : BaseException
        The exception a Spark action raised on the driver.

    Returns
    -------
    InputError or None
        The error to raise instead, or None when ``exc`` is neither.

    """
    import re

    text = str(exc)
    missing = re.search(r"No module named '([A-Za-z0-9_.]+)'", text)
    if missing and missing.group(1).split(".")[0] in _WORKER_MODULES:
        mod = missing.group(1)
        return InputError(
            f"method='partitions': the Python of Spark's executors cannot import {mod!r} "
            f"(ModuleNotFoundError: No module named {mod!r}); fastpriv counts each partition "
            "on the executors, so their Python needs fastpriv installed (pip install "
            "fastpriv on every node), or point the spark.pyspark.python setting / the "
            "PYSPARK_PYTHON environment variable at a Python that has it. "
            "method='groupby' needs nothing on the executors")
    found = re.search(r"fastpriv\.errors\.Input(?:Type)?Error: ([^\n]*)", text)
    if found:
        return InputError(found.group(1).strip())
    return None


def _explained(action: Callable[[], Any]) -> Any:
    """Run a Spark action, with executor-side setup and input errors explained."""
    try:
        return action()
    except Exception as exc:     # Py4JJavaError, PythonException, SparkException, ...
        err = worker_error(exc)
        if err is None:
            raise
        raise err from None


def _collect(df: Any) -> pa.Table:
    """:func:`_to_arrow`, with executor-side setup and input errors explained."""
    return _explained(lambda: _to_arrow(df))


def _count_name(columns: Sequence[str]) -> str:
    return unique_name("count", columns)


def _to_arrow(df: Any) -> pa.Table:
    """Collect a (small, aggregated) DataFrame as an Arrow table."""
    if hasattr(df, "toArrow"):          # pyspark >= 4.0
        return df.toArrow()
    batches = df._collect_as_arrow()    # pyspark 3.5: the same Arrow collection, unnamed
    from pyspark.sql.pandas.types import to_arrow_schema

    return pa.Table.from_batches(batches, schema=to_arrow_schema(df.schema))


def _count_partition(batches: Iterator[pa.RecordBatch], *, keys: list[str], sensitive: str,
                     count: str, weight: str | None = None) -> Iterator[pa.RecordBatch]:
    """Executor side of ``method="partitions"``: one CountAccumulator per partition.

    Nulls are counted as labels (``nulls="value"``); the driver applies the policy, as it
    does to the ``GROUP BY`` triples. The output keeps the input's Arrow types. With
    ``weight``, each row counts ``weight`` times (checked as by ``Release.from_table``).
    """
    from .counts import CountAccumulator

    acc = CountAccumulator(keys, sensitive, nulls="value", n_jobs=1, weight=weight)
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
           qi: Sequence[str] | None = None, weight: str | None = None,
           method: str = "groupby", merge: str = "driver") -> pa.Table:
    """Count the (group, value) pairs of a Spark DataFrame on the cluster; Arrow triples.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows (one per individual).
    sensitive, group, qi :
        As for :meth:`fastpriv.Release.from_table`.
    weight : str, optional
        Multiplicity column, as in :meth:`fastpriv.Release.from_table`: each row stands for
        ``weight`` identical rows (integers ≥ 0, no nulls: anything else raises
        :class:`~fastpriv.InputError`); the counts are sums of weights, and pairs whose
        rows all have weight 0 are left out.
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
        ``merge="driver"`` the same (group, value) may appear once per partition. It is
        collected whole (``toArrow``): with millions of pairs, :func:`release` brings them
        in blocks instead, within the driver's default memory.

    """
    keys = _check(df, sensitive, group, qi, method, merge, weight)   # imports pyspark
    cols = keys + [sensitive]
    picked, pos = _picked(df, cols, weight)
    if method == "groupby":
        return _groupby_triples(_collect(_grouped(picked, pos, weight)), weight, cols)
    agg = _partition_states(picked, pos, weight)
    if merge == "cluster":
        return _merged_triples(_collect(_cluster_merged(agg, pos)), cols)
    return _collect(agg).rename_columns(cols + [_count_name(cols)])


def _cluster_merged(states: Any, pos: list[str]) -> Any:
    """``merge="cluster"``: the partition states summed by a ``GROUP BY`` on the cluster.

    Summed as ``decimal(38,0)`` (exact: a long sum of counts from many partitions could
    overflow); :func:`_merged_triples` reads the sums back as int64, checked.
    """
    from pyspark.sql import functions as F

    return states.groupBy(*pos).agg(F.sum(F.col("n").cast("decimal(38,0)")).alias("n"))


def _merged_triples(table: pa.Table, cols: list[str]) -> pa.Table:
    """Turn collected :func:`_cluster_merged` rows into triples named ``cols`` + count."""
    from ._validation import INT64_MAX

    sums = [int(x) for x in table.column(table.num_columns - 1).to_pylist()]
    if any(x > INT64_MAX for x in sums):
        raise InputError("a (group, value) pair's count adds up past 2**63 - 1 over the "
                         "partitions (the largest count fastpriv holds)")
    out = table.select(list(range(len(cols)))).append_column("n", pa.array(sums, pa.int64()))
    return out.rename_columns(cols + [_count_name(cols)])


def _grouped(picked: Any, pos: list[str], weight: str | None, more: Sequence[Any] = ()) -> Any:
    """``method="groupby"``: Spark's ``GROUP BY`` of the positional columns (``n``).

    With ``weight``: exact sums (a long sum could overflow) and what the driver checks —
    null and negative weights are refused, as ``Release.from_table`` refuses them.
    ``more``: aggregates that follow (the sampling weight sums).
    """
    from pyspark.sql import functions as F

    if weight is None:
        return picked.groupBy(*pos).agg(F.count(F.lit(1)).alias("n"), *more)
    return picked.groupBy(*pos).agg(
        F.sum(F.col("w").cast("decimal(38,0)")).alias("n"),
        F.count(F.when(F.col("w").isNull(), 1)).alias("nulls"),
        F.min("w").alias("least"), *more)


def _sampling_grouped(picked: Any, pos: list[str], weight: str | None, sampling: Any,
                      nulls: str) -> Any:
    """:func:`_grouped` with the sampling weight sums of column ``s`` (:mod:`fastpriv._sampling`).

    Σ ``w · s`` over the rows whose ``s`` is finite and > 0, the rows of weight > 0 whose
    ``s`` is null or NaN, and those whose ``s`` is neither; under ``nulls="drop"`` the
    rows of a null ``s`` are left out first.
    """
    from pyspark.sql import functions as F

    x = F.col("s").cast("double")
    w = F.col("w") if weight is not None else F.lit(1)
    null = x.isNull() | F.isnan(x)
    good = ~null & (x > 0) & (x < float("inf"))
    frame = picked.where(~null) if nulls == "drop" else picked
    return _grouped(frame, pos, weight, (
        F.coalesce(F.sum(F.when((w > 0) & good, x * w)), F.lit(0.0)).alias(sampling.total),
        F.count(F.when((w > 0) & null, 1)).alias(sampling.missing),
        F.count(F.when((w > 0) & ~null & ~good, 1)).alias(sampling.bad)))


def _groupby_triples(table: pa.Table, weight: str | None, cols: list[str]) -> pa.Table:
    """Turn collected :func:`_grouped` rows into triples named ``cols`` + count (int64)."""
    if weight is not None:
        return _weighted_triples(table, weight, cols)
    return _named(table, cols)


def _named(table: pa.Table, cols: list[str]) -> pa.Table:
    """Name the first columns ``cols`` + count; the columns after them keep their names."""
    return table.rename_columns(cols + [_count_name(cols)]
                                + table.column_names[len(cols) + 1:])


#: :func:`release` brings the triples to the driver in blocks of about this many rows (one
#: per (group, value) pair, or per pair and partition with ``method="partitions"``),
#: folding each into one accumulator there
PAIRS_PER_COLLECT = 1 << 19


def _in_blocks(frame: Any, pos: list[str], cols: list[str],
               convert: Callable[[pa.Table], pa.Table], distinct: bool = False) -> pa.Table:
    """Collect the triples ``frame`` to the driver in bounded memory, summed.

    ``toArrow`` gathers a whole result in the driver's JVM before Python sees it: with 1M
    groups that exceeds Spark's default 1 GiB driver (in local mode the executors share that
    heap) and ``spark.driver.maxResultSize``. ``frame`` is computed once and kept on the
    executors' disks (``persist(DISK_ONLY)``: kept in memory, it crowded out the large task
    results of the blocks, which Spark then lost), counted, and collected in ``ceil(rows /
    PAIRS_PER_COLLECT)`` blocks split by a hash of the pair (``pmod(xxhash64(keys, value),
    blocks)``: all rows of a pair in one block), each ``convert``-ed to ``pos`` + count and
    added to one :class:`~fastpriv.counts.CountAccumulator`; the driver holds the merged
    state and one block. One block: one collect, returned as it comes (a pair may repeat;
    the release sums). Columns of the result: ``cols`` + count.

    ``distinct``: ``frame`` is a ``GROUP BY`` of ``pos`` (each key once), as the classes of
    :func:`class_counts` are, which may have a single key column; the blocks (each key in
    one of them) are then concatenated as they come, not folded.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from .counts import CountAccumulator

    frame = frame.persist(StorageLevel.DISK_ONLY)   # the heap stays free for the blocks
    try:
        blocks = max(1, -(-_explained(frame.count) // max(int(PAIRS_PER_COLLECT), 1)))
        if blocks == 1:
            return _named(convert(_collect(frame)), cols)
        count = _count_name(pos)
        acc = None if distinct else CountAccumulator(pos[:-1], pos[-1], nulls="value",
                                                     n_jobs=1, weight=count)
        which = F.pmod(F.xxhash64(*pos), F.lit(blocks))
        got = []
        for b in range(blocks):
            block = convert(_collect(frame.where(which == b)))
            if acc is None:
                got.append(block)
            elif block.num_rows:
                acc.add(block)
    finally:
        frame.unpersist()
    return _named(acc.to_table() if acc is not None else pa.concat_tables(got), cols)


def _picked(df: Any, cols: list[str], weight: str | None,
            sampling_weight: str | None = None) -> tuple[Any, list[str]]:
    """Select the used columns under positional names ``c0, c1, …`` (and ``w``, ``s``).

    Column names with dots or spaces trip some Spark paths (mapInArrow resolves names
    unquoted); the real names come back on the driver.
    """
    pos = [f"c{i}" for i in range(len(cols))]
    named = list(zip(cols, pos, strict=True)) + [
        (c, alias) for c, alias in ((weight, "w"), (sampling_weight, "s")) if c is not None]
    return df.select(*[_spark_column(c).alias(p) for c, p in named]), pos


def _partition_states(picked: Any, pos: list[str], weight: str | None) -> Any:
    """One CountAccumulator state per partition, as Arrow triples (``mapInArrow``)."""
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([picked.schema[p] for p in pos]
                        + [StructField("n", LongType(), False)])
    fn = functools.partial(_count_partition, keys=pos[:-1], sensitive=pos[-1],
                           count="n", weight=None if weight is None else "w")
    return picked.mapInArrow(fn, schema)


def _streamed_counts(df: Any, *, sensitive: str, group: Any, qi: Any,
                     weight: str | None, method: str, merge: str) -> pa.Table:
    """Collect the triples of :func:`counts` with :func:`_in_blocks`, every method and merge.

    ``merge="cluster"`` too: its ``GROUP BY`` result has one row per pair, as many as
    ``method="groupby"``'s, and collected whole (``toArrow``) at 1M groups it outgrew the
    driver (``TaskResultLost``, or past ``spark.driver.maxResultSize``).
    """
    keys = _check(df, sensitive, group, qi, method, merge, weight)
    cols = keys + [sensitive]
    picked, pos = _picked(df, cols, weight)
    if method == "groupby":
        return _in_blocks(_grouped(picked, pos, weight), pos, cols,
                          lambda t: _groupby_triples(t, weight, pos))
    states = _partition_states(picked, pos, weight)
    if merge == "cluster":
        return _in_blocks(_cluster_merged(states, pos), pos, cols,
                          lambda t: _merged_triples(t, pos))
    return _in_blocks(states, pos, cols,
                      lambda t: t.rename_columns(pos + [_count_name(pos)]))


def _weighted_triples(table: pa.Table, weight: str, cols: list[str]) -> pa.Table:
    """Check the weights behind the summed triples; int64 counts, zero counts dropped.

    Columns after ``n, nulls, least`` (the sampling weight sums) are kept as they are.
    """
    from .pushdown import weight_sums

    n = weight_sums(table, weight=weight, n="n", nulls="nulls", least="least")
    out = table.select(list(range(len(cols)))).append_column("n", pa.array(n))
    for c in table.column_names[len(cols) + 3:]:     # the sampling weight sums, if any
        out = out.append_column(c, table.column(c))
    return _named(out.filter(pa.array(n > 0)), cols)


def release(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
            qi: Sequence[str] | None = None, weight: str | None = None,
            nulls: str = "error", method: str = "groupby",
            merge: str = "driver") -> Release:
    """Build the :class:`~fastpriv.Release` of a Spark DataFrame, counting on the cluster.

    ``Release.from_counts(counts(data, ...))``: equal (``Release.equals``) to
    ``Release.from_table`` on the collected rows (with the same ``weight=``), without
    collecting them — the driver receives one row per distinct (group, value) pair
    (n_g(s) of Chen et al. (2007) §3), or one per pair and partition with
    ``method="partitions", merge="driver"``.

    Parameters
    ----------
    data : pyspark.sql.DataFrame
        The rows (one per individual, or per distinct row with ``weight``).
    sensitive, group, qi, nulls :
        As for :meth:`fastpriv.Release.from_table` (SVPI).
    weight : str, optional
        Multiplicity column, as in :meth:`fastpriv.Release.from_table`.
    method, merge :
        See :func:`counts`. ``method="partitions"`` runs fastpriv on the executors: when
        their Python cannot import it, :class:`~fastpriv.InputError` says so (and names
        ``spark.pyspark.python`` / ``PYSPARK_PYTHON``). With every method and merge the
        triples reach the driver in blocks of :data:`PAIRS_PER_COLLECT` rows and are
        merged as they come (memory: the merged state and one block; module notes).

    Returns
    -------
    fastpriv.Release
        An SVPI release.

    """
    from ._arrow import NULL_POLICIES
    from ._validation import check_choice
    from .release import Release

    check_choice(nulls, "nulls", NULL_POLICIES)   # before the cluster job, not after
    table = _streamed_counts(data, sensitive=sensitive, group=group, qi=qi, weight=weight,
                             method=method, merge=merge)
    keys = list(table.column_names[:-2])
    if table.num_rows == 0:
        raise InputError("data is empty: a release needs at least one row")
    return Release.from_counts(table, group=keys, sensitive=sensitive,
                               count=table.column_names[-1], nulls=nulls)


def row_counts(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
               sensitive: str, weight: str | None = None, count: str = "count") -> pa.Table:
    """Count the distinct (QI, group, sensitive) rows on the cluster; a small Arrow table.

    The sufficient statistics of the row-level models: r-robustness
    (:func:`fastpriv.robustness.audit`) and the foreground attack
    (:func:`fastpriv.foreground.attack`) read each individual's exact QI values, group and
    sensitive value, and give the answer of the full table from the distinct rows with
    their multiplicity passed as ``weight=count``. ``data.groupBy(qi…, group…,
    sensitive).agg(count)`` runs on the executors; the driver receives one row per distinct
    row in blocks of :data:`PAIRS_PER_COLLECT` rows (never the whole result in one task
    result), in the form of
    :func:`fastpriv.pushdown.finish_row_counts` (labels typed as in memory, NULL kept, NaN
    read as NULL, exact int64 counts, rows sorted by the keys, so the row numbers an audit
    reports do not depend on the partitioning)::

        t = fastpriv.spark.row_counts(df, qi=["zip", "age"], group="gid",
                                      sensitive="disease")
        fastpriv.robustness.audit(t, qi=["zip", "age"], group="gid",
                                  sensitive="disease", weight="count", r=2)

    ``-0.0`` and ``0.0`` are one key (module notes).

    Parameters
    ----------
    data : pyspark.sql.DataFrame
        The rows (one per individual, or per distinct row with ``weight``).
    qi : str or list of str
        The QI columns (the adversary's knowledge).
    group : str or list of str
        The group-id column(s) of the release.
    sensitive : str
        The sensitive column.
    weight : str, optional
        Multiplicity column, as in :meth:`fastpriv.Release.from_table`: the count is the
        sum of the weights (summed as ``decimal(38,0)``, exact); a null or negative weight
        raises :class:`~fastpriv.InputError`.
    count : str
        Name of the count column of the result.

    Returns
    -------
    pyarrow.Table
        Columns ``qi…, group…, sensitive, count`` (int64), sorted.

    """
    from ._validation import check_columns
    from .pushdown import check_row_names, finish_row_counts

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight, count)
    cols = qi_cols + group_cols + [sensitive]
    _check_frame(data)
    check_columns(cols, data.columns, "data")
    _check_weight(data, weight, cols)
    picked, pos = _picked(data, cols, weight)     # one row per distinct row, in blocks
    table = _in_blocks(_grouped(picked, pos, weight), pos, cols,
                       lambda t: _groupby_triples(t, weight, pos), distinct=True)
    table = table.rename_columns(cols + [count])
    return finish_row_counts(table, qi=qi_cols, group=group_cols, sensitive=sensitive,
                             count=count)


def class_counts(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                 nulls: str = "error", sampling_weight: str | None = None) -> ClassCounts:
    """Count the QI equivalence classes on the cluster; the :class:`~fastpriv.risk.ClassCounts`.

    ``data.groupBy(qi…).agg(count)`` (the sum of ``weight``, as ``decimal(38,0)``) runs on
    the executors; the driver receives one row per class in blocks of
    :data:`PAIRS_PER_COLLECT` rows, as :func:`release` does (never the whole result in one
    task result), and reads them with :func:`fastpriv.pushdown.finish_class_counts`. The
    classes equal ``risk.class_counts(table, qi=qi, weight=weight,
    sampling_weight=sampling_weight, nulls=nulls)`` on the collected rows (labels and
    their types, sizes, null policy), so
    :func:`fastpriv.risk.audit`, :func:`fastpriv.population.k_map` and
    :func:`fastpriv.population.delta_presence` on them — the population counted the same
    way — answer as in memory::

        sample = fastpriv.spark.class_counts(df, qi=["zip", "age"])
        census = fastpriv.spark.class_counts(spark.read.parquet("census/"),
                                             qi=["zip", "age"])
        fastpriv.population.delta_presence(sample, population=census)

    ``-0.0`` and ``0.0`` are one key, NaN a null (module notes).

    Parameters
    ----------
    data : pyspark.sql.DataFrame
        The records (one per individual, or per distinct row with ``weight``).
    qi : str or list of str
        The quasi-identifier columns.
    weight : str, optional
        Multiplicity column, as in :func:`fastpriv.risk.audit`: each row stands for
        ``weight`` identical records (integers ≥ 0; a null or negative weight raises
        :class:`~fastpriv.InputError`, as in :func:`row_counts`).
    nulls : {"error", "drop", "value"}
        Null policy of the QI columns, as in :meth:`fastpriv.risk.ClassCounts.from_table`.
    sampling_weight : str, optional
        Column of sampling weights (finite, > 0), as in
        :meth:`fastpriv.risk.ClassCounts.from_table`: the executors sum ``weight ·
        sampling_weight`` per class (:mod:`fastpriv._sampling`; the null policy covers
        this column too). Floating-point sums, added in Spark's order.

    Returns
    -------
    fastpriv.risk.ClassCounts
        One class per distinct QI tuple, with its number of records (and its sampling
        weight sum).

    """
    from ._validation import check_columns
    from .pushdown import check_class_names, finish_class_counts, sampling_columns

    cols = check_class_names(qi, weight, nulls, sampling_weight)  # before the cluster job
    _check_frame(data)
    check_columns(cols, data.columns, "qi")
    _check_weight(data, weight, cols)
    picked, pos = _picked(data, cols, weight, sampling_weight)
    sampling = sampling_columns(sampling_weight, cols + [_count_name(cols)])
    if sampling is None:
        frame = _grouped(picked, pos, weight)
    else:
        _check_sampling_weight(data, sampling_weight)
        frame = _sampling_grouped(picked, pos, weight, sampling, nulls)
    table = _in_blocks(frame, pos, cols, lambda t: _groupby_triples(t, weight, pos),
                       distinct=True)
    return finish_class_counts(table, qi=cols, count=_count_name(cols), nulls=nulls,
                               sampling=sampling)


def _check_sampling_weight(df: Any, column: str) -> None:
    """Refuse a sampling weight column that is missing or holds no numbers."""
    from pyspark.sql import types as T

    from ._sampling import check_numeric
    from ._validation import check_columns

    check_columns([column], df.columns, "sampling_weight")
    kind = df.schema[column].dataType
    check_numeric(column, isinstance(kind, T.NumericType), kind.simpleString())


def class_histogram(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                    nulls: str = "error", sampling_weight: str | None = None,
                    threshold: float | None = None) -> Any:
    """Count the QI classes on the cluster and bring back only their size histogram.

    The fold of the re-identification risk (:mod:`fastpriv.class_histogram`): the
    executors count the classes (``groupBy(qi)``, NaN a null, ``-0.0`` as ``0.0``, weights
    summed as ``decimal(38,0)`` and checked), then how many classes have each size, and the
    first smallest class (``orderBy(qi, nulls last).limit(1)``); the driver receives one
    row per distinct size and that class, never one row per class
    (:func:`class_counts`). ``risk.audit`` on it equals ``risk.audit(table, qi=qi,
    weight=weight, nulls=nulls)`` for every measure that does not need each class (no
    population table, no sampling weights). Bad input is refused as by
    :func:`class_counts`.

    With ``sampling_weight`` the executors sum each class's sampling weights too and
    summarize their partitions of classes (``mapInArrow``) into
    :class:`~fastpriv.class_histogram.SamplingHistogram` s (for ``threshold``), one pickled
    summary per partition to the driver; ``risk.audit(..., threshold=threshold)`` of the
    merged summary equals ``risk.audit(table, ..., sampling_weight=sampling_weight)``.

    Parameters
    ----------
    data, qi, weight, nulls, sampling_weight :
        As for :func:`class_counts`.
    threshold : float, optional
        With ``sampling_weight`` only: the risk threshold of the audit (the summary counts
        the records whose risk exceeds it; default 0.2, as ``risk.audit``).

    Returns
    -------
    fastpriv.class_histogram.ClassHistogram or SamplingHistogram

    """
    from pyspark.sql import functions as F

    from ._sampling import fold_threshold
    from ._validation import check_columns
    from .class_histogram import ClassHistogram
    from .pushdown import check_class_names, finish_class_counts

    cols = check_class_names(qi, weight, nulls, sampling_weight)
    threshold = fold_threshold(threshold, sampling_weight)
    _check_frame(data)
    check_columns(cols, data.columns, "qi")
    _check_weight(data, weight, cols)
    if sampling_weight is not None:
        return _sampling_histogram(data, cols, weight, nulls, sampling_weight, threshold)
    picked, pos = _picked(data, cols, weight)
    keys = [e.alias(p) for e, p in zip(_partition_keys(picked, pos), pos, strict=True)]
    classes = _grouped(picked.select(*keys, *(["w"] if weight else [])), pos, weight)
    is_null = functools.reduce(lambda a, b: a | b, [F.col(p).isNull() for p in pos])
    bad = (F.col("nulls") > 0) | (F.col("least") < 0) if weight else F.lit(False)

    def read(frame: Any) -> pa.Table:        # classes as class_counts reads them
        t = _groupby_triples(_explained(lambda: _collect(frame)), weight, pos)
        return finish_class_counts(t.rename_columns(cols + ["n"]), qi=cols, count="n",
                                   nulls=nulls)

    wrong = classes.where(bad | is_null) if nulls == "error" else classes.where(bad)
    if _explained(lambda: wrong.limit(1).count()):
        read(wrong)                                           # refused with its words
        raise AssertionError("finish_class_counts accepted a refused class")
    keep = F.col("n") > 0
    if nulls != "value":
        keep = keep & ~is_null
    kept = classes.where(keep)
    sizes = _explained(lambda: _collect(kept.groupBy("n").agg(
        F.count(F.lit(1)).alias("classes")).orderBy("n")))
    if sizes.num_rows == 0:
        raise InputError("data has no rows (after the null policy and weights of 0)")
    least = sizes.column("n")[0].as_py()
    first = read(kept.where(F.col("n") == F.lit(least)).orderBy(
        *[F.col(p).asc_nulls_last() for p in pos]).limit(1))
    return ClassHistogram(tuple(cols), [int(x) for x in sizes.column("n").to_pylist()],
                          sizes.column("classes").to_pylist(), first.values_of(0), nulls)


def _sampling_histogram(data: Any, cols: list[str], weight: str | None, nulls: str,
                        sampling_weight: str, threshold: float) -> Any:
    """:func:`class_histogram` with sampling weights: one summary per partition of classes.

    The keys are grouped as fastpriv compares them (NaN a null, ``-0.0`` as ``0.0``), so
    each row of the ``groupBy`` is a complete class; a partition holding anything memory
    refuses makes :func:`class_counts` raise memory's words.
    """
    from ._sampling import folded
    from .pushdown import sampling_columns

    _check_sampling_weight(data, sampling_weight)
    picked, pos = _picked(data, cols, weight, sampling_weight)
    keys = [e.alias(p) for e, p in zip(_partition_keys(picked, pos), pos, strict=True)]
    sampling = sampling_columns(sampling_weight, cols + [_count_name(cols)])
    classes = _sampling_grouped(picked.select(*keys, *(["w"] if weight else []), "s"), pos,
                                weight, sampling, nulls)
    fn = functools.partial(_fold_sampling, cols=cols, pos=pos, weight=weight, nulls=nulls,
                           sampling=sampling, threshold=threshold)
    return folded(_states(classes, fn), lambda: class_counts(
        data, qi=cols, weight=weight, nulls=nulls, sampling_weight=sampling_weight))


def _fold_sampling(batches: Iterator[pa.RecordBatch], *, cols: list[str], pos: list[str],
                   weight: str | None, nulls: str, sampling: Any,
                   threshold: float) -> Iterator[pa.RecordBatch]:
    """Executor side of :func:`_sampling_histogram`: a partition's classes, summarized.

    One pickled :func:`fastpriv._sampling.histogram_part` per partition.
    """
    import pickle

    from ._sampling import histogram_part

    count = _count_name(cols)

    def convert(t: pa.Table) -> pa.Table:          # weights checked, QI names back
        t = _groupby_triples(t, weight, pos)
        return t.rename_columns(cols + [count] + t.column_names[len(cols) + 1:])

    parts = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if parts:
        state = histogram_part(pa.concat_tables(parts), qi=cols, count=count,
                               columns=sampling, nulls=nulls, threshold=threshold,
                               convert=convert)
        yield pa.RecordBatch.from_pydict({"state": [pickle.dumps(state)]})


def population_histogram(data: Any, *, qi: str | Sequence[str], population: Any,
                         weight: str | None = None, nulls: str = "error") -> Any:
    """Match the data's QI classes with a population's on the cluster; bring back the summary.

    The fold of k-map, δ-presence and the risk against a population table
    (:class:`~fastpriv.class_histogram.PopulationHistogram`): the executors count the
    classes of both DataFrames (``groupBy(qi)``; NaN a null, ``-0.0`` as ``0.0``; the
    data's weights summed as ``decimal(38,0)`` and checked), join them (full outer join,
    null-safe equality on the QI) and summarize each partition of the joined classes
    (``mapInArrow``: :func:`fastpriv.pushdown.finish_population_counts`); the driver
    receives one pickled summary per partition — one entry per distinct (records, people)
    pair — and merges them, never one row per class (:func:`class_counts`).
    :func:`fastpriv.population.k_map`, :func:`~fastpriv.population.delta_presence` and
    :func:`fastpriv.risk.audit` on it equal the same calls on the tables in memory
    (``population=`` left out; no sampling weights). A class of the data missing from the
    population, a null QI under ``nulls="error"``, a null or negative weight: refused as in
    memory (the class named is one of the refused).

    Parameters
    ----------
    data, population : pyspark.sql.DataFrame
        The data and the population table, both with the ``qi`` columns.
    qi, weight, nulls :
        As for :func:`class_counts` (``weight`` is the data's).

    Returns
    -------
    fastpriv.class_histogram.PopulationHistogram

    """
    from pyspark.sql import functions as F

    from ._validation import check_columns
    from .class_histogram import PopulationHistogram
    from .pushdown import check_class_names

    cols = check_class_names(qi, weight, nulls)
    _check_frame(data)
    _check_frame(population)
    check_columns(cols, data.columns, "qi")
    check_columns(cols, population.columns, "population")
    _check_weight(data, weight, cols)
    _check_same_kinds(data, population, cols)
    sides = []
    for frame, w in ((data, weight), (population, None)):
        picked, pos = _picked(frame, cols, w)
        keys = [e.alias(p) for e, p in zip(_partition_keys(picked, pos), pos, strict=True)]
        sides.append(_grouped(picked.select(*keys, *(["w"] if w else [])), pos, w))
    s, p = sides[0].alias("s"), sides[1].withColumnRenamed("n", "big").alias("p")
    on = [F.col(f"s.{c}").eqNullSafe(F.col(f"p.{c}")) for c in pos]
    checks = ["n", "nulls", "least"] if weight else ["n"]
    joined = s.join(p, on=on, how="full").select(
        *[F.coalesce(F.col(f"s.{c}"), F.col(f"p.{c}")).alias(c) for c in pos],
        *[F.col(f"s.{c}") for c in checks], F.col("p.big"))
    free = [unique_name(c, cols) for c in checks + ["big"]]   # the QI may be named "n"
    fn = functools.partial(_fold_population, cols=cols, weight=weight, nulls=nulls,
                           checks=free[:-1], big=free[-1])
    out = PopulationHistogram.population_only(cols, nulls, n_population=0,
                                              n_population_classes=0)
    for part in _states(joined, fn):
        out = out.merge(part)
    if out.n_classes == 0:
        raise InputError("data has no rows (after the null policy and weights of 0)")
    return out


def robustness_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     knowledge: Any = None, sensitive_values: Sequence[Any] | None = None,
                     max_set_size: int | None = None, epsilon: float = 0.01,
                     confidence: float = 0.9, min_support: int | None = None,
                     nulls: str = "error", max_items: int = 100,
                     partitions: int | None = None, **options: Any) -> Any:
    """r-robustness on the cluster, as a fold over groups: only summaries reach the driver.

    Two passes (:mod:`fastpriv.robustness_fold`): the distinct (QI, sensitive) cells are
    counted (:func:`row_counts` without a group: their number depends on the QI domain, not
    on the groups) and the adversary's knowledge derived from them in the driver (unless
    ``knowledge`` is given); then the rows are shuffled by group and each partition's
    complete groups are audited on the executors with that knowledge
    (:func:`fastpriv.robustness_fold.audit_part`, ``mapInArrow``), one pickled
    :class:`~fastpriv.robustness_fold.RobustnessSummary` per partition to the driver,
    merged. The result equals ``RobustnessSummary.from_audit`` of
    :func:`fastpriv.robustness.audit` on the same rows in memory (``weight=`` their count):
    the largest posterior and its tuple, the counts, the ``max_items`` highest problematic
    posteriors. Tuples are named by group and QI values (no row numbers).

    Parameters
    ----------
    data : pyspark.sql.DataFrame
        One row per individual (or ``weight`` individuals) with the QI, group and sensitive
        columns.
    qi, group, sensitive, weight :
        As for :func:`row_counts`.
    r, knowledge, sensitive_values, max_set_size, epsilon, confidence, min_support, nulls :
        As for :func:`fastpriv.robustness.audit`.
    max_items : int
        Problematic and undefined entries kept.
    partitions : int, optional
        Partitions of the shuffle by group (default: Spark's).
    **options :
        ``model``, ``tol``, ``max_states``, ``on_large``, ``chunk_entries``,
        ``max_seconds`` of :func:`fastpriv.robustness.audit` (per partition).

    Returns
    -------
    fastpriv.robustness_fold.RobustnessSummary

    """
    from ._validation import check_int
    from .pushdown import check_row_names
    from .robustness_fold import audit_part, prepare

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    if partitions is not None:
        partitions = check_int(partitions, "partitions", minimum=1)
    count = unique_name("count", qi_cols + group_cols + [sensitive])
    audit = prepare(lambda: _cells(data, qi_cols, group_cols, sensitive, weight, count, nulls),
                    qi=qi_cols, sensitive=sensitive, count=count, r=r, knowledge=knowledge,
                    sensitive_values=sensitive_values, max_set_size=max_set_size,
                    epsilon=epsilon, confidence=confidence, min_support=min_support,
                    nulls=nulls, max_items=max_items, **options)
    part = functools.partial(audit_part, qi=qi_cols, group=group_cols, sensitive=sensitive,
                             count=count, **audit)
    out = _group_fold(data, qi_cols, group_cols, sensitive, weight, count, partitions, part)
    if out is None:
        raise InputError("data has no rows (after weights of 0)")
    return out


def foreground_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     sensitive_values: Any = None, max_set_size: int | None = None,
                     epsilon: float = 0.01, confidence: float = 0.9,
                     min_support: int | None = None, nulls: str = "error",
                     max_items: int = 10, partitions: int | None = None,
                     **options: Any) -> Any:
    """Run the foreground-knowledge attack on the cluster as a fold: summaries reach the driver.

    Three passes (:mod:`fastpriv.foreground_fold`): the distinct (QI, sensitive) cells are
    counted and the mining planned from them in the driver (reliable signatures and
    systems); the rows are shuffled by group and each partition's complete groups pack
    every system on the executors (``mapInArrow``), the driver merges the packs and solves
    them (the mined distributions: those of :func:`fastpriv.foreground.mine`); a second
    shuffle by group computes each partition's posteriors with them on the executors, one
    pickled :class:`~fastpriv.foreground_fold.ForegroundSummary` per partition to the
    driver, merged. The result equals ``ForegroundSummary.from_attack`` of
    :func:`fastpriv.foreground.attack` on the same rows in memory (``weight=`` their
    count). The driver holds the cells, the distinct group profiles of the systems and the
    summaries, not the rows.

    Parameters
    ----------
    data : pyspark.sql.DataFrame
        One row per individual (or ``weight`` individuals) with the QI, group and sensitive
        columns.
    qi, group, sensitive, weight :
        As for :func:`row_counts` (one group column, as :func:`fastpriv.foreground.attack`).
    r, sensitive_values, max_set_size, epsilon, confidence, min_support, nulls :
        As for :func:`fastpriv.foreground.attack`.
    max_items : int
        The most exposed people listed.
    partitions : int, optional
        Partitions of the shuffles by group (default: Spark's).
    **options :
        ``tol``, ``unreliable``, ``n_random``, ``seed``, ``max_iter``, ``solver_tol``,
        ``max_seconds`` of :func:`fastpriv.foreground.attack`.

    Returns
    -------
    fastpriv.foreground_fold.ForegroundSummary

    """
    from ._validation import check_int
    from .foreground_fold import prepare as prepare_attack
    from .pushdown import check_row_names

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    if partitions is not None:
        partitions = check_int(partitions, "partitions", minimum=1)
    count = unique_name("count", qi_cols + group_cols + [sensitive])
    fold = prepare_attack(
        lambda: _cells(data, qi_cols, group_cols, sensitive, weight, count, nulls),
        qi=qi_cols, group=group_cols, sensitive=sensitive, count=count, r=r,
        sensitive_values=sensitive_values, max_set_size=max_set_size, epsilon=epsilon,
        confidence=confidence, min_support=min_support, nulls=nulls, max_items=max_items,
        **options)
    mined = None
    if fold.has_systems:       # solved on the executors
        mined = _solve_on_executors(data, fold, qi_cols, group_cols, sensitive, weight, count,
                                    partitions)
    return fold.run(lambda part: _group_fold(data, qi_cols, group_cols, sensitive, weight,
                                             count, partitions, part), mined=mined)


def _solve_on_executors(data: Any, fold: Any, qi_cols: list[str], group_cols: list[str],
                        sensitive: str, weight: str | None, count: str,
                        partitions: int | None) -> Any:
    """Pass 2 of the foreground fold with the systems solved on the executors.

    The rows are shuffled by group; each partition packs its groups' systems and splits
    the pack into blocks of systems (:meth:`~fastpriv.foreground_fold.ForegroundFold.blocks`),
    shuffled by block and kept (``persist``); each block's packs are merged and summarized
    for the driver (:func:`~fastpriv.foreground_fold.block_summary`: counts and work), which
    checks the time bound, then merged again and solved
    (:func:`~fastpriv.foreground_fold.block_solution`): the driver receives the counts and
    the solutions, not the groups.
    """
    from ._foreground_pack import assemble_counts
    from .foreground_fold import systems_part

    shuffled, cols = _by_group(data, qi_cols, group_cols, sensitive, weight, partitions)
    blocks = fold.blocks(partitions or data.sparkSession.sparkContext.defaultParallelism)
    packs = shuffled.mapInArrow(functools.partial(
        _pack_blocks, cols=cols, n_qi=len(qi_cols), weight=weight, count=count,
        part=functools.partial(systems_part, **fold.systems_args()), blocks=blocks),
        "block long, state binary")
    by_block = packs.repartition(len(blocks), "block").persist()
    try:
        summaries = _states(by_block, functools.partial(_block_summaries,
                                                        n_random=fold.n_random))
        if not summaries:
            raise InputError("data has no rows (after weights of 0)")
        counts = assemble_counts(fold.var_off, [(blocks[b], c) for b, c, _, _ in summaries])
        work = sum(w for _, _, w, _ in summaries)
        largest = max(g for _, _, _, g in summaries)
        solve = functools.partial(_block_solutions, blocks=blocks, args=fold.block_args())
        return fold.solve_in_blocks(counts, work, largest, lambda: _states(by_block, solve))
    finally:
        by_block.unpersist()


def _cells(data: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
           weight: str | None, count: str, nulls: str) -> Any:
    """Count the distinct (QI, sensitive) cells: pass 1 of the row-level folds.

    Under ``nulls="drop"`` the audit leaves out the rows of a null group: so do the cells.
    """
    source = _non_null(data, group_cols) if nulls == "drop" else data
    return row_counts(source, qi=qi_cols, group=[], sensitive=sensitive, weight=weight,
                      count=count)


def _group_fold(data: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
                weight: str | None, count: str, partitions: int | None,
                part: Callable) -> Any:
    """Shuffle the rows by group and fold each partition's groups with ``part`` (merged).

    ``part`` takes a partition's distinct rows with their count (the form of
    :func:`fastpriv.pushdown.finish_row_counts`) and returns a summary with ``merge``, or
    None; None for no partition with rows.
    """
    shuffled, cols = _by_group(data, qi_cols, group_cols, sensitive, weight, partitions)
    fn = functools.partial(_fold_part, cols=cols, n_qi=len(qi_cols), weight=weight,
                           count=count, part=part)
    states = _states(shuffled, fn)
    return states[0].merge(*states[1:]) if states else None


def _by_group(data: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
              weight: str | None, partitions: int | None) -> tuple[Any, list[str]]:
    """Return the rows' columns shuffled by the group keys, and the columns' names."""
    cols = qi_cols + group_cols + [sensitive]
    picked, pos = _picked(data, cols, weight)
    by = _partition_keys(picked, pos[len(qi_cols):-1])
    return (picked.repartition(partitions, *by) if partitions
            else picked.repartition(*by)), cols


def _non_null(data: Any, columns: list[str]) -> Any:
    """Return the rows of ``data`` without a null (or NaN) in ``columns``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    cond = F.lit(True)
    for c in columns:
        col = _spark_column(c)
        cond = cond & col.isNotNull()
        if isinstance(data.schema[c].dataType, (T.FloatType, T.DoubleType)):
            cond = cond & ~F.isnan(col)
    return data.where(cond)


def _fold_part(batches: Iterator[pa.RecordBatch], *, cols: list[str], n_qi: int,
               weight: str | None, count: str, part: Callable) -> Iterator[pa.RecordBatch]:
    """Executor side of :func:`_group_fold`: the partition's groups, folded by ``part``."""
    import pickle

    state = _part_state(batches, cols, n_qi, weight, count, part)
    if state is not None:
        yield pa.RecordBatch.from_pydict({"state": [pickle.dumps(state)]})


def _pack_blocks(batches: Iterator[pa.RecordBatch], *, cols: list[str], n_qi: int,
                 weight: str | None, count: str, part: Callable,
                 blocks: list) -> Iterator[pa.RecordBatch]:
    """Executor side of :func:`_solve_on_executors`: a partition's pack, one row per block."""
    import pickle

    pack = _part_state(batches, cols, n_qi, weight, count, part)
    if pack is not None:
        yield pa.RecordBatch.from_pydict({
            "block": list(range(len(blocks))),
            "state": [pickle.dumps(pack.select(systems)) for systems in blocks]})


def _part_state(batches: Iterator[pa.RecordBatch], cols: list[str], n_qi: int,
                weight: str | None, count: str, part: Callable) -> Any:
    """Return ``part`` of a partition's rows (:func:`fastpriv.pushdown.group_part`), or None."""
    from .pushdown import group_part

    names = cols + ([weight] if weight is not None else [])
    parts = [pa.Table.from_batches([b]).rename_columns(names) for b in batches if b.num_rows]
    if not parts:
        return None
    return group_part(pa.concat_tables(parts), qi=cols[:n_qi], group=cols[n_qi:-1],
                      sensitive=cols[-1], weight=weight, count=count, part=part)


def _merged_blocks(batches: Iterator[pa.RecordBatch]) -> dict:
    """Return the packs of a partition's blocks, each merged: {block: pack}."""
    import pickle

    found: dict = {}
    for batch in batches:
        for b, state in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                            strict=True):
            found.setdefault(b, []).append(pickle.loads(state))
    return {b: packs[0].merge(*packs[1:]) for b, packs in found.items()}


def _block_summaries(batches: Iterator[pa.RecordBatch], *,
                     n_random: int) -> Iterator[pa.RecordBatch]:
    """Executor side: each block's ``(block, counts, work, largest group)`` for the driver."""
    import pickle

    from .foreground_fold import block_summary

    out = [pickle.dumps((b, *block_summary(pack, n_random=n_random)))
           for b, pack in _merged_blocks(batches).items()]
    if out:
        yield pa.RecordBatch.from_pydict({"state": out})


def _block_solutions(batches: Iterator[pa.RecordBatch], *, blocks: list,
                     args: dict) -> Iterator[pa.RecordBatch]:
    """Executor side: each block's systems solved, ``(system ids, solution)``."""
    import pickle

    from .foreground_fold import block_solution

    out = [pickle.dumps(block_solution(pack, blocks[b], **args))
           for b, pack in _merged_blocks(batches).items()]
    if out:
        yield pa.RecordBatch.from_pydict({"state": out})


def _check_same_kinds(data: Any, population: Any, cols: list[str]) -> None:
    """Refuse QI columns of different kinds (numbers, text, …), as in memory.

    Spark would cast one side to compare them (``"1"`` matching ``1``); in memory the
    population's classes are not matched with the data's then.
    """
    from pyspark.sql import types as T

    def kind(t: Any) -> str:
        return "number" if isinstance(t, T.NumericType) else type(t).__name__

    for c in cols:
        a, b = data.schema[c].dataType, population.schema[c].dataType
        if kind(a) != kind(b):
            raise InputError(f"population: QI column types differ from the data's ({c!r}: "
                             f"{a.simpleString()} in the data, {b.simpleString()} in the "
                             "population)")


def _fold_population(batches: Iterator[pa.RecordBatch], *, cols: list[str],
                     weight: str | None, nulls: str, checks: list[str],
                     big: str) -> Iterator[pa.RecordBatch]:
    """Executor side of :func:`population_histogram`: a partition's joined classes, summarized.

    Columns come positional (``c0…``, then the count or weight checks, then the
    population's count) and take the QI names back (``cols``), the others ``checks`` and
    ``big`` (names outside ``cols``).
    """
    import pickle

    from .pushdown import finish_population_counts

    names = cols + checks + [big]
    parts = [pa.Table.from_batches([b]).rename_columns(names) for b in batches if b.num_rows]
    if parts:
        state = finish_population_counts(
            pa.concat_tables(parts), qi=cols, count=checks[0], population_count=big,
            weight=weight, checks=checks if weight else None, nulls=nulls)
        yield pa.RecordBatch.from_pydict({"state": [pickle.dumps(state)]})


def anonymize(data: Any, *, output: Any, qi: str | Sequence[str], sensitive: str,
              weight: str | None = None, **options: Any) -> Any:
    """Anonymize a Spark DataFrame on the cluster; write the release to ``output``.

    Spark counts the histogram of distinct (QI, sensitive) cells (:func:`row_counts`, no
    group); only it reaches this process. The search, the write, the re-audit and every
    keyword: :func:`fastpriv.anonymize.out_of_core.release_from_engine`, whose
    :class:`~fastpriv.anonymize.out_of_core.OutOfCoreRelease` this returns; the file equals
    the in-memory release of the same rows.
    """
    from .anonymize.out_of_core import release_from_engine

    return release_from_engine(row_counts, data, output=output, qi=qi, sensitive=sensitive,
                               weight=weight, **options)


# ============================================================================ folds
def _fold_values(batches: Iterator[pa.RecordBatch], *, keys: list[str], sensitive: str,
                 nulls: str, weight: str | None) -> Iterator[pa.RecordBatch]:
    """Executor side of :func:`audit`'s first pass: one partition's value totals.

    :func:`fastpriv.streaming.value_distribution` under the null policy, as one pickled
    ``(values, totals)`` row (nothing for a partition without a row).
    """
    import pickle

    from .streaming import value_distribution

    values, totals, n = value_distribution(batches, sensitive, keys=keys, nulls=nulls,
                                           weight=weight, allow_empty=True)
    if n:
        yield pa.RecordBatch.from_pydict({"state": [pickle.dumps((values, totals.tolist()))]})


def _fold_groups(batches: Iterator[pa.RecordBatch], *, cols: list[str], nulls: str,
                 weight: str | None, params: dict) -> Iterator[pa.RecordBatch]:
    """Executor side of :func:`audit`: the partition's complete groups folded into one state.

    The partition holds every row of its groups (or every (group, value) pair counted
    where the rows were, with its count as ``weight``: shuffled by the group keys); they are
    counted by a :class:`~fastpriv.counts.CountAccumulator` under the null policy, the
    release built here and folded into a :class:`~fastpriv.folds.GroupwiseState`, which
    leaves pickled as one row: its size depends on the models' parameters, not on the
    partition's groups. The positional columns take their real names back (``cols``: keys…,
    sensitive; then ``weight``): a model may read the sensitive column's name (its
    hierarchy).
    """
    import pickle

    from .counts import CountAccumulator
    from .folds import GroupwiseState

    names = cols + ([weight] if weight is not None else [])
    acc = CountAccumulator(cols[:-1], cols[-1], nulls=nulls, n_jobs=1, weight=weight)
    for batch in batches:
        if batch.num_rows:
            acc.add(batch.rename_columns(names))
    if acc.n_groups:
        state = GroupwiseState(**params).update(acc.to_release())
        yield pa.RecordBatch.from_pydict({"state": [pickle.dumps(state)]})


def _states(frame: Any, fn: Callable) -> list:
    """Run ``fn`` over every partition of ``frame`` (``mapInArrow``); the unpickled states."""
    import pickle

    out = frame.mapInArrow(fn, "state binary")
    table = _explained(lambda: _collect(out))
    return [pickle.loads(b) for b in table.column("state").to_pylist()]


def _partition_keys(picked: Any, pos: list[str]) -> list:
    """Return the shuffle's key expressions: the group keys as fastpriv compares them.

    A float key is hashed with NaN read as NULL and ``-0.0`` as ``0.0`` (one group in
    memory, possibly two hashes in Spark), so every row of a group meets in one partition.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    out = []
    for p in pos:
        c = F.col(p)
        if isinstance(picked.schema[p].dataType, (T.FloatType, T.DoubleType)):
            c = F.when(F.isnan(c), F.lit(None)).when(c == 0, F.lit(0.0)).otherwise(c)
        out.append(c)
    return out


def audit(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
          qi: Sequence[str] | None = None, skylines: Any = None, classic: bool = True,
          l: int = 2, q: Any = "compute", order: Sequence[Any] | None = None,  # noqa: E741
          nulls: str = "error", weight: str | None = None, k: int | None = None,
          partitions: int | None = None, options: Mapping[str, Any] | None = None) -> Any:
    """Audit a Spark DataFrame as folds on the executors: only summaries reach the driver.

    The classical models, the privacy skyline and (c,k)-safety are folds over groups (a
    statistic of one group, a summary that merges, a finish: :mod:`fastpriv.folds`). Each
    input partition first counts its (group, value) pairs with fastpriv's kernels
    (``mapInArrow``; weights checked, nulls kept as labels), and the pairs — at most as
    many as rows, far fewer when groups are large — are shuffled by the group keys, so
    every partition holds complete groups; each executor counts its pairs, folds its groups
    into a :class:`~fastpriv.folds.GroupwiseState` and sends that state alone — the worst
    group of each model with its key, the skyline's minima (Chen et al., Theorem 3). The
    driver merges one state per partition: its memory depends on the models' parameters, not
    on the number of groups (:func:`release` brings every (group, value) pair instead).
    t-closeness, β-likeness and δ-disclosure compare each group with the whole table's
    distribution Q, counted by a first pass (one (values, totals) row per partition) unless
    ``q=`` gives it.

    Values and worst-group keys equal ``classic.audit`` / ``skyline.check`` of the same
    rows in memory (ties: the first group in key order); ``worst_group`` indices are not
    known across partitions and are None, as in
    :func:`fastpriv.distributed.groupwise_audit`. Needs fastpriv importable on the
    executors (see :func:`worker_error`).

    Parameters
    ----------
    data : pyspark.sql.DataFrame
        The rows (one per individual, or per distinct row with ``weight``).
    sensitive, group, qi, nulls, weight :
        As for :func:`release`.
    skylines : mapping or list, optional
        Skyline points to check (:func:`fastpriv.skyline.check`).
    classic : bool
        Evaluate the classical models.
    l : int
        ℓ of recursive (c,ℓ)-diversity.
    q : "compute", mapping or None
        Distribution Q: ``"compute"`` (default) runs the first pass; a mapping gives Q; None
        leaves out the models that need it (named in ``skipped``).
    order : sequence, optional
        Value order for ordered t-closeness.
    k : int, optional
        (c,k)-safety at ``k`` (:func:`fastpriv.ck_safety.audit`): each partition sends the
        few groups the answer can depend on (:class:`~fastpriv.folds.CkState`).
    partitions : int, optional
        Partitions of the shuffle (default: ``spark.sql.shuffle.partitions``).
    options : mapping, optional
        Option values of the registry's models: those declaring a per-group statistic are
        folded too (:class:`~fastpriv.folds.GroupwiseState`; ``models`` of the result).
        They travel to the executors (a hierarchy folder must be readable there).

    Returns
    -------
    fastpriv.streaming.StreamAudit

    """
    from ._arrow import NULL_POLICIES
    from ._validation import check_choice, check_int
    from .folds import GroupwiseState, needs_q, q_of_totals, q_param

    check_choice(nulls, "nulls", NULL_POLICIES)
    keys = _check(data, sensitive, group, qi, METHODS[0], MERGES[0], weight)
    if partitions is not None:
        partitions = check_int(partitions, "partitions", minimum=1)
    picked, pos = _picked(data, keys + [sensitive], weight)
    w = None if weight is None else "w"
    skipped, values, qv, passes = {}, None, None, 1
    if needs_q(classic, options) and isinstance(q, str) and q == "compute":
        parts = _states(picked, functools.partial(
            _fold_values, keys=pos[:-1], sensitive=pos[-1], nulls=nulls, weight=w))
        values, qv = q_of_totals(parts)
        passes = 2
    elif needs_q(classic, options):
        values, qv, skipped = q_param(q)
    params = {"l": l, "values": values, "q": qv, "order": order, "skylines": skylines,
              "classic": classic, "k": k, "options": options}
    GroupwiseState(**params)                       # bad parameters: here, not on a worker
    # each input partition counts its (group, value) pairs first (weights checked, nulls
    # kept as labels), so the shuffle moves pairs, at most as many as rows
    pairs = _partition_states(picked, pos, weight)
    by = _partition_keys(pairs, pos[:-1])
    shuffled = pairs.repartition(partitions, *by) if partitions else pairs.repartition(*by)
    states = _states(shuffled, functools.partial(
        _fold_groups, cols=keys + [sensitive], nulls=nulls,
        weight=unique_name("count", keys + [sensitive]), params=params))
    if not states:
        raise InputError("data is empty: a release needs at least one row")
    return functools.reduce(GroupwiseState.merge, states).finish(passes=passes,
                                                                 skipped=skipped)
