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

from ._threads import current_threads
from ._validation import check_choice, check_int, check_release, kernel_array
from .errors import InputError
from .release import Release

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
    "Violations",
    "ClassicAudit",
]

#: Model names accepted by :func:`per_group` and :func:`violations`.
MODELS = ("k", "alpha", "distinct_l", "entropy_l", "recursive_c", "t", "beta", "delta")

# For each model: does a *larger* per-group value mean *less* private?
_WORSE_IF_LARGER = {"k": False, "alpha": True, "distinct_l": False, "entropy_l": False,
                    "recursive_c": True, "t": True, "beta": True, "delta": True}


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


def per_group(rel: Release, model: str, *, l: int | None = None, ordered: bool = False,
              order: Sequence[Any] | None = None) -> np.ndarray:
    """Return the model's parameter for every group (float64 array, group order).

    Parameters
    ----------
    rel : Release
        The release to measure.
    model : str
        One of :data:`MODELS`: ``"k"`` (n_g), ``"alpha"`` (max_x #x_g / n_g),
        ``"distinct_l"``, ``"entropy_l"`` (exp H_g), ``"recursive_c"`` (needs ``l``),
        ``"t"`` (EMD to the whole table; ``ordered``/``order`` for ordered values),
        ``"beta"``, ``"delta"``.
    l : int, optional
        The ℓ of recursive (c,ℓ)-diversity; required for ``"recursive_c"``.
    ordered : bool
        For ``"t"``: use the ordered ground distance over the values in sorted order.
    order : sequence, optional
        For ``"t"``: an explicit value order (list of labels) for the ordered distance.

    """
    from ._kernels import classic as K

    rel = check_release(rel, "rel")
    check_choice(model, "model", MODELS)
    indptr, codes, counts = _arrays(rel)
    if model == "k":
        return rel.sizes.astype(np.float64)
    if model == "alpha":
        top = np.zeros(rel.n_groups)
        has = rel.distinct > 0
        top[has] = rel.counts[rel.indptr[:-1][has]]
        return top / rel.sizes
    if model == "distinct_l":
        return rel.distinct.astype(np.float64)
    if model == "entropy_l":
        return np.exp(K.group_entropy(indptr, counts))
    if model == "recursive_c":
        if l is None:
            raise InputError("model 'recursive_c' needs l")
        l = check_int(l, "l", minimum=1)
        return K.recursive_ratio(indptr, counts, l)
    q = _global_distribution(rel)
    if model == "t":
        if ordered or order is not None:
            return K.emd_ordered(indptr, codes, counts, q, _order_rank(rel, order))
        return K.emd_equal(indptr, codes, counts, q)
    beta, delta = K.likeness(indptr, codes, counts, q)
    return beta if model == "beta" else delta


def _worst(rel: Release, model: str, **kw: Any) -> tuple[float, int]:
    vals = per_group(rel, model, **kw)
    g = int(np.argmax(vals) if _WORSE_IF_LARGER[model] else np.argmin(vals))
    return float(vals[g]), g


def k_anonymity(rel: Release) -> int:
    """Return k = min_g n_g: every group holds at least k individuals."""
    return int(check_release(rel, "rel").sizes.min())


def alpha_k_anonymity(rel: Release) -> tuple[float, int]:
    """(α, k): α = max_g max_x #x_g / n_g, k = min_g n_g."""
    return _worst(rel, "alpha")[0], k_anonymity(rel)


def l_diversity(rel: Release) -> int:
    """Distinct ℓ-diversity: ℓ = min_g (number of distinct sensitive values in g)."""
    return int(check_release(rel, "rel").distinct.min())


def entropy_l_diversity(rel: Release) -> float:
    """Entropy ℓ-diversity: ℓ = exp(min_g H_g), H_g = −Σ_x p_x log p_x."""
    return _worst(rel, "entropy_l")[0]


def recursive_cl_diversity(rel: Release, l: int) -> float:
    """Recursive (c,ℓ)-diversity: c*(ℓ) = max_g r_1 / (r_ℓ + … + r_m).

    The release is (c,ℓ)-diverse for every c > c* (r_1 < c·(r_ℓ + … + r_m) in every group);
    ``inf`` when some group has fewer than ℓ distinct values.
    """
    return _worst(rel, "recursive_c", l=l)[0]


def t_closeness(rel: Release, ordered: bool = False,
                order: Sequence[Any] | None = None) -> float:
    """Return t = max_g EMD(P_g, Q), Q the distribution of the whole release.

    Equal ground distance: EMD = ½ Σ_x |P_g(x) − Q(x)|. With ``ordered=True`` (values in
    sorted order) or an explicit ``order`` (list of labels): EMD = (1/(m−1)) Σ_i |Σ_{j≤i}
    (P_g(j) − Q(j))|.
    """
    return _worst(rel, "t", ordered=ordered, order=order)[0]


def beta_likeness(rel: Release) -> float:
    """Return basic β-likeness: β = max_g max_x (P_g(x) − Q(x)) / Q(x)."""
    return _worst(rel, "beta")[0]


def delta_disclosure(rel: Release) -> float:
    """δ-disclosure: δ = max_g max_{x∈g} |log(P_g(x)/Q(x))| (values present in g)."""
    return _worst(rel, "delta")[0]


