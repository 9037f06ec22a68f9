"""Fuzzing the input boundary: any table, any column choice — a result or a clear InputError.

Hypothesis draws tables of every Arrow type fastpriv may meet (nested, temporal, binary,
dictionary, decimal, null-only columns; NaN and ±inf; empty strings; nulls; duplicate or
missing column names) and column choices (unknown, repeated, overlapping roles), and drives
them through ``Release.from_table`` + ``classic.audit`` and the command line. Every failure
must be an :class:`fastpriv.InputError` naming a parameter — never a pyarrow, NumPy or Numba
exception.
"""

import datetime
import decimal
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, Release, classic
from fastpriv.cli import main

#: words a clear error uses to name what was wrong
PARAMS = ("data", "sensitive", "qi", "group", "nulls", "column", "individual", "DATA")

_TYPES = ["int", "float", "str", "bool", "date", "timestamp", "list", "struct", "null",
          "binary", "dict", "decimal", "large_str"]


@st.composite
def columns(draw, n):
    kind = draw(st.sampled_from(_TYPES))
    nulls = draw(st.booleans())

    def maybe(x):
        return None if nulls and draw(st.integers(0, 4)) == 0 else x
    if kind == "int":
        vals = [maybe(draw(st.integers(-3, 3))) for _ in range(n)]
        return pa.array(vals, pa.int64())
    if kind == "float":
        vals = [maybe(draw(st.sampled_from([0.0, 1.5, -2.0, math.nan, math.inf, -math.inf])))
                for _ in range(n)]
        return pa.array(vals, pa.float64())
    if kind in ("str", "large_str", "dict"):
        vals = [maybe(draw(st.sampled_from(["", "a", "b", "é", "x" * 50]))) for _ in range(n)]
        arr = pa.array(vals, pa.large_string() if kind == "large_str" else pa.string())
        return arr.dictionary_encode() if kind == "dict" else arr
    if kind == "bool":
        return pa.array([maybe(draw(st.booleans())) for _ in range(n)], pa.bool_())
    if kind == "date":
        return pa.array([maybe(datetime.date(2020, 1, 1 + draw(st.integers(0, 3))))
                         for _ in range(n)], pa.date32())
    if kind == "timestamp":
        return pa.array([maybe(datetime.datetime(2020, 1, 1, draw(st.integers(0, 3))))
                         for _ in range(n)], pa.timestamp("us"))
    if kind == "list":
        return pa.array([maybe([draw(st.integers(0, 2))]) for _ in range(n)],
                        pa.list_(pa.int64()))
    if kind == "struct":
        return pa.array([maybe({"x": draw(st.integers(0, 2))}) for _ in range(n)],
                        pa.struct([("x", pa.int64())]))
    if kind == "binary":
        return pa.array([maybe(draw(st.sampled_from([b"", b"\xff", b"a"]))) for _ in range(n)],
                        pa.binary())
    if kind == "decimal":
        return pa.array([maybe(decimal.Decimal(draw(st.integers(0, 3)))) for _ in range(n)],
                        pa.decimal128(5, 1))
    return pa.nulls(n)


@st.composite
def tables_and_roles(draw):
    n = draw(st.integers(0, 8))
    k = draw(st.integers(1, 4))
    names = [draw(st.sampled_from(["a", "b", "c", "d"])) for _ in range(k)]
    cols = [draw(columns(n)) for _ in range(k)]
    table = pa.Table.from_arrays(cols, names=names)
    pool = names + ["zz"]
    sensitive = draw(st.sampled_from(pool))
    keys = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    role = draw(st.sampled_from(["qi", "group"]))
    nulls = draw(st.sampled_from(["error", "drop", "value"]))
    return table, sensitive, keys, role, nulls


def _assert_clear(exc: BaseException) -> None:
    assert isinstance(exc, InputError), f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    assert any(p in str(exc) for p in PARAMS), f"no parameter named in: {exc}"


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_roles())
def test_release_and_audit_fail_only_with_input_errors(case):
    table, sensitive, keys, role, nulls = case
    try:
        rel = Release.from_table(table, sensitive=sensitive, nulls=nulls, **{role: keys})
        res = classic.audit(rel)
    except Exception as exc:        # noqa: BLE001 - the point is to classify every failure
        _assert_clear(exc)
        return
    assert res.to_dict()["n_rows"] == rel.n_rows > 0


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(tables_and_roles())
def test_cli_fails_only_with_exit_2(tmp_path_factory, capsys, case):
    table, sensitive, keys, role, nulls = case
    d = tmp_path_factory.mktemp("fuzz")
    path = d / "t.parquet"
    try:
        pq.write_table(table, path)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return                       # Parquet cannot hold this table (duplicate names, say)
    try:
        rc = main(["audit", str(path), "--sensitive", sensitive, f"--{role}", *keys,
                   "--nulls", nulls, "--json", str(d / "out.json")])
    except SystemExit as stop:      # argparse's own usage errors (--group takes one column)
        rc = stop.code
    err = capsys.readouterr().err
    assert rc in (0, 1, 2), err
    assert "Traceback" not in err and "internal error" not in err
    if rc == 2:
        assert "error:" in err and not (d / "out.json").exists()
    else:
        assert (d / "out.json").exists()


def test_pathological_shapes_end_in_bounded_time():
    """One group of 20,000 distinct values: (c,k) with a huge k, BP, and a bounded skyline."""
    import time

    import numpy as np

    from fastpriv import ck_safety, skyline

    n = 20_000
    rel = Release.from_table(pa.table({"g": np.zeros(n, dtype=np.int64),
                                       "d": np.arange(n).astype(str)}),
                             group="g", sensitive="d")
    # any k: saturated at min_b d_b − 1, where the disclosure is 1
    assert ck_safety.max_disclosure(rel, k=10**9, knowledge_kind="negations").value == 1.0
    with pytest.raises(InputError, match="GiB"):
        ck_safety.max_disclosure(rel, k=10**9)          # refused before allocating
    with pytest.raises(InputError, match="k_max"):
        ck_safety.disclosure_curve(rel, k_max=10**9)
    assert skyline.breach_probability(rel, "5", 10, 10, 10).value < 1e-3
    t0 = time.monotonic()
    with pytest.raises(InputError, match="did not finish within max_seconds"):
        skyline.knowledge_skyline(rel, "5", 0.95, max_seconds=1)
    assert time.monotonic() - t0 < 30


def test_robustness_refuses_a_group_too_large_to_hold():
    """10⁴ tuples × 10⁴ values in one group: refused by name before allocating."""
    import numpy as np

    from fastpriv import robustness

    n = 20_000
    t = pa.table({"q": np.arange(n) % 5, "g": np.zeros(n, dtype=np.int64),
                  "d": np.arange(n).astype(str)})
    with pytest.raises(InputError, match="values to test"):
        robustness.audit(t, qi=["q"], sensitive="d", group="g", r=2, min_support=5)
