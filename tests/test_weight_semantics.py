"""One meaning of ``weight=``: the number of identical rows a row stands for, everywhere.

A table read with ``weight="n"`` must give exactly what its expansion (each row repeated
``n`` times) gives: the re-identification risk measures (:mod:`fastpriv.risk`) and the
anonymizers (Mondrian, the lattice search, ``fastpriv anonymize --weight``). Sampling
weights have their own name, ``sampling_weight=``.
"""

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv import InputError, risk

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def weighted_tables(draw, max_rows=25, zero_ok=True, nulls=False):
    """A partly aggregated table (QI a: int, b: str, c: int; s; weight n >= 0).

    ``nulls``: nulls in ``a`` (True), none (False), or either (None).
    """
    if nulls is None:
        nulls = draw(st.booleans())
    n_rows = draw(st.integers(1, max_rows))
    card = [draw(st.integers(1, 4)) for _ in range(3)]
    cols = {c: [draw(st.integers(0, k - 1)) for _ in range(n_rows)]
            for c, k in zip("abc", card, strict=True)}
    if nulls:
        cols["a"] = [None if draw(st.integers(0, 5)) == 0 else x for x in cols["a"]]
    lo = 0 if zero_ok else 1
    n = [draw(st.integers(lo, 4)) for _ in range(n_rows)]
    if not any(n):
        n[0] = 1
    s = [draw(st.integers(0, 2)) for _ in range(n_rows)]
    return pa.table({"a": pa.array(cols["a"], pa.int64()),
                     "b": [f"v{x}" for x in cols["b"]],
                     "c": pa.array(cols["c"], pa.int32()),
                     "s": [f"s{x}" for x in s],
                     "n": pa.array(n, pa.int64())})


def expand(t, weight="n"):
    """Each row repeated ``weight`` times (the table the weights describe)."""
    w = t.column(weight).to_numpy()
    return t.take(pa.array(np.repeat(np.arange(t.num_rows), w))).drop_columns([weight])


QIS = [["a"], ["b", "c"], ["a", "b", "c"], ["c", "a"]]


# ------------------------------------------------------------------------------ risk
@FAST
@given(weighted_tables(), st.sampled_from(QIS), st.sampled_from([None, "size", "table"]),
       st.floats(0.05, 1.0))
def test_risk_audit_of_weighted_table_equals_expanded(t, qi, pop, thr):
    big = expand(t)
    population = None
    if pop == "size":
        population = 7 * big.num_rows + 3
    elif pop == "table":
        population = pa.concat_tables([big.select(qi), big.select(qi)])
    a = risk.audit(t, qi=qi, weight="n", population=population, threshold=thr).to_dict()
    b = risk.audit(big, qi=qi, population=population, threshold=thr).to_dict()
    assert a == b
    assert a["params"]["n_records"] == int(t.column("n").to_numpy().sum())


@FAST
@given(weighted_tables(nulls=True), st.sampled_from(QIS), st.sampled_from(["drop", "value"]))
def test_risk_audit_weighted_with_nulls_equals_expanded(t, qi, nulls):
    big = expand(t)
    try:
        b = risk.audit(big, qi=qi, nulls=nulls).to_dict()
    except InputError:   # every row dropped: both refuse
        with pytest.raises(InputError):
            risk.audit(t, qi=qi, weight="n", nulls=nulls)
        return
    assert risk.audit(t, qi=qi, weight="n", nulls=nulls).to_dict() == b


@FAST
@given(weighted_tables(), st.sampled_from(QIS[1:]), st.integers(1, 3))
def test_risk_combinations_of_weighted_table_equals_expanded(t, qi, m):
    m = min(m, len(qi))
    a = risk.combinations(t, qi=qi, max_set_size=m, weight="n").to_dict()
    b = risk.combinations(expand(t), qi=qi, max_set_size=m).to_dict()
    assert a == b


@FAST
@given(weighted_tables(zero_ok=False), st.sampled_from(QIS), st.data())
def test_weight_and_sampling_weight_together_equal_expanded(t, qi, data):
    # integer-valued sampling weights: the sums are exact either way
    sw = [float(data.draw(st.integers(1, 30))) for _ in range(t.num_rows)]
    t = t.append_column("sw", pa.array(sw))
    a = risk.audit(t, qi=qi, weight="n", sampling_weight="sw").to_dict()
    b = risk.audit(expand(t), qi=qi, sampling_weight="sw").to_dict()
    assert a == b
    assert a["individual_max"] is not None and a["params"]["sampling_weight"] == "sw"


