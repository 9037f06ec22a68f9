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
``timings_s`` and ``glossary``. The schemas of the sections a model builds are declared by
the model (``section_schemas`` of :mod:`fastpriv.registry`), in the registry's order.

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

from ..errors import InputError
from ..registry import MODELS, load, schema_version
from ._schema_parts import (
    BOOL,
    INT,
    LABEL,
    NUM,
    NUM_OR_NULL,
    OBJ,
    STR,
    STR_OR_NULL,
    arr,
    obj,
    section_schema,
)

__all__ = ["SCHEMA", "SCHEMA_ID", "SCHEMA_VERSION", "validate"]

#: 1.3 plus the minor version of every model that declares its section (``Model.since``)
SCHEMA_VERSION = schema_version()
SCHEMA_ID = "urn:fastpriv:report:1"

_CHECK = obj({"id": STR, "title": STR, "question": STR,
               "satisfied": {"type": ["boolean", "null"]}, "achieved": {},
               "required": STR, "plain": STR, "status": {"enum": ["ok", "skipped", "failed"]},
               "reason": STR_OR_NULL})

_TARGET = obj({"source": STR, "row": {"type": ["integer", "null"]},
                "rows": {"anyOf": [arr(INT), {"type": "null"}]},
                "group": {"type": ["integer", "null"]}, "group_label": LABEL,
                "value": LABEL, "certainty": NUM, "knowledge": STR, "why": STR,
                "row_label": LABEL, "exceeds_threshold": BOOL},
               {"actual_value": LABEL})



def _model_sections() -> dict[str, dict]:
    """Return the schemas of the models' top-level sections (``section_schemas``), in order.

    A dict declared by several models (a family read from one section) is read once.
    """
    paths = dict.fromkeys(m.section_schemas for m in MODELS if m.section_schemas)
    return {name: sec for p in paths for name, sec in load(p).items()}


#: the sections the models build themselves (every report has them: skipped or failed
#: when they did not run)
_MODEL_SECTIONS = _model_sections()

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
                 "parameters", "verdict", "release", *_MODEL_SECTIONS, "worst_groups",
                 "targets", "timings_s", "glossary"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "schema_version": {"type": "string", "pattern": r"^1\.\d+\.\d+$"},
        "title": STR,
        "created": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT"},
        "generator": obj({"fastpriv": STR, "python": STR, "numpy": STR, "numba": STR,
                           "pyarrow": STR, "platform": STR}),
        "input": obj({
            "kind": {"enum": ["file", "directory", "table", "release"]},
            "source": STR, "path": STR_OR_NULL,
            "fingerprint": obj({"algorithm": {"const": "sha256"}, "of": STR,
                                 "value": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                                 "bytes": {"type": ["integer", "null"]},
                                 "files": arr(obj({"path": STR, "sha256": STR,
                                                     "bytes": INT})),
                                 "n_files": INT}),
            "n_input_rows": {"type": ["integer", "null"]},
            "n_rows_dropped_for_nulls": INT, "rows_available": BOOL,
            "row_level_reason": STR_OR_NULL}),
        "parameters": obj({
            "sensitive": STR_OR_NULL, "group": {"type": ["array", "null"]},
            "qi": {"type": ["array", "null"]}, "individual": STR_OR_NULL,
            "nulls": {"enum": ["error", "drop", "value"]}, "c": arr(NUM, minItems=1),
            "c_verdict": NUM, "k": INT, "k_max": INT,
            "point": arr(INT, minItems=3, maxItems=3), "l": {"type": ["integer", "null"]},
            "min_size": INT, "min_l": INT, "max_t": NUM, "r": NUM_OR_NULL,
            "max_set_size": INT, "sigma": {"type": ["array", "null"]},
            "sensitive_values": {"type": ["array", "null"]}, "top": INT,
            "include_individual_values": BOOL, "row_label": STR_OR_NULL,
            "robustness": BOOL, "attack": BOOL, "stream": BOOL, "knowledge": STR}),
        "verdict": obj({
            "threshold_c": NUM, "headline": STR, "satisfied": arr(STR),
            "violated": arr(STR), "not_run": arr(STR), "checks": arr(_CHECK),
            "passed": BOOL, "exit_code": {"enum": [0, 1, 2]},
            "errors": arr(obj({"id": STR, "title": STR, "error": STR})),
            "key_risk": obj({"model": STR_OR_NULL, "certainty": NUM_OR_NULL,
                              "knowledge": STR_OR_NULL, "text": STR})}),
        "release": section_schema({
            "case": {"enum": ["svpi", "mvpi-set", "mvpi-multiset"]},
            "grouping": {"enum": ["group", "qi", "release"]}, "group_columns": arr(STR),
            "sensitive": STR, "n_groups": INT, "n_rows": INT, "n_individuals": INT,
            "n_values": INT,
            "group_size": obj({"min": INT, "median": NUM, "mean": NUM, "max": INT}),
            "singleton_groups": INT,
            "values": arr(obj({"value": LABEL, "count": INT, "share": NUM})),
            "values_shown": INT}),
        **_MODEL_SECTIONS,
        "worst_groups": section_schema({
            "by": STR, "description": STR, "rows_known": BOOL,
            "groups": arr(obj({"group": INT, "label": LABEL, "size": INT,
                                 "distinct": INT, "max_share": NUM, "top_value": LABEL,
                                 "profile": arr(obj({"value": LABEL, "count": INT})),
                                 "rows": {"anyOf": [arr(INT), {"type": "null"}]},
                                 "row_labels": {"type": ["array", "null"]}}))}),
        "classes": section_schema({
            "qi": arr(STR), "n_classes": INT, "n_records": INT, "k": INT,
            "worst_label": LABEL,
            "class_size": obj({"min": INT, "median": NUM, "mean": NUM, "max": INT}),
            "singleton_classes": INT,
            "smallest": arr(obj({"values": OBJ, "size": INT}))}),
        "frontier": section_schema({
            "qi": arr(STR), "criterion": STR, "utility": STR, "risk_measure": STR,
            "n_nodes": INT, "n_satisfying": INT, "n_frontier": INT,
            "frontier": arr(arr(INT)), "points": arr(obj({
                "node": arr(INT), "risk_max": NUM, "risk_avg": NUM, "loss": NUM,
                "on_frontier": BOOL, "chosen": BOOL})),
            "chosen": {"type": ["object", "null"]}}),
        "models": {"type": "object", "additionalProperties": obj(
            {"status": {"enum": ["ok", "skipped", "failed"]}, "reason": STR_OR_NULL}),
            # the sections of the models that declare their schema in the registry
            "properties": {m.name: load(m.schema) for m in MODELS if m.schema}},
        "targets": obj({"individual_values_included": BOOL, "items": arr(_TARGET)}),
        "timings_s": {"type": "object", "required": ["total"],
                      "additionalProperties": NUM},
        "glossary": arr(obj({"term": STR, "definition": STR}), minItems=1),
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
