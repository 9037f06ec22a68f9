"""The README's engine table (``perf:engines``) is rendered from engines.json as measured:
every path and size in a row, what was not measured named with its reason, no new path
without a README name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import readme_tables as rt


def _contestant(min_s: float, ratio_memory: float, ratio_hand: float | None,
                jvm: float | None = None) -> dict:
    return {"min_s": min_s, "median_s": min_s * 1.1, "ratio_to_memory": ratio_memory,
            "ratio_to_hand": ratio_hand, "driver_peak_mib": 300.0, "jvm_peak_mib": jvm,
            "workers_peak_mib": 0.0}


def _results(tmp_path: Path, **edit) -> rt.Results:
    hand_of = {"spark_groupby": "spark_sql", "spark_sql": "spark_sql"}
    data = {"mode": "full", "machine": {"cpu": "CPU", "cores": 2, "date": "2026-01-02T03:04:05"},
            "revision": "abc123", "load_avg_start": [1.5, 1, 1], "load_avg_end": [2.5, 2, 2],
            "n_rows": 20_000_000, "files": 8, "cores": 2, "rounds": 3,
            "reference": "memory_batches", "hand_of": hand_of,
            "contestants": {"memory_batches": "memory", "spark_groupby": "spark",
                            "spark_sql": "spark"},
            "datasets": {"10000": {"contestants": {
                "memory_batches": _contestant(1.0, 1.0, None),
                "memory_table": {**_contestant(2.0, 2.0, None), "rounds": 1},
                "spark_groupby": _contestant(20.0, 20.0, 2.0, jvm=900.0),
                "spark_sql": _contestant(10.0, 10.0, 1.0, jvm=800.0)}}},
            "time_budget_min": 40,
            "skipped": [{"groups": 10000, "contestant": "duckdb", "reason": "budget"}],
            "failed": [{"groups": 10000, "contestant": "dask",
                                       "error": "exit 1 after 5 s",
                                       "cause": "java.lang.OutOfMemoryError: Java heap space",
                                       "process_wall_s": 5.2}]}
    data.update(edit)
    (tmp_path / "engines.json").write_text(json.dumps(data))
    return rt.Results(tmp_path)


def test_rows_ratios_and_what_was_not_measured(tmp_path):
    text = rt.engines(_results(tmp_path))
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()
            if line.startswith("| ") and "---" not in line}
    assert "| 20 / 22 | 20× | 2.0× | 300 | 900 | 0 |" in rows[rt.ENGINE_PATHS["spark_groupby"]]
    assert "| 1.0 / 1.1 | — | — |" in rows[rt.ENGINE_PATHS["memory_batches"]]
    assert "| 10 / 11 | 10× | — |" in rows[rt.ENGINE_PATHS["spark_sql"]]   # its own baseline
    assert ("not measured (failed after 5 s: the JVM ran out of heap (OutOfMemoryError))"
            in rows[rt.ENGINE_PATHS["dask"]])
    flat = " ".join(text.split())
    assert "Failed, so not in the timings: Dask: `fastpriv.distributed` at 10k groups." in flat
    assert "not measured (skipped: budget)" in rows[rt.ENGINE_PATHS["duckdb"]]
    assert "not measured (no run)" in rows[rt.ENGINE_PATHS["dask_hand"]]
    assert "| 2.0 / 2.2 (1 round) |" in rows[rt.ENGINE_PATHS["memory_table"]]
    assert "1 run did not start within the run's 40-minute budget" in text
    assert "In memory is faster than every engine path" in flat
    assert "2026-01-02 03:04 UTC" in text and "load average 1.5 before" in text


def test_a_fastpriv_path_faster_than_memory_is_said(tmp_path):
    data = json.loads(json.dumps({"contestants": {
        "memory_batches": _contestant(1.0, 1.0, None),
        "spark_groupby": _contestant(0.5, 0.5, 0.1, jvm=900.0)}}))
    text = rt.engines(_results(tmp_path, datasets={"10000": data}))
    assert "An engine path is faster than in memory" in " ".join(text.split())


def test_a_contestant_without_a_readme_name_is_refused(tmp_path):
    r = _results(tmp_path, contestants={"memory_batches": "memory", "polars": "polars"})
    with pytest.raises(rt.ReadmeDataError, match="polars"):
        rt.engines(r)


def test_failure_cause_names_what_spark_ran_out_of():
    from benchmarks.bench_engines import failure_cause

    log = ("26/11/27 ERROR Executor: Exception in task 0.0\njava.lang.OutOfMemoryError: Java "
           "heap space\n\tat java.base/...\npy4j.protocol.Py4JJavaError: An error occurred\n")
    assert failure_cause(log) == "java.lang.OutOfMemoryError: Java heap space"
    lost = "most recent failure: Lost task 1.0: TaskResultLost (result lost from block manager)"
    assert failure_cause(lost) == "TaskResultLost (result lost from block manager)"
    assert failure_cause("Traceback\nValueError: bad\n") == "ValueError: bad"
    assert failure_cause("nothing") is None


def _fold_sets(driver_hi: float, fold_s: float) -> dict:
    def c(min_s, hand, driver):
        return {**_contestant(min_s, 1.0, hand), "driver_peak_mib": driver}
    return {"10000": {"contestants": {"memory_batches": _contestant(1.0, 1.0, None),
                                      "spark_fold": c(5.0, 0.5, 120.0),
                                      "spark_sql": c(10.0, 1.0, 115.0)}},
            "10000000": {"contestants": {"memory_batches": _contestant(1.0, 1.0, None),
                                         "spark_fold": c(fold_s, fold_s / 10, driver_hi),
                                         "spark_sql": c(10.0, 1.0, 115.0)}}}


def test_fold_targets_are_stated_as_measured(tmp_path):
    hand_of = {"spark_fold": "spark_sql", "spark_sql": "spark_sql"}
    met = rt.engines(_results(tmp_path, datasets=_fold_sets(125.0, 8.0), hand_of=hand_of))
    flat = " ".join(met.split())
    assert "driver peak 120 MiB at 10k, 125 MiB at 10M groups (1.0× from 10k to 10M: met" \
        in flat
    assert "0.5–0.8× the time of Spark: hand-written `spark.sql` (met)" in flat
    missed = rt.engines(_results(tmp_path, datasets=_fold_sets(2000.0, 20.0),
                                 hand_of=hand_of))
    flat = " ".join(missed.split())
    assert "2,000 MiB at 10M groups (17× from 10k to 10M: missed" in flat
    assert "(missed at 10M groups)" in flat


def test_the_projection_is_never_rendered_as_a_measurement(tmp_path):
    fit = {"points": [{"n_rows": 20_000_000, "n_groups": g, "min_s": 1.0,
                       "driver_peak_mib": 100.0} for g in (10_000, 10_000_000)],
           "fixed_s": 1.0, "s_per_row": 1e-7, "s_per_group": 1e-6, "max_rel_residual": 0.1,
           "driver_mib_intercept": 100.0, "driver_mib_per_million_groups": 0.01,
           "projected": {"1": {"seconds": 201.0, "driver_mib": 101.0},
                         "10": {"seconds": 21.0, "driver_mib": 101.0}}}
    proj = {"target": {"n_rows": 10**9, "n_groups": 10**8, "executors": [1, 10]},
            "summary": {"s_per_summary": 2e-5, "bytes_per_summary": 600},
            "is_measurement": False, "contestants": {"spark_fold": fit}}
    text = rt.engines_projection(_results(tmp_path, projection=proj))
    assert text.startswith("**Projection, not a measurement**: 1B rows, 100M groups")
    assert "| 201 s | 21 s | 101 |" in text
    with pytest.raises(rt.ReadmeDataError, match="is_measurement"):
        rt.engines_projection(_results(tmp_path, projection={**proj, "is_measurement": True}))
