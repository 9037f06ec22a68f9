"""Benchmark: the same classical audit where the data lives — in memory, Spark, Dask, DuckDB —
against the SQL / dataframe code a data engineer writes in the same engine.

Synthetic Parquet data (``fastpriv.datasets.synthetic_batches``, 20M rows in 8 files, 20
sensitive values, rows in random group order) with 10k, 1M and 10M QI groups (smoke: 100k
rows, 1,000 groups). Every contestant goes from the Parquet folder to the classical audit
numbers k (smallest group) and distinct ℓ (fewest distinct sensitive values in a group):

* **memory_batches**: ``Release.from_batches(folder)`` (fastpriv's streaming counts, one
  process) — the *in-memory* reference of every ``×in-memory`` ratio;
* **memory_table**: ``Release.from_table(pyarrow.parquet.read_table(folder))``;
* **spark_groupby** / **spark_partitions**: ``fastpriv.spark.release(spark.read.parquet(folder),
  method=...)`` on a ``local[2]`` session with Spark's defaults (``spark.driver.memory``
  and ``spark.sql.shuffle.partitions`` are not set); ``"groupby"`` is Spark's aggregation,
  ``"partitions"`` fastpriv's CountAccumulator per partition in ``mapInArrow``;
* **dask**: ``fastpriv.distributed.release_from_dask(folder)`` on a ``LocalCluster`` with 2
  worker processes × 1 thread;
* **duckdb**: ``fastpriv.pushdown.count_query`` over ``read_parquet``, DuckDB with 2
  threads, ``pushdown.release`` on its Arrow result;

each followed by ``classic.k_anonymity`` and ``classic.l_diversity`` of the release; the
**folds** (issue 49: only summaries reach the driver, ``fastpriv.folds``), each with ``q=None``
— no pass for the table's distribution Q, which k and ℓ do not need (only t-closeness,
β-likeness and δ-disclosure do) — and ``classic=True`` (so they also fold (α,k)-anonymity,
entropy and recursive ℓ-diversity, which the hand-written code does not compute):

* **spark_fold**: ``fastpriv.spark.audit(spark.read.parquet(folder), q=None)`` on the same
  session: a shuffle by group, fastpriv's kernels per partition on the executors
  (``mapInArrow``), one pickled state per partition to the driver;
* **dask_fold**: ``fastpriv.distributed.groupwise_audit(dd.read_parquet(folder),
  partition_by_group=True, q=None)`` on the same cluster: a Dask shuffle on the group, one
  state per partition;
* **dask_buckets**: ``fastpriv.distributed.groupwise_audit(folder, split_out=8, q=None)``:
  each file's (group, value) pairs counted and split by a hash of the group into 8 buckets,
  one state per bucket (no row shuffled);
* **duckdb_fold**: ``fastpriv.pushdown.audit(folder, q=None)`` on the same connection
  (``split_out="auto"``): DuckDB's estimate of the distinct pairs
  (``approx_count_distinct``) sets the number of buckets of groups (a hash of the group),
  and each bucket's ``GROUP BY … ORDER BY group`` streams as Arrow batches into
  ``fastpriv.streaming.fold_clustered``; DuckDB runs inside the driver process, so this
  path's driver peak includes DuckDB's own aggregation and sort, as ``duckdb_sql``'s does;
* **duckdb_one**: the same fold with ``split_out=1``: one query counts and sorts every
  pair;
* **duckdb_capped**: ``duckdb_one`` on a connection of its own with DuckDB's
  ``memory_limit`` at :data:`DUCKDB_CAP` and a ``temp_directory`` (beyond the limit DuckDB
  spills its aggregation and sort to disk): DuckDB's own way to bound the driver;

k and ℓ read from the ``StreamAudit`` (``.classic.models["k_anonymity"]["value"]``,
``["l_diversity"]``); their ``bytes_to_driver`` is the pickled result (each partition's
state is about as large). And,
per engine, the **hand-written** code for the same two numbers — the release's sufficient
statistics (``SELECT group, sensitive, count(*) ... GROUP BY group, sensitive``), then k =
min of the group sizes and ℓ = min of the distinct values per group, all in the engine,
only k and ℓ coming back:

* **spark_sql**: that query through ``spark.sql`` over a temporary view of
  ``spark.read.parquet(folder)`` (same session settings);
* **dask_hand**: ``dd.read_parquet(folder).groupby([group, sensitive]).size()``, then a
  ``groupby(group)`` of the pairs (sum, count) and the two minima, on the same cluster;
* **duckdb_sql**: the query in DuckDB SQL over ``read_parquet``.

The fastpriv release paths bring the (group, value, count) triples to the driver (every
count-based model can then be audited from the release); the folds bring one summary per
partition (their size depends on the models' parameters, not on the number of groups); the
hand-written code brings two numbers. Reading the Parquet folder is inside every timing;
session / cluster start-up is not (``startup_s``).

**Full mode**: every (contestant, round) runs in a **fresh subprocess** (``python -m
benchmarks.bench_engines --child SPEC``) that starts its engine, runs the contestant once
untimed on the smoke-size data (kernels, JVM and workers loaded), then once timed on the
real folder. Peak memory is what that process and its engine held: **driver** — the
subprocess's own ``VmHWM`` (peak resident set, ``/proc/self/status``; it includes the
interpreter, the imports and the small untimed call); **JVM** — the ``VmHWM`` of the
``java`` process Spark started under it (Spark only; the JVM runs the executors in local
mode); **workers** — the largest sum of the resident sets of every other descendant process
(Dask workers and nannies, Spark's Python workers), sampled every 50 ms during the timed
call. The resident sets before the timed call are recorded too (``*_before_mib``). Rounds
are alternated (each round starts one contestant later in the list, and every size has its
round before any size has the next), 3 of them (the JSON's ``rounds`` per contestant says how
many were run); min and median are reported, ratios of
minima against ``memory_batches`` (``ratio_to_memory``) and against the same engine's
hand-written code (``ratio_to_hand``). A run is bounded by
``FASTPRIV_BENCH_ENGINES_MINUTES`` (default 40) of wall time: a run that would start later
is not started, and the JSON lists it under ``skipped`` with the reason; a subprocess that
fails or exceeds its time is listed under ``failed`` with its output's tail.

Every release is asserted equal (``Release.equals``) to ``memory_batches``' (kept on disk
as a pickle next to the data), and every contestant's k and ℓ — the hand-written ones
included — equal to it. The Parquet data are written once into
``FASTPRIV_BENCH_DATA`` (default ``<tmp>/fastpriv-bench-engines``) and reused while their
parameters (``_params.json``) match. **Smoke mode** (the test suite) runs every contestant
once in this process (reusing the test suite's Spark session when there is one) with the
same equality checks, and one contestant through the subprocess path.

**Large runs** (``--large ROWS,GROUPS --remeasure NAMES --rounds N``): the same subprocess
runs on one larger data set (e.g. 40M rows, 30M groups), kept in ``engines.json`` under
``large`` (one entry per size, with its rounds, revision and load), the reference's k and ℓ
computed by ``memory_batches`` in a subprocess as above. ``projection`` in the same file
(written by ``--project``) fits time = a + b·rows + c·groups per contestant to the measured
minima (every size, large runs included) and extrapolates it, as a projection and not a
measurement, to 1B rows / 100M groups on N executors: the per-row and per-group costs
divided by N (perfect scaling of the part that runs next to the data), the driver's merge of
one state per partition not.

On one 2-core machine the in-memory path wins: the engines pay for JVM / worker processes,
task scheduling and (Spark) a shuffle, and have no more cores to spread over. The point of
the other paths is where the heavy part runs — next to the data — and that the driver
receives only one row per (group, value) pair.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from benchmarks._common import write_result

ROOT = Path(__file__).resolve().parent.parent
COLS = {"group": "group", "sensitive": "sensitive"}
FILES = 8
N_VALUES = 20
ROUNDS = 3
FULL = {"n_rows": 20_000_000, "groups": [10_000, 1_000_000, 10_000_000]}
SMOKE = {"n_rows": 100_000, "groups": [1_000]}
#: contestant -> engine it needs; every hand-written contestant is one engine's baseline
CONTESTANTS = {"memory_batches": None, "memory_table": None,
               "spark_groupby": "spark", "spark_partitions": "spark", "spark_sql": "spark",
               "spark_fold": "spark",
               "dask": "dask", "dask_hand": "dask", "dask_fold": "dask",
               "dask_buckets": "dask",
               "duckdb": "duckdb", "duckdb_sql": "duckdb", "duckdb_fold": "duckdb",
               "duckdb_one": "duckdb", "duckdb_capped": "duckdb"}
HAND = {"spark_groupby": "spark_sql", "spark_partitions": "spark_sql", "spark_sql": "spark_sql",
        "spark_fold": "spark_sql",
        "dask": "dask_hand", "dask_hand": "dask_hand", "dask_fold": "dask_hand",
        "dask_buckets": "dask_hand",
        "duckdb": "duckdb_sql", "duckdb_sql": "duckdb_sql", "duckdb_fold": "duckdb_sql",
        "duckdb_one": "duckdb_sql", "duckdb_capped": "duckdb_sql"}
#: the fold contestants (a StreamAudit, no release): k and ℓ through ``fastpriv.folds``
FOLDS = ("spark_fold", "dask_fold", "dask_buckets", "duckdb_fold", "duckdb_one",
         "duckdb_capped")
#: DuckDB's ``memory_limit`` for ``duckdb_capped`` (beyond it DuckDB spills to disk)
DUCKDB_CAP = "500MB"
REFERENCE = "memory_batches"
#: k and ℓ from the (group, sensitive, count) pairs, in the engine
HAND_SQL = ("WITH pairs AS (SELECT {g}, {s}, count(*) AS n FROM {t} GROUP BY {g}, {s}), "
            "per_group AS (SELECT {g}, sum(n) AS size, count(*) AS n_values FROM pairs "
            "GROUP BY {g}) SELECT min(size) AS k, min(n_values) AS l FROM per_group")
MIB = 1 << 20


# ------------------------------------------------------------------ data
def data_root() -> Path:
    return Path(os.environ.get("FASTPRIV_BENCH_DATA")
                or Path(tempfile.gettempdir()) / "fastpriv-bench-engines")


def _write(folder: Path, n_rows: int, n_groups: int) -> int:
    """Write (or reuse) the Parquet folder; its size in bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastpriv.datasets import synthetic_batches

    params = {"n_rows": n_rows, "n_groups": n_groups, "files": FILES, "n_values": N_VALUES,
              "seed": 0, "row_group_size": 1 << 20}
    marker = folder / "_params.json"
    if not (marker.is_file() and json.loads(marker.read_text()) == params):
        folder.mkdir(parents=True, exist_ok=True)
        for p in folder.iterdir():
            p.unlink()
        per_file = -(-n_rows // FILES)
        for i, batch in enumerate(synthetic_batches(n_rows, batch_rows=per_file,
                                                    n_values=N_VALUES, seed=0,
                                                    n_groups=n_groups)):
            pq.write_table(pa.Table.from_batches([batch]), folder / f"part-{i:03d}.parquet",
                           row_group_size=1 << 20)
        marker.write_text(json.dumps(params))
    return sum(p.stat().st_size for p in folder.glob("*.parquet"))


def _dataset(n_rows: int, n_groups: int) -> Path:
    folder = data_root() / f"rows{n_rows}_groups{n_groups}"
    _write(folder, n_rows, n_groups)
    return folder


# ------------------------------------------------------------------ engines
def _spark_session():
    """``(session, created)``: the running local session if there is one (the test suite's
    Spark tests leave theirs for this smoke run), else a new local[2] one with Spark's
    defaults (driver memory, ``spark.sql.shuffle.partitions``, adaptive execution)."""
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
            .config("spark.pyspark.python", sys.executable)
            .config("spark.pyspark.driver.python", sys.executable)
            .getOrCreate()), True


