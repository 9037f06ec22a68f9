"""ART (Wong et al.): kernels vs the slow reference, outputs vs the exact audit."""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv import robustness
from fastpriv._kernels import art as K
from fastpriv._validation import kernel_array
from fastpriv.anonymize._art import art, prepare_art
from fastpriv.knowledge import Knowledge
from tests.naive_anonymizers import art_reference
from tests.naive_robustness import audit as naive_audit
from tests.naive_robustness import derived_knowledge

XS = ["Preschool", "1st-4th", "5th-6th", "7th-8th"]
QI5 = ["age", "workclass", "marital_status", "occupation", "race"]


def _vectors(name):
    here = Path(__file__).resolve().parent / "vectors" / name
    if here.exists():
        return here
    spec = Path(os.environ.get("FASTPRIV_SPEC_DIR",
                               Path(__file__).resolve().parents[2] / "shared" / "spec"))
    return spec / "vectors" / name


def _wong(kind):
    with open(_vectors("wong.jsonl")) as fh:
        return [v for v in map(json.loads, fh) if v["kind"] == kind]


@pytest.fixture(scope="module")
def adult():
    return fp.datasets.load_adult()


# ---------------------------------------------------------------------- Δ kernels
def test_delta_ceil_kernel_matches_table7_vector():
    for row in _wong("delta_ceil_table")[0]["expected"]["rows"]:
        f = float(Fraction(row["fmax"]))
        got = K.delta_ceil_value(np.int64(row["N"]), float(row["r"]), f)
        assert got == pytest.approx(row["delta_ceil"]["float"], rel=1e-14)
        assert got == pytest.approx(float(robustness.delta_ceil(row["N"], float(row["r"]), f)),
                                    rel=1e-15)


def test_required_size_tight_vector():
    v = _wong("theorem1_tight")[0]
    f = [Fraction(x) for x in v["input"]["f"]]
    d = float(max(f) - min(f))
    # Δ = Δ_ceil(6, 3, 0.3) exactly: 6 rows are required (and suffice)
    assert K.required_size(d, 3.0, float(max(f)), np.int64(3)) == 6


dyadic = st.integers(0, 16).map(lambda k: k / 16)


@given(d=dyadic, f=dyadic, r=st.sampled_from([1.5, 2.0, 2.5, 3.0, 4.0, 7.0]))
def test_required_size_equals_min_group_size(d, f, r):
    n0 = max(2, math.ceil(r))
    got = int(K.required_size(float(d), float(r), float(f), np.int64(n0)))
    if d > f:
        assert got == int(K.BIG)
        return
    want = robustness.min_group_size(Fraction(d), Fraction(r), Fraction(f))
    if want == math.inf:
        assert got == int(K.BIG)
    else:
        assert got == want


# ---------------------------------------------------------------------- kernel vs reference
@st.composite
def art_inputs(draw):
    n_prof = draw(st.integers(1, 4))
    nA = draw(st.integers(1, 3))
    nX = draw(st.integers(1, 3))
    F = [[[draw(st.integers(1, 15)) / 16 for _ in range(nX)] for _ in range(nA)]
         for _ in range(n_prof)]
    n = draw(st.integers(1, 14))
    prof = [draw(st.integers(0, n_prof - 1)) for _ in range(n)]
    cls = [draw(st.sampled_from([0, 0, 0] + list(range(1, nX + 1)))) for _ in range(n)]
    rank = [draw(st.integers(0, 5)) for _ in range(n)]
    r = draw(st.sampled_from([1.5, 2.0, 2.5, 3.0]))
    pad = draw(st.booleans())
    condition = draw(st.sampled_from(["delta", "exact"]))
    return F, prof, cls, rank, r, pad, condition


