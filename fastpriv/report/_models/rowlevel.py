"""The row-level models in the report: r-robustness and the foreground-knowledge attack.

Both read the rows (sections ``robustness`` and ``foreground``: the audit's or the
attack's ``to_dict()``); the functions below are what :mod:`fastpriv.registry` declares
for them: their verdict checks, their key risks and their remedy (ART's ``--r``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...registry import make_check
from .._classes import NO_SENSITIVE_REASON
from .._markup import e, fmt, pct, skip, table
from .._schema_parts import BOOL, INT, NUM, NUM_OR_NULL, OBJ, STR, arr, obj, section_schema
from .._sections import row_level_reason, run_section, section, skipped
from ..text import fmt_label, fmt_pct
from . import has_release, not_run, plain_risk

__all__ = ["robustness_checks", "foreground_checks", "robustness_key_risk",
           "foreground_key_risk", "remedy", "robustness_sections", "foreground_sections",
           "robustness_targets", "foreground_targets", "html", "ROBUSTNESS_SCHEMAS",
           "FOREGROUND_SCHEMAS"]


def robustness_checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """Return the r-robustness check: no posterior above 1/r (none without a sensitive column).

    Parameters
    ----------
    sec : dict
        The report's sections (reads ``robustness``).
    params : dict
        The report's parameters (``r``).
    sens : str or None
        The sensitive column's name.

    Returns
    -------
    list of dict
        One ``robustness`` check.

    """
    if not has_release(sec):
        return []
    r = params.get("r")
    rb = sec["robustness"]
    q = f"Can statistics linking quasi-identifiers to {sens} single anyone out?"
    if rb["status"] != "ok":
        return not_run("robustness", "r-robustness", q, rb)
    d = rb["result"]
    return [make_check(
        "robustness", "r-robustness", q, bool(d["robust"]), d["value"],
        f"posterior ≤ 1/r = {1 / r:.4g}",
        f"With accurate statistics of this kind the adversary can be as much as "
        f"{fmt_pct(d['value'])} sure of someone's {sens} (allowed: {fmt_pct(1 / r)}); "
        f"{d['n_problematic_rows']:,} of {d['n_rows']:,} people exceed it.")]


def foreground_checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """Return the foreground attack's check: nobody singled out above 1/r.

    Parameters
    ----------
    sec : dict
        The report's sections (reads ``foreground``).
    params : dict
        The report's parameters (``r``).
    sens : str or None
        The sensitive column's name.

    Returns
    -------
    list of dict
        One ``foreground`` check.

    """
    if not has_release(sec):
        return []
    r = params.get("r")
    fg = sec["foreground"]
    q = "Can patterns mined from the release itself single anyone out?"
    if fg["status"] != "ok":
        return not_run("foreground", "foreground-knowledge attack", q, fg)
    d = fg["result"]
    mp = d["max_posterior"] or 0.0
    return [make_check(
        "foreground", "foreground-knowledge attack", q, d["n_problematic"] == 0, mp,
        f"posterior ≤ 1/r = {1 / r:.4g}",
        f"Using only patterns learned from this release, the adversary can be as much as "
        f"{fmt_pct(mp)} sure of someone's {sens}; {d['n_problematic']:,} of "
        f"{d['n_rows']:,} people exceed {fmt_pct(1 / r)}.")]


def foreground_key_risk(sec: dict, by_id: dict, checks: list[dict], params: dict,
                        sens: str | None) -> dict | None:
    """Return the attack's worst person when the foreground attack succeeds."""
    fg = by_id.get("foreground")
    if not fg or fg["satisfied"] is not False:
        return None
    d = sec["foreground"]["result"]
    w = d["worst"][0] if d["worst"] else {}
    return {"model": "foreground", "certainty": d["max_posterior"],
            "knowledge": "patterns mined from the release itself",
            "text": (f"Patterns mined from the release itself single out "
                     f"{d['n_problematic']:,} of {d['n_rows']:,} people: the worst (row "
                     f"{w.get('row')}) is linked to {sens} = {fmt_label(w.get('value'))} "
                     f"with probability {fmt_pct(d['max_posterior'])}.")}


def robustness_key_risk(sec: dict, by_id: dict, checks: list[dict], params: dict,
                        sens: str | None) -> dict | None:
    """Return r-robustness's sentence when it fails."""
    return plain_risk(by_id.get("robustness"))


def remedy(params: dict, *, unreachable: bool, generalize: Callable[[], str],
           command: Callable[[str, list[str]], str]) -> str | None:
    """Return ART's command at the verdict's r (None without an r)."""
    if not params.get("r"):
        return None
    return command("art", ["--r", f"{params['r']:g}"])


