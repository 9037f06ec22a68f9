"""Privacy skyline (fastpriv.skyline) against the spec vectors and brute force."""

from __future__ import annotations

import functools
import json
import math
import os
import random
import re
from decimal import Decimal, getcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv import skyline as sky
from fastpriv._kernels import skyline as K
from tests import naive_skyline as N
from tests.strategies import mvpi_groups, svpi_groups

HERE = Path(__file__).resolve().parent
SPEC_DIR = Path(os.environ.get("FASTPRIV_SPEC_DIR",
                               Path(__file__).resolve().parents[2] / "shared" / "spec"))
CASES = {"SVPI": "svpi", "MVPI-Set": "mvpi-set", "MVPI-Multiset": "mvpi-multiset"}
CASE_ID = {"svpi": 0, "mvpi-set": 1, "mvpi-multiset": 2}


def _vector_file() -> Path:
    local = HERE / "vectors" / "chen.jsonl"
    return local if local.exists() else SPEC_DIR / "vectors" / "chen.jsonl"


VECTORS = [json.loads(line) for line in _vector_file().read_text().splitlines() if line.strip()]


def vectors(kind):
    return [pytest.param(v, id=v["id"]) for v in VECTORS if v["kind"] == kind]


def F(x):
    return math.inf if x["frac"] == "inf" else Fraction(x["frac"])


def close(a, b, tol=1e-12):
    if a == math.inf or b == math.inf:
        return a == b
    return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=1e-300)


def make_release(case, groups, sigma=None, sizes=None):
    """Release from [{value: count}] (+ sizes for MVPI). A σ absent everywhere is added with
    count 0, so that it is a value of the release (C5: BP = 0)."""
    groups = [dict(g) for g in groups]
    if sigma is not None and not any(g.get(sigma) for g in groups):
        groups[0][sigma] = 0
    if case == "svpi":
        return fp.Release.from_groups(groups)
    return fp.Release.from_groups(groups, sizes=list(sizes), case=case)


def from_vector_release(case, release, sigma):
    return make_release(case, [g["X"] for g in release], sigma, [g["n"] for g in release])


def oracle_release(rel):
    """The Release as the oracle's [(n, {value: count})]."""
    return [(int(rel.sizes[g]), dict(rel.profile(g))) for g in range(rel.n_groups)]


def test_local_vector_copy_matches_spec():
    spec = SPEC_DIR / "vectors" / "chen.jsonl"
    local = HERE / "vectors" / "chen.jsonl"
    assert local.exists(), "tests/vectors/chen.jsonl must be committed"
    if spec.exists():
        assert local.read_bytes() == spec.read_bytes(), "tests/vectors/chen.jsonl is stale"


# ================================================================= vectors
@pytest.mark.slow
@pytest.mark.parametrize("vec", vectors("breach_probability_grid"))
def test_grid_vector(vec):
    case = CASES[vec["input"]["case"]]
    sigma = vec["input"]["sigma"]
    rel = from_vector_release(case, vec["input"]["release"], sigma)
    grid = vec["expected"]["grid"]
    pts = [(e["l"], e["k"], e["m"], Fraction(1, 2)) for e in grid]
    res = sky.check(rel, skylines={sigma: pts})
    if case != "mvpi-multiset":
        res_x = sky.check(rel, skylines={sigma: pts}, exact=True)
        assert [p.safe for p in res_x] == [F(e["bp"]) < Fraction(1, 2) for e in grid]
        assert [p.value for p in res_x] == [F(e["bp"]) for e in grid]
    for e, pr in zip(grid, res.points, strict=True):
        l, k, m = e["l"], e["k"], e["m"]
        bp, min_nr, ss = F(e["bp"]), F(e["min_nr"]), [F(x) for x in e["ss"]]
        r = sky.breach_probability(rel, sigma=sigma, l=l, k=k, m=m)
        assert close(r.value, bp) and close(r.min_nr, min_nr), (l, k, m)
        assert all(close(a, b) for a, b in zip(r.statistics, ss, strict=True)), (l, k, m)
        # SkylineCheck evaluates the same helpers: identical floats
        assert (pr.value, pr.statistics, pr.case_used) == (r.value, r.statistics, r.case_used)
        if bp != Fraction(1, 2):   # float mode: ties are decided exactly only with exact=True
            assert pr.safe == (bp < Fraction(1, 2))
        assert close(sky.dp_breach_probability(rel, sigma=sigma, l=l, k=k, m=m).value, bp)
        if case != "mvpi-multiset":
            rx = sky.breach_probability(rel, sigma=sigma, l=l, k=k, m=m, exact=True)
            assert (rx.value, rx.min_nr, list(rx.statistics)) == (bp, min_nr, ss)
            if l + k + m <= 4:
                assert sky.dp_breach_probability(rel, sigma=sigma, l=l, k=k, m=m, exact=True).value == bp
            if rx.witness is not None:
                got = sky.knowledge_probability(rel, sigma=sigma, **rx.witness.grounding(),
                                                exact=True)
                assert got == bp, (l, k, m, rx.witness)
        elif r.witness is not None:
            got = sky.knowledge_probability(rel, sigma=sigma, **r.witness.grounding())
            assert close(got, bp), (l, k, m, r.witness)


def _group_inputs(rel, sigma, g, l):
    prof = rel.profile(g)
    n = int(rel.sizes[g])
    s = dict(prof).get(sigma, 0)
    tops = [c for v, c in prof if v != sigma][:l]
    pl = 1.0
    for c in tops:
        pl *= (n - c) / n
    return n, s, sum(tops), pl, tops


@pytest.mark.parametrize("vec", vectors("breach_probability_grid"))
def test_per_group_formula_vector(vec):
    case = CASES[vec["input"]["case"]]
    sigma = vec["input"]["sigma"]
    rel = from_vector_release(case, vec["input"]["release"], sigma)
    cid = CASE_ID[case]
    for g, gf in enumerate(vec["expected"]["per_group_formulas"]):
        for key, val in gf["T"].items():
            l, k = map(int, key.split(","))
            n, s, big_s, pl, tops = _group_inputs(rel, sigma, g, l)
            got = math.inf if s == 0 else K.t_value(n, s, big_s, k, cid, pl)   # C1
            assert close(got, F(val)), (g, key)
            if s and case != "mvpi-multiset":
                assert sky._exact_t(case, n, s, tops, l, k) == F(val)
        for key, val in gf["V"].items():
            m, k = map(int, key.split(","))
            n, s, *_ = _group_inputs(rel, sigma, g, 0)
            assert close(K.v_value(n, s, m, k, cid), F(val)), (g, key)
            if case != "mvpi-multiset":
                assert sky._exact_v(n, s, m, k) == F(val)


@pytest.mark.parametrize("vec", vectors("specific_knowledge"))
def test_tom_example(vec):
    inp = vec["input"]
    sigma = inp["sigma"]
    rel = from_vector_release("svpi", inp["release"], sigma)
    orel = [(g["n"], g["X"]) for g in inp["release"]]
    t = tuple(inp["target"])
    expected = [F(p) for p in vec["expected"]["probabilities"]]
    assert expected == [Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), Fraction(2, 3)]
    for know, want in zip(inp["knowledge_sequence"], expected, strict=True):
        x = know.get("x_not_in_t", [])
        u = [(tuple(ind), y) for ind, y in know.get("u_values", [])]
        v = [tuple(ind) for ind in know.get("v_family", [])]
        assert N.joint_probability(orel, "svpi", sigma, t, x, u, v) == want
        got = sky.knowledge_probability(rel, sigma=sigma, target=t[0], x=x, u=[(g, y) for (g, _), y in u],
                                        v=[g for g, _ in v], exact=True)
        assert got == want
    # worst case of this release (spec examples)
    assert sky.breach_probability(rel, sigma=sigma, l=0, k=0, m=0, exact=True).value == Fraction(1, 2)
    assert sky.breach_probability(rel, sigma=sigma, l=1, k=1, m=0, exact=True).value == 1


