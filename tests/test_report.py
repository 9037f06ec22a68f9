"""fastpriv.report: schema, equality with the direct API, escaping, safety of the outputs."""

from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastpriv as fp
from fastpriv import ck_safety, classic, foreground, robustness, skyline
from fastpriv._io import to_jsonable
from fastpriv.report import SCHEMA, SCHEMA_VERSION, build_report, fingerprint, plots, validate

EVIL = "<script>alert('x')</script>"


# ============================================================================ fixtures
@pytest.fixture(scope="module")
def bucketized():
    """A bucketized release with exact QI columns (all sections run)."""
    from fastpriv.anonymize import anatomy
    from fastpriv.datasets import synthetic

    t = synthetic(6000, qi_cardinalities=[3, 4, 2], n_values=6, distribution="zipf",
                  zipf_s=0.7, seed=3)
    t = t.set_column(t.schema.get_field_index("sensitive"), "sensitive",
                     t.column("sensitive").cast(pa.string()))
    an = anatomy(t, sensitive="sensitive", l=3, seed=1)
    return an.auditor_view(t)


@pytest.fixture(scope="module")
def bucketized_report(bucketized):
    return build_report(bucketized, sensitive="sensitive", group="group_id",
                        qi=["q0", "q1", "q2"], c=[0.6, 0.9], k=2, k_max=6, point=(1, 1, 0),
                        top=5)


def _small_release():
    return fp.Release.from_groups([["flu", "flu", "hiv", "cold"], ["flu", "cancer", "hiv"],
                                   ["cold", "cold", "flu", "hiv", "cancer"]])


def _strip(d, keys=("seconds", "timing")):
    """Drop timing entries (they differ between two runs) recursively."""
    if isinstance(d, dict):
        return {k: _strip(v, keys) for k, v in d.items() if k not in keys}
    if isinstance(d, list):
        return [_strip(v, keys) for v in d]
    return d


# ============================================================================ schema
def test_schema_is_valid_and_versioned():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA_VERSION.startswith("1.")


def test_reports_validate(bucketized_report):
    validate(bucketized_report.data)
    validate(build_report(_small_release(), k=1, k_max=3).data)
    # the JSON text is what gets validated by other tools: round-trip it
    validate(json.loads(bucketized_report.to_json()))


def test_schema_rejects_broken_payload(bucketized_report):
    bad = json.loads(bucketized_report.to_json())
    del bad["verdict"]
    with pytest.raises(ValueError, match="verdict"):
        validate(bad)
    bad = json.loads(bucketized_report.to_json())
    bad["ck_safety"]["status"] = "ok"
    del bad["ck_safety"]["curve"]
    with pytest.raises(ValueError, match="curve"):
        validate(bad)


def test_pycanon_keys(bucketized_report):
    pc = bucketized_report.data["classical"]["pycanon"]
    for key in ("k_anonymity", "(_alpha,_k)-anonymity", "l_diversity", "entropy_l_diversity",
                "(c,l)-diversity", "basic_beta_likeness", "enhanced_beta_likeness",
                "delta_disclosure", "t_closeness", "alpha_k_anonymity",
                "recursive_c_l_diversity"):
        assert key in pc
    assert pc["enhanced_beta_likeness"] is None
    assert "enhanced_beta_likeness" in bucketized_report.data["classical"]["notes"]


