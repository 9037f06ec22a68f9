"""Classical models: kernels vs plain-Python oracles, hand-computed cases, Adult vs pandas."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv import Release, classic
from tests import naive
from tests.strategies import svpi_groups

groups_st = svpi_groups(max_people=30, max_groups=6, max_values=6)


@pytest.mark.slow
@given(groups_st)
def test_against_oracles(groups):
    rel = Release.from_groups(groups)
    assert classic.k_anonymity(rel) == naive.k_anonymity(groups)
    a, k = classic.alpha_k_anonymity(rel)
    assert a == pytest.approx(float(naive.alpha(groups)), rel=1e-12) and k == rel.sizes.min()
    assert classic.l_diversity(rel) == naive.distinct_l(groups)
    assert classic.entropy_l_diversity(rel) == pytest.approx(naive.entropy_l(groups), rel=1e-12)
    for l in (1, 2, 3):
        expect = naive.recursive_c(groups, l)
        got = classic.recursive_cl_diversity(rel, l=l)
        if expect == math.inf:
            assert got == math.inf
        else:
            assert got == pytest.approx(float(expect), rel=1e-12)
    assert classic.t_closeness(rel) == pytest.approx(float(naive.t_closeness(groups)), abs=1e-12)
    beta, delta = classic.per_group(rel, "beta_likeness"), classic.per_group(rel, "delta_disclosure")
    by_label = {lab: g for g, lab in enumerate(rel.group_labels)}
    for i, (b, d) in enumerate(zip(naive.beta_per_group(groups), naive.delta_per_group(groups),
                                   strict=True)):
        g = by_label[i]
        assert beta[g] == pytest.approx(float(b), rel=1e-12, abs=1e-12)
        assert delta[g] == pytest.approx(d, rel=1e-12, abs=1e-12)
    assert classic.t_closeness(rel, ordered=True) == pytest.approx(
        float(naive.t_closeness(groups, ordered=True)), abs=1e-12)


@pytest.mark.slow
@given(groups_st, st.permutations("abcdef"))
def test_ordered_emd_with_explicit_order(groups, perm):
    rel = Release.from_groups(groups)
    order = [v for v in perm if v in rel.values]
    got = classic.t_closeness(rel, order=order)
    assert got == pytest.approx(float(naive.t_closeness(groups, ordered=True, order=order)),
                                abs=1e-12)


def test_hand_computed():
    # group sizes 3, 2, 4; values flu/hiv/cancer/a/b/c
    rel = Release.from_groups([["flu", "flu", "hiv"], ["flu", "cancer"], ["a", "b", "c", "a"]])
    assert classic.k_anonymity(rel) == 2
    assert classic.alpha_k_anonymity(rel) == (pytest.approx(2 / 3), 2)
    assert classic.l_diversity(rel) == 2
    # entropy of (2/3, 1/3): exp(H) = 3 / 2^(2/3)
    assert classic.entropy_l_diversity(rel) == pytest.approx(3 / 2 ** (2 / 3))
    assert classic.recursive_cl_diversity(rel, l=2) == pytest.approx(2.0)
    assert classic.recursive_cl_diversity(rel, l=3) == math.inf
    # Q = flu 3/9, hiv 1/9, cancer 1/9, a 2/9, b 1/9, c 1/9; group 0: P = flu 2/3, hiv 1/3
    # ½(|2/3-1/3| + |1/3-1/9| + 1/9 + 2/9 + 1/9 + 1/9) = ½(1/3 + 2/9 + 5/9) = 5/9
    assert classic.t_closeness(rel) == pytest.approx(5 / 9)


def test_single_value_release_is_degenerate_but_defined():
    rel = Release.from_groups([["x", "x"], ["x"]])
    assert classic.l_diversity(rel) == 1
    assert classic.entropy_l_diversity(rel) == pytest.approx(1.0)
    assert classic.t_closeness(rel) == 0.0
    assert classic.t_closeness(rel, ordered=True) == 0.0


def test_violations_and_per_group():
    rel = Release.from_groups([["a", "a", "b"], ["a"], ["a", "b", "c", "d"]])
    v = classic.violations(rel, "k_anonymity", 3)
    assert v.groups.tolist() == [1] and v.labels == [1] and len(v) == 1
    v = classic.violations(rel, "l_diversity", 3)
    assert v.groups.tolist() == [1, 0]  # worst (ℓ=1) first
    v = classic.violations(rel, "recursive_cl_diversity", 2.0, l=2)  # ratio >= c fails
    assert v.groups.tolist() == [1, 0]  # inf first, then 2/1
    assert classic.per_group(rel, "alpha_k_anonymity").tolist() == pytest.approx([2 / 3, 1.0, 0.25])
    d = v.to_dict()
    assert d["count"] == 2 and d["model"] == "recursive_cl_diversity"
    with pytest.raises(ValueError, match="model must be one of"):
        classic.per_group(rel, "kk")
    with pytest.raises(ValueError, match="needs l"):
        classic.per_group(rel, "recursive_cl_diversity")
    with pytest.raises(ValueError, match="l must be >= 1"):
        classic.recursive_cl_diversity(rel, l=0)
    with pytest.raises(TypeError, match="fastpriv.Release"):
        classic.k_anonymity([["a"]])
    with pytest.raises(ValueError, match="not in the order"):
        classic.t_closeness(rel, order=["a", "b"])


def test_audit_reports_every_model():
    rel = Release.from_groups([["a", "a", "b"], ["a", "c"]])
    res = classic.audit(rel, l=2)
    keys = {"k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity",
            "recursive_cl_diversity", "t_closeness", "t_closeness_ordered", "beta_likeness",
            "delta_disclosure"}
    assert set(res.models) == keys
    assert res.achieved("k_anonymity") == 2 and res.achieved("recursive_cl_diversity") == pytest.approx(2.0)
    assert res.models["k_anonymity"]["worst_label"] == 1


@pytest.mark.slow
@given(groups_st, st.integers(1, 4), st.permutations("abcdef"))
def test_fused_audit_equals_the_one_model_kernels(groups, l, perm):
    """classic.audit reads the profile once (fused kernel): same numbers, same worst groups."""
    rel = Release.from_groups(groups)
    order = [v for v in perm if v in set(rel.values)]
    res = classic.audit(rel, l=l, order=order)
    for model, _, params in classic.AUDIT_ROWS:
        key = model
        kw = {"l": l} if params is None else dict(params)
        if kw.get("ordered"):
            kw["order"] = order
        vals = classic.per_group(rel, model, **kw)
        worst = (np.argmax(vals) if classic.WORSE_IF_LARGER[model] else np.argmin(vals))
        assert res.models[key]["value"] == vals[worst], key          # bit-identical
        assert res.models[key]["worst_group"] == worst, key


@pytest.mark.slow
@given(groups_st, st.integers(1, 4), st.integers(1, 9))
def test_parallel_fused_audit_is_bit_identical(groups, l, chunks):
    """The multi-threaded fused kernel (chunks of groups, own scratch each; used by
    ``audit`` from 65,536 groups on) returns exactly the sequential kernel's array —
    also with more chunks than groups."""
    from fastpriv._kernels import classic as K

    rel = Release.from_groups(groups)
    args = (*classic._arrays(rel), classic._global_distribution(rel),
            classic._order_rank(rel, None), l)
    seq = K.audit_columns(*args)
    par = K.audit_columns_parallel(*args, chunks)
    assert np.array_equal(seq, par, equal_nan=True)


@pytest.mark.slow
@settings(max_examples=60)
@given(groups_st, st.integers(1, 4), st.integers(1, 5), st.integers(1, 9), st.data())
def test_audit_worst_is_the_argmax_of_every_row(groups, l, block, chunks, data):
    """Blocks and chunks of any size (also past the groups) pick what argmax/argmin of the
    whole rows of audit_columns pick: the first among equal values, exp(H) for entropy."""
    from fastpriv._kernels import classic as K

    rel = Release.from_groups(groups)
    larger = data.draw(st.lists(st.booleans(), min_size=6, max_size=6))
    args = (*classic._arrays(rel), classic._global_distribution(rel),
            classic._order_rank(rel, None), l)
    cols = K.audit_columns(*args)
    cols[K.ENTROPY] = np.exp(cols[K.ENTROPY])
    want = [int(np.argmax(r) if lg else np.argmin(r)) for r, lg in zip(cols, larger, strict=True)]
    old = K._AUDIT_BLOCK
    try:
        K._AUDIT_BLOCK = block
        value, group = K.audit_worst(*args, larger, chunks)
    finally:
        K._AUDIT_BLOCK = old
    assert group.tolist() == want
    assert value.tolist() == [cols[m, g] for m, g in enumerate(want)]


def test_first_worst_keeps_the_earlier_group_on_ties_and_the_first_nan():
    from fastpriv._kernels.classic import _first_worst

    nan = float("nan")
    assert _first_worst(None, (1.0, 5), True) == (1.0, 5)
    assert _first_worst((1.0, 2), (1.0, 5), True) == (1.0, 2)
    assert _first_worst((1.0, 2), (3.0, 5), True) == (3.0, 5)
    assert _first_worst((1.0, 2), (3.0, 5), False) == (1.0, 2)
    assert _first_worst((1.0, 2), (nan, 5), False)[1] == 5
    assert _first_worst((nan, 2), (nan, 5), True)[1] == 2
    assert _first_worst((nan, 2), (0.0, 5), False)[1] == 2


def test_audit_takes_the_parallel_kernel_on_large_releases(monkeypatch):
    rel = Release.from_groups([["a", "b", "b"], ["a", "c"], ["c", "c", "b"]] * 10)
    before = classic.audit(rel)
    monkeypatch.setattr(classic, "_PARALLEL_MIN_GROUPS", 1)
    from fastpriv._threads import n_jobs

    with n_jobs(2):
        after = classic.audit(rel)
    assert after.models == before.models


def test_mvpi_distributions_over_occurrences():
    rel = Release.from_groups([{"a": 2, "b": 1}, {"a": 1}], sizes=[2, 4], case="mvpi-set")
    assert classic.k_anonymity(rel) == 2
    assert classic.alpha_k_anonymity(rel)[0] == pytest.approx(1.0)  # 2 of 2 individuals have a
    assert classic.l_diversity(rel) == 1


def test_beta_and_delta_match_definitions():
    groups = [["a", "a", "b"], ["b", "c"]]
    rel = Release.from_groups(groups)
    q = {"a": Fraction(2, 5), "b": Fraction(2, 5), "c": Fraction(1, 5)}
    beta = max((Fraction(n, len(g)) - q[v]) / q[v] for g in groups for v, n in
               {x: g.count(x) for x in g}.items())
    delta = max(abs(math.log(Fraction(g.count(v), len(g)) / q[v])) for g in groups for v in g)
    assert classic.beta_likeness(rel) == pytest.approx(float(beta))
    assert classic.delta_disclosure(rel) == pytest.approx(delta)


def test_adult_against_independent_pandas():
    """Classical values on Adult (QI: sex, race; sensitive occupation) vs a pandas groupby."""
    from fastpriv.datasets import load_adult

    df = load_adult().to_pandas()
    rel = Release.from_table(load_adult(), sensitive="occupation", qi=["sex", "race"])
    counts = df.groupby(["sex", "race"])["occupation"].value_counts()
    sizes = df.groupby(["sex", "race"]).size()
    assert classic.k_anonymity(rel) == sizes.min()
    assert classic.l_diversity(rel) == df.groupby(["sex", "race"])["occupation"].nunique().min()
    p = counts / counts.groupby(level=[0, 1]).transform("sum")
    ent = -(p * np.log(p)).groupby(level=[0, 1]).sum()
    assert classic.entropy_l_diversity(rel) == pytest.approx(np.exp(ent.min()), rel=1e-12)
    q = df["occupation"].value_counts(normalize=True)
    tvals = []
    for _, grp in df.groupby(["sex", "race"]):
        pg = grp["occupation"].value_counts(normalize=True).reindex(q.index, fill_value=0)
        tvals.append(0.5 * (pg - q).abs().sum())
    assert classic.t_closeness(rel) == pytest.approx(max(tvals), abs=1e-12)
    top = counts.groupby(level=[0, 1]).max() / sizes
    assert classic.alpha_k_anonymity(rel)[0] == pytest.approx(top.max(), rel=1e-12)
