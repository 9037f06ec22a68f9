"""Privacy skyline: worst-case breach probability under (ℓ, k, m) background knowledge.

Chen, LeFevre, Ramakrishnan, *Privacy Skyline: Privacy with Multidimensional Adversarial
Knowledge*, VLDB 2007; formulas and conventions as in ``spec/skyline.md``.

An adversary targets individual t and sensitive value σ and knows, **at most**,

* ℓ facts about t: SVPI "t does not have x_i"; MVPI "x_i ∈ t → σ ∈ t";
* k facts about other individuals: SVPI "u_i has y_i"; MVPI "u_i does not have σ";
* m members of t's same-value family: "σ ∈ v_i → σ ∈ t".

The **breach probability** BP_σ(ℓ,k,m) is the largest posterior Pr(σ ∈ t | knowledge) over
every choice of individuals and values (every grounding). By Lemma 1,
BP = 1 / (1 + minNR); by Theorem 2 (the congregation property),

    minNR = min(SS1, SS2·SS5, SS3·SS4)

with five *sufficient statistics*, minima over the groups of per-group terms:
SS1 = min_g T(g,ℓ,k)·V(g,m,k+1), SS2 = min_g T(g,ℓ,0), SS3 = min_g T(g,ℓ,k),
SS4 = min_g V(g,m,0), SS5 = min_g V(g,m,k). The per-group formulas for the three cases
(SVPI, MVPI-Set, MVPI-Multiset, taken from the release) are in
:mod:`fastpriv._kernels.skyline`.

Entry points
------------
:func:`breach_probability`
    BP for one (σ, ℓ, k, m), with the statistics, which term won and a witness naming the
    groups and values the worst-case adversary uses. ``exact=True`` gives a ``Fraction``
    (SVPI and MVPI-Set).
:func:`check`
    SkylineCheck: one pass over the groups evaluates every (σ, point) of one or several
    skylines at once. The state is a set of minima, so partial states over disjoint sets of
    groups (record batches, files, workers) merge by elementwise min —
    :class:`SkylineState` exposes ``update`` / ``merge`` / ``result``.
:func:`knowledge_skyline` / :func:`knowledge_skylines`
    The maximal safe (ℓ, k, m) for a confidence c (corrected Appendix A7, walked as a
    staircase).
:func:`dp_breach_probability`
    The Appendix A6 dynamic program (no congregation property): the baseline of Chen's
    Figure 7 and an independent check of Theorem 2.
:func:`knowledge_probability`
    Pr(σ ∈ t | one specific piece of knowledge), e.g. the paper's Tom example, or a
    witness returned by :func:`breach_probability`.

Safety is strict: a point is safe iff BP < c. In float mode the decision compares the float
minNR with the *exact* threshold (1 − c)/c (BP < c ⇔ minNR > (1 − c)/c), so c = 1 means
"minNR > 0" and a tie is never decided by the rounding of 1/(1 + minNR); pass
``fractions.Fraction`` thresholds and ``exact=True`` to decide ties of the probabilities
themselves exactly.
"""

from __future__ import annotations

import functools
import math
import numbers
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from ._data import as_release
from ._validation import check_int, check_threshold, kernel_array
from .errors import InputError, InputTypeError
from .release import MVPI_MULTISET, MVPI_SET, SVPI, Release, check_release
from .results import Result, Witness

__all__ = [
    "breach_probability",
    "check",
    "knowledge_skyline",
    "knowledge_skylines",
    "dp_breach_probability",
    "knowledge_probability",
    "prepare",
    "SigmaTables",
    "SkylineState",
    "SkylineCheck",
    "PointResult",
    "BreachProbability",
    "DPBreachProbability",
    "SkylineWitness",
    "KnowledgeSkyline",
    "TERMS",
    "combine_row",
    "forget_indexes",
    "normalize_skylines",
]

_CASE_ID = {SVPI: 0, MVPI_SET: 1, MVPI_MULTISET: 2}
#: Names of the three terms of Theorem 2, in the order ties are resolved.
TERMS = ("SS1", "SS2*SS5", "SS3*SS4")
_NEUTRAL = (math.inf, math.inf, math.inf, 1.0, 1.0)


# ============================================================================ validation
def _check_lkm(l: Any, k: Any, m: Any) -> tuple[int, int, int]:
    return (check_int(l, "l", minimum=0), check_int(k, "k", minimum=0),
            check_int(m, "m", minimum=0))


def _check_c(c: Any, name: str = "c") -> Any:
    if isinstance(c, bool) or not isinstance(c, numbers.Real):
        raise InputTypeError(f"{name} must be a real number in (0, 1], got "
                             f"{type(c).__name__} {c!r}")
    check_threshold(c, name)
    return c if isinstance(c, Fraction) else float(c)


def _check_exact(rel: Release, exact: bool) -> bool:
    if not isinstance(exact, bool):
        raise InputTypeError(f"exact must be True or False, got {exact!r}")
    if exact and rel.case == MVPI_MULTISET:
        raise InputError("exact=True is available for the 'svpi' and 'mvpi-set' cases only; "
                         "the multiset probabilities are powers with exponents up to the "
                         "value counts — use exact=False (log-space floats)")
    return exact


@functools.lru_cache(maxsize=256)
def _threshold_ratio(c: Any) -> Fraction:
    """(1 − c)/c exactly, from the exact value of c (a float is taken at its binary value)."""
    cf = Fraction(c)
    return (1 - cf) / cf


@functools.lru_cache(maxsize=256)
def _threshold_float(c: Any) -> float:
    return float(_threshold_ratio(c))


def _is_safe(min_nr: Any, ratio: Fraction) -> bool:
    """BP < c  ⇔  minNR > (1 − c)/c, decided exactly for the given minNR."""
    if isinstance(min_nr, float):
        if math.isinf(min_nr):
            return True
        r = float(ratio)
        if min_nr > r * (1 + 1e-9) + 1e-300:
            return True
        if min_nr < r * (1 - 1e-9):
            return False
        return Fraction(min_nr) > ratio
    return min_nr > ratio


def _safe_flags(min_nr: np.ndarray, cs: list) -> list:
    """Return :func:`_is_safe` of float minNR values against the thresholds ``cs``.

    The clear cases use the same float tests, vectorized; near-ties are decided exactly,
    one by one.
    """
    r = np.array([_threshold_float(c) for c in cs], dtype=np.float64)
    safe = np.isinf(min_nr) | (min_nr > r * (1 + 1e-9) + 1e-300)
    unclear = ~safe & ~(min_nr < r * (1 - 1e-9))
    out = safe.tolist()
    for i in np.flatnonzero(unclear).tolist():
        out[i] = Fraction(float(min_nr[i])) > _threshold_ratio(cs[i])
    return out


def _bp(min_nr: Any, exact: bool = False) -> Any:
    if isinstance(min_nr, Fraction):
        return 1 / (1 + min_nr)
    if math.isinf(min_nr):
        return Fraction(0) if exact else 0.0
    return 1.0 / (1.0 + min_nr)


def _arrays(rel: Release) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (kernel_array(rel.indptr, np.int64), kernel_array(rel.codes, np.int32),
            kernel_array(rel.counts, np.int64), kernel_array(rel.sizes, np.int64))


def _to_jsonable(x: Any) -> Any:
    if isinstance(x, Fraction):
        return {"frac": str(x), "float": float(x)}
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return _to_jsonable(float(x))
    if isinstance(x, tuple):
        return [_to_jsonable(v) for v in x]
    if isinstance(x, list):
        return [_to_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _to_jsonable(v) for k, v in x.items()}
    return x


# ============================================================================ results
@dataclass(frozen=True, eq=False)
class SkylineWitness(Witness):
    """A worst-case grounding: who and what the adversary's knowledge is about.

    Individuals within a group are exchangeable, so the grounding names **groups** and
    values; ``rel.rows_of_group(g)`` lists the candidate rows of a table-built release.
    ``knowledge_probability(rel, sigma=sigma, **witness.grounding())`` reproduces the breach
    probability.

    Attributes
    ----------
    t_group : int
        Group (index) of the target t.
    x_values : tuple
        The ℓ' ≤ ℓ excluded values: SVPI "t does not have x", MVPI "x ∈ t → σ ∈ t" — the
        most frequent non-σ values of t's group (fewer when the group has fewer).
    u_group : int or None
        Group of the u's (None when no u is needed).
    n_u : int
        Number of u's placed (≤ k; fewer when fewer already force BP = 1 or the group is
        full).
    y_values : tuple or None
        SVPI: the value each u is known to have (none of them σ or an x). None for MVPI,
        where the u's are known to lack σ.
    v_group : int or None
        Group of the same-value family members v (None when m = 0 or unused).
    n_v : int
        Number of v's placed.
    group_labels : dict
        Group keys of t_group, u_group, v_group (as in ``rel.group_labels``).

    """

    t_group: int
    x_values: tuple
    u_group: int | None
    n_u: int
    y_values: tuple | None
    v_group: int | None
    n_v: int
    group_labels: dict = field(default_factory=dict)

    def grounding(self) -> dict:
        """Return keyword arguments for :func:`knowledge_probability` (target, x, u, v)."""
        if self.y_values is not None:
            u = [(self.u_group, y) for y in self.y_values]
        else:
            u = [self.u_group] * self.n_u
        return {"target": self.t_group, "x": list(self.x_values), "u": u,
                "v": [self.v_group] * self.n_v}

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return _to_jsonable({
            "t_group": self.t_group, "x_values": list(self.x_values),
            "u_group": self.u_group, "n_u": self.n_u,
            "y_values": None if self.y_values is None else list(self.y_values),
            "v_group": self.v_group, "n_v": self.n_v,
            "group_labels": {k: _label_json(v) for k, v in self.group_labels.items()}})

    def summary(self) -> str:
        """One line: the target's group, what is known about it and about others."""
        others = (f"{self.n_u} individual(s) of group {self.u_group}"
                  + (f" known to have {list(self.y_values)}" if self.y_values else "")
                  if self.n_u else "no others")
        return (f"target in group {self.t_group}, excluded values {list(self.x_values)}; "
                f"{others}; {self.n_v} family member(s)"
                + (f" in group {self.v_group}" if self.n_v else ""))


