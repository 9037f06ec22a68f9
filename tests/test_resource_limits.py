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
from fastpriv import _budget, foreground, robustness
from fastpriv._arrow import expand_weights
from fastpriv._progress import ANNOUNCE_SECONDS, Estimate
from fastpriv.cli import main

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
    assert _budget.fmt_bytes(512) == "512 B"
    assert _budget.fmt_bytes(7.28 * 2**40) == "7.28 TiB"
    assert _budget.fmt_seconds(40) == "40 s"
    assert _budget.fmt_seconds(720) == "12 min"
    assert _budget.fmt_seconds(3 * 3600) == "3.0 h"
    assert _budget.fmt_seconds(41 * 86400) == "41 days"
    assert _budget.fmt_seconds(float("inf")) == "more than a century"


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
