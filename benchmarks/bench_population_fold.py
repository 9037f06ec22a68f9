"""k-map against a population table on each engine: the fold against every class.

A population of ``n_pop`` rows over two QI columns (``u`` classes) and a sample of its first
``n_pop / 4`` rows, as Parquet. Each contestant runs in a fresh interpreter, once untimed on
a small copy (imports, JIT, engine start), then timed on the data:

* ``<engine>_classes``: ``population.k_map(class_counts(sample), population=
  class_counts(population))`` — every class of both tables comes to this process;
* ``<engine>_fold``: ``population.k_map(population_histogram(sample, population=...))`` —
  the classes are joined and summarized where they live, the summary comes back.

Recorded: seconds, this (driver) process's peak resident memory (``VmHWM``), the JVM's
(Spark), the workers' (Dask, sampled), and the answer (equal for the two paths of an engine
and to the in-memory one on the small copy). Smoke mode (default) uses 200k rows; ``--full``
(or ``FASTPRIV_BENCH=full``) 8M rows and writes ``benchmarks/results/population_fold.json``.

    python -m benchmarks.bench_population_fold --full
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

import numpy as np

from benchmarks._common import is_full, write_result

ROOT = Path(__file__).resolve().parents[1]
QI = ["a", "b"]
CONTESTANTS = ["duckdb_classes", "duckdb_fold", "dask_classes", "dask_fold",
               "spark_classes", "spark_fold"]
MIB = 1 << 20


def _write(folder: Path, n_pop: int) -> None:
    """Population (4 files) and sample (its first quarter, 2 files): ~n_pop/2 classes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    marker = folder / "_params.json"
    if marker.is_file() and json.loads(marker.read_text()) == {"n_pop": n_pop}:
        return
    rng = np.random.default_rng(0)
    side = int(np.sqrt(n_pop / 2))
    t = pa.table({"a": rng.integers(0, side, n_pop), "b": rng.integers(0, side, n_pop)})
    for name, part, files in (("population", t, 4), ("sample", t.slice(0, n_pop // 4), 2)):
        (folder / name).mkdir(parents=True, exist_ok=True)
        step = -(-part.num_rows // files)
        for i in range(files):
            pq.write_table(part.slice(i * step, step), folder / name / f"part-{i}.parquet")
    marker.write_text(json.dumps({"n_pop": n_pop}))


def _status_kib(pid: int | str, key: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def _k_map(name: str, folder: Path, ctx: dict) -> dict:
    """Run one contestant on ``folder``; the k-map result as a dict."""
    from fastpriv import distributed, population, pushdown, spark

    engine, how = name.split("_")
    sample, pop = str(folder / "sample"), str(folder / "population")
    if engine == "spark":
        sample, pop = ctx["spark"].read.parquet(sample), ctx["spark"].read.parquet(pop)
    mod = {"duckdb": pushdown, "dask": distributed, "spark": spark}[engine]
    if how == "fold":
        return population.k_map(mod.population_histogram(sample, qi=QI,
                                                         population=pop)).to_dict()
    res = population.k_map(mod.class_counts(sample, qi=QI),
                           population=mod.class_counts(pop, qi=QI)).to_dict()
    return res


def _child(name: str, folder: str, warm: str) -> dict:
    import psutil

    ctx: dict = {}
    engine = name.split("_")[0]
    if engine == "spark":
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        ctx["spark"] = (SparkSession.builder.master("local[2]").appName("population-fold")
                        .config("spark.ui.enabled", "false")
                        .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        ctx["spark"].sparkContext.setLogLevel("ERROR")
    if engine == "dask":
        from distributed import Client, LocalCluster

        ctx["cluster"] = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40)
        ctx["client"] = Client(ctx["cluster"])
    _k_map(name, Path(warm), ctx)
    me = psutil.Process()
    peak = {"workers": 0}
    stop = threading.Event()

    def workers() -> int:
        return sum(p.memory_info().rss for p in me.children(recursive=True)
                   if p.name() != "java")

    def sample() -> None:
        while not stop.wait(0.05):
            peak["workers"] = max(peak["workers"], workers())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    res = _k_map(name, Path(folder), ctx)
    seconds = time.perf_counter() - t0
    stop.set()
    thread.join()
    jvm = [p for p in me.children(recursive=True) if p.name() == "java"]
    out = {"seconds": seconds, "driver_peak_mib": _status_kib("self", "VmHWM") / 1024,
           "jvm_peak_mib": _status_kib(jvm[0].pid, "VmHWM") / 1024 if jvm else None,
           "workers_peak_mib": peak["workers"] / MIB if engine == "dask" else None,
           "k_map": res["value"], "witness": res["witness"]}
    if "client" in ctx:
        ctx["client"].close()
        ctx["cluster"].close()
    if "spark" in ctx:
        ctx["spark"].stop()
    return out


def run(full: bool) -> dict:
    n_pop = 8_000_000 if full else 200_000
    root = Path(os.environ.get("FASTPRIV_BENCH_DATA") or tempfile.gettempdir())
    folder, warm = root / f"population_fold_{n_pop}", root / "population_fold_warm"
    _write(folder, n_pop)
    _write(warm, 20_000)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = {}
    for name in CONTESTANTS:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_population_fold",
                               "--child", name, str(folder), str(warm)], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        runs[name] = (json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0
                      else {"error": proc.stderr[-2000:]})
        print(name, runs[name], flush=True)
    for engine in ("duckdb", "dask", "spark"):
        a, b = runs[f"{engine}_classes"], runs[f"{engine}_fold"]
        if "error" not in a and "error" not in b:
            assert (a["k_map"], a["witness"]) == (b["k_map"], b["witness"]), engine
    import pyarrow.parquet as pq

    n_classes = pq.read_table(folder / "population").group_by(QI).aggregate([]).num_rows
    return {"n_population": n_pop, "n_sample": n_pop // 4, "population_classes": n_classes,
            "runs": runs}


def bench_population_fold(benchmark, full):
    out = benchmark.pedantic(lambda: run(full), rounds=1, iterations=1)
    write_result("population_fold", {"command": "python -m benchmarks.bench_population_fold "
                                                "--full", **out}, full)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--full", action="store_true")
    p.add_argument("--child", nargs=3, metavar=("NAME", "FOLDER", "WARM"))
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0
    full = args.full or is_full()
    out = run(full)
    path = write_result("population_fold", {"command": "python -m benchmarks."
                                                       "bench_population_fold --full", **out},
                        full)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
