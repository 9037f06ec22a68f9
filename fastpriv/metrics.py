"""Utility metrics of anonymized releases (baselines.md §"Utility metrics").

Count-query error
-----------------
The workload of Anatomy, MASK, Injector and Wong et al.: queries
``COUNT(*) WHERE A_1 ∈ b_1 ∧ … ∧ A_qd ∈ b_qd ∧ S ∈ b_S`` over ``qd`` randomly chosen QI
attributes (default all) and the sensitive attribute. Each predicate set covers
⌈|dom(A)| · s^{1/(qd+1)}⌉ values — a random contiguous range of the sorted domain for
ordered attributes (numeric/temporal columns, or those named in ``ordered=``), a random
subset for categorical ones — so the expected selectivity is ≈ s (default 0.05). dom(A) is
the set of distinct values of A in the original table.

* ``act`` = the exact count on the original table; queries with act = 0 are discarded and
  redrawn (the generator continues, so the workload is a pure function of the seed).
* ``est`` from the release, assuming uniformity inside groups:

  - bucketized (Anatomy; exact QI values, sensitive values per group):
    est = Σ_g |{t ∈ g : t satisfies the QI predicates}| · #{v ∈ X_g : v ∈ b_S} / n_g;
  - generalized (Mondrian, lattice search; published value sets, exact S per row):
    est = Σ_t [t.S ∈ b_S] · ∏_A |gen(t.A) ∩ b_A| / |gen(t.A)|.

* The reported error is the mean of |act − est| / act over the N queries (default 10,000).

:class:`CountQueries` draws the workload once (seeded, vectorised) and evaluates any number
of releases against it; every evaluation is one parallel Numba pass over the table
compressed to its distinct cells.

Other measures
--------------
:func:`discernibility` Σ_g n_g² (+ n·(suppressed rows)), :func:`average_group_size`
C_avg = (n / #groups) / k, :func:`average_delta` (Wong et al.): the mean over groups (and
attribute sets and values) of max − min of the adversary's probabilities p(sig_t : x)
inside the group.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ._validation import check_choice, check_columns, check_int, kernel_array, real_array
from .errors import InputError, InputTypeError
from .release import Release
from .results import Result

__all__ = ["CountQueries", "QueryError", "query_error", "discernibility",
           "average_group_size", "average_delta"]

_SUBSET_ARGSORT_MAX = 4096


def _is_ordered(typ: pa.DataType) -> bool:
    return (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
            or pa.types.is_temporal(typ))


@dataclass(frozen=True, eq=False)
class QueryError(Result):
    """Relative error of a count-query workload on one release.

    Attributes
    ----------
    value : float
        Mean of |act − est| / act over the queries.
    median : float
    n_queries, qd : int
    selectivity : float
    seed : int
    estimator : str
        ``"bucketized"`` or ``"generalized"``.
    errors : numpy.ndarray
        Per-query relative errors.

    """

    value: float
    median: float
    n_queries: int
    qd: int
    selectivity: float
    seed: int
    estimator: str
    errors: np.ndarray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without the per-query errors)."""
        return {"relative_error": self.value, "median": self.median,
                "n_queries": self.n_queries, "qd": self.qd, "selectivity": self.selectivity,
                "seed": self.seed, "estimator": self.estimator}

    @property
    def params(self) -> dict[str, Any]:
        """The workload's parameters."""
        return {"n_queries": self.n_queries, "qd": self.qd, "selectivity": self.selectivity,
                "seed": self.seed, "estimator": self.estimator}

    @property
    def witness(self) -> None:
        """None: the error is an average over random queries, not realised by one."""
        return None

    def summary(self) -> str:
        """One line: the mean and median relative error of the workload."""
        return (f"relative query error {self.value:.4g} (median {self.median:.4g}) over "
                f"{self.n_queries:,} count queries on {self.qd} QI attributes")


