"""The row-level view of a release: what the row-level models read (SPEC.md §1).

r-robustness, the foreground attack, ART's audit side, derived :class:`Knowledge` and the
metrics that read rows all need, besides a release's per-group value counts, the rows
themselves: each row's group, its (exact) QI values and its sensitive value. A
:class:`RowView` holds them encoded, built once per input:

* ``row_group`` — int32 group index of each row (into the release's groups);
* ``qi_codes[c]`` / ``qi_labels[c]`` — int32 codes of each QI column in sorted-label order
  (code i is ``qi_labels[c][i]``; null, kept with ``nulls="value"``, sorts last);
* ``sensitive`` — int32 code of each row's sensitive value into the release's ``values``
  (``None`` for Anatomy's two tables, where rows do not carry their value);
* ``weight`` — optional int64 multiplicity: a row may stand for ``weight`` identical
  individuals (distinct rows with a count, e.g. a ``GROUP BY`` result), and every model
  gives the result of the expanded table;
* ``individual`` — optional int32 individual ids (MVPI);
* :attr:`RowView.group_order` — the units (rows, each repeated ``weight`` times) sorted by
  group, then in :attr:`RowView.content_order`, cached;
* :attr:`RowView.content_order` / :meth:`RowView.ranked` — the one tie rule of the
  row-level models: tied rows are taken in order of their QI codes, group, sensitive value
  (the order of every engine's row counts), then row number, never in input order.

Build one with ``Release.from_table(data, qi=..., sensitive=..., group=...)`` (the release
then carries it as ``release.rows``) or let :func:`release_with_rows` resolve any input.
:func:`mine_reliable_signatures` is the one Apriori miner of reliable signatures that
derived knowledge and the foreground attack share.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ._arrow import apply_null_policy, apply_weights, as_table, encode_column, encode_keys
from ._validation import (
    check_column_names,
    check_columns,
    check_int,
    check_roles,
    exact_bincount,
    kernel_array,
)
from .errors import InputError, InputTypeError

if TYPE_CHECKING:  # pragma: no cover
    from .release import Release

__all__ = ["RowView", "encode_rows", "prepare_rows", "view_from_counts",
           "mine_reliable_signatures", "ReliableSet"]

#: Moved to :mod:`fastpriv.release` (a release is built from rows, not the other way round);
#: the old names stay importable from here, with a DeprecationWarning, for one release.
_MOVED = {"release_with_rows": "fastpriv.release", "derive_view": "fastpriv.release"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib
        import warnings

        warnings.warn(f"fastpriv.rows.{name} moved to {_MOVED[name]}.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _ro(a: np.ndarray, dtype: Any) -> np.ndarray:
    return kernel_array(a, dtype)


@dataclass(frozen=True, eq=False)
class RowView:
    """Rows of a release, encoded once (see the module docstring).

    Attributes
    ----------
    qi : tuple of str
        The QI columns held.
    qi_codes, qi_labels : dict
        Per QI column: int32 codes per row, and the sorted labels (``pa.Array``).
    row_group : numpy.ndarray or None
        int32 group index per row (``None`` for a view without groups, e.g. the input of
        :meth:`Knowledge.derive`).
    n_groups : int
        Number of groups (0 without groups).
    sensitive : numpy.ndarray or None
        int32 code per row into ``values`` (``None`` when rows do not carry their value).
    values : pa.Array or None
        Sensitive value labels (sorted; the release's ``value_labels``).
    weight : numpy.ndarray or None
        int64 multiplicity per row (``None``: every row is one individual).
    individual : numpy.ndarray or None
        int32 individual id per row (MVPI tables with ``individual=``).
    input_row : numpy.ndarray or None
        int64 input row number of each row held, increasing (``None`` when every input row
        is held). Rows are dropped by ``nulls="drop"`` and for weight 0; results name rows
        by their input number (:meth:`input_rows`), per-row arrays are over the rows held.
    n_input_rows : int
        Rows of the input (``n_rows`` when none was dropped).

    """

    qi: tuple[str, ...]
    qi_codes: dict
    qi_labels: dict
    row_group: np.ndarray | None
    n_groups: int
    sensitive: np.ndarray | None = None
    values: pa.Array | None = None
    weight: np.ndarray | None = None
    individual: np.ndarray | None = None
    dropped_nulls: int = 0
    input_row: np.ndarray | None = None
    n_input_rows: int = -1

    def __post_init__(self) -> None:
        if self.n_input_rows < 0:
            object.__setattr__(self, "n_input_rows", self.n_rows)

    @property
    def n_rows(self) -> int:
        """Number of rows held (distinct rows when weighted)."""
        if self.row_group is not None:
            return int(self.row_group.shape[0])
        if self.qi:
            return int(self.qi_codes[self.qi[0]].shape[0])
        return 0 if self.sensitive is None else int(self.sensitive.shape[0])

    @cached_property
    def n_units(self) -> int:
        """Number of individuals the rows stand for (Σ weight; ``n_rows`` unweighted)."""
        return self.n_rows if self.weight is None else int(self.weight.sum())

    def check_units(self) -> None:
        """Refuse, before expanding, weights whose people would not fit in memory.

        The row-level models (r-robustness, the foreground attack) hold several entries per
        person (:data:`fastpriv._budget.UNIT_BYTES`): a weighted table standing for 10¹² people
        would need terabytes. Raises :class:`InputError` with the figure.
        """
        from ._budget import UNIT_BYTES, check_memory

        if self.weight is None:
            return
        n = self.n_units
        check_memory(n * UNIT_BYTES, f"the weights stand for {n:,} people, and a row-level "
                     f"model holds about {UNIT_BYTES} B per person: reading them",
                     "r-robustness and the foreground attack compute a posterior per person; "
                     "the count-based models (fastpriv audit / report --weight) read weights "
                     "as counts, or audit a smaller table")

    @cached_property
    def unit_rows(self) -> np.ndarray | None:
        """Row of every unit (``np.repeat(arange(n_rows), weight)``), ``None`` unweighted."""
        if self.weight is None:
            return None
        self.check_units()
        return _ro(np.repeat(np.arange(self.n_rows, dtype=np.int64), self.weight), np.int64)

    @cached_property
    def content_order(self) -> np.ndarray:
        """Held rows in content order: the one tie rule of the row-level models.

        Rows are sorted by their QI codes (in :attr:`qi` order, each column in sorted-label
        order, null last), then their group, then their sensitive value, then their row
        number: the order of :func:`fastpriv.pushdown.finish_row_counts`, which every
        engine's ``row_counts`` returns. Whatever ranks rows and meets a tie (the units of
        a group in :attr:`group_order`, the worst tuples first, the witness) breaks it in
        this order, so the in-memory table, in any row order, and its row counts from
        DuckDB, Dask or Spark (``weight=count``) name the same people in the same order.

        Returns
        -------
        numpy.ndarray
            int64 permutation of ``range(n_rows)``.

        """
        keys = [(self.qi_codes[c], len(self.qi_labels[c])) for c in self.qi]
        if self.row_group is not None:
            keys.append((self.row_group, self.n_groups))
        if self.sensitive is not None:
            top = int(self.sensitive.max()) + 1 if self.sensitive.size else 1
            keys.append((self.sensitive, top))
        return _ro(lex_order(keys, self.n_rows), np.int64)

    @cached_property
    def content_rank(self) -> np.ndarray:
        """Position of each held row in :attr:`content_order` (int64)."""
        rank = np.empty(self.n_rows, dtype=np.int64)
        rank[self.content_order] = np.arange(self.n_rows, dtype=np.int64)
        return _ro(rank, np.int64)

    def ranked(self, score: np.ndarray) -> np.ndarray:
        """Held rows by descending ``score``, ties in :attr:`content_order`; NaN last.

        ``ranked(score)[:k]`` are the k worst rows and ``ranked(score)[0]`` the witness of
        the maximum, the same people whatever the input's row order.

        Parameters
        ----------
        score : numpy.ndarray
            One float per held row.

        Returns
        -------
        numpy.ndarray
            int64 permutation of ``range(n_rows)``.

        """
        score = np.asarray(score, dtype=np.float64)
        if score.shape != (self.n_rows,):
            raise InputError(f"score: one value per held row ({self.n_rows}), got shape "
                             f"{score.shape}")
        return np.lexsort((self.content_rank, -score)).astype(np.int64)

    @cached_property
    def group_order(self) -> tuple[np.ndarray, np.ndarray]:
        """``(goff, order)``: the units of group g are ``order[goff[g]:goff[g+1]]``.

        Entries of ``order`` are row indices in :attr:`content_order` (by QI codes, then
        sensitive value, then row number; a row of weight w appears w times in a row), so
        every per-group kernel sees the expanded table in an order that depends on the
        rows' content only, never on the input's row order: the first of tied tuples is
        the same in memory and on the row counts of every engine.
        """
        from ._kernels.counting import group_order

        if self.row_group is None:
            raise InputError("this row view has no groups")
        self.check_units()
        content = self.content_order
        goff, pos = group_order(kernel_array(self.row_group[content], np.int32),
                                self.n_groups)
        order = content[pos]
        if self.weight is not None:
            order = np.repeat(order, self.weight[order])
            sizes = exact_bincount(self.row_group, self.weight, self.n_groups)
            goff = np.zeros(self.n_groups + 1, dtype=np.int64)
            np.cumsum(sizes.astype(np.int64), out=goff[1:])
        return _ro(goff, np.int64), _ro(order, np.int64)

    @cached_property
    def unit_order(self) -> np.ndarray:
        """Return the units of :attr:`group_order` as unit ids.

        ``unit_rows[unit_order] == group_order[1]``; for kernels that index per-unit arrays.
        """
        goff, order = self.group_order
        if self.weight is None:
            return order
        start = np.zeros(self.n_rows + 1, dtype=np.int64)
        np.cumsum(self.weight, out=start[1:])
        # order repeats each row w times in a run: unit k of the run is start[row] + k
        run_start = np.flatnonzero(np.r_[True, order[1:] != order[:-1]]) if order.size \
            else np.zeros(0, dtype=np.int64)
        k = np.arange(order.size) - np.repeat(run_start, np.diff(np.r_[run_start,
                                                                        order.size]))
        return _ro(start[order] + k, np.int64)

    @cached_property
    def group_sizes(self) -> np.ndarray:
        """Units per group (int64)."""
        return np.diff(self.group_order[0])

    def column(self, name: str) -> pa.Array:
        """Labels of QI column ``name`` per row (decoded)."""
        self.require([name], param="qi")
        return self.qi_labels[name].take(pa.array(self.qi_codes[name]))

    def label(self, name: str, row: int) -> Any:
        """Label of QI column ``name`` at ``row``."""
        return self.qi_labels[name][int(self.qi_codes[name][row])].as_py()

    def require(self, columns: Sequence[str], *, param: str = "qi") -> None:
        """Raise :class:`InputError` unless every column is a QI column of this view."""
        missing = [c for c in columns if c not in self.qi_codes]
        if missing:
            raise InputError(f"{param}: column{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(map(repr, missing))} not in the release's row view "
                             f"(its QI columns: {', '.join(self.qi) or 'none'}); build it with "
                             "Release.from_table(data, qi=[...], group=..., sensitive=...)")

    def input_rows(self, rows: Any) -> Any:
        """Input row numbers of held rows ``rows`` (an int or an int array).

        The identity when no input row was dropped; negative entries (no row) stay as they
        are.
        """
        if self.input_row is None:
            return rows
        if isinstance(rows, (int, np.integer)):
            return int(self.input_row[int(rows)]) if rows >= 0 else int(rows)
        rows = np.asarray(rows, dtype=np.int64)
        return np.where(rows >= 0, self.input_row[np.maximum(rows, 0)], rows)

    def held_row(self, row: Any, *, param: str = "row") -> int:
        """Return the held row of input row ``row``; :class:`InputError` if it is not held.

        Inverse of :meth:`input_rows` (a binary search: ``input_row`` is increasing).
        """
        if self.input_row is None:
            return check_int(row, param, minimum=0, maximum=self.n_rows - 1)
        row = check_int(row, param, minimum=0)
        i = int(np.searchsorted(self.input_row, row))
        if i == self.input_row.shape[0] or int(self.input_row[i]) != row:
            raise InputError(f"{param}: input row {row} is not in the audit (it was dropped "
                             f"for a null or a weight of 0, or is past the last row)")
        return i

    def counts(self, key: np.ndarray, minlength: int) -> np.ndarray:
        """Units per key (``np.bincount`` of ``key`` weighted by multiplicity, int64)."""
        if self.weight is None:
            return np.bincount(key, minlength=minlength)
        return exact_bincount(key, self.weight, minlength)


def lex_order(keys: Sequence[tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """Stable lexicographic order of ``n`` rows by integer ``keys``, the first most significant.

    Each key is ``(codes, cardinality)`` with ``0 <= codes < cardinality``. Keys are packed
    into one int64 (mixed radix) while their cardinalities' product fits, and sorted with
    a stable sort, so equal rows keep their row order; past 2**62 combinations
    ``numpy.lexsort`` sorts them.
    """
    if not keys:
        return np.arange(n, dtype=np.int64)
    span = 1
    for _, card in keys:
        span *= max(int(card), 1)
    if span < (1 << 62):
        packed = np.zeros(n, dtype=np.int64)
        for codes, card in keys:
            packed *= max(int(card), 1)
            packed += np.asarray(codes, dtype=np.int64)
        return np.argsort(packed, kind="stable").astype(np.int64)
    return np.lexsort([np.asarray(c) for c, _ in reversed(keys)]).astype(np.int64)


def max_per_row(rows: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Positions keeping, for each distinct row, its entry of largest ``score``.

    Weighted rows repeat a row once per unit, and a scatter ``out[rows] = score`` would keep
    the last unit's value; the units' posteriors can differ in the last ulp (equal inputs at
    different positions of a group), so the row takes its units' maximum, as the expanded
    table's rows would. NaN scores rank lowest.
    """
    key = np.where(np.isnan(score), -np.inf, score)
    o = np.lexsort((key, rows))
    r = rows[o]
    last = np.ones(o.shape[0], dtype=bool)
    if o.shape[0] > 1:
        last[:-1] = r[1:] != r[:-1]
    return o[last]


