"""Boundary checks with uniform error messages, and dtype/read-only normalization for kernels.

Everything a user passes is checked here (or in the API module that calls these helpers)
before it reaches a kernel: a kernel never sees a wrong dtype, a null, a NaN probability or
an out-of-range threshold. Errors name the parameter and what was expected.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import InputError, InputTypeError

__all__ = [
    "value_codes",
    "kernel_array",
    "check_columns",
    "check_column_names",
    "check_int",
    "check_real",
    "check_probability",
    "check_threshold",
    "check_finite_probabilities",
    "check_choice",
    "check_roles",
    "check_keys",
    "check_r",
    "check_max_set_size",
    "check_at_least",
    "check_nonnegative",
    "check_positive",
    "check_total",
    "real_array",
    "exact_bincount",
    "INT64_MAX",
]

#: The largest count (rows, weights, group sizes) fastpriv holds: counts are int64.
INT64_MAX = (1 << 63) - 1


def kernel_array(x: Any, dtype: Any) -> np.ndarray:
    """Return ``x`` as a read-only, C-contiguous 1-D or N-D array of ``dtype``.

    Kernels compile one specialization per argument type; Numba distinguishes writable
    from read-only arrays and C- from A-layout. Passing every array through this function
    keeps exactly one specialization per kernel. No copy is made when ``x`` already has the
    right dtype and layout (Arrow buffers, for example).
    """
    arr = np.ascontiguousarray(x, dtype=dtype)
    if arr.flags.writeable:
        arr = arr.view()
        arr.flags.writeable = False
    return arr


def check_columns(names: Iterable[str], available: Sequence[str], param: str) -> list[str]:
    """Check that every column in ``names`` exists; list the available ones otherwise."""
    names = list(names)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{param}: column {', '.join(map(repr, twice))} is named twice; each "
                         "column may be given once")
    missing = [n for n in names if n not in available]
    if missing:
        what = ", ".join(repr(m) for m in missing)
        plural = "s" if len(missing) > 1 else ""
        raise InputError(
            f"{param}: column{plural} {what} not found; available: {', '.join(map(str, available))}"
        )
    return names


def check_keys(group: Any, qi: Any) -> tuple[list[str], str]:
    """Return the key columns of exactly one of ``group`` / ``qi``, and which was given.

    Raises
    ------
    InputError
        Both or neither given, an empty list, or a column named twice.
    InputTypeError
        A column name that is not a string.

    """
    if (group is None) == (qi is None):
        raise InputError("give exactly one of group= (bucketized release) or qi= "
                         "(generalized QI columns)")
    param = "group" if group is not None else "qi"
    return check_column_names(group if group is not None else qi, param), param


def unique_name(base: str, taken: Sequence[str]) -> str:
    """Return ``base``, prefixed with underscores until it is none of ``taken``.

    The name of a column fastpriv adds (a count, a flag) beside the user's columns.
    """
    name = base
    while name in taken:
        name = "_" + name
    return name


def check_column_names(cols: Any, param: str) -> list[str]:
    """Return a column name or a list of them as a list, checking its shape.

    Raises
    ------
    InputTypeError
        ``cols`` is neither a string nor an iterable of names, or a name is not a string.
    InputError
        No column, or a column named twice.

    """
    if isinstance(cols, str):
        return [cols]
    if cols is None or isinstance(cols, bytes) or not isinstance(cols, Iterable):
        raise InputTypeError(f"{param} must be a column name or a list of column names, got "
                             f"{type(cols).__name__}")
    out = list(cols)
    if not out:
        raise InputError(f"{param}: at least one column is required")
    for c in out:
        if not isinstance(c, str):
            raise InputTypeError(f"{param}: column names must be strings, got {c!r}")
    twice = sorted({c for c in out if out.count(c) > 1})
    if twice:
        raise InputError(f"{param}: column {', '.join(map(repr, twice))} is named twice; each "
                         "column may be given once")
    return out


def check_roles(**roles: Any) -> None:
    """Check that no column plays two roles (``group`` and ``sensitive``, say).

    Each keyword is a role and its column name or list of names (``None`` skipped).
    """
    seen: dict[str, str] = {}
    for role, names in roles.items():
        if names is None:
            continue
        for name in [names] if isinstance(names, str) else list(names):
            if name in seen and seen[name] != role:
                raise InputError(f"column {name!r} is given both as {seen[name]} and as {role}; "
                                 "each column plays one role")
            seen[name] = role


def check_int(value: Any, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` after checking its type and range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputTypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InputError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a finite ``float`` after checking that it is a real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise InputError(f"{name} must be finite, got {value!r}")
    return out


def _finite_real(value: Any, name: str) -> Any:
    """Check that ``value`` is a finite real number (not a bool); return it unconverted."""
    check_real(value, name)
    return value


def check_at_least(value: Any, name: str, minimum: float) -> Any:
    """Return ``value`` (unconverted) after checking it is a finite real number >= ``minimum``.

    For size-like thresholds that may be fractional (a k or an ℓ to compare against).
    """
    _finite_real(value, name)
    if not value >= minimum:
        raise InputError(f"{name} must be >= {minimum:g}, got {value!r}")
    return value


def check_nonnegative(value: Any, name: str) -> Any:
    """Return ``value`` (unconverted) after checking it is a finite real number >= 0."""
    _finite_real(value, name)
    if not value >= 0:
        raise InputError(f"{name} must be >= 0, got {value!r}")
    return value


def check_positive(value: Any, name: str) -> Any:
    """Return ``value`` (unconverted) after checking it is a finite real number > 0."""
    _finite_real(value, name)
    if not value > 0:
        raise InputError(f"{name} must be > 0, got {value!r}")
    return value


def check_probability(value: Any, name: str) -> float:
    """Validate and return a finite number in [0, 1]."""
    out = check_real(value, name)
    if not 0.0 <= out <= 1.0:
        raise InputError(f"{name} must be in [0, 1], got {value!r}")
    return out


def check_threshold(value: Any, name: str = "c") -> Any:
    """Validate a confidence threshold in (0, 1]; ``Fraction`` values are kept exact."""
    check_real(value, name)
    if not 0 < value <= 1:
        raise InputError(f"{name} must be in (0, 1], got {value!r}")
    return value


def real_array(arr: Any, name: str) -> np.ndarray:
    """Return ``arr`` as a float64 array, refusing what is not made of real numbers.

    ``np.asarray(x, dtype=float)`` silently parses strings (``"0.5"``) and booleans; here an
    array of strings, bytes, booleans or other objects is an :class:`InputTypeError` naming
    ``name``. Ints, floats, ``Fraction`` and ``Decimal`` entries are accepted.

    Raises
    ------
    InputTypeError
        An entry is not a real number, or ``arr`` is a string, bytes or a mapping.

    """
    if isinstance(arr, (str, bytes, Mapping)):
        raise InputTypeError(f"{name} must be an array of real numbers, got "
                             f"{type(arr).__name__}")
    try:
        raw = np.asarray(arr)
    except (TypeError, ValueError) as exc:   # ragged nesting
        raise InputTypeError(f"{name} must be an array of real numbers "
                             f"({str(exc).splitlines()[0]})") from None
    kind = raw.dtype.kind
    if kind in "iuf":
        return raw.astype(np.float64, copy=False)
    if kind == "O":
        for i, v in enumerate(raw.ravel().tolist()):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise InputTypeError(f"{name}[{i}] must be a real number, got "
                                     f"{type(v).__name__} {v!r}")
        return raw.astype(np.float64)
    first = raw.ravel()[0] if raw.size else None
    raise InputTypeError(f"{name} must hold real numbers, got {raw.dtype} values"
                         + (f" such as {first.item()!r}" if first is not None else ""))


def check_total(w: np.ndarray, name: str, *, start: int = 0) -> int:
    """Return ``start + Σ w`` exactly, refusing a total past 2**63 - 1 (:data:`INT64_MAX`).

    ``w`` holds non-negative integers below 2**63 (weights or counts, any integer dtype).
    Counts are int64 throughout, so a larger total would wrap around to negative group
    sizes. Fast accept: ``max(w) * len(w)`` within the bound (one pass for the max, one
    for the sum); otherwise the sum is taken exactly, in two 32-bit halves.

    Raises
    ------
    InputError
        The total exceeds 2**63 - 1; the message names ``name``.

    """
    w = np.asarray(w)
    if w.size == 0:
        return int(start)
    top = int(w.max())
    if top * w.size <= INT64_MAX - start:
        return int(start) + int(w.sum(dtype=np.int64))
    u = w.astype(np.uint64, copy=False)
    hi = int((u >> np.uint64(32)).sum(dtype=np.uint64))     # each < 2**31: no overflow
    lo = int((u & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))
    total = int(start) + (hi << 32) + lo
    if total > INT64_MAX:
        raise InputError(f"{name}: the counts add up to {total}, past 2**63 - 1 (the largest "
                         "count fastpriv holds)")
    return total


def exact_bincount(key: np.ndarray, w: np.ndarray, minlength: int) -> np.ndarray:
    """Return Σ ``w`` per ``key`` as int64, exactly (integer weights, total checked).

    ``np.bincount(key, weights=w)`` sums in float64, which rounds sums past 2**53; this
    takes that fast path only when every partial sum stays below 2**53, and adds in int64
    otherwise.
    """
    w = np.asarray(w)
    if w.size == 0 or int(np.abs(w).max()) * w.size <= (1 << 53):
        return np.bincount(key, weights=w, minlength=minlength).astype(np.int64)
    out = np.zeros(max(int(minlength), int(key.max()) + 1), dtype=np.int64)
    np.add.at(out, key, w.astype(np.int64))
    return out


def check_finite_probabilities(arr: Any, name: str) -> np.ndarray:
    """Return a float64 array, checking every entry is a finite real number in [0, 1]."""
    a = real_array(arr, name)
    bad = ~np.isfinite(a)
    if bad.any():
        idx = np.flatnonzero(bad.ravel())[:5].tolist()
        raise InputError(f"{name} has non-finite values at positions {idx}")
    out = (a < 0) | (a > 1)
    if out.any():
        idx = np.flatnonzero(out.ravel())[:5].tolist()
        raise InputError(f"{name} must be in [0, 1]; out of range at positions {idx}")
    return a


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of strings."""
    if value not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_r(r: Any) -> Any:
    """Validate r-robustness's r: a finite real number > 1; the threshold is 1/r.

    Returned unconverted, so a ``Fraction`` stays exact.
    """
    if isinstance(r, bool) or not isinstance(r, numbers.Real):
        raise InputTypeError(f"r must be a real number > 1, got {type(r).__name__} {r!r}")
    if not math.isfinite(float(r)) or not r > 1:
        raise InputError(f"r must be > 1, got {r!r}")
    return r


def check_max_set_size(max_set_size: Any, n_qi: int) -> int:
    """Return the attribute-set size limit as an int in [1, n_qi] (``None``: ``n_qi``)."""
    if max_set_size is None:
        return n_qi
    return min(check_int(max_set_size, "max_set_size", minimum=1), n_qi)


def value_codes(sensitive_values: Any, values: list, *,
                param: str = "sensitive_values") -> np.ndarray:
    """Codes (positions in ``values``) of the sensitive values X_s a model tests.

    ``None`` means every value; a single label may be given bare. Returns the sorted,
    distinct codes as int64; a label not in ``values`` is an :class:`InputError` naming it
    and listing the values.
    """
    if sensitive_values is None:
        return np.arange(len(values), dtype=np.int64)
    if isinstance(sensitive_values, (str, bytes)):
        sensitive_values = [sensitive_values]
    index = {v: i for i, v in enumerate(values)}
    missing = [v for v in sensitive_values if v not in index]
    if missing:
        raise InputError(f"{param}: {missing[:5]} not among the sensitive values of the "
                         f"data ({', '.join(map(repr, values[:20]))}"
                         f"{' …' if len(values) > 20 else ''})")
    return np.unique(np.array([index[v] for v in sensitive_values], dtype=np.int64))