def _run_kernel(F, prof, cls, rank, r, pad, condition="delta"):
    n = len(prof)
    order = np.lexsort((np.arange(n), rank, cls, prof))
    root, merges, passes, unsat, npad, joined = K.art_merge(
        kernel_array(np.array(F, dtype=np.float64), np.float64),
        kernel_array(np.array(prof, dtype=np.int64), np.int64),
        kernel_array(np.array(cls, dtype=np.int64), np.int64),
        kernel_array(np.array(rank, dtype=np.int64), np.int64),
        kernel_array(order, np.int64), float(r), bool(pad),
        int(K.EXACT if condition == "exact" else K.DELTA))
    groups = {}
    for i, g in enumerate(root.tolist()):
        groups.setdefault(g, []).append(i)
    return sorted(sorted(m) for m in groups.values()), {i for i in range(n) if unsat[i] == 1}


@pytest.mark.slow
@settings(max_examples=300)
@given(art_inputs())
def test_art_kernel_equals_reference(inp):
    F, prof, cls, rank, r, pad, condition = inp
    got_groups, got_unsat = _run_kernel(F, prof, cls, rank, r, pad, condition)
    want_groups, want_unsat = art_reference(F, prof, cls, rank, r, pad, condition)
    assert got_groups == want_groups
    assert got_unsat == want_unsat


def test_art_kernel_reference_on_a_larger_input():
    rng = np.random.default_rng(5)
    n_prof, nA, nX, n = 6, 3, 2, 90
    F = (rng.integers(1, 16, size=(n_prof, nA, nX)) / 16).tolist()
    prof = rng.integers(0, n_prof, n).tolist()
    cls = rng.choice([0] * 8 + [1, 2], n).tolist()
    rank = rng.integers(0, 20, n).tolist()
    for r, pad, cond in ((2.0, False, "delta"), (3.0, True, "delta"), (2.5, True, "exact"),
                         (4.0, False, "exact")):
        assert _run_kernel(F, prof, cls, rank, r, pad, cond) == art_reference(
            F, prof, cls, rank, r, pad, cond)


# ---------------------------------------------------------------------- public API
def _tiny_table(seed, n=14):
    rng = np.random.default_rng(seed)
    s = rng.choice(["x", "y", "z", "w", "w", "w"], n)
    s[:2] = ["x", "y"]
    return pa.table({"a": rng.integers(0, 3, n), "b": rng.choice(["u", "v"], n), "s": s})


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("r", [2, 3])
@pytest.mark.parametrize("condition", ["delta", "exact"])
def test_art_output_is_r_robust_exactly(seed, r, condition):
    t = _tiny_table(seed)
    K_ = Knowledge.derive(t, qi=["a", "b"], sensitive="s", min_support=3)
    res = art(t, qi=["a", "b"], sensitive="s", r=r, sensitive_values=["x", "y"], knowledge=K_,
              condition=condition, on_unsatisfied="report")
    rows = [{"a": a, "b": b, "_value": s, "g": g}
            for a, b, s, g in zip(t.column("a").to_pylist(), t.column("b").to_pylist(),
                                  t.column("s").to_pylist(), res.group_ids.tolist(),
                                  strict=True)]
    know, rates = derived_knowledge([{"a": x["a"], "b": x["b"], "s": x["_value"]}
                                     for x in rows], ["a", "b"], "s", 3)
    best, problematic, undefined = naive_audit(rows, list(know), "g", r, know, rates,
                                               sensitive_values=["x", "y"])
    assert not undefined
    # m-uniqueness: each value of X_s at most once per group
    for g in set(res.group_ids.tolist()):
        vals = [x["_value"] for x in rows if x["g"] == g]
        assert vals.count("x") <= 1 and vals.count("y") <= 1
    if res.n_unsatisfied == 0:
        assert best <= Fraction(1, r)
        assert not problematic
    assert res.max_posterior == pytest.approx(float(best), abs=1e-12)
    assert res.robust == (not problematic)


