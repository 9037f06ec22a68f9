"""Benchmarks: synthetic data generation speed (and loading the bundled Adult).

``fastpriv.datasets.synthetic`` is timed at 1M and 10M rows (smoke: 100k) for each
grouping mode and both distributions, against two baselines measured in the same run on
the same sizes:

* **numpy floor** — only the random draws of the same columns with one
  ``numpy.random.default_rng`` (``integers`` for groups/uniform values, ``random`` +
  ``searchsorted`` for Zipf), no Arrow conversion: the cost any generator must pay; the
  ratio ``fastpriv / floor`` is our overhead (blocks, Arrow table, dictionary column).
* **naive strings** — the common way to make such test data: ``rng.choice`` over the
  string labels then ``pyarrow.array(...).dictionary_encode()``; the ratio
  ``naive / fastpriv`` is the speed-up.

``synthetic_batches`` (1M-row batches) is timed at the largest size too, and
``load_adult()``; the first call in the process is timed separately. Headline
(pytest-benchmark): ``synthetic(N, group_size=100)`` at the largest size.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from benchmarks._common import best_time, write_result
from fastpriv.datasets import load_adult, synthetic, synthetic_batches
from fastpriv.datasets.synthetic import value_labels

CONFIGS = {
    "group_size=100": dict(group_size=100),
    "n_groups=100k": dict(n_groups=100_000),
    "n_groups=100k,zipf": dict(n_groups=100_000, distribution="zipf", zipf_s=1.1),
    "qi=[10,20,30]": dict(qi_cardinalities=[10, 20, 30]),
}


def _sizes(full: bool) -> list[int]:
    return [1_000_000, 10_000_000] if full else [100_000]


def _floor(n: int, kw: dict) -> None:
    rng = np.random.default_rng(0)
    if "qi_cardinalities" in kw:
        for c in kw["qi_cardinalities"]:
            rng.integers(0, c, n, dtype=np.int32)
    elif "n_groups" in kw:
        rng.integers(0, kw["n_groups"], n, dtype=np.int64)
    else:
        np.arange(n, dtype=np.int64) // kw["group_size"]
    if kw.get("distribution") == "zipf":
        w = 1.0 / np.arange(1, 21) ** kw["zipf_s"]
        cdf = np.cumsum(w / w.sum())
        cdf[-1] = 1.0
        np.searchsorted(cdf, rng.random(n), side="right")
    else:
        rng.integers(0, 20, n, dtype=np.int32)


def _naive(n: int, kw: dict) -> pa.Table:
    rng = np.random.default_rng(0)
    labels = np.array(value_labels(20))
    cols = {}
    if "qi_cardinalities" in kw:
        for j, c in enumerate(kw["qi_cardinalities"]):
            cols[f"q{j}"] = rng.integers(0, c, n, dtype=np.int32)
    elif "n_groups" in kw:
        cols["group"] = rng.integers(0, kw["n_groups"], n, dtype=np.int64)
    else:
        cols["group"] = np.arange(n, dtype=np.int64) // kw["group_size"]
    p = None
    if kw.get("distribution") == "zipf":
        w = 1.0 / np.arange(1, 21) ** kw["zipf_s"]
        p = w / w.sum()
    cols["sensitive"] = pa.array(rng.choice(labels, n, p=p)).dictionary_encode()
    return pa.table(cols)


def bench_synthetic_generation(benchmark, full):
    sizes = _sizes(full)
    repeat = 3 if full else 2
    # First call in this process (imports, first Arrow conversions; no JIT involved).
    first_call = best_time(lambda: synthetic(1_000, group_size=10), repeat=1)
    results = []
    for n in sizes:
        for name, kw in CONFIGS.items():
            ours = best_time(lambda n=n, kw=kw: synthetic(n, **kw), repeat=repeat)
            floor = best_time(lambda n=n, kw=kw: _floor(n, kw), repeat=repeat)
            naive = best_time(lambda n=n, kw=kw: _naive(n, kw), repeat=repeat)
            # Same shape and labels as the naive baseline (sanity, not equality: other RNG use).
            t, ref = synthetic(n, **kw), _naive(n, kw)
            assert t.schema.names == ref.schema.names and t.num_rows == ref.num_rows == n
            results.append({"n_rows": n, "config": name, "fastpriv_s": ours,
                            "numpy_floor_s": floor, "naive_strings_s": naive,
                            "overhead_vs_floor": ours / floor,
                            "speedup_vs_naive": naive / ours})
    n = sizes[-1]
    kw = CONFIGS["n_groups=100k"]
    whole = synthetic(n, **kw)
    batched = best_time(lambda: sum(b.num_rows for b in synthetic_batches(
        n, batch_rows=1_000_000, **kw)), repeat=repeat)
    assert pa.Table.from_batches(list(synthetic_batches(n, batch_rows=1_000_000, **kw))
                                 ).equals(whole)
    adult_s = best_time(load_adult, repeat=repeat)
    benchmark.extra_info["n_rows"] = n
    benchmark.pedantic(lambda: synthetic(n, group_size=100), rounds=repeat, iterations=1)
    write_result("datasets", {
        "sizes": results,
        "batches_1M_rows": {"n_rows": n, "config": "n_groups=100k", "seconds": batched,
                            "whole_seconds": [r for r in results if r["n_rows"] == n
                                              and r["config"] == "n_groups=100k"][0][
                                                  "fastpriv_s"]},
        "load_adult_s": adult_s,
        "first_call_s": first_call,
    }, full)
