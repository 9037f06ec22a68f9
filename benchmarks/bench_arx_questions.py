"""Benchmark: ARX's questions on ARX's Adult files beside ARX 3.9.2's times (arx_questions.json).

The questions (ARX's Adult: its ``adult.csv`` and nine hierarchy files in ``tests/data/arx``,
every column a QI, no sensitive column — 30,162 rows, 12,960 nodes), each the single best
node of the whole lattice (``objective="optimal"``, ARX's question):

* ``k5_<model>_<0|2>``: the optimum of each ARX quality model fastpriv has — ``loss``
  (``MetricMDNMLoss``, ARX's default), ``entropy``, ``nm_entropy``, ``nm_precision``,
  ``aecs``, ``height``, ``precision``, ``discernibility`` — under 5-anonymity, at 0 % and
  2 % suppression;
* ``avg_risk_2``: average re-identification risk ≤ 0.01 at 2 % suppression, loss optimum
  (ARX: loss 0.2892 with 509 rows suppressed);
* ``uniqueness``: population uniqueness ≤ 0.01 (Dankar et al.'s rule, ARX's USA population
  of 317,238,626), loss optimum;
* on the seeded IHIS-shaped table (:func:`benchmarks.bench_lattice_scale.ihis_table`,
  1,193,504 rows, 9 QIs, 12,960 nodes): ``ihis_k5_loss_<0|2>`` and ``ihis_avg_risk_2``.
  ``ihis_uniqueness`` is left out of the default run (``--only ihis_uniqueness`` runs it):
  one search takes longer than the two minutes a question may take here (``NOT_RUN``).

Each question runs in a fresh process (the kernel cache on disk warm, as after ``fastpriv
warmup``): the process reads the table, builds the lattice (``build_s``), searches once
(``first_s``: the first call, loading the kernels from the cache) and ``repeat`` more times
(``search_s``: the median, as ARX's times are medians of a warm JVM; ``search_cpu_s`` its
CPU time); ``phases_s`` are the phases of the median search (``LatticeSearch.seconds``),
``process_s`` the process from spawn to exit. ``end_to_end_s`` = ``build_s`` +
``search_s``: ARX's ``anonymize()`` also encodes its input each time.

ARX's times were measured live by issue 48's author (ARX 3.9.2, warm JVM, median): the
Adult loss optimum under 5-anonymity 0.14 s at 0 % and 1.27 s at 2 % suppression, the
uniqueness search 0.7 CPU-s (37 nodes checked). The issue's targets, ten times better:
≤ 15 ms, ≤ 130 ms and ≤ 70 ms (``target_met``: the search's wall time;
``target_met_end_to_end``: with building the lattice). ``vs_arx`` is fastpriv's time /
ARX's (search alone, ``vs_arx_end_to_end`` with the build, ``vs_arx_cpu`` CPU seconds).

    FASTPRIV_BENCH=full python -m benchmarks.bench_arx_questions
    FASTPRIV_BENCH=full python -m benchmarks.bench_arx_questions --only uniqueness,k5_loss_0

Smoke mode (default, run by the test suite): three questions on the first 3,000 rows of
ARX's Adult, in this process, once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __name__ == "baq":  # loaded by file path in a fresh interpreter
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import is_full, write_result

ROOT = Path(__file__).resolve().parents[1]
ARX_DIR = ROOT / "tests" / "data" / "arx"
ARX_QI = ["sex", "age", "race", "marital-status", "education", "native-country",
          "workclass", "occupation", "salary-class"]
USA = 317_238_626          # ARXPopulationModel.Region.USA
MODELS = ("loss", "entropy", "nm_entropy", "nm_precision", "aecs", "height", "precision",
          "discernibility")
#: ARX 3.9.2 (issue 48): seconds (warm JVM, median) or CPU-seconds, and the issue's targets
#: (ten times better than ARX, as the issue rounds them)
ARX = {"k5_loss_0": {"seconds": 0.14, "target_s": 0.015},
       "k5_loss_2": {"seconds": 1.27, "target_s": 0.130},
       "uniqueness": {"cpu_seconds": 0.7, "nodes_checked": 37, "target_s": 0.070},
       "avg_risk_2": {"loss": 0.2892, "rows_suppressed": 509}}
#: questions left out of the default run, and why (measured by hand, ``--only`` runs them)
NOT_RUN = {"ihis_uniqueness": "one search took 264-315 s here (first calls, 1-minute load "
                              "4-6): 1,151 nodes have a loss bound below the optimum and each "
                              "is checked by grouping the 1,176,902 cells"}


def questions() -> dict[str, dict[str, Any]]:
    """Every question: data set, criterion, quality model, suppression limit."""
    qs: dict[str, dict[str, Any]] = {}
    for m in MODELS:
        for sup in (0.0, 0.02):
            qs[f"k5_{m}_{round(sup * 100)}"] = {"data": "arx_adult", "criterion": "k5",
                                                "utility": m, "suppression": sup}
    qs["avg_risk_2"] = {"data": "arx_adult", "criterion": "avg_risk", "utility": "loss",
                        "suppression": 0.02}
    qs["uniqueness"] = {"data": "arx_adult", "criterion": "uniqueness", "utility": "loss",
                        "suppression": 0.0}
    for sup in (0.0, 0.02):
        qs[f"ihis_k5_loss_{round(sup * 100)}"] = {"data": "ihis", "criterion": "k5",
                                                  "utility": "loss", "suppression": sup}
    qs["ihis_uniqueness"] = {"data": "ihis", "criterion": "uniqueness", "utility": "loss",
                             "suppression": 0.0}
    qs["ihis_avg_risk_2"] = {"data": "ihis", "criterion": "avg_risk", "utility": "loss",
                             "suppression": 0.02}
    return qs


def _criterion(name: str) -> Any:
    from fastpriv.predicates import criteria_from

    return {"k5": lambda: criteria_from(min_size=5),
            "avg_risk": lambda: criteria_from(max_avg_risk=0.01),
            "uniqueness": lambda: criteria_from(max_uniqueness=0.01, population=USA)}[name]()


def _data(name: str, rows: int | None) -> tuple[Any, list[str], Any]:
    """The table, its QIs and its hierarchies."""
    if name == "ihis":
        from benchmarks.bench_lattice_scale import IHIS_ROWS, ihis_table

        table, hier = ihis_table(rows or IHIS_ROWS)
        return table.drop_columns(["s"]), [f"q{i}" for i in range(9)], hier
    import fastpriv

    table = fastpriv.read_csv(ARX_DIR / "adult.csv.gz")
    return (table if rows is None else table.slice(0, rows)), ARX_QI, str(ARX_DIR)


def run(qid: str, repeat: int, rows: int | None = None) -> dict[str, Any]:
    """Answer one question in this process: build, first search, ``repeat`` more (timed)."""
    from fastpriv.anonymize.lattice import GeneralizationLattice

    q = questions()[qid]
    table, qi, hier = _data(q["data"], rows)
    crit = _criterion(q["criterion"])
    t0 = time.perf_counter()
    lat = GeneralizationLattice(table, qi, None, hier)
    build = time.perf_counter() - t0
    kw = {"utility": q["utility"], "suppression": q["suppression"], "objective": "optimal",
          "materialize": False}
    t0 = time.perf_counter()
    res = lat.search(crit, **kw)
    first = time.perf_counter() - t0
    runs = []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        r = lat.search(crit, **kw)
        runs.append((time.perf_counter() - w0, time.process_time() - c0, dict(r.seconds)))
    builds = [build]
    for _ in range(min(repeat, 3)):
        t0 = time.perf_counter()
        GeneralizationLattice(table, qi, None, hier)
        builds.append(time.perf_counter() - t0)
    runs.sort(key=lambda x: x[0])
    med = runs[len(runs) // 2] if runs else (first, float("nan"), dict(res.seconds))
    out = {**q, "rows": table.num_rows, "n_nodes": lat.n_nodes, "n_cells": lat.n_cells,
           "build_first_s": build, "build_s": statistics.median(builds[1:] or builds),
           "first_s": first, "search_s": med[0], "search_cpu_s": med[1],
           "searches_s": [x[0] for x in runs], "phases_s": med[2],
           "strategy": res.strategy, "nodes_checked": res.n_checked,
           "n_scored": res.n_scored,
           "node": None if res.best is None else list(res.best),
           "value": None if res.best is None else res.scores[res.best]}
    out["end_to_end_s"] = out["build_s"] + out["search_s"]
    if res.best is not None and q["suppression"]:
        out["rows_suppressed"] = lat.check(res.best, crit,
                                           suppression=q["suppression"]).n_suppressed
    return out


def _fresh(qid: str, repeat: int) -> dict[str, Any]:
    """:func:`run` in a fresh interpreter; adds ``process_s`` (spawn to exit)."""
    code = ("import sys, json; import importlib.util as u; "
            f"spec = u.spec_from_file_location('baq', {__file__!r}); "
            "m = u.module_from_spec(spec); spec.loader.exec_module(m); "
            f"print(json.dumps(m.run({qid!r}, {repeat!r})))")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tempfile.gettempdir(), env=dict(os.environ, PYTHONPATH=str(ROOT)))
    took = time.perf_counter() - t0
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1], "process_s": took}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), process_s=took)


def compare_arx(qid: str, r: dict[str, Any]) -> dict[str, Any]:
    """ARX's figure for ``qid``, fastpriv's ratio to it and whether the target is met."""
    arx = ARX.get(qid)
    if arx is None or "search_s" not in r:
        return {}
    out: dict[str, Any] = {"arx": arx}
    if "seconds" in arx:
        out.update(vs_arx=r["search_s"] / arx["seconds"],
                   vs_arx_end_to_end=r["end_to_end_s"] / arx["seconds"])
    if "cpu_seconds" in arx:
        out.update(vs_arx_cpu=r["search_cpu_s"] / arx["cpu_seconds"])
    if "target_s" in arx:   # wall seconds of the search, and with building the lattice
        out.update(target_met=r["search_s"] <= arx["target_s"],
                   target_met_end_to_end=r["end_to_end_s"] <= arx["target_s"])
    if "loss" in arx:
        out.update(same_loss=round(r["value"], 4) == arx["loss"],
                   same_rows_suppressed=r.get("rows_suppressed") == arx["rows_suppressed"])
    return out


def measure(ids: list[str], repeat: int, ihis_repeat: int) -> dict[str, Any]:
    """Every question in ``ids``, each in a fresh process."""
    res: dict[str, Any] = {}
    for qid in ids:
        r = _fresh(qid, ihis_repeat if qid.startswith("ihis") else repeat)
        r.update(compare_arx(qid, r))
        res[qid] = r
        brief = {k: r.get(k) for k in ("search_s", "end_to_end_s", "nodes_checked", "value",
                                       "vs_arx", "target_met", "error")}
        print(qid, json.dumps(brief), flush=True)
    return res


def full_run(ids: list[str], repeat: int, ihis_repeat: int, command: str) -> dict[str, Any]:
    """Every question in ``ids`` (fresh processes), with the load, revision and command."""
    start = list(os.getloadavg())
    res = measure(ids, repeat, ihis_repeat)
    rev = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    return {"questions": res, "arx": ARX, "not_run": NOT_RUN, "revision": rev,
            "command": command, "load_avg_start": start,
            "load_avg_end": list(os.getloadavg())}


def bench_arx_questions(benchmark, full):
    """Smoke: three questions on 3,000 rows in this process; full: see the module docstring."""
    if full:
        payload = full_run([q for q in questions() if q not in NOT_RUN], 7, 1,
                           "FASTPRIV_BENCH=full pytest benchmarks/bench_arx_questions.py")
    else:
        payload = {"questions": {q: run(q, 1, rows=3000)
                                 for q in ("k5_loss_0", "avg_risk_2", "uniqueness")}}
    for qid, r in payload["questions"].items():
        assert "error" not in r, (qid, r)
        assert r["node"] is not None, qid
    write_result("arx_questions", payload, full)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated question ids (default: all)")
    ap.add_argument("--repeat", type=int, default=7, help="timed searches per question")
    ap.add_argument("--ihis-repeat", type=int, default=1,
                    help="timed searches per IHIS-shaped question")
    argv = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(argv)
    ids = [x.strip() for x in a.only.split(",") if x.strip()] or \
        [q for q in questions() if q not in NOT_RUN]
    unknown = set(ids) - set(questions())
    if unknown:
        ap.error(f"unknown questions: {sorted(unknown)}")
    from benchmarks._common import RESULTS

    payload = full_run(ids, a.repeat, a.ihis_repeat,
                       "python -m benchmarks.bench_arx_questions " + " ".join(argv))
    old = RESULTS / "arx_questions.json"
    if a.only and old.exists():      # merge into the previous full run
        prev = json.loads(old.read_text())
        payload["questions"] = {**prev.get("questions", {}), **payload["questions"]}
        payload["merged"] = prev.get("merged", []) + [
            {"questions": ids, "revision": payload["revision"],
             "load_avg_start": payload["load_avg_start"],
             "load_avg_end": payload["load_avg_end"],
             "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())}]
        for key in ("revision", "command", "load_avg_start", "load_avg_end"):
            payload[key] = prev.get(key, payload[key])   # those of the full run
    write_result("arx_questions", payload, is_full())
    return 0


if __name__ == "__main__":
    sys.exit(main())
