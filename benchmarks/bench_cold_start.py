"""Benchmarks: cold start — what a fresh process pays before its first answer.

Every measurement runs in a **fresh subprocess** and records wall seconds, seconds to the
first line on stdout, CPU seconds of the subprocess (user + sys, less noisy than wall on a
shared machine) and the Numba compilations it made (``numba:compile`` events: count and
CPU seconds per kernel, each compile's own time — callees compiled inside a caller are
charged to the callee; ``compile_s`` sums them, ``fastpriv_compile_s`` only fastpriv's
kernels).

* **commands, cold** — each CLI command (``demo``, ``audit``, ``skyline``, ``robustness``,
  ``attack``, ``anonymize --method art``, ``report``) with ``FASTPRIV_NO_CACHE=1``.
* **commands, cached** — the same commands with a cache filled by a previous run
  (``FASTPRIV_CACHE_DIR`` in a temporary directory), the first call of a new process.
* **warmup, cold** — ``fastpriv warmup`` with ``FASTPRIV_NO_CACHE=1``: every kernel, with
  the per-kernel compile profile (``cold_start_kernels`` in the JSON, slowest first), each
  kernel's seconds split by compile phase (``frontend``: bytecode to Numba IR, including
  IR inlining of ``inline="always"`` helpers; ``typing``; ``typed_passes``; ``lowering``:
  Numba IR to LLVM IR; ``llvm``: LLVM optimisation and machine code, every call into
  llvmlite's C library — for a caller this includes re-optimizing the callees linked into
  it; ``other``), the totals by phase (``compile_phases_s``) and by kernel module, and
  Numba's own helpers compiled on the way (``numba_internal_compiles``: ``np.empty``
  per dtype, sorts, the error formatter of array-to-slice assignments, ...).
* **warmup, filling a cache** — ``fastpriv warmup`` and ``fastpriv warmup --jobs 2`` into an
  empty cache directory: wall and CPU seconds (``warmup_fill``).

Full mode (``FASTPRIV_BENCH=full``; ``python -m benchmarks.bench_cold_start [--only audit,demo]
[--skip-warmup] [--baseline REV]``, the last adding the same cold runs of revision REV,
alternated, for a same-run before/after) writes
``benchmarks/results/cold_start_commands.json``. Smoke mode (the default, and inside the
test run) compiles one small kernel cold and loads it cached, a few seconds, into
``benchmarks/results/smoke/cold_start_commands.json``.

Targets (2-core machine): all kernels cold ≤ 25 s; any command cold ≤ 10 s to
its first output line and ≤ 20 s in all; cached ``audit adult --sensitive occupation --qi
age sex`` ≤ 1 s.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import write_result

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"warmup_cold_cpu_s": 25.0, "command_first_line_s": 10.0, "command_total_s": 20.0,
           "audit_cached_s": 1.0}

#: Runs a module or code under a compile recorder; writes the profile to $BENCH_OUT.
#: Every ``numba:compile`` (a kernel), ``numba:run_pass`` (a compiler pass) and
#: ``numba:llvm_lock`` (a call into LLVM) event opens a frame on a per-thread stack; each
#: frame's *own* thread-CPU time (less its children's) is charged to the innermost kernel and
#: the frame's phase, so a callee compiled inside its caller is charged to the callee only.
_RECORDER = r"""
import atexit, json, os, runpy, sys, threading, time
from numba.core import event as ev

clock = time.thread_time  # CPU seconds of the compiling thread: steady on a busy machine
local, per = threading.local(), {}
PHASE = {"nopython_type_inference": "typing", "native_lowering": "lowering",
         "nopython_backend": "lowering", "ir_legalization": "lowering",
         "dump_parfor_diagnostics": "typed_passes"}

def _stack():
    st = getattr(local, "st", None)
    if st is None:
        st = local.st = []
    return st

def _phase(kind, data):
    if kind == "numba:compile":
        return "other"
    if kind == "numba:llvm_lock":
        return "llvm"
    name = data["name"].split(" [", 1)[0]
    if name in PHASE:
        return PHASE[name]
    return "frontend" if name in FRONTEND else "typed_passes"

FRONTEND = set()
try:
    from numba.core import untyped_passes as _up
    for _v in vars(_up).values():
        if isinstance(_v, type) and hasattr(_v, "_name"):
            FRONTEND.add(_v._name)
except Exception:
    pass

