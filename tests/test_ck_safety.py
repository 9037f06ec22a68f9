"""(c,k)-safety (fastpriv.ck_safety) against the spec vectors, the brute-force oracle
(tests/naive_ck.py), the paper's examples, Theorem 14, and the reference knapsack."""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastpriv import Release
from fastpriv import ck_safety as ck
from fastpriv._kernels import ck_safety as kern
from fastpriv._validation import kernel_array
from tests import kernels_reference as kref
from tests.naive_ck import (
    World,
    implication_disclosure,
    max_disclosure_implications,
    max_disclosure_negations,
    negation_disclosure,
    probability,
)
from tests.strategies import svpi_groups

HERE = Path(__file__).resolve().parent
SPEC = Path(os.environ.get("FASTPRIV_SPEC_DIR",
                           Path(__file__).resolve().parents[2] / "shared" / "spec"))


def _vectors():
    local = HERE / "vectors" / "martin.jsonl"
    path = local if local.exists() else SPEC / "vectors" / "martin.jsonl"
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


VECTORS = _vectors()
MAXD = [v for v in VECTORS if v["kind"] == "max_disclosure"]
SPECIFIC = [v for v in VECTORS if v["kind"] == "specific_knowledge"]
FIG3 = [["flu", "lung_cancer", "mumps", "flu", "lung_cancer"],
        ["flu", "breast_cancer", "flu", "heart_disease", "ovarian_cancer"]]


def frac(x):
    return Fraction(x["frac"])


def global_atom(buckets, atom):
    """A witness Atom (group, person in group, value) -> oracle atom (global person, value)."""
    first = sum(len(b) for b in buckets[:atom.group])
    assert 0 <= atom.person < len(buckets[atom.group])
    return (first + atom.person, atom.value)


def witness_value(buckets, result, world=None):
    w = result.witness
    a = global_atom(buckets, w.consequent)
    ants = [global_atom(buckets, x) for x in w.antecedents]
    if result.knowledge_kind == "implications":
        return implication_disclosure(buckets, a, ants, world)
    return negation_disclosure(buckets, a, ants, world)


# ------------------------------------------------------------------------ spec vectors
def test_vectors_were_found():
    assert len(MAXD) >= 70 and len(SPECIFIC) == 2


@pytest.mark.slow
@pytest.mark.parametrize("vec", MAXD, ids=[v["id"] for v in MAXD])
def test_max_disclosure_vectors(vec):
    buckets, k = vec["input"]["buckets"], vec["input"]["k"]
    exp = vec["expected"]
    rel = Release.from_groups(buckets)
    r = ck.max_disclosure(rel, k=k, exact=True)
    assert r.value == frac(exp["max_disclosure"])
    assert r.min_ratio == frac(exp["min_ratio"])
    assert r.k == k and r.knowledge_kind == "implications" and r.exact
    assert len(r.witness.antecedents) <= k
    # the witness realises the value when re-evaluated by brute force
    world = World(buckets)
    assert witness_value(buckets, r, world) == r.value
    # the vector's own witness realises it too (sanity of the oracle)
    w = exp["witness"]
    assert implication_disclosure(buckets, tuple(w["A"]),
                                  [tuple(a) for a in w["antecedents"]], world) == r.value
    # float mode
    rf = ck.max_disclosure(rel, k=k)
    assert isinstance(rf.value, float) and isinstance(rf.min_ratio, float)
    assert rf.value == pytest.approx(float(r.value), rel=1e-12)
    assert rf.min_ratio == pytest.approx(float(r.min_ratio), rel=1e-12, abs=1e-15)
    # negated atoms
    rn = ck.max_disclosure(rel, k=k, knowledge_kind="negations", exact=True)
    assert rn.value == frac(exp["negated_atoms_max_disclosure"])
    assert rn.value <= r.value
    assert witness_value(buckets, rn, world) == rn.value
    assert rn.min_ratio == 1 / rn.value - 1


@pytest.mark.parametrize("vec", SPECIFIC, ids=[v["id"] for v in SPECIFIC])
def test_specific_knowledge_vectors(vec):
    buckets = vec["input"]["buckets"]
    target = tuple(vec["input"]["target"])
    for knowledge, exp in zip(vec["input"]["knowledge_sequence"],
                              vec["expected"]["probabilities"], strict=True):
        items = [("not", x[1], x[2]) if x[0] == "not" else
                 ("implies", tuple(x[1]), tuple(x[2])) for x in knowledge]
        assert probability(buckets, target, items) == frac(exp)


