"""Benchmark: the same Parquet audit where the data lives — local, Spark, Dask, DuckDB.

Synthetic Parquet data (``fastpriv.datasets.synthetic_batches``, 20 values, 10M rows in 8
files; smoke: 100k rows, first shape only) in two shapes — *many groups*
(``group_size=100``: 100k groups, rows sorted by group) and *few groups*
(``n_groups=10_000``, rows in random group order) — one audit (classical models,
(c,k)-safety at k = 12, SkylineCheck of 100 points) and four ways to build the release it
reads, in the same run:

* **local**: ``Release.from_batches(folder)`` (fastpriv's streaming counts, one process);
* **spark**: ``fastpriv.spark.release(spark.read.parquet(folder))`` on a ``local[2]``
  session, ``method="groupby"`` (Spark's aggregation) and ``method="partitions"``
  (fastpriv's CountAccumulator per partition in ``mapInArrow``, states merged on the
  driver);
* **dask**: ``fastpriv.distributed.release_from_dask(folder)`` on a ``LocalCluster`` with 2
  worker processes × 1 thread;
* **duckdb**: ``fastpriv.pushdown.count_query`` over a ``read_parquet`` view, DuckDB with 2
  threads, ``pushdown.release`` on its Arrow result.

Engines are alternated round by round (the 2 cores are shared: the minimum of the rounds is
reported, and every ratio is against the local path of the same run). Session / cluster
start-up is timed separately and not in the rounds; a first untimed call loads each
engine's workers. Every release is asserted equal (``Release.equals``) to the local one and
every audit's ``to_dict()`` equal to the local audit's. **Bytes to the driver** is what
crosses from the engine to the process that audits: the Arrow triples for Spark and DuckDB
(``Table.nbytes``), the pickled merged :class:`~fastpriv.counts.CountAccumulator` for Dask;
for scale, ``rows_arrow_bytes`` is the Arrow size of the two columns of all rows (what
collecting the rows would move) and ``parquet_bytes`` the compressed files the local path
reads.

On one 2-core machine the local path wins: the engines pay for JVM / worker processes,
task scheduling and (Spark) a shuffle, and have no more cores to spread over. The point of
the other paths is where the heavy part runs — next to the data — and that the driver
receives only one row per (group, value) pair.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
import time

from benchmarks._common import write_result

K = 12
POINTS = [(ell, k, m, 0.9) for ell in range(4) for k in range(5) for m in range(5)]  # 100
COLS = {"group": "group", "sensitive": "sensitive"}
SHAPES = {"many_groups": {"group_size": 100}, "few_groups": {"n_groups": 10_000}}


def _write(folder: str, n_rows: int, files: int, **shape) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastpriv.datasets import synthetic_batches

    os.makedirs(folder, exist_ok=True)
    per_file = -(-n_rows // files)
    for i, batch in enumerate(synthetic_batches(n_rows, batch_rows=per_file, n_values=20,
                                                seed=0, **shape)):
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        pq.write_table(pa.Table.from_batches([batch]), path, row_group_size=1 << 20)
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def _audit(rel) -> dict:
    from fastpriv import ck_safety, classic, skyline

    return {"classic": classic.audit(rel).to_dict(), "ck": ck_safety.audit(rel, k=K).to_dict(),
            "skyline": skyline.check(rel, skylines={"*": POINTS}).to_dict()}


def _spark_session():
    """``(session, created)``: the running local session if there is one (the test suite's
    Spark tests leave theirs for this smoke run), else a new local[2] one."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    # the workers' Python: this interpreter, also when its venv is not activated (the
    # spark.pyspark.python setting alone left Python workers on the PATH's python3)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (SparkSession.builder.master("local[2]").appName("fastpriv-bench-engines")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.pyspark.python", sys.executable)
            .config("spark.pyspark.driver.python", sys.executable)
            .getOrCreate()), True