class Rec(ev.Listener):
    def __init__(self, kind):
        self.kind = kind

    def on_start(self, event):
        st = _stack()
        if self.kind == "numba:compile":
            d = event.data["dispatcher"]
            kernel = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
        elif st:
            kernel = st[-1][0]
        else:
            kernel = "(outside compiles)"
        st.append([kernel, _phase(self.kind, event.data), clock(), 0.0])

    def on_end(self, event):
        st = _stack()
        if not st:
            return
        kernel, phase, t0, inner = st.pop()
        total = clock() - t0
        if st:
            st[-1][3] += total
        row = per.setdefault(kernel, {"n": 0, "s": 0.0, "phases": {}})
        row["s"] += total - inner
        row["phases"][phase] = row["phases"].get(phase, 0.0) + total - inner
        if self.kind == "numba:compile":
            row["n"] += 1

for _kind in ("numba:compile", "numba:run_pass", "numba:llvm_lock"):
    ev.register(_kind, Rec(_kind))

def dump():
    with open(os.environ["BENCH_OUT"], "w") as fh:
        json.dump(per, fh)

atexit.register(dump)
mode, target, *argv = sys.argv[1:]
sys.argv = [target, *argv]
if mode == "module":
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    exec(compile(target, "<bench>", "exec"), {"__name__": "__main__"})
"""


def _env(cache: str | None, root: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTPRIV_NO_CACHE", "FASTPRIV_CACHE_DIR", "FASTPRIV_PROGRESS",
                        "PYTHONPATH")}
    env["PYTHONPATH"] = str(root or ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    if cache is None:
        env["FASTPRIV_NO_CACHE"] = "1"
    else:
        env["FASTPRIV_CACHE_DIR"] = cache
    return env


def run_fresh(mode: str, target: str, argv: list[str], *, cache: str | None,
              cwd: str | None = None, timeout: float = 1800,
              root: Path | None = None) -> dict[str, Any]:
    """Run ``python -m target argv`` (mode "module") or code in a fresh interpreter.

    ``cache=None`` disables the disk cache; ``root`` is the source tree imported (default
    this checkout). Returns wall, first-line and CPU seconds, the
    exit code and the compile profile (``{"kernel": {"n": .., "s": ..}}``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "compiles.json")
        env = dict(_env(cache, root), BENCH_OUT=out)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _RECORDER, mode, target, *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                cwd=cwd or str(ROOT), text=True)
        first = None
        lines = 0
        assert proc.stdout is not None
        for _line in proc.stdout:
            if first is None:
                first = time.perf_counter() - t0
            lines += 1
        err = proc.stderr.read() if proc.stderr else ""
        rc = proc.wait(timeout=timeout)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            with open(out) as fh:
                compiles = json.load(fh)
        except (OSError, ValueError):
            compiles = {}
    outside = compiles.pop(OUTSIDE, {"s": 0.0})
    fp = {k: v for k, v in compiles.items() if k.startswith("fastpriv.")}
    return {"rc": rc, "wall_s": wall, "first_line_s": first, "stdout_lines": lines,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "compiled_kernels": len(fp), "compile_events": sum(v["n"] for v in compiles.values()),
            "compile_s": sum(v["s"] for v in compiles.values()),
            "fastpriv_compile_s": sum(v["s"] for v in fp.values()),
            "compile_phases_s": _phase_totals(compiles.values()),
            "llvm_outside_compiles_s": round(outside["s"], 3),
            "numba_internal_compiles": _kernel_table(
                {k: v for k, v in compiles.items() if not k.startswith("fastpriv.")})[:20],
            "compiles": fp, "stderr_tail": err[-400:] if rc else ""}


OUTSIDE = "(outside compiles)"
#: The compile phases of the profile: Numba's bytecode-to-IR passes, type inference, the
#: other typed passes, lowering to LLVM IR (Numba's Python side), LLVM itself (optimisation
#: and machine code, every call into llvmlite's C library) and the rest of a compile.
PHASES = ("frontend", "typing", "typed_passes", "lowering", "llvm", "other")


def _phase_totals(rows: Any) -> dict[str, float]:
    tot = dict.fromkeys(PHASES, 0.0)
    for v in rows:
        for ph, sec in v.get("phases", {}).items():
            tot[ph] = tot.get(ph, 0.0) + sec
    return {k: round(v, 3) for k, v in tot.items()}


