"""The engines' counts on a stream: record batches in, memory ∝ the distinct rows.

The row-level models (r-robustness, the foreground attack) read the distinct
(QI…, group…, sensitive) rows with their count; the class-based models (k-map,
δ-presence, re-identification risk) read the QI equivalence classes. DuckDB, Dask and
Spark compute both where the data lives (``row_counts`` / ``class_counts`` of
:mod:`fastpriv.pushdown`, :mod:`fastpriv.distributed`, :mod:`fastpriv.spark`); this
module computes them from **record batches read one at a time**: any iterable of
``pyarrow.RecordBatch`` (or ``Table``), a ``RecordBatchReader``, a ``pyarrow.dataset``, a
Parquet or CSV path, read in batches of ``batch_size`` rows (column projection: only the
counted columns are decoded). Each batch is counted into
:class:`~fastpriv.risk.ClassCounts` over the counted columns (null a label of its own,
NaN read as null, exact int64 counts, the weights checked as in memory) and the partial
counts are merged as they come, so memory holds the distinct rows seen so far, at most
twice, plus one batch — never the whole input.

The results are those of the engines, in their one form:

* :func:`row_counts` ends in :func:`fastpriv.pushdown.finish_row_counts`: the table
  ``qi…, group…, sensitive, count`` (labels typed as in memory, NULL kept, rows sorted by
  the keys). :func:`fastpriv.robustness.audit` and :func:`fastpriv.foreground.attack` on
  it with ``weight="count"`` answer as on the whole table in memory, under each null
  policy (the audit's ``nulls=``, applied to this table as to the rows)::

      t = stream_counts.row_counts(pq.ParquetFile("rows.parquet").iter_batches(),
                                   qi=["zip", "age"], group="gid", sensitive="disease")
      fastpriv.robustness.audit(t, qi=["zip", "age"], group="gid", sensitive="disease",
                                weight="count", r=2)

* :func:`class_counts` ends in :func:`fastpriv.pushdown.finish_class_counts`: the
  :class:`~fastpriv.risk.ClassCounts` of ``risk.class_counts(table, qi=..., weight=...,
  nulls=...)``, with the same refusal under ``nulls="error"`` (the nulls counted in
  records over the whole input). A streamed population of k-map and δ-presence is
  counted here (:func:`fastpriv.population.k_map` does it for a reader or an iterator of
  batches given as ``population=``)::

      people = stream_counts.class_counts("census/", qi=["zip", "age"])
      fastpriv.population.k_map(sample, qi=["zip", "age"], population=people)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ._validation import unique_name
from .errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from .risk import ClassCounts

__all__ = ["row_counts", "class_counts", "is_stream", "robustness_audit", "foreground_audit"]

#: Partial counts wait until they hold this many distinct rows, and at least as many as
#: the counts merged so far, before they are merged: each row of the merged counts is
#: re-read by a merge only after as many new rows came in (linear time overall), and
#: memory stays within twice the distinct rows plus a batch.
_MERGE_FLOOR = 1 << 16


def is_stream(data: Any) -> bool:
    """Whether ``data`` is a stream of record batches that is read once, batch by batch.

    A ``pyarrow.RecordBatchReader``, an iterator (a generator, ``ParquetFile.iter_batches()``)
    or a list/tuple of ``RecordBatch`` / ``Table``. Tables, DataFrames, datasets and paths
    are not: every function reads them as it always did (paths and datasets already
    stream where it matters).
    """
    import pyarrow as pa

    if isinstance(data, pa.RecordBatchReader):
        return True
    if isinstance(data, Iterator):
        return True
    if isinstance(data, (list, tuple)) and data:
        return all(isinstance(b, (pa.RecordBatch, pa.Table)) for b in data)
    return False


def _count_batches(data: Any, cols: list[str], weight: str | None, count: str,
                   batch_size: int, sampling: Any = None, nulls: str = "value",
                   tally: list[int] | None = None) -> pa.Table | None:
    """``GROUP BY cols`` over the batches of ``data``: the distinct rows and their count.

    Each batch: the weights checked and the rows of weight 0 dropped
    (:func:`fastpriv._arrow.apply_weights`, the words of every engine), then
    :meth:`ClassCounts.from_table` over ``cols`` with ``nulls="value"`` (null a label of
    its own) — the null policy is the caller's, applied once to the merged counts, as the
    engines apply it to their ``GROUP BY``. NaN stays apart from null, as in the engines'
    ``GROUP BY`` (so that ``nulls="error"`` can say how many nulls were NaN): a float
    column is counted with a flag column marking its NaN (:func:`_flag_nans`), put back
    into the labels at the end. The running total is checked (at most 2**63 - 1), so no
    merged count wraps. Returns ``cols`` and ``count`` (int64, > 0); ``None`` when no
    batch came (the schema is unknown); an empty table of the batches' column types when
    every row weighs 0. With ``sampling`` (:class:`fastpriv._sampling.SamplingColumns`)
    the classes also sum the sampling weights (:func:`_sampling_part`) and the result
    holds the three sums; null or invalid sampling weights, counted over every batch, are
    refused after the last one — or, given a ``tally``, added to it (the rows of null and
    of invalid sampling weights) for the caller to refuse after a longer input.
    """
    import numpy as np
    import pyarrow as pa

    from ._arrow import apply_weights, iter_batches
    from ._validation import check_total
    from .risk import ClassCounts

    read = cols + ([weight] if weight is not None else []) + (
        [sampling.column] if sampling is not None else [])
    own = tally is None
    tally = [0, 0] if own else tally                # rows of null / invalid sampling weights
    merged: ClassCounts | None = None
    pending: list[ClassCounts] = []
    waiting = 0
    total = 0
    schema = None
    flags: dict[str, str] = {}
    for batch in iter_batches(data, read, batch_size=batch_size):
        if schema is None:
            schema = batch.schema
            taken = [*read, count]
            for c in cols:
                if pa.types.is_floating(schema.field(c).type):
                    flags[c] = unique_name(f"{c} is NaN", taken)
                    taken.append(flags[c])
        if batch.num_rows == 0:
            continue
        table = _flag_nans(pa.Table.from_batches([batch]), flags)
        keys = cols + list(flags.values())
        if sampling is not None:
            part = _sampling_part(table, keys, weight, count, sampling, nulls, tally)
            if part is None:
                continue
            total = check_total(part.sizes, "data" if weight is None else
                                f"weight column {weight!r}", start=total)
        elif weight is None:
            total += table.num_rows
            part = ClassCounts.from_table(table, qi=keys, nulls="value")
        else:
            table, w = apply_weights(table, weight)
            if table.num_rows == 0:
                continue
            total = check_total(w, f"weight column {weight!r}", start=total)
            part = ClassCounts.from_counts(
                table.drop_columns([weight]).append_column(count, pa.array(w, pa.int64())),
                qi=keys, count=count, nulls="value")
        pending.append(part)
        waiting += part.n_classes
        if waiting >= max(_MERGE_FLOOR, merged.n_classes if merged is not None else 0):
            merged = _merge(merged, pending)
            pending, waiting = [], 0
    if pending:
        merged = _merge(merged, pending)
    if sampling is not None and own:
        from ._sampling import refuse

        refuse(sampling.column, nulls, *tally)
    if merged is None:
        if schema is None:
            return None
        empty = {c: pa.array([], schema.field(c).type) for c in cols}
        out = pa.table({**empty, count: pa.array([], pa.int64())})
        sums = None if sampling is None else np.zeros(0)
    else:
        out = _restore_nans(merged.keys, flags).select(cols).append_column(
            count, pa.array(merged.sizes, pa.int64()))
        sums = merged.sampling_weight_sums
    if sampling is not None:                         # refused above: none missing or bad
        out = out.append_column(sampling.total, pa.array(sums, pa.float64()))
        for c in (sampling.missing, sampling.bad):
            out = out.append_column(c, pa.array(np.zeros(out.num_rows, np.int64)))
    return out


def _sampling_part(table: pa.Table, keys: list[str], weight: str | None, count: str,
                   sampling: Any, nulls: str, tally: list[int]) -> ClassCounts | None:
    """One batch's classes with their sampling weight sums (None: no row left).

    The weights are applied, the rows summed by :func:`fastpriv._sampling.arrow_sums`
    (under ``nulls="drop"`` the rows of a null sampling weight left out); rows whose
    sampling weight is null or invalid are added to ``tally`` (refused at the end, except
    under ``"drop"`` those of a null QI, as memory drops them first) and left out of the
    classes.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._arrow import apply_weights, kept_rows
    from ._sampling import arrow_sums
    from .risk import ClassCounts

    w = None
    if weight is not None:
        table, w = apply_weights(table, weight)
    rows = arrow_sums(table, qi=keys, weights=w, count=count, columns=sampling, nulls=nulls)
    missing = rows.column(sampling.missing).to_numpy()
    bad = rows.column(sampling.bad).to_numpy()
    counted = kept_rows(rows, keys, nulls)       # under "drop", rows of a null QI go first
    tally[0] += int(missing.sum() if counted is None else missing[counted].sum())
    tally[1] += int(bad.sum() if counted is None else bad[counted].sum())
    if missing.any() or bad.any():
        rows = rows.filter(pc.invert(pa.array((missing > 0) | (bad > 0))))
    if rows.num_rows == 0:
        return None
    return ClassCounts.from_counts(rows.select([*keys, count, sampling.total]), qi=keys,
                                   count=count, sampling_weight_sum=sampling.total,
                                   nulls="value")


