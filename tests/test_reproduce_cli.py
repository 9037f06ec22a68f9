"""``fastpriv reproduce`` loads the experiments of its own checkout, never the current folder's.

The experiments (``benchmarks/``) are not installed with the package: the command finds them
beside the ``fastpriv/`` folder it runs from, by file location. A ``benchmarks/`` or
``tests/`` package in the current directory — first on ``sys.path`` under ``python -m`` or
``python -c`` — must never be imported, and an installed package (no checkout around it)
must say that the command needs one, with exit status 2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import fastpriv
from fastpriv.cli import main

PKG = Path(fastpriv.__file__).resolve().parent
ROOT = PKG.parent

#: A module that leaves a mark and stops the interpreter if it is ever imported.
TRAP = ("from pathlib import Path\n"
        "Path(__file__).resolve().parents[1].joinpath('HIJACKED').write_text(__name__)\n"
        "raise SystemExit(99)\n")


def _trap(folder: Path) -> Path:
    """Put ``benchmarks`` and ``tests`` packages that must never be imported in ``folder``."""
    for name in ("benchmarks", "tests"):
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(TRAP)
        (folder / name / "reproduce.py").write_text(TRAP)
    return folder


def _run(args: list[str], cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_benchmarks_folder_in_the_current_directory_is_never_imported(tmp_path):
    cwd = _trap(tmp_path / "work")
    code = ("import sys\nfrom fastpriv.cli import main\n"
            "sys.exit(main(['reproduce', '--out', 'o', '--only', 'nope']))")
    for args in (["-c", code], ["-m", "fastpriv", "reproduce", "--out", "o", "--only",
                                "nope"]):
        proc = _run(args, cwd, ROOT)   # '' (the current folder) is first on sys.path
        assert not (cwd / "HIJACKED").exists(), (args, proc.stderr)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        # the checkout's experiments answered: they know martin_fig5
        assert "--only: unknown experiment(s) nope; known: " in proc.stderr
        assert "martin_fig5" in proc.stderr
        assert not (cwd / "o").exists()   # refused before anything was written


def test_an_installed_package_says_reproduce_needs_a_checkout(tmp_path):
    site = tmp_path / "site"           # an install: the package alone, no pyproject.toml
    shutil.copytree(PKG, site / "fastpriv", ignore=shutil.ignore_patterns("__pycache__"))
    _trap(site)                        # another distribution's top-level benchmarks/tests
    cwd = _trap(tmp_path / "work")
    proc = _run(["-m", "fastpriv", "reproduce", "--out", "o"], cwd, site)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert not (cwd / "HIJACKED").exists() and not (site / "HIJACKED").exists()
    err = proc.stderr.strip()
    assert err.startswith("fastpriv reproduce: error: this command needs a source checkout "
                          "of fastpriv"), err
    assert f"none beside {(site / 'fastpriv').resolve()}" in err
    assert "pip install -e ." in err and "Traceback" not in err
    assert len(err.splitlines()) == 1
    assert not (cwd / "o").exists()


def test_another_imported_benchmarks_package_is_refused(monkeypatch, tmp_path, capsys):
    other = types.ModuleType("benchmarks")
    other.__path__ = [str(tmp_path)]
    monkeypatch.setitem(sys.modules, "benchmarks", other)
    monkeypatch.delitem(sys.modules, "benchmarks.reproduce", raising=False)
    assert main(["reproduce", "--out", str(tmp_path / "o"), "--only", "martin_fig5"]) == 2
    err = capsys.readouterr().err
    assert "a different 'benchmarks' package is already imported" in err
    assert str(tmp_path) in err and str(ROOT / "benchmarks") in err
    assert not (tmp_path / "o").exists()


def test_unknown_experiment_is_bad_input_not_a_bug(tmp_path, capsys):
    assert main(["reproduce", "--out", str(tmp_path / "o"), "--only", "martin_fig5",
                 "no_such_experiment"]) == 2
    err = capsys.readouterr().err
    assert "--only: unknown experiment(s) no_such_experiment; known: " in err
    assert "internal error" not in err and not (tmp_path / "o").exists()
