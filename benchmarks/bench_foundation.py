"""Benchmarks: Release construction and the classical models vs pandas.

Synthetic SVPI data, ~100k groups (n_rows / 10 in smoke mode), 20 uniform values.
Baselines, measured in the same run on the same data:

* **pandas groupby** — the best vectorized pandas formulation of each metric
  (one ``groupby`` + reductions), starting from a pandas DataFrame;
* **pandas loop** — the per-group loop used by popular pandas-based checkers
  (``for _, g in df.groupby(...)``: value_counts per group). It is too slow to run over
  100k groups in a benchmark, so it is timed on the first ``LOOP_GROUPS`` groups and scaled
  linearly to all groups (labelled ``extrapolated`` in the results).

fastpriv is timed end to end from an Arrow table (``Release.from_table`` + the metric) and
for the metric alone on a built Release. Cold start (first call, JIT included) is measured
in a fresh interpreter with and without the on-disk cache.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from benchmarks._common import best_time, cold_start, write_result
from fastpriv import Release, classic
from fastpriv.datasets import synthetic

LOOP_GROUPS = 2000


def _pandas_metrics(df):
    """Vectorized pandas formulations; each returns the achieved parameter."""
    import pandas as pd

    def k():
        return df.groupby("group").size().min()

    def distinct_l():
        return df.groupby("group")["sensitive"].nunique().min()

    def entropy_l():
        c = df.groupby(["group", "sensitive"], observed=True).size()
        p = c / c.groupby(level=0).transform("sum")
        return float(np.exp((-(p * np.log(p))).groupby(level=0).sum().min()))

    def t():
        c = df.groupby(["group", "sensitive"], observed=True).size().unstack(fill_value=0)
        p = c.div(c.sum(axis=1), axis=0)
        q = df["sensitive"].value_counts(normalize=True).reindex(c.columns)
        return float((0.5 * (p - q).abs().sum(axis=1)).max())

    def alpha():
        c = df.groupby(["group", "sensitive"], observed=True).size()
        return float((c.groupby(level=0).max() / c.groupby(level=0).sum()).max())

    del pd
    return {"k": k, "distinct_l": distinct_l, "entropy_l": entropy_l, "t": t, "alpha": alpha}


def _pandas_loop(df, model, limit):
    """Per-group loop (popular checkers' style) over the first ``limit`` groups."""
    q = df["sensitive"].value_counts(normalize=True)
    out = []
    for i, (_, grp) in enumerate(df.groupby("group")):
        if i >= limit:
            break
        s = grp["sensitive"]
        if model == "k":
            out.append(len(grp))
        elif model == "distinct_l":
            out.append(s.nunique())
        elif model == "entropy_l":
            vc = s.value_counts(normalize=True)
            vc = vc[vc > 0]
            out.append(-(vc * np.log(vc)).sum())
        elif model == "t":
            p = s.value_counts(normalize=True).reindex(q.index, fill_value=0)
            out.append(0.5 * (p - q).abs().sum())
        elif model == "alpha":
            out.append(s.value_counts().max() / len(grp))
    return out


_FAST = {
    "k": classic.k_anonymity,
    "distinct_l": classic.l_diversity,
    "entropy_l": classic.entropy_l_diversity,
    "t": classic.t_closeness,
    "alpha": lambda rel: classic.alpha_k_anonymity(rel)[0],
}


def _audit_one_model_at_a_time(rel, l):
    """What classic.audit did before the fused kernel: one kernel pass per model."""
    for model, _title, params in classic.AUDIT_ROWS:
        kw = {"l": l} if params is None else dict(params)
        vals = classic.per_group(rel, model, **kw)
        (np.argmax if classic.WORSE_IF_LARGER[model] else np.argmin)(vals)


def _sizes(full):
    return [1_000_000, 10_000_000] if full else [100_000]


def bench_release_and_classic(benchmark, full):
    sizes = _sizes(full)
    results = []
    for n in sizes:
        n_groups = max(n // 100, 10) if full else 10_000
        table = synthetic(n, n_groups=n_groups, n_values=20, seed=1)
        t_build = best_time(lambda: Release.from_table(table, sensitive="sensitive",
                                                       group="group"), repeat=3)
        rel = Release.from_table(table, sensitive="sensitive", group="group")
        df = table.to_pandas()
        pmetrics = _pandas_metrics(df)
        row = {"n_rows": n, "n_groups": rel.n_groups, "n_values": rel.n_values,
               "release_from_arrow_s": t_build, "models": {}}
        for name, fast in _FAST.items():
            t_fast = best_time(lambda: fast(rel), repeat=5)
            t_pandas = best_time(pmetrics[name], repeat=1 if n > 1_000_000 else 2)
            # same answer
            assert fast(rel) == pytest.approx(pmetrics[name](), rel=1e-9)
            t0 = time.perf_counter()
            _pandas_loop(df, name, LOOP_GROUPS)
            t_loop = (time.perf_counter() - t0) * rel.n_groups / min(LOOP_GROUPS, rel.n_groups)
            row["models"][name] = {
                "fastpriv_metric_s": t_fast,
                "fastpriv_end_to_end_s": t_fast + t_build,
                "pandas_groupby_s": t_pandas,
                "pandas_loop_s_extrapolated": t_loop,
                "ratio_groupby_end_to_end": t_pandas / (t_fast + t_build),
                "ratio_groupby_metric": t_pandas / t_fast,
                "ratio_loop_end_to_end": t_loop / (t_fast + t_build),
            }
        t_audit = best_time(lambda: classic.audit(rel, l=2), repeat=3)
        # baseline: the same nine models through the one-model kernels (classic.per_group)
        t_sep = best_time(lambda: _audit_one_model_at_a_time(rel, 2), repeat=3)
        row["audit_all_models_s"] = t_audit
        row["audit_one_model_at_a_time_s"] = t_sep
        row["ratio_fused_audit"] = t_sep / t_audit
        results.append(row)
        del df
    big = synthetic(sizes[-1], n_groups=max(sizes[-1] // 100, 10) if full else 10_000,
                    n_values=20, seed=1)
    benchmark.extra_info["n_rows"] = sizes[-1]
    benchmark.pedantic(lambda: Release.from_table(big, sensitive="sensitive", group="group"),
                       rounds=3, iterations=1)
    write_result("foundation", {"loop_groups_timed": LOOP_GROUPS, "sizes": results}, full)


COLD = ("from fastpriv import Release, classic; "
        "r = Release.from_groups([['a','b','a'],['b','c']]); classic.audit(r)")


@pytest.mark.slow   # starts fresh interpreters
def bench_cold_start(benchmark, full):
    """First call in a fresh interpreter: JIT compile (no cache) vs cached machine code."""
    warm = cold_start(COLD, no_cache=False)  # fills the cache if needed
    cached = min(cold_start(COLD, no_cache=False) for _ in range(2 if full else 1))
    nocache = cold_start(COLD, no_cache=True)
    import_only = cold_start("import fastpriv", no_cache=False)
    benchmark.pedantic(lambda: None, rounds=1)
    benchmark.extra_info.update(cached_s=cached, no_cache_s=nocache)
    write_result("cold_start", {"first_call_with_cache_s": cached,
                                "first_call_without_cache_s": nocache,
                                "import_fastpriv_s": import_only,
                                "first_ever_run_s": warm,
                                "workload": COLD}, full)
