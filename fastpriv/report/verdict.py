"""The verdict: PASS/FAIL per model against stated thresholds, in plain words, with remedies.

Every command that audits (``fastpriv audit``, ``report``, ``demo``) and the HTML report read
the same verdict: one check per model (the question it answers, whether it holds, the
achieved number, one sentence on what that number means for a person in the worst group),
the single most important risk, and — for every failing check — the ``fastpriv anonymize``
command that produces a release meeting the thresholds. The remedy is computed: a criterion
that not even one group holding the whole table meets is reported as unreachable by any
generalization, with the value the whole table reaches, instead of a command that would fail.

The exit status of a command is the verdict, and the verdict fails closed: :data:`EXIT_HOLDS`
only when every requested check ran and holds, :data:`EXIT_FAILS` when one fails, and
:data:`EXIT_NOT_RUN` when a requested check could not run on this input (its section
``failed``: the model refused the input, e.g. a population table without a QI column). A
check that did not run is never counted as holding. A check ``skipped`` by design (a
row-level model without QI columns, a model switched off) is listed under ``not_run`` and
does not stop a PASS; a bug in a model is not a verdict at all: it propagates (exit 3).
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from .text import as_float, fmt_count, fmt_label, fmt_pct

__all__ = ["build_verdict", "verdict_text", "anonymize_command", "EXIT_HOLDS", "EXIT_FAILS",
           "EXIT_NOT_RUN", "READING_OPTIONS", "NULLS_VALUE_REMEDY"]

#: Exit status when every requested check ran and holds.
EXIT_HOLDS = 0
#: Exit status when at least one check fails (and every requested check ran).
EXIT_FAILS = 1
#: Exit status when a requested check could not run on this input (the verdict is incomplete).
EXIT_NOT_RUN = 2


def build_verdict(sec: dict, params: dict, sens: str | None, *,
                  data_spec: str | None = None,
                  remedy_options: dict[str, Any] | None = None) -> dict:
    """Collect the checks of the report sections ``sec`` into the verdict.

    Parameters
    ----------
    sec : dict
        Report sections (``classical``, ``ck_safety``, ``skyline``, ``robustness``,
        ``foreground``, ``worst_groups`` and ``whole_table``, the one-group audit that decides
        which thresholds any generalization can reach; without a sensitive column
        ``classes``, the QI classes, and ``risk``).
    params : dict
        The report parameters (thresholds ``min_size``, ``min_l``, ``max_t``, ``c_verdict``,
        ``k``, ``point``, ``r``; columns ``qi``, ``group``, ``sensitive``).
    sens : str or None
        Name of the sensitive column (for the sentences); None without one.
    data_spec : str, optional
        How the remedy commands name the data (a path, ``adult``); default ``DATA``.
    remedy_options : dict, optional
        How the remedy commands read the data, as the audit read it: the keywords of
        :data:`READING_OPTIONS` (``weight``, ``nulls``, ``encoding``, ``delimiter``) passed
        to :func:`anonymize_command`. Default: ``params``' ``weight`` and ``nulls``; the keys
        given replace those.

    Returns
    -------
    dict
        ``headline``, ``passed`` (bool: every requested check ran and holds),
        ``exit_code`` (:data:`EXIT_HOLDS`, :data:`EXIT_FAILS` or :data:`EXIT_NOT_RUN`),
        ``satisfied`` / ``violated`` / ``not_run`` check ids, ``errors`` (each check that
        could not run: ``id``, ``title``, ``error``), ``checks`` (each with a ``remedy`` when
        it fails), ``remedies`` (the distinct commands) and ``key_risk``.

    """
    checks = _checks(sec, params, sens)
    reading = {"weight": params.get("weight"), "nulls": params.get("nulls") or "error",
               **_reading(remedy_options)}
    remedies = _add_remedies(checks, sec.get("whole_table"), {**params, "reading": reading},
                             data_spec or "DATA", risk=sec.get("risk"))
    satisfied = [c["id"] for c in checks if c["satisfied"] is True]
    violated = [c["id"] for c in checks if c["satisfied"] is False]
    errors = [{"id": c["id"], "title": c["title"], "error": c["reason"]}
              for c in checks if c["status"] == "failed"]
    risk = _key_risk(sec, checks, params["c_verdict"], sens, params)
    return {"threshold_c": params["c_verdict"],
            "headline": _headline(satisfied, violated, errors),
            "passed": not violated and not errors,
            "exit_code": (EXIT_NOT_RUN if errors else EXIT_FAILS if violated
                          else EXIT_HOLDS),
            "satisfied": satisfied, "violated": violated,
            "not_run": [c["id"] for c in checks if c["satisfied"] is None],
            "errors": errors, "checks": checks, "remedies": remedies, "key_risk": risk}


def _headline(satisfied: list, violated: list, errors: list) -> str:
    """Return the verdict's first line: ERROR when a requested check did not run, else PASS/FAIL."""
    if errors:
        names = ", ".join(e["title"] for e in errors)
        failing = (f"; {len(violated)} of the checks that ran fail" if violated else "")
        return (f"ERROR: {len(errors)} requested check{'s' * (len(errors) > 1)} could not "
                f"run ({names}){failing}: the release is not passed.")
    if not violated:
        return "PASS: the release satisfies every model that was checked at the chosen thresholds."
    return (f"FAIL: the release fails {len(violated)} of the "
            f"{len(satisfied) + len(violated)} checks at the chosen thresholds.")


