"""Audits of inputs of any size: streamed counts, and clustered streaming checks.

Two ways to audit data that does not fit in memory, from the same building blocks.

**Counts first** (:func:`audit_stream`, any row order). Every batch is counted into a
:class:`~fastpriv.counts.CountAccumulator` (memory ∝ distinct (group, value) pairs), the
release is built once, and every model runs on it: the classical models, (c,k)-safety and
the privacy skyline. This is the general path and gives exactly the results of the
in-memory API (``Release.from_table`` + the model functions).

**Clustered streaming** (:func:`clustered_audit`, input sorted by group). Chen et al.
(VLDB 2007, Theorem 3) observe that SkylineCheck needs only the five minima SS1..SS5 per
(σ, point): a group can be evaluated, folded into the minima and forgotten as soon as its
last row has been read. The same holds for every classical model that is a min/max over
groups of a per-group statistic (k, α, distinct/entropy ℓ, recursive (c,ℓ)). So, when the
rows of each group are contiguous *and the groups arrive in key order*, memory is
O(points + one batch) — the number of groups does not matter, and an input of any size
streams through. The per-group state is :class:`GroupwiseState`, a mergeable partial audit
(min/max with tie-breaking by group key; :class:`~fastpriv.skyline.SkylineState` inside), also
used by :mod:`fastpriv.distributed` for group-partitioned clusters.

*Models that need the whole table.* t-closeness, β-likeness and δ-disclosure compare each
group with the distribution Q of the **whole** table, which a single pass only knows at the
end. :func:`clustered_audit` therefore either

* takes Q from the caller (``q={label: probability}``): the models are evaluated against that
  Q (a reference distribution, e.g. from a census); or
* makes a **first pass** over the sensitive column alone (column projection: much cheaper
  than the full pass) when the input can be read twice (a path, a dataset, a table) — the
  result is then identical to the in-memory audit; or
* leaves them out (a one-shot iterator without ``q``), saying so in the result.

(c,k)-safety is not a per-group min: its worst case combines up to k+1 buckets (a
knapsack over all groups). Only a bounded set of buckets can take part in it, though, so
it folds too (:class:`~fastpriv.folds.CkState`, ``k=``): the state keeps those groups.

Verification: ``clustered_audit`` checks that group keys strictly increase from one run of
rows to the next (O(1) memory); an unsorted input raises ``ValueError`` naming the row
(``check_sorted=False`` skips the check — a group that reappears is then audited as two
groups).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ._arrow import apply_null_policy, encode_column, iter_batches
from ._labels import LabelKey, label_less
from ._validation import check_int
from .counts import CountAccumulator
from .errors import InputError
from .folds import CLASSIC_ROWS, NEEDS_Q, GroupwiseState, StreamAudit, needs_q

__all__ = [
    "GroupwiseState",
    "StreamAudit",
    "clustered_audit",
    "fold_clustered",
    "complete_groups",
    "reiterable",
    "audit_stream",
    "value_distribution",
    "CLASSIC_ROWS",
]


# ============================================================================ results
# ============================================================================ helpers
def _keys_of(group: Any, qi: Any) -> list[str]:
    if (group is None) == (qi is None):
        raise InputError("give exactly one of group= (bucketized release) or qi= "
                         "(generalized QI columns)")
    keys = [group] if isinstance(group, str) else list(group if group is not None else qi)
    if not keys:
        raise InputError("group/qi: at least one column is required")
    return keys


def reiterable(data: Any) -> bool:
    """Whether ``data`` can be read twice (a path, a table, a dataset, a DataFrame)."""
    if isinstance(data, (str, os.PathLike, pa.Table, pa.RecordBatch)):
        return True
    mod = type(data).__module__
    return (mod.startswith("pyarrow") and hasattr(data, "scanner")) or \
        mod.startswith(("pandas", "polars")) or isinstance(data, dict)


def value_distribution(data: Any, sensitive: str, *, keys: Sequence[str] = (),
                       nulls: str = "error", batch_size: int = 1 << 20,
                       weight: str | None = None,
                       allow_empty: bool = False) -> tuple[list, np.ndarray, int]:
    """One pass over the sensitive column: ``(values, totals, n_rows)``.

    ``values`` are the sorted labels, ``totals`` their counts (int64). Q = totals / n_rows
    is exactly what :func:`fastpriv.classic.t_closeness` uses on the in-memory release.
    ``keys`` are read too only when ``nulls="drop"`` (a row dropped for a null key must
    not count). With ``weight`` (a multiplicity column, as in ``Release.from_table``) a
    row counts ``weight`` times, and ``n_rows`` is the sum of the weights. An input without
    a row (left) raises :class:`~fastpriv.InputError`, or gives ``([], [], 0)`` with
    ``allow_empty`` (one partition of many).
    """
    from ._arrow import apply_weights
    from ._ingest import LabelCodes

    cols = [sensitive] + (list(keys) if nulls == "drop" else [])
    read = cols + ([weight] if weight is not None else [])
    lab = LabelCodes(sensitive)
    totals = np.zeros(0, dtype=np.int64)
    n = 0
    for batch in iter_batches(data, read, batch_size=batch_size):
        t, w = pa.Table.from_batches([batch]), None
        if weight is not None:   # first, as Release.from_table: every row's weight checked
            t, _ = apply_weights(t, weight)
        t, _ = apply_null_policy(t, cols, nulls)
        if weight is not None:
            w = t.column(weight).to_numpy().astype(np.int64)
        if t.num_rows == 0:
            continue
        codes = lab.encode(t.column(sensitive))
        if w is None:
            c = np.bincount(codes, minlength=lab.n).astype(np.int64)
            n += t.num_rows
        else:           # exact int64 sums (bincount's float weights round past 2**53)
            c = np.zeros(lab.n, dtype=np.int64)
            np.add.at(c, codes, w)
            n += int(w.sum())
        if c.size > totals.size:
            totals = np.concatenate([totals, np.zeros(c.size - totals.size, dtype=np.int64)])
        totals[:c.size] += c
    if n == 0:
        if allow_empty:
            return [], np.zeros(0, dtype=np.int64), 0
        raise InputError("data is empty: a release needs at least one row")
    rank, labels = lab.sorted_ranks()
    full = np.zeros(rank.size, dtype=np.int64)
    full[:totals.size] = totals          # labels never counted (unused dictionary entries): 0
    by_label = full[np.argsort(rank)]
    present = by_label > 0
    values = [v for v, p in zip(labels.to_pylist(), present.tolist(), strict=False) if p]
    return values, by_label[present], n


# ============================================================================ clustered
def _runs(table: pa.Table, keys: list[str]) -> tuple[np.ndarray, int]:
    """Return the start row of every run of equal keys, and the first unsorted run.

    The second item is the first row (>0) where the runs are not in increasing key order,
    or -1 when sorted.
    """
    n = table.num_rows
    codes = [encode_column(_nan_as_null(table.column(k)), name=k).codes for k in keys]
    change = np.zeros(max(n - 1, 0), dtype=bool)
    for c in codes:
        change |= c[1:] != c[:-1]
    starts = np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)
    bad = -1
    if starts.size > 1:
        prev, nxt = starts[:-1], starts[1:]
        undecided = np.ones(nxt.size, dtype=bool)
        wrong = np.zeros(nxt.size, dtype=bool)
        for c in codes:
            a, b = c[prev], c[nxt]
            wrong |= undecided & (b < a)
            undecided &= a == b
        if wrong.any():
            bad = int(nxt[np.flatnonzero(wrong)[0]])
    return starts, bad


def _nan_as_null(col: Any) -> Any:
    """Return a float column with NaN as null (one key, as fastpriv compares keys)."""
    import pyarrow.compute as pc

    if not pa.types.is_floating(col.type):
        return col
    return pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)


def _key_at(table: pa.Table, keys: list[str], i: int) -> Any:
    """Return row ``i``'s key as Python values (NaN as None: a null, as in :func:`_runs`)."""
    vals = tuple(None if isinstance(v, float) and v != v else v
                 for v in (table.column(k)[i].as_py() for k in keys))
    return vals[0] if len(keys) == 1 else vals


