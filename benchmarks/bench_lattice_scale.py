"""Benchmark: full-domain generalization at ARX's scale (``lattice_scale.json``).

* **IHIS shape**: a seeded table of IHIS's shape — 1,193,504 rows (smoke: 20,000), 9 QIs
  with Zipf-like values (exponent 1.1, domains 96, 64, 50, 40, 24, 16, 12, 8, 2) and
  hierarchies of heights (5, 4, 3, 3, 3, 3, 2, 2, 2) — 12,960 nodes, ≈1.17M distinct QI
  cells at full size; sensitive attribute: 10 Zipf-like values.
* **Adult, 9 QIs**: the 8 bundled Adult hierarchies plus ``income`` (value / ``*``),
  sensitive ``relationship`` — 27,648 nodes, 45,222 rows (smoke: the first 5,000).
* **ARX's Adult set-up** (``arx_adult``): ARX's own ``adult.csv`` and hierarchy files
  (``tests/data/arx``), every column a QI, no sensitive column — 30,162 rows, 12,960 nodes,
  the configuration of ARX's published 1.05–1.63 s. The constructor (``build_s``: encoding
  the rows, binding the hierarchies) and the search are timed separately, each the minimum
  of ``repeat`` after a first call, and ``end_to_end_s`` is their sum.

Each is searched with ``KAnonymity(5)``, ``strategy="flash"``, at suppression limits 0, 1
and 2 %: nodes checked, seconds (min of ``repeat`` after a first call), seconds per checked
node, peak RSS, and the single loss-optimal node (``objective="optimal"``, ARX's question)
beside ARX's published figures (arx-deidentifier/risk-benchmark, results-k-anonymity.txt:
IHIS 63–66 s, Adult 1.05–1.63 s; single-threaded Java on unrecorded hardware, up to 100 %
suppression, global optimum by a loss metric — not the same hardware nor the same search).

A base revision (``--base REV`` / ``FASTPRIV_LATTICE_BASE``) is timed in the same run,
alternated with the working tree, each in a fresh interpreter importing fastpriv from its
own tree (a temporary ``git worktree``, as :mod:`benchmarks.ab_commits` does)::

    FASTPRIV_BENCH=full python -m benchmarks.bench_lattice_scale --base b7768d3
    python -m benchmarks.bench_lattice_scale --profile ihis     # cProfile of one search
    FASTPRIV_BENCH=full python -m benchmarks.bench_lattice_scale --datasets ihis --n-jobs 2

``--n-jobs 2`` times the working tree with large roll-ups split between two threads
(``search(..., n_jobs=2)``); it pays only when both cores are idle.

Smoke mode (default, run by the test suite) uses the small sizes and no base revision.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

if __name__ == "bls":  # loaded by file path in a base tree's interpreter
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from _common import best_time, is_full, write_result  # type: ignore[import-not-found]
else:
    from benchmarks._common import best_time, is_full, write_result

ROOT = Path(__file__).resolve().parents[1]
IHIS_ROWS = 1_193_504
IHIS_DOMAINS = (96, 64, 50, 40, 24, 16, 12, 8, 2)
IHIS_WIDTHS: tuple[Any, ...] = ([4, 16, 48, "*"], [4, 16, "*"], [5, "*"], [5, "*"], [4, "*"],
                                [4, "*"], "suppress", "suppress", "suppress")
ADULT_QI = ["age", "education", "marital_status", "native_country", "occupation", "race",
            "sex", "workclass", "income"]
SUPPRESSION = (0.0, 0.01, 0.02)
ARX = {"ihis": {"rows": 1_193_504, "nodes": 25_920, "checked": 507, "seconds": [63, 66]},
       "adult": {"rows": 30_162, "nodes": 12_960, "checked": 375, "seconds": [1.05, 1.63]}}


def ihis_table(n_rows: int = IHIS_ROWS, seed: int = 27) -> tuple[Any, dict[str, Any]]:
    """The seeded IHIS-shaped table and its hierarchy specification."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)

    def zipf(dom: int, s: float = 1.1) -> np.ndarray:
        p = 1.0 / np.arange(1, dom + 1) ** s
        perm = rng.permutation(dom)
        return perm[rng.choice(dom, size=n_rows, p=p / p.sum())].astype(np.int64)

    cols = {f"q{i}": zipf(d) for i, d in enumerate(IHIS_DOMAINS)}
    cols["s"] = zipf(10)
    hier = {f"q{i}": w for i, w in enumerate(IHIS_WIDTHS)}
    return pa.table(cols), hier


def adult_table(full: bool) -> tuple[Any, dict[str, Any] | None]:
    """Adult with 9 QIs (bundled hierarchies + ``income`` suppressed) and its spec."""
    from fastpriv.datasets import hierarchy_path, load_adult

    t = load_adult(ADULT_QI + ["relationship"])
    if not full:
        t = t.slice(0, 5000)
    return t, {a: (hierarchy_path(a) if a != "income" else "suppress") for a in ADULT_QI}


ARX_DIR = ROOT / "tests" / "data" / "arx"
ARX_ADULT_QI = ["sex", "age", "race", "marital-status", "education", "native-country",
                "workclass", "occupation", "salary-class"]


