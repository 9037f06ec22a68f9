"""The row-level models in the report: r-robustness and the foreground-knowledge attack.

Both read the rows (sections ``robustness`` and ``foreground``: the audit's or the
attack's ``to_dict()``); the functions below are what :mod:`fastpriv.registry` declares
for them: their verdict checks, their key risks and their remedy (ART's ``--r``).
"""

from __future__ import annotations

from collections.abc import Callable

from ...registry import make_check
from ..text import fmt_label, fmt_pct
from . import has_release, not_run, plain_risk

__all__ = ["robustness_checks", "foreground_checks", "robustness_key_risk",
           "foreground_key_risk", "remedy"]


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
