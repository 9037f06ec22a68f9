"""Thread count of fastpriv's multi-threaded kernels: the ``n_jobs`` convention.

Most multi-threaded work runs as **serial** ``nogil`` kernels over chunks (a range of rows
or groups each), called from a small Python thread pool by :func:`run_chunks` — one
compiled kernel serves the one-thread and the many-thread path, and nothing is compiled
with ``parallel=True`` (whose parfor lowering is the slowest part of a cold start). The
pool has ``numba.config.NUMBA_NUM_THREADS`` threads (default: the number of cores; set the
``NUMBA_NUM_THREADS`` environment variable before the first call to change it); each calling
thread **masks** how many of them it uses with :func:`numba.set_num_threads` — the same
mask Numba's own ``prange`` kernels (``parallel=True``, a few remain) obey. The mask is
thread-local: setting it in one thread does not change it in another (a Dask worker
thread, a web-server thread, …).

:func:`n_jobs` is a context manager that sets the mask for the calling thread and restores
the previous value on exit, also when the body raises::

    from fastpriv import Release
    from fastpriv._threads import n_jobs

    with n_jobs(1):                    # single-threaded, e.g. inside a Dask task
        rel = Release.from_batches("data/", sensitive="disease", group="gid")

Functions that take an ``n_jobs=`` argument use it the same way. Values follow the
joblib/scikit-learn convention:

* ``None`` — keep the current setting (by default every thread of the pool);
* a positive integer ``n`` — ``min(n, pool size)`` threads (asking for more threads than the
  pool has is not an error: the pool size is the hard limit);
* ``-1`` — all threads of the pool; ``-2`` all but one, … (never below 1).

``n_jobs=1`` also makes the kernels skip their per-thread buffers where they have a serial
path, so it is the right choice when an outer layer (Dask, a process pool, a thread pool of
your own) already keeps every core busy.
"""

from __future__ import annotations

import contextlib
import numbers
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .errors import InputError, InputTypeError

__all__ = ["n_jobs", "resolve_n_jobs", "pool_size", "current_threads", "run_chunks",
           "chunk_bounds"]

T = TypeVar("T")


def pool_size() -> int:
    """Threads in Numba's pool (``numba.config.NUMBA_NUM_THREADS``), the largest ``n_jobs``."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


def current_threads() -> int:
    """Threads the calling thread's parallel kernels use now (``numba.get_num_threads()``).

    Before Numba's thread pool has been launched nobody can have masked it, so the answer
    is the pool size — returned without launching the pool (which costs a noticeable
    fraction of a second in a fresh process that may never run a parallel kernel).
    """
    import numba

    try:
        from numba.np.ufunc import parallel as _parallel

        if not getattr(_parallel, "_is_initialized", True):
            return pool_size()
    except ImportError:  # pragma: no cover - layout of a future numba
        pass
    return int(numba.get_num_threads())


def resolve_n_jobs(n_jobs: Any, *, name: str = "n_jobs") -> int:
    """Return the number of threads ``n_jobs`` stands for (see the module docstring).

    Raises ``TypeError`` for a non-integer and ``ValueError`` for 0. Negative values below
    ``-pool_size()`` are clamped to 1 thread.
    """
    if n_jobs is None:
        return current_threads()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise InputTypeError(f"{name} must be an integer or None, got {type(n_jobs).__name__} "
                        f"{n_jobs!r}")
    n = int(n_jobs)
    if n == 0:
        raise InputError(f"{name} must be a positive integer, -1 (all threads), -2 (all but "
                         "one), ... or None; got 0")
    size = pool_size()
    if n < 0:
        return max(1, size + 1 + n)
    return min(n, size)


@contextlib.contextmanager
def n_jobs(n_jobs: Any = None) -> Iterator[int]:
    """Run the body with ``n_jobs`` threads for parallel kernels; restore the setting after.

    Parameters
    ----------
    n_jobs : int or None
        ``None`` keeps the current setting; ``n > 0`` uses ``min(n, pool size)`` threads;
        ``-1`` all threads, ``-2`` all but one, ….

    Yields
    ------
    int
        The number of threads in effect inside the body.

    Examples
    --------
    >>> from fastpriv._threads import n_jobs, current_threads
    >>> with n_jobs(1) as n:
    ...     n, current_threads()
    (1, 1)

    """
    import numba

    want = resolve_n_jobs(n_jobs)
    before = current_threads()
    if want != before:
        numba.set_num_threads(want)
    try:
        yield want
    finally:  # restore even if the body changed the setting itself
        if current_threads() != before:
            numba.set_num_threads(before)


# ============================================================================ thread pool
_POOL: Any = None
_POOL_LOCK = threading.Lock()
_IN_POOL = threading.local()


def _executor() -> Any:
    """Return the shared pool (``pool_size() - 1`` workers; the caller is the last thread)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            def mark() -> None:
                _IN_POOL.active = True

            _POOL = ThreadPoolExecutor(max_workers=max(pool_size() - 1, 1),
                                       thread_name_prefix="fastpriv", initializer=mark)
        return _POOL


def chunk_bounds(n: int, n_chunks: int, c: int) -> tuple[int, int]:
    """Bounds ``[lo, hi)`` of chunk ``c`` of an equal split of ``range(n)`` in ``n_chunks``.

    >>> [chunk_bounds(10, 3, c) for c in range(3)]
    [(0, 3), (3, 6), (6, 10)]
    """
    return n * c // n_chunks, n * (c + 1) // n_chunks


def run_chunks(fn: Callable[[int], T], n_chunks: int, threads: int | None = None) -> list[T]:
    """Call ``fn(c)`` for every chunk ``c in range(n_chunks)`` on up to ``threads`` threads.

    ``fn`` calls ``nogil`` kernels, so the threads run them concurrently. ``threads``
    defaults to :func:`current_threads` (the calling thread's ``n_jobs`` setting). Chunks
    are dealt round-robin to ``threads`` workers: the calling thread is one of them, the
    others come from a shared pool of ``pool_size() - 1`` threads. Called from inside a pool
    thread (nested) it runs serially, so it never waits on itself. The results are returned
    in chunk order; the first exception raised by a chunk is re-raised.

    >>> run_chunks(lambda c: c * c, 5, threads=2)
    [0, 1, 4, 9, 16]
    """
    n_chunks = max(int(n_chunks), 1)
    t = current_threads() if threads is None else int(threads)
    t = max(1, min(t, n_chunks, pool_size()))
    if t == 1 or getattr(_IN_POOL, "active", False):
        return [fn(c) for c in range(n_chunks)]
    out: list[Any] = [None] * n_chunks

    def worker(w: int) -> None:
        for c in range(w, n_chunks, t):
            out[c] = fn(c)

    pool = _executor()
    futures = [pool.submit(worker, w) for w in range(1, t)]
    try:
        worker(0)
    finally:
        errors = []
        for f in futures:
            try:
                f.result()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)
    if errors:
        raise errors[0]
    return out
