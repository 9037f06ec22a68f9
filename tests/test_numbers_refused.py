"""Numbers exact or refused: counts past 2**63, NaN as a null, thresholds out of range,
non-tree hierarchies, wrongly typed probabilities and hostile CSV input get a one-line
InputError naming the parameter (or the right answer), never a silent wrong number."""

import math

import numpy as np
import pyarrow as pa
import pytest

import fastpriv as fp
from fastpriv import InputError, InputTypeError, Release

BIG = 2**62


def _weighted(ws, typ=pa.int64()):
    n = len(ws)
    return pa.table({"g": [1, 1, 2][:n], "s": ["a", "b", "a"][:n], "w": pa.array(ws, typ)})


# ---------------------------------------------------------------- 1. counts past 2**63
@pytest.mark.parametrize("call", [
    lambda t: Release.from_table(t, sensitive="s", group="g", weight="w"),
    lambda t: fp.classic.audit(t, sensitive="s", group="g", weight="w"),
    lambda t: Release.from_table(t.append_column("q", pa.array([0, 1, 0])), sensitive="s",
                                 group="g", qi=["q"], weight="w"),
    lambda t: Release.from_batches(t, sensitive="s", group="g", weight="w"),
])
def test_weights_summing_past_int64_are_refused(call):
    t = _weighted([BIG, BIG, 5])     # 2**63 + 5: would wrap to k = -2**63
    with pytest.raises(InputError, match=r"weight column 'w': the counts add up to "
                                         r"9223372036854775813, past 2\*\*63 - 1"):
        call(t)


def test_weights_summing_past_int64_across_batches_are_refused():
    acc = fp.counts.CountAccumulator("g", "s", weight="w")
    acc.add(_weighted([BIG, 5]))           # each batch alone fits
    with pytest.raises(InputError, match="weight column 'w': the counts add up to"):
        acc.add(_weighted([BIG, 1]))


def test_uint64_and_negative_weights_are_refused():
    with pytest.raises(InputError, match=r"weight column 'w' has weights over 2\*\*63 - 1"):
        Release.from_table(_weighted([2**63, 1], pa.uint64()), sensitive="s", group="g",
                           weight="w")
    with pytest.raises(InputError, match="weight column 'w' has negative weights"):
        Release.from_table(_weighted([-1, 1]), sensitive="s", group="g", weight="w")


def test_counts_past_int64_are_refused_in_every_constructor():
    with pytest.raises(InputError, match="count column 'n': the counts add up to"):
        Release.from_counts(pa.table({"g": [1, 1], "s": ["a", "b"], "n": [BIG, BIG]}),
                            group="g", sensitive="s", count="n")
    with pytest.raises(InputError, match=r"count column 'n' has counts over 2\*\*63 - 1"):
        Release.from_counts(pa.table({"g": [1, 1], "s": ["a", "b"],
                                      "n": pa.array([2**63, 1], pa.uint64())}),
                            group="g", sensitive="s", count="n")
    with pytest.raises(InputError, match="groups: the counts add up to"):
        Release.from_groups([{"a": BIG, "b": BIG}])
    with pytest.raises(InputError, match="groups: the counts add up to 18446744073709551616"):
        Release.from_groups([{"a": 2**64}])
    one = Release.from_groups([{"a": BIG}])
    with pytest.raises(InputError, match="merge: the counts add up to"):
        one.merge(one)
    with pytest.raises(InputError, match="sizes: the counts add up to"):
        Release.from_groups([{"a": 1}, {"a": 1}], sizes=[BIG, BIG])
    with pytest.raises(InputError, match="count column 'n': the counts add up to"):
        fp.risk.ClassCounts.from_counts(pa.table({"q": [1, 1], "n": [BIG, BIG]}), qi=["q"],
                                        count="n")


def test_counts_past_2_53_are_summed_exactly():
    # a float64 sum would give 2**53 + 2 or 2**53: the sizes are exact integers
    rel = Release.from_groups([{"a": 2**53 + 1, "b": 1}, {"a": 3}])
    assert rel.sizes.tolist() == [2**53 + 2, 3]
    assert fp.classic.k_anonymity(rel) == 3
    t = pa.table({"g": [1, 1], "s": ["a", "b"], "w": [2**53 + 1, 2]})
    assert Release.from_table(t, sensitive="s", group="g", weight="w").sizes.tolist() == \
        [2**53 + 3]
    cc = fp.risk.ClassCounts.from_counts(pa.table({"q": [1, 1], "n": [2**53 + 1, 2]}),
                                         qi=["q"], count="n")
    assert cc.sizes.tolist() == [2**53 + 3]


def test_largest_total_that_fits_is_accepted():
    t = _weighted([2**62, 2**62 - 1])        # exactly 2**63 - 1
    rel = Release.from_table(t, sensitive="s", group="g", weight="w")
    assert rel.n_rows == 2**63 - 1
    assert fp.classic.k_anonymity(rel) == 2**63 - 1


