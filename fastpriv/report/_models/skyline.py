"""The privacy skyline in the report: its verdict check, key risk and remedy.

The section ``skyline`` holds the basic 3D check at the verdict's point (ℓ, k, m), the
breach probability of the most exposed value and the knowledge skylines; the functions
below are what :mod:`fastpriv.registry` declares for the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...registry import make_check
from .. import plots
from .._classes import NO_SENSITIVE_REASON
from .._markup import e, fmt, num, pct, plain, skip, table
from .._schema_parts import BOOL, INT, LABEL, NUM, OBJ, STR, STR_OR_NULL, arr, obj, section_schema
from .._sections import ROWS_PER_GROUP, run_section, section, skipped
from ..text import as_float, fmt_count, fmt_label, fmt_pct
from . import has_release, not_run

__all__ = ["checks", "key_risk", "remedy", "sections", "targets", "MAX_SKYLINE_VALUES",
           "PLOTTED_SKYLINES", "html", "SECTION_SCHEMAS"]


def checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """Return the skyline check: BP < c at the verdict's (ℓ, k, m) for every value.

    Parameters
    ----------
    sec : dict
        The report's sections (reads ``skyline``; none without a sensitive column).
    params : dict
        The report's parameters (``c_verdict``).
    sens : str or None
        The sensitive column's name.

    Returns
    -------
    list of dict
        One ``skyline`` check.

    """
    if not has_release(sec):
        return []
    sky = sec["skyline"]
    c_v = params["c_verdict"]
    if sky["status"] != "ok":
        return not_run("skyline", "privacy skyline",
                       "Can an adversary with (ℓ, k, m) knowledge about the target, other "
                       f"people and relatives become {fmt_pct(c_v)} sure?", sky)
    ell, k, m = sky["point"]
    bp = max((as_float(p["value"]) for p in sky["check"]["points"]), default=0.0)
    return [make_check(
        "skyline", "privacy skyline (basic 3D criterion)",
        f"Can an adversary who knows {fmt_count(ell, 'value')} the target does not have, the "
        f"values of {fmt_count(k, 'other person', 'other people')} and "
        f"{fmt_count(m, 'person', 'people')} sharing the target's value become "
        f"{fmt_pct(c_v)} sure?",
        bool(sky["check"]["safe"]), bp, f"BP < {c_v:g} at (ℓ,k,m) = ({ell},{k},{m}) for "
        "every value",
        f"Such an adversary can be as much as {fmt_pct(bp)} sure of someone's {sens} "
        f"(must stay below {fmt_pct(c_v)}).")]


def key_risk(sec: dict, by_id: dict, checks: list[dict], params: dict,
             sens: str | None) -> dict | None:
    """Return the most exposed value's breach when the skyline check fails."""
    sk = by_id.get("skyline")
    if not sk or sk["satisfied"] is not False:
        return None
    b = sec["skyline"]["worst"]
    return {"model": "skyline", "certainty": as_float(b["value"]),
            "knowledge": f"(ℓ, k, m) = ({b['l']}, {b['k']}, {b['m']})",
            "text": sk["plain"] + f" The most exposed value is {fmt_label(b['sigma'])}."}


def remedy(params: dict, *, unreachable: bool, generalize: Callable[[], str],
           command: Callable[[str, list[str]], str]) -> str | None:
    """Return SkylineAnonymize's command at the verdict's point, or why no release passes.

    When a threshold is out of reach of every generalization, SkylineAnonymize's release
    would miss it too: the sentence saying why (``generalize()``) instead.
    """
    if unreachable:
        return generalize()
    ell, k, m = params["point"]
    return command("skyline", ["--skyline", f"*:{ell},{k},{m},{params['c_verdict']:g}"])


# ============================================================================ sections
#: Default cap on the number of sensitive values whose knowledge skyline is computed
#: (the most exposed ones first) when ``sigma`` is not given.
MAX_SKYLINE_VALUES = 24
#: Number of values whose skyline is plotted (the most exposed ones).
PLOTTED_SKYLINES = 4


