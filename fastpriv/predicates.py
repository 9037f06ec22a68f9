"""Privacy criteria as predicates on a :class:`~fastpriv.Release`.

One protocol for every anonymizer.

The protocol (:class:`Predicate`) is deliberately small: a callable ``pred(rel) -> bool``
with a ``name`` and a ``monotone`` flag. *Monotone* means: if a release satisfies the
criterion, every coarser release (each group a union of its groups — the partial order of
Martin et al. §3.4) satisfies it too. Lattice search (:mod:`fastpriv.anonymize.lattice`)
and Mondrian (:mod:`fastpriv.anonymize._mondrian`) rely on it; a predicate declaring
``monotone = False`` makes lattice search check every node.

Built-in criteria (subclasses of :class:`Criterion`)
----------------------------------------------------
=========================================  ============================  =====  =======
criterion                                   satisfied iff (every group)   local  kernel
=========================================  ============================  =====  =======
``KAnonymity(k)``                           n_g ≥ k                       yes    yes
``DistinctLDiversity(l)``                   ≥ ℓ distinct values           yes    yes
``EntropyLDiversity(l)``                    H_g ≥ log ℓ                   yes    yes
``RecursiveCLDiversity(c, l)``              r_1 < c (r_ℓ + … + r_m)       yes    yes
``TCloseness(t, ordered=False)``            EMD(P_g, Q) ≤ t               yes    yes
``AlphaKAnonymity(alpha, k)``               r_1/n_g ≤ α and n_g ≥ k       yes    yes
``CKSafety(c, k, "negations")``             max disclosure < c            yes    yes
``CKSafety(c, k)`` (implications)           max disclosure < c            no     —
``SkylinePoint(sigma, l, k, m, c)``         BP_σ(ℓ, k, m) < c (SVPI)      no     —
=========================================  ============================  =====  =======

*Local* criteria hold for a release iff they hold for each group; they also expose
:meth:`LocalCriterion.group_ok` (pass/fail per group, used for suppression) and a kernel
form (rows of ``kinds/iparams/fparams`` evaluated by
:func:`fastpriv._kernels.generalize.profile_ok`), which lets Mondrian test splits without
leaving compiled code. t-closeness compares each group with the distribution Q of the whole
release; the anonymizers pass the original table's Q.

ARX's re-identification risk criteria read the class sizes alone: ``HighestRisk`` is
k-anonymity with k = ⌈1/max⌉ (local); ``AverageRisk``, ``RecordsAtRisk`` and
``PopulationUniqueness`` hold or fail on the whole distribution of class sizes
(:meth:`_SizesCriterion.holds`) and, under a suppression budget, suppress the smallest
classes first until they hold on the classes kept (``suppressed_prefix``, ARX's
``RiskBasedCriterion.enforce``).

Conventions: thresholds of the worst-case models are strict (disclosure **< c**, SPEC §1);
entropy ℓ and t use a 1e-12 tolerance so exact ties (a uniform group at ℓ, EMD = t) pass.

User criteria
-------------
Any callable ``f(rel) -> bool`` works (wrap it with :class:`FunctionCriterion` to name it
or to declare it non-monotone), or subclass :class:`Criterion`::

    class MaxGroupShare(Criterion):
        name = "max-group-share"
        def __init__(self, share): self.share = share
        def __call__(self, rel): return rel.sizes.max() <= self.share * rel.n_rows

Combine criteria with ``&`` (:class:`AllOf`).
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._validation import (
    check_choice,
    check_int,
    check_probability,
    check_real,
    kernel_array,
)
from .errors import InputError, InputTypeError
from .release import SVPI, Release, check_release

__all__ = [
    "Predicate",
    "Criterion",
    "LocalCriterion",
    "KAnonymity",
    "HighestRisk",
    "AverageRisk",
    "RecordsAtRisk",
    "PopulationUniqueness",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "RecursiveCLDiversity",
    "TCloseness",
    "AlphaKAnonymity",
    "CKSafety",
    "SkylinePoint",
    "AllOf",
    "FunctionCriterion",
    "KernelSpec",
    "as_criterion",
    "criteria_from",
    "kernel_spec",
]


@runtime_checkable
class Predicate(Protocol):
    """What every anonymizer accepts: ``pred(rel) -> bool`` plus a name and monotonicity."""

    name: str
    monotone: bool

    def __call__(self, rel: Release) -> bool:  # pragma: no cover - protocol
        """Return True iff ``rel`` satisfies the predicate."""
        ...


class Criterion(ABC):
    """Base class of the built-in criteria (subclass it for your own).

    Attributes
    ----------
    name : str
        Short description, e.g. ``"k-anonymity(k=10)"``.
    monotone : bool
        Whether coarsening a satisfying release keeps it satisfying (default True).
    local : bool
        Whether the release satisfies the criterion iff every group does.

    """

    name: str = "criterion"
    monotone: bool = True
    local: bool = False

    @abstractmethod
    def __call__(self, rel: Release) -> bool:
        """Return True iff ``rel`` satisfies the criterion."""

    def value(self, rel: Release) -> Any:
        """Return the achieved parameter on ``rel`` (``None`` when the criterion has none)."""
        return None

    def params(self) -> dict[str, Any]:
        """Parameters, for JSON reports."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description."""
        return {"name": self.name, "monotone": self.monotone, "local": self.local,
                **self.params()}

    def __and__(self, other: Any) -> "AllOf":
        return AllOf(self, as_criterion(other))

    def __repr__(self) -> str:
        return f"<{self.name}>"


