"""Safe output: every file fastpriv writes goes through :func:`atomic_write`.

* **Nothing partial, nothing mixed.** A file is written to a temporary file in its
  destination folder, flushed to disk, and only then put in place. The files of one job (a
  release's two tables, the auditor's view, the JSON and HTML reports) form one
  :class:`OutputSet` and are committed together: every temporary file is written first, so a
  full disk or an error leaves the old files untouched, and the renames then run with
  Ctrl-C, SIGTERM and SIGHUP deferred, under an exclusive lock on each destination folder.
  A set of several files keeps, while it is being committed, a journal
  (``.fastpriv-commit-<token>.json``) in each of its folders and a hard link to each file it
  replaces; should the process be killed (SIGKILL, power loss) between two renames, the next
  fastpriv write into that folder — or :func:`recover` — rolls the whole set back to the old
  files. Inside :func:`output_set` every write joins the current set.
* **Nothing existing replaced unless asked.** Without ``overwrite`` a file is created by
  ``link(2)``, which fails when the name exists — even when a concurrent run created it a
  moment before (exclusive creation, not check-then-rename).
* **Never over an input, never over a special file.** An output that is an input of the job,
  or lies inside an input folder, is refused — compared by real path (symbolic links
  resolved) and by inode — as is anything that exists and is not a regular file. Every path
  the job reads through :func:`note_input` is an input, besides those passed explicitly.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import os
import secrets
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import InputError, OutputError

__all__ = ["atomic_write", "check_output", "check_outputs", "write_text", "write_json",
           "write_table", "OutputSet", "output_set", "note_input", "recover"]

PathLike = "str | os.PathLike[str]"

_JOURNAL_PREFIX = ".fastpriv-commit-"
_READ_INPUTS: set[str] = set()
_CURRENT: contextvars.ContextVar[OutputSet | None] = contextvars.ContextVar(
    "fastpriv_output_set", default=None)


def note_input(path: Any) -> None:
    """Record ``path`` as an input of this process: no output may be written over it."""
    if isinstance(path, (str, os.PathLike)):
        with contextlib.suppress(OSError, ValueError):
            p = os.fspath(path)
            if os.path.exists(p):
                _READ_INPUTS.add(os.path.realpath(p))


def _is_input(dest: str, inp: Any) -> bool:
    """Whether writing ``dest`` would replace the input ``inp`` or write inside it."""
    if not isinstance(inp, (str, os.PathLike)):
        return False
    p = os.fspath(inp)
    if not os.path.exists(p):
        return False
    real_inp = os.path.realpath(p)
    real = os.path.realpath(dest)
    if real == real_inp:
        return True
    with contextlib.suppress(OSError):
        if os.path.exists(dest) and os.path.samefile(dest, p):
            return True
    if os.path.isdir(real_inp):
        return os.path.commonpath([real, real_inp]) == real_inp
    return False


def check_output(path: str | os.PathLike, *, overwrite: bool = False,
                 inputs: Iterable[Any] = ()) -> str:
    """Check, before any work, that ``path`` can be written; return its absolute path.

    Refused: an input of the job or of this process (or a path inside an input folder),
    compared by real path and inode; anything that exists and is not a regular file
    (directory, device, FIFO, socket — never replaced, even with ``overwrite``); an existing
    file without ``overwrite``; a folder that is not writable.

    Raises
    ------
    OutputError
        The path is an input, not a regular file, or not writable.
    FileExistsError
        The file exists and ``overwrite`` is false.

    """
    raw = os.fspath(path)
    if raw in ("", "-"):
        raise OutputError(f"output {raw!r} is not a file name")
    dest = os.path.abspath(raw)
    for inp in [*inputs, *_READ_INPUTS]:
        if _is_input(dest, inp):
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
    if len({os.path.realpath(p) for p in out}) != len(out):
        raise OutputError(f"two outputs name the same file: {', '.join(out)}")
    return out


@dataclass
class _Staged:
    """One file of an :class:`OutputSet`: its temporary copy and where it goes."""

    dest: str
    tmp: str
    overwrite: bool
    inputs: tuple
    backup: str | None = None
    placed: bool = False


class OutputSet:
    """Files written as one unit: every one of them, or none (see the module docstring).

    :meth:`stage` writes a file's content to a temporary file beside its destination;
    :meth:`commit` puts every staged file in place; :meth:`discard` removes the temporary
    files. Used as a context manager, the set commits on a normal exit and discards on an
    exception.
    """

    def __init__(self) -> None:
        self._staged: list[_Staged] = []
        self._token = f"{os.getpid()}-{secrets.token_hex(6)}"

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def stage(self, path: str | os.PathLike, write: Callable[[str], None], *,
              overwrite: bool = False, inputs: Iterable[Any] = ()) -> str:
        """Write one file's content to a temporary file; return its destination path."""
        inputs = tuple(inputs)
        dest = check_output(path, overwrite=overwrite, inputs=inputs)
        if any(os.path.realpath(s.dest) == os.path.realpath(dest) for s in self._staged):
            raise OutputError(f"two outputs name the same file: {dest}")
        directory = os.path.dirname(dest)
        tmp = None
        try:
            os.makedirs(directory, exist_ok=True)
            tmp = _temp_path(dest, self._token)
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            umask = os.umask(0)
            os.umask(umask)
            write(tmp)
            _fault("stage")
            _fsync(tmp)
            os.chmod(tmp, 0o666 & ~umask)  # created 0600; outputs get the usual mode
        except OSError as exc:
            _unlink(tmp)
            raise OutputError(f"cannot write output {dest!r}: {exc.strerror or exc}") from None
        except BaseException:
            _unlink(tmp)
            raise
        self._staged.append(_Staged(dest, tmp, overwrite, inputs))
        return dest

    def discard(self) -> None:
        """Remove every staged temporary file (nothing is put in place)."""
        for s in self._staged:
            _unlink(s.tmp)
        self._staged = []

    def commit(self) -> list[str]:
        """Put every staged file in place, all or none; return the destination paths.

        Raises
        ------
        FileExistsError
            A destination exists (perhaps created by a concurrent run) and its file was
            staged without ``overwrite``: nothing is replaced.
        OutputError
            A rename failed: every file already placed is rolled back.

        """
        staged, self._staged = self._staged, []
        if not staged:
            return []
        folders = sorted({os.path.dirname(s.dest) for s in staged})
        try:
            with _locked(folders), _signals_deferred():
                for folder in folders:
                    recover(folder, _locked_already=True)
                for s in staged:
                    check_output(s.dest, overwrite=s.overwrite, inputs=s.inputs)
                if len(staged) == 1:
                    _place(staged[0])
                else:
                    _commit_many(staged, folders, self._token)
                for folder in folders:
                    _fsync(folder, directory=True)
        except OSError as exc:
            if isinstance(exc, FileExistsError) and exc.filename is None:
                raise
            raise OutputError(f"cannot write outputs {', '.join(s.dest for s in staged)}: "
                              f"{exc.strerror or exc}") from None
        finally:
            for s in staged:
                _unlink(s.tmp)
        return [s.dest for s in staged]


