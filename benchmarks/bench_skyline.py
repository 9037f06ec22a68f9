"""Benchmarks: Chen et al. Figure 7 — SkylineCheck vs the Appendix A6 DP.

Setting (experiments.md): synthetic SVPI releases from
``fastpriv.datasets.synthetic(n, group_size=100, n_values=20)`` — 20 uniformly distributed
values, every group exactly 100 individuals — σ = ``"v00"``. The improvement ratio is
time(DP) / time(SkylineCheck) for the same (σ, ℓ, k, m), with the same answer required
(checked on every point: equal minNR to 1e-12 relative, bit-identity recorded). Both sides
are compiled Numba kernels, JIT-warmed before timing, single-threaded, timed in the same
run: the DP as the best of 2–4 runs, SkylineCheck as the per-call mean over loops lasting
about as long as one DP run (best of 2 loops) — so both sides see the same machine load
(this machine is shared; a best-of-many of a 1 ms call would otherwise pick quiet moments
a multi-second DP cannot). Two ratios per point:

* **end-to-end** — both start from the built :class:`~fastpriv.Release` and do their own
  pass: ``skyline.check(rel, skylines={σ: [(ℓ,k,m,c)]})`` (the whole public call, Python included)
  vs ``skyline.dp_breach_probability(rel, σ, ℓ,k,m)``. SkylineCheck streams the groups
  holding σ through the release's occurrence index (``Release.value_index`` +
  ``Release.top_prefix``: σ-, ℓ-, k- and m-independent, built by the first check in one
  O(entries) pass and kept), and of those only the (σ, ℓ) records — each (n, #σ) class's
  S_ℓ staircase, k- and m-independent, found by the first check at that σ and ℓ and kept
  for the release (``skyline.forget_indexes`` drops them). So ``ratio`` is the ratio of a *repeated*
  check at that (σ, ℓ) — the situation of skyline exploration, where one (σ, ℓ) is asked
  at many k, m, c. Each point also records ``check_cold_s``: the same call with the
  records dropped before every call (it re-finds them: one pass over σ's occurrences),
  and ``cold_ratio``; panel (a) records the occurrence-index build (``index_s``) and the
  ratio of a first check on a fresh release that pays both (``first_check_ratio``).
* **prepared** — both run on the same per-group inputs (n_g, #σ_g, S_ℓ prefixes) extracted
  once by :func:`fastpriv.skyline.prepare`: ``tables.min_nr`` (Theorem 2) vs
  ``tables.dp_min_nr`` (A6). This isolates the algorithms, as Chen's CPU-time comparison
  ("both algorithms have the same IO time") does.

Panels: (a) (10,10,10) for 1M..5M rows; (b) ℓ = 0..16 (k = m = 10); (c) k = 0..32
(ℓ = m = 10); (d) m = 0..16 (ℓ = k = 10). Full mode runs (a) at 1M–5M rows and the sweeps
(b)–(d) at ``FASTPRIV_SKYLINE_SWEEP_ROWS`` rows (default 1,000,000: the DP at k = 32 costs
~O(k²m²) per group and the whole k sweep is ~30 s per million rows; the ratios are flat in
size, as panel (a) shows). Smoke mode: 20k–40k rows and short sweeps.

Also measured: SkylineCheck for 100 skyline points on the largest release (one σ, and the
same 100 points for every value: 2,000 (σ, point) pairs), sequential and parallel; the
cold-start (JIT) latency in a fresh interpreter.

Results: ``benchmarks/results/skyline_figure7.json`` + ``skyline_figure7.png``,
``skyline_points.json``, ``skyline_cold_start.json`` (smoke runs go to results/smoke/).
"""

from __future__ import annotations

import math
import os
import random
import time

import pytest

from benchmarks._common import best_time, cold_start, write_result
from fastpriv import Release
from fastpriv import skyline as sky

SIGMA = "v00"
C = 0.9
PAPER = {"a_ratio_10_10_10": 140, "c_ratio_k32": 1000}
GOALS = {"ratio_10_10_10": 1000, "ratio_k32": 10000, "points_100_5M_seconds": 1.0}


def _settings(full: bool) -> dict:
    if full:
        sweep = int(os.environ.get("FASTPRIV_SKYLINE_SWEEP_ROWS", 1_000_000))
        return {"sizes": [1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000],
                "sweep_rows": sweep, "l": list(range(17)), "k": list(range(33)),
                "m": list(range(17))}
    return {"sizes": [20_000, 40_000], "sweep_rows": 20_000, "l": [0, 2, 4],
            "k": [0, 4, 8], "m": [0, 2, 4]}


_RELEASES: dict = {}


