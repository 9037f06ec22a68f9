"""Re-identification risk from quasi-identifier class sizes (prosecutor, journalist, marketer).

Every measure here needs only the equivalence classes of the QI tuples: their sizes f_j in
the sample, their (estimated) sizes F_j in the population, and, with sampling weights,
Σ sampling weights per class.

Two kinds of weight, two names. ``weight=`` is what it is everywhere in fastpriv: the number
of identical rows a row stands for (a ``GROUP BY`` count), so a pre-aggregated table gives
exactly the measures of its expansion. ``sampling_weight=`` is the survey weight: the
population members a record stands for, which estimates F_j (individual risk,
journalist/marketer risk without a population table).

One counting pass builds :class:`ClassCounts` (mergeable: shards of a large table or a
stream are counted separately and merged); everything after works on the classes or on the
histogram of class sizes (c_i = number of classes of size i).

Measures (:func:`audit`):

* **prosecutor** (El Emam, *Guide to the De-Identification of Personal Health Information*,
  2013, ch. "Measuring the probability of re-identification"; ARX ``RiskModelSampleSummary``):
  the attacker knows the target is in the data; record risk 1/f_j. Highest 1/min f_j,
  average u/n (u classes, n records), share of records with 1/f_j > ``threshold``.
* **journalist** (same source): the attacker matches against a population table that holds
  the sample; record risk 1/F_j. Highest 1/min F_j, average max(u/Σ_j F_j, Σ_j (f_j/F_j)/n),
  share of records with 1/F_j > ``threshold``.
* **marketer**: expected share of records re-identified when all are matched,
  Σ_j (f_j/F_j) / n (= u/n without a population).
* **sample uniques** c_1 and **population uniques** by Pitman (Hoshino 2001), Zayatz (1991),
  the SNB model (Chen & Keller-McNulty 1998) and Dankar et al.'s decision rule (Dankar,
  El Emam, Neisa & Roffey 2012, as implemented in ARX ``RiskModelPopulationUniqueness``).
* **individual risk** with sampling weights, ``sampling_weight=`` (Benedetti & Franconi 1998;
  Franconi & Polettini 2004): r_j = E[1/F_j | f_j] under a negative-binomial posterior,
  computed exactly.
* **k-map** (Sweeney 2002; El Emam & Dankar 2008): min_j F_j over the sample's classes.
* **δ-presence** (Nergiz, Atzori & Clifton 2007): δ_j = f_j/F_j, the probability that a
  population member of class j is in the sample; reported as (min, max) over the population's
  classes (classes absent from the sample have δ = 0).

:func:`combinations` gives the risk by QI combination: for every subset of the QIs up to size
``m``, how many records it makes unique and how many of those are minimal sample uniques
(MSUs) as SUDA2 defines them (Manning, Haglin & Keane 2008).

No R or Java runtime is available to this project: the formulas follow the papers, and ARX's
public source was read for the definitions and edge cases; agreement with ARX or sdcMicro
outputs has not been tested. Where ARX's code differs from the paper (two places in its SNB
model, see :func:`fastpriv._kernels.risk.shlosser_k` and ``snb_expected``) the paper is
followed.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import (
    NULL_POLICIES,
    apply_null_policy,
    apply_weights,
    as_table,
    encode_column,
    encode_keys,
    iter_batches,
    kept_rows,
)
from ._kernels import risk as _k
from ._threads import resolve_n_jobs
from ._validation import (
    INT64_MAX,
    check_at_least,
    check_choice,
    check_column_names,
    check_columns,
    check_int,
    check_probability,
    check_total,
    exact_bincount,
    kernel_array,
    real_array,
)
from .errors import InputError, InputTypeError
from .results import Result, Witness

__all__ = ["ClassCounts", "RiskResult", "RiskWitness", "CombinationResult", "audit",
           "class_counts", "combinations", "verdict", "population_uniques",
           "population_unique_estimate", "match_counts"]

#: the highest acceptable re-identification probability of one record when none is given
DEFAULT_THRESHOLD = 0.2


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def _check_qi(qi: Any) -> list[str]:
    if qi is None:
        raise InputError("qi: give the quasi-identifier columns (a list of column names)")
    return check_column_names(qi, "qi")


# ------------------------------------------------------------------------------- classes
@dataclass(frozen=True, eq=False)
class ClassCounts(Result):
    """Equivalence classes of the QI tuples: one row per distinct tuple, with its size.

    This is the whole state the risk measures need, and it is mergeable: count shards of a
    table (or batches of a stream, or partitions on a cluster) separately and
    :meth:`merge` them; the result equals counting the concatenated table.

    Attributes
    ----------
    qi : tuple of str
        The QI columns.
    keys : pyarrow.Table
        One row per class with its QI values (columns ``qi``), in lexicographic order.
    sizes : int64 array
        f_j, the number of records per class: Σ ``weight`` over the class's rows when the
        table was read with ``weight=`` (each row stands for that many identical records).
    sampling_weight_sums : float64 array or None
        Σ sampling weights per class (an estimate of the population class size F_j), when
        the table was read with ``sampling_weight=``.
    nulls : {"error", "drop", "value"}
        The null policy the classes were counted under: ``"error"`` (no QI was null),
        ``"drop"`` (records with a null QI are left out) or ``"value"`` (null is a QI value
        of its own). The measures report it (``params["nulls"]``) and a population table
        is counted under it too.
    sampling_weight : str or None
        The column the sampling weight sums were read from (``params["sampling_weight"]``
        of the measures on these classes).

    """

    qi: tuple
    keys: pa.Table = field(repr=False)
    sizes: np.ndarray = field(repr=False)
    sampling_weight_sums: np.ndarray | None = field(default=None, repr=False)
    nulls: str = "error"
    sampling_weight: str | None = None

    @property
    def weight_sums(self) -> np.ndarray | None:
        """Deprecated name of :attr:`sampling_weight_sums` (``weight=`` is a multiplicity)."""
        warnings.warn("ClassCounts.weight_sums is renamed sampling_weight_sums (weight= now "
                      "means the number of identical rows a row stands for)",
                      DeprecationWarning, stacklevel=2)
        return self.sampling_weight_sums

    @property
    def n_records(self) -> int:
        """n, the number of records."""
        return int(self.sizes.sum())

    @property
    def n_classes(self) -> int:
        """u, the number of distinct QI tuples."""
        return int(self.sizes.shape[0])

    def histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """``(size, count)``: ``count[i]`` classes have ``size[i]`` records (size ascending)."""
        if self.sizes.size and int(self.sizes.max()) > (1 << 24):   # few classes, huge sizes
            size, count = np.unique(self.sizes, return_counts=True)
            return size.astype(np.int64), count.astype(np.int64)
        counts = np.bincount(self.sizes)
        size = np.flatnonzero(counts)
        return size.astype(np.int64), counts[size].astype(np.int64)

    @property
    def value(self) -> int:
        """The number of equivalence classes (distinct QI tuples)."""
        return self.n_classes

    @property
    def params(self) -> dict:
        """The parameters: the QI columns and the null policy they were counted under."""
        return {"qi": list(self.qi), "nulls": self.nulls}

    @property
    def witness(self) -> None:
        """None: the counts are a state, not a verdict (see :func:`audit`)."""
        return None

    def to_dict(self) -> dict:
        """JSON-safe dict: QI, null policy, records, classes and the class-size histogram."""
        size, count = self.histogram()
        return {"qi": list(self.qi), "nulls": self.nulls, "n_records": self.n_records,
                "n_classes": self.n_classes,
                "class_size_histogram": {"size": size.tolist(), "count": count.tolist()}}

    def summary(self) -> str:
        """One line: records, classes and the smallest class."""
        return (f"{self.n_records:,} records in {self.n_classes:,} QI classes over "
                f"{', '.join(self.qi)}; smallest class {int(self.sizes.min(initial=0)):,}")

    @classmethod
    def from_table(cls, data: Any, *, qi: Sequence[str], weight: str | None = None,
                   sampling_weight: str | None = None,
                   nulls: str = "error") -> "ClassCounts":
        """Count the QI classes of a table (any input :func:`fastpriv.Release.from_table` takes).

        Parameters
        ----------
        data : table-like
            The records.
        qi : list of str
            The quasi-identifier columns.
        weight : str, optional
            Multiplicity column, as everywhere in fastpriv: each row stands for ``weight``
            identical records, so f_j = Σ weight over the rows of class j and every measure
            equals the one of the expanded table. Integers ≥ 0, no nulls (rows of weight 0
            stand for nobody and are dropped).
        sampling_weight : str, optional
            Column of sampling weights (finite, > 0): the population members each record
            stands for; Σ per class estimates F_j. With ``weight`` too, a row adds
            ``weight · sampling_weight``.
        nulls : {"error", "drop", "value"}
            Null policy for the QI (and sampling weight) columns.

        Notes
        -----
        A Parquet/CSV path, a ``pyarrow.dataset`` or a large Table read without weights is
        counted by the streaming ingest of :meth:`fastpriv.Release.from_table`
        (:func:`fastpriv._ingest.encode_rows`): the classes are the (group, value) pairs of
        the QIs but the last, grouped by that last one.

        """
        cols = _check_qi(qi)
        check_choice(nulls, "nulls", NULL_POLICIES)
        weight, sampling_weight = check_weight_names(weight, sampling_weight, cols)
        if weight is None and sampling_weight is None:
            fast = _from_ingest(data, cols, nulls)
            if fast is not None:
                return cls(tuple(cols), fast[0], _ro(fast[1]), nulls=nulls)
        roles: dict = {"qi": cols}
        if weight is not None:
            roles["weight"] = [weight]
        if sampling_weight is not None:
            roles["sampling_weight"] = [sampling_weight]
        table = as_table(data, param="data", roles=roles)
        check_columns(cols, table.column_names, "qi")
        for name, col in (("weight", weight), ("sampling_weight", sampling_weight)):
            if col is not None:
                check_columns([col], table.column_names, name)
        policed = cols + ([sampling_weight] if sampling_weight is not None else [])
        table = table.select(policed + ([weight] if weight is not None else []))
        w = None
        if weight is not None:
            table, w = _multiplicities(table, weight)
        if nulls == "drop" and w is not None:
            keep = kept_rows(table, policed, nulls)
            if keep is not None:
                w = w[keep]
        table, _ = apply_null_policy(table, policed, nulls)
        if table.num_rows == 0:
            raise InputError("data has no rows (after the null policy and weights of 0)")
        codes, keys = encode_keys([table.column(c) for c in cols], names=cols)
        if w is None:
            sizes = np.bincount(codes, minlength=keys.num_rows).astype(np.int64)
        else:
            sizes = exact_bincount(codes, w, keys.num_rows)
        wsum = None
        if sampling_weight is not None:
            sw = _sampling_weights(table.column(sampling_weight))
            wsum = np.bincount(codes, weights=sw if w is None else sw * w,
                               minlength=keys.num_rows)
        return cls(tuple(cols), keys, _ro(sizes), None if wsum is None else _ro(wsum),
                   nulls=nulls, sampling_weight=sampling_weight)

    @classmethod
    def from_counts(cls, data: Any, *, qi: Sequence[str], count: str = "count",
                    sampling_weight_sum: str | None = None, nulls: str = "error",
                    weight_sum: str | None = None) -> "ClassCounts":
        """Classes from aggregated rows ``(qi..., count[, sampling_weight_sum])`` (``GROUP BY``).

        Each row stands for ``count`` records with its QI values, so the classes equal
        :meth:`from_table` on the expanded rows, under every null policy: rows with the same
        QI values are added (partial aggregates, per partition or per day, can be passed
        together), rows of count 0 stand for nobody and are dropped, and ``nulls`` applies
        to the QI (and ``sampling_weight_sum``) columns record by record.

        Parameters
        ----------
        data : table-like
            The aggregated rows, e.g. ``table.group_by(qi).aggregate([([], "count_all")])``
            or a SQL ``SELECT qi..., COUNT(*) ... GROUP BY qi...``. Extra grouping columns
            (a sensitive column) are allowed: they are summed over. Count every record of
            the group (``COUNT(*)``), not the non-null values of one column.
        qi : list of str
            The quasi-identifier columns.
        count : str, default "count"
            Records per row: integers ≥ 0, no nulls (a null count stands for an unknown
            number of records and is refused under every null policy).
        sampling_weight_sum : str, optional
            Σ sampling weights of the row's records.
        nulls : {"error", "drop", "value"}
            Null policy for the QI (and sampling weight sum) columns, as in
            :meth:`from_table`: ``"error"`` names each column with its number of null
            *records* (Σ count), ``"drop"`` leaves out the records of rows with a null,
            ``"value"`` keeps null (and NaN) as a value of its own. The classes carry it
            (:attr:`nulls`).
        weight_sum : str, optional
            Deprecated name of ``sampling_weight_sum`` (warns).

        """
        if weight_sum is not None:
            warnings.warn("from_counts(weight_sum=) is renamed sampling_weight_sum=",
                          DeprecationWarning, stacklevel=2)
            if sampling_weight_sum is not None:
                raise InputError("weight_sum: give sampling_weight_sum= only (weight_sum= is "
                                 "its deprecated name)")
            sampling_weight_sum = weight_sum
        cols = _check_qi(qi)
        check_choice(nulls, "nulls", NULL_POLICIES)
        policed = cols + ([sampling_weight_sum] if sampling_weight_sum is not None else [])
        roles = {"qi": cols, "count": [count]}
        if isinstance(sampling_weight_sum, str):
            roles["sampling_weight_sum"] = [sampling_weight_sum]
        table = as_table(data, param="data", roles=roles)
        check_columns(cols, table.column_names, "qi")
        check_columns([count], table.column_names, "count")
        if sampling_weight_sum is not None:
            check_columns([sampling_weight_sum], table.column_names, "sampling_weight_sum")
        table = table.select(policed + [count])
        c = _record_counts(table.column(count), count)
        if (c == 0).any():                      # rows standing for nobody, as weights of 0
            keep = c > 0
            table, c = table.filter(pa.array(keep)), c[keep]
        if table.num_rows == 0:
            raise InputError("count: every class has count 0")
        if nulls == "error":
            _refuse_null_records(table, policed, c)
        kept = kept_rows(table, policed, nulls)
        table, _ = apply_null_policy(table, policed, nulls)
        if kept is not None:
            c = c[kept]
        if table.num_rows == 0:
            raise InputError("data has no rows (after the null policy)")
        codes, keys = encode_keys([table.column(x) for x in cols], names=cols)
        sizes = exact_bincount(codes, c, keys.num_rows)
        wsum = None
        if sampling_weight_sum is not None:
            wsum = _ro(np.bincount(codes, weights=_sampling_weights(
                table.column(sampling_weight_sum), "sampling_weight_sum"),
                minlength=keys.num_rows))
        return cls(tuple(cols), keys, _ro(sizes), wsum, nulls=nulls,
                   sampling_weight=sampling_weight_sum)

    @classmethod
    def from_batches(cls, data: Any, *, qi: Sequence[str], weight: str | None = None,
                     sampling_weight: str | None = None, nulls: str = "error",
                     batch_size: int = 1 << 20) -> "ClassCounts":
        """Count the classes batch by batch (Parquet/CSV/reader/iterable of batches).

        Only the QI (and weight) columns are read; each batch is counted on its own and the
        per-batch classes are merged once at the end, so memory is bounded by the number of
        (batch, class) pairs, never by the whole decoded table. ``weight`` and
        ``sampling_weight`` and ``nulls`` as in :meth:`from_table`.
        """
        cols = _check_qi(qi)
        check_choice(nulls, "nulls", NULL_POLICIES)
        weight, sampling_weight = check_weight_names(weight, sampling_weight, cols)
        policed = cols + ([sampling_weight] if sampling_weight is not None else [])
        used = policed + ([weight] if weight is not None else [])
        parts = [cls.from_table(b, qi=cols, weight=weight, sampling_weight=sampling_weight,
                                nulls=nulls)
                 for b in iter_batches(data, used, batch_size=batch_size)
                 if b.num_rows and _keep(b, policed, nulls, weight)]
        if not parts:
            raise InputError("data has no rows (after the null policy and weights of 0)")
        return parts[0].merge(*parts[1:])

    @classmethod
    def from_release(cls, release: Any, *, qi: Sequence[str] | None = None,
                     nulls: str | None = None) -> "ClassCounts":
        """Classes of a :class:`fastpriv.Release` built with ``qi=`` (its groups).

        A release built with ``weight=`` counts Σ weight per group, as the table would.
        A release that dropped rows for nulls (``nulls="drop"``) is refused: it dropped
        the rows whose *sensitive* value is null as well, which have QI values and count
        as records here; pass the table (``risk.audit(table, qi=..., nulls="drop")``
        drops only the rows with a null QI).

        ``nulls`` is the null policy the release was built with; by default ``"value"``
        when its groups hold a null QI value, else ``"error"``. A release without a row
        index (built from counts, record batches or weighted rows) keeps no record of the
        rows a null policy dropped, so ``nulls="drop"`` is refused for it.
        """
        keys = release.groups
        names = list(keys.column_names)
        if qi is not None:
            cols = _check_qi(qi)
            if sorted(cols) != sorted(names):
                raise InputError(f"qi: the release is grouped by {names}, not {cols}; build it "
                                 "with Release.from_table(..., qi=...) or pass the table")
        if release.case != "svpi":
            raise InputError(f"data: a {release.case} release counts values, not records; "
                             "pass the table with one row per individual")
        nulls = _release_nulls(release, names, nulls)
        if _dropped_rows(release):
            raise InputError(
                "data: the Release dropped rows with a null (nulls='drop'), in its sensitive "
                f"column {release.sensitive_name!r} as well as in {names}; a record "
                "whose sensitive value is null still has QI values and counts for "
                "re-identification, so its classes may be too small. Pass the table instead: "
                f"risk.audit(table, qi={names}, nulls='drop') drops only the rows with a "
                "null QI")
        return cls(tuple(names), keys, _ro(np.asarray(release.sizes, dtype=np.int64)),
                   nulls=nulls)

    def merge(self, *others: "ClassCounts") -> "ClassCounts":
        """Merge counts of disjoint parts of one table (shards, batches, partitions)."""
        parts = [self, *others]
        for o in others:
            if not isinstance(o, ClassCounts):
                raise InputTypeError(f"merge: expected ClassCounts, got {type(o).__name__}")
            if o.qi != self.qi:
                raise InputError(f"merge: qi differ ({list(o.qi)} vs {list(self.qi)})")
            if (o.sampling_weight_sums is None) != (self.sampling_weight_sums is None):
                raise InputError("merge: either all parts have sampling weights or none")
            if o.nulls != self.nulls:
                raise InputError(f"merge: the parts were counted under different null "
                                 f"policies (nulls={self.nulls!r} and nulls={o.nulls!r}); "
                                 "count every part with the same nulls=")
        try:
            keys = pa.concat_tables([p.keys for p in parts], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InputError(f"merge: the parts' QI column types do not match ({exc})") from None
        codes, merged = encode_keys([keys.column(c) for c in self.qi], names=list(self.qi))
        sizes = exact_bincount(codes, np.concatenate([p.sizes for p in parts]),
                               merged.num_rows)
        wsum = None
        if self.sampling_weight_sums is not None:
            wsum = _ro(np.bincount(codes, weights=np.concatenate(
                [p.sampling_weight_sums for p in parts]), minlength=merged.num_rows))
        return ClassCounts(self.qi, merged, _ro(sizes), wsum, nulls=self.nulls,
                           sampling_weight=self.sampling_weight)

    def to_table(self) -> pa.Table:
        """Return the classes as a table: QI columns, ``size`` (and ``sampling_weight_sum``)."""
        t = self.keys.append_column("size", pa.array(self.sizes))
        if self.sampling_weight_sums is not None:
            t = t.append_column("sampling_weight_sum", pa.array(self.sampling_weight_sums))
        return t

    def values_of(self, j: int) -> dict:
        """QI values of class ``j`` as ``{column: value}``."""
        return {c: self.keys.column(c)[j].as_py() for c in self.qi}


def _dropped_rows(release: Any) -> bool:
    """Whether a Release built from a table dropped rows for nulls (as far as it records)."""
    rows = release.rows
    if rows is not None and getattr(rows, "dropped_nulls", 0):
        return True
    return release.input_row is not None and release.row_group is not None


def _release_nulls(release: Any, names: list, nulls: str | None) -> str:
    """Return the null policy of a Release's classes: the one given, checked, or shown.

    A Release does not record its null policy; its groups show ``"value"`` when a QI
    value is null. Given ``"error"`` or ``"drop"`` for such groups, or ``"drop"`` for a
    release that keeps no row index (so nothing tells which rows the policy dropped), the
    classes are refused.
    """
    held = [c for c in names if release.groups.column(c).null_count]
    if nulls is None:
        return "value" if held else "error"
    check_choice(nulls, "nulls", NULL_POLICIES)
    if held and nulls != "value":
        raise InputError(f"nulls: the Release holds null values in {held} (it kept null as a "
                         f"value, nulls='value'), not nulls={nulls!r}; pass nulls='value', or "
                         f"the table with nulls={nulls!r}")
    if nulls == "drop" and release.row_group is None:
        raise InputError(
            "nulls: this Release was counted from aggregated rows, record batches or weighted "
            "rows and keeps no record of the rows nulls='drop' removed; they include the rows "
            f"whose sensitive value {release.sensitive_name!r} alone was null, which have QI "
            f"values and count as records here, so its classes may be too small. Count the "
            f"classes from the QI columns instead: risk.ClassCounts.from_counts(counts, "
            f"qi={names}, count=..., nulls='drop') on the engine's GROUP BY counts (a "
            "sensitive column among the grouping columns is summed over), or "
            f"risk.audit(table, qi={names}, nulls='drop')")
    return nulls


def check_weight_names(weight: Any, sampling_weight: Any, cols: list) -> tuple:
    """Check ``weight`` and ``sampling_weight`` (column names, distinct, not QIs)."""
    for name, col in (("weight", weight), ("sampling_weight", sampling_weight)):
        if col is None:
            continue
        if not isinstance(col, str):
            raise InputTypeError(f"{name} must be a column name, got {col!r}")
        if col in cols:
            raise InputError(f"{name} column {col!r} is also a qi column")
    if weight is not None and weight == sampling_weight:
        raise InputError(f"weight and sampling_weight name the same column {weight!r}: "
                         "weight= is the number of identical rows a row stands for, "
                         "sampling_weight= the population members each record stands for")
    return weight, sampling_weight


def _multiplicities(table: pa.Table, weight: str) -> tuple[pa.Table, np.ndarray]:
    """Check the ``weight=`` column (multiplicities) and drop the rows of weight 0."""
    col = table.column(weight)
    if pa.types.is_floating(col.type) or pa.types.is_decimal(col.type):
        raise InputTypeError(
            f"weight: column {weight!r} holds {col.type}, expected integers: weight= is the "
            "number of identical rows a row stands for (a GROUP BY count). Sampling weights "
            "(the population members each record represents) go to sampling_weight=")
    table, w = apply_weights(table, weight)
    return table.drop_columns([weight]), w


def _from_ingest(data: Any, cols: list, nulls: str) -> tuple[pa.Table, np.ndarray] | None:
    """Classes of a streamable source through the ingest of ``Release.from_table``.

    The QIs but the last are the release's groups and the last one its "value": each
    (group, value) entry of the profile is one class. None when the source is not streamed
    (the caller reads it whole) or the scan hands the decision back (a null under
    ``nulls="error"``, a CSV the incremental reader cannot type).
    """
    from ._ingest import encode_rows, source_schema, streamable

    if len(cols) < 2 or not streamable(data):
        return None
    check_choice(nulls, "nulls", NULL_POLICIES)
    schema = source_schema(data)
    names = schema.names
    if len(set(names)) != len(names):
        return None
    check_columns(cols, names, "qi")
    if any(pa.types.is_nested(schema.field(c).type) for c in cols):
        return None
    prof = encode_rows(data, keys=cols[:-1], sensitive=cols[-1], nulls=nulls)
    if prof is None:
        return None
    return _profile_classes(prof, cols)


def _profile_classes(prof: Any, cols: list) -> tuple[pa.Table, np.ndarray]:
    """``(keys, sizes)`` of the classes of a profile over ``cols[:-1]`` × ``cols[-1]``.

    The profile lists a group's values by count; classes go in lexicographic order of the
    QI tuple, so the entries of each group holding several values are put in value order
    (the groups are in key order already).
    """
    indptr = np.asarray(prof.indptr, dtype=np.int64)
    codes = np.asarray(prof.codes, dtype=np.int64)
    counts = np.asarray(prof.counts, dtype=np.int64)
    per = np.diff(indptr)
    if per.size and int(per.max()) == 1:    # one value per group: the groups are the classes
        group_keys = prof.keys
    else:
        group = np.repeat(np.arange(per.shape[0], dtype=np.int64), per)
        multi = np.flatnonzero(per[group] > 1)
        if multi.size:
            key = group[multi] * max(len(prof.values), 1) + codes[multi]
            o = multi[np.argsort(key, kind="stable")]
            codes, counts = codes.copy(), counts.copy()
            codes[multi], counts[multi] = codes[o], counts[o]
        group_keys = prof.keys.take(pa.array(group))
    keys = pa.table({**{c: group_keys.column(c) for c in cols[:-1]},
                     cols[-1]: prof.values.take(pa.array(codes))})
    return keys, counts


def _keep(batch: Any, used: list, nulls: str, weight: str | None = None) -> bool:
    """Return False for a batch that the null policy ``"drop"`` (or weights of 0) empties."""
    if weight is not None:
        w = batch.column(batch.schema.get_field_index(weight))
        if w.null_count == 0 and pa.types.is_integer(w.type) and \
                not np.asarray(w.to_numpy()).any():
            return False
    if nulls != "drop":
        return True
    table, _ = apply_null_policy(pa.Table.from_batches([batch]), used, nulls)
    return table.num_rows > 0


def _record_counts(col: Any, name: str) -> np.ndarray:
    """Return the ``count`` column of aggregated rows as int64 (integers ≥ 0, no nulls)."""
    if not pa.types.is_integer(col.type):
        raise InputTypeError(f"count: expected an integer column, got {col.type}")
    if col.null_count:
        raise InputError(f"count: {col.null_count} null counts in column {name!r}; each row "
                         "stands for `count` records, and a null count for an unknown number "
                         "of them (the null policy is for the QI columns)")
    c = col.to_numpy()
    if (c < 0).any():
        raise InputError(f"count: {int((c < 0).sum())} negative counts")
    if c.dtype == np.uint64 and (c > INT64_MAX).any():
        raise InputError("count: counts over 2**63 - 1 (the largest count fastpriv holds)")
    check_total(c, f"count column {name!r}")
    return c.astype(np.int64)


def _refuse_null_records(table: pa.Table, columns: list, counts: np.ndarray) -> None:
    """``nulls="error"`` on aggregated rows: the message of the expanded table, in records.

    Each row stands for ``counts`` records, so a column's nulls (and NaN, a null too) are
    counted in records: the message is the one :func:`apply_null_policy` gives for the
    table of the records themselves.
    """
    desc = []
    for c in columns:
        col = table.column(c)
        nan = np.zeros(table.num_rows, dtype=bool)
        if pa.types.is_floating(col.type):
            nan = np.asarray(pc.fill_null(pc.is_nan(col), False).to_numpy(zero_copy_only=False))
        null = np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False)) | nan
        if not null.any():
            continue
        k, k_nan = int(counts[null].sum()), int(counts[nan].sum())
        desc.append(f"{c!r} has {k} null{'s' if k > 1 else ''}"
                    + (f" (including {k_nan} NaN: NaN is a missing value)" if k_nan else ""))
    if desc:
        raise InputError(f"{', '.join(desc)}; pass nulls='drop' to remove those rows or "
                         "nulls='value' to treat null as a value")


def _sampling_weights(col: Any, name: str = "sampling_weight") -> np.ndarray:
    if pa.types.is_decimal(col.type):
        col = col.cast(pa.float64())
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise InputTypeError(f"{name}: expected a numeric column, got {col.type}")
    w = np.asarray(col.to_numpy(), dtype=np.float64)
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        raise InputError(f"{name}: {int(bad.sum())} weights are not finite and > 0 (first at "
                         f"row {int(np.flatnonzero(bad)[0])})")
    return w


def class_counts(data: Any, *, qi: Sequence[str] | None = None, weight: str | None = None,
                 sampling_weight: str | None = None, nulls: str | None = None) -> ClassCounts:
    """:class:`ClassCounts` of a table, a :class:`fastpriv.Release` (grouped by ``qi``) or as is.

    ``weight`` (multiplicities) and ``sampling_weight`` as in :meth:`ClassCounts.from_table`.
    ``nulls``: the null policy of the QI columns (default ``"error"``); class counts keep
    the one they were counted under (another one is refused) and a Release is read as
    :meth:`ClassCounts.from_release` reads it.
    """
    if isinstance(data, ClassCounts):
        if qi is not None and list(_check_qi(qi)) != list(data.qi):
            raise InputError(f"qi: the class counts are over {list(data.qi)}, not {list(qi)}")
        if weight is not None:
            raise InputError("weight: class counts already count each row's multiplicity")
        if sampling_weight is not None:
            raise InputError("sampling_weight: class counts already carry their sampling "
                             "weight sums")
        if nulls is not None and nulls != data.nulls:
            check_choice(nulls, "nulls", NULL_POLICIES)
            raise InputError(f"nulls: the class counts were counted with nulls={data.nulls!r}, "
                             f"not {nulls!r}; count them again with nulls={nulls!r}, or leave "
                             "nulls= out to use theirs")
        return data
    from .release import Release

    if isinstance(data, Release):
        if weight is not None:
            raise InputError("weight: a Release already counts its rows' weights (build it "
                             "with Release.from_table(..., weight=)); pass it without weight=")
        if sampling_weight is not None:
            raise InputError("sampling_weight: a Release holds no sampling weights; pass the "
                             "table instead")
        return ClassCounts.from_release(data, qi=qi, nulls=nulls)
    return ClassCounts.from_table(data, qi=_check_qi(qi), weight=weight,
                                  sampling_weight=sampling_weight,
                                  nulls="error" if nulls is None else nulls)


# ---------------------------------------------------------------------- population models
class _Models:
    """The population-uniqueness estimates of one class-size histogram, each fitted when asked.

    ``est(name)`` is the estimated number of population uniques by ``"pitman"`` (Hoshino
    2001), ``"zayatz"`` (1991) or ``"snb"`` (Chen & Keller-McNulty 1998); NaN where the model
    has no estimate. Nothing is fitted until asked, so Dankar's rule fits only the models it
    reads (:func:`_dankar`).
    """

    def __init__(self, sizes: np.ndarray, count: np.ndarray, big_n: float) -> None:
        self.sizes = kernel_array(sizes, np.float64)
        self.count = kernel_array(count, np.float64)
        self.n = float((self.sizes * self.count).sum())
        self.big_n = big_n
        self.pi = self.n / big_n
        self.c1 = float(self.count[self.sizes == 1].sum())
        self.params: dict[str, dict] = {}
        self._est: dict[str, float] = {}

    def est(self, name: str) -> float:
        """Return the estimate of model ``name`` (fitted on first use)."""
        if name not in self._est:
            self._est[name] = getattr(self, "_" + name)()
        return self._est[name]

    def _pitman(self) -> float:
        theta, alpha, ok = _k.pitman_fit(self.sizes, self.count, np.int64(self.n),
                                         np.int64(200))
        self.params["pitman"] = {"theta": theta, "alpha": alpha}
        return _k.pitman_uniques(theta, alpha, self.big_n) if ok else float("nan")

    def _zayatz(self) -> float:
        return _k.zayatz_uniques(self.sizes, self.count, int(self.n), self.big_n)

    def _snb(self) -> float:
        kk = _k.shlosser_k(self.sizes, self.count, self.pi)
        c2 = float(self.count[self.sizes == 2].sum())
        a, b, ok = _k.snb_fit(self.c1, c2, kk, self.pi) if self.pi < 1 else \
            (math.nan, math.nan, False)
        self.params["snb"] = {"alpha": a, "beta": b, "K": kk}
        return kk * b ** a if ok else float("nan")


def _valid(x: float) -> bool:
    """Whether a model's estimate is usable (finite and not 0, as ARX requires)."""
    return math.isfinite(x) and x != 0.0


