"""The one place that calls :func:`numba.njit` — fastpriv's JIT policy.

Every kernel in :mod:`fastpriv._kernels` is decorated with :func:`kernel`, never with a raw
``numba.njit``; ``tests/test_jit_policy.py`` fails otherwise. The policy:

* On-disk cache: compiled machine code is kept in ``FASTPRIV_CACHE_DIR`` (default: the
  user cache directory), keyed on the kernel module's source *contents*, the Numba
  version and the CPU (see :mod:`fastpriv._cache`), so only the first process pays the
  compile time, and a cache built in one install directory, image layer or cluster node
  is reused by every other copy of the same release (``fastpriv warmup`` fills it ahead of
  time). Set ``FASTPRIV_NO_CACHE=1`` to disable the on-disk cache (e.g. to measure cold
  compiles).
* A process whose kernels are cached pays for loading them, not for the compiler: a cached
  kernel is loaded without Numba's set-up of its typing and target contexts (every
  implementation registry, and a BLAS probe importing ``scipy.linalg``), which the first
  real compilation does instead (:class:`fastpriv._cache.FastprivCache`); the garbage
  collector rests while Numba is imported and kernels load, and at exit the objects still
  alive are left out of the interpreter's repeated teardown collections
  (:func:`_quick_teardown`). Measured in alternated fresh processes, Numba's own loading
  and teardown make ``python -m fastpriv audit adult …`` on a filled cache take about 1.6×
  the CPU time.
* Never wait blind: every real compilation triggers Numba's ``numba:compile`` event, which
  :func:`fastpriv._progress.compile_progress` counts and shows on stderr: a transient line
  on a terminal (or with ``FASTPRIV_PROGRESS=1``), else one plain line when a phase of
  compiling starts and one when it is done (``FASTPRIV_PROGRESS=0`` silences both).
* ``nogil=True``: kernels release the GIL, so threads (Dask's threaded scheduler, user
  thread pools) run them concurrently.
* ``error_model="numpy"``: division by zero gives inf/nan like NumPy instead of raising;
  every kernel guards its divisions explicitly where a zero denominator is possible.
* ``fastmath`` only with the *safe* flags below. ``nnan``/``ninf`` are never enabled: they
  let LLVM delete the NaN/inf checks that our conventions (``+inf`` ratios, C1–C6 of the
  skyline spec) depend on. ``reassoc``/``arcp`` are also off: they change rounding of the
  ratios of small integers whose ties against thresholds we decide exactly.
* No C-callable wrapper (``no_cfunc_wrapper=True``): Numba otherwise builds, optimizes and
  compiles a ``cfunc`` entry point for every kernel, used only when a jitted function is
  passed around as a first-class function value, which fastpriv never does. Dropping it cut
  the cold ``fastpriv warmup`` by about 5 % of its CPU time.
* Helpers called only from other kernels are declared ``@kernel(helper=True)``: no Python
  entry point (``no_cpython_wrapper``) is built, optimized and compiled for them (on a kernel
  with many array arguments it is larger than a small helper's body); calling one from
  Python raises :class:`TypeError` instead of jumping to the missing wrapper.
* Kernels take and return arrays only. The API boundary passes them read-only, C-contiguous
  and with fixed dtypes (see :func:`fastpriv._validation.kernel_array`), so each kernel
  compiles exactly one specialization (a test counts the signatures).
"""

from __future__ import annotations

import atexit
import gc
import os
from typing import Any, Callable

from ._progress import compile_progress, gc_paused

# Numba's import makes ~100k long-lived objects and no garbage: the collections it would
# trigger (a full one among them) are skipped.
with gc_paused():
    import numba
    from llvmlite import ir
    from numba.core import types
    from numba.core.registry import CPUDispatcher
    from numba.extending import intrinsic

    from ._cache import make_cache

__all__ = ["kernel", "HelperDispatcher", "prefetch", "AHEAD", "threaded", "Threaded", "KERNELS",
           "SAFE_FASTMATH", "CACHE_ENABLED"]

#: Fast-math flags considered value-safe for fastpriv's kernels.
SAFE_FASTMATH: frozenset[str] = frozenset({"nsz", "contract"})

#: False when ``FASTPRIV_NO_CACHE`` is set to a non-empty value other than ``0``.
CACHE_ENABLED: bool = os.environ.get("FASTPRIV_NO_CACHE", "") in ("", "0")

#: Every dispatcher created through :func:`kernel`, in definition order.
KERNELS: list[Any] = []

# Count compilations and say so on stderr while they run (FASTPRIV_PROGRESS=0: silent).
compile_progress()


def _quick_teardown() -> None:
    """At exit: collect the garbage once, then leave the survivors to the process's end.

    The interpreter's teardown clears every module and collects again and again over
    everything still alive, Numba's and LLVM's objects included: about 0.25 CPU-s of a
    one-second command. The one collection here finalizes what is garbage at exit (as the
    teardown would); what stays alive until the teardown is frozen out of its collections,
    so its cycles are freed with the process instead (Python does not promise finalizers
    for objects alive at exit anyway). A program that disabled the garbage collector is
    left as it is.
    """
    if gc.isenabled():
        gc.collect()
        gc.freeze()


