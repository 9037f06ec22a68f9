"""Release construction: every input shape, canonical form, streaming, and bad input."""

import os
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastpriv import CountAccumulator, InputError, Release
from tests.strategies import svpi_groups

# ----------------------------------------------------------------- from_groups


def test_from_groups_lists_and_dicts_agree():
    a = Release.from_groups([["flu", "flu", "hiv"], ["flu", "cancer"]])
    b = Release.from_groups([{"flu": 2, "hiv": 1}, {"flu": 1, "cancer": 1}])
    assert a.equals(b)
    assert a.n_groups == 2 and a.n_rows == 5 and a.case == "svpi"
    assert a.values == ["cancer", "flu", "hiv"]
    assert a.profile(0) == [("flu", 2), ("hiv", 1)]
    assert a.profile(1) == [("cancer", 1), ("flu", 1)]  # tie: by label order
    assert a.sizes.tolist() == [3, 2]
    assert a.counts_of("flu").tolist() == [2, 1]


def test_profiles_sorted_by_count_descending():
    rel = Release.from_groups([["a", "b", "b", "c", "c", "c"], ["d"]])
    assert rel.profile(0) == [("c", 3), ("b", 2), ("a", 1)]
    assert rel.distinct.tolist() == [3, 1]


def test_mvpi_from_groups():
    rel = Release.from_groups([{"a": 2, "s": 1}, {"a": 1}], sizes=[3, 2], case="mvpi-set")
    assert rel.case == "mvpi-set" and rel.sizes.tolist() == [3, 2]
    assert rel.n_rows == 4 and rel.n_individuals == 5
    pairs = Release.from_groups([(3, ["a", "a", "s"]), (2, ["a"])])
    assert pairs.equals(rel)
    ms = Release.from_groups([{"a": 5}], sizes=[2], case="mvpi-multiset")
    assert ms.case == "mvpi-multiset" and ms.counts.tolist() == [5]


