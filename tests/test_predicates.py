"""Predicates: built-in criteria against brute-force oracles, exact ties, monotonicity under
merging groups, combinators and user criteria."""

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastpriv.predicates as P
from fastpriv import Release, classic
from tests import naive
from tests.naive_anonymize import ck_negations_disclosure, group_passes
from tests.strategies import svpi_groups

CRITERIA = [
    (lambda: P.KAnonymity(2), ("k", 2)),
    (lambda: P.KAnonymity(3), ("k", 3)),
    (lambda: P.DistinctLDiversity(2), ("distinct", 2)),
    (lambda: P.EntropyLDiversity(2), ("entropy", 2)),
    (lambda: P.EntropyLDiversity(1.5), ("entropy", 1.5)),
    (lambda: P.RecursiveCLDiversity(2, 2), ("recursive", 2, 2)),
    (lambda: P.RecursiveCLDiversity(Fraction(3, 2), 2), ("recursive", Fraction(3, 2), 2)),
    (lambda: P.TCloseness(0.25), ("t", Fraction(1, 4))),
    (lambda: P.TCloseness(0.3, ordered=True), ("t_ordered", Fraction(3, 10))),
    (lambda: P.CKSafety(0.75, 1, "negations"), ("ck_neg", Fraction(3, 4), 1)),
    (lambda: P.CKSafety(Fraction(2, 3), 0, "negations"), ("ck_neg", Fraction(2, 3), 0)),
    (lambda: P.AlphaKAnonymity(0.5), ("alpha", Fraction(1, 2))),
]


def _q(groups):
    total = [v for g in groups for v in g]
    return {v: Fraction(total.count(v), len(total)) for v in set(total)}


@pytest.mark.slow
@given(groups=svpi_groups(max_people=9, max_groups=4, max_values=4))
def test_group_ok_matches_the_oracle(groups):
    rel = Release.from_groups(groups)
    q = _q(groups)
    for make, oracle in CRITERIA:
        crit = make()
        ok = crit.group_ok(rel)
        want = [group_passes(g, oracle, q) for g in groups]  # groups keep their order
        assert ok.tolist() == want, (crit.name, groups)
        assert crit(rel) == all(want)


@pytest.mark.slow
@given(groups=svpi_groups(max_people=9, max_groups=4, max_values=4),
       l=st.integers(1, 4), k=st.integers(1, 5))
def test_achieved_parameters_agree_with_classic(groups, l, k):
    rel = Release.from_groups(groups)
    assert P.KAnonymity(k)(rel) == (classic.k_anonymity(rel) >= k)
    assert P.DistinctLDiversity(l)(rel) == (classic.l_diversity(rel) >= l)
    assert P.KAnonymity(k).value(rel) == naive.k_anonymity(groups)
    assert P.DistinctLDiversity(l).value(rel) == naive.distinct_l(groups)


def test_exact_ties():
    uniform = Release.from_groups([["a", "b"], ["a", "b", "c", "d"]])
    assert P.EntropyLDiversity(2)(uniform)          # H = log 2 exactly: passes
    assert not P.EntropyLDiversity(2.0001)(uniform)
    rel = Release.from_groups([["a", "a", "b", "c"]])
    # recursive (c, l=2): r1 = 2 < c (1 + 1) ⇔ c > 1 (strict)
    assert not P.RecursiveCLDiversity(1, 2)(rel)
    assert P.RecursiveCLDiversity(1.0000001, 2)(rel)
    # (c,k)-negations: max disclosure 4/5 against c = 0.8 is unsafe (strict <)
    r45 = Release.from_groups([["a"] * 4 + ["b"]])
    assert not P.CKSafety(0.8, 0, "negations")(r45)
    assert not P.CKSafety(Fraction(4, 5), 0, "negations")(r45)
    assert P.CKSafety(Fraction(4, 5) + Fraction(1, 10**12), 0, "negations")(r45)
    # t equal to the EMD passes
    two = Release.from_groups([["a", "a"], ["b", "b"]])
    assert P.TCloseness(0.5)(two) and not P.TCloseness(0.4999)(two)
    # alpha: 4/5 ≤ 0.8
    assert P.AlphaKAnonymity(0.8)(r45) and not P.AlphaKAnonymity(0.79)(r45)


