"""Shared benchmark plumbing: sizes (smoke vs full), result files, machine description.

Benchmarks run in two modes:

* **smoke** (default, e.g. inside the plain test run): tiny sizes, every benchmark runs once
  to prove it still works and agrees with its baseline; results go to
  ``benchmarks/results/smoke/`` (not committed).
* **full** (``pytest benchmarks/ --benchmark-only``, or ``FASTPRIV_BENCH=full``): the sizes
  of the goals and papers; results go to ``benchmarks/results/<name>.json`` together with
  the machine they ran on, and ``python -m benchmarks.readme_tables`` writes the README's
  numbers from them.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """Where a result was measured: CPU, cores, memory, library versions, date."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as fh:
            mem = round(int(fh.readline().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    import numba
    import numpy
    import pyarrow

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "python": platform.python_version(),
        "numba": numba.__version__,
        "numpy": numpy.__version__,
        "pyarrow": pyarrow.__version__,
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def is_full(config: Any = None) -> bool:
    """True in full mode (``--benchmark-only`` or ``FASTPRIV_BENCH=full``)."""
    if os.environ.get("FASTPRIV_BENCH", "").lower() == "full":
        return True
    if os.environ.get("FASTPRIV_BENCH", "").lower() == "smoke":
        return False
    if config is not None:
        try:
            return bool(config.getoption("benchmark_only"))
        except ValueError:
            return False
    return False


def write_result(name: str, payload: dict[str, Any], full: bool) -> Path:
    """Write ``payload`` (plus the machine description) to the results directory."""
    folder = RESULTS if full else RESULTS / "smoke"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    data = {"benchmark": name, "mode": "full" if full else "smoke", "machine": machine(),
            **payload}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_default) + "\n")
    os.replace(tmp, path)
    return path


def _default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def best_time(fn: Callable[[], Any], *, repeat: int = 3, min_time: float = 0.0) -> float:
    """Best wall time of ``repeat`` calls (seconds); repeats until ``min_time`` is spent."""
    best = float("inf")
    spent = 0.0
    i = 0
    while i < repeat or spent < min_time:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        i += 1
        if i > 1000:
            break
    return best


def cold_start(code: str, *, no_cache: bool, env: dict[str, str] | None = None) -> float:
    """Seconds to run ``code`` in a fresh interpreter (JIT compile included).

    With ``no_cache=True`` the on-disk Numba cache is disabled (``FASTPRIV_NO_CACHE=1``), so
    every kernel compiles; otherwise the cache filled by earlier runs is used.
    """
    e = dict(os.environ, **(env or {}))
    if no_cache:
        e["FASTPRIV_NO_CACHE"] = "1"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=e)
    return time.perf_counter() - t0
