"""The result type shared by every anonymizer."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ..errors import InputError
from ..release import Release
from ..results import Result, json_safe
from ._publish import canonical_order, check_keep, check_no_relink, dense_rank, entries_digest

__all__ = ["Anonymized", "GeneralizedAttribute", "MondrianResult", "SkylineAnonymized",
           "ArtResult", "LatticeAnonymized", "left_out_text", "release_paths"]


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


@dataclass(frozen=True, eq=False)
class Anonymized(Result):
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
    attributes : tuple of GeneralizedAttribute
        Generalizing anonymizers (Mondrian, lattice search) describe each QI attribute's
        published value sets here; empty for bucketizations (Anatomy).
    seconds : dict
        Seconds spent per phase (``"encode"``, ``"partition"``, ``"total"``, …).
    row_weights : numpy.ndarray or None
        ``weight=``: the number of people every input row stands for (int64; the release's
        group sizes are sums of it); ``None`` when each row is one person.

    Notes
    -----
    A row removed by suppression has group id ``-1`` and is not part of ``release``.
    A weighted result (``row_weights``) publishes people, not rows: its table has one row
    per distinct published row of a group, with a count column (named after the weight
    column unless ``count_column=`` is given) holding how many people it stands for — the
    expanded table's release, aggregated, and never the input's split of those counts.
    Each anonymizer returns a subclass whose extra fields are the algorithm's facts
    (:class:`MondrianResult`, :class:`SkylineAnonymized`, :class:`ArtResult`,
    :class:`LatticeAnonymized`, :class:`~fastpriv.anonymize.AnatomyResult`).

    """

    release: Release
    group_ids: np.ndarray
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    generalized: pa.Table | None = None
    attributes: tuple = ()
    seconds: dict[str, float] = field(default_factory=dict)
    row_weights: np.ndarray | None = field(default=None, repr=False)

    @property
    def value(self) -> Any:
        """The one number answering the anonymizer's question; ``None`` for most methods."""
        return None

    @property
    def witness(self) -> None:
        """Anonymizers have no witness (the release itself is the answer)."""
        return None

    @property
    def n_suppressed(self) -> int:
        """Number of input rows left out of the release (group id −1)."""
        return int(np.sum(self.group_ids < 0))

    @property
    def weight(self) -> str | None:
        """The multiplicity column the input was read with (``weight=``), or None."""
        w = self.params.get("weight")
        return None if w is None else str(w)

    @property
    def n_people(self) -> int:
        """People the input stands for: Σ weight (``weight=``), else its number of rows."""
        if self.row_weights is None:
            return int(self.group_ids.shape[0])
        return int(np.asarray(self.row_weights, dtype=np.int64).sum())

    @property
    def n_suppressed_people(self) -> int:
        """People left out of the release: Σ weight of the rows with group id −1."""
        if self.row_weights is None:
            return self.n_suppressed
        return int(np.asarray(self.row_weights, dtype=np.int64)[self.group_ids < 0].sum())

    def _count_name(self, count_column: str | None) -> str:
        """Return the count column's name: ``count_column``, else the weight column, else count."""
        if count_column is not None:
            if not isinstance(count_column, str) or not count_column:
                raise InputError(f"count_column must be a column name, got {count_column!r}")
            return count_column
        return self.weight or "count"

    @property
    def is_bucketization(self) -> bool:
        """True when the release publishes exact QI values and hides the link in groups.

        Bucketizations (Anatomy, ART) publish two tables — the QI table (exact QI values and
        a group id) and the sensitive table (group id, value, count) — that must never be
        joined. Generalizations (lattice search, Mondrian, SkylineAnonymize) publish one
        table with generalized QI values.
        """
        return self.generalized is None

    @property
    def sensitive(self) -> str | None:
        """The sensitive column (``None``: anonymized without one, k-anonymity alone)."""
        if "sensitive" in self.params:
            s = self.params["sensitive"]
            return None if s is None else str(s)
        return str(self.release.sensitive_name)

    @property
    def qi(self) -> list[str]:
        """The quasi-identifier columns."""
        return list(self.params.get("qi") or [])

    @property
    def failure(self) -> str | None:
        """Why the release fails the criterion it claims, in words; ``None`` when it meets it.

        Mondrian, the lattice search, SkylineAnonymize and Anatomy meet their criterion by
        construction; an ART release can fail it (a stranded group merged anyway, or kept
        with ``on_unsatisfied="report"``).
        """
        return None

    def _refuse_failing(self, allow_failing: bool) -> None:
        """Refuse to publish a release that fails its own criterion (unless asked to)."""
        if self.failure is not None and not allow_failing:
            raise InputError(f"this {self.method} release fails its own criterion "
                             f"({self.params.get('criterion')}): {self.failure}; it is not "
                             "published — pass allow_failing=True to get it anyway (it is "
                             "not safe under that criterion)")

    def table(self, original: Any = None, *, keep: Sequence[str] = (),
              group_column: str = "group_id", allow_failing: bool = False,
              count_column: str | None = None) -> pa.Table:
        """Return the publishable table of a generalization, safe under its criterion.

        Columns: the generalized QI columns, the sensitive column, the columns named in
        ``keep`` (published unchanged: name them only when they are not identifying) and
        the group id. Every other column of ``original`` is left out and suppressed rows are
        dropped. Rows are in an order that depends on the published values alone, and group
        ids are numbered from each group's published content
        (:func:`~fastpriv.anonymize._publish.canonical_order`): row *i* of the release is not
        row *i* of the input. The Parquet metadata says it is a release and which model it
        claims.

        Parameters
        ----------
        original : table-like
            The anonymized input (row-aligned with :attr:`group_ids`): the source of the
            sensitive values and of the ``keep`` columns.
        keep : sequence of str
            Extra columns published unchanged; never a QI, the sensitive column or a name
            the release adds.
        group_column : str
            Name of the group-id column.
        allow_failing : bool
            Publish a release that fails its own criterion (see :attr:`failure`).
        count_column : str, optional
            A weighted result (``weight=``) only: the name of the count column (default: the
            weight column's name). Rows with equal published values in one group are one
            row whose count is the sum of their weights.

        Raises
        ------
        InputError
            For a bucketization (Anatomy, ART), whose release is two tables: use
            :meth:`release_tables` (or :meth:`write`), or :meth:`auditor_view` for the joined
            table the row-level audits read. For a refused ``keep`` column, a clashing
            ``group_column``, or a release that fails its criterion.

        """
        if self.is_bucketization:
            raise InputError(
                f"the {self.method} release is two tables (QI table and sensitive table) that "
                "must not be joined: use release_tables() or write(); auditor_view() gives "
                "the joined table for audits (never publish it)")
        self._refuse_failing(allow_failing)
        sens = [] if self.sensitive is None else [self.sensitive]
        t = self._original(original, sens)
        gen = self.generalized.column_names
        weighted = self.row_weights is not None
        cname = self._count_name(count_column) if weighted else None
        added = [group_column] + ([cname, self.weight] if weighted else [])
        keep = check_keep(keep, columns=t.column_names, qi=[*self.qi, *gen],
                          sensitive=self.sensitive, added=added)
        protected = [*gen, *sens]
        if group_column in protected:
            raise InputError(f"group_column {group_column!r} is also a published column; "
                             "pass another group_column=")
        if weighted and cname in [*protected, group_column]:
            raise InputError(f"count_column {cname!r} is also a published column or the group "
                             "id; pass another count_column= (CLI: --count-column)")
        pub = self._generalized_rows(t, keep)
        out = pub.content.take(pa.array(pub.order))
        if weighted:
            out = out.append_column(cname, pa.array(pub.counts[pub.order], pa.int64()))
        out = out.append_column(group_column,
                                pa.array(pub.new_id[pub.groups[pub.order]], pa.int64()))
        return out.replace_schema_metadata(self._metadata("release", keep))

    def people_batches(self, original: Any = None, *, group_column: str = "group_id",
                       batch_rows: int = 1 << 20, allow_failing: bool = False
                       ) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """Return the release of a weighted generalization, one row per person, in batches.

        ``original``'s rows are distinct rows with the number of people each stands for
        (the ``weight`` column: a histogram, as an out-of-core search reads its input). The
        rows are those :meth:`table` gives for the people themselves — one row each, no
        count column, in the order and with the group ids of the unweighted release
        (:func:`~fastpriv.anonymize._publish.canonical_order_of_counts`) — produced
        ``batch_rows`` at a time from the histogram: memory holds the histogram and one
        batch, never the people. Returns the schema (with the release's metadata) and the
        batches.
        """
        from ._publish import canonical_order_of_counts

        if self.is_bucketization or self.row_weights is None:
            raise InputError("people_batches: a weighted generalization's result is needed "
                             "(its rows a histogram of people)")
        self._refuse_failing(allow_failing)
        sens = [] if self.sensitive is None else [self.sensitive]
        t = self._original(original, sens)
        gen = self.generalized.column_names
        if group_column in [*gen, *sens]:
            raise InputError(f"group_column {group_column!r} is also a published column; "
                             "pass another group_column=")
        mask = self.group_ids >= 0
        content = pa.table({**{n: self.generalized.column(n) for n in gen},
                            **{n: t.column(n) for n in sens}})
        g, w = self.group_ids, np.asarray(self.row_weights, dtype=np.int64)
        if not mask.all():
            content, g, w = content.filter(pa.array(mask)), g[mask], w[mask]
        order, new_id = canonical_order_of_counts(content, g, w)
        schema = content.schema.append(pa.field(group_column, pa.int64())).with_metadata(
            self._metadata("release", ()))
        return schema, _repeat_batches(content, order, w, new_id[g], schema, batch_rows)

    def _generalized_rows(self, t: pa.Table, keep: Sequence[str]) -> "_Published":
        """Return the published rows of a generalization (``t``: the input) and their order.

        Unweighted: one row per kept input row. Weighted: one row per (group, distinct
        published row) with its count Σ weight, and the groups numbered from their rows
        *and* counts (:func:`canonical_order` with an :func:`entries_digest`), so the
        release depends on the people it stands for, never on how the input split them.
        """
        sens = [] if self.sensitive is None else [self.sensitive]
        gen = self.generalized.column_names
        protected = [*gen, *sens]
        mask = self.group_ids >= 0
        cols = {name: self.generalized.column(name) for name in gen}
        for name in [*sens, *keep]:
            cols[name] = t.column(name)
        content = pa.table(cols)
        g = self.group_ids
        if not mask.all():
            content = content.filter(pa.array(mask))
            g = g[mask]
        rows = np.flatnonzero(mask)
        if self.row_weights is None:
            order, new_id = canonical_order(content.select(protected), g, rows=content)
            return _Published(content, g, None, rows, order, new_id)
        from .._validation import exact_bincount

        w = np.asarray(self.row_weights, dtype=np.int64)[mask]
        rank = dense_rank(content)
        width = int(rank.max()) + 1 if rank.size else 1
        key = g.astype(np.int64) * width + rank
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        counts = exact_bincount(inverse.reshape(-1), w, first.shape[0])
        content, g, rows = content.take(pa.array(first)), g[first], rows[first]
        extra = entries_digest(g, dense_rank(content), counts, self.release.n_groups)
        order, new_id = canonical_order(content.select(protected), g, rows=content,
                                        group_extra=extra)
        return _Published(content, g, counts, rows, order, new_id)

    def release_tables(self, original: Any = None, *, keep: Sequence[str] = (),
                       group_column: str = "group_id", count_column: str | None = None,
                       allow_failing: bool = False) -> dict[str, pa.Table]:
        """Return every table of the release by name (``release``, or ``qi`` and ``sensitive``).

        A generalization has one table (:meth:`table`). A bucketization has the QI table
        (the exact QI columns, the ``keep`` columns and the group id, one row per published
        person) and the sensitive table (group id, value, count); both are written in an
        order that depends on the published values alone, and a ``keep`` column that
        determines the sensitive value is refused (it would re-link the two tables).
        ``count_column`` names the sensitive table's count (default ``count``) or, for a
        weighted generalization, the count of people per row (default: the weight column).
        """
        if not self.is_bucketization:
            return {"release": self.table(original, keep=keep, group_column=group_column,
                                          allow_failing=allow_failing,
                                          count_column=count_column)}
        self._refuse_failing(allow_failing)
        count_column = self._count_name(count_column)
        qi_tab, new_id, _, value_rank = self._bucket_qi_table(original, keep, group_column,
                                                              count_column)
        return {"qi": qi_tab.replace_schema_metadata(self._metadata("release: QI table", keep)),
                "sensitive": self._sensitive_entries(new_id, value_rank, group_column,
                                                     count_column)}

    def sensitive_table(self, original: Any = None, *, group_column: str = "group_id",
                        count_column: str | None = None) -> pa.Table:
        """Return the sensitive table: one (group id, value, count) row per entry.

        Group ids are those of the QI table (:meth:`release_tables`), numbered from the
        published content, so ``original`` (the anonymized input) is needed.
        """
        count_column = self._count_name(count_column)
        _, new_id, _, value_rank = self._bucket_qi_table(original, (), group_column,
                                                         count_column)
        return self._sensitive_entries(new_id, value_rank, group_column, count_column)

    def _bucket_qi_table(self, original: Any, keep: Sequence[str], group_column: str,
                         count_column: str
                         ) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
        """Return the QI table of a bucketization in publication order.

        Also the new group ids, the publication order of the kept rows and the rank of each
        sensitive value label (the sensitive table's order).
        """
        if not self.qi:
            raise InputError(f"this {self.method} result names no QI columns; pass qi= to the "
                             "anonymizer to publish its QI table")
        names = {group_column, self.sensitive, count_column}
        if len(names) != 3:
            raise InputError(f"the sensitive table's columns clash: group_column="
                             f"{group_column!r}, the sensitive column {self.sensitive!r} and "
                             f"count_column={count_column!r} must differ (CLI: --count-column)")
        if group_column in self.qi:
            raise InputError(f"group_column {group_column!r} is also a QI column; pass "
                             "another group_column=")
        t = self._original(original, list(self.qi))
        keep = check_keep(keep, columns=t.column_names, qi=self.qi, sensitive=self.sensitive,
                          added=[group_column])
        mask = self.group_ids >= 0
        g = self.group_ids[mask]
        content = t.select([*self.qi, *keep])
        if not mask.all():
            content = content.filter(pa.array(mask))
        if keep and self.sensitive in t.column_names:
            kept = t.select([*keep, self.sensitive])
            check_no_relink(kept.filter(pa.array(mask)) if not mask.all() else kept, keep,
                            self.sensitive)
        rel = self.release
        value_rank = dense_rank(pa.table({"v": rel.value_labels}))
        extra = entries_digest(rel.entry_group, value_rank[rel.codes], rel.counts,
                               rel.n_groups)
        order, new_id = canonical_order(content.select(list(self.qi)), g, rows=content,
                                        group_extra=extra)
        qi_tab = content.take(pa.array(order)).append_column(
            group_column, pa.array(new_id[g[order]], pa.int64()))
        return qi_tab, new_id, order, value_rank

    def _sensitive_entries(self, new_id: np.ndarray, value_rank: np.ndarray,
                           group_column: str, count_column: str) -> pa.Table:
        rel = self.release
        codes = np.asarray(rel.codes, dtype=np.int64)
        groups = new_id[np.asarray(rel.entry_group, dtype=np.int64)]
        order = np.lexsort((value_rank[codes], groups))
        tab = pa.table({group_column: pa.array(groups[order], pa.int64()),
                        self.sensitive: rel.value_labels.take(pa.array(codes[order])),
                        count_column: pa.array(np.asarray(rel.counts)[order])})
        return tab.replace_schema_metadata(self._metadata("release: sensitive table", ()))

    def _publication(self, original: Any) -> tuple[np.ndarray, np.ndarray]:
        """(publication order of the kept rows, new id of each group), ``keep`` empty."""
        if self.is_bucketization:
            _, new_id, order, _ = self._bucket_qi_table(original, (), "group_id", "count")
            return order, new_id
        sens = [] if self.sensitive is None else [self.sensitive]
        pub = self._generalized_rows(self._original(original, sens), ())
        return pub.order, pub.new_id

    def published_group_ids(self, original: Any = None) -> np.ndarray:
        """Group id of every input row as the release publishes it (−1: suppressed).

        The release numbers groups from their published content (:meth:`table`,
        :meth:`release_tables`), not as :attr:`group_ids` does.
        """
        _, new_id = self._publication(original)
        out = np.full(self.group_ids.shape[0], -1, dtype=np.int64)
        mask = self.group_ids >= 0
        out[mask] = new_id[self.group_ids[mask]]
        return out

    def published_rows(self, original: Any = None) -> np.ndarray:
        """Input row of each row of the release (its QI table for a bucketization), in order.

        For the auditor who holds the input and measures an attack on the published file:
        ``original.take(result.published_rows(original))`` is row-aligned with the release
        written without ``keep`` (rows of equal published values are interchangeable; for
        a weighted result, each release row names one of the input rows it sums).
        The release itself never carries this mapping.
        """
        if self.is_bucketization:
            order, _ = self._publication(original)
            return np.flatnonzero(self.group_ids >= 0)[order]
        sens = [] if self.sensitive is None else [self.sensitive]
        pub = self._generalized_rows(self._original(original, sens), ())
        return pub.rows[pub.order]

    def auditor_view(self, original: Any, *, group_column: str = "group_id") -> pa.Table:
        """Return the auditor's view, every original row with its group id: not a release.

        This joined table links each person's exact QI values to their exact sensitive
        value — it is the input of the row-level audits (:func:`fastpriv.robustness.audit`,
        :func:`fastpriv.foreground.attack`), never something to publish. Its rows are in
        input order and its group ids are the release's (:meth:`published_group_ids`). Its
        Parquet metadata says it is not a release (``fastpriv.kind = auditor_view``).
        """
        t = self._original(original, [])
        cols = {name: t.column(name) for name in t.column_names}
        if self.generalized is not None:
            for name in self.generalized.column_names:
                cols[name] = self.generalized.column(name)
        cols[group_column] = pa.array(self.published_group_ids(t))
        return pa.table(cols).replace_schema_metadata(self._metadata("auditor_view", ()))

    def write(self, path: str | os.PathLike, original: Any = None, *,
              keep: Sequence[str] = (), overwrite: bool = False,
              format: str | None = None, count_column: str | None = None,
              allow_failing: bool = False) -> list[str]:
        """Write the release as one unit; return the paths written.

        A generalization is written to ``path``; a bucketization to two files named after
        it, ``<stem>.qi<suffix>`` and ``<stem>.sensitive<suffix>`` (:func:`release_paths`),
        committed together (:class:`fastpriv._io.OutputSet`: both new files or both old
        ones). Never over ``original``'s file or any other input; without ``overwrite``
        nothing existing is replaced. A release that fails its own criterion is refused
        unless ``allow_failing``. ``count_column`` as in :meth:`release_tables`.
        """
        from .._io import check_outputs, output_set, write_table

        inputs = [original] if isinstance(original, (str, os.PathLike)) else []
        tables = self.release_tables(original, keep=keep, count_column=count_column,
                                     allow_failing=allow_failing)
        paths = release_paths(path, bucketization=self.is_bucketization)
        check_outputs(list(paths.values()), overwrite=overwrite, inputs=inputs)
        with output_set():
            return [write_table(paths[name], tab, overwrite=overwrite, format=format,
                                inputs=inputs) for name, tab in tables.items()]

    def _original(self, original: Any, needed: Sequence[str]) -> pa.Table:
        from .._arrow import as_table
        from .._validation import check_columns

        if original is None:
            raise InputError("original: the anonymized input table is needed (the result "
                             "keeps no rows)")
        t = as_table(original, param="original")
        check_columns(needed, t.column_names, "keep" if needed else "original")
        if t.num_rows != self.group_ids.shape[0]:
            raise InputError(f"original has {t.num_rows} rows, the result covers "
                             f"{self.group_ids.shape[0]}")
        return t

    def _metadata(self, kind: str, keep: Sequence[str]) -> dict[bytes, bytes]:
        import json

        note = ("NOT A RELEASE: every row with its exact quasi-identifiers and exact "
                "sensitive value; for auditing only, never publish" if kind == "auditor_view"
                else f"fastpriv {self.method} release")
        return {b"fastpriv.kind": kind.encode(), b"fastpriv.method": self.method.encode(),
                b"fastpriv.criterion": str(self.params.get("criterion")).encode(),
                b"fastpriv.published_unchanged": json.dumps(list(keep)).encode(),
                b"fastpriv.note": note.encode()}

    def facts(self) -> dict[str, Any]:
        """Return the algorithm's own fields (those a subclass adds), JSON-safe."""
        base = {f.name for f in dataclasses.fields(Anonymized)}
        return {f.name: json_safe(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in base and f.repr}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: method, parameters, group sizes and the algorithm's facts."""
        sizes = self.release.sizes
        return json_safe({
            "method": self.method, "params": self.params, "n_groups": self.release.n_groups,
            "n_rows": int(self.group_ids.shape[0]), "n_suppressed": self.n_suppressed,
            "min_group_size": int(sizes.min()) if sizes.size else 0,
            **({"weight": self.weight, "n_people": self.n_people,
                "n_suppressed_people": self.n_suppressed_people}
               if self.row_weights is not None else {}),
            "published_as": "two tables (QI, sensitive)" if self.is_bucketization
            else "one generalized table", "seconds": self.seconds, **self.facts()})

    def summary(self) -> str:
        """Return a few lines of plain text: what was published, the criterion it meets."""
        d = self.to_dict()
        crit = self.params.get("criterion") or "its criterion"
        rows = f"{d['n_rows']:,} rows ({self._left_out()})"
        if self.row_weights is not None:
            rows = (f"{d['n_people']:,} people in {d['n_rows']:,} weighted rows "
                    f"({self._left_out()})")
        lines = [f"{self.method}: {d['n_groups']:,} groups of at least {d['min_group_size']:,} "
                 f"people from {rows}, "
                 + (f"FAILING {crit}: {self.failure}." if self.failure else f"meeting {crit}.")]
        levels = getattr(self, "levels", None)
        gone = set(getattr(self, "fully_suppressed", ()))
        if levels:
            lines.append("generalization: " + ", ".join(
                f"{a} at level {lv}" + (" (fully suppressed)" if a in gone else "")
                for a, lv in levels.items()))
        lines.append("published as " + d["published_as"] + ".")
        return "\n".join(lines)


    def _left_out(self) -> str:
        """Return what became of the rows suppressed or left out, in words."""
        weighted = self.row_weights is not None
        return left_out_text(self.n_suppressed_people if weighted else self.n_suppressed,
                             "people" if weighted else "rows",
                             getattr(self, "n_suppressed_rows", 0),
                             getattr(self, "suppressed", "drop"))


def left_out_text(gone: int, unit: str, n_suppressed_rows: int, suppressed: str) -> str:
    """Say what became of the rows a release leaves out or suppressed (summaries, CLI).

    ``gone``: rows (``unit="rows"``) or people left out of the release (group id −1);
    ``n_suppressed_rows``: input rows the criterion suppressed, dropped (among ``gone``) or
    kept as ``*`` (``suppressed="keep"``).
    """
    sup = n_suppressed_rows
    if not sup:
        return f"{gone:,} {unit} dropped"
    if suppressed == "keep":
        return (f"{sup:,} suppressed rows kept as one group with every QI '*'"
                + (f"; {gone:,} {unit} dropped (nulls, weight 0)" if gone else ""))
    if unit == "rows" and gone == sup:
        return f"{sup:,} suppressed rows dropped"
    return f"{gone:,} {unit} dropped, {sup:,} suppressed rows among them"


class _Published(NamedTuple):
    """The rows of a generalization's release before ordering (see ``_generalized_rows``)."""

    content: pa.Table           # published columns but the group id (and count)
    groups: np.ndarray          # old group id of each row
    counts: np.ndarray | None   # people per row (weighted), else None
    rows: np.ndarray            # an input row of each row
    order: np.ndarray           # publication order of the rows
    new_id: np.ndarray          # published id of each old group id


@dataclass(frozen=True, eq=False)
class MondrianResult(Anonymized):
    """A Mondrian release (:func:`~fastpriv.anonymize.mondrian`).

    Attributes
    ----------
    n_splits : int
        Accepted median splits.
    path : {"compiled", "python"}
        Whether the recursion ran in the compiled kernel or from Python (a criterion the
        kernel cannot evaluate).
    n_cells : int
        Distinct (QI, sensitive) cells the input was compressed to.

    """

    n_splits: int = 0
    path: str = "compiled"
    n_cells: int = 0


@dataclass(frozen=True, eq=False)
class SkylineAnonymized(MondrianResult):
    """A SkylineAnonymize release (:func:`~fastpriv.anonymize.skyline_anonymize`).

    Attributes
    ----------
    case : str
        Case of the input (``"svpi"``, ``"mvpi-set"``, ``"mvpi-multiset"``).
    guarantee : str
        What holds: "safe and minimal" (SVPI, Theorems 4-5) or "safe" (MVPI).
    minimal : bool
        Whether minimality is guaranteed (SVPI).
    n_rejected_splits : int
        Candidate splits refused because a point would be breached.
    order : str
        Split ordering (``"widest"``, ``"qi"`` or the callable's name).
    points : tuple of dict
        The Theorem-2 bound on BP of every (σ, point) from the final statistics.
    check : SkylineCheck or None
        :func:`fastpriv.skyline.check` of the output (``check=True``).

    """

    case: str = "svpi"
    guarantee: str = ""
    minimal: bool = False
    n_rejected_splits: int = 0
    order: str = "widest"
    points: tuple = ()
    check: Any = None

    @property
    def value(self) -> float | None:
        """Largest breach probability of the output over the points (from ``check``)."""
        if self.check is None:
            return None
        return max((float(p.value) for p in self.check.points), default=0.0)


@dataclass(frozen=True, eq=False)
class ArtResult(Anonymized):
    """An ART release (:func:`~fastpriv.anonymize.art`): a bucketization for r-robustness.

    Attributes
    ----------
    r, condition, pad
        As passed.
    n_merges, n_passes : int
        Group merges and passes over X_s of the merge kernel.
    n_profiles, n_attribute_sets : int
        Distinct probability profiles and attribute sets of the adversary's knowledge.
    n_sensitive_rows, n_sensitive_groups : int
        Rows holding a value of X_s, and the groups holding them.
    min_sensitive_group_size : int or None
        Smallest group holding a value of X_s.
    n_unsatisfied : int
        Sensitive rows still failing the condition after step 4.
    on_unsatisfied : str
        The stranded-group policy used.
    n_stranded_groups, n_stranded_rows, n_delta_only_rows, n_rescued_groups,
    n_merged_unsatisfied_groups, n_suppressed_groups, n_suppressed_rows : int
        Stranded groups (step 4) and what became of them.
    n_pad_groups, n_pad_joined : int
        Groups formed, and rows joined to groups, by ``pad=True``.
    guarantee : str
        What holds for the release.
    max_posterior : float or None
        Largest exact binary posterior (``verify=True``), else None.
    robust : bool or None
        Whether the exact audit found the release r-robust (``verify=True``).
    n_problematic_rows : int or None
        Rows the exact audit found above 1/r.
    audit : dict or None
        The exact audit's facts (threshold, completeness, how each row was certified).

    """

    r: float = 0.0
    condition: str = "delta"
    pad: bool = False
    n_merges: int = 0
    n_passes: int = 0
    n_profiles: int = 0
    n_attribute_sets: int = 0
    n_sensitive_rows: int = 0
    n_sensitive_groups: int = 0
    min_sensitive_group_size: int | None = None
    n_unsatisfied: int = 0
    on_unsatisfied: str = "merge"
    n_stranded_groups: int = 0
    n_stranded_rows: int = 0
    n_delta_only_rows: int = 0
    n_rescued_groups: int = 0
    n_merged_unsatisfied_groups: int = 0
    n_suppressed_groups: int = 0
    n_suppressed_rows: int = 0
    n_pad_groups: int = 0
    n_pad_joined: int = 0
    guarantee: str = ""
    max_posterior: float | None = None
    robust: bool | None = None
    n_problematic_rows: int | None = None
    audit: dict | None = None

    @property
    def value(self) -> float | None:
        """The largest exact posterior (``verify=True``), else None."""
        return self.max_posterior

    @property
    def failure(self) -> str | None:
        """Why the release is not r-robust, in words; ``None`` when it is.

        From the exact audit when it ran (``verify=True``), else from the rows the merge
        left unsatisfied.
        """
        if self.robust is False:
            return (f"{self.n_problematic_rows} rows have a posterior above 1/r = "
                    f"{1 / self.r:.4g} (largest {self.max_posterior:.4g})")
        if self.robust is None and self.n_unsatisfied:
            return (f"{self.n_unsatisfied} sensitive rows fail the {self.condition} condition "
                    "and the release was not audited (verify=False)")
        return None


@dataclass(frozen=True, eq=False)
class LatticeAnonymized(Anonymized):
    """A full-domain generalization (:func:`~fastpriv.anonymize.lattice_search`).

    Attributes
    ----------
    node : tuple of int
        The lattice node: generalization level of each QI attribute, in ``qi`` order.
    levels : dict
        ``{attribute: level}``.
    n_nodes, n_checked : int or None
        Lattice size and nodes checked by the search that chose the node (None when
        the node was given).
    minimal_nodes : tuple or None
        The minimal satisfying nodes the search found.
    fully_suppressed : tuple of str
        QI attributes generalized to a level with a single value (every row ``*``): the
        release keeps nothing of them.
    suppressed : {"drop", "keep"}
        What the release does with the rows suppression removed: left out (group id −1),
        or kept as ARX keeps them, every QI ``*`` and the sensitive value kept, as one
        group of the release (``suppressed="keep"``).
    n_suppressed_rows : int
        Input rows whose class the criterion suppressed (dropped or kept as ``*``); rows
        dropped for nulls or a weight of 0 are not among them.
    suppressed_failure : str or None
        ``suppressed="keep"``: why the release with its ``*`` group fails the criterion
        (that group is audited like any other); ``None`` when it holds.

    """

    node: tuple = ()
    levels: dict = field(default_factory=dict)
    n_nodes: int | None = None
    n_checked: int | None = None
    minimal_nodes: tuple | None = None
    fully_suppressed: tuple = ()
    suppressed: str = "drop"
    n_suppressed_rows: int = 0
    suppressed_failure: str | None = None

    @property
    def failure(self) -> str | None:
        """Why the release fails its criterion: its ``*`` group (``suppressed="keep"``)."""
        return self.suppressed_failure


def _repeat_batches(content: pa.Table, order: np.ndarray, counts: np.ndarray,
                    groups: np.ndarray, schema: pa.Schema, batch_rows: int
                    ) -> Iterator[pa.RecordBatch]:
    """Yield rows ``order`` of ``content`` in record batches of at most ``batch_rows`` rows.

    Row i is repeated ``counts[i]`` times, with its group id ``groups[i]``.
    """
    if batch_rows < 1:
        raise InputError(f"batch_rows must be at least 1, got {batch_rows}")
    ends = np.cumsum(counts[order])                  # people up to and with each row
    total = int(ends[-1]) if ends.size else 0
    for start in range(0, total, batch_rows):
        stop = min(start + batch_rows, total)
        a = int(np.searchsorted(ends, start, side="right"))
        b = int(np.searchsorted(ends, stop - 1, side="right")) + 1
        rows = order[a:b]
        take = counts[rows].copy()                   # clip the first and last row's people
        take[0] = min(int(ends[a]), stop) - start
        if b - a > 1:
            take[-1] = stop - int(ends[b - 2])
        idx = np.repeat(rows, take)
        part = content.take(pa.array(idx))
        cols = [*part.columns, pa.array(np.repeat(groups[rows], take), pa.int64())]
        yield pa.RecordBatch.from_arrays([c.combine_chunks() if isinstance(c, pa.ChunkedArray)
                                          else c for c in cols], schema=schema)


def release_paths(path: str | os.PathLike, *, bucketization: bool) -> dict[str, str]:
    """Where :meth:`Anonymized.write` puts each table of a release written to ``path``.

    Examples
    --------
    >>> release_paths("out/anat.parquet", bucketization=True)
    {'qi': 'out/anat.qi.parquet', 'sensitive': 'out/anat.sensitive.parquet'}

    """
    p = os.fspath(path)
    if not bucketization:
        return {"release": p}
    head, name = os.path.split(p)
    stem, dot, suffix = name.partition(".")
    suffix = dot + suffix if dot else ".parquet"
    return {part: os.path.join(head, f"{stem}.{part}{suffix}") for part in ("qi", "sensitive")}
