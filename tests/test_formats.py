"""Input formats: every path format gives the release of the same table in memory.

``fastpriv._arrow.file_format`` is the one registry of input formats (Parquet, CSV with any
delimiter, Arrow IPC / Feather, JSON lines), by suffix or, without one, by content; a folder
takes the format of its files. Each is read whole, streamed in batches and through the CLI.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import fastpriv
import fastpriv.cli
from fastpriv._arrow import file_format

rng = np.random.default_rng(11)
N = 500
TABLE = pa.table({"g": rng.integers(0, 40, N), "zip": rng.integers(0, 9, N),
                  "s": pa.array([f"v{i}" for i in rng.integers(0, 6, N)])})


def _write(fmt: str, path: str, table: pa.Table = TABLE) -> str:
    if fmt == "parquet":
        pq.write_table(table, path)
    elif fmt in ("ipc", "feather"):
        feather.write_feather(table, path)
    elif fmt == "json":
        with open(path, "w") as fh:
            fh.write("\n".join(json.dumps(r) for r in table.to_pylist()) + "\n")
    elif fmt == "csv;":
        pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(delimiter=";"))
    else:
        pacsv.write_csv(table, path)
    return path


CASES = [("parquet", "t.parquet", "parquet"), ("ipc", "t.arrow", "ipc"),
         ("feather", "t.feather", "ipc"), ("json", "t.jsonl", "json"),
         ("csv", "t.csv", "csv"), ("csv;", "t.csv", "csv"),
         # no telling suffix: the content decides
         ("parquet", "t.bin", "parquet"), ("ipc", "t.bin", "ipc"), ("json", "t.txt", "json"),
         ("csv;", "t.txt", "csv")]


@pytest.mark.parametrize("fmt, name, detected", CASES)
def test_every_format_reads_as_the_table(tmp_path, fmt, name, detected):
    path = _write(fmt, str(tmp_path / name))
    assert file_format(path) == detected
    want = fastpriv.Release.from_table(TABLE, group="g", sensitive="s")
    assert fastpriv.Release.from_table(path, group="g", sensitive="s").equals(want)
    assert fastpriv.Release.from_batches(path, group="g", sensitive="s").equals(want)
    assert fastpriv.classic.k_anonymity(path, qi=["zip"], sensitive="s") == \
        fastpriv.classic.k_anonymity(TABLE, qi=["zip"], sensitive="s")


@pytest.mark.parametrize("fmt, suffix", [("ipc", ".arrow"), ("json", ".jsonl"),
                                         ("parquet", ".parquet")])
def test_a_folder_takes_the_format_of_its_files(tmp_path, fmt, suffix):
    folder = tmp_path / "data"
    folder.mkdir()
    for i, part in enumerate((TABLE.slice(0, N // 2), TABLE.slice(N // 2))):
        _write(fmt, str(folder / f"part-{i}{suffix}"), part)
    assert file_format(str(folder)) == fmt
    want = fastpriv.Release.from_table(TABLE, group="g", sensitive="s")
    assert fastpriv.Release.from_table(str(folder), group="g", sensitive="s").equals(want)


@pytest.mark.parametrize("fmt, name", [("ipc", "t.feather"), ("json", "t.jsonl"),
                                       ("csv;", "t.csv")])
def test_the_cli_reads_every_format(tmp_path, fmt, name, capsys):
    path = _write(fmt, str(tmp_path / name))
    out = tmp_path / "a.json"
    rc = fastpriv.cli.main(["audit", path, "--group", "g", "--sensitive", "s", "--min-size",
                            "1", "--min-l", "1", "--c", "1", "--k", "0", "--point", "0,0,0",
                            "--json", str(out)])
    assert rc in (0, 1)
    d = json.loads(out.read_text())
    assert d["release"]["n_rows"] == N and d["release"]["n_groups"] == \
        len(set(TABLE.column("g").to_pylist()))
