"""Sampling weight sums of the engines' class counts (``class_counts(sampling_weight=)``).

In memory (:meth:`fastpriv.risk.ClassCounts.from_table`) a record's sampling weight — the
population members it stands for — is checked and summed per QI class: rows of weight 0
go first, the null policy covers the QI and the sampling weight columns, then every
sampling weight left must be finite and > 0, and a class adds ``weight · sampling_weight``
over its rows. Every engine computes the same per class, where the data lives, as three
sums besides the count (:class:`SamplingColumns`): the weighted sampling weights of the
valid rows, the rows whose sampling weight is null (or NaN) and the rows whose sampling
weight is not finite and > 0. Under ``nulls="drop"`` the rows whose sampling weight is null
are left out before counting, and :func:`finish` drops the classes of a null QI before it
checks the sums, as memory drops those rows first. :func:`finish` reads the result: it
refuses what memory refuses and builds the classes with their sums.

The sums are floating point: an engine adds a class's rows in its own order, so a sum can
differ from the in-memory one in the last bits (exactly equal when every partial sum is
representable, as for integer or dyadic weights).

The engines' ``class_histogram(sampling_weight=)`` fold the classes instead of bringing
them: :func:`histogram_part` summarizes a set of complete classes into a
:class:`~fastpriv.class_histogram.SamplingHistogram` (or says that it holds nothing, or
something memory refuses), :func:`merged` merges the parts as they come, and on a refusal
:func:`refused` reruns the engine's ``class_counts``, whose words are memory's.
:func:`fold_threshold` checks the threshold the summary is for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from .errors import InputError, InputTypeError


@dataclass(frozen=True)
class SamplingColumns:
    """Names of an engine's sampling weight sums in its ``GROUP BY`` result.

    ``column`` is the user's sampling weight column; ``total`` is Σ weight · sampling
    weight over the class's valid rows, ``missing`` the rows of weight > 0 whose sampling
    weight is null or NaN, ``bad`` the rows of weight > 0 whose sampling weight is not
    finite and > 0 (rows, as memory counts them).
    """

    column: str
    total: str
    missing: str
    bad: str

    @classmethod
    def named(cls, column: str, taken: Sequence[str]) -> "SamplingColumns":
        """Return free names for the three sums (none of ``taken``)."""
        from ._validation import unique_name

        names: list[str] = list(taken) + [column]
        out = []
        for base in ("sampling_weight_sum", "sampling_weight_missing", "sampling_weight_bad"):
            out.append(unique_name(base, names))
            names.append(out[-1])
        return cls(column, *out)

    @property
    def sums(self) -> list[str]:
        """The three sum columns, in the order the engines select them."""
        return [self.total, self.missing, self.bad]


def check_numeric(column: str, numeric: bool, type_name: str) -> None:
    """Refuse a sampling weight column that does not hold numbers (as in memory)."""
    if not numeric:
        raise InputTypeError(f"sampling_weight: expected a numeric column, got {type_name} "
                             f"(column {column!r})")


def refuse(column: str, nulls: str, missing: int, bad: int) -> None:
    """Raise the error memory raises for ``missing`` null and ``bad`` invalid weights."""
    if missing and nulls == "error":
        raise InputError(f"{column!r} has {missing} null{'s' if missing > 1 else ''} (NaN is a "
                         "missing value); pass nulls='drop' to remove those rows")
    if missing or bad:
        raise InputError(f"sampling_weight: {missing + bad} weights are not finite and > 0 "
                         f"(column {column!r}{f'; {missing} null or NaN' if missing else ''})")


def arrow_sums(table: Any, *, qi: Sequence[str], weights: np.ndarray | None, count: str,
               columns: SamplingColumns, nulls: str) -> Any:
    """Return ``qi…, count`` and the three sums of :class:`SamplingColumns`, row by row.

    ``table`` holds the rows of weight > 0 (``weights`` their multiplicities, or None for
    one each) with the QI and the sampling weight columns; under ``nulls="drop"`` the rows
    with a null (or NaN) sampling weight are left out first. Grouped and summed by the
    caller (Arrow's ``group_by``), every column adds.
    """
    import pyarrow as pa

    from ._arrow import kept_rows

    kind = table.column(columns.column).type
    check_numeric(columns.column, pa.types.is_integer(kind) or pa.types.is_floating(kind)
                  or pa.types.is_decimal(kind), str(kind))
    w = np.ones(table.num_rows, np.int64) if weights is None else np.asarray(weights, np.int64)
    if nulls == "drop":
        kept = kept_rows(table, [columns.column], "drop")
        if kept is not None:
            table, w = table.take(pa.array(kept)), w[kept]
    sw = table.column(columns.column).cast(pa.float64())
    x = np.asarray(sw.to_numpy(zero_copy_only=False), dtype=np.float64)  # null -> NaN
    missing = np.isnan(x)
    bad = ~missing & ~(np.isfinite(x) & (x > 0))
    valid = ~(missing | bad)
    return table.select(list(qi)).append_column(count, pa.array(w)).append_column(
        columns.total, pa.array(np.where(valid, x * w, 0.0))).append_column(
        columns.missing, pa.array(missing.astype(np.int64))).append_column(
        columns.bad, pa.array(bad.astype(np.int64)))


def finish(data: Any, *, qi: Sequence[str], count: str, columns: SamplingColumns,
           nulls: str) -> Any:
    """Read a ``GROUP BY qi`` with the sums of :class:`SamplingColumns` as ClassCounts.

    Refuses null sampling weights (under ``nulls="error"``, or any left under ``"value"``)
    and invalid ones as :meth:`fastpriv.risk.ClassCounts.from_table` does; the classes
    carry ``sampling_weight_sums``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._arrow import as_table, kept_rows
    from .risk import ClassCounts

    table = as_table(data, param="data")
    checked = table
    if nulls == "drop":                         # the rows of a null QI are dropped first
        kept = kept_rows(table, list(qi), "drop")
        if kept is not None:
            checked = table.take(pa.array(kept))

    def total(name: str) -> int:
        return int(pc.sum(checked.column(name)).as_py() or 0)

    refuse(columns.column, nulls, total(columns.missing), total(columns.bad))
    table = table.select([*qi, count, columns.total])
    table = table.set_column(len(qi) + 1, columns.total,
                             pc.fill_null(table.column(columns.total).cast("float64"), 0.0))
    classes = ClassCounts.from_counts(table, qi=list(qi), count=count,
                                      sampling_weight_sum=columns.total, nulls=nulls)
    return dataclasses.replace(classes, sampling_weight=columns.column)


def histogram_part(table: Any, *, qi: Sequence[str], count: str, columns: SamplingColumns,
                   nulls: str, threshold: float,
                   convert: Any = None) -> tuple:
    """Summarize a set of complete classes with their sums: one part of an engine's fold.

    ``table`` holds whole classes as an engine grouped them (``qi…, count`` and the sums of
    :class:`SamplingColumns`; ``convert`` first turns the engine's weight sums into an
    int64 ``count``, refusing bad weights). Returns ``("ok",
    SamplingHistogram)``, ``("empty",)`` when no class keeps a record under the null
    policy, or ``("refused",)`` when the part holds something memory refuses — its words
    name totals and the first class of the whole table, which one part does not know, so
    the caller then reruns ``class_counts`` on the whole input to raise them.
    """
    from ._arrow import kept_rows
    from .class_histogram import SamplingHistogram

    try:
        if convert is not None:
            table = convert(table)
        live = np.asarray(table.column(count).to_numpy(zero_copy_only=False)) > 0
        kept = kept_rows(table, list(qi), nulls)
        if kept is not None:
            live = live[kept]
        if not live.any():
            return ("empty",)
        classes = finish(table, qi=qi, count=count, columns=columns, nulls=nulls)
        return ("ok", SamplingHistogram.from_class_counts(classes, threshold=threshold))
    except InputError:
        return ("refused",)


def merged(parts: Iterable[tuple]) -> Any:
    """Merge the parts of :func:`histogram_part` as they come (a list or a generator).

    Returns the merged summary, or None when a part is refused (the rest is not read) or
    no part holds a class.
    """
    out = None
    for p in parts:
        if p[0] == "refused":
            return None
        if p[0] == "ok":
            out = p[1] if out is None else out.merge(p[1])
    return out


def folded(parts: Iterable[tuple], whole: Any) -> Any:
    """Return :func:`merged` of ``parts``; on a refusal (or no class), run ``whole()``.

    ``whole`` runs the engine's ``class_counts`` over the whole input, which raises memory's
    words; it must not return.
    """
    out = merged(parts)
    if out is None:
        refused(whole)
    return out


def refused(whole: Any) -> None:
    """Run ``whole()``, which must raise the words of a refusal a part of a fold found."""
    whole()
    raise AssertionError("class_counts accepted what a part of its fold refused")


def fold_threshold(threshold: Any, sampling_weight: Any) -> float | None:
    """Check the ``threshold`` of an engine's ``class_histogram``: only with sampling weights.

    Returns the threshold the summary counts records above (default
    :data:`fastpriv.risk.DEFAULT_THRESHOLD`, as ``risk.audit``), or None without
    ``sampling_weight`` (a class-size histogram holds no risk, so a threshold there would
    be silently unused).
    """
    from ._validation import check_probability
    from .risk import DEFAULT_THRESHOLD

    if sampling_weight is None:
        if threshold is not None:
            raise InputError("threshold: a class-size histogram counts no risk above a "
                             "threshold; give it with sampling_weight= (or to risk.audit)")
        return None
    return check_probability(DEFAULT_THRESHOLD if threshold is None else threshold,
                             "threshold")