@pytest.mark.parametrize("vec", vectors("knowledge_skyline"))
@pytest.mark.parametrize("exact", [True, False])
def test_knowledge_skyline_vector(vec, exact):
    inp = vec["input"]
    case = CASES[inp["case"]]
    rel = from_vector_release(case, inp["release"], inp["sigma"])
    for item in vec["expected"]["skylines"]:
        c = F(item["c"]) if exact else item["c"]["float"]
        got = sky.knowledge_skyline(rel, sigma=inp["sigma"], c=c, exact=exact)
        want = sorted(tuple(math.inf if x == "inf" else x for x in p) for p in item["skyline"])
        assert list(got) == want, (item["c"], got)
        assert got.caps == tuple(inp["caps"])


@pytest.mark.parametrize("vec", vectors("merge_monotonicity_counterexample"))
def test_merge_counterexamples(vec):
    inp = vec["input"]
    case = CASES[inp["case"]]
    sigma = inp["sigma"]
    exact = case != "mvpi-multiset"
    vals = {}
    for name in ("fine", "merged"):
        rel = from_vector_release(case, inp[name], sigma)
        vals[name] = sky.breach_probability(rel, sigma=sigma, l=inp["l"], k=inp["k"], m=inp["m"],
                                            exact=exact).value
        assert close(vals[name], F(vec["expected"][f"bp_{name}"]))
        if exact:
            assert vals[name] == F(vec["expected"][f"bp_{name}"])
    assert vals["fine"] < vals["merged"]   # splitting LOWERS BP: Theorem 4 is SVPI-only


@pytest.mark.parametrize("vec", vectors("multiset_model_contrast"))
def test_multiset_sample_space(vec):
    """Our multiset semantics is the labelled-occurrence one (bp_paper_model)."""
    sigma = vec["input"]["sigma"]
    rel = from_vector_release("mvpi-multiset", vec["input"]["release"], sigma)
    orel = [(g["n"], g["X"]) for g in vec["input"]["release"]]
    for e in vec["expected"]["grid"]:
        got = sky.breach_probability(rel, sigma=sigma, l=e["l"], k=e["k"], m=e["m"]).value
        assert close(got, F(e["bp_paper_model"]))
        assert N.breach_probability(orel, "mvpi-multiset", sigma, e["l"], e["k"],
                                    e["m"]) == F(e["bp_paper_model"])


# ================================================================= brute force, hypothesis
@st.composite
def svpi_case(draw, max_people=5, max_groups=3, max_values=3):
    groups = draw(svpi_groups(max_people=max_people, max_groups=max_groups,
                              max_values=max_values))
    sigma = draw(st.sampled_from(sorted({v for g in groups for v in g})))
    return groups, sigma


@st.composite
def mvpi_case(draw, case, max_people=3, max_groups=2):
    sizes, groups = draw(mvpi_groups(case=case, max_people=max_people, max_groups=max_groups,
                                     max_values=3, max_count=3))
    present = sorted({v for g in groups for v in g})
    sigma = draw(st.sampled_from(present or ["a"]))
    return sizes, groups, sigma


def _lkm(key):
    """The (ℓ, k, m) of a skyline point as keywords."""
    return dict(zip(("l", "k", "m"), key[:3], strict=True))


def _compare_with_oracle(rel, sigma, lmax, kmax, mmax, exact):
    orel = oracle_release(rel)
    grid = N.breach_grid(orel, rel.case, sigma, lmax, kmax, mmax)
    pts = [(l, k, m, 0.5) for (l, k, m) in grid]
    res = sky.check(rel, skylines={sigma: pts})
    for (key, want), pr in zip(grid.items(), res.points, strict=True):
        r = sky.breach_probability(rel, sigma=sigma, **_lkm(key), exact=exact)
        if exact:
            assert r.value == want, (key, r)
        assert close(r.value, want), (key, r.value, want)
        assert pr.value == sky.breach_probability(rel, sigma=sigma, **_lkm(key)).value
        assert close(sky.dp_breach_probability(rel, sigma=sigma, **_lkm(key)).value, want)
    # Theorem 2 and the DP on the oracle's own per-group quantities
    key = (lmax, kmax, mmax)
    mn, _ = N.theorem2(orel, rel.case, sigma, *key)
    assert N.bp_from_min_nr(mn) == grid[key]
    assert N.bp_from_min_nr(N.dp_min_nr(orel, rel.case, sigma, *key)) == grid[key]


@pytest.mark.slow
@given(svpi_case())
def test_svpi_against_brute_force(data):
    groups, sigma = data
    rel = make_release("svpi", [{v: g.count(v) for v in set(g)} for g in groups])
    _compare_with_oracle(rel, sigma, 2, 2, 2, exact=True)


@pytest.mark.slow
@given(mvpi_case("mvpi-set"))
def test_set_against_brute_force(data):
    sizes, groups, sigma = data
    rel = make_release("mvpi-set", groups, sigma, sizes)
    _compare_with_oracle(rel, sigma, 2, 2, 2, exact=True)


@pytest.mark.slow
@settings(max_examples=60)
@given(mvpi_case("mvpi-multiset"))
def test_multiset_against_brute_force(data):
    sizes, groups, sigma = data
    rel = make_release("mvpi-multiset", groups, sigma, sizes)
    _compare_with_oracle(rel, sigma, 2, 2, 2, exact=False)


@st.composite
def any_case(draw, max_people=7, max_count=4):
    case = draw(st.sampled_from(["svpi", "mvpi-set", "mvpi-multiset"]))
    if case == "svpi":
        groups, sigma = draw(svpi_case(max_people=max_people, max_groups=4, max_values=4))
        rel = make_release("svpi", [{v: g.count(v) for v in set(g)} for g in groups])
    else:
        sizes, groups = draw(mvpi_groups(case=case, max_people=max_people, max_groups=4,
                                         max_values=4, max_count=max_count))
        present = sorted({v for g in groups for v in g})
        sigma = draw(st.sampled_from(present or ["a"]))
        rel = make_release(case, groups, sigma, sizes)
    return rel, sigma


@pytest.mark.slow
@given(any_case(max_people=5, max_count=3), st.integers(0, 3), st.integers(0, 3),
       st.integers(0, 3))
def test_per_group_terms_against_brute_force(data, l, k, m):
    rel, sigma = data
    orel = oracle_release(rel)
    cid = CASE_ID[rel.case]
    for g in range(rel.n_groups):
        n, s, big_s, pl, _ = _group_inputs(rel, sigma, g, l)
        want_t = N.group_t(orel, rel.case, sigma, g, l, k)
        got_t = math.inf if s == 0 else K.t_value(n, s, big_s, k, cid, pl)
        assert close(got_t, want_t), (g, "T", got_t, want_t)
        assert close(K.v_value(n, s, m, k, cid), N.group_v(orel, rel.case, sigma, g, m, k))


