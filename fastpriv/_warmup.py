"""The warm-up workload: compile every kernel into Numba's on-disk cache, ahead of time.

The engine behind ``fastpriv warmup`` (:mod:`fastpriv.cli.warmup`) and
:func:`fastpriv.distributed.warm_workers`. Each warm-up group (:data:`MODELS`, the names of
``fastpriv warmup --models``, declared in :mod:`fastpriv.registry`) runs its documented
examples (:data:`DOCTEST_MODEL`) and its own workload (:data:`WORKLOADS`): the calls that
reach the code paths the examples do not. :func:`warm` reports the kernels compiled now,
loaded from the cache and not reached.
"""

from __future__ import annotations

from .registry import MODELS as REGISTRY_MODELS
from .registry import WARMUP_GROUPS, load

#: Public modules whose documented examples form the warm-up workload.
DOCTEST_MODULES = (
    "fastpriv.release", "fastpriv.counts", "fastpriv.streaming", "fastpriv.classic",
    "fastpriv.ck_safety", "fastpriv.skyline", "fastpriv.robustness", "fastpriv.foreground",
    "fastpriv.knowledge", "fastpriv.predicates", "fastpriv.hierarchies", "fastpriv.metrics",
    "fastpriv.anonymize._anatomy", "fastpriv.anonymize._mondrian", "fastpriv.anonymize.lattice",
    "fastpriv.anonymize.skyline", "fastpriv.anonymize._art", "fastpriv.frontier",
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
    "fastpriv.anonymize._art": "art", "fastpriv.frontier": "anonymize",
}

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


def _small_release():
    """Return a small grouped release (3000 rows, groups of 10, 6 values) to audit."""
    from .datasets import synthetic
    from .release import Release

    return Release.from_table(synthetic(3000, group_size=10, n_values=6, seed=1),
                              sensitive="sensitive", group="group")


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


def _classic_workload() -> None:
    """Run ``classic.audit`` and every per-group measure of ``classic.per_group``.

    The multi-threaded scan that large releases take is called directly.
    """
    from . import classic
    from ._kernels import classic as KC

    rel = _small_release()
    classic.audit(rel, l=2)
    # the multi-threaded scan that releases of 65,536 groups and more take
    KC.audit_worst(*classic._arrays(rel), classic._global_distribution(rel),
                   classic._order_rank(rel, None), 2, [True] * 6, 2)
    for model in classic.MODELS:
        classic.per_group(rel, model, l=2)
    classic.per_group(rel, "t_closeness", ordered=True)


def _ck_safety_workload() -> None:
    """(c,k)-safety's entry points, and its pruning (a release with many profiles)."""
    from . import ck_safety
    from .datasets import synthetic
    from .release import Release

    rel = _small_release()
    ck_safety.audit(rel, k=4)
    ck_safety.is_safe(rel, c=0.9, k=3)
    ck_safety.max_safe_k(rel, c=0.9)
    wide = Release.from_table(synthetic(1_200_000, group_size=200, n_values=20, seed=3),
                              sensitive="sensitive", group="group")
    ck_safety.audit(wide, k=12)


def _skyline_workload() -> None:
    """Check skylines every way: direct and by classes, serial and parallel.

    Also the scans of large releases, the knowledge skyline, the DP, prepared tables and
    MVPI releases.
    """
    import numpy as np

    from . import skyline
    from ._kernels import skyline as KS
    from .release import Release

    rel = _small_release()
    pts = {"*": [(ell, k, m, 0.9) for ell in range(2) for k in range(3) for m in range(2)]}
    for par in (False, True):
        for method in ("direct", "classes"):
            skyline.check(rel, skylines=pts, parallel=par, method=method)
    skyline.knowledge_skyline(rel, sigma=rel.values[0], c=0.9)
    skyline.dp_breach_probability(rel, sigma=rel.values[0], l=1, k=2, m=1)
    # the multi-threaded scans that releases of 4096 records and more take
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
    tables = skyline.prepare(rel, sigma=rel.values[0])
    for name in ("breach_probability", "dp_min_nr", "statistics"):
        if hasattr(tables, name):
            getattr(tables, name)(1, 2, 1)
    for case in ("mvpi-set", "mvpi-multiset"):
        m = Release.from_groups([(3, {"a": 1, "b": 2}), (2, {"a": 1})], case=case)
        skyline.check(m, skylines={"a": [(1, 1, 1, 0.9)]})
        skyline.knowledge_skyline(m, sigma="a", c=0.9)


