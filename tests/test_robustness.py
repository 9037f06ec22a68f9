"""r-robustness (fastpriv.robustness): vectors, brute force, properties, extremes, audit."""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from fastpriv import robustness as rb
from fastpriv._kernels import possible_worlds as pw
from fastpriv._validation import kernel_array
from fastpriv.knowledge import Knowledge
from tests import kernels_reference as kref
from tests.naive_robustness import audit as naive_audit
from tests.naive_robustness import (
    binary_posterior,
    delta_ceil_paper,
    derived_knowledge,
    multivalued_posterior,
)
from tests.naive_robustness import min_group_size as naive_min_group_size

HERE = Path(__file__).resolve().parent
SPEC_DIR = Path(os.environ.get("FASTPRIV_SPEC_DIR",
                               Path(__file__).resolve().parents[2] / "shared" / "spec"))


def _vector_file() -> Path:
    local = HERE / "vectors" / "wong.jsonl"
    return local if local.exists() else SPEC_DIR / "vectors" / "wong.jsonl"


def vectors(kind):
    out = []
    with open(_vector_file()) as fh:
        for line in fh:
            if line.strip():
                v = json.loads(line)
                if v["kind"] == kind:
                    out.append(v)
    assert out, f"no vectors of kind {kind}"
    return out


def frac(x):
    return Fraction(x["frac"] if isinstance(x, dict) else x)


def test_vector_copy_is_current():
    local = HERE / "vectors" / "wong.jsonl"
    assert local.exists(), "tests/vectors/wong.jsonl must be committed"
    spec = SPEC_DIR / "vectors" / "wong.jsonl"
    if spec.exists():
        assert local.read_bytes() == spec.read_bytes(), "tests/vectors/wong.jsonl is stale"


def loo(f, n, *, logspace=0, limit=pw.PREFIX_LIMIT):
    """(status, posteriors, a, b, log E_n) of one segment."""
    fa = kernel_array(np.asarray(f, float), np.float64)
    st_, p, _, le = pw.binary_loo(fa, int(n), int(limit), int(logspace), 0)
    _, a, b, _ = pw.binary_loo(fa, int(n), int(limit), int(logspace), 1)
    return int(st_), p, a, b, le


# ================================================================= vectors
@pytest.mark.parametrize("vec", vectors("binary_posterior"), ids=lambda v: v["id"])
def test_binary_posterior_vectors(vec):
    f = [frac(x) for x in vec["input"]["f"]]
    n = vec["input"]["n_x"]
    exp = vec["expected"]["p"]
    if any(e is None for e in exp):
        with pytest.raises(ValueError, match="undefined"):
            rb.posterior([float(x) for x in f], n)
        return
    want = [frac(e) for e in exp]
    assert rb.posterior(f, n, exact=True) == want
    assert rb.posterior(f, n, exact=True, method="enumerate") == want
    for method in ("esp", "enumerate"):
        got = rb.posterior([float(x) for x in f], n, method=method)
        np.testing.assert_allclose(got, [float(w) for w in want], rtol=1e-12, atol=1e-15)
    if "sum_weights" in vec["expected"]:
        _, log_e = rb.posterior_batch([float(x) for x in f], [0, len(f)], [n])
        assert math.exp(log_e[0]) == pytest.approx(float(frac(vec["expected"]["sum_weights"])),
                                                   rel=1e-13)


def test_table5_is_8_over_11():
    p = rb.posterior([Fraction(1, 2)] * 2 + [Fraction(1, 5)] * 2, 2, exact=True)
    assert p == [Fraction(8, 11)] * 2 + [Fraction(3, 11)] * 2
    assert rb.posterior([0.5, 0.5, 0.2, 0.2], 2)[0] == pytest.approx(8 / 11, rel=1e-15)


@pytest.mark.parametrize("vec", vectors("multivalued_posterior"), ids=lambda v: v["id"])
@pytest.mark.parametrize("method", ["auto", "dp", "ryser", "enumerate"])
def test_multivalued_vectors(vec, method):
    P = [{k: float(frac(v)) for k, v in row.items()} for row in vec["input"]["P"]]
    got = rb.posterior_multivalued(P, vec["input"]["values"], method=method)
    exp = vec["expected"]["p"]
    assert set(got) == set(exp)
    for x, ps in exp.items():
        np.testing.assert_allclose(got[x], [float(frac(e)) for e in ps], rtol=1e-9, atol=1e-12)


def test_delta_ceil_table_exact_and_printed():
    (vec,) = vectors("delta_ceil_table")
    for row in vec["expected"]["rows"]:
        exact = rb.delta_ceil(row["N"], row["r"], Fraction(row["fmax"]))
        assert exact == frac(row["delta_ceil"])
        assert isinstance(exact, Fraction)
        fl = rb.delta_ceil(row["N"], row["r"], float(Fraction(row["fmax"])))
        assert fl == pytest.approx(float(exact), rel=1e-14)
        assert f"{float(exact):.4f}" == row["paper_printed"]
        # the paper's printed form (with its pole) agrees for f < 1
        assert delta_ceil_paper(row["N"], row["r"], Fraction(row["fmax"])) == exact