@pytest.mark.slow
@given(any_case(max_people=12), st.integers(0, 4), st.integers(0, 6), st.integers(0, 6))
def test_witness_reproduces_breach_probability(data, l, k, m):
    rel, sigma = data
    exact = rel.case != "mvpi-multiset"
    r = sky.breach_probability(rel, sigma=sigma, l=l, k=k, m=m, exact=exact)
    if r.witness is None:
        assert r.value == 0 and r.case_used is None
        return
    w = r.witness
    assert len(w.x_values) <= l and w.n_u <= k and w.n_v <= m
    got = sky.knowledge_probability(rel, sigma=sigma, **w.grounding(), exact=exact)
    assert got == r.value if exact else close(got, r.value, 1e-9)
    # the float path agrees with the exact one, the DP with Theorem 2
    f = sky.breach_probability(rel, sigma=sigma, l=l, k=k, m=m)
    assert close(f.value, r.value)
    assert close(sky.dp_breach_probability(rel, sigma=sigma, l=l, k=k, m=m).min_nr, f.min_nr)


@st.composite
def grounding_case(draw):
    rel, sigma = draw(any_case(max_people=5, max_count=3))
    assume(N.world_count(oracle_release(rel), rel.case) <= 2000)
    G = rel.n_groups
    t = draw(st.integers(0, G - 1))
    room = [int(n) for n in rel.sizes]
    room[t] -= 1
    others = [v for v in rel.values if v != sigma]
    x = draw(st.lists(st.sampled_from(others), unique=True, max_size=2)) if others else []
    u, v = [], []
    for _ in range(draw(st.integers(0, 2))):
        g = draw(st.integers(0, G - 1))
        if room[g] > 0:
            room[g] -= 1
            u.append((g, draw(st.sampled_from(rel.values))) if rel.case == "svpi" else g)
    for _ in range(draw(st.integers(0, 2))):
        g = draw(st.integers(0, G - 1))
        if room[g] > 0:
            room[g] -= 1
            v.append(g)
    return rel, sigma, t, x, u, v


@pytest.mark.slow
@settings(max_examples=60)
@given(grounding_case())
def test_knowledge_probability_against_joint_enumeration(data):
    rel, sigma, t, x, u, v = data
    orel = oracle_release(rel)
    # name individuals: t first in its group, then u's, then v's
    nxt = {}

    def person(g):
        i = nxt.get(g, 0)
        nxt[g] = i + 1
        return (g, i)

    tt = person(t)
    ou = [(person(g), y) for g, y in u] if rel.case == "svpi" else [person(g) for g in u]
    ov = [person(g) for g in v]
    want = N.joint_probability(orel, rel.case, sigma, tt, x, ou, ov)
    if want is None:
        with pytest.raises(ValueError, match="impossible|probability 0"):
            sky.knowledge_probability(rel, sigma=sigma, target=t, x=x, u=u, v=v)
        return
    exact = rel.case != "mvpi-multiset"
    got = sky.knowledge_probability(rel, sigma=sigma, target=t, x=x, u=u, v=v, exact=exact)
    assert got == want if exact else close(got, want, 1e-12)


@given(any_case(max_people=14), st.integers(0, 3), st.integers(0, 5), st.integers(0, 5))
def test_monotone_in_l_k_m(data, l, k, m):
    rel, sigma = data
    pts = [(l, k, m, 1), (l + 1, k, m, 1), (l, k + 1, m, 1), (l, k, m + 1, 1)]
    vals = [p.value for p in sky.check(rel, skylines={sigma: pts})]
    assert vals[1] >= vals[0] and vals[2] >= vals[0] and vals[3] >= vals[0]
    if rel.case != "mvpi-multiset":
        ex = [sky.breach_probability(rel, sigma=sigma, **_lkm(p[:3]), exact=True).value for p in pts]
        assert min(ex[1:]) >= ex[0]


@pytest.mark.slow
@given(svpi_case(max_people=10, max_groups=3, max_values=4), st.integers(0, 3),
       st.integers(0, 4), st.integers(0, 4), st.data())
def test_theorem4_splitting_never_lowers_bp_svpi(data, l, k, m, draw):
    groups, sigma = data
    g = draw.draw(st.integers(0, len(groups) - 1))
    assume(len(groups[g]) >= 2)
    cut = draw.draw(st.integers(1, len(groups[g]) - 1))
    order = draw.draw(st.permutations(groups[g]))
    fine = groups[:g] + [list(order[:cut]), list(order[cut:])] + groups[g + 1:]
    as_counts = lambda gs: [{v: x.count(v) for v in set(x)} for x in gs]   # noqa: E731
    merged_rel = make_release("svpi", as_counts(groups))
    fine_rel = make_release("svpi", as_counts(fine))
    bp_m = sky.breach_probability(merged_rel, sigma=sigma, l=l, k=k, m=m, exact=True).value
    bp_f = sky.breach_probability(fine_rel, sigma=sigma, l=l, k=k, m=m, exact=True).value
    assert bp_f >= bp_m


# ================================================================= SkylineCheck state
def _random_release(rng, n_groups, case="svpi", values="abcdef"):
    groups, sizes = [], []
    for _ in range(n_groups):
        n = rng.randint(1, 9)
        if case == "svpi":
            g = {}
            for _ in range(n):
                v = rng.choice(values)
                g[v] = g.get(v, 0) + 1
        else:
            g = {v: rng.randint(0, n if case == "mvpi-set" else 5) for v in values
                 if rng.random() < 0.6}
        groups.append(g)
        sizes.append(n)
    return groups, sizes


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["svpi", "mvpi-set", "mvpi-multiset"]),
       st.integers(1, 5), st.sampled_from(["direct", "auto"]))
def test_state_split_and_merge_is_identical(seed, case, n_parts, method):
    """Any split of the groups, processed independently and merged, gives the same result.

    With the direct kernel the witness groups are identical too (first group on ties); the
    class method may name another, equally valid, group on ties (checked elsewhere)."""
    rng = random.Random(seed)
    groups, sizes = _random_release(rng, rng.randint(1, 30), case)
    skylines = {"a": [(1, 2, 1, 0.6), (0, 0, 0, 0.5)],
                "*": [(0, 3, 2, 0.9), (2, 1, 0, Fraction(3, 4))]}
    whole = make_release(case, groups, None, sizes)
    want = sky.check(whole, skylines=skylines, method=method) if "a" in whole.values else None
    part_of = [rng.randrange(n_parts) for _ in groups]
    states = []
    for p in range(n_parts):
        idx = [i for i in range(len(groups)) if part_of[i] == p]
        stp = sky.SkylineState(skylines, case=case)
        if idx:
            stp.update(make_release(case, [groups[i] for i in idx], None,
                                    [sizes[i] for i in idx]), labels=idx, method=method)
        states.append(stp)
    rng.shuffle(states)
    merged = states[0]
    for other in states[1:]:
        merged = merged.merge(other) if rng.random() < 0.5 else other.merge(merged)
    if want is None:
        with pytest.raises(ValueError, match="not a sensitive value"):
            merged.result()
        return
    got = merged.result()
    assert merged.n_groups == whole.n_groups

    def key(res):
        return sorted((repr(p.sigma), p.l, p.k, p.m, str(p.c), p.value, p.statistics,
                       p.case_used, p.safe, p.groups if method == "direct" else None)
                      for p in res.points)

    assert key(got) == key(want)


@pytest.mark.slow
@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["svpi", "mvpi-set", "mvpi-multiset"]),
       st.booleans())