def _dankar(m: _Models) -> tuple[str, str]:
    """Dankar et al.'s (2012) choice of model and why, fitting only the models it reads.

    π ≤ 0.1 → Pitman (Zayatz when Pitman has no valid fit); π > 0.1 → the smaller of Zayatz
    and SNB (Zayatz when SNB has none), as ARX's ``RiskModelPopulationUniqueness``.
    """
    pi = m.pi
    if pi <= 0.1:
        if _valid(m.est("pitman")):
            return "pitman", f"sampling fraction {pi:.3g} <= 0.1: Pitman's model"
        return "zayatz", (f"sampling fraction {pi:.3g} <= 0.1 but Pitman's model has no valid "
                          "fit: Zayatz's model")
    zay, snb = m.est("zayatz"), m.est("snb")
    if _valid(snb):
        return ("zayatz" if zay < snb else "snb"), (
            f"sampling fraction {pi:.3g} > 0.1: the smaller of Zayatz ({zay:.4g}) and SNB "
            f"({snb:.4g})")
    return "zayatz", (f"sampling fraction {pi:.3g} > 0.1 and the SNB model has no valid fit: "
                      "Zayatz's model")


def _histogram(sizes: Any, count: Any, population_size: float) -> tuple:
    """Validate a class-size histogram and its population size: (sizes, count, N)."""
    sizes = real_array(sizes, "sizes")
    count = real_array(count, "count")
    if not (np.isfinite(sizes).all() and np.isfinite(count).all()) or (sizes < 1).any() \
            or (count < 0).any() or sizes.shape != count.shape:
        raise InputError("sizes and count must be arrays of one shape: sizes >= 1, count >= 0")
    n = float((sizes * count).sum())
    big_n = float(check_at_least(population_size, "population_size", max(n, 1.0)))
    return sizes, count, big_n


