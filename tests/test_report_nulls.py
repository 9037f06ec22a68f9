"""Nulls in the report and the skyline: None as a sensitive value, the report's null policy.

Regressions of issue 49: ``fastpriv report --nulls value`` with a null sensitive value
recursed until RecursionError (exit 3): ``knowledge_skyline`` read ``sigma=None`` as
"not given".
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from fastpriv import skyline as sky

READ = {"sensitive": "s", "qi": ["a"], "nulls": "value"}


def _null_sensitive_table() -> pa.Table:
    """Two groups (a = 1, 2), the sensitive column s holding nulls in both."""
    return pa.table({"a": [1, 1, 1, 2, 2, 2, 2],
                     "s": ["x", None, "y", None, "x", "x", "y"]})


def _search_by_hand(rel, sigma, c) -> list:
    """The maximal safe (ℓ, k, m) by brute force over the caps of ``knowledge_skyline``."""
    got = sky.knowledge_skyline(rel, sigma=sigma, c=c)
    l_cap, k_cap, m_cap = got.caps
    safe = {(l, k, m) for l in range(l_cap + 1) for k in range(k_cap + 1)
            for m in range(m_cap + 1)
            if sky.breach_probability(rel, sigma=sigma, l=l, k=k, m=m).value < c}
    maximal = sorted(p for p in safe
                     if not any(q != p and all(a <= b for a, b in zip(p, q, strict=True))
                                for q in safe))
    caps = (l_cap, k_cap, m_cap)
    return [tuple(math.inf if x >= cap else x for x, cap in zip(p, caps, strict=True))
            for p in maximal]


def test_knowledge_skyline_of_the_null_value():
    from fastpriv._data import as_release

    rel = as_release(_null_sensitive_table(), **READ)
    assert None in rel.values
    got = sky.knowledge_skyline(rel, sigma=None, c=0.9)     # the null value, no warning
    assert isinstance(got, sky.KnowledgeSkyline) and got.sigma is None
    assert list(got) == _search_by_hand(rel, None, 0.9)
    # the same from the table, and inside every value's skylines
    assert sky.knowledge_skyline(_null_sensitive_table(), sigma=None, c=0.9, **READ) == got
    every = sky.knowledge_skylines(rel, c=0.9)
    assert set(every) == {"x", "y", None} and every[None] == got
    found, done, stopped = sky.knowledge_skylines_within(rel, sigmas=[None, "x"], cs=[0.9])
    assert done == [None, "x"] and stopped is None and found[0] == got


def test_other_skyline_functions_take_the_null_value():
    rel_args = (_null_sensitive_table(),)
    bp = sky.breach_probability(*rel_args, sigma=None, l=1, k=0, m=0, **READ)
    # ruling out the most frequent other value leaves the null one of two in either group
    assert bp.sigma is None and bp.value == 0.5
    assert sky.prepare(*rel_args, sigma=None, **READ).breach_probability(1, 0, 0) == bp.value
    assert sky.dp_breach_probability(*rel_args, sigma=None, l=1, k=0, m=0,
                                     **READ).value == pytest.approx(bp.value)
    res = sky.check(*rel_args, skylines={None: [(1, 0, 0, 0.9)]}, **READ)
    assert [p.sigma for p in res.points] == [None] and res.points[0].value == bp.value


def test_sigma_none_without_a_null_value_keeps_its_deprecated_meaning():
    t = _null_sensitive_table()
    rel = t.filter(pc.is_valid(t["s"]))
    with pytest.warns(DeprecationWarning, match="knowledge_skylines"):
        every = sky.knowledge_skyline(rel, sigma=None, c=0.9, **READ)
    assert set(every) == {"x", "y"}
    with pytest.warns(DeprecationWarning, match="knowledge_skylines"):
        assert sky.knowledge_skyline(rel, c=0.9, **READ) == every


def test_knowledge_skylines_within_checks_its_arguments_first():
    from fastpriv import InputError
    from fastpriv._data import as_release

    rel = as_release(_null_sensitive_table(), **READ)
    # not swallowed as "stopped by the budget" in partial mode
    with pytest.raises(InputError, match="sigmas"):
        sky.knowledge_skylines_within(rel, sigmas=["nope"], cs=[0.9], partial=True)
    with pytest.raises(InputError, match="c"):
        sky.knowledge_skylines_within(rel, sigmas=["x"], cs=[1.5], partial=True)


def test_cli_report_with_a_null_sensitive_value(tmp_path):
    from fastpriv.cli import main
    from fastpriv.report import validate

    t = pa.table({"a": [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3],
                  "b": [0, 0, 1, 1, 0, 0, 1, 1, 0, 1, None],
                  "s": ["x", None, "y", "x", None, "z", "x", "y", "z", None, "x"]})
    p = tmp_path / "data.parquet"
    pq.write_table(t, p)
    html, js = tmp_path / "r.html", tmp_path / "r.json"
    rc = main(["report", str(p), "--sensitive", "s", "--qi", "a", "b", "--nulls", "value",
               "-o", str(html), "--json", str(js)])
    assert rc in (0, 1)
    d = json.loads(js.read_text())
    validate(d)
    assert rc == d["verdict"]["exit_code"]
    assert None in d["skyline"]["sigmas"]
    assert html.read_text().startswith("<!DOCTYPE html>")


# ============================================================================ the null policy of
# the report's QI classes (risk section, k-map, δ-presence): the input table's classes under the
# report's policy, as risk.audit(table, qi=..., nulls=...) counts them
N_ROWS = 3000


@pytest.fixture(scope="module")
def nulls_table() -> pa.Table:
    """3,000 rows with nulls in both QI columns and in the sensitive column; weights 0–3."""
    import numpy as np

    rng = np.random.default_rng(49)

    def column(card, p_null):
        v = rng.integers(0, card, N_ROWS).tolist()
        for i in np.flatnonzero(rng.random(N_ROWS) < p_null).tolist():
            v[i] = None
        return v

    s = [None if x is None else f"v{x}" for x in column(5, 0.05)]
    return pa.table({"a": pa.array(column(6, 0.03), pa.int64()),
                     "b": pa.array(column(4, 0.02), pa.int64()),
                     "s": pa.array(s, pa.string()),
                     "n": pa.array(rng.integers(0, 4, N_ROWS), pa.int64())})


@pytest.fixture(scope="module")
def population(nulls_table) -> pa.Table:
    """Every record of the data, weights expanded, twice, plus people of no sample class."""
    import numpy as np

    t = nulls_table
    idx = np.repeat(np.arange(t.num_rows), t.column("n").to_numpy())
    rec = t.select(["a", "b"]).take(pa.array(idx))
    extra = pa.table({"a": pa.array([100] * 7, pa.int64()), "b": pa.array([0] * 7, pa.int64())})
    return pa.concat_tables([rec, t.select(["a", "b"]), rec, extra])


def _jsonable(d: dict) -> dict:
    from fastpriv._io import to_jsonable

    return json.loads(json.dumps(to_jsonable(d)))


def _risk_dict(table, **kw) -> dict:
    from fastpriv import risk

    d = risk.audit(table, qi=["a", "b"], **kw).to_dict()
    d.pop("class_size_histogram")          # the report leaves it out
    return _jsonable(d)


def _nulls_in(table, columns) -> int:
    import pyarrow.compute as pc

    mask = pc.is_null(table.column(columns[0]))
    for c in columns[1:]:
        mask = pc.or_(mask, pc.is_null(table.column(c)))
    return int(pc.sum(mask).as_py())


def _some_rows_have_only_a_null_sensitive_value(t) -> bool:
    only_s = _nulls_in(t, ["a", "b", "s"]) - _nulls_in(t, ["a", "b"])
    return only_s > 0


@pytest.mark.parametrize("weight", [None, "n"])
@pytest.mark.parametrize("nulls", ["drop", "value"])
def test_report_risk_section_is_risk_audit_of_the_table(nulls_table, population, nulls,
                                                        weight):
    from fastpriv import population as pop
    from fastpriv.report import build_report

    assert _some_rows_have_only_a_null_sensitive_value(nulls_table)
    rep = build_report(nulls_table, sensitive="s", qi=["a", "b"], nulls=nulls, weight=weight,
                       population=population, thresholds={"min_k_map": 1, "max_delta": 1.0},
                       knowledge_skylines=False).to_dict()
    sec = rep["risk"]
    assert sec["status"] == "ok", sec.get("reason")
    want = _risk_dict(nulls_table, weight=weight, nulls=nulls, population=population)
    assert sec["audit"] == want
    assert sec["audit"]["params"]["nulls"] == nulls
    # k-map and δ-presence count the same classes
    for name, fn in (("k_map", pop.k_map), ("delta_presence", pop.delta_presence)):
        got = rep["models"][name]
        assert got["status"] == "ok", got.get("reason")
        res = fn(nulls_table, qi=["a", "b"], population=population, weight=weight, nulls=nulls)
        want = _jsonable(res.to_dict())
        # the models get the report's class counts, which already count the weights
        assert want["params"].pop("weight") == weight and got["params"].pop("weight") is None
        assert {k: v for k, v in got.items() if k not in ("status", "reason")} == want
        assert got["params"]["nulls"] == nulls


def test_report_counts_the_rows_it_dropped_weighted_or_not(nulls_table):
    from fastpriv.report import build_report

    dropped = _nulls_in(nulls_table, ["a", "b", "s"])
    for weight in (None, "n"):
        rep = build_report(nulls_table, sensitive="s", qi=["a", "b"], nulls="drop",
                           weight=weight, knowledge_skylines=False).to_dict()
        assert rep["input"]["n_rows_dropped_for_nulls"] == dropped, weight


@pytest.mark.parametrize("weight", [None, "n"])
def test_report_without_sensitive_column_under_nulls_drop(nulls_table, population, weight):
    from fastpriv.report import build_report

    rep = build_report(nulls_table, qi=["a", "b"], nulls="drop", weight=weight,
                       population=population).to_dict()
    sec = rep["risk"]
    assert sec["status"] == "ok", sec.get("reason")
    assert sec["audit"] == _risk_dict(nulls_table, weight=weight, nulls="drop",
                                      population=population)
    assert rep["verdict"]["exit_code"] in (0, 1)


def test_cli_audit_and_report_under_nulls_drop(tmp_path, nulls_table):
    from fastpriv.cli import main

    p = tmp_path / "data.parquet"
    pq.write_table(nulls_table, p)
    # no sensitive column: exited 2, the risk section refusing the classes' own policy
    js = tmp_path / "a.json"
    rc = main(["audit", str(p), "--qi", "a", "b", "--nulls", "drop", "--json", str(js)])
    d = json.loads(js.read_text())
    assert rc in (0, 1) and rc == d["verdict"]["exit_code"]
    assert d["risk"]["audit"] == _risk_dict(nulls_table, nulls="drop")
    # weighted, nulls in the QI columns: exited 2 (the kept rows of a weighted release)
    for weight in ([], ["--weight", "n"]):
        js = tmp_path / f"r{len(weight)}.json"
        rc = main(["report", str(p), "--sensitive", "s", "--qi", "a", "b", "--nulls", "drop",
                   *weight, "-o", str(tmp_path / f"r{len(weight)}.html"), "--json", str(js)])
        d = json.loads(js.read_text())
        assert rc in (0, 1) and rc == d["verdict"]["exit_code"]
        assert d["risk"]["audit"] == _risk_dict(nulls_table, nulls="drop",
                                                weight=weight[-1] if weight else None)
        assert d["input"]["n_rows_dropped_for_nulls"] == _nulls_in(nulls_table, ["a", "b", "s"])


def test_cli_skyline_sigma_none_is_the_null_value_not_every_value(tmp_path, capsys):
    """``--sigma None`` on a table holding nulls names the null value: one skyline, one
    value checked (it read as 'every value' and checked all four)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastpriv.cli import main

    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"g": [1, 1, 1, 2, 2, 2, 3, 3],
                             "s": ["x", "y", None, "x", "z", None, "y", "x"]}), src)
    out = tmp_path / "s.json"
    rc = main(["skyline", str(src), "--group", "g", "--sensitive", "s", "--nulls", "value",
               "--sigma", "None", "--c", "0.9", "--point", "1,1,1,0.9", "--json", str(out)])
    capsys.readouterr()
    payload = json.loads(out.read_text())
    assert rc == 1 and list(payload["skylines"]) == ["None"]
    assert [p["sigma"] for p in payload["check"]["points"]] == [None]
