"""docs/api.md is the API table a reader guesses calls from: it must match the code."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from fastpriv._data import as_release

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
ROW = re.compile(r"^\| `(fastpriv\.[\w.]+)` \| `([^`]*)` \|")
# keywords a model takes through **read, exactly those of the resolver
READ_KEYWORDS = {p for p in inspect.signature(as_release).parameters if p != "data"} - {
    "svpi_only"}


def _rows() -> list[tuple[str, list[str]]]:
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows.append((m.group(1), [k.strip() for k in m.group(2).split(",") if k.strip()]))
    return rows


def _resolve(path: str):
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise AssertionError(f"cannot import {path}")


def test_the_table_is_not_empty():
    assert len(_rows()) >= 10


@pytest.mark.parametrize(("path", "keywords"), _rows(), ids=[r[0] for r in _rows()])
def test_every_documented_call_exists_with_its_keywords(path, keywords):
    fn = _resolve(path)
    params = inspect.signature(fn).parameters
    first = next(iter(params.values()))
    assert first.name == "data", f"{path}: the data comes first, named 'data'"
    assert first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for kw in keywords:
        if kw in params:
            assert params[kw].kind is params[kw].KEYWORD_ONLY, \
                f"{path}: {kw}= must be keyword-only"
        else:
            assert var_kw and kw in READ_KEYWORDS, f"{path} does not take {kw}="