@dataclass(frozen=True)
class KernelSpec:
    """A conjunction of local criteria in kernel form (see ``_kernels/generalize.py``)."""

    kinds: np.ndarray
    iparams: np.ndarray
    fparams: np.ndarray
    q: np.ndarray
    qrank: np.ndarray
    inv_q: np.ndarray


class LocalCriterion(Criterion):
    """A group-local criterion evaluated by the compiled per-group kernel."""

    local = True
    #: ``True`` when the union of passing groups always passes and every group that passes
    #: keeps passing when merged with anything (k-anonymity, distinct ℓ): suppression of
    #: failing groups then stays monotone.
    union_monotone = False
    order: Sequence[Any] | None = None

    @abstractmethod
    def rows(self) -> list[tuple[int, int, Any]]:
        """Return the kernel rows ``(kind, int parameter, real parameter)``.

        The real parameter of thresholds (c, α) may be a ``Fraction`` and is compared exactly.
        """

    def group_ok(self, rel: Release, q: np.ndarray | None = None) -> np.ndarray:
        """Boolean array: does each group pass? ``q`` = reference distribution by code."""
        from ._kernels.generalize import groups_ok

        rel = check_release(rel, "rel")
        if q is None:
            q = rel.value_totals / max(rel.n_rows, 1)
        spec = kernel_spec(self, rel.values, q)
        ok = groups_ok(kernel_array(rel.indptr, np.int64), kernel_array(rel.codes, np.int32),
                       kernel_array(rel.counts, np.int64), kernel_array(rel.sizes, np.int64),
                       spec.kinds, spec.iparams, spec.fparams, spec.q, spec.qrank, spec.inv_q)
        return ok.astype(bool)

    def __call__(self, rel: Release) -> bool:
        """Return True iff every group of ``rel`` passes."""
        return bool(self.group_ok(rel).all())


def kernel_spec(criterion: LocalCriterion, values: Sequence[Any], q: Any) -> KernelSpec:
    """Build the kernel arrays of a local criterion for a sensitive domain.

    ``values`` is the sensitive domain (code order), ``q`` the reference distribution (by
    code).
    """
    rows = criterion.rows()
    kinds = kernel_array([r[0] for r in rows], np.int64)
    ip = np.zeros((len(rows), 3), dtype=np.int64)
    for i, (kind, iparam, thr) in enumerate(rows):
        ip[i, 0] = iparam
        if kind in _RATIO_KINDS:
            ip[i, 1], ip[i, 2] = _ratio(thr)
    ip = kernel_array(ip, np.int64)
    fp = kernel_array([float(r[2]) for r in rows], np.float64)
    qa = kernel_array(np.asarray(q, dtype=np.float64).reshape(-1), np.float64)
    if qa.shape[0] != len(values):
        raise ValueError(f"internal: reference distribution has {qa.shape[0]} entries for "
                         f"{len(values)} values")
    rank = _order_rank(values, _orders(criterion))
    inv = np.empty_like(qa)
    inv[rank] = qa
    return KernelSpec(kinds, ip, fp, qa, kernel_array(rank, np.int64),
                      kernel_array(inv, np.float64))


_RATIO_KINDS = (3, 6, 7)
_RATIO_MAX = 1 << 30


def _ratio(x: Any) -> tuple[int, int]:
    """Return ``x`` as an exact ratio (num, den), or (0, 0) when too large for the kernel.

    A float is read as its shortest decimal, as :func:`fastpriv.ck_safety.is_safe` does.
    """
    from decimal import Decimal
    from fractions import Fraction

    if isinstance(x, Fraction):
        f = x
    elif isinstance(x, numbers.Integral):
        f = Fraction(int(x))
    elif isinstance(x, Decimal):
        f = Fraction(x)
    else:
        f = Fraction(repr(float(x)))
    if f.denominator > _RATIO_MAX or abs(f.numerator) > _RATIO_MAX:
        return 0, 0
    return f.numerator, f.denominator


def _orders(criterion: Criterion) -> Sequence[Any] | None:
    crits = criterion.parts if isinstance(criterion, AllOf) else (criterion,)
    orders = [c.order for c in crits if isinstance(c, TCloseness) and c.order is not None]
    if len({tuple(o) for o in orders}) > 1:
        raise InputError("predicate: several ordered t-closeness criteria with different "
                         "orders cannot be combined")
    return orders[0] if orders else None


