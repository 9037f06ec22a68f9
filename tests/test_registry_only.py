"""The report, the verdict, the CLI and the warm-up read models from the registry (issue 49).

Every model id of :data:`fastpriv.registry.MODELS` spelled out as a string literal in
``fastpriv/report/``, ``fastpriv/cli/`` or ``fastpriv/_warmup.py`` is a place that names a
model instead of reading the registry. Such a literal may appear only in the model's own
files (:meth:`fastpriv.registry.Model.own_files`: those of the functions it declares and its
CLI sub-command).

``PENDING`` lists the literals that spell a model id but name something else (each with its
reason: an anonymize method, a switch of the report, a key); issue 49 moved every literal
that named a model into functions the registry declares. It is a ratchet: a literal not
listed fails (nothing new may name a model), and so does a listed one that is gone (remove
it from the list, so that it cannot come back).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from fastpriv import registry

ROOT = Path(__file__).resolve().parents[1]
SCANNED = sorted([*(ROOT / "fastpriv" / "report").rglob("*.py"),
                  *(ROOT / "fastpriv" / "cli").rglob("*.py"), ROOT / "fastpriv" / "_warmup.py"])

#: (file, model id) -> number of literals that name something else (see the docstring).
PENDING = {
    # the anonymize method of the same name (SkylineAnonymize), not the model
    ("fastpriv/cli/anonymize.py", "skyline"): 2,
    # build_report's keyword robustness= (the switch), not the model
    ("fastpriv/report/_build.py", "robustness"): 2,
    # the report parameter robustness (build_report's switch), not the model
    ("fastpriv/report/schema.py", "robustness"): 1,
    # a frontier point's risk key, not the model
    ("fastpriv/report/frontier.py", "risk"): 1,
}


def _literals(path: Path) -> list[str]:
    """Every string constant of the module (f-string parts and docstrings included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def _found() -> Counter:
    ids = {m.name: m for m in registry.MODELS}
    out: Counter = Counter()
    for path in SCANNED:
        rel = path.relative_to(ROOT).as_posix()
        for lit in _literals(path):
            if lit in ids and rel not in ids[lit].own_files():
                out[(rel, lit)] += 1
    return out


def test_the_scan_sees_a_literal():
    """The scan works: a model's declared files are its own, a quoted id is found."""
    assert "fastpriv/population.py" in registry.model("k_map").own_files()
    assert "fastpriv/cli/skyline.py" in registry.model("skyline").own_files()
    classical = "fastpriv/report/_models/classical.py"
    assert classical in registry.model("k_anonymity").own_files()
    assert "k_anonymity" in _literals(ROOT / classical)


def test_no_model_is_named_outside_the_registry_and_its_own_files():
    found = _found()
    new = {k: n for k, n in found.items() if n > PENDING.get(k, 0)}
    assert not new, ("model ids spelled out outside the registry and the model's own files "
                     f"(read them from fastpriv.registry instead): {new}")


def test_pending_only_shrinks():
    found = _found()
    stale = {k: (n, found.get(k, 0)) for k, n in PENDING.items() if found.get(k, 0) < n}
    assert not stale, f"PENDING is stale (listed, found): lower or remove {stale}"


def test_the_models_declared_by_the_registry_alone_are_named_nowhere_else():
    """The models whose verdict the registry declares (k-map, δ-presence, …): no literal."""
    found = _found()
    declared = [m.name for m in registry.MODELS if m.checks is not None]
    assert {"k_map", "delta_presence"} <= set(declared)
    for name in declared:
        assert not [k for k in found if k[1] == name]
        assert not [k for k in PENDING if k[1] == name]
