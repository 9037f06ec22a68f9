"""``fastpriv warmup``: compile every kernel into Numba's on-disk cache, ahead of time.

fastpriv's kernels are compiled on first use and cached on disk in ``FASTPRIV_CACHE_DIR``
(default: the user cache directory; see :mod:`fastpriv._cache`), keyed on the kernels'
source contents, so only the first process pays — and a cache filled in a Docker build step
or in a directory shared by cluster workers serves every copy of the same release. Run
``fastpriv warmup`` once after installing or upgrading — and **before fanning out
workers** (Dask, Spark, multiprocessing): several processes compiling the same kernel for
the first time at once all pay the compile (Numba writes cache files atomically, so they do
not corrupt each other's entries, but each process compiles).

``--jobs N`` warms the models in N worker processes that share the cache directory (the
models sharing the possible-worlds kernels stay in one worker). It costs 5-20 % more CPU
time in all, since kernels two workers both need (the counting kernels) compile in both, so
it shortens the wall time only when N cores are free: on 2 cores ``--jobs 2`` took 0.61× the
wall time of one process, and on the same machine busy with other work it took longer
(``warmup_fill`` in ``benchmarks/results/cold_start_commands.json`` and its history).

The workload is tiny and exercises every public model that is installed: the documented
examples (doctests) of every public module — each model's owner keeps them running — plus
explicit calls that reach the streaming, sparse and parallel code paths that small inputs
do not reach on their own. The report counts kernels compiled now, loaded from the cache,
and not reached. ``FASTPRIV_NO_CACHE=1`` disables the cache (everything then compiles in
every process; warm-up is pointless and the command says so).
"""

from __future__ import annotations

import argparse

ORDER = 90

#: Public modules whose documented examples form the warm-up workload.
DOCTEST_MODULES = (
    "fastpriv.release", "fastpriv.counts", "fastpriv.streaming", "fastpriv.classic",
    "fastpriv.ck_safety", "fastpriv.skyline", "fastpriv.robustness", "fastpriv.foreground",
    "fastpriv.knowledge", "fastpriv.predicates", "fastpriv.hierarchies", "fastpriv.metrics",
    "fastpriv.anonymize._anatomy", "fastpriv.anonymize._mondrian", "fastpriv.anonymize.lattice",
    "fastpriv.anonymize.skyline", "fastpriv.anonymize._art",
)

#: The model (``--models`` name) each doctest module belongs to.
DOCTEST_MODEL = {
    "fastpriv.release": "counting", "fastpriv.counts": "counting",
    "fastpriv.streaming": "counting", "fastpriv.classic": "classic",
    "fastpriv.ck_safety": "ck_safety", "fastpriv.skyline": "skyline",
    "fastpriv.robustness": "robustness", "fastpriv.foreground": "foreground",
    "fastpriv.knowledge": "robustness", "fastpriv.predicates": "anonymize",
    "fastpriv.hierarchies": "anonymize", "fastpriv.metrics": "metrics",
    "fastpriv.anonymize._anatomy": "anonymize", "fastpriv.anonymize._mondrian": "anonymize",
    "fastpriv.anonymize.lattice": "anonymize", "fastpriv.anonymize.skyline": "anonymize",
    "fastpriv.anonymize._art": "art",
}

#: Every model name ``--models`` accepts.
MODELS = ("anonymize", "art", "ck_safety", "classic", "counting", "foreground", "metrics",
          "robustness", "skyline")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``warmup`` sub-command."""
    from ._common import epilog

    p = sub.add_parser(
        "warmup", help="compile every kernel into the on-disk JIT cache (run before "
                       "fanning out workers)",
        description="Run a tiny workload through every installed model so that every Numba "
                    "kernel is compiled and stored in the on-disk cache. Run it once after "
                    "installing, and before starting parallel workers: concurrent first "
                    "compiles race on the cache. The cache lives in FASTPRIV_CACHE_DIR "
                    "(default the user cache dir), keyed on the kernels' source, so it can "
                    "be built in a Docker layer or shared by cluster workers; "
                    "FASTPRIV_NO_CACHE=1 disables it.",
        epilog=epilog("fastpriv warmup --models classic"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", choices=MODELS, metavar="MODEL",
                   help="warm only these models' kernels (default: all): "
                        + ", ".join(MODELS))
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
def _doctests(module_name: str) -> tuple[int, int]:
    """Run a module's docstring examples silently; returns (attempted, failed)."""
    import doctest
    import importlib

    mod = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(mod, module_name, globs=dict(vars(mod))):
        runner.run(test, out=lambda _s: None)
    return runner.tries, runner.failures