@pytest.mark.parametrize("groups, kwargs, exc, match", [
    ([], {}, ValueError, "groups is empty"),
    ([[]], {}, ValueError, "zero individuals"),
    ([["a"], []], {}, ValueError, "zero individuals"),
    ([{"a": -1}], {}, ValueError, "negative"),
    ([{"a": 1.5}], {}, TypeError, "integer"),
    ([["a", 1]], {}, TypeError, "one type"),
    ([["a", None]], {}, ValueError, "null"),
    ("abc", {}, TypeError, "list of groups"),
    ([["a", "b"]], {"sizes": [3], "case": "svpi"}, ValueError, "sizes says 3"),
    ([["a"]], {"sizes": [1, 2], "case": "mvpi-set"}, ValueError, "2 entries"),
    ([{"a": 3}], {"sizes": [2], "case": "mvpi-set"}, ValueError, "at most once"),
    ([{"a": 1}], {"sizes": [0], "case": "mvpi-set"}, ValueError, "must be >= 1"),
    ([{"a": 1}], {"case": "mvpi-set"}, ValueError, "needs sizes"),
    ([["a"]], {"case": "bogus"}, ValueError, "case must be one of"),
])
def test_from_groups_errors(groups, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Release.from_groups(groups, **kwargs)


# ----------------------------------------------------------------- from_table
DATA = {"gid": [2, 1, 1, 2, 2, 3], "age": ["30-39", "20-29", "20-29", "30-39", "30-39", "40+"],
        "sex": ["F", "M", "M", "F", "F", "M"], "disease": ["flu", "hiv", "flu", "flu", "cancer",
                                                           "flu"]}


@pytest.fixture
def table():
    return pa.table(DATA)


def _expected():
    return Release.from_groups([["hiv", "flu"], ["flu", "flu", "cancer"], ["flu"]])


def _same_counts(rel, ref):
    return (np.array_equal(rel.indptr, ref.indptr) and np.array_equal(rel.codes, ref.codes)
            and np.array_equal(rel.counts, ref.counts) and rel.values == ref.values)


def test_from_table_group_column(table):
    rel = Release.from_table(table, sensitive="disease", group="gid")
    assert _same_counts(rel, _expected())
    assert rel.group_labels == [1, 2, 3]
    assert rel.row_group.tolist() == [1, 0, 0, 1, 1, 2]
    assert rel.rows_of_group(1).tolist() == [0, 3, 4]
    assert rel.sensitive_name == "disease"


def test_from_table_qi_columns(table):
    rel = Release.from_table(table, sensitive="disease", qi=["age", "sex"])
    assert _same_counts(rel, _expected())
    assert rel.group_labels == [("20-29", "M"), ("30-39", "F"), ("40+", "M")]


def test_input_shapes_all_agree(table, tmp_path):
    import pandas as pd
    import polars as pl

    ref = Release.from_table(table, sensitive="disease", group="gid")
    pq.write_table(table, tmp_path / "t.parquet")
    pacsv.write_csv(table, tmp_path / "t.csv")
    os.mkdir(tmp_path / "dir")
    pq.write_table(table.slice(0, 3), tmp_path / "dir" / "a.parquet")
    pq.write_table(table.slice(3), tmp_path / "dir" / "b.parquet")
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=2))
    sliced = pa.concat_tables([pa.table({k: ["pad"] * 2 if isinstance(v[0], str) else [0, 0]
                                         for k, v in DATA.items()}), table]).slice(2)
    dict_enc = table.set_column(3, "disease", table.column("disease").dictionary_encode())
    shapes = {
        "pandas": pd.DataFrame(DATA),
        "polars": pl.DataFrame(DATA),
        "polars-lazy": pl.DataFrame(DATA).lazy(),
        "chunked": chunked,
        "sliced": sliced,
        "dictionary": dict_enc,
        "record_batch": table.to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(table.schema, table.to_batches(2)),
        "dataset": ds.dataset(tmp_path / "dir"),
        "parquet_file": str(tmp_path / "t.parquet"),
        "parquet_dir": tmp_path / "dir",
        "csv": str(tmp_path / "t.csv"),
        "dict": dict(DATA),
    }
    for name, src in shapes.items():
        rel = Release.from_table(src, sensitive="disease", group="gid")
        assert rel.equals(ref), name


def test_unknown_column_lists_available(table):
    with pytest.raises(ValueError, match=r"'diseas' not found; available: gid, age, sex, "
                                         r"disease"):
        Release.from_table(table, sensitive="diseas", group="gid")
    with pytest.raises(ValueError, match="qi: column 'zip' not found"):
        Release.from_table(table, sensitive="disease", qi=["age", "zip"])


def test_grouping_arguments(table):
    with pytest.raises(ValueError, match="exactly one of group"):
        Release.from_table(table, sensitive="disease")
    # group and qi together: groups from group, and the row view of the qi columns
    both = Release.from_table(table, sensitive="disease", group="gid", qi=["age"])
    assert both.equals(Release.from_table(table, sensitive="disease", group="gid"))
    assert both.rows.qi == ("age",) and both.rows.n_rows == table.num_rows
    with pytest.raises(ValueError, match="also a qi column"):
        Release.from_table(table, sensitive="disease", qi=["disease"])
    with pytest.raises(TypeError, match="sensitive must be a column name"):
        Release.from_table(table, sensitive=3, group="gid")


def test_empty_table_and_bad_types(table):
    with pytest.raises(ValueError, match="data is empty"):
        Release.from_table(table.slice(0, 0), sensitive="disease", group="gid")
    with pytest.raises(TypeError, match="expected a pyarrow Table"):
        Release.from_table(42, sensitive="disease", group="gid")
    with pytest.raises(ValueError, match="no such file"):
        Release.from_table("/nonexistent/x.parquet", sensitive="disease", group="gid")


