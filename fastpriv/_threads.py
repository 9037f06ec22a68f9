"""Thread count of fastpriv's parallel kernels: the ``n_jobs`` convention.

fastpriv's ``parallel=True`` kernels (``prange`` loops) run on Numba's thread pool. Numba
launches ``numba.config.NUMBA_NUM_THREADS`` threads once (default: the number of cores;
set the ``NUMBA_NUM_THREADS`` environment variable *before* the first parallel call to
change the pool) and lets each calling thread **mask** how many of them it uses with
:func:`numba.set_num_threads`. The mask is thread-local: setting it in one thread does not
change it in another (a Dask worker thread, a web-server thread, …).

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
from collections.abc import Iterator
from typing import Any

from .errors import InputError, InputTypeError

__all__ = ["n_jobs", "resolve_n_jobs", "pool_size", "current_threads"]


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
    """The number of threads ``n_jobs`` stands for (see the module docstring).

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
