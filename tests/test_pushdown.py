"""Warehouse push-down: the GROUP BY runs in DuckDB (a real embedded SQL engine, no mocks)
and the release built from its Arrow result equals the in-memory release, audits included."""

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, InputTypeError, Release, pushdown
from fastpriv.datasets import load_adult
from tests.engines import assert_same, audits, result_triples, tables, triples


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    yield c
    c.close()


def _pushdown(con, table, keys, sensitive, *, kind="qi", nulls="error", name="my table"):
    con.register(name, table)
    try:
        kw = {kind: keys}
        sql = pushdown.count_query(name, sensitive=sensitive, **kw)
        result = con.sql(sql).arrow().read_all()
    finally:
        con.unregister(name)
    return result, pushdown.release(result, sensitive=sensitive, nulls=nulls, **kw)


# ------------------------------------------------------------------ query text
def test_count_query_text_and_quoting():
    assert pushdown.count_query("t", group="gid", sensitive="disease") == (
        'SELECT "gid", "disease", COUNT(*) AS "count" FROM "t" GROUP BY "gid", "disease"')
    sql = pushdown.count_query(("db", 'we"ird'), qi=["a b", "zip"], sensitive="s",
                               count="n", where="age > 30")
    assert sql == ('SELECT "a b", "zip", "s", COUNT(*) AS "n" FROM "db"."we""ird" '
                   'WHERE age > 30 GROUP BY "a b", "zip", "s"')
    assert pushdown.count_query("t", group="g`", sensitive="s", quote="`") == (
        "SELECT `g```, `s`, COUNT(*) AS `count` FROM `t` GROUP BY `g```, `s`")


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"sensitive": "s"}, InputError, "exactly one of group= .* or qi="),
    ({"sensitive": "s", "group": "g", "qi": ["a"]}, InputError, "exactly one"),
    ({"sensitive": "s", "qi": []}, InputError, "qi: at least one column"),
    ({"sensitive": "s", "qi": ["a", 3]}, InputTypeError, "qi: column names must be strings"),
    ({"sensitive": "s", "qi": ["a", "a"]}, InputError, "named twice"),
    ({"sensitive": "g", "group": "g"}, InputError, "also a group column"),
    ({"sensitive": 1, "group": "g"}, InputTypeError, "sensitive must be a column name"),
    ({"sensitive": "s", "group": "count"}, InputError, "count='count' is also"),
    ({"sensitive": "s", "group": "g", "quote": "'"}, InputError, "quote must be one of"),
    ({"sensitive": "s", "group": "g", "where": " "}, InputError, "where must be"),
    ({"sensitive": "s", "group": ""}, InputError, "must not be empty"),
    ({"sensitive": "s", "group": "a\x00b"}, InputError, "NUL"),
])
def test_count_query_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pushdown.count_query("t", **kwargs)


def test_count_query_bad_table_name():
    with pytest.raises(InputError, match="table_name"):
        pushdown.count_query([], group="g", sensitive="s")
    with pytest.raises(InputTypeError, match="identifier must be a string"):
        pushdown.count_query(("db", 3), group="g", sensitive="s")


def test_quoting_is_injection_safe(con):
    """A hostile column name stays one identifier: the engine reads the named column."""
    evil = 'g" FROM t; DROP TABLE t; --'
    t = pa.table({evil: [1, 1, 2], "s": ["a", "b", "a"]})
    result, rel = _pushdown(con, t, evil, "s", kind="group", name="t")
    assert rel.equals(Release.from_table(t, group=evil, sensitive="s"))
    assert result.num_rows == 3


def test_release_bad_input():
    t = pa.table({"g": [1], "s": ["a"], "count": [1.5]})
    with pytest.raises(InputTypeError, match="must hold integers"):
        pushdown.release(t, group="g", sensitive="s")
    with pytest.raises(InputError, match="exactly one"):
        pushdown.release(t, sensitive="s")
    with pytest.raises(InputError, match="count"):
        pushdown.release(t, group="g", sensitive="s", count="n")


# ------------------------------------------------------------------ same answers
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(), kind=st.sampled_from(["qi", "group"]),
       nulls=st.sampled_from(["error", "drop", "value"]))
@example(data=(pa.table({"k0 float": [float("nan"), 1.5, float("nan")], "s": ["a", "a", "b"],
                         "unused": [0, 1, 2]}), ["k0 float"], "s"), kind="qi", nulls="error")
@example(data=(pa.table({"k0": [0], "s": pa.array([None], pa.string()), "unused": [0]}),
               ["k0"], "s"), kind="qi", nulls="drop")   # nothing left: both raise
