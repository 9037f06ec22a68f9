"""Every command a command suggests (a remedy, the command publishing a chosen node) runs as
printed: it reads DATA as the command that printed it did — ``--weight``, ``--nulls``,
``--encoding``, ``--delimiter`` — so it never fails for reading the data otherwise (exit 2)
and publishes the same people (issue 49)."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from fastpriv.cli import main
from fastpriv.report.verdict import NULLS_VALUE_REMEDY, anonymize_command

#: the lines that hold a command to copy, and their prefixes
PREFIXES = ("To fix: ", "To publish the chosen node: ")


def _suggested(text: str) -> list[str]:
    """Return the commands ``text`` suggests (after "To fix: " and the like)."""
    out = []
    for line in text.splitlines():
        for prefix in PREFIXES:
            if prefix in line:
                command = line.split(prefix, 1)[1]
                assert command.startswith("fastpriv "), line
                out.append(command)
    return out


def _run_suggested(commands: list[str], where, monkeypatch, capsys) -> list[int]:
    """Run each command as a shell would split it, each in its own folder; return the codes."""
    codes = []
    for i, command in enumerate(commands):
        folder = where / f"suggested{i}"
        folder.mkdir()
        monkeypatch.chdir(folder)
        argv = shlex.split(command, comments=True)
        assert argv[0] == "fastpriv"
        codes.append(main(argv[1:]))
        err = capsys.readouterr().err
        assert codes[-1] != 2, (command, err)
    return codes


def _people(n: int = 3000, seed: int = 5, nulls: bool = False) -> pa.Table:
    """One row per person: age, zip (QI), dis (sensitive), fairly diverse."""
    rng = np.random.default_rng(seed)
    age = rng.integers(20, 70, n)
    zipc = rng.choice([f"z{i}" for i in range(8)], n)
    dis = rng.choice(["flu", "hiv", "cold", "cancer", "asthma", "gout"], n)
    t = pa.table({"age": age, "zip": zipc, "dis": dis})
    if nulls:                     # a few people without an age, a few without a value
        age_null = pa.array(np.arange(n) % 97 == 0)
        dis_null = pa.array(np.arange(n) % 89 == 1)
        t = t.set_column(0, "age", pc.if_else(age_null, pa.scalar(None, pa.int64()),
                                              t["age"]))
        t = t.set_column(2, "dis", pc.if_else(dis_null, pa.scalar(None, pa.string()),
                                              t["dis"]))
    return t


def _aggregate(people: pa.Table) -> pa.Table:
    """The GROUP BY count of ``people``: one row per distinct person, weight column n."""
    agg = people.group_by(people.column_names, use_threads=False).aggregate([([], "count_all")])
    return agg.rename_columns([*people.column_names, "n"])


def _released_people(folder) -> int:
    """People a release written by a remedy stands for (its count column, or its rows)."""
    paths = sorted(folder.glob("release*.parquet"))
    assert paths, list(folder.iterdir())
    t = pq.read_table(paths[0])
    if paths[0].name.endswith(".sensitive.parquet"):
        return int(pc.sum(t["count"]).as_py())
    return int(pc.sum(t["n"]).as_py()) if "n" in t.column_names else t.num_rows


AUDIT = ["--qi", "age", "zip", "--sensitive", "dis", "--min-l", "2", "--k", "1",
         "--min-size", "10"]


@pytest.mark.parametrize("nulls", ["error", "drop"])
def test_weighted_audit_remedies_run_and_publish_the_people(nulls, tmp_path, monkeypatch,
                                                           capsys):
    """fastpriv audit agg.parquet --weight n --nulls …: each remedy carries --weight n and
    the null policy, runs, and its release stands for the audited people."""
    people = _people(nulls=nulls != "error")
    agg = _aggregate(people)
    pq.write_table(agg, tmp_path / "agg.parquet")
    assert main(["audit", str(tmp_path / "agg.parquet"), *AUDIT, "--weight", "n",
                 "--nulls", nulls]) == 1
    out = capsys.readouterr().out
    commands = _suggested(out)
    methods = {shlex.split(c)[shlex.split(c).index("--method") + 1] for c in commands}
    assert {"mondrian", "skyline"} <= methods, out
    for c in commands:
        argv = shlex.split(c)
        assert argv[argv.index("--weight") + 1] == "n", c
        assert ("--nulls" in argv) == (nulls == "drop"), c
    _run_suggested(commands, tmp_path, monkeypatch, capsys)
    for i, c in enumerate(commands):
        if "--method mondrian" in c:            # every person without a null is published
            assert _released_people(tmp_path / f"suggested{i}") == people.drop_null().num_rows


def test_audit_with_nulls_as_values_offers_no_command_that_reads_otherwise(
        tmp_path, monkeypatch, capsys):
    """--nulls value: fastpriv anonymize reads no null as a value, so no command is offered
    (one that drops them could miss thresholds the audit found reachable); audited again
    with --nulls drop, as the sentence says, the remedies run."""
    agg = _aggregate(_people(nulls=True))
    path = str(tmp_path / "agg.parquet")
    pq.write_table(agg, path)
    assert main(["audit", path, *AUDIT, "--weight", "n", "--nulls", "value"]) == 1
    out = capsys.readouterr().out
    assert _suggested(out) == [] and NULLS_VALUE_REMEDY in out
    assert "--nulls value" in out and "Audit again with --nulls drop" in out
    assert main(["audit", path, *AUDIT, "--weight", "n", "--nulls", "drop"]) == 1
    commands = _suggested(capsys.readouterr().out)
    assert commands
    _run_suggested(commands, tmp_path, monkeypatch, capsys)


def test_audit_report_with_nulls_as_values_json_names_no_command(tmp_path, capsys):
    """The verdict's remedies (JSON, HTML) say the same as the text."""
    import json

    people = _people(nulls=True)     # nulls in age only (knowledge skylines read no null σ)
    people = people.set_column(2, "dis", pc.fill_null(people["dis"], "flu"))
    pq.write_table(_aggregate(people), tmp_path / "agg.parquet")
    assert main(["report", str(tmp_path / "agg.parquet"), *AUDIT, "--weight", "n",
                 "--nulls", "value", "--json", str(tmp_path / "r.json")]) == 1
    verdict = json.loads((tmp_path / "r.json").read_text())["verdict"]
    assert verdict["remedies"] == [NULLS_VALUE_REMEDY]
    assert _suggested(capsys.readouterr().out) == []


