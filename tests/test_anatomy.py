"""Anatomy (fastpriv.anonymize.anatomy): group sizes, distinct values, eligibility, seeds,
published tables, CLI."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv.anonymize._anatomy import anatomy


def _groups(res, values):
    out: dict = {}
    for g, v in zip(res.group_ids.tolist(), values, strict=True):
        out.setdefault(g, []).append(v)
    return out


@st.composite
def eligible_tables(draw):
    l = draw(st.integers(2, 5))  # noqa: E741
    n = draw(st.integers(l * max(l - 1, 1), 120))
    cap = n // l
    n_values = draw(st.integers(max(l, -(-n // cap)), max(l, -(-n // cap)) + 10))
    # counts with max <= n / l
    counts = [0] * n_values
    rest = n
    i = 0
    while rest:
        room = cap - counts[i % n_values]
        if room > 0:
            take = min(room, rest, draw(st.integers(1, max(1, cap))))
            counts[i % n_values] += take
            rest -= take
        i += 1
    vals = [f"v{k}" for k, c in enumerate(counts) for _ in range(c)]
    perm = draw(st.permutations(range(n)))
    vals = [vals[p] for p in perm]
    return l, pa.table({"age": list(range(n)), "d": vals})


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(eligible_tables(), st.integers(0, 2**31))
def test_every_group_has_l_or_l_plus_1_distinct_values(case, seed):
    l, t = case  # noqa: E741
    res = anatomy(t, sensitive="d", l=l, seed=seed)
    vals = t.column("d").to_pylist()
    groups = _groups(res, vals)
    assert (res.group_ids >= 0).all()
    for g, members in groups.items():
        assert l <= len(members) <= l + 1, (g, members)
        assert len(set(members)) == len(members)
    assert res.release.n_groups == len(groups) == t.num_rows // l
    assert np.array_equal(np.asarray(res.release.sizes),
                          np.bincount(res.group_ids, minlength=len(groups)))
    assert res.mode == "all values"


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**31), st.floats(0.0, 1.0))
def test_sensitive_set_mode_at_most_one_sensitive_row_per_group(l, seed, share):  # noqa: E741
    rng = np.random.default_rng(seed)
    n = int(rng.integers(l * l, 200))
    ns = max(2, int(share * (n // l)))
    vals = ["s1", "s2"] * (ns // 2) + ["s1"] * (ns % 2) + \
        list(rng.choice(["x", "y"], n - ns))
    t = pa.table({"age": list(range(n)), "d": vals})
    res = anatomy(t, sensitive="d", l=l, seed=seed, sensitive_values=["s1", "s2"])
    groups = _groups(res, vals)
    for members in groups.values():
        assert l <= len(members) <= l + 1
        assert sum(1 for v in members if v in ("s1", "s2")) <= 1
    assert res.mode == "sensitive set"


def test_ineligible_input_gives_a_clear_error():
    t = pa.table({"a": list(range(7)), "d": list("aaaabbc")})
    with pytest.raises(ValueError, match=r"value 'a' occurs in 4 of 7 rows.*largest feasible l "
                                         r"is 1"):
        anatomy(t, sensitive="d", l=2)
    with pytest.raises(ValueError, match="sensitive values occur in 4 of 7"):
        anatomy(t, sensitive="d", l=2, sensitive_values=["a"])
    with pytest.raises(ValueError, match="do not occur"):
        anatomy(t, sensitive="d", l=2, sensitive_values=["zz"])
    with pytest.raises(ValueError, match="l must be >= 1"):
        anatomy(t, sensitive="d", l=0)
    with pytest.raises(ValueError, match="not found"):
        anatomy(t, sensitive="disease", l=2)
    with pytest.raises(ValueError, match="also a qi"):
        anatomy(t, sensitive="d", l=1, qi=["a", "d"])


def test_adult_eligibility_and_the_papers_sensitive_set():
    adult = fp.datasets.load_adult()
    with pytest.raises(ValueError, match="HS-grad.*largest feasible l is 3"):
        anatomy(adult, sensitive="education", l=4)
    res = anatomy(adult, sensitive="education", l=3, seed=0)
    assert set(res.group_size_counts) <= {3, 4}
    low = ["Preschool", "1st-4th", "5th-6th", "7th-8th"]
    res = anatomy(adult, sensitive="education", l=10, seed=0, sensitive_values=low)
    ed = adult.column("education").to_pylist()
    per = Counter(g for g, v in zip(res.group_ids.tolist(), ed, strict=True) if v in low)
    assert max(per.values()) == 1 and sum(per.values()) == 1566
    assert set(res.group_size_counts) <= {10, 11}


def test_seeds_are_reproducible():
    rng = np.random.default_rng(0)
    t = pa.table({"age": rng.integers(0, 90, 500), "d": rng.choice(list("abcdefg"), 500)})
    a = anatomy(t, sensitive="d", l=3, seed=7)
    b = anatomy(t, sensitive="d", l=3, seed=7)
    c = anatomy(t, sensitive="d", l=3, seed=8)
    assert np.array_equal(a.group_ids, b.group_ids)
    assert not np.array_equal(a.group_ids, c.group_ids)
    s1 = anatomy(t, sensitive="d", l=3, seed=7, sensitive_values=["a"])
    s2 = anatomy(t, sensitive="d", l=3, seed=7, sensitive_values=["a"])
    assert np.array_equal(s1.group_ids, s2.group_ids)


def test_published_tables_and_files(tmp_path):
    rng = np.random.default_rng(1)
    t = pa.table({"age": rng.integers(0, 90, 60), "zip": rng.integers(0, 5, 60),
                  "d": rng.choice(list("abcd"), 60)})
    res = anatomy(t, sensitive="d", l=2, seed=3, qi=["age", "zip"])
    qt = res.qi_table()
    assert qt.column_names == ["age", "zip", "group_id"]
    pub = res.published_group_ids(t)
    # the QI table holds every person's exact QI values and published group, in an order
    # of its own (sorted by group, then QI values), never the input's
    exp_rows = sorted(zip(pub.tolist(), t.column("age").to_pylist(),
                          t.column("zip").to_pylist(), strict=True))
    got_rows = list(zip(*(qt.column(c).to_pylist() for c in ("group_id", "age", "zip")),
                        strict=True))
    assert got_rows == exp_rows
    assert qt.column("age").to_pylist() != t.column("age").to_pylist()
    stt = res.sensitive_table()
    assert stt.column_names == ["group_id", "d", "count"]
    assert sum(stt.column("count").to_pylist()) == 60
    # the sensitive table is exactly the multiset of each group's values, sorted
    exp = Counter(zip(pub.tolist(), t.column("d").to_pylist(), strict=True))
    keys = list(zip(*(stt.column(i).to_pylist() for i in range(3)), strict=True))
    assert keys == sorted(keys)
    assert {(g, v): c for g, v, c in keys} == dict(exp)
    # joined table, files (Parquet and CSV), no silent overwrite
    j = res.auditor_view(t)
    assert j.column("group_id").to_pylist() == pub.tolist()
    a, b = res.write_tables(tmp_path / "qi.parquet", tmp_path / "s.csv")
    assert pq.read_table(a).equals(qt)
    assert (tmp_path / "s.csv").read_text().startswith('"group_id","d","count"')
    with pytest.raises(FileExistsError):
        res.write_tables(tmp_path / "qi.parquet", tmp_path / "s2.csv")
    assert not (tmp_path / "s2.csv").exists()           # one unit: neither file written
    with pytest.raises(ValueError, match="differ"):
        res.write_tables(tmp_path / "x.parquet", tmp_path / "x.parquet")
    assert res.to_dict()["method"] == "anatomy" and res.summary().startswith("anatomy:")
    rel = fp.Release.from_counts(stt, group="group_id", sensitive="d", count="count")
    assert sorted(rel.sizes.tolist()) == sorted(res.release.sizes.tolist())
    assert rel.n_groups == res.release.n_groups


def test_nulls_and_small_inputs():
    t = pa.table({"a": list(range(6)), "d": ["a", None, "b", "c", "a", "b"]})
    with pytest.raises(ValueError, match="null"):
        anatomy(t, sensitive="d", l=2)
    res = anatomy(t, sensitive="d", l=2, nulls="drop")
    assert res.group_ids[1] == -1 and (np.delete(res.group_ids, 1) >= 0).all()
    # fewer groups than residual rows: groups grow beyond l + 1 only then
    t = pa.table({"a": list(range(5)), "d": list("abcde")})
    res = anatomy(t, sensitive="d", l=3, seed=0)
    assert sorted(res.release.sizes.tolist()) == [5]


def test_cli_anonymize_method_anatomy(tmp_path, capsys):
    from fastpriv.cli import main

    rng = np.random.default_rng(2)
    t = pa.table({"age": rng.integers(20, 60, 300), "sex": rng.choice(["F", "M"], 300),
                  "d": rng.choice(list("abcdef"), 300)})
    src = tmp_path / "t.parquet"
    pq.write_table(t, src)
    out = tmp_path / "rel.parquet"
    rc = main(["anonymize", str(src), "--method", "anatomy", "--qi", "age", "sex",
               "--sensitive", "d", "--l", "3", "--anatomy-seed", "4", "-o", str(out),
               "--anatomy-tables", str(tmp_path / "qi.csv"), str(tmp_path / "s.csv")])
    assert rc == 0
    rel = pq.read_table(tmp_path / "rel.qi.parquet")     # -o writes the two tables
    assert "group_id" in rel.column_names and "d" not in rel.column_names
    sizes = Counter(rel.column("group_id").to_pylist())
    assert set(sizes.values()) <= {3, 4}
    assert (tmp_path / "qi.csv").exists() and (tmp_path / "s.csv").exists()
    assert main(["anonymize", str(src), "--method", "anatomy", "--qi", "age",
                 "--sensitive", "d", "--min-size", "3", "--l", "2"]) == 2
    assert "only takes --l" in capsys.readouterr().err


def test_callable_however_imported():
    import importlib

    import fastpriv.anonymize as an

    importlib.import_module("fastpriv.anonymize._anatomy")
    t = pa.table({"a": [1, 2, 3, 4], "d": list("abab")})
    res = an.anatomy(t, sensitive="d", l=2, seed=0)
    assert res.method == "anatomy" and res.release.n_groups == 2
    assert fp.anonymize.anatomy(t, sensitive="d", l=2).release.n_groups == 2


def test_broken_builtin_anonymizer_raises(monkeypatch):
    """A built-in anonymizer module that fails to import is a bug: the CLI must not hide it."""
    import importlib

    from fastpriv.cli import anonymize as cli_an

    real = importlib.import_module

    def failing(name, *a, **kw):
        if name == "fastpriv.anonymize._anatomy":
            raise RuntimeError("broken built-in")
        return real(name, *a, **kw)

    monkeypatch.setattr(cli_an, "_LOADED", False)
    monkeypatch.setattr(cli_an, "METHODS", dict(cli_an.METHODS))
    monkeypatch.setattr(cli_an, "_PLUGIN_ERRORS", {})
    monkeypatch.setattr(importlib, "import_module", failing)
    with pytest.raises(RuntimeError, match="broken built-in"):
        cli_an.load_plugins()
    assert "_anatomy" not in cli_an._PLUGIN_ERRORS and "anatomy" not in cli_an._PLUGIN_ERRORS


def test_anatomy_result_protocol():
    import copy
    import json

    from fastpriv.results import Result

    t = pa.table({"a": [1, 2, 3, 4, 5, 6], "d": list("aabbcc")})
    res = anatomy(t, sensitive="d", l=2, seed=0)
    assert isinstance(res, Result) and res.value is None and res.witness is None
    assert res == res and res.params["l"] == 2
    assert res.group_size_counts == {2: 3} and res.mode == "all values"
    d = res.to_dict()
    json.dumps(d)
    assert d["mode"] == "all values" and "source" not in d
    assert res.summary().startswith("anatomy: 3 groups")
    assert copy.copy(res) == res
