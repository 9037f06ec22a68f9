"""fastpriv.risk against the brute-force oracles of tests/naive_risk.py."""

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv import InputError, risk
from fastpriv._kernels import risk as kr
from fastpriv._validation import kernel_array

from . import naive_risk as nv

QI_NAMES = ["a", "b", "c", "d"]
FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def tables(draw, min_rows=1, max_rows=30, max_qi=3):
    nq = draw(st.integers(1, max_qi))
    qi = QI_NAMES[:nq]
    card = [draw(st.integers(1, 4)) for _ in qi]
    n = draw(st.integers(min_rows, max_rows))
    rows = [{c: draw(st.integers(0, k - 1)) for c, k in zip(qi, card, strict=True)}
            for _ in range(n)]
    return rows, qi, card


def to_table(rows, qi, extra=None):
    cols = {c: [r[c] for r in rows] for c in qi}
    # one string column to exercise label encodings
    cols[qi[0]] = [f"v{x}" for x in cols[qi[0]]]
    if extra:
        cols.update(extra)
    return pa.table(cols)


def strify(rows, qi):
    return [{**r, qi[0]: f"v{r[qi[0]]}"} for r in rows]


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(b))


# ---------------------------------------------------------------------------- audit
@FAST
@given(tables(), st.floats(0.01, 1.0))
def test_audit_matches_enumeration_without_population(tab, thr):
    rows, qi, _ = tab
    res = risk.audit(to_table(rows, qi), qi=qi, threshold=thr)
    exp = nv.audit(strify(rows, qi), qi, thr)
    d = res.to_dict()
    for key in ("prosecutor_max", "prosecutor_avg", "prosecutor_above_threshold"):
        assert close(d[key], exp[key]), key
    assert d["sample_uniques"] == exp["sample_uniques"]
    assert res.value == d["prosecutor_max"]
    # no population: journalist = prosecutor, marketer = average prosecutor (ARX)
    assert close(d["journalist_max"], exp["prosecutor_max"])
    assert close(d["marketer"], exp["prosecutor_avg"])
    assert d["population_uniques"] is None and d["k_map"] is None
    assert 1 / res.witness.size == res.value
    json.dumps(d)


@FAST
@given(tables(), tables(min_rows=0, max_rows=20), st.floats(0.01, 1.0))
def test_audit_matches_enumeration_with_population_table(tab, more, thr):
    rows, qi, card = tab
    extra_rows = [{c: r.get(c, 0) % k for c, k in zip(qi, card, strict=True)} for r in more[0]]
    pop = rows + extra_rows
    res = risk.audit(to_table(rows, qi), qi=qi, population=to_table(pop, qi), threshold=thr)
    exp = nv.audit(strify(rows, qi), qi, thr, population_rows=strify(pop, qi))
    d = res.to_dict()
    for key in ("journalist_max", "journalist_avg", "journalist_above_threshold", "marketer",
                "delta_min", "delta_max"):
        assert close(d[key], exp[key]), key
    assert d["k_map"] == exp["k_map"]
    assert d["population_uniques"]["population_size"] == len(pop)
    assert res.witness.population_size is not None


@FAST
@given(tables(max_rows=20), st.data(), st.floats(0.01, 1.0))
def test_individual_risk_matches_series(tab, data, thr):
    rows, qi, _ = tab
    w = [data.draw(st.floats(1.0, 60.0)) for _ in rows]
    res = risk.audit(to_table(rows, qi, {"w": w}), qi=qi, sampling_weight="w", threshold=thr)
    exp = nv.audit(strify(rows, qi), qi, thr, weights=w)
    d = res.to_dict()
    for key in ("individual_max", "individual_avg", "expected_reidentifications"):
        assert close(d[key], exp[key], 1e-9), key
    # ties at the threshold may differ by rounding only when a risk equals thr exactly
    assert abs(d["individual_above_threshold"] - exp["individual_above_threshold"]) < 1e-12


@FAST
@given(tables(max_rows=20), st.floats(1.0, 50.0))
def test_individual_risk_from_population_size(tab, ratio):
    rows, qi, _ = tab
    big_n = len(rows) * ratio
    res = risk.audit(to_table(rows, qi), qi=qi, population=big_n)
    exp = nv.audit(strify(rows, qi), qi, 0.2, population_size=big_n)
    assert close(res.measures["individual_max"], exp["individual_max"])
    assert close(res.measures["expected_reidentifications"], exp["expected_reidentifications"])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 80), st.floats(1.0, 200.0))
