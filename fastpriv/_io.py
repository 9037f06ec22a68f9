"""Safe output: every file fastpriv writes goes through :func:`atomic_write`.

* **Nothing partial, nothing mixed.** A file is written to a temporary file in its
  destination folder, flushed to disk, and only then put in place. The files of one job (a
  release's two tables, the auditor's view, the JSON and HTML reports) form one
  :class:`OutputSet` and are committed together: every temporary file is written first, so a
  full disk or an error leaves the old files untouched, and the renames then run with
  Ctrl-C, SIGTERM and SIGHUP deferred, under an exclusive lock on each destination folder.
  A set of several files keeps, while it is being committed, a journal
  (``.fastpriv-commit-<token>.json``) in each of its folders, naming that folder's files of
  the set, and a hard link to each file it replaces; should the process be killed (SIGKILL,
  power loss) between two renames, the next fastpriv write into a folder — or
  :func:`recover` — rolls that folder's files of the set back to the old ones.
  Inside :func:`output_set` every write joins the current set.
* **A journal is followed only if fastpriv wrote it** (:func:`recover`): its format tag,
  version and token, file names derived from the destination and the token (base names: no
  path leaves the folder), the recorded inode of each new file, the owner; no symbolic link
  is followed and nothing but a regular file is removed or replaced. Anything else is
  reported (:class:`JournalWarning`) and left alone, and never stops a write.
* **Nothing existing replaced unless asked.** Without ``overwrite`` a file is created by
  ``link(2)``, which fails when the name exists — even when a concurrent run created it a
  moment before (exclusive creation, not check-then-rename).
* **Never over an input, never over a special file.** An output that is an input of the job,
  or lies inside an input folder, is refused — compared by real path (symbolic links
  resolved) and by inode — as is anything that exists and is not a regular file. Every path
  the job reads through :func:`note_input` is an input, besides those passed explicitly, and
  so is the file standard input was redirected from (:func:`note_input_stream`).
* **Fault injection is for the test suite only**: :func:`_fault` calls the hook that
  :func:`install_fault_hook` installs (none by default, so it does nothing); no environment
  variable turns it on.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import os
import re
import secrets
import signal
import stat
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import InputError, OutputError

__all__ = ["announce_written", "atomic_write", "check_output", "check_outputs", "write_text",
           "write_json", "write_table", "OutputSet", "output_set", "note_input",
           "note_input_stream", "recover", "JournalWarning", "install_fault_hook"]

PathLike = "str | os.PathLike[str]"

#: What a journal says it is (with :data:`_JOURNAL_VERSION`): nothing else is followed.
_JOURNAL_FORMAT = "fastpriv journal"
_JOURNAL_VERSION = 2
#: A journal larger than this was not written by fastpriv (a set has a handful of files).
_JOURNAL_MAX_BYTES = 1 << 20
#: A commit token: the writer's process id and 12 random hex digits.
_TOKEN = r"(?P<pid>[0-9]{1,10})-[0-9a-f]{12}"
_JOURNAL_NAME = re.compile(rf"\.fastpriv-commit-(?P<token>{_TOKEN})\.json")
_TEMP_NAME = re.compile(rf"\.(?P<dest>.+)\.fastpriv-(?P<token>{_TOKEN})\.tmp", re.DOTALL)
_BACKUP_NAME = re.compile(rf"\.(?P<dest>.+)\.fastpriv-old-(?P<token>{_TOKEN})", re.DOTALL)
_READ_INPUTS: set[str] = set()
#: (st_dev, st_ino) of regular files read through a descriptor (standard input redirected)
_READ_STREAMS: set[tuple[int, int]] = set()
#: Called with the step name at each fault-injection point (tests only; None: no-op).
_FAULT_HOOK: Callable[[str], None] | None = None
_CURRENT: contextvars.ContextVar[OutputSet | None] = contextvars.ContextVar(
    "fastpriv_output_set", default=None)


def note_input(path: Any) -> None:
    """Record ``path`` as an input of this process: no output may be written over it."""
    if isinstance(path, (str, os.PathLike)):
        with contextlib.suppress(OSError, ValueError):
            p = os.fspath(path)
            if os.path.exists(p):
                _READ_INPUTS.add(os.path.realpath(p))


def note_input_stream(fd: int) -> None:
    """Record the file open on descriptor ``fd`` as an input no output may replace.

    ``fastpriv anonymize - … -o data.csv < data.csv``: standard input is the file itself, and
    it has no name to compare; when ``fd`` is a regular file its device and inode are
    recorded, and :func:`check_output` refuses an output that is that file. A pipe, terminal
    or closed descriptor records nothing (nothing can be written over it).
    """
    with contextlib.suppress(OSError, ValueError, TypeError):
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            _READ_STREAMS.add((st.st_dev, st.st_ino))


def _is_read_stream(dest: str) -> bool:
    """Whether ``dest`` (or the file a link there points to) is a file read through a descriptor."""
    if not _READ_STREAMS:
        return False
    for look in (os.lstat, os.stat):
        with contextlib.suppress(OSError, ValueError):
            st = look(dest)
            if (st.st_dev, st.st_ino) in _READ_STREAMS:
                return True
    return False


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
    compared by real path and inode, and the file standard input was read from
    (:func:`note_input_stream`); anything that exists and is not a regular file
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
    if _is_read_stream(dest):
        raise OutputError(f"refusing to write output {dest!r} over the input read from "
                          "standard input (it is the same file)")
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
        #: destination paths put in place by :meth:`commit`
        self.committed: list[str] = []
        self._announcements: list[str] = []

    def announce(self, text: str) -> None:
        """Say ``text`` on standard error once the set has committed (never if it fails)."""
        self._announcements.append(text)

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
        """Remove every staged temporary file (nothing is put in place, nothing announced)."""
        for s in self._staged:
            _unlink(s.tmp)
        self._staged = []
        self._announcements = []

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
        folders = sorted({_folder_of(s.dest) for s in staged})
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
        self.committed.extend(s.dest for s in staged)
        said, self._announcements = self._announcements, []
        for text in said:
            _say(text)
        return [s.dest for s in staged]


def _say(text: str) -> None:
    """Print one announcement on standard error (a closed stderr loses it quietly)."""
    import sys

    with contextlib.suppress(OSError, ValueError):
        print(text, file=sys.stderr)


def announce_written(dest: str, note: str = "") -> None:
    """Say ``wrote DEST (note)`` on standard error once ``dest`` is really in place.

    Inside :func:`output_set` the line waits for the set's commit (a failed commit says
    nothing was written, never "wrote"); outside, the file was committed already.
    """
    text = f"wrote {dest}" + (f" ({note})" if note else "")
    current = _CURRENT.get()
    if current is None:
        _say(text)
    else:
        current.announce(text)


def _temp_name(base: str, token: str) -> str:
    """Return the temporary file of the destination named ``base`` in the commit ``token``."""
    return f".{base}.fastpriv-{token}.tmp"


def _backup_name(base: str, token: str) -> str:
    """Return the hard link that keeps the old file named ``base`` while ``token`` commits."""
    return f".{base}.fastpriv-old-{token}"


def _journal_name(token: str) -> str:
    """Return the journal name of the commit ``token`` (one in each folder of the set)."""
    return f".fastpriv-commit-{token}.json"


def _temp_path(dest: str, token: str) -> str:
    """Return a hidden temporary name beside ``dest`` that names the writing process."""
    return os.path.join(os.path.dirname(dest), _temp_name(os.path.basename(dest), token))


def _folder_of(dest: str) -> str:
    """Return the real folder of ``dest`` (two spellings of one folder: one lock, one journal)."""
    return os.path.realpath(os.path.dirname(dest))


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
                                    _backup_name(os.path.basename(s.dest), token))
            os.link(s.dest, s.backup)
    journals: list[str] = []
    try:
        for folder in folders:
            _write_journal(folder, [s for s in staged if _folder_of(s.dest) == folder], token,
                           journals)
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


def _write_journal(folder: str, items: list[_Staged], token: str, journals: list[str]) -> None:
    """Write, flush and list in ``journals`` the journal of ``folder``'s files of the set.

    Entries hold base names only — the destination, its temporary file and its backup, the
    last two derived from the destination and ``token`` — and the inode of the new file:
    what :func:`recover` checks before it follows a journal.
    """
    entries = [{"dest": os.path.basename(s.dest), "tmp": os.path.basename(s.tmp),
                "backup": os.path.basename(s.backup) if s.backup else None,
                "new": _inode(s.tmp)} for s in items]
    path = os.path.join(folder, _journal_name(token))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    journals.append(path)                    # ours from here: removed on any failure
    with open(fd, "w", encoding="utf-8") as fh:
        json.dump({"format": _JOURNAL_FORMAT, "version": _JOURNAL_VERSION, "token": token,
                   "entries": entries}, fh)
    _fsync(path)
    _fsync(folder, directory=True)


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


_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class JournalWarning(UserWarning):
    """A file named like a commit journal that fastpriv did not follow; it is left in place."""


class _Untrusted(Exception):
    """Why a journal is not followed (the message completes "left … alone: ")."""


def recover(folder: str | os.PathLike, *, _locked_already: bool = False) -> int:
    """Roll back every commit that a killed fastpriv process left unfinished in ``folder``.

    Each journal names this folder's files of one set: a file already replaced by its new
    version is put back from its backup (or removed, when it did not exist before), temporary
    files and backups are removed, then the journal. Temporary files and backups of processes
    that no longer run are removed too. Runs automatically before every commit into
    ``folder``.

    Only what fastpriv wrote is followed, and nothing outside ``folder`` is touched: a
    journal must be a regular file of this user, of fastpriv's format and version, carry
    the token of its own name, and name only files of this folder derived from that token
    (:func:`_read_journal`); a new file is rolled back only if its inode is the recorded
    one. No symbolic link is followed and only regular files are removed or replaced. A
    journal that does not validate, or that cannot be rolled back, is reported as a
    :class:`JournalWarning` and left alone with its temporary files and backups; no journal
    content makes this function raise.

    Returns
    -------
    int
        Number of unfinished commits rolled back.

    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        return 0
    ctx = contextlib.nullcontext() if _locked_already else _locked([folder])
    with ctx:
        try:
            dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC)
        except OSError:
            return 0
        try:
            return _recover_at(dir_fd, folder)
        finally:
            os.close(dir_fd)


