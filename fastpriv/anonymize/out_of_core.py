"""Anonymize a table larger than memory: a histogram, the search on it, the release streamed.

A generalizing anonymizer (full-domain lattice search, Mondrian, SkylineAnonymize, the
minimal (c,k)-safe generalizations) reads its input only through the *histogram* of
distinct (QI tuple, sensitive value) cells and the people each stands for: its ``weight=``
reading (each row stands for that many identical people) gives the expanded table's
result. :func:`release_out_of_core` therefore

1. reads the input once, as a stream of record batches (a Parquet/CSV path, a dataset, a
   ``RecordBatchReader`` or an iterator of batches), into the histogram
   (:func:`histogram`): memory holds the histogram and one batch, whatever the rows;
2. runs the anonymizer on the histogram with ``weight=``;
3. writes the release from the histogram, one row per person, batch by batch
   (:meth:`fastpriv.anonymize.Anonymized.people_batches`): the same rows, order and group
   ids as the in-memory release of the input (row order from the published values alone),
   committed atomically (:func:`fastpriv._io.atomic_write`);
4. re-audits the written file by streaming it back (:meth:`fastpriv.Release.from_table`):
   its groups must be the result's, and the criterion must hold on it; the verdict is that
   re-audit's.

The histogram grows with the distinct cells, never with the rows: an IHIS-shaped table of
1.2M rows has 1.17M cells, and the same shape at 100M rows is bounded by the product of the
QI domains. Columns published unchanged (``keep``) need the rows themselves and are not
offered here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InputError
from ..results import Result
from ._result import Anonymized

__all__ = ["PEOPLE", "METHODS", "histogram", "release_out_of_core", "release_from_engine",
           "OutOfCoreRelease"]

#: The histogram's column of people per distinct row (the anonymizers' ``weight=``).
PEOPLE = "__fastpriv_people__"

#: Partial aggregates held before they are merged (rows): the histogram's memory is at most
#: about twice the distinct cells plus this.
_MERGE_ROWS = 1 << 22


def _method(name: str) -> Callable[..., Any]:
    from . import lattice_search, minimal_ck_safe, mondrian, skyline_anonymize

    return {"lattice": lattice_search, "mondrian": mondrian, "skyline": skyline_anonymize,
            "minimal_ck_safe": minimal_ck_safe}[name]


#: The anonymizers :func:`release_out_of_core` runs on a histogram (all read ``weight=``).
METHODS = ("lattice", "mondrian", "skyline", "minimal_ck_safe")


def _aggregate(tables: list[pa.Table], columns: list[str], count: str) -> pa.Table:
    """Merge partial histograms: Σ ``count`` per distinct row of ``columns``."""
    t = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    out = t.group_by(columns, use_threads=False).aggregate([(count, "sum")])
    return out.rename_columns([*columns, count])


def _batch_counts(batch: pa.RecordBatch, columns: list[str], weight: str | None) -> pa.Table:
    """One batch's histogram: people per distinct row of ``columns``."""
    t = pa.Table.from_batches([batch])
    if t.num_columns and any(pa.types.is_dictionary(f.type) for f in t.schema):
        t = pa.table({f.name: (t.column(f.name).dictionary_decode()
                               if pa.types.is_dictionary(f.type) else t.column(f.name))
                      for f in t.schema})
    if weight is None:
        out = t.group_by(columns, use_threads=False).aggregate([([], "count_all")])
    else:
        from ._input import input_weights

        w = input_weights(t, weight, columns)        # integers ≥ 0, no nulls
        t = t.select(columns).append_column("__w", pa.array(w, pa.int64()))
        out = t.group_by(columns, use_threads=False).aggregate([("__w", "sum")])
    return out.rename_columns([*columns, PEOPLE]).cast(
        out.schema.set(len(columns), pa.field(PEOPLE, pa.int64())))