def test_null_policies():
    t = pa.table({"g": [1, 1, None, 2], "s": ["a", None, "b", None]})
    with pytest.raises(ValueError, match=r"'g' has 1 null, 's' has 2 nulls"):
        Release.from_table(t, sensitive="s", group="g")
    dropped = Release.from_table(t, sensitive="s", group="g", nulls="drop")
    assert dropped.n_rows == 1 and dropped.profile(0) == [("a", 1)]
    kept = Release.from_table(t, sensitive="s", group="g", nulls="value")
    assert kept.n_rows == 4 and kept.values == ["a", "b", None]
    assert kept.group_labels == [1, 2, None]
    with pytest.raises(ValueError, match="no rows left"):
        Release.from_table(pa.table({"g": [None], "s": ["a"]}), sensitive="s", group="g",
                           nulls="drop")
    with pytest.raises(ValueError, match="nulls must be one of"):
        Release.from_table(t, sensitive="s", group="g", nulls="ignore")


def test_integer_and_float_keys_and_values():
    t = pa.table({"g": pa.array([10**12, -5, 10**12], pa.int64()), "s": [1.5, 2.5, 1.5]})
    rel = Release.from_table(t, sensitive="s", group="g")
    assert rel.group_labels == [-5, 10**12] and rel.values == [1.5, 2.5]
    assert rel.profile(1) == [(1.5, 2)]


# ----------------------------------------------------------------- MVPI tables
def test_mvpi_from_individual_column():
    t = pa.table({"g": [1, 1, 1, 2, 2], "person": ["p1", "p1", "p2", "p3", "p3"],
                  "s": ["a", "b", "a", "a", "c"]})
    rel = Release.from_table(t, sensitive="s", group="g", individual="person")
    assert rel.case == "mvpi-set" and rel.sizes.tolist() == [2, 1]
    assert rel.profile(0) == [("a", 2), ("b", 1)]
    t2 = pa.table({"g": [1, 1], "person": ["p1", "p1"], "s": ["a", "a"]})
    assert Release.from_table(t2, sensitive="s", group="g", individual="person").case == \
        "mvpi-multiset"
    with pytest.raises(ValueError, match="more than once"):
        Release.from_table(t2, sensitive="s", group="g", individual="person", case="mvpi-set")
    with pytest.raises(ValueError, match="more than one group"):
        Release.from_table(pa.table({"g": [1, 2], "person": ["p", "p"], "s": ["a", "b"]}),
                           sensitive="s", group="g", individual="person")
    with pytest.raises(ValueError, match="case='svpi' but"):
        Release.from_table(t, sensitive="s", group="g", individual="person", case="svpi")


def test_mvpi_from_list_column():
    t = pa.table({"g": [1, 1, 2], "s": [["a", "b"], ["a"], ["a", "c"]]})
    rel = Release.from_table(t, sensitive="s", group="g")
    assert rel.case == "mvpi-set" and rel.sizes.tolist() == [2, 1]
    assert rel.profile(0) == [("a", 2), ("b", 1)]
    assert rel.row_group.tolist() == [0, 0, 1]


def test_mvpi_case_requires_individuals(table):
    with pytest.raises(ValueError, match="needs individual="):
        Release.from_table(table, sensitive="disease", group="gid", case="mvpi-set")


# ----------------------------------------------------------------- from_counts
def test_from_counts_roundtrip(table):
    rel = Release.from_table(table, sensitive="disease", group="gid")
    back = Release.from_counts(rel.to_counts(), group="gid", sensitive="value", count="count")
    assert back.equals(rel)
    # duplicated (group, value) rows are summed; zero counts vanish
    c = pa.table({"g": [1, 1, 1, 2], "s": ["a", "a", "b", "a"], "n": [1, 2, 0, 4]})
    r = Release.from_counts(c, group="g", sensitive="s", count="n")
    assert r.profile(0) == [("a", 3)] and r.profile(1) == [("a", 4)]