def test_class_method_equals_direct_kernel(seed, case, parallel):
    rng = random.Random(seed)
    groups, sizes = _random_release(rng, rng.randint(1, 40), case)
    rel = make_release(case, groups, None, sizes)
    pts = [(rng.randint(0, 4), rng.randint(0, 6), rng.randint(0, 5), 0.7) for _ in range(6)]
    skylines = {"*": pts}
    direct = sky.check(rel, skylines=skylines, method="direct", parallel=parallel)
    classes = sky.check(rel, skylines=skylines, method="classes", parallel=parallel)
    for d, c in zip(direct.points, classes.points, strict=True):
        assert (d.sigma, d.l, d.k, d.m) == (c.sigma, c.l, c.k, c.m)
        assert (d.value, d.statistics, d.case_used, d.safe) == \
            (c.value, c.statistics, c.case_used, c.safe)
        # the class method's witness groups attain the statistics
        gidx, _, _, terms = sky._terms(rel, rel.code_of(c.sigma), c.l, c.k, c.m, False)
        row = {int(g): i for i, g in enumerate(gidx)}
        for j, g in enumerate(c.groups):
            if g is None:
                assert c.statistics[j] == (math.inf if j < 3 else 1.0)
            else:
                assert terms[row[g], j] == c.statistics[j]


def test_auto_scans_directly_when_classes_barely_group():
    """Large, diverse groups: nearly one (n, #σ) class per group, so method="auto" takes the
    direct group-major scan (each V once per group) instead of the class pass; the results
    are the class method's."""
    rng = np.random.default_rng(2)
    groups = [[f"v{x}" for x in rng.integers(0, 6, size=int(rng.integers(150, 400)))]
              for _ in range(60)]
    rel = fp.Release.from_groups(groups)
    pts = [(l, k, m, 0.9) for l in range(3) for k in range(3) for m in range(2)]
    pt = ([rel.code_of("v1")] * len(pts), *([p[j] for p in pts] for j in range(3)))
    assert sky._check_by_classes(rel, *pt, False, auto=True) == (None, None)
    assert sky._check_by_classes(rel, *pt, False)[0] is not None
    auto = sky.check(rel, skylines={"*": pts})
    classes = sky.check(rel, skylines={"*": pts}, method="classes")
    assert [(p.sigma, p.value, p.statistics) for p in auto.points] == \
        [(p.sigma, p.value, p.statistics) for p in classes.points]


def test_state_update_incrementally_and_parallel_identical():
    rng = random.Random(7)
    groups, _ = _random_release(rng, 3000)
    rel = make_release("svpi", groups)
    pts = {"*": [(l, k, m, 0.8) for l in range(3) for k in (0, 2, 5) for m in (0, 3)]}
    seq = sky.check(rel, skylines=pts, parallel=False)
    par = sky.check(rel, skylines=pts, parallel=True)
    assert seq.to_dict() == par.to_dict()
    st_ = sky.SkylineState(pts)
    st_.update(make_release("svpi", groups[:1000]), labels=range(1000))
    st_.update(make_release("svpi", groups[1000:]), labels=range(1000, 3000))
    assert st_.result().to_dict() == seq.to_dict()
    for p in seq.points[:10]:
        r = sky.breach_probability(rel, sigma=p.sigma, l=p.l, k=p.k, m=p.m)
        assert (r.value, r.statistics) == (p.value, p.statistics)


def test_check_forms_and_results():
    rel = fp.Release.from_groups([["AIDS", "AIDS", "Flu", "Flu"],
                                  ["AIDS", "Cancer", "Flu", "Flu"]])
    res = sky.check(rel, skylines=[(0, 0, 0, 0.5), (0, 0, 0, 0.75)])   # every value
    assert len(res) == 2 * rel.n_values
    by = res.by_sigma()
    assert [p.safe for p in by["AIDS"]] == [False, True]      # BP = 1/2: strict <
    assert not res.safe and len(res.violations) >= 1
    res2 = sky.check(rel, skylines={"AIDS": [(0, 0, 0, 0.75)], "*": [(1, 1, 0, 1.0)]})
    assert [(p.sigma, p.l) for p in res2.points][:2] == [("AIDS", 0), ("AIDS", 1)]
    d = res2.to_dict()
    assert json.loads(json.dumps(d)) == d
    ex = sky.check(rel, skylines={"AIDS": [(0, 0, 0, Fraction(1, 2)), (1, 1, 0, 1)]}, exact=True)
    assert [p.value for p in ex] == [Fraction(1, 2), 1] and not ex.safe
    # dict points
    assert sky.check(rel, skylines={"Flu": [{"l": 0, "k": 0, "m": 0, "c": 0.9}]}).safe


def test_c_equal_one_and_underflow():
    # V = prod (1000-i)/(2000-i), i < 900, underflows float64 but is > 0: BP < 1 exactly
    rel = fp.Release.from_groups([{"s": 1000, "a": 1000}])
    r = sky.check(rel, skylines={"s": [(0, 0, 900, 1), (0, 0, 1001, 1), (0, 0, 900, 0.999)]})
    assert [p.safe for p in r] == [True, False, False]
    assert r.points[0].value == 1.0 and r.points[0].min_nr > 0
    assert r.points[1].min_nr == 0.0
    assert sky.dp_breach_probability(rel, sigma="s", l=0, k=0, m=900).min_nr > 0


def test_multiset_numerics_large_groups():
    """1 − q^s cancels for large n; the log1p/expm1 form keeps full precision."""
    getcontext().prec = 60
    n, s, S, k = 10**9, 3, 5, 7
    got = K.t_value(n, s, S, k, 2, 1.0)
    D = Decimal
    q = (D(n - k - 1) / D(n - k)) ** s
    want = (D(n - 1) / D(n)) ** S * q / (1 - q)
    assert abs(D(got) / want - 1) < D("1e-13")
    v = K.v_value(n, s, 10, k, 2)
    assert abs(D(v) / ((D(n - k - 10) / D(n - k)) ** s) - 1) < D("1e-14")
    rel = fp.Release.from_groups([{"s": 3, "a": 5}], sizes=[10**9], case="mvpi-multiset")
    assert close(sky.breach_probability(rel, sigma="s", l=1, k=7, m=0).min_nr, float(want), 1e-12)


def test_long_v_products_log_space():
    # m > 64 switches to a log1p sum; compare with the exact product
    n, s, m, k = 5000, 40, 300, 11
    want = Fraction(1)
    for i in range(m):
        want *= Fraction(n - s - k - i, n - k - i)
    assert close(K.v_value(n, s, m, k, 0), want, 1e-11)


# ================================================================= knowledge skyline
@pytest.mark.slow
@settings(max_examples=40)
@given(any_case(max_people=7), st.fractions(min_value=Fraction(1, 10), max_value=1,
                                              max_denominator=12))
def test_knowledge_skyline_equals_corrected_a7(data, c):
    rel, sigma = data
    assume(rel.case != "mvpi-multiset")
    got = sky.knowledge_skyline(rel, sigma=sigma, c=c, exact=True)
    l_cap, k_cap, m_cap = got.caps

    def bp(l, k, m):
        return sky.breach_probability(rel, sigma=sigma, l=l, k=k, m=m, exact=True).value

    assert list(got) == N.knowledge_skyline_a7(bp, c, l_cap, k_cap, m_cap)
    for p in got:   # every reported point is safe, with caps standing for "any"
        q = [cap if x == math.inf else x for x, cap in zip(p, got.caps, strict=True)]
        assert bp(*q) < c


