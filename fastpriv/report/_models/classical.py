"""The classical models in the report: k-anonymity, ℓ-diversity, t-closeness, (α,k)-anonymity.

Their numbers are one section, ``classical`` (:func:`fastpriv.classic.audit`), or — without
a sensitive column — the QI classes (section ``classes``, k-anonymity alone). The functions
below are what :mod:`fastpriv.registry` declares for these models: their verdict checks,
the key risk of (α,k)-anonymity, the thresholds no generalization reaches and Mondrian's
criterion flags; :func:`classical_meaning` says what an achieved value means (the table of
``fastpriv audit``).
"""

from __future__ import annotations

import math
from typing import Any

from ...registry import make_check
from .._classes import NO_SENSITIVE_REASON
from .._schema_parts import INT, LABEL, NUM, STR, obj, section_schema
from .._sections import run_section, section, skipped
from ..text import as_float, fmt_count, fmt_label, fmt_pct
from . import has_release, not_run

__all__ = ["checks", "key_risk", "unreachable", "remedy_criteria", "sections", "targets",
           "classical_meaning", "SECTION_SCHEMAS"]

_K_QUESTION = "Does every group hide each person among enough others?"


def _k_check(k: int, params: dict, unit: str = "group") -> dict:
    """Check k-anonymity: the smallest group (or QI class) has at least ``min_size``."""
    return make_check("k_anonymity", "k-anonymity", _K_QUESTION,
                      k >= params["min_size"], k, f"k ≥ {params['min_size']}",
                      f"The smallest {unit} has {k} {'person' if k == 1 else 'people'} "
                      f"(required: at least {params['min_size']}).")


def _classes_checks(cl: dict, params: dict) -> list[dict]:
    """Return the checks without a sensitive column: k-anonymity of the QI classes."""
    if cl["status"] != "ok":
        return not_run("k_anonymity", "k-anonymity", _K_QUESTION, cl)
    return [_k_check(cl["k"], params, unit="class of identical quasi-identifiers")]


def checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """Return the classical models' verdict checks from the report's sections.

    Parameters
    ----------
    sec : dict
        The report's sections (``classical``, or ``classes`` without a sensitive column).
    params : dict
        The report's parameters (``min_size``, ``min_l``, ``max_t``, ``c_verdict``).
    sens : str or None
        The sensitive column's name (None without one).

    Returns
    -------
    list of dict
        k-anonymity, distinct and entropy ℓ-diversity, t-closeness, (α,k)-anonymity (k
        alone without a sensitive column; one ``classical`` check when the section did not
        run).

    """
    if not has_release(sec):
        return _classes_checks(sec["classes"], params)
    cl = sec["classical"]
    c_v = params["c_verdict"]
    if cl["status"] != "ok":
        return not_run("classical", "classical models",
                       f"How well do the groups hide each person's {sens}?", cl)
    m = cl["models"]
    k = m["k_anonymity"]["value"]
    ld = m["l_diversity"]["value"]
    el = m["entropy_l_diversity"]["value"]
    t = m["t_closeness"]["value"]
    a = m["alpha_k_anonymity"]["value"]
    min_l = params["min_l"]
    return [
        _k_check(k, params),
        make_check("l_diversity", "distinct ℓ-diversity",
                   f"Does every group contain several different values of {sens}?",
                   ld >= min_l, ld, f"ℓ ≥ {min_l}",
                   f"The least varied group has {ld} different value{'s' if ld != 1 else ''} "
                   f"of {sens} (required: at least {min_l})."),
        make_check("entropy_l_diversity", "entropy ℓ-diversity",
                   f"Are the values of {sens} spread evenly enough within every group?",
                   bool(el >= min_l - 1e-12), el, f"ℓ ≥ {min_l}",
                   f"The least even group is as varied as {el:.3g} equally common values "
                   f"(required: at least {min_l})."),
        make_check("t_closeness", "t-closeness",
                   f"Does every group's mix of {sens} resemble the whole table's?",
                   bool(t <= params["max_t"]), t, f"t ≤ {params['max_t']:g}",
                   f"The most unusual group differs from the overall mix by {t:.3g} (earth "
                   f"mover's distance; allowed: at most {params['max_t']:g})."),
        make_check("alpha_k_anonymity", "(α,k)-anonymity (α)",
                   f"Without any background knowledge, how sure can anyone be of a person's "
                   f"{sens}?", bool(a < c_v), a, f"α < {c_v:g}",
                   f"From the release alone, the best guess about a person is right with "
                   f"probability {fmt_pct(a)} (the largest share of one value in a group; "
                   f"must stay below {fmt_pct(c_v)})."),
    ]