def test_from_counts_mvpi_sizes():
    c = pa.table({"g": [1, 1, 2], "s": ["a", "b", "a"], "n": [2, 1, 1], "size": [3, 3, 2]})
    rel = Release.from_counts(c, group="g", sensitive="s", count="n", sizes="size")
    assert rel.case == "mvpi-set" and rel.sizes.tolist() == [3, 2]
    back = Release.from_counts(rel.to_counts(), group="g", sensitive="value", count="count",
                               sizes="size")
    assert back.equals(rel)
    by_map = Release.from_counts(c, group="g", sensitive="s", count="n", sizes={1: 3, 2: 2})
    assert by_map.equals(rel)
    bad = c.set_column(3, "size", pa.array([3, 4, 2]))
    with pytest.raises(ValueError, match="not constant"):
        Release.from_counts(bad, group="g", sensitive="s", count="n", sizes="size")


@pytest.mark.parametrize("counts, exc, match", [
    (pa.array([1, -2]), ValueError, "negative"),
    (pa.array([1.0, 2.0]), TypeError, "must hold integers"),
    (pa.array([1, None]), ValueError, "has nulls"),
    (pa.array([0, 0]), ValueError, "zero individuals"),
])
def test_from_counts_errors(counts, exc, match):
    c = pa.table({"g": [1, 1], "s": ["a", "b"], "n": counts})
    with pytest.raises(exc, match=match):
        Release.from_counts(c, group="g", sensitive="s", count="n")


# ----------------------------------------------------------------- properties
rows = st.lists(st.tuples(st.integers(0, 6), st.sampled_from("abcde")), min_size=1,
                max_size=60)


@given(rows, st.data())
def test_profile_matches_naive_counter(rs, data):
    t = pa.table({"g": [g for g, _ in rs], "s": [s for _, s in rs]})
    rel = Release.from_table(t, sensitive="s", group="g")
    groups = sorted({g for g, _ in rs})
    assert rel.group_labels == groups
    for i, g in enumerate(groups):
        c = Counter(s for gg, s in rs if gg == g)
        expect = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
        assert rel.profile(i) == expect
        assert rel.sizes[i] == sum(c.values())


@given(rows, st.lists(st.integers(1, 20), min_size=1, max_size=8), st.randoms())
def test_streaming_identical_for_any_batching(rs, cuts, rnd):
    t = pa.table({"g": [g for g, _ in rs], "s": [s for _, s in rs]})
    ref = Release.from_table(t, sensitive="s", group="g")
    # arbitrary batch boundaries
    batches, pos = [], 0
    for c in cuts:
        if pos >= t.num_rows:
            break
        batches.append(t.slice(pos, c).to_batches()[0] if t.slice(pos, c).num_rows else None)
        pos += c
    if pos < t.num_rows:
        batches.append(pa.Table.from_batches(t.slice(pos).to_batches()).combine_chunks()
                       .to_batches()[0])
    batches = [b for b in batches if b is not None]
    streamed = Release.from_batches(iter(batches), sensitive="s", group="g")
    assert streamed.equals(ref)
    # shuffled row order gives the same release
    perm = list(range(t.num_rows))
    rnd.shuffle(perm)
    assert Release.from_table(t.take(perm), sensitive="s", group="g").equals(ref)


