"""Outputs fail closed against hostile files (issue 47).

* a journal fastpriv did not write — planted in a shared folder, corrupt, a link, a folder
  — is reported and left alone: nothing outside its folder is touched, nothing inside it
  but fastpriv's own files, and the write into the folder goes on;
* the temporary-file sweep removes only regular files with fastpriv's exact names;
* fault injection is the test suite's (``tests/fault_launcher.py``), never an environment
  variable's;
* standard input redirected from a file is an input no output replaces.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv._io import JournalWarning, output_set, recover, write_json, write_text

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "4194999-0123456789ab"          # a pid above any pid_max: a dead process
JOURNAL = f".fastpriv-commit-{TOKEN}.json"


def _dead_pid() -> int:
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    except OSError:
        return 4194305


@pytest.fixture
def shared(tmp_path):
    """A shared output folder holding someone's file, and a home folder outside it."""
    home, folder = tmp_path / "home", tmp_path / "shared"
    home.mkdir()
    folder.mkdir()
    (home / "victim.txt").write_text("precious")
    (folder / "theirs.txt").write_text("someone else's")
    return folder, home / "victim.txt"


def _snapshot(path: Path) -> dict:
    """Every entry under ``path``: kind, and bytes or link target."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_symlink():
            out[str(p)] = ("link", os.readlink(p))
        elif p.is_dir():
            out[str(p)] = ("dir",)
        elif p.is_file():
            out[str(p)] = ("file", p.read_bytes())
        else:
            out[str(p)] = ("other",)
    return out


def _inode(path) -> list[int]:
    st = os.stat(path)
    return [st.st_dev, st.st_ino]


def _journal(entries, token=TOKEN, **top) -> dict:
    return {"format": "fastpriv journal", "version": 2, "token": token, "entries": entries,
            **top}


def _entry(dest, token=TOKEN, *, new, backup=False, **kw) -> dict:
    e = {"dest": dest, "tmp": f".{dest}.fastpriv-{token}.tmp",
         "backup": f".{dest}.fastpriv-old-{token}" if backup else None, "new": new}
    e.update(kw)
    return e


def _planted(kind, folder: Path, victim: Path):
    """Plant a hostile journal named ``JOURNAL`` in ``folder``; return its path."""
    j = folder / JOURNAL
    victim_inode = _inode(victim)
    if kind == "absolute path outside":
        j.write_text(json.dumps(_journal([_entry(str(victim), new=victim_inode)])))
    elif kind == "old format with absolute paths":      # what fastpriv 0.x wrote
        j.write_text(json.dumps({"token": TOKEN, "entries": [
            {"dest": str(victim), "tmp": str(victim), "backup": None, "new": victim_inode}]}))
    elif kind == "../ path":
        rel = os.path.relpath(victim, folder)
        j.write_text(json.dumps(_journal([_entry(rel, new=victim_inode)])))
    elif kind == "symlink inside pointing outside":
        (folder / "link.txt").symlink_to(victim)
        j.write_text(json.dumps(_journal([_entry("link.txt", new=victim_inode)])))
    elif kind == "backup is a symlink to outside":
        (folder / "out.txt").write_text("new")
        (folder / f".out.txt.fastpriv-old-{TOKEN}").symlink_to(victim)
        j.write_text(json.dumps(_journal([_entry("out.txt", new=_inode(folder / "out.txt"),
                                                 backup=True)])))
    elif kind == "names not of the token":
        other = "4194999-ffffffffffff"
        j.write_text(json.dumps(_journal([_entry("theirs.txt", other,
                                                 new=_inode(folder / "theirs.txt"))])))
    elif kind == "token not the name's":
        other = "4194999-ffffffffffff"
        j.write_text(json.dumps(_journal([_entry("theirs.txt", other,
                                                 new=_inode(folder / "theirs.txt"))], other)))
    elif kind == "tmp names a file outside":
        j.write_text(json.dumps(_journal([_entry("theirs.txt", new=[0, 0],
                                                 tmp=str(victim))])))
    elif kind == "garbage JSON":
        j.write_text('{"format": "fastpriv journal", "version": 2, "entries": [1, {"dest"')
    elif kind == "JSON of the wrong shape":
        j.write_text(json.dumps({"entries": [{"dest": 5}, None, "x"], "token": [TOKEN]}))
    elif kind == "binary junk":
        j.write_bytes(bytes(range(256)) * 4)
    elif kind == "deeply nested JSON":
        j.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "a directory":
        j.mkdir()
        (j / "inside.txt").write_text("x")
    elif kind == "a FIFO":
        os.mkfifo(j)
    elif kind == "a symlink to a journal outside":
        outside = victim.parent / JOURNAL
        outside.write_text(json.dumps(_journal([_entry("victim.txt", new=victim_inode)])))
        j.symlink_to(outside)
    elif kind == "a name without a token":
        j = folder / ".fastpriv-commit-../../victim.json".replace("/", "_")
        j.write_text(json.dumps(_journal([_entry("theirs.txt",
                                                 new=_inode(folder / "theirs.txt"))])))
    else:                                                   # pragma: no cover
        raise AssertionError(kind)
    return j


KINDS = ["absolute path outside", "old format with absolute paths", "../ path",
         "symlink inside pointing outside", "backup is a symlink to outside",
         "names not of the token", "token not the name's", "tmp names a file outside",
         "garbage JSON", "JSON of the wrong shape", "binary junk", "deeply nested JSON",
         "a directory", "a FIFO", "a symlink to a journal outside", "a name without a token"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_journal_is_reported_left_alone_and_the_write_goes_on(shared, kind):
    folder, victim = shared
    journal = _planted(kind, folder, victim)
    before_home = _snapshot(victim.parent)
    before = _snapshot(folder)
    with pytest.warns(JournalWarning, match="alone") as record:
        with output_set():                  # a set of two: the journal code path
            write_json(folder / "out.json", {"a": 1})
            write_text(folder / "notes.txt", "n")
    assert any(journal.name in str(w.message) for w in record), [str(w.message)
                                                                 for w in record]
    assert _snapshot(victim.parent) == before_home          # nothing outside touched
    after = _snapshot(folder)
    assert json.loads((folder / "out.json").read_text()) == {"a": 1}
    assert (folder / "notes.txt").read_text() == "n"
    del after[str(folder / "out.json")], after[str(folder / "notes.txt")]
    assert after == before                   # every file there, the journal included, kept
    assert os.path.lexists(journal)


def test_recover_reports_and_counts_nothing_for_a_planted_journal(shared):
    folder, victim = shared
    _planted("absolute path outside", folder, victim)
    with pytest.warns(JournalWarning, match="does not name one file of the journal's own"):
        assert recover(folder) == 0
    assert victim.read_text() == "precious"


def test_a_journal_of_another_user_is_left_alone(shared, monkeypatch):
    folder, victim = shared
    theirs = folder / "theirs.txt"
    (folder / JOURNAL).write_text(json.dumps(_journal([_entry("theirs.txt",
                                                              new=_inode(theirs))])))
    # as if another user wrote it: this process's uid differs from the file's owner
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(folder / JOURNAL).st_uid + 1)
    with pytest.warns(JournalWarning, match="another user"):
        assert recover(folder) == 0
    assert theirs.read_text() == "someone else's" and (folder / JOURNAL).exists()


def test_a_genuine_journal_is_still_rolled_back(tmp_path):
    """A set killed mid-commit: the first file placed, the second not — the old set back.

    The destination ``a.txt`` sorts before the journal, so its backup is seen first: it must
    survive until the journal is read.
    """
    folder = tmp_path
    (folder / "a.txt").write_text("old a")
    (folder / "b.txt").write_text("old b")
    os.link(folder / "a.txt", folder / f".a.txt.fastpriv-old-{TOKEN}")
    os.link(folder / "b.txt", folder / f".b.txt.fastpriv-old-{TOKEN}")
    (folder / f".a.txt.fastpriv-{TOKEN}.tmp").write_text("new a")
    (folder / f".b.txt.fastpriv-{TOKEN}.tmp").write_text("new b")
    (folder / "c.txt.new").write_text("new c")          # c.txt did not exist before
    entries = [_entry(n, new=_inode(folder / f".{n}.fastpriv-{TOKEN}.tmp"), backup=True)
               for n in ("a.txt", "b.txt")]
    entries.append(_entry("c.txt", new=_inode(folder / "c.txt.new")))
    (folder / JOURNAL).write_text(json.dumps(_journal(entries)))
    os.replace(folder / f".a.txt.fastpriv-{TOKEN}.tmp", folder / "a.txt")   # placed
    os.replace(folder / "c.txt.new", folder / "c.txt")                       # placed
    assert recover(folder) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt", "b.txt"]
    assert (folder / "a.txt").read_text() == "old a"
    assert (folder / "b.txt").read_text() == "old b"


def test_a_new_file_whose_backup_vanished_is_kept(tmp_path):
    (tmp_path / "a.txt").write_text("new a")
    (tmp_path / JOURNAL).write_text(json.dumps(_journal(
        [_entry("a.txt", new=_inode(tmp_path / "a.txt"), backup=True)])))
    assert recover(tmp_path) == 1
    assert (tmp_path / "a.txt").read_text() == "new a"       # the only copy left
    assert not (tmp_path / JOURNAL).exists()


def test_the_sweep_removes_only_fastpriv_files_of_dead_processes(shared):
    folder, victim = shared
    dead = f"{_dead_pid()}-00112233aabb"
    alive = f"{os.getpid()}-00112233aabb"
    (folder / f".x.fastpriv-{dead}.tmp").write_text("stale temp")
    (folder / f".x.fastpriv-old-{dead}").write_text("stale backup")
    (folder / f".x.fastpriv-{alive}.tmp").write_text("a live writer's temp")
    (folder / f".y.fastpriv-{dead}.tmp").symlink_to(victim)
    (folder / f".z.fastpriv-old-{dead}").mkdir()
    (folder / f".w.fastpriv-{dead}.tmp.bak").write_text("near miss")
    (folder / ".v.fastpriv-123-abc.tmp").write_text("near miss: not a token")
    (folder / f".u.fastpriv-{'9' * 10}-00112233aabb.tmp").write_text("pid overflows")
    assert recover(folder) == 0
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted([f".x.fastpriv-{alive}.tmp", f".y.fastpriv-{dead}.tmp",
                            f".z.fastpriv-old-{dead}", f".w.fastpriv-{dead}.tmp.bak",
                            ".v.fastpriv-123-abc.tmp", "theirs.txt"])
    assert victim.read_text() == "precious"


def test_the_files_of_a_journal_left_alone_are_not_swept(tmp_path):
    (tmp_path / JOURNAL).write_text("not json")
    backup = tmp_path / f".a.txt.fastpriv-old-{TOKEN}"
    backup.write_text("maybe the only copy")
    with pytest.warns(JournalWarning):
        recover(tmp_path)
    assert backup.read_text() == "maybe the only copy"


def test_one_folder_by_two_spellings_commits_without_deadlock(tmp_path):
    real = tmp_path / "d"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    done = []

    def commit():
        with output_set():
            write_text(real / "a.txt", "a")
            write_text(tmp_path / "link" / "b.txt", "b")
        done.append(True)

    th = threading.Thread(target=commit, daemon=True)
    th.start()
    th.join(60)
    assert done == [True]
    assert sorted(p.name for p in real.iterdir()) == ["a.txt", "b.txt"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20)
_names = st.sampled_from(["VICTIM", "theirs.txt", "../home/victim.txt", "/", ".", "..",
                          "", "a/b", "\0", "\udcff", "\ud800", "x" * 300, JOURNAL,
                          f".theirs.txt.fastpriv-{TOKEN}.tmp"]) | st.text(max_size=12)
_entries = st.fixed_dictionaries(
    {"dest": _names, "tmp": _names | st.none(), "backup": _names | st.none(),
     "new": st.lists(st.integers(-2, 2**64), max_size=3) | _json})
_near_journals = st.fixed_dictionaries(
    {"format": st.sampled_from(["fastpriv journal", "fastpriv", ""]),
     "version": st.sampled_from([2, 2.0, True, 1, "2"]),
     "token": st.sampled_from([TOKEN, "1-0123456789ab", ""]),
     "entries": st.lists(_entries, max_size=3)})


@settings(max_examples=60, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(content=st.binary(max_size=300) | _json.map(json.dumps).map(str.encode)
       | _near_journals.map(json.dumps).map(str.encode))
def test_no_journal_content_raises_or_touches_other_files(tmp_path, content):
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    home, folder = base / "home", base / "shared"
    home.mkdir(parents=True)
    folder.mkdir()
    victim = home / "victim.txt"
    victim.write_text("precious")
    (folder / "theirs.txt").write_text("someone else's")
    # "VICTIM" stands for the absolute path of the file outside
    (folder / JOURNAL).write_bytes(content.replace(b"VICTIM", json.dumps(str(victim))[1:-1]
                                                   .encode()))
    import warnings

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        recover(folder)
        with output_set():
            write_text(folder / "a.txt", "a")
            write_text(folder / "b.txt", "b")
    assert victim.read_text() == "precious"
    assert (folder / "theirs.txt").read_text() == "someone else's"
    assert (folder / "a.txt").read_text() == "a" and (folder / "b.txt").read_text() == "b"


# ------------------------------------------------------------------ the command line
def _fastpriv(args, *, env=None, stdin=None, module="fastpriv"):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, stdin=stdin,
                          env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_cli_write_into_a_folder_with_a_planted_journal(shared):
    folder, victim = shared
    journal = _planted("absolute path outside", folder, victim)
    run = _fastpriv(["audit", "adult", "--sensitive", "occupation", "--qi", "age", "sex",
                     "--json", str(folder / "out.json")])
    assert run.returncode == 1, run.stderr                   # the audit's own verdict
    assert victim.read_text() == "precious" and journal.exists()
    assert json.loads((folder / "out.json").read_text())["verdict"]
    warned = [ln for ln in run.stderr.splitlines() if JOURNAL in ln]
    assert len(warned) == 1 and warned[0].startswith("fastpriv audit: warning: left ")
    assert "Traceback" not in run.stderr


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "people.csv"
    pacsv.write_csv(fp.datasets.load_adult().select(["age", "sex", "race", "occupation"])
                    .slice(0, 400), path)
    return path


ANATOMY = ["anonymize", "--method", "anatomy", "--qi", "age", "sex", "--sensitive",
           "occupation", "--l", "2", "--overwrite"]


@pytest.mark.parametrize("spec", ["garbage", "commit-placed:1", "stage:1:SIGTERM"])
def test_the_fault_variable_does_nothing_in_an_ordinary_process(small_csv, tmp_path, spec):
    out = tmp_path / "r.parquet"
    run = _fastpriv([ANATOMY[0], str(small_csv), *ANATOMY[1:], "-o", str(out)],
                    env={"FASTPRIV_IO_FAULT": spec})
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert pq.read_table(tmp_path / "r.qi.parquet").num_rows == 400
    assert pq.read_table(tmp_path / "r.sensitive.parquet").num_rows > 0


def test_the_test_launcher_does_inject_the_fault(small_csv, tmp_path):
    run = _fastpriv([ANATOMY[0], str(small_csv), *ANATOMY[1:], "-o", str(tmp_path / "r.pq")],
                    env={"FASTPRIV_IO_FAULT": "commit-placed:1"}, module="tests.fault_launcher")
    assert run.returncode == -signal.SIGKILL, run.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.startswith(".fastpriv-commit-") for n in names), names   # killed mid-set
    assert recover(tmp_path) == 1                                      # the genuine journal
    assert sorted(p.name for p in tmp_path.iterdir()) == []            # the old set: none


def _stdin_cases(small_csv: Path, out: Path):
    return {
        "anonymize": [ANATOMY[0], "-", "--method", "mondrian", "--qi", "age", "sex",
                      "--sensitive", "occupation", "--min-size", "5", "--format", "csv",
                      "-o", str(out)],
        "hierarchy": ["hierarchy", "intervals", "-", "--column", "age", "--widths", "5,10,*",
                      "-o", str(out)],
        "hierarchy /dev/stdin": ["hierarchy", "masking", "/dev/stdin", "--column", "sex",
                                 "-o", str(out)],
    }


@pytest.mark.parametrize("case", ["anonymize", "hierarchy", "hierarchy /dev/stdin"])
@pytest.mark.parametrize("overwrite", [True, False])
def test_an_output_over_the_file_read_from_stdin_is_refused(small_csv, tmp_path, case,
                                                            overwrite):
    data = tmp_path / "data.csv"
    data.write_bytes(small_csv.read_bytes())
    before = data.read_bytes()
    args = _stdin_cases(small_csv, data)[case] + (["--overwrite"] if overwrite else [])
    with open(data, "rb") as fh:
        run = _fastpriv(args, stdin=fh)
    assert run.returncode == 2, run.stderr
    assert data.read_bytes() == before                     # byte for byte
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "standard input" in lines[0] and str(data) in lines[0], lines
    assert lines[0].startswith(f"fastpriv {args[0]}: error: refusing to write output")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_an_output_that_links_to_the_stdin_file_is_refused(small_csv, tmp_path):
    data = tmp_path / "data.csv"
    data.write_bytes(small_csv.read_bytes())
    os.link(data, tmp_path / "alias.csv")                 # the same inode, another name
    args = _stdin_cases(small_csv, tmp_path / "alias.csv")["hierarchy"] + ["--overwrite"]
    with open(data, "rb") as fh:
        run = _fastpriv(args, stdin=fh)
    assert run.returncode == 2 and "standard input" in run.stderr, run.stderr
    assert data.read_bytes() == small_csv.read_bytes()


def test_stdin_from_a_file_still_writes_other_outputs(small_csv, tmp_path):
    out = tmp_path / "age.csv"
    with open(small_csv, "rb") as fh:
        run = _fastpriv(_stdin_cases(small_csv, out)["hierarchy"], stdin=fh)
    assert run.returncode == 0, run.stderr
    assert out.read_text().strip()


# ------------------------------------------------------------------ a closed stdout
def _closed_stdout(args):
    """Run ``fastpriv ARGS`` with a standard output whose reader is gone from the start."""
    proc = subprocess.Popen([sys.executable, "-m", "fastpriv", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                     # nobody reads: the first write finds EPIPE
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), err


def test_a_closed_stdout_does_not_cost_the_release(small_csv, tmp_path):
    rc, err = _closed_stdout([ANATOMY[0], str(small_csv), *ANATOMY[1:],
                              "-o", str(tmp_path / "r.parquet")])
    assert rc == 141, err
    written = [str(tmp_path / "r.qi.parquet"), str(tmp_path / "r.sensitive.parquet")]
    assert pq.read_table(written[0]).num_rows == 400
    assert pq.read_table(written[1]).num_rows > 0
    closed = [ln for ln in err.splitlines() if "standard output was closed" in ln]
    assert len(closed) == 1, err
    assert "summary was not shown" in closed[0]
    assert all(w in closed[0] for w in written), closed
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_a_closed_stdout_keeps_the_audit_json_and_its_verdict(tmp_path):
    out = tmp_path / "a.json"
    rc, err = _closed_stdout(["audit", "adult", "--sensitive", "occupation", "--qi", "age",
                              "sex", "--json", str(out)])
    assert rc == 1, err                       # the audit fails: its verdict, not 141
    assert json.loads(out.read_text())["verdict"]
    closed = [ln for ln in err.splitlines() if "standard output was closed" in ln]
    assert len(closed) == 1 and str(out) in closed[0], err
    assert "Traceback" not in err


def test_undelivered_machine_output_is_an_error_but_files_are_kept(tmp_path):
    out = tmp_path / "r.parquet"
    rc, err = _closed_stdout(["anonymize", "adult", "--method", "mondrian", "--qi", "age",
                              "sex", "--sensitive", "occupation", "--min-size", "5",
                              "-o", str(out), "--json", "-"])
    assert rc == 141, err
    assert pq.read_table(out).num_rows > 0
    closed = [ln for ln in err.splitlines() if "standard output was closed" in ln]
    assert len(closed) == 1 and "JSON" in closed[0] and str(out) in closed[0], err
    assert "Traceback" not in err


def test_undelivered_json_with_no_file_is_still_said(tmp_path):
    rc, err = _closed_stdout(["audit", "adult", "--sensitive", "occupation", "--qi", "age",
                              "sex", "--json", "-"])
    assert rc == 1, err
    closed = [ln for ln in err.splitlines() if "standard output was closed" in ln]
    assert len(closed) == 1 and "JSON" in closed[0] and "no file was written" in closed[0]