# ---------------------------------------------------------------------- building
def prepare_rows(data: Any, *, qi: Sequence[str], sensitive: str | None,
                 group: str | Sequence[str] | None, weight: str | None = None,
                 individual: str | None = None, nulls: str = "error",
                 param: str = "data") -> tuple[pa.Table, int, np.ndarray | None, int]:
    """Check the columns; return them prepared, with the rows dropped and the rows kept.

    Returns the used columns (null policy applied), the rows dropped for nulls, the input
    row number of each row kept (``None`` when every row is kept) and the number of input
    rows.

    Rows of weight 0 are dropped (they stand for nobody). The result is what both the
    release's counts and its row view are built from, so the two stay aligned.
    """
    qi = check_column_names(qi, "qi")
    gcols = [] if group is None else check_column_names(group, "group")
    if sensitive is not None and not isinstance(sensitive, str):
        raise InputTypeError(f"sensitive must be a column name, got {type(sensitive).__name__}")
    check_roles(group=gcols or None, qi=qi, sensitive=sensitive, individual=individual,
                weight=weight)
    roles = {"qi": qi, "group": gcols}
    for role, col in (("sensitive", sensitive), ("individual", individual),
                      ("weight", weight)):
        if isinstance(col, str):
            roles[role] = [col]
    table = as_table(data, param=param, roles=roles)
    names = table.column_names
    check_columns(qi, names, "qi")
    check_columns(gcols, names, "group")
    if sensitive is not None:
        check_columns([sensitive], names, "sensitive")
    if individual is not None:
        check_columns([individual], names, "individual")
    cols = gcols + qi + ([sensitive] if sensitive is not None else []) + (
        [individual] if individual is not None else [])
    if weight is not None and not isinstance(weight, str):
        raise InputTypeError(f"weight must be a column name, got {type(weight).__name__}")
    if weight is not None:
        check_columns([weight], names, "weight")
    n_input = table.num_rows
    number = weight is not None or nulls == "drop"     # rows may be dropped: number them
    row_col = "__fastpriv_input_row__" + "_" * sum(n.startswith("__fastpriv_input_row")
                                                   for n in names)
    if number:
        table = table.append_column(row_col, pa.array(np.arange(n_input, dtype=np.int64)))
    if weight is not None:
        table = apply_weights(table, weight)[0]
    table = table.select(cols + ([weight] if weight is not None else [])
                         + ([row_col] if number else []))
    table, dropped = apply_null_policy(table, cols, nulls)
    if table.num_rows == 0:
        raise InputError(f"{param} has no rows (after dropping nulls and rows of weight 0)")
    input_row = None
    if number:
        if table.num_rows < n_input:
            input_row = _ro(table.column(row_col).to_numpy(), np.int64)
        table = table.drop_columns([row_col])
    return table, dropped, input_row, n_input


