"""Time kernels of two commits against each other, alternated, on one noisy machine.

    python -m benchmarks.ab_commits BASE [--probes count,classic,skyline] [--rounds 3]

``BASE`` is any git revision (a commit, branch or tag). It is checked out into a
temporary ``git worktree``; every probe then runs in fresh interpreters, base and current
tree **alternated** ``--rounds`` times, each interpreter importing fastpriv from its own
tree (``sys.path``) and reporting the minimum of several repeats after a warm-up call. The
shared machine drifts by 2× within minutes, so only the alternated, same-run comparison is
meaningful. Probes (synthetic data, seeded):

* ``count``: ``CountAccumulator.add`` over in-memory batches (the fused dense count),
  10k random groups and 1M groups in order, ns per row;
* ``classic``: the fused classical audit kernel ``audit_columns``, one thread, 1M groups;
* ``skyline``: ``skyline.check(method="direct")`` of 100 points × 20 values on 10k large
  groups, records kept (repeated check) and re-found at each call (as a first check);
* ``prepared``: ``SigmaTables.statistics`` (the knowledge-skyline kernel ``columns_stats``)
  at 100 (ℓ, k, m) on 200k groups of 100 rows;
* ``posterior``: ``robustness.posterior_batch`` on one thread, many short segments and a
  few long ones (the prefix/suffix ESP kernel ``loo_core``);
* ``foreground``: ``foreground.attack`` (build, dedupe and solve every mined system:
  ``build_systems``, ``dedupe_groups``, ``solve_systems``) on 20k rows in groups of 4, on 1
  and 2 threads;
* ``anonymize``: ``art`` (the ``fastpriv anonymize --method art`` workload on Adult, with
  padding) and ``anatomy`` (ℓ = 4 on Adult's occupation);
* ``ingest``: ``Release.from_table`` on a Parquet file (the documented entry point, the
  ``bench_peers`` shapes at 4M rows): 1M random int groups, 1M string groups and 1M groups
  of three QI columns; the files are written once into a temporary folder both trees read;
* ``threads``: the multi-threaded paths (``count_pairs_parallel`` dense and bucketed,
  ``dense_profiles_parallel``, ``dense_add_parallel``, ``audit_columns_parallel``,
  ``posterior_batch``) on 1 and 2 threads — same names and arguments whether they are
  ``prange`` kernels (older trees) or serial chunk kernels on the thread pool.

A probe that the base tree cannot run (an API it does not have yet) reports the error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PRELUDE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import fastpriv
assert fastpriv.__file__.startswith(sys.argv[1]), fastpriv.__file__
def best(fn, repeat):
    fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); out.append(time.perf_counter() - t)
    return min(out)
"""