class _Engines:
    """The engines a set of contestants needs, each started once; :meth:`contestant` gives
    a function from a Parquet folder to ``(release or None, k, l, bytes to the driver)``."""

    def __init__(self, engines: set[str]):
        self.startup: dict[str, float] = {}
        self.spark = self.client = self.cluster = self.con = None
        self.own_spark = False
        self.views = 0
        if "spark" in engines:
            t0 = time.perf_counter()
            self.spark, self.own_spark = _spark_session()
            self.spark.sparkContext.setLogLevel("ERROR")
            self.startup["spark"] = time.perf_counter() - t0
        if "dask" in engines:
            from distributed import Client, LocalCluster

            t0 = time.perf_counter()
            self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=40)
            self.client = Client(self.cluster)
            self.startup["dask"] = time.perf_counter() - t0
        if "duckdb" in engines:
            import duckdb

            t0 = time.perf_counter()
            self.con = duckdb.connect(config={"threads": 2})
            self.startup["duckdb"] = time.perf_counter() - t0

    def contestant(self, name: str) -> Callable[[str], tuple[Any, int, int, int]]:
        import fastpriv.spark as fs
        from fastpriv import Release, classic, pushdown
        from fastpriv.distributed import release_from_dask

        def with_kl(rel, nbytes):
            return rel, classic.k_anonymity(rel), classic.l_diversity(rel), nbytes

        def memory_batches(folder):
            return with_kl(Release.from_batches(folder, **COLS), 0)

        def memory_table(folder):
            import pyarrow.parquet as pq

            t = pq.read_table(folder, columns=list(COLS.values()))
            return with_kl(Release.from_table(t, **COLS), 0)

        def spark_path(method):
            def run(folder):               # release() as a user calls it
                rel = fs.release(self.spark.read.parquet(folder), method=method, **COLS)
                return with_kl(rel, 0)
            return run

        def spark_sql(folder):
            self.views += 1
            view = f"data{self.views}"
            self.spark.read.parquet(folder).createOrReplaceTempView(view)
            row = self.spark.sql(HAND_SQL.format(g="`group`", s="`sensitive`", t=view)).first()
            return None, int(row["k"]), int(row["l"]), 16

        def dask(folder):
            rel = release_from_dask(folder, **COLS)
            return with_kl(rel, 0)

        def dask_hand(folder):
            import dask
            import dask.dataframe as dd

            df = dd.read_parquet(folder, columns=["group", "sensitive"])
            pairs = (df.groupby(["group", "sensitive"], observed=True).size().rename("n")
                     .reset_index())
            per = pairs.groupby("group").agg({"n": "sum", "sensitive": "count"})
            k, ell = dask.compute(per["n"].min(), per["sensitive"].min())
            return None, int(k), int(ell), 16

        def duckdb_path(folder):
            self.views += 1
            view = f"data{self.views}"
            self.con.execute(f"CREATE OR REPLACE VIEW {view} AS "
                             f"SELECT * FROM read_parquet('{folder}/*.parquet')")
            t = self.con.sql(pushdown.count_query(view, **COLS)).arrow().read_all()
            return with_kl(pushdown.release(t, **COLS), t.nbytes)

        def duckdb_sql(folder):
            src = f"read_parquet('{folder}/*.parquet')"
            # fetchall: the one row, and no unfinished result left on the shared connection
            # (DuckDB refuses the next query of another path on it otherwise)
            (k, ell), = self.con.execute(HAND_SQL.format(g='"group"', s='"sensitive"', t=src)
                                         ).fetchall()
            return None, int(k), int(ell), 16

        def fold_kl(audit):
            m = audit.classic.models
            return (None, int(m["k_anonymity"]["value"]), int(m["l_diversity"]["value"]),
                    len(pickle.dumps(audit)))

        def spark_fold(folder):            # audit() as a user calls it, no Q pass
            return fold_kl(fs.audit(self.spark.read.parquet(folder), q=None, **COLS))

        def dask_fold(folder):
            import dask.dataframe as dd

            from fastpriv.distributed import groupwise_audit

            df = dd.read_parquet(folder, columns=["group", "sensitive"])   # as dask_hand
            return fold_kl(groupwise_audit(df, partition_by_group=True, q=None, **COLS))

        def dask_buckets(folder):          # any layout: the pairs bucketed by group
            from fastpriv.distributed import groupwise_audit

            return fold_kl(groupwise_audit(folder, split_out=FILES, q=None, **COLS))

        def duckdb_fold(folder):
            return fold_kl(pushdown.audit(self.con.sql(
                f"SELECT * FROM read_parquet('{folder}/*.parquet')"), q=None, **COLS))

        def duckdb_one(folder):            # one query for every group
            return fold_kl(pushdown.audit(self.con.sql(
                f"SELECT * FROM read_parquet('{folder}/*.parquet')"), q=None, split_out=1,
                **COLS))

        def duckdb_capped(folder):         # one query, DuckDB's own memory capped
            import duckdb

            with tempfile.TemporaryDirectory(dir=data_root()) as spill:
                con = duckdb.connect(config={"threads": 2, "memory_limit": DUCKDB_CAP,
                                             "temp_directory": spill})
                try:
                    return fold_kl(pushdown.audit(con.sql(
                        f"SELECT * FROM read_parquet('{folder}/*.parquet')"), q=None,
                        split_out=1, **COLS))
                finally:
                    con.close()

        return {"memory_batches": memory_batches, "memory_table": memory_table,
                "spark_groupby": spark_path("groupby"),
                "spark_partitions": spark_path("partitions"), "spark_sql": spark_sql,
                "spark_fold": spark_fold, "dask": dask, "dask_hand": dask_hand,
                "dask_fold": dask_fold, "dask_buckets": dask_buckets, "duckdb": duckdb_path,
                "duckdb_sql": duckdb_sql,
                "duckdb_fold": duckdb_fold, "duckdb_one": duckdb_one,
                "duckdb_capped": duckdb_capped}[name]

    def close(self):
        if self.client is not None:
            self.client.close()
            self.cluster.close()
        if self.con is not None:
            self.con.close()
        if self.own_spark:
            self.spark.stop()