@pytest.mark.slow
@given(rows, st.integers(1, 5))
def test_accumulators_merge_like_one(rs, parts):
    t = pa.table({"g": [g for g, _ in rs], "s": [s for _, s in rs]})
    ref = Release.from_table(t, sensitive="s", group="g")
    accs = []
    size = -(-t.num_rows // parts)
    for i in range(parts):
        piece = t.slice(i * size, size)
        acc = CountAccumulator(["g"], "s", compact_rows=3)
        if piece.num_rows:
            acc.add(piece)
        accs.append(acc)
    total = accs[0]
    for a in accs[1:]:
        total.merge(a)
    assert total.to_release().equals(ref)
    assert total.rows_seen == t.num_rows


@pytest.mark.slow
@given(svpi_groups(max_people=12, max_groups=4))
def test_counts_form_is_a_fixed_point(groups):
    rel = Release.from_groups(groups)
    back = Release.from_counts(rel.to_counts(), group="group", sensitive="value")
    assert back.equals(rel)


def test_stream_from_parquet_and_csv_paths(tmp_path, table):
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    pacsv.write_csv(table, tmp_path / "t.csv")
    ref = Release.from_table(table, sensitive="disease", qi=["age", "sex"])
    for p in (tmp_path / "t.parquet", str(tmp_path / "t.csv")):
        rel = Release.from_batches(p, sensitive="disease", qi=["age", "sex"], batch_size=2)
        assert rel.equals(ref)


def test_accumulator_errors(table):
    acc = CountAccumulator(["gid"], "disease")
    with pytest.raises(ValueError, match="no rows"):
        acc.to_table()
    with pytest.raises(ValueError, match="'gid' not found; available: nope"):
        acc.add(table.rename_columns(["nope", "age", "sex", "disease"]))
    with pytest.raises(ValueError, match="reserved"):
        CountAccumulator(["count"], "disease")
    with pytest.raises(ValueError, match="different columns"):
        acc.merge(CountAccumulator(["age"], "disease"))


def test_count_matrix_and_guard():
    rel = Release.from_groups([["a", "b", "b"], ["c"]])
    assert rel.count_matrix().tolist() == [[1, 2, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match="max_cells"):
        rel.count_matrix(max_cells=3)
    with pytest.raises(ValueError, match="not a sensitive value"):
        rel.code_of("zzz")


def test_rows_unknown_for_counts_release():
    rel = Release.from_groups([["a"]])
    with pytest.raises(ValueError, match="rows are unknown"):
        rel.rows_of_group(0)


def test_arrays_are_read_only():
    rel = Release.from_groups([["a", "b"]])
    for arr in (rel.sizes, rel.indptr, rel.codes, rel.counts):
        with pytest.raises(ValueError):
            arr[0] = 7


@given(rows, st.booleans())
def test_dense_and_sparse_counting_paths_agree(rs, weighted):
    from fastpriv._kernels.counting import DENSE_CELLS, count_pairs
    from fastpriv._validation import kernel_array

    g = kernel_array([r[0] for r in rs], np.int32)
    v = kernel_array(["abcde".index(r[1]) for r in rs], np.int32)
    w = kernel_array(np.arange(len(rs)) % 3 if weighted else np.empty(0), np.int64)
    dense = count_pairs(g, v, w, 7, 5, DENSE_CELLS)
    sparse = count_pairs(g, v, w, 7, 5, 0)
    for a, b in zip(dense, sparse, strict=True):
        assert np.array_equal(a, b)
    # and both agree with a direct count
    for gi in range(7):
        c = Counter()
        for i, (gg, s) in enumerate(rs):
            if gg == gi:
                c["abcde".index(s)] += (i % 3) if weighted else 1
        c = {k: n for k, n in c.items() if n}
        lo, hi = dense[0][gi], dense[0][gi + 1]
        assert dict(zip(dense[1][lo:hi].tolist(), dense[2][lo:hi].tolist(), strict=True)) == c
        assert list(dense[2][lo:hi]) == sorted(dense[2][lo:hi], reverse=True)


def test_equals_treats_nan_keys_and_values_as_one_label():
    nan = float("nan")
    t = pa.table({"g": [1.0, nan, 1.0, nan], "s": [0.5, nan, nan, 0.5]})
    a = Release.from_table(t, group="g", sensitive="s", nulls="value")
    b = Release.from_table(t, group="g", sensitive="s", nulls="value")
    assert a.n_groups == 2 and a.equals(b)
    other = Release.from_table(t.set_column(0, "g", pa.array([1.0, 2.0, 1.0, 2.0])),
                               group="g", sensitive="s", nulls="value")
    assert not a.equals(other)
    # NaN is a missing value: under nulls="value" a NaN key is the null key
    with_null = Release.from_table(t.set_column(0, "g", pa.array([1.0, None, 1.0, None])),
                                   group="g", sensitive="s", nulls="value")
    assert a.equals(with_null)
    assert a.group_labels == [1.0, None]


# ---------------------------------------------------------------------- unused columns
def test_columns_a_model_does_not_use_are_never_converted(tmp_path):
    """A DataFrame column Arrow cannot convert (mixed types) must not break an audit that
    does not read it; the answers equal those of the frame without it, and a missing
    column is still reported under its parameter's name."""
    import pandas as pd
    import polars as pl

    from fastpriv import classic, risk
    from fastpriv import robustness as rb

    rng = np.random.default_rng(7)
    n = 60
    clean = pd.DataFrame({"g": rng.integers(0, 6, n), "s": rng.choice(list("abc"), n),
                          "q": rng.integers(0, 3, n)})
    messy = clean.assign(junk=[1, "x", 2.5, None] * (n // 4))
    with pytest.raises(InputError, match="mixes value types"):
        Release.from_table(messy, group="junk", sensitive="s")
    assert classic.k_anonymity(messy, group="g", sensitive="s") == \
        classic.k_anonymity(clean, group="g", sensitive="s")
    r1 = rb.audit(messy, qi=["q"], group="g", sensitive="s", r=2, min_support=2)
    assert r1 == rb.audit(clean, qi=["q"], group="g", sensitive="s", r=2, min_support=2)
    np.testing.assert_array_equal(risk.ClassCounts.from_table(messy, qi=["q"]).sizes,
                                  risk.ClassCounts.from_table(clean, qi=["q"]).sizes)
    counts = clean.groupby(["g", "s"]).size().reset_index(name="count")
    assert Release.from_counts(counts.assign(junk=[{"a": 1}, "x"] * (len(counts) // 2)
                                             + ["y"] * (len(counts) % 2)),
                               group="g", sensitive="s", count="count").n_groups == \
        Release.from_counts(counts, group="g", sensitive="s", count="count").n_groups
    lazy = pl.from_pandas(clean).lazy().with_columns(pl.lit(1).alias("z"))
    assert classic.k_anonymity(lazy, group="g", sensitive="s") == \
        classic.k_anonymity(clean, group="g", sensitive="s")
    for kw, name in ((dict(group="gg", sensitive="s"), "group"),
                     (dict(group="g", sensitive="ss"), "sensitive")):
        with pytest.raises(InputError, match=rf"^{name}: column '\w+' not found; available: "
                                             r"g, s, q, junk"):
            classic.k_anonymity(messy, **kw)
    with pytest.raises(InputError, match=r"^qi: column 'qq' not found"):
        rb.audit(messy, qi=["qq"], group="g", sensitive="s", r=2)


@pytest.mark.parametrize("source", ["table", "parquet"])
def test_rows_of_group_are_input_rows_when_nulls_are_dropped(tmp_path, source):
    """Oracle: group membership of every input row without a null, read off the columns."""
    rng = np.random.default_rng(4)
    n = 3000
    g = rng.integers(0, 40, n)
    s = rng.choice(["a", "b", "c"], n)
    t = pa.table({"g": pa.array(g, mask=rng.random(n) < 0.05),
                  "s": pa.array(s, mask=rng.random(n) < 0.1)})
    data = t
    if source == "parquet":
        data = str(tmp_path / "t.parquet")
        pq.write_table(t, data, row_group_size=700)        # streamed, several batches
    rel = Release.from_table(data, group="g", sensitive="s", nulls="drop")
    ok = t.column("g").is_valid().to_numpy(zero_copy_only=False) & \
        t.column("s").is_valid().to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(rel.input_row, np.flatnonzero(ok))
    for k, label in enumerate(rel.group_labels):
        np.testing.assert_array_equal(rel.rows_of_group(k), np.flatnonzero(ok & (g == label)))
    full = Release.from_table(t.filter(pa.array(ok)), group="g", sensitive="s")
    assert full.input_row is None and full.equals(rel)
