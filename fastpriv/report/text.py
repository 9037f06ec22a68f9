"""Plain-language formatting shared by the report and the command line."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["fmt_label", "fmt_pct", "fmt_count", "as_float", "describe_key", "escape_control"]

# C0 controls, DEL, C1 controls (incl. the 8-bit CSI), and the invisible direction marks
# and overrides that reorder what a terminal shows
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(m: re.Match) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def escape_control(text: str, *, keep_lines: bool = False) -> str:
    r"""Show the terminal control characters of ``text`` as escapes.

    Parameters
    ----------
    text : str
        A column name, a value, or a whole line of output.
    keep_lines : bool, default False
        Let newlines and tabs through (for whole lines of output); otherwise they are
        escaped as well (for one name or value, which must stay on its line).

    Returns
    -------
    str
        ``text`` with C0 and C1 control characters, DEL and the Unicode direction marks
        and overrides written as ``\x1b``, ``\u202e``, ``\n``, ... — so a name cannot
        recolour the terminal, move its cursor or hide text.

    Examples
    --------
    >>> escape_control("a\x1b[31mb")
    'a\\x1b[31mb'
    >>> escape_control("two\nlines", keep_lines=True) == "two\nlines"
    True

    """
    return (_CONTROL_BUT_LINES if keep_lines else _CONTROL).sub(_escaped, text)


def fmt_label(x: Any) -> str:
    """Human form of a group key or value label (tuples joined by ', ', controls escaped)."""
    if isinstance(x, (tuple, list)):
        return ", ".join(fmt_label(v) for v in x)
    if x is None:
        return "(null)"
    return escape_control(str(x))


def fmt_pct(p: float) -> str:
    """Format a probability as a percentage (two decimals just below 100%)."""
    if p is None or not math.isfinite(float(p)):
        return str(p)
    v = 100.0 * float(p)
    if v >= 99.95 and p < 1:
        return f"{v:.2f}%"
    return f"{v:.0f}%" if abs(v - round(v)) < 0.05 else f"{v:.1f}%"


def fmt_count(count: int, noun: str, plural: str | None = None) -> str:
    """'1 fact', '3 facts' (thousands separated)."""
    word = noun if count == 1 else (plural or noun + "s")
    return f"{count:,} {word}"


def as_float(x: Any) -> float:
    """Read a number from a result dict (``{"float": …}`` for exact values, strings too)."""
    if isinstance(x, dict) and "float" in x:
        return float(x["float"])
    if isinstance(x, str):
        return float(x)
    return float(x)


def describe_key(names: list[str], label: Any) -> str:
    """Name a group key with its columns: ``age=17, sex=Male`` (one column: ``gid=4``)."""
    values = label if isinstance(label, (tuple, list)) else (label,)
    if len(values) != len(names):
        return fmt_label(label)
    return ", ".join(f"{escape_control(str(n))}={fmt_label(v)}"
                     for n, v in zip(names, values, strict=True))


def fmt_number(x: Any) -> str:
    """Format a measured number for a person: integers as they are, reals to 3 digits."""
    v = as_float(x)
    if not math.isfinite(v):
        return "∞" if v > 0 else ("-∞" if v < 0 else "undefined")
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.3g}"

