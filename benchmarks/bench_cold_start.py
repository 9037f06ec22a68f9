"""Benchmarks: cold start — what a fresh process pays before its first answer.

Every measurement runs in a **fresh subprocess** and records wall seconds, seconds to the
first line on stdout (the first result line) and to the first line on either stream (the
first thing a user sees, e.g. the compile notice on stderr), CPU seconds of the subprocess
(user + sys, less noisy than wall on a shared machine) and the Numba compilations it made
(``numba:compile`` events: count and CPU seconds per kernel, each compile's own time —
callees compiled inside a caller are charged to the callee; ``compile_s`` sums them,
``fastpriv_compile_s`` only fastpriv's kernels).

* **documented commands, first call** — each example of each command's ``--help``, exactly
  as documented (:func:`help_examples`), in a temporary working folder with a cache
  directory of its own, empty at first: the first process compiles what the command needs
  and fills the cache (``cold``), the next one is **cached**.
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
* **documented commands, fresh processes, cached** (``--fresh ROUNDS``, ``fresh_cached`` in
  the JSON) — each example of each command's ``--help``, exactly as documented, in a fresh
  process on a filled cache, ``ROUNDS`` times, alternated with the ``--baseline`` revision's
  tree when one is given (each tree fills the cache with one run first). Every process
  profiles itself by phase (CPU seconds): imports charged to their package (``numpy``,
  ``numba`` with llvmlite and SciPy, ``pyarrow``, ``pandas`` — when something imports it:
  the command line keeps pyarrow from pulling it in —, ``fastpriv``, ``other``),
  ``kernel_loads`` (the cached kernels loaded, and any compile, with the Numba modules they
  import), ``work`` (the rest of the command), and ``exit`` (the interpreter's teardown,
  measured by the parent as the process's CPU less what the process measured before
  exiting). Medians per phase, with the process's wall and CPU seconds and the kernels it
  loaded and compiled, and the machine's load average before and after. Python's bytecode
  cache is on (an installed package has its ``.pyc`` files), in the run's own
  ``PYTHONPYCACHEPREFIX``.
* **fresh install** (``--install ROUNDS [--wheel PATH]``, ``cold_start_install.json``) — what
  a new user meets: this checkout's wheel is built (its build compiles every kernel into the
  package; ``scripts/check_wheel``'s steps) or taken, installed into a new virtual
  environment, and each example of each command's ``--help`` runs ``ROUNDS`` times in a
  fresh process of that environment, each with a new, empty user cache (which must stay
  empty: nothing compiled), profiled by phase as above, with its first result line. Then
  the audit question of ``fastpriv audit adult --sensitive occupation --qi age sex`` (k and
  distinct ℓ) in fresh processes of the installed fastpriv, DuckDB and Polars on the same
  bundled Adult file, alternated (:data:`PEER_CODE`); their answers must agree. One more
  process per command runs under ``python -X importtime`` (:func:`import_profile`: each
  package's own import time, and the fastpriv modules the command imported).

Full mode (``FASTPRIV_BENCH=full``; ``python -m benchmarks.bench_cold_start [--only audit,demo]
[--skip-warmup] [--baseline REV]``, the last adding the same cold runs of revision REV,
alternated, for a same-run before/after; the machine's load average is recorded before and
after the run and before each process) writes
``benchmarks/results/cold_start_commands.json``; ``python -m benchmarks.bench_cold_start
--fresh 7 [--only audit,report] [--baseline REV]`` runs the fresh-process mode alone and
writes ``cold_start_fresh.json``. Smoke mode (the default, and inside the test run)
compiles one small kernel cold and loads it cached, a few seconds, and profiles the cached
load by phase, into ``benchmarks/results/smoke/cold_start_commands.json``.

Targets (2-core machine): a cold ``fastpriv warmup`` ≤ 45 CPU-s; any command cold ≤ 10 s to
its first output line and ≤ 20 s in all; cached ``audit adult --sensitive occupation --qi
age sex`` ≤ 0.5 s; on a fresh install every documented command's first result ≤ 1 s, the
demo's ≤ 2 s.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks._common import write_result

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"warmup_cold_cpu_s": 45.0, "command_first_line_s": 10.0, "command_total_s": 20.0,
           "audit_cached_s": 0.5, "install_first_result_s": 1.0, "install_demo_s": 2.0}

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


def _spawn(cmd: list[str], *, env: dict[str, str], cwd: str, timeout: float) -> dict[str, Any]:
    """Run ``cmd`` as a fresh process; its exit code, wall and CPU seconds, seconds to the
    first stdout line (the first result line) and to the first line on either stream (the
    first thing a user sees), its stdout line count and stderr."""
    load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env, cwd=cwd, text=True)
    first, first_err, err_lines = None, [], []

    def drain_stderr() -> None:             # read at once: its first line is timed too
        assert proc.stderr is not None
        for line in proc.stderr:
            if not first_err:
                first_err.append(time.perf_counter() - t0)
            err_lines.append(line)

    reader = threading.Thread(target=drain_stderr, daemon=True)
    reader.start()
    lines, first_text = 0, ""
    assert proc.stdout is not None
    for line in proc.stdout:
        if first is None:
            first, first_text = time.perf_counter() - t0, line.rstrip("\n")
        lines += 1
    rc = proc.wait(timeout=timeout)
    reader.join(timeout)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    outputs = [t for t in (first, *first_err) if t is not None]
    return {"rc": rc, "wall_s": wall, "first_line_s": first, "first_line": first_text,
            "stdout_lines": lines,
            "first_output_s": min(outputs) if outputs else None, "load_avg_before": load,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "stderr": "".join(err_lines)}


def run_fresh(mode: str, target: str, argv: list[str], *, cache: str | None,
              cwd: str | None = None, timeout: float = 1800,
              root: Path | None = None) -> dict[str, Any]:
    """Run ``python -m target argv`` (mode "module") or code in a fresh interpreter.

    ``cache=None`` disables the disk cache; ``root`` is the source tree imported (default
    this checkout). Returns wall, first-line and CPU seconds (:func:`_spawn`), the
    exit code and the compile profile (``{"kernel": {"n": .., "s": ..}}``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "compiles.json")
        env = dict(_env(cache, root), BENCH_OUT=out)
        run = _spawn([sys.executable, "-c", _RECORDER, mode, target, *argv], env=env,
                     cwd=cwd or str(ROOT), timeout=timeout)
        try:
            with open(out) as fh:
                compiles = json.load(fh)
        except (OSError, ValueError):
            compiles = {}
    err = run.pop("stderr")
    outside = compiles.pop(OUTSIDE, {"s": 0.0})
    fp = {k: v for k, v in compiles.items() if k.startswith("fastpriv.")}
    return {**run,
            "compiled_kernels": len(fp), "compile_events": sum(v["n"] for v in compiles.values()),
            "compile_s": sum(v["s"] for v in compiles.values()),
            "fastpriv_compile_s": sum(v["s"] for v in fp.values()),
            "compile_phases_s": _phase_totals(compiles.values()),
            "llvm_outside_compiles_s": round(outside["s"], 3),
            "numba_internal_compiles": _kernel_table(
                {k: v for k, v in compiles.items() if not k.startswith("fastpriv.")})[:20],
            "compiles": fp, "stderr_tail": err[-400:] if run["rc"] else ""}


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
    """Full run: every ``--help`` example first on an empty cache, then cached; ``warmup`` cold.

    Each documented command (:func:`help_examples`, exactly as its ``--help`` shows it) runs
    in a temporary working folder with a cache directory of its own, empty at first: the
    ``cold`` run is a first call ever (it compiles what the command needs and fills the
    cache), the ``cached`` run the next process. With ``baseline`` (a git revision) every
    cold run is preceded by the same cold run of that revision (``baseline_cold`` per
    command, ``baseline_warmup_cold``): a same-run before/after on a machine whose speed
    drifts. The machine's load average is recorded before and after (``load_avg_start``,
    ``load_avg_end``) and before each process (``load_avg_before``).
    """
    res: dict[str, Any] = {"targets": TARGETS, "revision": _revision(),
                           "load_avg_start": os.getloadavg(), "commands": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base = None
        if baseline:
            base = _export(baseline, Path(tempfile.mkdtemp(dir=tmp, prefix="base-")))
            res["baseline"] = baseline
        for name, argv in help_examples().items():
            if only and name.split("_")[0] not in only and name not in only:
                continue
            work = tempfile.mkdtemp(dir=tmp, prefix=f"{name}-")
            if base is not None:
                b = run_fresh("module", "fastpriv", argv, root=base, cwd=work,
                              cache=tempfile.mkdtemp(dir=tmp, prefix="cache-base-"))
                res["commands"].setdefault(name, {})["baseline_cold"] = {
                    k: v for k, v in b.items() if k != "compiles"}
                print(f"{name:14s} baseline cold {b['wall_s']:6.1f} s (cpu {b['cpu_s']:6.1f} s, "
                      f"{b['compiled_kernels']} kernels) rc={b['rc']}", flush=True)
            cache = tempfile.mkdtemp(dir=tmp, prefix=f"cache-{name}-")
            cold = run_fresh("module", "fastpriv", argv, cache=cache, cwd=work)
            cached = run_fresh("module", "fastpriv", argv, cache=cache, cwd=work)
            for side, r in (("cold", cold), ("cached", cached)):
                if r["rc"] not in (0, 1):
                    raise RuntimeError(f"fastpriv {' '.join(argv)} ({side}): rc={r['rc']} "
                                       f"{r['stderr_tail']}")
            res["commands"].setdefault(name, {}).update({
                "argv": argv, "cold": {k: v for k, v in cold.items() if k != "compiles"},
                "cached": {k: v for k, v in cached.items() if k != "compiles"},
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
            w = run_fresh("module", "fastpriv", ["warmup"], cache=None, cwd=tmp)
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
    res["load_avg_end"] = os.getloadavg()
    return res


def _warmup_fill(tmp: str) -> dict[str, Any]:
    """``fastpriv warmup`` into an empty cache directory, in 1 process and with ``--jobs 2``.

    Wall and CPU seconds (the workers' CPU included) of each, alternated; ``--jobs 2``
    trades CPU (kernels two model groups share compile twice) for wall time on 2 cores.
    """
    out: dict[str, Any] = {}
    for jobs in (1, 2):
        cache = tempfile.mkdtemp(dir=tmp, prefix=f"fill{jobs}-")
        r = run_fresh("module", "fastpriv", ["warmup", "--jobs", str(jobs)], cache=cache,
                      cwd=tmp)
        out[f"jobs_{jobs}"] = {k: r[k] for k in ("rc", "wall_s", "cpu_s", "load_avg_before")}
        print(f"warmup --jobs {jobs} into an empty cache: {r['wall_s']:.1f} s wall, "
              f"{r['cpu_s']:.1f} s cpu, rc={r['rc']}", flush=True)
    return out


#: Runs a module or code and profiles the whole process by phase (CPU seconds); writes the
#: profile to $BENCH_OUT when the run is over, before the interpreter's teardown. Each
#: import's own CPU time (less the imports it made) is charged to the package that owns the
#: module; Dispatcher.compile (a cached kernel's load, or a compile) is its own phase, the
#: imports made inside it included.
_PHASE_RECORDER = r"""
import json, os, runpy, sys, time
import importlib._bootstrap as _b

_acc, _stack, _n = {}, [], {"kernels": 0}
_ORIG = _b._find_and_load


def _owner(name):
    top = name.split(".")[0]
    if top in ("pandas", "dateutil", "pytz", "tzdata"):
        return "pandas"
    return {"numpy": "numpy", "numba": "numba", "llvmlite": "numba", "scipy": "numba",
            "pyarrow": "pyarrow", "fastpriv": "fastpriv"}.get(top, "other")


def _charge(key, t0):
    total = time.process_time() - t0
    own = total - _stack.pop()[1]
    _acc[key] = _acc.get(key, 0.0) + own
    if _stack:
        _stack[-1][1] += total


def _find_and_load(name, import_):
    if name in sys.modules:
        return _ORIG(name, import_)
    inner = _stack[-1][0] if _stack else None
    key = inner if inner in ("kernel_loads", "pandas") else _owner(name)
    _stack.append([key, 0.0])
    t0 = time.process_time()
    try:
        mod = _ORIG(name, import_)
    finally:
        _charge(key, t0)
    if name == "numba.core.dispatcher":
        _patch(mod.Dispatcher)
    return mod


def _patch(disp):
    real = disp.compile

    def compile(self, sig):
        _stack.append(["kernel_loads", 0.0])
        t0 = time.process_time()
        try:
            return real(self, sig)
        finally:
            _charge("kernel_loads", t0)
            _n["kernels"] += 1

    disp.compile = compile


_b._find_and_load = _find_and_load


def _dump():
    total = time.process_time()
    out = {k: round(v, 4) for k, v in _acc.items()}
    out["work"] = round(total - sum(_acc.values()), 4)
    out["in_process"] = round(total, 4)
    out["kernels"] = _n["kernels"]
    prog = sys.modules.get("fastpriv._progress")
    out["compiled"] = prog.compile_stats()["kernels"] if prog else 0
    with open(os.environ["BENCH_OUT"], "w") as fh:
        json.dump(out, fh)


mode, target, *argv = sys.argv[1:]
sys.argv = [target, *argv]
try:
    if mode == "module":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        exec(compile(target, "<bench>", "exec"), {"__name__": "__main__"})
except SystemExit as stop:
    _dump()
    raise
_dump()
"""

#: The per-phase profile's keys, in the order a fresh process meets them.
FRESH_PHASES = ("numpy", "numba", "pyarrow", "pandas", "fastpriv", "other", "kernel_loads",
                "work", "exit")


def run_phases(mode: str, target: str, argv: list[str], *, cache: str, cwd: str,
               root: Path | None = None, timeout: float = 600,
               bytecode: str | None = None, installed: Path | None = None) -> dict[str, Any]:
    """Run ``python -m target argv`` (or code) in a fresh process profiled by phase.

    Returns the process's wall, CPU and first-line seconds and exit code (:func:`_spawn`),
    the CPU seconds of each of :data:`FRESH_PHASES` (``exit``: the process's CPU less what it
    measured before its teardown), the kernels it loaded (``kernels``: Dispatcher.compile
    calls) and compiled. ``bytecode``: a folder for Python's bytecode cache
    (``PYTHONPYCACHEPREFIX``, with ``PYTHONDONTWRITEBYTECODE`` lifted), as an installed
    package has its ``.pyc`` files. ``installed``: the scripts folder of a virtual
    environment with fastpriv installed — its Python runs, in a user's environment
    (``scripts/check_wheel``'s), instead of this checkout's.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "phases.json")
        python = sys.executable
        if installed is None:
            env = dict(_env(cache, root), BENCH_OUT=out)
        else:
            env = dict(check_wheel().installed_env(installed, Path(cache)), BENCH_OUT=out)
            python = str(installed / "python")
        if bytecode is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = bytecode
        run = _spawn([python, "-c", _PHASE_RECORDER, mode, target, *argv], env=env, cwd=cwd,
                     timeout=timeout)
        try:
            with open(out) as fh:
                ph = json.load(fh)
        except (OSError, ValueError):
            ph = {}
    err = run.pop("stderr")
    phases = {k: ph.get(k, 0.0) for k in FRESH_PHASES if k != "exit"}
    phases["exit"] = round(run["cpu_s"] - ph.get("in_process", run["cpu_s"]), 4)
    return {**run, "phases_s": phases, "kernels": ph.get("kernels", 0),
            "compiled": ph.get("compiled", 0),
            "stderr_tail": err[-400:] if run["rc"] not in (0, 1) else ""}


def check_wheel() -> Any:
    """``scripts/check_wheel`` as a module (it builds, installs and checks the wheel)."""
    import importlib.util
    from importlib.machinery import SourceFileLoader

    if "check_wheel" not in sys.modules:
        loader = SourceFileLoader("check_wheel", str(ROOT / "scripts" / "check_wheel"))
        spec = importlib.util.spec_from_loader("check_wheel", loader)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["check_wheel"] = mod
        loader.exec_module(mod)
    return sys.modules["check_wheel"]


def help_examples() -> dict[str, list[str]]:
    """Every example of every command's ``--help`` (``fastpriv <argv>``), named by command."""
    import shlex

    from fastpriv.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    out: dict[str, list[str]] = {}
    for name, p in sorted(sub.choices.items()):
        lines = [ln.strip() for ln in (p.epilog or "").splitlines()
                 if ln.strip().startswith("fastpriv ")]
        for i, line in enumerate(lines):
            out[name if len(lines) == 1 else f"{name}_{i + 1}"] = shlex.split(line)[1:]
    return out


def _median(xs: list[float]) -> float:
    import statistics

    return round(statistics.median(xs), 4)


def _summary(runs: list[dict]) -> dict[str, Any]:
    firsts = {key: [r[key] for r in runs if r.get(key) is not None]
              for key in ("first_line_s", "first_output_s")}
    return {"runs": len(runs), "wall_s": _median([r["wall_s"] for r in runs]),
            "cpu_s": _median([r["cpu_s"] for r in runs]),
            **{key: _median(xs) if xs else None for key, xs in firsts.items()},
            "phases_s": {k: _median([r["phases_s"][k] for r in runs]) for k in FRESH_PHASES},
            "kernels": max(r["kernels"] for r in runs),
            "compiled": max(r["compiled"] for r in runs)}


def fresh_cached(rounds: int, only: list[str] | None = None,
                 baseline: str | None = None) -> dict[str, Any]:
    """Each documented command in fresh processes on a filled cache, profiled by phase.

    ``rounds`` processes per command and tree; with ``baseline`` the baseline revision's
    tree runs alternately with this one (first this one, then the baseline, then the other
    way round), so both see the same machine. Each tree first fills the cache with one run
    of the command (not counted).
    """
    res: dict[str, Any] = {"revision": _revision(), "rounds": rounds, "phases": FRESH_PHASES,
                           "load_avg_start": os.getloadavg(), "commands": {}}
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        pyc = os.path.join(tmp, "pycache")
        trees: dict[str, Path | None] = {"current": None}
        if baseline:
            trees["baseline"] = _export(baseline, Path(tempfile.mkdtemp(dir=tmp,
                                                                        prefix="base-")))
            res["baseline"] = baseline
        for name, argv in help_examples().items():
            if only and name.split("_")[0] not in only and name not in only:
                continue
            work = tempfile.mkdtemp(dir=tmp, prefix=f"{name}-")
            runs: dict[str, list[dict]] = {t: [] for t in trees}
            for root in trees.values():              # fill the caches (not counted)
                run_phases("module", "fastpriv", argv, cache=cache, cwd=work, root=root,
                           bytecode=pyc)
            order = list(trees)
            for i in range(rounds):
                for t in (order if i % 2 == 0 else order[::-1]):
                    r = run_phases("module", "fastpriv", argv, cache=cache, cwd=work,
                                   root=trees[t], bytecode=pyc)
                    if r["rc"] not in (0, 1):
                        raise RuntimeError(f"fastpriv {' '.join(argv)} ({t}): rc={r['rc']} "
                                           f"{r['stderr_tail']}")
                    runs[t].append(r)
            row = {"argv": argv, **{t: _summary(rs) for t, rs in runs.items()}}
            if baseline:
                row["cpu_ratio"] = round(row["current"]["cpu_s"] / row["baseline"]["cpu_s"], 3)
                row["wall_ratio"] = round(row["current"]["wall_s"] / row["baseline"]["wall_s"],
                                          3)
            res["commands"][name] = row
            cur = row["current"]
            print(f"{name:14s} cached, fresh process: {cur['wall_s']:5.2f} s wall, "
                  f"{cur['cpu_s']:5.2f} s cpu ({cur['kernels']} kernels loaded, "
                  f"{cur['compiled']} compiled)"
                  + (f"; baseline {row['baseline']['cpu_s']:5.2f} s cpu, ratio "
                     f"{row['cpu_ratio']:.2f}" if baseline else ""), flush=True)
            print("    " + "  ".join(f"{k} {cur['phases_s'][k]:.3f}" for k in FRESH_PHASES),
                  flush=True)
    res["load_avg_end"] = os.getloadavg()
    return res


#: The audit question of ``fastpriv audit adult --sensitive occupation --qi age sex`` (its
#: k-anonymity and distinct ℓ-diversity), as each contestant of the fresh-install mode asks
#: it in a fresh process of its own: fastpriv (installed from the wheel, its Python API),
#: DuckDB and Polars (this environment's), on the bundled Adult Parquet file ``$ADULT``.
PEER_CODE = {
    "fastpriv": ("import os\nfrom fastpriv import Release, classic\n"
                 "rel = Release.from_table(os.environ['ADULT'], qi=['age', 'sex'], "
                 "sensitive='occupation')\nm = classic.audit(rel).to_dict()['models']\n"
                 "print(m['k_anonymity']['value'], m['l_diversity']['value'])"),
    "duckdb": ("import os, duckdb\nprint(*duckdb.connect().execute(\"SELECT min(n), min(l) "
               "FROM (SELECT count(*) AS n, count(DISTINCT occupation) AS l FROM "
               "read_parquet(?) GROUP BY age, sex)\", [os.environ['ADULT']]).fetchone())"),
    "polars": ("import os, polars as pl\nr = (pl.scan_parquet(os.environ['ADULT'])"
               ".group_by('age', 'sex').agg(pl.len().alias('n'), "
               "pl.col('occupation').n_unique().alias('l'))"
               ".select(pl.col('n').min(), pl.col('l').min()).collect())\n"
               "print(r['n'][0], r['l'][0])"),
}


def _install_wheel(base: Path, wheel: Path | None) -> tuple[Path, dict[str, Any]]:
    """Build this checkout's wheel (unless ``wheel`` is given) and install it into a new
    virtual environment under ``base``; its scripts folder and what the steps took."""
    cw = check_wheel()
    info: dict[str, Any] = {}
    if wheel is None:
        wheel, info["build_s"] = cw.build_wheel(base / "dist")
    info.update(name=wheel.name, size_mb=round(wheel.stat().st_size / 1e6, 2))
    bindir, info["install_s"] = cw.install(wheel, base / "venv")
    return bindir, info


def _fresh_install_command(name: str, argv: list[str], rounds: int, bindir: Path,
                           tmp: str) -> dict[str, Any]:
    """One documented command, ``rounds`` fresh processes of the installed package, each
    with a new empty user cache that must stay empty (nothing compiled, nothing written)."""
    runs, refused = [], False
    for _ in range(rounds):
        cache = tempfile.mkdtemp(dir=tmp, prefix="cache-")
        work = tempfile.mkdtemp(dir=tmp, prefix=f"{name}-")
        r = run_phases("module", "fastpriv", argv, cache=cache, cwd=work, installed=bindir)
        refused = r["rc"] == 2 and check_wheel().NEEDS_CHECKOUT in r["stderr_tail"]
        if r["rc"] not in (0, 1) and not refused:
            raise RuntimeError(f"fastpriv {' '.join(argv)} (installed): rc={r['rc']} "
                               f"{r['stderr_tail']}")
        written = [str(f) for f in Path(cache).rglob("*") if f.is_file()]
        if r["compiled"] or written:
            raise RuntimeError(f"fastpriv {' '.join(argv)} (installed) compiled "
                               f"{r['compiled']} kernels, wrote {written[:3]} to the cache")
        runs.append(r)
    return {"argv": argv, "current": _summary(runs), "needs_checkout": refused}


def import_profile(argv: list[str], bindir: Path, tmp: str) -> dict[str, Any]:
    """``python -X importtime -m fastpriv argv`` in the installed environment (empty cache):
    each package's own import milliseconds (fastpriv by module), and the fastpriv modules
    the command imported."""
    import re

    cache = tempfile.mkdtemp(dir=tmp, prefix="cache-")
    env = check_wheel().installed_env(bindir, Path(cache))
    r = _spawn([str(bindir / "python"), "-X", "importtime", "-m", "fastpriv", *argv],
               env=env, cwd=tempfile.mkdtemp(dir=tmp, prefix="imports-"), timeout=600)
    own: dict[str, float] = {}
    modules = set()
    for m in re.finditer(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", r["stderr"]):
        name = m.group(2)
        key = name.split(".")[0]
        if key == "fastpriv":
            modules.add(name)
            key = ".".join(name.split(".")[:2])
        own[key] = own.get(key, 0.0) + int(m.group(1)) / 1000
    top = sorted(own.items(), key=lambda kv: -kv[1])[:12]
    return {"own_ms": {k: round(v, 1) for k, v in top}, "total_ms": round(sum(own.values()), 1),
            "fastpriv_ms": round(sum(v for k, v in own.items()
                                     if k == "fastpriv" or k.startswith("fastpriv.")), 1),
            "fastpriv_modules": sorted(modules)}


def _fresh_peers(rounds: int, bindir: Path, tmp: str) -> dict[str, Any]:
    """:data:`PEER_CODE` in fresh processes, alternated, ``rounds`` each: medians of wall,
    CPU and first-line seconds, and the answer (``"k l"``), which must be the same for all."""
    from fastpriv.datasets import adult_path

    runs: dict[str, list[dict]] = {name: [] for name in PEER_CODE}
    for i in range(rounds):
        for name in (list(PEER_CODE) if i % 2 == 0 else list(PEER_CODE)[::-1]):
            cache = tempfile.mkdtemp(dir=tmp, prefix="cache-")
            if name == "fastpriv":
                env = check_wheel().installed_env(bindir, Path(cache))
                python = str(bindir / "python")
            else:
                env, python = _env(cache), sys.executable
            env["ADULT"] = adult_path()
            r = _spawn([python, "-c", PEER_CODE[name]], env=env,
                       cwd=tempfile.mkdtemp(dir=tmp, prefix="out-"), timeout=300)
            if r["rc"] != 0:
                raise RuntimeError(f"{name}: rc={r['rc']} {r['stderr'][-400:]}")
            runs[name].append(r)
    answers = {r["first_line"] for rs in runs.values() for r in rs}
    if len(answers) != 1:
        raise RuntimeError(f"the contestants disagree on (k, l): {sorted(answers)}")
    return {name: {"runs": len(rs), "answer": rs[0]["first_line"],
                   **{key: _median([r[key] for r in rs])
                      for key in ("wall_s", "cpu_s", "first_line_s")}}
            for name, rs in runs.items()}


def fresh_install(rounds: int, only: list[str] | None = None,
                  wheel: Path | None = None) -> dict[str, Any]:
    """Every documented command as a new user runs it: the wheel in a new virtual
    environment, an empty user cache, each command in a fresh process, profiled by phase.

    ``rounds`` processes per command (medians); then the audit question in fresh processes
    of fastpriv (installed), DuckDB and Polars, alternated (:data:`PEER_CODE`).
    """
    res: dict[str, Any] = {"revision": _revision(), "rounds": rounds, "phases": FRESH_PHASES,
                           "load_avg_start": os.getloadavg(), "commands": {}}
    with tempfile.TemporaryDirectory(prefix="fresh-install-") as tmp:
        bindir, res["wheel"] = _install_wheel(Path(tmp), wheel)
        print(f"wheel {res['wheel']['name']}: {res['wheel']['size_mb']} MB, installed in "
              f"{res['wheel']['install_s']:.0f} s", flush=True)
        for name, argv in help_examples().items():
            if only and name.split("_")[0] not in only and name not in only:
                continue
            row = _fresh_install_command(name, argv, rounds, bindir, tmp)
            row["imports"] = import_profile(argv, bindir, tmp)
            res["commands"][name] = row
            cur = row["current"]
            print(f"{name:14s} fresh install: first result {cur['first_line_s']} s, "
                  f"{cur['wall_s']:5.2f} s wall, {cur['cpu_s']:5.2f} s cpu "
                  f"({cur['kernels']} kernels loaded, {cur['compiled']} compiled)"
                  + ("; needs a source checkout" if row["needs_checkout"] else ""),
                  flush=True)
            print("    " + "  ".join(f"{k} {cur['phases_s'][k]:.3f}" for k in FRESH_PHASES),
                  flush=True)
        res["peers"] = _fresh_peers(rounds, bindir, tmp)
    res["load_avg_end"] = os.getloadavg()
    return res


SMOKE_CODE = ("import numpy as np\nfrom fastpriv._kernels import metrics as M\n"
              "print(M.group_spread(np.zeros(3, dtype=np.int64), np.ones((3, 2)), 1))")


def smoke() -> dict[str, Any]:
    """Seconds-long check: one small kernel cold, then cached in a second process.

    The cached process is also profiled by phase (:func:`run_phases`).
    """
    with tempfile.TemporaryDirectory() as tmp:
        cold = run_fresh("code", SMOKE_CODE, [], cache=None)
        run_fresh("code", SMOKE_CODE, [], cache=tmp)
        cached = run_fresh("code", SMOKE_CODE, [], cache=tmp)
        phases = run_phases("code", SMOKE_CODE, [], cache=tmp, cwd=tmp)
    assert cold["rc"] == 0 and cached["rc"] == 0, (cold["stderr_tail"], cached["stderr_tail"])
    assert cold["compiled_kernels"] == 1 and cached["compiled_kernels"] == 0
    assert phases["rc"] == 0 and phases["kernels"] == 1 and phases["compiled"] == 0, phases
    assert phases["phases_s"]["numba"] > 0 and phases["phases_s"]["kernel_loads"] > 0
    return {"smoke": {"cold": cold, "cached": cached, "cached_phases": phases}}


def test_cold_start(full):
    payload = measure() if full else smoke()
    write_result("cold_start_commands", payload, full)


def merge_result(name: str, payload: dict[str, Any], how: str) -> Path:
    """Put the commands of ``payload`` into the full result file ``name`` (``--merge``).

    The file keeps its machine, date, revision and load (those of its other commands); the
    commands measured now are listed under ``merged`` with their own date, revision, load
    and the command line that measured them, so the README says so.
    """
    from benchmarks._common import RESULTS, machine

    path = RESULTS / f"{name}.json"
    data = json.loads(path.read_text())
    data["commands"].update(payload["commands"])
    data.setdefault("merged", []).append({
        "commands": sorted(payload["commands"]), "how": how, "date": machine()["date"],
        "revision": payload["revision"], "load_avg_start": payload["load_avg_start"],
        "load_avg_end": payload["load_avg_end"]})
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="comma-separated command names (demo,audit,anonymize_2,...)")
    p.add_argument("--skip-warmup", action="store_true", help="do not time fastpriv warmup")
    p.add_argument("--name", default="cold_start_commands", help="result file name")
    p.add_argument("--baseline", metavar="REV",
                   help="also time every cold run (with --fresh: every fresh cached run) of "
                        "git revision REV, alternated")
    p.add_argument("--merge", action="store_true",
                   help="with --only: measure those commands and put them into the existing "
                        "result file, which keeps the other commands and records which were "
                        "measured later, when, at which revision and load (a new command)")
    p.add_argument("--fresh", type=int, metavar="ROUNDS",
                   help="only the documented commands in fresh processes on a filled cache, "
                        "ROUNDS runs each, profiled by phase (writes cold_start_fresh.json)")
    p.add_argument("--install", type=int, metavar="ROUNDS",
                   help="fresh install: build the wheel (or take --wheel), install it into a "
                        "new virtual environment and run every documented command ROUNDS times "
                        "with an empty user cache, profiled by phase, then the audit question "
                        "in fresh DuckDB and Polars processes (writes cold_start_install.json)")
    p.add_argument("--wheel", type=Path, help="with --install: a wheel already built")
    a = p.parse_args(argv)
    only = a.only.split(",") if a.only else None
    if a.install:
        payload = fresh_install(a.install, only, wheel=a.wheel.resolve() if a.wheel else None)
        if a.merge:
            print(merge_result("cold_start_install", payload, "python -m "
                               "benchmarks.bench_cold_start " + " ".join(
                                   argv if argv is not None else sys.argv[1:])))
        else:
            print(write_result("cold_start_install", payload, True))
        return 0
    if a.merge:
        if not only:
            p.error("--merge needs --only (the commands to measure)")
        name = "cold_start_fresh" if a.fresh else a.name
        payload = (fresh_cached(a.fresh, only) if a.fresh
                   else measure(only, warmup=False))
        print(merge_result(name, payload, "python -m benchmarks.bench_cold_start "
                           + " ".join(argv if argv is not None else sys.argv[1:])))
        return 0
    if a.fresh:
        payload = fresh_cached(a.fresh, only, baseline=a.baseline)
        name = "cold_start_fresh" if a.name == "cold_start_commands" else a.name
        print(write_result(name, payload, True))
        return 0
    payload = measure(only, warmup=not a.skip_warmup, baseline=a.baseline)
    print(write_result(a.name, payload, True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
