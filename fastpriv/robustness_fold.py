"""r-robustness as a fold over groups: summaries of complete groups that merge.

The posteriors of r-robustness (:func:`fastpriv.robustness.audit`, Wong et al.) in one
group depend only on that group's rows and on the adversary's knowledge — the distributions
p(s : x) of the QI signatures, counted over the whole table. So an engine audits in two
passes: the first counts the distinct (QI, sensitive) cells (their number depends on the QI
domain, not on the groups) and derives the knowledge from them
(:meth:`fastpriv.knowledge.Knowledge.derive`, equal to the one derived from every row); the
second audits each set of complete groups with that knowledge where the groups live
(:func:`audit_part`) and keeps a :class:`RobustnessSummary`: the largest posterior and its
tuple, the counts (problematic tuples, groups certified by the Δ bound, …), the
``max_items`` highest problematic posteriors and the first undefined ones. Summaries of
disjoint groups merge (:meth:`RobustnessSummary.merge`) into the summary of the whole
audit — :meth:`RobustnessSummary.from_audit` of the in-memory audit — exactly: a group's
posteriors are computed from the same rows, in the same order, with the same knowledge.

A tuple is named by its group and QI values, not by a row number: the rows of a group are
numbered nowhere but in the process that holds the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._labels import FieldsKey, label_less
from .errors import InputError, InputTypeError
from .results import Result, Witness, json_safe

__all__ = ["RobustnessSummary", "TupleWitness", "audit_part", "derive_knowledge", "prepare"]

#: options of :func:`fastpriv.robustness.audit` the engines pass on to every part
AUDIT_OPTIONS = ("model", "tol", "max_states", "on_large", "chunk_entries", "max_seconds")
#: counts of groups, added across parts (the keys of ``RobustnessAudit.to_dict()["groups"]``)
GROUP_COUNTS = ("certified_by_delta", "exact_posterior_needed", "no_sensitive_value",
                "delta_condition_holds", "certified_violations", "over_threshold")


def _problematic_key(e: dict) -> FieldsKey:
    return FieldsKey((-e["posterior"], e["group"], tuple(e["attribute_set"]), e["value"],
                 tuple(e["signature"].values())))


def _undefined_key(e: dict) -> FieldsKey:
    return FieldsKey((e["group"], tuple(e["attribute_set"] or ()), e["value"], e["reason"]))


def _at_least_kth(p: Any, k: int) -> Any:
    """Positions of the posteriors at least the k-th largest (ties included): the candidates.

    Only they can be among the ``k`` highest; the others are not named at all.
    """
    import numpy as np

    if p.size <= k:
        return np.arange(p.size)
    kth = -np.partition(-p, k - 1)[k - 1]
    return np.flatnonzero(p >= kth)


def _first(entries: list, key: Any, n: int) -> tuple:
    return tuple(sorted(entries, key=key)[:n])


@dataclass(frozen=True, eq=False)
class TupleWitness(Witness):
    """The worst tuple of a :class:`RobustnessSummary`, named by group and QI values.

    People of ``group`` with ``signature`` (their values on ``attribute_set``) have
    ``value`` with probability ``posterior``; ``n_x`` of the group's ``group_size`` have it.
    """

    group: Any
    attribute_set: tuple
    signature: dict
    value: Any
    posterior: float
    n_x: int
    group_size: int

    def summary(self) -> str:
        """One line: the group, the signature, the value and its posterior."""
        sig = ", ".join(f"{a}={v}" for a, v in self.signature.items())
        return (f"in group {self.group!r}, people with {sig} have {self.value!r} with "
                f"p = {self.posterior:.4g} ({self.n_x} of the group's {self.group_size})")


@dataclass(frozen=True, eq=False)
class RobustnessSummary(Result):
    """The mergeable summary of an r-robustness audit (see the module notes).

    Attributes
    ----------
    value : float
        Maximum posterior p(t : x) over tuples, attribute sets and tested values.
    witness : TupleWitness or None
        Where it is reached (the first group in key order among equal maxima, as in
        memory).
    complete : bool
        Every posterior could be computed.
    n_rows, n_groups, n_problematic, n_problematic_rows : int
        Individuals and groups audited; (tuple, set, value) triples and individuals with
        p > 1/r.
    groups : dict
        The group counts of :meth:`fastpriv.robustness.RobustnessAudit.to_dict`.
    problematic : tuple of dict
        The ``max_items`` highest problematic posteriors (group, attribute set, signature,
        value, posterior), ties in key order.
    n_undefined, undefined :
        Undefined posteriors: how many, and the first ``max_items`` in key order.
    r, threshold, tol, model, attribute_sets, sensitive_values, knowledge :
        As in :class:`~fastpriv.robustness.RobustnessAudit`.

    """

    r: float
    threshold: float
    tol: float
    model: str
    attribute_sets: tuple
    sensitive_values: tuple
    knowledge: dict
    value: float
    witness: TupleWitness | None
    complete: bool
    n_rows: int
    n_groups: int
    n_problematic: int
    n_problematic_rows: int
    groups: dict
    problematic: tuple = field(repr=False)
    n_undefined: int
    undefined: tuple = field(repr=False)
    max_items: int = 100

    @property
    def robust(self) -> bool:
        """``value <= 1/r`` (within ``tol``) and every posterior could be computed."""
        return bool(self.complete and self.value <= self.threshold * (1 + self.tol))

    @property
    def params(self) -> dict:
        """The parameters of the audit."""
        return {"r": self.r, "tol": self.tol, "model": self.model,
                "attribute_sets": [list(a) for a in self.attribute_sets],
                "sensitive_values": list(self.sensitive_values), "knowledge": self.knowledge}

    @classmethod
    def from_audit(cls, audit: Any, table: Any, *, group: Sequence[str],
                   max_items: int = 100) -> "RobustnessSummary":
        """Summarize an in-memory :class:`~fastpriv.robustness.RobustnessAudit` of ``table``.

        ``table`` is the table audited (its rows are the audit's row numbers) and ``group``
        its group columns: they name each problematic tuple by group and QI values.
        """
        sets = [list(a) for a in audit.attribute_sets]
        d = audit.to_dict(max_items=0)
        cols: dict[str, list] = {}

        def label(c: str, row: int) -> Any:
            if c not in cols:
                cols[c] = table.column(c).to_pylist()
            return cols[c][row]

        def group_of(row: int) -> Any:
            labels = tuple(label(c, row) for c in group)
            return labels[0] if len(labels) == 1 else labels

        entries = []
        keep = _at_least_kth(audit.problematic_posteriors, max_items)
        for row, a, x, p in zip(audit.problematic_rows[keep].tolist(),
                                audit.problematic_sets[keep].tolist(),
                                audit.problematic_values[keep].tolist(),
                                audit.problematic_posteriors[keep].tolist(), strict=True):
            entries.append({"group": group_of(row), "attribute_set": sets[a],
                            "signature": {c: label(c, row) for c in sets[a]},
                            "value": audit.values[x], "posterior": p})
        undefined = [{k: v for k, v in u.items() if k != "row"} for u in audit.undefined]
        w = audit.witness
        witness = None if w is None else TupleWitness(
            w.group, tuple(w.attribute_set), dict(zip(w.attribute_set, w.signature, strict=True)),
            w.value, w.posterior, w.n_x, w.group_size)
        return cls(audit.r, audit.threshold, audit.tol, audit.model,
                   tuple(tuple(a) for a in audit.attribute_sets), audit.sensitive_values,
                   audit.knowledge, audit.value, witness, audit.complete, d["n_rows"],
                   d["n_groups"], d["n_problematic"], d["n_problematic_rows"],
                   dict(d["groups"]), _first(entries, _problematic_key, max_items),
                   len(undefined), _first(undefined, _undefined_key, max_items), max_items)

    def merge(self, *others: "RobustnessSummary") -> "RobustnessSummary":
        """Return the summary of the union of disjoint sets of complete groups."""
        out = self
        for o in others:
            if not isinstance(o, RobustnessSummary):
                raise InputTypeError(f"merge: expected RobustnessSummary, got "
                                     f"{type(o).__name__}")
            if (o.r, o.tol, o.model, o.attribute_sets, o.max_items) != (
                    out.r, out.tol, out.model, out.attribute_sets, out.max_items):
                raise InputError("merge: the summaries are of different audits (r, tol, "
                                 "model, attribute sets or max_items differ)")
            out = RobustnessSummary(
                out.r, out.threshold, out.tol, out.model, out.attribute_sets,
                out.sensitive_values, out.knowledge, max(out.value, o.value),
                _witness(out.witness, o.witness), out.complete and o.complete,
                out.n_rows + o.n_rows, out.n_groups + o.n_groups,
                out.n_problematic + o.n_problematic,
                out.n_problematic_rows + o.n_problematic_rows,
                {k: out.groups[k] + o.groups[k] for k in GROUP_COUNTS},
                _first([*out.problematic, *o.problematic], _problematic_key, out.max_items),
                out.n_undefined + o.n_undefined,
                _first([*out.undefined, *o.undefined], _undefined_key, out.max_items),
                out.max_items)
        return out

    def to_dict(self) -> dict:
        """JSON-safe dict: the keys of ``RobustnessAudit.to_dict()`` without row numbers."""
        return json_safe({
            "model": self.model, "r": self.r, "threshold": self.threshold, "tol": self.tol,
            "value": self.value, "robust": self.robust, "complete": self.complete,
            "witness": self.witness, "params": self.params, "n_rows": self.n_rows,
            "n_groups": self.n_groups, "attribute_sets": [list(a) for a in self.attribute_sets],
            "sensitive_values": list(self.sensitive_values),
            "n_problematic": self.n_problematic, "n_problematic_rows": self.n_problematic_rows,
            "problematic": list(self.problematic), "groups": dict(self.groups),
            "n_undefined": self.n_undefined, "undefined": list(self.undefined),
            "knowledge": self.knowledge})

    def summary(self) -> str:
        """Say the verdict and the worst tuple in plain words."""
        verdict = "PASS" if self.robust else "FAIL" if self.complete else "UNDECIDED"
        line = (f"{verdict}: r-robustness at r = {self.r:g} ({self.model} model): the highest "
                f"posterior is {self.value:.4g} (1/r = {self.threshold:.4g}); "
                f"{self.n_problematic_rows:,} of {self.n_rows:,} people exceed 1/r.")
        if self.witness:
            line += f"\n  Worst case: {self.witness.summary()}."
        return line


def _witness(a: TupleWitness | None, b: TupleWitness | None) -> TupleWitness | None:
    """Return the witness of the larger posterior (equal: the first group in key order)."""
    if a is None or b is None:
        return a if b is None else b
    if b.posterior > a.posterior or (b.posterior == a.posterior
                                     and label_less(b.group, a.group)):
        return b
    return a


def derive_knowledge(data: Any, *, qi: Sequence[str], sensitive: str, count: str,
                     max_set_size: int | None = None, epsilon: float = 0.01,
                     confidence: float = 0.9, min_support: int | None = None,
                     nulls: str = "error") -> Any:
    """Derive the adversary's knowledge from the distinct (QI, sensitive) cells (pass 1).

    ``data`` are an engine's ``row_counts(..., qi=qi, group=[], sensitive=sensitive)``
    with their ``count``; the knowledge equals
    :meth:`~fastpriv.knowledge.Knowledge.derive` of every row.
    """
    from .knowledge import Knowledge

    return Knowledge.derive(data, qi=list(qi), sensitive=sensitive, weight=count,
                            max_set_size=max_set_size, epsilon=epsilon,
                            confidence=confidence, min_support=min_support, nulls=nulls)


def prepare(cells: Callable[[], Any], *, qi: Sequence[str], sensitive: str, count: str,
            r: float, knowledge: Any = None, sensitive_values: Sequence | None = None,
            max_set_size: int | None = None, epsilon: float = 0.01, confidence: float = 0.9,
            min_support: int | None = None, nulls: str = "error", max_items: int = 100,
            **options: Any) -> dict:
    """Run pass 1 (unless ``knowledge`` is given) and return the arguments of every part.

    ``cells()`` counts the distinct (QI, sensitive) cells where the data lives (an engine's
    ``row_counts(..., group=[])``, under ``nulls="drop"`` without the rows of a null
    group); it is called only to derive the knowledge. ``sensitive_values`` must be values
    of the knowledge. Returns the keyword arguments of :func:`audit_part` besides the rows
    and their columns.
    """
    from ._validation import check_int, check_r, value_codes

    unknown = sorted(set(options) - set(AUDIT_OPTIONS))
    if unknown:      # here, not as a traceback from an executor
        raise TypeError(f"robustness_audit() got unexpected keyword arguments {unknown} "
                        f"(the audit's options: {', '.join(AUDIT_OPTIONS)})")
    check_r(r)
    max_items = check_int(max_items, "max_items", minimum=1)
    if knowledge is None:
        knowledge = derive_knowledge(cells(), qi=qi, sensitive=sensitive, count=count,
                                     max_set_size=max_set_size, epsilon=epsilon,
                                     confidence=confidence, min_support=min_support,
                                     nulls=nulls)
    if sensitive_values is not None:
        value_codes(sensitive_values, list(knowledge.values))
    return {"r": r, "knowledge": knowledge, "sensitive_values": sensitive_values,
            "max_items": max_items, "nulls": nulls, **options}


def audit_part(data: Any, *, qi: Sequence[str], group: Sequence[str], sensitive: str,
               count: str, r: float, knowledge: Any, sensitive_values: Sequence | None = None,
               max_items: int = 100, **options: Any) -> RobustnessSummary | None:
    """Audit one set of complete groups into its :class:`RobustnessSummary` (pass 2).

    ``data`` are the groups' distinct rows with their ``count``, in the form of
    :func:`fastpriv.pushdown.finish_row_counts` (its row order is the one of the whole
    table's, group by group). ``knowledge`` is the whole table's
    (:func:`derive_knowledge`); ``sensitive_values`` the values tested (None: every value
    of the knowledge). ``options`` go to :func:`fastpriv.robustness.audit` (``model``,
    ``tol``, ``nulls``, ``max_states``, ``on_large``, ``chunk_entries``, ``max_seconds``).
    Returns None for no row.
    """
    from dataclasses import replace

    import pyarrow as pa

    from . import robustness
    from ._arrow import kept_rows

    rows = data
    if options.get("nulls") == "drop":          # a part may hold only rows the policy drops
        kept = kept_rows(rows, [*qi, *group, sensitive], "drop")
        if kept is not None:
            rows = rows.take(pa.array(kept))
    if rows.num_rows == 0:
        return None
    present = set(rows.column(sensitive).to_pylist())
    tested = list(knowledge.values) if sensitive_values is None else list(sensitive_values)
    res = robustness.audit(rows, qi=list(qi), group=list(group), sensitive=sensitive, r=r,
                           knowledge=knowledge, weight=count,
                           sensitive_values=[v for v in tested if v in present], **options)
    part = RobustnessSummary.from_audit(res, rows, group=list(group), max_items=max_items)
    return replace(part, sensitive_values=tuple(tested))   # the audit's, not the part's