def population_unique_estimate(sizes: np.ndarray, count: np.ndarray, population_size: float,
                               model: str = "dankar") -> float | None:
    """Estimated number of population uniques by one model, fitting nothing else.

    The value :func:`population_uniques` reports under ``model`` (``"dankar"``, ``"pitman"``,
    ``"zayatz"`` or ``"snb"``): Dankar's rule fits Pitman's model alone at a sampling
    fraction ≤ 0.1 (Zayatz's too only when Pitman has no valid fit), Zayatz's and SNB
    above it. ``None`` where the model has no valid estimate; 0 without sample uniques.
    """
    check_choice(model, "model", ("dankar", "pitman", "zayatz", "snb"))
    m = _Models(*_histogram(sizes, count, population_size))
    if m.c1 == 0:
        return 0.0
    x = m.est(_dankar(m)[0] if model == "dankar" else model)
    return x if _valid(x) else None


def population_uniques(sizes: np.ndarray, count: np.ndarray, population_size: float) -> dict:
    """Estimate population uniques from the class-size histogram, and Dankar's choice.

    Parameters
    ----------
    sizes, count : int arrays
        ``count[i]`` classes have ``sizes[i]`` records (sample of n = Σ sizes·count).
    population_size : float
        N ≥ n; the sampling fraction is π = n/N.

    Returns
    -------
    dict
        ``pitman``, ``zayatz``, ``snb``: estimated number of population uniques (None where the
        model has no valid estimate), ``dankar`` (the chosen one's estimate), ``chosen``,
        ``reason``, ``sampling_fraction`` and the fitted parameters. Dankar et al. (2012),
        as in ARX: π ≤ 0.1 → Pitman (Zayatz if Pitman has no valid estimate); π > 0.1 → the
        smaller of Zayatz and SNB (Zayatz if SNB has none). No sample uniques → 0 for all.
        Every model is fitted (:func:`population_unique_estimate` fits only the one asked).

    """
    m = _Models(*_histogram(sizes, count, population_size))
    out: dict = {"sampling_fraction": m.pi, "population_size": m.big_n}
    if m.c1 == 0:
        out.update(pitman=0.0, zayatz=0.0, snb=0.0, dankar=0.0, chosen="none",
                   reason="no sample uniques, so no population uniques among the sample")
        return out
    est = {name: m.est(name) for name in ("pitman", "zayatz", "snb")}
    out["pitman_params"] = m.params["pitman"]
    out["snb_params"] = m.params["snb"]
    for name, val in est.items():
        out[name] = val if _valid(val) else None
    chosen, reason = _dankar(m)
    out["dankar"] = out[chosen]
    out["chosen"], out["reason"] = chosen, reason
    return out


