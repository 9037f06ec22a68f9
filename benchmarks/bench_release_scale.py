"""Benchmark: the release at scale — anonymize an IHIS-shaped table in and out of core.

An IHIS-shaped table (9 QIs with their interval/suppression hierarchies and a sensitive
column, seeded Zipf values: :func:`benchmarks.bench_lattice_scale.ihis_table`, written in
chunks of 2M rows) is written as Parquet at each size. Each path runs in a fresh process,
the paths alternated round by round, and the parent records its wall and CPU seconds and
peak resident memory (``wait4``):

* ``read_write`` — the baseline: a plain Parquet read + write of the same columns, batch by
  batch (what any release of these rows costs at least);
* ``memory`` — :func:`fastpriv.anonymize.lattice_search` / ``mondrian`` on the whole table
  and :meth:`~fastpriv.anonymize.Anonymized.write` (sizes up to ``--memory-max``);
* ``out_of_core`` — :func:`fastpriv.anonymize.release_out_of_core` (one pass into the
  histogram of distinct cells, the search on it, the release written from it and
  re-audited);
* ``duckdb``, ``dask``, ``spark`` (``--engines``) — ``pushdown.anonymize``,
  ``distributed.anonymize`` (Dask's threaded scheduler, 2 threads: a local cluster of 2
  worker processes stalled at 10M distinct rows, idle, while moving the partial tables)
  and ``spark.anonymize`` (``local[2]``, default driver memory): the engine counts the
  histogram.

Tasks: the lattice search with k = 5 at 0 % and 2 % suppression, and Mondrian with k = 5.
Each run's release is read back and its row count, group count and a content hash are
recorded: every path's release must equal the in-memory one (``equal_to_memory``), or the
out-of-core one where the in-memory path did not run.

    python -m benchmarks.bench_release_scale --rows 1000000,10000000 --rounds 1

writes ``benchmarks/results/release_scale.json``. Targets (2-core machine): out of core
≤ 2× the read + write, peak memory ≤ 2 GiB at 100M rows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks._common import write_result

TARGETS = {"out_of_core_vs_read_write": 2.0, "peak_gib_100m": 2.0}
TASKS = {"lattice_k5": {"method": "lattice", "min_size": 5, "suppression": 0.0},
         "lattice_k5_sup2": {"method": "lattice", "min_size": 5, "suppression": 0.02},
         "mondrian_k5": {"method": "mondrian", "min_size": 5}}
QI = [f"q{i}" for i in range(9)]
CHUNK = 2_000_000


def write_table(path: str, n_rows: int) -> dict[str, Any]:
    """Write the IHIS-shaped table of ``n_rows`` rows to ``path`` in chunks; its facts."""
    import pyarrow.parquet as pq

    from benchmarks.bench_lattice_scale import ihis_table

    writer = None
    for i, start in enumerate(range(0, n_rows, CHUNK)):
        table, _ = ihis_table(min(CHUNK, n_rows - start), seed=27 + i)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="zstd")
        writer.write_table(table, row_group_size=1 << 20)
    writer.close()
    return {"rows": n_rows, "bytes": os.path.getsize(path)}


def _hierarchies() -> dict[str, Any]:
    from benchmarks.bench_lattice_scale import IHIS_WIDTHS

    return {f"q{i}": w for i, w in enumerate(IHIS_WIDTHS)}


def child(path_kind: str, src: str, out: str, task: str) -> dict[str, Any]:
    """Inside a fresh process: one path of one task; what it wrote."""
    spec = dict(TASKS[task])
    method = spec.pop("method")
    kw: dict[str, Any] = {"qi": QI, "sensitive": "s", **spec}
    if method == "lattice":
        kw["hierarchies"] = _hierarchies()
    t0 = time.perf_counter()
    if path_kind == "read_write":
        import pyarrow.parquet as pq

        f = pq.ParquetFile(src)
        with pq.ParquetWriter(out, f.schema_arrow, compression="zstd") as w:
            for b in f.iter_batches(batch_size=1 << 20):
                w.write_batch(b)
        info: dict[str, Any] = {}
    elif path_kind == "memory":
        from fastpriv.anonymize import lattice_search, mondrian

        fn = lattice_search if method == "lattice" else mondrian
        res = fn(src, **kw)
        anon = getattr(res, "anonymized", res)
        anon.write(out, original=src)
        info = {"groups": anon.release.n_groups}
    else:
        r = _engine_run(path_kind, src, out, method, kw)
        info = {"groups": r.reaudit["n_groups"], "cells": r.n_cells, "holds": r.value,
                "phases_s": r.seconds}
    info["seconds_in_process"] = time.perf_counter() - t0
    info.update(_digest(out))
    return info


def _engine_run(path_kind: str, src: str, out: str, method: str, kw: dict) -> Any:
    """The out-of-core path, or an engine's anonymize counting the histogram where it is."""
    if path_kind == "out_of_core":
        from fastpriv.anonymize import release_out_of_core

        return release_out_of_core(src, output=out, method=method, **kw)
    if path_kind == "duckdb":
        from fastpriv import pushdown

        return pushdown.anonymize(src, output=out, method=method, **kw)
    if path_kind == "dask":
        # Dask's threaded scheduler: a local 2-process cluster stalled at 10M distinct rows
        import dask

        from fastpriv import distributed

        with dask.config.set(scheduler="threads", num_workers=2):
            return distributed.anonymize(src, output=out, method=method, **kw)
    if path_kind == "spark":
        from pyspark.sql import SparkSession

        from fastpriv import spark as fs

        session = (SparkSession.builder.master("local[2]").appName("release-scale")
                   .config("spark.ui.enabled", "false").getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
        try:
            return fs.anonymize(session.read.parquet(src), output=out, method=method, **kw)
        finally:
            session.stop()
    raise ValueError(path_kind)


def _digest(path: str) -> dict[str, Any]:
    """Rows of the written file and a hash of its content (equal files, equal hash)."""
    import hashlib

    import pyarrow.parquet as pq

    h = hashlib.sha256()
    rows = 0
    for b in pq.ParquetFile(path).iter_batches(batch_size=1 << 20):
        rows += b.num_rows
        for col in b.columns:
            for buf in col.buffers():
                if buf is not None:
                    h.update(memoryview(buf))
    return {"rows_written": rows, "content_sha256": h.hexdigest()[:16]}


def run(path_kind: str, src: str, task: str, tmp: str) -> dict[str, Any]:
    """One path in a fresh process: wall, CPU, peak RSS (wait4) and what it wrote."""
    out = os.path.join(tmp, f"{path_kind}-{task}.parquet")
    res = os.path.join(tmp, "child.json")
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_release_scale",
                             "--child", path_kind, src, out, task, res],
                            stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise RuntimeError(f"{path_kind} {task}: exit {rc}\n{err[-2000:]}")
    with open(res) as fh:
        info = json.load(fh)
    os.unlink(out)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_gib": usage.ru_maxrss / 2**20, "load_before": load, **info}