def _order_rank(values: Sequence[Any], order: Sequence[Any] | None) -> np.ndarray:
    """Rank (0..m-1) of each value code in the attribute order (default: sorted labels)."""
    m = len(values)
    if order is None:
        return np.arange(m, dtype=np.int64)
    pos = {v: i for i, v in enumerate(order)}
    missing = [v for v in values if v not in pos]
    if missing:
        raise InputError(f"order: sensitive values {missing[:5]} are not in the given order")
    ranks = np.array([pos[v] for v in values], dtype=np.int64)
    return np.argsort(np.argsort(ranks, kind="stable"), kind="stable").astype(np.int64)


# ---------------------------------------------------------------------- classical criteria
class KAnonymity(LocalCriterion):
    """k-anonymity: every group holds at least ``k`` individuals."""

    union_monotone = True

    def __init__(self, k: int) -> None:
        self.k = check_int(k, "k", minimum=1, maximum=MAX_CLASS_SIZE)
        self.name = f"k-anonymity(k={self.k})"

    def rows(self) -> list[tuple[int, int, float]]:
        """Return the kernel row: n_g ≥ k in every group (kind 0)."""
        return [(0, self.k, 0.0)]

    def __call__(self, rel: Release) -> bool:
        """Return True iff every group holds at least k individuals."""
        return bool(check_release(rel, "rel").sizes.min() >= self.k)

    def value(self, rel: Release) -> int:
        """Return the achieved k = min_g n_g."""
        return int(check_release(rel, "rel").sizes.min())

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"k": self.k}


#: Largest class size a criterion may require: more rows than any table has (int64-safe).
MAX_CLASS_SIZE = 2 ** 62


class HighestRisk(KAnonymity):
    """Highest prosecutor re-identification risk ≤ ``max_risk`` (ARX's risk criterion).

    The prosecutor risk of a record is 1/f, f the size of its class (El Emam & Dankar 2008;
    ARX's ``RiskModelSampleRisks``), so the highest risk is at most ``max_risk`` iff every
    class holds at least ⌈1/max_risk⌉ records: k-anonymity with that k, group-local and
    monotone (suppression and predictive tagging apply). Reads the QIs only. A bound
    ⌈1/max_risk⌉ beyond :data:`MAX_CLASS_SIZE` (no table has that many rows) is the same
    unsatisfiable criterion as that cap, so k is capped there (a tiny ``max_risk`` such as
    1e-300 never overflows the kernels' int64).
    """

    def __init__(self, max_risk: float) -> None:
        r = _real(max_risk, "max_risk", minimum=0.0, strict=True)
        if r > 1:
            raise InputError(f"max_risk must be in (0, 1], got {max_risk!r}")
        super().__init__(min(math.ceil(1.0 / r - 1e-12), MAX_CLASS_SIZE))
        self.max_risk = r
        self.name = f"highest-risk(max={r:g})"

    def value(self, rel: Release) -> float:
        """Return the highest prosecutor risk, 1 / (smallest class)."""
        return 1.0 / float(check_release(rel, "rel").sizes.min())

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"max_risk": self.max_risk, "k": self.k}


class _SizesCriterion(Criterion):
    """A criterion on the class sizes alone (the QIs; never the sensitive value).

    ARX's risk-based (sample-based) privacy models: the release holds iff the distribution of
    its class sizes meets the criterion (:meth:`holds`). With a suppression budget the
    suppressed records are out of the risk: :meth:`suppressed_prefix` is ARX's enforcement,
    which suppresses the smallest classes first until the criterion holds on the classes
    kept (``RiskBasedCriterion.enforce``).
    """

    reads_sensitive = False
    #: decided on the class-size distribution; suppression by :meth:`suppressed_prefix`
    sample_based = True
    limit: float

    def __call__(self, rel: Release) -> bool:
        """Return True iff the class sizes of ``rel`` meet the criterion."""
        return self.holds(self._sizes(rel))

    def value(self, rel: Release) -> float:
        """Return the achieved value on ``rel`` (see :meth:`value_of`)."""
        return self.value_of(self._sizes(rel))

    @abstractmethod
    def value_of(self, sizes: np.ndarray) -> float:
        """Return the achieved value on classes of these sizes (int64 array)."""

    def holds(self, sizes: np.ndarray) -> bool:
        """Return True iff classes of these sizes meet the criterion (value ≤ limit)."""
        return bool(self.value_of(sizes) <= self.limit)

    def suppressed_prefix(self, sizes: np.ndarray, budget: int, already: int = 0) -> int:
        """Return how many leading classes of ``sizes`` ARX suppresses for the criterion to hold.

        ``sizes`` are the classes still kept, in ARX's suppression order (smallest first).
        ARX's ``RiskBasedCriterion.enforce``: nothing when the criterion holds; else a binary
        search over the number ``j`` of leading classes suppressed
        (``HashGroupifyDistribution.suppressWhileNotFulfilledBinary``, every class suppressed
        counting as holding), given up once the criterion fails with more than ``budget``
        records suppressed, ``already`` of them before (then the node fails: the records
        suppressed exceed the budget). Average risk and records at risk hold more as more
        leading classes go, so the result is the smallest ``j`` at which they hold.
        """
        m = int(sizes.shape[0])
        if m == 0 or self.holds(sizes):
            return 0
        csum = np.cumsum(sizes)

        def state(j: int) -> int:   # 1 holds, 0 fails, -1 fails past the budget (abort)
            if j >= m or self.holds(sizes[j:]):
                return 1
            return -1 if already + int(csum[j - 1]) > budget else 0

        low, high = 0, m - 1
        mid = (low + high) // 2    # j = mid + 1 leading classes suppressed
        st = -1
        while low <= high:
            st = state(mid + 1)
            if st == -1:
                break
            if st == 1:
                high = mid - 1
            else:
                low = mid + 1
            mid = max((low + high) // 2, 0)   # Java's integer division: -1 / 2 == 0
        if st != -1 and mid + 1 < m and state(mid + 1) == 0:
            return mid + 2
        return mid + 1

    def _sizes(self, rel: Release) -> np.ndarray:
        return np.asarray(check_release(rel, "rel").sizes, dtype=np.int64)


class AverageRisk(_SizesCriterion):
    """Average prosecutor risk ≤ ``max_avg_risk``: (number of classes) / n (ARX).

    Monotone under generalization: merging classes never adds one. Not group-local; with a
    suppression budget the smallest classes are suppressed first (ARX's
    ``AverageReidentificationRisk``: the risk of the records kept), which stays monotone
    (``union_monotone``): a node's suppression, applied to the unions of its classes above
    it, suppresses no more records and leaves classes no smaller, and the smallest classes
    are the fewest records whose suppression lifts the average class size to 1/max.
    """

    union_monotone = True

    def __init__(self, max_avg_risk: float) -> None:
        self.limit = _real(max_avg_risk, "max_avg_risk", minimum=0.0)
        if self.limit > 1:
            raise InputError(f"max_avg_risk must be in [0, 1], got {max_avg_risk!r}")
        self.name = f"average-risk(max={self.limit:g})"

    def value_of(self, sizes: np.ndarray) -> float:
        """Return the average prosecutor risk, classes / records."""
        return float(sizes.size / sizes.sum()) if sizes.size else 0.0

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"max_avg_risk": self.limit}


