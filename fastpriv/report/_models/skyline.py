"""The privacy skyline in the report: its verdict check, key risk and remedy.

The section ``skyline`` holds the basic 3D check at the verdict's point (ℓ, k, m), the
breach probability of the most exposed value and the knowledge skylines; the functions
below are what :mod:`fastpriv.registry` declares for the model.
"""

from __future__ import annotations

from collections.abc import Callable

from ...registry import make_check
from ..text import as_float, fmt_count, fmt_label, fmt_pct
from . import has_release, not_run

__all__ = ["checks", "key_risk", "remedy"]


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