def test_knowledge_skyline_every_sigma_and_float():
    rel = fp.Release.from_groups([["AIDS", "AIDS", "Flu", "Flu"],
                                  ["AIDS", "Cancer", "Flu", "Flu"]])
    allsky = sky.knowledge_skylines(rel, c=0.9)
    assert set(allsky) == set(rel.values)
    assert list(allsky["AIDS"]) == [(0, 0, 1), (0, 1, 0)]
    assert allsky["AIDS"] == sky.knowledge_skyline(rel, sigma="AIDS", c=0.9)
    with pytest.warns(DeprecationWarning, match="knowledge_skylines"):
        assert sky.knowledge_skyline(rel, sigma=None, c=0.9)["Flu"] == allsky["Flu"]
    d = allsky["AIDS"].to_dict()
    assert d["points"] == [[0, 0, 1], [0, 1, 0]] and d["caps"] == [2, 8, 8]
    # c = 1: safe unless BP = 1
    full = sky.knowledge_skyline(rel, sigma="Cancer", c=1)
    for p in full:
        q = [cap if x == math.inf else x for x, cap in zip(p, full.caps, strict=True)]
        assert sky.breach_probability(rel, sigma="Cancer", **_lkm(q)).value < 1


def test_knowledge_skyline_reports_inf_at_caps():
    # MVPI-Set: knowing every other value of t's group still leaves T > 0 -> ℓ = inf.
    # (In SVPI, excluding all other values of t's group forces σ: BP(ℓ_cap,0,0) = 1.)
    rel = fp.Release.from_groups([{"s": 1, "a": 2}], sizes=[10], case="mvpi-set")
    for exact in (False, True):
        ks = sky.knowledge_skyline(rel, sigma="s", c=0.5, exact=exact)
        assert ks.caps == (1, 10, 10)
        assert all(p[0] == math.inf for p in ks) and len(ks) >= 2
        assert ks[0] == (math.inf, 0, 7) and ks[-1] == (math.inf, 7, 0)
        for p in ks:
            q = [cap if x == math.inf else x for x, cap in zip(p, ks.caps, strict=True)]
            assert sky.breach_probability(rel, sigma="s", **_lkm(q)).value < 0.5
    rel0 = make_release("svpi", [{"a": 3}], "s")    # σ occurs nowhere: BP = 0 (C5)
    assert list(sky.knowledge_skyline(rel0, sigma="s", c=0.1)) == [(math.inf, math.inf, math.inf)]
    assert sky.breach_probability(rel0, sigma="s", l=3, k=3, m=3).value == 0.0
    assert sky.breach_probability(rel0, sigma="s", l=3, k=3, m=3, exact=True).value == 0


# ================================================================= errors
def test_input_errors():
    rel = fp.Release.from_groups([["a", "b"], ["a", "c"]])
    with pytest.raises(ValueError, match="sigma: 'zz' is not a sensitive value.*'a', 'b', 'c'"):
        sky.breach_probability(rel, sigma="zz", l=0, k=0, m=0)
    for bad in ({"l": -1}, {"k": -2}, {"m": -1}):
        args = {"l": 0, "k": 0, "m": 0, **bad}
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be >= 0"):
            sky.breach_probability(rel, sigma="a", **args)
    with pytest.raises(TypeError, match="l must be an integer"):
        sky.breach_probability(rel, sigma="a", l=1.5, k=0, m=0)
    for c in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match="c must be in"):
            sky.knowledge_skyline(rel, sigma="a", c=c)
        with pytest.raises(ValueError, match="c must be in"):
            sky.check(rel, skylines={"a": [(0, 0, 0, c)]})
    with pytest.raises(ValueError, match="skylines: 'q' is not a sensitive value"):
        sky.check(rel, skylines={"q": [(0, 0, 0, 0.5)]})
    with pytest.raises(TypeError, match="tuple \\(l, k, m, c\\)"):
        sky.check(rel, skylines={"a": [(0, 0, 0)]})
    with pytest.raises(TypeError, match="skylines must be"):
        sky.check(rel, skylines=3)
    with pytest.raises(TypeError, match="data must be a fastpriv.Release"):
        sky.breach_probability([["a"]], sigma="a", l=0, k=0, m=0)
    ms = fp.Release.from_groups([{"a": 2}], sizes=[2], case="mvpi-multiset")
    with pytest.raises(ValueError, match="exact=True is available for the 'svpi' and "
                                         "'mvpi-set' cases only"):
        sky.breach_probability(ms, sigma="a", l=0, k=0, m=0, exact=True)
    with pytest.raises(ValueError, match="exact=True"):
        sky.knowledge_skyline(ms, sigma="a", c=0.5, exact=True)
    with pytest.raises(ValueError, match="exact=True"):
        sky.dp_breach_probability(ms, sigma="a", l=0, k=0, m=0, exact=True)
    with pytest.raises(ValueError, match="names 3 distinct ones"):
        sky.knowledge_probability(rel, sigma="a", target=0, u=[(0, "b"), (0, "a")])
    with pytest.raises(ValueError, match="x: the excluded values must differ from sigma"):
        sky.knowledge_probability(rel, sigma="a", target=0, x=["a"])
    st_ = sky.SkylineState({"a": [(0, 0, 0, 0.5)]})
    st_.update(rel)
    with pytest.raises(ValueError, match="case"):
        st_.update(ms)
    with pytest.raises(ValueError, match="different skylines"):
        st_.merge(sky.SkylineState({"a": [(0, 0, 1, 0.5)]}))


def test_results_serialize():
    rel = fp.Release.from_groups([["AIDS", "AIDS", "Flu", "Flu"],
                                  ["AIDS", "Cancer", "Flu", "Flu"]])
    for exact in (False, True):
        r = sky.breach_probability(rel, sigma="AIDS", l=1, k=2, m=1, exact=exact)
        d = r.to_dict()
        assert json.loads(json.dumps(d)) == d
        assert d["case_used"] in sky.TERMS and d["witness"]["t_group"] in (0, 1)
        dp = sky.dp_breach_probability(rel, sigma="AIDS", l=1, k=2, m=1, exact=exact)
        assert dp.value == r.value if exact else close(dp.value, r.value)
        assert json.loads(json.dumps(dp.to_dict())) == dp.to_dict()


def test_witness_names_rows_of_table_release():
    import pyarrow as pa

    table = pa.table({"gid": [1, 1, 1, 2, 2, 2, 2], "d": ["x", "y", "y", "x", "x", "z", "y"]})
    rel = fp.Release.from_table(table, sensitive="d", group="gid")
    r = sky.breach_probability(rel, sigma="x", l=1, k=1, m=1)
    w = r.witness
    assert w.group_labels["t"] == rel.group_labels[w.t_group]
    assert set(rel.rows_of_group(w.t_group)) <= set(range(7))
    assert sky.knowledge_probability(rel, sigma="x", **w.grounding()) == pytest.approx(r.value)


# ================================================================= CLI
def test_cli_skyline(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastpriv.cli import main

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"g": [0, 0, 0, 0, 1, 1, 1, 1],
                             "d": ["AIDS", "AIDS", "Flu", "Flu", "AIDS", "Cancer", "Flu",
                                   "Flu"]}), path)
    out = tmp_path / "o.json"
    rc = main(["skyline", str(path), "--sensitive", "d", "--group", "g", "--sigma", "AIDS",
               "--c", "0.9", "--point", "0,0,0,0.5", "--point", "0,1,0,0.9", "--json",
               str(out)])
    text = capsys.readouterr().out
    assert rc == 1   # a point is violated
    assert re.search(r"^0\s+0\s+1\s*$", text, re.M)       # the skyline point (0, 0, 1)
    data = json.loads(out.read_text())
    assert data["skylines"]["AIDS"]["points"] == [[0, 0, 1], [0, 1, 0]]
    assert [p["safe"] for p in data["check"]["points"]] == [False, True]
    rc = main(["skyline", str(path), "--sensitive", "d", "--group", "g", "--all-sigma",
               "--c", "0.9"])
    assert rc == 0 and "Cancer" in capsys.readouterr().out
    rc = main(["skyline", str(path), "--sensitive", "d", "--group", "g", "--sigma", "nope",
               "--c", "0.9"])
    assert rc == 2 and "not a sensitive value" in capsys.readouterr().err