def encode_rows(table: pa.Table, *, qi: Sequence[str], row_group: np.ndarray | None = None,
                n_groups: int = 0, sensitive: np.ndarray | None = None,
                values: pa.Array | None = None, weight: str | None = None,
                individual: np.ndarray | None = None, dropped_nulls: int = 0,
                input_row: np.ndarray | None = None, n_input_rows: int = -1) -> RowView:
    """Encode the QI columns of ``table`` (prepared by :func:`prepare_rows`) into a view."""
    codes, labels = {}, {}
    for c in qi:
        enc = encode_column(table.column(c), name=c)
        codes[c] = _ro(enc.codes, np.int32)
        labels[c] = enc.labels
    w = None
    if weight is not None:
        w = _ro(table.column(weight).to_numpy().astype(np.int64), np.int64)
    return RowView(qi=tuple(qi), qi_codes=codes, qi_labels=labels,
                   row_group=None if row_group is None else _ro(row_group, np.int32),
                   n_groups=int(n_groups),
                   sensitive=None if sensitive is None else _ro(sensitive, np.int32),
                   values=values, weight=w,
                   individual=None if individual is None else _ro(individual, np.int32),
                   dropped_nulls=int(dropped_nulls), input_row=input_row,
                   n_input_rows=int(n_input_rows))


