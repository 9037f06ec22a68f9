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
