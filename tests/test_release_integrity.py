"""A file fastpriv calls a release stays safe after it leaves.

* its row order carries nothing (joining it by position with the input learns nothing
  beyond the model's bound; a permuted input gives the same file);
* its columns carry nothing the model hides (``keep`` refusals, output names never clash);
* all its files are one unit (fault injection: a kill, Ctrl-C or a full disk at each step
  leaves the whole old set or the whole new set), never over an input, never replacing a
  file without ``overwrite`` even against a concurrent run;
* an anonymizer never publishes, by default, a release that fails its own criterion.
"""

import errno
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastpriv as fp
from fastpriv._io import OutputSet, output_set, recover, write_json, write_text
from fastpriv.anonymize import anatomy, lattice_search, mondrian
from fastpriv.cli import main
from fastpriv.errors import InputError, OutputError
from fastpriv.predicates import criteria_from

QI = ["age", "sex", "race"]
#: the repository root: where ``python -m tests.fault_launcher`` runs
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def people():
    """Adult's QIs and occupation with a hidden identifier correlated with occupation."""
    adult = fp.datasets.load_adult().select([*QI, "occupation"]).slice(0, 6000)
    rng = np.random.default_rng(5)
    occ = np.array(adult.column("occupation").to_pylist())
    # a record number assigned ward by ward: sorting by it sorts by occupation
    hidden = np.argsort(np.argsort(occ, kind="stable") + rng.random(occ.size) * 0.5)
    return adult.append_column("record", pa.array(hidden))


def _orders(t):
    """The input orders a publisher might hand over: by value, by hidden id, shuffled."""
    perm = np.random.default_rng(11).permutation(t.num_rows)
    return {"sorted by the sensitive value": t.sort_by("occupation"),
            "sorted by a hidden identifier": t.sort_by("record"),
            "shuffled": t.take(pa.array(perm))}


def _position_attack(qi_rows, inp, sensitive_counts):
    """Guess each person's value from their position: the input's i-th row is release row i.

    The attacker knows the input order is by the sensitive value (or by an identifier
    that follows it) and the value counts (the sensitive table publishes them), so person i
    holds the value at position i of the sorted counts; a release in input order also puts
    their exact QI values at row i. Returns the share of people whose QI row at position i
    is theirs (the link the release must not give).
    """
    same = np.ones(inp.num_rows, dtype=bool)
    for c in QI:
        same &= np.array(qi_rows.column(c).to_pylist(), dtype=object) == \
            np.array(inp.column(c).to_pylist(), dtype=object)
    return float(same.mean())


@pytest.mark.parametrize("order", ["sorted by the sensitive value",
                                   "sorted by a hidden identifier", "shuffled"])
def test_anatomy_row_order_re_links_nobody(people, order):
    inp = _orders(people)[order].select([*QI, "occupation"])
    ell = 4
    res = anatomy(inp, sensitive="occupation", l=ell, qi=QI, seed=0)
    tabs = res.release_tables(inp)
    qi_rows, sens = tabs["qi"], tabs["sensitive"]
    # exact-match rate of a positional join: what chance gives for the QI multiset
    linked = _position_attack(qi_rows, inp, None)
    counts = Counter(zip(*(inp.column(c).to_pylist() for c in QI), strict=True))
    chance = sum(v * v for v in counts.values()) / inp.num_rows ** 2
    assert linked < max(5 * chance, 0.05), (order, linked, chance)
    # the disclosure an attacker reaches through the position join stays within 1/ell:
    # guess for release row i the most frequent value of its group
    best = {}
    for g, v, c in zip(*(sens.column(i).to_pylist() for i in range(3)), strict=True):
        best[g] = max(best.get(g, (0, None)), (c, v))
    guess = [best[g][1] for g in qi_rows.column("group_id").to_pylist()]
    truth = inp.column("occupation").to_pylist()
    hit = np.mean([a == b for a, b in zip(guess, truth, strict=True)])
    assert hit <= 1 / ell + 0.05, (order, hit)


@pytest.mark.parametrize("method", ["mondrian", "lattice"])
def test_generalization_release_does_not_depend_on_input_order(people, method):
    releases = []
    for inp in _orders(people).values():
        inp = inp.select([*QI, "occupation"])
        if method == "mondrian":
            res = mondrian(inp, qi=QI, sensitive="occupation",
                           predicate=criteria_from(min_size=5))
        else:
            res = lattice_search(inp, qi=QI, sensitive="occupation", min_size=5).anonymized
        releases.append(res.table(inp))
    assert releases[0].equals(releases[1]) and releases[0].equals(releases[2])
    rel = releases[0]
    key = list(zip(*(rel.column(c).to_pylist() for c in ["group_id", *QI, "occupation"]),
                   strict=True))
    assert key == sorted(key, key=lambda r: (r[0],) + tuple(map(str, r[1:]))) or \
        rel.column("group_id").to_pylist() == sorted(rel.column("group_id").to_pylist())


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(20, 30), st.sampled_from("FM"), st.sampled_from("abc")),
                min_size=6, max_size=40), st.randoms(use_true_random=False))