def _temp_path(dest: str, token: str) -> str:
    """Return a hidden temporary name beside ``dest`` that names the writing process."""
    return os.path.join(os.path.dirname(dest),
                        f".{os.path.basename(dest)}.fastpriv-{token}.tmp")


def _unlink(path: str | None) -> None:
    if path:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _place(s: _Staged) -> None:
    """Put one staged file in place: replace (``overwrite``) or create exclusively."""
    if s.overwrite:
        os.replace(s.tmp, s.dest)
    else:
        try:
            os.link(s.tmp, s.dest)
        except FileExistsError:
            raise FileExistsError(f"output {s.dest!r} exists (created meanwhile, perhaps by "
                                  "another run); pass overwrite=True (CLI: --overwrite) to "
                                  "replace it") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if os.path.lexists(s.dest):     # no hard links here: check, then rename
                raise FileExistsError(f"output {s.dest!r} exists") from None
            os.rename(s.tmp, s.dest)
        _unlink(s.tmp)
    s.placed = True


def _commit_many(staged: list[_Staged], folders: list[str], token: str) -> None:
    """Place several files as one unit, with backups and a journal (module docstring)."""
    for s in staged:
        if os.path.lexists(s.dest):
            s.backup = os.path.join(os.path.dirname(s.dest),
                                    f".{os.path.basename(s.dest)}.fastpriv-old-{token}")
            os.link(s.dest, s.backup)
    journals = []
    try:
        entries = [{"dest": s.dest, "tmp": s.tmp, "backup": s.backup,
                    "new": _inode(s.tmp)} for s in staged]
        for folder in folders:
            j = os.path.join(folder, f"{_JOURNAL_PREFIX}{token}.json")
            with open(j, "x", encoding="utf-8") as fh:
                json.dump({"token": token, "entries": entries}, fh)
            journals.append(j)
            _fsync(j)
            _fsync(folder, directory=True)
        _fault("commit-start")
        for s in staged:
            _place(s)
            _fault("commit-placed")
    except BaseException:
        _roll_back(staged)
        for j in journals:
            _unlink(j)
        raise
    for j in journals:                       # the commit point: no journal, the new set
        _unlink(j)
    for s in staged:
        _unlink(s.backup)


