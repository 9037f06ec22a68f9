"""Compiling is announced on stderr when stderr is not a terminal (CI, cron, Spark logs).

A terminal gets a transient bar (``tests/test_cache.py``); a pipe gets plain lines, one
when a phase of compiling starts and one when it is done, and ``FASTPRIV_PROGRESS=0``
silences them. The subprocess tests compile one small kernel
(``fastpriv._kernels.metrics.group_spread``, well under a second) into an empty
``FASTPRIV_CACHE_DIR``.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest

from fastpriv import _progress

WORKLOAD = r"""
import sys, time
import numpy as np
from fastpriv._kernels import metrics as M

out = M.group_spread(np.array([0, 0, 1, -1], dtype=np.int64),
                     np.array([[1.0, 2.0], [3.0, 5.0], [5.0, 6.0], [9.0, 9.0]]), 2)
sys.stderr.write("computed\n")      # a marker: what was said before and after the compile
sys.stderr.flush()
time.sleep(float(sys.argv[1]))      # idle: a finished phase is announced without waiting for exit
sys.stderr.write("exiting\n")
print(out.tolist())
"""


def _run(cache, sleep: float = 0.0, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTPRIV_NO_CACHE", "FASTPRIV_PROGRESS", "NUMBA_CACHE_DIR")}
    env["FASTPRIV_CACHE_DIR"] = str(cache)
    env.update(extra)
    proc = subprocess.run([sys.executable, "-c", WORKLOAD, str(sleep)], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[[2.0, 3.0], [0.0, 0.0]]"   # stdout holds only the output
    return proc


def test_piped_stderr_gets_one_line_per_compile_phase(tmp_path):
    cache = tmp_path / "empty-cache"
    cache.mkdir()
    err = _run(cache, sleep=3 * _progress.PHASE_GAP_S).stderr.splitlines()
    assert err[0] == ("fastpriv: compiling metrics kernels for first use… (once: they are "
                      "cached on disk)")
    assert err[1] == "computed"                     # said before the wait, not after it
    done = re.fullmatch(r"fastpriv: compiled 1 kernel \(metrics\) in (\d+\.\d) s; later runs "
                        r"load them from the cache", err[2])
    assert done and float(done.group(1)) > 0, err    # ... and the phase closed while idle
    assert err[3:] == ["exiting"], err
    # a cached kernel: nothing to say
    assert _run(cache).stderr.splitlines() == ["computed", "exiting"]


def test_short_process_closes_its_phase_at_exit_and_progress_0_silences(tmp_path):
    err = _run(tmp_path / "c1").stderr.splitlines()
    assert err[0].startswith("fastpriv: compiling metrics kernels for first use")
    assert err[-1].startswith("fastpriv: compiled 1 kernel (metrics) in "), err
    assert _run(tmp_path / "c2", FASTPRIV_PROGRESS="0").stderr.splitlines() == [
        "computed", "exiting"]


class _Disp:
    def __init__(self, module):
        self.py_func = type("F", (), {"__module__": module})


class _Event:
    def __init__(self, module):
        self.data = {"dispatcher": _Disp(module)}


def _listener(monkeypatch, live=False, lines=True):
    monkeypatch.setattr(_progress, "PHASE_GAP_S", 0.3)
    out = io.StringIO()
    return _progress._CompileListener(out, live=live, lines=lines), out


def _compile(listener, *modules):
    """Nested compile events: the first module's kernel calls the others (callees)."""
    for m in modules:
        listener.on_start(_Event(m))
    for m in reversed(modules):
        listener.on_end(_Event(m))


def _wait_for(predicate, timeout=10.0):
    t = time.perf_counter()
    while not predicate() and time.perf_counter() - t < timeout:
        time.sleep(0.05)
    return predicate()


def test_phases_split_at_idle_gaps_and_count_callees(monkeypatch):
    lis, out = _listener(monkeypatch)
    _compile(lis, "fastpriv._kernels.classic", "fastpriv._kernels.counting")
    _compile(lis, "fastpriv._kernels.classic")               # the same phase: no gap
    assert out.getvalue().count("\n") == 1                  # only the opening line so far
    assert _wait_for(lambda: out.getvalue().count("\n") == 2)
    _compile(lis, "fastpriv._kernels.skyline")               # after the gap: a second phase
    lis.summary()                                            # closed at exit
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("fastpriv: compiling classic kernels for first use")
    assert lines[1].startswith("fastpriv: compiled 3 kernels (classic, counting) in ")
    assert lines[2].startswith("fastpriv: compiling skyline kernels for first use")
    assert lines[3].startswith("fastpriv: compiled 1 kernel (skyline) in ")
    assert len(lines) == 4
    lis.summary()                                            # nothing open: nothing more
    assert len(out.getvalue().splitlines()) == 4


@pytest.mark.parametrize("module", ["numba.np.arraymath", "mypackage.kernels"])
def test_only_fastpriv_kernels_are_announced(monkeypatch, module):
    lis, out = _listener(monkeypatch)
    _compile(lis, module)
    lis.summary()
    assert out.getvalue() == "" and lis.count == 0


def test_lines_off_and_live_bar_are_exclusive(monkeypatch):
    quiet, out = _listener(monkeypatch, lines=False)          # FASTPRIV_PROGRESS=0
    _compile(quiet, "fastpriv._kernels.classic")
    quiet.summary()
    assert out.getvalue() == "" and quiet.count == 1          # still counted
    live, _ = _listener(monkeypatch, live=True, lines=True)
    assert live.live and not live.lines
    monkeypatch.setenv("FASTPRIV_PROGRESS", "0")
    assert not _progress._lines_wanted(None)
    monkeypatch.delenv("FASTPRIV_PROGRESS")
    assert _progress._lines_wanted(None) and not _progress._lines_wanted(False)