# ============================================================================ equals the API
def test_content_equals_direct_api(bucketized, bucketized_report):
    d = bucketized_report.data
    rel = fp.Release.from_table(bucketized, sensitive="sensitive", group="group_id")
    # classical
    l_used = d["classical"]["l"]
    assert l_used == int(rel.distinct.min())
    assert d["classical"]["models"] == to_jsonable(classic.audit(rel, l=l_used).to_dict()
                                                   ["models"])
    pc = d["classical"]["pycanon"]
    assert pc["k_anonymity"] == {"k": classic.k_anonymity(rel)}
    assert pc["l_diversity"] == {"l": classic.l_diversity(rel)}
    assert pc["t_closeness"] == {"t": classic.t_closeness(rel)}
    assert pc["(_alpha,_k)-anonymity"] == {"alpha": classic.alpha_k_anonymity(rel)[0],
                                           "k": classic.alpha_k_anonymity(rel)[1]}
    assert pc["(c,l)-diversity"]["c"] == to_jsonable(classic.recursive_cl_diversity(rel,
                                                                                    l=l_used))
    # (c,k)-safety
    ck = d["ck_safety"]
    assert ck["curve"]["implications"] == ck_safety.disclosure_curve(rel, k_max=6).tolist()
    assert ck["curve"]["negations"] == ck_safety.disclosure_curve(rel, k_max=6, knowledge_kind="negations").tolist()
    for kn in ("implications", "negations"):
        assert ck["at_k"][kn] == to_jsonable(ck_safety.max_disclosure(rel, k=2, knowledge_kind=kn).to_dict())
        for row in ck["max_safe_k"]:
            assert row[kn] == ck_safety.max_safe_k(rel, c=row["c"], knowledge_kind=kn, k_limit=6)
            assert row[f"{kn}_is_safe_at_k"] == ck_safety.is_safe(rel, c=row["c"], k=2, knowledge_kind=kn)
    # skyline
    sk = d["skyline"]
    assert sk["c"] == 0.6 and sk["point"] == [1, 1, 0]
    direct = skyline.check(rel, skylines={"*": [(1, 1, 0, 0.6)]})
    assert sk["check"]["safe"] == direct.safe
    assert {json.dumps(p, sort_keys=True) for p in sk["check"]["points"]} == \
        {json.dumps(to_jsonable(p.to_dict()), sort_keys=True) for p in direct.points}
    worst = max(direct.points, key=lambda p: float(p.value))
    assert sk["worst"]["value"] == worst.value
    assert sk["worst"] == to_jsonable(skyline.breach_probability(rel, sigma=sk["worst"]["sigma"], l=1, k=1,
                                                                 m=0).to_dict())
    assert sorted(sk["sigmas"]) == sorted(rel.values)         # 6 values: all of them
    assert len(sk["skylines"]) == len(rel.values) * 2
    for s in sk["skylines"]:
        assert s == to_jsonable(skyline.knowledge_skyline(rel, sigma=s["sigma"], c=s["c"]).to_dict())
    # r-robustness and the foreground attack (r = 1/c by default)
    r = 1 / 0.6
    assert d["parameters"]["r"] == pytest.approx(r)
    rb = robustness.audit(bucketized, qi=["q0", "q1", "q2"], sensitive="sensitive",
                          group="group_id", r=r, max_set_size=2)
    assert _strip(d["robustness"]["result"]) == _strip(to_jsonable(rb.to_dict(max_items=5)))
    at = foreground.attack(bucketized, qi=["q0", "q1", "q2"], sensitive="sensitive",
                           group="group_id", r=r, max_set_size=2)
    assert _strip(d["foreground"]["result"]) == _strip(to_jsonable(at.to_dict(max_items=5)))
    # release facts
    assert d["release"]["n_groups"] == rel.n_groups
    assert d["release"]["n_rows"] == rel.n_rows == bucketized.num_rows


def test_verdict_matches_sections(bucketized_report):
    d = bucketized_report.data
    v = d["verdict"]
    by = {c["id"]: c for c in v["checks"]}
    k = d["classical"]["models"]["k_anonymity"]["value"]
    assert by["k_anonymity"]["satisfied"] == (k >= d["parameters"]["min_size"])
    t = d["classical"]["models"]["t_closeness"]["value"]
    assert by["t_closeness"]["satisfied"] == (t <= d["parameters"]["max_t"])
    row = [x for x in d["ck_safety"]["max_safe_k"] if x["c"] == 0.6][0]
    assert by["ck_safety_implications"]["satisfied"] == row["implications_is_safe_at_k"]
    assert by["skyline"]["satisfied"] == d["skyline"]["check"]["safe"]
    assert by["robustness"]["satisfied"] == d["robustness"]["result"]["robust"]
    assert by["foreground"]["satisfied"] == (d["foreground"]["result"]["n_problematic"] == 0)
    assert set(v["satisfied"]) | set(v["violated"]) | set(v["not_run"]) == set(by)
    assert set(v["satisfied"]).isdisjoint(v["violated"])
    assert v["key_risk"]["text"]
    assert v["threshold_c"] == 0.6