@pytest.mark.slow
def test_art_on_adult_is_robust_and_m_unique(adult):
    res = art(adult, qi=QI5, sensitive="education", r=4, sensitive_values=XS)
    info = res.to_dict()
    assert info["robust"] and info["n_unsatisfied"] == 0
    assert info["max_posterior"] <= 0.25 * (1 + 1e-12)
    assert info["n_problematic_rows"] == 0
    assert info["min_sensitive_group_size"] >= 4
    # every group holds each X_s value at most once
    M = res.release.count_matrix()
    cols = [res.release.code_of(v) for v in XS]
    assert M[:, cols].max() <= 1
    # an independent audit agrees
    t = adult.append_column("gid", pa.array(res.group_ids))
    aud = robustness.audit(t, qi=QI5, sensitive="education", group="gid", r=4,
                           sensitive_values=XS)
    assert aud.robust and aud.value == pytest.approx(info["max_posterior"])


@pytest.mark.slow
def test_art_exact_condition_needs_smaller_groups(adult):
    qi = QI5 + ["sex", "native_country", "income"]
    prep = prepare_art(adult, qi, "education", sensitive_values=XS, as_one_value=True)
    d = art(adult, qi=qi, sensitive="education", r=6, prepared=prep)
    e = art(adult, qi=qi, sensitive="education", r=6, prepared=prep, condition="exact")
    assert d.robust and e.robust
    assert e.n_unsatisfied == 0 and e.params["condition"] == "exact"
    # the Δ bound is sufficient, not necessary: exact stopping merges less
    assert e.n_merges <= d.n_merges
    assert e.max_posterior <= 1 / 6 * (1 + 1e-12)


@pytest.mark.slow
def test_art_sensitive_set_as_one_value(adult):
    qi = QI5 + ["sex", "native_country", "income"]
    res = art(adult, qi=qi, sensitive="education", r=6, sensitive_values=XS, as_one_value=True)
    assert res.robust and res.n_unsatisfied == 0
    assert res.params["as_one_value"] and res.params["sensitive_values"] == [
        "{1st-4th, 5th-6th, 7th-8th, Preschool}"]
    # the release publishes the original values, at most one of the set per group
    M = res.release.count_matrix()
    cols = [res.release.code_of(v) for v in XS]
    assert M[:, cols].sum(axis=1).max() == 1
    # audited on the merged value
    merged = np.where(np.isin(np.asarray(adult.column("education").to_pylist()), XS),
                      "SET", np.asarray(adult.column("education").to_pylist()))
    t = adult.set_column(adult.column_names.index("education"), "education",
                         pa.array(merged)).append_column("gid", pa.array(res.group_ids))
    aud = robustness.audit(t, qi=qi, sensitive="education", group="gid", r=6,
                           sensitive_values=["SET"])
    assert aud.robust and aud.value == pytest.approx(res.max_posterior)
    with pytest.raises(ValueError, match="as_one_value"):
        art(adult, qi=qi, sensitive="education", r=10, as_one_value=True)


def test_art_pad_gives_every_group_r_rows(adult):
    small = adult.slice(0, 6000)
    prep = prepare_art(small, QI5[:3], "education", sensitive_values=XS, min_support=300)
    a = art(small, qi=QI5[:3], sensitive="education", r=3, prepared=prep, verify=False)
    b = art(small, qi=QI5[:3], sensitive="education", r=3, prepared=prep, pad=True)
    assert a.release.sizes.min() == 1 and b.release.sizes.min() >= 3
    assert b.pad and b.n_pad_groups > 0 and b.robust
    # padding never touches the groups holding sensitive values
    sens = np.isin(np.asarray(small.column("education").to_pylist()), XS)
    ga = {frozenset(np.flatnonzero(a.group_ids == g)) for g in np.unique(a.group_ids[sens])}
    gb = {frozenset(np.flatnonzero(b.group_ids == g)) for g in np.unique(b.group_ids[sens])}
    assert ga == gb


def test_art_pad_with_few_leftovers_joins_sensitive_groups():
    # 2 sensitive rows, r = 2: each pulls one partner; one non-sensitive row is left over
    t = pa.table({"a": [0, 0, 1, 1, 2], "s": ["x", "n", "y", "n", "n"]})
    K_ = Knowledge.from_dict({("a",): {(0,): {"x": 0.5, "y": 0.25},
                                      (1,): {"x": 0.25, "y": 0.5},
                                      (2,): {"x": 0.5, "y": 0.5}}}, fallback=0.5)
    res = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x", "y"], knowledge=K_, pad=True)
    assert res.release.sizes.min() >= 2
    assert res.n_pad_joined == 1 and res.robust


