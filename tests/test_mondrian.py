"""Mondrian: every group satisfies the criterion and no group has an allowed median split
(brute-force check), compiled and Python paths agree, output values cover the groups."""

import subprocess
import sys
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv.predicates as P
from fastpriv.anonymize import mondrian
from fastpriv.anonymize._mondrian import MondrianTree
from fastpriv.datasets import load_adult
from tests.naive_anonymize import group_passes, split, table_distribution

CRITERIA = [
    (dict(min_size=2), [("k", 2)]),
    (dict(min_size=3), [("k", 3)]),
    (dict(l=2), [("distinct", 2)]),
    (dict(min_size=2, l=2), [("k", 2), ("distinct", 2)]),
    (dict(l=1.5, l_kind="entropy"), [("entropy", 1.5)]),
    (dict(l=2, l_kind="recursive", c_l=2), [("recursive", 2, 2)]),
    (dict(t=0.4), [("t", Fraction(2, 5))]),
    (dict(c=0.75, k=1, knowledge_kind="negations"), [("ck_neg", Fraction(3, 4), 1)]),
    (dict(alpha=0.75), [("alpha", Fraction(3, 4))]),
]

CATS = ["u", "v", "w"]


def _criteria_kw(kw):
    """mondrian's keywords as criteria_from's (the same names)."""
    return dict(kw)


@st.composite
def tables(draw, max_rows=30):
    n = draw(st.integers(1, max_rows))
    return [{"x": draw(st.integers(0, 6)), "y": draw(st.integers(10, 13)),
             "z": draw(st.sampled_from(CATS)), "s": draw(st.sampled_from("abc"))}
            for _ in range(n)]


def _table(rows):
    return pa.table({"x": pa.array([r["x"] for r in rows], pa.int64()),
                     "y": pa.array([r["y"] for r in rows], pa.int32()),
                     "z": [r["z"] for r in rows], "s": [r["s"] for r in rows]})


def _groups_of(rows, gids):
    out = {}
    for r, g in zip(rows, gids, strict=True):
        out.setdefault(int(g), []).append(r)
    return out


def _passes(part, crits, q):
    return all(group_passes([r["s"] for r in part], c, q) for c in crits)


@pytest.mark.slow
@settings(max_examples=60)
@given(rows=tables())
def test_groups_satisfy_and_are_minimal_under_the_split_rule(rows):
    q = table_distribution(rows, "s")
    for kw, crits in CRITERIA:
        if not _passes(rows, crits, q):
            with pytest.raises(ValueError, match="whole table does not satisfy"):
                mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s", **kw)
            continue
        res = mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s", **kw)
        groups = _groups_of(rows, res.group_ids)
        assert sorted(groups) == list(range(res.release.n_groups))
        for part in groups.values():
            assert _passes(part, crits, q), kw
            for attr in ("x", "y", "z"):
                halves = split(part, attr)
                if halves is not None:
                    assert not (_passes(halves[0], crits, q) and _passes(halves[1], crits, q)), \
                        (kw, attr, part)
        assert np.array_equal(np.bincount(res.group_ids), res.release.sizes)


@pytest.mark.slow
@settings(max_examples=25)
@given(rows=tables(max_rows=20))
def test_python_path_equals_compiled_path(rows):
    for kw, _ in [CRITERIA[0], CRITERIA[3], CRITERIA[6], CRITERIA[7]]:
        crit = P.criteria_from(**_criteria_kw(kw))
        try:
            fast = mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s", predicate=crit)
        except ValueError:
            continue
        opaque = P.FunctionCriterion(crit, "opaque")  # not local: whole-release checks
        slow = mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s", predicate=opaque)
        assert fast.path == "compiled" and slow.path == "python"
        assert np.array_equal(fast.group_ids, slow.group_ids), kw

        if "t" in kw:  # depends on the table's distribution: not checkable on two halves
            continue

        class LocalUser(P.Criterion):
            local = True
            name = "local-user"

            def __call__(self, rel, _c=crit):
                return _c(rel)

        two = mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s", predicate=LocalUser())
        assert two.path == "python"
        assert np.array_equal(fast.group_ids, two.group_ids)


