"""Streaming, mergeable (group, value) counts — the state behind out-of-core audits.

A :class:`CountAccumulator` consumes record batches one at a time and keeps only the
(group, value) counts, so memory is bounded by the number of distinct (group, value) pairs
(plus one batch), not by rows. Two accumulators merge by addition (:meth:`merge`), so
files, batches or cluster workers can be counted independently and combined; the final
:class:`~fastpriv.Release` is identical (``Release.equals``) to ``Release.from_table`` on
the concatenated data, for any batching and any split.

How a batch is counted
----------------------
The accumulator keeps a **persistent label → code map per key column** and one for the
sensitive column, assigning codes in order of first appearance:

* integer columns (and floats, by bit pattern, NaNs unified as Arrow does): a
  direct-address table over the value range while it is compact, an open-addressing hash
  table beyond — one Numba pass per batch;
* dictionary columns (e.g. Parquet's dictionary-encoded strings): only the batch's
  dictionary is looked up (it is small), then the row codes are one ``take``; dictionaries
  that differ from batch to batch (different files, different row groups) are unified by
  construction;
* any other type (strings, dates, booleans, decimals, …): Arrow's hash dictionary-encode of
  the batch, then the batch dictionary is looked up in a Python dict.

Several key columns (generalized QI tuples) are combined pairwise through hash maps of
``code_a << 31 | code_b``, so a group is a code whatever the number of columns. The counts
live in a **dense** group × value matrix while it is small (≤ 2**25 cells and ≤ 8 cells per
row counted; int32 cells, moved into an int64 matrix before they could overflow),
otherwise in a **sparse** hash table over (group, value) pairs. For the common case — one
integer key column and a dictionary (or integer) sensitive column — a batch is **one
fused kernel pass**: key → group code through the direct-address table, dictionary index →
value code through the small remap, count. Labels are sorted once, in
:meth:`CountAccumulator.to_release`, which builds the canonical CSR profile straight from
the state.

Performance (``benchmarks/bench_scale.py``, 2-core shared machine): counting 100M Parquet
rows costs 1.1–1.9x a bare multi-threaded ``pyarrow.dataset`` scan of the same columns,
with a state of ~100 MB for 1M groups × 20 values; the Parquet reader of
:func:`fastpriv._arrow.iter_batches` keeps two row groups in memory, whatever the file size.

Nulls follow the ``nulls=`` policy of :meth:`Release.from_table` (``"error"``, ``"drop"``,
``"value"``: null is a label of its own, sorted last).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ._arrow import (
    NULL_POLICIES,
    apply_null_policy,
    apply_weights,
    iter_batches,
)
from ._ingest import DENSE_STATE_CELLS, CountState, KeyCodes, LabelCodes, kind_of
from ._validation import check_choice, check_columns, check_int, kernel_array
from .errors import InputError, InputTypeError

__all__ = ["CountAccumulator", "merge", "DENSE_STATE_CELLS"]

_COUNT = "count"
# batches below this many rows are counted on one thread even when n_jobs > 1
_PARALLEL_MIN_ROWS = 1 << 16


def _ro(a: np.ndarray, dtype: Any) -> np.ndarray:
    return kernel_array(a, dtype)


# ============================================================================ accumulator
class CountAccumulator:
    """Accumulate (group, value) counts from record batches.

    Parameters
    ----------
    keys : str or list of str
        Group key column(s): a group-id column or the generalized QI columns; any Arrow
        types (integers, strings, dictionaries, dates, …).
    sensitive : str
        Sensitive column.
    nulls : {"error", "drop", "value"}
        Null policy for the key and sensitive columns (see :meth:`Release.from_table`).
    compact_rows : int, optional
        Accepted for backward compatibility and ignored: the state is consolidated on
        every batch (persistent code maps), nothing is ever re-aggregated.
    n_jobs : int, optional
        Threads for the counting kernels (see :mod:`fastpriv._threads`). ``None`` (default):
        batches are counted by the single-threaded fused kernel — the reader already decodes
        the next row group on another thread, and measured on 2 cores the parallel batch
        kernel does not pay (``benchmarks/bench_scale.py``) — and the final profile
        extraction uses Numba's current thread setting. An explicit ``n_jobs >= 2`` also
        counts each large batch on that many threads (owner-computes ``dense_add_parallel``:
        no shared writes, no per-thread copy of the state; every thread reads every row, so
        on 2 shared cores it runs at 0.75–0.85× the one-thread uint8 count — it is for
        machines where the random updates, not the row reads, are the bottleneck).
    dense_cells : int
        Largest dense group × value matrix before switching to the sparse state.
    weight : str, optional
        Multiplicity column: each row counts ``weight`` times (non-negative integers, no
        nulls; see ``Release.from_table(..., weight=)``). Weighted batches take the general
        (not the fused) counting path.

    Attributes
    ----------
    rows_seen, rows_dropped, batches_seen : int
        Rows read (before the null policy), rows dropped by ``nulls="drop"``, batches.

    Examples
    --------
    >>> import pyarrow as pa
    >>> acc = CountAccumulator(keys=["gid"], sensitive="disease")
    >>> _ = acc.add(pa.table({"gid": [1, 1, 2], "disease": ["flu", "hiv", "flu"]}))
    >>> _ = acc.add(pa.table({"gid": [2, 3], "disease": ["hiv", "flu"]}))
    >>> rel = acc.to_release()
    >>> rel.group_labels, rel.profile(1)
    ([1, 2, 3], [('flu', 1), ('hiv', 1)])

    """

    def __init__(self, keys: str | Sequence[str], sensitive: str, *, nulls: str = "error",
                 compact_rows: int | None = None, n_jobs: int | None = None,
                 dense_cells: int = DENSE_STATE_CELLS, weight: str | None = None) -> None:
        from ._threads import resolve_n_jobs

        self.keys = [keys] if isinstance(keys, str) else list(keys)
        if not self.keys:
            raise InputError("keys: at least one group column is required")
        for k in self.keys + [sensitive]:
            if not isinstance(k, str):
                raise InputTypeError(f"column names must be strings, got {k!r}")
        if sensitive in self.keys:
            raise InputError(f"sensitive column {sensitive!r} is also a key column")
        if len(set(self.keys)) != len(self.keys):
            raise InputError(f"keys: duplicate column names in {self.keys}")
        self.sensitive = sensitive
        if weight is not None and not isinstance(weight, str):
            raise InputTypeError(f"weight must be a column name, got {type(weight).__name__}")
        if weight is not None and weight in self.keys + [sensitive]:
            raise InputError(f"weight column {weight!r} is also a key or sensitive column")
        self.weight = weight
        if _COUNT in self.keys + [sensitive]:
            raise InputError(f"column name {_COUNT!r} is reserved for the counts (to_table); "
                             "rename it")
        check_choice(nulls, "nulls", NULL_POLICIES)
        self.nulls = nulls
        self.compact_rows = compact_rows
        resolve_n_jobs(n_jobs)  # validate now
        self.n_jobs = n_jobs
        self.dense_cells = check_int(dense_cells, "dense_cells", minimum=0)
        self.rows_seen = 0
        self.rows_dropped = 0
        self.rows_counted = 0
        self._rows_hint = 0   # rows announced by the source being consumed (dense sizing)
        self.batches_seen = 0
        self.bytes_seen = 0
        self._keymap = KeyCodes(self.keys)
        self._cols = self._keymap.cols
        self._values = LabelCodes(sensitive)
        self._levels = self._keymap.levels
        self._state = CountState(self.dense_cells)

    @property
    def columns(self) -> list[str]:
        """Columns read from each batch (keys, sensitive, and the weight column if any)."""
        return self.keys + [self.sensitive] + ([self.weight] if self.weight else [])

    @property
    def n_groups(self) -> int:
        """Distinct groups (key tuples) seen so far."""
        return self._levels[-1].n if self._levels else self._cols[0].n

    @property
    def n_values(self) -> int:
        """Distinct sensitive values seen so far."""
        return self._values.n

    @property
    def nbytes(self) -> int:
        """Approximate memory held by the state (maps and counts), in bytes."""
        return int(self._state.nbytes + self._values.nbytes
                   + sum(c.nbytes for c in self._cols) + sum(lv.nbytes for lv in self._levels))

    # ------------------------------------------------------------------ input
    def add(self, batch: pa.RecordBatch | pa.Table) -> "CountAccumulator":
        """Count one record batch (or table) into the state. Returns ``self``."""
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        elif not isinstance(batch, pa.Table):
            raise InputTypeError(f"batch must be a pyarrow RecordBatch or Table, got "
                            f"{type(batch).__name__}")
        check_columns(self.columns, batch.column_names, "batch")
        table = batch.select(self.columns)
        self.rows_seen += table.num_rows
        self.batches_seen += 1
        self.bytes_seen += table.nbytes
        table, dropped = apply_null_policy(table, self.keys + [self.sensitive], self.nulls)
        self.rows_dropped += dropped
        if self.weight is not None:
            table, weights = apply_weights(table, self.weight)
        if table.num_rows == 0:
            return self
        from ._kernels.counting import remap_codes

        if self.weight is not None:   # weighted rows: the general path, int64 weights
            vcodes = self._values.encode(table.column(self.sensitive))
            gcodes = self._group_codes([table.column(k) for k in self.keys])
            self._count(gcodes, vcodes, weights)
            return self

        vidx, vremap = self._values.encode_pair(table.column(self.sensitive))
        key = table.column(self.keys[0])
        start = 0
        if self._fast_path_ok(key):
            if vremap is None:   # the codes themselves: an identity remap
                vremap = _ro(np.arange(self.n_values, dtype=np.int32), np.int32)
            start = self._add_fused(key, vidx, vremap)
            if start == table.num_rows:
                return self
            table, vidx = table.slice(start), vidx[start:]
        vcodes = vidx if vremap is None else remap_codes(_ro(vidx, np.int32), vremap)
        gcodes = self._group_codes([table.column(k) for k in self.keys])
        self._count(gcodes, vcodes, np.empty(0, dtype=np.int64))
        return self

    def _fast_path_ok(self, key: pa.ChunkedArray) -> bool:
        """Single integer key column in direct-address mode, dense state, one thread."""
        lab = self._cols[0]
        if self._levels or self._state.sparse or key.null_count or lab.ints.hash:
            return False
        t = key.type
        if not (pa.types.is_integer(t) and kind_of(t) == "int"):
            return False
        if lab.kind is not None and lab.kind != "int":
            return False
        return not self._batch_threads or len(key) < _PARALLEL_MIN_ROWS

    def _add_fused(self, key: pa.ChunkedArray, vidx: np.ndarray, vremap: np.ndarray) -> int:
        """Map and count rows in one kernel pass; return the number of rows done.

        The rest, if any, goes through the general path: the keys outgrew the direct table
        or the state its dense limit.
        """
        from ._kernels.counting import count_direct, int_range

        lab = self._cols[0]
        lab._set_type(key.type)
        ints = lab.ints
        st = self._state
        x = _ro(key.to_numpy(), np.int64)
        v = _ro(vidx, np.int32)
        n = x.shape[0]
        start = 0
        rows_after = max(self.rows_counted + n, self._rows_hint)
        while start < n:
            if not st._ensure_dense(ints.n, self.n_values, rows_after):
                break
            st.reserve(n - start)
            stop, code = count_direct(x, int(ints.base), ints.table, int(ints.n), v, vremap,
                                      st.mat8, st.mat, int(st.stride), int(st.gcap),
                                      int(start))
            ints.n = int(code)
            ints._check_codes()
            st.since_flush -= n - int(stop)   # reserved for rows not counted yet
            self.rows_counted += int(stop) - start
            start = int(stop)
            if start == n:
                break
            j = int(x[start]) - ints.base
            if 0 <= j < ints.table.size:     # a new group code needs a larger matrix
                if not st._ensure_dense(ints.n + 1, self.n_values, rows_after):
                    break
                continue
            lo, hi = (int(b) for b in int_range(x[start:]))
            fits, lo, hi = ints._direct_fits(lo, hi, n - start)
            if not fits:
                break
            ints._direct_grow(lo, hi, n - start)
        return start

    def _group_codes(self, cols: list) -> np.ndarray:
        return self._keymap.encode(cols)

    def _count(self, g: np.ndarray, v: np.ndarray, w: np.ndarray) -> None:
        from ._threads import n_jobs as _n_jobs

        self.rows_counted += int(g.size if w.size == 0 else w.sum())
        with _n_jobs(self.n_jobs) as threads:
            self._state.add(g, v, w, self.n_groups, self.n_values,
                            max(self.rows_counted, self._rows_hint),
                            threads if self._batch_threads else 1)

    @property
    def _batch_threads(self) -> bool:
        """Return whether batches are counted on several threads.

        Only when ``n_jobs`` asks for it explicitly (see the class notes: on few cores it
        does not pay).
        """
        from ._threads import resolve_n_jobs

        return self.n_jobs is not None and resolve_n_jobs(self.n_jobs) > 1

    def consume(self, data: Any, *, batch_size: int = 1 << 20,
                progress: Callable[[int, int], Any] | None = None) -> "CountAccumulator":
        """Count every batch of ``data``; returns ``self``.

        ``data``: a Parquet file or directory, a CSV file, a ``pyarrow.dataset.Dataset``, a
        RecordBatchReader, a table, or any iterable of record batches / tables. Only the
        key and sensitive columns are read (column projection). ``progress``, if given, is
        called as ``progress(rows_seen, bytes_seen)`` after every batch (bytes of the
        decoded Arrow columns).
        """
        from ._arrow import count_rows

        self._rows_hint = self.rows_seen + (count_rows(data) or 0)
        for batch in iter_batches(data, self.columns, batch_size=batch_size, dictionary=True):
            self.add(batch)
            if progress is not None:
                progress(self.rows_seen, self.bytes_seen)
        return self

    # ------------------------------------------------------------------ merge
    def merge(self, other: "CountAccumulator") -> "CountAccumulator":
        """Add another accumulator's counts into this one (counts merge by addition).

        Both must count the same key and sensitive columns. ``other`` is not modified.
        Merging is associative and commutative up to the final :meth:`to_release`, which
        is identical for any order and any split of the data. Returns ``self``.
        """
        if not isinstance(other, CountAccumulator):
            raise InputTypeError(f"other must be a CountAccumulator, got {type(other).__name__}")
        if other.keys != self.keys or other.sensitive != self.sensitive:
            raise InputError("cannot merge accumulators over different columns: "
                             f"{self.columns} vs {other.columns}")
        self.rows_seen += other.rows_seen
        self.rows_dropped += other.rows_dropped
        self.batches_seen += other.batches_seen
        self.bytes_seen += other.bytes_seen
        if other.n_groups == 0:
            return self
        g, v, c = other._state.triples(other.n_groups, other.n_values)
        # translate other's codes into ours through the labels
        col_maps = [mine.encode(theirs.labels())
                    for mine, theirs in zip(self._cols, other._cols, strict=False)]
        vmap = self._values.encode(other._values.labels())
        if self._levels:
            comps = other._components()
            gmap = self._group_codes_from_components(
                [m[cc] for m, cc in zip(col_maps, comps, strict=False)])
        else:
            gmap = col_maps[0]
        self._count(gmap[g], vmap[v], c)
        return self

    def _components(self) -> list[np.ndarray]:
        """Per-column codes of every group code (multi-column keys)."""
        return self._keymap.components()

    def _group_codes_from_components(self, comps: list[np.ndarray]) -> np.ndarray:
        return self._keymap.combine(comps[0], comps[1:])

    # ------------------------------------------------------------------ output
    def _canonical(self, gused: np.ndarray, vused: np.ndarray
                   ) -> tuple[np.ndarray, pa.Table, np.ndarray, pa.Array]:
        """``(gorder, group_keys, vrank, values)`` over the groups/values with rows.

        ``gorder``: state group codes in key order; ``vrank``: rank of every state value
        code among the sorted labels (-1 for labels without rows, e.g. unused dictionary
        entries).
        """
        vrank_all, _ = self._values.sorted_ranks()
        labels_all = self._values.labels()
        keep_v = np.flatnonzero(vused)
        sub = vrank_all[keep_v]
        order = np.argsort(sub, kind="stable")
        vrank = np.full(vused.size, -1, dtype=np.int32)
        vrank[keep_v[order]] = np.arange(keep_v.size, dtype=np.int32)
        values = labels_all.take(pa.array(keep_v[order]))
        gorder, keys = self._keymap.canonical(gused)
        return gorder, keys, vrank, values

    def to_release(self):
        """Build the :class:`~fastpriv.Release` (SVPI) of everything counted so far.

        Identical to ``Release.from_table`` on the concatenated input (without
        ``row_group``, which a stream does not keep).
        """
        from ._kernels.counting import (
            DENSE_CELLS,
            count_pairs,
            count_pairs_parallel,
            dense_profiles_state,
        )
        from ._threads import n_jobs as _n_jobs
        from .release import SVPI, Release

        st = self._state
        G, V = self.n_groups, self.n_values
        if G == 0:
            raise InputError("no rows were counted (empty input)")
        if st.sparse:
            g, v, c = st.triples(G, V)
            gused = np.bincount(g, minlength=G) > 0
            vused = np.bincount(v, minlength=V) > 0
        else:   # every label/group first; the few without rows are dropped afterwards
            gused = np.ones(G, dtype=bool)
            vused = np.ones(V, dtype=bool)
        if not gused.any():
            raise InputError("no rows were counted (empty input)")
        gorder, keys, vrank, values = self._canonical(gused, vused)
        n_out = gorder.size
        with _n_jobs(self.n_jobs) as threads:
            if not st.sparse:
                grank = np.full(G, -1, dtype=np.int32)
                grank[gorder] = np.arange(n_out, dtype=np.int32)
                mat, mat64 = st.dense_parts()
                indptr, codes, counts, sizes, vtot = dense_profiles_state(
                    mat, mat64, int(st.stride), grank, int(n_out), _ro(vrank, np.int32),
                    int(V), 2 * threads if threads > 1 and n_out >= 4096 else 1)
                indptr, codes, sizes, keys, values = _drop_empty(indptr, codes, sizes, keys,
                                                                 values, vtot)
            else:
                pos = np.full(G, -1, dtype=np.int32)
                pos[gorder] = np.arange(n_out, dtype=np.int32)
                args = (_ro(pos[g], np.int32), _ro(vrank[v], np.int32), _ro(c, np.int64),
                        int(n_out), int(len(values)))
                if threads > 1 and c.size >= _PARALLEL_MIN_ROWS:
                    indptr, codes, counts = count_pairs_parallel(*args, int(DENSE_CELLS),
                                                                 int(threads))
                else:
                    indptr, codes, counts = count_pairs(*args, int(DENSE_CELLS))
                sizes = np.add.reduceat(counts, indptr[:-1])
        if not keys.num_rows:
            raise InputError("no rows were counted (empty input)")
        return Release(indptr=indptr, codes=codes, counts=counts, sizes=sizes, values=values,
                       groups=keys, case=SVPI, row_group=None, sensitive_name=self.sensitive)

    def to_table(self) -> pa.Table:
        """Return the aggregated counts: the key columns, the sensitive column and ``count``.

        One row per (group, value) present, groups in key order, values by count
        descending — the form ``Release.from_counts`` reads back.
        """
        rel = self.to_release()
        t = rel.to_counts()
        return t.rename_columns(self.keys + [self.sensitive, _COUNT])

    def __repr__(self) -> str:
        mode = "sparse" if self._state.sparse else "dense"
        return (f"CountAccumulator(keys={self.keys!r}, sensitive={self.sensitive!r}, "
                f"rows_seen={self.rows_seen}, n_groups={self.n_groups}, "
                f"n_values={self.n_values}, state={mode}, nbytes={self.nbytes})")


def _drop_empty(indptr: np.ndarray, codes: np.ndarray, sizes: np.ndarray, keys: pa.Table,
                values: pa.Array, vtot: np.ndarray):
    """Remove groups and values without rows: renumber the codes, drop empty groups.

    Values without rows are unused dictionary entries, registered as labels without a pass over
    the rows.
    """
    if (vtot == 0).any():
        keep = vtot > 0
        newcode = (np.cumsum(keep) - 1).astype(np.int32)
        codes = newcode[codes]
        values = values.filter(pa.array(keep))
    if (sizes == 0).any():
        keep = sizes > 0
        indptr = np.concatenate([[0], indptr[1:][keep]]).astype(np.int64)
        sizes = sizes[keep]
        keys = keys.filter(pa.array(keep))
    return indptr, codes, sizes, keys, values


def merge(accumulators: Sequence[CountAccumulator]) -> CountAccumulator:
    """Merge accumulators into a new one (the inputs are left unchanged).

    Counts add, so the release of the result equals the release of all the data they
    counted, whatever the split. A pairwise tree of merges (as Dask's ``split_every``
    does) gives the same result as a left fold.
    """
    accs = list(accumulators)
    if not accs:
        raise InputError("accumulators: need at least one CountAccumulator")
    first = accs[0]
    out = CountAccumulator(first.keys, first.sensitive, nulls=first.nulls,
                           n_jobs=first.n_jobs, dense_cells=first.dense_cells,
                           weight=first.weight)
    for a in accs:
        out.merge(a)
    return out
