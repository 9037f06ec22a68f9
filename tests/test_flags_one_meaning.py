"""One flag, one meaning, everywhere (issue 48): a long flag that several commands share has
the same type and choices in each; the few that differ are listed here with the reason. And
data comes in from anywhere: standard input is sniffed like a path, ``--delimiter`` on every
command that reads data, ``-o -`` where the format streams."""

import argparse
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from fastpriv.cli import _subparsers, build_parser, main

#: flag -> {command: why it differs} — every difference must be justified here
ALLOWED = {
    "--c": {"audit": "several thresholds: the verdict reports each, uses the smallest",
            "report": "several thresholds: the verdict reports each, uses the smallest",
            "skyline": "exact fraction (19/20): the skyline's arithmetic is exact"},
    "--point": {"skyline": "L,K,M,C: a skyline point with its own threshold"},
    "--sigma": {"report": "several values' skylines in one report"},
    "--min-l": {"anonymize": "entropy ℓ of a criterion may be real (--l-kind entropy)",
                "frontier": "the criterion flags of anonymize"},
    "--nulls": {"anonymize": "a generalization has no label for a null: error or drop",
                "frontier": "the criterion flags of anonymize"},
    "--stream": {},
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = _subparsers(build_parser())
    out = {}
    for name, p in sub.choices.items():
        try:                                   # lazy options (anonymize's methods) appear
            p.parse_known_args(["--no-such-flag"])
        except SystemExit:
            pass
        out[name] = p
    return out


def _signature(a: argparse.Action) -> tuple:
    kind = getattr(a.type, "__name__", repr(a.type))
    return kind, None if a.choices is None else tuple(a.choices), type(a).__name__


def test_a_shared_flag_means_one_thing():
    seen: dict[str, dict[str, tuple]] = {}
    for name, p in _commands().items():
        for a in p._actions:
            for flag in a.option_strings:
                if flag.startswith("--") and flag != "--help":
                    seen.setdefault(flag, {})[name] = _signature(a)
    bad = []
    for flag, by in seen.items():
        allowed = ALLOWED.get(flag, {})
        common = {sig for cmd, sig in by.items() if cmd not in allowed}
        if len(common) > 1:
            bad.append((flag, by))
    assert not bad, "flags with two meanings: " + "; ".join(
        f"{f}: {', '.join(f'{c}={s}' for c, s in by.items())}" for f, by in bad)


@pytest.mark.parametrize("flag", ["--group", "--risk", "--population", "--delimiter",
                                  "--max-risk", "--top", "--stream"])
def test_flags_the_issue_named_are_shared(flag):
    have = [n for n, p in _commands().items()
            if any(flag in a.option_strings for a in p._actions)]
    assert len(have) >= 2, (flag, have)


def test_every_data_command_takes_delimiter_and_encoding():
    for name, p in _commands().items():
        flags = {f for a in p._actions for f in a.option_strings}
        if any(a.dest == "data" for a in p._actions):
            assert {"--delimiter", "--encoding"} <= flags, name


# ------------------------------------------------------------------ data in from anywhere
@pytest.fixture
def semicolon_csv(tmp_path):
    t = pa.table({"age": [30, 30, 30, 40, 40, 40], "sex": ["M"] * 6,
                  "job": ["a", "b", "c", "a", "b", "c"]})
    path = tmp_path / "data.csv"
    pacsv.write_csv(t, path, pacsv.WriteOptions(delimiter=";"))
    return path


def _fastpriv(args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "fastpriv", *args], stdin=stdin,
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_standard_input_is_sniffed_like_a_path(semicolon_csv, tmp_path):
    out = tmp_path / "a.json"
    with open(semicolon_csv, "rb") as fh:
        run = _fastpriv(["audit", "-", "--qi", "age", "sex", "--sensitive", "job",
                         "--min-size", "3", "--min-l", "3", "--no-risk", "--json", str(out)],
                        stdin=fh)
    assert run.returncode in (0, 1), run.stderr
    assert json.loads(out.read_text())["release"]["n_groups"] == 2


def test_delimiter_overrides_the_sniffing(semicolon_csv, capsys):
    rc = main(["audit", str(semicolon_csv), "--qi", "age", "--sensitive", "job",
               "--delimiter", ",", "--no-risk"])
    assert rc == 2 and "not found" in capsys.readouterr().err
    assert main(["audit", str(semicolon_csv), "--qi", "age", "--sensitive", "job",
                 "--delimiter", ";", "--no-risk", "--min-size", "1"]) in (0, 1)


def test_delimiter_must_be_one_character(semicolon_csv):
    with pytest.raises(SystemExit) as stop:
        main(["audit", str(semicolon_csv), "--qi", "age", "--sensitive", "job",
              "--delimiter", ";;"])
    assert stop.value.code == 2


def test_release_to_standard_output_as_csv(tmp_path):
    run = _fastpriv(["anonymize", "adult", "--method", "mondrian", "--qi", "age", "sex",
                     "--sensitive", "occupation", "--min-size", "5", "-o", "-",
                     "--format", "csv"])
    assert run.returncode == 0, run.stderr
    table = pacsv.read_csv(pa.BufferReader(run.stdout.encode()))
    assert table.column_names == ["age", "sex", "occupation", "group_id"]
    assert table.num_rows == 45222
    assert "utility" in run.stderr                    # the summary went to stderr
    sizes = table.group_by("group_id").aggregate([("group_id", "count")])
    assert min(sizes.column("group_id_count").to_pylist()) >= 5


@pytest.mark.parametrize("extra,needle", [([], "--format csv"),
                                          (["--format", "csv", "--json", "-"], "both write"),
                                          (["--format", "csv", "--method", "anatomy"],
                                           "two tables")])
def test_release_to_standard_output_needs_one_streaming_table(extra, needle, capsys):
    argv = ["anonymize", "adult", "--qi", "age", "sex", "--sensitive", "occupation",
            "--min-size", "5", "-o", "-", *extra]
    if "--method" not in extra:
        argv += ["--method", "mondrian"]
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def test_group_takes_several_columns_in_every_command(tmp_path):
    t = pa.table({"g1": [1, 1, 1, 2, 2, 2], "g2": ["x"] * 6, "age": [1, 2, 3, 4, 5, 6],
                  "s": ["a", "b", "c", "a", "b", "c"]})
    path = tmp_path / "rel.parquet"
    pq.write_table(t, path)
    out = tmp_path / "a.json"
    assert main(["audit", str(path), "--group", "g1", "g2", "--sensitive", "s",
                 "--min-size", "3", "--json", str(out)]) in (0, 1)
    assert json.loads(out.read_text())["release"]["n_groups"] == 2


def test_population_table_counts_people_in_anonymize(tmp_path, capsys):
    pop = tmp_path / "pop.parquet"
    pq.write_table(pa.table({"x": list(range(1_000_000))}), pop)
    out_n, out_t = tmp_path / "n.json", tmp_path / "t.json"
    common = ["anonymize", "adult", "--qi", "age", "sex", "race", "--min-size", "2",
              "--max-uniqueness", "0.01"]
    assert main([*common, "--population", "1000000", "--json", str(out_n)]) == 0
    assert main([*common, "--population", str(pop), "--json", str(out_t)]) == 0
    n, t = (json.loads(p.read_text()) for p in (out_n, out_t))
    assert n["criterion"] == t["criterion"] and "N=1e+06" in n["criterion"]
    assert n["node"] == t["node"] and n["minimal_nodes"] == t["minimal_nodes"]


def test_risk_runs_by_default_with_qi_in_audit_as_in_report(tmp_path):
    out = tmp_path / "a.json"
    main(["audit", "adult", "--qi", "age", "sex", "--sensitive", "occupation",
          "--json", str(out)])
    assert "risk" in json.loads(out.read_text())
    main(["audit", "adult", "--qi", "age", "sex", "--sensitive", "occupation", "--no-risk",
          "--json", str(out), "--overwrite"])
    assert "risk" not in json.loads(out.read_text())