class CountQueries:
    """A seeded workload of random count queries on an original table.

    Parameters
    ----------
    data : table-like
        The original table.
    qi : list of str
        QI attributes queries may constrain.
    sensitive : str
        Sensitive attribute (always constrained).
    n_queries : int
        Number of queries (default 10,000), all with a non-zero exact answer.
    qd : int, optional
        QI attributes per query (default: all of ``qi``).
    selectivity : float
        Target selectivity s (default 0.05).
    ordered : list of str, optional
        Columns treated as ordered (contiguous ranges); default the numeric/temporal ones.
    seed : int
        Seed of :func:`numpy.random.default_rng`.
    weight : str, optional
        Multiplicity column: each row stands for ``weight`` identical rows (exact answers
        and estimates count units; the workload equals the expanded table's).

    Attributes
    ----------
    actual : numpy.ndarray
        Exact answers (int64), all > 0.

    """

    def __init__(self, data: Any, *, qi: Sequence[str], sensitive: str,
                 n_queries: int = 10_000, qd: int | None = None, selectivity: float = 0.05,
                 ordered: Sequence[str] | None = None, seed: int = 0,
                 max_rounds: int = 1000, weight: str | None = None) -> None:
        if isinstance(qi, str):
            qi = [qi]
        qi = list(qi)
        if not qi:
            raise InputError("qi: at least one quasi-identifier column is required")
        if sensitive in qi:
            raise InputError(f"sensitive column {sensitive!r} is also a qi column")
        self.n_queries = check_int(n_queries, "n_queries", minimum=1)
        self.qd = len(qi) if qd is None else check_int(qd, "qd", minimum=1, maximum=len(qi))
        if isinstance(selectivity, bool) or not isinstance(selectivity, (int, float)) or \
                not 0 < float(selectivity) <= 1:
            raise InputError(f"selectivity must be in (0, 1], got {selectivity!r}")
        self.selectivity = float(selectivity)
        self.seed = check_int(seed, "seed")
        from .release import derive_view

        # the rows encoded once (QI and sensitive codes in sorted-label order)
        view = derive_view(data, qi=qi, sensitive=sensitive, weight=weight, nulls="error")
        self._row_w = view.weight
        self.qi = tuple(qi)
        self.sensitive = sensitive
        self.n_rows = view.n_rows
        types = {**{c: view.qi_labels[c].type for c in qi}, sensitive: view.values.type}
        if ordered is None:
            ordset = {c for c in qi + [sensitive] if _is_ordered(types[c])}
        else:
            ordset = set(check_columns(list(ordered), qi + [sensitive], "ordered"))
        self.ordered = tuple(c in ordset for c in qi)
        self.sensitive_ordered = sensitive in ordset
        self.domains = [view.qi_labels[a] for a in qi]
        self.values = view.values
        self._row_codes = [view.qi_codes[a] for a in qi]
        self._row_s = view.sensitive
        self.dom_sizes = [len(d) for d in self.domains]
        self._off = kernel_array(np.concatenate([[0], np.cumsum(self.dom_sizes)]), np.int64)
        self._exact_trie = _Trie([(0, a, c, D) for a, (c, D) in
                                  enumerate(zip(self._row_codes, self.dom_sizes, strict=True))]
                                 + [(2, -1, view.sensitive, len(view.values))],
                                 weight=self._row_w)
        self._draw(max_rounds)

    # ------------------------------------------------------------------ workload
    def widths(self) -> tuple[list[int], int]:
        """Predicate-set sizes ⌈|dom(A)|·s^{1/(qd+1)}⌉ of each QI attribute and of S."""
        f = self.selectivity ** (1.0 / (self.qd + 1))
        ws = [min(D, max(1, math.ceil(D * f - 1e-12))) for D in self.dom_sizes]
        Ds = len(self.values)
        return ws, min(Ds, max(1, math.ceil(Ds * f - 1e-12)))

    def _draw(self, max_rounds: int) -> None:
        rng = np.random.default_rng(self.seed)
        ws, ws_s = self.widths()
        d = len(self.qi)
        masks_out, smask_out, sel_out, act_out = [], [], [], []
        have = 0
        for _ in range(max_rounds):
            B = self.n_queries
            if self.qd < d:
                chosen = np.argsort(rng.random((B, d)), axis=1)[:, :self.qd]
                sel = np.zeros((B, d), dtype=bool)
                np.put_along_axis(sel, chosen, True, axis=1)
            else:
                sel = np.ones((B, d), dtype=bool)
            masks = np.ones((B, int(self._off[-1])), dtype=np.uint8)
            for a in range(d):
                block = _predicate_masks(rng, B, self.dom_sizes[a], ws[a], self.ordered[a])
                lo, hi = int(self._off[a]), int(self._off[a + 1])
                masks[:, lo:hi] = np.where(sel[:, a:a + 1], block, 1)
            smask = _predicate_masks(rng, B, len(self.values), ws_s, self.sensitive_ordered)
            act = np.rint(self._exact_trie.run(kernel_array(masks, np.uint8), self._off,
                                               kernel_array(smask, np.uint8))).astype(np.int64)
            keep = np.flatnonzero(act > 0)[:self.n_queries - have]
            masks_out.append(masks[keep])
            smask_out.append(smask[keep])
            sel_out.append(sel[keep])
            act_out.append(act[keep])
            have += keep.size
            if have >= self.n_queries:
                break
        else:
            raise InputError(f"could not draw {self.n_queries} queries with a non-zero answer "
                             f"in {max_rounds} rounds (got {have}); raise selectivity")
        self.masks = kernel_array(np.concatenate(masks_out), np.uint8)
        self.smask = kernel_array(np.concatenate(smask_out), np.uint8)
        self.selected = np.concatenate(sel_out)
        self.actual = np.concatenate(act_out)

    def queries(self) -> list[dict[str, Any]]:
        """Return the queries as Python sets: ``{attribute: set of values, …, sensitive: set}``.

        Only constrained attributes appear.
        """
        out = []
        doms = [x.to_pylist() for x in self.domains]
        vals = self.values.to_pylist()
        for q in range(self.masks.shape[0]):
            item = {}
            for a, name in enumerate(self.qi):
                if self.selected[q, a]:
                    row = self.masks[q, self._off[a]:self._off[a + 1]]
                    item[name] = {doms[a][i] for i in np.flatnonzero(row)}
            item[self.sensitive] = {vals[i] for i in np.flatnonzero(self.smask[q])}
            out.append(item)
        return out

    # ------------------------------------------------------------------ estimates
    def estimate(self, anonymized: Any, estimator: str = "auto") -> np.ndarray:
        """Estimated answers of every query from a release (see the module docstring).

        Parameters
        ----------
        anonymized : Anonymized
            The output of an anonymizer over the same table (row order preserved).
        estimator : {"auto", "bucketized", "generalized"}
            ``auto``: generalized when the result describes generalized QI attributes
            (Mondrian, lattice search), bucketized otherwise (Anatomy).

        """
        from .anonymize._result import Anonymized

        if not isinstance(anonymized, Anonymized):
            raise InputTypeError("anonymized must be an Anonymized result (from an anonymizer), "
                            f"got {type(anonymized).__name__}")
        check_choice(estimator, "estimator", ("auto", "bucketized", "generalized"))
        gids = np.asarray(anonymized.group_ids)
        if gids.shape[0] != self.n_rows:
            raise InputError(f"anonymized covers {gids.shape[0]} rows but the table has "
                             f"{self.n_rows}")
        if estimator == "auto":
            estimator = "generalized" if anonymized.attributes else "bucketized"
        if estimator == "generalized":
            return self._generalized(anonymized)
        return self._bucketized(anonymized.release, gids)

    def relative_error(self, anonymized: Any, estimator: str = "auto") -> QueryError:
        """Mean relative error |act − est| / act of the workload on ``anonymized``."""
        if estimator == "auto":
            estimator = "generalized" if getattr(anonymized, "attributes", ()) else "bucketized"
        est = self.estimate(anonymized, estimator)
        err = np.abs(self.actual - est) / self.actual
        return QueryError(value=float(err.mean()), median=float(np.median(err)),
                          n_queries=int(err.size), qd=self.qd, selectivity=self.selectivity,
                          seed=self.seed, estimator=estimator, errors=err)

    def _sens_remap(self, labels: list) -> np.ndarray:
        index = {v: i for i, v in enumerate(self.values.to_pylist())}
        missing = [v for v in labels if v not in index]
        if missing:
            raise InputError(f"the release has sensitive values not in the table: {missing[:5]}")
        return np.array([index[v] for v in labels], dtype=np.int32)

    def _bucketized(self, rel: Release, gids: np.ndarray) -> np.ndarray:
        if rel.case != "svpi":
            raise InputError("the bucketized estimator needs an SVPI release")
        keep = np.flatnonzero(gids >= 0)
        G = rel.n_groups
        if keep.size and gids[keep].max() >= G:
            raise InputError("group_ids refer to groups the release does not have")
        g = gids[keep].astype(np.int32)
        vmap = self._sens_remap(rel.values)
        trie = _Trie([(0, a, c[keep], D) for a, (c, D) in
                      enumerate(zip(self._row_codes, self.dom_sizes, strict=True))]
                     + [(3, -1, g, G)], weight=None if self._row_w is None else self._row_w[keep])
        return trie.run(self.masks, self._off, self.smask,
                        profile=(rel.indptr, vmap[rel.codes], rel.counts, rel.sizes))

    def _generalized(self, an: Any) -> np.ndarray:
        by_name = {x.name: x for x in an.attributes}
        levels, gen = [], []
        keep = np.asarray(an.group_ids) >= 0
        for a, name in enumerate(self.qi):
            x = by_name.get(name)
            D = self.dom_sizes[a]
            if x is None:  # published exactly
                levels.append((0, a, self._row_codes[a], D))
                gen.append((np.zeros(1, np.int64), np.zeros(0, np.int32)))
                continue
            codes = np.asarray(x.codes)
            if codes.shape[0] != self.n_rows:
                raise InputError(f"attribute {name!r}: {codes.shape[0]} rows, table has "
                                 f"{self.n_rows}")
            mem = np.asarray(x.members, dtype=np.int64)
            if not x.domain.equals(self.domains[a]):
                index = {v: i for i, v in enumerate(self.domains[a].to_pylist())}
                try:
                    remap = np.array([index[v] for v in x.domain.to_pylist()], dtype=np.int64)
                except KeyError as exc:
                    raise InputError(f"attribute {name!r}: generalized domain has value "
                                     f"{exc.args[0]!r} absent from the table") from None
                mem = remap[mem]
            keep &= codes >= 0
            levels.append((1, a, codes, len(x.labels)))
            gen.append((np.asarray(x.member_indptr, dtype=np.int64), mem.astype(np.int32)))
        levels.append((2, -1, self._row_s, len(self.values)))
        idx = np.flatnonzero(keep)
        trie = _Trie([(k, a, np.asarray(c)[idx].astype(np.int32), D) for k, a, c, D in levels],
                     weight=None if self._row_w is None else self._row_w[idx])
        return trie.run(self.masks, self._off, self.smask, gen=gen)


