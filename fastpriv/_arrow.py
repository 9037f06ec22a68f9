"""Arrow boundary: turn what users have into Arrow, and Arrow columns into int32 codes.

Accepted inputs (:func:`as_table`, :func:`iter_batches`): ``pyarrow.Table``,
``RecordBatch``, ``RecordBatchReader``, ``pyarrow.dataset.Dataset``, a Parquet file or
directory (``key=value`` subfolders are hive partitions: their keys are columns, as
``pyarrow.dataset.dataset(path, partitioning="hive")`` reads them), a CSV file (optionally
``.gz``/``.bz2``/``.zst``), pandas and polars DataFrames, any object exporting the Arrow
PyCapsule stream interface, and a ``dict`` of columns. pandas/polars are never imported
here: they convert through their own Arrow export. Spark and Dask DataFrames are refused
(:func:`refuse_cluster_frame`): reading one would pull every row to this process;
:func:`fastpriv.spark.release` and :func:`fastpriv.distributed.release_from_dask` count
where the data lives.

Streaming (:func:`iter_batches`): Parquet is read one row group at a time with the next
row groups decoded on a background thread (or by the consumer when it would wait) —
memory bounded by three row groups of the projected columns (the ``pyarrow.dataset``
scanner buffers decoded batches ahead without bound when its consumer is slower than the
decoder); CSV incrementally; readers and iterators pass through.

Encoding (:func:`encode_column`) yields dense int32 codes whose order is the sorted order of
the labels, so a release built from any batching or any source of the same data is
identical (``Release.equals``), and ordered attributes (t-closeness EMD) keep their order.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._lazy_pandas import defer_pandas
from ._validation import INT64_MAX, check_choice, check_columns, check_total
from .errors import InputError, InputTypeError

defer_pandas()    # else pyarrow imports pandas with its first array (fastpriv._lazy_pandas)

__all__ = ["as_table", "iter_batches", "encode_column", "encode_keys", "Encoded", "NULL_POLICIES",
           "count_rows", "is_large_source"]

NULL_POLICIES = ("error", "drop", "value")

_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".tsv")


#: Table formats of a path, by suffix (lower case); the content decides when none matches.
_FORMATS = (("parquet", (".parquet", ".pq", ".parq")),
            ("ipc", (".arrow", ".feather", ".ipc", ".arrows")),
            ("json", (".jsonl", ".ndjson", ".json")),
            ("csv", _CSV_SUFFIXES))


def file_format(path: str) -> str:
    """Return the table format of a file or folder: the one registry of input formats.

    ``"parquet"``, ``"ipc"`` (Arrow IPC file / Feather v2), ``"json"`` (JSON lines) or
    ``"csv"`` (any delimiter, :func:`sniff_delimiter`; gzip, bz2, zstd). The suffix decides;
    without a known one the first bytes do (``PAR1``, ``ARROW1``, ``{``), and text is CSV.
    A folder has the format of its first data file (hidden and ``_`` files skipped).
    """
    low = str(path).lower()
    for fmt, suffixes in _FORMATS:
        if low.endswith(suffixes):
            return fmt
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                if not name.startswith((".", "_")):
                    return file_format(os.path.join(root, name))
        return "parquet"
    if not os.path.isfile(path):
        return "parquet"
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head[:4] == b"PAR1":
        return "parquet"
    if head == b"ARROW1":
        return "ipc"
    return "json" if head.lstrip()[:1] == b"{" else "csv"


def is_csv(path: str) -> bool:
    """Return True when ``path`` holds CSV text (:func:`file_format`)."""
    return file_format(path) == "csv"


def sniff_delimiter(path: str) -> str:
    """Guess a CSV file's delimiter from its first line: ``;``, tab, ``|`` or ``,``.

    The one of them that occurs most often in the header wins (ARX writes ``;``); a header
    with none of them is one column, read with ``,``.
    """
    import gzip

    opener = gzip.open if str(path).lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            head = fh.readline(1 << 20)
    except OSError:
        return ","
    return delimiter_of_header(head)


def delimiter_of_header(head: bytes) -> str:
    """Return the delimiter a CSV header line uses: ``;``, tab, ``|`` or ``,``.

    The most frequent of them wins; ``,`` when the line holds none (one column).
    """
    head = head.split(b"\n", 1)[0]
    counts = {d: head.count(d.encode()) for d in (",", ";", "\t", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def read_csv(path: str, *, encoding: str = "utf8", param: str = "data",
             delimiter: str | None = None) -> pa.Table:
    """Read a CSV file as pandas and DuckDB do: empty fields are missing values (nulls).

    Text must be valid in ``encoding`` (default UTF-8): invalid bytes raise
    :class:`~fastpriv.errors.InputError` naming the column and suggesting an encoding,
    instead of labels silently read as bytes. ``delimiter`` defaults to the one the header
    line uses (:func:`sniff_delimiter`: ``,``, ``;`` as in ARX's files, tab or ``|``).
    """
    import pyarrow.csv as pacsv

    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError):
        raise InputError(f"encoding: unknown text encoding {encoding!r}") from None
    if delimiter is None:
        delimiter = sniff_delimiter(path)
    block = _CSV_BLOCK
    while True:
        try:
            table = pacsv.read_csv(
                path, read_options=pacsv.ReadOptions(encoding=encoding, block_size=block),
                parse_options=pacsv.ParseOptions(delimiter=delimiter),
                convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
            break
        except pa.ArrowInvalid as exc:
            bigger = _larger_block(exc, block, path)
            if bigger is None:
                raise InputError(f"{param}: cannot read {path!r} as CSV ({encoding}): "
                                 f"{str(exc).splitlines()[0]}") from None
            block = bigger
        except UnicodeError as exc:   # decoding (UnicodeDecodeError) or a codec's own check
            raise InputError(f"encoding: {path!r} is not {encoding} text "
                             f"({str(exc).splitlines()[0]}); give the file's encoding, e.g. "
                             "encoding='utf-8' or 'latin-1'") from None
    binary = [f.name for f in table.schema if pa.types.is_binary(f.type)
              or pa.types.is_large_binary(f.type)]
    if binary:
        raise InputError(f"{param}: column {binary[0]!r} of {path!r} is not valid {encoding} "
                         "text; give the file's encoding (CLI: --encoding latin-1; Python: "
                         "fastpriv.read_csv(path, encoding='latin-1'))")
    return table


#: First block size of the CSV readers (Arrow's default). A row longer than a block (one
#: enormous field) makes Arrow fail ("straddling object straddles two block boundaries");
#: the read is then retried with larger blocks (:func:`_larger_block`).
_CSV_BLOCK = 1 << 20
_CSV_BLOCK_MAX = (1 << 31) - 1


def _larger_block(exc: Exception, block: int, path: str) -> int | None:
    """Return the next block size after a row did not fit in ``block`` bytes, else None.

    None when ``exc`` is another error or the block already held the whole file (or the
    2 GiB Arrow limit). Sizes grow 64x to 64 MiB, then 4x, capped at the file's size.
    """
    if "straddl" not in str(exc) or block >= _CSV_BLOCK_MAX:
        return None
    try:
        size = os.path.getsize(path)
    except OSError:
        size = _CSV_BLOCK_MAX
    if path.lower().endswith((".gz", ".bz2", ".zst")):
        size = _CSV_BLOCK_MAX   # compressed: the text may be far larger than the file
    if block > size:
        return None
    step = max(block * 64, 1 << 26) if block < (1 << 26) else block * 4
    return min(step, size + 1, _CSV_BLOCK_MAX)


@contextlib.contextmanager
def reading(path: str, param: str = "data") -> Iterator[None]:
    """Turn Arrow's complaints about a file it cannot read into an InputError naming it.

    A corrupt or truncated file, a schema Arrow cannot read (duplicate column names, say)
    or an unreadable file is bad input, not a bug.
    """
    try:
        yield
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
            PermissionError, IsADirectoryError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{param}: cannot read {path!r}: {first}") from None


def _from_pandas(df: Any, param: str,
                 only: tuple[Mapping[str, Sequence[str]], list[str]] | None = None) -> pa.Table:
    """Convert a pandas DataFrame to Arrow, with clear errors for what Arrow cannot convert.

    With ``only`` (see :func:`_used`), just the used columns are converted.
    """
    if not hasattr(df, "columns"):
        raise InputTypeError(f"{param}: expected a DataFrame, got {type(df).__name__}")
    names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"{param}: the DataFrame has duplicate column names "
                         f"({', '.join(map(repr, twice))}); rename them so each is unique")
    if only is not None:
        df = df.iloc[:, [names.index(c) for c in _used(names, only)]]
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        msg = str(exc)
        col = msg.split("for column ")[-1].split(" with type")[0] if "for column " in msg \
            else "?"
        detail = str(exc.args[0]) if exc.args else msg
        raise InputError(f"{param}: column {col!r} mixes value types that Arrow cannot hold in "
                         f"one column ({detail}); convert it to one type first, e.g. "
                         f"df[{col!r}].astype(str)") from None


def open_dataset(path: str, columns: Sequence[str] | None = None, param: str = "data"):
    """Open a path as a ``pyarrow.dataset`` (None for one CSV file, read by pyarrow.csv).

    The one place where a path becomes a dataset: every reader of a path (whole tables,
    streamed batches, schemas, row counts, :mod:`fastpriv.distributed`) goes through it.
    A folder's ``key=value`` subfolders are hive partitions: their keys are columns, typed
    as ``pyarrow.dataset.dataset(path, partitioning="hive")`` types them. A folder whose
    files disagree on a column (name, case, type) is refused here
    (:func:`fastpriv._folders.check_files_agree`), for every reader alike.
    """
    import pyarrow.dataset as ds

    from ._folders import check_files_agree

    fmt = file_format(path)
    if fmt == "csv" and os.path.isfile(path):
        return None  # read with pyarrow.csv (handles compression, streaming)
    dataset = ds.dataset(path, format=fmt, partitioning="hive")
    check_files_agree(dataset, path, param)
    return dataset


def partition_values(dataset: Any) -> dict[str, dict[str, Any]]:
    """``{file path: {partition column: value}}`` of a hive-partitioned dataset.

    Empty when ``dataset`` has no partition columns. A ``__HIVE_DEFAULT_PARTITION__``
    folder is a null value (None).
    """
    import pyarrow.dataset as ds

    out = {frag.path: ds.get_partition_keys(frag.partition_expression)
           for frag in dataset.get_fragments()}
    names = [c for c in dataset.schema.names if any(c in keys for keys in out.values())]
    if not names:
        return {}
    return {path: {c: keys.get(c) for c in names} for path, keys in out.items()}


def with_partitions(data: Any, values: Mapping[str, Any], schema: pa.Schema,
                    columns: Sequence[str], dictionary: bool = False) -> Any:
    """Add the constant partition columns ``values`` to a batch or table, in ``columns`` order.

    Types are those of ``schema`` (the dataset's); with ``dictionary``, text columns come
    as dictionary arrays of one entry (the consumer maps one label, not every row).
    """
    if not values:
        return data
    n = data.num_rows
    arrays = []
    for c in columns:
        if c not in values:
            arrays.append(data.column(c))
            continue
        typ = schema.field(c).type
        scalar = pa.scalar(values[c], type=typ)
        if dictionary and _is_text(typ):
            idx = pa.array(np.zeros(n, dtype=np.int32),
                           mask=np.full(n, not scalar.is_valid, dtype=bool))
            arrays.append(pa.DictionaryArray.from_arrays(idx, pa.array([values[c]], typ)
                                                         if scalar.is_valid
                                                         else pa.array([], typ)))
        else:
            arrays.append(pa.repeat(scalar, n))
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(arrays, names=list(columns))
    return pa.table(arrays, names=list(columns))


def refuse_cluster_frame(data: Any, param: str = "data") -> None:
    """Refuse a Spark or Dask DataFrame where a table is read: it would be collected whole.

    A Spark DataFrame exports the Arrow stream protocol, so reading it as a table would
    silently pull every row to the driver; the engines' own entry points count where the
    data lives. Detected by the class's module (pyspark is never imported here).
    """
    mod = type(data).__module__
    if mod.startswith("pyspark.sql") or mod.startswith("pyspark.pandas"):
        raise InputTypeError(
            f"{param}: a Spark DataFrame is not read as a table (that would collect every row "
            "to the driver); count it on the cluster with "
            "fastpriv.spark.release(df, sensitive=..., qi=...) and audit that release")
    if mod.startswith("dask") and hasattr(data, "to_delayed"):
        raise InputTypeError(
            f"{param}: a Dask DataFrame is not read as a table (that would compute every row "
            "on the client); count it on the cluster with "
            "fastpriv.distributed.release_from_dask(df, sensitive=..., qi=...) and audit that "
            "release")


def as_table(data: Any, columns: Sequence[str] | None = None, *, param: str = "data",
             roles: Mapping[str, Sequence[str]] | None = None) -> pa.Table:
    """Convert ``data`` to a ``pyarrow.Table`` (projected to ``columns`` when given).

    Unknown columns raise ``ValueError`` listing the available ones. pandas DataFrames are
    converted without their index; polars through ``to_arrow`` (zero-copy).

    ``roles`` maps a parameter name to the columns the caller reads for it (``{"group":
    ["g"], "sensitive": ["s"]}``): each is checked first (the error names the parameter),
    then a DataFrame, file or dataset is converted or read for those columns only, so
    columns the caller does not use are never converted (they may hold what Arrow cannot
    convert). A Table is returned whole.
    """
    only = None
    if columns is not None:
        only = ({param: list(columns)}, list(columns))
    elif roles is not None:
        only = (roles, list(dict.fromkeys(c for cols in roles.values() for c in cols)))
    table = _to_table(data, columns, param, only=only)
    names = table.column_names
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"{param}: the table has duplicate column names "
                         f"({', '.join(map(repr, twice))}); rename them so each is unique")
    if columns is not None:
        check_columns(columns, table.column_names, param)
        table = table.select(list(columns))
    return _without_views(table)


def _without_views(table: pa.Table) -> pa.Table:
    """Return ``table`` with string/binary view columns as plain strings/binaries.

    The same values in the layout every Arrow kernel takes (pyarrow has no take, filter or
    sort for views): a row selected, dropped or published keeps its exact value.
    """
    for i, field in enumerate(table.schema):
        t = field.type
        plain = pa.string() if _is_view(t, "string") else pa.binary() if _is_view(t, "binary") \
            else None
        if plain is not None:
            table = table.set_column(i, pa.field(field.name, plain, field.nullable,
                                                 field.metadata),
                                     table.column(i).cast(plain))
    return table


def _used(names: Sequence[str],
          only: tuple[Mapping[str, Sequence[str]], list[str]] | None) -> list[str] | None:
    """Return the used columns of ``only`` after checking each role's (``None``: all)."""
    if only is None:
        return None
    roles, used = only
    for role, cols in roles.items():
        check_columns(cols, names, role)
    return used


def _to_table(data: Any, columns: Sequence[str] | None, param: str,
              only: tuple[Mapping[str, Sequence[str]], list[str]] | None = None) -> pa.Table:
    """Read or convert ``data``; ``only`` (roles, used columns) restricts what is read."""
    if isinstance(data, pa.Table):
        return data
    refuse_cluster_frame(data, param)
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if not os.path.exists(path):
            raise InputError(f"{param}: no such file or directory: {path!r}")
        if is_csv(path) and os.path.isfile(path):
            return read_csv(path, param=param)
        with reading(path, param):
            dataset = open_dataset(path, columns, param)
            return dataset.to_table(columns=_used(dataset.schema.names, only))
    mod = type(data).__module__
    if mod.startswith("pyarrow") and hasattr(data, "to_table"):  # pyarrow.dataset.Dataset
        return data.to_table(columns=_used(data.schema.names, only))
    if mod.startswith("pandas"):
        return _from_pandas(data, param, only)
    if mod.startswith("polars"):
        if only is not None:
            names = (data.collect_schema().names() if hasattr(data, "collect_schema")
                     else list(data.columns))
            data = data.select(_used(names, only))
        if hasattr(data, "collect"):  # LazyFrame
            data = data.collect()
        return data.to_arrow()
    if isinstance(data, dict):
        if only is not None:
            keep = set(_used([str(c) for c in data], only))
            data = {c: v for c, v in data.items() if str(c) in keep}
        return pa.table(data)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    raise InputTypeError(
        f"{param}: expected a pyarrow Table/RecordBatch/RecordBatchReader/Dataset, a path "
        f"(Parquet, CSV, Arrow IPC/Feather or JSON lines), a pandas or polars DataFrame, or a "
        f"dict of columns; got {type(data).__name__}"
    )


def iter_batches(data: Any, columns: Sequence[str], *, batch_size: int = 1 << 20,
                 param: str = "data", dictionary: bool = False,
                 decoders: int = 1) -> Iterator[pa.RecordBatch]:
    """Yield record batches of ``columns`` without materializing the whole input.

    Parquet files/directories and Arrow datasets are scanned with column projection; CSV
    files are read incrementally; readers and iterables of batches are passed through.
    With ``dictionary=True``, string and binary columns of Parquet files come as
    dictionary arrays (``read_dictionary``: dictionary pages are not expanded into strings,
    the consumer maps the dictionary once and the rows by index). ``decoders``: Parquet
    row groups decoded ahead, each on its own thread.
    """
    columns = list(columns)
    refuse_cluster_frame(data, param)
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if not os.path.exists(path):
            raise InputError(f"{param}: no such file or directory: {path!r}")
        if is_csv(path) and os.path.isfile(path):
            yield from _csv_batches(path, columns, param)
            return
        with reading(path, param):
            data = open_dataset(path, columns, param)
            if type(data).__name__ == "FileSystemDataset" and \
                    getattr(data.format, "default_extname", "") == "parquet":
                yield from _parquet_batches(data, columns, batch_size, param, dictionary,
                                            decoders)
                return
    mod = type(data).__module__
    if mod.startswith("pyarrow") and hasattr(data, "scanner"):
        check_columns(columns, data.schema.names, param)
        yield from data.scanner(columns=columns, batch_size=batch_size).to_batches()
        return
    if isinstance(data, pa.RecordBatchReader):
        check_columns(columns, data.schema.names, param)
        for batch in data:
            yield batch.select(columns)
        return
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, (pa.Table,)) or mod.startswith(("pandas", "polars")) or isinstance(
            data, dict):
        table = as_table(data, columns, param=param)
        yield from table.to_batches(max_chunksize=batch_size)
        return
    if hasattr(data, "__arrow_c_stream__"):
        yield from iter_batches(pa.RecordBatchReader.from_stream(data), columns,
                                batch_size=batch_size, param=param)
        return
    if hasattr(data, "__iter__"):
        for batch in data:
            if isinstance(batch, pa.Table):
                check_columns(columns, batch.column_names, param)
                yield from batch.select(columns).to_batches(max_chunksize=batch_size)
            elif isinstance(batch, pa.RecordBatch):
                check_columns(columns, batch.schema.names, param)
                yield batch.select(columns)
            else:
                raise InputTypeError(f"{param}: iterator must yield pyarrow RecordBatch or Table, "
                                f"got {type(batch).__name__}")
        return
    raise InputTypeError(f"{param}: cannot stream a {type(data).__name__}")


def _csv_batches(path: str, columns: list[str], param: str) -> Iterator[pa.RecordBatch]:
    """Stream a CSV file; a row longer than a block restarts it with larger blocks.

    The restart skips the rows already yielded (the reader is deterministic), so the
    batches are those of one pass.
    """
    import pyarrow.csv as pacsv

    block, done = _CSV_BLOCK, 0
    while True:
        try:
            reader = pacsv.open_csv(
                path, read_options=pacsv.ReadOptions(block_size=block),
                parse_options=pacsv.ParseOptions(delimiter=sniff_delimiter(path)),
                convert_options=pacsv.ConvertOptions(include_columns=columns,
                                                     strings_can_be_null=True))
            check_columns(columns, reader.schema.names, param)
            seen = 0
            for batch in reader:
                n = batch.num_rows
                if seen + n > done:
                    yield batch.slice(max(done - seen, 0))
                    done = seen + n
                seen += n
            return
        except pa.ArrowInvalid as exc:
            bigger = _larger_block(exc, block, path)
            if bigger is None:
                raise
            block = bigger


def count_rows(data: Any) -> int | None:
    """Return the number of rows of ``data`` when it is cheap to know, else None.

    Cheap: Parquet metadata, in-memory tables; None for CSV files, readers and iterators.
    Used for progress bars.
    """
    try:
        if isinstance(data, (str, os.PathLike)):
            path = os.fspath(data)
            if not os.path.exists(path) or (is_csv(path) and os.path.isfile(path)):
                return None
            return int(open_dataset(path, None).count_rows())
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            return int(data.num_rows)
        if type(data).__module__.startswith("pyarrow") and hasattr(data, "count_rows"):
            return int(data.count_rows())
    except (OSError, pa.ArrowException):  # unreadable metadata: no total, not an error here
        return None
    return None


def is_large_source(data: Any, threshold: int = 64 << 20) -> bool:
    """Return True for a directory (a dataset) or a file of at least ``threshold`` bytes."""
    if not isinstance(data, (str, os.PathLike)):
        return False
    path = os.fspath(data)
    if os.path.isdir(path):
        return True
    try:
        return os.path.getsize(path) >= threshold
    except OSError:
        return False


#: Row groups of up to a batch decoded ahead of the consumer, beyond one per decoder: the
#: reader keeps decoding while the consumer counts and decodes one itself
#: (:func:`_steal`). 10M rows in 1M-row row groups, 10k groups, ``Release.from_table``
#: with the first row group split (:func:`_load_split`), min of 5, four alternated
#: rounds: int keys 56-61 ms against 63-72 with one row group ahead.
_READ_AHEAD = 3

#: Row groups up to this many times ``batch_size`` rows are decoded whole (and the next
#: one prefetched); larger ones are streamed batch by batch.
_ROW_GROUP_WHOLE = 4


def _parquet_batches(dataset: Any, columns: list[str], batch_size: int,
                     param: str, dictionary: bool = False,
                     decoders: int = 1) -> Iterator[pa.RecordBatch]:
    """Yield the record batches of a Parquet dataset, one row group at a time.

    ``decoders`` row groups of read-ahead are decoded on as many background threads
    (different row groups at once); batches come in file order.

    Memory is bounded by ``decoders + 4`` row groups of the projected columns when they
    hold at most ``batch_size`` rows (the one consumed, and ``_READ_AHEAD`` more than
    one per decoder, of which the consumer may decode one itself, see :func:`_steal`),
    and by ``decoders + 2`` of larger ones (up to ``_ROW_GROUP_WHOLE`` batches; larger
    ones are streamed), whatever the size of the files (the dataset scanner of pyarrow reads
    ahead as far as it can when the consumer is slower than the decoder: its buffered
    batches grow with the file). Decoding (Arrow, GIL released) overlaps with the
    consumer's work (Numba kernels, GIL released).

    The read-ahead decodes on its one thread (``use_threads=False``): the consumer keeps a
    core, instead of three threads sharing two cores. Counting 100M rows (2 cores,
    alternated runs): 0.69–0.96 s against 0.79–1.14 s with Arrow's threaded decode
    (10k groups), 0.57–0.86 s against 0.71–1.20 s (1M groups). A consumer that does
    nothing (a bare read) is slower this way; every consumer here counts.
    """
    from concurrent.futures import Future, ThreadPoolExecutor

    import pyarrow.parquet as pq

    check_columns(columns, dataset.schema.names, param)
    parts = partition_values(dataset)     # hive partition columns: constants per file
    pnames = set(next(iter(parts.values()))) if parts else set()
    all_columns = columns
    columns = [c for c in columns if c not in pnames]     # read from the files
    text = [c for c in columns if dictionary and _is_text(dataset.schema.field(c).type)]
    opened: dict[tuple, Any] = {}

    def complete(data: Any, path: str) -> Any:
        if not pnames:
            return data
        return with_partitions(data, {c: v for c, v in parts[path].items()
                                      if c in all_columns},
                               dataset.schema, all_columns, dictionary)

    def open_file(path: str, as_dict: tuple) -> Any:
        # one ParquetFile per thread: concurrent reads of one object break its range cache
        key = (path, as_dict, threading.get_ident())
        if key not in opened:
            opened[key] = pq.ParquetFile(path, filesystem=dataset.filesystem,
                                         read_dictionary=list(as_dict))
        return opened[key]

    def pieces() -> Iterator[tuple[str, int]]:
        for path in dataset.files:
            pf = open_file(path, ())
            check_columns(columns, pf.schema_arrow.names, f"{param} ({path})")
            for i in range(pf.metadata.num_row_groups):
                yield path, i

    def rows(piece: tuple[str, int]) -> int:
        return open_file(piece[0], ()).metadata.row_group(piece[1]).num_rows

    def whole(piece: tuple[str, int]) -> bool:
        return rows(piece) <= _ROW_GROUP_WHOLE * batch_size

    def load(piece: tuple[str, int], as_dict: tuple, cols: list[str] = columns) -> Any:
        if whole(piece):
            pf = open_file(piece[0], as_dict)
            return pf.read_row_group(piece[1], columns=cols, use_threads=False)
        return None   # streamed below, not prefetched

    it = pieces()
    decoders = max(int(decoders), 1)
    pool = ThreadPoolExecutor(max_workers=decoders, thread_name_prefix="fastpriv-parquet")
    try:
        pending: deque = deque()

        def submit() -> bool:
            nxt = next(it, None)
            if nxt is not None:
                as_dict = tuple(text)
                pending.append((nxt, as_dict, pool.submit(load, nxt, as_dict)))
            return nxt is not None

        first = next(it, None)
        if first is not None:   # on both threads at once: nothing is decoded before it
            done: Future = Future()
            done.set_result(_load_split(pool, load, first, tuple(text), columns)
                            if whole(first) else None)
            pending.append((first, tuple(text), done))
        while pending:
            cur, as_dict, fut = pending.popleft()
            if not fut.done() and pending:
                _steal(pending, load)
            table = fut.result()
            if table is not None:
                _drop_wide_dictionaries(table, text)
            # the read-ahead starts after the first row group decided which text columns
            # stay dictionaries; row groups of up to a batch are read further ahead
            depth = decoders + (_READ_AHEAD if rows(cur) <= batch_size else 1)
            while len(pending) < depth and submit():
                pass
            if table is None:
                pf = open_file(cur[0], as_dict)
                for batch in pf.iter_batches(batch_size=batch_size, row_groups=[cur[1]],
                                             columns=columns):
                    yield complete(batch, cur[0])
            else:
                yield from complete(table, cur[0]).to_batches(max_chunksize=batch_size)
    finally:
        # a consumer that stops early (a scan that restarts, an error): decodes still
        # queued are cancelled, not run
        pool.shutdown(wait=True, cancel_futures=True)


def _load_split(pool: Any, load: Callable, piece: tuple[str, int], as_dict: tuple,
                columns: list[str]) -> pa.Table:
    """Decode one row group with its columns split between ``pool`` and this thread.

    For the first row group, which every later step waits for: the consumer has nothing
    to count yet, so it decodes half of the columns (alternate ones, in order) while a
    decoder takes the other half.
    """
    if len(columns) < 2:
        return load(piece, as_dict)
    fut = pool.submit(load, piece, as_dict, columns[1::2])
    mine = load(piece, as_dict, columns[0::2])
    theirs = fut.result()
    cols = {name: mine.column(name) for name in mine.column_names}
    cols.update((name, theirs.column(name)) for name in theirs.column_names)
    return pa.table([cols[c] for c in columns], names=columns)


def _steal(pending: deque, load: Callable) -> None:
    """Decode the next queued row group on this (the consumer's) thread, if not started.

    Called when the consumer would wait for the decoders: a reader-bound scan (few groups,
    cheap counting) then decodes on both cores instead of one, and a consumer-bound one
    never waits, so never steals. ``Release.from_table`` on 10M rows (min of 5, five
    alternated fresh processes each): 10k string groups 63-70 -> 57-61 ms, 1M string
    groups 0.66-0.73 -> 0.64-0.69 s; 1M int and 3-QI groups unchanged (within 3 %).
    """
    from concurrent.futures import Future

    piece, as_dict, fut = pending[0]
    if fut.cancel():
        done: Future = Future()
        done.set_result(load(piece, as_dict))
        pending[0] = (piece, as_dict, done)


def _drop_wide_dictionaries(table: pa.Table, text: list[str]) -> None:
    """Stop reading as dictionaries the columns whose dictionary is over 1/8 of the rows.

    Such columns were mostly written as plain pages (the writer's dictionary outgrew its
    page limit): Arrow would have to build the dictionary by hashing every string, on the
    reader's one thread, and the consumer hashes the strings anyway.
    """
    for c in list(text):
        col = table.column(c)
        if col.num_chunks and pa.types.is_dictionary(col.type) and \
                8 * len(col.chunk(0).dictionary) > len(col.chunk(0)):
            text.remove(c)


def _is_text(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


@dataclass(frozen=True)
class Encoded:
    """Dense codes of one column (or a combination of columns).

    ``codes[i]`` in ``[0, len(labels))``; ``labels`` sorted ascending (nulls last when they
    are kept as a value).
    """

    codes: np.ndarray  # int32
    labels: pa.Array


def null_count(col: pa.ChunkedArray | pa.Array) -> int:
    """Return the number of nulls, NaN in float columns included (NaN is a null)."""
    return col.null_count + nan_count(col)


def _is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t) or (pa.types.is_dictionary(t)
                                       and pa.types.is_floating(t.value_type))


def nan_count(col: pa.ChunkedArray | pa.Array) -> int:
    """Return the number of NaN entries of a float column (0 for other types)."""
    if not _is_float(col.type):
        return 0
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return int(pc.sum(pc.is_nan(col)).as_py() or 0)


def nan_to_null(col: Any) -> Any:
    """Return ``col`` with NaN replaced by null (float columns; others unchanged).

    NaN is a missing value, not a label: it goes through the null policy (``nulls=``)
    like a null, and under ``nulls="value"`` it is the null value.
    """
    if not _is_float(col.type):
        return col
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    nan = pc.is_nan(col)
    if not pc.any(nan).as_py():
        return col
    return pc.if_else(nan, pa.scalar(None, col.type), col)


def nans_as_nulls(table: Any, columns: Sequence[str]) -> tuple[Any, dict[str, int]]:
    """Replace NaN by null in the float ``columns`` of a table or record batch.

    Returns the table (or batch) and the NaN count of every column that had some.
    """
    nans: dict[str, int] = {}
    for c in columns:
        col = table.column(c)
        if not _is_float(col.type):
            continue
        k = nan_count(col)
        if k:
            nans[c] = k
            new = nan_to_null(col)
            i = table.schema.get_field_index(c)
            table = table.set_column(i, pa.field(c, new.type), new)
    return table, nans


def _chunked(col: Any) -> pa.ChunkedArray:
    if isinstance(col, pa.ChunkedArray):
        return col
    if isinstance(col, pa.Array):
        return pa.chunked_array([col])
    return pa.chunked_array([pa.array(col)])


_DENSE_SPAN_LIMIT = 1 << 22  # direct addressing up to this many slots (or 2 per row)
_DENSE_SPAN_MAX = 1 << 26


def encode_column(col: Any, *, name: str = "column") -> Encoded:
    """Dictionary-encode one Arrow column into int32 codes in sorted-label order.

    Nulls, if any, become their own label (last). Callers decide the null policy first
    (:func:`apply_null_policy`). Integer columns with a small value range use a direct
    address kernel (no hashing); everything else uses Arrow's hash dictionary encoder.
    """
    from ._kernels.counting import dense_encode
    from ._validation import kernel_array

    col = _chunked(col)
    n = len(col)
    typ = col.type
    check_scalar(typ, name)
    if n == 0:
        return Encoded(np.empty(0, dtype=np.int32),
                       canonical_labels(pa.array([], type=typ), name=name))
    if pa.types.is_integer(typ) and col.null_count == 0:
        arr = col.to_numpy()  # zero-copy for a single chunk without nulls
        lo, hi = int(arr.min()), int(arr.max())
        span = hi - lo + 1
        if span <= max(_DENSE_SPAN_LIMIT, 2 * n) and span <= _DENSE_SPAN_MAX \
                and hi <= INT64_MAX:      # uint64 above it: the int64 kernel would wrap
            codes, uniques = dense_encode(kernel_array(arr, np.int64), lo, span)
            return Encoded(codes, canonical_labels(pa.array(uniques).cast(typ)))
    if pa.types.is_dictionary(typ):
        col = col.unify_dictionaries() if hasattr(col, "unify_dictionaries") else col
        dict_labels = col.chunks[0].dictionary if col.num_chunks else pa.array([], typ.value_type)
        idx = [c.indices for c in col.chunks]
        indices = pa.chunked_array(idx, type=typ.index_type)
        labels = dict_labels
        has_null = col.null_count > 0
        raw = indices.fill_null(len(labels)).to_numpy() if has_null else indices.to_numpy()
        raw = raw.astype(np.int64, copy=False)
        if has_null:
            labels = pa.concat_arrays([labels, pa.array([None], type=labels.type)])
        # drop unused dictionary entries
        used = np.bincount(raw, minlength=len(labels)) > 0
        keep = np.flatnonzero(used)
        remap = np.full(len(labels), -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        raw = remap[raw]
        labels = labels.take(pa.array(keep))
        return _sorted_encoding(raw, labels, name)
    enc = pc.dictionary_encode(col, null_encoding="encode")
    labels = enc.chunks[0].dictionary if enc.num_chunks else pa.array([], typ)
    raw = pa.chunked_array([c.indices for c in enc.chunks]).to_numpy().astype(np.int64, copy=False)
    return _sorted_encoding(raw, labels, name)


def check_scalar(typ: pa.DataType, name: str) -> None:
    """Refuse a column of nested values (lists, structs, maps) as a QI, group or value.

    An :class:`~fastpriv.errors.InputError` naming the column and its type.
    """
    if pa.types.is_nested(typ) or (pa.types.is_dictionary(typ)
                                   and pa.types.is_nested(typ.value_type)):
        raise InputError(f"column {name!r} holds {typ} values; a QI, group or value column "
                         "must hold scalar values (numbers, strings, dates, times)")


def _is_view(t: pa.DataType, kind: str) -> bool:
    return getattr(pa.types, f"is_{kind}_view", lambda _: False)(t)


def canonical_labels(labels: pa.Array, *, name: str = "column") -> pa.Array:
    """Normalize labels so equal data from different sources compares equal, exactly.

    Strings of every layout become ``string``, binaries ``binary``, integers ``int64``
    (``uint64`` is kept), floats ``float64`` with ``-0.0`` written ``0.0`` (they are equal
    numbers: one value, one label), ``date64`` becomes ``date32``, and nanosecond
    timestamps, times and durations become microseconds — the resolution of Python's
    ``datetime``, ``time`` and ``timedelta``, in which every label is handed out
    (``Release.values``, group labels, generalized values). A value those conversions
    would change (a ``date64`` that is not a whole day, a nanosecond value that is not a
    whole microsecond) is refused: an :class:`~fastpriv.errors.InputError` naming the
    column ``name`` and its type, never a label that merges two values.
    """
    t = labels.type
    if pa.types.is_dictionary(t):
        labels = labels.cast(t.value_type)
        t = labels.type
    if pa.types.is_large_string(t) or _is_view(t, "string"):
        return labels.cast(pa.string())
    if pa.types.is_large_binary(t) or _is_view(t, "binary"):
        return labels.cast(pa.binary())
    if pa.types.is_integer(t) and t != pa.int64():
        if pa.types.is_unsigned_integer(t) and t.bit_width == 64:
            return labels
        return labels.cast(pa.int64())
    if pa.types.is_floating(t):
        return pc.add(labels.cast(pa.float64()), 0.0)    # -0.0 + 0.0 is 0.0
    exact = _microsecond_type(t)
    if exact is not None:
        try:
            labels = labels.cast(exact)
        except pa.ArrowInvalid:
            what = ("values that are not whole days" if pa.types.is_date64(t)
                    else "values below a microsecond")
            raise InputError(f"column {name!r} holds {t} {what}; fastpriv hands values out as "
                             f"Python dates and times, exact to the microsecond: cast the "
                             f"column to {exact} (or to strings) first") from None
    if pa.types.is_timestamp(labels.type) and labels.type.tz is not None:
        _refuse_folds(labels, name)
    return labels


def _refuse_folds(labels: pa.Array, name: str) -> None:
    """Refuse two instants that read the same local time (a daylight-saving fold).

    Python compares two ``datetime`` of one time zone by their local time: 01:30 summer
    time and 01:30 winter time, an hour apart, are equal there, and would be one label.
    """
    local = pc.count_distinct(pc.local_timestamp(labels)).as_py()
    if local < pc.count_distinct(labels).as_py():
        t = labels.type
        raise InputError(f"column {name!r} holds {t} values that read the same local time "
                         f"(instants an hour apart in a daylight-saving fold), which Python "
                         f"compares equal: cast the column to {pa.timestamp(t.unit, 'UTC')} "
                         "first")


def exact_keys(arr: pa.Array) -> list:
    """Return a hashable key per entry that equals another only for the same value (None: null).

    Dates, times, timestamps and durations are their integer storage (two instants of a
    daylight-saving fold are equal ``datetime`` objects); other values their Python value.
    """
    t = arr.type
    if pa.types.is_temporal(t):
        return arr.view(pa.int32() if t.bit_width == 32 else pa.int64()).to_pylist()
    return arr.to_pylist()


def _microsecond_type(t: pa.DataType) -> pa.DataType | None:
    """Return the exact type :func:`canonical_labels` gives ``date64`` and nanosecond types."""
    if pa.types.is_date64(t):
        return pa.date32()
    if getattr(t, "unit", None) != "ns":
        return None
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_time64(t):
        return pa.time64("us")
    if pa.types.is_duration(t):
        return pa.duration("us")
    return None


def _sorted_encoding(raw: np.ndarray, labels: pa.Array, name: str = "column") -> Encoded:
    """Relabel codes so that code order = ascending label order (nulls last).

    Labels that :func:`canonical_labels` makes equal (``-0.0`` and ``0.0``) share a code.
    """
    labels = canonical_labels(labels, name=name)
    if len(labels) == 0:
        return Encoded(raw.astype(np.int32), labels)
    order = pc.array_sort_indices(labels, null_placement="at_end").to_numpy()
    ranked = labels.take(pa.array(order))
    new = np.ones(len(order), dtype=bool)
    if pa.types.is_floating(labels.type) and len(order) > 1:
        same = pc.equal(ranked[1:], ranked[:-1]).to_numpy(zero_copy_only=False)
        new[1:] = ~np.asarray(same, dtype=bool)      # a null compares as null: kept
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.cumsum(new, dtype=np.int32) - 1
    if not new.all():
        ranked = ranked.filter(pa.array(new))
    return Encoded(rank[raw], ranked)


def encode_keys(columns: Sequence[Any], *, names: Sequence[str]) -> tuple[np.ndarray, pa.Table]:
    """Encode one or more key columns into one group code per row.

    Returns ``(codes, keys)``: int32 group codes in lexicographic order of the key tuples,
    and a table with one row per group holding its key values (column names ``names``).
    """
    from ._kernels.counting import combine_codes, first_index
    from ._validation import kernel_array

    encs = [encode_column(c, name=nm) for c, nm in zip(columns, names, strict=False)]
    codes = encs[0].codes
    card = len(encs[0].labels)
    for enc in encs[1:]:
        nb = len(enc.labels)
        if card * nb < (1 << 62):
            key = combine_codes(kernel_array(codes, np.int32), kernel_array(enc.codes, np.int32),
                                nb)
            e = encode_column(pa.array(key), name="key")
            codes, card = e.codes, len(e.labels)
        else:  # pragma: no cover - needs > 2^62 key combinations
            raise InputError("too many distinct key combinations to encode")
    if len(encs) == 1:
        keys = pa.table({names[0]: encs[0].labels})
        return codes, keys
    first = first_index(kernel_array(codes, np.int32), card)
    keys = pa.table({nm: enc.labels.take(pa.array(enc.codes[first])) for nm, enc in
                     zip(names, encs, strict=False)})
    return codes, keys


def apply_null_policy(table: pa.Table, columns: Sequence[str], nulls: str,
                      param: str = "nulls") -> tuple[pa.Table, int]:
    """Enforce the null policy on ``columns``; returns the table and the rows dropped.

    ``"error"`` (default) raises naming each column and its null count; ``"drop"`` removes
    rows with a null in any of the columns; ``"value"`` keeps null as a value of its own.
    NaN in a float column is a null (:func:`nans_as_nulls`): counted, dropped or kept as
    the null value with them.
    """
    check_choice(nulls, param, NULL_POLICIES)
    table, nans = nans_as_nulls(table, columns)
    counts = {c: table.column(c).null_count for c in columns}
    bad = {c: k for c, k in counts.items() if k}
    if not bad or nulls == "value":
        return table, 0
    if nulls == "error":
        desc = ", ".join(f"{c!r} has {k} null{'s' if k > 1 else ''}"
                         + (f" (including {nans[c]} NaN: NaN is a missing value)" if c in nans
                            else "")
                         for c, k in bad.items())
        raise InputError(f"{desc}; pass nulls='drop' to remove those rows or nulls='value' to "
                         f"treat null as a value")
    out = table.filter(_valid(table, list(bad)))
    return out, table.num_rows - out.num_rows


def _valid(table: pa.Table, columns: Sequence[str]) -> pa.ChunkedArray | pa.Array:
    """Return the mask of the rows with no null in ``columns``."""
    mask = None
    for c in columns:
        m = pc.is_valid(table.column(c))
        mask = m if mask is None else pc.and_(mask, m)
    return mask


def kept_rows(table: pa.Table, columns: Sequence[str], nulls: str) -> np.ndarray | None:
    """Positions of the rows that the null policy keeps (``None``: it keeps every row).

    Under ``nulls="drop"`` these are the rows without a null in ``columns``, the rows
    :func:`apply_null_policy` returns, in order (NaN counts as a null).
    """
    table, _ = nans_as_nulls(table, columns)
    bad = [c for c in columns if table.column(c).null_count]
    if nulls != "drop" or not bad:
        return None
    valid = _valid(table, bad)
    if isinstance(valid, pa.ChunkedArray):
        valid = valid.combine_chunks()
    return np.flatnonzero(valid.to_numpy(zero_copy_only=False)).astype(np.int64)


def expand_weights(data: Any, weight: str, max_rows: int = 2**31 - 1) -> pa.Table:
    """One row per individual: each row repeated ``weight`` times, the weight column dropped.

    For methods that anonymize rows (Anatomy, ART): a weighted row stands for ``weight``
    identical people, and the release must publish each of them. ``data``: anything
    :func:`as_table` reads. The copies of a row are consecutive, in input order. Refused
    when the people exceed ``max_rows``, or before expanding when their rows (the row's
    columns and :data:`fastpriv._budget.EXPANDED_ROW_BYTES` of the method's own per person)
    would not fit in the free memory (:func:`fastpriv._budget.check_memory`).
    """
    from ._budget import EXPANDED_ROW_BYTES, check_memory

    table = as_table(data)
    check_columns([weight], table.column_names, "weight")
    table, w = apply_weights(table, weight)
    total = int(w.sum())
    if total > max_rows:
        raise InputError(f"weight column {weight!r} stands for {total:,} people, more than the "
                         f"{max_rows:,} rows this method can hold one per person")
    per_row = table.nbytes / max(table.num_rows, 1) + EXPANDED_ROW_BYTES
    check_memory(total * per_row, f"expanding weight column {weight!r} into one row per "
                 f"person ({total:,} people, about {per_row:,.0f} B each)",
                 "anonymize the weighted table with a method that reads the weights as "
                 "counts (mondrian, lattice), or aggregate it first")
    idx = np.repeat(np.arange(w.size, dtype=np.int64), w)
    return table.drop_columns([weight]).take(pa.array(idx))


def apply_weights(table: pa.Table, weight: str) -> tuple[pa.Table, np.ndarray]:
    """Check a multiplicity column (``weight=``) and drop the rows of weight 0.

    Returns the table without those rows and its weights as int64. Weights must be
    non-negative integers without nulls whose sum is at most 2**63 - 1 (counts are int64;
    a larger total would wrap around to negative group sizes).
    """
    col = table.column(weight)
    if not pa.types.is_integer(col.type):
        raise InputTypeError(f"weight column {weight!r} must hold integers, got {col.type}")
    if col.null_count:
        raise InputError(f"weight column {weight!r} has {col.null_count} nulls")
    w = col.to_numpy()
    if (w < 0).any():
        raise InputError(f"weight column {weight!r} has negative weights ({int((w < 0).sum())} "
                         f"of {w.size} rows); weights count individuals (>= 0)")
    if w.dtype == np.uint64 and (w > INT64_MAX).any():
        raise InputError(f"weight column {weight!r} has weights over 2**63 - 1 (the largest "
                         "count fastpriv holds)")
    check_total(w, f"weight column {weight!r}")
    if (w == 0).any():
        keep = w > 0
        table, w = table.filter(pa.array(keep)), w[keep]
    return table, w.astype(np.int64)
