r"""Where compiled kernels are kept on disk: a Numba cache that survives reinstalling and copying.

Numba's own cache lives next to each module (``__pycache__``), in a directory named after
the module's *absolute path*, so a cache built in a Docker build step, in another virtual
environment or on another cluster node is not found after a reinstall or a copy. fastpriv
keeps its kernels in a directory the user controls instead, named after what the machine
code actually depends on:

``<root>/numba-<numba version>-py<XY>/<cpu name>-<cpu features hash>/<module>-<source hash>/``

* ``<root>`` is ``FASTPRIV_CACHE_DIR`` when set, else the user cache directory
  (``$XDG_CACHE_HOME/fastpriv/numba``, default ``~/.cache/fastpriv/numba``; on macOS
  ``~/Library/Caches/fastpriv/numba``; on Windows ``%LOCALAPPDATA%\fastpriv\numba``).
* ``<source hash>`` is the SHA-256 of the kernel module's source text together with the
  kernel modules it imports from (``from .other import helper``, transitively), so editing a
  helper invalidates its callers, while the install path and the files' modification times
  play no part. Numba's index inside the directory is stamped with the same hash and keyed
  on the signature, the target CPU and the function's bytecode, as usual.
* The CPU part is Numba's own target description (``NUMBA_CPU_NAME`` /
  ``NUMBA_CPU_FEATURES`` change it): machines of different kinds sharing one directory keep
  separate entries instead of overwriting each other's index.

A cache directory that cannot be written is still *read* when it exists (a cache baked
into a read-only image layer). When it neither exists nor can be created, kernels fall back
to Numba's default locations (``__pycache__`` next to the module, or Numba's user-wide cache)
and, when none of those is writable either, to no cache at all; one line is logged on the
``fastpriv`` logger, once per process. ``FASTPRIV_NO_CACHE=1`` turns the disk cache off.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from numba.core import caching

__all__ = ["cache_root", "cache_dir_for", "make_cache", "source_hash"]

_LOG = logging.getLogger("fastpriv")
_NOTED: set[str] = set()
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+\.(\w+)\s+import\b", re.MULTILINE)


def _note_once(key: str, message: str) -> None:
    """Log ``message`` once per process (``key`` identifies the situation)."""
    if key not in _NOTED:
        _NOTED.add(key)
        _LOG.warning("fastpriv: %s", message)


def _user_cache_home() -> Path:
    """Return the platform's per-user cache directory (XDG on Linux and other Unixes)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
        return Path(base)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"


def cache_root() -> Path:
    """Return the directory fastpriv's compiled kernels are kept in (from the environment).

    ``FASTPRIV_CACHE_DIR`` when set and non-empty, else ``<user cache dir>/fastpriv/numba``.
    """
    explicit = os.environ.get("FASTPRIV_CACHE_DIR", "")
    if explicit:
        return Path(explicit).expanduser()
    return _user_cache_home() / "fastpriv" / "numba"


@functools.lru_cache(maxsize=None)
def _target_tag() -> str:
    """``numba-<version>-py<XY>/<cpu>-<features hash>``: what compiled code depends on."""
    import numba
    from numba.core.registry import cpu_target

    triple, cpu, features = cpu_target.target_context.codegen().magic_tuple()
    feat = hashlib.sha256(f"{triple}|{features}".encode()).hexdigest()[:12]
    py = f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
    cpu = re.sub(r"[^A-Za-z0-9_.-]", "_", cpu) or "cpu"
    return os.path.join(f"numba-{numba.__version__}-{py}", f"{cpu}-{feat}")


@functools.lru_cache(maxsize=None)
def _file_digest(path: str, mtime_ns: int, size: int) -> tuple[bytes, tuple[str, ...]]:
    """SHA-256 of a file's bytes and the sibling modules it imports relatively."""
    data = Path(path).read_bytes()
    siblings = tuple(sorted(set(_RELATIVE_IMPORT.findall(data.decode("utf-8", "replace")))))
    return hashlib.sha256(data).digest(), siblings


def source_hash(py_file: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a module's source and, transitively, of its relative imports.

    Only the files' contents count (not their paths or modification times), so two copies
    of the same release hash alike.
    """
    h = hashlib.sha256()
    seen: set[str] = set()
    todo = [os.path.abspath(py_file)]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        st = os.stat(path)
        digest, siblings = _file_digest(path, st.st_mtime_ns, st.st_size)
        h.update(os.path.basename(path).encode() + b"\0" + digest)
        folder = os.path.dirname(path)
        for name in siblings:
            sibling = os.path.join(folder, name + ".py")
            if os.path.isfile(sibling):
                todo.append(sibling)
    return h.hexdigest()


def cache_dir_for(py_file: str | os.PathLike[str], root: Path | None = None) -> Path:
    """Return the directory the kernels of module ``py_file`` are cached in under ``root``."""
    root = cache_root() if root is None else root
    stem = Path(py_file).stem
    return root / _target_tag() / f"{stem}-{source_hash(py_file)[:20]}"


@functools.lru_cache(maxsize=None)
def _writable(path: Path) -> bool:
    """Create ``path`` if needed and check that a file can be written in it.

    Memoized: probed once per process and directory.
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


class _ContentLocator(caching._CacheLocator):
    """Numba cache locator keyed on the source contents, rooted in :func:`cache_root`."""

    def __init__(self, py_func: Any, py_file: str, path: Path, read_only: bool) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._path = path
        self._stamp = source_hash(py_file)
        self.read_only = read_only

    def ensure_cache_path(self) -> None:
        if self.read_only:
            raise OSError(f"fastpriv cache directory {self._path} is read-only")
        os.makedirs(self._path, exist_ok=True)

    def get_cache_path(self) -> str:
        return str(self._path)

    def get_source_stamp(self) -> str:
        return self._stamp

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> _ContentLocator | None:
        if not os.path.isfile(py_file):
            return None
        path = cache_dir_for(py_file)
        if _writable(path):
            return cls(py_func, py_file, path, read_only=False)
        if path.is_dir() and os.access(path, os.R_OK | os.X_OK):
            return cls(py_func, py_file, path, read_only=True)
        _note_once("unwritable", f"cannot create the kernel cache directory {cache_root()} "
                   "(set FASTPRIV_CACHE_DIR to a writable directory); using Numba's default "
                   "cache location instead")
        return None


class _ContentCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [_ContentLocator, *caching.CompileResultCacheImpl._locator_classes]


class FastprivCache(caching.FunctionCache):
    """Numba's function cache with :class:`_ContentLocator` first.

    It never fails a compile because the cache cannot be written (the kernel then just is
    not saved).
    """

    _impl_class = _ContentCacheImpl

    def _save_overload(self, sig: Any, data: Any) -> None:
        try:
            super()._save_overload(sig, data)
        except OSError as exc:
            _note_once("save", f"compiled kernels are not saved to {self.cache_path} ({exc})")


def make_cache(py_func: Any) -> Any:
    """Return the on-disk cache of a kernel (a ``NullCache`` when no location is usable)."""
    try:
        return FastprivCache(py_func)
    except (RuntimeError, OSError) as exc:
        _note_once("none", f"kernels are compiled in every process: no writable cache "
                   f"location ({exc})")
        return caching.NullCache()