class RecordsAtRisk(_SizesCriterion):
    """Share of records whose prosecutor risk 1/f exceeds ``risk_threshold`` ≤ ``max_share``.

    ARX's "records at risk". Monotone: a class only grows under generalization, so a
    record once below the threshold stays below it. With a suppression budget (the
    smallest classes suppressed first, ARX's enforcement) it is not: with threshold 0.2,
    share 0.2 and a budget of 3 records, classes of 2, 2 and 8 pass with one class of 2
    suppressed, but merged into 4 and 8 the class of 4 is still at risk and its 4 records
    exceed the budget; that search checks every node (or every node whose bound can beat
    the best, with ``objective="optimal"``).
    """

    def __init__(self, risk_threshold: float, max_share: float) -> None:
        self.threshold = _real(risk_threshold, "risk_threshold", minimum=0.0, strict=True)
        self.limit = _real(max_share, "max_records_at_risk", minimum=0.0)
        if self.threshold > 1 or self.limit > 1:
            raise InputError("risk_threshold and max_records_at_risk must be in [0, 1]")
        self.name = (f"records-at-risk(risk>{self.threshold:g}, "
                     f"max share={self.limit:g})")

    def value_of(self, sizes: np.ndarray) -> float:
        """Return the share of records in classes with 1/f > risk_threshold."""
        at = sizes[sizes * self.threshold < 1.0].sum()
        return float(at / sizes.sum()) if sizes.size else 0.0

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"risk_threshold": self.threshold, "max_records_at_risk": self.limit}


class PopulationUniqueness(_SizesCriterion):
    """Estimated population uniques / population size ≤ ``max_uniqueness`` (ARX).

    The estimate is :func:`fastpriv.risk.population_unique_estimate` of the class-size
    histogram: Dankar et al.'s rule (``model="dankar"``, ARX's default; only the model the
    rule picks is fitted) or one model (``"pitman"``, ``"zayatz"``, ``"snb"``). **Not
    monotone** (the models' estimates need not fall as classes merge): the lattice search
    checks every node, or with ``objective="optimal"`` every node whose lower bound of the
    quality measure can beat the best satisfying node found. With a suppression budget the
    estimate is of the records kept (sampling fraction kept / population), as ARX's.
    """

    monotone = False

    def __init__(self, max_uniqueness: float, population_size: float,
                 model: str = "dankar") -> None:
        self.limit = _real(max_uniqueness, "max_uniqueness", minimum=0.0)
        if self.limit > 1:
            raise InputError(f"max_uniqueness must be in [0, 1], got {max_uniqueness!r}")
        self.population_size = _people(population_size, "population")
        self.model = check_choice(model, "uniqueness_model",
                                  ("dankar", "pitman", "zayatz", "snb"))
        self.name = (f"population-uniqueness({self.model}, max={self.limit:g}, "
                     f"N={self.population_size:g})")

    def value_of(self, sizes: np.ndarray) -> float:
        """Return the estimated share of the population that is unique on the QIs."""
        from .risk import population_unique_estimate

        if self.population_size < sizes.sum():
            raise InputError(f"population: {self.population_size:g} is smaller than the "
                             f"{int(sizes.sum())} records")
        hist = np.bincount(sizes)
        size = np.flatnonzero(hist)
        est = population_unique_estimate(size, hist[size], self.population_size, self.model)
        return float("inf") if est is None else float(est) / self.population_size

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"max_uniqueness": self.limit, "population": self.population_size,
                "uniqueness_model": self.model}


