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