# ------------------------------------------------------------------ memory
def _status_kib(pid: int | str, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class _Memory:
    """The process's and its descendants' memory: the JVM (a ``java`` descendant) by its
    ``VmHWM``, the other descendants by their resident sets summed, sampled every 50 ms."""

    def __init__(self):
        import psutil

        self.me = psutil.Process()
        self.workers_peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _children(self) -> tuple[list, list]:
        import psutil

        jvm, other = [], []
        for p in self.me.children(recursive=True):
            try:
                (jvm if p.name() == "java" else other).append(p)
            except psutil.Error:
                pass
        return jvm, other

    def _workers_rss(self) -> int:
        import psutil

        total = 0
        for p in self._children()[1]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total

    def snapshot(self) -> dict:
        jvm = self._children()[0]
        return {"driver_mib": _status_kib("self", "VmRSS") / 1024,
                "jvm_mib": (_status_kib(jvm[0].pid, "VmRSS") or 0) / 1024 if jvm else None,
                "workers_mib": self._workers_rss() / MIB}

    def _sample(self):
        while not self._stop.wait(0.05):
            self.workers_peak = max(self.workers_peak, self._workers_rss())

    def start(self):
        self.workers_peak = self._workers_rss()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def peaks(self) -> dict:
        self._stop.set()
        self._thread.join()
        self.workers_peak = max(self.workers_peak, self._workers_rss())
        jvm = self._children()[0]
        return {"driver_peak_mib": _status_kib("self", "VmHWM") / 1024,
                "jvm_peak_mib": (_status_kib(jvm[0].pid, "VmHWM") or 0) / 1024 if jvm else None,
                "workers_peak_mib": self.workers_peak / MIB}


# ------------------------------------------------------------------ one run
def _child(spec: dict) -> dict:
    """One (contestant, round) in this fresh process: start, untimed call, timed call."""
    import gc

    name = spec["contestant"]
    engine = CONTESTANTS[name]
    engines = _Engines({engine} if engine else set())
    try:
        fn = engines.contestant(name)
        fn(spec["warm_folder"])
        gc.collect()
        mem = _Memory()
        before = mem.snapshot()
        mem.start()
        t0 = time.perf_counter()
        rel, k, ell, nbytes = fn(spec["folder"])
        seconds = time.perf_counter() - t0
        out = {"seconds": seconds, "k": k, "l": ell, "bytes_to_driver": nbytes,
               "startup_s": engines.startup.get(engine),
               **{f"{key[:-4]}_before_mib": v for key, v in before.items()}, **mem.peaks()}
    finally:
        engines.close()
    if rel is not None:
        with open(spec["reference"], "rb") as fh:
            ref = pickle.load(fh)
        assert rel.equals(ref), f"{name}: release differs from {REFERENCE}'s"
        out["equal_to_memory"] = True
    return out


def _reference(folder: Path) -> dict:
    """``memory_batches``' release of ``folder`` pickled beside it (in a subprocess), with
    its k, ℓ, groups and pairs."""
    path = folder / "_reference.pkl"
    meta = folder / "_reference.json"
    if not (path.is_file() and meta.is_file()
            and meta.stat().st_mtime >= (folder / "_params.json").stat().st_mtime):
        code = ("import pickle, json, sys\n"
                "from fastpriv import Release, classic\n"
                f"rel = Release.from_batches({str(folder)!r}, **{COLS!r})\n"
                f"pickle.dump(rel, open({str(path)!r}, 'wb'), protocol=5)\n"
                "json.dump({'k': classic.k_anonymity(rel), 'l': classic.l_diversity(rel),\n"
                "           'n_groups': rel.n_groups, 'n_pairs': int(rel.codes.size)},\n"
                f"          open({str(meta)!r}, 'w'))\n")
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return json.loads(meta.read_text())


def failure_cause(log_text: str) -> str | None:
    """The first line of a failed run's log that says why: a JVM out of heap, a task result
    Spark lost, else the last Python exception line."""
    import re

    for pattern in (r"java\.lang\.OutOfMemoryError[^\n]*", r"TaskResultLost \([^)\n]*\)"):
        m = re.search(pattern, log_text)
        if m:
            return m.group(0).strip()
    last = re.findall(r"^\w[\w.]*(?:Error|Exception): [^\n]*", log_text, flags=re.M)
    return last[-1][:300] if last else None


def _spawn(spec: dict, log: Path, timeout: float) -> dict:
    """Run :func:`_child` in a fresh interpreter (its own process group, killed whole on
    timeout or as soon as its log shows a JVM ``OutOfMemoryError``); its result, or
    ``{"error": ...}``."""
    spec_path = log.with_suffix(".spec.json")
    out_path = log.with_suffix(".out.json")
    out_path.unlink(missing_ok=True)
    spec_path.write_text(json.dumps({**spec, "out": str(out_path)}))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_engines", "--child",
                                 str(spec_path)], cwd=ROOT, env=env, stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)
        rc: int | str | None = None
        while rc is None:
            try:
                rc = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                # a JVM out of heap can leave its job waiting forever: stop it at once
                oom = "java.lang.OutOfMemoryError" in log.read_text(errors="replace")
                if oom or time.perf_counter() - t0 > timeout:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    rc = "killed: the JVM ran out of heap (OutOfMemoryError)" if oom \
                        else "killed: timeout"
    wall = time.perf_counter() - t0
    if rc == 0 and out_path.is_file():
        return {**json.loads(out_path.read_text()), "process_wall_s": wall}
    text = log.read_text(errors="replace")
    why = f"exit {rc}" if isinstance(rc, int) else rc
    return {"error": f"{why} after {wall:.0f} s", "cause": failure_cause(text),
            "log_tail": text[-2000:], "process_wall_s": wall}