def _inputs(folder: Path) -> dict[str, str]:
    """A bucketized Adult sample (groups of 10 rows) for the commands that need groups."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastpriv.datasets import load_adult

    t = load_adult().select(["age", "sex", "race", "education", "occupation"]).slice(0, 3000)
    t = t.append_column("gid", pa.array(np.arange(t.num_rows, dtype=np.int64) // 10))
    path = folder / "adult_groups.parquet"
    pq.write_table(t, path)
    sigma = str(t.column("occupation")[0])
    return {"data": str(path), "sigma": sigma, "out": str(folder)}


def commands(inp: dict[str, str]) -> dict[str, list[str]]:
    """The command lines measured (``fastpriv <argv>``)."""
    d, out = inp["data"], inp["out"]
    return {
        "demo": ["demo"],
        "audit": ["audit", "adult", "--sensitive", "occupation", "--qi", "age", "sex"],
        "skyline": ["skyline", d, "--sensitive", "occupation", "--group", "gid", "--sigma",
                    inp["sigma"], "--c", "0.95"],
        "robustness": ["robustness", d, "--qi", "age", "sex", "--group", "gid", "--sensitive",
                       "occupation", "--r", "4"],
        "attack": ["attack", d, "--qi", "age", "sex", "--group", "gid", "--sensitive",
                   "occupation", "--r", "2"],
        "anonymize_art": ["anonymize", "adult", "--qi", "age", "workclass", "marital_status",
                          "--sensitive", "education", "--method", "art", "--r", "3",
                          "--art-sensitive-values", "Preschool", "1st-4th", "5th-6th",
                          "7th-8th", "-o", os.path.join(out, "art.parquet"), "--overwrite"],
        "report": ["report", d, "--sensitive", "occupation", "--qi", "age", "sex", "--group",
                   "gid", "-o", os.path.join(out, "r.html"), "--json",
                   os.path.join(out, "r.json"), "--overwrite"],
    }


def _kernel_table(profile: dict[str, dict]) -> list[dict]:
    rows = [{"kernel": k, "compiles": v["n"], "seconds": round(v["s"], 3),
             **{ph: round(v.get("phases", {}).get(ph, 0.0), 3) for ph in PHASES}}
            for k, v in profile.items()]
    return sorted(rows, key=lambda r: -r["seconds"])


def _revision() -> str:
    """The measured tree's commit (``+dirty`` with uncommitted changes)."""
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty=+dirty"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - not a checkout
        rev = "unknown"
    return rev