def _flag_nans(table: pa.Table, flags: dict[str, str]) -> pa.Table:
    """Append to ``table`` the column ``flags[c]``: whether ``c`` holds NaN, row by row.

    :class:`~fastpriv.risk.ClassCounts` reads NaN as null; the flag keeps the two apart.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    for c, flag in flags.items():
        col = table.column(c)
        if pa.types.is_floating(col.type):
            nan = pc.fill_null(pc.is_nan(col), False)
        else:                       # a batch typed otherwise: no NaN in it
            nan = pa.array(np.zeros(table.num_rows, dtype=bool))
        table = table.append_column(flag, nan)
    return table


def _restore_nans(keys: pa.Table, flags: dict[str, str]) -> pa.Table:
    """Return the labels of the counts of :func:`_flag_nans`: NaN where the flag is set."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for c, flag in flags.items():
        col = keys.column(c)
        if pa.types.is_floating(col.type):
            col = pc.if_else(keys.column(flag), pa.scalar(float("nan"), col.type), col)
            keys = keys.set_column(keys.schema.get_field_index(c), c, col)
    return keys


def _merge(merged: ClassCounts | None, pending: list[ClassCounts]) -> ClassCounts:
    parts = pending if merged is None else [merged, *pending]
    return parts[0].merge(*parts[1:]) if len(parts) > 1 else parts[0]