atexit.register(_quick_teardown)


class HelperDispatcher(CPUDispatcher):
    """The dispatcher of a ``@kernel(helper=True)``: callable from kernels only."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.py_func.__module__}.{self.py_func.__qualname__} is a kernel "
                        "helper (helper=True): it has no Python entry point; call it from a "
                        "kernel")


def kernel(fn: Callable | None = None, *, parallel: bool = False, inline: str = "never",
           helper: bool = False) -> Any:
    """Compile ``fn`` with fastpriv's JIT policy (usable as ``@kernel`` or ``@kernel(...)``).

    Parameters
    ----------
    fn : callable
        A function using only NumPy arrays and scalars.
    parallel : bool, default False
        Enable ``numba.prange``. Parallel kernels must not race on shared arrays: they
        write per-thread buffers and reduce them afterwards. Prefer a serial kernel over
        a chunk (a range of rows or groups) run on :func:`fastpriv._threads.run_chunks`:
        Numba's parfor lowering of ``parallel=True`` is the most expensive compile there
        is, and one serial kernel then serves the one- and the many-thread path.
    inline : {"never", "always"}, default "never"
        ``"always"`` inlines a small device function into its callers at the Numba IR
        level (hot per-group formulas called from scan loops); it costs compile time.
        Inlining does not always remove reference counting of *array* arguments: in the
        skyline scan kernels it added NRT increfs to the loop and made the prepared-columns
        scan 23× slower. Compare the caller's ``NRT_incref`` count (``inspect_llvm``) and time it
        against the revision without it (``python -m benchmarks.ab_commits REV``).
    helper : bool, default False
        The kernel is called from other kernels only: compile it without a Python entry
        point (cheaper to compile); a call from Python raises :class:`TypeError`.

    """

    def wrap(f: Callable) -> Any:
        # cache=False here and our own cache object below: numba's default cache would
        # first create __pycache__ entries next to the (possibly read-only) install.
        dispatcher = numba.njit(
            cache=False,
            nogil=True,
            error_model="numpy",
            fastmath=set(SAFE_FASTMATH),
            parallel=parallel,
            inline=inline,
            no_cfunc_wrapper=True,
            no_cpython_wrapper=helper,
        )(f)
        if helper:
            dispatcher.__class__ = HelperDispatcher
        if CACHE_ENABLED:
            dispatcher._cache = make_cache(f, refresh=parallel)
        KERNELS.append(dispatcher)
        return dispatcher

    if fn is None:
        return wrap
    return wrap(fn)


#: Rows ahead that a probing loop prefetches (:func:`prefetch`): 16 and 32 were as fast on
#: the string map at 6.3M keys, 8 slower.
AHEAD = 16


@intrinsic
def prefetch(typingctx: Any, arr: Any, index: Any) -> Any:
    """``prefetch(arr, i)``: start loading the cache line of ``arr[i]`` (a 1-D array).

    LLVM's ``llvm.prefetch`` (read, high locality): a hint, never a fault, so ``i`` may be
    out of bounds. For probes of a table larger than the caches whose slot is known a few
    iterations ahead: a plain load would hold the loop until it arrives, a prefetch lets
    the probes of several rows overlap.
    """
    if not isinstance(arr, types.Array) or arr.ndim != 1 or \
            not isinstance(index, types.Integer):
        return None
    sig = types.void(arr, index)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p], fnty)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


class Threaded:
    """A Python driver over serial ``nogil`` chunk kernels, run on a thread pool.

    It replaces a ``parallel=True`` kernel under the same name and signature: the driver
    allocates the outputs and calls the chunk kernel(s) on
    :func:`fastpriv._threads.run_chunks`. ``signatures`` are those of the first chunk
    kernel (the compiled code behind it), so the one-specialization checks keep covering
    it; ``chunk_kernels`` lists all of them.
    """

    def __init__(self, driver: Callable, *chunk_kernels: Any) -> None:
        self._driver = driver
        self.chunk_kernels = chunk_kernels
        self.chunk_kernel = chunk_kernels[0]
        self.__doc__ = driver.__doc__
        self.__name__ = driver.__name__
        self.__qualname__ = getattr(driver, "__qualname__", driver.__name__)
        self.__module__ = driver.__module__
        self.__wrapped__ = driver

    def __call__(self, *args: Any) -> Any:
        return self._driver(*args)

    @property
    def signatures(self) -> list:
        return self.chunk_kernel.signatures


def threaded(*chunk_kernels: Any) -> Callable[[Callable], Threaded]:
    """Decorate a Python driver of ``chunk_kernels`` as a :class:`Threaded` entry point."""

    def wrap(driver: Callable) -> Threaded:
        return Threaded(driver, *chunk_kernels)

    return wrap
