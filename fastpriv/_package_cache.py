"""Building the package's compiled kernels: the wheel's read-only cache, for portable CPUs.

Building a wheel (``pip wheel .``, ``python -m build``, a non-editable ``pip install .``)
runs the warm-up workload (:mod:`fastpriv._warmup`, the one ``fastpriv warmup`` runs) in
fresh processes whose code generator targets a *portable* CPU rather than the build
machine's, and stores the machine code under ``fastpriv/_kernel_cache/`` inside the
package (the setuptools hook is ``setup.py``; an editable install compiles nothing and
keeps the JIT). The layout is the user cache's, one directory per target, and
``manifest.json`` records what the code was built with:

``_kernel_cache/numba-<version>-py<XY>/<cpu>-<features hash>/<module>-<source hash>/``

How a process loads them — looked up under the target they were compiled for, used only
with the Numba, llvmlite, Python and NumPy major version of the build — is
:mod:`fastpriv._cache`'s (:func:`fastpriv._cache.shipped`). Code for LLVM's baseline CPU of
the architecture (``generic``; SSE2 on x86-64) runs on every CPU of it, code for
``x86-64-v3`` (AVX2, FMA, BMI2, …) on every CPU having those features. A wheel ships
``generic`` (:func:`default_targets`: it measured as fast as the host's own code on the
hot paths); ``FASTPRIV_KERNEL_TARGETS=x86-64-v3,generic`` at build time ships both, and a
process then loads the most capable target its CPU can run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ._cache import MANIFEST, TARGETS, _host_magic, _versions

__all__ = ["default_targets", "target_env", "build", "main"]


# ============================================================================ building
def default_targets() -> list[str]:
    """Return the targets a wheel built here ships, most capable first.

    ``FASTPRIV_KERNEL_TARGETS`` (comma-separated keys of :data:`TARGETS`), else
    ``generic`` alone: on the hot paths of the documented commands, baseline x86-64 code
    took 0.89-1.07x the CPU time of code compiled for the measuring machine's own CPU (AMD
    EPYC, AVX-512; ``benchmarks/bench_portable_kernels.py``), so a second target would
    double the build and the kernels' size for nothing measurable there. A target the
    building machine cannot run is refused (the workload runs what it compiles).
    """
    import platform

    asked = os.environ.get("FASTPRIV_KERNEL_TARGETS", "").strip()
    targets = [t.strip() for t in asked.split(",") if t.strip()] if asked else ["generic"]
    if "x86-64-v3" in targets:
        from numba.core.codegen import get_host_cpu_features

        have = {f[1:] for f in get_host_cpu_features().split(",") if f.startswith("+")}
        if platform.machine().lower() not in ("x86_64", "amd64") or \
                not set(TARGETS["x86-64-v3"][1]) <= have:
            raise ValueError("FASTPRIV_KERNEL_TARGETS: this machine cannot run x86-64-v3 "
                             "code, which the build runs to compile it")
    return targets


def target_env(target: str, cache_dir: str | os.PathLike[str],
               base: dict[str, str] | None = None) -> dict[str, str]:
    """Return the environment of a process compiling kernels for ``target`` into ``cache_dir``.

    Numba's settings from ``base`` (default ``os.environ``) are dropped (a ``NUMBA_OPT`` or
    ``NUMBA_BOUNDSCHECK`` of the builder's shell must not reach shipped code), as are
    fastpriv's cache switches; the code generator targets ``target``'s CPU with its own
    features, and Numba's thread pool has at least two threads, so the warm-up reaches the
    multi-threaded paths on a one-core builder too.
    """
    base = dict(os.environ if base is None else base)
    env = {k: v for k, v in base.items()
           if not k.startswith("NUMBA_") and k not in (
               "FASTPRIV_NO_CACHE", "FASTPRIV_CACHE_DIR", "FASTPRIV_COMPILE_STATS",
               "FASTPRIV_PROGRESS")}
    env.update(FASTPRIV_CACHE_DIR=str(cache_dir), NUMBA_CPU_NAME=TARGETS[target][0],
               NUMBA_CPU_FEATURES="", NUMBA_NUM_THREADS=str(max(2, os.cpu_count() or 1)),
               FASTPRIV_PROGRESS="0")
    return env


def _compile_here(out: str, code: str | None) -> None:
    """Child of :func:`build`: run the workload (or ``code``), report what it compiled."""
    import fastpriv

    from ._cache import _target_tag
    from ._progress import compile_stats

    t0 = time.perf_counter()
    if code is None:
        from ._warmup import warm

        payload = warm()
        report = {"compiled": payload["compiled"], "loaded": payload["loaded"],
                  "workloads": payload["workloads"], "not_reached": payload["not_reached"]}
    else:
        exec(compile(code, "<workload>", "exec"), {"__name__": "__workload__"})
        report = {"compiled": compile_stats()["kernels"], "loaded": 0, "workloads": [],
                  "not_reached": []}
    report.update(_versions(), package=str(Path(fastpriv.__file__ or ".").resolve().parent),
                  magic=list(_host_magic()), dir=_target_tag(),
                  seconds=round(time.perf_counter() - t0, 1))
    Path(out).write_text(json.dumps(report), encoding="utf-8")


def _say(stream: Any, text: str) -> None:
    stream.write(f"fastpriv: {text}\n")
    stream.flush()


def _run_targets(dest: Path, targets: list[str], code: str | None, jobs: int,
                 stream: Any) -> dict[str, dict]:
    """Compile each target in its own process, ``jobs`` at a time; their reports by target."""
    import subprocess
    import tempfile

    reports: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        todo = list(targets)
        running: list[tuple[str, subprocess.Popen, str, float]] = []
        while todo or running:
            while todo and len(running) < jobs:
                t = todo.pop(0)
                out = os.path.join(tmp, f"{t}.json")
                cmd = [sys.executable, "-m", "fastpriv._package_cache", "compile", out]
                if code is not None:
                    cmd += ["--code", code]
                proc = subprocess.Popen(cmd, cwd=tmp, env=target_env(t, dest),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
                running.append((t, proc, out, time.perf_counter()))
            t, proc, out, t0 = running.pop(0)
            log, _ = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"compiling the kernels for {t} failed (exit "
                                   f"{proc.returncode}):\n{log[-3000:]}")
            reports[t] = json.loads(Path(out).read_text(encoding="utf-8"))
            n = reports[t]["compiled"]
            _say(stream, f"compiled {n} kernel{'' if n == 1 else 's'} for {t} in "
                 f"{time.perf_counter() - t0:.0f} s")
    return reports


def build(dest: str | os.PathLike[str], targets: list[str] | None = None, *,
          code: str | None = None, jobs: int | None = None, stream: Any = None) -> dict:
    """Compile the kernels into ``dest`` (a package's ``_kernel_cache``) for portable targets.

    Parameters
    ----------
    dest : path
        The directory to fill; emptied first. The ``fastpriv`` package these kernels ship
        with must be the one a fresh ``python -m fastpriv`` imports (``PYTHONPATH``), with
        ``dest`` its ``_kernel_cache``.
    targets : list of str, optional
        Keys of :data:`TARGETS`, most capable first (default :func:`default_targets`).
    code : str, optional
        Python code to run instead of the warm-up workload (tests: one small kernel).
    jobs : int, optional
        Targets compiled at once, each in its own process (default: the cores, at most the
        number of targets).
    stream : file-like, optional
        Where the progress lines go (default ``sys.stderr``).

    Returns
    -------
    dict
        The manifest written to ``dest/manifest.json``.

    """
    import shutil

    stream = sys.stderr if stream is None else stream
    dest = Path(dest).resolve()
    targets = default_targets() if targets is None else list(targets)
    unknown = [t for t in targets if t not in TARGETS]
    if unknown or not targets:
        raise ValueError(f"targets: unknown {unknown}; expected some of {list(TARGETS)}")
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(targets)))
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    t0 = time.perf_counter()
    _say(stream, f"compiling the kernels into the package for {', '.join(targets)} "
         f"({jobs} process{'es' if jobs > 1 else ''}; 1-2 minutes of CPU each)…")
    reports = _run_targets(dest, targets, code, jobs, stream)
    first = reports[targets[0]]
    problems = [f"{t}: {w['name']}: {w['status']}" for t, r in reports.items()
                for w in r["workloads"] if w["status"] != "ok"]
    if problems:
        raise RuntimeError("the warm-up workload did not run through, so kernels would be "
                           "missing from the package:\n  " + "\n  ".join(problems))
    if any(Path(r["package"]) != dest.parent for r in reports.values()):
        raise RuntimeError(f"the workload imported fastpriv from {first['package']}, not from "
                           f"{dest.parent} (set PYTHONPATH)")
    manifest = {"format": 1, **{k: first[k] for k in ("numba", "llvmlite", "python", "numpy")},
                "triple": first["magic"][0],
                "targets": [{"name": t, "requires": list(TARGETS[t][1]),
                             "magic": reports[t]["magic"], "dir": reports[t]["dir"],
                             "kernels": reports[t]["compiled"],
                             "seconds": reports[t]["seconds"]} for t in targets],
                "seconds": round(time.perf_counter() - t0, 1)}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    _say(stream, f"kernels compiled into {dest} in {manifest['seconds']:.0f} s "
         f"({size / 1e6:.1f} MB)")
    return manifest


def main(argv: list[str] | None = None) -> int:
    """``python -m fastpriv._package_cache build DEST [--target T ...]`` (the build hook)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m fastpriv._package_cache")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile the kernels into DEST for portable targets")
    b.add_argument("dest")
    b.add_argument("--target", action="append", choices=list(TARGETS), dest="targets")
    b.add_argument("--code", help="Python code to run instead of the warm-up workload")
    b.add_argument("--jobs", type=int)
    c = sub.add_parser("compile", help="(internal) one target's process")
    c.add_argument("out")
    c.add_argument("--code")
    args = parser.parse_args(argv)
    if args.command == "compile":
        _compile_here(args.out, args.code)
    else:
        build(args.dest, args.targets, code=args.code, jobs=args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
