"""The command line: help is fast and light, audit/demo run, errors are clean, JSON is atomic."""

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastpriv.cli import build_parser, main


def test_help_imports_no_heavy_modules():
    code = ("import sys; from fastpriv.cli import build_parser; build_parser(); "
            "heavy = [m for m in ('numba', 'pyarrow', 'numpy', 'pandas') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"`fastpriv --help` imports {out}"


def test_every_command_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"audit", "demo"} <= set(sub.choices)
    for name, p in sub.choices.items():
        assert p.description or p.format_help(), name


@pytest.fixture
def release_file(tmp_path):
    t = pa.table({"gid": [1, 1, 1, 2, 2, 2], "disease": ["flu", "hiv", "flu", "flu", "cancer",
                                                          "hiv"]})
    path = tmp_path / "rel.parquet"
    pq.write_table(t, path)
    return path


def test_audit_prints_table_and_writes_json(release_file, tmp_path, capsys):
    out = tmp_path / "audit.json"
    assert main(["audit", str(release_file), "--sensitive", "disease", "--group", "gid",
                 "--json", str(out)]) == 1          # groups of 3 fail the default k >= 5
    text = capsys.readouterr().out
    assert "k-anonymity (k)" in text and "6 rows, 2 groups" in text
    payload = json.loads(out.read_text())
    assert payload["classic"]["models"]["k_anonymity"]["value"] == 3
    assert payload["release"]["n_groups"] == 2
    # refuses to overwrite without --overwrite, and never writes over the input
    assert main(["audit", str(release_file), "--sensitive", "disease", "--group", "gid",
                 "--json", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["audit", str(release_file), "--sensitive", "disease", "--group", "gid",
                 "--json", str(release_file), "--overwrite"]) == 2
    assert "refusing to write output" in capsys.readouterr().err
    assert pq.read_table(release_file).num_rows == 6  # input intact


def test_audit_unknown_column_is_a_clean_error(release_file, capsys):
    assert main(["audit", str(release_file), "--sensitive", "diseas", "--group", "gid"]) == 2
    err = capsys.readouterr().err
    assert "'diseas' not found; available: gid, disease" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_demo_runs_on_bundled_adult(capsys, tmp_path):
    # the demo's exit status is the verdict of the release it ends with: the fixed one
    assert main(["demo", "--json", str(tmp_path / "demo.json")]) == 0
    text = capsys.readouterr().out
    assert "UCI Adult" in text and "Classical models" in text
    assert "(c,k)-safety" in text and "Knowledge skyline" in text
    assert "FAIL: " in text and "To fix: fastpriv anonymize adult" in text and "PASS: " in text
    assert "SS1" not in text and "antecedent atoms" not in text     # no internal codes
    payload = json.loads((tmp_path / "demo.json").read_text())
    before, after = payload["before"], payload["after"]
    assert before["release"]["n_rows"] == 45222 and before["release"]["n_groups"] == 10
    assert before["verdict"]["passed"] is False and after["verdict"]["passed"] is True
    # every reported number comes from the models, not the demo: recompute two of them
    from fastpriv import Release, ck_safety, skyline
    from fastpriv.cli.demo import CK, QI, demo_table
    rel = Release.from_table(demo_table(), sensitive="occupation", qi=QI)
    md = ck_safety.max_disclosure(rel, k=CK).value
    assert before["ck_safety"]["at_k"]["implications"]["value"] == pytest.approx(md)
    from fastpriv.cli.demo import CONFIDENCE, _remedy
    fixed = _remedy(demo_table())[0].release
    (sigma, sky), = payload["knowledge_skyline"].items()
    assert len(sky["points"]) == len(skyline.knowledge_skyline(fixed, sigma, CONFIDENCE))


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "fastpriv", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("fastpriv ")
