"""What a published table may hold and in which order its rows are written.

Two rules make a file that fastpriv calls a release safe to publish beyond the model's own
guarantee:

* **Row order carries no information.** A release written in input order is re-linked by
  position: row *i* is person *i* (the "unsorted matching" attack). :func:`canonical_order`
  gives every published row a position that depends on the published values alone, and every
  group an id that depends on the group's published content alone, so two inputs that differ
  only in row order give byte-identical releases.
* **Extra columns never undo the protection.** :func:`check_keep` refuses, for the API and the
  command line alike, a ``keep`` column that is a QI (its exact value would replace the
  generalized one), the sensitive column, a column whose name clashes with a column the
  release adds, and — for a bucketization, whose QI table must not re-link rows to values —
  a column that determines the sensitive value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..errors import InputError

__all__ = ["canonical_order", "canonical_order_of_counts", "check_keep", "check_no_relink",
           "dense_rank", "entries_digest"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer of ``x`` (uint64): a well-spread 64-bit hash of each value."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _column_rank(col: pa.ChunkedArray | pa.Array, name: str) -> np.ndarray:
    """Dense rank of each value of one column (equal values, nulls included, share a rank).

    Values are ranked as they are (-0.0 ranks with 0.0, the one value
    :func:`fastpriv._arrow.canonical_labels` makes of them; string views never get here:
    :func:`fastpriv._arrow.as_table` reads them as strings).
    A column of nested values (lists, structs) has no order to publish rows in: an
    :class:`~fastpriv.errors.InputError` naming the column and its type.
    """
    import pyarrow.compute as pc

    from .._arrow import check_scalar

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    check_scalar(col.type, name)
    return np.asarray(pc.rank(col, tiebreaker="dense"), dtype=np.int64)


def dense_rank(table: pa.Table) -> np.ndarray:
    """Dense rank of each row of ``table`` in the lexicographic order of its columns.

    Rows with equal values in every column (nulls equal to nulls) share a rank; the ranks
    are 0, 1, 2, … with no gaps. The result depends on the multiset of rows only, never on
    their order.
    """
    n = table.num_rows
    if table.num_columns == 0 or n == 0:
        return np.zeros(n, dtype=np.int64)
    ranks = [_column_rank(table.column(i), name) for i, name in enumerate(table.column_names)]
    if len(ranks) == 1:
        return ranks[0] - 1
    order = np.lexsort(ranks[::-1])
    new = np.zeros(n, dtype=bool)
    for r in ranks:
        s = r[order]
        new[1:] |= s[1:] != s[:-1]
    out = np.empty(n, dtype=np.int64)
    out[order] = np.cumsum(new)
    return out


def canonical_order(key: pa.Table, group_ids: np.ndarray, *, rows: pa.Table | None = None,
                    group_extra: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Publication order of rows and ids of groups, from the published values alone.

    A group's key is (smallest rank of its rows in ``key``, its size, a hash of the multiset
    of those ranks and of ``group_extra``); groups are numbered in key order. Rows are then
    written sorted by (new group id, rank in ``rows``). Groups with equal keys have equal
    protected content (up to a 2⁻⁶⁴ hash collision), and rows of equal rank are identical,
    so neither tie depends on, or shows, the input order.

    Parameters
    ----------
    key : pyarrow.Table
        The protected published columns of the kept rows (generalized QI and sensitive
        value; a bucketization's exact QI): they number the groups.
    group_ids : numpy.ndarray
        Group of each kept row, 0 … G−1 (int64).
    rows : pyarrow.Table, optional
        Every published column but the group id (``key`` plus the columns published
        unchanged): they order the rows within a group. Default ``key``.
    group_extra : numpy.ndarray, optional
        Per-group uint64 hash of what else is published about each group (a
        bucketization's sensitive table, :func:`entries_digest`), mixed into the key; its
        length is the number of groups.

    Returns
    -------
    row_order : numpy.ndarray
        Indices of the kept rows in publication order (int64).
    new_id : numpy.ndarray
        New id of each old group id (int64, a permutation of 0 … G−1).

    """
    g = np.asarray(group_ids, dtype=np.int64)
    n_groups = int(g.max()) + 1 if g.size else 0
    if group_extra is not None:
        n_groups = max(n_groups, len(group_extra))
    rank = dense_rank(key)
    row_rank = rank if rows is None else dense_rank(rows)
    new_id = _group_ids(g, rank, None, n_groups, group_extra)
    row_order = np.lexsort((row_rank, new_id[g])) if g.size else np.zeros(0, np.int64)
    return row_order.astype(np.int64), new_id