def _release(n_rows: int) -> Release:
    if n_rows not in _RELEASES:
        from fastpriv.datasets import synthetic

        table = synthetic(n_rows, group_size=100, n_values=20, seed=n_rows)
        _RELEASES.clear()      # keep one large release in memory at a time
        _RELEASES[n_rows] = Release.from_table(table, sensitive="sensitive", group="group")
    return _RELEASES[n_rows]


def _warm() -> None:
    rel = Release.from_groups([["v00", "v01", "v00"], ["v01", "v02"]])
    sky.check(rel, skylines={SIGMA: [(1, 1, 1, C)]}, parallel=False)
    sky.check(rel, skylines={SIGMA: [(1, 1, 1, C)]}, parallel=True)
    for method in ("classes", "direct"):       # every kernel the points benchmark times
        for par in (False, True):
            sky.check(rel, skylines={"*": [(1, 1, 1, C)] * 9}, parallel=par, method=method)
    sky.dp_breach_probability(rel, sigma=SIGMA, l=1, k=1, m=1)
    t = sky.prepare(rel, sigma=SIGMA)
    t.min_nr(1, 1, 1)
    t.dp_min_nr(1, 1, 1)


def _same(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


def _dp_time(fn, first_seconds: float) -> float:
    """Best of the first and 1–3 more DP runs."""
    reps = 3 if first_seconds < 0.25 else 1
    return min(first_seconds, best_time(fn, repeat=reps))


def _matched_time(fn, budget: float, trials: int = 2) -> float:
    """Per-call time of ``fn`` averaged over loops lasting about ``budget`` seconds (the DP's
    run time), best of ``trials`` loops. On a shared machine a best-of-many of a
    millisecond call would pick quiet moments that a multi-second DP run cannot, inflating
    the ratio; averaging over the same wall time exposes both sides to the same load."""
    single = best_time(fn, repeat=3)
    reps = max(3, int(budget / max(single, 1e-9)))
    best = float("inf")
    for _ in range(trials):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


_FLOOR = {"s": 0.2}   # shortest SkylineCheck timing loop (smoke mode: 0.01 s)


def _point(rel: Release, tables, l: int, k: int, m: int) -> dict:
    check = lambda: sky.check(rel, skylines={SIGMA: [(l, k, m, C)]}, parallel=False)   # noqa: E731
    dp = lambda: sky.dp_breach_probability(rel, sigma=SIGMA, l=l, k=k, m=m)                # noqa: E731
    res = check().points[0]
    t0 = time.perf_counter()
    d = dp()
    t_dp_first = time.perf_counter() - t0
    assert _same(res.min_nr, d.min_nr), (l, k, m, res.min_nr, d.min_nr)
    t_dp = _dp_time(dp, t_dp_first)
    t_check = _matched_time(check, max(_FLOOR["s"], min(t_dp, 3.0)))
    t_cold = _matched_time(lambda: (sky.forget_indexes(rel), check()),
                           max(_FLOOR["s"], min(t_dp, 3.0)))
    # prepared inputs: the algorithms alone
    p_nr = tables.min_nr(l, k, m)
    t0 = time.perf_counter()
    p_dp = tables.dp_min_nr(l, k, m)
    t_pdp_first = time.perf_counter() - t0
    assert p_nr == res.min_nr and _same(p_dp, p_nr), (l, k, m, p_nr, p_dp)
    t_pdp = _dp_time(lambda: tables.dp_min_nr(l, k, m), t_pdp_first)
    t_pcheck = _matched_time(lambda: tables.min_nr(l, k, m),
                             max(_FLOOR["s"], min(t_pdp, 3.0)))
    return {"l": l, "k": k, "m": m, "bp": res.value, "min_nr": res.min_nr,
            "case_used": res.case_used, "identical_bits": res.min_nr == d.min_nr,
            "check_s": t_check, "dp_s": t_dp, "ratio": t_dp / t_check,
            "check_cold_s": t_cold, "cold_ratio": t_dp / t_cold,
            "prepared_check_s": t_pcheck, "prepared_dp_s": t_pdp,
            "prepared_ratio": t_pdp / t_pcheck}


def _fmt(row: dict, key: str) -> str:
    return (f"  {key}={row[key]:>9}  BP={row['bp']:.4f}  check {row['check_s'] * 1e3:8.3f} ms"
            f"  DP {row['dp_s'] * 1e3:10.1f} ms  ratio {row['ratio']:9.0f}"
            f" (cold {row['cold_ratio']:7.0f})   |  prepared: "
            f"{row['prepared_check_s'] * 1e3:7.3f} ms vs {row['prepared_dp_s'] * 1e3:9.1f} ms"
            f"  ratio {row['prepared_ratio']:9.0f}")


def bench_skyline_figure7(benchmark, full):
    cfg = _settings(full)
    _FLOOR["s"] = 0.2 if full else 0.01
    _warm()
    out: dict = {"settings": {**cfg, "sigma": SIGMA, "c": C, "group_size": 100,
                              "n_values": 20, "distribution": "uniform",
                              "threads": "single-threaded on both sides"},
                 "published": PAPER, "goals": GOALS}
    # (a) sizes
    series_a = []
    print("\n(a) (l,k,m) = (10,10,10), size:")
    for n in cfg["sizes"]:
        rel = _release(n)
        # the release's occurrence index, built by the first check and kept (σ-independent)
        t0 = time.perf_counter()
        _ = rel.value_index, rel.top_prefix
        index_s = time.perf_counter() - t0
        tables = sky.prepare(rel, sigma=SIGMA, l_max=16)
        row = {"rows": n, "groups": rel.n_groups, **_point(rel, tables, 10, 10, 10)}
        row["index_s"] = index_s
        row["first_check_ratio"] = row["dp_s"] / (index_s + row["check_cold_s"])
        # for information: the same check scanning the groups on every core (min-reduction)
        row["check_parallel_s"] = _matched_time(
            lambda rel=rel: sky.check(rel, skylines={SIGMA: [(10, 10, 10, C)]}, parallel=True),
            max(_FLOOR["s"], min(row["dp_s"], 3.0)))
        series_a.append(row)
        print(_fmt(row, "rows"))
    out["a_size"] = series_a
    # headline: SkylineCheck from the largest Release
    rel = _release(cfg["sizes"][-1])
    benchmark.extra_info["release"] = repr(rel)
    benchmark.pedantic(lambda: sky.check(rel, skylines={SIGMA: [(10, 10, 10, C)]}, parallel=False),
                       rounds=10, iterations=1)
    # (b)-(d) sweeps
    rel = _release(cfg["sweep_rows"])
    tables = sky.prepare(rel, sigma=SIGMA, l_max=16)
    out["sweep_release"] = {"rows": rel.n_rows, "groups": rel.n_groups}
    for name, key, grid in (("b_l", "l", cfg["l"]), ("c_k", "k", cfg["k"]),
                            ("d_m", "m", cfg["m"])):
        print(f"\n({name[0]}) {key} sweep on {rel.n_rows:,} rows:")
        rows = []
        for x in grid:
            lkm = {"l": 10, "k": 10, "m": 10, key: x}
            row = _point(rel, tables, lkm["l"], lkm["k"], lkm["m"])
            rows.append(row)
            print(_fmt(row, key))
        out[name] = rows
    r10 = series_a[-1]
    k_last = out["c_k"][-1]
    out["summary"] = {
        "ratio_10_10_10_largest": r10["ratio"],
        "prepared_ratio_10_10_10_largest": r10["prepared_ratio"],
        "cold_ratio_10_10_10_largest": r10["cold_ratio"],
        "first_check_ratio_10_10_10_largest": r10["first_check_ratio"],
        "ratio_k_max": k_last["ratio"], "prepared_ratio_k_max": k_last["prepared_ratio"],
        "cold_ratio_k_max": k_last["cold_ratio"],
        "k_max": k_last["k"],
        "goal_10_10_10_met": {"end_to_end": r10["ratio"] >= GOALS["ratio_10_10_10"],
                              "prepared": r10["prepared_ratio"] >= GOALS["ratio_10_10_10"]},
        "goal_k32_met": {"end_to_end": k_last["ratio"] >= GOALS["ratio_k32"],
                         "prepared": k_last["prepared_ratio"] >= GOALS["ratio_k32"]},
        "all_answers_equal": True,
        "bit_identical_fraction": sum(r["identical_bits"] for part in
                                      ("a_size", "b_l", "c_k", "d_m") for r in out[part])
        / sum(len(out[part]) for part in ("a_size", "b_l", "c_k", "d_m")),
    }
    print("\nsummary:", out["summary"])
    path = write_result("skyline_figure7", out, full)
    _plot(out, path.with_suffix(".png"))


def _plot(out: dict, dest) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    panels = [("a_size", "rows", "(a) (ℓ,k,m)=(10,10,10), size", "records"),
              ("b_l", "l", "(b) ℓ (k = m = 10)", "ℓ"),
              ("c_k", "k", "(c) k (ℓ = m = 10)", "k"),
              ("d_m", "m", "(d) m (ℓ = k = 10)", "m")]
    for ax, (part, key, title, xlabel) in zip(axes.ravel(), panels, strict=False):
        rows = out[part]
        xs = [r[key] for r in rows]
        ax.plot(xs, [r["ratio"] for r in rows], "o-",
                label="end-to-end, repeated (σ, ℓ) (records kept)")
        ax.plot(xs, [r["cold_ratio"] for r in rows], "^-.",
                label="end-to-end, records re-found every call")
        ax.plot(xs, [r["prepared_ratio"] for r in rows], "s--",
                label="prepared inputs (algorithms only)")
        if part == "a_size":
            ax.axhline(PAPER["a_ratio_10_10_10"], color="gray", ls=":",
                       label="Chen et al. ≈140×")
        if part == "c_k":
            ax.plot([32], [PAPER["c_ratio_k32"]], "k*", ms=10, label="Chen et al. ≈1000× at k=32")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time(DP) / time(SkylineCheck)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Chen et al. Figure 7 reproduction: SkylineCheck vs A6 dynamic program "
                 "(SVPI, 20 uniform values, groups of 100)", fontsize=10)
    fig.tight_layout()
    fig.savefig(dest, dpi=110)
    plt.close(fig)