def _label_json(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


@dataclass(frozen=True, eq=False)
class _BreachResult(Result):
    """What every breach probability result holds: BP, minNR and (σ, ℓ, k, m, case)."""

    value: Any
    min_nr: Any
    sigma: Any
    l: int
    k: int
    m: int
    case: str
    exact: bool

    @property
    def params(self) -> dict:
        """σ, ℓ, k, m, the case and ``exact``."""
        return {"sigma": _to_jsonable(self.sigma), "l": self.l, "k": self.k, "m": self.m,
                "case": self.case, "exact": self.exact}

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (fractions as {"frac", "float"}, ∞ as "inf")."""
        return {**self.params, "value": _to_jsonable(self.value),
                "min_nr": _to_jsonable(self.min_nr)}

    def summary(self) -> str:
        """One line: BP, minNR and the case."""
        return (f"BP_{self.sigma!r}(l={self.l}, k={self.k}, m={self.m}) = "
                f"{float(self.value):.6g} (minNR = {float(self.min_nr):.6g}, {self.case})")


@dataclass(frozen=True, eq=False)
class BreachProbability(_BreachResult):
    """Worst-case breach probability BP_σ(ℓ, k, m) and how it arises.

    Attributes
    ----------
    value : float or Fraction
        BP = 1 / (1 + minNR); 0 when σ occurs nowhere (C5).
    min_nr : float or Fraction
        The minimum negated ratio (``inf`` when σ occurs nowhere).
    sigma, l, k, m, case, exact
        The value, the knowledge point, the release's case and whether arithmetic is exact.
    statistics : tuple
        (SS1, SS2, SS3, SS4, SS5) of Theorem 2.
    case_used : str or None
        Which term attains minNR: ``"SS1"`` (t, the u's and the v's in one group),
        ``"SS2*SS5"`` (t alone, u's and v's together elsewhere) or ``"SS3*SS4"`` (t with the
        u's, v's elsewhere); None when σ occurs nowhere.
    witness : SkylineWitness or None
        The worst-case grounding (None when σ occurs nowhere).

    """

    statistics: tuple
    case_used: str | None
    witness: SkylineWitness | None

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (fractions as {"frac", "float"}, ∞ as "inf")."""
        return {**super().to_dict(),
                "statistics": dict(zip(("SS1", "SS2", "SS3", "SS4", "SS5"),
                                       _to_jsonable(list(self.statistics)), strict=False)),
                "case_used": self.case_used,
                "witness": None if self.witness is None else self.witness.to_dict()}


@dataclass(frozen=True, eq=False)
class DPBreachProbability(_BreachResult):
    """Result of :func:`dp_breach_probability` (Appendix A6 dynamic program)."""

    @property
    def witness(self) -> None:
        """The dynamic program gives no grounding."""
        return None


@dataclass(frozen=True, eq=False)
class PointResult(Result):
    """One skyline point (σ, ℓ, k, m, c) checked by :func:`check`.

    ``groups`` holds the group key attaining each of SS1..SS5 (None where the statistic kept
    its neutral value); ``safe`` is BP < c (strict).
    """

    sigma: Any
    l: int
    k: int
    m: int
    c: Any
    value: Any
    min_nr: Any
    statistics: tuple
    case_used: str | None
    safe: bool
    groups: tuple

    @property
    def params(self) -> dict:
        """σ and the point (ℓ, k, m, c)."""
        return {"sigma": _to_jsonable(self.sigma), "l": self.l, "k": self.k, "m": self.m,
                "c": _to_jsonable(self.c)}

    @property
    def witness(self) -> None:
        """A check keeps the groups attaining each statistic (``groups``), no grounding."""
        return None

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (fractions as {"frac", "float"}, ∞ as "inf")."""
        return {**self.params, "value": _to_jsonable(self.value),
                "min_nr": _to_jsonable(self.min_nr),
                "statistics": _to_jsonable(list(self.statistics)),
                "case_used": self.case_used, "safe": self.safe,
                "groups": [_label_json(g) for g in self.groups]}

    def summary(self) -> str:
        """One line: the point, BP against c, safe or not."""
        return (f"sigma={self.sigma!r} (l={self.l}, k={self.k}, m={self.m}): BP = "
                f"{float(self.value):.6g} {'<' if self.safe else '>='} c = {float(self.c):g}"
                f" — {'safe' if self.safe else 'BREACH'}")


@dataclass(frozen=True, eq=False)
class SkylineCheck(Result):
    """Result of :func:`check`: every (σ, point), in input order (``"*"`` points last)."""

    points: tuple
    case: str
    n_groups: int

    @property
    def safe(self) -> bool:
        """True iff BP < c at every point."""
        return all(p.safe for p in self.points)

    @property
    def violations(self) -> tuple:
        """The points with BP ≥ c."""
        return tuple(p for p in self.points if not p.safe)

    @property
    def value(self) -> float:
        """The largest breach probability over the points (0 without points)."""
        return max((float(p.value) for p in self.points), default=0.0)

    @property
    def params(self) -> dict:
        """The skyline checked: every (σ, ℓ, k, m, c)."""
        return {"skylines": [p.params for p in self.points]}

    @property
    def witness(self) -> None:
        """Each point names the groups attaining its statistics (``points[i].groups``)."""
        return None

    def by_sigma(self) -> dict:
        """``{σ: [PointResult, ...]}``."""
        out: dict = {}
        for p in self.points:
            out.setdefault(p.sigma, []).append(p)
        return out

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (fractions as {"frac", "float"}, ∞ as "inf")."""
        return {"case": self.case, "n_groups": self.n_groups, "safe": self.safe,
                "n_violations": len(self.violations),
                "points": [p.to_dict() for p in self.points]}

    def summary(self) -> str:
        """Return a line per breached point (or one line saying every point is safe)."""
        head = (f"{len(self.points)} skyline point(s) on {self.n_groups:,} groups ({self.case}): "
                + ("all safe" if self.safe else f"{len(self.violations)} breached"))
        return "\n".join([head, *(p.summary() for p in self.violations)])


@dataclass(frozen=True, eq=False)
class KnowledgeSkyline(Result):
    """The knowledge skyline of one σ: the maximal safe points ``(ℓ, k, m)``.

    Iterates (and indexes) like the sorted list of its points. A coordinate equal to
    ``math.inf`` means "safe for every value" (BP is constant beyond the cap).

    Attributes
    ----------
    points : tuple of (ℓ, k, m)
        Sorted lexicographically.
    sigma, c
        The value and the confidence threshold.
    caps : tuple
        (ℓ_cap, k_cap, m_cap).
    evaluations : int
        Number of BP evaluations the search used.
    exact : bool

    """

    points: tuple
    sigma: Any
    c: Any
    caps: tuple
    evaluations: int
    exact: bool

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, i: Any) -> Any:
        return self.points[i]

    @property
    def value(self) -> int:
        """The number of maximal safe points."""
        return len(self.points)

    @property
    def params(self) -> dict:
        """σ, c and ``exact``."""
        return {"sigma": _to_jsonable(self.sigma), "c": _to_jsonable(self.c),
                "exact": self.exact}

    @property
    def witness(self) -> None:
        """The skyline is the answer itself."""
        return None

    def to_dict(self) -> dict:
        """Return a JSON-ready dict (fractions as {"frac", "float"}, ∞ as "inf")."""
        return {"sigma": _to_jsonable(self.sigma), "c": _to_jsonable(self.c),
                "caps": list(self.caps), "exact": self.exact,
                "evaluations": self.evaluations,
                "points": [[_to_jsonable(float(x)) if x == math.inf else int(x) for x in p]
                           for p in self]}

    def summary(self) -> str:
        """One line: σ, c and the maximal safe (ℓ, k, m)."""
        pts = ", ".join("(" + ", ".join("∞" if x == math.inf else str(int(x)) for x in p) + ")"
                        for p in self.points)
        return (f"knowledge skyline of {self.sigma!r} at c = {float(self.c):g}: "
                f"{pts or 'empty (no knowledge at all keeps the breach probability below c)'}")


def _sigma_rows(rel: Release, code: int, width: int):
    from ._kernels import skyline as K

    indptr, codes, counts, sizes = _arrays(rel)
    return K.sigma_profile(indptr, codes, counts, sizes, int(code), int(width))


def _exact_t(case: str, n: int, s: int, tops: Sequence[int], l: int, k: int) -> Fraction:
    if case == SVPI:
        num = n - s - sum(tops[:l]) - k
        return Fraction(num, s) if num > 0 else Fraction(0)
    num = n - s - k
    if num <= 0:
        return Fraction(0)
    out = Fraction(num, s)
    for c in tops[:l]:
        out *= Fraction(n - c, n)
    return out


def _exact_v(n: int, s: int, m: int, k: int) -> Fraction:
    if s <= 0 or m <= 0:
        return Fraction(1)
    out = Fraction(1)
    for i in range(m):
        num = n - s - k - i
        if num <= 0:
            return Fraction(0)
        out *= Fraction(num, n - k - i)
    return out


def _exact_mul(a: Any, b: Any) -> Any:
    if a == math.inf or b == math.inf:
        return math.inf
    return a * b


def _terms(rel: Release, code: int, l: int, k: int, m: int, exact: bool):
    """Per σ-group terms: (gidx, n, s, tops(list of lists), terms (G_σ × 5))."""
    from ._kernels import skyline as K

    gidx, nn, ss, dd, top = _sigma_rows(rel, code, max(l, 1))
    if exact:
        terms = []
        tops_l = top.tolist()
        for i in range(len(gidx)):
            n, s, tops = int(nn[i]), int(ss[i]), tops_l[i][:l]
            t0 = _exact_t(rel.case, n, s, tops, l, 0)
            tk = _exact_t(rel.case, n, s, tops, l, k)
            terms.append((tk * _exact_v(n, s, m, k + 1), t0, tk, _exact_v(n, s, m, 0),
                          _exact_v(n, s, m, k)))
        return gidx, nn, ss, terms
    arr = K.group_terms(_CASE_ID[rel.case], kernel_array(nn, np.int64),
                        kernel_array(ss, np.int64), kernel_array(top, np.int64),
                        int(l), int(k), int(m))
    return gidx, nn, ss, arr


def _stats_from_terms(terms: Any, exact: bool) -> tuple[list, list]:
    """Minima of the per-group terms (first group on ties), neutral values when none."""
    stats = list(_NEUTRAL)
    args: list = [None] * 5
    if exact:
        stats = [math.inf, math.inf, math.inf, Fraction(1), Fraction(1)]
        for i, row in enumerate(terms):
            for j in range(5):
                if row[j] < stats[j]:
                    stats[j] = row[j]
                    args[j] = i
        return stats, args
    if len(terms):
        for j in range(5):
            col = terms[:, j]
            i = int(np.argmin(col))
            if col[i] < stats[j]:
                stats[j] = float(col[i])
                args[j] = i
    return stats, args


def _combine(stats: Sequence[Any]) -> tuple[Any, int | None]:
    """Theorem 2 with C4 (∞·0 = ∞); ties prefer SS1, then SS2·SS5. None if σ is absent."""
    if any(isinstance(x, Fraction) for x in stats):
        cands = [stats[0], _exact_mul(stats[1], stats[4]), _exact_mul(stats[2], stats[3])]
        best, which = cands[0], 0
        for j in (1, 2):
            if cands[j] < best:
                best, which = cands[j], j
    else:
        best, which = combine_row([float(x) for x in stats])
    if best == math.inf:
        return math.inf, None
    return best, which


# ============================================================================ witness
def _pool(rel: Release, g: int, exclude: set) -> list:
    """Value labels of group g by descending count, one entry per occurrence, minus exclude."""
    out = []
    for label, cnt in rel.profile(g):
        if label in exclude:
            continue
        out.extend([label] * cnt)
    return out


def _witness(rel: Release, sigma: Any, l: int, k: int, m: int, which: int, args: list,
             gidx: np.ndarray, nn: np.ndarray, ss: np.ndarray, terms: Any) -> SkylineWitness:
    case = rel.case
    col = (lambda j: [row[j] for row in terms]) if isinstance(terms, list) \
        else (lambda j: terms[:, j].tolist())

    def group_of(i: int | None) -> int | None:
        return None if i is None else int(gidx[i])

    if which == 0:
        gi = args[0]
        ui = vi = gi
    elif which == 1:
        # t alone in g (SS2), u's and v's together in f (SS5), g != f
        gi, ui = _distinct_pair(col(1), col(4), args[1], args[4])
        vi = ui
    else:
        # t with the u's in g (SS3), v's in f (SS4), g != f
        gi, vi = _distinct_pair(col(2), col(3), args[2], args[3])
        ui = gi
    t_group = group_of(gi)
    profile = [(lab, c) for lab, c in rel.profile(t_group) if lab != sigma]
    x_values = tuple(lab for lab, _ in profile[:l])
    n_t, s_t = int(nn[gi]), int(ss[gi])
    # u's: with t (SS1, SS3) they must avoid σ and the x's (SVPI) / lack σ (MVPI)
    if ui == gi:
        if case == SVPI:
            avail = n_t - s_t - sum(c for _, c in profile[:l])
        elif case == MVPI_SET:
            avail = n_t - s_t
        else:
            avail = n_t - 1
        n_u = min(k, max(avail, 0))
        t_zero = col(2)[gi] == 0
    else:
        n_f, s_f = (int(nn[ui]), int(ss[ui])) if ui is not None else (0, 0)
        if case == MVPI_MULTISET:
            n_u = min(k, max(n_f - 1, 0))
        else:
            n_u = min(k, max(n_f - s_f, 0))
        t_zero = False
    y_values = None
    if case == SVPI:
        excl = {sigma} | (set(x_values) if ui == gi else set())
        pool = _pool(rel, group_of(ui), excl) if ui is not None else []
        y_values = tuple(pool[:n_u])
        n_u = len(y_values)
    # v's: the room left in their group; none needed once T = 0 (t must hold σ)
    if t_zero or m == 0 or vi is None:
        n_v = 0
    else:
        n_vg = int(nn[vi])
        used = (1 if vi == gi else 0) + (n_u if vi == ui else 0)
        n_v = min(m, max(n_vg - used, 0))
    u_group = group_of(ui) if n_u else None
    v_group = group_of(vi) if n_v else None
    labels = rel.group_labels
    glabels = {"t": labels[t_group]}
    if u_group is not None:
        glabels["u"] = labels[u_group]
    if v_group is not None:
        glabels["v"] = labels[v_group]
    return SkylineWitness(t_group=t_group, x_values=x_values, u_group=u_group, n_u=n_u,
                   y_values=y_values, v_group=v_group, n_v=n_v, group_labels=glabels)