def canonical_order_of_counts(key: pa.Table, group_ids: np.ndarray, counts: np.ndarray
                              ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`canonical_order` of the rows that distinct rows with counts stand for.

    Row *i* of ``key`` (every published column) stands for ``counts[i]`` identical rows of
    group ``group_ids[i]``; the result is what :func:`canonical_order` gives for those rows
    written out one by one, without writing them: the order of the distinct rows (each to
    be repeated ``counts[i]`` times in place) and the new id of each group. A release of
    people counted in a histogram (out of core) is thereby the release of the rows.
    """
    g = np.asarray(group_ids, dtype=np.int64)
    w = np.asarray(counts, dtype=np.int64)
    n_groups = int(g.max()) + 1 if g.size else 0
    rank = dense_rank(key)
    new_id = _group_ids(g, rank, w, n_groups, None)
    order = np.lexsort((rank, new_id[g])) if g.size else np.zeros(0, np.int64)
    return order.astype(np.int64), new_id


def _group_ids(g: np.ndarray, rank: np.ndarray, counts: np.ndarray | None, n_groups: int,
               group_extra: np.ndarray | None) -> np.ndarray:
    """Return the new id of each group: by smallest rank, people, hash of its ranks [+ extra].

    ``counts``: each row stands for that many identical rows (None: one each); the size and
    the hash are those of the rows it stands for (the hash is a wrapping sum, so ``c``
    copies of a rank add ``c`` times its mix).
    """
    by_group = np.lexsort((rank, g))
    gs, rs = g[by_group], rank[by_group]
    w = None if counts is None else counts[by_group]
    if counts is None:
        size = np.bincount(g, minlength=n_groups)
    else:
        from .._validation import exact_bincount

        size = exact_bincount(g, counts, n_groups)
    first = np.zeros(n_groups, dtype=np.int64)
    digest = np.zeros(n_groups, dtype=np.uint64)
    if g.size:
        starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
        first[gs[starts]] = rs[starts]
        with np.errstate(over="ignore"):
            mixed = _mix(rs.astype(np.uint64))
            if w is not None:
                mixed = mixed * w.astype(np.uint64)
            digest[gs[starts]] = np.add.reduceat(mixed, starts)
    if group_extra is not None:
        with np.errstate(over="ignore"):
            digest = _mix(digest ^ np.asarray(group_extra, dtype=np.uint64))
    new_id = np.empty(n_groups, dtype=np.int64)
    new_id[np.lexsort((digest, size, first))] = np.arange(n_groups, dtype=np.int64)
    return new_id


def entries_digest(entry_group: np.ndarray, value_rank: np.ndarray, counts: np.ndarray,
                   n_groups: int) -> np.ndarray:
    """Per-group uint64 hash of a sensitive table's (value, count) entries (order-free)."""
    with np.errstate(over="ignore"):
        h = _mix(_mix(np.asarray(value_rank, dtype=np.uint64))
                 ^ np.asarray(counts, dtype=np.uint64))
    out = np.zeros(n_groups, dtype=np.uint64)
    np.add.at(out, np.asarray(entry_group, dtype=np.int64), h)
    return out


def check_keep(keep: Sequence[str], *, columns: Sequence[str], qi: Sequence[str],
               sensitive: str | None, added: Sequence[str], param: str = "keep") -> list[str]:
    """Check the columns to publish unchanged; return them as a list.

    Refused: a column that is not in the input, a QI (the release holds it generalized,
    or — in a bucketization — in the QI table already), the sensitive column, and a name
    that clashes with a column the release adds (the group id, a count).

    Parameters
    ----------
    keep : sequence of str
        The columns asked for.
    columns : sequence of str
        Columns of the input.
    qi, sensitive
        The release's QI columns and sensitive column.
    added : sequence of str
        Columns the release adds (``group_id``, …).
    param : str
        Parameter name for messages (``"keep"``, ``"--keep"``).

    """
    from .._validation import check_columns

    if isinstance(keep, str):
        keep = [keep]
    keep = list(keep)
    check_columns(keep, list(columns), param)
    if len(set(keep)) != len(keep):
        raise InputError(f"{param}: a column is named twice ({', '.join(keep)})")
    clash = [c for c in keep if c in qi or c == sensitive]
    if clash:
        raise InputError(f"{param}: {', '.join(clash)} is a QI or the sensitive column, "
                         "which the release already holds in its protected form")
    named = [c for c in keep if c in added]
    if named:
        raise InputError(f"{param}: {', '.join(named)} is the name of a column the release "
                         "adds; rename the input column (or pass group_column=)")
    return keep


def check_no_relink(table: pa.Table, keep: Sequence[str], sensitive: str,
                    param: str = "keep") -> None:
    """Refuse a column of a bucketization's QI table that determines the sensitive value.

    A column that takes at least two values and maps each of its values to one sensitive
    value (a diagnosis code beside a disease, say) re-links every row of the QI table to
    its value, which the two-table release exists to hide.
    """
    if not keep:
        return
    s = dense_rank(table.select([sensitive]))
    for name in keep:
        k = dense_rank(table.select([name]))
        n_k = int(k.max()) + 1 if k.size else 0
        if n_k < 2:
            continue
        pairs = np.unique(k * (int(s.max()) + 1) + s)
        if pairs.size == n_k:
            raise InputError(f"{param}: {name} determines the sensitive value {sensitive} "
                             "(each of its values occurs with one sensitive value): "
                             "publishing it in the QI table re-links every row to its value")
