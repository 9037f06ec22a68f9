"""Memory and time before they run out (issue 47, items 1-3).

Each long step estimates its need from the sizes before it starts and refuses, with the
figure and the way out, what would not finish — never a MemoryError, never an internal
error, never a silent hour. The limits are lowered here (a monkeypatched free memory, a
small ``max_seconds``): nothing is exhausted for real.
"""

import io
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastpriv as fp
from fastpriv import _budget, foreground, robustness, skyline
from fastpriv._arrow import expand_weights
from fastpriv._progress import ANNOUNCE_SECONDS, Estimate, fmt_bytes, fmt_seconds
from fastpriv.cli import main
from fastpriv.report import build_report

MIB = 1 << 20


@pytest.fixture
def little_memory(monkeypatch):
    """The machine has 1 MiB free (MemAvailable), as far as fastpriv can tell."""
    monkeypatch.setattr(_budget, "available_memory", lambda: MIB)


def _distinct(n_values: int = 5000, n_groups: int = 10) -> pa.Table:
    """Every row its own sensitive value (the 10M-distinct-values audit, scaled down)."""
    rng = np.random.default_rng(0)
    return pa.table({"g": rng.integers(0, n_groups, n_values), "s": np.arange(n_values)})


def _one_group(n: int, seed: int = 0) -> pa.Table:
    """One group of n people with two QI columns and four sensitive values."""
    rng = np.random.default_rng(seed)
    return pa.table({"g": np.zeros(n, dtype=np.int64), "age": rng.integers(20, 30, n),
                     "sex": rng.choice(["M", "F"], n), "d": rng.choice(["a", "b", "c", "d"], n)})


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0] and "internal error" not in err[0]
    return err[0]


# ------------------------------------------------------------------ helpers of the budget
def test_figures_read_as_people_write_them():
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(7.28 * 2**40) == "7.28 TiB"
    assert fmt_seconds(40) == "40 s"
    assert fmt_seconds(720) == "12 min"
    assert fmt_seconds(3 * 3600) == "3.0 h"
    assert fmt_seconds(41 * 86400) == "41 days"
    assert fmt_seconds(float("inf")) == "more than a century"


def test_free_memory_is_read_from_meminfo():
    free = _budget.available_memory()
    assert free is None or free > 0


def test_check_memory_states_need_and_free(little_memory):
    _budget.check_memory(0.5 * MIB, "a small step", "nothing to do")      # fits
    with pytest.raises(fp.InputError) as exc:
        _budget.check_memory(3 * 2**30, "a big step", "do less")
    msg = str(exc.value)
    assert "a big step needs about 3 GiB" in msg and "1 MiB is free (MemAvailable)" in msg
    assert msg.endswith("do less")


def test_check_seconds_and_its_argument():
    _budget.check_seconds(10.0, "x", "y", None)          # no bound
    _budget.check_seconds(10.0, "x", "y", 20.0)
    with pytest.raises(fp.InputError, match=r"x would take about 3\.0 h \(estimate\), more "
                                            r"than max_seconds = 20 s: y"):
        _budget.check_seconds(3 * 3600, "x", "y", 20.0)
    assert _budget.check_max_seconds(None) is None
    for bad in (0, -1, float("nan")):
        with pytest.raises(fp.InputError):
            _budget.check_max_seconds(bad)
    with pytest.raises(fp.InputTypeError):
        _budget.check_max_seconds("60")
    assert _budget.max_seconds_arg("none") is None
    assert _budget.max_seconds_arg("90") == 90.0


def test_esp_work_is_quadratic_in_the_group():
    assert float(_budget.esp_work(10, 3)) == 10 * 4
    assert float(_budget.esp_work(10, 8)) == 10 * 3     # the complement is computed
    w = _budget.esp_work(np.array([1000, 2000]), np.array([500, 1000]))
    assert w[1] / w[0] == pytest.approx(4, rel=0.01)


# ------------------------------------------------------------------ progress with an estimate
def test_a_short_step_says_nothing():
    out = io.StringIO()
    with Estimate("short", ANNOUNCE_SECONDS / 2, stream=out) as est:
        est(1, 1)
    assert out.getvalue() == ""


