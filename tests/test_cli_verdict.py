"""Safe by default: what `anonymize` writes is a release; the exit code is the verdict."""

import json
import shlex

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastpriv.anonymize import anatomy, mondrian
from fastpriv.cli import build_parser, main
from fastpriv.datasets import load_adult

QI = ["age", "sex", "race"]


@pytest.fixture
def small_release(tmp_path):
    t = pa.table({"gid": [1, 1, 1, 2, 2, 2], "disease": ["flu", "hiv", "flu", "flu", "cancer",
                                                          "hiv"]})
    path = tmp_path / "rel.parquet"
    pq.write_table(t, path)
    return path


def test_audit_exit_code_is_the_verdict(small_release, tmp_path, capsys):
    base = ["audit", str(small_release), "--sensitive", "disease", "--group", "gid"]
    # groups of 3 fail the default k ≥ 5 ...
    assert main(base) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "k-anonymity [k ≥ 5]" in out
    # ... and pass thresholds they meet (the verdict, not the command, decides)
    ok = base + ["--min-size", "3", "--min-l", "1", "--max-t", "0.5", "--c", "1", "--k", "0",
                 "--point", "0,0,0",
                 "--json", str(tmp_path / "a.json")]
    assert main(ok) == 0
    verdict = json.loads((tmp_path / "a.json").read_text())["verdict"]
    assert verdict["passed"] is True and verdict["exit_code"] == 0 and not verdict["violated"]


@pytest.mark.slow   # runs the printed remedy and re-audits Adult
def test_report_exit_code_is_the_verdict(tmp_path, capsys):
    args = ["report", "adult", "--sensitive", "occupation", "--qi", *QI,
            "--json", str(tmp_path / "r.json")]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL:")
    # the remedy is a command that runs, on the same data, and the result passes the report
    remedy = next(line for line in out.splitlines() if line.startswith("To fix: "))
    cmd = shlex.split(remedy[len("To fix: "):])
    assert cmd[:3] == ["fastpriv", "anonymize", "adult"] and "mondrian" in cmd
    cmd[cmd.index("-o") + 1] = str(tmp_path / "fixed.parquet")
    assert main(cmd[1:]) == 0
    fixed = ["report", str(tmp_path / "fixed.parquet"), "--sensitive", "occupation",
             "--qi", *QI, "--no-robustness", "--no-attack"]
    rc = main(fixed)
    text = capsys.readouterr().out
    checks = {c["id"]: c for c in json.loads((tmp_path / "r.json").read_text())
              ["verdict"]["checks"]}
    assert checks["k_anonymity"]["remedy"].startswith("fastpriv anonymize adult")
    # every classical and (c,k) check the remedy targets now passes
    for line in text.splitlines():
        if line.strip().startswith(("FAIL  k-anonymity", "FAIL  t-closeness", "FAIL  (c,k)")):
            pytest.fail(f"the remedy left a failing check: {line}")
    assert rc in (0, 1)          # 1 only if the skyline point still fails (own remedy)


def test_unreachable_threshold_gets_no_command(small_release, capsys):
    # one group of the whole table has 3 values: ℓ ≥ 5 cannot be reached by generalizing
    assert main(["audit", str(small_release), "--sensitive", "disease", "--group", "gid",
                 "--min-l", "5"]) == 1
    out = capsys.readouterr().out
    assert "No generalization of these quasi-identifiers can pass" in out
    assert "distinct ℓ ≥ 5 (the table has 3 values)" in out


LOW = ["Preschool", "1st-4th", "5th-6th", "7th-8th"]