def complete_groups(data: Iterable[pa.Table], *, keys: Sequence[str],
                    check_sorted: bool = True) -> Iterator[pa.Table]:
    """Cut the tables of ``data``, sorted by ``keys``, into runs of complete groups.

    Each yielded table ends where a group ends; the last group of a table waits for the
    next (it may go on there). Groups must come in increasing key order (nulls last):
    with ``check_sorted`` a group out of order raises :class:`InputError` naming it.
    """
    keys = list(keys)
    carry: pa.Table | None = None
    carry_key: Any = None
    seen = 0
    for table in data:
        seen += table.num_rows
        if table.num_rows == 0:
            continue
        starts, bad = _runs(table, keys)
        first_key = _key_at(table, keys, 0)
        if check_sorted and bad < 0 and carry is not None and first_key != carry_key \
                and not label_less(carry_key, first_key):
            bad = 0
        if check_sorted and bad >= 0:
            before = _key_at(table, keys, bad - 1) if bad else carry_key
            raise InputError(f"data is not sorted by {keys}: group "
                             f"{_key_at(table, keys, bad)!r} follows {before!r} (row "
                             f"{seen - table.num_rows + bad} of the input); sort it")
        last = int(starts[-1])
        if carry is not None and first_key == carry_key and starts.size == 1:
            carry = pa.concat_tables([carry, table])
            continue
        done = table.slice(0, last) if carry is None else pa.concat_tables(
            [carry, table.slice(0, last)])
        if done.num_rows:
            yield done
        carry, carry_key = table.slice(last), _key_at(table, keys, last)
    if carry is not None:
        yield carry