# ---------------------------------------------------------------- 2. NaN is a null
NAN = float("nan")


def _nan_table():
    return pa.table({"age": [1.0, NAN, 1.0, 2.0, 2.0, 2.0],
                     "s": ["a", "b", "a", "b", "c", "c"],
                     "x": [1.5, 2.0, NAN, 1.0, 1.0, 1.0]})


@pytest.fixture(params=["table", "parquet"])
def nan_source(request, tmp_path):
    if request.param == "table":
        return _nan_table()
    import pyarrow.parquet as pq

    path = tmp_path / "nan.parquet"
    pq.write_table(_nan_table(), path)
    return str(path)


def test_nan_qi_value_is_a_null_under_every_policy(nan_source):
    with pytest.raises(InputError, match=r"'age' has 1 null \(including 1 NaN"):
        Release.from_table(nan_source, qi=["age"], sensitive="s")
    with pytest.raises(InputError, match=r"'age' has 1 null \(including 1 NaN"):
        Release.from_batches(nan_source, qi=["age"], sensitive="s")
    dropped = Release.from_table(nan_source, qi=["age"], sensitive="s", nulls="drop")
    assert (dropped.n_groups, dropped.n_rows) == (2, 5)
    assert dropped.group_labels == [1.0, 2.0]
    assert Release.from_batches(nan_source, qi=["age"], sensitive="s",
                                nulls="drop").equals(dropped)
    kept = Release.from_table(nan_source, qi=["age"], sensitive="s", nulls="value")
    assert kept.group_labels == [1.0, 2.0, None]     # NaN is the null value
    nulls = _nan_table().set_column(0, "age", pa.array([1.0, None, 1.0, 2.0, 2.0, 2.0]))
    assert kept.equals(Release.from_table(nulls, qi=["age"], sensitive="s", nulls="value"))


def test_nan_sensitive_value_is_a_null(nan_source):
    with pytest.raises(InputError, match=r"'x' has 1 null \(including 1 NaN"):
        Release.from_table(nan_source, qi=["s"], sensitive="x")
    rel = Release.from_table(nan_source, qi=["s"], sensitive="x", nulls="value")
    assert rel.values == [1.0, 1.5, 2.0, None]
    assert Release.from_table(nan_source, qi=["s"], sensitive="x", nulls="drop").n_rows == 5


def test_nan_is_a_null_for_rows_risk_anonymizers_and_counts():
    t = _nan_table()
    rel = Release.from_table(t, qi=["age"], group="s", sensitive="x", nulls="drop")
    assert rel.rows.input_row.tolist() == [0, 3, 4, 5]
    with pytest.raises(InputError, match=r"'age' has 1 null \(including 1 NaN"):
        fp.risk.audit(t, qi=["age"])
    assert fp.risk.audit(t, qi=["age"], nulls="drop").value == 0.5
    with pytest.raises(InputError, match=r"'age' has 1 null \(including 1 NaN"):
        fp.anonymize.mondrian(t, qi=["age"], sensitive="s", min_size=2)
    res = fp.anonymize.mondrian(t, qi=["age"], sensitive="s", min_size=2, nulls="drop")
    assert res.group_ids[1] == -1 and (np.delete(res.group_ids, 1) >= 0).all()
    with pytest.raises(InputError, match=r"'x' has 1 null \(including 1 NaN"):
        fp.anonymize.anatomy(t, sensitive="x", l=2)
    with pytest.raises(InputError, match=r"'g' has 1 null \(including 1 NaN"):
        Release.from_counts(pa.table({"g": [1.0, NAN], "s": ["a", "b"], "count": [1, 2]}),
                            group="g", sensitive="s")
    with pytest.raises(InputError, match=r"'age' has 1 null \(including 1 NaN"):
        fp.counts.CountAccumulator("age", "s").add(t)
    with pytest.raises(InputError, match=r"groups\[0\] contains a null value \(NaN"):
        Release.from_groups([[1.0, NAN]])


# ---------------------------------------------------------------- 3. thresholds in range
@pytest.fixture(scope="module")
def rel():
    return Release.from_groups([["a", "a", "b"], ["a", "c"], ["b", "c", "c"]])


@pytest.mark.parametrize("model", fp.classic.MODELS)
@pytest.mark.parametrize("bad", [NAN, -1.0, math.inf])
def test_violations_threshold_is_range_checked(rel, model, bad):
    with pytest.raises(InputError, match=rf"threshold \({model}\) must be"):
        fp.classic.violations(rel, model, bad, l=2)


