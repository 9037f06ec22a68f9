r"""Build ``fastpriv/datasets/data/adult.parquet`` from the two raw UCI Adult files.

Provenance
----------
Becker, B. & Kohavi, R. (1996). *Adult* [Dataset]. UCI Machine Learning Repository.
https://doi.org/10.24432/C5XW20 — licence: Creative Commons Attribution 4.0 (CC BY 4.0).

The script only accepts the two unchanged UCI files (checked by size and SHA-256) and applies
the cleaning rule used in the privacy literature:

1. read ``adult.data`` (32,561 records) and ``adult.test`` (16,281 records; its first line,
   ``|1x3 Cross validator``, is junk and skipped), both comma-separated without header;
2. strip the leading space of every field and the trailing ``.`` of ``income`` in
   ``adult.test``;
3. concatenate (``adult.data`` first, file order kept) = 48,842 records;
4. drop every row with a missing value ``?`` in any column → **45,222 rows**.

Columns are renamed to snake_case (``education-num`` → ``education_num`` …); integer columns
are int64, categorical columns strings. The output is Parquet (zstd, dictionary encoding).

Usage::

    python -m fastpriv.datasets._build_adult --source /path/to/adult \
        --out fastpriv/datasets/data/adult.parquet [--overwrite]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..errors import InputError

#: (file name, size in bytes, sha256) of the unchanged UCI files.
SOURCES = (
    ("adult.data", 3_974_305,
     "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
    ("adult.test", 2_003_153,
     "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"),
)

#: Output columns, in the raw files' order.
COLUMNS = ("age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
           "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
           "hours_per_week", "native_country", "income")
INTEGER_COLUMNS = frozenset({"age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
                             "hours_per_week"})
EXPECTED_ROWS = 45_222
EXPECTED_RAW_RECORDS = {"adult.data": 32_561, "adult.test": 16_281}
MISSING = "?"


def sha256_of(path: str) -> str:
    """Hex SHA-256 digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_sources(source: str) -> list[str]:
    """Return the paths of the two raw files after checking their size and SHA-256.

    Raises
    ------
    FileNotFoundError
        A raw file is missing.
    ValueError
        A raw file differs from the UCI original (size or checksum).

    """
    paths = []
    for name, size, digest in SOURCES:
        path = os.path.join(source, name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"source: {path!r} not found (expected the UCI file {name})")
        actual_size = os.path.getsize(path)
        actual = sha256_of(path)
        if actual_size != size or actual != digest:
            raise InputError(
                f"source: {path!r} is not the original UCI {name} "
                f"(size {actual_size}, sha256 {actual}; expected size {size}, sha256 {digest}); "
                "refusing to build from different files")
        paths.append(path)
    return paths


def _read_raw(path: str, skip_rows: int) -> pa.Table:
    """Read one raw file with every column as a string (nothing inferred, nothing lost)."""
    read = pacsv.ReadOptions(column_names=list(COLUMNS), skip_rows=skip_rows,
                             autogenerate_column_names=False)
    parse = pacsv.ParseOptions(delimiter=",", quote_char=False, escape_char=False,
                               ignore_empty_lines=True)
    convert = pacsv.ConvertOptions(column_types={c: pa.string() for c in COLUMNS},
                                   strings_can_be_null=False, null_values=[],
                                   quoted_strings_can_be_null=False)
    return pacsv.read_csv(path, read_options=read, parse_options=parse,
                          convert_options=convert)


def clean(data_path: str, test_path: str, *, check_counts: bool = True) -> pa.Table:
    """Apply the cleaning rule to the two raw files and return the cleaned table.

    With ``check_counts`` (the default) the record counts of the UCI files (32,561 and
    16,281) and of the result (45,222) are enforced; tests switch it off to run the same
    rule on small hand-written files.
    """
    parts = []
    for name, path, skip in (("adult.data", data_path, 0), ("adult.test", test_path, 1)):
        raw = _read_raw(path, skip)
        if check_counts and raw.num_rows != EXPECTED_RAW_RECORDS[name]:
            raise InputError(f"{name}: read {raw.num_rows} records, expected "
                             f"{EXPECTED_RAW_RECORDS[name]}")
        cols = [pc.utf8_ltrim(raw.column(c), characters=" ") for c in COLUMNS]
        income = COLUMNS.index("income")
        cols[income] = pc.utf8_rtrim(cols[income], characters=".")
        parts.append(pa.table(cols, names=list(COLUMNS)))
    table = pa.concat_tables(parts)
    keep = None
    for c in COLUMNS:
        ok = pc.not_equal(table.column(c), MISSING)
        keep = ok if keep is None else pc.and_(keep, ok)
    table = table.filter(keep)
    out = []
    fields = []
    for c in COLUMNS:
        col = table.column(c).combine_chunks()
        if c in INTEGER_COLUMNS:
            col = pc.cast(col, pa.int64())
            fields.append(pa.field(c, pa.int64(), nullable=False))
        else:
            fields.append(pa.field(c, pa.string(), nullable=False))
        out.append(col)
    result = pa.Table.from_arrays(out, schema=pa.schema(fields))
    if check_counts and result.num_rows != EXPECTED_ROWS:
        raise InputError(f"cleaned table has {result.num_rows} rows, expected {EXPECTED_ROWS}")
    return result


def build(source: str, out: str, *, overwrite: bool = False) -> str:
    """Verify the raw files in ``source``, clean them and write ``out`` atomically.

    Returns the absolute output path.
    """
    from fastpriv._io import atomic_write

    data_path, test_path = verify_sources(source)
    table = clean(data_path, test_path)
    table = table.replace_schema_metadata({
        "source": "Becker & Kohavi (1996), Adult, UCI Machine Learning Repository, "
                  "https://doi.org/10.24432/C5XW20",
        "license": "CC BY 4.0",
        "cleaning": "adult.data + adult.test (junk first line skipped, trailing '.' of income "
                    "stripped, leading spaces stripped); rows with '?' in any column dropped",
        "source_sha256": ";".join(f"{n}={d}" for n, _, d in SOURCES),
    })

    def _write(tmp: str) -> None:
        pq.write_table(table, tmp, compression="zstd", compression_level=19,
                       use_dictionary=True, write_statistics=False)

    return atomic_write(out, _write, overwrite=overwrite,
                        inputs=[data_path, test_path, source])


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m fastpriv.datasets._build_adult",
        description="Build the cleaned UCI Adult Parquet file (45,222 rows) from the raw files.")
    parser.add_argument("--source", required=True,
                        help="folder holding the unchanged UCI adult.data and adult.test")
    parser.add_argument("--out", required=True, help="output Parquet file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    args = parser.parse_args(argv)
    path = build(args.source, args.out, overwrite=args.overwrite)
    size = os.path.getsize(path)
    print(f"wrote {path} ({EXPECTED_ROWS} rows, {size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