def clustered_audit(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                    qi: Sequence[str] | None = None, weight: str | None = None,
                    skylines: Any = None,
                    classic: bool = True, l: int = 2, q: Mapping[Any, float] | str | None = None,
                    order: Sequence[Any] | None = None, nulls: str = "error",
                    k: int | None = None, options: Mapping[str, Any] | None = None,
                    check_sorted: bool = True, batch_size: int = 1 << 20,
                    progress: Callable[[int, int], Any] | None = None) -> StreamAudit:
    """Audit an input **sorted by group** in one pass with O(points + batch) memory.

    Each group is evaluated when its last row has been read (Chen et al., Theorem 3) and
    folded into a :class:`GroupwiseState`; nothing per group is kept. Results equal the
    in-memory ``classic.audit`` / ``skyline.check`` on the same data (SVPI).

    Parameters
    ----------
    data : path, dataset, reader, table or iterable of record batches
        Rows of each group contiguous, groups in increasing key order (nulls last).
    sensitive, group, qi, nulls :
        As for :meth:`Release.from_table` (SVPI).
    weight : str, optional
        Multiplicity column, as in :meth:`Release.from_table` (rows of weight 0 are nobody:
        they are dropped before the sort order is checked).
    skylines : mapping or list, optional
        Skyline points to check (:func:`fastpriv.skyline.check`).
    classic : bool
        Evaluate the classical models.
    l : int
        ℓ of recursive (c,ℓ)-diversity.
    q : mapping, "pass" or None
        The distribution Q for t-closeness/β/δ: a ``{label: probability}`` mapping, or
        ``"pass"`` to compute it with a first pass over the sensitive column; None (default)
        does the first pass when the input can be read twice and skips those models
        otherwise.
    order : sequence, optional
        Attribute order for ordered t-closeness.
    k : int, optional
        (c,k)-safety at ``k`` (:func:`fastpriv.ck_safety.audit`), folded by
        :class:`~fastpriv.folds.CkState`: only the groups its answer can depend on are kept.
    options : mapping, optional
        Option values of the registry's models: every model declaring a per-group
        statistic whose options are given is folded too (``models`` of the result;
        :class:`~fastpriv.folds.GroupwiseState`).
    check_sorted : bool
        Verify that group keys increase (raises ``ValueError`` otherwise).
    batch_size : int
        Target size (rows) of the record batches read from ``data`` (bounds memory per
        batch; the result does not depend on it).
    progress : callable, optional
        Called as ``progress(rows, bytes)`` after every batch.

    Returns
    -------
    StreamAudit

    """
    keys = _keys_of(group, qi)
    if sensitive in keys:
        raise InputError(f"sensitive column {sensitive!r} is also a group column")
    cols = keys + [sensitive]
    if weight is not None and (not isinstance(weight, str) or weight in cols):
        raise InputError(f"weight must be a column name other than the key and sensitive "
                         f"columns; got {weight!r}")
    skipped: dict = {}
    passes = 1
    values = qv = None
    if needs_q(classic, options):
        if isinstance(q, Mapping):
            values = sorted(q, key=LabelKey)
            qv = [float(q[v]) for v in values]
        elif q == "pass" or (q is None and reiterable(data)):
            values, totals, n_all = value_distribution(data, sensitive, keys=keys, nulls=nulls,
                                                       batch_size=batch_size, weight=weight)
            qv = (totals / n_all).tolist()
            passes = 2
        elif q is None and classic:
            for key in sorted(NEEDS_Q):
                skipped[key] = ("needs the distribution of the whole table: pass q= or an "
                                "input that can be read twice")
        else:
            raise InputError(f"q must be a mapping label -> probability, 'pass' or None; "
                             f"got {q!r}")
    state = GroupwiseState(l=l, values=values, q=qv, order=order, skylines=skylines,
                           classic=classic, k=k, options=options)
    if not fold_clustered(data, state=state, keys=keys, sensitive=sensitive, weight=weight,
                          nulls=nulls, check_sorted=check_sorted, batch_size=batch_size,
                          progress=progress):
        raise InputError("data is empty: a release needs at least one row")
    return state.finish(passes=passes, skipped=skipped)