@pytest.mark.slow
@given(groups=svpi_groups(max_people=9, max_groups=4, max_values=4), k=st.integers(0, 3))
def test_ck_negations_against_the_formula(groups, k):
    rel = Release.from_groups(groups)
    d = ck_negations_disclosure(groups, k)
    for c in (Fraction(1, 2), Fraction(2, 3), Fraction(3, 4), Fraction(1)):
        assert P.CKSafety(c, k, "negations")(rel) == (d < c)


def _merge(groups, rnd):
    """A coarser release: random unions of groups."""
    idx = list(range(len(groups)))
    rnd.shuffle(idx)
    out, cur = [], []
    for i in idx:
        cur = cur + groups[i]
        if rnd.random() < 0.5:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


@pytest.mark.slow
@given(groups=svpi_groups(max_people=10, max_groups=5, max_values=4), seed=st.integers(0, 99))
def test_monotone_under_merging_groups(groups, seed):
    fine = Release.from_groups(groups)
    coarse = Release.from_groups(_merge(groups, random.Random(seed)))
    for make, _ in CRITERIA:
        crit = make()
        assert crit.monotone
        if crit(fine):
            assert crit(coarse), (crit.name, groups)


def test_union_monotone_flags():
    assert P.KAnonymity(2).union_monotone and P.DistinctLDiversity(2).union_monotone
    assert not P.EntropyLDiversity(2).union_monotone
    assert (P.KAnonymity(2) & P.DistinctLDiversity(2)).union_monotone
    assert not (P.KAnonymity(2) & P.TCloseness(0.2)).union_monotone


def test_all_of_and_function_criteria():
    rel = Release.from_groups([["a", "b", "c"], ["a", "b"]])
    both = P.KAnonymity(2) & P.DistinctLDiversity(2)
    assert isinstance(both, P.AllOf) and both.local and both(rel)
    assert both.group_ok(rel).tolist() == [True, True]
    assert not (both & P.KAnonymity(3))(rel)
    assert len((both & P.KAnonymity(3)).parts) == 3
    user = P.FunctionCriterion(lambda r: r.n_groups <= 2, "at-most-2-groups")
    assert user.name == "at-most-2-groups" and user(rel)
    mixed = both & user
    assert not mixed.local and mixed(rel)
    assert P.as_criterion([P.KAnonymity(2), lambda r: True])(rel)
    assert isinstance(P.as_criterion(lambda r: True), P.FunctionCriterion)
    assert not P.FunctionCriterion(lambda r: True, monotone=False).monotone
    with pytest.raises(TypeError, match="predicate must be"):
        P.as_criterion(3)
    with pytest.raises(ValueError, match="not every part"):
        mixed.rows()
    assert isinstance(P.Predicate, type) and isinstance(P.KAnonymity(2), P.Predicate)
    assert both.to_dict()["parts"][0]["k"] == 2
    assert both.value(rel) == {"k-anonymity(k=2)": 2, "distinct-l-diversity(l=2)": 2}


def test_subclassing_criterion():
    class MaxShare(P.Criterion):
        name = "max-group-share"

        def __init__(self, share):
            self.share = share

        def __call__(self, rel):
            return rel.sizes.max() <= self.share * rel.n_rows

    rel = Release.from_groups([["a", "b", "c"], ["a"]])
    assert not MaxShare(0.5)(rel) and MaxShare(0.75)(rel)


