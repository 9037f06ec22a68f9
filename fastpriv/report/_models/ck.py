"""(c,k)-safety in the report: its verdict checks, key risk, reach and Mondrian criterion.

The section ``ck_safety`` holds the disclosure curves, the disclosure at the verdict's k
and the largest safe k of every confidence c; the functions below are what
:mod:`fastpriv.registry` declares for the model.
"""

from __future__ import annotations

from typing import Any

from ...registry import make_check
from .. import plots
from .._classes import NO_SENSITIVE_REASON
from .._markup import e, num, pct, skip, table
from .._schema_parts import BOOL, INT, LABEL, NUM, OBJ, STR, arr, obj, section_schema
from .._sections import run_section, section, skipped
from ..text import as_float, fmt_count, fmt_label, fmt_pct
from . import has_release, not_run

__all__ = ["checks", "key_risk", "unreachable", "remedy_criteria", "sections", "targets",
           "html", "SECTION_SCHEMAS"]


def checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """Return the checks of (c,k)-safety against implications and against negations.

    Parameters
    ----------
    sec : dict
        The report's sections (reads ``ck_safety``; none without a sensitive column).
    params : dict
        The report's parameters (``c_verdict``).
    sens : str or None
        The sensitive column's name.

    Returns
    -------
    list of dict
        ``ck_safety_implications`` and ``ck_safety_negations`` (one ``ck_safety`` check
        when the section did not run).

    """
    if not has_release(sec):
        return []
    ck = sec["ck_safety"]
    c_v = params["c_verdict"]
    if ck["status"] != "ok":
        return not_run("ck_safety", "(c,k)-safety",
                       f"Can an adversary who knows k facts about people become "
                       f"{fmt_pct(c_v)} sure of anyone's {sens}?", ck)
    k = ck["k"]
    out = []
    for kn, words in (("implications", f"knows {fmt_count(k, 'fact')} of the form “if A then "
                                       "B” about people"),
                      ("negations", f"can rule out {fmt_count(k, 'value')} for people")):
        v = as_float(ck["at_k"][kn]["value"])
        row = next(x for x in ck["max_safe_k"] if x["c"] == c_v)
        safe = bool(row[f"{kn}_is_safe_at_k"])
        ms = row[kn]
        more = ("" if ms is None and not safe else
                f" It stays safe up to k = {ms}." if ms is not None and ms < ck["k_max"]
                else f" It stays safe for every k ≤ {ck['k_max']} tested." if ms is not None
                else "")
        out.append(make_check(
            f"ck_safety_{kn}", f"(c,k)-safety, {kn}",
            f"Can an adversary who {words} become {fmt_pct(c_v)} sure of anyone's {sens}?",
            safe, v, f"max disclosure < {c_v:g} at k = {k}",
            f"An adversary who {words} can be as much as {fmt_pct(v)} sure of someone's "
            f"{sens} (must stay below {fmt_pct(c_v)}).{more}"))
    return out


def key_risk(sec: dict, by_id: dict, checks: list[dict], params: dict,
             sens: str | None) -> dict | None:
    """Return how few implications make the adversary c sure, when that is the key risk.

    Only when (c,k)-safety fails or nothing fails: "k + 1 facts suffice" is then the
    closest risk beyond the thresholds.
    """
    ck = sec["ck_safety"]
    c_v = params["c_verdict"]
    any_fails = any(c["satisfied"] is False for c in checks)
    ck_fails = any(c["satisfied"] is False for c in checks if c["id"].startswith("ck_safety"))
    if ck["status"] != "ok" or not (ck_fails or not any_fails):
        return None
    row = next(x for x in ck["max_safe_k"] if x["c"] == c_v)
    ms = row["implications"]
    first = 0 if ms is None else ms + 1
    if first > ck["k_max"] or (ms is not None and ms >= ck["k_max"]):
        return None
    curve = ck["curve"]["implications"]
    return {"model": "ck_safety_implications", "certainty": curve[first],
            "knowledge": f"{first} implications",
            "text": (f"An adversary who knows only {fmt_count(first, 'fact')} of the form "
                     f"“if A then B” about the "
                     f"people in this release can be {fmt_pct(curve[first])} sure of "
                     f"someone's {sens} (threshold {fmt_pct(c_v)}).")}


def _checked(by_id: dict) -> bool:
    return any(cid.startswith("ck_safety") for cid in by_id)


def unreachable(by_id: dict, sec: dict, params: dict) -> list[str]:
    """Return (c,k)-safety when one group holding the whole table is not safe either."""
    whole = sec.get("whole_table")
    if not whole or whole.get("status") != "ok" or not _checked(by_id):
        return []
    c_v = params["c_verdict"]
    if whole["ck"] < c_v:
        return []
    return [f"(c,k)-safety at k = {params['k']} (disclosure {fmt_pct(whole['ck'])} "
            f"with one group, must stay below {fmt_pct(c_v)})"]


