"""Re-identification risk in the report: its verdict check, reach and Mondrian criterion.

The section ``risk`` (:func:`fastpriv.report._risk.risk_section`) holds the audit of the QI
classes; the functions below are what :mod:`fastpriv.registry` declares for the model.
"""

from __future__ import annotations

import math
from typing import Any

from ...registry import make_check
from .._risk import render_risk_html
from ..text import fmt_pct
from . import not_run

__all__ = ["checks", "unreachable", "remedy_criteria", "sections", "html"]


def checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """Return the prosecutor-risk check (none when the report has no ``risk`` section).

    Parameters
    ----------
    sec : dict
        The report's sections (reads ``risk``).
    params : dict
        The report's parameters (unused: the threshold is in the section).
    sens : str or None
        The sensitive column's name (unused).

    Returns
    -------
    list of dict
        One ``risk`` check, or none.

    """
    rk = sec.get("risk")
    if rk is None:
        return []
    q = "Can someone who knows a person's quasi-identifiers pick out their record?"
    if rk["status"] != "ok":
        return not_run("risk", "re-identification risk", q, rk)
    a = rk["audit"]
    return [make_check(
        "risk", "re-identification risk", q, bool(rk["verdict"]["passed"]),
        a["prosecutor_max"], f"prosecutor risk ≤ {a['params']['threshold']:g}",
        f"The smallest class of identical quasi-identifiers makes a record "
        f"{fmt_pct(a['prosecutor_max'])} likely to be re-identified "
        f"({a['sample_uniques']:,} records are unique; allowed: "
        f"{fmt_pct(a['params']['threshold'])}).")]


def unreachable(by_id: dict, sec: dict, params: dict) -> list[str]:
    """Return the risk threshold when even one class of every record is too small (1/n)."""
    n_rec = ((sec.get("risk") or {}).get("audit") or {}).get("params", {}).get("n_records")
    max_risk = params.get("max_risk")
    if "risk" in by_id and n_rec is not None and max_risk is not None and (
            max_risk <= 0 or math.ceil(1 / max_risk - 1e-12) > n_rec):
        return [f"prosecutor risk ≤ {max_risk:g} (one class of all {n_rec:,} records "
                f"has risk {1 / n_rec if n_rec else 1:.4g})"]
    return []


def remedy_criteria(by_id: dict, params: dict) -> list[str]:
    """Return Mondrian's ``--min-size`` meeting the risk threshold (risk 1/k ≤ max_risk)."""
    if "risk" not in by_id or not params.get("max_risk"):
        return []
    return ["--min-size", str(math.ceil(1 / params["max_risk"] - 1e-12))]


def sections(ctx: Any) -> dict[str, dict]:
    """Return the section ``risk`` of the QI classes (none when switched off or without qi).

    Parameters
    ----------
    ctx : object
        The report's context: ``inp`` (the loaded input: its ``classes`` without a sensitive
        column, else its ``table``), ``o`` (the options: ``qi``, ``nulls``), ``risk`` (bool),
        ``max_risk``, ``population``, ``weight`` and ``sampling_weight``.

    Returns
    -------
    dict
        ``{"risk": section}`` or ``{}``.

    """
    from .._risk import risk_section

    inp, o = ctx.inp, ctx.o
    if not ctx.risk:
        return {}
    if inp.classes is not None:
        # the classes were counted under the report's null policy: say so (the section's
        # default, nulls="error", refuses counts made with another)
        return {"risk": risk_section(inp.classes, qi=o.qi, threshold=ctx.max_risk,
                                     population=ctx.population, nulls=o.nulls)}
    if not o.qi or inp.table is None:
        return {}
    # the QI classes of the input under the report's null policy, as risk.audit(table,
    # qi=..., nulls=...) counts them: a record whose only null is its sensitive value is
    # still a record an adversary can single out by its QI values
    return {"risk": risk_section(inp.table, qi=o.qi, threshold=ctx.max_risk,
                                 population=ctx.population, weight=ctx.weight,
                                 sampling_weight=ctx.sampling_weight, nulls=o.nulls)}


def html(d: dict) -> str:
    """Render the re-identification risk section of the report payload ``d`` ("" without one)."""
    return render_risk_html(d["risk"]) if d.get("risk") else ""
