"""SkylineAnonymize: a minimal release safe for a privacy skyline (Chen et al., §5.2).

Chen, LeFevre, Ramakrishnan, *Privacy Skyline*, VLDB 2007, Section 5.2 and Figure 6
(spec ``skyline.md`` §SkylineAnonymize). Top-down greedy partitioning: start from the whole
table as one group and split groups while the release stays **safe for every skyline
point** (BP_σ(ℓ,k,m) < c for each (σ, point)). Thanks to the congregation property
(Theorem 2) safety needs only the five sufficient statistics SS1..SS5 per (σ, point),
kept globally: a candidate split of g into g1, g2 is accepted iff the breach probability
computed from (global statistics ∧ the children's per-group terms) stays below c for every
point — Figure 6 with its typo fixed (``SS5 = min{SS5, V(g_i,m,k)}``, the paper writes
SS4). Checking a split never looks at other groups.

Split ordering (pluggable): the default is Mondrian's — the attribute with the widest
normalized range first, cut at the weighted lower median (weights: individuals) — reusing
the compiled split machinery of :mod:`fastpriv.anonymize._mondrian`; ``order="qi"`` tries
the attributes in the given QI order; a callable ``order(part)`` proposes any candidate
(attribute, cut) list (see :class:`SplitContext`). Groups are processed first-in
first-out (the paper's queue).

Guarantees
----------
* **SVPI: safe and minimal** (Theorems 4 and 5): every group of the output is a final
  group because each of its candidate splits breaches some point, and by monotonicity
  (Theorem 4) no later split can make it safe — so no group of the output can be split
  safely at any of its candidate cuts.
* **MVPI (Set and Multiset): safe only.** Theorem 4 fails for MVPI (splitting can *lower*
  BP; counterexamples in the spec's vectors), so a group rejected as unsafe might have a
  safe split further down; the statistics over every group seen so far are a conservative
  bound, so the output is safe. The result's ``guarantee`` says which applies.

Decisions are made in float like :func:`fastpriv.skyline.check` (``exact=False``): the
float minNR is compared with the exact threshold (1 − c)/c, so a tie is decided as the
float check decides it; and the output is always re-checked with
:func:`fastpriv.skyline.check` (the result's ``check``).

Scalability: rows are compressed once to *cells* — distinct (QI codes, sensitive value)
combinations with counts, the (QI value, sensitive value, count) triples of the paper's
Rothko-tree remark — and every candidate split is evaluated from the cells of its group;
``count=`` accepts such triples directly (e.g. a SQL ``GROUP BY`` or a Dask aggregation of
data too large for memory).
"""

from __future__ import annotations

import math
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from .._validation import check_choice, check_columns, kernel_array
from ..errors import InputError, InputTypeError
from ..release import MVPI_MULTISET, MVPI_SET, SVPI, Release
from ._result import SkylineAnonymized

__all__ = ["skyline_anonymize", "SplitContext", "CLI_METHOD", "parse_skyline_spec"]

_CASE_ID = {SVPI: 0, MVPI_SET: 1, MVPI_MULTISET: 2}


@dataclass(frozen=True)
class SplitContext:
    """What a custom split ordering sees for one group (``order=callable``).

    Attributes
    ----------
    qi : tuple of str
        The QI columns, in the order of ``codes``' rows.
    codes : numpy.ndarray
        (len(qi) × cells) int32 domain codes of the group's cells (domain code ``i`` is the
        ``i``-th smallest distinct value of the column; for numeric columns code order is
        value order).
    weights : numpy.ndarray
        Individuals per cell (int64).
    domains : tuple of pyarrow.Array
        Sorted distinct values of each QI column (``domains[j][code]`` is the label).

    The callable returns candidate splits ``[(attribute, cut), ...]`` in priority order:
    ``attribute`` an index into ``qi`` or a column name, ``cut`` a domain code; the left
    child holds the cells with code ≤ cut. The first candidate that keeps every point safe
    is applied; invalid candidates (an empty child) are skipped.

    """

    qi: tuple
    codes: np.ndarray
    weights: np.ndarray
    domains: tuple


