"""The :class:`Release`: one encoded representation of a bucketized / generalized table.

Every model in fastpriv reads a Release and nothing else; no model re-reads raw data.

Representation (SPEC.md §1)
---------------------------
* ``values`` — the sensitive domain actually present, as sorted labels; kernels see int32
  codes into it.
* ``groups`` — one row per group with its key (group column value, or the tuple of
  generalized QI values), sorted by key. Kernels see group indices ``0..n_groups-1``.
* The **frequency profile** in CSR form: for group g, ``codes[indptr[g]:indptr[g+1]]`` are
  the values present with ``counts[...]``, by count descending (ties by code): the
  s_g^0, s_g^1, … of the papers.
* ``sizes`` — n_g, the number of distinct individuals per group (= Σ counts for SVPI).
* ``case`` — ``"svpi"``, ``"mvpi-set"`` or ``"mvpi-multiset"``.
* ``row_group`` — for releases built from a table, the group of each input row (int32), so
  witnesses can name rows; ``None`` for releases built from counts or streams.
* ``rows`` — the row-level view (:class:`fastpriv.rows.RowView`: each row's group, int32 QI
  codes with their labels, sensitive code, optional multiplicity), built once when
  :meth:`Release.from_table` gets both ``group`` and ``qi``; the row-level models
  (r-robustness, the foreground attack, ART, derived knowledge) read it.

The canonical ordering (labels sorted) makes construction deterministic: the same data
from any source, in any batching, gives a release for which :meth:`Release.equals` holds.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from ._arrow import (
    NULL_POLICIES,
    apply_null_policy,
    apply_weights,
    as_table,
    encode_column,
    encode_keys,
    kept_rows,
)
from ._ingest import StreamCounts, encode_rows, source_schema, streamable
from ._validation import (
    INT64_MAX,
    check_choice,
    check_column_names,
    check_columns,
    check_keys,
    check_roles,
    check_total,
    kernel_array,
)
from .errors import InputError, InputTypeError

__all__ = ["Release", "CASES", "SVPI", "MVPI_SET", "MVPI_MULTISET", "check_release",
           "release_with_rows", "derive_view", "row_qi"]

SVPI = "svpi"
MVPI_SET = "mvpi-set"
MVPI_MULTISET = "mvpi-multiset"
CASES = (SVPI, MVPI_SET, MVPI_MULTISET)

_VALUE = "value"
_COUNT = "count"
_SIZE = "size"


def _streamed_kept_rows(data: Any, columns: list[str], n_kept: int) -> np.ndarray | None:
    """Input row numbers of the ``n_kept`` rows without a null in ``columns`` (``None``: all).

    A second pass over the columns' validity, made only when ``nulls="drop"`` dropped rows
    of a streamed input (the row count from metadata says so without a pass).
    """
    from ._arrow import count_rows, iter_batches, nans_as_nulls

    total = count_rows(data)
    if total is not None and total == n_kept:
        return None
    parts, offset = [], 0
    for batch in iter_batches(data, columns):
        batch, _ = nans_as_nulls(batch, columns)   # NaN is a null, as in the scan
        ok = np.ones(batch.num_rows, dtype=bool)
        for i in range(batch.num_columns):
            if batch.column(i).null_count:
                ok &= batch.column(i).is_valid().to_numpy(zero_copy_only=False)
        parts.append(np.flatnonzero(ok) + offset)
        offset += batch.num_rows
    kept = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if kept.shape[0] != n_kept:       # the scan and this pass must agree row for row
        raise RuntimeError(f"streamed release kept {n_kept} rows but {kept.shape[0]} have no "
                           "null")
    return None if offset == n_kept else _ro(kept.astype(np.int64))


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


class Release:
    """An anonymized release: groups of individuals and, per group, the multiset of values.

    Build one with :meth:`from_groups`, :meth:`from_table`, :meth:`from_counts` or
    :meth:`from_batches`; all inputs are validated and produce the same canonical form.

    Attributes
    ----------
    case : str
        ``"svpi"``, ``"mvpi-set"`` or ``"mvpi-multiset"``.
    n_groups, n_rows, n_individuals, n_values : int
        Number of groups, of value occurrences (table rows), of distinct individuals
        (Σ n_g), and of distinct sensitive values.
    values : list
        Sensitive value labels, sorted; code ``i`` is ``values[i]``.
    sizes, indptr, codes, counts : numpy.ndarray
        Read-only arrays of the frequency profile (see the module docstring).

    """

    def __init__(self, *, indptr: np.ndarray, codes: np.ndarray, counts: np.ndarray,
                 sizes: np.ndarray, values: pa.Array, groups: pa.Table, case: str = SVPI,
                 row_group: np.ndarray | None = None, sensitive_name: str = _VALUE) -> None:
        check_choice(case, "case", CASES)
        self._indptr = _ro(np.asarray(indptr, dtype=np.int64))
        self._codes = _ro(np.asarray(codes, dtype=np.int32))
        self._counts = _ro(np.asarray(counts, dtype=np.int64))
        self._sizes = _ro(np.asarray(sizes, dtype=np.int64))
        self._labels = values
        self._groups = groups
        self._case = case
        self._row_group = None if row_group is None else _ro(np.asarray(row_group, np.int32))
        self._sensitive_name = sensitive_name
        self._rows = None
        self._input_row = None
        n_groups = self._sizes.shape[0]
        if self._indptr.shape[0] != n_groups + 1 or groups.num_rows != n_groups:
            raise ValueError("internal: inconsistent group arrays")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_groups(cls, groups: Sequence[Any], *, sizes: Sequence[int] | None = None,
                    case: str | None = None) -> "Release":
        """Build a release from a list of groups (tests, docs, small examples).

        Parameters
        ----------
        groups : sequence
            One entry per group: a list of values (SVPI: one per individual; MVPI: the
            group's multiset), a ``{value: count}`` mapping, or an ``(n_g, values)`` pair
            (MVPI).
        sizes : sequence of int, optional
            n_g per group (MVPI; for SVPI it must equal the number of values, if given).
        case : {"svpi", "mvpi-set", "mvpi-multiset"}, optional
            Default ``"svpi"``, or ``"mvpi-set"`` when sizes / pairs are given.

        Examples
        --------
        >>> rel = Release.from_groups([["flu", "flu", "hiv"], ["flu", "cancer"]])
        >>> rel.n_groups, rel.values
        (2, ['cancer', 'flu', 'hiv'])

        """
        if isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, Iterable):
            raise InputTypeError("groups must be a list of groups (lists of values, value->count "
                            f"dicts or (n_g, values) pairs), got {type(groups).__name__}")
        groups = list(groups)
        if not groups:
            raise InputError("groups is empty: a release needs at least one group")
        pair_sizes: list[int | None] = []
        gids: list[int] = []
        labels: list[Any] = []
        weights: list[int] = []
        for g, grp in enumerate(groups):
            size = None
            if isinstance(grp, tuple) and len(grp) == 2 and not isinstance(grp[1], (str, bytes)) \
                    and isinstance(grp[1], (Mapping, Sequence)):
                size, grp = grp
            pair_sizes.append(size)
            if isinstance(grp, Mapping):
                items = list(grp.items())
            elif isinstance(grp, (str, bytes)) or not isinstance(grp, Iterable):
                raise InputTypeError(f"groups[{g}] must be a list of values or a value->count "
                                     f"dict, got {type(grp).__name__}")
            else:
                items = [(v, 1) for v in grp]
            for v, c in items:
                if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
                    raise InputTypeError(f"groups[{g}]: count of {v!r} must be an integer, "
                                         f"got {c!r}")
                if c < 0:
                    raise InputError(f"groups[{g}]: count of {v!r} is negative ({c})")
                if v is None or (isinstance(v, float) and v != v):
                    raise InputError(f"groups[{g}] contains a null value"
                                     + (" (NaN is a missing value)" if v is not None else ""))
                gids.append(g)
                labels.append(v)
                weights.append(int(c))
        total = sum(weights)
        if total > INT64_MAX:
            raise InputError(f"groups: the counts add up to {total}, past 2**63 - 1 (the "
                             "largest count fastpriv holds)")
        if any(s is not None for s in pair_sizes):
            if sizes is not None:
                raise InputError("sizes given twice: both (n_g, values) pairs and sizes=")
            if any(s is None for s in pair_sizes):
                raise InputError("groups: give (n_g, values) pairs for every group or none")
            sizes = pair_sizes
        if case is None:
            case = SVPI if sizes is None else MVPI_SET
        check_choice(case, "case", CASES)
        try:
            value_arr = pa.array(labels) if labels else pa.array([], pa.string())
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InputTypeError(f"groups: values must be of one type (all strings, all ints, "
                                 f"...): {exc}") from None
        enc = encode_column(value_arr, name="values")
        group_codes = np.asarray(gids, dtype=np.int32)
        keys = pa.table({"group": pa.array(np.arange(len(groups), dtype=np.int64))})
        return cls._build(group_codes, enc.codes, np.asarray(weights, dtype=np.int64),
                          n_groups=len(groups), values=enc.labels, groups=keys, case=case,
                          sizes=None if sizes is None else list(sizes), row_group=None,
                          sensitive_name=_VALUE)

    @classmethod
    def from_table(cls, data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                   qi: Sequence[str] | None = None, individual: str | None = None,
                   case: str | None = None, nulls: str = "error",
                   weight: str | None = None) -> "Release":
        """Build a release from a table with one row per individual (or per value, MVPI).

        Parameters
        ----------
        data : table-like
            pyarrow Table/RecordBatchReader/Dataset, Parquet/CSV path, pandas or polars
            DataFrame.
        sensitive : str
            The sensitive column. A list column is read as one individual per row holding
            that list of values (MVPI).
        group : str or list of str, optional
            Group-id column(s) of a bucketized release (Anatomy style).
        qi : list of str, optional
            Without ``group``: generalized QI columns, and groups are their distinct value
            tuples. With ``group``: the (exact) QI columns of every row, which the release
            then carries as its row-level view :attr:`rows` (groups come from ``group``);
            r-robustness, the foreground attack, ART and derived knowledge read it.
        individual : str, optional
            Individual-id column for MVPI tables with one row per (individual, value).
        case : {"svpi", "mvpi-set", "mvpi-multiset"}, optional
            Inferred when omitted: SVPI without ``individual``/list column; otherwise
            MVPI-Set if no individual has a value twice, else MVPI-Multiset.
        nulls : {"error", "drop", "value"}
            What to do with nulls in the used columns (default: raise, naming the column
            and the count).
        weight : str, optional
            Multiplicity column (SVPI only): each row stands for ``weight`` individuals with
            its key and value, so an aggregate of distinct rows counts as its expansion,
            n_g(s) = Σ weight over the rows of group g with value s. Non-negative integers,
            no nulls; rows of weight 0 stand for nobody and are dropped. The release equals
            the one of the expanded table except that it keeps no row index (``row_group``
            is None, as for :meth:`from_counts`).

        """
        if group is not None and qi is not None:
            return cls._from_rows(data, sensitive=sensitive, group=group, qi=qi,
                                  individual=individual, case=case, nulls=nulls, weight=weight)
        keys, param = check_keys(group, qi)
        if not isinstance(sensitive, str):
            raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
        if sensitive in keys:
            raise InputError(f"sensitive column {sensitive!r} is also a {param} column")
        check_roles(**{param: keys, "sensitive": sensitive, "individual": individual})
        if individual is None and weight is None and case in (None, SVPI):
            rel = cls._from_stream(data, keys=keys, sensitive=sensitive, nulls=nulls,
                                   param=param)
            if rel is not None:
                return rel
        cols = keys + [sensitive] + ([individual] if individual is not None else [])
        roles = {"sensitive": [sensitive], param: keys}
        if individual is not None:
            roles["individual"] = [individual]
        if isinstance(weight, str):
            roles["weight"] = [weight]
        table = as_table(data, param="data", roles=roles)
        check_columns([sensitive], table.column_names, "sensitive")
        check_columns(keys, table.column_names, param)
        if individual is not None:
            check_columns([individual], table.column_names, "individual")
        if weight is not None:
            table = _weighted_rows(table, weight, cols, individual)
        table = table.select(cols + ([weight] if weight is not None else []))
        if table.num_rows == 0:
            raise InputError("data is empty: a release needs at least one row")
        sens_type = table.schema.field(sensitive).type
        is_list = pa.types.is_list(sens_type) or pa.types.is_large_list(sens_type)
        kept = kept_rows(table, cols, nulls) if weight is None else None
        table, _ = apply_null_policy(table, cols, nulls)
        if table.num_rows == 0:
            raise InputError("data has no rows left after dropping nulls")
        group_codes, group_keys = encode_keys([table.column(k) for k in keys], names=keys)
        n_groups = group_keys.num_rows
        row_group = group_codes if weight is None else None
        weights = (np.empty(0, dtype=np.int64) if weight is None
                   else table.column(weight).to_numpy().astype(np.int64))
        sens = table.column(sensitive)
        indiv_codes = None
        if is_list:
            if weight is not None:
                raise InputError("weight= is for SVPI tables (one value per row); "
                                 f"{sensitive!r} is a list column")
            if individual is not None:
                raise InputError("individual= cannot be combined with a list-valued sensitive "
                                 "column (each row already is one individual)")
            import pyarrow.compute as pc

            flat = pc.list_flatten(sens)
            parents = pc.list_parent_indices(sens).to_numpy().astype(np.int64)
            if flat.null_count:
                if nulls == "drop":
                    ok = pc.is_valid(flat).to_numpy(zero_copy_only=False)
                    flat, parents = flat.filter(pa.array(ok)), parents[ok]
                elif nulls == "error":
                    raise InputError(f"{sensitive!r} has {flat.null_count} null list "
                                     "elements; pass nulls='drop' or nulls='value'")
            indiv_codes = parents.astype(np.int32)
            n_indiv_rows = table.num_rows
            sens = flat
            pair_group = group_codes[parents]
            if case is None:
                case = MVPI_SET
        else:
            pair_group = group_codes
            n_indiv_rows = None
        enc = encode_column(sens, name=sensitive)
        if individual is not None:
            ienc = encode_column(table.column(individual), name=individual)
            indiv_codes = ienc.codes
            n_indiv_rows = len(ienc.labels)
        if indiv_codes is None:
            if case not in (None, SVPI):
                raise InputError(f"case={case!r} needs individual= (one row per individual and "
                                 "value) or a list-valued sensitive column")
            case = SVPI
            sizes = None
        else:
            case, sizes = _mvpi_sizes(pair_group, indiv_codes, enc.codes, n_groups, n_indiv_rows,
                                      len(enc.labels), case, individual or "row")
        rel = cls._build(pair_group.astype(np.int32, copy=False), enc.codes,
                         weights, n_groups=n_groups, values=enc.labels,
                         groups=group_keys, case=case, sizes=sizes,
                         row_group=row_group,
                         sensitive_name=sensitive)
        if row_group is not None:
            rel._input_row = None if kept is None else _ro(kept)
        return rel

    @classmethod
    def _from_rows(cls, data: Any, *, sensitive: str, group: str | Sequence[str],
                   qi: Sequence[str], individual: str | None, case: str | None, nulls: str,
                   weight: str | None) -> "Release":
        """``from_table`` with both ``group`` and ``qi``: the release plus its row view.

        The used columns are read and the null policy applied once (over the QI columns
        too), so the counts and the view describe the same rows.
        """
        from .rows import prepare_rows, view_of_release

        table, dropped, input_row, n_input = prepare_rows(
            data, qi=qi, sensitive=sensitive, group=group, weight=weight,
            individual=individual, nulls=nulls)
        rel = cls.from_table(table, sensitive=sensitive, group=group, individual=individual,
                             case=case, nulls=nulls, weight=weight)
        rel._rows = view_of_release(table, rel, qi=list(qi) if not isinstance(qi, str)
                                    else [qi], group=group, sensitive=sensitive,
                                    weight=weight, individual=individual,
                                    dropped_nulls=dropped, input_row=input_row,
                                    n_input_rows=n_input)
        if rel._row_group is not None:
            rel._input_row = input_row
        return rel

    @classmethod
    def _from_stream(cls, data: Any, *, keys: list[str], sensitive: str, nulls: str,
                     param: str) -> "Release | None":
        """SVPI release of a path, Dataset or Table, streamed (:mod:`fastpriv._ingest`).

        None when the input is not streamable (the caller reads it whole): other kinds of
        input, list-valued sensitive columns, and the error messages that need the whole
        table (a null under ``nulls="error"``).
        """
        check_choice(nulls, "nulls", NULL_POLICIES)
        if not streamable(data):
            return None
        schema = source_schema(data)
        names = schema.names
        if len(set(names)) != len(names):
            return None
        check_columns([sensitive], names, "sensitive")
        check_columns(keys, names, param)
        if any(pa.types.is_nested(schema.field(c).type) for c in keys + [sensitive]):
            return None
        prof = encode_rows(data, keys=keys, sensitive=sensitive, nulls=nulls)
        if prof is None:
            return None
        rel = cls(indptr=prof.indptr, codes=prof.codes, counts=prof.counts, sizes=prof.sizes,
                  values=prof.values, groups=prof.keys, case=SVPI, row_group=prof.row_group,
                  sensitive_name=sensitive)
        if nulls == "drop" and prof.row_group is not None:
            rel._input_row = _streamed_kept_rows(data, keys + [sensitive],
                                                 int(prof.row_group.shape[0]))
        return rel

    @classmethod
    def from_counts(cls, data: Any, *, group: str | Sequence[str], sensitive: str,
                    count: str = _COUNT, sizes: Any = None, case: str | None = None,
                    nulls: str = "error") -> "Release":
        """Build a release from aggregated ``(group, value, count)`` rows.

        This is the form SQL ``GROUP BY``, Spark and Dask produce, and the mergeable state of
        streaming audits: rows for the same (group, value) are summed, so partial counts
        from several batches or workers can simply be concatenated.

        Parameters
        ----------
        data : table, DataFrame or path
            The aggregated rows, in any form :meth:`from_table` accepts.
        group : str or list of str
            Group key column(s).
        sensitive, count : str
            Value and count columns; counts must be non-negative integers.
        sizes : str, mapping or sequence, optional
            n_g for MVPI releases: a column of the table (constant within a group), a mapping
            group key -> n_g, or a sequence aligned with the sorted group keys.
        case : optional
            Default ``"svpi"`` (sizes = Σ counts), ``"mvpi-set"`` when ``sizes`` is given.
        nulls : {"error", "drop", "value"}
            What to do with nulls in the group and sensitive columns, as in
            :meth:`from_table`.

        """
        keys = [group] if isinstance(group, str) else list(group)
        if not keys:
            raise InputError("group: at least one column is required")
        check_roles(group=keys, sensitive=sensitive, count=count,
                    sizes=sizes if isinstance(sizes, str) else None)
        size_col = sizes if isinstance(sizes, str) else None
        roles = {"group": keys, "sensitive": [sensitive], "count": [count]}
        if size_col is not None:
            roles["sizes"] = [size_col]
        table = as_table(data, param="data", roles=roles)
        check_columns(keys, table.column_names, "group")
        check_columns([sensitive], table.column_names, "sensitive")
        check_columns([count], table.column_names, "count")
        if size_col is not None:
            check_columns([size_col], table.column_names, "sizes")
        cols = keys + [sensitive, count] + ([size_col] if size_col else [])
        table = table.select(cols)
        if table.num_rows == 0:
            raise InputError("data is empty: a release needs at least one (group, value, count) "
                             "row")
        table, _ = apply_null_policy(table, keys + [sensitive], nulls)
        if table.num_rows == 0:
            raise InputError("data has no rows left after dropping nulls")
        if table.column(count).null_count or (size_col and table.column(size_col).null_count):
            raise InputError(f"count column {count!r} (or sizes) has nulls")
        ctype = table.schema.field(count).type
        if not pa.types.is_integer(ctype):
            raise InputTypeError(f"count column {count!r} must hold integers, got {ctype}")
        raw = table.column(count).to_numpy()
        if (raw < 0).any():
            raise InputError(f"count column {count!r} has negative counts")
        if raw.dtype == np.uint64 and (raw > INT64_MAX).any():
            raise InputError(f"count column {count!r} has counts over 2**63 - 1 (the largest "
                             "count fastpriv holds)")
        check_total(raw, f"count column {count!r}")
        weights = raw.astype(np.int64)
        group_codes, group_keys = encode_keys([table.column(k) for k in keys], names=keys)
        n_groups = group_keys.num_rows
        enc = encode_column(table.column(sensitive), name=sensitive)
        size_list: list[int] | None
        if size_col is not None:
            sz = table.column(size_col).to_numpy().astype(np.int64)
            per = np.full(n_groups, -1, dtype=np.int64)
            per[group_codes] = sz
            if (per[group_codes] != sz).any():
                raise InputError(f"sizes column {size_col!r} is not constant within each group")
            size_list = per.tolist()
        elif isinstance(sizes, Mapping):
            labels = _key_labels(group_keys)
            missing = [lb for lb in labels if lb not in sizes]
            if missing:
                raise InputError(f"sizes: no size for groups {missing[:5]}")
            size_list = [sizes[lb] for lb in labels]
        elif sizes is not None:
            size_list = list(sizes)
        else:
            size_list = None
        if case is None:
            case = SVPI if size_list is None else MVPI_SET
        return cls._build(group_codes, enc.codes, weights, n_groups=n_groups, values=enc.labels,
                          groups=group_keys, case=case, sizes=size_list, row_group=None,
                          sensitive_name=sensitive)

    @classmethod
    def from_batches(cls, batches: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                     qi: Sequence[str] | None = None, nulls: str = "error",
                     batch_size: int = 1 << 20, n_jobs: int | None = None,
                     progress: Any = None, weight: str | None = None) -> "Release":
        """Build an SVPI release by streaming record batches (memory ~ (group, value) pairs).

        ``batches`` is anything :func:`fastpriv.counts.CountAccumulator.consume` accepts:
        an iterator of record batches or tables, a RecordBatchReader, a Parquet file or
        directory (scanned with column projection), a CSV file or a ``pyarrow.dataset``.
        Only the group/QI and sensitive columns are read. The result is identical to
        :meth:`from_table` on the concatenated data (without ``row_group``), for any
        batching.

        Parameters
        ----------
        batches : path, dataset, reader, table or iterable of record batches
            The data (see above).
        sensitive, group, qi, nulls :
            As for :meth:`from_table`: the sensitive column, exactly one of the group key
            column(s) and the QI columns, and the null policy.
        batch_size : int
            Target size (rows) of the record batches read from ``batches`` (bounds memory
            per batch; the result does not depend on it).
        n_jobs : int, optional
            Threads for the counting kernels (``None``: Numba's current setting; ``1``:
            single-threaded; ``-1``: all). See :mod:`fastpriv._threads`.
        progress : callable, optional
            Called as ``progress(rows_seen, bytes_seen)`` after each batch, e.g. to draw a
            progress bar (:class:`fastpriv._progress.RowsProgress`).
        weight : str, optional
            Multiplicity column, as in :meth:`from_table` (each row counts ``weight``
            times).

        """
        if (group is None) == (qi is None):
            raise InputError("give exactly one of group= or qi=")
        keys = [group] if isinstance(group, str) else list(group if group is not None else qi)
        acc = StreamCounts(keys=keys, sensitive=sensitive, nulls=nulls, n_jobs=n_jobs,
                           weight=weight)
        p = acc.consume(batches, batch_size=batch_size, progress=progress).to_profile()
        return cls(indptr=p.indptr, codes=p.codes, counts=p.counts, sizes=p.sizes,
                   values=p.values, groups=p.keys, case=SVPI, row_group=None,
                   sensitive_name=sensitive)

    def merge(self, *others: "Release") -> "Release":
        """Return the release of the union of disjoint parts: counts add group by group.

        Each part is a release of a disjoint set of rows (files, partitions, workers) over
        the same key and sensitive columns; a group present in several parts gets the sum
        of its counts (and, for MVPI releases, the sum of its sizes n_g — the parts must
        then hold disjoint individuals). The result equals the release built from all rows
        at once (``equals``; ``row_group`` is dropped). Merging is associative and
        commutative: any split of the data, merged in any order, gives the same release.

        Examples
        --------
        >>> a = Release.from_groups([["flu", "hiv"]])
        >>> b = Release.from_groups([["flu"], ["cancer"]])
        >>> a.merge(b).profile(0)
        [('flu', 2), ('hiv', 1)]

        """
        parts = [self, *others]
        for i, p in enumerate(parts):
            if not isinstance(p, Release):
                raise InputTypeError(f"others[{i - 1}] must be a Release, got {type(p).__name__}")
            if p.case != self.case:
                raise InputError(f"cannot merge a {p.case!r} release into a {self.case!r} one")
            if p.groups.column_names != self.groups.column_names:
                raise InputError(f"cannot merge releases with different group keys: "
                                 f"{p.groups.column_names} vs {self.groups.column_names}")
        keys = self.groups.column_names
        for p in parts:
            if p.value_labels.type != self.value_labels.type or \
                    p.groups.schema.types != self.groups.schema.types:
                raise InputTypeError("cannot merge releases whose labels have different types: "
                                f"values {self.value_labels.type} vs {p.value_labels.type}, "
                                f"groups {self.groups.schema.types} vs {p.groups.schema.types}")
        gtab = pa.concat_tables([p.groups for p in parts])
        vlab = pa.concat_arrays([p.value_labels for p in parts])
        gcodes, gkeys = encode_keys([gtab.column(k) for k in keys], names=keys)
        venc = encode_column(vlab, name="values")
        goff = np.cumsum([0] + [p.n_groups for p in parts])
        voff = np.cumsum([0] + [p.n_values for p in parts])
        g = np.concatenate([gcodes[goff[i]:goff[i + 1]][p.entry_group]
                            for i, p in enumerate(parts)])
        v = np.concatenate([venc.codes[voff[i]:voff[i + 1]][p.codes]
                            for i, p in enumerate(parts)])
        w = np.concatenate([p.counts for p in parts])
        check_total(w, "merge")
        sizes = None
        if self.case != SVPI:
            all_sizes = np.concatenate([p.sizes for p in parts])
            check_total(all_sizes, "merge (group sizes n_g)")
            total = np.zeros(gkeys.num_rows, dtype=np.int64)
            np.add.at(total, gcodes, all_sizes)
            sizes = total.tolist()
        return Release._build(g.astype(np.int32), v.astype(np.int32),
                              w.astype(np.int64), n_groups=gkeys.num_rows, values=venc.labels,
                              groups=gkeys, case=self.case, sizes=sizes, row_group=None,
                              sensitive_name=self._sensitive_name)

    @classmethod
    def _build(cls, group_codes: np.ndarray, value_codes: np.ndarray, weights: np.ndarray, *,
               n_groups: int, values: pa.Array, groups: pa.Table, case: str,
               sizes: Sequence[int] | None, row_group: np.ndarray | None,
               sensitive_name: str) -> "Release":
        from ._kernels.counting import DENSE_CELLS, count_pairs

        check_choice(case, "case", CASES)
        if weights.size:   # the callers name the column; this guards every path
            check_total(weights, "counts")
        indptr, codes, counts = count_pairs(kernel_array(group_codes, np.int32),
                                            kernel_array(value_codes, np.int32),
                                            kernel_array(weights, np.int64),
                                            n_groups, len(values), DENSE_CELLS)
        # exact int64 sums (a float bincount rounds counts past 2**53)
        csum = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=csum[1:])
        totals = csum[indptr[1:]] - csum[indptr[:-1]]
        labels = _key_labels(groups)
        empty = np.flatnonzero(totals == 0)
        if case == SVPI:
            if sizes is not None:
                sz = _check_sizes(sizes, n_groups)
                bad = np.flatnonzero(sz != totals)
                if bad.size:
                    g = bad[0]
                    raise InputError(f"sizes: group {labels[g]!r} has {totals[g]} values but "
                                     f"sizes says {sz[g]} (SVPI: one value per individual)")
            if empty.size:
                raise InputError(f"group {labels[empty[0]]!r} has zero individuals "
                                 f"({empty.size} such group{'s' if empty.size > 1 else ''})")
            sz = totals
        else:
            if sizes is None:
                raise InputError(f"case={case!r} needs sizes= (the number of individuals n_g "
                                 "per group)")
            sz = _check_sizes(sizes, n_groups)
            zero = np.flatnonzero(sz <= 0)
            if zero.size:
                raise InputError(f"sizes: group {labels[zero[0]]!r} has {sz[zero[0]]} "
                                 "individuals (must be >= 1)")
            if case == MVPI_SET and counts.size:
                top = counts[indptr[:-1][np.diff(indptr) > 0]]
                nonempty = np.flatnonzero(np.diff(indptr) > 0)
                over = nonempty[top > sz[nonempty]]
                if over.size:
                    g = over[0]
                    raise InputError(
                        f"group {labels[g]!r}: value {values[codes[indptr[g]]].as_py()!r} occurs "
                        f"{counts[indptr[g]]} times but the group has {sz[g]} individuals; in "
                        "the mvpi-set case a value occurs at most once per individual "
                        "(use case='mvpi-multiset')")
        return cls(indptr=indptr, codes=codes, counts=counts, sizes=sz, values=values,
                   groups=groups, case=case, row_group=row_group, sensitive_name=sensitive_name)

    # ------------------------------------------------------------------ facts
    @property
    def case(self) -> str:
        """``"svpi"``, ``"mvpi-set"`` or ``"mvpi-multiset"``."""
        return self._case

    @property
    def n_groups(self) -> int:
        """Number of groups."""
        return int(self._sizes.shape[0])

    @cached_property
    def n_rows(self) -> int:
        """Number of value occurrences (rows of the table, pairs for MVPI)."""
        return int(self._counts.sum())

    @cached_property
    def n_individuals(self) -> int:
        """Number of individuals, Σ_g n_g."""
        return int(self._sizes.sum())

    @property
    def n_values(self) -> int:
        """Number of distinct sensitive values present."""
        return len(self._labels)

    @cached_property
    def values(self) -> list:
        """Sensitive value labels, sorted (code i is ``values[i]``)."""
        return self._labels.to_pylist()

    @property
    def value_labels(self) -> pa.Array:
        """Sensitive value labels as an Arrow array."""
        return self._labels

    @property
    def sensitive_name(self) -> str:
        """Name of the sensitive column this release was built from."""
        return self._sensitive_name

    @property
    def sizes(self) -> np.ndarray:
        """n_g per group (read-only int64)."""
        return self._sizes

    @property
    def indptr(self) -> np.ndarray:
        """CSR offsets of the frequency profiles (read-only int64, length n_groups + 1)."""
        return self._indptr

    @property
    def codes(self) -> np.ndarray:
        """Value codes of the frequency profiles, by count descending within a group."""
        return self._codes

    @property
    def counts(self) -> np.ndarray:
        """Counts of the frequency profiles (read-only int64)."""
        return self._counts

    @property
    def groups(self) -> pa.Table:
        """One row per group with its key columns, in group-index order."""
        return self._groups

    @property
    def rows(self) -> Any:
        """The row-level view (:class:`fastpriv.rows.RowView`), or ``None``.

        Each row's group, QI codes, sensitive code and multiplicity; present when built by
        :meth:`from_table` with both ``group`` and ``qi``.
        """
        return self._rows

    @property
    def row_group(self) -> np.ndarray | None:
        """Group index of each row kept (releases built from a table), else ``None``.

        Every input row is kept unless ``nulls="drop"`` dropped some; then entry i is the
        row :attr:`input_row` ``[i]`` of the input.
        """
        return self._row_group

    @property
    def input_row(self) -> np.ndarray | None:
        """Input row number of each entry of :attr:`row_group`; ``None`` when none was dropped."""
        return self._input_row

    @cached_property
    def group_labels(self) -> list:
        """Group keys as Python objects (a tuple per group when there are several columns)."""
        return _key_labels(self._groups)

    def group_label(self, g: int) -> Any:
        """Key of group ``g`` alone (no list of every label is built)."""
        if "group_labels" in self.__dict__:
            return self.__dict__["group_labels"][g]
        return _key_labels(self._groups.slice(int(g), 1))[0]

    def labels_of(self, groups: np.ndarray) -> list:
        """Keys of the given group indices, in that order."""
        if "group_labels" in self.__dict__:
            lab = self.__dict__["group_labels"]
            return [lab[i] for i in np.asarray(groups).tolist()]
        return _key_labels(self._groups.take(pa.array(np.asarray(groups, dtype=np.int64))))

    @cached_property
    def distinct(self) -> np.ndarray:
        """Number of distinct values per group."""
        return _ro(np.diff(self._indptr))

    @cached_property
    def entry_group(self) -> np.ndarray:
        """Group index of every CSR entry (``codes``/``counts`` position)."""
        return _ro(np.repeat(np.arange(self.n_groups, dtype=np.int64), self.distinct))

    @cached_property
    def value_index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The profile transposed: where each value occurs, built once and kept.

        ``(ptr, entry, group, rank, count)`` (read-only int64): value code c occurs at the
        profile entries ``entry[ptr[c]:ptr[c+1]]`` (ascending, i.e. by group), in the
        groups ``group[...]``, at position ``rank[...]`` of the group's profile (by count
        descending) and ``count[...]`` times. One O(entries) pass, 32 bytes per entry.
        Per-value scans (the privacy skyline) read only the groups holding the value.
        """
        from ._kernels.counting import value_index

        out = value_index(self._indptr, kernel_array(self._codes, np.int32), self._counts,
                          self.n_values)
        return tuple(_ro(a) for a in out)

    @cached_property
    def top_prefix(self) -> np.ndarray | None:
        """Sums of each group's ℓ largest counts for every ℓ, ℓ-major: ``[ℓ, g]``.

        Row ℓ (0 ≤ ℓ ≤ max distinct values of a group) is saturated at the group total.
        Kept only when dense — at most 2 × entries + n_groups cells (groups of similar
        diversity); ``None`` otherwise (callers then sum the profile directly).
        """
        from ._kernels.counting import top_prefix

        width = int(self.distinct.max()) if self.n_groups else 0
        if self.n_groups * (width + 1) > 2 * self._codes.shape[0] + self.n_groups:
            return None
        return _ro(top_prefix(self._indptr, self._counts, width))

    @cached_property
    def value_totals(self) -> np.ndarray:
        """Total count of each value over the whole release."""
        from ._kernels.counting import value_totals

        return _ro(value_totals(kernel_array(self._codes, np.int32), self._counts,
                                self.n_values))

    def code_of(self, value: Any, *, param: str = "value") -> int:
        """Code of a sensitive value label; ``ValueError`` listing the values otherwise."""
        try:
            return self._code_index[value]
        except (KeyError, TypeError):
            shown = ", ".join(map(repr, self.values[:20]))
            more = f" … ({self.n_values} in all)" if self.n_values > 20 else ""
            raise InputError(f"{param}: {value!r} is not a sensitive value of this release; "
                             f"values: {shown}{more}") from None

    @cached_property
    def _code_index(self) -> dict:
        return {v: i for i, v in enumerate(self.values)}

    def counts_of(self, value: Any) -> np.ndarray:
        """Count of one sensitive value (label) in every group, as int64 array."""
        code = self.code_of(value)
        out = np.zeros(self.n_groups, dtype=np.int64)
        hit = np.flatnonzero(self._codes == code)
        out[self.entry_group[hit]] = self._counts[hit]
        return out

    def count_matrix(self, max_cells: int = 50_000_000) -> np.ndarray:
        """Dense ``(n_groups, n_values)`` count matrix (refuses more than ``max_cells``)."""
        cells = self.n_groups * self.n_values
        if cells > max_cells:
            raise InputError(f"count matrix would have {cells} cells (> max_cells={max_cells})")
        out = np.zeros((self.n_groups, self.n_values), dtype=np.int64)
        out[self.entry_group, self._codes] = self._counts
        return out

    def profile(self, g: int) -> list[tuple[Any, int]]:
        """``[(value, count), …]`` of group ``g`` by count descending."""
        a, b = self._indptr[g], self._indptr[g + 1]
        vals = self.values
        return [(vals[c], int(n))
                for c, n in zip(self._codes[a:b], self._counts[a:b], strict=False)]

    def rows_of_group(self, g: int) -> np.ndarray:
        """Input row numbers of group ``g`` (releases built from a table), increasing."""
        if self._row_group is None:
            raise InputError("this release was not built from a table with one row per "
                             "individual; rows are unknown")
        offsets, order = self._row_order
        rows = order[offsets[g]:offsets[g + 1]]
        return rows if self._input_row is None else self._input_row[rows]

    @cached_property
    def _row_order(self) -> tuple[np.ndarray, np.ndarray]:
        from ._kernels.counting import group_order

        return group_order(kernel_array(self._row_group, np.int32), self.n_groups)

    # ------------------------------------------------------------------ export
    def to_counts(self) -> pa.Table:
        """Return the mergeable form: one row per (group, value) with its count (and ``size``).

        ``Release.from_counts(rel.to_counts(), group=<key columns>, sensitive="value",
        count="count", sizes="size" if MVPI)`` rebuilds an equal release.
        """
        eg = pa.array(self.entry_group)
        cols = {name: self._groups.column(name).take(eg) for name in self._groups.column_names}
        cols[_VALUE] = self._labels.take(pa.array(self._codes))
        cols[_COUNT] = pa.array(self._counts)
        if self._case != SVPI:
            cols[_SIZE] = pa.array(self._sizes[self.entry_group])
        return pa.table(cols)

    def equals(self, other: "Release") -> bool:
        """Return whether both have the same case, values, groups and counts (not ``row_group``)."""
        if not isinstance(other, Release):
            return False
        return (self._case == other._case
                and _arrow_equal(self._labels, other._labels)
                and self._groups.schema.equals(other._groups.schema)
                and all(_arrow_equal(a, b) for a, b in
                        zip(self._groups.columns, other._groups.columns, strict=True))
                and np.array_equal(self._sizes, other._sizes)
                and np.array_equal(self._indptr, other._indptr)
                and np.array_equal(self._codes, other._codes)
                and np.array_equal(self._counts, other._counts))

    def __repr__(self) -> str:
        return (f"Release(case={self._case!r}, n_groups={self.n_groups}, n_rows={self.n_rows}, "
                f"n_individuals={self.n_individuals}, n_values={self.n_values})")

    def __len__(self) -> int:
        return self.n_groups


def _arrow_equal(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> bool:
    """Arrow equality, except that NaN equals NaN (a NaN group key or value is one label)."""
    if a.equals(b):
        return True
    if len(a) != len(b) or a.type != b.type or not pa.types.is_floating(a.type):
        return False
    if a.null_count != b.null_count or (a.null_count and not a.is_null().equals(b.is_null())):
        return False
    na = a.to_numpy(zero_copy_only=False)
    nb = b.to_numpy(zero_copy_only=False)
    return bool(np.array_equal(na, nb, equal_nan=True))


def _weighted_rows(table: pa.Table, weight: Any, cols: list[str],
                   individual: str | None) -> pa.Table:
    """Check the ``weight=`` column of :meth:`Release.from_table`; drop rows of weight 0."""
    if not isinstance(weight, str):
        raise InputTypeError(f"weight must be a column name, got {type(weight).__name__}")
    check_columns([weight], table.column_names, "weight")
    if weight in cols:
        raise InputError(f"weight column {weight!r} is also a key, sensitive or individual "
                         "column")
    if individual is not None:
        raise InputError("weight= is for SVPI tables (one row per individual, or per "
                         "distinct row with its multiplicity); it cannot be combined with "
                         "individual=")
    return apply_weights(table, weight)[0]


def _key_labels(keys: pa.Table) -> list:
    if keys.num_columns == 1:
        return keys.column(0).to_pylist()
    return list(zip(*(keys.column(i).to_pylist() for i in range(keys.num_columns)), strict=True))


def _check_sizes(sizes: Sequence[int], n_groups: int) -> np.ndarray:
    if isinstance(sizes, (str, bytes)):
        raise InputTypeError("sizes must be a sequence of integers")
    sz = sizes if isinstance(sizes, np.ndarray) else np.asarray(list(sizes))
    if sz.shape != (n_groups,):
        raise InputError(f"sizes has {sz.size} entries but there are {n_groups} groups")
    if sz.dtype.kind == "O":   # Python ints too large for int64, or other objects
        for i, v in enumerate(sz.tolist()):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise InputTypeError(f"sizes[{i}] must be an integer, got {v!r}")
            if int(v) > INT64_MAX:
                raise InputError(f"sizes[{i}] = {v} is over 2**63 - 1 (the largest count "
                                 "fastpriv holds)")
    elif sz.size and sz.dtype.kind not in "iu":
        raise InputTypeError(f"sizes must hold integers, got dtype {sz.dtype}")
    elif sz.dtype == np.uint64 and (sz > INT64_MAX).any():
        raise InputError("sizes: a group size is over 2**63 - 1 (the largest count fastpriv "
                         "holds)")
    sz = sz.astype(np.int64)
    if not (sz < 0).any():   # negative sizes are refused by the caller, naming the group
        check_total(sz, "sizes")
    return sz


def _mvpi_sizes(pair_group: np.ndarray, indiv: np.ndarray, value: np.ndarray, n_groups: int,
                n_indiv: int, n_values: int, case: str | None,
                indiv_name: str) -> tuple[str, list[int]]:
    """Distinct individuals per group, individual→group consistency, and the MVPI case."""
    from ._kernels.counting import DENSE_CELLS, count_pairs

    empty = kernel_array(np.empty(0, dtype=np.int64), np.int64)
    ig = kernel_array(indiv, np.int32)
    # groups of each individual: every individual must sit in exactly one group
    ip, _, _ = count_pairs(ig, kernel_array(pair_group, np.int32), empty, n_indiv, n_groups,
                           DENSE_CELLS)
    multi = np.flatnonzero(np.diff(ip) > 1)
    if multi.size:
        raise InputError(f"{indiv_name}: individual #{multi[0]} appears in more than one group "
                         f"({multi.size} such individuals)")
    gp, _, _ = count_pairs(kernel_array(pair_group, np.int32), ig, empty, n_groups, n_indiv,
                           DENSE_CELLS)
    sizes = np.diff(gp).tolist()
    _, _, pc = count_pairs(ig, kernel_array(value, np.int32), empty, n_indiv, n_values,
                           DENSE_CELLS)
    has_dup = bool(pc.size and pc.max() > 1)
    if case is None:
        case = MVPI_MULTISET if has_dup else MVPI_SET
    elif case == SVPI:
        if has_dup or (np.bincount(indiv, minlength=n_indiv) > 1).any():
            raise InputError(f"case='svpi' but some {indiv_name} has several values; use "
                             "case='mvpi-set' or 'mvpi-multiset'")
    elif case == MVPI_SET and has_dup:
        raise InputError(f"case='mvpi-set' but some {indiv_name} holds a value more than once; "
                         "use case='mvpi-multiset'")
    return case, sizes


# ---------------------------------------------------------------------- resolvers
def check_release(value: Any, name: str = "data") -> Any:
    """Return ``value`` after checking that it is a :class:`~fastpriv.Release`."""
    if not isinstance(value, Release):
        raise InputTypeError(f"{name} must be a fastpriv.Release, got {type(value).__name__}; "
                             "build one with Release.from_table / from_groups / from_counts")
    return value


def release_with_rows(data: Any, *, qi: Sequence[str], sensitive: str | None = None,
                      group: str | Sequence[str] | None = None, weight: str | None = None,
                      nulls: str = "error", param: str = "data") -> Release:
    """Return a :class:`Release` carrying the row view of ``qi``.

    ``data`` is either a Release (it must carry a row view holding every ``qi`` column, and
    ``group``/``weight`` are not accepted: the release already has them) or any supported
    table / path, from which ``Release.from_table(data, qi=qi, sensitive=sensitive,
    group=group, weight=weight, nulls=nulls)`` is built.
    """
    qi = check_column_names(qi, "qi")
    if isinstance(data, Release):
        if group is not None or weight is not None:
            raise InputError("group= and weight= are for tables; a Release already has its "
                             "groups and multiplicities")
        if sensitive is not None and sensitive != data.sensitive_name:
            raise InputError(f"sensitive={sensitive!r} but the release was built from "
                             f"{data.sensitive_name!r}")
        if data.rows is None:
            raise InputError(f"{param}: this Release has no row view (it was built from counts, "
                             "batches or without qi=); build it with Release.from_table(data, "
                             "qi=[...], group=..., sensitive=...) or pass the table")
        data.rows.require(qi, param="qi")
        return data
    if group is None:
        raise InputError("group= is required: the group (bucket) id of every row. For a "
                         "generalized table pass the group ids with the exact QI values (the "
                         "adversary links individuals through their exact QI)")
    if sensitive is None:
        raise InputError("sensitive= is required")
    return Release.from_table(data, qi=qi, sensitive=sensitive, group=group, weight=weight,
                              nulls=nulls)


def derive_view(data: Any, *, qi: Sequence[str], sensitive: str, weight: str | None = None,
                nulls: str = "error") -> Any:
    """Build a view without groups (QI, sensitive codes, weights) of a table or Release."""
    from .rows import RowView, prepare_rows
    from .rows import encode_rows as encode_view

    qi = check_column_names(qi, "qi")
    if isinstance(data, RowView):
        if data.sensitive is None:
            raise InputError("data: this row view carries no sensitive values")
        data.require(qi, param="qi")
        return data
    if isinstance(data, Release):
        if data.rows is None or data.rows.sensitive is None:
            raise InputError("data: this Release has no row view with sensitive values; build "
                             "it with Release.from_table(data, qi=[...], group=..., "
                             "sensitive=...) or pass the table")
        if sensitive is not None and sensitive != data.sensitive_name:
            raise InputError(f"sensitive={sensitive!r} but the release was built from "
                             f"{data.sensitive_name!r}")
        data.rows.require(qi, param="qi")
        return data.rows
    table, dropped, input_row, n_input = prepare_rows(data, qi=qi, sensitive=sensitive,
                                                      group=None, weight=weight, nulls=nulls)
    enc = encode_column(table.column(sensitive), name=sensitive)
    return encode_view(table, qi=qi, sensitive=enc.codes, values=enc.labels, weight=weight,
                       dropped_nulls=dropped, input_row=input_row, n_input_rows=n_input)


def row_qi(data: Any, qi: Sequence[str] | str | None) -> Sequence[str] | str | None:
    """Return ``qi`` as given, or the QI columns of a Release's row view when it is None.

    A Release built with its QI columns (``Release.from_table(t, qi=..., group=...,
    sensitive=...)``) is accepted by the row-level models without naming them again.
    """
    if qi is None and isinstance(data, Release) and data.rows is not None and data.rows.qi:
        return list(data.rows.qi)
    return qi