def view_of_release(table: pa.Table, rel: "Release", *, qi: Sequence[str],
                    group: str | Sequence[str], sensitive: str, weight: str | None = None,
                    individual: str | None = None, dropped_nulls: int = 0,
                    input_row: np.ndarray | None = None, n_input_rows: int = -1) -> RowView:
    """Build the view of ``table`` (prepared) for the release built from it."""
    gcols = check_column_names(group, "group")
    if rel.row_group is not None and rel.case == "svpi":
        row_group = rel.row_group
    else:   # weighted or MVPI: one code per table row (same canonical order as the release)
        row_group, _ = encode_keys([table.column(c) for c in gcols], names=gcols)
    sens = None
    indiv = None
    if rel.case == "svpi":
        sens = encode_column(table.column(sensitive), name=sensitive).codes
    if individual is not None:
        indiv = encode_column(table.column(individual), name=individual).codes
    return encode_rows(table, qi=qi, row_group=row_group, n_groups=rel.n_groups,
                       sensitive=sens, values=rel.value_labels, weight=weight,
                       individual=indiv, dropped_nulls=dropped_nulls, input_row=input_row,
                       n_input_rows=n_input_rows)


def view_from_counts(qi_table: Any, rel: "Release", *, qi: Sequence[str], group: str,
                     nulls: str = "error", param: str = "data") -> RowView:
    """Build the view of Anatomy's QI table for the release of its sensitive (counts) table.

    Rows carry no sensitive value; each group must have as many QI rows as the counts
    table gives it individuals.
    """
    import pyarrow.compute as pc

    table, dropped, input_row, n_input = prepare_rows(qi_table, qi=qi, sensitive=None,
                                                      group=group, nulls=nulls, param=param)
    keys = rel.groups.column(group)
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    col = table.column(group)
    try:
        idx = pc.index_in(col, value_set=keys)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        try:
            idx = pc.index_in(col.cast(keys.type), value_set=keys)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InputTypeError(f"{param}: group column {group!r} ({col.type}) cannot be "
                                 f"matched with the sensitive table's ({keys.type}): "
                                 f"{exc}") from None
    if idx.null_count:
        miss = col.filter(pc.is_null(idx))[0].as_py()
        raise InputError(f"group {miss!r} of the QI table has no row in sensitive_table "
                         f"({idx.null_count} QI rows in such groups)")
    row_group = idx.to_numpy(zero_copy_only=False).astype(np.int32)
    sizes = np.bincount(row_group, minlength=rel.n_groups)
    bad = np.flatnonzero(sizes != rel.sizes)
    if bad.size:
        g = int(bad[0])
        raise InputError(f"group {rel.group_label(g)!r} has {sizes[g]} rows in the QI table "
                         f"but its counts in sensitive_table add up to {rel.sizes[g]} "
                         f"({bad.size} such group{'s' if bad.size > 1 else ''})")
    return encode_rows(table, qi=qi, row_group=row_group, n_groups=rel.n_groups,
                       values=rel.value_labels, dropped_nulls=dropped, input_row=input_row,
                       n_input_rows=n_input)