def test_duckdb_pushdown_equals_in_memory(con, data, kind, nulls):
    table, keys, sens = data
    try:
        ref = Release.from_table(table, sensitive=sens, nulls=nulls, **{kind: keys})
    except InputError as exc:   # nulls="error" on nulls, or nothing left after dropping
        with pytest.raises(InputError) as got:
            _pushdown(con, table, keys, sens, kind=kind, nulls=nulls)
        assert str(got.value).split(" ")[0] == str(exc).split(" ")[0]
        return
    event("compared")
    result, rel = _pushdown(con, table, keys, sens, kind=kind, nulls=nulls)
    # oracle: the engine's triples are the plain-Python multiset of the rows
    assert result_triples(result, keys, sens, "count") == triples(table, keys, sens)
    assert result.num_rows == len(triples(table, keys, sens))
    assert_same(rel, ref)


@pytest.mark.parametrize("kw", [
    {"qi": ["age", "sex", "race"], "sensitive": "occupation"},
    {"qi": ["education", "marital_status"], "sensitive": "income"},
    {"group": "native_country", "sensitive": "occupation"},
])
def test_adult_pushdown_equals_in_memory(con, kw):
    adult = load_adult()
    ref = Release.from_table(adult, **kw)
    keys = kw.get("qi") or kw["group"]
    kind = "qi" if "qi" in kw else "group"
    result, rel = _pushdown(con, adult, keys, kw["sensitive"], kind=kind, name="adult")
    assert result.num_rows == ref.codes.size          # one row per (group, value) pair
    assert result.num_rows < adult.num_rows / 10
    ref_audits = audits(ref)
    assert all(v[0] == "ok" for v in ref_audits.values())
    assert_same(rel, ref, ref_audits)


def test_adult_pushdown_from_parquet_file(con, tmp_path):
    """The engine reads the file itself (nothing registered): DuckDB's read_parquet."""
    import pyarrow.parquet as pq

    adult = load_adult(["age", "sex", "occupation"])
    path = tmp_path / "adult.parquet"
    pq.write_table(adult, path)
    sql = pushdown.count_query("adult", qi=["age", "sex"], sensitive="occupation")
    con.execute(f"CREATE VIEW adult AS SELECT * FROM read_parquet('{path}')")
    rel = pushdown.release(con.sql(sql).arrow(), qi=["age", "sex"], sensitive="occupation")
    assert_same(rel, Release.from_table(str(path), qi=["age", "sex"], sensitive="occupation"))


def test_partial_counts_concatenate(con):
    """Per-partition queries (here: by a WHERE on the row id) concatenate: counts add."""
    adult = load_adult(["age", "sex", "occupation"])
    adult = adult.append_column("rid", pa.array(range(adult.num_rows)))
    con.register("adult_rid", adult)
    parts = [con.sql(pushdown.count_query("adult_rid", qi=["age", "sex"],
                                          sensitive="occupation", where=w)).arrow().read_all()
             for w in ("rid % 3 = 0", "rid % 3 = 1", "rid % 3 = 2")]
    con.unregister("adult_rid")
    rel = pushdown.release(pa.concat_tables(parts), qi=["age", "sex"], sensitive="occupation")
    assert_same(rel, Release.from_table(adult, qi=["age", "sex"], sensitive="occupation"))


def test_pandas_and_polars_results(con):
    adult = load_adult(["education", "income"])
    con.register("a", adult)
    sql = pushdown.count_query("a", group="education", sensitive="income")
    ref = Release.from_table(adult, group="education", sensitive="income")
    assert_same(pushdown.release(con.sql(sql).df(), group="education", sensitive="income"), ref)
    assert_same(pushdown.release(con.sql(sql).pl(), group="education", sensitive="income"), ref)
    con.unregister("a")


def test_cli_audits_exported_triples_like_the_rows(tmp_path):
    """`fastpriv audit TRIPLES --weight count` gives the verdict and numbers of the rows."""
    import json

    import duckdb
    import pyarrow.parquet as pq

    import fastpriv as fp
    from fastpriv import pushdown
    from fastpriv.cli import main

    adult = fp.datasets.load_adult()  # noqa: F841 - read by DuckDB's replacement scan
    sql = pushdown.count_query("adult", qi=["age", "sex"], sensitive="occupation")
    res = duckdb.sql(sql).arrow()
    res = res.read_all() if hasattr(res, "read_all") else res    # DuckDB 2 returns a reader
    pq.write_table(res, tmp_path / "triples.parquet")
    out_t, out_r = tmp_path / "t.json", tmp_path / "r.json"
    rc_t = main(["audit", str(tmp_path / "triples.parquet"), "--qi", "age", "sex",
                 "--sensitive", "occupation", "--weight", "count", "--json", str(out_t)])
    rc_r = main(["audit", "adult", "--qi", "age", "sex", "--sensitive", "occupation",
                 "--json", str(out_r)])
    t, r = json.loads(out_t.read_text()), json.loads(out_r.read_text())
    assert rc_t == rc_r
    assert t["classic"]["models"] == r["classic"]["models"]
    def checks(d):       # the remedy names each input's own path; everything else is equal
        return [{k: v for k, v in c.items() if k != "remedy"} for c in d["verdict"]["checks"]]
    assert checks(t) == checks(r)