def _check_batch_size(batch_size: Any) -> int:
    from ._validation import check_int

    return check_int(batch_size, "batch_size", minimum=1)


def row_counts(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
               sensitive: str, weight: str | None = None, count: str = "count",
               batch_size: int = 1 << 20) -> pa.Table:
    """Count the distinct (QI, group, sensitive) rows of a stream; a small Arrow table.

    The sufficient statistics of the row-level models, as the engines' ``row_counts``
    compute them (:func:`fastpriv.pushdown.row_counts`, :func:`fastpriv.distributed.row_counts`,
    :func:`fastpriv.spark.row_counts`), from record batches read one at a time: memory
    ∝ the distinct rows, never the whole input (module notes). The result is in the form
    of :func:`fastpriv.pushdown.finish_row_counts` — labels typed as in memory, NULL kept
    and NaN read as NULL (the null policy is the audit's ``nulls=``), exact int64 counts,
    rows of count 0 left out, sorted by ``qi``, ``group``, then ``sensitive`` (nulls last)
    — equal to what every engine returns for the same rows. r-robustness and the
    foreground attack on it, with ``weight=count``, give the answer of the whole table in
    memory::

        t = row_counts(reader, qi=["zip"], group="gid", sensitive="disease")
        fastpriv.foreground.attack(t, qi=["zip"], group="gid", sensitive="disease",
                                   weight="count", r=2)

    Groups may span batches: the counts add.

    Parameters
    ----------
    data : iterable of pyarrow.RecordBatch, RecordBatchReader, dataset or path
        The rows, one per individual (or ``weight`` individuals): an iterable of record
        batches or tables, a ``RecordBatchReader``, a ``pyarrow.dataset``, a Parquet file
        or folder or a CSV file (read in batches; see :func:`fastpriv._arrow.iter_batches`).
        A table or a DataFrame is read in batches too.
    qi : str or list of str
        The QI columns (the adversary's knowledge).
    group : str or list of str
        The group-id column(s) of the release; ``[]`` counts the distinct (QI, sensitive)
        rows of a table not yet grouped.
    sensitive : str
        The sensitive column.
    weight : str, optional
        Multiplicity column, as in :meth:`fastpriv.Release.from_table`: each row stands for
        ``weight`` individuals (integers ≥ 0; a null or negative weight, a total past
        2**63 - 1 raises :class:`~fastpriv.InputError`, a non-integer column
        :class:`~fastpriv.InputTypeError`; rows of weight 0 stand for nobody).
    count : str
        Name of the count column of the result.
    batch_size : int
        Rows per batch read from a file, a dataset or a table (an iterable's own batches
        are counted as they come).

    Returns
    -------
    pyarrow.Table
        Columns ``qi…, group…, sensitive, count`` (int64), one row per distinct row,
        sorted (see :func:`fastpriv.pushdown.finish_row_counts`).

    Raises
    ------
    InputError
        Bad names (naming the parameter), a missing column, bad weights, or a stream that
        yields no batch at all (its column types unknown).

    """
    from .pushdown import check_row_names, finish_row_counts

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight, count)
    size = _check_batch_size(batch_size)
    cols = qi_cols + group_cols + [sensitive]
    table = _count_batches(data, cols, weight, count, size)
    if table is None:
        raise InputError("data: the stream yielded no record batch (give at least one "
                         "batch, empty or not, so that the column types are known)")
    return finish_row_counts(table, qi=qi_cols, group=group_cols, sensitive=sensitive,
                             count=count)


