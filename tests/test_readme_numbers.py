"""The README's performance numbers are generated from benchmarks/results/*.json and agree.

``python -m benchmarks.readme_tables`` writes them; these tests fail when the committed README
and the committed JSON disagree, and prove the check would see a hand edit on either side.
They also keep the benchmark scripts the README names importable.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import readme_tables as rt

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RESULTS = ROOT / "benchmarks" / "results"


def _results_copy(tmp_path: Path) -> Path:
    out = tmp_path / "results"
    shutil.copytree(RESULTS, out, ignore=lambda d, names: [
        n for n in names if not n.endswith(".json") and not (Path(d) / n).is_dir()])
    return out


def _edit_json(folder: Path, name: str, edit) -> None:
    path = folder / name
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks.readme_tables", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_readme_agrees_with_the_results():
    d = rt.diff(README)
    assert d == "", ("README.md and benchmarks/results/*.json disagree; run "
                     "`python -m benchmarks.readme_tables`:\n" + d)


def test_check_command_passes_on_the_committed_readme():
    proc = _cli("--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_hand_edited_number_is_detected(tmp_path):
    m = re.search(r"<!-- perf:table -->\n(.*?)<!-- /perf:table -->", README, flags=re.S)
    assert m, "README.md has no perf:table block"
    body = m.group(1)
    digit = re.search(r"\d", body.split("\n", 2)[2])          # first digit of the first row
    assert digit
    pos = m.start(1) + len("\n".join(body.split("\n", 2)[:2])) + 1 + digit.start()
    altered = README[:pos] + str((int(README[pos]) + 1) % 10) + README[pos + 1:]
    assert altered != README
    assert rt.diff(altered) != ""
    assert rt.render(altered) == README            # regenerating restores the committed text
    copy = tmp_path / "README.md"
    copy.write_text(altered, encoding="utf-8")
    proc = _cli("--check", "--readme", str(copy))
    assert proc.returncode == 1
    assert proc.stdout.startswith("---") and "\n-" in proc.stdout and "\n+" in proc.stdout
    assert copy.read_text(encoding="utf-8") == altered        # --check never writes
    assert _cli("--readme", str(copy)).returncode == 0
    assert copy.read_text(encoding="utf-8") == README


def test_a_changed_result_file_is_detected(tmp_path):
    folder = _results_copy(tmp_path)

    def slower(data):
        for c in data["configs"]:
            c["fast_curve_s"] *= 3

    _edit_json(folder, "ck_synthetic.json", slower)
    d = rt.diff(README, rt.Results(folder))
    assert d != "" and "(c,k)-safety curve" in d


def test_a_missing_key_names_the_file_and_the_key(tmp_path):
    folder = _results_copy(tmp_path)

    def drop(data):
        del data["slowest_config"]["total_s"]

    _edit_json(folder, "foreground_reproduction.json", drop)
    with pytest.raises(rt.ReadmeDataError) as err:
        rt.render(README, rt.Results(folder))
    assert "foreground_reproduction.json" in str(err.value)
    assert "slowest_config.total_s" in str(err.value)
    proc = _cli("--check", "--results", str(folder))
    assert proc.returncode == 2
    assert "foreground_reproduction.json" in proc.stderr and "total_s" in proc.stderr


def test_an_unexpected_value_names_the_file(tmp_path):
    folder = _results_copy(tmp_path)

    def null(data):
        for c in data["cases"]:
            c["loop_over_batched_1thread"] = None

    _edit_json(folder, "foreground_batched.json", null)
    with pytest.raises(rt.ReadmeDataError, match=r"foreground_batched\.json: entry 0 has "
                                                 r"'loop_over_batched_1thread' = null"):
        rt.render(README, rt.Results(folder))

    def text(data):
        data["ratio_dask_to_single_best"] = "fast"

    shutil.copy(RESULTS / "foreground_batched.json", folder / "foreground_batched.json")
    _edit_json(folder, "scale_dask.json", text)
    with pytest.raises(rt.ReadmeDataError, match=r"scale_dask\.json.*cannot be rendered"):
        rt.render(README, rt.Results(folder))


def test_a_missing_file_or_a_smoke_result_is_refused(tmp_path):
    folder = _results_copy(tmp_path)
    (folder / "scale_dask.json").unlink()
    with pytest.raises(rt.ReadmeDataError, match=r"scale_dask\.json: file missing"):
        rt.render(README, rt.Results(folder))
    shutil.copy(RESULTS / "scale_dask.json", folder / "scale_dask.json")
    _edit_json(folder, "peers.json", lambda d: d.update(mode="smoke"))
    with pytest.raises(rt.ReadmeDataError, match=r"peers\.json: mode is 'smoke'"):
        rt.render(README, rt.Results(folder))


def test_markers_and_renderers_match_one_to_one():
    names = re.findall(r"<!-- perf:([\w-]+) -->", README)
    assert len(names) == len(set(names))
    assert set(names) == set(rt.BLOCKS)
    assert all(f"<!-- /perf:{n} -->" in README for n in names)
    with pytest.raises(rt.ReadmeDataError, match="no renderer"):
        rt.render(README + "\n<!-- perf:nonesuch -->x<!-- /perf:nonesuch -->\n")


def test_no_performance_number_outside_the_generated_blocks():
    text = re.sub(r"<!-- perf:([\w-]+) -->.*?<!-- /perf:\1 -->", "", README, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    found = re.findall(r"[^\n]{0,30}\d[\d,.]*\s?(?:×|ms\b|µs\b|s\b|GiB\b|MiB\b|CPU-s\b)", text)
    assert not found, ("timings or ratios typed into README.md by hand; generate them with "
                       f"benchmarks/readme_tables.py: {found}")


def test_number_formats():
    assert rt.span([0.0266, 0.0343]) == "0.027–0.034"
    assert rt.dur([0.0266, 0.0343]) == "27–34 ms"
    assert rt.dur([8.8e-5, 1.27e-4]) == "88–127 µs"
    assert rt.dur([1.77, 3.63]) == "1.8–3.6 s"
    assert rt.times([109.4, 124.3]) == "109–124×"
    assert rt.times([12478.6]) == "12,479×"
    assert rt.times([1.0, 1.04]) == "1.0×"
    assert rt.count(10_000_000) == "10M" and rt.count(1_193_504) == "1.19M"
    assert rt.count(45_222) == "45.2k" and rt.count(999) == "999"
    assert rt.mib([610.0]) == "610 MiB" and rt.mib([1217.0]) == "1.2 GiB"
    assert rt.goal(2.0) == "2×" and rt.goal(10000) == "10,000×"


# ------------------------------------------------------------------ benchmark scripts
def _benchmark_modules_named_in_readme() -> list[str]:
    names = set(re.findall(r"benchmarks\.(\w+)", README))
    names |= set(re.findall(r"benchmarks/(\w+)\.py", README))
    return sorted(n for n in names if (ROOT / "benchmarks" / f"{n}.py").is_file())


@pytest.mark.parametrize("name", _benchmark_modules_named_in_readme())
def test_benchmark_named_in_readme_imports(name):
    importlib.import_module(f"benchmarks.{name}")


def _embedded_imports() -> list[tuple[str, str, list[str]]]:
    """(file, module, names) of every import inside Python code strings of benchmarks/*.py.

    The cold-start benchmarks run such strings in fresh interpreters; an import there that
    no longer resolves only fails in a full run, so it is checked here.
    """
    found = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and "fastpriv" in node.value and "import" in node.value):
                continue
            try:
                code = ast.parse(node.value)
            except SyntaxError:
                continue
            for imp in ast.walk(code):
                if isinstance(imp, ast.ImportFrom) and imp.module:
                    found.append((path.name, imp.module, [a.name for a in imp.names]))
                elif isinstance(imp, ast.Import):
                    found += [(path.name, a.name, []) for a in imp.names]
    return found


def test_code_strings_of_the_benchmarks_import():
    imports = _embedded_imports()
    assert any(f == "bench_foreground.py" for f, _, _ in imports)
    broken = []
    for file, module, names in imports:
        if not module.startswith(("fastpriv", "benchmarks")):
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            broken.append(f"{file}: import {module}: {e}")
            continue
        for n in names:
            if not hasattr(mod, n):
                try:
                    importlib.import_module(f"{module}.{n}")
                except ImportError:
                    broken.append(f"{file}: from {module} import {n}")
    assert not broken, broken


# ------------------------------------------------------------------ cold start
COLD_BLOCKS = {"cold-commands": "cold_start_commands.json", "cold-cached": "cold_start_fresh.json"}


def _block(name: str, text: str = README) -> str:
    m = re.search(rf"<!-- perf:{name} -->\n(.*?)<!-- /perf:{name} -->", text, flags=re.S)
    assert m, f"README.md has no perf:{name} block"
    return m.group(1)


def _table_commands(block: str) -> list[str]:
    rows = [ln for ln in block.splitlines() if ln.startswith("| `fastpriv ")]
    return [re.match(r"\| `(fastpriv [^`]*)`", ln).group(1).replace("\\|", "|") for ln in rows]


@pytest.mark.parametrize("name", sorted(COLD_BLOCKS))
def test_cold_start_tables_time_exactly_the_help_examples(name):
    import shlex

    from fastpriv.cli import build_parser
    from fastpriv.cli._common import examples_of

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    documented = [ex for p in sub.choices.values() for ex in examples_of(p)]
    assert len(documented) >= 10
    shown = _table_commands(_block(name))
    assert sorted(shown) == sorted(documented), (
        f"README's perf:{name} table times commands that are not the current --help "
        f"examples (or misses some): rerun benchmarks/bench_cold_start.py and "
        f"benchmarks/readme_tables.py\nnot documented: {sorted(set(shown) - set(documented))}"
        f"\nnot timed: {sorted(set(documented) - set(shown))}")
    assert all(shlex.split(c)[0] == "fastpriv" for c in shown)


@pytest.mark.parametrize("name", sorted(COLD_BLOCKS))
def test_cold_start_tables_say_their_date_and_load(name):
    data = json.loads((RESULTS / COLD_BLOCKS[name]).read_text(encoding="utf-8"))
    under = _block(name).split("\n\n", 1)[1]
    assert data["machine"]["date"][:10] in under and "load average" in under
    assert f"{data['load_avg_start'][0]:.1f} before" in under
    assert f"{data['load_avg_end'][0]:.1f} after" in under
    assert data["revision"] in under


def test_a_cold_start_result_for_another_command_line_is_refused(tmp_path):
    folder = _results_copy(tmp_path)

    def other_line(data):      # the attack row timed on some other command line
        data["commands"]["attack"]["argv"] = ["attack", "data.parquet", "--qi", "age", "sex",
                                              "--group", "gid", "--sensitive", "occupation",
                                              "--r", "2"]

    _edit_json(folder, "cold_start_fresh.json", other_line)
    with pytest.raises(rt.ReadmeDataError, match=r"cold_start_fresh\.json: commands "
                                                 r"\['attack'\] are not the current --help"):
        rt.render(README, rt.Results(folder))


def test_a_new_help_example_without_a_measurement_is_refused(monkeypatch):
    examples = rt.help_examples()
    monkeypatch.setattr(rt, "help_examples",
                        lambda: {**examples, "audit_9": ["audit", "adult", "--qi", "age"]})
    with pytest.raises(rt.ReadmeDataError, match=r"examples \['audit_9'\] are not measured"):
        rt.render(README)


@pytest.mark.parametrize("name", sorted(COLD_BLOCKS))
def test_a_changed_cold_start_result_is_detected(tmp_path, name):
    folder = _results_copy(tmp_path)
    f = COLD_BLOCKS[name]

    def slower(data):
        side = "current" if f == "cold_start_fresh.json" else "cold"
        data["commands"]["audit"][side]["cpu_s"] *= 3
        data["load_avg_end"] = [9.75, 9.0, 9.0]

    _edit_json(folder, f, slower)
    d = rt.diff(README, rt.Results(folder))
    changed = [ln for ln in d.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert any("fastpriv audit adult --sensitive occupation --qi age sex" in ln
               for ln in changed), d
    assert any("9.8 after" in ln for ln in changed), d


def test_a_cold_start_result_without_its_load_is_refused(tmp_path):
    folder = _results_copy(tmp_path)
    _edit_json(folder, "cold_start_commands.json", lambda d: d.pop("load_avg_start"))
    with pytest.raises(rt.ReadmeDataError, match=r"cold_start_commands\.json: no key "
                                                 r"'load_avg_start'"):
        rt.render(README, rt.Results(folder))