def test_art_float_r_and_nulls_drop():
    t = pa.table({"a": [0, 0, 1, 1, None, 1, 2, 0],
                  "s": ["x", "n", "n", "x", "n", "n", "n", "n"]})
    res = art(t, qi=["a"], sensitive="s", r=2.5, sensitive_values=["x"], nulls="drop",
              min_support=1)
    assert res.group_ids[4] == -1
    assert res.release.n_rows == 7
    sizes = res.release.sizes
    assert all(sizes[g] == 3 for g in set(res.group_ids[[0, 3]].tolist()))
    assert res.robust and res.max_posterior == pytest.approx(1 / 3)
    # the a = 2 row has p(2 : x) = 0: a partner would make f_min = 0 < f_max, never used
    assert sizes[res.group_ids[6]] == 1


def test_art_global_rates_only_when_no_reliable_signature():
    t = _tiny_table(3, n=20)
    res = art(t, qi=["a", "b"], sensitive="s", r=2, sensitive_values=["x"], min_support=10_000)
    assert res.params["attribute_sets"] == [[]]
    assert res.robust


def test_art_errors():
    t = _tiny_table(1)
    with pytest.raises(ValueError, match="r must be"):
        art(t, qi=["a"], sensitive="s", r=1)
    with pytest.raises(TypeError, match="r must be"):
        art(t, qi=["a"], sensitive="s", r="2")
    with pytest.raises(ValueError, match="sensitive_values"):
        art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["nope"])
    with pytest.raises(TypeError, match="knowledge"):
        art(t, qi=["a"], sensitive="s", r=2, knowledge={"a": 1})
    with pytest.raises(ValueError, match="qi"):
        art(t, qi=["zz"], sensitive="s", r=2)
    with pytest.raises(ValueError, match="on_unsatisfied"):
        art(t, qi=["a"], sensitive="s", r=2, on_unsatisfied="maybe")
    with pytest.raises(TypeError, match="pad"):
        art(t, qi=["a"], sensitive="s", r=2, pad=1)


def test_art_unsatisfiable_group_is_reported_or_raises():
    # p(a=0 : x) = 1/2, p(a=1 : x) = 0: the only partners make f_min = 0 < f_max
    t = pa.table({"a": [0, 1, 1], "s": ["x", "n", "n"]})
    K_ = Knowledge.from_dict({("a",): {(0,): {"x": 0.5}, (1,): {"x": 0.0}}}, fallback=0.5)
    res = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], knowledge=K_,
              on_unsatisfied="report")
    assert res.n_unsatisfied == 1
    # the posterior of the lone x holder is 1 > 1/2
    assert not res.robust
    with pytest.raises(ValueError, match="could not satisfy"):
        art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], knowledge=K_,
            on_unsatisfied="raise")
    with pytest.raises(ValueError, match="could not satisfy"):
        art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], knowledge=K_,
            on_unsatisfied="error")


def test_stranded_group_is_merged_anyway_or_suppressed_never_silent():
    t = pa.table({"a": [0, 1, 1], "s": ["x", "n", "n"]})
    K_ = Knowledge.from_dict({("a",): {(0,): {"x": 0.5}, (1,): {"x": 0.0}}}, fallback=0.5)
    # merge: merged into the least-harm group anyway (no merge can make it robust); the
    # result says it fails r-robustness and its tables are not published without override
    res = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], knowledge=K_,
              on_unsatisfied="merge")
    i = res.to_dict()
    assert i["on_unsatisfied"] == "merge" and i["n_stranded_groups"] == 1
    assert i["n_rescued_groups"] == 0 and i["n_merged_unsatisfied_groups"] == 1
    assert i["n_unsatisfied"] == 1 and not i["robust"]
    assert res.group_ids[0] in (res.group_ids[1], res.group_ids[2])
    assert "stranded" in i["guarantee"]
    assert "posterior above 1/r" in res.failure
    with pytest.raises(ValueError, match="fails its own criterion"):
        res.release_tables(t)
    assert res.release_tables(t, allow_failing=True)["qi"].num_rows == 3
    # default (suppress): the release loses the row and is robust
    res = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], knowledge=K_)
    i = res.to_dict()
    assert i["on_unsatisfied"] == "suppress"
    assert res.group_ids[0] == -1 and i["n_suppressed_rows"] == 1
    assert i["n_suppressed_groups"] == 1 and res.release.n_rows == 2
    assert i["robust"] and i["n_unsatisfied"] == 0 and res.failure is None
    assert res.release_tables(t)["qi"].num_rows == 2