def class_counts(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                 nulls: str = "error", batch_size: int = 1 << 20,
                 sampling_weight: str | None = None) -> ClassCounts:
    """Count the QI equivalence classes of a stream; the :class:`~fastpriv.risk.ClassCounts`.

    As the engines' ``class_counts`` (:func:`fastpriv.pushdown.class_counts`,
    :func:`fastpriv.distributed.class_counts`, :func:`fastpriv.spark.class_counts`), from
    record batches read one at a time: memory ∝ the distinct QI tuples, never the whole
    input. The classes are read by :func:`fastpriv.pushdown.finish_class_counts` and equal
    ``risk.class_counts(table, qi=qi, weight=weight, sampling_weight=sampling_weight,
    nulls=nulls)`` of all the rows in memory (labels and their types, sizes, null
    policy; under ``nulls="error"`` the same
    refusal, the nulls counted in records over the whole input), so
    :func:`fastpriv.risk.audit`, :func:`fastpriv.population.k_map` and
    :func:`fastpriv.population.delta_presence` on them — the population counted the same
    way — answer as in memory::

        people = class_counts(pq.ParquetFile("census.parquet").iter_batches(),
                              qi=["zip", "age"])
        fastpriv.population.delta_presence(sample, qi=["zip", "age"], population=people)

    Parameters
    ----------
    data : iterable of pyarrow.RecordBatch, RecordBatchReader, dataset or path
        The records, read in batches (as :func:`row_counts` reads them).
    qi : str or list of str
        The quasi-identifier columns.
    weight : str, optional
        Multiplicity column, as in :func:`fastpriv.risk.audit`: each row stands for
        ``weight`` identical records (integers ≥ 0; a null or negative weight raises
        :class:`~fastpriv.InputError`).
    nulls : {"error", "drop", "value"}
        Null policy of the QI columns, as in :meth:`fastpriv.risk.ClassCounts.from_table`
        (NaN is a null); the classes carry it.
    batch_size : int
        Rows per batch read from a file, a dataset or a table.
    sampling_weight : str, optional
        Column of sampling weights (finite, > 0), as in
        :meth:`fastpriv.risk.ClassCounts.from_table`: each class sums ``weight ·
        sampling_weight`` batch by batch (:mod:`fastpriv._sampling`; the null policy covers
        this column too).

    Returns
    -------
    fastpriv.risk.ClassCounts
        One class per distinct QI tuple, with its number of records (and its sampling
        weight sum).

    Raises
    ------
    InputError
        Bad names (naming the parameter), a missing column, bad weights, nulls under
        ``nulls="error"``, or no record left (after the null policy and weights of 0).

    """
    from .pushdown import check_class_names, class_count_columns, finish_class_counts

    cols = check_class_names(qi, weight, nulls, sampling_weight)
    size = _check_batch_size(batch_size)
    count, sampling = class_count_columns(cols, weight, sampling_weight)
    table = _count_batches(data, cols, weight, count, size, sampling, nulls)
    if table is None:
        raise InputError("data has no rows (after the null policy and weights of 0)")
    return finish_class_counts(table, qi=cols, count=count, nulls=nulls, sampling=sampling)