def test_a_long_step_says_its_estimate_before_and_its_time_after(monkeypatch):
    monkeypatch.delenv("FASTPRIV_PROGRESS", raising=False)
    out = io.StringIO()
    with Estimate("solving 3 systems", 600.0, 3, stream=out) as est:
        est(3)
    lines = out.getvalue().splitlines()
    assert lines[0] == "fastpriv: solving 3 systems: about 10 min (estimate)…"
    assert lines[1].startswith("fastpriv: solving 3 systems: done in ")
    assert len(lines) == 2


def test_a_live_bar_keeps_ticking_and_stops(monkeypatch):
    monkeypatch.delenv("FASTPRIV_PROGRESS", raising=False)
    out = io.StringIO()
    est = Estimate("a kernel", 60.0, stream=out, enabled=True)
    assert est.live and est._ticking
    time.sleep(0.6)
    est.done()
    assert not est._ticking
    assert "a kernel (about 60 s)" in out.getvalue()


def test_progress_off_silences_the_estimate(monkeypatch):
    monkeypatch.setenv("FASTPRIV_PROGRESS", "0")
    out = io.StringIO()
    with Estimate("long", 3600.0, stream=out):
        pass
    assert out.getvalue() == ""


# ------------------------------------------------------------------ item 1: distinct values
def test_a_skyline_check_of_millions_of_values_is_refused_before_it_runs(little_memory):
    rel = fp.Release.from_table(_distinct(), group="g", sensitive="s")
    with pytest.raises(fp.InputError) as exc:
        skyline.check(rel, skylines={"*": [(1, 1, 1, 0.8)]})
    msg = str(exc.value)
    assert "5,000 (sensitive value, skyline point) pairs" in msg
    assert "5,000 distinct sensitive values" in msg
    assert "needs about 8.58 MiB" in msg and "MemAvailable" in msg
    assert "--sigma" in msg and "coarser sensitive column" in msg
    # named values are cheap: they still run
    assert skyline.check(rel, skylines={7: [(1, 1, 1, 0.8)]}).safe in (True, False)


def test_the_skyline_check_still_runs_when_memory_allows():
    rel = fp.Release.from_table(_distinct(2000), group="g", sensitive="s")
    res = skyline.check(rel, skylines={"*": [(1, 1, 1, 0.8)]})
    assert len(res.points) == 2000


