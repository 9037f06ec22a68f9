"""Push the count into a SQL engine: one ``GROUP BY`` where the data lives.

Every count-based model (classical models, (c,k)-safety, the privacy skyline, the metrics
on profiles) reads only the **(group, value, count)** triples of a release. A warehouse
computes them with one aggregate query; only one row per distinct (group, value) pair
travels to the client, and :meth:`fastpriv.Release.from_counts` builds from that result
the release that :meth:`fastpriv.Release.from_table` builds from all rows — equal
(``Release.equals``), so every audit answers the same.

:func:`count_query` renders the query, :func:`release` reads its result::

    import duckdb, fastpriv
    from fastpriv import pushdown

    sql = pushdown.count_query("patients", qi=["zip", "age"], sensitive="disease")
    # SELECT "zip", "age", "disease", COUNT(*) AS "count" FROM "patients"
    #   GROUP BY "zip", "age", "disease"
    rel = pushdown.release(duckdb.sql(sql).arrow(), qi=["zip", "age"], sensitive="disease")
    fastpriv.ck_safety.audit(rel, k=3)

A table whose rows stand for several people each (a ``GROUP BY`` result, survey
weights) gives ``weight=``, the multiplicity column of :meth:`Release.from_table`: the
query sums it (``SUM(weight)`` instead of ``COUNT(*)``) and returns two check columns
with which :func:`release` refuses null and negative weights, as ``from_table`` does::

    sql = pushdown.count_query("visits", qi=["zip"], sensitive="disease", weight="n")
    rel = pushdown.release(duckdb.sql(sql).arrow(), qi=["zip"], sensitive="disease",
                           weight="n")

Any engine whose client returns Arrow (DuckDB, Snowflake, BigQuery, Postgres through ADBC,
Databricks SQL, Trino, ClickHouse, …) works the same; pandas and polars results are
accepted too. Label types are normalized as everywhere in fastpriv (all integer widths
read as int64, all string layouts as string).

Null policy: ``GROUP BY`` keeps NULL keys and values as groups of their own;
``nulls=`` of :func:`release` then treats them as :meth:`Release.from_table` treats null
cells (``"error"``, ``"drop"`` — drop the triples, as dropping the rows would — or
``"value"``).

Row-level models
----------------
r-robustness (:func:`fastpriv.robustness.audit`) and the foreground attack
(:func:`fastpriv.foreground.attack`) read rows, not triples: each individual's exact QI
values, group and sensitive value. Their sufficient statistics are the distinct
(QI…, group, sensitive) rows with their multiplicity — a ``GROUP BY qi, group, sensitive``
— and both models give the answer of the full table from that count passed as
``weight=``. :func:`row_counts` runs it in DuckDB (a relation, or Parquet files read by
DuckDB) and returns the small Arrow table::

    t = pushdown.row_counts("patients/", qi=["zip", "age"], group="gid",
                            sensitive="disease")
    fastpriv.robustness.audit(t, qi=["zip", "age"], group="gid", sensitive="disease",
                              weight="count", r=2)

The same table comes from Spark (:func:`fastpriv.spark.row_counts`) and Dask
(:func:`fastpriv.distributed.row_counts`); all three return it in one form
(:func:`finish_row_counts`): labels typed as ``Release.from_table`` types them (every
integer width as int64, every string layout as string), NULL kept as NULL and NaN read as
NULL (as in memory: the null policy is the audit's ``nulls=``, applied to this table as to
the rows), the count an exact int64 (sums of ``weight=``, checked as in memory), rows of
count 0 left out, and the rows sorted by the key columns, then the sensitive value
(ascending, nulls last). Sorted, the table and every row number an audit reports
(a witness's ``row`` is a row of this table) do not depend on the engine or its
partitioning. ``-0.0`` and ``0.0`` sort as equal, so where an engine keeps them apart
(DuckDB, the Dask path) their relative order is the engine's; Spark merges them.

For many groups, the folds :func:`robustness_audit` and :func:`foreground_audit` keep
only summaries in this process: the rows stream back by group, run by run.

Memory
------
DuckDB runs in this process, so its aggregation and sort are this process's memory. The
folds (:func:`audit`, :func:`robustness_audit`, :func:`foreground_audit`,
:func:`class_histogram`, :func:`population_histogram`) bound it themselves: with
``split_out`` (default ``"auto"``) they count their groups (classes) in buckets by a hash
of the keys, one query per bucket, so DuckDB holds about :data:`PAIRS_PER_BUCKET` distinct
rows at a time however many groups there are; ``"auto"`` takes the number of buckets from
DuckDB's estimate of the distinct rows (``approx_count_distinct``, one scan), and each
further bucket is one more scan of the input. :func:`release`, :func:`row_counts` and
:func:`class_counts` run one query. DuckDB's own bound applies to every query: a
relation from a connection with a ``memory_limit`` and a ``temp_directory`` makes DuckDB
spill its aggregation and sort beyond the limit::

    con = duckdb.connect(config={"memory_limit": "500MB", "temp_directory": "/scratch"})
    pushdown.audit(con.read_parquet("patients/*.parquet"), group="gid", sensitive="disease")

(``duckdb_fold``, ``duckdb_one`` and ``duckdb_capped`` of ``benchmarks/bench_engines.py``
measure the three: the README's engine table.)

Class-based models
------------------
Re-identification risk (:func:`fastpriv.risk.audit`), k-map
(:func:`fastpriv.population.k_map`) and δ-presence (:func:`fastpriv.population.delta_presence`)
read only the equivalence classes of the QI tuples: a ``GROUP BY qi`` with ``COUNT(*)``
(``SUM(weight)``). :func:`class_counts` runs it in DuckDB (Spark:
:func:`fastpriv.spark.class_counts`, Dask: :func:`fastpriv.distributed.class_counts`) and
returns the :class:`fastpriv.risk.ClassCounts` that ``risk.class_counts(table, qi=...,
nulls=...)`` counts in memory — the same classes, labels typed as in memory, the same null
policy, and the same refusal under ``nulls="error"`` (the nulls of each column counted in
records, NaN among them)::

    sample = pushdown.class_counts("released/", qi=["zip", "age"])
    people = pushdown.class_counts("census/", qi=["zip", "age"])
    fastpriv.risk.audit(sample, population=people)
    fastpriv.population.k_map(sample, population=people)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ._validation import check_keys, unique_name
from .errors import InputError, InputTypeError

if TYPE_CHECKING:
    from .release import Release
    from .risk import ClassCounts

__all__ = ["count_query", "release", "quote_identifier", "row_counts", "audit",
           "class_histogram", "population_histogram", "finish_population_counts",
           "robustness_audit", "foreground_audit", "group_part",
           "ordered_counts", "finish_row_counts", "weight_check_columns", "anonymize",
           "class_counts",
           "finish_class_counts"]

_QUOTES = ('"', "`")


def quote_identifier(name: str, *, quote: str = '"') -> str:
    """Quote one SQL identifier, doubling any quote character inside it.

    Parameters
    ----------
    name : str
        A column or table name, used verbatim (case and spaces kept).
    quote : {'"', '`'}
        ``'"'``: ANSI SQL (DuckDB, PostgreSQL, Snowflake, SQLite, Trino, Oracle);
        ``'`'``: MySQL, BigQuery, Spark SQL, Databricks, ClickHouse.

    Examples
    --------
    >>> quote_identifier('my "odd" column')
    '"my ""odd"" column"'

    """
    if not isinstance(name, str):
        raise InputTypeError(f"identifier must be a string, got {type(name).__name__}")
    if quote not in _QUOTES:
        raise InputError(f"quote must be one of {_QUOTES}, got {quote!r}")
    if not name:
        raise InputError("identifier must not be empty")
    if "\x00" in name:
        raise InputError(f"identifier {name!r} contains a NUL character")
    return quote + name.replace(quote, quote * 2) + quote




def _check_names(keys: list[str], param: str, sensitive: Any, count: Any) -> None:
    if not isinstance(sensitive, str):
        raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
    if not isinstance(count, str) or not count:
        raise InputTypeError(f"count must be a non-empty column name, got {count!r}")
    if sensitive in keys:
        raise InputError(f"sensitive column {sensitive!r} is also a {param} column")
    if count in keys or count == sensitive:
        raise InputError(f"count={count!r} is also the name of a {param}/sensitive column; "
                         "pass another output name, e.g. count='n_rows'")


def weight_check_columns(count: str) -> tuple[str, str]:
    """Names of the check columns of a weighted :func:`count_query`.

    ``(f"{count}_null_weights", f"{count}_least_weight")``: per (group, value) pair, the
    number of null weights and the least weight, which :func:`release` reads to refuse
    null and negative weights (a SQL ``SUM`` skips nulls and nets out negatives).
    """
    return f"{count}_null_weights", f"{count}_least_weight"


def _column_names(data: Any) -> list[str]:
    """Column names of a table-like without converting it (empty when unknown)."""
    for attr in ("column_names", "columns"):
        names = getattr(data, attr, None)
        if names is not None and not callable(names):
            return [str(n) for n in names]
    schema = getattr(data, "schema", None)
    return list(getattr(schema, "names", None) or [])


def _check_weight(weight: Any, keys: list[str], param: str, sensitive: str,
                  count: str) -> tuple[str, str] | None:
    """Check ``weight=`` of :func:`count_query` / :func:`release`; its check columns."""
    if weight is None:
        return None
    if not isinstance(weight, str) or not weight:
        raise InputTypeError(f"weight must be a column name, got {weight!r}")
    if weight in keys or weight == sensitive:
        raise InputError(f"weight column {weight!r} is also a {param} or sensitive column")
    checks = weight_check_columns(count)
    taken = [c for c in checks if c in keys or c == sensitive]
    if taken:
        raise InputError(f"count={count!r}: the weight check column {taken[0]!r} is also a "
                         f"{param}/sensitive column; pass another count name")
    return checks


def count_query(table_name: str | Sequence[str], *, sensitive: str,
                group: str | Sequence[str] | None = None, qi: Sequence[str] | None = None,
                weight: str | None = None, count: str = "count", where: str | None = None,
                quote: str = '"') -> str:
    """Render the SQL that computes a release's (group, value, count) triples in the engine.

    ``SELECT k1, …, kq, s, COUNT(*) AS count FROM table [WHERE …] GROUP BY k1, …, kq, s``
    with every identifier quoted (:func:`quote_identifier`). The result has one row per
    distinct (group key, sensitive value) pair: the counts n_g(s) of Chen et al. (2007)
    §3 / Martin et al. (2007) §2 that every count-based model reads. Feed it to
    :func:`release`.

    With ``weight=w`` each row stands for ``w`` people (as in
    :meth:`Release.from_table`): the count is ``SUM(w)``, and two check columns follow
    it (:func:`weight_check_columns`), ``COUNT(*) - COUNT(w)`` (null weights) and
    ``MIN(w)`` (the least weight), since ``SUM`` alone would skip a null weight and net
    out a negative one. :func:`release` with the same ``weight=`` refuses nulls,
    negatives and non-integer sums (a float or fractional-decimal weight column) with
    :class:`~fastpriv.InputError`, and leaves out pairs whose rows all weigh 0. The sum
    is the engine's: DuckDB, PostgreSQL, MySQL and Snowflake sum integers in a wider
    type, BigQuery and Spark (ANSI mode) raise on overflow; a sum past 2**63 - 1 is
    refused by :func:`release`.

    Parameters
    ----------
    table_name : str or sequence of str
        The table (or view). A sequence is a qualified name, e.g.
        ``("warehouse", "public", "patients")`` → ``"warehouse"."public"."patients"``.
    sensitive : str
        The sensitive column.
    group : str or list of str, optional
        Group-id column(s) of a bucketized release.
    qi : list of str, optional
        Generalized QI columns: groups are their distinct value tuples. Give exactly one
        of ``group`` and ``qi`` (the same keywords as :meth:`Release.from_table`).
    weight : str, optional
        Multiplicity column: each row stands for ``weight`` individuals (non-negative
        integers, no nulls), as in :meth:`Release.from_table`. The count is then
        ``SUM(weight)``, followed by the two check columns; pass the same ``weight=`` to
        :func:`release`. It may be named like ``count`` (re-counting a count table).
    count : str
        Name of the count column in the result (default ``"count"``).
    where : str, optional
        A filter, inserted verbatim after ``WHERE`` (SQL text you write; it is not quoted
        or checked).
    quote : {'"', '`'}
        Identifier quote of the engine's dialect (see :func:`quote_identifier`).

    Returns
    -------
    str
        The query text.

    Examples
    --------
    >>> print(count_query("adult", qi=["age", "sex"], sensitive="occupation"))
    SELECT "age", "sex", "occupation", COUNT(*) AS "count" FROM "adult" GROUP BY "age", "sex", "occupation"
    >>> print(count_query("visits", group="gid", sensitive="disease", weight="n"))
    SELECT "gid", "disease", SUM("n") AS "count", COUNT(*) - COUNT("n") AS "count_null_weights", MIN("n") AS "count_least_weight" FROM "visits" GROUP BY "gid", "disease"

    """  # noqa: E501
    keys, param = check_keys(group, qi)
    _check_names(keys, param, sensitive, count)
    checks = _check_weight(weight, keys, param, sensitive, count)
    parts = [table_name] if isinstance(table_name, str) else list(table_name)
    if not parts:
        raise InputError("table_name: give a table name")
    table = ".".join(quote_identifier(p, quote=quote) for p in parts)
    cols = ", ".join(quote_identifier(c, quote=quote) for c in keys + [sensitive])
    out = quote_identifier(count, quote=quote)
    if checks is None:
        agg = f"COUNT(*) AS {out}"
    else:
        w = quote_identifier(weight, quote=quote)
        nulls, least = (quote_identifier(c, quote=quote) for c in checks)
        agg = f"SUM({w}) AS {out}, COUNT(*) - COUNT({w}) AS {nulls}, MIN({w}) AS {least}"
    sql = f"SELECT {cols}, {agg} FROM {table}"
    if where is not None:
        if not isinstance(where, str) or not where.strip():
            raise InputError(f"where must be a non-empty SQL condition, got {where!r}")
        sql += f" WHERE {where}"
    return f"{sql} GROUP BY {cols}"


def release(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
            qi: Sequence[str] | None = None, weight: str | None = None,
            count: str = "count", nulls: str = "error") -> Release:
    """Build the :class:`~fastpriv.Release` of a :func:`count_query` result.

    ``Release.from_counts(data, group=<group or qi columns>, sensitive=sensitive,
    count=count, nulls=nulls)``: triples of the same (group, value) are summed, so the
    ``data`` may also be a concatenation of partial counts (per partition, per day, …). The
    release equals ``Release.from_table`` on the rows the query counted (with
    ``weight=``, ``Release.from_table(rows, weight=...)``).

    Parameters
    ----------
    data : table-like
        The query result: a ``pyarrow.Table`` / ``RecordBatchReader`` (what Arrow-native
        clients return), a pandas or polars DataFrame.
    sensitive, group, qi, count :
        As given to :func:`count_query`.
    weight : str, optional
        The ``weight=`` the query was rendered with: its check columns are read, and a
        null or negative weight, a sum that is not an integer or is past 2**63 - 1 raises
        :class:`~fastpriv.InputError` naming the weight column; pairs whose rows all weigh
        0 are left out (rows of weight 0 stand for nobody). A result holding the check
        columns without ``weight=`` is refused (its weights would go unchecked).
    nulls : {"error", "drop", "value"}
        Null keys and values (NULL groups of the ``GROUP BY``), as in
        :meth:`Release.from_table`.

    Returns
    -------
    fastpriv.Release
        An SVPI release.

    """
    import pyarrow as pa

    from ._arrow import as_table
    from .release import Release

    keys, param = check_keys(group, qi)
    _check_names(keys, param, sensitive, count)
    checks = _check_weight(weight, keys, param, sensitive, count)
    if checks is None:
        present = [c for c in weight_check_columns(count) if c in _column_names(data)]
        if present:
            raise InputError(f"data has the weight check column {present[0]!r} of "
                             "count_query(weight=...): pass the same weight= to release, "
                             "so that null and negative weights are refused")
        return Release.from_counts(data, group=keys, sensitive=sensitive, count=count,
                                   nulls=nulls)
    table = as_table(data, keys + [sensitive, count, *checks], param="data")
    ctype = table.schema.field(count).type
    if not (pa.types.is_integer(ctype)
            or (pa.types.is_decimal(ctype) and ctype.scale == 0)):
        hint = (" (a float sum: the weight column holds floats, or a DataFrame client "
                "turned a wide integer sum into floats; read the result as Arrow)"
                if pa.types.is_floating(ctype) else "")
        raise InputTypeError(f"weight column {weight!r} must hold integers: the query's "
                             f"SUM({weight}) column {count!r} is {ctype}{hint}")
    sums = weight_sums(table, weight=weight, n=count, nulls=checks[0], least=checks[1])
    table = table.select(keys + [sensitive]).append_column(count, pa.array(sums, pa.int64()))
    table = table.filter(pa.array(sums > 0))          # rows of weight 0: nobody
    return Release.from_counts(table, group=keys, sensitive=sensitive, count=count,
                               nulls=nulls)


# ------------------------------------------------------------------ row-level models
def check_row_names(qi: Any, group: Any, sensitive: Any, weight: Any = None,
                    count: Any = "count") -> tuple[list[str], list[str]]:
    """Check the column names of a row count; return the QI and the group columns.

    Shared by every engine's ``row_counts``: ``qi`` and ``group`` are names or lists of
    names (none twice, none in both; ``group`` may be an empty list: the distinct
    (QI, sensitive) rows of a table not yet grouped, the anonymizers' histogram),
    ``sensitive`` one name outside them, ``weight`` a name outside them or None, ``count``
    a non-empty output name that is no key or sensitive column. Errors name the parameter.
    """
    from ._validation import check_column_names

    if qi is None:
        raise InputError("qi: give the QI columns the adversary knows (the row-level "
                         "models read every individual's exact QI values)")
    if group is None:
        raise InputError("group: give the group-id column(s) of the release")
    qi_cols = check_column_names(qi, "qi")
    ungrouped = isinstance(group, (list, tuple)) and len(group) == 0
    group_cols = [] if ungrouped else check_column_names(group, "group")
    both = [c for c in qi_cols if c in group_cols]
    if both:
        raise InputError(f"group: column {both[0]!r} is also a qi column")
    keys = qi_cols + group_cols
    if not isinstance(sensitive, str):
        raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
    if sensitive in keys:
        which = "qi" if sensitive in qi_cols else "group"
        raise InputError(f"sensitive column {sensitive!r} is also a {which} column")
    if weight is not None:
        if not isinstance(weight, str):
            raise InputTypeError(f"weight must be a column name, got {type(weight).__name__}")
        if weight in keys or weight == sensitive:
            raise InputError(f"weight column {weight!r} is also a qi, group or sensitive "
                             "column")
    if not isinstance(count, str) or not count:
        raise InputTypeError(f"count must be a non-empty column name, got {count!r}")
    if count in keys or count == sensitive:
        raise InputError(f"count={count!r} is also the name of a qi/group/sensitive column; "
                         "pass another output name, e.g. count='n_rows'")
    return qi_cols, group_cols


def weight_sums(table: Any, *, weight: str, n: str, nulls: str, least: str) -> Any:
    """Check the weights behind an engine's ``SUM(weight)`` and return exact int64 sums.

    ``table`` holds, per aggregated row, the sum of the weights (column ``n``; integers or
    ``decimal(38, 0)``, so that the engine's sum cannot overflow), the number of null
    weights (``nulls``) and the least weight (``least``). A null or a negative weight
    anywhere, a sum past 2**63 - 1 or a total past it raises :class:`InputError`, as
    ``Release.from_table(weight=)`` refuses such weights in memory.

    Returns
    -------
    numpy.ndarray of int64
        The sums, one per row of ``table``.

    """
    import numpy as np
    import pyarrow.compute as pc

    from ._validation import INT64_MAX, check_total

    n_null = int(pc.sum(table.column(nulls)).as_py() or 0)
    if n_null:
        raise InputError(f"weight column {weight!r} has {n_null} nulls")
    low = pc.min(table.column(least)).as_py()
    if low is not None and low < 0:
        raise InputError(f"weight column {weight!r} has negative weights; weights count "
                         "individuals (>= 0)")
    sums = [int(x) for x in table.column(n).to_pylist()]
    if any(x > INT64_MAX for x in sums):
        raise InputError(f"weight column {weight!r}: a count is past 2**63 - 1 (the largest "
                         "count fastpriv holds)")
    out = np.array(sums, dtype=np.int64)
    check_total(out, f"weight column {weight!r}")
    return out


def finish_row_counts(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                      sensitive: str, count: str = "count") -> Any:
    """Put a ``GROUP BY qi, group, sensitive`` result into fastpriv's one row-count form.

    Every engine's ``row_counts`` ends here, and so can any SQL engine's result (the
    query of the module notes): labels typed as :meth:`Release.from_table` types them
    (every integer width int64, every string layout string, dictionaries decoded), NaN
    read as NULL (as in memory) and NULL kept, rows with the same labels summed (partial
    counts may be concatenated), rows of count 0 left out, and the rows sorted by
    ``qi``, then ``group``, then ``sensitive`` (ascending, nulls last). Feed it to
    :func:`fastpriv.robustness.audit` or :func:`fastpriv.foreground.attack` with
    ``weight=count``.

    Parameters
    ----------
    data : table-like
        The query result: a ``pyarrow.Table`` or ``RecordBatchReader``, a pandas or polars
        DataFrame, with the key columns, ``sensitive`` and ``count``.
    qi, group, sensitive :
        The columns of the count.
    count : str
        Its count column: non-negative integers, no nulls (or ``decimal(38, 0)``).

    Returns
    -------
    pyarrow.Table
        Columns ``qi…, group…, sensitive, count`` (int64), one row per distinct row.

    """
    import numpy as np
    import pyarrow as pa

    from ._arrow import apply_weights, as_table, canonical_labels, encode_keys, nans_as_nulls

    qi_cols, group_cols = check_row_names(qi, group, sensitive, None, count)
    cols = qi_cols + group_cols + [sensitive]
    table = as_table(data, cols + [count], param="data")
    cnt = table.column(count)
    if pa.types.is_decimal(cnt.type):
        vals = cnt.to_pylist()
        if any(v is not None and v != int(v) for v in vals):
            raise InputError(f"count column {count!r} holds fractions")
        table = table.set_column(table.schema.get_field_index(count), count, pa.array(
            [None if v is None else int(v) for v in vals], pa.int64()))
    if not pa.types.is_integer(table.column(count).type):
        raise InputTypeError(f"count column {count!r} must hold integers, got "
                             f"{table.column(count).type}")
    table, w = apply_weights(table, count)        # nulls, negatives, overflow; drops 0s
    table, _ = nans_as_nulls(table, cols)
    if table.num_rows == 0:
        return pa.table({c: canonical_labels(pa.array([], table.schema.field(c).type))
                         for c in cols} | {count: pa.array([], pa.int64())})
    codes, keys = encode_keys([table.column(c) for c in cols], names=cols)
    sums = np.zeros(keys.num_rows, dtype=np.int64)
    if keys.num_rows == table.num_rows:           # distinct already: a permutation
        sums[codes] = w
    else:                                         # exact: the total is checked ≤ 2**63 - 1
        order = np.argsort(codes, kind="stable")
        sc = codes[order]
        starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
        sums[sc[starts]] = np.add.reduceat(w[order], starts)
    return keys.append_column(count, pa.array(sums, pa.int64()))


def _require_duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is a dependency
        raise ImportError("fastpriv.pushdown.row_counts needs DuckDB: pip install duckdb"
                          ) from exc
    return duckdb


_DUCK_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                  "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
_FLOATS = ("FLOAT", "DOUBLE")


def row_counts(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
               sensitive: str, weight: str | None = None, count: str = "count") -> Any:
    """Count the distinct (QI, group, sensitive) rows in DuckDB; a small Arrow table.

    ``SELECT qi…, group…, sensitive, COUNT(*) AS count … GROUP BY ALL`` (``SUM(weight)``
    with ``weight=``) runs in DuckDB, where the data lives; only one row per distinct row
    comes back, in the form of :func:`finish_row_counts`. r-robustness and the foreground
    attack on it, with ``weight=count``, give the answer of the full table in memory
    (module notes)::

        t = row_counts(duckdb.sql("FROM patients"), qi=["zip"], group="gid",
                       sensitive="disease")
        fastpriv.robustness.audit(t, qi=["zip"], group="gid", sensitive="disease",
                                  weight="count", r=2)

    Parameters
    ----------
    data : duckdb.DuckDBPyRelation or path
        A DuckDB relation (``duckdb.sql(...)``, ``con.table(...)``, ``duckdb.from_arrow``),
        or a Parquet file or a folder of Parquet files (``**/*.parquet``, read by DuckDB's
        own reader, hive ``key=value`` folders as columns).
    qi : str or list of str
        The QI columns (the adversary's knowledge).
    group : str or list of str
        The group-id column(s) of the release.
    sensitive : str
        The sensitive column.
    weight : str, optional
        Multiplicity column, as in :meth:`fastpriv.Release.from_table`: the count is the
        sum of the weights (summed as ``DECIMAL(38,0)``, exact); a null or negative weight
        raises :class:`~fastpriv.InputError`.
    count : str
        Name of the count column of the result.

    Returns
    -------
    pyarrow.Table
        Columns ``qi…, group…, sensitive, count`` (int64), sorted (see
        :func:`finish_row_counts`).

    """
    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight, count)
    table = _duckdb_counts(data, qi_cols + group_cols + [sensitive], weight, count)
    return finish_row_counts(table, qi=qi_cols, group=group_cols, sensitive=sensitive,
                             count=count)


@contextlib.contextmanager
def _duckdb_relation(data: Any) -> Iterator[Any]:
    """Open ``data`` as a DuckDB relation: a relation, or a Parquet path read by DuckDB.

    A path is a file or a folder read as ``**/*.parquet`` (hive ``key=value`` folders as
    columns) on a connection of its own, closed on exit.
    """
    duckdb = _require_duckdb()
    if isinstance(data, duckdb.DuckDBPyRelation):
        yield data
        return
    source = _parquet_source(data, "data")
    con = duckdb.connect()
    try:
        _nans_possible(con)
        yield con.read_parquet(source)
    finally:
        con.close()


def _parquet_source(data: Any, param: str) -> str:
    """Return what DuckDB reads for a Parquet path: the file, or ``folder/**/*.parquet``.

    Anything but an existing path, or a folder without a Parquet file, is refused naming
    ``param``.
    """
    import glob
    import os

    if not isinstance(data, (str, os.PathLike)):
        raise InputTypeError(f"{param} must be a DuckDB relation or a path to Parquet data, "
                             f"got {type(data).__name__}")
    path = os.fspath(data)
    if not os.path.exists(path):
        raise InputError(f"{param}: no such file or directory: {path!r}")
    if not os.path.isdir(path):
        return path
    source = os.path.join(path, "**", "*.parquet")
    if not glob.glob(source, recursive=True):
        raise InputError(f"{param}: no *.parquet file under {path!r}")
    return source


def _nans_possible(con: Any) -> None:
    """Let DuckDB see NaN in Parquet files whose statistics do not count them.

    By default DuckDB assumes a Parquet float column without a NaN count holds no NaN
    (``parquet_can_have_nan``), and folds ``isnan(x)`` to false from the min/max
    statistics: NaN keys (pyarrow writes no NaN count) would not read as nulls, and a
    class would split in two. Versions without the setting do not fold it.
    """
    duckdb = _require_duckdb()
    with contextlib.suppress(duckdb.CatalogException):
        con.execute("SET parquet_can_have_nan = true")


def _count_select(rel: Any, cols: list[str], weight: str | None, count: str,
                  keys: Sequence[str] = ()) -> tuple[str, tuple[str, str, str] | None]:
    """Return the count's select list: ``cols…, COUNT(*)`` (or the weight's sum and checks).

    Returns the SQL and, with ``weight``, the names of the sum, null-weight and least-weight
    columns :func:`weight_sums` reads. The float columns among ``keys`` are selected as
    fastpriv compares them (NaN as NULL, ``-0.0`` as ``0.0``), so that the rows of one
    group are one run of an ordered result.
    """
    from ._validation import check_columns

    read = cols + ([weight] if weight is not None else [])
    check_columns(read, rel.columns, "data")
    types = dict(zip(rel.columns, map(str, rel.types), strict=True))
    if weight is not None and types[weight] not in _DUCK_INTEGERS:
        raise InputTypeError(f"weight column {weight!r} must hold integers, got "
                             f"{types[weight]}")

    def column(c: str) -> str:
        q = quote_identifier(c)
        return f"{_key_column(c, types)} AS {q}" if c in keys and types[c] in _FLOATS else q

    sel = ", ".join(column(c) for c in cols)
    if weight is None:
        return f"{sel}, COUNT(*) AS {quote_identifier(count)}", None
    taken = list(cols)
    n = unique_name("n", taken)
    nulls = unique_name("nulls", taken + [n])
    least = unique_name("least", taken + [n, nulls])
    w = quote_identifier(weight)
    return (f"{sel}, SUM({w})::DECIMAL(38,0) AS {quote_identifier(n)}, "
            f"COUNT(*) FILTER (WHERE {w} IS NULL) AS {quote_identifier(nulls)}, "
            f"MIN({w}) AS {quote_identifier(least)}"), (n, nulls, least)


def _key_column(column: str, types: dict[str, str]) -> str:
    """Return SQL for key ``column`` as fastpriv compares keys (floats: NaN NULL, -0.0 0.0)."""
    q = quote_identifier(column)
    if types[column] in _FLOATS:
        return f"CASE WHEN isnan({q}) THEN NULL WHEN {q} = 0 THEN 0.0 ELSE {q} END"
    return q


def _checked(table: Any, cols: list[str], weight: str | None, count: str,
             checks: tuple[str, str, str] | None) -> Any:
    """Turn a weighted count's sum and check columns into ``count`` (int64), checked."""
    import pyarrow as pa

    if checks is None:
        return table
    n, nulls, least = checks
    sums = weight_sums(table, weight=weight, n=n, nulls=nulls, least=least)
    out = table.select(cols).append_column(count, pa.array(sums))
    for c in table.column_names:                 # the sampling weight sums, if any
        if c not in (*cols, n, nulls, least):
            out = out.append_column(c, table.column(c))
    return out


def _duckdb_counts(data: Any, cols: list[str], weight: str | None, count: str,
                   sampling: Any = None, nulls: str = "value") -> Any:
    """Run ``SELECT cols…, COUNT(*) AS count … GROUP BY ALL`` in DuckDB; an Arrow table.

    The one DuckDB query of :func:`row_counts` and :func:`class_counts`. ``data`` is a
    relation or a Parquet path (a file, or a folder read as ``**/*.parquet``). With
    ``weight`` the count is ``SUM(weight)`` as ``DECIMAL(38,0)`` (exact), with the number
    of null weights and the least weight, which :func:`weight_sums` checks (a null or
    negative weight raises :class:`InputError`, a non-integer weight column
    :class:`InputTypeError`). Returns ``cols`` as DuckDB hands them to Arrow and ``count``
    (int64; groups whose rows all weigh 0 have count 0). With ``sampling``
    (:class:`fastpriv._sampling.SamplingColumns`) the sampling weight sums follow
    (:func:`_sampling_select`).
    """
    with _duckdb_relation(data) as rel:
        select, checks = _count_select(rel, cols, weight, count)
        where = ""
        if sampling is not None:
            more, where = _sampling_select(rel, cols, weight, sampling, nulls)
            select += more
        view = unique_name("fastpriv_rows", [])
        table = _read_all(rel.query(
            view, f"SELECT {select} FROM {view}{where} GROUP BY ALL").arrow())
    return _checked(table, cols, weight, count, checks)


def _sampling_select(rel: Any, cols: list[str], weight: str | None, sampling: Any,
                     nulls: str) -> tuple[str, str]:
    """Return the select list of the sampling weight sums and the ``WHERE`` of ``drop``.

    Under ``nulls="drop"`` the rows whose sampling weight is NULL or NaN are left out
    (:func:`fastpriv._sampling.finish` drops the classes of a null QI).

    The sums of :class:`fastpriv._sampling.SamplingColumns`: Σ weight · sampling weight
    over the rows whose sampling weight is finite and > 0, and the rows of weight > 0 whose
    sampling weight is NULL or NaN, or neither (zero, negative or infinite).
    """
    from ._sampling import check_numeric
    from ._validation import check_columns

    check_columns([sampling.column], rel.columns, "sampling_weight")
    types = dict(zip(rel.columns, map(str, rel.types), strict=True))
    kind = types[sampling.column]
    check_numeric(sampling.column, kind in _DUCK_INTEGERS or kind in _FLOATS
                  or kind.startswith("DECIMAL"), kind)
    x = f"CAST({quote_identifier(sampling.column)} AS DOUBLE)"
    w = "1" if weight is None else quote_identifier(weight)
    null = f"({x} IS NULL OR isnan({x}))"
    good = f"(NOT {null} AND {x} > 0 AND NOT isinf({x}))"
    select = (f", COALESCE(SUM({x} * {w}) FILTER (WHERE {w} > 0 AND {good}), 0)::DOUBLE"
              f" AS {quote_identifier(sampling.total)}"
              f", COUNT(*) FILTER (WHERE {w} > 0 AND {null})"
              f" AS {quote_identifier(sampling.missing)}"
              f", COUNT(*) FILTER (WHERE {w} > 0 AND NOT {null} AND NOT {good})"
              f" AS {quote_identifier(sampling.bad)}")
    return select, f" WHERE NOT {null}" if nulls == "drop" else ""


def ordered_counts(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                   qi: Sequence[str] | None = None, weight: str | None = None,
                   count: str = "count", batch_size: int = 1 << 20) -> Iterator[Any]:
    """Stream the (group, value, count) triples of ``data`` from DuckDB, ordered by group.

    ``SELECT keys…, sensitive, COUNT(*) … GROUP BY ALL ORDER BY keys NULLS LAST``, read as
    Arrow record batches of about ``batch_size`` rows: the rows of a group are one run, in
    fastpriv's key order (float keys compared as fastpriv compares them: NaN as NULL,
    ``-0.0`` as ``0.0``), which :func:`fastpriv.streaming.clustered_audit` checks as it
    folds them. The whole result never sits in this process. With ``weight`` the counts
    are the checked sums (as :func:`row_counts`).

    Yields
    ------
    pyarrow.Table
        Columns ``keys…, sensitive, count``; one batch at a time.

    """
    import pyarrow as pa

    keys, param = check_keys(group, qi)
    _check_names(keys, param, sensitive, count)
    if weight is not None and (not isinstance(weight, str) or weight in keys + [sensitive]):
        raise InputError(f"weight must be a column name other than the key and sensitive "
                         f"columns; got {weight!r}")
    cols = keys + [sensitive]
    with _duckdb_relation(data) as rel:
        select, checks = _count_select(rel, cols, weight, count, keys=keys)
        view = unique_name("fastpriv_rows", [])
        by = ", ".join(f"{i + 1} ASC NULLS LAST" for i in range(len(keys)))
        result = rel.query(view, f"SELECT {select} FROM {view} GROUP BY ALL ORDER BY {by}")
        reader = result.to_arrow_reader(batch_size)
        try:
            for batch in reader:
                if batch.num_rows:
                    yield _checked(pa.Table.from_batches([batch]), cols, weight, count,
                                   checks)
        finally:
            reader.close()      # a refused batch leaves no open result on the connection


def audit(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
          qi: Sequence[str] | None = None, skylines: Any = None, classic: bool = True,
          l: int = 2, q: Any = "compute", order: Sequence[Any] | None = None,  # noqa: E741
          nulls: str = "error", weight: str | None = None, k: int | None = None,
          batch_size: int = 1 << 20, options: Any = None,
          split_out: int | str = "auto") -> Any:
    """Audit data in DuckDB as a fold over its ordered counts: memory independent of groups.

    The count is pushed down (``GROUP BY``), and its result streams back ordered by group
    (:func:`ordered_counts`) into :func:`fastpriv.streaming.fold_clustered`, which folds
    each group as its run ends (:mod:`fastpriv.folds`): this process holds one batch and
    the summaries (:func:`release` holds every (group, value) pair). DuckDB's own
    aggregation and sort run in this process too: with ``split_out`` buckets of groups
    (a hash of the group keys) each query counts and sorts only its bucket's pairs — under
    ``"auto"`` about :data:`PAIRS_PER_BUCKET`, whatever the number of groups. A refusal
    has the words of the whole input (as with one bucket). Q, for t-closeness, β-likeness
    and δ-disclosure, is one more aggregate
    (``GROUP BY sensitive``) unless ``q=`` gives it. The result equals ``classic.audit`` /
    ``skyline.check`` of the same rows in memory; ``worst_group`` indices too when the
    groups are counted in one bucket (they are None over several: a group's place in the
    key order is not known inside its bucket, as on Spark and Dask).

    Parameters
    ----------
    data : duckdb.DuckDBPyRelation or path
        A DuckDB relation or Parquet data (as :func:`row_counts`).
    sensitive, group, qi, nulls, weight :
        As for :meth:`fastpriv.Release.from_table` (SVPI).
    skylines, classic, l, order, k, options :
        As for :func:`fastpriv.streaming.clustered_audit` (``k``: (c,k)-safety, folded;
        ``options``: the registry's models folded by their per-group statistic).
    q : "compute", mapping or None
        Distribution Q: ``"compute"`` (default) counts it in DuckDB; a mapping gives Q;
        None leaves out the models that need it (named in ``skipped``).
    batch_size : int
        Rows per batch of the streamed counts.
    split_out : int or "auto"
        Buckets of groups, each counted by its own query (a scan of the input each).
        ``"auto"`` (default): DuckDB's estimate of the distinct (group, value) pairs
        (``approx_count_distinct``, one scan) over :data:`PAIRS_PER_BUCKET`; 1: one query
        for every group (``worst_group`` indices given).

    Returns
    -------
    fastpriv.streaming.StreamAudit

    """
    from ._arrow import NULL_POLICIES
    from ._validation import check_choice, check_columns, check_int
    from .folds import needs_q, q_of_totals, q_param
    from .streaming import value_distribution

    check_choice(nulls, "nulls", NULL_POLICIES)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    keys, _ = check_keys(group, qi)
    skipped: dict = {}
    values = qv = None
    with _duckdb_relation(data) as rel:
        check_columns(keys + [sensitive], rel.columns, "data")
        buckets, passes = _bucket_count(rel, keys + [sensitive], split_out)
        if needs_q(classic, options) and isinstance(q, str) and q == "compute":
            counts = ordered_counts(_null_flags(rel, keys), sensitive=sensitive, group=keys,
                                    weight=weight, count="n", batch_size=batch_size)
            found, totals, _ = value_distribution(counts, sensitive, keys=keys, nulls=nulls,
                                                  weight="n", allow_empty=True)
            values, qv = q_of_totals([(found, totals)])
            passes += 1
        elif needs_q(classic, options):
            values, qv, skipped = q_param(q)
        params = {"l": l, "values": values, "q": qv, "order": order, "skylines": skylines,
                  "classic": classic, "k": k, "options": options}
        state = _as_one_query(lambda b: _fold_groups(rel, params, keys, sensitive, weight,
                                                     nulls, batch_size, b), buckets)
    if state is None:
        raise InputError("data is empty: a release needs at least one row")
    return state.finish(passes=passes + buckets, skipped=skipped)


def _fold_groups(rel: Any, params: dict, keys: list[str], sensitive: str, weight: str | None,
                 nulls: str, batch_size: int, buckets: int) -> Any:
    """Fold every bucket's ordered counts into one ``GroupwiseState(**params)``.

    Returns the state, or None when no row was left. With one bucket the groups are
    numbered in the whole input's key order (``worst_group`` indices).
    """
    from .streaming import GroupwiseState, fold_clustered

    state, seen = GroupwiseState(**params), False
    for part in _bucketed(rel, keys, buckets):
        counts = ordered_counts(part, sensitive=sensitive, group=keys, weight=weight,
                                count="n", batch_size=batch_size)
        try:
            seen |= fold_clustered(counts, state=state, keys=keys, sensitive=sensitive,
                                   weight="n", nulls=nulls, batch_size=batch_size,
                                   indexed=buckets == 1)
        finally:
            counts.close()      # a refused bucket leaves no open result on the connection
    return state if seen else None


def _as_one_query(run: Callable[[int], Any], buckets: int) -> Any:
    """Return ``run(buckets)``; a refusal found in one bucket is raised in the whole's words.

    A bucket's refusal names only its own rows (one null where the input has two, one of
    two null key columns): ``run(1)`` — one query over every group, on this refusal path
    only — raises what ``split_out=1`` raises for the input.
    """
    try:
        return run(buckets)
    except InputError:
        if buckets == 1:
            raise
        run(1)
        raise


#: distinct rows per bucket of ``split_out="auto"`` (the (group, value) pairs of
#: :func:`audit`, the classes of :func:`class_histogram`): DuckDB counting and sorting this
#: many takes a few hundred MiB (``duckdb_fold`` of ``benchmarks/bench_engines.py``)
PAIRS_PER_BUCKET = 1 << 21


def _bucket_count(rel: Any, columns: list[str], split_out: Any) -> tuple[int, int]:
    """Return the number of buckets of a fold, and the passes it took (1 for ``"auto"``).

    ``"auto"``: ``approx_count_distinct`` (HyperLogLog: one scan, little memory) of the
    distinct rows of ``columns`` (what the fold's largest query counts; checked by the
    caller) over :data:`PAIRS_PER_BUCKET`, at least 1.
    """
    from ._validation import check_int

    if not (isinstance(split_out, str) and split_out == "auto"):
        if isinstance(split_out, str):
            raise InputError(f"split_out must be 'auto' or a number of buckets >= 1; got "
                             f"{split_out!r}")
        return check_int(split_out, "split_out", minimum=1), 0
    types = dict(zip(rel.columns, map(str, rel.types), strict=True))
    cols = ", ".join(_key_column(c, types) for c in columns)
    view = unique_name("fastpriv_rows", [])
    ((rows,),) = rel.query(view, f"SELECT approx_count_distinct(hash({cols})) FROM {view}"
                           ).fetchall()
    return max(1, -(-int(rows or 0) // PAIRS_PER_BUCKET)), 1


def _bucketed(rel: Any, keys: list[str], buckets: int) -> list[Any]:
    """Split ``rel`` into ``buckets`` relations by a hash of ``keys``: each group in one.

    The keys are hashed as fastpriv compares them (:func:`_key_column`), so the rows of
    one group land in one bucket.
    """
    if buckets == 1:
        return [rel]
    types = dict(zip(rel.columns, map(str, rel.types), strict=True))
    spread = f"hash({', '.join(_key_column(c, types) for c in keys)}) % {buckets}"
    return [rel.filter(f"{spread} = {i}") for i in range(buckets)]


def _null_flags(rel: Any, keys: list[str]) -> Any:
    """Return ``rel`` with each key column replaced by 0, or NULL where it is null (or NaN).

    Counting (flags, sensitive) instead of (keys, sensitive) gives the value totals every
    null policy needs (a row of a null key is dropped or refused) in a handful of rows.
    """
    kept = [c for c in rel.columns if c not in keys]
    flags = [f"CASE WHEN {_not_null(rel, c)} THEN 0 END AS {quote_identifier(c)}"
             for c in keys]
    return rel.project(", ".join(flags + [quote_identifier(c) for c in kept]))


# ------------------------------------------------------------------ class-based models
def robustness_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     knowledge: Any = None, sensitive_values: Sequence[Any] | None = None,
                     max_set_size: int | None = None, epsilon: float = 0.01,
                     confidence: float = 0.9, min_support: int | None = None,
                     nulls: str = "error", max_items: int = 100, batch_size: int = 1 << 20,
                     split_out: int | str = "auto", **options: Any) -> Any:
    """r-robustness in DuckDB as a fold over groups: this process holds summaries, not rows.

    Two passes (:mod:`fastpriv.robustness_fold`): DuckDB counts the distinct (QI,
    sensitive) cells, from which the adversary's knowledge is derived here (unless
    ``knowledge`` is given); then the distinct (QI, group, sensitive) rows stream back
    ordered by group (:func:`ordered_counts`), are cut into runs of complete groups of
    about ``batch_size`` rows, and each run is audited with that knowledge
    (:func:`fastpriv.robustness_fold.audit_part`) into a
    :class:`~fastpriv.robustness_fold.RobustnessSummary`, merged. The result equals
    ``RobustnessSummary.from_audit`` of :func:`fastpriv.robustness.audit` on
    :func:`row_counts` in memory (``weight=`` the count). Parameters as
    :func:`fastpriv.spark.robustness_audit`; ``data`` as :func:`row_counts`; ``split_out``
    as :func:`audit` (buckets by a hash of the group keys, the pairs estimated being the
    distinct rows), the result the same for any number of buckets.

    Returns
    -------
    fastpriv.robustness_fold.RobustnessSummary

    """
    import functools

    from ._validation import check_int
    from .robustness_fold import audit_part, prepare

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    count = unique_name("count", qi_cols + group_cols + [sensitive])
    with _duckdb_relation(data) as rel:
        buckets = _row_buckets(rel, qi_cols, group_cols, sensitive, split_out)
        audit = prepare(lambda: _cells(rel, qi_cols, group_cols, sensitive, weight, count,
                                       nulls),
                        qi=qi_cols, sensitive=sensitive, count=count, r=r,
                        knowledge=knowledge, sensitive_values=sensitive_values,
                        max_set_size=max_set_size, epsilon=epsilon, confidence=confidence,
                        min_support=min_support, nulls=nulls, max_items=max_items,
                        **options)
        part = functools.partial(audit_part, qi=qi_cols, group=group_cols,
                                 sensitive=sensitive, count=count, **audit)
        out = _group_fold(rel, qi_cols, group_cols, sensitive, weight, count, batch_size,
                          part, buckets)
    if out is None:
        raise InputError("data has no rows (after weights of 0)")
    return out


def foreground_audit(data: Any, *, qi: str | Sequence[str], group: str | Sequence[str],
                     sensitive: str, r: float, weight: str | None = None,
                     sensitive_values: Any = None, max_set_size: int | None = None,
                     epsilon: float = 0.01, confidence: float = 0.9,
                     min_support: int | None = None, nulls: str = "error",
                     max_items: int = 10, batch_size: int = 1 << 20,
                     split_out: int | str = "auto", **options: Any) -> Any:
    """Run the foreground-knowledge attack in DuckDB as a fold: this process holds summaries.

    Three passes (:mod:`fastpriv.foreground_fold`): DuckDB counts the distinct (QI,
    sensitive) cells, from which the mining is planned here; the distinct rows stream back
    ordered by group (:func:`ordered_counts`), cut into runs of complete groups of about
    ``batch_size`` rows, each run packing every system
    (:func:`fastpriv.foreground_fold.systems_part`), merged and solved; then they stream
    back again and each run's posteriors are computed with the mined distributions
    (:func:`fastpriv.foreground_fold.attack_part`) into a
    :class:`~fastpriv.foreground_fold.ForegroundSummary`, merged. The result equals
    ``ForegroundSummary.from_attack`` of :func:`fastpriv.foreground.attack` on
    :func:`row_counts` in memory (``weight=`` the count). Parameters as
    :func:`fastpriv.spark.foreground_audit`; ``data``, ``batch_size`` and ``split_out`` as
    :func:`robustness_audit`.

    Returns
    -------
    fastpriv.foreground_fold.ForegroundSummary

    """
    from ._validation import check_int
    from .foreground_fold import prepare as prepare_attack

    qi_cols, group_cols = check_row_names(qi, group, sensitive, weight)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    count = unique_name("count", qi_cols + group_cols + [sensitive])
    with _duckdb_relation(data) as rel:
        buckets = _row_buckets(rel, qi_cols, group_cols, sensitive, split_out)
        fold = prepare_attack(
            lambda: _cells(rel, qi_cols, group_cols, sensitive, weight, count, nulls),
            qi=qi_cols, group=group_cols, sensitive=sensitive, count=count, r=r,
            sensitive_values=sensitive_values, max_set_size=max_set_size, epsilon=epsilon,
            confidence=confidence, min_support=min_support, nulls=nulls,
            max_items=max_items, **options)
        return fold.run(lambda part: _group_fold(rel, qi_cols, group_cols, sensitive, weight,
                                                 count, batch_size, part, buckets))


def _cells(rel: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
           weight: str | None, count: str, nulls: str) -> Any:
    """Count the distinct (QI, sensitive) cells: pass 1 of the row-level folds.

    Under ``nulls="drop"`` the audit leaves out the rows of a null group: so do the cells.
    """
    source = (rel.filter(" AND ".join(_not_null(rel, c) for c in group_cols))
              if nulls == "drop" else rel)
    return row_counts(source, qi=qi_cols, group=[], sensitive=sensitive, weight=weight,
                      count=count)


def _batches(queries: Iterable[Any], batch_size: int) -> Iterator[Any]:
    """Read each query's result as Arrow tables of about ``batch_size`` rows, one at a time.

    A reader left early (a refusal stops the fold) is closed: the connection is free again.
    """
    import pyarrow as pa

    for query in queries:
        reader = query.to_arrow_reader(batch_size)
        try:
            for batch in reader:
                yield pa.Table.from_batches([batch])
        finally:
            reader.close()


def _row_buckets(rel: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
                 split_out: Any) -> int:
    """Return the buckets of groups of a row-level fold (:func:`_bucket_count` of its rows)."""
    from ._validation import check_columns

    check_columns(group_cols + qi_cols + [sensitive], rel.columns, "data")
    return _bucket_count(rel, group_cols + qi_cols + [sensitive], split_out)[0]


def _group_fold(rel: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
                weight: str | None, count: str, batch_size: int, part: Any,
                buckets: int = 1) -> Any:
    """Stream the distinct rows by group and fold each run of complete groups with ``part``.

    ``part`` takes a run's rows in the form of :func:`finish_row_counts` and returns a
    summary with ``merge``, or None; the merged summary, None for no run. With ``buckets``
    the groups are counted bucket by bucket (:func:`_bucketed`; a refusal in the words of
    the whole input, :func:`_as_one_query`).
    """
    return _as_one_query(lambda b: _fold_runs(rel, qi_cols, group_cols, sensitive, weight,
                                              count, batch_size, part, b), buckets)


def _fold_runs(rel: Any, qi_cols: list[str], group_cols: list[str], sensitive: str,
               weight: str | None, count: str, batch_size: int, part: Any,
               buckets: int) -> Any:
    """:func:`_group_fold` over ``buckets`` buckets of groups."""
    from .streaming import complete_groups

    out = None
    for piece_rel in _bucketed(rel, group_cols, buckets):
        batches = ordered_counts(piece_rel, group=group_cols + qi_cols, sensitive=sensitive,
                                 weight=weight, count=count, batch_size=batch_size)
        try:
            for run in complete_groups(batches, keys=group_cols):
                rows = finish_row_counts(run, qi=qi_cols, group=group_cols,
                                         sensitive=sensitive, count=count)
                piece = part(rows)
                if piece is not None:
                    out = piece if out is None else out.merge(piece)
        finally:
            batches.close()         # a refused run leaves no open result on the connection
    return out


def group_part(data: Any, *, qi: Sequence[str], group: Sequence[str], sensitive: str,
               part: Any, weight: str | None = None, count: str = "count") -> Any:
    """Count the rows of one partition of complete groups and fold them with ``part``.

    Every engine's partition of a row-level fold (:func:`robustness_audit`,
    :func:`foreground_audit`) ends here: ``data`` holds the partition's rows (one per
    individual, or ``weight`` individuals: checked as in memory), counted into the form of
    :func:`finish_row_counts` and passed to ``part`` (e.g.
    :func:`fastpriv.robustness_fold.audit_part` with its arguments bound). Returns what
    ``part`` returns: a summary that merges, or None for no row.
    """
    import pyarrow as pa

    from ._arrow import apply_weights, as_table

    cols = [*qi, *group, sensitive]
    table = as_table(data, cols + ([weight] if weight is not None else []), param="data")
    if weight is not None:
        table, w = apply_weights(table, weight)
        table = table.set_column(table.schema.get_field_index(weight), weight, pa.array(w))
    agg = [([], "count_all")] if weight is None else [(weight, "sum")]
    counted = table.group_by(cols, use_threads=False).aggregate(agg).rename_columns(
        cols + [count])
    return part(finish_row_counts(counted, qi=list(qi), group=list(group),
                                  sensitive=sensitive, count=count))


def _not_null(rel: Any, column: str) -> str:
    """Return SQL saying ``column`` is neither NULL nor (a float) NaN."""
    q = quote_identifier(column)
    types = dict(zip(rel.columns, map(str, rel.types), strict=True))
    return (f"({q} IS NOT NULL AND NOT isnan({q}))" if types.get(column) in _FLOATS
            else f"{q} IS NOT NULL")


def check_class_names(qi: Any, weight: Any = None, nulls: Any = "error",
                      sampling_weight: Any = None) -> list[str]:
    """Check the arguments of an engine's ``class_counts``; return the QI columns.

    Shared by every engine's ``class_counts``, with the checks (and words) of
    :func:`fastpriv.risk.class_counts` in memory: ``qi`` a name or a list of names (none
    twice), ``weight`` and ``sampling_weight`` names outside them (and apart) or None,
    ``nulls`` one of the null policies. Errors name the parameter.
    """
    from ._arrow import NULL_POLICIES
    from ._validation import check_choice
    from .risk import _check_qi, check_weight_names

    cols = _check_qi(qi)
    check_weight_names(weight, sampling_weight, cols)
    check_choice(nulls, "nulls", NULL_POLICIES)
    return cols


def sampling_columns(sampling_weight: str | None, taken: Sequence[str]) -> Any:
    """Return the names of the sampling weight sums of a ``GROUP BY`` (None without one).

    :class:`fastpriv._sampling.SamplingColumns`, free of the ``taken`` names; shared by the
    engines' ``class_counts``.
    """
    from ._sampling import SamplingColumns

    return None if sampling_weight is None else SamplingColumns.named(sampling_weight, taken)


def class_count_columns(cols: Sequence[str], weight: str | None,
                        sampling_weight: str | None) -> tuple[str, Any]:
    """Return the count column of a class ``GROUP BY`` and its sampling weight sums' names.

    The count is named ``count`` unless a QI, the weight or the sampling weight is; the
    sums (:func:`sampling_columns`, None without a sampling weight) avoid all of them.
    """
    count = unique_name("count", list(cols) + [c for c in (weight, sampling_weight) if c])
    return count, sampling_columns(sampling_weight, list(cols) + [count])


def finish_class_counts(data: Any, *, qi: Sequence[str], count: str,
                        nulls: str = "error", sampling: Any = None) -> ClassCounts:
    """Read an engine's ``GROUP BY qi`` result as :class:`~fastpriv.risk.ClassCounts`.

    Every engine's ``class_counts`` ends here: ``data`` holds the QI columns as the engine
    grouped them (NULL and NaN kept, in any label type) and ``count`` (records per row:
    integers ≥ 0, rows of the same QI values added, rows of 0 standing for nobody).
    :meth:`ClassCounts.from_counts` reads it under ``nulls`` — labels typed as in memory,
    NaN a null, ``-0.0`` and ``0.0`` one key, nulls refused in records — and an input with
    no record left is refused with the words of :meth:`ClassCounts.from_table`.

    Parameters
    ----------
    data : table-like
        The ``GROUP BY`` result: a ``pyarrow.Table``, a pandas or polars DataFrame.
    qi : list of str
        The QI columns.
    count : str
        The count column.
    nulls : {"error", "drop", "value"}
        Null policy of the QI columns.
    sampling : fastpriv._sampling.SamplingColumns, optional
        The sampling weight sums ``data`` holds besides the count (:mod:`fastpriv._sampling`):
        null and invalid sampling weights are refused as in memory and the classes carry
        their sums.

    Returns
    -------
    fastpriv.risk.ClassCounts
        The classes, counted under ``nulls``.

    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._arrow import as_table, kept_rows
    from .risk import ClassCounts

    cols = list(qi)
    table = as_table(data, cols + [count] + ([] if sampling is None else sampling.sums),
                     param="data")
    col = table.column(count)
    if pa.types.is_integer(col.type) and col.null_count == 0:    # else from_counts refuses
        left = table.filter(pc.greater(col, 0))
        kept = kept_rows(left, cols, nulls) if left.num_rows else None
        if left.num_rows == 0 or (kept is not None and kept.size == 0):
            raise InputError("data has no rows (after the null policy and weights of 0)")
    if sampling is not None:
        from ._sampling import finish

        return finish(table, qi=cols, count=count, columns=sampling, nulls=nulls)
    return ClassCounts.from_counts(table, qi=cols, count=count, nulls=nulls)


def class_counts(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                 nulls: str = "error", sampling_weight: str | None = None) -> ClassCounts:
    """Count the QI equivalence classes in DuckDB; the :class:`~fastpriv.risk.ClassCounts`.

    ``SELECT qi…, COUNT(*) … GROUP BY ALL`` (``SUM(weight)`` with ``weight=``, and the
    sampling weight sums with ``sampling_weight=``) runs in DuckDB, where the data lives;
    one row per class comes back and is read by :func:`finish_class_counts`. The classes
    equal ``risk.class_counts(table, qi=qi, weight=weight, sampling_weight=sampling_weight,
    nulls=nulls)`` in memory (labels and their types, sizes, null policy),
    so :func:`fastpriv.risk.audit`, :func:`fastpriv.population.k_map` and
    :func:`fastpriv.population.delta_presence` on them — the population counted the same
    way — answer as on the table (module notes)::

        sample = class_counts(duckdb.sql("FROM released"), qi=["zip", "age"])
        fastpriv.risk.audit(sample, population=class_counts("census/", qi=["zip", "age"]))

    Parameters
    ----------
    data : duckdb.DuckDBPyRelation or path
        A DuckDB relation, or a Parquet file or folder (as :func:`row_counts` reads it).
    qi : str or list of str
        The quasi-identifier columns.
    weight : str, optional
        Multiplicity column, as in :func:`fastpriv.risk.audit`: each row stands for
        ``weight`` identical records (integers ≥ 0; summed exactly; a null or negative
        weight raises :class:`~fastpriv.InputError`, as in :func:`row_counts`).
    nulls : {"error", "drop", "value"}
        Null policy of the QI columns, as in :meth:`fastpriv.risk.ClassCounts.from_table`
        (NaN is a null); the classes carry it.
    sampling_weight : str, optional
        Column of sampling weights (finite, > 0; the population members each record
        stands for), as in :meth:`fastpriv.risk.ClassCounts.from_table`: each class sums
        ``weight · sampling_weight`` in DuckDB (:mod:`fastpriv._sampling`; the null policy
        covers this column too). Floating-point sums, added in DuckDB's order.

    Returns
    -------
    fastpriv.risk.ClassCounts
        One class per distinct QI tuple, with its number of records (and its sampling
        weight sum).

    """
    cols = check_class_names(qi, weight, nulls, sampling_weight)
    count, sampling = class_count_columns(cols, weight, sampling_weight)
    return finish_class_counts(_duckdb_counts(data, cols, weight, count, sampling, nulls),
                               qi=cols, count=count, nulls=nulls, sampling=sampling)


def class_histogram(data: Any, *, qi: str | Sequence[str], weight: str | None = None,
                    nulls: str = "error", sampling_weight: str | None = None,
                    threshold: float | None = None, split_out: int | str = "auto") -> Any:
    """Count the QI classes in DuckDB and bring back only their size histogram.

    The fold of the re-identification risk (:mod:`fastpriv.class_histogram`): DuckDB
    counts the classes of each bucket of ``split_out`` (``GROUP BY qi``, NaN a null,
    ``-0.0`` as ``0.0``, the weights summed and checked), then how many classes have each
    size, and finds the first smallest class (``ORDER BY qi NULLS LAST LIMIT 1``); this
    process receives one row per distinct size and that class per bucket, merged — never
    one row per class (:func:`class_counts`). ``risk.audit`` on the
    histogram equals ``risk.audit(table, qi=qi, weight=weight, nulls=nulls)`` for every
    measure that does not need each class (no population table, no sampling weights).
    A null QI under ``nulls="error"``, a null or negative weight, an input with no record
    left: refused with the words of :func:`class_counts`.

    With ``sampling_weight`` DuckDB sums each class's sampling weights too, and its classes
    stream back in batches of :data:`CLASS_BATCH` rows, each summarized and merged
    (:class:`~fastpriv.class_histogram.SamplingHistogram`, for ``threshold``): this
    process holds one batch and the summary; ``risk.audit(..., threshold=threshold)`` of it
    equals ``risk.audit(table, ..., sampling_weight=sampling_weight)``.

    Parameters
    ----------
    data : duckdb.DuckDBPyRelation or path
        As for :func:`class_counts`.
    qi, weight, nulls, sampling_weight :
        As for :func:`class_counts`.
    threshold : float, optional
        With ``sampling_weight`` only: the risk threshold of the audit (the summary counts
        the records whose risk exceeds it; default 0.2, as ``risk.audit``).
    split_out : int or "auto"
        Buckets of classes (a hash of the QI), each counted by its own queries, the
        summaries merged: DuckDB holds one bucket's classes at a time. ``"auto"``
        (default): DuckDB's estimate of the classes over :data:`PAIRS_PER_BUCKET` (as
        :func:`audit`). The summary does not depend on it.

    Returns
    -------
    fastpriv.class_histogram.ClassHistogram or SamplingHistogram

    """
    from ._sampling import fold_threshold

    cols = check_class_names(qi, weight, nulls, sampling_weight)
    threshold = fold_threshold(threshold, sampling_weight)
    if sampling_weight is not None:
        return _sampling_histogram(data, cols, weight, nulls, sampling_weight, threshold,
                                   split_out)
    n = unique_name("n", cols)
    out = None
    with _duckdb_relation(data) as rel:
        select, checks = _count_select(rel, cols, weight, n, keys=cols)
        buckets = _bucket_count(rel, cols, split_out)[0]
        for part in _bucketed(rel, cols, buckets):
            sizes = _bucket_sizes(part, rel, cols, weight, nulls, n, select, checks)
            if sizes is not None:
                out = sizes if out is None else out.merge(sizes)
    if out is None:
        raise InputError("data has no rows (after the null policy and weights of 0)")
    return out


def _bucket_sizes(part: Any, whole: Any, cols: list[str], weight: str | None, nulls: str,
                  n: str, select: str, checks: Any) -> Any:
    """Return the :class:`~fastpriv.class_histogram.ClassHistogram` of a bucket of classes.

    DuckDB counts the bucket's classes, then how many have each size, and finds the first
    smallest (``ORDER BY qi NULLS LAST LIMIT 1``). None when no class keeps a record. A
    class that breaks a rule (a null QI under ``nulls="error"``, a null or negative weight)
    makes every class of ``whole`` that breaks any rule be read as :func:`class_counts`
    reads them: refused with its words, which name totals over the whole input.
    """
    from .class_histogram import ClassHistogram

    size = quote_identifier(checks[0] if checks else n)
    is_null = " OR ".join(f"{quote_identifier(c)} IS NULL" for c in cols)
    keep = f"{size} > 0" + ("" if nulls == "value" else f" AND NOT ({is_null})")
    view = unique_name("fastpriv_rows", [])
    classes = f"(SELECT {select} FROM {view} GROUP BY ALL)"
    bad = ("0" if checks is None else
           f"COUNT(*) FILTER (WHERE {quote_identifier(checks[1])} > 0 OR "
           f"{quote_identifier(checks[2])} < 0)")
    hist = _read_all(part.query(view, f"SELECT COUNT(*) AS classes, {bad} AS bad, COUNT(*) "
                                      f"FILTER (WHERE {is_null}) AS nulls FROM {classes}"
                                ).arrow())
    if (checks and hist.column("bad")[0].as_py()) or (
            nulls == "error" and hist.column("nulls")[0].as_py()):
        # the classes of the whole input that break any rule, read as class_counts reads
        # them: refused with the words of the whole input
        wrong = ([f"{quote_identifier(checks[1])} > 0 OR {quote_identifier(checks[2])} < 0"]
                 if checks else []) + ([is_null] if nulls == "error" else [])
        got = whole.query(view, f"SELECT * FROM {classes} WHERE "
                                f"{' OR '.join(f'({w})' for w in wrong)}").arrow()
        finish_class_counts(_checked(_read_all(got), cols, weight, n, checks), qi=cols,
                            count=n, nulls=nulls)
        raise AssertionError("finish_class_counts accepted a refused class")
    sizes = _read_all(part.query(view, f"SELECT {size}::DECIMAL(38,0) AS size, COUNT(*) AS "
                                       f"classes FROM {classes} WHERE {keep} GROUP BY ALL "
                                       f"ORDER BY 1").arrow())
    if sizes.num_rows == 0:
        return None
    least = int(sizes.column("size")[0].as_py())
    by = ", ".join(f"{i + 1} ASC NULLS LAST" for i in range(len(cols)))
    first = part.query(view, f"SELECT * FROM {classes} WHERE {keep} AND {size} = {least} "
                             f"ORDER BY {by} LIMIT 1").arrow()
    one = finish_class_counts(_checked(_read_all(first), cols, weight, n, checks), qi=cols,
                              count=n, nulls=nulls)
    return ClassHistogram(tuple(cols), [int(x) for x in sizes.column("size").to_pylist()],
                          sizes.column("classes").to_pylist(), one.values_of(0), nulls)


#: classes per batch streamed into the sampling weights' fold (:func:`class_histogram`)
CLASS_BATCH = 1 << 18


def _sampling_histogram(data: Any, cols: list[str], weight: str | None, nulls: str,
                        sampling_weight: str, threshold: float, split_out: Any) -> Any:
    """:func:`class_histogram` with sampling weights: DuckDB's classes folded batch by batch.

    Keys are grouped as fastpriv compares them (NaN a null, ``-0.0`` as ``0.0``), so each
    row of the ``GROUP BY`` is a complete class (of one bucket of classes); a batch that
    holds anything memory refuses makes :func:`class_counts` raise memory's words.
    """
    import functools

    from ._sampling import histogram_part, merged, refused

    count, sampling = class_count_columns(cols, weight, sampling_weight)
    with _duckdb_relation(data) as rel:
        select, checks = _count_select(rel, cols, weight, count, keys=cols)
        more, where = _sampling_select(rel, cols, weight, sampling, nulls)
        view = unique_name("fastpriv_rows", [])
        part = functools.partial(histogram_part, qi=cols, count=count, columns=sampling,
                                 nulls=nulls, threshold=threshold,
                                 convert=lambda t: _checked(t, cols, weight, count, checks))
        queries = (piece.query(view, f"SELECT {select}{more} FROM {view}{where} GROUP BY ALL")
                   for piece in _bucketed(rel, cols, _bucket_count(rel, cols, split_out)[0]))
        out = merged(part(batch) for batch in _batches(queries, CLASS_BATCH))
    if out is None:
        refused(lambda: class_counts(data, qi=cols, weight=weight, nulls=nulls,
                                     sampling_weight=sampling_weight))
    return out


@contextlib.contextmanager
def _population_source(rel: Any, population: Any, taken: Sequence[str]) -> Iterator[str]:
    """Name ``population`` for a query run on ``rel``'s connection: a view or ``read_parquet``.

    A relation is registered as a view of its connection (dropped on exit), which must be
    ``rel``'s; a path is read there as :func:`_duckdb_relation` reads one.
    """
    duckdb = _require_duckdb()
    if isinstance(population, duckdb.DuckDBPyRelation):
        name = unique_name("fastpriv_population", list(taken))
        population.create_view(name, replace=True)
        try:
            yield quote_identifier(name)
        finally:
            population.query(name + "_drop", f"DROP VIEW IF EXISTS {quote_identifier(name)}")
        return
    path = _parquet_source(population, "population")
    literal = "'" + path.replace("'", "''") + "'"
    known = rel.query(unique_name("fastpriv_rows", list(taken)),
                      "SELECT count(*) FROM duckdb_settings() "
                      "WHERE name = 'parquet_can_have_nan'").fetchall()[0][0]
    nan = ", can_have_nan = true" if known else ""           # see _nans_possible
    yield f"read_parquet({literal}{nan})"


def population_histogram(data: Any, *, qi: str | Sequence[str], population: Any,
                         weight: str | None = None, nulls: str = "error",
                         batch_size: int = 1 << 16, split_out: int | str = "auto") -> Any:
    """Match the data's QI classes with a population's in DuckDB; bring back their summary.

    The fold of k-map, δ-presence and the risk against a population table
    (:class:`~fastpriv.class_histogram.PopulationHistogram`): DuckDB counts the classes of
    both tables (``GROUP BY qi``; NaN a null, ``-0.0`` as ``0.0``; the data's weights summed
    and checked) and joins them (``FULL JOIN`` on the QI, null matching null); the joined
    classes stream back in batches of ``batch_size`` rows, each summarized here
    (:func:`fastpriv.risk.match_counts`) and merged. This process holds one batch and the
    summary — one entry per distinct (records, people) pair — never every class
    (:func:`class_counts`). :func:`fastpriv.population.k_map`,
    :func:`~fastpriv.population.delta_presence` and :func:`fastpriv.risk.audit` on it equal
    the same calls on the tables in memory (``population=`` left out; no sampling weights).
    A class of the data missing from the population, a null QI under ``nulls="error"``, a
    null or negative weight: refused as in memory (the class named is one of the refused).

    Parameters
    ----------
    data : duckdb.DuckDBPyRelation or path
        The data, as for :func:`class_counts`.
    qi : str or list of str
        The quasi-identifier columns (of both tables).
    population : duckdb.DuckDBPyRelation or path
        The population table: a relation on ``data``'s connection, or Parquet data.
    weight : str, optional
        Multiplicity column of the data, as for :func:`class_counts`.
    nulls : {"error", "drop", "value"}
        Null policy of the QI columns of both tables.
    batch_size : int
        Joined classes per batch read back.
    split_out : int or "auto"
        Buckets of classes, each joined by its own query (both tables hash their QI, cast
        to the type the join compares them in, so a class meets itself): DuckDB holds
        one bucket's classes at a time. ``"auto"`` (default): DuckDB's estimate of the
        population's classes over :data:`PAIRS_PER_BUCKET` (as :func:`audit`). The summary
        does not depend on it.

    Returns
    -------
    fastpriv.class_histogram.PopulationHistogram

    """
    from ._validation import check_int
    from .class_histogram import PopulationHistogram

    duckdb = _require_duckdb()
    cols = check_class_names(qi, weight, nulls)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    n = unique_name("n", cols)
    big = unique_name("population", cols + [n, "nulls", "least"])
    view = unique_name("fastpriv_rows", [])
    out = PopulationHistogram.population_only(cols, nulls, n_population=0,
                                              n_population_classes=0)
    with _duckdb_relation(data) as rel, _population_source(rel, population, [view]) as pop:
        try:
            pop_rel = rel.query(view, f"SELECT * FROM {pop}")
        except duckdb.CatalogException:
            raise InputError("population: a DuckDB relation on another connection than "
                             "data's; give it as a path, or both on one connection") from None
        select, checks = _count_select(rel, cols, weight, n, keys=cols)
        pop_select, _ = _count_select(pop_rel, cols, None, big, keys=cols)
        on = " AND ".join(f"s.{q} IS NOT DISTINCT FROM p.{q}"
                          for q in map(quote_identifier, cols))
        keys = ", ".join(f"COALESCE(s.{q}, p.{q}) AS {q}" for q in map(quote_identifier, cols))
        extra = ", ".join(f"s.{quote_identifier(c)}" for c in (checks or (n,)))
        join = (f"SELECT {keys}, {extra}, p.{quote_identifier(big)} FROM "
                f"(SELECT {select} FROM {view}{{}} GROUP BY ALL) s FULL JOIN "
                f"(SELECT {pop_select} FROM {pop}{{}} GROUP BY ALL) p ON {on}")
        try:
            spread = _joined_spread(rel, pop_rel, view, join, cols,
                                    _bucket_count(pop_rel, cols, split_out)[0])
            queries = [rel.query(view, join.format(*where)) for where in spread]
        except (duckdb.BinderException, duckdb.ConversionException) as exc:
            raise InputError(f"population: QI column types differ from the data's ({exc})"
                             ) from None
        for batch in _batches(queries, batch_size):
            out = out.merge(finish_population_counts(
                batch, qi=cols, count=n, population_count=big, weight=weight, checks=checks,
                nulls=nulls))
    if out.n_classes == 0:
        raise InputError("data has no rows (after the null policy and weights of 0)")
    return out


def _joined_spread(rel: Any, pop_rel: Any, view: str, join: str, cols: list[str],
                   buckets: int) -> list[tuple[str, str]]:
    """Return the ``WHERE`` of the data and of the population for each bucket of classes.

    Both sides hash their keys as fastpriv compares them, cast to the type the join
    compares them in (the type of ``COALESCE(s.key, p.key)``), so a class of the data and
    the same class of the population land in one bucket.
    """
    if buckets == 1:
        return [("", "")]
    common = rel.query(view, f"SELECT * FROM ({join.format('', '')}) LIMIT 0").types
    sides = []
    for side in (rel, pop_rel):
        types = dict(zip(side.columns, map(str, side.types), strict=True))
        sides.append(", ".join(f"CAST({_key_column(c, types)} AS {t})"
                               for c, t in zip(cols, common, strict=False)))
    return [tuple(f" WHERE hash({h}) % {buckets} = {i}" for h in sides)
            for i in range(buckets)]


def finish_population_counts(data: Any, *, qi: Sequence[str], count: str,
                             population_count: str, weight: str | None,
                             checks: Sequence[str] | None, nulls: str) -> Any:
    """Summarize a batch of an engine's join of the data's and the population's classes.

    Every engine's ``population_histogram`` ends here, once per batch or partition:
    ``data`` holds complete classes (the QI columns; ``count``, or with ``weight`` the
    sum, null-weight and least-weight columns ``checks`` that :func:`weight_sums` checks;
    ``population_count``), null on the side that lacks the class. Returns their
    :class:`~fastpriv.class_histogram.PopulationHistogram`
    (:func:`fastpriv.risk.match_counts`).
    """
    import pyarrow.compute as pc

    from ._arrow import as_table
    from .risk import match_counts

    cols = list(qi)
    table = as_table(data, param="data")
    if checks is not None:
        for name in checks[:2]:          # a population-only class: no sum, no null weight
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, pc.fill_null(table.column(i), 0))
    counted = _checked(table.select(cols + list(checks or (count,))), cols, weight, count,
                       None if checks is None else tuple(checks))
    counted = counted.append_column(population_count, table.column(population_count))
    return match_counts(counted, qi=cols, count=count, population_count=population_count,
                        nulls=nulls)


def _read_all(out: Any) -> Any:
    """Return an Arrow table from DuckDB's ``.arrow()`` (a table, or a reader)."""
    import pyarrow as pa

    return out.read_all() if isinstance(out, pa.RecordBatchReader) else out


def anonymize(data: Any, *, output: Any, qi: str | Sequence[str], sensitive: str,
              weight: str | None = None, **options: Any) -> Any:
    """Anonymize a DuckDB relation or Parquet data where it lives; write the release to ``output``.

    DuckDB counts the histogram of distinct (QI, sensitive) cells (:func:`row_counts`, no
    group); only it reaches this process. The search, the write, the re-audit and every
    keyword: :func:`fastpriv.anonymize.out_of_core.release_from_engine`, whose
    :class:`~fastpriv.anonymize.out_of_core.OutOfCoreRelease` this returns; the file equals
    the in-memory release of the same rows.
    """
    from .anonymize.out_of_core import release_from_engine

    return release_from_engine(row_counts, data, output=output, qi=qi, sensitive=sensitive,
                               weight=weight, **options)