@pytest.mark.slow
def test_safe_release_has_no_risk():
    # 20 distinct values in every group of 20: nothing reaches c = 0.95
    groups = [[f"v{j:02d}" for j in range(20)] for _ in range(10)]
    rel = fp.Release.from_groups(groups)
    rep = build_report(rel, c=0.95, k=1, k_max=4, point=(0, 1, 0), min_size=5, min_l=3)
    v = rep.verdict
    assert v["violated"] == []
    assert set(v["satisfied"]) >= {"k_anonymity", "l_diversity", "t_closeness", "alpha_k_anonymity",
                                   "ck_safety_implications", "skyline"}
    assert v["key_risk"]["text"].startswith("No model flags a risk")
    assert "robustness" in v["not_run"] and "foreground" in v["not_run"]


def test_key_risk_prefers_knowledge_free_disclosure():
    rel = fp.Release.from_groups([["a", "a", "a", "a"], ["a", "b", "c", "d"]])
    rep = build_report(rel, c=0.8, k=1, k_max=3)
    assert rep.verdict["key_risk"]["model"] == "alpha_k_anonymity"
    assert rep.verdict["key_risk"]["certainty"] == 1.0


# ============================================================================ row-level rules
def test_release_input_skips_row_level_sections():
    rep = build_report(_small_release(), k=1, k_max=3)
    d = rep.data
    assert d["input"]["kind"] == "release"
    for sec in ("robustness", "foreground"):
        assert d[sec]["status"] == "skipped"
        assert "already built Release" in d[sec]["reason"]
    assert d["worst_groups"]["groups"][0]["rows"] is None
    assert d["input"]["fingerprint"]["of"].startswith("Arrow IPC stream of Release")


def test_qi_only_skips_distribution_attacks():
    t = pa.table({"age": [30, 30, 30, 40, 40, 40], "s": ["a", "b", "c", "a", "b", "b"]})
    d = build_report(t, sensitive="s", qi=["age"], k=1, k_max=2).data
    assert d["release"]["grouping"] == "qi"
    assert d["robustness"]["status"] == "skipped"
    assert "distinct values of the QI columns" in d["robustness"]["reason"]
    assert d["worst_groups"]["groups"][0]["rows"] is not None


def test_mvpi_skips_ck_safety():
    rel = fp.Release.from_groups([{"a": 2, "b": 1}, {"a": 1, "c": 1}], sizes=[2, 2],
                                 case="mvpi-set")
    d = build_report(rel, k=1, k_max=2).data
    validate(d)
    assert d["ck_safety"]["status"] == "skipped" and "SVPI" in d["ck_safety"]["reason"]
    assert d["skyline"]["status"] == "ok"
    assert d["classical"]["status"] == "ok"
    assert "ck_safety" in d["verdict"]["not_run"]


def test_sigma_selection_and_caps():
    rel = _small_release()
    d = build_report(rel, sigma="hiv", c=[0.9, 0.5], k=1, k_max=2).data
    assert d["skyline"]["sigmas"] == ["hiv"]
    assert [s["c"] for s in d["skyline"]["skylines"]] == [0.9, 0.5]
    assert d["verdict"]["threshold_c"] == 0.5
    with pytest.raises(ValueError, match="sigma"):
        build_report(rel, sigma=["nope"], k=1, k_max=2)