@FAST
@given(weighted_tables(), st.sampled_from(QIS), st.data())
def test_weighted_counts_merge_and_batches_equal_whole(t, qi, data):
    whole = risk.class_counts(t, qi=qi, weight="n")
    assert whole.to_table().equals(risk.class_counts(expand(t), qi=qi).to_table())
    if t.num_rows > 1:
        cut = data.draw(st.integers(1, t.num_rows - 1))
        parts = [t.slice(0, cut), t.slice(cut)]
        parts = [p for p in parts if p.column("n").to_numpy().any()]
        merged = risk.class_counts(parts[0], qi=qi, weight="n").merge(
            *[risk.class_counts(p, qi=qi, weight="n") for p in parts[1:]])
        assert merged.to_table().equals(whole.to_table())
    batched = risk.ClassCounts.from_batches(t, qi=qi, weight="n", batch_size=3)
    assert batched.to_table().equals(whole.to_table())


def test_the_issue_numbers_agree():
    """The issue's case: a GROUP BY of a table audited with weight= gives the table's risks."""
    rng = np.random.default_rng(7)
    n = 20_000
    big = pa.table({"age": rng.integers(18, 90, n), "sex": rng.choice(["F", "M"], n),
                    "zip3": rng.integers(100, 160, n)})
    agg = big.group_by(["age", "sex", "zip3"]).aggregate([([], "count_all")])
    agg = agg.rename_columns(["age", "sex", "zip3", "n"])
    qi = ["age", "sex", "zip3"]
    a = risk.audit(agg, qi=qi, weight="n", population=10 * n)
    b = risk.audit(big, qi=qi, population=10 * n)
    assert a.to_dict() == b.to_dict()
    assert a.measures["expected_reidentifications"] == b.measures["expected_reidentifications"]
    assert a.params["n_records"] == n and a.value == b.value


def test_weighted_release_audits_like_the_expanded_table():
    t = pa.table({"a": [1, 1, 2, 3], "b": ["x", "y", "y", "y"], "s": ["p", "q", "p", "q"],
                  "n": [2, 3, 1, 4]})
    rel = fp.Release.from_table(t, qi=["a", "b"], sensitive="s", weight="n")
    assert risk.audit(rel).to_dict() == risk.audit(expand(t), qi=["a", "b"]).to_dict()


@pytest.mark.parametrize("col,match", [
    ("f", "sampling_weight="),        # floats are sampling weights, never multiplicities
    ("neg", "negative"),
    ("nul", "null"),
    ("txt", "integers"),
])
def test_bad_multiplicities_are_refused(col, match):
    t = pa.table({"a": [1, 2, 2], "f": [1.5, 2.0, 1.0], "neg": [1, -2, 3],
                  "nul": pa.array([1, None, 2], pa.int64()), "txt": ["1", "2", "3"]})
    with pytest.raises(InputError, match=match):
        risk.audit(t, qi=["a"], weight=col)
    with pytest.raises(InputError, match="weight"):
        risk.combinations(t, qi=["a"], weight=col)


def test_weights_of_zero_stand_for_nobody():
    t = pa.table({"a": [1, 2, 3], "n": [2, 0, 1]})
    cc = risk.class_counts(t, qi=["a"], weight="n")
    assert cc.keys.column("a").to_pylist() == [1, 3] and cc.sizes.tolist() == [2, 1]
    with pytest.raises(InputError, match="no rows"):
        risk.audit(pa.table({"a": [1], "n": [0]}), qi=["a"], weight="n")


def test_weight_on_a_release_or_counts_is_refused():
    t = pa.table({"a": [1, 2], "s": ["x", "y"], "n": [1, 2]})
    rel = fp.Release.from_table(t, qi=["a"], sensitive="s")
    with pytest.raises(InputError, match="weight"):
        risk.audit(rel, weight="n")
    with pytest.raises(InputError, match="sampling_weight"):
        risk.audit(rel, sampling_weight="n")
    cc = risk.class_counts(t, qi=["a"])
    with pytest.raises(InputError, match="weight"):
        risk.audit(cc, weight="n")


