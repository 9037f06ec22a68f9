"""Re-identification risk with sampling weights as a fold: ``SamplingHistogram``.

With sampling weights every class has its own estimated population size F̂_j, so the
risk's measures do not fold into a histogram of sizes; the summary keeps the measures
themselves (exact sums, extremes, counts above the threshold, the first class whose weights
sum below its records). Checked here: the exact sums against ``math.fsum`` and under any
split; summaries of disjoint classes merged in any order equal the summary of the whole;
``risk.audit`` equals a per-class oracle written with Python loops; and every engine's
``class_histogram(sampling_weight=)`` — DuckDB (a relation and Parquet files), Dask
(``split_out`` drawn), a stream (any order, spilled to files, sorted by the QI), Spark —
gives, through
``risk.audit``, the answer of the table in memory, or the same kind of refusal.

Needs DuckDB, Dask, PySpark and a Java runtime (the '.[all]' test install, as .ci/run does).
"""

from __future__ import annotations

import math
import os
import random
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, pushdown, risk, stream_counts
from fastpriv._exact_sum import exact_sum, to_float
from fastpriv._kernels import risk as kr
from fastpriv._validation import kernel_array
from fastpriv.class_histogram import SamplingHistogram
from tests.spark_session import local_session
from tests.test_engine_folds import sorted_by_keys
from tests.test_engines_classes import POLICIES, SETTINGS, _outcome, _write_parts
from tests.test_sampling_weight_engines import ZEROS, ZEROS_ONLY, weighted_tables

_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(values=st.lists(_FINITE, max_size=40), cut=st.integers(0, 40))
def test_exact_sum_is_fsum_under_any_split(values, cut):
    """The sum rounded once equals ``math.fsum`` (correctly rounded), and two parts' sums
    add to the whole's — whatever the magnitudes (subnormals, ±1e308, cancellation)."""
    x = np.array(values, dtype=np.float64)
    whole = exact_sum(x)
    try:
        want = math.fsum(values)
    except OverflowError:               # the exact sum is past the largest float64
        want = math.inf if whole > 0 else -math.inf
    assert to_float(whole) == want
    assert exact_sum(x[:cut]) + exact_sum(x[cut:]) == whole


def test_exact_sum_refuses_non_finite_values():
    with pytest.raises(ValueError, match="finite"):
        exact_sum(np.array([1.0, np.inf]))


def _oracle(table: pa.Table, qi: list, weight, threshold: float) -> dict:
    """The sampling-weight measures of ``risk.audit``, class by class in Python."""
    classes: dict = {}
    for row in table.to_pylist():
        w = 1 if weight is None else row[weight]
        if w == 0:
            continue
        f, s = classes.get(tuple(row[c] for c in qi), (0, 0.0))
        classes[tuple(row[c] for c in qi)] = (f + w, s + w * row["sw"])
    n = sum(f for f, _ in classes.values())
    big = {k: max(s, f) for k, (f, s) in classes.items()}
    # the Benedetti-Franconi kernel has its own oracle (tests/test_risk.py)
    r = {k: float(kr.bf_individual_risk(kernel_array([f], np.int64),
                                        kernel_array([big[k]], np.float64))[0])
         for k, (f, _) in classes.items()}
    expected = math.fsum(f * r[k] for k, (f, _) in classes.items())
    exposure = math.fsum(f / big[k] for k, (f, _) in classes.items())
    return {"journalist_max": 1.0 / min(big.values()),
            "journalist_avg": max(len(classes) / math.fsum(big.values()), exposure / n),
            "journalist_above_threshold": sum(f for k, (f, _) in classes.items()
                                              if 1.0 / big[k] > threshold) / n,
            "marketer": exposure / n, "individual_max": max(r.values()),
            "individual_avg": expected / n, "expected_reidentifications": expected,
            "individual_above_threshold": sum(f for k, (f, _) in classes.items()
                                              if r[k] > threshold) / n}