@pytest.mark.parametrize("model, ok, bad", [
    ("k_anonymity", 2, 0.5), ("l_diversity", 1, 0), ("entropy_l_diversity", 1.5, 0.99),
    ("alpha_k_anonymity", 1, 1.5), ("t_closeness", 0, 1.01), ("t_closeness_ordered", 1, 2),
    ("beta_likeness", 0, -0.1), ("delta_disclosure", 3.5, -1e-9),
    ("recursive_cl_diversity", 0.1, 0),
])
def test_violations_threshold_bounds(rel, model, ok, bad):
    v = fp.classic.violations(rel, model, ok, l=2)
    assert v.threshold == ok
    with pytest.raises(InputError, match=rf"threshold \({model}\) must be"):
        fp.classic.violations(rel, model, bad, l=2)
    with pytest.raises(InputTypeError, match=r"threshold \(.*\) must be a real number"):
        fp.classic.violations(rel, model, "2", l=2)


def test_violations_threshold_nan_used_to_report_nothing(rel):
    # k = 3 fails the groups of size 2: the threshold check did not change the answer
    assert len(fp.classic.violations(rel, "k_anonymity", 3)) == 1


def test_robustness_and_foreground_sizes_and_tolerances_are_range_checked():
    R = fp.robustness
    for tol in (NAN, -1.0, math.inf):
        with pytest.raises(InputError, match="tol must be"):
            R.delta_check([0.5, 0.5], 2, n_x=1, tol=tol)
    t = pa.table({"q": [1, 2, 1, 2, 1, 2], "s": ["a", "b", "a", "b", "c", "c"],
                  "g": [0, 0, 0, 1, 1, 1]})
    for param in ("max_states", "chunk_entries"):
        with pytest.raises(InputError, match=f"{param} must be >= 1, got 0"):
            R.audit(t, qi=["q"], sensitive="s", group="g", r=2, **{param: 0})
    with pytest.raises(InputError, match="max_states must be >= 1"):
        R.posterior_multivalued([{"a": 0.5, "b": 0.5}] * 2, ["a", "b"], max_states=0)
    with pytest.raises(InputError, match=r"delta_ceil: need N >= 1, r > 1"):
        R.delta_ceil(np.array([3.0]), np.array([NAN]), np.array([0.5]))
    for v in (NAN, -1.0, 0):
        with pytest.raises(InputError, match="solver_tol must be (> 0|finite)"):
            fp.foreground.attack(t, qi=["q"], sensitive="s", group="g", r=2, solver_tol=v)
    for v in (NAN, -1.0, 2):
        with pytest.raises(InputError, match=r"fixed_rate must be"):
            fp.foreground.fit_global_distribution([([0, 1], 1), ([0, 0], 1)], 2,
                                                  fixed_rate=v)


def test_predicates_and_risk_arguments_are_range_checked():
    with pytest.raises(InputError, match="c_l is the c of recursive"):
        fp.predicates.criteria_from(l=2, c_l=NAN)
    with pytest.raises(InputError, match="population_size must be >= 4"):
        fp.risk.population_uniques([1, 2], [2, 1], 2)
    with pytest.raises(InputError, match="population_size must be finite"):
        fp.risk.population_uniques([1, 2], [2, 1], NAN)
    assert fp.risk.population_uniques([1, 2], [2, 1], 100)["population_size"] == 100


# ---------------------------------------------------------------- 5. probabilities typed
def test_posterior_refuses_strings_instead_of_parsing_them():
    R = fp.robustness
    with pytest.raises(InputTypeError, match=r"f must hold real numbers, got <U3 values"):
        R.posterior(["0.5", "0.5"], 1)
    with pytest.raises(InputTypeError, match=r"f must be a sequence of probabilities"):
        R.posterior("0.5", 1)
    with pytest.raises(InputTypeError, match=r"n_x must be an integer, got str"):
        R.posterior([0.5, 0.5], "1")
    with pytest.raises(InputTypeError, match=r"f must hold real numbers, got bool values"):
        R.posterior([True, False], 1)
    with pytest.raises(InputTypeError, match=r"f must hold real numbers"):
        R.posterior_batch(["0.5", "0.5"], [0, 2], [1])
    with pytest.raises(InputTypeError, match=r"f must hold real numbers"):
        R.delta_check(np.array(["0.5", "0.5"]), 2)
    with pytest.raises(InputTypeError, match=r"N must hold real numbers"):
        R.delta_ceil(np.array(["3"]), np.array([2.0]), np.array([0.5]))
    # numbers of every real kind still work, with the documented answer
    assert R.posterior([0.5, 0.5, 0.2, 0.2], 2).round(4).tolist() == \
        [0.7273, 0.7273, 0.2727, 0.2727]
    from fractions import Fraction
    assert R.posterior(np.array([Fraction(1, 2), 0.5], dtype=object), 1).tolist() == \
        [0.5, 0.5]