def test_deprecated_names_warn_and_work():
    t = pa.table({"a": [1, 1, 2], "w": [2.0, 3.0, 4.0]})
    cc = risk.class_counts(t, qi=["a"], sampling_weight="w")
    with pytest.warns(DeprecationWarning, match="sampling_weight_sums"):
        old = cc.weight_sums
    assert old.tolist() == cc.sampling_weight_sums.tolist() == [5.0, 4.0]
    agg = pa.table({"a": [1, 2], "count": [2, 1], "ws": [5.0, 4.0]})
    with pytest.warns(DeprecationWarning, match="sampling_weight_sum"):
        c2 = risk.ClassCounts.from_counts(agg, qi=["a"], weight_sum="ws")
    assert c2.to_table().equals(cc.to_table())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        risk.ClassCounts.from_counts(agg, qi=["a"], sampling_weight_sum="ws")


# --------------------------------------------------------- release built with nulls="drop"
def test_release_that_dropped_null_sensitive_rows_is_refused():
    t = pa.table({"a": [1, 1, 2, 2, 3], "s": ["x", None, "y", "y", None]})
    rel = fp.Release.from_table(t, qi=["a"], sensitive="s", nulls="drop")
    assert rel.n_rows == 3     # the release itself drops the null sensitive values
    with pytest.raises(InputError, match="Pass the table"):
        risk.audit(rel)
    with pytest.raises(InputError, match="sensitive column 's'"):
        risk.combinations(rel)
    # the table counts every record by its QI: class 3 exists, class 1 has 2 records
    res = risk.audit(t, qi=["a"], nulls="drop")
    assert res.params["n_records"] == 5 and res.witness.size == 1
    cc = risk.class_counts(t, qi=["a"], nulls="drop")
    assert cc.sizes.tolist() == [2, 2, 1]


def test_release_that_dropped_null_qi_rows_is_refused_too():
    """A Release keeps no record of which column's null dropped a row: refused alike."""
    t = pa.table({"a": [1, None, 2, 2], "s": ["x", "y", "y", "x"]})
    rel = fp.Release.from_table(t, qi=["a"], sensitive="s", nulls="drop")
    with pytest.raises(InputError, match="nulls='drop'"):
        risk.audit(rel)
    assert risk.audit(t, qi=["a"], nulls="drop").params["n_records"] == 3


def test_release_without_dropped_rows_audits_like_the_table():
    t = pa.table({"a": [1, 1, 2, 2, 3], "s": ["x", None, "y", "y", None]})
    rel = fp.Release.from_table(t, qi=["a"], sensitive="s", nulls="value")
    assert risk.audit(rel).to_dict() == risk.audit(t, qi=["a"]).to_dict()
    rel = fp.Release.from_table(t.slice(2, 2), qi=["a"], sensitive="s", nulls="drop")
    assert risk.audit(rel).to_dict() == risk.audit(t.slice(2, 2), qi=["a"]).to_dict()


# ---------------------------------------------------------------------- path ingest
@pytest.mark.parametrize("nulls", ["drop", "value"])
def test_class_counts_of_a_path_equal_the_table(tmp_path, nulls):
    """A path is counted by the Release ingest; the classes equal the in-memory ones."""
    rng = np.random.default_rng(3)
    n = 30_000
    a = rng.integers(0, 40, n).astype(float)
    a[rng.random(n) < 0.02] = np.nan                 # NaN is a null
    t = pa.table({"a": a, "b": rng.choice(["x", "y", "zz", "w"], n),
                  "c": pa.array(rng.integers(0, 7, n)).cast(pa.int8()),
                  "d": pa.array(np.where(rng.random(n) < 0.01, None,
                                         rng.integers(0, 1000, n)).tolist(), pa.int64())})
    path = tmp_path / "t.parquet"
    pq.write_table(t, path, row_group_size=4000)
    for qi in (["a", "b"], ["b", "c", "d", "a"], ["d", "c"], ["c"]):
        got = risk.class_counts(str(path), qi=qi, nulls=nulls)
        want = risk.class_counts(t, qi=qi, nulls=nulls)
        assert got.to_table().equals(want.to_table()), qi
        assert risk.audit(str(path), qi=qi, nulls=nulls).to_dict() == \
            risk.audit(t, qi=qi, nulls=nulls).to_dict()
    with pytest.raises(InputError, match="'d' has"):
        risk.class_counts(str(path), qi=["b", "d"])


# ------------------------------------------------------------------------ anonymizers
def _published_people(tab, count="n"):
    """A release table expanded to one row per person, without its group ids."""
    if count in tab.column_names:
        tab = expand(tab, count)
    return tab.drop_columns(["group_id"])


def _same_partition(a, b):
    """Two releases of the same people: the same groups (as multisets of rows)."""
    ga = sorted(tuple(sorted(map(str, g))) for g in _groups(a))
    gb = sorted(tuple(sorted(map(str, g))) for g in _groups(b))
    return ga == gb


