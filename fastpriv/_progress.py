"""Progress on stderr, one API for everything long: compiling kernels and long CLI steps.

Built on `tqdm <https://tqdm.github.io>`_. Every bar goes to **stderr**, never stdout, so
JSON or tables on stdout stay machine-readable. Live bars are shown only when they are
wanted (:func:`wanted`): when stderr is a terminal, or when asked for with ``enabled=True``
(the CLI's ``--progress``) or ``FASTPRIV_PROGRESS=1``; ``FASTPRIV_PROGRESS=0`` turns them
off everywhere. When no live bar is shown (stderr piped into a CI log, cron mail, a Spark
executor's log), output stays line-oriented: :class:`Progress` ends with one summary line
(``what: done/total in s``), and compiling writes one line when it starts and one when it
is done (see :func:`compile_progress`), so a log never shows a silent wait.

Three uses:

* :class:`Progress` — a ``progress(done, total)`` callback for loops that report their
  own progress (the lattice search, Mondrian, the foreground attack).
* :class:`Estimate` — the same for one long step whose duration was estimated from its
  sizes before it started (:mod:`fastpriv._budget`): the estimate is shown before the
  wait (a live bar, or a line in a log), so no step of minutes is silent.
* :func:`compile_progress` — a listener on Numba's ``numba:compile`` event: when a kernel is
  about to be compiled (it was not found in the on-disk cache), a line on stderr says which
  model's kernels are compiling, how many so far and for how long, and it disappears when
  compiling is done; at exit one line sums up. Off a terminal it writes plain lines
  instead, one per compile phase: ``fastpriv: compiling <model> kernels for first use…``
  and ``fastpriv: compiled N kernels (<models>) in S s …``. :mod:`fastpriv._jit` installs
  it on import. While a fastpriv kernel compiles, the listener also pauses
  Python's cyclic garbage collector (Numba's compiler makes millions of short-lived
  objects; full collections over them cost about 8 % of a cold start).
  ``FASTPRIV_COMPILE_STATS=PATH`` writes :func:`compile_stats` (which kernels compiled) to
  PATH as JSON at exit, to check that a process compiled nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["wanted", "Progress", "RowsProgress", "Estimate", "compile_progress",
           "compile_stats", "gc_paused", "fmt_bytes", "fmt_seconds"]

_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def wanted(enabled: bool | None = None, stream: Any = None) -> bool:
    """Decide whether a live progress bar should be drawn on ``stream`` (default stderr).

    ``FASTPRIV_PROGRESS=0`` wins over everything; then an explicit ``enabled``; then
    ``FASTPRIV_PROGRESS=1``; else only when ``stream`` is a terminal.
    """
    env = os.environ.get("FASTPRIV_PROGRESS", "").strip().lower()
    if env in _OFF:
        return False
    if enabled is not None:
        return bool(enabled)
    if env in _ON:
        return True
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or file-like without isatty
        return False


def _tqdm(**kw: Any) -> Any:
    from tqdm import tqdm

    return tqdm(dynamic_ncols=True, mininterval=0.2, **kw)


class Progress:
    """A ``progress(done, total)`` callback drawn as a tqdm bar on stderr.

    Parameters
    ----------
    what : str
        What is counted ("nodes tagged", "groups", "attribute sets").
    enabled : bool, optional
        Force the live bar on or off; default: :func:`wanted`.
    stream : file-like, optional
        Where to draw (default ``sys.stderr``).

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> bar = Progress("groups", stream=out)     # not a terminal: no live bar
    >>> for i in range(1, 5):
    ...     bar(i, 4)
    >>> bar.done()
    >>> out.getvalue().startswith("  groups: 4/4 in ")
    True

    """

    def __init__(self, what: str, *, enabled: bool | None = None, stream: Any = None) -> None:
        self.what = what
        self.stream = sys.stderr if stream is None else stream
        self.live = wanted(enabled, self.stream)
        self.done_n = 0
        self.total: int | None = None
        self._bar: Any = None
        self._t0 = time.perf_counter()

    def __call__(self, done: int, total: int | None = None) -> None:
        self.done_n = int(done)
        self.total = None if total is None else int(total)
        if not self.live:
            return
        if self._bar is None:
            self._bar = _tqdm(desc=f"  {self.what}", total=self.total, file=self.stream,
                              leave=True)
        if self.total is not None and self._bar.total != self.total:
            self._bar.total = self.total
        self._bar.update(self.done_n - self._bar.n)

    def done(self) -> None:
        """Close the bar (or, without a live bar, write one summary line)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.done_n or self.total:
            total = f"/{self.total}" if self.total is not None else ""
            self.stream.write(f"  {self.what}: {self.done_n}{total} in "
                              f"{time.perf_counter() - self._t0:.1f} s\n")
            self.stream.flush()
        self.done_n, self.total = 0, None

    close = done

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.done()