def _skyline_section(rel: Any, sigma: list | None, cs: list[float],
                     point: tuple[int, int, int], c_v: float) -> dict:
    from ... import skyline as sk

    ell, k, m = point
    check = sk.check(rel, skylines={"*": [(ell, k, m, c_v)]})
    per_value = sorted(check.points, key=lambda p: (-float(p.value), str(p.sigma)))
    if sigma is None:
        chosen = [p.sigma for p in per_value[:MAX_SKYLINE_VALUES]]
        selection = ("every sensitive value" if rel.n_values <= MAX_SKYLINE_VALUES else
                     f"the {MAX_SKYLINE_VALUES} values with the highest breach probability at "
                     f"(ℓ, k, m) = {point} (of {rel.n_values})")
    else:
        chosen = []
        for v in sigma:
            rel.code_of(v, param="sigma")
            if v not in chosen:
                chosen.append(v)
        selection = "the requested values"
    worst = per_value[0] if per_value else None
    worst_bp = None
    if worst is not None:
        worst_bp = sk.breach_probability(rel, sigma=worst.sigma, l=ell, k=k, m=m).to_dict()
    # one time budget for all of them; the values chosen here stop at it, requested ones fail
    found, chosen, stopped = sk.knowledge_skylines_within(rel, sigmas=chosen, cs=cs,
                                                          partial=sigma is None)
    skylines = [x.to_dict() for x in found]
    if stopped:
        selection += f"; {stopped}"
    rank = {p.sigma: i for i, p in enumerate(per_value)}
    plotted = sorted(chosen, key=lambda v: rank.get(v, 1 << 30))[:PLOTTED_SKYLINES]
    return section(
        point=list(point), c=c_v, confidences=cs, sigma_selection=selection,
        sigmas=chosen, plotted=plotted,
        check={"safe": check.safe, "n_violations": len(check.violations),
               "n_values": len(per_value),
               "points": [p.to_dict() for p in per_value[:100]]},
        worst=worst_bp, skylines=skylines)


def sections(ctx: Any) -> dict[str, dict]:
    """Return the section ``skyline``: the verdict's 3D check and the knowledge skylines.

    Parameters
    ----------
    ctx : object
        The report's context: ``rel`` (None without a sensitive column), ``o`` (the
        options: ``sigma``, ``cs``, ``point``, ``c_v``) and ``knowledge_skylines`` (False:
        the check alone, no skyline).

    Returns
    -------
    dict
        ``{"skyline": section}``.

    """
    if ctx.rel is None:
        return {"skyline": skipped(NO_SENSITIVE_REASON)}
    o = ctx.o
    return {"skyline": run_section(_skyline_section, ctx.rel,
                                   o.sigma if ctx.knowledge_skylines else [], o.cs, o.point,
                                   o.c_v)}


def targets(ctx: Any, sec: dict) -> list[dict]:
    """Return the most exposed group of the worst breach, with the knowledge it takes."""
    sky = sec["skyline"]
    if sky["status"] != "ok" or not sky.get("worst") or not sky["worst"].get("witness"):
        return []
    rel = ctx.rel
    b = sky["worst"]
    w = b["witness"]
    t = int(w["t_group"])
    rows = None
    if rel.row_group is not None:
        rows = [int(x) for x in rel.rows_of_group(t)[:ROWS_PER_GROUP]]
    parts = []
    if w["x_values"]:
        lacks = ", ".join(map(fmt_label, w["x_values"]))
        parts.append(f"that the target does not have {lacks}")
    if w["n_u"]:
        ys = (f" ({', '.join(map(fmt_label, w['y_values']))})" if w.get("y_values") else "")
        parts.append(f"the values of {fmt_count(w['n_u'], 'other person', 'other people')}"
                     f" of group {fmt_label(w['group_labels'].get('u'))}{ys}")
    if w["n_v"]:
        parts.append(f"{fmt_count(w['n_v'], 'member')} of the target's same-value family "
                     f"in group {fmt_label(w['group_labels'].get('v'))}")
    return [dict(source="skyline", row=None, rows=rows, group=t,
                 group_label=w["group_labels"]["t"], value=b["sigma"],
                 certainty=as_float(b["value"]),
                 knowledge=f"(ℓ, k, m) = ({b['l']}, {b['k']}, {b['m']})",
                 why=("knowing " + ("; ".join(parts) if parts else "nothing beyond the release")
                      + f", the adversary is {fmt_pct(as_float(b['value']))} sure that any "
                      f"person of this group has {rel.sensitive_name} = "
                      f"{fmt_label(b['sigma'])}"))]