@pytest.mark.parametrize("kw, exc, match", [
    ({"c": 0}, ValueError, "c"), ({"c": [0.5, 1.5]}, ValueError, "c"),
    ({"c": "x"}, TypeError, "c"), ({"k": 5, "k_max": 2}, ValueError, "k_max"),
    ({"point": (1, 2)}, ValueError, "point"), ({"r": 1}, ValueError, "r"),
    ({"top": 0}, ValueError, "top"), ({"max_t": 2}, ValueError, "max_t"),
    ({"nulls": "maybe"}, ValueError, "nulls"), ({"stream": "yes"}, TypeError, "stream"),
])
def test_bad_parameters(kw, exc, match):
    with pytest.raises(exc, match=match):
        build_report(_small_release(), **kw)


def test_table_needs_grouping_and_sensitive():
    t = pa.table({"g": [1, 1], "s": ["a", "b"]})
    with pytest.raises(ValueError, match="group"):
        build_report(t, sensitive="s")
    with pytest.raises(ValueError, match="sensitive: without a sensitive column give qi="):
        build_report(t, group="g")             # group sizes alone: no QI classes to count
    with pytest.raises(TypeError, match="sensitive"):
        build_report(t, sensitive=3, group="g")
    rep = build_report(t, qi=["g"])                # no sensitive column: the QI classes
    assert rep.data["classes"]["k"] == 2 and rep.data["parameters"]["sensitive"] is None
    with pytest.raises(ValueError, match="nope"):
        build_report(t, sensitive="nope", group="g")


# ============================================================================ escaping
def _evil_table():
    return pa.table({"g" + EVIL: [EVIL, EVIL, EVIL, "b\"'&", "b\"'&", "b\"'&"],
                     "q<u class=z>": ["<em class=z>", "x", "y", "<em class=z>", "x", "y"],
                     "s" + EVIL: [EVIL, "flu", "flu<img src=x onerror=alert(1)>", "flu",
                                  EVIL, "hiv"],
                     "id": [EVIL + str(i) for i in range(6)]})


def test_every_data_value_is_escaped():
    t = _evil_table()
    rep = build_report(t, sensitive="s" + EVIL, group="g" + EVIL, qi=["q<u class=z>"], k_max=3,
                       min_size=2, min_l=2, title="audit " + EVIL, row_label="id",
                       include_individual_values=True, max_set_size=1)
    html = rep.to_html()
    low = html.lower()
    assert "<script" not in low
    assert "<img" not in low and "<em class" not in low and "<u class" not in low
    assert "&lt;script&gt;" in html
    assert EVIL not in html
    # the values did make it into the page, escaped
    assert "flu&lt;img src=x onerror=alert(1)&gt;" in html
    assert "b&quot;&#x27;&amp;" in html
    # the JSON keeps the raw strings (it is data, not markup)
    assert EVIL in rep.to_json()


def test_svg_text_is_escaped():
    svg = plots.line_chart([{"name": EVIL, "x": [0, 1], "y": [0.1, 0.2]}], title=EVIL,
                           xlabel=EVIL, ylabel=EVIL, hline=(0.5, EVIL))
    assert "<script" not in svg.lower()
    svg = plots.bar_chart([EVIL, "a"], [0.5, 1.0], title=EVIL, xlabel="x",
                          threshold=(0.8, EVIL))
    assert "<script" not in svg.lower()
    svg = plots.skyline_slices([(0, 1, 2)], title=EVIL)
    assert "<script" not in svg.lower()


# ============================================================================ individuals
def test_individual_values_only_when_asked(bucketized):
    kw = dict(sensitive="sensitive", group="group_id", qi=["q0", "q1", "q2"], k=1, k_max=3,
              max_set_size=1, sigma=["v0"])
    d = build_report(bucketized, **kw).data
    assert d["targets"]["individual_values_included"] is False
    assert all("actual_value" not in t for t in d["targets"]["items"])
    d2 = build_report(bucketized, include_individual_values=True, **kw).data
    assert d2["targets"]["individual_values_included"] is True
    true = bucketized.column("sensitive").to_pylist()
    named = [t for t in d2["targets"]["items"] if t["row"] is not None]
    assert named
    for t in named:
        assert t["actual_value"] == true[t["row"]]