class _Engines:
    """Start every engine once; :meth:`paths` gives, per engine, a function building the
    release of a Parquet folder and returning ``(release, bytes to the driver)``."""

    def __init__(self):
        import duckdb
        from distributed import Client, LocalCluster

        self.startup = {}
        t0 = time.perf_counter()
        self.spark, self.own_spark = _spark_session()
        self.spark.sparkContext.setLogLevel("ERROR")
        self.startup["spark"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    dashboard_address=None, silence_logs=40)
        self.client = Client(self.cluster)
        self.startup["dask"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.con = duckdb.connect(config={"threads": 2})
        self.startup["duckdb"] = time.perf_counter() - t0
        self.views = 0

    def paths(self, folder: str) -> dict:
        import fastpriv.spark as fs
        from fastpriv import Release, pushdown
        from fastpriv.distributed import count_partitions

        self.views += 1
        view = f"data{self.views}"
        self.con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{folder}/*.parquet')")
        sql = pushdown.count_query(view, **COLS)
        df = self.spark.read.parquet(folder)

        def spark_path(method):
            def run():
                t = fs.counts(df, method=method, merge="driver", **COLS)
                rel = Release.from_counts(t, group="group", sensitive="sensitive",
                                          count=t.column_names[-1])
                return rel, t.nbytes
            return run

        def dask_path():
            acc = count_partitions(folder, **COLS)
            return acc.to_release(), len(pickle.dumps(acc))

        def duckdb_path():
            t = self.con.sql(sql).arrow().read_all()
            return pushdown.release(t, **COLS), t.nbytes

        return {"local": lambda: (Release.from_batches(folder, **COLS), 0),
                "spark_groupby": spark_path("groupby"),
                "spark_partitions": spark_path("partitions"),
                "dask": dask_path,
                "duckdb": duckdb_path}

    def close(self):
        self.client.close()
        self.cluster.close()
        self.con.close()
        if self.own_spark:
            self.spark.stop()


def _run_shape(engines: _Engines, folder: str, full: bool) -> dict:
    import pyarrow.dataset as ds

    rounds = 3 if full else 1   # smoke: timings are not meaningful, the equality checks are
    paths = engines.paths(folder)
    times = {name: [] for name in paths}
    moved, rels = {}, {}
    if full:   # first calls: workers load the kernels (smoke: one round, untimed)
        for name, fn in paths.items():
            rels[name], moved[name] = fn()
    for _ in range(rounds):
        for name, fn in paths.items():
            t0 = time.perf_counter()
            rels[name], moved[name] = fn()
            times[name].append(time.perf_counter() - t0)
    moved.pop("local")
    ref = rels["local"]
    t0 = time.perf_counter()
    ref_audit = _audit(ref)
    audit_s = time.perf_counter() - t0
    for name, rel in rels.items():
        assert rel.equals(ref), name
        assert _audit(rel) == ref_audit, name
    best = {name: min(t) for name, t in times.items()}
    rows = ds.dataset(folder).to_table(columns=["group", "sensitive"])
    return {"n_groups": ref.n_groups, "n_pairs": int(ref.codes.size), "rounds": rounds,
            "release_s": times, "best_release_s": best,
            "ratio_to_local_best": {name: b / best["local"] for name, b in best.items()},
            "audit_s": audit_s, "bytes_to_driver": moved,
            "rows_arrow_bytes": rows.nbytes,
            "rows_arrow_bytes_note": "the two columns of all rows in Arrow (dictionary-encoded "
                                     "values): what collecting the rows would move",
            "identical_releases_and_audits": True}


def bench_engines(benchmark, full):
    n = 10_000_000 if full else 100_000
    shapes = SHAPES if full else {"many_groups": SHAPES["many_groups"]}
    root = tempfile.mkdtemp(prefix="fastpriv-engines-")
    res = {"n_rows": n, "files": 8, "spark_partitions_merge": "driver",
           "cores": os.cpu_count(), "shapes": {}}
    try:
        engines = _Engines()
        res["startup_s"] = engines.startup
        try:
            for shape, kw in shapes.items():
                folder = os.path.join(root, shape)
                on_disk = _write(folder, n, files=8, **kw)
                res["shapes"][shape] = {"params": kw, "parquet_bytes": on_disk,
                                        **_run_shape(engines, folder, full)}
            folder = os.path.join(root, next(iter(shapes)))
            benchmark.pedantic(engines.paths(folder)["local"], rounds=1, iterations=1)
        finally:
            engines.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    write_result("engines", res, full)
    for shape, r in res["shapes"].items():
        print(f"\n{shape}: " + ", ".join(f"{k} {v:.2f} s (x{r['ratio_to_local_best'][k]:.1f})"
                                        for k, v in r["best_release_s"].items())
              + f"; audit {r['audit_s']:.2f} s; bytes to driver {r['bytes_to_driver']} "
              f"(rows: {r['rows_arrow_bytes']})")