def test_audit_of_many_distinct_values_exits_2_with_the_figure(little_memory, tmp_path,
                                                                 capsys):
    path = tmp_path / "distinct.parquet"
    pq.write_table(_distinct(), path)
    assert main(["audit", str(path), "--group", "g", "--sensitive", "s"]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "privacy skyline" in text and "needs about 8.58 MiB" in text
    assert "Traceback" not in text and "MemoryError" not in text


def test_record_lists_kept_count_their_own_size(monkeypatch):
    """Millions of values with one record each do not fill memory with the cache."""
    monkeypatch.setattr(skyline, "_RECORDS_KEPT", 100)
    rel = fp.Release.from_table(_distinct(3000), group="g", sensitive="s")
    skyline._scan_points(rel, list(range(3000)), [1] * 3000, [1] * 3000, [1] * 3000)
    kept = [k for k in skyline._index_cache(rel) if k[0] == "skyline.records"]
    assert 0 < len(kept) <= rel.codes.size // skyline._RECORD_ENTRY + 1


def test_the_scan_reports_its_progress():
    rel = fp.Release.from_table(_distinct(5000), group="g", sensitive="s")
    seen = []
    skyline._scan_points(rel, list(range(5000)), [1] * 5000, [1] * 5000, [1] * 5000,
                         progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 5000) and seen[1] == (4096, 5000)


# ------------------------------------------------------------------ item 2: long steps
def test_robustness_of_a_huge_group_is_refused_with_its_estimate(monkeypatch):
    t = _one_group(3000)
    called = []
    monkeypatch.setattr(robustness._Posteriors, "run", lambda *a, **k: called.append(1))
    with pytest.raises(fp.InputError) as exc:
        robustness.audit(t, qi=["age", "sex"], sensitive="d", group="g", r=2,
                         max_seconds=1e-4)
    msg = str(exc.value)
    assert "(estimate), more than max_seconds = 0.0001 s" in msg
    assert "the largest group holds 3,000 people" in msg
    assert "--sensitive-values" in msg and "smaller groups" in msg
    assert not called                                   # refused before any posterior


def test_robustness_work_grows_with_the_square_of_the_group():
    def work(n):
        st = robustness._prepare(_one_group(n), qi=["sex"], sensitive="d", group="g",
                                 knowledge=None, weight=None, nulls="error")
        kn, sets = robustness._audit_knowledge(st, None, qi=["sex"], model="binary",
                                               max_set_size=None, epsilon=0.01,
                                               confidence=0.9, min_support=1)
        post = robustness._Posteriors(st, sets, np.arange(st.V))
        post.plan(model="binary", max_states=1 << 22, on_large="error", chunk_entries=1 << 22)
        return post.seconds("binary")

    assert work(4000) / work(1000) == pytest.approx(16, rel=0.1)


def test_robustness_within_its_budget_runs():
    res = robustness.audit(_one_group(400), qi=["age", "sex"], sensitive="d", group="g", r=2,
                           max_seconds=60)
    assert res.n_rows == 400


def test_the_attack_on_a_huge_group_is_refused_before_solving(monkeypatch):
    def never(*a, **k):
        raise AssertionError("the solver ran")

    monkeypatch.setattr(foreground, "_solve", never)
    with pytest.raises(fp.InputError) as exc:
        foreground.attack(_one_group(2000), qi=["sex"], sensitive="d", group="g", r=2,
                          min_support=1, max_seconds=1e-3)
    msg = str(exc.value)
    assert "foreground systems (groups of up to 2,000 tuples)" in msg
    assert "(estimate), more than max_seconds = 0.001 s" in msg
    assert "--max-set-size" in msg


def test_the_solve_estimate_follows_the_group_sizes():
    md = foreground.mine(_one_group(300), qi=["sex"], sensitive="d", group="g", min_support=1)
    small = foreground.solve_work(md._packed, 2)
    md2 = foreground.mine(_one_group(1200), qi=["sex"], sensitive="d", group="g",
                          min_support=1, max_seconds=None)
    assert foreground.solve_work(md2._packed, 2) / small == pytest.approx(16, rel=0.2)
    assert foreground.solve_work(md._packed, 6) / small == pytest.approx(2)


@pytest.mark.parametrize("command", ["robustness", "attack"])
def test_the_commands_refuse_with_max_seconds(command, tmp_path, capsys):
    path = tmp_path / "one.parquet"
    pq.write_table(_one_group(2000), path)
    argv = [command, str(path), "--qi", "age", "sex", "--sensitive", "d", "--group", "g",
            "--r", "2", "--max-seconds", "0.0001"]
    if command == "attack":
        argv += ["--min-support", "1"]
    assert main(argv) == 2
    line = _one_line(capsys)
    assert "(estimate), more than max_seconds = 0.0001 s" in line


def test_a_skyline_search_projects_its_time_and_stops_early():
    pace = skyline._Pace("hiv", 10.0, 999, 10**6, [4096])
    pace.levels = 1000
    pace.level(5)
    pace.t0 -= skyline._PROJECT_AFTER + 1          # 3 s for 5 of 1,000 levels: 10 min
    with pytest.raises(fp.InputError, match=r"of 'hiv' would take about 10 min \(estimate: "
                                            r"3 s for 5 of its 1,000 levels\)"):
        pace.check()
    pace.max_seconds = 1000.0                      # within twice the bound: it goes on
    pace.check()
    pace.max_seconds = None
    pace.t0 -= 10**6
    pace.check()                                   # no bound at all


def test_knowledge_skylines_share_one_budget():
    rel = fp.Release.from_groups([["a", "b", "c", "a"], ["a", "b", "b", "c", "d"]])
    found, done, stopped = skyline.knowledge_skylines_within(rel, sigmas=["a", "b"],
                                                             cs=[0.8, 0.95])
    assert stopped is None and done == ["a", "b"] and len(found) == 4
    found, done, stopped = skyline.knowledge_skylines_within(rel, sigmas=["a", "b"],
                                                             cs=[0.8], max_seconds=1e-9)
    assert found == [] and done == []
    assert "the knowledge skylines of 2 of the 2 values were not computed" in stopped
    with pytest.raises(fp.InputError, match="budget"):
        skyline.knowledge_skylines_within(rel, sigmas=["a"], cs=[0.8], max_seconds=1e-9,
                                          partial=False)
    # every value's skyline: one budget for all of them, refused as a whole
    assert set(skyline.knowledge_skylines(rel, c=0.8)) == {"a", "b", "c", "d"}
    with pytest.raises(fp.InputError, match="budget"):
        skyline.knowledge_skylines(rel, c=0.8, max_seconds=1e-9)
    with pytest.raises(fp.InputError, match="max_seconds must be positive"):
        skyline.knowledge_skylines(rel, c=0.8, max_seconds=0)


def test_a_report_whose_skylines_stop_keeps_its_verdict(monkeypatch):
    """The chosen values' skylines stop at the budget; the skyline check still decides."""
    def slow(*a, **k):
        raise fp.InputError("the knowledge skyline of 'a' would take about 3.0 h")

    # the one-value search the report's skylines run (knowledge_skylines_within)
    monkeypatch.setattr(skyline, "_knowledge_skyline", slow)
    t = pa.table({"g": [1] * 6 + [2] * 6, "d": ["a", "b", "c"] * 4})
    rep = build_report(t, group="g", sensitive="d", c=[1.0], min_l=2, min_size=5, k=1,
                       k_max=2)
    sec = rep.data["skyline"]
    assert sec["status"] == "ok" and sec["skylines"] == [] and sec["sigmas"] == []
    assert "would take about 3.0 h" in sec["sigma_selection"]
    assert sec["check"]["n_values"] == 3
    assert rep.exit_code == 0


# ------------------------------------------------------------------ item 3: weights
def _weighted(total_people: int, n: int = 50) -> pa.Table:
    rng = np.random.default_rng(1)
    return pa.table({"g": np.arange(n) % 5, "age": rng.integers(20, 30, n),
                     "sex": rng.choice(["M", "F"], n), "d": rng.choice(["a", "b", "c"], n),
                     "w": np.full(n, total_people // n)})


def test_expanding_weights_states_the_size_before_allocating(little_memory):
    with pytest.raises(fp.InputError) as exc:
        expand_weights(_weighted(10**6), "w")
    msg = str(exc.value)
    assert "1,000,000 people" in msg and "MiB of memory" in msg
    assert "mondrian, lattice" in msg
    assert expand_weights(_weighted(100), "w").num_rows == 100     # small: expanded


@pytest.mark.parametrize("method", [["--method", "anatomy", "--min-l", "2"],
                                    ["--method", "art", "--r", "2"]])
def test_anatomy_and_art_refuse_astronomical_weights(method, little_memory, tmp_path,
                                                     capsys):
    path = tmp_path / "w.parquet"
    pq.write_table(_weighted(10**6).drop_columns(["g"]), path)
    argv = ["anonymize", str(path), "--qi", "age", "sex", "--sensitive", "d", "--weight", "w",
            "-o", str(tmp_path / "out.parquet"), *method]
    assert main(argv) == 2
    line = _one_line(capsys)
    assert "1,000,000 people" in line and "MemAvailable" in line
    assert not (tmp_path / "out.parquet").exists()


def test_row_level_models_refuse_astronomical_weights(little_memory):
    t = _weighted(10**7)
    for call in (lambda: robustness.audit(t, qi=["age", "sex"], sensitive="d", group="g",
                                          r=2, weight="w"),
                 lambda: foreground.attack(t, qi=["age", "sex"], sensitive="d", group="g",
                                           r=2, weight="w")):
        with pytest.raises(fp.InputError) as exc:
            call()
        msg = str(exc.value)
        assert "stand for 10,000,000 people" in msg and "GiB of memory" in msg
        assert "fastpriv audit / report --weight" in msg


@pytest.mark.parametrize("command", ["robustness", "attack"])
def test_the_commands_refuse_astronomical_weights(command, little_memory, tmp_path, capsys):
    path = tmp_path / "w.parquet"
    pq.write_table(_weighted(10**7), path)
    assert main([command, str(path), "--qi", "age", "sex", "--sensitive", "d", "--group", "g",
                 "--r", "2", "--weight", "w"]) == 2
    assert "10,000,000 people" in _one_line(capsys)