# ============================================================================ plots
def test_skyline_slices_shapes():
    svg = plots.skyline_slices([(0, math.inf, 2), (1, 3, 1), (2, 0, 0)], title="t")
    assert svg.count('class="safe-region"') == 3          # ℓ = 0, 1, 2
    assert svg.count('class="skyline-point"') == 3
    assert "∞" in svg
    empty = plots.skyline_slices([], title="t")
    assert "No safe amount" in empty
    capped = plots.skyline_slices([("inf", "inf", "inf")], title="t")
    assert capped.count('class="safe-region"') == 1


def test_line_chart_skips_non_finite_and_log_axis():
    svg = plots.line_chart([{"name": "a", "x": [1, 2, 3], "y": [1.0, float("nan"), 100.0]}],
                           title="t", xlabel="x", ylabel="y", log_y=True)
    assert svg.count("<circle") == 2
    assert ">100</text>" in svg


# ============================================================================ outputs
def test_fingerprints(tmp_path):
    t = pa.table({"g": [1, 1, 2, 2], "s": ["a", "b", "a", "c"]})
    p = tmp_path / "d.parquet"
    pq.write_table(t, p)
    fpr = fingerprint(str(p))
    assert fpr["value"] == hashlib.sha256(p.read_bytes()).hexdigest()
    assert fingerprint(t)["value"] == fingerprint(t)["value"]
    t2 = pa.table({"g": [1, 1, 2, 2], "s": ["a", "b", "a", "d"]})
    assert fingerprint(t)["value"] != fingerprint(t2)["value"]
    (tmp_path / "ds").mkdir()
    pq.write_table(t, tmp_path / "ds" / "part-0.parquet")
    pq.write_table(t2, tmp_path / "ds" / "part-1.parquet")
    fd = fingerprint(str(tmp_path / "ds"))
    assert fd["n_files"] == 2 and [f["path"] for f in fd["files"]] == ["part-0.parquet",
                                                                       "part-1.parquet"]
    rep = build_report(str(p), sensitive="s", group="g", k=1, k_max=1)
    assert rep.data["input"]["fingerprint"]["value"] == fpr["value"]
    assert rep.data["input"]["kind"] == "file"


def test_write_is_atomic_and_never_over_input(tmp_path):
    t = pa.table({"g": [1, 1, 2, 2], "s": ["a", "b", "a", "c"]})
    p = tmp_path / "d.parquet"
    pq.write_table(t, p)
    before = p.read_bytes()
    rep = build_report(str(p), sensitive="s", group="g", k=1, k_max=1)
    with pytest.raises(ValueError, match="input"):
        rep.write(html=str(p), overwrite=True)
    assert p.read_bytes() == before
    out = rep.write(html=tmp_path / "r.html", json=tmp_path / "r.json")
    assert len(out) == 2
    with pytest.raises(FileExistsError):
        rep.write(html=tmp_path / "r.html")
    rep.write(html=tmp_path / "r.html", overwrite=True)
    validate(json.loads((tmp_path / "r.json").read_text()))
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_nulls_drop_and_stream(tmp_path):
    t = pa.table({"g": [1, 1, 2, 2, None], "s": ["a", "b", "a", "c", "a"]})
    with pytest.raises(ValueError, match="null"):
        build_report(t, sensitive="s", group="g", k=1, k_max=1)
    d = build_report(t, sensitive="s", group="g", k=1, k_max=1, nulls="drop").data
    assert d["input"]["n_rows_dropped_for_nulls"] == 1 and d["release"]["n_rows"] == 4
    p = tmp_path / "d.parquet"
    pq.write_table(t.slice(0, 4), p)
    d = build_report(str(p), sensitive="s", group="g", k=1, k_max=1, stream=True).data
    assert d["robustness"]["status"] == "skipped" and "streamed" in d["robustness"]["reason"]
    assert d["release"]["n_rows"] == 4


