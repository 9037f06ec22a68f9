"""Render a report payload as one self-contained HTML page.

No JavaScript, no external resources: inline CSS and inline SVG plots
(:mod:`fastpriv.report.plots`), and a Content-Security-Policy that forbids scripts and
every network load, so the file can be opened offline and mailed around. Every string
taken from the data (group keys, value labels, column names, file names) goes through
:func:`e` (``html.escape`` with quotes), so a label such as ``<script>`` is shown, never
run.

The page is written for a data owner: the verdict and the single most important risk come
first in plain words, then one section per question (what can an adversary learn from k
facts, from (ℓ, k, m) knowledge, from statistics, who would be targeted, which groups are
weakest), then the classical models, the parameters and a glossary.
"""

from __future__ import annotations

import re
from typing import Any

from ._markup import e, fmt, num, pct, plain, skip, table

__all__ = ["render_html", "render_frontier_page", "e"]

_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'")

_CSS = """
:root{--ok:#1b7f3b;--bad:#b00020;--muted:#5f6368;--line:#dadce0;--bg:#f8f9fa}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;
 color:#202124;margin:0;background:#fff;line-height:1.5}
main{max-width:1040px;margin:0 auto;padding:24px 20px 60px}
h1{font-size:1.7em;margin:.2em 0}h2{font-size:1.3em;margin-top:2em;border-bottom:2px solid
 var(--line);padding-bottom:.2em}h3{font-size:1.05em;margin-top:1.4em}
.sub{color:var(--muted);font-size:.92em}
.verdict{border:2px solid var(--line);border-radius:10px;padding:16px 20px;margin:18px 0;
 background:var(--bg)}
.verdict.fail{border-color:var(--bad);background:#fdf3f4}.verdict.pass{border-color:var(--ok);
 background:#f1f8f3}
.headline{font-size:1.25em;font-weight:650;margin:0 0 .4em}
.risk{border-left:5px solid var(--bad);background:#fff;padding:10px 14px;margin:12px 0}
.risk.none{border-left-color:var(--ok)}
.remedy{border-left:5px solid var(--ok);background:#fff;padding:10px 14px;margin:12px 0}
.remedy code{white-space:pre-wrap}
.risk b{display:block;color:var(--bad);margin-bottom:2px}.risk.none b{color:var(--ok)}
table{border-collapse:collapse;width:100%;margin:.6em 0 1em;font-size:.92em}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600}td.num{text-align:right;font-variant-numeric:
 tabular-nums;white-space:nowrap}
.badge{display:inline-block;border-radius:4px;padding:0 7px;font-weight:700;font-size:.82em;
 color:#fff}.badge.pass{background:var(--ok)}.badge.fail{background:var(--bad)}
.badge.na{background:#9aa0a6}
.note{color:var(--muted);font-size:.9em}.skip{background:var(--bg);border:1px dashed
 var(--line);padding:8px 12px;border-radius:6px;color:var(--muted)}
.charts{display:flex;flex-wrap:wrap;gap:14px}.charts figure{margin:0}
figure{margin:.6em 0}figcaption{font-size:.85em;color:var(--muted)}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em;
 word-break:break-all}
dl.gloss dt{font-weight:650;margin-top:.6em}dl.gloss dd{margin-left:1.2em}
details{margin:.4em 0}summary{cursor:pointer;color:#1a73e8}
nav ul{columns:2;padding-left:1.2em;margin:.3em 0}
@media print{details{display:block}.charts{display:block}}
"""


def _badge(sat: Any, status: str = "ok") -> str:
    if status == "failed":          # a requested check that could not run fails the verdict
        return '<span class="badge fail">ERROR</span>'
    if sat is True:
        return '<span class="badge pass">PASS</span>'
    if sat is False:
        return '<span class="badge fail">FAIL</span>'
    return '<span class="badge na">NOT RUN</span>'


