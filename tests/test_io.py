"""Outputs are atomic, never overwrite inputs, refuse existing files unless asked."""

import json
import math
import os
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastpriv._io import atomic_write, to_jsonable, write_json, write_table


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    dest = tmp_path / "out.txt"

    def boom(tmp):
        with open(tmp, "w") as fh:
            fh.write("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(dest, boom)
    assert not dest.exists()
    assert os.listdir(tmp_path) == []  # no temp file left behind


def test_refuses_overwrite_and_inputs(tmp_path):
    dest = tmp_path / "o.json"
    write_json(dest, {"a": 1})
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_json(dest, {"a": 2})
    write_json(dest, {"a": 2}, overwrite=True)
    assert json.loads(dest.read_text()) == {"a": 2}
    with pytest.raises(ValueError, match="refusing"):
        write_json(dest, {"a": 3}, overwrite=True, inputs=[dest])
    d = tmp_path / "dataset"
    d.mkdir()
    with pytest.raises(ValueError, match="inside"):
        write_json(d / "x.json", {}, inputs=[d])
    with pytest.raises(ValueError, match="is a directory"):
        write_json(d, {})


def test_write_table_formats(tmp_path):
    t = pa.table({"a": [1, 2]})
    write_table(tmp_path / "t.parquet", t)
    assert pq.read_table(tmp_path / "t.parquet").equals(t)
    write_table(tmp_path / "t.csv", t)
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == '"a"'
    with pytest.raises(ValueError, match="format must be"):
        write_table(tmp_path / "t.x", t, format="xlsx")


def test_to_jsonable():
    assert to_jsonable({"x": math.inf, "y": [Fraction(1, 3), np.int64(2), np.float32(0.5)],
                        "z": (1, 2), "n": float("nan")}) == \
        {"x": "inf", "y": [1 / 3, 2, 0.5], "z": [1, 2], "n": "nan"}


def test_outputs_get_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "m.json", {})
    finally:
        os.umask(old)
    assert (os.stat(tmp_path / "m.json").st_mode & 0o777) == 0o644
