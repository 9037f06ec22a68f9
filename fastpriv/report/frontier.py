"""The privacy–utility frontier as HTML: every node in a scatter plot, the frontier's table.

Rendered from the JSON payload of :meth:`fastpriv.frontier.Frontier.to_dict` (the payload
is the single source of truth, as for the audit report): :func:`frontier_section` is the
section the audit report embeds and the body of the page of ``fastpriv frontier -o``
(:func:`fastpriv.report.html.render_frontier_page`). Inline SVG only
(:func:`fastpriv.report.plots.scatter_chart`), no script, and every string from the data
escaped.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

import numpy as np

from ..frontier import RISK_LABELS as _RISK_LABELS
from ..frontier import UTILITY_LABELS as _UTILITY_LABELS
from . import plots

__all__ = ["frontier_section", "frontier_chart"]

_GREY, _FRONT, _CHOSEN = "#9aa0a6", plots.PALETTE[0], "#b00020"


def e(x: Any) -> str:
    """HTML-escape any value (quotes included)."""
    return escape(str(x), quote=True)


def _risk(p: dict, measure: str) -> float | None:
    if measure == "prosecutor_max":
        return p["risk_max"]
    if measure == "prosecutor_avg":
        return p["risk_avg"]
    return p["population_uniques_share"]


def _node(p: dict) -> str:
    return "(" + ",".join(str(x) for x in p["node"]) + ")"


def _num(x: Any, digits: int = 4) -> str:
    """``digits`` significant digits, positional (never 2.2e-05); integers with commas."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "no estimate"
    if isinstance(x, int):
        return f"{x:,}"
    return np.format_float_positional(float(x), precision=digits, fractional=False, trim="-")


def frontier_chart(d: dict) -> str:
    """Return the scatter plot: every satisfying node grey, the frontier, the chosen node."""
    measure = d["risk_measure"]
    points = d["points"]
    front = {tuple(n) for n in d["frontier"]}
    by_node = {tuple(p["node"]): p for p in points}
    rest = [p for p in points if tuple(p["node"]) not in front]
    line = [by_node[tuple(n)] for n in d["frontier"]]
    series: list[dict] = [
        {"name": f"other nodes meeting {d['criterion']} ({len(rest):,})", "color": _GREY,
         "x": [_risk(p, measure) for p in rest], "y": [p["loss"] for p in rest],
         "size": 2.6, "opacity": 0.55},
        {"name": f"Pareto frontier ({len(line):,} nodes)", "color": _FRONT, "line": True,
         "x": [_risk(p, measure) for p in line], "y": [p["loss"] for p in line],
         "size": 3.6,
         "titles": [f"node {_node(p)}: risk {_num(_risk(p, measure))}, loss "
                    f"{_num(p['loss'], 6)}" for p in line]}]
    chosen = d.get("chosen")
    if chosen is not None:
        p = by_node[tuple(chosen["node"])]
        series.append({"name": "chosen by the lattice search", "color": _CHOSEN,
                       "marker": "diamond", "size": 7, "label": "chosen",
                       "x": [_risk(p, measure)], "y": [p["loss"]],
                       "titles": [f"chosen node {_node(p)}: risk {_num(_risk(p, measure))}, "
                                  f"loss {_num(p['loss'], 6)}"]})
    return plots.scatter_chart(
        series, title="Risk and loss of every generalization meeting the criterion",
        xlabel=_RISK_LABELS[measure] + " of the published records",
        ylabel=_UTILITY_LABELS.get(d["utility"], d["utility"]),
        desc=(f"{d['n_satisfying']} nodes meeting {d['criterion']} as points (risk, loss); "
              f"the {d['n_frontier']} nodes of the Pareto frontier joined by a line; the "
              "node the lattice search picks marked with a diamond."),
        width=880, height=460, css_class="chart scatter-chart frontier-chart")