# ============================================================================ sections
def _verdict(d: dict) -> str:
    v = d["verdict"]
    cls = "pass" if v.get("passed", not v["violated"]) else "fail"
    kr = v["key_risk"]
    risk_cls = "" if v["violated"] else " none"
    rows = []
    for c in v["checks"]:
        text = c["plain"] if c["satisfied"] is not None else (c.get("reason") or "")
        rows.append([_badge(c["satisfied"], c.get("status", "ok")), e(c["title"]),
                     e(c["question"]) + (f'<br><span class="note">{e(text)}</span>'
                                         if text else "")])
    sens = d["parameters"]["sensitive"]
    risk_title = ("Most important risk" if v["violated"]
                  else "Closest risk beyond the thresholds")
    goal = (f'<p>An adversary “succeeds” when he can be at least <b>{pct(v["threshold_c"])}'
            f'</b> sure of a person’s <b>{e(sens)}</b>. Each line below asks one question '
            "about the release.</p>" if sens is not None else
            "<p>No column is sensitive: the adversary “succeeds” when he picks out a "
            "person’s record by its quasi-identifiers. Each line below asks one question "
            "about the release.</p>")
    return (
        f'<section class="verdict {cls}" id="verdict">'
        f'<p class="headline">{e(v["headline"])}</p>' + goal +
        f'<div class="risk{risk_cls}"><b>{risk_title}</b>{e(kr["text"])}</div>'
        + _remedies(v)
        + table(["result", "model", "question and answer"], rows, raw={0, 2})
        + "</section>")


def _remedies(v: dict) -> str:
    """Render the verdict's remedies: the commands that fix the release, or why none can."""
    items = v.get("remedies") or []
    if not items:
        return ""
    lis = "".join(f"<li><code>{e(r)}</code></li>" if r.startswith("fastpriv ")
                  else f"<li>{e(r)}</li>" for r in items)
    return (f'<div class="remedy"><b>How to fix it</b><p>Each command writes a release that '
            f"meets the thresholds of the failing checks it targets (a computed command, "
            f"checked against what the whole table can reach):</p><ul>{lis}</ul></div>")


def _classes(d: dict) -> str:
    """Render the QI classes of a report without a sensitive column (k, smallest classes)."""
    s = d["classes"]
    head = "<h2 id='data'>What was audited</h2>"
    if s.get("status") != "ok":
        return head + skip(s)
    cs = s["class_size"]
    rows = [["input", d["input"]["source"]],
            ["quasi-identifiers", ", ".join(s["qi"])],
            ["people (records)", fmt(s["n_records"])],
            ["classes of identical quasi-identifiers", fmt(s["n_classes"])],
            ["class sizes", f"{fmt(cs['min'])} to {fmt(cs['max'])} (median "
                            f"{fmt(cs['median'])}); {fmt(s['singleton_classes'])} records "
                            "unique"],
            ["sha256 fingerprint", d["input"]["fingerprint"]["value"]]]
    return head + table(["", ""], rows)


def _exposed_records(d: dict) -> str:
    """Name the most exposed records of a table without a sensitive column.

    They are its smallest classes of identical quasi-identifiers, each with its prosecutor
    risk 1/size.
    """
    s = d["classes"]
    head = "<h2 id='targets'>Who would an adversary target?</h2>"
    if s.get("status") != "ok":
        return head + skip(s)
    rows = [[", ".join(f"{k}={plain(v)}" for k, v in c["values"].items()), c["size"],
             pct(1.0 / c["size"])] for c in s["smallest"]]
    unique = s["singleton_classes"]
    lead = (f"<p>{fmt(unique)} record{'s are' if unique != 1 else ' is'} unique on the "
            "quasi-identifiers: anyone who knows a person's values and that the person is in "
            "the data finds the record. The smallest classes, first:</p>" if unique else
            "<p>The smallest classes of identical quasi-identifiers, first:</p>")
    return head + lead + table(["quasi-identifier values", "records",
                                 "re-identification risk"], rows, num={1, 2})


#: The sections of the models of attribute disclosure (they need a sensitive column).
_ATTRIBUTE_SECTIONS = ("(c,k)-safety", "the privacy skyline", "r-robustness",
                       "the foreground attack", "the classical models of the sensitive "
                       "value (ℓ-diversity, t-closeness, …)")