def class_histogram(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                    nulls: str = "error", batch_size: int = 1 << 20,
                    clustered: bool = False, sampling_weight: str | None = None,
                    threshold: float | None = None, split_out: int | None = None) -> Any:
    """Count the QI classes of a stream into their size histogram (the risk's fold).

    The :class:`~fastpriv.class_histogram.ClassHistogram` of the engines'
    ``class_histogram``: ``risk.audit`` on it equals ``risk.audit(table, qi=qi,
    weight=weight, nulls=nulls)`` for every measure that does not need each class. A
    stream in any order is counted by :func:`class_counts` (memory ∝ the classes). With
    ``clustered=True`` the stream must come **sorted by the QI** (the rows of a class
    contiguous, classes in increasing key order, nulls last, NaN a null; checked): it is
    cut into runs of complete classes (:func:`fastpriv.streaming.complete_groups`), each
    run counted and summarized, the summaries merged — memory ∝ a batch and the
    histogram. Under ``nulls="error"`` the classes with a null are kept aside (only they)
    and refused at the end with memory's words (the nulls counted over the whole input).
    A stream in any order with ``split_out=b`` is first written to ``b`` temporary files
    by a hash of the QI (:func:`fastpriv._buckets.spill`, in :func:`tempfile.mkdtemp`'s
    folder, removed at the end), so each file holds complete classes, and the files are
    folded one by one as runs are: memory ∝ one file's classes and the summary; disk ∝
    the QI (and weight) columns of the input.

    With ``sampling_weight`` the classes sum their sampling weights too and the summary is
    a :class:`~fastpriv.class_histogram.SamplingHistogram` (for ``threshold``), which
    ``risk.audit(..., threshold=threshold)`` reads as ``risk.audit(table, ...,
    sampling_weight=sampling_weight)``; null and invalid sampling weights are counted over
    the whole stream and refused at its end, as :func:`class_counts` refuses them.

    Parameters
    ----------
    data, qi, weight, nulls, batch_size, sampling_weight :
        As for :func:`class_counts`.
    clustered : bool
        Whether ``data`` is sorted by ``qi``, read as a fold.
    threshold : float, optional
        With ``sampling_weight`` only: the risk threshold of the audit (the summary counts
        the records whose risk exceeds it; default 0.2, as ``risk.audit``).
    split_out : int, optional
        A stream in any order: spill it into this many files by a hash of the QI and fold
        them one by one (the name of Dask's buckets); None holds every class in memory.

    Returns
    -------
    fastpriv.class_histogram.ClassHistogram or SamplingHistogram

    """
    from ._sampling import fold_threshold
    from .pushdown import check_class_names, class_count_columns

    cols = check_class_names(qi, weight, nulls, sampling_weight)
    threshold = fold_threshold(threshold, sampling_weight)
    split_out = _check_split_out(split_out, clustered)
    if split_out is not None:
        return _spilled_histogram(data, cols, weight, nulls, _check_batch_size(batch_size),
                                  split_out, sampling_weight, threshold)
    if not clustered:
        return _run_summary(class_counts(data, qi=qi, weight=weight, nulls=nulls,
                                         batch_size=batch_size,
                                         sampling_weight=sampling_weight), threshold)
    size = _check_batch_size(batch_size)
    count, sampling = class_count_columns(cols, weight, sampling_weight)
    return _clustered_histogram(data, cols, weight, count, size, nulls, sampling, threshold)


def population_histogram(data: Any, *, qi: str | Sequence[str], population: Any,
                         weight: str | None = None, nulls: str = "error",
                         batch_size: int = 1 << 20, split_out: int | None = None) -> Any:
    """Match a stream's QI classes with a streamed population's; the summary of the engines.

    The :class:`~fastpriv.class_histogram.PopulationHistogram` of the engines'
    ``population_histogram`` (k-map, δ-presence and the risk against a population table):
    both inputs are counted by :func:`class_counts` (memory ∝ their classes) and matched
    (:func:`fastpriv.risk.match_population`). :func:`fastpriv.population.k_map`,
    :func:`~fastpriv.population.delta_presence` and :func:`fastpriv.risk.audit` on it
    equal the same calls on the tables in memory (``population=`` left out). With
    ``split_out=b`` both streams are first written to ``b`` temporary files each by the
    same hash of the QI (as :func:`class_histogram` spills one), so file ``i`` of the data
    and file ``i`` of the population hold the same complete classes; each pair is matched
    and summarized on its own, the summaries merged: memory ∝ one pair of files' classes.
    A refusal (a class the population lacks, nulls under ``nulls="error"``) is raised by
    matching every file at once, with memory's words.

    Parameters
    ----------
    data, population :
        Streams as :func:`class_counts` reads them (``population`` without ``weight``).
    qi, weight, nulls, batch_size :
        As for :func:`class_counts` (``weight`` is the data's).
    split_out : int, optional
        Spill both streams into this many files each by a hash of the QI and match them
        file by file; None holds every class of both in memory.

    Returns
    -------
    fastpriv.class_histogram.PopulationHistogram

    """
    from .risk import match_population

    split_out = _check_split_out(split_out, False)
    if split_out is not None:
        return _spilled_population(data, population, qi, weight, nulls, batch_size,
                                   split_out)
    sample = class_counts(data, qi=qi, weight=weight, nulls=nulls, batch_size=batch_size)
    people = class_counts(population, qi=qi, nulls=nulls, batch_size=batch_size)
    return match_population(sample, people).histogram()


def _check_split_out(split_out: Any, clustered: bool) -> int | None:
    """Check ``split_out`` (files to spill a stream into); None: no spill."""
    from ._validation import check_int

    if split_out is None:
        return None
    if clustered:
        raise InputError("split_out: a clustered stream is folded run by run already; "
                         "give clustered=True or split_out=, not both")
    return check_int(split_out, "split_out", minimum=1)