@dataclass(frozen=True)
class Violations:
    """Groups that fail ``model`` at ``threshold``.

    Attributes
    ----------
    groups : numpy.ndarray
        Group indices, worst first.
    labels : list
        The groups' keys.
    values : numpy.ndarray
        The per-group parameter of each violating group.

    """

    model: str
    threshold: float
    groups: np.ndarray
    labels: list
    values: np.ndarray

    def __len__(self) -> int:
        return int(self.groups.size)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"model": self.model, "threshold": self.threshold, "count": len(self),
                "groups": self.groups.tolist(), "labels": self.labels,
                "values": self.values.tolist()}


def violations(rel: Release, model: str, threshold: float, **params: Any) -> Violations:
    """Return the groups failing the model's threshold, worst first.

    A group fails when its parameter is below the threshold for ``k``, ``distinct_l`` and
    ``entropy_l``; above it for ``alpha``, ``t``, ``beta``, ``delta``; and, for
    ``recursive_c`` (needs ``l=``), when r_1 ≥ c·(r_ℓ + … + r_m), i.e. ratio ≥ c.
    """
    vals = per_group(rel, model, **params)
    larger = _WORSE_IF_LARGER[model]
    if model == "recursive_c":
        bad = vals >= threshold
    elif larger:
        bad = vals > threshold
    else:
        bad = vals < threshold
    idx = np.flatnonzero(bad)
    order = np.argsort(-vals[idx] if larger else vals[idx], kind="stable")
    idx = idx[order]
    labels = rel.labels_of(idx)
    return Violations(model, float(threshold), idx, labels, vals[idx])


@dataclass(frozen=True)
class ClassicAudit:
    """All classical models of one release, with the worst group for each.

    ``models`` maps a model key to ``{"value": …, "worst_group": index, "worst_label": …}``.
    The keys follow pycanon's report vocabulary where one exists.
    """

    n_groups: int
    n_rows: int
    case: str
    l: int
    models: dict[str, dict[str, Any]] = field(default_factory=dict)

    def value(self, key: str) -> Any:
        """Achieved parameter of one model."""
        return self.models[key]["value"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``inf`` stays a float; :func:`fastpriv._io.to_jsonable`)."""
        return {"n_groups": self.n_groups, "n_rows": self.n_rows, "case": self.case,
                "l": self.l, "models": self.models}


#: ``audit`` runs the fused kernel on every thread from this many groups on
_PARALLEL_MIN_GROUPS = 65_536

_AUDIT_ROWS = (
    ("k_anonymity", "k", "k-anonymity (k)", {}),
    ("alpha_k_anonymity", "alpha", "(α,k)-anonymity (α)", {}),
    ("l_diversity", "distinct_l", "distinct ℓ-diversity (ℓ)", {}),
    ("entropy_l_diversity", "entropy_l", "entropy ℓ-diversity (ℓ)", {}),
    ("c_l_diversity", "recursive_c", "recursive (c,ℓ)-diversity (c*)", None),
    ("t_closeness", "t", "t-closeness, equal distance (t)", {}),
    ("t_closeness_ordered", "t", "t-closeness, ordered (t)", {"ordered": True}),
    ("basic_beta_likeness", "beta", "basic β-likeness (β)", {}),
    ("delta_disclosure", "delta", "δ-disclosure (δ)", {}),
)


def audit(rel: Release, *, l: int = 2, order: Sequence[Any] | None = None) -> ClassicAudit:
    """Evaluate every classical model (``l`` for recursive (c,ℓ)-diversity).

    The per-group kernels run fused (:func:`fastpriv._kernels.classic.audit_columns`): the
    profile is read once for all models, with the same per-group formulas as
    :func:`per_group` — on every thread of the caller's Numba setting (see
    :mod:`fastpriv._threads`) from 65,536 groups on (identical results).
    """
    from ._kernels import classic as K

    rel = check_release(rel, "rel")
    l = check_int(l, "l", minimum=1)
    indptr, codes, counts = _arrays(rel)
    args = (indptr, codes, counts, _global_distribution(rel), _order_rank(rel, order), l)
    threads = current_threads()
    if threads > 1 and rel.n_groups >= _PARALLEL_MIN_GROUPS:
        cols = K.audit_columns_parallel(*args, 4 * threads)
    else:
        cols = K.audit_columns(*args)
    per_model = {
        "k": lambda kw: rel.sizes.astype(np.float64),
        "alpha": lambda kw: per_group(rel, "alpha"),
        "distinct_l": lambda kw: rel.distinct.astype(np.float64),
        "entropy_l": lambda kw: np.exp(cols[:, K.ENTROPY]),
        "recursive_c": lambda kw: cols[:, K.RECURSIVE],
        "t": lambda kw: cols[:, K.EMD_ORDERED if kw.get("ordered") else K.EMD_EQUAL],
        "beta": lambda kw: cols[:, K.BETA],
        "delta": lambda kw: cols[:, K.DELTA],
    }
    models: dict[str, dict[str, Any]] = {}
    for key, model, title, params in _AUDIT_ROWS:
        vals = per_model[model]({} if params is None else params)
        g = int(np.argmax(vals) if _WORSE_IF_LARGER[model] else np.argmin(vals))
        value = float(vals[g])
        if model in ("k", "distinct_l"):
            value = int(value)
        models[key] = {"title": title, "value": value, "worst_group": g,
                       "worst_label": rel.group_label(g)}
    models["k_anonymity"]["value"] = int(rel.sizes.min())
    return ClassicAudit(n_groups=rel.n_groups, n_rows=rel.n_rows, case=rel.case, l=l,
                        models=models)
