"""Fail closed: a requested check that does not run fails the run; a flag that would do
nothing is refused; a numeric flag out of range is one line on stderr (issue 47)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastpriv as fp
from fastpriv import (
    ck_safety,
    classic,
    foreground,
    population,
    predicates,
    risk,
    robustness,
    skyline,
)
from fastpriv.cli import main
from fastpriv.report import build_report
from fastpriv.report.verdict import EXIT_FAILS, EXIT_HOLDS, EXIT_NOT_RUN


def _refuses(*a, **kw):
    raise fp.InputError("this model refuses the input")


def _table() -> pa.Table:
    """Two QI classes of six rows, three sensitive values spread evenly."""
    return pa.table({"age": [30] * 6 + [40] * 6, "sex": ["M"] * 12, "d": ["a", "b", "c"] * 4})


def _grouped() -> pa.Table:
    """Two groups of six people with distinct exact QIs: every model of the report runs
    (the row-level ones need the group id and the exact QIs) and the verdict passes at
    min_size 5, min_l 2, c 1, r 3, max_risk 1."""
    return pa.table({"g": [1] * 6 + [2] * 6, "age": [30, 31, 32, 33, 34, 35] * 2,
                     "sex": ["M", "F"] * 6, "d": ["a", "b", "c"] * 4})


#: (section id, module, function the section calls): each way a requested check can fail to run
SECTIONS = [
    ("classical", classic, "audit", "classical"),
    ("ck_safety", ck_safety, "disclosure_curve", "ck_safety"),
    ("skyline", skyline, "check", "skyline"),
    ("robustness", robustness, "audit", "robustness"),
    ("foreground", foreground, "attack", "foreground"),
    ("risk", risk, "class_counts", "risk"),
]


def _report(**kw):
    return build_report(_grouped(), qi=["age", "sex"], group="g", sensitive="d", c=[1.0],
                        min_l=2, min_size=5, k=1, k_max=2, r=3, max_risk=1.0, **kw)


def test_the_table_passes_when_every_check_runs():
    v = _report().data["verdict"]
    assert v["passed"] and v["exit_code"] == EXIT_HOLDS and v["errors"] == []
    assert v["headline"].startswith("PASS")


@pytest.mark.parametrize("section,module,name,check_id", SECTIONS,
                         ids=[s[0] for s in SECTIONS])
def test_a_check_that_does_not_run_fails_the_verdict(monkeypatch, section, module, name,
                                                      check_id):
    monkeypatch.setattr(module, name, _refuses)
    d = _report().data
    v = d["verdict"]
    assert d[section]["status"] == "failed"
    assert not v["passed"] and v["exit_code"] == EXIT_NOT_RUN
    assert v["headline"].startswith("ERROR")
    ids = [e["id"] for e in v["errors"]]
    assert any(i.startswith(check_id) for i in ids), ids
    assert all("refuses the input" in e["error"] for e in v["errors"])
    assert "ERR " in _report_text(d)


def _report_text(d: dict) -> str:
    from fastpriv.report.verdict import verdict_text

    return verdict_text(d["verdict"])


@pytest.mark.parametrize("name", ["k_map", "delta_presence"])
def test_a_declared_model_that_does_not_run_fails_the_verdict(monkeypatch, name):
    monkeypatch.setattr(population, name, _refuses)
    pop = pa.table({"age": [30] * 50 + [40] * 50, "sex": ["M"] * 100})
    d = build_report(_table(), qi=["age", "sex"], min_size=5, population=pop,
                     thresholds={"min_k_map": 2, "max_delta": 0.9}).data
    v = d["verdict"]
    assert not v["passed"] and v["exit_code"] == EXIT_NOT_RUN
    assert [e["id"] for e in v["errors"]] == [name]


def test_a_failing_check_and_an_error_give_the_error_status(monkeypatch):
    monkeypatch.setattr(risk, "class_counts", _refuses)
    v = build_report(_table(), qi=["age", "sex"], sensitive="d", c=[1.0], min_l=4,
                     min_size=5, k=1, k_max=2, robustness=False, attack=False).data["verdict"]
    assert v["violated"] and v["errors"]
    assert v["exit_code"] == EXIT_NOT_RUN and not v["passed"]
    assert "fail" in v["headline"]


def test_a_skipped_check_does_not_stop_a_pass():
    """Switched off or not applicable is not 'requested and failed'."""
    v = _report(robustness=False, attack=False).data["verdict"]
    assert v["passed"] and v["exit_code"] == EXIT_HOLDS
    assert {"robustness", "foreground"} <= set(v["not_run"])
    assert EXIT_FAILS == 1


@pytest.fixture
def files(tmp_path):
    pq.write_table(_table(), tmp_path / "rel.parquet")
    pq.write_table(pa.table({"age": [30, 40], "n": [100, 200]}), tmp_path / "pop.parquet")
    return tmp_path


@pytest.mark.parametrize("command", [
    ["audit", "rel.parquet", "--qi", "age", "sex", "--risk"],
    ["report", "rel.parquet", "--qi", "age", "sex", "--sensitive", "d", "--c", "1",
     "--min-l", "2", "--k", "1", "--no-attack", "--no-robustness", "-o", "out.html"],
])
def test_population_without_a_qi_column_fails_the_command(files, command, capsys,
                                                          monkeypatch):
    """The reported case: a population table lacking a QI column gave PASS and exit 0."""
    monkeypatch.chdir(files)
    rc = main([*command, "--population", "pop.parquet", "--json", "out.json"])
    out = capsys.readouterr().out
    assert rc == EXIT_NOT_RUN
    assert "PASS: the release" not in out and "ERROR" in out
    v = json.loads((files / "out.json").read_text())
    v = v.get("verdict", v)
    assert v["passed"] is False and v["exit_code"] == EXIT_NOT_RUN
    assert [e["id"] for e in v["errors"]] == ["risk"]


# ------------------------------------------------------------------ flags that do nothing
ADULT = ["anonymize", "adult", "--qi", "age", "sex", "--sensitive", "occupation"]


@pytest.mark.parametrize("extra,needle", [
    (["--method", "mondrian", "--min-size", "5", "--utility", "loss"], "--utility"),
    (["--method", "mondrian", "--min-size", "5", "--objective", "minimal"], "--objective"),
    (["--method", "mondrian", "--min-size", "5", "--suppression", "0.1"], "--suppression"),
    (["--min-size", "5", "--risk-threshold", "0.3"], "--risk-threshold"),
    (["--min-size", "5", "--uniqueness-model", "pitman"], "--uniqueness-model"),
    (["--min-size", "5", "--population", "1000000"], "--population"),
    (["--min-size", "5", "--t-ordered"], "--t-ordered"),
    (["--min-size", "5", "--knowledge-kind", "negations"], "--knowledge-kind"),
    (["--min-size", "5", "--c-l", "2"], "--c-l"),
    (["--min-size", "5", "--max-uniqueness", "0.1", "--population", "2000.5"],
     "--population"),
    (["--min-size", "2.5"], "--min-size"),
    (["--max-risk", "0"], "--max-risk"),
    (["--max-risk", "nan"], "--max-risk"),
    (["--max-t", "1.5"], "--max-t"),
    (["--c", "0.8", "--k", "-1"], "--k"),
])
def test_a_flag_that_would_do_nothing_or_is_out_of_range_is_refused(tmp_path, extra, needle,
                                                                   capsys):
    out = tmp_path / "r.parquet"
    rc = _exit_of([*ADULT, *extra, "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert needle in err and "usage:" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def _exit_of(argv):
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


@pytest.mark.parametrize("argv,needle", [
    (["audit", "adult", "--qi", "age", "--sensitive", "occupation", "--no-risk",
      "--max-risk", "0.5"], "--max-risk"),
    (["audit", "adult", "--qi", "age", "--sensitive", "occupation", "--no-risk",
      "--population", "1000"], "--population"),
    (["audit", "adult", "--group", "age", "--sensitive", "occupation", "--max-risk", "0.5"],
     "--max-risk"),
])
def test_audit_refuses_risk_flags_without_risk(argv, needle, capsys):
    assert _exit_of(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("method", ["lattice", "mondrian"])
def test_a_tiny_max_risk_is_a_clean_refusal(tmp_path, method, capsys):
    """--max-risk 1e-300 asked for classes of 1e300 records: no release, no OverflowError."""
    out = tmp_path / "r.parquet"
    rc = main([*ADULT, "--method", method, "--max-risk", "1e-300", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "1e-300" in err
    assert not out.exists()


# ------------------------------------------------------------------ the same in Python
def test_python_criteria_refuse_qualifiers_alone_and_fractional_people():
    with pytest.raises(fp.InputError, match="risk_threshold"):
        predicates.criteria_from(min_size=2, risk_threshold=0.3)
    with pytest.raises(fp.InputError, match="uniqueness_model"):
        predicates.criteria_from(min_size=2, uniqueness_model="pitman")
    with pytest.raises(fp.InputError, match="t_ordered"):
        predicates.criteria_from(min_size=2, t_ordered=True)
    with pytest.raises(fp.InputError, match="knowledge_kind"):
        predicates.criteria_from(min_size=2, knowledge_kind="negations")
    with pytest.raises(fp.InputError, match="whole number"):
        predicates.criteria_from(max_uniqueness=0.1, population=2000.5)
    crit = predicates.criteria_from(max_records_at_risk=0.1)
    assert crit.params()["risk_threshold"] == 0.2


def test_highest_risk_caps_its_class_size():
    crit = predicates.HighestRisk(1e-300)
    assert crit.k == predicates.MAX_CLASS_SIZE
    rel = fp.Release.from_groups([["a", "b"]] * 3)
    assert not crit(rel)
    with pytest.raises(fp.InputError, match="k must be <="):
        predicates.KAnonymity(2 ** 63)


# ------------------------------------------------------------------ "wrote" only when written
def test_wrote_is_said_only_after_the_commit(tmp_path, capsys):
    from fastpriv import _io

    dest = tmp_path / "out.json"
    with pytest.raises(FileExistsError), _io.output_set():
        _io.write_json(dest, {"a": 1})
        _io.announce_written(str(dest))
        assert "wrote" not in capsys.readouterr().err      # not yet: nothing is in place
        dest.write_text("created meanwhile by someone else")
    assert "wrote" not in capsys.readouterr().err          # the commit failed: never said
    assert dest.read_text() == "created meanwhile by someone else"
    with _io.output_set():
        _io.write_json(tmp_path / "b.json", {"a": 1})
        _io.announce_written("b.json")
    assert capsys.readouterr().err.strip() == "wrote b.json"