# ---------------------------------------------------------------------- the Apriori miner
@dataclass(frozen=True, eq=False)
class ReliableSet:
    """The reliable signatures of one attribute set (see :func:`mine_reliable_signatures`).

    ``keys`` are sorted mixed-radix keys Σ code_i · strides[i]; ``support`` the units per
    reliable signature; ``var_rows`` each row's signature index (-1: not reliable).
    """

    attributes: tuple[str, ...]
    strides: np.ndarray
    keys: np.ndarray
    support: np.ndarray
    var_rows: np.ndarray


def _strides(view: RowView, A: tuple[str, ...], first_major: bool,
             limit: int) -> tuple[np.ndarray, int]:
    strides = np.ones(len(A), dtype=np.int64)
    span = 1
    idx = range(len(A) - 1, -1, -1) if first_major else range(len(A))
    for i in idx:
        strides[i] = span
        span *= max(len(view.qi_labels[A[i]]), 1)
    if span >= limit:
        raise InputError(f"attribute set {A}: too many signature combinations to index; lower "
                         "max_set_size")
    return strides, span


def _reliable(view: RowView, A: tuple[str, ...], rows: np.ndarray | None, strides: np.ndarray,
              span: int, J: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Reliable keys, their support and the signature index of the candidate rows."""
    nr = view.n_rows if rows is None else rows.size
    key = np.zeros(nr, dtype=np.int64)
    for i, a in enumerate(A):
        c = view.qi_codes[a] if rows is None else view.qi_codes[a][rows]
        key += c.astype(np.int64) * strides[i]
    w = view.weight if rows is None or view.weight is None else view.weight[rows]
    if span <= max(4 * nr, 1 << 16):
        cnt = np.bincount(key, minlength=span) if w is None else \
            exact_bincount(key, w, span)
        ukeys = np.flatnonzero(cnt >= J)
        if not ukeys.size:
            return None
        slot = np.full(span, -1, dtype=np.int64)
        slot[ukeys] = np.arange(ukeys.size)
        return ukeys, cnt[ukeys], slot[key]
    uk, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    if w is not None:
        cnt = exact_bincount(inv.ravel(), w, uk.size)
    ok = cnt >= J
    if not ok.any():
        return None
    slot = np.where(ok, np.cumsum(ok) - 1, -1)
    return uk[ok], cnt[ok], slot[inv.ravel()]


def mine_reliable_signatures(view: RowView, qi: Sequence[str], J: int, max_set_size: int, *,
                             first_major: bool = False, key_limit: int = 1 << 62,
                             progress: Callable[[int, int], None] | None = None
                             ) -> Iterator[tuple[tuple[str, ...], ReliableSet | None]]:
    """Reliable signatures of every attribute subset of ``qi``, Apriori order.

    A signature s of attribute set A is *reliable* when at least ``J`` units (rows ×
    weight) have it (Wong et al., Section 4: J = ⌈ln(2/δ)/(2ε²)⌉ by Hoeffding). Count
    monotonicity (#s(v_1..v_{i+1}) ≤ #s(v_1..v_i)) gives two exact prunings: a set with a
    subset that has no reliable signature has none either (it is yielded with ``None``
    without counting), and only rows whose signature on every (|A|-1)-subset is reliable
    can carry a reliable signature of A, so only those rows are counted.

    Yields ``(A, ReliableSet or None)`` for every A with 1 ≤ |A| ≤ ``max_set_size``, by
    size, then in ``itertools.combinations`` order. ``first_major`` orders the keys with the
    first attribute most significant (lexicographic order of the signatures); otherwise
    the first attribute is the least significant.
    """
    qi = list(qi)
    alive: dict[tuple[str, ...], np.ndarray] = {}
    total = sum(math.comb(len(qi), k) for k in range(1, min(max_set_size, len(qi)) + 1))
    done = 0
    for size in range(1, max_set_size + 1):
        for A in itertools.combinations(qi, size):
            done += 1
            subs = list(itertools.combinations(A, size - 1)) if size > 1 else []
            found = None
            if all(B in alive for B in subs):
                rows = None
                if subs:
                    cand = alive[subs[0]].copy()
                    for B in subs[1:]:
                        cand &= alive[B]
                    rows = np.flatnonzero(cand)
                strides, span = _strides(view, A, first_major, key_limit)
                got = _reliable(view, A, rows, strides, span, J)
                if got is not None:
                    ukeys, support, var = got
                    var_rows = np.full(view.n_rows, -1, dtype=np.int32)
                    if rows is None:
                        var_rows[:] = var
                    else:
                        var_rows[rows] = var
                    alive[A] = var_rows >= 0
                    found = ReliableSet(attributes=A, strides=strides,
                                        keys=ukeys.astype(np.int64),
                                        support=support.astype(np.int64), var_rows=var_rows)
            if progress is not None:
                progress(done, total)
            yield A, found
