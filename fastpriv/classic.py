"""Classical privacy models, computed from a release's frequency profiles (baselines.md).

Each function returns the **achieved parameter** — the vocabulary of other Python
checkers — rather than a yes/no answer; :func:`violations` lists the groups that fail a
given threshold and :func:`audit` evaluates everything in one call.

========================  =====================================================
model                      achieved parameter
========================  =====================================================
k-anonymity                k = min_g n_g
(α,k)-anonymity            α = max_g max_x #x_g / n_g (with k)
distinct ℓ-diversity       ℓ = min_g (distinct values in g)
entropy ℓ-diversity        ℓ = exp(min_g H_g),  H_g = −Σ_x p_x log p_x
recursive (c,ℓ)-diversity  c*(ℓ) = max_g r_1 / (r_ℓ + … + r_m)  (diverse for c > c*)
t-closeness                t = max_g EMD(P_g, Q)  (equal or ordered ground distance)
basic β-likeness           β = max_g max_x (P_g(x) − Q(x)) / Q(x)
δ-disclosure               δ = max_g max_{x ∈ g} |log(P_g(x) / Q(x))|
========================  =====================================================

Differences from other tools, on purpose: recursive (c,ℓ)-diversity reports c* (the
release satisfies (c,ℓ) for every c > c*, strictly, as in Machanavajjhala et al.);
δ-disclosure is taken over values present in a group (as pycanon does; the strict
definition is infinite as soon as a group misses a value). For MVPI releases the
distributions are over value occurrences and k counts individuals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._data import as_release
from ._threads import current_threads
from ._validation import (
    check_at_least,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    kernel_array,
)
from .errors import InputError
from .release import Release
from .results import Result, Witness, json_safe

__all__ = [
    "k_anonymity",
    "alpha_k_anonymity",
    "l_diversity",
    "entropy_l_diversity",
    "recursive_cl_diversity",
    "t_closeness",
    "beta_likeness",
    "delta_disclosure",
    "per_group",
    "violations",
    "audit",
    "MODELS",
    "AUDIT_ROWS",
    "WORSE_IF_LARGER",
    "GroupWitness",
    "Violations",
    "ClassicAudit",
]

#: Model names accepted by :func:`per_group` and :func:`violations` — the names of the
#: functions below, and the keys of :attr:`ClassicAudit.models` (``"t_closeness_ordered"`` is
#: t-closeness with the ordered ground distance).
MODELS = ("k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity",
          "recursive_cl_diversity", "t_closeness", "t_closeness_ordered", "beta_likeness",
          "delta_disclosure")

#: For each model: does a *larger* per-group value mean *less* private?
WORSE_IF_LARGER = {"k_anonymity": False, "alpha_k_anonymity": True, "l_diversity": False,
                   "entropy_l_diversity": False, "recursive_cl_diversity": True,
                   "t_closeness": True, "t_closeness_ordered": True, "beta_likeness": True,
                   "delta_disclosure": True}

_DATA_DOC = """data : Release or table-like
        A Release, or a table read with ``sensitive=`` and ``group=``/``qi=`` (and
        ``weight=``) exactly as :meth:`Release.from_table` reads it."""


def _arrays(rel: Release) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (kernel_array(rel.indptr, np.int64), kernel_array(rel.codes, np.int32),
            kernel_array(rel.counts, np.int64))


def _global_distribution(rel: Release) -> np.ndarray:
    return kernel_array(rel.value_totals / rel.n_rows, np.float64)


def _order_rank(rel: Release, order: Sequence[Any] | None) -> np.ndarray:
    """Position of each value code in the attribute order (default: sorted labels)."""
    if order is None:
        return kernel_array(np.arange(rel.n_values), np.int64)
    order = list(order)
    if len(set(order)) != len(order):
        raise InputError("order: values must be distinct")
    pos = {v: i for i, v in enumerate(order)}
    missing = [v for v in rel.values if v not in pos]
    if missing:
        raise InputError(f"order: values {missing[:5]} of the release are not in the order")
    ranks = np.array([pos[v] for v in rel.values], dtype=np.int64)
    # compact to 0..m-1 (the order may list values absent from this release)
    return kernel_array(np.argsort(np.argsort(ranks)), np.int64)


def per_group(data: Any, model: str, *, l: int | None = None, ordered: bool = False,
              order: Sequence[Any] | None = None, **read: Any) -> np.ndarray:
    """Return the model's parameter for every group (float64 array, group order).

    Parameters
    ----------
    data : Release or table-like
        The release to measure (a table is read with the ``read`` keywords).
    model : str
        One of :data:`MODELS`: ``"k_anonymity"`` (n_g), ``"alpha_k_anonymity"``
        (max_x #x_g / n_g), ``"l_diversity"`` (distinct values), ``"entropy_l_diversity"``
        (exp H_g), ``"recursive_cl_diversity"`` (needs ``l``), ``"t_closeness"`` (EMD to the
        whole table; ``ordered``/``order`` for ordered values), ``"t_closeness_ordered"``,
        ``"beta_likeness"``, ``"delta_disclosure"``.
    l : int, optional
        The ℓ of recursive (c,ℓ)-diversity; required for ``"recursive_cl_diversity"``.
    ordered : bool
        For t-closeness: use the ordered ground distance over the values in sorted order.
    order : sequence, optional
        For t-closeness: an explicit value order (list of labels) for the ordered distance.
    **read
        ``sensitive=``, ``group=``, ``qi=``, ``weight=``, ``nulls=`` for a table
        (see :func:`fastpriv._data.as_release`).

    """
    from ._kernels import classic as K

    rel = as_release(data, **read)
    check_choice(model, "model", MODELS)
    indptr, codes, counts = _arrays(rel)
    if model == "k_anonymity":
        return rel.sizes.astype(np.float64)
    if model == "alpha_k_anonymity":
        if rel.distinct.min() > 0:   # every group has a value (a table's release): no mask
            return rel.counts[rel.indptr[:-1]] / rel.sizes
        top = np.zeros(rel.n_groups)
        has = rel.distinct > 0
        top[has] = rel.counts[rel.indptr[:-1][has]]
        return top / rel.sizes
    if model == "l_diversity":
        return rel.distinct.astype(np.float64)
    if model == "entropy_l_diversity":
        return np.exp(K.group_entropy(indptr, counts))
    if model == "recursive_cl_diversity":
        if l is None:
            raise InputError("model 'recursive_cl_diversity' needs l")
        l = check_int(l, "l", minimum=1)
        return K.recursive_ratio(indptr, counts, l)
    q = _global_distribution(rel)
    if model in ("t_closeness", "t_closeness_ordered"):
        if model == "t_closeness_ordered" or ordered or order is not None:
            return K.emd_ordered(indptr, codes, counts, q, _order_rank(rel, order))
        return K.emd_equal(indptr, codes, counts, q)
    beta, delta = K.likeness(indptr, codes, counts, q)
    return beta if model == "beta_likeness" else delta


def _worst(rel: Release, model: str, **kw: Any) -> tuple[float, int]:
    vals = per_group(rel, model, **kw)
    g = int(np.argmax(vals) if WORSE_IF_LARGER[model] else np.argmin(vals))
    return float(vals[g]), g


def k_anonymity(data: Any, **read: Any) -> int:
    """Return k = min_g n_g: every group holds at least k individuals.

    ``data`` is a Release or a table read with the ``read`` keywords (``sensitive=``,
    ``group=``/``qi=``, ``weight=``, ``nulls=``), as for every function of this module.
    """
    return int(as_release(data, **read).sizes.min())


def alpha_k_anonymity(data: Any, **read: Any) -> tuple[float, int]:
    """(α, k): α = max_g max_x #x_g / n_g, k = min_g n_g."""
    rel = as_release(data, **read)
    return _worst(rel, "alpha_k_anonymity")[0], k_anonymity(rel)


def l_diversity(data: Any, **read: Any) -> int:
    """Distinct ℓ-diversity: ℓ = min_g (number of distinct sensitive values in g)."""
    return int(as_release(data, **read).distinct.min())


def entropy_l_diversity(data: Any, **read: Any) -> float:
    """Entropy ℓ-diversity: ℓ = exp(min_g H_g), H_g = −Σ_x p_x log p_x."""
    return _worst(as_release(data, **read), "entropy_l_diversity")[0]


def recursive_cl_diversity(data: Any, *, l: int, **read: Any) -> float:
    """Recursive (c,ℓ)-diversity: c*(ℓ) = max_g r_1 / (r_ℓ + … + r_m).

    The release is (c,ℓ)-diverse for every c > c* (r_1 < c·(r_ℓ + … + r_m) in every group);
    ``inf`` when some group has fewer than ℓ distinct values.
    """
    return _worst(as_release(data, **read), "recursive_cl_diversity", l=l)[0]


def t_closeness(data: Any, *, ordered: bool = False, order: Sequence[Any] | None = None,
                **read: Any) -> float:
    """Return t = max_g EMD(P_g, Q), Q the distribution of the whole release.

    Equal ground distance: EMD = ½ Σ_x |P_g(x) − Q(x)|. With ``ordered=True`` (values in
    sorted order) or an explicit ``order`` (list of labels): EMD = (1/(m−1)) Σ_i |Σ_{j≤i}
    (P_g(j) − Q(j))|.
    """
    return _worst(as_release(data, **read), "t_closeness", ordered=ordered, order=order)[0]


def beta_likeness(data: Any, **read: Any) -> float:
    """Return basic β-likeness: β = max_g max_x (P_g(x) − Q(x)) / Q(x)."""
    return _worst(as_release(data, **read), "beta_likeness")[0]


def delta_disclosure(data: Any, **read: Any) -> float:
    """δ-disclosure: δ = max_g max_{x∈g} |log(P_g(x)/Q(x))| (values present in g)."""
    return _worst(as_release(data, **read), "delta_disclosure")[0]


@dataclass(frozen=True, eq=False)
class GroupWitness(Witness):
    """The group that realises a classical model's achieved parameter (the worst group).

    Attributes
    ----------
    model : str
        The model (one of :data:`MODELS`).
    group : int
        Group index in the release.
    label : Any
        The group's key.
    value : float
        The model's parameter in that group.

    """

    model: str
    group: int
    label: Any
    value: float

    def summary(self) -> str:
        """One line naming the group and its parameter."""
        return f"{self.model}: worst group {self.label!r} (index {self.group}) at {self.value:g}"


@dataclass(frozen=True, eq=False)
class Violations(Result):
    """Groups that fail ``model`` at ``threshold``, worst first.

    ``value`` is the number of failing groups; ``witness`` the worst one (None when none
    fails).

    Attributes
    ----------
    model : str
        The model (one of :data:`MODELS`).
    threshold : float
        The threshold tested.
    groups : numpy.ndarray
        Group indices, worst first.
    labels : list
        The groups' keys.
    values : numpy.ndarray
        The per-group parameter of each violating group.
    params : dict
        Extra model parameters (``l`` for recursive (c,ℓ)-diversity, the t-closeness order).

    """

    model: str
    threshold: float
    groups: np.ndarray
    labels: list
    values: np.ndarray
    params: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.groups.size)

    @property
    def value(self) -> int:
        """Number of failing groups."""
        return len(self)

    @property
    def witness(self) -> GroupWitness | None:
        """The worst failing group."""
        if not len(self):
            return None
        return GroupWitness(self.model, int(self.groups[0]), self.labels[0],
                            float(self.values[0]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return json_safe({"model": self.model, "threshold": self.threshold, "count": len(self),
                          "groups": self.groups, "labels": self.labels,
                          "values": self.values, "params": self.params})

    def summary(self) -> str:
        """One line: how many groups fail, and the worst."""
        if not len(self):
            return f"{self.model} at {self.threshold:g}: no group fails"
        return (f"{self.model} at {self.threshold:g}: {len(self)} group(s) fail; "
                f"worst {self.labels[0]!r} at {float(self.values[0]):g}")


def _check_model_threshold(model: str, threshold: Any) -> float:
    """Range-check a :func:`violations` threshold for ``model`` (NaN is never a threshold).

    Sizes (k, ℓ, entropy ℓ) are >= 1; α and t are in [0, 1]; β and δ are >= 0; the c of
    recursive (c,ℓ)-diversity is > 0.
    """
    name = f"threshold ({model})"
    if model in ("k_anonymity", "l_diversity", "entropy_l_diversity"):
        check_at_least(threshold, name, 1)
    elif model in ("alpha_k_anonymity", "t_closeness", "t_closeness_ordered"):
        check_probability(threshold, name)
    elif model == "recursive_cl_diversity":
        check_positive(threshold, name)
    else:
        check_nonnegative(threshold, name)
    return float(threshold)


def violations(data: Any, model: str, threshold: float, *, l: int | None = None,
               ordered: bool = False, order: Sequence[Any] | None = None,
               **read: Any) -> Violations:
    """Return the groups failing the model's threshold, worst first.

    A group fails when its parameter is below the threshold for ``k_anonymity``,
    ``l_diversity`` and ``entropy_l_diversity``; above it for ``alpha_k_anonymity``,
    t-closeness, ``beta_likeness``, ``delta_disclosure``; and, for
    ``recursive_cl_diversity`` (needs ``l=``), when r_1 ≥ c·(r_ℓ + … + r_m), i.e. ratio ≥ c.

    The threshold is range-checked (:class:`~fastpriv.InputError` naming it otherwise):
    a finite number >= 1 for k, ℓ and entropy ℓ; in [0, 1] for α and t; >= 0 for β and δ;
    > 0 for the c of recursive (c,ℓ)-diversity.
    """
    check_choice(model, "model", MODELS)
    threshold = _check_model_threshold(model, threshold)
    rel = as_release(data, **read)
    vals = per_group(rel, model, l=l, ordered=ordered, order=order)
    larger = WORSE_IF_LARGER[model]
    if model == "recursive_cl_diversity":
        bad = vals >= threshold
    elif larger:
        bad = vals > threshold
    else:
        bad = vals < threshold
    idx = np.flatnonzero(bad)
    idx = idx[np.argsort(-vals[idx] if larger else vals[idx], kind="stable")]
    params = {k: v for k, v in (("l", l), ("ordered", ordered or None),
                                ("order", None if order is None else list(order)))
              if v is not None}
    return Violations(model, float(threshold), idx, rel.labels_of(idx), vals[idx], params)


@dataclass(frozen=True, eq=False)
class ClassicAudit(Result):
    """All classical models of one release, with the worst group for each.

    ``models`` maps a model name (:data:`MODELS`) to ``{"title": …, "value": …,
    "worst_group": index, "worst_label": …}``. No single number answers an audit of eight
    models, so ``value`` is None; :meth:`achieved` gives one model's parameter and
    :meth:`witness_of` its worst group.
    """

    n_groups: int
    n_rows: int
    case: str
    l: int
    models: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def value(self) -> None:
        """None: see :meth:`achieved`."""
        return None

    @property
    def params(self) -> dict[str, Any]:
        """The parameters: ``l`` of recursive (c,ℓ)-diversity."""
        return {"l": self.l}

    @property
    def witness(self) -> None:
        """None: see :meth:`witness_of`."""
        return None

    def achieved(self, model: str) -> Any:
        """Achieved parameter of one model."""
        return self.models[model]["value"]

    def witness_of(self, model: str) -> GroupWitness:
        """Return the worst group of one model."""
        m = self.models[model]
        return GroupWitness(model, m["worst_group"], m["worst_label"], float(m["value"]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (non-finite values become None)."""
        return json_safe({"n_groups": self.n_groups, "n_rows": self.n_rows, "case": self.case,
                          "l": self.l, "models": self.models})

    def summary(self) -> str:
        """One line per model: its title and achieved parameter."""
        lines = [f"{self.n_rows} rows in {self.n_groups} groups ({self.case})"]
        lines += [f"  {m['title']}: {m['value']:g}" for m in self.models.values()]
        return "\n".join(lines)


#: ``audit`` runs the fused kernel on every thread from this many groups on
_PARALLEL_MIN_GROUPS = 65_536

#: The rows of :func:`audit`: (model name, title, per-group parameters).
AUDIT_ROWS = (
    ("k_anonymity", "k-anonymity (k)", {}),
    ("alpha_k_anonymity", "(α,k)-anonymity (α)", {}),
    ("l_diversity", "distinct ℓ-diversity (ℓ)", {}),
    ("entropy_l_diversity", "entropy ℓ-diversity (ℓ)", {}),
    ("recursive_cl_diversity", "recursive (c,ℓ)-diversity (c*)", None),
    ("t_closeness", "t-closeness, equal distance (t)", {}),
    ("t_closeness_ordered", "t-closeness, ordered (t)", {"ordered": True}),
    ("beta_likeness", "basic β-likeness (β)", {}),
    ("delta_disclosure", "δ-disclosure (δ)", {}),
)


def audit(data: Any, *, l: int = 2, order: Sequence[Any] | None = None,
          **read: Any) -> ClassicAudit:
    """Evaluate every classical model (``l`` for recursive (c,ℓ)-diversity).

    The per-group kernels run fused (:func:`fastpriv._kernels.classic.audit_worst`): the
    profile is read once for all models, with the same per-group formulas as
    :func:`per_group`, and each model's worst group is found block by block without a
    per-group array — on every thread of the caller's Numba setting (see
    :mod:`fastpriv._threads`) from 65,536 groups on (identical results).
    """
    from ._kernels import classic as K

    rel = as_release(data, **read)
    l = check_int(l, "l", minimum=1)
    indptr, codes, counts = _arrays(rel)
    args = (indptr, codes, counts, _global_distribution(rel), _order_rank(rel, order), l)
    threads = current_threads()
    row = {"entropy_l_diversity": K.ENTROPY, "recursive_cl_diversity": K.RECURSIVE,
           "t_closeness": K.EMD_EQUAL, "t_closeness_ordered": K.EMD_ORDERED,
           "beta_likeness": K.BETA, "delta_disclosure": K.DELTA}
    larger = [False] * 6
    for model, r in row.items():
        larger[r] = WORSE_IF_LARGER[model]
    worst_value, worst_group = K.audit_worst(
        *args, larger, 2 * threads if rel.n_groups >= _PARALLEL_MIN_GROUPS else 1)
    models: dict[str, dict[str, Any]] = {}
    for model, title, _ in AUDIT_ROWS:
        if model in row:
            g, value = int(worst_group[row[model]]), float(worst_value[row[model]])
        else:   # sizes and distinct counts as they are (exact integers): no float copy
            vals = {"k_anonymity": rel.sizes, "l_diversity": rel.distinct}.get(model)
            if vals is None:
                vals = per_group(rel, model)
            g = int(np.argmax(vals) if WORSE_IF_LARGER[model] else np.argmin(vals))
            value = float(vals[g])
        if model in ("k_anonymity", "l_diversity"):
            value = int(value)
        models[model] = {"title": title, "value": value, "worst_group": g,
                         "worst_label": rel.group_label(g)}
    return ClassicAudit(n_groups=rel.n_groups, n_rows=rel.n_rows, case=rel.case, l=l,
                        models=models)


def warmup() -> None:
    """Run :func:`audit` and every per-group measure of :func:`per_group` (warm-up workload).

    ``fastpriv warmup``'s workload of the classical models (the registry's
    ``warmup_workload``): the calls their documented examples do not reach, among them the
    multi-threaded scan that large releases take, called directly.
    """
    from ._kernels import classic as KC
    from .datasets import synthetic_release

    rel = synthetic_release(3000, group_size=10, n_values=6, seed=1)
    audit(rel, l=2)
    # the multi-threaded scan that releases of 65,536 groups and more take
    KC.audit_worst(*_arrays(rel), _global_distribution(rel), _order_rank(rel, None), 2,
                   [True] * 6, 2)
    for model in MODELS:
        per_group(rel, model, l=2)
    per_group(rel, "t_closeness", ordered=True)