class DistinctLDiversity(LocalCriterion):
    """Distinct ℓ-diversity: every group holds at least ``l`` distinct sensitive values."""

    union_monotone = True

    def __init__(self, l: int) -> None:
        self.l = check_int(l, "l", minimum=1)
        self.name = f"distinct-l-diversity(l={self.l})"

    def rows(self) -> list[tuple[int, int, float]]:
        """Return the kernel row: at least ℓ distinct values per group (kind 1)."""
        return [(1, self.l, 0.0)]

    def __call__(self, rel: Release) -> bool:
        """Return True iff every group holds at least ℓ distinct sensitive values."""
        return bool(check_release(rel, "rel").distinct.min() >= self.l)

    def value(self, rel: Release) -> int:
        """Return the achieved ℓ: the fewest distinct sensitive values of a group."""
        return int(check_release(rel, "rel").distinct.min())

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"l": self.l}


def _real(x: Any, name: str, *, minimum: float | None = None, strict: bool = False) -> float:
    v = check_real(x, name)
    if minimum is not None and (v <= minimum if strict else v < minimum):
        raise InputError(f"{name} must be {'>' if strict else '>='} {minimum}, got {x!r}")
    return v


def _people(x: Any, name: str) -> float:
    """Return a number of people: a finite whole number >= 1 (``2000.5`` is refused)."""
    v = _real(x, name, minimum=1.0)
    if not v.is_integer():
        raise InputError(f"{name} is a number of people: a whole number >= 1, got {x!r}")
    return v


class EntropyLDiversity(LocalCriterion):
    """Entropy ℓ-diversity: H_g = −Σ p log p ≥ log ℓ in every group (ℓ ≥ 1, real)."""

    def __init__(self, l: float) -> None:
        self.l = _real(l, "l", minimum=1.0)
        self.name = f"entropy-l-diversity(l={self.l:g})"

    def rows(self) -> list[tuple[int, int, float]]:
        """Return the kernel row: H_g ≥ log ℓ in every group (kind 2)."""
        return [(2, 0, self.l)]

    def value(self, rel: Release) -> float:
        """Return the achieved ℓ = exp(min_g H_g) (see ``classic.entropy_l_diversity``)."""
        from .classic import entropy_l_diversity

        return entropy_l_diversity(rel)

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"l": self.l}


class RecursiveCLDiversity(LocalCriterion):
    """Recursive (c,ℓ)-diversity: r_1 < c·(r_ℓ + … + r_m) in every group (strict)."""

    def __init__(self, c: float, l: int) -> None:
        self.c = _real(c, "c", minimum=0.0, strict=True)
        self._c_raw = c
        self.l = check_int(l, "l", minimum=1)
        self.name = f"recursive-(c,l)-diversity(c={self.c:g}, l={self.l})"

    def rows(self) -> list[tuple[int, int, float]]:
        """Return the kernel row: r_1 < c·(r_ℓ + … + r_m) per group (kind 3, c exact)."""
        return [(3, self.l, self._c_raw)]

    def value(self, rel: Release) -> float:
        """Return c*(ℓ) = max_g r_1 / (r_ℓ + … + r_m) (see ``classic.recursive_cl_diversity``)."""
        from .classic import recursive_cl_diversity

        return recursive_cl_diversity(rel, l=self.l)

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"c": self.c, "l": self.l}


class TCloseness(LocalCriterion):
    """t-closeness: EMD(P_g, Q) ≤ t in every group, Q = the whole release's distribution.

    ``ordered=True`` uses the ordered ground distance over the sorted values, or over
    ``order`` (a list of labels) when given; otherwise the equal ground distance.
    """

    def __init__(self, t: float, *, ordered: bool = False,
                 order: Sequence[Any] | None = None) -> None:
        self.t = check_probability(t, "t")
        if order is not None:
            order = list(order)
            if len(set(order)) != len(order):
                raise InputError("order: values must be distinct")
            ordered = True
        self.ordered = bool(ordered)
        self.order = order
        self.name = f"t-closeness(t={self.t:g}{', ordered' if self.ordered else ''})"

    def rows(self) -> list[tuple[int, int, float]]:
        """Return the kernel row: EMD(P_g, Q) ≤ t per group (kind 5 ordered, else 4)."""
        return [(5 if self.ordered else 4, 0, self.t)]

    def value(self, rel: Release) -> float:
        """Return the achieved t = max_g EMD(P_g, Q) (see ``classic.t_closeness``)."""
        from .classic import t_closeness

        return t_closeness(rel, ordered=self.ordered, order=self.order)

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"t": self.t, "ordered": self.ordered}