def test_other_probability_arrays_refuse_strings():
    with pytest.raises(InputTypeError, match=r"starts must hold real numbers"):
        fp.foreground.fit_global_distribution([([0, 1], 1), ([0, 0], 1)], 2,
                                              starts=[["0.5", "0.5"]])
    with pytest.raises(InputTypeError, match=r"f must hold real numbers"):
        fp.metrics.average_delta(["0.5"] * 4, [0, 0, 1, 1])
    with pytest.raises(InputTypeError, match=r"sizes must hold real numbers"):
        fp.risk.population_uniques(["1", "2"], [2, 1], 100)


# ---------------------------------------------------------------- 4. hierarchies are trees
from fastpriv.hierarchies import Hierarchy, HierarchyError  # noqa: E402


def test_cyclic_hierarchy_is_refused_naming_the_label(tmp_path):
    with pytest.raises(InputError, match=r"not a tree: label 'b' at level 1 \(values 'a'\) "
                                         r"does not contain what 'b' holds at level 0"):
        Hierarchy([["a", "b", "*"], ["b", "a", "*"]], name="x")
    path = tmp_path / "x.csv"
    path.write_text("a;x;y\nb;y;x\nc;y;x\n")
    with pytest.raises(HierarchyError, match=r"hierarchy 'x' is not a tree: label '(x|y)'"):
        Hierarchy.from_csv(path, name="x", header=False)


def test_non_tree_hierarchies_are_input_errors_naming_the_value():
    assert issubclass(HierarchyError, InputError)
    with pytest.raises(InputError, match=r"value 'a' has two rows with different"):
        Hierarchy([["a", "ab", "*"], ["a", "ac", "*"]], name="x")
    with pytest.raises(InputError, match=r"label 'ab' at level 1 generalizes to both"):
        Hierarchy([["a", "ab", "p"], ["b", "ab", "q"]], name="x")
    h = Hierarchy([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]], name="x")
    with pytest.raises(InputError, match=r"does not cover the data: 1 value without a row: "
                                         r"'d'"):
        h.bind(["a", "d"])
    # values kept unchanged upwards, and labels repeated upwards, are trees
    assert h.bind(["a", "b", "c"]).labels == (("a", "b", "c"), ("ab", "c"), ("*",))
    assert Hierarchy([["1", "1", "1-2"], ["2", "1", "1-2"]], name="y").height == 3


# ---------------------------------------------------------------- 6. reading input
def _big_field_csv(path, field_bytes=5 << 20):
    big = "x" * field_bytes   # over Arrow's 1 MiB default block: "straddling object"
    with open(path, "w") as fh:
        fh.write("g,s,note\n")
        for i in range(3000):
            fh.write(f"{i % 7},{'ab'[i % 2]},{big if i == 1500 else 'n'}\n")
    return str(path)


def test_csv_with_a_field_larger_than_a_block_is_read(tmp_path):
    from fastpriv._arrow import iter_batches, read_csv

    path = _big_field_csv(tmp_path / "big.csv")
    t = read_csv(path)
    assert t.num_rows == 3000 and len(t.column("note")[1500].as_py()) == 5 << 20
    streamed = pa.Table.from_batches(list(iter_batches(path, ["g", "s", "note"])))
    assert streamed.num_rows == 3000 and streamed.equals(t.select(["g", "s", "note"]))
    rel = Release.from_table(path, group="g", sensitive="s")
    assert rel.n_rows == 3000
    assert Release.from_batches(path, group="g", sensitive="s").equals(rel)


def test_csv_restart_skips_the_rows_already_streamed(tmp_path, monkeypatch):
    """The big field comes after several blocks: the stream restarts with larger blocks
    and yields every row exactly once."""
    import fastpriv._arrow as A

    monkeypatch.setattr(A, "_CSV_BLOCK", 1 << 14)
    path = str(tmp_path / "late.csv")
    with open(path, "w") as fh:
        fh.write("g,s\n")
        for i in range(20000):
            fh.write(f"{i},{'y' * 40000 if i == 15000 else 's' + str(i % 3)}\n")
    got = pa.Table.from_batches(list(A.iter_batches(path, ["g", "s"])))
    assert got.column("g").to_pylist() == list(range(20000))


def test_csv_in_the_wrong_encoding_names_the_encoding(tmp_path):
    from fastpriv._arrow import read_csv

    path = tmp_path / "utf8.csv"
    path.write_text("g,s\n1,é\n2,a\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^encoding: .* is not utf-16 text \(UTF-16 stream "
                                         r"does not start with BOM\)"):
        read_csv(str(path), encoding="utf-16")
    with pytest.raises(InputError, match=r"^encoding: unknown text encoding 'nope'"):
        read_csv(str(path), encoding="nope")
    assert read_csv(str(path), encoding="utf-8").column("s").to_pylist() == ["é", "a"]