# ------------------------------------------------------------------ the benchmark
def _summary(runs: dict[str, list[dict]], ref: dict) -> dict:
    """Min / median seconds, ratios of minima, peaks (the largest of the rounds)."""
    out: dict[str, Any] = {}
    for name, rs in runs.items():
        ok = [r for r in rs if "seconds" in r]
        if not ok:
            continue
        for r in ok:
            assert (r["k"], r["l"]) == (ref["k"], ref["l"]), (name, r["k"], r["l"], ref)
        secs = [r["seconds"] for r in ok]
        out[name] = {"min_s": min(secs), "median_s": statistics.median(secs), "rounds": len(ok),
                     "seconds": secs, "k": ok[0]["k"], "l": ok[0]["l"],
                     "bytes_to_driver": ok[0]["bytes_to_driver"],
                     # asserted where the run was made; the hand-written code has no release
                     # (the folds have no release either: their k and ℓ are checked)
                     "equal_to_memory": all(r["equal_to_memory"] for r in ok)
                     if name not in HAND.values() and name not in FOLDS else None}
        for key in ("driver_peak_mib", "jvm_peak_mib", "workers_peak_mib", "driver_before_mib",
                    "jvm_before_mib", "workers_before_mib", "startup_s"):
            vals = [r[key] for r in ok if r.get(key) is not None]
            out[name][key] = max(vals) if vals else None
    base = out.get(REFERENCE, {}).get("min_s")
    for name, s in out.items():
        s["ratio_to_memory"] = s["min_s"] / base if base else None
        hand = out.get(HAND.get(name, ""), {}).get("min_s")
        s["ratio_to_hand"] = s["min_s"] / hand if hand else None
    return out


