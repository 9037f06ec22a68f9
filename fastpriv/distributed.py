"""Dask integration: counts and audits computed on a cluster, identical to one machine.

Install the optional extra: ``pip install "fastpriv[dask]"``. Dask is imported lazily, inside
the functions; ``import fastpriv.distributed`` alone imports nothing of it.

What runs where
---------------
**Counts** (:func:`count_partitions`, :func:`release_from_dask`). Each partition — a
partition of a ``dask.dataframe`` or a file / row group of a Parquet dataset on disk — is
counted by a :class:`~fastpriv.counts.CountAccumulator` (the Numba streaming counter,
single-threaded inside the task: the cluster provides the parallelism); the partial
states are merged by addition in a tree of fan-in ``split_every`` (like Dask's own
reductions), and the client receives one accumulator: memory ∝ (group, value) pairs. The
:class:`~fastpriv.Release` built from it equals ``Release.from_table`` on all rows, so
**any** audit runs on it unchanged (``classic.audit``, ``ck_safety.audit``,
``skyline.check``, …).

**Releases with more groups than fit on one machine** (:func:`groupwise_audit`). When the
release itself is too large for the client, the data is partitioned *by group* (every group
entirely inside one partition — ``partition_by_group=True`` shuffles on the keys), every
partition builds the release of its own groups and folds it into a
:class:`~fastpriv.streaming.GroupwiseState` (the classical per-group minima/maxima and the
skyline sufficient statistics SS1..SS5), and the states are reduced by elementwise min /
max. Only O(points) travels back. t-closeness, β-likeness and δ-disclosure need the
distribution Q of the whole table: it is computed first by a tree reduction of per-partition
value counts (or passed as ``q=``). (c,k)-safety combines buckets across the whole release
(a knapsack), so it needs the counts path.

Every group inside one partition is **checked**, not assumed: each partition also reports
the first and last key of its groups; when those ranges do not overlap (files written per
key range) nothing more is read, otherwise a second pass counts each partition's distinct
keys (a tree-merged :class:`~fastpriv.counts.CountAccumulator`, memory on the client ∝
groups) and a key found in two partitions raises :class:`~fastpriv.InputError` naming the
group and the fixes (``partition_by_group=True``, or the counts path). Witness groups are
the in-memory ones: ties go to the first group in key order, in every partition and in
every merge.

Parquet on disk is read Arrow-natively (``pyarrow.dataset`` fragments with column
projection, one task per file or row group, ``key=value`` folders as hive partition
columns) — faster than going through pandas, and the label types are exactly those of the
file. A ``dask.dataframe`` is accepted as is (each partition is converted with
``pyarrow.Table.from_pandas``; an integer column that pandas turned into floats because a
partition holds nulls is cast back to the frame's integer type, so ``29`` stays ``29``).
Every entry point takes ``weight=``, a multiplicity column as in
:meth:`~fastpriv.Release.from_table` (each row stands for ``weight`` identical rows).

Warm the JIT cache once per cluster: give every worker the same ``FASTPRIV_CACHE_DIR`` (a
shared file system, or a directory baked into the worker image by ``fastpriv warmup``) and
call :func:`warm_workers` — one worker compiles, all the others only load from the cache.
Concurrent *first* compiles in several worker processes would each pay the compile.

Example (needs a Parquet directory; ``tests/test_distributed.py`` runs the same on a real
LocalCluster)::

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
    rel = release_from_dask("data/", sensitive="disease", group="gid")
    fastpriv.ck_safety.audit(rel, k=12)

The equivalent Spark recipe
---------------------------
Spark (or any SQL engine) produces the same mergeable state — (group, value, count) rows —
and :meth:`Release.from_counts` turns it into the release::

    counts = (df.groupBy("gid", "disease").count()          # or several QI columns
                .toPandas())                                   # small: one row per pair
    rel = fastpriv.Release.from_counts(counts, group="gid", sensitive="disease",
                                       count="count")

or, Arrow end to end, with per-partition fastpriv counting inside ``mapInArrow``::

    def count_part(batches):
        acc = fastpriv.CountAccumulator(["gid"], "disease", n_jobs=1)
        for b in batches:
            acc.add(b)
        if acc.n_groups:
            yield from acc.to_table().to_batches()   # gid, disease, count
    schema = "gid long, disease string, count long"
    parts = df.select("gid", "disease").mapInArrow(count_part, schema)
    counts = parts.groupBy("gid", "disease").agg(F.sum("count").alias("count"))
    rel = fastpriv.Release.from_counts(counts.toPandas(), group="gid",
                                       sensitive="disease", count="count")

The group-partitioned audit maps to ``df.repartition("gid").mapInPandas(...)`` returning a
pickled :class:`~fastpriv.streaming.GroupwiseState` per partition, reduced with
``GroupwiseState.merge``.

"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._validation import unique_name
from .errors import InputError, InputTypeError

if TYPE_CHECKING:
    from .risk import ClassCounts

__all__ = ["count_partitions", "release_from_dask", "row_counts", "groupwise_audit", "value_counts",
           "warm_workers", "anonymize", "class_counts", "class_histogram",
           "population_histogram", "robustness_audit", "foreground_audit"]


# ============================================================================ helpers
def _require_dask() -> Any:
    try:
        import dask
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ImportError("fastpriv.distributed needs Dask: pip install 'fastpriv[dask]'"
                          ) from exc
    return dask


def _keys_of(group: Any, qi: Any) -> list[str]:
    if (group is None) == (qi is None):
        raise InputError("give exactly one of group= or qi=")
    keys = [group] if isinstance(group, str) else list(group if group is not None else qi)
    if not keys:
        raise InputError("group/qi: at least one column is required")
    return keys


def _check_split_every(split_every: Any) -> int:
    from ._validation import check_int

    return check_int(split_every, "split_every", minimum=2)


def _is_dask_collection(obj: Any) -> bool:
    return type(obj).__module__.startswith("dask") and hasattr(obj, "to_delayed")


def _parquet_pieces(path: str, columns: list[str], min_pieces: int) -> list:
    """Parquet fragments (files, split into row groups when there are few files)."""
    from ._arrow import open_dataset, reading
    from ._validation import check_columns

    with reading(path, "data"):
        dataset = open_dataset(path)      # hive partition folders give columns, as everywhere
        if dataset is None:
            raise InputError(f"data: {path!r} is a CSV file; give Parquet data or a dask "
                             "DataFrame (dask.dataframe.read_csv)")
        check_columns(columns, dataset.schema.names, "data")
        frags = list(dataset.get_fragments())
        if len(frags) < min_pieces:
            split = []
            for f in frags:
                split.extend(f.split_by_row_group())
            frags = split
    schema = dataset.schema
    return [(f, schema) for f in frags]


def _pieces(data: Any, columns: list[str], min_pieces: int) -> list:
    """``(kind, object)`` per partition: a Parquet fragment or a delayed pandas frame."""
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if not os.path.exists(path):
            raise InputError(f"data: no such file or directory: {path!r}")
        return [("fragment", f) for f in _parquet_pieces(path, columns, min_pieces)]
    if _is_dask_collection(data):
        from ._validation import check_columns

        check_columns(columns, list(data.columns), "data")
        frame = data[columns]
        types = _source_types(frame)
        return [("pandas", (d, types)) for d in frame.to_delayed()]
    raise InputTypeError("data must be a dask DataFrame or a path to Parquet data, got "
                    f"{type(data).__name__}")


def _source_types(frame: Any) -> dict[str, Any]:
    """``{column: Arrow type}`` of a Dask frame's source, where pandas may lose it.

    Partitions are pandas frames: with pandas' NumPy backend an integer column holding a
    null arrives as float64 (``dd.read_parquet`` turns ``29`` into ``29.0``) and a column
    whose partition holds only nulls as an untyped (null) column. The integer columns of
    the frame's ``_meta`` give their type; a frame read by ``dd.read_parquet`` (possibly
    with a column selection on top) gives every column's type from the Parquet schema.
    :func:`_to_table` casts back, so labels are those of ``Release.from_table`` on the
    files.
    """
    import numpy as np
    import pyarrow as pa

    out = {}
    for name, dtype in frame._meta.dtypes.items():
        if isinstance(dtype, np.dtype) and dtype.kind in "iu":
            out[str(name)] = pa.from_numpy_dtype(dtype)
    try:                 # dask-expr: Projection* over ReadParquet (nothing renames columns)
        node = frame.expr
        while type(node).__name__ == "Projection":
            node = node.frame
        info = getattr(node, "_dataset_info", None) if "ReadParquet" in type(
            node).__name__ else None
        schema = info.get("schema") if isinstance(info, dict) else None
    except Exception:    # noqa: BLE001 - another Dask version: the meta alone
        schema = None
    if isinstance(schema, pa.Schema):
        for name in frame.columns:
            if str(name) in schema.names:
                out[str(name)] = schema.field(str(name)).type
    return out


def _to_table(kind: str, obj: Any, columns: list[str]):
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "fragment":
        frag, schema = obj
        return frag.to_table(schema=schema, columns=columns)
    df, types = obj if isinstance(obj, tuple) else (obj, {})
    table = pa.Table.from_pandas(df, preserve_index=False).select(columns)
    for name, typ in types.items():
        if name not in columns:
            continue
        col = table.column(name)
        i = table.column_names.index(name)
        if pa.types.is_null(col.type) and not pa.types.is_null(typ):
            table = table.set_column(i, name, pa.nulls(len(col), typ))
        elif pa.types.is_floating(col.type) and pa.types.is_integer(typ):
            if pc.all(pc.equal(pc.floor(col), col)).as_py() is False:
                raise InputError(f"data: column {name!r} is an integer column of the Dask "
                                 "frame but a partition holds fractions")
            table = table.set_column(i, name, col.cast(typ))   # nulls made them floats
    return table


# ============================================================================ counts
def _columns(keys: list[str], sensitive: str, weight: str | None) -> list[str]:
    """Return the columns a task reads: the keys, the sensitive and the weight column."""
    if weight is not None:
        if not isinstance(weight, str):
            raise InputTypeError(f"weight must be a column name, got {type(weight).__name__}")
        if weight in keys or weight == sensitive:
            raise InputError(f"weight column {weight!r} is also a key or sensitive column")
    return keys + [sensitive] + ([weight] if weight is not None else [])


def _piece_table(kind: str, obj: Any, keys: list[str], sensitive: str, nulls: str,
                 weight: str | None):
    """Return a partition's rows after the null policy, without the rows of weight 0."""
    from ._arrow import apply_null_policy, apply_weights

    table = _to_table(kind, obj, _columns(keys, sensitive, weight))
    if weight is not None:      # first, as Release.from_table: every row's weight checked
        table, _ = apply_weights(table, weight)
    table, _ = apply_null_policy(table, keys + [sensitive], nulls)
    return table


