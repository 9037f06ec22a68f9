"""Benchmarks: lattice search on Adult, Mondrian at scale, count-query error.

* **Lattice search** (``anonymize_lattice.json``): Adult (45,222 rows; smoke: the first
  5,000), QI Age/Marital/Race/Sex with the bundled hierarchies (72 nodes), Occupation
  sensitive. For each criterion — k-anonymity, distinct/entropy/recursive ℓ-diversity,
  t-closeness, (c,k)-safety (implications and negations), an SVPI skyline point — in one
  run: the search time after JIT (Flash-style predictive tagging + binary search on paths)
  and nodes checked vs 72; the same engine checking all 72 nodes (``exhaustive``); and the
  **Arrow round-trip baseline**: every node generalized with ``pyarrow.compute.take`` on the
  label arrays, ``Release.from_table(qi=…)``, the same predicate — what one writes without
  the encoded regroup kernel. All three must give the same minimal nodes.
* **Mondrian** (``anonymize_mondrian.json``): ``fastpriv.datasets.synthetic`` with
  ``qi_cardinalities=[100, 50, 20, 10]``, 20 uniform sensitive values, 1M rows (smoke: 20k)
  with k = 10, k = 10 ∧ ℓ = 3, t = 0.2: end-to-end time of :func:`mondrian` (the compiled
  recursion) with its encode / partition / output breakdown. Same-run baseline on 100k rows
  (smoke: 10k): the identical split rule driven from Python with a user criterion checked on
  the two halves (what a pluggable-predicate Mondrian in Python does) — same groups required.
  Also Adult (4 QI; smoke: first 5,000 rows) timings, including (c,k)-safety against
  implications, which is not group-local and takes the Python path (whole-release checks).
* **Count-query error** (``anonymize_queries.json``): Adult, 10,000 queries (qd = 4,
  s = 0.05; smoke: 1,000): drawing the workload (exact answers included) and estimating it
  from a Mondrian release (generalized and bucketized estimators) and from the best lattice
  node, vs a per-query NumPy implementation over the rows (row masks / gathers; timed on a
  subset of queries, compared per query). Estimates must agree.
* **Cold start** (``anonymize_cold_start.json``, full mode only): a fresh interpreter running
  a lattice search, a Mondrian run and a query workload on Adult, with the on-disk Numba cache
  disabled (every kernel compiles) and enabled.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from benchmarks._common import best_time, cold_start, write_result

QI = ["age", "marital_status", "race", "sex"]


def _criteria():
    import fastpriv.predicates as P

    return [P.KAnonymity(10), P.DistinctLDiversity(3), P.EntropyLDiversity(3),
            P.RecursiveCLDiversity(3, 3), P.TCloseness(0.2), P.CKSafety(0.8, 3),
            P.CKSafety(0.7, 3, "negations"), P.SkylinePoint(None, 1, 1, 1, 0.8)]


def _arrow_exhaustive(table, lat, crit):
    """Every node via pyarrow take + Release.from_table + the predicate (baseline)."""
    from fastpriv import Release

    cols = []
    for a, h in zip(QI, lat.hierarchies):
        cols.append((a, pa.array(h.codes), [pa.array(list(lab)) for lab in h.labels],
                     h.maps))
    sat = []
    for node in lat.nodes:
        gen = {}
        for (a, codes, labels, maps), lev in zip(cols, node):
            gen[a] = pc.take(labels[lev], pc.take(pa.array(maps[lev]), codes))
        gen["occupation"] = table.column("occupation")
        rel = Release.from_table(pa.table(gen), sensitive="occupation", qi=QI)
        if crit.local:
            q = np.bincount(lat._sens_rows, minlength=len(lat.values)) / lat.n_rows
            sat.append(bool(crit.group_ok(rel, q).all()))
        else:
            sat.append(bool(crit(rel)))
    return np.array(sat)


def bench_lattice_adult(benchmark, full):
    from fastpriv.anonymize.lattice import GeneralizationLattice
    from fastpriv.datasets import load_adult

    adult = load_adult(QI + ["occupation"])
    if not full:
        adult = adult.slice(0, 5000)
    t0 = time.perf_counter()
    lat = GeneralizationLattice(adult, QI, "occupation")
    t_build_first = time.perf_counter() - t0
    t_build = best_time(lambda: GeneralizationLattice(adult, QI, "occupation"), repeat=3)
    rows = []
    for crit in _criteria():
        t0 = time.perf_counter()
        res = lat.search(crit, materialize=False)
        first = time.perf_counter() - t0
        t_search = best_time(lambda crit=crit: lat.search(crit, materialize=False), repeat=5)
        t_mat = best_time(lambda crit=crit: lat.search(crit), repeat=3)
        exh = lat.search(crit, strategy="exhaustive", materialize=False)
        t_exh = best_time(lambda crit=crit: lat.search(crit, strategy="exhaustive",
                                                       materialize=False), repeat=3)
        t0 = time.perf_counter()
        arrow_sat = _arrow_exhaustive(adult, lat, crit)
        t_arrow = time.perf_counter() - t0
        assert exh.minimal == res.minimal
        assert np.array_equal(arrow_sat, exh.satisfying)
        row = {"criterion": crit.name, "n_nodes": lat.n_nodes, "nodes_checked": res.n_checked,
               "n_satisfying": res.n_satisfying, "minimal": [list(n) for n in res.minimal],
               "best": list(res.best) if res.best else None,
               "search_s": t_search, "search_with_release_s": t_mat,
               "first_call_s": first, "exhaustive_s": t_exh,
               "arrow_roundtrip_exhaustive_s": t_arrow,
               "speedup_vs_exhaustive": t_exh / t_search,
               "speedup_vs_arrow_roundtrip": t_arrow / t_search,
               "per_check_ms": 1e3 * t_exh / lat.n_nodes}
        rows.append(row)
        print(f"\n{crit.name}: {t_search * 1e3:.1f} ms, {res.n_checked}/72 checked, "
              f"exhaustive {t_exh * 1e3:.1f} ms, Arrow round trip {t_arrow * 1e3:.0f} ms, "
              f"best {res.best}")
    import fastpriv.predicates as P

    benchmark.extra_info["rows"] = adult.num_rows
    benchmark.pedantic(lambda: lat.search(P.KAnonymity(10), materialize=False), rounds=10,
                       iterations=1)
    write_result("anonymize_lattice", {
        "data": f"UCI Adult, {adult.num_rows} rows", "qi": QI, "sensitive": "occupation",
        "heights": list(lat.heights), "n_cells": lat.n_cells,
        "lattice_build_s": t_build, "lattice_build_first_call_s": t_build_first,
        "criteria": rows,
        "max_search_s": max(r["search_s"] for r in rows),
        "goal": "each search under 1 s after JIT"}, full)


def _mondrian_user_local(table, qi, kw):
    """The same rule driven from Python, criterion checked on the two halves."""
    import fastpriv.predicates as P
    from fastpriv.anonymize import mondrian

    crit = P.criteria_from(min_size=kw["min_size"])

    class HalvesOnly(P.Criterion):
        local = True
        name = "python-local"

        def __call__(self, rel):
            return crit(rel)

    return mondrian(table, qi=qi, sensitive="sensitive", predicate=HalvesOnly())


def bench_mondrian_synthetic(benchmark, full):
    from fastpriv.anonymize import mondrian
    from fastpriv.datasets import load_adult, synthetic

    qi = ["q0", "q1", "q2", "q3"]
    sizes = [100_000, 1_000_000] if full else [20_000]
    base_n = 100_000 if full else 10_000
    crits = [{"min_size": 10}, {"min_size": 10, "l": 3}, {"t": 0.2}]
    out = []
    table = None
    for n in sizes:
        table = synthetic(n, qi_cardinalities=[100, 50, 20, 10], n_values=20, seed=0)
        for kw in crits:
            mondrian(table, qi=qi, sensitive="sensitive", **kw)  # warm-up
            res = None

            def run(kw=kw, table=table):
                return mondrian(table, qi=qi, sensitive="sensitive", **kw)

            t = best_time(run, repeat=3)
            res = run()
            assert res.path == "compiled"
            out.append({"n_rows": n, "criterion": res.params["criterion"], "seconds": t,
                        "n_groups": res.release.n_groups, "n_cells": res.n_cells,
                        "breakdown_s": res.seconds,
                        "min_group_size": int(res.release.sizes.min())})
            print(f"\nMondrian {n} rows {kw}: {t:.2f} s, {res.release.n_groups} groups "
                  f"({res.seconds})")
    # same-run baseline: the Python-driven rule on base_n rows
    small = synthetic(base_n, qi_cardinalities=[100, 50, 20, 10], n_values=20, seed=0)
    kw = {"min_size": 10}
    fast = mondrian(small, qi=qi, sensitive="sensitive", **kw)
    t_fast = best_time(lambda: mondrian(small, qi=qi, sensitive="sensitive", **kw), repeat=3)
    t0 = time.perf_counter()
    slow = _mondrian_user_local(small, qi, kw)
    t_slow = time.perf_counter() - t0
    assert np.array_equal(fast.group_ids, slow.group_ids)
    baseline = {"n_rows": base_n, "criterion": "k-anonymity(k=10)", "compiled_s": t_fast,
                "python_driver_s": t_slow, "speedup": t_slow / t_fast,
                "n_groups": fast.release.n_groups}
    print(f"\nbaseline {base_n} rows: compiled {t_fast:.3f} s vs Python-driven {t_slow:.2f} s")
    adult = load_adult(QI + ["occupation"])
    if not full:
        adult = adult.slice(0, 5000)
    adult_rows = []
    for kw in ({"min_size": 10}, {"min_size": 10, "l": 3}, {"t": 0.2},
               {"c": 0.7, "k": 3, "knowledge_kind": "negations"}):
        t = best_time(lambda kw=kw: mondrian(adult, qi=QI, sensitive="occupation", **kw),
                      repeat=3)
        res = mondrian(adult, qi=QI, sensitive="occupation", **kw)
        adult_rows.append({"criterion": res.params["criterion"], "seconds": t,
                           "n_groups": res.release.n_groups})
    t0 = time.perf_counter()
    res_ck = mondrian(adult, qi=QI, sensitive="occupation", c=0.8, k=3)
    adult_rows.append({"criterion": res_ck.params["criterion"], "path": "python (non-local)",
                       "seconds": time.perf_counter() - t0,
                       "n_groups": res_ck.release.n_groups})
    benchmark.extra_info["rows"] = sizes[-1]
    benchmark.pedantic(lambda: mondrian(table, qi=qi, sensitive="sensitive", min_size=10),
                       rounds=3, iterations=1)
    write_result("anonymize_mondrian", {
        "data": "fastpriv.datasets.synthetic(n, qi_cardinalities=[100, 50, 20, 10], "
                "n_values=20, seed=0)",
        "runs": out, "python_driver_baseline": baseline, "adult": adult_rows}, full)


def _numpy_estimates(wl, an, qs):
    """Per-query NumPy over the rows: generalized estimator (and exact counts)."""
    by = {a.name: a for a in an.attributes}
    fr_rows = []
    for a, name in enumerate(wl.qi):
        x = by[name]
        lens = np.diff(x.member_indptr)
        fr_rows.append((x, lens, a))
    est = np.empty(len(qs))
    act = np.empty(len(qs))
    for i, q in enumerate(qs):
        sm = wl.smask[q][wl._row_s].astype(bool)
        ok = sm.copy()
        f = sm.astype(np.float64)
        for x, lens, a in fr_rows:
            mask = wl.masks[q, wl._off[a]:wl._off[a + 1]]
            ok &= mask[wl._row_codes[a]].astype(bool)
            hits = np.add.reduceat(mask[x.members], x.member_indptr[:-1]) if len(x.members) \
                else np.zeros(len(lens))
            f *= (hits / lens)[x.codes]
        est[i] = f.sum()
        act[i] = ok.sum()
    return est, act


def bench_query_error(benchmark, full):
    from fastpriv.anonymize import lattice_search, mondrian
    from fastpriv.datasets import load_adult
    from fastpriv.metrics import CountQueries

    adult = load_adult(QI + ["occupation"])
    nq = 10_000 if full else 1_000
    CountQueries(adult, qi=QI, sensitive="occupation", n_queries=50, seed=1)  # warm-up
    t_wl = best_time(lambda: CountQueries(adult, qi=QI, sensitive="occupation", n_queries=nq,
                                          seed=0), repeat=3)
    wl = CountQueries(adult, qi=QI, sensitive="occupation", n_queries=nq, seed=0)
    m = mondrian(adult, qi=QI, sensitive="occupation", min_size=10)
    lat = lattice_search(adult, qi=QI, sensitive="occupation", min_size=10).anonymized
    wl.estimate(m)
    t_gen = best_time(lambda: wl.estimate(m), repeat=3)
    t_buck = best_time(lambda: wl.estimate(m, "bucketized"), repeat=3)
    t_lat = best_time(lambda: wl.estimate(lat), repeat=3)
    n_base = 500 if full else 100
    qs = list(range(n_base))
    t0 = time.perf_counter()
    est_np, act_np = _numpy_estimates(wl, m, qs)
    t_np = time.perf_counter() - t0
    est = wl.estimate(m)
    np.testing.assert_allclose(est[:n_base], est_np, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(wl.actual[:n_base], act_np)
    errs = {"mondrian_k10_generalized": wl.relative_error(m).to_dict(),
            "mondrian_k10_bucketized": wl.relative_error(m, "bucketized").to_dict(),
            "lattice_k10_best_node": wl.relative_error(lat).to_dict()}
    per_q_np = t_np / n_base
    per_q_fast = t_gen / nq
    print(f"\n{nq} queries: workload {t_wl:.3f} s, Mondrian generalized {t_gen:.3f} s, "
          f"bucketized {t_buck:.3f} s, lattice {t_lat:.3f} s; NumPy per query "
          f"{per_q_np * 1e3:.2f} ms vs {per_q_fast * 1e3:.3f} ms")
    benchmark.extra_info["n_queries"] = nq
    benchmark.pedantic(lambda: wl.estimate(m), rounds=3, iterations=1)
    write_result("anonymize_queries", {
        "data": "UCI Adult, 45,222 rows", "qi": QI, "sensitive": "occupation",
        "n_queries": nq, "qd": wl.qd, "selectivity": wl.selectivity,
        "workload_s": t_wl, "estimate_generalized_s": t_gen, "estimate_bucketized_s": t_buck,
        "estimate_lattice_s": t_lat,
        "numpy_per_query_s": per_q_np, "fast_per_query_s": per_q_fast,
        "speedup_vs_numpy_per_query": per_q_np / per_q_fast,
        "numpy_baseline_queries": n_base, "relative_errors": errs}, full)


_COLD_CODE = ("import fastpriv as fp\n"
              "from fastpriv.anonymize import lattice_search, mondrian\n"
              "from fastpriv.metrics import query_error\n"
              "t = fp.datasets.load_adult()\n"
              "qi = ['age', 'marital_status', 'race', 'sex']\n"
              "lattice_search(t, qi=qi, sensitive='occupation', min_size=10, l=3)\n"
              "r = mondrian(t, qi=qi, sensitive='occupation', min_size=10, t=0.2)\n"
              "query_error(t, r, n_queries=1000)\n")


@pytest.mark.slow   # starts fresh interpreters
def bench_cold_start(benchmark, full):
    """Fresh interpreters (full mode); smoke mode runs the same script in-process."""
    if not full:
        benchmark.pedantic(lambda: exec(_COLD_CODE, {}), rounds=1, iterations=1)
        return
    no_cache = cold_start(_COLD_CODE, no_cache=True)
    cached = benchmark.pedantic(lambda: cold_start(_COLD_CODE, no_cache=False), rounds=1,
                                iterations=1)
    write_result("anonymize_cold_start", {"script": _COLD_CODE, "no_cache_s": no_cache,
                                          "cached_s": cached}, full)