def _check(id_: str, title: str, question: str, satisfied: Any = None, achieved: Any = None,
           required: str = "", plain: str = "", status: str = "ok",
           reason: str | None = None) -> dict:
    """One verdict check (:func:`fastpriv.registry.make_check`)."""
    from ..registry import make_check

    return make_check(id_, title, question, satisfied, achieved, required, plain, status,
                      reason)


def _not_run(id_: str, title: str, question: str, section: dict) -> list[dict]:
    """Return the check of a section that did not run (skipped or failed), with the reason."""
    return [_check(id_, title, question, status=section["status"], reason=section["reason"])]


def _checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """One check per model: the question, PASS/FAIL, the achieved value and a sentence."""
    if sec.get("classes") is not None:          # no sensitive column: the QI classes
        out = _classes_checks(sec["classes"], params)
        if sec.get("risk") is not None:
            out += _risk_checks(sec["risk"])
        return out + _declared_checks(sec)
    out = (_classical_checks(sec["classical"], params, sens)
           + _ck_checks(sec["ck_safety"], params, sens)
           + _skyline_checks(sec["skyline"], params, sens)
           + _row_checks(sec["robustness"], sec["foreground"], params, sens))
    if sec.get("risk") is not None:
        out += _risk_checks(sec["risk"])
    return out + _declared_checks(sec)


def _declared_checks(sec: dict) -> list[dict]:
    """Return the checks of the verdict models declared in :mod:`fastpriv.registry`."""
    return [c for r in (sec.get("models") or {}).values() for c in r["checks"]]


def _k_check(k: int, params: dict, unit: str = "group") -> dict:
    """Check k-anonymity: the smallest group (or QI class) has at least ``min_size``."""
    return _check("k_anonymity", "k-anonymity",
                  "Does every group hide each person among enough others?",
                  k >= params["min_size"], k, f"k ≥ {params['min_size']}",
                  f"The smallest {unit} has {k} {'person' if k == 1 else 'people'} "
                  f"(required: at least {params['min_size']}).")


def _classes_checks(cl: dict, params: dict) -> list[dict]:
    """Return the checks without a sensitive column: k-anonymity of the QI classes."""
    if cl["status"] != "ok":
        return _not_run("k_anonymity", "k-anonymity",
                        "Does every group hide each person among enough others?", cl)
    return [_k_check(cl["k"], params, unit="class of identical quasi-identifiers")]


