"""Kernels compiled with the package: a read-only cache built with the wheel, for portable CPUs.

Building a wheel (``pip wheel .``, ``python -m build``, a non-editable ``pip install .``)
runs the warm-up workload (:mod:`fastpriv._warmup`, the one ``fastpriv warmup`` runs) in
fresh processes whose code generator targets a *portable* CPU rather than the build
machine's, and stores the machine code under ``fastpriv/_kernel_cache/`` inside the
package (the setuptools hook is ``setup.py``; an editable install compiles nothing and
keeps the JIT). The layout is the user cache's (:mod:`fastpriv._cache`), one directory per
target, and ``manifest.json`` records what the code was built with:

``_kernel_cache/numba-<version>-py<XY>/<cpu>-<features hash>/<module>-<source hash>/``

At run time a kernel is taken from the user's cache, else from the package's, else
compiled as before (and saved to the user's cache). Numba keys each cache entry on its
code generator's *magic tuple* (target triple, CPU name, CPU features); the package's
entries are looked up under the tuple they were compiled for, not the running process's,
and their object code is linked into the running process as is: code for LLVM's baseline
CPU of the architecture (``generic``; SSE2 on x86-64) runs on every CPU of it, code for
``x86-64-v3`` (AVX2, FMA, BMI2, …) on every CPU having those features. A wheel ships
``generic`` (:func:`default_targets`: it measured as fast as the host's own code on the
hot paths); ``FASTPRIV_KERNEL_TARGETS=x86-64-v3,generic`` at build time ships both, and
:func:`shipped` then picks the most capable target whose features the running CPU has
(as Numba sees them: ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` count).

The package's kernels are used only where they are what this process would compile: the
Numba, llvmlite and Python versions, NumPy's major version and the target triple must be
those of the build; otherwise kernels compile on first use, as without them, and one line
on the ``fastpriv`` logger says why (once per process, when the first kernel misses the
user's cache). ``FASTPRIV_NO_CACHE=1`` turns this cache off too. The package's cache is
trusted like the package's own modules next to it (whoever can write one can write the
other), and never written at run time.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._cache import PACKAGE_CACHE

__all__ = ["PACKAGE_CACHE", "MANIFEST", "TARGETS", "Shipped", "shipped", "mismatch",
           "default_targets", "target_env", "build", "main"]


#: What the kernels under :data:`PACKAGE_CACHE` were built with (JSON).
MANIFEST = "manifest.json"

#: Portable targets, most capable first: LLVM CPU name and the CPU features (LLVM's names)
#: a machine needs to run code compiled for it. ``x86-64-v3`` is the x86-64 psABI level 3
#: (Haswell, Zen 1 and later); ``generic`` is LLVM's baseline for the architecture.
TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "x86-64-v3": ("x86-64-v3", ("avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt",
                                "movbe", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3",
                                "xsave")),
    "generic": ("generic", ()),
}


@dataclass(frozen=True)
class Shipped:
    """The package's kernels for one target, usable in this process.

    Attributes
    ----------
    root : Path
        The target's directory (module directories below it, as in the user cache).
    target : str
        The target's name (a key of :data:`TARGETS`).
    magic : tuple of str
        The code generator's magic tuple the entries were saved under.

    """

    root: Path
    target: str
    magic: tuple[str, str, str]


def _versions() -> dict[str, str]:
    """Return the versions compiled code depends on, in this process."""
    import llvmlite
    import numba
    import numpy

    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "python": sys.implementation.cache_tag + getattr(sys, "abiflags", ""),
            "numpy": numpy.__version__}


def _host_magic() -> tuple[str, str, str]:
    from numba.core.registry import cpu_target

    return tuple(cpu_target.target_context.codegen().magic_tuple())


def mismatch(manifest: dict, versions: dict[str, str], triple: str) -> str | None:
    """Return why kernels built as ``manifest`` says cannot be used here, or ``None``.

    Parameters
    ----------
    manifest : dict
        The package cache's :data:`MANIFEST`.
    versions : dict
        This process's ``numba``, ``llvmlite``, ``python`` (cache tag) and ``numpy`` versions.
    triple : str
        This process's LLVM target triple.

    Returns
    -------
    str or None
        One clause naming what differs, built-with against installed.

    Examples
    --------
    >>> m = {"numba": "0.68.1", "llvmlite": "0.50.0", "python": "cpython-311",
    ...      "numpy": "2.4.6", "triple": "x86_64-unknown-linux-gnu"}
    >>> v = dict(m)
    >>> mismatch(m, v, "x86_64-unknown-linux-gnu") is None
    True
    >>> mismatch(m, dict(v, numba="0.69.0", llvmlite="0.51.0"), "x86_64-unknown-linux-gnu")
    'built with Numba 0.68.1 and llvmlite 0.50.0; installed: Numba 0.69.0 and llvmlite 0.51.0'
    >>> mismatch(m, dict(v, numpy="2.0.1"), "x86_64-unknown-linux-gnu") is None
    True

    """
    names = {"numba": "Numba", "llvmlite": "llvmlite", "python": "Python", "numpy": "NumPy"}
    differ = [k for k in ("numba", "llvmlite", "python") if manifest.get(k) != versions[k]]
    if str(manifest.get("numpy", "")).split(".")[0] != versions["numpy"].split(".")[0]:
        differ.append("numpy")
    if differ:
        built = " and ".join(f"{names[k]} {manifest.get(k)}" for k in differ)
        here = " and ".join(f"{names[k]} {versions[k]}" for k in differ)
        return f"built with {built}; installed: {here}"
    if manifest.get("triple") != triple:
        return f"built for {manifest.get('triple')}; this machine is {triple}"
    return None


@functools.lru_cache(maxsize=None)
def shipped() -> Shipped | None:
    """Return the package's kernels this process can load, or ``None``.

    ``None`` silently where the package has none (a source checkout, an editable install);
    otherwise with one line on the ``fastpriv`` logger saying why they do not apply.
    Memoized: decided once per process, at the first kernel the user's cache misses.
    """
    from ._cache import _note_once, cache_root

    if not PACKAGE_CACHE.is_dir() or cache_root().resolve() == PACKAGE_CACHE:
        return None     # none shipped, or this process is filling it (:func:`build`)

    def unusable(why: str) -> None:
        _note_once("shipped", f"the kernels compiled with this package are not used ({why}): "
                   f"kernels are compiled on first use instead, once (cached in "
                   f"{cache_root()}; `fastpriv warmup` compiles them all ahead)")

    try:
        manifest = json.loads((PACKAGE_CACHE / MANIFEST).read_text(encoding="utf-8"))
        targets = list(manifest["targets"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        unusable(f"{PACKAGE_CACHE / MANIFEST} is unreadable: {type(exc).__name__}")
        return None
    triple, _, features = _host_magic()
    why = mismatch(manifest, _versions(), triple)
    if why is not None:
        unusable(why)
        return None
    have = {f[1:] for f in features.split(",") if f.startswith("+")}
    for t in targets:
        if set(t["requires"]) <= have:
            return Shipped(PACKAGE_CACHE / t["dir"], t["name"], tuple(t["magic"]))
    unusable(f"no target fits this CPU: {', '.join(t['name'] for t in targets)}")
    return None


# ============================================================================ building
def default_targets() -> list[str]:
    """Return the targets a wheel built here ships, most capable first.

    ``FASTPRIV_KERNEL_TARGETS`` (comma-separated keys of :data:`TARGETS`), else
    ``generic`` alone: on the hot paths of the documented commands, baseline x86-64 code
    took 0.79-1.01x the CPU time of code compiled for the measuring machine's own CPU (AMD
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