def _attribute_models_not_run(d: dict) -> str:
    """One note for every attribute-disclosure model, instead of one grey box each."""
    reason = (d.get("classical") or {}).get("reason") or "no sensitive column was given"
    return ("<h2 id='attribute'>What the adversary learns about a sensitive value</h2>"
            f"<p class='skip'><b>Not run.</b> {e(', '.join(_ATTRIBUTE_SECTIONS))}: "
            f"{e(reason)}.</p>")


def _audited(d: dict) -> str:
    if d.get("classes") is not None:
        return _classes(d)
    r = d["release"]
    inp = d["input"]
    fp = inp["fingerprint"]
    p = d["parameters"]
    if r.get("status") != "ok":
        return "<h2 id='data'>What was audited</h2>" + skip(r)
    cols = ", ".join(r["group_columns"])
    grouping = {"group": f"bucketized: groups given by the column(s) {cols}",
                "qi": "generalized: groups are the distinct values of the quasi-identifiers "
                      f"{cols}",
                "release": "an already built release"}[r["grouping"]]
    gs = r["group_size"]
    rows = [["input", inp["source"]],
            ["sensitive attribute", r["sensitive"]],
            ["grouping", grouping],
            ["people (individuals)", fmt(r["n_individuals"])],
            ["groups", fmt(r["n_groups"])],
            ["group sizes", f"{fmt(gs['min'])} to {fmt(gs['max'])} (median "
                            f"{fmt(gs['median'])}); {fmt(r['singleton_groups'])} groups of "
                            "one person"],
            ["distinct sensitive values", fmt(r["n_values"])],
            ["quasi-identifiers known to the adversary",
             ", ".join(p["qi"]) if p["qi"] and p["group"] else "–"],
            ["case", {"svpi": "one value per person (SVPI)",
                      "mvpi-set": "several values per person, each at most once (MVPI-Set)",
                      "mvpi-multiset": "several values per person (MVPI-Multiset)"}[r["case"]]],
            ["sha256 fingerprint", fp["value"] + f" ({fp['of']})"]]
    if inp.get("n_rows_dropped_for_nulls"):
        rows.append(["rows dropped (nulls)", fmt(inp["n_rows_dropped_for_nulls"])])
    vals = [[v["value"], v["count"], pct(v["share"])] for v in r["values"][:20]]
    more = (f'<p class="note">Showing the 20 most frequent of {fmt(r["n_values"])} values.'
            "</p>" if r["n_values"] > 20 else "")
    return ("<h2 id='data'>What was audited</h2>" + table(["", ""], rows)
            + "<details><summary>Distribution of the sensitive values</summary>"
            + table(["value", "people", "share"], vals, num={1, 2}) + more + "</details>")


def _targets(d: dict) -> str:
    t = d["targets"]
    items = t["items"]
    from ..registry import target_labels

    src = target_labels()
    show_val = t["individual_values_included"]
    rows = []
    for it in items:
        who = []
        if it.get("row") is not None:
            who.append(f"row {it['row']}")
        elif it.get("rows"):
            rs = ", ".join(str(x) for x in it["rows"][:8])
            who.append(f"any of the people of the group (rows {rs}"
                       f"{', …' if len(it['rows']) > 8 else ''})")
        else:
            who.append("any person of the group")
        if it.get("row_label") is not None:
            who.append(f"[{plain(it['row_label'])}]")
        row = [" ".join(who), it["group_label"], src.get(it["source"], it["source"]),
               it["value"], pct(it["certainty"]), it["knowledge"], it["why"]]
        if show_val:
            row.append(it.get("actual_value", "–"))
        rows.append(row)
    headers = ["who", "group", "found by", "inferred value", "certainty",
               "knowledge needed", "why"]
    if show_val:
        headers.append("actual value")
    note = ("<p class='note'>The true sensitive values of these people are <b>included</b> "
            "(requested with --include-individual-values).</p>" if show_val else
            "<p class='note'>The report never writes anyone's true sensitive value (only the "
            "values published for whole groups and what an adversary would infer); pass "
            "--include-individual-values to add them.</p>")
    if not items:
        return "<h2 id='targets'>Who would an adversary target?</h2><p>No witness.</p>"
    return ("<h2 id='targets'>Who would an adversary target, and why?</h2>"
            "<p>The worst cases behind the numbers above: the people an adversary would "
            "investigate first. Rows are numbered from 0 in input order.</p>"
            + table(headers, rows, num={4}) + note)


