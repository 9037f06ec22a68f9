"""Labels: their order (streaming and distributed audits) and their text (releases).

Order: labels of one column compare with ``<``; several key columns compare as tuples,
column by column; a null (``None``) sorts last; labels of kinds that do not compare (an int
and a str) fall back to their text.

Text (:func:`label_text`): how a value is written in a published label (a generalized
range ``[17, 25]``, a value set, a hierarchy file) and how a data value is matched with a
hierarchy's text. It is exact — two different values never share a text, and the text is
the value as written, never trimmed or case-folded: ``" M"`` stays ``" M"``.
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["label_less", "LabelKey", "label_text", "decimal_text"]


def label_text(v: Any) -> str:
    """Return the exact text of one label (a Python value, as Arrow's ``to_pylist`` gives).

    Strings are themselves; booleans ``True``/``False``; integers in full (``2**63 - 1``
    has all its digits); floats without a decimal point when integral (``39.0`` is
    ``39``, ``-0.0`` is ``0``), else their shortest round-trip text (``repr``); a
    :class:`~fractions.Fraction` as its exact decimal (:func:`decimal_text`); anything
    else (``Decimal``, dates, times, durations) its ``str``, which is exact for the
    microsecond values :func:`fastpriv._arrow.canonical_labels` hands out.
    """
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, Fraction):
        return decimal_text(v)
    if isinstance(v, (float, np.floating)):
        x = float(v)
        return str(int(x)) if x.is_integer() else repr(x)
    return str(v)


def decimal_text(q: Fraction) -> str:
    """Exact decimal text of ``q`` (``3/2`` → ``1.5``); ``p/q`` when it does not terminate."""
    if q.denominator == 1:
        return str(q.numerator)
    d, k = q.denominator, 0
    while d % 2 == 0 or d % 5 == 0:
        d //= 2 if d % 2 == 0 else 5
        k += 1
    if d != 1:
        return f"{q.numerator}/{q.denominator}"
    digits = str(abs(q.numerator) * 10 ** k // q.denominator).rjust(k + 1, "0")
    body = f"{digits[:-k]}.{digits[-k:]}".rstrip("0").rstrip(".")
    return ("-" if q < 0 else "") + body


def label_less(a: Any, b: Any) -> bool:
    """Key order of group labels (tuples for several columns); None (null) sorts last."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        for x, y in zip(a, b, strict=False):
            if x == y or (x is None and y is None):
                continue
            return label_less(x, y)
        return False
    if a is None:
        return False
    if b is None:
        return True
    try:
        return a < b
    except TypeError:
        return str(a) < str(b)


class LabelKey:
    """``sorted(labels, key=LabelKey)``: the order of :func:`label_less`."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: "LabelKey") -> bool:
        return label_less(self.v, other.v)


class FieldsKey:
    """Sort key of a tuple of fields: floats by value, labels in key order (:func:`label_less`).

    ``sorted(entries, key=lambda e: FieldsKey((-e.posterior, e.group, …)))``: the first
    field that differs decides.
    """

    __slots__ = ("parts",)

    def __init__(self, parts: tuple) -> None:
        self.parts = parts

    def __lt__(self, other: "FieldsKey") -> bool:
        for a, b in zip(self.parts, other.parts, strict=True):
            if a == b or (a is None and b is None):
                continue
            if isinstance(a, float) and isinstance(b, float):
                return a < b
            return label_less(a, b)
        return False