def bench_skyline_points(benchmark, full):
    """SkylineCheck with 100 skyline points on the largest release (absolute time)."""
    cfg = _settings(full)
    _warm()
    rel = _release(cfg["sizes"][-1])
    rng = random.Random(4)
    pts = [(rng.randint(0, 16), rng.randint(0, 32), rng.randint(0, 16), C) for _ in range(100)]
    benchmark.extra_info["release"] = repr(rel)
    benchmark.pedantic(lambda: sky.check(rel, skylines={SIGMA: pts}, parallel=False), rounds=5,
                       iterations=1)
    res = {}
    for label, skylines in (("one_sigma_100_points", {SIGMA: pts}),
                            ("every_value_100_points", {"*": pts})):
        ref = None
        for method, par in (("classes", False), ("classes", True), ("direct", False),
                            ("direct", True)):
            def fn(skylines=skylines, par=par, method=method):
                return sky.check(rel, skylines=skylines, parallel=par, method=method)

            t0 = time.perf_counter()
            r = fn()
            first = time.perf_counter() - t0
            t = best_time(fn, repeat=3) if first < 2.0 else first
            name = f"{label}_{method}_{'parallel' if par else 'sequential'}_s"
            res[name] = t
            res[name[:-2] + "_first_call_s"] = first   # direct: builds the (σ, ℓ) records
            res[f"{label}_pairs"] = len(r.points)
            print(f"\n{label} ({len(r.points)} (σ, point) pairs), {method}, "
                  f"{'parallel' if par else 'sequential'}: {t * 1e3:.1f} ms "
                  f"(first call {first * 1e3:.1f} ms)")
            vals = [(p.value, p.statistics) for p in r.points]
            assert ref is None or vals == ref
            ref = vals
        # spot-check against breach_probability
        for p in r.points[:3]:
            assert sky.breach_probability(rel, sigma=p.sigma, l=p.l, k=p.k, m=p.m).value == p.value
    import numba

    write_result("skyline_points", {"release": {"rows": rel.n_rows, "groups": rel.n_groups},
                                    "threads": numba.config.NUMBA_NUM_THREADS,
                                    "goal_seconds": GOALS["points_100_5M_seconds"], **res},
                 full)


@pytest.mark.slow   # starts fresh interpreters
def bench_skyline_cold_start(benchmark, full):
    """First-call latency in a fresh interpreter: with the on-disk Numba cache (smoke and
    full) and with the cache disabled, i.e. compiling every kernel used (full mode only:
    it takes tens of seconds)."""
    code = ("import fastpriv as fp; from fastpriv import skyline as s; "
            "rel = fp.Release.from_groups([['a','b','a'],['b','a']]); "
            "s.check(rel, skylines={'a': [(1,1,1,0.9)]}, parallel=False); "
            "s.breach_probability(rel, sigma='a', l=1, k=1, m=1); "
            "s.dp_breach_probability(rel, sigma='a', l=1, k=1, m=1); "
            "s.knowledge_skyline(rel, sigma='a', c=0.9)")
    cached = benchmark.pedantic(lambda: cold_start(code, no_cache=False), rounds=1,
                                iterations=1)
    no_cache = cold_start(code, no_cache=True) if full else None
    print(f"\ncold start: {cached:.2f} s from the on-disk cache"
          + (f", {no_cache:.1f} s compiling everything" if full else ""))
    write_result("skyline_cold_start", {"no_cache_s": no_cache, "cached_s": cached,
                                        "code": code}, full)