@dataclass(frozen=True)
class _Pairs:
    sigma: list
    points: list            # (l, k, m, c) per pair
    sig: np.ndarray
    l: np.ndarray
    k: np.ndarray
    m: np.ndarray
    thr: np.ndarray
    strict: np.ndarray
    skylines: Any


def _threshold(c: Any) -> tuple[float, int]:
    """(thr, strict) with ``minNR > thr`` (strict) / ``≥ thr`` ⇔ Fraction(minNR) > (1−c)/c."""
    cf = Fraction(c)
    ratio = (1 - cf) / cf
    f = float(ratio)
    if Fraction(f) == ratio:
        return f, 1
    if Fraction(f) > ratio:
        return f, 0
    return math.nextafter(f, math.inf), 0


def _pairs(skylines: Any, values: list) -> _Pairs:
    from ..skyline import normalize_skylines

    explicit, star = normalize_skylines(skylines)
    index = {v: i for i, v in enumerate(values)}
    for sigma in explicit:
        if sigma not in index:
            shown = ", ".join(map(repr, values[:20]))
            raise InputError(f"skylines: {sigma!r} is not a sensitive value of the data; "
                             f"values: {shown}{' …' if len(values) > 20 else ''}")
    sig, pts, owners = [], [], []
    for sigma in list(explicit) + [v for v in values if v not in explicit]:
        for p in explicit.get(sigma, []) + star:
            owners.append(sigma)
            pts.append(p)
            sig.append(index[sigma])
    if not pts:
        raise InputError("skylines has no point: give {sigma: [(l, k, m, c), ...]} or a list "
                         "of points for every value")
    thr, strict = zip(*(_threshold(p[3]) for p in pts), strict=True)
    arr = lambda x, dt: kernel_array(np.asarray(x, dtype=dt), dt)  # noqa: E731
    return _Pairs(sigma=owners, points=pts, sig=arr(sig, np.int64),
                  l=arr([p[0] for p in pts], np.int64), k=arr([p[1] for p in pts], np.int64),
                  m=arr([p[2] for p in pts], np.int64), thr=arr(thr, np.float64),
                  strict=arr(strict, np.uint8), skylines=skylines)