def test_theorem1_tight_case():
    (vec,) = vectors("theorem1_tight")
    f = [frac(x) for x in vec["input"]["f"]]
    r = vec["input"]["r"]
    chk = rb.delta_check(f, r)
    assert chk.delta_max == chk.delta_ceil == frac(vec["expected"]["delta_ceil"])
    assert chk.holds and chk.certifies
    p = rb.posterior(f, 1, exact=True)
    assert max(p) == frac(vec["expected"]["p_max"]) == Fraction(1, r)
    # the audit (floats) accepts the exact tie as r-robust thanks to its tolerance
    res = _audit_one_group_binary([float(x) for x in f], 1, r)
    assert res.robust and res.value == pytest.approx(1 / 3, rel=1e-13)
    assert res.n_problematic == 0


def test_counterexample_x_twice_is_flagged():
    (vec,) = [v for v in vectors("theorem1_counterexample") if v["input"]["model"] == "binary"]
    f = [frac(x) for x in vec["input"]["f"]]
    n, r = vec["input"]["n_x"], vec["input"]["r"]
    chk = rb.delta_check(f, r, n_x=n)
    assert chk.holds and not chk.certifies and "exactly one" in chk.reason
    assert chk.delta_ceil == frac(vec["expected"]["delta_ceil"])
    assert rb.posterior(f, n, exact=True) == [frac(e) for e in vec["expected"]["p"]]
    res = _audit_one_group_binary([float(x) for x in f], n, r)
    assert not res.robust
    assert res.n_problematic == 3
    assert res.delta_holds[0] and res.delta_status[0] == rb.DELTA_EXACT
    assert res.value == pytest.approx(2 / 3)


@pytest.mark.parametrize("vec", [v for v in vectors("theorem1_counterexample")
                                 if v["input"]["model"] == "multivalued"], ids=lambda v: v["id"])
def test_counterexample_multivalued_is_flagged(vec):
    P = [{k: frac(v) for k, v in row.items()} for row in vec["input"]["P"]]
    values = vec["input"]["values"]
    r = vec["input"]["r"]
    got = rb.posterior_multivalued([{k: float(v) for k, v in row.items()} for row in P], values)
    np.testing.assert_allclose(got["x"], [float(frac(e)) for e in vec["expected"]["p_x"]],
                               rtol=1e-12)
    exact, _ = multivalued_posterior(P, values)
    assert exact["x"] == [frac(e) for e in vec["expected"]["p_x"]]
    # the Δ condition holds for every value of this m-unique group ...
    for x in sorted(set(values)):
        fx = [row[x] for row in P]
        chk = rb.delta_check(fx, r)
        if x == "x" or vec["id"].endswith("all-values"):
            assert chk.holds, (x, chk)
    # ... the multi-valued audit flags the group, the binary audit certifies / clears it
    table, know = _table_from_distributions(P, values)
    mv = rb.audit(table, group="g", sensitive="s", r=r, knowledge=know, model="multivalued")
    assert not mv.robust and mv.value == pytest.approx(float(frac(vec["expected"]["p_x"][0])))
    assert mv.delta_status[0] == rb.DELTA_EXACT
    assert 0 in set(mv.problematic_rows.tolist())
    if "binary_model_p_x" in vec["expected"]:
        assert mv.delta_holds[0]
        bi = rb.audit(table, group="g", sensitive="s", r=r, knowledge=know, model="binary")
        assert bi.robust and bi.delta_status[0] == rb.DELTA_CERTIFIED
        p_bin = rb.posterior([float(row["x"]) for row in P], 1)
        np.testing.assert_allclose(p_bin, [float(frac(e)) for e in
                                           vec["expected"]["binary_model_p_x"]], rtol=1e-12)


def _table_from_distributions(P, values):
    """One group; tuple j has its own signature 'sj' whose distribution is P[j]."""
    N = len(P)
    table = pa.table({"sig": [f"s{j}" for j in range(N)], "g": [0] * N, "s": list(values)})
    know = Knowledge.from_dict({"sig": {f"s{j}": {k: float(v) for k, v in P[j].items()}
                                        for j in range(N)}}, fallback=0.0)
    return table, know


def _audit_one_group_binary(f, n, r):
    N = len(f)
    vals = ["x"] * n + [f"y{i}" for i in range(N - n)]
    table = pa.table({"sig": [f"s{j}" for j in range(N)], "g": [0] * N, "s": vals})
    know = Knowledge.from_dict({"sig": {f"s{j}": {"x": f[j]} for j in range(N)}}, fallback=0.0)
    return rb.audit(table, group="g", sensitive="s", r=r, knowledge=know,
                    sensitive_values=["x"])


# ================================================================= properties: binary
probs = st.one_of(st.just(0.0), st.just(1.0), st.floats(0, 1),
                  st.floats(0, 1).map(lambda v: v ** 12),
                  st.floats(0, 1).map(lambda v: 1 - v ** 12))


@st.composite
def binary_groups(draw, max_n=10):
    N = draw(st.integers(1, max_n))
    f = draw(st.lists(probs, min_size=N, max_size=N))
    n = draw(st.integers(0, N))
    return f, n


