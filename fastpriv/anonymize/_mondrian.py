"""Mondrian: strict multidimensional partitioning (LeFevre, DeWitt, Ramakrishnan, ICDE 2006).

Recursively split the table on the QI attribute with the widest normalized range, at the
(weighted lower) median, while both halves satisfy a pluggable monotone criterion; each
final partition is one group, published with the range of its values (ordered attributes:
``"[17, 25]"``) or the set of its values (categorical: ``"{Female, Male}"``). The exact
split rule is in :mod:`fastpriv._kernels.mondrian`; the output is

* **safe**: every group satisfies the criterion (the whole table must, too);
* **minimal under the split rule**: no group has an allowed median split — on any
  attribute — whose two halves both satisfy it.

Speed: rows are compressed once to distinct (QI codes, sensitive value) cells. For the
built-in group-local criteria (k-anonymity, ℓ-diversity variants, t-closeness, (α,k),
(c,k)-safety against negated atoms, and conjunctions) the whole recursion runs in one
compiled kernel. Any other criterion — (c,k)-safety against implications, an SVPI skyline
point, a user predicate — runs the same rule from Python: a split is accepted when the
release made of every current partition, with the candidate split applied, satisfies the
criterion (for a criterion declaring ``local = True``, the release of the two halves alone
is checked — such a criterion must not depend on the rest of the table, as t-closeness's
reference distribution does; the built-in t-closeness takes the compiled path with the
table's distribution).
Monotonicity makes that order-independent enough for both guarantees above.

Ordered vs categorical: numeric and temporal columns are ordered (split by value), others
categorical (split in sorted-label order, published as value sets); ``categorical=`` names
columns to treat as categorical anyway.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .._arrow import encode_column
from .._cells import compress
from .._labels import label_text
from .._validation import check_choice, check_columns, exact_bincount, kernel_array
from ..errors import InputError
from ..predicates import Criterion, LocalCriterion, criteria_from, kernel_spec
from ..release import SVPI, Release
from ._input import (
    check_qi_sensitive,
    expand_arrow,
    expand_rows,
    prepare_weighted_input,
    require_sensitive,
    sensitive_column,
)
from ._result import GeneralizedAttribute, MondrianResult

__all__ = ["mondrian", "MondrianTree"]


def _is_ordered(typ: pa.DataType) -> bool:
    return (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
            or pa.types.is_temporal(typ))


def _positions(labels: pa.Array) -> np.ndarray:
    """Float positions of sorted ordered labels, for the widest-range rule only.

    They rank attributes by normalized range (:func:`~fastpriv._kernels.mondrian.
    attribute_order`) and nothing else: splits, groups and published ranges come from the
    exact codes and labels. Integers and temporal values are positions relative to the
    smallest label, the difference taken in exact integer arithmetic (int64 extremes,
    uint64 above 2**63) and only then rounded to float.
    """
    typ = labels.type
    if pa.types.is_temporal(typ):       # dates/times: their integer storage is ordered
        storage = pa.int32() if typ.bit_width == 32 else pa.int64()
        labels = labels.view(storage)
        typ = storage
    if pa.types.is_integer(typ):
        x = labels.to_numpy(zero_copy_only=False)
        if x.size == 0:
            return np.zeros(0, dtype=np.float64)
        # sorted, so x - x[0] lies in [0, 2**64): exact in uint64 arithmetic (wraps back)
        return (x.astype(np.uint64) - np.uint64(x[0].astype(np.uint64))).astype(np.float64)
    return np.asarray(labels.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False),
                      np.float64)


class MondrianTree:
    """Encoded input of Mondrian (cells, attribute kinds); :meth:`run` partitions it."""

    def __init__(self, table: Any, qi: Sequence[str], sensitive: str | None = None, *,
                 categorical: Sequence[str] | None = None, nulls: str = "error",
                 weight: str | None = None) -> None:
        qi = check_qi_sensitive(qi, sensitive)
        check_choice(nulls, "nulls", ("error", "drop"))
        cat = set(categorical or ())
        check_columns(sorted(cat), qi, "categorical")
        prep, ws = prepare_weighted_input(table, qi, sensitive, nulls, weight, checked=True)
        t, qi, self.n_input_rows, self.kept_rows = prep
        self.qi = tuple(qi)
        self.sensitive = sensitive
        self.weight = weight
        #: multiplicity of every input row (``weight=``), else None
        self.input_weights = None if ws is None else ws.input
        row_w = None if ws is None else ws.kept
        self.n_rows = t.num_rows if row_w is None else int(row_w.sum())   # people
        encs = [encode_column(t.column(a), name=a) for a in qi]
        self.domains = [e.labels for e in encs]
        self.ordered = np.array([_is_ordered(t.schema.field(a).type) and a not in cat
                                 for a in qi], dtype=np.uint8)
        scol = sensitive_column(sensitive)
        sens = encode_column(t.column(scol), name=scol)
        self.values = sens.labels
        self._sens_rows = sens.codes
        pos, offs, gspan = [], [], []
        o = 0
        for e, ordd in zip(encs, self.ordered, strict=True):
            D = len(e.labels)
            p = _positions(e.labels) if ordd else np.arange(D, dtype=np.float64)
            pos.append(p)
            offs.append(o)
            o += D
            gspan.append(float(p[-1] - p[0]) if ordd else float(D - 1))
        self._pos = kernel_array(np.concatenate(pos), np.float64)
        self._pos_off = kernel_array(offs, np.int64)
        self._gspan = kernel_array(gspan, np.float64)
        self._ord = kernel_array(self.ordered, np.uint8)
        cards = [len(e.labels) for e in encs] + [len(sens.labels)]
        cell, first, weights = compress([e.codes for e in encs] + [sens.codes], cards)
        if row_w is not None:   # a cell holds Σ weight people, not its rows
            weights = exact_bincount(np.asarray(cell, dtype=np.int64), row_w, first.shape[0])
        self._row_cell = cell
        self._rows_q = [e.codes for e in encs]
        self._q = kernel_array(np.stack([e.codes[first] for e in encs]), np.int32)
        self._s = kernel_array(sens.codes[first], np.int32)
        self._w = kernel_array(weights, np.int64)
        self.n_cells = int(first.shape[0])
        self.qdist = np.bincount(self._s, weights=self._w,
                                 minlength=len(sens.labels)) / self.n_rows

    # ------------------------------------------------------------------ partitioning
    def run(self, crit: Criterion, *, progress: Callable[[int, int], None] | None = None
            ) -> tuple[np.ndarray, int, int, str]:
        """Partition the cells; returns ``(group of each cell, n_groups, n_splits, path)``."""
        whole = self._release_of([self._profile_all()])
        if not self._ok(crit, whole):
            raise InputError(f"the whole table does not satisfy {crit.name}; no release can "
                             "(Mondrian only refines the single-group release)")
        if _kernel_evaluable(crit):
            from .._kernels.mondrian import mondrian_local

            spec = kernel_spec(crit, self.values.to_pylist(), self.qdist)  # type: ignore[arg-type]
            g, n, splits = mondrian_local(self._q, self._s, self._w, self._pos, self._pos_off,
                                          self._ord, self._gspan, len(self.values), spec.kinds,
                                          spec.iparams, spec.fparams, spec.q, spec.qrank,
                                          spec.inv_q)
            if progress is not None:
                progress(int(n), int(n))
            return g, int(n), int(splits), "compiled"
        return self._run_python(crit, progress)

    def _ok(self, crit: Criterion, rel: Release) -> bool:
        if _kernel_evaluable(crit):
            return bool(crit.group_ok(rel, self.qdist).all())  # type: ignore[attr-defined]
        return bool(crit(rel))

    def _profile_all(self) -> tuple[np.ndarray, np.ndarray, int]:
        hist = np.bincount(self._s, weights=self._w, minlength=len(self.values)).astype(np.int64)
        codes = np.flatnonzero(hist).astype(np.int32)
        order = np.lexsort((codes, -hist[codes]))
        return codes[order], hist[codes][order], int(self._w.sum())

    def _release_of(self, profiles: list[tuple[np.ndarray, np.ndarray, int]]) -> Release:
        lens = np.fromiter((len(p[0]) for p in profiles), dtype=np.int64, count=len(profiles))
        indptr = np.zeros(len(profiles) + 1, dtype=np.int64)
        np.cumsum(lens, out=indptr[1:])
        codes = np.concatenate([p[0] for p in profiles]).astype(np.int32)
        counts = np.concatenate([p[1] for p in profiles]).astype(np.int64)
        sizes = np.fromiter((p[2] for p in profiles), dtype=np.int64, count=len(profiles))
        keys = pa.table({"group": pa.array(np.arange(len(profiles), dtype=np.int64))})
        return Release(indptr=indptr, codes=codes, counts=counts, sizes=sizes,
                       values=self.values, groups=keys, case=SVPI,
                       sensitive_name=self.sensitive)

    def _run_python(self, crit: Criterion, progress: Callable[[int, int], None] | None
                    ) -> tuple[np.ndarray, int, int, str]:
        from .._kernels.mondrian import attribute_order, half_profiles, median_cut, split_segment

        local = bool(getattr(crit, "local", False))
        perm = np.arange(self.n_cells, dtype=np.int64)
        store = _LeafStore(*self._profile_all())
        bounds_of: dict[int, tuple[int, int]] = {0: (0, self.n_cells)}
        stack = [0]
        final: list[int] = []
        splits = 0
        V = len(self.values)
        while stack:
            pid = stack.pop()
            a, b = bounds_of[pid]
            ro = perm  # writable on purpose: one helper specialization (see the kernel module)
            order = attribute_order(self._q, self._w, ro, a, b, self._pos, self._pos_off, self._ord,
                                    self._gspan)
            accepted = False
            others = None if local else store.without(pid)
            for j in order.tolist():
                cut, _wl = median_cut(self._q, self._w, ro, a, b, j)
                if cut < 0:
                    continue
                codes, counts, bounds, weights = half_profiles(self._q, self._s, self._w, ro, a,
                                                               b, j, cut, V)
                left = (codes[bounds[0]:bounds[1]], counts[bounds[0]:bounds[1]],
                        int(weights[0]))
                right = (codes[bounds[1]:bounds[2]], counts[bounds[1]:bounds[2]],
                         int(weights[1]))
                rel = self._release_of([left, right]) if local else \
                    self._release_from(others, [left, right])
                if not bool(crit(rel)):
                    continue
                seg, mid = split_segment(self._q, ro, a, b, j, cut)
                perm[a:b] = seg
                lid = store.add(*left)
                rid = store.add(*right)
                store.remove(pid)
                bounds_of[lid] = (a, int(mid))
                bounds_of[rid] = (int(mid), b)
                stack.extend([rid, lid])
                splits += 1
                accepted = True
                break
            if not accepted:
                final.append(pid)
                if progress is not None:
                    progress(len(final), len(final) + len(stack))
        group = np.empty(self.n_cells, dtype=np.int32)
        for gid, pid in enumerate(final):
            a, b = bounds_of[pid]
            group[perm[a:b]] = gid
        return group, len(final), splits, "python"

    def _release_from(self, others: tuple[np.ndarray, np.ndarray, np.ndarray],
                      extra: list[tuple[np.ndarray, np.ndarray, int]]) -> Release:
        lens, codes, counts, sizes = others
        lens = np.concatenate([lens, [len(p[0]) for p in extra]]).astype(np.int64)
        indptr = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=indptr[1:])
        keys = pa.table({"group": pa.array(np.arange(len(lens), dtype=np.int64))})
        return Release(indptr=indptr,
                       codes=np.concatenate([codes] + [p[0] for p in extra]).astype(np.int32),
                       counts=np.concatenate([counts] + [p[1] for p in extra]).astype(np.int64),
                       sizes=np.concatenate([sizes, [p[2] for p in extra]]).astype(np.int64),
                       values=self.values, groups=keys, case=SVPI,
                       sensitive_name=self.sensitive)

    # ------------------------------------------------------------------ output
    def anonymized(self, cell_group: np.ndarray, n_groups: int, *, crit: Criterion,
                   cls: type[MondrianResult] = MondrianResult, **facts: Any
                   ) -> MondrianResult:
        """Build the result (``cls``, with the algorithm's ``facts``) of a cell partition."""
        from .._kernels.counting import DENSE_CELLS, count_pairs
        from .._kernels.mondrian import group_ranges

        cg = kernel_array(cell_group, np.int32)
        row_group = np.asarray(cell_group, dtype=np.int64)[self._row_cell]
        lo, hi = group_ranges(self._q, cg, n_groups)
        attrs, gen_cols = [], {}
        for j, a in enumerate(self.qi):
            dom = self.domains[j]
            if self.ordered[j]:
                labels, indptr, members, per_group = _range_sets(lo[:, j], hi[:, j], dom)
            else:
                ip, cs, _ = count_pairs(cg, kernel_array(self._q[j], np.int32), self._w,
                                        n_groups, len(dom), DENSE_CELLS)
                labels, indptr, members, per_group = _value_sets(ip, cs, dom)
            row_codes = per_group[row_group].astype(np.int32)
            gen_cols[a] = self._expand_arrow(pa.DictionaryArray.from_arrays(
                pa.array(row_codes), pa.array(labels, pa.string())))
            attrs.append(GeneralizedAttribute(name=a, domain=dom, labels=labels,
                                              member_indptr=indptr, members=members,
                                              codes=self._expand(row_codes).astype(np.int32)))
        indptr, codes, counts = count_pairs(cg, self._s, self._w, n_groups, len(self.values),
                                            DENSE_CELLS)
        sizes = np.bincount(cg, weights=self._w, minlength=n_groups).astype(np.int64)
        keys = pa.table({"group": pa.array(np.arange(n_groups, dtype=np.int64))})
        one_each = self.kept_rows is None and self.input_weights is None
        rel = Release(indptr=indptr, codes=codes, counts=counts, sizes=sizes,
                      values=self.values, groups=keys, case=SVPI,
                      row_group=row_group.astype(np.int32) if one_each else None,
                      sensitive_name=self.sensitive)
        params = {"qi": list(self.qi), "sensitive": self.sensitive, "criterion": crit.name,
                  "categorical": [a for a, o in zip(self.qi, self.ordered, strict=True) if not o]}
        if self.weight is not None:
            params["weight"] = self.weight
        return cls(release=rel, group_ids=self._expand(row_group), method="mondrian",
                   params=params, generalized=pa.table(gen_cols), attributes=tuple(attrs),
                   row_weights=self.input_weights, n_cells=self.n_cells, **facts)

    def _expand(self, x: np.ndarray) -> np.ndarray:
        return expand_rows(x, self.kept_rows, self.n_input_rows)

    def _expand_arrow(self, arr: pa.Array) -> pa.Array:
        return expand_arrow(arr, self.kept_rows, self.n_input_rows)


class _LeafStore:
    """Profiles of the current partitions in flat, growing arrays (vectorized removal)."""

    def __init__(self, codes: np.ndarray, counts: np.ndarray, size: int) -> None:
        cap_e, cap_l = max(1024, 4 * len(codes)), 1024
        self.codes = np.empty(cap_e, dtype=np.int32)
        self.counts = np.empty(cap_e, dtype=np.int64)
        self.entry_leaf = np.empty(cap_e, dtype=np.int64)
        self.sizes = np.empty(cap_l, dtype=np.int64)
        self.lens = np.empty(cap_l, dtype=np.int64)
        self.active = np.zeros(cap_l, dtype=bool)
        self.n_entries = 0
        self.n_leaves = 0
        self.add(codes, counts, size)

    def add(self, codes: np.ndarray, counts: np.ndarray, size: int) -> int:
        e, n = self.n_entries, len(codes)
        if e + n > len(self.codes):
            cap = 2 * (e + n)
            self.codes = np.resize(self.codes, cap)
            self.counts = np.resize(self.counts, cap)
            self.entry_leaf = np.resize(self.entry_leaf, cap)
        lid = self.n_leaves
        if lid >= len(self.sizes):
            cap = 2 * len(self.sizes)
            self.sizes = np.resize(self.sizes, cap)
            self.lens = np.resize(self.lens, cap)
            self.active = np.concatenate([self.active, np.zeros(cap - len(self.active), bool)])
        self.codes[e:e + n] = codes
        self.counts[e:e + n] = counts
        self.entry_leaf[e:e + n] = lid
        self.sizes[lid] = size
        self.lens[lid] = n
        self.active[lid] = True
        self.n_entries += n
        self.n_leaves += 1
        return lid

    def remove(self, lid: int) -> None:
        self.active[lid] = False

    def without(self, lid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(lengths, codes, counts, sizes) of every active leaf except ``lid``."""
        act = self.active[:self.n_leaves].copy()
        act[lid] = False
        e = self.n_entries
        mask = act[self.entry_leaf[:e]]
        return (self.lens[:self.n_leaves][act], self.codes[:e][mask], self.counts[:e][mask],
                self.sizes[:self.n_leaves][act])


def _kernel_evaluable(crit: Criterion) -> bool:
    return isinstance(crit, LocalCriterion) or (getattr(crit, "local", False)
                                                and hasattr(crit, "rows")
                                                and hasattr(crit, "group_ok"))


def _range_sets(lo: np.ndarray, hi: np.ndarray, dom: pa.Array
                ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Labels ``[lo, hi]`` (or the value) and member ranges of each distinct (lo, hi)."""
    D = len(dom)
    key = lo.astype(np.int64) * D + hi.astype(np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    ulo, uhi = uniq // D, uniq % D
    vals = dom.to_pylist()
    labels = [label_text(vals[x]) if x == y else f"[{label_text(vals[x])}, {label_text(vals[y])}]"
              for x, y in zip(ulo.tolist(), uhi.tolist(), strict=True)]
    lens = uhi - ulo + 1
    indptr = np.zeros(len(uniq) + 1, dtype=np.int64)
    np.cumsum(lens, out=indptr[1:])
    members = (np.repeat(ulo - indptr[:-1], lens) + np.arange(indptr[-1])).astype(np.int32)
    return labels, indptr, members, inv.astype(np.int64)


def _value_sets(ip: np.ndarray, cs: np.ndarray, dom: pa.Array
                ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Labels ``{a, b}`` (or the value) and members of each distinct value set."""
    vals = dom.to_pylist()
    index: dict[tuple[int, ...], int] = {}
    per_group = np.empty(len(ip) - 1, dtype=np.int64)
    for g in range(len(ip) - 1):
        s = tuple(sorted(cs[ip[g]:ip[g + 1]].tolist()))
        per_group[g] = index.setdefault(s, len(index))
    sets = list(index)
    labels = [label_text(vals[s[0]]) if len(s) == 1
              else "{" + ", ".join(label_text(vals[x]) for x in s) + "}" for s in sets]
    indptr = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=indptr[1:])
    members = np.fromiter((x for s in sets for x in s), dtype=np.int32, count=int(indptr[-1]))
    return labels, indptr, members, per_group


def mondrian(data: Any, *, qi: Sequence[str], sensitive: str | None = None,
             min_size: int | None = None,
             l: float | None = None, l_kind: str = "distinct", c_l: float | None = None,
             t: float | None = None, t_ordered: bool = False, alpha: float | None = None,
             c: Any = None, k: int | None = None, knowledge_kind: str = "implications",
             max_risk: float | None = None, max_avg_risk: float | None = None,
             max_records_at_risk: float | None = None, risk_threshold: float | None = None,
             max_uniqueness: float | None = None, population: float | None = None,
             uniqueness_model: str | None = None,
             predicate: Any = None, categorical: Sequence[str] | None = None,
             nulls: str = "error", weight: str | None = None,
             progress: Callable[[int, int], None] | None = None) -> MondrianResult:
    """Strict multidimensional Mondrian partitioning with any monotone criterion.

    Parameters
    ----------
    data : table-like
        One row per individual (SVPI).
    qi : list of str
        Quasi-identifier columns to partition on.
    sensitive : str or None
        Sensitive column; ``None`` for k-anonymity over the QIs alone (the release then
        has no sensitive column).
    min_size, l, l_kind, c_l, t, t_ordered, alpha, c, k, knowledge_kind, predicate
        The criterion: the conjunction of every one given (see
        :func:`fastpriv.predicates.criteria_from`), e.g. ``min_size=10`` (k-anonymity),
        ``min_size=5, l=3``, ``c=0.8, k=3`` ((c,k)-safety against ``knowledge_kind``
        knowledge), or ``predicate=MyCriterion()``.
    max_risk, max_avg_risk, max_records_at_risk, risk_threshold
        ARX's re-identification risk criteria, as ``fastpriv anonymize``'s flags of the
        same names (``--max-avg-risk`` is ``max_avg_risk=``; see
        :func:`fastpriv.predicates.criteria_from`).
    max_uniqueness, population, uniqueness_model
        Estimated population uniqueness (needs ``population``). Not monotone: a split is
        kept when the release after it meets it.
    categorical : list of str, optional
        QI columns to treat as categorical even if numeric.
    nulls : {"error", "drop"}
        Dropped rows get group id −1.
    weight : str, optional
        Multiplicity column (as in :meth:`fastpriv.Release.from_table`): each row stands
        for ``weight`` identical people, e.g. a ``GROUP BY qi, sensitive`` count. Every
        criterion counts people (k-anonymity: Σ weight per group ≥ ``min_size``), the
        medians are weighted, and the result is the expanded table's partition: the same
        groups, generalized values and group sizes. Integers ≥ 0; rows of weight 0 stand
        for nobody (group id −1). The written release (:meth:`~Anonymized.table`) keeps a
        count column so that it stands for the same people.
    progress : callable, optional
        ``progress(done, total)`` (Python path: per final group; compiled path: at the end).

    Returns
    -------
    MondrianResult
        ``.release`` (groups in depth-first order), ``.group_ids`` per input row,
        ``.generalized`` (ranges / value sets per row), ``.attributes`` (for utility
        metrics), ``.n_splits``, ``.path``, ``.n_cells`` and ``.seconds``.

    Examples
    --------
    >>> import fastpriv as fp
    >>> res = fp.anonymize.mondrian(fp.datasets.load_adult(), qi=["age", "sex", "race"],
    ...                             sensitive="occupation", min_size=10)
    >>> int(res.release.sizes.min()) >= 10
    True

    """
    t0 = time.perf_counter()
    crit = criteria_from(predicate=predicate, min_size=min_size, l=l, l_kind=l_kind, c_l=c_l,
                         t=t, t_ordered=t_ordered, alpha=alpha, c=c, k=k,
                         knowledge_kind=knowledge_kind, max_risk=max_risk,
                         max_avg_risk=max_avg_risk, max_records_at_risk=max_records_at_risk,
                         risk_threshold=risk_threshold, max_uniqueness=max_uniqueness,
                         population=population, uniqueness_model=uniqueness_model)
    require_sensitive(crit, sensitive)
    tree = MondrianTree(data, qi, sensitive, categorical=categorical, nulls=nulls,
                        weight=weight)
    t1 = time.perf_counter()
    g, n, splits, path = tree.run(crit, progress=progress)
    t2 = time.perf_counter()
    seconds = {"encode": t1 - t0, "partition": t2 - t1}
    out = tree.anonymized(g, n, crit=crit, n_splits=splits, path=path, seconds=seconds)
    seconds["output"] = time.perf_counter() - t2
    return out