def _count_piece(kind: str, obj: Any, keys: list[str], sensitive: str, nulls: str,
                 weight: str | None = None):
    from .counts import CountAccumulator

    acc = CountAccumulator(keys, sensitive, nulls=nulls, n_jobs=1, weight=weight)
    acc.add(_to_table(kind, obj, _columns(keys, sensitive, weight)))
    return acc


def _merge_accs(*accs: Any):
    from .counts import merge

    return merge(accs)


def count_partitions(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                     qi: Sequence[str] | None = None, nulls: str = "error",
                     weight: str | None = None, split_every: int = 8,
                     compute: bool = True) -> Any:
    """Count (group, value) pairs of every partition on the cluster; merge in a tree.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path
        A Dask DataFrame (any collection: from Parquet, CSV, ``from_pandas``, …) or a path
        to a Parquet file / directory (read with pyarrow, one task per file or row group;
        ``key=value`` folders are hive partition columns).
    sensitive, group, qi, nulls :
        As for :meth:`fastpriv.Release.from_table` (SVPI).
    weight : str, optional
        Multiplicity column, as in :meth:`fastpriv.Release.from_table`: each row stands
        for ``weight`` identical rows (non-negative integers, no nulls).
    split_every : int
        Fan-in of the merge tree.
    compute : bool
        Return the merged :class:`~fastpriv.counts.CountAccumulator` (default), or the
        ``dask.delayed`` object that computes it.

    Returns
    -------
    fastpriv.counts.CountAccumulator or dask.delayed.Delayed
        The merged counts (or the delayed object computing them).

    Notes
    -----
    Runs on the current Dask scheduler (a ``distributed.Client`` if one is active). Each
    task counts single-threaded (``n_jobs=1``); tasks only ship their partial state.

    """
    dask = _require_dask()
    keys = _keys_of(group, qi)
    split_every = _check_split_every(split_every)
    pieces = _pieces(data, _columns(keys, sensitive, weight), min_pieces=2 * split_every)
    if not pieces:
        raise InputError("data is empty: a release needs at least one row")
    parts = [dask.delayed(_count_piece, pure=True)(kind, obj, keys, sensitive, nulls, weight)
             for kind, obj in pieces]
    out = _reduce(dask, parts, _merge_accs, split_every)
    return out.compute() if compute else out


def _reduce(dask: Any, parts: list, combine: Any, split_every: int) -> Any:
    while len(parts) > 1:
        nxt = []
        for i in range(0, len(parts), split_every):
            chunk = parts[i:i + split_every]
            nxt.append(chunk[0] if len(chunk) == 1 else
                       dask.delayed(combine, pure=True)(*chunk))
        parts = nxt
    return parts[0]


def release_from_dask(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                      qi: Sequence[str] | None = None, nulls: str = "error",
                      weight: str | None = None, split_every: int = 8):
    """Build the :class:`~fastpriv.Release` of a Dask DataFrame or Parquet data (counts path).

    Identical (``Release.equals``) to ``Release.from_table`` on all rows (with the same
    ``weight=``); run any audit on it. Integer columns of a Dask frame keep their integer
    labels when a partition holds nulls (pandas makes them floats; they are cast back to
    the frame's integer type). See :func:`count_partitions`.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path
        As for :func:`count_partitions`.
    sensitive, group, qi, nulls, weight :
        As for :meth:`fastpriv.Release.from_table` (SVPI).
    split_every : int
        Fan-in of the merge tree.

    Returns
    -------
    fastpriv.Release
        An SVPI release.

    """
    acc = count_partitions(data, sensitive=sensitive, group=group, qi=qi, nulls=nulls,
                           weight=weight, split_every=split_every)
    return acc.to_release()


def row_counts(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
               sensitive: str, weight: str | None = None, count: str = "count",
               split_every: int = 8):
    """Count the distinct (QI, group, sensitive) rows on the cluster; a small Arrow table.

    The sufficient statistics of the row-level models: r-robustness
    (:func:`fastpriv.robustness.audit`) and the foreground attack
    (:func:`fastpriv.foreground.attack`) give the answer of the full table from the
    distinct rows with their multiplicity passed as ``weight=count``. Each partition is
    counted by a :class:`~fastpriv.counts.CountAccumulator` keyed on ``qi…, group…``
    (NULL kept as a label), the states are merged in a tree (:func:`count_partitions`),
    and the client receives one row per distinct row, in the form of
    :func:`fastpriv.pushdown.finish_row_counts` (labels typed as in memory, NaN read as
    NULL, exact int64 counts, rows sorted by the keys)::

        t = row_counts("patients/", qi=["zip", "age"], group="gid", sensitive="disease")
        fastpriv.robustness.audit(t, qi=["zip", "age"], group="gid",
                                  sensitive="disease", weight="count", r=2)

    Groups may span partitions and files: the counts add.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path
        As for :func:`count_partitions`.
    qi : str or list of str
        The QI columns (the adversary's knowledge).
    group : str or list of str
        The group-id column(s) of the release.
    sensitive : str
        The sensitive column.
    weight : str, optional
        Multiplicity column, as in :meth:`fastpriv.Release.from_table`: the count is the
        sum of the weights (a null or negative weight raises
        :class:`~fastpriv.InputError`).
    count : str
        Name of the count column of the result.
    split_every : int
        Fan-in of the merge tree.

    Returns
    -------
    pyarrow.Table
        Columns ``qi…, group…, sensitive, count`` (int64), sorted.

    """
    from .pushdown import check_row_names, finish_row_counts

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight, count)
    cols = qi_cols + group_cols + [sensitive]
    table = _arrow_counts(data, cols, weight, count, _check_split_every(split_every))
    return finish_row_counts(table, qi=qi_cols, group=group_cols, sensitive=sensitive,
                             count=count)