def arx_adult_table() -> tuple[Any, str]:
    """ARX's ``adult.csv`` (``;``-separated) and the folder of its hierarchy files."""
    import fastpriv

    return fastpriv.read_csv(ARX_DIR / "adult.csv.gz"), str(ARX_DIR)


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def measure(dataset: str, full: bool, repeat: int, objective: bool = True,
            n_jobs: int = 1) -> dict[str, Any]:
    """Time the searches of one dataset in this interpreter (whichever fastpriv it imports).

    ``n_jobs`` other than 1 is passed to the searches (threads for large roll-ups; a base
    revision without that parameter is always timed with its defaults).
    """
    import fastpriv.predicates as P
    from fastpriv.anonymize.lattice import GeneralizationLattice

    if dataset == "ihis":
        table, hier = ihis_table(IHIS_ROWS if full else 20_000)
        qi, sens = [f"q{i}" for i in range(9)], "s"
    elif dataset == "arx_adult":
        table, hier = arx_adult_table()
        qi, sens = ARX_ADULT_QI, None
    else:
        table, hier = adult_table(full)
        qi, sens = ADULT_QI, "relationship"
    crit = P.KAnonymity(5)
    kw: dict[str, Any] = {} if n_jobs == 1 else {"n_jobs": n_jobs}
    small = GeneralizationLattice(table.slice(0, 2000), qi, sens, hier)  # JIT warm-up
    for sup in SUPPRESSION:
        small.search(crit, suppression=sup, strategy="flash", materialize=False, **kw)
    t0 = time.perf_counter()
    lat = GeneralizationLattice(table, qi, sens, hier)
    build = time.perf_counter() - t0
    if repeat:
        build = min(build, best_time(lambda: GeneralizationLattice(table, qi, sens, hier),
                                     repeat=repeat))
    out: dict[str, Any] = {"rows": table.num_rows, "n_nodes": lat.n_nodes, "n_jobs": n_jobs,
                           "heights": list(lat.heights), "n_cells": lat.n_cells,
                           "build_s": build, "runs": []}
    for sup in SUPPRESSION:
        t0 = time.perf_counter()
        res = lat.search(crit, suppression=sup, strategy="flash", materialize=False, **kw)
        first = time.perf_counter() - t0
        secs = best_time(lambda sup=sup: lat.search(crit, suppression=sup, strategy="flash",
                                                    materialize=False, **kw), repeat=repeat) \
            if repeat else first
        row = {"suppression": sup, "nodes_checked": res.n_checked, "first_call_s": first,
               "search_s": secs, "end_to_end_s": build + secs, "ms_per_checked_node": 1e3 * secs / max(res.n_checked, 1),
               "n_minimal": len(res.minimal), "best": list(res.best) if res.best else None,
               "best_score": res.scores.get(res.best) if res.best else None}
        sec = getattr(res, "seconds", None)
        if isinstance(sec, dict):   # per-phase seconds of the first call (this tree)
            row["phases_s"] = dict(sec)
            row["phases_s"]["search_loop"] = sec["total"] - sum(
                v for k, v in sec.items() if k != "total")
            row["rows_rolled_up"] = res.n_rows_rolled_up
        if objective:
            try:
                t0 = time.perf_counter()
                opt = lat.search(crit, suppression=sup, strategy="flash", materialize=False,
                                 objective="optimal", **kw)
                row["optimal"] = {"node": list(opt.best) if opt.best else None,
                                  "score": opt.scores.get(opt.best) if opt.best else None,
                                  "nodes_checked": opt.n_checked,
                                  "search_s": time.perf_counter() - t0}
            except TypeError:  # a revision without objective=
                pass
        out["runs"].append(row)
    out["peak_rss_gib"] = _peak_rss_gib()
    return out


def _subprocess(tree: str, dataset: str, full: bool, repeat: int,
                n_jobs: int = 1) -> dict[str, Any]:
    code = (f"import sys, json; sys.path.insert(0, {tree!r}); import fastpriv; "
            f"assert fastpriv.__file__.startswith({tree!r}); "
            "import importlib.util as u; "
            f"spec = u.spec_from_file_location('bls', {__file__!r}); "
            "m = u.module_from_spec(spec); spec.loader.exec_module(m); "
            f"print(json.dumps(m.measure({dataset!r}, {full!r}, {repeat!r}, "
            f"{tree == str(ROOT)!r}, {n_jobs if tree == str(ROOT) else 1!r})))")
    env = dict(os.environ, PYTHONPATH="")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tempfile.gettempdir(), env=env)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(base: str | None, full: bool, rounds: int, repeat: int,
            base_repeat: int, datasets: tuple[str, ...] = ("adult", "ihis"),
            n_jobs: int = 1) -> dict[str, Any]:
    """Base revision and working tree, alternated ``rounds`` times per dataset."""
    result: dict[str, Any] = {"arx_published": ARX, "base": base, "n_jobs": n_jobs,
                              "datasets": {}}
    with tempfile.TemporaryDirectory(prefix="fastpriv-lattice-ab-") as tmp:
        trees = [("current", str(ROOT))]
        if base:
            path = os.path.join(tmp, "base")
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", path,
                            base], check=True, capture_output=True)
            trees.insert(0, ("base", path))
        try:
            for ds in datasets:
                by: dict[str, list] = {}
                for _ in range(rounds):
                    for label, tree in trees:
                        rep = repeat if label == "current" else base_repeat
                        r = _subprocess(tree, ds, full, rep, n_jobs)
                        by.setdefault(label, []).append(r)
                        print(ds, label, json.dumps(_brief(r)), flush=True)
                result["datasets"][ds] = {lab: _merge(rs) for lab, rs in by.items()}
                cur, bas = result["datasets"][ds].get("current"), \
                    result["datasets"][ds].get("base")
                if cur and bas and "runs" in cur and "runs" in bas:
                    result["datasets"][ds]["speedup"] = [
                        b["search_s"] / c["search_s"]
                        for b, c in zip(bas["runs"], cur["runs"], strict=True)]
                    result["datasets"][ds]["same_result"] = [
                        b["best"] == c["best"] and b["n_minimal"] == c["n_minimal"]
                        for b, c in zip(bas["runs"], cur["runs"], strict=True)]
        finally:
            if base:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                os.path.join(tmp, "base")], capture_output=True)
    return result