def test_prepared_tables_match_and_validate():
    rng = random.Random(3)
    for case in ("svpi", "mvpi-set", "mvpi-multiset"):
        groups, sizes = _random_release(rng, 25, case)
        rel = make_release(case, groups, "a", sizes)
        tab = sky.prepare(rel, sigma="a")
        for l, k, m in [(0, 0, 0), (1, 2, 3), (3, 5, 1), (9, 9, 9)]:
            r = sky.breach_probability(rel, sigma="a", l=l, k=k, m=m)
            assert tab.statistics(l, k, m) == r.statistics
            assert tab.min_nr(l, k, m) == r.min_nr
            assert tab.breach_probability(l, k, m) == r.value
            assert close(tab.dp_min_nr(l, k, m),
                         sky.dp_breach_probability(rel, sigma="a", l=l, k=k, m=m).min_nr)
    small = sky.prepare(rel, sigma="a", l_max=1)
    with pytest.raises(ValueError, match="exceeds l_max=1"):
        small.min_nr(2, 0, 0)


def _every_group_scan(rel, sigma, l, k, m):
    """SkylineCheck by definition: evaluate every group holding σ (same kernel helpers for T
    and V), keep the first group attaining each strict minimum."""
    cid = CASE_ID[rel.case]
    stats = [math.inf, math.inf, math.inf, 1.0, 1.0]
    args = [-1] * 5
    for g in range(rel.n_groups):
        n, s, big_s, pl, _ = _group_inputs(rel, sigma, g, l)
        if s == 0:
            continue
        tk = K.t_value(n, s, big_s, k, cid, pl)
        vals = (K.mul(tk, K.v_value(n, s, m, k + 1, cid)), K.t_value(n, s, big_s, 0, cid, pl),
                tk, K.v_value(n, s, m, 0, cid), K.v_value(n, s, m, k, cid))
        for j, x in enumerate(vals):
            if x < stats[j]:
                stats[j], args[j] = x, g
    return stats, args


def _class_records(rel, sigma, l):
    """Groups holding σ whose S_ℓ beats every earlier group of their (n, #σ) class."""
    best, out = {}, []
    for g in range(rel.n_groups):
        n, s, big_s, _, _ = _group_inputs(rel, sigma, g, l)
        if s and big_s > best.get((n, s), -1):
            best[(n, s)] = big_s
            out.append(g)
    return out


def _exact_quotient(n, m):
    """V(m, ·) of n individuals is an exact integer quotient: n (n-1) ... (n-m+1) <= 2**53."""
    return m > n or math.prod(range(n - m + 1, n + 1)) <= 2 ** 53


@functools.lru_cache(maxsize=None)
def _same_v_path(na, nb, m_max, k_max):
    """Both group sizes take the same path of V (exact quotient or rounded factors) at every
    m <= m_max and k <= k_max + 1, and their products stay far from underflow."""
    return m_max <= 64 and nb ** m_max <= 10 ** 300 and all(
        _exact_quotient(na - k, m) == _exact_quotient(nb - k, m)
        for m in range(1, m_max + 1) for k in range(k_max + 2))


def _undominated(rel, sigma, l, m_max, k_max):
    """Groups holding σ that no earlier group dominates: same (n, #σ) class with S_ℓ at least
    as large, or (SVPI, same V path) n and n − #σ − S_ℓ no larger, #σ no smaller. The
    records must keep these (and only drop dominated ones)."""
    seen, out = [], []
    for g in range(rel.n_groups):
        n, s, big_s, _, _ = _group_inputs(rel, sigma, g, l)
        if not s:
            continue
        svpi = rel.case == "svpi"
        if rel.case == "mvpi-set" or not any(
                na == n and sa == s and ba >= big_s
                or svpi and na <= n and sa >= s and na - sa - ba <= n - s - big_s
                and _same_v_path(na, n, m_max, k_max)
                for na, sa, ba in seen):
            out.append(g)
        seen.append((n, s, big_s))
    return out


@pytest.mark.slow
def test_sigma_records_drop_dominated_groups():
    """On a release shaped like Chen's Figure 7 (groups of 100, 20 values) the (σ, ℓ)
    records keep every undominated group, drop groups dominated by an earlier group of
    another class too (fewer than the class staircases), are kept on the release and reused
    for the same (m_max, k_max)."""
    rng = np.random.default_rng(5)
    vals = rng.integers(0, 20, size=(2000, 100))
    rel = fp.Release.from_groups([[f"v{x:02d}" for x in row] for row in vals])
    code = rel.code_of("v03")
    common = sky._sigma_scan_args(rel)
    ptr, _, groups = rel.value_index[:3]
    for l in (0, 3, 10):
        rec = sky._records(rel, common, code, (l,), 7, 30)
        kept = [int(groups[i]) for i in rec]
        staircase = _class_records(rel, "v03", l)
        assert set(_undominated(rel, "v03", l, 7, 30)) <= set(kept) <= set(staircase)
        assert len(kept) < len(staircase) and rec.size < (ptr[code + 1] - ptr[code]) / 20
        assert sky._records(rel, common, code, (l,), 7, 30) is rec   # kept, not rebuilt
    for k, m in [(0, 0), (4, 7), (30, 2)]:
        got = sky.check(rel, skylines={"v03": [(10, k, m, 0.9)]}).points[0]
        assert got.min_nr == sky.dp_breach_probability(rel, sigma="v03", l=10, k=k, m=m).min_nr


def test_sigma_records_cross_class_only_on_one_v_path():
    """Across classes a group is dropped only when both groups' V values take the same path
    (exact integer quotient, or product of rounded factors): rounding then keeps the order
    of the true values. N = 9743 is the largest N with N (N-1) (N-2) (N-3) <= 2**53; groups
    of N and N + 1 straddle it at m = 4 (the second is kept) but not at m = 3 (dropped);
    two groups of 100,000 are both on the factor path at m = 4 (dropped). Every variant
    gives the every-group statistics."""
    big = 9743
    assert _exact_quotient(big, 4) and not _exact_quotient(big + 1, 4)
    cases = [([{"s": 10, "x": big - 10}, {"s": 5, "x": big - 4}], [(3, 0, [0]), (4, 0, [0, 1]),
                                                                   (3, 2, [0])]),
             ([{"s": 10, "x": 99_990}, {"s": 5, "x": 99_995}], [(4, 2, [0])])]
    for groups, runs in cases:
        rel = fp.Release.from_counts(_counts_table(groups), group="g", sensitive="v",
                                     count="c")
        code = rel.code_of("s")
        common = sky._sigma_scan_args(rel)
        ptr, _, grp = rel.value_index[:3]
        for m_max, k_max, want in runs:
            rec = K.sigma_records(*common, int(ptr[code]), int(ptr[code + 1]), CASE_ID["svpi"],
                                  0, *sky._cross_class_guard(m_max, k_max))
            assert [int(grp[i]) for i in rec] == want == _undominated(rel, "s", 0, m_max,
                                                                      k_max)
            rec.flags.writeable = False
            for k in range(k_max + 1):
                st_, ar = K.sigma_stats(*common, rec, 0, rec.size, CASE_ID["svpi"], 0, k,
                                        m_max)
                assert (st_.tolist(), ar.tolist()) == _every_group_scan(rel, "s", 0, k, m_max)