def test_mondrian_file_is_a_function_of_the_row_multiset(rows, rnd):
    t = pa.table({"age": [r[0] for r in rows], "sex": [r[1] for r in rows],
                  "d": [r[2] for r in rows]})
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    u = t.take(pa.array(perm))
    crit = criteria_from(min_size=2)
    a = mondrian(t, qi=["age", "sex"], sensitive="d", predicate=crit).table(t)
    b = mondrian(u, qi=["age", "sex"], sensitive="d", predicate=crit).table(u)
    assert a.equals(b)


def test_anatomy_groups_numbered_from_published_content():
    # the same grouping of the same rows, handed over in two orders, gives one file
    t = pa.table({"age": [30, 41, 52, 23, 35, 60, 30, 44], "d": list("abababcd")})
    res = anatomy(t, sensitive="d", l=2, qi=["age"], seed=1)
    perm = np.random.default_rng(0).permutation(t.num_rows)
    from fastpriv.anonymize._publish import canonical_order

    g = res.group_ids
    o1, n1 = canonical_order(t.select(["age"]), g)
    o2, n2 = canonical_order(t.select(["age"]).take(pa.array(perm)), g[perm])
    rows1 = [(int(n1[g[i]]), t.column("age")[int(i)].as_py()) for i in o1]
    rows2 = [(int(n2[g[perm][i]]), t.column("age")[int(perm[i])].as_py()) for i in o2]
    assert rows1 == rows2


# ------------------------------------------------------------------ columns
def test_keep_refusals_are_the_cli_messages(people, tmp_path, capsys):
    inp = people.select([*QI, "occupation", "record"])
    an = anatomy(inp, sensitive="occupation", l=3, qi=QI)
    mo = mondrian(inp, qi=QI, sensitive="occupation", predicate=criteria_from(min_size=5))
    with pytest.raises(InputError, match="keep: occupation is a QI or the sensitive column"):
        an.write(tmp_path / "a.parquet", inp, keep=["occupation"])
    with pytest.raises(InputError, match="keep: age is a QI or the sensitive column"):
        mo.write(tmp_path / "m.parquet", inp, keep=["age"])
    with pytest.raises(InputError, match="name of a column the release adds"):
        mo.table(inp.append_column("group_id", pa.array(np.zeros(inp.num_rows, np.int64))),
                 keep=["group_id"])
    # a column that determines the sensitive value re-links the two tables
    code = pa.array([hash(v) % 10_000 for v in inp.column("occupation").to_pylist()])
    with pytest.raises(InputError, match="code determines the sensitive value"):
        an.release_tables(inp.append_column("code", code), keep=["code"])
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "in.parquet"
    pq.write_table(inp, path)
    rc = main(["anonymize", str(path), "--method", "mondrian", "--qi", *QI, "--sensitive",
               "occupation", "--min-size", "5", "--keep", "age", "-o", str(tmp_path / "o")])
    assert rc == 2
    assert "--keep: age is a QI or the sensitive column" in capsys.readouterr().err


def test_sensitive_column_named_count(tmp_path, capsys):
    t = pa.table({"age": [30, 41, 52, 23, 35, 60], "count": list("aabbcc")})
    res = anatomy(t, sensitive="count", l=2, qi=["age"])
    with pytest.raises(InputError, match="count_column"):
        res.release_tables(t)
    s = res.release_tables(t, count_column="n")["sensitive"]
    assert s.column_names == ["group_id", "count", "n"]
    assert sorted(s.column("count").to_pylist()) == list("aabbcc")
    path = tmp_path / "t.parquet"
    pq.write_table(t, path)
    args = ["anonymize", str(path), "--method", "anatomy", "--qi", "age", "--sensitive",
            "count", "--l", "2", "-o", str(tmp_path / "r.parquet")]
    assert main(args) == 2
    assert "--count-column" in capsys.readouterr().err
    assert main([*args, "--count-column", "n"]) == 0
    assert pq.read_table(tmp_path / "r.sensitive.parquet").column_names == \
        ["group_id", "count", "n"]