# ------------------------------------------------------------------ weight= (issue 49)
def _weighted_pushdown(con, table, keys, sensitive, weight, *, kind="qi", nulls="error",
                       name="weighted table", count="count"):
    con.register(name, table)
    try:
        kw = {kind: keys}
        sql = pushdown.count_query(name, sensitive=sensitive, weight=weight, count=count,
                                   **kw)
        result = con.sql(sql).arrow()
        result = result.read_all() if hasattr(result, "read_all") else result
    finally:
        con.unregister(name)
    return result, pushdown.release(result, sensitive=sensitive, weight=weight, nulls=nulls,
                                    count=count, **kw)


def _expand(table: pa.Table, weight: str) -> pa.Table:
    """One row per individual: row i repeated weight[i] times (what weight= means)."""
    import numpy as np

    w = table.column(weight).to_numpy()
    return table.drop_columns([weight]).take(pa.array(np.repeat(np.arange(len(w)), w)))


def test_count_query_weight_text():
    """weight= sums the multiplicity (SUM, not COUNT(*)) and adds its two checks."""
    assert pushdown.count_query("t", group="g", sensitive="s", weight="n") == (
        'SELECT "g", "s", SUM("n") AS "count", COUNT(*) - COUNT("n") AS "count_null_weights", '
        'MIN("n") AS "count_least_weight" FROM "t" GROUP BY "g", "s"')
    assert pushdown.count_query("t", qi=["a"], sensitive="s", weight="w`", count="k",
                                quote="`", where="x > 1") == (
        "SELECT `a`, `s`, SUM(`w```) AS `k`, COUNT(*) - COUNT(`w```) AS `k_null_weights`, "
        "MIN(`w```) AS `k_least_weight` FROM `t` WHERE x > 1 GROUP BY `a`, `s`")
    # a count table counted again: the weight may be the count column's name
    assert 'SUM("count") AS "count"' in pushdown.count_query("t", group="g", sensitive="s",
                                                            weight="count")
    assert pushdown.weight_check_columns("n") == ("n_null_weights", "n_least_weight")


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"group": "g", "weight": "g"}, InputError, "weight column 'g' is also a group"),
    ({"qi": ["a"], "weight": "s"}, InputError, "weight column 's' is also a qi"),
    ({"group": "g", "weight": 3}, InputTypeError, "weight must be a column name"),
    ({"group": "g", "weight": ""}, InputTypeError, "weight must be a column name"),
    ({"group": "count_null_weights", "weight": "w"}, InputError, "weight check column"),
])
def test_count_query_weight_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pushdown.count_query("t", sensitive="s", **kwargs)
    with pytest.raises(exc, match=match):
        pushdown.release(pa.table({"g": [1]}), sensitive="s", **kwargs)


@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(max_rows=20), kind=st.sampled_from(["qi", "group"]),
       nulls=st.sampled_from(["error", "drop", "value"]),
       weights=st.lists(st.integers(0, 3), min_size=20, max_size=20))
def test_weighted_duckdb_pushdown_equals_expanded_in_memory(con, data, kind, nulls, weights):
    """A weighted table counted in DuckDB gives the release, and every audit, of the
    expanded table in memory (and of Release.from_table(weight=))."""
    table, keys, sens = data
    table = table.append_column("w", pa.array(weights[:table.num_rows], pa.int64()))
    try:
        ref = Release.from_table(_expand(table, "w"), sensitive=sens, nulls=nulls,
                                 **{kind: keys})
    except InputError as exc:   # nulls="error" on nulls, or nobody left
        with pytest.raises(InputError) as got:
            _weighted_pushdown(con, table, keys, sens, "w", kind=kind, nulls=nulls)
        assert str(got.value).split(" ")[0] == str(exc).split(" ")[0]
        return
    event("compared")
    result, rel = _weighted_pushdown(con, table, keys, sens, "w", kind=kind, nulls=nulls)
    assert_same(rel, ref)
    assert_same(rel, Release.from_table(table, sensitive=sens, nulls=nulls, weight="w",
                                        **{kind: keys}))


