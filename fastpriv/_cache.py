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

**Trust.** Numba's index is a pickle, so whoever can write the cache directory can run code
in every process that reads it. fastpriv creates ``<root>`` and every directory below it
with mode 0700 (owner only), and on POSIX systems refuses to use a cache whose root, or any
directory from the root down to a kernel module's directory, is writable by group or others
or owned by another user (a directory owned by root and not writable by others — a cache
baked into a read-only image layer — is accepted): the kernels are then compiled in memory
(Numba's ``NullCache``) and one warning is logged on the ``fastpriv`` logger, once per
process.

**The package's kernels.** A wheel ships the kernels compiled for portable CPUs
(:data:`PACKAGE_CACHE`, built by :mod:`fastpriv._package_cache`): a kernel the user's cache
does not hold is loaded from there before it is compiled, and a compiled kernel is saved to
the user's cache as before. Numba keys each entry on its code generator's *magic tuple*
(target triple, CPU name, CPU features); the package's entries are looked up under the
tuple they were compiled for, not this process's, and their object code is linked into
this process as it is (code for the baseline CPU runs on every CPU of the architecture).
:func:`shipped` picks the most capable target the CPU can run (its features as Numba sees
them: ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` count), and only where the Numba, llvmlite
and Python versions, NumPy's major version and the target triple are the build's;
otherwise kernels compile as without them, and one line on the ``fastpriv`` logger says
why (once, at the first kernel the user's cache misses). A user cache that cannot be used
(untrusted, or no location) still leaves the package's kernels (:class:`_PackageOnlyCache`).
The package's cache is trusted like the package's modules next to it (whoever can write
one can write the other) and never written at run time; a source checkout or an editable
install has none. ``FASTPRIV_NO_CACHE=1`` turns it off too.

**Damage.** A cache entry that cannot be read back — an index or data file that is
truncated, holds garbage or does not unpickle — is a cache miss: the kernel is compiled
again and the entry overwritten (one line on the ``fastpriv`` logger per file), instead of
every command failing until the cache is deleted by hand.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numba.core import caching

from ._progress import gc_paused

__all__ = ["UnsafeCacheDirectory", "cache_dir_for", "cache_root", "make_cache", "source_hash",
           "unsafe_reason", "PACKAGE_CACHE", "MANIFEST", "TARGETS", "Shipped", "shipped",
           "mismatch"]

#: The package's own compiled kernels (built by :mod:`fastpriv._package_cache` with a wheel;
#: absent in a source checkout and an editable install).
PACKAGE_CACHE = Path(__file__).resolve().parent / "_kernel_cache"

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


def _levels(root: Path, path: Path) -> list[Path]:
    """``root`` and every directory from it down to ``path`` (``[path]`` when outside it)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return [path]
    out = [root]
    for part in rel.parts:
        out.append(out[-1] / part)
    return out


def _make_private_dirs(root: Path, path: Path) -> None:
    """Create ``path``; ``root`` and each directory below it that is created get mode 0700.

    The parents of ``root`` are created with the default mode.
    """
    levels = _levels(root, path)
    levels[0].parent.mkdir(parents=True, exist_ok=True)
    for level in levels:
        try:
            os.mkdir(level, 0o700)
        except FileExistsError:
            pass


@functools.lru_cache(maxsize=None)
def _writable(path: Path, root: Path | None = None) -> bool:
    """Create ``path`` (new directories from ``root`` down: mode 0700) and probe a write.

    Memoized: probed once per process and directory.
    """
    try:
        _make_private_dirs(path if root is None else root, path)
        probe = path / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


class UnsafeCacheDirectory(RuntimeError):
    """A cache directory others could have written (so its pickles must not be loaded)."""


def unsafe_reason(root: Path, path: Path, *, euid: int | None = None) -> str | None:
    """Return why the cache at ``path`` must not be trusted, or ``None`` when it may be.

    ``root`` and each directory from it down to ``path`` that exists must be owned by the
    user ``euid`` (default: the effective user) or by root, and writable by neither group
    nor others. Always ``None`` where POSIX permissions do not apply (Windows).

    Parameters
    ----------
    root : Path
        The cache root (``FASTPRIV_CACHE_DIR`` or the user cache directory).
    path : Path
        A kernel module's directory below ``root``.
    euid : int, optional
        The user that reads the cache (default ``os.geteuid()``).

    Returns
    -------
    str or None
        One sentence naming the directory and what is wrong with it.

    """
    if os.name != "posix":
        return None
    euid = os.geteuid() if euid is None else euid
    for level in _levels(root, path):
        try:
            st = os.stat(level)
        except OSError:
            break                      # not there (yet): nothing below it can be read
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            who = ("group and others" if st.st_mode & stat.S_IWGRP and st.st_mode & stat.S_IWOTH
                   else "its group" if st.st_mode & stat.S_IWGRP else "others")
            return (f"{level} is writable by {who} "
                    f"(mode {stat.S_IMODE(st.st_mode):04o})")
        if st.st_uid not in (euid, 0):
            return f"{level} is owned by another user (uid {st.st_uid})"
    return None


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
        _make_private_dirs(cache_root(), self._path)

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
        root = cache_root()
        path = cache_dir_for(py_file, root)
        if _writable(path, root):
            locator = cls(py_func, py_file, path, read_only=False)
        elif path.is_dir() and os.access(path, os.R_OK | os.X_OK):
            locator = cls(py_func, py_file, path, read_only=True)
        else:
            _note_once("unwritable", f"cannot create the kernel cache directory {root} "
                       "(set FASTPRIV_CACHE_DIR to a writable directory); using Numba's "
                       "default cache location instead")
            return None
        # checked after creating: a directory planted in between is caught as well
        reason = unsafe_reason(root, path)
        if reason is not None:
            raise UnsafeCacheDirectory(reason)
        return locator


class _ContentCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [_ContentLocator, *caching.CompileResultCacheImpl._locator_classes]


def _damaged(path: str, exc: BaseException, replaced: bool = True) -> None:
    """Log (once per path and process) that a cache entry is unreadable (and is replaced)."""
    first = (str(exc).splitlines() or [""])[0]
    _note_once(f"damaged:{path}", f"kernel cache entry {path} is unreadable "
               f"({type(exc).__name__}{': ' + first if first else ''}); compiling the "
               "kernel " + ("again and replacing it" if replaced else "instead"))


class _TolerantCacheFile(caching.IndexDataCacheFile):
    """Numba's index and data files, where an entry that cannot be read back is a miss.

    A truncated or garbage index reads as empty (the next save rewrites it); a data file
    that cannot be unpickled reads as missing (the next save overwrites it).
    """

    #: Whether a damaged entry is overwritten by the next save (the user's cache) or never
    #: written (the package's).
    replaced = True

    def _load_index(self) -> dict:
        try:
            overloads = super()._load_index()
            if not isinstance(overloads, dict):
                raise TypeError(f"the index holds a {type(overloads).__name__}, not a dict")
            return overloads
        except Exception as exc:  # noqa: BLE001 - any unreadable index is a miss
            _damaged(self._index_path, exc, self.replaced)
            return {}

    def _load_data(self, name: str) -> Any:
        try:
            return super()._load_data(name)
        except FileNotFoundError:
            raise                        # removed since the index was read: numba's miss
        except Exception as exc:  # noqa: BLE001 - any unreadable entry is a miss
            _damaged(self._data_path(name), exc, self.replaced)
            return None


# =================================================================== the package's kernels
#: What the kernels under :data:`PACKAGE_CACHE` were built with (JSON).
MANIFEST = "manifest.json"

#: Portable targets, most capable first: LLVM CPU name and the CPU features (LLVM's names)
#: a machine needs to run code compiled for it. ``x86-64-v3`` is the x86-64 psABI level 3
#: (Haswell, Zen 1 and later); ``generic`` is LLVM's baseline for the architecture.
TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "x86-64-v3": ("x86-64-v3", ("avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt",
                                "movbe", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3",
                                "xsave")),
    "generic": ("generic", ()),
}


@dataclass(frozen=True)
class Shipped:
    """The package's kernels for one target, usable in this process.

    Attributes
    ----------
    root : Path
        The target's directory (module directories below it, as in the user cache).
    target : str
        The target's name (a key of :data:`TARGETS`).
    magic : tuple of str
        The code generator's magic tuple the entries were saved under.

    """

    root: Path
    target: str
    magic: tuple[str, str, str]


def _versions() -> dict[str, str]:
    """Return the versions compiled code depends on, in this process."""
    import llvmlite
    import numba
    import numpy

    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "python": sys.implementation.cache_tag + getattr(sys, "abiflags", ""),
            "numpy": numpy.__version__}


def _host_magic() -> tuple[str, str, str]:
    from numba.core.registry import cpu_target

    return tuple(cpu_target.target_context.codegen().magic_tuple())


def mismatch(manifest: dict, versions: dict[str, str], triple: str) -> str | None:
    """Return why kernels built as ``manifest`` says cannot be used here, or ``None``.

    Parameters
    ----------
    manifest : dict
        The package cache's :data:`MANIFEST`.
    versions : dict
        This process's ``numba``, ``llvmlite``, ``python`` (cache tag) and ``numpy`` versions.
    triple : str
        This process's LLVM target triple.

    Returns
    -------
    str or None
        One clause naming what differs, built-with against installed.

    Examples
    --------
    >>> m = {"numba": "0.68.1", "llvmlite": "0.50.0", "python": "cpython-311",
    ...      "numpy": "2.4.6", "triple": "x86_64-unknown-linux-gnu"}
    >>> v = dict(m)
    >>> mismatch(m, v, "x86_64-unknown-linux-gnu") is None
    True
    >>> mismatch(m, dict(v, numba="0.69.0", llvmlite="0.51.0"), "x86_64-unknown-linux-gnu")
    'built with Numba 0.68.1 and llvmlite 0.50.0; installed: Numba 0.69.0 and llvmlite 0.51.0'
    >>> mismatch(m, dict(v, numpy="2.0.1"), "x86_64-unknown-linux-gnu") is None
    True

    """
    names = {"numba": "Numba", "llvmlite": "llvmlite", "python": "Python", "numpy": "NumPy"}
    differ = [k for k in ("numba", "llvmlite", "python") if manifest.get(k) != versions[k]]
    if str(manifest.get("numpy", "")).split(".")[0] != versions["numpy"].split(".")[0]:
        differ.append("numpy")
    if differ:
        built = " and ".join(f"{names[k]} {manifest.get(k)}" for k in differ)
        here = " and ".join(f"{names[k]} {versions[k]}" for k in differ)
        return f"built with {built}; installed: {here}"
    if manifest.get("triple") != triple:
        return f"built for {manifest.get('triple')}; this machine is {triple}"
    return None


@functools.lru_cache(maxsize=None)
def shipped() -> Shipped | None:
    """Return the package's kernels this process can load, or ``None``.

    ``None`` silently where the package has none (a source checkout, an editable install);
    otherwise with one line on the ``fastpriv`` logger saying why they do not apply.
    Memoized: decided once per process, at the first kernel the user's cache misses.
    """
    if not PACKAGE_CACHE.is_dir() or cache_root().resolve() == PACKAGE_CACHE:
        return None     # none shipped, or this process fills it (_package_cache.build)

    def unusable(why: str) -> None:
        _note_once("shipped", f"the kernels compiled with this package are not used ({why}): "
                   f"kernels are compiled on first use instead, once (cached in "
                   f"{cache_root()}; `fastpriv warmup` compiles them all ahead)")

    try:
        manifest = json.loads((PACKAGE_CACHE / MANIFEST).read_text(encoding="utf-8"))
        targets = [(str(t["name"]), set(t["requires"]), str(t["dir"]),
                    tuple(str(x) for x in t["magic"])) for t in manifest["targets"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        unusable(f"{PACKAGE_CACHE / MANIFEST} is unreadable: {type(exc).__name__}")
        return None
    triple, _, features = _host_magic()
    why = mismatch(manifest, _versions(), triple)
    if why is not None:
        unusable(why)
        return None
    have = {f[1:] for f in features.split(",") if f.startswith("+")}
    for name, requires, folder, magic in targets:
        if requires <= have:
            return Shipped(PACKAGE_CACHE / folder, name, magic)
    unusable(f"no target fits this CPU: {', '.join(t[0] for t in targets)}")
    return None


class _ShippedCacheFile(_TolerantCacheFile):
    """The package's index and data files for one kernel: read, never written."""

    replaced = False


class _Target:
    """Stands in for a code generator in Numba's index key: the target entries were built for."""

    def __init__(self, magic: tuple[str, str, str]) -> None:
        self._magic = magic

    def magic_tuple(self) -> tuple[str, str, str]:
        return self._magic


class _ShippedEntries:
    """One kernel's entries in the package's cache (:mod:`fastpriv._package_cache`).

    Looked up under the magic tuple of the portable target they were compiled for (Numba's
    index key holds the target triple, CPU name and features, besides the signature and the
    bytecode's hash), and rebuilt in this process's target context: the object code is
    linked as it is, so code for a baseline CPU runs on the host.
    """

    def __init__(self, py_func: Any, py_file: str, shipped: Any) -> None:
        self._py_func = py_func
        stem = Path(py_file).stem
        stamp = source_hash(py_file)
        self.path = shipped.root / f"{stem}-{stamp[:20]}"
        # Numba's file name: <module>.<qualname>-<disambiguator: first line>.py<XY><abiflags>
        qualname = py_func.__qualname__.replace("<", "").replace(">", "")
        base = (f"{stem}.{qualname}-{py_func.__code__.co_firstlineno}"
                f".py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}")
        self._file = _ShippedCacheFile(cache_path=str(self.path), filename_base=base,
                                       source_stamp=stamp)
        self._target = _Target(shipped.magic)

    @classmethod
    def of(cls, py_func: Any) -> _ShippedEntries | None:
        """Return the entries of ``py_func`` in the package, or ``None`` (none shipped)."""
        found = shipped()
        py_file = getattr(py_func.__code__, "co_filename", "")
        if found is None or not os.path.isfile(py_file):
            return None
        return cls(py_func, py_file, found)

    def load(self, sig: Any, target_context: Any) -> Any:
        """Rebuild the entry for ``sig`` in ``target_context``; ``None`` when not shipped."""
        from numba.core import compiler

        key = caching.Cache._index_key(self, sig, self._target)
        data = self._file.load(key)
        return None if data is None else compiler.CompileResult._rebuild(target_context, *data)


class _FromPackage:
    """Falls back to the package's compiled kernels (a mixin of the caches below)."""

    _py_func: Any
    _shipped: Any = False          # False: not looked up yet

    def _from_package(self, sig: Any, target_context: Any, tolerant: bool) -> Any:
        if self._shipped is False:
            self._shipped = _ShippedEntries.of(self._py_func)
        entries = self._shipped
        if entries is None:
            return None
        if not tolerant:
            return entries.load(sig, target_context)
        try:
            return entries.load(sig, target_context)
        except Exception as exc:  # noqa: BLE001 - an entry that does not rebuild is a miss
            _damaged(str(entries.path), exc, replaced=False)
            return None


def _load_lazily(load: Any, target_context: Any, refresh: bool) -> Any:
    """Return ``load(tolerant)`` after setting up the runtime only, else after a full refresh.

    ``load(False)`` may raise (an entry that does not rebuild without Numba's full set-up:
    it is retried after :meth:`refresh`); ``load(True)`` treats what does not rebuild as a
    miss. ``refresh=True`` skips the lazy attempt (kernels with ``parallel=True``).
    """
    with gc_paused():
        if not refresh:
            _runtime_only(target_context)
            try:
                return load(False)
            except Exception:  # noqa: BLE001 - retried below with Numba's full set-up
                pass
        target_context.refresh()
        return load(True)


def _runtime_only(target_context: Any) -> None:
    """Initialize what loaded machine code links against, and nothing more.

    Numba's own ``load_overload`` first calls ``target_context.refresh()``, which imports
    and installs every implementation registry of Numba's CPU target (``numba.np.arraymath``
    with its BLAS probe importing ``scipy.linalg``, ``numba.typed``, the random and datetime
    modules, …) and refreshes the typing context: about 0.25 CPU-s per process, the largest
    single cost of a command whose kernels are all cached — and needed only to *compile*
    (Numba's compiler refreshes both contexts itself before compiling). Rebuilding a cached
    kernel needs the runtime: the NRT's symbols and its atomic helpers (``rtsys``), while
    the C helpers, exception objects and math functions are registered when the context is
    created.
    """
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    _import_arraymath_without_blas_probe()


@functools.lru_cache(maxsize=None)
def _import_arraymath_without_blas_probe() -> None:
    """Import ``numba.np.arraymath`` without its BLAS probe importing ``scipy.linalg``.

    Unpickling a cached kernel imports the modules of the Numba implementations compiled
    into it (their environments), ``numba.np.arraymath`` among them for most kernels; at
    import it probes for BLAS with ``import scipy.linalg.cython_blas`` (0.1-0.15 CPU-s,
    for ``np.dot``-like code fastpriv's kernels do not contain). When SciPy is installed —
    ``import numba`` has imported the ``scipy`` package then — the probe's answer is known
    to be yes, and it is skipped during the import; the probe is restored afterwards, so
    compiling code that calls BLAS still imports it. Without SciPy, or when Numba's
    modules are not as expected, nothing is changed.
    """
    if "numba.np.arraymath" in sys.modules or "scipy" not in sys.modules:
        return
    try:
        from numba.np import linalg
    except ImportError:  # pragma: no cover - a Numba without it
        return
    probe = getattr(linalg, "ensure_blas", None)
    if probe is None:  # pragma: no cover - another Numba layout
        return
    linalg.ensure_blas = lambda: None
    try:
        from numba.np import arraymath
    finally:
        linalg.ensure_blas = probe
    if getattr(arraymath, "ensure_blas", None) is not None:
        arraymath.ensure_blas = probe


class FastprivCache(_FromPackage, caching.FunctionCache):
    """Numba's function cache with :class:`_ContentLocator` first, then the package's kernels.

    A kernel the user's cache does not hold is taken from the package's compiled kernels
    when it ships them (:class:`_ShippedEntries`), else compiled and saved to the user's
    cache. It never fails a compile because the cache cannot be written (the kernel then
    just is not saved), and never fails one because an entry cannot be read back (the
    kernel is compiled again and the entry overwritten). Loading an entry skips Numba's
    refresh of the typing and target contexts (:func:`_runtime_only`) unless
    ``refresh=True`` (kernels with ``parallel=True``, whose code needs the threading layer
    the refresh sets up); an entry that fails to rebuild that way is loaded again after a
    full refresh before it counts as damaged.
    """

    _impl_class = _ContentCacheImpl

    def __init__(self, py_func: Any, refresh: bool = False) -> None:
        super().__init__(py_func)
        self._refresh = refresh
        self._cache_file = _TolerantCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp())

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        def load(tolerant: bool) -> Any:
            cres = None                  # (Windows: an access error swallowed is a miss)
            with self._guard_against_spurious_io_errors():
                cres = (self._load_overload if tolerant else
                        functools.partial(caching.FunctionCache._load_overload, self))(
                    sig, target_context)
            if cres is None:
                cres = self._from_package(sig, target_context, tolerant)
            return cres

        return _load_lazily(load, target_context, self._refresh)

    def _load_overload(self, sig: Any, target_context: Any) -> Any:
        try:
            return super()._load_overload(sig, target_context)
        except Exception as exc:  # noqa: BLE001 - an entry that does not rebuild is a miss
            _damaged(self._cache_path, exc)
            return None

    def _save_overload(self, sig: Any, data: Any) -> None:
        try:
            super()._save_overload(sig, data)
        except OSError as exc:
            _note_once("save", f"compiled kernels are not saved to {self.cache_path} ({exc})")


class _PackageOnlyCache(_FromPackage, caching.NullCache):
    """No user cache: kernels come from the package's compiled kernels, else compile in memory."""

    def __init__(self, py_func: Any, refresh: bool = False) -> None:
        self._py_func = py_func
        self._refresh = refresh

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        return _load_lazily(functools.partial(self._from_package, sig, target_context),
                            target_context, self._refresh)


def make_cache(py_func: Any, refresh: bool = False) -> Any:
    """Return the on-disk cache of a kernel (a ``NullCache`` when no location is usable).

    ``refresh=True``: set up Numba's whole target before loading (see
    :class:`FastprivCache`). Without a usable user cache, a package that ships compiled
    kernels still serves them (:class:`_PackageOnlyCache`).
    """
    try:
        return FastprivCache(py_func, refresh=refresh)
    except (UnsafeCacheDirectory, RuntimeError, OSError) as exc:
        failure = exc
    packaged = PACKAGE_CACHE.is_dir()
    instead = ("loaded from the package's compiled kernels or compiled in memory" if packaged
               else "compiled in memory")
    if isinstance(failure, UnsafeCacheDirectory):
        _note_once("unsafe", f"ignoring the kernel cache: {failure}, so another user could "
                   f"plant code in it; kernels are {instead} instead (use a "
                   "FASTPRIV_CACHE_DIR of your own, or `chmod -R go-w` the directory if you "
                   "trust its contents)")
    else:
        _note_once("none", f"kernels are {instead} in every process: no writable cache "
                   f"location ({failure})")
    return _PackageOnlyCache(py_func, refresh) if packaged else caching.NullCache()