def _brief(r: dict[str, Any]) -> Any:
    if "runs" not in r:
        return r
    return [(x["suppression"], x["nodes_checked"], round(x["search_s"], 3)) for x in r["runs"]]


def _merge(rs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per suppression level, the minimum over rounds (and every round's time)."""
    ok = [r for r in rs if "runs" in r]
    if not ok:
        return rs[0]
    out = dict(ok[0])
    out["build_s"] = min(r["build_s"] for r in ok)
    out["runs"] = []
    for i, row in enumerate(ok[0]["runs"]):
        times = [r["runs"][i]["search_s"] for r in ok]
        out["runs"].append(dict(row, search_s=min(times), rounds_s=times,
                                end_to_end_s=out["build_s"] + min(times),
                                ms_per_checked_node=1e3 * min(times)
                                / max(row["nodes_checked"], 1)))
    out["peak_rss_gib"] = max(r["peak_rss_gib"] for r in ok)
    return out


def profile(dataset: str, full: bool, sup: float) -> None:
    """Print the cProfile of one search (after a warm-up call)."""
    import cProfile
    import pstats

    import fastpriv.predicates as P
    from fastpriv.anonymize.lattice import GeneralizationLattice

    if dataset == "ihis":
        table, hier = ihis_table(IHIS_ROWS if full else 20_000)
        qi, sens = [f"q{i}" for i in range(9)], "s"
    elif dataset == "arx_adult":
        table, hier = arx_adult_table()
        qi, sens = ARX_ADULT_QI, None
    else:
        table, hier = adult_table(full)
        qi, sens = ADULT_QI, "relationship"
    lat = GeneralizationLattice(table, qi, sens, hier)
    lat.search(P.KAnonymity(5), suppression=sup, materialize=False)
    pr = cProfile.Profile()
    pr.enable()
    lat.search(P.KAnonymity(5), suppression=sup, materialize=False)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)


def bench_lattice_scale(benchmark, full):
    """Smoke: both datasets at small size, this tree only; full: see the module docstring."""
    base = os.environ.get("FASTPRIV_LATTICE_BASE") if full else None
    res = compare(base, full, rounds=2 if full else 1, repeat=3 if full else 1,
                  base_repeat=0)
    for ds in ("adult", "ihis"):
        cur = res["datasets"][ds]["current"]
        assert "runs" in cur, cur
        for row in cur["runs"]:
            assert row["best"] is not None
            if "optimal" in row and row["best_score"] is not None:
                assert row["optimal"]["score"] <= row["best_score"]
    write_result("lattice_scale", res, full)
    benchmark.extra_info["datasets"] = list(res["datasets"])
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=os.environ.get("FASTPRIV_LATTICE_BASE"),
                    help="git revision timed alternately with the working tree")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="timed repeats of the new tree")
    ap.add_argument("--base-repeat", type=int, default=0,
                    help="timed repeats of the base (0: the first call only)")
    ap.add_argument("--profile", choices=("ihis", "adult"))
    ap.add_argument("--suppression", type=float, default=0.0)
    ap.add_argument("--datasets", default="adult,ihis",
                    help="comma-separated: adult, ihis, arx_adult")
    ap.add_argument("--out", default="lattice_scale", help="result file name (no .json)")
    ap.add_argument("--n-jobs", type=int, default=1,
                    help="threads for large roll-ups in the working tree's searches")
    a = ap.parse_args(argv)
    full = is_full()
    if a.profile:
        profile(a.profile, full, a.suppression)
        return 0
    res = compare(a.base, full, a.rounds, a.repeat, a.base_repeat,
                  tuple(x.strip() for x in a.datasets.split(",") if x.strip()), a.n_jobs)
    print(json.dumps({ds: v.get("speedup") for ds, v in res["datasets"].items()}))
    write_result(a.out, res, full)
    return 0


if __name__ == "__main__":
    sys.exit(main())