@pytest.mark.parametrize("method,crit,sens", [
    ("mondrian", ["--min-size", "10"], "occupation"),
    ("lattice", ["--min-size", "10"], "occupation"),
    ("anatomy", ["--l", "4"], "occupation"),
    ("skyline", ["--skyline", "*:1,0,0,0.9"], "occupation"),
    ("art", ["--r", "4", "--art-sensitive-values", *LOW, "--art-as-one-value"], "education"),
])
def test_anonymize_writes_only_a_release(method, crit, sens, tmp_path):
    adult = load_adult()
    out = tmp_path / "rel.parquet"
    args = ["anonymize", "adult", "--method", method, "--qi", *QI, "--sensitive", sens,
            *crit, "-o", str(out)]
    assert main(args) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    if method in ("anatomy", "art"):
        assert written == ["rel.qi.parquet", "rel.sensitive.parquet"]
        qi_t = pq.read_table(tmp_path / "rel.qi.parquet")
        sens_t = pq.read_table(tmp_path / "rel.sensitive.parquet")
        assert set(qi_t.column_names) == set(QI) | {"group_id"}       # no sensitive value
        assert set(sens_t.column_names) == {"group_id", sens, "count"}  # no QI
        assert sum(sens_t.column("count").to_pylist()) == qi_t.num_rows
        assert qi_t.schema.metadata[b"fastpriv.kind"] == b"release: QI table"
    else:
        assert written == ["rel.parquet"]
        t = pq.read_table(out)
        assert set(t.column_names) <= set(QI) | {sens, "group_id"}
        assert t.schema.metadata[b"fastpriv.kind"] == b"release"
        # the QI columns are the generalized ones: at least one differs from the exact values
        exact = adult.select(QI)
        assert any(t.column(c).cast(pa.string()).to_pylist()
                   != exact.column(c).cast(pa.string()).to_pylist()[:t.num_rows]
                   for c in QI)


def test_keep_and_auditor_view(tmp_path, capsys):
    out, view, js = tmp_path / "rel.parquet", tmp_path / "view.parquet", tmp_path / "s.json"
    assert main(["anonymize", "adult", "--method", "mondrian", "--qi", "age", "sex",
                 "--sensitive", "occupation", "--min-size", "10", "--keep", "education", "-o",
                 str(out), "--auditor-view", str(view), "--json", str(js)]) == 0
    text = capsys.readouterr()
    assert "published unchanged (--keep): education" in text.out
    assert "NOT a release" in text.err
    t = pq.read_table(out)
    assert "education" in t.column_names and "fnlwgt" not in t.column_names
    assert json.loads(t.schema.metadata[b"fastpriv.published_unchanged"]) == ["education"]
    assert json.loads(js.read_text())["published_unchanged"] == ["education"]
    v = pq.read_table(view)
    assert v.schema.metadata[b"fastpriv.kind"] == b"auditor_view"
    assert "fnlwgt" in v.column_names and v.num_rows == 45222


def test_outputs_are_checked_before_any_work(tmp_path, capsys):
    existing = tmp_path / "audit.json"
    existing.write_text("{}")
    assert main(["audit", "adult", "--sensitive", "occupation", "--qi", "age", "--json",
                 str(existing)]) == 2
    captured = capsys.readouterr()
    assert "exists" in captured.err and "Classical models" not in captured.out


def test_python_api_defaults_are_safe():
    adult = load_adult()
    an = anatomy(adult, sensitive="occupation", l=4, seed=0, qi=QI)
    with pytest.raises(ValueError, match="two tables"):
        an.table(adult)
    tables = an.release_tables(adult)
    assert "occupation" not in tables["qi"].column_names
    assert an.auditor_view(adult).num_rows == 45222
    m = mondrian(adult, qi=QI, sensitive="occupation", min_size=10)
    assert set(m.table(adult).column_names) == set(QI) | {"occupation", "group_id"}
    assert isinstance(m.summary(), str) and len(m.summary()) < 600


def test_internal_error_is_exit_3(monkeypatch, small_release, capsys):
    import fastpriv.report as report

    def boom(*a, **k):
        raise KeyError("a bug")
    monkeypatch.setattr(report, "build_report", boom)
    assert main(["audit", str(small_release), "--sensitive", "disease", "--group", "gid"]) == 3
    err = capsys.readouterr().err
    assert "internal error" in err and "Traceback" in err


def _help_examples():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sorted(sub.choices.items()):
        lines = (p.epilog or "").splitlines()
        yield name, [ln.strip() for ln in lines if ln.strip().startswith("fastpriv ")]


