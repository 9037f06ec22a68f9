"""The reproduction runner: the quick run of every experiment, reporting, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import reproduce as R


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """The whole quick reproduction, once (every experiment at smoke sizes)."""
    out = tmp_path_factory.mktemp("repro") / "out"
    md = out.parent / "REPRODUCTION.md"
    index = R.run(out, quick=True, markdown=md, echo=None)
    return out, md, index


@pytest.mark.slow
def test_quick_reproduction_runs_every_experiment(quick_run):
    out, md, index = quick_run
    statuses = {e["id"]: (e["status"], e["error"]) for e in index["experiments"]}
    assert set(statuses) == {e.id for e in R.EXPERIMENTS}
    # "partial": ran, but part of the published result is not matched (said in the file)
    assert all(s in ("ok", "partial") for s, _ in statuses.values()), statuses
    for e in index["experiments"]:
        assert e["rows"], e["id"]                       # published vs ours, per experiment
        for f in e["files"] + e["plots"] + [e["log"]]:
            assert (out / f).is_file(), (e["id"], f)
    assert json.loads((out / "reproduction.json").read_text())["mode"] == "quick"
    assert index["machine"]["cores"] >= 1


@pytest.mark.slow
def test_reproduction_markdown(quick_run):
    out, md, index = quick_run
    text = (out / "REPRODUCTION.md").read_text()
    for e in R.EXPERIMENTS:
        assert e.title in text and e.paper in text
    assert "| quantity | published | ours |" in text
    assert "**Machine:**" in text
    # the copy beside the folder links into it
    copy = md.read_text()
    assert f"]({out.name}/logs/chen_fig7.log)" in copy
    assert f"]({out.name}/skyline_figure7.png)" in copy
    for line in copy.splitlines():
        if line.startswith("![") or line.startswith("Files: "):
            for target in [p.split(")")[0] for p in line.split("](")[1:]]:
                assert (md.parent / target).is_file(), target


@pytest.mark.slow   # renders every figure of a reproduction run
def test_plots_are_svg_or_png(quick_run):
    out, _, index = quick_run
    for e in index["experiments"]:
        for p in e["plots"]:
            data = (out / p).read_bytes()
            assert data.startswith(b"\x89PNG") or b"<svg" in data[:400], p


def test_bench_results_land_in_the_output_folder(quick_run):
    out, _, _ = quick_run
    d = json.loads((out / "chen_case_study.json").read_text())
    assert d["mode"] == "smoke"                               # the benchmark's own file
    r = d["runs"]["martin"]
    assert r["recursive_c_star_l6"] < 3 and r["breach_probability"] >= 0.95
    assert (out / "chen_case_study_martin.svg").is_file()
    # nothing was written into the repository's own results folder
    assert not (out / "smoke").exists()


def test_not_landed_and_failed_are_reported(tmp_path, monkeypatch):
    def missing(ctx):
        return ctx.bench("bench_does_not_exist", "bench_x", "x")

    def broken(ctx):
        raise RuntimeError("boom")

    def partly(ctx):
        return {"rows": [["x", "1", "2"]], "partial": "x differs"}

    extra = [R.Experiment("missing", "Missing one", "Nobody", "–", missing, "nowhere"),
             R.Experiment("broken", "Broken one", "Nobody", "–", broken, "nowhere"),
             R.Experiment("partly", "Partly one", "Nobody", "–", partly, "nowhere")]
    monkeypatch.setattr(R, "EXPERIMENTS", R.EXPERIMENTS + extra)
    index = R.run(tmp_path, only=["missing", "broken", "partly"], quick=True, echo=None)
    st = {e["id"]: e for e in index["experiments"]}
    assert st["missing"]["status"] == "not landed"
    assert "bench_does_not_exist" in st["missing"]["error"]
    assert st["broken"]["status"] == "failed" and "boom" in st["broken"]["error"]
    assert "boom" in (tmp_path / "logs" / "broken.log").read_text()
    text = (tmp_path / "REPRODUCTION.md").read_text()
    assert "not landed" in text and "failed" in text
    assert st["partly"]["status"] == "partial" and "partly reproduced" in text
    assert "x differs" in text
    assert R.main(["--out", str(tmp_path / "again"), "--only", "broken", "--quick"]) == 1


def test_unknown_experiment_and_list(capsys, tmp_path):
    with pytest.raises(ValueError, match="unknown experiment"):
        R.run(tmp_path, only=["nope"], echo=None)
    assert R.main(["--list"]) == 0
    out = capsys.readouterr().out
    for e in R.EXPERIMENTS:
        assert e.id in out


def test_stub_benchmark():
    b = R.StubBenchmark()
    assert b.pedantic(lambda x, y=1: x + y, args=(2,), kwargs={"y": 3}, rounds=5) == 5
    assert b(lambda: 7) == 7
    assert b.stats.stats.mean >= 0
    b.extra_info["a"] = 1


@pytest.mark.slow
def test_cli_reproduce(tmp_path, capsys):
    from fastpriv.cli import main

    rc = main(["reproduce", "--out", str(tmp_path / "o"), "--quick", "--only", "martin_fig5"])
    assert rc == 0
    assert (tmp_path / "o" / "ck_figure5.json").is_file()
    assert (tmp_path / "o" / "ck_figure5.svg").is_file()
    assert Path(tmp_path / "o" / "REPRODUCTION.md").read_text().count("## ") >= 2
    assert "REPRODUCTION.md" in capsys.readouterr().out


@pytest.mark.slow
def test_partial_rerun_updates_the_index(tmp_path):
    R.run(tmp_path, only=["martin_fig5"], quick=True, echo=None)
    index = R.run(tmp_path, only=["chen_case_study"], quick=True, echo=None)
    ids = [e["id"] for e in index["experiments"]]
    assert ids == ["chen_case_study", "martin_fig5"]            # registry order, both kept
    assert "rerun of chen_case_study" in index["generated"]
    text = (tmp_path / "REPRODUCTION.md").read_text()
    assert "Figure 5" in text and "Section 7.3" in text