def test_bf_kernel_matches_negative_binomial_series(f, ratio):
    big_w = f * ratio
    got = kr.bf_individual_risk(kernel_array([f], np.int64), kernel_array([big_w], np.float64))[0]
    assert close(got, nv.bf_risk(f, big_w), 1e-9)


@pytest.mark.parametrize("p", [0.001, 0.05, 0.3, 0.5, 0.77, 0.999])
def test_bf_matches_mu_argus_closed_forms(p):
    """μ-Argus manual / Benedetti–Franconi closed forms for f = 1, 2, 3."""
    q = 1 - p
    r1 = p / q * -math.log(p)
    r2 = p / q ** 2 * (p * math.log(p) + q)
    r3 = p / (2 * q ** 3) * (q * (3 * q - 2) - 2 * p ** 2 * math.log(p))
    f = np.array([1, 2, 3], np.int64)
    got = kr.bf_individual_risk(kernel_array(f, np.int64), kernel_array(f / p, np.float64))
    assert np.allclose(got, [r1, r2, r3], rtol=1e-9, atol=1e-15)


# ----------------------------------------------------------------- merge and sources
@FAST
@given(tables(min_rows=2), st.data())
def test_class_counts_merge_equals_whole(tab, data):
    rows, qi, _ = tab
    cut = data.draw(st.integers(1, len(rows) - 1))
    t = to_table(rows, qi, {"w": [float(i + 1) for i in range(len(rows))]})
    whole = risk.class_counts(t, qi=qi, sampling_weight="w")
    parts = risk.class_counts(t.slice(0, cut), qi=qi, sampling_weight="w").merge(
        risk.class_counts(t.slice(cut), qi=qi, sampling_weight="w"))
    assert whole.to_table().equals(parts.to_table())
    assert risk.audit(parts).to_dict() == risk.audit(whole).to_dict()


def test_release_and_table_give_the_same_audit():
    adult = fp.datasets.load_adult()
    qi = ["age", "sex", "race"]
    rel = fp.Release.from_table(adult, qi=qi, sensitive="income")
    a = risk.audit(rel, qi=qi, population=1_000_000).to_dict()
    b = risk.audit(adult, qi=qi, population=1_000_000).to_dict()
    assert a == b


# --------------------------------------------------------------- population models
def _random_hist(rng, heavy):
    if heavy:
        sizes = np.minimum(rng.zipf(1.8, size=int(rng.integers(20, 120))), 150)
    else:
        sizes = rng.geometric(0.45, size=int(rng.integers(20, 120)))
    return [int(x) for x in sizes]


@pytest.mark.parametrize("seed", range(4))
def test_pitman_matches_numerical_mle(seed):
    rng = np.random.default_rng(seed)
    sizes = _random_hist(rng, heavy=True)
    big_n = sum(sizes) * int(rng.integers(11, 200))
    s, c = np.unique(sizes, return_counts=True)
    got = risk.population_uniques(s, c, big_n)
    exp, theta, alpha, _ = nv.pitman_uniques(sizes, big_n)
    assert alpha > 0.05
    assert got["pitman"] == pytest.approx(exp, rel=1e-4)
    assert got["pitman_params"]["alpha"] == pytest.approx(alpha, abs=1e-5)
    assert got["chosen"] == "pitman" and got["dankar"] == got["pitman"]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("factor", [2, 8, 40])
def test_zayatz_matches_exact_hypergeometric(seed, factor):
    rng = np.random.default_rng(100 + seed)
    sizes = _random_hist(rng, heavy=bool(seed % 2))
    big_n = sum(sizes) * factor
    s, c = np.unique(sizes, return_counts=True)
    got = risk.population_uniques(s, c, big_n)
    assert got["zayatz"] == pytest.approx(nv.zayatz_uniques(sizes, big_n), rel=1e-9)


