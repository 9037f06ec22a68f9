"""Streaming ingest: record batches to (group code, value code) per row, at the speed of the scan.

:meth:`fastpriv.Release.from_table` on a Parquet/CSV path, a ``pyarrow.dataset`` or a Table
goes through :func:`encode_rows`: the batches of the projected columns are streamed
(:func:`fastpriv._arrow.iter_batches`, the next row group decoded on a background thread
while this one is encoded, GIL released on both sides), never the whole table, and each
batch is encoded by persistent per-column code maps (the order of the codes is internal:
see the end):

* integers (and floats, by bit pattern): a direct-address table over the value range while
  it is compact, an open-addressing hash table beyond (:class:`IntCodes`); a single integer
  group column is mapped straight into the row buffer;
* strings and binaries: an exact hash table over the Arrow buffers themselves
  (:class:`StrCodes`: 64-bit hash, byte comparison on equal hashes, labels kept in one byte
  arena) — no Python object per row or per label. Once the table outgrows the L2 cache,
  a batch is radix-partitioned first (``_kernels.counting_radix``): the rows of one bucket
  probe one 64 KB slice of the table, read from a sequential bucket of records;
* dictionary columns (Parquet dictionary pages): only the dictionary is mapped, the rows
  are one ``remap[index]`` (applied inside the counting kernel);
* anything else (dates, booleans, decimals, …): Arrow's hash ``dictionary_encode`` per
  batch and a Python dict over the batch dictionary (:class:`LabelCodes`).

Several key columns (QI tuples) become one int64 key by a mixed radix over their codes,
mapped like an integer column (:class:`KeyCodes`; pairwise hash maps of
``code_a << 31 | code_b`` when the key would not fit in 62 bits). Rows are counted during
the scan into a dense (group × value) matrix of uint8 front counters. Memory: the int32
group code column (it becomes the release's ``row_group``), the count matrix, plus one
batch in flight and one read ahead. At the end the labels are sorted once, the profiles
are emitted group by group in canonical (sorted-key) order and the row codes renumbered in
place, so the result is the one :func:`fastpriv._arrow.encode_keys` /
:func:`fastpriv._arrow.encode_column` give on the whole table, whatever order the codes
were handed out in.

The same maps are the state of :class:`fastpriv.counts.CountAccumulator`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import (
    NULL_POLICIES,
    apply_null_policy,
    apply_weights,
    canonical_labels,
    count_rows,
    exact_keys,
    is_csv,
    iter_batches,
    nans_as_nulls,
    open_dataset,
    reading,
    sniff_delimiter,
)
from ._threads import chunk_bounds, current_threads, run_chunks
from ._validation import check_choice, check_columns, check_int, check_total, kernel_array
from .errors import InputError, InputTypeError

__all__ = ["IntCodes", "StrCodes", "LabelCodes", "KeyCodes", "CountState", "Profile",
           "DENSE_STATE_CELLS", "StreamCounts", "encode_rows", "kind_of"]

#: the profile is built on several threads from this many groups on: below it the thread
#: hand-off costs more than it saves (Anatomy's 11k groups of Adult: 2.5 ms of a 10 ms call)
_THREADED_GROUPS = 65_536

#: per-row passes (the final renumbering of the row codes) run on several threads from
#: this many rows on
_THREADED_ROWS = 1 << 22

#: an in-memory Table is streamed from this many rows on (a path or dataset always is)
_STREAMED_TABLE_ROWS = 1 << 20

# direct-address tables up to this many slots (1 MiB, a core's L2) are probed without
# prefetching: 1M random keys, ms without / with: 10k slots 0.72 / 1.14, 100k 1.55 / 1.77,
# 300k 3.06 / 2.99, 1M 5.02 / 4.47 (see counting.direct_map_from)
_CACHED_SLOTS = 1 << 18

# direct-address tables up to this many slots (int32), or 8 slots per distinct key
_DIRECT_MIN = 1 << 22
_DIRECT_MAX = 1 << 26
_PAIR_SHIFT = 31
_COUNT = "count"   # reserved column name: the counts of CountAccumulator.to_table
_PAIR_MASK = (1 << 31) - 1
_INT32_MAX = (1 << 31) - 1
#: Largest dense (group × value) count matrix kept by a count state (uint8 cells, with int32
#: and int64 spill matrices whose pages are touched only where counts spill).
DENSE_STATE_CELLS = 1 << 28
# ... and at most this many cells per row of the scan. Beyond either, the row-code path
# holds 12 bytes per row through the scan and about 40 more while counting (gigabytes at
# 100M rows); the dense state holds a byte per cell: 151 MB for 6.3M groups × 24 cells in
# 10M rows (15 cells per row), in the same time (0.65 s for int keys).
_DENSE_CELLS_PER_ROW = 32
# a scan's count matrix of this many cells (bytes) and more is counted partition by
# partition, each partition _PARTITION_BYTES of it (see counting.dense_add_partitioned)
_PARTITIONED_CELLS = 1 << 23
_PARTITION_BYTES = 1 << 17
# batches below this many rows are counted on one thread even when n_jobs > 1
_PARALLEL_MIN_ROWS = 1 << 16
# string maps of 2**_RADIX_BITS slots (2 MB) and more are probed bucket by bucket, each
# bucket 2**_BUCKET_SLOT_BITS slots (64 KB), for batches of _RADIX_MIN_ROWS rows and more
_RADIX_BITS = 16
_BUCKET_SLOT_BITS = 11
# records are scattered by this many bits more than their bucket (see StrCodes._sort_bits)
_SORT_BITS = 8
_SORT_BITS_MAX = 18   # 2**20 scatter targets took 2.5x as long as 2**18 per 1M rows
_RADIX_MIN_ROWS = 1 << 14
# a string map sized up front for the whole scan holds at most this many codes (128 MB)
_PRESIZE_CODES = 1 << 21
# Parquet row groups decoded ahead, each on its own thread, when there are several cores
# (1: on 2 shared cores a second decoder made 1M-group scans slower, 10k-group ones no faster)
_DECODERS = 1
# several key columns: one mixed-radix key while it stays below 2**_RADIX_KEY_BITS
_RADIX_KEY_BITS = 62
_NO_REMAP = kernel_array(np.empty(0, dtype=np.int32), np.int32)   # radix_step: codes as they are


def _ro(a: np.ndarray, dtype: Any) -> np.ndarray:
    return kernel_array(a, dtype)


# ============================================================================ int64 key maps
class IntCodes:
    """Persistent int64 key → code map: direct-address table, hash table when sparse."""

    def __init__(self, *, force_hash: bool = False) -> None:
        self.n = 0                    # codes in use
        self.reserved = -1            # a code without a key (the null label), or -1
        self.rows_hint = 0            # rows the whole scan will bring (0: unknown)
        self.hash = force_hash
        self.base = 0
        self.table = np.empty(0, dtype=np.int32)       # direct mode
        self.bits = 0
        self.tkeys = np.empty(0, dtype=np.int64)       # hash mode
        self.tvals = np.empty(0, dtype=np.int32)

    # -- direct mode
    def _direct_limit(self, incoming: int) -> int:
        """Return the largest direct table allowed, in slots.

        8 slots per key seen or coming (this batch, or every row the scan announced),
        within ``[_DIRECT_MIN, _DIRECT_MAX]``.
        """
        return min(max(_DIRECT_MIN, 8 * (self.n + max(incoming, self.rows_hint))),
                   _DIRECT_MAX)

    def _direct_fits(self, lo: int, hi: int, incoming: int) -> tuple[bool, int, int]:
        if self.table.size:
            lo, hi = min(lo, self.base), max(hi, self.base + self.table.size - 1)
        return hi - lo + 1 <= self._direct_limit(incoming), lo, hi

    def _direct_grow(self, lo: int, hi: int, incoming: int) -> None:
        """Cover ``[lo, hi]`` (which includes the current table) with geometric headroom."""
        size = self.table.size
        if size and lo >= self.base and hi < self.base + size:
            return
        if size:  # headroom on the side that grows (sorted streams grow upward)
            room = max(self._direct_limit(incoming) - (hi - lo + 1), 0)
            if hi > self.base + size - 1:
                extra = min(size, room)
                hi += extra
                room -= extra
            if lo < self.base:
                lo -= min(size, room)
        table = np.full(hi - lo + 1, -1, dtype=np.int32)
        if size:
            off = self.base - lo
            table[off:off + size] = self.table
        self.table, self.base = table, lo

    # -- hash mode
    def _to_hash(self, extra: int) -> None:
        keys = self.keys()
        self.hash = True
        self.table = np.empty(0, dtype=np.int32)
        self._rehash(keys, self.n + extra)

    def _rehash(self, keys: np.ndarray, want: int) -> None:
        from ._kernels.counting import hash_insert

        bits = max(4, int(math.ceil(math.log2(max(2 * want, 16)))))
        self.bits = bits
        self.tkeys = np.zeros(1 << bits, dtype=np.int64)
        self.tvals = np.full(1 << bits, -1, dtype=np.int32)
        codes = np.arange(keys.size, dtype=np.int32)
        if 0 <= self.reserved < keys.size:   # its "key" is undefined: not in the table
            codes = np.delete(codes, self.reserved)
            keys = keys[codes]
        if keys.size:
            hash_insert(_ro(keys, np.int64), _ro(codes, np.int32), self.tkeys, self.tvals,
                        bits)

    def encode(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Codes (int32) of the int64 keys ``x``; unseen keys get new codes.

        Written to ``out`` (writable int32, one slot per key) when given.
        """
        from ._kernels.counting import direct_map_from, hash_map, int_range

        n = x.shape[0]
        if out is None:
            out = np.empty(n, dtype=np.int32)
        if n == 0:
            return out
        x = _ro(x, np.int64)
        start = 0
        while not self.hash:   # direct table: map until a key falls outside, then grow
            if self.table.size:
                stop, code = direct_map_from(x, int(self.base), self.table, out, int(start),
                                             int(self.n), self.table.size > _CACHED_SLOTS)
                self.n = int(code)
                self._check_codes()
                if stop == n:
                    return out
                start = int(stop)
            lo, hi = (int(b) for b in int_range(x[start:]))
            fits, lo, hi = self._direct_fits(lo, hi, n - start)
            if fits:
                self._direct_grow(lo, hi, n - start)
            else:
                self._to_hash(min(n - start, 1 << 20))
        if not self.bits:
            self._rehash(np.empty(0, dtype=np.int64), min(n, 1 << 20))
        while True:
            cap = 1 << self.bits
            stop, code = hash_map(x, self.tkeys, self.tvals, int(self.bits), out, int(start),
                                  int(self.n), int(cap // 2))
            self.n = int(code)
            if stop == n:
                break
            start = int(stop)
            self._rehash(self.keys(), 2 * self.n + 1)
        self._check_codes()
        return out

    def _check_codes(self) -> None:
        if self.n >= _PAIR_MASK:
            raise InputError("more than 2**31 - 1 distinct keys: too many to encode")

    def reserve_code(self) -> int:
        """Return a new code with no key (used for the null label, once per map)."""
        code = self.n
        self.n += 1
        self.reserved = code
        return code

    def keys(self) -> np.ndarray:
        """Key of every code (entries of reserved codes are undefined)."""
        from ._kernels.counting import direct_keys, table_keys

        if self.hash:
            return table_keys(self.tkeys, self.tvals, int(self.n))
        return direct_keys(self.table, int(self.base), int(self.n))

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes + self.tkeys.nbytes + self.tvals.nbytes)


# ============================================================================ label maps
def kind_of(t: pa.DataType) -> str:
    if pa.types.is_integer(t) and not (pa.types.is_unsigned_integer(t) and t.bit_width == 64):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return "str"
    return "generic"


_NAN_KEY = ("__fastpriv_nan__",)


def _string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a (large) string/binary array without nulls, zero-copy."""
    t = arr.type
    if not (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t)):
        arr = arr.cast(pa.large_binary() if pa.types.is_binary_view(t) else pa.large_string())
        t = arr.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    bufs = arr.buffers()
    n = len(arr)
    odt = np.int64 if large else np.int32
    offsets = np.frombuffer(bufs[1], dtype=odt, count=arr.offset + n + 1)[arr.offset:]
    data = (np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size
            else np.zeros(1, dtype=np.uint8))
    return _ro(offsets, np.int64), _ro(data, np.uint8)


def expected_distinct(m: int, d: int, rows: int) -> int:
    """Distinct keys expected among ``rows`` rows when a sample of ``m`` rows held ``d``.

    The occupancy estimate for keys drawn uniformly from D: a sample of m rows holds
    E[d] = D (1 − exp(−m/D)) distinct keys; D is solved from the observed d (bisection on
    log D), and ``rows`` rows then hold D (1 − exp(−rows/D)). A sample without repeats
    bounds nothing: the answer is ``rows``. Skewed frequencies make the estimate low (the
    table then grows as it fills); it only sizes a hash table, never decides a result.
    """
    if m <= 0 or d <= 0:
        return 0
    if d >= m - 0.5:
        return int(rows)
    lo, hi = math.log(d), math.log(rows) + 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        big = math.exp(mid)
        if big * -math.expm1(-m / big) < d:
            lo = mid
        else:
            hi = mid
    big = math.exp(hi)
    return int(min(rows, big * -math.expm1(-rows / big)))


def _identity(arr: pa.Array) -> tuple[int, int, int]:
    """Return the memory a string array views (its wrapper object differs per access)."""
    return (arr.buffers()[1].address, arr.offset, len(arr))


def _bucket_strings(arr: pa.Array, sbits: int, spare: list) -> np.ndarray:
    """Return the records of ``arr``, scattered by the top ``sbits`` bits of their slot.

    See ``_kernels.counting_radix.str_scatter``. The records and the row hashes share one
    buffer of 5 int64 per row, taken from ``spare`` (buffers of earlier batches, handed
    back by :meth:`StrCodes.encode_unordered`) when one is large enough: a fresh 40 MB per
    1M-row batch was a third of the page faults of a 10M-row scan.
    """
    from ._kernels.counting_radix import str_hash_rows, str_scatter

    offsets, data = _string_buffers(arr)
    n = len(arr)
    buf = None
    while spare and buf is None:
        b = spare.pop()
        buf = b if b.size >= 5 * n else None
    if buf is None:
        buf = np.empty(5 * n, dtype=np.int64)
    hrow = buf[4 * n:5 * n].view(np.uint64)
    str_hash_rows(offsets, data, hrow)
    rec = buf[:4 * n]
    str_scatter(offsets, data, hrow, int(sbits), rec)
    return rec


class StrCodes:
    """Persistent string/binary → code map over Arrow buffers (exact, codes by first appearance).

    Code ``c``'s bytes are ``arena[starts[c]:starts[c+1]]``; ``slots`` is an open-addressing
    table at load ≤ 1/2 holding (code and length, hash, first 16 bytes or arena start) per
    slot, keyed by the 64-bit hash ``hashes[c]`` (collisions are resolved by comparing
    bytes, see ``_kernels.counting.str_map``).
    """

    def __init__(self) -> None:
        self.n = 0
        self.rows_hint = 0          # rows the whole scan will bring (0: unknown), for sizing
        self.rows_seen = 0          # rows encoded by encode_unordered so far (for sizing)
        self.ahead: dict = {}   # identity -> (array, pbits, future records): see prefetch
        self.spare: list = []   # record buffers free for the next batch (_bucket_strings)
        self.reserved = -1                          # a code without bytes (the null label)
        self.bits = 0
        self.slots = np.empty(0, dtype=np.int64)
        self.hashes = np.empty(0, dtype=np.uint64)
        self.starts = np.zeros(1, dtype=np.int64)
        self.arena = np.empty(0, dtype=np.uint8)

    def _grow_codes(self, want: int) -> None:
        """Make room for ``want`` codes, at least twice the current number.

        The slot table keeps load ≤ 1/2; when it must grow it is rebuilt from the old one
        (:func:`~fastpriv._kernels.counting.str_regrow`).
        """
        from ._kernels.counting import str_regrow, str_rehash

        cap = max(1024, want, 2 * self.hashes.size)
        hashes = np.zeros(cap, dtype=np.uint64)
        hashes[:self.n] = self.hashes[:self.n]
        starts = np.zeros(cap + 1, dtype=np.int64)
        starts[:self.n + 1] = self.starts[:self.n + 1]
        self.hashes, self.starts = hashes, starts
        bits = max(4, int(math.ceil(math.log2(2 * cap))))
        if self.slots.size == 0:
            self.slots = str_rehash(self.hashes, self.starts, self.arena, int(self.n),
                                    int(self.reserved), int(bits))
        elif bits > self.bits:
            self.slots = str_regrow(self.slots, int(self.bits), int(bits))
        self.bits = bits

    def _grow_arena(self, want: int) -> None:
        arena = np.empty(max(want, 2 * self.arena.size, 1 << 16), dtype=np.uint8)
        used = int(self.starts[self.n])
        arena[:used] = self.arena[:used]
        self.arena = arena

    def encode(self, arr: pa.Array) -> np.ndarray:
        """Codes (int32) of the strings of ``arr`` (no nulls); unseen ones get new codes."""
        from ._kernels.counting import str_map

        offsets, data = _string_buffers(arr)
        n = len(arr)
        out = np.empty(n, dtype=np.int32)
        if not self.hashes.size:
            self._grow_codes(min(n, 1 << 16))
        start = 0
        while True:
            stop, code = str_map(offsets, data, self.slots, int(self.bits), self.hashes,
                                 self.starts, self.arena, out, int(start), int(self.n),
                                 int(self.hashes.size))
            self.n = int(code)
            if stop == n:
                return out
            start = int(stop)
            if self.n >= _PAIR_MASK:
                raise InputError("more than 2**31 - 1 distinct keys: too many to encode")
            if self.n >= self.hashes.size:
                self._grow_codes(2 * self.n)
            rest = int(offsets[n]) - int(offsets[start])
            if int(self.starts[self.n]) + rest > self.arena.size:
                self._grow_arena(int(self.starts[self.n]) + rest)

    def encode_unordered(self, arr: pa.Array, rows: int = 0) -> np.ndarray:
        """Codes (int32) of the strings of ``arr`` (no nulls); new codes in any order.

        Same map as :meth:`encode`. Once the slot table outgrows the L2 cache
        (``2**_RADIX_BITS`` slots), a large batch is bucketed first
        (``_kernels.counting_radix``): each bucket's rows probe one 64 KB slice of the table,
        instead of one cache miss per row. New strings then get codes in bucket order, not
        in order of first appearance. A first batch that is mostly new strings sizes the
        table for its estimated distinct count (from its first ``_RADIX_MIN_ROWS`` rows):
        that of the whole scan when ``rows_hint`` says how many rows it will bring (see
        :func:`expected_distinct`), which saves rehashing the table as it fills. ``rows``:
        the rows ``arr`` stands for when it is a dictionary (its distinct strings), which
        then is the sample. A table that fills up later is grown for the whole scan's
        estimate from the rows seen before this batch (at most 8× its codes), not just
        doubled: at 6.3M distinct strings in 10M rows, that is one rehash of 2M codes
        instead of two of 2M and 4M.
        """
        out = self._encode_unordered(arr, rows)
        self.rows_seen += max(len(arr), rows)
        return out

    def _encode_unordered(self, arr: pa.Array, rows: int) -> np.ndarray:
        from ._kernels.counting_radix import str_map_records

        n = len(arr)
        if n < 2 * _RADIX_MIN_ROWS:
            return self.encode(arr)
        if self.bits < _RADIX_BITS:   # small table: is this batch mostly new strings?
            before = self.n
            head = self.encode(arr.slice(0, _RADIX_MIN_ROWS))
            m, d = (rows, n) if rows > n else (_RADIX_MIN_ROWS, self.n - before)
            want = self.n + expected_distinct(m, d, max(m, n) - _RADIX_MIN_ROWS)
            if self.rows_hint > max(n, rows):   # size once for the whole scan
                want = max(want, min(expected_distinct(m, d, self.rows_hint), _PRESIZE_CODES))
            if 2 * want < (1 << _RADIX_BITS):
                return np.concatenate([head, self.encode(arr.slice(_RADIX_MIN_ROWS))])
            if want > self.hashes.size:
                self._grow_codes(want)
            return np.concatenate([head, self._encode_unordered(arr.slice(_RADIX_MIN_ROWS),
                                                                rows)])
        ahead = self.ahead.pop(_identity(arr), None)
        if ahead is not None:   # bucketed on a worker (see prefetch)
            pbits, rec = ahead[1], ahead[2].result()
        else:
            pbits = self._bucket_bits()
            rec = _bucket_strings(arr, self._sort_bits(pbits), self.spare)
        offsets, data = _string_buffers(arr)
        out = np.empty(n, dtype=np.int32)
        batch_bytes = int(offsets[n]) - int(offsets[0])
        start = 0
        before = self.n
        while True:
            if int(self.starts[self.n]) + batch_bytes > self.arena.size:
                self._grow_arena(int(self.starts[self.n]) + batch_bytes)
            stop, code = str_map_records(offsets, data, rec, int(pbits), self.slots,
                                         int(self.bits), self.hashes, self.starts, self.arena,
                                         out, int(start), int(self.n), int(self.hashes.size))
            done = int(stop) - start
            new = int(code) - self.n
            self.n = int(code)
            if stop == n:
                if len(self.spare) < 2:   # the records' buffer, for a later batch
                    self.spare.append(rec.base if rec.base is not None else rec)
                return out
            if self.n >= _PAIR_MASK:
                raise InputError("more than 2**31 - 1 distinct keys: too many to encode")
            start = int(stop)
            # twice the codes, room for the new strings the rest of the batch should bring,
            # or the whole scan's estimate from the batches before this one
            self._grow_codes(max(2 * self.n, self.n + (n - start) * new // max(done, 1),
                                 min(self._scan_estimate(before), 8 * self.n)))

    def _scan_estimate(self, before: int) -> int:
        """Return the codes to make room for in the whole scan (0 if its rows are unknown).

        The distinct strings expected from the rows seen before this batch and the
        ``before`` codes they brought (:func:`expected_distinct`), plus an eighth.
        """
        if self.rows_hint <= self.rows_seen or self.rows_seen <= 0:
            return 0
        guess = expected_distinct(self.rows_seen, before, self.rows_hint)
        return guess + guess // 8   # a margin: a table just short would double again

    def prefetch(self, arr: pa.Array, pool: Any) -> bool:
        """Start bucketing ``arr`` (hashes and records) on ``pool``; True if started.

        Only once the table is probed bucket by bucket: the next :meth:`encode_unordered`
        of this very array takes the records instead of computing them, so the hashing
        and the scatter (a third of a batch's encoding at 1M distinct strings) overlap
        with the previous batch's probing and counting. Records bucketed for the table's
        size at submission stay valid after it grows (a bucket is a prefix of the slot
        index, and the table only grows).
        """
        if self.bits < _RADIX_BITS or len(arr) < 2 * _RADIX_MIN_ROWS or arr.null_count:
            return False
        pbits = self._bucket_bits()
        while len(self.ahead) >= 2:   # never claimed (the batch took another path)
            self.ahead.pop(next(iter(self.ahead)))
        # the entry holds the array: its memory cannot be reused by another while it waits
        self.ahead[_identity(arr)] = (arr, pbits, pool.submit(_bucket_strings, arr,
                                                              self._sort_bits(pbits),
                                                              self.spare))
        return True

    def drop_index(self) -> None:
        """Free the lookup structures (slot table, hashes); codes and labels stay.

        For a map whose encoding is over: sorting and gathering the labels read only
        ``starts`` and ``arena``. At 6.3M strings the slot table alone is 512 MB.
        """
        self.slots = np.empty(0, dtype=np.int64)
        self.hashes = np.empty(0, dtype=np.uint64)
        self.bits = 0
        self.spare.clear()
        self.ahead.clear()

    def _bucket_bits(self) -> int:
        """Bits of a bucket: each bucket's slice of the table is 2**_BUCKET_SLOT_BITS slots."""
        return min(int(self.bits) - _BUCKET_SLOT_BITS, 12)

    def _sort_bits(self, pbits: int) -> int:
        """Return the bits the records are scattered by: _SORT_BITS more than the bucket's.

        Within a bucket they then probe its slice in order, a few slots apart: the lines
        stream in instead of one miss per record (1M-row batches at 1M keys probe in 30
        instead of 43 ms, for a scatter of 15 instead of 9 ms, which runs ahead on a
        worker).
        """
        return min(int(self.bits), pbits + _SORT_BITS, _SORT_BITS_MAX)

    def reserve_code(self) -> int:
        """Return a new code with no bytes and no slot (used for the null label)."""
        if self.n >= self.hashes.size:
            self._grow_codes(2 * self.n + 1)
        code = self.n
        self.starts[code + 1] = self.starts[code]
        self.reserved = code
        self.n += 1
        return code

    def sorted_order(self) -> np.ndarray:
        """Return the codes in sorted order of their bytes (Arrow's order), the null code last.

        A radix sort on 8-byte prefixes (``_kernels.counting_radix.str_sorted_order``):
        Arrow's ``sort_indices`` takes about 1 µs per string at 1M strings.
        """
        from ._kernels.counting_radix import str_sorted_order

        return str_sorted_order(self.starts, self.arena, int(self.n), int(self.reserved))

    def labels(self, t: pa.DataType) -> pa.Array:
        """All labels in code order, of type ``t`` (string or binary; reserved code: null)."""
        n = self.n
        starts = self.starts[:n + 1]
        used = int(starts[n])
        valid = None
        if self.reserved >= 0:
            valid = np.ones(n, dtype=bool)
            valid[self.reserved] = False
        return _string_array(t, starts, self.arena[:used].copy(), valid)

    def labels_of(self, codes: np.ndarray, t: pa.DataType) -> pa.Array:
        """Return the labels of ``codes`` (int64) in that order: ``labels(t).take(codes)``.

        Gathered from the arena in one kernel (``_kernels.counting_radix.str_gather``),
        without building every label first.
        """
        from ._kernels.counting_radix import str_gather

        offsets, data = str_gather(self.starts, self.arena, _ro(codes, np.int64))
        valid = None if self.reserved < 0 else codes != self.reserved
        return _string_array(t, offsets, data, valid)

    @property
    def nbytes(self) -> int:
        return int(self.slots.nbytes + self.hashes.nbytes + self.starts.nbytes
                   + self.arena.nbytes)


def _ranks_of(order: np.ndarray) -> np.ndarray:
    """Return the rank (int32) of every code, given the codes in sorted order."""
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return rank


def _string_array(t: pa.DataType, offsets: np.ndarray, data: np.ndarray,
                  valid: np.ndarray | None) -> pa.Array:
    """Return a string or binary array of type ``t`` from int64 ``offsets`` and ``data``.

    Built as the 32-bit-offset type when the bytes allow (then cast to ``t`` if needed);
    ``valid`` (bool per entry, or None) marks the non-null entries.
    """
    n = offsets.shape[0] - 1
    big = int(offsets[n]) >= _PAIR_MASK
    typ = {True: pa.large_binary(), False: pa.binary()}[big] if pa.types.is_binary(t) \
        else {True: pa.large_string(), False: pa.string()}[big]
    validity = None if valid is None else pa.array(valid).buffers()[1]
    arr = pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(
        offsets if big else offsets.astype(np.int32)), pa.py_buffer(data)])
    return arr if arr.type == t else arr.cast(t)