def histogram(data: Any, columns: Sequence[str], *, weight: str | None = None,
              batch_size: int = 1 << 20, param: str = "data") -> pa.Table:
    """Return the distinct rows of ``columns`` with the people each stands for, in one pass.

    Parameters
    ----------
    data : path, dataset, RecordBatchReader, iterator of batches or table
        Read once, batch by batch (:func:`fastpriv._arrow.iter_batches`).
    columns : sequence of str
        The columns counted (QI then sensitive).
    weight : str, optional
        Each row stands for this many identical people (integers ≥ 0); default one.
    batch_size : int
        Rows per batch read.
    param : str
        Parameter name for messages.

    Returns
    -------
    pyarrow.Table
        ``columns`` and :data:`PEOPLE` (int64), one row per distinct value tuple (a null,
        or a NaN, is a value here: the anonymizer's ``nulls=`` decides). The schema keeps
        the source's metadata (the bundled Adult data's mark).

    """
    return _histogram(data, columns, weight, batch_size, param)[0]


def _histogram(data: Any, columns: Sequence[str], weight: str | None, batch_size: int,
               param: str) -> tuple[pa.Table, int]:
    """:func:`histogram` and the number of input rows read."""
    from .._arrow import iter_batches

    cols = list(columns)
    read = cols + ([weight] if weight is not None else [])
    parts: list[pa.Table] = []
    held = 0
    total = 0
    rows = 0
    for batch in iter_batches(data, read, batch_size=batch_size, param=param):
        rows += batch.num_rows
        part = _batch_counts(batch, cols, weight)
        total += int(np.asarray(part.column(PEOPLE).to_numpy()).sum())
        if total >= 1 << 62:
            raise InputError(f"{param}: more than 2**62 people; the counts would overflow")
        parts.append(part)
        held += part.num_rows
        if held > _MERGE_ROWS and len(parts) > 1:
            parts = [_aggregate(parts, cols, PEOPLE)]
            held = parts[0].num_rows
    if not parts:
        raise InputError(f"{param}: the input has no rows")
    hist = _aggregate(parts, cols, PEOPLE) if len(parts) > 1 else parts[0]
    meta = _source_metadata(data)
    return (hist.replace_schema_metadata(meta) if meta else hist), rows


def _source_metadata(data: Any) -> dict | None:
    """Return the schema metadata of a path or dataset source (None for streams)."""
    from .._ingest import source_schema, streamable

    if streamable(data):
        return source_schema(data).metadata
    return getattr(getattr(data, "schema", None), "metadata", None)


