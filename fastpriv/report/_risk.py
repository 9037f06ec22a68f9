"""Report section for re-identification risk (:mod:`fastpriv.risk`): data, chart and HTML.

:func:`fastpriv.report.build_report` calls :func:`risk_section` (a JSON-safe dict in the
report's section shape: ``status``, ``reason``, ``seconds`` plus the content, stored as
``payload["risk"]``); the verdict reads its ``verdict`` entry and the HTML page renders it
with :func:`render_risk_html` (heading, plain-language measures, the chart of risk by QI
combination, the table of the riskiest combinations).
"""

from __future__ import annotations

import html
import time
from typing import Any

from .. import risk as _risk
from ..errors import InputError
from .plots import bar_chart

__all__ = ["risk_section", "render_risk_html", "combination_chart"]

#: How many QI combinations the chart and the table show (riskiest first).
TOP_COMBINATIONS = 15


def risk_section(data: Any, *, qi: list, threshold: float = 0.2, weight: str | None = None,
                 sampling_weight: str | None = None, population: Any = None,
                 max_set_size: int | None = 3, nulls: str = "error",
                 top: int = TOP_COMBINATIONS) -> dict:
    """Run :func:`fastpriv.risk.audit` and :func:`fastpriv.risk.combinations` for a report.

    ``weight`` is the multiplicity column (each row stands for that many identical
    records: the section equals the expanded table's), ``sampling_weight`` the survey
    weights of :func:`fastpriv.risk.audit`.

    Returns a JSON-safe dict: ``status`` (``"ok"``/``"failed"``), ``reason``, ``seconds``,
    ``audit`` (``RiskResult.to_dict()`` without the histogram), ``summary`` (plain text),
    ``verdict`` (``passed``, ``lines``), ``combinations`` (the ``top`` riskiest subsets,
    ``generalize_first``, ``attribute_contribution``, ``params``) and ``chart`` (labels and
    values of the bar chart: records for which each combination is a minimal sample unique).
    ``max_set_size`` bounds the combination size (3 by default: C(q, ≤3) subsets stay small
    for any q).
    """
    t0 = time.perf_counter()
    try:
        cc = _risk.class_counts(data, qi=qi, weight=weight, sampling_weight=sampling_weight,
                                nulls=nulls)
        res = _risk.audit(cc, population=population, threshold=threshold)
        mm = None if max_set_size is None else min(max_set_size, len(cc.qi))
        comb = _risk.combinations(cc, max_set_size=mm)
    except InputError as exc:      # bad input for this section; a bug propagates
        return {"status": "failed", "reason": f"{type(exc).__name__}: {exc}",
                "seconds": time.perf_counter() - t0}
    passed, lines = _risk.verdict(res, threshold)
    d = res.to_dict()
    d.pop("class_size_histogram", None)
    ranked = sorted(comb.rows, key=lambda r: (-r["score"], -r["uniques"], r["size"]))
    shown = [r for r in ranked if r["uniques"] > 0][:top]
    n = comb.params["n_records"]
    bars = sorted(shown, key=lambda r: (-r["msu"], -r["uniques"], r["size"]))  # longest first
    chart = {"labels": [" + ".join(r["qi"]) for r in bars],
             "values": [100.0 * r["msu"] / n for r in bars],
             "uniques": [100.0 * r["uniques"] / n for r in bars],
             "title": "Risk by QI combination",
             "xlabel": "% of records unique on exactly this combination (minimal)"}
    cd = comb.to_dict()
    return {"status": "ok", "reason": None, "seconds": time.perf_counter() - t0,
            "audit": d, "summary": res.summary(), "verdict": {"passed": passed, "lines": lines},
            "combinations": {"top": shown, "generalize_first": cd["generalize_first"],
                             "attribute_contribution": cd["attribute_contribution"],
                             "summary": comb.summary(), "params": cd["params"]},
            "chart": chart}


def combination_chart(sec: dict) -> str:
    """Inline SVG bar chart of the riskiest QI combinations ('' when nothing is unique)."""
    ch = sec.get("chart") or {}
    if not ch.get("labels"):
        return ""
    return bar_chart(ch["labels"], ch["values"], title=ch["title"], xlabel=ch["xlabel"],
                     desc="Each bar: the share of records that are unique on this combination "
                          "of quasi-identifiers and on none of its parts. Generalize the "
                          "attributes of the longest bars first.")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def render_risk_html(sec: dict) -> str:
    """HTML fragment for the risk section (self-contained: no scripts, inline SVG)."""
    head = "<h2 id='risk'>Re-identification risk</h2>"
    if sec.get("status") != "ok":
        return head + f"<p class='skip'><b>Failed.</b> {_e(sec.get('reason') or '')}</p>"
    badge = ("<span class='badge pass'>PASS</span>" if sec["verdict"]["passed"]
             else "<span class='badge fail'>FAIL</span>")
    lines = "".join(f"<li>{_e(x)}</li>" for x in sec["summary"].splitlines())
    comb = sec["combinations"]
    rows = "".join(
        f"<tr><td>{_e(' + '.join(r['qi']))}</td><td class='num'>{r['uniques']:,}</td>"
        f"<td class='num'>{r['msu']:,}</td><td class='num'>{r['classes']:,}</td></tr>"
        for r in comb["top"])
    table = "<p>No combination makes a record unique.</p>"
    if rows:
        table = ("<table><thead><tr><th>QI combination</th><th>records unique</th>"
                 "<th>minimal uniques (SUDA2)</th><th>classes</th></tr></thead><tbody>"
                 + rows + "</tbody></table>")
    gf = comb["generalize_first"]
    advice = (f"<p><b>Generalize first:</b> {_e(', '.join(gf))} (largest share of the SUDA "
              "score, i.e. of the small combinations that single records out).</p>" if gf
              else "")
    return (head + f"<p>{badge}</p><ul>{lines}</ul>" + combination_chart(sec) + advice + table
            + f"<p class='note'>{_e(comb['summary'].splitlines()[0])}</p>")