# --------------------------------------------------------------------------------- audit
@dataclass(frozen=True, eq=False)
class RiskWitness(Witness):
    """The riskiest equivalence class: its QI values, its size, and how many share its risk."""

    qi_values: dict
    size: int
    population_size: float | None
    records_at_highest_risk: int

    def to_dict(self) -> dict:
        """JSON-safe dict of the fields."""
        return {"qi_values": _jsonable(self.qi_values), "size": self.size,
                "population_size": self.population_size,
                "records_at_highest_risk": self.records_at_highest_risk}

    def summary(self) -> str:
        """One sentence naming the class (:meth:`describe`)."""
        return self.describe()

    def describe(self) -> str:
        """One sentence naming the class."""
        vals = ", ".join(f"{k}={v!r}" for k, v in self.qi_values.items())
        who = "is unique" if self.size == 1 else f"is shared by {self.size} records"
        pop = ("" if self.population_size is None
               else f" ({self.population_size:g} in the population)")
        return f"The QI combination {vals} {who}{pop}."


@dataclass(frozen=True, eq=False)
class RiskResult(Result):
    """Re-identification risk of one table (see :func:`audit`).

    ``value`` is the highest prosecutor risk 1/min f_j; ``measures`` holds every measure
    under the keys of :meth:`to_dict`; ``witness`` the riskiest class.
    """

    value: float
    measures: dict
    witness: RiskWitness
    params: dict
    histogram: tuple = field(repr=False)

    @property
    def passed(self) -> bool:
        """True when the highest prosecutor risk is at most ``threshold``."""
        return self.value <= self.params["threshold"]

    def to_dict(self) -> dict:
        """JSON-safe dict: the measures, ``value``, ``passed``, ``witness`` and ``params``."""
        size, count = self.histogram
        return {**self.measures, "value": self.value, "passed": self.passed,
                "witness": self.witness.to_dict(),
                "class_size_histogram": {"size": size.tolist(), "count": count.tolist()},
                "params": self.params}

    def summary(self) -> str:
        """Short plain text for a data owner, with PASS/FAIL against the threshold."""
        m, p = self.measures, self.params
        thr = p["threshold"]
        lines = [f"Re-identification risk on {p['n_records']:,} records, QIs "
                 f"{', '.join(p['qi'])} ({p['n_classes']:,} distinct combinations).",
                 f"{'PASS' if self.passed else 'FAIL'}: the highest prosecutor risk is "
                 f"{self.value:.4g} (threshold {thr:g}).",
                 f"Prosecutor: average {m['prosecutor_avg']:.4g}; "
                 f"{m['prosecutor_above_threshold']:.2%} of records above the threshold.",
                 f"Sample uniques: {m['sample_uniques']:,} records "
                 f"({m['sample_uniques_share']:.2%})."]
        lines.append(_journalist_line(m))
        pu = m.get("population_uniques")
        if pu is not None and pu.get("dankar") is not None:
            big_n = p["population_size"]
            lines.append(f"Estimated population uniques: {pu['dankar']:,.0f} people, "
                         f"{pu['dankar'] / big_n:.4%} of the population of {big_n:,.0f} "
                         f"({pu['chosen']}; {pu['reason']}).")
        if m.get("individual_max") is not None and p.get("sampling_weight") is not None:
            lines.append(f"Individual risk (sampling weights {p['sampling_weight']!r}): "
                         f"highest {m['individual_max']:.4g}, expected re-identifications "
                         f"{m['expected_reidentifications']:.4g}.")
        if m.get("k_map") is not None:
            lines.append(f"k-map: {m['k_map']}; delta-presence in "
                         f"[{m['delta_min']:.4g}, {m['delta_max']:.4g}].")
        lines.append("Riskiest: " + self.witness.describe())
        return "\n".join(lines)