@pytest.mark.parametrize("big_n", [10**8, 3 * 10**8, 7 * 10**9])
def test_zayatz_exact_at_any_population_size(big_n):
    # log Γ differences near log Γ(N) lost ~3e-7 relative at N >= 1e8; the product form
    # of the hypergeometric ratios stays exact
    rng = np.random.default_rng(7)
    sizes = _random_hist(rng, heavy=True)
    s, c = np.unique(sizes, return_counts=True)
    got = risk.population_uniques(s, c, big_n)
    assert got["zayatz"] == pytest.approx(nv.zayatz_uniques(sizes, big_n), rel=1e-12)


@pytest.mark.slow   # generic solver on every parameter pair
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("factor", [2, 5])
def test_snb_matches_series_and_generic_solver(seed, factor):
    rng = np.random.default_rng(200 + seed)
    sizes = _random_hist(rng, heavy=False)
    big_n = sum(sizes) * factor
    s, c = np.unique(sizes, return_counts=True)
    got = risk.population_uniques(s, c, big_n)
    exp = nv.snb_uniques(sizes, big_n)
    # the moment equations need not have a solution; then neither solver may claim one
    assert (got["snb"] is None) == (exp is None)
    if exp is None:
        assert got["chosen"] == "zayatz"
        return
    assert got["snb"] == pytest.approx(exp, rel=1e-6)
    assert got["snb_params"]["K"] == pytest.approx(nv.shlosser_k(sizes, sum(sizes) / big_n))
    # Dankar above 10 % sampling: the smaller of Zayatz and SNB
    assert got["chosen"] in ("zayatz", "snb")
    assert got["dankar"] == min(got["zayatz"], got["snb"])


def test_snb_solves_a_solvable_case():
    rng = np.random.default_rng(200)
    sizes = _random_hist(rng, heavy=False)
    s, c = np.unique(sizes, return_counts=True)
    got = risk.population_uniques(s, c, sum(sizes) * 2)
    assert got["snb"] is not None and got["snb"] > 0


def test_snb_closed_forms_match_series():
    for a, b, pi in [(0.5, 0.1, 0.3), (2.0, 0.6, 0.05), (0.05, 0.01, 0.9)]:
        e1, e2 = kr.snb_expected(a, b, 1.0, pi)
        p1, p2 = nv.snb_probs(a, b, pi)
        assert e1 == pytest.approx(p1, rel=1e-9) and e2 == pytest.approx(p2, rel=1e-9)


def test_no_sample_uniques_means_no_population_uniques():
    got = risk.population_uniques(np.array([2, 3]), np.array([5, 1]), 1000)
    assert got["dankar"] == got["pitman"] == got["zayatz"] == got["snb"] == 0.0


