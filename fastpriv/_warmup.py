"""The warm-up workload: compile every kernel into Numba's on-disk cache, ahead of time.

The engine behind ``fastpriv warmup`` (:mod:`fastpriv.cli.warmup`) and
:func:`fastpriv.distributed.warm_workers`. Each warm-up group (:data:`MODELS`, the names of
``fastpriv warmup --models``, declared in :mod:`fastpriv.registry`) runs its documented
examples (:data:`DOCTEST_MODEL`) and its own workloads (:data:`WORKLOADS`): the calls that
reach the code paths the examples do not. The models' workloads, their compile cost and
their example modules are declared by the registry (``warmup_workload``, ``warmup_cost``,
``warmup_examples``); this module keeps those of the counting and the anonymizers (groups,
not models). :func:`warm` reports the kernels compiled now, loaded from the cache and not
reached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .registry import MODELS as REGISTRY_MODELS
from .registry import WARMUP_GROUPS, load, module_of

#: Public modules whose documented examples form the warm-up workload.
DOCTEST_MODULES = (
    "fastpriv.release", "fastpriv.counts", "fastpriv.streaming", "fastpriv.classic",
    "fastpriv.ck_safety", "fastpriv.skyline", "fastpriv.robustness", "fastpriv.foreground",
    "fastpriv.knowledge", "fastpriv.predicates", "fastpriv.hierarchies", "fastpriv.metrics",
    "fastpriv.anonymize._anatomy", "fastpriv.anonymize._mondrian", "fastpriv.anonymize.lattice",
    "fastpriv.anonymize.skyline", "fastpriv.anonymize._art", "fastpriv.frontier",
)

#: The warm-up group of the doctest modules that belong to no model (counting, anonymizers).
_OWN_DOCTEST_GROUP = {
    "fastpriv.release": "counting", "fastpriv.counts": "counting",
    "fastpriv.streaming": "counting", "fastpriv.predicates": "anonymize",
    "fastpriv.hierarchies": "anonymize", "fastpriv.metrics": "metrics",
    "fastpriv.anonymize._anatomy": "anonymize", "fastpriv.anonymize._mondrian": "anonymize",
    "fastpriv.anonymize.lattice": "anonymize", "fastpriv.anonymize.skyline": "anonymize",
    "fastpriv.anonymize._art": "art", "fastpriv.frontier": "anonymize",
}


def _doctest_groups() -> dict[str, str]:
    """Return ``{module: warm-up group}``: each model's ``call`` module and ``warmup_examples``."""
    out: dict[str, str] = {}
    for m in REGISTRY_MODELS:
        for mod in (module_of(m.call), *m.warmup_examples):
            out.setdefault(mod, m.warmup)
    return {**out, **_OWN_DOCTEST_GROUP}


#: The model (``--models`` name) each doctest module belongs to.
DOCTEST_MODEL = {mod: _doctest_groups()[mod] for mod in DOCTEST_MODULES}

#: Every model name ``--models`` accepts (the registry's warm-up groups).
MODELS = WARMUP_GROUPS


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