# ------------------------------------------------------------------ failing releases
def test_a_failing_art_release_is_never_written(tmp_path, capsys):
    from fastpriv.knowledge import Knowledge

    t = pa.table({"a": [0, 1, 1], "s": ["x", "n", "n"]})
    K_ = Knowledge.from_dict({("a",): {(0,): {"x": 0.5}, (1,): {"x": 0.0}}}, fallback=0.5)
    res = fp.anonymize.art(t, qi=["a"], sensitive="s", r=2, sensitive_values=["x"],
                           knowledge=K_, on_unsatisfied="report")
    assert res.failure
    with pytest.raises(InputError, match="fails its own criterion"):
        res.write(tmp_path / "x.parquet", t)
    assert list(tmp_path.iterdir()) == []
    written = res.write(tmp_path / "x.parquet", t, allow_failing=True)
    assert len(written) == 2


# ------------------------------------------------------------------ one unit
def _anatomy_cli(tmp_path, extra=(), env=None):
    src = tmp_path / "in.parquet"
    if not src.exists():
        pq.write_table(fp.datasets.load_adult().select([*QI, "occupation"]).slice(0, 3000),
                       src)
    # the test suite's launcher: only it turns FASTPRIV_IO_FAULT into a fault
    cmd = [sys.executable, "-m", "tests.fault_launcher", "anonymize", str(src), "--method",
           "anatomy", "--qi", *QI, "--sensitive", "occupation", "--l", "3",
           "-o", str(tmp_path / "out" / "r.parquet"),
           "--json", str(tmp_path / "out" / "r.json"), "--overwrite", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, **(env or {})}, preexec_fn=_default_signals)


def _default_signals():
    """Give the writer the default signal actions (under ``nohup`` SIGHUP is ignored, and an
    ignored signal rightly stays ignored through a commit: the test is of a killed writer)."""
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


FAULTS = ["stage:1", "stage:2", "stage:3", "commit-start:1", "commit-placed:1",
          "commit-placed:2", "commit-placed:3", "stage:2:SIGINT", "commit-start:1:SIGINT",
          "commit-placed:1:SIGINT", "commit-placed:2:SIGTERM", "commit-placed:1:SIGHUP"]


@pytest.mark.slow
def test_fault_injection_each_step_leaves_old_or_new_set(tmp_path):
    """Kill or interrupt the writer at every step: the old set or the new set, whole."""
    ref = tmp_path / "ref"
    ref.mkdir()
    assert _anatomy_cli(ref, ["--anatomy-seed", "2"]).returncode == 0
    new_tables = {n: b for n, b in _snapshot(ref / "out").items() if n != "r.json"}
    work = tmp_path / "work"
    work.mkdir()
    outcomes = {}
    for fault in FAULTS:
        assert _anatomy_cli(work, ["--anatomy-seed", "1"]).returncode == 0
        old = _snapshot(work / "out")
        run = _anatomy_cli(work, ["--anatomy-seed", "2"], {"FASTPRIV_IO_FAULT": fault})
        assert run.returncode != 0, fault
        recover(work / "out")               # what the next write into the folder does first
        now = _snapshot(work / "out")
        assert sorted(now) == sorted(old), (fault, sorted(now))
        if now == old:
            outcomes[fault] = "old"
        else:
            assert now["r.json"] != old["r.json"], fault
            assert {n: b for n, b in now.items() if n != "r.json"} == new_tables, fault
            outcomes[fault] = "new"
    # a kill before the commit point keeps the old set; Ctrl-C, SIGTERM and SIGHUP during
    # the renames are held back until the new set is complete
    assert outcomes["stage:2"] == outcomes["commit-placed:1"] == "old"
    assert outcomes["commit-placed:1:SIGINT"] == outcomes["commit-placed:2:SIGTERM"] == "new"
    assert outcomes["commit-placed:1:SIGHUP"] == "new"


def _kill_mid_commit(tmp_path, fault):
    """Run the CLI once cleanly, then again killed by ``fault``: return both snapshots."""
    out = tmp_path / "out"
    assert _anatomy_cli(tmp_path, ["--anatomy-seed", "1"]).returncode == 0
    old = _snapshot(out)
    run = _anatomy_cli(tmp_path, ["--anatomy-seed", "2"], {"FASTPRIV_IO_FAULT": fault})
    return old, run, out


def test_sigkill_between_two_renames_is_rolled_back(tmp_path):
    old, run, out = _kill_mid_commit(tmp_path, "commit-placed:1")
    assert run.returncode == -signal.SIGKILL
    assert any(n.startswith(".fastpriv-commit-") for n in os.listdir(out))   # the journal
    assert recover(out) == 1
    assert _snapshot(out) == old                  # the whole old set, nothing else


