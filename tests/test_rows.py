"""The row-level view of a Release (fastpriv.rows) and weighted rows in the row-level models.

Oracle for weights: the same table expanded to one row per unit (``np.repeat``); every
row-level model must give the expanded table's answer from the aggregate.
"""

import copy
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fastpriv import InputError, Release
from fastpriv import foreground as fg
from fastpriv import robustness as rb
from fastpriv.knowledge import Knowledge
from fastpriv.metrics import average_delta
from fastpriv.release import release_with_rows
from fastpriv.rows import mine_reliable_signatures


def _table(seed: int, n: int, n_groups: int) -> tuple[pa.Table, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = pa.table({"a": rng.integers(0, 3, n), "b": rng.choice(["x", "y"], n),
                  "g": rng.integers(0, n_groups, n),
                  "s": rng.choice(["p", "q", "r"], n)})
    w = rng.integers(1, 4, n)
    return t.append_column("w", pa.array(w)), w


def _expand(t: pa.Table, w: np.ndarray) -> pa.Table:
    """Oracle: one row per unit (plain NumPy repeat)."""
    return t.take(pa.array(np.repeat(np.arange(t.num_rows), w))).drop_columns(["w"])


# ---------------------------------------------------------------------- the view itself
def test_view_holds_codes_labels_groups_and_sensitive_codes():
    t = pa.table({"a": [3, 1, 3, 2], "b": ["u", "v", "u", "u"], "g": [1, 0, 1, 0],
                  "s": ["y", "x", "x", "y"]})
    rel = Release.from_table(t, qi=["a", "b"], group="g", sensitive="s")
    v = rel.rows
    assert v.qi == ("a", "b") and v.n_rows == 4 and v.n_units == 4 and v.weight is None
    assert v.qi_labels["a"].to_pylist() == [1, 2, 3]
    assert v.qi_codes["a"].tolist() == [2, 0, 2, 1] and v.qi_codes["a"].dtype == np.int32
    assert v.row_group.tolist() == rel.row_group.tolist() == [1, 0, 1, 0]
    assert [rel.values[c] for c in v.sensitive] == t.column("s").to_pylist()
    goff, order = v.group_order
    # within a group, units in content order (QI codes, sensitive value, row): rows 2 and
    # 0 of group 1 have equal QI values and sensitive x < y (tests/test_engines_ties.py)
    assert goff.tolist() == [0, 2, 4] and order.tolist() == [1, 3, 2, 0]
    assert v.column("b").to_pylist() == t.column("b").to_pylist()
    # the same release as without the view; counts built from counts have no view
    assert rel.equals(Release.from_table(t, group="g", sensitive="s"))
    assert Release.from_counts(rel.to_counts(), group="g", sensitive="value").rows is None


def test_weighted_view_orders_units():
    t = pa.table({"a": [1, 2, 1], "g": [0, 1, 0], "s": ["x", "y", "y"], "n": [2, 0, 3]})
    v = Release.from_table(t, qi=["a"], group="g", sensitive="s", weight="n").rows
    assert v.n_rows == 2 and v.n_units == 5        # the row of weight 0 stands for nobody
    goff, order = v.group_order
    assert goff.tolist() == [0, 5] and order.tolist() == [0, 0, 1, 1, 1]
    assert v.unit_rows.tolist() == [0, 0, 1, 1, 1]
    assert v.unit_rows[v.unit_order].tolist() == order.tolist()


def test_release_with_rows_resolves_tables_and_checks_releases():
    t, _ = _table(0, 30, 5)
    rel = release_with_rows(t, qi=["a", "b"], sensitive="s", group="g")
    assert rel.rows.qi == ("a", "b")
    assert release_with_rows(rel, qi=["a"]) is rel
    with pytest.raises(InputError, match="not in the release's row view"):
        release_with_rows(rel, qi=["w"])
    with pytest.raises(InputError, match="has no row view"):
        release_with_rows(Release.from_table(t, group="g", sensitive="s"), qi=["a"])
    with pytest.raises(InputError, match="a Release already has"):
        release_with_rows(rel, qi=["a"], group="g")
    with pytest.raises(InputError, match="group= is required"):
        release_with_rows(t, qi=["a"], sensitive="s")
    with pytest.raises(InputError, match="not found"):
        release_with_rows(t, qi=["zz"], sensitive="s", group="g")
    with pytest.raises(InputError, match="one role"):
        release_with_rows(t, qi=["a", "g"], sensitive="s", group="g")


def test_one_miner_serves_both_key_orders():
    t, w = _table(3, 200, 20)
    v = Release.from_table(t, qi=["a", "b"], group="g", sensitive="s").rows
    lex = dict(mine_reliable_signatures(v, ["a", "b"], 5, 2, first_major=True))
    colex = dict(mine_reliable_signatures(v, ["a", "b"], 5, 2))
    assert lex.keys() == colex.keys()
    for A in lex:
        assert (lex[A] is None) == (colex[A] is None)
        if lex[A] is not None:   # same signatures, same supports, in another key order
            assert sorted(lex[A].support.tolist()) == sorted(colex[A].support.tolist())
            assert ((lex[A].var_rows >= 0) == (colex[A].var_rows >= 0)).all()


# ---------------------------------------------------------------------- model inputs
def test_models_accept_a_release_with_rows():
    t, _ = _table(1, 120, 30)
    t = t.drop_columns(["w"])
    rel = Release.from_table(t, qi=["a", "b"], group="g", sensitive="s")
    a1 = rb.audit(t, qi=["a", "b"], group="g", sensitive="s", r=2, min_support=5)
    a2 = rb.audit(rel, qi=["a", "b"], r=2, min_support=5)
    assert a1 == a2 and a1.params == a2.params
    f1 = fg.attack(t, qi=["a", "b"], group="g", sensitive="s", r=2, min_support=5,
                   n_random=1)
    f2 = fg.attack(rel, qi=["a", "b"], r=2, min_support=5, n_random=1)
    np.testing.assert_array_equal(f1.posterior, f2.posterior)
    k1 = Knowledge.derive(t, qi=["a", "b"], sensitive="s", min_support=5)
    k2 = Knowledge.derive(rel, qi=["a", "b"], min_support=5)
    assert k1.to_table().equals(k2.to_table())
    d1 = average_delta(k1, t.column("g").to_numpy(), data=t)
    assert average_delta(k1, data=rel) == pytest.approx(d1, rel=0, abs=0)
    with pytest.raises(InputError, match="has no row view"):
        rb.audit(Release.from_table(t, group="g", sensitive="s"), qi=["a"], r=2)


def test_count_models_refuse_reading_keywords_with_a_release():
    from fastpriv import classic
    t, _ = _table(2, 60, 10)
    rel = Release.from_table(t, group="g", sensitive="s")
    assert classic.k_anonymity(rel) == classic.k_anonymity(t, group="g", sensitive="s")
    for kw in ({"nulls": "drop"}, {"sensitive": "s"}, {"weight": "w"}):
        with pytest.raises(InputError, match=f"{next(iter(kw))}= is only for tables"):
            classic.k_anonymity(rel, **kw)


def test_results_follow_the_protocol():
    t, _ = _table(2, 150, 30)
    t = t.drop_columns(["w"])
    aud = rb.audit(t, qi=["a", "b"], group="g", sensitive="s", r=2, min_support=5)
    att = fg.attack(t, qi=["a", "b"], group="g", sensitive="s", r=2, min_support=5,
                    n_random=1)
    dc = rb.delta_check([0.2, 0.3, 0.25], 2)
    for res in (aud, att, dc):
        json.dumps(res.to_dict())
        assert res.summary() and res == res and res == copy.deepcopy(res)
        assert isinstance(res.params, dict)
    assert aud.value == aud.witness.posterior == np.nanmax(aud.group_max)
    assert aud.witness.summary() and json.dumps(aud.witness.to_dict())
    assert att.value == att.n_problematic
    assert att.witness.posterior == att.posterior.max()
    assert dc.value == pytest.approx(0.1) and dc.witness is None


# ---------------------------------------------------------------------- weighted rows
def _sorted_triples(rows, sets, vals):
    return sorted(zip(rows.tolist(), sets.tolist(), vals.tolist(), strict=True))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), n=st.integers(1, 40), n_groups=st.integers(1, 8),
       support=st.integers(1, 6), model=st.sampled_from(["binary", "multivalued"]))
