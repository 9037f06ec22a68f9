"""The folds on each engine against bringing every class or row to the driver.

Three workloads, each contestant in a fresh interpreter, run once untimed on a small copy
(imports, JIT, engine start), then timed on the data:

* ``k_map``: a population of ``n`` rows over two QI columns and a sample of its first
  quarter, as Parquet. ``<engine>_classes`` is ``population.k_map(class_counts(sample),
  population=class_counts(population))`` (every class of both tables to this process),
  ``<engine>_fold`` ``population.k_map(population_histogram(sample, population=...))`` (the
  classes joined and summarized where they live).
* ``robustness``: ``n`` rows with three QI columns, a group id (groups of about 10) and a
  sensitive value. ``<engine>_rows`` is ``robustness.audit(row_counts(data), weight=count)``
  (every distinct row to this process), ``<engine>_fold`` ``robustness_audit(data)`` (the
  knowledge from the cells, then the groups audited where they live; on Dask after a
  shuffle by group, ``partition_by_group=True``, as the files are not split by group).
* ``foreground``: ``n`` rows with three QI columns over a small domain (10 x 2 x 5 cells),
  a group id (groups of about 10) and a sensitive value, attacked for one value.
  ``<engine>_rows`` is ``ForegroundSummary.from_attack(foreground.attack(row_counts(data),
  weight=count))`` (every distinct row to this process), ``<engine>_fold``
  ``foreground_audit(data)`` (the mining planned from the cells, the systems packed where
  the groups live, merged and solved here, then the posteriors where the groups live; on
  Dask after a shuffle by group; on Spark and Dask the systems are solved on the
  executors).
* ``sampling_risk``: ``n`` rows over two QI columns (about n/2 classes) with a sampling
  weight (quarters from 1 to 100: every sum exact, so both paths agree to the bit).
  ``<engine>_classes`` is ``risk.audit(class_counts(data, sampling_weight=))`` (every
  class to this process), ``<engine>_fold`` ``risk.audit(class_histogram(data,
  sampling_weight=))`` (the classes summarized where they live).

The ``stream`` engine reads the Parquet files as record batches in one process; its folds
spill the stream into :data:`STREAM_SPLIT` files by a hash of the QI (``split_out=``).

Recorded: seconds, this (driver) process's peak resident memory (``VmHWM``), the JVM's
(Spark), the workers' (Dask, sampled), and the answer (equal for the paths of an engine).
Smoke mode (default) uses small sizes; ``--full`` (or ``FASTPRIV_BENCH=full``) 8M population
rows, 2M and 6M audited rows, 1M and 3M attacked rows and 8M survey rows (:data:`SIZES`), and writes
``benchmarks/results/folds.json`` (per workload, per number of rows, per contestant).

    python -m benchmarks.bench_folds --full
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import is_full, write_result

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
KMAP_QI = ["a", "b"]
ROB_QI = ["age", "sex", "zip"]
ROB = {"r": 3.0, "max_set_size": 2, "min_support": 50}
FG = {"r": 3.0, "max_set_size": 2, "min_support": 50, "sensitive_values": ["hiv"]}
#: workload -> its contestants (engine_how)
WORKLOADS = {
    "k_map": ["duckdb_classes", "duckdb_fold", "dask_classes", "dask_fold",
              "spark_classes", "spark_fold", "stream_classes", "stream_fold"],
    "robustness": ["duckdb_rows", "duckdb_fold", "dask_rows", "dask_fold", "spark_rows",
                   "spark_fold"],
    "foreground": ["duckdb_rows", "duckdb_fold", "dask_rows", "dask_fold", "spark_rows",
                   "spark_fold"],
    "sampling_risk": ["duckdb_classes", "duckdb_fold", "dask_classes", "dask_fold",
                      "spark_classes", "spark_fold", "stream_classes", "stream_fold"],
}


def _write_parts(folder: Path, table: Any, files: int) -> None:
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    step = -(-table.num_rows // files)
    for i in range(files):
        pq.write_table(table.slice(i * step, step), folder / f"part-{i}.parquet")


def _write(workload: str, folder: Path, n: int) -> None:
    """The workload's Parquet data (reused when its parameters match)."""
    import pyarrow as pa

    marker = folder / "_params.json"
    if marker.is_file() and json.loads(marker.read_text()) == {"workload": workload, "n": n}:
        return
    rng = np.random.default_rng(0)
    if workload == "k_map":       # ~n/2 population classes; the sample is the first quarter
        side = int(np.sqrt(n / 2))
        t = pa.table({"a": rng.integers(0, side, n), "b": rng.integers(0, side, n)})
        _write_parts(folder / "population", t, 4)
        _write_parts(folder / "sample", t.slice(0, n // 4), 2)
    elif workload == "sampling_risk":     # ~n/2 classes, sampling weights in quarters
        side = int(np.sqrt(n / 2))
        t = pa.table({"a": rng.integers(0, side, n), "b": rng.integers(0, side, n),
                      "sw": rng.integers(4, 401, n) / 4.0})
        _write_parts(folder / "data", t, 4)
    elif workload == "foreground":    # groups of ~10 rows, 10 x 2 x 5 QI cells, 5 values
        t = pa.table({"age": rng.integers(0, 10, n), "sex": rng.integers(0, 2, n),
                      "zip": rng.integers(0, 5, n), "gid": rng.integers(0, n // 10, n),
                      "disease": rng.choice(["flu", "cold", "hiv", "mumps", "none"], n)})
        _write_parts(folder / "data", t, 4)
    else:                         # groups of ~10 rows, 90 x 2 x 100 QI cells, 5 values
        t = pa.table({"age": rng.integers(0, 90, n), "sex": rng.integers(0, 2, n),
                      "zip": rng.integers(0, 100, n), "gid": rng.integers(0, n // 10, n),
                      "disease": rng.choice(["flu", "cold", "hiv", "mumps", "none"], n)})
        _write_parts(folder / "data", t, 4)
    marker.write_text(json.dumps({"workload": workload, "n": n}))


def _status_kib(pid: int | str, key: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


#: files a stream is spilled into by its folds (``split_out``)
STREAM_SPLIT = 16


def _engine(name: str) -> Any:
    """The module of an engine (``stream``: record batches read from the Parquet files)."""
    from fastpriv import distributed, pushdown, spark, stream_counts

    return {"duckdb": pushdown, "dask": distributed, "spark": spark,
            "stream": stream_counts}[name]


def _k_map(engine: str, how: str, folder: Path, ctx: dict) -> dict:
    """One k-map contestant on ``folder``: the value and its witness class."""
    from fastpriv import population

    sample, pop = str(folder / "sample"), str(folder / "population")
    if engine == "spark":
        sample, pop = ctx["spark"].read.parquet(sample), ctx["spark"].read.parquet(pop)
    mod = _engine(engine)
    spilled = {"split_out": STREAM_SPLIT} if engine == "stream" else {}
    if how == "fold":
        res = population.k_map(mod.population_histogram(sample, qi=KMAP_QI, population=pop,
                                                         **spilled))
    else:
        res = population.k_map(mod.class_counts(sample, qi=KMAP_QI),
                               population=mod.class_counts(pop, qi=KMAP_QI))
    d = res.to_dict()
    return {"value": d["value"], "witness": d["witness"]}


def _robustness(engine: str, how: str, folder: Path, ctx: dict) -> dict:
    """One r-robustness contestant on ``folder``: its summary's main numbers."""
    from fastpriv import robustness
    from fastpriv.robustness_fold import RobustnessSummary

    data = str(folder / "data")
    if engine == "spark":
        data = ctx["spark"].read.parquet(data)
    mod = _engine(engine)
    cols = {"qi": ROB_QI, "group": "gid", "sensitive": "disease"}
    if how == "fold" and engine == "dask":       # the files are not split by group
        import dask.dataframe as dd

        d = mod.robustness_audit(dd.read_parquet(data), partition_by_group=True, **cols,
                                 **ROB).to_dict()
    elif how == "fold":
        d = mod.robustness_audit(data, **cols, **ROB).to_dict()
    else:
        rows = mod.row_counts(data, **cols, count="n")
        res = robustness.audit(rows, **cols, weight="n", **ROB)
        d = RobustnessSummary.from_audit(res, rows, group=["gid"]).to_dict()
    return {k: d[k] for k in ("value", "witness", "n_problematic", "n_problematic_rows",
                              "groups", "n_groups")}


def _foreground(engine: str, how: str, folder: Path, ctx: dict) -> dict:
    """One foreground-attack contestant on ``folder``: its summary's main numbers."""
    from fastpriv import foreground
    from fastpriv.foreground_fold import ForegroundSummary

    data = str(folder / "data")
    if engine == "spark":
        data = ctx["spark"].read.parquet(data)
    mod = _engine(engine)
    cols = {"qi": ROB_QI, "group": "gid", "sensitive": "disease"}
    if how == "fold" and engine == "dask":       # the files are not split by group
        import dask.dataframe as dd

        s = mod.foreground_audit(dd.read_parquet(data), partition_by_group=True, **cols,
                                 **FG)
    elif how == "fold":
        s = mod.foreground_audit(data, **cols, **FG)
    else:
        rows = mod.row_counts(data, **cols, count="n")
        s = ForegroundSummary.from_attack(foreground.attack(rows, **cols, weight="n", **FG))
    d = s.to_dict()
    return {**{k: d[k] for k in ("value", "witness", "n_rows", "max_posterior", "worst")},
            "systems": [x["log_likelihood"] for x in d["mined"]["systems"]]}


def _sampling_risk(engine: str, how: str, folder: Path, ctx: dict) -> dict:
    """One contestant of risk with sampling weights on ``folder``: its measures."""
    from fastpriv import risk

    data = str(folder / "data")
    if engine == "spark":
        data = ctx["spark"].read.parquet(data)
    mod = _engine(engine)
    if how == "fold":
        spilled = {"split_out": STREAM_SPLIT} if engine == "stream" else {}
        summary = mod.class_histogram(data, qi=KMAP_QI, sampling_weight="sw", **spilled)
    else:
        summary = mod.class_counts(data, qi=KMAP_QI, sampling_weight="sw")
    d = risk.audit(summary).to_dict()
    return {k: d[k] for k in ("value", "witness", "journalist_avg", "marketer",
                              "individual_max", "individual_avg",
                              "expected_reidentifications", "individual_above_threshold")}


def _start(engine: str) -> dict:
    ctx: dict = {}
    if engine == "spark":
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        ctx["spark"] = (SparkSession.builder.master("local[2]").appName("fastpriv-folds")
                        .config("spark.ui.enabled", "false")
                        .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        ctx["spark"].sparkContext.setLogLevel("ERROR")
    if engine == "dask":
        from distributed import Client, LocalCluster

        ctx["cluster"] = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40)
        ctx["client"] = Client(ctx["cluster"])
    return ctx


def _stop(ctx: dict) -> None:
    if "client" in ctx:
        ctx["client"].close()
        ctx["cluster"].close()
    if "spark" in ctx:
        ctx["spark"].stop()


def _child(workload: str, name: str, folder: str, warm: str) -> dict:
    import psutil

    engine, how = name.split("_")
    run_one = {"k_map": _k_map, "robustness": _robustness, "foreground": _foreground,
               "sampling_risk": _sampling_risk}[workload]
    ctx = _start(engine)
    run_one(engine, how, Path(warm), ctx)
    me = psutil.Process()
    peak = {"workers": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            peak["workers"] = max(peak["workers"], sum(
                p.memory_info().rss for p in me.children(recursive=True)
                if p.name() != "java"))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    answer = run_one(engine, how, Path(folder), ctx)
    seconds = time.perf_counter() - t0
    stop.set()
    thread.join()
    jvm = [p for p in me.children(recursive=True) if p.name() == "java"]
    out = {"seconds": seconds, "driver_peak_mib": _status_kib("self", "VmHWM") / 1024,
           "jvm_peak_mib": _status_kib(jvm[0].pid, "VmHWM") / 1024 if jvm else None,
           "workers_peak_mib": peak["workers"] / MIB if engine == "dask" else None,
           "answer": answer}
    _stop(ctx)
    return out


#: rows of each workload (full, smoke); the driver's peak should not grow with them
SIZES = {"k_map": ([8_000_000], [200_000]),
         "robustness": ([2_000_000, 6_000_000], [50_000]),
         "foreground": ([1_000_000, 3_000_000], [50_000]),
         "sampling_risk": ([8_000_000], [200_000])}


def _runs(workload: str, n: int, root: Path, env: dict) -> dict:
    """Every contestant of ``workload`` on ``n`` rows; answers equal within an engine."""
    folder, warm = root / f"folds_{workload}_{n}", root / f"folds_{workload}_warm"
    _write(workload, folder, n)
    _write(workload, warm, 20_000)
    runs = {}
    for name in WORKLOADS[workload]:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_folds", "--child",
                               workload, name, str(folder), str(warm)], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        runs[name] = (json.loads(proc.stdout.strip().splitlines()[-1])
                      if proc.returncode == 0 else {"error": proc.stderr[-2000:]})
        print(workload, n, name, {k: v for k, v in runs[name].items() if k != "answer"},
              flush=True)
    for engine in {name.split("_")[0] for name in runs}:
        got = [r["answer"] for name, r in runs.items()
               if name.startswith(engine + "_") and "error" not in r]
        assert all(a == got[0] for a in got), f"{workload} on {engine}: answers differ"
    return runs


def run(full: bool, workloads: list[str]) -> dict:
    root = Path(os.environ.get("FASTPRIV_BENCH_DATA") or tempfile.gettempdir())
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return {w: {str(n): _runs(w, n, root, env) for n in SIZES[w][0 if full else 1]}
            for w in workloads}


def _write_result(out: dict, full: bool) -> Path:
    """Write the results; a run of some workloads keeps the others' recorded results."""
    from benchmarks._common import RESULTS

    path = (RESULTS if full else RESULTS / "smoke") / "folds.json"
    kept = {}
    if set(out) != set(WORKLOADS) and path.is_file():
        old = json.loads(path.read_text())
        kept = {w: old[w] for w in WORKLOADS if w in old and w not in out}
    return write_result("folds", {"command": "python -m benchmarks.bench_folds --full",
                                  **kept, **out}, full)


def bench_folds(benchmark, full):
    out = benchmark.pedantic(lambda: run(full, list(WORKLOADS)), rounds=1, iterations=1)
    _write_result(out, full)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--full", action="store_true")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--child", nargs=4, metavar=("WORKLOAD", "NAME", "FOLDER", "WARM"))
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0
    full = args.full or is_full()
    print(_write_result(run(full, args.workloads.split(",")), full))
    return 0


if __name__ == "__main__":
    sys.exit(main())