def _distinct_pair(a: list, b: list, ia: int | None, ib: int | None) -> tuple[int, int]:
    """Find indices i ≠ j with a[i] = min a and b[j] = min b.

    They exist when the product term wins strictly (otherwise SS1 would be as small).
    """
    amin, bmin = a[ia], b[ib]
    if ia != ib:
        return ia, ib
    for j, v in enumerate(b):
        if v == bmin and j != ia:
            return ia, j
    for i, v in enumerate(a):
        if v == amin and i != ib:
            return i, ib
    raise AssertionError("internal: no distinct pair of groups for a product term")


# ============================================================================ public API
def breach_probability(data: Any, *, sigma: Any, l: int, k: int, m: int, exact: bool = False,
                       **read: Any) -> BreachProbability:
    """Worst-case breach probability BP_σ(ℓ, k, m) of a release (Chen et al., Theorem 2).

    Parameters
    ----------
    data : Release or table-like
        The release; its ``case`` (SVPI, MVPI-Set, MVPI-Multiset) selects the formulas.
    sigma : value label
        The sensitive value σ (one of ``rel.values``).
    l, k, m : int
        At most ℓ facts about the target, k about other individuals, m same-value family
        members (see the module docstring). Non-negative.
    exact : bool
        Compute with ``fractions.Fraction`` (SVPI and MVPI-Set only).

    **read
        ``sensitive=``, ``group=``/``qi=``, ``weight=``, ``nulls=`` to read a table
        (see :func:`fastpriv._data.as_release`).

    Returns
    -------
    BreachProbability
        ``.value`` = 1 / (1 + minNR) with minNR = min(SS1, SS2·SS5, SS3·SS4), the
        statistics, the winning term and a :class:`SkylineWitness`.

    Examples
    --------
    >>> rel = Release.from_groups([["AIDS", "AIDS", "Flu", "Flu"],
    ...                            ["AIDS", "Cancer", "Flu", "Flu"]])
    >>> breach_probability(rel, sigma="AIDS", l=0, k=0, m=0).value
    0.5
    >>> breach_probability(rel, sigma="AIDS", l=1, k=1, m=0, exact=True).value
    Fraction(1, 1)

    """
    rel = as_release(data, **read)
    l, k, m = _check_lkm(l, k, m)
    exact = _check_exact(rel, exact)
    return _evaluate(rel, sigma, l, k, m, exact)[0]


def _evaluate(rel: Release, sigma: Any, l: int, k: int, m: int,
              exact: bool) -> tuple[BreachProbability, tuple]:
    """BreachProbability and the group keys attaining SS1..SS5 (None = neutral)."""
    code = rel.code_of(sigma, param="sigma")
    gidx, nn, ss, terms = _terms(rel, code, l, k, m, exact)
    stats, args = _stats_from_terms(terms, exact)
    min_nr, which = _combine(stats)
    witness = None
    if which is not None:
        witness = _witness(rel, sigma, l, k, m, which, args, gidx, nn, ss, terms)
    labels = rel.group_labels
    groups = tuple(None if a is None else labels[int(gidx[a])] for a in args)
    res = BreachProbability(value=_bp(min_nr, exact), min_nr=min_nr, statistics=tuple(stats),
                            case_used=None if which is None else TERMS[which],
                            witness=witness, sigma=sigma, l=l, k=k, m=m, case=rel.case,
                            exact=exact)
    return res, groups


def dp_breach_probability(data: Any, *, sigma: Any, l: int, k: int, m: int,
                          exact: bool = False, **read: Any) -> DPBreachProbability:
    """BP_σ(ℓ, k, m) by the Appendix A6 dynamic program (the baseline of Chen's Figure 7).

    The program places t, the k u's and the m v's group by group without the congregation
    property: O(k²·m²) work per group and O(k·m) memory. It is a compiled Numba kernel
    (``exact=False``) or runs on ``Fraction`` (``exact=True``, SVPI and MVPI-Set). It
    agrees with :func:`breach_probability` (Theorem 2); both use the same per-group T and V.
    """
    from ._kernels import skyline as K

    rel = as_release(data, **read)
    code = rel.code_of(sigma, param="sigma")
    l, k, m = _check_lkm(l, k, m)
    exact = _check_exact(rel, exact)
    if exact:
        min_nr = _dp_exact(rel, code, l, k, m)
    else:
        indptr, codes, counts, sizes = _arrays(rel)
        min_nr = float(K.dp_min_nr(indptr, codes, counts, sizes, _CASE_ID[rel.case], int(code),
                                   l, k, m))
    return DPBreachProbability(value=_bp(min_nr, exact), min_nr=min_nr, sigma=sigma, l=l, k=k, m=m,
                               case=rel.case, exact=exact)


def _dp_exact(rel: Release, code: int, l: int, k: int, m: int) -> Any:
    inf = math.inf
    with_ = [[inf] * (m + 1) for _ in range(k + 1)]
    without = [[inf] * (m + 1) for _ in range(k + 1)]
    without[0][0] = Fraction(1)
    for f in range(rel.n_groups):
        prof = rel.profile(f)
        n = int(rel.sizes[f])
        codes = rel.codes[rel.indptr[f]:rel.indptr[f + 1]]
        hit = np.flatnonzero(codes == code)
        if hit.size == 0:
            tt = [inf] * (k + 1)
            vt = [[Fraction(1)] * (k + 2) for _ in range(m + 1)]
        else:
            r = int(hit[0])
            s = prof[r][1]
            tops = [c for i, (_, c) in enumerate(prof) if i != r]
            tt = [_exact_t(rel.case, n, s, tops, l, kk) for kk in range(k + 1)]
            vt = [[_exact_v(n, s, mm, kk) for kk in range(k + 2)] for mm in range(m + 1)]
        nw = [[inf] * (m + 1) for _ in range(k + 1)]
        nwo = [[inf] * (m + 1) for _ in range(k + 1)]
        for kk in range(k + 1):
            for mm in range(m + 1):
                bw, bwo = inf, inf
                for i in range(kk + 1):
                    for j in range(mm + 1):
                        v = vt[mm - j][kk - i]
                        bwo = min(bwo, _exact_mul(without[i][j], v))
                        bw = min(bw, _exact_mul(with_[i][j], v))
                        bw = min(bw, _exact_mul(_exact_mul(without[i][j], tt[kk - i]),
                                                vt[mm - j][kk - i + 1]))
                nw[kk][mm], nwo[kk][mm] = bw, bwo
        with_, without = nw, nwo
    return with_[k][m]


# ---------------------------------------------------------------------------- check
_Point = tuple  # (l, k, m, c)


def _normalize_point(p: Any, where: str) -> _Point:
    if isinstance(p, Mapping):
        try:
            p = (p["l"], p["k"], p["m"], p["c"])
        except KeyError as exc:
            raise InputError(f"{where}: a point needs keys l, k, m, c (missing {exc})") from None
    if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 4:
        raise InputTypeError(f"{where}: a skyline point is a tuple (l, k, m, c), got {p!r}")
    l, k, m, c = p
    if not (type(l) is int and type(k) is int and type(m) is int and l >= 0 and k >= 0
            and m >= 0):
        l, k, m = (check_int(l, f"{where}: l", minimum=0), check_int(k, f"{where}: k", minimum=0),
                   check_int(m, f"{where}: m", minimum=0))
    if not (type(c) is float and 0.0 < c <= 1.0):
        c = _check_c(c, f"{where}: c")
    return (l, k, m, c)


def normalize_skylines(skylines: Any) -> tuple[dict, list]:
    """Check a skyline specification and split it into per-value and every-value points.

    Parameters
    ----------
    skylines : mapping or list
        ``{sigma: [(l, k, m, c), ...]}`` (key ``"*"``: every value) or a plain list of
        points (every value); points may also be dicts with keys l, k, m, c.

    Returns
    -------
    (explicit, star) : tuple
        ``{σ: [points]}`` and the points that apply to every σ.

    """
    if isinstance(skylines, Mapping):
        explicit: dict = {}
        star: list = []
        for key, pts in skylines.items():
            if isinstance(pts, (str, bytes)) or not isinstance(pts, Iterable):
                raise InputTypeError(f"skylines[{key!r}] must be a list of (l, k, m, c) points")
            pts = [_normalize_point(p, f"skylines[{key!r}]") for p in pts]
            if isinstance(key, str) and key == "*":
                star.extend(pts)
            else:
                explicit.setdefault(key, []).extend(pts)
        return explicit, star
    if isinstance(skylines, (str, bytes)) or not isinstance(skylines, Iterable):
        raise InputTypeError("skylines must be {sigma: [(l, k, m, c), ...]} (key '*' = every "
                             "value) or a list of (l, k, m, c) points for every value; got "
                             f"{type(skylines).__name__}")
    return {}, [_normalize_point(p, "skylines") for p in skylines]


#: up to this many groups a check caches every group label of the release (fast repeated
#: checks, a few ms once); larger releases look up only the witness groups' labels (on a
#: fresh 1M-group release the full list took 50 ms of a 0.35 s 100-point check)
_ALL_LABELS_MAX_GROUPS = 1 << 16


def _group_names(rel: Release, rows: list, labels: list | None = None) -> dict:
    """``{group index: label}`` for the indices in ``rows`` (lists of ints), ``-1 → None``.

    Labels come from ``labels`` if given, else from the release: every label of a release
    up to 65,536 groups (built once, cached on it), beyond that only the named groups'
    (from the cached list if another caller built it).
    """
    hit = sorted({g for row in rows for g in row if g >= 0})
    if labels is None and rel.n_groups <= _ALL_LABELS_MAX_GROUPS:
        labels = rel.group_labels
    if labels is None:
        named = dict(zip(hit, rel.labels_of(np.array(hit, dtype=np.int64)), strict=True))
    else:
        named = {g: labels[g] for g in hit}
    named[-1] = None
    return named


def _auto_parallel(n_groups: int, n_points: int) -> bool:
    import numba

    return numba.config.NUMBA_NUM_THREADS > 1 and n_groups >= 4096 and \
        n_groups * max(n_points, 1) >= 2_000_000


#: largest per-batch class table (σ slots × classes × distinct ℓ) of the class method
_CLASS_CELLS = 4_000_000
#: method="auto" scans directly up to this many (σ, point) pairs (no class-table setup)
_DIRECT_MAX_PAIRS = 8
#: method="auto" also scans directly when the release has more than one (n, s) class per
#: this many groups: classes then barely group anything, and the class pass evaluates every
#: V per point, where the direct group-major scan evaluates each distinct V once per group
_CLASSES_PER_GROUP = 8


def _n_chunks(n_groups: int) -> int:
    import numba

    return int(min(max(numba.config.NUMBA_NUM_THREADS, 1) * 4, max(n_groups, 1)))


_NO_TOP = np.zeros((0, 0), dtype=np.int64)
_NO_TOP.flags.writeable = False