@pytest.mark.slow
@settings(max_examples=40)
@given(rows=tables())
def test_generalized_values_cover_each_group(rows):
    res = mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s",
                   min_size=2) if len(rows) >= 2 else None
    if res is None:
        return
    gen = res.generalized.to_pylist()
    by_attr = {a.name: a for a in res.attributes}
    for g, part in _groups_of(rows, res.group_ids).items():
        idx = np.flatnonzero(res.group_ids == g)
        for attr in ("x", "y", "z"):
            labels = {gen[i][attr] for i in idx}
            assert len(labels) == 1
            a = by_attr[attr]
            code = int(a.codes[idx[0]])
            members = {a.domain[int(m)].as_py() for m in
                       a.members[a.member_indptr[code]:a.member_indptr[code + 1]]}
            values = {r[attr] for r in part}
            if attr == "z":  # categorical: exactly the values present
                assert members == values
                assert labels.pop() == (values.pop() if len(values) == 1 else
                                        "{" + ", ".join(sorted(values)) + "}")
            else:  # ordered: the range between the smallest and largest value
                lo, hi = min(values), max(values)
                assert members == {v for v in a.domain.to_pylist() if lo <= v <= hi}
                assert labels.pop() == (str(lo) if lo == hi else f"[{lo}, {hi}]")


def test_hand_example():
    t = pa.table({"age": [20, 21, 22, 23, 30, 31, 32, 33], "s": list("abababab")})
    res = mondrian(t, qi=["age"], sensitive="s", min_size=2)
    assert res.group_ids.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert res.generalized.column("age").to_pylist() == ["[20, 21]"] * 2 + ["[22, 23]"] * 2 + \
        ["[30, 31]"] * 2 + ["[32, 33]"] * 2
    res = mondrian(t, qi=["age"], sensitive="s", min_size=3)
    assert res.group_ids.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    res = mondrian(t, qi=["age"], sensitive="s", l=2, min_size=2)
    assert res.release.n_groups == 4


def test_median_rule_uses_the_value_below_the_maximum():
    # lower median is the maximum (7 of 10 are 'M'): the cut falls below it
    t = pa.table({"sex": ["F"] * 3 + ["M"] * 7, "s": list("abcabcabca")})
    res = mondrian(t, qi=["sex"], sensitive="s", min_size=3)
    assert res.release.n_groups == 2
    assert sorted(res.generalized.column("sex").to_pylist()) == ["F"] * 3 + ["M"] * 7


def test_categorical_option_and_widths():
    t = pa.table({"zip": [1, 2, 3, 4, 5, 6], "s": list("abcabc")})
    ordered = mondrian(t, qi=["zip"], sensitive="s", min_size=3)
    cat = mondrian(t, qi=["zip"], sensitive="s", min_size=3, categorical=["zip"])
    assert ordered.generalized.column("zip").to_pylist()[0] == "[1, 3]"
    assert cat.generalized.column("zip").to_pylist()[0] == "{1, 2, 3}"
    with pytest.raises(ValueError, match="categorical: column 'nope'"):
        mondrian(t, qi=["zip"], sensitive="s", min_size=3, categorical=["nope"])


def test_adult_k_anonymity_and_l_diversity():
    adult = load_adult(["age", "education_num", "sex", "race", "occupation"])
    qi = ["age", "education_num", "sex", "race"]
    res = mondrian(adult, qi=qi, sensitive="occupation", min_size=10, l=3)
    assert int(res.release.sizes.min()) >= 10 and int(res.release.distinct.min()) >= 3
    assert res.release.n_rows == adult.num_rows
    assert res.path == "compiled" and res.release.n_groups == res.release.n_groups
    assert res.method == "mondrian" and res.params["qi"] == qi
    assert res.release.row_group is not None
    assert np.array_equal(res.release.row_group, res.group_ids)


def test_nulls_and_errors():
    t = pa.table({"a": [1, 2, None, 4, 5], "s": ["x", "y", "x", "y", "x"]})
    with pytest.raises(ValueError, match="null"):
        mondrian(t, qi=["a"], sensitive="s", min_size=2)
    res = mondrian(t, qi=["a"], sensitive="s", min_size=2, nulls="drop")
    assert res.group_ids[2] == -1 and res.generalized.column("a")[2].as_py() is None
    with pytest.raises(ValueError, match="no privacy criterion"):
        mondrian(t, qi=["a"], sensitive="s")
    with pytest.raises(ValueError, match="also a qi"):
        mondrian(t, qi=["a"], sensitive="a", min_size=2)
    with pytest.raises(ValueError, match="qi: column 'b'"):
        mondrian(t, qi=["b"], sensitive="s", min_size=2)