def _recover_at(dir_fd: int, folder: str) -> int:
    """:func:`recover` in the folder open on ``dir_fd``: journals first, then the sweep."""
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:                          # a folder one may write but not list
        return 0
    n = 0
    kept: set[str] = set()                   # tokens of journals left alone
    for name in names:
        if not (name.startswith(".fastpriv-commit-") and name.endswith(".json")):
            continue
        m = _JOURNAL_NAME.fullmatch(name)
        try:
            entries = _read_journal(dir_fd, name)
            _undo_journal(dir_fd, name, entries)
            n += 1
        except (_Untrusted, OSError, ValueError) as exc:
            if m is not None:
                kept.add(m["token"])
            reason = str(exc) if isinstance(exc, _Untrusted) else \
                f"it could not be rolled back ({getattr(exc, 'strerror', None) or exc})"
            _report(os.path.join(folder, name), reason)
    for name in names:
        m = _TEMP_NAME.fullmatch(name) or _BACKUP_NAME.fullmatch(name)
        if m is None or m["token"] in kept or _alive(m["pid"]):
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(name, dir_fd=dir_fd).st_mode):
                os.unlink(name, dir_fd=dir_fd)
    return n


def _read_journal(dir_fd: int, name: str) -> list[dict]:
    """Read and check the journal ``name`` of the folder open on ``dir_fd``; its entries.

    Raises
    ------
    _Untrusted
        Not a regular file of this user, too large, not JSON, or not what
        :func:`_write_journal` writes for the token of its name (:func:`_journal_entries`).

    """
    m = _JOURNAL_NAME.fullmatch(name)
    if m is None:
        raise _Untrusted("its name carries no fastpriv commit token")
    st = os.lstat(name, dir_fd=dir_fd)
    if not stat.S_ISREG(st.st_mode):
        raise _Untrusted("it is not a regular file (a link, folder or special file)")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise _Untrusted("it belongs to another user")
    if st.st_size > _JOURNAL_MAX_BYTES:
        raise _Untrusted("it is too large to be a fastpriv journal")
    fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0),
                 dir_fd=dir_fd)
    with open(fd, "rb") as fh:
        now = os.fstat(fh.fileno())
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise _Untrusted("it was replaced while being read")
        raw = fh.read(_JOURNAL_MAX_BYTES + 1)
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Untrusted("it is not a JSON journal") from None
    return _journal_entries(doc, m["token"])