def fold_clustered(data: Any, *, state: GroupwiseState, keys: Sequence[str], sensitive: str,
                   weight: str | None = None, nulls: str = "error", check_sorted: bool = True,
                   batch_size: int = 1 << 20, progress: Callable[[int, int], Any] | None = None,
                   indexed: bool = True) -> bool:
    """Fold an input **sorted by group** into ``state``, each group as its last row is read.

    The loop of :func:`clustered_audit` (parameters as there): the rows of one group are
    counted until the key changes, then every completed group is folded
    (:meth:`GroupwiseState.update`). With ``indexed`` the groups are numbered from
    ``state.n_groups`` on (``worst_group`` a global index: the input is the whole release);
    without, they are not (the input is one of several disjoint sets of groups, whose
    states are merged). Returns whether any row was left after weights and the null policy.
    """
    from ._arrow import apply_weights

    keys = list(keys)
    cols = keys + [sensitive]
    read = cols + ([weight] if weight is not None else [])
    carry: CountAccumulator | None = None
    carry_key: Any = None
    rows = nbytes = 0

    def fresh() -> CountAccumulator:
        return CountAccumulator(keys, sensitive, nulls="value", n_jobs=1, weight=weight)

    def flush(acc: CountAccumulator) -> None:
        state.update(acc.to_release(), offset=state.n_groups if indexed else None)

    for batch in iter_batches(data, read, batch_size=batch_size):
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        rows += table.num_rows
        nbytes += table.nbytes
        if weight is not None:   # first, as Release.from_table: every row's weight checked
            table, _ = apply_weights(table, weight)
        table, _ = apply_null_policy(table, cols, nulls)
        if table.num_rows == 0:
            continue
        starts, bad = _runs(table, keys)
        if bad >= 0 and check_sorted:
            row = rows - table.num_rows + bad
            raise InputError(f"data is not sorted by {keys}: group {_key_at(table, keys, bad)!r} "
                             f"follows {_key_at(table, keys, bad - 1)!r} (row {row} of the "
                             "input); sort it, or use audit_stream for any order")
        first_key = _key_at(table, keys, 0)
        done = fresh()
        begin = 0
        if carry is not None:
            if first_key == carry_key:
                end = int(starts[1]) if starts.size > 1 else table.num_rows
                carry.add(table.slice(0, end))
                if starts.size == 1:
                    _progress(progress, rows, nbytes)
                    continue
                begin = end
                starts = starts[1:]
            elif check_sorted and not label_less(carry_key, first_key):
                raise InputError(f"data is not sorted by {keys}: group {first_key!r} follows "
                                 f"{carry_key!r} (row {rows - table.num_rows} of the input); "
                                 "sort it, or use audit_stream for any order")
            done.merge(carry)
        last = int(starts[-1])
        if last > begin:
            done.add(table.slice(begin, last - begin))
        if done.n_groups:
            flush(done)
        carry = fresh()
        carry.add(table.slice(last))
        carry_key = _key_at(table, keys, last)
        _progress(progress, rows, nbytes)
    if carry is None:
        return False
    flush(carry)
    return True