def _clustered_histogram(data: Any, cols: list[str], weight: str | None, count: str,
                         size: int, nulls: str, sampling: Any = None,
                         threshold: float | None = None) -> Any:
    """Fold a stream sorted by ``cols`` into a ClassHistogram, run of classes by run."""
    import pyarrow as pa

    from ._arrow import iter_batches
    from .streaming import complete_groups

    read = cols + [c for c in (weight, sampling and sampling.column) if c is not None]
    tables = (pa.Table.from_batches([b]) for b in iter_batches(data, read, batch_size=size))
    runs = ([run] for run in complete_groups(tables, keys=cols))
    return _fold_runs(runs, cols, weight, count, size, nulls, sampling, threshold)


def _spilled_histogram(data: Any, cols: list[str], weight: str | None, nulls: str,
                       size: int, split_out: int, sampling_weight: str | None,
                       threshold: float | None) -> Any:
    """Spill a stream in any order into ``split_out`` files by QI hash; fold file by file."""
    import tempfile

    from ._arrow import iter_batches
    from ._buckets import bucket_batches, spill
    from .pushdown import class_count_columns

    count, sampling = class_count_columns(cols, weight, sampling_weight)
    read = cols + [c for c in (weight, sampling_weight) if c is not None]
    with tempfile.TemporaryDirectory(prefix="fastpriv-spill-") as folder:
        paths = spill(iter_batches(data, read, batch_size=size), cols, split_out, folder,
                      "data")
        runs = (bucket_batches(p) for p in paths or ())
        return _fold_runs(runs, cols, weight, count, size, nulls, sampling, threshold)


def _spilled_population(data: Any, population: Any, qi: Any, weight: str | None,
                        nulls: str, batch_size: Any, split_out: int) -> Any:
    """:func:`population_histogram` of two streams spilled into ``split_out`` files each."""
    import itertools
    import tempfile

    from ._arrow import iter_batches
    from ._buckets import bucket_batches, spill
    from .class_histogram import PopulationHistogram
    from .pushdown import check_class_names

    cols = check_class_names(qi, weight, nulls)
    size = _check_batch_size(batch_size)
    with tempfile.TemporaryDirectory(prefix="fastpriv-spill-") as folder:
        paths = [spill(iter_batches(src, cols + extra, batch_size=size, param=name), cols,
                       split_out, folder, name)
                 for src, extra, name in ((data, [weight] if weight else [], "data"),
                                          (population, [], "population"))]
        out = None
        if all(p is not None for p in paths):
            out = PopulationHistogram.population_only(cols, nulls, n_population=0,
                                                      n_population_classes=0)
            for ours, theirs in zip(*paths, strict=True):
                part = _matched_bucket(ours, theirs, cols, weight, nulls, size)
                if part is None:
                    out = None
                    break
                out = out.merge(part)
        if out is None or out.n_classes == 0:     # refused: the words of every class
            def whole(name: int) -> Any:
                return itertools.chain.from_iterable(bucket_batches(p)
                                                     for p in paths[name] or ())
            population_histogram(whole(0), population=whole(1), qi=cols, weight=weight,
                                 nulls=nulls, batch_size=size)
            raise AssertionError("population_histogram accepted what a file refused")
        return out


def _matched_bucket(ours: str, theirs: str, cols: list[str], weight: str | None,
                    nulls: str, size: int) -> Any:
    """Match one file of the data's classes with the population's; None when refused."""
    from .class_histogram import PopulationHistogram
    from .risk import match_population

    try:
        people = _classes_or_none(theirs, cols, None, nulls, size)
        sample = _classes_or_none(ours, cols, weight, nulls, size)
        if sample is None:
            return PopulationHistogram.population_only(
                cols, nulls, n_population=0 if people is None else people.n_records,
                n_population_classes=0 if people is None else people.n_classes)
        if people is None:
            return None
        return match_population(sample, people).histogram()
    except InputError:
        return None


def _classes_or_none(path: str, cols: list[str], weight: str | None, nulls: str,
                     size: int) -> ClassCounts | None:
    """Return the classes of one spilled file; None when no record is left after the policy."""
    from ._arrow import kept_rows
    from ._buckets import bucket_batches
    from .pushdown import class_count_columns, finish_class_counts

    count, _ = class_count_columns(cols, weight, None)
    table = _count_batches(bucket_batches(path), cols, weight, count, size)
    if table is None or table.num_rows == 0:
        return None
    kept = kept_rows(table, cols, nulls)
    if kept is not None and kept.size == 0:
        return None
    return finish_class_counts(table, qi=cols, count=count, nulls=nulls)


