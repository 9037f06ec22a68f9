"""The JSON schema of fastpriv audit reports (JSON Schema draft 2020-12).

Stability
---------
``schema_version`` is semantic: a **minor** version adds keys (readers must ignore keys
they do not know), a **major** version renames or removes keys or changes their meaning.
Every key listed as required below is present in every report of that major version.
Numbers that can be infinite are written as the strings ``"inf"`` / ``"-inf"`` (JSON has
no infinity); a model that did not run has ``status`` ``"skipped"`` or ``"failed"`` with a
``reason``.

Top-level keys
--------------
``schema``, ``schema_version``, ``title``, ``created`` (UTC ISO 8601), ``generator``
(fastpriv and library versions), ``input`` (kind, source, sha256 ``fingerprint``),
``parameters`` (everything the report ran with), ``verdict`` (checks with plain-language
text, the ids satisfied / violated / not run, and the ``key_risk``), the model sections
``release``, ``classical``, ``ck_safety``, ``skyline``, ``robustness``, ``foreground``,
``worst_groups``, then ``targets`` (individuals an adversary would target and why),
``timings_s`` and ``glossary``.

A report without a sensitive column (version 1.1: ``parameters.sensitive`` is null) has
the section ``classes`` (the classes of identical quasi-identifiers and their k) and
``risk``; the sections of attribute disclosure are then ``"skipped"`` with the reason.
``parameters.weight`` names the multiplicity column (null: one row per person).
``models`` holds the sections of the verdict models declared in :mod:`fastpriv.registry`
that were given a threshold (``parameters.thresholds``), e.g. ``k_map``, ``delta_presence``.
With ``hierarchies`` (version 1.3), ``frontier`` is the privacy–utility frontier of every
generalization of the QIs meeting k-anonymity at ``min_size`` (not part of the verdict):
:meth:`fastpriv.frontier.Frontier.to_dict` (every satisfying node in ``points``, the
frontier's nodes in order, the ``chosen`` node) with the section's ``status``.

Classical models follow the vocabulary of pycanon: ``classical.pycanon`` has pycanon's JSON
report keys (``k_anonymity``, ``alpha_k_anonymity``, ``l_diversity``,
``entropy_l_diversity``, ``recursive_c_l_diversity``, ``basic_beta_likeness``,
``enhanced_beta_likeness``, ``t_closeness``, ``delta_disclosure``) and the keys of its
printed report (``(_alpha,_k)-anonymity``, ``(c,l)-diversity``), each an object of the
achieved parameters (``{"k": 5}``, ``{"alpha": 0.4, "k": 5}``, …) or ``null`` when not
computed, with the reason in ``classical.notes``. The model sections embed the models'
own ``to_dict()`` results (``ck_safety.at_k``, ``skyline.worst``, ``skyline.skylines``,
``robustness.result``, ``foreground.result``, ``classical.models``).
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..registry import MODELS, load, schema_version

__all__ = ["SCHEMA", "SCHEMA_ID", "SCHEMA_VERSION", "validate"]

#: 1.3 plus the minor version of every model that declares its section (``Model.since``)
SCHEMA_VERSION = schema_version()
SCHEMA_ID = "urn:fastpriv:report:1"

_NUM = {"$ref": "#/$defs/num"}
_NUM_OR_NULL = {"anyOf": [{"$ref": "#/$defs/num"}, {"type": "null"}]}
_INT = {"type": "integer"}
_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_BOOL = {"type": "boolean"}
_LABEL: dict = {}          # any JSON value (group keys, value labels)
_OBJ = {"type": "object"}


def _obj(required: dict, optional: dict | None = None, *, extra: bool = True) -> dict:
    props = dict(required)
    props.update(optional or {})
    out: dict[str, Any] = {"type": "object", "required": list(required), "properties": props}
    if not extra:
        out["additionalProperties"] = False
    return out


def _arr(items: dict, **kw: Any) -> dict:
    return {"type": "array", "items": items, **kw}


def _section(ok_required: dict, optional: dict | None = None) -> dict:
    """Describe a model section: status/reason/seconds, and ``ok_required`` when "ok"."""
    base = {"status": {"enum": ["ok", "skipped", "failed"]}, "reason": _STR_OR_NULL,
            "seconds": _NUM}
    return {
        "type": "object",
        "required": list(base),
        "properties": {**base, **ok_required, **(optional or {})},
        "if": {"properties": {"status": {"const": "ok"}}},
        "then": {"required": list(ok_required)},
        "else": {"properties": {"reason": _STR}},
    }


def _pycanon_entry(*keys: str) -> dict:
    return {"anyOf": [_obj({k: _NUM for k in keys}), {"type": "null"}]}


_CHECK = _obj({"id": _STR, "title": _STR, "question": _STR,
               "satisfied": {"type": ["boolean", "null"]}, "achieved": {},
               "required": _STR, "plain": _STR, "status": {"enum": ["ok", "skipped", "failed"]},
               "reason": _STR_OR_NULL})

_CLASSIC_MODEL = _obj({"title": _STR, "value": _NUM, "worst_group": _INT,
                       "worst_label": _LABEL})

_ATOM = _obj({"group": _INT, "group_label": _LABEL, "person": _INT, "value": _LABEL,
              "row": {"type": ["integer", "null"]}})
_DISCLOSURE = _obj({"model": {"const": "ck_safety"},
                    "knowledge_kind": {"enum": ["implications", "negations"]}, "k": _INT,
                    "value": _NUM, "min_ratio": _NUM, "exact": _BOOL,
                    "witness": _obj({"knowledge_kind": _STR, "consequent": _ATOM,
                                     "antecedents": _arr(_ATOM), "groups": _arr(_INT),
                                     "group_labels": _arr(_LABEL),
                                     "formulas": _arr(_STR)})})

_SKYLINE = _obj({"sigma": _LABEL, "c": _NUM, "caps": _arr(_INT), "exact": _BOOL,
                 "evaluations": _INT,
                 "points": _arr(_arr(_NUM, minItems=3, maxItems=3))})

_BREACH = _obj({"sigma": _LABEL, "l": _INT, "k": _INT, "m": _INT, "case": _STR,
                "exact": _BOOL, "value": _NUM, "min_nr": _NUM, "statistics": _OBJ,
                "case_used": _STR_OR_NULL,
                "witness": {"anyOf": [_obj({"t_group": _INT, "x_values": _arr(_LABEL),
                                            "u_group": {"type": ["integer", "null"]},
                                            "n_u": _INT, "v_group": {"type": ["integer",
                                                                              "null"]},
                                            "n_v": _INT, "group_labels": _OBJ}),
                                      {"type": "null"}]}})

_POINT = _obj({"sigma": _LABEL, "l": _INT, "k": _INT, "m": _INT, "c": _NUM, "value": _NUM,
               "min_nr": _NUM, "safe": _BOOL})

_TARGET = _obj({"source": _STR, "row": {"type": ["integer", "null"]},
                "rows": {"anyOf": [_arr(_INT), {"type": "null"}]},
                "group": {"type": ["integer", "null"]}, "group_label": _LABEL,
                "value": _LABEL, "certainty": _NUM, "knowledge": _STR, "why": _STR,
                "row_label": _LABEL, "exceeds_threshold": _BOOL},
               {"actual_value": _LABEL})

SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "fastpriv audit report",
    "description": "Complete privacy audit of one release (see fastpriv.report.schema).",
    "$defs": {
        "num": {"anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}]},
    },
    "type": "object",
    "required": ["schema", "schema_version", "title", "created", "generator", "input",
                 "parameters", "verdict", "release", "classical", "ck_safety", "skyline",
                 "robustness", "foreground", "worst_groups", "targets", "timings_s",
                 "glossary"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "schema_version": {"type": "string", "pattern": r"^1\.\d+\.\d+$"},
        "title": _STR,
        "created": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT"},
        "generator": _obj({"fastpriv": _STR, "python": _STR, "numpy": _STR, "numba": _STR,
                           "pyarrow": _STR, "platform": _STR}),
        "input": _obj({
            "kind": {"enum": ["file", "directory", "table", "release"]},
            "source": _STR, "path": _STR_OR_NULL,
            "fingerprint": _obj({"algorithm": {"const": "sha256"}, "of": _STR,
                                 "value": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                                 "bytes": {"type": ["integer", "null"]},
                                 "files": _arr(_obj({"path": _STR, "sha256": _STR,
                                                     "bytes": _INT})),
                                 "n_files": _INT}),
            "n_input_rows": {"type": ["integer", "null"]},
            "n_rows_dropped_for_nulls": _INT, "rows_available": _BOOL,
            "row_level_reason": _STR_OR_NULL}),
        "parameters": _obj({
            "sensitive": _STR_OR_NULL, "group": {"type": ["array", "null"]},
            "qi": {"type": ["array", "null"]}, "individual": _STR_OR_NULL,
            "nulls": {"enum": ["error", "drop", "value"]}, "c": _arr(_NUM, minItems=1),
            "c_verdict": _NUM, "k": _INT, "k_max": _INT,
            "point": _arr(_INT, minItems=3, maxItems=3), "l": {"type": ["integer", "null"]},
            "min_size": _INT, "min_l": _INT, "max_t": _NUM, "r": _NUM_OR_NULL,
            "max_set_size": _INT, "sigma": {"type": ["array", "null"]},
            "sensitive_values": {"type": ["array", "null"]}, "top": _INT,
            "include_individual_values": _BOOL, "row_label": _STR_OR_NULL,
            "robustness": _BOOL, "attack": _BOOL, "stream": _BOOL, "knowledge": _STR}),
        "verdict": _obj({
            "threshold_c": _NUM, "headline": _STR, "satisfied": _arr(_STR),
            "violated": _arr(_STR), "not_run": _arr(_STR), "checks": _arr(_CHECK),
            "passed": _BOOL, "exit_code": {"enum": [0, 1, 2]},
            "errors": _arr(_obj({"id": _STR, "title": _STR, "error": _STR})),
            "key_risk": _obj({"model": _STR_OR_NULL, "certainty": _NUM_OR_NULL,
                              "knowledge": _STR_OR_NULL, "text": _STR})}),
        "release": _section({
            "case": {"enum": ["svpi", "mvpi-set", "mvpi-multiset"]},
            "grouping": {"enum": ["group", "qi", "release"]}, "group_columns": _arr(_STR),
            "sensitive": _STR, "n_groups": _INT, "n_rows": _INT, "n_individuals": _INT,
            "n_values": _INT,
            "group_size": _obj({"min": _INT, "median": _NUM, "mean": _NUM, "max": _INT}),
            "singleton_groups": _INT,
            "values": _arr(_obj({"value": _LABEL, "count": _INT, "share": _NUM})),
            "values_shown": _INT}),
        "classical": _section({
            "l": _INT, "l_source": _STR,
            "models": _obj({key: _CLASSIC_MODEL for key in (
                "k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity",
                "recursive_cl_diversity", "t_closeness", "t_closeness_ordered", "beta_likeness",
                "delta_disclosure")}),
            "pycanon": _obj({
                "k_anonymity": _pycanon_entry("k"),
                "(_alpha,_k)-anonymity": _pycanon_entry("alpha", "k"),
                "alpha_k_anonymity": _pycanon_entry("alpha", "k"),
                "l_diversity": _pycanon_entry("l"),
                "entropy_l_diversity": _pycanon_entry("l"),
                "(c,l)-diversity": _pycanon_entry("c", "l"),
                "recursive_c_l_diversity": _pycanon_entry("c", "l"),
                "basic_beta_likeness": _pycanon_entry("beta"),
                "enhanced_beta_likeness": _pycanon_entry("beta"),
                "delta_disclosure": _pycanon_entry("delta"),
                "t_closeness": _pycanon_entry("t")}),
            "notes": {"type": "object", "additionalProperties": _STR}}),
        "ck_safety": _section({
            "k": _INT, "k_max": _INT,
            "curve": _obj({"k": _arr(_INT), "implications": _arr(_NUM),
                           "negations": _arr(_NUM)}),
            "at_k": _obj({"implications": _DISCLOSURE, "negations": _DISCLOSURE}),
            "witness_text": _OBJ,
            "max_safe_k": _arr(_obj({"c": _NUM,
                                     "implications": {"type": ["integer", "null"]},
                                     "negations": {"type": ["integer", "null"]},
                                     "implications_is_safe_at_k": _BOOL,
                                     "negations_is_safe_at_k": _BOOL})),
            "saturation_k": _INT}),
        "skyline": _section({
            "point": _arr(_INT, minItems=3, maxItems=3), "c": _NUM,
            "confidences": _arr(_NUM), "sigma_selection": _STR, "sigmas": _arr(_LABEL),
            "plotted": _arr(_LABEL),
            "check": _obj({"safe": _BOOL, "n_violations": _INT, "n_values": _INT,
                           "points": _arr(_POINT)}),
            "worst": {"anyOf": [_BREACH, {"type": "null"}]},
            "skylines": _arr(_SKYLINE)}),
        "robustness": _section({
            "result": _obj({"model": _STR, "r": _NUM, "threshold": _NUM, "value": _NUM,
                            "robust": _BOOL, "complete": _BOOL,
                            "witness": {"type": ["object", "null"]}, "n_rows": _INT,
                            "n_groups": _INT, "attribute_sets": _arr(_arr(_STR)),
                            "n_problematic": _INT, "n_problematic_rows": _INT,
                            "problematic": _arr(_OBJ), "groups": _OBJ}),
            "summary": _STR}),
        "foreground": _section({
            "result": _obj({"r": _NUM, "threshold": _NUM, "n_rows": _INT,
                            "n_problematic": _INT, "max_posterior": _NUM_OR_NULL,
                            "mined": _OBJ, "worst": _arr(_OBJ)}),
            "summary": _STR}),
        "worst_groups": _section({
            "by": _STR, "description": _STR, "rows_known": _BOOL,
            "groups": _arr(_obj({"group": _INT, "label": _LABEL, "size": _INT,
                                 "distinct": _INT, "max_share": _NUM, "top_value": _LABEL,
                                 "profile": _arr(_obj({"value": _LABEL, "count": _INT})),
                                 "rows": {"anyOf": [_arr(_INT), {"type": "null"}]},
                                 "row_labels": {"type": ["array", "null"]}}))}),
        "classes": _section({
            "qi": _arr(_STR), "n_classes": _INT, "n_records": _INT, "k": _INT,
            "worst_label": _LABEL,
            "class_size": _obj({"min": _INT, "median": _NUM, "mean": _NUM, "max": _INT}),
            "singleton_classes": _INT,
            "smallest": _arr(_obj({"values": _OBJ, "size": _INT}))}),
        "frontier": _section({
            "qi": _arr(_STR), "criterion": _STR, "utility": _STR, "risk_measure": _STR,
            "n_nodes": _INT, "n_satisfying": _INT, "n_frontier": _INT,
            "frontier": _arr(_arr(_INT)), "points": _arr(_obj({
                "node": _arr(_INT), "risk_max": _NUM, "risk_avg": _NUM, "loss": _NUM,
                "on_frontier": _BOOL, "chosen": _BOOL})),
            "chosen": {"type": ["object", "null"]}}),
        "models": {"type": "object", "additionalProperties": _obj(
            {"status": {"enum": ["ok", "skipped", "failed"]}, "reason": _STR_OR_NULL}),
            # the sections of the models that declare their schema in the registry
            "properties": {m.name: load(m.schema) for m in MODELS if m.schema}},
        "targets": _obj({"individual_values_included": _BOOL, "items": _arr(_TARGET)}),
        "timings_s": {"type": "object", "required": ["total"],
                      "additionalProperties": _NUM},
        "glossary": _arr(_obj({"term": _STR, "definition": _STR}), minItems=1),
    },
}


def validate(payload: dict) -> None:
    """Validate a report payload against :data:`SCHEMA` (needs ``jsonschema``).

    Raises ``ValueError`` with the first error's path and message.
    """
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - test extra
        raise ImportError("validating reports needs jsonschema: pip install jsonschema") from None
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls.check_schema(SCHEMA)
    errors = sorted(cls(SCHEMA).iter_errors(payload), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.path) or "(root)"
        raise InputError(f"report does not match schema {SCHEMA_ID} v{SCHEMA_VERSION}: at "
                         f"{where}: {e.message} ({len(errors)} error(s))")
