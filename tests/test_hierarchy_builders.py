"""Hierarchy builders (masking, ordering, interval bounds) against ARX's builders' semantics.

The expected rows are written out from ARX's HierarchyBuilderRedactionBased (level j masks j
characters of the padded value), HierarchyBuilderOrderBased (blocks of group sizes per
level, set labels ``{a, b}``, levels stop at one group, ``*`` only when several are left,
repeated constant labels numbered ``-1``) and HierarchyBuilderIntervalBased (``[lo, hi)``
ranges, adjacent ranges merged per level, ``<x`` / ``>=x`` bottom and top coding).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv.cli import main
from fastpriv.errors import InputError
from fastpriv.hierarchies import Hierarchy


# ---------------------------------------------------------------- masking
def test_masking_zip_codes_right_to_left():
    h = Hierarchy.masking([47677, 47602, 47678], name="zip")
    assert h.rows == [
        ("47677", "4767*", "476**", "47***", "4****", "*****"),
        ("47602", "4760*", "476**", "47***", "4****", "*****"),
        ("47678", "4767*", "476**", "47***", "4****", "*****"),
    ]
    assert h.name == "zip"


def test_masking_padded_like_arx_default():
    # ARX create('*'): padding = redaction character, left aligned, redacted right to left
    h = Hierarchy.masking(["47677", "4711"], pad="*")
    assert h.rows == [
        ("47677", "4767*", "476**", "47***", "4****", "*****"),
        ("4711", "4711*", "471**", "47***", "4****", "*****"),
    ]


def test_masking_left_pads_on_the_left_by_default():
    # ARX alignment RIGHT_TO_LEFT + redaction LEFT_TO_RIGHT, padding '0'
    h = Hierarchy.masking(["12", "345"], direction="left", pad="0", mask="#")
    assert h.rows == [("12", "#12", "##2", "###"), ("345", "#45", "##5", "###")]
    h = Hierarchy.masking(["12", "345"], direction="left", pad="0", align="left")
    assert h.rows[0] == ("12", "*20", "**0", "***")


def test_masking_without_pad_masks_each_value_as_it_is():
    h = Hierarchy.masking(["ab", "abc", "x"])
    assert h.rows == [("ab", "a*", "**", "***"), ("abc", "ab*", "a**", "***"),
                      ("x", "*", "*", "***")]


# ---------------------------------------------------------------- ordering
def test_ordering_groups_of_two_then_two_then_star():
    h = Hierarchy.ordering(list("gfedcba"), groups=[2, 2], name="x")
    assert h.rows == [
        ("a", "{a, b}", "{a, b, c, d}", "*"),
        ("b", "{a, b}", "{a, b, c, d}", "*"),
        ("c", "{c, d}", "{a, b, c, d}", "*"),
        ("d", "{c, d}", "{a, b, c, d}", "*"),
        ("e", "{e, f}", "{e, f, g}", "*"),
        ("f", "{e, f}", "{e, f, g}", "*"),
        ("g", "{g}", "{e, f, g}", "*"),
    ]


def test_ordering_stops_at_one_group_and_uses_order_and_bounds_labels():
    order = ["low", "mid", "high", "top"]
    h = Hierarchy.ordering(["top", "low", "high", "mid"], groups=[2, 4, 2], order=order,
                           labels="bounds")
    # level 2 already holds every value: no further level and no '*' (as ARX)
    assert h.rows == [("low", "[low, mid]", "[low, top]"),
                      ("mid", "[low, mid]", "[low, top]"),
                      ("high", "[high, top]", "[low, top]"),
                      ("top", "[high, top]", "[low, top]")]


def test_ordering_numbers_sort_numerically_and_sizes_cycle():
    h = Hierarchy.ordering([10, 9, 2, 1], groups=[[1, 3]])
    assert h.rows == [("1", "{1}", "*"), ("2", "{2, 9, 10}", "*"),
                      ("9", "{2, 9, 10}", "*"), ("10", "{2, 9, 10}", "*")]


def test_ordering_constant_labels_are_numbered_when_repeated():
    h = Hierarchy.ordering(list("abcd"), groups=[2], labels=[["x", "x"]])
    assert h.level(1) == ["x", "x", "x-1", "x-1"]
    h = Hierarchy.ordering(list("abcd"), groups=[2], labels=lambda m: m[0].upper())
    assert h.level(1) == ["A", "A", "C", "C"]


# ---------------------------------------------------------------- intervals
def test_intervals_widths_unchanged():
    h = Hierarchy.intervals([17, 21, 38], [5, 10, 20, "*"])
    assert h.rows == [("17", "[15, 20)", "[10, 20)", "[0, 20)", "*"),
                      ("21", "[20, 25)", "[20, 30)", "[20, 40)", "*"),
                      ("38", "[35, 40)", "[30, 40)", "[20, 40)", "*")]


def test_intervals_bounds_groups_and_coding():
    h = Hierarchy.intervals([17, 33, 70, -1, 50], bounds=[0, 18, 40, 65], groups=[2],
                            below=0, above=65)
    assert h.rows == [("-1", "<0", "<0", "*"),
                      ("17", "[0, 18)", "[0, 40)", "*"),
                      ("33", "[18, 40)", "[0, 40)", "*"),
                      ("50", "[40, 65)", "[40, 65)", "*"),
                      ("70", ">=65", ">=65", "*")]


def test_intervals_bounds_stop_when_one_range_is_left():
    h = Hierarchy.intervals([1, 15], bounds=[0, 10, 20], groups=[2, 2])
    assert h.rows == [("1", "[0, 10)", "[0, 20)"), ("15", "[10, 20)", "[0, 20)")]


def test_intervals_widths_with_coding_cut_the_ranges():
    h = Hierarchy.intervals([17, 23, 33, 70], [5, 10, "*"], below=23, above=65)
    assert h.rows == [("17", "<23", "<23", "*"), ("23", "[23, 25)", "[23, 30)", "*"),
                      ("33", "[30, 35)", "[30, 40)", "*"), ("70", ">=65", ">=65", "*")]


# ---------------------------------------------------------------- properties
TEXT = st.text(alphabet="ab*1", min_size=0, max_size=5)
SIZES = st.lists(st.one_of(st.integers(1, 4), st.lists(st.integers(1, 3), min_size=1,
                                                      max_size=3)), min_size=1, max_size=4)


def _check_tree(h: Hierarchy, values: list[str]) -> None:
    assert sorted(h.values) == sorted(set(values))
    assert len(set(h.level(h.height - 1))) == 1
    assert Hierarchy(h.rows, name=h.name).rows == h.rows     # the constructor's checks pass


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=12).filter(lambda v: any(v)),
       st.sampled_from(["right", "left"]), st.sampled_from([None, "*", "0"]),
       st.sampled_from([None, "left", "right"]))
def test_masking_is_a_tree_over_the_values(values, direction, pad, align):
    try:
        h = Hierarchy.masking(values, direction=direction, pad=pad, align=align)
    except InputError as exc:       # a value that reads as another value's mask
        assert "not a tree" in str(exc) or "inconsistent" in str(exc)
        return
    _check_tree(h, values)
    assert h.height == max(map(len, values)) + 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=30), SIZES,
       st.sampled_from(["set", "bounds"]))
def test_ordering_is_a_tree_over_the_values(values, groups, labels):
    h = Hierarchy.ordering(values, groups=groups, labels=labels)
    _check_tree(h, [str(v) for v in values])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-30, 130), min_size=1, max_size=30),
       st.lists(st.integers(1, 4), min_size=0, max_size=3))
def test_intervals_are_trees_over_the_values(values, groups):
    h = Hierarchy.intervals(values, bounds=[0, 18, 30, 45, 65, 100], groups=groups or None,
                            below=0, above=100)
    _check_tree(h, [str(v) for v in values])
    w = Hierarchy.intervals(values, [5, 10, 20, "*"], below=10, above=90)
    _check_tree(w, [str(v) for v in values])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 99999), min_size=1, max_size=15))
def test_builders_round_trip_through_csv(tmp_path_factory, values):
    d = tmp_path_factory.mktemp("rt")
    for h in (Hierarchy.masking(values, name="z", pad="0"),
              Hierarchy.ordering(values, name="z", groups=[2, 3]),
              Hierarchy.intervals(values, bounds=[0, 50000, 100000], name="z")):
        path = h.to_csv(d / "z.csv", overwrite=True)
        back = Hierarchy.from_csv(path)
        assert back.rows == h.rows and back.name == "z"


# ---------------------------------------------------------------- command line
@pytest.fixture
def small_csv(tmp_path):
    t = pa.table({"zip": [47677, 47602, 47678, 47905, 47909, 47906],
                  "age": [23, 27, 35, 38, 51, 58],
                  "job": ["a", "b", "c", "d", "e", "f"]})
    path = tmp_path / "data.csv"
    path.write_text("zip,age,job\n" + "".join(
        f"{z},{a},{j}\n" for z, a, j in zip(*(t.column(c).to_pylist() for c in t.column_names),
                                            strict=True)))
    return path


@pytest.mark.parametrize("col,argv", [
    ("zip", ["masking", "--direction", "right"]),
    ("age", ["intervals", "--widths", "10,20,*"]),
    ("job", ["ordering", "--groups", "2,2", "--order", "f", "e", "d", "c", "b", "a"]),
])
def test_cli_writes_a_hierarchy_anonymize_reads(small_csv, tmp_path, col, argv):
    hdir = tmp_path / "h"
    hdir.mkdir()
    out = hdir / f"{col}.csv"
    assert main(["hierarchy", argv[0], str(small_csv), "--column", col, *argv[1:],
                 "-o", str(out)]) == 0
    h = Hierarchy.from_csv(out)
    assert sorted(h.values) == sorted(str(v) for v in
                                      pacsv.read_csv(small_csv).column(col).to_pylist())
    assert main(["hierarchy", argv[0], str(small_csv), "--column", col, *argv[1:],
                 "-o", str(out)]) == 2                       # exists: --overwrite needed
    assert main(["hierarchy", argv[0], str(small_csv), "--column", col, *argv[1:],
                 "-o", str(out), "--overwrite"]) == 0
    rel = tmp_path / "out.parquet"
    assert main(["anonymize", str(small_csv), "--method", "lattice", "--qi", col,
                 "--min-size", "2", "--hierarchies", str(hdir), "-o", str(rel)]) == 0
    got = pq.read_table(rel).column(col).to_pylist()
    labels = {lab for r in h.rows for lab in r}
    assert len(got) == 6 and set(got) <= labels


def test_cli_masking_rows_are_the_builders(small_csv, tmp_path):
    out = tmp_path / "zip.csv"
    assert main(["hierarchy", "masking", str(small_csv), "--column", "zip", "--pad", "0",
                 "-o", str(out)]) == 0
    assert out.read_text().splitlines()[0] == "47677;4767*;476**;47***;4****;*****"


# ---------------------------------------------------------------- refused
@pytest.mark.parametrize("kwargs,match", [
    ({"groups": []}, "groups"),
    ({"groups": [2, 0]}, r"groups\[1\]"),
    ({"groups": [[]]}, r"groups\[0\]"),
    ({"groups": [2], "order": ["a", "b"]}, "order must name every value"),
    ({"groups": [2], "order": ["a", "a", "b", "c"]}, "twice"),
    ({"groups": [2], "labels": "range"}, "labels"),
    ({"groups": [2], "labels": [["x"]]}, r"labels\[0\]"),
])
def test_ordering_refuses_bad_parameters(kwargs, match):
    with pytest.raises(InputError, match=match):
        Hierarchy.ordering(["a", "b", "c"], **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    ({"direction": "up"}, "direction"),
    ({"pad": "00"}, "pad"),
    ({"mask": ""}, "mask"),
    ({"pad": "0", "align": "centre"}, "align"),
])
def test_masking_refuses_bad_parameters(kwargs, match):
    with pytest.raises(InputError, match=match):
        Hierarchy.masking(["ab", "c"], **kwargs)
    with pytest.raises(InputError, match="non-empty"):
        Hierarchy.masking([""])


@pytest.mark.parametrize("args,kwargs,match", [
    ((), {}, "widths or bounds"),
    (([5],), {"bounds": [0, 5]}, "not both"),
    ((), {"bounds": [0, 5, 5]}, "increase"),
    ((), {"bounds": [0]}, "at least 2"),
    ((), {"bounds": [0, 5, 10], "groups": [0]}, r"groups\[0\]"),
    (([5],), {"groups": [2]}, "only with bounds"),
    ((), {"bounds": [0, 5]}, "outside the bounds"),
    (([5],), {"below": 10, "above": 5}, "below must be less"),
])
def test_intervals_refuse_bad_parameters(args, kwargs, match):
    with pytest.raises(InputError, match=match):
        Hierarchy.intervals([1, 7], *args, **kwargs)


@pytest.mark.parametrize("argv,err", [
    (["ordering", "--column", "nope", "--groups", "2"], "--column: column 'nope' not found"),
    (["ordering", "--column", "job", "--groups", "2,0"], "group sizes >= 1"),
    (["masking", "--column", "job", "--direction", "up"], "invalid choice"),
    (["intervals", "--column", "age"], "one of --widths and --bounds"),
    (["intervals", "--column", "job", "--widths", "5,*"],
     "column 'job' holds string values; an interval hierarchy needs numbers"),
])
def test_cli_refuses_bad_input_with_exit_2(small_csv, tmp_path, capsys, argv, err):
    out = tmp_path / "h.csv"
    try:
        rc = main(["hierarchy", argv[0], str(small_csv), *argv[1:], "-o", str(out)])
    except SystemExit as exc:                  # argparse refuses while parsing
        rc = exc.code
    assert rc == 2
    assert err in capsys.readouterr().err
    assert not out.exists()


# ---------------------------------------------------------------- exact numbers (issue 47)
NEAR = 1_700_000_000_000_000_000     # past 2**53: a float cannot hold its last digits


def _lies_in(value: str, label: str) -> bool:
    lo, hi = (Fraction(x) for x in label[1:-1].split(", "))
    return lo <= Fraction(value) < hi


def test_cli_intervals_of_int64_near_1_7e18_hold_their_values(tmp_path):
    # the values passed through float64 and got labels that excluded them
    values = [NEAR + d for d in (0, 1, 9, 19, 99, 1001, 123_456_789)] + [2**63 - 1, -2**63]
    data = tmp_path / "big.parquet"
    pq.write_table(pa.table({"id": pa.array(values, pa.int64())}), data)
    out = tmp_path / "id.csv"
    assert main(["hierarchy", "intervals", str(data), "--column", "id", "--widths",
                 "10,100,1000,*", "-o", str(out)]) == 0
    rows = Hierarchy.from_csv(out).rows
    assert sorted(int(r[0]) for r in rows) == sorted(values)
    for r in rows:
        assert all(_lies_in(r[0], lab) for lab in r[1:-1]), r
    row = next(r for r in rows if r[0] == str(NEAR + 19))
    assert row[1:] == (f"[{NEAR + 10}, {NEAR + 20})", f"[{NEAR}, {NEAR + 100})",
                       f"[{NEAR}, {NEAR + 1000})", "*")
    assert main(["hierarchy", "intervals", str(data), "--column", "id", "--widths",
                 "10,100", "--anchor", str(NEAR + 3), "-o", str(out), "--overwrite"]) == 0
    row = next(r for r in Hierarchy.from_csv(out).rows if r[0] == str(NEAR + 19))
    assert row[1:] == (f"[{NEAR + 13}, {NEAR + 23})", f"[{NEAR + 3}, {NEAR + 103})", "*")


def test_cli_bounds_and_coding_are_read_exactly(tmp_path):
    values = [NEAR + d for d in (1, 2, 3, 4)]
    data = tmp_path / "big.parquet"
    pq.write_table(pa.table({"id": pa.array(values, pa.uint64())}), data)
    out = tmp_path / "id.csv"
    cut = ",".join(str(NEAR + d) for d in (1, 2, 4, 5))
    assert main(["hierarchy", "intervals", str(data), "--column", "id", "--bounds", cut,
                 "--below", str(NEAR + 2), "-o", str(out)]) == 0
    rows = {r[0]: r[1] for r in Hierarchy.from_csv(out).rows}
    assert rows == {str(NEAR + 1): f"<{NEAR + 2}", str(NEAR + 2): f"[{NEAR + 2}, {NEAR + 4})",
                    str(NEAR + 3): f"[{NEAR + 2}, {NEAR + 4})",
                    str(NEAR + 4): f"[{NEAR + 4}, {NEAR + 5})"}


def test_intervals_of_uint64_extremes_and_decimals_are_exact():
    top = 2**64 - 1
    h = Hierarchy.intervals(pa.array([top, top - 7, 0], pa.uint64()), [4, 8], name="u")
    assert h.rows[-1] == (str(top), f"[{top - 3}, {top + 1})", f"[{top - 7}, {top + 1})", "*")
    d = pa.array([Decimal("12345678901234567890123.45"), Decimal("-0.05")],
                 pa.decimal128(30, 2))
    h = Hierarchy.intervals(d, [Decimal("0.1"), 1], name="d")
    assert h.rows == [("-0.05", "[-0.1, 0)", "[-1, 0)", "*"),
                      ("12345678901234567890123.45", "[12345678901234567890123.4, "
                       "12345678901234567890123.5)", "[12345678901234567890123, "
                       "12345678901234567890124)", "*")]


def test_float_widths_are_the_decimals_written():
    # in floats 0.7 / 0.1 is 6.999999999999999: the labels read [0.6000000000000001, …);
    # the decimals written give the intervals a reader expects, exact
    h = Hierarchy.intervals([0.7, 0.3, 2.0**60], [0.1, 0.2], name="x")
    assert h.rows == [("0.3", "[0.3, 0.4)", "[0.2, 0.4)", "*"),
                      ("0.7", "[0.7, 0.8)", "[0.6, 0.8)", "*"),
                      (str(2**60), f"[{2**60}, {2**60}.1)", f"[{2**60}, {2**60}.2)", "*")]


@pytest.mark.parametrize("values,typ", [
    (pa.array([1, 2], pa.int64()).cast(pa.timestamp("s")), "timestamp[s]"),
    (pa.array([1, 2], pa.int32()).cast(pa.date32()), "date32[day]"),
    (pa.array(["a", "b"]), "string"),
    (pa.array([1.5, float("inf")]), "double"),
])
def test_intervals_refuse_what_is_not_a_finite_number_by_column_and_type(values, typ):
    with pytest.raises(InputError) as err:
        Hierarchy.intervals(values, [2], name="col")
    assert "column 'col'" in str(err.value) and typ in str(err.value)


def test_cli_widths_with_more_digits_than_a_float_are_kept(tmp_path, capsys):
    data = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": pa.array([NEAR, NEAR + 5], pa.int64())}), data)
    out = tmp_path / "id.csv"
    # 10**18 + 1 is no multiple of 10: read through a float it was 10**18 and passed
    assert main(["hierarchy", "intervals", str(data), "--column", "id", "--widths",
                 f"10,{10**18 + 1}", "-o", str(out)]) == 2
    assert "widths must nest" in capsys.readouterr().err