def _groups(d: dict) -> str:
    s = d["worst_groups"]
    if s.get("status") != "ok":
        return "<h2 id='groups'>Groups most at risk</h2>" + skip(s)
    rows = []
    for g in s["groups"]:
        prof = ", ".join(f"{plain(p['value'])} ×{p['count']}" for p in g["profile"])
        if g.get("profile_truncated"):
            prof += ", …"
        rws = "–" if g["rows"] is None else (", ".join(str(x) for x in g["rows"])
                                             + (", …" if g.get("rows_truncated") else ""))
        rows.append([g["label"], g["size"], g["distinct"], pct(g["max_share"]), prof, rws])
    return ("<h2 id='groups'>Groups most at risk</h2>"
            f"<p>{e(s['description'])}.</p>"
            + table(["group", "people", "distinct values", "top share", "published values",
                      "rows"], rows, num={1, 2, 3}))


def _classical(d: dict) -> str:
    s = d["classical"]
    head = ("<h2 id='classical'>Classical models</h2><p>The achieved parameter of each "
            "classical model and its worst group (the same vocabulary as other checkers, "
            "e.g. pycanon).</p>")
    if s.get("status") != "ok":
        return head + skip(s)
    rows = [[m["title"], m["value"], m["worst_label"]] for m in s["models"].values()]
    notes = "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in s["notes"].items())
    return (head + table(["model", "achieved", "worst group"], rows, num={1})
            + f"<ul class='note'>{notes}</ul>")


def _params(d: dict) -> str:
    p = d["parameters"]
    g = d["generator"]
    fp = d["input"]["fingerprint"]
    prow = [[k, v if not isinstance(v, list) else ", ".join(plain(x) for x in v)]
            for k, v in p.items()]
    trow = [[k, f"{num(v):.3f} s"] for k, v in d["timings_s"].items()]
    files = ""
    if fp.get("files"):
        files = "<details><summary>Files</summary>" + table(
            ["file", "bytes", "sha256"],
            [[f["path"], f["bytes"], f["sha256"]] for f in fp["files"]], num={1}) + \
            "</details>"
    return ("<h2 id='params'>Parameters and reproducibility</h2>"
            f"<p>Created {e(d['created'])} by fastpriv {e(g['fastpriv'])} (Python "
            f"{e(g['python'])}, NumPy {e(g['numpy'])}, Numba {e(g['numba'])}, pyarrow "
            f"{e(g['pyarrow'])}; {e(g['platform'])}). Input fingerprint "
            f"<span class='mono'>sha256:{e(fp['value'])}</span> ({e(fp['of'])}). Report "
            f"schema {e(d['schema'])} version {e(d['schema_version'])}.</p>" + files
            + "<div class='charts'><div style='flex:1;min-width:300px'>"
            + table(["parameter", "value"], prow) + "</div><div style='flex:1;min-width:220px'>"
            + table(["step", "time"], trow, num={1}) + "</div></div>")


def _glossary(d: dict) -> str:
    items = "".join(f"<dt>{e(g['term'])}</dt><dd>{e(g['definition'])}</dd>"
                    for g in d["glossary"])
    return f"<h2 id='glossary'>Glossary</h2><dl class='gloss'>{items}</dl>"


def _frontier(d: dict) -> str:
    """Return the privacy–utility frontier section (``fastpriv report --hierarchies``)."""
    sec = d.get("frontier")
    if sec is None:
        return ""
    if sec.get("status") != "ok":
        return ("<section id='frontier'><h2>Privacy–utility frontier</h2>"
                + skip(sec) + "</section>")
    from .frontier import frontier_section

    return frontier_section(sec)


