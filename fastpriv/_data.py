"""Resolve a model's ``data`` argument: a Release, or any supported table with its keywords.

Every count-based model (classical, (c,k)-safety, privacy skyline, predicates) takes its data
first: either a :class:`~fastpriv.release.Release` or a table (pyarrow, pandas, polars,
Parquet/CSV path, dataset) together with the keywords that say how to read it —
``sensitive=``, and ``group=`` or ``qi=`` (plus ``weight=``/``individual=`` where they apply).
The keywords are exactly those of :meth:`Release.from_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import InputError, InputTypeError
from .release import SVPI, Release

__all__ = ["as_release"]


def as_release(data: Any, *, sensitive: str | None = None,
               group: str | Sequence[str] | None = None, qi: Sequence[str] | None = None,
               weight: str | None = None, individual: str | None = None,
               nulls: str = "error", svpi_only: str | None = None) -> Release:
    """Return ``data`` as a Release, building it from a table when needed.

    Parameters
    ----------
    data : Release or table-like
        A Release, or anything :meth:`Release.from_table` reads.
    sensitive, group, qi, weight, individual, nulls
        How to read a table (see :meth:`Release.from_table`). With a Release they must be
        left out (``nulls`` at its default): the Release already fixes its groups and values.
    svpi_only : str, optional
        The model's name, when it is defined for one sensitive value per individual only
        (SVPI); an MVPI release is then refused naming the model.

    Returns
    -------
    Release

    Raises
    ------
    InputTypeError
        ``data`` is neither a Release nor a table-like object.
    InputError
        Keywords given with a Release, ``sensitive=`` missing for a table, or an MVPI release
        for an SVPI-only model.

    """
    if isinstance(data, Release):
        given = [name for name, v in (("sensitive", sensitive), ("group", group), ("qi", qi),
                                      ("weight", weight), ("individual", individual))
                 if v is not None]
        if nulls != "error":
            given.append("nulls")
        if given:
            raise InputError(f"{', '.join(n + '=' for n in given)} is only for tables: a "
                             "Release already has its groups and sensitive values")
        rel = data
    else:
        if sensitive is None:
            if group is None and qi is None:
                raise InputTypeError(
                    f"data must be a fastpriv.Release, or a table with sensitive= and group= "
                    f"or qi=; got {type(data).__name__} without them")
            raise InputError("sensitive= is required to read a table")
        rel = Release.from_table(data, sensitive=sensitive, group=group, qi=qi, weight=weight,
                                 individual=individual, nulls=nulls)
    if svpi_only is not None and rel.case != SVPI:
        raise InputError(f"data: {svpi_only} is defined for one sensitive value per individual "
                         f"(SVPI); this release is {rel.case!r}")
    return rel
