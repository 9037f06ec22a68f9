"""Re-identification risk at scale.

* audit vs Release: n rows × 9 QIs from Parquet (full: 10M). Times, in one
  process, alternating A/B and keeping the best of ``repeat``: building the Release grouped by
  the QIs (A), :func:`fastpriv.risk.audit` from the same Parquet file with a population size
  (B: counting pass + every measure), the measures alone on the class counts, and the
  population-uniqueness models alone on the class-size histogram. Goals: B/A ≤ 2, models ≤ 1 s.
  Anchor (different hardware, unknown): ARX's population-uniqueness analysis of IHIS
  (1.19M rows, 9 QIs) is reported at 171–230 s.
* combinations: risk by QI combination on Adult (14 QIs, every subset up to size 4:
  1,470 subsets) and on n rows × 10 QIs (full: 10M, subsets up to size ``FASTPRIV_RISK_M``,
  default 3), each in a fresh subprocess reporting its time and its own peak RSS (VmHWM).

Smoke mode (default) uses tiny sizes; ``FASTPRIV_BENCH=full`` runs the sizes above and writes
``benchmarks/results/risk.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks._common import write_result

QI9 = ["age", "sex", "race", "marital", "education", "zip3", "children", "income_band",
       "region"]
CARDS = {"age": 90, "sex": 2, "race": 6, "marital": 7, "education": 16, "zip3": 100,
         "children": 8, "income_band": 12, "region": 10, "occupation": 25}


def _write_parquet(path: str, n: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    chunk = 1 << 20
    writer = None
    done = 0
    while done < n:
        m = min(chunk, n - done)
        cols = {}
        for c, k in CARDS.items():
            # skewed marginals (Zipf-like) as in census data
            p = 1.0 / np.arange(1, k + 1) ** 0.8
            cols[c] = rng.choice(k, size=m, p=p / p.sum()).astype(np.int32)
        cols["s"] = rng.integers(0, 5, size=m).astype(np.int32)
        t = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(path, t.schema)
        writer.write_table(t)
        done += m
    writer.close()


def _alternate(fa, fb, repeat):
    ta, tb = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fa()
        ta.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fb()
        tb.append(time.perf_counter() - t0)
    return min(ta), min(tb)


def run_audit(n: int, repeat: int) -> dict:
    import fastpriv as fp
    from fastpriv import risk

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "risk.parquet")
        _write_parquet(path, n)
        big_n = 20 * n
        # warm the JIT cache on a small file
        small = os.path.join(tmp, "small.parquet")
        _write_parquet(small, 1000, seed=1)
        fp.Release.from_table(small, qi=QI9, sensitive="s")
        risk.audit(small, qi=QI9, population=20_000)

        def build():
            return fp.Release.from_table(path, qi=QI9, sensitive="s")

        def audit():
            return risk.audit(path, qi=QI9, population=big_n)

        t_rel, t_audit = _alternate(build, audit, repeat)
        cc = risk.class_counts(path, qi=QI9)
        t0 = time.perf_counter()
        res = risk.audit(cc, population=big_n)
        t_measures = time.perf_counter() - t0
        size, count = cc.histogram()
        t0 = time.perf_counter()
        pu = risk.population_uniques(size, count, big_n)
        t_models = time.perf_counter() - t0
    return {"rows": n, "qi": QI9, "classes": cc.n_classes, "population_size": big_n,
            "release_build_s": t_rel, "audit_from_parquet_s": t_audit,
            "audit_to_release_ratio": t_audit / t_rel, "measures_on_counts_s": t_measures,
            "population_models_on_histogram_s": t_models,
            "histogram_entries": int(size.size), "dankar_chosen": pu["chosen"],
            "sample_uniques": res.measures["sample_uniques"],
            "arx_ihis_anchor_s": [171, 230],
            "anchor_note": "ARX population-uniqueness analysis of IHIS (1.19M rows, 9 QIs), "
                           "published figure, hardware unknown; not re-measured here"}


_COMBO_CHILD = r"""
import json, sys, time
import fastpriv as fp
from fastpriv import risk
src, qi, m = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
data = fp.datasets.load_adult() if src == "adult" else src
risk.combinations(data if src == "adult" else src, qi=qi[:2], max_set_size=1)   # JIT warm-up
t0 = time.perf_counter()
res = risk.combinations(data, qi=qi, max_set_size=m)
dt = time.perf_counter() - t0
# VmHWM: this process's own peak RSS (ru_maxrss would include the parent's peak on Linux,
# which survives fork + exec)
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM"))
print(json.dumps({"seconds": dt, "subsets": res.params["n_subsets"],
                  "distinct_tuples": res.params["n_distinct_tuples"],
                  "generalize_first": res.generalize_first(3),
                  "peak_rss_mib": hwm / 1024}))
"""


def _combo_child(src: str, qi: list, m: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _COMBO_CHILD, src, json.dumps(qi), str(m)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_combinations(n: int, m_adult: int, m_big: int) -> dict:
    import fastpriv as fp

    adult_qi = [c for c in fp.datasets.load_adult().column_names if c != "income"]
    adult = {"qi": len(adult_qi), "m": m_adult, **_combo_child("adult", adult_qi, m_adult)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "combo.parquet")
        _write_parquet(path, n, seed=3)
        qi10 = list(CARDS)
        big = {"rows": n, "qi": len(qi10), "m": m_big, **_combo_child(path, qi10, m_big)}
    return {"adult": adult, "synthetic": big}


def bench_risk(benchmark, full):
    n = 10_000_000 if full else 20_000
    m_big = int(os.environ.get("FASTPRIV_RISK_M", "3")) if full else 2
    payload = {}

    def go():
        repeat = int(os.environ.get("FASTPRIV_RISK_REPEAT", "3")) if full else 1
        payload["audit"] = run_audit(n, repeat)
        payload["combinations"] = run_combinations(n, 4 if full else 2, m_big)

    benchmark.pedantic(go, rounds=1, iterations=1)
    a = payload["audit"]
    assert a["classes"] > 0 and a["audit_to_release_ratio"] > 0
    assert payload["combinations"]["adult"]["subsets"] == (1470 if full else 105)
    payload["command"] = ("FASTPRIV_BENCH=full FASTPRIV_RISK_REPEAT=%s FASTPRIV_RISK_M=%s "
                          "python -m benchmarks.bench_risk"
                          % (os.environ.get("FASTPRIV_RISK_REPEAT", "3"), m_big))
    payload["goals"] = {"audit_to_release_ratio_at_most": 2.0,
                        "population_models_on_histogram_s_at_most": 1.0}
    write_result("risk", payload, full)


if __name__ == "__main__":  # pragma: no cover
    full = os.environ.get("FASTPRIV_BENCH", "").lower() == "full"

    class _B:
        @staticmethod
        def pedantic(fn, rounds=1, iterations=1):
            fn()

    bench_risk(_B(), full)
    print(json.dumps(json.loads(open(os.path.join(os.path.dirname(__file__), "results",
                                                  "" if full else "smoke",
                                                  "risk.json")).read()), indent=1))