def test_audit_without_sensitive_weighted_remedy_runs(tmp_path, monkeypatch, capsys):
    """The remedy of the QI classes alone carries --weight and --nulls too.

    ``--no-risk``: the risk section of a table without a sensitive column refuses the
    classes counted with ``--nulls drop`` (a defect of ``report._build._class_sections``,
    reported with issue 49), so that audit could not run to its remedy.
    """
    people = _people(nulls=True)
    pq.write_table(_aggregate(people), tmp_path / "agg.parquet")
    assert main(["audit", str(tmp_path / "agg.parquet"), "--qi", "age", "zip",
                 "--weight", "n", "--nulls", "drop", "--min-size", "10", "--no-risk"]) == 1
    commands = _suggested(capsys.readouterr().out)
    assert commands and all("--weight n --nulls drop" in c for c in commands), commands
    _run_suggested(commands, tmp_path, monkeypatch, capsys)
    kept = people.num_rows - people["age"].null_count     # dis is not read: its nulls stay
    assert _released_people(tmp_path / "suggested0") == kept


def _write_csv(table: pa.Table, path, *, delimiter: str, encoding: str) -> None:
    """Write ``table`` as CSV with ``delimiter``, its text in ``encoding``."""
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(delimiter=delimiter))
    path.write_bytes(sink.getvalue().to_pybytes().decode("utf-8").encode(encoding))


def _latin1(table: pa.Table) -> pa.Table:
    """``table`` with a zip code that is not ASCII (so reading it needs the encoding)."""
    z = pc.replace_substring(table["zip"], "z3", "zé3")
    return table.set_column(table.column_names.index("zip"), "zip", z)


@pytest.mark.parametrize("command", ["audit", "report"])
def test_csv_encoding_and_delimiter_are_carried_over(command, tmp_path, monkeypatch, capsys):
    """A latin-1, ';'-separated, weighted CSV with nulls: the remedies read it the same way.

    ``report --no-risk``: the report's risk section reads the rows of a weighted release
    with their nulls (a defect of ``report._build``, reported with issue 49).
    """
    people = _latin1(_people(nulls=True))
    path = tmp_path / "agg.csv"
    _write_csv(_aggregate(people), path, delimiter=";", encoding="latin-1")
    extra = ["--no-robustness", "--no-attack", "--no-risk"] if command == "report" else []
    assert main([command, str(path), *AUDIT, *extra, "--weight", "n", "--nulls", "drop",
                 "--encoding", "latin-1", "--delimiter", ";"]) == 1
    commands = _suggested(capsys.readouterr().out)
    assert commands
    for c in commands:
        argv = shlex.split(c)
        assert argv[argv.index("--encoding") + 1] == "latin-1", c
        assert argv[argv.index("--delimiter") + 1] == ";", c
    _run_suggested(commands, tmp_path, monkeypatch, capsys)
    for i, c in enumerate(commands):
        if "--method mondrian" in c:
            assert _released_people(tmp_path / f"suggested{i}") == people.drop_null().num_rows