def _arrow_counts(data: Any, cols: list[str], weight: str | None, count: str,
                  split_every: int, finish: Callable[[Any], Any] | None = None,
                  sampling: Any = None, nulls: str = "value") -> Any:
    """``GROUP BY cols`` on the cluster in Arrow: one row per distinct row, its count.

    Each partition (or Parquet file / row group) counts its rows with Arrow's hash
    aggregation (:func:`_class_piece`: weights checked row by row, NULL and NaN labels of
    their own), and the partial tables are added in a tree of fan-in ``split_every``
    (:func:`_merge_classes`, the total checked first). A partial table holds the key
    columns and a count per distinct row — about the bytes of the keys — where a merged
    :class:`~fastpriv.counts.CountAccumulator` of ten million distinct rows held 8.8 GiB in
    one worker (10M IHIS-shaped rows, 9.9M distinct). ``finish`` runs on the merged table
    in the last task, on a worker: only its result reaches the client. With ``sampling``
    (:class:`fastpriv._sampling.SamplingColumns`) the sampling weight sums are added too
    (rows left out under ``nulls="drop"`` first, as in memory).
    """
    root = _class_tree(data, cols, weight, count, split_every, sampling=sampling, nulls=nulls)
    return (root if finish is None else _require_dask().delayed(finish, pure=True)(root)
            ).compute()


def _class_tree(data: Any, cols: list[str], weight: str | None, count: str,
                split_every: int, param: str = "data", non_null: Sequence[str] = (),
                sampling: Any = None, nulls: str = "value") -> Any:
    """Return the delayed ``GROUP BY cols`` of :func:`_arrow_counts` (its merge tree's root).

    Rows with a null in a ``non_null`` column are left out (:func:`_class_piece`).
    """
    dask = _require_dask()
    parts = _class_parts(data, cols, weight, count, split_every, param, non_null, sampling,
                         nulls)
    sums = 0 if sampling is None else len(sampling.sums)
    return _reduce(dask, parts, functools.partial(_merge_classes, weight, sums), split_every)


def _class_parts(data: Any, cols: list[str], weight: str | None, count: str,
                 split_every: int, param: str = "data", non_null: Sequence[str] = (),
                 sampling: Any = None, nulls: str = "value") -> list:
    """Return one delayed :func:`_class_piece` per partition (a Parquet file / row group)."""
    dask = _require_dask()
    read = cols + list(non_null) + ([weight] if weight is not None else [])
    pieces = _pieces(data, read + ([sampling.column] if sampling is not None else []),
                     min_pieces=2 * split_every)
    if not pieces:
        raise InputError(f"{param} has no rows (after the null policy and weights of 0)")
    return [dask.delayed(_class_piece, pure=True)(kind, obj, cols, weight, count,
                                                  tuple(non_null), sampling, nulls)
            for kind, obj in pieces]


def _class_buckets(parts: list, cols: list[str], weight: str | None, split_every: int,
                   buckets: int, sums: int = 0) -> list:
    """Split the partitions' class tables into ``buckets`` by a hash of the QI; merge each.

    Every class lands in one bucket (:func:`fastpriv._buckets.split_by_key`: its key hashed
    as fastpriv compares keys), so bucket ``b``'s merge-tree root holds complete classes — about
    1/``buckets`` of them — and no task holds every class. ``sums``: the columns added
    after the count (the sampling weight sums).
    """
    from ._buckets import split_by_key

    dask = _require_dask()
    merge = functools.partial(_merge_classes, weight, sums)
    if buckets == 1:
        return [_reduce(dask, parts, merge, split_every)]
    split = [dask.delayed(split_by_key, pure=True, nout=buckets)(p, cols, buckets)
             for p in parts]
    return [_reduce(dask, [s[b] for s in split], merge, split_every) for b in range(buckets)]


# ============================================================================ classes
def _class_piece(kind: str, obj: Any, qi: list[str], weight: str | None, count: str,
                 non_null: Sequence[str] = (), sampling: Any = None, nulls: str = "value"):
    """One partition's ``GROUP BY qi`` with ``COUNT(*)`` (``SUM(weight)``): an Arrow table.

    The weights are checked first, row by row, as in memory (:func:`_piece_table`: a null
    or negative weight raises, rows of weight 0 go); NULL and NaN stay labels of their own
    (the null policy is applied once, to the merged classes). Labels are put in the types
    of :func:`fastpriv._arrow.canonical_labels` so that every partition's table has one
    schema. Rows with a null (or NaN) in a ``non_null`` column are left out first. With
    ``sampling`` the sampling weight sums follow the count
    (:func:`fastpriv._sampling.arrow_sums`, under the null policy ``nulls``).
    """
    import pyarrow as pa

    from ._arrow import apply_weights, canonical_labels, kept_rows

    table = _to_table(kind, obj, qi + list(non_null)
                      + ([weight] if weight is not None else [])
                      + ([sampling.column] if sampling is not None else []))
    if non_null:
        kept = kept_rows(table, list(non_null), "drop")
        if kept is not None:
            table = table.take(pa.array(kept))
    if sampling is not None:
        from ._sampling import arrow_sums

        w = None
        if weight is not None:
            table, w = apply_weights(table, weight)
        table = arrow_sums(table, qi=qi, weights=w, count=count, columns=sampling,
                           nulls=nulls)
        out = table.group_by(qi, use_threads=False).aggregate(
            [(c, "sum") for c in [count, *sampling.sums]])
        cols = {c: canonical_labels(out.column(c).combine_chunks(), name=c) for c in qi}
        return pa.table({**cols, **{c: out.column(f"{c}_sum")
                                    for c in [count, *sampling.sums]}})
    if weight is None:
        agg = [([], "count_all")]
    else:
        table, w = apply_weights(table, weight)
        table = table.set_column(table.schema.get_field_index(weight), weight, pa.array(w))
        agg = [(weight, "sum")]
    out = table.group_by(qi, use_threads=False).aggregate(agg)
    cols = {c: canonical_labels(out.column(c).combine_chunks(), name=c) for c in qi}
    counts = out.column(out.num_columns - 1).cast(pa.int64())
    return pa.table({**cols, count: counts})


def _merge_classes(weight: str | None, sums: int, *parts: Any):
    """Add partitions' class tables: one row per class, the count (and ``sums`` more) summed.

    The count is the last column but ``sums`` (the sampling weight sums, if any). Its total
    is checked first (at most 2**63 - 1, as in memory), so no sum wraps.
    """
    import pyarrow as pa

    from ._validation import check_total

    table = pa.concat_tables(parts, promote_options="permissive")
    added = table.column_names[-1 - sums:]
    check_total(table.column(added[0]).to_numpy(),
                "data" if weight is None else f"weight column {weight!r}")
    qi = table.column_names[:-1 - sums]
    out = table.group_by(qi, use_threads=False).aggregate([(c, "sum") for c in added])
    return out.select(qi + [f"{c}_sum" for c in added]).rename_columns(qi + added)