@example(seed=0, n=12, n_groups=3, support=2, model="binary")
def test_weighted_robustness_equals_the_expanded_table(seed, n, n_groups, support, model):
    t, w = _table(seed, n, n_groups)
    units = np.repeat(np.arange(n), w)
    kw = dict(qi=["a", "b"], group="g", sensitive="s", r=2, min_support=support, model=model)
    ref = rb.audit(_expand(t, w), **kw)
    got = rb.audit(t, weight="w", **kw)
    assert got.value == ref.value and got.robust == ref.robust
    assert got.n_rows == ref.n_rows and got.n_problematic == ref.n_problematic
    assert got.n_problematic_rows == ref.n_problematic_rows
    np.testing.assert_array_equal(got.group_max, ref.group_max)
    np.testing.assert_array_equal(got.delta_status, ref.delta_status)
    np.testing.assert_array_equal(got.delta_holds, ref.delta_holds)
    # a row's maximum is the maximum over its units (which may differ in the last ulp:
    # the ESP posterior of equal f at different positions of a group is rounded apart)
    per_row = np.full(n, -np.inf)
    np.maximum.at(per_row, units, ref.row_max)
    np.testing.assert_array_equal(got.row_max, per_row)
    assert _sorted_triples(got.problematic_rows, got.problematic_sets,
                           got.problematic_values) == \
        _sorted_triples(units[ref.problematic_rows], ref.problematic_sets,
                        ref.problematic_values)
    np.testing.assert_array_equal(units[ref.group_witness_row], got.group_witness_row)
    if ref.witness is not None:
        assert got.witness.row == units[ref.witness.row]
        assert got.witness.signature == ref.witness.signature
        assert got.witness.posterior == ref.witness.posterior
    assert len(got.undefined) == len(ref.undefined)
    assert got.knowledge == ref.knowledge


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), n=st.integers(2, 40), n_groups=st.integers(1, 8),
       support=st.integers(1, 6), unreliable=st.sampled_from(["pooled", "global"]))