def _sigma_scan_args(rel: Release) -> tuple:
    """Kernel inputs of a per-σ scan (cached index of the release)."""
    top = rel.top_prefix
    _, entry, group, rank, count = rel.value_index
    return (rel.indptr, rel.counts, rel.sizes, _NO_TOP if top is None else top, entry, group,
            rank, count)


#: Peak memory per (σ, point) pair of a SkylineCheck (its state, its records and its
#: PointResult): 1.5–1.8 KB measured at 2·10⁵ and 10⁶ distinct values (VmHWM)
PAIR_BYTES = 1_800
#: Seconds per (σ, point) pair of a direct scan of values that occur once or twice
#: (16–63 µs measured on 2 shared cores, 2·10⁵ and 10⁶ values)
PAIR_SECONDS = 40e-6


def _check_pairs(rel: Release, n_pairs: int) -> None:
    """Refuse, before the scan, a check whose (σ, point) pairs would not fit in memory."""
    from ._budget import check_memory

    check_memory(n_pairs * PAIR_BYTES,
                 f"checking {n_pairs:,} (sensitive value, skyline point) pairs (the release "
                 f"has {rel.n_values:,} distinct sensitive values)",
                 "check named values (skylines={value: [points]}; fastpriv skyline --sigma "
                 "VALUE) or a coarser sensitive column (fewer distinct values, e.g. "
                 "generalized with a hierarchy)")


#: the (σ, ℓ) record lists kept on a release hold at most this many occurrences in all
#: (beyond it the cache is emptied first) — or the release's entry count, if larger
_RECORDS_KEPT = 1 << 22
#: ... where a list also counts this many occurrences for itself (its array, key and slot:
#: ~300 B), so that millions of values with a record or two each do not fill memory
_RECORD_ENTRY = 40


#: at most this many band edges (m_max · (k_max + 2)) for the cross-class records test
_MAX_BANDS = 1 << 16


@functools.lru_cache(maxsize=64)
def _cross_class_guard(m_max: int, k_max: int) -> tuple[np.ndarray, int]:
    """Return ``(v_bands, n_cross)`` of :func:`_kernels.skyline.sigma_records`.

    For points with m <= ``m_max`` and k <= ``k_max``: V(m, k) of a group of n is an exact
    integer quotient while (n−k) (n−k−1) ··· (n−k−m+1) <= 2**53, else a product of rounded
    factors: ``v_bands`` are the n where that switches (the largest exact N for each m in
    1..m_max, plus each k in 0..k_max+1). ``n_cross`` bounds n so that the products of at
    most ``m_max`` factors (each >= 1/n) stay above 1e-300, clear of the log path; -1 (no
    cross-class test) past :data:`_kernels.skyline.LONG_PRODUCT` factors or
    :data:`_MAX_BANDS` band edges (then only the same-class test prunes, as it does for
    every m and k).
    """
    from ._kernels import skyline as K

    exact = 2 ** 53
    if m_max == 0:                      # V = 1 everywhere: no path to keep apart
        return kernel_array(np.empty(0, dtype=np.int64), np.int64), 2 ** 62
    if m_max > K.LONG_PRODUCT or m_max * (k_max + 2) > _MAX_BANDS:
        return kernel_array(np.empty(0, dtype=np.int64), np.int64), -1
    bands = set()
    for m in range(1, m_max + 1):
        lo, hi = m, exact               # largest N with N (N-1) ... (N-m+1) <= 2**53
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if math.prod(range(mid - m + 1, mid + 1)) <= exact:
                lo = mid
            else:
                hi = mid - 1
        bands.update(lo + k for k in range(k_max + 2))
    n_cross = min(int(10 ** (300 / m_max)), 2 ** 62)
    while n_cross ** m_max > 10 ** 300:
        n_cross -= 1
    return kernel_array(np.array(sorted(bands), dtype=np.int64), np.int64), n_cross


#: several ℓ's records are found on threads (one ℓ each) from this many occurrences of σ
_RECORDS_PARALLEL = 4096


#: The indexes this module keeps per release (the (σ, ℓ) records), by ``id(release)``;
#: an entry is dropped when its release is garbage-collected. Keyed by id rather than by
#: the release so that it never depends on how releases compare or hash.
_RELEASE_INDEXES: dict[int, dict] = {}
_INDEX_LOCK = threading.Lock()


def _index_cache(rel: Release) -> dict:
    """Return the indexes kept for ``rel`` (created on first use, freed with ``rel``)."""
    with _INDEX_LOCK:
        cache = _RELEASE_INDEXES.get(id(rel))
        if cache is None:
            cache = _RELEASE_INDEXES[id(rel)] = {}
            weakref.finalize(rel, _RELEASE_INDEXES.pop, id(rel), None)
        return cache


def forget_indexes(data: Release) -> None:
    """Drop the indexes kept for ``data`` (the next :func:`check` builds them again).

    A release never changes, so kept indexes never go stale; this is for timing a first
    check again, or for freeing memory before the release itself is dropped.
    """
    with _INDEX_LOCK:
        cache = _RELEASE_INDEXES.get(id(data))
        if cache is not None:
            cache.clear()


def _records(rel: Release, common: tuple, code: int, ells: tuple, m_max: int,
             k_max: int) -> np.ndarray:
    """Return the occurrences of value ``code`` that can set a statistic at any ℓ in ``ells``.

    For one ℓ these are valid for every k <= ``k_max`` and m <= ``m_max``
    (:func:`_kernels.skyline.sigma_records`: occurrences dominated by an earlier group are
    dropped); for several ℓ, the union of each ℓ's (extra occurrences never change a
    result), found one ℓ per thread from :data:`_RECORDS_PARALLEL` occurrences
    (:func:`_kernels.skyline.records_union`). Built at the first check of
    (σ, ℓs, m_max, k_max) and kept for the release (:func:`_index_cache`): later checks with the
    same key evaluate only these — usually a few dozen per (σ, ℓ), not one per group.
    """
    from ._kernels import skyline as K

    cache = _index_cache(rel)
    key = ("skyline.records", code, ells, m_max, k_max)
    rec = cache.get(key)
    if rec is None:
        ptr = rel.value_index[0]
        lo, hi = int(ptr[code]), int(ptr[code + 1])
        if len(ells) == 1:
            rec = K.sigma_records(*common, lo, hi, _CASE_ID[rel.case], ells[0],
                                  *_cross_class_guard(m_max, k_max))
        elif hi - lo >= _RECORDS_PARALLEL:
            rec = K.records_union(*common, lo, hi, _CASE_ID[rel.case],
                                  kernel_array(np.array(ells), np.int64),
                                  *_cross_class_guard(m_max, k_max))
        else:   # union of sorted occurrence ids in [lo, hi): a mark per occurrence, O(hi - lo)
            mark = np.zeros(hi - lo, dtype=np.bool_)
            for x in ells:
                mark[_records(rel, common, code, (x,), m_max, k_max) - lo] = True
            rec = np.flatnonzero(mark) + lo
        rec.flags.writeable = False
        kept = cache.get("skyline.records.size", 0) + rec.size + _RECORD_ENTRY
        if kept > max(_RECORDS_KEPT, rel.codes.size):
            for old in [x for x in cache if x[0].startswith("skyline.records")]:
                del cache[old]
            kept = rec.size + _RECORD_ENTRY
        cache[key] = rec
        cache["skyline.records.size"] = kept
    return rec