def _export(rev: str, dest: Path) -> Path:
    """Extract commit ``rev`` of this repository into ``dest`` (no git worktree)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(only: list[str] | None = None, warmup: bool = True,
            baseline: str | None = None) -> dict[str, Any]:
    """Full run: every command cold and cached, then ``fastpriv warmup`` cold.

    With ``baseline`` (a git revision) every cold run is preceded by the same cold run of
    that revision (``baseline_cold`` per command, ``baseline_warmup_cold``): a same-run
    before/after on a machine whose speed drifts.
    """
    res: dict[str, Any] = {"targets": TARGETS, "revision": _revision(), "commands": {}}
    with tempfile.TemporaryDirectory() as tmp:
        inp = _inputs(Path(tmp))
        cache = os.path.join(tmp, "cache")
        base = None
        if baseline:
            base = _export(baseline, Path(tempfile.mkdtemp(dir=tmp, prefix="base-")))
            res["baseline"] = baseline
        for name, argv in commands(inp).items():
            if only and name not in only:
                continue
            if base is not None:
                b = run_fresh("module", "fastpriv", argv, cache=None, root=base, cwd=str(base))
                res["commands"].setdefault(name, {})["baseline_cold"] = {
                    k: v for k, v in b.items() if k != "compiles"}
                print(f"{name:14s} baseline cold {b['wall_s']:6.1f} s (cpu {b['cpu_s']:6.1f} s, "
                      f"{b['compiled_kernels']} kernels) rc={b['rc']}", flush=True)
            cold = run_fresh("module", "fastpriv", argv, cache=None)
            fill = run_fresh("module", "fastpriv", argv, cache=cache)
            cached = run_fresh("module", "fastpriv", argv, cache=cache)
            res["commands"].setdefault(name, {}).update({
                "argv": argv, "cold": {k: v for k, v in cold.items() if k != "compiles"},
                "cached": {k: v for k, v in cached.items() if k != "compiles"},
                "fill_compiled_kernels": fill["compiled_kernels"],
                "cold_kernels": _kernel_table(cold["compiles"])})
            print(f"{name:14s} cold {cold['wall_s']:6.1f} s (first line "
                  f"{cold['first_line_s'] or float('nan'):5.1f} s, cpu {cold['cpu_s']:6.1f} s, "
                  f"{cold['compiled_kernels']} kernels) cached {cached['wall_s']:5.2f} s "
                  f"(cpu {cached['cpu_s']:.2f} s, {cached['compiled_kernels']} compiled) "
                  f"rc={cold['rc']}/{cached['rc']}", flush=True)
        if warmup and base is not None:
            b = run_fresh("module", "fastpriv", ["warmup"], cache=None, root=base,
                          cwd=str(base))
            res["baseline_warmup_cold"] = {k: v for k, v in b.items() if k != "compiles"}
            res["baseline_cold_start_kernels"] = _kernel_table(b["compiles"])
            print(f"baseline warmup cold: {b['wall_s']:.1f} s wall, {b['cpu_s']:.1f} s cpu, "
                  f"{b['compiled_kernels']} kernels, {b['compile_s']:.1f} s compiling",
                  flush=True)
        if warmup:
            w = run_fresh("module", "fastpriv", ["warmup"], cache=None)
            res["warmup_cold"] = {k: v for k, v in w.items() if k != "compiles"}
            res["cold_start_kernels"] = _kernel_table(w["compiles"])
            by_module: dict[str, float] = {}
            for k, v in w["compiles"].items():
                mod = ".".join(k.split(".")[:3])
                by_module[mod] = by_module.get(mod, 0.0) + v["s"]
            res["warmup_cold_by_module_s"] = dict(sorted(by_module.items(),
                                                         key=lambda kv: -kv[1]))
            print(f"warmup cold: {w['wall_s']:.1f} s wall, {w['cpu_s']:.1f} s cpu, "
                  f"{w['compiled_kernels']} kernels, {w['compile_s']:.1f} s compiling",
                  flush=True)
            res["warmup_fill"] = _warmup_fill(tmp)
    return res


def _warmup_fill(tmp: str) -> dict[str, Any]:
    """``fastpriv warmup`` into an empty cache directory, in 1 process and with ``--jobs 2``.

    Wall and CPU seconds (the workers' CPU included) of each, alternated; ``--jobs 2``
    trades CPU (kernels two model groups share compile twice) for wall time on 2 cores.
    """
    out: dict[str, Any] = {}
    for jobs in (1, 2):
        cache = tempfile.mkdtemp(dir=tmp, prefix=f"fill{jobs}-")
        r = run_fresh("module", "fastpriv", ["warmup", "--jobs", str(jobs)], cache=cache)
        out[f"jobs_{jobs}"] = {k: r[k] for k in ("rc", "wall_s", "cpu_s")}
        print(f"warmup --jobs {jobs} into an empty cache: {r['wall_s']:.1f} s wall, "
              f"{r['cpu_s']:.1f} s cpu, rc={r['rc']}", flush=True)
    return out


SMOKE_CODE = ("import numpy as np\nfrom fastpriv._kernels import metrics as M\n"
              "print(M.group_spread(np.zeros(3, dtype=np.int64), np.ones((3, 2)), 1))")


def smoke() -> dict[str, Any]:
    """Seconds-long check: one small kernel cold, then cached in a second process."""
    with tempfile.TemporaryDirectory() as tmp:
        cold = run_fresh("code", SMOKE_CODE, [], cache=None)
        run_fresh("code", SMOKE_CODE, [], cache=tmp)
        cached = run_fresh("code", SMOKE_CODE, [], cache=tmp)
    assert cold["rc"] == 0 and cached["rc"] == 0, (cold["stderr_tail"], cached["stderr_tail"])
    assert cold["compiled_kernels"] == 1 and cached["compiled_kernels"] == 0
    return {"smoke": {"cold": cold, "cached": cached}}


def test_cold_start(full):
    payload = measure() if full else smoke()
    write_result("cold_start_commands", payload, full)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="comma-separated command names (demo,audit,...)")
    p.add_argument("--skip-warmup", action="store_true", help="do not time fastpriv warmup")
    p.add_argument("--name", default="cold_start_commands", help="result file name")
    p.add_argument("--baseline", metavar="REV",
                   help="also time every cold run of git revision REV, alternated")
    a = p.parse_args(argv)
    payload = measure(a.only.split(",") if a.only else None, warmup=not a.skip_warmup,
                      baseline=a.baseline)
    print(write_result(a.name, payload, True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
