"""A folder's files must agree on their columns: the one check, where a path becomes a dataset.

:func:`fastpriv._arrow.open_dataset` calls :func:`check_files_agree` on every folder it
opens, so every reader of a path (whole tables, streamed batches, schemas, row counts,
:mod:`fastpriv.distributed`) and therefore every command refuses such a folder alike.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from .errors import InputError

__all__ = ["check_files_agree"]

#: the folders whose files were found to agree, by (folder, (file, mtime, size) ...)
_AGREEING: dict[tuple, None] = {}
_AGREEING_KEPT = 64


def _type_kind(t: pa.DataType) -> str | None:
    """Return the kind of a column type two files must share (None: nulls only)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return None
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "floating"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    return str(t)


def _disagreement(ref: pa.Schema, ref_name: str, other: pa.Schema, name: str) -> str | None:
    """How ``other`` (file ``name``) disagrees with ``ref`` (file ``ref_name``), or None."""
    ref_names, names = ref.names, other.names
    folded = {c.casefold(): c for c in ref_names}
    for c in names:
        if c not in ref_names and c.casefold() in folded:
            return (f"{name} spells column {c!r} where {ref_name} spells it "
                    f"{folded[c.casefold()]!r}")
    spelled = {c.casefold() for c in names}
    for c in ref_names:
        if c not in names and c.casefold() not in spelled:
            return f"{name} has no column {c!r} (that {ref_name} has)"
    for c in names:
        if c not in ref_names:
            return f"{name} has a column {c!r} that {ref_name} has not"
    for c in names:
        a, b = _type_kind(other.field(c).type), _type_kind(ref.field(c).type)
        if a is not None and b is not None and a != b:
            return (f"column {c!r} is {other.field(c).type} in {name} but "
                    f"{ref.field(c).type} in {ref_name}")
    return None


def check_files_agree(dataset: Any, path: str, param: str = "data") -> None:
    """Refuse a folder whose files disagree on a column: its name, its case or its type.

    The one check of a folder's files, made where a path becomes a dataset
    (:func:`fastpriv._arrow.open_dataset`), so that every command and every reader (whole
    tables, streamed batches, schemas, row counts) refuses the same folder alike. Arrow
    takes a folder's schema from one file and reads a column another file spells
    ``Disease`` instead of ``disease`` as nulls: half of the rows would silently leave the
    audit (``nulls="drop"``). Names are compared exactly (case included), types by kind
    (integers of any width agree, as do string and dictionary-encoded string; a column of
    nulls agrees with any type). Files a folder was seen to agree with (same names, sizes
    and modification times) are not read again.

    Raises
    ------
    InputError
        One line naming both files and both spellings (or types).

    """
    files = list(getattr(dataset, "files", None) or [])
    if len(files) < 2:
        return
    stamp = []
    for f in files:
        try:
            st = os.stat(f)
            stamp.append((f, st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append((f, 0, -1))
    key = (os.path.abspath(path), tuple(stamp))
    if key in _AGREEING:
        return
    fmt = dataset.format
    fs = dataset.filesystem

    def rel(f: str) -> str:
        return os.path.relpath(f, path) if os.path.isdir(path) else f

    ref = fmt.make_fragment(files[0], filesystem=fs).physical_schema
    for f in files[1:]:
        why = _disagreement(ref, rel(files[0]),
                            fmt.make_fragment(f, filesystem=fs).physical_schema, rel(f))
        if why:
            raise InputError(f"{param}: the files of {path!r} disagree: {why}; every file of "
                             "a folder must name its columns alike (case included) with the "
                             "same types: rename or convert the odd file")
    if len(_AGREEING) >= _AGREEING_KEPT:
        _AGREEING.clear()
    _AGREEING[key] = None