def test_tab_delimiter_is_written_as_tab():
    """A tab delimiter is written as the word ``tab`` (one token, readable, parsed back)."""
    c = anonymize_command("t.tsv", method="mondrian", qi=["a"], sensitive="s",
                          criteria=["--min-size", "2"], delimiter="\t")
    assert "--delimiter tab " in c
    from fastpriv.cli._common import delimiter_arg

    assert delimiter_arg("tab") == "\t"


def test_anonymize_command_refuses_nulls_it_cannot_read():
    from fastpriv.errors import InputError

    with pytest.raises(InputError, match="nulls"):
        anonymize_command("t", method="mondrian", qi=["a"], sensitive="s", criteria=[],
                          nulls="value")


def test_build_report_remedy_options_are_checked():
    from fastpriv.errors import InputError
    from fastpriv.report import build_report

    t = pa.table({"q": ["a"] * 3 + ["b"] * 3, "s": list("xyzxyz")})
    with pytest.raises(InputError, match="remedy_options"):
        build_report(t, sensitive="s", qi=["q"], robustness=False, attack=False,
                     remedy_options={"population": 100})
    rep = build_report(t, sensitive="s", qi=["q"], robustness=False, attack=False,
                       min_size=4, min_l=2, k=0,
                       remedy_options={"weight": "w", "delimiter": ";"})
    assert rep.verdict["remedies"]
    assert all("--weight w" in r and "--delimiter ';'" in r for r in rep.verdict["remedies"])


@pytest.mark.parametrize("command", ["robustness", "attack"])
def test_row_level_remedies_carry_weight_and_nulls(command, tmp_path, monkeypatch, capsys):
    """fastpriv robustness/attack on a weighted release with nulls: the ART remedy reads
    it the same way and publishes its people (those ART on the people without nulls
    publishes)."""
    from fastpriv._arrow import expand_weights
    from fastpriv.anonymize import art

    rng = np.random.default_rng(3)
    n = 2000
    big = pa.table({"g": rng.integers(0, 200, n), "a": rng.integers(0, 4, n),
                    "b": rng.choice(["u", "v"], n),
                    "s": rng.choice(["x", "y", "z"], n, p=[.6, .3, .1])})
    big = big.set_column(1, "a", pc.if_else(pa.array(np.arange(n) % 50 == 0),
                                            pa.scalar(None, pa.int64()), big["a"]))
    agg = big.group_by(["g", "a", "b", "s"], use_threads=False).aggregate([([], "count_all")])
    pq.write_table(agg, tmp_path / "agg.parquet")
    assert main([command, str(tmp_path / "agg.parquet"), "--qi", "a", "b", "--sensitive", "s",
                 "--group", "g", "--r", "2", "--weight", "count_all", "--nulls", "drop"]) == 1
    commands = _suggested(capsys.readouterr().out)
    assert len(commands) == 1 and "--weight count_all --nulls drop" in commands[0]
    assert _run_suggested(commands, tmp_path, monkeypatch, capsys) == [0]
    expanded = expand_weights(agg, "count_all")
    res = art(expanded, qi=["a", "b"], sensitive="s", r=2, nulls="drop")
    published = int((res.group_ids >= 0).sum())
    assert agg.num_rows < published <= n - big["a"].null_count
    assert _released_people(tmp_path / "suggested0") == published


def test_attack_on_a_qi_table_names_no_command_on_it(tmp_path, monkeypatch, capsys):
    """DATA is Anatomy's QI table (--sensitive-table): it has no sensitive column, so the
    ART remedy reads --original (row-aligned, with the values), or none is printed."""
    from fastpriv.anonymize import anatomy

    people = _people(n=1200)
    pq.write_table(people, tmp_path / "people.parquet")
    res = anatomy(people, sensitive="dis", l=2, qi=["age", "zip"], seed=1)
    qi_path, st_path = tmp_path / "r.qi.parquet", tmp_path / "r.sensitive.parquet"
    res.write_tables(qi_path, st_path)
    rows = res.published_rows(people)
    pq.write_table(people.take(pa.array(rows)), tmp_path / "original.parquet")
    base = ["attack", str(qi_path), "--qi", "age", "zip", "--sensitive", "dis", "--group",
            "group_id", "--sensitive-table", str(st_path), "--r", "2.5"]
    assert main(base) == 1
    out = capsys.readouterr().out
    assert _suggested(out) == [] and "--original" in out and "--method art" in out
    assert main([*base, "--original", str(tmp_path / "original.parquet")]) == 1
    commands = _suggested(capsys.readouterr().out)
    assert len(commands) == 1 and "original.parquet" in commands[0]
    _run_suggested(commands, tmp_path, monkeypatch, capsys)