def _table(d: dict) -> str:
    qi = d["qi"]
    by_node = {tuple(p["node"]): p for p in d["points"]}
    chosen = tuple(d["chosen"]["node"]) if d.get("chosen") else None
    pop = d.get("population_size") is not None
    heads = [*qi, "highest risk", "average risk"] + (["population uniques"] if pop else []) \
        + ["loss", "suppressed", "classes"]
    rows = []
    for n in d["frontier"]:
        p = by_node[tuple(n)]
        cells = [f"<td class='num'>{e(x)}</td>" for x in p["node"]]
        vals = [_num(p["risk_max"]), _num(p["risk_avg"])]
        if pop:
            vals.append(_num(p["population_uniques"], 6))
        vals += [_num(p["loss"], 6), f"{p['suppressed']:,}", f"{p['classes']:,}"]
        cells += [f"<td class='num'>{e(v)}</td>" for v in vals]
        mark = " style='font-weight:650;background:#fdf3f4'" if tuple(n) == chosen else ""
        rows.append(f"<tr{mark}>" + "".join(cells) + "</tr>")
    return ("<div style='overflow-x:auto'><table class='frontier-table'><thead><tr>"
            + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>")


def _chosen(d: dict) -> str:
    c = d.get("chosen")
    if c is None:
        return ("<p class='risk'><b>No node meets the criterion</b>not even the top of the "
                "lattice: nothing can be published with these hierarchies.</p>")
    levels = ", ".join(f"{e(a)} at level {e(v)}" for a, v in c["levels"].items())
    where = ("It is on the frontier: no other node is both less risky and less costly."
             if c["on_frontier"] else
             f"It is not on the frontier: node {e(tuple(c['dominated_by']))} is at most as "
             f"risky ({e(_num(c['dominated_risk']))}) and loses at most as much "
             f"({e(_num(c['dominated_loss'], 6))}).")
    cmd = d.get("command")
    return (f"<div class='remedy'><b>Chosen by the lattice search</b> ({e(d['objective'])} "
            f"node by {e(d['utility'])}): {levels} — {e(_RISK_LABELS[d['risk_measure']])} "
            f"{e(_num(c['risk']))}, loss {e(_num(c['loss'], 6))}. {where}"
            + (f"<br>Publish it with <code>{e(cmd)}</code>" if cmd else "") + "</div>")


def frontier_section(d: dict, *, heading: str = "h2") -> str:
    """Return the frontier as one HTML section (the audit report embeds it)."""
    sup = f", with at most {100 * d['suppression']:.3g}% of the people suppressed" \
        if d["suppression"] else ""
    intro = (f"<p>{d['n_nodes']:,} full-domain generalizations of {e(', '.join(d['qi']))}; "
             f"{d['n_satisfying']:,} meet {e(d['criterion'])}{e(sup)}. Each is a point: how "
             f"likely a person is re-identified in the records it publishes "
             f"({e(_RISK_LABELS[d['risk_measure']])}) against what it costs "
             f"({e(_UTILITY_LABELS.get(d['utility'], d['utility']))}). {d['n_frontier']:,} "
             "of them form the <b>Pareto frontier</b>: for each, no other node is both less "
             "risky and less costly — every other choice gives something away for "
             "nothing.</p>")
    if not d["n_satisfying"]:
        return (f"<section id='frontier'><{heading}>Privacy–utility frontier</{heading}>"
                + intro + _chosen(d) + "</section>")
    return (f"<section id='frontier'><{heading}>Privacy–utility frontier</{heading}>" + intro
            + _chosen(d) + "<figure>" + frontier_chart(d) + "<figcaption>Grey: every "
            "generalization meeting the criterion; blue: the frontier; red diamond: the node "
            "fastpriv anonymize --method lattice publishes with the same flags. Suppressed "
            "records are not published, so they count in the loss, not in the risk."
            "</figcaption></figure><h3>The frontier, by increasing risk</h3>"
            "<p class='note'>Levels per quasi-identifier (0 = exact values), then the "
            "measures of the published records.</p>" + _table(d) + "</section>")