def html(d: dict) -> str:
    """Render the privacy skyline section of the report payload ``d`` as HTML.

    The breach probability of each value at the verdict's (ℓ, k, m), the most exposed
    value's witness and the knowledge skylines (charts and points).
    """
    s = d["skyline"]
    sens = d["parameters"]["sensitive"]
    head = ("<h2 id='skyline'>Knowledge in three dimensions (privacy skyline)</h2>"
            "<p>Chen et al. (2007): to learn whether a target has a value σ, the adversary "
            "may know ℓ values the target does <i>not</i> have, the values of k other people, "
            "and m people who have σ if the target has it (a “same-value family”, e.g. "
            "relatives with a hereditary illness). The <i>breach probability</i> is the "
            "highest certainty such an adversary can reach.</p>")
    if s.get("status") != "ok":
        return head + skip(s)
    ell, k, m = s["point"]
    pts = s["check"]["points"]
    bars = plots.bar_chart(
        [p["sigma"] for p in pts[:30]], [num(p["value"]) for p in pts[:30]],
        title=f"Breach probability at (ℓ, k, m) = ({ell}, {k}, {m}) per value",
        xlabel="breach probability", x_max=1.0, threshold=(s["c"], f"c = {s['c']:g}"),
        desc="breach probability of each sensitive value", css_class="chart bp-bars")
    more = (f'<p class="note">The {len(pts[:30])} most exposed of {s["check"]["n_values"]} '
            "values are shown.</p>" if s["check"]["n_values"] > 30 else "")
    w = s.get("worst")
    worst = ""
    if w and w.get("witness"):
        wt = w["witness"]
        gl = wt["group_labels"]
        bits = [f"the target is any person of group <b>{e(gl.get('t'))}</b>"]
        if wt["x_values"]:
            bits.append(f"the adversary knows the target does not have {e(wt['x_values'])}")
        if wt["n_u"]:
            ys = f" ({e(wt['y_values'])})" if wt.get("y_values") else ""
            bits.append(f"knows the values of {wt['n_u']} other people of group "
                        f"<b>{e(gl.get('u'))}</b>{ys}")
        if wt["n_v"]:
            bits.append(f"knows {wt['n_v']} members of the target's same-value family in "
                        f"group <b>{e(gl.get('v'))}</b>")
        worst = (f"<h3>Most exposed value: {e(w['sigma'])} ({pct(w['value'])})</h3><p>"
                 + "; ".join(bits) + ".</p>")
    figs = []
    by = {}
    for sk in s["skylines"]:
        by.setdefault(_key(sk["sigma"]), []).append(sk)
    for v in s["plotted"]:
        for sk in by.get(_key(v), []):
            svg = plots.skyline_slices(
                sk["points"], title=f"{plain(v)} at c = {fmt(sk['c'])}",
                desc=f"knowledge skyline of {plain(v)} at confidence {fmt(sk['c'])}")
            figs.append(f"<figure>{svg}</figure>")
    rows = []
    for sk in s["skylines"]:
        text = (", ".join("(" + ", ".join(fmt(x) for x in p) + ")" for p in sk["points"])
                or "none: unsafe even without background knowledge")
        rows.append([sk["sigma"], pct(sk["c"]), text])
    return (head + f"<figure>{bars}</figure>" + more + worst
            + "<h3>Knowledge skylines</h3><p>The skyline lists the largest amounts of "
              f"knowledge (ℓ, k, m) under which nobody's {e(sens)} can be inferred with "
              "confidence c; any smaller amount is safe too, ∞ means “any amount”. Each "
              "chart shows, for every ℓ, the safe region of (k, m) as a staircase.</p>"
            + f'<div class="charts">{"".join(figs)}</div>'
            + f'<p class="note">Values: {e(s["sigma_selection"])}.</p>'
            + table(["value σ", "confidence c", "skyline points (ℓ, k, m)"], rows))


def _key(v: Any) -> str:
    return repr(v)


# ============================================================================ schema
_SKYLINE = obj({"sigma": LABEL, "c": NUM, "caps": arr(INT), "exact": BOOL,
                 "evaluations": INT,
                 "points": arr(arr(NUM, minItems=3, maxItems=3))})

_BREACH = obj({"sigma": LABEL, "l": INT, "k": INT, "m": INT, "case": STR,
                "exact": BOOL, "value": NUM, "min_nr": NUM, "statistics": OBJ,
                "case_used": STR_OR_NULL,
                "witness": {"anyOf": [obj({"t_group": INT, "x_values": arr(LABEL),
                                            "u_group": {"type": ["integer", "null"]},
                                            "n_u": INT, "v_group": {"type": ["integer",
                                                                              "null"]},
                                            "n_v": INT, "group_labels": OBJ}),
                                      {"type": "null"}]}})

_POINT = obj({"sigma": LABEL, "l": INT, "k": INT, "m": INT, "c": NUM, "value": NUM,
               "min_nr": NUM, "safe": BOOL})

#: the JSON schema of the report section ``skyline`` (:mod:`fastpriv.report.schema`)
SECTION_SCHEMAS: dict[str, dict] = {
    "skyline": section_schema({
        "point": arr(INT, minItems=3, maxItems=3), "c": NUM,
        "confidences": arr(NUM), "sigma_selection": STR, "sigmas": arr(LABEL),
        "plotted": arr(LABEL),
        "check": obj({"safe": BOOL, "n_violations": INT, "n_values": INT,
                       "points": arr(_POINT)}),
        "worst": {"anyOf": [_BREACH, {"type": "null"}]},
        "skylines": arr(_SKYLINE)}),
}
