"""The result protocol every public fastpriv result follows.

Every public function returns a frozen dataclass deriving from :class:`Result`:

* ``.value`` — the one number that answers the question, where one does (e.g. the smallest
  group size for k-anonymity, the worst disclosure for (c,k)-safety, the number of breached
  tuples for an attack); ``None`` where the result is a table or a set of answers;
* ``.params`` — the parameters the result was computed with (a dict of JSON-safe values);
* ``.witness`` — what realises the answer (the worst group, the adversary's knowledge, the
  breached tuple, ...), an instance of a :class:`Witness` subclass, or ``None`` where there
  is nothing to witness;
* ``.to_dict()`` — a JSON-safe dict (the report schema validates it);
* ``.summary()`` — the short plain text the CLI prints;
* equality — two results are equal when every field is equal (arrays by value, floats
  exactly, NaN equal to NaN), so results can be compared, cached and tested.

Witness types form one family: every witness derives from :class:`Witness` and also follows
the protocol (``.to_dict()``, ``.summary()``, equality).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

__all__ = ["Result", "Witness", "json_safe", "fields_equal"]


def fields_equal(a: Any, b: Any) -> bool:
    """Value equality that also works for arrays, Arrow data, floats (NaN == NaN) and nests.

    Parameters
    ----------
    a, b : Any
        Field values of two results.

    Returns
    -------
    bool
        Whether ``a`` and ``b`` hold the same values.

    """
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if (dataclasses.is_dataclass(a) and not isinstance(a, type) and type(a) is type(b)
            and not isinstance(a, _Protocol)):
        # a plain dataclass part of a result (e.g. a generalized attribute holding arrays)
        return all(fields_equal(getattr(a, f.name), getattr(b, f.name))
                   for f in dataclasses.fields(a) if f.compare)
    if hasattr(a, "equals") and type(a) is type(b) and not dataclasses.is_dataclass(a):
        try:
            return bool(a.equals(b))
        except TypeError:
            pass
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(fields_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(
            fields_equal(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def json_safe(x: Any) -> Any:
    """Convert ``x`` to plain JSON types (dict, list, str, int, float, bool, None).

    NumPy scalars and arrays become Python numbers and lists, ``Fraction`` and other numbers
    become floats, non-finite floats become ``None``, results and witnesses become their
    ``to_dict()``, and anything else its ``str``.
    """
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        return f if math.isfinite(f) else None
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, (Result, Witness)):
        return x.to_dict()
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in x]
    if isinstance(x, np.ndarray):
        return [json_safe(v) for v in x.tolist()]
    if hasattr(x, "as_py"):
        return json_safe(x.as_py())
    if hasattr(x, "to_pylist"):
        return json_safe(x.to_pylist())
    if hasattr(x, "numerator") and hasattr(x, "denominator"):
        return float(x)
    return str(x)


class _Protocol:
    """Equality and a default ``to_dict`` shared by results and witnesses."""

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return all(fields_equal(getattr(self, f.name), getattr(other, f.name))
                   for f in dataclasses.fields(self) if f.compare)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # results hold arrays: not hashable

    def to_dict(self) -> dict:
        """Return the fields as a JSON-safe dict (see :func:`json_safe`)."""
        return {f.name: json_safe(getattr(self, f.name))
                for f in dataclasses.fields(self) if f.repr}

    def summary(self) -> str:
        """Return the short plain text the CLI prints.

        This default names the type and its scalar fields; result types whose answer needs
        words (a verdict, a witness) override it.
        """
        scalars = [f"{k}={v}" for k, v in self.to_dict().items()
                   if isinstance(v, (bool, int, float, str)) or v is None]
        return f"{type(self).__name__}: {', '.join(scalars)}"


class Witness(_Protocol):
    """Base of every witness type: what realises a result's answer.

    Subclasses are frozen dataclasses; ``to_dict()`` and ``summary()`` describe the witness
    on its own (the groups it names, the knowledge it stands for).
    """


class Result(_Protocol):
    """Base of every public result type (see the module docstring for the protocol).

    Subclasses are frozen dataclasses (``@dataclass(frozen=True, eq=False)`` so that the
    array-aware equality defined here is used) and provide ``value``, ``params``, ``witness``,
    ``to_dict()`` and ``summary()`` (``value`` and ``witness`` may be fields or properties;
    they are not defined here, since a base-class property would become a dataclass
    field's default).
    """
