"""Generalization hierarchies: load, build, validate, and encode as gather tables.

A hierarchy gives, for every original value of one attribute, its label at each
generalization level: level 0 is the value itself, the last level is usually ``*``
(suppressed). This is the layout of ARX and of the hierarchies bundled with
:mod:`fastpriv.datasets` — a CSV file with one row per value and one column per level::

    17;[15, 20);[10, 20);[0, 20);[0, 40);*
    18;[15, 20);[10, 20);[0, 20);[0, 40);*

Build one with :meth:`Hierarchy.from_csv` (``;`` or ``,`` separated, with or without a
header row — both detected), :meth:`Hierarchy.from_mapping`, :meth:`Hierarchy.intervals`
(numeric attributes, from interval widths, e.g. Adult age 5, 10, 20, 40, ``*``, or from cut
points), :meth:`Hierarchy.ordering` (ordered values grouped in blocks per level),
:meth:`Hierarchy.masking` (characters masked one by one, e.g. zip codes) or
:meth:`Hierarchy.suppression` (value or ``*``). The builders follow ARX's interval, order
and redaction builders.

A folder of hierarchies (``hierarchies=DIR``, CLI ``--hierarchies DIR``) is read as ARX lays
one out (:func:`find_hierarchy_files`): an attribute's file is ``<attribute>.csv`` or
``<data set>_hierarchy_<attribute>.csv``, its name written exactly as the attribute (no
case-folding), and every other file is ignored. ARX's ``data/`` folder holds three data
sets' files (``adult_hierarchy_age.csv``, ``atus_hierarchy_age.csv``,
``ihis_hierarchy_age.csv``, …): one data set's are read — the one named by
``hierarchy_prefix=`` (CLI ``--hierarchy-prefix``), else the one named like the data file
(``adult.csv``), else the only one with a file for every QI — and anything left undecided
(several such data sets; ``age.csv`` beside ``adult_hierarchy_age.csv``) is an error naming
the candidates.

Validation happens up front, with the offending values named:

* **consistency** (construction): every row has the same number of levels, a value has one
  row (one parent per level), and the levels nest — two values sharing a label at level ℓ
  share it at every level above (the hierarchy is a tree, so raising a level never splits a
  group);
* **coverage** (:meth:`Hierarchy.bind`): every value present in the data has a row.

:meth:`Hierarchy.bind` encodes a hierarchy against a data column: the column's distinct
values (sorted, so domain code ``i`` is ``domain[i]``, the encoding of
:func:`fastpriv._arrow.encode_column`) and, per level, an int32 array mapping domain code →
generalized code. Generalizing a column to a level is then a single gather
``maps[level][codes]``. Generalized codes at each level are ordered by the smallest domain
value they contain, so interval levels come out in numeric order.

Values are compared exactly as written: a data value matches the hierarchy row whose
first cell is its text (:func:`fastpriv._labels.label_text`: ``39`` is ``"39"``, an
integral float ``39.0`` is ``"39"`` and is also found as ``"39.0"``), never trimmed or
case-folded. A data value ``" M"`` is not the hierarchy's ``M``: when a value is missing
only that way (equal after removing outer spaces and case), the error names both
spellings.

Numbers are exact. The interval builder computes every bound in exact arithmetic — Python
integers for integer columns (int64 and uint64 extremes included), decimal fractions for
decimals and floats (a float is the number its shortest text writes, ``0.1`` is one tenth)
— so every value lies in its own ``[lo, hi)`` read as exact decimal numbers. Columns the
interval builder cannot order exactly as numbers (dates, times, strings) are refused with
their name and type.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
import numbers
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ._labels import label_text
from .errors import InputError, InputTypeError

__all__ = ["Hierarchy", "BoundHierarchy", "HierarchyError", "HierarchyFiles",
           "find_hierarchy_files", "resolve_hierarchies"]


class HierarchyError(InputError):
    """A hierarchy is malformed or does not cover the data (an :class:`InputError`)."""


_LEVEL_HEADER = re.compile(r"^\s*(level|lvl|l|generalization)?[\s_-]*\d+\s*$", re.IGNORECASE)
_HEADER_WORDS = {"value", "values", "original", "level0", "level 0", "attribute"}


def _exact(x: Any) -> int | Fraction | None:
    """Return the exact number ``x`` is, as written (None: not a finite number).

    Integers are themselves, decimals and fractions their exact value, and a float the
    decimal its shortest text writes (``0.1`` is 1/10, ``2.0**60`` is 2**60).
    """
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, Decimal):
        return Fraction(x) if x.is_finite() else None
    if isinstance(x, numbers.Real) and math.isfinite(float(x)):
        return Fraction(label_text(float(x)))
    return None


def _show(values: Sequence[Any], limit: int = 10) -> str:
    shown = ", ".join(repr(v) for v in list(values)[:limit])
    more = f", … ({len(values)} in all)" if len(values) > limit else ""
    return shown + more


class Hierarchy:
    """A generalization hierarchy of one attribute (validated for consistency).

    Parameters
    ----------
    rows : sequence of sequences of str
        One row per original value: ``[value, level-1 label, …, top label]``.
    name : str
        Attribute name (used in error messages and by :func:`resolve_hierarchies`).

    Raises
    ------
    HierarchyError
        Rows of different lengths, a value listed twice with different generalizations,
        levels that do not nest (a label with two parents at one level), or a cycle (a
        label that at a higher level does not contain the values it holds below); the
        message names the values and the level. An :class:`~fastpriv.InputError`.

    Examples
    --------
    >>> h = Hierarchy([["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]], name="x")
    >>> h.height, h.values
    (3, ['a', 'b', 'c'])

    """

    def __init__(self, rows: Sequence[Sequence[Any]], *, name: str = "attribute") -> None:
        if not isinstance(name, str):
            raise InputTypeError(f"name must be a string, got {type(name).__name__}")
        self.name = name
        if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
            raise InputTypeError(f"hierarchy {name!r}: rows must be a list of rows "
                                 "(lists of labels)")
        clean: list[tuple[str, ...]] = []
        for i, row in enumerate(rows):
            if isinstance(row, (str, bytes)) or not isinstance(row, Iterable):
                raise InputTypeError(f"hierarchy {name!r}: row {i} must be a list of labels, got "
                                f"{type(row).__name__}")
            cells = tuple(str(c) for c in row)
            if not cells:
                raise HierarchyError(f"hierarchy {name!r}: row {i} is empty")
            clean.append(cells)
        if not clean:
            raise HierarchyError(f"hierarchy {name!r} has no rows")
        widths = {len(r) for r in clean}
        if len(widths) > 1:
            h = max(set(len(r) for r in clean), key=[len(r) for r in clean].count)
            bad = [r[0] for r in clean if len(r) != h]
            raise HierarchyError(f"hierarchy {name!r}: rows must all have the same number of "
                                 f"levels; most have {h}, these values differ: {_show(bad)}")
        # one row per value: identical duplicates are tolerated, conflicting ones are not
        by_value: dict[str, tuple[str, ...]] = {}
        conflicts: list[str] = []
        for r in clean:
            prev = by_value.get(r[0])
            if prev is None:
                by_value[r[0]] = r
            elif prev != r:
                conflicts.append(r[0])
        if conflicts:
            v = conflicts[0]
            other = next(r for r in clean if r[0] == v and r != by_value[v])
            raise HierarchyError(
                f"hierarchy {name!r} is inconsistent: value {v!r} has two rows with different "
                f"generalizations ({';'.join(by_value[v])} vs {';'.join(other)}); conflicting "
                f"values: {_show(sorted(set(conflicts)))}")
        self._rows = list(by_value.values())
        self._check_nesting()

    def _check_nesting(self) -> None:
        h = self.height
        for lev in range(1, h - 1):
            parent: dict[str, str] = {}
            child_of: dict[str, str] = {}
            for r in self._rows:
                lab, up = r[lev], r[lev + 1]
                got = parent.setdefault(lab, up)
                child_of.setdefault(lab, r[0])
                if got != up:
                    raise HierarchyError(
                        f"hierarchy {self.name!r} is inconsistent: label {lab!r} at level {lev} "
                        f"generalizes to both {got!r} (value {child_of[lab]!r}) and {up!r} (value "
                        f"{r[0]!r}) at level {lev + 1}; each label needs one parent per level")
        self._check_no_cycles()

    def _check_no_cycles(self) -> None:
        """Refuse a label that names, at a higher level, fewer values than at a lower one.

        A label is a node of the tree whatever its level: a value kept unchanged at level 1
        (``c;c;*``) or a label repeated upwards covers the same values or more. A label that
        covers values it does not hold below (``a;b;*`` with ``b;a;*``: ``b`` generalizes
        ``a`` while ``a`` generalizes ``b``) is a cycle: its output would read as another
        value of the data.
        """
        seen: dict[str, tuple[int, set[str]]] = {}   # label -> (lowest level, its values)
        for lev in range(self.height):
            members: dict[str, set[str]] = {}
            for r in self._rows:
                members.setdefault(r[lev], set()).add(r[0])
            for lab, vals in members.items():
                low = seen.get(lab)
                if low is None:
                    seen[lab] = (lev, vals)
                    continue
                missing = low[1] - vals
                if missing:
                    raise HierarchyError(
                        f"hierarchy {self.name!r} is not a tree: label {lab!r} at level {lev} "
                        f"(values {_show(sorted(vals))}) does not contain what {lab!r} holds "
                        f"at level {low[0]} (values {_show(sorted(missing))}); a label must "
                        "name one node (a cycle or a label reused for other values)")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_csv(cls, path: str | os.PathLike, *, name: str | None = None,
                 sep: str | None = None, header: bool | None = None,
                 encoding: str = "utf-8") -> "Hierarchy":
        """Read an ARX-layout hierarchy CSV (one row per value, one column per level).

        Parameters
        ----------
        path : path-like
            The CSV file.
        name : str, optional
            Attribute name; default the file name without extension.
        sep : {";", ","}, optional
            Column separator; detected when omitted (``;`` if the first line contains one,
            else ``,``).
        header : bool, optional
            Whether the first row is a header; detected when omitted (a first row naming
            the attribute, ``value``/``original``, or ``level 0, level 1, …``; or a first
            row whose top label differs from the shared top label of all other rows while
            none of its labels occurs in the same column below).
        encoding : str
            Text encoding of the file (default ``"utf-8"``).

        """
        p = os.fspath(path)
        if not os.path.isfile(p):
            raise InputError(f"hierarchy file not found: {p!r}")
        try:
            with open(p, encoding=encoding, newline="") as fh:
                text = fh.read()
        except UnicodeDecodeError as exc:
            raise InputError(f"hierarchy {p!r} is not valid {encoding} text (byte "
                             f"{exc.start}); pass its encoding, e.g. encoding='latin-1'") from None
        except LookupError:
            raise InputError(f"encoding: unknown text encoding {encoding!r}") from None
        if name is None:
            name = os.path.splitext(os.path.basename(p))[0]
        return cls.from_text(text, name=name, sep=sep, header=header, source=p)

    @classmethod
    def from_text(cls, text: str, *, name: str = "attribute", sep: str | None = None,
                  header: bool | None = None, source: str = "<text>") -> "Hierarchy":
        """Parse CSV text in the layout of :meth:`from_csv`."""
        if text.startswith("\ufeff"):
            text = text[1:]
        first = next((ln for ln in re.split(r"\r\n|\r|\n", text) if ln.strip()), None)
        if first is None:
            raise HierarchyError(f"hierarchy {name!r} ({source}) is empty")
        if sep is None:
            sep = ";" if ";" in first else ","
        if sep not in (";", ",", "\t"):
            raise InputError(f"sep must be ';', ',' or a tab, got {sep!r}")
        # cells exactly as written: only CR/LF end a row (a quoted cell may hold them), and
        # only a blank line is skipped
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep)
                if r and not (len(r) == 1 and not r[0].strip())]
        if header is None:
            header = _looks_like_header(rows, name)
        if header:
            rows = rows[1:]
        if not rows:
            raise HierarchyError(f"hierarchy {name!r} ({source}) has a header but no rows")
        return cls(rows, name=name)

    @classmethod
    def from_mapping(cls, mapping: Mapping[Any, Sequence[Any]], *,
                     name: str = "attribute") -> "Hierarchy":
        """``{value: [level-1 label, level-2 label, …]}`` (level 0 is the key)."""
        if not isinstance(mapping, Mapping):
            raise InputTypeError(f"mapping must be a dict value -> labels, got "
                                 f"{type(mapping).__name__}")
        rows = []
        for v, ups in mapping.items():
            if isinstance(ups, (str, bytes)):
                ups = [ups]
            rows.append([label_text(v), *ups])
        return cls(rows, name=name)

    @classmethod
    def suppression(cls, values: Iterable[Any], *, name: str = "attribute",
                    top: str = "*") -> "Hierarchy":
        """Two levels: the value itself, or ``top`` (e.g. Adult race and sex)."""
        return cls([[label_text(v), top] for v in _distinct(values, "values", name)],
                   name=name)

    @classmethod
    def intervals(cls, values: Iterable[Any], widths: Sequence[Any] | None = None, *,
                  name: str = "attribute", anchor: float = 0, top: str | None = "*",
                  bounds: Sequence[float] | None = None,
                  groups: Sequence[int | Sequence[int]] | None = None,
                  below: float | None = None, above: float | None = None
                  ) -> "Hierarchy":
        """Interval hierarchy of a numeric attribute from nested interval widths.

        Level ℓ ≥ 1 puts value v in ``[lo, lo + w_ℓ)`` with ``lo = anchor + w_ℓ·⌊(v −
        anchor)/w_ℓ⌋``, labelled like the bundled Adult hierarchy (``"[15, 20)"``); a final
        ``top`` level (default ``*``) suppresses the value. Every bound is computed exactly
        (Python integers; decimal fractions for decimals and floats, a float being the
        decimal its shortest text writes) and written in full, so each value lies in its
        labels read as exact numbers — int64 and uint64 extremes included.

        Parameters
        ----------
        values : Arrow column or iterable of numbers
            The values to cover (e.g. the data column, or ``range(0, 120)``): integers,
            floats, decimals. A column of another type (dates, times, strings, booleans)
            or a value that is not a finite number is an :class:`InputError` naming the
            column ``name`` and the type.
        widths : sequence of positive numbers
            Increasing widths, each a multiple of the previous one so the levels nest
            (Adult age: ``[5, 10, 20, 40]``). A trailing ``"*"`` is accepted and means
            ``top="*"``.
        name : str
            Attribute name of the hierarchy (default ``"attribute"``).
        anchor : number
            Where intervals start (default 0).
        top : str or None
            Label of the final, fully suppressed level (default ``"*"``); None adds no
            such level.
        bounds : sequence of numbers, optional
            Instead of ``widths``: increasing cut points ``b0 < b1 < … < bn``; level 1 puts
            v in ``[b_i, b_{i+1})`` (ranges of any widths, like ARX's explicit intervals).
            A value outside ``[b0, bn)`` is refused unless ``below``/``above`` code it.
        groups : sequence, optional
            With ``bounds`` only: level ℓ + 1 merges adjacent level-ℓ ranges in blocks of
            ``groups[ℓ - 1]`` (an int, or a list of sizes used in turn, as ARX's groups);
            the merged range is labelled ``[first lower, last upper)``. As in ARX, levels
            stop once the data fall into one range, and ``top`` is added only when more
            than one range is left.
        below, above : number, optional
            Bottom and top coding (ARX's ranges): a value ``< below`` is labelled
            ``"<below"`` and a value ``>= above`` is labelled ``">=above"`` at every level
            but the top; ranges that cross these bounds are cut at them
            (``[23, 25)`` for ``below=23``).

        Raises
        ------
        InputError
            Both or neither of ``widths`` and ``bounds``; widths that do not nest;
            bounds that do not increase; a group size below 1; non-numeric values; values
            outside the bounds and not coded.

        Examples
        --------
        >>> Hierarchy.intervals([17, 33], bounds=[0, 18, 65], above=65).rows
        [('17', '[0, 18)', '*'), ('33', '[18, 65)', '*')]

        """
        if bounds is not None or widths is None:
            return cls._interval_bounds(values, widths, name=name, top=top, bounds=bounds,
                                        groups=groups, below=below, above=above)
        if groups is not None:
            raise InputError("groups: only with bounds= (with widths, each width is a level)")
        below, above = _coding(below, above)
        widths = list(widths)
        if widths and isinstance(widths[-1], str) and widths[-1] == "*":
            widths = widths[:-1]
            top = top or "*"
        ws: list[int | Fraction] = []
        for i, w in enumerate(widths):
            x = _exact(w)
            if x is None or x <= 0:
                raise InputError(f"widths[{i}] must be a positive number, got {w!r}")
            if ws and (x <= ws[-1] or Fraction(x, ws[-1]).denominator != 1):
                raise InputError(f"widths must nest: each width must be a multiple of the "
                                 f"previous one larger than it; {w!r} after {widths[i - 1]!r}")
            ws.append(x)
        start = _exact(anchor)
        if start is None:
            raise InputError(f"anchor must be a finite number, got {anchor!r}")
        rows = []
        for v, x in _numbers(values, name):
            row = [label_text(v)]
            coded = _coded(x, below, above)
            for w in ws:
                if coded is not None:
                    row.append(coded)
                    continue
                lo = start + w * ((x - start) // w)     # exact: ints or fractions
                row.append(_range_label(lo, lo + w, below, above))
            if top is not None:
                row.append(top)
            rows.append(row)
        return cls(rows, name=name)

    @classmethod
    def _interval_bounds(cls, values: Iterable[Any], widths: Any, *, name: str,
                         top: str | None, bounds: Sequence[float] | None, groups: Any,
                         below: float | None, above: float | None) -> "Hierarchy":
        """Build :meth:`intervals` from explicit cut points (``bounds=``)."""
        if bounds is None:
            raise InputError("widths or bounds: pass one (interval widths, e.g. [5, 10, "
                             "'*'], or cut points, e.g. bounds=[0, 18, 65, 120])")
        if widths is not None:
            raise InputError("widths and bounds: pass one of them, not both")
        if isinstance(bounds, (str, bytes)) or not isinstance(bounds, Iterable):
            raise InputTypeError(f"bounds must be a list of numbers, got "
                                 f"{type(bounds).__name__}")
        given = list(bounds)
        bs: list[int | Fraction] = []
        for i, b in enumerate(given):
            x = _exact(b)
            if x is None:
                raise InputError(f"bounds[{i}] must be a finite number, got {b!r}")
            if i and x <= bs[-1]:
                raise InputError(f"bounds must increase: {b!r} after {given[i - 1]!r}")
            bs.append(x)
        if len(bs) < 2:
            raise InputError(f"bounds must have at least 2 cut points (one range), got {bs!r}")
        sizes = _group_sizes(groups, "groups") if groups is not None else []
        below, above = _coding(below, above)
        pairs = _numbers(values, name)
        vals = [x for _, x in pairs]
        # the level-1 range of each value (None: bottom/top coded)
        where: list[int | None] = []
        outside = []
        for v, x in pairs:
            if _coded(x, below, above) is not None:
                where.append(None)
                continue
            k = bisect.bisect_right(bs, x) - 1
            if not 0 <= k < len(bs) - 1:
                outside.append(v)
            where.append(k)
        if outside:
            raise InputError(f"values: {_show(outside)} outside the bounds "
                             f"[{label_text(bs[0])}, {label_text(bs[-1])}) of hierarchy "
                             f"{name!r}; widen bounds, or code them with below=/above=")
        ranges = [(bs[i], bs[i + 1]) for i in range(len(bs) - 1)]
        cols: list[list[str]] = []
        level = 0
        while True:
            col = [_coded(v, below, above) or _range_label(*ranges[k], below, above)
                   for v, k in zip(vals, where, strict=True)]
            cols.append(col)
            if len(set(col)) == 1 or level >= len(sizes):
                break
            blocks = _blocks(len(ranges), sizes[level])
            up = {i: b for b, block in enumerate(blocks) for i in block}
            where = [None if k is None else up[k] for k in where]
            ranges = [(ranges[block[0]][0], ranges[block[-1]][1]) for block in blocks]
            level += 1
        if top is not None and len(set(cols[-1])) > 1:
            cols.append([top] * len(vals))
        rows = [[label_text(v), *(c[i] for c in cols)] for i, (v, _) in enumerate(pairs)]
        return cls(rows, name=name)

    @classmethod
    def ordering(cls, values: Iterable[Any], *, name: str = "attribute",
                 groups: Sequence[int | Sequence[int]], order: Sequence[Any] | None = None,
                 labels: str | Callable[[list[str]], str] | Sequence[Sequence[str]] = "set",
                 top: str = "*") -> "Hierarchy":
        """Ordering hierarchy: ordered values grouped in blocks, level by level (ARX's).

        The values are put in ``order`` (default: sorted). Level 1 groups consecutive values
        in blocks of ``groups[0]``, level 2 groups consecutive level-1 groups in blocks of
        ``groups[1]``, and so on; a last block may be smaller. As in ARX's order-based
        builder, levels stop once one group is left, and a final ``top`` level is added
        only when more than one group is left after the last size.

        Parameters
        ----------
        values : iterable
            The values to cover (e.g. a column's distinct values).
        name : str
            Attribute name of the hierarchy (default ``"attribute"``).
        groups : sequence
            One entry per level: a block size ≥ 1, or a list of sizes used in turn (ARX's
            several groups per level, e.g. ``[[1, 3]]`` makes blocks of 1, 3, 1, 3, …).
        order : sequence, optional
            Every value, in the order to group them (matched by text; other entries are
            ignored). Default: sorted (numbers numerically).
        labels : {"set", "bounds"}, callable or sequence of sequences of str
            Label of a group: ``"set"`` (default, ARX's set function: ``"{a, b}"``),
            ``"bounds"`` (ARX's bounds function: ``"[a, d]"``, first and last value), a
            callable given the group's values in order, or one list of labels per level
            with one label per group (ARX's constant labels). As in ARX, a label given to
            several groups of one level gets ``-1``, ``-2``, … appended.
        top : str
            Label of the final level (default ``"*"``).

        Raises
        ------
        InputError
            Empty ``groups``, a size below 1, ``order`` missing a value or naming one
            twice, an unknown ``labels`` kind, or a list of labels of the wrong length.

        Examples
        --------
        >>> Hierarchy.ordering(list("abcde"), groups=[2]).rows[-1]
        ('e', '{e}', '*')

        """
        sizes = _group_sizes(groups, "groups")
        vals = _ordered(values, order, name)
        if isinstance(labels, str):
            if labels not in ("set", "bounds"):
                raise InputError(f"labels must be 'set', 'bounds', a function or lists of "
                                 f"labels per level, got {labels!r}")
        elif not callable(labels):
            if isinstance(labels, bytes) or not isinstance(labels, Iterable):
                raise InputTypeError(f"labels must be 'set', 'bounds', a function or lists of "
                                     f"labels per level, got {type(labels).__name__}")
            labels = [list(level) for level in labels]
            if len(labels) > len(sizes):
                raise InputError(f"labels: {len(labels)} levels of labels for "
                                 f"{len(sizes)} levels of groups")
        members = [[v] for v in vals]          # the values of each current group
        where = list(range(len(vals)))         # current group of each value
        cols: list[list[str]] = []
        for level, size in enumerate(sizes):
            blocks = _blocks(len(members), size)
            up = {i: b for b, block in enumerate(blocks) for i in block}
            where = [up[g] for g in where]
            members = [[v for i in block for v in members[i]] for block in blocks]
            names = _group_labels(members, labels, level)
            cols.append([names[g] for g in where])
            if len(members) == 1:
                break
        if len(members) > 1:
            cols.append([top] * len(vals))
        return cls([[v, *(c[i] for c in cols)] for i, v in enumerate(vals)], name=name)

    @classmethod
    def masking(cls, values: Iterable[Any], *, name: str = "attribute",
                direction: str = "right", pad: str | None = None, mask: str = "*",
                align: str | None = None) -> "Hierarchy":
        """Masking (redaction) hierarchy of strings: level i masks i characters (ARX's).

        Zip codes, right to left: ``47677 → 4767* → 476** → 47*** → 4**** → *****``.
        Level ``i`` replaces ``i`` characters by ``mask``, from the right end
        (``direction="right"``) or the left end; the last level masks every character of
        the longest value, so all values meet there. Values that become equal at a level
        are one node.

        Parameters
        ----------
        values : iterable
            The values to cover (numbers are taken as their text, ``47677``).
        name : str
            Attribute name of the hierarchy (default ``"attribute"``).
        direction : {"right", "left"}
            The end masking starts from (ARX's redaction order; default ``"right"``).
        pad : str, optional
            One character: shorter values are first padded to the longest with it (ARX's
            padding character) and the padded text is masked. Default: no padding — a
            shorter value is masked as it is, fully masked it stays so, and it joins the
            others at the last level.
        mask : str
            The masking character (default ``"*"``).
        align : {"left", "right"}, optional
            With ``pad``: ``"left"`` keeps values at the left and pads on the right,
            ``"right"`` pads on the left (ARX's alignment). Default: pad on the side that
            is masked first (``"left"`` for ``direction="right"``, ARX's default).

        Raises
        ------
        InputError
            An unknown direction or alignment, ``pad`` or ``mask`` not one character,
            or only empty values.

        Examples
        --------
        >>> Hierarchy.masking(["47677", "47678"]).rows[0]
        ('47677', '4767*', '476**', '47***', '4****', '*****')

        """
        if direction not in ("right", "left"):
            raise InputError(f"direction must be 'right' or 'left', got {direction!r}")
        if not isinstance(mask, str) or len(mask) != 1:
            raise InputError(f"mask must be one character, got {mask!r}")
        if pad is not None and (not isinstance(pad, str) or len(pad) != 1):
            raise InputError(f"pad must be one character or None, got {pad!r}")
        if align is None:
            align = "left" if direction == "right" else "right"
        if align not in ("left", "right"):
            raise InputError(f"align must be 'left' or 'right', got {align!r}")
        vals = list(dict.fromkeys(label_text(v) for v in _distinct(values, "values", name)))
        n = max(len(v) for v in vals)
        if n == 0:
            raise InputError(f"values: masking hierarchy {name!r} needs a non-empty value")
        rows = []
        for v in vals:
            base = v
            if pad is not None and len(v) < n:
                fill = pad * (n - len(v))
                base = v + fill if align == "left" else fill + v
            m = len(base)
            row = [v]
            for i in range(1, n):
                k = min(i, m)
                row.append(base[:m - k] + mask * k if direction == "right"
                           else mask * k + base[k:])
            row.append(mask * n)
            rows.append(row)
        return cls(rows, name=name)

    # ------------------------------------------------------------------ facts
    @property
    def height(self) -> int:
        """Number of levels (level 0 = the value itself)."""
        return len(self._rows[0])

    @property
    def values(self) -> list[str]:
        """Level-0 labels, in file order."""
        return [r[0] for r in self._rows]

    @property
    def rows(self) -> list[tuple[str, ...]]:
        """All rows (one per value)."""
        return list(self._rows)

    def level(self, lev: int) -> list[str]:
        """Labels of every row at level ``lev``."""
        if not 0 <= lev < self.height:
            raise InputError(f"level must be in 0..{self.height - 1}, got {lev}")
        return [r[lev] for r in self._rows]

    def __repr__(self) -> str:
        return f"Hierarchy(name={self.name!r}, values={len(self._rows)}, height={self.height})"

    def to_csv(self, path: str | os.PathLike, *, sep: str = ";", overwrite: bool = False) -> str:
        """Write the hierarchy in the ARX layout (atomically)."""
        from ._io import write_text

        buf = io.StringIO()
        w = csv.writer(buf, delimiter=sep, lineterminator="\n")
        w.writerows(self._rows)
        return write_text(path, buf.getvalue(), overwrite=overwrite)

    # ------------------------------------------------------------------ binding
    def bind(self, column: Any, *, name: str | None = None) -> "BoundHierarchy":
        """Validate coverage against a data column and encode the levels as gather tables.

        Parameters
        ----------
        column : Arrow array / chunked array / sequence
            The attribute's data (nulls are not allowed: apply a null policy first).
        name : str, optional
            The column's name in messages (default: the hierarchy's name).

        Raises
        ------
        HierarchyError
            Some data values have no row in the hierarchy (they are listed); a value that
            differs from a row only in outer spaces or case is named with that row.

        """
        from ._arrow import encode_column

        name = self.name if name is None else name
        col = column if isinstance(column, (pa.Array, pa.ChunkedArray)) else pa.array(column)
        if col.null_count:
            raise HierarchyError(f"column {name!r} has {col.null_count} nulls; a hierarchy "
                                 "cannot generalize a null (drop them or fill them first)")
        enc = encode_column(col, name=name)
        return self.bind_domain(enc.labels, codes=enc.codes, name=name)

    def bind_domain(self, domain: pa.Array, codes: np.ndarray | None = None, *,
                    name: str | None = None) -> "BoundHierarchy":
        """Encode against a sorted domain (``domain[i]`` = value of domain code ``i``).

        Values are matched by their exact text (:func:`~fastpriv._labels.label_text`);
        ``name`` names the column in messages (default: the hierarchy's name).
        """
        name = self.name if name is None else name
        index = {r[0]: i for i, r in enumerate(self._rows)}
        labels = domain.to_pylist()
        row_of = np.empty(len(labels), dtype=np.int64)
        missing = []
        for i, v in enumerate(labels):
            j = _lookup(index, v)
            if j is None:
                missing.append(v)
            else:
                row_of[i] = j
        if missing:
            near = _near_miss(name, missing, index)
            if near is not None:
                raise HierarchyError(near)
            raise HierarchyError(f"hierarchy {self.name!r} does not cover the data: "
                                 f"{len(missing)} value{'s' if len(missing) > 1 else ''} "
                                 f"without a row: {_show(missing)}")
        D = len(labels)
        maps = np.empty((self.height, D), dtype=np.int32)
        level_labels: list[list[str]] = []
        for lev in range(self.height):
            labs = [self._rows[row_of[i]][lev] for i in range(D)]
            code: dict[str, int] = {}
            out = []
            for lab in labs:  # domain is sorted: first occurrence = smallest member
                c = code.get(lab)
                if c is None:
                    c = code[lab] = len(out)
                    out.append(lab)
            maps[lev] = np.fromiter((code[lab] for lab in labs), dtype=np.int32, count=D)
            level_labels.append(out)
        maps.flags.writeable = False
        return BoundHierarchy(name=self.name, domain=domain, maps=maps,
                              labels=tuple(tuple(x) for x in level_labels), hierarchy=self,
                              codes=codes)


def _lookup(index: Mapping[str, int], v: Any) -> int | None:
    """Row of data value ``v``: the row named by its exact text (numbers also by ``str``)."""
    j = index.get(label_text(v))
    if j is None and not isinstance(v, str):
        j = index.get(str(v))       # a float 39.0 written "39.0"
    return j


def _near_miss(name: str, missing: Sequence[Any], index: Mapping[str, int]) -> str | None:
    """Return the error for a missing value that differs from a row only in spaces or case."""
    folded: dict[str, str] = {}
    for text in index:
        folded.setdefault(text.strip().casefold(), text)
    for v in missing:
        text = label_text(v)
        near = folded.get(text.strip().casefold())
        if near is not None:
            return (f"column {name!r}: value {text!r} is not in the hierarchy; did you mean "
                    f"{near!r}? values are compared exactly as written")
    return None


def _distinct(values: Iterable[Any], param: str, name: str = "attribute") -> list[Any]:
    """Distinct values of an Arrow column or an iterable, in first-seen order.

    An Arrow column's values are its exact labels (:func:`fastpriv._arrow.canonical_labels`:
    ``-0.0`` is ``0.0``; nested values, sub-microsecond times refused naming ``name``),
    made distinct by Arrow: two instants of a daylight-saving fold are two values, where
    Python's ``datetime`` equality would merge them.
    """
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        import pyarrow.compute as pc

        from ._arrow import canonical_labels, check_scalar

        check_scalar(values.type, name)
        out = pc.unique(canonical_labels(values, name=name)).to_pylist()
        if None in out:
            raise InputError(f"{param} contains a null")
        if not out:
            raise InputError(f"{param} is empty")
        return out
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InputTypeError(f"{param} must be an iterable of values, got {type(values).__name__}")
    seen: dict[Any, None] = {}
    for v in values:
        if v is None:
            raise InputError(f"{param} contains a null")
        seen.setdefault(v, None)
    if not seen:
        raise InputError(f"{param} is empty")
    return list(seen)


def _numbers(values: Iterable[Any], name: str) -> list[tuple[Any, int | Fraction]]:
    """``(value, exact number)`` of the distinct values, by number (:func:`_exact`).

    Anything but finite numbers — dates, times, strings, booleans, NaN, ±inf — is an
    :class:`InputError` naming the column ``name`` and the type.
    """
    typ = values.type if isinstance(values, (pa.Array, pa.ChunkedArray)) else None
    if typ is not None and pa.types.is_dictionary(typ):
        typ = typ.value_type
    if typ is not None and not (pa.types.is_integer(typ) or pa.types.is_floating(typ)
                                or pa.types.is_decimal(typ)):
        raise InputError(f"column {name!r} holds {typ} values; an interval hierarchy needs "
                         "numbers (integers, floats, decimals): use Hierarchy.ordering or "
                         "Hierarchy.masking for other values")
    pairs = [(v, _exact(v)) for v in _distinct(values, "values", name)]
    bad = [v for v, x in pairs if x is None]
    if bad:
        kind = typ if typ is not None else ", ".join(sorted({type(v).__name__ for v in bad}))
        raise InputError(f"column {name!r} ({kind}): an interval hierarchy needs finite "
                         f"numbers, got {_show(bad)}")
    return sorted(pairs, key=lambda p: p[1])


def _coding(below: Any, above: Any) -> tuple[int | Fraction | None, int | Fraction | None]:
    """Check the bottom/top coding bounds of :meth:`Hierarchy.intervals`; exact numbers."""
    out = []
    for param, b in (("below", below), ("above", above)):
        x = None if b is None else _exact(b)
        if b is not None and x is None:
            raise InputError(f"{param} must be a finite number or None, got {b!r}")
        out.append(x)
    if out[0] is not None and out[1] is not None and out[0] >= out[1]:
        raise InputError(f"below must be less than above, got below={below!r}, "
                         f"above={above!r}")
    return out[0], out[1]


def _coded(x: int | Fraction, below: int | Fraction | None,
           above: int | Fraction | None) -> str | None:
    """Return the bottom/top-coding label of the exact number ``x`` (None: not coded)."""
    if below is not None and x < below:
        return f"<{label_text(below)}"
    if above is not None and x >= above:
        return f">={label_text(above)}"
    return None


def _range_label(lo: int | Fraction, hi: int | Fraction, below: int | Fraction | None,
                 above: int | Fraction | None) -> str:
    """``[lo, hi)`` in exact decimals, cut at the coding bounds."""
    if below is not None:
        lo = max(lo, below)
    if above is not None:
        hi = min(hi, above)
    return f"[{label_text(lo)}, {label_text(hi)})"


def _group_sizes(groups: Any, param: str) -> list[list[int]]:
    """Check group sizes: per level an int ≥ 1 or a non-empty list of them."""
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Iterable):
        raise InputTypeError(f"{param} must be a list of group sizes (one per level), got "
                             f"{type(groups).__name__}")
    out = []
    for i, g in enumerate(groups):
        sizes = list(g) if isinstance(g, Iterable) and not isinstance(g, (str, bytes)) \
            else [g]
        if not sizes:
            raise InputError(f"{param}[{i}] must be a group size >= 1 or a non-empty list "
                             "of sizes, got an empty list")
        for s in sizes:
            if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1:
                raise InputError(f"{param}[{i}] must be a group size: an integer >= 1, got "
                                 f"{s!r}")
        out.append([int(s) for s in sizes])
    if not out:
        raise InputError(f"{param} must name at least one level of group sizes, got none")
    return out


def _blocks(n: int, sizes: Sequence[int]) -> list[list[int]]:
    """Split ``range(n)`` into consecutive blocks of ``sizes`` (used in turn)."""
    out: list[list[int]] = []
    i = 0
    while i < n:
        for s in sizes:
            out.append(list(range(i, min(i + s, n))))
            i += s
            if i >= n:
                break
    return out


def _ordered(values: Iterable[Any], order: Sequence[Any] | None, name: str) -> list[str]:
    """Distinct labels of ``values`` in ``order`` (default: sorted, numbers numerically)."""
    vals = _distinct(values, "values", name)
    if order is None:
        try:
            vals = sorted(vals)
        except TypeError:
            vals = sorted(vals, key=label_text)
        return list(dict.fromkeys(label_text(v) for v in vals))
    if isinstance(order, (str, bytes)) or not isinstance(order, Iterable):
        raise InputTypeError(f"order must be a list of values, got {type(order).__name__}")
    rank: dict[str, int] = {}
    for v in order:
        lab = label_text(v)
        if lab in rank:
            raise InputError(f"order names {lab!r} twice; each value may be given once")
        rank[lab] = len(rank)
    labs = list(dict.fromkeys(label_text(v) for v in vals))
    missing = [v for v in labs if v not in rank]
    if missing:
        raise InputError(f"order must name every value; missing: {_show(missing)}")
    return sorted(labs, key=rank.__getitem__)


def _group_labels(members: list[list[str]], labels: Any, level: int) -> list[str]:
    """Labels of the groups of one level, repeated labels numbered as ARX does."""
    if labels == "set":
        raw = ["{" + ", ".join(m) + "}" for m in members]
    elif labels == "bounds":
        raw = [f"[{m[0]}, {m[-1]}]" for m in members]
    elif callable(labels):
        raw = [str(labels(list(m))) for m in members]
    elif level < len(labels):
        if len(labels[level]) != len(members):
            raise InputError(f"labels[{level}] must give one label per group of level "
                             f"{level + 1} ({len(members)} groups), got {len(labels[level])}")
        raw = [str(x) for x in labels[level]]
    else:
        raw = ["{" + ", ".join(m) + "}" for m in members]
    seen: dict[str, int] = {}
    out = []
    for lab in raw:
        k = seen.get(lab, 0)
        seen[lab] = k + 1
        out.append(lab if k == 0 else f"{lab}-{k}")
    return out


def _looks_like_header(rows: list[list[str]], name: str) -> bool:
    first = [c.strip() for c in rows[0]]
    if not first:
        return False
    if first[0] == name or first[0].lower() in _HEADER_WORDS:
        return True
    if all(_LEVEL_HEADER.match(c) for c in first) and len(rows) > 1 and not all(
            _LEVEL_HEADER.match(c) for c in rows[1]):
        return True
    if len(rows) >= 3 and len(first) >= 2:
        tops = {r[-1] for r in rows[1:] if r}
        if len(tops) == 1 and first[-1] not in tops:
            cols_below = [{r[i] for r in rows[1:] if len(r) > i} for i in range(len(first))]
            if all(first[i] not in cols_below[i] for i in range(len(first))):
                return True
    return False


@dataclass(frozen=True, eq=False)
class BoundHierarchy:
    """A hierarchy encoded against one data column (see :meth:`Hierarchy.bind`).

    Attributes
    ----------
    name : str
    domain : pyarrow.Array
        Distinct data values, sorted; domain code ``i`` is ``domain[i]``.
    maps : numpy.ndarray
        int32 ``(height, len(domain))``: generalized code of each domain code per level.
    labels : tuple of tuples of str
        ``labels[level][code]``: label of each generalized code.
    codes : numpy.ndarray or None
        Domain code of each data row (when bound from a column).

    """

    name: str
    domain: pa.Array
    maps: np.ndarray
    labels: tuple
    hierarchy: Hierarchy
    codes: np.ndarray | None = None

    @property
    def height(self) -> int:
        """Number of levels."""
        return int(self.maps.shape[0])

    @property
    def domain_size(self) -> int:
        """Number of distinct data values."""
        return int(self.maps.shape[1])

    def cardinality(self, level: int) -> int:
        """Return the number of generalized values present at ``level``."""
        return len(self.labels[level])

    @cached_property
    def cardinalities(self) -> tuple[int, ...]:
        """Cardinality of every level."""
        return tuple(len(x) for x in self.labels)

    def generalize(self, codes: np.ndarray, level: int) -> np.ndarray:
        """Generalized codes of ``codes`` (domain codes) at ``level`` — one gather."""
        from ._kernels.generalize import gather_codes
        from ._validation import kernel_array

        return gather_codes(kernel_array(codes, np.int32), kernel_array(self.maps[level],
                                                                        np.int32))

    def members(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """CSR ``(indptr, domain codes)`` of the domain values under each generalized code."""
        m = self.maps[level]
        order = np.argsort(m, kind="stable").astype(np.int32)
        indptr = np.zeros(self.cardinality(level) + 1, dtype=np.int64)
        np.cumsum(np.bincount(m, minlength=self.cardinality(level)), out=indptr[1:])
        return indptr, order

    def __repr__(self) -> str:
        return (f"BoundHierarchy(name={self.name!r}, domain={self.domain_size}, "
                f"levels={self.cardinalities})")


#: ``hierarchies=BUNDLED`` names the hierarchies bundled for the Adult attributes explicitly.
BUNDLED = "bundled"


def _bundled(attr: str, table: pa.Table, *, explicit: bool) -> Hierarchy:
    """Return the bundled Adult hierarchy of ``attr`` (bundled data, or asked for)."""
    from .datasets import hierarchy_path, is_bundled_adult

    if not explicit and not is_bundled_adult(table):
        raise InputError(f"hierarchies: no hierarchy for QI {attr!r}: pass hierarchies= (a "
                         "folder of hierarchy files in ARX's layout, or a mapping of "
                         "Hierarchy objects, CSV paths, interval widths or 'suppress'); the "
                         "bundled Adult hierarchies apply only to fastpriv.datasets."
                         "load_adult() unless named with hierarchies='bundled'")
    try:
        path = hierarchy_path(attr)
    except ValueError as exc:
        raise InputError(f"hierarchies: no hierarchy given for {attr!r} and no bundled "
                         f"one ({exc})") from None
    return Hierarchy.from_csv(path, name=attr)


#: ARX names a data set's hierarchy files ``<data set>_hierarchy_<attribute>.csv``.
_ARX_INFIX = "_hierarchy_"
_HIERARCHY_EXTS = (".csv", ".txt")


class HierarchyFiles(NamedTuple):
    """The hierarchy files :func:`find_hierarchy_files` chose in a folder."""

    #: attribute -> path of its file
    files: dict[str, str]
    #: the data set whose ``<data set>_hierarchy_<attribute>.csv`` files were read (None: only
    #: ``<attribute>.csv`` files)
    dataset: str | None
    #: every data set with a file for one of the attributes in the folder, sorted
    datasets: tuple[str, ...]
    #: why ``dataset`` was chosen, in words (empty when there was no choice)
    reason: str


def _data_names(data_name: Any) -> set[str]:
    """Return the names a data file may share with a data set (``adult.csv.gz``: adult)."""
    if not isinstance(data_name, (str, os.PathLike)):
        return set()
    base = os.path.basename(os.path.normpath(os.fspath(data_name)))
    names = {base}
    while "." in base:
        base = base.rsplit(".", 1)[0]
        names.add(base)
    return {n for n in names if n}


def _folder_candidates(folder: str, attrs: Sequence[str]
                       ) -> tuple[list[str], dict[str, list[str]], dict[str, dict[str, list[str]]]]:
    """Every file of ``folder`` that names an attribute exactly: plain and per data set."""
    files = sorted(os.listdir(folder))
    plain: dict[str, list[str]] = {a: [] for a in attrs}
    by_set: dict[str, dict[str, list[str]]] = {a: {} for a in attrs}
    for f in files:                  # by name first: a stat only for the candidates
        stem, ext = os.path.splitext(f)
        if ext.lower() not in _HIERARCHY_EXTS:
            continue
        for a in attrs:
            if stem == a:
                plain[a].append(f)
            elif stem.endswith(_ARX_INFIX + a):
                by_set[a].setdefault(stem[:-len(_ARX_INFIX + a)], []).append(f)

    def regular(found: list[str]) -> list[str]:
        return [f for f in found if os.path.isfile(os.path.join(folder, f))]

    plain = {a: regular(found) for a, found in plain.items()}
    by_set = {a: {p: r for p, found in sets.items() if (r := regular(found))}
              for a, sets in by_set.items()}
    return files, plain, by_set


def _choose_dataset(folder: str, attrs: Sequence[str], by_set: dict[str, dict[str, list[str]]],
                    prefix: str | None, data_name: Any) -> tuple[str | None, tuple, str]:
    """Choose the data set whose files are read: (data set, every data set seen, why)."""
    seen = tuple(sorted({p for sets in by_set.values() for p in sets}))
    if prefix is not None:
        if not isinstance(prefix, str):
            raise InputTypeError(f"hierarchy_prefix must be a string, got {type(prefix).__name__}")
        if prefix not in seen:
            raise InputError(f"hierarchy_prefix: {folder!r} has no {prefix}{_ARX_INFIX}"
                             f"<attribute>.csv file for the QIs {', '.join(attrs)}; data sets "
                             f"there: {', '.join(seen) or 'none'}")
        return prefix, seen, "hierarchy_prefix"
    if len(seen) <= 1:
        return (seen[0] if seen else None), seen, ""
    named = sorted(_data_names(data_name) & set(seen))
    if named:
        return named[-1], seen, "the data file's name"
    full = [p for p in seen if all(p in by_set[a] for a in attrs)]
    if len(full) == 1:
        return full[0], seen, "the only data set with a file for every QI"
    which = (f"each has a file for every QI ({', '.join(full)})" if full
             else "none has a file for every QI")
    raise InputError(f"hierarchies: {folder!r} holds the hierarchies of several data sets "
                     f"({', '.join(seen)}) and {which}: choose one with hierarchy_prefix=NAME "
                     f"(CLI --hierarchy-prefix NAME), or name the data file after it "
                     f"({seen[0]}.csv reads {seen[0]}{_ARX_INFIX}<attribute>.csv)")


def _near_names(files: Sequence[str], attr: str) -> list[str]:
    """Files naming ``attr`` but for case or ``-``/``_`` (names are matched exactly)."""
    def norm(x: str) -> str:
        return x.lower().replace("-", "_")

    want = norm(attr)
    out = []
    for f in files:
        stem, ext = os.path.splitext(f)
        if ext.lower() in _HIERARCHY_EXTS and (norm(stem) == want
                                               or norm(stem).endswith(_ARX_INFIX + want)):
            out.append(f)
    return out


def find_hierarchy_files(folder: str | os.PathLike, qi: Sequence[str], *,
                         prefix: str | None = None, data_name: Any = None) -> HierarchyFiles:
    """Choose the hierarchy file of every attribute of ``qi`` in ``folder``.

    A file names an attribute exactly as written (no case-folding): ``<attribute>.csv`` or
    ARX's ``<data set>_hierarchy_<attribute>.csv`` (``.txt`` too); every other file is
    ignored, so a folder may hold other data sets' files, as ARX's ``data/`` folder holds
    Adult's, ATUS's and IHIS's. When it holds files of several data sets the one read is,
    in this order: ``prefix`` (``hierarchy_prefix=``, CLI ``--hierarchy-prefix``); the data
    set named like the data file (``adult.csv`` reads ``adult_hierarchy_*.csv``); the only
    data set with a file for every attribute. An attribute without a file of that data set
    reads ``<attribute>.csv``.

    Parameters
    ----------
    folder : path-like
        The folder.
    qi : sequence of str
        The attributes that need a file.
    prefix : str, optional
        The data set to read (``adult`` for ``adult_hierarchy_<attribute>.csv``).
    data_name : path-like, optional
        The data file (or its name), to match a data set by name.

    Returns
    -------
    HierarchyFiles
        The file of each attribute, the data set read, every data set seen and why.

    Raises
    ------
    InputError
        Not a directory; no file for an attribute; two files for one attribute that
        nothing decides between (``age.csv`` and ``adult_hierarchy_age.csv``, or ``.csv``
        and ``.txt``), naming both; several data sets and nothing to choose one.

    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise InputError(f"hierarchies: {folder!r} is not a directory")
    attrs = list(qi)
    files, plain, by_set = _folder_candidates(folder, attrs)
    dataset, seen, reason = _choose_dataset(folder, attrs, by_set, prefix, data_name)
    out: dict[str, str] = {}
    for a in attrs:
        own = by_set[a].get(dataset, []) if dataset is not None else []
        found = own if (own and prefix is not None) else own + plain[a]
        if len(found) > 1:
            raise InputError(f"hierarchies: two files in {folder!r} for QI {a!r}: "
                             f"{' and '.join(found)}; remove one"
                             + (f", or read {dataset}'s with hierarchy_prefix={dataset!r} "
                                f"(CLI --hierarchy-prefix {dataset})" if own and plain[a]
                                else ""))
        if not found:
            others = [f for sets in by_set[a].values() for f in sets]
            near = _near_names(files, a)
            raise InputError(
                f"hierarchies: no file for QI {a!r} in {folder!r} (expected {a}.csv"
                + (f" or {dataset}{_ARX_INFIX}{a}.csv" if dataset is not None
                   else f" or ARX's <name>{_ARX_INFIX}{a}.csv") + ")"
                + (f"; other data sets' files for it: {', '.join(others)}" if others else "")
                + (f"; names are matched exactly as written ({', '.join(near)} spell the "
                   "attribute otherwise)" if near and not others else "")
                + (f"; files there: {', '.join(files[:20]) or 'none'}"
                   if not (others or near) else ""))
        out[a] = os.path.join(folder, found[0])
    return HierarchyFiles(out, dataset, seen, reason)


def find_hierarchy_file(folder: str | os.PathLike, attr: str, *, prefix: str | None = None,
                        data_name: Any = None) -> str:
    """Return the hierarchy file of ``attr`` in ``folder`` (:func:`find_hierarchy_files`)."""
    return find_hierarchy_files(folder, [attr], prefix=prefix, data_name=data_name).files[attr]


def resolve_hierarchies(spec: Any, qi: Sequence[str], table: pa.Table, *,
                        prefix: str | None = None, data_name: Any = None
                        ) -> list[BoundHierarchy]:
    """Turn the ``hierarchies`` argument of the anonymizers into bound hierarchies.

    Parameters
    ----------
    spec : None, path, or mapping
        * ``None``: for :func:`fastpriv.datasets.load_adult`'s table, the hierarchies bundled
          for its attributes; for any other table an :class:`InputError` (never another
          data set's hierarchies in silence); ``"bundled"`` names them explicitly;
        * a directory: ``<attribute>.csv`` or ARX's ``<data set>_hierarchy_<attribute>.csv``
          for each QI attribute, named exactly as the attribute is written; other files are
          ignored, and of several data sets' files one data set's are read
          (:func:`find_hierarchy_files`);
        * a mapping ``attribute -> Hierarchy | CSV path | widths``, where widths (a list of
          numbers, optionally ending with ``"*"``) build an interval hierarchy over the
          column's values and the string ``"suppress"`` builds value / ``*``.
    qi : list of str
        The QI attributes, in order; one bound hierarchy is returned for each.
    table : pyarrow.Table
        The data (only the QI columns are read).
    prefix : str, optional
        A directory's data set to read (``hierarchy_prefix=``): ``adult`` reads
        ``adult_hierarchy_<attribute>.csv``.
    data_name : path-like, optional
        The data file, whose name chooses a directory's data set of the same name.

    """
    folder = isinstance(spec, (str, os.PathLike)) and not (isinstance(spec, str)
                                                           and spec == BUNDLED)
    if prefix is not None and not folder:
        raise InputError(f"hierarchy_prefix chooses the data set of a hierarchies= folder; "
                         f"hierarchies={spec!r:.60} is not one")
    if folder:
        found = find_hierarchy_files(spec, qi, prefix=prefix, data_name=data_name).files
        spec = {a: Hierarchy.from_csv(found[a], name=a) for a in qi}
    out = []
    for a in qi:
        h = _resolve_one(spec, a, table)
        out.append(h.bind(table.column(a), name=a))
    return out


def _resolve_one(spec: Any, attr: str, table: pa.Table) -> Hierarchy:
    if spec is None or (isinstance(spec, str) and spec == BUNDLED):
        return _bundled(attr, table, explicit=spec is not None)
    if isinstance(spec, Mapping):
        if attr not in spec:
            raise InputError(f"hierarchies: no entry for QI attribute {attr!r}; given: "
                             f"{', '.join(map(str, spec))}")
        h = spec[attr]
        if isinstance(h, Hierarchy):
            return h
        if isinstance(h, BoundHierarchy):
            return h.hierarchy
        if isinstance(h, str) and h == "suppress":
            return Hierarchy.suppression(table.column(attr), name=attr)
        if isinstance(h, str) and h == BUNDLED:
            return _bundled(attr, table, explicit=True)
        if isinstance(h, (str, os.PathLike)):
            return Hierarchy.from_csv(h, name=attr)
        if isinstance(h, Sequence):
            return Hierarchy.intervals(table.column(attr), list(h), name=attr)
        raise InputTypeError(f"hierarchies[{attr!r}] must be a Hierarchy, a CSV path, interval "
                        f"widths or 'suppress', got {type(h).__name__}")
    raise InputTypeError("hierarchies must be None, 'bundled', a directory, or a mapping "
                         f"attribute -> hierarchy; got {type(spec).__name__}")