def _journal_entries(doc: Any, token: str) -> list[dict]:
    """Check a parsed journal against what :func:`_write_journal` writes; its entries."""
    if not isinstance(doc, dict) or set(doc) != {"format", "version", "token", "entries"} \
            or doc["format"] != _JOURNAL_FORMAT:
        raise _Untrusted("it is not a fastpriv journal")
    if type(doc["version"]) is not int or doc["version"] != _JOURNAL_VERSION:
        raise _Untrusted(f"it is not a version-{_JOURNAL_VERSION} fastpriv journal")
    if doc["token"] != token:
        raise _Untrusted("its token is not the one in its name")
    entries = doc["entries"]
    if not isinstance(entries, list) or not entries:
        raise _Untrusted("it names no files")
    seen: set[str] = set()
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or set(e) != {"dest", "tmp", "backup", "new"}:
            raise _Untrusted(f"entry {i} is not a fastpriv journal entry")
        dest = e["dest"]
        if not _plain_name(dest) or dest in seen:
            raise _Untrusted(f"entry {i} does not name one file of the journal's own folder")
        if e["tmp"] != _temp_name(dest, token) or \
                e["backup"] not in (None, _backup_name(dest, token)):
            raise _Untrusted(f"entry {i} names files that are not its destination's "
                             "temporary file or backup for the journal's token")
        new = e["new"]
        if not (isinstance(new, list) and len(new) == 2
                and all(type(x) is int and x >= 0 for x in new)):
            raise _Untrusted(f"entry {i} records no inode")
        seen.add(dest)
    return entries