def test_ctrl_c_during_the_renames_completes_the_new_set(tmp_path):
    old, run, out = _kill_mid_commit(tmp_path, "commit-placed:1:SIGINT")
    assert run.returncode == 130, run.stderr
    now = _snapshot(out)
    assert sorted(now) == sorted(old)
    assert now["r.qi.parquet"] != old["r.qi.parquet"]
    assert now["r.sensitive.parquet"] != old["r.sensitive.parquet"]
    assert recover(out) == 0 and _snapshot(out) == now


def test_kill_while_staging_changes_nothing(tmp_path):
    old, run, out = _kill_mid_commit(tmp_path, "stage:2")
    assert run.returncode == -signal.SIGKILL
    recover(out)
    assert _snapshot(out) == old


def test_disk_full_on_the_last_file_replaces_nothing(tmp_path, monkeypatch):
    a, b = tmp_path / "a.txt", tmp_path / "b.json"
    write_text(a, "old a")
    write_json(b, {"old": 1})
    real_fsync = os.fsync
    calls = {"n": 0}

    def full(fd):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError, match="No space left"):
        with output_set():
            write_text(a, "new a", overwrite=True)
            write_json(b, {"new": 1}, overwrite=True)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert a.read_text() == "old a" and '"old"' in b.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.json"]


def test_no_overwrite_is_exclusive_even_against_a_concurrent_run(tmp_path):
    dest = tmp_path / "same.txt"
    sets = [OutputSet(), OutputSet()]
    for i, s in enumerate(sets):
        s.stage(dest, lambda tmp, i=i: open(tmp, "w").write(f"run {i}"))
    results = []

    def commit(s):
        try:
            s.commit()
            results.append("ok")
        except FileExistsError:
            results.append("exists")

    threads = [threading.Thread(target=commit, args=(s,)) for s in sets]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(results) == ["exists", "ok"]
    assert dest.read_text() in ("run 0", "run 1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.txt"]


def test_two_file_set_without_overwrite_is_all_or_nothing(tmp_path):
    (tmp_path / "b.txt").write_text("someone else's")
    with pytest.raises(FileExistsError):
        with output_set():
            write_text(tmp_path / "a.txt", "a")
            s = OutputSet()      # a concurrent run creates b between our check and commit
            s.stage(tmp_path / "c.txt", lambda tmp: open(tmp, "w").write("c"))
            s.commit()
            write_text(tmp_path / "b.txt", "b")
    assert not (tmp_path / "a.txt").exists()
    assert (tmp_path / "b.txt").read_text() == "someone else's"


# ------------------------------------------------------------------ inputs protected
def test_inputs_protected_by_real_path(tmp_path, capsys):
    ds_dir = tmp_path / "dataset"
    ds_dir.mkdir()
    pq.write_table(pa.table({"g": [1, 1, 2, 2], "d": list("abab")}), ds_dir / "part.parquet")
    link = tmp_path / "link"
    link.symlink_to(ds_dir)
    rc = main(["audit", str(ds_dir), "--sensitive", "d", "--group", "g",
               "--json", str(link / "x.json")])
    assert rc == 2
    assert "over (or inside) the input" in capsys.readouterr().err
    assert sorted(os.listdir(ds_dir)) == ["part.parquet"]


def test_hierarchy_files_are_inputs(tmp_path, capsys):
    from fastpriv.datasets import hierarchy_path

    hdir = tmp_path / "h"
    hdir.mkdir()
    for a in ("age", "sex"):
        (hdir / f"{a}.csv").write_bytes(open(hierarchy_path(a), "rb").read())
    before = (hdir / "sex.csv").read_bytes()
    rc = main(["anonymize", "adult", "--method", "lattice", "--qi", "age", "sex",
               "--sensitive", "occupation", "--min-size", "5", "--hierarchies", str(hdir),
               "--format", "csv", "-o", str(hdir / "sex.csv"), "--overwrite"])
    assert rc == 2
    assert "input" in capsys.readouterr().err
    assert (hdir / "sex.csv").read_bytes() == before


def test_an_ignored_signal_stays_ignored_through_a_commit(tmp_path):
    """A writer started under nohup (SIGHUP ignored) finishes its commit and succeeds."""
    assert _anatomy_cli(tmp_path).returncode == 0
    cmd = [sys.executable, "-c",
           "import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
           "from tests.fault_launcher import main; main()",
           "anonymize", str(tmp_path / "in.parquet"), "--method", "anatomy", "--qi", *QI,
           "--sensitive", "occupation", "--l", "3", "-o", str(tmp_path / "out" / "r.parquet"),
           "--overwrite"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**os.environ, "FASTPRIV_IO_FAULT": "commit-placed:1:SIGHUP"})
    assert run.returncode == 0, run.stderr
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".fastpriv")]
