"""Row-level models where the data lives: r-robustness and the foreground attack read the
distinct (QI, group, sensitive) rows with their count, computed by DuckDB, Dask or Spark
(``row_counts``), and give the answer of the whole table in memory.

The reference is the in-memory table itself (one row per individual: a weighted input is
expanded), audited with the same keywords. Its rows are first put in the order of the row
counts (by QI, group, sensitive; nulls last): the audit's value, counts and per-tuple
numbers do not depend on the row order, but its tie-breaking (the first worst row) and its
row numbers do. Each row number of the reference is then mapped to the row of the count
table that holds it (row counts[i] stands for the reference rows cum[i-1] .. cum[i]-1), and
the two ``to_dict()`` must be equal (floats to 1e-13), timings ("seconds") left out.

Needs DuckDB, Dask, PySpark and a Java runtime (the '.[all]' test install and
``apt-get install -y openjdk-17-jre-headless``, as .ci/run does).
"""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import (
    HealthCheck,
    currently_in_test_context,
    event,
    example,
    given,
    settings,
)
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, Release, foreground, pushdown, robustness
from tests.engines import _KINDS, ROW_REFUSAL_TABLE, ROW_REFUSALS
from tests.spark_session import local_session

R = 2.0
SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------ random tables
@st.composite
def row_tables(draw, max_rows: int = 24):
    """``(table, qi, group, sensitive, weight)``: 1–2 QI columns of mixed types, a group
    column (ints or strings), a sensitive column, nulls sometimes, a weight column
    (0..3) sometimes. Few distinct values, so ties (equal groups, equal posteriors) are
    common."""
    n = draw(st.integers(1, max_rows))

    def column(kind: str, nulls: bool) -> pa.Array:
        typ, elems = _KINDS[kind]
        if nulls:
            elems = st.one_of(elems, st.none())
        return pa.array(draw(st.lists(elems, min_size=n, max_size=n)), type=typ)

    cols, qi = {}, []
    for i in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(sorted(_KINDS)))
        name = f"q{i} {kind}"                       # a space: identifiers are quoted
        cols[name] = column(kind, draw(st.booleans()))
        qi.append(name)
    gkind = draw(st.sampled_from(["int32", "string"]))
    cols["g"] = column(gkind, draw(st.integers(0, 3)) == 0)
    skind = draw(st.sampled_from(["string", "int64"]))
    cols["s"] = column(skind, draw(st.integers(0, 3)) == 0)
    weight = None
    if draw(st.booleans()):
        weight = "w"
        cols["w"] = pa.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
                             pa.int64())
    return pa.table(cols), qi, "g", "s", weight


# ------------------------------------------------------------------ the reference
def _expanded(table: pa.Table, weight: str | None) -> pa.Table:
    """One row per individual: each row repeated ``weight`` times (the meaning of weight=)."""
    if weight is None:
        return table
    w = table.column(weight).to_numpy()
    return table.drop_columns([weight]).take(pa.array(np.repeat(np.arange(len(w)), w)))


def _sorted_reference(table: pa.Table, cols: list[str]) -> pa.Table:
    """The individuals in the order of the row counts: NaN read as null, then sorted by
    ``cols`` ascending, nulls last (stable)."""
    for c in cols:
        col = table.column(c)
        if pa.types.is_floating(col.type):
            col = pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)
            table = table.set_column(table.schema.get_field_index(c), c, col)
    if table.num_rows == 0:
        return table
    order = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in cols],
                            null_placement="at_end")
    return table.take(order)


def _outcome(fn, data, **kw):
    try:
        return "ok", fn(data, **kw)
    except (InputError, InputTypeError) as exc:   # e.g. nulls="error" with nulls
        return "error", type(exc).__name__


def _rows_mapped(d, cum: np.ndarray):
    """Replace every reference row number by the row of the count table holding it."""
    if isinstance(d, dict):
        return {k: (int(np.searchsorted(cum, v, side="right"))
                    if k == "row" and isinstance(v, int) and v >= 0 else _rows_mapped(v, cum))
                for k, v in d.items() if k != "seconds"}
    if isinstance(d, list):
        return [_rows_mapped(v, cum) for v in d]
    return d


def _no_seconds(d):
    if isinstance(d, dict):
        return {k: _no_seconds(v) for k, v in d.items() if k != "seconds"}
    if isinstance(d, list):
        return [_no_seconds(v) for v in d]
    return d


