"""Audit reports: one call from data to a complete JSON + HTML audit.

:func:`build_report` runs every model on a release — the classical models, (c,k)-safety
(disclosure curves against implications and negated atoms), the privacy skyline (breach
probabilities and knowledge skylines), r-robustness and the foreground attack when the
quasi-identifiers are available — and collects the results, the witnesses (which groups and
individuals an adversary would target, and why), the parameters, the library versions, a
sha256 fingerprint of the input and the timings into a :class:`Report`.

``Report.to_json()`` is the payload itself (schema: :mod:`fastpriv.report.schema`,
versioned); ``Report.to_html()`` renders it as one self-contained page (inline CSS, inline
SVG plots, no scripts) for a data owner: verdict first, then one section per question, and
a glossary. ``Report.write(html=..., json=...)`` writes atomically and never over the
input. Command line: ``fastpriv report``.

Examples
--------
>>> import fastpriv as fp
>>> from fastpriv.report import build_report
>>> rel = fp.Release.from_groups([["flu", "flu", "hiv"], ["flu", "cancer", "hiv"]])
>>> rep = build_report(rel, c=0.9, k=1, k_max=3, min_size=2, min_l=2)
>>> rep.data["classical"]["pycanon"]["k_anonymity"]
{'k': 3}
>>> rep.verdict["headline"]
'FAIL: the release fails 4 of the 8 checks at the chosen thresholds.'

"""

from __future__ import annotations

from ._build import GLOSSARY, Report, build_report, fingerprint
from ._models.classical import classical_meaning
from ._models.skyline import MAX_SKYLINE_VALUES
from .schema import SCHEMA, SCHEMA_ID, SCHEMA_VERSION, validate

__all__ = ["build_report", "Report", "fingerprint", "validate", "SCHEMA", "SCHEMA_ID",
           "SCHEMA_VERSION", "GLOSSARY", "MAX_SKYLINE_VALUES", "classical_meaning"]