# ------------------------------------------------------------------------ paper examples
def test_paper_ed_and_charlie():
    # Ed is person 3 (bucket M), Hannah person 6, Charlie person 1
    assert probability(FIG3, (3, "lung_cancer")) == Fraction(2, 5)
    assert probability(FIG3, (3, "lung_cancer"), [("not", 3, "mumps")]) == Fraction(1, 2)
    assert probability(FIG3, (3, "lung_cancer"),
                       [("not", 3, "mumps"), ("not", 3, "flu")]) == 1
    assert probability(FIG3, (1, "flu"), [("implies", (6, "flu"), (1, "flu"))]) \
        == Fraction(10, 19)


@pytest.mark.slow
def test_paper_figure3_curve_exact():
    rel = Release.from_groups(FIG3)
    got = [ck.max_disclosure(rel, k=k, exact=True).value for k in range(4)]
    assert got == [Fraction(2, 5), Fraction(2, 3), 1, 1]
    assert np.allclose(ck.disclosure_curve(rel, k_max=3), [0.4, 2 / 3, 1, 1], rtol=1e-15)
    # k = 1: A = "p has flu", A_1 = "p has lung cancer", same person p in M
    w = ck.max_disclosure(rel, k=1, exact=True).witness
    assert w.consequent.group == 0 and w.consequent.value == "flu"
    assert [(a.group, a.person, a.value) for a in w.antecedents] == \
        [(0, w.consequent.person, "lung_cancer")]
    assert w.groups == (0,) and w.group_labels == (0,)