def test_criteria_from():
    c = P.criteria_from(min_size=3, l=2, l_kind="entropy", t=0.3)
    assert [type(p).__name__ for p in c.parts] == ["KAnonymity", "EntropyLDiversity",
                                                  "TCloseness"]
    assert isinstance(P.criteria_from(min_size=2), P.KAnonymity)
    assert isinstance(P.criteria_from(l=2, l_kind="recursive", c_l=3), P.RecursiveCLDiversity)
    assert isinstance(P.criteria_from(c=0.5, k=2, knowledge_kind="negations"), P.LocalCriterion)
    with pytest.raises(ValueError, match="no privacy criterion"):
        P.criteria_from()
    with pytest.raises(ValueError, match="needs c_l"):
        P.criteria_from(l=2, l_kind="recursive")
    with pytest.raises(ValueError, match="both c and k"):
        P.criteria_from(c=0.5)
    with pytest.raises(ValueError, match="c_l given without l"):
        P.criteria_from(min_size=2, c_l=2)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: P.KAnonymity(0), ValueError, "k must be >= 1"),
    (lambda: P.KAnonymity(2.5), TypeError, "k must be an integer"),
    (lambda: P.EntropyLDiversity(0.5), ValueError, "l must be >= 1"),
    (lambda: P.RecursiveCLDiversity(0, 2), ValueError, "c must be > 0"),
    (lambda: P.TCloseness(1.5), ValueError, r"t must be in \[0, 1\]"),
    (lambda: P.CKSafety(0, 2), ValueError, "c must be in"),
    (lambda: P.CKSafety(0.5, 2, "atoms"), ValueError, "knowledge_kind must be one of"),
    (lambda: P.TCloseness(0.2, order=["a", "a"]), ValueError, "distinct"),
])
def test_parameter_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_release_type_is_checked():
    with pytest.raises(TypeError, match="fastpriv.Release"):
        P.KAnonymity(2)([["a"]])


def test_ordered_t_closeness_with_explicit_order():
    rel = Release.from_groups([["lo", "lo", "mid"], ["hi", "hi", "mid"]])
    order = ["lo", "mid", "hi"]
    t_star = classic.t_closeness(rel, order=order)
    assert P.TCloseness(t_star, order=order)(rel)
    assert not P.TCloseness(t_star - 1e-6, order=order)(rel)
    groups = [["lo", "lo", "mid"], ["hi", "hi", "mid"]]
    assert math.isclose(float(naive.t_closeness(groups, ordered=True, order=order)), t_star)
    with pytest.raises(ValueError, match="not in the given order"):
        P.TCloseness(0.1, order=["lo", "mid"])(rel)


def test_kernel_spec_ratio_fallback():
    from fastpriv.predicates import _ratio

    assert _ratio(0.8) == (4, 5)
    assert _ratio(Fraction(2, 3)) == (2, 3)
    assert _ratio(3) == (3, 1)
    assert _ratio(Fraction(1, 3**40)) == (0, 0)
    rel = Release.from_groups([["a"] * 2 + ["b"]])
    # a threshold too fine for the exact path falls back to float comparison
    assert P.CKSafety(Fraction(2, 3) + Fraction(1, 3**40), 0, "negations")(rel) is False


def test_group_ok_with_external_reference_distribution():
    rel = Release.from_groups([["a", "a"], ["a", "b"]])
    q = np.array([0.5, 0.5])
    assert P.TCloseness(0.5).group_ok(rel, q).tolist() == [True, True]
    assert P.TCloseness(0.4).group_ok(rel, q).tolist() == [False, True]


# ---------------------------------------------------------------------- worst-case models
@pytest.mark.slow
@given(groups=svpi_groups(max_people=8, max_groups=3, max_values=4), k=st.integers(0, 3),
       seed=st.integers(0, 99))
def test_ck_safety_implications_uses_ck_safety_and_is_monotone(groups, k, seed):
    from fastpriv import ck_safety

    rel = Release.from_groups(groups)
    coarse = Release.from_groups(_merge(groups, random.Random(seed)))
    d = ck_safety.max_disclosure(rel, k=k, exact=True).value
    for c in (Fraction(1, 2), Fraction(2, 3), 0.8, Fraction(1)):
        crit = P.CKSafety(c, k)
        assert not crit.local and crit.monotone
        assert crit(rel) == ck_safety.is_safe(rel, c=c, k=k) == (d < Fraction(repr(c)) if
                                                              isinstance(c, float) else d < c)
        if crit(rel):
            assert crit(coarse)  # Theorem 14
    assert P.CKSafety(0.5, k).value(rel) == ck_safety.max_disclosure(rel, k=k).value