def _progress(progress: Callable | None, rows: int, nbytes: int) -> None:
    if progress is not None:
        progress(rows, nbytes)


# ============================================================================ any order
def audit_stream(data: Any, *, sensitive: str, group: str | Sequence[str] | None = None,
                 qi: Sequence[str] | None = None, weight: str | None = None,
                 classic: bool = True, l: int = 2,
                 k: int | None = None, skylines: Any = None, nulls: str = "error",
                 batch_size: int = 1 << 20, n_jobs: int | None = None,
                 progress: Callable[[int, int], Any] | None = None,
                 options: Mapping[str, Any] | None = None) -> StreamAudit:
    """Audit an input of any row order: stream the counts, build the release, run models.

    Memory is bounded by the number of (group, value) pairs. Equivalent to
    ``Release.from_table`` followed by ``classic.audit(rel, l=l)``,
    ``ck_safety.audit(rel, k=k)`` (when ``k`` is given) and ``skyline.check(rel, skylines)``
    (when ``skylines`` is given), with identical results.

    Parameters
    ----------
    data : path, dataset, reader, table or iterable of record batches
        The rows, in any order.
    sensitive, group, qi, nulls :
        As for :meth:`Release.from_table` (SVPI).
    weight : str, optional
        Multiplicity column, as in :meth:`Release.from_table`: each row stands for
        ``weight`` identical rows (non-negative integers, no nulls; weight 0 rows are
        nobody).
    classic : bool
        Evaluate the classical models (``classic.audit``).
    l : int
        ℓ of recursive (c,ℓ)-diversity.
    k : int, optional
        (c,k)-safety: max disclosure against k implications and k negated atoms.
    skylines : mapping or list, optional
        Skyline points (:func:`fastpriv.skyline.check`).
    batch_size : int
        Target size (rows) of the record batches read from ``data`` (bounds memory per
        batch; the result does not depend on it).
    n_jobs : int, optional
        Threads for counting and the parallel model kernels (:mod:`fastpriv._threads`).
    progress : callable, optional
        Called as ``progress(rows, bytes)`` after every batch.
    options : mapping, optional
        Option values of the registry's models, as for :func:`clustered_audit`.

    """
    from ._threads import n_jobs as _n_jobs

    keys = _keys_of(group, qi)
    if k is not None:
        k = check_int(k, "k", minimum=0)
    acc = CountAccumulator(keys, sensitive, nulls=nulls, n_jobs=n_jobs, weight=weight)
    acc.consume(data, batch_size=batch_size, progress=progress)
    rel = acc.to_release()
    res_classic = res_sky = res_ck = None
    with _n_jobs(n_jobs):
        if classic:
            from . import classic as C

            res_classic = C.audit(rel, l=l)
        if k is not None:
            from . import ck_safety

            res_ck = ck_safety.audit(rel, k=k)
        if skylines is not None:
            from . import skyline

            res_sky = skyline.check(rel, skylines=skylines)
    declared = GroupwiseState(classic=False, values=rel.values, options=options,
                              q=(rel.value_totals / rel.n_rows).tolist()).update(rel, offset=0)
    return StreamAudit(classic=res_classic, skyline=res_sky, ck_safety=res_ck,
                       n_groups=rel.n_groups, n_rows=rel.n_rows, passes=1, release=rel,
                       models=declared.declared_results(), skipped=declared.skipped)