def _groups(tab):
    rows = tab.drop_columns(["group_id"]).to_pylist()
    out: dict = {}
    for gid, r in zip(tab.column("group_id").to_pylist(), rows, strict=True):
        out.setdefault(gid, []).append(tuple(sorted(r.items())))
    return out.values()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(weighted_tables(max_rows=30, nulls=None), st.integers(1, 6), st.booleans(),
       st.sampled_from(["error", "drop"]))
def test_mondrian_of_weighted_table_equals_expanded(t, k, with_l, nulls):
    """Same cells, same weights: the same partition, group sizes in people, same release."""
    qi = ["a", "b", "c"]
    kw = {"min_size": k, **({"l": 2} if with_l else {})}
    big = expand(t)
    try:
        want = fp.anonymize.mondrian(big, qi=qi, sensitive="s", nulls=nulls, **kw)
    except InputError:
        with pytest.raises(InputError):
            fp.anonymize.mondrian(t, qi=qi, sensitive="s", weight="n", nulls=nulls, **kw)
        return
    got = fp.anonymize.mondrian(t, qi=qi, sensitive="s", weight="n", nulls=nulls, **kw)
    assert got.release.equals(want.release)
    sizes = np.asarray(got.release.sizes)
    assert sizes.min() >= k and sizes.sum() == got.n_people - got.n_suppressed_people
    assert got.n_people == big.num_rows and got.params["weight"] == "n"
    # the written release stands for the same people, in the same groups
    ta, tb = got.table(t), want.table(big)
    assert "n" in ta.column_names and ta.column("n").to_numpy().min() >= 1
    assert _published_people(ta).equals(_published_people(tb))
    assert _same_partition(expand(ta, "n"), tb)
    # one row per distinct published row of a group: the input's split is not published
    assert ta.drop_columns(["n"]).group_by(ta.drop_columns(["n"]).column_names) \
        .aggregate([]).num_rows == ta.num_rows


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(weighted_tables(max_rows=30), st.integers(1, 8), st.sampled_from([0.0, 0.2]),
       st.sampled_from(["discernibility", "loss", "entropy"]))
def test_lattice_search_of_weighted_table_equals_expanded(t, k, sup, utility):
    qi = ["a", "b", "c"]
    hier = {"a": [2, "*"], "b": "suppress", "c": [2, 4, "*"]}
    big = expand(t)
    kw = dict(qi=qi, sensitive="s", hierarchies=hier, min_size=k, suppression=sup,
              utility=utility)
    want = fp.anonymize.lattice_search(big, **kw)
    got = fp.anonymize.lattice_search(t, weight="n", **kw)
    assert got.minimal == want.minimal and got.best == want.best
    if want.anonymized is None:
        assert got.anonymized is None
        return
    assert got.optimum == want.optimum
    assert got.release.equals(want.release)
    assert got.anonymized.n_suppressed_people == want.anonymized.n_suppressed
    assert _published_people(got.anonymized.table(t)).equals(
        _published_people(want.anonymized.table(big)))


def test_mondrian_python_path_counts_people():
    """(c,k)-safety against implications runs the split rule from Python: weighted too."""
    rng = np.random.default_rng(0)
    n = 2000
    big = pa.table({"age": rng.integers(18, 80, n), "sex": rng.choice(["F", "M"], n),
                    "d": rng.choice(["flu", "hiv", "cold", "none", "x"], n)})
    agg = big.group_by(["age", "sex", "d"]).aggregate([([], "count_all")])
    agg = agg.rename_columns(["age", "sex", "d", "n"])
    got = fp.anonymize.mondrian(agg, qi=["age", "sex"], sensitive="d", c=0.7, k=2, weight="n")
    want = fp.anonymize.mondrian(big, qi=["age", "sex"], sensitive="d", c=0.7, k=2)
    assert got.path == want.path == "python"
    assert got.release.n_groups > 1 and got.release.equals(want.release)