def _remapped(idx: np.ndarray, remap: np.ndarray | None, out: np.ndarray | None
              ) -> np.ndarray:
    """Codes ``remap[idx]`` (``idx`` itself when ``remap`` is None), into ``out`` if given."""
    from ._kernels.counting import remap_into

    if remap is None:
        if out is None:
            return idx
        out[:] = idx
        return out
    if out is None:
        out = np.empty(idx.shape[0], dtype=np.int32)
    remap_into(_ro(idx, np.int32), _ro(remap, np.int32), out)
    return out


class LabelCodes:
    """Persistent label → code map of one column.

    Codes in order of first appearance, except strings mapped bucket by bucket
    (:meth:`StrCodes.encode_unordered`); every reader sorts the labels.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.type: pa.DataType | None = None     # canonical label type
        self.kind: str | None = None
        self.ints = IntCodes()                   # int / float kinds
        self.strs = StrCodes()                   # string / binary kinds
        self.lookup: dict = {}                    # generic kind
        self.chunks: list[pa.Array] = []          # generic kind: labels in code order
        self.null_code = -1
        self.n_generic = 0

    @property
    def n(self) -> int:
        if self.kind == "str":
            return self.strs.n
        return self.n_generic if self.kind == "generic" else self.ints.n

    def _set_type(self, t: pa.DataType) -> None:
        canon = canonical_labels(pa.array([], type=t)).type
        if self.type is None:
            self.type, self.kind = canon, kind_of(canon)
        elif canon != self.type:
            raise InputTypeError(f"column {self.name!r} changes type between batches: "
                            f"{self.type} then {canon}")

    def _null(self) -> int:
        if self.null_code < 0:
            if self.kind == "generic":
                self.null_code = self.n_generic
                self.n_generic += 1
                self.chunks.append(pa.array([None], type=self.type))
                self.lookup[None] = self.null_code
            elif self.kind == "str":
                self.null_code = self.strs.reserve_code()
            else:
                self.null_code = self.ints.reserve_code()
        return self.null_code

    def encode(self, col: pa.Array | pa.ChunkedArray, out: np.ndarray | None = None
               ) -> np.ndarray:
        """Global codes (int32) of every entry of ``col`` (written to ``out`` if given)."""
        idx, remap = self.encode_pair(col)
        return _remapped(idx, remap, out)

    def encode_pair(self, col: pa.Array | pa.ChunkedArray
                    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Return ``(indices, remap)``: the global code of entry i is ``remap[indices[i]]``.

        With ``remap`` None, ``indices`` already are the codes. Dictionary columns cost no
        pass over the rows here: the kernel that consumes the rows applies the (small) remap.
        """
        if isinstance(col, pa.ChunkedArray):
            if col.num_chunks == 1:
                return self.encode_pair(col.chunk(0))
            parts = [self.encode(c) for c in col.chunks]
            return (np.concatenate(parts) if parts else np.empty(0, dtype=np.int32)), None
        t = col.type
        if pa.types.is_dictionary(t):
            return self._encode_dictionary(col)
        self._set_type(t)
        if self.kind == "generic" and len(col):
            return self._encode_generic(col)
        return self._encode_plain(col), None

    def _encode_dictionary(self, col: pa.DictionaryArray) -> tuple[np.ndarray, np.ndarray]:
        # Every dictionary entry is registered, used or not (no pass over the rows to find
        # the used ones); labels that end with a zero count are dropped by to_release.
        self._set_type(col.type.value_type)
        dictionary = col.dictionary
        nd = len(dictionary)
        idx = col.indices
        has_null = idx.null_count > 0
        if has_null:
            idx = idx.fill_null(nd)
        raw = _ro(idx.to_numpy(), np.int32)
        remap = np.full(nd + 1, -1, dtype=np.int32)
        if nd:
            remap[:nd] = self._encode_plain(dictionary, len(col))
        if has_null:
            remap[nd] = self._null()
        return raw, _ro(remap, np.int32)

    def _encode_plain(self, arr: pa.Array, rows: int = 0) -> np.ndarray:
        """Codes of a plain array; ``rows``: the rows it stands for if it is a dictionary."""
        n = len(arr)
        if n == 0:
            return np.empty(0, dtype=np.int32)
        if self.kind == "generic":
            return self.encode(arr)
        if arr.null_count:
            valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)
            out = np.empty(n, dtype=np.int32)
            out[valid] = self._encode_values(arr.drop_null(), rows)
            out[~valid] = self._null()
            return out
        return self._encode_values(arr, rows)

    def _encode_values(self, arr: pa.Array, rows: int = 0) -> np.ndarray:
        if self.kind == "str":
            return self.strs.encode_unordered(arr, rows)
        return self._encode_numbers(arr)

    def _encode_numbers(self, arr: pa.Array) -> np.ndarray:
        if self.kind == "int":
            x = arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        else:
            f = arr.to_numpy(zero_copy_only=False).astype(np.float64)
            f[np.isnan(f)] = np.nan  # one NaN bit pattern (Arrow unifies NaNs)
            f += 0.0                 # and one zero: -0.0 is 0.0 (canonical_labels)
            x = f.view(np.int64)
        return self.ints.encode(x)

    def _encode_generic(self, arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        enc = pc.dictionary_encode(arr, null_encoding="encode")
        dictionary = canonical_labels(enc.dictionary, name=self.name)
        labels = exact_keys(dictionary)
        remap = np.empty(len(labels), dtype=np.int32)
        new = []
        lookup = self.lookup
        for i, lab in enumerate(labels):
            key = _NAN_KEY if isinstance(lab, float) and lab != lab else lab
            code = lookup.get(key)
            if code is None:
                code = self.n_generic
                self.n_generic += 1
                lookup[key] = code
                new.append(i)
                if lab is None:
                    self.null_code = code
            remap[i] = code
        if new:
            chunk = dictionary.take(pa.array(new)) if len(new) < len(labels) else dictionary
            self.chunks.append(chunk)
        return _ro(enc.indices.to_numpy(zero_copy_only=False), np.int32), _ro(remap, np.int32)

    def labels(self) -> pa.Array:
        """All labels in code order (canonical type)."""
        t = self.type if self.type is not None else pa.null()
        if self.kind == "generic":
            if not self.chunks:
                return pa.array([], type=t)
            return canonical_labels(pa.concat_arrays([c.cast(t) if c.type != t else c
                                                      for c in self.chunks]), name=self.name)
        if self.kind == "str":
            return self.strs.labels(t)
        keys = self.ints.keys()
        mask = None
        if self.null_code >= 0:
            mask = np.zeros(keys.size, dtype=bool)
            mask[self.null_code] = True
            keys[self.null_code] = 0
        if self.kind == "float":
            return pa.array(keys.view(np.float64), mask=mask, type=pa.float64())
        return pa.array(keys, mask=mask, type=pa.int64()).cast(t)

    def labels_of(self, codes: np.ndarray) -> pa.Array:
        """Return the labels of ``codes`` (int64) in that order (canonical type)."""
        if self.kind == "str":
            t = self.type if self.type is not None else pa.null()
            return self.strs.labels_of(codes, t)
        return self.labels().take(pa.array(codes))

    def sorted_used(self, used: np.ndarray) -> tuple[np.ndarray, pa.Array]:
        """Return ``(codes, labels)``: the used codes in sorted label order, and their labels.

        ``codes`` (int64) are those with ``used[code]``; null labels come last.

        Integer labels in a direct-address table come out of one pass over the table
        (``_kernels.counting.direct_sorted``), keys included: no inverse map, no gather.
        """
        if self.kind != "int" or self.ints.hash:
            order = self.sorted_order()
            codes = order[used[order]].astype(np.int64)
            return codes, self.labels_of(codes)
        from ._kernels.counting import direct_sorted

        codes = np.empty(used.shape[0] + 1, dtype=np.int64)
        keys = np.empty(used.shape[0] + 1, dtype=np.int64)
        k = direct_sorted(self.ints.table, int(self.ints.base), _ro(used, np.bool_), codes,
                          keys)
        codes = codes[:k]
        labels = pa.array(keys[:k], type=pa.int64())
        if self.null_code >= 0 and used[self.null_code]:
            codes = np.append(codes, self.null_code)
            labels = pa.concat_arrays([labels, pa.nulls(1, pa.int64())])
        return codes, labels.cast(self.type)

    def sorted_ranks(self) -> tuple[np.ndarray, pa.Array]:
        """``(rank, labels_sorted)``: rank of every code among the sorted labels."""
        order = self.sorted_order()
        return _ranks_of(order), self.labels_of(order)

    def ranks(self) -> np.ndarray:
        """Return the rank (int32) of every code among the sorted labels."""
        return _ranks_of(self.sorted_order())

    def sorted_order(self) -> np.ndarray:
        """Return the codes in sorted label order (nulls last).

        Integer labels in a direct-address table are already in order there: one pass over
        the table instead of a sort.
        """
        if self.kind == "int" and not self.ints.hash:
            table = self.ints.table
            order = table[table >= 0].astype(np.int64)
            if self.null_code >= 0:
                order = np.append(order, self.null_code)
            return order
        if self.kind == "str":
            return self.strs.sorted_order()
        return pc.array_sort_indices(self.labels(), null_placement="at_end").to_numpy()

    @property
    def nbytes(self) -> int:
        return (self.ints.nbytes + self.strs.nbytes + sum(c.nbytes for c in self.chunks)
                + 100 * len(self.lookup))



# ============================================================================ count state
class CountState:
    """(group code, value code) → count: dense matrix while small, hash table beyond.

    Unit counts land in **uint8** front counters (``mat8``) that spill 255 at a time into
    an **int32** matrix (``mat``): the byte matrix is a quarter of the int32 one, so
    random-order groups stay in cache far longer (10k groups: 2x faster counting, see
    ``_kernels.counting.dense_add``). A cell's count is the sum of the matrices; the
    readers skip the int32 one until a cell has spilled (``spilled``), so a state of
    fewer than 255 rows per cell is read, regridded and held at one byte per cell (the
    int32 matrix is allocated zeroed and its pages stay untouched). The int32 matrix is
    flushed into an int64 matrix of the same layout before it could overflow — after
    2**31 - 1 rows, so only huge inputs ever allocate the third matrix. Weighted additions
    (merges of partial states) go to the int64 matrix.
    """

    def __init__(self, dense_cells: int) -> None:
        self.dense_cells = int(dense_cells)
        self.sparse = False
        self.mat = np.zeros(0, dtype=np.int32)
        self.mat8 = np.zeros(0, dtype=np.uint8)
        self.mat64: np.ndarray | None = None
        self.since_flush = 0
        self.spilled = False      # some cell has reached 255: ``mat`` holds counts
        self.stride = 0
        self.gcap = 0
        self.pairs = IntCodes(force_hash=True)
        self.pcounts = np.zeros(0, dtype=np.int64)

    def _ensure_dense(self, n_groups: int, n_values: int, rows_total: int,
                      grow: bool = True, ahead: int = 0) -> bool:
        """Grow the dense matrix to hold the codes; False if it would exceed the limit.

        ``grow=False``: only whether it could. ``ahead``: groups expected later, allocated
        now when the matrix grows (within the limit): one matrix instead of a chain of
        regrids, each a copy into fresh pages. 10M rows of 6.3M int groups: the first
        batch's occupancy estimate (``expected_distinct``) allocates 7.9M groups at once
        instead of 1M, 4M, then 11M.
        """
        stride, gcap = self.stride, self.gcap
        if n_values > stride:
            stride = -(-n_values // 8) * 8 if n_values <= 64 else max(n_values, 2 * stride)
        limit = min(self.dense_cells, max(1 << 22, _DENSE_CELLS_PER_ROW * rows_total))
        max_g = limit // stride if stride else 0
        if n_groups > max_g or not grow:
            return n_groups <= max_g
        if n_groups > gcap:
            gcap = min(max(n_groups, ahead, 4 * gcap, 1024), max_g)
        if (stride, gcap) != (self.stride, self.gcap):
            self.mat = (self._regrid(self.mat, stride, gcap) if self.spilled
                        else np.zeros(stride * gcap, dtype=np.int32))   # pages untouched
            self.mat8 = self._regrid(self.mat8, stride, gcap)
            if self.mat64 is not None:
                self.mat64 = self._regrid(self.mat64, stride, gcap)
            self.stride, self.gcap = stride, gcap
        return True

    def _regrid(self, old: np.ndarray, stride: int, gcap: int) -> np.ndarray:
        """Return ``old`` laid out for ``stride`` × ``gcap`` cells.

        The spill matrices (int32, int64) are copied cell by cell where non-zero: a spill
        is rare (a cell's 255th row), so most of their pages were never touched, and a
        whole copy would make every page of the new one resident (4 bytes per cell).
        """
        mat = np.zeros(stride * gcap, dtype=old.dtype)
        if not old.size:
            return mat
        if old.dtype == np.uint8:
            mat.reshape(gcap, stride)[:self.gcap, :self.stride] = \
                old.reshape(self.gcap, self.stride)
        else:
            nz = np.flatnonzero(old)
            mat[nz // self.stride * stride + nz % self.stride] = old[nz]
        return mat

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more unit counts in the int32 matrix (flush if needed)."""
        if self.since_flush + rows > _INT32_MAX:
            if self.mat64 is None:
                self.mat64 = np.zeros(self.mat.size, dtype=np.int64)
            if self.spilled:
                self.mat64 += self.mat
                self.mat[:] = 0
            self.since_flush = 0
        self.since_flush += rows

    def counted(self, spills: int) -> None:
        """Record the spill count an adding kernel returned."""
        if spills:
            self.spilled = True

    def dense_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(mat8, mat, mat64)`` for the dense readers.

        ``mat`` is empty until a cell has spilled, ``mat64`` when never needed.
        """
        return (self.mat8, self.mat if self.spilled else np.zeros(0, dtype=np.int32),
                self.mat64 if self.mat64 is not None else np.zeros(0, dtype=np.int64))

    def _to_sparse(self, n_values: int) -> None:
        from ._kernels.counting import dense_nonzero

        g, v, c = dense_nonzero(*self.dense_parts(), int(self.stride), int(self.gcap),
                                int(self.stride))
        self.sparse = True
        self.mat = np.zeros(0, dtype=np.int32)
        self.mat8 = np.zeros(0, dtype=np.uint8)
        self.mat64 = None
        self.spilled = False
        self.stride = self.gcap = 0
        self._add_sparse(g, v, c)

    def add(self, g: np.ndarray, v: np.ndarray, w: np.ndarray, n_groups: int, n_values: int,
            rows_total: int, threads: int) -> None:
        from ._kernels.counting import dense_add, dense_add_parallel

        if g.size == 0:
            return
        g, v, w = _ro(g, np.int32), _ro(v, np.int32), _ro(w, np.int64)
        if not self.sparse and not self._ensure_dense(n_groups, n_values, rows_total):
            self._to_sparse(n_values)
        if self.sparse:
            self._add_sparse(g, v, w)
            return
        if w.size:   # weighted (a merge): straight into the int64 matrix
            if self.mat64 is None:
                self.mat64 = np.zeros(self.mat.size, dtype=np.int64)
            np.add.at(self.mat64, g.astype(np.int64) * self.stride + v, w)
            return
        self.reserve(g.size)
        if threads > 1 and g.size >= _PARALLEL_MIN_ROWS:
            lo, hi = int(g.min()), int(g.max())
            self.counted(dense_add_parallel(g, v, self.mat8, self.mat, int(self.stride), lo, hi,
                                            int(threads)))
        else:
            self.counted(dense_add(g, v, self.mat8, self.mat, int(self.stride)))

    def _add_sparse(self, g: np.ndarray, v: np.ndarray, w: np.ndarray) -> None:
        from ._kernels.counting import hash_count

        g, v, w = _ro(g, np.int32), _ro(v, np.int32), _ro(w, np.int64)
        p = self.pairs
        if not p.bits:
            p._rehash(np.empty(0, dtype=np.int64), max(1024, min(g.size, 1 << 20)))
            self.pcounts = np.zeros(1 << (p.bits - 1), dtype=np.int64)
        start = 0
        while True:
            cap = 1 << p.bits
            stop, code = hash_count(g, v, w, p.tkeys, p.tvals, int(p.bits), self.pcounts,
                                    int(start), int(p.n), int(cap // 2))
            p.n = int(code)
            if stop == g.size:
                return
            start = int(stop)
            p._rehash(p.keys(), 2 * p.n + 1)
            counts = np.zeros(1 << (p.bits - 1), dtype=np.int64)
            counts[:p.n] = self.pcounts[:p.n]
            self.pcounts = counts

    def triples(self, n_groups: int, n_values: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Non-zero cells as (group code, value code, count) arrays."""
        from ._kernels.counting import dense_nonzero

        if self.sparse:
            keys = self.pairs.keys()
            counts = self.pcounts[:self.pairs.n].copy()
            keep = counts != 0
            keys, counts = keys[keep], counts[keep]
            return ((keys >> _PAIR_SHIFT).astype(np.int32),
                    (keys & _PAIR_MASK).astype(np.int32), counts)
        if not self.mat.size:
            return (np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0, np.int64))
        return dense_nonzero(*self.dense_parts(), int(self.stride), int(n_groups),
                             int(n_values))

    @property
    def nbytes(self) -> int:
        """Bytes allocated, an upper bound.

        The int32 matrix's pages stay untouched until a cell spills.
        """
        extra = 0 if self.mat64 is None else self.mat64.nbytes
        return int(self.mat.nbytes + self.mat8.nbytes + extra + self.pairs.nbytes
                   + self.pcounts.nbytes)


def _plain_int(lab: "LabelCodes", key: Any) -> bool:
    """Return whether a key column is a plain integer array without nulls for ``lab``."""
    t = key.type
    return (isinstance(key, pa.Array) and not key.null_count and pa.types.is_integer(t)
            and kind_of(t) == "int" and lab.kind in (None, "int"))

# ============================================================================ key tuples
class _RadixOverflow(Exception):
    """The mixed-radix key of the key columns no longer fits in an int64 (see KeyCodes)."""


class KeyCodes:
    """Persistent key tuple → group code map over one or more key columns.

    One :class:`LabelCodes` per column. Several columns become one group code (codes in
    order of first appearance) in one of two ways:

    * ``radix=True``: the per-column codes are digits of one int64 key,
      ``key = ((c_1 · r_2 + c_2) · r_3 + c_3) …`` with radices ``r_j`` a quarter above
      the columns' cardinalities, mapped like an integer group column (a direct-address
      table while the key range is compact). When a column outgrows its radix, the
      radices are widened and the key map rebuilt with the same group codes; when the
      key cannot fit 62 bits, :class:`_RadixOverflow` is raised (the scan restarts with
      pairwise maps).
    * pairwise: ``code = level.encode(code_a << 31 | code_b)`` column after column.
    """

    def __init__(self, names: list[str], *, radix: bool = False) -> None:
        self.names = list(names)
        self.cols = [LabelCodes(k) for k in self.names]
        self.radix = radix and len(self.names) > 1
        self.radices: list[int] = []
        self.levels = ([IntCodes()] if self.radix
                       else [IntCodes(force_hash=True) for _ in self.names[1:]])

    @property
    def n(self) -> int:
        """Distinct groups (key tuples) seen so far."""
        return self.levels[-1].n if self.levels else self.cols[0].n

    @property
    def nbytes(self) -> int:
        return int(sum(c.nbytes for c in self.cols) + sum(lv.nbytes for lv in self.levels))

    def encode(self, cols: list, out: np.ndarray | None = None) -> np.ndarray:
        """Group code (int32) of every row of the key columns ``cols``.

        Written to ``out`` if given (a single column or mixed-radix keys: without a copy).
        """
        if self.radix:   # dictionary columns: no pass of their own, the remap is a digit
            pairs = [lab.encode_pair(c) for lab, c in zip(self.cols, cols, strict=True)]
            return self._radix_codes(pairs, out)
        if not self.levels:
            return self.cols[0].encode(cols[0], out)
        codes = self.cols[0].encode(cols[0])
        codes = self.combine(codes, [lab.encode(c) for lab, c in
                                     zip(self.cols[1:], cols[1:], strict=True)])
        return _remapped(codes, None, out)

    def combine(self, codes: np.ndarray, rest: list[np.ndarray]) -> np.ndarray:
        """Group codes of rows given the per-column codes (first column, then the others)."""
        from ._kernels.counting import pack_pairs

        if self.radix:
            return self._combine_radix(codes, rest)
        for level, b in zip(self.levels, rest, strict=True):
            codes = level.encode(pack_pairs(_ro(codes, np.int32), _ro(b, np.int32)))
        return codes

    def _combine_radix(self, codes: np.ndarray, rest: list[np.ndarray]) -> np.ndarray:
        return self._radix_codes([(codes, None)] + [(b, None) for b in rest])

    def _radix_codes(self, pairs: list[tuple[np.ndarray, np.ndarray | None]],
                     out: np.ndarray | None = None) -> np.ndarray:
        """Group codes of rows from per-column ``(indices, remap)`` (remap None: codes)."""
        from ._kernels.counting_radix import radix_step

        self._fit_radices()
        key = np.empty(pairs[0][0].shape[0], dtype=np.int64)   # radix 0: the first digit
        for (idx, remap), r in zip(pairs, [0] + self.radices, strict=True):
            radix_step(key, _ro(idx, np.int32), _NO_REMAP if remap is None else
                       _ro(remap, np.int32), int(r))
        return self.levels[0].encode(key, out)

    def _fit_radices(self) -> None:
        """Widen the radices to the columns' code counts (rebuilding the key map)."""
        need = [col.n for col in self.cols[1:]]
        old = self.radices
        if old and all(n <= r for n, r in zip(need, old, strict=True)):
            new = old
        else:
            new = [max(n + max(n // 4, 1), r) for n, r in
                   zip(need, old or [0] * len(need), strict=True)]
        if math.prod(new) * max(self.cols[0].n, 1) >= (1 << _RADIX_KEY_BITS):
            raise _RadixOverflow
        if new == old:
            return
        level = self.levels[0]
        if level.n:   # same group codes under the new radices (keys in code order)
            keys = self._recompose(list(self._split(level.keys(), old)), new)
            fresh = IntCodes()
            fresh.rows_hint = level.rows_hint
            fresh.encode(keys)
            self.levels[0] = fresh
        self.radices = new

    @staticmethod
    def _split(keys: np.ndarray, radices: list[int]) -> np.ndarray:
        """Return the digits of mixed-radix keys: (columns, keys) int32 codes."""
        from ._kernels.counting_radix import radix_digits

        return radix_digits(_ro(keys, np.int64), _ro(np.array(radices, dtype=np.int64),
                                                      np.int64))

    @staticmethod
    def _recompose(comps: list[np.ndarray], radices: list[int]) -> np.ndarray:
        key = comps[0].astype(np.int64)
        for c, r in zip(comps[1:], radices, strict=True):
            key = key * r + c
        return key

    def components(self) -> list[np.ndarray]:
        """Per-column codes of every group code (multi-column keys)."""
        if self.radix:
            return list(self._split(self.levels[0].keys(), self.radices))
        codes = None
        comps: list[np.ndarray] = []
        for level in reversed(self.levels):
            keys = level.keys() if codes is None else level.keys()[codes]
            comps.append((keys & _PAIR_MASK).astype(np.int32))
            codes = (keys >> _PAIR_SHIFT).astype(np.int64)
        comps.append(codes.astype(np.int32))
        return comps[::-1]

    def canonical(self, gused: np.ndarray) -> tuple[np.ndarray, pa.Table]:
        """``(gorder, keys)``: the used group codes in key order, and their key table."""
        if not self.levels:
            gorder, labels = self.cols[0].sorted_used(gused)
            return gorder, pa.table({self.names[0]: labels})
        from ._kernels.counting_radix import canonical_order

        orders = [col.sorted_order() for col in self.cols]
        cards = [col.n for col in self.cols]
        span = math.prod(cards)
        if self._table_order_fits(span):
            gorder, sorted_comps = self._table_order(gused, orders, cards)
            return gorder, self._key_table(sorted_comps)
        comps = self.components()
        ranks = [_ranks_of(order) for order in orders]
        if span < (1 << 62):   # the ranks as one int64 key (canonical_order)
            gorder, sorted_comps = canonical_order(
                _ro(np.stack(comps), np.int32), _ro(gused, np.bool_),
                _ro(np.concatenate(ranks), np.int32),
                _ro(np.concatenate(orders).astype(np.int32), np.int32),
                _ro(np.cumsum([0] + cards[:-1]), np.int64), _ro(np.array(cards), np.int64),
                int(span))
        else:
            gkeep = np.flatnonzero(gused)
            perm = np.lexsort([rank[c[gkeep]] for rank, c in zip(ranks, comps,
                                                                  strict=True)][::-1])
            gorder = gkeep[perm].astype(np.int64)
            sorted_comps = [c[gorder] for c in comps]
        return gorder, self._key_table(sorted_comps)

    def _table_order_fits(self, span: int) -> bool:
        """Return whether :meth:`_table_order` applies.

        It does to mixed-radix keys in a direct-address table when ``span`` (the tuples of
        column codes) is within twice its slots.
        """
        level = self.levels[0]
        return self.radix and not level.hash and span <= 2 * level.table.size + 4096

    def _table_order(self, gused: np.ndarray, orders: list[np.ndarray], cards: list[int]
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Return :meth:`canonical`'s order and column codes from the direct key table.

        Every tuple of codes is visited in label order
        (``_kernels.counting_radix.radix_table_sorted``): no sort, no inverse map.
        """
        from ._kernels.counting_radix import radix_table_sorted

        weights = [math.prod(self.radices[j:]) for j in range(len(cards))]
        gorder = np.empty(gused.shape[0] + 1, dtype=np.int64)
        comps = np.empty((len(cards), gused.shape[0] + 1), dtype=np.int32)
        level = self.levels[0]
        m = radix_table_sorted(
            level.table, int(level.base), _ro(gused, np.bool_),
            _ro(np.concatenate(orders).astype(np.int64), np.int64),
            _ro(np.cumsum([0] + cards[:-1]), np.int64), _ro(np.array(cards), np.int64),
            _ro(np.array(weights, dtype=np.int64), np.int64), gorder, comps)
        return gorder[:m], comps[:, :m]

    def _key_table(self, sorted_comps: Any) -> pa.Table:
        """Return the labels of the groups' column codes (``(k, m)``), one column per key."""
        return pa.table({name: col.labels_of(cc.astype(np.int64))
                         for name, col, cc in zip(self.names, self.cols, sorted_comps,
                                                  strict=True)})


# ============================================================================ rows
@dataclass(frozen=True)
class Profile:
    """The canonical SVPI frequency profile of a table and the group of each kept row.

    The arrays of :class:`fastpriv.Release` (see its module notes): ``indptr``, ``codes``,
    ``counts``, ``sizes`` over the groups of ``keys`` (sorted key tuples) and the sorted
    ``values``; ``row_group`` (int32) is the group of every row kept by the null policy.
    """

    indptr: np.ndarray
    codes: np.ndarray
    counts: np.ndarray
    sizes: np.ndarray
    keys: pa.Table
    values: pa.Array
    row_group: np.ndarray | None


def streamable(data: Any) -> bool:
    """Return whether :func:`encode_rows` reads ``data`` (a path, a Dataset or a Table)."""
    if isinstance(data, (str, os.PathLike)):
        return os.path.exists(os.fspath(data))
    if isinstance(data, pa.Table):
        # a small table in memory is read faster whole (Adult, 45k rows: 2.1 vs 3.1 ms)
        return data.num_rows >= _STREAMED_TABLE_ROWS
    mod = type(data).__module__
    return mod.startswith("pyarrow") and hasattr(data, "scanner") and hasattr(data, "schema")


def source_schema(data: Any, param: str = "data") -> pa.Schema:
    """Return the schema of a streamable source, without reading its rows."""
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        with reading(path, param):
            if is_csv(path) and os.path.isfile(path):
                import pyarrow.csv as pacsv

                try:
                    return pacsv.open_csv(
                        path, parse_options=pacsv.ParseOptions(
                            delimiter=sniff_delimiter(path)),
                        convert_options=pacsv.ConvertOptions(strings_can_be_null=True)).schema
                except (pa.ArrowInvalid, LookupError, UnicodeDecodeError) as exc:
                    raise InputError(f"{param}: cannot read {path!r} as CSV: "
                                     f"{str(exc).splitlines()[0]}") from None
            return open_dataset(path, param=param).schema
    return data.schema


class _Buffer:
    """A growing int32 column (preallocated when the row count is known)."""

    def __init__(self, size: int | None) -> None:
        self.a = np.empty(size if size is not None else 1 << 20, dtype=np.int32)
        self.n = 0

    def append(self, x: np.ndarray) -> None:
        m = x.shape[0]
        if self.n + m > self.a.size:
            grown = np.empty(max(2 * self.a.size, self.n + m), dtype=np.int32)
            grown[:self.n] = self.a[:self.n]
            self.a = grown
        self.a[self.n:self.n + m] = x
        self.n += m

    def tail(self, m: int) -> np.ndarray:
        """Return the next ``m`` slots (writable; the caller then advances ``n``)."""
        if self.n + m > self.a.size:
            grown = np.empty(max(2 * self.a.size, self.n + m), dtype=np.int32)
            grown[:self.n] = self.a[:self.n]
            self.a = grown
        return self.a[self.n:self.n + m]

    def result(self) -> np.ndarray:
        return self.a if self.n == self.a.size else self.a[:self.n].copy()


class _Scan:
    """One pass over the batches: group code per row, values counted or kept per row."""

    def __init__(self, keys: list[str], sensitive: str, total: int | None,
                 dense: bool, radix: bool = True, kc: KeyCodes | None = None) -> None:
        self.kc = kc if kc is not None else KeyCodes(keys, radix=radix)
        for lab in self.kc.cols:
            lab.strs.rows_hint = lab.ints.rows_hint = total or 0
            lab.strs.rows_seen = 0   # a restart encodes the rows seen so far again
            lab.strs.ahead.clear()
        for level in self.kc.levels:   # mixed-radix keys: a direct table sized for the scan
            level.rows_hint = total or 0
        self.vc = LabelCodes(sensitive)
        self.gbuf = _Buffer(total)
        self.vbuf = None if dense else _Buffer(total)
        self.state = CountState(DENSE_STATE_CELLS) if dense else None
        self.total = total
        self.seen = 0
        self.csv = False      # the source is a CSV file (see _add_batch)
        # a one-thread executor (set by _run_scan on several threads): a large state's
        # batch is counted there while this thread encodes the next batch's keys
        self.counter: Any = None
        self.pending: Any = None   # the count in flight (a Future of its spill count)

    def settle(self) -> None:
        """Wait for the count in flight, if any (before the state is grown or read)."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self.state.counted(pending.result())

    def add(self, batch: pa.RecordBatch, n_keys: int) -> bool:
        """Encode (and count) one batch; False when the dense state would overflow."""
        from ._kernels.counting import dense_add, dense_add_coded, dense_add_partitioned

        idx, remap = self.vc.encode_pair(batch.column(n_keys))
        key = batch.column(0)
        lab = self.kc.cols[0]
        if n_keys == 1 and _plain_int(lab, key):   # codes straight into the row buffer
            lab._set_type(key.type)
            n = len(key)
            g = lab.ints.encode(_ro(key.to_numpy(), np.int64), self.gbuf.tail(n))
            self.gbuf.n += n
        else:
            n = batch.num_rows
            g = self.kc.encode([batch.column(i) for i in range(n_keys)], self.gbuf.tail(n))
            self.gbuf.n += n
        if self.state is None:
            n = idx.shape[0]
            _remapped(idx, remap, self.vbuf.tail(n))
            self.vbuf.n += n
            return True
        st = self.state
        self.settle()
        rows = max(self.total or 0, self.gbuf.n)
        ahead = 0
        if self.gbuf.n == g.size and rows > g.size and g.size >= 2 * _RADIX_MIN_ROWS:
            # the first batch: when its occupancy says the groups of the whole scan cannot
            # fit, restart sparse now rather than after the batches that fill the matrix;
            # when they fit, size the matrix for them now (a quarter above the estimate)
            grows = expected_distinct(g.size, self.kc.n, rows)
            if not st._ensure_dense(grows, self.vc.n, rows, grow=False):
                return False
            ahead = grows + grows // 4
        if not st._ensure_dense(self.kc.n, self.vc.n, rows, ahead=ahead):
            return False
        st.reserve(g.size)
        g, idx = _ro(g, np.int32), _ro(idx, np.int32)
        stride = int(st.stride)
        if self.kc.n * stride >= _PARTITIONED_CELLS and g.size >= _PARALLEL_MIN_ROWS:
            if remap is None:
                remap = _ro(np.arange(self.vc.n, dtype=np.int32), np.int32)
            shift = max(int(math.log2(_PARTITION_BYTES / stride)), 0)
            args = (g, idx, remap, st.mat8, st.mat, stride, int(shift))
            if self.counter is not None:   # rows of their own; the state waits (settle)
                self.pending = self.counter.submit(dense_add_partitioned, *args)
            else:
                st.counted(dense_add_partitioned(*args))
        elif remap is None:
            st.counted(dense_add(g, idx, st.mat8, st.mat, stride))
        else:
            st.counted(dense_add_coded(g, idx, remap, st.mat8, st.mat, stride))
        return True

    def prefetch(self, batch: pa.RecordBatch, n_keys: int, pool: Any) -> bool:
        """Start bucketing a single string key column of ``batch`` on ``pool``.

        True if started (:meth:`StrCodes.prefetch`): the caller then adds the previous
        batch while the worker hashes this one. Batches with nulls are filtered before
        they are added (a different array), so they are not prefetched.
        """
        lab = self.kc.cols[0]
        key = batch.column(0)
        if n_keys != 1 or lab.kind != "str" or not isinstance(key, pa.Array) or \
                pa.types.is_dictionary(key.type) or \
                any(batch.column(i).null_count for i in range(batch.num_columns)):
            return False
        return lab.strs.prefetch(key, pool)

    def profile(self) -> Profile:
        """Sort the labels, renumber the row codes in place, build the CSR profile."""
        self.settle()
        from ._kernels.counting import (
            DENSE_CELLS,
            count_pairs,
            count_pairs_parallel,
            dense_profiles_gathered,
            dense_used,
            used_codes,
        )

        group = self.gbuf.result()
        if self.state is None:
            gused = used_codes(group, int(self.kc.n))
        else:   # one pass over the matrix, not over the rows
            mat8, mat, mat64 = self.state.dense_parts()
            stride = int(self.state.stride)
            gused, vused = dense_used(mat8, mat, mat64, stride, int(self.kc.n), int(self.vc.n),
                                      _chunks_for(int(self.kc.n)))
        for lab in self.kc.cols:   # the scan is over: no more lookups by string
            lab.strs.drop_index()
        gorder, key_table = self.kc.canonical(gused)
        grank = np.full(int(self.kc.n), -1, dtype=np.int32)
        grank[gorder] = np.arange(gorder.size, dtype=np.int32)
        if self.state is None:
            value = self.vbuf.result()
            vrank, values = self._value_ranks(used_codes(value, int(self.vc.n)))
            _remap_rows(value, vrank)
            _remap_rows(group, grank)
            args = (_ro(group, np.int32), _ro(value, np.int32),
                    _ro(np.empty(0, dtype=np.int64), np.int64), int(gorder.size),
                    len(values), int(DENSE_CELLS))
            threads = current_threads()
            indptr, codes, counts = (count_pairs_parallel(*args, int(threads))
                                     if threads > 1 and group.size >= _THREADED_ROWS
                                     else count_pairs(*args))
            sizes = np.add.reduceat(counts, indptr[:-1])
            return Profile(indptr, codes, counts, sizes, key_table, values, group)
        vrank, values = self._value_ranks(vused)
        indptr, codes, counts, sizes, _ = dense_profiles_gathered(
            mat8, mat, mat64, stride, grank, _ro(gorder, np.int64), _ro(vrank, np.int32),
            int(self.vc.n), _chunks_for(gorder.size))
        _remap_rows(group, grank)
        return Profile(indptr, codes, counts, sizes, key_table, values, group)

    def _value_ranks(self, vused: np.ndarray) -> tuple[np.ndarray, pa.Array]:
        """``(vrank, values)``: rank of every used value code among the sorted labels."""
        vrank_all = self.vc.ranks()
        keep = np.flatnonzero(vused)
        order = np.argsort(vrank_all[keep], kind="stable")
        vrank = np.full(vused.size, -1, dtype=np.int32)
        vrank[keep[order]] = np.arange(keep.size, dtype=np.int32)
        return vrank, self.vc.labels().take(pa.array(keep[order]))


def _chunks_for(n_groups: int) -> int:
    """Return the chunks of a pass over ``n_groups`` groups.

    Two per thread of the caller's setting from ``_THREADED_GROUPS`` groups on, else one.
    """
    threads = current_threads()
    return 2 * threads if threads > 1 and n_groups >= _THREADED_GROUPS else 1


def _remap_rows(codes: np.ndarray, remap: np.ndarray) -> None:
    """``codes[i] = remap[codes[i]]`` in place, in chunks on threads for large arrays."""
    from ._kernels.counting import remap_inplace

    n = codes.shape[0]
    threads = current_threads()
    chunks = 2 * threads if threads > 1 and n >= _THREADED_ROWS else 1
    run_chunks(lambda c: remap_inplace(codes[slice(*chunk_bounds(n, chunks, c))], remap),
               chunks)


def encode_rows(data: Any, *, keys: list[str], sensitive: str, nulls: str,
                batch_size: int = 1 << 20) -> Profile | None:
    """Stream ``data`` and return its canonical profile and row groups (see the module notes).

    Rows are counted during the scan into a dense (group × value) state while it fits
    (``DENSE_STATE_CELLS``); if it outgrows that, the scan restarts keeping the value code
    of every row, counted at the end by ``count_pairs`` (bucketed by group), with the key
    maps built so far (same codes for the same keys). Returns None
    when the whole-table path must decide (see :func:`_run_scan`): a null under
    ``nulls="error"`` (the caller reads the table to name every column with its null
    count), a CSV file its incremental reader cannot type.
    """
    total = count_rows(data)
    csv = isinstance(data, (str, os.PathLike)) and is_csv(os.fspath(data))
    dense, radix = True, True
    kc = None
    while True:
        scan = _Scan(keys, sensitive, total, dense, radix, kc)
        scan.csv = csv
        try:
            if _run_scan(scan, data, keys + [sensitive], nulls, batch_size) is None:
                return None
        except _RadixOverflow:   # key columns too many-valued for one int64 key
            radix = False
            continue
        if scan.seen >= 0 or not dense:
            break
        dense, kc = False, scan.kc   # the key codes so far stay valid: rows re-encode to them
    if scan.seen == 0:
        raise InputError("data is empty: a release needs at least one row")
    if scan.gbuf.n == 0:
        raise InputError("data has no rows left after dropping nulls")
    return scan.profile()


def _run_scan(scan: _Scan, data: Any, cols: list[str], nulls: str,
              batch_size: int) -> _Scan | None:
    """Feed every batch to ``scan``; ``scan.seen`` is -1 if the dense state overflowed.

    None when the whole-table path must decide: a null under ``nulls="error"``, or a CSV
    file that its incremental reader cannot type (a column typed from the first block that
    a later block contradicts, text that is not UTF-8): ``Release.from_table`` then reads
    it whole, which raises the error naming the column.
    """
    threads = current_threads()
    pool = ThreadPoolExecutor(1, thread_name_prefix="fastpriv-keys") if threads > 1 else None
    if threads > 1 and scan.state is not None:
        scan.counter = ThreadPoolExecutor(1, thread_name_prefix="fastpriv-count")
    try:
        held = None   # a batch whose successor is fetched first, to bucket its keys ahead
        for batch in iter_batches(data, cols, batch_size=batch_size, dictionary=True,
                                  decoders=_DECODERS if threads > 1 else 1):
            if pool is not None and scan.prefetch(batch, len(cols) - 1, pool):
                todo, held = ([held] if held is not None else []), batch
            else:
                todo, held = [b for b in (held, batch) if b is not None], None
            for b in todo:
                if not _add_batch(scan, b, cols, nulls):
                    return None
                if scan.seen < 0:
                    return scan
        if held is not None and not _add_batch(scan, held, cols, nulls):
            return None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
            UnicodeDecodeError):
        if scan.csv:
            return None
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if scan.counter is not None:   # the scan's last count is read by settle()
            scan.counter.shutdown(wait=True)
            scan.counter = None
    return scan


def _add_batch(scan: _Scan, batch: pa.RecordBatch, cols: list[str], nulls: str) -> bool:
    """Apply the null policy to one batch and add it; False: the caller must fall back."""
    if scan.csv and any(pa.types.is_binary(t) or pa.types.is_large_binary(t)
                        for t in batch.schema.types):
        return False   # CSV text that is not UTF-8: read_csv names the column
    scan.seen += batch.num_rows
    batch, _ = nans_as_nulls(batch, cols)   # NaN is a null (the null policy decides)
    if any(batch.column(i).null_count for i in range(len(cols))):
        if nulls == "error":
            return False
        if nulls == "drop":
            mask = None
            for i in range(len(cols)):
                m = pc.is_valid(batch.column(i))
                mask = m if mask is None else pc.and_(mask, m)
            batch = batch.filter(mask)
    if batch.num_rows and not scan.add(batch, len(cols) - 1):
        scan.seen = -1
    return True


# ============================================================================ stream counts
class StreamCounts:
    """Streaming (group, value) counts, mergeable by addition.

    The state of :class:`fastpriv.counts.CountAccumulator` and of ``Release.from_batches``
    (parameters and behaviour documented there).
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
    def add(self, batch: pa.RecordBatch | pa.Table) -> "StreamCounts":
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
        if self.weight is not None:   # checked on every row, as Release.from_table does
            table, _ = apply_weights(table, self.weight)
        table, dropped = apply_null_policy(table, self.keys + [self.sensitive], self.nulls)
        self.rows_dropped += dropped
        if self.weight is not None:
            weights = table.column(self.weight).to_numpy().astype(np.int64)
        if table.num_rows == 0:
            return self
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
        vcodes = _remapped(vidx, vremap, None)
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
            stop, code, spills = count_direct(x, int(ints.base), ints.table, int(ints.n), v,
                                              vremap, st.mat8, st.mat, int(st.stride),
                                              int(st.gcap), int(start))
            st.counted(spills)
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

        if w.size == 0:
            self.rows_counted += int(g.size)
        else:   # weights (or a merged state's counts): the running total stays in int64
            self.rows_counted = check_total(
                w, f"weight column {self.weight!r}" if self.weight else "counts",
                start=self.rows_counted)
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
                progress: Callable[[int, int], Any] | None = None) -> "StreamCounts":
        """Count every batch of ``data``; returns ``self``.

        ``data``: a Parquet file or directory, a CSV file, a ``pyarrow.dataset.Dataset``, a
        RecordBatchReader, a table, or any iterable of record batches / tables. Only the
        key and sensitive columns are read (column projection). ``progress``, if given, is
        called as ``progress(rows_seen, bytes_seen)`` after every batch (bytes of the
        decoded Arrow columns).
        """
        self._rows_hint = self.rows_seen + (count_rows(data) or 0)
        for lab in self._cols:   # string maps sized for the whole source
            lab.strs.rows_hint = self._rows_hint
        for batch in iter_batches(data, self.columns, batch_size=batch_size, dictionary=True):
            self.add(batch)
            if progress is not None:
                progress(self.rows_seen, self.bytes_seen)
        return self

    # ------------------------------------------------------------------ merge
    def merge(self, other: "StreamCounts") -> "StreamCounts":
        """Add another accumulator's counts into this one (counts merge by addition).

        Both must count the same key and sensitive columns. ``other`` is not modified.
        Merging is associative and commutative up to the final :meth:`to_release`, which
        is identical for any order and any split of the data. Returns ``self``.
        """
        if not isinstance(other, StreamCounts):
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
        vrank_all = self._values.ranks()
        labels_all = self._values.labels()
        keep_v = np.flatnonzero(vused)
        sub = vrank_all[keep_v]
        order = np.argsort(sub, kind="stable")
        vrank = np.full(vused.size, -1, dtype=np.int32)
        vrank[keep_v[order]] = np.arange(keep_v.size, dtype=np.int32)
        values = labels_all.take(pa.array(keep_v[order]))
        gorder, keys = self._keymap.canonical(gused)
        return gorder, keys, vrank, values

    def to_profile(self) -> Profile:
        """Return the canonical SVPI profile of everything counted so far (no row groups)."""
        from ._kernels.counting import (
            DENSE_CELLS,
            count_pairs,
            count_pairs_parallel,
            dense_profiles_gathered,
        )
        from ._threads import n_jobs as _n_jobs

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
                mat8, mat, mat64 = st.dense_parts()
                indptr, codes, counts, sizes, vtot = dense_profiles_gathered(
                    mat8, mat, mat64, int(st.stride), grank, _ro(gorder, np.int64),
                    _ro(vrank, np.int32), int(V), _chunks_for(n_out))
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
        return Profile(indptr, codes, counts, sizes, keys, values, None)

    def __repr__(self) -> str:
        mode = "sparse" if self._state.sparse else "dense"
        return (f"{type(self).__name__}(keys={self.keys!r}, sensitive={self.sensitive!r}, "
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
