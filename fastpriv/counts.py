"""Streaming, mergeable (group, value) counts — the state behind out-of-core audits.

A :class:`CountAccumulator` consumes record batches one at a time and keeps only the
(group, value) counts, so memory is bounded by the number of distinct (group, value) pairs
(plus one batch), not by rows. Two accumulators merge by addition (:meth:`merge`), so
files, batches or cluster workers can be counted independently and combined; the final
:class:`~fastpriv.Release` is identical (``Release.equals``) to ``Release.from_table`` on
the concatenated data, for any batching and any split.

How a batch is counted
----------------------
The accumulator (its state is :class:`fastpriv._ingest.StreamCounts`, shared with
``Release.from_batches``; the code maps are the ones of the ``Release.from_table`` ingest)
keeps a **persistent label → code map per key column** and one for the sensitive column,
assigning codes in order of first appearance:

* integer columns (and floats, by bit pattern, NaNs unified as Arrow does): a
  direct-address table over the value range while it is compact, an open-addressing hash
  table beyond — one Numba pass per batch;
* string and binary columns: an exact hash table over the Arrow buffers (hash, length and
  first 16 bytes in the slot, byte comparison beyond) — one Numba pass per batch;
* dictionary columns (e.g. Parquet's dictionary-encoded strings, which a Parquet source is
  read as unless the dictionary is wide): only the batch's dictionary is looked up (it is
  small), then the row codes are one ``take``; dictionaries that differ from batch to
  batch (different files, different row groups) are unified by construction;
* any other type (dates, booleans, decimals, …): Arrow's hash dictionary-encode of the
  batch, then the batch dictionary is looked up in a Python dict.

Several key columns (generalized QI tuples) are combined pairwise through hash maps of
``code_a << 31 | code_b``, so a group is a code whatever the number of columns. The counts
live in a **dense** group × value matrix while it is small (≤ 2**28 cells and ≤ 32 cells per
row counted — rows of the whole source when it announces them, e.g. Parquet metadata;
uint8 cells that spill into int32 ones, moved into an int64 matrix before they could
overflow),
otherwise in a **sparse** hash table over (group, value) pairs. For the common case — one
integer key column and a dictionary (or integer) sensitive column — a batch is **one
fused kernel pass**: key → group code through the direct-address table, dictionary index →
value code through the small remap, count. Labels are sorted once, in
:meth:`CountAccumulator.to_release`, which builds the canonical CSR profile straight from
the state (reading the matrix in state order, on threads).

Performance (``benchmarks/bench_scale.py``, 2-core shared machine): counting 100M Parquet
rows costs 1.1–1.9x a bare multi-threaded ``pyarrow.dataset`` scan of the same columns,
with a state of ~100 MB for 1M groups × 20 values; the Parquet reader of
:func:`fastpriv._arrow.iter_batches` keeps three row groups in memory, whatever the file
size.

Nulls follow the ``nulls=`` policy of :meth:`Release.from_table` (``"error"``, ``"drop"``,
``"value"``: null is a label of its own, sorted last).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ._ingest import DENSE_STATE_CELLS, StreamCounts
from .errors import InputError
from .release import SVPI, Release

__all__ = ["CountAccumulator", "merge", "DENSE_STATE_CELLS"]

_COUNT = "count"


# ============================================================================ accumulator
class CountAccumulator(StreamCounts):
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

    def to_release(self) -> Release:
        """Build the :class:`~fastpriv.Release` (SVPI) of everything counted so far.

        Identical to ``Release.from_table`` on the concatenated input (without
        ``row_group``, which a stream does not keep), and refused with the same words when
        nothing is left to count.
        """
        if self.n_groups == 0:
            if self.rows_dropped:
                raise InputError("data has no rows left after dropping nulls")
            raise InputError("data is empty: no rows were counted, and a release needs at "
                             "least one row")
        p = self.to_profile()
        return Release(indptr=p.indptr, codes=p.codes, counts=p.counts, sizes=p.sizes,
                       values=p.values, groups=p.keys, case=SVPI, row_group=None,
                       sensitive_name=self.sensitive)

    def to_table(self) -> pa.Table:
        """Return the aggregated counts: the key columns, the sensitive column and ``count``.

        One row per (group, value) present, groups in key order, values by count
        descending — the form ``Release.from_counts`` reads back.
        """
        rel = self.to_release()
        t = rel.to_counts()
        return t.rename_columns(self.keys + [self.sensitive, _COUNT])


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