def test_cross_class_guard_bands():
    """The bands are exactly the n where some V(m, k), m <= m_max, k <= k_max + 1, changes
    path; m = 0 needs none; past 64 factors there is no cross-class test."""
    bands, n_cross = sky._cross_class_guard(4, 2)
    last_exact = {1: 2 ** 53, 2: 94_906_266, 3: 208_064, 4: 9743}
    for m, x in last_exact.items():
        assert _exact_quotient(x, m) and not _exact_quotient(x + 1, m)
    want = sorted({x + k for x in last_exact.values() for k in range(4)})
    assert bands.tolist() == want and n_cross == 2 ** 62        # 10**75 > int64: capped
    n64 = sky._cross_class_guard(64, 0)[1]                       # products of 64 factors
    assert n64 ** 64 <= 10 ** 300 < (n64 + 1) ** 64
    assert sky._cross_class_guard(0, 5)[0].size == 0
    assert sky._cross_class_guard(65, 0)[1] == -1
    assert sky._cross_class_guard(2, sky._MAX_BANDS)[1] == -1     # huge k: same class only


@st.composite
def many_groups(draw):
    """Releases with many groups of few sizes, so (n, #σ) classes repeat (the kernel skips
    dominated groups of a class) and memo slots collide."""
    case = draw(st.sampled_from(["svpi", "mvpi-set", "mvpi-multiset"]))
    n_groups = draw(st.integers(1, 40))
    groups, sizes = [], []
    for _ in range(n_groups):
        d = draw(st.integers(1, 5))
        counts = {f"v{i}": draw(st.integers(1, 4)) for i in
                  draw(st.lists(st.integers(0, 6), min_size=d, max_size=d, unique=True))}
        groups.append(counts)
        sizes.append(max(counts.values()) + draw(st.integers(0, 2)) if case != "svpi" else None)
    sigma = draw(st.sampled_from(sorted({v for g in groups for v in g})))
    if case == "svpi":
        return fp.Release.from_counts(_counts_table(groups), group="g", sensitive="v",
                                      count="c"), sigma
    return fp.Release.from_counts(_counts_table(groups, sizes), group="g", sensitive="v",
                                  count="c", sizes="n", case=case), sigma


def _counts_table(groups, sizes=None):
    import pyarrow as pa

    rows = [(gi, v, c) for gi, g in enumerate(groups) for v, c in g.items()]
    cols = {"g": pa.array([r[0] for r in rows]), "v": pa.array([r[1] for r in rows]),
            "c": pa.array([r[2] for r in rows])}
    if sizes is not None:
        cols["n"] = pa.array([sizes[r[0]] for r in rows])
    return pa.table(cols)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(many_groups(), st.integers(0, 6), st.integers(0, 6), st.integers(0, 6))
def test_sigma_scan_equals_every_group_scan(data, l, k, m):
    """The per-σ kernel (occurrence index, ℓ-major table or profile sums, dominated groups of
    a class skipped) gives the statistics and witness groups of evaluating every group —
    over all of σ's occurrences and over the (σ, ℓ) records only."""
    rel, sigma = data
    want = _every_group_scan(rel, sigma, l, k, m)
    code = rel.code_of(sigma)
    ptr = rel.value_index[0]
    common = list(sky._sigma_scan_args(rel))
    every = np.arange(ptr[code], ptr[code + 1], dtype=np.int64)
    every.flags.writeable = False                 # kernels see read-only arrays only
    for top in (common[3], sky._NO_TOP):          # with and without the ℓ-major table
        common[3] = top
        rec = K.sigma_records(*common, int(ptr[code]), int(ptr[code + 1]), CASE_ID[rel.case],
                              l, *sky._cross_class_guard(m, k))
        rec.flags.writeable = False
        assert set(rec.tolist()) <= set(every.tolist()) and list(rec) == sorted(rec)
        for occ in (every, rec):
            st_, ar = K.sigma_stats(*common, occ, 0, occ.size, CASE_ID[rel.case], l, k, m)
            assert st_.tolist() == want[0] and ar.tolist() == want[1], (top.shape, st_, want)
        groups = rel.value_index[2]
        kept = [int(groups[i]) for i in rec]
        if rel.case == "mvpi-set":
            assert rec.tolist() == every.tolist()
        else:
            assert set(_undominated(rel, sigma, l, m, k)) <= set(kept)
    res = sky.check(rel, skylines={sigma: [(l, k, m, 0.5)]}, method="direct").points[0]
    assert list(res.statistics) == want[0]
    # check()'s latency path equals the mergeable state's result
    state = sky.SkylineState({sigma: [(l, k, m, 0.5)]}).update(rel, method="direct")
    assert state.result().points[0] == res
    labels = rel.group_labels
    assert list(res.groups) == [None if g < 0 else labels[g] for g in want[1]]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(many_groups(), st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6),
                                         st.integers(0, 6)), min_size=8, max_size=20))
def test_group_major_points_equal_every_group_scan(data, points):
    """Many points of one σ are evaluated group-major (each distinct T and V once per group)
    over all occurrences or the union of their ℓs' records: same statistics and witnesses
    as evaluating every group for each point; check() agrees point by point."""
    rel, sigma = data
    code = rel.code_of(sigma)
    ptr = rel.value_index[0]
    common = sky._sigma_scan_args(rel)
    every = np.arange(ptr[code], ptr[code + 1], dtype=np.int64)
    every.flags.writeable = False
    union = sky._records(rel, common, code, tuple(sorted({p[0] for p in points})),
                         max(p[2] for p in points), max(p[1] for p in points))
    lkm = np.array(list(zip(*points, strict=True)), dtype=np.int64)
    lkm.flags.writeable = False
    for occ in (every, union):
        st_, ar = K.points_stats(*common, occ, 0, occ.size, CASE_ID[rel.case], *lkm)
        for p, (l, k, m) in enumerate(points):
            want = _every_group_scan(rel, sigma, l, k, m)
            assert st_[p].tolist() == want[0] and ar[p].tolist() == want[1], (l, k, m)
    got = sky.check(rel, skylines={sigma: [(l, k, m, 0.5) for l, k, m in points]}, method="direct")
    for p, (l, k, m) in enumerate(points):
        assert list(got.points[p].statistics) == _every_group_scan(rel, sigma, l, k, m)[0]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(many_groups(), st.lists(st.integers(0, 6), min_size=2, max_size=4, unique=True),
       st.integers(0, 6), st.integers(0, 6))
def test_records_union_on_threads_equals_union_of_each_l(data, ells, m_max, k_max):
    """The threaded union (one ℓ per thread, a byte row each) is exactly the sorted union
    of the per-ℓ records; _records takes it from _RECORDS_PARALLEL occurrences on."""
    rel, sigma = data
    code = rel.code_of(sigma)
    ptr = rel.value_index[0]
    common = sky._sigma_scan_args(rel)
    lo, hi = int(ptr[code]), int(ptr[code + 1])
    guard = sky._cross_class_guard(m_max, k_max)
    each = set()
    for x in ells:
        each.update(K.sigma_records(*common, lo, hi, CASE_ID[rel.case], x, *guard).tolist())
    ells_arr = np.array(sorted(ells), dtype=np.int64)
    ells_arr.flags.writeable = False
    got = K.records_union(*common, lo, hi, CASE_ID[rel.case], ells_arr, *guard)
    assert got.tolist() == sorted(each)


