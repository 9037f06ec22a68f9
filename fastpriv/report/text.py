"""Plain-language formatting shared by the report and the command line."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["fmt_label", "fmt_pct", "fmt_count", "as_float", "describe_key"]


def fmt_label(x: Any) -> str:
    """Human form of a group key or value label (tuples joined by ', ')."""
    if isinstance(x, (tuple, list)):
        return ", ".join(fmt_label(v) for v in x)
    if x is None:
        return "(null)"
    return str(x)


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
    return ", ".join(f"{n}={fmt_label(v)}" for n, v in zip(names, values, strict=True))