def class_counts(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                 nulls: str = "error", split_every: int = 8,
                 sampling_weight: str | None = None) -> ClassCounts:
    """Count the QI equivalence classes on the cluster; the :class:`~fastpriv.risk.ClassCounts`.

    Each partition (a partition of the Dask DataFrame, or a Parquet file / row group) runs
    a ``GROUP BY qi`` with ``COUNT(*)`` (``SUM(weight)``) in Arrow; the partial class
    tables are added in a tree of fan-in ``split_every`` and the client receives one row
    per class, read by :func:`fastpriv.pushdown.finish_class_counts`. The classes equal
    ``risk.class_counts(table, qi=qi, weight=weight, sampling_weight=sampling_weight,
    nulls=nulls)`` on all rows (labels and their types, sizes, null policy), so
    :func:`fastpriv.risk.audit`,
    :func:`fastpriv.population.k_map` and :func:`fastpriv.population.delta_presence` on
    them — the population counted the same way — answer as in memory::

        sample = class_counts("released/", qi=["zip", "age"])
        fastpriv.population.k_map(sample, population=class_counts("census/",
                                                                   qi=["zip", "age"]))

    Classes may span partitions and files: the counts add.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or path
        As for :func:`count_partitions`.
    qi : str or list of str
        The quasi-identifier columns.
    weight : str, optional
        Multiplicity column, as in :func:`fastpriv.risk.audit`: each row stands for
        ``weight`` identical records (integers ≥ 0; a null or negative weight raises
        :class:`~fastpriv.InputError`, as in :func:`row_counts`).
    nulls : {"error", "drop", "value"}
        Null policy of the QI columns, as in :meth:`fastpriv.risk.ClassCounts.from_table`
        (NaN is a null; a Dask frame's float partitions are pandas, where a null is NaN).
    split_every : int
        Fan-in of the merge tree.
    sampling_weight : str, optional
        Column of sampling weights (finite, > 0), as in
        :meth:`fastpriv.risk.ClassCounts.from_table`: each partition sums ``weight ·
        sampling_weight`` per class (:mod:`fastpriv._sampling`; the null policy covers this
        column too) and the tree adds the sums. Floating-point sums, added in the tree's
        order.

    Returns
    -------
    fastpriv.risk.ClassCounts
        One class per distinct QI tuple, with its number of records (and its sampling
        weight sum).

    """
    from .pushdown import check_class_names, class_count_columns, finish_class_counts

    cols = check_class_names(qi, weight, nulls, sampling_weight)
    split_every = _check_split_every(split_every)
    count, sampling = class_count_columns(cols, weight, sampling_weight)
    table = _arrow_counts(data, cols, weight, count, split_every, sampling=sampling,
                          nulls=nulls)
    return finish_class_counts(table, qi=cols, count=count, nulls=nulls, sampling=sampling)


def _histogram_of(table: Any, *, qi: list[str], count: str, nulls: str) -> Any:
    """Return the :class:`~fastpriv.class_histogram.ClassHistogram` of a merged class table."""
    from .class_histogram import ClassHistogram
    from .pushdown import finish_class_counts

    classes = finish_class_counts(table, qi=qi, count=count, nulls=nulls)
    return ClassHistogram.from_class_counts(classes)


def _bucket_histogram(table: Any, *, qi: list[str], count: str, nulls: str) -> tuple:
    """Summarize one bucket's (complete) classes into their histogram.

    ``("ok", histogram)``, or ``("empty",)`` when the null policy leaves no class, or
    ``("refused",)`` when they are refused (the client then finds the words of the refusal
    on the whole table, :func:`_folded`).
    """
    from ._arrow import kept_rows

    kept = kept_rows(table, qi, nulls) if table.num_rows else None
    if table.num_rows == 0 or (kept is not None and kept.size == 0):
        return ("empty",)
    try:
        return ("ok", _histogram_of(table, qi=qi, count=count, nulls=nulls))
    except InputError:
        return ("refused",)


def _bucket_match(sample: Any, people: Any, *, qi: list[str], count: str,
                  nulls: str) -> tuple:
    """Match one bucket's classes of both tables.

    ``("ok", PopulationHistogram)`` or ``("refused",)`` (as :func:`_bucket_histogram`).
    """
    try:
        return ("ok", _match(sample, people, qi=qi, count=count, nulls=nulls))
    except InputError:
        return ("refused",)


def _folded(results: Sequence[tuple], whole: Callable[[], Any]) -> Any:
    """Merge the buckets' summaries; on a refusal, ``whole()`` (the one-task path) raises it.

    A refusal's words name totals and the first class of the whole table (how many nulls,
    which class the population lacks), which no bucket knows: the one-task path over every
    class gives memory's words. Only a refused input pays for the second pass.
    """
    if any(r[0] == "refused" for r in results):
        return whole()
    summaries = [r[1] for r in results if r[0] == "ok"]
    out = summaries[0].merge(*summaries[1:]) if summaries else None
    if out is None or out.n_classes == 0:
        return whole()                  # no class at all: refused as the one task refuses
    return out