def parse_skyline_spec(text: str) -> dict:
    """Parse ``"sigma:l,k,m,c;sigma2:l,k,m,c;..."`` into ``{sigma: [(l, k, m, c), ...]}``.

    ``*`` as sigma means every value; ``c`` may be a decimal or a fraction (``3/4``). The
    sigma is everything before the last ``:`` of an entry.
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError("--skyline expects 'sigma:l,k,m,c;...' (e.g. '*:4,0,0,0.75')")
    out: dict = {}
    for entry in text.split(";"):
        entry = entry.strip()
        if not entry:
            continue
        if ":" not in entry:
            raise InputError(f"--skyline entry {entry!r}: expected sigma:l,k,m,c")
        sigma, pt = entry.rsplit(":", 1)
        parts = [x.strip() for x in pt.split(",")]
        if len(parts) != 4:
            raise InputError(f"--skyline entry {entry!r}: expected four numbers l,k,m,c")
        try:
            l, k, m = (int(x) for x in parts[:3])
            c = Fraction(parts[3])
        except ValueError:
            raise InputError(f"--skyline entry {entry!r}: l, k, m must be integers and c a "
                             "number such as 0.75 or 3/4") from None
        out.setdefault(sigma.strip(), []).append((l, k, m, c))
    if not out:
        raise InputError("--skyline has no entry")
    return out


# ---------------------------------------------------------------------- encoding
class _Cells:
    """Mondrian's encoded cells plus the individuals per cell (MVPI) and the case."""

    def __init__(self, table: Any, qi: Sequence[str], sensitive: str, *,
                 individual: str | None, case: str | None, weight: str | None,
                 categorical: Sequence[str] | None, nulls: str,
                 count: str | None = None) -> None:
        from .._arrow import as_table
        from ._mondrian import MondrianTree

        t = as_table(table, param="table")
        if count is not None:   # the deprecated name of weight=, with its old checks
            if weight is not None:
                raise InputError("count: give weight= only (count= is its deprecated name)")
            check_columns([count], t.column_names, "count")
            col = t.column(count)
            if col.null_count:
                raise InputError(f"count column {count!r} has {col.null_count} nulls")
            if not pa.types.is_integer(col.type):
                raise InputTypeError(f"count column {count!r} must hold integers, got {col.type}")
            cnt = np.asarray(col.to_numpy(), dtype=np.int64)
            if (cnt <= 0).any():
                raise InputError(f"count column {count!r} must be >= 1 (row "
                                 f"{int(np.flatnonzero(cnt <= 0)[0])} has {int(cnt.min())})")
            weight = count
        extra = [c for c in (individual, weight) if c is not None]
        check_columns(extra, t.column_names, "individual/weight")
        if individual is not None and weight is not None:
            raise InputError("weight= (each row stands for that many identical individuals, "
                             "SVPI) cannot be combined with individual= (MVPI rows)")
        for name, col in (("individual", individual), ("weight", weight)):
            if col is not None and (col == sensitive or col in qi):
                raise InputError(f"{name} column {col!r} is also a qi/sensitive column")
        # weight=: the tree's cells hold Σ weight people (MondrianTree)
        self.tree = MondrianTree(t, qi, sensitive, categorical=categorical, nulls=nulls,
                                 weight=weight)
        tree = self.tree
        self.individual = individual
        self.weight = weight
        self.sensitive = sensitive
        self.case = SVPI
        self.iw = tree._w
        self.release_all = None
        if individual is not None:
            self._mvpi(t, qi, sensitive, individual, case)
        elif case not in (None, SVPI):
            raise InputError(f"case={case!r} needs individual= (one row per individual and "
                             "value)")

    def _mvpi(self, t: pa.Table, qi: Sequence[str], sensitive: str, individual: str,
              case: str | None) -> None:
        from .._arrow import encode_column
        from .._cells import compress

        tree = self.tree
        col = t.column(individual)
        if tree.kept_rows is not None:
            col = col.take(pa.array(tree.kept_rows))
        if col.null_count:
            raise InputError(f"individual column {individual!r} has {col.null_count} nulls")
        ienc = encode_column(col, name=individual)
        ind = np.asarray(ienc.codes, dtype=np.int64)
        n_ind = len(ienc.labels)
        # every individual must have one QI tuple (the adversary links people by their QI)
        qcell, _, _ = compress(tree._rows_q, [len(d) for d in tree.domains])
        qcell = np.asarray(qcell, dtype=np.int64)
        lo = np.full(n_ind, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(n_ind, -1, dtype=np.int64)
        np.minimum.at(lo, ind, qcell)
        np.maximum.at(hi, ind, qcell)
        bad = np.flatnonzero(lo != hi)
        if bad.size:
            raise InputError(f"individual {ienc.labels[int(bad[0])].as_py()!r} has rows with "
                             f"different QI values ({bad.size} such individuals); each "
                             "individual needs one QI tuple")
        first = np.full(n_ind, -1, dtype=np.int64)
        rows = np.arange(ind.shape[0], dtype=np.int64)
        first[ind[::-1]] = rows[::-1]
        iw = np.bincount(np.asarray(tree._row_cell, dtype=np.int64)[first],
                         minlength=tree.n_cells).astype(np.int64)
        self.iw = kernel_array(iw, np.int64)
        self._ind_col = col
        whole = Release.from_table(
            pa.table({"_g": pa.array(np.zeros(ind.shape[0], dtype=np.int64)),
                      sensitive: tree_sensitive_column(t, sensitive, tree.kept_rows),
                      individual: col}),
            sensitive=sensitive, group="_g", individual=individual, case=case)
        self.case = whole.case
        if self.case == SVPI:
            raise InputError("individual= was given but every individual has one value; use "
                             "the SVPI form (no individual=) or case='mvpi-set'")
        self.release_all = whole


def tree_sensitive_column(t: pa.Table, sensitive: str, kept: np.ndarray | None) -> Any:
    col = t.column(sensitive)
    return col if kept is None else col.take(pa.array(kept))


# ---------------------------------------------------------------------- drivers
def _run_compiled(cells: _Cells, pairs: _Pairs, widest: bool):
    from .._kernels.skyline_anonymize import skyline_partition

    tr = cells.tree
    return skyline_partition(tr._q, tr._s, tr._w, cells.iw, tr._pos, tr._pos_off, tr._ord,
                             tr._gspan, len(tr.values), _CASE_ID[cells.case], pairs.sig,
                             pairs.l, pairs.k, pairs.m, pairs.thr, pairs.strict, bool(widest))


def _run_python(cells: _Cells, pairs: _Pairs, order: Callable,
                progress: Callable[[int, int], None] | None):
    from .._kernels.mondrian import split_segment
    from .._kernels.skyline_anonymize import pairs_safe, split_candidate, whole_terms

    tr = cells.tree
    case = _CASE_ID[cells.case]
    V = len(tr.values)
    d = len(tr.qi)
    stats = whole_terms(tr._s, tr._w, cells.iw, V, case, pairs.sig, pairs.l, pairs.k, pairs.m)
    m_cells = tr.n_cells
    group = np.zeros(m_cells, dtype=np.int32)
    if not pairs_safe(stats, pairs.thr, pairs.strict):
        return group, 1, 0, 0, stats, False
    perm = np.arange(m_cells, dtype=np.int64)      # writable: one helper specialization
    queue: deque = deque([(0, m_cells)])
    n_groups = n_splits = n_rejected = 0
    names = {a: j for j, a in enumerate(tr.qi)}
    domains = tuple(tr.domains)
    while queue:
        a, b = queue.popleft()
        idx = perm[a:b]
        ctx = SplitContext(qi=tr.qi, codes=np.asarray(tr._q)[:, idx],
                           weights=np.asarray(cells.iw)[idx], domains=domains)
        accepted = False
        for cand in order(ctx) or ():
            try:
                attr, cut = cand
            except (TypeError, ValueError):
                raise InputTypeError(f"order must return (attribute, cut) pairs, got {cand!r}") \
                    from None
            j = names.get(attr, attr) if isinstance(attr, str) else attr
            if isinstance(j, str) or not isinstance(j, (int, np.integer)) or not 0 <= j < d:
                raise InputError(f"order: attribute {attr!r} is not one of {list(tr.qi)} or an "
                                 f"index below {d}")
            if isinstance(cut, bool) or not isinstance(cut, (int, np.integer)):
                raise InputTypeError(f"order: cut must be an integer domain code, got {cut!r}")
            ok, merged = split_candidate(tr._q, tr._s, tr._w, cells.iw, perm, int(a), int(b),
                                         int(j), int(cut), V, case, pairs.sig, pairs.l,
                                         pairs.k, pairs.m, stats, pairs.thr, pairs.strict)
            if not ok:
                n_rejected += 1
                continue
            stats = merged
            seg, mid = split_segment(tr._q, perm, int(a), int(b), int(j), int(cut))
            perm[a:b] = seg
            queue.append((a, int(mid)))
            queue.append((int(mid), b))
            n_splits += 1
            accepted = True
            break
        if not accepted:
            group[perm[a:b]] = n_groups
            n_groups += 1
            if progress is not None:
                progress(n_groups, n_groups + len(queue))
    return group, n_groups, n_splits, n_rejected, stats, True


# ---------------------------------------------------------------------- entry point
def skyline_anonymize(data: Any, *, qi: Sequence[str], sensitive: str, skylines: Any,
                      individual: str | None = None, case: str | None = None,
                      weight: str | None = None, order: Any = "widest",
                      categorical: Sequence[str] | None = None, nulls: str = "error",
                      check: bool = True, progress: Callable[[int, int], None] | None = None,
                      count: str | None = None) -> SkylineAnonymized:
    """SkylineAnonymize (Chen et al., §5.2, Figure 6): a release safe for a privacy skyline.

    For every (σ, point (ℓ, k, m, c)) of ``skylines`` the output has BP_σ(ℓ,k,m) < c, where
    BP = 1/(1 + minNR) and minNR = min(SS1, SS2·SS5, SS3·SS4) (Theorem 2). Splits are
    accepted greedily while BP from (global statistics ∧ children) stays below c for
    every point; in SVPI the result is minimal (no group can be split safely).

    Parameters
    ----------
    data : table-like
        SVPI: one row per individual. MVPI: one row per (individual, value) with
        ``individual=``. With ``weight=``: aggregated (QI, sensitive, count) triples (SVPI).
    qi : list of str
        QI columns to partition on (numeric = ordered ranges, others = value sets).
    sensitive : str
        Sensitive column.
    skylines : mapping or list
        ``{sigma: [(l, k, m, c), ...]}``; key ``"*"`` applies its points to every value;
        a plain list of points means every value (as :func:`fastpriv.skyline.check`).
    individual : str, optional
        Individual-id column (MVPI). Each individual must have one QI tuple.
    case : {"mvpi-set", "mvpi-multiset"}, optional
        MVPI case (inferred from the data when omitted).
    weight : str, optional
        Multiplicity column, as everywhere in fastpriv: each row stands for ``weight``
        identical individuals (SVPI triples; integers ≥ 0, 0 = nobody). The release and its
        written table stand for the same people as the expanded table's.
    order : {"widest", "qi"} or callable
        Split ordering: Mondrian's widest normalized range first (default), the QI order,
        or ``order(ctx: SplitContext) -> [(attribute, cut), ...]``.
    categorical : list of str, optional
        QI columns treated as categorical even if numeric.
    nulls : {"error", "drop"}
        Rows with nulls: error, or dropped (group id −1).
    check : bool
        Re-check the output with :func:`fastpriv.skyline.check` (``.check``).
    progress : callable, optional
        ``progress(done, total)``.
    count : str, optional
        Deprecated name of ``weight`` (DeprecationWarning; counts must be ≥ 1).

    Returns
    -------
    SkylineAnonymized
        ``method="skyline"``; ``.release`` (case of the input), ``.group_ids`` per input
        row, ``.generalized`` ranges / value sets per row and ``.attributes``;
        ``.guarantee`` ("safe and minimal" for SVPI, "safe" for MVPI), accepted and
        rejected splits, the final bound per point (``.points``), the output check
        (``.check``, a :class:`~fastpriv.skyline.SkylineCheck`) and ``.seconds``.

    Raises
    ------
    InputError
        When even the whole table as one group breaches a point (nothing can be
        released), or on invalid input.

    Examples
    --------
    >>> import fastpriv as fp
    >>> adult = fp.datasets.load_adult()
    >>> res = skyline_anonymize(adult, qi=["age", "sex", "race"], sensitive="occupation",
    ...                         skylines={"*": [(4, 0, 0, 0.75)]})
    >>> res.check.safe
    True

    """
    t0 = time.perf_counter()
    if not (order in ("widest", "qi") if isinstance(order, str) else callable(order)):
        raise InputError(f"order must be 'widest', 'qi' or a callable, got {order!r}")
    check_choice(nulls, "nulls", ("error", "drop"))
    if case is not None:
        check_choice(case, "case", (SVPI, MVPI_SET, MVPI_MULTISET))
    if count is not None:
        warnings.warn("skyline_anonymize(count=) is renamed weight= (the number of identical "
                      "rows a row stands for, as everywhere in fastpriv)", DeprecationWarning,
                      stacklevel=2)
    cells = _Cells(data, qi, sensitive, individual=individual, case=case, weight=weight,
                   count=count, categorical=categorical, nulls=nulls)
    pairs = _pairs(skylines, cells.tree.values.to_pylist())
    t1 = time.perf_counter()
    group, n, splits, rejected, stats, path = _partition(cells, pairs, order, progress)
    seconds = {"encode": t1 - t0, "partition": time.perf_counter() - t1}
    out = _result(cells, pairs, group, n, stats, order=order, path=path,
                  n_splits=int(splits), n_rejected_splits=int(rejected), seconds=seconds)
    if check:
        t3 = time.perf_counter()
        from .. import skyline as sk

        out = replace(out, check=sk.check(out.release, skylines=pairs.skylines))
        seconds["check"] = time.perf_counter() - t3
    seconds["total"] = time.perf_counter() - t0
    return out


def _partition(cells: _Cells, pairs: _Pairs, order: Any,
               progress: Callable[[int, int], None] | None) -> tuple:
    """Run the splits (compiled for a named order, Python for a callable one).

    Returns ``(group of each cell, n_groups, n_splits, n_rejected, final statistics,
    path)``; raises when the whole table already breaches a point.
    """
    if callable(order):
        group, n, splits, rejected, stats, ok = _run_python(cells, pairs, order, progress)
        path = "python"
    else:
        group, n, splits, rejected, stats, ok = _run_compiled(cells, pairs, order == "widest")
        path = "compiled"
        if progress is not None:
            progress(int(n), int(n))
    if not ok:
        bad = _violations(stats, pairs)
        raise InputError(f"the whole table as one group already breaches {bad}; no release "
                         "can be safe (SkylineAnonymize only splits the single-group release)")
    return group, int(n), splits, rejected, stats, path


def _result(cells: _Cells, pairs: _Pairs, group: np.ndarray, n: int, stats: np.ndarray, *,
            order: Any, **facts: Any) -> SkylineAnonymized:
    """Build the :class:`SkylineAnonymized` of a partition (MVPI: individuals' release)."""
    desc = _describe(pairs)
    svpi = cells.case == SVPI
    order_name = order if isinstance(order, str) else getattr(order, "__name__", "callable")
    out = cells.tree.anonymized(
        group, n, crit=_Named(f"skyline({desc})"), cls=SkylineAnonymized, case=cells.case,
        guarantee=("safe and minimal (SVPI, Theorems 4-5): every group breaches a point at "
                   "each of its candidate splits" if svpi else
                   "safe (MVPI): minimality is not guaranteed — Theorem 4 fails for MVPI, "
                   "a split can lower the breach probability"),
        minimal=svpi, order=order_name, points=tuple(_point_summary(stats, pairs)), **facts)
    params = dict(out.params)
    params.update({"criterion": f"skyline({desc})", "skylines": _jsonable_skylines(pairs),
                   "order": order_name, "case": cells.case})
    if cells.individual is not None:
        params["individual"] = cells.individual
        out = replace(out, release=_mvpi_release(cells, out.group_ids, cells.sensitive, n))
    return replace(out, method="skyline", params=params)


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


def _mvpi_release(cells: _Cells, group_ids: np.ndarray, sensitive: str, n: int) -> Release:
    tree = cells.tree
    gid = group_ids if tree.kept_rows is None else group_ids[tree.kept_rows]
    tab = pa.table({"_group": pa.array(np.asarray(gid, dtype=np.int64)),
                    sensitive: _sens(cells),
                    cells.individual: cells._ind_col})
    rel = Release.from_table(tab, sensitive=sensitive, group="_group",
                             individual=cells.individual, case=cells.case)
    if rel.n_groups != n:
        raise AssertionError("internal: MVPI release group count mismatch")
    return rel


def _sens(cells: _Cells) -> pa.Array:
    tree = cells.tree
    return tree.values.take(pa.array(np.asarray(tree._sens_rows, dtype=np.int64)))


def _violations(stats: np.ndarray, pairs: _Pairs) -> str:
    from ..skyline import combine_row

    out = []
    for i, row in enumerate(np.asarray(stats).tolist()):
        nr, _ = combine_row(row)
        bp = 0.0 if nr == math.inf else 1.0 / (1.0 + nr)
        l, k, m, c = pairs.points[i]
        if bp >= float(c) or not _safe_float(nr, pairs, i):
            out.append(f"sigma={pairs.sigma[i]!r} (l={l}, k={k}, m={m}): BP = {bp:.6g} >= "
                       f"c = {float(c):g}")
    return "; ".join(out[:5]) + (f" (+{len(out) - 5} more)" if len(out) > 5 else "")


def _safe_float(nr: float, pairs: _Pairs, i: int) -> bool:
    thr = float(pairs.thr[i])
    return nr > thr if pairs.strict[i] else nr >= thr


def _point_summary(stats: np.ndarray, pairs: _Pairs) -> list:
    from ..skyline import combine_row

    out = []
    for i, row in enumerate(np.asarray(stats).tolist()):
        nr, which = combine_row(row)
        l, k, m, c = pairs.points[i]
        out.append({"sigma": pairs.sigma[i], "l": l, "k": k, "m": m, "c": float(c),
                    "bp_bound": 0.0 if nr == math.inf else 1.0 / (1.0 + nr)})
    return out


def _describe(pairs: _Pairs) -> str:
    seen: dict = {}
    for sigma, p in zip(pairs.sigma, pairs.points, strict=True):
        seen.setdefault(tuple(p[:3]) + (float(p[3]),), set()).add(sigma)
    n_values = len(set(pairs.sigma))
    parts = []
    for (l, k, m, c), sig in seen.items():
        who = "*" if len(sig) == n_values and n_values > 1 else ",".join(map(str, sorted(
            sig, key=str)))
        parts.append(f"{who}:({l},{k},{m}) c={c:g}")
    return "; ".join(parts)


def _jsonable_skylines(pairs: _Pairs) -> list:
    return [{"sigma": s, "l": p[0], "k": p[1], "m": p[2], "c": float(p[3])}
            for s, p in zip(pairs.sigma, pairs.points, strict=True)]


# ---------------------------------------------------------------------- CLI plugin
def _cli_arguments(g: Any) -> None:
    g.add_argument("--skyline", metavar="SPEC",
                   help="skyline points 'sigma:l,k,m,c;...' ('*' = every value), e.g. "
                        "'*:4,0,0,0.75' (method skyline)")
    g.add_argument("--skyline-order", choices=("widest", "qi"), default="widest",
                   help="split ordering: widest normalized range first (default) or QI order")
    g.add_argument("--skyline-individual", metavar="COL",
                   help="individual-id column of an MVPI table (method skyline)")


def _cli_run(args: Any, data: Any, criterion: Any) -> SkylineAnonymized:
    if not getattr(args, "skyline", None):
        raise InputError("--method skyline needs --skyline 'sigma:l,k,m,c;...'")
    if criterion is not None:
        raise InputError("--method skyline takes its criterion from --skyline only; drop "
                         "--min-size/--l/--t/--alpha/--c")
    return skyline_anonymize(data, qi=args.qi, sensitive=args.sensitive,
                             skylines=parse_skyline_spec(args.skyline),
                             individual=getattr(args, "skyline_individual", None),
                             weight=getattr(args, "weight", None),
                             order=args.skyline_order, nulls=args.nulls)


CLI_METHOD = ("skyline", _cli_arguments, _cli_run)