def _run_full(n_rows: int, groups: list[int], minutes: float,
              names: list[str] | None = None, rounds: int = ROUNDS) -> dict:
    deadline = time.monotonic() + minutes * 60
    warm = _dataset(SMOKE["n_rows"], SMOKE["groups"][0])
    _reference(warm)
    logs = data_root() / "logs"
    logs.mkdir(exist_ok=True)
    names = list(names or CONTESTANTS)
    res: dict[str, Any] = {"datasets": {}, "skipped": [], "failed": []}
    folders = {g: _dataset(n_rows, g) for g in groups}
    refs = {g: _reference(folders[g]) for g in groups}
    runs: dict[int, dict[str, list[dict]]] = {g: {n: [] for n in names} for g in groups}
    last: dict[tuple[int, str], float] = {}
    for rnd in range(rounds):    # every size gets its first round before any gets a second
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for g in groups:
            for name in order:
                left = deadline - time.monotonic()
                need = last.get((g, name), 30)
                if need == float("inf"):
                    res["skipped"].append({"groups": g, "contestant": name, "round": rnd,
                                           "reason": "failed in an earlier round: not retried"})
                    continue
                if left < need:
                    res["skipped"].append({"groups": g, "contestant": name, "round": rnd,
                                           "reason": f"time budget of {minutes:g} min: "
                                                     f"{left:.0f} s left, needs ~{need:.0f} s"})
                    continue
                spec = {"contestant": name, "folder": str(folders[g]), "warm_folder": str(warm),
                        "reference": str(folders[g] / "_reference.pkl")}
                r = _spawn(spec, logs / f"{g}_{name}_{rnd}.log", timeout=min(left, 1200))
                last[(g, name)] = r["process_wall_s"]
                print(f"groups {g:>10,} round {rnd} {name:17s} "
                      + (f"{r['seconds']:8.2f} s" if "seconds" in r else r["error"]), flush=True)
                if "error" in r:
                    res["failed"].append({"groups": g, "contestant": name, "round": rnd, **r})
                    last[(g, name)] = float("inf")   # not retried in a later round
                    continue
                runs[g][name].append(r)
    for g in groups:
        ref = refs[g]
        res["datasets"][str(g)] = {"n_groups": ref["n_groups"], "n_pairs": ref["n_pairs"],
                                   "k": ref["k"], "l": ref["l"],
                                   "parquet_bytes": _write(folders[g], n_rows, g),
                                   "contestants": _summary(runs[g], ref)}
    return res