def _counting_workload() -> None:
    """Reach the counting paths small inputs do not reach.

    Sparse state, hash maps, several keys, strings, floats, parallel variants (with the
    exact argument types of production).
    """
    import numpy as np
    import pyarrow as pa

    from ._kernels import counting as K
    from ._threads import pool_size
    from ._validation import kernel_array
    from .counts import CountAccumulator, merge
    from .datasets import synthetic
    from .release import Release

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
    # a table large enough to be streamed: mixed-radix keys of two columns (131,072 labels
    # in runs of 8 rows: a first batch of few new strings, the plain string map)
    import pyarrow.compute as pc

    wide = synthetic(1 << 20, group_size=8, n_values=6, seed=2)
    wide = wide.append_column("label", pc.binary_join_element_wise(
        "g", pa.array(np.arange(wide.num_rows) // 8).cast(pa.string()), ""))
    Release.from_table(wide, sensitive="sensitive", qi=["group", "label"])
    # several QI columns (from_table's key combination)
    qi = synthetic(4000, qi_cardinalities=[5, 4], n_values=5, seed=2)
    Release.from_table(qi, sensitive="sensitive", qi=["q0", "q1"])
    _streamed_file_workload()
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
    for dense_cells in (int(K.DENSE_CELLS), 0):   # dense, and bucketed by group
        K.count_pairs_parallel(g, v, w, 100, 5, dense_cells, 2)


def _streamed_file_workload() -> None:
    """Stream a small Parquet file (a path is streamed whatever its size) two ways.

    Two small key columns (an int and a string, as Adult's ``age`` and ``sex``): mixed-radix
    keys in a direct table, whose groups are read in label order off the table. A string
    key of 65,536 random ids with 200 sensitive values: a batch of mostly new strings takes
    the bucketed string map, and more groups × values than the dense state holds restarts
    the scan keeping the row codes.
    """
    import os
    import tempfile

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .release import Release

    rng = np.random.default_rng(3)
    n = 1 << 16
    table = pa.table({"id": pa.array(rng.integers(0, 1 << 40, n)).cast(pa.string()),
                      "age": rng.integers(17, 91, n), "sex": rng.choice(["F", "M"], n),
                      "s": pa.array(rng.integers(0, 200, n)).cast(pa.string())})
    with tempfile.TemporaryDirectory(prefix="fastpriv-warmup-") as tmp:
        path = os.path.join(tmp, "rows.parquet")
        pq.write_table(table, path)
        Release.from_table(path, sensitive="s", qi=["age", "sex"])
        Release.from_table(path, sensitive="s", group="id")


def _anonymize_workload() -> None:
    """Apply a hierarchy to codes, and search a lattice scored by ARX's loss.

    The loss (and non-monotonic entropy) of a node whose failing classes are suppressed
    is scored from the classes' generalized codes.
    """
    from .anonymize.lattice import GeneralizationLattice
    from .datasets import load_adult
    from .hierarchies import Hierarchy
    from .predicates import KAnonymity

    adult = load_adult()
    age = Hierarchy.intervals(range(0, 120), [5, 10, 20, 40, "*"], name="age")
    bound = age.bind(adult.column("age"))
    bound.generalize(bound.codes, 1)
    lat = GeneralizationLattice(adult, ["age", "marital_status", "sex"], "occupation")
    lat.search(KAnonymity(5), utility="loss", suppression=0.05)


def _metrics_workload() -> None:
    """Compute the average Δ: the spread of an adversary's probabilities within groups."""
    import numpy as np

    from . import metrics

    metrics.average_delta(np.array([0.1, 0.5, 0.9, 0.3]), np.array([0, 0, 1, 1]))


def _declared(path: str) -> Callable[[], Any]:
    """Return a registry-declared workload imported when it runs (``--help`` imports none)."""
    def run() -> Any:
        return load(path)()

    run.__qualname__ = run.__name__ = path
    return run


def _declared_workloads() -> dict[str, tuple[str, Callable[[], Any]]]:
    """Return ``{name: (group, workload)}`` of the models' ``warmup_workload``.

    A workload is named after its module (``fastpriv.classic:warmup``: ``classic``); one
    declared by several models runs once.
    """
    out: dict[str, tuple[str, Callable[[], Any]]] = {}
    for m in REGISTRY_MODELS:
        if m.warmup_workload is not None:
            name = module_of(m.warmup_workload).rpartition(".")[2]
            out.setdefault(name, (m.warmup, _declared(m.warmup_workload)))
    return out


#: The workloads of the warm-up groups that are not models (counting, anonymizers).
_OWN_WORKLOADS = {"counting": _counting_workload, "anonymize": _anonymize_workload,
                  "metrics": _metrics_workload}

#: Each workload's warm-up group (an own workload's is its name).
WORKLOAD_GROUP = {**{n: n for n in _OWN_WORKLOADS},
                  **{n: g for n, (g, _) in _declared_workloads().items()}}

#: Every workload by name (beyond the documented examples, :data:`DOCTEST_MODEL`): the
#: calls that reach the code paths the examples do not (options, large-input and parallel
#: variants): the models' declared ones and the counting's and anonymizers' own.
#: ``fastpriv warmup --models X`` runs the workloads of group X (:data:`WORKLOAD_GROUP`)
#: and X's examples only.
WORKLOADS: dict[str, Callable[[], Any]] = {
    **_OWN_WORKLOADS, **{n: fn for n, (_, fn) in _declared_workloads().items()}}


# ============================================================================ command
def _kernel_stats() -> dict:
    import importlib
    import pkgutil

    import fastpriv._kernels as pkg

    from ._jit import KERNELS

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"fastpriv._kernels.{info.name}")
    import inspect
    import re

    call = re.compile(r"\b(\w+)\(")
    callers: dict[str, int] = {}    # name -> how many kernels' sources call it
    for d in KERNELS:
        try:
            src = inspect.getsource(d.py_func)
        except (OSError, TypeError):  # pragma: no cover
            src = ""
        called = set(call.findall(src)) - {d.py_func.__name__}
        for name in called:
            callers[name] = callers.get(name, 0) + 1
    rows = []
    for d in KERNELS:
        name = d.py_func.__name__
        helper = callers.get(name, 0) > 0     # called by another kernel: linked into it
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

    from ._cache import cache_root
    from ._jit import CACHE_ENABLED

    wanted = set(MODELS if not models else models)
    unknown = wanted - set(MODELS)
    if unknown:
        from .errors import InputError

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

    for name, fn in sorted(WORKLOADS.items(), key=lambda w: WORKLOAD_GROUP.get(w[0], w[0])):
        if WORKLOAD_GROUP.get(name, name) in wanted:
            attempt(f"{name} paths", fn)
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


def _model_cost() -> dict[str, float]:
    """Return each warm-up group's cost: the groups' own, the models' declared ``warmup_cost``."""
    out = {"art": 7.0, "anonymize": 9.0, "counting": 6.0, "metrics": 0.5}
    for m in REGISTRY_MODELS:
        if m.warmup_cost:
            out[m.warmup] = out.get(m.warmup, 0.0) + m.warmup_cost
    return out


#: Relative cold compile cost of each group's own workload (``bench_cold_start`` profile),
#: used to balance ``--jobs``.
MODEL_COST = _model_cost()
#: The groups sharing the possible-worlds kernels (the ART anonymizer and the models whose
#: kernels include them), which therefore go to one process when they can.
_SHARED = tuple(sorted({"art"} | {m.warmup for m in REGISTRY_MODELS
                                  if "possible_worlds" in m.kernels}))


def split_models(models: list[str] | tuple[str, ...], jobs: int) -> list[list[str]]:
    """Split ``models`` into at most ``jobs`` groups of about equal compile cost.

    The models sharing the possible-worlds kernels stay together (they would compile them
    once per group otherwise); the rest are dealt largest first to the cheapest group.

    >>> split_models(MODELS, 2)
    [['art', 'foreground', 'metrics', 'robustness'], ['anonymize', 'ck_safety', 'classic', \
'counting', 'risk', 'skyline']]
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