class AlphaKAnonymity(LocalCriterion):
    """(α,k)-anonymity: every value's share of its group ≤ α, and groups of ≥ k."""

    def __init__(self, alpha: float, k: int = 1) -> None:
        self.alpha = check_probability(alpha, "alpha")
        self._alpha_raw = alpha
        self.k = check_int(k, "k", minimum=1)
        self.name = f"(alpha,k)-anonymity(alpha={self.alpha:g}, k={self.k})"

    def rows(self) -> list[tuple[int, int, float]]:
        """Return the kernel rows: n_g ≥ k (kind 0) and r_1/n_g ≤ α (kind 7, α exact)."""
        return [(0, self.k, 0.0), (7, 0, self._alpha_raw)]

    def value(self, rel: Release) -> tuple[float, int]:
        """Return the achieved (α, k) (see ``classic.alpha_k_anonymity``)."""
        from .classic import alpha_k_anonymity

        return alpha_k_anonymity(rel)

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"alpha": self.alpha, "k": self.k}


# ---------------------------------------------------------------------- worst-case models
_KNOWLEDGE = ("implications", "negations")


class CKSafety(Criterion):
    """(c,k)-safety (Martin et al., ICDE 2007): max disclosure **< c** against ``k`` facts.

    The maximum disclosure is taken over adversaries holding ``k`` pieces of knowledge.

    ``knowledge_kind="implications"`` (default, basic implications — the paper's L^k_basic) is
    not group-local; ``knowledge_kind="negations"`` (k negated atoms) is:
    max_b n_b(s^0) / (n_b − Σ_{j=1..k} n_b(s^j)) < c, evaluated per group (ck_safety.md).
    Theorem 14: monotone. Returns an instance of :class:`_CKNegations` for negations.
    """

    def __new__(cls, c: Any, k: int, knowledge_kind: str = "implications", *,
                exact: bool = False):
        """Create the criterion: a group-local subclass for ``knowledge_kind="negations"``."""
        check_choice(knowledge_kind, "knowledge_kind", _KNOWLEDGE)
        if knowledge_kind == "negations" and cls is CKSafety:
            return super().__new__(_CKNegations)  # then _CKNegations.__init__ runs
        return super().__new__(cls)

    def __init__(self, c: Any, k: int, knowledge_kind: str = "implications", *,
                 exact: bool = False) -> None:
        from ._validation import check_threshold

        self.c = check_threshold(c, "c")
        self.k = check_int(k, "k", minimum=0)
        self.knowledge_kind = knowledge_kind
        self.exact = bool(exact)
        self.name = f"(c,k)-safety(c={float(self.c):g}, k={self.k}, {knowledge_kind})"

    def __call__(self, rel: Release) -> bool:
        """Return True iff the maximum disclosure against k pieces of knowledge is < c."""
        from . import ck_safety

        return bool(ck_safety.is_safe(check_release(rel, "rel"), c=self.c, k=self.k,
                                      knowledge_kind=self.knowledge_kind))

    def value(self, rel: Release) -> float:
        """Return the maximum disclosure against k pieces of knowledge."""
        from . import ck_safety

        return ck_safety.max_disclosure(check_release(rel, "rel"), k=self.k,
                                        knowledge_kind=self.knowledge_kind).value

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"c": float(self.c), "k": self.k, "knowledge_kind": self.knowledge_kind}


class _CKNegations(LocalCriterion, CKSafety):
    """(c,k)-safety against k negated atoms (group-local; see :class:`CKSafety`)."""

    def __init__(self, c: Any, k: int, knowledge_kind: str = "negations", *,
                 exact: bool = False) -> None:
        from ._validation import check_threshold

        self.c = check_threshold(c, "c")
        self.k = check_int(k, "k", minimum=0)
        self.knowledge_kind = "negations"
        self.exact = bool(exact)
        self.name = f"(c,k)-safety(c={float(self.c):g}, k={self.k}, negations)"

    def rows(self) -> list[tuple[int, int, float]]:
        return [(6, self.k, self.c)]

    def value(self, rel: Release) -> float:
        from . import ck_safety

        return ck_safety.max_disclosure(check_release(rel, "rel"), k=self.k,
                                        knowledge_kind="negations").value

    def params(self) -> dict[str, Any]:
        return {"c": float(self.c), "k": self.k, "knowledge_kind": "negations"}


