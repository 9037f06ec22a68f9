"""Safe output: every file fastpriv writes goes through :func:`atomic_write`.

Nothing is lost: outputs are written to a temporary file in the destination directory and
renamed into place (atomic on POSIX), an existing file is never replaced unless
``overwrite=True``, and an output path that is one of the inputs is always refused.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from typing import Any

from .errors import InputError

__all__ = ["atomic_write", "write_text", "write_json", "write_table"]

PathLike = "str | os.PathLike[str]"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], *,
                 overwrite: bool = False, inputs: Iterable[Any] = ()) -> str:
    """Write ``path`` atomically by calling ``write(tmp_path)`` and renaming.

    Parameters
    ----------
    path : path-like
        Destination file.
    write : callable
        Receives a temporary path in the same directory and writes the full content there.
    overwrite : bool
        Replace an existing ``path`` (default: refuse with ``FileExistsError``).
    inputs : iterable of path-like
        Input files of the job; writing over any of them raises ``ValueError``.

    Returns
    -------
    str
        The absolute destination path.
    """
    dest = os.path.abspath(os.fspath(path))
    for inp in inputs:
        if isinstance(inp, (str, os.PathLike)) and os.path.exists(inp) and (
                _same_file(dest, os.fspath(inp))
                or os.path.commonpath([dest, os.path.abspath(inp)]) == os.path.abspath(inp)
                and os.path.isdir(inp)):
            raise InputError(f"refusing to write output {dest!r} over (or inside) the input "
                             f"{os.fspath(inp)!r}")
    if os.path.isdir(dest):
        raise InputError(f"output {dest!r} is a directory")
    if os.path.exists(dest) and not overwrite:
        raise FileExistsError(f"output {dest!r} exists; pass overwrite=True (CLI: --overwrite) "
                              "to replace it")
    directory = os.path.dirname(dest) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(dest)}.", suffix=".tmp",
                               dir=directory)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; outputs get the usual mode
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return dest


def write_text(path: str | os.PathLike, text: str, **kw: Any) -> str:
    """Atomically write a UTF-8 text file."""
    def _w(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    return atomic_write(path, _w, **kw)


def _json_default(obj: Any) -> Any:
    import math
    from fractions import Fraction

    import numpy as np

    if isinstance(obj, Fraction):
        return float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return str(obj)


def to_jsonable(obj: Any) -> Any:
    """Recursively convert to JSON-safe values (``inf`` becomes the string ``"inf"``)."""
    import math

    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return "inf" if obj > 0 else ("-inf" if obj < 0 else "nan")
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return to_jsonable(_json_default(obj))


def write_json(path: str | os.PathLike, obj: Any, **kw: Any) -> str:
    """Atomically write ``obj`` as indented JSON (numpy, Fraction and inf handled)."""
    return write_text(path, json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n", **kw)


def write_table(path: str | os.PathLike, table: Any, *, format: str | None = None,
                **kw: Any) -> str:
    """Atomically write an Arrow table as Parquet or CSV (chosen by suffix or ``format``)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    p = os.fspath(path)
    fmt = format or ("csv" if p.lower().endswith((".csv", ".csv.gz")) else "parquet")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"format must be 'parquet' or 'csv', got {fmt!r}")

    def _w(tmp: str) -> None:
        if fmt == "csv":
            pacsv.write_csv(table, tmp)
        else:
            pq.write_table(table, tmp, compression="zstd")
    return atomic_write(path, _w, **kw)