# ============================================================================ sections
def _rows(ctx: Any) -> dict:
    """Return how the row-level models read the rows (the release's row view, or the table).

    The release's row view names input rows and shares its null policy; without one (no qi
    given) the row-level models read the table.
    """
    rel, inp, o = ctx.rel, ctx.inp, ctx.o
    data, reading = (rel, {}) if rel.rows is not None else (
        inp.table, {"sensitive": inp.sensitive, "group": o.group, "nulls": o.nulls})
    return {"data": data, "reading": reading, "qi": o.qi, "r": o.r,
            "sensitive_values": o.sensitive_values, "max_set_size": o.max_set_size,
            "top": o.top}


def _robustness_section(*, data: Any, reading: dict, qi: list | None, r: float,
                        knowledge: Any, sensitive_values: list | None, max_set_size: int,
                        top: int) -> dict:
    from ... import robustness as rb

    res = rb.audit(data, qi=qi, r=r, knowledge=knowledge, sensitive_values=sensitive_values,
                   max_set_size=max_set_size if knowledge is None else None, **reading)
    d = res.to_dict(max_items=top)
    return section(result=d, summary=res.summary())


def _foreground_section(*, data: Any, reading: dict, qi: list, r: float,
                        sensitive_values: list | None, max_set_size: int, top: int) -> dict:
    from ... import foreground as fg

    group = reading.get("group", [None])
    n_keys = data.groups.num_columns if not reading else len(group)
    if n_keys != 1:
        return skipped("the foreground attack reads one group-id column; this release "
                       f"has {n_keys}")
    if reading:
        reading = {**reading, "group": group[0]}
    res = fg.attack(data, qi=qi, r=r, sensitive_values=sensitive_values,
                    max_set_size=max_set_size, **reading)
    d = res.to_dict(max_items=top)
    return section(result=d, summary=res.summary())


def robustness_sections(ctx: Any) -> dict[str, dict]:
    """Return the section ``robustness`` (skipped when switched off or the rows are missing).

    Parameters
    ----------
    ctx : object
        The report's context: ``rel``, ``inp`` (the loaded input), ``o`` (the options),
        ``knowledge`` (a Knowledge, a path read with ``knowledge_fallback``, or None: derived
        from the data).

    Returns
    -------
    dict
        ``{"robustness": section}``.

    """
    if ctx.rel is None:
        return {"robustness": skipped(NO_SENSITIVE_REASON)}
    reason = row_level_reason(ctx, "r-robustness", needs_qi=ctx.knowledge is None)
    if not ctx.o.robustness:
        return {"robustness": skipped("disabled (robustness=False / --no-robustness)")}
    if reason:
        return {"robustness": skipped(reason)}
    kn = ctx.knowledge
    if isinstance(kn, (str, os.PathLike)):
        from ...knowledge import Knowledge

        kn = Knowledge.from_table(kn, set_column="attributes",
                                  fallback=ctx.knowledge_fallback, model=None)
    return {"robustness": run_section(_robustness_section, knowledge=kn, **_rows(ctx))}


def foreground_sections(ctx: Any) -> dict[str, dict]:
    """Return the section ``foreground`` (skipped when switched off or the rows are missing).

    Parameters
    ----------
    ctx : object
        The report's context: ``rel``, ``inp`` (the loaded input), ``o`` (the options).

    Returns
    -------
    dict
        ``{"foreground": section}``.

    """
    if ctx.rel is None:
        return {"foreground": skipped(NO_SENSITIVE_REASON)}
    reason = row_level_reason(ctx, "the foreground attack", needs_qi=True)
    if not ctx.o.attack:
        return {"foreground": skipped("disabled (attack=False / --no-attack)")}
    if reason:
        return {"foreground": skipped(reason)}
    return {"foreground": run_section(_foreground_section, **_rows(ctx))}


def robustness_targets(ctx: Any, sec: dict) -> list[dict]:
    """Return the witness of r-robustness: the person whose signature gives the value away."""
    rb = sec["robustness"]
    if rb["status"] != "ok" or not rb["result"].get("witness"):
        return []
    sens = ctx.rel.sensitive_name
    w = rb["result"]["witness"]
    return [dict(source="robustness", row=w["row"], group=None, group_label=w["group"],
                 value=w["value"], certainty=float(w["posterior"]),
                 knowledge=("QI-based statistics p(signature : value) on "
                            f"{', '.join(w['attribute_set'])}"),
                 why=(f"this person's {', '.join(w['attribute_set'])} = "
                      f"{', '.join(map(fmt_label, w['signature']))} makes {sens} = "
                      f"{fmt_label(w['value'])} "
                      f"{fmt_pct(w['posterior'])} likely ({w['n_x']} of the {w['group_size']} "
                      f"people of the group have it)"))]