class SkylinePoint(Criterion):
    """One privacy-skyline point (Chen et al., VLDB 2007): BP_σ(ℓ, k, m) < c.

    Monotone for SVPI releases only (Theorem 4; it fails for MVPI), so ``monotone`` is
    ``True`` and :meth:`__call__` refuses MVPI releases. ``sigma=None`` checks every
    sensitive value (the point holds for all values).
    """

    def __init__(self, sigma: Any, l: int, k: int, m: int, c: float) -> None:
        self.sigma = sigma
        self.l = check_int(l, "l", minimum=0)
        self.k = check_int(k, "k", minimum=0)
        self.m = check_int(m, "m", minimum=0)
        from ._validation import check_threshold

        self.c = check_threshold(c, "c")
        who = "every value" if sigma is None else repr(sigma)
        self.name = (f"skyline-point(sigma={who}, l={self.l}, k={self.k}, m={self.m}, "
                     f"c={float(self.c):g})")

    def _sigmas(self, rel: Release) -> list[Any]:
        # a value absent from the release cannot be disclosed: BP = 0 (skyline.md, C5)
        if self.sigma is None:
            return list(rel.values)
        return [self.sigma] if self.sigma in set(rel.values) else []

    def __call__(self, rel: Release) -> bool:
        """Return True iff BP_σ(ℓ, k, m) < c for the checked values (SVPI only)."""
        from . import skyline

        rel = check_release(rel, "rel")
        if rel.case != SVPI:
            raise InputError("SkylinePoint is a monotone predicate for SVPI releases only "
                             f"(Theorem 4 fails for {rel.case}); got a {rel.case} release")
        pts = {s: [(self.l, self.k, self.m, self.c)] for s in self._sigmas(rel)}
        return True if not pts else bool(skyline.check(rel, skylines=pts).safe)

    def value(self, rel: Release) -> float:
        """Return the largest BP_σ(ℓ, k, m) over the checked values (0.0 if none)."""
        from . import skyline

        return max((skyline.breach_probability(rel, sigma=s, l=self.l, k=self.k,
                                               m=self.m).value for s in self._sigmas(rel)),
                   default=0.0)

    def params(self) -> dict[str, Any]:
        """Return the parameters, for JSON reports."""
        return {"sigma": self.sigma, "l": self.l, "k": self.k, "m": self.m,
                "c": float(self.c)}


# ---------------------------------------------------------------------- combinators
class AllOf(Criterion):
    """Conjunction of criteria (local and kernel-evaluable when every part is)."""

    def __init__(self, *parts: Any) -> None:
        flat: list[Criterion] = []
        for p in parts:
            p = as_criterion(p)
            flat.extend(p.parts if isinstance(p, AllOf) else [p])
        if not flat:
            raise InputError("AllOf needs at least one criterion")
        self.parts = tuple(flat)
        self.monotone = all(getattr(p, "monotone", True) for p in flat)
        self.local = all(isinstance(p, LocalCriterion) for p in flat)
        self.union_monotone = all(getattr(p, "union_monotone", False) for p in flat)
        self.name = " & ".join(p.name for p in flat)

    def __call__(self, rel: Release) -> bool:
        """Return True iff every part holds (one kernel pass when all are local)."""
        if self.local:
            return bool(self.group_ok(rel).all())
        return all(bool(p(rel)) for p in self.parts)

    def rows(self) -> list[tuple[int, int, float]]:
        """Return the kernel rows of every part (local conjunctions only)."""
        if not self.local:
            raise InputError(f"{self.name}: not every part is a built-in local criterion")
        return [r for p in self.parts for r in p.rows()]  # type: ignore[attr-defined]

    def group_ok(self, rel: Release, q: np.ndarray | None = None) -> np.ndarray:
        """Per-group pass/fail (local conjunctions only)."""
        return LocalCriterion.group_ok(self, rel, q)  # type: ignore[arg-type]

    def value(self, rel: Release) -> dict[str, Any]:
        """Return ``{part name: achieved value}`` for every part."""
        return {p.name: p.value(rel) for p in self.parts}

    def params(self) -> dict[str, Any]:
        """Return the parts' descriptions, for JSON reports."""
        return {"parts": [p.to_dict() for p in self.parts]}


class FunctionCriterion(Criterion):
    """Wrap a user function ``fn(rel) -> bool`` as a criterion."""

    def __init__(self, fn: Callable[[Release], bool], name: str | None = None, *,
                 monotone: bool = True) -> None:
        if not callable(fn):
            raise InputTypeError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "name", None) or getattr(fn, "__name__", "predicate")
        self.monotone = bool(monotone)

    def __call__(self, rel: Release) -> bool:
        """Return ``fn(rel)`` as a bool."""
        return bool(self.fn(rel))


def as_criterion(obj: Any) -> Criterion:
    """Return a :class:`Criterion` from a criterion, a list of them (conjunction) or a callable."""
    if isinstance(obj, Criterion):
        return obj
    if isinstance(obj, (list, tuple)):
        return AllOf(*obj)
    if callable(obj):
        return FunctionCriterion(obj, monotone=bool(getattr(obj, "monotone", True)))
    raise InputTypeError("predicate must be a Criterion, a callable rel -> bool, or a list of "
                    f"them; got {type(obj).__name__}")