class _Trie:
    """Rows compressed to distinct cells and arranged as a trie (see _kernels/metrics.py).

    ``levels``: ``(kind, attribute index, codes per row, cardinality)``; levels are
    ordered by cardinality (small first: more subtrees are skipped early). ``weight``: the
    multiplicity of each row (a cell's weight is the sum over its rows).
    """

    def __init__(self, levels: list[tuple[int, int, np.ndarray, int]],
                 weight: np.ndarray | None = None) -> None:
        from ._cells import compress

        levels = sorted(levels, key=lambda x: (x[3], x[0]))
        cols = [np.asarray(c, dtype=np.int32) for _, _, c, _ in levels]
        cards = [max(int(D), 1) for *_, D in levels]
        self.kind = kernel_array([k for k, *_ in levels], np.int64)
        self.attr = kernel_array([max(a, 0) for _, a, _, _ in levels], np.int64)
        L = len(levels)
        if cols[0].size == 0:
            self.empty = True
            return
        self.empty = False
        cell, first, weights = compress(cols, cards)
        if weight is not None:
            weights = np.bincount(np.asarray(cell, dtype=np.int64), weights=weight,
                                  minlength=first.shape[0]).astype(np.int64)
        C = np.stack([c[first] for c in cols], axis=1)
        m = C.shape[0]
        starts = []
        for lev in range(L):
            if lev == L - 1:
                st = np.arange(m)
            else:
                ch = np.ones(m, dtype=bool)
                ch[1:] = np.any(C[1:, :lev + 1] != C[:-1, :lev + 1], axis=1)
                st = np.flatnonzero(ch)
            starts.append(st)
        lev_start = np.zeros(L + 1, dtype=np.int64)
        np.cumsum([len(x) for x in starts], out=lev_start[1:])
        codes = np.concatenate([C[st, lev] for lev, st in enumerate(starts)])
        lo = np.zeros(int(lev_start[-1]), dtype=np.int64)
        hi = np.zeros(int(lev_start[-1]), dtype=np.int64)
        for lev in range(L - 1):
            st, nxt = starts[lev], starts[lev + 1]
            ends = np.append(st[1:], m)
            a, b = lev_start[lev], lev_start[lev + 1]
            lo[a:b] = np.searchsorted(nxt, st) + lev_start[lev + 1]
            hi[a:b] = np.searchsorted(nxt, ends) + lev_start[lev + 1]
        self.node_code = kernel_array(codes, np.int32)
        self.lev_start = kernel_array(lev_start, np.int64)
        self.child_lo = kernel_array(lo, np.int64)
        self.child_hi = kernel_array(hi, np.int64)
        self.w = kernel_array(weights, np.int64)

    def run(self, masks: np.ndarray, off: np.ndarray, smask: np.ndarray, *,
            gen: list[tuple[np.ndarray, np.ndarray]] | None = None,
            profile: tuple | None = None) -> np.ndarray:
        from ._kernels.metrics import trie_sums

        if self.empty:
            return np.zeros(masks.shape[0])
        d = off.shape[0] - 1
        if gen is None:
            gen = [(np.zeros(1, np.int64), np.zeros(0, np.int32))] * d
        gip_off = np.concatenate([[0], np.cumsum([len(p) for p, _ in gen])]).astype(np.int64)
        gmem_off = np.concatenate([[0], np.cumsum([len(m) for _, m in gen])]).astype(np.int64)
        nf = [len(p) - 1 for p, _ in gen]
        frac_off = np.concatenate([[0], np.cumsum(nf)]).astype(np.int64)
        if profile is None:
            profile = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64),
                       np.zeros(0, np.int64))
        gi, gc, gn, gs = profile
        return trie_sums(self.node_code, self.lev_start, self.child_lo, self.child_hi, self.w,
                         self.kind, self.attr, masks, kernel_array(off, np.int64), smask,
                         kernel_array(np.concatenate([p for p, _ in gen]), np.int64),
                         kernel_array(np.concatenate([m for _, m in gen]), np.int32),
                         kernel_array(gip_off, np.int64), kernel_array(gmem_off, np.int64),
                         kernel_array(frac_off, np.int64), int(frac_off[-1]),
                         kernel_array(gi, np.int64), kernel_array(gc, np.int32),
                         kernel_array(gn, np.int64), kernel_array(gs, np.float64))