class RowsProgress(Progress):
    """A ``progress(rows_seen, bytes_seen)`` callback for streamed reads (rows, rate, bytes).

    The ``progress=`` callback of :meth:`fastpriv.Release.from_batches`; with ``total_rows``
    (Parquet metadata) the bar shows the share read and the time left.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> bar = RowsProgress(total_rows=200, stream=out, enabled=True)
    >>> bar(100, 2_000_000); bar(200, 4_000_000); bar.close()
    >>> "100%" in out.getvalue() and "200/200" in out.getvalue()
    True

    """

    def __init__(self, total_rows: int | None = None, *, enabled: bool | None = None,
                 stream: Any = None) -> None:
        super().__init__("reading rows", enabled=enabled, stream=stream)
        self.total_rows = total_rows if total_rows and total_rows > 0 else None

    def __call__(self, rows: int, nbytes: int = 0) -> None:  # type: ignore[override]
        if self.live and self._bar is None:
            self._bar = _tqdm(desc="  reading", total=self.total_rows, unit=" rows",
                              file=self.stream, leave=True)
        super().__call__(rows, self.total_rows)
        if self._bar is not None:
            self._bar.set_postfix_str(f"{nbytes / 1e6:,.1f} MB", refresh=False)


def fmt_bytes(n: float) -> str:
    """Return ``n`` bytes in binary units: ``"512 B"``, ``"1.5 GiB"``, ``"7.28 TiB"``."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:,.3g} {unit}"
        n /= 1024
    return f"{n:,.3g} PiB"   # pragma: no cover - the loop returns


def fmt_seconds(s: float) -> str:
    """Return a duration for people: ``"40 s"``, ``"12 min"``, ``"3.2 h"``, ``"41 days"``."""
    s = float(s)
    if not math.isfinite(s) or s > 3.15e9:
        return "more than a century"
    if s < 90:
        return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    if s < 2 * 365 * 86400:
        return f"{s / 86400:,.0f} days"
    return f"{s / (365 * 86400):,.0f} years"


#: A step estimated to take less than this many seconds runs without a line.
ANNOUNCE_SECONDS = 5.0


class Estimate(Progress):
    """Progress of a long step whose duration was estimated before it started.

    A ``progress(done, total)`` callback (``total`` in any unit: values checked, groups,
    systems) that also says, before the wait, how long the step should take — so a step
    of minutes is never silent. Steps estimated below :data:`ANNOUNCE_SECONDS` show
    nothing. On a terminal (:func:`wanted`) a live bar ``what (about 3 min)`` is drawn and
    its elapsed time kept ticking while one kernel runs; otherwise (a log) one line
    ``fastpriv: what: about 3 min (estimate)…`` when the step starts and one
    ``fastpriv: what: done in S s`` when it ends. ``FASTPRIV_PROGRESS=0`` silences both.

    Parameters
    ----------
    what : str
        The step, in words ("checking the skyline of 1,000,000 values").
    seconds : float
        Its estimated duration (:mod:`fastpriv._budget` gives the figures).
    total : int, optional
        Units of work, when the step reports its progress by calling the object.
    enabled, stream :
        As :class:`Progress`.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with Estimate("solving 12 systems", 120.0, stream=out) as est:
    ...     est(12, 12)
    >>> print(out.getvalue().splitlines()[0])
    fastpriv: solving 12 systems: about 2 min (estimate)…

    """

    def __init__(self, what: str, seconds: float, total: int | None = None, *,
                 enabled: bool | None = None, stream: Any = None) -> None:
        super().__init__(what, enabled=enabled, stream=stream)
        self.seconds = float(seconds)
        self.total = total
        env = os.environ.get("FASTPRIV_PROGRESS", "").strip().lower()
        self.shown = self.seconds >= ANNOUNCE_SECONDS and env not in _OFF and \
            enabled is not False
        self._ticking = False
        if not self.shown:
            self.live = False
            return
        about = f"about {fmt_seconds(self.seconds)}"
        if self.live:
            self._bar = _tqdm(desc=f"  {what} ({about})", total=total, file=self.stream,
                              leave=True)
            self._ticking = True
            threading.Thread(target=self._tick, name="fastpriv-estimate", daemon=True).start()
        else:
            self._line(f"fastpriv: {what}: {about} (estimate)…\n")

    def _line(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def _tick(self) -> None:
        """Redraw the live bar (its elapsed time) while a long kernel gives no news."""
        while self._ticking:
            time.sleep(0.5)
            bar = self._bar
            if bar is not None and self._ticking:
                with contextlib.suppress(Exception):
                    bar.refresh()

    def __call__(self, done: int, total: int | None = None) -> None:
        if self.shown:
            super().__call__(done, self.total if total is None else total)

    def done(self) -> None:
        """End the step: close the bar, or write the line with the time it took."""
        self._ticking = False
        if not self.shown:
            return
        self.shown = False
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        else:
            self._line(f"fastpriv: {self.what}: done in "
                       f"{time.perf_counter() - self._t0:.1f} s\n")

    close = done


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a burst of long-lived allocations.

    Importing Numba and loading cached kernels (unpickling, and the Numba modules their
    environments import) allocate many objects that stay alive and make no cyclic garbage;
    the collections they would trigger, full ones included, find nothing. Restores the
    collector as it was (a caller that disabled it keeps it disabled).
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


# ============================================================================ compiling
#: Seconds without a compilation after which a phase of compiling counts as done (the line
#: ``fastpriv: compiled N kernels … in S s`` is written off a terminal). Kernels a command
#: compiles one after another, with a few milliseconds of work between them, stay one phase.
PHASE_GAP_S = 1.0


class _CompileListener:
    """Counts Numba compilations and shows them on stderr while they run.

    ``live``: one transient tqdm bar (a terminal). ``lines``: plain lines, one when a phase
    of compiling starts and one when it is done (stderr is not a terminal). Neither:
    counting only (``FASTPRIV_PROGRESS=0``). Registered through a subclass that also
    derives from ``numba.core.event.Listener`` (made in :func:`compile_progress`, so
    importing this module does not import Numba).
    """

    def __init__(self, stream: Any, live: bool, lines: bool = False) -> None:
        self.stream = stream
        self.live = live
        self.lines = lines and not live
        self.lock = threading.RLock()
        self.depth = 0
        self.count = 0
        self.seconds = 0.0
        self.models: dict[str, int] = {}
        self.names: list[str] = []
        # per compiled function (fastpriv kernels and Numba's own overloads they pull in):
        # [specializations compiled, exclusive seconds, inclusive seconds]
        self.per_kernel: dict[str, list] = {}
        self._stack: list[list] = []  # [name, start, seconds spent in nested compiles]
        self._bar: Any = None
        self._t0 = 0.0
        self._ticker: threading.Thread | None = None
        self._ticker_pid = 0
        self._gc_paused = False
        # the open phase of the line output: kernels and seconds when it began, models seen
        self._phase: tuple[int, float, set[str]] | None = None
        self._idle_since = 0.0

    @staticmethod
    def _name(event: Any) -> str:
        """``module.qualname`` of the function being compiled (Numba's internals too)."""
        try:
            f = event.data["dispatcher"].py_func
            return f"{f.__module__}.{getattr(f, '__qualname__', f.__name__)}"
        except (AttributeError, KeyError, TypeError):
            return "?"

    @staticmethod
    def _model(event: Any) -> str | None:
        """Return the fastpriv kernel module being compiled, or None (Numba's own code)."""
        try:
            mod = event.data["dispatcher"].py_func.__module__
        except (AttributeError, KeyError, TypeError):
            return None
        return mod.rsplit(".", 1)[-1] if mod.startswith("fastpriv.") else None

    def on_start(self, event: Any) -> None:
        with self.lock:
            model = self._model(event)
            if self.depth == 0:
                self._t0 = time.perf_counter()
                # Numba's compiler allocates millions of short-lived objects; the cyclic
                # GC's full collections over them cost ~8 % of a cold start. Pause it for
                # the compilation of a fastpriv kernel (callees included); on_end restores.
                self._gc_paused = model is not None and gc.isenabled()
                if self._gc_paused:
                    gc.disable()
                if self.live:
                    self._open(model or "numba")
            self.depth += 1
            self._stack.append([self._name(event), time.perf_counter(), 0.0])
            if model is not None and self._bar is not None:
                self._bar.set_description_str(f"compiling {model} kernels", refresh=False)
            if model is not None and self.lines:
                self._line_start(model)

    def on_end(self, event: Any) -> None:
        with self.lock:
            model = self._model(event)
            if self._stack:
                name, start, nested = self._stack.pop()
                inclusive = time.perf_counter() - start
                row = self.per_kernel.setdefault(name, [0, 0.0, 0.0])
                row[0] += 1
                row[1] += inclusive - nested
                row[2] += inclusive
                if self._stack:
                    self._stack[-1][2] += inclusive
            if model is not None:
                self.count += 1
                self.models[model] = self.models.get(model, 0) + 1
                self.names.append(f"{model}.{event.data['dispatcher'].py_func.__name__}")
                if self._bar is not None:
                    self._bar.update(1)
                if self._phase is not None:
                    self._phase[2].add(model)
            self.depth = max(self.depth - 1, 0)
            if self.depth == 0:
                if self._gc_paused:
                    self._gc_paused = False
                    gc.enable()
                self.seconds += time.perf_counter() - self._t0
                self._idle_since = time.perf_counter()
                if self._bar is not None:
                    self._bar.close()
                    self._bar = None

    def _open(self, model: str) -> None:
        self._bar = _tqdm(desc=f"compiling {model} kernels", file=self.stream, leave=False,
                          initial=self.count,
                          bar_format="{desc}: {n} done, {elapsed} (first run only: cached "
                                     "on disk)")
        self._bar.start_t -= self.seconds  # elapsed counts every compile of this process
        self._start_ticker()

    def _start_ticker(self) -> None:
        # a forked child inherits the attribute but not the thread: start its own
        if self._ticker is None or self._ticker_pid != os.getpid():
            self._ticker_pid = os.getpid()
            self._ticker = threading.Thread(target=self._tick, name="fastpriv-compile-bar",
                                            daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        """Redraw the elapsed time while one long compilation runs; end idle line phases."""
        while True:
            time.sleep(0.25 if self.lines else 0.5)
            with self.lock:
                if self._bar is not None:
                    self._bar.refresh()
                if (self._phase is not None and self.depth == 0
                        and time.perf_counter() - self._idle_since >= PHASE_GAP_S):
                    self._line_done()

    def _write(self, text: str) -> None:
        """One whole line on the stream; a closed or broken stream is not an error."""
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def _line_start(self, model: str) -> None:
        """Open a phase: say, before the wait, that kernels are being compiled."""
        if self._phase is not None:
            return
        self._phase = (self.count, self.seconds, {model})
        self._write(f"fastpriv: compiling {model} kernels for first use… (once: they are "
                    "cached on disk)\n")
        self._start_ticker()

    def _line_done(self) -> None:
        """Close the open phase with the number of kernels compiled and the time taken."""
        if self._phase is None:
            return
        count0, seconds0, models = self._phase
        self._phase = None
        n = self.count - count0
        self._write(f"fastpriv: compiled {n} kernel{'s' if n != 1 else ''} "
                    f"({', '.join(sorted(models))}) in {self.seconds - seconds0:.1f} s; "
                    "later runs load them from the cache\n")

    def summary(self) -> None:
        """At exit: the live display's total, or the line output's last open phase."""
        with self.lock:
            if self.lines:
                self._line_done()
            elif self.live and self.count:
                names = ", ".join(sorted(self.models))
                self._write(f"fastpriv: compiled {self.count} kernels ({names}) in "
                            f"{self.seconds:.1f} s; later runs load them from the cache\n")


_LISTENER: _CompileListener | None = None


def _lines_wanted(enabled: bool | None) -> bool:
    """Whether compile phases are written as plain lines when no live bar is drawn."""
    env = os.environ.get("FASTPRIV_PROGRESS", "").strip().lower()
    return env not in _OFF and enabled is not False


def compile_progress(enabled: bool | None = None, stream: Any = None) -> None:
    """Count Numba compilations in this process and show them on stderr.

    Installs (once) a listener on Numba's ``numba:compile`` event, which Numba triggers
    around every real compilation — cache loads do not trigger it. With a live display
    (:func:`wanted`: a terminal, or ``FASTPRIV_PROGRESS=1``), a transient line
    ``compiling <model> kernels: n done [elapsed]`` is drawn while kernels compile and one
    summary line is written at exit. Otherwise (stderr piped) each phase of compiling — a
    run of compilations less than :data:`PHASE_GAP_S` apart — writes two plain lines,
    ``fastpriv: compiling <model> kernels for first use…`` before the wait and
    ``fastpriv: compiled N kernels (<models>) in S s; …`` after it. ``FASTPRIV_PROGRESS=0``
    (or ``enabled=False``) silences both. Only fastpriv's kernels are announced. Calling
    it again with ``enabled=True`` switches the live display on.

    Parameters
    ----------
    enabled : bool, optional
        Force the live display on (``True``) or everything off (``False``); default: from
        the environment and whether ``stream`` is a terminal.
    stream : file-like, optional
        Where to write (default ``sys.stderr`` at the time of the first call).

    """
    global _LISTENER
    from numba.core import event as ev

    stream = sys.stderr if stream is None else stream
    live = wanted(enabled, stream)
    if _LISTENER is None:
        listener_cls = type("CompileListener", (_CompileListener, ev.Listener), {})
        _LISTENER = listener_cls(stream, live, _lines_wanted(enabled))
        ev.register("numba:compile", _LISTENER)
        atexit.register(lambda: _LISTENER is not None and _LISTENER.summary())
        stats_to = os.environ.get("FASTPRIV_COMPILE_STATS", "")
        if stats_to:
            atexit.register(_write_stats, stats_to)
    elif live:
        with _LISTENER.lock:
            _LISTENER._line_done()
            _LISTENER.live, _LISTENER.lines, _LISTENER.stream = True, False, stream


def compile_stats() -> dict[str, Any]:
    """Compilations of fastpriv kernels seen since :func:`compile_progress` was installed.

    ``{"kernels": n, "seconds": s, "by_model": {model: n}, "names": ["model.kernel", …],
    "per_kernel": {"module.function": {"signatures": n, "seconds": s, "inclusive": s}}}``
    (zeros if not installed); ``names`` lists callees compiled inside a caller too, in the
    order they finished. ``per_kernel`` has a row for every function Numba compiled —
    fastpriv's kernels and the Numba implementations (``numba.…``) they pulled in — with
    its specializations compiled, its own compile seconds (``seconds``, nested compiles
    excluded: the rows add up to the total) and ``inclusive`` seconds, largest first.
    """
    if _LISTENER is None:
        return {"kernels": 0, "seconds": 0.0, "by_model": {}, "names": [], "per_kernel": {}}
    with _LISTENER.lock:
        rows = sorted(_LISTENER.per_kernel.items(), key=lambda kv: -kv[1][1])
        return {"kernels": _LISTENER.count, "seconds": _LISTENER.seconds,
                "by_model": dict(_LISTENER.models), "names": list(_LISTENER.names),
                "per_kernel": {k: {"signatures": n, "seconds": round(ex, 4),
                                   "inclusive": round(inc, 4)}
                               for k, (n, ex, inc) in rows}}


def _write_stats(path: str) -> None:
    """At exit with ``FASTPRIV_COMPILE_STATS=PATH``: write :func:`compile_stats` as JSON.

    A debugging and testing aid: ``tests/test_warmup_complete.py`` reads it to prove that a
    command compiled nothing after ``fastpriv warmup``.
    """
    import json

    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(compile_stats(), fh)
    except OSError:
        pass