def _run_smoke(n_rows: int, groups: list[int]) -> dict:
    """Every contestant once in this process (equality checks), one through a subprocess."""
    engines = _Engines({"spark", "dask", "duckdb"})
    res: dict[str, Any] = {"datasets": {}, "skipped": [], "failed": [],
                           "startup_s": engines.startup}
    try:
        for g in groups:
            folder = _dataset(n_rows, g)
            runs: dict[str, list[dict]] = {}
            ref_rel = None
            for name in CONTESTANTS:
                t0 = time.perf_counter()
                rel, k, ell, nbytes = engines.contestant(name)(str(folder))
                r = {"seconds": time.perf_counter() - t0, "k": k, "l": ell,
                     "bytes_to_driver": nbytes}
                if name == REFERENCE:
                    ref_rel = rel
                elif rel is not None:
                    assert rel.equals(ref_rel), f"{name}: release differs from {REFERENCE}'s"
                if rel is not None:
                    r["equal_to_memory"] = True
                runs[name] = [r]
            ref = {"k": runs[REFERENCE][0]["k"], "l": runs[REFERENCE][0]["l"],
                   "n_groups": ref_rel.n_groups, "n_pairs": int(ref_rel.codes.size)}
            res["datasets"][str(g)] = {**ref, "parquet_bytes": _write(folder, n_rows, g),
                                       "contestants": _summary(runs, ref)}
    finally:
        engines.close()
    # the full mode's subprocess path, on the cheapest engine
    folder = _dataset(n_rows, groups[0])
    _reference(folder)
    spec = {"contestant": "duckdb", "folder": str(folder), "warm_folder": str(folder),
            "reference": str(folder / "_reference.pkl")}
    r = _spawn(spec, data_root() / "smoke_child.log", timeout=300)
    assert "error" not in r, r
    assert r["equal_to_memory"] and r["driver_peak_mib"] > 0, r
    res["subprocess_check"] = r
    return res


def _revision() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty=+dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - not a checkout
        return "unknown"


def run(full: bool) -> dict:
    size = FULL if full else SMOKE
    minutes = float(os.environ.get("FASTPRIV_BENCH_ENGINES_MINUTES", "40"))
    res: dict[str, Any] = {"n_rows": size["n_rows"], "files": FILES, "groups": size["groups"],
                           "contestants": {n: CONTESTANTS[n] or "memory" for n in CONTESTANTS},
                           "hand_of": HAND, "reference": REFERENCE, "hand_sql": HAND_SQL,
                           "rounds": ROUNDS if full else 1, "cores": os.cpu_count(),
                           "spark_session": "local[2], Spark's defaults: spark.driver.memory and "
                                            "spark.sql.shuffle.partitions unset",
                           "memory_method": "fresh subprocess per (contestant, round): VmHWM of "
                           "the driver and of the JVM; other descendants' RSS summed, sampled "
                           "every 50 ms" if full else "smoke: not measured (one process)",
                           "revision": _revision(), "load_avg_start": os.getloadavg()}
    if full:
        res["time_budget_min"] = minutes
        res.update(_run_full(size["n_rows"], size["groups"], minutes))
    else:
        res.update(_run_smoke(size["n_rows"], size["groups"]))
    res["load_avg_end"] = os.getloadavg()
    return res


def remeasure(names: list[str], groups: list[int], rounds: int) -> dict:
    """Run ``names`` at ``groups`` again and merge them into ``results/engines.json``.

    For a path changed after the full run (or a new one): its entries (timings, failures,
    skips) at those sizes are replaced, its ratios computed against the file's in-memory and
    hand-written minima (re-measure the baselines with it to compare under the same load;
    the other paths keep the ratios of their own run), and ``remeasured`` records what,
    when, at which revision and load.
    """
    from benchmarks._common import RESULTS, machine

    path = RESULTS / "engines.json"
    res = json.loads(path.read_text())
    start = os.getloadavg()
    minutes = float(os.environ.get("FASTPRIV_BENCH_ENGINES_MINUTES", "40"))
    new = _run_full(res["n_rows"], groups, minutes, names=names, rounds=rounds)
    _merge(res, new, names, groups, {
        "rounds": rounds, "revision": _revision(), "date": machine()["date"],
        "load_avg_start": start, "load_avg_end": os.getloadavg()})
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=2) + "\n")
    os.replace(tmp, path)
    return res