def _predicate_masks(rng: np.random.Generator, B: int, D: int, w: int,
                     ordered: bool) -> np.ndarray:
    """(B, D) 0/1 masks: random contiguous ranges (ordered) or random w-subsets."""
    out = np.zeros((B, D), dtype=np.uint8)
    if ordered:
        start = rng.integers(0, D - w + 1, size=B)
        idx = start[:, None] + np.arange(w)[None, :]
        np.put_along_axis(out, idx, 1, axis=1)
    elif D <= _SUBSET_ARGSORT_MAX:
        idx = np.argsort(rng.random((B, D)), axis=1)[:, :w]
        np.put_along_axis(out, idx, 1, axis=1)
    else:
        for q in range(B):
            out[q, rng.choice(D, size=w, replace=False)] = 1
    return out


def query_error(data: Any, anonymized: Any, *, qi: Sequence[str] | None = None,
                sensitive: str | None = None, n_queries: int = 10_000, qd: int | None = None,
                selectivity: float = 0.05, ordered: Sequence[str] | None = None, seed: int = 0,
                estimator: str = "auto") -> QueryError:
    """Relative error of ``n_queries`` random count queries (see :class:`CountQueries`).

    ``qi`` and ``sensitive`` default to the anonymizer's parameters.

    Examples
    --------
    >>> import fastpriv as fp
    >>> adult = fp.datasets.load_adult()
    >>> res = fp.anonymize.mondrian(adult, qi=["age", "sex", "race"], sensitive="occupation",
    ...                             min_size=10)
    >>> err = fp.metrics.query_error(adult, res, n_queries=1000)
    >>> 0 <= err.value
    True

    """
    params = getattr(anonymized, "params", {}) or {}
    qi = qi if qi is not None else params.get("qi")
    sensitive = sensitive if sensitive is not None else params.get("sensitive")
    if qi is None or sensitive is None:
        raise InputError("qi and sensitive are needed (the anonymized result does not name "
                         "them)")
    wl = CountQueries(data, qi=qi, sensitive=sensitive, n_queries=n_queries, qd=qd,
                      selectivity=selectivity, ordered=ordered, seed=seed)
    return wl.relative_error(anonymized, estimator)


