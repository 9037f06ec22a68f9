"""The building blocks of the report's JSON schema (:mod:`fastpriv.report.schema`).

Shared by the schema and the models' ``section_schemas`` (:mod:`fastpriv.report._models`),
which describe the report sections they build: JSON Schema draft 2020-12 fragments for a
number that may be infinite (:data:`NUM`: a number or ``"inf"``/``"-inf"``/``"nan"``), the
basic types, objects, arrays and a section (``status``, ``reason``, ``seconds``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["NUM", "NUM_OR_NULL", "INT", "STR", "STR_OR_NULL", "BOOL", "LABEL", "OBJ", "obj",
           "arr", "section_schema"]

NUM = {"$ref": "#/$defs/num"}
NUM_OR_NULL = {"anyOf": [{"$ref": "#/$defs/num"}, {"type": "null"}]}
INT = {"type": "integer"}
STR = {"type": "string"}
STR_OR_NULL = {"type": ["string", "null"]}
BOOL = {"type": "boolean"}
LABEL: dict = {}          # any JSON value (group keys, value labels)
OBJ = {"type": "object"}


def obj(required: dict, optional: dict | None = None, *, extra: bool = True) -> dict:
    """Describe an object: its ``required`` properties, ``optional`` ones, others allowed.

    ``extra=False`` forbids properties not listed.
    """
    props = dict(required)
    props.update(optional or {})
    out: dict[str, Any] = {"type": "object", "required": list(required), "properties": props}
    if not extra:
        out["additionalProperties"] = False
    return out


def arr(items: dict, **kw: Any) -> dict:
    """Describe an array of ``items`` (``kw``: ``minItems``, ``maxItems``, …)."""
    return {"type": "array", "items": items, **kw}


def section_schema(ok_required: dict, optional: dict | None = None) -> dict:
    """Describe a report section: status/reason/seconds, and ``ok_required`` when "ok"."""
    base = {"status": {"enum": ["ok", "skipped", "failed"]}, "reason": STR_OR_NULL,
            "seconds": NUM}
    return {
        "type": "object",
        "required": list(base),
        "properties": {**base, **ok_required, **(optional or {})},
        "if": {"properties": {"status": {"const": "ok"}}},
        "then": {"required": list(ok_required)},
        "else": {"properties": {"reason": STR}},
    }
