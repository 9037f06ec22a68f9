"""Re-identification risk with sampling weights where the data lives: every engine's
``class_counts(sampling_weight=)`` gives the classes — and their sampling weight sums — of
``risk.class_counts(table, sampling_weight=)`` in memory, so ``risk.audit`` on them answers
as on the table.

The sums are floating point and each engine adds a class's rows in its own order: with
sampling weights whose partial sums are exact (dyadic fractions, as here) the sums and every
measure are equal to the bit; with arbitrary weights they agree to round-off
(:func:`test_arbitrary_weights_agree_to_round_off`). Null, NaN, zero, negative and infinite
sampling weights, nulls in the QI and weights of 0 (rows standing for nobody, whatever their
sampling weight) are drawn; each null policy gives the in-memory classes or the same kind
of refusal.

Needs DuckDB, Dask, PySpark and a Java runtime (the '.[all]' test install, as .ci/run does).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, pushdown, risk, stream_counts
from tests.spark_session import local_session
from tests.test_engines_classes import (
    POLICIES,
    SETTINGS,
    _assert_same_classes,
    _outcome,
    _write_parts,
    class_tables,
)

#: dyadic sampling weights (every partial sum exact) and the invalid ones memory refuses
_GOOD = [1.0, 1.5, 3.0, 12.75, 0.5]
_BAD = [None, float("nan"), 0.0, -1.0, float("inf")]


@st.composite
def weighted_tables(draw, max_rows: int = 20):
    """``(sample, qi, weight)``: :func:`class_tables`' sample with a sampling weight column
    ``sw`` (float64, or int64 when drawn so), invalid values sometimes."""
    sample, _, qi, weight = draw(class_tables(max_rows=max_rows))
    n = sample.num_rows
    if draw(st.booleans()):
        values = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
        col = pa.array(values, pa.int64())
    else:
        pool = _GOOD + (_BAD if draw(st.booleans()) else [])
        col = pa.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)),
                       pa.float64())
    return sample.append_column("sw", col), qi, weight


def _same(got: tuple, want: tuple, name: str) -> None:
    """The same classes and sums, and the same risk answer; or the same kind of refusal."""
    assert got[0] == want[0], (name, got, want)
    if want[0] == "error":
        assert got[1] == want[1], (name, got, want)
        return
    a, b = got[1], want[1]
    _assert_same_classes(a, b)
    assert a.sampling_weight_sums.tolist() == b.sampling_weight_sums.tolist(), name
    ra, rb = _outcome(risk.audit, a), _outcome(risk.audit, b)  # sums < records: refused
    assert ra[0] == rb[0], (name, ra, rb)
    if rb[0] == "ok":
        assert repr(ra[1].to_dict()) == repr(rb[1].to_dict()), name
    else:
        assert ra == rb, name


def _engines(sample: pa.Table, folder: str) -> dict:
    """Every single-machine engine's ``class_counts`` of ``sample`` (kwargs to come)."""
    import duckdb

    from fastpriv import distributed

    return {
        "duckdb relation": lambda **kw: pushdown.class_counts(duckdb.from_arrow(sample),
                                                              **kw),
        "duckdb parquet": lambda **kw: pushdown.class_counts(folder, **kw),
        "dask parquet": lambda **kw: distributed.class_counts(folder, split_every=2, **kw),
        "stream": lambda **kw: stream_counts.class_counts(
            sample.to_batches(max_chunksize=3), **kw),
    }


#: weights of 0 with invalid sampling weights (rows standing for nobody), a NaN and a
#: null QI, a class whose every sampling weight is null
ZEROS = (pa.table({"q0 float": [float("nan"), None, 1.5, 1.5, 2.0, 2.0],
                   "w": pa.array([1, 2, 0, 3, 0, 1], pa.int64()),
                   "sw": [0.5, -1.0, None, 1.5, float("inf"), None]}),
         ["q0 float"], "w")


#: the only invalid sampling weights are on rows of weight 0: accepted under every policy
ZEROS_ONLY = (pa.table({"q0 int64": [1, 1, 2, 2], "w": pa.array([1, 0, 2, 0], pa.int64()),
                        "sw": [1.5, None, 2.0, -1.0]}), ["q0 int64"], "w")


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)
@given(data=weighted_tables(), n_files=st.integers(1, 3))
@example(data=ZEROS, n_files=2)
@example(data=ZEROS_ONLY, n_files=2)
def test_random_tables_every_engine_equals_in_memory(data, n_files):
    import dask

    sample, qi, weight = data
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "sample")
        _write_parts(sample, folder, n_files)
        with dask.config.set(scheduler="synchronous"):
            for nulls in POLICIES:
                kw = dict(qi=qi, weight=weight, sampling_weight="sw", nulls=nulls)
                want = _outcome(risk.class_counts, sample, **kw)
                for name, count in _engines(sample, folder).items():
                    _same(_outcome(count, **kw), want, f"{name}, nulls={nulls}")


