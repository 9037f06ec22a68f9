"""The shared specification's test vectors (``tests/vectors/*.jsonl``), read by any test file.

The committed copy under ``tests/vectors`` is read; the specification's own folder
(``FASTPRIV_SPEC_DIR``, by default ``../shared/spec`` beside the checkout) only when the copy
is missing. The per-model test files check that the copy is current.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC_DIR = Path(os.environ.get("FASTPRIV_SPEC_DIR",
                               Path(__file__).resolve().parents[2] / "shared" / "spec"))


def vector_file(name: str) -> Path:
    """The committed copy of ``vectors/<name>``, else the specification's."""
    local = HERE / "vectors" / name
    return local if local.exists() else SPEC_DIR / "vectors" / name


def vectors_by_id(name: str) -> dict:
    """Every vector of ``vectors/<name>`` by its id (the file must hold at least one)."""
    with open(vector_file(name)) as fh:
        out = [json.loads(line) for line in fh if line.strip()]
    assert out, f"no vectors in {name}"
    return {v["id"]: v for v in out}
