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

Any engine whose client returns Arrow (DuckDB, Snowflake, BigQuery, Postgres through ADBC,
Databricks SQL, Trino, ClickHouse, …) works the same; pandas and polars results are
accepted too. Label types are normalized as everywhere in fastpriv (all integer widths
read as int64, all string layouts as string).

Null policy: ``GROUP BY`` keeps NULL keys and values as groups of their own;
``nulls=`` of :func:`release` then treats them as :meth:`Release.from_table` treats null
cells (``"error"``, ``"drop"`` — drop the triples, as dropping the rows would — or
``"value"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._validation import check_keys
from .errors import InputError, InputTypeError

if TYPE_CHECKING:
    from .release import Release

__all__ = ["count_query", "release", "quote_identifier"]

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


def count_query(table_name: str | Sequence[str], *, sensitive: str,
                group: str | Sequence[str] | None = None, qi: Sequence[str] | None = None,
                count: str = "count", where: str | None = None, quote: str = '"') -> str:
    """Render the SQL that computes a release's (group, value, count) triples in the engine.

    ``SELECT k1, …, kq, s, COUNT(*) AS count FROM table [WHERE …] GROUP BY k1, …, kq, s``
    with every identifier quoted (:func:`quote_identifier`). The result has one row per
    distinct (group key, sensitive value) pair: the counts n_g(s) of Chen et al. (2007)
    §3 / Martin et al. (2007) §2 that every count-based model reads. Feed it to
    :func:`release`.

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

    """  # noqa: E501
    keys, param = check_keys(group, qi)
    _check_names(keys, param, sensitive, count)
    parts = [table_name] if isinstance(table_name, str) else list(table_name)
    if not parts:
        raise InputError("table_name: give a table name")
    table = ".".join(quote_identifier(p, quote=quote) for p in parts)
    cols = ", ".join(quote_identifier(c, quote=quote) for c in keys + [sensitive])
    sql = f"SELECT {cols}, COUNT(*) AS {quote_identifier(count, quote=quote)} FROM {table}"
    if where is not None:
        if not isinstance(where, str) or not where.strip():
            raise InputError(f"where must be a non-empty SQL condition, got {where!r}")
        sql += f" WHERE {where}"
    return f"{sql} GROUP BY {cols}"


def release(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
            qi: Sequence[str] | None = None, count: str = "count",
            nulls: str = "error") -> Release:
    """Build the :class:`~fastpriv.Release` of a :func:`count_query` result.

    ``Release.from_counts(data, group=<group or qi columns>, sensitive=sensitive,
    count=count, nulls=nulls)``: triples of the same (group, value) are summed, so the
    ``data`` may also be a concatenation of partial counts (per partition, per day, …). The
    release equals ``Release.from_table`` on the rows the query counted.

    Parameters
    ----------
    data : table-like
        The query result: a ``pyarrow.Table`` / ``RecordBatchReader`` (what Arrow-native
        clients return), a pandas or polars DataFrame.
    sensitive, group, qi, count :
        As given to :func:`count_query`.
    nulls : {"error", "drop", "value"}
        Null keys and values (NULL groups of the ``GROUP BY``), as in
        :meth:`Release.from_table`.

    Returns
    -------
    fastpriv.Release
        An SVPI release.

    """
    from .release import Release

    keys, param = check_keys(group, qi)
    _check_names(keys, param, sensitive, count)
    return Release.from_counts(data, group=keys, sensitive=sensitive, count=count,
                               nulls=nulls)