def _assert_close(got, want, path="result"):
    """Equal JSON trees; floats equal to 1e-13 (NaN equals NaN); bool/int/float kinds kept."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), \
            (path, sorted(set(got) ^ set(want)) if isinstance(got, dict) else got)
        for k in want:
            _assert_close(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (path, got, want)
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_close(a, b, f"{path}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert isinstance(got, float), (path, got, want)
        assert (math.isnan(got) and math.isnan(want)) or abs(got - want) <= 1e-13, \
            (path, got, want)
    else:
        assert type(got) is type(want) and got == want, (path, got, want)


def _people_per_row(worst: list[dict]) -> list[dict]:
    """A ``worst`` list (rows mapped) with consecutive entries of one row merged, ``people``
    the number of people they stand for (consecutive: equal posteriors, stable order)."""
    out: list[dict] = []
    for t in worst:
        n = t.get("people", 1)
        if out and out[-1]["row"] == t["row"]:
            out[-1]["people"] += n
        else:
            out.append({**t, "people": n})
    return out


def _assert_same_result(name: str, got, want, cum: np.ndarray) -> None:
    """to_dict() equal, reference rows mapped to count rows. The foreground attack's
    ``worst`` names people: a count row of 3 is listed once with ``people`` = 3, the same
    three individuals in memory three times, merged here."""
    g, w = got.to_dict(), _rows_mapped(want.to_dict(), cum)
    if name == "foreground":
        w["worst"] = _people_per_row(w["worst"])
        assert sum(t["people"] for t in g["worst"]) == min(10, got.n_rows)
        for k in (1, 3, int(want.posterior.size)):
            _assert_close(_no_seconds(got.worst(k)),
                          _people_per_row(_rows_mapped(want.worst(k), cum)), f"{name}.worst")
    _assert_close(_no_seconds(g), w, name)


MODELS = {
    "robustness": lambda data, **kw: robustness.audit(data, r=R, **kw),
    "foreground": lambda data, **kw: foreground.attack(data, r=R, **kw),
}


def assert_rowlevel_same(counts: pa.Table, table: pa.Table, qi: list[str], group: str,
                         sensitive: str, weight: str | None, nulls_policies=("value", "drop"),
                         count: str = "count") -> None:
    """``counts`` (an engine's row_counts of ``table``) answers as ``table`` in memory:
    the count table itself, both releases (labels and their types) and, for each null
    policy, the to_dict() of r-robustness and of the foreground attack."""
    cols = qi + [group, sensitive]
    assert counts.column_names == cols + [count]
    assert counts.column(count).type == pa.int64()
    ref = _sorted_reference(_expanded(table, weight), cols)
    cum = np.cumsum(counts.column(count).to_numpy())
    assert int(cum[-1] if len(cum) else 0) == ref.num_rows
    # the count table is the run-length encoding of the sorted individuals
    expanded = counts.select(cols).take(pa.array(np.repeat(np.arange(counts.num_rows),
                                                           counts.column(count).to_numpy())))
    for c in cols:
        a, b = expanded.column(c), ref.column(c)
        assert a.to_pylist() == b.to_pylist(), c
    # distinct rows: no two rows of the count table share their labels
    assert counts.group_by(cols).aggregate([]).num_rows == counts.num_rows
    # label types: as Release.from_table reads them in memory
    if ref.num_rows:
        for kw in ({"group": qi + [group]}, {"group": [group]}):
            want = Release.from_table(ref, sensitive=sensitive, nulls="value", **kw)
            got = Release.from_table(counts, sensitive=sensitive, nulls="value",
                                     weight=count, **kw)
            assert got.equals(want)
            assert got.groups.schema == want.groups.schema
            assert got.value_labels.type == want.value_labels.type
    for nulls in nulls_policies:
        kw = dict(qi=qi, group=group, sensitive=sensitive, nulls=nulls)
        for name, model in MODELS.items():
            want = _outcome(model, ref, **kw)
            got = _outcome(model, counts, weight=count, **kw)
            if currently_in_test_context():
                event(f"{name} {nulls}: {want[0]}")
            assert got[0] == want[0], (name, nulls, got, want)
            if want[0] == "ok":
                _assert_same_result(name, got[1], want[1], cum)
            else:
                assert got == want


def _write_parts(table: pa.Table, folder: str, n_files: int) -> None:
    """Split the rows by position into ``n_files`` Parquet files: groups span files."""
    os.makedirs(folder, exist_ok=True)
    step = max(1, -(-table.num_rows // n_files))
    for i, start in enumerate(range(0, table.num_rows, step)):
        pq.write_table(table.slice(start, step), os.path.join(folder, f"part-{i}.parquet"))


# ------------------------------------------------------------------ DuckDB and Dask
#: NaN and null in a float QI column (one label in memory; DuckDB groups them apart),
#: a null group, a null sensitive value, weights 0..3, rows repeated across files
NAN_EXAMPLE = (pa.table({
    "q0 float": [float("nan"), None, 1.5, float("nan"), 1.5, None, 0.0, 1.5],
    "g": pa.array([1, 1, 1, 2, 2, None, 2, 1], pa.int32()),
    "s": ["a", "b", "a", None, "a", "b", "b", "a"],
    "w": pa.array([1, 2, 0, 3, 1, 1, 2, 1], pa.int64())}), ["q0 float"], "g", "s", "w")


@settings(max_examples=40, **SETTINGS)
@given(data=row_tables(), n_files=st.integers(1, 3))
@example(data=NAN_EXAMPLE, n_files=2)
def test_random_tables_duckdb_and_dask_equal_in_memory(data, n_files):
    import dask
    import dask.dataframe as dd
    import duckdb

    from fastpriv import distributed

    table, qi, group, sens, weight = data
    kw = dict(qi=qi, group=group, sensitive=sens, weight=weight)
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "parts")
        _write_parts(table, folder, n_files)
        engines = {
            "duckdb relation": lambda: pushdown.row_counts(duckdb.from_arrow(table), **kw),
            "duckdb parquet": lambda: pushdown.row_counts(folder, **kw),
            "dask parquet": lambda: distributed.row_counts(folder, split_every=2, **kw),
            "dask frame": lambda: distributed.row_counts(dd.read_parquet(folder), **kw),
        }
        with dask.config.set(scheduler="synchronous"):
            results = {name: run() for name, run in engines.items()}
    first = results["duckdb relation"]
    assert_rowlevel_same(first, table, qi, group, sens, weight)
    for name, got in results.items():     # every engine: the same table, types included
        assert got.equals(first), name


def test_parquet_folder_groups_span_files(tmp_path):
    """A few thousand rows in four files, every group in several files; ties by design
    (groups of equal composition)."""
    import dask
    import duckdb

    from fastpriv import distributed

    rng = np.random.default_rng(7)
    n = 4000
    table = pa.table({
        "age": pa.array(rng.integers(20, 26, n), pa.int32()),
        "zip": pa.array(rng.choice(["100", "101", "102", None], n, p=[.4, .3, .29, .01])),
        "gid": pa.array(rng.integers(0, 80, n), pa.int64()),
        "disease": rng.choice(["flu", "hiv", "cold", "none"], n, p=[.5, .05, .25, .2]),
        "n": pa.array(rng.integers(0, 4, n), pa.int16()),
    })
    folder = str(tmp_path / "flat")
    _write_parts(table, folder, 4)
    kw = dict(qi=["age", "zip"], group="gid", sensitive="disease")
    for weight in (None, "n"):
        with dask.config.set(scheduler="synchronous"):
            got = {"dask": distributed.row_counts(folder, weight=weight, **kw),
                   "duckdb": pushdown.row_counts(folder, weight=weight, **kw),
                   "duckdb relation": pushdown.row_counts(
                       duckdb.read_parquet(os.path.join(folder, "*.parquet")),
                       weight=weight, **kw)}
        assert got["dask"].num_rows < n
        for name, t in got.items():
            assert t.equals(got["dask"]), name
        assert_rowlevel_same(got["dask"], pq.read_table(folder), kw["qi"], "gid",
                             "disease", weight)


def test_dask_frame_integer_labels_with_nulls(tmp_path):
    """pandas turns an integer column holding nulls into floats; the labels stay integers."""
    import dask
    import dask.dataframe as dd

    from fastpriv import distributed

    t = pa.table({"age": pa.array([29, None, 29, 30, None, 31], pa.int32()),
                  "g": [1, 1, 2, 2, 1, 2], "s": ["a", "b", "a", "a", "b", "b"]})
    folder = str(tmp_path / "p")
    _write_parts(t, folder, 3)
    with dask.config.set(scheduler="synchronous"):
        got = distributed.row_counts(dd.read_parquet(folder), qi="age", group="g",
                                     sensitive="s")
    assert got.schema.field("age").type == pa.int64()
    assert got.column("age").to_pylist() == [29, 29, 30, 31, None]
    assert_rowlevel_same(got, t, ["age"], "g", "s", None)


# ------------------------------------------------------------------ bad input
def test_bad_input_names_the_parameter(tmp_path):
    import dask
    import duckdb

    from fastpriv import distributed

    t = pa.table(ROW_REFUSAL_TABLE)
    folder = str(tmp_path / "p")
    _write_parts(t, folder, 1)
    engines = {"duckdb": (lambda d, **kw: pushdown.row_counts(duckdb.from_arrow(d), **kw)),
               "dask": (lambda d, **kw: distributed.row_counts(folder, **kw))}
    cases = ROW_REFUSALS
    for name, fn in engines.items():
        for kw, exc, match in cases:
            with dask.config.set(scheduler="synchronous"), pytest.raises(exc, match=match):
                fn(t, **kw)
                pytest.fail(f"{name}: {kw} accepted")
    with pytest.raises(InputTypeError, match="DuckDB relation or a path"):
        pushdown.row_counts(t, qi="q", group="g", sensitive="s")
    with pytest.raises(InputError, match="no such file"):
        pushdown.row_counts(str(tmp_path / "none"), qi="q", group="g", sensitive="s")


def test_finish_row_counts_sums_partial_counts():
    """Concatenated partial counts (per partition, per day) add up; NaN merges with null;
    count 0 rows go; decimal counts (a SQL SUM) are read exactly."""
    from decimal import Decimal

    t = pa.table({"q": pa.array([1.5, float("nan"), None, 1.5, 2.0], pa.float32()),
                  "g": pa.array(["x", "x", "x", "x", "y"]).dictionary_encode(),
                  "s": pa.array([1, 1, 1, 1, 1], pa.int8()),
                  "n": pa.array([Decimal(2**62), Decimal(3), Decimal(4), Decimal(1),
                                 Decimal(0)], pa.decimal128(38, 0))})
    out = pushdown.finish_row_counts(t, qi="q", group="g", sensitive="s", count="n")
    assert out.schema == pa.schema([("q", pa.float64()), ("g", pa.string()),
                                    ("s", pa.int64()), ("n", pa.int64())])
    assert out.to_pylist() == [{"q": 1.5, "g": "x", "s": 1, "n": 2**62 + 1},
                               {"q": None, "g": "x", "s": 1, "n": 7}]
    with pytest.raises(InputError, match="past 2"):
        pushdown.finish_row_counts(t.set_column(3, "n", pa.array([2**62] * 5, pa.int64())),
                                   qi="q", group="g", sensitive="s", count="n")


# ------------------------------------------------------------------ Spark


@pytest.fixture(scope="module")
def spark():
    """One local[1] session for the module (a session already started in this process is
    reused)."""
    return local_session("fastpriv-rowlevel-tests")


@pytest.mark.slow
@settings(max_examples=6, **SETTINGS)
@given(data=row_tables(max_rows=16), n_parts=st.integers(1, 3))
@example(data=NAN_EXAMPLE, n_parts=2)
def test_random_tables_on_spark_equal_in_memory(spark, data, n_parts):
    import duckdb

    import fastpriv.spark as fs

    table, qi, group, sens, weight = data
    df = spark.createDataFrame(table).repartition(n_parts)
    got = fs.row_counts(df, qi=qi, group=group, sensitive=sens, weight=weight)
    assert_rowlevel_same(got, table, qi, group, sens, weight)
    assert got.equals(pushdown.row_counts(duckdb.from_arrow(table), qi=qi, group=group,
                                          sensitive=sens, weight=weight))


@pytest.mark.slow
def test_spark_parquet_folder_and_bad_weights(spark, tmp_path):
    import fastpriv.spark as fs

    rng = np.random.default_rng(3)
    n = 3000
    table = pa.table({"age": pa.array(rng.integers(20, 24, n), pa.int32()),
                      "sex": rng.choice(["F", "M"], n),
                      "gid": pa.array(rng.integers(0, 50, n), pa.int64()),
                      "disease": rng.choice(["flu", "hiv", "cold"], n, p=[.6, .1, .3]),
                      "n": pa.array(rng.integers(1, 3, n), pa.int32())})
    folder = str(tmp_path / "flat")
    _write_parts(table, folder, 3)
    kw = dict(qi=["age", "sex"], group="gid", sensitive="disease")
    for weight in (None, "n"):
        got = fs.row_counts(spark.read.parquet(folder), weight=weight, **kw)
        assert got.equals(pushdown.row_counts(folder, weight=weight, **kw))
        assert_rowlevel_same(got, pq.read_table(folder), kw["qi"], "gid", "disease", weight,
                             nulls_policies=("error",))
    bad = spark.createDataFrame(pa.table({"q": [1, 2], "g": [1, 1], "s": ["a", "b"],
                                          "w": [1, -1]}))
    with pytest.raises(InputError, match="negative"):
        fs.row_counts(bad, qi="q", group="g", sensitive="s", weight="w")
    with pytest.raises(InputError, match="also a qi column"):
        fs.row_counts(bad, qi="q", group="g", sensitive="q")
    with pytest.raises(InputTypeError, match="pyspark.sql.DataFrame"):
        fs.row_counts(table, qi="age", group="gid", sensitive="disease")