def test_stranded_holder_is_rescued_by_an_exactly_robust_merge():
    # r = 2, X_s = {x}: holders f = 0.1, partners f = 0.5, so Δ = 0.4 needs groups of 10
    # (Theorem 1). Three holders, eighteen partners: h0 and h1 take nine each and h2 has
    # no m-unique partner left (p = 1). Merged into a group of ten it gives 2 x in 11
    # rows, and the exact posterior stays below 1/2 (max 0.216): a rescue.
    t = pa.table({"a": [0] * 3 + [1] * 18, "s": ["x"] * 3 + ["n"] * 18})
    K_ = Knowledge.from_dict({("a",): {(0,): {"x": 0.1}, (1,): {"x": 0.5}}}, fallback=0.5)
    rep = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], knowledge=K_,
              on_unsatisfied="report")
    assert rep.n_stranded_groups == 1 and not rep.robust
    res = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], knowledge=K_)
    i = res.to_dict()
    assert i["n_stranded_groups"] == 1 and i["n_rescued_groups"] == 1
    assert i["robust"] and i["n_unsatisfied"] == 0
    assert sorted(np.bincount(res.group_ids).tolist()) == [10, 11]
    assert i["max_posterior"] == pytest.approx(1 * (2 / 9 + 8) / (1 / 81 + 2 + 36))


@st.composite
def crowded_tables(draw):
    """Small tables where holders of X_s outnumber their partners (stranding is common)."""
    n = draw(st.integers(3, 12))
    a = [draw(st.integers(0, 2)) for _ in range(n)]
    b = [draw(st.sampled_from(["u", "v"])) for _ in range(n)]
    s = ["x"] + [draw(st.sampled_from(["x", "y", "x", "n"])) for _ in range(n - 1)]
    r = draw(st.sampled_from([2, 3]))
    return pa.table({"a": a, "b": b, "s": s}), r


def _exact_unsatisfied(t, res, r):
    """Sensitive rows in published groups with a posterior > 1/r (brute force)."""
    keep = [i for i, g in enumerate(res.group_ids.tolist()) if g >= 0]
    rows = [{"a": t.column("a")[i].as_py(), "b": t.column("b")[i].as_py(),
             "_value": t.column("s")[i].as_py(), "g": int(res.group_ids[i])} for i in keep]
    know, rates = derived_knowledge([{"a": t.column("a")[i].as_py(),
                                      "b": t.column("b")[i].as_py(),
                                      "s": t.column("s")[i].as_py()}
                                     for i in range(t.num_rows)], ["a", "b"], "s", 2)
    _, problematic, undefined = naive_audit(rows, list(know), "g", r, know, rates,
                                            sensitive_values=["x", "y"])
    bad_groups = {rows[k]["g"] for k, *_ in problematic}
    return sum(1 for x in rows if x["g"] in bad_groups and x["_value"] in ("x", "y")), \
        undefined


@settings(max_examples=20, deadline=None)
@given(crowded_tables(), st.sampled_from(["delta", "exact"]))
@example((pa.table({"a": [0, 0, 0, 1], "b": ["u"] * 4, "s": ["x", "x", "x", "n"]}), 2),
         "delta")