def test_nulls_drop_names_input_rows(bucketized):
    """Oracle: the report of the table with the null rows removed by hand; every row it
    names (worst groups, targets, (c,k) and r-robustness witnesses, attack) is translated
    through the kept rows' input numbers, and the numbers are otherwise equal."""
    rng = np.random.default_rng(11)
    n = bucketized.num_rows
    null_s, null_q = rng.random(n) < 0.05, rng.random(n) < 0.05
    t = bucketized.set_column(
        bucketized.schema.get_field_index("sensitive"), "sensitive",
        pa.array(bucketized.column("sensitive").to_numpy(zero_copy_only=False),
                 mask=null_s))
    t = t.set_column(t.schema.get_field_index("q1"), "q1",
                     pa.array(t.column("q1").to_numpy(), mask=null_q))
    kept = np.flatnonzero(~null_s & ~null_q)
    kw = dict(sensitive="sensitive", group="group_id", qi=["q0", "q1", "q2"], c=[0.6],
              k=2, k_max=3, point=(1, 1, 0), top=3)
    got = build_report(t, nulls="drop", **kw).data
    want = build_report(t.take(pa.array(kept)), **kw).data
    assert got["input"]["n_input_rows"] == n
    assert got["input"]["n_rows_dropped_for_nulls"] == n - kept.size
    for g, w in zip(got["worst_groups"]["groups"], want["worst_groups"]["groups"],
                    strict=True):
        assert g["rows"] == [int(kept[i]) for i in w["rows"]]
    for g, w in zip(got["targets"]["items"], want["targets"]["items"], strict=True):
        assert g["row"] == (None if w["row"] is None else int(kept[w["row"]]))
    rg, rw = got["robustness"]["result"], want["robustness"]["result"]
    assert rg["value"] == rw["value"]
    assert rg["witness"]["row"] == kept[rw["witness"]["row"]]
    assert [p["row"] for p in rg["problematic"]] == [int(kept[p["row"]])
                                                     for p in rw["problematic"]]
    fgot, fwant = got["foreground"]["result"], want["foreground"]["result"]
    assert [x["row"] for x in fgot["worst"]] == [int(kept[x["row"]]) for x in fwant["worst"]]