def test_frontier_command_carries_the_csv_reading(tmp_path, monkeypatch, capsys):
    """fastpriv frontier: the command publishing the chosen node reads the CSV the same way."""
    people = _latin1(_people(n=1500, nulls=True))
    path = tmp_path / "agg.csv"
    _write_csv(_aggregate(people), path, delimiter=";", encoding="latin-1")
    assert main(["frontier", str(path), "--qi", "age", "--interval", "age=5,10,20,*",
                 "--min-size", "5", "--weight", "n", "--nulls", "drop",
                 "--encoding", "latin-1", "--delimiter", ";"]) == 0
    commands = _suggested(capsys.readouterr().out)
    assert len(commands) == 1
    assert "--encoding latin-1 --delimiter ';'" in commands[0]
    assert "--weight n --nulls drop" in commands[0]
    _run_suggested(commands, tmp_path, monkeypatch, capsys)


# ============================================================================ documented
def _documented_audits() -> list[str]:
    """The documented examples of the commands that suggest commands (each command's --help)."""
    from fastpriv.cli import _subparsers, build_parser
    from fastpriv.cli._common import examples_of

    sub = _subparsers(build_parser())
    return [e for name in ("audit", "report", "robustness", "attack", "frontier")
            for e in examples_of(sub.choices[name])]


def _shaped(example: str, tmp_path, *, non_ascii: bool = True) -> list[str]:
    """``example`` on Adult read through the input-shaping options: the columns it reads,
    aggregated into a weighted, latin-1, ';'-separated CSV with a few nulls (no --weight
    with --bucketize, which refuses it)."""
    from fastpriv.datasets import load_adult

    argv = shlex.split(example)[1:]
    cols = [c for c in load_adult().column_names if c in argv]
    t = load_adult().select(cols)
    n = t.num_rows
    i = cols.index(argv[argv.index("--sensitive") + 1]) if "--sensitive" in argv else 0
    col = t.column(i)
    t = t.set_column(i, cols[i], pc.if_else(pa.array(np.arange(n) % 501 == 0),
                                            pa.scalar(None, col.type), col))
    race = "race" in cols and non_ascii
    if race:                                      # a value that is not ASCII
        j = cols.index("race")
        t = t.set_column(j, "race", pc.replace_substring(t["race"], "Other", "Autre-é"))
    weighted = "--bucketize" not in argv
    if weighted:
        t = _aggregate(t)
    path = tmp_path / "shaped.csv"
    _write_csv(t, path, delimiter=";", encoding="latin-1")
    argv[1] = str(path)
    return argv + (["--weight", "n"] if weighted else []) + [
        "--nulls", "drop", "--encoding", "latin-1", "--delimiter", ";"]


@pytest.mark.slow
@pytest.mark.parametrize("shaped", [False, True], ids=["as documented", "shaped input"])
@pytest.mark.parametrize("example", _documented_audits(),
                         ids=[e.split()[1] for e in _documented_audits()])
def test_documented_failing_audits_suggest_commands_that_run(example, shaped, tmp_path,
                                                            monkeypatch, capsys):
    """Each documented example of audit/report/robustness/attack/frontier — as written, and
    read through --weight, --nulls, --encoding and --delimiter — prints commands that run."""
    monkeypatch.chdir(tmp_path)
    frontier = example.startswith("fastpriv frontier")
    # frontier generalizes with the bundled hierarchies, named (the data is not 'adult'),
    # which know Adult's values only: its race keeps them (the others test a non-ASCII one)
    argv = (_shaped(example, tmp_path, non_ascii=not frontier) if shaped
            else shlex.split(example)[1:])
    if shaped and frontier:
        from fastpriv.datasets import hierarchy_path

        argv += ["--hierarchies", str(Path(hierarchy_path("age")).parent)]
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc in (0, 1), out
    commands = _suggested(out)
    assert commands or rc == 0 or "No generalization" in out, out
    if shaped:
        for c in commands:
            assert "--encoding latin-1 --delimiter ';'" in c and "--nulls drop" in c, c
            assert ("--weight n" in c) == ("--bucketize" not in argv), c
    _run_suggested(commands, tmp_path, monkeypatch, capsys)