def test_weighted_release_numbers_groups_from_people_not_rows():
    """Two inputs that split the same people differently give the same release file."""
    t1 = pa.table({"a": [1, 1, 2, 2], "s": ["x", "x", "y", "x"], "n": [2, 3, 4, 1]})
    t2 = pa.table({"a": [2, 1, 2, 1, 2], "s": ["y", "x", "y", "x", "x"], "n": [1, 5, 3, 0, 1]})
    r1 = fp.anonymize.mondrian(t1, qi=["a"], sensitive="s", min_size=2, weight="n")
    r2 = fp.anonymize.mondrian(t2, qi=["a"], sensitive="s", min_size=2, weight="n")
    a, b = r1.table(t1), r2.table(t2)
    assert a.equals(b)
    assert a.column("n").to_pylist() == [5, 1, 4]
    assert r2.group_ids.tolist()[3] == -1     # weight 0: nobody
    c = r1.table(t1, count_column="people")
    assert "people" in c.column_names and "n" not in c.column_names
    with pytest.raises(InputError, match="keep"):
        r1.table(t1, keep=["n"])
    assert len(r1.published_rows(t1)) == a.num_rows


def test_skyline_weight_and_deprecated_count():
    adult = fp.datasets.load_adult()
    qi = ["age", "sex", "race"]
    trip = adult.group_by(qi + ["occupation"]).aggregate([([], "count_all")])
    trip = trip.rename_columns(qi + ["occupation", "n"])
    pts = [(2, 1, 1, 0.8)]
    rows = fp.anonymize.skyline_anonymize(adult, qi=qi, sensitive="occupation", skylines=pts)
    agg = fp.anonymize.skyline_anonymize(trip, qi=qi, sensitive="occupation", skylines=pts,
                                         weight="n")
    assert agg.release.equals(rows.release)
    assert agg.params["weight"] == "n" and agg.n_people == adult.num_rows
    with pytest.warns(DeprecationWarning, match="weight="):
        old = fp.anonymize.skyline_anonymize(trip, qi=qi, sensitive="occupation",
                                             skylines=pts, count="n")
    assert old.release.equals(rows.release)


def test_weights_are_checked_by_the_anonymizers():
    t = pa.table({"a": [1, 2, 3], "s": ["x", "y", "x"], "f": [1.0, 2.0, 3.0],
                  "neg": [1, -1, 2]})
    for col, match in (("f", "integers"), ("neg", "negative"), ("zz", "weight"),
                       ("a", "weight")):
        with pytest.raises(InputError, match=match):
            fp.anonymize.mondrian(t, qi=["a"], sensitive="s", min_size=1, weight=col)
        with pytest.raises(InputError, match=match):
            fp.anonymize.lattice_search(t, qi=["a"], sensitive="s", min_size=1, weight=col,
                                        hierarchies={"a": [2, "*"]})


def test_cli_anonymize_weight_publishes_people(tmp_path):
    """fastpriv anonymize agg.parquet --weight n: k counts people, with --nulls drop too."""
    from fastpriv.cli import main

    rng = np.random.default_rng(5)
    n = 4000
    age = rng.integers(18, 80, n).astype(float)
    age[rng.random(n) < 0.02] = np.nan
    big = pa.table({"age": age, "sex": rng.choice(["F", "M"], n),
                    "zip": rng.integers(0, 20, n), "d": rng.choice(["a", "b", "c"], n)})
    agg = big.group_by(["age", "sex", "zip", "d"]).aggregate([([], "count_all")])
    agg = agg.rename_columns(["age", "sex", "zip", "d", "n"])
    pq.write_table(agg, tmp_path / "agg.parquet")
    pq.write_table(big, tmp_path / "big.parquet")
    common = ["--method", "mondrian", "--qi", "age", "sex", "zip", "--sensitive", "d",
              "--min-size", "5", "--nulls", "drop", "--overwrite"]
    assert main(["anonymize", str(tmp_path / "agg.parquet"), *common, "--weight", "n",
                 "-o", str(tmp_path / "ra.parquet"), "--json", str(tmp_path / "ra.json")]) == 0
    assert main(["anonymize", str(tmp_path / "big.parquet"), *common,
                 "-o", str(tmp_path / "rb.parquet")]) == 0
    ra, rb = pq.read_table(tmp_path / "ra.parquet"), pq.read_table(tmp_path / "rb.parquet")
    assert _published_people(ra).equals(_published_people(rb))
    # every group holds at least 5 people, counted with the count column
    sizes = ra.group_by("group_id").aggregate([("n", "sum")]).column("n_sum").to_numpy()
    assert sizes.min() >= 5 and sizes.sum() == rb.num_rows
    import json

    js = json.loads((tmp_path / "ra.json").read_text())
    assert js["n_people"] == n and js["min_group_size"] >= 5
    assert js["n_people"] - js["n_suppressed_people"] == rb.num_rows
    # the release read back with its count column audits like the expanded one
    assert risk.audit(ra, qi=["age", "sex", "zip"], weight="n").to_dict() == \
        risk.audit(rb, qi=["age", "sex", "zip"]).to_dict()
    # a lattice run with --weight; a method that cannot read weights refuses
    lat = ["--qi", "zip", "--sensitive", "d", "--min-size", "5", "--nulls", "drop",
           "--interval", "zip=5,10,*", "--overwrite"]
    assert main(["anonymize", str(tmp_path / "agg.parquet"), *lat, "--weight", "n",
                 "-o", str(tmp_path / "rl.parquet")]) == 0
    assert main(["anonymize", str(tmp_path / "big.parquet"), *lat,
                 "-o", str(tmp_path / "rlb.parquet")]) == 0
    assert _published_people(pq.read_table(tmp_path / "rl.parquet")).equals(
        _published_people(pq.read_table(tmp_path / "rlb.parquet")))
    # a method that anonymizes rows publishes one row per person
    ana = ["--method", "anatomy", "--qi", "age", "--sensitive", "d", "--l", "2", "--nulls",
           "drop"]
    assert main(["anonymize", str(tmp_path / "agg.parquet"), *ana, "--weight", "n",
                 "-o", str(tmp_path / "x.parquet")]) == 0
    assert main(["anonymize", str(tmp_path / "big.parquet"), *ana,
                 "-o", str(tmp_path / "xb.parquet")]) == 0
    x, xb = (pq.read_table(tmp_path / f"{f}.qi.parquet") for f in ("x", "xb"))
    assert "n" not in x.column_names and x.num_rows == xb.num_rows == \
        big.filter(pc.is_valid(big["age"])).num_rows
    def people_per_value(name):
        st = pq.read_table(tmp_path / f"{name}.sensitive.parquet")
        return st.group_by("d").aggregate([("count", "sum")]).sort_by("d")
    assert people_per_value("x").equals(people_per_value("xb"))