PROBES = {
    "ingest": """
import os, tempfile
from benchmarks import bench_peers as bp   # the tree's own (sys.path[0])
from fastpriv import Release
folder = os.path.join(tempfile.gettempdir(), "fastpriv-ab-ingest")
os.makedirs(folder, exist_ok=True)
res = {}
for kind in ("int", "string", "qi"):
    path = os.path.join(folder, f"4M_1M_{kind}.parquet")
    if not os.path.exists(path):
        bp.write_shape(path + ".tmp", 4_000_000, 1_000_000, kind)
        os.replace(path + ".tmp", path)
    kw = dict(bp.KINDS[kind])
    res[f"1M {kind} groups, 4M rows (ms)"] = 1e3 * best(
        lambda: Release.from_table(path, sensitive=bp.SENSITIVE, **kw), 3)
print(json.dumps(res))
""",
    "count": """
import pyarrow as pa
from fastpriv.counts import CountAccumulator
rng = np.random.default_rng(0)
res = {}
for name, keys in (("10k random groups", rng.integers(0, 10_000, 8 << 20)),
                   ("1M groups in order", np.repeat(np.arange(1 << 20), 8))):
    v = rng.integers(0, 20, keys.size).astype(np.int32)
    batches = pa.table({"group": keys.astype(np.int64), "sensitive": v}).to_batches(1 << 20)
    def run():
        acc = CountAccumulator(["group"], "sensitive")
        for b in batches:
            acc.add(b)
    res[name + " (ns/row)"] = best(run, 5) / keys.size * 1e9
print(json.dumps(res))
""",
    "classic": """
from fastpriv import Release, classic
from fastpriv._kernels import classic as K
from fastpriv.datasets import synthetic
rel = Release.from_table(synthetic(20_000_000, group_size=20, n_values=20, seed=1),
                         sensitive="sensitive", group="group")
args = (*classic._arrays(rel), classic._global_distribution(rel),
        classic._order_rank(rel, None), 2)
print(json.dumps({"audit_columns, 1M groups, one thread (ms)":
                  best(lambda: K.audit_columns(*args), 9) * 1e3}))
""",
    "skyline": """
from fastpriv import Release, skyline
from fastpriv.datasets import synthetic
rel = Release.from_table(synthetic(5_000_000, n_groups=10_000, n_values=20, seed=0),
                         sensitive="sensitive", group="group")
pts = [(l, k, m, 0.9) for l in range(4) for k in range(5) for m in range(5)]
def check(skylines):   # keyword API; positional on commits before it
    try:
        return skyline.check(rel, skylines=skylines, method="direct")
    except TypeError:
        return skyline.check(rel, skylines, method="direct")
def refind():   # drop the kept (σ, ℓ) records: the check finds them again (as on a new release)
    if hasattr(skyline, "forget_indexes"):
        skyline.forget_indexes(rel)
    else:       # commits that kept the records on the release
        for key in [x for x in rel.index_cache
                    if (x[0] if isinstance(x, tuple) else x).startswith("skyline.records")]:
            del rel.index_cache[key]
    check({"*": pts})
print(json.dumps({"check 2000 pairs, 10k groups, records kept (ms)":
                  best(lambda: check({"*": pts}), 5) * 1e3,
                  "check 2000 pairs, 10k groups, records re-found (ms)": best(refind, 5) * 1e3}))
""",
    "prepared": """
from fastpriv import Release, skyline
from fastpriv.datasets import synthetic
rel = Release.from_table(synthetic(20_000_000, group_size=100, n_values=20, seed=0),
                         sensitive="sensitive", group="group")
try:   # keyword API; positional on commits before it
    tabs = skyline.prepare(rel, sigma=rel.values[3], l_max=4)
except TypeError:
    tabs = skyline.prepare(rel, rel.values[3], l_max=4)
pts = [(l, k, m) for l in range(4) for k in range(5) for m in range(5)]
print(json.dumps({"prepared statistics, 100 points, 200k groups (ms)":
                  best(lambda: [tabs.statistics(*p) for p in pts], 5) * 1e3}))
""",
    "posterior": """
from fastpriv import robustness as rb
from fastpriv._threads import n_jobs
rng = np.random.default_rng(0)
res = {}
for name, S, N in (("20k segments of 50", 20_000, 50), ("20 segments of 3000", 20, 3000)):
    f = rng.uniform(0.01, 0.99, S * N)
    off = np.arange(0, S * N + 1, N)
    n = rng.integers(2, N - 2, S) if N < 100 else np.full(S, N // 3)
    with n_jobs(1):
        res[f"posterior_batch, {name}, one thread (ms)"] = best(
            lambda f=f, off=off, n=n: rb.posterior_batch(f, off, n), 5) * 1e3
print(json.dumps(res))
""",
    "foreground": """
import pyarrow as pa
from fastpriv import foreground
from fastpriv._threads import n_jobs
rng = np.random.default_rng(0)
n = 20_000
table = pa.table({"q0": rng.integers(0, 12, n), "q1": rng.integers(0, 5, n),
                  "gid": np.repeat(np.arange(n // 4), 4), "s": rng.choice(list("abcdefgh"), n)})
res = {}
for t in (1, 2):
    with n_jobs(t):
        res[f"foreground.attack 20k rows, {t} thread(s) (ms)"] = best(
            lambda: foreground.attack(table, qi=["q0", "q1"], sensitive="s", group="gid", r=2.0,
                                      min_support=3, n_random=1), 3) * 1e3
print(json.dumps(res))
""",
    "anonymize": """
from fastpriv.anonymize import anatomy, art
from fastpriv.datasets import load_adult
t = load_adult()
vals = ["Preschool", "1st-4th", "5th-6th", "7th-8th"]
print(json.dumps({
    "art on Adult, r=3, 4 values, padded (ms)": best(
        lambda: art(t, qi=["age", "workclass", "marital_status"], sensitive="education", r=3.0,
                    sensitive_values=vals, pad=True), 3) * 1e3,
    "anatomy on Adult, l=4 (ms)": best(lambda: anatomy(t, sensitive="occupation", l=4), 3) * 1e3}))
""",
    "threads": """
from fastpriv import Release, classic
from fastpriv import robustness as rb
from fastpriv._kernels import classic as KC
from fastpriv._kernels import counting as C
from fastpriv._threads import n_jobs
from fastpriv._validation import kernel_array
from fastpriv.datasets import synthetic
rng = np.random.default_rng(0)
n, G, V = 4_000_000, 200_000, 20
g = kernel_array(rng.integers(0, G, n).astype(np.int32), np.int32)
v = kernel_array(rng.integers(0, V, n).astype(np.int32), np.int32)
w = kernel_array(np.empty(0, dtype=np.int64), np.int64)
mat = np.zeros(G * V, dtype=np.int32)
np.add.at(mat, g.astype(np.int64) * V + v, 1)
m64 = np.zeros(0, dtype=np.int64)
import inspect
# the dense state: (mat8, mat, mat64) in trees whose readers take the byte counters too
state = ((np.zeros(G * V, dtype=np.uint8), mat, m64)
         if "mat8" in inspect.signature(C.dense_profiles_parallel).parameters else (mat, m64))
go = kernel_array(np.arange(G), np.int64)
vr = kernel_array(np.arange(V), np.int32)
m8 = np.zeros(G * V, dtype=np.uint8)
m32 = np.zeros(G * V, dtype=np.int32)
rel = Release.from_table(synthetic(2_000_000, group_size=10, n_values=20, seed=1),
                         sensitive="sensitive", group="group")
args = (*classic._arrays(rel), classic._global_distribution(rel),
        classic._order_rank(rel, None), 2)
f = rng.uniform(0.01, 0.99, 20_000 * 50)
off = np.arange(0, f.size + 1, 50)
nx = rng.integers(2, 48, 20_000)
res = {}
for t in (1, 2):
    with n_jobs(t):
        res[f"count_pairs_parallel dense, {t} thread(s) (ms)"] = best(
            lambda: C.count_pairs_parallel(g, v, w, G, V, int(C.DENSE_CELLS), t), 3) * 1e3
        res[f"count_pairs_parallel bucketed, {t} thread(s) (ms)"] = best(
            lambda: C.count_pairs_parallel(g, v, w, G, V, 0, t), 3) * 1e3
        res[f"dense_profiles_parallel, {t} thread(s) (ms)"] = best(
            lambda: C.dense_profiles_parallel(*state, V, go, vr, V, t), 3) * 1e3
        res[f"dense_add_parallel, {t} thread(s) (ms)"] = best(
            lambda: C.dense_add_parallel(g, v, m8, m32, V, 0, G - 1, t), 3) * 1e3
        res[f"audit_columns_parallel 200k groups, {t} thread(s) (ms)"] = best(
            lambda: KC.audit_columns_parallel(*args, 4 * t), 3) * 1e3
        res[f"posterior_batch 20k segments of 50, {t} thread(s) (ms)"] = best(
            lambda: rb.posterior_batch(f, off, nx), 3) * 1e3
print(json.dumps(res))
""",
}