def test_dankar_falls_back_to_zayatz_without_valid_pitman_fit():
    # geometric sizes: the Pitman likelihood peaks at alpha -> 0 (boundary, no valid fit)
    rng = np.random.default_rng(1)
    sizes = [int(x) for x in rng.geometric(0.4, size=150)]
    s, c = np.unique(sizes, return_counts=True)
    got = risk.population_uniques(s, c, sum(sizes) * 40)
    _, _, alpha, _ = nv.pitman_uniques(sizes, sum(sizes) * 40)
    assert alpha < 1e-3
    assert got["pitman"] is None
    assert got["chosen"] == "zayatz" and got["dankar"] == got["zayatz"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("factor", [1.5, 4, 30, 1000])
def test_one_model_estimate_is_the_reported_one(seed, factor, monkeypatch):
    """population_unique_estimate gives population_uniques' value, fitting only what it reads."""
    rng = np.random.default_rng(300 + seed)
    sizes = _random_hist(rng, heavy=bool(seed % 2))
    big_n = sum(sizes) * factor
    s, c = np.unique(sizes, return_counts=True)
    full = risk.population_uniques(s, c, big_n)
    for model in ("dankar", "pitman", "zayatz", "snb"):
        assert risk.population_unique_estimate(s, c, big_n, model) == full[model]
    fitted = []
    for name in ("_pitman", "_zayatz", "_snb"):
        real = getattr(risk._Models, name)
        monkeypatch.setattr(risk._Models, name,
                            lambda self, real=real, name=name: fitted.append(name) or real(self))
    risk.population_unique_estimate(s, c, big_n)
    if full["chosen"] == "pitman":
        assert fitted == ["_pitman"]              # Dankar's rule below 10 %: Pitman alone
    elif full["sampling_fraction"] > 0.1:
        assert sorted(fitted) == ["_snb", "_zayatz"]


# -------------------------------------------------------------------- combinations
@FAST
@given(tables(max_qi=4, max_rows=25), st.data())
def test_combinations_match_enumeration(tab, data):
    rows, qi, _ = tab
    m = data.draw(st.integers(1, len(qi)))
    res = risk.combinations(to_table(rows, qi), qi=qi, max_set_size=m)
    exp = nv.uniques_and_msus(strify(rows, qi), qi, m)
    got = {tuple(r["qi"]): (r["uniques"], r["msu"]) for r in res.rows}
    assert got == exp
    assert res.value == max(u for u, _ in exp.values()) / len(rows)
    json.dumps(res.to_dict())


def test_combinations_many_columns_need_densified_keys():
    rng = np.random.default_rng(5)
    n = 300
    cols = {f"q{i}": rng.integers(0, 2 ** 20, size=n) for i in range(5)}
    cols["q0"] = rng.integers(0, 3, size=n)
    t = pa.table(cols)
    res = risk.combinations(t, qi=list(cols), max_set_size=5)
    lists = [c.tolist() for c in cols.values()]
    rows = [dict(zip(cols, vals, strict=True)) for vals in zip(*lists, strict=True)]
    exp = nv.uniques_and_msus(rows, list(cols), 5)
    assert {tuple(r["qi"]): (r["uniques"], r["msu"]) for r in res.rows} == exp


def test_combinations_adult_all_14_columns():
    adult = fp.datasets.load_adult()
    qi = [c for c in adult.column_names if c != "income"]
    assert len(qi) == 14
    res = risk.combinations(adult, qi=qi, max_set_size=2)
    assert res.params["n_subsets"] == 14 + 91
    fnl = next(r for r in res.rows if r["qi"] == ["fnlwgt"])
    assert fnl["uniques"] == fnl["msu"] > 0
    assert "fnlwgt" in res.generalize_first(3)
    assert "Generalize first" in res.summary()


# ---------------------------------------------------------------- verdict, summary
def test_verdict_and_summary():
    t = pa.table({"a": [1, 1, 2, 2, 2], "b": ["x", "x", "y", "y", "y"]})
    res = risk.audit(t, qi=["a", "b"], threshold=0.5)
    assert res.value == 0.5 and res.passed
    ok, lines = risk.verdict(res, 0.5)
    assert ok and lines[0].startswith("PASS")
    ok, lines = risk.verdict(res, 0.4)
    assert not ok and lines[0].startswith("FAIL") and "at least 3 records" in lines[-1]
    assert "PASS" in res.summary()
    assert res.witness.qi_values == {"a": 1, "b": "x"}


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kwargs,param", [
    ({}, "qi"),
    ({"qi": []}, "qi"),
    ({"qi": ["zz"]}, "qi"),
    ({"qi": ["a"], "threshold": 1.5}, "threshold"),
    ({"qi": ["a"], "population": 2}, "population"),
    ({"qi": ["a"], "population": pa.table({"a": [1]})}, "population"),
    ({"qi": ["a"], "sampling_weight": "w0"}, "sampling_weight"),
    ({"qi": ["a"], "sampling_weight": "wsmall"}, "sampling_weight"),
    ({"qi": ["a"], "sampling_weight": "b"}, "sampling_weight"),
    ({"qi": ["a"], "weight": "w0"}, "sampling_weight="),     # floats: not multiplicities
    ({"qi": ["a"], "weight": "neg"}, "weight"),
    ({"qi": ["a"], "weight": "b"}, "weight"),
    ({"qi": ["a"], "weight": "a"}, "weight"),
    ({"qi": ["a"], "weight": "n", "sampling_weight": "n"}, "sampling_weight"),
])
def test_bad_input_names_the_parameter(kwargs, param):
    t = pa.table({"a": [1, 1, 2], "b": ["x", "y", "y"], "w0": [1.0, 0.0, 2.0],
                  "wsmall": [0.5, 0.5, 3.0], "neg": [1, -1, 2], "n": [1, 2, 3]})
    with pytest.raises(InputError, match=param):
        risk.audit(t, **kwargs)