@pytest.mark.slow
@given(groups=svpi_groups(max_people=9, max_groups=4, max_values=4), k=st.integers(0, 3))
def test_ck_negations_kernel_equals_ck_safety(groups, k):
    from fastpriv import ck_safety

    rel = Release.from_groups(groups)
    d = ck_safety.max_disclosure(rel, k=k, knowledge_kind="negations", exact=True).value
    assert d == ck_negations_disclosure(groups, k)
    for c in (Fraction(1, 2), 0.6, Fraction(2, 3), 0.75, Fraction(1)):
        crit = P.CKSafety(c, k, "negations")
        assert crit.local
        assert crit(rel) == ck_safety.is_safe(rel, c=c, k=k, knowledge_kind="negations")


@pytest.mark.slow
@given(groups=svpi_groups(max_people=8, max_groups=3, max_values=3), l=st.integers(0, 2),
       k=st.integers(0, 2), m=st.integers(0, 2), seed=st.integers(0, 99))
def test_skyline_point_uses_skyline_and_is_monotone_for_svpi(groups, l, k, m, seed):
    from fastpriv import skyline

    rel = Release.from_groups(groups)
    coarse = Release.from_groups(_merge(groups, random.Random(seed)))
    for sigma in (None, "a"):
        for c in (0.5, 0.75, 1):
            crit = P.SkylinePoint(sigma, l, k, m, c)
            sig = [s for s in (rel.values if sigma is None else ["a"]) if s in rel.values]
            want = all(skyline.check(rel, skylines={s: [(l, k, m, c)]}).safe for s in sig)
            assert crit(rel) == want
            if crit(rel):
                assert crit(coarse)  # Theorem 4 (SVPI)
    if "a" in rel.values:
        bp = skyline.breach_probability(rel, sigma="a", l=l, k=k, m=m).value
        assert P.SkylinePoint("a", l, k, m, 0.5).value(rel) == bp
    else:  # an absent value cannot be disclosed (C5)
        assert P.SkylinePoint("a", l, k, m, 0.01)(rel)
        assert P.SkylinePoint("a", l, k, m, 0.5).value(rel) == 0.0


def test_skyline_point_refuses_mvpi():
    rel = Release.from_groups([{"a": 1, "b": 1}], sizes=[2], case="mvpi-set")
    with pytest.raises(ValueError, match="SVPI releases only"):
        P.SkylinePoint("a", 0, 1, 0, 0.5)(rel)


def test_ck_negations_is_a_local_ck_safety():
    neg = P.CKSafety(0.5, 2, "negations")
    assert isinstance(neg, P.CKSafety) and isinstance(neg, P.LocalCriterion)
    assert neg.local and neg.knowledge_kind == "negations" and neg.k == 2
    imp = P.CKSafety(0.5, 2)
    assert isinstance(imp, P.CKSafety) and not imp.local


def _martin_vectors():
    import json
    import os
    from pathlib import Path

    here = Path(__file__).resolve().parent
    spec = Path(os.environ.get("FASTPRIV_SPEC_DIR",
                               Path(__file__).resolve().parents[2] / "shared" / "spec"))
    local = here / "vectors" / "martin.jsonl"
    path = local if local.exists() else spec / "vectors" / "martin.jsonl"
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [v for v in rows if v["kind"] == "max_disclosure"]


@pytest.mark.parametrize("vec", _martin_vectors(), ids=lambda v: v["id"])
def test_ck_predicates_on_the_martin_vectors(vec):
    rel = Release.from_groups(vec["input"]["buckets"])
    k = vec["input"]["k"]
    for knowledge, key in (("implications", "max_disclosure"),
                           ("negations", "negated_atoms_max_disclosure")):
        d = Fraction(vec["expected"][key]["frac"])
        assert not P.CKSafety(d, k, knowledge)(rel)  # disclosure == c is unsafe
        if d < 1:
            assert P.CKSafety(d + Fraction(1, 10**6), k, knowledge)(rel)