@st.composite
def survey(draw):
    """A table of 1–60 rows over two QI columns with valid sampling weights (≥ 1 each)."""
    n = draw(st.integers(1, 60))
    ints = st.lists(st.integers(0, 3), min_size=n, max_size=n)
    weights = draw(st.lists(st.floats(1.0, 500.0), min_size=n, max_size=n))
    return pa.table({"a": draw(ints), "b": draw(ints), "w": pa.array(
        draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), pa.int64()),
        "sw": weights})


@settings(max_examples=120, deadline=None, derandomize=True)
@given(table=survey(), threshold=st.sampled_from([0.001, 0.05, 0.2, 0.5]),
       weighted=st.booleans())
def test_in_memory_measures_equal_a_per_class_oracle(table, threshold, weighted):
    weight = "w" if weighted else None
    if weighted and not any(table.column("w").to_pylist()):
        return
    got = risk.audit(table, qi=["a", "b"], weight=weight, sampling_weight="sw",
                     threshold=threshold).to_dict()
    for key, want in _oracle(table, ["a", "b"], weight, threshold).items():
        assert got[key] == want, key


@settings(max_examples=100, deadline=None, derandomize=True)
@given(table=survey(), parts=st.integers(1, 5), seed=st.integers(0, 1000))
def test_summaries_of_disjoint_classes_merge_to_the_whole(table, parts, seed):
    """Classes split into parts (each class whole in one), summarized and merged in a
    random order: every field of the whole table's summary, and its audit."""
    classes = risk.class_counts(table, qi=["a", "b"], sampling_weight="sw")
    whole = SamplingHistogram.from_class_counts(classes, threshold=0.05)
    keys = classes.keys.to_pylist()
    which = np.array([hash(tuple(k.values())) % parts for k in keys])
    pieces = []
    for p in range(parts):
        mask = which == p
        if mask.any():
            t = classes.to_table().filter(pa.array(mask))
            part = risk.ClassCounts.from_counts(t, qi=["a", "b"], count="size",
                                                sampling_weight_sum="sampling_weight_sum")
            pieces.append(SamplingHistogram.from_class_counts(part, threshold=0.05))
    random.Random(seed).shuffle(pieces)
    merged = pieces[0].merge(*pieces[1:])
    assert merged.to_dict() == {**whole.to_dict(), "sampling_weight": "sampling_weight_sum"}
    for name in ("weight_total", "population_total", "exposure", "expected"):
        assert getattr(merged, name) == getattr(whole, name), name
    want = risk.audit(classes, threshold=0.05).to_dict()
    got = risk.audit(merged, threshold=0.05).to_dict()
    assert {k: v for k, v in got.items() if k != "params"} == \
        {k: v for k, v in want.items() if k != "params"}


def test_a_short_class_is_the_first_in_key_order_after_a_merge():
    """Two parts each with a class whose weights sum below its records: the audit names
    the first in key order, as the whole table's classes do."""
    t = pa.table({"a": [1, 1, 2, 2, 3], "sw": [0.25, 0.25, 5.0, 5.0, 0.5]})
    whole = risk.class_counts(t, qi="a", sampling_weight="sw")
    with pytest.raises(InputError, match=r"the class \{'a': 1\}") as mem:
        risk.audit(whole)
    left = risk.class_counts(t.slice(2), qi="a", sampling_weight="sw")
    right = risk.class_counts(t.slice(0, 2), qi="a", sampling_weight="sw")
    merged = SamplingHistogram.from_class_counts(left, threshold=0.2).merge(
        SamplingHistogram.from_class_counts(right, threshold=0.2))
    with pytest.raises(InputError) as got:
        risk.audit(merged)
    assert str(got.value) == str(mem.value)