def _declared_models(d: dict) -> str:
    """Render the sections of the models declared in :mod:`fastpriv.registry` (``models``).

    Each is rendered by the model's own ``html`` function; a section that did not run shows
    its reason, a model without one is read from the verdict's lines alone.
    """
    from ..registry import model, render_model_html

    out = []
    for name, sec in (d.get("models") or {}).items():
        if sec.get("status") != "ok":
            out.append(f"<section id='model-{e(name)}'><h2>{e(model(name).title)}</h2>"
                       + skip(sec) + "</section>")
        else:
            out.append(render_model_html(name, sec))
    return "".join(out)


#: a section's heading in a model's HTML: its anchor and title (the page's navigation)
_HEADINGS = re.compile(r"<h2 id='([^']+)'>([^<]*)</h2>")


def _model_sections(d: dict, *, sensitive: bool) -> str:
    """Render the top-level sections of the models declaring ``report_html``, in model order.

    ``sensitive=False`` (a report on the QI classes alone): those of the models that read
    no sensitive column. A function declared by several models is called once.
    """
    from ..registry import MODELS, load

    paths = dict.fromkeys(m.report_html for m in MODELS
                          if m.report_html and (sensitive or not m.sensitive))
    return "".join(load(p)(d) for p in paths)


def _body_without_sensitive(d: dict) -> list[str]:
    """Return the sections of a report on the QI classes alone (no sensitive column)."""
    own = _model_sections(d, sensitive=False)
    links = "".join(f"<li><a href='#{a}'>{t}</a></li>" for a, t in _HEADINGS.findall(own))
    nav = ("<nav><ul><li><a href='#verdict'>Verdict</a></li>"
           "<li><a href='#data'>What was audited</a></li>"
           + links
           + "<li><a href='#targets'>Who would be targeted</a></li>"
           "<li><a href='#params'>Parameters</a></li><li><a href='#glossary'>Glossary</a></li>"
           "</ul></nav>")
    return [_verdict(d), nav, _audited(d), own, _declared_models(d),
            _exposed_records(d), _attribute_models_not_run(d), _frontier(d), _params(d),
            _glossary(d)]


def render_html(d: dict) -> str:
    """Render the report payload as a complete HTML document (a string)."""
    nav = ("<nav><ul>"
           "<li><a href='#verdict'>Verdict</a></li><li><a href='#data'>What was audited</a></li>"
           "<li><a href='#ck'>k facts: (c,k)-safety</a></li>"
           "<li><a href='#skyline'>Privacy skyline</a></li>"
           "<li><a href='#stats'>Statistics-based attacks</a></li>"
           "<li><a href='#targets'>Who would be targeted</a></li>"
           "<li><a href='#groups'>Groups most at risk</a></li>"
           "<li><a href='#classical'>Classical models</a></li>"
           "<li><a href='#params'>Parameters</a></li><li><a href='#glossary'>Glossary</a></li>"
           "</ul></nav>")
    sections = (_body_without_sensitive(d) if d.get("classes") is not None else [
        _verdict(d), nav, _audited(d), _model_sections(d, sensitive=True), _declared_models(d),
        _targets(d), _groups(d), _classical(d), _frontier(d), _params(d), _glossary(d)])
    body = "".join([
        f"<h1>{e(d['title'])}</h1>",
        f"<p class='sub'>fastpriv {e(d['generator']['fastpriv'])} · {e(d['created'])} · "
        f"input <span class='mono'>{e(d['input']['source'])}</span></p>", *sections])
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<meta name='generator' content='fastpriv {e(d['generator']['fastpriv'])}'>"
            f"<title>{e(d['title'])}</title><style>{_CSS}</style></head>"
            f"<body><main>{body}</main></body></html>\n")


def render_frontier_page(d: dict, *, title: str) -> str:
    """Render a frontier payload (``fastpriv frontier -o``) as one self-contained page."""
    from .frontier import frontier_section

    src = d.get("input")
    sub = f"<p class='sub'>input <span class='mono'>{e(src)}</span></p>" if src else ""
    section = frontier_section(d).replace(
        "<section id='frontier'><h2>Privacy–utility frontier</h2>", "<section id='frontier'>", 1)
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{e(title)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>{e(title)}</h1>{sub}{section}</main></body></html>\n")