# ---------------------------------------------------------------------- simple measures
def _sizes_and_suppressed(x: Any) -> tuple[np.ndarray, int]:
    from .anonymize._result import Anonymized

    if isinstance(x, Anonymized):
        return np.asarray(x.release.sizes, dtype=np.int64), int(np.sum(x.group_ids < 0))
    if isinstance(x, Release):
        return np.asarray(x.sizes, dtype=np.int64), 0
    a = np.asarray(x)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise InputTypeError("expected an Anonymized result, a Release or a 1-D array of group "
                        f"sizes; got {type(x).__name__}")
    if (a <= 0).any():
        raise InputError("group sizes must be positive")
    return a.astype(np.int64), 0


def discernibility(x: Any, *, n_suppressed: int | None = None) -> float:
    """Discernibility metric C_DM = Σ_g n_g² + n_suppressed · n (n = all input rows).

    ``x`` is an :class:`~fastpriv.anonymize.Anonymized` result (suppressed rows counted from
    its group ids), a :class:`~fastpriv.Release` or an array of group sizes.
    """
    sizes, sup = _sizes_and_suppressed(x)
    if n_suppressed is not None:
        sup = check_int(n_suppressed, "n_suppressed", minimum=0)
    n = int(sizes.sum()) + sup
    return float(np.sum(sizes.astype(np.float64) ** 2) + sup * n)


