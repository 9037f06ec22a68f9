"""Benchmarks: the package's portable kernels against the host's own — what portability costs.

A wheel ships kernels compiled for a portable CPU (:mod:`fastpriv._package_cache`): baseline
x86-64 (``generic``, SSE2), and on request also ``x86-64-v3`` (AVX2, FMA, BMI2), picked by
the CPU's features at run time. Whether the second target is worth shipping is what this
benchmark decides (the rule: where baseline code is more than 10 % slower than the host's
own). It times the hot paths of the documented commands —
counting a release (``audit``, every command), the classical, (c,k)-safety and skyline
audits, the risk audit, Mondrian and the lattice search (``anonymize``), the r-robustness
audit, the batched posteriors and the foreground attack (``robustness``, ``attack``) — on
inputs of about a million rows, with the kernels

* ``host``: compiled for this machine's CPU (what the JIT does), from a user cache filled
  by a first run;
* ``generic`` and ``x86-64-v3``: loaded from a copy of the package whose ``_kernel_cache``
  holds that one target, built the way a wheel build builds it (``python -m
  fastpriv._package_cache build``, the workload below at full size instead of the
  warm-up), into a host process with an empty user cache — exactly the shipped path.

Each measurement is a fresh process; the three variants alternate within each round (the
order rotating), and each process times every operation ``--repeat`` times after one
untimed call (which loads the kernels) and keeps the best, in CPU seconds of the process
(on a shared machine far steadier than wall time; both are kept). A target's ratio to
``host`` is the median over rounds of each round's ratio (processes that ran one after the
other). Measured on AMD EPYC (Zen 4, AVX-512), 9 rounds: baseline code took 0.89-1.07x the
host's CPU time on every hot path, so wheels ship it alone.
Every timed process must compile nothing (checked: ``compiled`` in the JSON), and the
variants' answers are compared (:func:`fingerprint`, floats to six significant digits):
``same_verdicts`` per operation for the result protocol's ``value``, ``params`` and
``witness``, ``same_answers`` for the whole result (``to_dict()`` but its timings). On the
same machine every verdict was the same; the foreground attack's whole result was not —
its solvers' residuals (about 1e-12) and which ten of the many tuples tied at posterior 1
it lists as ``worst`` differ between code with FMA (host, x86-64-v3) and without
(baseline), as they would for a JIT on a CPU without FMA.

Full mode: ``python -m benchmarks.bench_portable_kernels [--rounds 9] [--rows 1000000]
[--repeat 5] [--work DIR] [--only OP,OP]`` writes ``benchmarks/results/portable_kernels.json``
(with ``--only``, ``benchmarks/results/smoke/``). Smoke mode (the test run) runs every
operation once in-process on a small input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("host", "generic", "x86-64-v3")
ADULT_QI = ["age", "sex", "race", "marital_status"]


def _inputs(rows: int) -> dict[str, Any]:
    """The operations' inputs, about ``rows`` rows each (deterministic)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    import fastpriv as fp
    from fastpriv.anonymize import anatomy

    adult = fp.datasets.load_adult()
    copies = max(1, -(-rows // adult.num_rows))
    syn = fp.datasets.synthetic(rows, qi_cardinalities=[60, 40, 30], n_values=20,
                                distribution="zipf", seed=7)
    grouped = fp.datasets.synthetic(rows, group_size=10, n_values=20, distribution="zipf",
                                    seed=8)
    labels = pc.binary_join_element_wise(
        "g", pa.array(np.arange(rows) // 8).cast(pa.string()), "")
    base = adult if rows >= adult.num_rows else adult.slice(0, rows)   # smoke: a slice
    bucketed = anatomy(base, sensitive="occupation", l=4, seed=0).auditor_view(base)
    rng = np.random.default_rng(9)
    sizes = np.full(rows // 10, 10)
    return {"adult": pa.concat_tables([adult] * copies), "syn": syn,
            "strings": syn.append_column("label", labels),
            "grouped": grouped,
            "bucketed": bucketed, "probs": rng.random(int(sizes.sum())),
            "offsets": np.concatenate([[0], np.cumsum(sizes)]), "n_x": np.full(sizes.size, 3),
            "bucketed_qi":
                ["age", "workclass", "marital_status", "race", "sex"]}


def _operations() -> dict[str, tuple[str, Callable[[dict], Any], Callable[[Any], Any]]]:
    """Name -> (what it measures, setup on the inputs (untimed, before each call), call).

    The audits of a release get a new :class:`~fastpriv.Release` before each call: a
    release keeps what it computed (its profiles), so a second audit of the same object
    would time little of the kernels.
    """
    import fastpriv as fp
    from fastpriv import ck_safety, classic, foreground, risk, robustness, skyline
    from fastpriv.anonymize import lattice_search, mondrian

    qi3 = ["q0", "q1", "q2"]

    def same(d: dict) -> dict:
        return d

    def new_release(d: dict) -> Any:
        return fp.Release.from_table(d["grouped"], sensitive="sensitive", group="group")

    return {
        "release_qi": ("Release.from_table: 3 integer QI columns (counting kernels)", same,
                       lambda d: fp.Release.from_table(d["syn"], qi=qi3, sensitive="sensitive")),
        "release_strings": ("Release.from_table: a string group column (hash map kernels)",
                            same, lambda d: fp.Release.from_table(d["strings"], group="label",
                                                                  sensitive="sensitive")),
        "classic_audit": ("classic.audit, l=3, groups of 10", new_release,
                          lambda rel: classic.audit(rel, l=3)),
        "ck_safety_audit": ("ck_safety.audit, k=4, groups of 10", new_release,
                            lambda rel: ck_safety.audit(rel, k=4)),
        "skyline_check": ("skyline.check, two points, groups of 10", new_release,
                          lambda rel: skyline.check(rel, skylines={
                              "*": [(1, 1, 1, 0.9), (2, 2, 2, 0.95)]})),
        "risk_audit": ("risk.audit, 3 QI columns, population 10x", same,
                       lambda d: risk.audit(d["syn"], qi=qi3,
                                            population=10 * d["syn"].num_rows)),
        "mondrian": ("anonymize mondrian: Adult x23, min_size=5, l=3", same,
                     lambda d: mondrian(d["adult"], qi=ADULT_QI[:3], sensitive="occupation",
                                        min_size=5, l=3)),
        "lattice": ("anonymize lattice: Adult x23, 4 QIs, min_size=5, l=3", same,
                    lambda d: lattice_search(d["adult"], qi=ADULT_QI, sensitive="occupation",
                                             min_size=5, l=3)),
        "posterior_batch": ("robustness.posterior_batch: 1M tuples in groups of 10, n=3", same,
                            lambda d: robustness.posterior_batch(d["probs"], d["offsets"],
                                                                 d["n_x"])),
        "robustness_audit": ("robustness.audit: Adult by Anatomy l=4, 5 QIs, r=4", same,
                             lambda d: robustness.audit(d["bucketed"], qi=d["bucketed_qi"],
                                                        sensitive="occupation",
                                                        group="group_id", r=4)),
        "foreground_attack": ("foreground.attack: Adult by Anatomy l=4, 5 QIs, r=4", same,
                              lambda d: foreground.attack(d["bucketed"], qi=d["bucketed_qi"],
                                                          sensitive="occupation",
                                                          group="group_id", r=4)),
    }


def _plain(x: Any) -> Any:
    """``x`` as JSON-able values, floats to six significant digits (see :func:`fingerprint`)."""
    import numpy as np

    if isinstance(x, dict):                     # timings ("seconds") are not the answer
        return {str(k): _plain(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))
                if k != "seconds"}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, (float, np.floating)):
        return float(f"{float(x):.6g}")
    if isinstance(x, (int, np.integer, bool, np.bool_, str)) or x is None:
        return x.item() if isinstance(x, np.generic) else x
    if hasattr(x, "to_dict"):
        return _plain(x.to_dict())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _plain(dataclasses.asdict(x))
    return str(x)


def fingerprint(result: Any, verdict: bool = False) -> str:
    """Return a digest of an operation's answer, equal across CPU targets when the answers are.

    Results with ``to_dict()`` are digested whole but for their timings — or, with
    ``verdict=True``, their ``value``, ``params`` and ``witness`` alone (the result
    protocol's answer) —, a release by its groups and counts, arrays by their values;
    floats count to six significant digits, since code for a CPU with FMA may fuse a
    multiply-add (``fastmath`` allows ``contract``) where baseline code rounds twice.
    """
    import hashlib

    if verdict and hasattr(result, "witness"):
        value = {k: getattr(result, k, None) for k in ("value", "params", "witness")}
    elif hasattr(result, "to_dict"):
        value = result.to_dict()
    elif hasattr(result, "counts") and hasattr(result, "indptr"):
        value = [result.n_groups, result.n_rows, result.indptr, result.counts]
    else:
        value = result
    text = json.dumps(_plain(value), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def workload(rows: int, repeat: int = 0, only: list[str] | None = None
             ) -> dict[str, dict[str, Any]]:
    """Run every operation once on inputs of ``rows`` rows, then ``repeat`` timed calls each.

    Returns each operation's best wall and best CPU seconds (the process's, every thread)
    of the timed calls (``nan`` when ``repeat`` is 0) and the :func:`fingerprint` of its
    answer.
    """
    data = _inputs(rows)
    out: dict[str, dict[str, Any]] = {}
    for name, (_, setup, call) in _operations().items():
        if only and name not in only:
            continue
        result = call(setup(data))                  # loads (or compiles) its kernels
        answer, verdict = fingerprint(result), fingerprint(result, verdict=True)
        wall, cpu = [], []
        for _ in range(repeat):
            arg = setup(data)
            t0, c0 = time.perf_counter(), time.process_time()
            call(arg)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - t0)
        out[name] = {"wall": min(wall, default=float("nan")),
                     "cpu": min(cpu, default=float("nan")), "answer": answer,
                     "verdict": verdict}
    return out


def _child(out: str, rows: int, repeat: int, only: list[str] | None = None) -> None:
    """One fresh process: time the workload, say which kernels it ran and what it compiled."""
    import fastpriv
    from fastpriv._cache import shipped
    from fastpriv._progress import compile_stats

    times = workload(rows, repeat, only)
    found = shipped()
    Path(out).write_text(json.dumps({
        "seconds": times, "compiled": compile_stats()["kernels"], "package": fastpriv.__file__,
        "target": found.target if found is not None else "host"}))


def _env(pythonpath: list[Path], cache: Path, threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_", "FASTPRIV_")) and k != "PYTHONPATH"}
    env.update(PYTHONPATH=os.pathsep.join(map(str, pythonpath)), FASTPRIV_CACHE_DIR=str(cache),
               FASTPRIV_PROGRESS="0", NUMBA_NUM_THREADS=str(threads))
    return env


def _revision() -> str:
    """The measured tree's commit (``+dirty`` with uncommitted changes)."""
    try:
        return subprocess.run(["git", "-C", str(ROOT), "describe", "--always",
                               "--dirty=+dirty"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - not a checkout
        return "unknown"


def _prepare(work: Path, rows: int, threads: int) -> dict[str, dict[str, str]]:
    """Per variant: the environment of its processes.

    One snapshot of the package for all three (``site-<variant>``: the same sources, so the
    same kernels), the portable ones with their ``_kernel_cache`` built (kept when ``work``
    already holds it), the host's user cache filled by a first run.
    """
    code = (f"from benchmarks.bench_portable_kernels import workload; workload({rows})")
    snapshot = work / "snapshot" / "fastpriv"
    if not snapshot.is_dir():
        shutil.copytree(ROOT / "fastpriv", snapshot,
                        ignore=shutil.ignore_patterns("__pycache__", "_kernel_cache"))
    envs = {}
    for v in VARIANTS:
        site = work / f"site-{v}"
        if not (site / "fastpriv").is_dir():
            shutil.copytree(snapshot, site / "fastpriv")
        envs[v] = _env([site, ROOT], work / f"{v}-user-cache", threads)
        shipped = site / "fastpriv" / "_kernel_cache"
        if v != "host" and not (shipped / "manifest.json").is_file():
            subprocess.run([sys.executable, "-m", "fastpriv._package_cache", "build",
                            str(shipped), "--target", v, "--code", code], cwd=work,
                           env=envs[v], check=True)
    subprocess.run([sys.executable, "-c", code], cwd=work, env=envs["host"], check=True)
    return envs


def measure(rounds: int, rows: int, repeat: int, threads: int = 2,
            work: Path | None = None, only: list[str] | None = None) -> dict[str, Any]:
    """Time every variant ``rounds`` times in alternated fresh processes (see the module).

    ``work``: the folder of the package copies and caches, kept (and reused when it holds
    them); default a temporary one. ``only``: these operations alone.
    """
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    load_start = os.getloadavg()
    tmp = None if work is not None else tempfile.TemporaryDirectory()
    work = Path(work or tmp.name).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        envs = _prepare(work, rows, threads)
        for r in range(rounds):
            order = VARIANTS[r % 3:] + VARIANTS[:r % 3]
            for v in order:
                out = work / f"{v}-{r}.json"
                subprocess.run([sys.executable, "-m", "benchmarks.bench_portable_kernels",
                                "--child", str(out), "--rows", str(rows), "--repeat",
                                str(repeat), *(["--only", ",".join(only)] if only else [])],
                               cwd=work, env=envs[v], check=True)
                runs[v].append(json.loads(out.read_text()))
                if not Path(runs[v][-1]["package"]).is_relative_to(work / f"site-{v}"):
                    raise RuntimeError(f"{v} ran {runs[v][-1]['package']}, not its copy")
                print(f"round {r + 1}/{rounds} {v} (CPU-s): " + ", ".join(
                    f"{k} {t['cpu']:.3f}" for k, t in runs[v][-1]["seconds"].items()),
                    flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return _summary(runs, rounds, rows, repeat, threads, load_start, only)


def _summary(runs: dict[str, list[dict]], rounds: int, rows: int, repeat: int, threads: int,
             load_start: Any, only: list[str] | None = None) -> dict[str, Any]:
    """Medians per variant, and per target the median over rounds of its ratio to ``host``.

    A round's ratio divides the target's time by the host's time of the same round (the
    processes ran one after the other), so a change of the machine's load between rounds
    cancels out.
    """
    ops = {k: op for k, op in _operations().items() if not only or k in only}

    def med(v: str, k: str, clock: str) -> float:
        return statistics.median(run["seconds"][k][clock] for run in runs[v])

    def ratio(v: str, k: str, clock: str) -> float:
        return round(statistics.median(a["seconds"][k][clock] / h["seconds"][k][clock]
                                       for a, h in zip(runs[v], runs["host"], strict=True)), 3)

    return {
        "revision": _revision(), "load_avg_start": load_start, "load_avg_end": os.getloadavg(),
        "rows": rows, "rounds": rounds, "repeat": repeat, "numba_threads": threads,
        "operations": {k: desc for k, (desc, _, _) in ops.items()},
        "median_cpu_seconds": {v: {k: med(v, k, "cpu") for k in ops} for v in VARIANTS},
        "median_wall_seconds": {v: {k: med(v, k, "wall") for k in ops} for v in VARIANTS},
        "ratio_to_host": {v: {k: ratio(v, k, "cpu") for k in ops} for v in VARIANTS[1:]},
        "wall_ratio_to_host": {v: {k: ratio(v, k, "wall") for k in ops}
                               for v in VARIANTS[1:]},
        "same_answers": {k: len({run["seconds"][k]["answer"] for v in VARIANTS
                                 for run in runs[v]}) == 1 for k in ops},
        "same_verdicts": {k: len({run["seconds"][k]["verdict"] for v in VARIANTS
                                  for run in runs[v]}) == 1 for k in ops},
        "targets_loaded": {v: sorted({run["target"] for run in runs[v]}) for v in VARIANTS},
        "compiled_in_timed_runs": {v: sum(run["compiled"] for run in runs[v])
                                   for v in VARIANTS},
        "runs": runs,
    }


def bench_portable_kernels(full):
    """Smoke: every operation runs on a small input. Full: ``python -m`` this module."""
    from benchmarks._common import write_result

    if full:
        payload = measure(rounds=9, rows=1_000_000, repeat=5)
    else:
        times = workload(4000, repeat=1)
        assert set(times) == set(_operations())
        assert all(t["wall"] >= 0 and t["cpu"] >= 0 for t in times.values())
        payload = {"rows": 4000, "seconds": times}
    write_result("portable_kernels", payload, full)


def main(argv: list[str] | None = None) -> int:
    """Command line: the full measurement, or (``--child``) one timed process."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_portable_kernels")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=2, help="NUMBA_NUM_THREADS of every run")
    p.add_argument("--work", type=Path, help="keep the package copies and caches here "
                   "(reused by a later run)")
    p.add_argument("--only", help="comma-separated operations (default all); the result "
                   "goes to benchmarks/results/smoke/ then, not over the full run's")
    p.add_argument("--child", metavar="OUT", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    only = [k for k in (args.only or "").split(",") if k] or None
    if args.child:
        _child(args.child, args.rows, args.repeat, only)
        return 0
    from benchmarks._common import write_result

    payload = measure(args.rounds, args.rows, args.repeat, args.threads, args.work, only)
    path = write_result("portable_kernels", payload, only is None)
    for what in ("verdicts", "answers"):
        differ = [k for k, same in payload[f"same_{what}"].items() if not same]
        print(f"{what}: " + (f"differ for {differ}" if differ else "the same for every variant"))
    for v, ratios in payload["ratio_to_host"].items():
        print(f"{v} / host (CPU time, median of per-round ratios): "
              + ", ".join(f"{k} {r:.2f}" for k, r in ratios.items()))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
