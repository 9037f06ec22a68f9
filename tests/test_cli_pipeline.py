"""The command line in pipelines: closed pipes, standard input and output, flags checked
before any work, terminal-safe text, and remedies that run as printed."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from fastpriv.cli import EXIT_FAILS, main

AUDIT_ADULT = ["audit", "adult", "--sensitive", "occupation", "--qi", "age", "sex"]


def _fastpriv(args: list[str], **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(kw.pop("env", {}))
    return subprocess.run([sys.executable, "-m", "fastpriv", *args], env=env,
                          capture_output=True, timeout=300, **kw)


@pytest.fixture
def table() -> pa.Table:
    """A small generalized release: 2 QI classes of 4 people, 3 diseases."""
    return pa.table({"zip": ["130**"] * 4 + ["148**"] * 4,
                     "age": ["<30"] * 4 + [">=40"] * 4,
                     "disease": ["flu", "hiv", "flu", "cancer", "flu", "flu", "hiv", "cold"]})


def _csv_bytes(t: pa.Table) -> bytes:
    sink = io.BytesIO()
    pacsv.write_csv(t, sink)
    return sink.getvalue()


def _parquet_bytes(t: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink)
    return sink.getvalue().to_pybytes()


class _Stdin:
    """Stands for ``sys.stdin`` with the bytes a pipe would deliver."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


# ============================================================================ closed pipes
@pytest.mark.slow
@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_closed_stdout_ends_quietly_with_the_verdict(unbuffered):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "fastpriv", *AUDIT_ADULT],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()                     # the reader is gone before the first line
    err = proc.stderr.read().decode()
    # the audit fails: its verdict outlives the closed pipe (a verdict of 0 would give 141,
    # tests/test_io_hostile.py)
    assert proc.wait(timeout=300) == EXIT_FAILS
    assert "Traceback" not in err and "internal error" not in err, err
    assert "Broken pipe" not in err and "BrokenPipeError" not in err, err


@pytest.mark.slow
def test_head_reads_the_first_bytes_and_the_command_stops_quietly():
    proc = subprocess.run(f"{shlex.quote(sys.executable)} -m fastpriv "
                          f"{shlex.join(AUDIT_ADULT)} | head -c 10", shell=True,
                          capture_output=True, timeout=300, executable="/bin/bash")
    assert proc.stdout == b"adult: 452"
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr


# ============================================================================ stdin, stdout
def test_data_dash_reads_csv_and_parquet_from_stdin(table, tmp_path, monkeypatch, capsys):
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    args = ["--sensitive", "disease", "--qi", "zip", "age", "--min-size", "4", "--min-l", "2"]
    assert main(["audit", str(path), *args, "--json", str(tmp_path / "file.json")]) == 1
    expected = json.loads((tmp_path / "file.json").read_text())
    capsys.readouterr()
    for raw in (_csv_bytes(table), _parquet_bytes(table)):
        monkeypatch.setattr(sys, "stdin", _Stdin(raw))
        assert main(["audit", "-", *args, "--json", "-"]) == 1
        out, err = capsys.readouterr()
        got = json.loads(out)                         # stdout holds the JSON and nothing else
        assert got["release"] == expected["release"]
        assert got["verdict"]["violated"] == expected["verdict"]["violated"]
        assert "-: 8 rows, 2 groups" in err and "Classical models" in err   # text: stderr
    assert not Path("-").exists()


def test_empty_or_unreadable_stdin_is_bad_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin(b""))
    assert main(["audit", "-", "--sensitive", "d", "--qi", "z"]) == 2
    assert "DATA: standard input is empty" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", _Stdin(b"PAR1 but not parquet"))
    assert main(["audit", "-", "--sensitive", "d", "--qi", "z"]) == 2
    err = capsys.readouterr().err
    assert "DATA: cannot read standard input" in err and "Traceback" not in err


@pytest.mark.slow
def test_dev_stdin_in_a_real_pipe(table):
    proc = _fastpriv(["audit", "/dev/stdin", "--sensitive", "disease", "--qi", "zip", "age",
                      "--min-size", "4", "--min-l", "2", "--json", "-"],
                     input=_parquet_bytes(table))
    assert proc.returncode == 1, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["release"]["n_rows"] == 8 and payload["release"]["n_groups"] == 2
    assert b"Classical models" in proc.stderr


def test_report_reads_stdin_and_prints_json(table, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin(_csv_bytes(table)))
    status = main(["report", "-", "--sensitive", "disease", "--qi", "zip", "age", "--min-size",
                   "4", "--min-l", "2", "--no-robustness", "--no-attack", "--json", "-"])
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert status == payload["verdict"]["exit_code"]
    assert payload["classical"]["models"]["k_anonymity"]["value"] == 4
    assert "report built in" in err


