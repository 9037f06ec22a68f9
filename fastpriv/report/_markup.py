"""The HTML building blocks of the report page: escaping, numbers, tables, skipped sections.

Shared by :mod:`fastpriv.report.html` (the page) and the models' ``report_html`` functions
(:mod:`fastpriv.report._models`). Every string taken from the data goes through :func:`e`
(``html.escape`` with quotes), so a label such as ``<script>`` is shown, never run.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

__all__ = ["e", "plain", "fmt", "pct", "num", "table", "skip"]


def e(x: Any) -> str:
    """HTML-escape any value (quotes included); tuples/lists are joined with ', '."""
    if isinstance(x, (list, tuple)):
        return escape(", ".join(plain(v) for v in x), quote=True)
    return escape(plain(x), quote=True)


def plain(x: Any) -> str:
    """Show a value in words: None as –, booleans as yes/no, floats rounded."""
    if isinstance(x, (list, tuple)):
        return "(" + ", ".join(plain(v) for v in x) + ")"
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return fmt(x)
    return str(x)


def fmt(x: Any, digits: int = 4) -> str:
    """Format a number of the payload (``{"float": …}``, ``"inf"``, …) to ``digits`` digits."""
    if isinstance(x, dict) and "float" in x:
        x = x["float"]
    if isinstance(x, str):
        return {"inf": "∞", "-inf": "−∞", "nan": "undefined"}.get(x, x)
    if isinstance(x, bool) or x is None:
        return plain(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if not math.isfinite(x):
            return "∞" if x > 0 else ("−∞" if x < 0 else "undefined")
        if x == int(x) and abs(x) < 1e15:
            return f"{int(x):,}"
        return f"{x:.{digits}g}"
    return str(x)


def pct(x: Any) -> str:
    """Format a probability of the payload as a percentage (escaped when not a number)."""
    if isinstance(x, dict) and "float" in x:
        x = x["float"]
    try:
        v = float(x)
    except (TypeError, ValueError):
        return e(x)
    if not math.isfinite(v):
        return e(fmt(x))
    p = 100 * v
    if 99.95 <= p < 100:
        return f"{p:.2f}%"
    return f"{p:.0f}%" if abs(p - round(p)) < 0.05 else f"{p:.1f}%"


def num(x: Any) -> float:
    """Read a number of the payload as a float (``"inf"``, ``"nan"`` and ``{"float": …}`` too)."""
    if isinstance(x, dict) and "float" in x:
        return float(x["float"])
    if isinstance(x, str):
        return float(x) if x not in ("inf", "-inf", "nan") else {"inf": math.inf,
                                                                 "-inf": -math.inf}.get(x,
                                                                                        math.nan)
    return float(x)


def table(headers: list[str], rows: list[list[Any]], *, num: set[int] | None = None,
           raw: set[int] | None = None) -> str:
    """Build a table; cells are escaped unless their column is in ``raw`` (built HTML)."""
    num = num or set()
    raw = raw or set()
    out = ["<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in headers) +
           "</tr></thead><tbody>"]
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            cls = ' class="num"' if i in num else ""
            body = c if i in raw else (e(fmt(c)) if i in num else e(c))
            cells.append(f"<td{cls}>{body}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def skip(sec: dict) -> str:
    """Say why a section did not run (skipped or failed), with its reason."""
    word = "Not run" if sec.get("status") == "skipped" else "Failed"
    return f'<p class="skip"><b>{word}.</b> {e(sec.get("reason") or "")}</p>'
