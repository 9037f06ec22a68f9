"""Hierarchies: ARX CSV layouts, interval generation, specific validation errors, encoding."""

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastpriv.datasets import hierarchy_path, load_adult
from fastpriv.hierarchies import BoundHierarchy, Hierarchy, HierarchyError, resolve_hierarchies

ROWS = [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"], ["d", "cd", "*"]]


def test_from_rows_facts():
    h = Hierarchy(ROWS, name="x")
    assert h.height == 3 and h.values == ["a", "b", "c", "d"]
    assert h.level(1) == ["ab", "ab", "cd", "cd"]
    with pytest.raises(ValueError, match="level must be"):
        h.level(3)


@pytest.mark.parametrize("sep", [";", ","])
@pytest.mark.parametrize("header", [None, "level0{s}level1{s}level2", "x{s}l1{s}l2"])
def test_csv_separators_and_headers_are_detected(tmp_path, sep, header):
    lines = [sep.join(r) for r in ROWS]
    if header is not None:
        lines.insert(0, header.format(s=sep))
    p = tmp_path / "x.csv"
    p.write_text("\n".join(lines) + "\n")
    h = Hierarchy.from_csv(p)
    assert h.name == "x" and h.rows == [tuple(r) for r in ROWS]


def test_csv_labels_with_commas_in_semicolon_files():
    h = Hierarchy.from_csv(hierarchy_path("age"))
    assert h.height == 6
    assert h.rows[17] == ("17", "[15, 20)", "[10, 20)", "[0, 20)", "[0, 40)", "*")


def test_csv_explicit_options_and_bom(tmp_path):
    p = tmp_path / "v.csv"
    p.write_text("\ufeffvalue;g\na;ab\nb;ab\n")
    assert Hierarchy.from_csv(p).values == ["a", "b"]  # 'value' header detected
    assert Hierarchy.from_csv(p, header=False).values == ["value", "a", "b"]
    with pytest.raises(ValueError, match="sep"):
        Hierarchy.from_csv(p, sep="|")
    with pytest.raises(ValueError, match="not found"):
        Hierarchy.from_csv(tmp_path / "missing.csv")


def test_header_detected_from_structure(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text("zip,region,top\n111,north,*\n112,north,*\n221,south,*\n")
    assert Hierarchy.from_csv(p).values == ["111", "112", "221"]


def test_intervals_reproduce_the_bundled_adult_age_hierarchy():
    gen = Hierarchy.intervals(range(0, 120), [5, 10, 20, 40, "*"], name="age")
    assert gen.rows == Hierarchy.from_csv(hierarchy_path("age")).rows


def test_interval_labels_and_floats():
    h = Hierarchy.intervals([0.5, 1.5, 7], [2, 4], name="v", top=None)
    assert h.rows == [("0.5", "[0, 2)", "[0, 4)"), ("1.5", "[0, 2)", "[0, 4)"),
                      ("7", "[6, 8)", "[4, 8)")]
    assert Hierarchy.intervals([3], [5], anchor=1).rows == [("3", "[1, 6)", "*")]


@pytest.mark.parametrize("widths, msg", [([5, 7], "must nest"), ([10, 5], "must nest"),
                                         ([0], "positive"), (["x"], "positive")])
def test_interval_width_errors(widths, msg):
    with pytest.raises(ValueError, match=msg):
        Hierarchy.intervals(range(10), widths)


def test_interval_values_must_be_numbers():
    with pytest.raises(ValueError, match="'a'"):
        Hierarchy.intervals(["a", 1], [2])


def test_ragged_rows_name_the_values():
    with pytest.raises(HierarchyError, match=r"same number of levels.*'c'"):
        Hierarchy([["a", "x", "*"], ["b", "x", "*"], ["c", "*"]], name="h")


def test_value_with_two_different_rows_is_named():
    with pytest.raises(HierarchyError, match=r"value 'a' has two rows"):
        Hierarchy([["a", "x", "*"], ["a", "y", "*"], ["b", "y", "*"]], name="h")
    # identical duplicates are tolerated
    assert Hierarchy([["a", "x"], ["a", "x"]]).values == ["a"]


def test_levels_must_nest_and_the_error_names_label_and_values():
    rows = [["a", "ab", "L"], ["b", "ab", "R"], ["c", "c", "R"]]
    with pytest.raises(HierarchyError, match=r"label 'ab' at level 1 .*'L'.*'a'.*'R'.*'b'"):
        Hierarchy(rows, name="h")


def test_empty_and_wrong_types():
    with pytest.raises(HierarchyError, match="no rows"):
        Hierarchy([])
    with pytest.raises(TypeError, match="row 0"):
        Hierarchy(["abc"])
    with pytest.raises(HierarchyError, match="row 1 is empty"):
        Hierarchy([["a"], []])
    with pytest.raises(TypeError, match="name"):
        Hierarchy(ROWS, name=3)


def test_coverage_error_lists_missing_values():
    h = Hierarchy(ROWS, name="x")
    with pytest.raises(HierarchyError, match=r"does not cover the data: 2 values.*'e'.*'f'"):
        h.bind(pa.array(["a", "e", "f", "a"]))
    with pytest.raises(HierarchyError, match="nulls"):
        h.bind(pa.array(["a", None]))


def test_bind_encodes_levels_as_gather_tables():
    h = Hierarchy(ROWS, name="x")
    col = pa.array(["d", "a", "c", "a"])
    b = h.bind(col)
    assert isinstance(b, BoundHierarchy)
    assert b.domain.to_pylist() == ["a", "c", "d"]  # only values present, sorted
    assert b.cardinalities == (3, 2, 1)
    assert b.labels[1] == ("ab", "cd")
    assert not b.maps.flags.writeable
    gen = b.generalize(b.codes, 1)
    assert [b.labels[1][c] for c in gen] == ["cd", "ab", "cd", "ab"]
    indptr, members = b.members(1)
    assert [sorted(members[indptr[i]:indptr[i + 1]].tolist()) for i in range(2)] == [[0], [1, 2]]


def test_integers_and_integral_floats_match_text_labels():
    h = Hierarchy.from_csv(hierarchy_path("age"))
    assert h.bind(pa.array([39, 17])).labels[1] == ("[15, 20)", "[35, 40)")
    assert h.bind(pa.array([39.0])).labels[2] == ("[30, 40)",)


@pytest.mark.slow
@given(st.lists(st.integers(0, 60), min_size=1, max_size=40))
def test_interval_gather_equals_direct_computation(values):
    h = Hierarchy.intervals(range(0, 61), [4, 8, 16], name="v")
    b = h.bind(pa.array(values, pa.int64()))
    for lev, w in ((1, 4), (2, 8), (3, 16)):
        gen = b.generalize(b.codes, lev)
        got = [b.labels[lev][c] for c in gen]
        want = [f"[{w * (v // w)}, {w * (v // w) + w})" for v in values]
        assert got == want
    assert list(b.generalize(b.codes, 4)) == [0] * len(values)


def test_generalized_codes_are_ordered_by_smallest_member():
    b = Hierarchy.intervals(range(0, 100), [5, 10], name="v").bind(pa.array([95, 3, 51, 7]))
    assert b.labels[1] == ("[0, 5)", "[5, 10)", "[50, 55)", "[95, 100)")


def test_to_csv_round_trip(tmp_path):
    h = Hierarchy.from_csv(hierarchy_path("age"))
    out = tmp_path / "age.csv"
    h.to_csv(out)
    assert Hierarchy.from_csv(out).rows == h.rows
    with pytest.raises(FileExistsError):
        h.to_csv(out)


def test_resolve_hierarchies_sources(tmp_path):
    adult = load_adult(["age", "sex", "race"])
    bundled = resolve_hierarchies(None, ["age", "sex"], adult)
    assert [b.height for b in bundled] == [6, 2]
    (tmp_path / "sex.csv").write_text("Male;*\nFemale;*\n")
    from_dir = resolve_hierarchies(str(tmp_path), ["sex"], adult)
    assert from_dir[0].labels[0] == ("Female", "Male")
    mixed = resolve_hierarchies({"age": [10, 20], "sex": "suppress",
                                 "race": Hierarchy.from_csv(hierarchy_path("race"))},
                                ["age", "sex", "race"], adult)
    assert [b.height for b in mixed] == [4, 2, 2]
    assert mixed[0].labels[1][0] == "[10, 20)"
    with pytest.raises(ValueError, match="no entry for QI attribute 'race'"):
        resolve_hierarchies({"age": [10]}, ["race"], adult)
    with pytest.raises(ValueError, match="no file for QI 'race'"):
        resolve_hierarchies(str(tmp_path), ["race"], adult)
    with pytest.raises(ValueError, match="no bundled"):
        resolve_hierarchies(None, ["fnlwgt"], load_adult(["fnlwgt"]))
    with pytest.raises(TypeError, match="hierarchies must be"):
        resolve_hierarchies(3, ["age"], adult)
    with pytest.raises(TypeError, match=r"hierarchies\['age'\]"):
        resolve_hierarchies({"age": 3}, ["age"], adult)


# ---------------------------------------------------------------- exact spellings (issue 47)
def test_a_value_with_a_leading_space_is_not_the_hierarchys_value():
    # " M" was matched with the hierarchy's "M" (stripped): two values published as one
    h = Hierarchy.from_text("M;*\nF;*\n", name="sex")
    with pytest.raises(HierarchyError) as err:
        h.bind(pa.array(["M", " M", "F"]))
    assert str(err.value) == ("column 'sex': value ' M' is not in the hierarchy; did you mean "
                              "'M'? values are compared exactly as written")
    with pytest.raises(HierarchyError, match="value 'f' is not in the hierarchy; did you mean "
                                             "'F'"):
        h.bind(pa.array(["f"]))
    with pytest.raises(HierarchyError, match=r"does not cover the data: 1 value.*'X'"):
        h.bind(pa.array(["X"]))            # no near miss: the plain coverage error


def test_spellings_are_kept_from_csv_to_release(tmp_path):
    (tmp_path / "sex.csv").write_text(" M;*\nM;*\nF;*\n")
    h = Hierarchy.from_csv(tmp_path / "sex.csv")
    assert h.values == [" M", "M", "F"]
    t = pa.table({"sex": [" M", "M", "F"] * 4, "s": list("xyz") * 4})
    from fastpriv.anonymize import lattice_search

    res = lattice_search(t, qi=["sex"], sensitive="s", hierarchies=str(tmp_path), min_size=2)
    assert sorted(res.release.groups.column("sex").to_pylist()) == [" M", "F", "M"]
    assert sorted(res.release.sizes.tolist()) == [4, 4, 4]


def test_anonymize_names_both_spellings_and_exits_2(tmp_path, capsys):
    from fastpriv.cli import main

    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "sex.csv").write_text("M;*\nF;*\n")
    data = tmp_path / "d.csv"
    data.write_text("sex,s\nM,x\n M,y\nF,x\nF,y\n")
    out = tmp_path / "out.parquet"
    rc = main(["anonymize", str(data), "--method", "lattice", "--qi", "sex", "--sensitive",
               "s", "--min-size", "2", "--hierarchies", str(tmp_path / "h"), "-o", str(out)])
    assert rc == 2
    assert ("column 'sex': value ' M' is not in the hierarchy; did you mean 'M'?"
            in capsys.readouterr().err)
    assert not out.exists()


def test_csv_cells_are_read_as_written():
    # a form feed or a line separator inside a cell does not end a row; quoted newlines stay
    h = Hierarchy.from_text('a\x0cb;*\nc\u2028d;*\n"e\nf";*\n\n  \n', name="x")
    assert h.values == ["a\x0cb", "c\u2028d", "e\nf"]
    assert Hierarchy.from_text("a;*\r\nb;*\r\n", name="x").values == ["a", "b"]
