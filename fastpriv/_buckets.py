"""Split rows or classes into buckets by a hash of their QI values, as fastpriv compares keys.

The class folds that cannot hold every class at once (Dask's ``split_out`` buckets, a
stream spilled to disk: :func:`spill`, :func:`bucket_batches`) send every row of a class
to one bucket: :func:`key_hash` gives
equal hashes to the keys fastpriv holds equal — NaN hashes as null, ``-0.0`` as ``0.0`` —
and depends only on a value's type and bits, so it is the same in every batch, partition
and process (numpy arithmetic modulo 2**64; no per-process salt).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

#: the hash of a null (and of NaN)
_NULL = np.uint64(0x9E3779B97F4A7C15)
_PRIME = np.uint64(1099511628211)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer: every input bit moves every output bit (uint64, wrapping)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _bytes_hash(col: Any) -> np.ndarray:
    """Hash each value of a string or binary array by its bytes (Σ byte · P**position)."""
    import pyarrow as pa

    col = col.cast(pa.large_binary())
    n = len(col)
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int64)[col.offset:col.offset + n + 1]
    data = col.buffers()[2]
    raw = (np.frombuffer(data, dtype=np.uint8) if data is not None
           else np.zeros(0, dtype=np.uint8))[offsets[0]:offsets[-1]].astype(np.uint64)
    lengths = np.diff(offsets)
    owner = np.repeat(np.arange(n), lengths)
    pos = np.arange(raw.size, dtype=np.int64) - (offsets[:-1] - offsets[0])[owner]
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(max(int(lengths.max(initial=0)), 1), 1099511628211,
                                    dtype=np.uint64))
        sums = np.zeros(n, dtype=np.uint64)
        np.add.at(sums, owner, raw * powers[pos])
    return _mix(sums ^ lengths.astype(np.uint64))


def _column_hash(col: Any) -> np.ndarray:
    """Hash one column's values (nulls included), keys fastpriv holds equal alike."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_floating(col.type):
        col = pc.add(pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col), 0.0)
        col = col.cast(pa.float64())
    null = col.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_floating(col.type):
        bits = pc.fill_null(col, 0.0).to_numpy(zero_copy_only=False).view(np.uint64)
        h = _mix(bits)
    elif pa.types.is_integer(col.type) or pa.types.is_boolean(col.type):
        zero = pa.scalar(False if pa.types.is_boolean(col.type) else 0, col.type)
        values = pc.fill_null(col, zero).to_numpy(zero_copy_only=False)
        h = _mix(values.astype(np.int64).view(np.uint64))
    else:
        text = col if pa.types.is_string(col.type) or pa.types.is_large_string(col.type) \
            or pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type) \
            else col.cast(pa.string())
        h = _bytes_hash(pc.fill_null(text, pa.scalar(b"" if "binary" in str(text.type)
                                                     else "", text.type)))
    h[null] = _NULL
    return h


def key_hash(table: Any, qi: Sequence[str]) -> np.ndarray:
    """Return a 64-bit hash of each row's QI values, equal for keys fastpriv holds equal."""
    out = np.zeros(table.num_rows, dtype=np.uint64)
    for c in qi:
        col = table.column(c)
        col = col.combine_chunks() if hasattr(col, "combine_chunks") else col
        with np.errstate(over="ignore"):
            out = out * _PRIME ^ _column_hash(col)
    return out


def split_by_key(table: Any, qi: Sequence[str], buckets: int) -> tuple:
    """Split ``table`` into ``buckets`` tables by :func:`key_hash` (row order kept in each)."""
    which = (key_hash(table, qi) % np.uint64(buckets)).astype(np.int64)
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(buckets + 1))
    table = table.take(order)
    return tuple(table.slice(int(bounds[b]), int(bounds[b + 1] - bounds[b]))
                 for b in range(buckets))


def spill(batches: Iterable[Any], qi: Sequence[str], buckets: int, folder: str,
          name: str) -> list[str] | None:
    """Write the rows of ``batches`` into ``buckets`` Arrow IPC files by :func:`key_hash`.

    Every row of a class lands in the same file (``folder/name-b.arrow``), so each file
    holds complete classes, about 1/``buckets`` of them. Returns the paths, or None when
    no batch came (the schema is unknown). Batches must share one schema.
    """
    import os

    import pyarrow as pa

    from .errors import InputError

    writers: list = []
    paths: list[str] = []
    schema = None
    try:
        for batch in batches:
            table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) \
                else batch
            if schema is None:
                schema = table.schema
                paths = [os.path.join(folder, f"{name}-{b}.arrow") for b in range(buckets)]
                writers = [pa.ipc.new_file(p, schema) for p in paths]
            elif not table.schema.equals(schema):
                raise InputError(f"{name}: its batches have different columns or types "
                                 f"({table.schema} after {schema})")
            for writer, part in zip(writers, split_by_key(table, qi, buckets), strict=True):
                if part.num_rows:
                    writer.write_table(part)
    finally:
        for writer in writers:
            writer.close()
    return paths if schema is not None else None


def bucket_batches(path: str) -> Iterator[Any]:
    """Yield the record batches of one file written by :func:`spill`."""
    import pyarrow as pa

    with pa.memory_map(path) as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