def remedy_criteria(by_id: dict, params: dict) -> list[str]:
    """Return Mondrian's ``--c``/``--k`` meeting (c,k)-safety at the verdict's c and k."""
    if not _checked(by_id):
        return []
    return ["--c", f"{params['c_verdict']:g}", "--k", str(params["k"])]


# ============================================================================ sections
def _ck_section(rel: Any, k: int, k_max: int, cs: list[float]) -> dict:
    from ... import ck_safety as ck

    if rel.case != "svpi":
        return skipped("(c,k)-safety is defined for one sensitive value per individual "
                       f"(SVPI, Martin et al.); this release is {rel.case!r}")
    imp = ck.disclosure_curve(rel, k_max=k_max, knowledge_kind="implications")
    neg = ck.disclosure_curve(rel, k_max=k_max, knowledge_kind="negations")
    at_imp = ck.max_disclosure(rel, k=k, knowledge_kind="implications")
    at_neg = ck.max_disclosure(rel, k=k, knowledge_kind="negations")
    safe_k = []
    for c in cs:
        row = {"c": c}
        for kn in ("implications", "negations"):
            row[kn] = ck.max_safe_k(rel, c=c, knowledge_kind=kn, k_limit=k_max)
            row[f"{kn}_is_safe_at_k"] = ck.is_safe(rel, c=c, k=k, knowledge_kind=kn)
        safe_k.append(row)
    return section(
        k=k, k_max=k_max,
        curve={"k": list(range(k_max + 1)), "implications": imp.tolist(),
               "negations": neg.tolist()},
        at_k={"implications": at_imp.to_dict(), "negations": at_neg.to_dict()},
        witness_text={"implications": {"summary": at_imp.witness.summary(),
                                       "formulas": at_imp.witness.formulas()},
                      "negations": {"summary": at_neg.witness.summary(),
                                    "formulas": at_neg.witness.formulas()}},
        max_safe_k=safe_k,
        saturation_k=max(int(rel.distinct.min()) - 1, 0))


def sections(ctx: Any) -> dict[str, dict]:
    """Return the section ``ck_safety``: disclosure curves, the verdict's k, safe k per c.

    Parameters
    ----------
    ctx : object
        The report's context: ``rel`` (None without a sensitive column) and ``o`` (the
        options: ``k``, ``k_max``, ``cs``).

    Returns
    -------
    dict
        ``{"ck_safety": section}``.

    """
    if ctx.rel is None:
        return {"ck_safety": skipped(NO_SENSITIVE_REASON)}
    return {"ck_safety": run_section(_ck_section, ctx.rel, ctx.o.k, ctx.o.k_max, ctx.o.cs)}


def targets(ctx: Any, sec: dict) -> list[dict]:
    """Return the person of each witness: the consequent of the adversary's knowledge."""
    ck = sec["ck_safety"]
    if ck["status"] != "ok":
        return []
    out = []
    for kn in ("implications", "negations"):
        r = ck["at_k"][kn]
        w = r["witness"]
        a = w["consequent"]
        what = ("basic implications (statements “if A then B” about people)"
                if kn == "implications" else "negated atoms (“person p does not have "
                "value v”)")
        out.append(dict(
            source=f"ck_safety_{kn}", row=a["row"], group=a["group"],
            group_label=a["group_label"], value=a["value"], certainty=as_float(r["value"]),
            knowledge=f"{len(w['antecedents'])} {what} (k = {r['k']})",
            why=("with the knowledge "
                 + ("; ".join(ck["witness_text"][kn]["formulas"]) or "(none)")
                 + f", the adversary is {fmt_pct(as_float(r['value']))} sure that this "
                 f"person has {ctx.rel.sensitive_name} = {fmt_label(a['value'])}")))
    return out