@example(seed=0, n=30, n_groups=5, support=3, unreliable="pooled")
def test_weighted_foreground_attack_equals_the_expanded_table(seed, n, n_groups, support,
                                                               unreliable):
    t, w = _table(seed, n, n_groups)
    units = np.repeat(np.arange(n), w)
    kw = dict(qi=["a", "b"], group="g", sensitive="s", r=2, min_support=support, n_random=1,
              unreliable=unreliable)
    ref = fg.attack(_expand(t, w), **kw)
    got = fg.attack(t, weight="w", **kw)
    per_row = np.full(n, -np.inf)
    np.maximum.at(per_row, units, ref.posterior)
    np.testing.assert_array_equal(got.posterior, per_row)
    np.testing.assert_allclose(got.posterior[units], ref.posterior, rtol=1e-12, atol=0)
    # the (A, x) realising a row's maximum is one its units realise (units tie to the ulp,
    # so two sets can win for two units of the same row)
    for i in range(n):
        mine = units == i
        assert got.witness_set[i] in set(ref.witness_set[mine].tolist())
        assert got.witness_value[i] in set(ref.witness_value[mine].tolist())
    assert got.n_problematic == ref.n_problematic and got.n_rows == ref.n_rows
    assert got.mined.attribute_sets == ref.mined.attribute_sets
    assert got.mined.systems() == ref.mined.systems()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), n=st.integers(1, 40), n_groups=st.integers(1, 8),
       support=st.integers(1, 8))
def test_weighted_knowledge_and_average_delta_equal_the_expanded_table(seed, n, n_groups,
                                                                        support):
    t, w = _table(seed, n, n_groups)
    ex = _expand(t, w)
    k_ref = Knowledge.derive(ex, qi=["a", "b"], sensitive="s", min_support=support)
    k_got = Knowledge.derive(t, qi=["a", "b"], sensitive="s", min_support=support,
                             weight="w")
    assert k_got.to_table().equals(k_ref.to_table())
    assert k_got.info == k_ref.info
    if k_ref.attribute_sets:
        ref = average_delta(k_ref, data=Release.from_table(ex, qi=["a", "b"], group="g",
                                                           sensitive="s"))
        got = average_delta(k_ref, data=Release.from_table(t, qi=["a", "b"], group="g",
                                                           sensitive="s", weight="w"))
        assert got == ref


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), n=st.integers(1, 40), qd=st.integers(1, 2))
def test_weighted_count_queries_equal_the_expanded_table(seed, n, qd):
    from fastpriv.metrics import CountQueries

    t, w = _table(seed, n, 4)
    kw = dict(n_queries=50, qd=qd, selectivity=0.3, seed=seed % 1000)
    ref = CountQueries(_expand(t, w), qi=["a", "b"], sensitive="s", **kw)
    got = CountQueries(t, qi=["a", "b"], sensitive="s", weight="w", **kw)
    np.testing.assert_array_equal(got.actual, ref.actual)
    assert got.queries() == ref.queries()


