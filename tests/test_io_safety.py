"""Outputs: special files never replaced, failed writes are errors, nothing partial is left."""

import errno
import os
import stat

import pytest

from fastpriv._io import check_output, write_json, write_text
from fastpriv.cli import main
from fastpriv.errors import InputError, OutputError


@pytest.fixture
def small_release(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "rel.parquet"
    pq.write_table(pa.table({"g": [1, 1, 2, 2], "d": ["a", "b", "a", "b"]}), path)
    return path


def _private_full_device(tmp_path):
    """A private character device node with /dev/full's numbers (never the machine's)."""
    node = tmp_path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        pytest.fail("creating a device node needs root (CI and the dev machines run as root)")
    return node


def test_device_node_is_never_replaced(tmp_path, small_release, capsys):
    node = _private_full_device(tmp_path)
    rc = main(["audit", str(small_release), "--sensitive", "d", "--group", "g",
               "--json", str(node), "--overwrite"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err and "Traceback" not in err
    assert stat.S_ISCHR(os.lstat(node).st_mode)            # still the device


def test_fifo_is_never_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="not a regular file"):
        write_json(fifo, {"a": 1}, overwrite=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_directory_and_input_refused(tmp_path, small_release):
    with pytest.raises(OutputError, match="is a directory"):
        check_output(tmp_path, overwrite=True)
    with pytest.raises(OutputError, match="over \\(or inside\\) the input"):
        check_output(small_release, overwrite=True, inputs=[small_release])
    assert issubclass(OutputError, InputError)


def test_read_only_folder_is_a_clean_error(tmp_path, small_release, capsys, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    # root ignores permission bits: emulate a read-only file system for the access check
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if os.fspath(p) == os.fspath(ro)
                        else real_access(p, mode))
    rc = main(["audit", str(small_release), "--sensitive", "d", "--group", "g",
               "--json", str(ro / "a.json")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "not writable" in err and ".tmp" not in err and "Traceback" not in err
    assert list(ro.iterdir()) == []


@pytest.mark.parametrize("failing", ["write", "fsync", "rename"])
def test_failed_write_leaves_nothing(tmp_path, monkeypatch, failing):
    dest = tmp_path / "out.txt"
    dest.write_text("old")
    boom = OSError(errno.ENOSPC, "No space left on device")
    if failing == "fsync":
        monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(boom))
    elif failing == "rename":
        monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(boom))

    def write(tmp):
        with open(tmp, "w") as fh:
            fh.write("partial")
        if failing == "write":
            raise boom
    from fastpriv._io import atomic_write

    with pytest.raises(OutputError, match="No space left on device") as exc:
        atomic_write(dest, write, overwrite=True)
    assert ".tmp" not in str(exc.value)
    assert dest.read_text() == "old"                          # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]   # no temp file left


def test_write_text_round_trip(tmp_path):
    p = write_text(tmp_path / "sub" / "x.txt", "hello")
    assert open(p).read() == "hello"
    with pytest.raises(FileExistsError):
        write_text(p, "again")
