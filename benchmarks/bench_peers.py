"""Benchmark: fastpriv's documented path against DuckDB, Polars and a bare read.

What a data engineer would write instead of fastpriv is one query: ``GROUP BY group, value``
and a few aggregates. For each shape — rows × groups × grouping kind — one Parquet file is
written (seeded numpy), and four contestants compute the same four numbers from it:

* **fastpriv**: ``Release.from_table(path, group=… or qi=…, sensitive="value")`` then
  ``classic.audit(rel)`` (the release build and the audit are also timed apart);
* **duckdb**: one SQL query over ``read_parquet(path)`` (default threads = cores);
* **polars**: one lazy query over ``pl.scan_parquet(path)`` (default thread pool);
* **pyarrow_read**: ``pq.read_table(path, columns=[…])`` (multi-threaded), the bare scan.

The four numbers (definitions of ``fastpriv.classic`` / spec baselines.md):
k = min_g n_g; distinct ℓ = min_g |{x : n_g(x) > 0}|; entropy ℓ = exp(min_g H_g) with
H_g = −Σ_x p_g(x) ln p_g(x) = ln n_g − (Σ_x n_g(x) ln n_g(x)) / n_g; t (equal ground distance)
= max_g ½ Σ_x |p_g(x) − q(x)| where q is the whole file's distribution; over the values
present in g this is ½ (Σ_{x∈g} |p_g(x) − q(x)| + 1 − Σ_{x∈g} q(x)).
k and distinct ℓ must agree exactly, entropy ℓ and t to 1e-9 relative.

Shapes: grouping by (a) one int64 column ``gid`` in random row order, (b) one string column
``gname`` (the same ids as text), (c) three QI columns ``q1`` (int64), ``q2`` (string),
``q3`` (int32) whose distinct tuples are the groups; sensitive ``value``: 20 strings,
dictionary-encoded, Zipf-like frequencies. Full mode (``FASTPRIV_BENCH=full``): 10M rows ×
{10k, 1M, 10M} groups requested (10M ids drawn for 10M rows: 6.3M distinct) × {int,
string, qi} → ``peers.json`` (``FASTPRIV_BENCH_ROWS`` and ``FASTPRIV_BENCH_GROUPS`` change
the row and group counts; ``FASTPRIV_BENCH_ROWS=100000000 FASTPRIV_BENCH_GROUPS=10000,1000000``
→ ``peers_100m.json``); smoke: 200k rows, two shapes, in-process.

Full mode runs every (contestant, round) in a fresh subprocess, alternating contestants
within a round; the subprocess first runs its query on a file of the same shape at a
quarter of the rows (one-time costs: loading the compiled kernels that shape reaches from Numba's
cache, DuckDB/Polars start-up; first-call costs are measured by ``bench_cold_start``), then
times the real call and reports its peak RSS (``VmHWM``: the whole process, imports
included) and the RSS before the call.
The minimum and the median of the rounds are reported, and every ratio is between times of
the same run. Peak memory at 100M rows is a separate hand-run
(``python -m benchmarks.bench_peers memory 100000000 int,string 1000000,10000000``,
``peers_memory.json``).
A cProfile of one warm ``Release.from_table`` per shape (in the driver process)
splits the release build into phases: the pipelined scan (the wait for the Parquet reader
thread, key encoding, sensitive encoding, counting) and the profile build.

First-call mode (``python -m benchmarks.bench_peers first-call --rows
1000000,10000000,20000000 --rounds 5`` → ``peers_first_call.json``): every (contestant,
round) is a fresh process that imports its library and makes its one call on the real file,
no warm-up call, alternated within a round (fastpriv, DuckDB, Polars; ``--with-read`` adds
the bare read). Timed: the whole process, spawn to exit (``wall_s``), and the call alone
(``call_s``), with the start-up, the imports and the exit between them. fastpriv's kernel
cache is warm (``fastpriv warmup`` into the run's own cache, then one uncounted process per
shape): a cached first call, as a user's after ``fastpriv warmup``; every counted process's
compiles are recorded (``fastpriv_kernel_loads.compiled``, 0). Each process is profiled by
phase by ``bench_cold_start.run_phases`` (CPU seconds of the imports per package, the kernel
loads, the work, the exit: ``fastpriv_cpu_phases``), and fastpriv's wall is split into
start-up, imports, ``Release.from_table`` (of which kernel loads) and ``classic.audit`` and
exit (``fastpriv_wall_split_median_s``). Where fastpriv's wall is not below DuckDB's, one
more fresh process runs the first call under cProfile (``first_call_profile``: imports,
kernel loads, the release build's phases, the top functions). Shapes: int / string / qi ×
10k and 1M groups at 1M, 10M and 20M rows; a shape whose predicted time exceeds
``--max-shape-s`` is skipped and listed in ``skipped``; ``--append`` keeps the shapes of the
file's earlier run and replaces those measured again.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import RESULTS, write_result

ROOT = Path(__file__).resolve().parent.parent
N_VALUES = 20
SENSITIVE = "value"
KINDS = {"int": {"group": "gid"}, "string": {"group": "gname"},
         "qi": {"qi": ["q1", "q2", "q3"]}}
CONTESTANTS = ("fastpriv", "duckdb", "polars", "pyarrow_read")
RTOL = 1e-9


# ----------------------------------------------------------------------------- data

def _qi_dims(n_groups: int) -> tuple[int, int, int]:
    """Three factor sizes whose product is ``n_groups`` (10k → 10·20·50, 1M → 50·100·200)."""
    a = max(2, round(n_groups ** (1 / 3) / 2))
    b = max(2, round((n_groups / a) ** 0.5 / 1.4))
    c = -(-n_groups // (a * b))
    return a, b, c


def write_shape(path: str, n_rows: int, n_groups: int, kind: str, seed: int = 0) -> dict:
    """Write one shape's Parquet file; returns the columns the contestants read."""
    import numpy as np  # here, not at the top: a first-call child imports only its library
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    gid = rng.integers(0, n_groups, n_rows, dtype=np.int64)          # random row order
    w = 1.0 / np.arange(1, N_VALUES + 1) ** 0.8                       # Zipf-like values
    vcodes = rng.choice(N_VALUES, size=n_rows, p=w / w.sum()).astype(np.int8)
    labels = pa.array([f"diagnosis_{i:02d}" for i in range(N_VALUES)])
    cols: dict[str, Any] = {SENSITIVE: pa.DictionaryArray.from_arrays(pa.array(vcodes), labels)}
    if kind == "int":
        cols["gid"] = pa.array(gid)
    elif kind == "string":
        cols["gname"] = pc.binary_join_element_wise("g", pa.array(gid).cast(pa.string()), "")
    else:
        a, b, _ = _qi_dims(n_groups)
        cols["q1"] = pa.array(gid % a)
        cols["q2"] = pc.binary_join_element_wise(
            "zip", pa.array((gid // a) % b).cast(pa.string()), "")
        cols["q3"] = pa.array((gid // (a * b)).astype(np.int32))
    pq.write_table(pa.table(cols), path)
    keys = KINDS[kind].get("qi") or [KINDS[kind]["group"]]
    return {"keys": keys, "columns": keys + [SENSITIVE], "kind": kind}


# ----------------------------------------------------------------------------- contestants

def _fastpriv(path: str, spec: dict) -> tuple[dict, dict]:
    from fastpriv import Release, classic

    kw = dict(KINDS[spec["kind"]])
    t0 = time.perf_counter()
    rel = Release.from_table(path, sensitive=SENSITIVE, **kw)
    t1 = time.perf_counter()
    models = classic.audit(rel).to_dict()["models"]
    t2 = time.perf_counter()
    vals = {"k": models["k_anonymity"]["value"], "distinct_l": models["l_diversity"]["value"],
            "entropy_l": models["entropy_l_diversity"]["value"],
            "t": models["t_closeness"]["value"], "n_groups": rel.n_groups}
    return vals, {"release_s": t1 - t0, "audit_s": t2 - t1}


def _sql(keys: list[str]) -> str:
    g = ", ".join(keys)
    on = " AND ".join(f"c.{k} = s.{k}" for k in keys)
    cg = ", ".join(f"c.{k}" for k in keys)
    return f"""
    WITH c AS (SELECT {g}, {SENSITIVE} AS v, count(*) AS n FROM read_parquet(?)
               GROUP BY {g}, {SENSITIVE}),
         tot AS (SELECT sum(n)::DOUBLE AS total FROM c),
         q AS (SELECT v, sum(n) / any_value(total) AS q FROM c, tot GROUP BY v),
         s AS (SELECT {g}, sum(n) AS ng FROM c GROUP BY {g}),
         per AS (SELECT count(*) AS d, any_value(s.ng) AS ng,
                        ln(any_value(s.ng)) - sum(c.n * ln(c.n)) / any_value(s.ng) AS h,
                        0.5 * (sum(abs(c.n / s.ng - q.q)) + 1 - sum(q.q)) AS t
                 FROM c JOIN s ON {on} JOIN q ON c.v = q.v GROUP BY {cg})
    SELECT min(ng) AS k, min(d) AS distinct_l, exp(min(h)) AS entropy_l, max(t) AS t,
           count(*) AS n_groups FROM per"""


def _duckdb(path: str, spec: dict) -> tuple[dict, dict]:
    import duckdb

    con = duckdb.connect()
    row = con.execute(_sql(spec["keys"]), [path]).fetchone()
    con.close()
    return dict(zip(("k", "distinct_l", "entropy_l", "t", "n_groups"), row, strict=True)), {}


def _polars(path: str, spec: dict) -> tuple[dict, dict]:
    import polars as pl

    keys = spec["keys"]
    c = (pl.scan_parquet(path).select(keys + [SENSITIVE])
         .group_by(keys + [SENSITIVE]).agg(pl.len().cast(pl.Int64).alias("n")))
    q = c.group_by(SENSITIVE).agg(pl.col("n").sum()).with_columns(
        (pl.col("n") / pl.col("n").sum()).alias("q")).select(SENSITIVE, "q")
    per = (c.join(q, on=SENSITIVE)
           .with_columns(pl.col("n").sum().over(keys).alias("ng"))
           .group_by(keys)
           .agg(pl.len().alias("d"), pl.col("ng").first(),
                (pl.col("ng").first().cast(pl.Float64).log()
                 - (pl.col("n") * pl.col("n").cast(pl.Float64).log()).sum()
                 / pl.col("ng").first()).alias("h"),
                (0.5 * ((pl.col("n") / pl.col("ng") - pl.col("q")).abs().sum()
                        + 1 - pl.col("q").sum())).alias("t")))
    out = per.select(pl.col("ng").min().alias("k"), pl.col("d").min().alias("distinct_l"),
                     pl.col("h").min().exp().alias("entropy_l"), pl.col("t").max().alias("t"),
                     pl.len().alias("n_groups")).collect()
    return {k: out[k][0] for k in out.columns}, {}


def _pyarrow_read(path: str, spec: dict) -> tuple[dict, dict]:
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=spec["columns"])
    return {"rows": t.num_rows}, {}


RUNNERS = {"fastpriv": _fastpriv, "duckdb": _duckdb, "polars": _polars,
           "pyarrow_read": _pyarrow_read}


def _status_kib(field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of this process in KiB (0 where /proc is unavailable)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _peak_kib() -> int:
    """Peak RSS of this process image. ``VmHWM`` first: ``ru_maxrss`` of a child started by
    fork+exec also counts the parent's memory at the fork, so it would charge every
    contestant with the benchmark driver's own peak."""
    return _status_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_one(name: str, path: str, spec: dict, warm_path: str | None = None) -> dict:
    """Time one contestant on ``path`` (after a warm-up call on ``warm_path``)."""
    if warm_path is not None:
        RUNNERS[name](warm_path, spec)
    rss_before = _status_kib("VmRSS")
    t0 = time.perf_counter()
    vals, parts = RUNNERS[name](path, spec)
    dt = time.perf_counter() - t0
    return {"s": dt, "values": {k: (v.item() if hasattr(v, "item") else v)
                                for k, v in vals.items()}, **parts,
            "rss_before_mib": rss_before / 1024,
            "peak_rss_mib": _peak_kib() / 1024}


def _in_subprocess(name: str, path: str, spec: dict, warm_path: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    out = subprocess.run([sys.executable, "-m", "benchmarks.bench_peers", name, path,
                          json.dumps(spec), warm_path], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- checks

def check_agree(results: dict[str, dict]) -> None:
    """k, distinct ℓ and the group count exactly; entropy ℓ and t to ``RTOL`` relative."""
    ref = results["fastpriv"]["values"]
    for name in ("duckdb", "polars"):
        got = results[name]["values"]
        for key in ("k", "distinct_l", "n_groups"):
            assert int(got[key]) == int(ref[key]), (name, key, got[key], ref[key])
        for key in ("entropy_l", "t"):
            assert abs(got[key] - ref[key]) <= RTOL * abs(ref[key]), (name, key, got[key],
                                                                      ref[key])


def _cum(st: pstats.Stats, func: str, file: str, caller: str | None = None) -> float:
    """Cumulative seconds of ``file:func`` (only the calls made by ``caller``, if given)."""
    total = 0.0
    for (fname, _, name), (_, _, _, ct, callers) in st.stats.items():
        if name != func or not fname.endswith(file):
            continue
        if caller is None:
            total += ct
        else:
            total += sum(v[3] for k, v in callers.items() if k[2] == caller)
    return total


def _time_partitioned_count(spent: list[float]) -> Any:
    """Wrap ``counting.dense_add_partitioned`` (it runs on a thread cProfile misses) to add
    its seconds to ``spent[0]``; returns the real kernel."""
    import threading

    from fastpriv._kernels import counting

    real, lock = counting.dense_add_partitioned, threading.Lock()

    def timed(*args: Any) -> Any:
        t = time.perf_counter()
        try:
            return real(*args)
        finally:
            with lock:
                spent[0] += time.perf_counter() - t

    counting.dense_add_partitioned = timed
    return real


def _profiled(path: str, kw: dict) -> tuple[cProfile.Profile, float, float, float, float]:
    """One profiled ``Release.from_table``: (profile, wall, CPU of all threads, CPU of
    the calling thread, seconds in the partitioned count on any thread).

    cProfile sees the calling thread only; a large state is counted on the scan's counter
    thread (``_Scan.counter``), so that kernel is timed by a wrapper instead.
    """

    from fastpriv import Release
    from fastpriv._kernels import counting

    spent = [0.0]
    real = _time_partitioned_count(spent)
    prof = cProfile.Profile()
    try:
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        prof.enable()
        Release.from_table(path, sensitive=SENSITIVE, **kw)
        prof.disable()
        wall, cpu, main = (time.perf_counter() - t0, time.process_time() - c0,
                           time.thread_time() - m0)
    finally:
        counting.dense_add_partitioned = real
    return prof, wall, cpu, main, spent[0]


def _release_phases(st: pstats.Stats, wall: float, partitioned: float) -> dict[str, float]:
    """Seconds per phase of one profiled ``Release.from_table`` (``wall``: its wall time;
    ``partitioned``: seconds in the partitioned count, timed on any thread)."""
    ingest, counting = "_ingest.py", "counting.py"
    scan = _cum(st, "_run_scan", ingest)
    return {
        "total": wall,
        "scan (read + encode + count, pipelined)": scan,
        "  of which waiting for the reader thread (Parquet decode)":
            _cum(st, "result", "_base.py", caller="_parquet_batches"),
        "  of which decoding on the calling thread (first row group, stolen ones)":
            _cum(st, "_steal", "_arrow.py") + _cum(st, "_load_split", "_arrow.py"),
        "  of which waiting for the key worker (string hashing and bucketing)":
            _cum(st, "result", "_base.py", caller="encode_unordered"),
        "  of which group key encoding (KeyCodes.encode)": _cum(st, "encode", ingest,
                                                                caller="add"),
        "    of which exact string hash map (str_map, str_map_records kernels)":
            _cum(st, "str_map", counting) + _cum(st, "str_map_records", "counting_radix.py"),
        "    of which integer maps (direct_map / hash_map kernels)":
            _cum(st, "direct_map", counting) + _cum(st, "direct_map_from", counting)
            + _cum(st, "hash_map", counting),
        "  of which sensitive encoding (LabelCodes.encode_pair)": _cum(st, "encode_pair",
                                                                      ingest, caller="add"),
        "  of which counting (dense_add kernels; large states on the counter thread)":
            _cum(st, "dense_add", counting) + _cum(st, "dense_add_coded", counting)
            + partitioned,
        "  of which waiting for the counter thread": _cum(st, "result", "_base.py",
                                                          caller="settle"),
        "  of which growing the count matrix (_regrid)": _cum(st, "_regrid", ingest),
        "profile build (_Scan.profile)": _cum(st, "profile", ingest),
        "  of which label sort and group order (KeyCodes.canonical)":
            _cum(st, "canonical", ingest),
        "  of which CSR from the dense state (dense_profiles_gathered, threads)":
            _cum(st, "dense_profiles_gathered", counting),
        "  of which sparse fallback (count_pairs)": _cum(st, "count_pairs", counting),
    }


def _top_functions(st: pstats.Stats, top: int, key: str = "own_s") -> list[dict]:
    """The ``top`` functions of a profile by own (``own_s``) or cumulative seconds."""
    rows = []
    for (fname, line, func), (_, ncalls, tottime, cumtime, _) in st.stats.items():
        rows.append({"function": f"{Path(fname).name}:{line}({func})", "calls": ncalls,
                     "own_s": round(tottime, 4), "cumulative_s": round(cumtime, 4)})
    rows.sort(key=lambda r: -r[key])
    return rows[:top]


def _profile_release(path: str, spec: dict, warm_path: str, top: int = 10) -> dict:
    """cProfile of a warm ``Release.from_table`` (the fastest of three): seconds per phase,
    CPU per thread, and the heaviest functions by own time. Threads other than the
    caller's (pyarrow's reader) are inside the calls that wait for them."""
    from fastpriv import Release

    kw = dict(KINDS[spec["kind"]])
    Release.from_table(warm_path, sensitive=SENSITIVE, **kw)     # JIT / cache load
    prof, wall, cpu, main, partitioned = min((_profiled(path, kw) for _ in range(3)),
                                             key=lambda x: x[1])
    st = pstats.Stats(prof)
    phases = _release_phases(st, wall, partitioned)
    rows = _top_functions(st, top)
    cores = {"wall": wall, "cpu, all threads": cpu, "cpu, calling thread": main,
             "cpu, other threads (Parquet decoder, key worker, profile chunks)": cpu - main}
    return {"phases_s": {k: round(v, 4) for k, v in phases.items()},
            "cpu_s": {k: round(v, 4) for k, v in cores.items()}, "top_own_time": rows}


# ----------------------------------------------------------------------------- benchmark

def _shapes(full: bool) -> list[tuple[int, int, str]]:
    if not full:
        return [(200_000, 10_000, "int"), (200_000, 1_000, "qi")]
    rows = [int(x) for x in os.environ.get("FASTPRIV_BENCH_ROWS", "10000000").split(",")]
    groups = [int(x) for x in os.environ.get("FASTPRIV_BENCH_GROUPS",
                                             "10000,1000000,10000000").split(",")]
    return [(n, g, kind) for n in rows for g in groups for kind in KINDS]


def _summary(times: dict[str, list[float]]) -> tuple[dict, dict]:
    mins = {k: min(v) for k, v in times.items()}
    meds = {k: statistics.median(v) for k, v in times.items()}
    return mins, meds


def run_shape(root: str, n_rows: int, n_groups: int, kind: str, full: bool) -> dict:
    path = os.path.join(root, f"{n_rows}_{n_groups}_{kind}.parquet")
    t0 = time.perf_counter()
    spec = write_shape(path, n_rows, n_groups, kind)
    write_s = time.perf_counter() - t0
    warm = os.path.join(root, f"warm_{kind}.parquet")
    # full mode: the same shape at a quarter of the rows reaches the same kernels (their
    # cache load stays out of the timing, as DuckDB's and Polars' start-up does)
    write_shape(warm, n_rows // 4 if full else 2_000, n_groups if full else 100, kind, seed=1)
    rounds = 5 if full else 1
    times: dict[str, list[float]] = {c: [] for c in CONTESTANTS}
    parts: dict[str, list[float]] = {"release_s": [], "audit_s": []}
    peaks: dict[str, float] = {}
    before: dict[str, float] = {}
    last: dict[str, dict] = {}
    for r in range(rounds):
        order = CONTESTANTS[r % 4:] + CONTESTANTS[:r % 4]   # rotate who goes first
        for name in order:
            res = (_in_subprocess(name, path, spec, warm) if full
                   else run_one(name, path, spec, warm))
            times[name].append(res["s"])
            if name == "fastpriv":
                parts["release_s"].append(res["release_s"])
                parts["audit_s"].append(res["audit_s"])
            peaks[name] = max(peaks.get(name, 0.0), res["peak_rss_mib"])
            before[name] = res["rss_before_mib"]
            last[name] = res
    check_agree(last)
    mins, meds = _summary(times)
    fp = mins["fastpriv"]
    out = {"rows": n_rows, "groups_requested": n_groups, "kind": kind,
           "grouping": KINDS[kind], "parquet_mib": os.path.getsize(path) / 2**20,
           "write_s": write_s, "rounds": rounds, "times_s": times, "min_s": mins,
           "median_s": meds,
           "fastpriv_parts_min_s": {k: min(v) for k, v in parts.items()},
           "fastpriv_parts_median_s": {k: statistics.median(v) for k, v in parts.items()},
           "ratios_min": {"fastpriv/duckdb": fp / mins["duckdb"],
                          "fastpriv/polars": fp / mins["polars"],
                          "fastpriv/pyarrow_read": fp / mins["pyarrow_read"],
                          "release/pyarrow_read": min(parts["release_s"]) / mins["pyarrow_read"]},
           "ratios_median": {"fastpriv/duckdb": meds["fastpriv"] / meds["duckdb"],
                             "fastpriv/polars": meds["fastpriv"] / meds["polars"],
                             "fastpriv/pyarrow_read": meds["fastpriv"] / meds["pyarrow_read"]},
           "peak_rss_mib": peaks if full else None,
           "rss_before_call_mib": before if full else None,
           "values": last["fastpriv"]["values"], "values_agree": True}
    if full:
        out["release_profile"] = _profile_release(path, spec, warm)
    os.remove(path)
    return out


def _shape_label(s: dict) -> str:
    """``10M/10000/int``: rows, groups requested, kind."""
    return f"{s['rows'] / 1e6:g}M/{s['groups_requested']}/{s['kind']}"


def _table(shapes: list[dict]) -> str:
    head = (f"{'shape':<26}{'fastpriv':>9}{'(rel':>7}{'+aud)':>7}{'duckdb':>8}{'polars':>8}"
            f"{'read':>7}{'fp/duck':>9}{'fp/pol':>8}{'fp/read':>8}{'peakMiB fp/dk/pl/rd':>22}")
    lines = [head]
    for s in shapes:
        m, r, p = s["min_s"], s["ratios_min"], s["fastpriv_parts_min_s"]
        pk = s["peak_rss_mib"]
        pk_s = "/".join(f"{pk[c]:.0f}" for c in CONTESTANTS) if pk else "-"
        lines.append(
            _shape_label(s).ljust(26)
            + f"{m['fastpriv']:9.3f}{p['release_s']:7.3f}{p['audit_s']:7.3f}"
            + f"{m['duckdb']:8.3f}{m['polars']:8.3f}{m['pyarrow_read']:7.3f}"
            + f"{r['fastpriv/duckdb']:9.2f}{r['fastpriv/polars']:8.2f}"
            + f"{r['fastpriv/pyarrow_read']:8.2f}{pk_s:>22}")
    return "\n".join(lines)


def _command(full: bool) -> str:
    if not full:
        return "python -m pytest -q benchmarks/bench_peers.py"
    env = "".join(f"{k}={os.environ[k]} " for k in ("FASTPRIV_BENCH_ROWS",
                                                   "FASTPRIV_BENCH_GROUPS")
                  if k in os.environ)
    return f"FASTPRIV_BENCH=full {env}python -m pytest -q -s benchmarks/bench_peers.py"


def _result_name(shapes: list[dict]) -> str:
    """``peers`` for the 10M-row shapes, ``peers_100m`` etc. for other row counts."""
    rows = sorted({s["rows"] for s in shapes})
    if rows == [10_000_000]:
        return "peers"
    return "peers_" + "_".join(f"{n // 10**6}m" if n % 10**6 == 0 else str(n) for n in rows)


def bench_peers(benchmark, full):
    root = tempfile.mkdtemp(prefix="fastpriv-peers-")
    try:
        shapes = []
        for n_rows, n_groups, kind in _shapes(full):
            shapes.append(run_shape(root, n_rows, n_groups, kind, full))
            print(_table(shapes[-1:]), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n" + _table(shapes))
    write_result(_result_name(shapes) if full else "peers", {
        "command": _command(full),
        "contestants": {
            "fastpriv": "Release.from_table(path, group=|qi=, sensitive=) + classic.audit",
            "duckdb": "one SQL query over read_parquet (default threads)",
            "polars": "one lazy query over scan_parquet (default thread pool)",
            "pyarrow_read": "pq.read_table(path, columns=[keys, value]), multi-threaded"},
        "note": "min and median of alternated rounds; full mode: one fresh subprocess per "
                "(contestant, round), warmed first on the same shape at a quarter of the rows; "
                "peak RSS = VmHWM of "
                "that process (imports included). The machine's cores are shared with other "
                "jobs: only ratios within this run are meaningful.",
        "cores": os.cpu_count(), "shapes": shapes}, full)
    assert shapes
    benchmark.extra_info["shapes"] = len(shapes)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


# ----------------------------------------------------------------------------- peak memory

def _release_memory(path: str, kind: str, warm: str) -> dict:
    """One warm ``Release.from_table`` in this process: its peak RSS growth and the release's
    own arrays (``row_group`` and the CSR profile)."""
    from fastpriv import Release

    kw = dict(KINDS[kind])
    Release.from_table(warm, sensitive=SENSITIVE, **kw)
    before = _status_kib("VmRSS")
    t0 = time.perf_counter()
    rel = Release.from_table(path, sensitive=SENSITIVE, **kw)
    dt = time.perf_counter() - t0
    peak = _status_kib("VmHWM")
    own = sum(a.nbytes for a in (rel.row_group, rel.indptr, rel.codes, rel.counts, rel.sizes))
    growth = (peak - before) / 1024
    return {"release_s": dt, "rss_before_mib": before / 1024, "peak_rss_mib": peak / 1024,
            "growth_mib": growth, "release_arrays_mib": own / 2**20,
            "beyond_release_mib": growth - own / 2**20, "n_groups": rel.n_groups}


def memory_run(n_rows: int, kinds: list[str], root: str,
               groups: tuple[int, ...] = (1_000_000,)) -> None:
    """Peak RSS of ``Release.from_table`` on ``n_rows`` rows per group count and kind.

    Hand-run (``python -m benchmarks.bench_peers memory 100000000 int,string
    1000000,10000000``): one fresh process per shape, files kept in ``root`` between runs;
    writes ``peers_memory.json``.
    """
    os.makedirs(root, exist_ok=True)
    rows = []
    for n_groups, kind in [(g, k) for g in groups for k in kinds]:
        path = os.path.join(root, f"{n_rows}_{n_groups}_{kind}.parquet")
        if not os.path.exists(path):
            write_shape(path, n_rows, n_groups, kind)
        warm = os.path.join(root, f"warm_{kind}.parquet")
        write_shape(warm, 2_000, 100, kind, seed=1)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_peers", "memory-child",
                              path, kind, warm], cwd=ROOT, env=env, check=True,
                             capture_output=True, text=True)
        res = {"rows": n_rows, "groups_requested": n_groups, "kind": kind,
               **json.loads(out.stdout.strip().splitlines()[-1])}
        print(json.dumps(res), flush=True)
        rows.append(res)
    write_result("peers_memory", {
        "command": f"python -m benchmarks.bench_peers memory {n_rows} {','.join(kinds)} "
                   f"{','.join(map(str, groups))}",
        "note": "peak RSS growth (VmHWM - VmRSS before the call) of one warm "
                "Release.from_table on a Parquet path, in a fresh process; beyond_release = "
                "growth - the release's own arrays (row_group, indptr, codes, counts, sizes)",
        "shapes": rows}, True)


# ----------------------------------------------------------------------------- first call

#: The contestants of the first-call mode: each a fresh process that imports its library and
#: makes its one call on the real file.
FIRST_CONTESTANTS = ("fastpriv", "duckdb", "polars")
FIRST_ROWS = (1_000_000, 10_000_000, 20_000_000)
FIRST_GROUPS = (10_000, 1_000_000)


def _mono() -> float:
    """CLOCK_MONOTONIC: one clock for the parent and its child processes."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def _import_contestant(name: str) -> None:
    if name == "fastpriv":
        from fastpriv import Release, classic  # noqa: F401
    elif name == "duckdb":
        import duckdb  # noqa: F401
    elif name == "polars":
        import polars  # noqa: F401
    elif name == "pyarrow_read":
        import pyarrow.parquet  # noqa: F401


def _time_kernel_loads(acc: dict[str, float]) -> None:
    """Wrap ``Dispatcher.compile`` (a cached kernel's load, or a compile): its wall seconds
    on the calling thread (outermost calls only) and on other threads, and the calls."""
    import threading

    from numba.core.dispatcher import Dispatcher

    real = Dispatcher.compile
    main = threading.get_ident()
    depth = threading.local()

    def timed_compile(self: Any, sig: Any) -> Any:
        level = getattr(depth, "n", 0)
        depth.n = level + 1
        t = time.perf_counter()
        try:
            return real(self, sig)
        finally:
            depth.n = level
            acc["calls"] += 1
            if level == 0:
                key = "main_s" if threading.get_ident() == main else "other_threads_s"
                acc[key] += time.perf_counter() - t

    Dispatcher.compile = timed_compile


def _first_child(name: str, path: str, spec_json: str, out: str, profile: str = "") -> None:
    """Inside a fresh process: import ``name``'s library, then its one call on ``path``.

    Writes the values and the wall clock at each step (CLOCK_MONOTONIC, comparable with the
    parent's) to ``out``; ``profile``: a cProfile of imports + call (the calling thread) with
    the release build's phases and the heaviest functions.
    """
    t_main = _mono()
    spec = json.loads(spec_json)
    prof = cProfile.Profile() if profile else None
    loads = {"calls": 0, "main_s": 0.0, "other_threads_s": 0.0}
    partitioned = [0.0]
    if prof is not None:
        prof.enable()
    t_imp = _mono()
    _import_contestant(name)
    if name == "fastpriv":
        _time_kernel_loads(loads)
        if prof is not None:       # the partitioned count runs on a thread cProfile misses
            _time_partitioned_count(partitioned)
    t_call = _mono()
    vals, parts = RUNNERS[name](path, spec)
    t_done = _mono()
    if prof is not None:
        prof.disable()
    res: dict[str, Any] = {
        "values": {k: (v.item() if hasattr(v, "item") else v) for k, v in vals.items()},
        "t_main": t_main, "imports_s": t_call - t_imp, "call_s": t_done - t_call,
        "t_done": t_done, "peak_rss_mib": _peak_kib() / 1024, **parts}
    if name == "fastpriv":
        res["kernel_loads"] = loads
    if prof is not None:
        st = pstats.Stats(prof)
        imports = max((v[3] for k, v in st.stats.items() if k[2] == "_find_and_load"),
                      default=0.0)
        res["profile"] = {
            "calling_thread_s": {
                "imports (all, before and inside the call)": round(imports, 4),
                "kernel loads (Dispatcher.compile)": round(_cum(st, "timed_compile",
                                                                "bench_peers.py"), 4),
                "Release.from_table": round(_cum(st, "from_table", "release.py"), 4),
                "classic.audit": round(_cum(st, "audit", "classic.py"), 4)},
            "release_phases_s": ({k: round(v, 4) for k, v in _release_phases(
                st, parts.get("release_s", 0.0), partitioned[0]).items()}
                if name == "fastpriv" else {}),
            "top_own_time": _top_functions(st, 25),
            "top_cumulative": _top_functions(st, 40, "cumulative_s")}
    with open(out, "w") as fh:
        json.dump(res, fh)


def _fresh_call(name: str, path: str, spec: dict, *, cache: str, pyc: str, cwd: str,
                profile: bool = False) -> dict:
    """One contestant's first call in a fresh process (profiled by phase: ``run_phases``).

    ``wall_s``: spawn to exit; ``startup_s``: spawn to the child's first line of benchmark
    code (interpreter, site, the phase recorder); ``imports_s``; ``call_s``: the one call;
    ``exit_s``: the call's end to the process's exit (teardown)."""
    from benchmarks.bench_cold_start import run_phases

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        load = os.getloadavg()[0]
        spawn = _mono()
        r = run_phases("module", "benchmarks.bench_peers",
                       ["first-call-child", name, path, json.dumps(spec), out]
                       + (["profile"] if profile else []), cache=cache, cwd=cwd, bytecode=pyc)
        if r["rc"] != 0 or not os.path.exists(out):
            raise RuntimeError(f"{name} on {path}: rc={r['rc']} {r['stderr_tail']}")
        with open(out) as fh:
            child = json.load(fh)
    t_main, t_done = child.pop("t_main"), child.pop("t_done")
    child.update(wall_s=r["wall_s"], startup_s=t_main - spawn,
                 exit_s=r["wall_s"] - (t_done - spawn), cpu_s=r["cpu_s"],
                 phases_s=r["phases_s"], kernels=r["kernels"], compiled=r["compiled"],
                 load_avg_before=load)
    return child


def _median_of(runs: list[dict], key: str) -> float:
    return round(statistics.median(x[key] for x in runs), 4)


def _first_shape(root: str, n_rows: int, n_groups: int, kind: str, rounds: int, *,
                 cache: str, pyc: str, contestants: tuple[str, ...], prime_all: bool,
                 profile: bool) -> dict:
    """One shape of the first-call mode: the file, a priming process per contestant (not
    counted: fills fastpriv's kernel cache for this shape, the page cache with the libraries),
    then ``rounds`` rounds of one fresh process per contestant, alternated."""
    from benchmarks.bench_cold_start import FRESH_PHASES
    from benchmarks.bench_cold_start import _summary as _phase_summary

    path = os.path.join(root, f"{n_rows}_{n_groups}_{kind}.parquet")
    t0 = time.perf_counter()
    spec = write_shape(path, n_rows, n_groups, kind)
    write_s = time.perf_counter() - t0
    t_shape = time.perf_counter()
    prime = {}
    for name in contestants:
        if name == "fastpriv" or prime_all:
            p = _fresh_call(name, path, spec, cache=cache, pyc=pyc, cwd=root)
            prime[name] = {"wall_s": round(p["wall_s"], 4), "kernels": p["kernels"],
                           "compiled": p["compiled"]}
    runs: dict[str, list[dict]] = {c: [] for c in contestants}
    for r in range(rounds):
        k = r % len(contestants)
        for name in contestants[k:] + contestants[:k]:      # rotate who goes first
            runs[name].append(_fresh_call(name, path, spec, cache=cache, pyc=pyc, cwd=root))
    check_agree({c: rs[-1] for c, rs in runs.items() if c != "pyarrow_read"})
    per: dict[str, Any] = {}
    for name, rs in runs.items():
        per[name] = {key: [round(x[key], 4) for x in rs]
                     for key in ("wall_s", "startup_s", "imports_s", "call_s", "exit_s",
                                 "cpu_s", "peak_rss_mib", "load_avg_before")}
    mins = {c: min(per[c]["wall_s"]) for c in contestants}
    meds = {c: statistics.median(per[c]["wall_s"]) for c in contestants}
    cmin = {c: min(per[c]["call_s"]) for c in contestants}
    cmed = {c: statistics.median(per[c]["call_s"]) for c in contestants}
    fp = runs["fastpriv"]
    loads = [x["kernel_loads"] for x in fp]
    split = {"startup (interpreter, site, recorder)": _median_of(fp, "startup_s"),
             "imports (numpy, numba, pyarrow, fastpriv)": _median_of(fp, "imports_s"),
             "Release.from_table (scan + profile build, kernel loads included)":
                 _median_of(fp, "release_s"),
             "  of which kernel loads (Dispatcher.compile, calling thread)":
                 round(statistics.median(x["main_s"] for x in loads), 4),
             "classic.audit": _median_of(fp, "audit_s"),
             "exit (teardown)": _median_of(fp, "exit_s"),
             "wall (spawn to exit)": _median_of(fp, "wall_s")}
    out: dict[str, Any] = {
        "rows": n_rows, "groups_requested": n_groups, "kind": kind, "grouping": KINDS[kind],
        "parquet_mib": round(os.path.getsize(path) / 2**20, 2), "write_s": round(write_s, 2),
        "rounds": rounds, "prime": prime, "fresh": per,
        "min_wall_s": mins, "median_wall_s": meds, "min_call_s": cmin, "median_call_s": cmed,
        "ratios": {f"fastpriv/{c}": {"min_wall": round(mins["fastpriv"] / mins[c], 3),
                                     "median_wall": round(meds["fastpriv"] / meds[c], 3),
                                     "min_call": round(cmin["fastpriv"] / cmin[c], 3)}
                   for c in contestants if c != "fastpriv"},
        "fastpriv_wall_split_median_s": split,
        "fastpriv_cpu_phases": {**_phase_summary(fp), "phases": list(FRESH_PHASES)},
        "fastpriv_kernel_loads": {"loaded": max(x["kernels"] for x in fp),
                                  "compiled": max(x["compiled"] for x in fp),
                                  "other_threads_s_median": round(statistics.median(
                                      x["other_threads_s"] for x in loads), 4)},
        "values": fp[-1]["values"], "values_agree": True}
    if "duckdb" in contestants:
        out["ahead_of_duckdb"] = {"median_wall": meds["fastpriv"] < meds["duckdb"],
                                  "min_wall": mins["fastpriv"] < mins["duckdb"]}
        if profile and not (out["ahead_of_duckdb"]["median_wall"]
                            and out["ahead_of_duckdb"]["min_wall"]):
            p = _fresh_call("fastpriv", path, spec, cache=cache, pyc=pyc, cwd=root,
                            profile=True)
            out["first_call_profile"] = {
                "note": "cProfile of imports + call in a fresh process (calling thread "
                        "only; profiled, so slower than the timed runs)",
                "wall_s": round(p["wall_s"], 4), "imports_s": round(p["imports_s"], 4),
                "call_s": round(p["call_s"], 4), "release_s": round(p["release_s"], 4),
                "audit_s": round(p["audit_s"], 4), "compiled": p["compiled"],
                **p["profile"]}
    out["shape_s"] = round(time.perf_counter() - t_shape, 1)
    os.remove(path)
    return out


def _shape_key(s: dict) -> tuple[int, int, str]:
    return s["rows"], s["groups_requested"], s["kind"]


def _predict_shape_s(prev: dict, n_rows: int) -> float:
    """Seconds a shape would take at ``n_rows``, from the same kind at ``prev['rows']``: per
    process the part outside the call stays, the call grows with the rows."""
    scale = n_rows / prev["rows"]
    total = 0.0
    for name, f in prev["fresh"].items():
        procs = prev["rounds"] + (1 if name in prev["prime"] else 0)
        fixed = statistics.median(w - c for w, c in zip(f["wall_s"], f["call_s"], strict=True))
        total += procs * (fixed + statistics.median(f["call_s"]) * scale)
    return total


def _first_table(shapes: list[dict]) -> str:
    head = (f"{'shape':<20}{'fp wall':>8}{'duck':>7}{'polars':>7}{'fp/dk':>7}"
            f"{'fp call':>8}{'duck':>7}{'pol':>7}   fastpriv split (start/imp/rel[load]/aud/exit)")
    lines = [head]
    for s in shapes:
        m, c, sp = s["median_wall_s"], s["median_call_s"], s["fastpriv_wall_split_median_s"]
        v = list(sp.values())
        lines.append(
            _shape_label(s).ljust(20)
            + f"{m['fastpriv']:8.3f}{m.get('duckdb', float('nan')):7.3f}"
            + f"{m.get('polars', float('nan')):7.3f}"
            + f"{s['ratios'].get('fastpriv/duckdb', {}).get('median_wall', float('nan')):7.2f}"
            + f"{c['fastpriv']:8.3f}{c.get('duckdb', float('nan')):7.3f}"
            + f"{c.get('polars', float('nan')):7.3f}   "
            + f"{v[0]:.3f}/{v[1]:.3f}/{v[2]:.3f}[{v[3]:.3f}]/{v[4]:.3f}/{v[5]:.3f}")
    return "\n".join(lines)


def first_call_run(rows: tuple[int, ...] = FIRST_ROWS, groups: tuple[int, ...] = FIRST_GROUPS,
                   kinds: tuple[str, ...] = tuple(KINDS), rounds: int = 5, *,
                   cache: str | None = None, warmup: bool = True, profile: bool = True,
                   max_shape_s: float = 300.0, contestants: tuple[str, ...] = FIRST_CONTESTANTS,
                   name: str = "peers_first_call", full: bool = True,
                   command: str = "", append: bool = False) -> dict:
    """First calls in fresh processes: every (contestant, round) a new process that imports
    its library and makes its one call on the real file, alternated within a round.

    fastpriv's kernel cache is warm (``fastpriv warmup`` into ``cache`` first, unless
    ``warmup`` is False, and one uncounted process per shape): a cached first call, as a user's
    after ``fastpriv warmup``; every counted process's compiles are recorded (must be 0).
    Shapes run by row count; a (kind, row count) whose time predicted from the kind's
    previous row count exceeds ``max_shape_s`` is skipped and recorded in ``skipped``.
    Where fastpriv's wall is not below DuckDB's, one more fresh process profiles the first
    call (``first_call_profile``). Writes ``name``.json after every shape; with ``append``
    the shapes of the file's earlier run stay, those measured again replaced.
    """
    from benchmarks.bench_cold_start import _revision, run_phases

    root = tempfile.mkdtemp(prefix="fastpriv-peers-first-")
    pyc = os.path.join(root, "pycache")
    if cache is None:
        cache = os.path.join(root, "cache")
    os.makedirs(cache, exist_ok=True)
    res: dict[str, Any] = {
        "command": command or "python -m benchmarks.bench_peers first-call",
        "revision": _revision(), "contestants": list(contestants), "rounds": rounds,
        "note": "each (contestant, round) a fresh process (interpreter start, imports, one "
                "call on the real file, exit), alternated within a round; wall_s = spawn to "
                "exit, call_s = the call alone; fastpriv's kernel cache warm (a cached first "
                "call), Python's bytecode cache on; cpu phases: bench_cold_start.run_phases. "
                "The machine's cores are shared with other jobs: compare within a shape.",
        "cores": os.cpu_count(), "load_avg_start": os.getloadavg(), "shapes": [],
        "skipped": []}
    if append and (RESULTS / f"{name}.json").exists():      # shapes of an earlier run stay
        old = json.loads((RESULTS / f"{name}.json").read_text())
        res["shapes"], res["skipped"] = old["shapes"], old["skipped"]
        res["earlier_runs"] = old.get("earlier_runs", []) + [
            {k: old.get(k) for k in ("command", "revision", "warmup", "load_avg_start",
                                     "load_avg_end")}
            | {"date": old["machine"]["date"]}]
    try:
        if warmup:
            t0 = time.perf_counter()
            w = run_phases("module", "fastpriv", ["warmup", "--jobs", "2"], cache=cache,
                           cwd=root, bytecode=pyc, timeout=1800)
            res["warmup"] = {"rc": w["rc"], "wall_s": round(time.perf_counter() - t0, 1),
                             "cpu_s": round(w["cpu_s"], 1)}
            print(f"fastpriv warmup: {res['warmup']}", flush=True)
        last: dict[tuple[str, int], dict] = {}
        for n_rows in rows:
            for n_groups in groups:
                for kind in kinds:
                    prev = last.get((kind, n_groups))
                    guess = _predict_shape_s(prev, n_rows) if prev else 0.0
                    if guess > max_shape_s:
                        res["skipped"].append({
                            "rows": n_rows, "groups_requested": n_groups, "kind": kind,
                            "reason": f"predicted {guess:.0f} s (from {prev['rows']} rows) "
                                      f"> {max_shape_s:g} s"})
                        print(f"skipped {res['skipped'][-1]}", flush=True)
                        continue
                    s = _first_shape(root, n_rows, n_groups, kind, rounds, cache=cache,
                                     pyc=pyc, contestants=contestants,
                                     prime_all=not last, profile=profile)
                    last[(kind, n_groups)] = s
                    key = (n_rows, n_groups, kind)
                    res["shapes"] = [x for x in res["shapes"] if _shape_key(x) != key] + [s]
                    res["skipped"] = [x for x in res["skipped"] if _shape_key(x) != key]
                    print(_first_table([s]), flush=True)
                    res["load_avg_end"] = os.getloadavg()
                    write_result(name, res, full)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n" + _first_table(res["shapes"]), flush=True)
    return res


def bench_peers_first_call(benchmark, full):
    """Smoke: one small shape, one round of fresh processes on the user's kernel cache. The
    full run is a hand-run (``python -m benchmarks.bench_peers first-call``)."""
    import pytest

    if full:
        pytest.skip("hand-run: python -m benchmarks.bench_peers first-call")
    from fastpriv._cache import cache_root

    res = first_call_run((20_000,), (1_000,), ("int",), 1, cache=str(cache_root()),
                         warmup=False, profile=False, full=False,
                         command="python -m pytest -q benchmarks/bench_peers.py")
    s = res["shapes"][0]
    assert s["values_agree"] and s["fastpriv_kernel_loads"]["compiled"] == 0, s
    assert s["fastpriv_kernel_loads"]["loaded"] > 0
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def _first_call_main(argv: list[str]) -> None:
    import argparse

    def ints(x: str) -> tuple[int, ...]:
        return tuple(int(v) for v in x.split(","))

    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_peers first-call",
                                description=first_call_run.__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=ints, default=FIRST_ROWS)
    p.add_argument("--groups", type=ints, default=FIRST_GROUPS)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cache", help="fastpriv kernel cache (default: a new one, warmed)")
    p.add_argument("--no-warmup", action="store_true", help="do not run fastpriv warmup")
    p.add_argument("--no-profile", action="store_true", help="no first-call cProfile")
    p.add_argument("--max-shape-s", type=float, default=300.0)
    p.add_argument("--with-read", action="store_true", help="add pyarrow_read")
    p.add_argument("--name", default="peers_first_call")
    p.add_argument("--append", action="store_true",
                   help="keep the shapes of the results file's earlier run")
    a = p.parse_args(argv)
    first_call_run(a.rows, a.groups, tuple(a.kinds.split(",")), a.rounds, cache=a.cache,
                   warmup=not a.no_warmup, profile=not a.no_profile,
                   max_shape_s=a.max_shape_s,
                   contestants=FIRST_CONTESTANTS + (("pyarrow_read",) if a.with_read else ()),
                   name=a.name, append=a.append,
                   command="python -m benchmarks.bench_peers first-call " + " ".join(argv))


if __name__ == "__main__":
    if sys.argv[1] == "first-call":
        _first_call_main(sys.argv[2:])
    elif sys.argv[1] == "first-call-child":
        _first_child(*sys.argv[2:])
    elif sys.argv[1] == "memory":
        memory_run(int(sys.argv[2]), sys.argv[3].split(","),
                   os.path.join(tempfile.gettempdir(), "fastpriv-peers-memory"),
                   tuple(int(g) for g in (sys.argv[4] if len(sys.argv) > 4
                                          else "1000000").split(",")))
    elif sys.argv[1] == "memory-child":
        print(json.dumps(_release_memory(*sys.argv[2:5])))
    else:
        _name, _path, _spec, _warm = sys.argv[1:5]
        print(json.dumps(run_one(_name, _path, json.loads(_spec), _warm)))