def test_what_a_summary_cannot_answer_is_refused():
    import duckdb

    t = pa.table({"a": [1, 1, 2], "sw": [2.0, 3.0, 4.0]})
    h = pushdown.class_histogram(duckdb.from_arrow(t), qi="a", sampling_weight="sw",
                                 threshold=0.1)
    with pytest.raises(InputError, match="threshold=0.1"):
        risk.audit(h)                                  # the default threshold, 0.2
    assert risk.audit(h, threshold=0.1).to_dict() == risk.audit(
        t, qi="a", sampling_weight="sw", threshold=0.1).to_dict()
    with pytest.raises(InputError, match="population"):
        risk.audit(h, threshold=0.1, population=t)
    with pytest.raises(InputError, match="sampling_weight"):
        risk.audit(h, threshold=0.1, sampling_weight="sw")
    with pytest.raises(InputError, match="threshold.*sampling_weight"):
        pushdown.class_histogram(duckdb.from_arrow(t), qi="a", threshold=0.1)
    with pytest.raises(InputError, match="threshold"):
        stream_counts.class_histogram(t, qi="a", sampling_weight="sw", threshold=1.5)
    with pytest.raises(InputError, match="merge"):
        h.merge(SamplingHistogram.from_class_counts(
            risk.class_counts(t, qi="a", sampling_weight="sw"), threshold=0.2))


def _folds(sample: pa.Table, qi: list, folder: str, split_out: int) -> dict:
    """Every single-machine engine's ``class_histogram`` of ``sample`` (kwargs to come)."""
    import duckdb

    from fastpriv import distributed

    ordered = sorted_by_keys(sample, qi)
    return {
        "duckdb relation": lambda **kw: pushdown.class_histogram(duckdb.from_arrow(sample),
                                                                 **kw),
        "duckdb parquet": lambda **kw: pushdown.class_histogram(folder, split_out=split_out,
                                                                **kw),
        "dask parquet": lambda **kw: distributed.class_histogram(
            folder, split_every=2, split_out=split_out, **kw),
        "stream": lambda **kw: stream_counts.class_histogram(
            sample.to_batches(max_chunksize=3), **kw),
        "sorted stream": lambda **kw: stream_counts.class_histogram(
            ordered.to_batches(max_chunksize=2), clustered=True, **kw),
        "spilled stream": lambda **kw: stream_counts.class_histogram(
            sample.to_batches(max_chunksize=3), split_out=split_out, **kw),
    }


def _same_audit(got: tuple, want: tuple, name: str) -> None:
    """The same risk answer (every measure, witness and parameter), or a refusal."""
    assert got[0] == want[0], (name, got, want)
    if want[0] == "ok":
        assert repr(got[1].to_dict()) == repr(want[1].to_dict()), name
        assert got[1].witness == want[1].witness, name
    else:
        assert got[1] == want[1], (name, got, want)


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)
@given(data=weighted_tables(), n_files=st.integers(1, 3), split_out=st.integers(1, 4),
       threshold=st.sampled_from([None, 0.01, 0.5]))
@example(data=ZEROS, n_files=2, split_out=2, threshold=None)
@example(data=ZEROS_ONLY, n_files=2, split_out=3, threshold=0.5)
def test_every_engine_s_fold_audits_as_the_table(data, n_files, split_out, threshold):
    import dask

    sample, qi, weight = data
    at = {} if threshold is None else {"threshold": threshold}
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "sample")
        _write_parts(sample, folder, n_files)
        with dask.config.set(scheduler="synchronous"):
            for nulls in POLICIES:
                kw = dict(qi=qi, weight=weight, sampling_weight="sw", nulls=nulls)
                want = _outcome(risk.audit, sample, **kw, **at)
                for name, fold in _folds(sample, qi, folder, split_out).items():
                    got = _outcome(lambda: risk.audit(fold(**kw, **at), **at))  # noqa: B023
                    _same_audit(got, want, f"{name}, nulls={nulls}")


