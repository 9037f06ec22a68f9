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

import shlex
from typing import Any

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
    remedies = _add_remedies(checks, sec, {**params, "reading": reading},
                             data_spec or "DATA")
    satisfied = [c["id"] for c in checks if c["satisfied"] is True]
    violated = [c["id"] for c in checks if c["satisfied"] is False]
    errors = [{"id": c["id"], "title": c["title"], "error": c["reason"]}
              for c in checks if c["status"] == "failed"]
    risk = _key_risk(sec, checks, sens, params)
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


def _checks(sec: dict, params: dict, sens: str | None) -> list[dict]:
    """One check per model: the question, PASS/FAIL, the achieved value and a sentence.

    The checks of the models whose section the report builds (their ``report_checks``, in
    model order), then those of the verdict models the registry runs (section ``models``).
    """
    from ..registry import hooks

    out = [c for fn in hooks("report_checks") for c in fn(sec, params, sens)]
    return out + _declared_checks(sec)


def _declared_checks(sec: dict) -> list[dict]:
    """Return the checks of the verdict models declared in :mod:`fastpriv.registry`."""
    return [c for r in (sec.get("models") or {}).values() for c in r["checks"]]


def _key_risk(sec: dict, checks: list[dict], sens: str | None, params: dict) -> dict:
    """Pick the single most important risk: the one needing the least knowledge.

    The models' ``key_risk`` functions are asked in their ``key_risk_rank`` order (the
    knowledge-free disclosure first); then the first failing check names it; when nothing
    fails, the closest risk beyond the thresholds (the highest certainty among the checks
    the models declare ``closest``).
    """
    from ..registry import closest_checks, hooks

    by_id = {c["id"]: c for c in checks}
    for fn in hooks("key_risk", rank="key_risk_rank"):
        found = fn(sec, by_id, checks, params, sens)
        if found is not None:
            return found
    for c in checks:                     # the rest, in verdict order
        if c["satisfied"] is False:
            return {"model": c["id"], "certainty": None, "knowledge": None, "text": c["plain"]}
    closest = closest_checks()
    best = None
    for c in checks:
        if c["satisfied"] is not None and isinstance(c["achieved"], (int, float)) and \
                c["id"] in closest:
            if best is None or c["achieved"] > best["achieved"]:
                best = c
    if best is None:
        return {"model": None, "certainty": None, "knowledge": None,
                "text": "No model flags a risk at the chosen thresholds."}
    return {"model": best["id"], "certainty": best["achieved"], "knowledge": None,
            "text": ("No model flags a risk at the chosen thresholds. The closest is "
                     f"{best['title']}: {best['plain']}")}


# ============================================================================ remedies
def _add_remedies(checks: list[dict], sec: dict, params: dict, data: str) -> list[str]:
    """Give every failing check its remedy (a command, or why none exists); list them.

    A failing check a generalization can fix (:func:`fastpriv.registry.generalizable_checks`)
    gets the Mondrian command meeting every threshold; another gets its model's ``remedy``.
    When a threshold is out of reach of every generalization (:func:`_unreachable`), no
    generalizing command is offered at all — neither Mondrian nor SkylineAnonymize, whose
    release would still miss that threshold: only the sentence saying why.
    """
    from ..registry import check_model, generalizable_checks, load

    by_id = {c["id"]: c for c in checks}
    failing = [c for c in checks if c["satisfied"] is False]
    out: list[str] = []
    unreachable = bool(_unreachable(by_id, sec, params))
    fixable = generalizable_checks()

    def generalize() -> str:
        return _generalize_remedy(by_id, sec, params, data)

    if any(c["id"] in fixable for c in failing):
        text = generalize()
        for c in failing:
            if c["id"] in fixable:
                c["remedy"] = text
        out.append(text)
    for c in failing:
        m = check_model(c["id"])
        if c["id"] in fixable or m is None or m.remedy is None:
            continue
        text = load(m.remedy)(params, unreachable=unreachable, generalize=generalize,
                              command=lambda method, crit: _command(data, params, method,
                                                                    crit))
        if text is not None:
            c["remedy"] = text
            if text not in out:
                out.append(text)
    return out


def _generalize_remedy(by_id: dict, sec: dict, params: dict, data: str) -> str:
    """Return the Mondrian command meeting every generalizable threshold, or why not.

    Every model adds its own criterion flags (:func:`fastpriv.registry.remedy_criteria`);
    repeated flags keep their strictest value.
    """
    from ..registry import remedy_criteria

    unreachable = _unreachable(by_id, sec, params)
    if unreachable:
        return ("No generalization of these quasi-identifiers can pass: even one group of "
                "the whole table fails " + "; ".join(unreachable) + ". Lower the threshold "
                "or protect fewer sensitive values.")
    return _command(data, params, "mondrian", _merge_criteria(remedy_criteria(by_id, params)))


#: Repeated criterion flags keep their strictest value: the largest of ``--min-…`` and
#: ``--k`` (more knowledge), the smallest of ``--max-…`` and ``--c``.
_STRICTEST = {"--min-": max, "--k": max, "--max-": min, "--c": min}


def _merge_criteria(crit: list[str]) -> list[str]:
    """Merge repeated criterion flags into the strictest value of each (:data:`_STRICTEST`)."""
    out: list[str] = []
    where: dict[str, int] = {}
    for i in range(0, len(crit), 2):
        flag, value = crit[i], crit[i + 1]
        pick = next((f for p, f in _STRICTEST.items()
                     if flag == p or (p.endswith("-") and flag.startswith(p))), None)
        if flag in where and pick is not None:
            j = where[flag]
            out[j + 1] = _strictest(pick, out[j + 1], value)
            continue
        where[flag] = len(out)
        out += [flag, value]
    return out


def _strictest(pick: Any, a: str, b: str) -> str:
    """Return the value ``pick`` chooses of two flag values, written as they were."""
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        return str(pick(int(a), int(b)))
    return f"{pick(float(a), float(b)):g}"


def _unreachable(by_id: dict, sec: dict, params: dict) -> list[str]:
    """Thresholds that no generalization meets, in model order (each model's ``unreachable``).

    Most are read from the whole table as one group (section ``whole_table``; nothing is
    known when it did not run); the re-identification risk's from its own section.
    """
    from ..registry import hooks

    return [t for fn in hooks("unreachable") for t in fn(by_id, sec, params)]


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