def html(d: dict) -> str:
    """Render the (c,k)-safety section of the report payload ``d`` as HTML.

    The disclosure curves against k, the largest safe k per threshold, the worst case of
    each kind of knowledge with its statements, and the curve's values.
    """
    s = d["ck_safety"]
    head = ("<h2 id='ck'>How much can an adversary learn from k facts? ((c,k)-safety)</h2>"
            "<p>Martin et al. (2007): the adversary knows k facts about the people in the "
            "release — either <i>basic implications</i> (“if Ann has flu then Bob has flu”; "
            "any fact can be written this way) or <i>negated atoms</i> (“Bob does not have "
            "cancer”). The curve shows the highest certainty he can reach about anyone, for "
            "each amount of knowledge. The release is (c,k)-safe when it stays below c.</p>")
    if s.get("status") != "ok":
        return head + skip(s)
    c_v = d["verdict"]["threshold_c"]
    svg = plots.line_chart(
        [{"name": "basic implications", "x": s["curve"]["k"],
          "y": [num(y) for y in s["curve"]["implications"]]},
         {"name": "negated atoms", "x": s["curve"]["k"],
          "y": [num(y) for y in s["curve"]["negations"]], "dash": True}],
        title="Maximum disclosure vs. amount of background knowledge",
        xlabel="k = pieces of background knowledge", ylabel="maximum disclosure",
        y_range=(0, 1.05), hline=(c_v, f"threshold c = {c_v:g}"),
        desc="Maximum disclosure for k = 0.." + str(s["k_max"]) + " against implications "
             "and negated atoms", css_class="chart disclosure-curve")
    rows = [[k, s["curve"]["implications"][i], s["curve"]["negations"][i]]
            for i, k in enumerate(s["curve"]["k"])]
    safe_rows = []
    for row in s["max_safe_k"]:
        def word(x: Any) -> str:
            if x is None:
                return "not even with k = 0"
            return (f"any k ≤ {x} (tested up to {s['k_max']})" if x >= s["k_max"]
                    else f"k ≤ {x}")
        safe_rows.append([pct(row["c"]), word(row["implications"]),
                          word(row["negations"])])
    wit = []
    for kn in ("implications", "negations"):
        r = s["at_k"][kn]
        w = s["witness_text"][kn]
        forms = "".join(f"<li><code>{e(f)}</code></li>" for f in w["formulas"][:30])
        more = (f"<li>… {len(w['formulas']) - 30} more</li>" if len(w["formulas"]) > 30
                else "")
        a = r["witness"]["consequent"]
        people = {(x["group"], x["person"]) for x in r["witness"]["antecedents"]}
        who = (f"person {a['person']} of group <b>{e(a['group_label'])}</b>"
               + (f" (row {a['row']})" if a.get("row") is not None else ""))
        n_st = len(r["witness"]["antecedents"])
        knows = ("The adversary needs no knowledge at all: the release alone gives this."
                 if n_st == 0 else
                 f"The adversary's knowledge is {fmt_count(n_st, 'statement')} about "
                 f"{fmt_count(len(people), 'person', 'people')} in "
                 f"{fmt_count(len(r['witness']['groups']), 'group')}.")
        wit.append(f"<h3>Worst case with k = {s['k']} {e(kn)}: {pct(r['value'])}</h3>"
                   f"<p>Target: {who}, value <b>{e(a['value'])}</b>. {knows} "
                   "People within a group are interchangeable: any member can play each "
                   "role.</p>"
                   + (f"<details><summary>The adversary's knowledge "
                      f"({len(w['formulas'])} statements)</summary><ul>{forms}{more}</ul>"
                      "</details>" if forms else ""))
    sat = s["saturation_k"]
    reach = ("Disclosure is 1 already without knowledge (k = 0): some group holds one value "
             "only." if sat == 0 else
             f"Disclosure reaches 1 at k = {sat} at the latest (one person, every value of "
             "the least varied group ruled out).")
    return (head + f"<figure>{svg}<figcaption>{reach}</figcaption></figure>"
            + "<h3>Largest amount of knowledge the release withstands</h3>"
            + table(["threshold c", "implications", "negated atoms"], safe_rows)
            + "".join(wit)
            + "<details><summary>Disclosure curve values</summary>"
            + table(["k", "implications", "negated atoms"], rows, num={0, 1, 2})
            + "</details>")


# ============================================================================ schema
_ATOM = obj({"group": INT, "group_label": LABEL, "person": INT, "value": LABEL,
              "row": {"type": ["integer", "null"]}})
_DISCLOSURE = obj({"model": {"const": "ck_safety"},
                    "knowledge_kind": {"enum": ["implications", "negations"]}, "k": INT,
                    "value": NUM, "min_ratio": NUM, "exact": BOOL,
                    "witness": obj({"knowledge_kind": STR, "consequent": _ATOM,
                                     "antecedents": arr(_ATOM), "groups": arr(INT),
                                     "group_labels": arr(LABEL),
                                     "formulas": arr(STR)})})

#: the JSON schema of the report section ``ck_safety`` (:mod:`fastpriv.report.schema`)
SECTION_SCHEMAS: dict[str, dict] = {
    "ck_safety": section_schema({
        "k": INT, "k_max": INT,
        "curve": obj({"k": arr(INT), "implications": arr(NUM),
                       "negations": arr(NUM)}),
        "at_k": obj({"implications": _DISCLOSURE, "negations": _DISCLOSURE}),
        "witness_text": OBJ,
        "max_safe_k": arr(obj({"c": NUM,
                                 "implications": {"type": ["integer", "null"]},
                                 "negations": {"type": ["integer", "null"]},
                                 "implications_is_safe_at_k": BOOL,
                                 "negations_is_safe_at_k": BOOL})),
        "saturation_k": INT}),
}