def _plain_name(name: Any) -> bool:
    """Whether ``name`` is a file name in its folder (no path) that fastpriv may write."""
    if not isinstance(name, str) or name in ("", ".", "..") or "\0" in name \
            or "/" in name or (os.altsep and os.altsep in name) or os.sep in name:
        return False
    if name.startswith(".fastpriv-commit-") or _TEMP_NAME.fullmatch(name) \
            or _BACKUP_NAME.fullmatch(name):
        return False
    try:
        os.fsencode(name)
    except (UnicodeError, ValueError):
        return False
    return True


def _undo_journal(dir_fd: int, name: str, entries: list[dict]) -> None:
    """Roll back the checked ``entries`` of journal ``name``, then remove it.

    A destination whose inode is the recorded new file gets its backup back (or is removed
    when the set created it); a backup that vanished leaves the new file in place.
    Temporary files and backups are removed. When any file an entry names is there but is
    not a regular file (a link, a folder) nothing is changed: the journal does not describe
    what fastpriv left, and is not followed (:class:`_Untrusted`).
    """
    found = [{key: _lstat(e[key], dir_fd) for key in ("dest", "tmp", "backup")}
             for e in entries]
    for i, sts in enumerate(found):
        for key, st in sts.items():
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise _Untrusted(f"the {key} of entry {i} is not a regular file")
    for e, sts in zip(entries, found, strict=True):
        dest, backup = e["dest"], e["backup"]
        st = sts["dest"]
        if st is not None and [st.st_dev, st.st_ino] == e["new"]:
            if backup is None:
                os.unlink(dest, dir_fd=dir_fd)
            elif sts["backup"] is not None:
                os.replace(backup, dest, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                sts["backup"] = None
        for key in ("tmp", "backup"):
            if sts[key] is not None:
                os.unlink(e[key], dir_fd=dir_fd)
    os.unlink(name, dir_fd=dir_fd)


def _lstat(name: str | None, dir_fd: int) -> os.stat_result | None:
    """``lstat`` of ``name`` in the folder open on ``dir_fd`` (None: no such file)."""
    if name is None:
        return None
    try:
        return os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None


def _report(path: str, reason: str) -> None:
    """Report a journal left alone as a :class:`JournalWarning`.

    Where warnings are errors it is one line on standard error instead: a report, never a
    failed write.
    """
    message = (f"left {path!r} alone: {reason}; fastpriv follows only the commit journals "
               "it wrote (remove the file if nothing needs it)")
    try:
        warnings.warn(message, JournalWarning, stacklevel=4)
    except Warning:
        print(f"fastpriv: warning: {message}", file=sys.stderr)


def _alive(pid: str) -> bool:
    """Whether the process ``pid`` (a decimal string) still runs."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, OverflowError, ProcessLookupError):
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


def install_fault_hook(hook: Callable[[str], None] | None) -> None:
    """Install the test suite's fault-injection hook (``None`` removes it).

    ``hook(step)`` is called each time a commit reaches ``step`` (``stage``,
    ``commit-start``, ``commit-placed``) — the test suite's launcher
    (``tests/fault_launcher.py``) kills or interrupts the process there. fastpriv itself never
    installs one and reads no environment variable for it: without a hook the steps do
    nothing.
    """
    global _FAULT_HOOK
    _FAULT_HOOK = hook


def _fault(step: str) -> None:
    """Call the fault-injection hook, if one is installed (:func:`install_fault_hook`)."""
    hook = _FAULT_HOOK
    if hook is not None:
        hook(step)


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