def test_records_union_is_used_for_many_occurrences(monkeypatch):
    """Above the threshold check() builds the union on threads: same statistics."""
    rng = np.random.default_rng(3)
    rel = fp.Release.from_groups([[f"v{x}" for x in rng.integers(0, 4, 30)]
                                  for _ in range(300)])
    pts = {"v1": [(l, k, m, 0.9) for l in range(3) for k in range(3) for m in range(2)]}
    seq = sky.check(rel, skylines=pts, method="direct")
    calls = []
    orig = K.records_union
    monkeypatch.setattr(K, "records_union", lambda *a: calls.append(1) or orig(*a))
    monkeypatch.setattr(sky, "_RECORDS_PARALLEL", 1)
    sky.forget_indexes(rel)                      # the same release: records found again
    par = sky.check(rel, skylines=pts, method="direct")
    assert calls and [p.statistics for p in par.points] == [p.statistics for p in seq.points]


def test_top_prefix_table_and_value_index():
    rel = fp.Release.from_groups([["a", "a", "b", "c"], ["b"], ["c", "c", "c", "a"]])
    ptr, entry, group, rank, count = rel.value_index
    for c, v in enumerate(rel.values):
        at = slice(ptr[c], ptr[c + 1])
        occ = [(int(g), int(r), int(n))
               for g, r, n in zip(group[at], rank[at], count[at], strict=True)]
        want = [(g, r, n) for g in range(rel.n_groups)
                for r, (x, n) in enumerate(rel.profile(g)) if x == v]
        assert occ == want
        assert all(rel.codes[e] == c for e in entry[ptr[c]:ptr[c + 1]])
    top = rel.top_prefix
    for g in range(rel.n_groups):
        cnt = [n for _, n in rel.profile(g)]
        assert top[:, g].tolist() == [sum(cnt[:j]) for j in range(top.shape[0])]
    # a sparse release (one very diverse group, many small ones) keeps no dense table
    sparse = fp.Release.from_groups([[f"v{i}" for i in range(200)]] + [["v0"]] * 10)
    assert sparse.top_prefix is None
    r = sky.check(sparse, skylines={"v0": [(3, 1, 1, 0.9)]}).points[0]
    assert r.value == sky.breach_probability(sparse, sigma="v0", l=3, k=1, m=1).value


def test_witness_labels_of_large_releases_are_looked_up(monkeypatch):
    # beyond _ALL_LABELS_MAX_GROUPS a check names only the witness groups (Arrow take)
    # instead of listing every label; the names must be the same either way
    from fastpriv.datasets import synthetic

    t = synthetic(6000, group_size=6, n_values=5, seed=3)
    pts = [(1, 1, 1, 0.9), (0, 2, 1, 0.7), (2, 0, 2, 0.8)]
    small = sky.check(fp.Release.from_table(t, sensitive="sensitive", group="group"), skylines=pts)
    monkeypatch.setattr(sky, "_ALL_LABELS_MAX_GROUPS", 0)
    rel = fp.Release.from_table(t, sensitive="sensitive", group="group")
    large = sky.check(rel, skylines=pts)
    assert "group_labels" not in rel.__dict__          # no full label list was built
    assert [p.groups for p in large.points] == [p.groups for p in small.points]
    assert any(g is not None for p in large.points for g in p.groups)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.5, 0.9, 0.25, Fraction(2, 3), 1, Fraction(1, 3)]),
                          st.sampled_from(["tie", "near", "far", "inf", "zero"]),
                          st.integers(-3, 3)), min_size=65, max_size=90))
def test_safe_flags_equal_is_safe(cases):
    """The vectorized safety test of large results (float tests for clear cases, exact
    fractions at near-ties) decides every point as the scalar _is_safe does."""
    cs, nr = [], []
    for c, kind, d in cases:
        r = float(sky._threshold_ratio(c))
        x = {"tie": r, "near": r * (1 + d * 1e-12), "far": r * 2.0 ** d, "inf": math.inf,
             "zero": 0.0}[kind]
        cs.append(c)
        nr.append(x)
    got = sky._safe_flags(np.array(nr), cs)
    assert got == [sky._is_safe(x, sky._threshold_ratio(c)) for x, c in zip(nr, cs, strict=True)]


# ================================================================= result protocol
def test_results_follow_the_protocol():
    import copy
    import gc
    import json

    from fastpriv.results import Result, Witness

    rel = fp.Release.from_groups([["AIDS", "AIDS", "Flu", "Flu"],
                                  ["AIDS", "Cancer", "Flu", "Flu"]])
    bp = sky.breach_probability(rel, sigma="AIDS", l=1, k=1, m=1, exact=True)
    results = [bp, sky.breach_probability(rel, sigma="AIDS", l=0, k=1, m=0),
               sky.dp_breach_probability(rel, sigma="AIDS", l=1, k=1, m=1),
               sky.check(rel, skylines={"*": [(1, 0, 0, 0.9), (0, 1, 1, 0.99)]}),
               sky.knowledge_skyline(rel, sigma="AIDS", c=0.9)]
    results.append(results[3].points[0])
    for r in results:
        assert isinstance(r, Result), type(r)
        assert r == r and r == copy.deepcopy(r)
        assert r.value is not None and isinstance(r.params, dict)
        assert r.witness is None or isinstance(r.witness, Witness)
        json.dumps(r.to_dict())
        assert r.summary().strip()
        with pytest.raises(AttributeError):
            r.value = 0       # frozen
    w = bp.witness
    assert isinstance(w, sky.SkylineWitness) and w == copy.deepcopy(w) and w.summary()
    assert sky.knowledge_probability(rel, sigma="AIDS", **w.grounding(), exact=True) == bp.value
    assert results[3].value == max(float(p.value) for p in results[3].points)
    assert list(results[4]) == [(0, 0, 1), (0, 1, 0)] and results[4].value == 2
    assert bp != sky.breach_probability(rel, sigma="AIDS", l=1, k=1, m=0, exact=True)
    # the (σ, ℓ) records are kept by the skyline module, per release, and freed with it
    sky.check(rel, skylines={"*": [(1, 1, 1, 0.9)]}, method="direct")
    key = id(rel)
    assert sky._RELEASE_INDEXES.get(key)
    sky.forget_indexes(rel)
    assert not sky._RELEASE_INDEXES[key]
    del rel, results, bp, w
    gc.collect()
    assert key not in sky._RELEASE_INDEXES
    assert not hasattr(fp.Release, "index_cache")


def test_check_takes_n_jobs_like_every_parallel_model():
    """n_jobs= sets the threads of the scan (one name for one idea); results are equal."""
    from fastpriv._threads import current_threads

    rel = fp.Release.from_groups([["a", "b", "a"], ["b", "c"], ["a", "c", "c", "b"]])
    before = current_threads()
    one = sky.check(rel, skylines={"*": [(1, 1, 1, 0.9)]}, n_jobs=1)
    every = sky.check(rel, skylines={"*": [(1, 1, 1, 0.9)]}, n_jobs=-1)
    assert one.to_dict() == every.to_dict()
    assert current_threads() == before
    with pytest.raises(fp.InputError, match="n_jobs"):
        sky.check(rel, skylines={"*": [(1, 1, 1, 0.9)]}, n_jobs=0)