@dataclass(frozen=True, eq=False)
class OutOfCoreRelease(Result):
    """A release produced out of core: the anonymizer's result on the histogram, the files.

    Attributes
    ----------
    result : Anonymized
        The anonymizer's result on the histogram (``weight=`` the people per cell): its
        ``release`` is the in-memory release of the input.
    paths : list of str
        The files written (one release file).
    n_cells : int
        Distinct (QI, sensitive) cells of the input: what the search held in memory.
    n_rows : int
        Rows of the input.
    n_people : int
        People (rows, or Σ weight) of the input; ``n_written`` of them are in the release.
    n_null_people : int
        People left out for a null (``nulls="drop"``); the other people not written were
        suppressed by the criterion.
    n_written : int
        Rows written (suppressed people are not).
    reaudit : dict
        The written file read back: ``groups_equal`` (its groups are the result's),
        ``criterion_holds`` (the criterion on the file's release; None when the method has
        no criterion object), ``n_groups``.
    seconds : dict
        Seconds per phase: ``histogram``, ``search``, ``write``, ``reaudit``.

    """

    result: Anonymized
    paths: list
    n_cells: int
    n_rows: int
    n_people: int
    n_null_people: int
    n_written: int
    reaudit: dict
    seconds: dict = field(default_factory=dict)

    @property
    def value(self) -> bool:
        """Whether the written release holds its criterion on re-audit."""
        return bool(self.reaudit["groups_equal"]) and self.reaudit["criterion_holds"] is not False

    @property
    def params(self) -> dict:
        """The anonymizer's parameters."""
        return dict(self.result.params)

    @property
    def witness(self) -> Any:
        """The anonymizer's witness (its chosen node, for the lattice)."""
        return getattr(self.result, "witness", None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the anonymizer's result, the files, the cells and the re-audit."""
        return {"result": self.result.to_dict(), "paths": list(self.paths),
                "n_cells": self.n_cells, "n_rows": self.n_rows, "n_people": self.n_people,
                "n_null_people": self.n_null_people,
                "n_written": self.n_written, "reaudit": dict(self.reaudit),
                "holds": self.value, "seconds": dict(self.seconds)}

    def summary(self) -> str:
        """One paragraph: what was written and whether the re-audit holds."""
        verdict = "holds" if self.value else "FAILS"
        return (f"{self.result.method} release written out of core: {self.n_written:,} of "
                f"{self.n_people:,} people in {self.reaudit['n_groups']:,} groups, from "
                f"{self.n_cells:,} distinct cells; re-audit of the written file: {verdict} "
                f"({', '.join(self.paths)})")


def release_out_of_core(data: Any, *, output: Any, method: str = "lattice",
                        qi: Sequence[str], sensitive: str | None = None,
                        weight: str | None = None, nulls: str = "error",
                        overwrite: bool = False, format: str | None = None,
                        group_column: str = "group_id", batch_rows: int = 1 << 20,
                        inputs: Sequence[Any] = (), **options: Any) -> OutOfCoreRelease:
    """Anonymize ``data`` without holding its rows, and write the release to ``output``.

    Parameters
    ----------
    data : path, dataset, RecordBatchReader, iterator of batches or table
        One row per person (or ``weight`` people); read once.
    output : path-like
        The release file (Parquet, or CSV by suffix / ``format``), written atomically;
        never over an input, and over an existing file only with ``overwrite``.
    method : {"lattice", "mondrian", "skyline", "minimal_ck_safe"}
        The anonymizer (:data:`METHODS`), run on the histogram with ``weight=``.
    qi, sensitive, nulls
        As for the anonymizer.
    weight : str, optional
        Each input row stands for this many identical people.
    overwrite, format
        As for :meth:`fastpriv.anonymize.Anonymized.write`.
    group_column : str
        Name of the release's group-id column.
    batch_rows : int
        Rows read and written per batch.
    inputs : sequence of path-like
        Other input files of the job (hierarchies): never written over.
    **options
        The anonymizer's other keywords (criteria, ``hierarchies``, ``suppression``,
        ``utility``, …). ``predicate=`` or the criterion keywords also re-audit the file.

    Returns
    -------
    OutOfCoreRelease

    Examples
    --------
    >>> import fastpriv as fp, tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "release.parquet")
    >>> r = release_out_of_core(fp.datasets.adult_path(), output=out, qi=["age", "sex", "race"],
    ...                         sensitive="occupation", hierarchies="bundled",
    ...                         min_size=5, l=2)
    >>> r.value, r.n_written == r.n_people
    (True, True)

    """
    import time

    from .._io import check_outputs
    from ._input import check_qi_sensitive

    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if options.get("keep"):
        raise InputError("keep: columns published unchanged need the rows themselves; an "
                         "out-of-core release holds the histogram only (leave keep out, or "
                         "anonymize in memory)")
    if options.get("suppressed", "drop") != "drop":
        raise InputError("suppressed: an out-of-core release drops the suppressed rows "
                         "(suppressed='keep' is in memory only)")
    qi = check_qi_sensitive(qi, sensitive)
    own = [data] if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__") else []
    check_outputs([output], overwrite=overwrite, inputs=[*own, *inputs])
    crit = _criterion(method, options)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    hist, n_rows = _histogram(data, [*qi] + ([sensitive] if sensitive is not None else []),
                              weight, batch_rows, "data")
    seconds["histogram"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = _run(method, hist, qi, sensitive, nulls, options, crit)
    anon = res if isinstance(res, Anonymized) else res.anonymized
    if anon is None:
        raise InputError(f"{method}: no generalization satisfies the criterion")
    seconds["search"] = time.perf_counter() - t0
    if method == "skyline":     # SkylineAnonymize's criterion: its skylines' check
        crit = _skyline_criterion(options["skylines"])
    t0 = time.perf_counter()

    def check(tmp: str) -> dict[str, Any]:      # the file beside its destination, unplaced
        t1 = time.perf_counter()
        found = _reaudit(tmp, anon, crit, sensitive, group_column)
        seconds["reaudit"] = time.perf_counter() - t1
        if not found["groups_equal"]:
            raise RuntimeError(f"the release written to {tmp} does not hold the groups the "
                               f"{method} result certified; nothing was published")
        if found["criterion_holds"] is False:
            raise _NotPublished(found)
        return found

    people = np.asarray(hist.column(PEOPLE).to_numpy(), dtype=np.int64)
    n_people = int(people.sum())
    n_null = _null_people(hist, people, nulls)
    try:
        path, written, reaudit = _write(anon, hist, output, check, group_column=group_column,
                                        batch_rows=batch_rows, overwrite=overwrite,
                                        format=format, inputs=[*own, *inputs])
    except _NotPublished as failed:
        seconds["write"] = time.perf_counter() - t0
        return OutOfCoreRelease(anon, [], hist.num_rows, n_rows, n_people, n_null, 0,
                                failed.reaudit, seconds)
    seconds["write"] = time.perf_counter() - t0 - seconds["reaudit"]
    return OutOfCoreRelease(anon, [path], hist.num_rows, n_rows, n_people, n_null, written,
                            reaudit, seconds)


def _null_people(hist: pa.Table, people: np.ndarray, nulls: str) -> int:
    """People of the cells ``nulls="drop"`` drops (a null or NaN in a counted column)."""
    from .._arrow import kept_rows

    if nulls != "drop":
        return 0
    cols = [c for c in hist.column_names if c != PEOPLE]
    kept = kept_rows(hist, cols, "drop")
    return 0 if kept is None else int(people.sum()) - int(people[kept].sum())


class _NotPublished(Exception):
    """The written release failed its criterion on re-audit: it is not put in place."""

    def __init__(self, reaudit: dict[str, Any]) -> None:
        super().__init__("the written release fails its criterion on re-audit")
        self.reaudit = reaudit


def _skyline_criterion(skylines: Any) -> Callable[[Any], bool]:
    """Return SkylineAnonymize's criterion: :func:`fastpriv.skyline.check` of ``skylines``."""
    def holds(rel: Any) -> bool:
        from ..skyline import check

        return bool(check(rel, skylines=skylines).safe)

    return holds


def _criterion(method: str, options: dict[str, Any]) -> Any:
    """Return the criterion object of the criterion keywords (None for SkylineAnonymize)."""
    if method == "skyline":
        return None
    from ..predicates import criteria_from

    keys = ("predicate", "min_size", "l", "l_kind", "c_l", "t", "t_ordered", "alpha", "c",
            "k", "knowledge_kind", "max_risk", "max_avg_risk", "max_records_at_risk",
            "risk_threshold", "max_uniqueness", "population", "uniqueness_model")
    given = {k: options.pop(k) for k in keys if k in options}
    if method == "minimal_ck_safe":
        options.update({k: given[k] for k in ("c", "k", "knowledge_kind") if k in given})
        given = {k: v for k, v in given.items() if k in ("c", "k", "knowledge_kind")}
    return criteria_from(**given) if given else None


def _run(method: str, hist: pa.Table, qi: list[str], sensitive: str | None, nulls: str,
         options: dict[str, Any], crit: Any) -> Any:
    fn = _method(method)
    kw = dict(options)
    if crit is not None and method in ("lattice", "mondrian"):
        kw["predicate"] = crit
    return fn(hist, qi=qi, sensitive=sensitive, nulls=nulls, weight=PEOPLE, **kw)


def _write(anon: Anonymized, hist: pa.Table, output: Any,
           check: Callable[[str], dict[str, Any]], *, group_column: str, batch_rows: int,
           overwrite: bool, format: str | None, inputs: list) -> tuple[str, int, dict]:
    """Write the release beside ``output``, ``check`` it there, then put it in place.

    One row per person, batch by batch; the file is placed atomically only when ``check``
    (the re-audit of the file as written) returns. Returns the path, the rows written and
    what ``check`` returned.
    """
    import os

    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from .._io import atomic_write

    p = os.fspath(output)
    fmt = format or ("csv" if p.lower().endswith((".csv", ".csv.gz")) else "parquet")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"format must be 'parquet' or 'csv', got {fmt!r}")
    schema, batches = anon.people_batches(hist, group_column=group_column,
                                          batch_rows=batch_rows)
    done: dict[str, Any] = {"rows": 0}

    def _w(tmp: str) -> None:
        make = (lambda: pacsv.CSVWriter(tmp, schema)) if fmt == "csv" else (
            lambda: pq.ParquetWriter(tmp, schema, compression="zstd"))
        with make() as w:
            for b in batches:
                w.write_batch(b)
                done["rows"] += b.num_rows
        done["check"] = check(tmp)

    path = atomic_write(output, _w, overwrite=overwrite, inputs=inputs)
    return path, done["rows"], done["check"]


def _group_profiles(rel: Any) -> tuple[list, np.ndarray]:
    """Return a release up to its group ids: its value labels, and its groups' profiles.

    A group's profile is its size and an order-free hash of its (value, count) entries;
    both lists are sorted.
    """
    from ._publish import dense_rank, entries_digest

    labels = rel.value_labels
    rank = dense_rank(pa.table({"v": labels}))
    digest = entries_digest(np.asarray(rel.entry_group, dtype=np.int64),
                            rank[np.asarray(rel.codes, dtype=np.int64)],
                            np.asarray(rel.counts), rel.n_groups)
    pairs = np.stack([np.asarray(rel.sizes, dtype=np.uint64), digest])
    return sorted(labels.to_pylist(), key=repr), pairs[:, np.lexsort(pairs[::-1])]


def _reaudit(path: str, anon: Anonymized, crit: Any, sensitive: str | None,
             group_column: str) -> dict[str, Any]:
    """Stream the written file back: its groups against the result's, and the criterion."""
    from ..release import Release

    if sensitive is None:   # QI-only criteria read group sizes: one value for everyone
        from .._arrow import iter_batches

        sizes = np.zeros(0, dtype=np.int64)
        for b in iter_batches(path, [group_column]):
            g = np.asarray(b.column(0).to_numpy(), dtype=np.int64)
            add = np.bincount(g)
            sizes = np.pad(sizes, (0, max(0, add.size - sizes.size)))
            sizes[:add.size] += add
        rel = Release.from_counts(pa.table({"g": np.arange(sizes.size), "v": np.zeros(
            sizes.size, dtype=np.int8), "n": sizes}), group="g", sensitive="v", count="n")
        equal = np.array_equal(np.sort(rel.sizes), np.sort(anon.release.sizes))
    else:
        rel = Release.from_table(path, group=group_column, sensitive=sensitive)
        mine, theirs = _group_profiles(rel), _group_profiles(anon.release)
        equal = mine[0] == theirs[0] and np.array_equal(mine[1], theirs[1])
    holds = None if crit is None or sensitive is None else bool(crit(rel))
    return {"groups_equal": bool(equal), "criterion_holds": holds, "n_groups": rel.n_groups}


def release_from_engine(row_counts: Callable[..., pa.Table], data: Any, *, output: Any,
                        qi: Sequence[str], sensitive: str, weight: str | None = None,
                        **options: Any) -> OutOfCoreRelease:
    """Anonymize data where it lives: the engine counts the histogram, the rest as out of core.

    ``row_counts`` is an engine's distinct-row count (``fastpriv.pushdown.row_counts``,
    ``fastpriv.distributed.row_counts``, ``fastpriv.spark.row_counts``): it runs the
    ``GROUP BY qi…, sensitive`` where the data is and returns one row per distinct cell with
    its people, labels typed as in memory. Only that histogram reaches this process; the
    search runs on it and the release is written from it and re-audited
    (:func:`release_out_of_core`, ``weight=`` the counts). The release equals the
    in-memory release of the same rows (rows, order, group ids, columns).

    Parameters
    ----------
    row_counts : callable
        The engine's ``row_counts``.
    data
        What ``row_counts`` reads, one row per person (or ``weight`` people).
    output : path-like
        The release file (Parquet, or CSV by suffix or ``format=``).
    qi, sensitive, weight
        As for :func:`release_out_of_core`; ``sensitive`` is required.
    **options
        ``method``, the anonymizer's keywords (criteria, ``hierarchies``, ``suppression``,
        …), ``nulls``, ``overwrite``, ``format``, ``group_column``, ``batch_rows``.

    """
    from ._input import check_qi_sensitive

    if sensitive is None:
        raise InputError("sensitive: an engine's anonymize counts (QI, sensitive) cells; "
                         "name the sensitive column (k-anonymity alone: anonymize in memory "
                         "or out of core with fastpriv.anonymize.release_out_of_core)")
    qi = check_qi_sensitive(qi, sensitive)
    hist = row_counts(data, qi=qi, group=[], sensitive=sensitive, weight=weight, count=PEOPLE)
    return release_out_of_core(hist, output=output, qi=qi, sensitive=sensitive, weight=PEOPLE,
                               **options)