def test_arbitrary_weights_agree_to_round_off(tmp_path):
    """Log-normal sampling weights on 3,000 rows in four files: each engine's class sums
    are added in its own order, so the measures agree with memory's to 1e-12 (relative);
    the counts above the threshold and the smallest class are equal."""
    import dask

    rng = np.random.default_rng(5)
    n = 3000
    sample = pa.table({"age": pa.array(rng.integers(20, 40, n), pa.int32()),
                       "sex": rng.choice(["f", "m"], n),
                       "w": pa.array(rng.integers(0, 3, n), pa.int64()),
                       "sw": 1.0 + rng.lognormal(3.0, 1.0, n)})
    folder = str(tmp_path / "sample")
    _write_parts(sample, folder, 4)
    kw = dict(qi=["age", "sex"], weight="w", sampling_weight="sw")
    want = risk.audit(sample, **kw).to_dict()
    with dask.config.set(scheduler="synchronous"):
        for name, fold in _folds(sample, ["age", "sex"], folder, 3).items():
            got = risk.audit(fold(**kw)).to_dict()
            for key in ("journalist_max", "journalist_avg", "marketer", "individual_max",
                        "individual_avg", "expected_reidentifications"):
                assert got[key] == pytest.approx(want[key], rel=1e-12), (name, key)
            for key in ("prosecutor_max", "journalist_above_threshold",
                        "individual_above_threshold", "sample_uniques"):
                assert got[key] == want[key], (name, key)


@pytest.fixture(scope="module")
def spark():
    """One local session for the module (a session already started is reused)."""
    return local_session("fastpriv-sampling-fold-tests")


@pytest.mark.slow
@settings(max_examples=8, **SETTINGS)
@given(data=weighted_tables(max_rows=12), threshold=st.sampled_from([None, 0.01]))
@example(data=ZEROS, threshold=None)
@example(data=ZEROS_ONLY, threshold=0.01)
def test_spark_fold_audits_as_the_table(spark, data, threshold):
    import fastpriv.spark as fs

    sample, qi, weight = data
    at = {} if threshold is None else {"threshold": threshold}
    df = spark.createDataFrame(sample).repartition(3)
    for nulls in POLICIES:
        kw = dict(qi=qi, weight=weight, sampling_weight="sw", nulls=nulls)
        got = _outcome(lambda: risk.audit(fs.class_histogram(df, **kw, **at), **at))  # noqa: B023
        _same_audit(got, _outcome(risk.audit, sample, **kw, **at), f"spark, nulls={nulls}")


def test_spark_sends_one_summary_per_partition(spark, monkeypatch):
    """The driver receives one pickled summary per partition of classes, not the classes:
    5,000 classes in 4 partitions come back as at most 4 states."""
    import fastpriv.spark as fs

    n = 5000
    t = pa.table({"q": np.arange(n), "sw": np.full(n, 2.0)})
    df = spark.createDataFrame(t)
    seen = []
    original = fs._states

    def counting(frame, fn):
        out = original(frame, fn)
        seen.append(len(out))
        return out

    monkeypatch.setattr(fs, "_states", counting)
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    try:
        h = fs.class_histogram(df, qi="q", sampling_weight="sw")
    finally:
        spark.conf.unset("spark.sql.shuffle.partitions")
    assert seen and seen[0] <= 4
    assert h.n_classes == n and h.total("weight_total") == 2.0 * n


def test_the_summary_follows_the_result_protocol():
    import json

    t = pa.table({"a": [1, 1, 2], "sw": [2.0, 3.0, 4.0]})
    h = SamplingHistogram.from_class_counts(risk.class_counts(t, qi="a", sampling_weight="sw"),
                                            threshold=0.3)
    assert h.value == 2 and h.witness is None
    assert h.params == {"qi": ["a"], "nulls": "error", "sampling_weight": "sw",
                        "threshold": 0.3}
    d = json.loads(json.dumps(h.to_dict()))
    assert d["weight_total"] == 9.0 and d["n_records"] == 3 and d["short"] is None
    assert "9 people" in h.summary()
    with pytest.raises(InputError, match="threshold"):
        SamplingHistogram(h.classes, "sw", 2.0, 0, 1.0, 0, 0, 0, 0.5, 0, 0)
