"""The report's side of the models wired before the registry declared sections (issue 49).

One module per family of models read from one report section: :mod:`.classical`
(k-anonymity, ℓ-diversity, t-closeness, (α,k)-anonymity), :mod:`.ck` ((c,k)-safety),
:mod:`.skyline` (the privacy skyline), :mod:`.rowlevel` (r-robustness and the foreground
attack) and :mod:`.risk` (re-identification risk). Each holds the functions its models
declare in :mod:`fastpriv.registry` (``report_checks``, ``key_risk``, ``unreachable``,
``remedy_criteria``, ``remedy``), so that the verdict reads the registry instead of naming
models. The helpers below are shared by those modules.
"""

from __future__ import annotations

from ...registry import make_check

__all__ = ["not_run", "has_release", "plain_risk"]


def not_run(id_: str, title: str, question: str, section: dict) -> list[dict]:
    """Return the check of a section that did not run (skipped or failed), with the reason."""
    return [make_check(id_, title, question, status=section["status"],
                       reason=section["reason"])]


def has_release(sec: dict) -> bool:
    """Whether the report read a sensitive column (else it holds the QI ``classes`` only)."""
    return sec.get("classes") is None


def plain_risk(check: dict | None) -> dict | None:
    """Return a failing check's sentence as the key risk (None unless ``check`` fails)."""
    if check and check["satisfied"] is False:
        return {"model": check["id"], "certainty": None, "knowledge": None,
                "text": check["plain"]}
    return None