def average_group_size(x: Any, *, min_size: int = 1) -> float:
    """Return the normalized average group size C_avg = (n / #groups) / k (LeFevre et al.).

    ``min_size`` is k-anonymity's k, the smallest group size the release was built for.
    """
    min_size = check_int(min_size, "min_size", minimum=1)
    sizes, _ = _sizes_and_suppressed(x)
    return float(sizes.sum() / sizes.size / min_size)


def average_delta(f: Any, group_ids: Any = None, *, data: Any = None,
                  values: Sequence[Any] | None = None) -> float:
    """Compute the average Δ (Wong et al.): the mean spread of ``f`` within groups.

    The mean over groups (attribute sets, values) of max_t f_t − min_t f_t within the group.

    Parameters
    ----------
    f : array, mapping or Knowledge
        The adversary's probabilities per row: a 1-D array (one value), a 2-D array
        (rows × values), a mapping ``value -> per-row array``, or a
        :class:`fastpriv.knowledge.Knowledge` (then ``data`` is the original table, and each
        of its attribute sets contributes p(sig_t : x) for every value).
    group_ids : array, Anonymized or Release, optional
        Group of each row (−1 = suppressed, ignored). Default with a ``data`` Release: the
        groups of its row view.
    data : table or Release, optional
        The original table, or a Release carrying its row view
        (``Release.from_table(..., qi=, group=)``: its QI codes are read, not re-encoded;
        weighted rows give the spread of their expansion); required when ``f`` is a
        Knowledge (to compute signatures).
    values : list, optional
        Restrict to these sensitive values (mapping / Knowledge input).

    """
    from ._kernels.metrics import group_spread
    from .anonymize._result import Anonymized

    if isinstance(group_ids, Anonymized):
        group_ids = group_ids.group_ids
    if isinstance(data, Release):
        if data.rows is None:
            raise InputError("data: this Release has no row view; build it with "
                             "Release.from_table(data, qi=[...], group=..., sensitive=...)")
        if group_ids is None:
            group_ids = data.rows.row_group
        data = data.rows
    if isinstance(group_ids, Release):
        if group_ids.row_group is None:
            raise InputError("group_ids: this release does not know the group of each row")
        group_ids = group_ids.row_group
    if group_ids is None:
        raise InputError("group_ids is required (array, Anonymized or table-built Release)")
    g = np.asarray(group_ids)
    if g.ndim != 1 or not np.issubdtype(g.dtype, np.integer):
        raise InputTypeError("group_ids must be a 1-D integer array")
    mats = []
    if hasattr(f, "probability_matrix") and hasattr(f, "signature_index"):
        if data is None:
            raise InputError("data (the original table) is needed to compute signatures "
                             "with a Knowledge object")
        labels = list(values) if values is not None else list(f.values)
        for A in f.attribute_sets:
            sig = np.asarray(f.signature_index(data, A), dtype=np.int64)
            P = np.asarray(f.probability_matrix(A, labels), dtype=np.float64)
            mats.append(P[np.where(sig >= 0, sig, P.shape[0] - 1)])
    elif isinstance(f, Mapping):
        keys = list(values) if values is not None else list(f)
        missing = [v for v in keys if v not in f]
        if missing:
            raise InputError(f"values {missing[:5]} are not in f")
        mats.append(np.column_stack([real_array(f[v], f"f[{v!r}]") for v in keys]))
    else:
        a = real_array(f, "f")
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2:
            raise InputError("f must be 1-D (rows) or 2-D (rows × values)")
        mats.append(a)
    spreads = []
    n_groups = int(g.max()) + 1 if g.size and g.max() >= 0 else 0
    if n_groups == 0:
        raise InputError("group_ids has no group")
    for M in mats:
        if M.shape[0] != g.shape[0]:
            raise InputError(f"f has {M.shape[0]} rows but group_ids has {g.shape[0]}")
        bad = np.isfinite(M) & ((M < 0) | (M > 1))
        if bad.any():
            raise InputError("f: probabilities must be in [0, 1]")
        spreads.append(group_spread(kernel_array(g, np.int64), kernel_array(M, np.float64),
                                    n_groups).ravel())
    allv = np.concatenate(spreads)
    present = np.bincount(g[g >= 0], minlength=n_groups) > 0
    per = np.concatenate([np.repeat(present, M.shape[1]) for M in mats])
    allv = allv[per]
    if not np.isfinite(allv).any():
        raise InputError("f has no finite probability")
    return float(np.nanmean(allv))