def test_every_command_has_a_help_example():
    missing = [name for name, ex in _help_examples() if not ex]
    assert not missing, f"--help without a runnable example: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("name,example", [(n, e) for n, exs in _help_examples() for e in exs])
def test_help_examples_run_as_written(name, example, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(example)[1:]
    if name == "reproduce":   # from any folder: the checkout's benchmarks, not the cwd's
        argv[argv.index("--out") + 1] = str(tmp_path / "repro")
    assert main(argv) in (0, 1), example          # a verdict, never bad input or a bug


def test_anonymize_k_is_ck_safety_k_and_needs_c(tmp_path, capsys):
    # --k is (c,k)-safety's k (as in the Python API): alone it is an error naming --min-size
    base = ["anonymize", "adult", "--method", "mondrian", "--qi", "age", "sex",
            "--sensitive", "occupation", "-o", str(tmp_path / "rel.parquet")]
    assert main(base + ["--k", "10"]) == 2
    err = capsys.readouterr().err
    assert "--min-size 10" in err and "k-anonymity" in err and "--c" in err
    assert not (tmp_path / "rel.parquet").exists()
    assert main(base + ["--c", "0.9"]) == 2
    assert "needs --k" in capsys.readouterr().err
    assert main(base + ["--min-size", "10", "--c", "0.9", "--k", "1", "--knowledge-kind",
                        "negations", "--json", str(tmp_path / "s.json")]) == 0
    crit = json.loads((tmp_path / "s.json").read_text())["criterion"]
    assert "10" in crit and "0.9" in crit and "negations" in crit
    assert json.loads((tmp_path / "s.json").read_text())["min_group_size"] >= 10


@pytest.mark.parametrize("argv", [
    ["audit", "adult", "--sensitive", "occupation", "--qi", "age", "--min-k", "5"],
    ["audit", "adult", "--sensitive", "occupation", "--qi", "age", "--ck", "3"],
    ["report", "adult", "--sensitive", "occupation", "--qi", "age", "--min-k", "5"],
    ["anonymize", "adult", "--qi", "age", "--sensitive", "occupation", "--c", "0.9",
     "--ck", "1"],
    ["robustness", "adult", "--qi", "age", "--sensitive", "occupation", "--bucketize",
     "anatomy:4", "--r", "4", "--max-size", "1"],
    ["robustness", "adult", "--qi", "age", "--sensitive", "occupation", "--bucketize",
     "anatomy:4", "--r", "4", "--delta", "0.9"],
    ["attack", "adult", "--qi", "age", "--sensitive", "occupation", "--bucketize",
     "anatomy:4", "--r", "2", "--delta", "0.9"],
])
def test_renamed_flags_are_gone(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("argv, flag", [
    # one flag, one meaning: --l was recursive ℓ in audit/report but the ℓ-diversity
    # threshold in anonymize; the threshold is --min-l everywhere, recursive ℓ --recursive-l
    (["audit", "adult", "--sensitive", "occupation", "--qi", "age", "--l", "10"],
     "--min-l"),
    (["report", "adult", "--sensitive", "occupation", "--qi", "age", "--l", "10"],
     "--min-l"),
    # the skyline point is written L,K,M as in fastpriv skyline's --point L,K,M,C
    (["audit", "adult", "--sensitive", "occupation", "--qi", "age", "--point", "1", "1",
      "1"], "L,K,M"),
])
def test_one_flag_one_meaning(argv, flag, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert flag in capsys.readouterr().err


def test_anonymize_takes_the_audit_threshold_flags(tmp_path):
    out = tmp_path / "r.parquet"
    rc = main(["anonymize", "adult", "--method", "mondrian", "--qi", "age", "sex",
               "--sensitive", "occupation", "--min-size", "5", "--min-l", "3",
               "--max-t", "0.5", "-o", str(out)])
    assert rc == 0
    assert main(["audit", str(out), "--qi", "age", "sex", "--sensitive", "occupation",
                 "--min-size", "5", "--min-l", "3", "--max-t", "0.5", "--c", "1",
                 "--k", "0", "--point", "0,0,0"]) in (0, 1)
