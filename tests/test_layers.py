"""The package's import graph runs one way: no cycle, no import from a higher layer.

Every ``import`` statement counts, those inside functions too (a deferred import is still a
dependency); only ``if TYPE_CHECKING:`` blocks (annotations, never executed) are left out.
Layers, lowest first: the foundation (errors, the JIT set-up, threads, cache, progress,
timing), the kernels (``fastpriv._kernels``: arrays in, arrays out), the package's readers
and models, the report, the command line. A module may import its own layer
or a lower one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "fastpriv"


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path) -> set[str]:
    """Package modules imported by module ``name`` anywhere in its source."""
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            base = (pkg[:len(pkg) - node.level + 1] if node.level else [])
            target = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                cand = f"{target}.{a.name}"
                if cand in MODULES:
                    out.add(cand)
                elif target in MODULES:
                    out.add(target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    out.discard(name)
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


FOUNDATION = {"fastpriv.errors", "fastpriv._version", "fastpriv._jit", "fastpriv._threads",
              "fastpriv._cache", "fastpriv._progress", "fastpriv._timing"}


def _layer(module: str) -> int:
    if module in FOUNDATION:
        return 0
    if module.startswith("fastpriv._kernels"):
        return 1
    if module.startswith("fastpriv.cli") or module == "fastpriv.__main__":
        return 4
    if module.startswith("fastpriv.report"):
        return 3
    return 2


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            strong(v)
    return out


def test_the_graph_is_read():
    assert GRAPH["fastpriv.release"] >= {"fastpriv._arrow", "fastpriv._validation"}
    assert "fastpriv.risk" in GRAPH["fastpriv.population"]


def test_no_import_cycle():
    assert _cycles() == []


# the package's root re-exports every layer lazily (``fastpriv.__getattr__``)
_ENTRY = {"fastpriv"}


@pytest.mark.parametrize("module", sorted(set(GRAPH) - _ENTRY))
def test_no_import_from_a_higher_layer(module):
    higher = sorted(m for m in GRAPH[module]
                    if _layer(m) > _layer(module) and m not in _ENTRY)
    assert higher == [], f"{module} imports the higher layer(s) {higher}"
