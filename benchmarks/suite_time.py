"""The test suite's wall time: cold (empty kernel cache), warm, and the fast developer loop.

``python -m benchmarks.suite_time`` runs, in fresh subprocesses of this checkout:

1. the whole suite with an empty ``FASTPRIV_CACHE_DIR`` (every kernel compiles: what CI pays);
2. the whole suite again on the cache the first run filled (warm);
3. ``pytest -m "not slow"`` on the same cache (the developer loop; goal < 2 minutes warm).

It writes ``benchmarks/results/test_suite.json`` (wall seconds, the pytest summary line and
the exit code of each run) for the README. It is not a pytest benchmark: it runs the suite
itself, so the suite must not collect it (its name does not start with ``bench_``).
``--only warm_fast`` (or ``cold``, ``warm``) runs some of them and keeps the others'
earlier numbers (each run records its date); a warm run alone needs ``--cache-dir``
pointing at a filled cache (by default the runs share a new, empty one).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ._common import RESULTS, write_result

ROOT = Path(__file__).resolve().parent.parent
RUNS = {"cold": [], "warm": [], "warm_fast": ["-m", "not slow"]}
_SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed).*) in [\d.]+s")


def run_suite(extra: list[str], cache_dir: str, log: Path | None = None) -> dict:
    """Run ``python -m pytest -q`` with ``extra`` arguments; wall seconds and summary.

    With ``log``, pytest's whole output is written there (which tests failed, and why).
    """
    env = dict(os.environ, FASTPRIV_CACHE_DIR=cache_dir)
    env.pop("FASTPRIV_NO_CACHE", None)
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rf", *extra], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if log is not None:
        log.write_text(proc.stdout + proc.stderr)
    lines = [ln for ln in proc.stdout.splitlines() if _SUMMARY.match(ln)]
    return {"wall_s": wall, "rc": proc.returncode,
            "summary": _SUMMARY.match(lines[-1]).group(1) if lines else proc.stdout[-300:],
            "args": extra, "date": date}


def main(argv: list[str] | None = None) -> int:
    """Run the requested suite timings and write ``test_suite.json``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(RUNS), default=list(RUNS))
    ap.add_argument("--cache-dir", help="kernel cache to use (default: a new empty one)")
    ap.add_argument("--log", type=Path, metavar="DIR",
                    help="write each run's whole pytest output to DIR/<run>.log")
    args = ap.parse_args(argv)
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="fastpriv-suite-cache-") as tmp:
        cache = args.cache_dir or tmp
        for name in RUNS:
            if name not in args.only:
                continue
            log = None
            if args.log is not None:
                args.log.mkdir(parents=True, exist_ok=True)
                log = args.log / f"{name}.log"
            out[name] = run_suite(RUNS[name], cache, log)
            print(f"{name:10s} {out[name]['wall_s']:7.1f} s  rc {out[name]['rc']}  "
                  f"{out[name]['summary']}", flush=True)
    previous = RESULTS / "test_suite.json"
    if previous.exists():           # runs not measured now keep their earlier numbers
        out = {**json.loads(previous.read_text()).get("runs", {}), **out}
    path = write_result("test_suite", {"runs": out, "goal_warm_fast_s": 120.0}, True)
    print(f"wrote {path}")
    return 0 if all(r["rc"] == 0 for r in out.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