def _journalist_line(m: dict) -> str:
    """Journalist and marketer risk in one line: the values, or why they need a table."""
    if m.get("journalist_max") is None:
        return (f"Journalist and marketer risk: not measured — it {m['journalist_source']}: "
                "the population the attacker matches against, as population=TABLE (CLI "
                "--population TABLE).")
    return (f"Journalist ({m['journalist_source']}): highest {m['journalist_max']:.4g}, "
            f"average {m['journalist_avg']:.4g}; marketer {m['marketer']:.4g}.")


def _jsonable(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        out[k] = v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
    return out


def _journalist(m: dict, n: float, u: int, pairs: Any, big_n: float | None, thr: float,
                sampled: Any) -> None:
    """Fill the journalist and marketer risks (Dankar & El Emam; ARX's attacker models).

    They are defined against the population table the attacker matches: each sample class
    j is hidden among its F_j population members. F_j is exact from a population table
    (``pairs``, the :class:`~fastpriv.class_histogram.PopulationHistogram`: Σ f_j/F_j over
    its (f, F) pairs), estimated as Σ sampling weights with weights, and equal to f_j when
    the sample is the population. A population *size* alone gives no F_j: spreading N over
    the classes in proportion (F = f·N/n) would make the highest journalist risk n/N for a
    sample unique, which contradicts the population uniques the same size estimates. As
    ARX (whose journalist model needs a population subset), the risks are then not given
    (None) and the population uniqueness models answer instead. With sampling weights the
    sums over classes come from their :class:`~fastpriv.class_histogram.SamplingHistogram`
    (``sampled``).
    """
    if pairs is None and sampled is None and big_n is None:
        # the sample is the population, F_j = f_j: the prosecutor's measures (histogram)
        m.update(journalist_max=m["prosecutor_max"], journalist_avg=u / n,
                 journalist_above_threshold=m["prosecutor_above_threshold"],
                 journalist_source="sample (no population given)", marketer=u / n)
        return
    if pairs is None and sampled is not None:
        exposure = sampled.total("exposure")
        m["journalist_max"] = 1.0 / sampled.least_population
        m["journalist_avg"] = max(u / sampled.total("population_total"), exposure / n)
        m["journalist_above_threshold"] = sampled.journalist_above / n
        m["journalist_source"] = "sampling weights (estimated F)"
        m["marketer"] = exposure / n
        return
    if pairs is not None:
        f, big_f, count = (pairs.size.astype(np.float64),
                           pairs.population_size.astype(np.float64), pairs.count)
        exposure, src = pairs.exposure_sum(), "population table"
    else:
        m.update(journalist_max=None, journalist_avg=None, journalist_above_threshold=None,
                 marketer=None,
                 journalist_source="needs a population table (a population size gives no "
                                   "class sizes; see population uniques)")
        return
    m["journalist_max"] = float(1.0 / big_f.min())
    m["journalist_avg"] = float(max(u / float((count * big_f).sum()), exposure / n))
    m["journalist_above_threshold"] = float((count * f)[1.0 / big_f > thr].sum() / n)
    m["journalist_source"] = src
    m["marketer"] = float(exposure / n)


def _histogram_input(data: Any, *, qi: Any, weight: Any, sampling_weight: Any, nulls: Any,
                     population: Any) -> Any:
    """Check what :func:`audit` is given with a summary of :mod:`fastpriv.class_histogram`.

    A :class:`~fastpriv.class_histogram.ClassHistogram` answers every measure but those
    needing each class: a population table (F_j per class: k-map, δ-presence, exact
    journalist risk) and sampling weights; a
    :class:`~fastpriv.class_histogram.SamplingHistogram` adds the sampling weights'
    measures (for its threshold). A
    :class:`~fastpriv.class_histogram.PopulationHistogram` carries its population table's
    F_j: every measure but sampling weights.
    """
    if qi is not None and list(_check_qi(qi)) != list(data.qi):
        raise InputError(f"qi: the histogram is over {list(data.qi)}, not {list(qi)}")
    if weight is not None or sampling_weight is not None:
        raise InputError("weight/sampling_weight: a summary of the classes already counts "
                         "the records (and sums their sampling weights, if any)")
    if nulls is not None and nulls != data.nulls:
        raise InputError(f"nulls: the histogram was counted with nulls={data.nulls!r}, not "
                         f"{nulls!r}")
    if getattr(data, "n_population", None) is not None:    # a PopulationHistogram
        if population is not None:
            raise InputError("population: the summary was matched with its population "
                             "table already; leave population= out")
        if data.n_classes == 0:
            raise InputError("data has no rows (after the null policy and weights of 0)")
    elif population is not None and not (isinstance(population, numbers.Real)
                                         and not isinstance(population, bool)):
        raise InputError("population: a class-size histogram matches no population table "
                         "(that needs each class); give a population size, or audit the "
                         "class counts (class_counts) against the table")
    return data


def _population(pop: Any, sample: Any, sampled: Any) -> tuple:
    """Return ``(PopulationHistogram or None, N or None, text)`` of ``population=``.

    Without one, sampling weights (``sampled``, their summary) estimate N = Σ weights.
    """
    from .class_histogram import PopulationHistogram

    if isinstance(sample, PopulationHistogram):
        return sample, float(sample.n_population), _table_text(sample.n_population)
    if pop is None:
        if sampled is not None:
            return None, sampled.total("weight_total"), "sampling weights"
        return None, None, "none (the sample is the population)"
    if isinstance(pop, numbers.Real) and not isinstance(pop, bool):
        big_n = float(pop)
        if not math.isfinite(big_n) or big_n < sample.n_records:
            raise InputError(f"population: a population size must be >= the number of records "
                             f"({sample.n_records}), got {pop!r}")
        return None, big_n, f"population size {big_n:g}"
    match = match_population(sample, pop)
    return match.histogram(), float(match.n_population), _table_text(match.n_population)


def _table_text(n_population: int) -> str:
    return f"population table of {n_population:,} records"


@dataclass(frozen=True)
class PopulationMatch:
    """The data's classes matched with those of a population table that holds the data.

    :meth:`histogram` summarizes them into the
    :class:`~fastpriv.class_histogram.PopulationHistogram` that k-map, δ-presence and the
    risk against a population are computed from — in memory as on every engine.

    Attributes
    ----------
    sample : ClassCounts
        The data's classes (f_j records in class j).
    big_f : float64 array
        F_j, the people of the population in each class of ``sample``.
    n_population, n_population_classes : int
        Records and classes of the population table.

    """

    sample: ClassCounts
    big_f: np.ndarray
    n_population: int
    n_population_classes: int

    def histogram(self) -> Any:
        """Return the :class:`~fastpriv.class_histogram.PopulationHistogram` of the match."""
        from .class_histogram import PopulationHistogram

        return PopulationHistogram.from_matched(
            self.sample, self.big_f.astype(np.int64), n_population=self.n_population,
            n_population_classes=self.n_population_classes)


def match_population(sample: ClassCounts, population: Any) -> PopulationMatch:
    """Count a population table over the classes' QIs, under their null policy, and match them.

    Parameters
    ----------
    sample : ClassCounts
        The data's classes.
    population : table-like, path, Release or ClassCounts
        The population table; it must hold the data (every F_j ≥ f_j, else InputError).

    Returns
    -------
    PopulationMatch
        F_j for every class of ``sample``, with the population's records and classes.

    """
    popc = class_counts(population, qi=list(sample.qi), nulls=sample.nulls)
    return PopulationMatch(sample, population_sizes(sample, popc), int(popc.n_records),
                           int(popc.n_classes))


def population_sizes(sample: ClassCounts, pop: ClassCounts | None) -> np.ndarray:
    """Return F_j, the population size of each sample class (the population holds the sample).

    ``pop`` are the class counts of a population table over the same QI columns (None: no
    population class); a sample class with more records than its population class is
    refused (InputError).
    """
    u = sample.n_classes
    if pop is None:
        big_f = np.zeros(u)
    else:
        try:
            keys = pa.concat_tables([sample.keys.select(list(sample.qi)),
                                     pop.keys.select(list(sample.qi))],
                                    promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InputError(f"population: QI column types differ from the data's ({exc})"
                             ) from None
        codes, merged = encode_keys([keys.column(c) for c in sample.qi], names=list(sample.qi))
        fpop = np.bincount(codes[u:], weights=pop.sizes, minlength=merged.num_rows)
        big_f = fpop[codes[:u]]
    bad = np.flatnonzero(big_f < sample.sizes)
    if bad.size:
        j = int(bad[0])
        raise InputError(f"population: the class {sample.values_of(j)} has {sample.sizes[j]} "
                         f"records in the data but {int(big_f[j])} in the population "
                         f"({bad.size} such classes); the population must contain the data")
    return big_f.astype(np.float64)


def match_counts(data: Any, *, qi: Sequence[str], count: str, population_count: str,
                 nulls: str = "error") -> Any:
    """Summarize an engine's join of the data's and the population's class counts.

    ``data`` holds complete classes, as an engine's ``FULL JOIN`` of two ``GROUP BY qi``
    results gives them: the QI columns, the records of the data (``count``) and the people
    of the population (``population_count``) per class, a null or 0 where one side lacks
    the class. Both sides are read as :meth:`ClassCounts.from_counts` reads them under
    ``nulls`` (a null QI refused under ``"error"``, left out under ``"drop"``) and matched
    as :func:`match_population` matches them (a class with more records than people is
    refused). Summaries of disjoint sets of classes merge
    (:meth:`~fastpriv.class_histogram.PopulationHistogram.merge`).

    Returns
    -------
    fastpriv.class_histogram.PopulationHistogram
        The summary of these classes (no class of the data: only the population's totals).

    """
    from .class_histogram import PopulationHistogram

    cols = _check_qi(qi)
    check_choice(nulls, "nulls", NULL_POLICIES)
    table = as_table(data, cols + [count, population_count], param="data")
    sides = []
    for name in (count, population_count):
        c = pc.fill_null(table.column(name), 0)
        part = table.select(cols).append_column(name, c).filter(pc.greater(c, 0))
        kept = kept_rows(part, cols, nulls) if part.num_rows else None
        if kept is not None:
            part = part.take(pa.array(kept))
        sides.append(ClassCounts.from_counts(part, qi=cols, count=name, nulls=nulls)
                     if part.num_rows else None)
    sample, pop = sides
    n_pop, n_pop_classes = (0, 0) if pop is None else (pop.n_records, pop.n_classes)
    if sample is None:
        return PopulationHistogram.population_only(cols, nulls, n_population=n_pop,
                                                   n_population_classes=n_pop_classes)
    return PopulationHistogram.from_matched(sample, population_sizes(sample, pop).astype(
        np.int64), n_population=n_pop, n_population_classes=n_pop_classes)


def audit(data: Any, *, qi: Sequence[str] | None = None, weight: str | None = None,
          sampling_weight: str | None = None, population: Any = None,
          threshold: float = DEFAULT_THRESHOLD, nulls: str | None = None) -> RiskResult:
    """Re-identification risk measures of a table, from its QI class sizes.

    Parameters
    ----------
    data : table-like, Release, ClassCounts or a summary
        The released records (anything :meth:`fastpriv.Release.from_table` reads), a
        :class:`fastpriv.Release` built with ``qi=`` (its groups are the classes),
        :class:`ClassCounts` (e.g. merged from shards), or an engine's fold of the classes:
        a :class:`~fastpriv.class_histogram.ClassHistogram` (no population table, no
        sampling weights) or a :class:`~fastpriv.class_histogram.PopulationHistogram`
        (matched with its population table already; ``population=`` left out).
    qi : list of str
        The quasi-identifier columns (optional for a Release / ClassCounts).
    weight : str, optional
        Multiplicity column, as everywhere in fastpriv: each row stands for ``weight``
        identical records (a ``GROUP BY`` count), so f_j = Σ weight over the rows of class
        j and every measure equals the one of the expanded table. Integers ≥ 0, no nulls;
        rows of weight 0 stand for nobody.
    sampling_weight : str, optional
        Column of sampling weights (finite, > 0; the population members each record
        stands for): Σ sampling weights in a class estimates its population size F̂_j
        (Benedetti–Franconi individual risk; journalist/marketer risk on F̂_j when no
        population table is given). With ``weight`` too, a row contributes
        ``weight · sampling_weight`` (``weight=`` is always a multiplicity, never a
        sampling weight).
    population : int or table-like, optional
        The population size N (for population uniqueness), or a population table holding
        every record of ``data`` (exact journalist and marketer risk, k-map, δ-presence).
    threshold : float, default 0.2
        Highest acceptable re-identification probability of one record; a record is at risk
        when its risk is strictly greater (ARX's convention).
    nulls : {"error", "drop", "value"}, optional
        Null policy for the QI (and sampling weight) columns, of the data and of a
        population table alike: ``"error"`` (the default for a table), ``"drop"`` (leave
        out the records with a null QI) or ``"value"`` (null is a value of its own).
        :class:`ClassCounts` keep the policy they were counted under (another one is
        refused); a Release's is read by :meth:`ClassCounts.from_release`. A Release that
        dropped rows for nulls is refused (it dropped null sensitive values too): pass its
        table. ``params["nulls"]`` is the policy the classes were counted under.

    Returns
    -------
    RiskResult
        ``.value`` = highest prosecutor risk; ``.to_dict()`` keys: ``prosecutor_max``,
        ``prosecutor_avg``, ``prosecutor_above_threshold``, ``journalist_max``,
        ``journalist_avg``, ``journalist_above_threshold``, ``journalist_source``,
        ``marketer``, ``sample_uniques``, ``sample_uniques_share``, ``population_uniques``
        (dict by model, ``chosen``, ``reason``; None without a population size),
        ``individual_max``, ``individual_avg``, ``individual_above_threshold``,
        ``expected_reidentifications`` (None without sampling weights or population size),
        ``k_map``, ``delta_min``, ``delta_max`` (None without a population table).
        ``params`` holds ``sampling_weight`` but not ``weight``: a multiplicity column is a
        way of reading the records, and the result is the expanded table's, exactly.

    """
    from .class_histogram import ClassHistogram, PopulationHistogram, SamplingHistogram

    thr = check_probability(threshold, "threshold")
    if isinstance(data, (ClassHistogram, PopulationHistogram, SamplingHistogram)):
        cc = _histogram_input(data, qi=qi, weight=weight, sampling_weight=sampling_weight,
                              nulls=nulls, population=population)
    else:
        cc = class_counts(data, qi=qi, weight=weight, sampling_weight=sampling_weight,
                          nulls=nulls)
    sampled = _sampled(cc, thr)
    size, count = cc.histogram()
    n, u = float((size * count).sum()), int(count.sum())
    pairs, big_n, pop_desc = _population(population, cc, sampled)
    m: dict = {}
    m["prosecutor_max"] = float(1.0 / size[0])
    m["prosecutor_avg"] = u / n
    m["prosecutor_above_threshold"] = float((size * count)[1.0 / size > thr].sum() / n)
    c1 = int(count[size == 1].sum())
    m["sample_uniques"], m["sample_uniques_share"] = c1, c1 / n
    # journalist / marketer: exact F_j from a population table, or F̂_j from sampling
    # weights; a population size alone gives no class sizes (see _journalist)
    _journalist(m, n, u, pairs, big_n, thr, sampled)
    if big_n is not None:
        m["population_uniques"] = _json_pu(population_uniques(size, count, big_n))
    else:
        m["population_uniques"] = None
    _individual(m, cc, n, big_n, thr, sampled)
    if pairs is not None:
        m["k_map"] = pairs.k_map()[0]
        m["delta_max"], m["delta_min"], _ = pairs.delta()
    else:
        m["k_map"] = m["delta_min"] = m["delta_max"] = None
    at_max = int(size[0] * count[0])
    if pairs is not None:
        c = pairs.smallest
        wit = RiskWitness(dict(c["qi_values"]), c["size"], float(c["population_size"]), at_max)
    elif isinstance(cc, (ClassHistogram, SamplingHistogram)):
        wit = RiskWitness(dict(cc.smallest), int(size[0]), None, at_max)
    else:
        j = int(np.argmin(cc.sizes))
        wit = RiskWitness(cc.values_of(j), int(cc.sizes[j]), None, at_max)
    params = {"qi": list(cc.qi), "threshold": thr,
              "sampling_weight": getattr(cc, "sampling_weight", None),
              "population": pop_desc,
              "population_size": big_n, "n_records": int(n), "n_classes": u,
              "nulls": cc.nulls}
    return RiskResult(m["prosecutor_max"], m, wit, params, cc.histogram())


def _json_pu(pu: dict) -> dict:
    def clean(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v
    return clean(pu)


def _sampled(cc: Any, thr: float) -> Any:
    """Return the :class:`~fastpriv.class_histogram.SamplingHistogram` of the classes.

    The summary itself when given one (for the same threshold); None without sampling
    weights.
    """
    from .class_histogram import SamplingHistogram

    if isinstance(cc, SamplingHistogram):
        if cc.threshold != thr:
            raise InputError(f"threshold: the summary counts the records at risk above "
                             f"threshold={cc.threshold:g}; audit it with that threshold, or "
                             f"fold the classes again with threshold={thr:g}")
        return cc
    if getattr(cc, "sampling_weight_sums", None) is None:
        return None
    return SamplingHistogram.from_class_counts(cc, threshold=thr)


def _individual(m: dict, cc: Any, n: float, big_n: float | None, thr: float,
                sampled: Any) -> None:
    """Benedetti–Franconi individual risk from sampling weight sums (or uniform weights N/n).

    With sampling weights the per-class risks are summed in their summary (``sampled``).
    With uniform weights the risk depends on the class size alone: it is computed once per
    distinct size (the histogram), not once per class.
    """
    if sampled is not None:
        short = sampled.short
        if short is not None:
            raise InputError(
                f"sampling_weight: the class {short['qi_values']} has {short['size']} records "
                f"but its sampling weights sum to {short['sampling_weight_sum']:g} (< "
                "records); sampling weights estimate how many population members each "
                "record stands for and must be >= 1 each")
        er = sampled.total("expected")
        m["individual_max"] = sampled.individual_max
        m["individual_avg"] = er / n
        m["individual_above_threshold"] = sampled.individual_above / n
        m["expected_reidentifications"] = er
        return
    if big_n is not None:
        size, count = cc.histogram()
        fs = size.astype(np.float64)
        r = _k.bf_individual_risk(kernel_array(size, np.int64),
                                  kernel_array(np.maximum(fs * (big_n / n), fs), np.float64))
        people = fs * count
        er = float((people * r).sum())
        m["individual_max"] = float(r.max())
        m["individual_avg"] = er / n
        m["individual_above_threshold"] = float(people[r > thr].sum() / n)
        m["expected_reidentifications"] = er
        return
    for key in ("individual_max", "individual_avg", "individual_above_threshold",
                "expected_reidentifications"):
        m[key] = None


def verdict(result: RiskResult, max_risk: float) -> tuple[bool, list[str]]:
    """Plain verdict for the command line / report: passed iff highest prosecutor risk ≤ max_risk.

    Returns ``(passed, lines)``; ``lines`` explain the decision in words.
    """
    if not isinstance(result, RiskResult):
        raise InputTypeError(f"result: expected a RiskResult, got {type(result).__name__}")
    mr = check_probability(max_risk, "max_risk")
    ok = result.value <= mr
    w = result.witness
    m = result.measures
    lines = [f"{'PASS' if ok else 'FAIL'}: highest re-identification risk {result.value:.4g} "
             f"{'<=' if ok else '>'} max-risk {mr:g}.",
             f"{m['sample_uniques']:,} records are unique on their QIs "
             f"({m['sample_uniques_share']:.2%}); average prosecutor risk "
             f"{m['prosecutor_avg']:.4g}."]
    if not ok:
        need = f"at least {math.ceil(1 / mr)} records" if mr > 0 else "infinitely many records"
        lines.append(f"To pass, every QI combination must be shared by {need}. "
                     f"Riskiest: {w.describe()}")
    return ok, lines


# -------------------------------------------------------------------------- combinations
@dataclass(frozen=True, eq=False)
class SubsetWitness(Witness):
    """The QI subset with the highest SUDA score (see :func:`combinations`)."""

    qi: tuple
    size: int
    classes: int
    uniques: int
    msu: int
    score: float

    def summary(self) -> str:
        """One sentence naming the subset."""
        return (f"{' + '.join(self.qi)}: {self.msu:,} records unique on exactly this "
                f"combination (minimal), {self.uniques:,} unique in all")


@dataclass(frozen=True, eq=False)
class CombinationResult(Result):
    """Risk by QI combination (see :func:`combinations`).

    ``rows``: one dict per subset with ``qi`` (list), ``size``, ``classes``, ``uniques``
    (records unique on the subset), ``msu`` (records for which the subset is a minimal sample
    unique) and ``score`` (SUDA weight × msu). ``value`` is the largest share of records
    made unique by a subset of size ≤ m; ``witness`` the subset with the highest score.
    """

    value: float
    rows: list
    attribute_contribution: dict
    witness: SubsetWitness
    params: dict

    def generalize_first(self, top: int = 5) -> list:
        """Return the QIs to generalize first: by their share of the SUDA score, highest first."""
        ranked = sorted(self.attribute_contribution.items(), key=lambda kv: -kv[1])
        return [name for name, share in ranked[:top] if share > 0]

    def to_dict(self) -> dict:
        """JSON-safe dict."""
        return {"value": self.value, "rows": self.rows,
                "attribute_contribution": self.attribute_contribution,
                "generalize_first": self.generalize_first(), "witness": self.witness.to_dict(),
                "params": self.params}

    def summary(self) -> str:
        """Short plain text: which combinations make records unique and what to generalize."""
        p = self.params
        top = sorted(self.rows, key=lambda r: (-r["score"], r["size"]))[:3]
        lines = [f"Risk by QI combination: {p['n_subsets']:,} subsets of {p['n_qi']} QIs up to "
                 f"size {p['max_set_size']} on {p['n_records']:,} records."]
        for r in top:
            if r["msu"] == 0:
                break
            lines.append(f"{' + '.join(r['qi'])}: {r['msu']:,} records unique on exactly this "
                         f"combination (minimal), {r['uniques']:,} unique in all.")
        gf = self.generalize_first(3)
        if gf:
            lines.append("Generalize first: " + ", ".join(gf) + ".")
        else:
            lines.append("No combination up to this size makes any record unique.")
        return "\n".join(lines)


def combinations(data: Any, *, qi: Sequence[str] | None = None,
                 max_set_size: int | None = None, weight: str | None = None,
                 nulls: str | None = None, max_memory: int = 1 << 30,
                 n_jobs: int | None = None, m: int | None = None) -> CombinationResult:
    """Uniques and minimal sample uniques (SUDA2) for every QI subset up to ``max_set_size``.

    A record is *unique* on a subset S when no other record shares its values on S. S is a
    *minimal sample unique* (MSU) of the record when the record is unique on S and on no
    proper subset of S (Elliot, Manning & Ford 2002; SUDA2: Manning, Haglin & Keane 2008);
    by monotonicity it suffices that it is not unique on any S minus one attribute.

    The table is first reduced to its distinct full QI tuples (with counts); each QI is
    encoded once; each subset costs one counting pass over the distinct tuples (mixed-radix
    keys, hashed). Levels are processed in order of size, keeping one bit per distinct tuple
    for each subset of the previous level (memory ≈ C(q, k−1)·D/8 bytes, checked against
    ``max_memory``).

    The SUDA score of an MSU of size k is Π_{i=k}^{m−1} (q − i) (Elliot et al. 2002, with
    q QIs and m the largest size examined); ``attribute_contribution[a]`` is the share of the
    total score from MSUs containing a (sdcMicro's "contribution percent" / 100); the
    attributes with the largest contributions are the ones to generalize first.

    Parameters
    ----------
    data : table-like, Release or ClassCounts
        As for :func:`audit`.
    qi : list of str
        The quasi-identifier columns (optional for a Release / ClassCounts).
    max_set_size : int, optional
        Largest subset size (default: all QIs); the name of the largest attribute set
        everywhere (``m`` is the skyline's).
    weight : str, optional
        Multiplicity column (each row stands for ``weight`` identical records; integers
        ≥ 0): the result equals the expanded table's.
    nulls : {"error", "drop", "value"}, optional
        Null policy for the QI columns, as for :func:`audit` (``params["nulls"]`` is the one
        the classes were counted under).
    max_memory : int
        Bound in bytes on the uniqueness bits kept between levels.
    n_jobs : int or None
        Subsets of one level are counted on this many threads (the kernels release the GIL;
        ``fastpriv._threads`` convention: None = all threads of the pool). Each thread's
        counting pass holds about 100 bytes per distinct tuple while it runs.
    m : int, optional
        Deprecated name of ``max_set_size`` (warns; removed in the next release).

    """
    if m is not None:
        import warnings

        warnings.warn("risk.combinations(m=) is deprecated: use max_set_size= (m is the "
                      "skyline's letter)", DeprecationWarning, stacklevel=2)
        max_set_size = m if max_set_size is None else max_set_size
    cc = class_counts(data, qi=qi, weight=weight, nulls=nulls)
    q = len(cc.qi)
    m = q if max_set_size is None else check_int(max_set_size, "max_set_size", minimum=1,
                                                 maximum=q)
    max_memory = check_int(max_memory, "max_memory", minimum=1)
    d = cc.n_classes
    widest = max(math.comb(q, k) for k in range(1, m)) if m > 1 else 0
    need = widest * ((d + 7) // 8)
    if need > max_memory:
        raise InputError(f"max_set_size: keeping the uniqueness bits of {widest} subsets of "
                         f"{d:,} distinct tuples needs {need:,} bytes > max_memory={max_memory:,};"
                         " lower max_set_size or raise max_memory")
    encs = [encode_column(cc.keys.column(c), name=c) for c in cc.qi]
    codes = kernel_array(np.stack([e.codes for e in encs]), np.int32)
    cards = kernel_array([max(len(e.labels), 1) for e in encs], np.int64)
    w = kernel_array(cc.sizes, np.int64)
    bits = max(2, int(math.ceil(math.log2(max(2 * d, 4)))))
    workers = resolve_n_jobs(n_jobs)

    def count(sub: tuple) -> tuple:
        sz, ncls = _k.subset_class_sizes(codes, kernel_array(sub, np.int64), cards, w, bits)
        return sz == 1, int(ncls)

    rows, prev = [], {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for k in range(1, m + 1):
            cur = {}
            weight_k = math.prod(q - i for i in range(k, m))
            subs = list(itertools.combinations(range(q), k))
            for sub, (uniq, ncls) in zip(subs, pool.map(count, subs), strict=True):
                msu = uniq.copy()
                if k > 1 and uniq.any():
                    for drop in range(k):
                        packed = prev.get(sub[:drop] + sub[drop + 1:])
                        if packed is not None:
                            msu &= ~np.unpackbits(packed, count=d).astype(bool)
                nu, nm = int(uniq.sum()), int(msu.sum())
                if k < m and nu:
                    cur[sub] = np.packbits(uniq)
                rows.append({"qi": [cc.qi[i] for i in sub], "size": k, "classes": ncls,
                             "uniques": nu, "msu": nm, "score": nm * weight_k})
            prev = cur
    total = sum(r["score"] for r in rows)
    contrib = {c: (sum(r["score"] for r in rows if c in r["qi"]) / total if total else 0.0)
               for c in cc.qi}
    n = cc.n_records
    best = max(rows, key=lambda r: (r["score"], -r["size"], r["uniques"]))
    value = max(r["uniques"] for r in rows) / n
    params = {"qi": list(cc.qi), "max_set_size": m, "n_qi": q, "n_records": n,
              "n_distinct_tuples": d, "n_subsets": len(rows), "nulls": cc.nulls}
    witness = SubsetWitness(tuple(best["qi"]), best["size"], best["classes"], best["uniques"],
                            best["msu"], best["score"])
    return CombinationResult(value, rows, contrib, witness, params)


def warmup() -> None:
    """Measure re-identification risk every way the risk audit and the report do (warm-up).

    ``fastpriv warmup``'s workload of the model (the registry's ``warmup_workload``):
    class counts, the population-uniqueness models and individual risk (a population size;
    a sample with uniques, which the models are fitted to), a population table, and the
    risk of QI combinations (SUDA2).
    """
    from .datasets import synthetic

    qi = ["q0", "q1", "q2"]
    t = synthetic(3000, qi_cardinalities=[6, 5, 4], n_values=5, seed=4)
    audit(t, qi=qi)
    audit(t, qi=qi, population=1_000_000)
    audit(synthetic(200, qi_cardinalities=[6, 5, 4], n_values=5, seed=5), qi=qi,
          population=1_000_000)
    audit(t.slice(0, 1000), qi=qi, population=t)
    combinations(t, qi=qi, max_set_size=2)
