"""The Python API takes every criterion ``fastpriv anonymize`` takes (issue 48).

Every criterion flag of ``fastpriv anonymize`` (``--max-avg-risk`` …) is a keyword of the
same name (``max_avg_risk=``) of ``lattice_search`` and ``mondrian``, passed through the one
mapping, :func:`fastpriv.predicates.criteria_from`: a keyword gives the release
``predicate=criteria_from(...)`` gives. ``fp.Hierarchy`` is the hierarchy class.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv.anonymize import lattice_search, mondrian
from fastpriv.cli import build_parser
from fastpriv.errors import InputError
from fastpriv.predicates import criteria_from

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
#: criteria_from's keywords but ``predicate`` (the object itself, not a flag)
CRITERION_KEYWORDS = [p for p in inspect.signature(criteria_from).parameters
                      if p != "predicate"]
ENTRY_POINTS = {"fastpriv.anonymize.lattice_search": lattice_search,
                "fastpriv.anonymize.mondrian": mondrian}


def _cli_criterion_dests() -> list[str]:
    """The destinations of ``fastpriv anonymize``'s criterion flags."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    anon = sub.choices["anonymize"]
    group = next(g for g in anon._action_groups if g.title.startswith("criteria"))
    return [a.dest for a in group._group_actions]


def test_every_cli_criterion_flag_is_a_criteria_from_keyword():
    dests = _cli_criterion_dests()
    assert {"max_risk", "max_avg_risk", "max_records_at_risk", "risk_threshold",
            "max_uniqueness", "population", "uniqueness_model", "alpha"} <= set(dests)
    assert set(dests) <= set(CRITERION_KEYWORDS)


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_criterion_keyword_is_a_keyword_of_the_anonymizer(name):
    params = inspect.signature(ENTRY_POINTS[name]).parameters
    for kw in [*CRITERION_KEYWORDS, "predicate"]:
        assert kw in params, f"{name} does not take {kw}="
        assert params[kw].kind is params[kw].KEYWORD_ONLY
        assert params[kw].default == inspect.signature(criteria_from).parameters[kw].default


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_api_doc_lists_every_criterion_keyword(name):
    row = next(line for line in DOC.read_text(encoding="utf-8").splitlines()
               if line.startswith(f"| `{name}` |"))
    listed = {k.strip() for k in re.match(r"^\| `[^`]+` \| `([^`]*)`", row).group(1)
              .split(",")}
    assert set(CRITERION_KEYWORDS) <= listed


def test_hierarchy_is_exported_and_documented():
    from fastpriv.hierarchies import Hierarchy

    assert fp.Hierarchy is Hierarchy and "Hierarchy" in fp.__all__
    assert "`fastpriv.Hierarchy`" in DOC.read_text(encoding="utf-8")
    h = fp.Hierarchy.intervals(pa.array([1, 7, 12]), [5, "*"], name="a")
    assert h.height == 3


#: one keyword set per criterion the CLI knows, each also given alone
KEYWORD_CASES = [
    dict(max_risk=0.2),
    dict(max_avg_risk=0.3),
    dict(max_records_at_risk=0.1),
    dict(max_records_at_risk=0.2, risk_threshold=0.4),
    dict(max_uniqueness=0.05, population=400),
    dict(max_uniqueness=0.05, population=400, uniqueness_model="pitman"),
    dict(alpha=0.8),
    dict(min_size=2, l=2),
    dict(l=2, l_kind="entropy"),
    dict(l=2, l_kind="recursive", c_l=3),
    dict(t=0.4, t_ordered=True),
    dict(c=0.9, k=1, knowledge_kind="negations"),
    dict(min_size=3, max_avg_risk=0.3),
]


def _table(seed: int, n: int = 80) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"a": rng.integers(0, 12, n), "b": rng.choice(["x", "y", "z"], n),
                     "s": rng.choice(["p", "q", "r", "u"], n)})


HIER = {"a": [2, 4, "*"], "b": "suppress"}


@pytest.mark.parametrize("kw", KEYWORD_CASES, ids=lambda kw: ",".join(kw))
@settings(max_examples=6, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_lattice_keywords_equal_criteria_from(kw, seed):
    t = _table(seed)
    got = lattice_search(t, qi=["a", "b"], sensitive="s", hierarchies=HIER, **kw)
    want = lattice_search(t, qi=["a", "b"], sensitive="s", hierarchies=HIER,
                          predicate=criteria_from(**kw))
    assert got.criterion == want.criterion == criteria_from(**kw).name
    assert got.best == want.best and got.minimal == want.minimal
    assert got.scores == want.scores
    if got.anonymized is not None:
        assert np.array_equal(got.group_ids, want.group_ids)


@pytest.mark.parametrize("kw", KEYWORD_CASES, ids=lambda kw: ",".join(kw))
@settings(max_examples=4, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_mondrian_keywords_equal_criteria_from(kw, seed):
    t = _table(seed)
    try:
        want = mondrian(t, qi=["a", "b"], sensitive="s", predicate=criteria_from(**kw))
    except InputError as exc:          # the whole table fails: the keywords say the same
        with pytest.raises(InputError, match=re.escape(str(exc))):
            mondrian(t, qi=["a", "b"], sensitive="s", **kw)
        return
    got = mondrian(t, qi=["a", "b"], sensitive="s", **kw)
    assert got.params["criterion"] == want.params["criterion"]
    assert np.array_equal(got.group_ids, want.group_ids)
    assert got.generalized.equals(want.generalized)


def test_readme_risk_keywords_run_on_adult():
    """The README's call, which raised TypeError: lattice_search(..., max_avg_risk=0.01)."""
    adult = fp.datasets.load_adult()
    res = lattice_search(adult, qi=["age", "sex", "race"], max_avg_risk=0.01)
    rel = res.release
    assert rel.n_groups / rel.n_rows <= 0.01
    assert res.criterion == "average-risk(max=0.01)"
    res = mondrian(adult, qi=["age", "sex", "race"], max_risk=0.1)
    assert res.release.sizes.min() >= 10


@pytest.mark.parametrize("fn", [lattice_search, mondrian])
@pytest.mark.parametrize("kw, word", [
    (dict(min_size=2, risk_threshold=0.3), "risk_threshold"),
    (dict(min_size=2, population=100), "population"),
    (dict(min_size=2, uniqueness_model="snb"), "uniqueness_model"),
    (dict(max_uniqueness=0.1), "population"),
    (dict(max_avg_risk=1.5), "max_avg_risk"),
])
def test_bad_criterion_keywords_name_the_parameter(fn, kw, word):
    t = _table(0)
    extra = {"hierarchies": HIER} if fn is lattice_search else {}
    with pytest.raises(InputError, match=word):
        fn(t, qi=["a", "b"], sensitive="s", **extra, **kw)
