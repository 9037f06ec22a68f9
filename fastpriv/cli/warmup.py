"""``fastpriv warmup``: compile every kernel into Numba's on-disk cache, ahead of time.

A wheel (or a non-editable ``pip install .``) ships every kernel compiled for portable CPUs
(:mod:`fastpriv._package_cache`), so an installed fastpriv has nothing to warm unless its
Numba or llvmlite differs from the wheel's (one line on the ``fastpriv`` logger says so).
Otherwise — an editable install, a wheel built with ``FASTPRIV_BUILD_KERNELS=0`` —
fastpriv's kernels are compiled on first use and cached on disk in ``FASTPRIV_CACHE_DIR``
(default: the user cache directory; see :mod:`fastpriv._cache`), keyed on the kernels'
source contents, so only the first process pays — and a cache filled in a Docker build step
or in a directory shared by cluster workers serves every copy of the same release. Run
``fastpriv warmup`` once after installing or upgrading such an install — and **before
fanning out workers** (Dask, Spark, multiprocessing): several processes compiling the same
kernel for the first time at once all pay the compile (Numba writes cache files atomically,
so they do not corrupt each other's entries, but each process compiles).

``--jobs N`` warms the models in N worker processes that share the cache directory (the
models sharing the possible-worlds kernels stay in one worker). It costs 5-20 % more CPU
time in all, since kernels two workers both need (the counting kernels) compile in both, so
it shortens the wall time only when N cores are free: on 2 cores ``--jobs 2`` took 0.61× the
wall time of one process, and on the same machine busy with other work it took longer
(``warmup_fill`` in ``benchmarks/results/cold_start_commands.json`` and its history).

The workload is tiny and exercises every public model that is installed, model by model
(:data:`fastpriv._warmup.MODELS`, the registry's warm-up groups): each model's documented
examples (the doctests of its modules, :data:`fastpriv._warmup.DOCTEST_MODEL` — each
model's owner keeps them running) and its own workload (:data:`fastpriv._warmup.WORKLOADS`:
the ``warmup_workload`` each model declares in :mod:`fastpriv.registry`, the counting's and
anonymizers' own: the options, large-input, sparse and parallel code paths that small
examples do not reach on their own). ``--models X`` runs X's alone, so it compiles X's
kernels and the shared counting kernels that building X's input (a Release, class counts)
takes — no other model's.

It is complete for the documented commands: after ``fastpriv warmup`` into an empty cache,
each example of each command's ``--help`` compiles nothing in a fresh process
(``tests/test_warmup_complete.py`` runs them all), so a read-only cache baked by
``warmup`` serves them without compiling. It reaches every kernel entry point, so the wheel
ships them all: the report counts kernels compiled now, loaded from the cache, helpers
(compiled inside their callers) and entry points not reached, which the same tests keep at
none (a kernel no Python path calls is removed, one that a path calls gets a workload).
``FASTPRIV_NO_CACHE=1`` disables the cache (everything then compiles in every
process; warm-up is pointless and the command says so).
"""

from __future__ import annotations

import argparse

from .._warmup import MODELS, warm, warm_parallel

ORDER = 90

__all__ = ["register", "run", "MODELS", "warm", "warm_parallel"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``warmup`` sub-command."""
    from ._common import epilog

    p = sub.add_parser(
        "warmup", help="compile every kernel into the on-disk JIT cache (run before "
                       "fanning out workers)",
        description="Run a tiny workload through every installed model so that every Numba "
                    "kernel is compiled and stored in the on-disk cache. A wheel ships the "
                    "kernels compiled; after an editable install, run it once, and before "
                    "starting parallel workers: concurrent first compiles race on the "
                    "cache. The cache lives in FASTPRIV_CACHE_DIR (default the user cache "
                    "dir), keyed on the kernels' source, so it can "
                    "be built in a Docker layer or shared by cluster workers; "
                    "FASTPRIV_NO_CACHE=1 disables it.",
        epilog=epilog("fastpriv warmup --models classic"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", choices=MODELS, metavar="MODEL",
                   help="warm only these models' kernels (and the counting kernels that "
                        "building their input takes; default: all): " + ", ".join(MODELS))
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="warm the models in N worker processes sharing the cache directory "
                        "(default 1). Shortens the wall time when N cores are free; costs "
                        "5-20%% more CPU (kernels several models share compile in each "
                        "worker)")
    p.add_argument("--verbose", action="store_true",
                   help="list every kernel and the workloads that failed")
    p.add_argument("--json", metavar="OUT", help="also write the report as JSON to OUT")
    p.add_argument("--overwrite", action="store_true", help="replace an existing JSON output")
    p.set_defaults(func=run)


# ============================================================================ workloads
def run(args: argparse.Namespace) -> int:
    """Execute ``fastpriv warmup``."""
    from .._jit import CACHE_ENABLED
    from ..errors import InputError
    from ._common import format_table

    jobs = getattr(args, "jobs", 1) or 1
    if jobs < 1:
        raise InputError(f"--jobs must be a positive integer, got {jobs}")
    if not CACHE_ENABLED:
        print("FASTPRIV_NO_CACHE is set: kernels are not cached on disk, so warming up has "
              "no lasting effect (it only compiles them in this process).")
    if jobs > 1 and CACHE_ENABLED:
        payload = warm_parallel(getattr(args, "models", None), jobs)
    else:
        payload = warm(getattr(args, "models", None))
    rows = payload["kernels"]
    missed = payload["not_reached"]
    print(format_table(["workload", "status", "time"],
                       [[w["name"], w["status"], w["time"]] for w in payload["workloads"]],
                       title="fastpriv warmup"))
    print()
    print(f"{len(rows)} kernels: {payload['compiled']} compiled now, {payload['loaded']} loaded "
          f"from the cache, {payload['helpers']} helpers (cached inside their callers), "
          f"{len(missed)} entry points not reached — {payload['seconds']:.1f} s"
          + ("" if CACHE_ENABLED else " (cache disabled)"))
    if missed and not getattr(args, "models", None):
        print("not reached: " + ", ".join(missed))
    if CACHE_ENABLED:
        print(f"cache directory: {payload['cache_dir']}")
    if args.verbose:
        print()
        print(format_table(["kernel", "helper", "signatures", "loaded", "compiled"],
                           [[r["kernel"], r["helper"], r["signatures"], r["cache_hits"],
                             r["cache_misses"]] for r in rows], title="kernels"))
    if getattr(args, "json", None):
        from .._io import announce_written, write_json

        dest = write_json(args.json, payload, overwrite=args.overwrite, inputs=[])
        announce_written(dest)
    return 0
