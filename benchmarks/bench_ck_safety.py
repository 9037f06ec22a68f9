"""Benchmarks: (c,k)-safety — Martin et al. Figure 5 on Adult, and synthetic scale.

* **Figure 5** (``ck_figure5.json`` / ``.png``): Adult (45,222 rows), Occupation sensitive,
  Age generalised to 20-year intervals (floor(age/20)·20, computed with pyarrow.compute),
  every other QI suppressed ⇒ the groups are the age bands. Max disclosure for k = 0..12
  against k implications and k negated atoms, printed, written and plotted, and timed.
* **Synthetic** (``ck_synthetic.json``): ``fastpriv.datasets.synthetic`` with 100k groups
  (``group_size`` = n_rows / 100k) and 14 or 20 values, 1M and 10M rows (smoke: 20k rows,
  2k groups), k = 12. In the same run and on the same Release:

  - **fast**: :func:`fastpriv.ck_safety.disclosure_curve` (profile dedupe, bound pruning
    when it pays, lane-vectorised O(k³) MINIMIZE1 on distinct profiles, pruned corrected
    MINIMIZE2 on ≤ ~k² candidate buckets);
  - **reference**: ``_kernels.ck_safety.reference_min_ratio`` — the paper's MINIMIZE1
    recursion tabulated per bucket (no sharing) followed by the straightforward
    O(|B|·k²) knapsack over every bucket; also split into its two parts;
  - the reference again with the fast path's saturation cut (disclosure is 1 from
    k = min_b d_b − 1 on, so both stop there) — with 10 rows per group the curve saturates
    at k = 2 and this is the fairer comparison;
  - the ratio reference / fast, the curve equality check, the end-to-end time from the Arrow
    table (``Release.from_table`` + curve), ``max_disclosure`` with witness, exact mode, and
    a breakdown of the fast path by stage at the largest size.
* **Cold start** (``ck_cold_start.json``): a fresh interpreter importing fastpriv and
  running every ck kernel once, with the on-disk Numba cache disabled (full compile) and
  enabled.

Headline (pytest-benchmark): the fast curve at the largest synthetic size.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from benchmarks._common import RESULTS, best_time, cold_start, write_result
from fastpriv import Release
from fastpriv import ck_safety as ck
from fastpriv._kernels import ck_safety as kern
from fastpriv._validation import kernel_array
from tests import kernels_reference as kref

K = 12


# ------------------------------------------------------------------------ Figure 5
def _figure5_release() -> Release:
    from fastpriv.datasets import load_adult

    adult = load_adult()
    age = pc.cast(adult["age"], pa.float64())
    band = pc.cast(pc.multiply(pc.floor(pc.divide(age, 20.0)), 20.0), pa.int64())
    table = pa.table({"age20": band, "occupation": adult["occupation"]})
    return Release.from_table(table, sensitive="occupation", group="age20")


def bench_figure5_adult(benchmark, full):
    rel = _figure5_release()
    ck.disclosure_curve(rel, k_max=K)                         # JIT warm-up
    ck.disclosure_curve(rel, k_max=K, knowledge_kind="negations")

    def both():
        return ck.disclosure_curve(rel, k_max=K), ck.disclosure_curve(rel, k_max=K, knowledge_kind="negations")

    benchmark.extra_info["release"] = repr(rel)
    imp, neg = benchmark.pedantic(both, rounds=5, iterations=1)
    t_both = best_time(both, repeat=5)
    prof = ck._Profiles(rel)
    ref = kref.reference_min_ratio(prof.indptr, prof.counts, prof.sizes, K)
    t_ref = best_time(lambda: kref.reference_min_ratio(prof.indptr, prof.counts, prof.sizes,
                                                       K), repeat=5)
    np.testing.assert_allclose(imp, 1 / (1 + ref), rtol=1e-12)
    assert np.all(imp >= neg * (1 - 1e-12)) and np.all(np.diff(imp) >= 0)
    exact = [ck.max_disclosure(rel, k=k, exact=True) for k in range(K + 1)]
    np.testing.assert_allclose(imp, [float(r.value) for r in exact], rtol=1e-12)
    print("\nFigure 5 (Adult, Occupation | Age in 20-year bands, rest suppressed):")
    print(f"  groups {rel.group_labels}, sizes {rel.sizes.tolist()}, "
          f"distinct values {rel.distinct.tolist()}")
    print("   k  implications  negations")
    for k in range(K + 1):
        print(f"  {k:2d}  {imp[k]:.4f}        {neg[k]:.4f}")
    first_one = int(np.argmax(imp >= 1.0)) if np.any(imp >= 1.0) else None
    payload = {
        "release": {"groups": rel.group_labels, "sizes": rel.sizes.tolist(),
                    "distinct_values": rel.distinct.tolist(), "n_values": rel.n_values,
                    "n_rows": rel.n_rows},
        "k": list(range(K + 1)),
        "implications": imp.tolist(),
        "negations": neg.tolist(),
        "implications_exact": [str(r.value) for r in exact],
        "first_k_with_disclosure_1": first_one,
        "witness_k3": exact[3].witness.to_dict(),
        "seconds_both_curves": t_both,
        "seconds_reference_curve": t_ref,
    }
    path = write_result("ck_figure5", payload, full)
    _plot_figure5(imp, neg, path.with_suffix(".png"))


def _plot_figure5(imp: np.ndarray, neg: np.ndarray, dest) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = np.arange(imp.shape[0])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(ks, imp, "-o", ms=3, label="basic implications")
    ax.plot(ks, neg, ":s", ms=3, label="negated atoms")
    ax.set_xlabel("k (pieces of background knowledge)")
    ax.set_ylabel("maximum disclosure")
    ax.set_ylim(0, 1.05)
    ax.set_title("Adult, Age in 20-year intervals (Martin et al. Fig. 5)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(dest, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------ synthetic
def _configs(full: bool) -> list[tuple[int, int, int]]:
    """(n_rows, n_groups, n_values)."""
    if full:
        return [(1_000_000, 100_000, 14), (1_000_000, 100_000, 20),
                (10_000_000, 100_000, 14), (10_000_000, 100_000, 20)]
    return [(20_000, 2_000, 14), (20_000, 2_000, 20)]


def _stages(rel: Release, k: int) -> dict:
    """Best time of each stage of the fast path (private kernels, same calls as the API)."""
    prof = ck._Profiles(rel)
    H = min(k, prof.saturation_k) + 1
    Keff = H - 1
    out = {"H": H}
    out["dedupe_s"] = best_time(lambda: kern.dedupe_profiles(prof.indptr, prof.counts,
                                                             prof.sizes, H), repeat=3)
    pid, keys, mult = kern.dedupe_profiles(prof.indptr, prof.counts, prof.sizes, H)
    keys_k, mult_k = kernel_array(keys, np.int64), kernel_array(mult, np.int64)
    out["profiles"] = int(keys.shape[0])
    out["prune_s"] = best_time(lambda: kern.prune_profiles(keys_k, mult_k, Keff), repeat=3)
    keep = kern.prune_profiles(keys_k, mult_k, Keff)
    out["kept_after_pruning"] = int(keep.sum())
    rows_all = kernel_array(np.arange(keys.shape[0]), np.int64)
    out["m1_all_profiles_s"] = best_time(lambda: kern.m1_profiles(keys_k, rows_all, H),
                                         repeat=3)
    rows_kept = kernel_array(np.flatnonzero(keep), np.int64)
    out["m1_kept_profiles_s"] = best_time(lambda: kern.m1_profiles(keys_k, rows_kept, H),
                                          repeat=3)
    out["negation_curve_s"] = best_time(lambda: kern.negation_curve(prof.indptr, prof.counts,
                                                                    prof.sizes, k), repeat=3)
    for prune in (False, True):
        out[f"curve_prune_{prune}_s"] = best_time(
            lambda prune=prune: ck._implications(prof, k, exact=False, witness_t=None,
                                                 prune=prune), repeat=3)
    return out


def bench_synthetic_scale(benchmark, full):
    from fastpriv.datasets import synthetic

    rows_out = []
    last = None
    for n_rows, n_groups, n_values in _configs(full):
        table = synthetic(n_rows, group_size=n_rows // n_groups, n_values=n_values, seed=0)
        t_release = best_time(lambda table=table: Release.from_table(
            table, sensitive="sensitive", group="group"), repeat=3)
        rel = Release.from_table(table, sensitive="sensitive", group="group")
        assert rel.n_groups == n_groups
        curve = ck.disclosure_curve(rel, k_max=K)                  # warm-up (JIT)
        prof = ck._Profiles(rel)

        def reference(prof=prof):
            return kref.reference_min_ratio(prof.indptr, prof.counts, prof.sizes, K)

        ref = reference()
        # alternate fast and reference runs and keep the best of each, so that a burst of
        # load on the (shared) machine does not favour either side of the ratio
        t_fast = t_ref = float("inf")
        for _ in range(3):
            t_fast = min(t_fast, best_time(lambda rel=rel: ck.disclosure_curve(rel, k_max=K),
                                           repeat=7))
            t_ref = min(t_ref, best_time(reference, repeat=1))
        np.testing.assert_allclose(curve, 1 / (1 + ref), rtol=1e-12)
        # the fast path stops at k = min_b d_b − 1 (disclosure is 1 from there on); give
        # the reference the same cut too, so the ratio is not only that shortcut
        Ksat = min(K, prof.saturation_k)
        t_ref_sat = min(best_time(lambda prof=prof, Ksat=Ksat: kref.reference_min_ratio(
            prof.indptr, prof.counts, prof.sizes, Ksat), repeat=2 if full else 3), t_ref)
        H = Ksat + 1
        t_ref_m1 = best_time(lambda prof=prof, H=H: kref.reference_m1(
            prof.indptr, prof.counts, prof.sizes, H), repeat=2 if full else 3)

        def end_to_end(table=table):
            r = Release.from_table(table, sensitive="sensitive", group="group")
            return ck.disclosure_curve(r, k_max=K)

        t_e2e = best_time(end_to_end, repeat=3)
        t_md = best_time(lambda rel=rel: ck.max_disclosure(rel, k=K), repeat=3)
        t_exact = best_time(lambda rel=rel: ck.max_disclosure(rel, k=K, exact=True), repeat=1)
        t_neg = best_time(lambda rel=rel: ck.disclosure_curve(rel, k_max=K, knowledge_kind="negations"), repeat=5)
        r = ck.max_disclosure(rel, k=K, exact=True)
        assert abs(float(r.value) - curve[K]) <= 1e-12
        row = {
            "n_rows": n_rows, "n_groups": n_groups, "n_values": n_values, "k": K,
            "saturation_k": prof.saturation_k,
            "release_build_s": t_release,
            "fast_curve_s": t_fast,
            "reference_curve_s": t_ref,
            "reference_with_saturation_cut_s": t_ref_sat,
            "reference_m1_part_with_cut_s": t_ref_m1,
            "speedup_reference_over_fast": t_ref / t_fast,
            "speedup_reference_with_cut_over_fast": t_ref_sat / t_fast,
            "end_to_end_s": t_e2e,
            "max_disclosure_with_witness_s": t_md,
            "max_disclosure_exact_s": t_exact,
            "negation_curve_s": t_neg,
            "curve": curve.tolist(),
        }
        rows_out.append(row)
        print(f"\n{n_rows:>10,} rows {n_groups:,} groups {n_values} values k={K}: "
              f"fast {t_fast * 1e3:.1f} ms, reference {t_ref * 1e3:.0f} ms "
              f"(×{t_ref / t_fast:.0f}; with the k-cut {t_ref_sat * 1e3:.0f} ms, "
              f"×{t_ref_sat / t_fast:.0f}), release {t_release:.3f} s, "
              f"end-to-end {t_e2e:.3f} s, exact {t_exact:.3f} s")
        last = (rel, table)
    rel, table = last
    stages = _stages(rel, K)
    print("stages at the largest size:", stages)
    benchmark.extra_info["n_rows"] = rel.n_rows
    benchmark.pedantic(lambda: ck.disclosure_curve(rel, k_max=K), rounds=5, iterations=1)
    write_result("ck_synthetic", {"k": K, "configs": rows_out,
                                  "load_average_after": os.getloadavg(),
                                  "stages_largest": stages,
                                  "notes": "times are best-of-N wall seconds after JIT; the "
                                           "ratio compares the two paths on the same Release "
                                           "in the same run"}, full)


# ------------------------------------------------------------------------ cold start
_COLD = """
import fastpriv as fp
from fastpriv import ck_safety as ck
rel = fp.Release.from_groups([["a", "a", "b", "c"], ["b", "c", "d"]] * 3000)
ck.disclosure_curve(rel, k_max=12)
ck.max_disclosure(rel, k=3)
ck.max_disclosure(rel, k=3, knowledge_kind="negations")
ck._implications(ck._Profiles(rel), 12, exact=False, witness_t=None, prune=True)
"""


@pytest.mark.slow   # starts fresh interpreters
def bench_cold_start(full):
    t0 = time.perf_counter()
    # a full compile takes tens of seconds on a loaded 2-core machine: full mode only
    compile_s = cold_start(_COLD, no_cache=True) if full else None
    cold_start(_COLD, no_cache=False)          # fills the on-disk cache if it is stale
    cached_s = cold_start(_COLD, no_cache=False)
    base = "import fastpriv as fp\nfp.Release.from_groups([['a', 'b']] * 3000)"
    baseline_s = cold_start(base, no_cache=False) if full else None
    baseline_nc_s = cold_start(base, no_cache=True) if full else None
    write_result("ck_cold_start", {
        "no_cache_s": compile_s, "with_cache_s": cached_s,
        "import_and_tiny_release_s": baseline_s,
        "import_and_tiny_release_no_cache_s": baseline_nc_s,
        "ck_kernels_compile_s": None if compile_s is None else compile_s - baseline_nc_s,
        "note": "fresh interpreter; no_cache compiles every ck kernel (FASTPRIV_NO_CACHE=1)",
    }, full)
    shown = "not measured (smoke)" if compile_s is None else f"{compile_s:.2f} s"
    print(f"\ncold start: {shown} without cache, {cached_s:.2f} s with cache "
          f"(import + tiny release alone: {baseline_s}); measured in "
          f"{time.perf_counter() - t0:.1f} s")
    assert RESULTS.exists()