def test_arbitrary_weights_agree_to_round_off(tmp_path):
    """Log-normal sampling weights on 3,000 rows in four files: the class sums agree with
    memory's to 1e-12 (relative), and so does the risk they give."""
    import dask

    rng = np.random.default_rng(3)
    n = 3000
    sample = pa.table({"age": pa.array(rng.integers(20, 40, n), pa.int32()),
                       "sex": rng.choice(["f", "m"], n),
                       "w": pa.array(rng.integers(0, 3, n), pa.int64()),
                       "sw": rng.lognormal(3.0, 1.0, n)})
    folder = str(tmp_path / "sample")
    _write_parts(sample, folder, 4)
    kw = dict(qi=["age", "sex"], weight="w", sampling_weight="sw")
    want = risk.class_counts(sample, **kw)
    ref = risk.audit(want)
    with dask.config.set(scheduler="synchronous"):
        for name, count in _engines(sample, folder).items():
            got = count(**kw)
            _assert_same_classes(got, want)
            np.testing.assert_allclose(got.sampling_weight_sums, want.sampling_weight_sums,
                                       rtol=1e-12, err_msg=name)
            assert risk.audit(got).value == pytest.approx(ref.value, rel=1e-12), name


def test_refusals_name_the_parameter(tmp_path):
    """A sampling weight column that is missing, not numeric, the weight or a QI column;
    null and invalid sampling weights under each policy — refused as in memory."""
    import dask

    t = pa.table({"q": [1, 1, 2], "w": pa.array([1, 2, 1], pa.int64()),
                  "label": ["a", "b", "c"], "sw": [1.5, None, -2.0]})
    folder = str(tmp_path / "p")
    _write_parts(t, folder, 1)
    cases = [
        (dict(sampling_weight="nope"), InputError, "sampling_weight.*nope|nope.*not found"),
        (dict(sampling_weight="label"), InputTypeError, "sampling_weight"),
        (dict(sampling_weight="w", weight="w"), InputError, "same column"),
        (dict(sampling_weight="q"), InputError, "sampling_weight"),
        (dict(sampling_weight="sw"), InputError, "'sw' has 1 null"),
        (dict(sampling_weight="sw", nulls="value"), InputError,
         "2 weights are not finite and > 0"),
        (dict(sampling_weight="sw", nulls="drop"), InputError,
         "1 weights are not finite and > 0"),
    ]
    with dask.config.set(scheduler="synchronous"):
        for name, count in _engines(t, folder).items():
            for kw, exc, match in cases:
                with pytest.raises(exc, match=match):
                    count(qi="q", **kw)
                    pytest.fail(f"{name}: {kw} accepted")
    for kw, exc, _ in cases:                       # memory refuses the same
        with pytest.raises(exc):
            risk.class_counts(t, qi="q", **kw)


@pytest.fixture(scope="module")
def spark():
    """One local session for the module (a session already started is reused)."""
    return local_session("fastpriv-sampling-tests")


@pytest.mark.slow
@settings(max_examples=8, **SETTINGS)
@given(data=weighted_tables(max_rows=12))
@example(data=ZEROS)
@example(data=ZEROS_ONLY)
def test_spark_equals_in_memory(spark, data):
    import fastpriv.spark as fs

    sample, qi, weight = data
    df = spark.createDataFrame(sample).repartition(3)
    for nulls in POLICIES:
        kw = dict(qi=qi, weight=weight, sampling_weight="sw", nulls=nulls)
        _same(_outcome(fs.class_counts, df, **kw), _outcome(risk.class_counts, sample, **kw),
              f"spark, nulls={nulls}")


def test_spark_refuses_a_text_sampling_weight(spark):
    import fastpriv.spark as fs

    df = spark.createDataFrame(pa.table({"q": [1, 2], "label": ["a", "b"]}))
    with pytest.raises(InputTypeError, match="sampling_weight"):
        fs.class_counts(df, qi="q", sampling_weight="label")


def test_decimal_sampling_weights_are_numbers(tmp_path):
    """A decimal column of sampling weights (a survey file's usual type) is read as the
    numbers it holds, in memory and on every engine."""
    import decimal

    import dask

    t = pa.table({"q": [1, 1, 2], "sw": pa.array([decimal.Decimal("1.25"),
                                                   decimal.Decimal("2.50"),
                                                   decimal.Decimal("4.00")],
                                                  pa.decimal128(6, 2))})
    folder = str(tmp_path / "p")
    _write_parts(t, folder, 1)
    want = risk.class_counts(t, qi="q", sampling_weight="sw")
    assert want.sampling_weight_sums.tolist() == [3.75, 4.0]
    with dask.config.set(scheduler="synchronous"):
        for name, count in _engines(t, folder).items():
            got = count(qi="q", sampling_weight="sw")
            assert got.sampling_weight_sums.tolist() == [3.75, 4.0], name