def _robustness_workload() -> None:
    """Compute posteriors: batched ones through ``robustness.audit``, single groups too.

    Binary and multi-valued models; one group's posterior by ESP and by enumeration.
    """
    import numpy as np
    import pyarrow as pa

    from . import robustness
    from .knowledge import Knowledge

    f = np.array([0.5, 0.2, 0.7, 0.1, 0.4, 0.6])
    robustness.posterior_batch(f, [0, 3, 6], [1, 2])
    for method in ("esp", "enumerate"):
        robustness.posterior(list(f), 2, method=method)
    robustness.posterior_multivalued([{"x": 0.5, "y": 0.3}, {"x": 0.2, "y": 0.7},
                                      {"x": 0.4, "y": 0.1}], ["x", "y", "x"],
                                     method="enumerate")
    sigs = [f"s{j % 3}" for j in range(12)]
    table = pa.table({"sig": sigs, "g": [j // 4 for j in range(12)],
                      "s": ["x", "y", "x", "z"] * 3})
    know = Knowledge.from_dict({"sig": {f"s{j}": {"x": 0.2 + 0.2 * j, "y": 0.1, "z": 0.3}
                                        for j in range(3)}}, fallback=0.0)
    for model in ("binary", "multivalued"):
        robustness.audit(table, group="g", sensitive="s", r=2.0, knowledge=know, model=model)


def _foreground_workload() -> None:
    """Mining and attack (batched EM/Newton solvers) on a small joined table."""
    import numpy as np
    import pyarrow as pa

    from . import foreground

    rng = np.random.default_rng(0)
    n = 60
    table = pa.table({"q0": rng.integers(0, 3, n), "q1": rng.integers(0, 2, n),
                      "gid": np.repeat(np.arange(n // 4), 4),
                      "s": rng.choice(list("abcd"), n)})
    foreground.attack(table, qi=["q0", "q1"], sensitive="s", group="gid", r=2.0,
                      min_support=3, n_random=1, original=table)


def _risk_workload() -> None:
    """Measure re-identification risk every way the risk audit and the report do.

    Class counts, the population-uniqueness models and individual risk (a population
    size; a sample with uniques, which the models are fitted to), a population table, and
    the risk of QI combinations (SUDA2).
    """
    from . import risk
    from .datasets import synthetic

    qi = ["q0", "q1", "q2"]
    t = synthetic(3000, qi_cardinalities=[6, 5, 4], n_values=5, seed=4)
    risk.audit(t, qi=qi)
    risk.audit(t, qi=qi, population=1_000_000)
    risk.audit(synthetic(200, qi_cardinalities=[6, 5, 4], n_values=5, seed=5), qi=qi,
               population=1_000_000)
    risk.audit(t.slice(0, 1000), qi=qi, population=t)
    risk.combinations(t, qi=qi, max_set_size=2)


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


#: Each model's own workload (beyond its documented examples, :data:`DOCTEST_MODEL`): the
#: calls that reach the code paths the examples do not (options, large-input and parallel
#: variants). ``fastpriv warmup --models X`` runs X's workload and X's examples only.
WORKLOADS = {
    "counting": _counting_workload,
    "classic": _classic_workload,
    "ck_safety": _ck_safety_workload,
    "skyline": _skyline_workload,
    "robustness": _robustness_workload,
    "foreground": _foreground_workload,
    "risk": _risk_workload,
    "anonymize": _anonymize_workload,
    "metrics": _metrics_workload,
}


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

    for model in MODELS:
        if model in wanted and model in WORKLOADS:
            attempt(f"{model} paths", WORKLOADS[model])
    for m in REGISTRY_MODELS:          # the workloads the registry's models declare
        if m.warmup in wanted and m.warmup_workload is not None:
            attempt(f"{m.name} paths", load(m.warmup_workload))
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
              "anonymize": 9.0, "counting": 6.0, "ck_safety": 3.5, "risk": 2.0, "classic": 1.0,
              "metrics": 0.5}
_SHARED = ("foreground", "robustness", "art")


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
