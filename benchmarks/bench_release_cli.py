"""Benchmark: ``fastpriv anonymize`` on a table larger than this machine would hold as rows.

The bundled Adult columns (age, sex, race, marital_status, occupation) repeated to
``--rows`` rows (100M by default: a 2,212-fold Adult, each copy's rows in a seeded order)
are written as Parquet; then, each in a fresh process, alternated:

* ``read_write`` — a plain Parquet read + write of the same columns (the baseline);
* ``cli lattice`` — ``fastpriv anonymize FILE --method lattice --qi age sex race
  marital_status --sensitive occupation --min-size K --min-l 3 --hierarchies <bundled>
  -o OUT --json J`` (``--min-size``, default 10,000: every Adult row is repeated about
  2,212 times at 100M rows, so k = 5 would hold on the raw table; 10,000 makes the search
  generalize);
* ``cli mondrian`` — the same with ``--method mondrian``.

The CLI takes the out-of-core path by itself (the file is over 256 MiB): one pass into the
histogram of distinct cells, the release written from it, re-audited before it is put in
place. Recorded per run: wall and CPU seconds, peak resident memory (``wait4``), exit
status, the rows written and the CLI's re-audit. Targets: peak ≤ 2 GiB, ≤ 2× the read +
write.

    python -m benchmarks.bench_release_cli --rows 100000000

writes ``benchmarks/results/release_scale_cli.json``.
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

COLUMNS = ["age", "sex", "race", "marital_status", "occupation"]
QI = ["age", "sex", "race", "marital_status"]


def write_adult(path: str, n_rows: int, seed: int = 5) -> dict[str, Any]:
    """Adult's columns repeated to ``n_rows`` rows, each copy in a seeded order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import fastpriv as fp

    adult = fp.datasets.load_adult(COLUMNS).replace_schema_metadata(None)
    rng = np.random.default_rng(seed)
    with pq.ParquetWriter(path, adult.schema, compression="zstd") as w:
        done = 0
        while done < n_rows:
            take = min(adult.num_rows, n_rows - done)
            w.write_table(adult.take(pa.array(rng.permutation(adult.num_rows)[:take])),
                          row_group_size=1 << 20)
            done += take
    return {"rows": n_rows, "bytes": os.path.getsize(path)}


def run(kind: str, src: str, tmp: str, k: int) -> dict[str, Any]:
    """One path in a fresh process: wall, CPU, peak RSS (wait4), exit status, output."""
    from fastpriv.datasets import hierarchy_path

    out = os.path.join(tmp, f"{kind}.parquet")
    js = os.path.join(tmp, f"{kind}.json")
    if kind == "read_write":
        cmd = [sys.executable, "-c",
               "import sys, pyarrow.parquet as pq\n"
               "f = pq.ParquetFile(sys.argv[1])\n"
               "with pq.ParquetWriter(sys.argv[2], f.schema_arrow, compression='zstd') as w:\n"
               "    [w.write_batch(b) for b in f.iter_batches(batch_size=1 << 20)]", src, out]
    else:
        method = kind.split()[1]
        cmd = [sys.executable, "-m", "fastpriv", "anonymize", src, "--method", method,
               "--qi", *QI, "--sensitive", "occupation", "--min-size", str(k), "--min-l", "3",
               "-o", out,
               "--json", js, "--overwrite"]
        if method == "lattice":
            cmd += ["--hierarchies", os.path.dirname(hierarchy_path("age"))]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    rc = os.waitstatus_to_exitcode(status)
    res: dict[str, Any] = {"rc": rc, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                           "peak_gib": usage.ru_maxrss / 2**20, "load_before": load,
                           "out_of_core": "out of core" in err}
    if rc not in (0, 1):
        raise RuntimeError(f"{kind}: exit {rc}\n{err[-2000:]}")
    if kind != "read_write":
        payload = json.loads(open(js).read())
        res["reaudit"] = payload.get("out_of_core", {}).get("reaudit")
        res["n_written"] = payload.get("out_of_core", {}).get("n_written")
        res["n_cells"] = payload.get("out_of_core", {}).get("n_cells")
        res["node"] = payload.get("node")
        res["n_suppressed"] = payload.get("n_suppressed")
    import pyarrow.parquet as pq

    res["rows_in_file"] = pq.ParquetFile(out).metadata.num_rows
    os.unlink(out)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--min-size", type=int, default=10_000)
    a = ap.parse_args(argv)
    import statistics

    from benchmarks.bench_cold_start import _revision

    payload: dict[str, Any] = {"load_avg_start": os.getloadavg(), "revision": _revision(),
                               "command": (
        "python -m benchmarks.bench_release_cli " + " ".join(
            argv if argv is not None else sys.argv[1:]))}
    kinds = ["read_write", "cli lattice", "cli mondrian"]
    with tempfile.TemporaryDirectory(prefix="release-cli-") as tmp:
        src = os.path.join(tmp, "adult_big.parquet")
        payload["input"] = write_adult(src, a.rows)
        runs: dict[str, list] = {k: [] for k in kinds}
        for r in range(a.rounds):
            for k in (kinds if r % 2 == 0 else kinds[::-1]):
                one = run(k, src, tmp, a.min_size)
                runs[k].append(one)
                print(f"{a.rows:>12,} {k:13s} {one['wall_s']:7.1f} s wall {one['cpu_s']:7.1f} "
                      f"s cpu {one['peak_gib']:5.2f} GiB rc={one['rc']}", flush=True)
    base = statistics.median(x["wall_s"] for x in runs["read_write"])
    payload["paths"] = {k: {"wall_s": statistics.median(x["wall_s"] for x in rs),
                            "cpu_s": statistics.median(x["cpu_s"] for x in rs),
                            "peak_gib": max(x["peak_gib"] for x in rs),
                            "vs_read_write": statistics.median(x["wall_s"] for x in rs) / base,
                            "rows_per_s": a.rows / statistics.median(x["wall_s"] for x in rs),
                            "runs": rs} for k, rs in runs.items()}
    payload["load_avg_end"] = os.getloadavg()
    print(write_result("release_scale_cli", payload, True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
