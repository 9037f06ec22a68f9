"""The result type shared by every anonymizer."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InputError
from ..release import Release

__all__ = ["Anonymized", "GeneralizedAttribute"]


@dataclass(frozen=True, eq=False)
class GeneralizedAttribute:
    """How one QI attribute was generalized: the published value sets, per row.

    Utility metrics (:mod:`fastpriv.metrics`) read this to know, for every row, which
    original values its published QI value stands for.

    Attributes
    ----------
    name : str
        The QI column.
    domain : pyarrow.Array
        Distinct original values, sorted (domain code ``i`` is ``domain[i]``; the encoding of
        :func:`fastpriv._arrow.encode_column`).
    labels : list of str
        Published label of each generalized value (``"[15, 20)"``, ``"{a, b}"``, ``"*"``).
    member_indptr, members : numpy.ndarray
        CSR (int64 offsets, int32 domain codes): the domain values under each label.
    codes : numpy.ndarray
        Generalized value (index into ``labels``) of each input row, int32; ``-1`` for a
        suppressed row.

    """

    name: str
    domain: pa.Array
    labels: list
    member_indptr: np.ndarray
    members: np.ndarray
    codes: np.ndarray


@dataclass(frozen=True)
class Anonymized:
    """A release produced by an anonymizer.

    Attributes
    ----------
    release : Release
        The published groups and their sensitive values.
    group_ids : numpy.ndarray
        Group id (index into ``release``'s groups) of every input row, int64.
    method : str
        Algorithm name (``"anatomy"``, ``"mondrian"``, …).
    params : dict
        The parameters the algorithm ran with (criterion, seed, …).
    generalized : pyarrow.Table or None
        Generalized QI values per input row (Mondrian, lattice search), if any.
    info : dict
        Algorithm facts: nodes checked, timings, guarantees (e.g. "safe" vs "minimal").
    attributes : tuple of GeneralizedAttribute
        Generalizing anonymizers (Mondrian, lattice search) describe each QI attribute's
        published value sets here; empty for bucketizations (Anatomy).

    Notes
    -----
    A row removed by suppression has group id ``-1`` and is not part of ``release``.

    """

    release: Release
    group_ids: np.ndarray
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    generalized: pa.Table | None = None
    info: dict[str, Any] = field(default_factory=dict)
    attributes: tuple = ()

    def table(self, original: Any = None, *, group_column: str = "group_id") -> pa.Table:
        """The publishable table: ``original`` rows with generalized QI and a group id.

        Without ``original``, only the generalized columns (if any) and the group id.
        """
        from .._arrow import as_table

        cols: dict[str, Any] = {}
        if original is not None:
            t = as_table(original, param="original")
            if t.num_rows != self.group_ids.shape[0]:
                raise InputError(f"original has {t.num_rows} rows, the result covers "
                                 f"{self.group_ids.shape[0]}")
            for name in t.column_names:
                cols[name] = t.column(name)
        if self.generalized is not None:
            for name in self.generalized.column_names:
                cols[name] = self.generalized.column(name)
        cols[group_column] = pa.array(self.group_ids)
        return pa.table(cols)

    def write(self, path: str | os.PathLike, original: Any = None, *, overwrite: bool = False,
              format: str | None = None) -> str:
        """Write :meth:`table` to Parquet/CSV atomically (never over ``original``'s file)."""
        from .._io import write_table

        inputs = [original] if isinstance(original, (str, os.PathLike)) else []
        return write_table(path, self.table(original), overwrite=overwrite, format=format,
                           inputs=inputs)

    def summary(self) -> dict[str, Any]:
        """Small JSON-ready description."""
        return {"method": self.method, "params": self.params, "n_groups": self.release.n_groups,
                "n_rows": int(self.group_ids.shape[0]),
                "min_group_size": int(self.release.sizes.min()), **self.info}
