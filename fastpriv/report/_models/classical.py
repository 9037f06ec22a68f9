"""The classical models in the report: k-anonymity, ℓ-diversity, t-closeness, (α,k)-anonymity.

Their numbers are one section, ``classical`` (:func:`fastpriv.classic.audit`), or — without
a sensitive column — the QI classes (section ``classes``, k-anonymity alone). The functions
below are what :mod:`fastpriv.registry` declares for these models: their verdict checks,
the key risk of (α,k)-anonymity, the thresholds no generalization reaches and Mondrian's
criterion flags.
"""

from __future__ import annotations

from ...registry import make_check
from ..text import fmt_count, fmt_label, fmt_pct
from . import has_release, not_run

__all__ = ["checks", "key_risk", "unreachable", "remedy_criteria"]

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
