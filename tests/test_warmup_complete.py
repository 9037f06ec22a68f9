"""``fastpriv warmup`` is complete and exact.

Complete: ``fastpriv warmup`` into an empty ``FASTPRIV_CACHE_DIR`` reaches every kernel entry
point (it reports none as not reached, so the wheel it builds ships them all), and after it
every documented command — each example of each sub-command's ``--help``, run as written in
a fresh process — compiles nothing (a read-only cache baked into a Docker image by
``warmup`` then serves every documented command without compiling). Exact: ``warmup
--models X`` compiles X's kernels and the shared counting kernels that building X's input
takes, nothing else.

Compilations are counted by fastpriv's own listener on Numba's ``numba:compile`` event
(:func:`fastpriv._progress.compile_stats`), written at exit to the file named by
``FASTPRIV_COMPILE_STATS``; it sees callees compiled inside their callers too.

Cost: the cold ``warmup`` is the price of this module (the whole CPU time of compiling every
kernel once, 1.5-2 minutes on 2 cores); each example then costs a cached command's start.
The module shares one warmed cache among its tests.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fastpriv.cli import build_parser
from fastpriv.cli.warmup import MODELS

ROOT = Path(__file__).resolve().parent.parent


def _help_examples() -> list[tuple[str, str]]:
    """Every ``fastpriv …`` line in the ``--help`` epilog of every sub-command."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    out = []
    for name, p in sorted(sub.choices.items()):
        for line in (p.epilog or "").splitlines():
            if line.strip().startswith("fastpriv "):
                out.append((name, line.strip()))
    return out


EXAMPLES = _help_examples()


def _env(cache: Path, stats: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTPRIV_NO_CACHE", "FASTPRIV_PROGRESS", "NUMBA_CACHE_DIR",
                        "FASTPRIV_COMPILE_STATS")}
    env["FASTPRIV_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if stats is not None:
        env["FASTPRIV_COMPILE_STATS"] = str(stats)
    return env


def _fastpriv(argv: list[str], cache: Path, cwd: Path, stats: Path,
              timeout: float = 900) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``python -m fastpriv argv`` in a fresh process; its exit and its compile stats.

    No stats file: the command never imported fastpriv's JIT (``fastpriv hierarchy``), so
    it compiled nothing.
    """
    proc = subprocess.run([sys.executable, "-m", "fastpriv", *argv], cwd=cwd,
                          env=_env(cache, stats), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    if not stats.exists():
        return proc, {"kernels": 0, "by_model": {}, "names": [], "jit_imported": False}
    return proc, json.loads(stats.read_text())


def test_every_model_is_warmed_by_a_workload_or_its_examples():
    from fastpriv._warmup import DOCTEST_MODEL, DOCTEST_MODULES, WORKLOAD_GROUP, WORKLOADS

    assert set(WORKLOADS) == set(WORKLOAD_GROUP) and set(WORKLOAD_GROUP.values()) <= set(MODELS)
    assert set(DOCTEST_MODEL) == set(DOCTEST_MODULES) and set(DOCTEST_MODEL.values()) <= \
        set(MODELS)
    unwarmed = set(MODELS) - set(WORKLOAD_GROUP.values()) - set(DOCTEST_MODEL.values())
    assert not unwarmed, f"--models accepts {sorted(unwarmed)} but nothing warms them"
    assert len(EXAMPLES) >= 10 and {n for n, _ in EXAMPLES} >= {"audit", "report", "demo"}


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """An empty cache filled by ``fastpriv warmup`` (every model), and the warm-up's report."""
    base = tmp_path_factory.mktemp("warmup-complete")
    cache = base / "cache"
    cache.mkdir()
    out = base / "warmup.json"
    proc, stats = _fastpriv(["warmup", "--json", str(out)], cache, base, base / "warm.stats")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cache, json.loads(out.read_text()), stats


@pytest.mark.slow
def test_warmup_compiles_every_model_and_every_workload_runs(warmed):
    _, payload, stats = warmed
    failed = [w for w in payload["workloads"] if w["status"] != "ok"]
    assert not failed, failed          # a workload that fails warms nothing: an error here
    assert payload["models"] == sorted(MODELS)
    assert payload["compiled"] > 100 and payload["loaded"] == 0
    # every kernel module's kernels are compiled (listener names: "<module>.<kernel>")
    kernel_dir = ROOT / "fastpriv" / "_kernels"
    modules = {p.stem for p in kernel_dir.glob("*.py") if not p.stem.startswith("_")}
    assert modules <= set(stats["by_model"]), modules - set(stats["by_model"])


@pytest.mark.slow
def test_warmup_reaches_every_kernel_entry_point(warmed):
    """No kernel is left for a user's first call to compile (issue 46).

    The wheel ships what the warm-up compiles: an entry point it does not reach compiles on
    a fresh install. A kernel only other kernels call is compiled inside them (a helper);
    one that no Python path calls is dead code and goes (tests' oracles live in
    ``tests/kernels_reference.py``).
    """
    _, payload, _ = warmed
    assert payload["n_kernels"] == len(payload["kernels"])
    missed = payload["not_reached"]
    assert missed == [], (f"{len(missed)} kernel entry points not reached by `fastpriv "
                          f"warmup` (extend the model's warmup_workload, or fastpriv/_warmup.py's "
                          f"own WORKLOADS): {missed}")


@pytest.mark.slow
@pytest.mark.parametrize(("command", "example"), EXAMPLES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(EXAMPLES)])
def test_documented_command_compiles_nothing_after_warmup(warmed, command, example, tmp_path):
    cache, _, _ = warmed
    argv = shlex.split(example)[1:]
    if command == "reproduce":          # writes into the checkout otherwise
        argv[argv.index("--out") + 1] = str(tmp_path / "repro")
    proc, stats = _fastpriv(argv, cache, tmp_path, tmp_path / "compile.stats")
    assert proc.returncode in (0, 1), (example, proc.stderr[-3000:])
    assert stats["kernels"] == 0, (f"`{example}` compiled {stats['kernels']} kernels after "
                                   f"`fastpriv warmup`: {stats['names']}")
    assert "fastpriv: compiling" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("model", ["classic", "risk"])
def test_warmup_models_compiles_that_model_alone(model, tmp_path):
    """``--models X`` compiles X's kernels, plus the counting kernels that build X's input
    (a Release or class counts) — no other model's."""
    cache = tmp_path / "cache"
    cache.mkdir()
    out = tmp_path / "w.json"
    proc, stats = _fastpriv(["warmup", "--models", model, "--json", str(out)], cache,
                            tmp_path, tmp_path / "w.stats")
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(out.read_text())
    assert payload["models"] == [model]
    assert all(w["status"] == "ok" for w in payload["workloads"]), payload["workloads"]
    assert stats["by_model"].get(model, 0) > 0
    assert set(stats["by_model"]) <= {model, "counting", "counting_radix"}, stats["by_model"]