def foreground_targets(ctx: Any, sec: dict) -> list[dict]:
    """Return the attack's problematic people (the five worst)."""
    fg = sec["foreground"]
    if fg["status"] != "ok":
        return []
    sens = ctx.rel.sensitive_name
    out = []
    for w in fg["result"]["worst"][:5]:
        if not w.get("problematic"):
            continue
        aset = w.get("attribute_set")
        out.append(dict(
            source="foreground", row=w["row"], group=None, group_label=w["group"],
            value=w.get("value"), certainty=float(w["posterior"]),
            knowledge=("patterns mined from the release itself"
                       + (f" on {', '.join(aset)}" if aset else "")),
            why=(f"the release's own statistics make {sens} = {fmt_label(w.get('value'))} "
                 f"{fmt_pct(w['posterior'])} likely for this person")))
    return out


def html(d: dict) -> str:
    """Render the section of the attacks with statistics (r-robustness, foreground) as HTML.

    ``d`` is the report payload; the two models share the section (one call).
    """
    rb, fg = d["robustness"], d["foreground"]
    sens = d["parameters"]["sensitive"]
    out = ["<h2 id='stats'>Attacks with statistics (r-robustness, foreground knowledge)</h2>",
           "<p>Wong et al.: the adversary knows everyone's quasi-identifiers and statistics "
           f"such as “30% of people with these quasi-identifiers have this {e(sens)}”. With "
           "them, some people in a group become more likely than others to hold a value. "
           "<i>r-robustness</i> uses accurate statistics of the original data (the worst "
           "case); the <i>foreground attack</i> learns them from the release itself.</p>",
           "<h3>r-robustness</h3>"]
    if rb.get("status") != "ok":
        out.append(skip(rb))
    else:
        r = rb["result"]
        out.append(f"<p>{'Robust' if r['robust'] else 'Not robust'}: the highest posterior "
                   f"is <b>{pct(r['value'])}</b> (threshold 1/r = {pct(r['threshold'])}); "
                   f"{fmt(r['n_problematic_rows'])} of {fmt(r['n_rows'])} people exceed it. "
                   f"Statistics on {len(r['attribute_sets'])} attribute sets were used.</p>")
        rows = [[w["row"], ", ".join(w["attribute_set"]), w["value"], pct(w["posterior"])]
                for w in r["problematic"][:d["parameters"]["top"]]]
        if rows:
            out.append(table(["row", "statistics on", "value", "posterior"], rows,
                              num={0, 3}))
    out.append("<h3>Foreground-knowledge attack</h3>")
    if fg.get("status") != "ok":
        out.append(skip(fg))
    else:
        r = fg["result"]
        mined = r["mined"]
        out.append(f"<p>Mining the release found {len(mined.get('attribute_sets', []))} "
                   "attribute sets with reliable patterns; "
                   f"<b>{fmt(r['n_problematic'])}</b> of {fmt(r['n_rows'])} people are "
                   f"linked to a value with probability above {pct(r['threshold'])} (highest:"
                   f" {pct(r['max_posterior'] if r['max_posterior'] is not None else 0)}).</p>")
        weighted = any("people" in w for w in r["worst"])   # a row stands for `people`
        rows = [[w["row"], *([w.get("people", 1)] if weighted else []), w["group"],
                 ", ".join(w.get("attribute_set") or []) or "–", w.get("value", "–"),
                 pct(w["posterior"])] for w in r["worst"]]
        if rows:
            out.append(table(["row", *(["people"] if weighted else []), "group",
                               "patterns on", "value", "posterior"], rows,
                              num={0, 1, 5} if weighted else {0, 4}))
    return "".join(out)


# ============================================================================ schema
#: the JSON schema of the report section ``robustness`` (:mod:`fastpriv.report.schema`)
ROBUSTNESS_SCHEMAS: dict[str, dict] = {
    "robustness": section_schema({
        "result": obj({"model": STR, "r": NUM, "threshold": NUM, "value": NUM,
                        "robust": BOOL, "complete": BOOL,
                        "witness": {"type": ["object", "null"]}, "n_rows": INT,
                        "n_groups": INT, "attribute_sets": arr(arr(STR)),
                        "n_problematic": INT, "n_problematic_rows": INT,
                        "problematic": arr(OBJ), "groups": OBJ}),
        "summary": STR}),
}

#: the JSON schema of the report section ``foreground``
FOREGROUND_SCHEMAS: dict[str, dict] = {
    "foreground": section_schema({
        "result": obj({"r": NUM, "threshold": NUM, "n_rows": INT,
                        "n_problematic": INT, "max_posterior": NUM_OR_NULL,
                        "mined": OBJ, "worst": arr(OBJ)}),
        "summary": STR}),
}