def _scan_points(rel: Release, pt_sig: list, pt_l: list, pt_k: list, pt_m: list,
                 parallel: bool = False,
                 progress: Callable[[int, int], None] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Compute the five statistics and first-group witnesses of (σ, point) pairs.

    A σ with many points is one batch over the union of its ℓs' records, evaluated
    group-major (each distinct T and V once per group); a σ with a few points is batched
    per ℓ over that ℓ's records (:func:`_records`), point-major. σ-free groups are
    neutral, so they are never visited. Returns ``(stats, args)`` in point order, shape
    ``(points, 5)``. ``progress(done, total)`` is called every 4096 batches (points done).
    """
    from ._kernels import skyline as K

    common = _sigma_scan_args(rel)
    case = _CASE_ID[rel.case]
    by_sig: dict = {}
    for i, c in enumerate(pt_sig):
        by_sig.setdefault(c, []).append(i)
    batches: list = []
    for c, idx in by_sig.items():
        if len(idx) >= K.GROUP_MAJOR_POINTS:
            batches.append((c, tuple(sorted({pt_l[i] for i in idx})), idx))
            continue
        by_l: dict = {}
        for i in idx:
            by_l.setdefault(pt_l[i], []).append(i)
        batches.extend((c, (l,), ix) for l, ix in by_l.items())
    one = len(batches) == 1
    if not one:
        stats = np.empty((len(pt_sig), 5), dtype=np.float64)
        args = np.empty((len(pt_sig), 5), dtype=np.int64)
    done = 0
    for b, (c, ells, idx) in enumerate(batches):
        if progress is not None and not b & 4095:
            progress(done, len(pt_sig))
        done += len(idx)
        lkm = np.array([pt_l, pt_k, pt_m] if one else
                       [[x[i] for i in idx] for x in (pt_l, pt_k, pt_m)], dtype=np.int64)
        lkm.flags.writeable = False           # rows: read-only C-contiguous int64 views
        ls, ks, ms = lkm
        rec = _records(rel, common, c, ells, int(ms.max()), int(ks.max()))
        n = rec.size
        if parallel and n >= 4096:
            st, ar = K.check_sigma_parallel(*common, rec, 0, n, case, ls, ks, ms,
                                            min(_n_chunks(rel.n_groups), n))
        else:
            st, ar = K.check_sigma(*common, rec, 0, n, case, ls, ks, ms)
        if one:
            return st, ar
        stats[idx] = st
        args[idx] = ar
    return stats, args


def _check_by_classes(rel: Release, pt_sig: list, pt_l: list, pt_k: list, pt_m: list,
                      parallel: bool, auto: bool = False):
    """SkylineCheck through per-(σ, class (n, s), ℓ) bests; None if the table is too big.

    Pass 1 scans the groups once and keeps, for each requested σ, class and requested ℓ,
    the group with the largest S_ℓ (smallest P_ℓ for MVPI-Set): within a class V does not
    depend on the group and T is monotone in that number. Pass 2 evaluates every point on
    the classes only — O(entries · distinct ℓ + points · classes) instead of
    O(groups · points). Values are identical to the direct scan (same helpers, same
    integers), and so are the witnesses: on ties, the first group in key order (the
    class pass also keeps, per σ, ℓ and k, the first group whose T is 0).
    """
    from ._kernels import skyline as K

    sig_codes = sorted(set(pt_sig))
    ells = sorted(set(pt_l))
    n_sig, n_l = len(sig_codes), len(ells)
    cap = _CLASS_CELLS // max(1, n_sig * n_l)
    indptr, codes, counts, sizes = _arrays(rel)
    n_map, base, cls_n, cls_s = K.class_layout(indptr, counts, sizes, cap)
    if n_map.size == 0 or (auto and cls_n.size * _CLASSES_PER_GROUP > rel.n_groups):
        return None, None
    slot_of = {c: i for i, c in enumerate(sig_codes)}
    li_of = {x: i for i, x in enumerate(ells)}
    sig_slot = np.full(rel.n_values, -1, dtype=np.int64)
    sig_slot[sig_codes] = np.arange(n_sig)
    need = np.zeros((n_sig, n_l), dtype=np.bool_)
    pt_slot = np.array([slot_of[c] for c in pt_sig], dtype=np.int64)
    pt_li = np.array([li_of[x] for x in pt_l], dtype=np.int64)
    need[pt_slot, pt_li] = True
    ks = sorted({0, *pt_k})          # T = 0 thresholds: the first group with T = 0 per k
    ki_of = {x: i for i, x in enumerate(ks)}
    common = (indptr, codes, counts, sizes, _CASE_ID[rel.case],
              kernel_array(sig_slot, np.int64), n_sig, kernel_array(np.asarray(ells), np.int64),
              kernel_array(need, np.bool_), kernel_array(n_map, np.int64),
              kernel_array(base, np.int64), int(cls_n.size),
              kernel_array(np.asarray(ks), np.int64))
    if parallel:
        tables = K.class_pass_parallel(*common, _n_chunks(rel.n_groups))
    else:
        tables = K.class_pass(*common, 0, rel.n_groups)
    best_s, best_p, best_g, first_g, zero_g = (kernel_array(tables[0], np.int64),
                                               kernel_array(tables[1], np.float64),
                                               kernel_array(tables[2], np.int64),
                                               kernel_array(tables[3], np.int64),
                                               kernel_array(tables[4], np.int64))
    return K.class_points(_CASE_ID[rel.case], kernel_array(cls_n, np.int64),
                          kernel_array(cls_s, np.int64), best_s, best_p, best_g, first_g,
                          zero_g, kernel_array(pt_slot, np.int64),
                          kernel_array(pt_li, np.int64),
                          kernel_array(np.asarray(pt_k), np.int64),
                          kernel_array(np.asarray([ki_of[x] for x in pt_k]), np.int64),
                          kernel_array(np.asarray(pt_m), np.int64))


class SkylineState:
    """Mergeable partial state of SkylineCheck: the five minima of every (σ, point).

    The statistics SS1..SS5 are minima over groups, so a state built from one set of groups
    and a state built from a disjoint set merge by elementwise min into the state of the
    union — record batches, files or cluster workers each build a state and the results are
    combined with :meth:`merge` (or by calling :meth:`update` repeatedly). Every group must
    be **complete** within one update (partition the data by group). Memory: O(#points).

    Parameters
    ----------
    skylines : mapping or list
        ``{sigma: [(l, k, m, c), ...]}``; the key ``"*"`` holds points applied to every
        sensitive value; a plain list of points is the same as ``{"*": points}``.
    case : {"svpi", "mvpi-set", "mvpi-multiset"}, optional
        Fixed by the first update when omitted; all updates must agree.

    Examples
    --------
    >>> import fastpriv as fp
    >>> parts = [fp.Release.from_groups([["hiv", "flu", "cold"]]),     # e.g. two files
    ...          fp.Release.from_groups([["flu", "flu", "hiv", "cold"]])]
    >>> st = SkylineState({"hiv": [(0, 0, 0, 0.5), (1, 1, 0, 0.5)]})
    >>> for part in parts:
    ...     _ = st.update(part)        # each part: a Release with complete groups
    >>> [(p.l, p.k, p.m, round(float(p.value), 4), p.safe) for p in st.result().points]
    [(0, 0, 0, 0.3333, True), (1, 1, 0, 1.0, False)]

    """

    def __init__(self, skylines: Any, *, case: str | None = None) -> None:
        self._explicit, self._star = normalize_skylines(skylines)
        if case is not None and case not in _CASE_ID:
            raise InputError(f"case must be one of {', '.join(map(repr, _CASE_ID))}; "
                             f"got {case!r}")
        self._case = case
        self._stats: dict = {}    # sigma -> float64 array (P_sigma, 5)
        self._args: dict = {}     # sigma -> list of 5-lists of group labels (None = neutral)
        self._seen: dict = {}     # sigma labels seen in any update (ordered)
        self._n_groups = 0

    # -- helpers
    def _points_of(self, sigma: Any) -> list:
        return self._explicit.get(sigma, []) + self._star

    @property
    def case(self) -> str | None:
        """The release case of the state (None before the first update)."""
        return self._case

    @property
    def n_groups(self) -> int:
        """Number of groups folded into this state so far."""
        return self._n_groups

    def update(self, data: Any, *, labels: Sequence[Any] | None = None,
               sizes: Sequence[int] | None = None, parallel: bool | None = None,
               method: str = "auto") -> "SkylineState":
        """Fold the groups of ``data`` (a Release, or groups for ``Release.from_groups``).

        ``labels`` optionally names the groups of this batch (default: the release's group
        keys); witnesses and tie-breaking use them, so give globally unique labels when the
        batches are parts of one release. ``method`` and ``parallel``: see :func:`check`.
        Returns ``self``.
        """
        if method not in ("auto", "classes", "direct"):
            raise InputError(f"method must be 'auto', 'classes' or 'direct'; got {method!r}")
        if isinstance(data, Release):
            rel = data
        else:
            rel = Release.from_groups(data, sizes=sizes, case=self._case)
        if self._case is None:
            self._case = rel.case
        elif rel.case != self._case:
            raise InputError(f"data: release case {rel.case!r} differs from the state's case "
                             f"{self._case!r}")
        if labels is not None:
            labels = list(labels)
            if len(labels) != rel.n_groups:
                raise InputError(f"labels has {len(labels)} entries but the data has "
                                 f"{rel.n_groups} groups")
        values = rel.values
        if self._star:
            sig_list = values
        else:
            index = rel._code_index
            sig_list = [v for v in self._explicit if v in index]
        n_pairs = sum(len(self._points_of(v)) for v in sig_list) if not self._star else \
            len(sig_list) * len(self._star) + sum(len(self._explicit.get(v, ()))
                                                  for v in self._explicit)
        _check_pairs(rel, n_pairs)
        pt_sig, pt_l, pt_k, pt_m, owners = [], [], [], [], []
        for v in sig_list:
            code = rel.code_of(v)
            for p in self._points_of(v):
                pt_sig.append(code)
                pt_l.append(p[0])
                pt_k.append(p[1])
                pt_m.append(p[2])
            owners.append(v)
        self._seen.update(dict.fromkeys(values))
        self._n_groups += rel.n_groups
        if not owners:
            return self
        if parallel is None:
            parallel = _auto_parallel(rel.n_groups, len(pt_sig))
        stats, args = None, None
        if method == "classes" or (method == "auto" and len(pt_sig) > _DIRECT_MAX_PAIRS):
            stats, args = _check_by_classes(rel, pt_sig, pt_l, pt_k, pt_m, parallel,
                                            auto=method == "auto")
            if stats is None and method == "classes":
                raise InputError("method='classes': the (n, s) class table of this release "
                                 "is too large; use method='direct' or 'auto'")
        if stats is None:
            from ._progress import Estimate

            with Estimate(f"checking {len(pt_sig):,} (value, point) pairs of the skyline",
                          len(pt_sig) * PAIR_SECONDS, len(pt_sig)) as bar:
                stats, args = _scan_points(rel, pt_sig, pt_l, pt_k, pt_m, parallel,
                                           progress=bar)
        rows = args.tolist()
        named = _group_names(rel, rows, labels)
        pos = 0
        for v in owners:
            cnt = len(self._points_of(v))
            ar = [[named[g] for g in row] for row in rows[pos:pos + cnt]]
            self._fold(v, np.array(stats[pos:pos + cnt]), ar)
            pos += cnt
        return self

    def _fold(self, sigma: Any, st: np.ndarray, ar: list) -> None:
        if sigma not in self._stats:
            self._stats[sigma] = st
            self._args[sigma] = ar
            return
        cur, cur_ar = self._stats[sigma], self._args[sigma]
        better = st < cur
        for p, j in zip(*np.nonzero(better | (st == cur)), strict=False):
            if better[p, j] or _label_less(ar[p][j], cur_ar[p][j]):
                cur[p, j] = st[p, j]
                cur_ar[p][j] = ar[p][j]

    def merge(self, other: "SkylineState") -> "SkylineState":
        """Return a new state holding the elementwise min of ``self`` and ``other``.

        Both must have been built for the same skylines (and case).
        """
        if not isinstance(other, SkylineState):
            raise InputTypeError(f"other must be a SkylineState, got {type(other).__name__}")
        if (other._explicit, other._star) != (self._explicit, self._star):
            raise InputError("other: states for different skylines cannot be merged")
        if self._case is not None and other._case is not None and self._case != other._case:
            raise InputError(f"other: case {other._case!r} differs from {self._case!r}")
        out = SkylineState.__new__(SkylineState)
        out._explicit, out._star = self._explicit, self._star
        out._case = self._case or other._case
        out._stats = {k: v.copy() for k, v in self._stats.items()}
        out._args = {k: [list(r) for r in v] for k, v in self._args.items()}
        out._seen = dict(self._seen)
        out._seen.update(other._seen)
        out._n_groups = self._n_groups + other._n_groups
        for sigma, st in other._stats.items():
            out._fold(sigma, st.copy(), [list(r) for r in other._args[sigma]])
        return out

    def statistics(self) -> dict:
        """``{σ: array (P_σ, 5)}`` of the current minima (copies)."""
        return {k: v.copy() for k, v in self._stats.items()}

    def result(self) -> SkylineCheck:
        """Per-point breach probabilities and safety from the current statistics.

        A σ named explicitly in the skylines but never seen in the data raises
        ``ValueError`` listing the values seen; a σ seen with zero occurrences has BP = 0.
        """
        missing = [s for s in self._explicit if s not in self._seen]
        if missing:
            seen = ", ".join(map(repr, list(self._seen)[:20]))
            raise InputError(f"skylines: {missing[0]!r} is not a sensitive value of the data; "
                             f"values: {seen}")
        rest = [v for v in self._seen if v not in self._explicit] if self._star else []
        try:        # label order, as check() on the whole release: merge order is irrelevant
            rest.sort()
        except TypeError:
            pass    # mixed label types: first-seen order
        order = list(self._explicit) + rest
        blocks, owners = [], []
        for sigma in order:
            pts = self._points_of(sigma)
            if not pts:
                continue
            st = self._stats.get(sigma)
            blocks.append(np.tile(np.array(_NEUTRAL), (len(pts), 1)) if st is None else st)
            owners.append(sigma)
        out = []
        if blocks:
            allst = np.concatenate(blocks)
            rows = allst.tolist()
            pts = [(sigma, p) for sigma in owners for p in self._points_of(sigma)]
            if len(rows) <= 64:     # scalar Theorem 2, BP and safety: no array overhead
                pairs = [combine_row(row) for row in rows]
                min_nr = [p[0] for p in pairs]
                which = [p[1] for p in pairs]
                value = [_bp(x) for x in min_nr]
                safe = [_is_safe(x, _threshold_ratio(p[3])) for x, (_, p) in zip(min_nr, pts,
                                                                                strict=True)]
            else:                   # the same values on arrays; near-ties still exact
                nr, wh = _combine_arrays(allst)
                safe = _safe_flags(nr, [p[3] for _, p in pts])
                value = (1.0 / (1.0 + nr)).tolist()       # _bp: 1/(1 + ∞) = 0.0
                min_nr, which = nr.tolist(), wh.tolist()
            groups = []
            for sigma in owners:
                ar = self._args.get(sigma)
                groups.extend([(None,) * 5] * len(self._points_of(sigma)) if ar is None
                              else map(tuple, ar))
            out = [PointResult(sigma, l, k, m, c, value[i], min_nr[i], tuple(rows[i]),
                               None if which[i] < 0 else TERMS[which[i]], safe[i], groups[i])
                   for i, (sigma, (l, k, m, c)) in enumerate(pts)]
        return SkylineCheck(points=tuple(out), case=self._case or SVPI,
                            n_groups=self._n_groups)


def _point_result(sigma: Any, point: _Point, row: list, min_nr: float, which: int,
                  groups: tuple) -> PointResult:
    """Build a :class:`PointResult` from the five statistics of (σ, point) and Theorem 2."""
    l, k, m, c = point
    return PointResult(sigma=sigma, l=l, k=k, m=m, c=c, value=_bp(min_nr), min_nr=min_nr,
                       statistics=tuple(row), case_used=None if which < 0 else TERMS[which],
                       safe=_is_safe(min_nr, _threshold_ratio(c)), groups=groups)


def _check_explicit(rel: Release, explicit: dict) -> SkylineCheck:
    """Run :func:`check` for a few explicit (σ, point) pairs, sequentially.

    The per-σ kernel and the results directly, without building a mergeable
    :class:`SkylineState` (identical results; this is the latency path of one-point
    questions).
    """
    out = []
    for sigma, pts in explicit.items():
        if not pts:
            continue
        code = rel.code_of(sigma, param="skylines")
        st, ar = _scan_points(rel, [code] * len(pts), *([p[j] for p in pts] for j in range(3)))
        grows = ar.tolist()
        named = _group_names(rel, grows)
        for point, row, grow in zip(pts, st.tolist(), grows, strict=True):
            nr, which = combine_row(row)
            out.append(_point_result(sigma, point, row, nr, which,
                                     tuple(named[g] for g in grow)))
    return SkylineCheck(points=tuple(out), case=rel.case, n_groups=rel.n_groups)


def _pmul(a: float, b: float) -> float:
    """Scalar ``_kernels.skyline.mul`` in Python floats (same IEEE products)."""
    if a == math.inf or b == math.inf:
        return math.inf
    r = a * b
    if r == 0.0 and a > 0.0 and b > 0.0:
        return 5e-324
    return r


def combine_row(row: list) -> tuple[float, int]:
    """Theorem 2 for one row (SS1..SS5) of floats: (minNR, which), which = -1 if absent.

    minNR = min(SS1, SS2·SS5, SS3·SS4) with ∞·0 = ∞ (C4); ``which`` indexes :data:`TERMS`
    (ties prefer the earlier term).
    """
    best, which = row[0], 0
    b = _pmul(row[1], row[4])
    if b < best:
        best, which = b, 1
    c = _pmul(row[2], row[3])
    if c < best:
        best, which = c, 2
    return best, (-1 if best == math.inf else which)


def _mul_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise ``_kernels.skyline.mul``: +∞·0 = +∞, positive products stay positive."""
    with np.errstate(invalid="ignore", under="ignore"):
        r = a * b
    r[np.isinf(a) | np.isinf(b)] = np.inf
    r[(r == 0.0) & (a > 0.0) & (b > 0.0)] = 5e-324
    return r


def _combine_arrays(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 2 on rows (SS1..SS5): (minNR, which) with which = -1 when σ is absent."""
    best = stats[:, 0].copy()
    which = np.zeros(len(stats), dtype=np.int64)
    b = _mul_arrays(stats[:, 1], stats[:, 4])
    sel = b < best
    best[sel], which[sel] = b[sel], 1
    c = _mul_arrays(stats[:, 2], stats[:, 3])
    sel = c < best
    best[sel], which[sel] = c[sel], 2
    which[np.isinf(best)] = -1
    return best, which


def _label_less(a: Any, b: Any) -> bool:
    """Key order of witness groups merged from states (a null key sorts last, as in a release)."""
    from ._labels import label_less

    return label_less(a, b)


def check(data: Any, *, skylines: Any, exact: bool = False, n_jobs: int | None = None,
          method: str = "auto", parallel: bool | None = None, **read: Any) -> SkylineCheck:
    """Run SkylineCheck (Chen et al. §5.1): is the release safe at every skyline point.

    One pass over the groups maintains the five sufficient statistics of **every**
    (σ, point) at once — a kernel over groups × points; a group evaluates the points whose
    σ it contains (σ-free groups are neutral).

    Parameters
    ----------
    data : Release or table-like
        The release to check.
    skylines : mapping or list
        ``{sigma: [(l, k, m, c), ...]}`` — one skyline per sensitive value; the key ``"*"``
        applies its points to every value; a plain list of points means ``{"*": points}``.
        Points may also be dicts with keys l, k, m, c.
    exact : bool
        Evaluate every point with ``Fraction`` arithmetic (SVPI and MVPI-Set; slow, for small
        releases and exact ties).
    n_jobs : int, optional
        Threads of the scan, as everywhere (``None``: the current setting, all cores by
        default; ``1``: one thread; ``-1`` all, ``-2`` all but one). With more than one
        thread, large inputs are split into chunks scanned in parallel and merged
        (min-reduction).
    method : {"auto", "classes", "direct"}
        ``"direct"``: per σ, a scan of the groups holding σ — only the (σ, ℓ) *records*,
        the groups whose S_ℓ beats every earlier group of their (n_g, #σ_g) class (found
        by the first check of that σ and ℓ and kept on the release: later checks at any
        k, m read only these); many points of one σ are evaluated group-major, each
        distinct T and V once per group. Same results as evaluating every group.
        ``"classes"``: one scan keeps, per σ, class (n_g, #σ_g) and ℓ,
        the group with the largest S_ℓ (within a class T is monotone in it and V is
        constant), then each point is evaluated on the classes,
        O(entries · distinct ℓ + points · classes). Same values and witnesses (on ties,
        the first group in key order). ``"auto"`` (default): direct for at most 8 (σ, point)
        pairs, else classes unless the class table would be too large or barely smaller
        than the number of groups (large, diverse groups).
    parallel : bool, optional
        The algorithm, not the threads: True forces the chunked scan (chunks merged by a
        min-reduction) even on small inputs, False forbids it; default automatic (large
        inputs, more than one thread).
    **read
        ``sensitive=``, ``group=``/``qi=``, ``weight=``, ``nulls=`` to read a table
        (see :func:`fastpriv._data.as_release`).

    Returns
    -------
    SkylineCheck
        ``.safe`` (all points have BP < c), ``.points`` (a :class:`PointResult` per
        (σ, point): value, statistics, winning term, safe), ``.violations``.

    """
    from ._threads import n_jobs as threads

    with threads(n_jobs) as k:
        if parallel is None and k == 1:
            parallel = False
        return _check(data, skylines=skylines, exact=exact, parallel=parallel, method=method,
                      read=read)


def _check(data: Any, *, skylines: Any, exact: bool, parallel: bool | None, method: str,
           read: dict) -> SkylineCheck:
    """:func:`check` once its threads are set (``parallel``: None automatic)."""
    rel = as_release(data, **read)
    exact = _check_exact(rel, exact)
    explicit, star = normalize_skylines(skylines)
    for sigma in explicit:
        rel.code_of(sigma, param="skylines")
    pairs = sum(map(len, explicit.values()))
    if (not exact and not star and method in ("auto", "direct")
            and pairs <= _DIRECT_MAX_PAIRS and parallel is not True
            and (parallel is False or not _auto_parallel(rel.n_groups, pairs))):
        return _check_explicit(rel, explicit)
    state = SkylineState(skylines, case=rel.case)
    if not exact:
        return state.update(rel, parallel=parallel, method=method).result()
    out = []
    sigmas = list(state._explicit) + [v for v in rel.values if v not in state._explicit]
    for sigma in sigmas:
        for (l, k, m, c) in state._points_of(sigma):
            r, groups = _evaluate(rel, sigma, l, k, m, True)
            out.append(PointResult(sigma=sigma, l=l, k=k, m=m, c=c, value=r.value,
                                   min_nr=r.min_nr, statistics=r.statistics,
                                   case_used=r.case_used, safe=r.value < Fraction(c),
                                   groups=groups))
    return SkylineCheck(points=tuple(out), case=rel.case, n_groups=rel.n_groups)


# ---------------------------------------------------------------------------- skyline search
#: default bound on the seconds one knowledge skyline may search (None: no bound)
MAX_SKYLINE_SECONDS = 120.0


def _skyline_search(safe: Callable[[int, int, int], bool], l_cap: int, k_cap: int,
                    m_cap: int, on_level: Callable[[int], None] | None = None) -> list:
    """Corrected Appendix A7, walked as a staircase.

    For each ℓ (stop at the first with BP(ℓ,0,0) ≥ c): k*(m) = largest safe k is
    non-increasing in m, so instead of one binary search per m the search jumps from corner
    to corner: k* at the current m (binary search below the previous k*), then the last m
    where that k* is still safe (binary search) — a corner (ℓ, k*, m). Equal to A7 followed
    by the removal of dominated points, with O(corners · log N) evaluations.
    ``on_level(ℓ)`` is called as level ℓ starts.
    """

    def last_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
        # pred(lo) is True, pred monotone (True then False); largest x in [lo, hi] with pred
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if pred(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    pts = []
    for l in range(l_cap + 1):
        if on_level is not None:
            on_level(l)
        if not safe(l, 0, 0):
            break
        m = 0
        k_hi = k_cap
        while m <= m_cap and k_hi >= 0 and safe(l, 0, m):
            k_star = last_true(lambda kk, l=l, m=m: safe(l, kk, m), 0, k_hi)
            m_end = last_true(lambda mm, l=l, ks=k_star: safe(l, ks, mm), m, m_cap)
            pts.append((l, k_star, m_end))
            k_hi = k_star - 1
            m = m_end + 1
    # Remove dominated points. Corners of one ℓ never dominate each other (k falls, m rises),
    # and the corners of ℓ + 1 are the maximal points of its safe region, which is
    # downward closed: a corner (ℓ, k, m) is dominated iff (ℓ + 1, k, m) is still safe.
    # One evaluation per point instead of comparing every pair (quadratic in the skyline).
    keep = [p for p in pts if p[0] >= l_cap or not safe(p[0] + 1, p[1], p[2])]
    caps = (l_cap, k_cap, m_cap)
    out = sorted(set(keep))
    return [tuple(math.inf if x >= cap else x for x, cap in zip(p, caps, strict=True))
            for p in out]


class _NotGiven:
    """Type of :data:`_NOT_GIVEN`: "no σ given", distinct from every value, None included."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not given>"


#: default of ``sigma`` where omitting it has a meaning of its own: None is a legitimate
#: sensitive value (the null of a column read with ``nulls="value"``), so it cannot say
#: "not given"
_NOT_GIVEN: Any = _NotGiven()


def knowledge_skyline(data: Any, *, sigma: Any = _NOT_GIVEN, c: Any, exact: bool = False,
                      max_seconds: float | None = MAX_SKYLINE_SECONDS,
                      **read: Any) -> KnowledgeSkyline:
    """Compute the knowledge skyline of σ: the maximal (ℓ, k, m) with BP_σ(ℓ, k, m) < c.

    Corrected Appendix A7 (Chen et al.): break on BP ≥ c (the paper's "BP > c" emits
    spurious points at BP = c and may not terminate), with caps ℓ_cap = the largest number
    of non-σ values in a group containing σ, k_cap = m_cap = N (individuals) — BP is
    constant beyond them, and a point at a cap is reported with ``math.inf`` there ("safe
    for any amount"). The search walks the staircase of maximal points (see
    :func:`_skyline_search`) on per-σ tables built once (S_ℓ / P_ℓ prefixes of every group
    containing σ), each BP evaluation O(groups containing σ).

    Parameters
    ----------
    data : Release or table-like
        The release.
    sigma : value label
        The sensitive value; ``None`` is the null value of a table read with
        ``nulls="value"``. Every value's skylines: :func:`knowledge_skylines` (omitting
        ``sigma``, or ``sigma=None`` on a release without a null value, is its deprecated
        spelling and warns).
    c : float or Fraction in (0, 1]
        Confidence threshold: a point is safe when BP < c.
    exact : bool
        Evaluate with ``Fraction`` (SVPI and MVPI-Set).
    max_seconds : float or None
        Bound on the search time of one σ (default :data:`MAX_SKYLINE_SECONDS`; ``None``:
        none). The search costs O(levels · corners · log N) evaluations, and a group with
        ~10³ distinct values has a skyline too large to enumerate: the levels to walk are
        counted first (the last ℓ with BP(ℓ, 0, 0) < c, by bisection), and once a few
        seconds of them project past twice the bound, or the bound is reached, an
        ``InputError`` gives the estimate instead of running for hours.

    **read
        ``sensitive=``, ``group=``/``qi=``, ``weight=``, ``nulls=`` to read a table
        (see :func:`fastpriv._data.as_release`).

    Returns
    -------
    KnowledgeSkyline
        A list of ``(ℓ, k, m)`` tuples, sorted (``math.inf`` where capped), with ``.caps``.

    """
    rel = as_release(data, **read)
    c = _check_c(c)
    exact = _check_exact(rel, exact)
    if max_seconds is not None and not (isinstance(max_seconds, (int, float))
                                        and max_seconds > 0):
        raise InputError(f"max_seconds must be a positive number or None, got {max_seconds!r}")
    if sigma is _NOT_GIVEN or (sigma is None and None not in rel._code_index):
        import warnings

        warnings.warn(f"knowledge_skyline(sigma={'None' if sigma is None else '<omitted>'}) is "
                      "deprecated: knowledge_skylines(data, c=...) returns the skyline of "
                      "every value", DeprecationWarning, stacklevel=2)
        return knowledge_skylines(rel, c=c, exact=exact, max_seconds=max_seconds)
    return _knowledge_skyline(rel, sigma, c, exact, max_seconds)


def _knowledge_skyline(rel: Release, sigma: Any, c: Any, exact: bool,
                       max_seconds: float | None) -> KnowledgeSkyline:
    """:func:`knowledge_skyline` of one σ (any value, None included), arguments checked."""
    code = rel.code_of(sigma, param="sigma")
    safe, l_cap, n_eval, pace = _safe_function(rel, code, c, exact, max_seconds)
    n = rel.n_individuals
    caps = (l_cap, n, n)
    pace.levels = _last_safe_level(safe, l_cap) + 1
    pts = _skyline_search(safe, *caps, on_level=pace.level)
    return KnowledgeSkyline(points=tuple(pts), sigma=sigma, c=c, caps=caps, evaluations=n_eval[0],
                            exact=exact)


def knowledge_skylines(data: Any, *, c: Any, exact: bool = False,
                       max_seconds: float | None = MAX_SKYLINE_SECONDS,
                       **read: Any) -> dict:
    """Return :func:`knowledge_skyline` of every sensitive value: ``{σ: KnowledgeSkyline}``.

    ``max_seconds`` bounds all the searches together (:func:`knowledge_skylines_within`:
    each σ gets what is left; None: no bound), and a progress line counts the values.
    """
    rel = as_release(data, **read)
    found, done, _ = knowledge_skylines_within(rel, sigmas=rel.values, cs=[c], exact=exact,
                                               max_seconds=max_seconds, partial=False)
    return dict(zip(done, found, strict=True))


def knowledge_skylines_within(data: Release, *, sigmas: Sequence[Any], cs: Sequence[Any],
                              exact: bool = False,
                              max_seconds: float | None = MAX_SKYLINE_SECONDS,
                              partial: bool = True) -> tuple[list, list, str | None]:
    """Knowledge skylines of every σ in ``sigmas`` at every c in ``cs``, in one time budget.

    The report's knowledge skylines: each σ's search gets what is left of ``max_seconds``
    (:func:`knowledge_skyline` refuses as soon as its levels project past it), and a
    progress line counts the values (on a terminal, a live bar; in a log, a summary line).

    Parameters
    ----------
    data : Release
        The release.
    sigmas : sequence
        Values, most important first.
    cs : sequence of float
        Confidences.
    exact : bool
        Evaluate with ``Fraction`` (see :func:`knowledge_skyline`).
    max_seconds : float or None
        Budget of all the searches together (None: none).
    partial : bool
        When the budget runs out: stop and return what was computed, with the reason
        (True), or raise the :class:`InputError` (False).

    Returns
    -------
    (skylines, done, stopped)
        The :class:`KnowledgeSkyline` of every (σ, c) computed, σ-major; the σ whose
        skylines were all computed; None, or the reason the others were not.

    """
    import time

    from ._budget import check_max_seconds
    from ._progress import Progress

    rel = check_release(data, "data")
    max_seconds = check_max_seconds(max_seconds)
    # the arguments are checked before the searches: only the budget may stop them partway
    cs = [_check_c(c) for c in cs]
    exact = _check_exact(rel, exact)
    for v in sigmas:
        rel.code_of(v, param="sigmas")
    t0 = time.monotonic()
    out: list = []
    done: list = []
    stopped = None
    bar = Progress("knowledge skylines (values)")
    try:
        for v in sigmas:
            left = None if max_seconds is None else max_seconds - (time.monotonic() - t0)
            try:
                if left is not None and left <= 0:
                    raise InputError(f"their budget of max_seconds = {max_seconds:g} s was "
                                     "spent")
                row = [_knowledge_skyline(rel, v, c, exact, left) for c in cs]
            except InputError as exc:
                if not partial:
                    raise
                stopped = (f"the knowledge skylines of {len(sigmas) - len(done):,} of the "
                           f"{len(sigmas):,} values were not computed: {exc}")
                break
            out.extend(row)
            done.append(v)
            bar(len(done), len(sigmas))
    finally:
        bar.done()
    return out, done, stopped


def _safe_function(rel: Release, code: int, c: Any, exact: bool,
                   max_seconds: float | None = MAX_SKYLINE_SECONDS):
    """Build a memoized predicate safe(ℓ,k,m) ⇔ BP < c over per-σ tables built once.

    Returns ``(safe, l_cap, n_eval, pace)``. Past ``max_seconds`` (or once the search
    projects past twice it, see :class:`_Pace`) an evaluation raises :class:`InputError`:
    the staircase search costs O(levels · corners · log N) evaluations of
    O(groups · (k + m)) each, which a group with 10³ distinct values makes unbounded for
    practical purposes.
    """
    from ._kernels import skyline as K

    indptr, codes, counts, sizes = _arrays(rel)
    # width = largest number of non-σ values in a σ-group (= ℓ_cap)
    gidx, nn, ss, dd, _ = K.sigma_profile(indptr, codes, counts, sizes, int(code), 0)
    l_cap = int(dd.max()) if dd.size else 0
    gidx, nn, ss, dd, top = K.sigma_profile(indptr, codes, counts, sizes, int(code), l_cap)
    ratio = _threshold_ratio(c)
    case_id = _CASE_ID[rel.case]
    cache: dict = {}
    n_eval = [0]
    if exact:
        rows = [(int(nn[i]), int(ss[i]), [int(x) for x in top[i]]) for i in range(len(nn))]

        def min_nr(l: int, k: int, m: int) -> Any:
            terms = [(_exact_t(rel.case, n, s, t, l, k) * _exact_v(n, s, m, k + 1),
                      _exact_t(rel.case, n, s, t, l, 0), _exact_t(rel.case, n, s, t, l, k),
                      _exact_v(n, s, m, 0), _exact_v(n, s, m, k)) for n, s, t in rows]
            stats, _ = _stats_from_terms(terms, True)
            return _combine(stats)[0]
    else:
        nn_k = kernel_array(nn, np.int64)
        ss_k = kernel_array(ss, np.int64)
        big_s, pl = K.prefix_tables(case_id, nn_k, kernel_array(top, np.int64))
        big_s = kernel_array(big_s, np.int64)
        pl = kernel_array(pl, np.float64)

        def min_nr(l: int, k: int, m: int) -> Any:
            return float(K.columns_min_nr(case_id, nn_k, ss_k, big_s, pl, l, k, m))

    pace = _Pace(rel.values[code], max_seconds, l_cap, rel.n_individuals, n_eval)

    def safe(l: int, k: int, m: int) -> bool:
        key = (l, k, m)
        if key not in cache:
            n_eval[0] += 1
            if not n_eval[0] & 1023:
                pace.check()
            cache[key] = _is_safe(min_nr(l, k, m), ratio)
        return cache[key]

    return safe, l_cap, n_eval, pace


def _last_safe_level(safe: Callable[[int, int, int], bool], l_cap: int) -> int:
    """Return the last ℓ ≤ l_cap with BP(ℓ, 0, 0) < c (-1: none), by bisection.

    BP does not decrease with more knowledge, so safe(ℓ, 0, 0) holds up to a last ℓ: the
    levels the staircase search walks.
    """
    if not safe(0, 0, 0):
        return -1
    lo, hi = 0, l_cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if safe(mid, 0, 0):
            lo = mid
        else:
            hi = mid - 1
    return lo


#: the search of one skyline projects its time from this many seconds of levels on
_PROJECT_AFTER = 2.0


class _Pace:
    """Time bound of one knowledge-skyline search: the deadline and an early projection.

    ``levels`` (set once counted) and :meth:`level` (called as each ℓ starts) give the
    share of the search done; :meth:`check` (every 1,024 evaluations) refuses once the
    deadline has passed, or earlier when the levels walked so far (at least
    :data:`_PROJECT_AFTER` seconds of them) project past twice the bound.
    """

    def __init__(self, sigma: Any, max_seconds: float | None, l_cap: int, n: int,
                 n_eval: list) -> None:
        import time

        self.sigma, self.max_seconds, self.l_cap, self.n, self.n_eval = (sigma, max_seconds,
                                                                         l_cap, n, n_eval)
        self.t0 = time.monotonic()
        self.levels = l_cap + 1
        self.done = 0

    def level(self, ell: int) -> None:
        self.done = ell

    def check(self) -> None:
        import time

        if self.max_seconds is None:
            return
        elapsed = time.monotonic() - self.t0
        if elapsed > self.max_seconds:
            raise InputError(
                f"the knowledge skyline of {self.sigma!r} did not finish within max_seconds "
                f"= {self.max_seconds:g} s ({self.n_eval[0]:,} breach probabilities "
                f"evaluated, level {self.done:,} of {self.levels:,}; a group holds "
                f"{self.l_cap + 1:,} distinct values, so the skyline can have "
                f"{self.levels:,} levels of up to {self.n:,} corners); "
                + self.way_out())
        if elapsed >= _PROJECT_AFTER and self.done >= 1:
            projected = elapsed * self.levels / self.done
            if projected > 2 * self.max_seconds:
                from ._progress import fmt_seconds

                raise InputError(
                    f"the knowledge skyline of {self.sigma!r} would take about "
                    f"{fmt_seconds(projected)} (estimate: {elapsed:.0f} s for {self.done:,} of "
                    f"its {self.levels:,} levels), more than max_seconds = "
                    f"{self.max_seconds:g} s; " + self.way_out())

    @staticmethod
    def way_out() -> str:
        return ("check the points you need with skyline.check / breach_probability "
                "(fastpriv skyline --point), use a coarser sensitive column, or pass "
                "max_seconds=None to wait")


# ---------------------------------------------------------------------------- prepared columns
class SigmaTables:
    """The per-group inputs of one σ, extracted once for repeated evaluation.

    For every group g: n_g, #σ_g and the prefix tables S_ℓ / P_ℓ of its non-σ counts for
    ℓ ≤ ``l_max``. Evaluating a point then costs O(groups) arithmetic with no pass over the
    frequency profile — for what-if loops, searches and for comparing SkylineCheck with the
    A6 dynamic program on identical inputs (the Figure 7 benchmark). Build with
    :func:`prepare`.
    """

    def __init__(self, data: Release, sigma: Any, l_max: int | None = None) -> None:
        from ._kernels import skyline as K

        rel = check_release(data, "data")
        code = rel.code_of(sigma, param="sigma")
        cap = int(rel.distinct.max()) if rel.n_groups else 0    # ≥ non-σ values of a group
        if l_max is None:
            l_max = cap
        l_max = check_int(l_max, "l_max", minimum=0)
        self._l_cap = cap
        indptr, codes, counts, sizes = _arrays(rel)
        nn, ss, big_s, pl = K.sigma_columns(indptr, codes, counts, sizes, int(code), l_max)
        self.sigma = sigma
        self.case = rel.case
        self.l_max = l_max
        self._case_id = _CASE_ID[rel.case]
        self._cols = (kernel_array(nn, np.int64), kernel_array(ss, np.int64),
                      kernel_array(big_s, np.int64), kernel_array(pl, np.float64))

    def _lkm(self, l: int, k: int, m: int) -> tuple[int, int, int]:
        l, k, m = _check_lkm(l, k, m)
        if l > self.l_max:
            if self.l_max < self._l_cap:
                raise InputError(f"l={l} exceeds l_max={self.l_max} of these tables; "
                                 f"prepare(..., l_max={l})")
            l = self.l_max      # BP is constant in ℓ beyond the number of values
        return l, k, m

    def statistics(self, l: int, k: int, m: int) -> tuple:
        """(SS1, SS2, SS3, SS4, SS5) of Theorem 2."""
        from ._kernels import skyline as K

        stats, _ = K.columns_stats(self._case_id, *self._cols, *self._lkm(l, k, m))
        return tuple(float(x) for x in stats)

    def min_nr(self, l: int, k: int, m: int) -> float:
        """minNR_σ(ℓ,k,m) by Theorem 2 (SkylineCheck for one point)."""
        from ._kernels import skyline as K

        return float(K.columns_min_nr(self._case_id, *self._cols, *self._lkm(l, k, m)))

    def dp_min_nr(self, l: int, k: int, m: int) -> float:
        """minNR_σ(ℓ,k,m) by the A6 dynamic program, on the same inputs."""
        from ._kernels import skyline as K

        return float(K.dp_columns(self._case_id, *self._cols, *self._lkm(l, k, m)))

    def breach_probability(self, l: int, k: int, m: int) -> float:
        """BP_σ(ℓ,k,m) = 1 / (1 + minNR)."""
        return _bp(self.min_nr(l, k, m))


def prepare(data: Any, *, sigma: Any, l_max: int | None = None, **read: Any) -> SigmaTables:
    """Extract the per-group inputs of σ once (see :class:`SigmaTables`).

    ``l_max`` bounds ℓ (default: the largest number of distinct values in a group, beyond
    which BP is constant in ℓ); memory is O(groups · l_max).
    """
    return SigmaTables(as_release(data, **read), sigma, l_max)


# ---------------------------------------------------------------------------- specific knowledge
def knowledge_probability(data: Any, *, sigma: Any, target: int, x: Sequence[Any] = (),
                          u: Sequence[Any] = (), v: Sequence[int] = (), exact: bool = False,
                          **read: Any) -> Any:
    """Pr(σ ∈ t | one specific piece of knowledge), by Lemma 1 and group independence.

    Individuals within a group are exchangeable, so each is named by its group (index).

    Parameters
    ----------
    data : Release or table-like
        The release.
    sigma : value label
        The sensitive value σ.
    target : int
        Group of the target t.
    x : sequence of value labels
        SVPI: "t does not have x"; MVPI: "x ∈ t → σ ∈ t" (values ≠ σ, distinct).
    u : sequence
        SVPI: ``(group, value)`` pairs, "an individual of that group has that value";
        MVPI: groups, "an individual of that group does not have σ". Distinct individuals.
    v : sequence of int
        Groups of the same-value family members: "σ ∈ v → σ ∈ t".
    exact : bool
        ``Fraction`` result (SVPI, MVPI-Set).

    **read
        ``sensitive=``, ``group=``/``qi=``, ``weight=``, ``nulls=`` to read a table
        (see :func:`fastpriv._data.as_release`).

    Returns
    -------
    float or Fraction

    Raises
    ------
    InputError
        If a group is too small to hold its individuals (t, u's and v's are distinct), or
        the knowledge is impossible (probability 0).

    Examples
    --------
    The paper's Tom example (Figures 1–3): Tom is in group 1.

    >>> rel = Release.from_groups([["AIDS", "AIDS", "Flu", "Flu"],
    ...                            ["AIDS", "Cancer", "Flu", "Flu"]])
    >>> knowledge_probability(rel, sigma="AIDS", target=1, x=["Cancer"], u=[(1, "Flu")], v=[0],
    ...                       exact=True)
    Fraction(2, 3)

    """
    rel = as_release(data, **read)
    rel.code_of(sigma, param="sigma")
    exact = _check_exact(rel, exact)
    t = check_int(target, "target", minimum=0, maximum=rel.n_groups - 1)
    xs, u_by_group, v_by_group = _grounded_knowledge(rel, sigma, t, x, u, v)
    if rel.case == MVPI_MULTISET:
        return _knowledge_probability_ms(rel, sigma, t, xs, u_by_group, v_by_group)
    den = Fraction(0)
    num = Fraction(1)
    for g in set(u_by_group) | set(v_by_group) | {t}:
        d, f = _group_factor(rel, g, sigma, t, xs, u_by_group.get(g, []), v_by_group.get(g, 0))
        den = d if g == t else den
        num *= f
    total = den + num
    if total == 0:
        raise InputError("the knowledge has probability 0 (it contradicts the release)")
    out = den / total
    return out if exact else float(out)


def _grounded_knowledge(rel: Release, sigma: Any, t: int, x: Sequence[Any], u: Sequence[Any],
                        v: Sequence[int]) -> tuple[list, dict, dict]:
    """Check the knowledge of :func:`knowledge_probability` and index it by group.

    Returns the excluded values, ``{group: [value (SVPI) or None (MVPI), ...]}`` of the u's
    and ``{group: number of v's}``.
    """
    G = rel.n_groups
    xs: list = []
    for val in x:
        rel.code_of(val, param="x")
        if val == sigma:
            raise InputError("x: the excluded values must differ from sigma")
        if val in xs:
            raise InputError(f"x: value {val!r} given twice")
        xs.append(val)
    u_by_group: dict = {}
    for item in u:
        if rel.case == SVPI:
            if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
                raise InputTypeError(f"u: SVPI knowledge about others is (group, value) pairs, "
                                     f"got {item!r}")
            g = check_int(item[0], "u group", minimum=0, maximum=G - 1)
            rel.code_of(item[1], param="u value")
            u_by_group.setdefault(g, []).append(item[1])
        else:
            g = check_int(item, "u group", minimum=0, maximum=G - 1)
            u_by_group.setdefault(g, []).append(None)
    v_by_group: dict = {}
    for g in v:
        g = check_int(g, "v group", minimum=0, maximum=G - 1)
        v_by_group[g] = v_by_group.get(g, 0) + 1
    for g in set(u_by_group) | set(v_by_group) | {t}:
        need = (g == t) + len(u_by_group.get(g, [])) + v_by_group.get(g, 0)
        if need > int(rel.sizes[g]):
            raise InputError(f"group {g} has {int(rel.sizes[g])} individuals but the knowledge "
                             f"names {need} distinct ones in it")
    return xs, u_by_group, v_by_group


def _group_factor(rel: Release, g: int, sigma: Any, t: int, xs: list, us: list,
                  mv: int) -> tuple[Fraction | None, Fraction]:
    """Lemma 1's factors of group ``g`` (SVPI, MVPI-Set): (Pr(σ ∈ t) part or None, factor)."""
    counts = dict(rel.profile(g))
    n = int(rel.sizes[g])
    ku = len(us)
    s = counts.get(sigma, 0)
    n1 = n - ku
    den = None
    if rel.case == SVPI:
        for y in us:
            counts[y] = counts.get(y, 0) - 1
            if counts[y] < 0:
                raise InputError(f"u: group {g} has no (more) individuals with value {y!r}: "
                                 "the knowledge is impossible")
        s1 = counts.get(sigma, 0)
        if g != t:
            return den, _falling_ratio(n1, s1, mv)
        den = Fraction(s1, n1)
        a = n1 - s1 - sum(counts.get(xv, 0) for xv in xs)
        return den, Fraction(max(a, 0), n1) * _falling_ratio(n1 - 1, s1, mv)
    # MVPI-Set: sigma holders are a uniform s-subset of the n - ku others
    if s > n1:
        raise InputError(f"u: in group {g}, {ku} individuals lacking {sigma!r} leave "
                         f"too few for its {s} holders: the knowledge is impossible")
    if g != t:
        return den, _falling_ratio(n1, s, mv)
    f = _falling_ratio(n1, s, mv + 1)
    for xv in xs:
        f *= Fraction(n - counts.get(xv, 0), n)
    return Fraction(s, n1), f


def _falling_ratio(n: int, s: int, m: int) -> Fraction:
    """Pr(none of m given individuals holds σ) when s of n hold it uniformly: C(n−m,s)/C(n,s)."""
    out = Fraction(1)
    for i in range(m):
        num = n - s - i
        if num <= 0:
            return Fraction(0)
        out *= Fraction(num, n - i)
    return out


def _knowledge_probability_ms(rel: Release, sigma: Any, t: int, xs: list, u_by_group: dict,
                              v_by_group: dict) -> float:
    # every occurrence independently uniform over the group; u's exclude themselves
    log_num = 0.0
    den = 0.0
    for g in set(u_by_group) | set(v_by_group) | {t}:
        counts = dict(rel.profile(g))
        n = int(rel.sizes[g])
        ku = len(u_by_group.get(g, []))
        mv = v_by_group.get(g, 0)
        s = counts.get(sigma, 0)
        n1 = n - ku
        if s and n1 <= 0:
            raise InputError(f"u: every individual of group {g} lacks {sigma!r}, which occurs "
                             "there: the knowledge is impossible")
        if g == t:
            if not s:
                den = 0.0
            elif n1 == 1:
                den = 1.0
            else:
                den = -math.expm1(s * math.log1p(-1.0 / n1))
            rest = n1 - 1 - mv
            if s and rest <= 0:
                log_num = -math.inf
            elif s:
                log_num += s * math.log1p(-(1 + mv) / n1)
            for xv in xs:
                cx = counts.get(xv, 0)
                if cx:
                    log_num += cx * math.log1p(-1.0 / n) if n > 1 else -math.inf
        else:
            if s and n1 - mv <= 0:
                log_num = -math.inf
            elif s:
                log_num += s * math.log1p(-mv / n1)
    num = math.exp(log_num) if log_num != -math.inf else 0.0
    if den + num == 0:
        raise InputError("the knowledge has probability 0 (it contradicts the release)")
    return den / (den + num)


def warmup() -> None:
    """Check skylines every way: direct and by classes, serial and parallel (warm-up).

    ``fastpriv warmup``'s workload of the model (the registry's ``warmup_workload``); also
    the scans of large releases, the knowledge skyline, the DP, prepared tables and MVPI
    releases.
    """
    from ._kernels import skyline as KS
    from .datasets import synthetic_release

    rel = synthetic_release(3000, group_size=10, n_values=6, seed=1)
    pts = {"*": [(ell, k, m, 0.9) for ell in range(2) for k in range(3) for m in range(2)]}
    for par in (False, True):
        for method in ("direct", "classes"):
            check(rel, skylines=pts, parallel=par, method=method)
    knowledge_skyline(rel, sigma=rel.values[0], c=0.9)
    dp_breach_probability(rel, sigma=rel.values[0], l=1, k=2, m=1)
    # the multi-threaded scans that releases of 4096 records and more take
    common = _sigma_scan_args(rel)
    rec = _records(rel, common, 0, (1,), 1, 1)
    ptr = rel.value_index[0]
    ells = np.array([0, 1], dtype=np.int64)
    ells.flags.writeable = False
    KS.records_union(*common, int(ptr[0]), int(ptr[1]), _CASE_ID[rel.case], ells,
                     *_cross_class_guard(1, 1))
    for n_pts in (1, KS.GROUP_MAJOR_POINTS):
        lkm = np.ones((3, n_pts), dtype=np.int64)
        lkm.flags.writeable = False
        KS.check_sigma_parallel(*common, rec, 0, rec.size, _CASE_ID[rel.case], *lkm, 2)
    tables = prepare(rel, sigma=rel.values[0])
    for name in ("breach_probability", "dp_min_nr", "statistics"):
        if hasattr(tables, name):
            getattr(tables, name)(1, 2, 1)
    for case in ("mvpi-set", "mvpi-multiset"):
        m = Release.from_groups([(3, {"a": 1, "b": 2}), (2, {"a": 1})], case=case)
        check(m, skylines={"a": [(1, 1, 1, 0.9)]})
        knowledge_skyline(m, sigma="a", c=0.9)