def _risk_parts(max_risk: Any, max_avg_risk: Any, max_records_at_risk: Any,
                risk_threshold: Any, max_uniqueness: Any, population: Any,
                uniqueness_model: str | None) -> list[Criterion]:
    """Return the re-identification risk criteria of :func:`criteria_from`.

    A parameter that only qualifies another (``risk_threshold`` of ``max_records_at_risk``,
    ``population`` and ``uniqueness_model`` of ``max_uniqueness``) is refused without it:
    it would change nothing.
    """
    parts: list[Criterion] = []
    if risk_threshold is not None and max_records_at_risk is None:
        raise InputError("risk_threshold is the risk above which max_records_at_risk counts "
                         "a record; it does nothing without max_records_at_risk")
    if uniqueness_model is not None and max_uniqueness is None:
        raise InputError("uniqueness_model is the population model of max_uniqueness; it "
                         "does nothing without max_uniqueness")
    if max_risk is not None:
        parts.append(HighestRisk(max_risk))
    if max_avg_risk is not None:
        parts.append(AverageRisk(max_avg_risk))
    if max_records_at_risk is not None:
        parts.append(RecordsAtRisk(0.2 if risk_threshold is None else risk_threshold,
                                   max_records_at_risk))
    if max_uniqueness is not None:
        if population is None:
            raise InputError("max_uniqueness needs population (the population size)")
        parts.append(PopulationUniqueness(max_uniqueness, population,
                                          uniqueness_model or "dankar"))
    elif population is not None:
        raise InputError("population is the population size of max_uniqueness; give both")
    return parts


def criteria_from(*, predicate: Any = None, min_size: int | None = None,
                  l: float | None = None, l_kind: str = "distinct", c_l: float | None = None,
                  t: float | None = None, t_ordered: bool = False, alpha: float | None = None,
                  c: Any = None, k: int | None = None,
                  knowledge_kind: str = "implications", max_risk: float | None = None,
                  max_avg_risk: float | None = None,
                  max_records_at_risk: float | None = None,
                  risk_threshold: float | None = None,
                  max_uniqueness: float | None = None, population: float | None = None,
                  uniqueness_model: str | None = None) -> Criterion:
    """Build the conjunction described by keyword parameters (anonymizer and CLI front-end).

    Parameters
    ----------
    predicate : criterion, callable or list, optional
        Added to the conjunction as is.
    min_size : int, optional
        k-anonymity's minimum group size.
    l, l_kind, c_l : optional
        ℓ-diversity: ``l_kind`` ``"distinct"`` (default), ``"entropy"`` or ``"recursive"``
        (needs ``c_l``, the c of recursive (c,ℓ)-diversity).
    t, t_ordered : optional
        t-closeness (equal or ordered ground distance).
    alpha : optional
        (α,k)-anonymity's α.
    c, k, knowledge_kind : optional
        (c,k)-safety: threshold ``c`` against ``k`` pieces of knowledge of the kind
        ``knowledge_kind``.
    max_risk, max_avg_risk, max_records_at_risk, risk_threshold : optional
        Re-identification risk criteria (ARX's): highest prosecutor risk
        (:class:`HighestRisk`), average prosecutor risk (:class:`AverageRisk`), share of
        records whose risk exceeds ``risk_threshold`` (:class:`RecordsAtRisk`; default 0.2,
        given only with ``max_records_at_risk``).
    max_uniqueness, population, uniqueness_model : optional
        Estimated population uniqueness (:class:`PopulationUniqueness`; needs
        ``population``, the population size in people; ``uniqueness_model`` default
        ``"dankar"``, given only with ``max_uniqueness``).

    """
    parts: list[Criterion] = []
    if predicate is not None:
        parts.append(as_criterion(predicate))
    if min_size is not None:
        parts.append(KAnonymity(check_int(min_size, "min_size", minimum=1)))
    if l is not None:
        check_choice(l_kind, "l_kind", ("distinct", "entropy", "recursive"))
        if l_kind != "recursive" and c_l is not None:
            raise InputError(f"c_l is the c of recursive (c,l)-diversity; it needs "
                             f"l_kind='recursive', got l_kind={l_kind!r}")
        if l_kind == "distinct":
            parts.append(DistinctLDiversity(l))  # type: ignore[arg-type]
        elif l_kind == "entropy":
            parts.append(EntropyLDiversity(l))
        else:
            if c_l is None:
                raise InputError("l_kind='recursive' needs c_l (the c of recursive (c,l)-"
                                 "diversity)")
            parts.append(RecursiveCLDiversity(c_l, l))  # type: ignore[arg-type]
    elif c_l is not None:
        raise InputError("c_l given without l")
    if t is not None:
        parts.append(TCloseness(t, ordered=t_ordered))
    elif t_ordered:
        raise InputError("t_ordered chooses t-closeness' ground distance; it does nothing "
                         "without t")
    parts.extend(_risk_parts(max_risk, max_avg_risk, max_records_at_risk, risk_threshold,
                             max_uniqueness, population, uniqueness_model))
    if alpha is not None:
        parts.append(AlphaKAnonymity(alpha))
    if (c is None) != (k is None):
        raise InputError("(c,k)-safety needs both c and k (c the disclosure threshold, k the "
                         "adversary's number of pieces of knowledge)")
    if c is not None:
        parts.append(CKSafety(c, k, knowledge_kind))  # type: ignore[arg-type]
    elif knowledge_kind != "implications":
        raise InputError(f"knowledge_kind={knowledge_kind!r} is (c,k)-safety's kind of "
                         "knowledge; it does nothing without c and k")
    if not parts:
        raise InputError("no privacy criterion given: pass min_size=, l=, t=, alpha=, c= and "
                         "k=, or predicate=")
    return parts[0] if len(parts) == 1 else AllOf(*parts)