@example((pa.table({"a": [0, 1, 2, 0, 1, 2, 0, 1], "b": ["u", "v"] * 4,
                    "s": ["x", "y", "x", "n", "x", "y", "n", "x"]}), 3), "exact")
@example((pa.table({"a": [0, 0, 0], "b": ["u"] * 3, "s": ["x", "x", "x"]}), 2), "delta")
def test_every_published_group_meets_the_condition_or_is_counted(case, condition):
    t, r = case
    K_ = Knowledge.derive(t, qi=["a", "b"], sensitive="s", min_support=2)
    xs = [v for v in ("x", "y") if v in t.column("s").to_pylist()]
    out = {}
    for mode in ("merge", "suppress", "report"):
        try:
            res = art(t, qi=["a", "b"], sensitive="s", r=r, sensitive_values=xs, knowledge=K_,
                      condition=condition, on_unsatisfied=mode)
        except ValueError as exc:          # nothing can be published robustly
            assert mode == "suppress" and "every row" in str(exc)
            continue
        i = res.to_dict()
        bad, undefined = _exact_unsatisfied(t, res, r)
        assert not undefined
        assert i["on_unsatisfied"] == mode
        # every sensitive row of a non-robust published group is counted
        assert i["n_unsatisfied"] == bad
        assert i["robust"] == (bad == 0)
        if mode == "merge":
            assert (res.group_ids >= 0).all()
            assert i["n_rescued_groups"] + i["n_merged_unsatisfied_groups"] <= \
                i["n_stranded_groups"]
        if mode == "suppress":
            assert int((res.group_ids < 0).sum()) == i["n_suppressed_rows"]
            assert bad == 0
        if mode == "report":
            assert i["n_unsatisfied"] == i["n_stranded_rows"]
        out[mode] = i
    assert out["merge"]["n_stranded_groups"] == out["report"]["n_stranded_groups"]
    if out["report"]["n_stranded_groups"]:
        with pytest.raises(ValueError, match="could not satisfy"):
            art(t, qi=["a", "b"], sensitive="s", r=r, sensitive_values=xs, knowledge=K_,
                condition=condition, on_unsatisfied="raise")


def test_art_lazy_export_and_cli(tmp_path, capsys):
    import fastpriv.anonymize as A
    from fastpriv.anonymize import _art
    from fastpriv.cli import anonymize as cli_anon
    from fastpriv.cli import main

    assert A.art is _art.art            # the package's lazy export is the function
    cli_anon.load_plugins()
    assert cli_anon.METHODS["art"].source == _art.__name__   # discovered, not registered here
    out = tmp_path / "art.json"
    rc = main(["anonymize", "adult", "--qi", "age", "workclass", "marital_status",
               "--sensitive", "education", "--method", "art", "--r", "3",
               "--art-sensitive-values", *XS, "--json", str(out)])
    assert rc == 0
    payload = json.loads(out.read_text())
    assert payload["method"] == "art" and payload["n_groups"] > 1
    assert main(["anonymize", "adult", "--qi", "age", "--sensitive", "education",
                 "--method", "art"]) == 2
    assert "--r" in capsys.readouterr().err


def test_result_is_typed_and_follows_the_protocol():
    import copy
    import json

    from fastpriv.anonymize import ArtResult
    from fastpriv.results import Result

    t = pa.table({"a": [0, 0, 1, 1, 2, 2, 3, 3], "s": list("xnxnxnnn")})
    res = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], min_support=1)
    assert isinstance(res, ArtResult) and isinstance(res, Result)
    assert res.value == res.max_posterior and res.robust and res.witness is None
    assert res.r == 2.0 and res.condition == "delta" and res.n_sensitive_rows == 3
    assert res.params["r"] == 2.0 and {"prepare", "merge", "verify", "total"} <= set(res.seconds)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["robust"] and d["max_posterior"] == res.max_posterior
    assert res == res and copy.copy(res) == res and res.summary().startswith("art:")
    quick = art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"], min_support=1,
                verify=False)
    assert quick.max_posterior is None and quick.value is None and quick.robust is None