def _run(tree: str, probe: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _PRELUDE + PROBES[probe], tree],
                         capture_output=True, text=True, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", help="git revision to compare the working tree against")
    ap.add_argument("--probes", default=",".join(PROBES), help="comma-separated probes")
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds per probe")
    a = ap.parse_args(argv)
    probes = [p.strip() for p in a.probes.split(",") if p.strip()]
    unknown = [p for p in probes if p not in PROBES]
    if unknown:
        ap.error(f"unknown probe {unknown[0]!r}; available: {', '.join(PROBES)}")
    with tempfile.TemporaryDirectory(prefix="fastpriv-ab-") as tmp:
        base = os.path.join(tmp, "base")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", base,
                        a.base], check=True, capture_output=True)
        try:
            for probe in probes:
                rows: dict = {}
                for _ in range(a.rounds):
                    for label, tree in (("base", base), ("current", str(ROOT))):
                        for key, val in _run(tree, probe).items():
                            rows.setdefault(key, {}).setdefault(label, []).append(val)
                for key, by in rows.items():
                    cells = [f"{label} " + (", ".join(f"{x:.1f}" for x in vals)
                                            if not isinstance(vals[0], str) else vals[0])
                             for label, vals in by.items()]
                    print(f"{probe}: {key}: " + " | ".join(cells))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", base],
                           capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