def _streaming_paths() -> None:
    """Reach the counting paths small inputs do not reach.

    Sparse state, hash maps, several keys, strings, floats, parallel variants (with the
    exact argument types of production).
    """
    import numpy as np
    import pyarrow as pa

    from .._kernels import counting as K
    from .._threads import pool_size
    from .._validation import kernel_array
    from ..counts import CountAccumulator, merge
    from ..datasets import synthetic
    from ..release import Release

    t = synthetic(4000, group_size=8, n_values=6, seed=0)
    t = t.append_column("label", pa.array([f"g{i // 8:05d}" for i in range(t.num_rows)]))
    t = t.append_column("x", pa.array(np.arange(t.num_rows, dtype=np.float64) % 7))
    t = t.append_column("big", pa.array(np.arange(t.num_rows, dtype=np.int64) * (1 << 40)))
    jobs = (1, 2) if pool_size() > 1 else (1,)
    for nj in jobs:
        for keys in (["group"], ["label"], ["group", "label"], ["x"], ["big"]):
            for dense in (1 << 25, 0):
                a = CountAccumulator(keys, "sensitive", n_jobs=nj, dense_cells=dense)
                for b in t.to_batches(max_chunksize=1000):
                    a.add(b)
                merge([a, a]).to_release()
        Release.from_batches(t.to_batches(max_chunksize=1000), sensitive="sensitive",
                             group="group", n_jobs=nj)
    # a table large enough to be streamed: mixed-radix keys of two columns, and a string
    # column with many distinct values (the bucketed string map)
    import pyarrow.compute as pc

    wide = synthetic(1 << 20, group_size=8, n_values=6, seed=2)
    wide = wide.append_column("label", pc.binary_join_element_wise(
        "g", pa.array(np.arange(wide.num_rows) // 8).cast(pa.string()), ""))
    Release.from_table(wide, sensitive="sensitive", qi=["group", "label"])
    # parallel kernels whose production thresholds a tiny input never reaches
    g = kernel_array(np.repeat(np.arange(100, dtype=np.int32), 5), np.int32)
    v = kernel_array(np.tile(np.arange(5, dtype=np.int32), 100), np.int32)
    w = kernel_array(np.empty(0, dtype=np.int64), np.int64)
    mat = np.zeros(100 * 8, dtype=np.int32)
    K.dense_add_parallel(g, v, np.zeros(100 * 8, dtype=np.uint8), mat, 8, 0, 99, 2)
    K.dense_add_partitioned(g, v, kernel_array(np.arange(5, dtype=np.int32), np.int32),
                            np.zeros(100 * 8, dtype=np.uint8), mat, 8, 4)
    K.dense_profiles_parallel(np.zeros(100 * 8, dtype=np.uint8), mat,
                              np.zeros(0, dtype=np.int64), 8,
                              kernel_array(np.arange(100), np.int64),
                              kernel_array(np.arange(5), np.int32), 5, 2)
    K.count_pairs_parallel(g, v, w, 100, 5, int(K.DENSE_CELLS), 2)


def _large_input_kernels(rel) -> None:
    """Call the multi-threaded model kernels that only large releases reach.

    classic.audit from 65,536 groups, the skyline scan from 4096 records; called with
    production's types.
    """
    import numpy as np

    from .. import classic, skyline
    from .._kernels import classic as KC
    from .._kernels import skyline as KS

    KC.audit_worst(*classic._arrays(rel), classic._global_distribution(rel),
                   classic._order_rank(rel, None), 2, [True] * 6, 2)
    common = skyline._sigma_scan_args(rel)
    rec = skyline._records(rel, common, 0, (1,), 1, 1)
    ptr = rel.value_index[0]
    ells = np.array([0, 1], dtype=np.int64)
    ells.flags.writeable = False
    KS.records_union(*common, int(ptr[0]), int(ptr[1]), skyline._CASE_ID[rel.case], ells,
                     *skyline._cross_class_guard(1, 1))
    for n_pts in (1, KS.GROUP_MAJOR_POINTS):
        lkm = np.ones((3, n_pts), dtype=np.int64)
        lkm.flags.writeable = False
        KS.check_sigma_parallel(*common, rec, 0, rec.size, skyline._CASE_ID[rel.case], *lkm,
                                2)


def _model_paths() -> None:
    """Call model entry points with options the doctests leave out.

    Parallel scans, exact, negations, batched posteriors.
    """
    from .. import ck_safety, classic, skyline
    from ..datasets import synthetic
    from ..release import Release

    rel = Release.from_table(synthetic(3000, group_size=10, n_values=6, seed=1),
                             sensitive="sensitive", group="group")
    classic.audit(rel, l=2)
    ck_safety.audit(rel, k=4)
    ck_safety.is_safe(rel, c=0.9, k=3)
    ck_safety.max_safe_k(rel, c=0.9)
    pts = {"*": [(ell, k, m, 0.9) for ell in range(2) for k in range(3) for m in range(2)]}
    for par in (False, True):
        for method in ("direct", "classes"):
            skyline.check(rel, skylines=pts, parallel=par, method=method)
    skyline.knowledge_skyline(rel, sigma=rel.values[0], c=0.9)
    skyline.dp_breach_probability(rel, sigma=rel.values[0], l=1, k=2, m=1)
    _large_input_kernels(rel)
    tables = skyline.prepare(rel, sigma=rel.values[0])
    for name in ("breach_probability", "dp_min_nr", "statistics"):
        if hasattr(tables, name):
            getattr(tables, name)(1, 2, 1)
    # several QI columns (from_table's key combination) and (c,k) pruning (many profiles)
    qi = synthetic(4000, qi_cardinalities=[5, 4], n_values=5, seed=2)
    classic.audit(Release.from_table(qi, sensitive="sensitive", qi=["q0", "q1"]))
    wide = Release.from_table(synthetic(1_200_000, group_size=200, n_values=20, seed=3),
                              sensitive="sensitive", group="group")
    ck_safety.audit(wide, k=12)
    for case in ("mvpi-set", "mvpi-multiset"):
        m = Release.from_groups([(3, {"a": 1, "b": 2}), (2, {"a": 1})], case=case)
        skyline.check(m, skylines={"a": [(1, 1, 1, 0.9)]})
        skyline.knowledge_skyline(m, sigma="a", c=0.9)


def _robustness_paths() -> None:
    """Batched binary and multi-valued posteriors through ``robustness.audit``."""
    import numpy as np
    import pyarrow as pa

    from .. import robustness
    from ..knowledge import Knowledge

    f = np.array([0.5, 0.2, 0.7, 0.1, 0.4, 0.6])
    robustness.posterior_batch(f, [0, 3, 6], [1, 2])
    robustness.posterior(list(f), 2)
    sigs = [f"s{j % 3}" for j in range(12)]
    table = pa.table({"sig": sigs, "g": [j // 4 for j in range(12)],
                      "s": ["x", "y", "x", "z"] * 3})
    know = Knowledge.from_dict({"sig": {f"s{j}": {"x": 0.2 + 0.2 * j, "y": 0.1, "z": 0.3}
                                        for j in range(3)}}, fallback=0.0)
    for model in ("binary", "multivalued"):
        robustness.audit(table, group="g", sensitive="s", r=2.0, knowledge=know, model=model)


def _foreground_paths() -> None:
    """Mining and attack (batched EM/Newton solvers) on a small joined table."""
    import numpy as np
    import pyarrow as pa

    from .. import foreground

    rng = np.random.default_rng(0)
    n = 60
    table = pa.table({"q0": rng.integers(0, 3, n), "q1": rng.integers(0, 2, n),
                      "gid": np.repeat(np.arange(n // 4), 4),
                      "s": rng.choice(list("abcd"), n)})
    foreground.attack(table, qi=["q0", "q1"], sensitive="s", group="gid", r=2.0,
                      min_support=3, n_random=1, original=table)


# ============================================================================ command
def _kernel_stats() -> dict:
    import importlib
    import pkgutil

    import fastpriv._kernels as pkg

    from .._jit import KERNELS

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"fastpriv._kernels.{info.name}")
    import inspect
    import re

    sources = {}
    for d in KERNELS:
        try:
            sources[id(d)] = inspect.getsource(d.py_func)
        except (OSError, TypeError):  # pragma: no cover
            sources[id(d)] = ""
    rows = []
    for d in KERNELS:
        name = d.py_func.__name__
        pat = re.compile(rf"\b{re.escape(name)}\(")
        helper = any(pat.search(src) for k, src in sources.items() if k != id(d))
        hits = sum(d.stats.cache_hits.values())
        misses = sum(d.stats.cache_misses.values())
        rows.append({"kernel": f"{d.py_func.__module__}.{name}", "helper": helper,
                     "signatures": len(d.signatures), "cache_hits": int(hits),
                     "cache_misses": int(misses)})
    return {"kernels": rows}


def warm(models: list[str] | tuple[str, ...] | None = None) -> dict:
    """Run the warm-up workload (of ``models``, default all) and report on every kernel.

    Returns the JSON payload of ``fastpriv warmup --json``: ``seconds``, ``cache_enabled``,
    ``cache_dir``, ``compiled`` (kernels compiled now), ``loaded`` (from the cache),
    ``helpers``, ``not_reached``, ``workloads`` and the per-kernel rows. Used by the command
    and by :func:`fastpriv.distributed.warm_workers`.
    """
    import time

    from .._cache import cache_root
    from .._jit import CACHE_ENABLED

    wanted = set(MODELS if not models else models)
    unknown = wanted - set(MODELS)
    if unknown:
        from ..errors import InputError

        raise InputError(f"models: unknown {sorted(unknown)}; expected some of {list(MODELS)}")
    t0 = time.perf_counter()
    workloads: list[tuple[str, str, str]] = []

    def attempt(name: str, fn, *a) -> None:
        t = time.perf_counter()
        try:
            out = fn(*a)
            status = "ok" if not out or out[1] == 0 else f"{out[1]} of {out[0]} examples failed"
        except ImportError as exc:
            status = f"not installed ({exc})"
        except Exception as exc:  # a failing workload must not stop the warm-up
            status = f"failed: {type(exc).__name__}: {exc}"
        workloads.append((name, status, f"{time.perf_counter() - t:.1f} s"))

    for name, fn, owners in (("streaming and counting paths", _streaming_paths, {"counting"}),
                             ("model entry points", _model_paths,
                              {"classic", "ck_safety", "skyline"}),
                             ("r-robustness audits", _robustness_paths, {"robustness"}),
                             ("foreground mining and attack", _foreground_paths,
                              {"foreground"})):
        if owners & wanted:
            attempt(name, fn)
    for mod in DOCTEST_MODULES:
        if not models or DOCTEST_MODEL.get(mod) in wanted:
            attempt(f"examples of {mod}", _doctests, mod)
    stats = _kernel_stats()
    rows = stats["kernels"]
    compiled = sum(1 for r in rows if r["cache_misses"])
    loaded = sum(1 for r in rows if r["cache_hits"] and not r["cache_misses"])
    helpers = sum(1 for r in rows if not r["signatures"] and r["helper"])
    missed = [r["kernel"] for r in rows if not r["signatures"] and not r["helper"]]
    return {"seconds": time.perf_counter() - t0, "cache_enabled": CACHE_ENABLED,
            "cache_dir": str(cache_root()) if CACHE_ENABLED else None,
            "models": sorted(wanted), "n_kernels": len(rows), "compiled": compiled,
            "loaded": loaded, "helpers": helpers, "not_reached": missed,
            "workloads": [{"name": n, "status": st, "time": t} for n, st, t in workloads],
            **stats}


#: Relative cold compile cost of each model's own workload (``bench_cold_start`` profile),
#: used to balance ``--jobs``; the possible-worlds kernels are shared by art, robustness
#: and foreground, which therefore go to one process when they can.
MODEL_COST = {"foreground": 12.0, "robustness": 9.0, "art": 7.0, "skyline": 7.0,
              "anonymize": 9.0, "counting": 6.0, "ck_safety": 3.5, "classic": 1.0,
              "metrics": 0.5}
_SHARED = ("foreground", "robustness", "art")


def split_models(models: list[str] | tuple[str, ...], jobs: int) -> list[list[str]]:
    """Split ``models`` into at most ``jobs`` groups of about equal compile cost.

    The models sharing the possible-worlds kernels stay together (they would compile them
    once per group otherwise); the rest are dealt largest first to the cheapest group.

    >>> split_models(MODELS, 2)
    [['art', 'foreground', 'robustness'], ['anonymize', 'ck_safety', 'classic', 'counting', \
'metrics', 'skyline']]
    """
    jobs = max(1, min(int(jobs), len(models)))
    units: list[list[str]] = []
    shared = [m for m in _SHARED if m in models]
    if shared and jobs > 1:
        units.append(shared)
    units += [[m] for m in models if m not in units[0]] if units else [[m] for m in models]
    groups: list[list[str]] = [[] for _ in range(jobs)]
    cost = [0.0] * jobs
    for unit in sorted(units, key=lambda u: -sum(MODEL_COST.get(m, 1.0) for m in u)):
        i = cost.index(min(cost))
        groups[i] += unit
        cost[i] += sum(MODEL_COST.get(m, 1.0) for m in unit)
    return [sorted(g) for g in groups if g]


def warm_parallel(models: list[str] | tuple[str, ...] | None, jobs: int) -> dict:
    """:func:`warm` in ``jobs`` worker processes sharing the cache directory; merged report.

    Each worker runs ``fastpriv warmup --models <group>`` (see :func:`split_models`).
    Numba writes each cache entry atomically (a temporary file renamed into place), so
    workers compiling different kernels — or the same shared kernel — do not corrupt the
    cache; a kernel two groups share is compiled by both.
    """
    import json
    import os
    import subprocess
    import sys
    import tempfile
    import time

    t0 = time.perf_counter()
    groups = split_models(sorted(set(models or MODELS)), jobs)
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for i, group in enumerate(groups):
            out = os.path.join(tmp, f"warm{i}.json")
            cmd = [sys.executable, "-m", "fastpriv", "warmup", "--models", *group,
                   "--json", out]
            procs.append((out, subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE, text=True)))
        payloads = []
        for out, proc in procs:
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"warm-up worker failed ({proc.returncode}): {err[-400:]}")
            with open(out) as fh:
                payloads.append(json.load(fh))
    return _merge(payloads, time.perf_counter() - t0, groups)


def _merge(payloads: list[dict], seconds: float, groups: list[list[str]]) -> dict:
    """One report from the workers' reports (a kernel compiled by any worker counts once)."""
    rows: dict[str, dict] = {}
    for pl in payloads:
        for r in pl["kernels"]:
            acc = rows.setdefault(r["kernel"], dict(r, cache_hits=0, cache_misses=0,
                                                    signatures=0))
            acc["cache_hits"] += r["cache_hits"]
            acc["cache_misses"] += r["cache_misses"]
            acc["signatures"] = max(acc["signatures"], r["signatures"])
    kernels = list(rows.values())
    first = payloads[0]
    return {"seconds": seconds, "cache_enabled": first["cache_enabled"],
            "cache_dir": first["cache_dir"],
            "models": sorted(m for pl in payloads for m in pl["models"]),
            "jobs": len(payloads), "groups": groups, "n_kernels": len(kernels),
            "compiled": sum(1 for r in kernels if r["cache_misses"]),
            "loaded": sum(1 for r in kernels if r["cache_hits"] and not r["cache_misses"]),
            "helpers": sum(1 for r in kernels if not r["signatures"] and r["helper"]),
            "not_reached": [r["kernel"] for r in kernels
                            if not r["signatures"] and not r["helper"]],
            "workloads": [w for pl in payloads for w in pl["workloads"]], "kernels": kernels}


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
        import sys

        from .._io import write_json

        dest = write_json(args.json, payload, overwrite=args.overwrite, inputs=[])
        print(f"wrote {dest}", file=sys.stderr)
    return 0
