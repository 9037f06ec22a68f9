"""The README stays true: quickstart = CI's commands, its Python runs, its numbers have files."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_quickstart_is_two_commands_and_ci_runs_the_same_test_command():
    quick = README.split("## Quickstart", 1)[1]
    cmds = [ln.split("#")[0].strip() for ln in _blocks("bash")[0].splitlines() if ln.strip()]
    assert cmds == ['pip install -e ".[all]" && fastpriv demo',
                    "bash scripts/install-system-deps && python -m pytest -q"]
    assert quick.index("pip install") < quick.index("pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install --quiet -e ".[all]"' in ci
    assert ci.rstrip().splitlines()[-1] == cmds[1]


@pytest.mark.slow
def test_python_examples_run():
    code = "\n".join(_blocks("python"))        # the sections build on each other
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "r-robustness at r =" in out and "foreground attack" in out


def test_every_results_file_named_in_the_performance_table_exists():
    perf = README.split("## Performance", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"`([\w/]+\.json)`", perf))
    assert len(names) >= 10
    results = ROOT / "benchmarks" / "results"
    missing = [n for n in names if not (results / n).is_file()]
    assert not missing, missing
