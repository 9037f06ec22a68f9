"""Streaming, mergeable (group, value) counts — the state behind out-of-core audits.

A :class:`CountAccumulator` consumes record batches one at a time and keeps only aggregated
``(group key…, value, count)`` rows, so memory is bounded by the number of distinct
(group, value) pairs, not by rows. Two accumulators merge by addition (:meth:`merge`), so
files, batches or workers can be counted independently and combined; the final
:class:`~fastpriv.Release` is identical for any split of the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ._arrow import apply_null_policy, encode_column, encode_keys, iter_batches
from ._validation import check_columns, kernel_array

__all__ = ["CountAccumulator"]

_COUNT = "count"


class CountAccumulator:
    """Accumulate (group, value) counts from record batches.

    Parameters
    ----------
    keys : list of str
        Group key column(s): a group-id column or the generalized QI columns.
    sensitive : str
        Sensitive column.
    nulls : {"error", "drop", "value"}
        Null policy for the key and sensitive columns (see :meth:`Release.from_table`).
    compact_rows : int
        Pending aggregated rows that trigger a consolidation (memory/speed trade-off).

    Examples
    --------
    >>> acc = CountAccumulator(keys=["gid"], sensitive="disease")
    >>> for batch in reader:            # doctest: +SKIP
    ...     acc.add(batch)
    >>> rel = acc.to_release()          # doctest: +SKIP
    """

    def __init__(self, keys: Sequence[str], sensitive: str, *, nulls: str = "error",
                 compact_rows: int = 4_000_000) -> None:
        self.keys = [keys] if isinstance(keys, str) else list(keys)
        if not self.keys:
            raise ValueError("keys: at least one group column is required")
        self.sensitive = sensitive
        if _COUNT in self.columns:
            raise ValueError(f"column name {_COUNT!r} is reserved for the counts; rename it")
        self.nulls = nulls
        self.compact_rows = int(compact_rows)
        self.rows_seen = 0
        self.rows_dropped = 0
        self._parts: list[pa.Table] = []
        self._pending = 0
        self._consolidated = 0

    @property
    def columns(self) -> list[str]:
        """Columns read from each batch."""
        return self.keys + [self.sensitive]

    def add(self, batch: pa.RecordBatch | pa.Table) -> "CountAccumulator":
        """Count one record batch (or table) into the state."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        check_columns(self.columns, table.column_names, "batch")
        table = table.select(self.columns)
        self.rows_seen += table.num_rows
        table, dropped = apply_null_policy(table, self.columns, self.nulls)
        self.rows_dropped += dropped
        if table.num_rows == 0:
            return self
        self._append(_aggregate(table, self.keys, self.sensitive, None))
        return self

    def consume(self, data: Any, *, batch_size: int = 1 << 20) -> "CountAccumulator":
        """Count every batch of ``data`` (path, dataset, reader, table or batch iterator)."""
        for batch in iter_batches(data, self.columns, batch_size=batch_size):
            self.add(batch)
        return self

    def merge(self, other: "CountAccumulator") -> "CountAccumulator":
        """Add another accumulator's counts into this one (counts merge by addition)."""
        if other.keys != self.keys or other.sensitive != self.sensitive:
            raise ValueError("cannot merge accumulators over different columns: "
                             f"{self.columns} vs {other.columns}")
        self.rows_seen += other.rows_seen
        self.rows_dropped += other.rows_dropped
        for part in other._parts:
            self._append(part)
        return self

    def _append(self, part: pa.Table) -> None:
        self._parts.append(part)
        self._pending += part.num_rows
        if self._pending > max(self.compact_rows, 2 * self._consolidated):
            self._compact()

    def _compact(self) -> None:
        if len(self._parts) <= 1:
            return
        table = pa.concat_tables(self._parts, promote_options="permissive")
        merged = _aggregate(table, self.keys, self.sensitive, _COUNT)
        self._parts = [merged]
        self._pending = self._consolidated = merged.num_rows

    def to_table(self) -> pa.Table:
        """Aggregated counts: key columns, the sensitive column and ``count``."""
        if not self._parts:
            raise ValueError("no rows were counted (empty input)")
        self._compact()
        return self._parts[0]

    def to_release(self):
        """The :class:`~fastpriv.Release` of everything counted so far (SVPI)."""
        from .release import Release

        return Release.from_counts(self.to_table(), group=self.keys, sensitive=self.sensitive,
                                   count=_COUNT, nulls="value")


def _aggregate(table: pa.Table, keys: list[str], sensitive: str, count: str | None) -> pa.Table:
    """Aggregate rows to distinct (keys, value) with summed counts (or row counts)."""
    from ._kernels.counting import DENSE_CELLS, count_pairs

    gcodes, gkeys = encode_keys([table.column(k) for k in keys], names=keys)
    enc = encode_column(table.column(sensitive), name=sensitive)
    weights = (table.column(count).to_numpy().astype(np.int64) if count is not None
               else np.empty(0, dtype=np.int64))
    indptr, codes, counts = count_pairs(kernel_array(gcodes, np.int32),
                                        kernel_array(enc.codes, np.int32),
                                        kernel_array(weights, np.int64), gkeys.num_rows,
                                        len(enc.labels), DENSE_CELLS)
    eg = pa.array(np.repeat(np.arange(gkeys.num_rows), np.diff(indptr)))
    cols = {k: gkeys.column(k).take(eg) for k in keys}
    cols[sensitive] = enc.labels.take(pa.array(codes))
    cols[_COUNT] = pa.array(counts)
    return pa.table(cols)