def _merge(res: dict, new: dict, names: list[str], groups: list[int], entry: dict) -> None:
    """Merge ``new`` (a :func:`_run_full` of ``names`` at ``groups``) into ``res``;
    ``entry`` (rounds, revision, date, loads) is recorded under ``remeasured``."""
    redone = {(str(g), n) for g in groups for n in names}
    for name in names:              # a path new to the file: its engine and its baseline
        res["contestants"][name] = CONTESTANTS[name] or "memory"
        if name in HAND:
            res["hand_of"][name] = HAND[name]
    for key in ("failed", "skipped"):
        res[key] = [x for x in res[key] if (str(x["groups"]), x["contestant"]) not in redone]
        res[key] += new[key]
    for g, d in new["datasets"].items():
        cs = res["datasets"][g]["contestants"]
        for name in names:
            cs.pop(name, None)
        cs.update(d["contestants"])
        # the ratios of the paths measured again, against the file's minima as they now
        # are; the other paths keep the ratios of their own run (against the baselines
        # measured with them, under the same load)
        base = cs[REFERENCE]["min_s"]
        for name, c in d["contestants"].items():
            hand = cs.get(HAND.get(name, ""), {}).get("min_s")
            c["ratio_to_memory"] = c["min_s"] / base
            c["ratio_to_hand"] = c["min_s"] / hand if hand else None
    for x in res.get("remeasured", []):    # what was measured again is not theirs any more
        if set(x["groups"]) <= set(groups):
            x["contestants"] = [n for n in x["contestants"] if n not in names]
    res["remeasured"] = [x for x in res.get("remeasured", []) if x["contestants"]]
    res["remeasured"].append({"contestants": names, "groups": groups, **entry})


def large(names: list[str], n_rows: int, n_groups: int, rounds: int) -> dict:
    """Run ``names`` on one larger data set and keep it in ``results/engines.json`` under
    ``large`` (an earlier entry of the same size is replaced)."""
    from benchmarks._common import RESULTS, machine

    path = RESULTS / "engines.json"
    res = json.loads(path.read_text())
    start = os.getloadavg()
    minutes = float(os.environ.get("FASTPRIV_BENCH_ENGINES_MINUTES", "40"))
    new = _run_full(n_rows, [n_groups], minutes, names=names, rounds=rounds)
    d = new["datasets"][str(n_groups)]
    entry = {"n_rows": n_rows, "n_groups": n_groups, "files": FILES, "rounds": rounds,
             "contestants_run": names, **{k: v for k, v in d.items() if k != "n_groups"},
             "n_groups_measured": d["n_groups"], "skipped": new["skipped"],
             "failed": new["failed"], "revision": _revision(), "date": machine()["date"],
             "disk_free_gib": _disk_free_gib(), "load_avg_start": start,
             "load_avg_end": os.getloadavg()}
    res["large"] = [x for x in res.get("large", [])
                    if (x["n_rows"], x["n_groups"]) != (n_rows, n_groups)] + [entry]
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=2) + "\n")
    os.replace(tmp, path)
    return {"datasets": {str(n_groups): d}, "skipped": new["skipped"],
            "failed": new["failed"]}


def _disk_free_gib() -> float:
    import shutil

    return shutil.disk_usage(data_root()).free / (1 << 30)


#: the projection's target: rows, groups (``--project``)
TARGET = {"n_rows": 1_000_000_000, "n_groups": 100_000_000, "executors": [1, 10, 100]}


def _points(res: dict, name: str) -> list[tuple[int, int, float, float | None]]:
    """(rows, groups, min seconds, driver peak MiB) of every measured size of ``name``."""
    out = []
    for g, d in res["datasets"].items():
        c = d["contestants"].get(name)
        if c:
            out.append((res["n_rows"], int(g), c["min_s"], c.get("driver_peak_mib")))
    for x in res.get("large", []):
        c = x["contestants"].get(name)
        if c:
            out.append((x["n_rows"], x["n_groups"], c["min_s"], c.get("driver_peak_mib")))
    return out


def _summary_cost(n_states: int = 2000) -> dict:
    """The driver's cost per partition summary, measured: a ``GroupwiseState`` of the folds'
    parameters (``q=None``, classic models) over one partition of the smoke data, pickled
    as an executor sends it; seconds to unpickle and merge one, and its bytes."""
    import functools

    from fastpriv import Release
    from fastpriv.folds import GroupwiseState

    folder = _dataset(SMOKE["n_rows"], SMOKE["groups"][0])
    blob = pickle.dumps(GroupwiseState(l=2).update(Release.from_batches(str(folder), **COLS)))
    t0 = time.perf_counter()
    functools.reduce(GroupwiseState.merge, (pickle.loads(blob) for _ in range(n_states)))
    return {"s_per_summary": (time.perf_counter() - t0) / n_states, "bytes_per_summary":
            len(blob), "states_merged": n_states}