@pytest.mark.slow
@given(binary_groups())
def test_esp_equals_enumeration_and_oracle(case):
    f, n = case
    exp, _ = binary_posterior(f, n)
    if exp is None:
        with pytest.raises(ValueError, match="undefined"):
            rb.posterior(f, n)
        st_, p, *_ = loo(f, n)
        assert st_ == pw.STATUS_UNDEFINED and np.isnan(p).all()
        return
    want = np.array([float(x) for x in exp])
    esp = rb.posterior(f, n)
    enum = rb.posterior(f, n, method="enumerate")
    np.testing.assert_allclose(esp, want, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(enum, want, rtol=1e-10, atol=1e-14)
    assert math.isclose(float(np.sum(esp)), n, rel_tol=1e-12, abs_tol=1e-12)
    # log-space twin and √N-checkpointed prefix give the same numbers
    for kw in ({"logspace": 1}, {"limit": 2}, {"limit": 2, "logspace": 1}):
        st_, p, *_ = loo(f, n, **kw)
        np.testing.assert_allclose(p, want, rtol=1e-9, atol=1e-14)


@pytest.mark.slow
@given(binary_groups(max_n=7))
def test_exact_esp_equals_oracle_exactly(case):
    f, n = case
    exp, _ = binary_posterior(f, n)
    assume(exp is not None)
    assert rb.posterior([Fraction(v) for v in f], n, exact=True) == exp


@pytest.mark.slow
@given(binary_groups(max_n=8))
def test_leave_one_out_identities(case):
    f, n = case
    exp, tot = binary_posterior(f, n)
    assume(exp is not None)
    st_, p, a, b, log_e = loo(f, n)
    fa = np.asarray(f)
    # f a + (1 - f) b = 1, and log E_n matches the oracle's total weight
    ok = np.isfinite(a) & np.isfinite(b)         # a_j may overflow (documented)
    with np.errstate(invalid="ignore"):
        ident = fa * a + (1 - fa) * b
        pa_ = fa * a
    np.testing.assert_allclose(ident[ok], 1.0, rtol=1e-10)
    np.testing.assert_allclose(pa_[ok & (fa > 1e-300)], p[ok & (fa > 1e-300)],
                               rtol=1e-10, atol=1e-300)
    log_tot = math.log(tot.numerator) - math.log(tot.denominator)   # exact, no underflow
    assert log_e == pytest.approx(log_tot, rel=1e-10, abs=1e-10)
    assert kref.binary_log_en(kernel_array(fa, np.float64), int(n)) == pytest.approx(
        log_tot, rel=1e-10, abs=1e-10)


@pytest.mark.slow
@given(st.lists(binary_groups(max_n=6), min_size=1, max_size=6))
def test_batched_kernel_equals_single_groups(cases):
    f = np.concatenate([np.asarray(c[0], float) for c in cases])
    off = np.concatenate([[0], np.cumsum([len(c[0]) for c in cases])])
    n = np.array([c[1] for c in cases])
    p, log_e = rb.posterior_batch(f, off, n)
    for s, (fs, ns) in enumerate(cases):
        exp, tot = binary_posterior(fs, ns)
        got = p[off[s]:off[s + 1]]
        if exp is None:
            assert np.isnan(got).all() and log_e[s] == -np.inf
        else:
            np.testing.assert_allclose(got, [float(x) for x in exp], rtol=1e-10, atol=1e-14)


# ================================================================= properties: multi-valued
@st.composite
def mv_groups(draw, max_n=6):
    N = draw(st.integers(1, max_n))
    K = draw(st.integers(1, min(4, N)))
    vals = "xyzw"[:K]
    values = draw(st.lists(st.sampled_from(vals), min_size=N, max_size=N))
    rows = []
    for _ in range(N):
        raw = draw(st.lists(st.one_of(st.just(0.0), st.floats(0, 1), st.just(1.0)),
                            min_size=4, max_size=4))
        s = sum(raw)
        rows.append({v: (p / s if s > 1 else p) for v, p in zip("xyzw", raw, strict=True)})
    return rows, values


@pytest.mark.slow
@given(mv_groups())
def test_multivalued_methods_equal_oracle(case):
    P, values = case
    exp, _ = multivalued_posterior(P, values)
    if exp is None:
        for m in ("dp", "ryser", "enumerate"):
            with pytest.raises(ValueError, match="undefined"):
                rb.posterior_multivalued(P, values, method=m)
        return
    for m in ("dp", "enumerate"):
        got = rb.posterior_multivalued(P, values, method=m)
        for x, ps in exp.items():
            np.testing.assert_allclose(got[x], [float(v) for v in ps], rtol=1e-9, atol=1e-12)
    # Ryser: accurate up to its cancellation (it refuses beyond a ratio of 1e10)
    try:
        got = rb.posterior_multivalued(P, values, method="ryser")
    except ValueError as exc:
        assert "unreliable" in str(exc)
        return
    for x, ps in exp.items():
        np.testing.assert_allclose(got[x], [float(v) for v in ps], atol=1e-5)
    for x in exp:
        assert math.isclose(float(np.sum(got[x])), values.count(x), rel_tol=1e-6)


def test_ryser_and_dp_agree_on_a_larger_group():
    rng = np.random.default_rng(3)
    N = 12
    values = ["a", "b", "c", "d", "e", "f"] * 2
    P = [dict(zip("abcdef", rng.dirichlet(np.ones(6)), strict=True)) for _ in range(N)]
    dp = rb.posterior_multivalued(P, values, method="dp")
    ry = rb.posterior_multivalued(P, values, method="ryser")
    for x in dp:
        np.testing.assert_allclose(ry[x], dp[x], atol=1e-8)
        assert math.isclose(dp[x].sum(), 2.0, rel_tol=1e-12)
    # the two methods really are different code paths (Ryser reports its cancellation)
    M = np.array([[row[v] for v in "abcdef"] for row in P])
    mult = np.full(6, 2, dtype=np.int64)
    for meth, cancel_gt_1 in ((pw.METHOD_DP, False), (pw.METHOD_RYSER, True)):
        post, st_, _, cancel = pw.mv_posteriors_one(kernel_array(M.ravel(), np.float64),
                                                     kernel_array(mult, np.int64), meth)
        assert st_ == 0 and (cancel > 1.0) == cancel_gt_1


def test_ryser_gray_code_visits_every_state_once():
    # the permanent of the all-ones matrix with multiplicities: N! / Π m_k! worlds
    P = [{"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}] * 6
    values = ["a", "a", "b", "b", "b", "c"]
    ml = np.array([2, 3, 1], dtype=np.int64)
    M = np.ones((6, 3))
    out, st_, logz, cancel = pw.mv_posteriors_csr(
        kernel_array(M.ravel(), np.float64), kernel_array(np.array([0, 18]), np.int64),
        kernel_array(ml, np.int64), kernel_array(np.array([0, 3]), np.int64), pw.METHOD_RYSER)
    assert st_[0] == 0 and math.exp(logz[0]) == pytest.approx(60.0, rel=1e-12)
    post = rb.posterior_multivalued(P, values, method="ryser")
    np.testing.assert_allclose(post["b"], 0.5, rtol=1e-12)


# ================================================================= Δ bound properties
rs = st.integers(2, 6)


@pytest.mark.slow
@given(st.integers(1, 40), rs, st.fractions(0, 1))
@example(22, 2, Fraction(36927554, 36927555))   # float(f) moves 1 - f by 1.9e-9 of itself
def test_delta_ceil_forms_and_monotone(N, r, f):
    d = rb.delta_ceil(N, r, f)
    if N > 1 and f < 1:
        assert d == delta_ceil_paper(N, r, f)
    assert rb.delta_ceil(N + 1, r, f) >= d           # Lemma 1
    if N < r and 0 < f < 1:
        assert d < 0
    # the float form against the exact value at the float it is given (near f = 1, rounding
    # f itself changes 1 - f, and so Δ, by far more than the formula's own error)
    exact = rb.delta_ceil(N, r, Fraction(float(f)))
    assert rb.delta_ceil(N, r, float(f)) == pytest.approx(float(exact), rel=1e-12, abs=1e-15)


@pytest.mark.slow
@given(st.fractions(0, 1, max_denominator=60), rs, st.fractions(0, 1, max_denominator=60))
def test_min_group_size_matches_scan(delta, r, f):
    got = rb.min_group_size(delta, r, f)
    want = naive_min_group_size(delta, r, f, n_max=400)
    if want is None:
        assert got == math.inf or got > 400
    else:
        assert got == want
        assert rb.min_group_size(float(delta), r, float(f)) in (want, want - 1, want + 1)


@pytest.mark.slow
@settings(max_examples=60)
@given(st.integers(2, 7), st.data())
def test_theorem1_certificate_is_sound_binary_x_once(N, data):
    """Brute-force check of Theorem 1 itself: Δ ≤ Δ_ceil with x once ⇒ p ≤ 1/r."""
    r = data.draw(st.integers(2, N))
    fmax = data.draw(st.fractions(Fraction(1, 50), Fraction(49, 50), max_denominator=50))
    dc = rb.delta_ceil(N, r, fmax)
    assume(dc >= 0)
    lo = max(Fraction(0), fmax - dc)
    ts = data.draw(st.lists(st.fractions(0, 1, max_denominator=20), min_size=N - 1,
                            max_size=N - 1))
    others = [lo + (fmax - lo) * t for t in ts]
    f = [fmax] + others
    chk = rb.delta_check(f, r)
    assert chk.certifies
    exp, _ = binary_posterior(f, 1)
    assert max(exp) <= Fraction(1, r)


# ================================================================= extremes
def test_n3000_f09_gives_one_over_3000():
    p = rb.posterior([0.9] * 3000, 1)
    np.testing.assert_allclose(p, 1 / 3000, rtol=1e-12)
    p = rb.posterior([0.9] * 3000, 2999)        # complement path
    np.testing.assert_allclose(p, 2999 / 3000, rtol=1e-12)


def test_near_zero_and_near_one_against_exact_fractions():
    f = [1e-300, 5e-324, 1 - 2 ** -53, 0.5, 1e-17, 1 - 1e-12, 0.999999, 3e-8]
    for n in range(len(f) + 1):
        exact = rb.posterior([Fraction(v) for v in f], n, exact=True)
        got = rb.posterior(f, n)
        want = np.array([float(v) for v in exact])
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)


@pytest.mark.slow
def test_large_groups_do_not_underflow():
    rng = np.random.default_rng(0)
    for N, n in ((5000, 7), (4000, 2000), (20000, 40)):
        f = rng.uniform(0, 1, N) ** 3
        p, log_e = rb.posterior_batch(f, [0, N], [n])
        assert np.isfinite(p).all() and np.isfinite(log_e).all()
        assert p.sum() == pytest.approx(n, rel=1e-9)
        st_, pl, *_ = loo(f, n, logspace=1)
        np.testing.assert_allclose(p, pl, rtol=1e-8, atol=1e-300)


def test_checkpointed_prefix_matches_full_table():
    rng = np.random.default_rng(1)
    f = rng.uniform(0, 1, 700)
    full = loo(f, 300, limit=1 << 30)[1]
    blocked = loo(f, 300, limit=1000)[1]
    np.testing.assert_allclose(blocked, full, rtol=1e-11)


@pytest.mark.slow
def test_float_path_falls_back_to_log_space_when_rows_underflow():
    # forcing ~60 "unlikely" events pushes coefficients below 1e-308 relative
    f = [1 - 1e-12] * 60 + [1e-12] * 60
    n = 60 - 30 + 30   # 30 of the near-certain tuples must be "not x"... and 30 unlikely x
    exact = rb.posterior([Fraction(v) for v in f], n, exact=True)
    st_, p, *_ = loo(f, n)
    assert st_ in (pw.STATUS_OK, pw.STATUS_LOGSPACE)
    np.testing.assert_allclose(p, [float(v) for v in exact], rtol=1e-7)
    f2 = [1e-15] * 20 + [3e-15] * 20       # E_20 ~ 1e-300: the float path underflows
    exact2 = rb.posterior([Fraction(v) for v in f2], 20, exact=True)
    st2, p2, *_ = loo(f2, 20)
    assert st2 == pw.STATUS_LOGSPACE
    np.testing.assert_allclose(p2, [float(v) for v in exact2], rtol=1e-7)


def test_subnormal_probabilities_multivalued_and_small_path():
    # every world must give x (prob 5e-324) to tuple 4: products lose their digits in the
    # float DP, so it switches to log space; Ryser refuses rather than guess
    P = [{"y": 1.0}, {"x": 0.5, "z": 0.5}, {"z": 1.0}, {"x": 1 / 3, "z": 2 / 3},
         {"x": 5e-324, "y": 1.0}]
    values = ["x", "x", "y", "z", "z"]
    exp, _ = multivalued_posterior(P, values)
    got = rb.posterior_multivalued(P, values, method="dp")
    for x, ps in exp.items():
        np.testing.assert_allclose(got[x], [float(v) for v in ps], rtol=1e-12, atol=1e-300)
    with pytest.raises(ValueError, match="unreliable"):
        rb.posterior_multivalued(P, values, method="ryser")
    # binary closed form (n = N - 1) with odds that overflow falls back to the tables
    f = [5e-324, 1e-300, 0.5, 0.9]
    exact = rb.posterior([Fraction(v) for v in f], 3, exact=True)
    np.testing.assert_allclose(rb.posterior(f, 3), [float(v) for v in exact], rtol=1e-9)


def test_multivalued_dp_falls_back_to_layers_when_the_total_underflows():
    # x once, y 19 times; rows 0-9 hold y with 1e-30: Z ~ 1e-270 (every world uses nine)
    P = [{"x": 1.0, "y": 1e-30}] * 10 + [{"x": 1e-30, "y": 1.0}] * 10
    values = ["x"] + ["y"] * 19
    exp, _ = multivalued_posterior(P, values)
    got = rb.posterior_multivalued(P, values, method="dp")
    for x, ps in exp.items():
        np.testing.assert_allclose(got[x], [float(v) for v in ps], rtol=1e-12, atol=1e-300)


# ================================================================= errors
def test_undefined_posterior_names_the_group():
    with pytest.raises(ValueError, match=r"group 'L7'.*2 tuples have f = 1"):
        rb.posterior([1.0, 1.0, 0.3], 1, group="L7")
    with pytest.raises(ValueError, match="only 1 tuple have f > 0"):
        rb.posterior([0.0, 0.4, 0.0], 2)
    with pytest.raises(ValueError, match="undefined for group 3"):
        rb.posterior_multivalued([{"x": 1.0}, {"x": 1.0}], ["x", "y"], group=3)


@pytest.mark.parametrize("f,n,exc,msg", [
    ([0.2, float("nan")], 1, ValueError, "non-finite"),
    ([0.2, 1.5], 1, ValueError, r"in \[0, 1\]"),
    ([0.2, 0.3], 3, ValueError, "n_x must be between"),
    ([0.2, 0.3], 1.5, TypeError, "n_x must be an integer"),
    ([], 0, ValueError, "empty"),
    ("abc", 1, TypeError, "sequence"),
])
def test_posterior_input_errors(f, n, exc, msg):
    with pytest.raises(exc, match=msg):
        rb.posterior(f, n)


def test_posterior_other_errors():
    with pytest.raises(ValueError, match="method"):
        rb.posterior([0.5], 1, method="magic")
    with pytest.raises(ValueError, match="possible worlds"):
        rb.posterior([0.5] * 60, 30, method="enumerate")
    with pytest.raises(ValueError, match="sum to"):
        rb.posterior_multivalued([{"x": 0.7, "y": 0.5}], ["x"])
    with pytest.raises(ValueError, match="entries but P has"):
        rb.posterior_multivalued([{"x": 0.7}], ["x", "y"])
    with pytest.raises(TypeError, match="mapping"):
        rb.posterior_multivalued([[0.5]], ["x"])
    big = [{f"v{i}": 0.02 for i in range(30)}] * 30
    with pytest.raises(ValueError, match="limited to 25 tuples"):
        rb.posterior_multivalued(big, [f"v{i}" for i in range(30)])
    with pytest.raises(ValueError, match="DP states"):
        rb.posterior_multivalued(big[:5], [f"v{i}" for i in range(5)], method="dp",
                                 max_states=4)
    with pytest.raises(ValueError, match="r must be > 1"):
        rb.delta_ceil(3, 1, 0.5)
    with pytest.raises(TypeError, match="N must be an integer"):
        rb.delta_ceil(3.5, 2, 0.5)
    with pytest.raises(ValueError, match="f_max"):
        rb.delta_ceil(3, 2, 1.5)
    with pytest.raises(ValueError, match="delta must be >= 0"):
        rb.min_group_size(-0.1, 2, 0.5)
    with pytest.raises(ValueError, match="offsets"):
        rb.posterior_batch([0.5, 0.5], [0, 1], [1])


def test_delta_special_values():
    assert rb.delta_ceil(1, 2, 0.3) == pytest.approx(-0.7)
    assert rb.delta_ceil(5, 2, 0) == 0 and rb.delta_ceil(5, 2, 1) == 0
    assert rb.min_group_size(0, 3, 0) == 3 and rb.min_group_size(0.1, 3, 1) == math.inf
    assert rb.min_group_size(Fraction(1, 2), 2, Fraction(1, 2)) == math.inf
    assert rb.min_group_size(0, Fraction(5, 2), Fraction(1, 3)) == 3
    arr = rb.delta_ceil(np.array([3, 6]), np.array([2, 4]), np.array([0.1, 0.3]))
    np.testing.assert_allclose(arr, [9 / 190, 21 / 220])
    chk = rb.delta_check([1.0, 1.0, 1.0], 2)
    assert chk.holds and not chk.certifies and "undefined" in chk.reason
    assert rb.delta_check([0.3], 2).reason == "N < r"
    assert rb.delta_check([0.9, 0.1, 0.1], 2).reason == "Δ_max > Δ_ceil"
    assert json.dumps(rb.delta_check([Fraction(1, 3)] * 3, 2).to_dict())


# ================================================================= audit vs brute force
@st.composite
def tiny_tables(draw, max_rows=7):
    n = draw(st.integers(2, max_rows))
    rows = []
    for _i in range(n):
        rows.append({"a": draw(st.sampled_from("pq")), "b": draw(st.sampled_from([1, 2, 3])),
                     "g": draw(st.integers(0, 2)), "_value": draw(st.sampled_from("xyz"))})
    return rows


def _to_table(rows):
    return pa.table({"a": [r["a"] for r in rows], "b": [r["b"] for r in rows],
                     "g": [r["g"] for r in rows], "s": [r["_value"] for r in rows]})


@pytest.mark.slow
@settings(max_examples=60)
@given(tiny_tables(), st.sampled_from([2, 3, 1.5]), st.integers(1, 3),
       st.sampled_from(["binary", "multivalued"]))
def test_audit_equals_brute_force_with_derived_knowledge(rows, r, support, model):
    table = _to_table(rows)
    know, rates = derived_knowledge(rows, ["a", "b"], "_value", support)
    res = rb.audit(table, qi=["a", "b"], group="g", sensitive="s", r=r, min_support=support,
                   model=model)
    sets = list(know) or [()]                      # no reliable signature: global rates
    assert set(res.attribute_sets) == set(sets)
    best, prob, undef = naive_audit(rows, sets, "g", Fraction(r), know, rates, model=model)
    assert not undef and not res.undefined         # true frequencies never contradict
    assert res.value == pytest.approx(float(best), rel=1e-9, abs=1e-12)
    got = {(int(r_), res.attribute_sets[a], res.values[v])
           for r_, a, v in zip(res.problematic_rows, res.problematic_sets,
                               res.problematic_values, strict=True)}
    want = {(i, A, x) for i, A, x, p in prob if p > Fraction(1, 1) / Fraction(r) * (1 + 1e-9)}
    near = {(i, A, x) for i, A, x, p in prob}
    assert want <= got <= near
    assert res.robust == (best <= 1 / Fraction(r))


@pytest.mark.slow
@settings(max_examples=60)
@given(tiny_tables(), st.sampled_from([2, 3]), st.data())
def test_audit_equals_brute_force_with_user_knowledge(rows, r, data):
    table = _to_table(rows)
    pv = st.sampled_from([Fraction(0), Fraction(1), Fraction(1, 3), Fraction(1, 10),
                          Fraction(7, 10)])
    dist = {("a",): {(s,): {x: data.draw(pv) for x in "xyz"} for s in "pq"},
            ("a", "b"): {(s, b): {x: data.draw(pv) for x in "xyz"}
                         for s in "pq" for b in (1, 2)}}        # b = 3 falls back
    fallback = {x: Fraction(1, 4) for x in "xyz"}
    know = Knowledge.from_dict({A: {s: {x: float(p) for x, p in d.items()}
                                    for s, d in sig.items()} for A, sig in dist.items()},
                               fallback={x: float(p) for x, p in fallback.items()})
    xs = data.draw(st.sampled_from([None, ["x"], ["x", "z"]]))
    present = {r_["_value"] for r_ in rows}
    assume(xs is None or set(xs) <= present)
    res = rb.audit(table, group="g", sensitive="s", r=r, knowledge=know, sensitive_values=xs)
    best, prob, undef = naive_audit(rows, [("a",), ("a", "b")], "g", Fraction(r), dist,
                                    fallback, sensitive_values=xs)
    assert res.value == pytest.approx(float(best), rel=1e-9, abs=1e-12)
    got = {(int(r_), res.attribute_sets[a], res.values[v])
           for r_, a, v in zip(res.problematic_rows, res.problematic_sets,
                               res.problematic_values, strict=True)}
    assert got == {(i, A, x) for i, A, x, p in prob}
    # undefined (group, set, value) for present values; absent values with p = 1 too
    und_present = {(u["group"], tuple(u["attribute_set"]), u["value"]) for u in res.undefined
                   if "row" not in u}
    assert und_present == {(g, A, x) for g, A, x in undef
                           if any(r_["g"] == g and r_["_value"] == x for r_ in rows)}
    und_absent = {(u["group"], tuple(u["attribute_set"]), u["value"]) for u in res.undefined
                  if "row" in u}
    assert und_absent == {(g, A, x) for g, A, x in undef
                          if not any(r_["g"] == g and r_["_value"] == x for r_ in rows)}


# ================================================================= audit behaviour
def _anatomy_like(n=600, seed=0, r=3):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = rng.integers(0, 3, n)
    s = (a + rng.integers(0, 3, n)) % 6
    order = np.argsort(s, kind="stable")
    g = np.empty(n, dtype=np.int64)
    g[order] = np.arange(n) % (n // r)
    return pa.table({"a": a, "b": b.astype(str), "g": g, "s": [f"v{v}" for v in s]})


@pytest.mark.slow
def test_audit_chunking_and_release_input_agree():
    t = _anatomy_like()
    base = rb.audit(t, qi=["a", "b"], group="g", sensitive="s", r=3, min_support=20)
    small = rb.audit(t, qi=["a", "b"], group="g", sensitive="s", r=3, min_support=20,
                     chunk_entries=50)
    from fastpriv import Release

    rel = Release.from_table(t, sensitive="s", group="g", qi=["a", "b"])
    via_rel = rb.audit(rel, qi=["a", "b"], r=3, min_support=20)
    for other in (small, via_rel):
        assert other.value == base.value
        np.testing.assert_array_equal(other.group_max, base.group_max)
        np.testing.assert_array_equal(other.row_max, base.row_max)
        np.testing.assert_array_equal(other.delta_status, base.delta_status)
        assert sorted(zip(other.problematic_rows, other.problematic_sets,
                          other.problematic_values, strict=True)) == \
            sorted(zip(base.problematic_rows, base.problematic_sets, base.problematic_values,
                       strict=True))
    # witness is consistent with the per-row maxima and the group maxima
    w = base.witness
    assert base.row_max[w.row] == base.value == np.nanmax(base.group_max)
    assert list(w.signature) == [t.column(c)[w.row].as_py() for c in w.attribute_set]
    json.dumps(base.to_dict())
    assert base.problematic_table().num_rows == base.n_problematic
    assert "groups:" in base.summary(verbose=True) and "groups:" not in base.summary()


def test_audit_delta_status_and_certified_groups_are_really_robust():
    rng = np.random.default_rng(5)
    n = 1200          # weakly informative QIs, random groups of 4: many groups pass the
    t = pa.table({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n).astype(str),
                  "g": np.repeat(np.arange(n // 4), 4),
                  "s": [f"v{v}" for v in rng.integers(0, 6, n)]})   # bound, some hold v0 twice
    res = rb.audit(t, qi=["a", "b"], group="g", sensitive="s", r=2, min_support=30,
                   sensitive_values=["v0", "v5"])
    cert = res.delta_status == rb.DELTA_CERTIFIED
    assert cert.any() and (res.delta_status == rb.DELTA_EXACT).any()
    assert res.certified_violations == 0
    assert np.all(res.group_max[cert] <= 0.5 + 1e-12)
    none = res.delta_status == rb.DELTA_NONE
    assert np.all(res.group_max[none] == 0)


def test_audit_reports_undefined_instead_of_crashing():
    t = pa.table({"a": ["p", "p", "q", "q"], "g": [0, 0, 1, 1], "s": ["x", "y", "y", "y"]})
    # knowledge: every 'p' is certainly x (two of them, one x) and every 'q' is x too (no x)
    k = Knowledge.from_dict({"a": {"p": {"x": 1.0, "y": 0.0}, "q": {"x": 1.0, "y": 0.0}}})
    res = rb.audit(t, group="g", sensitive="s", r=2, knowledge=k)
    reasons = {(u["group"], u["value"]) for u in res.undefined}
    assert (0, "x") in reasons and (0, "y") in reasons   # E_n = 0 in group 0
    assert any(u.get("row") in (2, 3) for u in res.undefined)   # x absent but certain
    assert np.isnan(res.group_max[0])
    with pytest.raises(ValueError, match="undefined"):
        rb.posterior([1.0, 1.0], 1, group=0)


def test_audit_multivalued_on_large_groups():
    n = 60
    t = pa.table({"a": [i % 3 for i in range(n)], "g": [0] * n,
                  "s": [f"v{i % 30}" for i in range(n)]})
    with pytest.raises(ValueError, match="limited to 25 tuples"):
        rb.audit(t, qi=["a"], group="g", sensitive="s", r=2, model="multivalued",
                 min_support=1)
    res = rb.audit(t, qi=["a"], group="g", sensitive="s", r=2, model="multivalued",
                   min_support=1, on_large="report")
    assert not res.complete and not res.robust and np.isnan(res.group_max[0])
    assert "too large" in res.undefined[0]["reason"]


def test_audit_input_errors():
    t = _anatomy_like(60)
    with pytest.raises(ValueError, match="group= is required"):
        rb.audit(t, qi=["a"], sensitive="s", r=2)
    with pytest.raises(ValueError, match="qi= is required"):
        rb.audit(t, group="g", sensitive="s", r=2)
    with pytest.raises(ValueError, match="not found"):
        rb.audit(t, qi=["zz"], group="g", sensitive="s", r=2)
    with pytest.raises(ValueError, match="sensitive_values"):
        rb.audit(t, qi=["a"], group="g", sensitive="s", r=2, sensitive_values=["nope"])
    with pytest.raises(ValueError, match="r must be > 1"):
        rb.audit(t, qi=["a"], group="g", sensitive="s", r=1)
    with pytest.raises(ValueError, match="model"):
        rb.audit(t, qi=["a"], group="g", sensitive="s", r=2, model="x")
    with pytest.raises(TypeError, match="Knowledge"):
        rb.audit(t, qi=["a"], group="g", sensitive="s", r=2, knowledge={"a": {}})
    k = Knowledge.from_dict({"a": {0: {"v0": 0.5}}})
    with pytest.raises(ValueError, match="no probability for .* and no fallback"):
        rb.audit(t, group="g", sensitive="s", r=2, knowledge=k)
    with pytest.raises(ValueError, match="no attribute set within qi"):
        rb.audit(t, qi=["b"], group="g", sensitive="s", r=2, knowledge=k)
    # derived knowledge without any reliable signature: the global rates (empty set)
    res = rb.audit(t, qi=["a"], group="g", sensitive="s", r=2, min_support=10 ** 6)
    assert res.attribute_sets == ((),)
    counts = {}
    for g, s in zip(t.column("g").to_pylist(), t.column("s").to_pylist(), strict=True):
        counts.setdefault(g, []).append(s)
    assert res.value == pytest.approx(max(max(v.count(x) for x in v) / len(v)
                                          for v in counts.values()))


def test_cli_robustness(tmp_path, capsys):
    import pyarrow.parquet as pq

    from fastpriv.cli import main

    path = tmp_path / "rel.parquet"
    pq.write_table(_anatomy_like(300, r=3), path)
    out = tmp_path / "out.json"
    rc = main(["robustness", str(path), "--qi", "a", "b", "--sensitive", "s", "--group", "g",
               "--r", "2", "--min-support", "10", "--json", str(out)])
    text = capsys.readouterr().out
    d = json.loads(out.read_text())
    assert rc == (0 if d["robust"] else 1)
    assert "r-robustness at r =" in text and d["n_rows"] == 300
    k = Knowledge.derive(_anatomy_like(300, r=3), qi=["a"], sensitive="s", min_support=10)
    kp = tmp_path / "k.parquet"
    pq.write_table(k.to_table(), kp)
    rc2 = main(["robustness", str(path), "--qi", "a", "--sensitive", "s", "--group", "g",
                "--r", "2", "--knowledge", str(kp), "--fallback", "0.1",
                "--sensitive-values", "v0"])
    assert rc2 in (0, 1)
    rc3 = main(["robustness", str(path), "--qi", "a", "--sensitive", "s", "--group", "g",
                "--r", "2", "--sensitive-values", "nope"])
    assert rc3 == 2 and "nope" in capsys.readouterr().err


def test_kernels_compile_one_specialization_each():
    # its own workload (binary and multivalued audits, single posteriors), so that the count
    # means something when this test runs alone; after the file's other tests it adds calls
    rng = np.random.default_rng(3)
    n = 120
    t = pa.table({"a": rng.integers(0, 3, n), "g": np.repeat(np.arange(n // 4), 4),
                  "s": [f"v{v}" for v in rng.integers(0, 4, n)]})
    for model in ("binary", "multivalued"):
        rb.audit(t, qi=["a"], group="g", sensitive="s", r=2, min_support=5, model=model)
    rb.posterior([0.9, 0.2, 0.2, 0.1], 1)
    rb.posterior_multivalued([{"a": 0.5, "b": 0.5}, {"a": 0.2, "b": 0.8}], ["a", "b"])
    compiled = {}
    for name in ("binary_posteriors_csr", "loo_core", "loo_core_log", "esp_plan",
                 "mv_posteriors_csr", "mv_dp_core", "ryser_core", "gather_f",
                 "reduce_segments", "binary_loo", "binary_enumerate", "mv_enumerate"):
        disp = getattr(pw, name)
        assert len(disp.signatures) <= 1, (name, disp.signatures)
        compiled[name] = len(disp.signatures)
    reached = {"binary_posteriors_csr", "loo_core", "esp_plan", "mv_posteriors_csr",
               "gather_f", "reduce_segments"}
    assert all(compiled[name] == 1 for name in reached), compiled