# ============================================================================ CLI
def test_cli_report(tmp_path, bucketized, capsys):
    from fastpriv.cli import main

    p = tmp_path / "rel.parquet"
    pq.write_table(bucketized, p)
    html, js = tmp_path / "out" / "r.html", tmp_path / "out" / "r.json"
    rc = main(["report", str(p), "--sensitive", "sensitive", "--group", "group_id", "--qi",
               "q0", "q1", "--k", "1", "--k-max", "4", "--max-set-size", "1", "--sigma", "v0",
               "v1", "-o", str(html), "--json", str(js)])
    out = capsys.readouterr().out
    assert "Most important risk" in out
    d = json.loads(js.read_text())
    validate(d)
    assert rc == d["verdict"]["exit_code"] == (1 if d["verdict"]["violated"] else 0)
    assert d["input"]["fingerprint"]["value"] == hashlib.sha256(p.read_bytes()).hexdigest()
    assert d["skyline"]["sigmas"] == ["v0", "v1"]
    assert html.read_text().startswith("<!DOCTYPE html>")
    # refuses to overwrite (before computing) and to write over the input
    assert main(["report", str(p), "--sensitive", "sensitive", "--group", "group_id",
                 "-o", str(html)]) == 2
    assert main(["report", str(p), "--sensitive", "sensitive", "--group", "group_id",
                 "--json", str(p), "--overwrite"]) == 2
    assert main(["report", str(p), "--sensitive", "sensitive"]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "input" in err and "--group" in err


def test_html_structure(bucketized_report):
    html = bucketized_report.to_html()
    assert html.count("<svg") >= 3
    assert 'class="chart disclosure-curve"' in html
    assert "Content-Security-Policy" in html and "<script" not in html.lower()
    for anchor in ("verdict", "ck", "skyline", "stats", "targets", "groups", "classical",
                   "params", "glossary"):
        assert f"id='{anchor}'" in html or f'id="{anchor}"' in html
    assert np.isfinite(bucketized_report.data["timings_s"]["total"])


def test_knowledge_file(tmp_path, bucketized):
    from fastpriv.knowledge import Knowledge

    k = Knowledge.derive(bucketized, qi=["q0", "q1"], sensitive="sensitive", max_set_size=2,
                         min_support=100)
    path = tmp_path / "know.parquet"
    pq.write_table(k.to_table().slice(1), path)        # one (signature, value) pair missing
    d = build_report(bucketized, sensitive="sensitive", group="group_id", qi=["q0", "q1"],
                     knowledge=str(path), knowledge_fallback=0.1, k=1, k_max=2,
                     sigma=["v0"], attack=False).data
    assert d["parameters"]["knowledge"] == str(path)
    assert d["foreground"]["status"] == "skipped"
    kn = Knowledge.from_table(str(path), set_column="attributes", fallback=0.1, model=None)
    direct = robustness.audit(bucketized, qi=["q0", "q1"], sensitive="sensitive",
                              group="group_id", r=1 / 0.8, knowledge=kn)
    assert _strip(d["robustness"]["result"]) == _strip(to_jsonable(direct.to_dict(
        max_items=10)))
    # without a fallback the file does not cover every signature: the section says why
    d2 = build_report(bucketized, sensitive="sensitive", group="group_id", qi=["q0", "q1"],
                      knowledge=str(path), k=1, k_max=2, sigma=["v0"], attack=False).data
    assert d2["robustness"]["status"] == "failed" and "fallback" in d2["robustness"]["reason"]
    validate(d2)


# ============================================================================ errors and protocol
def test_internal_error_in_a_model_propagates(monkeypatch):
    """Only bad input (InputError) becomes a 'failed' section: a bug in a model propagates."""
    rel = _small_release()

    def broken(*a, **kw):
        raise RuntimeError("internal bug in a model")

    monkeypatch.setattr(classic, "audit", broken)
    with pytest.raises(RuntimeError, match="internal bug in a model"):
        build_report(rel, k_max=3)
    monkeypatch.setattr(ck_safety, "disclosure_curve", broken)
    with pytest.raises(RuntimeError, match="internal bug in a model"):
        build_report(rel, k_max=3)


def test_input_error_in_a_model_becomes_a_failed_section(monkeypatch):
    rel = _small_release()

    def refuses(*a, **kw):
        raise fp.InputError("this model refuses the input")

    monkeypatch.setattr(classic, "audit", refuses)
    rep = build_report(rel, k_max=3)
    assert rep.data["classical"]["status"] == "failed"
    assert "refuses the input" in rep.data["classical"]["reason"]
    assert rep.data["ck_safety"]["status"] == "ok"


def test_risk_section_propagates_internal_errors(monkeypatch, bucketized):
    from fastpriv import risk

    def broken(*a, **kw):
        raise RuntimeError("internal bug in risk")

    monkeypatch.setattr(risk, "audit", broken)
    with pytest.raises(RuntimeError, match="internal bug in risk"):
        build_report(bucketized, sensitive="sensitive", qi=["q0", "q1"], k_max=3,
                     robustness=False, attack=False, knowledge_skylines=False)


def test_report_follows_the_result_protocol(bucketized_report):
    import copy

    from fastpriv.results import Result

    rep = bucketized_report
    assert isinstance(rep, Result)
    assert rep == rep and rep == copy.deepcopy(rep)
    assert rep.value == len(rep.verdict["violated"])
    assert rep.params["k"] == 2 and rep.witness is None
    json.dumps(rep.to_dict())
    assert rep.summary().strip()
