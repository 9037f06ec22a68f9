"""Safe output: every file fastpriv writes goes through :func:`atomic_write`.

Nothing is lost: outputs are written to a temporary file in the destination directory and
renamed into place (atomic on POSIX), an existing file is never replaced unless
``overwrite=True``, and an output path that is one of the inputs is always refused.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from typing import Any

from .errors import InputError, OutputError

__all__ = ["atomic_write", "check_output", "check_outputs", "write_text", "write_json",
           "write_table"]

PathLike = "str | os.PathLike[str]"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_output(path: str | os.PathLike, *, overwrite: bool = False,
                 inputs: Iterable[Any] = ()) -> str:
    """Check, before any work, that ``path`` can be written; return its absolute path.

    Refused: an input of the job (or a path inside an input folder), anything that exists
    and is not a regular file (directory, device, FIFO, socket — never replaced, even with
    ``overwrite``), an existing file without ``overwrite``, and a folder that is not
    writable.

    Raises
    ------
    OutputError
        The path is an input, not a regular file, or not writable.
    FileExistsError
        The file exists and ``overwrite`` is false.

    """
    dest = os.path.abspath(os.fspath(path))
    for inp in inputs:
        if isinstance(inp, (str, os.PathLike)) and os.path.exists(inp) and (
                _same_file(dest, os.fspath(inp))
                or os.path.commonpath([dest, os.path.abspath(inp)]) == os.path.abspath(inp)
                and os.path.isdir(inp)):
            raise OutputError(f"refusing to write output {dest!r} over (or inside) the input "
                              f"{os.fspath(inp)!r}")
    if os.path.lexists(dest):
        if os.path.isdir(dest):
            raise OutputError(f"output {dest!r} is a directory")
        if not stat.S_ISREG(os.stat(dest).st_mode):
            raise OutputError(f"output {dest!r} is not a regular file (a device, FIFO or "
                              "socket); fastpriv writes only regular files")
        if not overwrite:
            raise FileExistsError(f"output {dest!r} exists; pass overwrite=True (CLI: "
                                  "--overwrite) to replace it")
    folder = os.path.dirname(dest)
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write output {dest!r}: folder {folder!r} is not writable")
    return dest


def check_outputs(paths: Iterable[Any], *, overwrite: bool = False,
                  inputs: Iterable[Any] = ()) -> list[str]:
    """:func:`check_output` for every given path (``None`` skipped); they must differ."""
    inputs = list(inputs)
    out = [check_output(p, overwrite=overwrite, inputs=inputs) for p in paths if p]
    if len(set(out)) != len(out):
        raise OutputError(f"two outputs name the same file: {', '.join(out)}")
    return out


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], *,
                 overwrite: bool = False, inputs: Iterable[Any] = ()) -> str:
    """Write ``path`` atomically by calling ``write(tmp_path)``, syncing and renaming.

    Parameters
    ----------
    path : path-like
        Destination file (checked by :func:`check_output`).
    write : callable
        Receives a temporary path in the same directory and writes the full content there.
    overwrite : bool
        Replace an existing regular file (default: refuse with ``FileExistsError``).
    inputs : iterable of path-like
        Input files of the job; writing over any of them raises :class:`OutputError`.

    Returns
    -------
    str
        The absolute destination path.

    Raises
    ------
    OutputError
        When the write, the flush to disk or the rename fails (no partial file is left).

    """
    dest = check_output(path, overwrite=overwrite, inputs=inputs)
    tmp = None
    try:
        directory = os.path.dirname(dest)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(dest)}.", suffix=".tmp",
                                   dir=directory)
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        write(tmp)
        _fsync(tmp)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; outputs get the usual mode
        os.replace(tmp, dest)
        tmp = None
        _fsync(directory, directory=True)
    except OSError as exc:
        raise OutputError(f"cannot write output {dest!r}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def _fsync(path: str, *, directory: bool = False) -> None:
    """Flush ``path`` to disk (a failed flush is a failed write)."""
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