def measure(rows: list[int], rounds: int, memory_max: int, tasks: list[str],
            engines: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every size × task × path, ``rounds`` alternated rounds; medians and ratios."""
    import statistics

    out: dict[str, Any] = {"load_avg_start": os.getloadavg(), "sizes": []}
    for n in rows:
        with tempfile.TemporaryDirectory(prefix="release-scale-") as tmp:
            src = os.path.join(tmp, "ihis.parquet")
            facts = write_table(src, n)
            size: dict[str, Any] = {**facts, "tasks": {}}
            paths = (["read_write", "out_of_core"] + list(engines)
                     + (["memory"] if n <= memory_max else []))
            base = []
            for task in tasks:
                runs: dict[str, list] = {p: [] for p in paths}
                for r in range(rounds):
                    for p in (paths if r % 2 == 0 else paths[::-1]):
                        if p == "read_write" and base:
                            continue
                        one = run(p, src, task, tmp)
                        runs[p].append(one)
                        print(f"{n:>11,} {task:16s} {p:12s} {one['wall_s']:7.1f} s wall "
                              f"{one['cpu_s']:7.1f} s cpu {one['peak_gib']:5.2f} GiB "
                              f"{one.get('cells', '')}", flush=True)
                    if runs["read_write"]:
                        base = runs["read_write"]
                runs["read_write"] = base
                med = {p: {k: statistics.median(x[k] for x in rs)
                           for k in ("wall_s", "cpu_s", "peak_gib")} | {"runs": rs}
                       for p, rs in runs.items()}
                for p in med:
                    med[p]["rows_per_s"] = n / med[p]["wall_s"]
                    med[p]["vs_read_write"] = med[p]["wall_s"] / med["read_write"]["wall_s"]
                ref = runs["memory" if "memory" in runs else "out_of_core"][0]
                med["equal_to_memory" if "memory" in runs else "equal_to_out_of_core"] = {
                    p: rs[0]["content_sha256"] == ref["content_sha256"]
                    for p, rs in runs.items() if p not in ("read_write", "memory")}
                size["tasks"][task] = med
            out["sizes"].append(size)
    out["load_avg_end"] = os.getloadavg()
    return out


def _merged(sizes: list[dict]) -> list[dict]:
    """The existing result's sizes with this run's put in: a task's paths measured now
    replace the same paths, the others stay; each size lists every command that ran."""
    from benchmarks._common import RESULTS

    old = {s["rows"]: s for s in json.loads((RESULTS / "release_scale.json").read_text())
           ["sizes"]}
    for new in sizes:
        base = old.setdefault(new["rows"], {**new, "tasks": {}, "commands": []})
        base.setdefault("commands", [base.get("command") or "python -m "
                                     "benchmarks.bench_release_scale --rows "
                                     f"{new['rows']} (an earlier run; options not recorded)"])
        base["commands"].append(new["command"])
        for task, paths in new["tasks"].items():
            mine = base["tasks"].setdefault(task, {})
            for key, val in paths.items():
                if key.startswith("equal_to") and isinstance(mine.get(key), dict):
                    mine[key].update(val)
                else:
                    mine[key] = val
    return [old[n] for n in sorted(old)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="1000000,10000000")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--memory-max", type=int, default=10_000_000,
                    help="largest size the in-memory path runs at")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--engines", default="",
                    help="comma-separated engines whose anonymize also runs: duckdb, dask, "
                         "spark (local[2], default driver memory)")
    ap.add_argument("--append", action="store_true",
                    help="keep the sizes of the existing result file that this run does not "
                         "measure (each size records its own date, load and command)")
    ap.add_argument("--child", nargs=5, metavar=("PATH", "SRC", "OUT", "TASK", "RESULT"))
    a = ap.parse_args(argv)
    if a.child:
        kind, src, out, task, result = a.child
        with open(result, "w") as fh:
            json.dump(child(kind, src, out, task), fh)
        return 0
    payload = measure([int(x) for x in a.rows.split(",")], a.rounds, a.memory_max,
                      a.tasks.split(","), tuple(e for e in a.engines.split(",") if e))
    from benchmarks.bench_cold_start import _revision

    payload["revision"] = _revision()
    payload["command"] = "python -m benchmarks.bench_release_scale " + " ".join(
        argv if argv is not None else sys.argv[1:])
    for size in payload["sizes"]:
        size.update(command=payload["command"], load_avg=[payload["load_avg_start"],
                                                          payload["load_avg_end"]],
                    date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    if a.append:
        payload["sizes"] = _merged(payload["sizes"])
        payload["command"] += " (with --append: see each size's commands)"
    print(write_result("release_scale", payload, True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
