"""Benchmarks: the foreground-knowledge attack on Adult (Wong et al., Section 5).

* **Reproduction** (``foreground_reproduction.json`` / ``.png``): Adult (45,222 rows),
  QI = the first q of Age, Workclass, Marital status, Occupation, Race, Sex, Native country,
  Salary class (q = 3..8; default 5), sensitive = Education with the low-education set
  {Preschool, 1st-4th, 5th-6th, 7th-8th} attacked as ONE value x ("low education", 3.46 %
  of the rows) — as the paper does ("regarded as a sensitive value set where an adversary
  checks whether each individual is linked to this set"). Releases: Anatomy with ℓ = r
  for r = 2, 4, 10, the set protected as one sensitive value (each group holds at most one
  low-education row; plain Anatomy on all 16 values is not eligible beyond ℓ = 3). ε = 0.01,
  δ = 0.9 (J = 3,993). Measures: recall (problematic among sensitive tuples), false flags
  (problematic among the others), average breach probability over sensitive tuples,
  average relative error of the mined distributions against the original table's, mining
  time. Mean ± sd over Anatomy seeds, under each rule for tuples with an unreliable
  signature (``unreliable=``): pooled (one extra unknown per attribute set, the default),
  uniform (1/2, the paper's "uniform distribution will be assumed") and global (the rate
  of x), with the published numbers beside; both error measures of the mined
  distributions (mean relative and mean absolute).
* **Batched vs one by one** (``foreground_batched.json``): the same systems solved by the
  batched parallel kernel (one call) and by a Python loop calling the single-system path
  once per system (each system pre-packed on its own, outside the timing; one kernel call
  each, as :func:`fastpriv.foreground.fit_global_distribution` does), same run, identical
  answers required; also the batched kernel on one thread (per-call overhead vs
  parallelism).
* **Cold start** (``foreground_cold_start.json``, full mode): a fresh interpreter running
  one attack with the on-disk Numba cache disabled (full compile) and enabled.

Headline (pytest-benchmark): mining + attack on Adult, r = 2, default QI (5 attributes).
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from benchmarks._common import RESULTS, best_time, cold_start, write_result
from fastpriv import foreground as fg
from fastpriv.anonymize import anatomy

QI = ["age", "workclass", "marital_status", "occupation", "race", "sex", "native_country",
      "income"]
LOW = ["Preschool", "1st-4th", "5th-6th", "7th-8th"]
X = {"low education": LOW}

#: The paper's numbers (Section 5.1; Anatomy, ℓ = r; QI size 5 unless stated).
PUBLISHED = {
    "r=2,q=5": {"avg_breach_probability": 0.8917, "recall": "> 0.99",
                "false_flag_rate": "< 0.06"},
    "r=4,q=5": {"avg_breach_probability": 0.4640},
    "r=2,q=3": {"avg_breach_probability": 0.80307},
    "r=2,q=8": {"avg_breach_probability": 0.943526},
    "relative_error": {"l=2": 0.007, "l=10": 0.0526},
    "mining_time": "<= 12 minutes (C++, Pentium IV 2.2 GHz)",
}


def _adult():
    from fastpriv.datasets import load_adult

    return load_adult().select(QI + ["education"])


def _release(adult, r, seed):
    res = anatomy(adult, sensitive="education", l=r, seed=seed, sensitive_values=LOW)
    return res.auditor_view(adult)


def _attack(joined, r, q, unreliable="pooled"):
    return fg.attack(joined, qi=QI[:q], sensitive="education", group="group_id", r=r,
                     sensitive_values=X, epsilon=0.01, confidence=0.9, original=joined,
                     unreliable=unreliable)


def _summ(vals):
    vals = [v for v in vals if v == v]
    if not vals:
        return None
    return {"mean": statistics.fmean(vals),
            "sd": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "min": min(vals), "max": max(vals)}


# ------------------------------------------------------------------------ reproduction
def bench_foreground_reproduction(benchmark, full):
    adult = _adult()
    seeds = list(range(5)) if full else [0]
    rs = (2, 4, 10) if full else (2,)
    qs = range(3, 9) if full else (3, 5)
    modes = ("pooled", "uniform", "global") if full else ("pooled",)
    # warm-up (JIT) and first-call latency
    joined0 = _release(adult, 2, 0)
    t0 = time.perf_counter()
    _attack(joined0, 2, 5)
    first_call = time.perf_counter() - t0

    res = benchmark.pedantic(lambda: _attack(joined0, 2, 5), rounds=3, iterations=1)
    headline = best_time(lambda: _attack(joined0, 2, 5), repeat=3)
    rows = []
    for r in rs:
        for seed in seeds:
            joined = _release(adult, r, seed)
            for q in qs:
                for mode in modes:
                    t0 = time.perf_counter()
                    a = _attack(joined, r, q, mode)
                    dt = time.perf_counter() - t0
                    m = a.measures
                    rows.append({"r": r, "q": q, "seed": seed, "unreliable": mode,
                                 "recall": m["recall"],
                                 "false_flag_rate": m["false_flag_rate"],
                                 "avg_breach_probability": m["avg_breach_probability"],
                                 "avg_relative_error": m["avg_relative_error"],
                                 "avg_absolute_error": m["avg_absolute_error"],
                                 "n_problematic": a.n_problematic,
                                 "n_systems": a.mined.n_systems,
                                 "n_attribute_sets": len(a.mined.attribute_sets),
                                 "flags": sorted({f for s in a.mined.systems()
                                                  for f in s["flags"]}),
                                 "mining_s": a.seconds["mining"],
                                 "posteriors_s": a.seconds["posteriors"], "total_s": dt})
    table = {}
    for r in rs:
        for q in qs:
            for mode in modes:
                sel = [x for x in rows if x["r"] == r and x["q"] == q and x["unreliable"] == mode]
                table[f"r={r},q={q},{mode}"] = {
                    k: _summ([x[k] for x in sel]) for k in
                    ("recall", "false_flag_rate", "avg_breach_probability",
                     "avg_relative_error", "avg_absolute_error", "total_s", "mining_s")}
                table[f"r={r},q={q},{mode}"]["n_systems"] = sel[0]["n_systems"]
    print("\nForeground attack on Anatomy releases of Adult (mean over "
          f"{len(seeds)} seed(s)); published in brackets")
    print(f"{'r':>3} {'q':>2} {'unreliable':>10} {'recall':>8} {'false fl':>9} "
          f"{'avg breach':>11} {'rel err':>8} {'time s':>7}")
    for key, v in table.items():
        r, q, mode = key.split(",")
        pub = PUBLISHED.get(f"{r},{q}", {}).get("avg_breach_probability")
        print(f"{r[2:]:>3} {q[2:]:>2} {mode:>10} {v['recall']['mean']:8.4f} "
              f"{v['false_flag_rate']['mean']:9.4f} {v['avg_breach_probability']['mean']:11.4f}"
              f"{'' if pub is None else f' [{pub}]':>9} {v['avg_relative_error']['mean']:8.4f} "
              f"{v['total_s']['mean']:7.3f}")
    slowest = max(rows, key=lambda x: x["total_s"])
    payload = {
        "setting": {"qi_order": QI, "sensitive": "education", "x": X, "epsilon": 0.01,
                    "delta": 0.9, "min_support": res.mined.min_support,
                    "anatomy": "l = r, the low-education set protected as one value",
                    "seeds": seeds},
        "published": PUBLISHED,
        "ours": table,
        "runs": rows,
        "headline": {"what": "mining + attack, r = 2, QI size 5, seed 0, after JIT",
                     "seconds_best_of_3": headline, "first_call_s": first_call,
                     "n_systems": res.mined.n_systems},
        "slowest_config": {k: slowest[k] for k in ("r", "q", "unreliable", "total_s",
                                                   "n_systems")},
        "all_under_10s": all(x["total_s"] < 10 for x in rows),
    }
    path = write_result("foreground_reproduction", payload, full)
    benchmark.extra_info["headline_s"] = headline
    assert all(not any(f in ("max_iter", "numerical_trouble") for f in x["flags"])
               for x in rows)
    if full:
        _plot(table, rs, qs, modes)
    print(f"  wrote {path}")


def _plot(table, rs, qs, modes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    colors = {2: "C0", 4: "C1", 10: "C2"}
    for r in rs:
        for mode in modes:
            ls = {"pooled": "-", "uniform": "--"}.get(mode, ":")
            ys = [table[f"r={r},q={q},{mode}"]["avg_breach_probability"]["mean"] for q in qs]
            axes[0].plot(list(qs), ys, ls, marker="o", color=colors[r],
                         label=f"r={r}, unreliable={mode}")
            rc = [table[f"r={r},q={q},{mode}"]["recall"]["mean"] for q in qs]
            ff = [table[f"r={r},q={q},{mode}"]["false_flag_rate"]["mean"] for q in qs]
            axes[1].plot(list(qs), rc, ls, marker="o", color=colors[r],
                         label=f"r={r}, {mode}")
            axes[2].plot(list(qs), ff, ls, marker="o", color=colors[r],
                         label=f"r={r}, {mode}")
        axes[0].axhline(1 / r, color=colors[r], lw=0.6, alpha=0.5)
    axes[0].plot([5], [0.8917], "k*", ms=12, label="published r=2")
    axes[0].plot([3, 8], [0.80307, 0.943526], "kx", ms=9, label="published r=2 (q=3, 8)")
    axes[0].plot([5], [0.4640], "k^", ms=9, label="published r=4")
    axes[1].axhline(0.99, color="k", lw=0.8, ls=":", label="published r=2: > 0.99")
    axes[2].axhline(0.06, color="k", lw=0.8, ls=":", label="published: < 0.06")
    axes[0].set_title("average breach probability (sensitive tuples)")
    axes[1].set_title("recall: problematic among sensitive tuples")
    axes[2].set_title("false flags among non-sensitive tuples")
    for ax in axes:
        ax.set_xlabel("QI size")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.suptitle("Foreground attack on Anatomy (ℓ = r) releases of Adult, low-education set")
    fig.tight_layout()
    path = RESULTS / "foreground_reproduction.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"  wrote {path}")


# ------------------------------------------------------------------------ batched vs loop
def _slices(md):
    """Every system packed on its own (done once, outside the timed loop)."""
    return [fg._slice(md._packed, s) for s in range(md.n_systems)]


def _loop(md, slices):
    """The single-system path in a Python loop: one kernel call per pre-sliced system."""
    return [fg._solve_one(md._packed, s, md._params, sliced=slices[s])
            for s in range(md.n_systems)]


def _loop_pool(md, slices):
    so = np.zeros(2, dtype=np.int64)
    return [fg._solve(slices[s], so, np.zeros(1), **md._params, order=np.zeros(1, np.int64),
                      nblocks=1, sys_id=np.array([s])) for s in range(md.n_systems)]


def _batched(md):
    P = md._packed
    so = np.zeros(md.n_systems + 1, dtype=np.int64)
    return fg._solve(P, so, np.zeros(1), **md._params)


def bench_foreground_batched_vs_loop(benchmark, full):
    import numba

    adult = _adult()
    cases = []
    if full:
        cases.append(("anatomy l=10 (set), QI 8, x = low education",
                      _release(adult, 10, 0), 10, dict(sensitive_values=X)))
        full_anat = anatomy(adult, sensitive="education", l=3, seed=0).auditor_view(adult)
        cases.append(("anatomy l=3 (all values), QI 8, every education value",
                      full_anat, 3, dict(sensitive_values=None)))
    else:
        cases.append(("anatomy l=2 (set), QI 5, x = low education",
                      _release(adult, 2, 0), 2, dict(sensitive_values=X)))
    q = 8 if full else 5
    out = []
    for name, joined, _r, kw in cases:
        md = fg.mine(joined, qi=QI[:q], sensitive="education", group="group_id", **kw)
        b = _batched(md)
        slices = _slices(md)
        loop = _loop(md, slices)
        for s in range(md.n_systems):
            a, c = md._packed.var_off[s], md._packed.var_off[s + 1]
            assert np.array_equal(loop[s].F, b.F[a:c])
            assert loop[s].loglik[0] == b.loglik[s]
        # interleaved (batched, loop, batched on one thread) rounds, best of each: load
        # drift on a shared machine hits all three alike
        threads = numba.get_num_threads()
        t_b = t_l = t_b1 = float("inf")
        for _ in range(7):
            t_b = min(t_b, best_time(lambda md=md: _batched(md), repeat=1))
            t_l = min(t_l, best_time(lambda md=md, sl=slices: _loop(md, sl), repeat=1))
            numba.set_num_threads(1)
            try:
                t_b1 = min(t_b1, best_time(lambda md=md: _batched(md), repeat=1))
            finally:
                numba.set_num_threads(threads)
        # the same loop if each call woke the whole thread pool (what a naive
        # single-system call of the parallel kernel costs on a busy machine)
        t_lp = best_time(lambda md=md, sl=slices: _loop_pool(md, sl), repeat=2)
        P = md._packed
        row = {"case": name, "n_systems": md.n_systems,
               "n_variables": int(P.var_off[-1]),
               "n_mixed_groups_after_merge": int(P.grp_off[-1]),
               "threads": threads, "batched_s": t_b, "batched_1thread_s": t_b1,
               "loop_s": t_l, "loop_over_batched": t_l / t_b,
               "loop_waking_thread_pool_s": t_lp,
               "loop_over_batched_1thread": t_l / t_b1,
               "iterations_total": int(b.iterations.sum())}
        out.append(row)
        print(f"\n{name}: {md.n_systems} systems; batched {t_b:.3f} s ({threads} threads), "
              f"1 thread {t_b1:.3f} s, Python loop {t_l:.3f} s -> loop/batched "
              f"{t_l / t_b:.2f}x (1 thread: {t_l / t_b1:.2f}x); loop waking the thread "
              f"pool each call {t_lp:.3f} s")
    md0 = fg.mine(cases[0][1], qi=QI[:q], sensitive="education", group="group_id",
                  **cases[0][3])
    benchmark.pedantic(lambda: _batched(md0), rounds=3, iterations=1)
    path = write_result("foreground_batched", {"cases": out}, full)
    print(f"  wrote {path}")


# ------------------------------------------------------------------------ cold start
COLD = """
import fastpriv as fp
from fastpriv.anonymize import anatomy
from fastpriv.foreground import attack
adult = fp.datasets.load_adult()
low = ["Preschool", "1st-4th", "5th-6th", "7th-8th"]
j = anatomy(adult, sensitive="education", l=2, seed=0, sensitive_values=low).auditor_view(adult)
attack(j, qi=["age", "workclass", "marital_status", "occupation", "race"],
       sensitive="education", group="group_id", r=2, sensitive_values=[low], original=j)
"""


@pytest.mark.slow   # starts fresh interpreters
def bench_foreground_cold_start(benchmark, full):
    if not full:
        t = benchmark.pedantic(lambda: cold_start(COLD, no_cache=False), rounds=1,
                               iterations=1)
        write_result("foreground_cold_start", {"cached_s": t}, full)
        return
    cached = cold_start(COLD, no_cache=False)
    nocache = benchmark.pedantic(lambda: cold_start(COLD, no_cache=True), rounds=1,
                                 iterations=1)
    print(f"\ncold start (fresh interpreter, one Adult attack): compile everything "
          f"{nocache:.1f} s, with the on-disk cache {cached:.1f} s")
    write_result("foreground_cold_start", {"no_cache_s": nocache, "cached_s": cached,
                                           "what": COLD.strip()}, full)