def _fold_runs(runs: Any, cols: list[str], weight: str | None, count: str, size: int,
               nulls: str, sampling: Any, threshold: float | None) -> Any:
    """Fold runs of complete classes (each a stream of batches) into one summary.

    A ClassHistogram, or with ``sampling`` (:class:`fastpriv._sampling.SamplingColumns`) a
    SamplingHistogram. Under ``nulls="error"`` the classes with a null are kept aside and
    refused at the end, null and invalid sampling weights are tallied over every run and
    refused at the end: the words of :func:`class_counts` over the whole input.
    """
    import numpy as np
    import pyarrow as pa

    from ._arrow import kept_rows
    from ._sampling import refuse
    from ._validation import check_total
    from .pushdown import finish_class_counts

    out, aside, total, tally = None, [], 0, [0, 0]
    for run in runs:
        counted = _count_batches(run, cols, weight, count, size, sampling=sampling,
                                 nulls=nulls, tally=tally)
        if counted is None or counted.num_rows == 0:
            continue
        total = check_total(counted.column(count).to_numpy(), "data" if weight is None
                            else f"weight column {weight!r}", start=total)
        kept = kept_rows(counted, cols, "drop")
        if kept is not None and nulls != "value":
            if nulls == "error":
                held = np.ones(counted.num_rows, dtype=bool)
                held[kept] = False
                aside.append(counted.filter(pa.array(held)))
            counted = counted.take(pa.array(kept))
        if counted.num_rows == 0:
            continue
        part = _run_summary(finish_class_counts(counted, qi=cols, count=count, nulls=nulls,
                                                sampling=sampling), threshold)
        out = part if out is None else out.merge(part)
    if sampling is not None:                    # the words of class_counts, whole stream
        refuse(sampling.column, nulls, *tally)
    if aside:                                   # raises memory's words for every null
        finish_class_counts(pa.concat_tables(aside), qi=cols, count=count, nulls="error")
    if out is None:
        raise InputError("data has no rows (after the null policy and weights of 0)")
    return out


def _run_summary(classes: ClassCounts, threshold: float | None) -> Any:
    """Return the summary of one run's classes (with sampling weight sums: for ``threshold``)."""
    from .class_histogram import ClassHistogram, SamplingHistogram

    if classes.sampling_weight_sums is None:
        return ClassHistogram.from_class_counts(classes)
    return SamplingHistogram.from_class_counts(classes, threshold=threshold)


def robustness_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     knowledge: Any = None, sensitive_values: Sequence[Any] | None = None,
                     max_set_size: int | None = None, epsilon: float = 0.01,
                     confidence: float = 0.9, min_support: int | None = None,
                     nulls: str = "error", max_items: int = 100, batch_size: int = 1 << 20,
                     **options: Any) -> Any:
    """r-robustness of a stream **sorted by group**, as a fold: memory ∝ cells + one run.

    Two passes (:mod:`fastpriv.robustness_fold`): the distinct (QI, sensitive) cells are
    counted batch by batch (:func:`row_counts` without a group) and the adversary's
    knowledge derived from them — unless ``knowledge`` is given, the input must be read
    twice (a path, a dataset or a table; a one-shot reader with ``knowledge=`` only); then
    the batches are cut into runs of complete groups
    (:func:`fastpriv.streaming.complete_groups`: groups in increasing key order, nulls last,
    checked) and each run audited with that knowledge
    (:func:`fastpriv.pushdown.group_part`) into a
    :class:`~fastpriv.robustness_fold.RobustnessSummary`, merged. The result equals
    ``RobustnessSummary.from_audit`` of :func:`fastpriv.robustness.audit` on the same rows.
    Parameters as :func:`fastpriv.spark.robustness_audit`; ``data`` and ``batch_size`` as
    :func:`row_counts`.

    Returns
    -------
    fastpriv.robustness_fold.RobustnessSummary

    """
    import functools

    from .pushdown import check_row_names
    from .robustness_fold import audit_part, prepare

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    rows = _GroupRuns(data, qi_cols, group_cols, sensitive, weight, _check_batch_size(
        batch_size), nulls)
    refusal = ("a stream read once cannot give both passes; pass knowledge= (e.g. "
               "robustness_fold.derive_knowledge of its cells), or a path, a dataset or a "
               "table")
    audit = prepare(lambda: rows.cells(refusal), qi=qi_cols,
                    sensitive=sensitive, count=rows.count, r=r, knowledge=knowledge,
                    sensitive_values=sensitive_values, max_set_size=max_set_size,
                    epsilon=epsilon, confidence=confidence, min_support=min_support,
                    nulls=nulls, max_items=max_items, **options)
    out = rows.fold(functools.partial(audit_part, qi=qi_cols, group=group_cols,
                                      sensitive=sensitive, count=rows.count, **audit))
    if out is None:
        raise InputError("data has no rows (after weights of 0)")
    return out