def project(names: list[str]) -> dict:
    """Fit seconds = a + b·rows + c·groups (least squares, coefficients ≥ 0) and driver
    MiB = d + e·groups to the measured minima of ``names`` and extrapolate to
    :data:`TARGET`, the per-row and per-group work divided by N executors; written to
    ``results/engines.json`` under ``projection``."""
    import numpy as np
    from scipy.optimize import nnls

    from benchmarks._common import RESULTS

    path = RESULTS / "engines.json"
    res = json.loads(path.read_text())
    fits = {}
    for name in names:
        pts = _points(res, name)
        if len(pts) < 3:
            continue
        a = np.array([[1.0, r, g] for r, g, _, _ in pts])
        y = np.array([s for _, _, s, _ in pts])
        coef, _ = nnls(a, y)
        mem = [(g, m) for _, g, _, m in pts if m is not None]
        slope, icpt = np.polyfit([g for g, _ in mem], [m for _, m in mem], 1)
        fit = {"points": [{"n_rows": r, "n_groups": g, "min_s": s, "driver_peak_mib": m}
                          for r, g, s, m in pts],
               "fixed_s": coef[0], "s_per_row": coef[1], "s_per_group": coef[2],
               "max_rel_residual": float(np.max(np.abs(a @ coef - y) / y)),
               "driver_mib_intercept": icpt, "driver_mib_per_million_groups": slope * 1e6,
               "projected": {}}
        for n in TARGET["executors"]:
            fit["projected"][str(n)] = {
                "seconds": coef[0] + (coef[1] * TARGET["n_rows"]
                                      + coef[2] * TARGET["n_groups"]) / n,
                "driver_mib": icpt + slope * TARGET["n_groups"]}
        fits[name] = fit
    cost = _summary_cost()
    res["projection"] = {"target": TARGET, "summary": cost,
                         "model": "seconds = fixed + (s_per_row · rows + "
                         "s_per_group · groups) / N executors, fitted by non-negative least "
                         "squares to the minima measured on this 2-core machine (2 local "
                         "executors/workers: the 'N = 1' line is this machine); driver MiB = "
                         "intercept + slope · groups, fitted the same way; the driver's "
                         "merge of one summary per partition: summary.s_per_summary each "
                         "(measured here), summary.bytes_per_summary each",
                         "is_measurement": False, "contestants": fits}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=2) + "\n")
    os.replace(tmp, path)
    return res["projection"]


def _print(res: dict) -> None:
    for g, d in res["datasets"].items():
        print(f"\n{int(g):,} groups ({d['n_pairs']:,} pairs, k={d['k']}, l={d['l']}):")
        for name, s in d["contestants"].items():
            hand = f" ×hand {s['ratio_to_hand']:.2f}" if s["ratio_to_hand"] else ""
            peak = "".join(f" {k[:-9]} {s[k]:.0f} MiB" for k in
                           ("driver_peak_mib", "jvm_peak_mib", "workers_peak_mib")
                           if s.get(k))
            mem = f"×memory {s['ratio_to_memory']:.1f}" if s["ratio_to_memory"] else ""
            print(f"  {name:17s} min {s['min_s']:7.2f} s median {s['median_s']:7.2f} s "
                  f"{mem}{hand}{peak}")
    for item in res["skipped"] + res["failed"]:
        print("not measured:", {k: v for k, v in item.items() if k != "log_tail"})


def bench_engines(benchmark, full):
    res = run(full)
    write_result("engines", res, full)
    folder = _dataset(SMOKE["n_rows"], SMOKE["groups"][0])
    from fastpriv import Release

    benchmark.pedantic(lambda: Release.from_batches(str(folder), **COLS), rounds=1,
                       iterations=1)
    _print(res)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_engines",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true", help="the small run of the test suite")
    ap.add_argument("--remeasure", metavar="NAMES",
                    help="comma-separated contestants to run again and merge into "
                         "results/engines.json (e.g. spark_groupby,spark_partitions)")
    ap.add_argument("--groups", default=None,
                    help="with --remeasure: comma-separated group counts (default: all)")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="with --remeasure: rounds")
    ap.add_argument("--large", metavar="ROWS,GROUPS",
                    help="with --remeasure: one larger data set, kept under 'large'")
    ap.add_argument("--project", metavar="NAMES",
                    help="fit and extrapolate the measured costs of these contestants to "
                         "1B rows / 100M groups (kept under 'projection')")
    args = ap.parse_args(argv)
    if args.project:
        print(json.dumps(project(args.project.split(",")), indent=2))
        return 0
    if args.remeasure:
        names = args.remeasure.split(",")
        unknown = sorted(set(names) - set(CONTESTANTS))
        if unknown:
            ap.error(f"unknown contestants {unknown}; known: {', '.join(CONTESTANTS)}")
        if args.large:
            n_rows, n_groups = (int(x) for x in args.large.split(","))
            _print(large(names, n_rows, n_groups, args.rounds))
            return 0
        groups = ([int(g) for g in args.groups.split(",")] if args.groups
                  else FULL["groups"])
        _print(remeasure(names, groups, args.rounds))
        return 0
    if args.child:
        spec = json.loads(Path(args.child).read_text())
        out = _child(spec)
        Path(spec["out"]).write_text(json.dumps(out))
        return 0
    full = not args.smoke
    res = run(full)
    path = write_result("engines", res, full)
    _print(res)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