# ---------------------------------------------------------------------- dropped rows
def _with_gaps(seed: int, n: int) -> tuple[pa.Table, np.ndarray]:
    """A table whose QI column ``a`` has nulls and whose weights include 0; the rows kept."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    null = rng.random(n) < 0.25
    w = rng.integers(0, 3, n)
    t = pa.table({"a": pa.array(a, mask=null), "b": rng.choice(["x", "y"], n),
                  "g": rng.integers(0, max(2, n // 8), n), "s": rng.choice(["p", "q", "r"], n),
                  "w": w})
    return t, np.flatnonzero(~null & (w > 0))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), n=st.integers(40, 160))
def test_rows_dropped_by_nulls_or_weight_are_named_by_input_row(seed, n):
    """Oracle: the same audit on the table with the dropped rows removed by hand; every row
    the result names is then translated through the kept rows' input numbers."""
    t, kept = _with_gaps(seed, n)
    kw = dict(qi=["a", "b"], group="g", sensitive="s", r=2, min_support=3, weight="w")
    got = rb.audit(t, nulls="drop", **kw)
    want = rb.audit(t.take(pa.array(kept)), **kw)
    assert got.value == want.value
    np.testing.assert_array_equal(got.problematic_rows, kept[want.problematic_rows])
    assert got.n_problematic_rows == want.n_problematic_rows
    gw = want.group_witness_row
    np.testing.assert_array_equal(got.group_witness_row,
                                  np.where(gw >= 0, kept[np.maximum(gw, 0)], gw))
    if want.witness is not None:
        assert got.witness.row == kept[want.witness.row]
        assert got.witness.signature == want.witness.signature
    np.testing.assert_array_equal(got.input_row, kept)
    fa = fg.attack(t, nulls="drop", n_random=1, **kw)
    fb = fg.attack(t.take(pa.array(kept)), n_random=1, **kw)
    np.testing.assert_array_equal(fa.posterior, fb.posterior)
    np.testing.assert_array_equal(fa.tuples().column("row").to_numpy(), kept)
    np.testing.assert_array_equal(fa.input_row, kept)
    if fb.witness is not None:
        assert fa.witness.row == kept[fb.witness.row]
    ea, eb = fa.explain(int(kept[0])), fb.explain(0)
    assert ea["row"] == kept[0] and ea["posterior"] == eb["posterior"]
    assert [m["row"] for m in ea.get("tuples", [])] == [int(kept[m["row"]])
                                                       for m in eb.get("tuples", [])]


def test_explain_refuses_a_dropped_row_and_original_may_be_the_input():
    t, kept = _with_gaps(5, 120)
    t = t.drop_columns(["w"])
    kept = np.flatnonzero(pc.is_valid(t.column("a")).to_numpy(zero_copy_only=False))
    dropped = int(np.setdiff1d(np.arange(t.num_rows), kept)[0])
    kw = dict(qi=["a", "b"], group="g", sensitive="s", r=2, min_support=3, n_random=1)
    res = fg.attack(t, nulls="drop", original=t, **kw)
    with pytest.raises(InputError, match=f"input row {dropped} is not in the audit"):
        res.explain(dropped)
    same = fg.attack(t.take(pa.array(kept)), original=t.take(pa.array(kept)), **kw)
    assert res.measures == same.measures


def test_moved_names_still_import_from_rows_with_a_warning():
    import fastpriv.release
    import fastpriv.rows

    for name in ("release_with_rows", "derive_view"):
        with pytest.warns(DeprecationWarning, match=f"moved to fastpriv.release.{name}"):
            assert getattr(fastpriv.rows, name) is getattr(fastpriv.release, name)


def test_row_level_models_take_a_release_built_with_its_qi():
    """robustness.audit(rel, r=) and foreground.attack(rel, r=) read the row view's QIs."""
    import numpy as np

    from fastpriv import foreground, robustness

    rng = np.random.default_rng(5)
    n = 300
    t = pa.table({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n),
                  "g": np.arange(n) // 6, "s": rng.integers(0, 5, n)})
    rel = Release.from_table(t, qi=["a", "b"], group="g", sensitive="s")
    def timeless(d):
        if isinstance(d, dict):
            return {k: timeless(v) for k, v in d.items() if k != "seconds"}
        return [timeless(v) for v in d] if isinstance(d, list) else d

    def same(x, y):                       # every field but the timings
        assert timeless(x.to_dict()) == timeless(y.to_dict())

    kw = {"r": 2, "epsilon": 0.2, "confidence": 0.5}     # reliable signatures at n = 300
    a = robustness.audit(rel, **kw)
    same(a, robustness.audit(t, qi=["a", "b"], group="g", sensitive="s", **kw))
    assert a.params["knowledge"]["signatures"] > 0     # the QI columns were read
    fa = foreground.attack(rel, **kw)
    same(fa, foreground.attack(t, qi=["a", "b"], group="g", sensitive="s", **kw))
    assert fa.to_dict()["mined"]["attribute_sets"]     # something was mined from a, b
    with pytest.raises(InputError, match="qi"):
        foreground.attack(Release.from_table(t, group="g", sensitive="s"), r=2)