def _classical_checks(cl: dict, params: dict, sens: str) -> list[dict]:
    c_v = params["c_verdict"]
    if cl["status"] != "ok":
        return _not_run("classical", "classical models",
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
        _check("l_diversity", "distinct ℓ-diversity",
               f"Does every group contain several different values of {sens}?",
               ld >= min_l, ld, f"ℓ ≥ {min_l}",
               f"The least varied group has {ld} different value{'s' if ld != 1 else ''} of "
               f"{sens} (required: at least {min_l})."),
        _check("entropy_l_diversity", "entropy ℓ-diversity",
               f"Are the values of {sens} spread evenly enough within every group?",
               bool(el >= min_l - 1e-12), el, f"ℓ ≥ {min_l}",
               f"The least even group is as varied as {el:.3g} equally common values "
               f"(required: at least {min_l})."),
        _check("t_closeness", "t-closeness",
               f"Does every group's mix of {sens} resemble the whole table's?",
               bool(t <= params["max_t"]), t, f"t ≤ {params['max_t']:g}",
               f"The most unusual group differs from the overall mix by {t:.3g} (earth "
               f"mover's distance; allowed: at most {params['max_t']:g})."),
        _check("alpha_k_anonymity", "(α,k)-anonymity (α)",
               f"Without any background knowledge, how sure can anyone be of a person's "
               f"{sens}?", bool(a < c_v), a, f"α < {c_v:g}",
               f"From the release alone, the best guess about a person is right with "
               f"probability {fmt_pct(a)} (the largest share of one value in a group; must "
               f"stay below {fmt_pct(c_v)})."),
    ]