def _roll_back(staged: list[_Staged]) -> None:
    """Undo the files already placed: the old file back, or the new one removed."""
    for s in staged:
        if s.placed:
            if s.backup and os.path.lexists(s.backup):
                os.replace(s.backup, s.dest)
            else:
                _unlink(s.dest)
        _unlink(s.backup)


def _inode(path: str) -> list[int]:
    st = os.stat(path)
    return [st.st_dev, st.st_ino]


def recover(folder: str | os.PathLike, *, _locked_already: bool = False) -> int:
    """Roll back every commit that a killed fastpriv process left unfinished in ``folder``.

    Each journal names the files of one set: a file already replaced by its new version is
    put back from its backup (or removed, when it did not exist before), temporary files and
    backups are removed, then the journal. Temporary files of processes that no longer run
    are removed too. Runs automatically before every commit into ``folder``.

    Returns
    -------
    int
        Number of unfinished commits rolled back.

    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        return 0
    ctx = contextlib.nullcontext() if _locked_already else _locked([folder])
    n = 0
    with ctx:
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.startswith(_JOURNAL_PREFIX) and name.endswith(".json"):
                _undo_journal(path)
                n += 1
            elif name.startswith(".") and ".fastpriv-" in name and (
                    name.endswith(".tmp") or ".fastpriv-old-" in name):
                token = name.rsplit(".fastpriv-", 1)[1].replace("old-", "")
                if not _alive(token.split("-", 1)[0]):
                    _unlink(path)
    return n


def _undo_journal(path: str) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            entries = json.load(fh)["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        entries = []            # torn journal: written before any rename, nothing to undo
    for e in entries:
        dest, backup = e.get("dest"), e.get("backup")
        with contextlib.suppress(OSError):
            if os.path.lexists(dest) and _inode(dest) == list(e.get("new") or []):
                if backup and os.path.lexists(backup):
                    os.replace(backup, dest)
                else:
                    os.unlink(dest)
        _unlink(e.get("tmp"))
        with contextlib.suppress(OSError):
            _unlink(backup)
    _unlink(path)


def _alive(pid: str) -> bool:
    """Whether the process ``pid`` (a decimal string) still runs."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _locked(folders: Iterable[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on each folder (in sorted order: no deadlock)."""
    try:
        import fcntl
    except ImportError:                      # pragma: no cover - not POSIX
        yield
        return
    fds = []
    try:
        for folder in sorted(set(folders)):
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in fds:
            os.close(fd)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold back Ctrl-C, SIGTERM and SIGHUP until the block ends, then deliver them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    sigs = [s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None),
                        getattr(signal, "SIGHUP", None)) if s is not None]
    old = {s: signal.getsignal(s) for s in sigs}
    for s in sigs:
        signal.signal(s, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for s in sigs:
            signal.signal(s, old[s])
        for s in caught:
            handler = old[s]
            if callable(handler):
                handler(s, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), s)


def _fault(step: str) -> None:
    """Fault injection for the tests: ``FASTPRIV_IO_FAULT=<step>:<n>[:<signal>]``.

    At the n-th time the commit reaches ``step`` (``stage``, ``commit-start``,
    ``commit-placed``) the process sends itself the signal (default SIGKILL).
    """
    spec = os.environ.get("FASTPRIV_IO_FAULT", "")
    if not spec:
        return
    name, _, rest = spec.partition(":")
    if name != step:
        return
    count, _, sig = rest.partition(":")
    left = int(count or 1) - 1
    os.environ["FASTPRIV_IO_FAULT"] = f"{name}:{left}:{sig}"
    if left == 0:
        os.kill(os.getpid(), getattr(signal, sig or "SIGKILL"))


@contextlib.contextmanager
def output_set() -> Iterator[OutputSet]:
    """Make every write inside the block part of one :class:`OutputSet`, committed at its end.

    Nested blocks join the outer set. On an exception nothing is put in place.
    """
    current = _CURRENT.get()
    if current is not None:
        yield current
        return
    outputs = OutputSet()
    token = _CURRENT.set(outputs)
    try:
        with outputs:
            yield outputs
    finally:
        _CURRENT.reset(token)


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], *,
                 overwrite: bool = False, inputs: Iterable[Any] = ()) -> str:
    """Write ``path`` atomically by calling ``write(tmp_path)``, syncing and renaming.

    Inside :func:`output_set` the file joins the current set and is put in place when the
    set commits; otherwise it is committed at once.

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
    current = _CURRENT.get()
    if current is not None:
        return current.stage(path, write, overwrite=overwrite, inputs=inputs)
    with OutputSet() as one:
        return one.stage(path, write, overwrite=overwrite, inputs=inputs)


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
