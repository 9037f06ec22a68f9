"""The order of group and value labels used by the streaming and distributed audits.

Labels of one column compare with ``<``; several key columns compare as tuples, column by
column; a null (``None``) sorts last; labels of kinds that do not compare (an int and a
str) fall back to their text.
"""

from __future__ import annotations

from typing import Any

__all__ = ["label_less", "LabelKey"]


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