def test_tree_reuse_runs_several_criteria():
    adult = load_adult(["age", "sex", "occupation"])
    tree = MondrianTree(adult, ["age", "sex"], "occupation")
    g5, n5, _, _ = tree.run(P.KAnonymity(5))
    g50, n50, _, _ = tree.run(P.KAnonymity(50))
    assert n50 < n5


@pytest.mark.slow
def test_cli_mondrian(tmp_path):
    out = tmp_path / "m.csv"
    r = subprocess.run([sys.executable, "-m", "fastpriv", "anonymize", "adult", "--qi", "age",
                        "sex", "race", "--sensitive", "occupation", "--method", "mondrian",
                        "--min-size", "10", "--t", "0.3", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "mondrian: published" in r.stdout and " groups of " in r.stdout
    head = out.read_text().splitlines()[0]
    assert head.endswith('"group_id"') and '"age"' in head


@pytest.mark.slow
@settings(max_examples=25)
@given(rows=tables(max_rows=16))
def test_non_local_criteria_safe_and_minimal(rows):
    from fastpriv import Release

    for crit in (P.CKSafety(0.75, 1), P.SkylinePoint(None, 1, 1, 0, 0.8)):
        whole = Release.from_groups([[r["s"] for r in rows]])
        if not crit(whole):
            with pytest.raises(ValueError, match="whole table"):
                mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s", predicate=crit)
            continue
        res = mondrian(_table(rows), qi=["x", "y", "z"], sensitive="s", predicate=crit)
        assert res.path == "python"
        parts = list(_groups_of(rows, res.group_ids).values())
        vals = [[r["s"] for r in p] for p in parts]
        assert crit(Release.from_groups(vals))
        for i, part in enumerate(parts):
            for attr in ("x", "y", "z"):
                halves = split(part, attr)
                if halves is None:
                    continue
                finer = vals[:i] + vals[i + 1:] + [[r["s"] for r in h] for h in halves]
                assert not crit(Release.from_groups(finer)), (crit.name, attr)


@pytest.mark.slow
def test_package_export_survives_a_direct_submodule_import():
    code = ("import fastpriv.anonymize._mondrian\n"
            "import pyarrow as pa, fastpriv as fp\n"
            "t = pa.table({'a': [1, 2, 3, 4], 's': ['x', 'y', 'x', 'y']})\n"
            "r = fp.anonymize.mondrian(t, qi=['a'], sensitive='s', min_size=2)\n"
            "assert r.release.n_groups == 2, r\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_result_is_typed_and_follows_the_protocol():
    import copy
    import json

    from fastpriv.anonymize import MondrianResult
    from fastpriv.results import Result

    t = pa.table({"age": [20, 21, 22, 30, 31, 32, 40, 41], "s": list("abababab")})
    res = mondrian(t, qi=["age"], sensitive="s", min_size=2)
    assert isinstance(res, MondrianResult) and isinstance(res, Result)
    assert res.path == "compiled" and res.n_cells == 8 and res.n_splits == 3
    assert res.value is None and res.witness is None and res.params["qi"] == ["age"]
    assert {"encode", "partition", "output"} <= set(res.seconds)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["n_splits"] == 3 and d["path"] == "compiled" and d["n_groups"] == 4
    assert res == res and copy.copy(res) == res and res.summary().startswith("mondrian:")
    t4 = pa.table({"age": list(range(8)), "s": list("abcdabcd")})
    ck = mondrian(t4, qi=["age"], sensitive="s", c=0.9, k=1, knowledge_kind="negations")
    assert ck.params["criterion"] == P.criteria_from(c=0.9, k=1, knowledge_kind="negations").name


def test_wrong_kind_of_data_names_the_data_parameter():
    from fastpriv import InputTypeError
    from fastpriv.anonymize import mondrian
    with pytest.raises(InputTypeError, match=r"^data: expected a pyarrow Table"):
        mondrian(5, qi=["a"], sensitive="s", min_size=2)