def test_paper_figure3_distinct_people_gives_4_7():
    """With A and A_1 about different people, the best k = 1 implication gives 4/7."""
    world = World(FIG3)
    atoms = [(p, v) for p in range(10) for v in sorted(set(FIG3[p // 5]))]
    best = max(implication_disclosure(FIG3, a, [b], world)
               for a in atoms for b in atoms if a[0] != b[0])
    assert best == Fraction(4, 7)


# ------------------------------------------------------------------------ oracle, random
@pytest.mark.slow
@given(svpi_groups(max_people=7, max_groups=3, max_values=4), st.integers(0, 3))
def test_kernels_match_brute_force(groups, k):
    rel = Release.from_groups(groups)
    world = World(groups)
    val, _, _ = max_disclosure_implications(groups, k)
    r = ck.max_disclosure(rel, k=k, exact=True)
    assert r.value == val
    assert witness_value(groups, r, world) == val
    assert ck.max_disclosure(rel, k=k).value == pytest.approx(float(val), rel=1e-12)
    nval, _, _ = max_disclosure_negations(groups, k)
    rn = ck.max_disclosure(rel, k=k, knowledge_kind="negations", exact=True)
    assert rn.value == nval <= val
    assert witness_value(groups, rn, world) == nval
    curve = ck.disclosure_curve(rel, k_max=3)
    assert curve[k] == pytest.approx(float(val), rel=1e-12)


@pytest.mark.slow
@given(svpi_groups(max_people=7, max_groups=1, max_values=7), st.integers(0, 3))
def test_kernels_match_brute_force_one_wide_bucket(groups, k):
    rel = Release.from_groups(groups)
    val, _, _ = max_disclosure_implications(groups, k)
    assert ck.max_disclosure(rel, k=k, exact=True).value == val
    nval, _, _ = max_disclosure_negations(groups, k)
    assert ck.max_disclosure(rel, k=k, knowledge_kind="negations", exact=True).value == nval


# ------------------------------------------------------------------------ Theorem 14
def _random_release_groups(rng, n_groups, max_size=12, n_values=6):
    groups = []
    for _ in range(n_groups):
        n = int(rng.integers(1, max_size + 1))
        d = int(rng.integers(1, n_values + 1))
        groups.append([f"v{x}" for x in rng.integers(0, d, size=n)])
    return groups


@pytest.mark.slow
@given(st.integers(0, 2**32 - 1), st.integers(2, 8), st.integers(0, 5))
def test_merging_buckets_never_raises_disclosure(seed, n_groups, k):
    """Theorem 14: B ⪯ B' (every bucket of B' a union of buckets of B) ⇒ w(B') ≤ w(B)."""
    rng = np.random.default_rng(seed)
    groups = _random_release_groups(rng, n_groups)
    # a random coarsening: assign each bucket to one of m blocks
    m = int(rng.integers(1, n_groups + 1))
    block = rng.integers(0, m, size=n_groups)
    merged = [sum((groups[i] for i in range(n_groups) if block[i] == b), [])
              for b in range(m)]
    merged = [g for g in merged if g]
    fine = ck.max_disclosure(Release.from_groups(groups), k=k, exact=True).value
    coarse = ck.max_disclosure(Release.from_groups(merged), k=k, exact=True).value
    assert coarse <= fine
    fine_c = ck.disclosure_curve(Release.from_groups(groups), k_max=6)
    coarse_c = ck.disclosure_curve(Release.from_groups(merged), k_max=6)
    assert np.all(coarse_c <= fine_c * (1 + 1e-12))


# ------------------------------------------------------------------------ fast == reference
def _counts_release(rng, n_groups, size_lo, size_hi, dmax, conc):
    groups = []
    for _ in range(n_groups):
        n = int(rng.integers(size_lo, size_hi + 1))
        d = int(rng.integers(1, dmax + 1))
        p = rng.dirichlet(np.full(d, conc))
        cnt = rng.multinomial(n, p)
        groups.append({f"v{j:02d}": int(c) for j, c in enumerate(cnt) if c})
    return Release.from_groups(groups)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_fast_path_matches_reference_knapsack(seed):
    rng = np.random.default_rng(seed)
    rel = _counts_release(rng, int(rng.integers(100, 500)), 5, 120, 25,
                          [0.3, 1.0, 5.0][seed % 3])
    K = int(rng.integers(1, 13))
    prof = ck._Profiles(rel)
    ref = kref.reference_min_ratio(prof.indptr, prof.counts, prof.sizes, K)
    for prune in (False, True):
        R, _ = ck._implications(prof, K, exact=False, witness_t=None, prune=prune)
        np.testing.assert_allclose(R, ref, rtol=1e-12, atol=0)
    curve = ck.disclosure_curve(rel, k_max=K)
    np.testing.assert_allclose(curve, 1 / (1 + ref), rtol=1e-12)
    assert np.all(np.diff(curve) >= 0)
    neg = ck.disclosure_curve(rel, k_max=K, knowledge_kind="negations")
    assert np.all(neg <= curve * (1 + 1e-12)) and np.all(np.diff(neg) >= 0)
    # exact mode agrees, and its witness realises the exact value (product of Lemma 12
    # factors, recomputed here from the witness atoms independently of the kernels)
    r = ck.max_disclosure(rel, k=K, exact=True)
    assert float(r.min_ratio) == pytest.approx(float(ref[K]), rel=1e-12)
    assert _ratio_from_witness(rel, r.witness) == r.min_ratio


def _ratio_from_witness(rel, w):
    """Pr(¬A ∧ ∧¬A_i | B) / Pr(A | B) for a Lemma-12-shaped witness, in Fractions.

    Per group, the atoms of person i are on the top values s^0 … s^{k_i−1}; people are
    taken in decreasing number of atoms and the probability that none holds her values,
    given the earlier ones do not, is (n − i − Σ counts of her values) / (n − i).
    """
    by_group = {}
    for a in (w.consequent, *w.antecedents):
        by_group.setdefault(a.group, {}).setdefault(a.person, set()).add(a.value)
    ratio = Fraction(1)
    for g, persons in by_group.items():
        counts = dict(rel.profile(g))
        n = int(rel.sizes[g])
        sets = sorted(persons.values(), key=len, reverse=True)
        for i, vals in enumerate(sets):
            num = n - i - sum(counts.get(v, 0) for v in vals)
            ratio *= Fraction(max(num, 0), n - i)
    c = w.consequent
    pa_ = Fraction(dict(rel.profile(c.group))[c.value], int(rel.sizes[c.group]))
    return ratio / pa_


def test_fast_m1_matches_paper_recursion():
    rng = np.random.default_rng(7)
    rel = _counts_release(rng, 400, 1, 60, 20, 0.7)
    prof = ck._Profiles(rel)
    for H in (1, 2, 5, 13, 17):
        pid, keys, mult = kern.dedupe_profiles(prof.indptr, prof.counts, prof.sizes, H)
        assert mult.sum() == rel.n_groups
        rows = kernel_array(np.arange(keys.shape[0]), np.int64)
        fast = kern.m1_profiles(kernel_array(keys, np.int64), rows, H)
        paper = kref.reference_m1(prof.indptr, prof.counts, prof.sizes, H)
        np.testing.assert_allclose(fast[pid], paper, rtol=1e-13, atol=0)
        assert np.all(np.diff(fast, axis=1) <= 1e-15)        # non-increasing in h
        # keys are (n, top-H counts) of the groups they stand for
        for g in rng.integers(0, rel.n_groups, size=20):
            top = [c for _, c in rel.profile(int(g))][:H]
            assert keys[pid[g]].tolist() == [int(rel.sizes[g])] + top + [0] * (H - len(top))


def test_pruning_discards_most_profiles_and_keeps_the_answer():
    rng = np.random.default_rng(3)
    rel = _counts_release(rng, 3000, 40, 120, 20, 2.0)
    prof = ck._Profiles(rel)
    K = 12
    pid, keys, mult = kern.dedupe_profiles(prof.indptr, prof.counts, prof.sizes, K + 1)
    keep = kern.prune_profiles(kernel_array(keys, np.int64), kernel_array(mult, np.int64), K)
    assert keep.sum() < keys.shape[0] / 5
    ref = kref.reference_min_ratio(prof.indptr, prof.counts, prof.sizes, K)
    R, _ = ck._implications(prof, K, exact=False, witness_t=None, prune=True)
    np.testing.assert_allclose(R, ref, rtol=1e-12, atol=0)
    # without pruning, M1 runs on every profile, split over threads (work above the cut)
    assert keys.shape[0] * (K + 2) ** 3 >= ck._THREAD_MIN_WORK
    R, _ = ck._implications(prof, K, exact=False, witness_t=None, prune=False)
    np.testing.assert_allclose(R, ref, rtol=1e-12, atol=0)
    Re, _ = ck._implications(prof, K, exact=True, witness_t=None, prune=True)
    np.testing.assert_allclose([float(x) for x in Re], ref, rtol=1e-12, atol=0)


def test_repeated_profiles_and_many_buckets():
    """Copies of the same profile are distinct buckets: the knapsack may use several."""
    rel = Release.from_groups([["a", "a", "b", "c", "d"]] * 50 + [["x", "y"]] * 3)
    prof = ck._Profiles(rel)
    for K in range(0, 6):
        ref = kref.reference_min_ratio(prof.indptr, prof.counts, prof.sizes, K)
        R, _ = ck._implications(prof, K, exact=False, witness_t=None)
        np.testing.assert_allclose(R, ref, rtol=1e-13, atol=0)
    # 3 identical 5-person buckets: A in one, k = 1 atoms elsewhere beats a single bucket
    rel = Release.from_groups([["a", "a", "b", "c", "d"]] * 3)
    r = ck.max_disclosure(rel, k=2, exact=True)
    val, _, _ = max_disclosure_implications([["a", "a", "b", "c", "d"]], 2)
    assert r.value >= val
    assert _ratio_from_witness(rel, r.witness) == r.min_ratio


def test_k_beyond_saturation():
    rel = Release.from_groups([["a", "b", "c"], ["a", "b", "c", "d", "e"]])
    curve = ck.disclosure_curve(rel, k_max=40)
    assert curve.shape == (41,) and np.all(curve[2:] == 1.0) and curve[1] < 1
    r = ck.max_disclosure(rel, k=40, exact=True)
    assert r.value == 1 and r.min_ratio == 0
    assert len(r.witness.antecedents) <= 2
    rn = ck.max_disclosure(rel, k=40, knowledge_kind="negations", exact=True)
    assert rn.value == 1 and len(rn.witness.antecedents) == 2
    assert np.all(ck.disclosure_curve(rel, k_max=40, knowledge_kind="negations")[2:] == 1.0)


# ------------------------------------------------------------------------ safety
@pytest.mark.slow
def test_is_safe_strict_threshold_and_ties():
    rel = Release.from_groups(FIG3)
    assert not ck.is_safe(rel, c=0.4, k=0)                  # equal is unsafe
    assert ck.is_safe(rel, c=0.4000001, k=0)
    assert not ck.is_safe(rel, c=Fraction(2, 3), k=1)
    assert not ck.is_safe(rel, c=2 / 3, k=1)                # float 2/3 is slightly below 2/3
    assert ck.is_safe(rel, c=Fraction(2, 3) + Fraction(1, 10**12), k=1)
    assert not ck.is_safe(rel, c=1, k=2)                     # disclosure 1 is never safe
    assert ck.is_safe(rel, c=1, k=1)
    # 0.8 is read as 4/5: disclosure exactly 4/5 is unsafe
    four_fifths = Release.from_groups([["a", "a", "a", "a", "b"]])
    assert ck.max_disclosure(four_fifths, k=0, exact=True).value == Fraction(4, 5)
    assert not ck.is_safe(four_fifths, c=0.8, k=0)
    assert ck.is_safe(four_fifths, c=0.8000001, k=0)
    assert not ck.is_safe(four_fifths, c=0.8, k=0, knowledge_kind="negations")
    assert not ck.is_safe(four_fifths, c=np.float64(0.8), k=0)
    # a near-tie that needs exact arithmetic: 10/11 from martin-34-k2
    rel34 = Release.from_groups([["d", "a", "b", "a", "c", "a"]])
    assert not ck.is_safe(rel34, c=Fraction(10, 11), k=2)
    assert ck.is_safe(rel34, c=Fraction(10, 11) + Fraction(1, 10**15), k=2)


def test_max_safe_k():
    rel = Release.from_groups(FIG3)
    assert ck.max_safe_k(rel, c=0.7) == 1
    assert ck.max_safe_k(rel, c=Fraction(2, 3)) == 0
    assert ck.max_safe_k(rel, c=0.4) is None
    assert ck.max_safe_k(rel, c=1) == 1
    assert ck.max_safe_k(rel, c=1, k_limit=0) == 0
    assert ck.max_safe_k(rel, c=0.7, knowledge_kind="negations") == 1
    rng = np.random.default_rng(11)
    big = _counts_release(rng, 200, 30, 80, 40, 3.0)
    curve = ck.disclosure_curve(big, k_max=39)
    for c in (0.3, 0.5, 0.8, 0.95):
        k = ck.max_safe_k(big, c=c)
        safe = [t for t in range(40) if curve[t] < c]
        assert k == (max(safe) if safe else None)
        if k is not None:
            assert ck.is_safe(big, c=c, k=k) and not ck.is_safe(big, c=c, k=k + 1)


# ------------------------------------------------------------------------ inputs / results
def test_input_errors():
    rel = Release.from_groups(FIG3)
    mv = Release.from_groups([{"a": 2, "b": 1}, {"a": 1}], sizes=[3, 2], case="mvpi-set")
    with pytest.raises(ValueError, match="SVPI"):
        ck.max_disclosure(mv, k=1)
    for fn in (lambda r: ck.disclosure_curve(r, k_max=2), lambda r: ck.is_safe(r, c=0.5, k=1),
               lambda r: ck.max_safe_k(r, c=0.5)):
        with pytest.raises(ValueError, match="SVPI"):
            fn(mv)
    with pytest.raises(TypeError, match="data"):
        ck.max_disclosure(FIG3, k=1)
    with pytest.raises(ValueError, match="k must be >= 0"):
        ck.max_disclosure(rel, k=-1)
    with pytest.raises(TypeError, match="k must be an integer"):
        ck.max_disclosure(rel, k=1.5)
    with pytest.raises(ValueError, match="k_max"):
        ck.disclosure_curve(rel, k_max=-2)
    with pytest.raises(ValueError, match="knowledge"):
        ck.max_disclosure(rel, k=1, knowledge_kind="implication")
    with pytest.raises(TypeError, match="knowledge"):
        ck.max_disclosure(rel, k=1, knowledge_kind=None)
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="c must"):
            ck.is_safe(rel, c=bad, k=1)
        with pytest.raises(ValueError, match="c must"):
            ck.max_safe_k(rel, c=bad)
    with pytest.raises(TypeError, match="c must"):
        ck.is_safe(rel, c="0.5", k=1)
    with pytest.raises(ValueError, match="k_limit"):
        ck.max_safe_k(rel, c=0.5, k_limit=-1)


def test_any_release_source_and_witness_rows():
    table = pa.table({"gid": ["m"] * 5 + ["f"] * 5,
                      "disease": FIG3[0] + FIG3[1]})
    rel_t = Release.from_table(table, sensitive="disease", group="gid")
    rel_c = Release.from_counts(rel_t.to_counts(), group="gid", sensitive="value")
    rel_b = Release.from_batches(table.to_batches(max_chunksize=3), sensitive="disease",
                                 group="gid")
    for k in range(4):
        vals = {ck.max_disclosure(r, k=k, exact=True).value for r in (rel_t, rel_c, rel_b)}
        assert vals == {[Fraction(2, 5), Fraction(2, 3), 1, 1][k]}
    r = ck.max_disclosure(rel_t, k=1)
    w = r.witness
    assert w.group_labels == ("m",)                 # groups sorted by key: f=0, m=1
    for a in (w.consequent, *w.antecedents):
        assert a.row is not None and rel_t.row_group[a.row] == a.group
        assert a.group_label == "m"
    assert all(a.row is None for a in ck.max_disclosure(rel_c, k=1).witness.antecedents)
    d = r.to_dict()
    json.dumps(d)
    assert d["value"] == pytest.approx(2 / 3) and d["knowledge_kind"] == "implications"
    assert d["witness"]["consequent"]["value"] == "flu"
    de = ck.max_disclosure(rel_t, k=1, knowledge_kind="negations", exact=True).to_dict()
    assert de["value"] == {"frac": "2/3", "float": 2 / 3}
    assert "NOT" in json.dumps(de)
    assert "->" in ck.max_disclosure(rel_t, k=1).witness.formulas()[0]


def test_result_is_frozen():
    r = ck.max_disclosure(Release.from_groups(FIG3), k=1)
    with pytest.raises(AttributeError):
        r.value = 0.5
    assert math.isclose(r.value, 1 / (1 + r.min_ratio))


# ------------------------------------------------------------------------ CLI
def test_cli_audit_ck(tmp_path, capsys):
    import pyarrow.parquet as pq

    from fastpriv.cli import main

    path = tmp_path / "fig3.parquet"
    pq.write_table(pa.table({"gid": ["m"] * 5 + ["f"] * 5, "disease": FIG3[0] + FIG3[1]}),
                   path)
    out = tmp_path / "audit.json"
    # the release fails (c,k)-safety at k = 2 (disclosure 1 ≥ 0.8): exit status 1
    assert main(["audit", str(path), "--sensitive", "disease", "--group", "gid",
                 "--k", "2", "--verbose", "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert "(c,k)-safety" in text and "k=2 implications" in text and "k=2 negations" in text
    payload = json.loads(out.read_text())["ck_safety"]
    assert payload["k"] == 2
    assert payload["implications"]["value"] == pytest.approx(1.0)
    assert payload["curve"]["k"] == [0, 1, 2]
    assert payload["curve"]["implications"] == pytest.approx([0.4, 2 / 3, 1.0])
    assert payload["curve"]["negations"] == pytest.approx([0.4, 2 / 3, 1.0])
    assert payload["implications"]["witness"]["consequent"]["group_label"] == "m"
    # the verdict at k = 0 with c = 0.5 passes (0.4 < 0.5): exit status 0
    out2 = tmp_path / "plain.json"
    assert main(["audit", str(path), "--sensitive", "disease", "--group", "gid", "--k", "0",
                 "--c", "0.5", "--min-size", "5", "--min-l", "2", "--max-t", "0.5",
                 "--point", "0,0,0", "--json", str(out2)]) == 0
    assert json.loads(out2.read_text())["verdict"]["passed"] is True
    capsys.readouterr()
    # a bad flag is refused while parsing, before any work: argparse's exit status 2
    with pytest.raises(SystemExit) as exc:
        main(["audit", str(path), "--sensitive", "disease", "--group", "gid", "--k", "-1"])
    assert exc.value.code == 2
    assert "argument --k: expected an integer >= 0" in capsys.readouterr().err