def foreground_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     sensitive_values: Any = None, max_set_size: int | None = None,
                     epsilon: float = 0.01, confidence: float = 0.9,
                     min_support: int | None = None, nulls: str = "error",
                     max_items: int = 10, batch_size: int = 1 << 20, **options: Any) -> Any:
    """Run the foreground-knowledge attack on a stream **sorted by group**, as a fold.

    Three passes (:mod:`fastpriv.foreground_fold`), so the input is read three times (a
    path, a dataset or a table; not a one-shot reader): the distinct (QI, sensitive) cells
    are counted batch by batch and the mining planned from them; the batches are cut into
    runs of complete groups (:func:`fastpriv.streaming.complete_groups`: groups in
    increasing key order, nulls last, checked), each run packing every system, merged and
    solved; then each run's posteriors are computed with the mined distributions into a
    :class:`~fastpriv.foreground_fold.ForegroundSummary`, merged. Memory: the cells, the
    distinct group profiles of the systems and one run. The result equals
    ``ForegroundSummary.from_attack`` of :func:`fastpriv.foreground.attack` on the
    distinct rows with their count (:func:`row_counts`, ``weight=`` the count).
    Parameters as :func:`fastpriv.spark.foreground_audit`; ``data`` and
    ``batch_size`` as :func:`row_counts`.

    Returns
    -------
    fastpriv.foreground_fold.ForegroundSummary

    """
    from .foreground_fold import prepare as prepare_attack
    from .pushdown import check_row_names

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    rows = _GroupRuns(data, qi_cols, group_cols, sensitive, weight, _check_batch_size(
        batch_size), nulls)
    refusal = ("the foreground attack reads its input three times (cells, systems, "
               "posteriors); give a path, a dataset or a table, not a stream read once")
    fold = prepare_attack(lambda: rows.cells(refusal), qi=qi_cols, group=group_cols,
                          sensitive=sensitive, count=rows.count, r=r,
                          sensitive_values=sensitive_values, max_set_size=max_set_size,
                          epsilon=epsilon, confidence=confidence, min_support=min_support,
                          nulls=nulls, max_items=max_items, **options)
    return fold.run(rows.fold)


class _GroupRuns:
    """A stream sorted by group, read as the row-level folds read it.

    :meth:`cells` counts its distinct (QI, sensitive) cells (pass 1); :meth:`fold` cuts it
    into runs of complete groups and folds each with a part function, merged.
    """

    def __init__(self, data: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
                 weight: str | None, size: int, nulls: str) -> None:
        self.data, self.qi_cols, self.group_cols = data, qi_cols, group_cols
        self.sensitive, self.weight, self.size, self.nulls = sensitive, weight, size, nulls
        self.count = unique_name("count", qi_cols + group_cols + [sensitive])

    def _tables(self, drop_null_groups: bool) -> Iterator[Any]:
        import pyarrow as pa

        from ._arrow import apply_weights, iter_batches, kept_rows

        read = (self.qi_cols + self.group_cols + [self.sensitive]
                + ([self.weight] if self.weight is not None else []))
        for batch in iter_batches(self.data, read, batch_size=self.size):
            table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) \
                else batch
            if self.weight is not None:
                table, _ = apply_weights(table, self.weight)
            kept = kept_rows(table, self.group_cols, "drop") if drop_null_groups else None
            yield table if kept is None else table.take(pa.array(kept))

    def cells(self, refusal: str) -> Any:
        """Count the distinct (QI, sensitive) cells (without the null groups under "drop").

        The input is read again afterwards: a stream read once is refused with ``refusal``.
        """
        from .streaming import reiterable

        if not reiterable(self.data):
            raise InputError(f"data: {refusal}")
        batches = (b for t in self._tables(self.nulls == "drop") for b in t.to_batches())
        return row_counts(batches, qi=self.qi_cols, group=[], sensitive=self.sensitive,
                          weight=self.weight, count=self.count, batch_size=self.size)

    def fold(self, part: Any) -> Any:
        """Fold each run of complete groups with ``part``; the merged summary (None: none)."""
        from .pushdown import group_part
        from .streaming import complete_groups

        out = None
        for run in complete_groups(self._tables(False), keys=self.group_cols):
            piece = group_part(run, qi=self.qi_cols, group=self.group_cols,
                               sensitive=self.sensitive, weight=self.weight,
                               count=self.count, part=part)
            if piece is not None:
                out = piece if out is None else out.merge(piece)
        return out
