"""Shared input preparation of the anonymizers: validated (QI, sensitive) table and nulls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from .._arrow import apply_null_policy, as_table, kept_rows
from .._validation import check_choice, check_columns
from ..errors import InputError, InputTypeError


class AnonymizerInput(NamedTuple):
    """The selected columns (QI then sensitive), after the null policy."""

    table: pa.Table
    qi: list
    n_input_rows: int
    #: input row index of every kept row (``nulls="drop"`` or a weight of 0 dropped some),
    #: else None
    kept_rows: np.ndarray | None


class Weights(NamedTuple):
    """A multiplicity column (``weight=``) read by :func:`prepare_weighted_input`."""

    #: people per kept row (int64)
    kept: np.ndarray
    #: people per input row, kept or not (int64)
    input: np.ndarray


#: Internal name of the constant column that stands in for an absent sensitive attribute
#: (``sensitive=None``: k-anonymity and risk over the QIs alone, ARX's standard set-up).
NO_SENSITIVE = "__fastpriv_no_sensitive__"


def sensitive_column(sensitive: str | None) -> str:
    """Return the column an anonymizer reads as the sensitive one (a constant one if None)."""
    return NO_SENSITIVE if sensitive is None else sensitive


def reads_sensitive(criterion: Any) -> bool:
    """Whether ``criterion`` reads the sensitive value (not k-anonymity, not the risks)."""
    from ..predicates import AllOf, KAnonymity

    if isinstance(criterion, AllOf):
        return any(reads_sensitive(p) for p in criterion.parts)
    if getattr(criterion, "reads_sensitive", True) is False:
        return False
    return not isinstance(criterion, KAnonymity)


def require_sensitive(criterion: Any, sensitive: str | None) -> None:
    """Refuse, with ``sensitive=None``, a criterion that reads the sensitive value."""
    if sensitive is None and reads_sensitive(criterion):
        raise InputError(f"sensitive: {getattr(criterion, 'name', criterion)} reads the "
                         "sensitive value; pass sensitive= (CLI: --sensitive), or use "
                         "k-anonymity (min_size=) alone")


def check_qi_sensitive(qi: Sequence[str] | str, sensitive: str | None) -> list:
    """Return ``qi`` as a list: non-empty, no duplicates, not containing ``sensitive``.

    ``sensitive=None`` is allowed: the models that read only the QIs (k-anonymity) run
    without a sensitive attribute.
    """
    if isinstance(qi, str):
        qi = [qi]
    qi = list(qi)
    if not qi:
        raise InputError("qi: at least one quasi-identifier column is required")
    if len(set(qi)) != len(qi):
        raise InputError(f"qi: duplicate columns in {qi}")
    if sensitive is not None and not isinstance(sensitive, str):
        raise InputTypeError(f"sensitive must be a column name or None, got "
                             f"{type(sensitive).__name__}")
    if sensitive is not None and sensitive in qi:
        raise InputError(f"sensitive column {sensitive!r} is also a qi column")
    return qi


def prepare_input(table: Any, qi: Sequence[str] | str, sensitive: str | None, nulls: str,
                  *, checked: bool = False) -> AnonymizerInput:
    """Select ``qi + [sensitive]``, apply ``nulls`` and reject an empty result.

    With ``sensitive=None`` the last column is a constant one named :data:`NO_SENSITIVE`.

    ``nulls="error"`` raises naming the column; ``"drop"`` drops the rows and records which
    input rows were kept. NaN in a float column is a null. ``checked=True`` skips
    :func:`check_qi_sensitive` and the ``nulls`` check (the caller already ran them).
    """
    return prepare_weighted_input(table, qi, sensitive, nulls, None, checked=checked)[0]


def prepare_weighted_input(table: Any, qi: Sequence[str] | str, sensitive: str | None,
                           nulls: str, weight: str | None, *, checked: bool = False
                           ) -> tuple[AnonymizerInput, Weights | None]:
    """:func:`prepare_input` with a multiplicity column ``weight`` (None: none).

    ``weight`` is read as in :meth:`fastpriv.Release.from_table`: each row stands for
    ``weight`` identical people. Integers ≥ 0 without nulls (checked on every input row);
    rows of weight 0 stand for nobody and are dropped like rows with a null
    (``kept_rows``). Returns the input and its :class:`Weights` (None without ``weight``).
    """
    if not checked:
        qi = check_qi_sensitive(qi, sensitive)
        check_choice(nulls, "nulls", ("error", "drop"))
    qi = list(qi)
    check_fits_in_memory(table, qi + ([] if sensitive is None else [sensitive])
                         + ([weight] if isinstance(weight, str) else []))
    t = as_table(table, param="data")
    check_columns(qi, t.column_names, "qi")
    if sensitive is not None:
        check_columns([sensitive], t.column_names, "sensitive")
    cols = qi + ([] if sensitive is None else [sensitive])
    w_all = None
    if weight is not None:
        w_all = input_weights(t, weight, cols)
    t = t.select(cols)
    n_input = t.num_rows
    kept = None
    if nulls == "drop":   # NaN in a float column is a null too (see apply_null_policy)
        kept = kept_rows(t, cols, "drop")
    if w_all is not None and not (w_all > 0).all():   # weight 0: nobody, dropped
        kept = np.arange(n_input, dtype=np.int64) if kept is None else kept
        kept = kept[w_all[kept] > 0]
        t = t.take(pa.array(kept))   # without the null rows already under "drop"
        if nulls != "drop":
            apply_null_policy(t, cols, "error")
    else:
        t, _ = apply_null_policy(t, cols, "drop" if nulls == "drop" else "error")
    if t.num_rows == 0:
        raise InputError("table is empty: a release needs at least one row"
                         + (" of weight > 0" if weight is not None else ""))
    if sensitive is None:
        t = t.append_column(NO_SENSITIVE, pa.array(np.zeros(t.num_rows, dtype=np.int8)))
    weights = None
    if w_all is not None:
        weights = Weights(w_all if kept is None else w_all[kept], w_all)
    return AnonymizerInput(t, qi, n_input, kept), weights


#: Bytes a string or binary value is taken to hold in memory (its offset and its bytes)
#: when estimating a file's size once read without reading it.
VARIABLE_WIDTH_BYTES = 24


def source_bytes_in_memory(path: str, columns: Sequence[str] | None
                           ) -> tuple[int, int] | None:
    """Estimate the memory a file's ``columns`` (None: all) take once read: (bytes, rows).

    Parquet: rows × each column's width in memory (fixed-width types their bytes, strings
    and binaries :data:`VARIABLE_WIDTH_BYTES`), from the file's metadata and schema — its
    pages are compressed and dictionary-encoded, so their size says little; CSV: the
    file's size (text is about as large as the columns it parses into). None for what
    cannot be told without reading (a folder, another format, unreadable metadata).
    """
    import os

    from .._arrow import file_format

    if not os.path.isfile(path):
        return None
    fmt = file_format(path)
    if fmt == "csv":
        return os.path.getsize(path), 0
    if fmt != "parquet":
        return None
    import pyarrow.parquet as pq

    try:
        f = pq.ParquetFile(path)
        schema, rows = f.schema_arrow, f.metadata.num_rows
    except (OSError, pa.ArrowException):
        return None
    width = 0
    for field in schema:
        if columns is not None and field.name not in columns:
            continue
        t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        try:
            width += max(t.bit_width // 8, 1)
        except ValueError:                  # variable width: strings, binaries, nested
            width += VARIABLE_WIDTH_BYTES
    return rows * width, rows


def check_fits_in_memory(data: Any, columns: Sequence[str] | None) -> None:
    """Refuse a file an in-memory anonymizer cannot hold, before reading it.

    The estimate is twice the columns' size once read (the table and its encoding) plus
    :data:`~fastpriv._budget.EXPANDED_ROW_BYTES` per row (the codes, the row index and the
    method's per-row arrays; Anatomy measured 180 B per row), against the free memory
    (:func:`fastpriv._budget.check_memory`); the message names the way out: the
    generalizations run out of core, the bucketizations need a smaller input.
    """
    import os

    from .._budget import EXPANDED_ROW_BYTES, check_memory

    if not isinstance(data, (str, os.PathLike)):
        return
    path = os.fspath(data)
    est = source_bytes_in_memory(path, columns)
    if est is None:
        return
    size, rows = est
    check_memory(2 * size + EXPANDED_ROW_BYTES * rows,
                 f"reading {path} ({rows:,} rows) into memory to anonymize it" if rows
                 else f"reading {path} into memory to anonymize it",
                 "the lattice search, Mondrian, SkylineAnonymize and the minimal (c,k)-safe "
                 "search run out of core (fastpriv.anonymize.release_out_of_core; fastpriv "
                 "anonymize does so by itself for --method lattice/mondrian); Anatomy and ART "
                 "place every row and need the rows in memory: anonymize a sample or split "
                 "the input")


def input_weights(table: pa.Table, weight: Any, cols: Sequence[str]) -> np.ndarray:
    """Check the multiplicity column ``weight`` of ``table``; return it as int64 per row."""
    from .._arrow import apply_weights

    if not isinstance(weight, str):
        raise InputTypeError(f"weight must be a column name, got {type(weight).__name__}")
    check_columns([weight], table.column_names, "weight")
    if weight in cols:
        raise InputError(f"weight column {weight!r} is also a qi or sensitive column")
    col = table.column(weight)
    if pa.types.is_floating(col.type) or pa.types.is_decimal(col.type):
        raise InputTypeError(f"weight: column {weight!r} holds {col.type}, expected integers "
                             "(the number of identical people a row stands for, e.g. a "
                             "GROUP BY count)")
    w_tab = table.select([weight])
    apply_weights(w_tab, weight)        # integers >= 0, no nulls, total within int64
    return np.asarray(w_tab.column(weight).to_numpy(), dtype=np.int64)


def expand_rows(x: np.ndarray, kept_rows: np.ndarray | None, n_input_rows: int) -> np.ndarray:
    """Per-kept-row values → per-input-row (int64; rows dropped for nulls get −1)."""
    if kept_rows is None:
        return np.asarray(x, dtype=np.int64)
    out = np.full(n_input_rows, -1, dtype=np.int64)
    out[kept_rows] = x
    return out


def expand_arrow(arr: pa.Array, kept_rows: np.ndarray | None, n_input_rows: int) -> pa.Array:
    """Per-kept-row Arrow values → per-input-row (rows dropped for nulls get null)."""
    if kept_rows is None:
        return arr
    idx = np.full(n_input_rows, -1, dtype=np.int64)
    idx[kept_rows] = np.arange(len(kept_rows))
    mask = idx < 0
    return arr.take(pa.array(np.where(mask, 0, idx), mask=mask))