def test_weighted_adult_pushdown_and_partial_counts(con):
    """Adult with a weight column; per-partition weighted queries concatenate (sums, null
    counts and least weights combine)."""
    import numpy as np

    adult = load_adult(["age", "sex", "occupation"])
    w = np.random.default_rng(49).integers(0, 4, adult.num_rows)
    adult = adult.append_column("n", pa.array(w)).append_column(
        "rid", pa.array(range(adult.num_rows)))
    kw = {"qi": ["age", "sex"], "sensitive": "occupation"}
    ref = Release.from_table(_expand(adult, "n"), **kw)
    ref_audits = audits(ref)
    _, rel = _weighted_pushdown(con, adult, kw["qi"], "occupation", "n", name="adult_w")
    assert_same(rel, ref, ref_audits)
    con.register("adult_w", adult)
    parts = []
    for i in range(3):
        p = con.sql(pushdown.count_query("adult_w", weight="n", where=f"rid % 3 = {i}",
                                         **kw)).arrow()
        parts.append(p.read_all() if hasattr(p, "read_all") else p)
    con.unregister("adult_w")
    assert_same(pushdown.release(pa.concat_tables(parts), weight="n", **kw), ref, ref_audits)


def test_weighted_pushdown_refuses_bad_weights(con):
    """What SUM alone would hide: a null weight (skipped), a negative one (netted out:
    3 + -1 = 2); and non-integer weights, sums past 2**63 - 1, unchecked results."""
    from decimal import Decimal

    base = {"g": [1, 1, 2], "s": ["a", "a", "b"]}
    cases = [
        (pa.array([3, None, 1], pa.int64()), InputError, "weight column 'w' has 1 nulls"),
        (pa.array([3, -1, 1], pa.int64()), InputError, "weight column 'w' has negative"),
        (pa.array([1.0, 2.0, 1.0]), InputTypeError, "'w' must hold integers.*double"),
        (pa.array([Decimal("1.50")] * 3, pa.decimal128(10, 2)), InputTypeError,
         "'w' must hold integers"),
        (pa.array([2**62, 2**62, 1], pa.int64()), InputError, "past 2\\*\\*63 - 1"),
    ]
    for w, exc, match in cases:
        t = pa.table({**base, "w": w})
        with pytest.raises(exc, match=match):
            _weighted_pushdown(con, t, "g", "s", "w", kind="group")
    t = pa.table({**base, "w": [2, 0, 0]})       # group 2 weighs 0: nobody, left out
    _, rel = _weighted_pushdown(con, t, "g", "s", "w", kind="group")
    assert rel.equals(Release.from_table(t, group="g", sensitive="s", weight="w"))
    assert rel.group_labels == [1] and rel.sizes.tolist() == [2]
    # a weighted result read without weight=: the checks would go unread
    con.register("t", t)
    result = con.sql(pushdown.count_query("t", group="g", sensitive="s", weight="w")).arrow()
    result = result.read_all() if hasattr(result, "read_all") else result
    con.unregister("t")
    with pytest.raises(InputError, match="pass the same weight="):
        pushdown.release(result, group="g", sensitive="s")
    with pytest.raises(InputError, match="count_null_weights"):
        pushdown.release(pa.table({"g": [1], "s": ["a"], "count": [2]}), group="g",
                         sensitive="s", weight="w")


def test_duckdb_reads_nan_keys_of_parquet_files_as_nulls(tmp_path):
    """pyarrow writes float statistics without a NaN count; DuckDB must still see the NaN.

    By default DuckDB assumes such a column holds no NaN and folds ``isnan(x)`` to false:
    the NaN class would stay apart from the null class, unlike in memory.
    """
    import pyarrow.parquet as pq

    from fastpriv import risk

    t = pa.table({"k": pa.array([1.5, float("nan"), float("nan"), -2.25]),
                  "s": ["a", "b", "a", "b"]})
    pq.write_table(t, tmp_path / "a.parquet")
    want = risk.class_counts(t, qi=["k"], nulls="value")
    got = pushdown.class_counts(str(tmp_path), qi=["k"], nulls="value")
    assert got.to_dict() == want.to_dict() and got.n_classes == 3
    hist = pushdown.class_histogram(str(tmp_path), qi=["k"], nulls="value")
    assert risk.audit(hist).to_dict() == risk.audit(t, qi=["k"], nulls="value").to_dict()
