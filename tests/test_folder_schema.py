"""A folder whose files disagree on a column is refused by every command alike (issue 47).

Arrow takes a folder's schema from one file: a column another file spells ``Disease``
instead of ``disease`` was read as nulls, and ``report --nulls drop`` passed on half of the
rows. The one check (:func:`fastpriv._folders.check_files_agree`) runs where a path becomes
a dataset, so every reader refuses such a folder with one line naming both files.
"""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastpriv as fp
from fastpriv._arrow import as_table, count_rows, iter_batches
from fastpriv._folders import check_files_agree
from fastpriv.cli import main


def _part(seed: int, sensitive: str = "disease", age_type: pa.DataType | None = None,
          n: int = 60) -> pa.Table:
    age_type = pa.int64() if age_type is None else age_type
    rng = np.random.default_rng(seed)
    return pa.table({"g": pa.array(rng.integers(0, 6, n)),
                     "age": pa.array(rng.integers(20, 30, n)).cast(age_type),
                     "sex": pa.array(rng.choice(["M", "F"], n)),
                     sensitive: pa.array(rng.choice(["flu", "cold", "hiv"], n))})


@pytest.fixture
def folder(tmp_path):
    """Two files: part0 spells the sensitive column 'disease', part1 'Disease'."""
    d = tmp_path / "data"
    d.mkdir()
    pq.write_table(_part(0), d / "part0.parquet")
    pq.write_table(_part(1, "Disease"), d / "part1.parquet")
    return d


COMMANDS = {
    "audit": ["audit", "{d}", "--qi", "age", "sex", "--sensitive", "disease"],
    "audit-classes": ["audit", "{d}", "--qi", "age", "sex"],
    "report": ["report", "{d}", "--qi", "age", "sex", "--sensitive", "disease",
               "--nulls", "drop", "-o", "{out}/r.html"],
    "anonymize": ["anonymize", "{d}", "--method", "mondrian", "--qi", "age", "sex",
                  "--sensitive", "disease", "--min-size", "2", "-o", "{out}/m.parquet"],
    "anatomy": ["anonymize", "{d}", "--method", "anatomy", "--qi", "age", "sex",
                "--sensitive", "disease", "--min-l", "2", "-o", "{out}/a.parquet"],
    "robustness": ["robustness", "{d}", "--qi", "age", "sex", "--sensitive", "disease",
                   "--bucketize", "anatomy:2", "--r", "2"],
    "attack": ["attack", "{d}", "--qi", "age", "sex", "--sensitive", "disease",
               "--bucketize", "anatomy:2", "--r", "2"],
    "skyline": ["skyline", "{d}", "--qi", "age", "sex", "--sensitive", "disease",
                "--all-sigma", "--point", "1,1,1,0.9"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_refuses_the_folder(name, folder, tmp_path, capsys):
    argv = [a.format(d=folder, out=tmp_path) for a in COMMANDS[name]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    line = err[0]
    assert "part1.parquet" in line and "part0.parquet" in line
    assert "'Disease'" in line and "'disease'" in line
    assert "Traceback" not in line
    assert not list(tmp_path.glob("*.parquet")) and not list(tmp_path.glob("*.html"))


def test_every_reader_refuses_it(folder):
    """Whole tables, streamed batches, row counts and releases go through the same check."""
    with pytest.raises(fp.InputError, match="Disease"):
        as_table(str(folder))
    with pytest.raises(fp.InputError, match="Disease"):
        list(iter_batches(str(folder), ["age"]))
    with pytest.raises(fp.InputError, match="Disease"):
        count_rows(str(folder))
    for stream in (False, True):
        build = fp.Release.from_batches if stream else fp.Release.from_table
        with pytest.raises(fp.InputError, match="Disease"):
            build(str(folder), qi=["age", "sex"], sensitive="disease", nulls="drop")


def test_a_type_disagreement_is_refused(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    pq.write_table(_part(0), d / "a.parquet")
    pq.write_table(_part(1, age_type=pa.string()), d / "b.parquet")
    with pytest.raises(fp.InputError) as exc:
        fp.Release.from_table(str(d), group="g", sensitive="disease")
    msg = str(exc.value)
    assert "'age'" in msg and "string" in msg and "int64" in msg and "b.parquet" in msg


def test_a_missing_or_extra_column_is_refused(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    pq.write_table(_part(0), d / "a.parquet")
    pq.write_table(_part(1).drop_columns(["sex"]), d / "b.parquet")
    with pytest.raises(fp.InputError, match="b.parquet has no column 'sex'"):
        as_table(str(d))
    (d / "b.parquet").unlink()
    pq.write_table(_part(1).append_column("zip", pa.array(["1"] * 60)), d / "b.parquet")
    with pytest.raises(fp.InputError, match="b.parquet has a column 'zip'"):
        as_table(str(d))


def test_files_that_agree_are_read_whole(tmp_path):
    """Integer widths and dictionary-encoded strings agree; every row is read."""
    d = tmp_path / "ok"
    d.mkdir()
    pq.write_table(_part(0), d / "a.parquet")
    b = _part(1, age_type=pa.int32())
    b = b.set_column(2, "sex", b.column("sex").dictionary_encode())
    pq.write_table(b, d / "b.parquet")
    rel = fp.Release.from_table(str(d), group="g", sensitive="disease")
    assert rel.n_rows == 120
    assert as_table(str(d)).num_rows == 120


def test_agreeing_folders_are_not_read_again(tmp_path, monkeypatch):
    """A folder seen to agree (same files, sizes, times) is not compared a second time."""
    import fastpriv._folders as folders

    d = tmp_path / "c"
    d.mkdir()
    pq.write_table(_part(0), d / "a.parquet")
    pq.write_table(_part(1), d / "b.parquet")
    calls = []
    real = folders._disagreement
    monkeypatch.setattr(folders, "_disagreement", lambda *a: calls.append(1) or real(*a))
    as_table(str(d))
    as_table(str(d))
    assert len(calls) == 1
    pq.write_table(_part(2, "Disease"), d / "b.parquet")       # the folder changed
    with pytest.raises(fp.InputError, match="Disease"):
        as_table(str(d))


def test_one_file_needs_no_check():
    class One:
        files = ["x.parquet"]

    assert check_files_agree(One(), "x.parquet") is None