def test_json_dash_of_skyline_goes_to_stdout(table, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", _Stdin(_csv_bytes(table)))
    assert main(["skyline", "-", "--sensitive", "disease", "--qi", "zip", "age",
                 "--sigma", "flu", "--point", "0,0,0,0.9", "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["check"]["safe"] is True
    assert "Skyline points" in err
    assert list(tmp_path.iterdir()) == []           # no file named '-'


# ============================================================================ flags
DATA = "no-such-file.parquet"   # a flag error must come first, before the data is touched
BAD_FLAGS = [
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--max-risk", ["nan"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--max-risk", ["1.5"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--max-t", ["inf"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--max-t", ["-0.1"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--c", ["0"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--c", ["nan"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--min-size", ["0"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--min-l", ["2.5"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--k", ["-1"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--point", ["1,-1,1"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--point", ["1,1"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--recursive-l", ["0"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--population", ["0"]),
    (["audit", DATA, "--sensitive", "s", "--qi", "q"], "--n-jobs", ["0"]),
    (["report", DATA, "--sensitive", "s", "--qi", "q"], "--r", ["1"]),
    (["report", DATA, "--sensitive", "s", "--qi", "q"], "--r", ["inf"]),
    (["report", DATA, "--sensitive", "s", "--qi", "q"], "--k-max", ["-1"]),
    (["report", DATA, "--sensitive", "s", "--qi", "q"], "--top", ["0"]),
    (["report", DATA, "--sensitive", "s", "--qi", "q"], "--max-set-size", ["0"]),
    (["report", DATA, "--sensitive", "s", "--qi", "q"], "--fallback", ["2"]),
    (["report", DATA, "--sensitive", "s", "--qi", "q"], "--max-risk", ["inf"]),
    (["skyline", DATA, "--sensitive", "s", "--qi", "q", "--sigma", "x"], "--c", ["nan"]),
    (["skyline", DATA, "--sensitive", "s", "--qi", "q", "--sigma", "x"], "--point",
     ["1,-1,1,0.9"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--group", "g"], "--r", ["nan"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--epsilon", ["0"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--confidence",
     ["2"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--min-support",
     ["0"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--top", ["-1"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--bucketize",
     ["anatomy:1"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--bucketize-seed",
     ["-1"]),
    (["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--fallback",
     ["nan"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q"], "--r", ["inf"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--unreliable", ["1.5"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--unreliable", ["nan"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--n-random", ["-1"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--seed", ["-1"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--epsilon", ["-1"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--confidence", ["nan"]),
    (["attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"], "--max-set-size", ["0"]),
]


@pytest.mark.parametrize(("argv", "flag", "values"), BAD_FLAGS,
                         ids=[f"{a[0]}{f}={'_'.join(v)}" for a, f, v in BAD_FLAGS])
def test_bad_flag_fails_at_parse_time_naming_it(argv, flag, values, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, flag, *values])
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"error: argument {flag}: " in last, last           # one line naming the flag
    assert any(repr(v) in last for v in values), last            # ... and the value
    assert DATA not in last                                      # the data was never looked at


def test_good_flags_still_parse():
    from fastpriv.cli import build_parser

    a = build_parser().parse_args([
        "attack", DATA, "--sensitive", "s", "--qi", "q", "--r", "1.5", "--unreliable", "0.25",
        "--confidence", "0.9", "--epsilon", "0.05", "--n-random", "0", "--seed", "3"])
    assert (a.r, a.unreliable, a.confidence, a.epsilon, a.n_random, a.seed) == (
        1.5, 0.25, 0.9, 0.05, 0, 3)
    a = build_parser().parse_args(["audit", DATA, "--sensitive", "s", "--qi", "q",
                                   "--max-risk", "1e-9", "--max-t", "1", "--c", "1", "0.5",
                                   "--k", "0", "--point", "0,0,0", "--n-jobs", "-1"])
    assert (a.max_risk, a.max_t, a.c, a.k, a.point, a.n_jobs) == (
        1e-9, 1.0, [1.0, 0.5], 0, (0, 0, 0), -1)


def test_cross_flag_errors_come_before_reading_the_data(capsys):
    assert main(["audit", DATA, "--sensitive", "s", "--group", "g", "--risk"]) == 2
    assert "--risk" in capsys.readouterr().err
    assert main(["report", DATA, "--sensitive", "s", "--qi", "q", "--k", "5",
                 "--k-max", "3"]) == 2
    assert "--k-max" in capsys.readouterr().err
    assert main(["robustness", DATA, "--sensitive", "s", "--qi", "q", "--r", "2"]) == 2
    assert "--bucketize" in capsys.readouterr().err


# ============================================================================ terminal safety
def test_control_characters_in_names_and_values_are_escaped(tmp_path, capsys, monkeypatch):
    qi, sens = "a\x1b[31mb", "dis\x07ease"
    t = pa.table({qi: ["x\x1b]0;pwned\x07", "x\x1b]0;pwned\x07", "y\r", "y\r"],
                  sens: ["flu\x1b[2J", "hiv", "flu", "cold\u202e"]})
    path = tmp_path / "evil.parquet"
    pq.write_table(t, path)
    status = main(["audit", str(path), "--sensitive", sens, "--qi", qi, "--min-size", "2",
                   "--min-l", "2"])
    out, err = capsys.readouterr()
    assert status in (0, 1)
    for ch in ("\x1b", "\x07", "\r", "\u202e"):
        assert ch not in out and ch not in err, repr(ch)
    assert "a\\x1b[31mb=" in out                    # the name, escaped, in the worst group
    assert "x\\x1b]0;pwned\\x07" in out or "y\\r" in out
    # the JSON keeps the real names (JSON escapes them itself)
    monkeypatch.chdir(tmp_path)
    main(["audit", str(path), "--sensitive", sens, "--qi", qi, "--min-size", "2", "--min-l",
          "2", "--json", "-"])
    out, err = capsys.readouterr()
    assert "\x1b" not in out and "\x1b" not in err
    assert json.loads(out)["release"]["sensitive"] == sens
    # an error naming a column escapes it too
    assert main(["audit", str(path), "--sensitive", "no\x1b[2Jpe", "--qi", qi]) == 2
    assert "\x1b" not in capsys.readouterr().err


def test_escape_control_helper():
    from fastpriv.cli._common import TerminalSafe
    from fastpriv.report.text import escape_control, fmt_label

    assert escape_control("a\x1b[31mb\x9b\u202eend") == "a\\x1b[31mb\\x9b\\u202eend"
    assert escape_control("l1\nl2\tx\r") == "l1\\nl2\\tx\\r"
    assert escape_control("l1\nl2\tx\r", keep_lines=True) == "l1\nl2\tx\\r"
    assert fmt_label(("ok", "b\x1bc")) == "ok, b\\x1bc" and escape_control("é ℓ") == "é ℓ"
    sink = io.StringIO()
    assert TerminalSafe(sink).write("x\x1b\n") == 3
    assert sink.getvalue() == "x\\x1b\n"


# ============================================================================ remedies
def _remedies(text: str) -> list[str]:
    return [line.split("To fix: ", 1)[1] for line in text.splitlines() if "To fix: " in line]


@pytest.mark.slow
def test_printed_remedies_run_as_printed(tmp_path, capsys):
    assert main(["audit", "adult", "--sensitive", "occupation", "--qi", "age", "sex", "race",
                 "--risk"]) == 1
    commands = _remedies(capsys.readouterr().out)
    methods = {shlex.split(c)[shlex.split(c).index("--method") + 1] for c in commands}
    assert methods == {"mondrian", "skyline"}, commands
    for i, command in enumerate(commands):
        argv = shlex.split(command)
        assert argv[0] == "fastpriv"
        where = tmp_path / f"remedy{i}"
        where.mkdir()
        proc = _fastpriv(argv[1:], cwd=where)
        assert proc.returncode == 0, (command, proc.stderr.decode())
        assert (where / "release.parquet").is_file()


@pytest.mark.parametrize("extra", [["--min-l", "20"], ["--c", "0.1"]])
def test_no_runnable_remedy_is_offered_when_none_can_pass(extra, capsys):
    assert main([*AUDIT_ADULT, *extra]) == 1
    out = capsys.readouterr().out
    assert "No generalization of these quasi-identifiers can pass" in out
    assert _remedies(out) == [], out              # neither mondrian nor skyline


def test_risk_remedy_not_offered_beyond_the_table(capsys):
    assert main([*AUDIT_ADULT, "--risk", "--max-risk", "0.00001"]) == 1
    out = capsys.readouterr().out
    assert "--min-size 100000" not in out
    assert "one group of all 45,222 records" in out


def test_report_verdict_knows_when_risk_is_out_of_reach(table, tmp_path, capsys):
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    assert main(["report", str(path), "--sensitive", "disease", "--qi", "zip", "age",
                 "--min-size", "1", "--min-l", "1", "--max-t", "1", "--k", "0",
                 "--point", "0,0,0",
                 "--no-robustness", "--no-attack", "--max-risk", "0.01",
                 "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    verdict = json.loads((tmp_path / "r.json").read_text())["verdict"]
    assert verdict["violated"] == ["risk"]
    assert _remedies(out) == [] and "prosecutor risk ≤ 0.01" in out
