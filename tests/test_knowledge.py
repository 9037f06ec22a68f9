"""Knowledge (fastpriv.knowledge): construction, validation, derivation, lookups."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpriv.knowledge import Knowledge, reliable_support
from tests.naive_robustness import derived_knowledge


def table4():
    return Knowledge.from_dict({"nationality": {"American": {"heart": 0.1},
                                                "Japanese": {"heart": 0.003},
                                                "French": {"heart": 0.05}}})


def test_from_dict_and_lookups():
    k = table4()
    assert k.attribute_sets == [("nationality",)]
    assert k.values == ["heart"]
    assert k.domain("nationality") == ["American", "French", "Japanese"]
    np.testing.assert_allclose(k.matrix("nationality")[:, 0], [0.1, 0.05, 0.003])
    t = pa.table({"nationality": ["Japanese", "Swiss", "American"]})
    np.testing.assert_array_equal(k.signature_index(t, "nationality"), [2, -1, 0])
    M = k.probability_matrix("nationality", ["heart", "flu"])
    assert M.shape == (4, 2) and np.isnan(M[3]).all() and np.isnan(M[:, 1]).all()
    assert k.signatures("nationality").column(0).to_pylist() == ["American", "French",
                                                                  "Japanese"]
    assert "1 attribute set" in repr(k)
    assert k.support("nationality") is None and k.fallback is None


def test_fallback_fills_unknown_signatures_and_pairs():
    k = Knowledge.from_dict({("a", "b"): {("p", 1): {"x": 0.5}}}, fallback={"x": 0.1, "y": 0.2})
    M = k.probability_matrix(("a", "b"), ["x", "y", "z"])
    np.testing.assert_allclose(M[0, :2], [0.5, 0.2])
    np.testing.assert_allclose(M[1, :2], [0.1, 0.2])
    assert np.isnan(M[:, 2]).all()
    k2 = Knowledge.from_dict({"a": {"p": {"x": 0.5}}}, fallback=0.25)
    np.testing.assert_allclose(k2.probability_matrix("a", ["x", "q"]), [[0.5, 0.25],
                                                                        [0.25, 0.25]])


def test_from_table_single_and_long_form_round_trip():
    t = pa.table({"race": ["W", "W", "B"], "sex": ["M", "F", "M"],
                  "disease": ["flu", "flu", "hiv"], "p": [0.2, 0.3, 0.01]})
    k = Knowledge.from_table(t, attribute_set=["race", "sex"], value="disease", probability="p")
    assert k.attribute_sets == [("race", "sex")] and k.n_signatures(("race", "sex")) == 3
    k2 = Knowledge.combine(k, table4())
    long = k2.to_table()
    assert set(long.column("attributes").to_pylist()) == {"race,sex", "nationality"}
    back = Knowledge.from_table(long, set_column="attributes")
    assert back.attribute_sets == k2.attribute_sets
    for A in k2.attribute_sets:
        np.testing.assert_array_equal(back.matrix(A), k2.matrix(A))
    q = pa.table({"race": ["B", "W"], "sex": ["M", "F"]})
    np.testing.assert_array_equal(back.signature_index(q, ("race", "sex")), [0, 1])


def test_from_arrays_and_restrict():
    k = Knowledge.from_arrays(["g"], {"g": [1, 2]}, ["a", "b"],
                              [[0.5, 0.5], [0.1, np.nan]], support=[10, 20])
    np.testing.assert_array_equal(k.support("g"), [10, 20])
    assert np.isnan(k.matrix("g")[1, 1])
    t = pa.table({"g": pa.array([2, 1, 3], pa.int32())})     # int32 column, int64 domain
    np.testing.assert_array_equal(k.signature_index(t, "g"), [1, 0, -1])
    both = Knowledge.combine(k, table4())
    assert both.restrict(["g"]).attribute_sets == [("g",)]
    with pytest.raises(ValueError, match="not in this knowledge"):
        both.restrict([("zzz",)])


@pytest.mark.parametrize("mapping,msg", [
    ({"a": {"p": {"x": float("nan")}}}, "must be finite"),
    ({"a": {"p": {"x": 1.2}}}, r"outside \[0, 1\]"),
    ({"a": {"p": {"x": -0.1}}}, r"outside \[0, 1\]"),
    ({("a", "b"): {"p": {"x": 0.1}}}, "has 1 values, expected 2"),
])
def test_validation_errors(mapping, msg):
    with pytest.raises(ValueError, match=msg):
        Knowledge.from_dict(mapping)


def test_more_validation_errors():
    with pytest.raises(ValueError, match=r"sum to <= 1.*\('q',\).*sums to 1.1"):
        Knowledge.from_dict({"a": {"p": {"x": 0.5, "y": 0.4}, "q": {"x": 0.5, "y": 0.6}}},
                            model="multivalued")
    k = Knowledge.from_dict({"a": {"p": {"x": 0.7, "y": 0.7}}})     # fine for binary
    with pytest.raises(ValueError, match="sums to 1.4"):
        k.check_multivalued()
    with pytest.raises(ValueError, match="more than once"):
        Knowledge.from_table({"a": ["p", "p"], "value": ["x", "x"], "probability": [0.1, 0.2]},
                             attribute_set="a")
    with pytest.raises(ValueError, match="exactly one of"):
        Knowledge.from_table({"a": ["p"], "value": ["x"], "probability": [0.1]})
    with pytest.raises(TypeError, match="numeric"):
        Knowledge.from_table({"a": ["p"], "value": ["x"], "probability": ["0.1"]},
                             attribute_set="a")
    with pytest.raises(ValueError, match="fallback"):
        Knowledge.from_dict({"a": {"p": {"x": 0.1}}}, fallback=2.0)
    with pytest.raises(TypeError, match="non-empty dict"):
        Knowledge.from_dict({})
    with pytest.raises(ValueError, match="named twice"):
        Knowledge.from_dict({("a", "a"): {("p", "p"): {"x": 0.1}}})
    with pytest.raises(ValueError, match="shape"):
        Knowledge.from_arrays("g", {"g": [1]}, ["a"], [[0.5, 0.5]])
    k = table4()
    with pytest.raises(TypeError, match="type"):
        k.signature_index(pa.table({"nationality": [1, 2]}), "nationality")
    with pytest.raises(ValueError, match="not found"):
        k.signature_index(pa.table({"nat": ["x"]}), "nationality")


def test_reliable_support():
    assert reliable_support() == 3993          # ε = 0.01, δ = 0.9 (the papers' setting)
    assert reliable_support(0.1, 0.05) == math.ceil(math.log(2 / 0.05) / 0.02)
    with pytest.raises(ValueError):
        reliable_support(0, 0.5)
    with pytest.raises(ValueError):
        reliable_support(0.1, 2.5)


# ----------------------------------------------------------------- derived knowledge
@st.composite
def small_tables(draw):
    n = draw(st.integers(1, 40))
    rows = [{"a": draw(st.sampled_from(["p", "q", "r"])), "b": draw(st.integers(0, 3)),
             "c": draw(st.sampled_from([True, False])), "s": draw(st.sampled_from("xyz"))}
            for _ in range(n)]
    return rows


@pytest.mark.slow
@settings(max_examples=60)
@given(small_tables(), st.integers(1, 8), st.integers(1, 3))
def test_derive_equals_brute_force(rows, support, max_size):
    table = pa.table({c: [r[c] for r in rows] for c in "abcs"})
    k = Knowledge.derive(table, qi=["a", "b", "c"], sensitive="s", min_support=support,
                         max_set_size=max_size)
    want, rates = derived_knowledge(rows, ["a", "b", "c"], "s", support)
    want = {A: d for A, d in want.items() if len(A) <= max_size}
    assert set(k.attribute_sets) == set(want)
    assert k.fallback == pytest.approx({v: float(p) for v, p in rates.items()})
    for A, dist in want.items():
        sigs = k.signatures(A).to_pylist()
        M = k.matrix(A)
        assert len(sigs) == len(dist)
        for i, s in enumerate(sigs):
            key = tuple(s[a] for a in A)
            for j, v in enumerate(k.values):
                assert M[i, j] == pytest.approx(float(dist[key].get(v, Fraction(0))),
                                                rel=1e-15)
        assert list(k.support(A)) == [sum(1 for r in rows if tuple(r[a] for a in A) ==
                                          tuple(s[a] for a in A)) for s in sigs]
    # pruned sets really have no reliable signature, and supersets of pruned sets are pruned
    for A in k.info["pruned"]:
        assert A not in want


def test_derive_on_a_table_and_errors():
    t = pa.table({"a": ["p"] * 50 + ["q"] * 5, "b": [1, 2] * 27 + [1],
                  "s": ["x"] * 30 + ["y"] * 25})
    k = Knowledge.derive(t, qi=["a", "b"], sensitive="s", min_support=10)
    # 'q' has 5 rows: unreliable, falls back to the global rate
    M = k.probability_matrix("a", ["x", "y"])
    sig = k.signature_index(t, "a")
    assert (sig[50:] == -1).all()
    np.testing.assert_allclose(M[-1], [30 / 55, 25 / 55])
    np.testing.assert_allclose(M[0], [30 / 50, 20 / 50])
    assert k.info["min_support"] == 10 and 0 < k.info["coverage"]["a"] < 1
    assert Knowledge.derive(t, qi=["a", "b"], sensitive="s").attribute_sets == []
    assert Knowledge.derive(t, qi=["a", "b"], sensitive="s").info["pruned"] == \
        [("a",), ("b",), ("a", "b")]
    with pytest.raises(ValueError, match="also a qi column"):
        Knowledge.derive(t, qi=["a", "s"], sensitive="s")
    with pytest.raises(ValueError, match="max_set_size"):
        Knowledge.derive(t, qi=["a"], sensitive="s", max_set_size=0)
    with pytest.raises(ValueError, match="min_support"):
        Knowledge.derive(t, qi=["a"], sensitive="s", min_support=0)
    with pytest.raises(ValueError, match="not found"):
        Knowledge.derive(t, qi=["zz"], sensitive="s")
    tn = pa.table({"a": ["p", None], "s": ["x", "y"]})
    with pytest.raises(ValueError, match="null"):
        Knowledge.derive(tn, qi=["a"], sensitive="s")
    assert Knowledge.derive(tn, qi=["a"], sensitive="s", nulls="drop",
                            min_support=1).info["dropped_nulls"] == 1


def test_derive_large_domain_uses_sparse_counting():
    rng = np.random.default_rng(0)
    n = 20000
    t = pa.table({"a": rng.integers(0, 5000, n), "b": rng.integers(0, 5000, n),
                  "s": rng.integers(0, 3, n).astype(str)})
    k = Knowledge.derive(t, qi=["a", "b"], sensitive="s", min_support=1)
    ab = k.matrix(("a", "b"))
    assert ab.shape[1] == 3 and np.allclose(ab.sum(axis=1), 1.0)
    assert k.support(("a", "b")).sum() == n
    sig = k.signature_index(t, ("a", "b"))
    assert (sig >= 0).all()