def key_risk(sec: dict, by_id: dict, checks: list[dict], params: dict,
             sens: str | None) -> dict | None:
    """Return the knowledge-free disclosure of the worst group when (α,k)-anonymity fails."""
    alpha = by_id.get("alpha_k_anonymity")
    wg = sec["worst_groups"]
    if alpha is None or alpha["satisfied"] is not False or not wg["groups"]:
        return None
    g = wg["groups"][0]
    return {"model": "alpha_k_anonymity", "certainty": g["max_share"], "knowledge": "none",
            "text": (f"Without any background knowledge: {g['profile'][0]['count']:,} of "
                     f"the {fmt_count(g['size'], 'person', 'people')} of the group "
                     f"{g.get('described') or fmt_label(g['label'])} have {sens} = "
                     f"{fmt_label(g['top_value'])}, so anyone who knows a person is in that "
                     f"group learns it with {fmt_pct(g['max_share'])} certainty.")}


def unreachable(by_id: dict, sec: dict, params: dict) -> list[str]:
    """Return the ℓ and α thresholds that the whole table as one group misses."""
    whole = sec.get("whole_table")
    if not whole or whole.get("status") != "ok":
        return []
    out = []
    c_v = params["c_verdict"]
    if "l_diversity" in by_id and whole["l"] < params["min_l"]:
        out.append(f"distinct ℓ ≥ {params['min_l']} (the table has {whole['l']} values)")
    if "entropy_l_diversity" in by_id and whole["entropy_l"] < params["min_l"] - 1e-12:
        out.append(f"entropy ℓ ≥ {params['min_l']} (the table reaches "
                   f"{whole['entropy_l']:.3g})")
    if "alpha_k_anonymity" in by_id and whole["alpha"] >= c_v:
        out.append(f"α < {c_v:g} (the most common value is {fmt_pct(whole['alpha'])} of all "
                   "rows)")
    return out


def remedy_criteria(by_id: dict, params: dict) -> list[str]:
    """Return Mondrian's flags meeting the classical thresholds (``--min-size`` always)."""
    crit = ["--min-size", str(params["min_size"])]
    if "entropy_l_diversity" in by_id:
        crit += ["--min-l", str(params["min_l"]), "--l-kind", "entropy"]
    elif "l_diversity" in by_id:
        crit += ["--min-l", str(params["min_l"])]
    if "t_closeness" in by_id:
        crit += ["--max-t", f"{params['max_t']:g}"]
    if "alpha_k_anonymity" in by_id:
        crit += ["--c", f"{params['c_verdict']:g}", "--k", "0"]
    return crit


# ============================================================================ sections
# Pycanon's report vocabulary (its JSON report and its printed/PDF report) -> our model keys.
_PYCANON_NULL = {
    "enhanced_beta_likeness": (
        "not computed: fastpriv.classic has no enhanced β-likeness, and the two common "
        "readings disagree (Cao & Karras: every D(P_g(x), Q(x)) ≤ min(β, −ln Q(x)), which "
        "has no achieved β once some D exceeds −ln Q(x); pycanon: max_x min(max_g D, "
        "−ln Q(x))). basic_beta_likeness is reported."),
}


def _classical_section(rel: Any, l: int | None) -> dict:  # noqa: E741 - spec name
    from ... import classic

    l_used = int(l) if l is not None else max(int(rel.distinct.min()), 1)
    res = classic.audit(rel, l=l_used)
    m = res.models
    alpha, k = m["alpha_k_anonymity"]["value"], m["k_anonymity"]["value"]
    c_star = m["recursive_cl_diversity"]["value"]
    pycanon = {
        "k_anonymity": {"k": k},
        "(_alpha,_k)-anonymity": {"alpha": alpha, "k": k},
        "alpha_k_anonymity": {"alpha": alpha, "k": k},
        "l_diversity": {"l": m["l_diversity"]["value"]},
        "entropy_l_diversity": {"l": m["entropy_l_diversity"]["value"]},
        "(c,l)-diversity": {"c": c_star, "l": l_used},
        "recursive_c_l_diversity": {"c": c_star, "l": l_used},
        "basic_beta_likeness": {"beta": m["beta_likeness"]["value"]},
        "enhanced_beta_likeness": None,
        "delta_disclosure": {"delta": m["delta_disclosure"]["value"]},
        "t_closeness": {"t": m["t_closeness"]["value"]},
    }
    notes = {
        "(c,l)-diversity": "c is c*(ℓ) = max_g r_1 / (r_ℓ + … + r_m): the release is (c,ℓ)-"
                           "diverse for every c > c* (strict, Machanavajjhala et al.); ℓ is "
                           + ("the requested ℓ" if l is not None else
                              "the achieved distinct ℓ (pycanon's convention)"),
        "t_closeness": "equal ground distance (categorical values); t_closeness_ordered in "
                       "models uses the sorted value order",
        "delta_disclosure": "over the values present in each group (as pycanon); the strict "
                            "definition is infinite as soon as a group misses a value",
        **_PYCANON_NULL,
    }
    return section(l=l_used, l_source="requested" if l is not None else "achieved "
                   "distinct ℓ", models=m, pycanon=pycanon, notes=notes,
                   n_groups=res.n_groups, n_rows=res.n_rows, case=res.case)