def test_combination_errors():
    t = pa.table({"a": [1, 2], "b": [1, 1]})
    with pytest.raises(InputError, match="max_set_size"):
        risk.combinations(t, qi=["a", "b"], max_set_size=3)
    with pytest.raises(InputError, match="max_memory"):
        risk.combinations(t, qi=["a", "b"], max_set_size=2, max_memory=1)
    rel = fp.Release.from_table(pa.table({"a": [1, 2], "s": [1, 1]}), qi=["a"], sensitive="s")
    with pytest.raises(InputError, match="qi"):
        risk.audit(rel, qi=["b"])


# --------------------------------------------------------------------- report section
def test_report_section_chart_and_html():
    from fastpriv.report._risk import render_risk_html, risk_section

    adult = fp.datasets.load_adult()
    sec = risk_section(adult, qi=["age", "education", "occupation", "sex"], threshold=0.2,
                       population=1_000_000, max_set_size=2)
    assert sec["status"] == "ok"
    json.dumps(sec)
    assert sec["chart"]["labels"] and len(sec["chart"]["labels"]) == len(sec["chart"]["values"])
    assert sec["verdict"]["passed"] is False
    page = render_risk_html(sec)
    assert "<svg" in page and "FAIL" in page and "Generalize first" in page
    bad = risk_section(adult, qi=["nope"])
    assert bad["status"] == "failed" and "qi" in bad["reason"]
    assert "Failed" in render_risk_html(bad)


# ----------------------------------------------------------------------- streaming
def test_from_batches_and_count_accumulator_give_the_table_audit(tmp_path):
    import pyarrow.parquet as pq

    adult = fp.datasets.load_adult()
    qi = ["age", "education", "sex"]
    path = tmp_path / "adult.parquet"
    pq.write_table(adult, path, row_group_size=5000)
    whole = risk.audit(adult, qi=qi, population=500_000).to_dict()
    streamed = risk.ClassCounts.from_batches(str(path), qi=qi, batch_size=4000)
    assert streamed.to_table().equals(risk.class_counts(adult, qi=qi).to_table())
    assert risk.audit(streamed, population=500_000).to_dict() == whole
    # the streaming/Dask state of the rest of fastpriv: a CountAccumulator keyed by the QIs
    acc = fp.CountAccumulator(qi, "income")
    for i in range(0, adult.num_rows, 10_000):
        acc.add(adult.slice(i, 10_000))
    assert risk.audit(acc.to_release(), population=500_000).to_dict() == whole


@FAST
@given(tables(min_rows=1), st.data())
def test_from_counts_equals_rows(tab, data):
    rows, qi, _ = tab
    w = [float(data.draw(st.integers(1, 9))) for _ in rows]
    t = to_table(rows, qi, {"w": w})
    # aggregate in two overlapping partial GROUP BYs (per half), as a SQL engine would
    cut = len(rows) // 2
    parts = []
    for part in (t.slice(0, cut), t.slice(cut)):
        if part.num_rows:
            parts.append(part.group_by(qi).aggregate([("w", "count"), ("w", "sum")]))
    agg = pa.concat_tables(parts)
    cc = risk.ClassCounts.from_counts(agg, qi=qi, count="w_count", sampling_weight_sum="w_sum")
    ref = risk.class_counts(t, qi=qi, sampling_weight="w")
    assert cc.to_table().equals(ref.to_table())


def test_from_counts_errors():
    t = pa.table({"a": [1, 2], "n": [1, -1]})
    with pytest.raises(InputError, match="count"):
        risk.ClassCounts.from_counts(t, qi=["a"], count="n")
    with pytest.raises(InputError, match="count"):
        risk.ClassCounts.from_counts(pa.table({"a": [1], "n": [0.5]}), qi=["a"], count="n")


def test_combinations_m_is_a_deprecated_alias():
    t = pa.table({"a": [1, 1, 2], "b": ["x", "y", "y"]})
    with pytest.warns(DeprecationWarning, match="max_set_size"):
        old = risk.combinations(t, qi=["a", "b"], m=1)
    assert old.to_dict() == risk.combinations(t, qi=["a", "b"], max_set_size=1).to_dict()