def _buckets_for(split_out: Any, *counts: int, split_every: int) -> int:
    """Return ``split_out``, checked, or the default for the larger table's partitions.

    The default is ``min(partitions, max(split_every, ⌈partitions / split_every⌉))``: it
    grows with the partitions as the first level of the merge tree does.
    """
    # k-map's fold on 8M population rows in 8 files (3.46M classes), 2 local workers:
    # 1 bucket peaked at 0.9-1.1 GiB in a worker, 2 at 0.72, 4 at 0.62, 8 at 0.54, 32 at
    # 0.53; 4 and 8 were the fastest. The default gives 8 there.
    from ._validation import check_int

    if split_out is not None:
        return check_int(split_out, "split_out", minimum=1)
    n = max(counts)
    return max(1, min(n, max(split_every, -(-n // split_every))))


def class_histogram(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                    nulls: str = "error", split_every: int = 8,
                    split_out: int | None = None, sampling_weight: str | None = None,
                    threshold: float | None = None) -> Any:
    """Count the QI classes on the cluster and bring back only their size histogram.

    The fold of the re-identification risk (:mod:`fastpriv.class_histogram`): each
    partition counts its classes (as :func:`class_counts`) and splits them by a hash of
    the QI into ``split_out`` buckets, so that every class is complete in one bucket; each
    bucket's tables are added in a tree and summarized on a worker into the histogram of
    class sizes with the first smallest class, and the client merges the summaries. No
    task holds every class (about 1/``split_out`` of them each), and only summaries reach
    the client. ``risk.audit`` on it equals ``risk.audit(table, qi=qi, weight=weight,
    nulls=nulls)`` for every measure that does not need each class (no population table,
    no sampling weights). A refused input (nulls under ``nulls="error"``) is refused with
    memory's words, found by a second pass over every class in one task. With
    ``sampling_weight`` each bucket sums its classes' sampling weights too and summarizes
    them into a :class:`~fastpriv.class_histogram.SamplingHistogram` (for ``threshold``),
    which ``risk.audit(..., threshold=threshold)`` reads as ``risk.audit(table, ...,
    sampling_weight=sampling_weight)``.

    Parameters
    ----------
    data, qi, weight, nulls, split_every, sampling_weight :
        As for :func:`class_counts`.
    split_out : int, optional
        Buckets the classes are split into (Dask's name for the output partitions of a
        reduction); default: the partitions, at most ``max(split_every, ⌈partitions /
        split_every⌉)``.
    threshold : float, optional
        With ``sampling_weight`` only: the risk threshold of the audit (the summary counts
        the records whose risk exceeds it; default 0.2, as ``risk.audit``).

    Returns
    -------
    fastpriv.class_histogram.ClassHistogram or SamplingHistogram

    """
    from ._sampling import fold_threshold
    from .pushdown import check_class_names

    cols = check_class_names(qi, weight, nulls, sampling_weight)
    split_every = _check_split_every(split_every)
    threshold = fold_threshold(threshold, sampling_weight)
    if sampling_weight is not None:
        return _sampling_histogram(data, cols, weight, nulls, split_every, split_out,
                                   sampling_weight, threshold)
    count = unique_name("count", cols)
    dask = _require_dask()
    parts = _class_parts(data, cols, weight, count, split_every)
    buckets = _buckets_for(split_out, len(parts), split_every=split_every)
    summarize = functools.partial(_bucket_histogram, qi=cols, count=count, nulls=nulls)
    results = dask.compute(*[dask.delayed(summarize, pure=True)(root) for root in
                             _class_buckets(parts, cols, weight, split_every, buckets)])
    return _folded(results, lambda: _arrow_counts(
        data, cols, weight, count, split_every, finish=functools.partial(
            _histogram_of, qi=cols, count=count, nulls=nulls)))


def _sampling_histogram(data: Any, cols: list[str], weight: str | None, nulls: str,
                        split_every: int, split_out: Any, sampling_weight: str,
                        threshold: Any) -> Any:
    """:func:`class_histogram` with sampling weights: a SamplingHistogram per bucket, merged."""
    from ._sampling import folded, histogram_part
    from .pushdown import class_count_columns

    count, sampling = class_count_columns(cols, weight, sampling_weight)
    dask = _require_dask()
    parts = _class_parts(data, cols, weight, count, split_every, sampling=sampling,
                         nulls=nulls)
    buckets = _buckets_for(split_out, len(parts), split_every=split_every)
    summarize = functools.partial(histogram_part, qi=cols, count=count, columns=sampling,
                                  nulls=nulls, threshold=threshold)
    roots = _class_buckets(parts, cols, weight, split_every, buckets, len(sampling.sums))
    return folded(dask.compute(*[dask.delayed(summarize, pure=True)(r) for r in roots]),
                  lambda: class_counts(data, qi=cols, weight=weight, nulls=nulls,
                                       split_every=split_every,
                                       sampling_weight=sampling_weight))


def _match(sample: Any, people: Any, *, qi: list[str], count: str, nulls: str) -> Any:
    """Join two merged class tables: their PopulationHistogram (none of the data's: empty)."""
    import pyarrow as pa

    from .pushdown import finish_population_counts

    big = unique_name("population", qi + [count])
    sample = sample.append_column(big, pa.nulls(sample.num_rows, pa.int64()))
    people = people.rename_columns(qi + [big]).add_column(
        len(qi), count, pa.nulls(people.num_rows, pa.int64()))
    try:
        both = pa.concat_tables([sample, people], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputError(f"population: QI column types differ from the data's ({exc})"
                         ) from None
    return finish_population_counts(both, qi=qi, count=count, population_count=big,
                                    weight=None, checks=None, nulls=nulls)


def _matched_of(sample: Any, people: Any, *, qi: list[str], count: str, nulls: str) -> Any:
    """Join two merged class tables (one task): their PopulationHistogram, or refused."""
    out = _match(sample, people, qi=qi, count=count, nulls=nulls)
    if out.n_classes == 0:
        raise InputError("data has no rows (after the null policy and weights of 0)")
    return out


def population_histogram(data: Any, *, qi: str | Sequence[str], population: Any,
                         weight: str | None = None, nulls: str = "error",
                         split_every: int = 8, split_out: int | None = None) -> Any:
    """Match the data's QI classes with a population's on the cluster; bring back the summary.

    The fold of k-map, δ-presence and the risk against a population table
    (:class:`~fastpriv.class_histogram.PopulationHistogram`): both tables' classes are
    counted per partition (as :func:`class_counts`) and split by a hash of the QI into
    ``split_out`` buckets (a class of the data and the same class of the population land
    in the same bucket); each bucket's tables are added in a tree and matched on a worker
    (:func:`fastpriv.risk.match_counts`), and the client merges the summaries — one entry
    per distinct (records, people) pair. No task holds every class.
    :func:`fastpriv.population.k_map`, :func:`~fastpriv.population.delta_presence` and
    :func:`fastpriv.risk.audit` on it equal the same calls on the tables in memory
    (``population=`` left out; no sampling weights). A refusal (nulls under
    ``nulls="error"``, a class the population lacks, QI types that differ) has memory's
    words, found by a second pass that matches every class in one task.

    Parameters
    ----------
    data, population : dask.dataframe.DataFrame or path
        As for :func:`class_counts`; both with the ``qi`` columns.
    qi, weight, nulls, split_every :
        As for :func:`class_counts` (``weight`` is the data's).
    split_out : int, optional
        Buckets, as for :func:`class_histogram` (default from the larger table's
        partitions).

    Returns
    -------
    fastpriv.class_histogram.PopulationHistogram

    """
    from .pushdown import check_class_names

    cols = check_class_names(qi, weight, nulls)
    split_every = _check_split_every(split_every)
    count = unique_name("count", cols)
    dask = _require_dask()
    sample = _class_parts(data, cols, weight, count, split_every)
    people = _class_parts(population, cols, None, count, split_every, param="population")
    buckets = _buckets_for(split_out, len(sample), len(people), split_every=split_every)
    match = functools.partial(_bucket_match, qi=cols, count=count, nulls=nulls)
    results = dask.compute(*[
        dask.delayed(match, pure=True)(a, b) for a, b in zip(
            _class_buckets(sample, cols, weight, split_every, buckets),
            _class_buckets(people, cols, None, split_every, buckets), strict=True)])

    def whole() -> Any:
        one = functools.partial(_matched_of, qi=cols, count=count, nulls=nulls)
        return dask.delayed(one, pure=True)(
            _class_tree(data, cols, weight, count, split_every),
            _class_tree(population, cols, None, count, split_every, param="population")
        ).compute()

    return _folded(results, whole)


# ============================================================================ Q
def _value_counts_piece(kind: str, obj: Any, keys: list[str], sensitive: str, nulls: str,
                        weight: str | None = None):
    from .streaming import value_distribution

    table = _piece_table(kind, obj, keys, sensitive, nulls, weight)
    if table.num_rows == 0:
        return {}
    values, totals, _ = value_distribution(table, sensitive, nulls="value", weight=weight)
    return dict(zip(values, totals.tolist(), strict=False))


def _sum_counts(*dicts: dict) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def value_counts(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                 qi: Sequence[str] | None = None, nulls: str = "error",
                 weight: str | None = None, split_every: int = 8) -> dict:
    """``{value: count}`` of the sensitive column over all partitions (tree reduction).

    Rows dropped by ``nulls="drop"`` (a null key or value) are not counted; null is a
    value of its own with ``nulls="value"``; a row counts ``weight`` times with
    ``weight=``.
    """
    dask = _require_dask()
    keys = _keys_of(group, qi)
    split_every = _check_split_every(split_every)
    pieces = _pieces(data, _columns(keys, sensitive, weight), min_pieces=2 * split_every)
    parts = [dask.delayed(_value_counts_piece, pure=True)(kind, obj, keys, sensitive, nulls,
                                                          weight)
             for kind, obj in pieces]
    return _reduce(dask, parts, _sum_counts, split_every).compute()


# ============================================================================ groupwise
def _audit_piece(kind: str, obj: Any, keys: list[str], sensitive: str, nulls: str,
                 params: dict, weight: str | None = None):
    """Return one partition's GroupwiseState and the key range of its groups.

    The range is ``[(first key, last key)]``, empty for a partition without rows.
    """
    from .release import Release
    from .streaming import GroupwiseState

    state = GroupwiseState(**params)
    table = _piece_table(kind, obj, keys, sensitive, nulls, weight)
    if not table.num_rows:
        return state, []
    rel = Release.from_table(table, sensitive=sensitive, group=keys, nulls="value",
                             weight=weight)
    state.update(rel)
    return state, [(rel.group_label(0), rel.group_label(rel.n_groups - 1))]


def _merge_states(*parts: Any):
    out, ranges = parts[0][0], list(parts[0][1])
    for state, more in parts[1:]:
        out = out.merge(state)
        ranges.extend(more)
    return out, ranges


def _disjoint(ranges: list) -> bool:
    """Whether the key ranges ``(first, last)`` of the partitions provably do not overlap.

    True only when every label has the same Python type in every range (column by column)
    and, sorted by first key, each range ends strictly before the next begins
    (:func:`~fastpriv._labels.label_less`: the release's key order, nulls last). Labels
    that do not compare (NaN) make it False: the exact check then decides.
    """
    from ._labels import LabelKey, label_less

    def kinds(label: Any) -> tuple:
        parts = label if isinstance(label, tuple) else (label,)
        return tuple(None if x is None else type(x) for x in parts)

    seen: list | None = None
    for lo, hi in ranges:
        for lab in (lo, hi):
            k = kinds(lab)
            if seen is None:
                seen = list(k)
            if len(k) != len(seen):
                return False
            for i, t in enumerate(k):
                if t is not None and seen[i] is None:
                    seen[i] = t
                elif t is not None and t is not seen[i]:
                    return False
    order = sorted(ranges, key=lambda r: LabelKey(r[0]))
    return all(label_less(a[1], b[0]) for a, b in zip(order, order[1:], strict=False))


_ONE = "__fastpriv_partition__"


def _keys_piece(kind: str, obj: Any, keys: list[str], sensitive: str, nulls: str,
                weight: str | None):
    """Return a CountAccumulator that holds each group key of the partition once."""
    import numpy as np
    import pyarrow as pa

    from .counts import CountAccumulator

    def one(t: Any) -> Any:
        return t.select(keys).append_column(_ONE, pa.array(np.zeros(t.num_rows, np.int8)))

    table = _piece_table(kind, obj, keys, sensitive, nulls, weight)
    acc = CountAccumulator(keys, _ONE, nulls="value", n_jobs=1)
    if table.num_rows:
        distinct = CountAccumulator(keys, _ONE, nulls="value", n_jobs=1)
        distinct.add(one(table))
        acc.add(one(distinct.to_release().groups))
    return acc


def _check_groups_in_one_partition(dask: Any, pieces: list, ranges: list, keys: list[str],
                                   sensitive: str, nulls: str, weight: str | None,
                                   split_every: int) -> None:
    """Raise InputError naming a group found in several partitions.

    Cheap when the partitions' key ranges do not overlap (files written per key range):
    nothing more is read. Otherwise every partition's distinct keys are counted once each
    (a tree-merged :class:`~fastpriv.counts.CountAccumulator`: memory on the client ∝
    groups) and a key counted twice is a group that spans partitions.
    """
    if len(ranges) < 2 or _disjoint(ranges):
        return
    parts = [dask.delayed(_keys_piece, pure=True)(kind, obj, keys, sensitive, nulls, weight)
             for kind, obj in pieces]
    rel = _reduce(dask, parts, _merge_accs, split_every).compute().to_release()
    import numpy as np

    spread = np.flatnonzero(np.asarray(rel.sizes) > 1)
    if spread.size:
        g = int(spread[0])
        n = int(rel.sizes[g])
        raise InputError(
            f"data: group {rel.group_label(g)!r} is split over {n} partitions (files, row "
            f"groups or Dask partitions), and {spread.size} group(s) in all; groupwise_audit "
            "needs every group inside one partition. Pass split_out= (the (group, value) "
            "pairs bucketed by group, any layout), a Dask DataFrame with "
            f"partition_by_group=True (shuffled on {keys}), or write the files per key "
            "range")


def groupwise_audit(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                    qi: Sequence[str] | None = None, skylines: Any = None,
                    classic: bool = True, l: int = 2,
                    q: Mapping[Any, float] | str | None = "compute",
                    order: Sequence[Any] | None = None, nulls: str = "error",
                    weight: str | None = None, partition_by_group: bool = False,
                    split_every: int = 8, k: int | None = None,
                    options: Mapping[str, Any] | None = None, split_out: int | None = None):
    """Audit a release too large for one machine: classical models, skyline, (c,k)-safety.

    Every partition must hold **complete groups** (each group inside one partition):
    Parquet files written per group range, a Dask DataFrame indexed / shuffled on the
    keys, or ``partition_by_group=True`` (a Dask shuffle on the keys first). Each partition
    builds its own release and a :class:`~fastpriv.streaming.GroupwiseState`; the states
    are reduced by min/max in a tree. Values and worst-group keys equal the single-machine
    ``classic.audit`` / ``skyline.check`` (``worst_group`` indices are not known across
    partitions and are ``None``).

    That every group lies in one partition is checked, not assumed: each partition reports
    the first and last key of its groups, and when the ranges do not overlap (files
    written per key range) that settles it; otherwise a second pass counts every
    partition's distinct keys (memory on the client ∝ groups). A group found in two
    partitions raises :class:`~fastpriv.InputError` naming it. After
    ``partition_by_group=True`` (Dask's shuffle on the keys) the check is skipped.

    With ``split_out=b`` the data may be laid out in any way: each partition counts its
    (group, value) pairs (Arrow's hash aggregation, weights checked, as
    :func:`class_counts` counts classes), splits them by a hash of the group keys into
    ``b`` buckets (:func:`fastpriv._buckets.split_by_key`), each bucket's pairs are added
    in a tree and folded into a state on a worker, and the client merges ``b`` states. No
    row is shuffled — only the pairs, which a partition has at most as many of as rows —
    and no task holds every group.

    Parameters
    ----------
    data : dask DataFrame or path
        A Dask DataFrame or a path to Parquet data (file or directory).
    sensitive, group, qi, nulls :
        As for :meth:`Release.from_table` (SVPI).
    skylines : mapping or list, optional
        Skyline points to check (:func:`fastpriv.skyline.check`).
    classic : bool
        Evaluate the classical models.
    l : int
        ℓ of recursive (c,ℓ)-diversity.
    q : "compute", mapping or None
        Distribution Q for t-closeness/β/δ: ``"compute"`` (default) runs a tree reduction
        of value counts first; a mapping gives Q; None skips those models.
    order : sequence, optional
        Value order for ordered t-closeness.
    weight : str, optional
        Multiplicity column, as in :meth:`Release.from_table`.
    partition_by_group : bool
        Shuffle a Dask DataFrame on the group keys before auditing.
    split_every : int
        Fan-in of the tree reductions (at least 2).
    k : int, optional
        (c,k)-safety at ``k``, folded by :class:`~fastpriv.folds.CkState` (each partition
        sends the few groups the answer can depend on).
    options : mapping, optional
        Option values of the registry's models: those declaring a per-group statistic are
        folded too (:class:`~fastpriv.folds.GroupwiseState`; ``models`` of the result).
    split_out : int, optional
        Fold buckets of complete groups formed from every partition's (group, value)
        pairs, in any layout (see above); None folds each partition as it is.

    Returns
    -------
    fastpriv.streaming.StreamAudit

    """
    dask = _require_dask()
    from ._validation import check_int
    from .folds import needs_q, q_of_totals, q_param

    keys = _keys_of(group, qi)
    cols = _columns(keys, sensitive, weight)
    split_every = _check_split_every(split_every)
    if split_out is not None:
        split_out = check_int(split_out, "split_out", minimum=1)
        if partition_by_group:
            raise InputError("split_out: buckets of pairs need no shuffle of the rows; give "
                             "partition_by_group=True or split_out=, not both")
    skipped: dict = {}
    values = qv = None
    want_q = needs_q(classic, options)
    if want_q and isinstance(q, str) and q == "compute":
        counts = value_counts(data, sensitive=sensitive, group=group, qi=qi, nulls=nulls,
                              weight=weight, split_every=split_every)
        values, qv = q_of_totals([(list(counts), list(counts.values()))])
    elif want_q:
        values, qv, skipped = q_param(q)
    if partition_by_group:
        if not _is_dask_collection(data):
            raise InputTypeError("partition_by_group=True needs a dask DataFrame")
        data = data.shuffle(on=keys)
    params = {"l": l, "values": values, "q": qv, "order": order, "skylines": skylines,
              "classic": classic, "k": k, "options": options}
    passes = 2 if qv is not None and not isinstance(q, Mapping) else 1
    if split_out is not None:
        state = _bucketed_state(data, keys, sensitive, nulls, weight, params, split_every,
                                split_out)
        return state.finish(passes=passes, skipped=skipped)
    pieces = _pieces(data, cols, min_pieces=1)
    if not pieces:
        raise InputError("data is empty: a release needs at least one row")
    parts = [dask.delayed(_audit_piece, pure=True)(kind, obj, keys, sensitive, nulls, params,
                                                   weight)
             for kind, obj in pieces]
    state, ranges = _reduce(dask, parts, _merge_states, split_every).compute()
    if state.n_groups == 0:
        raise InputError("data is empty: a release needs at least one row")
    if not partition_by_group:
        _check_groups_in_one_partition(dask, pieces, ranges, keys, sensitive, nulls, weight,
                                       split_every)
    return state.finish(passes=passes, skipped=skipped)


def _bucketed_state(data: Any, keys: list[str], sensitive: str, nulls: str,
                    weight: str | None, params: dict, split_every: int,
                    split_out: int) -> Any:
    """:func:`groupwise_audit` over buckets of complete groups: the merged state.

    One task per partition counts its pairs and splits them (:func:`_pairs_piece`); one
    task per bucket folds its pieces (:func:`_bucket_state`; a tree of concatenations
    first when more than ``split_every`` pieces come: the release built from a bucket adds
    a pair's counts itself).
    """
    import functools as ft

    from .folds import GroupwiseState

    dask = _require_dask()
    cols = keys + [sensitive]
    count = unique_name("count", cols + ([weight] if weight is not None else []))
    pieces = _pieces(data, cols + ([weight] if weight is not None else []),
                     min_pieces=2 * split_every)
    if not pieces:
        raise InputError("data is empty: a release needs at least one row")
    split = [dask.delayed(_pairs_piece, pure=True, nout=split_out)(
        kind, obj, cols, weight, count, split_out) for kind, obj in pieces]
    fold = dask.delayed(ft.partial(_bucket_state, keys=keys, sensitive=sensitive,
                                   count=count, nulls=nulls, params=params), pure=True)
    roots = []
    for b in range(split_out):
        parts = [s[b] for s in split] if split_out > 1 else split
        while len(parts) > split_every:
            parts = [dask.delayed(_concat_tables, pure=True)(*parts[i:i + split_every])
                     for i in range(0, len(parts), split_every)]
        roots.append(fold(*parts))
    states = [st for st in dask.compute(*roots) if st is not None]
    if not states:
        raise InputError("data is empty: a release needs at least one row")
    return ft.reduce(GroupwiseState.merge, states)


def _pairs_piece(kind: str, obj: Any, cols: list[str], weight: str | None, count: str,
                 buckets: int) -> Any:
    """One partition's (group, value) pairs (:func:`_class_piece`), split by group hash."""
    from ._buckets import split_by_key

    table = _class_piece(kind, obj, cols, weight, count)
    return split_by_key(table, cols[:-1], buckets) if buckets > 1 else table


def _concat_tables(*tables: Any) -> Any:
    """Concatenate tables of one schema (a node of a merge tree that need not add)."""
    import pyarrow as pa

    return pa.concat_tables(tables, promote_options="permissive")


def _bucket_state(*tables: Any, keys: list[str], sensitive: str, count: str, nulls: str,
                  params: dict) -> Any:
    """Fold one bucket's (group, value, count) pairs — complete groups — into a state.

    ``tables``: the bucket's pieces, concatenated. None when the null policy leaves no
    pair (an empty bucket).
    """
    from ._arrow import kept_rows
    from .folds import GroupwiseState
    from .release import Release

    table = _concat_tables(*tables)
    kept = kept_rows(table, keys + [sensitive], nulls) if table.num_rows else None
    if table.num_rows == 0 or (kept is not None and kept.size == 0):
        return None
    rel = Release.from_table(table, sensitive=sensitive, group=keys, nulls=nulls,
                             weight=count)
    return GroupwiseState(**params).update(rel)


def _part_piece(kind: str, obj: Any, qi: list[str], group: list[str], sensitive: str,
                weight: str | None, count: str, part: Any):
    """One partition's summary (``part`` of its complete groups) and key range."""
    from ._labels import LabelKey
    from .pushdown import group_part

    table = _to_table(kind, obj, qi + group + [sensitive]
                      + ([weight] if weight is not None else []))
    summary = group_part(table, qi=qi, group=group, sensitive=sensitive, weight=weight,
                         count=count, part=part)
    if summary is None:
        return None, []
    keys = table.select(group).group_by(group, use_threads=False).aggregate([]).to_pylist()
    labels = sorted((tuple(k[c] for c in group) if len(group) > 1 else k[group[0]]
                     for k in keys), key=LabelKey)
    return summary, [(labels[0], labels[-1])]


def _merge_summaries(*parts: Any):
    found = [p for p, _ in parts if p is not None]
    ranges = [r for _, more in parts for r in more]
    return (found[0].merge(*found[1:]) if found else None), ranges


def robustness_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     knowledge: Any = None, sensitive_values: Sequence[Any] | None = None,
                     max_set_size: int | None = None, epsilon: float = 0.01,
                     confidence: float = 0.9, min_support: int | None = None,
                     nulls: str = "error", max_items: int = 100,
                     partition_by_group: bool = False, split_every: int = 8,
                     **options: Any) -> Any:
    """r-robustness on the cluster, as a fold over partitions of complete groups.

    Two passes (:mod:`fastpriv.robustness_fold`): the distinct (QI, sensitive) cells are
    counted per partition and added in a tree, and the adversary's knowledge is derived from
    them (unless ``knowledge`` is given); then each partition — holding complete groups, as
    for :func:`groupwise_audit`, checked the same way, or after ``partition_by_group=True``
    (a Dask shuffle on the group keys) — is audited with that knowledge on a worker
    (:func:`fastpriv.pushdown.group_part`), and the
    :class:`~fastpriv.robustness_fold.RobustnessSummary` of each are merged in a tree: the
    client receives the cells and one summary. The result equals
    ``RobustnessSummary.from_audit`` of :func:`fastpriv.robustness.audit` on the same rows.
    Parameters as :func:`fastpriv.spark.robustness_audit`; ``data``, ``partition_by_group``
    and ``split_every`` as :func:`groupwise_audit`.

    Returns
    -------
    fastpriv.robustness_fold.RobustnessSummary

    """
    dask = _require_dask()
    from .pushdown import check_row_names
    from .robustness_fold import audit_part, prepare

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    split_every = _check_split_every(split_every)
    count = unique_name("count", qi_cols + group_cols + [sensitive])

    def cells() -> Any:
        return _cells(data, qi_cols, group_cols, sensitive, weight, count, nulls,
                      split_every)

    audit = prepare(cells, qi=qi_cols, sensitive=sensitive, count=count, r=r,
                    knowledge=knowledge, sensitive_values=sensitive_values,
                    max_set_size=max_set_size, epsilon=epsilon, confidence=confidence,
                    min_support=min_support, nulls=nulls, max_items=max_items, **options)
    part = functools.partial(audit_part, qi=qi_cols, group=group_cols, sensitive=sensitive,
                             count=count, **audit)
    pieces = _group_pieces(data, qi_cols, group_cols, sensitive, weight, partition_by_group)
    summary = _group_fold(dask, pieces, qi_cols, group_cols, sensitive, weight, count,
                          split_every, part, check=not partition_by_group)
    if summary is None:
        raise InputError("data has no rows (after weights of 0)")
    return summary


def foreground_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     sensitive_values: Any = None, max_set_size: int | None = None,
                     epsilon: float = 0.01, confidence: float = 0.9,
                     min_support: int | None = None, nulls: str = "error",
                     max_items: int = 10, partition_by_group: bool = False,
                     split_every: int = 8, **options: Any) -> Any:
    """Run the foreground-knowledge attack on the cluster as a fold over partitions.

    Three passes (:mod:`fastpriv.foreground_fold`): the distinct (QI, sensitive) cells are
    counted per partition and added in a tree, and the mining is planned from them on the
    client; each partition — holding complete groups, as for :func:`groupwise_audit`,
    checked the same way, or after ``partition_by_group=True`` (a Dask shuffle on the group
    keys) — packs every system on a worker, the packs are merged in a tree and solved on
    the client; then each partition computes its posteriors with the mined distributions
    into a :class:`~fastpriv.foreground_fold.ForegroundSummary`, merged in a tree. The
    result equals ``ForegroundSummary.from_attack`` of :func:`fastpriv.foreground.attack`
    on the distinct rows with their count (:func:`row_counts`, ``weight=`` the count).
    Parameters as :func:`fastpriv.spark.foreground_audit`; ``data``,
    ``partition_by_group`` and ``split_every`` as :func:`groupwise_audit`.

    Returns
    -------
    fastpriv.foreground_fold.ForegroundSummary

    """
    dask = _require_dask()
    from .foreground_fold import prepare as prepare_attack
    from .pushdown import check_row_names

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    split_every = _check_split_every(split_every)
    count = unique_name("count", qi_cols + group_cols + [sensitive])

    def cells() -> Any:
        return _cells(data, qi_cols, group_cols, sensitive, weight, count, nulls,
                      split_every)

    fold = prepare_attack(cells, qi=qi_cols, group=group_cols, sensitive=sensitive,
                          count=count, r=r, sensitive_values=sensitive_values,
                          max_set_size=max_set_size, epsilon=epsilon, confidence=confidence,
                          min_support=min_support, nulls=nulls, max_items=max_items,
                          **options)
    pieces = _group_pieces(data, qi_cols, group_cols, sensitive, weight, partition_by_group)
    mined = None
    if fold.has_systems:       # solved on the workers; the layout is checked on the way
        mined = _solve_on_workers(dask, fold, pieces, qi_cols, group_cols, sensitive, weight,
                                  count, split_every, check=not partition_by_group)
    return fold.run(lambda part: _group_fold(
        dask, pieces, qi_cols, group_cols, sensitive, weight, count, split_every, part,
        check=not partition_by_group and mined is None), mined=mined)


def _solve_on_workers(dask: Any, fold: Any, pieces: list, qi_cols: list[str],
                      group_cols: list[str], sensitive: str, weight: str | None, count: str,
                      split_every: int, *, check: bool) -> Any:
    """Pass 2 of the foreground fold with the systems solved on the workers.

    Each partition packs its groups' systems, the packs merge in a tree into one pack kept
    on the cluster (``persist``); the client receives its counts and work estimate
    (:func:`~fastpriv.foreground_fold.block_summary`), checks the layout and the time
    bound, then each block of systems is selected and solved on a worker
    (:func:`~fastpriv.foreground_fold.block_solution`) and only the solutions come back.
    """
    import functools

    from .foreground_fold import systems_part

    part = functools.partial(systems_part, **fold.systems_args())
    parts = [dask.delayed(_part_piece, pure=True)(kind, obj, qi_cols, group_cols, sensitive,
                                                  weight, count, part)
             for kind, obj in pieces]
    if not parts:
        raise InputError("data has no rows (after weights of 0)")
    merged, = dask.persist(_reduce(dask, parts, _merge_summaries, split_every))
    summary, ranges = dask.delayed(_summarized_pack)(merged, fold.n_random).compute()
    if summary is None:
        raise InputError("data has no rows (after weights of 0)")
    if check:
        _check_groups_in_one_partition(dask, pieces, ranges, group_cols, sensitive, "value",
                                       weight, split_every)
    args = fold.block_args()

    def solve_blocks() -> list:
        return list(dask.compute(*[dask.delayed(_block_solution)(merged, b, args)
                                   for b in fold.blocks(len(pieces))]))

    return fold.solve_in_blocks(*summary, solve_blocks)


def _summarized_pack(merged: tuple, n_random: int) -> tuple:
    """Return the merged pack's ``block_summary`` and the partitions' key ranges."""
    from .foreground_fold import block_summary

    pack, ranges = merged
    return (None if pack is None else block_summary(pack, n_random=n_random)), ranges


def _block_solution(merged: tuple, systems: Any, args: dict) -> tuple:
    """Select a block of systems from the merged pack and solve them (on a worker)."""
    from .foreground_fold import block_solution

    return block_solution(merged[0].select(systems), systems, **args)


def _cells(data: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
           weight: str | None, count: str, nulls: str, split_every: int) -> Any:
    """Count the distinct (QI, sensitive) cells in a tree: pass 1 of the row-level folds.

    Under ``nulls="drop"`` the audit leaves out the rows of a null group: so do the cells.
    """
    from .pushdown import finish_row_counts

    table = _class_tree(data, qi_cols + [sensitive], weight, count, split_every,
                        non_null=group_cols if nulls == "drop" else ()).compute()
    return finish_row_counts(table, qi=qi_cols, group=[], sensitive=sensitive, count=count)


def _group_pieces(data: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
                  weight: str | None, partition_by_group: bool) -> list:
    """Return the partitions of a row-level fold (after a shuffle on the group keys if asked)."""
    if partition_by_group:
        if not _is_dask_collection(data):
            raise InputTypeError("partition_by_group=True needs a dask DataFrame")
        data = data.shuffle(on=group_cols)
    return _pieces(data, _columns(qi_cols + group_cols, sensitive, weight), min_pieces=1)


def _group_fold(dask: Any, pieces: list, qi_cols: list[str], group_cols: list[str],
                sensitive: str, weight: str | None, count: str, split_every: int, part: Any,
                *, check: bool) -> Any:
    """Fold each partition's complete groups with ``part``; merge the summaries in a tree.

    ``check``: refuse a group found in several partitions (the partitions' key ranges,
    then their keys, as :func:`groupwise_audit`). None for no partition with rows.
    """
    parts = [dask.delayed(_part_piece, pure=True)(kind, obj, qi_cols, group_cols, sensitive,
                                                  weight, count, part)
             for kind, obj in pieces]
    if not parts:
        return None
    summary, ranges = _reduce(dask, parts, _merge_summaries, split_every).compute()
    if summary is not None and check:
        _check_groups_in_one_partition(dask, pieces, ranges, group_cols, sensitive, "value",
                                       weight, split_every)
    return summary


# ============================================================================ warm-up
def _warm_here(models: Sequence[str] | None) -> dict:
    """Run the warm-up workload in this process; a short report of what it did."""
    import os as _os

    from ._warmup import warm

    rep = warm(models)
    return {"pid": _os.getpid(), "cache_dir": rep["cache_dir"], "compiled": rep["compiled"],
            "loaded": rep["loaded"], "seconds": rep["seconds"],
            "failed": [w["name"] for w in rep["workloads"] if w["status"] != "ok"]}


def warm_workers(client: Any = None, *, models: Sequence[str] | None = None
                 ) -> dict[str, dict]:
    """Compile fastpriv's kernels once for a whole Dask cluster, then load them everywhere.

    One worker runs the warm-up workload of ``fastpriv warmup`` first: every kernel is
    compiled and written to its kernel cache (``FASTPRIV_CACHE_DIR``). Then every other
    worker runs it, and — when the workers share that directory — only *loads* the kernels
    (milliseconds each) instead of compiling them again. Later tasks start warm.

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster's client (default: the current one, ``distributed.get_client()``).
    models : sequence of str, optional
        Warm only these models (the names of ``fastpriv warmup --models``); default all.

    Returns
    -------
    dict
        Per worker address: ``pid``, ``cache_dir``, ``compiled`` and ``loaded`` (kernels),
        ``seconds`` and the names of failed workloads. Workers whose ``cache_dir`` differs
        do not share the cache (each compiles once).

    """
    _require_dask()
    import distributed

    client = client if client is not None else distributed.get_client()
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise InputError("warm_workers: the cluster has no workers")
    models = list(models) if models is not None else None

    def on(worker: str) -> Any:
        return client.submit(_warm_here, models, workers=[worker], allow_other_workers=False,
                             pure=False, key=f"fastpriv-warm-{worker}")

    first = on(workers[0]).result()
    rest = client.gather([on(w) for w in workers[1:]])
    return dict(zip(workers, [first, *rest], strict=True))


def anonymize(data: Any, *, output: Any, qi: str | Sequence[str], sensitive: str,
              weight: str | None = None, **options: Any) -> Any:
    """Anonymize a Dask DataFrame or Parquet data on the cluster; write the release to ``output``.

    The Dask cluster counts the histogram of distinct (QI, sensitive) cells (:func:`row_counts`, no
    group); only it reaches this process. The search, the write, the re-audit and every
    keyword: :func:`fastpriv.anonymize.out_of_core.release_from_engine`, whose
    :class:`~fastpriv.anonymize.out_of_core.OutOfCoreRelease` this returns; the file equals
    the in-memory release of the same rows.
    """
    from .anonymize.out_of_core import release_from_engine

    return release_from_engine(row_counts, data, output=output, qi=qi, sensitive=sensitive,
                               weight=weight, **options)