def _whole_table_section(rel: Any, k: int, c_v: float) -> dict:
    """Audit the whole table as one group: the best any generalization can reach."""
    from ... import ck_safety as ck
    from ... import classic
    from ...release import Release

    totals = rel.value_totals
    one = Release.from_groups([{v: int(n) for v, n in zip(rel.values, totals.tolist(),
                                                          strict=True) if n > 0}])
    m = classic.audit(one, l=1).models
    disclosure = (float(ck.max_disclosure(one, k=k).value) if rel.case == "svpi" else 0.0)
    return section(l=int(m["l_diversity"]["value"]),
                   entropy_l=float(m["entropy_l_diversity"]["value"]),
                   alpha=float(m["alpha_k_anonymity"]["value"]), ck=disclosure)


def sections(ctx: Any) -> dict[str, dict]:
    """Return the sections ``classical`` and ``whole_table`` (the one-group audit).

    Parameters
    ----------
    ctx : object
        The report's context: ``rel`` (the release; None without a sensitive column) and
        ``o`` (the options: ``l``, ``k``, ``c_v``).

    Returns
    -------
    dict
        ``{"classical": section, "whole_table": section}`` (skipped without a release).

    """
    if ctx.rel is None:
        return {name: skipped(NO_SENSITIVE_REASON) for name in ("classical", "whole_table")}
    return {"classical": run_section(_classical_section, ctx.rel, ctx.o.l),
            "whole_table": run_section(_whole_table_section, ctx.rel, ctx.o.k, ctx.o.c_v)}


def targets(ctx: Any, sec: dict) -> list[dict]:
    """Return the worst group's people: known to be in it, their value is its top one."""
    wg = sec["worst_groups"]
    if wg["status"] != "ok" or not wg["groups"]:
        return []
    g = wg["groups"][0]
    return [dict(
        source="alpha_k_anonymity", row=None, rows=g["rows"], group=g["group"],
        group_label=g["label"], value=g["top_value"], certainty=g["max_share"],
        knowledge="none: the published release alone",
        why=(f"{g['profile'][0]['count']:,} of the "
             f"{fmt_count(g['size'], 'person', 'people')} of the group {g['described']} "
             f"have {ctx.rel.sensitive_name} = {fmt_label(g['top_value'])}, so anyone known "
             f"to be in this group has it with probability {fmt_pct(g['max_share'])}"))]


def classical_meaning(model: str, value: Any) -> str:
    """Say what a classical model's achieved value means for the worst group, in words.

    ``model`` is a key of :attr:`fastpriv.classic.AuditResult.models`; the formulas are
    those of :mod:`fastpriv.classic` (β-likeness: the largest relative gain
    (p_g − p)/p of a value's share over its share in the whole table; δ-disclosure: the
    largest |log(p_g / p)|).
    """
    v = as_float(value)
    if not math.isfinite(v):
        return "unbounded: a group's mix can be told apart from the whole table's"
    words = {
        "k_anonymity": lambda: f"smallest group: {fmt_count(int(v), 'person', 'people')}",
        "alpha_k_anonymity": lambda: f"best guess of a person's value right {fmt_pct(v)}",
        "l_diversity": lambda: f"{fmt_count(int(v), 'different value')} in the least varied "
                               "group",
        "entropy_l_diversity": lambda: f"least even group as varied as {v:.3g} equally "
                                       "common values",
        "recursive_cl_diversity": lambda: f"most common value {v:.3g}× the rarer ones together",
        "t_closeness": lambda: f"mix differs from the whole table's by {fmt_pct(v)} "
                               "(share of people to move)",
        "t_closeness_ordered": lambda: f"mix differs by {v:.3g} on the ordered scale "
                                       "(0 same, 1 opposite ends)",
        "beta_likeness": lambda: f"a value up to {1 + v:.3g}× as frequent as in the whole "
                                 "table",
        "delta_disclosure": lambda: f"a value's share up to {math.exp(v):.3g}× off its share "
                                    "in the whole table",
    }
    return words[model]() if model in words else ""


# ============================================================================ schema
_CLASSIC_MODEL = obj({"title": STR, "value": NUM, "worst_group": INT,
                       "worst_label": LABEL})


def _pycanon_entry(*keys: str) -> dict:
    """Describe a pycanon entry: an object of the achieved parameters ``keys``, or null."""
    return {"anyOf": [obj({k: NUM for k in keys}), {"type": "null"}]}


#: the JSON schema of the report section ``classical`` (:mod:`fastpriv.report.schema`)
SECTION_SCHEMAS: dict[str, dict] = {
    "classical": section_schema({
        "l": INT, "l_source": STR,
        "models": obj({key: _CLASSIC_MODEL for key in (
            "k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity",
            "recursive_cl_diversity", "t_closeness", "t_closeness_ordered", "beta_likeness",
            "delta_disclosure")}),
        "pycanon": obj({
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
        "notes": {"type": "object", "additionalProperties": STR}}),
}
