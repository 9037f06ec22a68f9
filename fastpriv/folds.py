"""Folds: audits as mergeable summaries of complete groups.

Every group model is a fold over groups: a statistic of one group, a summary that merges
associatively, and a finish. :class:`GroupwiseState` holds the summaries of the classical
models and of the registry's models that declare a per-group statistic (a min or max over
groups with the worst group's key; ties go to the smaller key, the in-memory answer), the
privacy skyline (Chen et al., Theorem 3: the minima SS1..SS5 per point,
:class:`~fastpriv.skyline.SkylineState`) and (c,k)-safety (:class:`CkState`: the groups
MINIMIZE2's knapsack can use). States built from disjoint sets of complete groups merge in
any order and tree shape, so a clustered stream, the partitions of a Dask or Spark cluster
and DuckDB's ordered Arrow stream all fold the same way and only the summaries travel: their
size depends on the models' parameters, not on the number of groups. :class:`StreamAudit`
is what every fold finishes into.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._labels import LabelKey, label_less
from ._validation import check_int, kernel_array
from .classic import AUDIT_ROWS, WORSE_IF_LARGER
from .errors import InputError, InputTypeError
from .release import Release

__all__ = ["GroupwiseState", "CkState", "StreamAudit", "declared_folds", "needs_q", "CLASSIC_ROWS",
           "q_of_totals", "q_param", "NEEDS_Q"]


#: (key, model, title, params) of the classical models a :class:`GroupwiseState` reduces,
#: in the order and with the titles of :func:`fastpriv.classic.audit` (the same table).
CLASSIC_ROWS = AUDIT_ROWS
#: The models that compare each group with the whole table's distribution Q.
NEEDS_Q = _NEEDS_Q = {"t_closeness", "t_closeness_ordered", "beta_likeness", "delta_disclosure"}


# ============================================================================ state
class GroupwiseState:
    """Mergeable partial audit over **complete** groups: classical min/max + SkylineState.

    Each :meth:`update` folds a release whose groups are complete (no group continues in
    another update); :meth:`merge` combines states built from disjoint sets of groups
    (batches of a clustered stream, partitions of a cluster). The worst group of each
    model is kept with its key; ties go to the smaller key, which is what the in-memory
    :func:`fastpriv.classic.audit` reports (first group in key order).

    Parameters
    ----------
    l : int
        ℓ of recursive (c,ℓ)-diversity.
    values : sequence, optional
        The sensitive domain (sorted labels) and ``q`` its distribution Q (same length):
        needed for t-closeness, β-likeness and δ-disclosure, skipped otherwise.
    q : sequence of float, optional
        Q(x) for every label of ``values``.
    order : sequence, optional
        Attribute order for ordered t-closeness (default: the sorted labels).
    skylines : mapping or list, optional
        Skyline points to check (see :func:`fastpriv.skyline.check`).
    classic : bool
        Reduce the classical models (default True).
    k : int, optional
        (c,k)-safety at ``k`` (both knowledge languages, the curves 0..k): a
        :class:`CkState` inside.
    options : mapping, optional
        The option values of the registry's models (:class:`fastpriv.registry.Option`,
        e.g. ``{"hierarchies": "bundled"}``): every model declaring a ``per_group``
        statistic whose options are all given is folded too (:func:`declared_folds`); the
        asked for without Q are named in :attr:`skipped`.

    """

    def __init__(self, *, l: int = 2, values: Sequence[Any] | None = None,
                 q: Sequence[float] | None = None, order: Sequence[Any] | None = None,
                 skylines: Any = None, classic: bool = True, k: int | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from .skyline import SkylineState

        self.l = check_int(l, "l", minimum=1)
        if (values is None) != (q is None):
            raise InputError("give both values= and q= (the distribution Q) or neither")
        self.values = None if values is None else list(values)
        self.q = None
        self._rank = None
        if q is not None:
            qa = np.asarray(q, dtype=np.float64)
            if qa.shape != (len(self.values),):
                raise InputError(f"q has {qa.size} entries but values has {len(self.values)}")
            if not np.isfinite(qa).all() or (qa < 0).any():
                raise InputError("q must hold finite non-negative probabilities")
            self.q = kernel_array(qa, np.float64)
            self._code = {v: i for i, v in enumerate(self.values)}
            self._rank = kernel_array(_order_rank(self.values, order), np.int64)
        self.order = None if order is None else list(order)
        self.classic = bool(classic)
        self.models: dict[str, dict] = {}
        self.sky = None if skylines is None else SkylineState(skylines)
        self.ck = None if k is None else CkState(k)
        self.options = dict(options or {})
        self.declared, self.skipped = declared_folds(self.options, q=self.q is not None)
        self.n_groups = 0
        self.n_rows = 0
        self.n_individuals = 0
        self.case: str | None = None

    # ------------------------------------------------------------------ update
    def update(self, rel: Release, *, offset: int | None = None) -> "GroupwiseState":
        """Fold the (complete) groups of ``rel``.

        ``offset``: the number of groups before ``rel``'s first group in the whole
        release's key order, when known (a sorted stream); it makes ``worst_group`` a
        global group index. Returns ``self``.
        """
        if not isinstance(rel, Release):
            raise InputTypeError(f"rel must be a Release, got {type(rel).__name__}")
        if self.case is None:
            self.case = rel.case
        elif rel.case != self.case:
            raise InputError(f"rel: case {rel.case!r} differs from {self.case!r}")
        if rel.n_groups == 0:
            return self
        if self.classic:
            self._update_classic(rel, offset)
        if self.declared:
            self._update_declared(rel, offset)
        if self.sky is not None:
            self.sky.update(rel)
        if self.ck is not None:
            self.ck.update(rel, offset=offset)
        self.n_groups += rel.n_groups
        self.n_rows += rel.n_rows
        self.n_individuals += rel.n_individuals
        return self

    def _per_group(self, rel: Release, model: str, params: dict, gcodes: Any) -> np.ndarray:
        from . import classic

        if model not in _NEEDS_Q:
            return classic.per_group(rel, model, **params)
        from ._kernels import classic as K

        indptr = kernel_array(rel.indptr, np.int64)
        counts = kernel_array(rel.counts, np.int64)
        if model in ("t_closeness", "t_closeness_ordered"):
            if params.get("ordered"):
                return K.emd_ordered(indptr, gcodes, counts, self.q, self._rank)
            return K.emd_equal(indptr, gcodes, counts, self.q)
        beta, delta = K.likeness(indptr, gcodes, counts, self.q)
        return beta if model == "beta_likeness" else delta

    def _update_classic(self, rel: Release, offset: int | None) -> None:
        gcodes = None
        if self.q is not None:
            try:
                gmap = np.array([self._code[v] for v in rel.values], dtype=np.int32)
            except KeyError as exc:
                raise InputError(f"values: the data has sensitive value {exc.args[0]!r}, "
                                 "which is not in the domain of q") from None
            gcodes = kernel_array(gmap[rel.codes] if gmap.size else rel.codes, np.int32)
        labels = rel.group_labels
        cache: dict = {}
        for model, title, params in CLASSIC_ROWS:
            key = model
            if model in _NEEDS_Q and self.q is None:
                continue
            kw = {"l": self.l} if params is None else dict(params)
            ck = (model, tuple(sorted(kw.items())))
            if ck not in cache:
                cache[ck] = self._per_group(rel, model, kw, gcodes)
            vals = cache[ck]
            larger = WORSE_IF_LARGER[model]
            g = int(np.argmax(vals) if larger else np.argmin(vals))
            value = float(vals[g])
            if model in ("k_anonymity", "l_diversity"):
                value = int(value)
            cand = {"title": title, "value": value,
                    "worst_group": None if offset is None else offset + g,
                    "worst_label": labels[g]}
            self._fold(key, cand, larger)

    def _update_declared(self, rel: Release, offset: int | None) -> None:
        from .registry import load, model

        q = None if self.q is None else dict(zip(self.values, self.q.tolist(), strict=True))
        for name in self.declared:
            m = model(name)
            vals = load(m.per_group)(rel, q=q if m.needs_q else None, options=self.options)
            larger = m.worse == "max"
            g = int(np.argmax(vals) if larger else np.argmin(vals))
            self._fold(name, {"title": m.title, "value": float(vals[g]),
                              "worst_group": None if offset is None else offset + g,
                              "worst_label": rel.group_labels[g]}, larger)

    @staticmethod
    def _larger(key: str) -> bool:
        """Whether a larger value of model ``key`` is worse (classical or declared)."""
        if key in WORSE_IF_LARGER:
            return WORSE_IF_LARGER[key]
        from .registry import model

        return model(key).worse == "max"

    def declared_results(self) -> dict[str, dict]:
        """Return the folded registry models: ``{name: {title, value, worst_*}}``."""
        return {name: dict(self.models[name]) for name in self.declared if name in self.models}

    def _fold(self, key: str, cand: dict, larger: bool) -> None:
        cur = self.models.get(key)
        if cur is None:
            self.models[key] = cand
            return
        a, b = cand["value"], cur["value"]
        better = a > b if larger else a < b
        if better or (a == b and label_less(cand["worst_label"], cur["worst_label"])):
            self.models[key] = cand

    # ------------------------------------------------------------------ merge
    def merge(self, other: "GroupwiseState") -> "GroupwiseState":
        """Return a new state for the union of two disjoint sets of groups (min/max reductions)."""
        if not isinstance(other, GroupwiseState):
            raise InputTypeError(f"other must be a GroupwiseState, got {type(other).__name__}")
        if (self.l, self.values, self.order, self.classic) != \
                (other.l, other.values, other.order, other.classic) or \
                (self.q is None) != (other.q is None) or \
                (self.q is not None and not np.array_equal(self.q, other.q)) or \
                (self.sky is None) != (other.sky is None) or \
                (None if self.ck is None else self.ck.k) != (None if other.ck is None
                                                             else other.ck.k) or \
                self.declared != other.declared:
            raise InputError("other: states with different parameters cannot be merged")
        if self.case and other.case and self.case != other.case:
            raise InputError(f"other: case {other.case!r} differs from {self.case!r}")
        out = GroupwiseState.__new__(GroupwiseState)
        out.__dict__.update(self.__dict__)
        out.models = {k: dict(v) for k, v in self.models.items()}
        for key, cand in other.models.items():
            out._fold(key, dict(cand), self._larger(key))
        out.sky = None if self.sky is None else self.sky.merge(other.sky)
        out.ck = None if self.ck is None else self.ck.merge(other.ck)
        out.n_groups = self.n_groups + other.n_groups
        out.n_rows = self.n_rows + other.n_rows
        out.n_individuals = self.n_individuals + other.n_individuals
        out.case = self.case or other.case
        return out

    # ------------------------------------------------------------------ result
    def classic_audit(self):
        """Return the classical models as a :class:`fastpriv.classic.ClassicAudit`."""
        from .classic import ClassicAudit

        if self.n_groups == 0:
            raise InputError("no group was folded into this state")
        models = {k: self.models[k] for k, *_ in CLASSIC_ROWS if k in self.models}
        return ClassicAudit(n_groups=self.n_groups, n_rows=self.n_rows, case=self.case or "svpi",
                            l=self.l, models=models)

    def finish(self, *, passes: int, skipped: Mapping[str, str] | None = None) -> "StreamAudit":
        """Return the :class:`StreamAudit` of the folded groups.

        ``passes``: how many passes over the input the engine made; ``skipped``: the models
        it left out, with the reason (the state's own skipped models are added).
        """
        return StreamAudit(classic=self.classic_audit() if self.classic else None,
                           skyline=self.skyline_result(), ck_safety=self.ck_result(),
                           n_groups=self.n_groups, n_rows=self.n_rows, passes=passes,
                           skipped={**self.skipped, **dict(skipped or {})},
                           models=self.declared_results())

    def ck_result(self):
        """Return the :class:`fastpriv.ck_safety.CkAudit` (None without ``k``)."""
        return None if self.ck is None else self.ck.result()

    def skyline_result(self):
        """Return the :class:`fastpriv.skyline.SkylineCheck` (None without skylines).

        Points are in the order of :func:`fastpriv.skyline.check` on the whole release:
        the σ named in the skylines first, then every other σ in label order — whatever
        order the partial states were merged in.
        """
        from .skyline import SkylineCheck

        if self.sky is None:
            return None
        res = self.sky.result()
        explicit = self.sky._explicit
        head = [p for p in res.points if p.sigma in explicit]
        tail = sorted((p for p in res.points if p.sigma not in explicit),
                      key=lambda p: LabelKey(p.sigma))    # stable: per-σ order kept
        return SkylineCheck(points=tuple(head + tail), case=res.case, n_groups=res.n_groups)


def _order_rank(values: list, order: Sequence[Any] | None) -> np.ndarray:
    if order is None:
        return np.arange(len(values))
    order = list(order)
    pos = {v: i for i, v in enumerate(order)}
    missing = [v for v in values if v not in pos]
    if missing:
        raise InputError(f"order: values {missing[:5]} are not in the order")
    ranks = np.array([pos[v] for v in values], dtype=np.int64)
    return np.argsort(np.argsort(ranks))


def declared_folds(options: Mapping[str, Any], *, q: bool) -> tuple[list[str], dict]:
    """Return the registry models to fold and the skipped ones with the reason.

    A model is folded when it declares a ``per_group`` statistic (``worse``, ``needs_q``:
    :class:`fastpriv.registry.Model`), every option it declares is given in ``options``
    (giving them asks for the model) and, when it ``needs_q``, Q is known (``q``); a model
    asked for without Q is skipped, with the reason.
    """
    from .registry import MODELS

    run, skipped = [], {}
    for m in MODELS:
        if m.per_group is None:
            continue
        if any(options.get(o.name) is None for o in m.options):
            continue
        if m.needs_q and not q:
            skipped[m.name] = "needs the distribution of the whole table (q)"
        else:
            run.append(m.name)
    return run, skipped


def needs_q(classic: bool, options: Mapping[str, Any] | None) -> bool:
    """Whether an audit must know Q: the classical models or a folded model need it."""
    if classic:
        return True
    run, _ = declared_folds(dict(options or {}), q=True)
    from .registry import model

    return any(model(name).needs_q for name in run)


def q_of_totals(parts: Sequence[tuple[Sequence[Any], Sequence[int]]]) -> tuple[list, list]:
    """Return the whole table's distribution Q from partial value totals: ``(values, q)``.

    ``parts`` are ``(values, totals)`` pairs of disjoint parts of the table (partitions,
    files), as :func:`fastpriv.streaming.value_distribution` gives them; the totals of a
    value are added (exact ints), the values sorted in label order, and ``q`` is
    ``totals / n`` — the Q of :func:`fastpriv.classic.t_closeness` on the whole release.
    """
    sums: dict = {}
    for values, totals in parts:
        for v, t in zip(values, totals, strict=True):
            sums[v] = sums.get(v, 0) + int(t)
    n = sum(sums.values())
    if n == 0:
        raise InputError("data is empty: a release needs at least one row")
    values = sorted(sums, key=LabelKey)
    return values, [sums[v] / n for v in values]


def q_param(q: Any) -> tuple[list | None, list | None, dict]:
    """Read ``q=`` given as a mapping or None: ``(values, q, skipped)``.

    A mapping ``{label: probability}`` is Q itself; None leaves out the models that need
    it, each named in ``skipped`` with the reason. Anything else raises InputError.
    """
    if isinstance(q, Mapping):
        values = sorted(q, key=LabelKey)
        return values, [float(q[v]) for v in values], {}
    if q is None:
        return None, None, {key: "q=None: the distribution of the whole table was not "
                                 "computed" for key in sorted(NEEDS_Q)}
    raise InputError(f"q must be 'compute', a mapping label -> probability or None; "
                     f"got {q!r}")


@dataclass(frozen=True)
class StreamAudit:
    """Result of :func:`clustered_audit` / :func:`audit_stream`.

    Attributes
    ----------
    classic : ClassicAudit or None
        Classical models (the models needing Q are absent when Q was unavailable; see
        ``skipped``).
    skyline : SkylineCheck or None
    ck_safety : CkAudit or None
        (c,k)-safety when ``k`` was given (a fold: :class:`~fastpriv.folds.CkState`).
    n_groups, n_rows : int
    passes : int
        Passes over the input (2 when Q was computed by a first pass).
    skipped : dict
        Model key -> reason, for models that could not be evaluated.
    release : Release or None
        The release (:func:`audit_stream` only; clustered streaming keeps no release).
    models : dict
        The registry's models folded by their declared per-group statistic (``options=``):
        name -> ``{title, value, worst_group, worst_label}``.

    """

    classic: Any
    skyline: Any
    ck_safety: Any
    n_groups: int
    n_rows: int
    passes: int
    skipped: dict = field(default_factory=dict)
    release: Any = None
    models: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"n_groups": self.n_groups, "n_rows": self.n_rows, "passes": self.passes,
                "classic": None if self.classic is None else self.classic.to_dict(),
                "skyline": None if self.skyline is None else self.skyline.to_dict(),
                "ck_safety": None if self.ck_safety is None else self.ck_safety.to_dict(),
                "models": {k: dict(v) for k, v in self.models.items()},
                "skipped": dict(self.skipped)}


#: the column of :class:`CkState`'s kept counts that holds each group's index in the whole
#: release (null when not known)
_INDEX = "__fastpriv_group_index__"


class CkState:
    """(c,k)-safety as a fold: the few groups its answer can depend on.

    (c,k)-safety is not a min over groups: the worst case combines up to k + 1 buckets
    (MINIMIZE2's knapsack, Martin et al. §4). But only a bounded set of buckets can take
    part — :func:`fastpriv.ck_safety.needed_groups`: the candidate buckets of each
    knapsack role, the worst bucket of the negation scan at every k' ≤ k, the least diverse
    bucket — and a bucket not needed by a part is not needed by the whole. So the state
    keeps the (group, value, count) entries of those groups with each group's index in the
    whole release when known, :meth:`merge` selects again on the union, and
    :meth:`result` audits the kept groups: the values, curves and witness labels of
    ``ck_safety.audit`` on the whole release (group indices too when every part knew its
    offset; None otherwise). Its size is O(k³) groups, whatever the number of groups.

    Parameters
    ----------
    k : int
        Pieces of background knowledge, as in :func:`fastpriv.ck_safety.audit`.

    """

    def __init__(self, k: int) -> None:
        self.k = check_int(k, "k", minimum=0)
        self.counts: Any = None          # pyarrow.Table: keys…, value, count, _INDEX
        self.keys: list[str] | None = None

    def update(self, rel: Release, *, offset: int | None = None) -> "CkState":
        """Fold the complete groups of ``rel`` (``offset``: its first group's global index)."""
        from .ck_safety import needed_groups

        if rel.n_groups == 0:
            return self
        if rel.case != "svpi":
            raise InputError("(c,k)-safety needs an SVPI release (Martin et al.)")
        sel = needed_groups(rel, k=self.k)
        self._add(_restricted(rel, sel, offset))
        return self

    def merge(self, other: "CkState") -> "CkState":
        """Return the state of the union of two disjoint sets of groups."""
        if not isinstance(other, CkState) or other.k != self.k:
            raise InputError("other: (c,k) states with different k cannot be merged")
        out = CkState(self.k)
        for part in (self, other):
            if part.counts is not None:
                out._add(part.counts, keys=part.keys)
        return out

    def _add(self, counts: Any, keys: list[str] | None = None) -> None:
        import pyarrow as pa

        from .ck_safety import needed_groups

        keys = keys if keys is not None else [c for c in counts.column_names
                                              if c not in ("value", "count", _INDEX)]
        if self.counts is None:
            self.counts, self.keys = counts, keys
            return
        if keys != self.keys:
            raise InputError(f"cannot fold groups keyed {keys} into groups keyed {self.keys}")
        both = pa.concat_tables([self.counts, counts], promote_options="permissive")
        rel = _kept_release(both, self.keys)
        self.counts = _restricted(rel, needed_groups(rel, k=self.k), None,
                                  index=_index_of(rel, both, self.keys))

    def result(self) -> Any:
        """Return :func:`fastpriv.ck_safety.audit` of the whole release, from the kept groups."""
        from .ck_safety import audit

        if self.counts is None:
            raise InputError("no group was folded into this state")
        rel = _kept_release(self.counts, self.keys)
        return _reindexed(audit(rel, k=self.k), _index_of(rel, self.counts, self.keys))


def _kept_release(counts: Any, keys: list[str]) -> Release:
    return Release.from_counts(counts, group=keys, sensitive="value", count="count",
                               nulls="value")


def _index_of(rel: Release, counts: Any, keys: list[str]) -> list:
    """Return the global index of each group of ``rel`` (the counts' index column)."""
    col = counts.column(_INDEX).to_pylist()
    labels = counts.select(keys).to_pylist()
    by = {}
    for row, i in zip(labels, col, strict=True):
        lab = tuple(row.values())
        by[lab[0] if len(keys) == 1 else lab] = i
    return [by[lab] for lab in rel.group_labels]


def _restricted(rel: Release, groups: np.ndarray, offset: int | None,
                index: list | None = None) -> Any:
    """Return the (group, value, count) entries of ``groups`` of ``rel``, with global indices."""
    import pyarrow as pa

    table = rel.to_counts()
    entry = rel.entry_group
    take = np.flatnonzero(np.isin(entry, groups))
    table = table.take(pa.array(take))
    if index is not None:
        glob = [index[g] for g in entry[take]]
    elif offset is not None:
        glob = (entry[take] + offset).tolist()
    else:
        glob = [None] * take.size
    return table.append_column(_INDEX, pa.array(glob, pa.int64()))


def _reindexed(res: Any, index: list) -> Any:
    """``res`` (a CkAudit of the kept groups) with group indices of the whole release."""
    from dataclasses import replace

    def atom(a: Any) -> Any:
        return replace(a, group=index[a.group])

    def disclosure(d: Any) -> Any:
        w = d.witness
        w = replace(w, consequent=atom(w.consequent),
                    antecedents=tuple(atom(a) for a in w.antecedents),
                    groups=tuple(index[g] for g in w.groups))
        return replace(d, witness=w)

    return replace(res, implications=disclosure(res.implications),
                   negations=disclosure(res.negations))