@pytest.mark.parametrize("command", ["attack", "robustness"])
def test_cli_row_level_models_read_weight(tmp_path, command, capsys, monkeypatch):
    """fastpriv attack/robustness agg.parquet --weight n: the numbers of the expanded table,
    and a remedy that runs as printed and publishes the people; --weight with --bucketize
    is refused (Anatomy buckets rows)."""
    import json
    import shlex

    from fastpriv.cli import main

    rng = np.random.default_rng(11)
    n = 3000
    big = pa.table({"g": rng.integers(0, 300, n), "a": rng.integers(0, 4, n),
                    "b": rng.choice(["u", "v"], n), "s": rng.choice(["x", "y", "z"], n,
                                                                  p=[.6, .3, .1])})
    agg = big.group_by(["g", "a", "b", "s"]).aggregate([([], "count_all")])
    pq.write_table(agg, tmp_path / "agg.parquet")
    pq.write_table(big, tmp_path / "big.parquet")
    argv = [command, "--qi", "a", "b", "--sensitive", "s", "--group", "g", "--r", "2",
            "--overwrite"]
    rc_w = main([argv[0], str(tmp_path / "agg.parquet"), *argv[1:], "--weight", "count_all",
                 "--json", str(tmp_path / "w.json")])
    rc_e = main([argv[0], str(tmp_path / "big.parquet"), *argv[1:],
                 "--json", str(tmp_path / "e.json")])
    w, e = (json.loads((tmp_path / f).read_text()) for f in ("w.json", "e.json"))
    assert rc_w == rc_e == 1 and w["n_rows"] == e["n_rows"] == n
    assert w["n_problematic"] == e["n_problematic"] and w["value"] == e["value"]
    remedies = [line.split("To fix: ", 1)[1] for line in capsys.readouterr().out.splitlines()
                if "To fix: " in line]
    published = {}
    for remedy in remedies:                          # agg.parquet --weight, then big.parquet
        where = tmp_path / f"fix{len(published)}"
        where.mkdir()
        monkeypatch.chdir(where)
        assert main(shlex.split(remedy)[1:]) == 0, remedy
        published[remedy] = pq.read_table(where / "release.qi.parquet").num_rows
    assert len(published) == 2 and "--weight count_all" in remedies[0]
    assert published[remedies[0]] == published[remedies[1]]    # people, one row each
    assert main([argv[0], str(tmp_path / "big.parquet"), "--qi", "a", "b", "--sensitive", "s",
                 "--bucketize", "anatomy:2", "--r", "2", "--weight", "s"]) == 2