def _ck_checks(ck: dict, params: dict, sens: str) -> list[dict]:
    c_v = params["c_verdict"]
    if ck["status"] != "ok":
        return _not_run("ck_safety", "(c,k)-safety",
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
        out.append(_check(
            f"ck_safety_{kn}", f"(c,k)-safety, {kn}",
            f"Can an adversary who {words} become {fmt_pct(c_v)} sure of anyone's {sens}?",
            safe, v, f"max disclosure < {c_v:g} at k = {k}",
            f"An adversary who {words} can be as much as {fmt_pct(v)} sure of someone's "
            f"{sens} (must stay below {fmt_pct(c_v)}).{more}"))
    return out


def _skyline_checks(sky: dict, params: dict, sens: str) -> list[dict]:
    c_v = params["c_verdict"]
    if sky["status"] != "ok":
        return _not_run("skyline", "privacy skyline",
                        "Can an adversary with (ℓ, k, m) knowledge about the target, other "
                        f"people and relatives become {fmt_pct(c_v)} sure?", sky)
    ell, k, m = sky["point"]
    bp = max((as_float(p["value"]) for p in sky["check"]["points"]), default=0.0)
    return [_check(
        "skyline", "privacy skyline (basic 3D criterion)",
        f"Can an adversary who knows {fmt_count(ell, 'value')} the target does not have, the "
        f"values of {fmt_count(k, 'other person', 'other people')} and "
        f"{fmt_count(m, 'person', 'people')} sharing the target's value become "
        f"{fmt_pct(c_v)} sure?",
        bool(sky["check"]["safe"]), bp, f"BP < {c_v:g} at (ℓ,k,m) = ({ell},{k},{m}) for "
        "every value",
        f"Such an adversary can be as much as {fmt_pct(bp)} sure of someone's {sens} "
        f"(must stay below {fmt_pct(c_v)}).")]


def _row_checks(rb: dict, fg: dict, params: dict, sens: str) -> list[dict]:
    """Return the checks of the row-level models: r-robustness and the foreground attack."""
    r = params.get("r")
    q_rb = f"Can statistics linking quasi-identifiers to {sens} single anyone out?"
    q_fg = "Can patterns mined from the release itself single anyone out?"
    out = []
    if rb["status"] == "ok":
        d = rb["result"]
        out.append(_check(
            "robustness", "r-robustness", q_rb, bool(d["robust"]), d["value"],
            f"posterior ≤ 1/r = {1 / r:.4g}",
            f"With accurate statistics of this kind the adversary can be as much as "
            f"{fmt_pct(d['value'])} sure of someone's {sens} (allowed: {fmt_pct(1 / r)}); "
            f"{d['n_problematic_rows']:,} of {d['n_rows']:,} people exceed it."))
    else:
        out += _not_run("robustness", "r-robustness", q_rb, rb)
    if fg["status"] == "ok":
        d = fg["result"]
        mp = d["max_posterior"] or 0.0
        out.append(_check(
            "foreground", "foreground-knowledge attack", q_fg, d["n_problematic"] == 0, mp,
            f"posterior ≤ 1/r = {1 / r:.4g}",
            f"Using only patterns learned from this release, the adversary can be as much as "
            f"{fmt_pct(mp)} sure of someone's {sens}; {d['n_problematic']:,} of "
            f"{d['n_rows']:,} people exceed {fmt_pct(1 / r)}."))
    else:
        out += _not_run("foreground", "foreground-knowledge attack", q_fg, fg)
    return out


def _risk_checks(rk: dict) -> list[dict]:
    q = "Can someone who knows a person's quasi-identifiers pick out their record?"
    if rk["status"] != "ok":
        return _not_run("risk", "re-identification risk", q, rk)
    a = rk["audit"]
    return [_check(
        "risk", "re-identification risk", q, bool(rk["verdict"]["passed"]),
        a["prosecutor_max"], f"prosecutor risk ≤ {a['params']['threshold']:g}",
        f"The smallest class of identical quasi-identifiers makes a record "
        f"{fmt_pct(a['prosecutor_max'])} likely to be re-identified "
        f"({a['sample_uniques']:,} records are unique; allowed: "
        f"{fmt_pct(a['params']['threshold'])}).")]


def _key_risk(sec: dict, checks: list[dict], c_v: float, sens: str, params: dict) -> dict:
    """Pick the single most important risk: the one needing the least knowledge.

    A failing check always comes first: (c,k)-safety's "k + 1 facts suffice" describes the
    closest risk beyond the thresholds only when that check fails or nothing fails.
    """
    by_id = {c["id"]: c for c in checks}
    any_fails = any(c["satisfied"] is False for c in checks)
    wg = sec["worst_groups"]
    alpha = by_id.get("alpha_k_anonymity")
    if alpha is not None and alpha["satisfied"] is False and wg["groups"]:
        g = wg["groups"][0]
        return {"model": "alpha_k_anonymity", "certainty": g["max_share"],
                "knowledge": "none",
                "text": (f"Without any background knowledge: {g['profile'][0]['count']:,} of "
                         f"the {fmt_count(g['size'], 'person', 'people')} of the group "
                         f"{g.get('described') or fmt_label(g['label'])} have {sens} = "
                         f"{fmt_label(g['top_value'])}, so anyone who knows a person is in that "
                         f"group learns it with {fmt_pct(g['max_share'])} certainty.")}
    fg = by_id.get("foreground")
    if fg and fg["satisfied"] is False:
        d = sec["foreground"]["result"]
        w = d["worst"][0] if d["worst"] else {}
        return {"model": "foreground", "certainty": d["max_posterior"],
                "knowledge": "patterns mined from the release itself",
                "text": (f"Patterns mined from the release itself single out "
                         f"{d['n_problematic']:,} of {d['n_rows']:,} people: the worst (row "
                         f"{w.get('row')}) is linked to {sens} = {fmt_label(w.get('value'))} "
                         f"with probability {fmt_pct(d['max_posterior'])}.")}
    ck = sec["ck_safety"]
    ck_fails = any(c["satisfied"] is False for c in checks if c["id"].startswith("ck_safety"))
    if ck["status"] == "ok" and (ck_fails or not any_fails):
        row = next(x for x in ck["max_safe_k"] if x["c"] == c_v)
        ms = row["implications"]
        first = 0 if ms is None else ms + 1
        if first <= ck["k_max"] and (ms is None or ms < ck["k_max"]):
            curve = ck["curve"]["implications"]
            return {"model": "ck_safety_implications", "certainty": curve[first],
                    "knowledge": f"{first} implications",
                    "text": (f"An adversary who knows only {fmt_count(first, 'fact')} of the form "
                             f"“if A then B” about the "
                             f"people in this release can be {fmt_pct(curve[first])} sure of "
                             f"someone's {sens} (threshold {fmt_pct(c_v)}).")}
    sk = by_id.get("skyline")
    if sk and sk["satisfied"] is False:
        b = sec["skyline"]["worst"]
        return {"model": "skyline", "certainty": as_float(b["value"]),
                "knowledge": f"(ℓ, k, m) = ({b['l']}, {b['k']}, {b['m']})",
                "text": sk["plain"] + f" The most exposed value is {fmt_label(b['sigma'])}."}
    for mid in ("robustness", "k_anonymity", "l_diversity", "entropy_l_diversity",
                "t_closeness"):
        c = by_id.get(mid)
        if c and c["satisfied"] is False:
            return {"model": mid, "certainty": None, "knowledge": None, "text": c["plain"]}
    for c in checks:                     # risk and the registry's models, in verdict order
        if c["satisfied"] is False:
            return {"model": c["id"], "certainty": None, "knowledge": None, "text": c["plain"]}
    best = None
    for c in checks:
        if c["satisfied"] is not None and isinstance(c["achieved"], (int, float)) and \
                c["id"] in ("alpha_k_anonymity", "ck_safety_implications", "skyline", "robustness",
                            "foreground"):
            if best is None or c["achieved"] > best["achieved"]:
                best = c
    if best is None:
        return {"model": None, "certainty": None, "knowledge": None,
                "text": "No model flags a risk at the chosen thresholds."}
    return {"model": best["id"], "certainty": best["achieved"], "knowledge": None,
            "text": ("No model flags a risk at the chosen thresholds. The closest is "
                     f"{best['title']}: {best['plain']}")}


# ============================================================================ remedies
#: checks a Mondrian release with the classical and (c,k) criteria fixes in one command
_GENERALIZABLE = ("k_anonymity", "l_diversity", "entropy_l_diversity", "t_closeness",
                  "alpha_k_anonymity", "ck_safety_implications", "ck_safety_negations", "risk")


def _add_remedies(checks: list[dict], whole: dict | None, params: dict, data: str, *,
                  risk: dict | None = None) -> list[str]:
    """Give every failing check its remedy (a command, or why none exists); list them.

    When a threshold is out of reach of every generalization (:func:`_unreachable`), no
    generalizing command is offered at all — neither Mondrian nor SkylineAnonymize, whose
    release would still miss that threshold: only the sentence saying why.
    """
    from ..registry import generalizable_checks

    by_id = {c["id"]: c for c in checks}
    failing = [c for c in checks if c["satisfied"] is False]
    out: list[str] = []
    unreachable = bool(_unreachable(by_id, whole, params, risk))
    fixable = set(_GENERALIZABLE) | generalizable_checks()
    if any(c["id"] in fixable for c in failing):
        text = _generalize_remedy(by_id, whole, params, data, risk)
        for c in failing:
            if c["id"] in fixable:
                c["remedy"] = text
        out.append(text)
    if unreachable and "skyline" in by_id and by_id["skyline"]["satisfied"] is False:
        text = _generalize_remedy(by_id, whole, params, data, risk)   # why none can pass
        by_id["skyline"]["remedy"] = text
        if text not in out:
            out.append(text)
    elif "skyline" in by_id and by_id["skyline"]["satisfied"] is False:
        ell, k, m = params["point"]
        text = _command(data, params, "skyline",
                        ["--skyline", f"*:{ell},{k},{m},{params['c_verdict']:g}"])
        by_id["skyline"]["remedy"] = text
        if text not in out:
            out.append(text)
    for cid in ("robustness", "foreground"):
        if cid in by_id and by_id[cid]["satisfied"] is False and params.get("r"):
            text = _command(data, params, "art", ["--r", f"{params['r']:g}"])
            by_id[cid]["remedy"] = text
            if text not in out:
                out.append(text)
    return out


def _generalize_remedy(by_id: dict, whole: dict | None, params: dict, data: str,
                       risk: dict | None = None) -> str:
    """Return the Mondrian command meeting every classical and (c,k) threshold, or why not.

    The declared models that a generalization can fix add their own criterion flags
    (:func:`fastpriv.registry.remedy_criteria`).
    """
    from ..registry import remedy_criteria
    unreachable = _unreachable(by_id, whole, params, risk)
    if unreachable:
        return ("No generalization of these quasi-identifiers can pass: even one group of "
                "the whole table fails " + "; ".join(unreachable) + ". Lower the threshold "
                "or protect fewer sensitive values.")
    min_size = params["min_size"]
    if "risk" in by_id and params.get("max_risk"):      # prosecutor risk 1/k ≤ max_risk
        min_size = max(min_size, math.ceil(1 / params["max_risk"] - 1e-12))
    crit = ["--min-size", str(min_size)]
    if "entropy_l_diversity" in by_id:
        crit += ["--min-l", str(params["min_l"]), "--l-kind", "entropy"]
    elif "l_diversity" in by_id:
        crit += ["--min-l", str(params["min_l"])]
    if "t_closeness" in by_id:
        crit += ["--max-t", f"{params['max_t']:g}"]
    if any(cid.startswith("ck_safety") for cid in by_id):
        crit += ["--c", f"{params['c_verdict']:g}", "--k", str(params["k"])]
    elif "alpha_k_anonymity" in by_id:
        crit += ["--c", f"{params['c_verdict']:g}", "--k", "0"]
    return _command(data, params, "mondrian", _merge_criteria(
        crit + remedy_criteria(by_id, params.get("thresholds") or {})))


def _merge_criteria(crit: list[str]) -> list[str]:
    """Merge repeated ``--max-…`` / ``--min-…`` flags into the strictest value of each."""
    out: list[str] = []
    where: dict[str, int] = {}
    for i in range(0, len(crit), 2):
        flag, value = crit[i], crit[i + 1]
        if flag in where and flag.startswith(("--max-", "--min-")):
            j = where[flag]
            pick = min if flag.startswith("--max-") else max
            out[j + 1] = f"{pick(float(out[j + 1]), float(value)):g}"
            continue
        where[flag] = len(out)
        out += [flag, value]
    return out


def _unreachable(by_id: dict, whole: dict | None, params: dict,
                 risk: dict | None = None) -> list[str]:
    """Thresholds that the whole table as one group misses (so no generalization meets).

    Nothing is known when the whole-table section did not run (skipped, or a model refused
    the input). The re-identification risk threshold is out of reach when a class of every
    record (section ``risk``) is still too small: 1/n > ``max_risk``.
    """
    out = []
    n_rec = ((risk or {}).get("audit") or {}).get("params", {}).get("n_records")
    max_risk = params.get("max_risk")
    if "risk" in by_id and n_rec is not None and max_risk is not None and (
            max_risk <= 0 or math.ceil(1 / max_risk - 1e-12) > n_rec):
        out.append(f"prosecutor risk ≤ {max_risk:g} (one class of all {n_rec:,} records "
                   f"has risk {1 / n_rec if n_rec else 1:.4g})")
    if not whole or whole.get("status") != "ok":
        return out
    c_v = params["c_verdict"]
    if "l_diversity" in by_id and whole["l"] < params["min_l"]:
        out.append(f"distinct ℓ ≥ {params['min_l']} (the table has {whole['l']} values)")
    if "entropy_l_diversity" in by_id and whole["entropy_l"] < params["min_l"] - 1e-12:
        out.append(f"entropy ℓ ≥ {params['min_l']} (the table reaches "
                   f"{whole['entropy_l']:.3g})")
    if "alpha_k_anonymity" in by_id and whole["alpha"] >= c_v:
        out.append(f"α < {c_v:g} (the most common value is {fmt_pct(whole['alpha'])} of all "
                   "rows)")
    if any(cid.startswith("ck_safety") for cid in by_id) and whole["ck"] >= c_v:
        out.append(f"(c,k)-safety at k = {params['k']} (disclosure {fmt_pct(whole['ck'])} "
                   f"with one group, must stay below {fmt_pct(c_v)})")
    return out


def _command(data: str, params: dict, method: str, criteria: list[str]) -> str:
    """Return the remedy command, or why none reads the data as the audit did."""
    reading = params.get("reading", {})
    if reading.get("nulls") == "value":
        return NULLS_VALUE_REMEDY
    return anonymize_command(data, method=method, qi=params.get("qi"),
                             sensitive=params["sensitive"], criteria=criteria, **reading)


#: The options with which a suggested command reads DATA as the command that suggests it
#: read it (the keywords of :func:`anonymize_command`, each the flag of the same name).
READING_OPTIONS = ("weight", "nulls", "encoding", "delimiter")

#: The remedy of an audit that read nulls as a value: no command reads the data that way.
NULLS_VALUE_REMEDY = ("No fastpriv anonymize command reads nulls as a value (this audit: "
                      "--nulls value): its methods generalize no null. Audit again with "
                      "--nulls drop: its remedy publishes the rows without nulls.")


def _reading(options: dict[str, Any] | None) -> dict[str, Any]:
    """Return ``options`` (how a remedy reads the data) after checking its keys."""
    from ..errors import InputError

    options = dict(options or {})
    unknown = sorted(set(options) - set(READING_OPTIONS))
    if unknown:
        raise InputError(f"remedy_options: unknown option(s) {unknown}; expected some of "
                         f"{list(READING_OPTIONS)}")
    return options


def anonymize_command(data: str, *, method: str, qi: list[str] | None,
                      sensitive: str | None, criteria: list[str],
                      weight: str | None = None, nulls: str = "error",
                      encoding: str | None = None, delimiter: str | None = None) -> str:
    """Return the shell-quoted ``fastpriv anonymize`` command of a remedy.

    The command reads ``data`` as the command that suggests it read it, so that it runs as
    printed on the same people: ``weight`` (the multiplicity column of an aggregated table,
    so that the release counts people, not rows), ``nulls`` (``"error"`` or ``"drop"``:
    ``fastpriv anonymize`` reads no null as a value, see :data:`NULLS_VALUE_REMEDY`), and
    a CSV's ``encoding`` and ``delimiter`` become the flags of the same names.

    Raises
    ------
    InputError
        ``nulls`` is not ``"error"`` or ``"drop"``.

    Examples
    --------
    >>> print(anonymize_command("adult", method="mondrian", qi=["age"], sensitive="job",
    ...                         criteria=["--min-size", "5"]))  # doctest: +NORMALIZE_WHITESPACE
    fastpriv anonymize adult --method mondrian --qi age --sensitive job --min-size 5
    -o release.parquet
    >>> print(anonymize_command("agg.csv", method="mondrian", qi=["age"], sensitive="job",
    ...                         criteria=["--min-size", "5"], weight="n", nulls="drop",
    ...                         delimiter=";"))  # doctest: +NORMALIZE_WHITESPACE
    fastpriv anonymize agg.csv --method mondrian --qi age --sensitive job --weight n
    --nulls drop --delimiter ';' --min-size 5 -o release.parquet

    """
    from .._validation import check_choice

    check_choice(nulls, "nulls (fastpriv anonymize reads nulls as an error or drops them)",
                 ("error", "drop"))
    reading = [*(["--weight", weight] if weight else []),
               *(["--nulls", nulls] if nulls != "error" else []),
               *(["--encoding", encoding] if encoding else []),
               *(["--delimiter", "tab" if delimiter == "\t" else delimiter]
                 if delimiter else [])]
    args = ["fastpriv", "anonymize", data, "--method", method, "--qi",
            *(qi or ["QI_COLUMNS..."]), *(["--sensitive", sensitive] if sensitive else []),
            *reading, *criteria, "-o", "release.parquet"]
    return " ".join(a if a.endswith("...") else shlex.quote(str(a)) for a in args)


# ============================================================================ text
def verdict_text(verdict: dict, *, verbose: bool = False) -> str:
    """Render a verdict as plain text: headline, PASS/FAIL per check, risk and remedies.

    Checks that were not run are listed only with ``verbose``.
    """
    lines = [verdict["headline"]]
    for c in verdict["checks"]:
        if c["satisfied"] is None and not verbose and c["status"] != "failed":
            continue
        mark = {True: "PASS", False: "FAIL", None: "n/a "}[c["satisfied"]]
        if c["status"] == "failed":
            mark = "ERR "
        text = c["plain"] if c["satisfied"] is not None else (c["reason"] or "")
        req = f" [{c['required']}]" if c.get("required") and c["satisfied"] is not None else ""
        lines.append(f"  {mark}  {c['title']}{req}: {text}")
    lines.append(("Most important risk: " if verdict["violated"] else
                  "Closest risk beyond the thresholds: ") + verdict["key_risk"]["text"])
    for r in verdict.get("remedies", []):
        lines.append(("To fix: " + r) if r.startswith("fastpriv ") else r)
    return "\n".join(lines)
